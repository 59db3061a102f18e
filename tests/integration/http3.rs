//! HTTP/3 against the origin's own HTTP/3 listener: counts against the origin's, phases
//! against a known delay, handshakes against the origin's count (none resumed, so no
//! 0-RTT), and what fails (a certificate, nothing listening, a silent port, a closed
//! connection) classified within its bound.

use crate::util::{closed, errors_of, origin, plan, run};
use barrage_metrics::summary::RunSummary;
use barrage_metrics::summary::WarningKind;
use barrage_plan::{Protocol, Streams};
use barrage_server::{Handshakes, LatencyDist, RunningServer, ServeConfig};
use std::time::{Duration, Instant};

/// The origin with TLS and HTTP/3 (and `config`'s other settings).
fn h3_origin(config: ServeConfig) -> RunningServer {
    origin(ServeConfig { tls: true, http3: true, ..config })
}

/// A `--http3` plan for `path` of `o`, trusting its CA, with `n` requests.
fn h3_plan(o: &RunningServer, path: &str, workers: usize, n: u64) -> barrage_engine::Plan {
    let mut p = plan(&format!("{}{path}", o.url()), closed(workers));
    p.protocol = Protocol::http3(1);
    p.requests = Some(n);
    p.tls.cacert = o.ca_path().map(Into::into);
    p
}

fn phase(s: &RunSummary, name: &str) -> barrage_metrics::summary::PhaseStats {
    s.phases.get(name).cloned().unwrap_or_default()
}

#[test]
fn http3_counts_what_the_origin_counts_and_connects_once_per_connection() {
    let delay = Duration::from_millis(100);
    let o = h3_origin(ServeConfig { latency: Some(LatencyDist::Fixed(delay)), ..Default::default() });
    let s = run(h3_plan(&o, "/bytes/1k", 2, 40));
    assert_eq!((s.requests.ok, s.requests.total), (40, 40), "{:?}", s.errors);
    assert_eq!(o.requests(), 40, "the origin served exactly what barrage counted");
    // Two workers, two kept-alive connections: one QUIC handshake each, timed once each,
    // and the origin completed exactly those, none of them resumed.
    assert_eq!(s.requests.connections, 2);
    assert_eq!(phase(&s, "connect").count, 2);
    assert_eq!(o.handshakes(), Some(Handshakes { tls: 0, quic: 2, resumed: 0 }));
    // The origin's delay is in wait, every time, and never in connect.
    let (wait, connect) = (phase(&s, "wait"), phase(&s, "connect"));
    assert_eq!(wait.count, 40);
    assert!(wait.p50_us >= delay.as_micros() as u64, "wait p50 {} µs", wait.p50_us);
    assert!(connect.p99_us < delay.as_micros() as u64, "connect p99 {} µs holds no delay", connect.p99_us);
    // Over QUIC TLS is inside connect, and when a request left is not known: neither phase
    // is recorded rather than a made-up split.
    assert_eq!((phase(&s, "tls").count, phase(&s, "send").count), (0, 0));
    assert_eq!(phase(&s, "receive").count, 40);
    // HTTP/3 bytes: each response's 1 KiB body, its DATA frame header and its QPACK-encoded
    // head (a few dozen bytes here); each request's HEADERS frame alone.
    assert!((1030.0..1200.0).contains(&s.bytes.in_mean), "in {}", s.bytes.in_mean);
    assert!((10.0..200.0).contains(&s.bytes.out_mean), "out {}", s.bytes.out_mean);
}

