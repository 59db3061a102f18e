//! A kept run as a [`RunSummary`] again, so that `history compare` is `barrage compare`:
//! the same figures, the same significance test over the same per-interval samples.
//!
//! What the history keeps is a run's figures and its intervals' latency histograms and
//! counts, not the whole results file: the summary rebuilt holds the latency (exact, from the
//! histograms), the requests finished and succeeded, the success ratio, the throughput and
//! the intervals' rows; the rest (status codes, errors by kind, phases, backends) is empty.

use crate::{HistoryError, Store};
use barrage_metrics::recorder::{decode_histogram, new_histogram};
use barrage_metrics::summary::{IntervalRow, LatencyStats, RunSummary};

/// Run `id` of `store` as a summary.
pub fn summary(store: &Store, id: i64) -> Result<RunSummary, HistoryError> {
    let run = store.run(id)?;
    let corrupt = |e: String| HistoryError::Corrupt(store.path().to_path_buf(), format!("run {id}: {e}"));
    let (mut corrected, mut service) = (new_histogram(), new_histogram());
    let mut rows = Vec::new();
    let (mut total, mut ok) = (0, 0);
    for i in store.intervals(id)? {
        let h = decode_histogram(&i.corrected).map_err(corrupt)?;
        corrected.add(&h).map_err(|e| corrupt(format!("{e:?}")))?;
        service.add(&decode_histogram(&i.service).map_err(corrupt)?).map_err(|e| corrupt(format!("{e:?}")))?;
        let length_s = f64::from(i.length_ms) / 1e3;
        let q = |x| if h.is_empty() { 0 } else { h.value_at_quantile(x) };
        rows.push(IntervalRow {
            second: u64::from(i.index),
            length_s,
            ok: i.ok,
            errors: i.completed - i.ok.min(i.completed),
            throughput_per_sec: if length_s > 0.0 { i.ok as f64 / length_s } else { 0.0 },
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            ..Default::default()
        });
        total += i.completed;
        ok += i.ok;
    }
    let mut s = RunSummary {
        barrage_version: run.env.version.clone(),
        files: vec![format!("run {id} of the history {}", store.path().display())],
        hosts: vec![run.labels.get("machine").cloned().unwrap_or_default()],
        started_unix_ms: run.started_ms,
        urls: run.labels.get("target").cloned().into_iter().collect(),
        interrupted: run.interrupted,
        throughput_per_sec: run.figures.get("throughput").copied(),
        success_ratio: run.figures.get("success").copied().unwrap_or(0.0),
        intervals: rows,
        ..Default::default()
    };
    s.requests.total = total;
    s.requests.sent = total;
    s.requests.ok = ok;
    s.requests.errors = total - ok.min(total);
    s.latency.corrected = LatencyStats::of(&corrected);
    s.latency.service = LatencyStats::of(&service);
    Ok(s)
}
