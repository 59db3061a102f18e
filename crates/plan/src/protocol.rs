//! How a run speaks to its targets: the [`Protocol`], one value, with what it means for
//! connections and requests in flight, and the flags that choose it. Separate from the plan
//! so that adding a protocol touches this enum, the engine's connector and a module of its own.

use crate::kv::KvPlan;
use crate::limits::{MAX_STREAMS, MAX_WORKERS};
use crate::plan::{Load, Target};
use std::sync::Arc;

/// The protocol of a run, and how each connection carries its requests.
#[derive(Clone, Debug)]
pub enum Protocol {
    /// HTTP/1.1 (ALPN `http/1.1` over TLS): one request at a time on a connection.
    Http1 {
        /// Keep each connection for the next request; `false` (`--no-keepalive`) opens one
        /// per request, as curl in a loop.
        keepalive: bool,
    },
    /// HTTP/2 (`--http2`): ALPN `h2` over TLS, falling back to HTTP/1.1 when the server
    /// chooses it; prior knowledge over cleartext.
    Http2 {
        /// What each connection carries.
        streams: Streams,
        /// `--rounds`: a closed loop's connections send their requests in rounds (see the
        /// engine's `h2::Conn::handshake`), each request's wait for its round in its send.
        rounds: bool,
    },
    /// HTTP/3 (`--http3`): QUIC over UDP to each URL's host and port, ALPN `h3`, no 0-RTT.
    /// HTTPS targets only (QUIC is always encrypted).
    Http3 {
        /// What each connection carries.
        streams: Streams,
    },
    /// A key-value run (Redis, memcached): what each target's command sends and where.
    /// Ids are keys' numbers then: picks choose them over `objects`, targets go round robin.
    Kv(Arc<KvPlan>),
}

/// What an HTTP/2 or HTTP/3 connection carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Streams {
    /// Up to this many requests at once (`--streams`, h2load's `-m`; 1 by default), on a
    /// connection kept for the next ones.
    Kept(u32),
    /// One request, on a connection of its own closed after it (`--no-keepalive`).
    PerRequest,
}

impl Default for Protocol {
    /// Kept-alive HTTP/1.1.
    fn default() -> Protocol {
        Protocol::Http1 { keepalive: true }
    }
}

impl Protocol {
    /// HTTP/2 with `streams` requests at once on each kept connection, not in rounds.
    pub fn http2(streams: u32) -> Protocol {
        Protocol::Http2 { streams: Streams::Kept(streams), rounds: false }
    }

    /// HTTP/3 with `streams` requests at once on each kept connection.
    pub fn http3(streams: u32) -> Protocol {
        Protocol::Http3 { streams: Streams::Kept(streams) }
    }

    /// What `--streams` is: the HTTP/2 or HTTP/3 requests a connection carries at once; 1
    /// for every other protocol and for a connection per request.
    pub fn streams(&self) -> u32 {
        match self {
            Protocol::Http2 { streams: Streams::Kept(n), .. } | Protocol::Http3 { streams: Streams::Kept(n) } => *n,
            _ => 1,
        }
    }

    /// Whether connections are kept for the next request (a key-value run's always are).
    pub fn keepalive(&self) -> bool {
        match self {
            Protocol::Http1 { keepalive } => *keepalive,
            Protocol::Http2 { streams, .. } | Protocol::Http3 { streams } => *streams != Streams::PerRequest,
            Protocol::Kv(_) => true,
        }
    }

    /// The key-value plan of a Redis or memcached run.
    pub fn kv(&self) -> Option<&Arc<KvPlan>> {
        match self {
            Protocol::Kv(kv) => Some(kv),
            _ => None,
        }
    }

    /// The requests a connection carries at once, each a closed loop's worker: `--streams`
    /// of HTTP/2 or HTTP/3, a key-value run's `--pipeline`, else 1.
    pub fn per_connection(&self) -> usize {
        match self {
            Protocol::Kv(kv) => kv.pipeline,
            _ => self.streams().max(1) as usize,
        }
    }

