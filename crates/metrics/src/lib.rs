//! Measurements of barrage: the [`Sample`] of one request, the [`Recorder`] that aggregates
//! samples into HDR histograms and counters, the results file that streams a run to disk
//! ([`file`]), and the [`RunSummary`] that reports are rendered from.
//!
//! This crate has no async runtime and no I/O on the hot path.
//!
//! ```
//! use barrage_metrics::{Outcome, Recorder, Sample};
//! use std::time::Duration;
//!
//! let mut r = Recorder::new();
//! r.record(&Sample {
//!     intended: Duration::ZERO,
//!     started: Duration::from_millis(2),
//!     ended: Duration::from_millis(12),
//!     phases: [None; 6],
//!     outcome: Outcome::Status(200),
//!     bytes_in: 1200,
//!     bytes_out: 80,
//!     late: false,
//!     cache: barrage_metrics::CacheStatus::Unknown,
//!     intent: Default::default(),
//!     origin: Default::default(),
//!     rejected: false,
//! });
//! assert_eq!(r.counts.ok, 1);
//! assert!(r.corrected.value_at_quantile(0.5) >= 12_000); // µs, from the intended start
//! assert!(r.service.value_at_quantile(0.5) < 10_100); // µs, from the actual start
//! ```

mod bounded;
pub mod coverage;
pub mod events;
pub mod file;
pub mod gaps;
pub mod lanes;
mod legacy;
pub mod limits;
pub mod plan_difference;
pub mod recorder;
pub mod sample;
pub mod secrets;
pub mod shards;
pub mod stats;
pub mod summary;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod trace;
pub mod units;
pub mod watch;

pub use file::{GroupInfo, IntervalRecord, Mode, ResultsReader, ResultsWriter, RunFooter, RunHeader, StepInfo};
pub use recorder::Recorder;
pub use sample::{CacheStatus, ErrorKind, Intent, Origin, Outcome, Phase, Protocol, Sample};
pub use summary::RunSummary;
pub use watch::{EventKind, EventRecord, HostSample, HostSummary, ProcSample, ProcessSummary, WatchSample};
