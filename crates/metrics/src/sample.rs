//! One request's measurement: [`Sample`], its [`Phase`]s and its [`Outcome`].

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The phases of a request, in the order they happen. A phase that did not happen (no DNS
/// lookup for an IP literal, no connect on a reused connection, no TLS over cleartext) is
/// `None` in [`Sample::phases`], never a zero that would drag the averages down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Name resolution.
    Dns,
    /// TCP connect.
    Connect,
    /// TLS handshake.
    Tls,
    /// Writing the request (headers and body) to the socket. On HTTP/2, from the stream's
    /// opening to the write that carried its last frame: waiting for flow-control window,
    /// and with `--rounds` for its round, included.
    Send,
    /// From the request written to the response head received: time to first byte.
    Wait,
    /// From the response head to the last body byte.
    Receive,
}

/// Number of [`Phase`]s.
pub const PHASE_COUNT: usize = 6;

impl Phase {
    /// All phases, in order.
    pub const ALL: [Phase; PHASE_COUNT] =
        [Phase::Dns, Phase::Connect, Phase::Tls, Phase::Send, Phase::Wait, Phase::Receive];

    /// The name used in reports and files.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Dns => "dns",
            Phase::Connect => "connect",
            Phase::Tls => "tls",
            Phase::Send => "send",
            Phase::Wait => "wait",
            Phase::Receive => "receive",
        }
    }
}

/// Why a request failed. A fixed set, counted in an array: a failure is data, not an `Err`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The connection was refused (nothing listening).
    Refused,
    /// No route to the network or the host (ENETUNREACH, EHOSTUNREACH).
    Unreachable,
    /// TCP connect (or TLS handshake) did not finish within `--connect-timeout`.
    ConnectTimeout,
    /// The response did not complete within `--timeout`.
    RequestTimeout,
    /// The peer reset or closed the connection before the response was complete.
    Reset,
    /// TLS handshake or certificate failure.
    Tls,
    /// The peer answered something that is not valid HTTP.
    Protocol,
    /// The host name did not resolve.
    Dns,
    /// Anything else (local resource limits, ...).
    Other,
}

/// Number of [`ErrorKind`]s.
pub const ERROR_KIND_COUNT: usize = 9;

impl ErrorKind {
    /// All kinds, in report order.
    pub const ALL: [ErrorKind; ERROR_KIND_COUNT] = [
        ErrorKind::Refused,
        ErrorKind::Unreachable,
        ErrorKind::ConnectTimeout,
        ErrorKind::RequestTimeout,
        ErrorKind::Reset,
        ErrorKind::Tls,
        ErrorKind::Protocol,
        ErrorKind::Dns,
        ErrorKind::Other,
    ];

    /// The name used in reports and files.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::RequestTimeout => "request_timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Tls => "tls",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Dns => "dns",
            ErrorKind::Other => "other",
        }
    }
}

/// The HTTP version a connection spoke, as the server agreed to it (ALPN over TLS, or
/// the run's choice over cleartext).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// HTTP/1.1: one request at a time per connection.
    Http1,
    /// HTTP/2: requests multiplexed as streams.
    Http2,
    /// HTTP/3: requests multiplexed as QUIC streams.
    Http3,
}

/// Number of [`Protocol`]s.
pub const PROTOCOL_COUNT: usize = 3;

impl Protocol {
    /// All protocols, in report order.
    pub const ALL: [Protocol; PROTOCOL_COUNT] = [Protocol::Http1, Protocol::Http2, Protocol::Http3];

    /// The name used in reports (`HTTP/1.1`, `HTTP/2`, `HTTP/3`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "HTTP/1.1",
            Protocol::Http2 => "HTTP/2",
            Protocol::Http3 => "HTTP/3",
        }
    }
}

/// What a cache did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CacheStatus {
    /// Served from the cache.
    Hit,
    /// Fetched from the origin, possibly stored.
    Miss,
    /// Not cacheable, passed through (PASS, BYPASS, DYNAMIC).
    Pass,
    /// Stored but expired: revalidated or refetched.
    Expired,
    /// Served stale from the cache (grace, UPDATING).
    Stale,
    /// No recognised cache header.
    Unknown,
}

/// Number of [`CacheStatus`] values.
pub const CACHE_STATUS_COUNT: usize = 6;

impl CacheStatus {
    /// All statuses, in report order.
    pub const ALL: [CacheStatus; CACHE_STATUS_COUNT] = [
        CacheStatus::Hit,
        CacheStatus::Miss,
        CacheStatus::Pass,
        CacheStatus::Expired,
        CacheStatus::Stale,
        CacheStatus::Unknown,
    ];

    /// The name in reports and flags.
    pub fn name(self) -> &'static str {
        match self {
            CacheStatus::Hit => "hit",
            CacheStatus::Miss => "miss",
            CacheStatus::Pass => "pass",
            CacheStatus::Expired => "expired",
            CacheStatus::Stale => "stale",
            CacheStatus::Unknown => "unknown",
        }
    }

    /// Served from the cache (a hit, or stale content): what hit ratios count.
    pub fn from_cache(self) -> bool {
        matches!(self, CacheStatus::Hit | CacheStatus::Stale)
    }
}

impl std::str::FromStr for CacheStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        CacheStatus::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s) || (s.eq_ignore_ascii_case("bypass") && *c == CacheStatus::Pass))
            .ok_or_else(|| format!("unknown cache status '{s}': expected hit, miss, pass, expired, stale or unknown"))
    }
}

