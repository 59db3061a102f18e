//! What the history keeps of one run ([`Entry`]): read off its results files, the merged
//! shards of a split run as one entry.

use crate::{Environment, Fingerprint, HistoryError};
use barrage_metrics::file::MergedIntervals;
use barrage_metrics::recorder::encode_histogram;
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_metrics::ResultsReader;
use barrage_report::Figure;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Most intervals kept of one run: a day of seconds. A longer run keeps its first day's
/// intervals; its figures are the whole run's.
pub const MAX_INTERVALS: usize = 86_400;

/// One interval of a run: its latency histograms in HdrHistogram's compressed V2 form.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    /// From 0.
    pub index: u32,
    /// Wall-clock start, ms since the Unix epoch.
    pub start_ms: u64,
    /// Length, ms.
    pub length_ms: u32,
    /// Requests finished in it.
    pub completed: u64,
    /// Of which succeeded.
    pub ok: u64,
    /// Corrected latency (from the intended start).
    pub corrected: Vec<u8>,
    /// Service time (from the actual start).
    pub service: Vec<u8>,
}

/// A run as the history keeps it.
#[derive(Clone, Debug, Default)]
pub struct Entry {
    /// `run`, `sweep`, `experiment`, `capacity`, `bench`, `import`, ...
    pub kind: String,
    /// The run's own id (its results file's), shared by the shards of a split run.
    pub run_id: String,
    /// Start, ms since the Unix epoch.
    pub started_ms: u64,
    /// What it is in its study, all of it (`case`, `repeat`, `level`, `phase`).
    pub study: Vec<(String, String)>,
    /// What makes it comparable.
    pub fingerprint: Fingerprint,
    /// The machine and barrage it ran on.
    pub env: Environment,
    /// Figures by name ([`Figure`] names, and [`EXTRA_FIGURES`]).
    pub figures: BTreeMap<String, f64>,
    /// Its intervals, the shards of a split run merged.
    pub intervals: Vec<Interval>,
    /// The results files it was read from, when they were kept.
    pub files: Vec<String>,
    /// Shards merged into it (1 for an unsplit run).
    pub shards: u32,
    /// Stopped early.
    pub interrupted: bool,
    /// Why it is not a result (built on failure, or on another workload), if it is not.
    pub failure: Option<String>,
}

/// Figures beside [`Figure`]'s: the error ratio, a capacity search's capacity, and each
/// watched process's mean CPU (`cpu:NAME`, % of a core) and highest memory (`memory:NAME`,
/// KiB).
pub const EXTRA_FIGURES: [&str; 4] = ["error_ratio", "capacity", "cpu:NAME", "memory:NAME"];

/// Whether a higher value of `figure` is better: throughput, success, hit ratio, flows and
/// capacity; lower is better for latency, errors, CPU and memory.
pub fn higher_is_better(figure: &str) -> bool {
    matches!(figure, "throughput" | "success" | "hit_ratio" | "flows" | "flow_success" | "capacity")
}

impl Entry {
    /// The entry of the run in `paths` (one results file, or every shard's of a split run),
    /// run as `kind` at `study` labels, the user's `labels` applied to its fingerprint.
    pub fn of_files(
        paths: &[PathBuf],
        kind: &str,
        study: &[(String, String)],
        labels: &[(String, Option<String>)],
        env: &Environment,
    ) -> Result<Entry, HistoryError> {
        let summary = summarize(paths)?;
        let readers = paths.iter().map(|p| ResultsReader::open(p)).collect::<Result<Vec<_>, _>>()?;
        let header = readers[0].header().clone();
        let mut env = env.clone();
        if env.version.is_empty() {
            env.version = header.barrage_version.clone();
        }
        let intervals = MergedIntervals::new(readers)
            .take(MAX_INTERVALS)
            .enumerate()
            .map(|(k, m)| Interval {
                index: k as u32,
                start_ms: m.start_unix_ms,
                length_ms: m.length_ms,
                completed: m.recorder.counts.completed,
                ok: m.recorder.counts.ok,
                corrected: encode_histogram(&m.recorder.corrected),
                service: encode_histogram(&m.recorder.service),
            })
            .collect();
        Ok(Entry {
            kind: kind.to_string(),
            run_id: header.launch.run_id.clone(),
            started_ms: summary.started_unix_ms,
            study: study.to_vec(),
            fingerprint: Fingerprint::of(kind, &header, paths.len() > 1, study, labels, &env),
            env,
            figures: figures_of(&summary),
            intervals,
            files: paths.iter().map(|p| p.display().to_string()).collect(),
            shards: paths.len() as u32,
            interrupted: summary.interrupted,
            failure: barrage_report::study::run_not_a_result(&summary),
        })
    }
}

/// The figures the history keeps of a run.
pub fn figures_of(s: &RunSummary) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = Figure::ALL
        .iter()
        .filter_map(|f| f.of(s).filter(|v| v.is_finite()).map(|v| (f.name().to_string(), v)))
        .collect();
    out.insert("error_ratio".into(), 1.0 - s.success_ratio);
    for p in s.processes.iter().filter(|p| p.name != "barrage" && p.samples > 0) {
        out.insert(format!("cpu:{}", p.name), p.cpu_mean_percent);
        out.insert(format!("memory:{}", p.name), p.rss_max_kib as f64);
    }
    out
}
