//! [`Recorder`]: HDR histograms and counters for a set of samples, merged by addition.
//!
//! Each engine thread records into its own recorder (no lock, no allocation per request) and
//! hands it over once per interval; whole-run figures are the sum of the intervals.

use crate::bounded::{limit, refuse, Bounded};
use crate::limits::{fmt_limit, MAX_HISTOGRAM_BYTES, MAX_HISTOGRAM_COUNTERS, MAX_INTERVAL_SAMPLES, MAX_INTERVAL_TICKS};
use crate::sample::{
    CacheStatus, ErrorKind, Intent, Origin, Outcome, Phase, Protocol, Sample, CACHE_STATUS_COUNT, ERROR_KIND_COUNT,
    PHASE_COUNT, PROTOCOL_COUNT,
};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Highest latency a histogram tracks: one hour, in microseconds. Larger values saturate.
pub const HIGHEST_US: u64 = 3_600_000_000;
/// Significant decimal digits kept by every histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Status classes latency is split by: 1xx to 5xx, and failed requests.
pub const CLASS_NAMES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "error"];
const CLASS_COUNT: usize = CLASS_NAMES.len();
/// Status codes counted individually: every one an HTTP parser takes, 100..=999 (a status
/// HTTP does not define, such as 999, is still what the server said). Slot 0 counts codes
/// outside them: older files counted 600..=999 there.
const STATUS_SLOTS: usize = 901;

/// A new empty histogram with barrage's bounds (1 µs to 1 h, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_US, SIGNIFICANT_DIGITS).expect("static histogram bounds are valid")
}

fn us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Counters kept beside the histograms.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Requests started.
    pub sent: u64,
    /// Requests finished, with a response or an error.
    pub completed: u64,
    /// Succeeded: finished with a 2xx or 3xx status that no check or capture of a flow's
    /// step rejected ([`Sample::succeeded`]).
    pub ok: u64,
    /// Finished with a 2xx or 3xx status that a check or a capture of a flow's step
    /// rejected: failed requests, neither `ok` nor HTTP errors.
    pub rejected: u64,
    /// Started late because every slot was busy.
    pub late: u64,
    /// Due before the attack ended but never started: every slot stayed busy until the end.
    pub dropped: u64,
    /// Bytes received (headers and body).
    pub bytes_in: u64,
    /// Bytes sent (headers and body).
    pub bytes_out: u64,
    /// New connections opened.
    pub connections: u64,
    /// Requests per error kind, indexed like [`ErrorKind::ALL`].
    pub errors: [u64; ERROR_KIND_COUNT],
    /// Responses per cache status, indexed like [`CacheStatus::ALL`].
    pub cache: [u64; CACHE_STATUS_COUNT],
    /// Bytes received per cache status.
    pub cache_bytes: [u64; CACHE_STATUS_COUNT],
    /// With retries: requests as the client saw them (each of one or more attempts).
    pub logical: u64,
    /// Of those, succeeded at the first attempt.
    pub first_ok: u64,
    /// Of those, succeeded at the last attempt.
    pub final_ok: u64,
    /// Attempts they took.
    pub attempts: u64,
    /// Requests sent once more on a new connection because the server had closed their
    /// kept-alive one before answering anything (idempotent methods, or nothing written yet).
    /// Each is still one request in the other figures, its latency from the first try.
    pub stale_retries: u64,
    /// New HTTP connections per version the server agreed to, indexed like
    /// [`Protocol::ALL`] (a key-value run's connections are in `connections` only).
    pub protocols: [u64; PROTOCOL_COUNT],
    /// Connections on which HTTP/2 was asked and the server chose HTTP/1.1 by ALPN.
    pub http1_fallbacks: u64,
    /// The most streams open at once on one HTTP/2 or HTTP/3 connection (merged as a
    /// maximum).
    pub streams_max: u64,
    /// The lowest limit on concurrent streams a server set that was below `--streams`
    /// (HTTP/2's `SETTINGS_MAX_CONCURRENT_STREAMS`, QUIC's `initial_max_streams_bidi`):
    /// requests above it waited for a stream. 0 when none was (merged as the lowest of
    /// those that are not 0).
    pub stream_cap: u64,
    /// Flow-control stalls sending: times a request body had data to send and no window
    /// left (the server had not yet granted more). HTTP/3: the `STREAM_DATA_BLOCKED`
    /// frames barrage sent.
    pub send_stalls: u64,
    /// Flow-control stalls receiving: HTTP/2 DATA frames that used up the whole window
    /// barrage had granted (the server had to wait for a WINDOW_UPDATE); HTTP/3
    /// `STREAM_DATA_BLOCKED` and `DATA_BLOCKED` frames the server sent.
    pub recv_stalls: u64,
    /// Requests sent once more on a new connection because the server had not processed
    /// them: an HTTP/2 stream refused (REFUSED_STREAM) or above a GOAWAY's last stream id,
    /// an HTTP/3 request rejected (H3_REQUEST_REJECTED) or stopped by a GOAWAY. Each is
    /// still one request in the other figures, its latency from the first try.
    pub stream_retries: u64,
    /// What a cache study's requests were meant to meet, and what they met.
    pub workload: Workload,
}

/// What a cache study's requests were meant to meet ([`Intent`]) against what they met: a
/// request for a new object answered from a cache is a **false hit**, one for an object
/// asked for before answered by the origin a **false miss** (Web Polygraph's checks). Where
/// an answer came from is told by the origin's stamp when it has one ([`Origin`]), else by
/// the cache headers; an answer neither tells, or no answer at all, is not judged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// Requests for a new object.
    pub new: u64,
    /// Requests for an object asked for before (a repeat, or what a fill warmed).
    pub repeat: u64,
    /// Of the requests for new objects, those whose answer told where it came from.
    pub new_judged: u64,
    /// Of the repeats, those whose answer told where it came from.
    pub repeat_judged: u64,
    /// New objects answered from a cache.
    pub false_hits: u64,
    /// Repeats answered by the origin.
    pub false_misses: u64,
    /// Answers that carried the origin's stamp.
    pub stamped: u64,
}

impl Workload {
    /// Counts `n` requests alike: what they meant, and where their answer came from (`None`
    /// when nothing told).
    fn record(&mut self, intent: Intent, from_cache: Option<bool>, stamped: bool, n: u64) {
        self.stamped += n * u64::from(stamped);
        let judged = n * u64::from(from_cache.is_some());
        match intent {
            Intent::Any => {}
            Intent::New => {
                self.new += n;
                self.new_judged += judged;
                self.false_hits += n * u64::from(from_cache == Some(true));
            }
            Intent::Repeat => {
                self.repeat += n;
                self.repeat_judged += judged;
                self.false_misses += n * u64::from(from_cache == Some(false));
            }
        }
    }

    fn add(&mut self, o: &Workload) {
        self.new += o.new;
        self.repeat += o.repeat;
        self.new_judged += o.new_judged;
        self.repeat_judged += o.repeat_judged;
        self.false_hits += o.false_hits;
        self.false_misses += o.false_misses;
        self.stamped += o.stamped;
    }
}

/// Adds `b`'s counters to `a`'s, one by one.
fn add_each(a: &mut [u64], b: &[u64]) {
    for (a, b) in a.iter_mut().zip(b) {
        *a += b;
    }
}

impl Counts {
    /// Adds `o`'s counts (a most is the larger, a stream cap the lower).
    pub fn add(&mut self, o: &Counts) {
        let c = self;
        c.sent += o.sent;
        c.completed += o.completed;
        c.ok += o.ok;
        c.rejected += o.rejected;
        c.late += o.late;
        c.dropped += o.dropped;
        c.bytes_in += o.bytes_in;
        c.bytes_out += o.bytes_out;
        c.connections += o.connections;
        add_each(&mut c.errors, &o.errors);
        add_each(&mut c.cache, &o.cache);
        add_each(&mut c.cache_bytes, &o.cache_bytes);
        c.logical += o.logical;
        c.first_ok += o.first_ok;
        c.final_ok += o.final_ok;
        c.attempts += o.attempts;
        c.stale_retries += o.stale_retries;
        add_each(&mut c.protocols, &o.protocols);
        c.http1_fallbacks += o.http1_fallbacks;
        c.streams_max = c.streams_max.max(o.streams_max);
        c.stream_cap = lowest_cap(c.stream_cap, o.stream_cap);
        c.send_stalls += o.send_stalls;
        c.recv_stalls += o.recv_stalls;
        c.stream_retries += o.stream_retries;
        c.workload.add(&o.workload);
    }
}

/// What one HTTP/2 or HTTP/3 connection saw of its streams since it was last asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamFigures {
    /// The most streams open at once.
    pub most_open: u64,
    /// The server's limit on concurrent streams, when it was below `--streams`; else 0.
    pub cap: u64,
    /// Flow-control stalls sending ([`Counts::send_stalls`]).
    pub send_stalls: u64,
    /// Flow-control stalls receiving ([`Counts::recv_stalls`]).
    pub recv_stalls: u64,
}

/// The lower of two stream caps, 0 meaning none.
fn lowest_cap(a: u64, b: u64) -> u64 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (a, b) => a.min(b),
    }
}

/// Most distinct keys (backends, names, methods, reply classes) one recorder keeps apart; later ones are
/// counted as `(other)`, so a header carrying a request id cannot make memory grow per request.
pub const MAX_KEYS: usize = 64;
const OTHER_KEY: &str = "(other)";

/// The requests of one key: a backend, a request name or a method.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyedStats {
    /// The key (a backend as its header named it, a target's name, a method).
    pub name: String,
    /// Finished requests.
    pub requests: u64,
    /// Of those, not successful (errors, 4xx, 5xx).
    pub failed: u64,
    /// Their corrected latency.
    pub latency: Histogram<u64>,
    /// When they finished, per tenth of a second; kept for backends only (see
    /// [`Keyed::timed`]), to find the gaps in a backend's answers.
    pub timeline: Timeline,
    /// How the flows of a step or group ended (zero outside scenarios).
    pub flow: FlowCounts,
    /// Of a step: what its first failed check or capture saw, to tell why.
    pub example: Option<String>,
}

