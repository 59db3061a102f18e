//! A series' figure over its runs: its change points, each judged a regression or not and,
//! when the machine's control series changed at the same time, laid at the machine's door
//! ([`trend`]); and the CI gate, the newest run against the last stable runs ([`gate`]).
//!
//! Runs that are not results (built on failure, or on another workload than they asked
//! for) are shown but left out of both: a failed run's p99 is not the system's.

use crate::changepoint::{change_points, magnitude, prediction_check, ChangePoint, Check, Options, Sense, Verdict};
use crate::entry::higher_is_better;
use crate::store::{Annotation, Point, Series};
use crate::{HistoryError, Store};

/// The label a control series carries ([`CONTROL`] is its value): runs against a fixed
/// reference, recorded beside the system's, that tell the machine's changes from the
/// system's.
pub const CHANNEL: &str = "channel";
/// The value of [`CHANNEL`] on control runs.
pub const CONTROL: &str = "control";

/// The control series' figures that say the machine changed, whichever figure of a system
/// changed with it.
const MACHINE_FIGURES: [&str; 3] = ["p50", "mean", "throughput"];

/// Whether higher or lower values of `figure` are better.
pub fn sense(figure: &str) -> Sense {
    if higher_is_better(figure) {
        Sense::HigherIsBetter
    } else {
        Sense::LowerIsBetter
    }
}

/// A change point of a series' figure.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Change {
    /// The first run after the change.
    pub run: i64,
    /// Its start, ms since the Unix epoch.
    pub started_ms: u64,
    /// What changed, by how much, how surely.
    pub point: ChangePoint,
    /// Whether it is for the worse.
    pub regression: bool,
    /// When the machine's control series changed at the same time: which, and when; the
    /// change is then the machine's, not the system's.
    pub machine: Option<String>,
}

/// A series' figure over its runs.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Trend {
    /// The series.
    pub series: Series,
    /// The figure.
    pub figure: String,
    /// Its points, oldest first (runs that are not results included, marked).
    pub points: Vec<Point>,
    /// Its change points.
    pub changes: Vec<Change>,
    /// Notes on its time line.
    pub annotations: Vec<Annotation>,
}

/// The points detection looks at: the results.
fn valid(points: &[Point]) -> Vec<&Point> {
    points.iter().filter(|p| p.failure.is_none() && p.value.is_finite()).collect()
}

/// The change points of `figure` over the last `last` runs of `series`.
pub fn trend(store: &Store, series: &Series, figure: &str, last: usize, opts: &Options) -> Result<Trend, HistoryError> {
    let points = store.points(series.id, figure, last)?;
    let changes = changes_of(&points, figure, opts);
    let mut trend = Trend {
        series: series.clone(),
        figure: figure.to_string(),
        points,
        changes,
        annotations: store.annotations(Some(series.id))?,
    };
    attribute(store, &mut trend, opts)?;
    Ok(trend)
}

fn changes_of(points: &[Point], figure: &str, opts: &Options) -> Vec<Change> {
    let valid = valid(points);
    let values: Vec<f64> = valid.iter().map(|p| p.value).collect();
    change_points(&values, opts)
        .into_iter()
        .map(|cp| Change {
            run: valid[cp.index].run,
            started_ms: valid[cp.index].started_ms,
            regression: cp.is_regression(sense(figure)),
            point: cp,
            machine: None,
        })
        .collect()
}

/// How many runs apart a system's change and its control's may be placed and still be one
/// change: a noisy figure (the max of a short run) places a step a run or two off.
const NEAR: usize = 2;