#[test]
fn the_report_says_why_tls_and_send_are_not_measured_over_http3() {
    let o = h3_origin(ServeConfig::default());
    let ca = o.ca_path().unwrap().to_str().unwrap().to_string();
    let out = crate::util::barrage()
        .args(["run", "--http3", "--cacert", &ca, "-n", "10", "-c", "1", &o.url()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}{text}", String::from_utf8_lossy(&out.stderr));
    let line = |phase: &str| text.lines().find(|l| l.trim_start().starts_with(phase)).unwrap_or("").to_string();
    assert!(
        line("tls").ends_with("not measured: part of connect over HTTP/3 (the QUIC handshake carries TLS)"),
        "{text}"
    );
    assert!(line("send").contains("HTTP/3 does not tell when a request left"), "{text}");
    assert!(line("connect").trim_start().starts_with("connect      1 "), "{text}");
    assert!(line("HTTP/3 connections").trim_end().ends_with(" 1"), "the protocol is said: {text}");
    assert_eq!(o.requests(), 10);
}

#[test]
fn every_new_connection_pays_a_full_handshake_so_no_0rtt() {
    let o = h3_origin(ServeConfig::default());
    let mut p = h3_plan(&o, "/", 1, 5);
    p.protocol = Protocol::Http3 { streams: Streams::PerRequest };
    let s = run(p);
    assert_eq!(s.requests.ok, 5, "{:?}", s.errors);
    assert_eq!((s.requests.connections, phase(&s, "connect").count), (5, 5));
    // The origin keeps sessions and would take 0-RTT (crates/server's tests show a client
    // that does): barrage presented no ticket on any of its five connections.
    assert_eq!(o.handshakes(), Some(Handshakes { tls: 0, quic: 5, resumed: 0 }));
    assert_eq!(o.requests(), 5);
}

#[test]
fn a_certificate_nobody_trusts_fails_as_tls_and_insecure_goes_through() {
    let o = h3_origin(ServeConfig::default());
    let mut p = h3_plan(&o, "/", 1, 3);
    p.tls.cacert = None;
    let s = run(p.clone());
    assert_eq!(errors_of(&s, "tls"), 3, "{:?}", s.errors);
    let example = &s.errors[0].example;
    assert!(example.contains("invalid peer certificate"), "{example}");
    assert_eq!(o.requests(), 0);
    p.tls.insecure = true;
    let s = run(p);
    assert_eq!(s.requests.ok, 3, "{:?}", s.errors);
    assert_eq!(o.requests(), 3);
}

#[test]
fn nothing_listening_on_the_udp_port_is_refused_at_once() {
    // A UDP port that was free a moment ago: the kernel answers for it (ICMP port
    // unreachable), which barrage reads as refused without waiting out the connect timeout.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut p = plan(&format!("https://127.0.0.1:{port}/"), closed(1));
    (p.protocol, p.requests, p.connect_timeout) = (Protocol::http3(1), Some(3), Duration::from_secs(5));
    let started = Instant::now();
    let s = run(p);
    assert_eq!(errors_of(&s, "refused"), 3, "{:?}", s.errors);
    assert!(s.errors[0].example.contains("ICMP port unreachable"), "{}", s.errors[0].example);
    assert!(started.elapsed() < Duration::from_secs(5), "no connect timeout waited: {:?}", started.elapsed());
}

#[test]
fn a_udp_port_that_never_answers_ends_at_the_connect_timeout() {
    // Bound, so no ICMP comes back, and never read: the QUIC handshake gets no answer.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut p = plan(&format!("https://{}/", silent.local_addr().unwrap()), closed(1));
    (p.protocol, p.requests, p.connect_timeout) = (Protocol::http3(1), Some(2), Duration::from_millis(300));
    let started = Instant::now();
    let s = run(p);
    assert_eq!(errors_of(&s, "connect_timeout"), 2, "{:?}", s.errors);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(600) && took < Duration::from_secs(4), "two timeouts: {took:?}");
}

#[test]
fn a_connection_the_origin_closes_under_a_request_is_reset_with_its_http3_code() {
    // The origin answers after 5 s; it shuts down (closing each connection with
    // H3_NO_ERROR after its grace) while both requests wait.
    let o = h3_origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_secs(5))), ..Default::default() });
    let p = h3_plan(&o, "/", 2, 2);
    let runner = std::thread::spawn(move || run(p));
    let deadline = Instant::now() + Duration::from_secs(5);
    while o.requests() < 2 {
        assert!(Instant::now() < deadline, "the requests reach the origin");
        // Polls the origin's count; synchronises on it, not on the pause.
        std::thread::sleep(Duration::from_millis(5));
    }
    let closed_at = Instant::now();
    o.shutdown();
    let s = runner.join().unwrap();
    assert_eq!(errors_of(&s, "reset"), 2, "{:?}", s.errors);
    let example = &s.errors[0].example;
    assert!(example.contains("H3_NO_ERROR"), "the code is named: {example}");
    assert!(closed_at.elapsed() < Duration::from_secs(3), "ended by the close, not the delay");
}

