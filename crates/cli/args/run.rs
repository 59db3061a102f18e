//! The flags of `barrage run`, which `sweep` and `capacity` share, in the groups of its
//! help (Load, Connections, Request, Key-value…), and what they mean as the plan crate's
//! plain values.

use super::{parse_fraction, parse_header_name, parse_positive_fraction, parse_size, parse_threads, parse_var, Format};
use barrage_plan::limits::{MAX_RETRIES, MAX_WORKERS};
use barrage_plan::units::{self, Dur, Header, PositiveDur, RateSpec, Resolve};
use barrage_plan::values::{parse_bind, parse_key_pattern};
use clap::Args;
use std::path::PathBuf;

/// `barrage run` (and `sweep`, `capacity`, which share its flags), in the groups of its help.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub conn: ConnectionArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub kv: KvArgs,
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub gates: GateArgs,
    #[command(flatten)]
    pub retry: RetryArgs,
    #[command(flatten)]
    pub emit: EmitArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub trace: super::TraceArgs,
    #[command(flatten)]
    pub otel: super::OtelArgs,
    #[command(flatten)]
    pub launch: LaunchArgs,
    #[command(flatten)]
    pub keep: super::HistoryArgs,
}

/// One run split over several load machines (heading: Scale-out).
#[derive(Args, Debug, Clone, Default)]
pub struct LaunchArgs {
    /// Send shard I of N of the run (I from 0, so $JOB_COMPLETION_INDEX/N or
    /// $SLURM_PROCID/$SLURM_NTASKS plug in): open loop, the arrivals k ≡ I mod N at their
    /// times in the whole run; closed loop, this shard's part of -c; -n counts the whole
    /// run. Give every shard the same flags; `barrage report` merges their files.
    #[arg(long, value_name = "I/N", value_parser = |s: &str| s.parse::<barrage_plan::Shard>(), help_heading = "Scale-out")]
    pub shard: Option<barrage_plan::Shard>,
    /// Wait, then start at this time: RFC 3339 (2026-11-23T21:00:00Z) or Unix seconds. The
    /// schedule counts from it, so shards started together align; refused when more than
    /// 1s past.
    #[arg(long, value_name = "TIME", value_parser = |s: &str| s.parse::<barrage_plan::units::StartAt>(), help_heading = "Scale-out")]
    pub start_at: Option<barrage_plan::units::StartAt>,
    /// This machine's clock minus the reference clock (+1.5ms, -300us), as the
    /// orchestrator measured it; recorded with the run.
    #[arg(long, value_name = "OFFSET", allow_hyphen_values = true, value_parser = |s: &str| s.parse::<barrage_plan::units::ClockOffset>(), help_heading = "Scale-out")]
    pub clock_offset: Option<barrage_plan::units::ClockOffset>,
    /// Stream the results to a collector as the run goes (`barrage collect`, at
    /// http://HOST:PORT/): the fleet's live view, and its merge when every shard ended.
    /// Needs --shard I/N (0/1 for a fleet of one): the collector tells the shards apart.
    #[arg(long, value_name = "URL", requires = "shard", help_heading = "Scale-out")]
    pub report_to: Option<String>,
    /// Start when the collector says: measure this machine's clock against the
    /// collector's (NTP's four timestamps), report ready, and start the schedule at the
    /// time it publishes once every shard is ready (instead of --start-at).
    #[arg(long, requires = "report_to", conflicts_with_all = ["start_at", "clock_offset"], help_heading = "Scale-out")]
    pub rendezvous: bool,
    /// Send only the open loop's arrivals due from this offset of the schedule on, the
    /// schedule starting at --start-at even if that is past: how a survivor adopts a lost
    /// shard's share (`collect --on-shard-loss takeover` starts it). A scenario's groups
    /// with a rate likewise; a closed loop's workers (a group's too) start afresh at this
    /// offset and run to their window's end.
    #[arg(long, value_name = "DUR", requires_all = ["start_at", "shard"], help_heading = "Scale-out")]
    pub resume_at: Option<Dur>,
    /// With --resume-at, an open loop without a scenario: where each engine thread of the
    /// lost shard left its lane of the share, `passed[:j.j…]` per thread (the arrivals it
    /// had passed, and of them those still in flight), as its results recorded them: each
    /// thread of this run sends the in-flight ones again, then its lane from there on, so
    /// the takeover sends exactly the arrivals whose outcome the lost shard did not record.
    /// Needs --threads, as many as the lost shard had. The collector gives it.
    #[arg(long, value_name = "LANES", requires_all = ["resume_at", "threads"], value_parser = parse_lanes, help_heading = "Scale-out")]
    pub resume_after: Option<Lanes>,
    /// This run is run N of an experiment made elsewhere (the index `experiment --dry-run
    /// --format json` gives it): it draws that run's picks and asks for that run's new
    /// objects, not a lone run's, so the fleet sends what the experiment would.
    #[arg(long, value_name = "N", value_parser = parse_study_index, help_heading = "Scale-out")]
    pub study_index: Option<u64>,
}

