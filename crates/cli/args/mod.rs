//! Command-line arguments (clap derive; doc comments are the help text).

pub mod units;

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use units::{Dur, Header, PositiveDur, RateSpec, Resolve};

/// barrage: a fast, truthful load tester for web services, caches and load balancers.
#[derive(Parser, Debug)]
#[command(name = "barrage", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Generate load against one or more URLs and report on it.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Render (and merge) results files written with `run --output`.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Start the built-in origin server.
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Start the origin in-process and run a short open-loop and closed-loop test against it.
    Demo(DemoArgs),
}

const RUN_EXAMPLES: &str = "Examples:
  barrage run --rate 1000 --duration 30s http://127.0.0.1:8080/       open loop, 1000 req/s
  barrage run --rate 100:2000 --duration 1m URL                        ramp from 100 to 2000 req/s
  barrage run --rate 10,50,100,500,700 --step 10s URL                  steps, each reported on its own
  barrage run -c 50 -d 10s URL                                         closed loop, 50 workers (wrk -c50 -d10s)
  barrage run -n 1000 -c 50 URL                                        1000 requests by 50 workers (hey)
  barrage run -c 1 --no-keepalive -n 100 https://host/ --cacert ca.pem one new TLS connection per request
  barrage run --rate 500 -d 1m -o run.brg --format json URL            keep the results file, print JSON";

const REPORT_EXAMPLES: &str = "Examples:
  barrage report run.brg                      the text report again
  barrage report --format json run.brg        as JSON
  barrage report a.brg b.brg c.brg            merge runs from several machines
  barrage report --format hdr-log run.brg     HdrHistogram interval log";

const SERVE_EXAMPLES: &str = "Examples:
  barrage serve --listen 127.0.0.1:8080
  barrage serve --latency 20ms --name origin-1
  barrage serve --tls --ca-out ca.pem --listen 127.0.0.1:8443
Routes: /bytes/{n} (n bytes, 1k, 1m), /delay/{ms}, /status/{code}, /obj/{id}, /_barrage/stats;
PUT/POST store a body under the path, GET returns it.";

/// Output formats of reports.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Human-readable report.
    Text,
    /// The summary as JSON (schema/summary.schema.json).
    Json,
    /// One row per one-second interval.
    Csv,
    /// HdrHistogram interval log (report only).
    HdrLog,
}

