//! The flags of the studies and reports: `capacity`, `experiment`, `compare` and
//! `report`, apart from `run`'s own flags, which `capacity` takes beside its own.

use super::{EmitArgs, HistoryArgs, LiveArgs, RunArgs};
use barrage_plan::units::{PositiveDur, Rate};
use barrage_plan::values::{parse_percent, parse_positive_percent};
use clap::Args;
use std::path::PathBuf;

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
    #[command(flatten)]
    pub keep: HistoryArgs,
    #[command(flatten)]
    pub otel: super::OtelArgs,
}

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
    /// Find the request a trace id (32 hex digits, or a whole traceparent) of a run with
    /// --trace-context names: its run and file, its number, when it was due. Exit 1 when
    /// none of the files' runs has it.
    #[arg(long, value_name = "ID", value_parser = |s: &str| s.parse::<barrage_metrics::trace::TraceId>())]
    pub trace_id: Option<barrage_metrics::trace::TraceId>,
    /// With --trace-id: also print the rows of this request log (`run --log`) that have it.
    #[arg(long, value_name = "FILE", requires = "trace_id")]
    pub log: Option<PathBuf>,
    #[command(flatten)]
    pub links: super::TraceUrlArgs,
    #[command(flatten)]
    pub emit: EmitArgs,
}