/// `--resume-after`: a lost shard's engine threads' lanes ([`barrage_metrics::lanes`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Lanes(pub Vec<barrage_metrics::lanes::LaneMark>);

fn parse_lanes(s: &str) -> Result<Lanes, String> {
    barrage_metrics::lanes::from_arg(s).map(Lanes).map_err(|e| format!("'{s}': {e}"))
}

/// `--study-index`: a run's place in a study, from 1, below the streams there are.
fn parse_study_index(s: &str) -> Result<u64, String> {
    let max = barrage_plan::pick::MAX_STREAMS - 1;
    match s.parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("'{s}': a study's run index, 1 to {max} (experiment --dry-run --format json gives it)")),
    }
}
/// What to send to: URLs, a target file or a URL list.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// Target URLs (http or https), picked as --pick says (round robin by default). One URL
    /// may be a template such as http://host/obj/{id}, with --objects N. Or a key-value
    /// server: redis://host:port[/db], rediss://… (TLS) or memcache://host:port (see
    /// Key-value below).
    #[arg(value_name = "URL", required_unless_present_any = ["targets", "urls_file", "scenario", "servers"])]
    pub urls: Vec<String>,
}

/// How much load and for how long (`--help` heading: Load).
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Open loop: requests per second on a fixed schedule (1000, 1000/s, 60/m), a ramp over
    /// the duration (100:2000), or steps (10,50,100 with --step).
    #[arg(long, value_name = "RATE", conflicts_with_all = ["concurrency", "think_time"], help_heading = "Load")]
    pub rate: Option<RateSpec>,
    /// Length of each step of a stepped --rate (`sweep`: of each level).
    #[arg(long, value_name = "DURATION", help_heading = "Load")]
    pub step: Option<PositiveDur>,
    /// Open loop: most requests outstanding at once; a request due while all are busy is
    /// counted late, and its wait is part of its latency. [default: --connections]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_WORKERS as i64), help_heading = "Load")]
    pub max_in_flight: Option<u32>,
    /// Open loop: how late a request may go out so that several go per wake-up. A thread
    /// wakes at least this long after its last send and then sends all that came due: each
    /// request leaves at most this (and the timer's lateness) after its intended start.
    /// Smaller is more exact and costs more CPU (a wake-up each); 1us to 2ms. [default: 500us]
    #[arg(long, value_name = "DURATION", help_heading = "Load")]
    pub send_precision: Option<PositiveDur>,
    /// Closed loop: workers, each sending its next request when the last one finished
    /// (with --streams N: connections, each carrying N workers' requests).
    /// [default: 50 when --rate is not given] (`sweep`: a list 8,16,32 or a range 8..96/8)
    #[arg(short = 'c', long, value_name = "N", help_heading = "Load")]
    pub concurrency: Option<units::Levels>,
    /// Closed loop: pause between a response and the worker's next request.
    #[arg(long, value_name = "DURATION", help_heading = "Load")]
    pub think_time: Option<Dur>,
    /// Closed loop: at most this many requests a second over all -c workers, spread evenly
    /// (each worker at most its share, with no catch-up burst): `-c 1 --rate-cap 2` is a
    /// probe, one request at a time, two a second. Latency stays the service time; unlike
    /// --rate, a slow answer delays the next request instead of queueing it.
    #[arg(long, value_name = "RATE", conflicts_with = "rate", help_heading = "Load")]
    pub rate_cap: Option<barrage_plan::units::Rate>,
    /// Stop sending after this long. [default: 10s unless --requests is given]
    #[arg(short = 'd', long, value_name = "DURATION", help_heading = "Load")]
    pub duration: Option<PositiveDur>,
    /// Stop after this many requests.
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Load")]
    pub requests: Option<u64>,
    /// Engine threads. [default: one per CPU barrage may run on]
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true, value_parser = parse_threads, help_heading = "Load")]
    pub threads: usize,
}

