use super::*;
use crate::config::{resolve, Flags};
use barrage_metrics::recorder::SampleKeys;
use barrage_metrics::testing::{interval, sample};
use barrage_metrics::Outcome;
use opentelemetry_proto::tonic::metrics::v1::ExponentialHistogramDataPoint;
use std::time::Duration;

fn config(temporality: &str) -> Config {
    let flags = Flags {
        endpoint: Some("http://127.0.0.1:1".into()),
        temporality: Some(temporality.into()),
        ..Default::default()
    };
    resolve(&flags, &|_| None).unwrap().unwrap()
}

/// An interval of `ok` GETs of 2 ms and one refused POST.
fn recorder(ok: u64) -> Recorder {
    let mut r = Recorder::new();
    let get = SampleKeys { method: Some(b"GET"), ..Default::default() };
    for _ in 0..ok {
        r.record_keyed(&sample(Duration::from_millis(2), Outcome::Status(200)), &get);
    }
    let post = SampleKeys { method: Some(b"POST"), ..Default::default() };
    r.record_keyed(&sample(Duration::from_millis(9), Outcome::Error(ErrorKind::Refused)), &post);
    r
}

fn find<'a>(req: &'a ExportMetricsServiceRequest, name: &str) -> &'a Metric {
    let m = &req.resource_metrics[0].scope_metrics[0].metrics;
    m.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no {name}"))
}

fn points(m: &Metric) -> &[ExponentialHistogramDataPoint] {
    match &m.data {
        Some(metric::Data::ExponentialHistogram(h)) => &h.data_points,
        other => panic!("{other:?}"),
    }
}

fn sum_of(m: &Metric) -> Vec<(String, i64)> {
    let Some(metric::Data::Sum(s)) = &m.data else { panic!("{m:?}") };
    s.data_points
        .iter()
        .map(|p| {
            let label = p.attributes.first().map(|a| format!("{:?}", a.value)).unwrap_or_default();
            let Some(number_data_point::Value::AsInt(n)) = p.value else { panic!() };
            (label, n)
        })
        .collect()
}

#[test]
fn an_interval_becomes_histograms_by_method_and_counters() {
    let mut e = MetricsEncoder::new(&config("delta"), false);
    let req = e.encode(&interval(0, 1_000_000, recorder(10)));
    let attrs = &req.resource_metrics[0].resource.as_ref().unwrap().attributes;
    assert_eq!(attrs[0], attr("service.name", "barrage"));
    let d = points(find(&req, "http.client.request.duration"));
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].attributes, vec![attr("http.request.method", "GET")]);
    assert_eq!((d[0].count, d[1].count), (10, 1));
    assert_eq!((d[0].start_time_unix_nano, d[0].time_unix_nano), (1_000_000_000_000, 1_001_000_000_000));
    assert!((d[0].sum.unwrap() - 0.020).abs() < 0.020 / 1000.0);
    assert_eq!(points(find(&req, "barrage.request.service_time"))[0].count, 11);
    assert_eq!(sum_of(find(&req, "barrage.requests.completed"))[0].1, 11);
    assert_eq!(sum_of(find(&req, "barrage.requests.ok"))[0].1, 10);
    let errors = sum_of(find(&req, "barrage.errors"));
    assert_eq!(errors.len(), 1);
    assert!(errors[0].0.contains("refused") && errors[0].1 == 1, "{errors:?}");
    assert_eq!(sum_of(find(&req, "barrage.responses"))[0].1, 10);
    let m = &req.resource_metrics[0].scope_metrics[0].metrics;
    assert!(m.iter().all(|m| m.name != "barrage.cache.responses" && m.name != "barrage.request.phase.duration"));
}

#[test]
fn cumulative_points_run_from_the_first_interval() {
    let mut e = MetricsEncoder::new(&config("cumulative"), false);
    let first = e.encode(&interval(0, 5_000, recorder(3)));
    let second = e.encode(&interval(1, 6_000, recorder(4)));
    let d = points(find(&second, "http.client.request.duration"));
    assert_eq!(d.iter().map(|p| p.count).sum::<u64>(), 9);
    assert_eq!((d[0].start_time_unix_nano, d[0].time_unix_nano), (5_000_000_000, 7_000_000_000));
    assert_eq!(sum_of(find(&second, "barrage.requests.completed"))[0].1, 9);
    let Some(metric::Data::ExponentialHistogram(h)) = &find(&first, "barrage.schedule.lag").data else { panic!() };
    assert_eq!(h.aggregation_temporality, AggregationTemporality::Cumulative as i32);
}

#[test]
fn a_key_value_run_and_an_empty_interval() {
    let mut e = MetricsEncoder::new(&config("delta"), true);
    let req = e.encode(&interval(0, 0, Recorder::new()));
    let d = points(find(&req, "barrage.kv.command.duration"));
    assert_eq!((d.len(), d[0].count), (1, 0));
    assert_eq!(sum_of(find(&req, "barrage.requests.completed"))[0].1, 0);
    assert_eq!(method("(other)"), "_OTHER");
}
