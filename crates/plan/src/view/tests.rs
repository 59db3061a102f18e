//! The view and the digest, against the hand-built JSON they replaced (kept here as the
//! reference): the same bytes in results files' headers, the same digest, for plans of every
//! protocol and shape.

use super::*;
use crate::kv_flags::KvFlags;
use crate::pick::Pick;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The view as it was built before it was a type: a JSON map, its keys sorted.
fn reference_view(p: &Plan, redaction: &Redaction) -> Value {
    let mut resolve: Vec<_> = p.resolve.iter().collect();
    resolve.sort();
    let targets = p.targets.iter().take(VIEW_TARGETS).map(|t| reference_target(t, redaction));
    json!({
        "targets": targets.collect::<Vec<_>>(),
        "target_count": p.targets.len(),
        "load": reference_load(&p.load),
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
        "stream": reference_stream(&p.stream),
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
        "scenario": p.scenario.as_deref().map(|s| reference_scenario(s, redaction)),
        "kv": p.protocol.kv().map(|kv| reference_kv(kv)),
    })
}

fn reference_kv(kv: &KvPlan) -> Value {
    json!({
        "protocol": format!("{:?}", kv.protocol),
        "servers": kv.servers.iter().map(|s| format!("{}:{}", s.host, s.port)).collect::<Vec<_>>(),
        "distribution": kv.distribution.as_ref().map(|d| match d {
            Distribution::Ketama(_) => "ketama",
            Distribution::Modulo(_) => "modulo",
        }),
        "pipeline": kv.pipeline,
        "key_prefix": String::from_utf8_lossy(&kv.key_prefix),
        "key_min": kv.key_min,
        "values": format!("{:?}", kv.values),
        "commands": kv.commands.iter().map(|c| c.name()).collect::<Vec<_>>(),
    })
}

fn reference_stream(s: &Stream) -> Value {
    let (part, warmed) = match s.part {
        Part::Whole => ("whole", None),
        Part::Fill => ("fill", None),
        Part::Measure { warmed } => ("measure", Some(warmed)),
    };
    json!({ "index": s.index, "part": part, "warmed": warmed })
}

fn reference_scenario(s: &Scenario, redaction: &Redaction) -> Value {
    let step = |st: &Step| {
        json!({
            "name": st.name,
            "url": redaction.url(&st.url_text),
            "captures": st.captures.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            "checks": st.checks.iter().map(|c| CHECK_KINDS[c.kind()]).collect::<Vec<_>>(),
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
            "load": reference_load(&g.load),
            "start_s": g.start.as_secs_f64(),
            "duration_s": g.duration.map(|d| d.as_secs_f64()),
            "ramp_s": g.ramp.as_secs_f64(),
            "iterations": g.iterations,
        })).collect::<Vec<_>>(),
    })
}

/// A target as the view and the digest took it before: a struct, in this field order.
#[derive(Serialize)]
struct ReferenceTarget<'a> {
    method: &'a str,
    url: String,
    name: Option<&'a str>,
    headers: Vec<&'a str>,
    body_bytes: usize,
    body_unique_bytes: Option<usize>,
}

fn reference_target<'a>(t: &'a Target, redaction: &Redaction) -> ReferenceTarget<'a> {
    ReferenceTarget {
        method: t.method.as_str(),
        url: redaction.url(&t.url_text()).into_owned(),
        name: t.name.as_deref(),
        headers: t.headers.keys().map(|k| k.as_str()).collect(),
        body_bytes: t.body.len(),
        body_unique_bytes: t.body_unique_len,
    }
}