/// How connections are made (heading: Connections).
#[derive(Args, Debug, Clone)]
pub struct ConnectionArgs {
    /// Connections (one request at a time each, or --streams). Open loop: the in-flight
    /// bound is connections × streams [default: 256 connections]; closed loop: one per
    /// worker.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_WORKERS as i64), help_heading = "Connections")]
    pub connections: Option<u32>,
    /// Open a new TCP (and TLS) connection for every request, like curl in a loop.
    #[arg(long, help_heading = "Connections")]
    pub no_keepalive: bool,
    /// HTTP/2 (ALPN over TLS, prior knowledge over cleartext). If the server chooses
    /// HTTP/1.1 by ALPN, the report says so.
    #[arg(long, help_heading = "Connections")]
    pub http2: bool,
    /// Streams per connection, as h2load's -m: each connection carries N requests at once,
    /// over HTTP/2 (implied) or HTTP/3 with --http3. -c counts connections: `-c 10 --streams
    /// 10` keeps 100 requests in flight on 10 connections; open loop, --connections × N.
    /// [default: 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=barrage_plan::limits::MAX_STREAMS as i64), help_heading = "Connections")]
    pub streams: Option<u32>,
    /// HTTP/2, closed loop: send each connection's requests in rounds, as h2load's writes
    /// batch: a freed stream's request waits until as many wait as are out, or about 5 ms.
    /// A server at its CPU limit then answers more a second (nginx at 100 streams:
    /// 1.05-1.10× as many as by default, at a higher p99); each request's wait is in its
    /// send phase and its latency, which gains up to 5-7 ms when slow and quick requests
    /// share a connection. Off by default.
    #[arg(long, requires = "streams", help_heading = "Connections")]
    pub rounds: bool,
    /// HTTP/3: QUIC over UDP to the URL's host and port (https:// only), ALPN h3, full
    /// handshake every connection (no 0-RTT). The connect phase is the QUIC handshake,
    /// TLS included.
    #[arg(long, conflicts_with = "http2", help_heading = "Connections")]
    pub http3: bool,
    /// Trust only the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE", help_heading = "Connections")]
    pub cacert: Option<PathBuf>,
    /// Do not verify TLS certificates (the report says so).
    #[arg(short = 'k', long, help_heading = "Connections")]
    pub insecure: bool,
    /// Connect to ADDR for HOST:PORT, keeping the name for Host and SNI (as curl).
    #[arg(long, value_name = "HOST:PORT:ADDR", help_heading = "Connections")]
    pub resolve: Vec<Resolve>,
    /// Make every connection from this local address (an interface of a multi-homed load
    /// machine, or 127.0.0.N for one of several generators on one host), as curl's
    /// --interface.
    #[arg(long, value_name = "ADDR", value_parser = parse_bind, help_heading = "Connections")]
    pub bind: Option<std::net::IpAddr>,
    /// Bound on one request, connecting included.
    #[arg(long, value_name = "DURATION", default_value = "30s", help_heading = "Connections")]
    pub timeout: PositiveDur,
    /// Bound on DNS, TCP connect and TLS handshake.
    #[arg(long, value_name = "DURATION", default_value = "10s", help_heading = "Connections")]
    pub connect_timeout: PositiveDur,
}