#[test]
fn request_bodies_go_up_whole_in_data_frames() {
    let o = h3_origin(ServeConfig::default());
    let body = bytes::Bytes::from(vec![b'q'; 300 * 1024]);
    let mut put = h3_plan(&o, "/kept", 1, 3);
    put.targets[0].method = http::Method::PUT;
    put.targets[0].body = body.clone();
    let s = run(put);
    assert_eq!(s.requests.ok, 3, "{:?}", s.errors);
    // Each request's stream carried the whole body, its DATA frame header and its head.
    assert!((body.len() as f64..body.len() as f64 + 200.0).contains(&s.bytes.out_mean), "{}", s.bytes.out_mean);
    let s = run(h3_plan(&o, "/kept", 1, 1));
    assert_eq!(s.requests.ok, 1, "{:?}", s.errors);
    assert!(
        (body.len() as f64..body.len() as f64 + 200.0).contains(&s.bytes.in_mean),
        "stored whole: {}",
        s.bytes.in_mean
    );
    assert_eq!(o.requests(), 4);
}

/// The origin's fixed delay for the multiplexed runs: long enough that the streams of two
/// connections are what limits the throughput, short enough for a test.
const DELAY: Duration = Duration::from_millis(50);

/// What every multiplexed HTTP/3 run against the delayed origin `o` must show: every
/// request the origin counted is one barrage counted, each connection opened once (one
/// QUIC handshake, by the origin's count, and one connect phase), all of them HTTP/3, each
/// stream waiting the delay, no server limit met.
fn check_multiplexed(s: &RunSummary, o: &RunningServer, connections: u64) {
    assert_eq!(s.requests.ok, s.requests.total, "{:?}", s.errors);
    assert_eq!(o.requests(), s.requests.total, "the origin's own count");
    assert_eq!(s.requests.connections, connections);
    assert_eq!(s.requests.protocols, [("HTTP/3".to_string(), connections)].into());
    assert_eq!(phase(s, "connect").count, connections, "connect once per connection");
    assert_eq!(o.handshakes(), Some(Handshakes { tls: 0, quic: connections, resumed: 0 }));
    let wait = phase(s, "wait");
    assert_eq!(wait.count, s.requests.total);
    // Each stream waits the delay (the origin's timer wakes up to a few ms late on a busy
    // machine), not the delay times the streams ahead of it.
    let delay = DELAY.as_micros() as u64;
    assert!((delay..delay + 20_000).contains(&wait.p50_us), "wait p50 {} µs", wait.p50_us);
    let streams = s.streams.as_ref().expect("the streams' figures");
    assert_eq!((streams.stream_cap, streams.http1_fallbacks, streams.send_stalls), (None, 0, 0));
    assert_eq!((s.requests.stream_retries, s.requests.stale_retries), (0, 0));
    assert!(
        !s.warnings.iter().any(|w| matches!(w.kind, WarningKind::StreamCap | WarningKind::Http1Fallback)),
        "{:?}",
        s.warnings
    );
}

/// `-c 2 --streams 10` over HTTP/3 against the origin's 50 ms: 20 requests in flight on
/// exactly 2 QUIC connections, 10 at once on each, so 2 × 10 / 50 ms = 400 requests a
/// second (one at a time per connection would give 40).
#[test]
fn closed_loop_streams_share_each_quic_connection_ten_at_once() {
    let o = h3_origin(ServeConfig { latency: Some(LatencyDist::Fixed(DELAY)), ..Default::default() });
    let mut p = h3_plan(&o, "/", 2, 800);
    (p.protocol, p.threads) = (Protocol::http3(10), 2);
    let s = run(p);
    assert_eq!(s.requests.total, 800);
    check_multiplexed(&s, &o, 2);
    assert_eq!(s.streams.as_ref().unwrap().streams_max, 10, "requests in flight on one connection");
    // Little's law: 20 in flight all along, each for its latency, whatever the machine
    // does to that latency (the last responses' drain costs about half of one).
    let got = s.throughput_per_sec.unwrap();
    let little = 20.0 / (s.latency.service.mean_us / 1e6);
    assert!((0.9 * little..=1.02 * little).contains(&got), "{got:.0}/s, 20 in flight for their latency {little:.0}/s");
    // And near the ideal 2 × 10 / 50 ms: each request crosses more tasks than over HTTP/2
    // (quinn's endpoint and connection tasks on both sides), each waiting for a CPU on a
    // busy machine, so up to two fifths below it; 10 or fewer in flight would be 200/s at
    // most, one at a time per connection 40/s.
    let ideal = 2.0 * 10.0 / DELAY.as_secs_f64();
    assert!((0.6 * ideal..=1.02 * ideal).contains(&got), "{got:.0}/s, ideal {ideal:.0}/s");
}