/// The control series of the machine a series with `labels` ran on, and the figures of
/// theirs that say the machine changed with `figure`: the figure itself, then
/// [`MACHINE_FIGURES`] (the control's own figure may be too noisy to place a change: the
/// max of a few seconds' requests).
fn controls<'f>(
    store: &Store,
    labels: &std::collections::BTreeMap<String, String>,
    figure: &'f str,
) -> Result<(Vec<Series>, Vec<&'f str>), HistoryError> {
    let machine = labels.get("machine").cloned().unwrap_or_default();
    let filter = [(CHANNEL.to_string(), Some(CONTROL.to_string())), ("machine".to_string(), Some(machine))];
    let mut figures = vec![figure];
    figures.extend(MACHINE_FIGURES.iter().filter(|f| **f != figure));
    Ok((store.matching(&filter)?, figures))
}

/// Marks each change of `trend` that its machine's control series also shows, within
/// [`NEAR`] runs of it either way; a change of a control series is the machine's by
/// definition.
fn attribute(store: &Store, trend: &mut Trend, opts: &Options) -> Result<(), HistoryError> {
    let labels = &trend.series.labels;
    if labels.get(CHANNEL).map(String::as_str) == Some(CONTROL) {
        for c in &mut trend.changes {
            c.machine = Some("this is the machine's control series".to_string());
        }
        return Ok(());
    }
    if trend.changes.is_empty() {
        return Ok(());
    }
    let (series, figures) = controls(store, labels, &trend.figure)?;
    // The control's changes at any size: a machine that moved 4% under a system's 8% step
    // still moved, and the step is the machine's (the minimum magnitude sorts the
    // system's changes, not the evidence against them).
    let any_size = Options { min_magnitude: 0.0, ..*opts };
    let mut control = Vec::new();
    for s in series {
        for f in &figures {
            let points = store.points(s.id, f, usize::MAX >> 1)?;
            control.extend(changes_of(&points, f, &any_size).into_iter().map(|c| (s.id, *f, c)));
        }
    }
    let valid = valid(&trend.points);
    for change in &mut trend.changes {
        let at = valid.iter().position(|p| p.run == change.run).unwrap_or(0);
        let from = valid[at.saturating_sub(1 + NEAR)].started_ms;
        let to = valid.get(at + 1 + NEAR).map_or(u64::MAX, |p| p.started_ms);
        if let Some((s, f, c)) = control.iter().find(|(_, _, c)| c.started_ms > from && c.started_ms < to) {
            change.machine = Some(format!(
                "the machine's control series #{s} changed ({f} {:+.1}%) at the same time",
                c.point.relative_change * 100.0
            ));
        }
    }
    Ok(())
}

/// The CI gate's verdict on a series' newest run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Gate {
    /// The series.
    pub series: Series,
    /// The figure.
    pub figure: String,
    /// The newest run judged.
    pub run: i64,
    /// The runs it was judged against: the series' runs since its last change point, at
    /// most a window of them.
    pub stable: Vec<i64>,
    /// The verdict.
    pub check: Check,
    /// When the verdict is worse and the machine's control run of the same time is worse
    /// too: which, and how; the change is then the machine's, and the gate passes.
    pub machine: Option<String>,
}

impl Gate {
    /// Whether the gate fails: the run is worse, and the machine's control run is not.
    pub fn fails(&self) -> bool {
        self.check.is_regression() && self.machine.is_none()
    }
}

/// Judges the newest result of `series` on `figure` against the stable runs before it,
/// and a regression against the machine's control run of the same time. `None` when the
/// series has no result with the figure.
pub fn gate(
    store: &Store,
    series: &Series,
    figure: &str,
    confidence: f64,
    opts: &Options,
) -> Result<Option<Gate>, HistoryError> {
    let points = store.points(series.id, figure, opts.window * 4)?;
    let valid = valid(&points);
    let Some(newest) = valid.len().checked_sub(1) else { return Ok(None) };
    let Some((stable, check)) = judge(&valid, newest, figure, confidence, opts) else { return Ok(None) };
    let mut gate = Gate {
        series: series.clone(),
        figure: figure.to_string(),
        run: valid[newest].run,
        stable,
        check,
        machine: None,
    };
    if gate.check.is_regression() && series.labels.get(CHANNEL).map(String::as_str) != Some(CONTROL) {
        let after = valid.len().checked_sub(2).map_or(0, |k| valid[k].started_ms);
        gate.machine = control_worse(store, &series.labels, figure, after, confidence, opts)?;
    }
    Ok(Some(gate))
}

