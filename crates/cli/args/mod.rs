//! Command-line arguments (clap derive; doc comments are the help text).

use barrage_plan::limits::{MAX_RETRIES, MAX_THREADS, MAX_WORKERS};
use barrage_plan::units::{self, Dur, Header, PositiveDur, Rate, RateSpec, Resolve};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
pub mod completions;

#[derive(Parser, Debug)]
#[command(name = "barrage", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

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
    Serve(Box<ServeArgs>),
    /// Start the origin in-process and run a short open-loop and closed-loop test against it.
    Demo(DemoArgs),
    /// Real nginx, haproxy, varnishd and squid in front of barrage origins, on loopback.
    #[command(after_help = TESTBED_EXAMPLES)]
    Testbed(TestbedArgs),
    /// One run per load level (--rate 10,50,100 or -c 8..96/8), one row per level.
    #[command(after_help = SWEEP_EXAMPLES)]
    Sweep(Box<RunArgs>),
    /// The highest open-loop rate meeting every --slo: a ramp to bracket it, then a search.
    #[command(after_help = CAPACITY_EXAMPLES)]
    Capacity(Box<CapacityArgs>),
    /// Run every case of an experiment file (factors, levels, repeats) and compare them.
    #[command(after_help = EXPERIMENT_EXAMPLES)]
    Experiment(ExperimentArgs),
    /// Compare runs against the first (the baseline), with significance; --fail-if for CI.
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    #[command(flatten)]
    Generated(completions::Generated),
}

const SWEEP_EXAMPLES: &str = "Examples:
  barrage sweep URL --rate 10,50,100,500,700 --step 10s          a report per rate
  barrage sweep URL -c 8..96/8 --step 10s --slo 'p99<100ms'      latency and errors vs clients
  barrage sweep URL -c 1,2,4,8 -o sweep-dir --xlsx sweep.xlsx    keep each level's results
  barrage sweep URL -c 4,8,16 --step 5s --phases fill,measure      hit ratio and latency per level and phase
All flags of `run` apply to every level (--log, --hdr-log and -o get the level in their names); -o names a directory.";

const CAPACITY_EXAMPLES: &str = "Examples:
  barrage capacity URL --slo 'p99<100ms' --slo 'success>=99.9%'
  barrage capacity URL --slo 'p99<50ms' --step 5s --max-rate 50000 --precision 2%
Each probe is a run of --step (default 10s) at one rate; all flags of `run` apply.";

/// `barrage capacity`.
#[derive(Args, Debug)]
pub struct CapacityArgs {
    /// The rate of the first probe; the ramp doubles it until an objective is missed.
    #[arg(long, value_name = "RATE", default_value = "100")]
    pub start_rate: Rate,
    /// The highest rate probed (at most 10000000/s).
    #[arg(long, value_name = "RATE", default_value = "500000")]
    pub max_rate: Rate,
    /// Stop when the bracket is this narrow, relative to its top.
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = parse_positive_percent)]
    pub precision: f64,
    /// Bound on the whole search; the capacity found so far is reported when it runs out.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub max_time: PositiveDur,
    /// The run's flags (URL, --slo, --step, headers, TLS…).
    #[command(flatten)]
    pub run: RunArgs,
}

const EXPERIMENT_EXAMPLES: &str = "Examples:
  barrage experiment study.toml --dry-run        list the cases (TC0, TC1, …) and their flags
  barrage experiment study.toml -o study.results run them; a results file per case and repeat
  barrage experiment study.toml -o study.results --resume    finish an interrupted one
The file format is in the README (Experiments).";

/// `barrage experiment`.
#[derive(Args, Debug)]
pub struct ExperimentArgs {
    /// The experiment file (TOML).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// List the cases with their ids and flags; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Show the cases' flags as written in the listing and experiment.json (which is then
    /// its owner's alone): header values and URL credentials, otherwise redacted.
    #[arg(long)]
    pub show_secrets: bool,
    /// The results directory. [default: FILE's name with .results]
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Continue an interrupted experiment in the directory, skipping finished runs.
    #[arg(long)]
    pub resume: bool,
    /// An objective of every case, besides the file's (repeatable).
    #[arg(long, value_name = "EXPR")]
    pub slo: Vec<barrage_report::Slo>,
    /// Write the objectives' verdicts as JUnit XML.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Smallest change between two cases called significant, however small the p-value.
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = parse_percent)]
    pub noise: f64,
    #[command(flatten)]
    pub emit: EmitArgs,
    #[command(flatten)]
    pub live: LiveArgs,
}

