//! The capacity search: the highest open-loop rate that meets every objective and that the
//! target delivered ([`Delivery`]). An exponential ramp brackets it, a bisection narrows
//! the bracket to a precision, within a bound on the total time; a collapse of the target
//! ends the ramp at once.
//!
//! [`search`] is a pure function over a probe callback and a clock, tested with tables like
//! the pacer, and so is [`Delivery::of`]; [`Capacity::run`] gives the search real probes.

use crate::series::{Job, Runner};
use crate::sweep::{row_note, suffixed, Level};
use crate::StudyError;
use barrage_metrics::RunSummary;
use barrage_report::{Slo, SloResult, StudyRow, StudyTable};
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
            format!("the target collapsed at {r:.0}/s (under half the offered rate delivered); ")
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

/// A probe delivered its offered rate when at least this share of the requests its schedule
/// had due was served, successfully and within the probe.
pub const DELIVERED_AT_LEAST: f64 = 0.99;

/// How much of its offered rate a probe delivered, counted in requests rather than as a
/// rate over some window: the requests the schedule had due against those the target
/// served within the probe. Every request a healthy target can serve counts, however close
/// to the end it was sent, so short probes do not fail at their edges; what a target that
/// fell behind still owed at the end does not.
///
/// `due = delivered + queued + dropped + failed`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delivery {
    /// The offered rate, per second.
    pub rate: f64,
    /// Requests the schedule had due during the probe: those sent and those dropped.
    pub due: u64,
    /// Successes served within the probe.
    pub delivered: u64,
    /// Requests the target still owed at the end of the probe beyond what it has in flight
    /// when it keeps up: the queue it built by falling behind, answered only after.
    pub queued: u64,
    /// Due but never sent: every in-flight slot stayed busy until the end.
    pub dropped: u64,
    /// Failed, or started and never finished.
    pub failed: u64,
    /// Started late because every in-flight slot was busy (served or not, they are among
    /// the others; a late request counts as delivered only if it was served within the
    /// probe).
    pub late: u64,
}

impl Delivery {
    /// What probe `s` at `rate` delivered.
    ///
    /// The queue is the growth of what the target owed (requests sent and not yet
    /// answered) from the end of the first second to the end of the probe. A target that
    /// keeps up owes about the same at both moments: the requests of one latency, sent in
    /// the moments before (Little's law); they are answered just after the end and count
    /// as delivered. One that fell behind owes more at the end by the queue it built,
    /// answered only after the probe. The one-second intervals give both (sends by send
    /// time, answers by completion time; an interval across the end is split by time), so
    /// no window edge and no latency figure enters. Without intervals, or in a probe of a
    /// second or less, there is no estimate of the queue.
    ///
    /// A target that paused just before the end (a busy machine) owes more then too, but
    /// answers it all faster than the offered rate once it resumes; one short of capacity
    /// answers it at its capacity, slower than the rate. So what was owed at the end counts
    /// as a queue only when the wait after the attack answered it slower than the rate.
    pub fn of(s: &RunSummary, rate: f64) -> Delivery {
        let r = &s.requests;
        let attack = s.duration.attack_s;
        let answered_by = |t: f64| -> f64 {
            let part = |i: &barrage_metrics::summary::IntervalRow| ((t - i.second as f64) / i.length_s).clamp(0.0, 1.0);
            s.intervals.iter().filter(|i| i.length_s > 0.0).map(|i| (i.ok + i.errors) as f64 * part(i)).sum()
        };
        let queued = match s.intervals.first() {
            Some(first) if attack > first.length_s => {
                let owed_after_first = first.sent as f64 - answered_by(first.length_s);
                let owed_at_end = r.total as f64 - answered_by(attack);
                let kept_up = owed_at_end >= rate * s.duration.wait_s;
                // One request of slack: a send and an answer either side of a boundary.
                let growth = ((owed_at_end - owed_after_first.max(0.0)).round() as u64).saturating_sub(1);
                if kept_up {
                    0
                } else {
                    growth.min(r.ok)
                }
            }
            _ => 0,
        };
        Delivery {
            rate,
            due: r.sent + r.dropped,
            delivered: r.ok - queued,
            queued,
            dropped: r.dropped,
            failed: r.sent.saturating_sub(r.ok),
            late: r.late,
        }
    }

    /// Delivered over due (0 when nothing was due).
    pub fn share(&self) -> f64 {
        if self.due == 0 {
            0.0
        } else {
            self.delivered as f64 / self.due as f64
        }
    }

