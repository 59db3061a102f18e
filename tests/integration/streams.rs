//! HTTP/2 multiplexing (`--streams`): what barrage counts against what the origin and a
//! known delay say, in closed and open loop, with stream resets, flow-control stalls, and
//! the same run through a sweep.

use crate::util::{barrage, errors_of, origin, plan, run};
use barrage_engine::{Load, Pacer, Plan};
use barrage_metrics::summary::WarningKind;
use barrage_metrics::RunSummary;
use barrage_plan::Protocol;
use barrage_server::{LatencyDist, RunningServer, ServeConfig};
use barrage_study::{Level, Quiet, RunOrder, Runner, Sweep};
use serde_json::Value;
use std::time::Duration;

/// The origin's fixed delay: long enough that 10 streams of 2 connections are what limits
/// the throughput, short enough for a test.
const DELAY: Duration = Duration::from_millis(50);

fn delayed() -> RunningServer {
    origin(ServeConfig { latency: Some(LatencyDist::Fixed(DELAY)), ..Default::default() })
}

/// An HTTP/2 plan of `load` with `streams` to a connection, on `threads` threads.
fn h2_plan(url: &str, load: Load, streams: u32, threads: usize) -> Plan {
    let mut p = plan(url, load);
    p.protocol = Protocol::http2(streams);
    p.threads = threads;
    p
}

/// What every multiplexed run against the delayed origin must show: every request the
/// origin counted is one barrage counted, each connection opened once (its connect phase
/// once), all of them HTTP/2, each stream waiting the delay.
fn check_multiplexed(s: &RunSummary, origin: &RunningServer, connections: u64) {
    assert_eq!(s.requests.ok, s.requests.total, "{:?}", s.errors);
    assert_eq!(origin.requests(), s.requests.total, "the origin's own count");
    assert_eq!(s.requests.connections, connections);
    assert_eq!(s.requests.protocols, [("HTTP/2".to_string(), connections)].into());
    assert_eq!(s.phases["connect"].count, connections, "connect once per connection");
    // Send runs to the write of the request's frames, closed loop's wait for its round
    // included (5 ms at most).
    let send = &s.phases["send"];
    assert_eq!(send.count, s.requests.total, "each request's send phase");
    assert!(send.p99_us <= 7_000 + 20_000, "send p99 {} µs", send.p99_us);
    let wait = &s.phases["wait"];
    assert_eq!(wait.count, s.requests.total);
    // Each stream waits the delay (the origin's timer wakes up to a few ms late on a busy
    // machine), not the delay times the streams ahead of it.
    let delay = DELAY.as_micros() as u64;
    assert!((delay..delay + 20_000).contains(&wait.p50_us), "wait p50 {} µs", wait.p50_us);
    let h2 = s.streams.as_ref().expect("HTTP/2 figures");
    assert_eq!((h2.stream_cap, h2.http1_fallbacks, h2.send_stalls), (None, 0, 0));
    assert_eq!((s.requests.stream_retries, s.requests.stale_retries), (0, 0));
    assert!(
        !s.warnings.iter().any(|w| matches!(w.kind, WarningKind::StreamCap | WarningKind::Http1Fallback)),
        "{:?}",
        s.warnings
    );
}

/// `-c 2 --streams 10` against a 50 ms origin: 20 requests in flight on exactly 2
/// connections (one per thread: a connection is never split between threads), 10 at once
/// on each, so 2 × 10 / 50 ms = 400 requests a second.
#[test]
fn closed_loop_streams_share_each_connection_ten_at_once() {
    // With --rounds too: the streams answered together go out again together, so the
    // figures are the same.
    for rounds in [false, true] {
        let o = delayed();
        let mut p = h2_plan(&o.url(), crate::util::closed(2), 10, 2);
        p.requests = Some(800);
        p.protocol = Protocol::Http2 { streams: barrage_plan::Streams::Kept(10), rounds };
        let s = run(p);
        assert_eq!(s.requests.total, 800);
        check_multiplexed(&s, &o, 2);
        assert_eq!(s.streams.as_ref().unwrap().streams_max, 10, "requests in flight on one connection");
        // 2 s at the ideal rate; a busy machine's late timers and the last responses' wait
        // cost up to a fifth of it. One request at a time per connection would give 40 a
        // second.
        let ideal = 2.0 * 10.0 / DELAY.as_secs_f64();
        let got = s.throughput_per_sec.unwrap();
        assert!((0.8 * ideal..=1.02 * ideal).contains(&got), "rounds {rounds}: {got:.0}/s, ideal {ideal:.0}/s");
    }
}

