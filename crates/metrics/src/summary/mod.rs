//! [`RunSummary`]: the figures of one run, or of several merged, as every report shows them.
//!
//! A summary is computed from results files only (a live run writes one too), so a report
//! printed at the end of a run and one re-rendered later from its file are the same.

use crate::events::EventSummary;
use crate::watch::{HostSummary, ProcessSummary};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod build;
mod cache;
mod checks;
mod flows;
mod warning;

use build::ratio;
pub use build::{summarize, summarize_running, summarize_with};
pub(crate) use checks::{lagging, saturated, LAG_LIMIT_US};
pub use warning::{Warning, WarningKind};

/// Version of the JSON summary (`schema/summary.schema.json`).
pub const SUMMARY_VERSION: u32 = 2;

/// Fewest requests a rate is taken over. Below it the window is set by the requests
/// themselves (`-n 1` lasts one response), so "requests per second" would be one over a
/// latency, not a rate: the rate is `None` and reports show the count instead.
pub const MIN_RATE_REQUESTS: u64 = 10;

/// The share of the requests due that succeeded: `ok` over those that `finished` and those
/// due that were `never_sent` (dropped), which count as failed. A run that never sent half
/// its schedule cannot read 100%. Requests sent and not finished (a run stopped or killed
/// while they were in flight) are not counted: the run, not the server, cut them short.
/// The one definition of every success ratio: the run's, a step's, a name's, a method's,
/// a shard's, and (of flows due) a group's flows'.
pub fn success_ratio(ok: u64, finished: u64, never_sent: u64) -> f64 {
    ratio(ok as f64, (finished + never_sent) as f64)
}

/// Latency figures of one histogram, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Number of values.
    pub count: u64,
    /// Smallest.
    pub min_us: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 95th percentile.
    pub p95_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Largest.
    pub max_us: u64,
}

impl LatencyStats {
    /// The figures of `h` (all zero when it is empty).
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencyStats::default();
        }
        let q = |x| h.value_at_quantile(x);
        LatencyStats {
            count: h.len(),
            min_us: h.min(),
            mean_us: h.mean(),
            p50_us: q(0.5),
            p90_us: q(0.9),
            p95_us: q(0.95),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: h.max(),
        }
    }
}

/// Figures of one phase: its distribution over the requests where it happened, and its
/// total spread over every request (a TLS handshake on 4 of 4,080 requests has a large mean
/// but costs little per request).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseStats {
    /// Requests in which the phase happened.
    pub count: u64,
    /// Mean, µs, over the `count` requests where it happened.
    pub mean_us: f64,
    /// Median, µs, over the same.
    pub p50_us: u64,
    /// 99th percentile, µs, over the same.
    pub p99_us: u64,
    /// Time spent in the phase over the whole run, µs (`mean_us` × `count`, each value taken
    /// at the middle of its histogram bucket).
    pub total_us: f64,
    /// `total_us` over every finished request, µs: what the phase cost the average request.
    pub per_request_us: f64,
}

/// Request counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestCounts {
    /// Finished requests (responses and errors).
    pub total: u64,
    /// Requests started.
    pub sent: u64,
    /// Successful requests: 2xx and 3xx responses that no check or capture of a flow's
    /// step rejected.
    pub ok: u64,
    /// 2xx and 3xx responses that a check or a capture of a flow's step rejected: failed
    /// requests.
    #[serde(default)]
    pub rejected: u64,
    /// Requests with a 4xx/5xx status.
    pub http_errors: u64,
    /// Requests without a complete response.
    pub errors: u64,
    /// Started late because every slot was busy; their lateness is in the corrected latency.
    pub late: u64,
    /// Due before the attack ended but never started: every in-flight slot stayed busy (or
    /// barrage fell behind its schedule). In a scenario, each dropped flow's first step.
    /// Counted as failed in the success ratio.
    pub dropped: u64,
    /// Started but not finished when the run ended (a killed run, or one cut by the wait limit).
    pub unfinished: u64,
    /// A closed loop with `-n`: the requests it was to send, its workers' part of the count
    /// (merged files: their parts added, when every file says); `None` otherwise.
    #[serde(default)]
    pub quota: Option<u64>,
    /// New connections opened.
    pub connections: u64,
    /// Requests sent once more on a new connection because the server had closed their
    /// kept-alive one before answering anything; counted once above, latency from the first try.
    #[serde(default)]
    pub stale_retries: u64,
    /// New HTTP connections by the protocol the server agreed to (`HTTP/1.1`, `HTTP/2`,
    /// `HTTP/3`); only those that had any.
    #[serde(default)]
    pub protocols: BTreeMap<String, u64>,
    /// Requests sent once more on a new connection because the server had not processed
    /// them (HTTP/2: a refused stream, or one above a GOAWAY's last stream id; HTTP/3: a
    /// rejected request, or one a GOAWAY stopped); counted once above, latency from the
    /// first try.
    #[serde(default)]
    pub stream_retries: u64,
}

