//! Caddy, a load balancer over every origin that also serves HTTP/3: its Caddyfile and
//! its homes, all inside its directory.

use super::{quoted, Balance, Front, Launch, TlsFiles, ORIGIN_POOL};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Caddy as a load balancer over all `f.origins`, in the foreground:
/// `caddy run --config DIR/Caddyfile --adapter caddyfile`.
///
/// It balances per `f.balance` (`round_robin`, `least_conn`, `ip_hash`) over kept-alive
/// connections to the origins, and takes an origin out while its health check
/// (`/_barrage/stats`, every 250 ms, which the origins do not count) fails. The origins name
/// themselves in `X-Served-By`, which passes through. With `f.tls` it also serves HTTPS with
/// the testbed certificate, and **HTTP/3** on the same port over UDP (HTTP/1.1, HTTP/2 and
/// HTTP/3 there, as Caddy does by default; its HTTPS answers say so in `Alt-Svc`).
///
/// Caddy never reaches the network: no automatic HTTPS (so no ACME, no certificate of its
/// own but the one given, no redirect), no admin endpoint (`admin off`: nothing listens on
/// its default port 2019, so testbeds side by side cannot clash), no trust store touched,
/// every listener bound to the loopback address, and its storage, home and configuration
/// directories (`HOME`, `XDG_DATA_HOME`, `XDG_CONFIG_HOME`) inside `f.dir`. SIGTERM stops
/// it, closing connections after a second's grace.
///
/// # Panics
/// If `f.origins` is empty.
pub fn caddy(f: &Front) -> Launch {
    assert!(!f.origins.is_empty(), "caddy {}: a balancer needs at least one origin", f.name);
    let conf = f.dir.join("Caddyfile");
    let args = ["run", "--config", &conf.display().to_string(), "--adapter", "caddyfile"].map(String::from).to_vec();
    let home = f.dir.display().to_string();
    let env = ["HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"].map(|var| (var.to_string(), home.clone())).to_vec();
    Launch {
        program: "caddy",
        args,
        files: vec![(conf, caddy_conf(f))],
        package: "caddy",
        env,
        quic: f.tls.is_some(),
        logs: vec![caddy_access_log(f.dir)],
        ..Launch::default()
    }
}

/// Where Caddy writes its access log.
fn caddy_access_log(dir: &Path) -> PathBuf {
    dir.join("access.log")
}

/// The whole Caddyfile: global options, then a site per listener.
fn caddy_conf(f: &Front) -> String {
    let mut c = format!(
        "\
# Caddy for the barrage testbed: {name}, a load balancer.
{{
\t# Nothing listens but the sites below: no admin endpoint (default localhost:2019).
\tadmin off
\t# No ACME, no automatic certificates or redirects: the testbed certificate alone.
\tauto_https off
\tskip_install_trust
\t# Storage (its local CA, locks) inside the testbed directory.
\tstorage file_system {{
\t\troot {storage}
\t}}
\t# Active connections get a second to finish at SIGTERM, then are closed.
\tgrace_period 1s
\tservers {{
\t\tprotocols h1 h2 h3
\t}}
}}
",
        name = f.name,
        storage = quoted(&f.dir.join("storage")),
    );
    c += &caddy_site(&format!("http://:{}", f.listen.port()), f.listen, None, f);
    if let Some((addr, files)) = f.tls {
        c += &caddy_site(&format!("https://:{}", addr.port()), addr, Some(files), f);
    }
    c
}