/// Open loop at 300 a second against the 50 ms origin: 15 in flight need both connections
/// of `--connections 2 --streams 10` (20 slots), and there are no more; the schedule is
/// kept (a busy machine's slow timer may make a few requests late, counted).
#[test]
fn open_loop_streams_keep_the_rate_on_the_connections_asked() {
    let o = delayed();
    let load = Load::Open { pacer: Pacer::Constant { rate: 300.0 }, max_in_flight: 20 };
    let mut p = h2_plan(&o.url(), load, 10, 1);
    p.requests = Some(600);
    let s = run(p);
    assert_eq!(s.requests.total, 600);
    check_multiplexed(&s, &o, 2);
    assert!(s.requests.late <= 30, "20 slots for 15 in flight: {} late", s.requests.late);
    let rate = s.rate_per_sec.unwrap();
    assert!((rate - 300.0).abs() < 3.0, "offered {rate:.1}/s");
    let most = s.streams.as_ref().unwrap().streams_max;
    assert!((8..=10).contains(&most), "streams in use: {most}");
    // The open loop sends each request when due, never waiting for a round (5 ms, which
    // most would: several of a connection's streams are always out on the 50 ms origin).
    let send = &s.phases["send"];
    assert!(send.p50_us < 2_500, "send p50 {} µs: the open loop waited for rounds", send.p50_us);
}

/// A stream the server resets is classified by its reason code: CANCEL as `reset`,
/// PROTOCOL_ERROR as `protocol`, each example naming the code, each request sent once (a
/// reset stream is not a stale connection) on the one connection (a reset leaves it up),
/// with a stream each or four; a refused stream was not processed, so it goes once more on
/// a new connection, counted: the origin saw each twice.
#[test]
fn reset_streams_are_classified_and_refused_ones_retried_once() {
    let o = origin(ServeConfig::default());
    for (reason, kind, streams) in [("cancel", "reset", 4), ("protocol_error", "protocol", 4), ("cancel", "reset", 1)] {
        let before = o.requests();
        let mut p = h2_plan(&format!("{}/reset/{reason}", o.url()), crate::util::closed(1), streams, 1);
        p.requests = Some(12);
        let s = run(p);
        assert_eq!(errors_of(&s, kind), 12, "{reason}: {:?}", s.errors);
        let example = &s.errors.iter().find(|e| e.kind == kind).unwrap().example;
        assert!(example.contains(&reason.to_uppercase()), "{example}");
        assert_eq!((s.requests.stream_retries, s.requests.stale_retries), (0, 0));
        assert_eq!((o.requests() - before, s.requests.connections), (12, 1), "{reason} × {streams}");
    }
    let before = o.requests();
    let mut p = h2_plan(&format!("{}/reset/refused_stream", o.url()), crate::util::closed(1), 4, 1);
    p.requests = Some(12);
    let s = run(p);
    assert_eq!(errors_of(&s, "reset"), 12, "{:?}", s.errors);
    assert!(s.errors[0].example.contains("REFUSED_STREAM"), "{}", s.errors[0].example);
    assert_eq!(s.requests.stream_retries, 12);
    assert_eq!(o.requests() - before, 24, "each refused request went once more");
}

