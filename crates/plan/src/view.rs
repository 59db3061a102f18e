//! What a results file says was run: a serializable view of the [`Plan`] that ran, in one
//! shape for every mode (the header's `settings.plan`), and the [`digest`] the shards of one
//! run must share. Here, beside the plan, because it names the plan's parts and changes with
//! them; the run's [`Redaction`] comes from barrage-metrics, which this crate depends on.
//!
//! Header values are left out: a results file is shared, and a header may carry a
//! credential that no rule names. Header names are kept, so the file still says what was
//! sent; URLs are shown as the run's [`Redaction`] allows.
//!
//! The view lists a plan's first [`VIEW_TARGETS`] targets and counts them all: the header
//! lists every URL already, and a view of a million targets took more JSON than a record
//! of the results file may hold. The digest takes every target.
//!
//! Every struct declares its fields in alphabetical order: the view was first written as a
//! JSON map, whose keys serde_json writes sorted, and the digest hashes the view as it is
//! written, so another order would change every digest (and shards written by an earlier
//! build would no longer match).

use crate::flow::{Flow, Group, Scenario, Step, CHECK_KINDS};
use crate::kv::KvPlan;
use crate::pick::{Part, Stream};
use crate::plan::{Load, Plan, Target};
use crate::ring::Distribution;
use crate::{Pacer, Protocol, RetryPolicy};
use barrage_metrics::secrets::Redaction;
use serde::Serialize;

/// The most targets a plan's view lists.
pub const VIEW_TARGETS: usize = 1000;

/// The plan as the results file shows it: targets (the first [`VIEW_TARGETS`], and how many
/// in all), load, limits, connection and request options.
#[derive(Clone, Debug, Serialize)]
pub struct PlanView<'a> {
    /// The response headers read as the backend's (`--backend-header`).
    pub backend_headers: Vec<&'a str>,
    /// `--bind`: the source address.
    #[serde(skip_serializing_if = "Local::left_out")]
    pub bind: Local<Option<String>>,
    /// `--cacert`.
    pub cacert: Option<String>,
    /// The user's cache rules, as written.
    pub cache_rules: Vec<String>,
    /// Connections (or flows) the run keeps.
    pub clients: u64,
    pub connect_timeout_s: f64,
    pub duration_s: Option<f64>,
    pub hit_ratio: Option<f64>,
    pub http2: bool,
    pub http3: bool,
    /// `--insecure`.
    pub insecure: bool,
    pub keepalive: bool,
    /// A key-value run's plan.
    pub kv: Option<KvView<'a>>,
    pub load: LoadView,
    pub objects: Option<u64>,
    /// How ids are picked, as the plan's `Pick` debug-prints.
    pub pick: String,
    pub rate_cap_per_sec: Option<f64>,
    pub requests: Option<u64>,
    /// `--resolve` overrides, `host:port:ip`, sorted.
    pub resolve: Vec<String>,
    pub retry: Option<RetryView>,
    /// Requests per round of a closed loop in rounds.
    pub round: u64,
    pub rounds: bool,
    pub scenario: Option<ScenarioView<'a>>,
    pub seed: u64,
    /// `--send-precision`, when given (left out at the default, so that a plan's digest
    /// stays what it was before the setting existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_precision_us: Option<f64>,
    pub stream: StreamView,
    /// Requests at once on a connection.
    pub streams: u32,
    /// Every target, listed or not.
    pub target_count: usize,
    /// The first [`VIEW_TARGETS`] targets.
    pub targets: Vec<TargetView<'a>>,
    #[serde(skip_serializing_if = "Local::left_out")]
    pub threads: Local<usize>,
    pub timeout_s: f64,
    /// `--trace-context`: left out when off, so that a run without it shows (and digests)
    /// as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceView>,
}

/// `--trace-context`: the share sampled and what the headers cost each request.
#[derive(Clone, Debug, Serialize)]
pub struct TraceView {
    /// Bytes the `traceparent` and `tracestate` headers add to each request, as the run's
    /// protocol sends them ([`crate::TraceSpec::header_bytes`]).
    pub header_bytes_per_request: u64,
    /// `--trace-sample`.
    pub sample: f64,
}

/// A value of the load machine rather than of the run (its threads, its source address, a
/// run's in-flight bound): shown in the view, left out of the digest, so that the shards of
/// one run share a digest wherever they ran.
#[derive(Clone, Debug, Serialize)]
#[serde(transparent)]
pub struct Local<T>(pub Option<T>);

