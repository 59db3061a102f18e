//! HTTP/3 against the origin's own HTTP/3 listener: counts against the origin's, phases
//! against a known delay, handshakes against the origin's count (none resumed, so no
//! 0-RTT), and what fails (a certificate, nothing listening, a silent port, a closed
//! connection) classified within its bound.

use crate::util::{closed, errors_of, origin, plan, run};
use barrage_metrics::summary::RunSummary;
use barrage_server::{Handshakes, LatencyDist, RunningServer, ServeConfig};
use std::time::{Duration, Instant};

/// The origin with TLS and HTTP/3 (and `config`'s other settings).
fn h3_origin(config: ServeConfig) -> RunningServer {
    origin(ServeConfig { tls: true, http3: true, ..config })
}

/// A `--http3` plan for `path` of `o`, trusting its CA, with `n` requests.
fn h3_plan(o: &RunningServer, path: &str, workers: usize, n: u64) -> barrage_engine::Plan {
    let mut p = plan(&format!("{}{path}", o.url()), closed(workers));
    p.http3 = true;
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
    p.keepalive = false;
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
    (p.http3, p.requests, p.connect_timeout) = (true, Some(3), Duration::from_secs(5));
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
    (p.http3, p.requests, p.connect_timeout) = (true, Some(2), Duration::from_millis(300));
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
