//! nginx, as a load balancer over every origin (`nginx-lb`) or a cache in front of
//! them (`nginx-cache`): one config file, run in the foreground.

use super::{quoted, regex_escape, Balance, Front, Launch, Origin, ORIGIN_POOL};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// nginx as a load balancer over all `f.origins`, in the foreground:
/// `nginx -e stderr -p DIR -c DIR/nginx.conf -g 'daemon off;'`.
///
/// It balances per `f.balance` (round robin, `least_conn`, `ip_hash`), keeps connections
/// alive on both sides (`keepalive 1024` idle connections to the origins), names the origin
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
    # status (\"-\" when not caching), and the W3C traceparent the request carried (\"-\"
    # without one: `barrage run --trace-context` sends it). Errors go to stderr.
    log_format barrage '$remote_addr [$time_local] \"$request\" $status $body_bytes_sent $request_time upstream=$upstream_addr cache=$upstream_cache_status traceparent=$http_traceparent';
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
    let _ = write!(
        c,
        "        # Idle connections to the origins kept open for later requests: more than
        # the clients' connections, so no request waits for a new origin connection.
        keepalive {ORIGIN_POOL};
    }}
"
    );
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

#[cfg(test)]
mod tests {
    use super::super::haproxy;
    use super::super::testing::*;
    use super::*;

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
        let keepalive = position(text, "keepalive 1024;");
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
            assert!(position(text, line) < position(text, "keepalive 1024;"), "{balance:?}");
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
}
