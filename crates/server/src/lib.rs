//! `barrage serve`: the built-in HTTP origin that barrage's demo, tests and benchmarks
//! run against.
//!
//! [`RunningServer::start`] binds a [`ServeConfig::listen`] address and serves HTTP/1.1
//! (keep-alive, pipelining), HTTP/2 (h2c prior knowledge in cleartext, ALPN over TLS) and,
//! with [`ServeConfig::http3`], HTTP/3 over QUIC on the same port (UDP), from its own OS
//! threads, each with a current-thread tokio runtime accepting on the same
//! socket, so it works the same from plain code, from inside a tokio runtime, and as the
//! `barrage serve` process. With [`ServeConfig::tls`] it makes a throwaway CA and writes
//! its PEM for clients to trust.
//!
//! Routes (GET and HEAD unless noted):
//!
//! | Path | Answer |
//! |---|---|
//! | `/bytes/{n}` | `n` bytes (`1024`, `1k`, `1m`; at most 1 GiB) |
//! | `/delay/{ms}` | `ok` after `ms` milliseconds |
//! | `/status/{code}` | that status (200..=599) |
//! | `/obj/{id}` | a deterministic object sized by [`ServeConfig::object_size`], with an `ETag` |
//! | `POST /albums` | a multipart form with a JSON `profile` part and an `image` part stored as an album: `{"albumID": ID, "imageSize": N}` (see [`ServeConfig::album_store`]) |
//! | `/albums/{id}` | the album's profile; 404 for an unknown id, 400 for one that is not 32 lowercase hex digits |
//! | `/_barrage/stats` | `{"requests": N, "albums": {"created", "read", "not_found", "rejected", "failed"}}`, with TLS also `"handshakes": {"tls", "quic", "resumed"}` (see [`Handshakes`]), with a latency also `"delay_us"`: the delays applied, by the origin's clock (count, p50, p90, p99, max), with a queue bound `"queue_full"`: requests answered 503 because the queue was full, with a shape other than the default (or an access log) `"shape"`: the [`Shape`] in force; not counted, never queued by [`ServeConfig::max_concurrency`] |
//! | any other path | PUT/POST store the body (256 MiB in all; in a directory origins share with [`ServeConfig::store_dir`]), GET returns it, DELETE removes it; `GET /` is `ok` |
//!
//! The shape of the origin is set by [`LatencyDist`] (delay per response), an error rate,
//! [`SizeDist`] (object sizes), [`Stall`] (one stop-the-world pause, to expose
//! coordinated omission in load generators) and [`ServeConfig::max_concurrency`] (at most
//! N requests served at once, the rest queued in arrival order: with a latency of `L`, a
//! capacity of N / L requests per second, beyond which queueing delay grows;
//! [`ServeConfig::max_queue`] bounds the queue, answering 503 beyond it). Latency, sizes,
//! error rate and capacity together are a [`Shape`], written as one line
//! (`latency=100ms,size=lognormal:4k,1.0,errors=1%,capacity=8+64`, see [`ShapeSpec`]) and
//! swapped while the origin serves by [`RunningServer::set_shape`].
//!
//! ```
//! use std::io::{Read, Write};
//! use barrage_server::{RunningServer, ServeConfig};
//!
//! let server = RunningServer::start(ServeConfig { threads: 1, ..ServeConfig::default() })?;
//! let mut conn = std::net::TcpStream::connect(server.addr())?;
//! conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
//! let mut reply = String::new();
//! conn.read_to_string(&mut reply)?;
//! assert!(reply.starts_with("HTTP/1.1 200 OK"));
//! assert!(reply.ends_with("\r\n\r\nok\n"));
//! assert_eq!(server.requests(), 1);
//! server.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod access_log;
mod album;
mod body;
mod cachesim;
mod dist;
mod h3;
mod handler;
mod instances;
mod server;
mod shape;
mod store;
mod tls;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

pub use album::{MAX_ALBUMS, MAX_ALBUM_IMAGE, MAX_ALBUM_PROFILE, MAX_ALBUM_REQUEST};
pub use cachesim::CacheStyle;
pub use dist::{LatencyDist, ParseError, SizeDist, Stall, MAX_BODY};
pub use instances::{warn_if_exposed, Instances};
pub use server::RunningServer;
pub use shape::{Capacity, Shape, ShapeError, ShapeSpec, MAX_CAPACITY};
pub use tls::{generate_pki, Pki};

/// The TLS handshakes an origin completed, by its own count (see
/// [`RunningServer::handshakes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handshakes {
    /// TLS over TCP.
    pub tls: u64,
    /// QUIC (HTTP/3), TLS inside.
    pub quic: u64,
    /// Of both, those in which the client resumed a session this origin issued (it presented
    /// a ticket the origin held): 0-RTT needs one.
    pub resumed: u64,
}