/// What flows add to a key's figures: of a step (its name), how many of its requests failed
/// a check or a capture and how many times it was skipped; of a group (a flow's key), how
/// many of its flows ended by a failed check or capture, how many steps they skipped and
/// how many arrivals were dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowCounts {
    /// A check was false.
    pub check_failed: u64,
    /// A capture found nothing.
    pub capture_failed: u64,
    /// Steps not sent because an earlier step of their flow failed.
    pub skipped: u64,
    /// Open loop: flows due that never started (every slot stayed busy to the end), of a
    /// group; of a name or a method, its requests due that were never sent (a dropped
    /// flow's first step, a dropped request's target).
    pub dropped: u64,
    /// Flows the end of their group's window stopped before their last step: not counted
    /// as finished (their steps sent so far are), as a request in flight at the end is not.
    pub unfinished: u64,
}

impl std::ops::AddAssign<&FlowCounts> for FlowCounts {
    fn add_assign(&mut self, o: &FlowCounts) {
        self.check_failed += o.check_failed;
        self.capture_failed += o.capture_failed;
        self.skipped += o.skipped;
        self.dropped += o.dropped;
        self.unfinished += o.unfinished;
    }
}

/// How a step or a flow failed besides its requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowFailure {
    /// A check was false.
    Check,
    /// A capture found nothing.
    Capture,
    /// A request failed (no response, or a status no check allowed).
    Request,
}

/// Requests broken down by a key, in order of first appearance, at most [`MAX_KEYS`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Keyed {
    stats: Vec<KeyedStats>,
    /// Each key keeps its own [`Timeline`].
    timed: bool,
}

impl std::ops::Deref for Keyed {
    type Target = [KeyedStats];
    fn deref(&self) -> &[KeyedStats] {
        &self.stats
    }
}

impl Keyed {
    /// Keys that also keep when their requests finished, per tenth of a second: backends,
    /// so an outage shorter than an interval, or one that straddles two, shows at its length.
    pub fn timed() -> Self {
        Keyed { stats: Vec::new(), timed: true }
    }

    /// Counts a finished request under `key`. Allocates only the first time a key appears
    /// (and, when timed, once per tenth of a second).
    pub fn record(&mut self, key: &[u8], s: &Sample) {
        self.record_entry(key, s);
    }

    /// Counts a finished request under `key` as [`Keyed::record`] does, and keeps `example`
    /// as the key's example while it has none: the closure runs once per key and
    /// recorder, so a reply is formatted once per class and interval, not once per request.
    pub fn record_example(&mut self, key: &[u8], s: &Sample, example: impl FnOnce() -> String) {
        let b = self.record_entry(key, s);
        if b.example.is_none() {
            b.example = Some(example());
        }
    }

    /// [`Keyed::record`], returning the key's stats.
    fn record_entry(&mut self, key: &[u8], s: &Sample) -> &mut KeyedStats {
        self.record_figures(key, &Figures::of(s, 1))
    }

    /// Counts `f.n` finished requests, their figures worked out already, under `key`.
    fn record_figures(&mut self, key: &[u8], f: &Figures) -> &mut KeyedStats {
        let timed = self.timed;
        let b = self.entry(key);
        b.requests += f.n;
        b.failed += f.n * u64::from(!f.ok);
        b.latency.saturating_record_n(f.corrected_us, f.n);
        if timed {
            b.timeline.record_n(f.ended, f.ok, f.corrected_us, f.tick_n());
        }
        b
    }

    /// Counts the last request recorded under `key` as failed by a check or a capture (it
    /// was recorded as failed already: its sample was [`Sample::rejected`]); `example` says
    /// what it saw, made only while the key has none.
    pub fn mark(&mut self, key: &[u8], failure: FlowFailure, example: impl FnOnce() -> String) {
        let b = self.entry(key);
        if b.example.is_none() && failure != FlowFailure::Request {
            b.example = Some(example());
        }
        match failure {
            FlowFailure::Check => b.flow.check_failed += 1,
            FlowFailure::Capture => b.flow.capture_failed += 1,
            FlowFailure::Request => {}
        }
    }

    /// Counts a step of `key` as skipped: never sent, in no latency.
    pub fn skip(&mut self, key: &[u8]) {
        self.entry(key).flow.skipped += 1;
    }

    /// Counts a finished flow under its group's `key`: its latency from its intended start
    /// to its last step's end, how it failed if it did, and the steps it skipped; `ended`
    /// (from the run's start) goes on the key's timeline, which says when a group of
    /// iterations ended.
    pub fn record_flow(
        &mut self,
        key: &[u8],
        failure: Option<FlowFailure>,
        latency: Duration,
        skipped: u64,
        ended: Duration,
    ) {
        let timed = self.timed;
        let b = self.entry(key);
        b.requests += 1;
        b.failed += u64::from(failure.is_some());
        b.latency.saturating_record(us(latency));
        if timed {
            b.timeline.record(ended, failure.is_none(), us(latency));
        }
        match failure {
            Some(FlowFailure::Check) => b.flow.check_failed += 1,
            Some(FlowFailure::Capture) => b.flow.capture_failed += 1,
            _ => {}
        }
        b.flow.skipped += skipped;
    }

    /// Counts a flow of `key` that the end of its window stopped before its last step.
    pub fn record_unfinished(&mut self, key: &[u8]) {
        self.entry(key).flow.unfinished += 1;
    }

    /// Counts flows of `key` (a group), or requests of `key` (a name, a method), that were
    /// due but never started.
    pub fn record_dropped(&mut self, key: &[u8], n: u64) {
        self.entry(key).flow.dropped += n;
    }

    fn entry(&mut self, key: &[u8]) -> &mut KeyedStats {
        let i = match self.stats.iter().position(|b| b.name.as_bytes() == key) {
            Some(i) => i,
            None => self.slot(&String::from_utf8_lossy(key)),
        };
        &mut self.stats[i]
    }

    /// Moves every key's timeline `by` ticks later (see [`Timeline::shift`]).
    pub fn shift(&mut self, by: u32) {
        self.stats.iter_mut().for_each(|b| b.timeline.shift(by));
    }

    /// Drops the timelines, for a cumulative recorder that draws none of them.
    pub fn forget_timelines(&mut self) {
        self.stats.iter_mut().for_each(|b| b.timeline = Timeline::default());
    }

    /// The keys' examples as they may be written: a server's reply may quote what it was
    /// sent.
    pub fn redact_examples(&mut self, r: &crate::secrets::Redaction) {
        for example in self.stats.iter_mut().filter_map(|b| b.example.as_mut()) {
            if let std::borrow::Cow::Owned(shown) = r.text(example) {
                *example = shown;
            }
        }
    }

    /// The index of `key`'s stats, created if there is still room, else `(other)`'s.
    fn slot(&mut self, key: &str) -> usize {
        if let Some(i) = self.stats.iter().position(|b| b.name == key) {
            return i;
        }
        let key = if self.stats.len() < MAX_KEYS - 1 { key } else { OTHER_KEY };
        if let Some(i) = self.stats.iter().position(|b| b.name == key) {
            return i;
        }
        self.stats.push(KeyedStats {
            name: key.to_string(),
            requests: 0,
            failed: 0,
            latency: new_histogram(),
            timeline: Timeline::default(),
            flow: FlowCounts::default(),
            example: None,
        });
        self.stats.len() - 1
    }

    fn add(&mut self, other: &Keyed) {
        for b in &other.stats {
            let i = self.slot(&b.name);
            let mine = &mut self.stats[i];
            mine.requests += b.requests;
            mine.failed += b.failed;
            mine.latency.add(&b.latency).expect("histograms share bounds");
            mine.timeline.add(&b.timeline);
            mine.flow += &b.flow;
            if mine.example.is_none() {
                mine.example.clone_from(&b.example);
            }
        }
    }

    fn encode<L>(&self) -> Keys<L> {
        self.stats
            .iter()
            .map(|b| {
                let (flow, example) = (b.flow, b.example.clone());
                let ticks = b.timeline.written();
                (b.name.clone(), b.requests, b.failed, encode(&b.latency), ticks, flow, example)
            })
            .collect()
    }

    fn decode<L>(wire: Keys<L>, timed: bool) -> Result<Keyed, String> {
        let stats = wire.0.into_iter().map(|(name, requests, failed, latency, ticks, flow, example)| {
            // No recorder writes more failures than requests under a key: the file is corrupt
            // (and the summary's `requests - failed` would underflow).
            if failed > requests {
                return Err(format!("a key counts {failed} failed of {requests} requests"));
            }
            Ok(KeyedStats {
                name,
                requests,
                failed,
                latency: decode(&latency)?,
                timeline: Timeline(ticks.0),
                flow,
                example,
            })
        });
        Ok(Keyed { stats: stats.collect::<Result<_, String>>()?, timed })
    }
}

/// One key in the results file: name, requests, failed, latency, timeline (empty untimed),
/// flow counts, an example of a failed check or capture.
pub(crate) type KeyedWire = (String, u64, u64, Vec<u8>, KeyTicks, FlowCounts, Option<String>);

/// A key's timeline in the results file.
pub(crate) type KeyTicks = Bounded<Tick, KeyTickLimit>;

/// The keyed lists of a recorder in the results file, flows and replies.
pub(crate) type Keys<L> = Bounded<KeyedWire, L>;

/// Test files only: a recorder whose replies hold `n` classes, written as today's, so that
/// a file can hold more classes than a recorder keeps (a crafted one).
#[cfg(test)]
pub(crate) struct WideReplies(pub usize);

#[cfg(test)]
impl Serialize for WideReplies {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = Recorder::new().wire();
        w.replies = (0..self.0).map(crafted_key).collect();
        w.serialize(s)
    }
}