/// Redis and memcached runs, in memtier_benchmark's words (heading: Key-value).
#[derive(Args, Debug, Clone)]
pub struct KvArgs {
    /// More servers of a redis:// or memcache:// run (comma-separated URLs); keys are spread
    /// over all of them by --distribution.
    #[arg(long, value_name = "URL,URL", value_delimiter = ',', help_heading = "Key-value")]
    pub servers: Vec<String>,
    /// Wire protocol: resp2, resp3 (HELLO 3), memcache-text or memcache-meta [default: resp2
    /// for redis://, memcache-text for memcache://].
    #[arg(long, value_name = "PROTOCOL", value_parser = |s: &str| s.parse::<barrage_plan::kv::Protocol>(), help_heading = "Key-value")]
    pub protocol: Option<barrage_plan::kv::Protocol>,
    /// SETs to GETs in each round, as memtier's --ratio (1:10; 1:0 sets only, 0:1 gets only).
    /// [default: 1:10]
    #[arg(long, value_name = "SET:GET", value_parser = barrage_plan::kv::parse_ratio, conflicts_with = "commands", help_heading = "Key-value")]
    pub ratio: Option<(u32, u32)>,
    /// Keys are this prefix and a number. [default: memtier-]
    #[arg(long, value_name = "TEXT", help_heading = "Key-value")]
    pub key_prefix: Option<String>,
    /// The smallest key number. [default: 0]
    #[arg(long, value_name = "N", help_heading = "Key-value")]
    pub key_minimum: Option<u64>,
    /// The largest key number [default: 9999999, memtier's 10 million keys].
    #[arg(long, value_name = "N", conflicts_with = "objects", help_heading = "Key-value")]
    pub key_maximum: Option<u64>,
    /// How keys are drawn, in memtier's letters: R random, S sequential, G Gaussian
    /// (the same for SETs and GETs: R:R); --pick says the same in barrage's words.
    #[arg(long, value_name = "R|S|G", conflicts_with = "pick", value_parser = parse_key_pattern, help_heading = "Key-value")]
    pub key_pattern: Option<barrage_plan::Pick>,
    /// Value size of SETs in bytes [default: 32].
    #[arg(long, value_name = "SIZE", conflicts_with_all = ["data_size_range", "data_size_list"], help_heading = "Key-value")]
    pub data_size: Option<String>,
    /// Value sizes drawn uniformly from MIN-MAX.
    #[arg(long, value_name = "MIN-MAX", conflicts_with = "data_size_list", help_heading = "Key-value")]
    pub data_size_range: Option<String>,
    /// Value sizes with weights: SIZE:WEIGHT,SIZE:WEIGHT.
    #[arg(long, value_name = "SIZE:W,...", help_heading = "Key-value")]
    pub data_size_list: Option<String>,
    /// Commands in flight per connection. [default: 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = "Key-value")]
    pub pipeline: Option<u32>,
    /// A Redis command instead of SET/GET, e.g. 'HSET h:{id} f {value}' ({id} the key number,
    /// __key__ the prefixed key, {value} or __data__ a value); repeat for several, sent in turn.
    #[arg(long = "command", value_name = "'CMD ARGS'", help_heading = "Key-value")]
    pub commands: Vec<String>,
    /// How keys are spread over several servers (--servers): ketama (consistent hashing, as
    /// libmemcached) or modulo. [default: ketama]
    #[arg(long, value_name = "HOW", value_parser = ["ketama", "modulo"], help_heading = "Key-value")]
    pub distribution: Option<String>,
}

