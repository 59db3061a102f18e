//! JMeter's results saved as CSV (`-l results.jtl` with
//! `jmeter.save.saveservice.output_format=csv`, JMeter's default): a header naming the
//! columns (`timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,
//! success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,
//! Connect`), then a sample a line. Columns are found by their names, in any order and
//! with any of JMeter's delimiters (`,`, `;`, tab, `|`); a file without the header is read
//! in JMeter's default column order.
//!
//! `timeStamp` must be ms since the epoch (JMeter's default `timestamp_format=ms`) and is
//! taken as the sample's start (`sampleresult.timestamp.start=true`, JMeter's default);
//! `elapsed` is its latency in ms, so latencies are whole ms. A sample succeeded when its
//! `success` is `true`. JMeter does not correct for coordinated omission: `elapsed` is
//! service time, kept as both latencies. Every line counts, a transaction controller's
//! included, as JMeter's own reports count them. JMeter's XML results are not read.

use super::bins::Bins;
use super::lines::{self, Lines, Record, Records};
use super::{Found, Targets};
use crate::HistoryError;
use std::path::Path;

/// JMeter's default columns, for a file saved without its header.
const DEFAULT_COLUMNS: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,\
failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect";

/// The delimiter of JMeter's CSV header `line`, `None` when it is not one.
pub(super) fn delimiter_of(line: &str) -> Option<u8> {
    let rest = line.trim_start_matches('\u{feff}').strip_prefix("timeStamp")?;
    rest.bytes().next().filter(|b| matches!(b, b',' | b';' | b'\t' | b'|'))
}

/// Where the columns read are.
struct Columns {
    time: usize,
    elapsed: usize,
    success: usize,
    url: Option<usize>,
    label: Option<usize>,
    /// How many there are.
    count: usize,
}

impl Columns {
    fn of(names: &[String]) -> Option<Columns> {
        let at = |n: &str| names.iter().position(|c| c.trim() == n);
        Some(Columns {
            time: at("timeStamp")?,
            elapsed: at("elapsed")?,
            success: at("success")?,
            url: at("URL"),
            label: at("label"),
            count: names.len(),
        })
    }
}

/// Reads JMeter's CSV results at `path`.
pub(super) fn read(path: &Path) -> Result<Found, HistoryError> {
    let header = Lines::new(lines::open(path)?, path).first_nonblank()?;
    let header = header.ok_or_else(|| lines::error(path, None, "no samples in it"))?;
    if header.trim_start().starts_with('<') {
        return Err(lines::error(path, None, "JMeter's XML results are not read: save them as CSV"));
    }
    let (delim, names, skip_header) = match delimiter_of(&header) {
        Some(d) => (d, lines::split_line(header.trim_start_matches('\u{feff}'), d), true),
        None => (b',', DEFAULT_COLUMNS.split(',').map(String::from).collect(), false),
    };
    let columns = Columns::of(&names)
        .ok_or_else(|| lines::error(path, Some(1), "a JMeter header without timeStamp, elapsed and success"))?;
    let mut records = Records::new(Lines::new(lines::open(path)?, path), delim);
    let mut rec = Record::default();
    if skip_header {
        records.next_into(&mut rec)?;
    }
    let (mut bins, mut urls, mut labels) = (Bins::new(), Targets::default(), Targets::default());
    while records.next_into(&mut rec)? {
        sample(path, &rec, &columns, &mut bins)?;
        if let Some(u) = columns.url {
            urls.see(&rec.get(u));
        }
        if let Some(l) = columns.label {
            labels.see(&rec.get(l));
        }
    }
    if bins.completed() == 0 {
        return Err(lines::error(path, None, "no samples in it"));
    }
    let mut found = bins.finish();
    // Samplers' labels name a target only when there is one.
    found.target = urls.name().or_else(|| labels.only());
    Ok(found)
}

/// Records the sample `rec`.
fn sample(path: &Path, rec: &Record, c: &Columns, bins: &mut Bins) -> Result<(), HistoryError> {
    let bad = |why: String| lines::error(path, Some(rec.line), format!("not a JMeter sample: {why}"));
    // JMeter writes every column on every line: a line cut off has fewer.
    if rec.len() != c.count {
        return Err(bad(format!("{} fields, not the header's {}", rec.len(), c.count)));
    }
    let time: i64 = rec.number(c.time).ok_or_else(|| {
        bad(format!("timeStamp '{}' is not ms since the epoch (timestamp_format=ms)", rec.get(c.time)))
    })?;
    let elapsed: u64 =
        rec.number(c.elapsed).ok_or_else(|| bad(format!("elapsed '{}' is not ms", rec.get(c.elapsed))))?;
    let ok = match rec.get(c.success).trim() {
        s if s.eq_ignore_ascii_case("true") => true,
        s if s.eq_ignore_ascii_case("false") => false,
        s => return Err(bad(format!("success '{s}' is neither true nor false"))),
    };
    bins.record(time.saturating_mul(1000), elapsed.saturating_mul(1000), ok);
    Ok(())
}
