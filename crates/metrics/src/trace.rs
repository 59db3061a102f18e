//! Trace context: the W3C `traceparent` of each request, derived from the run and the
//! request's number alone, so nothing is stored per request, shards never collide, and any
//! trace id a server recorded leads back to its request ([`TraceKey::number_of`]).
//!
//! A trace id is 128 bits: the first 64 are the run id's first 64 (so a trace backend's
//! search by prefix finds a run, and two runs never share an id), the last 64 a keyed
//! bijection of the request's number ([`mix`]): they look random, as W3C asks of a trace
//! id and as the OpenTelemetry samplers that read its low bits expect, and they invert.
//!
//! Sampling is OpenTelemetry's consistent probability sampling: a request is sampled when
//! the trace id's low 56 bits (its randomness) are at or above the threshold of the
//! probability ([`Sampling`]). The decision is a function of the number, so every shard,
//! thread and rerun of a run's stream samples the same requests, and a server's consistent
//! sampler given the same threshold (in `tracestate`, `ot=th:…`) keeps exactly those.

use serde::{Deserialize, Serialize};

/// The length of a `traceparent` value: `00-` 32 hex `-` 16 hex `-` 2 hex.
pub const TRACEPARENT_LEN: usize = 55;

/// The 56 low bits of a trace id that OpenTelemetry's consistent sampling reads.
const RANDOM_BITS: u32 = 56;

/// What a run derives its requests' trace ids from: its run id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceKey {
    /// The run id's first 64 bits: every trace id of the run starts with them.
    high: u64,
    /// The run id's last 64 bits: the key of the numbers' bijection.
    key: u64,
}

impl TraceKey {
    /// The key of a run with `run_id` (32 hex digits, see `Launch::run_id`); `None` for
    /// anything else (a file written before run ids).
    pub fn of_run(run_id: &str) -> Option<TraceKey> {
        let id = u128::from_str_radix(run_id, 16).ok().filter(|_| run_id.len() == 32)?;
        Some(TraceKey { high: (id >> 64) as u64, key: id as u64 })
    }

    /// The trace id of request `number` (its arrival's number in the run's stream).
    pub fn trace_id(&self, number: u64) -> TraceId {
        TraceId(u128::from(self.high) << 64 | u128::from(mix(number ^ self.key)))
    }

    /// The number of the request whose trace id is `id`, when `id` is one of this run's.
    pub fn number_of(&self, id: TraceId) -> Option<u64> {
        ((id.0 >> 64) as u64 == self.high).then(|| unmix(id.0 as u64) ^ self.key)
    }

    /// The id of the span of attempt `attempt` (1, 2, …) of step `step` (0 outside flows)
    /// of request `number`: never zero, distinct within the trace.
    pub fn span_id(&self, number: u64, step: u32, attempt: u32) -> SpanId {
        let within = (u64::from(step) << 32) | u64::from(attempt);
        let id = mix(mix(number ^ self.key) ^ within.rotate_left(29) ^ self.high);
        SpanId(if id == 0 { 1 } else { id })
    }
}

/// A trace id: 128 bits, 32 lowercase hex digits on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub u128);

impl TraceId {
    /// Its 16 bytes, as OTLP carries them.
    pub fn bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// The 56 low bits OpenTelemetry's consistent sampling reads as the trace's randomness.
    pub fn randomness(self) -> u64 {
        (self.0 as u64) & ((1 << RANDOM_BITS) - 1)
    }
}

impl std::fmt::Display for TraceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl std::str::FromStr for TraceId {
    type Err = String;
    /// 32 hex digits, or a whole `traceparent` value (its trace id is taken).
    fn from_str(s: &str) -> Result<TraceId, String> {
        let hex = match s.split('-').collect::<Vec<_>>()[..] {
            [_, id, _, _] => id,
            _ => s,
        };
        if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("'{s}' is not a trace id: expected 32 hex digits or a traceparent"));
        }
        u128::from_str_radix(hex, 16).map(TraceId).map_err(|e| format!("'{s}': {e}"))
    }
}

/// A span id: 64 bits, never zero, 16 lowercase hex digits on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpanId(pub u64);

impl SpanId {
    /// Its 8 bytes, as OTLP carries them.
    pub fn bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
}

impl std::fmt::Display for SpanId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// Which requests are sampled: probability `p`, as OpenTelemetry's consistent probability
/// sampling decides it from the trace id's randomness against a 56-bit threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// The probability asked, 0 < p ≤ 1.
    pub probability: f64,
    /// Rejected below this randomness: 2⁵⁶ − round(p·2⁵⁶).
    threshold: u64,
}

