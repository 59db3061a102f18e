//! Service-level objectives checked on a run (`--slo 'p99<250ms'`): parsed from text,
//! evaluated against a [`RunSummary`], reported as pass/fail lines and as JUnit XML.
//!
//! # Grammar
//! ```text
//! slo     = [scope ":"] metric op value
//! scope   = NAME | "flow:" GROUP
//! metric  = p50 | p90 | p95 | p99 | p999 | max | mean      corrected latency, value a duration
//!         | success                                        share of the requests due that succeeded (dropped ones failed), value in %
//!         | throughput                                     successes per second, value a rate (1000 or 1000/s)
//!         | errors                                         requests due without success (errors, 4xx/5xx, rejected, dropped), value a count
//!         | hit_ratio                                      share served by a cache, value in %
//!         | flow_p50 | flow_p99                            flow latency of every group, value a duration
//!         | flow_success                                   share of the flows due that succeeded, value in %
//!         | flows                                          flows finished per second, value a rate
//!                                                          (with flow:GROUP:, that group's)
//! op      = < | <= | > | >=
//! ```
//! `NAME:` restricts the objective to the requests of that name (`# name:` in a target file,
//! a step of a scenario). `flow:GROUP:` checks the flows of one group of a scenario instead of
//! requests: latency is flow latency (from the flow's intended start to its last step's end),
//! `success` the share of its flows that succeeded, `throughput` its successful flows per
//! second of the group's duration, `errors` its failed flows (`flow:writers:p99<2s`,
//! `flow:writers:success>=99%`). The metrics are the [`Figure`]s every table, `compare` and
//! `--fail-if` use.

use crate::figure::Figure;
use barrage_metrics::summary::RunSummary;
use barrage_metrics::units::{fmt_us, parse_duration};
use std::fmt::Write as _;
use std::str::FromStr;

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, actual: f64, bound: f64) -> bool {
        match self {
            Op::Lt => actual < bound,
            Op::Le => actual <= bound,
            Op::Gt => actual > bound,
            Op::Ge => actual >= bound,
        }
    }
}

/// What an objective is checked on.
#[derive(Clone, Debug, PartialEq)]
enum Scope {
    /// Every request of the run (and, for flow figures, every flow).
    Run,
    /// The requests of one name.
    Name(String),
    /// The flows of one group of a scenario.
    Flow(String),
}

/// One objective, as given and as understood.
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    text: String,
    scope: Scope,
    metric: Figure,
    op: Op,
    /// µs for latency, a fraction for success, per second for throughput, a count for errors.
    bound: f64,
}

impl FromStr for Slo {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let text = s.trim();
        let bad = |why: String| format!("invalid --slo '{text}': {why}");
        let (scope, rest) = scope(text).map_err(bad)?;
        let at = rest.find(['<', '>']).ok_or_else(|| bad("no comparison: expected <, <=, > or >=".into()))?;
        let (metric_text, after) = rest.split_at(at);
        let (op, value) = match after {
            a if a.starts_with("<=") => (Op::Le, &a[2..]),
            a if a.starts_with(">=") => (Op::Ge, &a[2..]),
            a if a.starts_with('<') => (Op::Lt, &a[1..]),
            a => (Op::Gt, &a[1..]),
        };
        let (metric_text, value) = (metric_text.trim(), value.trim());
        if value.starts_with(['<', '>', '=']) {
            return Err(bad(format!("unexpected '{}' after the comparison", &value[..1])));
        }
        let metric = metric(metric_text).ok_or_else(|| {
            let names: Vec<&str> = Figure::ALL.iter().map(|f| f.name()).collect();
            bad(format!("unknown metric '{metric_text}': expected one of {}", names.join(", ")))
        })?;
        match (&scope, metric) {
            // A group's own flows per second are `flow:GROUP:flows`.
            (Scope::Flow(_), Figure::FlowRate) | (Scope::Run, _) => {}
            (Scope::Name(name), m) if m.is_flow() => {
                return Err(bad(format!("{} is a figure of flows, not of the requests named '{name}'", m.name())))
            }
            (Scope::Flow(_), m) if m.is_flow() => {
                let plain = m.name().trim_start_matches("flow_");
                return Err(bad(format!("in flow:GROUP: write {plain}, not {}", m.name())));
            }
            (Scope::Flow(_), Figure::HitRatio) => return Err(bad("the hit ratio is not kept per flow group".into())),
            _ => {}
        }
        let bound = bound(metric, value).map_err(bad)?;
        Ok(Slo { text: text.to_string(), scope, metric, op, bound })
    }
}