/// Key `i` of a crafted recorder: `E<i>`, one failed request.
#[cfg(test)]
fn crafted_key(i: usize) -> KeyedWire {
    (format!("E{i}"), 1, 1, encode(&new_histogram()), Bounded::default(), FlowCounts::default(), None)
}

impl<K, C, F, R> Wire<K, C, F, R> {
    /// The same recorder written another way: its keys, its counters, the error kind
    /// index of each example (dropped when `example` says `None`), its flows and its
    /// server replies.
    pub(crate) fn map<J, D, G, S>(
        self,
        key: impl Fn(K) -> J,
        counts: impl FnOnce(C) -> D,
        example: impl Fn(u8) -> Option<u8>,
        flows: impl FnOnce(F) -> G,
        replies: impl FnOnce(R) -> S,
    ) -> Wire<J, D, G, S> {
        Wire {
            corrected: self.corrected,
            service: self.service,
            lag: self.lag,
            phases: self.phases,
            by_class: self.by_class,
            counts: counts(self.counts),
            status: self.status,
            examples: self.examples.0.into_iter().filter_map(|(i, m)| Some((example(i)?, m))).collect(),
            hit: self.hit,
            miss: self.miss,
            backends: self.backends.map(&key),
            whole: self.whole,
            names: self.names.map(&key),
            methods: self.methods.map(&key),
            timeline: self.timeline,
            samples: self.samples,
            flows: flows(self.flows),
            replies: replies(self.replies),
        }
    }
}

/// What `n` alike finished requests put into histograms, worked out once: their corrected
/// latency goes into five or six of them, each of their phases into two.
struct Figures {
    n: u64,
    corrected_us: u64,
    phases_us: [Option<u64>; PHASE_COUNT],
    ok: bool,
    ended: Duration,
}

impl Figures {
    fn of(s: &Sample, n: u64) -> Figures {
        Figures {
            n,
            corrected_us: us(s.corrected()),
            phases_us: s.phases.map(|p| p.map(us)),
            ok: s.succeeded(),
            ended: s.ended,
        }
    }

    /// `n` as a tick counts it.
    fn tick_n(&self) -> u32 {
        u32::try_from(self.n).unwrap_or(u32::MAX)
    }
}

/// The keys a finished request is counted under besides the totals
/// ([`Recorder::record_keyed`]): its name, its method, the backend that answered.
#[derive(Clone, Copy, Debug, Default)]
pub struct SampleKeys<'a> {
    /// Its name ([`Recorder::names`]).
    pub name: Option<&'a [u8]>,
    /// Its method ([`Recorder::methods`]).
    pub method: Option<&'a [u8]>,
    /// The backend that answered ([`Recorder::backends`]).
    pub backend: Option<&'a [u8]>,
}

/// Latency and phases of one side of the cache split.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSet {
    /// Corrected latency.
    pub corrected: Histogram<u64>,
    /// Phases, indexed like [`Phase::ALL`].
    pub phases: [Histogram<u64>; PHASE_COUNT],
}

impl PhaseSet {
    fn new() -> Self {
        PhaseSet { corrected: new_histogram(), phases: std::array::from_fn(|_| new_histogram()) }
    }

    fn record(&mut self, f: &Figures) {
        self.corrected.saturating_record_n(f.corrected_us, f.n);
        for (hist, phase) in self.phases.iter_mut().zip(f.phases_us) {
            if let Some(us) = phase {
                hist.saturating_record_n(us, f.n);
            }
        }
    }

    fn add(&mut self, other: &PhaseSet) {
        self.corrected.add(&other.corrected).expect("histograms share bounds");
        for (a, b) in self.phases.iter_mut().zip(&other.phases) {
            a.add(b).expect("histograms share bounds");
        }
    }
}

