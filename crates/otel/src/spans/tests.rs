use super::*;
use barrage_metrics::trace::TraceKey;
use barrage_metrics::{CacheStatus, ErrorKind};
use std::time::Duration;

/// Request `number` of a run: intended at 1 s, started 2 ms late, 5 ms long, DNS 1 ms,
/// connect 1 ms, wait 2 ms.
pub(crate) fn record(number: u64, outcome: Outcome) -> SpanRecord {
    let key = TraceKey::of_run("4bf92f3577b34da6a3ce929d0e0e4736").unwrap();
    let ms = Duration::from_millis;
    SpanRecord {
        trace: key.trace_id(number),
        span: key.span_id(number, 0, 1),
        parent: None,
        number,
        attempt: 1,
        intended_unix_us: 1_000_000,
        started_unix_us: 1_002_000,
        ended_unix_us: 1_007_000,
        phases: [Some(ms(1)), Some(ms(1)), None, None, Some(ms(2)), None],
        outcome,
        rejected: false,
        method: "GET",
        target: "/items/{id}".into(),
        server: "127.0.0.1:8080".into(),
        step: None,
        captures: Vec::new(),
        bytes_in: 100,
        bytes_out: 10,
        cache: CacheStatus::Unknown,
    }
}

fn get<'a>(s: &'a Span, key: &str) -> Option<&'a any_value::Value> {
    s.attributes.iter().find(|a| a.key == key).and_then(|a| a.value.as_ref()?.value.as_ref())
}

#[test]
fn a_request_is_a_client_span_with_its_phases_and_intended_start() {
    let r = record(7, Outcome::Status(200));
    let req = encode_spans(std::slice::from_ref(&r), &Resource::default());
    let s = &req.resource_spans[0].scope_spans[0].spans[0];
    assert_eq!(s.trace_id, r.trace.bytes().to_vec());
    assert_eq!(s.span_id, r.span.bytes().to_vec());
    assert!(s.parent_span_id.is_empty());
    assert_eq!((s.name.as_str(), s.kind), ("GET /items/{id}", span::SpanKind::Client as i32));
    assert_eq!((s.start_time_unix_nano, s.end_time_unix_nano), (1_002_000_000, 1_007_000_000));
    assert_eq!(get(s, "url.template"), Some(&any_value::Value::StringValue("/items/{id}".into())));
    assert_eq!(get(s, "server.address"), Some(&any_value::Value::StringValue("127.0.0.1".into())));
    assert_eq!(get(s, "server.port"), Some(&any_value::Value::IntValue(8080)));
    assert_eq!(get(s, "http.response.status_code"), Some(&any_value::Value::IntValue(200)));
    assert_eq!(get(s, "barrage.schedule.lag"), Some(&any_value::Value::DoubleValue(0.002)));
    assert_eq!(get(s, "error.type"), None);
    assert_eq!(s.status.as_ref().unwrap().code, status::StatusCode::Unset as i32);
    let events: Vec<(&str, u64)> = s.events.iter().map(|e| (e.name.as_str(), e.time_unix_nano)).collect();
    assert_eq!(
        events,
        [
            ("barrage.intended_start", 1_000_000_000),
            ("dns", 1_003_000_000),
            ("connect", 1_004_000_000),
            ("first_byte", 1_006_000_000)
        ]
    );
}

#[test]
fn failures_flows_and_retries() {
    let mut r = record(8, Outcome::Error(ErrorKind::Refused));
    r.step = Some("login".into());
    r.captures = vec!["token".into()];
    r.attempt = 2;
    r.parent = Some(barrage_metrics::trace::SpanId(42));
    r.server = "[::1]:443".into();
    let s = span(&r);
    assert_eq!(get(&s, "error.type"), Some(&any_value::Value::StringValue("refused".into())));
    assert_eq!(s.status.as_ref().unwrap().code, status::StatusCode::Error as i32);
    assert_eq!(s.parent_span_id, 42u64.to_be_bytes().to_vec());
    assert_eq!(get(&s, "barrage.flow.step"), Some(&any_value::Value::StringValue("login".into())));
    assert_eq!(get(&s, "http.request.resend_count"), Some(&any_value::Value::IntValue(1)));
    assert_eq!(get(&s, "server.address"), Some(&any_value::Value::StringValue("::1".into())));
    assert!(format!("{:?}", get(&s, "barrage.flow.captures")).contains("token"));
    let s = span(&record(9, Outcome::Status(503)));
    assert_eq!(get(&s, "error.type"), Some(&any_value::Value::StringValue("503".into())));
    let mut ok_but_rejected = record(10, Outcome::Status(200));
    ok_but_rejected.rejected = true;
    assert_eq!(span(&ok_but_rejected).status.unwrap().code, status::StatusCode::Error as i32);
}

#[test]
fn a_full_sink_drops_and_counts_and_its_clones_share_the_count() {
    let (sink, mut rx) = SpanSink::channel(2);
    let other = sink.clone();
    assert!(sink.try_send(record(1, Outcome::Status(200))));
    assert!(other.try_send(record(2, Outcome::Status(200))));
    assert!(!sink.try_send(record(3, Outcome::Status(200))));
    assert_eq!((sink.dropped(), other.dropped()), (1, 1));
    assert_eq!(rx.try_recv().unwrap().number, 1);
    assert_eq!(rx.try_recv().unwrap().number, 2);
    drop(rx);
    assert!(!sink.try_send(record(4, Outcome::Status(200))));
    assert_eq!(sink.dropped(), 2);
}