/// One site: any host name on `addr`'s port, bound to its address alone, proxied to the
/// origins.
fn caddy_site(site: &str, addr: SocketAddr, tls: Option<&TlsFiles>, f: &Front) -> String {
    let mut c = format!("\n{site} {{\n\tbind {}\n", addr.ip());
    if let Some(files) = tls {
        let _ = writeln!(c, "\ttls {} {}", quoted(&files.cert), quoted(&files.key));
    }
    // The access log (JSON lines), both sites to one file.
    let _ = writeln!(c, "\tlog {{\n\t\toutput file {}\n\t}}", quoted(&caddy_access_log(f.dir)));
    let policy = match f.balance {
        Balance::RoundRobin => "round_robin",
        Balance::LeastConn => "least_conn",
        Balance::IpHash => "ip_hash",
        // Caddy 2.6 hashes by highest random weight (rendezvous): consistent.
        Balance::UriHash => "uri_hash",
    };
    let upstreams: Vec<String> = f.origins.iter().map(|o| o.addr.to_string()).collect();
    let _ = write!(
        c,
        "\treverse_proxy {} {{
\t\tlb_policy {policy}
\t\t# The origins' stats path answers without being counted, without injected errors or
\t\t# latency: checks neither add to the counts tests read nor fail a stalled origin.
\t\thealth_uri /_barrage/stats
\t\thealth_interval 250ms
\t\thealth_timeout 1s
\t\t# Idle origin connections kept: more than the clients' (Caddy's default is 32).
\t\ttransport http {{
\t\t\tkeepalive_idle_conns_per_host {ORIGIN_POOL}
\t\t}}
\t}}
}}
",
        upstreams.join(" ")
    );
    c
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn caddy_runs_in_the_foreground_with_its_homes_in_its_directory() {
        let origins = origins();
        let launch = caddy(&front(&origins, None, Balance::RoundRobin));
        assert_eq!((launch.program, launch.package, launch.owner), ("caddy", "caddy", None));
        let conf = format!("{DIR}/Caddyfile");
        assert_eq!(args(&launch), ["run", "--config", &conf, "--adapter", "caddyfile"]);
        let env: Vec<(&str, &str)> = launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(env, [("HOME", DIR), ("XDG_DATA_HOME", DIR), ("XDG_CONFIG_HOME", DIR)]);
        assert!(!launch.quic, "no TLS, no HTTP/3");
    }

    #[test]
    fn caddy_never_reaches_the_network_and_checks_every_origin() {
        let origins = origins();
        let text = text(&caddy(&front(&origins, None, Balance::RoundRobin)), "Caddyfile").to_string();
        for line in [
            "admin off",
            "auto_https off",
            "skip_install_trust",
            "root \"/tmp/tb-1/front/storage\"",
            "protocols h1 h2 h3",
            "http://:8080 {",
            "bind 127.0.0.1",
            "reverse_proxy 127.0.0.1:9001 127.0.0.1:9002 {",
            "lb_policy round_robin",
            "health_uri /_barrage/stats",
            "health_interval 250ms",
            "keepalive_idle_conns_per_host 1024",
        ] {
            position(&text, line);
        }
        assert!(!text.contains("https://") && !text.contains("tls "), "{text}");
        // Every opening brace closed: Caddy would refuse the file otherwise.
        assert_eq!(text.matches('{').count(), text.matches('}').count(), "{text}");
    }

    #[test]
    fn caddy_serves_https_and_http3_with_the_testbed_certificate() {
        let origins = origins();
        let files = tls_files();
        for (balance, policy) in [
            (Balance::RoundRobin, "lb_policy round_robin"),
            (Balance::LeastConn, "lb_policy least_conn"),
            (Balance::IpHash, "lb_policy ip_hash"),
            (Balance::UriHash, "lb_policy uri_hash"),
        ] {
            let launch = caddy(&front(&origins, Some(&files), balance));
            assert!(launch.quic, "HTTP/3 on the TLS port");
            let text = text(&launch, "Caddyfile");
            let site = position(text, "https://:8443 {");
            assert!(position(text, "http://:8080 {") < site);
            let directives = directives(text);
            assert_eq!(directives[site + 1], "bind 127.0.0.1");
            assert_eq!(directives[site + 2], "tls \"/tmp/tb-1/tls/cert.pem\" \"/tmp/tb-1/tls/key.pem\"");
            assert_eq!(directives.iter().filter(|l| **l == policy).count(), 2, "{text}");
        }
    }

    #[test]
    #[should_panic(expected = "at least one origin")]
    fn caddy_needs_an_origin() {
        caddy(&front(&[], None, Balance::RoundRobin));
    }
}