const COMPARE_EXAMPLES: &str = "Examples:
  barrage compare before.brg after.brg
  barrage compare before.brg after.brg --fail-if 'p99>+10%' --fail-if 'throughput<-5%'
  barrage compare http.brg https.brg h2.brg --xlsx comparison.xlsx";

/// `barrage compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Results files, directories whose results files are merged into one run (one run from
    /// several machines), or experiment directories (compared case by case); the first is
    /// the baseline.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<PathBuf>,
    /// Exit 1 when a run's change against the baseline crosses this bound (repeatable):
    /// 'p99>+10%', 'throughput<-5%'. Metrics: throughput, success, errors, mean, p50, p90,
    /// p99, max.
    #[arg(long = "fail-if", value_name = "BOUND")]
    pub fail_if: Vec<barrage_report::compare::FailIf>,
    /// Smallest change called significant, however small the p-value.
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = parse_percent)]
    pub noise: f64,
    #[command(flatten)]
    pub emit: EmitArgs,
}

/// A percentage above zero: a bracket of 0% is never narrow enough.
fn parse_positive_percent(s: &str) -> Result<f64, String> {
    match parse_percent(s)? {
        p if p > 0.0 => Ok(p),
        _ => Err(format!("invalid percentage '{s}': expected above 0% up to 100%, e.g. 2%")),
    }
}

fn parse_percent(s: &str) -> Result<f64, String> {
    s.strip_suffix('%')
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|p| (0.0..=100.0).contains(p))
        .map(|p| p / 100.0)
        .ok_or_else(|| format!("invalid percentage '{s}': expected 0% to 100%, e.g. 2%"))
}

const TESTBED_EXAMPLES: &str = "Examples:
  barrage testbed up haproxy-lb --backends 3            three origins behind haproxy
  barrage testbed up all --tls                          every front, HTTPS at the balancers and squid
  barrage testbed up redis --tls                        redis-server on redis:// and rediss://
  barrage testbed up caddy --tls                        origins behind Caddy, HTTPS and HTTP/3 at both
  barrage testbed up haproxy-lb --backends 3 --balance uri-hash --weights 2,1,1
  barrage testbed up direct --shape latency=20ms,capacity=4+16 --shape origin-2:latency=100ms
  barrage testbed status
  barrage testbed up varnish --tls                      varnish, HTTPS through hitch (varnish-tls)
  barrage testbed up nginx-cache --memory 256m          nginx's proxy_cache in front of an origin
  barrage testbed up redis --memory 64mb --eviction allkeys-lru
  barrage testbed status --format json                  servers, URLs, PIDs, directories, logs
  barrage testbed purge                                 empty every cache (or: purge varnish)
  barrage run -c 20 -d 20s http://127.0.0.1:PORT/ --at 5s 'barrage testbed stop origin-2' --at 12s 'barrage testbed start origin-2'
  barrage run -c 8 -d 10s http://127.0.0.1:PORT/ --at 5s 'barrage testbed set origin-1 latency=50ms'
  barrage testbed down
  barrage testbed bench --duration 5s                   every front side by side, then down";

/// `barrage testbed`.
#[derive(Args, Debug)]
pub struct TestbedArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TestbedCommand,
}

