//! `--trace-context` on the wire, checked where the requests arrive: the built-in origin's
//! access log (which ends a line with the `traceparent` a request carried) over HTTP/1.1,
//! HTTP/2 (h2c, with and without `--streams`), HTTP/3 and a flow's steps, and nginx's
//! access log through the testbed's balancer. Each id must lead back, by the run id in the
//! results file, to a distinct request of the run, its sampled flag as the run's sampling
//! predicts; `barrage report --trace-id` finds a request again.

use crate::testbed::Testbed;
use crate::util::{barrage, origin};
use barrage_metrics::file::ResultsReader;
use barrage_metrics::trace::{Sampling, SpanId, TraceId, TraceKey};
use barrage_server::{RunningServer, ServeConfig};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Requests of each run.
const N: u64 = 200;
/// The share sampled.
const SAMPLE: f64 = 0.25;

/// A `traceparent` as it arrived: its trace, span and sampled flag.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Arrived {
    trace: TraceId,
    span: SpanId,
    sampled: bool,
}

/// Parses a W3C version 00 `traceparent`, strictly: lowercase hex, both ids not zero.
fn parse(tp: &str) -> Arrived {
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "{tp}");
    let hex =
        |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    assert!(parts[0] == "00" && hex(parts[1], 32) && hex(parts[2], 16), "{tp}");
    assert!(parts[3] == "00" || parts[3] == "01", "{tp}");
    let arrived = Arrived {
        trace: parts[1].parse().unwrap(),
        span: SpanId(u64::from_str_radix(parts[2], 16).unwrap()),
        sampled: parts[3] == "01",
    };
    assert!(arrived.trace.0 != 0 && arrived.span.0 != 0, "{tp}");
    arrived
}

/// The built-in origin with an access log in `dir` (and `config`'s other settings).
fn logging_origin(dir: &Path, config: ServeConfig) -> (RunningServer, PathBuf) {
    let log = dir.join("access.log");
    (origin(ServeConfig { access_log: Some(log.clone()), ..config }), log)
}

/// The `traceparent`s an origin's access log holds, once the origin is shut down (which
/// writes the log out): a line without one is `None`.
fn origin_saw(o: RunningServer, log: &Path) -> Vec<Option<String>> {
    o.shutdown();
    let text = std::fs::read_to_string(log).unwrap();
    // time method path status bytes µs [traceparent]
    text.lines().map(|l| l.split(' ').nth(6).map(str::to_string)).collect()
}

/// `barrage run ARGS -o DIR/NAME.brg --format json`, successful: the results file and the
/// summary.
fn run(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, serde_json::Value) {
    let out = dir.join(format!("{name}.brg"));
    let result = barrage().arg("run").args(args).arg("-o").arg(&out).args(["--format", "json"]).output().unwrap();
    assert!(result.status.success(), "{name}: {}", String::from_utf8_lossy(&result.stderr));
    (out, serde_json::from_slice(&result.stdout).unwrap())
}

/// The trace key of the run whose results are `file`.
fn key_of(file: &Path) -> TraceKey {
    let reader = ResultsReader::open(file).unwrap();
    TraceKey::of_run(&reader.header().launch.run_id).expect("a run id of 32 hex digits")
}

/// Checks the `traceparent`s that arrived from a run of `n` plain requests with
/// `--trace-sample SAMPLE` (results in `file`, summary `s`): every request had one, each
/// trace id leads back to a distinct number in 0..n, its span is attempt 1's, its flag is
/// what the run's sampling says, and the share sampled is near SAMPLE. Returns them by
/// number.
fn check_plain(saw: &[Option<String>], file: &Path, s: &serde_json::Value, n: u64) -> BTreeMap<u64, Arrived> {
    assert_eq!(saw.len() as u64, n, "every request arrived once");
    let key = key_of(file);
    let sampling = Sampling::new(SAMPLE).unwrap();
    let mut by_number = BTreeMap::new();
    for tp in saw {
        let a = parse(tp.as_deref().expect("every request carried a traceparent"));
        let number = key.number_of(a.trace).expect("a trace id of this run");
        assert!(number < n, "number {number}");
        assert_eq!(a.span, key.span_id(number, 0, 1), "request {number}'s span");
        assert_eq!(a.sampled, sampling.sampled(a.trace), "request {number}'s flag");
        assert!(by_number.insert(number, a).is_none(), "request {number} twice");
    }
    let sampled = by_number.values().filter(|a| a.sampled).count() as u64;
    // Every number of the stream was sent, so the count is exactly the sampling's...
    assert_eq!(sampled, (0..n).filter(|&k| sampling.sampled(key.trace_id(k))).count() as u64);
    // ...which is binomial around n × SAMPLE (5 standard deviations either side).
    let sd = (n as f64 * SAMPLE * (1.0 - SAMPLE)).sqrt();
    assert!((sampled as f64 - n as f64 * SAMPLE).abs() <= 5.0 * sd, "{sampled} of {n} sampled");
    let t = &s["trace_context"];
    assert_eq!((t["sample"].as_f64(), t["requests_sampled"].as_u64()), (Some(SAMPLE), Some(sampled)), "{t}");
    by_number
}