/// The scope of an objective and the rest of its text. `flow:GROUP:` needs a second colon
/// before the comparison: `flow:p99<1s` is an objective on the requests named `flow`.
fn scope(text: &str) -> Result<(Scope, &str), String> {
    let Some((first, rest)) = text.split_once(':') else { return Ok((Scope::Run, text)) };
    let first = first.trim();
    if first.is_empty() {
        return Ok((Scope::Run, text));
    }
    let before_op = &rest[..rest.find(['<', '>']).unwrap_or(rest.len())];
    match (first, before_op.split_once(':')) {
        ("flow", Some((group, _))) => {
            let group = group.trim();
            if group.is_empty() {
                return Err("no group after 'flow:': expected flow:GROUP:METRIC".into());
            }
            let rest = rest.split_once(':').map_or(rest, |(_, r)| r);
            Ok((Scope::Flow(group.to_string()), rest.trim()))
        }
        _ => Ok((Scope::Name(first.to_string()), rest.trim())),
    }
}

fn metric(text: &str) -> Option<Figure> {
    text.to_ascii_lowercase().parse().ok()
}

/// The bound in the metric's unit, from its text.
fn bound(metric: Figure, value: &str) -> Result<f64, String> {
    let number = |v: &str| v.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
    match metric {
        m if m.is_latency() => parse_duration(value)
            .map(|d| d.as_secs_f64() * 1e6)
            .map_err(|_| format!("'{value}' is not a duration such as 250ms or 1.5s")),
        Figure::Success | Figure::HitRatio | Figure::FlowSuccess => value
            .strip_suffix('%')
            .and_then(number)
            .filter(|p| *p <= 100.0)
            .map(|p| p / 100.0)
            .ok_or_else(|| format!("'{value}' is not a percentage such as 99.5%")),
        Figure::Throughput | Figure::FlowRate => number(value.strip_suffix("/s").unwrap_or(value))
            .ok_or_else(|| format!("'{value}' is not a rate such as 1000/s")),
        _ => number(value).filter(|n| n.fract() == 0.0).ok_or_else(|| format!("'{value}' is not a count such as 10")),
    }
}

/// An objective checked against a run.
#[derive(Clone, Debug, PartialEq)]
pub struct SloResult {
    /// The objective as given.
    pub slo: String,
    /// What the run achieved, formatted in the objective's unit; "no requests named X" when
    /// the name matched nothing.
    pub actual: String,
    /// Whether it was met.
    pub pass: bool,
}

impl Slo {
    /// The request name (`NAME:`) or flow group (`flow:GROUP:`) it is checked on, if any:
    /// `(true, group)` for a group. A run can check these before it starts.
    pub fn scope(&self) -> Option<(bool, &str)> {
        match &self.scope {
            Scope::Run => None,
            Scope::Name(n) => Some((false, n)),
            Scope::Flow(g) => Some((true, g)),
        }
    }

    /// The objective as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// For a latency objective on all requests: its text and bound in ms, to draw on a curve.
    pub fn latency_bound_ms(&self) -> Option<(String, f64)> {
        match (self.metric, &self.scope) {
            (m, Scope::Run) if m.is_latency() && !m.is_flow() => Some((self.text.clone(), self.bound / 1e3)),
            _ => None,
        }
    }

