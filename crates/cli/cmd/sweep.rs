//! `barrage sweep`: one run per load level (rates or worker counts), one row per level.
//! The classic "latency and errors vs number of clients" and "report per rate" tables.

use super::run::{measure, Execution};
use crate::args::units::{Levels, RateSpec};
use crate::args::{Format, RunArgs};
use crate::Outcome;
use anyhow::bail;
use barrage_metrics::summary::RunSummary;
use barrage_metrics::units::fmt_us;
use barrage_report::{Align, Cell, Sheet, Slo, SloResult, Table};
use std::time::Duration;

/// Length of a level when neither --step nor --duration is given.
const DEFAULT_STEP: Duration = Duration::from_secs(10);

/// One load level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Level {
    /// Open loop at this rate.
    Rate(f64),
    /// Closed loop with this many workers.
    Workers(u32),
}

impl Level {
    /// "100/s" or "32 workers".
    pub fn label(self) -> String {
        match self {
            Level::Rate(r) => format!("{r}/s"),
            Level::Workers(n) => format!("{n} workers"),
        }
    }

    fn offered(self) -> f64 {
        match self {
            Level::Rate(r) => r,
            Level::Workers(n) => f64::from(n),
        }
    }
}

/// A level and what it gave.
pub struct LevelResult {
    /// The level.
    pub level: Level,
    /// The run at that level.
    pub summary: RunSummary,
    /// Its objectives.
    pub slos: Vec<SloResult>,
}

impl LevelResult {
    /// Whether every objective was met (true without objectives).
    pub fn passed(&self) -> bool {
        self.slos.iter().all(|r| r.pass)
    }
}

/// Runs every level and prints the table.
pub fn sweep(args: RunArgs) -> anyhow::Result<Outcome> {
    refuse_per_run_flags(&args, "sweep")?;
    let levels = levels(&args)?;
    let step = args.step.map(|s| s.0).or(args.duration.map(|d| d.0)).unwrap_or(DEFAULT_STEP);
    if let Some(dir) = &args.output {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("-o {}: {e}", dir.display()))?;
    }
    let mut results = Vec::new();
    for (i, level) in levels.iter().enumerate() {
        let r = run_level(&args, *level, step, i)?;
        if super::run::interrupted() {
            eprintln!("interrupted: the table has the {} level(s) that ran in full", results.len());
            break;
        }
        eprintln!("level {}/{}: {}", i + 1, levels.len(), progress(&r));
        results.push(r);
    }
    let sheet = sweep_sheet(&results);
    match args.format {
        Format::Text => print!("{}", sweep_text(&results)),
        Format::Csv => print!("{}", barrage_report::to_csv(&sheet)),
        Format::Json => println!("{}", sweep_json(&results)),
        Format::Html => print!("{}", curve_page("Sweep", &sheet, "offered", &args, None, None)),
        Format::HdrLog => bail!("--format hdr-log is for `barrage report`"),
    }
    if let Some(path) = &args.html {
        let page = curve_page("Sweep", &sheet, "offered", &args, None, None);
        std::fs::write(path, page).map_err(|e| anyhow::anyhow!("--html {}: {e}", path.display()))?;
    }
    super::export::export(&[sheet], args.xlsx.as_deref(), args.csv_dir.as_deref())?;
    report_slos(&args, &results)
}

/// The HTML page of a sweep or a capacity search: the curves against offered load, with the
/// latency objectives, the knee and the capacity drawn in.
pub fn curve_page(
    title: &str,
    sheet: &Sheet,
    x: &str,
    args: &RunArgs,
    knee: Option<f64>,
    capacity: Option<f64>,
) -> String {
    let slo_ms: Vec<(String, f64)> = args.slo.iter().filter_map(Slo::latency_bound_ms).collect();
    barrage_report::html(&barrage_report::Page::Curve { title, sheet, x, slo_ms: &slo_ms, knee, capacity })
}

/// Refuses `run` flags that have no meaning per level (rather than dropping them quietly).
pub fn refuse_per_run_flags(a: &RunArgs, command: &str) -> anyhow::Result<()> {
    let given = [
        ("--at", !a.at.is_empty()),
        ("--tui", a.tui),
        ("--metrics-addr", a.metrics_addr.is_some()),
        ("--log", a.log.is_some()),
        ("--hdr-log", a.hdr_log.is_some()),
        ("--phases", !a.phases.is_empty()),
        ("-n/--requests", a.requests.is_some()),
    ];
    match given.iter().find(|(_, on)| *on) {
        Some((flag, _)) => bail!("{flag} is for `barrage run`; `barrage {command}` runs one timed run per level"),
        None => Ok(()),
    }
}