/// `barrage run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Target URLs (http or https), picked as --pick says (round robin by default). One URL
    /// may be a template such as http://host/obj/{id}, with --objects N.
    #[arg(value_name = "URL", required_unless_present_any = ["targets", "urls_file"])]
    pub urls: Vec<String>,

    /// Open loop: requests per second on a fixed schedule (1000, 1000/s, 60/m), a ramp over
    /// the duration (100:2000), or steps (10,50,100 with --step).
    #[arg(long, value_name = "RATE", conflicts_with_all = ["concurrency", "think_time"], help_heading = "Load")]
    pub rate: Option<RateSpec>,
    /// Length of each step of a stepped --rate.
    #[arg(long, value_name = "DURATION", requires = "rate", help_heading = "Load")]
    pub step: Option<PositiveDur>,
    /// Open loop: most requests outstanding at once; a request due while all are busy is
    /// counted late, and its wait is part of its latency. [default: --connections]
    #[arg(long, value_name = "N", requires = "rate", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Load")]
    pub max_in_flight: Option<u32>,
    /// Closed loop: workers, each sending its next request when the last one finished.
    /// [default: 50 when --rate is not given]
    #[arg(short = 'c', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Load")]
    pub concurrency: Option<u32>,
    /// Closed loop: pause between a response and the worker's next request.
    #[arg(long, value_name = "DURATION", help_heading = "Load")]
    pub think_time: Option<Dur>,
    /// Stop sending after this long. [default: 10s unless --requests is given]
    #[arg(short = 'd', long, value_name = "DURATION", help_heading = "Load")]
    pub duration: Option<PositiveDur>,
    /// Stop after this many requests.
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Load")]
    pub requests: Option<u64>,
    /// Engine threads. [default: one per CPU barrage may run on]
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true, help_heading = "Load")]
    pub threads: usize,

    /// Connections (one request at a time each). Open loop: the in-flight bound
    /// [default: 256]; closed loop: one per worker.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Connections")]
    pub connections: Option<u32>,
    /// Open a new TCP (and TLS) connection for every request, like curl in a loop.
    #[arg(long, help_heading = "Connections")]
    pub no_keepalive: bool,
    /// HTTP/2 (ALPN over TLS, prior knowledge over cleartext).
    #[arg(long, help_heading = "Connections")]
    pub http2: bool,
    /// Trust only the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE", help_heading = "Connections")]
    pub cacert: Option<PathBuf>,
    /// Do not verify TLS certificates (the report says so).
    #[arg(short = 'k', long, help_heading = "Connections")]
    pub insecure: bool,
    /// Connect to ADDR for HOST:PORT, keeping the name for Host and SNI (as curl).
    #[arg(long, value_name = "HOST:PORT:ADDR", help_heading = "Connections")]
    pub resolve: Vec<Resolve>,
    /// Bound on one request, connecting included.
    #[arg(long, value_name = "DURATION", default_value = "30s", help_heading = "Connections")]
    pub timeout: PositiveDur,
    /// Bound on DNS, TCP connect and TLS handshake.
    #[arg(long, value_name = "DURATION", default_value = "10s", help_heading = "Connections")]
    pub connect_timeout: PositiveDur,

    /// Targets in Vegeta's format (METHOD URL, header lines, @body-file, blank line between;
    /// `# name: NAME` names the next target) or as JSON lines; `-` reads stdin.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["urls", "urls_file"], help_heading = "Request")]
    pub targets: Option<String>,
    /// One URL per line (blank lines and # comments skipped).
    #[arg(long = "urls", value_name = "FILE", conflicts_with = "urls", help_heading = "Request")]
    pub urls_file: Option<String>,
    /// How the next target is chosen: same, round-robin, random, zipf:EXPONENT.
    #[arg(long, value_name = "HOW", default_value = "round-robin", help_heading = "Request")]
    pub pick: barrage_plan::Pick,
    /// Ids of a URL template: {id} takes 0..N-1 (barrage serve answers /obj/{id}).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Request")]
    pub objects: Option<u64>,
    /// Wisconsin Proxy Benchmark stream: this fraction of requests repeats a target the same
    /// client (thread or worker) requested before; the rest go to new ones.
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction, help_heading = "Request")]
    pub hit_ratio: Option<f64>,
    /// Run the same request stream once per phase and report each on its own, e.g.
    /// fill,measure: the first fills a cache, the second measures it. With -o run.brg the
    /// files are run.fill.brg, run.measure.brg.
    #[arg(long, value_name = "NAME,NAME", value_delimiter = ',', help_heading = "Request")]
    pub phases: Vec<String>,
    /// Seed of the random picks (each client derives its own from it).
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = "Request")]
    pub seed: u64,
    /// Request method. [default: GET, or POST with a body or form]
    #[arg(short = 'X', long, value_name = "METHOD", help_heading = "Request")]
    pub method: Option<String>,
    /// Request header 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'", help_heading = "Request")]
    pub headers: Vec<Header>,
    /// Request body: text, or @FILE to read it from a file.
    #[arg(long, value_name = "TEXT|@FILE", conflicts_with_all = ["body_size", "form"], help_heading = "Request")]
    pub body: Option<String>,
    /// A generated body of this size (1k, 1m): random bytes, or --body-pattern repeated.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, conflicts_with = "form", help_heading = "Request")]
    pub body_size: Option<u64>,
    /// Fill generated bodies with this text, repeated (deterministic) instead of random bytes.
    #[arg(long, value_name = "TEXT", requires = "body_size", help_heading = "Request")]
    pub body_pattern: Option<String>,
    /// A different generated body for each request (4,096 in rotation, no copies).
    #[arg(long, requires = "body_size", help_heading = "Request")]
    pub body_unique: bool,
    /// A multipart/form-data field, as curl -F: name=value or name=@file, with ;type=MIME
    /// (repeatable).
    #[arg(long = "form", value_name = "FIELD", value_parser = barrage_plan::FormField::parse, help_heading = "Request")]
    pub form: Vec<barrage_plan::FormField>,

    /// Read a response's cache status from a header: HEADER~REGEX=STATUS (hit, miss, pass,
    /// expired, stale), before the built-in rules (repeatable), e.g. 'X-Edge~^TCP_HIT=hit'.
    #[arg(long = "cache-rule", value_name = "RULE", help_heading = "Measure")]
    pub cache_rules: Vec<barrage_plan::CacheRule>,
    /// The header naming the backend that answered (repeatable; tried in order).
    /// [default: X-Served-By, X-Backend, X-Upstream-Address, X-Upstream, Server]
    #[arg(long = "backend-header", value_name = "NAME", value_parser = parse_header_name, help_heading = "Measure")]
    pub backend_headers: Vec<http::HeaderName>,

    /// Retry a failed request up to N times (each attempt is recorded; the report adds
    /// first-try and final success).
    #[arg(long, value_name = "N", help_heading = "Retries")]
    pub retries: Option<u32>,
    /// Backoff before retry 1, doubling per retry up to MAX, with jitter.
    #[arg(long, value_name = "MIN..MAX", default_value = "10ms..1s", requires = "retries", help_heading = "Retries")]
    pub backoff: barrage_plan::Backoff,
    /// What is retried: 5xx, 4xx, status codes (503), error (any transport error), or error
    /// kinds (timeout, reset, refused, connect_timeout, tls, protocol, dns).
    #[arg(long, value_name = "LIST", default_value = "error,5xx", requires = "retries", help_heading = "Retries")]
    pub retry_on: barrage_plan::RetryOn,

    /// Report format on standard output.
    #[arg(long, value_enum, default_value_t = Format::Text, help_heading = "Output")]
    pub format: Format,
    /// Stream the results to this file as the run goes (re-render with `barrage report`).
    #[arg(short = 'o', long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// A log of every request: CSV, or JSON lines for a .jsonl file. Streamed; reports are
    /// made from the results file, not from it.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub log: Option<PathBuf>,
    /// Fraction of requests the log keeps.
    #[arg(long, value_name = "FRACTION", default_value_t = 1.0, value_parser = parse_positive_fraction, requires = "log", help_heading = "Output")]
    pub log_sample: f64,
    /// Also write the latency intervals as an HdrHistogram interval log.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub hdr_log: Option<PathBuf>,
}

