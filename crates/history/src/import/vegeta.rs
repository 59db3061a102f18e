//! Vegeta's results, as `vegeta encode` writes them: CSV without a header (`timestamp in ns,
//! code, latency in ns, bytes out, bytes in, error, base64 body, attack, seq, method, url,
//! base64 headers`; older Vegetas wrote only the first seven), or JSON lines
//! (`{"attack":..,"seq":..,"code":..,"timestamp":"RFC 3339","latency":ns,...}`).
//!
//! Every request's latency goes into its second's histogram. A request succeeded when its
//! code is 2xx or 3xx and it has no error (Vegeta sets one for every other code), and the
//! throughput is successes over the time from the first start to the last end, as
//! `vegeta report` computes it. Vegeta does not correct for coordinated omission: its
//! latency is service time, kept as both.

use super::bins::Bins;
use super::lines::{self, Lines, Record, Records};
use super::{Found, Targets};
use crate::HistoryError;
use std::path::Path;

/// Whether `line` is a result of Vegeta's CSV: at least seven fields, the first three
/// numbers (a timestamp in ns, a code, a latency).
pub(super) fn is_csv_line(line: &str) -> bool {
    let f = lines::split_line(line, b',');
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    f.len() >= 7 && f[0].len() >= 10 && digits(&f[0]) && digits(&f[1]) && digits(&f[2])
}

/// Reads Vegeta's results at `path`, CSV or JSON lines as its first line says.
pub(super) fn read(path: &Path) -> Result<Found, HistoryError> {
    let first = Lines::new(lines::open(path)?, path).first_nonblank()?;
    let json = first.ok_or_else(|| lines::error(path, None, "no results in it"))?.trim_start().starts_with('{');
    let mut bins = Bins::new();
    let mut targets = Targets::default();
    if json {
        read_json(path, &mut bins, &mut targets)?;
    } else {
        read_csv(path, &mut bins, &mut targets)?;
    }
    if bins.completed() == 0 {
        return Err(lines::error(path, None, "no results in it"));
    }
    let mut found = bins.finish();
    found.target = targets.name();
    Ok(found)
}

/// One result: start (ns since the epoch), code, latency (ns), error.
fn record(bins: &mut Bins, start_ns: i64, code: u64, latency_ns: u64, error: &str) {
    let ok = (200..400).contains(&code) && error.is_empty();
    bins.record(start_ns.div_euclid(1000), latency_ns.saturating_add(500) / 1000, ok);
}

fn read_csv(path: &Path, bins: &mut Bins, targets: &mut Targets) -> Result<(), HistoryError> {
    let mut records = Records::new(Lines::new(lines::open(path)?, path), b',');
    let (mut rec, mut width) = (Record::default(), None);
    while records.next_into(&mut rec)? {
        let bad = |why: &str| lines::error(path, Some(rec.line), format!("not a Vegeta result: {why}"));
        // Every result has the first one's fields (12; 7 or 9 of older Vegetas): a line cut
        // off has fewer.
        let want = *width.get_or_insert(rec.len());
        if rec.len() < 7 || rec.len() != want {
            return Err(bad(&format!("{} fields, not {}", rec.len(), want.max(7))));
        }
        let start: i64 = rec.number(0).ok_or_else(|| bad("its timestamp is not a number of ns"))?;
        let code: u64 = rec.number(1).ok_or_else(|| bad("its code is not a number"))?;
        let latency: u64 = rec.number(2).ok_or_else(|| bad("its latency is not a number of ns"))?;
        record(bins, start, code, latency, &rec.get(5));
        targets.see(&rec.get(10));
    }
    Ok(())
}

/// The fields of a JSON result read; the body and headers are skipped.
#[derive(serde::Deserialize)]
struct JsonResult {
    code: u64,
    timestamp: String,
    latency: u64,
    #[serde(default)]
    error: String,
    #[serde(default)]
    url: String,
}

fn read_json(path: &Path, bins: &mut Bins, targets: &mut Targets) -> Result<(), HistoryError> {
    let mut lines = Lines::new(lines::open(path)?, path);
    let mut line = String::new();
    while lines.read(&mut line)? {
        if line.trim().is_empty() {
            continue;
        }
        let r: Result<JsonResult, String> = serde_json::from_str(&line).map_err(|e| e.to_string());
        let r = r.map_err(|e| lines.error(format!("not a Vegeta result: {e}")))?;
        let start = chrono::DateTime::parse_from_rfc3339(&r.timestamp)
            .ok()
            .and_then(|t| t.timestamp_nanos_opt())
            .ok_or_else(|| lines.error(format!("not a Vegeta result: timestamp '{}' is not RFC 3339", r.timestamp)))?;
        record(bins, start, r.code, r.latency, &r.error);
        targets.see(&r.url);
    }
    Ok(())
}
