//! The renderers on a fixed run: golden files (regenerate with `UPDATE_GOLDEN=1`), the JSON
//! Schema, and the HdrHistogram interval log read back.
//!
//! The fixed run is in `common/`, shared with the HTML tests.

use barrage_metrics::file::{Mode, ResultsWriter, RunFooter, RunHeader};
use barrage_metrics::summary::{summarize, Warning, WarningKind};
use barrage_metrics::RunSummary;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::Histogram;
use std::time::Duration;

mod common;
use common::*;

#[test]
fn golden_text() {
    let (_dir, _, s) = fixture();
    golden("report.txt", &barrage_report::text(&s, false));
}

#[test]
fn golden_json() {
    let (_dir, _, s) = fixture();
    let json = barrage_report::json(&s);
    golden("summary.json", &json);
    // It reads back into the summary (floats may move by an ulp: serde_json's default parser
    // is not exactly round-trip).
    let back: RunSummary = serde_json::from_str(&json).unwrap();
    assert_eq!((&back.requests, &back.intervals, &back.status_codes), (&s.requests, &s.intervals, &s.status_codes));
}

#[test]
fn golden_csv() {
    let (_dir, _, s) = fixture();
    let csv = barrage_report::csv(&s);
    golden("intervals.csv", &csv);
    assert_eq!(csv.lines().count() as u64, INTERVALS + 1);
}

#[test]
fn fixture_exercises_the_report() {
    let (_dir, _, s) = fixture();
    assert_eq!(s.steps.len(), 2);
    assert!(s.latency_by_class.len() > 1);
    assert!(s.phases.values().any(|p| p.count == 0));
    assert!(s.requests.unfinished > 0 && s.requests.late > 0);
    assert!(s.latency.corrected.p99_us > s.latency.service.p99_us);
    assert!(s.warnings.len() >= 2, "{:?}", s.warnings);
}

#[test]
fn stale_connection_retries_are_shown_when_there_were_any() {
    let (_dir, _, mut s) = fixture();
    let line = |text: &str| text.lines().find(|l| l.contains("stale connection retries")).map(str::to_string);
    assert_eq!(line(&barrage_report::text(&s, false)), None);
    s.requests.stale_retries = 7;
    let text = line(&barrage_report::text(&s, false)).expect("a line in the text report");
    assert_eq!(text.split_whitespace().collect::<Vec<_>>(), ["stale", "connection", "retries", "7"]);
    let json: serde_json::Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    assert_eq!(json["requests"]["stale_retries"], 7);
    assert!(barrage_report::html(&barrage_report::Page::Run(&s)).contains("stale connection retries"));
    let sheet = format!("{:?}", barrage_report::summary_sheet(&s));
    assert!(sheet.contains("stale_connection_retries"), "{sheet}");
}

/// `--trace-context`'s figures: one line in the text report, `trace_context` in the JSON
/// (null without it), both kept to the schema.
#[test]
fn trace_context_is_one_line_and_a_json_object_in_the_schema() {
    let (_dir, _, mut s) = fixture();
    let validator = jsonschema::draft202012::new(&schema()).expect("the schema compiles");
    let valid = |json: &serde_json::Value| {
        let errors: Vec<String> = validator.iter_errors(json).map(|e| format!("{}: {e}", e.instance_path)).collect();
        assert!(errors.is_empty(), "{errors:#?}");
    };
    assert!(!barrage_report::text(&s, false).contains("Trace context"));
    let json: serde_json::Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    assert!(json["trace_context"].is_null());
    valid(&json);
    s.trace_context = Some(barrage_metrics::summary::TraceContextSummary {
        sample: 0.01,
        requests_sampled: 12,
        header_bytes_per_request: 129,
        slowest: Vec::new(),
    });
    let text = barrage_report::text(&s, false);
    let line = text.lines().find(|l| l.starts_with("Trace context")).expect("a line");
    assert_eq!(
        line,
        "Trace context  1.00% sampled (12 requests), traceparent and tracestate added 129 B to each request"
    );
    let json: serde_json::Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    assert_eq!(
        json["trace_context"],
        serde_json::json!({"sample": 0.01, "requests_sampled": 12, "header_bytes_per_request": 129, "slowest": []})
    );
    valid(&json);
}