    /// The connections the load keeps (at most): closed loop one per worker of `-c`, each
    /// carrying [`Protocol::per_connection`] requests; open loop the in-flight bound over
    /// the streams per connection (a key-value run's bound counts connections already).
    pub fn connections(&self, load: &Load) -> usize {
        match load {
            Load::Closed { concurrency, .. } => *concurrency,
            Load::Open { max_in_flight, .. } if self.kv().is_some() => *max_in_flight,
            Load::Open { max_in_flight, .. } => max_in_flight.div_ceil(self.streams().max(1) as usize),
        }
    }

    /// The in-flight bound of an open loop over `connections` connections (`--connections`):
    /// their streams' requests in HTTP, the connections themselves in a key-value run.
    pub fn open_bound(&self, connections: usize) -> usize {
        match self {
            Protocol::Kv(_) => connections,
            _ => connections.saturating_mul(self.streams() as usize),
        }
    }

    /// Checks what the type cannot: streams within their bounds and whole connections of
    /// them, rounds where they apply, HTTP/3 to HTTPS `targets` alone.
    pub fn validate(&self, load: &Load, targets: &[Target]) -> Result<(), String> {
        if let Protocol::Http3 { .. } = self {
            let cleartext = targets.iter().filter(|t| t.url.scheme_str() != Some("https")).count();
            if cleartext > 0 {
                let (total, verb) = (targets.len(), if cleartext == 1 { "is" } else { "are" });
                return Err(format!(
                    "--http3 needs https:// URLs (QUIC is always encrypted): {cleartext} of {total} targets {verb} http://"
                ));
            }
        }
        self.validate_streams(load)
    }

    /// `--streams`: within the bounds, with whole connections of streams in an open loop.
    fn validate_streams(&self, load: &Load) -> Result<(), String> {
        let n = self.streams();
        if !(1..=MAX_STREAMS).contains(&n) {
            return Err(format!("--streams {n}: must be 1 to {MAX_STREAMS}"));
        }
        if let Protocol::Http2 { rounds: true, .. } = self {
            validate_rounds(n, load)?;
        }
        if n == 1 {
            return Ok(());
        }
        let workers = |c: usize| c.saturating_mul(n as usize) > MAX_WORKERS as usize;
        match load {
            Load::Closed { concurrency, .. } if workers(*concurrency) => Err(format!(
                "-c {concurrency} with --streams {n} is {} requests in flight, over the limit of {MAX_WORKERS}",
                concurrency.saturating_mul(n as usize),
            )),
            Load::Open { max_in_flight, .. } if max_in_flight % n as usize != 0 => Err(format!(
                "--max-in-flight {max_in_flight} with --streams {n}: the in-flight bound is whole connections of {n} streams; give a multiple of {n} such as {}",
                (max_in_flight / n as usize).max(1) * n as usize
            )),
            _ => Ok(()),
        }
    }
}

/// Why `--rounds` cannot apply to a protocol or its streams.
const ROUNDS_NEED_STREAMS: &str =
    "--rounds batches the requests of an HTTP/2 connection's streams: it needs --streams 2 or more, over HTTP/2";

/// `--rounds`: an HTTP/2 connection's `streams`, 2 or more, in a closed loop without think
/// time (an open loop's requests go when due, a think time's when the simulated user sends
/// them).
fn validate_rounds(streams: u32, load: &Load) -> Result<(), String> {
    if streams < 2 {
        return Err(ROUNDS_NEED_STREAMS.into());
    }
    match load {
        Load::Closed { think_time, .. } if think_time.is_zero() => Ok(()),
        Load::Closed { .. } => Err(
            "--rounds with --think-time: a think time's requests go when the simulated user sends them, not in rounds"
                .into(),
        ),
        Load::Open { .. } => {
            Err("--rounds with --rate: an open loop's requests go when they are due, not in rounds".into())
        }
    }
}

/// The flags that choose the protocol, as the command line gives them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtocolFlags {
    /// `--http2`.
    pub http2: bool,
    /// `--http3`.
    pub http3: bool,
    /// `--streams N`.
    pub streams: Option<u32>,
    /// `--rounds`.
    pub rounds: bool,
    /// `--no-keepalive`.
    pub no_keepalive: bool,
}

