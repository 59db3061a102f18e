//! The servers a testbed runs: for each kind, its config files and command line.
//!
//! Everything here is a pure function of a [`Front`]: no process is started and no file is
//! written; the supervisor does that.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// How a balancer picks the origin of the next request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Balance {
    /// In turn.
    RoundRobin,
    /// The origin with the fewest open requests.
    LeastConn,
    /// By a hash of the client address (sticky).
    IpHash,
    /// By a consistent hash of the request's URI (path and query): each URL always goes
    /// to one origin, and only 1/N of them move when an origin is added or removed.
    UriHash,
}

impl Balance {
    /// Its command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Balance::RoundRobin => "roundrobin",
            Balance::LeastConn => "leastconn",
            Balance::IpHash => "iphash",
            Balance::UriHash => "uri-hash",
        }
    }
}

impl std::str::FromStr for Balance {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Balance::RoundRobin, Balance::LeastConn, Balance::IpHash, Balance::UriHash]
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| format!("unknown balancing '{s}': expected roundrobin, leastconn, iphash or uri-hash"))
    }
}

/// The testbed's certificate (generated once per testbed), as files.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The leaf certificate for localhost, 127.0.0.1 and ::1 (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM, PKCS#8).
    pub key: PathBuf,
    /// Certificate then key in one file (as haproxy wants it).
    pub combined: PathBuf,
}

/// An origin behind a front.
#[derive(Clone, Debug)]
pub struct Origin {
    /// Its testbed name (`origin-1`), which balancers report as the backend.
    pub name: String,
    /// Its plain-HTTP address.
    pub addr: SocketAddr,
    /// Its share of the requests a balancer spreads, against the others' (`--weights`);
    /// `None`: equal.
    pub weight: Option<u32>,
}

/// What one front (balancer or cache) is asked to be.
#[derive(Clone, Debug)]
pub struct Front<'a> {
    /// Testbed name of this process (`nginx-lb`, `varnish`...).
    pub name: &'a str,
    /// A directory of its own (absolute, exists, empty): configs, pid files, temp files.
    pub dir: &'a Path,
    /// Plain-HTTP listen address.
    pub listen: SocketAddr,
    /// HTTPS listen address and certificate, when the front terminates TLS.
    pub tls: Option<(SocketAddr, &'a TlsFiles)>,
    /// The origins: balancers spread over all, caches use the first.
    pub origins: &'a [Origin],
    /// How a balancer spreads requests.
    pub balance: Balance,
    /// A cache's size (`--memory`); `None`: its default here (64 MB; nginx-cache 1 GB of disk).
    pub memory: Option<u64>,
}

/// How to start one server process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Launch {
    /// The program, as found on PATH or in /usr/sbin.
    pub program: &'static str,
    /// Its arguments.
    pub args: Vec<String>,
    /// Files to write before starting it: (path, contents).
    pub files: Vec<(PathBuf, String)>,
    /// The Debian package that provides `program`.
    pub package: &'static str,
    /// Runs `as root` drops to this user, which must own `dir` (squid: `proxy`).
    pub owner: Option<&'static str>,
    /// Path prefixes of files the server leaves outside `dir` when it does not exit cleanly
    /// (killed, crashed): after it exits, remove every file whose path starts with one of
    /// them. Squid's shared-memory segments in `/dev/shm` are the only case.
    pub leftovers: Vec<PathBuf>,
    /// Environment variables set for it (Caddy: its home and data directories).
    pub env: Vec<(String, String)>,
    /// It serves HTTP/3 on the UDP port of its TLS address too.
    pub quic: bool,
    /// Its own logs (access logs, error logs), besides its output (`DIR/output.log`).
    pub logs: Vec<PathBuf>,
    /// Programs (with their arguments) the supervisor starts beside it, in its process
    /// group, so that they end with it: Varnish's access log writer, `varnishncsa`.
    pub companions: Vec<Vec<String>>,
}

// ---------------------------------------------------------------------------------------
// nginx

/// nginx as a load balancer over all `f.origins`, in the foreground:
/// `nginx -e stderr -p DIR -c DIR/nginx.conf -g 'daemon off;'`.
///
/// It balances per `f.balance` (round robin, `least_conn`, `ip_hash`), keeps connections
/// alive on both sides (`keepalive 32` idle connections to the origins), names the origin
/// that answered in `X-Backend`, and takes a failing origin out for 2 s after one failed
/// attempt (passive health checks), retrying the request on the next origin. With
/// `f.tls` it also serves HTTPS (HTTP/1.1, no ALPN) with the testbed certificate.
///
/// Keep-alive and balancing: nginx picks an origin for every request, also on a kept-alive
/// client connection (a client connection is never tied to an origin; origin connections
/// are a pool per upstream). `ip_hash` hashes the first three octets of the client's IPv4
/// address, so every client on 127.0.0.1 goes to the same origin.
///
/// Apart from `X-Backend`, requests and responses pass unchanged except for what any
/// proxy does: hop-by-hop headers (`Connection`), and nginx's own `Date` and `Server`.
/// SIGTERM is a fast shutdown: the master stops its worker and exits, closing open
/// connections.
///
/// # Panics
/// If `f.origins` is empty.
pub fn nginx(f: &Front) -> Launch {
    nginx_launch(f, nginx_conf(f, false))
}