/// How multiplexed connections (HTTP/2 and HTTP/3) carried their streams.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamSummary {
    /// The most streams open at once on one connection (of any of merged runs).
    pub streams_max: u64,
    /// The lowest limit on concurrent streams a server set when it was below `--streams`
    /// (HTTP/2's `SETTINGS_MAX_CONCURRENT_STREAMS`, QUIC's `initial_max_streams_bidi`):
    /// requests above it waited for a stream. `None` when no server capped them.
    pub stream_cap: Option<u64>,
    /// Flow-control stalls sending: times a request body had data to send and no window
    /// (HTTP/3: the `STREAM_DATA_BLOCKED` frames barrage sent).
    pub send_stalls: u64,
    /// Flow-control stalls receiving: HTTP/2 DATA frames that used up the window barrage
    /// granted; HTTP/3 `STREAM_DATA_BLOCKED` and `DATA_BLOCKED` frames the server sent.
    pub recv_stalls: u64,
    /// Connections on which HTTP/2 was asked and the server chose HTTP/1.1 (ALPN).
    pub http1_fallbacks: u64,
}

/// Durations of the run, seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Durations {
    /// From the first send to the last response.
    pub total_s: f64,
    /// Sending new requests.
    pub attack_s: f64,
    /// Waiting for the last responses after the attack.
    pub wait_s: f64,
}

/// Bytes on the wire (headers and body).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bytes {
    /// Received, total.
    pub in_total: u64,
    /// Sent, total.
    pub out_total: u64,
    /// Received per finished request.
    pub in_mean: f64,
    /// Sent per finished request.
    pub out_mean: f64,
    /// Received per second of the run; `None` under [`MIN_RATE_REQUESTS`] finished requests.
    pub in_per_sec: Option<f64>,
    /// Sent per second of the run; `None` under [`MIN_RATE_REQUESTS`] finished requests.
    pub out_per_sec: Option<f64>,
}

/// One error kind seen in the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorStat {
    /// The kind's name (`refused`, `reset`, ...).
    pub kind: String,
    /// How many requests failed so.
    pub count: u64,
    /// One example message.
    pub example: String,
}

/// Latency of the run in both measures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    /// From the intended start: what a user arriving on schedule waited (open loop); free of
    /// coordinated omission. Equal to `service` in closed loop.
    pub corrected: LatencyStats,
    /// From the actual send: the service time.
    pub service: LatencyStats,
}

/// barrage checking itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Generator {
    /// barrage's CPU: its engine threads' CPU time from the run's start to its end (not an
    /// in-process origin's, a study's or the collector's), over the run's duration, in % of
    /// one core. Merged runs add up, as their threads do.
    pub cpu_percent: f64,
    /// Engine threads of every merged run (the most barrage could use is `threads` × 100 %).
    pub threads: u32,
    /// How far sends lagged behind their schedule, p99 (open loop), µs.
    pub lag_p99_us: u64,
    /// The in-flight bound was reached at least once.
    pub bound_reached: bool,
    /// barrage's peak resident memory in KiB (the largest of merged runs).
    pub peak_rss_kib: u64,
    /// barrage's highest CPU in one interval, % of one core (0 in files without samples).
    pub cpu_max_percent: f64,
    /// A closed loop's coalesced wake-ups: the longest sleep an engine thread took before
    /// waiting on its sockets, µs, so the most an answer could have waited unread (0: none;
    /// the largest of merged runs).
    #[serde(default)]
    pub coalesced_us: u64,
}

