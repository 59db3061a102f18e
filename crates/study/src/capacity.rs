//! The capacity search: the highest open-loop rate that meets every objective. An
//! exponential ramp brackets it, a bisection narrows the bracket to a precision, within a
//! bound on the total time; a collapse of the target ends the ramp at once.
//!
//! [`search`] is a pure function over a probe callback and a clock, tested with tables like
//! the pacer; [`Capacity::run`] gives it real probes.

use crate::series::{Job, Runner};
use crate::sweep::{row_note, suffixed, Level};
use crate::StudyError;
use barrage_report::{Slo, StudyRow, StudyTable};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The search's bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// The first probe's rate.
    pub start_rate: f64,
    /// The highest rate probed.
    pub max_rate: f64,
    /// Stop when the bracket is this narrow, relative to its top (a fraction).
    pub precision: f64,
    /// Length of one probe.
    pub step: Duration,
    /// Bound on the whole search.
    pub max_time: Duration,
}

/// What one probe said.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    /// Every objective was met.
    pub met: bool,
    /// The target gave up: under half the offered rate succeeded.
    pub collapsed: bool,
}

/// Why the search stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stop {
    /// The highest rate allowed met every objective.
    MaxRateMet,
    /// The bracket is within the precision.
    Bracketed,
    /// The time bound ran out while ramping up.
    TimeInRamp,
    /// The time bound ran out while bisecting.
    TimeInSearch,
    /// A signal stopped it.
    Interrupted,
}

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The highest rate that met every objective.
    pub capacity: Option<f64>,
    /// The lowest rate that missed one.
    pub failed_at: Option<f64>,
    /// The rate at which the target collapsed during the ramp.
    pub collapsed_at: Option<f64>,
    /// Why it stopped.
    pub stop: Stop,
    /// The rates probed, in order.
    pub probed: Vec<f64>,
}

impl Outcome {
    /// Why it stopped, for people.
    pub fn stop_text(&self, b: &Bounds) -> String {
        let collapse = self.collapsed_at.map_or(String::new(), |r| {
            format!("the target collapsed at {r:.0}/s (under half the offered rate succeeded); ")
        });
        let why = match self.stop {
            Stop::MaxRateMet => format!("--max-rate {} met every objective: the capacity is at least that", b.max_rate),
            Stop::Bracketed => format!("bracketed to within {:.0}%", b.precision * 100.0),
            Stop::TimeInRamp => "the time bound ran out during the ramp".into(),
            Stop::TimeInSearch => "the time bound ran out during the search".into(),
            Stop::Interrupted => "interrupted: the capacity is from the probes that finished".into(),
        };
        format!("{collapse}{why}")
    }
}

/// The ramp, then the bisection. `probe(rate)` runs one probe (`None`: the study was
/// stopped); `elapsed()` is the time since the search began. A probe starts only if it can
/// end within `max_time`.
pub fn search(
    b: &Bounds,
    elapsed: &mut dyn FnMut() -> Duration,
    probe: &mut dyn FnMut(f64) -> Option<Verdict>,
) -> Outcome {
    let mut out =
        Outcome { capacity: None, failed_at: None, collapsed_at: None, stop: Stop::Bracketed, probed: Vec::new() };
    let mut out_of_time = || elapsed() + b.step > b.max_time;
    let mut rate = b.start_rate.min(b.max_rate);
    // Ramp: double until an objective is missed.
    loop {
        if out_of_time() {
            out.stop = Stop::TimeInRamp;
            return out;
        }
        out.probed.push(rate);
        let Some(v) = probe(rate) else {
            out.stop = Stop::Interrupted;
            return out;
        };
        if !v.met {
            out.failed_at = Some(rate);
            out.collapsed_at = v.collapsed.then_some(rate);
            break;
        }
        out.capacity = Some(rate);
        if rate >= b.max_rate {
            out.stop = Stop::MaxRateMet;
            return out;
        }
        rate = (rate * 2.0).min(b.max_rate);
    }
    // Bisection: between the highest pass (or nothing) and the lowest miss.
    while let Some(hi) = out.failed_at {
        let lo = out.capacity.unwrap_or(0.0);
        if hi - lo <= b.precision * hi.max(1.0) || hi - lo < 1.0 {
            out.stop = Stop::Bracketed;
            return out;
        }
        if out_of_time() {
            out.stop = Stop::TimeInSearch;
            return out;
        }
        let mid = (lo + hi) / 2.0;
        out.probed.push(mid);
        match probe(mid) {
            None => {
                out.stop = Stop::Interrupted;
                return out;
            }
            Some(v) if v.met => out.capacity = Some(mid),
            Some(_) => out.failed_at = Some(mid),
        }
    }
    out
}