/// What each request is (heading: Request).
#[derive(Args, Debug, Clone)]
pub struct RequestArgs {
    /// Targets in Vegeta's format (METHOD URL, header lines, @body-file, blank line between;
    /// `# name: NAME` names the next target) or as JSON lines; `-` reads stdin. --body,
    /// --body-size and --form go to its POST, PUT and PATCH targets without a body of their own.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["urls", "urls_file"], help_heading = "Request")]
    pub targets: Option<String>,
    /// One URL per line (blank lines and # comments skipped).
    #[arg(long = "urls", value_name = "FILE", conflicts_with = "urls", help_heading = "Request")]
    pub urls_file: Option<String>,
    /// How the next target is chosen: same, round-robin, random, zipf:EXPONENT, or
    /// gauss[:STDDEV[:MEDIAN]] (memtier's Gaussian: ids around MEDIAN, default the middle,
    /// spread STDDEV, default a sixth of the ids) [default: round-robin; random for
    /// redis:// and memcache://, as memtier].
    #[arg(long, value_name = "HOW", help_heading = "Request")]
    pub pick: Option<barrage_plan::Pick>,
    /// Ids of a URL template: {id} takes 0..N-1 (barrage serve answers /obj/{id}); with
    /// --hit-ratio, how far back (in requests) a repeat may reach.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Request")]
    pub objects: Option<u64>,
    /// A scenario file: flows of requests with captures, checks and think times, run by
    /// groups each with its own load (docs/flows.md). Without groups, its one flow runs
    /// under this run's --rate or -c.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["targets", "urls_file", "urls", "body", "body_size", "form", "objects", "hit_ratio"],
        help_heading = "Request"
    )]
    pub scenario: Option<std::path::PathBuf>,
    /// A value for {{NAME}} in the scenario file, over its [vars] (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE", requires = "scenario", value_parser = parse_var, help_heading = "Request")]
    pub vars: Vec<(String, String)>,
    /// Wisconsin Proxy Benchmark stream: this fraction of requests repeats an object asked
    /// for before (past the clients in flight, at most --objects requests back); the rest
    /// ask for objects new to the whole study.
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction, help_heading = "Request")]
    pub hit_ratio: Option<f64>,
    /// One request stream in phases, each reported on its own, e.g. fill,measure: the first
    /// fills a cache with what the later ones ask for again, each later one as many requests
    /// as the fill sent (measure:30s: for 30 s, going round them). With -o run.brg the files
    /// are run.fill.brg, run.measure.brg.
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
    /// A multipart/form-data field, as curl -F: name=value, name=@FILE (an upload),
    /// name=<FILE (the file's content as a text field), with ;type=MIME and ;filename=NAME
    /// (repeatable).
    #[arg(long = "form", value_name = "FIELD", value_parser = barrage_plan::FormField::parse, help_heading = "Request")]
    pub form: Vec<barrage_plan::FormField>,
}

/// How responses are read (heading: Measure).
#[derive(Args, Debug, Clone)]
pub struct MeasureArgs {
    /// Read a response's cache status from a header: HEADER~REGEX=STATUS (hit, miss, pass,
    /// expired, stale), before the built-in rules (repeatable), e.g. 'X-Edge~^TCP_HIT=hit'.
    #[arg(long = "cache-rule", value_name = "RULE", help_heading = "Measure")]
    pub cache_rules: Vec<barrage_plan::CacheRule>,
    /// The header naming the backend that answered (repeatable; tried in order).
    /// [default: X-Served-By, X-Backend, X-Upstream-Address, X-Upstream, Server]
    #[arg(long = "backend-header", value_name = "NAME", value_parser = parse_header_name, help_heading = "Measure")]
    pub backend_headers: Vec<http::HeaderName>,
}

