//! What a results file says was run: a serializable view of the [`Plan`] that ran, in one
//! shape for every mode (the header's `settings.plan`).
//!
//! Header values are left out: a results file is shared, and a header may carry a
//! credential that no rule names. Header names are kept, so the file still says what was
//! sent; URLs are shown as the run's [`Redaction`] allows.
//!
//! The view lists a plan's first [`VIEW_TARGETS`] targets and counts them all: the header
//! lists every URL already, and a view of a million targets took more JSON than a record
//! of the results file may hold. The digest of a plan ([`crate::Job::plan_digest`]) takes
//! every target.

use barrage_engine::{Load, Pacer, Plan, Target};
use barrage_metrics::secrets::Redaction;
use barrage_plan::Protocol;
use serde::Serialize;
use serde_json::{json, Value};

/// The most targets a plan's view lists.
pub const VIEW_TARGETS: usize = 1000;

/// The plan as JSON: targets (the first [`VIEW_TARGETS`], and how many in all), load,
/// limits, connection and request options.
pub fn plan_view(p: &Plan, redaction: &Redaction) -> Value {
    // In a stable order: the view is digested ([`crate::Job::plan_digest`]).
    let mut resolve: Vec<_> = p.resolve.iter().collect();
    resolve.sort();
    let targets = p.targets.iter().take(VIEW_TARGETS).map(|t| TargetView::of(t, redaction));
    json!({
        "targets": targets.collect::<Vec<_>>(),
        "target_count": p.targets.len(),
        "load": load_view(&p.load),
        "rate_cap_per_sec": p.rate_cap,
        "duration_s": p.duration.map(|d| d.as_secs_f64()),
        "requests": p.requests,
        "keepalive": p.protocol.keepalive(),
        "http2": matches!(p.protocol, Protocol::Http2 { .. }),
        "streams": p.protocol.streams(),
        "rounds": matches!(p.protocol, Protocol::Http2 { rounds: true, .. }),
        "http3": matches!(p.protocol, Protocol::Http3 { .. }),
        "insecure": p.tls.insecure,
        "cacert": p.tls.cacert.as_ref().map(|c| c.display().to_string()),
        "timeout_s": p.timeout.as_secs_f64(),
        "connect_timeout_s": p.connect_timeout.as_secs_f64(),
        "threads": p.threads,
        "pick": format!("{:?}", p.pick),
        "hit_ratio": p.hit_ratio,
        "objects": p.objects,
        "seed": p.seed,
        "stream": stream_view(&p.stream),
        "round": p.round(),
        "clients": p.clients(),
        "retry": p.retry.as_ref().map(|r| json!({
            "max_retries": r.max_retries,
            "backoff_min_s": r.backoff_min.as_secs_f64(),
            "backoff_max_s": r.backoff_max.as_secs_f64(),
            "on": format!("{:?}", r.on),
        })),
        "backend_headers": p.responses.backend_headers.iter().map(|h| h.as_str()).collect::<Vec<_>>(),
        "cache_rules": p.responses.cache.user().iter().map(|r| r.text()).collect::<Vec<_>>(),
        "resolve": resolve.iter().map(|((host, port), addr)| format!("{host}:{port}:{}", addr.ip())).collect::<Vec<_>>(),
        "bind": p.bind.map(|b| b.to_string()),
        "scenario": p.scenario.as_deref().map(|s| scenario_view(s, redaction)),
        "kv": p.protocol.kv().map(|kv| kv_view(kv)),
    })
}

/// A key-value run's plan: servers by address alone (a URL may carry a password).
fn kv_view(kv: &barrage_plan::kv::KvPlan) -> Value {
    json!({
        "protocol": format!("{:?}", kv.protocol),
        "servers": kv.servers.iter().map(|s| format!("{}:{}", s.host, s.port)).collect::<Vec<_>>(),
        "distribution": kv.distribution.as_ref().map(|d| match d {
            barrage_plan::ring::Distribution::Ketama(_) => "ketama",
            barrage_plan::ring::Distribution::Modulo(_) => "modulo",
        }),
        "pipeline": kv.pipeline,
        "key_prefix": String::from_utf8_lossy(&kv.key_prefix),
        "key_min": kv.key_min,
        "values": format!("{:?}", kv.values),
        "commands": kv.commands.iter().map(|c| c.name()).collect::<Vec<_>>(),
    })
}

/// The run's place in its study and its part of the stream (`whole`, `fill`, or `measure`
/// of what the fill warmed).
fn stream_view(s: &barrage_plan::Stream) -> Value {
    let (part, warmed) = match s.part {
        barrage_plan::Part::Whole => ("whole", None),
        barrage_plan::Part::Fill => ("fill", None),
        barrage_plan::Part::Measure { warmed } => ("measure", Some(warmed)),
    };
    json!({ "index": s.index, "part": part, "warmed": warmed })
}

