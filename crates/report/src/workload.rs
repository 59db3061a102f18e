//! Intended against achieved: whether a run measured the workload it asked for. A study's
//! comparison (cache against backend, HTTP against HTTPS) is only as good as its rows'
//! workloads, so every row says what it asked for and what it got, and a row whose workload
//! differs beyond a stated tolerance is marked in every output and is not a result (exit 3),
//! like a row built on failure.
//!
//! What is checked, from what barrage can see itself:
//! - **hits**: the share of requests for objects asked for before (exact, from what was
//!   sent) against the share of answers that came from a cache (the origin's stamps, else
//!   the cache headers; [`barrage_metrics::summary::WorkloadSummary`]), within
//!   [`HIT_TOLERANCE`];
//! - **mix**: each named target's (a `--ratio`'s command's) share of the requests against its
//!   share of the round, within one round per client (each client runs whole rounds);
//! - **a background's schedule**: the requests it sent against those it had due, within
//!   [`DROP_TOLERANCE`] (a background that could not keep its rate was not the load it
//!   says; the measured runs' own unsent requests count against their success);
//! - **a background's length**: it sent for as long as its run did, within 5% and a tenth
//!   of a second (they start together), so that all of the run was under load.

use barrage_metrics::RunSummary;
use serde_json::Value;

/// Most an achieved hit ratio may differ from the intended one, in points of share.
pub const HIT_TOLERANCE: f64 = 0.02;

/// Most of an open loop's due requests that may go unsent (dropped).
pub const DROP_TOLERANCE: f64 = 0.01;

/// The hits a run asked for and got, for the tables: `asked` is the intended share, `got`
/// the achieved one when answers told.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hits {
    /// Intended hit ratio.
    pub asked: f64,
    /// Achieved hit ratio; `None` when no answer told where it came from.
    pub got: Option<f64>,
    /// New objects answered from a cache.
    pub false_hits: u64,
    /// Objects asked for before, answered by the origin.
    pub false_misses: u64,
}

impl Hits {
    /// The hits of runs together (a case's repeats): counts added, ratios over the sum.
    pub fn of(runs: &[RunSummary]) -> Option<Hits> {
        let w: Vec<_> = runs.iter().filter_map(|s| s.workload.as_ref()).collect();
        if w.is_empty() {
            return None;
        }
        let asked_n: u64 = w.iter().map(|w| w.new + w.repeat).sum();
        let repeats: u64 = w.iter().map(|w| w.repeat).sum();
        // Over the runs whose answers told (a run without a cache in front tells nothing).
        let told: Vec<(f64, u64)> = w.iter().filter_map(|w| Some((w.achieved_hit_ratio?, w.judged))).collect();
        let judged: u64 = told.iter().map(|(_, n)| n).sum();
        let cached: f64 = told.iter().map(|(r, n)| r * *n as f64).sum();
        Some(Hits {
            asked: repeats as f64 / asked_n.max(1) as f64,
            got: (judged > 0).then(|| cached / judged as f64),
            false_hits: w.iter().map(|w| w.false_hits).sum(),
            false_misses: w.iter().map(|w| w.false_misses).sum(),
        })
    }

    /// `asked 100.0%, got 61.7% (214 false misses)`.
    pub fn text(&self) -> String {
        let got = self.got.map_or_else(
            || "none told (no answer came from a cache or carried a cache header: is there a cache?)".into(),
            percent,
        );
        let mut falses = Vec::new();
        if self.false_hits > 0 {
            falses.push(format!("{} false hit{}", self.false_hits, plural(self.false_hits)));
        }
        if self.false_misses > 0 {
            falses.push(format!("{} false miss{}", self.false_misses, if self.false_misses == 1 { "" } else { "es" }));
        }
        let falses = if falses.is_empty() { String::new() } else { format!(" ({})", falses.join(", ")) };
        format!("asked {} hits, got {got}{falses}", percent(self.asked))
    }

    /// Whether the achieved hit ratio is beyond the tolerance of the intended one.
    pub fn deviates(&self) -> bool {
        // A hair over the tolerance from floating point (0.98 against 1.0) is within it.
        self.got.is_some_and(|g| (g - self.asked).abs() > HIT_TOLERANCE + 1e-9)
    }
}