/// HTTP/2's figures (connections by protocol, streams in use and the server's cap, stalls,
/// unprocessed stream retries) and its warnings show in every format, and the JSON keeps
/// to the schema.
#[test]
fn stream_figures_are_shown_in_every_format() {
    let (_dir, _, mut s) = fixture();
    assert!(!barrage_report::text(&s, false).contains("streams in use"));
    s.requests.protocols = [("HTTP/1.1".to_string(), 1), ("HTTP/2".to_string(), 3)].into();
    s.requests.stream_retries = 4;
    s.streams = Some(barrage_metrics::summary::StreamSummary {
        streams_max: 5,
        stream_cap: Some(5),
        send_stalls: 2,
        recv_stalls: 9,
        http1_fallbacks: 1,
    });
    let warning = "HTTP/2 was asked, but the server chose HTTP/1.1 (ALPN) on 1 of 4 connection(s)";
    s.warnings.push(Warning::new(WarningKind::Http1Fallback, warning));
    let text = barrage_report::text(&s, false);
    assert_eq!(row(&text, "HTTP/1.1 connections"), ["HTTP/1.1", "connections", "1", "HTTP/2", "connections", "3"]);
    assert_eq!(row(&text, "streams in use"), ["streams", "in", "use", "(most)", "5", "(server", "allows", "5)"]);
    assert_eq!(row(&text, "flow-control stalls sending")[3..], ["2", "flow-control", "stalls", "receiving", "9"]);
    assert_eq!(row(&text, "unprocessed stream retries"), ["unprocessed", "stream", "retries", "4"]);
    assert!(text.contains(warning), "{text}");
    let json: serde_json::Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    assert_eq!(json["requests"]["protocols"]["HTTP/2"], 3);
    assert_eq!(json["requests"]["stream_retries"], 4);
    assert_eq!((json["streams"]["streams_max"].as_u64(), json["streams"]["stream_cap"].as_u64()), (Some(5), Some(5)));
    assert_eq!((json["streams"]["send_stalls"].as_u64(), json["streams"]["recv_stalls"].as_u64()), (Some(2), Some(9)));
    assert!(json["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "http1_fallback" && w["text"] == warning));
    let validator = jsonschema::draft202012::new(&schema()).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| format!("{}: {e}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let html = barrage_report::html(&barrage_report::Page::Run(&s));
    for shown in ["HTTP/2 connections", "streams in use (most)", "flow-control stalls receiving", warning] {
        assert!(html.contains(shown), "{shown}");
    }
    let sheet = barrage_report::summary_sheet(&s);
    let value = |metric: &str| {
        let row = sheet.rows.iter().find(|r| r[0] == barrage_report::Cell::from(metric));
        row.unwrap_or_else(|| panic!("no {metric}"))[1].clone()
    };
    use barrage_report::Cell;
    assert_eq!(value("connections_http2"), Cell::from(3u64));
    assert_eq!(value("connections_http1_1"), Cell::from(1u64));
    assert_eq!(value("stream_cap"), Cell::from(5u64));
    assert_eq!(value("recv_stalls"), Cell::from(9u64));
    assert_eq!(value("http1_fallbacks"), Cell::from(1u64));
    assert_eq!(value("stream_retries"), Cell::from(4u64));
    assert!(sheet.rows.iter().any(|r| r[0] == Cell::from("warning") && r[1] == Cell::from(warning)));
}

/// An HTTP/3 run's connections and streams show the way HTTP/2's do, in the same rows,
/// keys and columns of every format: no row of HTTP/3's own.
#[test]
fn http3_connections_and_streams_are_shown_as_http2s_are() {
    let (_dir, _, mut s) = fixture();
    s.requests.protocols = [("HTTP/3".to_string(), 4)].into();
    s.streams = Some(barrage_metrics::summary::StreamSummary {
        streams_max: 100,
        stream_cap: Some(100),
        send_stalls: 0,
        recv_stalls: 3,
        http1_fallbacks: 0,
    });
    let text = barrage_report::text(&s, false);
    assert_eq!(row(&text, "HTTP/3 connections"), ["HTTP/3", "connections", "4"]);
    assert_eq!(row(&text, "streams in use"), ["streams", "in", "use", "(most)", "100", "(server", "allows", "100)"]);
    assert_eq!(row(&text, "flow-control stalls sending")[3..], ["0", "flow-control", "stalls", "receiving", "3"]);
    let json: serde_json::Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    assert_eq!(json["requests"]["protocols"], serde_json::json!({"HTTP/3": 4}));
    assert_eq!(json["streams"]["stream_cap"], 100);
    let validator = jsonschema::draft202012::new(&schema()).expect("the schema compiles");
    assert!(validator.is_valid(&json));
    let html = barrage_report::html(&barrage_report::Page::Run(&s));
    for shown in ["HTTP/3 connections", "streams in use (most)"] {
        assert!(html.contains(shown), "{shown}");
    }
    let sheet = barrage_report::summary_sheet(&s);
    let has = |metric: &str, value: barrage_report::Cell| {
        sheet.rows.iter().any(|r| r[0] == barrage_report::Cell::from(metric) && r[1] == value)
    };
    assert!(has("connections_http3", 4u64.into()) && has("stream_cap", 100u64.into()), "{sheet:?}");
}

fn schema() -> serde_json::Value {
    let text = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/summary.schema.json"));
    serde_json::from_str(text).expect("the schema is JSON")
}

#[test]
fn json_matches_schema() {
    let schema = schema();
    jsonschema::meta::validate(&schema).expect("the schema is a valid JSON Schema");
    let validator = jsonschema::draft202012::new(&schema).expect("the schema compiles");
    let (_dir, _, s) = fixture();
    let instance: serde_json::Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    let errors: Vec<String> = validator.iter_errors(&instance).map(|e| format!("{}: {e}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}");

    // The summary of a run that finished no request is valid too.
    let path = _dir.path().join("empty.brg");
    let header = RunHeader {
        barrage_version: "golden".into(),
        started_unix_ms: START_MS,
        host: "golden".into(),
        boot_id: "golden-boot".into(),
        mode: Mode::Closed,
        urls: vec![],
        settings_json: "not json".into(),
        steps: vec![],
        threads: 1,
        insecure: true,
        groups: Vec::new(),
        launch: Default::default(),
    };
    ResultsWriter::create(&path, &header).unwrap().finish(&RunFooter::default()).unwrap();
    let empty = summarize(&[path]).unwrap();
    assert_eq!(empty.requests.total, 0);
    let instance: serde_json::Value = serde_json::from_str(&barrage_report::json(&empty)).unwrap();
    let errors: Vec<String> = validator.iter_errors(&instance).map(|e| format!("{}: {e}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn schema_rejects_what_it_should() {
    let validator = jsonschema::draft202012::new(&schema()).unwrap();
    let (_dir, _, s) = fixture();
    let good: serde_json::Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    type Mutation = (&'static str, fn(&mut serde_json::Value));
    let mutations: [Mutation; 7] = [
        ("another version", |v| v["version"] = 1.into()),
        ("a warning as a plain string (version 1)", |v| v["warnings"] = serde_json::json!(["careful"])),
        ("a warning of an unknown kind", |v| v["warnings"] = serde_json::json!([{"kind": "vague", "text": "careful"}])),
        ("an unknown field", |v| v["requests"]["extra"] = 1.into()),
        ("a missing field", |v| {
            v["latency"]["corrected"].as_object_mut().unwrap().remove("p99_us");
        }),
        ("a negative count", |v| v["requests"]["total"] = (-1).into()),
        ("an unknown mode", |v| v["mode"] = "sideways".into()),
    ];
    for (what, mutate) in mutations {
        let mut bad = good.clone();
        mutate(&mut bad);
        assert!(!validator.is_valid(&bad), "the schema accepts {what}");
    }
}

/// Every property the schema declares has a description, and every object is closed.
#[test]
fn schema_documents_every_field() {
    fn walk(node: &serde_json::Value, at: &str, problems: &mut Vec<String>) {
        let Some(obj) = node.as_object() else { return };
        if obj.get("type").and_then(|t| t.as_str()) == Some("object") && !obj.contains_key("additionalProperties") {
            problems.push(format!("{at}: object without additionalProperties"));
        }
        if let Some(props) = obj.get("properties").and_then(|p| p.as_object()) {
            let required: Vec<&str> = obj
                .get("required")
                .and_then(|r| r.as_array())
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str())
                .collect();
            for (name, prop) in props {
                let has_description =
                    prop.get("description").is_some_and(|d| d.as_str().is_some_and(|d| !d.is_empty()));
                if !has_description {
                    problems.push(format!("{at}.{name}: no description"));
                }
                if !required.contains(&name.as_str()) {
                    problems.push(format!("{at}.{name}: not required (serde always writes it)"));
                }
            }
        }
        for (key, child) in obj {
            walk(child, &format!("{at}/{key}"), problems);
        }
    }
    let mut problems = Vec::new();
    walk(&schema(), "#", &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Standard base64 (with padding), enough to read the histograms of an interval log back.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut out = Vec::new();
    for chunk in text.trim_end_matches('=').as_bytes().chunks(4) {
        let bits = chunk.iter().enumerate().fold(0u32, |acc, (k, &c)| acc | u32::from(value(c)) << (18 - 6 * k));
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[test]
fn hdr_log_reads_back() {
    let (_dir, path, _) = fixture();
    let mut log = Vec::new();
    barrage_report::write_hdr_log(&[path], &mut log).unwrap();
    let text = String::from_utf8(log.clone()).unwrap();
    assert!(text.contains("#[MaxValueDivisor: 1000.000]"), "{text}");

    let mut start = None;
    let mut corrected = Vec::new();
    let mut service = Vec::new();
    for entry in IntervalLogIterator::new(&log) {
        match entry.expect("the log parses") {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(_) => panic!("no BaseTime is written"),
            LogEntry::Interval(h) => {
                let hist: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                    .deserialize(&mut &base64_decode(h.encoded_histogram())[..])
                    .expect("the histogram decodes");
                assert!((h.max() - hist.max() as f64 / 1000.0).abs() < 0.001, "max in ms");
                let row = (h.start_timestamp(), h.duration(), hist);
                match h.tag().map(|t| t.as_str()) {
                    None => corrected.push(row),
                    Some(barrage_report::SERVICE_TAG) => service.push(row),
                    Some(other) => panic!("unexpected tag {other}"),
                }
            }
        }
    }
    assert_eq!(start, Some(Duration::from_millis(START_MS)));
    assert_eq!(corrected.len() as u64, INTERVALS);
    assert_eq!(service.len() as u64, INTERVALS);
    for i in 0..INTERVALS {
        let want = interval(i).recorder;
        for (rows, hist) in [(&corrected, &want.corrected), (&service, &want.service)] {
            let (at, length, got) = &rows[i as usize];
            assert_eq!(*at, Duration::from_secs(i));
            assert_eq!(*length, Duration::from_secs(1));
            assert_eq!(got.len(), hist.len());
            assert_eq!(got, hist, "interval {i}: the same histogram, value for value");
        }
    }
}

#[test]
fn hdr_log_merges_files_like_summarize() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.brg"), dir.path().join("b.brg"));
    write_results(&a);
    write_results(&b);
    let mut log = Vec::new();
    barrage_report::write_hdr_log(&[a.clone(), b.clone()], &mut log).unwrap();
    let total: u64 = IntervalLogIterator::new(&log)
        .filter_map(|e| match e.unwrap() {
            LogEntry::Interval(h) if h.tag().is_none() => Some(h),
            _ => None,
        })
        .map(|h| {
            let hist: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                .deserialize(&mut &base64_decode(h.encoded_histogram())[..])
                .unwrap();
            hist.len()
        })
        .sum();
    // One run's file twice, merged anyway as `report --force` does: the log adds up as the
    // summary does.
    let s = barrage_metrics::summary::summarize_with(&[a, b], true).unwrap();
    assert_eq!(total, s.latency.corrected.count);
    assert_eq!(total, 2 * 300);
}