/// Testbed subcommands.
#[derive(Subcommand, Debug)]
pub enum TestbedCommand {
    /// Start the servers of a topology (direct, varnish, squid, nginx-lb, haproxy-lb, caddy,
    /// nginx-cache, all, redis, memcached).
    Up(TestbedUpArgs),
    /// Show the servers, their URLs and PIDs (with --format json also their directories and
    /// logs).
    Status(TestbedStatusArgs),
    /// Empty a cache, or every cache of the testbed: varnish (a ban of every object), squid
    /// (restarted: its cache is in memory), nginx-cache (its files removed), redis and
    /// memcached (flushed).
    Purge(TestbedPurgeArgs),
    /// Stop every server and remove the state.
    Down(TestbedDirArgs),
    /// Stop one server (SIGTERM, then SIGKILL after 5 s).
    Stop(TestbedNameArgs),
    /// Start one stopped server again, on the same port.
    Start(TestbedNameArgs),
    /// Change a running origin's shape (or every origin's: all) without a restart, e.g.
    /// `barrage testbed set origin-2 latency=200ms`; also as a run's --at event.
    Set(TestbedSetArgs),
    /// Bring `all` up, run the same load against every front, print one table, tear down.
    Bench(TestbedBenchArgs),
    /// The supervisor process (started by `up`).
    #[command(hide = true)]
    Supervise(TestbedSuperviseArgs),
}

/// `--dir`, shared by the testbed subcommands.
#[derive(Args, Debug, Clone)]
pub struct TestbedDirArgs {
    /// The testbed's state directory. [default: $BARRAGE_TESTBED_DIR, else
    /// $XDG_RUNTIME_DIR/barrage-testbed, else /tmp/barrage-testbed-UID]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `barrage testbed up`.
#[derive(Args, Debug)]
pub struct TestbedUpArgs {
    /// Which servers: direct, varnish, squid, nginx-lb, haproxy-lb, caddy (HTTP/3 with
    /// --tls), nginx-cache (nginx's proxy_cache), all (nginx, haproxy, varnish and squid),
    /// redis or memcached.
    #[arg(value_name = "TOPOLOGY")]
    pub topology: barrage_testbed::Topology,
    /// Origins; redis-server or memcached instances for redis and memcached. [default: 2; 1
    /// for varnish, squid, nginx-cache, redis and memcached]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub backends: Option<u32>,
    /// Serve HTTPS beside HTTP at the fronts and the origins (at varnish through hitch, a
    /// server of its own: varnish-tls), HTTP/3 on the same ports at Caddy and the origins,
    /// and rediss:// beside redis:// at redis (memcached refuses it), with a generated
    /// certificate; its CA is printed for --cacert.
    #[arg(long)]
    pub tls: bool,
    /// The caches' size (64m, 1g): varnish's storage, squid's cache_mem, nginx-cache's
    /// files, redis-server's maxmemory, memcached's memory (whole megabytes). [default: 64m;
    /// nginx-cache 1g; redis no limit]
    #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
    pub memory: Option<u64>,
    /// What redis-server does at --memory: noeviction, allkeys-lru, allkeys-lfu,
    /// allkeys-random, volatile-lru, volatile-lfu, volatile-random, volatile-ttl. [default:
    /// noeviction]
    #[arg(long, value_name = "POLICY")]
    pub eviction: Option<barrage_testbed::Eviction>,
    /// How the balancers spread requests (uri-hash: consistent, by path and query; Caddy
    /// too).
    #[arg(long, value_enum, default_value = "roundrobin")]
    pub balance: BalanceArg,
    /// The origins' weights at the balancers, one per origin (3,1: origin-1 gets three
    /// requests for each of origin-2's); nginx-lb, haproxy-lb and all.
    #[arg(long, value_name = "W,W…", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=256))]
    pub weights: Vec<u32>,
    /// The origins' shape: latency=100ms,size=lognormal:4k,1.0,errors=1%,capacity=8+64
    /// for all, origin-2:latency=200ms for one (repeatable; later ones override earlier
    /// ones key by key). latency: 20ms, 10ms..50ms, exp:20ms; size (of /obj/{id}): 1k,
    /// 1k..64k, lognormal:4k,1.0; errors: 1% answered 500; capacity: N served at once,
    /// N+Q with at most Q queued (more: 503 at once).
    #[arg(long, value_name = "[ORIGIN:]SHAPE", value_parser = parse_testbed_shape)]
    pub shape: Vec<String>,
    /// Stay in the terminal; Ctrl-C takes the testbed down.
    #[arg(long)]
    pub foreground: bool,
    #[command(flatten)]
    pub dir: TestbedDirArgs,
}

/// Balancing methods.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BalanceArg {
    /// In turn.
    Roundrobin,
    /// Fewest open requests.
    Leastconn,
    /// By client address (sticky).
    Iphash,
    /// By a consistent hash of the URI: each URL always to one origin.
    UriHash,
}