/// Why `runs` (a row's measured runs) and `background` (the load beside them) did not get
/// the workload they asked for; `None` when they did, within the tolerances.
pub fn deviation_of(runs: &[RunSummary], background: &[RunSummary]) -> Option<String> {
    let own = Hits::of(runs).filter(Hits::deviates).map(|h| h.text());
    let own = own.or_else(|| runs.iter().find_map(mix_deviation));
    own.or_else(|| {
        let bg = Hits::of(background).filter(Hits::deviates).map(|h| h.text());
        let bg = bg.or_else(|| background.iter().find_map(drop_deviation));
        let bg = bg.or_else(|| runs.iter().zip(background).find_map(|(run, bg)| short_background(run, bg)));
        bg.map(|why| format!("background: {why}"))
    })
}

/// A background load that stopped sending while its run still sent, beyond 5% of the run
/// and a tenth of a second (both start together): part of the run was measured without it.
fn short_background(run: &RunSummary, background: &RunSummary) -> Option<String> {
    let (ran, measured) = (background.duration.attack_s, run.duration.attack_s);
    (ran + 0.1 < measured * 0.95).then(|| format!("ran {ran:.2} s of the measured run's {measured:.2} s"))
}

/// A run whose named targets (a `--ratio`'s commands) went in rounds: each name's share of
/// the requests against its share of the round, beyond one round per client.
fn mix_deviation(s: &RunSummary) -> Option<String> {
    // Retried requests count once per attempt: a failing command is sent more often. A
    // scenario's requests are its flows' steps, named by group, in the groups' mix, not in
    // rounds of its targets: its groups are checked against the flows they asked instead.
    if s.retries.is_some() || !s.flows.is_empty() {
        return None;
    }
    let plan = s.settings.get("plan")?;
    let round = plan.get("round").and_then(Value::as_u64).filter(|r| *r > 1)?;
    let clients = plan.get("clients").and_then(Value::as_u64).unwrap_or(1);
    let names: Vec<&str> = plan.get("targets")?.as_array()?.iter().filter_map(|t| t.get("name")?.as_str()).collect();
    if names.len() as u64 != round || s.by_name.is_empty() {
        return None;
    }
    let total: u64 = s.by_name.iter().map(|g| g.requests).sum();
    // Each client sends whole rounds but its last: within a round per client, by name.
    let slack = clients.saturating_mul(round) as f64;
    for g in &s.by_name {
        let share = names.iter().filter(|n| **n == g.name).count() as f64 / round as f64;
        let expected = share * total as f64;
        if (g.requests as f64 - expected).abs() > slack {
            return Some(format!(
                "asked {} of the requests as {}, got {} ({} of {total})",
                percent(share),
                g.name,
                percent(g.requests as f64 / total.max(1) as f64),
                g.requests
            ));
        }
    }
    None
}

/// An open loop that left more of its due requests unsent than [`DROP_TOLERANCE`].
fn drop_deviation(s: &RunSummary) -> Option<String> {
    let due = s.requests.sent + s.requests.dropped;
    let dropped = s.requests.dropped;
    (due > 0 && dropped as f64 > DROP_TOLERANCE * due as f64)
        .then(|| format!("sent {} of {due} requests due ({dropped} dropped: every slot stayed busy)", s.requests.sent))
}

/// What a background load asked for, from its plan: `500/s`, `32 workers`, with its hit
/// ratio and objects when it has them (`500/s, 50% repeats of 10000 objects`).
pub fn background_asked(s: &RunSummary) -> Option<String> {
    let plan = s.settings.get("plan")?;
    let load = plan.get("load")?;
    let mut text = if let Some(open) = load.get("open") {
        let pacer = open.get("pacer")?;
        match pacer.get("constant_per_sec").and_then(Value::as_f64) {
            Some(rate) => format!("{rate}/s"),
            None => "open loop".to_string(),
        }
    } else {
        let workers = load.get("closed")?.get("workers").and_then(Value::as_u64)?;
        format!("{workers} workers")
    };
    if let Some(h) = plan.get("hit_ratio").and_then(Value::as_f64) {
        text.push_str(&format!(", {} repeats", percent(h)));
    }
    if let Some(n) = plan.get("objects").and_then(Value::as_u64) {
        text.push_str(&format!(" of {n} objects"));
    }
    Some(text)
}