/// nginx as a cache in front of all `f.origins` (`proxy_cache`), in the foreground, started
/// as [`nginx`] is and balancing as it does.
///
/// Responses are cached in `DIR/cache` as the origin's `Cache-Control` (or `Expires`)
/// says, and only then (no `proxy_cache_valid`: a response that says nothing is not
/// stored; nor is one with `Set-Cookie`), at most `f.memory` bytes of it (default 1 GB:
/// nginx's cache is on disk, its keys in 10 MB of shared memory). The key is the request
/// URI alone, so that HTTP and HTTPS share the cache as Varnish behind hitch does.
/// `X-Cache-Status` is nginx's `$upstream_cache_status`: `MISS`, `HIT`, `EXPIRED`,
/// `STALE`, `UPDATING`, `REVALIDATED` or `BYPASS`; the access log has it too. Removing
/// the files in `DIR/cache` empties it: nginx takes a key whose file is gone for a miss
/// (`testbed purge` swaps the directory for an empty one).
///
/// # Panics
/// If `f.origins` is empty.
pub fn nginx_cache(f: &Front) -> Launch {
    nginx_launch(f, nginx_conf(f, true))
}

/// nginx in the foreground with `conf` as its config: `nginx -e stderr -p DIR -c
/// DIR/nginx.conf -g 'daemon off;'`, its access log `DIR/access.log`.
fn nginx_launch(f: &Front, text: String) -> Launch {
    let conf = f.dir.join("nginx.conf");
    let args = vec![
        // Errors before the config is read go to stderr, not /var/log/nginx/error.log.
        "-e".to_string(),
        "stderr".to_string(),
        // Relative paths (none are used) would resolve inside the testbed directory.
        "-p".to_string(),
        f.dir.display().to_string(),
        "-c".to_string(),
        conf.display().to_string(),
        // The supervisor owns the process: the master stays its child.
        "-g".to_string(),
        "daemon off;".to_string(),
    ];
    let files = vec![(conf, text)];
    let logs = vec![nginx_access_log(f.dir)];
    Launch { program: "nginx", args, files, package: "nginx", logs, ..Launch::default() }
}

/// Where nginx writes its access log.
fn nginx_access_log(dir: &Path) -> PathBuf {
    dir.join("access.log")
}

/// The whole `nginx.conf`: a balancer, or with `cache` a cache.
fn nginx_conf(f: &Front, cache: bool) -> String {
    assert!(!f.origins.is_empty(), "nginx {}: a balancer needs at least one origin", f.name);
    let what = if cache { "a cache" } else { "a load balancer" };
    let mut c = format!("# nginx for the barrage testbed: {}, {what}.\n", f.name);
    c += &nginx_main(f.dir);
    c += "\nhttp {\n";
    c += &nginx_http(f.dir);
    if cache {
        c += &nginx_cache_path(f);
    }
    c += &nginx_backend_map(f.origins);
    c += &nginx_upstream(f.origins, f.balance);
    c += &nginx_server(f, cache);
    c += "}\n";
    c
}

/// The cache's directory and size (`proxy_cache_path`).
fn nginx_cache_path(f: &Front) -> String {
    let size = f.memory.unwrap_or(1 << 30);
    format!(
        "
    # The cache: files in the testbed directory (two levels of subdirectories), keys in
    # 10 MB of shared memory (about 80,000 of them), at most {size} bytes of files. Files
    # are written there directly, not moved from proxy_temp (use_temp_path=off).
    proxy_cache_path {path} levels=1:2 keys_zone=barrage_cache:10m max_size={size} inactive=1h use_temp_path=off;
",
        path = quoted(&f.dir.join("cache")),
    )
}

/// The main context: processes, pid file, error log, connections.
fn nginx_main(dir: &Path) -> String {
    format!(
        "\
# One worker: without a shared `zone`, every worker keeps its own round-robin position,
# connection counts and failure marks, so with several the spread over the origins and
# the passive health checks would depend on which worker took the connection. One worker
# also leaves the CPUs to the load generator and the origins on the same machine.
worker_processes 1;
# Workers stay the user that started nginx (root in the testbed) instead of switching to
# `nobody`, which could not enter a private testbed directory for its temp files. (When
# nginx is not started as root this line is ignored, with a warning.)
user root;
pid {pid};
error_log stderr warn;

events {{
    # Each proxied request holds two connections (client and origin); the default 512
    # would refuse clients beyond about 250 concurrent requests.
    worker_connections 4096;
}}
",
        pid = quoted(&dir.join("nginx.pid")),
    )
}

/// Settings of the `http` context: logging, body size, temp paths.
fn nginx_http(dir: &Path) -> String {
    let mut c = format!(
        "    # One line per request, written at once (no buffer: a test reads it right after):
    # the origin that answered ($upstream_addr, \"A, B\" after a failover) and the cache
    # status (\"-\" when not caching). Errors go to stderr.
    log_format barrage '$remote_addr [$time_local] \"$request\" $status $body_bytes_sent $request_time upstream=$upstream_addr cache=$upstream_cache_status';
    access_log {log} barrage;
    # Request bodies of any size pass (the default answers 413 above 1 MB).
    client_max_body_size 0;
    # Bodies stream through instead of going to temp files when they outgrow the memory
    # buffers (request bodies above 16 KB, large responses): the disk writes would count in
    # the latency measured, and each would log a warning.
    proxy_request_buffering off;
    proxy_max_temp_file_size 0;
    # Temp files nginx still wants go inside the testbed directory, not /var/lib/nginx.
",
        log = quoted(&nginx_access_log(dir)),
    );
    for (directive, sub) in [
        ("client_body_temp_path", "client_body_temp"),
        ("proxy_temp_path", "proxy_temp"),
        ("fastcgi_temp_path", "fastcgi_temp"),
        ("uwsgi_temp_path", "uwsgi_temp"),
        ("scgi_temp_path", "scgi_temp"),
    ] {
        let _ = writeln!(c, "    {directive} {};", quoted(&dir.join(sub)));
    }
    c
}