/// Histograms and counters of a set of samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorder {
    /// Latency from the intended start (corrected for coordinated omission).
    pub corrected: Histogram<u64>,
    /// Latency from the actual start (service time).
    pub service: Histogram<u64>,
    /// Schedule lag: actual start minus intended start.
    pub lag: Histogram<u64>,
    /// One histogram per phase, holding only requests where the phase happened.
    pub phases: [Histogram<u64>; PHASE_COUNT],
    /// Corrected latency per status class ([`CLASS_NAMES`]).
    pub by_class: [Histogram<u64>; CLASS_COUNT],
    /// Counters.
    pub counts: Counts,
    /// Responses served from a cache (hit, stale), allocated on the first one.
    pub hit: Option<Box<PhaseSet>>,
    /// Responses fetched from the origin through a cache (miss, expired, pass).
    pub miss: Option<Box<PhaseSet>>,
    /// Per backend (from a header such as `X-Served-By`).
    pub backends: Keyed,
    /// Per target name (`# name:` in a target file).
    pub names: Keyed,
    /// Per method.
    pub methods: Keyed,
    /// Per group of a scenario: its flows, each counted as one "request" whose latency runs
    /// from the flow's intended start to its last step's end.
    pub flows: Keyed,
    /// Per class of server error reply of a key-value store (`ERR`, `WRONGTYPE`, `MOVED`,
    /// `LOADING`, `SERVER_ERROR`, `CLIENT_ERROR`, `NOT_STORED`, ...), an example reply each
    /// ([`Keyed::record_example`]); empty for HTTP.
    pub replies: Keyed,
    /// With retries: latency of whole requests, from the first attempt's intended start to
    /// the last attempt's end; allocated on the first one.
    pub whole: Option<Box<Histogram<u64>>>,
    /// Finished requests per tenth of a second, for events that play out faster than an
    /// interval (a balancer marking a backend down in 250 ms).
    pub timeline: Timeline,
    /// A few individual requests of each tenth of a second (the first
    /// [`SAMPLES_PER_TICK`]), for a scatter plot of the run.
    pub samples: Vec<RequestPoint>,
    /// Responses per status code; index `code - 99`, index 0 for codes outside 100..=999.
    status: Box<[u64; STATUS_SLOTS]>,
    /// One example message per error kind.
    examples: [Option<String>; ERROR_KIND_COUNT],
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Recorder {
            corrected: new_histogram(),
            service: new_histogram(),
            lag: new_histogram(),
            phases: std::array::from_fn(|_| new_histogram()),
            by_class: std::array::from_fn(|_| new_histogram()),
            counts: Counts::default(),
            hit: None,
            miss: None,
            backends: Keyed::timed(),
            names: Keyed::default(),
            methods: Keyed::default(),
            flows: Keyed::timed(),
            replies: Keyed::default(),
            whole: None,
            timeline: Timeline::default(),
            samples: Vec::new(),
            status: Box::new([0; STATUS_SLOTS]),
            examples: Default::default(),
        }
    }

    /// Counts a request as started.
    pub fn record_sent(&mut self) {
        self.counts.sent += 1;
    }

    /// Counts requests that were due but never started.
    pub fn record_dropped(&mut self, n: u64) {
        self.counts.dropped += n;
    }

    /// Counts a new connection.
    pub fn record_connection(&mut self) {
        self.counts.connections += 1;
    }

    /// Counts a request sent once more because the server had closed its kept-alive
    /// connection before answering anything.
    pub fn record_stale_retry(&mut self) {
        self.counts.stale_retries += 1;
    }

    /// Counts a new HTTP connection that speaks `protocol`; `fallback`: HTTP/2 was asked and
    /// the server chose HTTP/1.1.
    pub fn record_http_connection(&mut self, protocol: Protocol, fallback: bool) {
        self.counts.connections += 1;
        self.counts.protocols[protocol as usize] += 1;
        self.counts.http1_fallbacks += u64::from(fallback);
    }

    /// Counts a request sent once more on a new connection because the server had not
    /// processed it (a refused stream, or one above a GOAWAY's last stream id).
    pub fn record_stream_retry(&mut self) {
        self.counts.stream_retries += 1;
    }

    /// Adds what an HTTP/2 or HTTP/3 connection saw since it was last asked.
    pub fn record_streams(&mut self, f: &StreamFigures) {
        let c = &mut self.counts;
        c.streams_max = c.streams_max.max(f.most_open);
        c.stream_cap = lowest_cap(c.stream_cap, f.cap);
        c.send_stalls += f.send_stalls;
        c.recv_stalls += f.recv_stalls;
    }

    /// Records a finished request. Allocation-free: this is the hot path.
    pub fn record(&mut self, s: &Sample) {
        self.record_figures(s, 1);
    }

    /// Records a finished request as [`Recorder::record`] does, and counts it under each of
    /// `keys` it has: its figures are worked out once for all the histograms they go into.
    pub fn record_keyed(&mut self, s: &Sample, keys: &SampleKeys<'_>) {
        self.record_alike(s, 1, keys);
    }

    /// Records `n` finished requests alike in every figure but their bytes (their times,
    /// phases, outcome, cache status and lateness; `s` is one of them, with the bytes of all
    /// `n`) and counts them under `keys`: the same figures as `n` calls of
    /// [`Recorder::record_keyed`], in one. Replies parsed from one read of a pipelined
    /// connection are often alike: their commands were written together, and due together.
    pub fn record_alike(&mut self, s: &Sample, n: u64, keys: &SampleKeys<'_>) {
        let f = self.record_figures(s, n);
        if let Some(name) = keys.name {
            self.names.record_figures(name, &f);
        }
        if let Some(method) = keys.method {
            self.methods.record_figures(method, &f);
        }
        if let Some(backend) = keys.backend {
            self.backends.record_figures(backend, &f);
        }
    }

    fn record_figures(&mut self, s: &Sample, n: u64) -> Figures {
        let f = Figures::of(s, n);
        let c = &mut self.counts;
        c.completed += n;
        c.bytes_in += s.bytes_in;
        c.bytes_out += s.bytes_out;
        c.late += n * u64::from(s.late);
        let corrected = f.corrected_us;
        self.corrected.saturating_record_n(corrected, n);
        self.service.saturating_record_n(us(s.service()), n);
        // A late request waited for a slot (the in-flight bound, i.e. the server), which is
        // not the generator falling behind: only on-time requests measure the schedule lag.
        if !s.late {
            self.lag.saturating_record_n(us(s.lag()), n);
        }
        for (hist, phase) in self.phases.iter_mut().zip(f.phases_us) {
            if let Some(us) = phase {
                hist.saturating_record_n(us, n);
            }
        }
        let class = match s.outcome {
            Outcome::Status(code) => {
                self.status[status_slot(code)] += n;
                c.ok += n * u64::from(f.ok);
                c.rejected += n * u64::from(s.rejected && s.outcome.is_success());
                usize::from(code / 100).clamp(1, 5) - 1
            }
            Outcome::Error(kind) => {
                c.errors[kind as usize] += n;
                CLASS_COUNT - 1
            }
        };
        self.by_class[class].saturating_record_n(corrected, n);
        let in_tick = self.timeline.record_n(s.ended, f.ok, corrected, f.tick_n());
        // The scatter plot keeps the first few requests of each tick: those of these `n`.
        let before = in_tick.saturating_sub(f.tick_n());
        for _ in before..in_tick.min(SAMPLES_PER_TICK) {
            self.samples.push(RequestPoint {
                ended_ms: u32::try_from(s.ended.as_millis()).unwrap_or(u32::MAX),
                latency_us: u32::try_from(corrected).unwrap_or(u32::MAX),
                ok: f.ok,
            });
        }
        self.record_cache(&f, s);
        f
    }

    fn record_cache(&mut self, f: &Figures, s: &Sample) {
        let c = &mut self.counts;
        // Where the answer came from: a stamp made before the send is a kept copy whatever
        // the headers say; one made since is the origin's answer unless a cache says it
        // joined the request to another in flight (a hit); unstamped, the headers tell.
        let from_cache = match (s.outcome, s.origin, s.cache) {
            (Outcome::Error(_), ..) => None,
            (_, Origin::Kept, _) => Some(true),
            (_, Origin::Fresh, status) => Some(status.from_cache()),
            (_, Origin::Unstamped, CacheStatus::Unknown) => None,
            (_, Origin::Unstamped, status) => Some(status.from_cache()),
        };
        c.workload.record(s.intent, from_cache, s.origin != Origin::Unstamped, f.n);
        c.cache[s.cache as usize] += f.n;
        c.cache_bytes[s.cache as usize] += s.bytes_in;
        let side = match s.cache {
            CacheStatus::Unknown => return,
            status if status.from_cache() => &mut self.hit,
            _ => &mut self.miss,
        };
        side.get_or_insert_with(|| Box::new(PhaseSet::new())).record(f);
    }

    /// Records a request that went through the retry policy, once all its attempts are done
    /// (each attempt was recorded with [`Recorder::record`]).
    pub fn record_logical(&mut self, first_ok: bool, final_ok: bool, attempts: u32, whole: Duration) {
        let c = &mut self.counts;
        c.logical += 1;
        c.first_ok += u64::from(first_ok);
        c.final_ok += u64::from(final_ok);
        c.attempts += u64::from(attempts);
        self.whole.get_or_insert_with(|| Box::new(new_histogram())).saturating_record(us(whole));
    }

    /// Whether an example message for this kind is still wanted; check before formatting one,
    /// so a message is built once per kind, not once per failed request.
    pub fn wants_example(&self, kind: ErrorKind) -> bool {
        self.examples[kind as usize].is_none()
    }

    /// Keeps `message` as the example of `kind` unless one is kept already.
    pub fn set_example(&mut self, kind: ErrorKind, message: String) {
        self.examples[kind as usize].get_or_insert(message);
    }

    /// The example message kept for `kind`.
    pub fn example(&self, kind: ErrorKind) -> Option<&str> {
        self.examples[kind as usize].as_deref()
    }

    /// The example messages as they may be written: an error may quote a URL, a server's
    /// reply what it was sent.
    pub fn redact_examples(&mut self, r: &crate::secrets::Redaction) {
        for example in self.examples.iter_mut().flatten() {
            if let std::borrow::Cow::Owned(shown) = r.text(example) {
                *example = shown;
            }
        }
        self.replies.redact_examples(r);
    }

    /// Responses per status code, sparse, in code order. Code 0 means "outside 100..=999".
    pub fn status_counts(&self) -> BTreeMap<u16, u64> {
        self.status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (if i == 0 { 0 } else { (i + 99) as u16 }, *n))
            .collect()
    }

    /// The histogram of one phase.
    pub fn phase(&self, phase: Phase) -> &Histogram<u64> {
        &self.phases[phase as usize]
    }

    /// Adds `other` into `self`: histograms added, counters summed, first examples kept.
    pub fn add(&mut self, other: &Recorder) {
        let add = |a: &mut Histogram<u64>, b: &Histogram<u64>| {
            a.add(b).expect("histograms share bounds");
        };
        add(&mut self.corrected, &other.corrected);
        add(&mut self.service, &other.service);
        add(&mut self.lag, &other.lag);
        for (a, b) in self.phases.iter_mut().zip(&other.phases) {
            add(a, b);
        }
        for (a, b) in self.by_class.iter_mut().zip(&other.by_class) {
            add(a, b);
        }
        self.counts.add(&other.counts);
        if let Some(theirs) = &other.whole {
            match &mut self.whole {
                Some(mine) => mine.add(&**theirs).expect("histograms share bounds"),
                None => self.whole = Some(theirs.clone()),
            }
        }
        self.timeline.add(&other.timeline);
        self.samples.extend_from_slice(&other.samples);
        self.backends.add(&other.backends);
        self.names.add(&other.names);
        self.methods.add(&other.methods);
        self.flows.add(&other.flows);
        self.replies.add(&other.replies);
        for (mine, theirs) in [(&mut self.hit, &other.hit), (&mut self.miss, &other.miss)] {
            if let Some(theirs) = theirs {
                match mine {
                    Some(m) => m.add(theirs),
                    None => *mine = Some(theirs.clone()),
                }
            }
        }
        for (a, b) in self.status.iter_mut().zip(other.status.iter()) {
            *a += b;
        }
        for (a, b) in self.examples.iter_mut().zip(&other.examples) {
            if a.is_none() {
                a.clone_from(b);
            }
        }
    }

    /// A recorder of a file written before rejected requests (format versions 5 to 9)
    /// as today's: a flow's step whose check or capture failed on a 2xx or 3xx answer was
    /// counted failed under its name but `ok` in the totals and under its method. Every
    /// request of a scenario is a step, counted under its name, so the names' failures are
    /// exactly the requests that did not succeed: the rest of `ok` was rejected. The
    /// methods are put right when there is one (one key holds every request); the seconds'
    /// timelines, the status classes and the backends stay as they were written.
    pub(crate) fn count_rejections(mut self) -> Recorder {
        let named: u64 = self.names.iter().map(|k| k.requests).sum();
        if self.flows.is_empty() || named != self.counts.completed {
            return self;
        }
        let failed: u64 = self.names.iter().map(|k| k.failed).sum();
        let rejected = self.counts.ok.saturating_sub(self.counts.completed.saturating_sub(failed));
        self.counts.ok -= rejected;
        self.counts.rejected = rejected;
        if let [method] = &mut self.methods.stats[..] {
            method.failed = (method.failed + rejected).min(method.requests);
        }
        self
    }

    /// Requests due that were never sent: the dropped ones, and a scenario's dropped flows,
    /// each the first step it never sent (its later steps were never due: each is due when
    /// the step before it ends).
    pub fn never_sent(&self) -> u64 {
        self.counts.dropped + self.flows.iter().map(|k| k.flow.dropped).sum::<u64>()
    }

    /// Total failed requests.
    pub fn error_count(&self) -> u64 {
        self.counts.errors.iter().sum()
    }
}

fn status_slot(code: u16) -> usize {
    if (100..=999).contains(&code) {
        usize::from(code) - 99
    } else {
        0
    }
}

/// Individual requests kept per tick per recorder for the scatter plot: up to 100 a second
/// per engine thread, a few KiB per interval.
pub const SAMPLES_PER_TICK: u32 = 10;

/// One request of the scatter plot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestPoint {
    /// When it finished, ms from the run's start.
    pub ended_ms: u32,
    /// Its corrected latency, µs.
    pub latency_us: u32,
    /// It succeeded (2xx, 3xx).
    pub ok: bool,
}

/// Length of a [`Tick`].
pub const TICK: Duration = Duration::from_millis(100);

/// Requests that finished in one tenth of a second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tick {
    /// Tenths of a second from the run's start to the tick's start.
    pub tick: u32,
    /// Successful responses (2xx, 3xx).
    pub ok: u32,
    /// The rest: errors, 4xx and 5xx.
    pub failed: u32,
    /// The slowest of them, corrected latency in µs (saturating at about 71 minutes).
    pub max_us: u32,
}

/// Finished requests per [`TICK`], in tick order. An interval holds about ten ticks, so
/// recording touches the last one and allocates about once per tick, never per request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline(Vec<Tick>);

impl std::ops::Deref for Timeline {
    type Target = [Tick];
    fn deref(&self) -> &[Tick] {
        &self.0
    }
}

impl Timeline {
    /// Counts a request that finished `ended` after the run's start, `latency_us` after its
    /// intended start; returns how many requests its tick now holds.
    pub fn record(&mut self, ended: Duration, ok: bool, latency_us: u64) -> u32 {
        self.record_n(ended, ok, latency_us, 1)
    }

    /// Counts `n` requests as [`Timeline::record`] counts one.
    pub fn record_n(&mut self, ended: Duration, ok: bool, latency_us: u64, n: u32) -> u32 {
        let tick = u32::try_from(ended.as_millis() / TICK.as_millis()).unwrap_or(u32::MAX);
        let t = self.slot(tick);
        if ok {
            t.ok = t.ok.saturating_add(n);
        } else {
            t.failed = t.failed.saturating_add(n);
        }
        t.max_us = t.max_us.max(u32::try_from(latency_us).unwrap_or(u32::MAX));
        t.ok.saturating_add(t.failed)
    }

