//! The capacity search: the highest open-loop rate that meets every objective and that the
//! target delivered ([`Delivery`]). An exponential ramp brackets it, a bisection narrows
//! the bracket to a precision, within a bound on the total time; a collapse of the target
//! ends the ramp at once. A probe that missed is probed again before its rate is judged (a
//! pause of the machine, or a miss within the probe's resolution, is noise), and the rate
//! found is held once more for a step (a miss steps down), so that two searches of one
//! target agree.
//!
//! [`search`] is a pure function over a probe callback and a clock, tested with tables like
//! the pacer, and so is [`Delivery::of`]; [`Capacity::run`] gives the search real probes.

pub use crate::delivery::{Delivery, DELIVERED_AT_LEAST};
use crate::series::{RunOrder, Runner};
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
    /// Bound on the whole search, the hold included.
    pub max_time: Duration,
}

/// What one probe said.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Verdict {
    /// Every objective was met.
    pub met: bool,
    /// The target gave up: under half the offered rate succeeded.
    pub collapsed: bool,
    /// Built on failure (no run finished, or under half of its requests succeeded): not a
    /// measure of the target at this rate, and not probed again.
    pub failed: bool,
    /// The target delivered under [`OVERLOADED_BELOW`] of the rate: over its capacity, not
    /// noise, and not probed again.
    pub overloaded: bool,
}

/// A probe that delivered under this share of its rate missed by overload, not by noise: a
/// pause of the machine delays answers (p99) but a target with room catches up within the
/// probe. Probing such a miss again only overloads the target longer, and the reruns
/// against nginx and varnish found the target slower for tens of seconds after sixteen
/// seconds of the ramp's and the bisection's overloads (wrk before and after a search: 41,553
/// and 34,270 req/s).
pub const OVERLOADED_BELOW: f64 = 0.9;

/// What a probe is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The ramp: doubling from the start rate until a miss.
    Ramp,
    /// The bisection between the highest rate met and the lowest missed.
    Search,
    /// The rate of the probe before, again: that one missed (and was a result), and a miss
    /// may be noise.
    Again,
    /// The ramp's miss, once more after the bisection met every rate up to it: a ceiling
    /// that a passing disturbance set would cap the search below the target's capacity.
    Ceiling,
    /// The rate found, once more for a step: the verification.
    Hold,
}

impl Stage {
    /// `ramp`, `search`, `again`, `hold`: the probe's `stage` label.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Ramp => "ramp",
            Stage::Search => "search",
            Stage::Again => "again",
            Stage::Ceiling => "ceiling",
            Stage::Hold => "hold",
        }
    }
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

/// One probe the search ran.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probed {
    /// Its rate.
    pub rate: f64,
    /// What it was for.
    pub stage: Stage,
    /// What it said.
    pub verdict: Verdict,
}

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Findings {
    /// The highest rate judged to meet every objective and not missed when held: the
    /// capacity.
    pub capacity: Option<f64>,
    /// The lowest rate judged to miss one (a rate missed when held included).
    pub failed_at: Option<f64>,
    /// The rate at which the target collapsed during the ramp.
    pub collapsed_at: Option<f64>,
    /// Why it stopped.
    pub stop: Stop,
    /// Every probe, in order: re-probes and holds included.
    pub probed: Vec<Probed>,
    /// The holds: each rate held and whether it met. A miss steps down: the bisection goes
    /// on below it, and what it finds is held in turn.
    pub held: Vec<(f64, bool)>,
}

impl Findings {
    /// The rates probed, in order.
    pub fn rates(&self) -> Vec<f64> {
        self.probed.iter().map(|p| p.rate).collect()
    }

    /// The capacity held when probed once more for a step: `Some(true)`; no rate held (each
    /// missed, down to none left): `Some(false)`; not held (none found, no time left, or
    /// stopped): `None`.
    pub fn verified(&self) -> Option<bool> {
        self.held.last().map(|&(_, met)| met)
    }