/// A capacity search against a base job.
#[derive(Clone, Debug)]
pub struct Capacity {
    /// The base job: every probe is its plan at one rate for `bounds.step`.
    pub base: Job,
    /// The search's bounds.
    pub bounds: Bounds,
    /// The objectives every probe must meet.
    pub slos: Vec<Slo>,
    /// Where each probe's results file goes (`probe-03-400rps.brg`); temporary when `None`.
    pub dir: Option<PathBuf>,
}

/// The search's findings and its probes as a table.
#[derive(Clone, Debug)]
pub struct Found {
    /// What the search found.
    pub outcome: Outcome,
    /// A row per probe, in the order tried.
    pub table: StudyTable,
}

impl Capacity {
    /// Runs the search with real probes.
    pub fn run(&self, runner: &mut Runner) -> Result<Found, StudyError> {
        if let Some(dir) = &self.dir {
            std::fs::create_dir_all(dir).map_err(|e| StudyError::Io(dir.clone(), e))?;
        }
        let mut table = StudyTable::new("capacity", &["probe", "rate"]);
        table.offered_column = Some("rate_per_sec".into());
        let started = Instant::now();
        let mut error = None;
        let outcome = search(&self.bounds, &mut || started.elapsed(), &mut |rate| match self.probe(
            runner,
            rate,
            table.rows.len(),
        ) {
            Ok(Some(row)) => {
                let stopped = row.runs[0].interrupted;
                let verdict = Verdict { met: met(&row), collapsed: collapsed(&row) };
                table.rows.push(row);
                (!stopped).then_some(verdict)
            }
            Ok(None) => None,
            Err(e) => {
                error = Some(e);
                None
            }
        });
        if let Some(e) = error {
            return Err(e);
        }
        table.planned = table.rows.len();
        table.partial = outcome.stop == Stop::Interrupted;
        Ok(Found { outcome, table })
    }

    fn probe(&self, runner: &mut Runner, rate: f64, index: usize) -> Result<Option<StudyRow>, StudyError> {
        let level = Level::Rate(rate);
        let name = format!("probe-{:02}-{}", index + 1, level.file_label());
        let mut job = self.base.clone();
        job.plan = level.apply(&self.base.plan, self.bounds.step);
        // Each probe its own request stream: a probe's new objects were not cached by the last.
        job.plan.seed = barrage_plan::derive_seed(self.base.plan.seed, &[index as u64]);
        job.labels.clear();
        job = job.label("probe", (index + 1).to_string()).label("rate", format!("{rate:.0}/s"));
        job.output = self.dir.as_ref().map(|d| d.join(format!("{name}.brg")));
        job.hdr_log = self.base.hdr_log.as_ref().map(|p| suffixed(p, std::slice::from_ref(&name)));
        job.log = self.base.log.clone().map(|mut l| {
            l.path = suffixed(&l.path, std::slice::from_ref(&name));
            l
        });
        let Some(done) = runner.run(&job)? else { return Ok(None) };
        let slos = self.slos.iter().map(|s| s.check(&done.summary)).collect();
        let labels = vec![(index + 1).to_string(), format!("{rate:.0}/s")];
        let row = StudyRow { labels, offered: Some(rate), runs: vec![done.summary], slos, ..Default::default() };
        runner.note(&format!("probe {}: {rate:.0}/s → {}", index + 1, row_note(&row)));
        Ok(Some(row))
    }
}

/// A probe meets the objectives only if it is a result at all: a probe built on failure
/// meets nothing, whatever its objectives say.
fn met(r: &StudyRow) -> bool {
    r.passed() && r.failure().is_none()
}

/// The target gave up: fewer than half the offered requests succeeded.
fn collapsed(r: &StudyRow) -> bool {
    let s = &r.runs[0];
    s.throughput_per_sec.unwrap_or(0.0) < 0.5 * s.rate_per_sec.unwrap_or(0.0) || s.success_ratio < 0.5
}

/// The knee: the lowest probed rate whose p99 is more than twice the p99 at the lowest rate.
pub fn knee(table: &StudyTable) -> Option<f64> {
    let mut by_rate: Vec<(f64, u64)> =
        table.rows.iter().filter_map(|r| Some((r.offered?, r.runs.first()?.latency.corrected.p99_us))).collect();
    by_rate.sort_by(|a, b| a.0.total_cmp(&b.0));
    let base = by_rate.first()?.1.max(1);
    by_rate.iter().find(|(_, p99)| *p99 > 2 * base).map(|(r, _)| *r)
}

