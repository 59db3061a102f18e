//! [`Report`]: the typed result of every mode, and its one rendering per format. The
//! binary emits any report the same way (`--format`, `--html`, `--xlsx`, `--csv-dir`) and
//! checks its objectives the same way (SLO lines, JUnit).
//!
//! JSON outputs of the study modes are described by `schema/study.schema.json`; a run's by
//! `schema/summary.schema.json`.

use crate::compare::{
    case_comparisons_sheet, case_comparisons_text, comparison_sheet, comparison_text, CaseComparison, Comparison,
};
use crate::export::Sheet;
use crate::html::{html_with, HtmlOptions, Page};
use crate::slo::SloResult;
use crate::study::StudyTable;
use barrage_metrics::RunSummary;
use serde_json::{json, Value};

/// Version of the study JSON outputs.
pub const STUDY_JSON_VERSION: u32 = 1;

/// A capacity search's findings.
#[derive(Clone, Debug, Default)]
pub struct CapacityReport {
    /// A row per probe, in the order tried.
    pub table: StudyTable,
    /// The highest rate meeting every objective.
    pub capacity: Option<f64>,
    /// The lowest rate missing one.
    pub failed_at: Option<f64>,
    /// The interval the capacity lies in, from its probes: from the highest rate judged to
    /// meet every objective (and held) to the lowest judged to miss one (`None` when none
    /// did).
    pub interval: (f64, Option<f64>),
    /// The capacity held once more for a step: met (`Some(true)`), no rate held
    /// (`Some(false)`), or not held (`None`: nothing found, no time left, or interrupted).
    pub verified: Option<bool>,
    /// Why the search stopped.
    pub stopped: String,
    /// The lowest rate whose p99 more than doubled from the lowest rate's.
    pub knee: Option<f64>,
    /// barrage's own limits next to the capacity: it is then a lower bound.
    pub generator_limited: Vec<String>,
    /// Latency objectives, (label, ms), drawn on the curve.
    pub slo_ms: Vec<(String, f64)>,
}

/// An experiment's matrix and comparisons.
#[derive(Clone, Debug, Default)]
pub struct ExperimentReport {
    /// Its name.
    pub name: String,
    /// Runs per case.
    pub repeats: u32,
    /// The factors compared along.
    pub compare: Vec<String>,
    /// A row per case (and phase).
    pub table: StudyTable,
    /// The pairs of cases compared.
    pub comparisons: Vec<CaseComparison>,
}

impl ExperimentReport {
    /// Its cases: the matrix has a row per case and phase, so rows are not cases.
    pub fn cases(&self) -> usize {
        let ids: std::collections::BTreeSet<Option<&String>> =
            self.table.rows.iter().map(|r| r.labels.first()).collect();
        ids.len()
    }
}