/// `$barrage_backend`: the name of the origin that answered, from `$upstream_addr`.
fn nginx_backend_map(origins: &[Origin]) -> String {
    let mut c = String::from(
        "
    # X-Backend names the origin that answered. $upstream_addr lists every origin tried,
    # in order (\"A, B\" after a failover), so the match is on the last address. Responses
    # nginx makes itself (no origin left) get no X-Backend.
    map $upstream_addr $barrage_backend {
        default \"\";
",
    );
    for o in origins {
        let _ = writeln!(c, "        \"~(^|, ){}$\" \"{}\";", regex_escape(&o.addr.to_string()), o.name);
    }
    c += "    }\n";
    c
}

/// The `upstream` block: balancing method, origins with passive checks, keep-alive pool.
fn nginx_upstream(origins: &[Origin], balance: Balance) -> String {
    let method = match balance {
        Balance::RoundRobin => "# Round robin: nginx's default.\n",
        Balance::LeastConn => "least_conn;\n",
        Balance::IpHash => "# Hashes the first three octets of the client's IPv4 address.\n        ip_hash;\n",
        Balance::UriHash => "# Consistent (ketama) hashing of the request URI: a URL always goes to one origin.\n        hash $request_uri consistent;\n",
    };
    let mut c = format!(
        "
    upstream barrage_origins {{
        # The method must come before `keepalive`, which wraps it.
        {method}"
    );
    c += "        # Passive health checks: one failed attempt (see proxy_next_upstream) takes an
        # origin out for 2 s, after which it gets requests again.
";
    for o in origins {
        let weight = o.weight.map_or(String::new(), |w| format!(" weight={w}"));
        let _ = writeln!(c, "        server {}{weight} max_fails=1 fail_timeout=2s;", o.addr);
    }
    c += "        # Idle connections to the origins kept open for later requests.
        keepalive 32;
    }
";
    c
}

/// The `server` block: listeners and the proxying location, with `cache` through the cache.
fn nginx_server(f: &Front, cache: bool) -> String {
    let mut c = format!("\n    server {{\n        listen {};\n", f.listen);
    if let Some((addr, files)) = f.tls {
        let _ = writeln!(c, "        listen {addr} ssl;");
        let _ = writeln!(c, "        ssl_certificate {};", quoted(&files.cert));
        let _ = writeln!(c, "        ssl_certificate_key {};", quoted(&files.key));
    }
    c += "
        location / {
            proxy_pass http://barrage_origins;
            # Keep-alive to the origins needs HTTP/1.1 and no `Connection: close`.
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            # The client's Host, not the upstream's name.
            proxy_set_header Host $http_host;
            # A stopped origin refuses at once on loopback; this bounds a stuck one.
            proxy_connect_timeout 1s;
            # Retry on the next origin after a connection error or timeout only: an
            # origin's own error statuses pass through. (nginx never retries POST.)
            proxy_next_upstream error timeout;
            # `always`: on error statuses too.
            add_header X-Backend $barrage_backend always;
";
    if cache {
        c += "            # Cached as the origin's Cache-Control says (no proxy_cache_valid), keyed
            # by the URI alone: HTTP and HTTPS share the cache.
            proxy_cache barrage_cache;
            proxy_cache_key $request_uri;
            add_header X-Cache-Status $upstream_cache_status always;
";
    }
    c += "        }\n    }\n";
    c
}

// ---------------------------------------------------------------------------------------
// HAProxy

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

// ---------------------------------------------------------------------------------------
// Varnish

/// What Varnish needs beside its [`Front`]: its management port and the listener hitch
/// reaches it on.
#[derive(Clone, Debug)]
pub struct VarnishPorts<'a> {
    /// The management CLI (`-T`), for `varnishadm` (the purge's ban).
    pub admin: SocketAddr,
    /// The secret the CLI asks for (`-S`), written to `DIR/secret`.
    pub secret: &'a str,
    /// A listener speaking the PROXY protocol (`-a tls=ADDR,PROXY`), for hitch in front.
    pub proxy: Option<SocketAddr>,
}

/// Varnish as a cache in front of `f.origins[0]`, in the foreground: `varnishd -F -j none
/// -n DIR -a http=LISTEN [-a tls=PROXY,PROXY] -f DIR/default.vcl -T ADMIN -S DIR/secret -s
/// malloc,SIZE -t 0` (SIZE `f.memory`, default 64 MB).
///
/// Responses are cached as the origin's `Cache-Control` (or `Expires`) says, and only then:
/// `-t 0` turns off the 120 s default lifetime for responses that say nothing. Otherwise
/// the built-in VCL applies (GET and HEAD only; requests with `Cookie` or `Authorization`
/// and responses with `Set-Cookie` are not cached). `X-Cache-Status` is `HIT`, `MISS`,
/// `PASS` (not cacheable) or `STALE` (served in grace while being refreshed). Varnish also
/// adds its usual `Via`, `X-Varnish` and `Age` headers.
///
/// Varnish has no TLS of its own: `f.tls` is ignored, and with `v.proxy` hitch ([`hitch`])
/// terminates TLS in front, passing the connections on in the PROXY protocol to the
/// listener named `tls`. Both listeners share the one cache: objects are keyed by URL
/// alone (not by Host, which differs by port).
///
/// Its access log, `DIR/access.log`, is written by `varnishncsa` ([`Launch::companions`]):
/// NCSA's fields, then the time taken (µs), the handling (`hit`, `miss`, `pass`...) and
/// the listener (`http` or `tls`).
///
/// `-n DIR` keeps its working files (shared-memory log, compiled VCL) in the testbed
/// directory, unique per testbed; `-j none` keeps every process the starting user. The
/// management CLI listens on loopback and asks for the secret in `DIR/secret`
/// (`varnishadm -n DIR` finds both). The manager also sends its few lifecycle messages to
/// syslog(3) besides stderr, which cannot be turned off (only varnishtest's `vtc_mode`
/// debug flag does, and it changes behaviour); with no `/dev/log` they are dropped.
/// SIGTERM makes the manager stop the cache process and exit.
///
/// # Panics
/// If `f.origins` is empty.
pub fn varnish(f: &Front, v: &VarnishPorts) -> Launch {
    let origin = &f.origins.first().unwrap_or_else(|| panic!("varnish {}: no origin", f.name)).addr;
    let vcl = f.dir.join("default.vcl");
    let secret = f.dir.join("secret");
    let text = varnish_vcl(f.name, origin);
    let dir = f.dir.display().to_string();
    let mut args = vec![
        // Foreground: the manager stays the supervisor's child.
        "-F".to_string(),
        // No jail: no switching to the varnish users, so files in `dir` stay readable.
        "-j".into(),
        "none".into(),
        "-n".into(),
        dir.clone(),
        "-a".into(),
        format!("http={}", f.listen),
    ];
    if let Some(proxy) = v.proxy {
        args.extend(["-a".into(), format!("tls={proxy},PROXY")]);
    }
    args.extend([
        "-f".into(),
        vcl.display().to_string(),
        // The management CLI, on loopback, behind the secret.
        "-T".into(),
        v.admin.to_string(),
        "-S".into(),
        secret.display().to_string(),
        "-s".into(),
        format!("malloc,{}", f.memory.unwrap_or(64 << 20)),
        // Default TTL 0: only the origin's headers make a response cacheable.
        "-t".into(),
        "0".into(),
    ]);
    let log = f.dir.join("access.log");
    // -a: appended across restarts; -t off: waits for varnishd's shared memory, which it is
    // started before. It writes each line as the request ends.
    let ncsa =
        ["varnishncsa", "-n", &dir, "-a", "-w", &log.display().to_string(), "-t", "off", "-F", VARNISH_LOG_FORMAT]
            .map(String::from)
            .to_vec();
    Launch {
        program: "varnishd",
        args,
        files: vec![(vcl, text), (secret, format!("{}\n", v.secret))],
        package: "varnish",
        logs: vec![log],
        companions: vec![ncsa],
        ..Launch::default()
    }
}

/// varnishncsa's format: NCSA's fields, the time taken (µs), Varnish's handling and the
/// listener's name (`http`, or `tls` behind hitch).
const VARNISH_LOG_FORMAT: &str = r#"%h %l %u %t "%r" %s %b %D %{Varnish:handling}x %{VSL:ReqStart[3]}x"#;

/// The VCL: the origin as the backend and `X-Cache-Status` on every delivered response.
fn varnish_vcl(name: &str, origin: &SocketAddr) -> String {
    format!(
        "\
vcl 4.1;

# Varnish for the barrage testbed: {name}, a cache.

# The origin. No probe: with one backend there is nothing to fail over to.
backend origin {{
    .host = \"{host}\";
    .port = \"{port}\";
}}

# One site: objects are keyed by URL alone. The default key adds the Host header, which
# names the port the client reached, so HTTP and HTTPS (through hitch) would cache apart.
sub vcl_hash {{
    hash_data(req.url);
    return (lookup);
}}

sub vcl_deliver {{
    if (obj.uncacheable) {{
        # pass, hit-for-pass, hit-for-miss: fetched for this request and not stored.
        set resp.http.X-Cache-Status = \"PASS\";
    }} else if (obj.hits == 0) {{
        set resp.http.X-Cache-Status = \"MISS\";
    }} else if (obj.ttl <= 0s) {{
        # Expired, delivered in grace while a background fetch refreshes it.
        set resp.http.X-Cache-Status = \"STALE\";
    }} else {{
        set resp.http.X-Cache-Status = \"HIT\";
    }}
}}
",
        host = origin.ip(),
        port = origin.port(),
    )
}

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
    /// Varnish's PROXY listener ([`VarnishPorts::proxy`]).
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

// ---------------------------------------------------------------------------------------
// Squid

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

// ---------------------------------------------------------------------------------------
// Caddy

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
\t}}
}}
",
        upstreams.join(" ")
    );
    c
}