/// How to run the origin. [`Default`] is a cleartext server on `127.0.0.1:0` (a free port)
/// with one thread per core and 1 KiB objects.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The address to listen on; port 0 picks a free one (see [`RunningServer::addr`]).
    pub listen: SocketAddr,
    /// OS threads serving connections; 0 means one per available core.
    pub threads: usize,
    /// Serve HTTPS with a freshly generated CA and a certificate for `localhost`,
    /// `127.0.0.1` and `::1` (and the listen address).
    pub tls: bool,
    /// Where to write the CA certificate (PEM) clients should trust. With TLS and no path,
    /// it goes to a file in the temp directory, removed at shutdown
    /// (see [`RunningServer::ca_path`]).
    pub ca_out: Option<PathBuf>,
    /// A delay added before every response.
    pub latency: Option<LatencyDist>,
    /// The fraction of requests, in [0, 1], answered `500` instead.
    pub error_rate: f64,
    /// When set, every response carries `X-Served-By: NAME` (to tell backends apart behind
    /// a load balancer).
    pub name: Option<String>,
    /// When set, every response carries this `Cache-Control` value.
    pub cache_control: Option<String>,
    /// The size distribution of `/obj/{id}` objects.
    pub object_size: SizeDist,
    /// A one-off pause of all request handling.
    pub stall: Option<Stall>,
    /// The object catalog: `/obj/{id}` answers ids 0..N and 404 for others; `None` answers any id.
    pub objects: Option<u64>,
    /// Label answers as a cache in front would (first GET of a path a miss, later ones hits).
    pub cache_headers: Option<CacheStyle>,
    /// With [`ServeConfig::tls`]: serve this certificate chain and key (PEM files) instead of
    /// generating a CA (then no CA file is written).
    pub tls_cert: Option<(PathBuf, PathBuf)>,
    /// At most this many requests are served at once; the rest wait in a queue (FIFO) for a
    /// turn. With `latency`, this gives the origin a known capacity: N / latency requests per
    /// second (10 at 10 ms: 1,000 req/s). `None`: no limit.
    ///
    /// The limit is shared by all [`ServeConfig::threads`]. A request holds its turn until
    /// its response is produced (the body is sent after), through the [`ServeConfig::stall`]
    /// pause, the `latency` delay and `/delay/{ms}` alike. Queued requests wait without limit
    /// (the client's timeout bounds them) unless [`ServeConfig::max_queue`] bounds the queue,
    /// and count in [`RunningServer::requests`] from arrival. `/_barrage/stats` never queues. Must be at least 1.
    pub max_concurrency: Option<usize>,
    /// With [`ServeConfig::max_concurrency`]: at most this many requests wait for a turn;
    /// one more is answered `503` at once and counted (`queue_full` in `/_barrage/stats`).
    /// `None`: the queue has no bound.
    pub max_queue: Option<usize>,
    /// Keep the PUT/GET/DELETE store in this directory, one file per path (see the
    /// crate's store module), instead of in memory: every origin started with the same
    /// directory sees every body. Created for this user alone if missing; one that is a
    /// link, someone else's or writable by others is refused.
    pub store_dir: Option<PathBuf>,
    /// Append one line per request here (`serve --access-log`): time (Unix seconds),
    /// method, path, status, body bytes, duration (µs). Buffered, written at least every
    /// second and at shutdown; `/_barrage/stats` is not logged.
    pub access_log: Option<PathBuf>,
    /// Keep `/albums` in this directory (created for this user alone if missing), one file
    /// per album, instead of in memory: every origin, in this process or another, started
    /// with the same directory sees every album, so a GET behind a balancer finds an album
    /// whichever origin took its POST. Albums are capped at [`MAX_ALBUMS`] and 256 MiB of
    /// profiles per origin, counting what the directory held when it started.
    pub album_store: Option<PathBuf>,
    /// With [`ServeConfig::tls`]: serve HTTP/3 over QUIC too, on UDP at the same address
    /// and port (a free port free for both when port 0 is asked), with the same routes and
    /// counts. TCP answers then carry `Alt-Svc: h3=":PORT"`.
    pub http3: bool,
    /// Requests one connection may carry at once: HTTP/2's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` and QUIC's `initial_max_streams_bidi` (a client
    /// asking more waits for a stream). [`DEFAULT_MAX_STREAMS`] unless set; at least 1.
    pub max_streams: u32,
}

/// Streams a connection may carry at once unless [`ServeConfig::max_streams`] says: as
/// many as a load generator asks of one (barrage's `--streams` goes to 1,024). hyper's
/// default of 200 and quinn's of 100 would cap them below it.
pub const DEFAULT_MAX_STREAMS: u32 = 1024;

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            threads: 0,
            tls: false,
            ca_out: None,
            latency: None,
            error_rate: 0.0,
            name: None,
            cache_control: None,
            object_size: SizeDist::Fixed(1024),
            stall: None,
            cache_headers: None,
            objects: None,
            tls_cert: None,
            max_concurrency: None,
            max_queue: None,
            store_dir: None,
            access_log: None,
            album_store: None,
            http3: false,
            max_streams: DEFAULT_MAX_STREAMS,
        }
    }
}

/// Why the origin could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The listen address could not be bound (in use, not local, no permission).
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// Making the certificates or the TLS configuration failed.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// The CA certificate could not be written.
    #[error("cannot write the CA certificate to {}", path.display())]
    CaWrite {
        /// Where it was to go.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A configuration value is out of range or not usable in a header.
    #[error("invalid {field}: {reason}")]
    Config {
        /// The [`ServeConfig`] field.
        field: &'static str,
        /// What is wrong and what would be valid.
        reason: String,
    },
    /// The album directory could not be created or read.
    #[error("cannot use the album store {}", path.display())]
    AlbumStore {
        /// The directory.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The store directory cannot be used.
    #[error("cannot use the store directory {}: {reason}", path.display())]
    Store {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The access log could not be opened.
    #[error("cannot open the access log {}", path.display())]
    AccessLog {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A shape file that cannot be read or does not parse ([`Instances::read_shape`]).
    #[error("{what}")]
    ShapeFile {
        /// What was read, and how it failed.
        what: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Instances on ports after a fixed one run past the last port.
    #[error("{flag}: --instances: ports run past 65535")]
    PortsRunOut {
        /// The flag of the first port.
        flag: &'static str,
    },
    /// Any other I/O failure while starting (runtime, threads, socket options).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