/// What a mode gives, to be rendered.
#[derive(Clone, Copy, Debug)]
pub enum Report<'a> {
    /// One run, or several merged.
    Run(&'a RunSummary),
    /// A row per level (and phase), or per phase of `run --phases`.
    Sweep {
        /// The table.
        table: &'a StudyTable,
        /// Latency objectives drawn on the curve.
        slo_ms: &'a [(String, f64)],
    },
    /// A capacity search.
    Capacity(&'a CapacityReport),
    /// An experiment.
    Experiment(&'a ExperimentReport),
    /// `testbed bench`: a row per front.
    Bench(&'a StudyTable),
    /// Runs compared against the first.
    Comparison {
        /// The runs, labelled; the first is the baseline.
        runs: &'a [(String, RunSummary)],
        /// The comparison.
        comparison: &'a Comparison,
    },
}

impl Report<'_> {
    /// The report for people.
    pub fn text(&self, color: bool) -> String {
        match self {
            Report::Run(s) => crate::text(s, color),
            Report::Sweep { table, .. } | Report::Bench(table) => table.to_text(),
            Report::Capacity(c) => capacity_text(c),
            Report::Experiment(e) => {
                let mut out = format!("Experiment {}: {} case(s) × {} repeat(s)\n", e.name, e.cases(), e.repeats);
                out.push_str(&e.table.to_text());
                out.push_str(&case_comparisons_text(&e.compare, &e.comparisons));
                out
            }
            Report::Comparison { runs, comparison } => comparison_text(comparison, runs),
        }
    }

    /// The report as JSON (one line for study modes; a run's summary pretty-printed).
    pub fn json(&self) -> String {
        let study = |kind: &str, table: &StudyTable, rows: &str, mut extra: Value| {
            let o = extra.as_object_mut().expect("an object");
            o.insert("version".into(), json!(STUDY_JSON_VERSION));
            o.insert("kind".into(), json!(kind));
            o.insert("partial".into(), json!(table.partial));
            o.insert("planned".into(), json!(table.planned.max(table.rows.len())));
            o.insert(rows.into(), Value::Array(table.json_rows()));
            extra.to_string()
        };
        match self {
            Report::Run(s) => crate::json(s),
            Report::Sweep { table, .. } => study("sweep", table, "levels", json!({})),
            Report::Bench(table) => study("bench", table, "fronts", json!({})),
            Report::Capacity(c) => study(
                "capacity",
                &c.table,
                "probes",
                json!({
                    "capacity_per_sec": c.capacity,
                    "failed_at_per_sec": c.failed_at,
                    "interval_per_sec": { "low": c.interval.0, "high": c.interval.1 },
                    "verified": c.verified,
                    "stopped": c.stopped,
                    "knee_per_sec": c.knee,
                    "generator_limited": c.generator_limited,
                }),
            ),
            Report::Experiment(e) => study(
                "experiment",
                &e.table,
                "matrix",
                json!({ "name": e.name, "repeats": e.repeats, "comparisons": e.comparisons.iter().map(case_comparison_json).collect::<Vec<_>>() }),
            ),
            Report::Comparison { comparison, .. } => comparison_json(comparison).to_string(),
        }
    }

    /// Its tables, for `--xlsx` (a sheet each) and `--csv-dir` (a file each).
    pub fn sheets(&self) -> Vec<Sheet> {
        match self {
            Report::Run(s) => {
                let mut sheets = vec![crate::summary_sheet(s), crate::intervals_sheet(s)];
                // A run's breakdowns, when it has them: by name, a scenario's flows, and a
                // key-value store's server error replies.
                if !s.by_name.is_empty() {
                    sheets.push(crate::csv::names_sheet(s));
                }
                if !s.flows.is_empty() {
                    sheets.push(crate::csv::flows_sheet(s));
                }
                if !s.replies.is_empty() {
                    sheets.push(crate::csv::replies_sheet(s));
                }
                if !s.shards.is_empty() {
                    sheets.push(crate::csv::shards_sheet(s));
                }
                if s.steps.len() > 1 {
                    sheets.push(crate::csv::steps_sheet(s));
                }
                sheets
            }
            Report::Sweep { table, .. } | Report::Bench(table) => vec![table.sheet()],
            Report::Capacity(c) => vec![c.table.sheet()],
            Report::Experiment(e) => vec![e.table.sheet(), case_comparisons_sheet(&e.comparisons)],
            Report::Comparison { comparison, .. } => vec![comparison_sheet(comparison)],
        }
    }

    /// CSV on standard output: a run's intervals, or the mode's first table.
    pub fn csv(&self) -> String {
        match self {
            Report::Run(s) => crate::csv(s),
            _ => crate::to_csv(&self.sheets()[0]),
        }
    }

    /// The HTML page, rendered as `options` say (a run's trace links).
    pub fn html(&self, options: &HtmlOptions) -> String {
        let html = |page: &Page| html_with(page, options);
        match self {
            Report::Run(s) => html(&Page::Run(s)),
            Report::Sweep { table, slo_ms } => {
                let sheet = table.sheet();
                if table.offered_column.is_none() {
                    return html(&Page::Table { title: "Phases", sheet: &sheet });
                }
                html(&Page::Curve { title: "Sweep", sheet: &sheet, x: "offered", slo_ms, knee: None, capacity: None })
            }
            Report::Capacity(c) => {
                let sheet = c.table.sheet();
                html(&Page::Curve {
                    title: "Capacity search",
                    sheet: &sheet,
                    x: "rate_per_sec",
                    slo_ms: &c.slo_ms,
                    knee: c.knee,
                    capacity: c.capacity,
                })
            }
            Report::Experiment(e) => {
                let (matrix, comparisons) = (e.table.sheet(), case_comparisons_sheet(&e.comparisons));
                html(&Page::Experiment { title: &e.name, matrix: &matrix, comparisons: &comparisons })
            }
            Report::Bench(table) => html(&Page::Table { title: "Testbed bench", sheet: &table.sheet() }),
            Report::Comparison { runs, comparison } => {
                html(&Page::Compare { runs, table: &comparison_sheet(comparison) })
            }
        }
    }

    /// Every objective checked, labelled with its row (`p99<10ms at 16 workers`).
    pub fn slo_results(&self) -> Vec<SloResult> {
        let rows = |t: &StudyTable| -> Vec<SloResult> {
            t.rows
                .iter()
                .flat_map(|r| {
                    let at = r.labels.join(" ");
                    r.slos.iter().map(move |x| SloResult { slo: format!("{} at {at}", x.slo), ..x.clone() })
                })
                .collect()
        };
        match self {
            Report::Run(_) | Report::Comparison { .. } => Vec::new(),
            Report::Sweep { table, .. } | Report::Bench(table) => rows(table),
            Report::Capacity(c) => rows(&c.table),
            // Experiment objectives already name their case and repeat.
            Report::Experiment(e) => e.table.rows.iter().flat_map(|r| r.slos.iter().cloned()).collect(),
        }
    }

    /// Seconds the report's runs took, one after another (JUnit's `time`).
    pub fn duration_s(&self) -> f64 {
        match (self, self.table()) {
            (Report::Run(s), _) => s.duration.total_s,
            (_, Some(t)) => t.rows.iter().flat_map(|r| &r.runs).map(|s| s.duration.total_s).sum(),
            _ => 0.0,
        }
    }

    /// The runs or rows built on failure ([`crate::study::failure_of`], the one definition):
    /// a run's reason alone; a table's and a comparison's each as `label: reason`.
    pub fn failures(&self) -> Vec<String> {
        match self {
            Report::Run(s) => crate::study::run_not_a_result(s).into_iter().collect(),
            // Built on failure, or on another workload than it asked for: as a run's own
            // report says (exit 3 either way).
            Report::Comparison { runs, .. } => runs
                .iter()
                .filter_map(|(label, s)| crate::study::run_not_a_result(s).map(|why| format!("{label}: {why}")))
                .collect(),
            _ => self.table().map(StudyTable::failures).unwrap_or_default(),
        }
    }

    /// Whether any of its runs was written with `--no-redact`: its files may hold secrets,
    /// so they are written for their owner alone.
    pub fn unredacted(&self) -> bool {
        match self {
            Report::Run(s) => s.unredacted,
            Report::Comparison { runs, .. } => runs.iter().any(|(_, s)| s.unredacted),
            _ => self
                .table()
                .is_some_and(|t| t.rows.iter().flat_map(|r| r.runs.iter().chain(&r.background)).any(|s| s.unredacted)),
        }
    }

    /// The study's table, for the modes that have one.
    pub fn table(&self) -> Option<&StudyTable> {
        match self {
            Report::Sweep { table, .. } | Report::Bench(table) => Some(table),
            Report::Capacity(c) => Some(&c.table),
            Report::Experiment(e) => Some(&e.table),
            Report::Run(_) | Report::Comparison { .. } => None,
        }
    }
}

fn capacity_text(c: &CapacityReport) -> String {
    let mut out = String::new();
    match c.capacity {
        Some(r) => out.push_str(&format!("Capacity: {r:.0} req/s delivered and meets every objective")),
        None => out.push_str("Capacity: none of the probed rates met every objective"),
    }
    match c.failed_at {
        Some(f) => out.push_str(&format!("; {f:.0} req/s misses one\n")),
        None => out.push('\n'),
    }
    let held = match c.verified {
        Some(true) => ", held for a step",
        _ => ", not held",
    };
    match c.interval {
        (low, Some(high)) if c.capacity.is_some() => out.push_str(&format!(
            "Interval: [{low:.0}, {high:.0}) req/s: the highest rate met{held}, and the lowest missed\n"
        )),
        (_, None) if c.capacity.is_some() => {
            out.push_str(&format!("Interval: at least {:.0} req/s{held}: no rate missed\n", c.interval.0))
        }
        _ => {}
    }
    out.push_str(&format!("Stopped: {}\n", c.stopped));
    match c.knee {
        Some(k) => out.push_str(&format!("Knee: p99 more than doubled from the lowest rate at {k:.0} req/s\n")),
        None => out.push_str("Knee: p99 stayed within twice its lowest-rate value over the probed rates\n"),
    }
    if !c.generator_limited.is_empty() {
        out.push_str("barrage itself was the limit near the capacity, so it is a lower bound:\n");
        for w in &c.generator_limited {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out.push('\n');
    out.push_str(&c.table.to_text());
    out
}

/// Two cases compared: which, along what, and the comparison as `compare` gives it.
fn case_comparison_json(c: &CaseComparison) -> Value {
    json!({
        "factor": c.factor, "from": c.from, "to": c.to, "other_levels": c.others,
        "from_case": c.from_case, "to_case": c.to_case, "phase": c.phase,
        "comparison": comparison_json(&c.comparison),
    })
}

/// A comparison as JSON: per metric the baseline and each run's value, change, p-value.
pub fn comparison_json(c: &Comparison) -> Value {
    let rows: Vec<Value> = c
        .rows
        .iter()
        .map(|r| {
            let changes: Vec<Value> = r
                .changes
                .iter()
                .zip(&c.labels[1..])
                .map(|(ch, label)| {
                    json!({
                        "run": label, "value": ch.value, "change_percent": ch.percent,
                        "p_value": ch.p_value, "test": ch.test(), "significant": ch.significant,
                    })
                })
                .collect();
            json!({ "metric": r.metric.name(), "baseline": r.baseline, "runs": changes })
        })
        .collect();
    let resources: Vec<Value> = c
        .resources
        .iter()
        .map(|r| json!({ "process": r.process, "what": if r.memory { "peak_rss_kib" } else { "cpu_mean_percent" }, "values": r.values }))
        .collect();
    let why_by_run = |reasons: &[Option<String>]| -> serde_json::Map<String, Value> {
        c.labels[1..]
            .iter()
            .zip(reasons)
            .filter_map(|(label, why)| Some((label.clone(), json!(why.as_ref()?))))
            .collect()
    };
    json!({
        "baseline": c.labels[0], "runs": c.labels, "noise": c.noise, "metrics": rows, "resources": resources,
        "not_the_same_workload": why_by_run(&c.workloads), "built_on_failure": why_by_run(&c.failures),
    })
}
