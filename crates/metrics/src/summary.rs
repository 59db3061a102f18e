//! [`RunSummary`]: the figures of one run, or of several merged, as every report shows them.
//!
//! A summary is computed from results files only (a live run writes one too), so a report
//! printed at the end of a run and one re-rendered later from its file are the same.

use crate::events::EventSummary;
use crate::file::{FileError, MergedIntervals, Mode, ResultsReader, RunFooter};
use crate::recorder::{new_histogram, Counts, PhaseSet, Recorder, CLASS_NAMES};
use crate::sample::{CacheStatus, ErrorKind, Phase, Protocol};
use crate::secrets::Redaction;
use crate::watch::{combine, HostSummary, HostTally, ProcKey, ProcSample, ProcessSummary, ProcessTally, WatchSample};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Version of the JSON summary (`schema/summary.schema.json`).
pub const SUMMARY_VERSION: u32 = 1;

/// Generator CPU above this share of its threads' capacity means barrage itself was the limit.
const CPU_SATURATED: f64 = 0.90;
/// Schedule lag p99 above this (µs) means sends fell behind the schedule.
const LAG_LIMIT_US: u64 = 5_000;

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
    /// `open` or `closed`.
    pub mode: String,
    /// Target URLs.
    pub urls: Vec<String>,
    /// Settings of the (first) run.
    pub settings: serde_json::Value,
    /// TLS verification was off.
    pub insecure: bool,
    /// Written with `--no-redact`: URLs, settings and error examples may hold secrets
    /// (otherwise they are redacted, here even for files written before redaction existed).
    pub unredacted: bool,
    /// Stopped early by Ctrl-C.
    pub interrupted: bool,
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
    /// With `--retries`: requests as the client saw them (the other figures count attempts).
    pub retries: Option<RetrySummary>,
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
    /// The shards of a split run (`--shard`), each from its own file; empty otherwise.
    #[serde(default)]
    pub shards: Vec<crate::shards::ShardSummary>,
    /// Plain-language warnings: barrage was the bottleneck, a file was cut short, ...
    pub warnings: Vec<String>,
    /// Requests finished (answered or failed) by the end of the attack, from the run's
    /// finished requests per tenth of a second (exact when the attack lasted whole tenths):
    /// the others of `requests.total` finished in the wait after it. The intervals cannot
    /// say it, as a wait under half a second is folded into the last of them. `None` when not
    /// known: not written to JSON (a summary read back from JSON has none).
    #[serde(skip)]
    pub finished_in_attack: Option<u64>,
}

