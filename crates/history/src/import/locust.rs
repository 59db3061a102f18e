//! Locust's `PREFIX_stats.csv` (`--csv PREFIX`): a header (`Type,Name,Request Count,
//! Failure Count,Median Response Time,Average Response Time,Min Response Time,Max Response
//! Time,Average Content Size,Requests/s,Failures/s,50%,66%,...,100%`), a row per request
//! name and the `Aggregated` row of them all, which is what is read. Columns are found by
//! name; times are ms.
//!
//! The figures are the row's: its percentiles (Locust rounds response times over 100 ms to
//! two significant digits before it counts them, so they are that coarse), its mean and its
//! exact max; the throughput is `Requests/s` less `Failures/s`. There are no intervals: the
//! file keeps no histogram. Each row must have the header's fields. The run's length is its
//! requests over their rate, and its start that long before the file was written. Locust
//! does not correct for coordinated omission.

use super::lines::{self, Lines, Record, Records};
use super::Found;
use crate::HistoryError;
use std::path::Path;

/// Whether `line` is the header of Locust's statistics CSV.
pub(super) fn is_header(line: &str) -> bool {
    let f = lines::split_line(line.trim_start_matches('\u{feff}'), b',');
    f.len() >= 4 && f[0] == "Type" && f[1] == "Name" && f[2] == "Request Count"
}

/// Reads Locust's statistics CSV at `path`.
pub(super) fn read(path: &Path) -> Result<Found, HistoryError> {
    let mut records = Records::new(Lines::new(lines::open(path)?, path), b',');
    let mut header = Record::default();
    if !records.next_into(&mut header)? {
        return Err(lines::error(path, None, "no statistics in it"));
    }
    let names: Vec<String> =
        (0..header.len()).map(|i| header.get(i).trim_start_matches('\u{feff}').to_string()).collect();
    if !is_header(&header.text().replace('\u{feff}', "")) {
        return Err(lines::error(
            path,
            Some(header.line),
            "not the header of Locust's statistics CSV (Type,Name,Request Count,...)",
        ));
    }
    let (mut rec, mut total) = (Record::default(), None);
    while records.next_into(&mut rec)? {
        if rec.len() != names.len() {
            let why = format!("{} fields, not the header's {}", rec.len(), names.len());
            return Err(lines::error(path, Some(rec.line), why));
        }
        if rec.get(1) == "Aggregated" {
            total = Some(std::mem::take(&mut rec));
        }
    }
    let row = total.ok_or_else(|| lines::error(path, None, "no Aggregated row: cut off?"))?;
    figures(path, &names, &row)
}

/// The figures of the `Aggregated` row.
fn figures(path: &Path, names: &[String], row: &Record) -> Result<Found, HistoryError> {
    let col = |name: &str| -> Option<f64> {
        let at = names.iter().position(|n| n == name)?;
        row.number::<f64>(at).filter(|v| v.is_finite())
    };
    let bad = |what: &str| lines::error(path, Some(row.line), format!("the Aggregated row's {what} is not a number"));
    let requests = col("Request Count").ok_or_else(|| bad("Request Count"))?;
    let failures = col("Failure Count").ok_or_else(|| bad("Failure Count"))?;
    let mut found = Found::default();
    found.set_ms("mean", col("Average Response Time"));
    found.set_ms("p50", col("50%").or_else(|| col("Median Response Time")));
    found.set_ms("p90", col("90%"));
    found.set_ms("p95", col("95%"));
    found.set_ms("p99", col("99%"));
    found.set_ms("p999", col("99.9%"));
    found.set_ms("max", col("Max Response Time").or_else(|| col("100%")));
    if let Some(rate) = col("Requests/s") {
        found.set("throughput", rate - col("Failures/s").unwrap_or(0.0));
        found.duration_s = (rate > 0.0).then(|| requests / rate);
    }
    let (requests, failures) = (requests.max(0.0) as u64, failures.max(0.0) as u64);
    found.counts(requests, requests.saturating_sub(failures));
    Ok(found)
}