// ---------------------------------------------------------------------------------------
// Key-value servers

/// What one key-value server (redis-server, memcached) is asked to be.
#[derive(Clone, Debug)]
pub struct Store<'a> {
    /// Testbed name of this process (`redis-1`, `memcached-2`).
    pub name: &'a str,
    /// A directory of its own (absolute): its config and working files.
    pub dir: &'a Path,
    /// Where it listens (plain TCP).
    pub listen: SocketAddr,
    /// TLS listen address and certificate, when it also serves TLS (redis-server only).
    pub tls: Option<(SocketAddr, &'a TlsFiles)>,
    /// Its memory for data (`--memory`): redis-server's `maxmemory`, memcached's `-m`.
    pub memory: Option<u64>,
    /// What redis-server does at `maxmemory` (`--eviction`).
    pub eviction: Option<Eviction>,
}

/// What redis-server does when its data reaches `maxmemory` (`maxmemory-policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Eviction {
    /// Refuse writes.
    NoEviction,
    /// Evict the least recently used key.
    AllKeysLru,
    /// Evict the least frequently used key.
    AllKeysLfu,
    /// Evict a random key.
    AllKeysRandom,
    /// Evict the least recently used key of those with an expiry.
    VolatileLru,
    /// Evict the least frequently used key of those with an expiry.
    VolatileLfu,
    /// Evict a random key of those with an expiry.
    VolatileRandom,
    /// Evict the key of those with an expiry that expires soonest.
    VolatileTtl,
}

