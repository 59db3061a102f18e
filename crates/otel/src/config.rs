//! Where and how to export: `--otlp*` flags over the `OTEL_*` environment variables, read as
//! the OpenTelemetry SDKs read them (the specification's "OTLP Exporter Configuration").
//! Header values are credentials: they are sent and never shown; [`Headers`]' `Debug`
//! and every error here name a header without its value.

use std::time::Duration;

/// How requests travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/gRPC (usually port 4317).
    Grpc,
    /// OTLP/HTTP with protobuf bodies (usually port 4318), the SDKs' default.
    HttpProtobuf,
}

impl Protocol {
    /// Its name, as [`Protocol::parse`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
        }
    }

    /// `grpc` or `http/protobuf`, as `OTEL_EXPORTER_OTLP_PROTOCOL` spells them.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s.trim() {
            "grpc" => Some(Protocol::Grpc),
            "http/protobuf" => Some(Protocol::HttpProtobuf),
            _ => None,
        }
    }
}

/// Histograms per interval (delta) or from the run's start (cumulative).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Temporality {
    /// Each point holds its own interval.
    Delta,
    /// Each point holds everything since the run started.
    Cumulative,
}

impl Temporality {
    /// Its name, as [`Temporality::parse`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Temporality::Delta => "delta",
            Temporality::Cumulative => "cumulative",
        }
    }

    /// `delta` or `cumulative` (ASCII case ignored, as the SDKs read the preference; its
    /// `lowmemory` is delta for histograms and counters alike here).
    pub fn parse(s: &str) -> Option<Temporality> {
        match s.trim().to_ascii_lowercase().as_str() {
            "delta" | "lowmemory" => Some(Temporality::Delta),
            "cumulative" => Some(Temporality::Cumulative),
            _ => None,
        }
    }
}

/// Request headers: sent, never printed (`Debug` shows names only).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers(pub Vec<(String, String)>);

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(k, _)| format!("{k}: <redacted>"))).finish()
    }
}

/// What the flags asked for; `None` where a flag was not given.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// `--otlp URL`.
    pub endpoint: Option<String>,
    /// `--otlp-protocol`.
    pub protocol: Option<String>,
    /// `--otlp-temporality`.
    pub temporality: Option<String>,
    /// `--otlp-scale`.
    pub scale: Option<i32>,
}

/// A complete export configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where metrics go: the full URL for HTTP (`…/v1/metrics`), the origin for gRPC.
    pub metrics_url: String,
    /// Where spans go, likewise.
    pub traces_url: String,
    /// How.
    pub protocol: Protocol,
    /// Sent with every export request.
    pub headers: Headers,
    /// Each export request's own deadline.
    pub timeout: Duration,
    /// Delta or cumulative.
    pub temporality: Temporality,
    /// The exponential histograms' scale (finest; see [`crate::expo::MAX_BUCKETS`]).
    pub scale: i32,
    /// `service.name` and `OTEL_RESOURCE_ATTRIBUTES`' pairs.
    pub resource: Vec<(String, String)>,
}

/// A flag or variable with a value that cannot be used: its name and what was wrong.
#[derive(Debug, thiserror::Error)]
#[error("{name} {value}: {why}")]
pub struct ConfigError {
    /// The flag or variable.
    pub name: String,
    /// The value as given (never a header's value).
    pub value: String,
    /// What would be valid.
    pub why: String,
}

fn bad(name: &str, value: &str, why: &str) -> ConfigError {
    ConfigError { name: name.into(), value: format!("'{value}'"), why: why.into() }
}

