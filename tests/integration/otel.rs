//! `--otlp`: what barrage exports arrives at a receiver barrage did not write (Python's
//! opentelemetry-proto and grpcio, tests/otlp_receiver.py), with the counts and histogram
//! totals of barrage's own report; credentials reach the receiver and nothing barrage
//! writes; a collector that is down costs one line on stderr, not the run.

use crate::util::{barrage, origin, refused_url, require};
use barrage_server::ServeConfig;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const SECRET: &str = "s3cret";

/// The Python receiver, on free loopback ports; stopped (stdin closed, then killed) on drop.
struct Receiver {
    child: Child,
    out: PathBuf,
    grpc: u16,
    http: u16,
}

impl Receiver {
    /// The receiver writing to `dir`/received.jsonl; `None` (after `SKIPPED`) without
    /// Python's packages.
    fn start(dir: &Path, extra: &[&str]) -> Option<Receiver> {
        let present = Command::new("python3")
            .args(["-c", "import opentelemetry.proto, grpc"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !require("opentelemetry-proto", present) {
            return None;
        }
        let out = dir.join("received.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp_receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(&out)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        // It prints its ports once both listen (or exits, which ends the lines).
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut port = |name: &str| -> u16 {
            let line = lines.next().expect("the receiver prints its ports").unwrap();
            let (n, p) = line.split_once(' ').unwrap();
            assert_eq!(n, name);
            p.parse().unwrap()
        };
        let (grpc, http) = (port("grpc"), port("http"));
        Some(Receiver { child, out, grpc, http })
    }

    /// Every request received so far, decoded.
    fn received(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The metrics named `name` across the received metric requests of `transport`.
fn metrics<'a>(received: &'a [Value], transport: &str, name: &str) -> Vec<&'a Value> {
    received
        .iter()
        .filter(|r| r["transport"] == transport && r["signal"] == "metrics")
        .flat_map(|r| r["body"]["resourceMetrics"].as_array().unwrap())
        .flat_map(|rm| rm["scopeMetrics"].as_array().unwrap())
        .flat_map(|sm| sm["metrics"].as_array().unwrap())
        .filter(|m| m["name"] == name)
        .collect()
}

/// JSON's 64-bit integers are strings in the protobuf mapping.
fn int(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.parse().unwrap(),
        Value::Number(n) => n.as_u64().unwrap(),
        Value::Null => 0,
        other => panic!("{other}"),
    }
}

fn points<'a>(metrics: &[&'a Value], kind: &str) -> Vec<&'a Value> {
    metrics.iter().flat_map(|m| m[kind]["dataPoints"].as_array().unwrap()).collect()
}

/// Runs 3000 requests at 1000/s against `url`, exporting with `otlp` flags; its JSON report
/// and its stderr. The run's files go to `work`, its history too.
fn run(work: &Path, url: &str, otlp: &[&str]) -> (Value, String, String) {
    let out = barrage()
        .current_dir(work)
        .env("XDG_DATA_HOME", work.join("data"))
        .env("OTEL_EXPORTER_OTLP_HEADERS", format!("authorization=Bearer%20{SECRET}"))
        .args(["run", "-n", "3000", "--rate", "1000", "--format", "json", "-o", "run.brg", "--html", "run.html", url])
        .args(otlp)
        .output()
        .unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (serde_json::from_str(&stdout).unwrap(), stdout, stderr)
}

/// No file under `dir` holds `needle`.
fn nowhere_in(dir: &Path, needle: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            nowhere_in(&path, needle);
        } else {
            let bytes = std::fs::read(&path).unwrap();
            assert!(!bytes.windows(needle.len()).any(|w| w == needle.as_bytes()), "{needle} in {}", path.display());
        }
    }
}

