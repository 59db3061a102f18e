//! Command-line arguments (clap derive; doc comments are the help text): the subcommands
//! here, their flags in one file per group of subcommands, the parsers they share below.

mod collect;
pub mod completions;
mod flags;
mod history;
mod otel;
mod run;
mod serve;
mod study;
mod testbed;
mod trace;

pub use collect::*;
pub use history::*;
pub use otel::*;
pub use run::*;
pub use serve::*;
pub use study::*;
pub use testbed::*;
pub use trace::*;

use barrage_plan::values::{
    parse_fraction, parse_header_name, parse_memory, parse_positive_fraction, parse_size, parse_threads, parse_var,
};
use clap::{Parser, Subcommand, ValueEnum};

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
    /// Collect the shards of a split run as they run (`run --report-to`): the fleet's live
    /// view, its start (`run --rendezvous`), and the merged report when every shard ended.
    #[command(after_help = COLLECT_EXAMPLES)]
    Collect(Box<CollectArgs>),
    /// The runs kept in the run history: series, trends, change points, a CI gate.
    #[command(after_help = HISTORY_EXAMPLES)]
    History(HistoryCommandArgs),
    #[command(flatten)]
    Generated(completions::Generated),
}

const SWEEP_EXAMPLES: &str = "Examples:
  barrage sweep URL --rate 10,50,100,500,700 --step 10s          a report per rate
  barrage sweep URL -c 8..96/8 --step 10s --slo 'p99<100ms'      latency and errors vs clients
  barrage sweep URL -c 1,2,4,8 -o sweep-dir --xlsx sweep.xlsx    keep each level's results
  barrage sweep URL -c 4,8,16 --step 5s --phases fill,measure      hit ratio and latency per level and phase
All flags of `run` apply to every level (--log, --hdr-log and -o get the level in their names); -o names a directory.";

const COLLECT_EXAMPLES: &str = "Examples:
  barrage collect --shards 3 --listen 0.0.0.0:7340 --slo 'p99<100ms'        on the controller
  barrage run URL --rate 30000 -d 5m --shard 0/3 --report-to http://ctl:7340/ --rendezvous   on each load machine
The report at the end is `barrage report DIR/shard-*.brg`'s; a lost shard's share is shown as never sent.";

const CAPACITY_EXAMPLES: &str = "Examples:
  barrage capacity URL --slo 'p99<100ms' --slo 'success>=99.9%'
  barrage capacity URL --slo 'p99<50ms' --step 5s --max-rate 50000 --precision 2%
Each probe is a run of --step (default 10s) at one rate; all flags of `run` apply.";

const EXPERIMENT_EXAMPLES: &str = "Examples:
  barrage experiment study.toml --dry-run        list the cases (TC0, TC1, …) and their flags
  barrage experiment study.toml -o study.results run them; a results file per case and repeat
  barrage experiment study.toml -o study.results --resume    finish an interrupted one
The file format is in docs/studies.md (Experiments).";

const COMPARE_EXAMPLES: &str = "Examples:
  barrage compare before.brg after.brg
  barrage compare before.brg after.brg --fail-if 'p99>+10%' --fail-if 'throughput<-5%'
  barrage compare http.brg https.brg h2.brg --xlsx comparison.xlsx";

const HISTORY_EXAMPLES: &str = "Examples:
  barrage history list                                  the last runs kept, newest first
  barrage history list --series                         the series (runs sharing their labels)
  barrage history show 42                               run 42: labels, machine, figures
  barrage history trend p99 --where target=https://shop.example/ --last 60   with change points
  barrage history check --junit history.xml            exit 1 when the newest run regressed (CI)
  barrage history regressions --since 7d
  barrage history baseline set release-1.4 42
  barrage history import nightly/*.brg --label branch=main
Every run, sweep level, experiment case and capacity result is kept unless --no-history.";

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

/// An origin's response size, as `/bytes/SIZE` takes it: at most the origin's 1 GiB.
fn parse_response_size(s: &str) -> Result<String, String> {
    let n = barrage_metrics::units::parse_size(s).map_err(|e| e.to_string())?;
    if n > barrage_server::MAX_BODY {
        return Err(format!("'{s}' is over the 1 GiB limit of a response"));
    }
    Ok(s.trim().to_string())
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
