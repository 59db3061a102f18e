//! HdrHistogram interval logs, as Java's `HistogramLogWriter` (jHiccup, Cassandra's
//! stress, ...) and the Rust crate's `IntervalLogWriter` write them:
//!
//! ```text
//! #[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 08:24:39 PDT 2015]
//! #[BaseTime: 0.000 (seconds since epoch)]
//! "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//! [Tag=NAME,]0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJ...
//! ```
//!
//! Each line's histogram (base64 of HdrHistogram's compressed V2 form) becomes an interval
//! as it is. The log does not say its values' unit: they are taken as µs, barrage's (a
//! jHiccup log's, in ns, reads 1000 times too slow). Histograms are decoded bounded
//! ([`decode_histogram`]: the inflated size and the declared width are checked before
//! anything is allocated) and re-homed into barrage's bounds, so a value past an hour is
//! refused. Older logs' V0 and V1 encodings are not read. Of a tagged log, the untagged
//! lines are read, or those of the tag asked for.
//!
//! Interval timestamps are seconds after `BaseTime` when there is one; without it, as
//! Java's `HistogramLogReader` decides, they are after `StartTime` when the first is more
//! than a year before it, and since the epoch otherwise. The counts have no failures: there
//! are no success figures, and the throughput is the count over the intervals' span.

use super::lines::{self, Lines};
use super::Found;
use crate::entry::{Interval, MAX_INTERVALS};
use crate::HistoryError;
use barrage_metrics::recorder::{decode_histogram, encode_histogram, new_histogram};
use base64::Engine;
use hdrhistogram::Histogram;
use std::path::Path;

/// The legend line before the intervals.
const LEGEND: &str = "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// Whether `text`, a file's first bytes, is an interval log: its header comments or
/// legend, or an interval line first.
pub(super) fn looks_like(text: &str) -> bool {
    text.lines().take(20).any(|l| {
        l.starts_with("#[StartTime:")
            || l.starts_with("#[BaseTime:")
            || l.starts_with("#[Histogram log format")
            || l.starts_with(LEGEND)
    }) || text
        .lines()
        .find(|l| !l.trim().is_empty())
        .and_then(parse_line)
        .is_some_and(|l| l.histogram.starts_with("HIST"))
}

/// An interval line: its tag, start and length (s) and base64 histogram.
struct Line<'a> {
    tag: Option<&'a str>,
    start_s: f64,
    length_s: f64,
    histogram: &'a str,
}

fn parse_line(line: &str) -> Option<Line<'_>> {
    let (tag, rest) = match line.strip_prefix("Tag=") {
        Some(r) => {
            let (t, rest) = r.split_once(',')?;
            (Some(t), rest)
        }
        None => (None, line),
    };
    let mut f = rest.splitn(4, ',');
    let start_s: f64 = f.next()?.trim().parse().ok()?;
    let length_s: f64 = f.next()?.trim().parse().ok()?;
    f.next()?.trim().parse::<f64>().ok()?;
    let histogram = f.next()?.trim();
    let finite = start_s.is_finite() && length_s.is_finite() && length_s >= 0.0;
    (finite && !histogram.is_empty()).then_some(Line { tag, start_s, length_s, histogram })
}

/// The seconds of a `#[StartTime: ...]` or `#[BaseTime: ...]` comment.
fn header_seconds(line: &str, name: &str) -> Option<f64> {
    let rest = line.strip_prefix("#[")?.strip_prefix(name)?.strip_prefix(':')?;
    rest.split_whitespace().next()?.parse().ok().filter(|s: &f64| s.is_finite())
}

/// The log's times: where interval timestamps count from.
#[derive(Default)]
struct Clock {
    start_s: Option<f64>,
    base_s: Option<f64>,
}

impl Clock {
    /// The absolute start (s since the epoch) of an interval at `stamp`, the first fixing the
    /// base when the log did not.
    fn absolute(&mut self, stamp: f64) -> f64 {
        let start = *self.start_s.get_or_insert(stamp);
        let base = *self.base_s.get_or_insert(if stamp < start - 365.0 * 24.0 * 3600.0 { start } else { 0.0 });
        base + stamp
    }
}

/// Reads the interval log at `path`: its untagged lines, or those of `tag`.
pub(super) fn read(path: &Path, tag: Option<&str>) -> Result<Found, HistoryError> {
    let mut lines = Lines::new(lines::open(path)?, path);
    let (mut clock, mut total) = (Clock::default(), new_histogram());
    let mut intervals = Vec::new();
    let (mut first_s, mut last_s) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut text = String::new();
    while lines.read(&mut text)? {
        let line = text.trim();
        if line.starts_with('#') {
            clock.start_s = clock.start_s.or(header_seconds(line, "StartTime"));
            clock.base_s = clock.base_s.or(header_seconds(line, "BaseTime"));
            continue;
        }
        if line.is_empty() || line.starts_with(LEGEND) {
            continue;
        }
        let Some(l) = parse_line(line) else {
            return Err(lines.error("not an interval of an HdrHistogram log: [Tag=NAME,]start,length,max,histogram"));
        };
        if l.tag != tag {
            continue;
        }
        let h = decode(l.histogram).map_err(|why| lines.error(why))?;
        total.add(&h).map_err(|e| lines.error(format!("histogram out of range: {e:?}")))?;
        let start = clock.absolute(l.start_s);
        first_s = first_s.min(start);
        last_s = last_s.max(start + l.length_s);
        if intervals.len() < MAX_INTERVALS {
            intervals.push(interval(intervals.len(), start, l.length_s, &h));
        }
    }
    if total.is_empty() && intervals.is_empty() {
        let which = tag.map_or("untagged".to_string(), |t| format!("Tag={t}"));
        return Err(lines::error(path, None, format!("no {which} intervals in it")));
    }
    let mut found =
        Found { started_ms: Some((first_s.max(0.0) * 1000.0).round() as u64), intervals, ..Default::default() };
    found.latency(&total);
    if last_s > first_s {
        found.set("throughput", total.len() as f64 / (last_s - first_s));
    }
    if let Some(t) = tag {
        found.labels.push(("tag".into(), t.to_string()));
    }
    Ok(found)
}

/// A base64 histogram of a log line, bounded and in barrage's bounds.
fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("its histogram is not base64: {e}"))?;
    decode_histogram(&bytes).map_err(|e| {
        if e.starts_with("histogram out of range") {
            format!("{e}: values past an hour in µs (is the log in ns?)")
        } else if e.contains("not an HdrHistogram V2") {
            format!("{e} (V0 and V1 logs of older HdrHistograms are not read)")
        } else {
            e
        }
    })
}

fn interval(index: usize, start_s: f64, length_s: f64, h: &Histogram<u64>) -> Interval {
    let bytes = encode_histogram(h);
    Interval {
        index: index as u32,
        start_ms: (start_s.max(0.0) * 1000.0).round() as u64,
        length_ms: (length_s * 1000.0).round().min(u32::MAX as f64) as u32,
        completed: h.len(),
        ok: h.len(),
        corrected: bytes.clone(),
        service: bytes,
    }
}
