//! [`Plan`]: a validated description of a run. The CLI builds it from flags; the engine
//! never sees clap types.

use crate::pacer::Pacer;
use bytes::Bytes;
use http::{HeaderMap, Method, Uri};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// One request to send.
#[derive(Clone, Debug)]
pub struct Target {
    /// Method.
    pub method: Method,
    /// Absolute URL (`http` or `https`).
    pub url: Uri,
    /// Extra headers (Host is derived from the URL unless given here).
    pub headers: HeaderMap,
    /// Body, shared by every request (cloning `Bytes` is a reference count).
    pub body: Bytes,
}

/// How load is generated.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// Requests start on a schedule, whatever the server does.
    Open {
        /// The schedule.
        pacer: Pacer,
        /// Most requests outstanding at once; a request due when all are busy is late.
        max_in_flight: usize,
    },
    /// Each worker sends its next request when the last one finished.
    Closed {
        /// Workers.
        concurrency: usize,
        /// Pause between a response and the worker's next request.
        think_time: Duration,
    },
}

/// TLS settings.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Trust only these CA certificates (PEM) instead of the system roots.
    pub cacert: Option<PathBuf>,
    /// Do not verify certificates.
    pub insecure: bool,
}

/// Everything the engine needs for a run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Requests, sent round-robin.
    pub targets: Vec<Target>,
    /// Open or closed loop.
    pub load: Load,
    /// Stop sending after this long.
    pub duration: Option<Duration>,
    /// Stop after this many requests.
    pub requests: Option<u64>,
    /// Reuse connections.
    pub keepalive: bool,
    /// Speak HTTP/2 (ALPN over TLS, prior knowledge over cleartext).
    pub http2: bool,
    /// TLS settings.
    pub tls: TlsOptions,
    /// `--resolve host:port:addr` overrides, keyed by (host, port).
    pub resolve: HashMap<(String, u16), SocketAddr>,
    /// Bound on one request, from its start to its last byte (connecting included).
    pub timeout: Duration,
    /// Bound on DNS + TCP connect + TLS handshake.
    pub connect_timeout: Duration,
    /// Engine threads; 0 = one per CPU the process may run on.
    pub threads: usize,
}

impl Plan {
    /// The threads the engine will run.
    pub fn thread_count(&self) -> usize {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let wanted = if self.threads == 0 { cpus } else { self.threads };
        // More threads than workers would leave some idle.
        let work = match &self.load {
            Load::Open { max_in_flight, .. } => *max_in_flight,
            Load::Closed { concurrency, .. } => *concurrency,
        };
        wanted.clamp(1, work.max(1))
    }

    /// When the attack ends by itself (duration, or the end of a stepped schedule).
    pub fn attack_limit(&self) -> Option<Duration> {
        let natural = match &self.load {
            Load::Open { pacer, .. } => pacer.natural_end(),
            Load::Closed { .. } => None,
        };
        match (self.duration, natural) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
