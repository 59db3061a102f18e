//! The flags of the built-in origin: `barrage serve`, and `barrage demo`, which runs
//! against it.

use super::{parse_fraction, parse_threads};
use barrage_plan::limits::MAX_WORKERS;
use barrage_plan::units::{PositiveDur, RateSpec};
use clap::Args;
use std::path::PathBuf;

/// `barrage serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// Origins to start, on consecutive ports (free ones with port 0), each naming itself in
    /// X-Served-By (NAME-1, NAME-2…; default origin-1…).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub instances: u16,
    /// Serving threads. [default: one per CPU]
    #[arg(long, default_value_t = 0, hide_default_value = true, value_name = "N", value_parser = parse_threads)]
    pub threads: usize,
    /// Serve HTTPS with a generated self-signed certificate.
    #[arg(long)]
    pub tls: bool,
    /// With --tls: write the CA certificate (for the client's --cacert) here.
    #[arg(long, value_name = "FILE", requires = "tls", conflicts_with = "cert")]
    pub ca_out: Option<PathBuf>,
    /// Also serve HTTPS on this address, beside plain HTTP on --listen.
    #[arg(long, value_name = "ADDR")]
    pub tls_listen: Option<std::net::SocketAddr>,
    /// With --tls or --tls-listen: serve HTTP/3 (QUIC) too, on UDP at the HTTPS address and
    /// port; HTTPS answers then carry Alt-Svc.
    #[arg(long)]
    pub http3: bool,
    /// Requests one connection may carry at once (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS,
    /// QUIC's initial_max_streams_bidi): a client asking more waits for a stream.
    /// [default: 1024]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub max_streams: Option<u32>,
    /// Serve at most N requests at once; the rest wait in a queue. With --latency this
    /// gives a known capacity: N / latency per second (10 at 10ms: 1,000 req/s).
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..1_000_000))]
    pub max_concurrency: Option<usize>,
    /// With --max-concurrency: at most N requests wait for a turn; one more is answered 503
    /// at once (counted as queue_full in /_barrage/stats). [default: no bound]
    #[arg(long, value_name = "N", requires = "max_concurrency", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1_000_000))]
    pub max_queue: Option<usize>,
    /// Read the shape (latency=100ms,size=lognormal:4k,1.0,errors=1%,capacity=8+64; see
    /// docs/getting-started.md) from this file, laid over the flags, and again on every SIGHUP, which
    /// then swaps it in without a restart or a dropped connection instead of stopping.
    #[arg(long, value_name = "FILE")]
    pub shape_file: Option<PathBuf>,
    /// Keep the PUT/GET/DELETE store in this directory, one file per path, instead of in
    /// memory: every origin started with the same DIR sees every body. Created for this
    /// user alone if missing; refused if others can write to it.
    #[arg(long, value_name = "DIR")]
    pub store_dir: Option<PathBuf>,
    /// Append one line per request to FILE: time (Unix s), method, path, status, bytes,
    /// duration (µs), and the traceparent it carried if any; buffered, written at least
    /// every second and at shutdown.
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// Serve this certificate chain (PEM) over TLS instead of a generated one; with --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Delay added to every response: 20ms, 10ms..50ms (uniform), exp:20ms.
    #[arg(long, value_name = "DIST")]
    pub latency: Option<barrage_server::LatencyDist>,
    /// Fraction of requests answered with 500.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION", value_parser = parse_fraction)]
    pub error_rate: f64,
    /// Adds `X-Served-By: NAME` to every response.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Sets Cache-Control on every response.
    #[arg(long, value_name = "VALUE")]
    pub cache_control: Option<String>,
    /// The object catalog: /obj/{id} answers ids 0..N-1 (N at least 1), and 404 for any other.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub objects: Option<u64>,
    /// Size of /obj/{id} objects: 1k, 1k..64k (uniform), lognormal:4k,1.0, or file:PATH with
    /// one size per line.
    #[arg(long, default_value = "1k", value_name = "DIST")]
    pub object_size: barrage_server::SizeDist,
    /// Once N requests have arrived, pause all answers for DURATION (a GC-like stall): N+DURATION.
    #[arg(long, value_name = "N+DURATION")]
    pub stall: Option<barrage_server::Stall>,
    /// Label answers as a cache in front would (varnish, squid or nginx headers): the first
    /// GET of a path is a miss, later ones hits. Nothing is cached; it gives cache reports a
    /// known answer.
    #[arg(long, value_name = "STYLE")]
    pub cache_headers: Option<barrage_server::CacheStyle>,
    /// Keep albums (POST /albums, GET /albums/{id}) in this directory, one file each,
    /// instead of in memory: every origin started with the same DIR (--instances, other
    /// processes) sees every album. Created for this user alone if missing.
    #[arg(long, value_name = "DIR")]
    pub album_store: Option<PathBuf>,
}

/// `barrage demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Length of each of the two runs.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub duration: PositiveDur,
    /// Rate of the open-loop run.
    #[arg(long, default_value = "2000", value_name = "RATE")]
    pub rate: RateSpec,
    /// Workers of the closed-loop run.
    #[arg(long, default_value_t = 32, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_WORKERS as i64))]
    pub concurrency: u32,
}
