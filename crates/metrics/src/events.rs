//! What changed around each event of a run (`--at`): the error burst, the time until the
//! run recovered, and the throughput, latency and backend spread before and after.
//!
//! # Method
//! - **Before** is the stretch of up to [`BEFORE`] before the event (after any earlier event).
//! - A tenth of a second after the event is **disturbed** when its error ratio is above
//!   before's by more than 10% of it plus one percentage point; a second is disturbed when
//!   its p99 is above before's median per-second p99 by more than 10% plus 1 ms. (The
//!   absolute floors keep a clean, fast run's noise from counting: one error among ten
//!   requests after none before is still a disturbance.)
//! - The **burst** starts at the first disturbed tick, at most [`ONSET_S`] after the command
//!   ended, and goes on while disturbed ticks follow each other less than [`BRIDGE_S`] apart.
//! - **Recovery** is the end of the burst, from the event's start; `None` when the burst
//!   lasts until the next event or the end of the run. No burst means no visible effect.
//! - **After** is from the end of the burst to the next event or the end of the run.

use crate::recorder::{Tick, TICK};
use crate::summary::IntervalRow;
use crate::watch::{EventKind, EventRecord};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The longest stretch before an event that sets its baseline.
pub const BEFORE_S: f64 = 5.0;
/// How long after the command's end an effect may begin to count as its effect.
pub const ONSET_S: f64 = 2.0;
/// Disturbed ticks less than this apart belong to one burst.
pub const BRIDGE_S: f64 = 1.0;

/// Figures of a stretch of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Start, seconds from the run's start.
    pub from_s: f64,
    /// End, seconds from the run's start.
    pub to_s: f64,
    /// Successful responses per second.
    pub throughput_per_sec: f64,
    /// Failed share of the finished requests.
    pub error_ratio: f64,
    /// Median of the per-second corrected p99 over the whole seconds inside, µs; `None`
    /// when no whole second fits.
    pub p99_us: Option<u64>,
    /// Share of responses per backend over the whole seconds inside.
    pub backends: BTreeMap<String, f64>,
}

/// One `--at` command and what changed around it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventSummary {
    /// The command, as given.
    pub command: String,
    /// When it started, seconds from the run's start.
    pub at_s: f64,
    /// When it ended; `None` if the results file ends first (the run was killed).
    pub ended_s: Option<f64>,
    /// Its exit code; `None` when it was killed or never ended.
    pub exit: Option<i32>,
    /// What went wrong with the command itself, if anything.
    pub problem: Option<String>,
    /// The last line it printed.
    pub output: String,
    /// The stretch before it.
    pub before: Window,
    /// Failed requests in the burst.
    pub burst_errors: u64,
    /// Start and end of the burst, seconds after the event; `None` without one.
    pub burst_s: Option<(f64, f64)>,
    /// Seconds from the event until the run was back to its figures from before; `Some(0)`
    /// when nothing changed visibly, `None` when it had not recovered by the next event or
    /// the end.
    pub recovery_s: Option<f64>,
    /// The stretch after the burst.
    pub after: Window,
}

/// Seconds of one tick.
fn tick_s() -> f64 {
    TICK.as_secs_f64()
}

/// Events from their start and end records (offsets in ms from the run's start), analysed
/// against the run's ticks and per-second rows.
pub(crate) fn analyse(records: &[EventRecord], ticks: &[Tick], rows: &[IntervalRow], end_s: f64) -> Vec<EventSummary> {
    let mut events: Vec<EventSummary> = starts(records);
    events.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    let ticks: BTreeMap<u32, (u64, u64, u32)> =
        ticks.iter().map(|t| (t.tick, (u64::from(t.ok), u64::from(t.failed), t.max_us))).collect();
    let starts: Vec<f64> = events.iter().map(|e| e.at_s).collect();
    // Where the previous event's effect ended: a baseline must not include it.
    let mut settled = 0.0_f64;
    for (i, e) in events.iter_mut().enumerate() {
        let next = starts.get(i + 1).copied().unwrap_or(end_s).min(end_s);
        e.before = window(&ticks, rows, (e.at_s - BEFORE_S).max(settled.min(e.at_s)), e.at_s);
        let onset_end = e.ended_s.unwrap_or(e.at_s) + ONSET_S;
        let burst = burst(&ticks, &e.before, e.at_s, onset_end.min(next), next);
        let after_from = match burst {
            Some((first, last)) => {
                e.burst_errors = (first..=last).filter_map(|t| ticks.get(&t)).map(|c| c.1).sum();
                let end = f64::from(last + 1) * tick_s();
                // The first tick may begin a little before the command did.
                e.burst_s = Some(((f64::from(first) * tick_s() - e.at_s).max(0.0), end - e.at_s));
                // A burst that reaches the next event (give or take a bridge) never ended:
                // then the disturbed state is what "after" describes.
                e.recovery_s = (end + BRIDGE_S <= next).then_some(end - e.at_s);
                if e.recovery_s.is_some() {
                    end
                } else {
                    f64::from(first) * tick_s()
                }
            }
            None => {
                e.recovery_s = Some(0.0);
                e.at_s
            }
        };
        e.after = window(&ticks, rows, after_from.min(next), next);
        settled = if e.recovery_s.is_some() { after_from } else { next };
    }
    events
}