/// Requests of `timeline` finished in the first `seconds` of the run; a tick across that
/// moment counts by the share of it before.
fn finished_by(timeline: &crate::recorder::Timeline, seconds: f64) -> u64 {
    let tick_s = crate::recorder::TICK.as_secs_f64();
    let n: f64 = timeline
        .iter()
        .map(|t| {
            let before = ((seconds - f64::from(t.tick) * tick_s) / tick_s).clamp(0.0, 1.0);
            f64::from(t.ok.saturating_add(t.failed)) * before
        })
        .sum();
    n.round() as u64
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

/// Sampled requests gathered interval by interval, halved (every other one) whenever they
/// pass four times [`SCATTER_POINTS`], so a day-long run keeps a few MiB.
#[derive(Default)]
struct Scatter {
    points: Vec<crate::recorder::RequestPoint>,
    /// Keep one in this many of the points still to come.
    stride: usize,
    seen: usize,
}

impl Scatter {
    fn add(&mut self, points: Vec<crate::recorder::RequestPoint>) {
        let stride = self.stride.max(1);
        for p in points {
            // Failed requests are rare and telling: they are always kept.
            if !p.ok || self.seen.is_multiple_of(stride) {
                self.points.push(p);
            }
            self.seen += 1;
        }
        if self.points.len() > 4 * SCATTER_POINTS {
            let mut keep = false;
            self.points.retain(|p| {
                keep = !keep;
                !p.ok || keep
            });
            self.stride = stride * 2;
        }
    }
}

/// At most [`SCATTER_POINTS`] of `points`, evenly thinned, every failed one kept first.
fn thin(points: Vec<crate::recorder::RequestPoint>) -> Vec<crate::recorder::RequestPoint> {
    if points.len() <= SCATTER_POINTS {
        return points;
    }
    let (failed, ok): (Vec<_>, Vec<_>) = points.into_iter().partition(|p| !p.ok);
    let failed: Vec<_> = failed.into_iter().take(SCATTER_POINTS / 4).collect();
    let room = SCATTER_POINTS - failed.len();
    let step = ok.len().div_ceil(room).max(1);
    let mut out: Vec<_> = failed.into_iter().chain(ok.into_iter().step_by(step)).collect();
    out.sort_by_key(|p| p.ended_ms);
    out
}

/// Reads and merges results files into one summary. Merged, the shards of a split run must
/// all be there, once each, of one plan ([`crate::shards::check`]); with `force`, what
/// does not fit is merged anyway and said in a warning. One shard's file alone is that
/// shard's report, and says so.
pub fn summarize_with(paths: &[PathBuf], force: bool) -> Result<RunSummary, FileError> {
    let readers = paths.iter().map(|p| ResultsReader::open(p)).collect::<Result<Vec<_>, _>>()?;
    if let [one] = &readers[..] {
        let shard = one.header().launch.shard;
        drop(readers);
        let mut s = merge(paths)?;
        if let Some((i, n)) = shard {
            s.warnings.push(format!(
                "this is shard {i}/{n} of a split run: its figures are its part of the run; `barrage report` over all {n} shards' files gives the whole"
            ));
        }
        return Ok(s);
    }
    let files: Vec<_> = readers.iter().map(|r| (r.path(), r.header())).collect();
    let unfit = crate::shards::check(&files).err();
    if let (Some(why), false) = (&unfit, force) {
        return Err(FileError::Shards(why.clone()));
    }
    let headers: Vec<_> = readers.iter().map(|r| r.header().clone()).collect();
    drop(readers);
    let mut s = merge(paths)?;
    if let Some(why) = unfit {
        s.warnings.insert(0, format!("{why}; merged anyway (--force): the totals are not one run's"));
    }
    if crate::shards::split(&headers.iter().collect::<Vec<_>>()) {
        let origin_ms = headers.iter().map(|h| h.started_unix_ms).min().unwrap_or(0);
        let mut counted = true;
        for (path, header) in paths.iter().zip(&headers) {
            let own = merge(std::slice::from_ref(path))?;
            counted &= own.requests.quota.is_some();
            s.shards.push(crate::shards::row(path, header, &own, origin_ms));
        }
        crate::shards::judge_ends(&mut s.shards, s.mode == "closed" && counted);
        for row in &s.shards {
            if let Some(why) = &row.behind {
                s.warnings.push(format!(
                    "shard {} on {} fell behind its share: {why}; its part of the figures describes that load machine, not the server",
                    row.shard, row.host
                ));
            }
        }
    }
    Ok(s)
}

/// [`summarize_with`], refusing an incomplete or mixed set of shards.
pub fn summarize(paths: &[PathBuf]) -> Result<RunSummary, FileError> {
    summarize_with(paths, false)
}

/// Reads and merges results files into one summary, as they are.
fn merge(paths: &[PathBuf]) -> Result<RunSummary, FileError> {
    let readers = paths.iter().map(|p| ResultsReader::open(p)).collect::<Result<Vec<_>, _>>()?;
    let mut merged = MergedIntervals::new(readers);
    let mut total = Recorder::new();
    let mut steps: BTreeMap<u32, StepTotal> = BTreeMap::new();
    let mut intervals = Vec::new();
    let mut seen: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut watched = Watched::new(merged.readers());
    let mut scatter = Scatter::default();
    for mut m in merged.by_ref() {
        // Sampled requests go to the scatter alone, thinned as they come: memory stays flat.
        scatter.add(std::mem::take(&mut m.recorder.samples));
        for b in m.recorder.backends.iter().filter(|b| b.requests > 0) {
            let span = seen.entry(b.name.clone()).or_insert((m.second, m.second));
            span.1 = m.second;
        }
        total.add(&m.recorder);
        let length_s = f64::from(m.length_ms) / 1e3;
        steps.entry(m.step).or_insert_with(StepTotal::new).add(&m.recorder, length_s);
        let mut row = row(m.second, length_s, &m.recorder);
        watched.add(&mut row, &m.watch, length_s);
        intervals.push(row);
    }
    let timeline = total.timeline.clone();
    // Each backend's answers per tick, for its gaps and the events' backend shares.
    let backends = total.backends.clone();
    let completed = total.counts.completed;
    let mut s = build(merged.readers(), total, steps, intervals);
    add_fairness(&mut s, &seen);
    let unproven = watched.unproven.clone();
    (s.processes, s.host) = watched.finish();
    if let Some(me) = s.processes.iter_mut().find(|p| p.name == GENERATOR) {
        s.generator.cpu_max_percent = me.cpu_max_percent;
        // The run's CPU over its whole duration, exact, is the one figure of barrage's CPU;
        // the per-second samples only draw its course.
        if let Some((user, system)) = generator_cpu(merged.readers(), s.duration.total_s) {
            (me.cpu_user_mean_percent, me.cpu_system_mean_percent) = (user, system);
            me.cpu_mean_percent = user + system;
        }
    }
    s.warnings.extend(unproven.into_iter().map(|name| {
        format!(
            "{name} was watched by several results files without process identity (written by a barrage before format version 4): its samples were added up as different processes; if they watched the same process, its CPU and memory are overstated"
        )
    }));
    // Runs merged from different start times end where the last interval ends.
    let end_s = s.intervals.last().map_or(0.0, |r| r.second as f64 + r.length_s).max(s.duration.total_s);
    let mut gaps = crate::gaps::find(&timeline, completed, &backends, end_s);
    for b in &mut s.backends {
        b.gaps = gaps.remove(&b.name).unwrap_or_default();
    }
    let backend_ticks = crate::events::backend_ticks(&backends);
    s.events = crate::events::analyse(&events(merged.readers()), &timeline, &backend_ticks, &s.intervals, end_s);
    s.warnings.extend(watch_check(&s));
    s.scatter = thin(scatter.points);
    s.finished_in_attack = Some(finished_by(&timeline, s.duration.attack_s));
    Ok(s)
}

/// The name barrage's own samples are reported under.
pub const GENERATOR: &str = "barrage";

/// The events of every file, their offsets moved onto the earliest run's start, their
/// commands and output redacted.
fn events(readers: &[ResultsReader]) -> Vec<crate::watch::EventRecord> {
    let origin = readers.iter().map(|r| r.header().started_unix_ms).min().unwrap_or(0);
    let redaction = redaction_of(readers);
    let mut out = Vec::new();
    for (file, r) in readers.iter().enumerate() {
        let late = r.header().started_unix_ms - origin;
        out.extend(r.events().iter().cloned().map(|mut e| {
            e.offset_ms += late;
            // Keep the commands of different files apart.
            e.index += (file as u32) << 16;
            e.redact(&redaction);
            e
        }));
    }
    out
}

/// How the summary of these files keeps secrets out: as their settings say (redacted unless
/// every file was written with `--no-redact`). A file written by this barrage is redacted
/// already; an older one, or one made by hand, is redacted here.
fn redaction_of(readers: &[ResultsReader]) -> Redaction {
    let each: Vec<Redaction> = readers
        .iter()
        .map(|r| Redaction::of_settings(&serde_json::from_str(&r.header().settings_json).unwrap_or_default()))
        .collect();
    Redaction::strictest(&each)
}

/// Per-process tallies over the run, in order of first appearance, barrage last.
///
/// Each second, the samples of every merged file are first combined into one per name:
/// samples of the same process (same machine, same PIDs started at the same times) watched
/// by several runs are averaged, never added; different processes of one name (each
/// machine's own nginx) add up. So the rows (CSV, charts) and the tallies (the summary)
/// count each process once. barrage's sample of each run is that run's engine threads: one
/// per run, always added.
struct Watched {
    /// Per file: the machine its PIDs belong to (host name, boot ID).
    machines: Vec<(String, String)>,
    processes: Vec<ProcessTally>,
    names: Vec<String>,
    generator: ProcessTally,
    host: HostTally,
    /// Names that several files watched without process identity (version 3 files).
    unproven: std::collections::BTreeSet<String>,
}

impl Watched {
    fn new(readers: &[ResultsReader]) -> Self {
        Watched {
            machines: readers.iter().map(|r| (r.header().host.clone(), r.header().boot_id.clone())).collect(),
            processes: Vec::new(),
            names: Vec::new(),
            generator: ProcessTally::default(),
            host: HostTally::default(),
            unproven: Default::default(),
        }
    }

    /// Which process `p`, watched by file `file`, is (see [`ProcKey`]).
    fn key<'a>(&'a self, file: usize, p: &'a ProcSample) -> ProcKey<'a> {
        let (host, boot) = &self.machines[file];
        (!p.roots.is_empty()).then_some((host.as_str(), boot.as_str(), p.roots.as_slice()))
    }

    /// Adds one interval's samples (one per merged file) to the tallies and to its row.
    fn add(&mut self, row: &mut IntervalRow, samples: &[(usize, WatchSample)], secs: f64) {
        let watched = combine(samples.iter().flat_map(|(f, w)| w.processes.iter().map(|p| (self.key(*f, p), p))));
        self.note_unproven(samples);
        for p in &watched {
            let i = match self.names.iter().position(|n| *n == p.name) {
                Some(i) => i,
                None => {
                    self.names.push(p.name.clone());
                    self.processes.push(ProcessTally::default());
                    self.names.len() - 1
                }
            };
            self.processes[i].add(p, secs);
            row.cpu_percent.insert(p.name.clone(), f64::from(p.cpu_percent()));
            row.rss_kib.insert(p.name.clone(), p.rss_kib);
        }
        let runs = combine(samples.iter().map(|(_, w)| (None, &w.generator)));
        if let Some(mut me) = runs.into_iter().next() {
            me.name = GENERATOR.into();
            self.generator.add(&me, secs);
            row.cpu_percent.insert(GENERATOR.into(), f64::from(me.cpu_percent()));
            row.rss_kib.insert(GENERATOR.into(), me.rss_kib);
        }
        for (_, w) in samples {
            self.host.add(&w.host, secs);
            row.host_cpu_percent = Some(f64::from(w.host.cpu_percent));
        }
    }

    /// Remembers the names that more than one file watched, running, without identity.
    fn note_unproven(&mut self, samples: &[(usize, WatchSample)]) {
        let mut files: BTreeMap<&str, std::collections::BTreeSet<usize>> = BTreeMap::new();
        for (f, w) in samples {
            for p in w.processes.iter().filter(|p| p.roots.is_empty() && p.processes > 0) {
                files.entry(p.name.as_str()).or_default().insert(*f);
            }
        }
        for (name, f) in files {
            if f.len() > 1 && !self.unproven.contains(name) {
                self.unproven.insert(name.to_string());
            }
        }
    }

    fn finish(self) -> (Vec<ProcessSummary>, Option<HostSummary>) {
        let host = self.host.finish();
        let mut processes: Vec<ProcessSummary> = self.processes.into_iter().map(ProcessTally::finish).collect();
        if host.is_some() {
            processes.push(self.generator.finish());
        }
        (processes, host)
    }
}

/// Warnings from the samples: barrage near its ceiling in some second, the machine full.
fn watch_check(s: &RunSummary) -> Vec<String> {
    let mut w = Vec::new();
    let threads = f64::from(s.generator.threads);
    let already = s.warnings.iter().any(|w| w.contains("generator was saturated"));
    let peak = s.generator.cpu_max_percent;
    if !already && threads > 0.0 && peak >= CPU_SATURATED * 100.0 * threads && s.duration.total_s >= 2.0 {
        w.push(format!(
            "barrage's own CPU peaked at {peak:.0}% of its {threads} engine thread(s) (at most {:.0}%): the generator was near saturation for part of the run, so those seconds may describe barrage rather than the server",
            threads * 100.0
        ));
    }
    if let Some(h) = &s.host {
        if h.cpu_mean_percent >= CPU_SATURATED * 100.0 && s.duration.total_s >= 2.0 {
            w.push(format!(
                "the machine's CPU was {:.0}% busy on average: barrage and the servers on this machine competed for it",
                h.cpu_mean_percent
            ));
        }
    }
    w
}

/// Jain's fairness index over `counts`, taken over `n` backends (missing ones count 0).
fn jain(counts: impl Iterator<Item = u64>, n: usize) -> Option<f64> {
    let (sum, squares) = counts.fold((0.0, 0.0), |(s, q), x| (s + x as f64, q + (x * x) as f64));
    (n >= 2 && sum > 0.0).then(|| sum * sum / (n as f64 * squares))
}

/// Fairness over the run and per interval, against every backend the run saw, and when
/// each backend first and last answered.
fn add_fairness(s: &mut RunSummary, seen: &BTreeMap<String, (u64, u64)>) {
    let n = s.backends.len();
    s.fairness = jain(s.backends.iter().map(|b| b.requests), n);
    for row in &mut s.intervals {
        row.fairness = jain(row.backends.values().copied(), n);
    }
    for b in &mut s.backends {
        if let Some((first, last)) = seen.get(&b.name) {
            (b.first_second, b.last_second) = (*first, *last);
        }
    }
}

fn row(second: u64, length_s: f64, r: &Recorder) -> IntervalRow {
    let failed = r.counts.completed.saturating_sub(r.counts.ok);
    IntervalRow {
        second,
        length_s,
        sent: r.counts.sent,
        dropped: r.never_sent(),
        ok: r.counts.ok,
        errors: failed,
        throughput_per_sec: if length_s > 0.0 { r.counts.ok as f64 / length_s } else { 0.0 },
        p50_us: quantile(&r.corrected, 0.5),
        p90_us: quantile(&r.corrected, 0.9),
        p99_us: quantile(&r.corrected, 0.99),
        max_us: if r.corrected.is_empty() { 0 } else { r.corrected.max() },
        service_p50_us: quantile(&r.service, 0.5),
        service_p99_us: quantile(&r.service, 0.99),
        phase_mean_us: Phase::ALL
            .iter()
            .filter(|p| !r.phase(**p).is_empty())
            .map(|p| (p.name().to_string(), r.phase(*p).mean()))
            .collect(),
        bytes_in: r.counts.bytes_in,
        bytes_out: r.counts.bytes_out,
        hit_ratio: hit_ratios(r).map(|h| h.0),
        byte_hit_ratio: hit_ratios(r).map(|h| h.1),
        backends: r.backends.iter().map(|b| (b.name.clone(), b.requests)).collect(),
        fairness: None,
        ..Default::default()
    }
}

/// The window of a group's rate is the whole run's, so the run's count says whether it is one.
fn groups(keyed: &crate::recorder::Keyed, all: u64, run_s: f64) -> Vec<GroupSummary> {
    let mut out: Vec<GroupSummary> = keyed
        .iter()
        .map(|k| GroupSummary {
            name: k.name.clone(),
            requests: k.requests,
            share: ratio(k.requests as f64, all as f64),
            failed: k.failed,
            dropped: k.flow.dropped,
            success_ratio: success_ratio(k.requests - k.failed, k.requests, k.flow.dropped),
            throughput_per_sec: per_sec(k.requests - k.failed, all, run_s),
            latency: LatencyStats::of(&k.latency),
            check_failed: k.flow.check_failed,
            capture_failed: k.flow.capture_failed,
            skipped: k.flow.skipped,
            example: k.example.clone(),
        })
        .collect();
    out.sort_by(|a, b| b.requests.cmp(&a.requests).then_with(|| a.name.cmp(&b.name)));
    out
}

fn retry_summary(total: &Recorder) -> Option<RetrySummary> {
    let c = &total.counts;
    // A request due and never sent had no attempt: it failed at the first and in the end.
    let never = total.never_sent();
    (c.logical > 0).then(|| RetrySummary {
        requests: c.logical,
        attempts: c.attempts,
        attempts_per_request: ratio(c.attempts as f64, c.logical as f64),
        first_try_success_ratio: success_ratio(c.first_ok, c.logical, never),
        final_success_ratio: success_ratio(c.final_ok, c.logical, never),
        latency: total.whole.as_deref().map(LatencyStats::of).unwrap_or_default(),
    })
}

fn backend_summaries(total: &Recorder) -> Vec<BackendSummary> {
    let attributed: u64 = total.backends.iter().map(|b| b.requests).sum();
    let mut out: Vec<BackendSummary> = total
        .backends
        .iter()
        .map(|b| BackendSummary {
            name: b.name.clone(),
            requests: b.requests,
            share: ratio(b.requests as f64, attributed as f64),
            failed: b.failed,
            p50_us: quantile(&b.latency, 0.5),
            p99_us: quantile(&b.latency, 0.99),
            first_second: 0,
            last_second: 0,
            gaps: Vec::new(),
        })
        .collect();
    out.sort_by(|a, b| b.requests.cmp(&a.requests).then_with(|| a.name.cmp(&b.name)));
    out
}

/// (hit ratio, byte hit ratio) over the responses with a known cache status.
fn hit_ratios(r: &Recorder) -> Option<(f64, f64)> {
    let c = &r.counts;
    let known = |v: &[u64]| -> (u64, u64) {
        let mut classified = 0;
        let mut cached = 0;
        for status in CacheStatus::ALL.into_iter().filter(|s| *s != CacheStatus::Unknown) {
            classified += v[status as usize];
            if status.from_cache() {
                cached += v[status as usize];
            }
        }
        (cached, classified)
    };
    let (hits, classified) = known(&c.cache);
    let (hit_bytes, bytes) = known(&c.cache_bytes);
    (classified > 0).then(|| (ratio(hits as f64, classified as f64), ratio(hit_bytes as f64, bytes as f64)))
}

fn cache_summary(r: &Recorder) -> Option<CacheSummary> {
    let (hit_ratio, byte_hit_ratio) = hit_ratios(r)?;
    let side = |set: &Option<Box<PhaseSet>>| {
        set.as_deref().map(|p| CacheSide {
            latency: LatencyStats::of(&p.corrected),
            phases: Phase::ALL
                .iter()
                .zip(&p.phases)
                .map(|(ph, h)| (ph.name().to_string(), phase_stats(h, p.corrected.len())))
                .collect(),
        })
    };
    Some(CacheSummary {
        classified: r.counts.cache.iter().sum::<u64>() - r.counts.cache[CacheStatus::Unknown as usize],
        statuses: CacheStatus::ALL.iter().map(|s| (s.name().to_string(), r.counts.cache[*s as usize])).collect(),
        hit_ratio,
        byte_hit_ratio,
        hit: side(&r.hit),
        miss: side(&r.miss),
    })
}

/// A phase's figures, its total spread over `requests` (all those finished, whether the
/// phase happened in them or not).
fn phase_stats(h: &Histogram<u64>, requests: u64) -> PhaseStats {
    // Summed as the histogram's mean is taken (each value at the middle of its bucket), in
    // integers: exact, so the total is the mean times the count without float noise.
    let total: u128 = h
        .iter_recorded()
        .map(|v| u128::from(h.median_equivalent(v.value_iterated_to())) * u128::from(v.count_at_value()))
        .sum();
    let total_us = total as f64;
    PhaseStats {
        count: h.len(),
        mean_us: if h.is_empty() { 0.0 } else { h.mean() },
        p50_us: quantile(h, 0.5),
        p99_us: quantile(h, 0.99),
        total_us,
        per_request_us: ratio(total_us, requests as f64),
    }
}

fn quantile(h: &Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// `n` per second of `secs`, a window that held `requests` requests; `None` when they are
/// fewer than [`MIN_RATE_REQUESTS`].
fn per_sec(n: u64, requests: u64, secs: f64) -> Option<f64> {
    (requests >= MIN_RATE_REQUESTS).then(|| ratio(n as f64, secs))
}

fn build(
    readers: &[ResultsReader],
    total: Recorder,
    steps: BTreeMap<u32, StepTotal>,
    intervals: Vec<IntervalRow>,
) -> RunSummary {
    let first = readers[0].header();
    let redaction = redaction_of(readers);
    let mut settings = serde_json::from_str(&first.settings_json).unwrap_or(serde_json::Value::Null);
    redaction.json(&mut settings);
    let mut s = RunSummary {
        version: SUMMARY_VERSION,
        barrage_version: first.barrage_version.clone(),
        files: readers.iter().map(|r| r.path().display().to_string()).collect(),
        hosts: readers.iter().map(|r| r.header().host.clone()).collect(),
        started_unix_ms: readers.iter().map(|r| r.header().started_unix_ms).min().unwrap_or(0),
        mode: match first.mode {
            Mode::Open => "open".into(),
            Mode::Closed => "closed".into(),
        },
        urls: distinct(
            readers.iter().flat_map(|r| r.header().urls.iter()),
            readers.iter().map(|r| r.header().urls.len()).sum(),
        ),
        settings,
        insecure: readers.iter().any(|r| r.header().insecure),
        unredacted: !redaction.enabled,
        interrupted: readers.iter().any(|r| r.footer().is_some_and(|f| f.interrupted)),
        ..Default::default()
    };
    s.hosts = distinct(s.hosts.iter(), s.hosts.len());
    for url in &mut s.urls {
        if let std::borrow::Cow::Owned(redacted) = redaction.url(url) {
            *url = redacted;
        }
    }
    s.duration = durations(readers, &intervals, &mut s.warnings);
    s.requests = counts(&total);
    s.requests.quota = readers.iter().map(|r| r.footer().and_then(|f| f.due)).sum();
    s.streams = stream_summary(&total.counts);
    let attack = s.duration.attack_s;
    let run = s.duration.total_s;
    s.rate_per_sec = per_sec(total.counts.sent, total.counts.sent, attack);
    s.throughput_per_sec = per_sec(total.counts.ok, total.counts.completed, run);
    s.success_ratio = success_ratio(total.counts.ok, total.counts.completed, total.never_sent());
    s.latency = Latencies { corrected: LatencyStats::of(&total.corrected), service: LatencyStats::of(&total.service) };
    s.latency_spectrum = Spectrum::of(&total.corrected, &total.service);
    s.latency_by_class = CLASS_NAMES
        .iter()
        .zip(&total.by_class)
        .filter(|(_, h)| !h.is_empty())
        .map(|(name, h)| (name.to_string(), LatencyStats::of(h)))
        .collect();
    s.phases = Phase::ALL
        .iter()
        .map(|&p| (p.name().to_string(), phase_stats(total.phase(p), total.counts.completed)))
        .collect();
    s.cache = cache_summary(&total);
    s.workload = WorkloadSummary::of(&total.counts.workload, s.cache.is_some());
    s.sent_prefix = readers.iter().map(|r| r.footer().map_or(0, |f| f.sent_prefix)).min().unwrap_or(0);
    s.backends = backend_summaries(&total);
    s.retries = retry_summary(&total);
    s.by_name = groups(&total.names, total.counts.completed, s.duration.total_s);
    s.by_method = groups(&total.methods, total.counts.completed, s.duration.total_s);
    s.replies = groups(&total.replies, total.counts.completed, s.duration.total_s);
    // Written redacted by this barrage; an older file, or one made by hand, is redacted here.
    for example in s.replies.iter_mut().filter_map(|r| r.example.as_mut()) {
        *example = redaction.text(example).into_owned();
    }
    let done = total.counts.completed as f64;
    s.bytes = Bytes {
        in_total: total.counts.bytes_in,
        out_total: total.counts.bytes_out,
        in_mean: ratio(total.counts.bytes_in as f64, done),
        out_mean: ratio(total.counts.bytes_out as f64, done),
        in_per_sec: per_sec(total.counts.bytes_in, total.counts.completed, run),
        out_per_sec: per_sec(total.counts.bytes_out, total.counts.completed, run),
    };
    s.status_codes = total.status_counts().into_iter().map(|(c, n)| (c.to_string(), n)).collect();
    s.errors = ErrorKind::ALL
        .iter()
        .filter(|k| total.counts.errors[**k as usize] > 0)
        .map(|&k| ErrorStat {
            kind: k.name().into(),
            count: total.counts.errors[k as usize],
            example: redaction.text(total.example(k).unwrap_or_default()).into_owned(),
        })
        .collect();
    s.generator = generator(readers, &total, run, first.mode);
    s.steps = step_summaries(readers, steps, s.duration.attack_s);
    (s.flows, s.flows_total) = flow_summaries(readers, &total, s.duration.attack_s);
    s.intervals = intervals;
    s.warnings.extend(readers.iter().filter_map(|r| r.warning().map(str::to_string)));
    let log_dropped: u64 = readers.iter().filter_map(|r| r.footer()).map(|f| f.log_chunks_dropped).sum();
    if log_dropped > 0 {
        s.warnings.push(format!(
            "the request log lost {log_dropped} chunk(s) of rows because the disk fell behind (the load was not slowed down for it; the results file is complete)"
        ));
    }
    s.warnings.extend(flow_check(&s));
    s.warnings.extend(reply_check(&s));
    s.warnings.extend(stream_check(&s));
    s.warnings.extend(self_check(&s));
    s
}

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
fn flow_summaries(
    readers: &[ResultsReader],
    total: &Recorder,
    attack_s: f64,
) -> (Vec<FlowSummary>, Option<FlowSummary>) {
    let origin = readers.iter().map(|r| r.header().started_unix_ms).min().unwrap_or(0);
    let attack_ms = (attack_s * 1e3) as u64;
    let mut asked: Vec<AskedGroup> = Vec::new();
    for r in readers {
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

/// Below this share of the flow rate asked, a group fell short of its load.
const FLOW_RATE_SHORT: f64 = 0.99;

/// Warnings from the flows: flows that failed and the steps they skipped, and groups that
/// ran fewer flows than asked. Figures built on failed flows must not read as a result.
fn flow_check(s: &RunSummary) -> Vec<String> {
    let mut w = Vec::new();
    for g in &s.flows {
        if g.duration_s == 0.0 && g.flows == 0 {
            w.push(format!(
                "group {}: never ran: it starts at {} s, when the run had ended; its figures are empty",
                g.name, g.start_s
            ));
            continue;
        }
        if g.failed > 0 {
            w.push(format!(
                "group {}: {} of {} flow(s) failed ({} check failed, {} capture failed, {} request failed), skipping {} later step(s) that were never sent",
                g.name, g.failed, g.flows, g.check_failed, g.capture_failed, g.request_failed, g.skipped_steps
            ));
            // Why, step by step: what the first failed check or capture of each saw.
            let prefix = format!("{}/", g.name);
            let own = |name: &str| s.flows.len() == 1 || name.starts_with(&prefix);
            for step in s.by_name.iter().filter(|n| own(&n.name)) {
                if let Some(example) = &step.example {
                    w.push(format!("step {}: {example}", step.name));
                }
            }
        } else if g.skipped_steps > 0 {
            w.push(format!("group {}: {} step(s) were skipped, never sent", g.name, g.skipped_steps));
        }
        let dropped = match g.dropped {
            0 => String::new(),
            n => format!("; {n} flow arrival(s) were due but never started (every slot stayed busy)"),
        };
        match (g.flows_per_sec, g.asked_per_sec) {
            (Some(ran), Some(asked)) if asked > 0.0 && ran < FLOW_RATE_SHORT * asked => w.push(format!(
                "group {}: {ran:.2} flows/s finished of the {asked:.2} flows/s asked ({:.1}%){dropped}: the group did not run the load it was asked",
                g.name,
                ran / asked * 100.0,
            )),
            _ if g.dropped > 0 => w.push(format!("group {}: {}", g.name, &dropped[2..])),
            _ => {}
        }
        if g.unfinished > 0 {
            w.push(format!(
                "group {}: {} flow(s) were still running when the group's window ended and are not counted as finished",
                g.name, g.unfinished
            ));
        }
        if let Some(asked) = asked_flows(&g.load).filter(|n| g.flows < *n) {
            w.push(format!(
                "group {}: {} of the {asked} flows asked ({}) finished: its window or the run ended first",
                g.name, g.flows, g.load
            ));
        }
    }
    w
}

/// The flows a closed-loop group of `iterations` asked for in all, from its load as the
/// header says it (`10 workers, 500 flows`); `None` for any other load.
fn asked_flows(load: &str) -> Option<u64> {
    let (workers, flows) = load.strip_suffix(" flows")?.split_once(" workers, ")?;
    workers.parse::<u64>().ok()?;
    flows.parse().ok()
}

/// A warning when the server answered with errors: figures built on them must say so.
fn reply_check(s: &RunSummary) -> Option<String> {
    let n: u64 = s.replies.iter().map(|r| r.requests).sum();
    let classes: Vec<String> = s.replies.iter().map(|r| format!("{}: {}", r.name, r.requests)).collect();
    let noun = if n == 1 { "reply" } else { "replies" };
    (n > 0).then(|| format!("{n} server error {noun} ({}): see Server replies", classes.join(", ")))
}

fn counts(total: &Recorder) -> RequestCounts {
    let c = &total.counts;
    let errors = total.error_count();
    RequestCounts {
        total: c.completed,
        sent: c.sent,
        ok: c.ok,
        rejected: c.rejected,
        http_errors: c.completed.saturating_sub(c.ok).saturating_sub(c.rejected).saturating_sub(errors),
        errors,
        late: c.late,
        dropped: total.never_sent(),
        unfinished: c.sent.saturating_sub(c.completed),
        quota: None,
        connections: c.connections,
        stale_retries: c.stale_retries,
        protocols: Protocol::ALL
            .iter()
            .filter(|p| c.protocols[**p as usize] > 0)
            .map(|p| (p.name().to_string(), c.protocols[*p as usize]))
            .collect(),
        stream_retries: c.stream_retries,
    }
}

/// The streams' figures, when any connection spoke HTTP/2 or HTTP/3 or was asked to speak
/// HTTP/2.
fn stream_summary(c: &crate::recorder::Counts) -> Option<StreamSummary> {
    let multiplexed = c.protocols[Protocol::Http2 as usize] + c.protocols[Protocol::Http3 as usize];
    if multiplexed == 0 && c.http1_fallbacks == 0 {
        return None;
    }
    Some(StreamSummary {
        streams_max: c.streams_max,
        stream_cap: (c.stream_cap > 0).then_some(c.stream_cap),
        send_stalls: c.send_stalls,
        recv_stalls: c.recv_stalls,
        http1_fallbacks: c.http1_fallbacks,
    })
}

/// What the streams' figures warn of: a server that chose HTTP/1.1 when HTTP/2 was asked,
/// and one that allowed fewer streams than asked (named by the setting of the protocol
/// that said so).
fn stream_check(s: &RunSummary) -> Vec<String> {
    let Some(h) = &s.streams else { return Vec::new() };
    let mut out = Vec::new();
    if h.http1_fallbacks > 0 {
        out.push(format!(
            "HTTP/2 was asked, but the server chose HTTP/1.1 (ALPN) on {} of {} connection(s): their requests went one at a time each, and with --streams above 1 they failed (protocol)",
            h.http1_fallbacks, s.requests.connections
        ));
    }
    if let Some(cap) = h.stream_cap {
        let by = |p: Protocol| s.requests.protocols.contains_key(p.name());
        let setting = match (by(Protocol::Http2), by(Protocol::Http3)) {
            (true, false) => "SETTINGS_MAX_CONCURRENT_STREAMS",
            (false, true) => "QUIC's initial_max_streams_bidi",
            _ => "HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS or QUIC's initial_max_streams_bidi",
        };
        out.push(format!(
            "the server allows {cap} concurrent stream(s) per connection ({setting}), fewer than --streams asked: requests above the limit waited for a stream (in their latency, in no phase), and at most {} were in flight on one connection",
            h.streams_max
        ));
    }
    out
}

fn durations(readers: &[ResultsReader], intervals: &[IntervalRow], warnings: &mut Vec<String>) -> Durations {
    let footers: Vec<_> = readers.iter().filter_map(|r| r.footer()).collect();
    if footers.len() == readers.len() {
        // Merged runs ran side by side: the longest one is the run's duration.
        let attack = footers.iter().map(|f| f.attack_us).max().unwrap_or(0);
        let wait = footers.iter().map(|f| f.wait_us).max().unwrap_or(0);
        return Durations {
            total_s: (attack + wait) as f64 / 1e6,
            attack_s: attack as f64 / 1e6,
            wait_s: wait as f64 / 1e6,
        };
    }
    // A run that was killed has no footer, and one read only up to a corrupt record has none
    // read: the intervals read are all we know. Folded from +0: a sum of no `f64` is -0,
    // which would read "-0 s".
    let seconds = intervals.iter().map(|i| i.length_s).fold(0.0, |a, b| a + b);
    let unread = readers.iter().filter(|r| r.footer().is_none());
    let corrupt = unread.clone().filter(|r| r.corrupt()).count();
    let (killed, n) = (unread.count() - corrupt, readers.len());
    let covered = if intervals.is_empty() {
        "no interval could be read, so how long the run lasted is unknown".to_string()
    } else {
        format!("figures cover the {seconds:.0} s of the {} interval(s) read", intervals.len())
    };
    if killed > 0 {
        warnings.push(format!("{killed} of {n} results file(s) have no footer (the run was killed): {covered}"));
    }
    if corrupt > 0 {
        warnings.push(format!(
            "{corrupt} of {n} results file(s) stop at a corrupt record (see its warning), their footer unread: {covered}"
        ));
    }
    Durations { total_s: seconds, attack_s: seconds, wait_s: 0.0 }
}

/// barrage's CPU (user, system) over `run_s`, % of one core: the CPU time of the engine
/// threads of every run (the files' footers), so merged runs add up as their threads do.
/// `None` when no file has a footer.
fn generator_cpu(readers: &[ResultsReader], run_s: f64) -> Option<(f64, f64)> {
    let footers: Vec<&RunFooter> = readers.iter().filter_map(|r| r.footer()).collect();
    (!footers.is_empty()).then(|| {
        let percent = |us: u64| ratio(us as f64 / 1e4, run_s);
        (percent(footers.iter().map(|f| f.cpu_user_us).sum()), percent(footers.iter().map(|f| f.cpu_system_us).sum()))
    })
}

fn generator(readers: &[ResultsReader], total: &Recorder, run_s: f64, mode: Mode) -> Generator {
    let threads = readers.iter().map(|r| r.header().threads).sum();
    Generator {
        cpu_percent: generator_cpu(readers, run_s).map_or(0.0, |(user, system)| user + system),
        threads,
        lag_p99_us: if mode == Mode::Open { quantile(&total.lag, 0.99) } else { 0 },
        bound_reached: readers.iter().any(|r| r.footer().is_some_and(|f| f.bound_reached)),
        peak_rss_kib: readers.iter().filter_map(|r| r.footer()).map(|f| f.peak_rss_kib).max().unwrap_or(0),
        cpu_max_percent: 0.0,
    }
}

/// What a step's row needs of its intervals: their counts, latencies and length. Not a
/// whole recorder: the summary is built as the run ends, when memory peaks, and a
/// recorder's histograms are megabytes.
struct StepTotal {
    counts: Counts,
    never_sent: u64,
    corrected: Histogram<u64>,
    service: Histogram<u64>,
    secs: f64,
}

impl StepTotal {
    fn new() -> Self {
        StepTotal {
            counts: Counts::default(),
            never_sent: 0,
            corrected: new_histogram(),
            service: new_histogram(),
            secs: 0.0,
        }
    }

    fn add(&mut self, r: &Recorder, secs: f64) {
        self.counts.add(&r.counts);
        self.never_sent += r.never_sent();
        self.corrected.add(&r.corrected).expect("histograms share bounds");
        self.service.add(&r.service).expect("histograms share bounds");
        self.secs += secs;
    }
}

/// A step lasts from its start to the next step's start, or to the end of the attack:
/// the wait for the last responses is not part of any step's rate.
fn step_summaries(readers: &[ResultsReader], steps: BTreeMap<u32, StepTotal>, attack_s: f64) -> Vec<StepSummary> {
    let infos = &merged_steps(readers);
    let start_s = |i: usize| infos.get(i).map(|s| s.start_ms as f64 / 1e3);
    // Sent and not yet finished as each step begins: what the steps before carry into it.
    let mut in_flight = 0u64;
    steps
        .into_iter()
        .map(|(i, r)| {
            let carried_in = in_flight;
            in_flight = (in_flight + r.counts.sent).saturating_sub(r.counts.completed);
            let i = i as usize;
            let secs = match start_s(i) {
                Some(begin) => (start_s(i + 1).unwrap_or(attack_s).min(attack_s) - begin).max(0.0),
                None => r.secs,
            };
            let failed = r.counts.completed.saturating_sub(r.counts.ok);
            let c = &r.counts;
            StepSummary {
                label: infos.get(i).map(|s| s.label.clone()).unwrap_or_else(|| format!("step {i}")),
                duration_s: secs,
                requests: r.counts.completed,
                ok: r.counts.ok,
                failed,
                sent: c.sent,
                dropped: r.never_sent,
                carried_in,
                success_ratio: success_ratio(c.ok, c.completed, r.never_sent),
                rate_per_sec: per_sec(c.sent, c.sent, secs),
                throughput_per_sec: per_sec(c.ok, c.completed, secs),
                start_s: start_s(i).unwrap_or(0.0),
                latency: Latencies { corrected: LatencyStats::of(&r.corrected), service: LatencyStats::of(&r.service) },
            }
        })
        .collect()
}

/// Each value once, in order of first appearance; `most` is how many there are at most.
fn distinct<S: AsRef<str> + Eq + std::hash::Hash + Copy>(values: impl Iterator<Item = S>, most: usize) -> Vec<String> {
    // Hashed: the URLs of merged runs are up to a million each, and comparing each with all
    // before it took minutes. Sized at once: growing, the set hashed them all again each
    // time it doubled, reading each from wherever it lies in memory (a second a million).
    let mut seen = std::collections::HashSet::with_capacity(most);
    values.filter(|v| seen.insert(*v)).map(|v| v.as_ref().to_string()).collect()
}

/// The steps of runs merged side by side: the first file's, each labelled with what all
/// the runs offered together ([`sum_labels`]): four runs of "100 req/s" are "400 req/s".
fn merged_steps(readers: &[ResultsReader]) -> Vec<crate::file::StepInfo> {
    let mut steps = readers[0].header().steps.clone();
    if readers.iter().all(|r| r.header().launch.shard.is_some()) {
        // The shards of one run each say what the whole run offered.
        return steps;
    }
    for (i, step) in steps.iter_mut().enumerate() {
        let labels: Vec<&str> =
            readers.iter().filter_map(|r| r.header().steps.get(i)).map(|st| st.label.as_str()).collect();
        step.label = sum_labels(&labels);
    }
    steps
}

/// One label for steps of several runs at once. Labels of one shape ("100 req/s",
/// "100 → 2000 req/s", "50 workers") add up number by number; labels of different shapes
/// are listed, each once, joined by " + ".
fn sum_labels(labels: &[&str]) -> String {
    let numeric = |c: char| c.is_ascii_digit() || c == '.';
    // The label with each number replaced by '#'.
    let shape = |l: &str| {
        let mut out = String::new();
        for (k, c) in l.char_indices() {
            if !numeric(c) {
                out.push(c);
            } else if !l[..k].ends_with(numeric) {
                out.push('#');
            }
        }
        out
    };
    let numbers = |l: &str| -> Vec<f64> { l.split(|c: char| !numeric(c)).filter_map(|n| n.parse().ok()).collect() };
    let Some(first) = labels.first() else { return String::new() };
    if labels.len() == 1 || labels.iter().any(|l| shape(l) != shape(first)) {
        let mut kinds: Vec<&str> = Vec::new();
        for l in labels {
            if !kinds.contains(l) {
                kinds.push(l);
            }
        }
        return kinds.join(" + ");
    }
    let mut sums = numbers(first);
    for l in &labels[1..] {
        for (sum, n) in sums.iter_mut().zip(numbers(l)) {
            *sum += n;
        }
    }
    // Put the sums back between the label's words.
    let mut out = String::new();
    let mut sums = sums.into_iter();
    let mut in_number = false;
    for c in first.chars() {
        let digit = numeric(c);
        if digit && !in_number {
            let n = sums.next().unwrap_or(0.0);
            out.push_str(&if n.fract() == 0.0 { format!("{n:.0}") } else { format!("{n:.2}") });
        } else if !digit {
            out.push(c);
        }
        in_number = digit;
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
    s.mode == "open" && s.generator.lag_p99_us > LAG_LIMIT_US
}

fn self_check(s: &RunSummary) -> Vec<String> {
    let mut w = Vec::new();
    let g = &s.generator;
    if saturated(s) {
        w.push(format!(
            "barrage used {:.0}% CPU of its {} engine thread(s) (at most {}%): the generator was saturated, so these figures describe barrage, not the server",
            g.cpu_percent,
            g.threads,
            u64::from(g.threads) * 100
        ));
    }
    if lagging(s) {
        w.push(format!(
            "sends lagged behind the schedule (p99 lag {:.1} ms): barrage could not keep the rate; the corrected latency still counts the delay",
            g.lag_p99_us as f64 / 1e3
        ));
    }
    if s.requests.dropped > 0 {
        w.push(format!(
            "{} request(s) were due but never sent: every in-flight slot stayed busy until the attack ended (raise --max-in-flight or --connections); the offered rate counts only what was sent, and the success ratio counts them as failed ({:.2}% of the {} that finished succeeded)",
            s.requests.dropped,
            success_ratio(s.requests.ok, s.requests.total, 0) * 100.0,
            s.requests.total
        ));
    }
    if g.bound_reached && s.requests.late > 0 {
        w.push(format!(
            "{} request(s) started late because all in-flight slots were busy (raise --max-in-flight or --connections); their wait is in the corrected latency",
            s.requests.late
        ));
    }
    if s.insecure {
        w.push("TLS certificate verification was off (--insecure)".into());
    }
    if s.unredacted {
        w.push(
            "secrets were not redacted (--no-redact): this report may hold credentials from request headers and URLs"
                .into(),
        );
    }
    w
}

#[cfg(test)]
mod tests {
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
        assert_eq!(reply_check(&s).as_deref(), Some("1 server error reply (ERR: 1): see Server replies"));
        s.replies = vec![class("ERR", 12), class("MOVED", 3)];
        assert_eq!(reply_check(&s).as_deref(), Some("15 server error replies (ERR: 12, MOVED: 3): see Server replies"));
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
            assert!(
                warnings[0].starts_with(&format!("the server allows 5 concurrent stream(s) per connection {setting}"))
            );
        }
        assert!(with(&["HTTP/3"], None).is_empty());
    }
}
