//! [`Recorder`]: HDR histograms and counters for a set of samples, merged by addition.
//!
//! Each engine thread records into its own recorder (no lock, no allocation per request) and
//! hands it over once per interval; whole-run figures are the sum of the intervals.

use crate::sample::{
    CacheStatus, ErrorKind, Intent, Origin, Outcome, Phase, Protocol, Sample, CACHE_STATUS_COUNT, ERROR_KIND_COUNT,
    PHASE_COUNT, PROTOCOL_COUNT,
};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

mod keyed;
#[cfg(test)]
mod tests;
mod timeline;
mod wire;

pub use keyed::{FlowCounts, FlowFailure, Keyed, KeyedStats, MAX_KEYS};
pub use timeline::{RequestPoint, Tick, Timeline, SAMPLES_PER_TICK, TICK};

/// A histogram in HdrHistogram's compressed V2 form, as results files hold it (the run
/// history keeps its intervals' histograms so).
pub fn encode_histogram(h: &Histogram<u64>) -> Vec<u8> {
    wire::encode(h)
}

/// A histogram from its compressed V2 form, bounded as a results file's are whatever the
/// bytes say, in this crate's bounds ([`new_histogram`]).
pub fn decode_histogram(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    wire::decode(bytes)
}
#[cfg(test)]
pub(crate) use wire::WideReplies;
pub(crate) use wire::{from_wire, FlowLimit, KeyTicks, KeyedWire, Keys, Wire};

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
    /// `--trace-context`: the slowest sampled requests ([`crate::trace::keep_exemplar`]).
    /// Not in the recorder's own encoding: the results file writes them as a record of
    /// their own before their interval's ([`crate::file::ResultsWriter::write_interval`]),
    /// so files without them read as they were.
    pub exemplars: Vec<crate::trace::Exemplar>,
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
            exemplars: Vec::new(),
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
        for e in &other.exemplars {
            crate::trace::keep_exemplar(&mut self.exemplars, *e);
        }
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
