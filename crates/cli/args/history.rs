//! The run history's flags: where runs are kept (on every mode that runs load), and
//! `barrage history`'s commands.

use super::Format;
use barrage_plan::units::PositiveDur;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Where a run is kept (heading: History).
#[derive(Args, Debug, Clone, Default)]
pub struct HistoryArgs {
    /// Keep the run in this history file [default: $BARRAGE_HISTORY, else
    /// $XDG_DATA_HOME/barrage/history.db, else ~/.local/share/barrage/history.db].
    #[arg(long, value_name = "FILE", help_heading = "History")]
    pub history: Option<PathBuf>,
    /// Keep no record of the run in the history.
    #[arg(long, conflicts_with = "history", help_heading = "History")]
    pub no_history: bool,
    /// A label of the run's series: K=V sets one, K= removes a default one (machine=), K
    /// alone adds the environment's fact K (kernel, cpu, cpus, governor, version, commit).
    #[arg(long = "label", value_name = "K=V", value_parser = parse_label, help_heading = "History")]
    pub labels: Vec<(String, Option<String>)>,
    /// Before the study, a 2 s run against a fixed reference, kept as the machine's control
    /// series: a change it shows too is the machine's, not the system's. `self`: barrage's own
    /// origin in the process (the default with a testbed); a reference's URL (a static
    /// nginx); `none`.
    #[arg(long, value_name = "self|URL|none", help_heading = "History")]
    pub control: Option<barrage_study::control::Control>,
}

/// `K=V`, `K=` or `K`: a label's name is letters, digits, `_`, `-`, `.` or `:`, at most 64.
pub fn parse_label(s: &str) -> Result<(String, Option<String>), String> {
    let (k, v) = match s.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (s, None),
    };
    let ok = |c: char| c.is_ascii_alphanumeric() || "_-.:".contains(c);
    if k.is_empty() || k.len() > 64 || !k.chars().all(ok) {
        return Err(format!("'{s}': a label is K=V, K= or K, K of letters, digits, _ - . : (at most 64)"));
    }
    if v.as_ref().is_some_and(|v| v.len() > 200) {
        return Err(format!("label '{k}': a value is at most 200 bytes"));
    }
    Ok((k.to_string(), v))
}

/// `barrage history`: the runs kept, their series and what changed in them.
#[derive(Args, Debug)]
pub struct HistoryCommandArgs {
    #[command(subcommand)]
    pub command: HistoryCommand,
    /// The history file [default: as runs keep them].
    #[arg(long, value_name = "FILE", global = true)]
    pub history: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text, global = true)]
    pub format: Format,
}

/// Which series: runs whose labels hold every K=V (K alone: the label is there).
#[derive(Args, Debug, Clone, Default)]
pub struct WhereArgs {
    /// Only series whose labels hold K=V (K alone: that have label K); repeatable.
    #[arg(long = "where", value_name = "K=V", value_parser = parse_label)]
    pub filter: Vec<(String, Option<String>)>,
}

