//! The `--at` events as the reports say them: each command, how it ended, and what changed
//! around it ([`barrage_metrics::events`]), for the text and HTML reports alike.

use crate::text::{p_text, percent, rate, us};
use barrage_metrics::events::{Change, EventSummary};
use barrage_metrics::summary::RunSummary;

/// Each `--at` command and what changed around it.
pub(crate) fn text(s: &RunSummary) -> String {
    if s.events.is_empty() {
        return String::new();
    }
    let mut out = String::from("Events\n");
    for (i, e) in s.events.iter().enumerate() {
        out.push_str(&format!("  +{:.2}s  {}  ({})\n", e.at_s, e.command, event_status(e)));
        out.push_str(&format!("    before  {}\n", window(&e.before)));
        let (effect, changed) = event_effect(&s.events, i);
        out.push_str(&format!("    effect  {effect}\n"));
        if let Some(changed) = changed {
            out.push_str(&format!("    changed {changed}\n"));
        }
        // A failed command has no after: nothing is compared with before; nor one whose
        // effect another event carries.
        if !e.failed && e.with_event.is_none() {
            out.push_str(&format!("    after   {}\n", window(&e.after)));
        }
    }
    out
}

/// How an event's command ended, for the text and HTML reports alike: `ended +2.10s, exit
/// 0: stopped web-3`, or `ended +1.42s, failed, exit 127: sh: 1: x: not found` (the first
/// line of its error, or its last line of output when it printed no error).
pub(crate) fn event_status(e: &EventSummary) -> String {
    let said = |text: Option<&str>| text.filter(|t| !t.is_empty()).map_or(String::new(), |t| format!(": {t}"));
    let Some(t) = e.ended_s else { return "never ended".to_string() };
    match (e.failed, e.exit, e.problem.as_deref()) {
        (true, Some(code), problem) => {
            format!("ended +{t:.2}s, failed, exit {code}{}", said(problem.or(Some(e.output.as_str()))))
        }
        (true, None, problem) => format!("ended +{t:.2}s, failed{}", said(problem)),
        (false, _, Some(p)) => format!("ended +{t:.2}s: {p}{}", said(Some(e.output.as_str()))),
        (false, Some(code), None) => format!("ended +{t:.2}s, exit {code}{}", said(Some(e.output.as_str()))),
        (false, None, None) => format!("ended +{t:.2}s{}", said(Some(e.output.as_str()))),
    }
}

/// What an event did, in words, for the text and HTML reports alike: its burst (or none)
/// with the p99 before and during it, and the figures of after that differ from before
/// beyond the noise (`None` when none do). Nothing for a command that failed. "No visible
/// effect" only when there is neither and both sides had requests to compare; "recovered"
/// only when nothing but the backends' shares stayed different. Of event `index` of the
/// run's events `all`: one started with others says so, and the first that worked carries
/// their effect.
pub(crate) fn event_effect(all: &[EventSummary], index: usize) -> (String, Option<String>) {
    let e = &all[index];
    if e.failed {
        return ("none put down to it: the command failed".to_string(), None);
    }
    let named = |o: &EventSummary| format!("+{:.2}s {}", o.at_s, o.command);
    if let Some(lead) = e.with_event.and_then(|l| all.get(l as usize)) {
        return (
            format!(
                "shown with {}: started in the same tenth of a second, their effects cannot be told apart",
                named(lead)
            ),
            None,
        );
    }
    let with: Vec<String> = all.iter().filter(|o| o.with_event.map(|l| l as usize) == Some(index)).map(named).collect();
    let (effect, changed) = own_effect(e);
    match with.is_empty() {
        true => (effect, changed),
        false => (format!("with {} (started in the same tenth of a second): {effect}", with.join(", ")), changed),
    }
}