/// The figures of one step of a stepped rate, or of one phase of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    /// The step as shown ("100/s").
    pub label: String,
    /// Seconds of the run in the step.
    pub duration_s: f64,
    /// Finished requests (in the step's seconds, whenever they were sent).
    pub requests: u64,
    /// Successful requests.
    pub ok: u64,
    /// Failed requests (errors, 4xx/5xx, rejected by a flow's check or capture).
    pub failed: u64,
    /// Requests sent in the step.
    #[serde(default)]
    pub sent: u64,
    /// Requests due in the step and never sent ([`RequestCounts::dropped`]).
    #[serde(default)]
    pub dropped: u64,
    /// Requests still in flight when the step began, sent in the steps before: they finish
    /// in this step (or later), so its `requests` may exceed what it sent.
    #[serde(default)]
    pub carried_in: u64,
    /// ok over the step's finished and dropped requests ([`success_ratio`]).
    #[serde(default)]
    pub success_ratio: f64,
    /// Requests sent per second; `None` under [`MIN_RATE_REQUESTS`] sent in the step.
    pub rate_per_sec: Option<f64>,
    /// Successes per second; `None` under [`MIN_RATE_REQUESTS`] finished in the step.
    pub throughput_per_sec: Option<f64>,
    /// Start, seconds since the start of the run.
    pub start_s: f64,
    /// Latencies of the step.
    pub latency: Latencies,
}

/// One interval of the time series (normally one second).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalRow {
    /// Seconds since the start of the (earliest) run.
    pub second: u64,
    /// Length in seconds: normally 1; the last interval of a run, when shorter than half a
    /// second, is folded into the one before ([`crate::IntervalRecord::is_sliver`]).
    pub length_s: f64,
    /// The run's intended arrivals in this second of its schedule (every shard's), when its
    /// results file lists them ([`crate::coverage`]).
    #[serde(default)]
    pub due: Option<u64>,
    /// Requests started.
    pub sent: u64,
    /// Requests due and never sent, counted in the interval in which the attack gave up on
    /// them (its end).
    #[serde(default)]
    pub dropped: u64,
    /// Successful responses.
    pub ok: u64,
    /// Failed requests (errors, 4xx/5xx, rejected by a flow's check or capture).
    pub errors: u64,
    /// Successes per second.
    pub throughput_per_sec: f64,
    /// Corrected latency p50, µs.
    pub p50_us: u64,
    /// Corrected latency p90, µs.
    pub p90_us: u64,
    /// Corrected latency p99, µs.
    pub p99_us: u64,
    /// Bytes received.
    pub bytes_in: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Share of classified responses served from a cache; `None` when none was classified.
    pub hit_ratio: Option<f64>,
    /// Share of classified bytes served from a cache.
    pub byte_hit_ratio: Option<f64>,
    /// Responses per backend in this interval.
    pub backends: BTreeMap<String, u64>,
    /// Jain's fairness index of this interval's responses over every backend of the run
    /// (1 = even; 1/n = all on one); `None` with fewer than two backends.
    pub fairness: Option<f64>,
    /// CPU per watched process and of `barrage`, % of one core.
    pub cpu_percent: BTreeMap<String, f64>,
    /// Resident memory per watched process and of `barrage`, KiB.
    pub rss_kib: BTreeMap<String, u64>,
    /// The machine's busy CPU, % of the whole machine; `None` when not sampled.
    pub host_cpu_percent: Option<f64>,
    /// Slowest corrected latency, µs.
    pub max_us: u64,
    /// Service time p50, µs.
    pub service_p50_us: u64,
    /// Service time p99, µs.
    pub service_p99_us: u64,
    /// Mean of each phase that happened in the interval, µs.
    pub phase_mean_us: BTreeMap<String, f64>,
    /// `--trace-context`: the interval's slowest sampled requests, slowest first.
    #[serde(default)]
    pub exemplars: Vec<ExemplarRow>,
}

/// A sampled request named by its trace: what leads from a latency figure to the trace a
/// server recorded for it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExemplarRow {
    /// Its trace id, 32 hex digits.
    pub trace_id: String,
    /// Its client span's id (the server span's parent), 16 hex digits.
    pub span_id: String,
    /// Its latency from the intended start, µs.
    pub latency_us: u64,
    /// When it ended, seconds from the run's start.
    pub ended_s: f64,
}

impl ExemplarRow {
    /// `kept`, slowest first.
    pub fn of(kept: &[crate::trace::Exemplar]) -> Vec<ExemplarRow> {
        let mut rows: Vec<ExemplarRow> = kept
            .iter()
            .map(|e| ExemplarRow {
                trace_id: e.trace_id().to_string(),
                span_id: e.span_id().to_string(),
                latency_us: e.latency_us,
                ended_s: f64::from(e.ended_ms) / 1e3,
            })
            .collect();
        rows.sort_by(|a, b| b.latency_us.cmp(&a.latency_us).then_with(|| a.trace_id.cmp(&b.trace_id)));
        rows
    }
}