#[test]
fn otlp_metrics_arrive_with_the_reports_counts_over_both_protocols() {
    let received_dir = tempfile::tempdir().unwrap();
    let Some(receiver) = Receiver::start(received_dir.path(), &[]) else { return };
    let o = origin(ServeConfig::default());
    for (transport, port, protocol) in [("http", receiver.http, "http/protobuf"), ("grpc", receiver.grpc, "grpc")] {
        let work = tempfile::tempdir().unwrap();
        let endpoint = format!("http://127.0.0.1:{port}");
        let (report, stdout, stderr) = run(work.path(), &o.url(), &["--otlp", &endpoint, "--otlp-protocol", protocol]);
        let total = report["requests"]["total"].as_u64().unwrap();
        assert_eq!(total, 3000);
        let received = receiver.received();
        let completed: u64 = points(&metrics(&received, transport, "barrage.requests.completed"), "sum")
            .iter()
            .map(|p| int(&p["asInt"]))
            .sum();
        assert_eq!(completed, total, "{transport}");
        let durations = points(&metrics(&received, transport, "http.client.request.duration"), "exponentialHistogram");
        let count: u64 = durations.iter().map(|p| int(&p["count"])).sum();
        let buckets: u64 = durations
            .iter()
            .map(|p| {
                let positive = p["positive"]["bucketCounts"].as_array().map_or(0, |b| b.iter().map(int).sum::<u64>());
                positive + int(&p["zeroCount"])
            })
            .sum();
        assert_eq!((count, buckets), (total, total), "{transport}");
        // The sums are HDR's mean × count, interval by interval: within float rounding of
        // the report's mean × count (both use HDR's median equivalent values).
        let sum: f64 = durations.iter().map(|p| p["sum"].as_f64().unwrap_or(0.0)).sum();
        let want = report["latency"]["corrected"]["mean_us"].as_f64().unwrap() * total as f64 / 1e6;
        assert!((sum - want).abs() <= want * 1e-9 + 1e-12, "{transport}: {sum} vs {want}");
        let mine: Vec<&Value> = received.iter().filter(|r| r["transport"] == transport).collect();
        assert!(mine.iter().all(|r| r["headers"]["authorization"] == format!("Bearer {SECRET}")), "{transport}");
        assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET), "{stderr}");
        assert!(!stderr.contains("otlp:"), "{stderr}");
        nowhere_in(work.path(), SECRET);
    }
}

#[test]
fn otlp_cumulative_points_end_at_the_runs_count_through_retries() {
    let received_dir = tempfile::tempdir().unwrap();
    // The first two requests are answered 503: retried, then delivered.
    let Some(receiver) = Receiver::start(received_dir.path(), &["--fail-first", "2"]) else { return };
    let o = origin(ServeConfig::default());
    let work = tempfile::tempdir().unwrap();
    let endpoint = format!("http://127.0.0.1:{}", receiver.http);
    let (report, _, stderr) = run(work.path(), &o.url(), &["--otlp", &endpoint, "--otlp-temporality", "cumulative"]);
    assert!(!stderr.contains("otlp:"), "{stderr}");
    let total = report["requests"]["total"].as_u64().unwrap();
    let received = receiver.received();
    let durations = points(&metrics(&received, "http", "http.client.request.duration"), "exponentialHistogram");
    let counts: Vec<u64> = durations.iter().map(|p| int(&p["count"])).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert_eq!(counts.last(), Some(&total));
    let starts: Vec<&Value> = durations.iter().map(|p| &p["startTimeUnixNano"]).collect();
    assert!(starts.windows(2).all(|w| w[0] == w[1]), "{starts:?}");
    assert!(durations.iter().all(|p| p["scale"] == 8 || p["scale"].is_null()));
    let completed = points(&metrics(&received, "http", "barrage.requests.completed"), "sum");
    assert_eq!(completed.last().map(|p| int(&p["asInt"])), Some(total));
    let first = &metrics(&received, "http", "barrage.schedule.lag")[0];
    assert_eq!(first["exponentialHistogram"]["aggregationTemporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE");
}

#[test]
fn otlp_to_a_collector_that_is_down_costs_one_line_not_the_run() {
    let o = origin(ServeConfig::default());
    let work = tempfile::tempdir().unwrap();
    let down = refused_url();
    let out = barrage()
        .current_dir(work.path())
        .args(["run", "-n", "300", "--rate", "300", "--format", "json", &o.url(), "--otlp", down.trim_end_matches('/')])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("otlp")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("otlp: ") && lines[0].contains("metric batches not delivered"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["requests"]["total"], 300);
}

#[test]
fn otlp_bad_values_are_one_line_and_exit_2() {
    // (flags, variables, what the error names)
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (&["--otlp", "ftp://x"], &[], "--otlp 'ftp://x'"),
        (&["--otlp-scale", "21"], &[], "--otlp-scale"),
        (
            &[],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "udp")],
            "OTEL_EXPORTER_OTLP_PROTOCOL 'udp'",
        ),
        (
            &[],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"), ("OTEL_EXPORTER_OTLP_HEADERS", SECRET)],
            "OTEL_EXPORTER_OTLP_HEADERS",
        ),
    ];
    for (args, env, want) in cases {
        let out = barrage()
            .args(["run", "-n", "1", "http://127.0.0.1:1/"])
            .args(*args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(want) && !stderr.contains(SECRET) && !stderr.contains("panicked"), "{stderr}");
    }
}

