//! The warnings a summary carries about itself: figures a reader must not take as a result
//! (the generator was the limit, flows failed or fell short, a stream cap, server replies).

use super::{success_ratio, RunSummary, Warning, WarningKind};
use crate::sample::Protocol;

/// Generator CPU above this share of its threads' capacity means barrage itself was the limit.
const CPU_SATURATED: f64 = 0.90;

/// Schedule lag p99 above this (µs) means sends fell behind the schedule.
pub(crate) const LAG_LIMIT_US: u64 = 5_000;

/// Warnings from the samples: barrage near its ceiling in some second, the machine full.
pub(super) fn watch_check(s: &RunSummary) -> Vec<Warning> {
    let mut w = Vec::new();
    let threads = f64::from(s.generator.threads);
    let already = s.warnings.iter().any(|w| w.kind == WarningKind::GeneratorSaturated);
    let peak = s.generator.cpu_max_percent;
    if !already && threads > 0.0 && peak >= CPU_SATURATED * 100.0 * threads && s.duration.total_s >= 2.0 {
        w.push(Warning::new(WarningKind::GeneratorNearSaturation, format!(
            "barrage's own CPU peaked at {peak:.0}% of its {threads} engine thread(s) (at most {:.0}%): the generator was near saturation for part of the run, so those seconds may describe barrage rather than the server",
            threads * 100.0
        )));
    }
    if let Some(h) = &s.host {
        if h.cpu_mean_percent >= CPU_SATURATED * 100.0 && s.duration.total_s >= 2.0 {
            let text = format!(
                "the machine's CPU was {:.0}% busy on average: barrage and the servers on this machine competed for it",
                h.cpu_mean_percent
            );
            w.push(Warning::new(WarningKind::MachineBusy, text));
        }
    }
    w
}

/// Below this share of the flow rate asked, a group fell short of its load.
const FLOW_RATE_SHORT: f64 = 0.99;

/// Warnings from the flows: flows that failed and the steps they skipped, and groups that
/// ran fewer flows than asked. Figures built on failed flows must not read as a result.
pub(super) fn flow_check(s: &RunSummary) -> Vec<Warning> {
    let mut w = Vec::new();
    for g in &s.flows {
        if g.duration_s == 0.0 && g.flows == 0 {
            w.push(Warning::new(
                WarningKind::GroupNeverRan,
                format!(
                    "group {}: never ran: it starts at {} s, when the run had ended; its figures are empty",
                    g.name, g.start_s
                ),
            ));
            continue;
        }
        if g.failed > 0 {
            w.push(Warning::new(WarningKind::FlowsFailed, format!(
                "group {}: {} of {} flow(s) failed ({} check failed, {} capture failed, {} request failed), skipping {} later step(s) that were never sent",
                g.name, g.failed, g.flows, g.check_failed, g.capture_failed, g.request_failed, g.skipped_steps
            )));
            // Why, step by step: what the first failed check or capture of each saw.
            let prefix = format!("{}/", g.name);
            let own = |name: &str| s.flows.len() == 1 || name.starts_with(&prefix);
            for step in s.by_name.iter().filter(|n| own(&n.name)) {
                if let Some(example) = &step.example {
                    w.push(Warning::new(WarningKind::StepFailed, format!("step {}: {example}", step.name)));
                }
            }
        } else if g.skipped_steps > 0 {
            let text = format!("group {}: {} step(s) were skipped, never sent", g.name, g.skipped_steps);
            w.push(Warning::new(WarningKind::StepsSkipped, text));
        }
        let dropped = match g.dropped {
            0 => String::new(),
            n => format!("; {n} flow arrival(s) were due but never started (every slot stayed busy)"),
        };
        match (g.flows_per_sec, g.asked_per_sec) {
            (Some(ran), Some(asked)) if asked > 0.0 && ran < FLOW_RATE_SHORT * asked => w.push(Warning::new(
                WarningKind::FlowRateShort,
                format!(
                    "group {}: {ran:.2} flows/s finished of the {asked:.2} flows/s asked ({:.1}%){dropped}: the group did not run the load it was asked",
                    g.name,
                    ran / asked * 100.0,
                ),
            )),
            _ if g.dropped > 0 => {
                w.push(Warning::new(WarningKind::FlowsDropped, format!("group {}: {}", g.name, &dropped[2..])))
            }
            _ => {}
        }
        if g.unfinished > 0 {
            w.push(Warning::new(
                WarningKind::FlowsUnfinished,
                format!(
                "group {}: {} flow(s) were still running when the group's window ended and are not counted as finished",
                g.name, g.unfinished
            ),
            ));
        }
        if let Some(asked) = asked_flows(&g.load).filter(|n| g.flows < *n) {
            w.push(Warning::new(
                WarningKind::FlowsShort,
                format!(
                    "group {}: {} of the {asked} flows asked ({}) finished: its window or the run ended first",
                    g.name, g.flows, g.load
                ),
            ));
        }
    }
    w
}

