//! barrage's run history: stored runs, comparable series and change points.
//!
//! Every run barrage finishes (a run, a sweep's level, an experiment's case, a capacity
//! search's result) goes into one SQLite file ([`Store`]) with its labels, its machine and
//! its intervals' latency histograms, so that any percentile of any past run, or of several
//! pooled, is computed again exactly. Runs whose [`fingerprint`] is the same form a series;
//! [`changepoint`] finds where a series' figure changed beyond its noise.

pub mod analysis;
pub mod changepoint;
pub mod entry;
pub mod fingerprint;
pub mod import;
pub mod keeper;
pub mod store;
pub mod summary;

pub use entry::{Entry, Interval};
pub use fingerprint::{Environment, Fingerprint};
pub use keeper::Keeper;
pub use store::{RunRow, Store};

use std::path::PathBuf;

/// What can go wrong with the history.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The SQLite file.
    #[error("history {0}: {1}")]
    Sql(PathBuf, rusqlite::Error),
    /// The file or its directory.
    #[error("history {0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// A results file being read into it.
    #[error(transparent)]
    File(#[from] barrage_metrics::file::FileError),
    /// A file that is not barrage's history, or of a newer barrage, or planted.
    #[error("history {0}: {1}")]
    Refused(PathBuf, String),
    /// A run, series or baseline asked for that is not there.
    #[error("{0}")]
    NotFound(String),
    /// Something in it that cannot be read back (a histogram, a label set).
    #[error("history {0}: {1}")]
    Corrupt(PathBuf, String),
    /// Another tool's results file that cannot be imported: `line` is the line (from 1)
    /// where it went wrong, when it is one line's fault.
    #[error("import {}{}: {why}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Import {
        /// The file.
        path: PathBuf,
        /// Its line, from 1.
        line: Option<u64>,
        /// What is wrong.
        why: String,
    },
}
