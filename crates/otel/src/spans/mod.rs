//! Sampled requests as OTLP client spans ([`encode_spans`]), and the [`SpanSink`] the engine
//! hands them to: a bounded channel whose full queue drops a span and counts it, so a slow
//! collector never slows a run.
//!
//! A span follows OpenTelemetry's HTTP client conventions: kind CLIENT, named by the method
//! and the target's template (`GET /items/{id}`; never the filled URL, whose cardinality is
//! unbounded), `http.request.method`, `http.response.status_code`, `error.type`,
//! `server.address` / `server.port`, `url.template`. Its start is the actual start; the
//! intended start is an attribute and an event (the coordinated-omission lag made visible),
//! and each phase that happened is an event at the moment it ended.

use crate::metrics::{attr, int_attr, scope};
use barrage_metrics::trace::SpanRecord;
use barrage_metrics::{Outcome, Phase};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, ArrayValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, ResourceSpans, ScopeSpans, Span, Status};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The event each phase's end is: a phase is named by what it finished.
const PHASE_EVENTS: [&str; 6] = ["dns", "connect", "tls", "request_sent", "first_byte", "response_end"];

/// One request carrying `spans`, under `resource`.
pub fn encode_spans(spans: &[SpanRecord], resource: &Resource) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![ScopeSpans {
                scope: Some(scope()),
                spans: spans.iter().map(span).collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

fn ns(us: u64) -> u64 {
    us.saturating_mul(1000)
}

/// One record as a span.
pub fn span(r: &SpanRecord) -> Span {
    let (host, port) = split_server(&r.server);
    let mut attributes = vec![
        attr("http.request.method", r.method),
        attr("url.template", &*r.target),
        attr("server.address", host),
        int_attr("barrage.request.number", i64::try_from(r.number).unwrap_or(i64::MAX)),
        int_attr("barrage.intended_start", i64::try_from(ns(r.intended_unix_us)).unwrap_or(i64::MAX)),
        double_attr("barrage.schedule.lag", r.started_unix_us.saturating_sub(r.intended_unix_us) as f64 / 1e6),
    ];
    if let Some(port) = port {
        attributes.push(int_attr("server.port", i64::from(port)));
    }
    if r.attempt > 1 {
        attributes.push(int_attr("http.request.resend_count", i64::from(r.attempt - 1)));
    }
    if let Outcome::Status(code) = r.outcome {
        attributes.push(int_attr("http.response.status_code", i64::from(code)));
    }
    if let Some(step) = &r.step {
        attributes.push(attr("barrage.flow.step", &**step));
    }
    if !r.captures.is_empty() {
        let names = r.captures.iter().map(|c| AnyValue { value: Some(any_value::Value::StringValue(c.to_string())) });
        let array = any_value::Value::ArrayValue(ArrayValue { values: names.collect() });
        attributes.push(KeyValue {
            key: "barrage.flow.captures".into(),
            value: Some(AnyValue { value: Some(array) }),
            ..Default::default()
        });
    }
    if r.cache != barrage_metrics::CacheStatus::Unknown {
        attributes.push(attr("barrage.cache.result", r.cache.name()));
    }
    let failure = failure(r);
    if let Some((kind, _)) = &failure {
        attributes.push(attr("error.type", kind.as_str()));
    }
    Span {
        trace_id: r.trace.bytes().to_vec(),
        span_id: r.span.bytes().to_vec(),
        parent_span_id: r.parent.map(|p| p.bytes().to_vec()).unwrap_or_default(),
        // Sampled: barrage exports only the requests it sampled.
        flags: 1 | 0x100,
        name: format!("{} {}", r.method, r.target),
        kind: span::SpanKind::Client as i32,
        start_time_unix_nano: ns(r.started_unix_us),
        end_time_unix_nano: ns(r.ended_unix_us),
        attributes,
        events: events(r),
        status: Some(match failure {
            Some((_, message)) => Status { code: status::StatusCode::Error as i32, message },
            None => Status::default(),
        }),
        ..Default::default()
    }
}

/// `error.type` and the status message of a failed request, as the conventions say: the
/// error's kind, or for a response the status code; a response a flow's check rejected is
/// `barrage.rejected`.
fn failure(r: &SpanRecord) -> Option<(String, String)> {
    match r.outcome {
        Outcome::Error(kind) => Some((kind.name().into(), format!("request failed: {}", kind.name()))),
        Outcome::Status(code) if code >= 400 => Some((code.to_string(), format!("HTTP {code}"))),
        Outcome::Status(_) if r.rejected => {
            Some(("barrage.rejected".into(), "a check or capture of the flow's step failed".into()))
        }
        Outcome::Status(_) => None,
    }
}

fn events(r: &SpanRecord) -> Vec<span::Event> {
    let mut out = vec![span::Event {
        time_unix_nano: ns(r.intended_unix_us),
        name: "barrage.intended_start".into(),
        ..Default::default()
    }];
    // The phases follow each other from the start: each event is the end of its phase.
    let mut at = ns(r.started_unix_us);
    for (i, phase) in Phase::ALL.iter().enumerate() {
        if let Some(d) = r.phases[i] {
            at = at.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            out.push(span::Event {
                time_unix_nano: at.min(ns(r.ended_unix_us)),
                name: PHASE_EVENTS[i].into(),
                attributes: vec![double_attr(&format!("barrage.{}.duration", phase.name()), d.as_secs_f64())],
                ..Default::default()
            });
        }
    }
    out
}

fn double_attr(key: &str, value: f64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(any_value::Value::DoubleValue(value)) }),
        ..Default::default()
    }
}

/// `host:port` (or `[v6]:port`) into its host and port.
fn split_server(server: &str) -> (&str, Option<u16>) {
    match server.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            (host.trim_start_matches('[').trim_end_matches(']'), port.parse().ok())
        }
        _ => (server, None),
    }
}

/// Where the engine puts each sampled request's span: cheap to clone, never blocks.
#[derive(Clone, Debug)]
pub struct SpanSink {
    tx: mpsc::Sender<SpanRecord>,
    dropped: Arc<AtomicU64>,
}

impl SpanSink {
    /// A sink holding at most `capacity` spans not yet taken, and its receiving end.
    pub fn channel(capacity: usize) -> (SpanSink, mpsc::Receiver<SpanRecord>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (SpanSink { tx, dropped: Arc::new(AtomicU64::new(0)) }, rx)
    }

    /// Hands `span` over, or drops it (counted) when the exporter is behind or gone.
    pub fn try_send(&self, span: SpanRecord) -> bool {
        let sent = self.tx.try_send(span).is_ok();
        if !sent {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        sent
    }

    /// Spans dropped so far, by every clone of this sink.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl barrage_metrics::trace::SpanOut for SpanSink {
    fn put(&self, span: SpanRecord) {
        self.try_send(span);
    }
}

#[cfg(test)]
mod tests;