/// The configuration from `flags` over the environment `env` (a lookup, so tests need not
/// touch the process's); `None` when nothing asks for an export or `OTEL_SDK_DISABLED` is
/// true. Flags win over variables, a signal's own variable over the general one.
pub fn resolve(flags: &Flags, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Config>, ConfigError> {
    let var = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let general = flags.endpoint.clone().or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"));
    let metrics_own = var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").filter(|_| flags.endpoint.is_none());
    let traces_own = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").filter(|_| flags.endpoint.is_none());
    if general.is_none() && metrics_own.is_none() && traces_own.is_none() {
        return Ok(None);
    }
    let protocol = match (&flags.protocol, var("OTEL_EXPORTER_OTLP_PROTOCOL")) {
        (Some(p), _) => {
            Protocol::parse(p).ok_or_else(|| bad("--otlp-protocol", p, "expected grpc or http/protobuf"))?
        }
        (None, Some(p)) => Protocol::parse(&p)
            .ok_or_else(|| bad("OTEL_EXPORTER_OTLP_PROTOCOL", &p, "expected grpc or http/protobuf"))?,
        (None, None) => Protocol::HttpProtobuf,
    };
    let default = match protocol {
        Protocol::Grpc => "http://localhost:4317",
        Protocol::HttpProtobuf => "http://localhost:4318",
    };
    let name = if flags.endpoint.is_some() { "--otlp" } else { "OTEL_EXPORTER_OTLP_ENDPOINT" };
    let base = general.as_deref().map(|u| check_url(name, u)).transpose()?.unwrap_or(default.into());
    let signal = |own: Option<String>, var_name: &str, path: &str| -> Result<String, ConfigError> {
        match own {
            // A signal's own endpoint is used as given (the specification's rule).
            Some(u) => check_url(var_name, &u),
            None if protocol == Protocol::HttpProtobuf => Ok(format!("{}/{path}", base.trim_end_matches('/'))),
            None => Ok(base.clone()),
        }
    };
    Ok(Some(Config {
        metrics_url: signal(metrics_own, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "v1/metrics")?,
        traces_url: signal(traces_own, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "v1/traces")?,
        protocol,
        headers: var("OTEL_EXPORTER_OTLP_HEADERS").map(|h| headers(&h)).transpose()?.unwrap_or_default(),
        timeout: var("OTEL_EXPORTER_OTLP_TIMEOUT").map(|t| timeout(&t)).transpose()?.unwrap_or(Duration::from_secs(10)),
        temporality: temporality(flags, &var)?,
        scale: scale(flags.scale)?,
        resource: resource(&var)?,
    }))
}

fn temporality(flags: &Flags, var: &dyn Fn(&str) -> Option<String>) -> Result<Temporality, ConfigError> {
    const WHY: &str = "expected delta or cumulative";
    match (&flags.temporality, var("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE")) {
        (Some(t), _) => Temporality::parse(t).ok_or_else(|| bad("--otlp-temporality", t, WHY)),
        (None, Some(t)) => {
            Temporality::parse(&t).ok_or_else(|| bad("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", &t, WHY))
        }
        (None, None) => Ok(Temporality::Delta),
    }
}

fn scale(s: Option<i32>) -> Result<i32, ConfigError> {
    match s.unwrap_or(8) {
        s @ crate::expo::MIN_SCALE..=crate::expo::MAX_SCALE => Ok(s),
        s => Err(bad("--otlp-scale", &s.to_string(), "expected -10 to 20")),
    }
}

/// An `http://` or `https://` URL with a host; the value named in errors is the URL with
/// any password taken out.
fn check_url(name: &str, url: &str) -> Result<String, ConfigError> {
    let shown = barrage_metrics::secrets::Redaction::default().url(url).into_owned();
    let uri: http::Uri = url.trim().parse().map_err(|e| bad(name, &shown, &format!("not a URL ({e})")))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http"), Some(_)) => Ok(url.trim().to_string()),
        // The exporter has no TLS yet: a collector on the same machine or network is what
        // load generators send to; saying so beats a failure at every interval.
        (Some("https"), _) => Err(bad(name, &shown, "https is not supported yet: use http:// (a local collector)")),
        _ => Err(bad(name, &shown, "expected http://HOST:PORT")),
    }
}

/// `k=v,k2=v2`, each side percent-decoded (W3C Baggage's format, as the specification says).
fn headers(text: &str) -> Result<Headers, ConfigError> {
    const NAME: &str = "OTEL_EXPORTER_OTLP_HEADERS";
    let mut out = Vec::new();
    for (n, pair) in text.split(',').filter(|p| !p.trim().is_empty()).enumerate() {
        // Never the value in an error: it is a credential.
        let at = format!("(pair {})", n + 1);
        let (k, v) = pair.split_once('=').ok_or_else(|| bad(NAME, &at, "expected key=value,…"))?;
        let k = percent_decode(k.trim()).ok_or_else(|| bad(NAME, &at, "bad percent-encoding in a name"))?;
        let v = percent_decode(v.trim()).ok_or_else(|| bad(NAME, &at, "bad percent-encoding in a value"))?;
        let valid = http::HeaderName::from_bytes(k.as_bytes()).is_ok() && http::HeaderValue::from_str(&v).is_ok();
        if !valid {
            return Err(bad(NAME, &at, "not a valid header name and value"));
        }
        out.push((k.to_ascii_lowercase(), v));
    }
    Ok(Headers(out))
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Milliseconds, as the specification has it.
fn timeout(t: &str) -> Result<Duration, ConfigError> {
    match t.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(bad("OTEL_EXPORTER_OTLP_TIMEOUT", t, "expected milliseconds, above 0")),
    }
}