/// Open loop at 300 a second against the 50 ms origin: 15 in flight need both connections
/// of `--connections 2 --streams 10` (20 slots), and there are no more; the schedule is
/// kept (a busy machine's slow timer may make a few requests late, counted).
#[test]
fn open_loop_streams_keep_the_rate_on_the_quic_connections_asked() {
    let o = h3_origin(ServeConfig { latency: Some(LatencyDist::Fixed(DELAY)), ..Default::default() });
    let mut p = h3_plan(&o, "/", 1, 600);
    p.load = barrage_engine::Load::Open { pacer: barrage_engine::Pacer::Constant { rate: 300.0 }, max_in_flight: 20 };
    (p.protocol, p.threads) = (Protocol::http3(10), 1);
    let s = run(p);
    assert_eq!(s.requests.total, 600);
    check_multiplexed(&s, &o, 2);
    assert!(s.requests.late <= 30, "20 slots for 15 in flight: {} late", s.requests.late);
    let rate = s.rate_per_sec.unwrap();
    assert!((rate - 300.0).abs() < 3.0, "offered {rate:.1}/s");
    let most = s.streams.as_ref().unwrap().streams_max;
    assert!((8..=10).contains(&most), "streams in use: {most}");
}

/// An origin that takes 5 streams a connection (QUIC's initial_max_streams_bidi) and
/// `--streams 8`: the requests above 5 wait for a stream rather than fail or hang, 5 are
/// in use, so one connection serves at most 5 / 50 ms = 100 a second, not 160; the
/// report says the server capped the streams and what it allows, and the origin counted
/// what barrage did.
#[test]
fn a_server_allowing_fewer_streams_makes_the_rest_wait_and_is_said() {
    let o = h3_origin(ServeConfig { latency: Some(LatencyDist::Fixed(DELAY)), max_streams: 5, ..Default::default() });
    let mut p = h3_plan(&o, "/", 1, 100);
    p.protocol = Protocol::http3(8);
    let s = run(p);
    assert_eq!((s.requests.ok, o.requests()), (100, 100), "{:?}", s.errors);
    assert_eq!(s.requests.connections, 1);
    // The limit reached, not the 8 asked (a stream the origin has ended is free for the next
    // request a moment before barrage has read its end: on a busy machine one more may count
    // as in flight).
    let streams = s.streams.as_ref().unwrap();
    assert_eq!(streams.stream_cap, Some(5));
    assert!((5..8).contains(&streams.streams_max), "{streams:?}");
    let said = "the server allows 5 concurrent stream(s) per connection (QUIC's initial_max_streams_bidi)";
    assert!(s.warnings.iter().any(|w| w.kind == WarningKind::StreamCap && w.text.contains(said)), "{:?}", s.warnings);
    // A stream comes back to barrage once the server has freed it (after barrage's ACK of
    // its end), so a little under 100 a second; 8 streams would give 160.
    let got = s.throughput_per_sec.unwrap();
    assert!((50.0..=105.0).contains(&got), "{got:.0}/s for 5 streams of 50 ms");
    // The wait for a stream is in the latency, not in the wait phase.
    assert!(s.latency.corrected.p99_us > phase(&s, "wait").p99_us, "{:?}", s.latency);
}

