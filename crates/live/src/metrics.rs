//! The OpenMetrics endpoint (`--metrics-addr`): the counters and latency histograms of a
//! run, or of all the runs of a study, served live over HTTP in the OpenMetrics text format,
//! for Prometheus to scrape (and Grafana to chart) beside the servers' own metrics.
//!
//! `GET /metrics` (or `HEAD`) answers with content type `application/openmetrics-text;
//! version=1.0.0; charset=utf-8`; any other path is a 404, any other method on it a 405.
//! The figures move once per closed interval (normally a second), so they lag the run by at
//! most one interval. Counters and histograms start at zero when the endpoint starts and
//! keep growing across the runs of a study, so `rate()` over a study is continuous; the
//! gauges describe the current run, and `barrage_current_run` names it.
//!
//! The endpoint is started by [`Live::start`](crate::Live::start) when
//! [`LiveOptions::metrics_addr`](crate::LiveOptions::metrics_addr) is set.
//!
//! # Metrics
//!
//! | Name | Type | Labels | What |
//! |------|------|--------|------|
//! | `barrage_requests_sent_total` | counter | | Requests started |
//! | `barrage_requests_completed_total` | counter | `outcome`: `ok` (2xx, 3xx), `rejected` (a 2xx or 3xx a flow step's check or capture failed), `http_error` (any other status), `error` (no complete response) | Requests finished |
//! | `barrage_requests_dropped_total` | counter | | Requests due and never sent (the success ratio counts them as failed: `ok / (completed + dropped)`) |
//! | `barrage_responses_total` | counter | `code`: the status code (`200`, `503`, ...; `other` outside 100..=599) | Complete responses by status code |
//! | `barrage_errors_total` | counter | `kind`: `refused`, `unreachable`, `connect_timeout`, `request_timeout`, `reset`, `tls`, `protocol`, `dns`, `other` | Requests without a complete response, by cause |
//! | `barrage_received_bytes_total` | counter | | HTTP bytes received (headers and body) |
//! | `barrage_sent_bytes_total` | counter | | HTTP bytes sent (headers and body) |
//! | `barrage_connections_opened_total` | counter | | New connections opened |
//! | `barrage_http_connections_total` | counter | `protocol`: `HTTP/1.1`, `HTTP/2`, `HTTP/3` | New HTTP connections by the version the server agreed to |
//! | `barrage_streams_open_max` | gauge | | The most streams open at once on one HTTP/2 or HTTP/3 connection in the last interval (0: none) |
//! | `barrage_stream_limit` | gauge | | The server's limit on concurrent streams in the current run, when it was below `--streams` (0: none was) |
//! | `barrage_flow_control_stalls_total` | counter | `direction`: `send`, `receive` | HTTP/2 and HTTP/3 flow-control stalls (the run's summary says what each counts) |
//! | `barrage_stream_retries_total` | counter | | Requests sent again on a new connection because the server did not process their stream (refused, above a GOAWAY) |
//! | `barrage_cache_responses_total` | counter | `status`: `hit`, `miss`, `pass`, `expired`, `stale`, `unknown` | Finished requests by what a cache in front did |
//! | `barrage_backend_responses_total` | counter | `backend`: as the backend header named it (at most 64, then `(other)`) | Finished requests by backend |
//! | `barrage_request_latency_seconds` | histogram | `le`: 0.0005 … 10, `+Inf` | Latency from the intended start (corrected for coordinated omission) |
//! | `barrage_service_time_seconds` | histogram | `le`: 0.0005 … 10, `+Inf` | Latency from the actual start (service time) |
//! | `barrage_ok_responses_per_second` | gauge | | Throughput: ok responses per second over the last interval (a run's last interval, when shorter than half a second, together with the one before) |
//! | `barrage_interval_index` | gauge | | Index of the current run's last closed interval (0, 1, 2, ...) |
//! | `barrage_elapsed_seconds` | gauge | | From the start of the current run's first interval to the end of its last |
//! | `barrage_runs_started_total` | counter | | Runs begun (a study runs several, one after another) |
//! | `barrage_current_run` | gauge | `run`: the run's label, as [`RunInfo::label`](crate::RunInfo::label) gave it | 1 for the current run of a study; no series for an unlabelled run |
//! | `barrage_process_cpu_percent` | gauge | | barrage's own CPU (user and system: its engine threads') over the last interval, % of one core |
//! | `barrage_process_resident_memory_bytes` | gauge | | barrage's own resident memory |
//! | `barrage_monitor_cpu_percent` | gauge | `process`: as `--monitor` or the testbed named it | A watched process and its descendants: CPU over the last interval, % of one core |
//! | `barrage_monitor_resident_memory_bytes` | gauge | `process` | A watched process and its descendants: resident memory |
//!
//! The histogram buckets are [`LATENCY_BUCKETS`]. The process and monitor gauges appear
//! once the run samples its processes.

