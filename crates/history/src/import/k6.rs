//! k6's end-of-test summary as JSON, in any of its three shapes:
//!
//! - `--summary-export=FILE`: `metrics.http_req_duration` holds the statistics themselves
//!   (`avg`, `med`, `p(90)`, ...), `metrics.http_req_failed` a rate's `value` and `passes`;
//! - `handleSummary`'s data written as JSON (`JSON.stringify(data)`): each metric's
//!   statistics under `values`, a rate's as `rate` and `passes`, the run's length in
//!   `state.testRunDurationMs`;
//! - the machine-readable summary: `results.metrics` a list of `{name, values}`, a rate's
//!   `rate` and `matches`, the length in `config.duration` (s), the end in
//!   `metadata.generatedAt`.
//!
//! Latencies are ms there (k6's own unit, whatever `summaryTimeUnit` shows). Only the
//! statistics k6 was asked for are there: by default `avg`, `med`, `p(90)`, `p(95)` and
//! `max` (p99 needs `--summary-trend-stats` with `p(99)`). A request failed when k6's
//! `http_req_failed` says so (by default a status outside 200..399 or no response), and the
//! throughput is `http_reqs`' rate less the failed share. There are no intervals: a summary
//! keeps no histogram. Without `generatedAt` the run is taken to have ended when the file
//! was written. k6 does not correct for coordinated omission.

use super::lines::{self, MAX_FILE_BYTES};
use super::Found;
use crate::HistoryError;
use serde_json::Value;
use std::io::Read;
use std::path::Path;

/// The largest summary read, 16 MiB: a summary with thousands of groups and checks is a few
/// MiB, and it is parsed whole.
const MAX_SUMMARY_BYTES: u64 = 16 << 20;

/// Reads the k6 summary at `path`.
pub(super) fn read(path: &Path) -> Result<Found, HistoryError> {
    let doc = parse(path)?;
    let Some(duration) = metric(&doc, "http_req_duration") else {
        return Err(lines::error(path, None, "no http_req_duration: not k6's summary of a test of HTTP requests"));
    };
    let mut found = Found::default();
    for (figure, keys) in [
        ("mean", &["avg"][..]),
        ("p50", &["med", "p(50)"][..]),
        ("p90", &["p(90)"][..]),
        ("p95", &["p(95)"][..]),
        ("p99", &["p(99)"][..]),
        ("p999", &["p(99.9)"][..]),
        ("max", &["max"][..]),
    ] {
        found.set_ms(figure, keys.iter().find_map(|k| number(duration, k)));
    }
    let requests = metric(&doc, "http_reqs");
    let count = requests.and_then(|r| number(r, "count"));
    let duration_s = number(&doc, "/state/testRunDurationMs")
        .map(|ms| ms / 1000.0)
        .or_else(|| number(&doc, "/config/duration"))
        .or_else(|| Some(count? / requests.and_then(|r| number(r, "rate"))?));
    let rate = requests.and_then(|r| number(r, "rate")).or_else(|| Some(count? / duration_s.filter(|&d| d > 0.0)?));
    let failed = metric(&doc, "http_req_failed");
    let failed_rate = failed.and_then(|f| number(f, "rate").or_else(|| number(f, "value")));
    if let Some(rate) = rate {
        found.set("throughput", rate * (1.0 - failed_rate.unwrap_or(0.0)));
    }
    if let Some(share) = failed_rate {
        found.set("success", 1.0 - share);
        found.set("error_ratio", share);
        let errors = failed.and_then(|f| number(f, "passes").or_else(|| number(f, "matches")));
        if let Some(n) = errors.or_else(|| Some((count? * share).round())) {
            found.set("errors", n);
        }
        if share >= 1.0 {
            found.failure = Some("no request succeeded".into());
        }
    }
    found.duration_s = duration_s;
    found.started_ms = generated_ms(&doc).map(|end| end.saturating_sub((duration_s.unwrap_or(0.0) * 1000.0) as u64));
    Ok(found)
}

/// The summary, parsed whole (it is bounded).
fn parse(path: &Path) -> Result<Value, HistoryError> {
    let mut text = Vec::new();
    lines::open(path)?
        .take(MAX_SUMMARY_BYTES.min(MAX_FILE_BYTES) + 1)
        .read_to_end(&mut text)
        .map_err(|e| lines::error(path, None, e.to_string()))?;
    if text.len() as u64 > MAX_SUMMARY_BYTES {
        return Err(lines::error(path, None, "larger than the 16 MiB a k6 summary is read to"));
    }
    serde_json::from_slice(&text).map_err(|e| {
        // At a line's column 0 it went wrong at the end of the line before (a file cut off
        // after a line break).
        let line = if e.column() == 0 { e.line().saturating_sub(1) } else { e.line() };
        let why = if e.is_eof() { "cut off" } else { "not k6's JSON summary" };
        lines::error(path, (line > 0).then_some(line as u64), format!("{why}: {e}"))
    })
}

/// The statistics of the metric `name`, in whichever shape the summary has.
fn metric<'a>(doc: &'a Value, name: &str) -> Option<&'a Value> {
    if let Some(m) = doc.get("metrics").and_then(|m| m.get(name)) {
        return Some(m.get("values").unwrap_or(m));
    }
    let list = doc.pointer("/results/metrics")?.as_array()?;
    list.iter().find(|m| m.get("name").and_then(Value::as_str) == Some(name))?.get("values")
}

/// The number at `key` of `v` (a JSON pointer when it starts with `/`).
fn number(v: &Value, key: &str) -> Option<f64> {
    let at = if key.starts_with('/') { v.pointer(key) } else { v.get(key) };
    at.and_then(Value::as_f64).filter(|n| n.is_finite())
}

/// When the machine-readable summary was written, ms since the epoch.
fn generated_ms(doc: &Value) -> Option<u64> {
    let at = doc.pointer("/metadata/generatedAt")?.as_str()?;
    let t = chrono::DateTime::parse_from_rfc3339(at).ok()?;
    u64::try_from(t.timestamp_millis()).ok()
}