    /// The interval the capacity is in, from the probes: from the highest rate judged met
    /// (and held) to the lowest judged missed (`None` above: nothing missed up to
    /// `--max-rate`). If the target meets its objectives at every rate below one it meets,
    /// the highest rate it sustains for a step lies in `[low, high)`; each bound rests on
    /// the probes at its rate, a probe within its resolution probed twice.
    pub fn interval(&self) -> (f64, Option<f64>) {
        (self.capacity.unwrap_or(0.0), self.failed_at)
    }

    /// Why it stopped, for people, and what the hold said.
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
        format!("{collapse}{why}{}", self.hold_text())
    }

    /// `; held 925/s for a step: met`, `; held 950/s for a step: missed, stepped down; held
    /// 937/s for a step: met`.
    fn hold_text(&self) -> String {
        let mut parts: Vec<String> = self
            .held
            .iter()
            .map(|&(rate, met)| match met {
                true => format!("held {rate:.0}/s for a step: met"),
                false => format!("held {rate:.0}/s for a step: missed, stepped down"),
            })
            .collect();
        if self.verified() != Some(true) {
            match self.capacity {
                None if !self.held.is_empty() => parts.push("no rate held".into()),
                None => {}
                Some(c) if self.stop == Stop::Interrupted => parts.push(format!("{c:.0}/s not held (interrupted)")),
                Some(c) => parts.push(format!("{c:.0}/s not held: no time left for it (not verified)")),
            }
        }
        parts.iter().map(|p| format!("; {p}")).collect()
    }
}

/// The search in progress: its bounds, clock, probe and findings.
struct Searching<'a> {
    b: &'a Bounds,
    elapsed: &'a mut dyn FnMut() -> Duration,
    probe: &'a mut dyn FnMut(f64, Stage) -> Option<Verdict>,
    out: Findings,
    /// Every rate judged, in order, and whether it met.
    judged: Vec<(f64, bool)>,
}