/// `--trace-context`: what the `traceparent` headers sampled and cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceContextSummary {
    /// `--trace-sample`: the share of requests whose `traceparent` says sampled.
    pub sample: f64,
    /// Requests (each attempt) whose `traceparent` said sampled, over merged files.
    pub requests_sampled: u64,
    /// Bytes the `traceparent` and `tracestate` headers added to each request as the run's
    /// protocol sent them (HTTP/1.1 lines, HTTP/2 HPACK literals).
    pub header_bytes_per_request: u64,
    /// The run's slowest sampled requests, slowest first (at most
    /// [`crate::trace::EXEMPLARS_PER_INTERVAL`]).
    #[serde(default)]
    pub slowest: Vec<ExemplarRow>,
}

/// Requests as the client saw them, when failed attempts were retried.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RetrySummary {
    /// Requests (each of one or more attempts).
    pub requests: u64,
    /// Attempts they took.
    pub attempts: u64,
    /// Attempts per request.
    pub attempts_per_request: f64,
    /// Share of requests that succeeded at the first attempt.
    pub first_try_success_ratio: f64,
    /// Share of requests that succeeded in the end.
    pub final_success_ratio: f64,
    /// Latency of whole requests: from the first attempt's intended start to the end of the
    /// last attempt, backoffs included.
    pub latency: LatencyStats,
}

/// The requests of one name or method over the run, or the replies of one class of server
/// error ([`RunSummary::replies`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// The name, method or reply class.
    pub name: String,
    /// Finished requests.
    pub requests: u64,
    /// Share of all finished requests.
    pub share: f64,
    /// Not successful (errors, 4xx, 5xx, rejected by a flow's check or capture).
    pub failed: u64,
    /// Requests of the name or method due and never sent (a dropped request's target, a
    /// dropped flow's first step).
    #[serde(default)]
    pub dropped: u64,
    /// Successful share of the requests due: over `requests` and `dropped`
    /// ([`success_ratio`]).
    pub success_ratio: f64,
    /// Successes per second of the run; `None` when the run finished fewer than
    /// [`MIN_RATE_REQUESTS`] requests.
    pub throughput_per_sec: Option<f64>,
    /// Corrected latency.
    pub latency: LatencyStats,
    /// Of a step of a flow: requests that failed a check (counted in `failed` too).
    #[serde(default)]
    pub check_failed: u64,
    /// Of a step of a flow: requests whose capture found nothing (counted in `failed` too).
    #[serde(default)]
    pub capture_failed: u64,
    /// Of a step of a flow: times it was skipped, never sent, because an earlier step of its
    /// flow failed (not in `requests`).
    #[serde(default)]
    pub skipped: u64,
    /// Of a step of a flow: what its first failed check or capture saw (status, size, the
    /// start of the body), to tell why; of a reply class, the first such reply, redacted.
    #[serde(default)]
    pub example: Option<String>,
}

/// The flows of one group of a scenario (or of every group, [`RunSummary::flows_total`]):
/// what it was asked to do, how many flows finished and how they ended, and their latency,
/// from each flow's intended start to its last step's end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowSummary {
    /// The group's name (`all` for every group together).
    pub name: String,
    /// The flow it runs (the flows, joined by `, `, for every group together).
    pub flow: String,
    /// Its steps' names in the order they run once (empty for every group together).
    pub steps: Vec<String>,
    /// Its load as asked: `10 workers`, `50 flows/s` (merged runs' loads added up).
    pub load: String,
    /// When it started, seconds since the start of the (earliest) run.
    pub start_s: f64,
    /// How long it ran: from its start to its end, or to the end of the attack.
    pub duration_s: f64,
    /// Flows finished.
    pub flows: u64,
    /// Flows whose every step succeeded.
    pub ok: u64,
    /// Flows that failed: `check_failed` + `capture_failed` + `request_failed`.
    pub failed: u64,
    /// ok / flows.
    pub success_ratio: f64,
    /// Flows that ended on a check that was false.
    pub check_failed: u64,
    /// Flows that ended on a capture that found nothing.
    pub capture_failed: u64,
    /// Flows that ended on a failed request: no response, or a status no check allowed.
    pub request_failed: u64,
    /// Steps the failed flows skipped (never sent).
    pub skipped_steps: u64,
    /// Open loop: flow arrivals due that never started (every slot stayed busy).
    pub dropped: u64,
    /// Flows the end of the group's window stopped before their last step (not finished).
    #[serde(default)]
    pub unfinished: u64,
    /// Flows finished per second of `duration_s`; `None` under [`MIN_RATE_REQUESTS`] flows.
    pub flows_per_sec: Option<f64>,
    /// Open loop at a constant rate: flows asked per second; `None` otherwise (and for every
    /// group together).
    pub asked_per_sec: Option<f64>,
    /// Flow latency, corrected: from the flow's intended start to its last step's end.
    pub latency: LatencyStats,
}