impl<T> Local<T> {
    /// `value` when the view shows this machine's values, else nothing.
    fn of(shown: bool, value: T) -> Local<T> {
        Local(shown.then_some(value))
    }

    fn left_out(&self) -> bool {
        self.0.is_none()
    }
}

impl<'a> PlanView<'a> {
    /// The view of `p` for its results file, URLs redacted as `redaction` says.
    pub fn of(p: &'a Plan, redaction: &Redaction) -> PlanView<'a> {
        PlanView::build(p, redaction, true)
    }

    /// The view, with this machine's values when `local`.
    fn build(p: &'a Plan, redaction: &Redaction, local: bool) -> PlanView<'a> {
        // In a stable order: the view is digested.
        let mut resolve: Vec<_> = p.resolve.iter().collect();
        resolve.sort();
        PlanView {
            backend_headers: p.responses.backend_headers.iter().map(|h| h.as_str()).collect(),
            bind: Local::of(local, p.bind.map(|b| b.to_string())),
            cacert: p.tls.cacert.as_ref().map(|c| c.display().to_string()),
            cache_rules: p.responses.cache.user().iter().map(|r| r.text()).collect(),
            clients: p.clients(),
            connect_timeout_s: p.connect_timeout.as_secs_f64(),
            duration_s: p.duration.map(|d| d.as_secs_f64()),
            hit_ratio: p.hit_ratio,
            http2: matches!(p.protocol, Protocol::Http2 { .. }),
            http3: matches!(p.protocol, Protocol::Http3 { .. }),
            insecure: p.tls.insecure,
            keepalive: p.protocol.keepalive(),
            kv: p.protocol.kv().map(|kv| KvView::of(kv)),
            load: LoadView::of(&p.load, local),
            objects: p.objects,
            pick: format!("{:?}", p.pick),
            rate_cap_per_sec: p.rate_cap,
            requests: p.requests,
            resolve: resolve.iter().map(|((host, port), addr)| format!("{host}:{port}:{}", addr.ip())).collect(),
            retry: p.retry.as_ref().map(RetryView::of),
            round: p.round(),
            rounds: matches!(p.protocol, Protocol::Http2 { rounds: true, .. }),
            scenario: p.scenario.as_deref().map(|s| ScenarioView::of(s, redaction)),
            seed: p.seed,
            send_precision_us: p.send_precision.map(|d| d.as_secs_f64() * 1e6),
            stream: StreamView::of(&p.stream),
            streams: p.protocol.streams(),
            target_count: p.targets.len(),
            targets: p.targets.iter().take(VIEW_TARGETS).map(|t| TargetView::of(t, redaction)).collect(),
            threads: Local::of(local, p.threads),
            timeout_s: p.timeout.as_secs_f64(),
            trace: p
                .trace
                .map(|t| TraceView { header_bytes_per_request: t.header_bytes(&p.protocol), sample: t.sample }),
        }
    }
}

/// A digest (MD5, hex) of what the shards of one split run must share: the plan as the
/// results file shows it, without what may differ from one load machine to the next (the
/// [`Local`] values; the shard and the start are not in the view), then every target, of
/// which the view lists the first.
pub fn digest(p: &Plan) -> String {
    use md5::Digest;
    let redaction = Redaction::default();
    // Written into the digest as they are made: a million targets' JSON is never held.
    let mut md5 = md5::Md5::new();
    let fails = "writing into a digest cannot fail";
    serde_json::to_writer(&mut md5, &PlanView::build(p, &redaction, false)).expect(fails);
    for t in &p.targets {
        serde_json::to_writer(&mut md5, &TargetDigest::from(TargetView::of(t, &redaction))).expect(fails);
    }
    md5.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// How requests are started: an open loop's schedule, or a closed loop's workers.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadView {
    Open {
        /// Left out of the digest: a shard's share of the run's bound.
        #[serde(skip_serializing_if = "Local::left_out")]
        max_in_flight: Local<usize>,
        pacer: PacerView,
    },
    Closed {
        think_time_s: f64,
        workers: usize,
    },
}

impl LoadView {
    /// The view of `load`, with its in-flight bound when `local`.
    fn of(load: &Load, local: bool) -> LoadView {
        match load {
            Load::Open { pacer, max_in_flight } => {
                LoadView::Open { max_in_flight: Local::of(local, *max_in_flight), pacer: PacerView::of(pacer) }
            }
            Load::Closed { concurrency, think_time } => {
                LoadView::Closed { think_time_s: think_time.as_secs_f64(), workers: *concurrency }
            }
        }
    }
}

/// An open loop's schedule, named by its one key (`constant_per_sec`, `ramp_per_sec`,
/// `steps_per_sec`).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum PacerView {
    Constant { constant_per_sec: f64 },
    Ramp { over_s: f64, ramp_per_sec: [f64; 2] },
    Steps { step_s: f64, steps_per_sec: Vec<f64> },
}

impl PacerView {
    fn of(pacer: &Pacer) -> PacerView {
        match pacer {
            Pacer::Constant { rate } => PacerView::Constant { constant_per_sec: *rate },
            Pacer::Ramp { from, to, over } => {
                PacerView::Ramp { over_s: over.as_secs_f64(), ramp_per_sec: [*from, *to] }
            }
            Pacer::Steps { rates, step } => {
                PacerView::Steps { step_s: step.as_secs_f64(), steps_per_sec: rates.clone() }
            }
        }
    }
}

/// A retry policy: how many retries, their backoff and what is retried.
#[derive(Clone, Debug, Serialize)]
pub struct RetryView {
    pub backoff_max_s: f64,
    pub backoff_min_s: f64,
    pub max_retries: u32,
    /// What is retried, as the policy's `RetryOn` debug-prints.
    pub on: String,
}

impl RetryView {
    fn of(r: &RetryPolicy) -> RetryView {
        RetryView {
            backoff_max_s: r.backoff_max.as_secs_f64(),
            backoff_min_s: r.backoff_min.as_secs_f64(),
            max_retries: r.max_retries,
            on: format!("{:?}", r.on),
        }
    }
}

/// The run's place in its study and its part of the stream (`whole`, `fill`, or `measure`
/// of what the fill warmed).
#[derive(Clone, Debug, Serialize)]
pub struct StreamView {
    pub index: u64,
    pub part: &'static str,
    pub warmed: Option<u64>,
}

impl StreamView {
    fn of(s: &Stream) -> StreamView {
        let (part, warmed) = match s.part {
            Part::Whole => ("whole", None),
            Part::Fill => ("fill", None),
            Part::Measure { warmed } => ("measure", Some(warmed)),
        };
        StreamView { index: s.index, part, warmed }
    }
}

/// A key-value run's plan: servers by address alone (a URL may carry a password).
#[derive(Clone, Debug, Serialize)]
pub struct KvView<'a> {
    pub commands: Vec<String>,
    /// `ketama` or `modulo`, with more than one server.
    pub distribution: Option<&'static str>,
    pub key_min: u64,
    pub key_prefix: std::borrow::Cow<'a, str>,
    pub pipeline: usize,
    /// The wire protocol, as it debug-prints.
    pub protocol: String,
    /// `host:port` of each server.
    pub servers: Vec<String>,
    /// The value sizes, as they debug-print.
    pub values: String,
}