    fn slot(&mut self, tick: u32) -> &mut Tick {
        let i = match self.0.iter().rposition(|t| t.tick <= tick) {
            Some(i) if self.0[i].tick == tick => i,
            found => {
                let at = found.map_or(0, |i| i + 1);
                self.0.insert(at, Tick { tick, ..Tick::default() });
                at
            }
        };
        &mut self.0[i]
    }

    /// Adds another timeline tick by tick.
    pub fn add(&mut self, other: &Timeline) {
        for t in &other.0 {
            let mine = self.slot(t.tick);
            mine.ok += t.ok;
            mine.failed += t.failed;
            mine.max_us = mine.max_us.max(t.max_us);
        }
    }

    /// The ticks as a results file holds them: at most [`MAX_INTERVAL_TICKS`], the most a
    /// reader takes, which an interval's timeline never comes near.
    fn written<L>(&self) -> Bounded<Tick, L> {
        self.0.iter().take(MAX_INTERVAL_TICKS).copied().collect()
    }

    /// Moves every tick `by` ticks later: to line up runs that started at different times.
    pub fn shift(&mut self, by: u32) {
        for t in &mut self.0 {
            t.tick = t.tick.saturating_add(by);
        }
    }
}

/// The serialised form: histograms in HdrHistogram's compressed V2 encoding, status codes
/// sparse. Used by the results file; `K` is how a key is written, `C` the counters' layout,
/// `F` the flows and `R` the server replies ([`KeyedWire`], [`Counts`] and two lists of
/// keys; in files of version 3 `KeyedWireV3`, `CountsV3` and nothing twice, `()`,
/// which postcard writes as no bytes; in version 4 `KeyedWireV4`, [`Counts`] and nothing
/// twice; in version 5 no replies).
///
/// Every list holds no more than a recorder does, refused from its length before it is
/// decoded ([`Bounded`]): an entry decodes to many times its bytes (an empty key of 11
/// bytes to 150).
#[derive(Serialize, Deserialize)]
pub(crate) struct Wire<K = KeyedWire, C = Counts, F = Keys<FlowLimit>, R = Keys<ReplyLimit>> {
    corrected: Vec<u8>,
    service: Vec<u8>,
    lag: Vec<u8>,
    phases: Bounded<Vec<u8>, PhaseLimit>,
    by_class: Bounded<Vec<u8>, ClassLimit>,
    counts: C,
    status: Bounded<(u16, u64), StatusLimit>,
    examples: Bounded<(u8, String), ExampleLimit>,
    hit: Option<Bounded<Vec<u8>, SplitLimit>>,
    miss: Option<Bounded<Vec<u8>, SplitLimit>>,
    backends: Bounded<K, BackendLimit>,
    whole: Option<Vec<u8>>,
    names: Bounded<K, NameLimit>,
    methods: Bounded<K, MethodLimit>,
    timeline: Bounded<Tick, TickLimit>,
    samples: Bounded<RequestPoint, SampleLimit>,
    flows: F,
    replies: R,
}

limit!(PhaseLimit = PHASE_COUNT, "phase histograms");
limit!(ClassLimit = CLASS_COUNT, "status class histograms");
limit!(SplitLimit = PHASE_COUNT + 1, "histograms of a cache split");
limit!(StatusLimit = STATUS_SLOTS, "status codes");
limit!(ExampleLimit = ERROR_KIND_COUNT, "error examples");
limit!(BackendLimit = MAX_KEYS, "backends");
limit!(NameLimit = MAX_KEYS, "request names");
limit!(MethodLimit = MAX_KEYS, "methods");
limit!(FlowLimit = MAX_KEYS, "scenario groups");
limit!(ReplyLimit = MAX_KEYS, "server reply classes");
limit!(TickLimit = MAX_INTERVAL_TICKS, "timeline ticks");
limit!(KeyTickLimit = MAX_INTERVAL_TICKS, "ticks of a key's timeline");
limit!(SampleLimit = MAX_INTERVAL_SAMPLES, "request samples");

fn encode_set(set: &PhaseSet) -> Bounded<Vec<u8>, SplitLimit> {
    std::iter::once(&set.corrected).chain(&set.phases).map(encode).collect()
}

fn decode_set(bytes: &[Vec<u8>]) -> Result<PhaseSet, String> {
    if bytes.len() != PHASE_COUNT + 1 {
        return Err(format!("a cache split holds {} histograms, not {}", bytes.len(), PHASE_COUNT + 1));
    }
    let mut set = PhaseSet::new();
    set.corrected = decode(&bytes[0])?;
    for (slot, b) in set.phases.iter_mut().zip(&bytes[1..]) {
        *slot = decode(b)?;
    }
    Ok(set)
}

fn encode(h: &Histogram<u64>) -> Vec<u8> {
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut out = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut out).expect("serialising into memory cannot fail");
    out
}

/// HdrHistogram's V2 encoding: a cookie, then the payload's length, a normalising offset,
/// the significant digits, the lowest and highest trackable values and an integer-to-double
/// ratio (40 bytes in all, big-endian), then the counts. The deflate form is a cookie, the
/// compressed length and the zlib stream of the V2 encoding.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
const V2_HEADER: usize = 40;

/// A histogram of a results file. Bounded whatever the file says: hdrhistogram's own
/// deflate decoder allocates the payload length the header declares (a 5.9 KB file made
/// it allocate 4 GiB) and a histogram as wide as its declared bounds. So the stream is
/// inflated here to at most [`MAX_HISTOGRAM_BYTES`], the declared length must be what is
/// there, the bounds at most [`MAX_HISTOGRAM_COUNTERS`] counters; only then does
/// hdrhistogram read the plain V2 form.
fn decode(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    let plain = inflate(bytes)?;
    check_v2_header(&plain)?;
    let mut h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &plain[..])
        .map_err(|e| format!("bad histogram: {e:?}"))?;
    // Deserialised histograms carry the writer's bounds; re-home them into ours so that
    // additions never fail.
    if h.high() != HIGHEST_US || h.sigfig() != SIGNIFICANT_DIGITS {
        let mut ours = new_histogram();
        ours.add(&h).map_err(|e| format!("histogram out of range: {e:?}"))?;
        h = ours;
    }
    Ok(h)
}

/// The plain V2 encoding of a histogram: inflated, at most [`MAX_HISTOGRAM_BYTES`].
fn inflate(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    use std::io::Read;
    let word = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")));
    match word(0) {
        Some(V2_COOKIE) => Ok(std::borrow::Cow::Borrowed(bytes)),
        Some(V2_DEFLATE_COOKIE) => {
            let len = word(4).ok_or("bad histogram: cut off")? as usize;
            let stream = &bytes[8..bytes.len().min(8usize.saturating_add(len))];
            let mut plain = Vec::new();
            flate2::read::ZlibDecoder::new(stream)
                .take(MAX_HISTOGRAM_BYTES as u64 + 1)
                .read_to_end(&mut plain)
                .map_err(|e| format!("bad histogram: {e}"))?;
            if plain.len() > MAX_HISTOGRAM_BYTES {
                return Err(format!(
                    "bad histogram: inflates past the {} limit",
                    fmt_limit(MAX_HISTOGRAM_BYTES as u64)
                ));
            }
            Ok(std::borrow::Cow::Owned(plain))
        }
        _ => Err("bad histogram: not an HdrHistogram V2 encoding".into()),
    }
}

/// The header of a plain V2 histogram promises no more than is there: its payload length
/// at most the bytes that follow, its bounds at most [`MAX_HISTOGRAM_COUNTERS`] counters.
fn check_v2_header(plain: &[u8]) -> Result<(), String> {
    let header = plain.get(..V2_HEADER).ok_or("bad histogram: cut off inside its header")?;
    let u32_at = |at: usize| u32::from_be_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_be_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    let (len, digits, low, high) = (u32_at(4) as usize, u32_at(12), u64_at(16), u64_at(24));
    if u32_at(0) != V2_COOKIE || len > plain.len() - V2_HEADER {
        return Err(format!("bad histogram: declares {len} bytes of counts, holds {}", plain.len() - V2_HEADER));
    }
    match counters(low, high, digits) {
        Some(n) if n <= MAX_HISTOGRAM_COUNTERS => Ok(()),
        _ => Err(format!("bad histogram: bounds {low}..{high} at {digits} digits are out of range")),
    }
}

/// How many counters HdrHistogram allocates for these bounds (as its `new_with_bounds`
/// computes them), or `None` for bounds it refuses.
fn counters(low: u64, high: u64, digits: u32) -> Option<u64> {
    if low == 0 || digits > 5 || high / 2 < low {
        return None;
    }
    let largest = 2 * 10u64.pow(digits);
    let unit_magnitude = 63 - low.leading_zeros();
    let sub_bucket_magnitude = 64 - (largest - 1).leading_zeros();
    if unit_magnitude + sub_bucket_magnitude > 63 {
        return None;
    }
    // Buckets to cover `high`, each twice as wide as the one before.
    let mut untrackable = 1u64 << (sub_bucket_magnitude + unit_magnitude);
    let mut buckets = 1u64;
    while untrackable <= high {
        if untrackable > u64::MAX / 2 {
            buckets += 1;
            break;
        }
        untrackable <<= 1;
        buckets += 1;
    }
    Some((buckets + 1) << (sub_bucket_magnitude - 1))
}

impl Recorder {
    /// The serialised form.
    pub(crate) fn wire(&self) -> Wire {
        Wire {
            corrected: encode(&self.corrected),
            service: encode(&self.service),
            lag: encode(&self.lag),
            phases: self.phases.iter().map(encode).collect(),
            by_class: self.by_class.iter().map(encode).collect(),
            counts: self.counts.clone(),
            status: self.status_counts().into_iter().collect(),
            examples: self
                .examples
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.as_ref().map(|m| (i as u8, m.clone())))
                .collect(),
            hit: self.hit.as_deref().map(encode_set),
            miss: self.miss.as_deref().map(encode_set),
            backends: self.backends.encode(),
            whole: self.whole.as_deref().map(encode),
            names: self.names.encode(),
            methods: self.methods.encode(),
            timeline: self.timeline.written(),
            // No more than a reader takes (see `MAX_INTERVAL_SAMPLES`).
            samples: self.samples.iter().take(MAX_INTERVAL_SAMPLES).copied().collect(),
            flows: self.flows.encode(),
            replies: self.replies.encode(),
        }
    }
}