/// The flows a closed-loop group of `iterations` asked for in all, from its load as the
/// header says it (`10 workers, 500 flows`); `None` for any other load.
pub(super) fn asked_flows(load: &str) -> Option<u64> {
    let (workers, flows) = load.strip_suffix(" flows")?.split_once(" workers, ")?;
    workers.parse::<u64>().ok()?;
    flows.parse().ok()
}

/// A warning when the server answered with errors: figures built on them must say so.
pub(super) fn reply_check(s: &RunSummary) -> Option<Warning> {
    let n: u64 = s.replies.iter().map(|r| r.requests).sum();
    let classes: Vec<String> = s.replies.iter().map(|r| format!("{}: {}", r.name, r.requests)).collect();
    let noun = if n == 1 { "reply" } else { "replies" };
    let text = || format!("{n} server error {noun} ({}): see Server replies", classes.join(", "));
    (n > 0).then(|| Warning::new(WarningKind::ServerErrors, text()))
}

/// What the streams' figures warn of: a server that chose HTTP/1.1 when HTTP/2 was asked,
/// and one that allowed fewer streams than asked (named by the setting of the protocol
/// that said so).
pub(super) fn stream_check(s: &RunSummary) -> Vec<Warning> {
    let Some(h) = &s.streams else { return Vec::new() };
    let mut out = Vec::new();
    if h.http1_fallbacks > 0 {
        out.push(Warning::new(WarningKind::Http1Fallback, format!(
            "HTTP/2 was asked, but the server chose HTTP/1.1 (ALPN) on {} of {} connection(s): their requests went one at a time each, and with --streams above 1 they failed (protocol)",
            h.http1_fallbacks, s.requests.connections
        )));
    }
    if let Some(cap) = h.stream_cap {
        let by = |p: Protocol| s.requests.protocols.contains_key(p.name());
        let setting = match (by(Protocol::Http2), by(Protocol::Http3)) {
            (true, false) => "SETTINGS_MAX_CONCURRENT_STREAMS",
            (false, true) => "QUIC's initial_max_streams_bidi",
            _ => "HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS or QUIC's initial_max_streams_bidi",
        };
        out.push(Warning::new(WarningKind::StreamCap, format!(
            "the server allows {cap} concurrent stream(s) per connection ({setting}), fewer than --streams asked: requests above the limit waited for a stream (in their latency, in no phase), and at most {} were in flight on one connection",
            h.streams_max
        )));
    }
    out
}

/// Warnings when barrage itself, not the server, set the figures.
/// barrage's engine threads were busy nearly all the run: the figures describe barrage.
pub(crate) fn saturated(s: &RunSummary) -> bool {
    let g = &s.generator;
    // Below a second, start-up costs dominate the CPU share: no verdict then.
    s.duration.total_s >= 1.0 && g.threads > 0 && g.cpu_percent >= CPU_SATURATED * 100.0 * f64::from(g.threads)
}

/// An open loop's sends lagged behind the schedule.
pub(crate) fn lagging(s: &RunSummary) -> bool {
    s.mode == crate::file::Mode::Open && s.generator.lag_p99_us > LAG_LIMIT_US
}

pub(super) fn self_check(s: &RunSummary) -> Vec<Warning> {
    let mut w = Vec::new();
    let g = &s.generator;
    if saturated(s) {
        w.push(Warning::new(WarningKind::GeneratorSaturated, format!(
            "barrage used {:.0}% CPU of its {} engine thread(s) (at most {}%): the generator was saturated, so these figures describe barrage, not the server",
            g.cpu_percent,
            g.threads,
            u64::from(g.threads) * 100
        )));
    }
    if lagging(s) {
        w.push(Warning::new(WarningKind::ScheduleLag, format!(
            "sends lagged behind the schedule (p99 lag {:.1} ms): barrage could not keep the rate; the corrected latency still counts the delay",
            g.lag_p99_us as f64 / 1e3
        )));
    }
    if s.requests.dropped > 0 {
        w.push(Warning::new(WarningKind::RequestsNeverSent, format!(
            "{} request(s) were due but never sent: every in-flight slot stayed busy until the attack ended (raise --max-in-flight or --connections); the offered rate counts only what was sent, and the success ratio counts them as failed ({:.2}% of the {} that finished succeeded)",
            s.requests.dropped,
            success_ratio(s.requests.ok, s.requests.total, 0) * 100.0,
            s.requests.total
        )));
    }
    if g.bound_reached && s.requests.late > 0 {
        w.push(Warning::new(WarningKind::RequestsLate, format!(
            "{} request(s) started late because all in-flight slots were busy (raise --max-in-flight or --connections); their wait is in the corrected latency",
            s.requests.late
        )));
    }
    if s.insecure {
        w.push(Warning::new(WarningKind::Insecure, "TLS certificate verification was off (--insecure)"));
    }
    if s.unredacted {
        w.push(Warning::new(
            WarningKind::Unredacted,
            "secrets were not redacted (--no-redact): this report may hold credentials from request headers and URLs",
        ));
    }
    w
}
