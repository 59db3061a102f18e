//! HdrHistogram interval logs: each interval's corrected-latency histogram (untagged) and its
//! service-time histogram (tagged [`SERVICE_TAG`]), in the format of the Java
//! `HistogramLogWriter`, so `HistogramLogAnalyzer`, `HdrLogProcessing` and the Java, Python and
//! Rust log readers can plot and merge them.
//!
//! Values are microseconds. The `Interval_Max` column is divided by 1000 (milliseconds), which
//! is what `HistogramLogAnalyzer` shows; the encoded histograms keep full µs resolution.
//!
//! Timestamps are seconds since the run's start, written as a `#[StartTime: ...]` comment and
//! no `BaseTime`: with StartTime alone, the Java and Python readers both take timestamps this
//! small as offsets from it, whereas older versions of the Python reader mishandle a `BaseTime`
//! line and skip every interval.

use crate::ReportError;
use barrage_metrics::file::{MergedIntervals, ResultsReader};
use barrage_metrics::Recorder;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

/// Tag of the service-time histogram of each interval. The corrected-latency histogram is
/// untagged: the default series of tools that group by tag, and the one to plot first.
pub const SERVICE_TAG: &str = "service";

/// The `Interval_Max` column in milliseconds: values are recorded in microseconds.
const MAX_VALUE_DIVISOR: f64 = 1000.0;

/// The column legend the Java writer puts after the header; every reader skips it.
const LEGEND: &str = "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

/// The builder for interval lines: same divisor as the header says.
fn interval_builder() -> IntervalLogWriterBuilder {
    let mut b = IntervalLogWriterBuilder::new();
    b.with_max_value_divisor(MAX_VALUE_DIVISOR);
    b
}

/// Writes an HdrHistogram interval log incrementally: the header on [`new`](Self::new), then
/// one pair of lines per [`write_interval`](Self::write_interval), flushed, so a run that is
/// killed leaves a log readable up to its last interval.
///
/// ```
/// use barrage_metrics::Recorder;
/// use barrage_report::HdrLogWriter;
/// use std::time::Duration;
///
/// let mut log = HdrLogWriter::new(Vec::new(), 1_714_564_800_000).unwrap();
/// log.write_interval(Duration::ZERO, Duration::from_secs(1), &Recorder::new()).unwrap();
/// let text = String::from_utf8(log.into_inner()).unwrap();
/// assert!(text.contains("#[StartTime: 1714564800.000"));
/// assert!(text.contains("\nTag=service,0.000,1.000,0.000,"));
/// ```
pub struct HdrLogWriter<W: Write> {
    out: W,
    serializer: V2DeflateSerializer,
    /// The lines of one interval, prepared before they go to `out` in one write.
    lines: Vec<u8>,
    /// Length of what the crate's writer puts before the first interval line.
    preamble_len: usize,
}

impl<W: Write> HdrLogWriter<W> {
    /// Writes the log's header to `out`: format version, StartTime (`start_unix_ms`, the run's
    /// start in ms since the Unix epoch), the max-value divisor and the column legend.
    pub fn new(mut out: W, start_unix_ms: u64) -> Result<Self, ReportError> {
        let mut serializer = V2DeflateSerializer::new();
        interval_builder()
            .add_comment(&format!("[Logged with barrage {}]", env!("CARGO_PKG_VERSION")))
            .add_comment("[Histogram log format version 1.3]")
            .add_comment("[Values in microseconds; untagged: corrected latency (from the intended start); Tag=service: service time (from the actual send)]")
            .with_start_time(UNIX_EPOCH + Duration::from_millis(start_unix_ms))
            .begin_log_with(&mut out, &mut serializer)?;
        out.write_all(LEGEND.as_bytes())?;
        out.flush()?;
        // The crate's writer borrows its output and serializer, so it cannot be kept in this
        // struct beside them; it is re-created per interval, and what it writes again on
        // creation (the divisor line) is measured here once and dropped each time.
        let mut preamble = Vec::new();
        interval_builder().begin_log_with(&mut preamble, &mut serializer)?;
        Ok(HdrLogWriter { out, serializer, lines: Vec::new(), preamble_len: preamble.len() })
    }

