//! `--otlp*`: the run's metrics (and sampled requests' spans) pushed to an OpenTelemetry
//! collector; the `OTEL_*` environment variables fill in what the flags leave out.

use clap::builder::PossibleValuesParser;
use clap::Args;

/// Export over OTLP (heading: OpenTelemetry).
#[derive(Args, Debug, Clone, Default)]
pub struct OtelArgs {
    /// Push each interval's metrics over OTLP to the collector at URL (http://HOST:PORT;
    /// gRPC's origin, or OTLP/HTTP's base, to which /v1/metrics and /v1/traces are added).
    /// Without it, OTEL_EXPORTER_OTLP_ENDPOINT (and _METRICS_ENDPOINT, _TRACES_ENDPOINT)
    /// asks for the export; OTEL_SDK_DISABLED=true turns it off. A slow or absent collector
    /// never slows or fails the run: what it missed is one line on stderr.
    #[arg(long, value_name = "URL", help_heading = "OpenTelemetry")]
    pub otlp: Option<String>,
    /// OTLP over gRPC or HTTP with protobuf bodies [default: OTEL_EXPORTER_OTLP_PROTOCOL,
    /// else http/protobuf, as the OpenTelemetry SDKs default].
    #[arg(long, value_name = "PROTOCOL", value_parser = PossibleValuesParser::new(["grpc", "http/protobuf"]), help_heading = "OpenTelemetry")]
    pub otlp_protocol: Option<String>,
    /// Each point holds its own interval (delta) or everything since the run started
    /// (cumulative) [default: OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE, else delta].
    #[arg(long, value_name = "TEMPORALITY", value_parser = PossibleValuesParser::new(["delta", "cumulative"]), help_heading = "OpenTelemetry")]
    pub otlp_temporality: Option<String>,
    /// The exponential histograms' scale, -10 to 20: buckets 2^(2^-N) apart, so a quantile
    /// read from them is within half of 2^(2^-N)-1 (plus barrage's own 0.05%) of the
    /// report's: 8 → 0.14%, 4 → 2.2%, 0 → 50%. Lowered as needed to keep a point to 4096
    /// buckets [default: 8].
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-10..=20), help_heading = "OpenTelemetry")]
    pub otlp_scale: Option<i32>,
}

impl OtelArgs {
    /// The first of the flags given, if any.
    pub fn given(&self) -> Option<&'static str> {
        [
            ("otlp", self.otlp.is_some()),
            ("otlp-protocol", self.otlp_protocol.is_some()),
            ("otlp-temporality", self.otlp_temporality.is_some()),
            ("otlp-scale", self.otlp_scale.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }

    /// The flags as the exporter's configuration takes them.
    pub fn flags(&self) -> barrage_otel::Flags {
        barrage_otel::Flags {
            endpoint: self.otlp.clone(),
            protocol: self.otlp_protocol.clone(),
            temporality: self.otlp_temporality.clone(),
            scale: self.otlp_scale,
        }
    }
}