/// A request body larger than the server's window waits for its WINDOW_UPDATE: a send
/// stall, counted; the bytes sent are at least the bodies.
#[test]
fn bodies_beyond_the_servers_window_count_send_stalls() {
    let o = origin(ServeConfig::default());
    let mut p = h2_plan(&format!("{}/upload", o.url()), crate::util::closed(1), 4, 1);
    let size = 2 << 20;
    for t in &mut p.targets {
        t.method = http::Method::PUT;
        t.body = bytes::Bytes::from(vec![7u8; size]);
    }
    p.requests = Some(8);
    let s = run(p);
    assert_eq!(s.requests.ok, 8, "{:?}", s.errors);
    assert_eq!(o.requests(), 8);
    // hyper's server grants 1 MiB a stream: each 2 MiB body waits at least once.
    let stalls = s.streams.as_ref().unwrap().send_stalls;
    assert!(stalls >= 8, "send stalls: {stalls}");
    assert!(s.bytes.out_total >= 8 * size as u64, "{}", s.bytes.out_total);
}

/// HTTP/2 over TLS by ALPN, multiplexed: the TLS handshake once per connection.
#[test]
fn streams_over_tls_handshake_once_per_connection() {
    let o = origin(ServeConfig {
        tls: true,
        latency: Some(LatencyDist::Fixed(Duration::from_millis(5))),
        ..Default::default()
    });
    let mut p = h2_plan(&format!("{}/bytes/2k", o.url()), crate::util::closed(3), 8, 1);
    p.tls.cacert = o.ca_path().map(Into::into);
    p.requests = Some(240);
    let s = run(p);
    assert_eq!((s.requests.ok, o.requests()), (240, 240), "{:?}", s.errors);
    assert_eq!(s.phases["tls"].count, 3);
    assert_eq!(s.requests.protocols, [("HTTP/2".to_string(), 3)].into());
    // Every response's body, and its headers and frames, counted once in all.
    assert!(s.bytes.in_total >= 240 * 2048, "{}", s.bytes.in_total);
    assert!(s.bytes.in_total < 240 * 2400, "{}", s.bytes.in_total);
}

/// The same `-c 2 --streams 10` run as a sweep's level gives the run's figures: the
/// same connections, streams in use and throughput, and the origin counts both.
#[test]
fn a_sweep_level_with_streams_gives_the_runs_figures() {
    let o = delayed();
    let mut base = h2_plan(&o.url(), crate::util::closed(1), 10, 1);
    base.duration = Some(Duration::from_secs(2));
    let single = run(base.clone());
    let sweep = Sweep {
        base: RunOrder::new(base),
        levels: vec![Level::Workers(2)],
        step: Duration::from_secs(2),
        phases: Vec::new(),
        dir: None,
        slos: Vec::new(),
    };
    let mut p = h2_plan(&o.url(), crate::util::closed(2), 10, 1);
    p.duration = Some(Duration::from_secs(2));
    let alone = run(p);
    let before = o.requests();
    let table = sweep.run(&mut Runner::new("sweep", Default::default(), &mut Quiet)).unwrap();
    let level = &table.rows[0].runs[0];
    assert_eq!(o.requests() - before, level.requests.total);
    for s in [&alone, level] {
        assert_eq!(s.requests.connections, 2);
        assert_eq!(s.streams.as_ref().unwrap().streams_max, 10);
    }
    let ratio = level.throughput_per_sec.unwrap() / alone.throughput_per_sec.unwrap();
    assert!((0.9..1.1).contains(&ratio), "sweep ÷ run throughput: {ratio}");
    // And a level is really 2 connections' worth: twice the one-connection run.
    let twice = level.throughput_per_sec.unwrap() / single.throughput_per_sec.unwrap();
    assert!((1.7..2.3).contains(&twice), "{twice}");
}