fn percent(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::summary::{GroupSummary, WorkloadSummary};

    fn run(new: u64, repeat: u64, false_hits: u64, false_misses: u64) -> RunSummary {
        let mut s = RunSummary::default();
        let w = barrage_metrics::recorder::Workload {
            new,
            repeat,
            new_judged: new,
            repeat_judged: repeat,
            false_hits,
            false_misses,
            stamped: new + repeat,
        };
        s.workload = WorkloadSummary::of(&w, true);
        s
    }

    #[test]
    fn a_hit_ratio_beyond_two_points_deviates_and_says_how() {
        // svLoad's TC8: a "cache-miss" case of new objects, 3,000 of 3,244 answered from cache.
        let tc8 = run(3_244, 0, 3_000, 0);
        let why = deviation_of(std::slice::from_ref(&tc8), &[]).unwrap();
        assert_eq!(why, "asked 0.0% hits, got 92.5% (3000 false hits)");
        // Within the tolerance: 2 false misses of 100 repeats.
        assert_eq!(deviation_of(&[run(0, 100, 0, 2)], &[]), None);
        assert!(deviation_of(&[run(0, 100, 0, 3)], &[]).unwrap().contains("got 97.0% (3 false misses)"));
        // Repeats pool: 1 + 3 false misses of 200 is 2%.
        assert_eq!(deviation_of(&[run(0, 100, 0, 1), run(0, 100, 0, 3)], &[]), None);
        // The background's own.
        let why = deviation_of(&[run(100, 0, 0, 0)], &[run(50, 50, 0, 50)]).unwrap();
        assert_eq!(why, "background: asked 50.0% hits, got 0.0% (50 false misses)");
    }

    /// Found trying seed 000's study: a measure ran 2.3 s beside a background of 2 s.
    #[test]
    fn a_background_that_stopped_before_its_run_deviates() {
        let sending = |attack_s| {
            let mut s = run(100, 0, 0, 0);
            s.duration.attack_s = attack_s;
            s
        };
        let why = deviation_of(&[sending(2.318)], &[sending(1.996)]).unwrap();
        assert_eq!(why, "background: ran 2.00 s of the measured run's 2.32 s");
        // Started together, within a tenth of a second and 5%: the same length.
        assert_eq!(deviation_of(&[sending(2.1)], &[sending(1.996)]), None);
        assert_eq!(deviation_of(&[sending(2.0)], &[sending(4.0)]), None);
    }

    #[test]
    fn a_mix_beyond_a_round_per_client_deviates() {
        let plan = serde_json::json!({ "plan": {
            "round": 2, "clients": 4,
            "targets": [{ "name": "SET" }, { "name": "GET" }],
        }});
        let mut s = RunSummary { settings: plan, ..Default::default() };
        let group = |name: &str, requests| GroupSummary { name: name.into(), requests, ..Default::default() };
        s.by_name = vec![group("SET", 504), group("GET", 496)];
        assert_eq!(mix_deviation(&s), None, "8 apart is a round per client");
        // Finding 4: SET:GET 87:2,234 at 8 MiB values.
        s.by_name = vec![group("SET", 87), group("GET", 2_234)];
        assert_eq!(mix_deviation(&s).unwrap(), "asked 50.0% of the requests as SET, got 3.7% (87 of 2321)");
    }

    #[test]
    fn dropped_requests_beyond_one_percent_deviate() {
        let mut s = RunSummary::default();
        (s.requests.sent, s.requests.dropped) = (1_452, 1_268);
        assert_eq!(
            drop_deviation(&s).unwrap(),
            "sent 1452 of 2720 requests due (1268 dropped: every slot stayed busy)"
        );
        (s.requests.sent, s.requests.dropped) = (1_000, 10);
        assert_eq!(drop_deviation(&s), None);
    }
}