use crate::exemplars::BucketExemplar;
use crate::LiveError;
use barrage_metrics::{CacheStatus, ErrorKind, IntervalRecord, Protocol};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// Upper bounds of the latency histograms' buckets, in seconds (`+Inf` comes on top).
pub const LATENCY_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Content type of the scrape response.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Content type of the error responses.
const PLAIN: &str = "text/plain; charset=utf-8";
/// Time a client gets to send its request and take the response.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// The live metrics endpoint of a study (or of a lone run).
pub(crate) struct MetricsEndpoint {
    metrics: Metrics,
    shared: Arc<EndpointState>,
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsEndpoint {
    /// Binds `addr` (port 0 picks a free one) and serves `GET /metrics` (OpenMetrics text,
    /// content type `application/openmetrics-text; version=1.0.0; charset=utf-8`; any other
    /// path 404) from a thread of its own with a current-thread tokio runtime (the caller may
    /// or may not be inside a runtime).
    pub(crate) fn start(addr: SocketAddr) -> Result<MetricsEndpoint, LiveError> {
        let listener = std::net::TcpListener::bind(addr).map_err(|e| LiveError::Bind(addr, e))?;
        let addr = listener.local_addr().map_err(LiveError::Endpoint)?;
        listener.set_nonblocking(true).map_err(LiveError::Endpoint)?;
        // Built here rather than on the thread, so that failures surface to the caller. Building
        // (and entering) a runtime is allowed inside another one; only blocking on it is not,
        // and that happens on the endpoint's own thread.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(LiveError::Endpoint)?;
        let listener = {
            let _in_runtime = runtime.enter();
            TcpListener::from_std(listener).map_err(LiveError::Endpoint)?
        };
        let mut registry = Registry::with_prefix("barrage");
        let metrics = Metrics::register(&mut registry);
        let latency = metrics.latency.clone();
        let shared = Arc::new(EndpointState { registry, snapshot: RwLock::new(Span::default()), latency });
        let (stop, stopped) = oneshot::channel();
        let served = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("barrage-metrics".into())
            .spawn(move || runtime.block_on(serve(listener, served, stopped)))
            .map_err(LiveError::Endpoint)?;
        Ok(MetricsEndpoint { metrics, shared, addr, stop: Some(stop), thread: Some(thread) })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A run starts: counted, named by its label, its gauges from zero.
    pub(crate) fn begin(&self, label: Option<&str>) {
        let mut span = self.shared.snapshot.write().unwrap_or_else(PoisonError::into_inner);
        self.metrics.begin(label, &mut span);
    }

    /// Adds a closed interval: counters grow, histograms take the interval's latencies; the
    /// gauges are of `rated`, the interval per-second figures are computed over.
    pub(crate) fn update(&self, i: &IntervalRecord, rated: &IntervalRecord) {
        // Held for writing so that a scrape (which holds it for reading) never sees half an
        // interval: `sent` grown but not `completed`, a histogram's buckets but not its count.
        let mut span = self.shared.snapshot.write().unwrap_or_else(PoisonError::into_inner);
        self.metrics.add(i, rated, &mut span);
    }

    /// Stops serving (the thread ends; the port is released).
    #[cfg(test)]
    fn finish(self) {
        // Drop does the work, so an endpoint dropped on an error path stops just the same.
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // The listener and every connection close when the runtime drops at the thread's end.
            let _ = thread.join();
        }
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the endpoint's thread shares with the run.
struct EndpointState {
    registry: Registry,
    /// Taken for writing by an update and for reading by a scrape; holds what the gauges are
    /// computed from.
    snapshot: RwLock<Span>,
    /// The corrected latency's buckets, for their exemplars ([`crate::exemplars`]).
    latency: HdrBuckets,
}

/// The wall-clock span of the current run's intervals, for `barrage_elapsed_seconds`.
#[derive(Default)]
struct Span {
    first_start_ms: Option<u64>,
}

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabel {
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProtocolLabel {
    protocol: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabel {
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheLabel {
    status: &'static str,
}

/// The value is escaped already (see [`escape`]): backend and process names come from the
/// outside, and prometheus-client writes label values as they are.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendLabel {
    backend: String,
}

/// Escaped like [`BackendLabel`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProcessLabel {
    process: String,
}

/// Escaped like [`BackendLabel`]: a study's labels are free text.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabel {
    run: String,
}

/// Handles on the registered metrics (each shares its value with the registry's copy).
struct Metrics {
    sent: Counter,
    dropped: Counter,
    completed: Family<OutcomeLabel, Counter>,
    responses: Family<CodeLabel, Counter>,
    errors: Family<KindLabel, Counter>,
    bytes_in: Counter,
    bytes_out: Counter,
    connections: Counter,
    protocols: Family<ProtocolLabel, Counter>,
    streams_max: Gauge,
    stream_limit: Gauge,
    stalls: Family<DirectionLabel, Counter>,
    stream_retries: Counter,
    cache: Family<CacheLabel, Counter>,
    backends: Family<BackendLabel, Counter>,
    latency: HdrBuckets,
    service: HdrBuckets,
    ok_rate: FloatGauge,
    interval: Gauge,
    elapsed: FloatGauge,
    cpu: FloatGauge,
    rss: Gauge,
    monitor_cpu: Family<ProcessLabel, FloatGauge>,
    monitor_rss: Family<ProcessLabel, Gauge>,
    runs: Counter,
    current_run: Family<RunLabel, Gauge>,
}

impl Metrics {
    /// The metrics, registered in `r` in the order they are exposed.
    fn register(r: &mut Registry) -> Metrics {
        let m = Metrics {
            sent: Counter::default(),
            dropped: Counter::default(),
            completed: Family::default(),
            responses: Family::default(),
            errors: Family::default(),
            bytes_in: Counter::default(),
            bytes_out: Counter::default(),
            connections: Counter::default(),
            protocols: Family::default(),
            streams_max: Gauge::default(),
            stream_limit: Gauge::default(),
            stalls: Family::default(),
            stream_retries: Counter::default(),
            cache: Family::default(),
            backends: Family::default(),
            latency: HdrBuckets::new(&LATENCY_BUCKETS),
            service: HdrBuckets::new(&LATENCY_BUCKETS),
            ok_rate: FloatGauge::default(),
            interval: Gauge::default(),
            elapsed: FloatGauge::default(),
            cpu: FloatGauge::default(),
            rss: Gauge::default(),
            monitor_cpu: Family::default(),
            monitor_rss: Family::default(),
            runs: Counter::default(),
            current_run: Family::default(),
        };
        m.zero_fixed_labels();
        Self::register_traffic(&m, r);
        Self::register_timing(&m, r);
        m
    }

    /// Fixed label sets exist from the start at zero, so a dashboard's `rate()` sees the
    /// first error of a kind as an increase rather than a series appearing.
    fn zero_fixed_labels(&self) {
        for outcome in ["ok", "rejected", "http_error", "error"] {
            let _ = self.completed.get_or_create(&OutcomeLabel { outcome });
        }
        for kind in ErrorKind::ALL {
            let _ = self.errors.get_or_create(&KindLabel { kind: kind.name() });
        }
        for status in CacheStatus::ALL {
            let _ = self.cache.get_or_create(&CacheLabel { status: status.name() });
        }
        for protocol in Protocol::ALL {
            let _ = self.protocols.get_or_create(&ProtocolLabel { protocol: protocol.name() });
        }
        for direction in ["send", "receive"] {
            let _ = self.stalls.get_or_create(&DirectionLabel { direction });
        }
    }

    /// What was sent and received: requests, errors, bytes, connections, streams, backends.
    fn register_traffic(m: &Metrics, r: &mut Registry) {
        // Names without their unit: prometheus-client appends the unit, then `_total` to counters.
        r.register("requests_sent", "Requests started", m.sent.clone());
        r.register(
            "requests_dropped",
            "Requests due and never sent (success counts them as failed)",
            m.dropped.clone(),
        );
        r.register(
            "requests_completed",
            "Requests finished: ok (2xx, 3xx), rejected (a 2xx or 3xx a flow step's check or capture failed), http_error (other status), error (no complete response)",
            m.completed.clone(),
        );
        r.register("responses", "Complete responses by status code", m.responses.clone());
        r.register("errors", "Requests without a complete response, by cause", m.errors.clone());
        r.register_with_unit("received", "HTTP bytes received", Unit::Bytes, m.bytes_in.clone());
        r.register_with_unit("sent", "HTTP bytes sent", Unit::Bytes, m.bytes_out.clone());
        r.register("connections_opened", "New connections opened", m.connections.clone());
        r.register("http_connections", "New HTTP connections by the version the server agreed to", m.protocols.clone());
        r.register(
            "streams_open_max",
            "The most streams open at once on one HTTP/2 or HTTP/3 connection in the last interval",
            m.streams_max.clone(),
        );
        r.register(
            "stream_limit",
            "The server's limit on concurrent streams in the current run, when below --streams (0: none was)",
            m.stream_limit.clone(),
        );
        r.register("flow_control_stalls", "HTTP/2 and HTTP/3 flow-control stalls", m.stalls.clone());
        r.register(
            "stream_retries",
            "Requests sent again on a new connection because the server did not process their stream",
            m.stream_retries.clone(),
        );
        r.register("cache_responses", "Finished requests by cache status", m.cache.clone());
        r.register("backend_responses", "Finished requests by backend", m.backends.clone());
    }

    /// Latencies, rates, the clock, the processes' CPU and memory, and the runs.
    fn register_timing(m: &Metrics, r: &mut Registry) {
        r.register_with_unit(
            "request_latency",
            "Latency from the intended start (corrected for coordinated omission)",
            Unit::Seconds,
            m.latency.clone(),
        );
        r.register_with_unit("service_time", "Latency from the actual start", Unit::Seconds, m.service.clone());
        r.register("ok_responses_per_second", "Ok responses per second over the last interval", m.ok_rate.clone());
        r.register("interval_index", "Index of the last closed interval", m.interval.clone());
        r.register_with_unit(
            "elapsed",
            "Time from the start of the first interval to the end of the last",
            Unit::Seconds,
            m.elapsed.clone(),
        );
        let percent = || Unit::Other("percent".into());
        r.register_with_unit(
            "process_cpu",
            "barrage's CPU over the last interval, % of one core",
            percent(),
            m.cpu.clone(),
        );
        r.register_with_unit("process_resident_memory", "barrage's resident memory", Unit::Bytes, m.rss.clone());
        r.register_with_unit(
            "monitor_cpu",
            "A watched process and its descendants: CPU over the last interval, % of one core",
            percent(),
            m.monitor_cpu.clone(),
        );
        r.register_with_unit(
            "monitor_resident_memory",
            "A watched process and its descendants: resident memory",
            Unit::Bytes,
            m.monitor_rss.clone(),
        );
        r.register("runs_started", "Runs begun (a study runs several, one after another)", m.runs.clone());
        r.register("current_run", "1 for the current run, labelled as the study names it", m.current_run.clone());
    }

    fn begin(&self, label: Option<&str>, span: &mut Span) {
        self.runs.inc();
        // A gauge per label, not an info metric: OpenMetrics info is meant not to change.
        // Only the current run has a series, so a query for the run needs no `max_over_time`.
        self.current_run.clear();
        if let Some(label) = label {
            self.current_run.get_or_create(&RunLabel { run: escape(label) }).set(1);
        }
        *span = Span::default();
        self.interval.set(0);
        self.elapsed.set(0.0);
        self.streams_max.set(0);
        self.stream_limit.set(0);
    }

    fn add(&self, i: &IntervalRecord, rated: &IntervalRecord, span: &mut Span) {
        let r = &i.recorder;
        let c = &r.counts;
        self.sent.inc_by(c.sent);
        self.dropped.inc_by(r.never_sent());
        let statuses = r.status_counts();
        let answered: u64 = statuses.values().sum();
        let outcomes = [
            ("ok", c.ok),
            ("rejected", c.rejected),
            ("http_error", answered.saturating_sub(c.ok + c.rejected)),
            ("error", r.error_count()),
        ];
        for (outcome, n) in outcomes {
            self.completed.get_or_create(&OutcomeLabel { outcome }).inc_by(n);
        }
        for (code, n) in statuses {
            let code = if code == 0 { "other".to_string() } else { code.to_string() };
            self.responses.get_or_create(&CodeLabel { code }).inc_by(n);
        }
        for kind in ErrorKind::ALL {
            self.errors.get_or_create(&KindLabel { kind: kind.name() }).inc_by(c.errors[kind as usize]);
        }
        self.bytes_in.inc_by(c.bytes_in);
        self.bytes_out.inc_by(c.bytes_out);
        self.connections.inc_by(c.connections);
        for (protocol, n) in Protocol::ALL.into_iter().zip(c.protocols) {
            self.protocols.get_or_create(&ProtocolLabel { protocol: protocol.name() }).inc_by(n);
        }
        self.stalls.get_or_create(&DirectionLabel { direction: "send" }).inc_by(c.send_stalls);
        self.stalls.get_or_create(&DirectionLabel { direction: "receive" }).inc_by(c.recv_stalls);
        self.stream_retries.inc_by(c.stream_retries);
        // The run's lowest limit: an interval without one leaves it as it was.
        let cap = i64::try_from(c.stream_cap).unwrap_or(i64::MAX);
        let limit = self.stream_limit.get();
        if cap > 0 && (limit == 0 || cap < limit) {
            self.stream_limit.set(cap);
        }
        for status in CacheStatus::ALL {
            self.cache.get_or_create(&CacheLabel { status: status.name() }).inc_by(c.cache[status as usize]);
        }
        for b in r.backends.iter() {
            self.backends.get_or_create(&BackendLabel { backend: escape(&b.name) }).inc_by(b.requests);
        }
        // (The histograms' type is not named: hdrhistogram is no direct dependency of the binary.)
        for (buckets, h) in [(&self.latency, &r.corrected), (&self.service, &r.service)] {
            buckets.add(h.iter_recorded().map(|v| {
                let value = v.value_iterated_to();
                (h.lowest_equivalent(value), h.median_equivalent(value), v.count_at_value())
            }));
        }

        let secs = f64::from(rated.length_ms) / 1000.0;
        self.streams_max.set(i64::try_from(rated.recorder.counts.streams_max).unwrap_or(i64::MAX));
        let ok = rated.recorder.counts.ok;
        self.ok_rate.set(if secs > 0.0 { ok as f64 / secs } else { 0.0 });
        self.interval.set(i64::from(i.index));
        let first = *span.first_start_ms.get_or_insert(i.start_unix_ms);
        self.latency.add_exemplars(&r.exemplars, first);
        let end = i.start_unix_ms + u64::from(i.length_ms);
        self.elapsed.set(end.saturating_sub(first) as f64 / 1000.0);
        if let Some(w) = &rated.watch {
            self.cpu.set(widen(w.generator.cpu_percent()));
            self.rss.set(kib_to_bytes(w.generator.rss_kib));
            for p in &w.processes {
                let label = ProcessLabel { process: escape(&p.name) };
                self.monitor_cpu.get_or_create(&label).set(widen(p.cpu_percent()));
                self.monitor_rss.get_or_create(&label).set(kib_to_bytes(p.rss_kib));
            }
        }
    }
}

/// The f64 an f32 reads as: `f64::from(8.361222_f32)` would expose 8.361222267150879.
fn widen(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

fn kib_to_bytes(kib: u64) -> i64 {
    i64::try_from(kib.saturating_mul(1024)).unwrap_or(i64::MAX)
}

/// Escapes a label value as the exposition format wants (`\\`, `\"`, `\n`).
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for ch in value.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            _ => out.push(ch),
        }
    }
    out
}

/// A Prometheus histogram filled from HdrHistograms, with fixed buckets.
///
/// Why not prometheus-client's `Histogram`: its `observe` takes one value at a time (a lock
/// and a bucket search each), and an interval can hold a million requests, so replaying them
/// would cost a million observations per second; observing each distinct value once would be
/// cheap but wrong. This keeps the cumulative state itself (a count per bucket, the sum, the
/// count) and encodes through prometheus-client's [`EncodeMetric`], so the output is the same
/// as its `Histogram`'s. Adding an interval walks the HdrHistogram's recorded buckets once
/// (at most a few thousand, whatever the number of requests) and adds each one's count to the
/// bucket it falls in: exact and cheap.
///
/// Exact, that is, to HdrHistogram's own resolution (3 significant digits): an HDR bucket
/// (a range of equivalent values) is counted at or below a bound when it starts at or below
/// it, the way `Histogram::count_between(0, bound)` counts. Below 2.048 ms every microsecond
/// has a bucket of its own, so the 0.5 and 1 ms bounds are exact to the microsecond; above,
/// only a value less than one HDR bucket (at most 0.1%) above a bound can be counted under
/// it, so a latency of exactly 10 ms counts under 0.01 and one of 10.1 ms does not. The sum
/// takes each HDR bucket's middle value, as HdrHistogram's own mean does.
#[derive(Clone, Debug)]
struct HdrBuckets(Arc<Mutex<BucketState>>);

#[derive(Debug)]
struct BucketState {
    /// Upper bounds in µs (the unit of barrage's HdrHistograms).
    bounds_us: Vec<u64>,
    /// Upper bounds in seconds, as exposed, then `f64::MAX` for `+Inf`.
    bounds_s: Vec<f64>,
    /// Values per bucket, not cumulative (the encoder sums them): one per bound, then `+Inf`.
    counts: Vec<u64>,
    /// Sum of the values, µs.
    sum_us: u128,
    count: u64,
    /// Each bucket's latest exemplar (`--trace-context`).
    exemplars: Vec<Option<BucketExemplar>>,
}

impl HdrBuckets {
    fn new(bounds_s: &[f64]) -> Self {
        let bounds_us = bounds_s.iter().map(|s| (s * 1e6).round() as u64).collect();
        let bounds_s: Vec<f64> = bounds_s.iter().copied().chain([f64::MAX]).collect();
        let (counts, exemplars) = (vec![0; bounds_s.len()], vec![None; bounds_s.len()]);
        HdrBuckets(Arc::new(Mutex::new(BucketState { bounds_us, bounds_s, counts, sum_us: 0, count: 0, exemplars })))
    }

