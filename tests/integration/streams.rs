//! HTTP/2 multiplexing (`--streams`): what barrage counts against what the origin and a
//! known delay say, in closed and open loop, with stream resets, flow-control stalls, and
//! the same run through a sweep.

use crate::util::{barrage, errors_of, origin, plan, run};
use barrage_engine::{Load, Pacer, Plan};
use barrage_metrics::RunSummary;
use barrage_server::{LatencyDist, RunningServer, ServeConfig};
use barrage_study::{Job, Level, Quiet, Runner, Sweep};
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
    p.http2 = true;
    p.streams = streams;
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
    // No send phase on a shared connection, never a 0 recorded in its place.
    assert_eq!(s.phases["send"].count, 0);
    let wait = &s.phases["wait"];
    assert_eq!(wait.count, s.requests.total);
    // Each stream waits the delay (the origin's timer wakes up to a few ms late on a busy
    // machine), not the delay times the streams ahead of it.
    let delay = DELAY.as_micros() as u64;
    assert!((delay..delay + 20_000).contains(&wait.p50_us), "wait p50 {} µs", wait.p50_us);
    let h2 = s.http2.as_ref().expect("HTTP/2 figures");
    assert_eq!((h2.stream_cap, h2.http1_fallbacks, h2.send_stalls), (None, 0, 0));
    assert_eq!((s.requests.stream_retries, s.requests.stale_retries), (0, 0));
    assert!(!s.warnings.iter().any(|w| w.contains("HTTP/2") || w.contains("stream")), "{:?}", s.warnings);
}

/// `-c 2 --streams 10` against a 50 ms origin: 20 requests in flight on exactly 2
/// connections (one per thread: a connection is never split between threads), 10 at once
/// on each, so 2 × 10 / 50 ms = 400 requests a second.
#[test]
fn closed_loop_streams_share_each_connection_ten_at_once() {
    let o = delayed();
    let mut p = h2_plan(&o.url(), crate::util::closed(2), 10, 2);
    p.requests = Some(800);
    let s = run(p);
    assert_eq!(s.requests.total, 800);
    check_multiplexed(&s, &o, 2);
    assert_eq!(s.http2.as_ref().unwrap().streams_max, 10, "requests in flight on one connection");
    // 2 s at the ideal rate; a busy machine's late timers and the last responses' wait cost
    // up to a fifth of it. One request at a time per connection would give 40 a second.
    let ideal = 2.0 * 10.0 / DELAY.as_secs_f64();
    let got = s.throughput_per_sec.unwrap();
    assert!((0.8 * ideal..=1.02 * ideal).contains(&got), "{got:.0}/s, ideal {ideal:.0}/s");
}

/// Open loop at 300 a second against the 50 ms origin: 15 in flight need both connections
/// of `--connections 2 --streams 10` (20 slots), and no more; the schedule is kept.
#[test]
fn open_loop_streams_keep_the_rate_on_the_connections_asked() {
    let o = delayed();
    let load = Load::Open { pacer: Pacer::Constant { rate: 300.0 }, max_in_flight: 20 };
    let mut p = h2_plan(&o.url(), load, 10, 1);
    p.requests = Some(600);
    let s = run(p);
    assert_eq!(s.requests.total, 600);
    check_multiplexed(&s, &o, 2);
    assert_eq!(s.requests.late, 0, "20 slots for 15 in flight");
    let rate = s.rate_per_sec.unwrap();
    assert!((rate - 300.0).abs() < 3.0, "offered {rate:.1}/s");
    let most = s.http2.as_ref().unwrap().streams_max;
    assert!((8..=10).contains(&most), "streams in use: {most}");
}

/// A stream the server resets is classified by its reason code: CANCEL as `reset`,
/// PROTOCOL_ERROR as `protocol`, each example naming the code; a refused stream was not
/// processed, so it goes once more on a new connection, counted: the origin saw each twice.
#[test]
fn reset_streams_are_classified_and_refused_ones_retried_once() {
    let o = origin(ServeConfig::default());
    for (reason, kind) in [("cancel", "reset"), ("protocol_error", "protocol")] {
        let mut p = h2_plan(&format!("{}/reset/{reason}", o.url()), crate::util::closed(1), 4, 1);
        p.requests = Some(12);
        let s = run(p);
        assert_eq!(errors_of(&s, kind), 12, "{reason}: {:?}", s.errors);
        let example = &s.errors.iter().find(|e| e.kind == kind).unwrap().example;
        assert!(example.contains(&reason.to_uppercase()), "{example}");
        assert_eq!(s.requests.stream_retries, 0);
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
    let stalls = s.http2.as_ref().unwrap().send_stalls;
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
        base: Job::new(base),
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
        assert_eq!(s.http2.as_ref().unwrap().streams_max, 10);
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
    assert_eq!(v["http2"]["streams_max"], 10);
    let text = barrage().args(["run", &o.url(), "-c", "2", "--streams", "10", "-n", "100"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("closed loop, 2 connections × 10 streams"), "{text}");
    for (args, why) in [
        (vec!["--streams", "0"], "--streams"),
        (vec!["--streams", "1025"], "--streams"),
        (vec!["--streams", "4", "--no-keepalive"], "--no-keepalive opens one per request"),
        (vec!["--streams", "4", "--rate", "10", "--max-in-flight", "10"], "give a multiple of 4 such as 8"),
    ] {
        let out = barrage().arg("run").arg(o.url()).args(&args).args(["-n", "1"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why) && err.lines().count() == 1, "{args:?}: {err}");
    }
}