/// One summary per started command, with its end filled in when recorded.
fn starts(records: &[EventRecord]) -> Vec<EventSummary> {
    let mut by_index: BTreeMap<u32, EventSummary> = BTreeMap::new();
    for r in records {
        let e = by_index.entry(r.index).or_default();
        let at = r.offset_ms as f64 / 1e3;
        match &r.kind {
            EventKind::Started => {
                e.command.clone_from(&r.command);
                e.at_s = at;
            }
            EventKind::Ended { exit, problem, output } => {
                e.ended_s = Some(at);
                e.exit = *exit;
                e.problem.clone_from(problem);
                e.output.clone_from(output);
            }
        }
    }
    by_index.into_values().filter(|e| !e.command.is_empty()).collect()
}

/// The first and last tick of the burst after `at_s`, if there is one.
fn burst(
    ticks: &BTreeMap<u32, (u64, u64, u32)>,
    before: &Window,
    at_s: f64,
    onset_end_s: f64,
    end_s: f64,
) -> Option<(u32, u32)> {
    let error_limit = before.error_ratio * 1.1 + 0.01;
    let (from_t, to_t) = ((before.from_s / tick_s()).round() as u32, (before.to_s / tick_s()).round() as u32);
    let worst_before = ticks.range(from_t..to_t.max(from_t)).map(|(_, c)| c.2).max();
    let slow_limit = worst_before.map(|w| w as f64 * 1.1 + 1000.0);
    let disturbed = |t: u32| {
        let (ok, failed, max_us) = ticks.get(&t).copied().unwrap_or((0, 0, 0));
        let errors = ok + failed > 0 && failed as f64 / (ok + failed) as f64 > error_limit;
        errors || slow_limit.is_some_and(|limit| max_us as f64 > limit)
    };
    let first_tick = (at_s / tick_s()).floor() as u32;
    let onset_tick = (onset_end_s / tick_s()).ceil() as u32;
    let end_tick = (end_s / tick_s()).ceil() as u32;
    let first = (first_tick..onset_tick.min(end_tick)).find(|t| disturbed(*t))?;
    let bridge = (BRIDGE_S / tick_s()).round() as u32;
    let mut last = first;
    for t in first + 1..end_tick {
        if t - last > bridge {
            break;
        }
        if disturbed(t) {
            last = t;
        }
    }
    Some((first, last))
}

/// Whether a row's p99 means something: it had requests and lasted at least half a second
/// (the last, partial interval holds only the stragglers of the run).
fn measured(r: &IntervalRow) -> bool {
    r.ok + r.errors > 0 && r.length_s >= 0.5
}

/// The rows of the whole seconds inside `[from_s, to_s)`, give or take 50 ms (an event
/// starts a few ms after its second): a second partly outside would mix in the other side.
fn whole_seconds(rows: &[IntervalRow], from_s: f64, to_s: f64) -> impl Iterator<Item = &IntervalRow> {
    let slack = 0.05;
    rows.iter().filter(move |r| r.second as f64 >= from_s - slack && (r.second + 1) as f64 <= to_s + slack)
}