    /// At least [`DELIVERED_AT_LEAST`] of what was due.
    pub fn met(&self) -> bool {
        self.due > 0 && self.share() >= DELIVERED_AT_LEAST
    }

    /// `715.8/s of 725/s (-1.3%: 60 queued at the end, 32 dropped)`.
    pub fn text(&self) -> String {
        let mut why: Vec<String> =
            [(self.queued, "queued at the end"), (self.dropped, "dropped"), (self.failed, "failed")]
                .into_iter()
                .filter(|(n, _)| *n > 0)
                .map(|(n, what)| format!("{n} {what}"))
                .collect();
        if self.late > 0 {
            why.push(format!("{} started late", self.late));
        }
        let why = if why.is_empty() { String::new() } else { format!(": {}", why.join(", ")) };
        format!("{:.1}/s of {:.0}/s ({:+.1}%{why})", self.rate * self.share(), self.rate, (self.share() - 1.0) * 100.0)
    }

    /// As an objective every probe has, beside the `--slo`s: in the SLO lines, JUnit, the
    /// verdict.
    pub fn result(&self) -> SloResult {
        SloResult {
            slo: format!("delivered>={:.0}%", DELIVERED_AT_LEAST * 100.0),
            actual: self.text(),
            pass: self.met(),
        }
    }
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
            Ok(Some((row, verdict))) => {
                let stopped = row.runs[0].interrupted;
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

    fn probe(&self, runner: &mut Runner, rate: f64, index: usize) -> Result<Option<(StudyRow, Verdict)>, StudyError> {
        let level = Level::Rate(rate);
        let name = format!("probe-{:02}-{}", index + 1, level.file_label());
        let mut job = self.base.clone();
        job.plan = level.apply(&self.base.plan, self.bounds.step);
        // Each probe its own request stream: a probe's new objects were not asked for by
        // any other probe.
        job.plan.in_study(index as u64 + 1, &[], 0, 0);
        job.labels.clear();
        job = job.label("probe", (index + 1).to_string()).label("rate", format!("{rate:.0}/s"));
        job.output = self.dir.as_ref().map(|d| d.join(format!("{name}.brg")));
        job.hdr_log = self.base.hdr_log.as_ref().map(|p| suffixed(p, std::slice::from_ref(&name)));
        job.log = self.base.log.clone().map(|mut l| {
            l.path = suffixed(&l.path, std::slice::from_ref(&name));
            l
        });
        let Some(done) = runner.run(&job)? else { return Ok(None) };
        // Delivering the rate first: the objectives of a rate not delivered say little.
        let delivery = Delivery::of(&done.summary, rate);
        let slos = std::iter::once(delivery.result()).chain(self.slos.iter().map(|s| s.check(&done.summary))).collect();
        let labels = vec![(index + 1).to_string(), format!("{rate:.0}/s")];
        let row = StudyRow { labels, offered: Some(rate), runs: vec![done.summary], slos, ..Default::default() };
        runner.note(&format!("probe {}: {rate:.0}/s → {}", index + 1, row_note(&row)));
        let verdict = verdict(&row, &delivery);
        Ok(Some((row, verdict)))
    }
}

/// A probe meets the objectives only if it delivered the rate (an objective of its row)
/// and is a result at all: a probe built on failure meets nothing, whatever its objectives
/// say. The target collapsed when the probe is built on failure or under half of the rate
/// was delivered.
fn verdict(r: &StudyRow, delivery: &Delivery) -> Verdict {
    let failed = r.failure().is_some();
    Verdict { met: r.passed() && !failed, collapsed: failed || delivery.share() < 0.5 }
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

    /// A probe at `rate` for 2 s: `(sent, ok, dropped, late)`, and per second the requests
    /// sent and answered (the last second is the wait after the attack, 0.3 s).
    fn probe(rate: f64, counts: (u64, u64, u64, u64), seconds: &[(u64, u64)]) -> RunSummary {
        let mut s = RunSummary::default();
        let (sent, ok, dropped, late) = counts;
        s.requests =
            barrage_metrics::summary::RequestCounts { total: sent, sent, ok, dropped, late, ..Default::default() };
        s.duration.attack_s = 2.0;
        s.duration.wait_s = 0.3;
        s.rate_per_sec = Some(rate);
        s.success_ratio = if sent > 0 { ok as f64 / sent as f64 } else { 0.0 };
        s.intervals = seconds
            .iter()
            .enumerate()
            .map(|(i, &(sent, answered))| barrage_metrics::summary::IntervalRow {
                second: i as u64,
                length_s: if i < 2 { 1.0 } else { 0.3 },
                sent,
                ok: answered,
                ..Default::default()
            })
            .collect();
        s
    }

    #[test]
    fn delivery_counts_what_was_served_within_the_probe() {
        let table = [
            // A target that keeps up owes 2 requests at every moment: the last 2 are answered
            // after the attack, as any request sent in its last moments is. Delivered,
            // however short the probe.
            (probe(100.0, (200, 200, 0, 0), &[(100, 98), (100, 100), (0, 2)]), true, "100.0/s of 100/s (+0.0%)"),
            // 90/s of service at 100/s: it owed 10 after the first second and 20 at the
            // end; the growth, less a request of slack, was queued.
            (
                probe(100.0, (200, 200, 0, 0), &[(100, 90), (100, 90), (0, 20)]),
                false,
                "95.5/s of 100/s (-4.5%: 9 queued at the end)",
            ),
            // The same 20 owed at the end, after a pause of the target just before it: all
            // answered within 10 ms (faster than 100/s), so the target kept up.
            (
                {
                    let mut s = probe(100.0, (200, 200, 0, 0), &[(100, 98), (100, 82), (0, 20)]);
                    s.duration.wait_s = 0.01;
                    s
                },
                true,
                "100.0/s of 100/s (+0.0%)",
            ),
            // Every slot busy: requests started late and some never started.
            (
                probe(1000.0, (1900, 1900, 100, 400), &[(1000, 900), (900, 900), (0, 100)]),
                false,
                "950.0/s of 1000/s (-5.0%: 100 dropped, 400 started late)",
            ),
            // Failures are not delivered: 3 of 300 is just within 1%, 4 is not.
            (
                probe(150.0, (300, 297, 0, 0), &[(150, 150), (150, 150), (0, 0)]),
                true,
                "148.5/s of 150/s (-1.0%: 3 failed)",
            ),
            (
                probe(150.0, (300, 296, 0, 0), &[(150, 150), (150, 150), (0, 0)]),
                false,
                "148.0/s of 150/s (-1.3%: 4 failed)",
            ),
            // No intervals (an old file): no estimate of the queue.
            (probe(100.0, (200, 200, 0, 0), &[]), true, "100.0/s of 100/s (+0.0%)"),
            // Nothing due: nothing delivered.
            (probe(100.0, (0, 0, 0, 0), &[]), false, "0.0/s of 100/s (-100.0%)"),
        ];
        for (s, met, text) in table {
            let d = Delivery::of(&s, s.rate_per_sec.unwrap());
            assert_eq!((d.met(), d.text().as_str()), (met, text), "{d:?}");
            assert_eq!(d.due, d.delivered + d.queued + d.dropped + d.failed, "{d:?}");
            let r = d.result();
            assert_eq!((r.slo.as_str(), r.pass, r.actual), ("delivered>=99%", met, d.text()));
        }
        // A step that is not whole seconds: the last interval, from 2 s to the last answer
        // 20 ms after the end, is split by time.
        let mut s = probe(100.0, (250, 250, 0, 0), &[(100, 98), (100, 100), (50, 52)]);
        s.duration.attack_s = 2.5;
        s.intervals[2].length_s = 0.52;
        assert_eq!(Delivery::of(&s, 100.0).queued, 0, "half of the third second was the probe's");
    }

    #[test]
    fn a_probe_meets_its_objectives_only_if_it_delivered_the_rate() {
        let s = probe(100.0, (200, 200, 0, 0), &[(100, 90), (100, 90), (0, 20)]);
        let d = Delivery::of(&s, 100.0);
        let row = StudyRow { slos: vec![d.result()], runs: vec![s], ..Default::default() };
        assert_eq!(verdict(&row, &d), Verdict { met: false, collapsed: false });
        assert_eq!(row.verdict(), "SLO missed: delivered>=99% (actual 95.5/s of 100/s (-4.5%: 9 queued at the end))");
        // Under half delivered (most never sent: every slot stayed busy): the target
        // collapsed.
        let s = probe(100.0, (80, 80, 120, 60), &[(60, 40), (20, 40), (0, 0)]);
        let d = Delivery::of(&s, 100.0);
        let row = StudyRow { slos: vec![d.result()], runs: vec![s], ..Default::default() };
        assert_eq!(verdict(&row, &d), Verdict { met: false, collapsed: true });
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