/// What a request of a cache study was meant to meet: its stream said so when it drew the
/// request's object (see `barrage_plan::Picker`), so what the cache did can be checked
/// against it, request by request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Intent {
    /// Nothing was meant: a pick over objects that other runs may have asked for too.
    #[default]
    Any,
    /// An object no request of the study asked for before: a cache must miss it.
    New,
    /// An object asked for before (a repeat, or what a fill phase warmed): a cache that
    /// keeps it must hit it.
    Repeat,
}

/// Where an answer came from, as the origin's stamp tells it (`barrage serve` stamps each
/// answer with the time it made it): made before the request was sent means a cache kept
/// it. Without a stamp, only a cache header can tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Origin {
    /// No stamp.
    #[default]
    Unstamped,
    /// Made no earlier than the request's send (to within [`STAMP_MARGIN_US`]): for it, or
    /// for a request in flight with it that a cache joined it to (a cache header then says
    /// hit).
    Fresh,
    /// Made before the request was sent: a cache's copy, whatever its headers say.
    Kept,
}

/// The header `barrage serve` stamps each answer with: `t=UNIX_US n=SERIAL i=INSTANCE
/// g=GENERATION`, the time it made the answer (µs since the Unix epoch), the answer's
/// number and the server's (unique per process), and the object's generation (how many
/// times it was stored; 0 for objects that never change). A cache keeps the header with
/// the answer, so a kept answer carries a time before the request that got it.
pub const STAMP_HEADER: &str = "x-barrage-stamp";

/// A stamp's value.
pub fn stamp(unix_us: u64, serial: u64, instance: u64, generation: u64) -> String {
    format!("t={unix_us} n={serial} i={instance:016x} g={generation}")
}

/// The time a stamp's value says its answer was made, µs since the Unix epoch.
pub fn stamp_time(value: &[u8]) -> Option<u64> {
    let digits = value.strip_prefix(b"t=")?;
    let end = digits.iter().position(|b| !b.is_ascii_digit()).unwrap_or(digits.len());
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

/// How much earlier than the request's send a stamp must say its answer was made to be a
/// cache's copy: the origin and the load machine read clocks that may differ by this much
/// (one machine's own clock, or two kept within a millisecond by NTP or PTP).
pub const STAMP_MARGIN_US: u64 = 1_000;

impl Origin {
    /// Where an answer stamped at `stamp_us` (if at all) to a request sent at `sent_unix_us`
    /// came from.
    pub fn of(stamp_us: Option<u64>, sent_unix_us: u64) -> Origin {
        match stamp_us {
            None => Origin::Unstamped,
            Some(t) if t.saturating_add(STAMP_MARGIN_US) < sent_unix_us => Origin::Kept,
            Some(_) => Origin::Fresh,
        }
    }
}

/// How a request ended: an HTTP status, or an error before a complete response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A complete response with this status code.
    Status(u16),
    /// No complete response.
    Error(ErrorKind),
}

impl Outcome {
    /// Success as Vegeta counts it: a complete response with a 2xx or 3xx status.
    pub fn is_success(self) -> bool {
        matches!(self, Outcome::Status(200..=399))
    }
}

/// Everything measured about one request. Times are offsets from the start of the run, so a
/// sample is plain data with no clock in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// When the schedule said the request should start (open loop); equal to `started` in
    /// closed loop, where there is no schedule.
    pub intended: Duration,
    /// When the request actually started (connection acquisition included).
    pub started: Duration,
    /// When the response was complete or the request failed.
    pub ended: Duration,
    /// Duration of each phase that happened, indexed like [`Phase::ALL`].
    pub phases: [Option<Duration>; PHASE_COUNT],
    /// Status or error.
    pub outcome: Outcome,
    /// HTTP bytes received for this request (headers and body; TLS framing not counted).
    pub bytes_in: u64,
    /// HTTP bytes sent for this request (headers and body; TLS framing not counted).
    pub bytes_out: u64,
    /// The request could not start on time because every slot was busy (`--max-in-flight`).
    pub late: bool,
    /// What a cache in front of the server did, read from the response headers.
    pub cache: CacheStatus,
    /// What the request was meant to meet in a cache.
    pub intent: Intent,
    /// Where its answer came from, by the origin's stamp.
    pub origin: Origin,
    /// A flow's step whose check or capture failed on this answer: the request failed,
    /// whatever its status said ([`Sample::succeeded`]).
    pub rejected: bool,
}

impl Sample {
    /// Whether the request succeeded: a 2xx or 3xx answer ([`Outcome::is_success`]) that
    /// no check or capture of its flow's step rejected. The one definition every figure
    /// counts by (totals, names, methods, backends, seconds, steps).
    pub fn succeeded(&self) -> bool {
        self.outcome.is_success() && !self.rejected
    }

    /// Latency from the intended start: free of coordinated omission.
    pub fn corrected(&self) -> Duration {
        self.ended.saturating_sub(self.intended)
    }

    /// Latency from the actual start: the service time.
    pub fn service(&self) -> Duration {
        self.ended.saturating_sub(self.started)
    }

    /// How far the actual start lagged behind the schedule.
    pub fn lag(&self) -> Duration {
        self.started.saturating_sub(self.intended)
    }
}
