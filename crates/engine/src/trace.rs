//! `--trace-context`: the W3C `traceparent` and `tracestate` headers each HTTP request
//! carries, derived from the run's id and the request's number
//! ([`barrage_metrics::trace`]), and how each protocol's encoder appends them. Nothing is
//! stored per request: the ids are a function of (run id, number, step, attempt), which is
//! also how `barrage report --trace-id` finds a request again.

use barrage_metrics::trace::{self, Sampling, SpanId, TraceId, TraceKey, TRACEPARENT_LEN};
use http::HeaderValue;

/// The run's trace context: its key, its sampling, its `tracestate` (the same for every
/// request of the run, made once).
#[derive(Clone, Debug)]
pub struct RunTrace {
    key: TraceKey,
    sampling: Sampling,
    state: HeaderValue,
    /// Where sampled requests' client spans go (`--otlp`); `None` keeps none.
    spans: Option<trace::Spans>,
}

/// The trace headers of one attempt: its `traceparent` (on the stack, formatted without
/// allocating) and the run's `tracestate`.
#[derive(Clone, Copy)]
pub(crate) struct TraceHeaders<'a> {
    pub parent: [u8; TRACEPARENT_LEN],
    pub state: &'a HeaderValue,
    /// The trace and whether it is sampled, for the request log.
    pub trace: TraceId,
    pub sampled: bool,
    /// The attempt's own span: the `traceparent`'s parent id.
    pub span: SpanId,
}

impl RunTrace {
    /// The trace context of a run with `run_id` asked by `spec`; `None` without one (or a
    /// run id that is not 32 hex digits, which [`crate::run`] never makes).
    pub fn of(spec: Option<barrage_plan::TraceSpec>, run_id: &str, spans: Option<trace::Spans>) -> Option<RunTrace> {
        let spec = spec?;
        let key = TraceKey::of_run(run_id)?;
        let sampling = Sampling::new(spec.sample)?;
        let state = HeaderValue::from_str(&trace::tracestate(run_id, &sampling)).ok()?;
        Some(RunTrace { key, sampling, state, spans })
    }

    /// Where sampled requests' client spans go, if anywhere.
    pub(crate) fn spans(&self) -> Option<&trace::Spans> {
        self.spans.as_ref()
    }

    /// The headers of attempt `attempt` of step `step` (0: a plain request; a flow's steps
    /// from 1) of the request (or flow) numbered `number`.
    #[inline]
    pub(crate) fn headers(&self, number: u64, step: u32, attempt: u32) -> TraceHeaders<'_> {
        let id = self.key.trace_id(number);
        let sampled = self.sampling.sampled(id);
        let span = self.key.span_id(number, step, attempt);
        let parent = trace::traceparent(id, span, sampled);
        TraceHeaders { parent, state: &self.state, trace: id, sampled, span }
    }
}

/// `traceparent` and `tracestate` as HTTP/1.1 header lines, inserted before the blank line
/// that ends the head just written into `head`.
pub(crate) fn put_h1(t: &TraceHeaders<'_>, head: &mut Vec<u8>) {
    debug_assert!(head.ends_with(b"\r\n\r\n"));
    head.truncate(head.len() - 2);
    head.extend_from_slice(b"traceparent: ");
    head.extend_from_slice(&t.parent);
    head.extend_from_slice(b"\r\ntracestate: ");
    head.extend_from_slice(t.state.as_bytes());
    head.extend_from_slice(b"\r\n\r\n");
}

/// `traceparent` and `tracestate` as HPACK literals without indexing, appended to an
/// HTTP/2 header block: a value unique to each request would only evict what the dynamic
/// table holds (barrage's encoder uses none, and a server's decoder must not keep them).
pub(crate) fn put_h2(t: &TraceHeaders<'_>, block: &mut Vec<u8>) {
    crate::http::hpack::put_literal(block, 0, b"traceparent", &t.parent);
    crate::http::hpack::put_literal(block, 0, b"tracestate", t.state.as_bytes());
}

