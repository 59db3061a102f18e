//! The flags of trace context (heading: Tracing), which every mode that runs load shares,
//! and `--trace-url`, which `run` and `report` share.

use super::parse_positive_fraction;
use barrage_report::{HtmlOptions, TraceUrl};
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
    #[command(flatten)]
    pub links: TraceUrlArgs,
}

/// Where the HTML report links trace ids (heading: Tracing).
#[derive(Args, Debug, Clone, Default)]
pub struct TraceUrlArgs {
    /// Make the trace ids of the HTML report links: an http(s) URL in which {trace_id}
    /// (and {span_id}, the client span) are replaced, e.g. Jaeger's
    /// http://localhost:16686/trace/{trace_id}. Without it, BARRAGE_TRACE_URL; without
    /// either, trace ids are text to copy.
    #[arg(long, value_name = "TEMPLATE", value_parser = |s: &str| s.parse::<TraceUrl>(), help_heading = "Tracing")]
    pub trace_url: Option<TraceUrl>,
}

/// The environment variable read when `--trace-url` is not given.
pub const TRACE_URL_ENV: &str = "BARRAGE_TRACE_URL";

impl TraceArgs {
    /// The plan's trace context: `--trace-sample` alone implies `--trace-context`.
    pub fn spec(&self) -> Option<barrage_plan::TraceSpec> {
        (self.trace_context || self.trace_sample.is_some())
            .then(|| barrage_plan::TraceSpec { sample: self.trace_sample.unwrap_or(1.0) })
    }
}

impl TraceUrlArgs {
    /// How the HTML report is rendered: `--trace-url`, else [`TRACE_URL_ENV`] (checked as
    /// the flag is, an error naming it), else no links. An empty variable is no template.
    pub fn html_options(&self) -> anyhow::Result<HtmlOptions> {
        let trace_url = match (&self.trace_url, std::env::var(TRACE_URL_ENV)) {
            (Some(t), _) => Some(t.clone()),
            (None, Ok(v)) if !v.is_empty() => {
                Some(v.parse::<TraceUrl>().map_err(|e| anyhow::anyhow!("{TRACE_URL_ENV} (as --trace-url): {e}"))?)
            }
            (None, Ok(_)) => None,
            (None, Err(std::env::VarError::NotPresent)) => None,
            (None, Err(e)) => anyhow::bail!("{TRACE_URL_ENV}: {e}"),
        };
        Ok(HtmlOptions { trace_url, ..Default::default() })
    }
}