/// What one backend answered over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BackendSummary {
    /// The backend, as its header named it.
    pub name: String,
    /// Responses it gave.
    pub requests: u64,
    /// Its share of the attributed responses.
    pub share: f64,
    /// Its failed responses: 4xx and 5xx, and 2xx or 3xx that a flow step's check or
    /// capture rejected.
    pub failed: u64,
    /// Corrected latency p50, µs.
    pub p50_us: u64,
    /// Corrected latency p99, µs.
    pub p99_us: u64,
    /// First second (since the start) in which it answered.
    pub first_second: u64,
    /// Last second in which it answered.
    pub last_second: u64,
    /// Stretches in which it answered nothing while other requests finished, in time order
    /// (see [`crate::gaps`]).
    pub gaps: Vec<crate::gaps::Gap>,
}

/// Latency and phases of one side of the cache split.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheSide {
    /// Corrected latency.
    pub latency: LatencyStats,
    /// Phases, over the requests where they happened.
    pub phases: BTreeMap<String, PhaseStats>,
}

/// What caches in front of the server did, from the response headers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheSummary {
    /// Responses with a recognised cache header.
    pub classified: u64,
    /// Responses per cache status (`hit`, `miss`, `pass`, `expired`, `stale`, `unknown`).
    pub statuses: BTreeMap<String, u64>,
    /// Share of classified responses served from the cache (hit or stale).
    pub hit_ratio: f64,
    /// Share of classified response bytes served from the cache.
    pub byte_hit_ratio: f64,
    /// Served from the cache (hit, stale).
    pub hit: Option<CacheSide>,
    /// Fetched from the origin through the cache (miss, expired, pass).
    pub miss: Option<CacheSide>,
}

/// What a cache study's stream meant the cache to do, against what it did (see
/// [`crate::recorder::Workload`]): the intended hit ratio is the share of requests for
/// objects asked for before, exact from what was sent; the achieved one is the share of
/// answers that came from a cache, told by the origin's stamp where it stamped, else by the
/// cache headers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSummary {
    /// Requests for new objects.
    pub new: u64,
    /// Requests for objects asked for before.
    pub repeat: u64,
    /// Share of the two that repeat: what a cache that keeps everything would hit.
    pub intended_hit_ratio: f64,
    /// Answers that told where they came from (by stamp or cache header).
    pub judged: u64,
    /// Share of those that came from a cache; `None` when none told, or when nothing says
    /// a cache was there at all (no answer came from one or carried a cache header: the
    /// origin answered every request itself, as it does without a cache in front).
    pub achieved_hit_ratio: Option<f64>,
    /// New objects answered from a cache.
    pub false_hits: u64,
    /// Repeated objects answered by the origin.
    pub false_misses: u64,
    /// Answers the origin stamped.
    pub stamped: u64,
}

impl WorkloadSummary {
    /// The summary of the counts; `None` when no request meant anything. `cache_seen`: some
    /// answer carried a cache header.
    pub fn of(w: &crate::recorder::Workload, cache_seen: bool) -> Option<WorkloadSummary> {
        let asked = w.new + w.repeat;
        if asked == 0 {
            return None;
        }
        let judged = w.new_judged + w.repeat_judged;
        let from_cache = (w.repeat_judged - w.false_misses.min(w.repeat_judged)) + w.false_hits;
        Some(WorkloadSummary {
            new: w.new,
            repeat: w.repeat,
            intended_hit_ratio: ratio(w.repeat as f64, asked as f64),
            judged,
            achieved_hit_ratio: (judged > 0 && (cache_seen || from_cache > 0))
                .then(|| ratio(from_cache as f64, judged as f64)),
            false_hits: w.false_hits,
            false_misses: w.false_misses,
            stamped: w.stamped,
        })
    }

