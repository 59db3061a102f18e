//! hitch, the TLS proxy in front of Varnish, which speaks the PROXY protocol to it:
//! Varnish has no TLS of its own.

use super::{quoted, Launch, TlsFiles};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;

/// hitch, Varnish's TLS proxy, in front of a Varnish listener that speaks the PROXY
/// protocol.
#[derive(Clone, Debug)]
pub struct Hitch<'a> {
    /// Testbed name of this process (`varnish-tls`).
    pub name: &'a str,
    /// A directory of its own (absolute): its config and log.
    pub dir: &'a Path,
    /// Where it serves HTTPS.
    pub listen: SocketAddr,
    /// Varnish's PROXY listener ([`VarnishPorts::proxy`](super::VarnishPorts::proxy)).
    pub backend: SocketAddr,
    /// The testbed's certificate (hitch reads `combined`).
    pub files: &'a TlsFiles,
    /// The user its workers run as: hitch refuses to run them as root (`nobody` then; `None`
    /// when not started as root).
    pub user: Option<&'a str>,
}

/// hitch in the foreground: `hitch --config=DIR/hitch.conf`, one worker, TLS 1.2 and 1.3
/// with the testbed certificate, HTTP/1.1 (ALPN), each connection passed on to Varnish
/// with a PROXY v2 header (so Varnish sees the client's address and the `tls` listener).
/// Its log, `DIR/hitch.log`, has a few lines per connection (`log-level = 2`: handshake,
/// backend connected, closed). OCSP stapling is off (the testbed's CA has no responder).
/// SIGTERM stops it at once.
pub fn hitch(h: &Hitch) -> Launch {
    let conf = h.dir.join("hitch.conf");
    let log = h.dir.join("hitch.log");
    let mut text = format!(
        "\
# hitch for the barrage testbed: {name}, TLS in front of Varnish.
frontend = \"[{ip}]:{port}\"
backend = \"[{bip}]:{bport}\"
pem-file = {pem}
# Varnish's listener for hitch speaks the PROXY protocol.
write-proxy-v2 = on
alpn-protos = \"http/1.1\"
tls-protos = TLSv1.2 TLSv1.3
# Foreground: the supervisor owns the process.
daemon = off
# One worker leaves the CPUs to the load generator and the other servers.
workers = 1
backlog = 1024
# A line per connection event, to a file of its own; no syslog.
log-filename = {log}
log-level = 2
syslog = off
# No OCSP stapling (no responder to ask, and no /var/lib/hitch).
ocsp-dir = \"\"
",
        name = h.name,
        ip = h.listen.ip(),
        port = h.listen.port(),
        bip = h.backend.ip(),
        bport = h.backend.port(),
        pem = quoted(&h.files.combined),
        log = quoted(&log),
    );
    if let Some(user) = h.user {
        let _ = writeln!(text, "# hitch refuses to run its workers as root.\nuser = \"{user}\"");
    }
    Launch {
        program: "hitch",
        args: vec![format!("--config={}", conf.display())],
        files: vec![(conf, text)],
        package: "hitch",
        logs: vec![log],
        ..Launch::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn hitch_passes_tls_on_to_varnish_in_the_proxy_protocol() {
        let files = tls_files();
        let h = Hitch {
            name: "varnish-tls",
            dir: Path::new(DIR),
            listen: "127.0.0.1:8443".parse().unwrap(),
            backend: "127.0.0.1:8444".parse().unwrap(),
            files: &files,
            user: Some("nobody"),
        };
        let launch = hitch(&h);
        assert_eq!((launch.program, launch.package, launch.owner), ("hitch", "hitch", None));
        assert_eq!(args(&launch), [format!("--config={DIR}/hitch.conf")]);
        assert_eq!(launch.logs, [PathBuf::from(format!("{DIR}/hitch.log"))]);
        let text = text(&launch, "hitch.conf");
        for line in [
            "frontend = \"[127.0.0.1]:8443\"",
            "backend = \"[127.0.0.1]:8444\"",
            "pem-file = \"/tmp/tb-1/tls/combined.pem\"",
            "write-proxy-v2 = on",
            "daemon = off",
            "workers = 1",
            &format!("log-filename = \"{DIR}/hitch.log\""),
            "log-level = 2",
            "ocsp-dir = \"\"",
            "user = \"nobody\"",
        ] {
            position(text, line);
        }
        let unprivileged = hitch(&Hitch { user: None, ..h });
        assert!(!file(&unprivileged, "hitch.conf").contains("user"));
    }
}