impl Searching<'_> {
    /// `steps` more probes end within the time bound.
    fn fits(&mut self, steps: u32) -> bool {
        (self.elapsed)() + self.b.step * steps <= self.b.max_time
    }

    fn run(&mut self, rate: f64, stage: Stage) -> Option<Verdict> {
        let verdict = (self.probe)(rate, stage)?;
        self.out.probed.push(Probed { rate, stage, verdict });
        Some(verdict)
    }

    /// The verdict on `rate`: its probe's, or when that missed (and is a result), the probe
    /// again's, when there is time for it. A miss may be noise: a pause of the machine of a
    /// few hundred milliseconds puts a short probe's p99 over its bound, and a miss of the
    /// delivered objective by less than its resolution cannot be told from one. The second
    /// probe decides. `None`: stopped.
    fn judge(&mut self, rate: f64, stage: Stage) -> Option<Verdict> {
        let first = self.run(rate, stage)?;
        let again = !first.met && !first.failed && !first.overloaded && self.fits(1);
        let verdict = if again { self.run(rate, Stage::Again)? } else { first };
        self.judged.push((rate, verdict.met));
        Some(verdict)
    }

    fn interrupted(mut self) -> Findings {
        self.out.stop = Stop::Interrupted;
        self.out
    }

    /// The ramp, then the bisection, then the ceiling, then the hold.
    fn search(mut self) -> Findings {
        let mut rate = self.b.start_rate.min(self.b.max_rate);
        let mut ceiling_probed = false;
        loop {
            let Some(missed) = self.ramp(rate) else { return self.interrupted() };
            if !missed {
                return self.hold();
            }
            let ceiling = self.out.failed_at;
            if self.bisect().is_none() {
                return self.interrupted();
            }
            // The ramp's miss, probed once more when the bisection met every rate up to it
            // (a bracket whose top is still the ramp's miss) and the target did not
            // collapse: the reruns against varnish found a ramp's first brush with 51,200/s
            // missed twice (10,000 requests dropped) where the other searches met 60,000/s
            // and more, and capped that search at 50,400/s. Met now, the ramp goes on from
            // it. Once per search: a target that misses it again keeps its ceiling.
            let again = !ceiling_probed && self.out.collapsed_at.is_none() && self.out.failed_at == ceiling;
            let Some(top) = ceiling.filter(|_| again && self.fits(2)) else { break };
            ceiling_probed = true;
            let Some(v) = self.judge(top, Stage::Ceiling) else { return self.interrupted() };
            if !v.met {
                break;
            }
            (self.out.capacity, self.out.failed_at) = (Some(top), None);
            if top >= self.b.max_rate {
                self.out.stop = Stop::MaxRateMet;
                break;
            }
            rate = (top * 2.0).min(self.b.max_rate);
        }
        self.hold()
    }

    /// Doubling from `rate` until a miss: `Some(true)`, with the miss in `failed_at`;
    /// `Some(false)` when the time bound or `--max-rate` ended it (said in `stop`); `None`:
    /// stopped. A probe starts only if it and the hold after it end within the bound.
    fn ramp(&mut self, mut rate: f64) -> Option<bool> {
        loop {
            if !self.fits(2) {
                self.out.stop = Stop::TimeInRamp;
                return Some(false);
            }
            let v = self.judge(rate, Stage::Ramp)?;
            if !v.met {
                self.out.failed_at = Some(rate);
                self.out.collapsed_at = v.collapsed.then_some(rate);
                return Some(true);
            }
            self.out.capacity = Some(rate);
            if rate >= self.b.max_rate {
                self.out.stop = Stop::MaxRateMet;
                return Some(false);
            }
            rate = (rate * 2.0).min(self.b.max_rate);
        }
    }

    /// Bisection between the highest rate judged met (or nothing) and the lowest missed, to
    /// the precision or the time bound. `None`: stopped.
    fn bisect(&mut self) -> Option<()> {
        while let Some(hi) = self.out.failed_at {
            let lo = self.out.capacity.unwrap_or(0.0);
            if hi - lo <= self.b.precision * hi.max(1.0) || hi - lo < 1.0 {
                self.out.stop = Stop::Bracketed;
                break;
            }
            if !self.fits(2) {
                self.out.stop = Stop::TimeInSearch;
                break;
            }
            let mid = (lo + hi) / 2.0;
            match self.judge(mid, Stage::Search)? {
                v if v.met => self.out.capacity = Some(mid),
                _ => self.out.failed_at = Some(mid),
            }
        }
        Some(())
    }

    /// The rate found, probed once more for a step (Nighthawk's "testing stage"). A miss
    /// makes it a rate that missed: the search steps down, bisecting again from the next
    /// lower rate judged met up to it, and holds what it finds.
    fn hold(mut self) -> Findings {
        while let Some(rate) = self.out.capacity {
            if !self.fits(1) {
                break;
            }
            let Some(v) = self.judge(rate, Stage::Hold) else { return self.interrupted() };
            self.out.held.push((rate, v.met));
            if v.met {
                break;
            }
            self.out.failed_at = Some(self.out.failed_at.map_or(rate, |f| f.min(rate)));
            self.out.capacity =
                self.judged.iter().filter(|&&(r, met)| met && r < rate).map(|&(r, _)| r).max_by(f64::total_cmp);
            if self.bisect().is_none() {
                return self.interrupted();
            }
        }
        self.out
    }
}

/// The ramp, then the bisection, then the hold. `probe(rate, stage)` runs one probe
/// (`None`: the study was stopped); `elapsed()` is the time since the search began. A probe
/// of the ramp or the bisection starts only if it and a hold can end within `max_time`; a
/// hold or a probe again, if it can.
pub fn search(
    b: &Bounds,
    elapsed: &mut dyn FnMut() -> Duration,
    probe: &mut dyn FnMut(f64, Stage) -> Option<Verdict>,
) -> Findings {
    let out = Findings {
        capacity: None,
        failed_at: None,
        collapsed_at: None,
        stop: Stop::Bracketed,
        probed: Vec::new(),
        held: Vec::new(),
    };
    Searching { b, elapsed, probe, out, judged: Vec::new() }.search()
}

/// A capacity search against a base run order.
#[derive(Clone, Debug)]
pub struct Capacity {
    /// The base run order: every probe is its plan at one rate for `bounds.step`.
    pub base: RunOrder,
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
    pub findings: Findings,
    /// A row per probe, in the order tried.
    pub table: StudyTable,
}