/// A request the origin resets is classified by its HTTP/3 code: H3_REQUEST_CANCELLED as
/// `reset`, H3_GENERAL_PROTOCOL_ERROR as `protocol`, each sent once (a reset stream is no
/// stale connection), the connection kept for the next, with a stream each or four;
/// H3_REQUEST_REJECTED was not processed (RFC 9114 4.1.1), so it goes once more on a new
/// connection, counted: the origin saw each twice.
#[test]
fn reset_streams_are_classified_and_rejected_ones_retried_once() {
    let o = h3_origin(ServeConfig::default());
    let table = [
        ("cancel", "reset", "H3_REQUEST_CANCELLED", 4),
        ("protocol_error", "protocol", "H3_GENERAL_PROTOCOL_ERROR", 4),
        ("cancel", "reset", "H3_REQUEST_CANCELLED", 1),
    ];
    for (reason, kind, code, streams) in table {
        let before = o.requests();
        let mut p = h3_plan(&o, &format!("/reset/{reason}"), 1, 12);
        p.protocol = Protocol::http3(streams);
        let s = run(p);
        assert_eq!(errors_of(&s, kind), 12, "{reason}: {:?}", s.errors);
        assert!(s.errors[0].example.contains(code), "{}", s.errors[0].example);
        assert_eq!((s.requests.stream_retries, s.requests.stale_retries), (0, 0), "{reason}");
        assert_eq!((o.requests() - before, s.requests.connections), (12, 1), "{reason} × {streams}");
    }
    let before = o.requests();
    let mut p = h3_plan(&o, "/reset/refused_stream", 1, 12);
    p.protocol = Protocol::http3(4);
    let s = run(p);
    assert_eq!(errors_of(&s, "reset"), 12, "{:?}", s.errors);
    assert!(s.errors[0].example.contains("H3_REQUEST_REJECTED"), "{}", s.errors[0].example);
    assert_eq!(s.requests.stream_retries, 12);
    assert_eq!(o.requests() - before, 24, "each rejected request went once more");
}

/// Flow control, from QUIC's own BLOCKED frames: a 2 MiB body against the origin's stream
/// window (quinn's 1.25 MB) waits for more window at least once each (barrage says so in
/// STREAM_DATA_BLOCKED); 4 MiB answers against barrage's 1 MiB window make the origin say
/// it is blocked.
#[test]
fn bodies_beyond_a_window_count_flow_control_stalls() {
    let o = h3_origin(ServeConfig::default());
    let size = 2 << 20;
    let mut p = h3_plan(&o, "/upload", 1, 8);
    p.protocol = Protocol::http3(4);
    for t in &mut p.targets {
        t.method = http::Method::PUT;
        t.body = bytes::Bytes::from(vec![7u8; size]);
    }
    let s = run(p);
    assert_eq!((s.requests.ok, o.requests()), (8, 8), "{:?}", s.errors);
    let stalls = s.streams.as_ref().unwrap().send_stalls;
    assert!(stalls >= 8, "send stalls: {stalls}");
    assert!(s.bytes.out_total >= 8 * size as u64, "{}", s.bytes.out_total);
    let mut p = h3_plan(&o, "/bytes/4m", 1, 4);
    p.protocol = Protocol::http3(2);
    let s = run(p);
    assert_eq!(s.requests.ok, 4, "{:?}", s.errors);
    assert!(s.streams.as_ref().unwrap().recv_stalls >= 1, "{:?}", s.streams);
    assert!(s.bytes.in_total >= 4 * (4 << 20), "{}", s.bytes.in_total);
}