/// `service.name` (from `OTEL_SERVICE_NAME`, else the attributes', else `barrage`) and the
/// other `OTEL_RESOURCE_ATTRIBUTES` pairs.
fn resource(var: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>, ConfigError> {
    const NAME: &str = "OTEL_RESOURCE_ATTRIBUTES";
    let mut attrs: Vec<(String, String)> = Vec::new();
    for pair in var(NAME).unwrap_or_default().split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = pair.split_once('=').ok_or_else(|| bad(NAME, pair, "expected key=value,…"))?;
        let k = percent_decode(k.trim()).ok_or_else(|| bad(NAME, pair, "bad percent-encoding"))?;
        let v = percent_decode(v.trim()).ok_or_else(|| bad(NAME, pair, "bad percent-encoding"))?;
        attrs.retain(|(old, _)| *old != k);
        attrs.push((k, v));
    }
    let service = var("OTEL_SERVICE_NAME").map(|s| s.trim().to_string());
    match (service, attrs.iter().any(|(k, _)| k == "service.name")) {
        (Some(s), _) => {
            attrs.retain(|(k, _)| k != "service.name");
            attrs.insert(0, ("service.name".into(), s));
        }
        (None, false) => attrs.insert(0, ("service.name".into(), "barrage".into())),
        (None, true) => {}
    }
    Ok(attrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn nothing_asked_nothing_exported_and_disabled_wins() {
        assert!(resolve(&Flags::default(), &env(&[])).unwrap().is_none());
        let flags = Flags { endpoint: Some("http://127.0.0.1:4318".into()), ..Default::default() };
        assert!(resolve(&flags, &env(&[("OTEL_SDK_DISABLED", "TRUE")])).unwrap().is_none());
        assert!(resolve(&flags, &env(&[("OTEL_SDK_DISABLED", "false")])).unwrap().is_some());
    }

    #[test]
    fn endpoints_as_the_specification_builds_them() {
        let c =
            resolve(&Flags::default(), &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])).unwrap().unwrap();
        assert_eq!((c.protocol, c.metrics_url.as_str()), (Protocol::HttpProtobuf, "http://c:4318/v1/metrics"));
        assert_eq!(c.traces_url, "http://c:4318/v1/traces");
        let e = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/custom"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        let c = resolve(&Flags::default(), &e).unwrap().unwrap();
        assert_eq!(
            (c.protocol, c.metrics_url.as_str(), c.traces_url.as_str()),
            (Protocol::Grpc, "http://m:9/custom", "http://c:4318")
        );
        // The flag wins over every endpoint variable and the protocol variable.
        let flags =
            Flags { endpoint: Some("http://f:1".into()), protocol: Some("http/protobuf".into()), ..Default::default() };
        let c = resolve(&flags, &e).unwrap().unwrap();
        assert_eq!((c.protocol, c.metrics_url.as_str()), (Protocol::HttpProtobuf, "http://f:1/v1/metrics"));
    }

    #[test]
    fn headers_resource_timeout_temporality_and_scale() {
        let e = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret, x-tenant = a%2Cb"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci,service.name=x"),
            ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "Cumulative"),
        ]);
        let c = resolve(&Flags::default(), &e).unwrap().unwrap();
        assert_eq!(
            c.headers.0,
            vec![("authorization".into(), "Bearer s3cret".into()), ("x-tenant".into(), "a,b".into())]
        );
        assert!(!format!("{c:?}").contains("s3cret"));
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert_eq!(c.resource[1], ("service.name".into(), "x".into()));
        assert_eq!((c.temporality, c.scale), (Temporality::Cumulative, 8));
        let c = resolve(
            &Flags::default(),
            &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:1"), ("OTEL_SERVICE_NAME", "lt")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.resource, vec![("service.name".into(), "lt".into())]);
    }

    #[test]
    fn bad_values_name_the_flag_or_variable_and_never_a_secret() {
        let base = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")];
        // (variables, flags, the error's start)
        type Case<'a> = (&'a [(&'a str, &'a str)], Flags, &'a str);
        let cases: &[Case] = &[
            (&[("OTEL_EXPORTER_OTLP_PROTOCOL", "udp")], Flags::default(), "OTEL_EXPORTER_OTLP_PROTOCOL 'udp'"),
            (&[], Flags { protocol: Some("json".into()), ..Default::default() }, "--otlp-protocol 'json'"),
            (&[], Flags { scale: Some(21), ..Default::default() }, "--otlp-scale '21'"),
            (&[], Flags { temporality: Some("x".into()), ..Default::default() }, "--otlp-temporality 'x'"),
            (&[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")], Flags::default(), "OTEL_EXPORTER_OTLP_TIMEOUT 'soon'"),
            (
                &[("OTEL_EXPORTER_OTLP_HEADERS", "authorization=s3cret\u{1}x")],
                Flags::default(),
                "OTEL_EXPORTER_OTLP_HEADERS",
            ),
            (&[("OTEL_EXPORTER_OTLP_HEADERS", "s3cret")], Flags::default(), "OTEL_EXPORTER_OTLP_HEADERS '(pair 1)'"),
            (
                &[],
                Flags { endpoint: Some("ftp://u:s3cret@h/".into()), ..Default::default() },
                "--otlp 'ftp://u:<redacted>@h/'",
            ),
        ];
        for (vars, flags, want) in cases {
            let all: Vec<(&str, &str)> = base.iter().chain(vars.iter()).copied().collect();
            let e = resolve(flags, &env(&all)).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
            assert!(!e.contains("s3cret") && !e.contains('\n'), "{e}");
        }
    }
}