impl Capacity {
    /// Runs the search with real probes.
    pub fn run(&self, runner: &mut Runner) -> Result<Found, StudyError> {
        if let Some(dir) = &self.dir {
            std::fs::create_dir_all(dir).map_err(|e| StudyError::Io(dir.clone(), e))?;
        }
        let mut table = StudyTable::new("capacity", &["probe", "rate", "stage"]);
        table.offered_column = Some("rate_per_sec".into());
        let started = Instant::now();
        let mut error = None;
        let findings = search(&self.bounds, &mut || started.elapsed(), &mut |rate, stage| match self.probe(
            runner,
            rate,
            stage,
            table.rows.len(),
        ) {
            Ok(Some((row, verdict))) => {
                // The row of the miss says it was not the last word on its rate.
                if let (Stage::Again, Some(before)) = (stage, table.rows.last_mut()) {
                    if let Some(missed) = before.slos.iter_mut().find(|s| !s.pass) {
                        missed.actual.push_str(": probed again");
                    }
                }
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
        table.partial = findings.stop == Stop::Interrupted;
        if !table.partial {
            runner.keep_capacity(findings.capacity, &self.base.plan_digest());
        }
        Ok(Found { findings, table })
    }

    fn probe(
        &self,
        runner: &mut Runner,
        rate: f64,
        stage: Stage,
        index: usize,
    ) -> Result<Option<(StudyRow, Verdict)>, StudyError> {
        let level = Level::Rate(rate);
        let name = format!("probe-{:02}-{}", index + 1, level.file_label());
        let mut order = self.base.clone();
        order.plan = level.apply(&self.base.plan, self.bounds.step);
        // Each probe its own request stream: a probe's new objects were not asked for by
        // any other probe.
        order.plan.in_study(index as u64 + 1, &[], 0, 0);
        order.labels.clear();
        order = order
            .label("probe", (index + 1).to_string())
            .label("rate", format!("{rate:.0}/s"))
            .label("stage", stage.name());
        order.output = self.dir.as_ref().map(|d| d.join(format!("{name}.brg")));
        order.hdr_log = self.base.hdr_log.as_ref().map(|p| suffixed(p, std::slice::from_ref(&name)));
        order.log = self.base.log.clone().map(|mut l| {
            l.path = suffixed(&l.path, std::slice::from_ref(&name));
            l
        });
        let Some(done) = runner.run(&order)? else { return Ok(None) };
        // Delivering the rate first: the objectives of a rate not delivered say little.
        let delivery = Delivery::of(&done.summary, rate);
        let slos = std::iter::once(delivery.result()).chain(self.slos.iter().map(|s| s.check(&done.summary))).collect();
        let labels = vec![(index + 1).to_string(), format!("{rate:.0}/s"), stage.name().to_string()];
        let row = StudyRow { labels, offered: Some(rate), runs: vec![done.summary], slos, ..Default::default() };
        runner.note(&format!("probe {} ({}): {rate:.0}/s → {}", index + 1, stage.name(), row_note(&row)));
        let verdict = verdict(&row, &delivery);
        Ok(Some((row, verdict)))
    }
}

/// A probe meets the objectives only if it delivered the rate (an objective of its row, the
/// first) and is a result at all: a probe built on failure meets nothing, whatever its
/// objectives say. The target collapsed when the probe is built on failure or under half of
/// the rate was delivered.
fn verdict(r: &StudyRow, delivery: &Delivery) -> Verdict {
    let failed = r.failure().is_some();
    let share = delivery.share();
    Verdict {
        met: r.passed() && !failed,
        collapsed: failed || share < 0.5,
        failed,
        overloaded: share < OVERLOADED_BELOW,
    }
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
        r.offered.is_some() && (r.offered == found.findings.failed_at || r.offered == found.findings.capacity)
    };
    found
        .table
        .rows
        .iter()
        .filter(near)
        .flat_map(|r| r.runs.iter().flat_map(|s| s.warnings.iter()))
        .filter(|w| w.kind.generator_limited())
        .map(|w| w.text.clone())
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
    fn against(b: &Bounds, capacity: f64, collapse: f64, stop_after: usize) -> Findings {
        noisy(b, capacity, collapse, stop_after, &mut |_, _, _| None)
    }

    /// [`against`], with `noise(rate, stage, n)` overriding the verdict of the `n`th probe
    /// (from 0) when it returns one.
    fn noisy(
        b: &Bounds,
        capacity: f64,
        collapse: f64,
        stop_after: usize,
        noise: &mut dyn FnMut(f64, Stage, usize) -> Option<Verdict>,
    ) -> Findings {
        let clock = std::cell::Cell::new(Duration::ZERO);
        let mut n = 0;
        search(b, &mut || clock.get(), &mut |rate, stage| {
            clock.set(clock.get() + STEP);
            n += 1;
            let truth = Verdict { met: rate <= capacity, collapsed: rate > collapse, ..Verdict::default() };
            (n <= stop_after).then(|| noise(rate, stage, n - 1).unwrap_or(truth))
        })
    }

    /// A miss: of an objective, or of the rate delivered.
    const MISSED: Verdict = Verdict { met: false, collapsed: false, failed: false, overloaded: false };
    /// A miss by overload: under 90% of the rate delivered.
    const OVERLOADED: Verdict = Verdict { met: false, collapsed: false, failed: false, overloaded: true };
    /// A probe built on failure (every request refused).
    const FAILED: Verdict = Verdict { met: false, collapsed: true, failed: true, overloaded: true };

    fn stages(o: &Findings) -> Vec<(f64, Stage)> {
        o.probed.iter().map(|p| (p.rate, p.stage)).collect()
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
            assert_eq!(o.interval(), (lo, Some(hi)));
            // The rate found is held once more, last, and holds.
            let last = o.probed.last().unwrap();
            if o.capacity.is_some() {
                assert_eq!((last.rate, last.stage, o.verified()), (lo, Stage::Hold, Some(true)), "{capacity}");
            } else {
                assert_eq!(o.verified(), None, "nothing to hold: {o:?}");
            }
        }
    }

    #[test]
    fn the_ramp_doubles_then_bisects_then_holds() {
        let o = against(&bounds(), 1000.0, f64::INFINITY, usize::MAX);
        assert_eq!(&o.rates()[..7], &[100.0, 200.0, 400.0, 800.0, 1600.0, 1600.0, 1200.0]);
        assert!(o.probed[..5].iter().all(|p| p.stage == Stage::Ramp));
        // Every miss is probed again, at once; the rest is the bisection and the hold.
        for (i, p) in o.probed.iter().enumerate().skip(5) {
            let before = &o.probed[i - 1];
            let again = !before.verdict.met && before.stage != Stage::Again;
            assert_eq!(p.stage == Stage::Again, again, "{i}: {:?}", stages(&o));
            assert!(again || matches!(p.stage, Stage::Search | Stage::Hold), "{i}: {:?}", stages(&o));
            assert_ne!(p.stage, Stage::Ceiling, "the bisection missed below the ramp's miss: {:?}", stages(&o));
        }
        assert_eq!(o.held, [(o.capacity.unwrap(), true)]);
        assert!(o.stop_text(&bounds()).ends_with(&format!("held {:.0}/s for a step: met", o.capacity.unwrap())));
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
        assert_eq!(o.rates(), [100.0, 200.0, 400.0, 500.0, 500.0], "--max-rate, then held");
        assert_eq!(o.verified(), Some(true));

        // Time for three probes: the ramp keeps a step for the hold, so it stops before the
        // third, and 200/s is held.
        let b = Bounds { max_time: STEP * 3, ..bounds() };
        let o = against(&b, 1e9, f64::INFINITY, usize::MAX);
        assert_eq!((o.stop, o.rates()), (Stop::TimeInRamp, vec![100.0, 200.0, 200.0]));
        assert_eq!(o.probed[2].stage, Stage::Hold);
        let b = Bounds { max_time: STEP * 5, ..bounds() };
        let o = against(&b, 150.0, f64::INFINITY, usize::MAX);
        assert_eq!((o.stop, o.probed.len(), o.verified()), (Stop::TimeInSearch, 5, Some(true)));
        // Never beyond the bound, whatever it is.
        for steps in 0..12 {
            let b = Bounds { max_time: STEP * steps, ..bounds() };
            let o = against(&b, 150.0, f64::INFINITY, usize::MAX);
            assert!(o.probed.len() <= steps as usize, "{steps} steps: {o:?}");
        }

        let o = against(&bounds(), 1000.0, f64::INFINITY, 2);
        assert_eq!((o.stop, o.capacity, o.probed.len()), (Stop::Interrupted, Some(200.0), 2));
        assert_eq!(o.verified(), None, "not held: interrupted");
        assert!(o.stop_text(&bounds()).ends_with("200/s not held (interrupted)"), "{}", o.stop_text(&bounds()));
    }

    /// Issue 32, finding 6: two searches of one target gave 188 and 700 req/s. The probe
    /// that failed missed the delivered objective by 1.5%, below what a 2 s probe resolves,
    /// and the search took it for the target's limit. The reruns of bench/capacity.sh found
    /// the same of pauses of the machine: one probe at 400/s with a p99 of 399 ms made a
    /// search of nginx report 394/s where the others found 10,000/s. A miss is noise until
    /// its rate misses again.
    #[test]
    fn a_miss_is_probed_again_before_it_is_judged() {
        // (what, the target's capacity, verdicts overriding the nth probe's, probes expected
        // in a row)
        type Case = (&'static str, f64, Vec<(usize, Verdict)>, Vec<(f64, Stage)>);
        let table: [Case; 5] = [
            // Noise at 200/s: probed again, met, and the search goes on to the target's 700.
            (
                "noise in the ramp",
                700.0,
                vec![(1, MISSED)],
                vec![(100.0, Stage::Ramp), (200.0, Stage::Ramp), (200.0, Stage::Again), (400.0, Stage::Ramp)],
            ),
            // Noise in the bisection (its first probe, 1200/s, misses and is probed again;
            // then 1000/s): the same.
            ("noise in the search", 1000.0, vec![(8, MISSED)], vec![(1000.0, Stage::Search), (1000.0, Stage::Again)]),
            // A target truly short of the rate misses again: the miss stands.
            ("a real miss", 150.0, vec![], vec![(200.0, Stage::Ramp), (200.0, Stage::Again), (150.0, Stage::Search)]),
            // A miss by overload (under 90% delivered) is no noise: probing it again would
            // only overload the target longer.
            ("overloaded", 150.0, vec![(1, OVERLOADED)], vec![(200.0, Stage::Ramp), (150.0, Stage::Search)]),
            // A probe built on failure is not a measure of the target: not probed again, and
            // the search takes it for the target's limit, as it took the finding's miss
            // (193.75/s here, 188 there).
            ("built on failure", 1e9, vec![(1, FAILED)], vec![(200.0, Stage::Ramp), (150.0, Stage::Search)]),
        ];
        for (what, capacity, noise, expect) in table {
            let o = noisy(&bounds(), capacity, f64::INFINITY, usize::MAX, &mut |_, _, n| {
                noise.iter().find(|(at, _)| *at == n).map(|(_, v)| *v)
            });
            let clean = against(&bounds(), capacity, f64::INFINITY, usize::MAX);
            let probed = stages(&o);
            assert!(probed.windows(expect.len()).any(|w| w == expect), "{what}: {probed:?}");
            match what {
                "built on failure" => assert_eq!(o.capacity, Some(193.75), "{what}: {o:?}"),
                _ => assert_eq!((o.capacity, o.failed_at), (clean.capacity, clean.failed_at), "{what}: {o:?}"),
            }
        }
        // Without time for it, the miss stands: a probe again only if it fits.
        let b = Bounds { max_time: STEP * 2, ..bounds() };
        let o = noisy(&b, 1e9, f64::INFINITY, usize::MAX, &mut |_, _, n| (n == 0).then_some(MISSED));
        assert_eq!(stages(&o), [(100.0, Stage::Ramp), (100.0, Stage::Again)]);
        assert_eq!((o.capacity, o.verified()), (Some(100.0), None), "no step left to hold it");
        assert!(o.stop_text(&b).ends_with("100/s not held: no time left for it (not verified)"));
    }

    /// The reruns against varnish: a ramp's first brush with 51,200/s missed twice, every
    /// rate bisected below it met, and the search stopped at 50,400/s where the others found
    /// 60,000/s and more. A ceiling the bisection never contradicted is probed once more.
    #[test]
    fn a_ramp_miss_the_bisection_never_contradicts_is_probed_again() {
        // The ramp's 1600/s misses twice (a passing disturbance); the target does 3000/s.
        let o = noisy(&bounds(), 3000.0, f64::INFINITY, usize::MAX, &mut |rate, stage, _| {
            (rate == 1600.0 && matches!(stage, Stage::Ramp | Stage::Again)).then_some(MISSED)
        });
        let probed = stages(&o);
        let at = probed.iter().position(|&p| p == (1600.0, Stage::Ceiling)).expect("the ceiling probed");
        assert_eq!(probed[at + 1], (3200.0, Stage::Ramp), "met: the ramp goes on: {probed:?}");
        let (lo, hi) = (o.capacity.unwrap(), o.failed_at.unwrap());
        assert!(lo <= 3000.0 && 3000.0 < hi && o.verified() == Some(true), "{o:?}");
        // Only once per search: a ceiling that stays missed keeps the search below it, and
        // a target whose capacity is just below its ramp's miss costs the two probes.
        let o =
            noisy(&bounds(), 3000.0, f64::INFINITY, usize::MAX, &mut |rate, _, _| (rate >= 1600.0).then_some(MISSED));
        let ceilings = stages(&o).iter().filter(|p| p.1 == Stage::Ceiling).count();
        assert_eq!((ceilings, o.failed_at), (1, Some(1600.0)), "{o:?}");
        assert!(o.capacity.unwrap() >= 1600.0 * 0.95 && o.verified() == Some(true), "{o:?}");
        // A bisection that missed below the ramp's miss, or a collapse, settles it: no
        // ceiling probe.
        for (capacity, collapse) in [(1000.0, f64::INFINITY), (1500.0, 1550.0)] {
            let o = against(&bounds(), capacity, collapse, usize::MAX);
            assert!(stages(&o).iter().all(|p| p.1 != Stage::Ceiling), "{capacity}: {o:?}");
        }
    }

    #[test]
    fn a_hold_that_misses_steps_down_and_searches_below_it() {
        // 1000/s met in the search (by luck) but the target misses it when held, twice: 1000
        // becomes the lowest miss, the bisection goes on from the next rate judged met below
        // it (800, of the ramp) to the precision, and what it finds (950) is held.
        let o = noisy(&bounds(), 1000.0, f64::INFINITY, usize::MAX, &mut |rate, stage, _| {
            (matches!(stage, Stage::Hold | Stage::Again) && rate >= 1000.0).then_some(MISSED)
        });
        assert_eq!(o.held, [(1000.0, false), (950.0, true)], "{o:?}");
        assert_eq!((o.capacity, o.failed_at, o.verified()), (Some(950.0), Some(1000.0), Some(true)));
        assert_eq!(o.interval(), (950.0, Some(1000.0)), "within the precision again");
        let after: Vec<(f64, Stage)> = stages(&o).into_iter().skip_while(|p| p.1 != Stage::Hold).collect();
        assert_eq!(
            after,
            [
                (1000.0, Stage::Hold),
                (1000.0, Stage::Again),
                (900.0, Stage::Search),
                (950.0, Stage::Search),
                (950.0, Stage::Hold)
            ]
        );
        assert!(
            o.stop_text(&bounds()).ends_with(
                "bracketed to within 5%; held 1000/s for a step: missed, stepped down; held 950/s for a step: met"
            ),
            "{}",
            o.stop_text(&bounds())
        );
        // A hold that missed once is probed again, like any probe: met, it holds.
        let o = noisy(&bounds(), 1000.0, f64::INFINITY, usize::MAX, &mut |_, stage, _| {
            (stage == Stage::Hold).then_some(MISSED)
        });
        let tail: Vec<Stage> = o.probed.iter().rev().take(2).map(|p| p.stage).collect();
        assert_eq!(tail, [Stage::Again, Stage::Hold]);
        assert_eq!(o.verified(), Some(true));
        // Nothing met below a hold that missed: no capacity, said so.
        let o = noisy(&Bounds { max_rate: 100.0, ..bounds() }, 1e9, f64::INFINITY, usize::MAX, &mut |_, stage, _| {
            (stage != Stage::Ramp).then_some(MISSED)
        });
        assert_eq!((o.capacity, o.failed_at, o.verified()), (None, Some(o.failed_at.unwrap()), Some(false)), "{o:?}");
        assert!(o.failed_at.unwrap() < 2.0, "bisected down to nothing: {o:?}");
        assert!(o.stop_text(&bounds()).ends_with("held 100/s for a step: missed, stepped down; no rate held"));
        // A hold that always misses steps down until the time bound, which holds.
        let b = Bounds { max_time: STEP * 20, ..bounds() };
        let o = noisy(&b, 1000.0, f64::INFINITY, usize::MAX, &mut |_, stage, _| {
            matches!(stage, Stage::Hold | Stage::Again).then_some(MISSED)
        });
        assert!(o.probed.len() <= 20 && o.held.len() > 1 && o.verified() == Some(false), "{o:?}");
        assert!(o.stop_text(&b).ends_with("not held: no time left for it (not verified)"), "{}", o.stop_text(&b));
    }

    use crate::delivery::tests::probe;

    #[test]
    fn a_probe_meets_its_objectives_only_if_it_delivered_the_rate() {
        // A miss within the probe's resolution, not built on failure: the search probes it
        // again.
        let s = probe(200.0, (400, 400, 0, 0), &[(200, 194), (200, 194), (0, 12)]);
        let d = Delivery::of(&s, 200.0);
        let row = StudyRow { slos: vec![d.result()], runs: vec![s], ..Default::default() };
        assert_eq!((d.marginal(), verdict(&row, &d)), (true, MISSED));
        let s = probe(100.0, (200, 200, 0, 0), &[(100, 90), (100, 90), (0, 20)]);
        let d = Delivery::of(&s, 100.0);
        let row = StudyRow { slos: vec![d.result()], runs: vec![s], ..Default::default() };
        assert_eq!(verdict(&row, &d), MISSED);
        assert_eq!(row.verdict(), "SLO missed: delivered>=99% (actual 95.5/s of 100/s (-4.5%: 9 queued at the end))");
        // Under 90% delivered: a miss by overload, not noise (not probed again).
        let s = probe(100.0, (170, 170, 30, 30), &[(100, 85), (70, 85), (0, 0)]);
        let d = Delivery::of(&s, 100.0);
        let row = StudyRow { slos: vec![d.result()], runs: vec![s], ..Default::default() };
        assert!(d.share() < OVERLOADED_BELOW && d.share() >= 0.5, "{d:?}");
        assert_eq!(verdict(&row, &d), OVERLOADED);
        // Under half delivered (most never sent: every slot stayed busy): the target
        // collapsed.
        let s = probe(100.0, (80, 80, 120, 60), &[(60, 40), (20, 40), (0, 0)]);
        let d = Delivery::of(&s, 100.0);
        let row = StudyRow { slos: vec![d.result()], runs: vec![s], ..Default::default() };
        assert_eq!(verdict(&row, &d), Verdict { met: false, collapsed: true, failed: false, overloaded: true });
        // Every request failed: built on failure, not a measure of the target (not probed
        // again).
        let s = probe(100.0, (200, 0, 0, 0), &[(100, 100), (100, 100), (0, 0)]);
        let d = Delivery::of(&s, 100.0);
        let row = StudyRow { slos: vec![d.result()], runs: vec![s], ..Default::default() };
        assert_eq!(verdict(&row, &d), FAILED);
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