    /// What told where answers came from: `stamps`, `cache headers`, or both.
    pub fn judged_by(&self) -> &'static str {
        match (self.stamped, self.judged) {
            (0, _) => "cache headers",
            (s, j) if s >= j => "the origin's stamps",
            _ => "the origin's stamps and cache headers",
        }
    }
}

/// Everything a report shows about a run (or a merge of runs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// [`SUMMARY_VERSION`].
    pub version: u32,
    /// barrage version(s) that wrote the files.
    pub barrage_version: String,
    /// Results files the summary was computed from.
    pub files: Vec<String>,
    /// Hosts that ran the load.
    pub hosts: Vec<String>,
    /// Earliest start, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// Open or closed loop (`open` or `closed` in JSON).
    #[serde(with = "crate::file::mode_name")]
    pub mode: crate::file::Mode,
    /// Target URLs.
    pub urls: Vec<String>,
    /// Settings of the (first) run.
    pub settings: serde_json::Value,
    /// TLS verification was off.
    pub insecure: bool,
    /// Written with `--no-redact`: URLs, settings and error examples may hold secrets
    /// (otherwise they are redacted, here even for files written before redaction existed).
    pub unredacted: bool,
    /// Stopped early: by Ctrl-C or q, or by what [`RunSummary::stopped_by`] says.
    pub interrupted: bool,
    /// Who stopped it early, when it was not Ctrl-C or q: a collector, and why (every shard
    /// told to stop: a shard lost under `--on-shard-loss abort`, a fleet-wide `--slo`).
    #[serde(default)]
    pub stopped_by: Option<String>,
    /// Request counts.
    pub requests: RequestCounts,
    /// Durations.
    pub duration: Durations,
    /// Requests sent per second of attack (offered rate); `None` when fewer than
    /// [`MIN_RATE_REQUESTS`] were sent.
    pub rate_per_sec: Option<f64>,
    /// Successes per second of the whole run; `None` when fewer than [`MIN_RATE_REQUESTS`]
    /// finished.
    pub throughput_per_sec: Option<f64>,
    /// ok / total.
    pub success_ratio: f64,
    /// Latency, both measures.
    pub latency: Latencies,
    /// Latency (corrected) per status class.
    pub latency_by_class: BTreeMap<String, LatencyStats>,
    /// Per phase: over the requests where the phase happened, and per finished request.
    pub phases: BTreeMap<String, PhaseStats>,
    /// Bytes.
    pub bytes: Bytes,
    /// Responses per status code (`"0"`: outside 100..=999; older files counted 600..=999 there).
    pub status_codes: BTreeMap<String, u64>,
    /// Error kinds with counts and an example each.
    pub errors: Vec<ErrorStat>,
    /// Cache status of the responses; `None` when no response carried a recognised cache header.
    pub cache: Option<CacheSummary>,
    /// What the stream meant a cache to do and what it did; `None` when it meant nothing
    /// (no `--hit-ratio`, no phases).
    #[serde(default)]
    pub workload: Option<WorkloadSummary>,
    /// Requests 0, 1, … `sent_prefix` − 1 of the stream were all sent (what a fill warmed);
    /// over merged files, the least.
    #[serde(default)]
    pub sent_prefix: u64,
    /// When the run sent its first request (of those that finished), ms after its
    /// schedule's start; over merged files, the earliest. `None` before format 13.
    #[serde(default)]
    pub first_send_ms: Option<f64>,
    /// With `--retries`: requests as the client saw them (the other figures count attempts).
    pub retries: Option<RetrySummary>,
    /// `--trace-context`: the share sampled, the requests sampled and the header bytes per
    /// request; `None` without it.
    #[serde(default)]
    pub trace_context: Option<TraceContextSummary>,
    /// Per target name (`# name:`), by requests; empty when no target was named.
    pub by_name: Vec<GroupSummary>,
    /// Per method, by requests.
    pub by_method: Vec<GroupSummary>,
    /// Per group of a scenario (`--scenario`), in the order of the results file's header;
    /// empty without one.
    #[serde(default)]
    pub flows: Vec<FlowSummary>,
    /// Every group's flows together; `None` without a scenario.
    #[serde(default)]
    pub flows_total: Option<FlowSummary>,
    /// Server error replies of a key-value store per class (`ERR`, `MOVED`, `LOADING`,
    /// `SERVER_ERROR`, ...), by count: the replies in `requests`, their share of all
    /// finished requests, their corrected latency and an example reply; empty for HTTP.
    #[serde(default)]
    pub replies: Vec<GroupSummary>,
    /// The streams of multiplexed connections, their stalls, and HTTP/2's fallbacks; `None`
    /// when no connection spoke HTTP/2 or HTTP/3 and none was asked to speak HTTP/2.
    #[serde(default)]
    pub streams: Option<StreamSummary>,
    /// Per backend, by requests, from the backend header of each response.
    pub backends: Vec<BackendSummary>,
    /// Jain's fairness index of the responses over the backends (1 = even, 1/n = all on
    /// one); `None` with fewer than two backends.
    pub fairness: Option<f64>,
    /// barrage checking itself.
    pub generator: Generator,
    /// The watched processes (`--monitor`, a testbed's servers), then barrage itself.
    pub processes: Vec<ProcessSummary>,
    /// The machine barrage ran on; `None` in files without samples.
    pub host: Option<HostSummary>,
    /// The `--at` commands and what changed around each.
    pub events: Vec<EventSummary>,
    /// The percentile spectrum of the whole run (the HdrHistogram plot).
    pub latency_spectrum: Spectrum,
    /// Sampled individual requests for a scatter plot, at most [`SCATTER_POINTS`]; not part
    /// of the JSON summary.
    #[serde(skip)]
    pub scatter: Vec<crate::recorder::RequestPoint>,
    /// Per step (one entry for an unstepped run).
    pub steps: Vec<StepSummary>,
    /// The time series.
    pub intervals: Vec<IntervalRow>,
    /// What the run sent of the arrivals it intended (an open loop of known length).
    #[serde(default)]
    pub coverage: Option<crate::coverage::Coverage>,
    /// The shards of a split run (`--shard`), each from its own file; empty otherwise.
    #[serde(default)]
    pub shards: Vec<crate::shards::ShardSummary>,
    /// The run is still going on: its files are read as they are being written
    /// ([`summarize_running`]), and the figures are the run so far; `None` once it ended.
    #[serde(default)]
    pub running: Option<Running>,
    /// Plain-language warnings, each of a kind: barrage was the bottleneck, a file was cut
    /// short, ...
    pub warnings: Vec<Warning>,
    /// Requests finished (answered or failed) by the end of the attack, from the run's
    /// finished requests per tenth of a second (exact when the attack lasted whole tenths):
    /// the others of `requests.total` finished in the wait after it. The intervals cannot
    /// say it, as a wait under half a second is folded into the last of them. `None` when not
    /// known: not written to JSON (a summary read back from JSON has none).
    #[serde(skip)]
    pub finished_in_attack: Option<u64>,
}