impl Sampling {
    /// Sampling with probability `p`; `None` unless 0 < p ≤ 1.
    pub fn new(p: f64) -> Option<Sampling> {
        if !(p > 0.0 && p <= 1.0) {
            return None;
        }
        // 2⁵⁶ − round(p·2⁵⁶), as the specification computes it: p·2⁵⁶ is exact in a
        // double, (1 − p)·2⁵⁶ would lose p's low bits.
        let kept = (p * (1u64 << RANDOM_BITS) as f64).round() as u64;
        Some(Sampling { probability: p, threshold: ((1u64 << RANDOM_BITS) - kept.max(1)).min((1 << RANDOM_BITS) - 1) })
    }

    /// Whether the request with trace id `id` is sampled.
    pub fn sampled(&self, id: TraceId) -> bool {
        id.randomness() >= self.threshold
    }

    /// The threshold as OpenTelemetry's `tracestate` carries it (`ot=th:` then 14 hex digits
    /// without trailing zeros; `0` for everything sampled).
    pub fn threshold_hex(&self) -> String {
        if self.threshold == 0 {
            return "0".into();
        }
        let hex = format!("{:014x}", self.threshold);
        hex.trim_end_matches('0').to_string()
    }
}

/// The `traceparent` value of a request: version 00, its trace and span ids, sampled or not.
/// Written into a stack buffer digit by digit: a request's hot path formats nothing.
pub fn traceparent(trace: TraceId, span: SpanId, sampled: bool) -> [u8; TRACEPARENT_LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = *b"00-00000000000000000000000000000000-0000000000000000-00";
    for (i, b) in out[3..35].iter_mut().enumerate() {
        *b = HEX[((trace.0 >> (124 - 4 * i)) & 0xf) as usize];
    }
    for (i, b) in out[36..52].iter_mut().enumerate() {
        *b = HEX[((span.0 >> (60 - 4 * i)) & 0xf) as usize];
    }
    out[54] = b'0' + u8::from(sampled);
    out
}

/// The `tracestate` value of a run's requests: `barrage=` the run id's first 16 hex digits
/// (which run the traffic is), then OpenTelemetry's sampling threshold, so a downstream
/// consistent sampler keeps what barrage sampled.
pub fn tracestate(run_id: &str, sampling: &Sampling) -> String {
    let run = run_id.get(..16).unwrap_or(run_id);
    format!("barrage={run},ot=th:{}", sampling.threshold_hex())
}

/// One sampled request as a client span: what the engine hands the exporter (see the
/// `barrage-otel` crate), plain data with its times on the wall clock.
#[derive(Clone, Debug, PartialEq)]
pub struct SpanRecord {
    /// Its trace: the arrival's (a flow's steps share their flow's).
    pub trace: TraceId,
    /// Its own id, the `traceparent`'s parent id the server continues from.
    pub span: SpanId,
    /// A flow's span, for a step's request; `None` for a plain request.
    pub parent: Option<SpanId>,
    /// The request's number in the run's stream.
    pub number: u64,
    /// Attempt 1, then 2, 3… for retries.
    pub attempt: u32,
    /// When the schedule said it should start, µs since the Unix epoch.
    pub intended_unix_us: u64,
    /// When it actually started (the span's start), µs since the Unix epoch.
    pub started_unix_us: u64,
    /// When it ended (the span's end), µs since the Unix epoch.
    pub ended_unix_us: u64,
    /// Each phase that happened, as in [`crate::Sample::phases`].
    pub phases: [Option<std::time::Duration>; crate::sample::PHASE_COUNT],
    /// Status or error.
    pub outcome: crate::Outcome,
    /// Rejected by its flow step's checks or captures.
    pub rejected: bool,
    /// The method.
    pub method: &'static str,
    /// The target as its template or name says it, never the filled URL: bounded cardinality.
    pub target: std::sync::Arc<str>,
    /// The server's host and port.
    pub server: std::sync::Arc<str>,
    /// A flow's step name, and the names (never the values) of what it captured.
    pub step: Option<std::sync::Arc<str>>,
    /// Names of the step's captures.
    pub captures: Vec<std::sync::Arc<str>>,
    /// Bytes in and out.
    pub bytes_in: u64,
    /// Bytes out.
    pub bytes_out: u64,
    /// What a cache did.
    pub cache: crate::CacheStatus,
}

/// Where the engine hands each sampled request's span: the OTLP exporter's queue, which
/// never blocks (a full one drops and counts).
pub trait SpanOut: Send + Sync {
    /// Takes `span`, or drops it.
    fn put(&self, span: SpanRecord);
}

/// A run's [`SpanOut`], as the engine's settings hold it.
#[derive(Clone)]
pub struct Spans(pub std::sync::Arc<dyn SpanOut>);

impl std::fmt::Debug for Spans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Spans")
    }
}