/// Judges `valid[k]` against the stable runs before it: the runs after the last change
/// point among them, less any that its own stable runs would have failed (a regression
/// just judged is not yet the new normal: it widened the interval and let the next slip
/// by), at most a window. `None` when there is no `valid[k]`.
fn judge(valid: &[&Point], k: usize, figure: &str, confidence: f64, opts: &Options) -> Option<(Vec<i64>, Check)> {
    let newest = valid.get(k)?;
    let before = &valid[..k];
    let values: Vec<f64> = before.iter().map(|p| p.value).collect();
    let start = change_points(&values, opts).last().map_or(0, |c| c.index);
    let judged = |stable: &[f64], value: f64| {
        within_noise(prediction_check(stable, value, sense(figure), confidence), opts.min_magnitude)
    };
    let mut stable: Vec<&Point> = Vec::new();
    for p in &before[start..] {
        let recent: Vec<f64> = stable.iter().rev().take(opts.window).map(|p| p.value).collect();
        if !matches!(judged(&recent, p.value).verdict, Verdict::Regression | Verdict::Improvement) {
            stable.push(p);
        }
    }
    let stable = &stable[stable.len().saturating_sub(opts.window)..];
    let stable_values: Vec<f64> = stable.iter().map(|p| p.value).collect();
    Some((stable.iter().map(|p| p.run).collect(), judged(&stable_values, newest.value)))
}

/// `check`, with a figure outside the interval by at most `noise` of the stretch's mean
/// (Otava's [`magnitude`]) taken as within: the smallest change the gate calls one is the
/// smallest change point the trend keeps. Without it, a lasting shift below `noise` would
/// be no change point, each of its runs would be left out of the stretch as outside, and
/// the gate would fail every run after it.
fn within_noise(mut check: Check, noise: f64) -> Check {
    let outside = matches!(check.verdict, Verdict::Regression | Verdict::Improvement);
    if outside && check.interval.is_some_and(|i| magnitude(i.mean, check.newest) <= noise) {
        check.verdict = Verdict::Within;
    }
    check
}