impl Eviction {
    /// Every policy, as Redis names it (and `--eviction` takes it).
    pub const NAMES: [&'static str; 8] = [
        "noeviction",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ];

    /// Redis's name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl std::str::FromStr for Eviction {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        use Eviction::*;
        let all =
            [NoEviction, AllKeysLru, AllKeysLfu, AllKeysRandom, VolatileLru, VolatileLfu, VolatileRandom, VolatileTtl];
        all.into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| format!("unknown eviction policy '{s}': expected one of {}", Self::NAMES.join(", ")))
    }
}

/// redis-server in the foreground with its config in `DIR/redis.conf`: loopback only, no
/// persistence (`save ""`, `appendonly no`, so a restarted instance starts empty and a stop
/// writes nothing), logging to `DIR/redis.log`, `maxmemory` and `maxmemory-policy` as
/// `s.memory` and `s.eviction` say (Redis's defaults otherwise: no limit, `noeviction`), and `DEBUG` allowed from loopback clients
/// (`enable-debug-command local`, refused by default since Redis 7) so that tests can
/// inject a known server-side delay with `DEBUG SLEEP`. SIGTERM shuts it down at once.
///
/// With `s.tls` it also serves TLS on a second port (`tls-port`) with the testbed
/// certificate, the same commands and data as the plain port, and asks clients for no
/// certificate of their own (`tls-auth-clients no`: Redis requires one by default).
pub fn redis(s: &Store) -> Launch {
    let conf = s.dir.join("redis.conf");
    let mut text = format!(
        "\
# redis-server for the barrage testbed: {name}, a key-value store.
bind {ip}
port {port}
# Foreground: the supervisor owns the process (and writes its pid file).
daemonize no
# No persistence: nothing is written on a schedule or at shutdown; a restart starts empty.
save \"\"
appendonly no
# Where a dump would go, inside the testbed directory rather than the current one.
dir {dir}
# Its log, a file of its own.
logfile {log}
# DEBUG SLEEP from loopback clients: a known server-side delay for tests.
enable-debug-command local
# It listens on loopback only; protected mode would also refuse clients from 127.0.0.N other
# than 127.0.0.1 (load generators bound to their own loopback address with --bind).
protected-mode no
",
        name = s.name,
        ip = s.listen.ip(),
        port = s.listen.port(),
        dir = quoted(s.dir),
        log = quoted(&s.dir.join("redis.log")),
    );
    if let Some(bytes) = s.memory {
        let _ = writeln!(text, "# Memory for data; what happens beyond it is maxmemory-policy's.\nmaxmemory {bytes}");
    }
    if let Some(policy) = s.eviction {
        let _ = writeln!(text, "maxmemory-policy {}", policy.name());
    }
    if let Some((addr, files)) = s.tls {
        text += &redis_tls(addr, files);
    }
    Launch {
        program: "redis-server",
        args: vec![conf.display().to_string()],
        files: vec![(conf, text)],
        package: "redis-server",
        logs: vec![s.dir.join("redis.log")],
        ..Launch::default()
    }
}

/// The TLS lines of `redis.conf`: a second port on the plain one's address.
fn redis_tls(addr: SocketAddr, files: &TlsFiles) -> String {
    format!(
        "\
# TLS on a second port, the same server behind it. Redis binds every port to the `bind`
# addresses: the TLS listener's address is the plain one's.
tls-port {port}
# The leaf then the CA (Redis loads the file as a chain), and the leaf's key.
tls-cert-file {cert}
tls-key-file {key}
# No client certificates: Redis asks for one by default, and would then also need
# tls-ca-cert-file to check them.
tls-auth-clients no
",
        port = addr.port(),
        cert = quoted(&files.cert),
        key = quoted(&files.key),
    )
}

/// memcached in the foreground: `memcached -U 0 -l IP -p PORT -u nobody -m MB -v`, TCP only
/// (`-U 0`: no UDP port), `s.memory` for items (whole megabytes, default 64), default
/// connection limit (1024), errors and warnings (`-v`) to its output, `DIR/output.log`.
///
/// memcached refuses to run as root without `-u`: `-u nobody` makes it drop to `nobody`
/// (it writes no files, so it needs nothing in `dir`); when not started as root, memcached
/// ignores `-u`. SIGTERM stops it at once.
///
/// No TLS: memcached could serve it (`-Z`), but barrage has no memcache-over-TLS target to
/// load it with, so [`crate::Options::check`] refuses `--tls` and `s.tls` is ignored.
pub fn memcached(s: &Store) -> Launch {
    let mb = s.memory.map_or(64, |b| b.div_ceil(1 << 20).max(1)).to_string();
    let (ip, port) = (s.listen.ip().to_string(), s.listen.port().to_string());
    let args = ["-U", "0", "-l", &ip, "-p", &port, "-u", "nobody", "-m", &mb, "-v"].map(String::from).to_vec();
    let logs = vec![s.dir.join("output.log")];
    Launch { program: "memcached", args, package: "memcached", logs, ..Launch::default() }
}

// ---------------------------------------------------------------------------------------
// Helpers

/// 16 hex digits unique to `dir` (64-bit FNV-1a of the path), for names a server makes
/// outside it. FNV rather than std's hasher: the value must not change between builds, so
/// that leftovers of an earlier run can be recognised.
fn dir_id(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let hash = dir
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
    format!("{hash:016x}")
}

/// A path in double quotes, for nginx, HAProxy and Redis (which accept spaces inside them).
fn quoted(path: &Path) -> String {
    format!("\"{}\"", path.display())
}