/// The figures of `[from_s, to_s)`.
fn window(ticks: &BTreeMap<u32, (u64, u64, u32)>, rows: &[IntervalRow], from_s: f64, to_s: f64) -> Window {
    let (from_t, to_t) = ((from_s / tick_s()).round() as u32, (to_s / tick_s()).round() as u32);
    let (ok, failed) = ticks.range(from_t..to_t.max(from_t)).fold((0, 0), |(o, f), (_, c)| (o + c.0, f + c.1));
    let secs = to_s - from_s;
    let inside: Vec<&IntervalRow> = whole_seconds(rows, from_s, to_s).collect();
    let mut p99s: Vec<u64> = inside.iter().filter(|r| measured(r)).map(|r| r.p99_us).collect();
    p99s.sort_unstable();
    let mut backends: BTreeMap<String, f64> = BTreeMap::new();
    for r in &inside {
        for (name, n) in &r.backends {
            *backends.entry(name.clone()).or_default() += *n as f64;
        }
    }
    let attributed: f64 = backends.values().sum();
    backends.values_mut().for_each(|v| *v /= attributed);
    Window {
        from_s,
        to_s,
        throughput_per_sec: if secs > 0.0 { ok as f64 / secs } else { 0.0 },
        error_ratio: if ok + failed > 0 { failed as f64 / (ok + failed) as f64 } else { 0.0 },
        p99_us: p99s.get(p99s.len() / 2).copied(),
        backends,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(index: u32, ms: u64) -> EventRecord {
        EventRecord { index, offset_ms: ms, command: format!("cmd {index}"), kind: EventKind::Started }
    }

    fn ended(index: u32, ms: u64) -> EventRecord {
        EventRecord {
            index,
            offset_ms: ms,
            command: format!("cmd {index}"),
            kind: EventKind::Ended { exit: Some(0), problem: None, output: "done".into() },
        }
    }

    /// 100 requests per tick for `secs` seconds; `failed(tick)` of them fail.
    fn run(secs: u32, failed: impl Fn(u32) -> u32) -> (Vec<Tick>, Vec<IntervalRow>) {
        let ticks: Vec<Tick> =
            (0..secs * 10).map(|t| Tick { tick: t, ok: 100 - failed(t), failed: failed(t), max_us: 2000 }).collect();
        let rows = (0..secs)
            .map(|s| {
                let failed: u32 = (s * 10..s * 10 + 10).map(&failed).sum();
                let mut backends = BTreeMap::new();
                backends.insert("a".to_string(), u64::from(500 - failed / 2));
                if s < 5 {
                    backends.insert("b".to_string(), u64::from(500 - failed / 2));
                }
                IntervalRow {
                    second: u64::from(s),
                    ok: u64::from(1000 - failed),
                    errors: u64::from(failed),
                    p99_us: 2000,
                    length_s: 1.0,
                    backends,
                    ..Default::default()
                }
            })
            .collect();
        (ticks, rows)
    }

    #[test]
    fn a_burst_of_errors_after_the_event_sets_the_recovery_time() {
        // Event at 5.0 s; ticks 50..=52 (5.0–5.3 s) fail half their requests.
        let (ticks, rows) = run(10, |t| if (50..=52).contains(&t) { 50 } else { 0 });
        let e = &analyse(&[started(0, 5000), ended(0, 5050)], &ticks, &rows, 10.0)[0];
        assert_eq!((e.command.as_str(), e.at_s, e.ended_s, e.exit), ("cmd 0", 5.0, Some(5.05), Some(0)));
        assert_eq!(e.burst_errors, 150);
        let (from, to) = e.burst_s.unwrap();
        assert!(from.abs() < 1e-9 && (to - 0.3).abs() < 1e-9, "{:?}", e.burst_s);
        assert!((e.recovery_s.unwrap() - 0.3).abs() < 1e-9, "{:?}", e.recovery_s);
        assert_eq!(e.before.error_ratio, 0.0);
        assert!((e.before.throughput_per_sec - 1000.0).abs() < 1e-6);
        assert_eq!(e.before.backends.len(), 2, "both backends answered before: {:?}", e.before.backends);
        assert_eq!(e.after.backends.keys().collect::<Vec<_>>(), ["a"], "only a after");
        assert_eq!(e.after.error_ratio, 0.0);
    }

    #[test]
    fn no_burst_means_no_visible_effect_and_a_lasting_one_no_recovery() {
        let (ticks, rows) = run(10, |_| 0);
        let e = &analyse(&[started(0, 3000), ended(0, 3100)], &ticks, &rows, 10.0)[0];
        assert_eq!((e.recovery_s, e.burst_s, e.burst_errors), (Some(0.0), None, 0));
        // Errors from 6 s to the end of the run: no recovery.
        let (ticks, rows) = run(10, |t| if t >= 60 { 30 } else { 0 });
        let e = &analyse(&[started(0, 6000), ended(0, 6010)], &ticks, &rows, 10.0)[0];
        assert_eq!(e.recovery_s, None);
        assert_eq!(e.burst_errors, 40 * 30);
    }

    #[test]
    fn a_slow_tick_is_a_disturbance_and_later_events_bound_earlier_ones() {
        let (mut ticks, rows) = run(10, |_| 0);
        // 4.2 s to 4.5 s: requests up to 50 ms against 2 ms before.
        for t in &mut ticks[42..45] {
            t.max_us = 50_000;
        }
        let records = [started(0, 4000), ended(0, 4010), started(1, 7000), ended(1, 7010)];
        let events = analyse(&records, &ticks, &rows, 10.0);
        assert_eq!(events.len(), 2);
        assert!((events[0].recovery_s.unwrap() - 0.5).abs() < 1e-9, "{:?}", events[0]);
        assert!((events[0].after.to_s - 7.0).abs() < 1e-9, "the next event ends the after window");
        assert_eq!(events[1].before.from_s, 4.5, "the baseline starts once the first effect ended");
        assert_eq!(events[1].recovery_s, Some(0.0));
    }
}
