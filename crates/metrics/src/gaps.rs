//! Gaps in a backend's answers: stretches in which it answered nothing while the rest of
//! the run went on, found from the per-tenth-of-a-second counts every results file keeps.
//!
//! # Method
//! - A **silence** of a backend is a run of tenths of a second ([`TICK`]) in which it gave
//!   no answer, between two in which it did (or the run's start or end).
//! - It is a **gap** when answering none of the `n` requests that finished in it (answered
//!   by other backends, or failed) is too unlikely at the backend's share `p` of all the
//!   run's finished requests: `(1 − p)^n` under [`ALPHA`] divided by the number of
//!   silences tested (Bonferroni), so a slow backend's natural pauses between answers
//!   are not gaps while a stopped one's are, however short, once enough requests pass.
//! - **Resolution**: its last answer before fell in the tenth before `from_s`, its first
//!   after in the tenth from `to_s`; so the time without an answer is within a tenth of a
//!   second of [`Gap::length_s`] (the midpoint).

use crate::recorder::{Keyed, Tick, Timeline, TICK};
use crate::stats::ALPHA;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A stretch in which a backend answered nothing while other requests finished.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Gap {
    /// Start of the first tenth of a second without an answer from it, s from the run's
    /// start (0 when it had not answered yet).
    pub from_s: f64,
    /// Start of the tenth of a second in which it answered again; `None` when it did not
    /// before the run ended.
    pub to_s: Option<f64>,
    /// How long it gave no answer, within ±0.1 s (see the module's method).
    pub length_s: f64,
    /// Requests that finished meanwhile, answered by other backends or failed.
    pub finished: u64,
}

/// The gaps of every backend, by name, in time order, from the run's finished requests
/// per tick (`all`, `completed` in all) and each backend's; `end_s` is where the run ended.
pub(crate) fn find(all: &Timeline, completed: u64, backends: &Keyed, end_s: f64) -> BTreeMap<String, Vec<Gap>> {
    let tick_s = TICK.as_secs_f64();
    let end_tick = (end_s / tick_s).ceil() as u32;
    // Finished requests up to each tick in which some finished, for the count inside any
    // silence: as many entries as such ticks, not one per tick of the run, whose length a
    // results file states (a corrupt one claimed 39 years: 34 GB of counters).
    let mut ticks: Vec<(u32, u64)> =
        all.iter().filter(|t| t.tick < end_tick).map(|t| (t.tick, u64::from(t.ok) + u64::from(t.failed))).collect();
    ticks.sort_unstable_by_key(|t| t.0);
    let mut sum = 0u64;
    let through: Vec<(u32, u64)> = ticks
        .into_iter()
        .map(|(tick, n)| {
            sum = sum.saturating_add(n);
            (tick, sum)
        })
        .collect();
    let before = |tick: u32| match through.partition_point(|t| t.0 < tick) {
        0 => 0,
        i => through[i - 1].1,
    };
    let finished = |from: u32, to: u32| before(to) - before(from);
    let completed = completed.max(1) as f64;
    // Every silence in which something finished, with its backend's share.
    let mut silences: Vec<(&str, f64, u32, Option<u32>, u64)> = Vec::new();
    for b in backends.iter() {
        let share = b.requests as f64 / completed;
        for (from, to) in silences_of(&b.timeline, end_tick) {
            let n = finished(from, to.unwrap_or(end_tick));
            if n > 0 {
                silences.push((&b.name, share, from, to, n));
            }
        }
    }
    let level = ALPHA / silences.len().max(1) as f64;
    let mut gaps: BTreeMap<String, Vec<Gap>> = BTreeMap::new();
    for (name, share, from, to, n) in silences {
        // ln of (1 − p)^n; a backend that answered everything has no silence with n > 0.
        let unlikely = share < 1.0 && n as f64 * (1.0 - share).ln() < level.ln();
        if unlikely {
            gaps.entry(name.to_string()).or_default().push(gap(from, to, end_s, n));
        }
    }
    gaps
}

/// The silences of one backend: `[from, to)` in ticks, `to` `None` when it runs to the end.
fn silences_of(answered: &[Tick], end_tick: u32) -> Vec<(u32, Option<u32>)> {
    let mut out = Vec::new();
    let mut next_quiet = 0;
    // A tick past the end (runs merged from different starts) cannot bound a silence.
    for t in answered.iter().filter(|t| t.ok + t.failed > 0 && t.tick < end_tick) {
        if t.tick > next_quiet {
            out.push((next_quiet, Some(t.tick)));
        }
        next_quiet = t.tick + 1;
    }
    if next_quiet < end_tick {
        out.push((next_quiet, None));
    }
    out
}

