//! barrage's measurements over OTLP: each interval's histograms as exponential histograms
//! converted from barrage's own HDR histograms ([`expo`], no sample recorded twice), its
//! counters ([`metrics`]), sampled requests as client spans ([`spans`]), sent by a
//! background thread that never slows the run ([`export`]), configured as the OpenTelemetry
//! SDKs are ([`config`]).

pub mod config;
pub mod expo;
pub mod export;
pub mod metrics;
pub mod spans;

pub use config::{resolve, Config, ConfigError, Flags, Protocol, Temporality};
pub use export::{ExportReport, Exporter};
pub use metrics::MetricsEncoder;
pub use spans::{encode_spans, SpanSink};