/// `s` with regular-expression metacharacters escaped (for `127.0.0.1:80`, `[::1]:80`).
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        if "\\.^$|?*+()[]{}".contains(ch) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = "/tmp/tb-1/front";

    fn origins() -> Vec<Origin> {
        vec![
            Origin { name: "origin-1".to_string(), addr: "127.0.0.1:9001".parse().unwrap(), weight: None },
            Origin { name: "origin-2".to_string(), addr: "127.0.0.1:9002".parse().unwrap(), weight: None },
        ]
    }

    fn tls_files() -> TlsFiles {
        TlsFiles {
            cert: PathBuf::from("/tmp/tb-1/tls/cert.pem"),
            key: PathBuf::from("/tmp/tb-1/tls/key.pem"),
            combined: PathBuf::from("/tmp/tb-1/tls/combined.pem"),
        }
    }

    fn front<'a>(origins: &'a [Origin], tls: Option<&'a TlsFiles>, balance: Balance) -> Front<'a> {
        Front {
            name: "front",
            dir: Path::new(DIR),
            listen: "127.0.0.1:8080".parse().unwrap(),
            tls: tls.map(|files| ("127.0.0.1:8443".parse().unwrap(), files)),
            origins,
            balance,
            memory: None,
        }
    }

    /// The one file of a launch, checking its path.
    fn text<'a>(launch: &'a Launch, file: &str) -> &'a str {
        assert_eq!(launch.files.len(), 1);
        assert_eq!(launch.files[0].0, Path::new(DIR).join(file));
        &launch.files[0].1
    }

    /// The config's directives: lines without comments, trimmed, blank lines dropped.
    fn directives(text: &str) -> Vec<&str> {
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
    }

    /// Where `line` is among the directives; panics if it is not there.
    fn position(text: &str, line: &str) -> usize {
        directives(text).iter().position(|l| *l == line).unwrap_or_else(|| panic!("no line `{line}` in:\n{text}"))
    }

    fn args(launch: &Launch) -> Vec<&str> {
        launch.args.iter().map(String::as_str).collect()
    }

    // nginx -------------------------------------------------------------------------------

    #[test]
    fn nginx_runs_in_the_foreground_with_its_files_in_dir() {
        let origins = origins();
        let launch = nginx(&front(&origins, None, Balance::RoundRobin));
        assert_eq!((launch.program, launch.package, launch.owner), ("nginx", "nginx", None));
        assert!(launch.leftovers.is_empty());
        let conf = format!("{DIR}/nginx.conf");
        assert_eq!(args(&launch), ["-e", "stderr", "-p", DIR, "-c", &conf, "-g", "daemon off;"]);
        let text = text(&launch, "nginx.conf");
        for line in [
            "worker_processes 1;",
            "user root;",
            "error_log stderr warn;",
            &format!("access_log \"{DIR}/access.log\" barrage;"),
            "client_max_body_size 0;",
            "proxy_request_buffering off;",
            "proxy_max_temp_file_size 0;",
            &format!("pid \"{DIR}/nginx.pid\";"),
            &format!("client_body_temp_path \"{DIR}/client_body_temp\";"),
            &format!("proxy_temp_path \"{DIR}/proxy_temp\";"),
            &format!("fastcgi_temp_path \"{DIR}/fastcgi_temp\";"),
            &format!("uwsgi_temp_path \"{DIR}/uwsgi_temp\";"),
            &format!("scgi_temp_path \"{DIR}/scgi_temp\";"),
        ] {
            position(text, line);
        }
        assert!(directives(text).iter().all(|l| !l.contains("/var/")), "{text}");
    }

    #[test]
    fn nginx_config_is_well_formed() {
        let origins = origins();
        let files = tls_files();
        let text = &nginx(&front(&origins, Some(&files), Balance::LeastConn)).files[0].1;
        // Every directive ends a statement or opens or closes a block, and blocks balance.
        for line in directives(text) {
            assert!(line.ends_with(';') || line.ends_with('{') || line == "}", "bad line `{line}`");
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }

    #[test]
    fn nginx_proxies_to_every_origin_with_keepalive_and_passive_checks() {
        let origins = origins();
        let text = &nginx(&front(&origins, None, Balance::RoundRobin)).files[0].1;
        let keepalive = position(text, "keepalive 32;");
        assert!(position(text, "server 127.0.0.1:9001 max_fails=1 fail_timeout=2s;") < keepalive);
        assert!(position(text, "server 127.0.0.1:9002 max_fails=1 fail_timeout=2s;") < keepalive);
        for line in [
            "listen 127.0.0.1:8080;",
            "proxy_pass http://barrage_origins;",
            "proxy_http_version 1.1;",
            "proxy_set_header Connection \"\";",
            "proxy_set_header Host $http_host;",
            "proxy_connect_timeout 1s;",
            "proxy_next_upstream error timeout;",
            "add_header X-Backend $barrage_backend always;",
        ] {
            position(text, line);
        }
        assert!(!text.contains("least_conn") && !text.contains("ip_hash") && !text.contains("ssl"), "{text}");
    }

    #[test]
    fn nginx_balancing_method_comes_before_keepalive() {
        let origins = origins();
        for (balance, line) in [
            (Balance::LeastConn, "least_conn;"),
            (Balance::IpHash, "ip_hash;"),
            (Balance::UriHash, "hash $request_uri consistent;"),
        ] {
            let text = &nginx(&front(&origins, None, balance)).files[0].1;
            assert!(position(text, line) < position(text, "keepalive 32;"), "{balance:?}");
        }
    }

    #[test]
    fn weights_go_on_each_origins_server_line() {
        let mut origins = origins();
        origins[0].weight = Some(3);
        origins[1].weight = Some(1);
        let text = &nginx(&front(&origins, None, Balance::UriHash)).files[0].1;
        position(text, "server 127.0.0.1:9001 weight=3 max_fails=1 fail_timeout=2s;");
        position(text, "server 127.0.0.1:9002 weight=1 max_fails=1 fail_timeout=2s;");
        let text = &haproxy(&front(&origins, None, Balance::RoundRobin)).files[0].1;
        position(text, "server origin-1 127.0.0.1:9001 weight 3");
        position(text, "server origin-2 127.0.0.1:9002 weight 1");
    }

    #[test]
    fn balancing_names_parse_back() {
        for b in [Balance::RoundRobin, Balance::LeastConn, Balance::IpHash, Balance::UriHash] {
            assert_eq!(b.name().parse::<Balance>(), Ok(b));
        }
        assert!("random".parse::<Balance>().unwrap_err().contains("uri-hash"));
    }

    #[test]
    fn nginx_names_the_last_upstream_address() {
        let origins = origins();
        let text = &nginx(&front(&origins, None, Balance::RoundRobin)).files[0].1;
        let map = position(text, "map $upstream_addr $barrage_backend {");
        assert_eq!(position(text, "default \"\";"), map + 1);
        assert_eq!(position(text, r#""~(^|, )127\.0\.0\.1:9001$" "origin-1";"#), map + 2);
        assert_eq!(position(text, r#""~(^|, )127\.0\.0\.1:9002$" "origin-2";"#), map + 3);
    }

    #[test]
    fn nginx_serves_https_with_the_testbed_certificate() {
        let origins = origins();
        let files = tls_files();
        let text = &nginx(&front(&origins, Some(&files), Balance::RoundRobin)).files[0].1;
        position(text, "listen 127.0.0.1:8080;");
        position(text, "listen 127.0.0.1:8443 ssl;");
        position(text, "ssl_certificate \"/tmp/tb-1/tls/cert.pem\";");
        position(text, "ssl_certificate_key \"/tmp/tb-1/tls/key.pem\";");
    }

    #[test]
    #[should_panic(expected = "at least one origin")]
    fn nginx_needs_an_origin() {
        nginx(&front(&[], None, Balance::RoundRobin));
    }

    #[test]
    fn nginx_cache_caches_by_uri_as_the_origin_says_and_logs_the_cache_status() {
        let origins = origins();
        let files = tls_files();
        let launch = nginx_cache(&front(&origins, Some(&files), Balance::RoundRobin));
        assert_eq!(launch.logs, [PathBuf::from(format!("{DIR}/access.log"))]);
        let text = text(&launch, "nginx.conf");
        let path = position(
            text,
            &format!(
                "proxy_cache_path \"{DIR}/cache\" levels=1:2 keys_zone=barrage_cache:10m max_size=1073741824 inactive=1h use_temp_path=off;"
            ),
        );
        let location = position(text, "location / {");
        assert!(path < location);
        for line in [
            "proxy_cache barrage_cache;",
            "proxy_cache_key $request_uri;",
            "add_header X-Cache-Status $upstream_cache_status always;",
            "proxy_pass http://barrage_origins;",
            "listen 127.0.0.1:8443 ssl;",
        ] {
            position(text, line);
        }
        // Only what the origin's headers allow is stored.
        let ignored = ["proxy_cache_valid", "proxy_ignore_headers"];
        assert!(directives(text).iter().all(|l| !ignored.iter().any(|d| l.starts_with(d))), "{text}");
        for line in directives(text) {
            assert!(line.ends_with(';') || line.ends_with('{') || line == "}", "bad line `{line}`");
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
        let sized = nginx_cache(&Front { memory: Some(1 << 20), ..front(&origins, None, Balance::RoundRobin) });
        assert!(sized.files[0].1.contains("max_size=1048576 "));
        // The balancer has no cache.
        assert!(!nginx(&front(&origins, None, Balance::RoundRobin)).files[0].1.contains("proxy_cache"));
    }

    // HAProxy -----------------------------------------------------------------------------

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

    // Caddy -------------------------------------------------------------------------------

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

    // Varnish -----------------------------------------------------------------------------

    fn varnish_ports(proxy: Option<&str>) -> VarnishPorts<'static> {
        VarnishPorts {
            admin: "127.0.0.1:8082".parse().unwrap(),
            secret: "s3cret",
            proxy: proxy.map(|p| p.parse().unwrap()),
        }
    }

    /// The text of the launch's file `name` in DIR.
    fn file<'a>(launch: &'a Launch, name: &str) -> &'a str {
        let path = Path::new(DIR).join(name);
        &launch.files.iter().find(|(p, _)| *p == path).unwrap_or_else(|| panic!("no {name}: {:?}", launch.files)).1
    }

    #[test]
    fn varnish_runs_in_the_foreground_with_its_work_dir_in_dir() {
        let origins = origins();
        let launch = varnish(&front(&origins, None, Balance::RoundRobin), &varnish_ports(None));
        assert_eq!((launch.program, launch.package, launch.owner), ("varnishd", "varnish", None));
        assert!(launch.leftovers.is_empty());
        let (vcl, secret) = (format!("{DIR}/default.vcl"), format!("{DIR}/secret"));
        assert_eq!(
            args(&launch),
            [
                "-F",
                "-j",
                "none",
                "-n",
                DIR,
                "-a",
                "http=127.0.0.1:8080",
                "-f",
                &vcl,
                "-T",
                "127.0.0.1:8082",
                "-S",
                &secret,
                "-s",
                "malloc,67108864",
                "-t",
                "0"
            ]
        );
        assert_eq!(file(&launch, "secret"), "s3cret\n");
        let log = format!("{DIR}/access.log");
        assert_eq!(launch.logs, [PathBuf::from(&log)]);
        assert_eq!(
            launch.companions,
            [["varnishncsa", "-n", DIR, "-a", "-w", &log, "-t", "off", "-F", VARNISH_LOG_FORMAT].map(String::from)]
        );
    }

    #[test]
    fn varnish_fronts_the_first_origin_and_reports_cache_status() {
        let origins = origins();
        let launch = varnish(&front(&origins, None, Balance::RoundRobin), &varnish_ports(None));
        let text = file(&launch, "default.vcl");
        assert_eq!(directives(text)[0], "vcl 4.1;");
        let backend = position(text, "backend origin {");
        assert_eq!(position(text, ".host = \"127.0.0.1\";"), backend + 1);
        assert_eq!(position(text, ".port = \"9001\";"), backend + 2);
        assert!(!text.contains("9002") && !text.contains(".probe"), "{text}");
        let deliver = position(text, "sub vcl_deliver {");
        for status in ["PASS", "MISS", "STALE", "HIT"] {
            assert!(position(text, &format!("set resp.http.X-Cache-Status = \"{status}\";")) > deliver);
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }

    #[test]
    fn varnish_takes_tls_from_hitch_on_a_proxy_listener_and_sizes_its_storage() {
        let origins = origins();
        let files = tls_files();
        let plain = varnish(&front(&origins, None, Balance::RoundRobin), &varnish_ports(None));
        // Its own TLS address is ignored: hitch serves it.
        assert_eq!(varnish(&front(&origins, Some(&files), Balance::RoundRobin), &varnish_ports(None)), plain);
        let behind_hitch = varnish(&front(&origins, None, Balance::RoundRobin), &varnish_ports(Some("127.0.0.1:8444")));
        let args = args(&behind_hitch);
        assert_eq!(args[5..9], ["-a", "http=127.0.0.1:8080", "-a", "tls=127.0.0.1:8444,PROXY"]);
        let small = Front { memory: Some(1 << 20), ..front(&origins, None, Balance::RoundRobin) };
        assert!(varnish(&small, &varnish_ports(None)).args.iter().any(|a| a == "malloc,1048576"));
    }

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

    // Squid -------------------------------------------------------------------------------

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

    // Key-value servers -------------------------------------------------------------------

    fn store() -> Store<'static> {
        Store {
            name: "redis-1",
            dir: Path::new(DIR),
            listen: "127.0.0.1:6400".parse().unwrap(),
            tls: None,
            memory: None,
            eviction: None,
        }
    }

    #[test]
    fn redis_runs_in_the_foreground_on_loopback_without_persistence() {
        let launch = redis(&store());
        assert_eq!((launch.program, launch.package, launch.owner), ("redis-server", "redis-server", None));
        let conf = format!("{DIR}/redis.conf");
        assert_eq!(args(&launch), [conf.as_str()]);
        let text = text(&launch, "redis.conf");
        for line in [
            "bind 127.0.0.1",
            "port 6400",
            "daemonize no",
            "save \"\"",
            "appendonly no",
            &format!("dir \"{DIR}\""),
            &format!("logfile \"{DIR}/redis.log\""),
            "enable-debug-command local",
        ] {
            position(text, line);
        }
    }

    #[test]
    fn redis_serves_tls_on_a_second_port_without_client_certificates() {
        let plain = text(&redis(&store()), "redis.conf").to_string();
        assert!(!plain.contains("tls"), "{plain}");
        let files = tls_files();
        let launch = redis(&Store { tls: Some(("127.0.0.1:6443".parse().unwrap(), &files)), ..store() });
        let text = text(&launch, "redis.conf");
        // The plain port stays, and the TLS lines only add to the plain config.
        assert!(text.starts_with(&plain), "{text}");
        let port = position(text, "port 6400");
        let tls = position(text, "tls-port 6443");
        assert!(port < tls);
        assert_eq!(position(text, "tls-cert-file \"/tmp/tb-1/tls/cert.pem\""), tls + 1);
        assert_eq!(position(text, "tls-key-file \"/tmp/tb-1/tls/key.pem\""), tls + 2);
        assert_eq!(position(text, "tls-auth-clients no"), tls + 3);
        assert_eq!(directives(text).len(), tls + 4, "nothing after the TLS lines");
    }

    #[test]
    fn memcached_is_tcp_only_on_loopback_and_drops_root() {
        let launch = memcached(&Store { name: "memcached-1", ..store() });
        assert_eq!((launch.program, launch.package, launch.owner), ("memcached", "memcached", None));
        assert!(launch.files.is_empty() && launch.leftovers.is_empty());
        assert_eq!(args(&launch), ["-U", "0", "-l", "127.0.0.1", "-p", "6400", "-u", "nobody", "-m", "64", "-v"]);
        assert_eq!(launch.logs, [PathBuf::from(format!("{DIR}/output.log"))]);
    }

    // Helpers -----------------------------------------------------------------------------

    #[test]
    fn dir_id_is_fnv1a_64() {
        // Reference values of 64-bit FNV-1a.
        assert_eq!(dir_id(Path::new("")), "cbf29ce484222325");
        assert_eq!(dir_id(Path::new("a")), "af63dc4c8601ec8c");
        assert_eq!(dir_id(Path::new("foobar")), "85944171f73967e8");
    }

    #[test]
    fn regex_escape_escapes_addresses() {
        assert_eq!(regex_escape("127.0.0.1:80"), r"127\.0\.0\.1:80");
        assert_eq!(regex_escape("[::1]:80"), r"\[::1\]:80");
    }
}