/// The command line: `--http3 -c 2 --streams 10` is 2 QUIC connections of 10 streams, in
/// the header and the figures, and every output says the connections were HTTP/3 the way
/// it says HTTP/2's; what cannot be is refused with exit 2.
#[test]
fn the_streams_flag_over_http3_counts_quic_connections_in_every_report() {
    let o = h3_origin(ServeConfig { latency: Some(LatencyDist::Fixed(DELAY)), ..Default::default() });
    let ca = o.ca_path().unwrap().to_str().unwrap().to_string();
    let url = o.url();
    let dir = tempfile::tempdir().unwrap();
    let (html, csv, xlsx, file) =
        (dir.path().join("r.html"), dir.path().join("csv"), dir.path().join("r.xlsx"), dir.path().join("r.brg"));
    let run = ["run", "--http3", "--cacert", &ca, "-c", "2", "--streams", "10", "-n", "200", &url];
    let out = crate::util::barrage()
        .args(run)
        .arg("--html")
        .arg(&html)
        .arg("--csv-dir")
        .arg(&csv)
        .arg("--xlsx")
        .arg(&xlsx)
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}{text}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("closed loop, 2 connections × 10 streams"), "{text}");
    let row = |label: &str| text.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or("").to_string();
    assert_eq!(row("HTTP/3 connections").split_whitespace().collect::<Vec<_>>(), ["HTTP/3", "connections", "2"]);
    assert!(row("streams in use (most)").trim_end().ends_with(" 10"), "{text}");
    let json = crate::util::barrage().arg("report").arg(&file).args(["--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!((v["requests"]["ok"].as_u64(), v["requests"]["connections"].as_u64()), (Some(200), Some(2)));
    assert_eq!(v["requests"]["protocols"], serde_json::json!({"HTTP/3": 2}));
    assert_eq!(v["streams"]["streams_max"], 10);
    assert!(std::fs::read_to_string(&html).unwrap().contains("HTTP/3 connections"));
    let summary = std::fs::read_to_string(csv.join("summary.csv")).unwrap();
    assert!(summary.lines().any(|l| l == "connections_http3,2"), "{summary}");
    assert!(summary.lines().any(|l| l == "streams_max,10"), "{summary}");
    // The workbook is the same sheets: the figure's name among its strings.
    if crate::util::require("unzip", std::process::Command::new("unzip").arg("-v").output().is_ok()) {
        let unzipped = std::process::Command::new("unzip").arg("-p").arg(&xlsx).output().unwrap();
        assert!(String::from_utf8_lossy(&unzipped.stdout).contains("connections_http3"));
    }
    assert_eq!(o.requests(), 200);
    for (args, why) in [
        (vec!["--http2"], "--http2"),
        (vec!["--streams", "4", "--no-keepalive"], "--no-keepalive opens one per request"),
        (vec!["--streams", "4", "--rate", "10", "--max-in-flight", "10"], "give a multiple of 4 such as 8"),
    ] {
        let out = crate::util::barrage()
            .args(["run", "--http3", "--cacert", &ca, &url, "-n", "1"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
    assert_eq!(o.requests(), 200, "nothing sent by a refused run");
}

/// Each HTTP/3 connection reserved 2.9 MiB of address space (quinn's receive buffer: a batch
/// of 32 datagrams, 64 coalesced ones each); under the 2 GiB `ulimit -v` of the bounded
/// runs, 700 connections aborted ("memory allocation of 3014656 bytes failed", exit 134).
/// They now run in it, and a `-c` the limit cannot hold is refused before anything starts:
/// exit 2, one line naming `-c` and the limit.
#[test]
fn http3_connections_fit_a_lowered_address_space_or_are_refused_up_front() {
    use crate::hostile::run_bounded;
    let o = h3_origin(ServeConfig::default());
    let (url, ca) = (o.url(), o.ca_path().unwrap().to_str().unwrap().to_string());
    let run = |c: &str| {
        let mut cmd = crate::util::barrage();
        cmd.args(["run", "--http3", "--cacert", &ca, "-c", c, "-n", c, "--connect-timeout", "5s"]);
        cmd.args(["--threads", "2", "--format", "json", &url]);
        run_bounded(cmd, None).expect("ends in time")
    };
    let ran = run("700");
    assert_eq!(ran.output.status.code(), Some(0), "{}", ran.stderr());
    let v: serde_json::Value = serde_json::from_slice(&ran.output.stdout).unwrap();
    // Every worker's request is accounted for: answered, or (700 handshakes at once at an
    // origin of one thread, on a busy machine) its connection timed out.
    let (ok, total) = (v["requests"]["ok"].as_u64().unwrap(), v["requests"]["total"].as_u64());
    assert!(ok > 0 && total == Some(700), "{ok} ok of {total:?}: {}", v["errors"]);
    let refused = run("10000");
    let err = refused.stderr();
    assert_eq!(refused.output.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("-c 10000 needs about") && err.contains("limit of 2048 MiB (ulimit -v)"), "{err}");
    assert_eq!(o.requests(), ok, "nothing sent by the refused run");
}
