//! Squid, a reverse-proxy memory cache in front of the first origin, which never serves
//! as a forward proxy.

use super::{dir_id, Front, Launch};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Squid as a reverse-proxy cache in front of `f.origins[0]`, in the foreground:
/// `squid -N -n NAME -f DIR/squid.conf`, memory cache only (`f.memory`, default 64 MB;
/// objects up to 16 MB).
///
/// Responses are cached as the origin's `Cache-Control` (or `Expires`) says, with no
/// heuristic lifetime for responses that say nothing. Squid's own `X-Cache: HIT from NAME`
/// / `MISS from NAME` header tells hits from misses (barrage reads it); there is no
/// `X-Cache-Status`: in Squid 5 `reply_header_add X-Cache-Status "%Ss"` gives `NONE_NONE`
/// (the status is decided after the reply headers are built), and marking hits from
/// `send_hit` would call stale entries hits before they are revalidated. Squid also adds
/// its usual `Via`, `X-Cache-Lookup`, `X-Forwarded-For` and `Age` headers.
///
/// It serves nothing but the origin, never as a forward proxy: requests arrive on
/// accelerator ports (which rewrite an absolute URL naming another host to the origin and
/// refuse CONNECT), only those for the origin's host and port are allowed, and it never
/// connects anywhere but the origin.
///
/// With `f.tls` it also serves HTTPS (checked with Squid 5.7 built with GnuTLS and an
/// ECDSA P-256 certificate). The cache key includes the scheme, so the HTTP and HTTPS
/// ports cache separately; both fetch from the origin over plain HTTP.
///
/// Squid started as root drops to the user `proxy` ([`Launch::owner`]), which must own
/// `dir`; the certificate is read before that. `NAME` (its `-n` service name) is derived
/// from `dir`, which keeps apart the shared-memory segments it creates in `/dev/shm`
/// (`NAME-cf__*.shm`); it removes them on a clean exit, and [`Launch::leftovers`] lists
/// them for any other. Its messages go to stderr (once it is `proxy` it cannot reach
/// `DIR/cache.log` in the private testbed directory), a line per request to
/// `DIR/access.log` (squid's native format), which the supervisor opens and hands it as
/// descriptor 3 (`stdio:/dev/fd/3`); the cache manager answers clients on this machine. SIGTERM stops it in 1.5 to 2 s, and no setting makes that shorter:
/// Squid stops `shutdown_lifetime` (here 0) plus one second after its event loop notices
/// the signal. Unlike Varnish, Squid 5.7 did not cache 404 answers, even with `max-age`.
///
/// `dir` must not contain whitespace (squid.conf cannot quote paths).
///
/// # Panics
/// If `f.origins` is empty.
pub fn squid(f: &Front) -> Launch {
    let origin = &f.origins.first().unwrap_or_else(|| panic!("squid {}: no origin", f.name)).addr;
    let conf = f.dir.join("squid.conf");
    let name = squid_service_name(f.dir);
    let text = format!(
        "{}{}{}",
        squid_ports(f, origin),
        squid_access(origin, f.tls.is_some()),
        squid_rest(f.name, f.dir, f.memory)
    );
    // -N: no daemon and no worker processes; the supervisor owns the one process.
    let args = ["-N", "-n", &name, "-f", &conf.display().to_string()].map(String::from).to_vec();
    Launch {
        program: "squid",
        args,
        files: vec![(conf, text)],
        package: "squid",
        owner: Some("proxy"),
        leftovers: vec![PathBuf::from(format!("/dev/shm/{name}-"))],
        logs: vec![squid_access_log(f.dir)],
        ..Launch::default()
    }
}

/// Squid's access log, which the supervisor opens and hands it as descriptor 3.
pub fn squid_access_log(dir: &Path) -> PathBuf {
    dir.join("access.log")
}

/// The `-n` service name: alphanumeric (squid refuses anything else), at most 32
/// characters, unique per testbed directory.
fn squid_service_name(dir: &Path) -> String {
    format!("barrage{}", dir_id(dir))
}

/// The listening ports and the origin as the only peer.
fn squid_ports(f: &Front, origin: &SocketAddr) -> String {
    let site = format!("defaultsite={origin}");
    let mut c = format!(
        "\
# Squid for the barrage testbed: {name}, a cache in front of {origin}.

# Accelerator (reverse proxy) ports. no-vhost: every request is for the origin whatever
# its Host header says.
http_port {listen} accel no-vhost {site} name=front_http
",
        name = f.name,
        listen = f.listen,
    );
    if let Some((addr, files)) = f.tls {
        let _ = writeln!(
            c,
            "https_port {addr} accel no-vhost {site} name=front_https tls-cert={} tls-key={}",
            files.cert.display(),
            files.key.display()
        );
    }
    let _ = write!(
        c,
        "
# The origin, as a parent peer: the only server squid connects to (never_direct below).
cache_peer {host} parent {port} 0 no-query no-digest originserver name=origin
",
        host = origin.ip(),
        port = origin.port(),
    );
    c
}

/// Access rules: a reverse proxy for the origin, never a forward proxy.
fn squid_access(origin: &SocketAddr, tls: bool) -> String {
    let ports = if tls { "front_http front_https" } else { "front_http" };
    format!(
        "\
cache_peer_access origin allow all
# Never connect to the host a request names: only to the origin peer.
never_direct allow all

acl front myportname {ports}
# -n: match the URL's host as written, without DNS lookups.
acl origin_host dstdomain -n {host}
acl origin_port port {port}
acl connect method CONNECT
http_access deny connect
# Only requests that arrived on our ports for the origin. (Accelerator ports already
# rewrite an absolute URL naming another host to the origin, and refuse CONNECT.)
http_access allow front origin_host origin_port
# The cache manager (squidclient mgr:info, /squid-internal-mgr/...) from this machine only.
http_access allow localhost manager
http_access deny all
",
        host = origin.ip(),
        port = origin.port(),
    )
}