impl Serialize for Recorder {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.wire().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Recorder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_wire(Wire::deserialize(d)?).map_err(refuse)
    }
}

/// A recorder from its serialised form.
pub(crate) fn from_wire(w: Wire) -> Result<Recorder, String> {
    let hist = |b: &[u8]| decode(b);
    let array = |v: &[Vec<u8>]| -> Result<Vec<Histogram<u64>>, String> { v.iter().map(|b| hist(b)).collect() };
    let mut r = Recorder::new();
    r.corrected = hist(&w.corrected)?;
    r.service = hist(&w.service)?;
    r.lag = hist(&w.lag)?;
    for (slot, h) in r.phases.iter_mut().zip(array(&w.phases.0)?) {
        *slot = h;
    }
    for (slot, h) in r.by_class.iter_mut().zip(array(&w.by_class.0)?) {
        *slot = h;
    }
    r.counts = w.counts;
    r.timeline = Timeline(w.timeline.0);
    r.samples = w.samples.0;
    r.hit = w.hit.map(|set| decode_set(&set.0)).transpose()?.map(Box::new);
    r.miss = w.miss.map(|set| decode_set(&set.0)).transpose()?.map(Box::new);
    r.whole = w.whole.as_deref().map(hist).transpose()?.map(Box::new);
    r.backends = Keyed::decode(w.backends, true)?;
    r.names = Keyed::decode(w.names, false)?;
    r.methods = Keyed::decode(w.methods, false)?;
    r.flows = Keyed::decode(w.flows, true)?;
    r.replies = Keyed::decode(w.replies, false)?;
    for (code, n) in w.status.0 {
        r.status[status_slot(code)] += n;
    }
    for (i, m) in w.examples.0 {
        if let Some(slot) = r.examples.get_mut(usize::from(i)) {
            *slot = Some(m);
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legacy::v9::RecorderV9;
    use proptest::prelude::*;

    fn sample(latency_ms: u64, outcome: Outcome) -> Sample {
        Sample {
            intended: Duration::ZERO,
            started: Duration::from_millis(1),
            ended: Duration::from_millis(1 + latency_ms),
            phases: [None, Some(Duration::from_micros(50)), None, None, None, None],
            outcome,
            bytes_in: 100,
            bytes_out: 10,
            late: false,
            cache: CacheStatus::Unknown,
            intent: Default::default(),
            origin: Default::default(),
            rejected: false,
        }
    }

    /// A step's check that fails on a 200 fails the request in every figure it goes into:
    /// the totals, its name, its method, its second, its backend; the status stays 200.
    #[test]
    fn a_rejected_answer_fails_its_request_everywhere() {
        let mut r = Recorder::new();
        let keys = SampleKeys { name: Some(b"step"), method: Some(b"GET"), backend: Some(b"b1") };
        r.record_keyed(&sample(3, Outcome::Status(200)), &keys);
        r.record_keyed(&Sample { rejected: true, ..sample(3, Outcome::Status(200)) }, &keys);
        r.record_keyed(&Sample { rejected: true, ..sample(3, Outcome::Status(404)) }, &keys);
        r.names.mark(b"step", FlowFailure::Check, || "check status failed".into());
        assert_eq!((r.counts.completed, r.counts.ok, r.counts.rejected), (3, 1, 1), "a rejected 404 is a 404");
        for keyed in [&r.names, &r.methods, &r.backends] {
            assert_eq!((keyed[0].requests, keyed[0].failed), (3, 2), "{}", keyed[0].name);
        }
        assert_eq!(r.names[0].flow.check_failed, 1);
        let tick = r.timeline[0];
        assert_eq!((tick.ok, tick.failed), (1, 2));
        assert_eq!(r.status_counts()[&200], 2);
        let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
        assert_eq!(back.counts, r.counts);
    }

    /// Versions 5 to 9 counted a rejected 2xx as `ok` in the totals and under its method,
    /// and as failed under its step's name: read today, the totals and the one method are
    /// put right from the names.
    #[test]
    fn older_files_count_their_rejected_answers_from_the_names() {
        let mut r = Recorder::new();
        let keys = SampleKeys { name: Some(b"step"), method: Some(b"GET"), backend: None };
        for _ in 0..3 {
            r.record_keyed(&sample(3, Outcome::Status(200)), &keys);
        }
        r.record_keyed(&sample(3, Outcome::Status(500)), &keys);
        r.flows.record_flow(b"group", Some(FlowFailure::Check), Duration::from_millis(3), 0, Duration::ZERO);
        // As version 9 wrote a 200 whose check failed: failed under its name alone.
        r.names.stats[0].failed += 1;
        r.names.mark(b"step", FlowFailure::Check, || "check".into());
        assert_eq!((r.counts.ok, r.methods[0].failed), (3, 1));
        let bytes = postcard::to_stdvec(&RecorderV9(r.clone())).unwrap();
        let back = postcard::from_bytes::<RecorderV9>(&bytes).unwrap().0;
        assert_eq!((back.counts.ok, back.counts.rejected, back.methods[0].failed), (2, 1, 2));
        // Without flows nothing was rejected, whatever the names say.
        let mut plain = r.clone();
        plain.flows = Keyed::default();
        let bytes = postcard::to_stdvec(&RecorderV9(plain)).unwrap();
        let back = postcard::from_bytes::<RecorderV9>(&bytes).unwrap().0;
        assert_eq!((back.counts.ok, back.counts.rejected), (3, 0));
    }

    #[test]
    fn cache_split_is_allocated_on_demand_and_round_trips() {
        let mut r = Recorder::new();
        r.record(&sample(3, Outcome::Status(200)));
        assert!(r.hit.is_none() && r.miss.is_none());
        let hit = Sample { cache: CacheStatus::Hit, ..sample(2, Outcome::Status(200)) };
        let stale = Sample { cache: CacheStatus::Stale, ..sample(2, Outcome::Status(200)) };
        let miss = Sample { cache: CacheStatus::Miss, ..sample(9, Outcome::Status(200)) };
        for s in [&hit, &stale, &miss] {
            r.record(s);
        }
        assert_eq!(r.counts.cache, [1, 1, 0, 0, 1, 1]);
        assert_eq!(r.counts.cache_bytes[CacheStatus::Hit as usize], 100);
        assert_eq!(r.hit.as_ref().unwrap().corrected.len(), 2);
        assert_eq!(r.miss.as_ref().unwrap().phases[Phase::Connect as usize].len(), 1);
        let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let mut sum = Recorder::new();
        sum.add(&r);
        sum.add(&r);
        assert_eq!(sum.hit.unwrap().corrected.len(), 4);
    }

    #[test]
    fn backends_are_kept_apart_up_to_a_bound() {
        let mut r = Recorder::new();
        let ok = sample(4, Outcome::Status(200));
        let bad = sample(4, Outcome::Status(502));
        r.backends.record(b"a", &ok);
        r.backends.record(b"b", &bad);
        r.backends.record(b"a", &ok);
        assert_eq!(
            r.backends.iter().map(|b| (b.name.as_str(), b.requests, b.failed)).collect::<Vec<_>>(),
            [("a", 2, 0), ("b", 1, 1)]
        );
        for i in 0..200 {
            r.backends.record(format!("req-{i}").as_bytes(), &ok);
        }
        assert_eq!(r.backends.len(), MAX_KEYS);
        assert_eq!(r.backends.last().unwrap().name, "(other)");
        // Backends keep when they answered (the samples end at 5 ms: tick 0); names do not.
        assert_eq!(r.backends[0].timeline.iter().map(|t| (t.tick, t.ok)).collect::<Vec<_>>(), [(0, 2)]);
        r.names.record(b"get", &ok);
        assert!(r.names[0].timeline.is_empty());
        let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let mut sum = Recorder::new();
        sum.add(&r);
        sum.add(&r);
        assert_eq!(sum.backends[0].requests, 4);
    }

    #[test]
    fn records_counts_status_and_errors() {
        let mut r = Recorder::new();
        r.record(&sample(5, Outcome::Status(200)));
        r.record(&sample(5, Outcome::Status(503)));
        r.record(&sample(5, Outcome::Error(ErrorKind::Reset)));
        assert_eq!(r.counts.completed, 3);
        assert_eq!(r.counts.ok, 1);
        assert_eq!(r.counts.errors[ErrorKind::Reset as usize], 1);
        assert_eq!(r.status_counts(), BTreeMap::from([(200, 1), (503, 1)]));
        assert_eq!(r.by_class[1].len(), 1);
        assert_eq!(r.by_class[5].len(), 1);
        // The phase that did not happen is absent, not zero.
        assert_eq!(r.phase(Phase::Dns).len(), 0);
        assert_eq!(r.phase(Phase::Connect).len(), 3);
        assert_eq!(r.corrected.max(), r.corrected.highest_equivalent(6_000));
    }

    /// A V2 header (and no counts) declaring `len` bytes of counts, deflated as a results
    /// file holds it.
    fn crafted(len: u32, low: u64, high: u64, digits: u32) -> Vec<u8> {
        use std::io::Write;
        let mut plain = Vec::new();
        for word in [V2_COOKIE, len, 0, digits] {
            plain.extend_from_slice(&word.to_be_bytes());
        }
        for word in [low, high, 1f64.to_bits()] {
            plain.extend_from_slice(&word.to_be_bytes());
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&plain).unwrap();
        let stream = z.finish().unwrap();
        let mut out = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        out.extend_from_slice(&(stream.len() as u32).to_be_bytes());
        out.extend_from_slice(&stream);
        out
    }

    #[test]
    fn histograms_decode_within_bounds_whatever_their_header_claims() {
        // A crafted header claiming 4 GiB of counts: hdrhistogram's deflate decoder would
        // allocate them before finding the stream ends.
        let err = decode(&crafted(0xFFFF_FF00, 1, HIGHEST_US, 3)).unwrap_err();
        assert!(err.contains("declares 4294967040 bytes of counts, holds 0"), "{err}");
        // Bounds as wide as HdrHistogram allows: 6 million counters allocated up front.
        let err = decode(&crafted(0, 1, u64::MAX, 5)).unwrap_err();
        assert!(err.contains("out of range"), "{err}");
        // A stream that inflates past the limit (a zip bomb) stops at it.
        let mut bomb = crafted(0, 1, HIGHEST_US, 3);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &vec![0u8; MAX_HISTOGRAM_BYTES + 100]).unwrap();
        let stream = z.finish().unwrap();
        bomb.truncate(4);
        bomb.extend_from_slice(&(stream.len() as u32).to_be_bytes());
        bomb.extend_from_slice(&stream);
        assert!(decode(&bomb).unwrap_err().contains("inflates past the 1 MiB limit"));
        assert!(decode(b"nonsense").unwrap_err().contains("not an HdrHistogram"));
        // What barrage writes still reads, with its counts, and our bounds have 23,552
        // counters.
        let mut h = new_histogram();
        h.record(1234).unwrap();
        h.record(HIGHEST_US).unwrap();
        let back = decode(&encode(&h)).unwrap();
        assert_eq!((back.len(), back.max(), back.high()), (2, h.max(), HIGHEST_US));
        assert_eq!(counters(1, HIGHEST_US, 3), Some(23_552));
        assert_eq!(counters(1, HIGHEST_US, 3).unwrap() as usize, h.distinct_values());
    }

    /// A recorder as it reads back from `w` written, or why it does not.
    fn read(w: &Wire) -> Result<Recorder, String> {
        let bytes = postcard::to_stdvec(w).unwrap();
        crate::bounded::decoding(|| postcard::from_bytes::<Recorder>(&bytes))
    }

    #[test]
    fn a_recorder_holds_no_more_histograms_than_it_has() {
        let mut w = Recorder::new().wire();
        w.phases.0.push(encode(&new_histogram()));
        assert_eq!(read(&w).unwrap_err(), "7 phase histograms, over the limit of 6");
        let mut w = Recorder::new().wire();
        w.by_class.0.push(encode(&new_histogram()));
        assert_eq!(read(&w).unwrap_err(), "7 status class histograms, over the limit of 6");
    }

    /// Timelines and samples are bounded in the file only: a recorder writes no more than
    /// a reader takes, and reads back what it wrote up to there.
    #[test]
    fn a_recorder_writes_no_more_ticks_or_samples_than_a_reader_takes() {
        let mut r = Recorder::new();
        for tick in 0..MAX_INTERVAL_TICKS as u64 + 5 {
            let s = Sample { ended: Duration::from_millis(tick * 100), ..sample(0, Outcome::Status(200)) };
            r.record(&s);
            r.backends.record(b"b1", &s);
        }
        r.samples = vec![RequestPoint::default(); MAX_INTERVAL_SAMPLES + 5];
        let back = read(&r.wire()).unwrap();
        assert_eq!((back.timeline.len(), back.backends[0].timeline.len()), (MAX_INTERVAL_TICKS, MAX_INTERVAL_TICKS));
        assert_eq!(back.timeline[..], r.timeline[..MAX_INTERVAL_TICKS]);
        assert_eq!(back.samples.len(), MAX_INTERVAL_SAMPLES);
        // Crafted: one more is refused, from its length.
        let mut w = r.wire();
        w.timeline.0.push(Tick::default());
        assert_eq!(read(&w).unwrap_err(), "1001 timeline ticks, over the limit of 1000");
        let mut w = r.wire();
        w.backends.0[0].4 .0.push(Tick::default());
        assert_eq!(read(&w).unwrap_err(), "1001 ticks of a key's timeline, over the limit of 1000");
        let mut w = r.wire();
        w.samples.0.push(RequestPoint::default());
        assert_eq!(
            read(&w).unwrap_err(),
            format!("{} request samples, over the limit of {}", MAX_INTERVAL_SAMPLES + 1, MAX_INTERVAL_SAMPLES)
        );
    }

    /// Found by the fuzz harness: a results file whose key counted more failures than
    /// requests made the summary underflow. It is refused as corrupt where it is read.
    #[test]
    fn a_key_with_more_failures_than_requests_does_not_decode() {
        let key = |failed| std::iter::once(get_key(failed)).collect();
        assert!(Keyed::decode::<NameLimit>(key(1), false).is_ok());
        let err = Keyed::decode::<NameLimit>(key(2), false).err().unwrap();
        assert_eq!(err, "a key counts 2 failed of 1 requests");
    }

    #[test]
    fn round_trips_through_postcard() {
        let mut r = Recorder::new();
        r.record(&sample(7, Outcome::Status(204)));
        r.record(&sample(7, Outcome::Error(ErrorKind::Unreachable)));
        r.record_stale_retry();
        r.set_example(ErrorKind::Tls, "bad cert".into());
        r.set_example(ErrorKind::Unreachable, "Network is unreachable (os error 101)".into());
        let bytes = postcard::to_stdvec(&r).unwrap();
        let back: Recorder = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, r);
        let mut sum = back.clone();
        sum.add(&back);
        assert_eq!((sum.counts.stale_retries, sum.counts.errors[ErrorKind::Unreachable as usize]), (2, 2));
    }

    /// Merged HTTP/2 figures: connections and stalls add up, streams in use is the most on
    /// any connection, the stream cap the lowest a server set (0, none, never wins).
    #[test]
    fn http2_figures_merge_as_sums_a_maximum_and_a_lowest_cap() {
        let one = |most_open, cap, stalls| {
            let mut r = Recorder::new();
            r.record_http_connection(Protocol::Http2, false);
            r.record_streams(&StreamFigures { most_open, cap, send_stalls: stalls, recv_stalls: 1 });
            r
        };
        let (mut a, b, c) = (one(10, 0, 1), one(5, 5, 2), one(8, 7, 0));
        a.record_http_connection(Protocol::Http1, true);
        a.record_stream_retry();
        for other in [&b, &c] {
            a.add(other);
        }
        let n = &a.counts;
        assert_eq!((n.connections, n.protocols, n.http1_fallbacks, n.stream_retries), (4, [1, 3, 0], 1, 1));
        assert_eq!((n.streams_max, n.stream_cap, n.send_stalls, n.recv_stalls), (10, 5, 3, 3));
        // The order of merging does not matter.
        let mut d = c.clone();
        d.add(&b);
        assert_eq!(d.counts.stream_cap, 5);
        assert_eq!(lowest_cap(0, 0), 0);
    }

    #[test]
    fn examples_are_written_without_the_secrets_they_quote() {
        let mut r = Recorder::new();
        r.set_example(ErrorKind::Other, "error sending request for url (http://u:S3CRET@h/?token=S3CRET)".into());
        r.set_example(ErrorKind::Tls, "bad cert".into());
        r.redact_examples(&crate::secrets::Redaction::default());
        assert_eq!(
            r.example(ErrorKind::Other),
            Some("error sending request for url (http://u:<redacted>@h/?token=<redacted>)")
        );
        assert_eq!(r.example(ErrorKind::Tls), Some("bad cert"));
    }

    #[test]
    fn timeline_counts_per_tenth_of_a_second_in_any_order() {
        let mut t = Timeline::default();
        for (ms, ok) in [(50, true), (99, false), (100, true), (350, false), (120, true), (5, true)] {
            t.record(Duration::from_millis(ms), ok, ms);
        }
        let ticks: Vec<(u32, u32, u32, u32)> = t.iter().map(|t| (t.tick, t.ok, t.failed, t.max_us)).collect();
        assert_eq!(ticks, [(0, 2, 1, 99), (1, 2, 0, 120), (3, 0, 1, 350)]);
        let mut later = Timeline::default();
        later.record(Duration::from_millis(250), true, 1000);
        later.shift(1);
        t.add(&later);
        let ticks: Vec<(u32, u32, u32, u32)> = t.iter().map(|t| (t.tick, t.ok, t.failed, t.max_us)).collect();
        assert_eq!(ticks, [(0, 2, 1, 99), (1, 2, 0, 120), (3, 1, 1, 1000)]);
    }

    proptest! {
        #[test]
        fn merge_keeps_counts_and_is_order_free(a in proptest::collection::vec(1u64..5_000, 0..50),
                                                b in proptest::collection::vec(1u64..5_000, 0..50)) {
            let fill = |v: &[u64]| {
                let mut r = Recorder::new();
                for ms in v { r.record(&sample(*ms, Outcome::Status(200))); }
                r
            };
            let (ra, rb) = (fill(&a), fill(&b));
            let mut ab = ra.clone();
            ab.add(&rb);
            let mut ba = rb.clone();
            ba.add(&ra);
            prop_assert_eq!(ab.counts.completed, (a.len() + b.len()) as u64);
            prop_assert_eq!(&ab.corrected, &ba.corrected);
            let all: Vec<u64> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(ab.corrected, fill(&all).corrected);
        }

        /// Runs of alike requests recorded at once leave the recorder exactly as recording
        /// them one by one does: histograms, counters, timelines, the scatter plot's points
        /// (a tick's first ten, across runs), and the figures by name and backend.
        #[test]
        fn alike_requests_recorded_at_once_are_recorded_as_one_by_one(
            runs in proptest::collection::vec((1u64..3_000, 1u64..30, 0u8..4, 0u64..400), 1..40),
        ) {
            let (mut once, mut each) = (Recorder::new(), Recorder::new());
            let total: u64 = runs.iter().map(|r| r.1).sum();
            for (ms, n, kind, at_ms) in runs {
                let outcome = match kind {
                    0 => Outcome::Status(200),
                    1 => Outcome::Status(503),
                    _ => Outcome::Error(ErrorKind::Reset),
                };
                let cache = if kind == 3 { CacheStatus::Hit } else { CacheStatus::Unknown };
                let shift = Duration::from_millis(at_ms);
                let one = Sample {
                    intended: shift,
                    started: shift + Duration::from_millis(1),
                    ended: shift + Duration::from_millis(1 + ms),
                    late: kind == 1,
                    cache,
                    intent: Default::default(),
                    origin: Default::default(),
                    ..sample(ms, outcome)
                };
                let backend = [b"a".as_slice(), b"b"][usize::from(kind % 2)];
                let keys = SampleKeys { name: Some(b"GET"), method: None, backend: Some(backend) };
                for _ in 0..n {
                    each.record_keyed(&one, &keys);
                }
                let all = Sample { bytes_in: one.bytes_in * n, bytes_out: one.bytes_out * n, ..one };
                once.record_alike(&all, n, &keys);
            }
            prop_assert_eq!(once.counts.completed, total);
            prop_assert_eq!(once.corrected.len(), total);
            prop_assert_eq!(once.names[0].latency.len(), total);
            // The scatter plot has each tick's first ten requests, no more, no fewer.
            for t in once.timeline.iter() {
                let points = once.samples.iter().filter(|p| u64::from(p.ended_ms) / 100 == u64::from(t.tick)).count();
                prop_assert_eq!(points as u32, (t.ok + t.failed).min(SAMPLES_PER_TICK));
            }
            prop_assert_eq!(once, each);
        }

        #[test]
        fn quantiles_are_monotonic(v in proptest::collection::vec(1u64..10_000_000, 1..200)) {
            let mut h = new_histogram();
            for x in &v { h.record(*x).unwrap(); }
            let mut last = 0;
            for q in [0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
                let x = h.value_at_quantile(q);
                prop_assert!(x >= last);
                last = x;
            }
        }
    }

    /// A server error reply: a 500 (`ERR`) or a 421 (`MOVED`), as the key-value engine
    /// maps them.
    fn reply(latency_ms: u64, status: u16) -> Sample {
        sample(latency_ms, Outcome::Status(status))
    }

    /// Replies are counted per class with their latency; the example of each is made once,
    /// by the first reply of its class, and survives the file and a merge (the first kept).
    #[test]
    fn replies_count_per_class_with_one_example_each() {
        let mut r = Recorder::new();
        let mut made = 0;
        for (class, status, latency, text) in [
            (&b"ERR"[..], 500, 2, "ERR wrong number of arguments for 'set' command"),
            (b"MOVED", 421, 4, "MOVED 3999 127.0.0.1:6381"),
            (b"ERR", 500, 6, "ERR unknown command 'FOO'"),
            (b"ERR", 500, 8, "ERR again"),
        ] {
            r.replies.record_example(class, &reply(latency, status), || {
                made += 1;
                text.to_string()
            });
        }
        assert_eq!(made, 2, "one example made per class, none for the later replies");
        let rows: Vec<_> =
            r.replies.iter().map(|k| (k.name.as_str(), k.requests, k.failed, k.example.as_deref())).collect();
        assert_eq!(
            rows,
            [
                ("ERR", 3, 3, Some("ERR wrong number of arguments for 'set' command")),
                ("MOVED", 1, 1, Some("MOVED 3999 127.0.0.1:6381")),
            ]
        );
        // Latency from the intended start: 1 ms late start + 2, 6 and 8 ms.
        let err = &r.replies[0].latency;
        assert_eq!((err.len(), err.min(), err.max()), (3, 3_000, err.highest_equivalent(9_000)));
        assert!(r.replies.iter().all(|k| k.timeline.is_empty()), "replies keep no timeline");
        let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
        assert_eq!(back, r);

        let mut other = Recorder::new();
        other.replies.record_example(b"ERR", &reply(10, 500), || "ERR from the other run".into());
        other.replies.record_example(b"LOADING", &reply(1, 503), || "LOADING Redis is loading".into());
        let mut sum = r.clone();
        sum.add(&other);
        let rows: Vec<_> =
            sum.replies.iter().map(|k| (k.name.as_str(), k.requests, k.latency.len(), k.example.as_deref())).collect();
        assert_eq!(
            rows,
            [
                ("ERR", 4, 4, Some("ERR wrong number of arguments for 'set' command")),
                ("MOVED", 1, 1, Some("MOVED 3999 127.0.0.1:6381")),
                ("LOADING", 1, 1, Some("LOADING Redis is loading")),
            ]
        );
        // A recorder without an example of its own takes the other's.
        let mut empty = Recorder::new();
        empty.add(&other);
        assert_eq!(empty.replies[0].example.as_deref(), Some("ERR from the other run"));
    }

    /// A server sending a new class name per reply cannot grow memory: classes past the
    /// bound count as `(other)`, with the first of their examples.
    #[test]
    fn reply_classes_are_bounded_like_the_other_keys() {
        let mut r = Recorder::new();
        for i in 0..500 {
            let class = format!("E{i}");
            r.replies.record_example(class.as_bytes(), &reply(1, 500), || format!("{class} said"));
        }
        assert_eq!(r.replies.len(), MAX_KEYS);
        let other = r.replies.last().unwrap();
        assert_eq!((other.name.as_str(), other.requests), ("(other)", 500 - (MAX_KEYS as u64 - 1)));
        assert_eq!(other.example.as_deref(), Some("E63 said"));
        let mut sum = r.clone();
        sum.add(&r);
        assert_eq!((sum.replies.len(), sum.replies.iter().map(|k| k.requests).sum::<u64>()), (MAX_KEYS, 1000));
    }

    /// A results file holding more reply classes than a recorder keeps is refused where it
    /// is read, as one with too many names is: from the list's length, before its keys are
    /// decoded.
    #[test]
    fn a_recorder_holds_no_more_reply_classes_than_it_keeps() {
        let key = crafted_key;
        let mut w = Recorder::new().wire();
        w.replies = (0..MAX_KEYS).map(key).collect();
        assert_eq!(read(&w).unwrap().replies.len(), MAX_KEYS);
        w.replies.0.push(key(MAX_KEYS));
        assert_eq!(read(&w).unwrap_err(), "65 server reply classes, over the limit of 64");
        let mut w = Recorder::new().wire();
        w.names = (0..=MAX_KEYS).map(key).collect();
        assert_eq!(read(&w).unwrap_err(), "65 request names, over the limit of 64");
        // A length that claims billions of keys ends with the bytes, allocating nothing for
        // them: the replies are the last field, so the claim is the record's last bytes.
        let mut bytes = postcard::to_stdvec(&Recorder::new()).unwrap();
        assert_eq!(bytes.pop(), Some(0), "an empty list of replies ends the record");
        bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(postcard::from_bytes::<Recorder>(&bytes).is_err());
    }

    /// Why a recorder does not decode reaches the reader: postcard keeps no message.
    #[test]
    fn the_reason_a_recorder_is_refused_is_kept() {
        let mut w = Recorder::new().wire();
        w.names = std::iter::once(get_key(2)).collect();
        assert_eq!(read(&w).unwrap_err(), "a key counts 2 failed of 1 requests");
        let mut w = Recorder::new().wire();
        w.lag = vec![1, 2, 3];
        assert_eq!(read(&w).unwrap_err(), "bad histogram: not an HdrHistogram V2 encoding");
    }

    /// A key of one request, `failed` of them failed.
    fn get_key(failed: u64) -> KeyedWire {
        ("GET".into(), 1, failed, encode(&new_histogram()), Bounded::default(), FlowCounts::default(), None)
    }

    #[test]
    fn reply_examples_are_written_without_the_secrets_they_quote() {
        let mut r = Recorder::new();
        r.replies.record_example(b"ERR", &reply(1, 500), || "ERR bad URL http://u:S3CRET@h/?token=S3CRET".into());
        r.replies.record_example(b"MOVED", &reply(1, 421), || "MOVED 3999 127.0.0.1:6381".into());
        r.redact_examples(&crate::secrets::Redaction::default());
        assert_eq!(r.replies[0].example.as_deref(), Some("ERR bad URL http://u:<redacted>@h/?token=<redacted>"));
        assert_eq!(r.replies[1].example.as_deref(), Some("MOVED 3999 127.0.0.1:6381"));
    }

    /// Steps and flows are counted apart, survive the results file and add up exactly.
    #[test]
    fn flow_figures_round_trip_and_merge() {
        let mut r = Recorder::new();
        r.names.record(b"post", &Sample { rejected: true, ..sample(5, Outcome::Status(200)) });
        r.names.mark(b"post", FlowFailure::Capture, || "capture albumID found nothing".into());
        r.names.record(b"get", &Sample { rejected: true, ..sample(5, Outcome::Status(404)) });
        r.names.mark(b"get", FlowFailure::Check, || "check status".into());
        r.names.skip(b"get");
        r.flows.record_flow(b"writers", Some(FlowFailure::Capture), Duration::from_millis(30), 1, Duration::ZERO);
        r.flows.record_flow(b"writers", None, Duration::from_millis(10), 0, Duration::ZERO);
        r.flows.record_dropped(b"writers", 3);
        r.flows.record_unfinished(b"writers");
        let post = &r.names[0];
        assert_eq!((post.requests, post.failed, post.flow.capture_failed), (1, 1, 1));
        let get = &r.names[1];
        // The 404 failed already: the check does not count it twice.
        assert_eq!((get.requests, get.failed, get.flow.check_failed, get.flow.skipped), (1, 1, 1, 1));
        let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let mut sum = back.clone();
        sum.add(&r);
        let w = &sum.flows[0];
        assert_eq!((w.requests, w.failed, w.latency.len()), (4, 2, 4));
        assert_eq!(w.flow, FlowCounts { check_failed: 0, capture_failed: 2, skipped: 2, dropped: 6, unfinished: 2 });
    }
}