/// `barrage report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results files; several are merged (histograms added, intervals aligned by clock).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

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
    #[arg(long, default_value_t = 0, hide_default_value = true, value_name = "N")]
    pub threads: usize,
    /// Serve HTTPS with a generated self-signed certificate.
    #[arg(long)]
    pub tls: bool,
    /// With --tls: write the CA certificate (for the client's --cacert) here.
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub ca_out: Option<PathBuf>,
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
    /// The object catalog: /obj/{id} answers ids 0..N-1, and 404 for any other.
    #[arg(long, value_name = "N")]
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
}

fn parse_header_name(s: &str) -> Result<http::HeaderName, String> {
    http::HeaderName::from_bytes(s.trim().as_bytes()).map_err(|_| format!("invalid header name '{s}'"))
}

/// Largest generated body: it is held in memory once.
const MAX_BODY_SIZE: u64 = 1 << 30;

fn parse_size(s: &str) -> Result<u64, String> {
    let n = barrage_metrics::units::parse_size(s).map_err(|e| e.to_string())?;
    if n > MAX_BODY_SIZE {
        return Err(format!("'{s}' is over the 1 GiB limit of a generated body"));
    }
    Ok(n)
}

fn parse_positive_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!("invalid fraction '{s}': expected a number above 0 and at most 1, e.g. 0.01")),
    }
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("invalid fraction '{s}': expected a number from 0 to 1, e.g. 0.01")),
    }
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
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub concurrency: u32,
}
