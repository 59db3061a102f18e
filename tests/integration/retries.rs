//! Retries that never hide failures: every attempt counted, first-try and final success apart.

use crate::util::{barrage, closed, errors_of, origin, plan, refused_url, run};
use barrage_engine::{RetryOn, RetryPolicy};
use barrage_server::ServeConfig;
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
