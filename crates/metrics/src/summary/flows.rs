//! The figures of a scenario's groups of flows: each group as the merged files asked it,
//! over its own span, and every group together.

use super::build::{distinct, per_sec, sum_labels};
use super::{success_ratio, FlowSummary, LatencyStats};
use crate::file::ResultsReader;
use crate::recorder::Recorder;
use crate::shards::takeover_from;

/// A group of a scenario as the merged files asked it, united by name.
struct AskedGroup<'a> {
    name: &'a str,
    flow: &'a str,
    steps: &'a [String],
    /// Each file's load label, added up by [`sum_labels`].
    loads: Vec<&'a str>,
    /// Flows per second asked by every file together; `None` unless every file asked a rate.
    rate: Option<f64>,
    /// Its span, ms since the start of the earliest run.
    start_ms: u64,
    end_ms: u64,
}

/// Each group's flows, in the order of the headers (groups of merged files united by name,
/// their counts and histograms added, so a merge stays exact), and every group's together.
pub(super) fn flow_summaries(
    readers: &[ResultsReader],
    total: &Recorder,
    attack_s: f64,
) -> (Vec<FlowSummary>, Option<FlowSummary>) {
    let attack_ms = (attack_s * 1e3) as u64;
    let asked = asked_groups(readers, total, attack_ms);
    if asked.is_empty() {
        return (Vec::new(), None);
    }
    let none = crate::recorder::KeyedStats {
        name: String::new(),
        requests: 0,
        failed: 0,
        latency: crate::recorder::new_histogram(),
        timeline: Default::default(),
        flow: Default::default(),
        example: None,
    };
    let groups: Vec<FlowSummary> = asked
        .iter()
        .map(|a| {
            let stats = total.flows.iter().find(|k| k.name == a.name).unwrap_or(&none);
            let mut f = flow_summary(stats, a.start_ms, a.end_ms, a.rate);
            (f.name, f.flow, f.steps) = (a.name.to_string(), a.flow.to_string(), a.steps.to_vec());
            f.load = sum_labels(&a.loads);
            f
        })
        .collect();
    // Every group together: their sums, their histograms added, from the first start to
    // the last end.
    let mut all = none.clone();
    for k in total.flows.iter() {
        all.requests += k.requests;
        all.failed += k.failed;
        all.latency.add(&k.latency).expect("histograms share bounds");
        all.flow += &k.flow;
    }
    // Over the groups that ran: one whose window opened after the run's end adds no time.
    let ran = || asked.iter().filter(|a| a.end_ms > a.start_ms);
    let start = ran().map(|a| a.start_ms).min().unwrap_or(0);
    let end = ran().map(|a| a.end_ms).max().unwrap_or(0);
    let mut total = flow_summary(&all, start, end, None);
    total.name = "all".into();
    total.flow = distinct(asked.iter().map(|a| a.flow).filter(|f| !f.is_empty()), asked.len()).join(", ");
    total.load = groups.iter().map(|g| g.load.as_str()).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" + ");
    (groups, Some(total))
}

/// The groups the merged files asked for, in the order of their headers, each over its
/// span; then any group with flows that no header names (a file made by hand), over the
/// attack.
fn asked_groups<'a>(readers: &'a [ResultsReader], total: &'a Recorder, attack_ms: u64) -> Vec<AskedGroup<'a>> {
    let origin = readers.iter().map(|r| r.header().started_unix_ms).min().unwrap_or(0);
    let mut asked: Vec<AskedGroup> = Vec::new();
    // A takeover runs the rest of its lost shard's part of each group, which that shard's
    // own file already asks: counted again, the group would ask more than its load.
    let own: Vec<_> = readers.iter().map(|r| r.header()).filter(|h| takeover_from(h).is_none()).collect();
    let asked_by_own = |h: &crate::file::RunHeader| own.iter().any(|o| o.launch.shard == h.launch.shard);
    for r in readers.iter().filter(|r| takeover_from(r.header()).is_none() || !asked_by_own(r.header())) {
        let offset = r.header().started_unix_ms - origin;
        // A group without an end runs to the end of its run's attack. A group with one ran
        // to it (the attack ends with its last send, up to one arrival before the window's
        // end), unless the run was stopped early: then to where the attack stopped; a killed
        // run's attack is what its intervals cover.
        let (run_end, stopped) = match r.footer() {
            Some(f) => (f.attack_us / 1000, f.interrupted),
            None => (attack_ms, true),
        };
        for g in &r.header().groups {
            let end = match (g.end_ms, stopped) {
                (Some(end), false) => end,
                (end, _) => end.unwrap_or(run_end).min(run_end),
            };
            // A group of iterations ended with its last flow (its workers were done): its
            // rate is over the time it ran, not over the rest of the run. One file's only:
            // the flows of merged files end on their own clocks.
            let end = match (g.iterations, last_flow_ms(total, &g.name)) {
                (Some(_), Some(last)) if readers.len() == 1 => end.min(last),
                _ => end,
            };
            let end = end.max(g.start_ms);
            let (start_ms, end_ms) = (offset + g.start_ms, offset + end);
            match asked.iter_mut().find(|a| a.name == g.name) {
                Some(a) => {
                    a.loads.push(&g.load);
                    a.rate = a.rate.zip(g.rate).map(|(x, y)| x + y);
                    a.start_ms = a.start_ms.min(start_ms);
                    a.end_ms = a.end_ms.max(end_ms);
                }
                None => asked.push(AskedGroup {
                    name: &g.name,
                    flow: &g.flow,
                    steps: &g.steps,
                    loads: vec![&g.load],
                    rate: g.rate,
                    start_ms,
                    end_ms,
                }),
            }
        }
    }
    // Flows of a group no header names (a file made by hand) still count, over the attack.
    for k in total.flows.iter() {
        if !asked.iter().any(|a| a.name == k.name) {
            let a = AskedGroup {
                name: &k.name,
                flow: "",
                steps: &[],
                loads: Vec::new(),
                rate: None,
                start_ms: 0,
                end_ms: attack_ms,
            };
            asked.push(a);
        }
    }
    asked
}

/// When the last flow of `group` ended, ms from the run's start (to the end of its tick).
fn last_flow_ms(total: &Recorder, group: &str) -> Option<u64> {
    let tick = crate::recorder::TICK.as_millis() as u64;
    let flows = total.flows.iter().find(|k| k.name == group)?;
    flows.timeline.last().map(|t| (u64::from(t.tick) + 1) * tick)
}

/// The figures of a group's flows over its span (ms since the start of the earliest run).
fn flow_summary(k: &crate::recorder::KeyedStats, start_ms: u64, end_ms: u64, rate: Option<f64>) -> FlowSummary {
    let c = &k.flow;
    let duration_s = end_ms.saturating_sub(start_ms) as f64 / 1e3;
    FlowSummary {
        start_s: start_ms as f64 / 1e3,
        duration_s,
        flows: k.requests,
        ok: k.requests - k.failed,
        failed: k.failed,
        success_ratio: success_ratio(k.requests - k.failed, k.requests, c.dropped),
        check_failed: c.check_failed,
        capture_failed: c.capture_failed,
        request_failed: k.failed.saturating_sub(c.check_failed + c.capture_failed),
        skipped_steps: c.skipped,
        dropped: c.dropped,
        unfinished: c.unfinished,
        flows_per_sec: per_sec(k.requests, k.requests, duration_s),
        asked_per_sec: rate,
        latency: LatencyStats::of(&k.latency),
        ..Default::default()
    }
}