#[test]
fn every_http1_request_carries_its_own_traceparent_and_the_report_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let (o, log) = logging_origin(dir.path(), ServeConfig::default());
    let url = o.url();
    let reqlog = dir.path().join("log.csv");
    let args = ["--rate", "400", "-n", "200", "--trace-context", "--trace-sample", "0.25", "--log"];
    let (file, s) = run(dir.path(), "h1", &[&args[..], &[reqlog.to_str().unwrap(), &url]].concat());
    let arrived = check_plain(&origin_saw(o, &log), &file, &s, N);
    // HTTP/1.1: `traceparent: ` and 55 bytes and CRLF (70), then `tracestate: barrage=`
    // and 16 hex digits, `,ot=th:c` and CRLF (46).
    assert_eq!(s["trace_context"]["header_bytes_per_request"].as_u64(), Some(116), "{}", s["trace_context"]);
    // The request log says the same ids, each row its request's.
    let text = std::fs::read_to_string(&reqlog).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    assert_eq!(header[header.len() - 2..], ["trace_id", "sampled"]);
    let key = key_of(&file);
    let logged: HashSet<u64> = text
        .lines()
        .skip(1)
        .map(|row| {
            let mut cols = row.rsplit(',');
            let sampled = cols.next().unwrap() == "1";
            let number = key.number_of(cols.next().unwrap().parse().unwrap()).unwrap();
            assert_eq!(arrived[&number].sampled, sampled, "{row}");
            number
        })
        .collect();
    assert_eq!(logged.len() as u64, N);
    // The report finds request 17 from the traceparent the origin saw, and says when it was
    // due: 17 / 400 s after the start, as the log's intended_unix_us says.
    let tp = &arrived[&17];
    let whole = format!("00-{}-{}-{}", tp.trace, tp.span, if tp.sampled { "01" } else { "00" });
    let out = barrage().args(["report", "--trace-id", &whole, "--log"]).arg(&reqlog).arg(&file).output().unwrap();
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run_id = ResultsReader::open(&file).unwrap().header().launch.run_id.clone();
    assert!(found.starts_with(&format!("trace {}: request 17 of run {run_id}\n", tp.trace)), "{found}");
    let row = text.lines().find(|r| r.contains(&tp.trace.to_string())).unwrap();
    let intended = row.split(',').nth(23).unwrap();
    assert!(found.contains(&format!("({intended} µs since the Unix epoch)")), "{found}\n{row}");
    assert!(found.contains(row), "its log row: {found}");
    // An id of no run: exit 1, named; not an id: a usage error, exit 2.
    let other = format!("{:032x}", tp.trace.0 ^ (1 << 100));
    let out = barrage().args(["report", "--trace-id", &other]).arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&other) && err.contains("not found") && err.lines().count() == 1, "{err}");
    let out = barrage().args(["report", "--trace-id", "4bf9"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn every_http2_request_carries_its_own_traceparent_with_and_without_streams() {
    for (name, flags) in [("h2c", &["--http2", "-c", "2"][..]), ("streams", &["-c", "1", "--streams", "8"][..])] {
        let dir = tempfile::tempdir().unwrap();
        let (o, log) = logging_origin(dir.path(), ServeConfig::default());
        let url = o.url();
        let args = ["-n", "200", "--trace-sample", "0.25", &url];
        let (file, s) = run(dir.path(), name, &[flags, &args[..]].concat());
        assert_eq!(s["settings"]["plan"]["http2"], true, "{name}");
        check_plain(&origin_saw(o, &log), &file, &s, N);
        // Two HPACK literals with literal names, no Huffman: 1 + 1 + 11 + 1 + 55, and
        // 1 + 1 + 10 + 1 + 32.
        assert_eq!(s["trace_context"]["header_bytes_per_request"].as_u64(), Some(114), "{name}");
    }
}

#[test]
fn every_http3_request_carries_its_own_traceparent() {
    let dir = tempfile::tempdir().unwrap();
    let (o, log) = logging_origin(dir.path(), ServeConfig { tls: true, http3: true, ..Default::default() });
    let (url, ca) = (o.url(), o.ca_path().unwrap().to_str().unwrap().to_string());
    let args = ["--http3", "--cacert", &ca, "-c", "2", "-n", "200", "--trace-context", "--trace-sample", "0.25", &url];
    let (file, s) = run(dir.path(), "h3", &args);
    check_plain(&origin_saw(o, &log), &file, &s, N);
}

#[test]
fn without_trace_context_no_traceparent_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (o, log) = logging_origin(dir.path(), ServeConfig::default());
    let url = o.url();
    let (_, s) = run(dir.path(), "off", &["-n", "20", "-c", "2", &url]);
    let saw = origin_saw(o, &log);
    assert_eq!(saw.len(), 20);
    assert!(saw.iter().all(Option::is_none), "{saw:?}");
    assert!(s["trace_context"].is_null(), "{}", s["trace_context"]);
    assert!(s["settings"]["plan"].get("trace").is_none(), "left out of the plan's view (and digest) when off");
}

/// A flow is one trace: its instance's id is the trace's number, each step a span of it
/// (`span_id(flow, step + 1, attempt)`), and the request log's flow_id says the same.
#[test]
fn a_flow_is_one_trace_and_its_steps_are_its_spans() {
    let dir = tempfile::tempdir().unwrap();
    let (o, log) = logging_origin(dir.path(), ServeConfig::default());
    let scenario = dir.path().join("s.toml");
    let addr = o.addr();
    std::fs::write(
        &scenario,
        format!("[[flow.f.step]]\nname = \"one\"\nurl = \"http://{addr}/bytes/1\"\n\n[[flow.f.step]]\nname = \"two\"\nurl = \"http://{addr}/bytes/2\"\n"),
    )
    .unwrap();
    let reqlog = dir.path().join("log.jsonl");
    let args = ["--scenario", scenario.to_str().unwrap(), "--rate", "40", "-d", "1s", "--trace-context", "--log"];
    let (file, s) = run(dir.path(), "flow", &[&args[..], &[reqlog.to_str().unwrap()]].concat());
    let saw = origin_saw(o, &log);
    let key = key_of(&file);
    let mut flows: BTreeMap<u64, Vec<SpanId>> = BTreeMap::new();
    for tp in &saw {
        let a = parse(tp.as_deref().expect("every step carried a traceparent"));
        assert!(a.sampled, "--trace-context alone samples everything");
        flows.entry(key.number_of(a.trace).unwrap()).or_default().push(a.span);
    }
    assert!(flows.len() >= 30, "about 40 flows: {}", flows.len());
    for (&flow, spans) in &flows {
        let mut spans = spans.clone();
        spans.sort_by_key(|s| s.0);
        let mut want = vec![key.span_id(flow, 1, 1), key.span_id(flow, 2, 1)];
        want.sort_by_key(|s| s.0);
        assert_eq!(spans, want, "flow {flow}: its two steps, one span each");
    }
    assert_eq!(s["trace_context"]["requests_sampled"].as_u64(), Some(saw.len() as u64));
    // The log's rows: each step's trace is its flow's.
    let text = std::fs::read_to_string(&reqlog).unwrap();
    for row in text.lines() {
        let row: serde_json::Value = serde_json::from_str(row).unwrap();
        let trace: TraceId = row["trace_id"].as_str().unwrap().parse().unwrap();
        assert_eq!(key.number_of(trace), row["flow_id"].as_u64(), "{row}");
        assert_eq!(row["sampled"], true);
    }
}

/// Through a real proxy: nginx (the testbed's balancer) logs the traceparent it received
/// and passes it on; the origin behind it logs the same.
#[test]
fn nginx_in_front_sees_and_passes_on_each_traceparent() {
    let Some(bed) = Testbed::up("nginx-lb", &[]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}bytes/10?traced", bed.url("nginx-lb"));
    let (file, _) = run(dir.path(), "proxied", &["-n", "30", "-c", "2", "--trace-context", &url]);
    let key = key_of(&file);
    let spec = |name: &str| bed.state.server(name).unwrap().spec.logs[0].clone();
    let numbers = |path: &Path, field: &str| -> Vec<u64> {
        let lines = lines_with(path, "/bytes/10?traced", 30);
        let tps = lines.iter().map(|l| l.split(' ').find_map(|w| w.strip_prefix(field)).unwrap_or("").to_string());
        tps.map(|tp| key.number_of(parse(&tp).trace).expect("this run's")).collect()
    };
    let mut at_nginx = numbers(&spec("nginx-lb"), "traceparent=");
    at_nginx.sort_unstable();
    assert_eq!(at_nginx, (0..30).collect::<Vec<_>>(), "nginx saw each request's own");
    // The origins log their own lines: time method path status bytes µs traceparent.
    let mut at_origins: Vec<u64> = ["origin-1", "origin-2"]
        .iter()
        .flat_map(|o| {
            let lines = lines_with(&spec(o), "/bytes/10?traced", 1);
            lines.into_iter().map(|l| key.number_of(parse(l.split(' ').nth(6).unwrap()).trace).unwrap())
        })
        .collect();
    at_origins.sort_unstable();
    assert_eq!(at_origins, at_nginx, "passed on unchanged");
}

/// Lines of `path` containing `needle`, once at least `n` are there or 10 s passed (a
/// log is written by its server in its own time: nginx at the request's end, the origin
/// within a second).
fn lines_with(path: &Path, needle: &str, n: usize) -> Vec<String> {
    let read = || {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines().filter(|l| l.contains(needle)).map(str::to_string).collect::<Vec<_>>()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while read().len() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    read()
}

/// Shards are runs of their own: each file's run id starts its own requests' trace ids, so
/// `report --trace-id` over both names the shard that sent the request.
#[test]
fn the_report_names_the_shard_whose_run_sent_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let (o, log) = logging_origin(dir.path(), ServeConfig::default());
    let url = o.url();
    let mut files = Vec::new();
    for shard in ["0/2", "1/2"] {
        let name = format!("shard{}", &shard[..1]);
        files.push(run(dir.path(), &name, &["--shard", shard, "-n", "20", "--rate", "200", "--trace-context", &url]).0);
    }
    let saw = origin_saw(o, &log);
    assert_eq!(saw.len(), 20);
    let keys = [key_of(&files[0]), key_of(&files[1])];
    for tp in &saw {
        let a = parse(tp.as_deref().unwrap());
        let (shard, number) = (0..2).find_map(|i| Some((i, keys[i].number_of(a.trace)?))).expect("one shard's");
        assert_eq!(number % 2, shard as u64, "shard {shard} sends the numbers of its lane");
    }
    let a = parse(saw[0].as_deref().unwrap());
    let out = barrage().args(["report", "--trace-id", &a.trace.to_string()]).args(&files).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let shard = usize::from(keys[1].number_of(a.trace).is_some());
    assert!(text.contains(&format!("{} (shard {shard}/2)", files[shard].display())), "{text}");
}

/// Bad values are usage errors, one line each, exit 2; key-value protocols, which have no
/// headers, refuse it.
#[test]
fn trace_flags_are_checked() {
    for (args, want) in [
        (&["--trace-sample", "0", "http://127.0.0.1:9/"][..], "--trace-sample"),
        (&["--trace-sample", "1.5", "http://127.0.0.1:9/"][..], "--trace-sample"),
        (&["--trace-context", "redis://127.0.0.1:9"][..], "no headers"),
    ] {
        let out = barrage().arg("run").args(args).args(["-n", "1"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// A retried request stays in its trace, each attempt a span of its own
/// (`span_id(number, 0, attempt)`), its sampled flag the trace's.
#[test]
fn each_attempt_of_a_retried_request_is_its_own_span() {
    let dir = tempfile::tempdir().unwrap();
    let (o, log) = logging_origin(dir.path(), ServeConfig { error_rate: 0.5, ..Default::default() });
    let url = o.url();
    let args = ["-n", "40", "-c", "2", "--retries", "3", "--retry-on", "5xx", "--backoff", "1ms..2ms"];
    let (file, _) = run(dir.path(), "retried", &[&args[..], &["--trace-sample", "0.5", &url]].concat());
    let key = key_of(&file);
    let mut attempts: BTreeMap<u64, Vec<Arrived>> = BTreeMap::new();
    for tp in origin_saw(o, &log) {
        let a = parse(tp.as_deref().unwrap());
        attempts.entry(key.number_of(a.trace).unwrap()).or_default().push(a);
    }
    assert_eq!(attempts.keys().copied().collect::<Vec<_>>(), (0..40).collect::<Vec<_>>());
    for (&n, seen) in &attempts {
        let spans: HashSet<u64> = seen.iter().map(|a| a.span.0).collect();
        let want: HashSet<u64> = (1..=seen.len() as u32).map(|a| key.span_id(n, 0, a).0).collect();
        assert_eq!(spans, want, "request {n}: one span per attempt, attempts 1..{}", seen.len());
        assert!(seen.iter().all(|a| a.sampled == seen[0].sampled), "request {n}: one flag for its trace");
    }
    assert!(attempts.values().any(|seen| seen.len() > 1), "half the answers fail: some request was retried");
}