#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// The runs kept, newest first (--series: the series instead).
    List {
        #[command(flatten)]
        filter: WhereArgs,
        /// At most this many runs.
        #[arg(long, value_name = "N", default_value = "20")]
        last: usize,
        /// List the series (runs sharing their labels) rather than runs.
        #[arg(long)]
        series: bool,
    },
    /// One run: its labels, machine and figures; several: their latency pooled exactly.
    Show {
        /// Run numbers (`history list`), or baseline names.
        #[arg(required = true, value_name = "RUN")]
        runs: Vec<String>,
    },
    /// A figure over the runs of each series, with its change points.
    Trend {
        /// The figure: throughput, success, error_ratio, p50, p90, p99, p999, hit_ratio,
        /// capacity, cpu:NAME, memory:NAME, ...
        #[arg(value_name = "FIGURE")]
        figure: String,
        #[command(flatten)]
        filter: WhereArgs,
        /// The last N runs of each series.
        #[arg(long, value_name = "N", default_value = "100")]
        last: usize,
        /// Also write the trend as an HTML page with a chart per series.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// A change of at most this size is not kept as a change point, however small its
        /// p-value (Otava's minimum magnitude): a machine's drift of a few percent is no
        /// regression.
        #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = barrage_plan::values::parse_percent)]
        noise: f64,
    },
    /// A run against another with `barrage compare`'s figures and significance test.
    Compare {
        /// The run (a number, or a baseline's name).
        #[arg(value_name = "RUN")]
        run: String,
        /// The run it is compared against: `previous` (the run before it in its series), a
        /// run number, or a baseline's name.
        #[arg(long, value_name = "previous|RUN|NAME", default_value = "previous")]
        against: String,
        /// Exit 1 when the change crosses this bound (repeatable), as `compare --fail-if`.
        #[arg(long = "fail-if", value_name = "BOUND")]
        fail_if: Vec<barrage_report::compare::FailIf>,
        /// Smallest change called significant, however small the p-value.
        #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = barrage_plan::values::parse_percent)]
        noise: f64,
    },
    /// Every change for the worse found in the series' runs since a time.
    Regressions {
        #[command(flatten)]
        filter: WhereArgs,
        /// Only these figures (repeatable) [default: every figure the series' runs have].
        #[arg(long = "figure", value_name = "FIGURE")]
        figures: Vec<String>,
        /// Changes at runs newer than this (7d, 12h).
        #[arg(long, value_name = "AGE", default_value = "7d")]
        since: PositiveDur,
        /// A change of at most this size is not kept as a change point, however small its
        /// p-value (Otava's minimum magnitude): a machine's drift of a few percent is no
        /// regression.
        #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = barrage_plan::values::parse_percent)]
        noise: f64,
    },
    /// Judge the newest run of each series against its last stable runs: exit 1 when a
    /// figure is worse beyond their prediction interval (a CI gate).
    Check {
        #[command(flatten)]
        filter: WhereArgs,
        /// The figures judged [default: p99, throughput, error_ratio].
        #[arg(long = "figure", value_name = "FIGURE")]
        figures: Vec<String>,
        /// The prediction interval's confidence.
        #[arg(long, value_name = "FRACTION", default_value = "0.99")]
        confidence: f64,
        /// Also write the verdicts as a JUnit XML file.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// The smallest change the gate calls one: the stable stretch starts after the last
        /// change point larger than this, as `trend` finds them (a machine's busy spell of a
        /// few percent does not cut it short and widen the interval), and a run within this
        /// of the stretch's mean passes.
        #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = barrage_plan::values::parse_percent)]
        noise: f64,
    },
    /// Named runs (kept by gc): `baseline set NAME RUN`, `baseline list`.
    Baseline {
        #[command(subcommand)]
        command: BaselineCommand,
    },
    /// A note on the time line (a deploy, a config change), shown in trends.
    Annotate {
        /// What happened.
        #[arg(value_name = "TEXT")]
        text: String,
        /// When (Unix seconds or RFC 3339) [default: now].
        #[arg(long, value_name = "TIME", value_parser = |s: &str| s.parse::<barrage_plan::units::StartAt>())]
        at: Option<barrage_plan::units::StartAt>,
        /// About the one series these labels select [default: every series].
        #[command(flatten)]
        filter: WhereArgs,
    },
    /// Exit 1 when a series' newest run is older than AGE (a nightly job stopped).
    Stale {
        #[command(flatten)]
        filter: WhereArgs,
        /// The age beyond which a series is stale.
        #[arg(long, value_name = "AGE", default_value = "25h")]
        max_age: PositiveDur,
    },
    /// Remove all but the newest N runs of each series; baselines are kept.
    Gc {
        /// Runs kept per series.
        #[arg(long, value_name = "N")]
        keep_last: usize,
    },
    /// Add results files (`run -o`) to the history; a split run's shards become one run.
    Import {
        /// Results files of barrage (`run -o`), or of the tools people migrate from: k6's
        /// JSON summary, Vegeta's results (CSV or JSON lines), wrk2's output, HdrHistogram
        /// interval logs, JMeter's JTL (CSV), Locust's stats CSV.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The files' format: barrage, k6, vegeta, wrk2, hdr-log, jmeter or locust
        /// [default: told from each file's first bytes].
        #[arg(long, value_name = "FORMAT")]
        from: Option<String>,
        /// Of a tagged HdrHistogram log, the tag whose intervals are read [default: the
        /// untagged ones].
        #[arg(long, value_name = "TAG")]
        tag: Option<String>,
        /// A label of their series (as on `run`).
        #[arg(long = "label", value_name = "K=V", value_parser = parse_label)]
        labels: Vec<(String, Option<String>)>,
    },
}

#[derive(Subcommand, Debug)]
pub enum BaselineCommand {
    /// Name run RUN.
    Set {
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(value_name = "RUN")]
        run: i64,
    },
    /// The named runs.
    List,
}