/// What is watched and done beside the load (heading: Watch).
#[derive(Args, Debug, Clone)]
pub struct WatchArgs {
    /// Watch a server process each second: a PID, a process name (nginx: the master and its
    /// workers), or a testbed server's name (repeatable). Servers of a testbed the URLs point
    /// at are watched without it.
    #[arg(long = "monitor", value_name = "PID|NAME", help_heading = "Watch")]
    pub monitor: Vec<String>,
    /// Run a shell command at this offset of the run, recorded as an event (repeatable):
    /// --at 10s 'barrage testbed stop origin-2'.
    #[arg(long = "at", num_args = 2, value_names = ["OFFSET", "COMMAND"], action = clap::ArgAction::Append, help_heading = "Watch")]
    pub at: Vec<String>,
    /// The testbed whose servers --monitor names and which is watched by itself.
    /// [default: as `barrage testbed`]
    #[arg(long, value_name = "DIR", help_heading = "Watch")]
    pub testbed: Option<PathBuf>,
}

/// Objectives checked at the end (heading: Gates).
#[derive(Args, Debug, Clone)]
pub struct GateArgs {
    /// A service-level objective checked at the end (repeatable): p99<250ms, p50<20ms,
    /// success>=99.5%, throughput>=1000/s, errors<10; NAME:p99<100ms for requests of one
    /// name. Success and errors are of the requests due: one never sent counts as failed.
    /// Any missed one makes the exit code 1.
    #[arg(long, value_name = "EXPR", help_heading = "Gates")]
    pub slo: Vec<barrage_report::Slo>,
    /// Write the --slo verdicts as JUnit XML, for CI systems.
    #[arg(long, value_name = "FILE", requires = "slo", help_heading = "Gates")]
    pub junit: Option<PathBuf>,
}

/// Retries of failed requests (heading: Retries).
#[derive(Args, Debug, Clone)]
pub struct RetryArgs {
    /// Retry a failed request up to N times (each attempt is recorded; the report adds
    /// first-try and final success).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=MAX_RETRIES as i64), help_heading = "Retries")]
    pub retries: Option<u32>,
    /// Backoff before retry 1, doubling per retry up to MAX, with jitter.
    #[arg(long, value_name = "MIN..MAX", default_value = "10ms..1s", requires = "retries", help_heading = "Retries")]
    pub backoff: barrage_plan::Backoff,
    /// What is retried: 5xx, 4xx, status codes (503), error (any transport error), or error
    /// kinds (timeout, reset, refused, unreachable, connect_timeout, tls, protocol, dns).
    #[arg(long, value_name = "LIST", default_value = "error,5xx", requires = "retries", help_heading = "Retries")]
    pub retry_on: barrage_plan::RetryOn,
}

/// Where results and reports go (heading: Output).
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
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
    /// Also redact the value of this header, and of a query parameter of this name, in
    /// every output (repeatable); Authorization, Cookie and names with token, secret, key,
    /// password or session always are.
    #[arg(long = "redact-header", value_name = "NAME", help_heading = "Output")]
    pub redact_headers: Vec<String>,
    /// Write header values and URL credentials as given, not redacted, whatever
    /// --redact-header says (the report says so; its files are their owner's alone).
    #[arg(long, help_heading = "Output")]
    pub no_redact: bool,
}

/// Live views while the load runs (heading: Output).
#[derive(Args, Debug, Clone)]
pub struct LiveArgs {
    /// Show a live terminal view (rates, latency, status codes, errors, cache, backends)
    /// instead of the progress line; q stops the run and prints the report.
    #[arg(long, help_heading = "Output")]
    pub tui: bool,
    /// Serve the run's counters and latency histograms for Prometheus at
    /// http://ADDR/metrics while it runs (port 0: a free one, printed on stderr).
    #[arg(long, value_name = "ADDR", help_heading = "Output")]
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// How a report is emitted: the format on standard output, and files beside it. Every mode
/// that produces a report takes these.
#[derive(Args, Debug, Clone)]
pub struct EmitArgs {
    /// Report format on standard output.
    #[arg(long, value_enum, default_value_t = Format::Text, help_heading = "Output")]
    pub format: Format,
    /// Also write the report as one self-contained HTML page with charts.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// Also write the report's tables as a spreadsheet workbook, one sheet per table.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub xlsx: Option<PathBuf>,
    /// Also write each of those tables as DIR/NAME.csv.
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub csv_dir: Option<PathBuf>,
}