/// barrage itself limited the probes next to the capacity: its CPU or its schedule.
pub fn generator_limited(found: &Found) -> Vec<String> {
    let near = |r: &&StudyRow| {
        r.offered.is_some() && (r.offered == found.outcome.failed_at || r.offered == found.outcome.capacity)
    };
    found
        .table
        .rows
        .iter()
        .filter(near)
        .flat_map(|r| r.runs.iter().flat_map(|s| s.warnings.iter()))
        .filter(|w| w.contains("generator") || w.contains("lagged") || w.contains("barrage's own CPU"))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP: Duration = Duration::from_secs(10);

    fn bounds() -> Bounds {
        Bounds {
            start_rate: 100.0,
            max_rate: 100_000.0,
            precision: 0.05,
            step: STEP,
            max_time: Duration::from_secs(3600),
        }
    }

    /// A target that meets its objectives up to `capacity` and collapses above `collapse`;
    /// each probe takes a step of a fake clock.
    fn against(b: &Bounds, capacity: f64, collapse: f64, stop_after: usize) -> Outcome {
        let clock = std::cell::Cell::new(Duration::ZERO);
        let mut n = 0;
        search(b, &mut || clock.get(), &mut |rate| {
            clock.set(clock.get() + STEP);
            n += 1;
            (n <= stop_after).then_some(Verdict { met: rate <= capacity, collapsed: rate > collapse })
        })
    }

    #[test]
    fn the_search_brackets_a_known_capacity() {
        let table = [
            // (capacity, collapse, expect capacity within, stop)
            (1000.0, f64::INFINITY, Stop::Bracketed),
            (150.0, f64::INFINITY, Stop::Bracketed),
            (50.0, f64::INFINITY, Stop::Bracketed),
            (77_777.0, f64::INFINITY, Stop::Bracketed),
        ];
        for (capacity, collapse, stop) in table {
            let o = against(&bounds(), capacity, collapse, usize::MAX);
            assert_eq!(o.stop, stop, "{capacity}");
            let (lo, hi) = (o.capacity.unwrap_or(0.0), o.failed_at.unwrap());
            assert!(lo <= capacity && capacity < hi, "{capacity}: [{lo}, {hi})");
            assert!(hi - lo <= 0.05 * hi || hi - lo < 1.0, "{capacity}: [{lo}, {hi})");
        }
    }

    #[test]
    fn the_ramp_doubles_then_bisects() {
        let o = against(&bounds(), 1000.0, f64::INFINITY, usize::MAX);
        assert_eq!(&o.probed[..5], &[100.0, 200.0, 400.0, 800.0, 1600.0]);
        assert_eq!(o.probed[5], 1200.0);
    }

    #[test]
    fn a_collapse_is_named_and_ends_the_ramp() {
        let o = against(&bounds(), 300.0, 350.0, usize::MAX);
        assert_eq!(o.collapsed_at, Some(400.0));
        assert!(o.stop_text(&bounds()).starts_with("the target collapsed at 400/s"));
    }

    #[test]
    fn max_rate_met_time_bound_and_interruption_stop_it() {
        let b = Bounds { max_rate: 500.0, ..bounds() };
        let o = against(&b, 1e9, f64::INFINITY, usize::MAX);
        assert_eq!((o.stop, o.capacity), (Stop::MaxRateMet, Some(500.0)));
        assert_eq!(o.probed, [100.0, 200.0, 400.0, 500.0]);

        // Time for three probes: the ramp stops before the fourth.
        let b = Bounds { max_time: STEP * 3, ..bounds() };
        let o = against(&b, 1e9, f64::INFINITY, usize::MAX);
        assert_eq!((o.stop, o.probed.len()), (Stop::TimeInRamp, 3));
        let b = Bounds { max_time: STEP * 5, ..bounds() };
        let o = against(&b, 150.0, f64::INFINITY, usize::MAX);
        assert_eq!((o.stop, o.probed.len()), (Stop::TimeInSearch, 5));

        let o = against(&bounds(), 1000.0, f64::INFINITY, 2);
        assert_eq!((o.stop, o.capacity, o.probed.len()), (Stop::Interrupted, Some(200.0), 3));
    }

    #[test]
    fn precision_sets_how_many_probes_the_bisection_takes() {
        let coarse = against(&Bounds { precision: 0.25, ..bounds() }, 1000.0, f64::INFINITY, usize::MAX);
        let fine = against(&Bounds { precision: 0.01, ..bounds() }, 1000.0, f64::INFINITY, usize::MAX);
        assert!(coarse.probed.len() < fine.probed.len());
        let (lo, hi) = (fine.capacity.unwrap(), fine.failed_at.unwrap());
        assert!(hi - lo <= 0.01 * hi, "[{lo}, {hi})");
    }
}