/// [`event_effect`] of an event that carries its own effect.
fn own_effect(e: &EventSummary) -> (String, Option<String>) {
    let stayed = e.changes.iter().any(|c| c.figure != "backend_share");
    // The latency it caused: p99 before → during, when both are known.
    let p99 = match (e.before.p99_us, e.during.as_ref().and_then(|d| d.p99_us)) {
        (Some(b), Some(d)) => format!(", p99 {} → {}", us(b), us(d)),
        _ => String::new(),
    };
    let effect = match (e.burst_s, e.recovery_s) {
        // Nothing to compare: no claim either way.
        (None, _) if e.before.requests == 0 || e.after.requests == 0 => format!(
            "no burst, and nothing to compare: no request finished {}",
            if e.before.requests == 0 { "before it (since the previous event's effect)" } else { "after it" }
        ),
        (None, _) if e.changes.is_empty() => {
            "no visible effect: no burst of errors or slow requests, and no figure changed beyond the noise".to_string()
        }
        (None, _) => "no burst of errors or slow requests".to_string(),
        (Some((from, to)), Some(r)) => format!(
            "{} failed request(s){p99} from +{from:.1}s to +{to:.1}s; {} {r:.1}s after the event",
            e.burst_errors,
            if stayed { "the burst was over" } else { "recovered" }
        ),
        (Some((from, _)), None) => format!(
            "{} failed request(s){p99} from +{from:.1}s on; not recovered by the next event or the end",
            e.burst_errors
        ),
    };
    let changed = (!e.changes.is_empty()).then(|| e.changes.iter().map(change).collect::<Vec<_>>().join(", "));
    (effect, changed)
}

/// `errors 0.00% → 0.31% (p=<0.001)`.
fn change(c: &Change) -> String {
    let show = |v: f64| match c.figure.as_str() {
        "error_ratio" | "backend_share" => percent(v),
        "throughput_per_sec" => rate(v),
        _ => us(v as u64),
    };
    let what = match (c.figure.as_str(), &c.backend) {
        ("error_ratio", _) => "errors".to_string(),
        ("throughput_per_sec", _) => "throughput".to_string(),
        ("slowest_us", _) => "slowest per 0.1s".to_string(),
        (_, Some(backend)) => format!("{backend}'s share"),
        (figure, None) => figure.to_string(),
    };
    format!("{what} {} → {} (p={})", show(c.before), show(c.after), p_text(c.p_value))
}

/// `95.0/s, errors 2.0%, p99 45.1ms, backends web-1 50%, web-2 50%`.
fn window(w: &barrage_metrics::events::Window) -> String {
    let mut text = format!("{}, errors {}", rate(w.throughput_per_sec), percent(w.error_ratio));
    if let Some(p99) = w.p99_us {
        text.push_str(&format!(", p99 {}", us(p99)));
    }
    if !w.backends.is_empty() {
        let spread: Vec<String> = w.backends.iter().map(|(b, share)| format!("{b} {}", percent(*share))).collect();
        text.push_str(&format!(", backends {}", spread.join(" ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events started together: the first says it carries the others' effect, and each
    /// other names it, with no effect of its own.
    #[test]
    fn events_started_together_say_whose_effect_is_shown() {
        use barrage_metrics::events::Window;
        let side = |requests| Window { requests, ..Default::default() };
        let first = EventSummary {
            command: "stop a".into(),
            at_s: 1.0,
            before: side(100),
            after: side(100),
            burst_errors: 9,
            burst_s: Some((0.0, 0.5)),
            recovery_s: Some(0.5),
            ..Default::default()
        };
        let second = EventSummary { command: "stop b".into(), at_s: 1.004, with_event: Some(0), ..Default::default() };
        let all = [first, second];
        let (lead, _) = event_effect(&all, 0);
        assert!(
            lead.starts_with("with +1.00s stop b (started in the same tenth of a second): 9 failed request(s)"),
            "{lead}"
        );
        let (follower, changed) = event_effect(&all, 1);
        assert_eq!(
            follower,
            "shown with +1.00s stop a: started in the same tenth of a second, their effects cannot be told apart"
        );
        assert_eq!(changed, None);
    }

    /// "No visible effect" is a claim about two sides: it needs both, and no change.
    #[test]
    fn an_event_says_no_visible_effect_only_with_both_sides_and_no_change() {
        use barrage_metrics::events::Window;
        let side = |requests| Window { requests, ..Default::default() };
        let mut e = EventSummary { before: side(100), after: side(100), ..Default::default() };
        assert!(event_effect(std::slice::from_ref(&e), 0).0.starts_with("no visible effect"));
        e.before = side(0);
        let (effect, changed) = event_effect(std::slice::from_ref(&e), 0);
        assert_eq!(
            effect,
            "no burst, and nothing to compare: no request finished before it (since the previous event's effect)"
        );
        assert_eq!(changed, None);
        e.before = side(100);
        e.changes.push(Change {
            figure: "error_ratio".into(),
            before: 0.0,
            after: 0.0024,
            p_value: 0.0004,
            ..Default::default()
        });
        let (effect, changed) = event_effect(std::slice::from_ref(&e), 0);
        assert_eq!(
            (effect.as_str(), changed.as_deref()),
            ("no burst of errors or slow requests", Some("errors 0.00% → 0.24% (p=<0.001)"))
        );
    }
}
