//! HAProxy, as a load balancer over every origin with active health checks: one config
//! file, run in the foreground.

use super::{quoted, Balance, Front, Launch, Origin};
use std::fmt::Write as _;

/// HAProxy as a load balancer over all `f.origins`, in the foreground: `haproxy -db -f CFG`
/// (no daemon, chroot, user or pid file; alerts go to stderr, and the access log, in
/// HAProxy's `httplog` format, to stdout: both in `DIR/output.log`).
///
/// It balances per `f.balance` (`roundrobin`, `leastconn`, `source`), keeps connections
/// alive on both sides (idle origin connections are reused, `http-reuse safe` by default),
/// names the origin in `X-Backend`, and health-checks every origin actively every 250 ms:
/// one failed check marks it down, one success up again. There is no `option redispatch`,
/// so requests sent to a dead origin before its check notices fail with 503 rather than
/// being moved: tests want to see them. With `f.tls` it also serves HTTPS (HTTP/1.1, no
/// ALPN) with `files.combined`.
///
/// Keep-alive and balancing: in HTTP mode HAProxy picks a server for every request, also on
/// a kept-alive client connection. `source` hashes the whole client address, so every
/// client on 127.0.0.1 goes to the same origin.
///
/// Requests and responses pass unchanged apart from `X-Backend` and hop-by-hop headers.
/// SIGTERM is a hard stop: HAProxy exits at once, closing open connections.
///
/// # Panics
/// If `f.origins` is empty.
pub fn haproxy(f: &Front) -> Launch {
    assert!(!f.origins.is_empty(), "haproxy {}: a balancer needs at least one origin", f.name);
    let cfg = f.dir.join("haproxy.cfg");
    let text = format!(
        "# HAProxy for the barrage testbed: {}, a load balancer.\n{}{}{}",
        f.name,
        HAPROXY_DEFAULTS,
        haproxy_frontend(f),
        haproxy_backend(f.origins, f.balance)
    );
    // -db: foreground, no fork; the supervisor owns the process.
    let args = vec!["-db".to_string(), "-f".to_string(), cfg.display().to_string()];
    // Its access log is its standard output (see HAPROXY_DEFAULTS).
    let logs = vec![f.dir.join("output.log")];
    Launch { program: "haproxy", args, files: vec![(cfg, text)], package: "haproxy", logs, ..Launch::default() }
}

/// Global and default settings.
const HAPROXY_DEFAULTS: &str = "
# No daemon, chroot, user, pid file, stats socket or syslog; startup errors and alerts go
# to stderr.
global
    # The access log, one line per request (httplog), to standard output: the supervisor
    # keeps it in DIR/output.log, no syslog needed.
    log stdout format raw local0 info

defaults
    mode http
    log global
    option httplog
    # Keep-alive on both sides (HAProxy's default, said here because it matters).
    option http-keep-alive
    # A stopped origin refuses at once on loopback; this bounds a stuck one.
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    # A health check may take this long once connected: under a heavy load test a slow
    # answer is not a dead origin (a refused connection still fails the check at once).
    timeout check 1s
    # A request whose connection to the origin fails gets its 503 at once: the default is
    # 3 more attempts on the same origin (no redispatch) one second apart, so a request
    # sent to a dead origin would hang 3 s before failing all the same.
    retries 0
";

/// The frontend: listeners.
fn haproxy_frontend(f: &Front) -> String {
    let mut c = format!("\nfrontend barrage\n    bind {}\n", f.listen);
    if let Some((addr, files)) = f.tls {
        let _ = writeln!(c, "    bind {addr} ssl crt {}", quoted(&files.combined));
    }
    c += "    default_backend origins\n";
    c
}