    /// Checks the objective against `s`. A name or group that matched nothing fails.
    pub fn check(&self, s: &RunSummary) -> SloResult {
        let missing = |actual: String| SloResult { slo: self.text.clone(), actual, pass: false };
        // The latency, successes, count, those due and never sent, the success ratio (of
        // the summary: one definition) and seconds the objective is checked on.
        let (latency, ok, total, never, success, secs) = match (&self.scope, s.flows_total.as_ref()) {
            (Scope::Run, Some(f)) if self.metric.is_flow() => {
                (&f.latency, f.ok, f.flows, f.dropped, f.success_ratio, f.duration_s)
            }
            (Scope::Run, None) if self.metric.is_flow() => return missing("no flows in this run".into()),
            (Scope::Run, _) => {
                let r = &s.requests;
                (&s.latency.corrected, r.ok, r.total, r.dropped, s.success_ratio, s.duration.total_s)
            }
            (Scope::Name(name), _) => match s.by_name.iter().find(|g| &g.name == name) {
                Some(g) => {
                    (&g.latency, g.requests - g.failed, g.requests, g.dropped, g.success_ratio, s.duration.total_s)
                }
                None => return missing(format!("no requests named '{name}'")),
            },
            (Scope::Flow(group), _) => match s.flows.iter().find(|g| &g.name == group) {
                Some(g) => (&g.latency, g.ok, g.flows, g.dropped, g.success_ratio, g.duration_s),
                None => return missing(format!("no flow group named '{group}'")),
            },
        };
        let (value, shown) = match self.metric {
            // Over the requests (or flows) due: those never sent count as failed.
            Figure::Success | Figure::FlowSuccess => (success, format!("{:.3}%", success * 100.0)),
            Figure::Throughput => {
                let t = if secs > 0.0 { ok as f64 / secs } else { 0.0 };
                (t, format!("{t:.1}/s"))
            }
            // Flows finished per second, as the Flows section and the tables show it.
            Figure::FlowRate => {
                let t = if secs > 0.0 { total as f64 / secs } else { 0.0 };
                (t, format!("{t:.1}/s"))
            }
            Figure::Errors => ((total + never - ok) as f64, (total + never - ok).to_string()),
            Figure::HitRatio => match (&self.scope, s.cache.as_ref()) {
                (Scope::Run, Some(c)) => (c.hit_ratio, Figure::HitRatio.show(c.hit_ratio)),
                (Scope::Run, None) => return missing("no response carried a cache status".into()),
                _ => return missing("the hit ratio is not kept per name".into()),
            },
            f => {
                let v = f.of_latency(latency).unwrap_or(0.0);
                (v, fmt_us(v))
            }
        };
        // A run without requests (or flows) meets no objective, whatever the numbers say.
        let pass = total > 0 && self.op.holds(value, self.bound);
        SloResult { slo: self.text.clone(), actual: shown, pass }
    }
}

/// The pass/fail lines of a report.
pub fn slo_lines(results: &[SloResult]) -> String {
    let mut out = String::new();
    for r in results {
        let verdict = if r.pass { "pass" } else { "FAIL" };
        let _ = writeln!(out, "SLO {verdict}  {}  (actual {})", r.slo, r.actual);
    }
    out
}

