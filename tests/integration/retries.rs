//! Retries that never hide failures: every attempt counted, first-try and final success apart.

use crate::util::{barrage, closed, errors_of, origin, plan, refused_url, run, set_linger_zero};
use barrage_engine::{RetryOn, RetryPolicy};
use barrage_server::ServeConfig;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn policy(max_retries: u32, on: &str) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        backoff_min: Duration::from_millis(1),
        backoff_max: Duration::from_millis(4),
        on: on.parse::<RetryOn>().unwrap(),
    }
}

#[test]
fn known_error_rate_gives_known_first_try_and_final_success() {
    // 30 % of answers are 500: first try succeeds 70 %, four tries 1 − 0.3⁴ ≈ 99.2 %.
    let o = origin(ServeConfig { error_rate: 0.3, ..Default::default() });
    let mut p = plan(&o.url(), closed(4));
    // 2,000 requests put ±0.05 at about 5 standard deviations of the first-try ratio.
    p.requests = Some(2000);
    p.retry = Some(policy(3, "5xx"));
    let s = run(p);
    let r = s.retries.as_ref().expect("retry figures");
    assert_eq!(r.requests, 2000);
    assert!((r.first_try_success_ratio - 0.7).abs() < 0.05, "first try {}", r.first_try_success_ratio);
    assert!(r.final_success_ratio >= 0.97, "final {}", r.final_success_ratio);
    // Every attempt is in the main figures: about 1 + 0.3 + 0.09 + 0.027 per request.
    assert_eq!(s.requests.total, r.attempts);
    assert!((1.3..1.55).contains(&r.attempts_per_request), "{}", r.attempts_per_request);
    assert_eq!(o.requests(), r.attempts);
    assert!(s.status_codes["500"] > 300, "{:?}", s.status_codes);
}

#[test]
fn failures_not_on_the_list_are_not_retried() {
    let o = origin(ServeConfig::default());
    let mut p = plan(&format!("{}/status/404", o.url()), closed(1));
    p.requests = Some(5);
    p.retry = Some(policy(3, "5xx"));
    let s = run(p);
    let r = s.retries.unwrap();
    assert_eq!((r.attempts, r.final_success_ratio), (5, 0.0));
    assert_eq!(o.requests(), 5);
}

#[test]
fn retries_of_transport_errors_stop_with_the_attack() {
    let mut p = plan(&refused_url(), closed(1));
    p.duration = Some(Duration::from_millis(300));
    p.retry = Some(RetryPolicy {
        backoff_min: Duration::from_millis(100),
        backoff_max: Duration::from_secs(10),
        ..policy(50, "error")
    });
    let t = Instant::now();
    let s = run(p);
    assert!(t.elapsed() < Duration::from_secs(2), "took {:?}", t.elapsed());
    let r = s.retries.clone().unwrap();
    assert_eq!(r.final_success_ratio, 0.0);
    assert!(r.attempts >= 2, "{}", r.attempts);
    assert_eq!(errors_of(&s, "refused"), r.attempts);
}