impl ProtocolFlags {
    /// The protocol these flags choose for a run of `kv` (a Redis or memcached run) or of
    /// HTTP (`None`). `--streams` multiplexes HTTP/2 unless HTTP/3 is asked for.
    pub fn protocol(&self, kv: Option<Arc<KvPlan>>) -> Result<Protocol, String> {
        let multiplexed = self.http2 || self.http3 || self.streams.is_some();
        if let Some(kv) = kv {
            if !multiplexed {
                return Ok(Protocol::Kv(kv));
            }
            // --streams implies --http2: both are named then.
            let flags = match (self.http3, self.streams.is_some_and(|n| n > 1)) {
                (true, false) => "--http3 is",
                (true, true) => "--http3 and --streams are",
                (false, _) => "--http2 and --streams are",
            };
            return Err(format!(
                "{flags} for HTTP targets, not redis:// or memcache:// (a key-value run keeps commands in flight with --pipeline)"
            ));
        }
        if self.http2 && self.http3 {
            return Err("--http2 and --http3 exclude each other: give one".into());
        }
        if self.rounds && self.http3 {
            return Err(ROUNDS_NEED_STREAMS.into());
        }
        let n = self.streams.unwrap_or(1);
        let streams = match (self.no_keepalive, n) {
            (false, _) => Streams::Kept(n),
            (true, 1) => Streams::PerRequest,
            (true, _) => {
                return Err(format!(
                    "--streams {n} shares each connection among {n} requests; --no-keepalive opens one per request"
                ))
            }
        };
        Ok(match (multiplexed, self.http3) {
            (false, _) => Protocol::Http1 { keepalive: !self.no_keepalive },
            (true, true) => Protocol::Http3 { streams },
            (true, false) => Protocol::Http2 { streams, rounds: self.rounds },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;
    use std::time::Duration;

    fn kv() -> Arc<KvPlan> {
        Arc::new(KvPlan {
            protocol: crate::kv::Protocol::Resp2,
            servers: vec![crate::kv::KvServer::parse("redis://h").unwrap()],
            distribution: None,
            pipeline: 4,
            key_prefix: bytes::Bytes::from_static(b"k"),
            key_min: 0,
            values: crate::kv::ValueSizes::Fixed(32),
            commands: vec![crate::kv::KvCommand::Get],
        })
    }

    /// What each combination of flags means: `--streams` alone is HTTP/2, `--no-keepalive`
    /// a connection per request, and what no protocol can be is refused by its flags.
    #[test]
    fn flags_choose_one_protocol() {
        let flags =
            |http2, http3, streams, no_keepalive| ProtocolFlags { http2, http3, streams, rounds: false, no_keepalive };
        // (flags, the protocol's streams, keepalive and version, or an error containing)
        let table = [
            (flags(false, false, None, false), Ok((1, true, 1))),
            (flags(false, false, None, true), Ok((1, false, 1))),
            (flags(true, false, None, false), Ok((1, true, 2))),
            (flags(false, false, Some(1), false), Ok((1, true, 2))),
            (flags(false, false, Some(10), false), Ok((10, true, 2))),
            (flags(true, false, None, true), Ok((1, false, 2))),
            (flags(false, true, None, true), Ok((1, false, 3))),
            (flags(false, true, Some(8), false), Ok((8, true, 3))),
            (flags(true, true, None, false), Err("--http2 and --http3 exclude each other: give one")),
            (flags(false, false, Some(4), true), Err("--no-keepalive opens one per request")),
            (
                ProtocolFlags { http3: true, streams: Some(4), rounds: true, ..flags(false, true, None, false) },
                Err("over HTTP/2"),
            ),
            (flags(false, true, Some(4), true), Err("--no-keepalive opens one per request")),
        ];
        for (i, (f, want)) in table.into_iter().enumerate() {
            let got = f.protocol(None).map(|p| {
                let version = match p {
                    Protocol::Http1 { .. } => 1,
                    Protocol::Http2 { .. } => 2,
                    Protocol::Http3 { .. } => 3,
                    Protocol::Kv(_) => 0,
                };
                (p.streams(), p.keepalive(), version)
            });
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "row {i}"),
                (Err(e), Err(want)) => assert!(e.contains(want), "row {i}: {e}"),
                (got, want) => panic!("row {i}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn a_key_value_run_takes_no_http_flags() {
        assert!(matches!(ProtocolFlags::default().protocol(Some(kv())), Ok(Protocol::Kv(_))));
        for (f, want) in [
            (ProtocolFlags { http2: true, ..Default::default() }, "--http2 and --streams are for HTTP targets"),
            (ProtocolFlags { streams: Some(4), ..Default::default() }, "--http2 and --streams are"),
            (ProtocolFlags { http3: true, ..Default::default() }, "--http3 is for HTTP targets"),
            (ProtocolFlags { http3: true, streams: Some(2), ..Default::default() }, "--http3 and --streams are"),
        ] {
            let e = f.protocol(Some(kv())).unwrap_err();
            assert!(e.starts_with(want) && e.contains("--pipeline"), "{e}");
        }
    }

    /// Connections and the in-flight bound: streams share a connection in HTTP; a key-value
    /// run's bound counts connections, each carrying its pipeline.
    #[test]
    fn connections_and_the_in_flight_bound() {
        let open = |m| Load::Open { pacer: crate::Pacer::Constant { rate: 1.0 }, max_in_flight: m };
        let closed = Load::Closed { concurrency: 3, think_time: Duration::ZERO };
        // (protocol, connections of open(40), of closed, open bound of 10 connections, per connection)
        let table = [
            (Protocol::default(), 40, 3, 10, 1),
            (Protocol::http2(10), 4, 3, 100, 10),
            (Protocol::http3(10), 4, 3, 100, 10),
            (Protocol::Http2 { streams: Streams::PerRequest, rounds: false }, 40, 3, 10, 1),
            (Protocol::Kv(kv()), 40, 3, 10, 4),
        ];
        for (p, open_conns, closed_conns, bound, per) in table {
            assert_eq!(p.connections(&open(40)), open_conns, "{p:?}");
            assert_eq!(p.connections(&closed), closed_conns, "{p:?}");
            assert_eq!(p.open_bound(10), bound, "{p:?}");
            assert_eq!(p.per_connection(), per, "{p:?}");
        }
    }

    /// `--streams` within its bounds and whole connections; `--rounds` over streams of a
    /// closed loop without think time; HTTP/3 to HTTPS alone.
    #[test]
    fn streams_rounds_and_http3_are_checked_against_the_load() {
        let open = |m| Load::Open { pacer: crate::Pacer::Constant { rate: 1.0 }, max_in_flight: m };
        let closed = |c| Load::Closed { concurrency: c, think_time: Duration::ZERO };
        let thinking = Load::Closed { concurrency: 1, think_time: Duration::from_millis(1) };
        let rounds = |n| Protocol::Http2 { streams: Streams::Kept(n), rounds: true };
        let https = [Target::new(Method::GET, "https://h/").unwrap()];
        // (protocol, load, error containing, or None when valid)
        let table = [
            (Protocol::http2(10), closed(10), None),
            (Protocol::http3(10), open(40), None),
            (Protocol::default(), closed(10), None),
            (rounds(2), closed(1), None),
            (Protocol::http2(0), closed(10), Some("--streams 0: must be 1 to 1024")),
            (Protocol::http3(1025), closed(10), Some("--streams 1025: must be 1 to 1024")),
            (Protocol::http2(4), open(42), Some("give a multiple of 4 such as 40")),
            (Protocol::http3(4), open(42), Some("give a multiple of 4 such as 40")),
            (Protocol::http2(4), open(3), Some("such as 4")),
            (Protocol::http2(2), closed(1_000_000), Some("2000000 requests in flight, over the limit")),
            (rounds(1), closed(1), Some("it needs --streams 2 or more, over HTTP/2")),
            (rounds(2), open(4), Some("--rounds with --rate")),
            (rounds(2), thinking, Some("--rounds with --think-time")),
        ];
        for (i, (p, load, want)) in table.into_iter().enumerate() {
            match (p.validate(&load, &https), want) {
                (Ok(()), None) => {}
                (Err(e), Some(want)) => assert!(e.contains(want), "row {i}: {e}"),
                (got, want) => panic!("row {i}: {got:?}, wanted {want:?}"),
            }
        }
        let mixed = [Target::new(Method::GET, "https://h/").unwrap(), Target::new(Method::GET, "http://h/").unwrap()];
        assert_eq!(
            Protocol::http3(1).validate(&closed(1), &mixed).unwrap_err(),
            "--http3 needs https:// URLs (QUIC is always encrypted): 1 of 2 targets is http://"
        );
    }
}