/// `traceparent` and `tracestate` added to an HTTP/3 request's headers.
pub(crate) fn put_h3(t: &TraceHeaders<'_>, headers: &mut http::HeaderMap) {
    let parent = HeaderValue::from_bytes(&t.parent).expect("a traceparent is visible ASCII");
    headers.insert(http::HeaderName::from_static("traceparent"), parent);
    headers.insert(http::HeaderName::from_static("tracestate"), t.state.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    #[test]
    fn headers_are_the_trace_modules_and_the_encoders_append_them() {
        let t = RunTrace::of(Some(barrage_plan::TraceSpec { sample: 0.25 }), RUN, None).unwrap();
        let h = t.headers(7, 0, 1);
        let key = TraceKey::of_run(RUN).unwrap();
        assert_eq!(h.parent, trace::traceparent(key.trace_id(7), key.span_id(7, 0, 1), h.sampled));
        assert_eq!(h.sampled, Sampling::new(0.25).unwrap().sampled(key.trace_id(7)));
        assert_ne!(t.headers(7, 0, 2).parent, h.parent, "a retry is its own span");
        let mut head = b"GET / HTTP/1.1\r\nhost: a\r\n\r\n".to_vec();
        put_h1(&h, &mut head);
        let text = String::from_utf8(head.clone()).unwrap();
        assert!(text.starts_with("GET / HTTP/1.1\r\nhost: a\r\ntraceparent: 00-4bf92f3577b34da6"), "{text}");
        assert!(text.ends_with("\r\ntracestate: barrage=4bf92f3577b34da6,ot=th:c\r\n\r\n"), "{text}");
        let added = head.len() - b"GET / HTTP/1.1\r\nhost: a\r\n\r\n".len();
        let http1 = barrage_plan::Protocol::Http1 { keepalive: true };
        assert_eq!(barrage_plan::TraceSpec { sample: 0.25 }.header_bytes(&http1) as usize, added);
        assert_eq!(70, "traceparent: \r\n".len() + TRACEPARENT_LEN);
        let mut block = Vec::new();
        put_h2(&h, &mut block);
        let fields = crate::http::hpack::decode_list(&block);
        assert_eq!(fields[0], ("traceparent".into(), String::from_utf8(h.parent.to_vec()).unwrap()));
        assert_eq!(fields[1], ("tracestate".into(), "barrage=4bf92f3577b34da6,ot=th:c".into()));
        assert_eq!(block[0], 0, "a literal without indexing, its name literal");
        assert_eq!(
            barrage_plan::TraceSpec { sample: 0.25 }.header_bytes(&barrage_plan::Protocol::http2(1)) as usize,
            block.len()
        );
        assert!(RunTrace::of(None, RUN, None).is_none());
    }

    /// The bytes the plan's view reports are what the encoders add, at every share (the
    /// threshold's digits vary: 1 at 1 and 0.25, 14 at 0.01).
    #[test]
    fn the_bytes_reported_are_the_bytes_sent() {
        for (sample, http1) in [(1.0, 116), (0.25, 116), (0.01, 129)] {
            let spec = barrage_plan::TraceSpec { sample };
            let t = RunTrace::of(Some(spec), RUN, None).unwrap();
            let h = t.headers(3, 0, 1);
            let mut head = b"GET / HTTP/1.1\r\n\r\n".to_vec();
            put_h1(&h, &mut head);
            let added = (head.len() - b"GET / HTTP/1.1\r\n\r\n".len()) as u64;
            assert_eq!((spec.header_bytes(&barrage_plan::Protocol::Http1 { keepalive: true }), added), (http1, http1));
            let mut block = Vec::new();
            put_h2(&h, &mut block);
            assert_eq!(spec.header_bytes(&barrage_plan::Protocol::http2(1)), block.len() as u64, "{sample}");
        }
    }
}
