//! Targets that refuse, reset, stall or answer garbage: counted and classified, never a hang.

use crate::util::{barrage, closed, errors_of, origin, plan, refused_url, run, Fault, FaultServer};
use barrage_engine::{Load, Pacer, Plan};
use barrage_metrics::summary::WarningKind;
use barrage_server::ServeConfig;
use std::time::{Duration, Instant};

#[test]
fn refused_connections() {
    let mut p = plan(&refused_url(), closed(1));
    p.requests = Some(5);
    let s = run(p);
    assert_eq!(errors_of(&s, "refused"), 5, "{:?}", s.errors);
    assert!(s.errors[0].example.to_lowercase().contains("refused"), "{:?}", s.errors);
}

#[test]
fn unreachable_networks_are_their_own_kind() {
    // Linux refuses a TCP connect to the limited broadcast address with ENETUNREACH before
    // sending anything, with or without a default route: the network is unreachable
    // without a packet leaving the machine.
    let url = "http://255.255.255.255:9/";
    let mut p = plan(url, closed(1));
    p.requests = Some(3);
    let s = run(p);
    assert_eq!(errors_of(&s, "unreachable"), 3, "{:?}", s.errors);
    assert!(s.errors[0].example.contains("unreachable"), "{:?}", s.errors);
    let out = barrage().args(["run", "-n", "1", url]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.trim_start().starts_with("unreachable")), "{text}");
}

#[test]
fn request_timeout_when_the_origin_is_slower() {
    let o = origin(ServeConfig::default());
    let mut p = plan(&format!("{}/delay/3000", o.url()), closed(3));
    p.requests = Some(3);
    p.timeout = Duration::from_millis(200);
    let t = Instant::now();
    let s = run(p);
    assert_eq!(errors_of(&s, "request_timeout"), 3, "{:?}", s.errors);
    assert!(t.elapsed() < Duration::from_secs(2), "took {:?}", t.elapsed());
}

/// A listener that never accepts, its accept queue full: the kernel drops further SYNs, so
/// a connect to it hangs (until the client's SYN retries give up, a minute later).
struct Unaccepting {
    fd: libc::c_int,
    addr: std::net::SocketAddr,
    _queued: Vec<std::net::TcpStream>,
}

impl Unaccepting {
    fn start() -> Unaccepting {
        // SAFETY: plain socket calls on a socket of our own, with checked results.
        let (fd, addr) = unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket");
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            assert_eq!(libc::bind(fd, &sa as *const _ as *const libc::sockaddr, len), 0, "bind");
            assert_eq!(libc::listen(fd, 0), 0, "listen");
            let mut len = len;
            assert_eq!(libc::getsockname(fd, &mut sa as *mut _ as *mut libc::sockaddr, &mut len), 0);
            (fd, std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, u16::from_be(sa.sin_port))))
        };
        // Fills the queue: connects until one is not answered.
        let mut queued = Vec::new();
        for _ in 0..8 {
            match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(c) => queued.push(c),
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return Unaccepting { fd, addr, _queued: queued };
                }
                Err(e) => panic!("filling the accept queue: {e}"),
            }
        }
        panic!("the accept queue never filled");
    }
}

impl Drop for Unaccepting {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.fd) };
    }
}

#[test]
fn a_connect_never_answered_ends_at_the_connect_timeout_or_the_request_s_if_sooner() {
    let server = Unaccepting::start();
    let url = format!("http://{}/", server.addr);
    // (timeout, connect timeout, kind): each of two requests waits for the shorter bound, and
    // is counted by it.
    let table = [(5000, 300, "connect_timeout"), (300, 5000, "request_timeout")];
    for (timeout, connect_timeout, kind) in table {
        let mut p = plan(&url, closed(1));
        p.requests = Some(2);
        (p.timeout, p.connect_timeout) = (Duration::from_millis(timeout), Duration::from_millis(connect_timeout));
        let t = Instant::now();
        let s = run(p);
        assert_eq!(errors_of(&s, kind), 2, "{kind}: {:?}", s.errors);
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(600) && took < Duration::from_secs(3), "{kind}: two bounds: {took:?}");
    }
}

#[test]
fn a_slow_request_after_quick_ones_gets_its_whole_timeout() {
    // The slot's one timer was armed by its first request: a later one is bounded from its
    // own start, neither cut short by an earlier request's bound nor let run past its own.
    slow_after_quick(|p| p.requests = Some(6));
}

#[test]
fn a_slow_stream_among_quick_ones_gets_its_whole_timeout() {
    // Over HTTP/2 the quick streams' answers wake the workers many times while a slow one
    // waits, and the timer is polled only when its waker changed: it must still fire.
    slow_after_quick(|p| {
        (p.protocol, p.requests) = (barrage_plan::Protocol::http2(4), Some(12));
    });
}

/// Alternating quick requests and ones the origin holds for 3 s, with a 300 ms timeout:
/// every slow one times out between 300 and 450 ms, every quick one is answered.
fn slow_after_quick(shape: impl FnOnce(&mut Plan)) {
    let o = origin(ServeConfig::default());
    let mut p = plan(&format!("{}/", o.url()), closed(1));
    p.targets.push(barrage_plan::Target::new(http::Method::GET, &format!("{}/delay/3000", o.url())).unwrap());
    p.timeout = Duration::from_millis(300);
    shape(&mut p);
    let half = p.requests.unwrap() / 2;
    let s = run(p);
    assert_eq!(errors_of(&s, "request_timeout"), half, "{:?}", s.errors);
    assert_eq!(s.requests.ok, half);
    let timed_out = &s.latency_by_class["error"];
    assert!(timed_out.min_us >= 300_000, "cut short: {} µs", timed_out.min_us);
    assert!(timed_out.max_us < 450_000, "ran past its bound: {} µs", timed_out.max_us);
}