/// JUnit XML: one test suite `suite`, one test case per objective, a failure per missed one.
pub fn junit(suite: &str, results: &[SloResult], time_s: f64) -> String {
    let failures = results.iter().filter(|r| !r.pass).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"barrage\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{time_s:.3}\">",
        results.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{time_s:.3}\">",
        xml(suite),
        results.len()
    );
    for r in results {
        let _ = write!(out, "    <testcase classname=\"{}\" name=\"{}\" time=\"{time_s:.3}\"", xml(suite), xml(&r.slo));
        if r.pass {
            out.push_str("/>\n");
        } else {
            let message = format!("{} not met: actual {}", r.slo, r.actual);
            let _ = writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"slo\">{}</failure>\n    </testcase>",
                xml(&message),
                xml(&message)
            );
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Text escaped for XML attributes and content.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::summary::{GroupSummary, LatencyStats};

    fn summary() -> RunSummary {
        let mut s = RunSummary::default();
        s.requests.total = 1000;
        s.requests.ok = 995;
        s.success_ratio = 0.995;
        s.duration.total_s = 10.0;
        s.latency.corrected =
            LatencyStats { count: 1000, p50_us: 12_000, p99_us: 180_000, max_us: 400_000, ..Default::default() };
        s.by_name.push(GroupSummary {
            name: "get-object".into(),
            requests: 800,
            failed: 0,
            success_ratio: 1.0,
            latency: LatencyStats { count: 800, p99_us: 90_000, ..Default::default() },
            ..Default::default()
        });
        s
    }

    /// `success` and `errors` are of the requests due: those never sent count as failed,
    /// as the summary's success ratio counts them.
    #[test]
    fn objectives_count_the_requests_never_sent() {
        let mut s = summary();
        s.requests.dropped = 1000;
        s.success_ratio = 995.0 / 2000.0;
        for (text, pass, actual) in [("success>=99%", false, "49.750%"), ("errors<10", false, "1005")] {
            let r = text.parse::<Slo>().unwrap().check(&s);
            assert_eq!((r.pass, r.actual.as_str()), (pass, actual), "{text}");
        }
    }

    #[test]
    fn objectives_pass_and_fail_on_a_known_run() {
        let s = summary();
        let table = [
            ("p99<250ms", true, "180.00ms"),
            ("p99 < 100ms", false, "180.00ms"),
            ("p50<=12ms", true, "12.00ms"),
            ("max>1s", false, "400.00ms"),
            ("success>=99.5%", true, "99.500%"),
            ("success>99.5%", false, "99.500%"),
            ("throughput>=99/s", true, "99.5/s"),
            ("throughput>=1000", false, "99.5/s"),
            ("errors<10", true, "5"),
            ("errors<5", false, "5"),
            ("get-object:p99<100ms", true, "90.00ms"),
            ("get-object:success>=100%", true, "100.000%"),
            ("put-object:p99<100ms", false, "no requests named 'put-object'"),
        ];
        for (text, pass, actual) in table {
            let r = text.parse::<Slo>().unwrap().check(&s);
            assert_eq!((r.pass, r.actual.as_str()), (pass, actual), "{text}");
        }
        assert!(!"p99<1s".parse::<Slo>().unwrap().check(&RunSummary::default()).pass, "no requests meet nothing");
    }

    #[test]
    fn malformed_objectives_name_the_token() {
        let table = [
            ("p99", "no comparison"),
            ("p98<1s", "unknown metric 'p98'"),
            ("p99<<1s", "unexpected '<'"),
            ("p99<fast", "'fast' is not a duration"),
            ("success>=99.5", "'99.5' is not a percentage"),
            ("success>=120%", "'120%' is not a percentage"),
            ("throughput>=lots", "'lots' is not a rate"),
            ("errors<1.5", "'1.5' is not a count"),
        ];
        for (text, want) in table {
            let e = text.parse::<Slo>().unwrap_err();
            assert!(e.starts_with(&format!("invalid --slo '{text}'")) && e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn junit_lists_every_objective_and_escapes() {
        let results = [
            SloResult { slo: "p99<250ms".into(), actual: "180ms".into(), pass: true },
            SloResult { slo: "errors<5".into(), actual: "5".into(), pass: false },
        ];
        let x = junit("run <a&b>", &results, 1.5);
        assert!(x.contains("<testsuite name=\"run &lt;a&amp;b&gt;\" tests=\"2\" failures=\"1\""), "{x}");
        assert!(x.contains("name=\"p99&lt;250ms\" time=\"1.500\"/>"), "{x}");
        assert!(x.contains("<failure message=\"errors&lt;5 not met: actual 5\" type=\"slo\">"), "{x}");
        assert_eq!(slo_lines(&results), "SLO pass  p99<250ms  (actual 180ms)\nSLO FAIL  errors<5  (actual 5)\n");
    }
}