/// The backend: balancing, health checks, X-Backend, the origins.
fn haproxy_backend(origins: &[Origin], balance: Balance) -> String {
    let method = match balance {
        Balance::RoundRobin => "roundrobin",
        Balance::LeastConn => "leastconn",
        Balance::IpHash => "source",
        // The path and query; consistent hashing moves only 1/N of the URLs when an
        // origin goes down or comes back.
        Balance::UriHash => "uri whole\n    hash-type consistent",
    };
    let mut c = format!(
        "
backend origins
    balance {method}
    # Checks ask the origin's stats path: it answers without counting the request and
    # without injected errors or latency, so checks neither add to the request counts tests
    # read nor fail when a test makes the origin fail or stall on purpose.
    option httpchk GET /_barrage/stats
    # Every 250 ms; one failure marks an origin down, one success up again: a killed origin
    # is out within about 0.3 s and a restarted one back within about 0.5 s.
    default-server check inter 250ms fall 1 rise 1
    # No `option redispatch`: requests sent to a dead origin before its check notices
    # fail, and tests want to see that.
    http-response set-header X-Backend %s
"
    );
    for o in origins {
        let weight = o.weight.map_or(String::new(), |w| format!(" weight {w}"));
        let _ = writeln!(c, "    server {} {}{weight}", o.name, o.addr);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn haproxy_runs_in_the_foreground_without_daemon_lines() {
        let origins = origins();
        let launch = haproxy(&front(&origins, None, Balance::RoundRobin));
        assert_eq!((launch.program, launch.package, launch.owner), ("haproxy", "haproxy", None));
        assert!(launch.leftovers.is_empty());
        let cfg = format!("{DIR}/haproxy.cfg");
        assert_eq!(args(&launch), ["-db", "-f", &cfg]);
        let text = text(&launch, "haproxy.cfg");
        for word in ["daemon", "chroot", "user", "pidfile", "stats", "redispatch"] {
            assert!(directives(text).iter().all(|l| !l.split_whitespace().any(|w| w == word)), "`{word}` in:\n{text}");
        }
        // The access log to stdout, which the supervisor keeps in output.log.
        let global = position(text, "global");
        assert_eq!(position(text, "log stdout format raw local0 info"), global + 1);
        let defaults = position(text, "defaults");
        assert!(defaults < position(text, "log global") && defaults < position(text, "option httplog"));
        assert_eq!(launch.logs, [PathBuf::from(format!("{DIR}/output.log"))]);
    }

    #[test]
    fn haproxy_checks_and_names_every_origin() {
        let origins = origins();
        let text = &haproxy(&front(&origins, None, Balance::RoundRobin)).files[0].1;
        for line in [
            "mode http",
            "option http-keep-alive",
            "timeout connect 1s",
            "timeout client 30s",
            "timeout server 30s",
            "timeout check 1s",
            "retries 0",
            "bind 127.0.0.1:8080",
            "default_backend origins",
            "balance roundrobin",
            "option httpchk GET /_barrage/stats",
            "http-response set-header X-Backend %s",
        ] {
            position(text, line);
        }
        let defaults = position(text, "default-server check inter 250ms fall 1 rise 1");
        assert!(defaults < position(text, "server origin-1 127.0.0.1:9001"));
        assert!(defaults < position(text, "server origin-2 127.0.0.1:9002"));
        assert!(!text.contains("ssl"), "{text}");
    }

    #[test]
    fn haproxy_balancing_methods() {
        let origins = origins();
        for (balance, line) in [
            (Balance::RoundRobin, "balance roundrobin"),
            (Balance::LeastConn, "balance leastconn"),
            (Balance::IpHash, "balance source"),
            (Balance::UriHash, "balance uri whole"),
            (Balance::UriHash, "hash-type consistent"),
        ] {
            position(&haproxy(&front(&origins, None, balance)).files[0].1, line);
        }
    }

    #[test]
    fn haproxy_serves_https_with_the_combined_file() {
        let origins = origins();
        let files = tls_files();
        let text = &haproxy(&front(&origins, Some(&files), Balance::RoundRobin)).files[0].1;
        assert!(
            position(text, "bind 127.0.0.1:8080") + 1
                == position(text, "bind 127.0.0.1:8443 ssl crt \"/tmp/tb-1/tls/combined.pem\"")
        );
    }

    #[test]
    #[should_panic(expected = "at least one origin")]
    fn haproxy_needs_an_origin() {
        haproxy(&front(&[], None, Balance::RoundRobin));
    }
}