/// How far a run still going on has got: what a report of its files so far says in place
/// of how long it lasted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Running {
    /// Seconds of the run its files hold so far.
    pub covered_s: f64,
    /// Seconds it is to last (its `-d`); `None` when its length is not set in advance.
    pub planned_s: Option<f64>,
}

impl Running {
    /// `12 s of 30 s`, `12 s so far`.
    pub fn progress(&self) -> String {
        match self.planned_s {
            Some(planned) => format!("{:.0} s of {planned:.0} s", self.covered_s),
            None => format!("{:.0} s so far", self.covered_s),
        }
    }
}

/// Most sampled requests a summary keeps for the scatter plot.
pub const SCATTER_POINTS: usize = 20_000;

/// Latency at percentiles from 0 to 100, denser toward the tail.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spectrum {
    /// (percentile 0..=100, corrected latency µs).
    pub corrected: Vec<(f64, u64)>,
    /// (percentile 0..=100, service time µs).
    pub service: Vec<(f64, u64)>,
}

impl Spectrum {
    fn of(corrected: &Histogram<u64>, service: &Histogram<u64>) -> Spectrum {
        Spectrum { corrected: spectrum(corrected), service: spectrum(service) }
    }
}

/// HdrHistogram's percentile distribution: 5 ticks per halving of the distance to 100%.
fn spectrum(h: &Histogram<u64>) -> Vec<(f64, u64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut points: Vec<(f64, u64)> = h
        .iter_quantiles(5)
        .map(|v| (v.quantile_iterated_to() * 100.0, h.highest_equivalent(v.value_iterated_to())))
        .collect();
    points.dedup_by(|a, b| a.0 == b.0);
    points
}

/// The name barrage's own samples are reported under.
pub const GENERATOR: &str = "barrage";

#[cfg(test)]
mod tests {
    use super::build::{per_sec, phase_stats, sum_labels};
    use super::checks::{asked_flows, reply_check, stream_check};
    use super::*;

