//! Targets that refuse, reset, stall or answer garbage: counted and classified, never a hang.

use crate::util::{closed, errors_of, origin, plan, refused_url, run, Fault, FaultServer};
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
    assert!(s.warnings.iter().any(|w| w.contains("--insecure")));
}
