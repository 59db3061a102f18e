//! A run's intervals as OTLP metrics: one `ExportMetricsServiceRequest` per interval.
//!
//! What an [`IntervalRecord`] holds and what becomes of it:
//! - corrected latency → `http.client.request.duration` (OTel's HTTP client histogram, in
//!   seconds, split by `http.request.method` when every request's method is known), or
//!   `barrage.kv.command.duration` for a key-value run;
//! - service time, schedule lag → `barrage.request.service_time`, `barrage.schedule.lag`;
//! - phases → `barrage.request.phase.duration` by `barrage.phase` (dns … receive);
//! - counters → `barrage.requests.sent` / `.completed` / `.ok` / `.dropped`, `barrage.errors`
//!   by `error.type`, `barrage.responses` by `http.response.status_code`,
//!   `barrage.cache.responses` by `barrage.cache.result`, `barrage.bytes.received` / `.sent`.
//!
//! Not exported: per-backend and per-name breakdowns (a backend's name comes from a
//! response header: unbounded), flows, key-value reply classes, the host and process
//! watch samples, the tenth-of-a-second timeline and scatter points (finer than a metric).

use crate::config::{Config, Temporality};
use crate::expo::to_exponential;
use barrage_metrics::{CacheStatus, ErrorKind, IntervalRecord, Phase, Recorder};
use hdrhistogram::Histogram;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    exemplar, metric, number_data_point, AggregationTemporality, Exemplar, ExponentialHistogram, Metric,
    NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

/// A string attribute.
pub fn attr(key: &str, value: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.into())) }),
        ..Default::default()
    }
}

/// An integer attribute.
pub fn int_attr(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(any_value::Value::IntValue(value)) }),
        ..Default::default()
    }
}

/// The resource of `config`'s pairs.
pub fn resource(config: &Config) -> Resource {
    Resource { attributes: config.resource.iter().map(|(k, v)| attr(k, v.as_str())).collect(), ..Default::default() }
}

/// barrage as the instrumentation scope.
pub fn scope() -> InstrumentationScope {
    InstrumentationScope { name: "barrage".into(), version: env!("CARGO_PKG_VERSION").into(), ..Default::default() }
}

/// Turns one run's intervals into requests; keeps the running total for cumulative.
pub struct MetricsEncoder {
    resource: Resource,
    temporality: Temporality,
    scale: i32,
    kv: bool,
    /// Cumulative: the run's start (ns) and everything since.
    total: Option<(u64, Recorder)>,
}

/// The times and temporality of the points of one request.
struct Frame {
    /// The run's start, ms since the Unix epoch: exemplars' times count from it.
    run_start_ms: u64,
    start_ns: u64,
    end_ns: u64,
    temporality: i32,
    scale: i32,
}

impl MetricsEncoder {
    /// An encoder for a run (`kv`: a key-value run, whose requests are commands).
    pub fn new(config: &Config, kv: bool) -> MetricsEncoder {
        MetricsEncoder {
            resource: resource(config),
            temporality: config.temporality,
            scale: config.scale,
            kv,
            total: None,
        }
    }

    /// The request of interval `i`: its own figures (delta) or the run's so far (cumulative).
    pub fn encode(&mut self, i: &IntervalRecord) -> ExportMetricsServiceRequest {
        let start_ns = i.start_unix_ms.saturating_mul(1_000_000);
        let end_ns = (i.start_unix_ms + u64::from(i.length_ms)).saturating_mul(1_000_000);
        let (start_ns, r, temporality) = match self.temporality {
            Temporality::Delta => (start_ns, &i.recorder, AggregationTemporality::Delta),
            Temporality::Cumulative => {
                let (run_start, total) = self.total.get_or_insert_with(|| (start_ns, Recorder::new()));
                total.add(&i.recorder);
                forget_unexported(total);
                (*run_start, &*total, AggregationTemporality::Cumulative)
            }
        };
        // Intervals are whole seconds from the run's start.
        let run_start_ms = i.start_unix_ms.saturating_sub(u64::from(i.index) * 1000);
        let f = Frame { run_start_ms, start_ns, end_ns, temporality: temporality as i32, scale: self.scale };
        let mut metrics = durations(self.kv, r, &f);
        metrics.extend(counters(r, &f));
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(self.resource.clone()),
                scope_metrics: vec![ScopeMetrics { scope: Some(scope()), metrics, schema_url: String::new() }],
                schema_url: String::new(),
            }],
        }
    }
}

fn durations(kv: bool, r: &Recorder, f: &Frame) -> Vec<Metric> {
    let (name, what) = match kv {
        true => ("barrage.kv.command.duration", "Key-value command duration from its intended start"),
        false => ("http.client.request.duration", "Duration of HTTP client requests, from their intended start"),
    };
    // Split by method only when the methods account for every request (a flow's
    // dropped arrivals or a key-value run leave them short): counts must add up.
    let by_method: u64 = r.methods.iter().map(|m| m.latency.len()).sum();
    let request = if !kv && !r.methods.is_empty() && by_method == r.corrected.len() {
        r.methods.iter().map(|m| (vec![attr("http.request.method", method(&m.name))], &m.latency)).collect()
    } else {
        vec![(Vec::new(), &r.corrected)]
    };
    let mut out = vec![histogram(name, what, request, f)];
    attach_exemplars(&mut out[0], r, f);
    out.push(histogram(
        "barrage.request.service_time",
        "Duration from the actual start (without schedule lag)",
        vec![(Vec::new(), &r.service)],
        f,
    ));
    out.push(histogram("barrage.schedule.lag", "Actual start minus intended start", vec![(Vec::new(), &r.lag)], f));
    let phases = Phase::ALL
        .iter()
        .map(|&p| (vec![attr("barrage.phase", p.name())], r.phase(p)))
        .filter(|(_, h)| !h.is_empty())
        .collect::<Vec<_>>();
    if !phases.is_empty() {
        out.push(histogram("barrage.request.phase.duration", "Duration of each phase that happened", phases, f));
    }
    out
}