/// A sampled request kept as an exemplar: its ids and its latency, so a histogram's bucket
/// (OTLP, OpenMetrics) or a chart's p99 point (the HTML report) can name a trace the
/// server recorded for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exemplar {
    /// Its trace.
    pub trace: u128,
    /// Its client span (the server span's parent).
    pub span: u64,
    /// Its latency from the intended start (corrected), µs.
    pub latency_us: u64,
    /// When it ended, ms from the run's start.
    pub ended_ms: u32,
}

impl Exemplar {
    /// Its trace id.
    pub fn trace_id(&self) -> TraceId {
        TraceId(self.trace)
    }

    /// Its span id.
    pub fn span_id(&self) -> SpanId {
        SpanId(self.span)
    }
}

/// Exemplars an interval keeps: its slowest sampled requests, the ones a p99 spike is made of.
pub const EXEMPLARS_PER_INTERVAL: usize = 8;

/// Keeps `e` among `kept` if it is one of the [`EXEMPLARS_PER_INTERVAL`] slowest (ties: the
/// first kept stays). At most one comparison with each kept: cheap per sampled request.
pub fn keep_exemplar(kept: &mut Vec<Exemplar>, e: Exemplar) {
    if kept.len() < EXEMPLARS_PER_INTERVAL {
        kept.push(e);
        return;
    }
    let (i, fastest) = kept.iter().enumerate().min_by_key(|(_, k)| k.latency_us).expect("full");
    if e.latency_us > fastest.latency_us {
        kept[i] = e;
    }
}

/// SplitMix64's finalizer: a bijection of 64-bit values that scatters consecutive ones.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The inverse of [`mix`].
fn unmix(mut z: u64) -> u64 {
    z = unshift(z, 31).wrapping_mul(inverse(0x94d0_49bb_1331_11eb));
    z = unshift(z, 27).wrapping_mul(inverse(0xbf58_476d_1ce4_e5b9));
    unshift(z, 30)
}

/// The inverse of `z ^ (z >> s)`.
fn unshift(z: u64, s: u32) -> u64 {
    let mut x = z;
    let mut k = s;
    while k < 64 {
        x = z ^ (x >> s);
        k += s;
    }
    z ^ (x >> s)
}

