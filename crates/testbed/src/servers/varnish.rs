//! Varnish, a cache in front of the first origin: its VCL, its storage, and
//! `varnishncsa` beside it for the access log.

use super::{Front, Launch};
use std::net::SocketAddr;

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

/// Worker threads each of varnish's 2 pools keeps from the start (its default is 100).
const THREADS_PER_POOL: usize = 300;

/// Varnish as a cache in front of `f.origins[0]`, in the foreground: `varnishd -F -j none
/// -n DIR -a http=LISTEN [-a tls=PROXY,PROXY] -f DIR/default.vcl -T ADMIN -S DIR/secret -s
/// malloc,SIZE -t 0 -p thread_pool_min=300` (SIZE `f.memory`, default 64 MB).
///
/// Responses are cached as the origin's `Cache-Control` (or `Expires`) says, and only then:
/// `-t 0` turns off the 120 s default lifetime for responses that say nothing. Otherwise
/// the built-in VCL applies (GET and HEAD only; requests with `Cookie` or `Authorization`
/// and responses with `Set-Cookie` are not cached). `X-Cache-Status` is `HIT`, `MISS`,
/// `PASS` (not cacheable) or `STALE` (served in grace while being refreshed). Varnish also
/// adds its usual `Via`, `X-Varnish` and `Age` headers.
///
/// Varnish has no TLS of its own: `f.tls` is ignored, and with `v.proxy` hitch ([`hitch`](fn@super::hitch))
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
        // A worker thread for every connection of the load from the start. Varnish starts
        // 2 pools of 100 and adds threads slowly while sessions queue: measured on one
        // core, a search found 38,000 req/s before the pools had grown past barrage's
        // default 256 connections and 50,000 after, so two searches disagreed by a third.
        "-p".into(),
        format!("thread_pool_min={THREADS_PER_POOL}"),
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    fn varnish_ports(proxy: Option<&str>) -> VarnishPorts<'static> {
        VarnishPorts {
            admin: "127.0.0.1:8082".parse().unwrap(),
            secret: "s3cret",
            proxy: proxy.map(|p| p.parse().unwrap()),
        }
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
                "0",
                "-p",
                "thread_pool_min=300"
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
}