/// The levels of `--rate 10,50,100` or `-c 8..96/8`.
pub fn levels(a: &RunArgs) -> anyhow::Result<Vec<Level>> {
    match (&a.rate, &a.concurrency) {
        (Some(RateSpec::Steps(rates)), _) => Ok(rates.iter().map(|r| Level::Rate(*r)).collect()),
        (Some(RateSpec::Constant(r)), _) => Ok(vec![Level::Rate(*r)]),
        (Some(RateSpec::Ramp(..)), _) => bail!("a sweep takes levels, not a ramp: --rate 10,50,100 or -c 8..96/8"),
        (None, Some(Levels(n))) => Ok(n.iter().map(|n| Level::Workers(*n)).collect()),
        (None, None) => bail!("a sweep needs levels: --rate 10,50,100 or -c 8..96/8"),
    }
}

/// One run at `level` for `step`, its file kept in `-o DIR` when given.
pub fn run_level(args: &RunArgs, level: Level, step: Duration, index: usize) -> anyhow::Result<LevelResult> {
    let mut a = args.clone();
    match level {
        Level::Rate(r) => a.rate = Some(RateSpec::Constant(r)),
        Level::Workers(n) => a.concurrency = Some(Levels(vec![n])),
    }
    a.step = None;
    a.duration = Some(crate::args::units::PositiveDur(step));
    a.requests = None;
    let plan = super::run::plan(&a)?;
    let output = args.output.as_ref().map(|dir| dir.join(format!("level-{:02}-{}.brg", index + 1, file_label(level))));
    let run = Execution {
        settings_json: serde_json::json!({ "level": level.label(), "urls": args.urls }).to_string(),
        output,
        watch: super::watch::watches(&args.monitor, args.testbed.as_deref(), &plan)?,
        ..Default::default()
    };
    let summary = measure(plan, run)?;
    let slos = args.slo.iter().map(|s: &Slo| s.check(&summary)).collect();
    Ok(LevelResult { level, summary, slos })
}

fn file_label(level: Level) -> String {
    match level {
        Level::Rate(r) => format!("{r}rps"),
        Level::Workers(n) => format!("{n}workers"),
    }
}

fn progress(r: &LevelResult) -> String {
    let s = &r.summary;
    format!(
        "{} → {:.1}/s, success {:.2}%, p99 {}{}",
        r.level.label(),
        s.throughput_per_sec,
        s.success_ratio * 100.0,
        fmt_us(s.latency.corrected.p99_us as f64),
        if r.slos.is_empty() {
            ""
        } else if r.passed() {
            ", SLOs met"
        } else {
            ", SLOs missed"
        }
    )
}

/// Watched processes' mean CPU, in the order the first level lists them.
fn cpu_names(results: &[LevelResult]) -> Vec<String> {
    results.first().map_or_else(Vec::new, |r| r.summary.processes.iter().map(|p| p.name.clone()).collect())
}

fn cpu(s: &RunSummary, name: &str) -> Option<f64> {
    s.processes.iter().find(|p| p.name == name).map(|p| p.cpu_mean_percent)
}