/// The multiplicative inverse of odd `a` modulo 2⁶⁴ (Newton's iteration).
const fn inverse(a: u64) -> u64 {
    let mut x = a;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        i += 1;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const RUN: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    #[test]
    fn a_trace_id_leads_back_to_its_request_and_only_in_its_run() {
        let key = TraceKey::of_run(RUN).unwrap();
        let other = TraceKey::of_run("00f067aa0ba902b700f067aa0ba902b7").unwrap();
        for n in [0, 1, 2, 41, 1 << 20, u64::MAX - 1, u64::MAX] {
            let id = key.trace_id(n);
            assert_eq!(key.number_of(id), Some(n));
            assert_eq!(other.number_of(id), None);
            assert!(id.to_string().starts_with(&RUN[..16]), "{id}");
        }
        assert_eq!(TraceKey::of_run("4bf9"), None);
        assert_eq!(TraceKey::of_run("zz"), None);
    }

    #[test]
    fn the_mix_inverts_everywhere() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        for _ in 0..100_000 {
            assert_eq!(unmix(mix(x)), x);
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        }
    }

    #[test]
    fn ids_are_distinct_over_a_million_requests_and_their_steps() {
        let key = TraceKey::of_run(RUN).unwrap();
        let traces: HashSet<_> = (0..1_000_000).map(|n| key.trace_id(n)).collect();
        assert_eq!(traces.len(), 1_000_000);
        let spans: HashSet<_> =
            (0..1000).flat_map(|step| (1..=4).map(move |a| (step, a))).map(|(s, a)| key.span_id(7, s, a)).collect();
        assert_eq!(spans.len(), 4000);
        assert!((0..100_000).all(|n| key.span_id(n, 0, 1).0 != 0));
    }

    #[test]
    fn sampling_keeps_its_probability_and_the_same_requests_every_time() {
        let key = TraceKey::of_run(RUN).unwrap();
        for p in [0.001, 0.01, 0.1, 0.5, 1.0] {
            let s = Sampling::new(p).unwrap();
            let n = 1_000_000u64;
            let kept = (0..n).filter(|&k| s.sampled(key.trace_id(k))).count() as f64;
            // Binomial: 5 standard deviations either side.
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((kept - n as f64 * p).abs() <= 5.0 * sd + 1.0, "p {p}: {kept}");
        }
        let s = Sampling::new(0.01).unwrap();
        let first: Vec<u64> = (0..10_000).filter(|&k| s.sampled(key.trace_id(k))).collect();
        let again: Vec<u64> = (0..10_000).filter(|&k| s.sampled(key.trace_id(k))).collect();
        assert_eq!(first, again);
        // A lower probability keeps a subset of a higher one's (consistent sampling).
        let tenth = Sampling::new(0.1).unwrap();
        assert!(first.iter().all(|&k| tenth.sampled(key.trace_id(k))));
        assert!(Sampling::new(0.0).is_none() && Sampling::new(1.5).is_none() && Sampling::new(f64::NAN).is_none());
    }

    #[test]
    fn thresholds_are_written_as_opentelemetry_writes_them() {
        // The OpenTelemetry sampling specification's examples (tracestate probability
        // sampling): 1 → th:0, 1/2 → th:8, 1/4 → th:c; 1/3 and 1% it writes rounded to
        // 4 and 6 digits (aaab, fd70a4), which are these at full precision.
        let th = |p: f64| Sampling::new(p).unwrap().threshold_hex();
        assert_eq!(th(1.0), "0");
        assert_eq!(th(0.5), "8");
        assert_eq!(th(0.25), "c");
        // (A double's 1/3 is a little under a third: its last digit is c, not b.)
        assert!(th(1.0 / 3.0).starts_with("aaaaaaaaaaaaa"), "{}", th(1.0 / 3.0));
        assert!(th(0.01).starts_with("fd70a3d70a3d7"), "{}", th(0.01));
    }

    #[test]
    fn traceparent_is_w3c_version_00() {
        let key = TraceKey::of_run(RUN).unwrap();
        let (trace, span) = (key.trace_id(5), key.span_id(5, 0, 1));
        let tp = traceparent(trace, span, true);
        let text = std::str::from_utf8(&tp).unwrap();
        let parts: Vec<&str> = text.split('-').collect();
        assert_eq!(parts.len(), 4, "{text}");
        assert_eq!(parts[0], "00");
        assert_eq!(parts[1], trace.to_string());
        assert_eq!(parts[2], span.to_string());
        assert_eq!(parts[3], "01");
        assert!(text.bytes().all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_eq!(&traceparent(trace, span, false)[53..], b"00");
        assert_eq!(text.parse::<TraceId>(), Ok(trace));
        assert_eq!(parts[1].parse::<TraceId>(), Ok(trace));
        assert!("xyz".parse::<TraceId>().is_err());
        assert_eq!(tracestate(RUN, &Sampling::new(0.5).unwrap()), "barrage=4bf92f3577b34da6,ot=th:8");
    }

    fn exemplar(trace: u128, latency_us: u64) -> Exemplar {
        Exemplar { trace, span: 1, latency_us, ended_ms: 0 }
    }

    #[test]
    fn an_interval_keeps_its_slowest_sampled_requests_and_merging_keeps_the_slowest_of_all() {
        let mut kept = Vec::new();
        for (i, us) in [5, 900, 7, 30, 2, 800, 1, 60, 70, 1000, 3].into_iter().enumerate() {
            keep_exemplar(&mut kept, exemplar(i as u128, us));
        }
        let mut latencies: Vec<u64> = kept.iter().map(|e| e.latency_us).collect();
        latencies.sort_unstable();
        assert_eq!(latencies, [3, 5, 7, 30, 60, 70, 800, 900, 1000][1..]);
        let mut a = crate::Recorder::new();
        let mut b = crate::Recorder::new();
        a.exemplars = kept;
        b.exemplars = vec![exemplar(99, 5000), exemplar(98, 4)];
        a.add(&b);
        assert_eq!(a.exemplars.len(), EXEMPLARS_PER_INTERVAL);
        assert!(a.exemplars.iter().any(|e| e.trace == 99) && !a.exemplars.iter().any(|e| e.trace == 98));
    }

    #[test]
    fn exemplars_travel_with_their_interval_through_the_results_file() {
        use crate::file::{ResultsReader, ResultsWriter};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.brg");
        let mut w = ResultsWriter::create(&path, &crate::testing::header(0)).unwrap();
        let mut with = crate::Recorder::new();
        with.exemplars = vec![exemplar(7, 1500), exemplar(8, 900)];
        w.write_interval(&crate::testing::interval(0, 0, with)).unwrap();
        w.write_interval(&crate::testing::interval(1, 1000, crate::Recorder::new())).unwrap();
        w.finish(&Default::default()).unwrap();
        let mut r = ResultsReader::open(&path).unwrap();
        let first = r.next_interval().unwrap();
        assert_eq!(first.recorder.exemplars, [exemplar(7, 1500), exemplar(8, 900)]);
        assert!(r.next_interval().unwrap().recorder.exemplars.is_empty(), "each interval its own");
        assert!(r.next_interval().is_none() && r.warning().is_none());
    }
}