    /// Adds the recorded buckets of an HdrHistogram (µs): for each, its lowest and its median
    /// equivalent value and its count.
    fn add(&self, recorded: impl IntoIterator<Item = (u64, u64, u64)>) {
        let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (lowest, median, n) in recorded {
            let bucket = s.bounds_us.partition_point(|&bound| bound < lowest);
            s.counts[bucket] += n;
            s.sum_us += u128::from(median) * u128::from(n);
            s.count += n;
        }
    }

    /// Puts each exemplar in the bucket its latency falls in, replacing what it held.
    fn add_exemplars(&self, exemplars: &[barrage_metrics::trace::Exemplar], run_start_unix_ms: u64) {
        let s = &mut *self.0.lock().unwrap_or_else(PoisonError::into_inner);
        crate::exemplars::place(&mut s.exemplars, &s.bounds_us, exemplars, run_start_unix_ms);
    }

    fn exemplars(&self) -> Vec<Option<BucketExemplar>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).exemplars.clone()
    }
}

impl EncodeMetric for HdrBuckets {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let buckets: Vec<(f64, u64)> = s.bounds_s.iter().copied().zip(s.counts.iter().copied()).collect();
        encoder.encode_histogram::<NoLabelSet>(s.sum_us as f64 / 1e6, s.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// Accepts connections until told to stop.
async fn serve(listener: TcpListener, shared: Arc<EndpointState>, mut stop: oneshot::Receiver<()>) {
    let mut http = http1::Builder::new();
    // One request per connection, as a scraper sends every few seconds at most: no idle
    // connections to keep, and a client reading to the end of the stream gets its end.
    http.keep_alive(false);
    loop {
        tokio::select! {
            // A message or the sender dropped: either way, stop.
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(answer(http.clone(), stream, Arc::clone(&shared)));
                }
                // Out of file descriptors and the like: wait instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            },
        }
    }
}

/// Serves one connection, bounded in time so a client that stalls holds nothing for long.
async fn answer(http: http1::Builder, stream: TcpStream, shared: Arc<EndpointState>) {
    let service = service_fn(move |req| {
        let response = respond(&req, &shared);
        async move { Ok::<_, Infallible>(response) }
    });
    let _ = tokio::time::timeout(EXCHANGE_TIMEOUT, http.serve_connection(TokioIo::new(stream), service)).await;
}

/// The response to a request; hyper leaves the body out for HEAD and keeps its length.
fn respond<B>(req: &Request<B>, shared: &EndpointState) -> Response<Full<Bytes>> {
    if req.uri().path() != "/metrics" {
        return plain(StatusCode::NOT_FOUND, "not found: the metrics are at /metrics\n");
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "use GET\n");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let mut body = String::with_capacity(8 * 1024);
    {
        let _consistent = shared.snapshot.read().unwrap_or_else(PoisonError::into_inner);
        if prometheus_client::encoding::text::encode(&mut body, &shared.registry).is_err() {
            return plain(StatusCode::INTERNAL_SERVER_ERROR, "cannot encode the metrics\n");
        }
        crate::exemplars::annotate(&mut body, "barrage_request_latency_seconds_bucket", &shared.latency.exemplars());
    }
    response(StatusCode::OK, OPENMETRICS, body)
}

fn response(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    response(status, PLAIN, text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::{testing, Outcome, ProcSample, Recorder, Sample, WatchSample};
    use prometheus_parse::{Scrape, Value};
    use std::io::{Read, Write};

    /// A finished request of `latency_ms` (corrected), started `lag_ms` late.
    fn sample(latency_ms: u64, lag_ms: u64, outcome: Outcome, cache: CacheStatus) -> Sample {
        let s = testing::sample(Duration::from_millis(latency_ms), outcome);
        Sample { started: Duration::from_millis(lag_ms), cache, ..s }
    }

    fn record(r: &mut Recorder, s: Sample, backend: Option<&str>) {
        r.record(&s);
        if let Some(b) = backend {
            r.backends.record(b.as_bytes(), &s);
        }
    }

    fn proc(name: &str, cpu: f32, rss_kib: u64) -> ProcSample {
        ProcSample {
            name: name.into(),
            processes: 1,
            cpu_user_percent: cpu,
            cpu_system_percent: 2.5,
            rss_kib,
            ..Default::default()
        }
    }

    /// Interval 0: sent 7, completed 6: 200 ×4 (1 ms ×3, one a cache hit; 3 ms started
    /// 1 ms late), a 503 in 20 ms, a reset after 12 s (beyond the last bucket); 2 HTTP/2
    /// connections, 10 streams at once on one, the server allowing 8, 1 send stall, 2
    /// receive stalls, 1 stream sent again.
    fn first() -> IntervalRecord {
        let mut r = Recorder::new();
        (0..7).for_each(|_| r.record_sent());
        (0..2).for_each(|_| r.record_connection());
        let c = &mut r.counts;
        c.protocols[Protocol::Http2 as usize] = 2;
        (c.streams_max, c.stream_cap, c.send_stalls, c.recv_stalls, c.stream_retries) = (10, 8, 1, 2, 1);
        record(&mut r, sample(1, 0, Outcome::Status(200), CacheStatus::Hit), Some("b1"));
        record(&mut r, sample(1, 0, Outcome::Status(200), CacheStatus::Miss), Some("b1"));
        record(&mut r, sample(1, 0, Outcome::Status(200), CacheStatus::Miss), Some("b2"));
        record(&mut r, sample(3, 1, Outcome::Status(200), CacheStatus::Unknown), Some("b1"));
        record(&mut r, sample(20, 0, Outcome::Status(503), CacheStatus::Unknown), Some("b2"));
        record(&mut r, sample(12_000, 0, Outcome::Error(ErrorKind::Reset), CacheStatus::Unknown), None);
        let watch = WatchSample {
            generator: proc("barrage", 10.0, 2048),
            processes: vec![proc("nginx", 40.0, 1000)],
            ..Default::default()
        };
        IntervalRecord { watch: Some(watch), ..testing::interval(0, 1_700_000_000_000, r) }
    }

    /// Interval 1: sent 3, completed 3: 200 ×2 in 1 ms (backend b1), a 503 in 1 ms; 500 ms
    /// long; 6 streams at once.
    fn second() -> IntervalRecord {
        let mut r = Recorder::new();
        (0..3).for_each(|_| r.record_sent());
        r.counts.streams_max = 6;
        record(&mut r, sample(1, 0, Outcome::Status(200), CacheStatus::Unknown), Some("b1"));
        record(&mut r, sample(1, 0, Outcome::Status(200), CacheStatus::Unknown), Some("b1"));
        record(&mut r, sample(1, 0, Outcome::Status(503), CacheStatus::Unknown), None);
        IntervalRecord { length_ms: 500, ..testing::interval(1, 1_700_000_001_000, r) }
    }

    /// A plain HTTP/1.1 GET: status, head, body.
    fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: */*\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, head.to_string(), body.to_string())
    }

    fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
        head.lines()
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim()))
    }

    /// Scrapes and parses `/metrics`, checking the response on the way.
    fn scrape(addr: SocketAddr) -> (Scrape, String) {
        let (status, head, body) = get(addr, "/metrics");
        assert_eq!(status, 200, "{head}");
        assert_eq!(header(&head, "content-type"), Some(OPENMETRICS));
        assert_eq!(header(&head, "content-length"), Some(body.len().to_string().as_str()));
        assert!(body.ends_with("# EOF\n"), "OpenMetrics ends with # EOF: {body}");
        // prometheus-parse reads the Prometheus text format. The OpenMetrics extras need no
        // stripping: `# EOF` and `# UNIT` lines are comments it ignores. But a counter's
        // `# TYPE` names the family (`barrage_requests_sent`) while its sample is
        // `barrage_requests_sent_total`, so counters come back untyped: `value` below takes
        // any scalar, and `counter_types` checks the counters' types on the raw text.
        let parsed = Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
        (parsed, body)
    }

    /// The scalar value of the sample `name` with exactly `labels`.
    fn value(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found: Vec<_> = s
            .samples
            .iter()
            .filter(|x| x.metric == name && x.labels.len() == labels.len())
            .filter(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
            .collect();
        assert_eq!(found.len(), 1, "{name}{labels:?}: {found:?}");
        match found[0].value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            ref other => panic!("{name}: not a scalar: {other:?}"),
        }
    }

    /// The cumulative buckets of histogram `name`, as (le, count).
    fn buckets(s: &Scrape, name: &str) -> Vec<(f64, f64)> {
        let h = s.samples.iter().find(|x| x.metric == name).unwrap_or_else(|| panic!("no {name}"));
        match &h.value {
            Value::Histogram(b) => b.iter().map(|b| (b.less_than, b.count)).collect(),
            other => panic!("{name}: not a histogram: {other:?}"),
        }
    }

    fn counter_types(body: &str) {
        for family in
            ["requests_sent", "requests_completed", "responses", "errors", "received_bytes", "backend_responses"]
        {
            let line = format!("# TYPE barrage_{family} counter");
            assert!(body.lines().any(|l| l == line), "{line} missing");
        }
    }

    /// Cumulative counts of the 14 bounds and +Inf.
    fn expect_buckets(s: &Scrape, name: &str, want: [f64; 15]) {
        let got = buckets(s, name);
        let les: Vec<f64> = got.iter().map(|b| b.0).collect();
        let mut want_les = LATENCY_BUCKETS.to_vec();
        want_les.push(f64::INFINITY);
        assert_eq!(les, want_les, "{name}");
        assert!(got.windows(2).all(|w| w[0].1 <= w[1].1), "{name}: not cumulative: {got:?}");
        assert_eq!(got.iter().map(|b| b.1).collect::<Vec<_>>(), want, "{name}");
    }

    /// A 2xx a flow's check rejected is its own outcome, not an HTTP error; requests due and
    /// never sent are counted, so `ok / (completed + dropped)` is the run's success.
    #[test]
    fn rejected_and_dropped_requests_have_their_own_series() {
        let endpoint = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut r = Recorder::new();
        (0..3).for_each(|_| r.record_sent());
        r.record_dropped(4);
        record(&mut r, sample(1, 0, Outcome::Status(200), CacheStatus::Unknown), None);
        record(&mut r, Sample { rejected: true, ..sample(1, 0, Outcome::Status(200), CacheStatus::Unknown) }, None);
        record(&mut r, sample(1, 0, Outcome::Status(503), CacheStatus::Unknown), None);
        let i = testing::interval(0, 0, r);
        endpoint.update(&i, &i);
        let (s, _) = scrape(endpoint.local_addr());
        for (outcome, n) in [("ok", 1.0), ("rejected", 1.0), ("http_error", 1.0), ("error", 0.0)] {
            assert_eq!(value(&s, "barrage_requests_completed_total", &[("outcome", outcome)]), n, "{outcome}");
        }
        assert_eq!(value(&s, "barrage_requests_dropped_total", &[]), 4.0);
    }

    #[test]
    fn serves_interval_counters_and_histograms() {
        let endpoint = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = endpoint.local_addr();
        assert_ne!(addr.port(), 0);

        // Before any interval: everything at zero, fixed label sets present.
        let (s, _) = scrape(addr);
        assert_eq!(value(&s, "barrage_requests_sent_total", &[]), 0.0);
        assert_eq!(value(&s, "barrage_errors_total", &[("kind", "reset")]), 0.0);
        assert_eq!(value(&s, "barrage_request_latency_seconds_count", &[]), 0.0);

        let i = first();
        endpoint.update(&i, &i);
        let (s, body) = scrape(addr);
        counter_types(&body);
        assert!(body.contains("# TYPE barrage_request_latency_seconds histogram\n"), "{body}");
        assert!(body.contains("# UNIT barrage_request_latency_seconds seconds\n"), "{body}");
        assert_eq!(value(&s, "barrage_requests_sent_total", &[]), 7.0);
        assert_eq!(value(&s, "barrage_requests_completed_total", &[("outcome", "ok")]), 4.0);
        assert_eq!(value(&s, "barrage_requests_completed_total", &[("outcome", "http_error")]), 1.0);
        assert_eq!(value(&s, "barrage_requests_completed_total", &[("outcome", "error")]), 1.0);
        assert_eq!(value(&s, "barrage_responses_total", &[("code", "200")]), 4.0);
        assert_eq!(value(&s, "barrage_responses_total", &[("code", "503")]), 1.0);
        assert_eq!(value(&s, "barrage_errors_total", &[("kind", "reset")]), 1.0);
        assert_eq!(value(&s, "barrage_errors_total", &[("kind", "refused")]), 0.0);
        assert_eq!(value(&s, "barrage_received_bytes_total", &[]), 600.0);
        assert_eq!(value(&s, "barrage_sent_bytes_total", &[]), 60.0);
        assert_eq!(value(&s, "barrage_connections_opened_total", &[]), 2.0);
        assert_eq!(value(&s, "barrage_http_connections_total", &[("protocol", "HTTP/2")]), 2.0);
        assert_eq!(value(&s, "barrage_http_connections_total", &[("protocol", "HTTP/1.1")]), 0.0);
        assert_eq!(value(&s, "barrage_streams_open_max", &[]), 10.0);
        assert_eq!(value(&s, "barrage_stream_limit", &[]), 8.0);
        assert_eq!(value(&s, "barrage_flow_control_stalls_total", &[("direction", "send")]), 1.0);
        assert_eq!(value(&s, "barrage_flow_control_stalls_total", &[("direction", "receive")]), 2.0);
        assert_eq!(value(&s, "barrage_stream_retries_total", &[]), 1.0);
        assert_eq!(value(&s, "barrage_cache_responses_total", &[("status", "hit")]), 1.0);
        assert_eq!(value(&s, "barrage_cache_responses_total", &[("status", "miss")]), 2.0);
        assert_eq!(value(&s, "barrage_cache_responses_total", &[("status", "unknown")]), 3.0);
        assert_eq!(value(&s, "barrage_backend_responses_total", &[("backend", "b1")]), 3.0);
        assert_eq!(value(&s, "barrage_backend_responses_total", &[("backend", "b2")]), 2.0);

        // Corrected latency: 1 ms ×3, 3 ms, 20 ms, 12 s.
        assert_eq!(value(&s, "barrage_request_latency_seconds_count", &[]), 6.0);
        #[rustfmt::skip]
        expect_buckets(&s, "barrage_request_latency_seconds",
            [0.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 6.0]);
        let sum = value(&s, "barrage_request_latency_seconds_sum", &[]);
        let want = 0.003 + 0.003 + 0.020 + 12.0;
        assert!((sum - want).abs() / want < 1e-3, "sum {sum}, want about {want}");
        // Service time: the 3 ms one started 1 ms late, so 2 ms (≤ 2.5 ms).
        assert_eq!(value(&s, "barrage_service_time_seconds_count", &[]), 6.0);
        #[rustfmt::skip]
        expect_buckets(&s, "barrage_service_time_seconds",
            [0.0, 3.0, 4.0, 4.0, 4.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 6.0]);

        assert_eq!(value(&s, "barrage_ok_responses_per_second", &[]), 4.0);
        assert_eq!(value(&s, "barrage_interval_index", &[]), 0.0);
        assert_eq!(value(&s, "barrage_elapsed_seconds", &[]), 1.0);
        assert_eq!(value(&s, "barrage_process_cpu_percent", &[]), 12.5);
        assert_eq!(value(&s, "barrage_process_resident_memory_bytes", &[]), 2048.0 * 1024.0);
        assert_eq!(value(&s, "barrage_monitor_cpu_percent", &[("process", "nginx")]), 42.5);
        assert_eq!(widen(8.361222), 8.361222);
        assert_eq!(value(&s, "barrage_monitor_resident_memory_bytes", &[("process", "nginx")]), 1000.0 * 1024.0);

        // A second interval: the counters grow, the histograms take its latencies.
        let i = second();
        endpoint.update(&i, &i);
        let (s, _) = scrape(addr);
        assert_eq!(value(&s, "barrage_requests_sent_total", &[]), 10.0);
        assert_eq!(value(&s, "barrage_requests_completed_total", &[("outcome", "ok")]), 6.0);
        assert_eq!(value(&s, "barrage_requests_completed_total", &[("outcome", "http_error")]), 2.0);
        assert_eq!(value(&s, "barrage_responses_total", &[("code", "200")]), 6.0);
        assert_eq!(value(&s, "barrage_responses_total", &[("code", "503")]), 2.0);
        assert_eq!(value(&s, "barrage_errors_total", &[("kind", "reset")]), 1.0);
        assert_eq!(value(&s, "barrage_backend_responses_total", &[("backend", "b1")]), 5.0);
        assert_eq!(value(&s, "barrage_request_latency_seconds_count", &[]), 9.0);
        #[rustfmt::skip]
        expect_buckets(&s, "barrage_request_latency_seconds",
            [0.0, 6.0, 6.0, 7.0, 7.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 9.0]);
        assert_eq!(value(&s, "barrage_ok_responses_per_second", &[]), 4.0); // 2 in 500 ms
        assert_eq!(value(&s, "barrage_interval_index", &[]), 1.0);
        assert_eq!(value(&s, "barrage_elapsed_seconds", &[]), 1.5);
        // The streams of the last interval; the run's limit stays (read once per connection).
        assert_eq!(value(&s, "barrage_streams_open_max", &[]), 6.0);
        assert_eq!(value(&s, "barrage_stream_limit", &[]), 8.0);
        assert_eq!(value(&s, "barrage_stream_retries_total", &[]), 1.0);
        // No watch sample in that interval: the last values stay.
        assert_eq!(value(&s, "barrage_process_cpu_percent", &[]), 12.5);

        endpoint.finish();
        // The port is free again.
        std::net::TcpListener::bind(addr).expect("finish() releases the port");
    }

    #[test]
    fn other_paths_and_methods() {
        let endpoint = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = endpoint.local_addr();
        assert_eq!(get(addr, "/").0, 404);
        assert_eq!(get(addr, "/metricsx").0, 404);
        assert_eq!(get(addr, "/metrics?x=1").0, 200);
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        assert!(text.starts_with("HTTP/1.1 405 "), "{text}");
        assert_eq!(header(&text, "allow"), Some("GET, HEAD"), "{text}");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"HEAD /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        assert!(header(head, "content-length").unwrap().parse::<usize>().unwrap() > 0);
        assert_eq!(body, "");
        // A client that connects and goes away does not stop the endpoint.
        drop(std::net::TcpStream::connect(addr).unwrap());
        assert_eq!(get(addr, "/metrics").0, 200);
        endpoint.finish();
    }

    #[test]
    fn label_values_are_escaped() {
        let endpoint = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut i = second();
        let s = sample(1, 0, Outcome::Status(200), CacheStatus::Unknown);
        i.recorder.backends.record(b"a\"b\\c\nd", &s);
        endpoint.update(&i, &i);
        let (_, _, body) = get(endpoint.local_addr(), "/metrics");
        assert!(body.contains(r#"barrage_backend_responses_total{backend="a\"b\\c\nd"} 1"#), "{body}");
        endpoint.finish();
    }

    #[test]
    fn large_counts_are_exact() {
        // A million requests in an interval cost one pass over the HDR buckets, not a million
        // observations, and every one of them is counted.
        let endpoint = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut i = second();
        let mut r = Recorder::new();
        for k in 0..1_000_000u64 {
            r.record(&sample(1 + k % 40, 0, Outcome::Status(200), CacheStatus::Unknown));
        }
        i.recorder = r;
        endpoint.update(&i, &i);
        let (s, _) = scrape(endpoint.local_addr());
        assert_eq!(value(&s, "barrage_request_latency_seconds_count", &[]), 1e6);
        let b = buckets(&s, "barrage_request_latency_seconds");
        // 1..=40 ms evenly: ≤ 1 ms is 1/40, ≤ 10 ms 10/40, ≤ 25 ms 25/40, ≤ 50 ms all.
        assert_eq!(b[1], (0.001, 25_000.0));
        assert_eq!(b[4], (0.01, 250_000.0));
        assert_eq!(b[5], (0.025, 625_000.0));
        assert_eq!(b[6], (0.05, 1e6));
        endpoint.finish();
    }

    #[tokio::test]
    async fn starts_and_finishes_inside_a_runtime() {
        let endpoint = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = endpoint.local_addr();
        let i = first();
        endpoint.update(&i, &i);
        let (status, _, _) = tokio::task::spawn_blocking(move || get(addr, "/metrics")).await.unwrap();
        assert_eq!(status, 200);
        endpoint.finish();
        std::net::TcpListener::bind(addr).expect("finish() releases the port");
    }

    #[test]
    fn busy_address_is_an_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let err = MetricsEndpoint::start(taken.local_addr().unwrap()).err().expect("the port is taken");
        assert!(format!("{err:#}").contains("cannot listen on 127.0.0.1:"), "{err:#}");
    }
}