/// Request `number` of a run as the engine would hand it over: a GET of a template.
fn span_record(number: u64) -> barrage_metrics::trace::SpanRecord {
    let key = barrage_metrics::trace::TraceKey::of_run("4bf92f3577b34da6a3ce929d0e0e4736").unwrap();
    let ms = std::time::Duration::from_millis;
    barrage_metrics::trace::SpanRecord {
        trace: key.trace_id(number),
        span: key.span_id(number, 0, 1),
        parent: None,
        number,
        attempt: 1,
        intended_unix_us: 1_700_000_000_000_000 + number * 1000,
        started_unix_us: 1_700_000_000_000_000 + number * 1000 + 50,
        ended_unix_us: 1_700_000_000_000_000 + number * 1000 + 2050,
        phases: [None, Some(ms(1)), None, None, Some(ms(1)), None],
        outcome: barrage_metrics::Outcome::Status(200),
        rejected: false,
        method: "GET",
        target: "/items/{id}".into(),
        server: "127.0.0.1:8080".into(),
        step: None,
        captures: Vec::new(),
        bytes_in: 100,
        bytes_out: 10,
        cache: barrage_metrics::CacheStatus::Unknown,
    }
}

#[test]
fn otlp_spans_from_the_sink_arrive_as_client_spans() {
    use base64::Engine as _;
    let received_dir = tempfile::tempdir().unwrap();
    let Some(receiver) = Receiver::start(received_dir.path(), &[]) else { return };
    for (transport, port, protocol) in [("http", receiver.http, "http/protobuf"), ("grpc", receiver.grpc, "grpc")] {
        let flags = barrage_otel::Flags {
            endpoint: Some(format!("http://127.0.0.1:{port}")),
            protocol: Some(protocol.into()),
            ..Default::default()
        };
        let config = barrage_otel::resolve(&flags, &|_| None).unwrap().unwrap();
        let exporter = barrage_otel::Exporter::start(config.clone(), barrage_otel::metrics::resource(&config)).unwrap();
        let sink = exporter.spans();
        // More than a batch (512): two requests at least.
        assert!((0..600).all(|n| sink.try_send(span_record(n))));
        let report = exporter.finish(std::time::Duration::from_secs(10));
        assert_eq!((report.spans, report.spans_delivered, report.line()), (600, 600, None), "{transport}");
        let received = receiver.received();
        let requests: Vec<&Value> =
            received.iter().filter(|r| r["transport"] == transport && r["signal"] == "traces").collect();
        assert!(requests.len() >= 2, "{transport}");
        let spans: Vec<&Value> = requests
            .iter()
            .flat_map(|r| r["body"]["resourceSpans"].as_array().unwrap())
            .flat_map(|rs| rs["scopeSpans"].as_array().unwrap())
            .flat_map(|ss| ss["spans"].as_array().unwrap())
            .collect();
        assert_eq!(spans.len(), 600, "{transport}");
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        for (n, s) in spans.iter().enumerate() {
            let r = span_record(n as u64);
            assert_eq!(s["traceId"], b64(&r.trace.bytes()));
            assert_eq!(s["spanId"], b64(&r.span.bytes()));
            assert_eq!((s["kind"].as_str(), s["name"].as_str()), (Some("SPAN_KIND_CLIENT"), Some("GET /items/{id}")));
            assert_eq!(int(&s["startTimeUnixNano"]), r.started_unix_us * 1000);
            let attrs = s["attributes"].as_array().unwrap();
            let template = attrs.iter().find(|a| a["key"] == "url.template").unwrap();
            assert_eq!(template["value"]["stringValue"], "/items/{id}");
            let events: Vec<&str> =
                s["events"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
            assert_eq!(events, ["barrage.intended_start", "connect", "first_byte"]);
        }
    }
}

/// tests/traced_origin.py: an origin instrumented with OpenTelemetry's Python SDK, which
/// continues each request's trace and exports its server spans to `traces_url`.
struct TracedOrigin {
    child: Child,
    port: u16,
}

impl TracedOrigin {
    fn start(traces_url: &str) -> TracedOrigin {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traced_origin.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(traces_url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        let line = BufReader::new(child.stdout.take().unwrap()).lines().next().expect("it prints its port").unwrap();
        let port = line.strip_prefix("port ").expect("port N").parse().unwrap();
        TracedOrigin { child, port }
    }

    /// Stops it (stdin closed) and waits, at most 20 s, until it has flushed its spans and
    /// exited.
    fn stop(mut self) {
        drop(self.child.stdin.take());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while self.child.try_wait().unwrap().is_none() {
            assert!(std::time::Instant::now() < deadline, "the traced origin did not stop");
            // Polled: its exit is what the test waits for, and it takes its flush's time.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for TracedOrigin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The spans received, by service name, each as (trace id, span id, parent span id) in hex.
fn spans_by_service(received: &[Value]) -> std::collections::HashMap<String, Vec<(String, String, String)>> {
    use base64::Engine as _;
    let hex = |v: &Value| -> String {
        let bytes = base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap_or("")).unwrap();
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    };
    let mut by = std::collections::HashMap::<String, Vec<(String, String, String)>>::new();
    for rs in
        received.iter().filter(|r| r["signal"] == "traces").flat_map(|r| r["body"]["resourceSpans"].as_array().unwrap())
    {
        let attrs = rs["resource"]["attributes"].as_array().unwrap();
        let service =
            attrs.iter().find(|a| a["key"] == "service.name").unwrap()["value"]["stringValue"].as_str().unwrap();
        for s in rs["scopeSpans"].as_array().unwrap().iter().flat_map(|ss| ss["spans"].as_array().unwrap()) {
            by.entry(service.to_string()).or_default().push((
                hex(&s["traceId"]),
                hex(&s["spanId"]),
                hex(&s["parentSpanId"]),
            ));
        }
    }
    by
}

/// The join: barrage's client span of every sampled request is the parent of the span an
/// instrumented origin (OpenTelemetry's own SDK, honouring the sampled flag) recorded for
/// it, both exported to one receiver; the report's slowest sampled requests are among them.
#[test]
fn a_traced_origin_continues_each_sampled_request_under_barrages_span() {
    let received_dir = tempfile::tempdir().unwrap();
    let Some(receiver) = Receiver::start(received_dir.path(), &[]) else { return };
    let sdk = Command::new("python3")
        .args(["-c", "import opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !require("opentelemetry-sdk", sdk) {
        return;
    }
    let origin = TracedOrigin::start(&format!("http://127.0.0.1:{}/v1/traces", receiver.http));
    let work = tempfile::tempdir().unwrap();
    let out = barrage()
        .current_dir(work.path())
        .env("XDG_DATA_HOME", work.path().join("data"))
        .args(["run", "-n", "600", "--rate", "200", "--trace-sample", "0.2", "--format", "json"])
        .arg(format!("http://127.0.0.1:{}/item", origin.port))
        .args(["--otlp", &format!("http://127.0.0.1:{}", receiver.http)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    origin.stop();
    let spans = spans_by_service(&receiver.received());
    let ours = &spans["barrage"];
    let sampled = report["trace_context"]["requests_sampled"].as_u64().unwrap();
    assert_eq!(report["requests"]["ok"].as_u64(), Some(600));
    // 600 × 0.2: within 5 standard deviations (≈ 9.8 each).
    assert!((70..=170).contains(&sampled), "{sampled} sampled");
    assert_eq!(ours.len() as u64, sampled, "one client span per sampled request");
    let theirs: std::collections::HashSet<(String, String)> =
        spans.get("traced-origin").into_iter().flatten().map(|(t, _, parent)| (t.clone(), parent.clone())).collect();
    let joined = ours.iter().filter(|(t, s, _)| theirs.contains(&(t.clone(), s.clone()))).count();
    assert!(joined * 100 >= ours.len() * 99, "{joined} of {} sampled requests continued by the origin", ours.len());
    // The origin's head sampler kept only what barrage marked sampled.
    assert_eq!(theirs.len(), ours.len(), "the origin traced exactly the sampled requests");
    let ids: std::collections::HashSet<&String> = ours.iter().map(|(t, _, _)| t).collect();
    // The duration's exemplars name sampled requests too.
    let received = receiver.received();
    let durations = metrics(&received, "http", "http.client.request.duration");
    let exemplars: Vec<&Value> = points(&durations, "exponentialHistogram")
        .iter()
        .flat_map(|p| p["exemplars"].as_array().into_iter().flatten())
        .collect();
    assert!(!exemplars.is_empty(), "exemplars on the request duration");
    for e in exemplars {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(e["traceId"].as_str().unwrap()).unwrap();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert!(ids.contains(&hex), "exemplar {e} is a sampled request's");
    }
    let slowest = report["trace_context"]["slowest"].as_array().unwrap();
    assert!(!slowest.is_empty());
    for e in slowest {
        assert!(ids.contains(&e["trace_id"].as_str().unwrap().to_string()), "exemplar {e} has a span");
    }
}

/// An experiment exports each case's run, its sampled requests' spans too; a case that
/// asks for an export of its own is refused, naming the flag.
#[test]
fn an_experiment_exports_every_case_and_refuses_a_cases_own_export() {
    let received_dir = tempfile::tempdir().unwrap();
    let Some(receiver) = Receiver::start(received_dir.path(), &[]) else { return };
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.toml");
    let text = format!(
        "[base]\nurl = \"{}\"\nrequests = 200\nrate = 400\ntrace-sample = 0.5\n\n[factors.workers]\none = {{ max-in-flight = 1 }}\ntwo = {{ max-in-flight = 2 }}\n",
        o.url()
    );
    std::fs::write(&file, text).unwrap();
    let out = barrage()
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .arg("experiment")
        .arg(&file)
        .arg("-o")
        .arg(dir.path().join("out"))
        .args(["--format", "json", "--otlp", &format!("http://127.0.0.1:{}", receiver.http)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let received = receiver.received();
    let sent = metrics(&received, "http", "barrage.requests.sent");
    let total: u64 = points(&sent, "sum").iter().map(|p| int(&p["asInt"])).sum();
    assert_eq!(total, 400, "both cases' requests");
    let spans = spans_by_service(&received);
    // 400 requests × 0.5: within 5 standard deviations (10 each).
    assert!((150..=250).contains(&spans["barrage"].len()), "{}", spans["barrage"].len());
    std::fs::write(
        &file,
        format!(
            "[base]\nurl = \"{}\"\nrequests = 20\n\n[factors.export]\nmine = {{ otlp = \"http://127.0.0.1:1\" }}\n",
            o.url()
        ),
    )
    .unwrap();
    let out = barrage().arg("experiment").arg(&file).arg("--dry-run").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--otlp") && stderr.lines().count() == 1, "{stderr}");
}