/// The gap over ticks `[from, to)`: the silence between the last answer (somewhere in the
/// tick before) and the next (somewhere in tick `to`) is the ticks' length plus up to two
/// ticks; at the run's start or end, plus up to one.
fn gap(from: u32, to: Option<u32>, end_s: f64, finished: u64) -> Gap {
    let tick_s = TICK.as_secs_f64();
    let from_s = f64::from(from) * tick_s;
    let to_s = to.map(|t| f64::from(t) * tick_s);
    let quiet = to_s.unwrap_or(end_s) - from_s;
    let edges = u32::from(from > 0) + u32::from(to.is_some());
    Gap { from_s, to_s, length_s: quiet + f64::from(edges) * tick_s / 2.0, finished }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, Recorder, Sample};
    use std::time::Duration;

    fn sample(ended: Duration, outcome: Outcome) -> Sample {
        let intended = ended.saturating_sub(Duration::from_millis(1));
        let s = crate::testing::sample(ended, outcome);
        Sample { intended, started: intended, bytes_in: 0, bytes_out: 0, ..s }
    }

    fn gaps_of(r: &Recorder, end_s: f64) -> BTreeMap<String, Vec<Gap>> {
        find(&r.timeline, r.counts.completed, &r.backends, end_s)
    }

    /// A run of `secs` seconds at 100 requests per second alternating over backends a and b,
    /// b silent (its requests refused) while `down(ms)`.
    fn run(secs: u64, down: impl Fn(u64) -> bool) -> Recorder {
        let mut r = Recorder::new();
        for k in 0..secs * 100 {
            let ended = Duration::from_millis(k * 10 + 5);
            let b = k % 2 == 1;
            let refused = b && down(k * 10);
            let outcome = if refused { Outcome::Error(crate::ErrorKind::Refused) } else { Outcome::Status(200) };
            let s = sample(ended, outcome);
            r.record(&s);
            if !refused {
                r.backends.record(if b { b"b" } else { b"a" }, &s);
            }
        }
        r
    }

    #[test]
    fn an_outage_is_one_gap_at_its_length_and_the_other_backend_has_none() {
        // b refuses from 3.00 s to 5.00 s: its last answer ends at 2.995 s, the next at 5.015 s.
        let gaps = gaps_of(&run(8, |ms| (3000..5000).contains(&ms)), 8.0);
        assert_eq!(gaps.keys().collect::<Vec<_>>(), ["b"], "{gaps:?}");
        let g = &gaps["b"][0];
        assert_eq!((g.from_s, g.to_s), (3.0, Some(5.0)));
        assert!((g.length_s - 2.1).abs() < 1e-9, "{g:?}");
        assert!((g.length_s - 2.02).abs() <= 0.1, "within a tenth of the true silence");
        assert_eq!(g.finished, 200, "a's answers and b's refusals meanwhile, at 100/s");
    }

    #[test]
    fn stopping_for_good_and_starting_late_are_gaps_at_the_edges() {
        let gaps = gaps_of(&run(6, |ms| !(1000..4000).contains(&ms)), 6.0);
        let b = &gaps["b"];
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!((b[0].from_s, b[0].to_s), (0.0, Some(1.0)));
        assert_eq!((b[1].from_s, b[1].to_s), (4.0, None));
        assert!((b[1].length_s - 2.05).abs() < 1e-9, "{b:?}");
    }

    /// Found by the fuzz harness: a results file whose run claimed decades made the gap
    /// finder allocate a counter for every tenth of a second of it (34 GB) and abort.
    #[test]
    fn a_run_claiming_decades_costs_nothing_per_tenth_of_a_second() {
        let start = std::time::Instant::now();
        let gaps = gaps_of(&run(2, |ms| ms >= 1000), 1.2e9);
        assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
        let b = &gaps["b"];
        assert_eq!((b.len(), b[0].from_s, b[0].to_s, b[0].finished), (1, 1.0, None, 100), "{b:?}");
        assert!(!gaps.contains_key("a"), "nothing finished after a's last answer: {gaps:?}");
    }

    #[test]
    fn answers_past_the_end_are_ignored() {
        // b refuses from 3 s on; the run is cut at 5 s though answers run to 8 s.
        let gaps = gaps_of(&run(8, |ms| (3000..6000).contains(&ms)), 5.0);
        assert_eq!((gaps["b"][0].from_s, gaps["b"][0].to_s), (3.0, None));
    }

    #[test]
    fn a_backend_answering_now_and_then_at_its_share_has_no_gaps() {
        // c answers one request in 50, every half second: its pauses are its share, not gaps.
        let mut r = run(10, |_| false);
        for k in 0..20u64 {
            let s = sample(Duration::from_millis(k * 500 + 7), Outcome::Status(200));
            r.record(&s);
            r.backends.record(b"c", &s);
        }
        assert!(gaps_of(&r, 10.0).is_empty());
        // Silent for 2 s (200 requests at a 1.7% share: 0.983^200 ≈ 3%): too likely to call,
        // tested with its 16 other silences.
        let mut r = run(10, |_| false);
        for k in (0..20u64).filter(|k| !(8..11).contains(k)) {
            let s = sample(Duration::from_millis(k * 500 + 7), Outcome::Status(200));
            r.record(&s);
            r.backends.record(b"c", &s);
        }
        assert!(gaps_of(&r, 10.0).is_empty());
    }
}