impl<'a> KvView<'a> {
    fn of(kv: &'a KvPlan) -> KvView<'a> {
        KvView {
            commands: kv.commands.iter().map(|c| c.name()).collect(),
            distribution: kv.distribution.as_ref().map(|d| match d {
                Distribution::Ketama(_) => "ketama",
                Distribution::Modulo(_) => "modulo",
            }),
            key_min: kv.key_min,
            key_prefix: String::from_utf8_lossy(&kv.key_prefix),
            pipeline: kv.pipeline,
            protocol: format!("{:?}", kv.protocol),
            servers: kv.servers.iter().map(|s| format!("{}:{}", s.host, s.port)).collect(),
            values: format!("{:?}", kv.values),
        }
    }
}

/// A scenario as it ran: its flows' steps (what they capture and check, not the values) and
/// its groups' loads and windows.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioView<'a> {
    pub flows: Vec<FlowView<'a>>,
    pub groups: Vec<GroupView<'a>>,
    pub name: &'a str,
}

impl<'a> ScenarioView<'a> {
    fn of(s: &'a Scenario, redaction: &Redaction) -> ScenarioView<'a> {
        ScenarioView {
            flows: s.flows.iter().map(|f| FlowView::of(s, f, redaction)).collect(),
            groups: s.groups.iter().map(|g| GroupView::of(s, g)).collect(),
            name: &s.name,
        }
    }
}

/// A flow: its steps, the order they run in and its feeder's name.
#[derive(Clone, Debug, Serialize)]
pub struct FlowView<'a> {
    pub feeder: Option<&'a str>,
    pub name: &'a str,
    pub order: &'a [usize],
    pub steps: Vec<StepView<'a>>,
}

