//! The flags of `barrage testbed` and its subcommands: real servers on loopback, their
//! shapes and their bench.

use super::{parse_memory, parse_response_size, EmitArgs};
use barrage_plan::limits::MAX_WORKERS;
use barrage_plan::units::{PositiveDur, Rate};
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

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