    /// The flows a group of iterations asked for, read back from its load's label (merged
    /// shards' labels add up); other loads ask for no count.
    #[test]
    fn a_group_of_iterations_asks_for_workers_times_iterations_flows() {
        for (load, want) in [
            ("10 workers, 500 flows", Some(500)),
            (sum_labels(&["10 workers, 500 flows", "20 workers, 1000 flows"]).as_str(), Some(1500)),
            ("10 workers", None),
            ("50 flows/s", None),
            ("10 workers, many flows", None),
        ] {
            assert_eq!(asked_flows(load), want, "{load}");
        }
    }

    #[test]
    fn a_rate_needs_enough_requests_in_its_window() {
        assert_eq!(per_sec(1, 1, 0.002), None, "-n 1 is one over a latency, not a rate");
        assert_eq!(per_sec(9, MIN_RATE_REQUESTS - 1, 10.0), None);
        assert_eq!(per_sec(5, MIN_RATE_REQUESTS, 2.0), Some(2.5));
        assert_eq!(per_sec(0, 100, 1.0), Some(0.0), "nothing succeeded is a rate of 0");
    }

    #[test]
    fn server_error_replies_are_warned_about_by_class() {
        let class = |name: &str, requests| GroupSummary { name: name.into(), requests, ..Default::default() };
        let mut s = RunSummary::default();
        assert_eq!(reply_check(&s), None);
        s.replies = vec![class("ERR", 1)];
        assert_eq!(
            reply_check(&s),
            Some(Warning::new(WarningKind::ServerErrors, "1 server error reply (ERR: 1): see Server replies"))
        );
        s.replies = vec![class("ERR", 12), class("MOVED", 3)];
        let said = "15 server error replies (ERR: 12, MOVED: 3): see Server replies";
        assert_eq!(reply_check(&s), Some(Warning::new(WarningKind::ServerErrors, said)));
    }

    #[test]
    fn a_phase_is_spread_over_every_finished_request() {
        let mut h = crate::recorder::new_histogram();
        for us in [20_000, 20_000, 20_000, 20_000] {
            h.record(us).unwrap();
        }
        let p = phase_stats(&h, 4_080);
        assert_eq!(p.count, 4);
        assert!((p.total_us - p.mean_us * 4.0).abs() < 1e-6, "{p:?}");
        assert_eq!(p.per_request_us, p.total_us / 4_080.0);
        assert!((p.per_request_us - 19.6).abs() < 0.1, "{p:?}");
        assert_eq!(phase_stats(&crate::recorder::new_histogram(), 0), PhaseStats::default());
    }

    /// A server's limit on streams is named by the setting of the protocol that set it,
    /// both when merged runs spoke both; no limit, no warning.
    #[test]
    fn a_stream_cap_is_named_by_its_protocols_setting() {
        let with = |protocols: &[&str], cap| {
            let mut s = RunSummary::default();
            s.requests.protocols = protocols.iter().map(|p| (p.to_string(), 1)).collect();
            s.streams = Some(StreamSummary { streams_max: 5, stream_cap: cap, ..Default::default() });
            stream_check(&s)
        };
        let table = [
            (&["HTTP/2"][..], "(SETTINGS_MAX_CONCURRENT_STREAMS)"),
            (&["HTTP/3"][..], "(QUIC's initial_max_streams_bidi)"),
            (
                &["HTTP/2", "HTTP/3"][..],
                "(HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS or QUIC's initial_max_streams_bidi)",
            ),
        ];
        for (protocols, setting) in table {
            let warnings = with(protocols, Some(5));
            assert_eq!(warnings.len(), 1, "{protocols:?}");
            assert_eq!(warnings[0].kind, WarningKind::StreamCap);
            assert!(warnings[0]
                .text
                .starts_with(&format!("the server allows 5 concurrent stream(s) per connection {setting}")));
        }
        assert!(with(&["HTTP/3"], None).is_empty());
    }

    /// A summary written before warnings had kinds (JSON version 1, each warning a string)
    /// still reads, its warnings as they were, of kind `other`.
    #[test]
    fn a_version_1_summary_with_plain_warnings_reads() {
        let mut old = serde_json::to_value(RunSummary::default()).unwrap();
        old["version"] = 1.into();
        old["warnings"] = serde_json::json!(["a results file was cut off"]);
        let s: RunSummary = serde_json::from_value(old).unwrap();
        assert_eq!(s.warnings, [Warning::new(WarningKind::Other, "a results file was cut off")]);
    }
}