#[test]
fn retry_flags_on_the_cli() {
    let o = origin(ServeConfig { error_rate: 0.5, ..Default::default() });
    let out = barrage()
        .args([
            "run",
            "-n",
            "50",
            "-c",
            "2",
            "--retries",
            "2",
            "--backoff",
            "1ms..5ms",
            "--retry-on",
            "500,error",
            &o.url(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("first-try success") && text.contains("final success"), "{text}");
    for bad in [["--retry-on", "often"], ["--backoff", "1s..1ms"]] {
        let out = barrage().args(["run", "-n", "1", "--retries", "1"]).args(bad).arg(o.url()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

/// A keep-alive server that answers `keep` requests on each connection, then reads the next
/// one and closes the connection without answering it, never having said `Connection:
/// close` (FIN on even connections, RST on odd ones). It counts what it did, and the bytes
/// of the requests it read.
struct StaleServer {
    addr: std::net::SocketAddr,
    accepted: Arc<AtomicU64>,
    answered: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl StaleServer {
    fn start(keep: u64) -> StaleServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let [accepted, answered, dropped, received] = [(); 4].map(|_| Arc::new(AtomicU64::new(0)));
        let stop = Arc::new(AtomicBool::new(false));
        let server = StaleServer { addr, accepted, answered, dropped, received, stop };
        let (accepted, stop) = (server.accepted.clone(), server.stop.clone());
        let counters = [server.answered.clone(), server.dropped.clone(), server.received.clone()];
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let Ok((s, _)) = listener.accept() else {
                    // Paces the polling of a non-blocking accept; synchronises nothing.
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let n = accepted.fetch_add(1, Ordering::Relaxed);
                let counters = counters.clone();
                std::thread::spawn(move || serve_then_drop(s, keep, n % 2 == 1, &counters));
            }
        });
        server
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for StaleServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Serves one connection; `counters` are requests answered, dropped and bytes received.
fn serve_then_drop(mut s: TcpStream, keep: u64, reset: bool, counters: &[Arc<AtomicU64>; 3]) {
    let [answered, dropped, received] = counters;
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut pending = Vec::new();
    for n in 0.. {
        let Some(len) = read_one_request(&mut s, &mut pending) else { return };
        received.fetch_add(len as u64, Ordering::Relaxed);
        if n == keep {
            // Read in full, never answered: closed as if the keep-alive had run out.
            dropped.fetch_add(1, Ordering::Relaxed);
            if reset {
                set_linger_zero(&s);
            }
            return;
        }
        answered.fetch_add(1, Ordering::Relaxed);
        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
            return;
        }
    }
}

/// Reads one request (head and Content-Length body) from `s` and returns its length;
/// `pending` keeps what was read past it. `None` when the client closed the connection first.
fn read_one_request(s: &mut TcpStream, pending: &mut Vec<u8>) -> Option<usize> {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                .unwrap_or(0);
            if pending.len() >= end + 4 + len {
                pending.drain(..end + 4 + len);
                return Some(end + 4 + len);
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

#[test]
fn requests_on_connections_the_server_closed_unanswered_are_retried_once() {
    // Three answers per connection, then the fourth request read and dropped: a GET is sent
    // once more on a new connection, counted, never an error; a POST is not (it may have
    // done something), and is a reset error.
    for method in [http::Method::GET, http::Method::POST] {
        let server = StaleServer::start(3);
        let mut p = plan(&server.url(), closed(4));
        p.targets[0].method = method.clone();
        if method == http::Method::POST {
            p.targets[0].body = bytes::Bytes::from_static(b"x");
        }
        p.requests = Some(200);
        let s = run(p);
        let (answered, dropped) = (server.answered.load(Ordering::Relaxed), server.dropped.load(Ordering::Relaxed));
        let accepted = server.accepted.load(Ordering::Relaxed);
        let r = &s.requests;
        eprintln!("{method}: server answered {answered}, dropped {dropped}, accepted {accepted}; barrage {r:?}");
        // Every connection was kept alive three times, so about one request in four was dropped.
        assert!(dropped >= 40, "{method}: the server dropped {dropped}");
        assert_eq!((r.total, r.ok, r.connections), (200, answered, accepted), "{method}: {:?}", s.errors);
        if method == http::Method::GET {
            // What the dropped tries wrote counts too.
            assert_eq!(s.bytes.out_total, server.received.load(Ordering::Relaxed));
            assert_eq!((r.errors, r.stale_retries), (0, dropped), "{method}: {:?}", s.errors);
            // Each retry went on a new connection: the four first ones, one per drop.
            assert_eq!(accepted, 4 + dropped);
        } else {
            assert_eq!((errors_of(&s, "reset"), r.stale_retries), (dropped, 0), "{method}: {:?}", s.errors);
        }
    }
}
