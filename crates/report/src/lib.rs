//! Renderers of barrage results: pure functions of a [`RunSummary`], plus the HdrHistogram
//! interval log, which streams the intervals of results files.
//!
//! - [`text()`]: the human report (requests, durations, corrected and service latency,
//!   phases, bytes, status codes, errors, steps, the generator's self-check, warnings);
//! - [`json()`]: the summary as versioned JSON, documented by `schema/summary.schema.json`;
//! - [`csv()`]: the time series, one row per interval;
//! - [`write_hdr_log()`] and [`HdrLogWriter`]: HdrHistogram's interval-log format, readable
//!   by `HistogramLogAnalyzer`, the Java and Python `HistogramLogReader`s and
//!   [`hdrhistogram::serialization::interval_log::IntervalLogIterator`].
//!
//! Renderers never fail and never do I/O; only the interval log, which reads results files
//! as it goes, returns a [`ReportError`].
//!
//! ```
//! use barrage_metrics::summary::{LatencyStats, RunSummary};
//!
//! let mut s = RunSummary { version: 1, mode: barrage_metrics::file::Mode::Closed, ..Default::default() };
//! s.urls.push("http://127.0.0.1:8080/".into());
//! s.requests.total = 1000;
//! s.requests.ok = 1000;
//! s.latency.corrected = LatencyStats { count: 1000, p50_us: 1_200, max_us: 9_000, ..Default::default() };
//! s.latency.service = s.latency.corrected.clone();
//!
//! let report = barrage_report::text(&s, false);
//! assert!(report.contains("closed loop"));
//! assert!(report.contains("1.20ms"));
//! let json: serde_json::Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
//! assert_eq!(json["requests"]["total"], 1000);
//! assert!(barrage_report::csv(&s).starts_with("second,length_s,"));
//! ```

pub mod compare;
mod csv;
mod events;
pub mod export;
pub mod figure;
mod hdr;
pub mod html;
pub mod message;
pub mod output;
pub mod reports;
mod sections;
pub mod slo;
pub mod study;
mod text;
pub mod traces;
pub mod workload;

pub use crate::csv::{csv, flows_sheet, intervals_sheet, names_sheet, replies_sheet, steps_sheet, summary_sheet};
pub use crate::export::{to_csv, write_xlsx, Cell, Sheet};
pub use crate::figure::{Figure, Spread};
pub use crate::hdr::{write_hdr_log, HdrLogWriter, SERVICE_TAG};
pub use crate::html::{html, html_with, HtmlOptions, Page, TrendChart};
pub use crate::reports::{CapacityReport, ExperimentReport, Report};
pub use crate::sections::urls_line;
pub use crate::slo::{junit, slo_lines, Slo, SloResult};
pub use crate::study::{StudyRow, StudyTable};
pub use crate::text::{text, utc, Align, Table};
pub use crate::traces::TraceUrl;

use barrage_metrics::file::FileError;
use barrage_metrics::RunSummary;
use hdrhistogram::serialization::interval_log::IntervalLogWriterError;
use hdrhistogram::serialization::V2DeflateSerializeError;

/// Errors of the renderers that read files or write to an output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A results file could not be opened or read.
    #[error(transparent)]
    Results(#[from] FileError),
    /// Writing the output failed.
    #[error("writing the report: {0}")]
    Io(#[from] std::io::Error),
    /// A histogram could not be encoded for the interval log.
    #[error("encoding a histogram for the interval log: {0}")]
    Encode(#[from] V2DeflateSerializeError),
    /// No results file was given.
    #[error("no results file given: at least one is needed")]
    NoResults,
    /// A workbook could not be written: a table exceeds Excel's limits, or the file cannot be created.
    #[error("{path}: {message}")]
    Xlsx {
        /// The workbook's path.
        path: std::path::PathBuf,
        /// What went wrong (naming the sheet, if it was one's contents).
        message: String,
    },
}

impl From<IntervalLogWriterError<V2DeflateSerializeError>> for ReportError {
    fn from(e: IntervalLogWriterError<V2DeflateSerializeError>) -> Self {
        match e {
            IntervalLogWriterError::IoError(e) => ReportError::Io(e),
            IntervalLogWriterError::SerializeError(e) => ReportError::Encode(e),
        }
    }
}

/// The summary as pretty-printed JSON, ending in a newline: every field of [`RunSummary`], described by
/// `schema/summary.schema.json` (its `version` is [`barrage_metrics::summary::SUMMARY_VERSION`]).
pub fn json(s: &RunSummary) -> String {
    /// The summary and, last, its verdict as the study tables say it: `ok` or `FAILED: WHY`.
    #[derive(serde::Serialize)]
    struct WithVerdict<'a> {
        #[serde(flatten)]
        summary: &'a RunSummary,
        verdict: String,
    }
    let with = WithVerdict { summary: s, verdict: study::run_verdict(s) };
    let mut out =
        serde_json::to_string_pretty(&with).expect("a RunSummary always serialises: its map keys are strings");
    out.push('\n');
    out
}
