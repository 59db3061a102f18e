//! The flags of trace context (heading: Tracing), which every mode that runs load shares.

use super::parse_positive_fraction;
use clap::Args;

/// W3C trace context on every HTTP request (heading: Tracing).
#[derive(Args, Debug, Clone, Default)]
pub struct TraceArgs {
    /// Send a W3C traceparent (and tracestate) header on every HTTP request, its trace id
    /// derived from the run and the request's number (`barrage report --trace-id` finds it
    /// again). Off by default: about 70 bytes more per request, never compressed by HTTP/2.
    #[arg(long, help_heading = "Tracing")]
    pub trace_context: bool,
    /// The share of requests whose traceparent says sampled (the same requests every
    /// time for a run); implies --trace-context. [default: 1]
    #[arg(long, value_name = "P", value_parser = parse_positive_fraction, help_heading = "Tracing")]
    pub trace_sample: Option<f64>,
}

impl TraceArgs {
    /// The plan's trace context: `--trace-sample` alone implies `--trace-context`.
    pub fn spec(&self) -> Option<barrage_plan::TraceSpec> {
        (self.trace_context || self.trace_sample.is_some())
            .then(|| barrage_plan::TraceSpec { sample: self.trace_sample.unwrap_or(1.0) })
    }
}