/// Whether the machine's control run after `after_ms` (the first, the same time as the
/// judged run) is worse too, in `figure` or in one of [`MACHINE_FIGURES`]: which, if so.
fn control_worse(
    store: &Store,
    labels: &std::collections::BTreeMap<String, String>,
    figure: &str,
    after_ms: u64,
    confidence: f64,
    opts: &Options,
) -> Result<Option<String>, HistoryError> {
    let (series, figures) = controls(store, labels, figure)?;
    // The control at any size, as [`attribute`] reads it: a machine that moved less than
    // the noise still moved.
    let any_size = Options { min_magnitude: 0.0, ..*opts };
    for s in series {
        for &f in &figures {
            let points = store.points(s.id, f, opts.window * 4)?;
            let valid = valid(&points);
            let Some(k) = valid.iter().position(|p| p.started_ms > after_ms) else { continue };
            if let Some((_, check)) = judge(&valid, k, f, confidence, &any_size).filter(|(_, c)| c.is_regression()) {
                return Ok(Some(format!(
                    "the machine's control series #{} was worse too ({f} {} outside {})",
                    s.id,
                    check.newest,
                    check.interval.map_or("-".into(), |i| format!("{:.0} .. {:.0}", i.lower, i.upper))
                )));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Entry;
    use crate::fingerprint::Fingerprint;

    /// Records a series whose p50 is `values`, a run a minute apart from `offset_ms`, with
    /// `labels`.
    fn record(store: &mut Store, values: &[f64], labels: &[(&str, &str)], offset_ms: u64) {
        let labels: std::collections::BTreeMap<String, String> =
            labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        for (k, v) in values.iter().enumerate() {
            let entry = Entry {
                kind: "run".into(),
                started_ms: 1_000_000 + k as u64 * 60_000 + offset_ms,
                fingerprint: Fingerprint { labels: labels.clone() },
                figures: [("p50".to_string(), *v)].into(),
                shards: 1,
                ..Default::default()
            };
            store.record(&entry).unwrap();
        }
    }

    /// A store of one series whose p50 is `values` ([`record`]).
    fn store_of(dir: &std::path::Path, values: &[f64], labels: &[(&str, &str)]) -> (Store, Series) {
        let mut store = Store::open(&dir.join("history.db")).unwrap();
        record(&mut store, values, labels, 0);
        let series = store.series().unwrap().pop().unwrap();
        (store, series)
    }

    /// 24 runs around 100, then 20% up: the gate fails the first step's run, and the next
    /// two too, for the first is not taken as the new normal.
    #[test]
    fn a_regression_judged_does_not_widen_the_interval_for_the_next() {
        let noise = [0.4, -0.3, 0.1, -0.5, 0.2, 0.0, -0.1, 0.3, -0.2, 0.5, -0.4, 0.1];
        let mut values: Vec<f64> = (0..24).map(|k| 100.0 + noise[k % noise.len()]).collect();
        for n in &noise[..3] {
            values.push(120.0 + n);
            let dir = tempfile::tempdir().unwrap();
            let (store, series) = store_of(dir.path(), &values, &[("machine", "m")]);
            let g = gate(&store, &series, "p50", 0.99, &Options::default()).unwrap().unwrap();
            assert!(g.check.is_regression(), "run {}: {g:?}", values.len());
            assert_eq!(g.stable.len(), 24, "the stepped runs before it are not its baseline");
        }
    }

    /// 24 runs around 100 whose last 4 ran 4% slower (a busy spell of the machine), then 20%
    /// up: with no minimum the spell is a change point, the stretch after it too short for the
    /// gate to see the step; with 5% the stretch is the 24 runs (less one the interval
    /// fails) and the step fails the gate.
    #[test]
    fn a_busy_spell_below_the_noise_does_not_blind_the_gate() {
        let jitter = [1.8, -1.4, 0.4, -2.2, 0.8, 0.0, -0.4, 1.4, -0.8, 2.2, -1.8, 0.4];
        let mut values: Vec<f64> =
            (0..24).map(|k| if k < 20 { 100.0 } else { 104.0 } + jitter[k % jitter.len()]).collect();
        values.push(120.0);
        let dir = tempfile::tempdir().unwrap();
        let (store, series) = store_of(dir.path(), &values, &[("machine", "m")]);
        let judged = |min_magnitude: f64| {
            let opts = Options { min_magnitude, ..Options::default() };
            gate(&store, &series, "p50", 0.999, &opts).unwrap().unwrap()
        };
        let blind = judged(0.0);
        assert!(blind.stable.len() < 10 && !blind.check.is_regression(), "{blind:?}");
        let seen = judged(0.05);
        assert_eq!(seen.stable.len(), 23, "{seen:?}");
        assert!(seen.fails(), "{seen:?}");
    }

    /// 30 runs at 100, then 104 for good: under 5% the shift is no change point, and each of
    /// its runs is within (left out of the stretch as outside, the shift would fail every
    /// run after it).
    #[test]
    fn a_lasting_shift_under_the_noise_is_within_at_every_run() {
        let jitter = [0.2, -0.1, 0.0, -0.2, 0.1];
        let values: Vec<f64> = (0..40).map(|k| if k < 30 { 100.0 } else { 104.0 } + jitter[k % 5]).collect();
        let opts = Options { min_magnitude: 0.05, ..Options::default() };
        for n in 31..=40 {
            let dir = tempfile::tempdir().unwrap();
            let (store, series) = store_of(dir.path(), &values[..n], &[("machine", "m")]);
            let g = gate(&store, &series, "p50", 0.99, &opts).unwrap().unwrap();
            assert!(!g.check.is_regression(), "run {n}: {g:?}");
        }
    }

    /// A step in the control series of the machine at the system's step makes the system's
    /// change the machine's; the control's own change is the machine's.
    #[test]
    fn a_change_the_control_shows_too_is_the_machines() {
        let dir = tempfile::tempdir().unwrap();
        let noise = [0.4, -0.3, 0.1, -0.5, 0.2, 0.0, -0.1, 0.3, -0.2, 0.5, -0.4, 0.1];
        let stepped: Vec<f64> = (0..40).map(|k| if k < 25 { 100.0 } else { 120.0 } + noise[k % noise.len()]).collect();
        let (mut store, _) = store_of(dir.path(), &stepped, &[("machine", "m"), ("channel", "control")]);
        record(&mut store, &stepped, &[("machine", "m")], 1);
        let all = store.series().unwrap();
        for s in &all {
            let t = trend(&store, s, "p50", 100, &Options::default()).unwrap();
            assert_eq!(t.changes.len(), 1, "{:?}", s.labels);
            assert!(t.changes[0].regression && t.changes[0].machine.is_some(), "{:?}: {:?}", s.labels, t.changes);
        }
    }

    /// A minimum magnitude sorts the system's changes, not the control's: the system's 8%
    /// step under a 5% minimum is still the machine's when the control moved 4% with it.
    #[test]
    fn a_small_change_of_the_control_still_excuses_the_system() {
        let dir = tempfile::tempdir().unwrap();
        let noise = [0.4, -0.3, 0.1, -0.5, 0.2, 0.0, -0.1, 0.3, -0.2, 0.5, -0.4, 0.1];
        let step = |to: f64| -> Vec<f64> {
            (0..40).map(|k| if k < 25 { 100.0 } else { to } + noise[k % noise.len()] / 4.0).collect()
        };
        let (mut store, control) = store_of(dir.path(), &step(104.0), &[("machine", "m"), ("channel", "control")]);
        record(&mut store, &step(108.0), &[("machine", "m")], 1);
        let system = store.series().unwrap().into_iter().find(|s| s.id != control.id).unwrap();
        let opts = Options { min_magnitude: 0.05, ..Options::default() };
        let t = trend(&store, &system, "p50", 100, &opts).unwrap();
        assert_eq!(t.changes.len(), 1, "{:?}", t.changes);
        assert!(t.changes[0].machine.is_some(), "{:?}", t.changes);
        assert!(trend(&store, &control, "p50", 100, &opts).unwrap().changes.is_empty(), "4% is under the minimum");
    }

    /// The newest run of a system worse, and the machine's control run of the same time
    /// worse too: the gate calls it the machine's and passes; without the control it fails.
    #[test]
    fn the_gate_passes_a_regression_the_control_shows_too() {
        let dir = tempfile::tempdir().unwrap();
        let noise = [0.4, -0.3, 0.1, -0.5, 0.2, 0.0, -0.1, 0.3, -0.2, 0.5, -0.4, 0.1];
        let mut values: Vec<f64> = (0..20).map(|k| 100.0 + noise[k % noise.len()]).collect();
        values.push(120.0);
        let (mut store, control) = store_of(dir.path(), &values, &[("machine", "m"), ("channel", "control")]);
        record(&mut store, &values, &[("machine", "m")], 1);
        let system = store.series().unwrap().into_iter().find(|s| s.id != control.id).unwrap();
        let g = gate(&store, &system, "p50", 0.99, &Options::default()).unwrap().unwrap();
        assert!(g.check.is_regression() && g.machine.is_some() && !g.fails(), "{g:?}");
        let g = gate(&store, &control, "p50", 0.99, &Options::default()).unwrap().unwrap();
        assert!(g.fails(), "the control's own gate is not excused by itself: {g:?}");
    }
}