#[test]
fn silent_server_times_out_and_the_run_ends_on_time() {
    let f = FaultServer::start(Fault::Silent);
    let mut p = plan(&f.url(), closed(2));
    p.duration = Some(Duration::from_millis(500));
    p.timeout = Duration::from_millis(300);
    let t = Instant::now();
    let s = run(p);
    assert!(errors_of(&s, "request_timeout") >= 2, "{:?}", s.errors);
    // Bounded by duration + timeout.
    assert!(t.elapsed() < Duration::from_millis(1500), "took {:?}", t.elapsed());
}

#[test]
fn reset_connections() {
    let f = FaultServer::start(Fault::Reset);
    let mut p = plan(&f.url(), closed(1));
    p.requests = Some(5);
    let s = run(p);
    assert_eq!(errors_of(&s, "reset"), 5, "{:?}", s.errors);
}

#[test]
fn garbage_responses_are_protocol_errors() {
    let f = FaultServer::start(Fault::Garbage);
    let mut p = plan(&f.url(), closed(1));
    p.requests = Some(5);
    let s = run(p);
    assert_eq!(errors_of(&s, "protocol"), 5, "{:?}", s.errors);
}

#[test]
fn status_errors_are_counted_apart_from_transport_errors() {
    let o = origin(ServeConfig::default());
    let mut p = plan(&format!("{}/status/503", o.url()), closed(1));
    p.requests = Some(10);
    let s = run(p);
    assert_eq!(s.status_codes["503"], 10);
    assert_eq!(s.requests.http_errors, 10);
    assert_eq!(s.requests.errors, 0);
    assert_eq!(s.success_ratio, 0.0);
    assert!(s.latency_by_class.contains_key("5xx"));
}

#[test]
fn tls_failure_without_the_ca() {
    let o = origin(ServeConfig { tls: true, ..Default::default() });
    let mut p = plan(&o.url(), closed(1));
    p.requests = Some(2);
    // No --cacert: the generated certificate is not trusted.
    let s = run(p);
    assert_eq!(errors_of(&s, "tls"), 2, "{:?}", s.errors);
    let mut p = plan(&o.url(), closed(1));
    p.requests = Some(2);
    p.tls.insecure = true;
    let s = run(p);
    assert_eq!(s.requests.ok, 2, "{:?}", s.errors);
    assert!(s.insecure);
    assert!(s.warnings.iter().any(|w| w.kind == WarningKind::Insecure && w.text.contains("--insecure")));
}

#[test]
fn a_kept_alive_connection_closed_while_idle_is_replaced_without_error() {
    // The server closes each connection after its answer, without saying so: the next
    // request finds the connection closed and must go out on a new one, not hang.
    let f = FaultServer::start(Fault::CloseWhenIdle);
    let mut p = plan(&f.url(), Load::Closed { concurrency: 1, think_time: Duration::from_millis(50) });
    p.requests = Some(5);
    p.timeout = Duration::from_secs(3);
    let t = Instant::now();
    let s = run(p);
    assert_eq!(s.requests.ok, 5, "{:?}", s.errors);
    assert_eq!(s.requests.connections, 5);
    assert!(t.elapsed() < Duration::from_secs(2), "took {:?}", t.elapsed());
}

#[test]
fn open_loop_ends_on_time_when_every_slot_is_stuck() {
    let f = FaultServer::start(Fault::Silent);
    let mut p = plan(&f.url(), Load::Open { pacer: Pacer::Constant { rate: 200.0 }, max_in_flight: 4 });
    p.duration = Some(Duration::from_secs(1));
    p.timeout = Duration::from_millis(700);
    let t = Instant::now();
    let s = run(p);
    // Bounded by duration + timeout, however many requests were due.
    assert!(t.elapsed() < Duration::from_millis(2500), "took {:?}", t.elapsed());
    assert!(s.requests.sent <= 8, "sent {}", s.requests.sent);
    assert_eq!(s.requests.sent + s.requests.dropped, 200, "{:?}", s.requests);
    assert!(s.warnings.iter().any(|w| w.kind == WarningKind::RequestsNeverSent), "{:?}", s.warnings);
    assert!((s.duration.attack_s - 1.0).abs() < 0.05, "attack {}", s.duration.attack_s);
}

#[test]
fn think_time_never_outlasts_the_run() {
    let o = origin(ServeConfig::default());
    let mut p = plan(&o.url(), Load::Closed { concurrency: 2, think_time: Duration::from_secs(3600) });
    p.duration = Some(Duration::from_millis(500));
    let t = Instant::now();
    let s = run(p);
    assert_eq!(s.requests.ok, 2);
    assert!(t.elapsed() < Duration::from_secs(2), "took {:?}", t.elapsed());
}

#[test]
fn a_url_with_a_query_and_no_path() {
    let o = origin(ServeConfig::default());
    let mut p = plan(&format!("{}?x=1", o.url()), closed(1));
    p.requests = Some(2);
    let s = run(p);
    assert_eq!(s.requests.ok, 2, "{:?}", s.errors);
}