fn reference_load(load: &Load) -> Value {
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

/// The digest as it was taken before: keys deleted from the reference view's JSON.
fn reference_digest(p: &Plan) -> String {
    use md5::Digest;
    let redaction = Redaction::default();
    let mut plan = reference_view(p, &redaction);
    if let Some(o) = plan.as_object_mut() {
        o.remove("threads");
        o.remove("bind");
    }
    if let Some(open) = plan.pointer_mut("/load/open").and_then(|o| o.as_object_mut()) {
        open.remove("max_in_flight");
    }
    let mut md5 = md5::Md5::new();
    serde_json::to_writer(&mut md5, &plan).unwrap();
    for t in &p.targets {
        serde_json::to_writer(&mut md5, &reference_target(t, &redaction)).unwrap();
    }
    md5.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn closed(concurrency: usize) -> Load {
    Load::Closed { concurrency, think_time: Duration::ZERO }
}

fn open(pacer: Pacer, max_in_flight: usize) -> Load {
    Load::Open { pacer, max_in_flight }
}

fn target(method: http::Method, url: &str) -> Target {
    Target::new(method, url).unwrap()
}

/// Kept-alive HTTP/1.1: targets with headers, a body, a name; every option of the view set.
fn http1() -> Plan {
    let mut post = target(http::Method::POST, "https://user:hunter1@example.com:8443/obj/{id}?token=hunter3");
    post.headers.insert(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer hunter2"));
    post.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    post.body = bytes::Bytes::from_static(b"{\"a\": 1}");
    post.name = Some("post".into());
    let mut p = Plan::new(vec![post, target(http::Method::GET, "http://127.0.0.1:8080/")], closed(8));
    p.duration = Some(Duration::from_millis(2500));
    p.requests = Some(10_000);
    p.tls.cacert = Some("/etc/ca.pem".into());
    p.tls.insecure = true;
    p.resolve.insert(("example.com".into(), 8443), "10.0.0.2:8443".parse().unwrap());
    p.resolve.insert(("a.example".into(), 80), "10.0.0.1:80".parse().unwrap());
    p.bind = Some("127.0.0.2".parse().unwrap());
    p.threads = 3;
    p.rate_cap = Some(250.5);
    p.pick = Pick::Zipf(0.99);
    p.objects = Some(1000);
    p.seed = 7;
    p
}

/// Plans of every protocol and load shape the view tells apart.
fn plans() -> Vec<(&'static str, Plan)> {
    let mut plans = vec![("http1", http1())];
    let mut p = http1();
    p.protocol = Protocol::Http1 { keepalive: false };
    p.hit_ratio = Some(0.3);
    p.stream = Stream { index: 4, part: Part::Measure { warmed: 500 } };
    plans.push(("http1 no keepalive, measure", p));
    let mut p = Plan::new(vec![target(http::Method::GET, "https://h/")], open(Pacer::Constant { rate: 1000.0 }, 64));
    p.protocol = Protocol::http2(16);
    p.stream = Stream { index: 1, part: Part::Fill };
    plans.push(("http2 streams", p));
    let mut p = Plan::new(vec![target(http::Method::GET, "https://h/")], closed(32));
    p.protocol = Protocol::Http2 { streams: crate::Streams::Kept(8), rounds: true };
    plans.push(("http2 rounds", p));
    let mut p = Plan::new(vec![target(http::Method::GET, "https://h/")], closed(4));
    p.protocol = Protocol::Http3 { streams: crate::Streams::PerRequest };
    plans.push(("http3 per request", p));
    let ramp = Pacer::Ramp { from: 10.0, to: 2000.5, over: Duration::from_secs(30) };
    plans.push(("open ramp", Plan::new(vec![target(http::Method::GET, "http://h/")], open(ramp, 100))));
    let steps = Pacer::Steps { rates: vec![100.0, 200.0, 0.1], step: Duration::from_millis(1500) };
    let mut p = Plan::new(vec![target(http::Method::GET, "http://h/")], open(steps, 7));
    p.retry = Some(RetryPolicy {
        max_retries: 3,
        backoff_min: Duration::from_millis(10),
        backoff_max: Duration::from_secs(1),
        on: "5xx,429,timeout,error".parse().unwrap(),
    });
    plans.push(("open steps, retry", p));
    plans.push(("kv", kv()));
    plans
}

/// A Redis run over two servers, keys spread by ketama.
fn kv() -> Plan {
    let flags = KvFlags {
        urls: vec!["redis://:secret@127.0.0.1:6379".into()],
        servers: vec!["redis://127.0.0.1:6380".into()],
        ratio: Some((1, 4)),
        key_prefix: Some("k-".into()),
        distribution: Some("ketama".into()),
        pipeline: Some(8),
        ..Default::default()
    };
    let setup = flags.setup().unwrap().unwrap();
    let mut p = Plan::new(setup.targets, closed(16));
    p.objects = Some(setup.keys);
    p.protocol = Protocol::Kv(setup.plan);
    p
}

/// A scenario of two flows (a feeder, captures, checks, think times) run by an open and a
/// closed group.
fn scenario(dir: &std::path::Path) -> Plan {
    std::fs::write(dir.join("users.csv"), "user\nann\nbob\n").unwrap();
    let text = r#"name = "shop"
[feeder.users]
file = "users.csv"

[flow.buy]
feeder = "users"

[[flow.buy.step]]
name = "login"
method = "POST"
url = "http://127.0.0.1:8080/login?token=hunter3"
body = "{{row.user}}"
capture.session = { json-path = "$.session" }
check.status = [200]
think = "100ms..300ms"

[[flow.buy.step]]
name = "cart"
url = "http://127.0.0.1:8080/cart/{{session}}"
check.body-contains = "ok"

[flow.browse]
[[flow.browse.step]]
name = "home"
url = "http://127.0.0.1:8080/"

[group.buyers]
flow = "buy"
rate = 50
duration = "30s"

[group.browsers]
flow = "browse"
concurrency = 10
ramp = "5s"
start = "2s"
iterations = 100
"#;
    let path = dir.join("shop.toml");
    std::fs::write(&path, text).unwrap();
    let (s, targets) = crate::scenario::read(&path, &[], &closed(4)).unwrap();
    let mut p = Plan::new(targets, crate::scenario::overall_load(&s));
    p.scenario = Some(Arc::new(s));
    p
}

/// The view writes the bytes the hand-built JSON wrote, in a results file's header and in
/// the digest, for plans of every protocol and shape, redacted or not.
#[test]
fn the_view_and_the_digest_are_the_bytes_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let mut plans = plans();
    plans.push(("scenario", scenario(dir.path())));
    for (name, p) in &plans {
        for redaction in [Redaction::default(), Redaction::off()] {
            let view = serde_json::to_value(PlanView::of(p, &redaction)).unwrap();
            assert_eq!(view.to_string(), reference_view(p, &redaction).to_string(), "{name}");
            // The header embeds the view in a map; the digest writes the struct itself.
            assert_eq!(serde_json::to_string(&PlanView::of(p, &redaction)).unwrap(), view.to_string(), "{name}");
        }
        assert_eq!(digest(p), reference_digest(p), "{name}");
    }
}

/// The digest leaves out what differs from one load machine to the next, and nothing else.
#[test]
fn the_digest_leaves_out_this_machines_values() {
    let base = http1();
    let mut p = base.clone();
    p.threads = 12;
    p.bind = None;
    assert_eq!(digest(&p), digest(&base));
    let mut p = base.clone();
    p.seed = 8;
    assert_ne!(digest(&p), digest(&base));
    let at = |max_in_flight| {
        Plan::new(vec![target(http::Method::GET, "http://h/")], open(Pacer::Constant { rate: 10.0 }, max_in_flight))
    };
    assert_eq!(digest(&at(10)), digest(&at(20)));
    let view = serde_json::to_value(PlanView::of(&at(10), &Redaction::default())).unwrap();
    assert_eq!(view["load"]["open"]["max_in_flight"], 10);
}

/// `--send-precision` paces a scenario's groups with a rate: refused when no group has one.
#[test]
fn a_send_precision_needs_a_group_with_a_rate() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = scenario(dir.path());
    p.send_precision = Some(Duration::from_micros(100));
    assert_eq!(p.validate(), Ok(()));
    let mut closed_only = Arc::into_inner(p.scenario.take().unwrap()).unwrap();
    closed_only.groups.retain(|g| matches!(g.load, Load::Closed { .. }));
    p.scenario = Some(Arc::new(closed_only));
    let e = p.validate().unwrap_err();
    assert!(e.starts_with("--send-precision 100us paces an open loop"), "{e}");
}

/// `--send-precision` shows, and changes the digest, only when given: a plan at the default
/// keeps the digest it had before the setting existed (history keeps comparing).
#[test]
fn a_send_precision_is_in_the_view_only_when_given() {
    let base = Plan::new(vec![target(http::Method::GET, "http://h/")], open(Pacer::Constant { rate: 10.0 }, 4));
    let mut p = base.clone();
    p.send_precision = Some(Duration::from_micros(50));
    let view = |p: &Plan| serde_json::to_value(PlanView::of(p, &Redaction::default())).unwrap();
    assert_eq!(view(&p)["send_precision_us"], 50.0);
    assert!(view(&base).get("send_precision_us").is_none());
    assert_eq!(digest(&base), reference_digest(&base));
    assert_ne!(digest(&p), digest(&base));
}

#[test]
fn the_view_names_the_load_and_leaves_secrets_out() {
    let mut t = target(http::Method::GET, "http://user:hunter1@127.0.0.1:8080/obj/{id}?token=hunter3");
    t.headers.insert(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer hunter2"));
    let mut p = Plan::new(vec![t], closed(8));
    p.objects = Some(10);
    let v = serde_json::to_value(PlanView::of(&p, &Redaction::default())).unwrap();
    let text = v.to_string();
    assert!(!text.contains("hunter"), "{text}");
    assert_eq!(v["targets"][0]["url"], "http://user:<redacted>@127.0.0.1:8080/obj/{id}?token=<redacted>");
    assert_eq!(v["targets"][0]["headers"][0], "authorization");
    assert_eq!(v["load"]["closed"]["workers"], 8);
    let v = PlanView::of(&p, &Redaction::off());
    assert_eq!(v.targets[0].url, "http://user:hunter1@127.0.0.1:8080/obj/{id}?token=hunter3");
}

/// A plan of many targets is viewed with its first [`VIEW_TARGETS`] and their count.
#[test]
fn the_view_lists_the_first_targets_and_counts_them_all() {
    let n = VIEW_TARGETS + 5;
    let targets = (0..n).map(|i| target(http::Method::GET, &format!("http://h/{i}"))).collect();
    let p = Plan::new(targets, closed(1));
    let v = PlanView::of(&p, &Redaction::default());
    assert_eq!(v.targets.len(), VIEW_TARGETS);
    assert_eq!(v.targets[VIEW_TARGETS - 1].url, format!("http://h/{}", VIEW_TARGETS - 1));
    assert_eq!(v.target_count, n);
    // Shards of one run share the digest; a target the view does not list still counts.
    let mut other = p.clone();
    other.targets[n - 1] = target(http::Method::PUT, &format!("http://h/{}", n - 1));
    assert_eq!(digest(&p), digest(&p.clone()));
    assert_ne!(digest(&p), digest(&other));
}
