//! The export thread: its own current-thread runtime, fed by bounded channels (interval
//! metrics from the run's collector, spans from the engine's [`SpanSink`]). A full queue
//! drops and counts, a failed request is retried a few times as OTLP says, and the end of
//! the run waits a bounded time for what is queued: the run is never slowed or failed by
//! its collector.

use crate::config::{Config, Headers, Protocol};
use crate::spans::{encode_spans, SpanSink};
use barrage_metrics::trace::SpanRecord;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Interval requests queued at most: a minute of a run's intervals.
const METRICS_QUEUE: usize = 60;
/// Spans queued at most before the sink drops.
const SPANS_QUEUE: usize = 8192;
/// Spans per export request (the SDKs' batch processor's default).
const SPANS_PER_BATCH: usize = 512;
/// Retries of a request that failed transiently, after the first try.
const RETRIES: u32 = 3;

/// What was asked and what arrived.
#[derive(Debug, Default)]
struct Stats {
    metric_batches: AtomicU64,
    metric_delivered: AtomicU64,
    spans_delivered: AtomicU64,
    spans_taken: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Stats {
    fn failed(&self, why: String) {
        if let Ok(mut e) = self.last_error.lock() {
            *e = Some(why);
        }
    }
}

/// What the export did, once it finished.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// Interval requests the run produced.
    pub metric_batches: u64,
    /// Of those, accepted by the collector.
    pub metric_batches_delivered: u64,
    /// Spans handed to the sink.
    pub spans: u64,
    /// Of those, accepted by the collector.
    pub spans_delivered: u64,
    /// The last failure, when something was not delivered.
    pub error: Option<String>,
}

impl ExportReport {
    /// One line for stderr when anything was not delivered
    /// (`otlp: 3 of 60 metric batches not delivered: connection refused`).
    pub fn line(&self) -> Option<String> {
        let why = self.error.clone().unwrap_or_else(|| "the collector did not keep up".into());
        let mut parts = Vec::new();
        if self.metric_batches_delivered < self.metric_batches {
            let lost = self.metric_batches - self.metric_batches_delivered;
            parts.push(format!("{lost} of {} metric batches", self.metric_batches));
        }
        if self.spans_delivered < self.spans {
            parts.push(format!("{} of {} spans", self.spans - self.spans_delivered, self.spans));
        }
        (!parts.is_empty()).then(|| format!("otlp: {} not delivered: {why}", parts.join(" and ")))
    }
}