impl<'a> FlowView<'a> {
    fn of(s: &'a Scenario, f: &'a Flow, redaction: &Redaction) -> FlowView<'a> {
        FlowView {
            feeder: f.feeder.map(|i| s.feeders[i].name.as_str()),
            name: &f.name,
            order: &f.order,
            steps: f.steps.iter().map(|st| StepView::of(st, redaction)).collect(),
        }
    }
}

/// A step: the names of what it captures, the kinds of what it checks, its think time.
#[derive(Clone, Debug, Serialize)]
pub struct StepView<'a> {
    pub captures: Vec<&'a str>,
    pub checks: Vec<&'static str>,
    pub name: &'a str,
    /// The think time's range, seconds.
    pub think_s: Option<[f64; 2]>,
    pub url: String,
}

impl<'a> StepView<'a> {
    fn of(st: &'a Step, redaction: &Redaction) -> StepView<'a> {
        StepView {
            captures: st.captures.iter().map(|c| c.name.as_str()).collect(),
            checks: st.checks.iter().map(|c| CHECK_KINDS[c.kind()]).collect(),
            name: &st.name,
            think_s: st.think.map(|(lo, hi)| [lo.as_secs_f64(), hi.as_secs_f64()]),
            url: redaction.url(&st.url_text).into_owned(),
        }
    }
}

/// A group: its flow, load and window (a group's in-flight bound is the scenario's, so it
/// is in the digest too).
#[derive(Clone, Debug, Serialize)]
pub struct GroupView<'a> {
    pub duration_s: Option<f64>,
    pub flow: &'a str,
    pub iterations: Option<u64>,
    pub load: LoadView,
    pub name: &'a str,
    pub ramp_s: f64,
    pub start_s: f64,
}

impl<'a> GroupView<'a> {
    fn of(s: &'a Scenario, g: &'a Group) -> GroupView<'a> {
        GroupView {
            duration_s: g.duration.map(|d| d.as_secs_f64()),
            flow: &s.flows[g.flow].name,
            iterations: g.iterations,
            load: LoadView::of(&g.load, true),
            name: &g.name,
            ramp_s: g.ramp.as_secs_f64(),
            start_s: g.start.as_secs_f64(),
        }
    }
}

/// A target as the view shows it: method, URL, name, header names and body sizes.
#[derive(Clone, Debug, Serialize)]
pub struct TargetView<'a> {
    pub body_bytes: usize,
    pub body_unique_bytes: Option<usize>,
    pub headers: Vec<&'a str>,
    pub method: &'a str,
    pub name: Option<&'a str>,
    pub url: String,
}

impl<'a> TargetView<'a> {
    /// The view of `t`, its URL redacted as `redaction` says.
    pub fn of(t: &'a Target, redaction: &Redaction) -> TargetView<'a> {
        TargetView {
            body_bytes: t.body.len(),
            body_unique_bytes: t.body_unique_len,
            headers: t.headers.keys().map(|k| k.as_str()).collect(),
            method: t.method.as_str(),
            name: t.name.as_deref(),
            url: redaction.url(&t.url_text()).into_owned(),
        }
    }
}

/// A target as the digest takes each one after the view: the same values as a
/// [`TargetView`], in the order digests have always written them (not the view's).
#[derive(Serialize)]
struct TargetDigest<'a> {
    method: &'a str,
    url: String,
    name: Option<&'a str>,
    headers: Vec<&'a str>,
    body_bytes: usize,
    body_unique_bytes: Option<usize>,
}

impl<'a> From<TargetView<'a>> for TargetDigest<'a> {
    fn from(t: TargetView<'a>) -> TargetDigest<'a> {
        let TargetView { body_bytes, body_unique_bytes, headers, method, name, url } = t;
        TargetDigest { method, url, name, headers, body_bytes, body_unique_bytes }
    }
}

#[cfg(test)]
mod tests;