    /// Writes the interval that started `start_offset` after the run's start and lasted
    /// `duration`: the corrected-latency histogram of `recorder`, then its service-time
    /// histogram tagged [`SERVICE_TAG`]. Flushes `out`.
    pub fn write_interval(
        &mut self,
        start_offset: Duration,
        duration: Duration,
        recorder: &Recorder,
    ) -> Result<(), ReportError> {
        self.lines.clear();
        {
            let mut w = interval_builder().begin_log_with(&mut self.lines, &mut self.serializer)?;
            w.write_histogram(&recorder.corrected, start_offset, duration, None)?;
            w.write_histogram(&recorder.service, start_offset, duration, Tag::new(SERVICE_TAG))?;
        }
        self.out.write_all(&self.lines[self.preamble_len..])?;
        self.out.flush()?;
        Ok(())
    }

    /// Writes a comment (`#` and the text; one comment line per line of `text`). Readers
    /// ignore comments; they tell people what happened (a truncated input, Ctrl-C, ...).
    pub fn write_comment(&mut self, text: &str) -> Result<(), ReportError> {
        for line in text.split('\n') {
            writeln!(self.out, "#{line}")?;
        }
        self.out.flush()?;
        Ok(())
    }

    /// The output, once the log is complete.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Writes the interval log of one or more results files, merged by wall-clock second as in
/// [`barrage_metrics::summary::summarize`], streaming (one interval in memory at a time).
/// Timestamps count from the earliest run's start. Warnings about truncated or corrupt files
/// are written as comments at the end.
pub fn write_hdr_log(paths: &[PathBuf], out: &mut impl Write) -> Result<(), ReportError> {
    let readers = paths.iter().map(|p| ResultsReader::open(p)).collect::<Result<Vec<_>, _>>()?;
    let start_ms = readers.iter().map(|r| r.header().started_unix_ms).min().ok_or(ReportError::NoResults)?;
    let mut log = HdrLogWriter::new(out, start_ms)?;
    let mut merged = MergedIntervals::unfolded(readers);
    for m in merged.by_ref() {
        let offset = Duration::from_millis(m.start_unix_ms.saturating_sub(start_ms));
        log.write_interval(offset, Duration::from_millis(m.length_ms.into()), &m.recorder)?;
    }
    for warning in merged.readers().iter().filter_map(ResultsReader::warning) {
        log.write_comment(&format!("warning: {warning}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_written_once() {
        let mut log = HdrLogWriter::new(Vec::new(), 1_000_500).unwrap();
        for k in 0..3 {
            log.write_interval(Duration::from_secs(k), Duration::from_secs(1), &Recorder::new()).unwrap();
        }
        log.write_comment("two\nlines").unwrap();
        let text = String::from_utf8(log.into_inner()).unwrap();
        assert_eq!(text.matches("MaxValueDivisor").count(), 1, "{text}");
        assert_eq!(text.matches("#[StartTime").count(), 1, "{text}");
        assert!(text.contains("#[StartTime: 1000.500 (seconds since epoch)]\n"), "{text}");
        let intervals: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.starts_with('"')).collect();
        assert_eq!(intervals.len(), 6);
        assert!(intervals[0].starts_with("0.000,1.000,0.000,"), "{}", intervals[0]);
        assert!(intervals[5].starts_with("Tag=service,2.000,1.000,0.000,"), "{}", intervals[5]);
        assert!(text.ends_with("#two\n#lines\n"));
    }

    #[test]
    fn no_files_is_an_error() {
        let err = write_hdr_log(&[], &mut Vec::new()).unwrap_err();
        assert!(matches!(err, ReportError::NoResults));
    }
}