fn parse_testbed_shape(s: &str) -> Result<String, String> {
    barrage_testbed::parse_shape(s).map(|_| s.to_string())
}

/// `barrage testbed set NAME SHAPE`.
#[derive(Args, Debug)]
pub struct TestbedSetArgs {
    /// The origin (origin-2), or all.
    #[arg(value_name = "ORIGIN|all")]
    pub name: String,
    /// Keys to change, as --shape of `up` takes them: latency=200ms, errors=5%,
    /// capacity=4+16 (several words are joined with commas).
    #[arg(value_name = "SHAPE", required = true, num_args = 1..)]
    pub shape: Vec<String>,
    #[command(flatten)]
    pub dir: TestbedDirArgs,
}

/// `barrage testbed status`.
#[derive(Args, Debug)]
pub struct TestbedStatusArgs {
    /// How to print: a table (text), or the servers with their directories and log files
    /// (json, schema/testbed-status.schema.json).
    #[arg(long, value_enum, default_value = "text")]
    pub format: StatusFormat,
    #[command(flatten)]
    pub dir: TestbedDirArgs,
}

/// How `testbed status` prints.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusFormat {
    /// A table.
    Text,
    /// One JSON object.
    Json,
}

/// `barrage testbed purge [NAME]`.
#[derive(Args, Debug)]
pub struct TestbedPurgeArgs {
    /// The cache (varnish, squid, nginx-cache, redis-1…); every cache when left out.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    #[command(flatten)]
    pub dir: TestbedDirArgs,
}

/// `barrage testbed stop|start NAME`.
#[derive(Args, Debug)]
pub struct TestbedNameArgs {
    /// The server, as `testbed status` names it (origin-2, nginx-lb, redis-1…).
    #[arg(value_name = "NAME")]
    pub name: String,
    #[command(flatten)]
    pub dir: TestbedDirArgs,
}

/// `barrage testbed bench`.
#[derive(Args, Debug)]
pub struct TestbedBenchArgs {
    /// Open loop at this rate against each front (at most 10000000/s).
    #[arg(long, value_name = "RATE", conflicts_with = "concurrency")]
    pub rate: Option<Rate>,
    /// Closed loop with this many workers against each front. [default: 16]
    #[arg(short = 'c', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_WORKERS as i64))]
    pub concurrency: Option<u32>,
    /// Length of each run.
    #[arg(short = 'd', long, default_value = "5s", value_name = "DURATION")]
    pub duration: PositiveDur,
    /// Response size of the origins (/bytes/SIZE), at most 1g.
    #[arg(long, default_value = "1k", value_name = "SIZE", value_parser = parse_response_size)]
    pub size: String,
    /// Origins behind the balancers.
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub backends: u32,
    /// Skip the HTTPS rows.
    #[arg(long)]
    pub no_tls: bool,
    /// Keep each run's results file here (FRONT.brg).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    #[command(flatten)]
    pub dir: TestbedDirArgs,
    #[command(flatten)]
    pub emit: EmitArgs,
}

/// `barrage testbed supervise` (internal).
#[derive(Args, Debug)]
pub struct TestbedSuperviseArgs {
    /// The state directory.
    #[arg(long)]
    pub dir: PathBuf,
    /// The testbed's options, as JSON.
    #[arg(long)]
    pub options: String,
    /// The process the testbed lives for: it goes down when its standard input (a pipe
    /// that process holds) closes. Without it, only until the testbed is up.
    #[arg(long)]
    pub owner: Option<u32>,
}