/// The export thread's handle: where intervals go, and how it ends.
pub struct Exporter {
    metrics: mpsc::Sender<ExportMetricsServiceRequest>,
    spans: SpanSink,
    stats: Arc<Stats>,
    stop: Option<oneshot::Sender<()>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl Exporter {
    /// Starts the thread exporting to `config`'s endpoints; spans under `resource`.
    pub fn start(config: Config, resource: Resource) -> std::io::Result<Exporter> {
        let (metrics, metrics_rx) = mpsc::channel(METRICS_QUEUE);
        let (spans, spans_rx) = SpanSink::channel(SPANS_QUEUE);
        let (stop, stop_rx) = oneshot::channel();
        let (done_tx, done) = std::sync::mpsc::channel();
        let stats = Arc::new(Stats::default());
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let queues = Queues { metrics: metrics_rx, spans: spans_rx, stop: stop_rx };
        let shared = stats.clone();
        std::thread::Builder::new().name("otlp".into()).spawn(move || {
            runtime.block_on(serve(config, resource, queues, shared));
            let _ = done_tx.send(());
        })?;
        Ok(Exporter { metrics, spans, stats, stop: Some(stop), done })
    }

    /// Queues an interval's request; dropped (and counted) when the queue is full.
    pub fn send_metrics(&self, request: ExportMetricsServiceRequest) {
        self.stats.metric_batches.fetch_add(1, Ordering::Relaxed);
        if let Err(mpsc::error::TrySendError::Closed(_)) = self.metrics.try_send(request) {
            self.stats.failed("the export thread stopped".into());
        }
    }

    /// Where the engine hands sampled requests' spans.
    pub fn spans(&self) -> SpanSink {
        self.spans.clone()
    }

    /// Ends the export: what is queued is sent within `wait`, then whatever is left counts
    /// as not delivered.
    pub fn finish(mut self, wait: Duration) -> ExportReport {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let finished = self.done.recv_timeout(wait).is_ok();
        let s = &self.stats;
        let mut error = s.last_error.lock().ok().and_then(|e| e.clone());
        if !finished && error.is_none() {
            error = Some(format!("still sending after {:.1} s", wait.as_secs_f64()));
        }
        ExportReport {
            metric_batches: s.metric_batches.load(Ordering::Relaxed),
            metric_batches_delivered: s.metric_delivered.load(Ordering::Relaxed),
            spans: s.spans_taken.load(Ordering::Relaxed) + self.spans.dropped(),
            spans_delivered: s.spans_delivered.load(Ordering::Relaxed),
            error,
        }
    }
}

struct Queues {
    metrics: mpsc::Receiver<ExportMetricsServiceRequest>,
    spans: mpsc::Receiver<SpanRecord>,
    stop: oneshot::Receiver<()>,
}

/// The thread's loop: intervals as they come, spans in batches of up to
/// [`SPANS_PER_BATCH`] or every second; on stop, what is queued, then out.
async fn serve(config: Config, resource: Resource, mut q: Queues, stats: Arc<Stats>) {
    let transport = match Transport::new(&config) {
        Ok(t) => t,
        Err(e) => return stats.failed(e),
    };
    let mut batch: Vec<SpanRecord> = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let (mut metrics_open, mut spans_open, mut stopping) = (true, true, false);
    while metrics_open || spans_open {
        tokio::select! {
            m = q.metrics.recv(), if metrics_open => match m {
                Some(request) => {
                    if retrying(&stats, || transport.metrics(request.clone())).await {
                        stats.metric_delivered.fetch_add(1, Ordering::Relaxed);
                    }
                }
                None => metrics_open = false,
            },
            s = q.spans.recv(), if spans_open => match s {
                Some(record) => {
                    stats.spans_taken.fetch_add(1, Ordering::Relaxed);
                    batch.push(record);
                    if batch.len() >= SPANS_PER_BATCH {
                        send_spans(&transport, &mut batch, &resource, &stats).await;
                    }
                }
                None => spans_open = false,
            },
            _ = tick.tick() => send_spans(&transport, &mut batch, &resource, &stats).await,
            _ = &mut q.stop, if !stopping => {
                // Nothing more comes in; what is queued still goes out.
                stopping = true;
                q.metrics.close();
                q.spans.close();
            }
        }
    }
    send_spans(&transport, &mut batch, &resource, &stats).await;
}

async fn send_spans(t: &Transport, batch: &mut Vec<SpanRecord>, resource: &Resource, stats: &Stats) {
    if batch.is_empty() {
        return;
    }
    let request = encode_spans(batch, resource);
    if retrying(stats, || t.spans(request.clone())).await {
        stats.spans_delivered.fetch_add(batch.len() as u64, Ordering::Relaxed);
    }
    batch.clear();
}

/// Why a request failed, and whether OTLP says to try it again.
struct Failure {
    retryable: bool,
    why: String,
}

/// Tries `send` once and up to [`RETRIES`] more times while it fails transiently, with
/// exponential backoff (100, 200, 400 ms). Whether it was delivered.
async fn retrying<F, Fut>(stats: &Stats, mut send: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    for attempt in 0..=RETRIES {
        match send().await {
            Ok(()) => return true,
            Err(f) if f.retryable && attempt < RETRIES => {
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
            Err(f) => {
                stats.failed(f.why);
                return false;
            }
        }
    }
    false
}

/// How requests travel.
enum Transport {
    Grpc {
        metrics: MetricsServiceClient<tonic::transport::Channel>,
        traces: TraceServiceClient<tonic::transport::Channel>,
        headers: tonic::metadata::MetadataMap,
    },
    Http {
        client: Client<HttpConnector, Full<Bytes>>,
        config: Config,
    },
}

impl Transport {
    fn new(config: &Config) -> Result<Transport, String> {
        match config.protocol {
            Protocol::Grpc => {
                let channel = |url: &str| -> Result<tonic::transport::Channel, String> {
                    let endpoint = tonic::transport::Endpoint::from_shared(url.to_string())
                        .map_err(|e| format!("bad endpoint: {e}"))?;
                    Ok(endpoint.timeout(config.timeout).connect_timeout(config.timeout).connect_lazy())
                };
                Ok(Transport::Grpc {
                    metrics: MetricsServiceClient::new(channel(&config.metrics_url)?),
                    traces: TraceServiceClient::new(channel(&config.traces_url)?),
                    headers: metadata(&config.headers),
                })
            }
            Protocol::HttpProtobuf => {
                let client = Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
                Ok(Transport::Http { client, config: config.clone() })
            }
        }
    }

    async fn metrics(&self, request: ExportMetricsServiceRequest) -> Result<(), Failure> {
        match self {
            Transport::Grpc { metrics, headers, .. } => {
                let mut r = tonic::Request::new(request);
                *r.metadata_mut() = headers.clone();
                metrics.clone().export(r).await.map(drop).map_err(grpc_failure)
            }
            Transport::Http { client, config } => {
                post(client, config, &config.metrics_url, request.encode_to_vec()).await
            }
        }
    }

    async fn spans(&self, request: ExportTraceServiceRequest) -> Result<(), Failure> {
        match self {
            Transport::Grpc { traces, headers, .. } => {
                let mut r = tonic::Request::new(request);
                *r.metadata_mut() = headers.clone();
                traces.clone().export(r).await.map(drop).map_err(grpc_failure)
            }
            Transport::Http { client, config } => {
                post(client, config, &config.traces_url, request.encode_to_vec()).await
            }
        }
    }
}

/// The headers as gRPC metadata (checked as header names and values when configured).
fn metadata(headers: &Headers) -> tonic::metadata::MetadataMap {
    let mut map = tonic::metadata::MetadataMap::new();
    for (k, v) in &headers.0 {
        if let (Ok(k), Ok(v)) = (tonic::metadata::MetadataKey::from_bytes(k.as_bytes()), v.parse()) {
            map.insert(k, v);
        }
    }
    map
}

/// OTLP/gRPC's retryable codes (the specification's table).
fn grpc_failure(s: tonic::Status) -> Failure {
    use tonic::Code::*;
    let retryable = matches!(
        s.code(),
        Cancelled | DeadlineExceeded | ResourceExhausted | Aborted | OutOfRange | Unavailable | DataLoss
    );
    Failure { retryable, why: innermost(&s) }
}

/// The innermost cause of an error, which says what happened ("Connection refused (os
/// error 111)") where the outer ones say where.
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut e = e;
    while let Some(source) = e.source() {
        e = source;
    }
    let text = e.to_string();
    // A gRPC status without a source: its message.
    text.lines().next().unwrap_or("").to_string()
}

/// One OTLP/HTTP request: 2xx delivered; 429, 502, 503, 504 and transport errors retried.
async fn post(
    client: &Client<HttpConnector, Full<Bytes>>,
    c: &Config,
    url: &str,
    body: Vec<u8>,
) -> Result<(), Failure> {
    let mut builder = http::Request::post(url).header(http::header::CONTENT_TYPE, "application/x-protobuf");
    for (k, v) in &c.headers.0 {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let request = builder
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| Failure { retryable: false, why: format!("bad request: {e}") })?;
    let exchange = async {
        let response = client.request(request).await.map_err(|e| Failure { retryable: true, why: innermost(&e) })?;
        let status = response.status();
        // Read the body so the connection can be reused.
        let _ = response.into_body().collect().await;
        match status.as_u16() {
            200..=299 => Ok(()),
            code => Err(Failure { retryable: matches!(code, 429 | 502 | 503 | 504), why: format!("HTTP {status}") }),
        }
    };
    match tokio::time::timeout(c.timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(Failure { retryable: true, why: format!("no answer within {} ms", c.timeout.as_millis()) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{resolve, Flags};
    use std::time::Instant;

    fn config(url: String, protocol: &str) -> Config {
        let flags = Flags { endpoint: Some(url), protocol: Some(protocol.into()), ..Default::default() };
        let env = |k: &str| (k == "OTEL_EXPORTER_OTLP_TIMEOUT").then(|| "200".to_string());
        resolve(&flags, &env).unwrap().unwrap()
    }

    #[test]
    fn a_collector_that_never_answers_costs_drops_not_time() {
        // Accepts connections (the kernel's backlog) and never answers a byte.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        for protocol in ["http/protobuf", "grpc"] {
            let exporter = Exporter::start(config(url.clone(), protocol), Resource::default()).unwrap();
            let began = Instant::now();
            for _ in 0..200 {
                exporter.send_metrics(ExportMetricsServiceRequest::default());
            }
            // Queuing never waits for the collector.
            assert!(began.elapsed() < Duration::from_secs(1), "{:?}", began.elapsed());
            let report = exporter.finish(Duration::from_millis(500));
            assert!(began.elapsed() < Duration::from_secs(3), "{:?}", began.elapsed());
            assert_eq!((report.metric_batches, report.metric_batches_delivered), (200, 0));
            let line = report.line().unwrap();
            assert!(line.starts_with("otlp: 200 of 200 metric batches not delivered: "), "{line}");
        }
        drop(listener);
    }

    #[test]
    fn the_report_line_says_what_was_lost() {
        let all = ExportReport { metric_batches: 60, metric_batches_delivered: 60, ..Default::default() };
        assert_eq!(all.line(), None);
        let some = ExportReport {
            metric_batches: 60,
            metric_batches_delivered: 57,
            spans: 10,
            spans_delivered: 4,
            error: Some("Connection refused (os error 111)".into()),
        };
        assert_eq!(
            some.line().as_deref(),
            Some("otlp: 3 of 60 metric batches and 6 of 10 spans not delivered: Connection refused (os error 111)")
        );
    }
}