/// `--trace-context`: the slowest sampled requests as the duration's exemplars, so a
/// backend links its tail to their traces. An exemplar carries no method, so only an
/// unsplit duration (one point) takes them.
fn attach_exemplars(m: &mut Metric, r: &Recorder, f: &Frame) {
    let Some(metric::Data::ExponentialHistogram(h)) = &mut m.data else { return };
    let [point] = &mut h.data_points[..] else { return };
    point.exemplars = r
        .exemplars
        .iter()
        .map(|e| Exemplar {
            filtered_attributes: Vec::new(),
            time_unix_nano: (f.run_start_ms + u64::from(e.ended_ms)).saturating_mul(1_000_000),
            span_id: e.span_id().bytes().to_vec(),
            trace_id: e.trace_id().bytes().to_vec(),
            value: Some(exemplar::Value::AsDouble(e.latency_us as f64 / 1e6)),
        })
        .collect();
}

/// Empties what the export never reads and what would grow with the run (timelines,
/// scatter points, per-backend and per-flow breakdowns), rather than copy each interval.
fn forget_unexported(r: &mut Recorder) {
    r.timeline = Default::default();
    r.samples.clear();
    r.backends = barrage_metrics::recorder::Keyed::timed();
    r.flows = barrage_metrics::recorder::Keyed::timed();
    r.names = Default::default();
}

/// OTel's rule: a method outside the known set is `_OTHER` (barrage's own `(other)` too).
fn method(name: &str) -> String {
    const KNOWN: [&str; 9] = ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"];
    match KNOWN.contains(&name) {
        true => name.into(),
        false => "_OTHER".into(),
    }
}

fn histogram(name: &str, description: &str, points: Vec<(Vec<KeyValue>, &Histogram<u64>)>, f: &Frame) -> Metric {
    let data_points = points
        .into_iter()
        .map(|(attributes, h)| {
            let mut p = to_exponential(h, f.scale);
            p.attributes = attributes;
            p.start_time_unix_nano = f.start_ns;
            p.time_unix_nano = f.end_ns;
            p
        })
        .collect();
    Metric {
        name: name.into(),
        description: description.into(),
        unit: "s".into(),
        data: Some(metric::Data::ExponentialHistogram(ExponentialHistogram {
            data_points,
            aggregation_temporality: f.temporality,
        })),
        ..Default::default()
    }
}

fn counter(name: &str, unit: &str, points: Vec<(Vec<KeyValue>, u64)>, f: &Frame) -> Metric {
    let data_points = points
        .into_iter()
        .map(|(attributes, n)| NumberDataPoint {
            attributes,
            start_time_unix_nano: f.start_ns,
            time_unix_nano: f.end_ns,
            value: Some(number_data_point::Value::AsInt(i64::try_from(n).unwrap_or(i64::MAX))),
            ..Default::default()
        })
        .collect();
    Metric {
        name: name.into(),
        unit: unit.into(),
        data: Some(metric::Data::Sum(Sum { data_points, aggregation_temporality: f.temporality, is_monotonic: true })),
        ..Default::default()
    }
}

fn counters(r: &Recorder, f: &Frame) -> Vec<Metric> {
    let c = &r.counts;
    let one = |n: u64| vec![(Vec::new(), n)];
    let mut out = vec![
        counter("barrage.requests.sent", "{request}", one(c.sent), f),
        counter("barrage.requests.completed", "{request}", one(c.completed), f),
        counter("barrage.requests.ok", "{request}", one(c.ok), f),
        counter("barrage.requests.dropped", "{request}", one(c.dropped), f),
        counter("barrage.bytes.received", "By", one(c.bytes_in), f),
        counter("barrage.bytes.sent", "By", one(c.bytes_out), f),
    ];
    let errors: Vec<_> = ErrorKind::ALL
        .iter()
        .zip(c.errors)
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| (vec![attr("error.type", k.name())], n))
        .collect();
    if !errors.is_empty() {
        out.push(counter("barrage.errors", "{request}", errors, f));
    }
    let status: Vec<_> = r
        .status_counts()
        .into_iter()
        .map(|(code, n)| (vec![int_attr("http.response.status_code", i64::from(code))], n))
        .collect();
    if !status.is_empty() {
        out.push(counter("barrage.responses", "{response}", status, f));
    }
    // Without a cache in front, every response is `unknown`: nothing to say.
    if CacheStatus::ALL.iter().zip(c.cache).any(|(s, n)| n > 0 && *s != CacheStatus::Unknown) {
        let cache = CacheStatus::ALL
            .iter()
            .zip(c.cache)
            .filter(|(_, n)| *n > 0)
            .map(|(s, n)| (vec![attr("barrage.cache.result", s.name())], n))
            .collect();
        out.push(counter("barrage.cache.responses", "{response}", cache, f));
    }
    out
}

#[cfg(test)]
mod tests;