/// The command line: `-c 2 --streams 10` is 2 connections of 10 streams, in the header
/// and the figures; bad combinations are refused with what to give instead.
#[test]
fn the_streams_flag_counts_connections_and_refuses_what_cannot_be() {
    let o = delayed();
    let out = barrage()
        .args(["run", &o.url(), "-c", "2", "--streams", "10", "-n", "200", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"]["connections"], 2);
    assert_eq!(v["requests"]["protocols"]["HTTP/2"], 2);
    assert_eq!(v["streams"]["streams_max"], 10);
    let text = barrage().args(["run", &o.url(), "-c", "2", "--streams", "10", "-n", "100"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("closed loop, 2 connections × 10 streams"), "{text}");
    for (args, why) in [
        (vec!["--streams", "0"], "--streams"),
        (vec!["--streams", "1025"], "--streams"),
        (vec!["--streams", "4", "--no-keepalive"], "--no-keepalive opens one per request"),
        (vec!["--streams", "4", "--rate", "10", "--max-in-flight", "10"], "give a multiple of 4 such as 8"),
        (vec!["--streams", "4", "--rounds", "--rate", "10"], "an open loop's requests go when they are due"),
        (vec!["--streams", "4", "--rounds", "--think-time", "10ms"], "--rounds with --think-time"),
        (vec!["--streams", "1", "--rounds"], "it needs --streams 2 or more"),
        (vec!["--rounds"], "--streams"),
    ] {
        let out = barrage().arg("run").arg(o.url()).args(&args).args(["-n", "1"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why) && err.lines().count() == 1, "{args:?}: {err}");
    }
}

/// A private nginx (Debian's 1.22): HTTP/2 by prior knowledge on `h2c`, by ALPN on `tls`,
/// and HTTP/1.1 alone on `h1_tls` (ALPN offers no h2 there), each request in its access
/// log; stopped when dropped. `http` adds directives to its `http` block and `location`
/// is what `/` does.
struct Nginx {
    dir: tempfile::TempDir,
    child: std::process::Child,
    h2c: std::net::SocketAddr,
    tls: std::net::SocketAddr,
    h1_tls: std::net::SocketAddr,
}

impl Nginx {
    /// `None` (the test is skipped, or fails under BARRAGE_REQUIRE_EXTERNAL=1) without nginx.
    fn start(http: &str, location: &str) -> Option<Nginx> {
        let program = barrage_testbed::program_path("nginx");
        if !crate::util::require("nginx", program.is_some()) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let pki = barrage_server::generate_pki("127.0.0.1".parse().unwrap()).unwrap();
        std::fs::write(dir.path().join("chain.pem"), &pki.chain_pem).unwrap();
        std::fs::write(dir.path().join("key.pem"), &pki.key_pem).unwrap();
        std::fs::write(dir.path().join("ca.pem"), &pki.ca_pem).unwrap();
        let port = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let (h2c, tls, h1_tls) = (port(), port(), port());
        let d = dir.path().display();
        // Workers stay root when nginx starts as root, to write into the private directory.
        // SAFETY: geteuid has no preconditions.
        let user = if unsafe { libc::geteuid() } == 0 { "user root;" } else { "" };
        let conf = format!(
            "{user}
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    ssl_certificate {d}/chain.pem;
    ssl_certificate_key {d}/key.pem;
    {http}
    server {{
        listen {h2c} http2;
        listen {tls} ssl http2;
        location / {{ {location} }}
    }}
    server {{
        listen {h1_tls} ssl;
        location / {{ return 200 \"ok\\n\"; }}
    }}
}}
"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let mut child = std::process::Command::new(program.unwrap())
            .args(["-e", "stderr", "-p"])
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .args(["-g", "daemon off;"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Polls for the listeners, bounded; a start that fails says why.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while [h2c, tls, h1_tls].iter().any(|a| std::net::TcpStream::connect(a).is_err()) {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default();
                panic!("nginx exited ({status}): {log}");
            }
            assert!(std::time::Instant::now() < deadline, "nginx did not listen within 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(Nginx { dir, child, h2c, tls, h1_tls })
    }

    fn ca(&self) -> std::path::PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Requests nginx has logged, once it has logged at least `want` (bounded wait: it logs
    /// a request just after answering it).
    fn logged(&self, want: u64) -> u64 {
        let count =
            || std::fs::read_to_string(self.dir.path().join("access.log")).map_or(0, |l| l.lines().count() as u64);
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while count() < want && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        count()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: nginx's fast shutdown, workers included.
        // SAFETY: kill takes a PID and a signal number; the PID is our own child's, not yet
        // waited for, so it is still ours.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// `barrage ARGS --format json` as JSON, with its exit code.
fn json_run(args: &[&str]) -> (Option<i32>, Value) {
    let out = barrage().args(args).args(["--format", "json"]).output().unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

/// nginx allowing 5 streams a connection (`http2_max_concurrent_streams 5`) in front of
/// the 50 ms origin: of `--streams 10`, 5 are in use and 5 wait, so one connection serves
/// 100 a second, not 200; the report says the server capped the streams, and nginx and the
/// origin counted what barrage did. No stream is refused: the first request goes alone
/// until nginx's SETTINGS say how many it takes.
#[test]
fn nginx_caps_the_streams_and_the_report_says_so() {
    let o = delayed();
    let proxy = format!("proxy_pass http://{};", o.addr());
    let Some(nginx) = Nginx::start("http2_max_concurrent_streams 5;", &proxy) else { return };
    let url = format!("http://{}/", nginx.h2c);
    let (code, v) = json_run(&["run", &url, "-c", "1", "--streams", "10", "-n", "300"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["requests"]["ok"], 300, "{}", v["errors"]);
    assert_eq!((o.requests(), nginx.logged(300)), (300, 300));
    assert_eq!((v["streams"]["streams_max"].as_u64(), v["streams"]["stream_cap"].as_u64()), (Some(5), Some(5)));
    assert_eq!(v["requests"]["stream_retries"], 0);
    let warnings = v["warnings"].as_array().unwrap();
    let cap = |w: &&serde_json::Value| {
        w["kind"] == "stream_cap" && w["text"].as_str().unwrap().contains("allows 5 concurrent stream(s)")
    };
    assert!(warnings.iter().any(|w| cap(&w)), "{warnings:?}");
    let rate = v["throughput_per_sec"].as_f64().unwrap();
    let capped = 5.0 / DELAY.as_secs_f64();
    assert!((0.75 * capped..=1.05 * capped).contains(&rate), "{rate:.0}/s against a cap of {capped:.0}/s");
}

/// nginx ends a connection after 50 requests (`keepalive_requests 50`): GOAWAY, whose last
/// stream id leaves the streams sent after it unprocessed. Those go once more on a new
/// connection, counted; nothing fails, and nginx logged each request exactly once.
#[test]
fn nginx_goaway_sends_the_unprocessed_streams_again() {
    let Some(nginx) = Nginx::start("keepalive_requests 50;", "return 200 \"ok\\n\";") else { return };
    let url = format!("http://{}/", nginx.h2c);
    let (code, v) = json_run(&["run", &url, "-c", "1", "--streams", "20", "-n", "2000"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["requests"]["total"], 2000);
    assert_eq!(v["requests"]["ok"], 2000, "{}", v["errors"]);
    assert_eq!(nginx.logged(2000), 2000, "each request processed once");
    let connections = v["requests"]["connections"].as_u64().unwrap();
    assert!(connections >= 40, "50 requests a connection: {connections}");
    let retries = v["requests"]["stream_retries"].as_u64().unwrap();
    assert!(retries > 0, "streams sent after a GOAWAY: {v}");
}

/// HTTP/2 asked of a server that offers only HTTP/1.1 by ALPN: the requests go one at a
/// time, and every output says the server chose HTTP/1.1; with --streams they fail as
/// `protocol`, saying why. HTTP/2 by ALPN on nginx's h2 port carries the streams.
#[test]
fn nginx_choosing_http1_is_said_in_every_report() {
    let Some(nginx) = Nginx::start("", "return 200 \"ok\\n\";") else { return };
    let ca = nginx.ca().display().to_string();
    let h1 = format!("https://127.0.0.1:{}/", nginx.h1_tls.port());
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let csv = dir.path().join("csv");
    let out = barrage()
        .args(["run", &h1, "--http2", "--cacert", &ca, "-c", "2", "-n", "40", "--html"])
        .arg(&html)
        .arg("--csv-dir")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = "the server chose HTTP/1.1 (ALPN) on 2 of 2 connection(s)";
    assert!(String::from_utf8_lossy(&out.stdout).contains(said), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(std::fs::read_to_string(&html).unwrap().contains(said));
    assert!(std::fs::read_to_string(csv.join("summary.csv")).unwrap().contains(said));
    let (_, v) = json_run(&["run", &h1, "--http2", "--cacert", &ca, "-c", "2", "-n", "40"]);
    assert_eq!(v["requests"]["ok"], 40);
    assert_eq!(v["requests"]["protocols"]["HTTP/1.1"], 2);
    assert_eq!(v["streams"]["http1_fallbacks"], 2);
    let fallback = |w: &serde_json::Value| w["kind"] == "http1_fallback" && w["text"].as_str().unwrap().contains(said);
    assert!(v["warnings"].as_array().unwrap().iter().any(fallback), "{v}");
    let (code, v) = json_run(&["run", &h1, "--streams", "4", "--cacert", &ca, "-c", "1", "-n", "8"]);
    assert_eq!(code, Some(3), "built on failure: {v}");
    assert_eq!(v["errors"][0]["kind"], "protocol");
    assert!(v["errors"][0]["example"].as_str().unwrap().contains("did not agree to HTTP/2"), "{v}");
    let h2 = format!("https://127.0.0.1:{}/", nginx.tls.port());
    let (code, v) = json_run(&["run", &h2, "--streams", "10", "--cacert", &ca, "-c", "2", "-n", "400"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["requests"]["protocols"]["HTTP/2"], 2);
    assert_eq!(v["phases"]["tls"]["count"], 2);
    assert_eq!(nginx.logged(400 + 80), 400 + 80);
}

/// Two runs merged (`barrage report a.brg b.brg`): connections and their protocols add up,
/// the streams in use are the most of either, as in each run's own file.
#[test]
fn merged_runs_add_connections_and_keep_the_most_streams() {
    // The delay keeps every stream of a connection open at once.
    let o = delayed();
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = [(2, 4), (1, 8)]
        .into_iter()
        .map(|(c, streams)| {
            let mut p = h2_plan(&o.url(), crate::util::closed(c), streams, 1);
            p.requests = Some(100);
            let (file, s) = crate::util::run_in(dir.path(), &format!("s{streams}"), p);
            assert_eq!(s.streams.as_ref().unwrap().streams_max, streams as u64);
            file
        })
        .collect();
    let merged = barrage_metrics::summary::summarize(&files).unwrap();
    assert_eq!(merged.requests.total, 200);
    assert_eq!(merged.requests.connections, 3);
    assert_eq!(merged.requests.protocols, [("HTTP/2".to_string(), 3)].into());
    assert_eq!(merged.streams.as_ref().unwrap().streams_max, 8);
    assert_eq!(o.requests(), 200);
}

/// The live views of a multiplexed run: `--metrics-addr` serves the streams in use and the
/// connections by protocol while it goes, and they are the figures the run ends with
/// (`-c 2 --streams 5` against the 50 ms origin: 2 HTTP/2 connections, 5 streams at once
/// on each from the first second).
#[test]
fn the_metrics_endpoint_shows_the_streams_while_the_run_goes() {
    let o = delayed();
    let url = o.url();
    let args = ["run", url.as_str(), "-c", "2", "--streams", "5", "--threads", "1", "-d", "3s"];
    let (mut child, addr) = crate::live::with_metrics(&args);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let metric = |body: &str, name: &str| -> Option<f64> {
        let line = body.lines().find(|l| l.starts_with(name))?;
        line.rsplit(' ').next()?.parse().ok()
    };
    // Until the first closed interval has counted streams (bounded).
    let body = loop {
        let (status, body) = crate::live::scrape(&addr);
        assert!(status.contains("200"), "{status}");
        if metric(&body, "barrage_streams_open_max ").is_some_and(|n| n > 0.0) {
            break body;
        }
        assert!(std::time::Instant::now() < deadline, "no streams shown: {body}");
        std::thread::yield_now();
    };
    assert!(child.wait().unwrap().success());
    assert_eq!(metric(&body, "barrage_streams_open_max "), Some(5.0), "{body}");
    assert_eq!(metric(&body, "barrage_http_connections_total{protocol=\"HTTP/2\"}"), Some(2.0), "{body}");
    assert_eq!(metric(&body, "barrage_http_connections_total{protocol=\"HTTP/1.1\"}"), Some(0.0), "{body}");
    assert_eq!(metric(&body, "barrage_stream_limit "), Some(0.0), "the origin allows more: {body}");
    assert_eq!(metric(&body, "barrage_stream_retries_total "), Some(0.0), "{body}");
}