/// The table: one row per level.
pub fn sweep_sheet(results: &[LevelResult]) -> Sheet {
    let names = cpu_names(results);
    let mut header: Vec<String> =
        ["level", "offered", "throughput_per_sec", "success_percent", "p50_ms", "p90_ms", "p99_ms", "errors"]
            .map(String::from)
            .to_vec();
    header.extend(names.iter().map(|n| format!("{n}_cpu_percent")));
    let any_slo = results.iter().any(|r| !r.slos.is_empty());
    if any_slo {
        header.push("slos".into());
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut sheet = Sheet::new("sweep", &header);
    for r in results {
        let s = &r.summary;
        let l = &s.latency.corrected;
        let mut row = vec![
            Cell::from(r.level.label()),
            Cell::from(r.level.offered()),
            Cell::from(s.throughput_per_sec),
            Cell::from(s.success_ratio * 100.0),
            Cell::from(l.p50_us as f64 / 1e3),
            Cell::from(l.p90_us as f64 / 1e3),
            Cell::from(l.p99_us as f64 / 1e3),
            Cell::from(s.requests.total - s.requests.ok),
        ];
        row.extend(names.iter().map(|n| Cell::from(cpu(s, n))));
        if any_slo {
            row.push(Cell::from(if r.passed() { "pass" } else { "fail" }));
        }
        sheet.push(row);
    }
    sheet
}

fn sweep_text(results: &[LevelResult]) -> String {
    let names = cpu_names(results);
    let any_slo = results.iter().any(|r| !r.slos.is_empty());
    let mut align = vec![Align::Left];
    align.extend(std::iter::repeat_n(Align::Right, 6 + names.len()));
    if any_slo {
        align.push(Align::Left);
    }
    let mut t = Table::new(&align);
    let mut head: Vec<String> =
        ["level", "throughput", "success", "p50", "p90", "p99", "errors"].map(String::from).to_vec();
    head.extend(names.iter().map(|n| format!("{n} cpu")));
    if any_slo {
        head.push("SLOs".into());
    }
    t.row(head);
    for r in results {
        let s = &r.summary;
        let l = &s.latency.corrected;
        let mut row = vec![
            r.level.label(),
            format!("{:.1}/s", s.throughput_per_sec),
            format!("{:.2}%", s.success_ratio * 100.0),
            fmt_us(l.p50_us as f64),
            fmt_us(l.p90_us as f64),
            fmt_us(l.p99_us as f64),
            (s.requests.total - s.requests.ok).to_string(),
        ];
        row.extend(names.iter().map(|n| cpu(s, n).map_or("-".into(), |c| format!("{c:.0}%"))));
        if any_slo {
            row.push(if r.passed() { "pass".into() } else { "FAIL".into() });
        }
        t.row(row);
    }
    let mut out = t.to_text();
    out.push_str("(latency is corrected; cpu is the mean % of one core)\n");
    out
}

fn sweep_json(results: &[LevelResult]) -> String {
    let rows: Vec<serde_json::Value> = results
        .iter()
        .map(|r| {
            let s = &r.summary;
            let l = &s.latency.corrected;
            serde_json::json!({
                "level": r.level.label(),
                "offered": r.level.offered(),
                "open_loop": matches!(r.level, Level::Rate(_)),
                "throughput_per_sec": s.throughput_per_sec,
                "success_ratio": s.success_ratio,
                "p50_us": l.p50_us, "p90_us": l.p90_us, "p99_us": l.p99_us,
                "errors": s.requests.total - s.requests.ok,
                "cpu_percent": s.processes.iter().map(|p| (p.name.clone(), p.cpu_mean_percent)).collect::<std::collections::BTreeMap<_, _>>(),
                "slos": r.slos.iter().map(|x| serde_json::json!({"slo": x.slo, "actual": x.actual, "pass": x.pass})).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({ "levels": rows }).to_string()
}

/// SLO lines per level, the highest level meeting all, --junit; exit 1 when any failed.
fn report_slos(args: &RunArgs, results: &[LevelResult]) -> anyhow::Result<Outcome> {
    if args.slo.is_empty() {
        return Ok(Outcome::Ok);
    }
    let mut lines = String::new();
    for r in results {
        for line in barrage_report::slo_lines(&r.slos).lines() {
            lines.push_str(&format!("{}: {line}\n", r.level.label()));
        }
    }
    let best = results.iter().rev().find(|r| r.passed()).map(|r| r.level.label());
    lines.push_str(&format!("highest level meeting every SLO: {}\n", best.as_deref().unwrap_or("none")));
    if args.format == Format::Text {
        print!("\n{lines}");
    } else {
        eprint!("{lines}");
    }
    if let Some(path) = &args.junit {
        let all: Vec<SloResult> = results
            .iter()
            .flat_map(|r| {
                r.slos.iter().map(|x| SloResult { slo: format!("{} at {}", x.slo, r.level.label()), ..x.clone() })
            })
            .collect();
        let secs: f64 = results.iter().map(|r| r.summary.duration.total_s).sum();
        std::fs::write(path, barrage_report::junit("barrage sweep", &all, secs))
            .map_err(|e| anyhow::anyhow!("--junit {}: {e}", path.display()))?;
    }
    Ok(if results.iter().all(LevelResult::passed) { Outcome::Ok } else { Outcome::Failed })
}