const RUN_EXAMPLES: &str = "Examples:
  barrage run --rate 1000 --duration 30s http://127.0.0.1:8080/       open loop, 1000 req/s
  barrage run --rate 100:2000 --duration 1m URL                        ramp from 100 to 2000 req/s
  barrage run --rate 10,50,100,500,700 --step 10s URL                  steps, each reported on its own
  barrage run -c 50 -d 10s URL                                         closed loop, 50 workers (wrk -c50 -d10s)
  barrage run -n 1000 -c 50 URL                                        1000 requests by 50 workers (hey)
  barrage run -c 1 --no-keepalive -n 100 https://host/ --cacert ca.pem one new TLS connection per request
  barrage run -c 10 --streams 100 -d 10s URL                           HTTP/2, 10 connections × 100 streams (h2load -c10 -m100)
  barrage run --http3 -c 8 --streams 10 -d 10s https://host:8443/ --cacert ca.pem   HTTP/3 over QUIC (UDP 8443), 8 connections × 10 streams
  barrage run --rate 500 -d 1m -o run.brg --format json URL            keep the results file, print JSON
  barrage run --rate 30000 -d 1m --shard 0/3 --start-at 1795467600 -o s0.brg URL   shard 0 of 3 (then 1/3, 2/3)";

const REPORT_EXAMPLES: &str = "Examples:
  barrage report run.brg                      the text report again
  barrage report --format json run.brg        as JSON
  barrage report a.brg b.brg c.brg            merge runs from several machines
  barrage report s0.brg s1.brg s2.brg         merge the shards of a split run (all must be there)
  barrage report --format hdr-log run.brg     HdrHistogram interval log
  barrage report --xlsx all.xlsx --html all.html --csv-dir tables client*.brg   merged, as a workbook, a page, CSV files";

const SERVE_EXAMPLES: &str = "Examples:
  barrage serve --listen 127.0.0.1:8080
  barrage serve --latency 20ms --name origin-1
  barrage serve --tls --ca-out ca.pem --listen 127.0.0.1:8443
  barrage serve --tls --http3 --ca-out ca.pem --listen 127.0.0.1:8443   HTTPS, and HTTP/3 on UDP 8443
  barrage serve --instances 2 --album-store /tmp/albums     two origins sharing their albums
  barrage serve --shape-file shape.txt --access-log access.log   shape re-read on SIGHUP
Routes: /bytes/{size} (1024, 1k, 1m), /delay/{ms}, /status/{code}, /obj/{id}, /_barrage/stats;
/reset/{reason} resets an HTTP/2 stream with that code (cancel, refused_stream, ...), an HTTP/3 one with its counterpart, closes an HTTP/1.1 connection;
POST /albums (multipart: JSON profile, image) answers {\"albumID\", \"imageSize\"}, GET /albums/{id} the profile;
PUT/POST store a body under the path, GET returns it.";

/// Output formats of reports.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Human-readable report.
    #[default]
    Text,
    /// The summary as JSON (schema/summary.schema.json).
    Json,
    /// One row per one-second interval.
    Csv,
    /// HdrHistogram interval log (report only).
    HdrLog,
    /// One self-contained HTML page with charts.
    Html,
}

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
    pub launch: LaunchArgs,
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
    /// A server at its CPU limit then answers more a second (nginx: 1.1-1.2×); each
    /// request's wait is in its send phase and its latency, which gains up to 5-7 ms when
    /// slow and quick requests share a connection. Off by default.
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

/// `--bind`: an IP address (no port: each connection gets its own).
fn parse_bind(s: &str) -> Result<std::net::IpAddr, String> {
    s.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| format!("invalid --bind '{s}': expected a local IP address such as 127.0.0.2 or ::1"))
}