/// A scenario as it ran: its flows' steps (what they capture and check, not the values) and
/// its groups' loads and windows.
fn scenario_view(s: &barrage_plan::flow::Scenario, redaction: &Redaction) -> Value {
    let step = |st: &barrage_plan::flow::Step| {
        json!({
            "name": st.name,
            "url": redaction.url(&st.url_text),
            "captures": st.captures.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            "checks": st.checks.iter().map(|c| barrage_plan::flow::CHECK_KINDS[c.kind()]).collect::<Vec<_>>(),
            "think_s": st.think.map(|(lo, hi)| [lo.as_secs_f64(), hi.as_secs_f64()]),
        })
    };
    json!({
        "name": s.name,
        "flows": s.flows.iter().map(|f| json!({
            "name": f.name,
            "steps": f.steps.iter().map(step).collect::<Vec<_>>(),
            "order": f.order,
            "feeder": f.feeder.map(|i| s.feeders[i].name.as_str()),
        })).collect::<Vec<_>>(),
        "groups": s.groups.iter().map(|g| json!({
            "name": g.name,
            "flow": s.flows[g.flow].name,
            "load": load_view(&g.load),
            "start_s": g.start.as_secs_f64(),
            "duration_s": g.duration.map(|d| d.as_secs_f64()),
            "ramp_s": g.ramp.as_secs_f64(),
            "iterations": g.iterations,
        })).collect::<Vec<_>>(),
    })
}

/// A target as the view shows it, serialized in place (a digest takes a million).
#[derive(Serialize)]
pub(crate) struct TargetView<'a> {
    method: &'a str,
    url: String,
    name: Option<&'a str>,
    headers: Vec<&'a str>,
    body_bytes: usize,
    body_unique_bytes: Option<usize>,
}

impl<'a> TargetView<'a> {
    pub(crate) fn of(t: &'a Target, redaction: &Redaction) -> TargetView<'a> {
        let url = t.url_text();
        TargetView {
            method: t.method.as_str(),
            url: redaction.url(&url).into_owned(),
            name: t.name.as_deref(),
            headers: t.headers.keys().map(|k| k.as_str()).collect(),
            body_bytes: t.body.len(),
            body_unique_bytes: t.body_unique_len,
        }
    }
}

fn load_view(load: &Load) -> Value {
    match load {
        Load::Open { pacer, max_in_flight } => {
            let pacer = match pacer {
                Pacer::Constant { rate } => json!({ "constant_per_sec": rate }),
                Pacer::Ramp { from, to, over } => json!({ "ramp_per_sec": [from, to], "over_s": over.as_secs_f64() }),
                Pacer::Steps { rates, step } => json!({ "steps_per_sec": rates, "step_s": step.as_secs_f64() }),
            };
            json!({ "open": { "pacer": pacer, "max_in_flight": max_in_flight } })
        }
        Load::Closed { concurrency, think_time } => {
            json!({ "closed": { "workers": concurrency, "think_time_s": think_time.as_secs_f64() } })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_names_the_load_and_leaves_secrets_out() {
        let mut t =
            Target::new(http::Method::GET, "http://user:hunter1@127.0.0.1:8080/obj/{id}?token=hunter3").unwrap();
        t.headers.insert(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer hunter2"));
        let mut p = Plan::new(vec![t], Load::Closed { concurrency: 8, think_time: Default::default() });
        p.objects = Some(10);
        let v = plan_view(&p, &Redaction::default());
        let text = v.to_string();
        assert!(!text.contains("hunter"), "{text}");
        assert_eq!(v["targets"][0]["url"], "http://user:<redacted>@127.0.0.1:8080/obj/{id}?token=<redacted>");
        assert_eq!(v["targets"][0]["headers"][0], "authorization");
        assert_eq!(v["load"]["closed"]["workers"], 8);
        let v = plan_view(&p, &Redaction::off());
        assert_eq!(v["targets"][0]["url"], "http://user:hunter1@127.0.0.1:8080/obj/{id}?token=hunter3");
    }

    /// A plan of many targets is viewed with its first [`VIEW_TARGETS`] and their count.
    #[test]
    fn the_view_lists_the_first_targets_and_counts_them_all() {
        let n = VIEW_TARGETS + 5;
        let targets = (0..n).map(|i| Target::new(http::Method::GET, &format!("http://h/{i}")).unwrap()).collect();
        let p = Plan::new(targets, Load::Closed { concurrency: 1, think_time: Default::default() });
        let v = plan_view(&p, &Redaction::default());
        assert_eq!(v["targets"].as_array().map(Vec::len), Some(VIEW_TARGETS));
        assert_eq!(v["targets"][VIEW_TARGETS - 1]["url"], format!("http://h/{}", VIEW_TARGETS - 1));
        assert_eq!(v["target_count"], n);
        // Shards of one run share the digest; a target the view does not list still counts.
        let digest = |p: &Plan| crate::Job::new(p.clone()).plan_digest();
        let mut other = p.clone();
        other.targets[n - 1] = Target::new(http::Method::PUT, &format!("http://h/{}", n - 1)).unwrap();
        assert_eq!(digest(&p), digest(&p.clone()));
        assert_ne!(digest(&p), digest(&other));
    }
}
