//! The live views of a run: the Prometheus endpoint scraped while the run goes.

use crate::util::{barrage, origin};
use barrage_server::ServeConfig;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `GET /metrics` over a plain socket: (status line, body).
pub fn scrape(addr: &str) -> (String, String) {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(conn, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

fn number(v: &prometheus_parse::Value) -> f64 {
    match v {
        prometheus_parse::Value::Counter(x)
        | prometheus_parse::Value::Gauge(x)
        | prometheus_parse::Value::Untyped(x) => *x,
        _ => f64::NAN,
    }
}

/// `barrage ARGS --metrics-addr 127.0.0.1:0`, and the address it says it serves on.
pub fn with_metrics(args: &[&str]) -> (std::process::Child, String) {
    let mut child = barrage()
        .args(args)
        .args(["--metrics-addr", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("metrics on http://").and_then(|l| l.strip_suffix("/metrics"));
    let addr = addr.unwrap_or_else(|| panic!("{line}")).to_string();
    // The rest of stderr is not read: keep the pipe from filling.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, addr)
}

#[test]
fn the_metrics_endpoint_is_scraped_while_the_run_goes() {
    let server = origin(ServeConfig::default());
    let (mut child, addr) = with_metrics(&["run", "--rate", "200", "-d", "4s", &server.url()]);
    // Scrape until a closed interval shows up (bounded), then once more a second later.
    let deadline = Instant::now() + Duration::from_secs(10);
    let first = loop {
        let (status, body) = scrape(&addr);
        assert!(status.contains("200"), "{status}");
        let lines: Vec<String> = body.lines().map(str::to_string).collect();
        let parsed = prometheus_parse::Scrape::parse(lines.into_iter().map(Ok)).unwrap();
        // OpenMetrics names the counter family without `_total` in `# TYPE`, so this parser
        // sees the `_total` samples as untyped: both are read as numbers.
        if parsed.samples.iter().any(|s| s.metric.starts_with("barrage_requests_sent") && number(&s.value) > 0.0) {
            break parsed;
        }
        assert!(Instant::now() < deadline, "no requests counted: {body}");
        std::thread::yield_now();
    };
    let sent = first.samples.iter().find(|s| s.metric.starts_with("barrage_requests_sent")).unwrap();
    let sent_first = number(&sent.value);
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(sent_first >= 150.0, "at least the first second of 200/s: {sent_first}");
    let histogram = first.samples.iter().find(|s| s.metric.starts_with("barrage_request_latency_seconds"));
    assert!(histogram.is_some(), "the latency histogram is exposed");
}

#[test]
fn report_and_run_write_the_html_page() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let (file, page) = (dir.path().join("run.brg"), dir.path().join("run.html"));
    let out = barrage()
        .args(["run", "-n", "50", "-c", "2", &server.url(), "-o"])
        .arg(&file)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let written = std::fs::read_to_string(&page).unwrap();
    let out = barrage().arg("report").arg(&file).args(["--format", "html"]).output().unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    for html in [&written, &printed] {
        assert!(
            html.starts_with("<!DOCTYPE html>") && html.contains("id=\"barrage-data\""),
            "{}",
            &html[..200.min(html.len())]
        );
        assert!(html.contains("\"requests\""), "the run's figures are embedded");
    }
}

/// `--trace-context`: a latency bucket names the trace of a sampled request that fell in
/// it, as an OpenMetrics exemplar whose value lies within the bucket.
#[test]
fn the_metrics_endpoint_names_sampled_traces_as_exemplars() {
    let server = origin(ServeConfig::default());
    let (mut child, addr) = with_metrics(&["run", "--rate", "200", "-d", "4s", "--trace-context", &server.url()]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let line = loop {
        let (status, body) = scrape(&addr);
        assert!(status.contains("200"), "{status}");
        let found =
            body.lines().find(|l| l.starts_with("barrage_request_latency_seconds_bucket") && l.contains(" # {"));
        if let Some(line) = found {
            break line.to_string();
        }
        assert!(Instant::now() < deadline, "no exemplar: {body}");
        std::thread::yield_now();
    };
    assert!(child.wait().unwrap().success());
    // barrage_request_latency_seconds_bucket{le="0.001"} 12 # {trace_id="…",span_id="…"} 0.0004 1795…
    let (bucket, exemplar) = line.split_once(" # ").unwrap();
    let le: f64 = bucket.split('"').nth(1).unwrap().parse().unwrap_or(f64::INFINITY);
    let (labels, rest) = exemplar.split_once("} ").unwrap();
    let ids: Vec<&str> = labels.split('"').skip(1).step_by(2).collect();
    assert_eq!((ids[0].len(), ids[1].len()), (32, 16), "{line}");
    assert!(ids.iter().all(|id| id.bytes().all(|b| b.is_ascii_hexdigit())), "{line}");
    let value: f64 = rest.split(' ').next().unwrap().parse().unwrap();
    assert!(value > 0.0 && value <= le, "{line}");
}