/// memtier's `--key-pattern`: `R`, `S` or `G`, optionally written twice (`R:R`).
fn parse_key_pattern(s: &str) -> Result<barrage_plan::Pick, String> {
    let bad = || {
        format!("invalid --key-pattern '{s}': expected R (random), S (sequential) or G (Gaussian), the same for SETs and GETs (R:R)")
    };
    let (set, get) = s.split_once(':').unwrap_or((s, s));
    if set != get {
        return Err(format!("{}; barrage draws SET and GET keys from one stream", bad()));
    }
    match set {
        "R" => Ok(barrage_plan::Pick::Random),
        "S" => Ok(barrage_plan::Pick::RoundRobin),
        "G" => "gauss".parse(),
        _ => Err(bad()),
    }
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
    /// groups each with its own load (README, "Flows"). Without groups, its one flow runs
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

/// `barrage report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results files; several are merged (histograms added, intervals aligned by clock).
    /// The shards of a split run (`run --shard`) must all be there, once each, of one plan.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Merge shards even when some are missing, twice or of different plans (the report
    /// says so).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub emit: EmitArgs,
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
    /// the README) from this file, laid over the flags, and again on every SIGHUP, which
    /// then swaps it in without a restart or a dropped connection instead of stopping.
    #[arg(long, value_name = "FILE")]
    pub shape_file: Option<PathBuf>,
    /// Keep the PUT/GET/DELETE store in this directory, one file per path, instead of in
    /// memory: every origin started with the same DIR sees every body. Created for this
    /// user alone if missing; refused if others can write to it.
    #[arg(long, value_name = "DIR")]
    pub store_dir: Option<PathBuf>,
    /// Append one line per request to FILE: time (Unix s), method, path, status, bytes,
    /// duration (µs); buffered, written at least every second and at shutdown.
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

fn parse_header_name(s: &str) -> Result<http::HeaderName, String> {
    http::HeaderName::from_bytes(s.trim().as_bytes()).map_err(|_| format!("invalid header name '{s}'"))
}

/// A cache's size: more than nothing.
fn parse_memory(s: &str) -> Result<u64, String> {
    match barrage_metrics::units::parse_size(s).map_err(|e| e.to_string())? {
        0 => Err(format!("'{s}' leaves no memory: give a size such as 64m")),
        n => Ok(n),
    }
}

/// A size up to the largest body (it is held in memory once).
fn parse_size(s: &str) -> Result<u64, String> {
    let n = barrage_metrics::units::parse_size(s).map_err(|e| e.to_string())?;
    if n > barrage_plan::limits::MAX_BODY {
        return Err(format!("'{s}' is over the 1 GiB limit of a generated body"));
    }
    Ok(n)
}

/// An origin's response size, as `/bytes/SIZE` takes it: at most the origin's 1 GiB.
fn parse_response_size(s: &str) -> Result<String, String> {
    let n = barrage_metrics::units::parse_size(s).map_err(|e| e.to_string())?;
    if n > barrage_server::MAX_BODY {
        return Err(format!("'{s}' is over the 1 GiB limit of a response"));
    }
    Ok(s.trim().to_string())
}

/// Engine or serving threads: 0 (one per CPU) to [`MAX_THREADS`].
fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= MAX_THREADS as usize => Ok(n),
        _ => Err(format!("invalid thread count '{s}': expected 0 (one per CPU) to {MAX_THREADS}")),
    }
}

fn parse_positive_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!("invalid fraction '{s}': expected a number above 0 and at most 1, e.g. 0.01")),
    }
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_string(), value.to_string())),
        _ => Err(format!("invalid --var '{s}': expected NAME=VALUE, e.g. host=127.0.0.1:8080")),
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
    #[arg(long, default_value_t = 32, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_WORKERS as i64))]
    pub concurrency: u32,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every flag's help is a sentence: a doc comment that lost its first line in a move
    /// reads "(repeatable)" or "the duration (100:2000), …" in `--help`.
    #[test]
    fn every_help_starts_a_sentence() {
        fn check(cmd: &clap::Command, path: &str, bad: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let Some(help) = arg.get_help().map(ToString::to_string) else { continue };
                if help.chars().next().is_some_and(|c| c.is_lowercase() || c == '(') {
                    bad.push(format!("{path} --{}: {help}", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                check(sub, &format!("{path} {}", sub.get_name()), bad);
            }
        }
        let mut bad = Vec::new();
        check(&super::Cli::command(), "barrage", &mut bad);
        assert!(bad.is_empty(), "help that does not start a sentence:\n{}", bad.join("\n"));
    }
}