/// Cache, network and process settings.
fn squid_rest(name: &str, dir: &Path, memory: Option<u64>) -> String {
    let dir = dir.display();
    // Whole megabytes, at least one.
    let mb = memory.map_or(64, |b| b.div_ceil(1 << 20).max(1));
    format!(
        "
# Memory cache only (no cache_dir). The defaults would keep nothing above 512 KB in
# memory and nothing above 4 MB at all.
cache_mem {mb} MB
maximum_object_size_in_memory 16 MB
maximum_object_size 16 MB
# Freshness only from the origin's Cache-Control or Expires: no heuristic lifetime from
# Last-Modified for responses that say nothing.
refresh_pattern . 0 0% 0

# Nothing leaves loopback: no DNS servers but 127.0.0.1 (none is needed: the origin is an
# address), UDP sockets on loopback, no ICMP pinger helper. ICP and HTCP are off by default.
dns_nameservers 127.0.0.1
udp_incoming_address 127.0.0.1
pinger_enable off

# SIGTERM: stop at once instead of waiting the default 30 s for open connections.
shutdown_lifetime 0 seconds
# Squid refuses to run as root: started as root it switches to this user.
cache_effective_user proxy
# Names it in X-Cache and Via (and no lookup of the machine's name).
visible_hostname {name}
# Files inside the testbed directory, nothing in /var.
pid_filename {dir}/squid.pid
cache_log {dir}/cache.log
coredump_dir {dir}
netdb_filename none
# A line per request (TCP_MISS/200, TCP_MEM_HIT/200...), written at once (buffered_logs is
# off by default), to DIR/access.log: as the user proxy, squid cannot reach the testbed
# directory, so the supervisor hands it the file open as descriptor 3.
access_log stdio:/dev/fd/3 squid
# Whole URLs in it, query strings included (the default logs `/path?` alone).
strip_query_terms off
"
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn squid_runs_in_the_foreground_as_proxy_with_a_name_of_its_own() {
        let origins = origins();
        let launch = squid(&front(&origins, None, Balance::RoundRobin));
        assert_eq!((launch.program, launch.package, launch.owner), ("squid", "squid", Some("proxy")));
        let name = squid_service_name(Path::new(DIR));
        let conf = format!("{DIR}/squid.conf");
        assert_eq!(args(&launch), ["-N", "-n", &name, "-f", &conf]);
        assert_eq!(launch.leftovers, [PathBuf::from(format!("/dev/shm/{name}-"))]);
    }

    #[test]
    fn squid_service_names_are_alphanumeric_short_and_unique_per_dir() {
        let a = squid_service_name(Path::new("/tmp/tb-1/squid"));
        let b = squid_service_name(Path::new("/tmp/tb-2/squid"));
        assert_ne!(a, b);
        assert_eq!(a, squid_service_name(Path::new("/tmp/tb-1/squid")));
        for name in [a, b] {
            assert!(name.len() <= 32 && name.chars().all(|c| c.is_ascii_alphanumeric()), "{name}");
        }
    }

    #[test]
    fn squid_is_a_memory_cache_for_the_first_origin_only() {
        let origins = origins();
        let launch = squid(&front(&origins, None, Balance::RoundRobin));
        let text = text(&launch, "squid.conf");
        for line in [
            "http_port 127.0.0.1:8080 accel no-vhost defaultsite=127.0.0.1:9001 name=front_http",
            "cache_peer 127.0.0.1 parent 9001 0 no-query no-digest originserver name=origin",
            "cache_peer_access origin allow all",
            "never_direct allow all",
            "acl front myportname front_http",
            "cache_mem 64 MB",
            "refresh_pattern . 0 0% 0",
            "dns_nameservers 127.0.0.1",
            "udp_incoming_address 127.0.0.1",
            "pinger_enable off",
            "shutdown_lifetime 0 seconds",
            "cache_effective_user proxy",
            "access_log stdio:/dev/fd/3 squid",
            "netdb_filename none",
            &format!("pid_filename {DIR}/squid.pid"),
            &format!("cache_log {DIR}/cache.log"),
            &format!("coredump_dir {DIR}"),
        ] {
            position(text, line);
        }
        assert!(!text.contains("9002") && !text.contains("cache_dir ") && !text.contains("https_port"), "{text}");
        // squid's %Ss is not known yet when reply headers are added: X-Cache is used instead.
        assert!(!text.contains("reply_header_add"), "{text}");
    }

    #[test]
    fn squid_never_serves_as_a_forward_proxy() {
        let origins = origins();
        let text = &squid(&front(&origins, None, Balance::RoundRobin)).files[0].1;
        let rules: Vec<&str> = directives(text).into_iter().filter(|l| l.starts_with("http_access")).collect();
        assert_eq!(
            rules,
            [
                "http_access deny connect",
                "http_access allow front origin_host origin_port",
                "http_access allow localhost manager",
                "http_access deny all"
            ]
        );
        position(text, "acl origin_host dstdomain -n 127.0.0.1");
        position(text, "acl origin_port port 9001");
    }

    #[test]
    fn squid_serves_https_with_the_testbed_certificate() {
        let origins = origins();
        let files = tls_files();
        let text = &squid(&front(&origins, Some(&files), Balance::RoundRobin)).files[0].1;
        position(
            text,
            "https_port 127.0.0.1:8443 accel no-vhost defaultsite=127.0.0.1:9001 name=front_https \
             tls-cert=/tmp/tb-1/tls/cert.pem tls-key=/tmp/tb-1/tls/key.pem",
        );
        position(text, "acl front myportname front_http front_https");
    }
}
