//! [`StudyTable`]: the one table of every mode that runs many plans (sweep levels, capacity
//! probes, experiment cases, `testbed bench` fronts, `run --phases`), rendered once to text,
//! a [`Sheet`] (CSV, xlsx, the HTML charts) and JSON.
//!
//! A row is one run, or an experiment case over its repeats (mean ± standard deviation).
//! Every table has the same headline [`Figure`]s, the cache's hit ratios when a cache
//! answered, the flow figures ([`Figure::FLOWS`]) when a run had a scenario's flows, the
//! phases when some were measured, the CPU and peak memory of every watched
//! process and of barrage, and a verdict that says when a row is built on failure or missed
//! an objective, so that no such row looks like a plain result.
//!
//! ```
//! use barrage_metrics::RunSummary;
//! use barrage_report::study::{StudyRow, StudyTable};
//!
//! let mut s = RunSummary::default();
//! s.requests.total = 100;
//! s.requests.ok = 100;
//! s.success_ratio = 1.0;
//! let mut t = StudyTable::new("sweep", &["level"]);
//! t.rows.push(StudyRow::new(vec!["100/s".into()], vec![s]));
//! assert!(t.to_text().contains("100/s"));
//! assert_eq!(t.sheet().header[0], "level");
//! ```

use crate::export::{Cell, Sheet};
use crate::figure::{Figure, Spread};
use crate::slo::SloResult;
use crate::text::{Align, Table};
use crate::workload::Hits;
use barrage_metrics::summary::RunSummary;
use barrage_metrics::units::{fmt_bytes, fmt_us};
use serde_json::{json, Map, Value};

/// The headline figures of every study table, in column order.
pub const HEADLINE: [Figure; 7] =
    [Figure::Throughput, Figure::Success, Figure::Mean, Figure::P50, Figure::P90, Figure::P99, Figure::Errors];

/// Phases a table shows (their means), when some row measured them.
pub const PHASES: [&str; 4] = ["dns", "connect", "tls", "wait"];

/// How a row on another workload than it asked for is named where it is not a result.
pub const WRONG_WORKLOAD: &str = "not the workload asked for";

/// The verdict of a row without a finished run in an interrupted study: the signal came
/// before it, or during its only run (whose file is kept as `.part`).
pub const NOT_RUN: &str = "no run finished: interrupted";

/// The verdict of a row whose run the interruption cut short: its figures are of part of it.
pub const STOPPED: &str = "stopped part-way: interrupted";

/// Below this share of successes a row is built on failure, whatever its latency says.
pub const FAILED_BELOW: f64 = 0.5;

/// One row: a run, or an experiment case over its repeats.
#[derive(Clone, Debug, Default)]
pub struct StudyRow {
    /// Its labels, one per label column (level and phase; case and factor levels; front).
    pub labels: Vec<String>,
    /// The offered load (a rate, or workers), where the table is a curve.
    pub offered: Option<f64>,
    /// The measured runs: one, or a case's repeats.
    pub runs: Vec<RunSummary>,
    /// Background load run beside them (an experiment's `background`).
    pub background: Vec<RunSummary>,
    /// Objectives checked on the runs.
    pub slos: Vec<SloResult>,
}

impl StudyRow {
    /// A row of `runs` with these labels.
    pub fn new(labels: Vec<String>, runs: Vec<RunSummary>) -> StudyRow {
        StudyRow { labels, runs, ..Default::default() }
    }

    /// A figure over the runs.
    pub fn figure(&self, f: Figure) -> Option<Spread> {
        let values: Vec<f64> = self.runs.iter().filter_map(|s| f.of(s)).collect();
        Spread::of(&values)
    }

    /// Whether every objective was met (true without objectives).
    pub fn passed(&self) -> bool {
        self.slos.iter().all(|r| r.pass)
    }

    /// Why the row must not be read as a plain result ([`failure_of`] its runs); `None`
    /// when it stands.
    pub fn failure(&self) -> Option<String> {
        failure_of(&self.runs)
    }

    /// Why the row did not measure the workload it asked for ([`crate::workload`]); `None`
    /// when it did, within the tolerances.
    pub fn deviation(&self) -> Option<String> {
        crate::workload::deviation_of(&self.runs, &self.background)
    }

    /// Why the row is not a result: built on failure, or on another workload than asked.
    pub fn not_a_result(&self) -> Option<String> {
        not_a_result_of(&self.runs, &self.background)
    }

    /// `ok`, `FAILED: ...`, `WORKLOAD: ...` (what was asked and got), or `SLO missed: ...`
    /// naming the first objective missed and what the run achieved, as the SLO lines do.
    pub fn verdict(&self) -> String {
        verdict_of(&self.runs, &self.background, &self.slos)
    }

    fn process(&self, name: &str) -> (Option<Spread>, Option<u64>) {
        let procs: Vec<_> = self.runs.iter().filter_map(|s| s.processes.iter().find(|p| p.name == name)).collect();
        let cpu = Spread::of(&procs.iter().map(|p| p.cpu_mean_percent).collect::<Vec<_>>());
        (cpu, procs.iter().map(|p| p.rss_max_kib).max())
    }

    fn phase_mean_us(&self, phase: &str) -> Option<f64> {
        let means: Vec<f64> =
            self.runs.iter().filter_map(|s| s.phases.get(phase).filter(|p| p.count > 0).map(|p| p.mean_us)).collect();
        Spread::of(&means).map(|s| s.mean)
    }

    fn byte_hit_ratio(&self) -> Option<f64> {
        let v: Vec<f64> = self.runs.iter().filter_map(|s| s.cache.as_ref().map(|c| c.byte_hit_ratio)).collect();
        Spread::of(&v).map(|s| s.mean)
    }

    /// The hits its runs asked for and got.
    pub fn hits(&self) -> Option<Hits> {
        Hits::of(&self.runs)
    }

    /// What its background asked for (its first run's plan: every repeat's is the same).
    pub fn background_asked(&self) -> Option<String> {
        self.background.first().and_then(crate::workload::background_asked)
    }

    fn background_throughput(&self) -> Option<Spread> {
        Spread::of(&self.background.iter().filter_map(|s| s.throughput_per_sec).collect::<Vec<_>>())
    }
}

/// Why `runs` (one run, a case's repeats) are built on failure and not a result: no run, no
/// request completed, no success at all, or fewer than [`FAILED_BELOW`] of the requests
/// succeeded in some run; with a scenario's flows, the same of the flows (a flow fails on a
/// check or a capture even when each of its requests got a 2xx); `None` when they stand.
/// The one definition of a failed run, for every table, report and exit code.
pub fn failure_of(runs: &[RunSummary]) -> Option<String> {
    if runs.is_empty() {
        return Some("no run finished".into());
    }
    let total: u64 = runs.iter().map(|s| s.requests.total).sum();
    let ok: u64 = runs.iter().map(|s| s.requests.ok).sum();
    if total == 0 {
        return Some("no request completed".into());
    }
    if ok == 0 {
        return Some(format!("all {total} requests failed{}", top_error(runs)));
    }
    let worst = runs.iter().map(succeeded).fold(f64::INFINITY, f64::min);
    if worst < FAILED_BELOW {
        return Some(format!("only {:.1}% succeeded{}", worst * 100.0, top_error(runs)));
    }
    flow_failure(runs)
}

/// Why the flows of `runs` are built on failure: none finished, none succeeded, or fewer
/// than [`FAILED_BELOW`] of them in some run, with the most frequent way they failed.
fn flow_failure(runs: &[RunSummary]) -> Option<String> {
    let flows: Vec<_> = runs.iter().filter_map(|s| s.flows_total.as_ref()).collect();
    if flows.is_empty() {
        return None;
    }
    let total: u64 = flows.iter().map(|f| f.flows).sum();
    let ok: u64 = flows.iter().map(|f| f.ok).sum();
    let sum = |pick: fn(&barrage_metrics::summary::FlowSummary) -> u64| flows.iter().map(|f| pick(f)).sum::<u64>();
    let kinds = [
        ("check failed", sum(|f| f.check_failed)),
        ("capture failed", sum(|f| f.capture_failed)),
        ("request failed", sum(|f| f.request_failed)),
    ];
    let mostly = kinds
        .iter()
        .filter(|(_, n)| *n > 0)
        .max_by_key(|(_, n)| *n)
        .map_or(String::new(), |(k, _)| format!(" (mostly {k})"));
    if total == 0 {
        return Some("no flow finished".into());
    }
    if ok == 0 {
        return Some(format!("all {total} flows failed{mostly}"));
    }
    let worst = flows.iter().map(|f| f.success_ratio).fold(f64::INFINITY, f64::min);
    (worst < FAILED_BELOW).then(|| format!("only {:.1}% of flows succeeded{mostly}", worst * 100.0))
}

/// The share of requests that succeeded: in the end, with `--retries` (the run's own success
/// ratio counts each attempt, and a retried request that succeeded is a success), else the
/// run's.
fn succeeded(s: &RunSummary) -> f64 {
    s.retries.as_ref().map_or(s.success_ratio, |r| r.final_success_ratio)
}

/// The verdict of one run: `ok`, `FAILED: WHY` or `WORKLOAD: WHY`, as the study tables say
/// it.
pub fn run_verdict(s: &RunSummary) -> String {
    // Of the summary itself, not of a row holding a copy: a copy of a million URLs each time.
    verdict_of(std::slice::from_ref(s), &[], &[])
}

/// Why one run is not a result: built on failure, or on another workload than it asked for.
pub fn run_not_a_result(s: &RunSummary) -> Option<String> {
    not_a_result_of(std::slice::from_ref(s), &[])
}

/// [`StudyRow::not_a_result`] of `runs` beside `background`.
fn not_a_result_of(runs: &[RunSummary], background: &[RunSummary]) -> Option<String> {
    crate::compare::Unfit::of(runs, background).why()
}

/// [`StudyRow::verdict`] of `runs` beside `background`, judged by `slos`.
fn verdict_of(runs: &[RunSummary], background: &[RunSummary], slos: &[SloResult]) -> String {
    if let Some(why) = failure_of(runs) {
        return format!("FAILED: {why}");
    }
    if let Some(why) = crate::workload::deviation_of(runs, background) {
        return format!("WORKLOAD: {why}");
    }
    let missed: Vec<&SloResult> = slos.iter().filter(|r| !r.pass).collect();
    match missed.as_slice() {
        [] => "ok".into(),
        [first, rest @ ..] => {
            let more = if rest.is_empty() { String::new() } else { format!(" and {} more", rest.len()) };
            format!("SLO missed: {} (actual {}){more}", first.slo, first.actual)
        }
    }
}

/// The most frequent way the requests of `runs` failed: an error kind (` (mostly tls:
/// UnknownIssuer)`), a failing status (` (mostly status 503)`), or a flow step's check or
/// capture that rejected a 2xx or 3xx answer (` (mostly check failed)`).
fn top_error(runs: &[RunSummary]) -> String {
    let mut ways: Vec<(u64, String)> = Vec::new();
    if let Some(e) = runs.iter().flat_map(|s| &s.errors).max_by_key(|e| e.count) {
        ways.push((e.count, format!("{}: {}", e.kind, e.example.chars().take(80).collect::<String>())));
    }
    let failing = runs.iter().flat_map(|s| &s.status_codes).filter(|(code, _)| !matches!(code.parse(), Ok(200..=399)));
    if let Some((code, n)) = failing.max_by_key(|(_, n)| **n) {
        ways.push((*n, format!("status {code}")));
    }
    // Rejected answers by the step counts of why (a rejected 4xx is one of the statuses).
    let steps = || runs.iter().flat_map(|s| &s.by_name);
    let rejected: u64 = runs.iter().map(|s| s.requests.rejected).sum();
    let (checks, captures): (u64, u64) =
        (steps().map(|n| n.check_failed).sum(), steps().map(|n| n.capture_failed).sum());
    if rejected > 0 {
        let why = if captures > checks { "capture failed" } else { "check failed" };
        ways.push((rejected, why.to_string()));
    }
    let dropped: u64 = runs.iter().map(|s| s.requests.dropped).sum();
    if dropped > 0 {
        ways.push((dropped, "dropped: due and never sent, every in-flight slot busy".to_string()));
    }
    // The first of the most frequent: errors, then statuses, rejections, drops.
    let most = ways.iter().map(|(n, _)| *n).max().unwrap_or(0);
    ways.into_iter().find(|(n, _)| *n == most).map_or(String::new(), |(_, why)| format!(" (mostly {why})"))
}

/// A study's table.
#[derive(Clone, Debug, Default)]
pub struct StudyTable {
    /// Its name: the sheet's and CSV file's (`sweep`, `capacity`, `matrix`, `bench`, `phases`).
    pub name: String,
    /// The titles of the label columns.
    pub label_columns: Vec<String>,
    /// The column of the offered load in sheets (`offered`, `rate_per_sec`), when rows have one.
    pub offered_column: Option<String>,
    /// The rows, in the order they ran (or the matrix's order).
    pub rows: Vec<StudyRow>,
    /// How many rows the study meant to have; more than `rows.len()` when it was stopped.
    pub planned: usize,
    /// How many runs each row was to have: an experiment's repeats (0 is taken as 1).
    pub runs_per_row: usize,
    /// Stopped by a signal before every run finished: the table has only the finished runs.
    pub partial: bool,
    /// Show the standard deviation over repeats (an experiment matrix).
    pub spread: bool,
}

/// What columns a table has beside the headline figures, decided once from its rows.
struct Columns {
    cache: bool,
    /// Hits asked and got (a cache study's workload).
    hits: bool,
    flows: bool,
    background: bool,
    phases: Vec<&'static str>,
    processes: Vec<String>,
    verdict: bool,
}

impl StudyTable {
    /// An empty table with these label columns.
    pub fn new(name: &str, label_columns: &[&str]) -> StudyTable {
        StudyTable {
            name: name.into(),
            label_columns: label_columns.iter().map(|c| c.to_string()).collect(),
            ..Default::default()
        }
    }

    fn columns(&self) -> Columns {
        let runs = || self.rows.iter().flat_map(|r| &r.runs);
        let mut processes: Vec<String> = Vec::new();
        for p in runs().flat_map(|s| &s.processes) {
            if !processes.contains(&p.name) {
                processes.push(p.name.clone());
            }
        }
        // barrage itself last, as in a run's report.
        if let Some(i) = processes.iter().position(|p| p == "barrage") {
            let b = processes.remove(i);
            processes.push(b);
        }
        Columns {
            cache: runs().any(|s| s.cache.is_some()),
            hits: self.rows.iter().any(|r| r.hits().is_some()),
            flows: runs().any(|s| s.flows_total.is_some()),
            background: self.rows.iter().any(|r| !r.background.is_empty()),
            phases: PHASES.into_iter().filter(|p| self.rows.iter().any(|r| r.phase_mean_us(p).is_some())).collect(),
            processes,
            verdict: self.rows.iter().any(|r| {
                !r.slos.is_empty()
                    || self.not_a_result(r).is_some()
                    || self.unrun(r)
                    || r.runs.iter().any(|s| s.interrupted)
            }),
        }
    }

    /// Rows built on failure or on another workload than asked, as warning lines.
    pub fn failures(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|r| self.not_a_result(r).map(|why| format!("{}: {why}", r.labels.join(" "))))
            .collect()
    }

    /// Whether `r` has no run because the study was interrupted before it finished one: not
    /// run, which is not failed (found trying seed 003's study: an experiment stopped after its third
    /// case called the nine after it FAILED).
    fn unrun(&self, r: &StudyRow) -> bool {
        self.partial && r.runs.is_empty()
    }

    /// [`StudyRow::not_a_result`], but for a row the interruption came before.
    fn not_a_result(&self, r: &StudyRow) -> Option<String> {
        if self.unrun(r) {
            return None;
        }
        r.not_a_result()
    }

    /// [`StudyRow::verdict`]; [`NOT_RUN`] for a row the interruption left without a run, and
    /// `stopped part-way` for one it cut short (found trying seed 003's study: a capacity
    /// probe stopped by Ctrl-C "missed" its objective by the requests it never finished),
    /// unless it is built on failure or on another workload anyway.
    fn verdict(&self, r: &StudyRow) -> String {
        if self.unrun(r) {
            return NOT_RUN.into();
        }
        if r.not_a_result().is_none() && r.runs.iter().any(|s| s.interrupted) {
            return STOPPED.into();
        }
        r.verdict()
    }

    /// The one line saying the table is partial, if it is.
    /// Runs are counted, not rows: a matrix's row holds a case's repeats, and a case the
    /// signal came before has a row and no run.
    pub fn partial_line(&self) -> Option<String> {
        self.partial.then(|| {
            let runs = || self.rows.iter().flat_map(|r| &r.runs);
            let finished = runs().filter(|s| !s.interrupted).count();
            let stopped = runs().count() - finished;
            let planned = self.planned.max(self.rows.len()) * self.runs_per_row.max(1);
            let mut line = format!(
                "PARTIAL: interrupted; the table has the {finished} of {} run(s) that finished",
                planned.max(finished + stopped)
            );
            if stopped > 0 {
                line.push_str(&format!(", and {stopped} stopped part-way"));
            }
            line
        })
    }

    /// The table as text, with its notes: what the figures are, failed rows, partial.
    pub fn to_text(&self) -> String {
        let c = self.columns();
        let mut head: Vec<String> = self.label_columns.clone();
        head.extend(HEADLINE.iter().map(|f| f.name().to_string()));
        if c.cache {
            head.extend(["hit ratio".into(), "byte hit".into()]);
        }
        if c.hits {
            head.extend(["hits asked".into(), "hits got".into()]);
        }
        if c.flows {
            head.extend(["flows/s", "flow success", "flow p50", "flow p99"].map(String::from));
        }
        if c.background {
            head.extend(["background".into(), "bg throughput".into()]);
        }
        head.extend(c.phases.iter().map(|p| p.to_string()));
        for p in &c.processes {
            head.extend([format!("{p} cpu"), format!("{p} mem")]);
        }
        if c.verdict {
            head.push("verdict".into());
        }
        let mut align = vec![Align::Left; self.label_columns.len()];
        align.extend(std::iter::repeat_n(Align::Right, head.len() - self.label_columns.len()));
        if c.verdict {
            *align.last_mut().expect("a verdict column") = Align::Left;
        }
        let mut t = Table::new(&align);
        t.row(head);
        for r in &self.rows {
            t.row(self.text_row(r, &c));
        }
        let mut out = t.to_text();
        let spread = if self.spread { "mean ± standard deviation over the repeats; " } else { "" };
        out.push_str(&format!(
            "({spread}latency is corrected; cpu is the mean % of one core, mem the peak resident memory)\n"
        ));
        for line in self.failures() {
            out.push_str(&format!("WARNING: {line}: its figures are not a result\n"));
        }
        out.push_str(&self.events_text());
        if let Some(line) = self.partial_line() {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    /// A line per run that had `--at` events (an experiment case's `at`): when each
    /// started and whether it succeeded; a run's own report says what each changed.
    fn events_text(&self) -> String {
        let mut out = String::new();
        for r in &self.rows {
            for (i, s) in r.runs.iter().enumerate().filter(|(_, s)| !s.events.is_empty()) {
                let events: Vec<String> = s
                    .events
                    .iter()
                    .map(|e| {
                        let how = match (e.failed, e.exit) {
                            (false, _) => "ok".to_string(),
                            (true, Some(code)) => format!("failed, exit {code}"),
                            (true, None) => "failed".to_string(),
                        };
                        format!("+{:.2}s '{}' {how}", e.at_s, e.command)
                    })
                    .collect();
                let run = if r.runs.len() > 1 { format!(" run {}", i + 1) } else { String::new() };
                out.push_str(&format!("events of {}{run}: {}\n", r.labels.join(" "), events.join(", ")));
            }
        }
        out
    }

    fn text_row(&self, r: &StudyRow, c: &Columns) -> Vec<String> {
        let dash = || "-".to_string();
        let mut cells = r.labels.clone();
        let show = |f: &Figure| match r.figure(*f) {
            Some(s) if self.spread && !matches!(f, Figure::Success | Figure::Errors | Figure::FlowSuccess) => {
                s.show(|v| f.show(v))
            }
            Some(s) => f.show(s.mean),
            None => dash(),
        };
        cells.extend(HEADLINE.iter().map(show));
        if c.cache {
            cells.push(r.figure(Figure::HitRatio).map_or_else(dash, |s| Figure::HitRatio.show(s.mean)));
            cells.push(r.byte_hit_ratio().map_or_else(dash, |v| Figure::HitRatio.show(v)));
        }
        if c.hits {
            let hits = r.hits();
            cells.push(hits.map_or_else(dash, |h| Figure::HitRatio.show(h.asked)));
            cells.push(hits.and_then(|h| h.got).map_or_else(dash, |g| Figure::HitRatio.show(g)));
        }
        if c.flows {
            cells.extend(Figure::FLOWS.iter().map(show));
        }
        if c.background {
            cells.push(r.background_asked().unwrap_or_else(dash));
            cells.push(r.background_throughput().map_or_else(dash, |s| format!("{:.0}/s", s.mean)));
        }
        cells.extend(c.phases.iter().map(|p| r.phase_mean_us(p).map_or_else(dash, fmt_us)));
        for p in &c.processes {
            let (cpu, mem) = r.process(p);
            cells.push(cpu.map_or_else(dash, |s| format!("{:.0}%", s.mean)));
            cells.push(mem.map_or_else(dash, |kib| fmt_bytes(kib as f64 * 1024.0)));
        }
        if c.verdict {
            cells.push(self.verdict(r));
        }
        cells
    }

    /// The table as a sheet (CSV, xlsx, the HTML charts): numbers in the units their column
    /// titles name.
    pub fn sheet(&self) -> Sheet {
        let c = self.columns();
        let mut head: Vec<String> = self.label_columns.clone();
        head.extend(self.offered_column.clone());
        for f in HEADLINE {
            head.push(f.column());
            if self.spread {
                head.push(format!("{}_sd", f.column()));
            }
        }
        if c.cache {
            head.extend(["hit_ratio_percent".into(), "byte_hit_ratio_percent".into()]);
        }
        if c.hits {
            head.extend(["hits_asked_percent", "hits_got_percent", "false_hits", "false_misses"].map(String::from));
        }
        if c.flows {
            for f in Figure::FLOWS {
                head.push(f.column());
                if self.spread {
                    head.push(format!("{}_sd", f.column()));
                }
            }
        }
        if c.background {
            head.extend(["background".into(), "background_throughput_per_sec".into()]);
        }
        head.extend(c.phases.iter().map(|p| format!("{p}_mean_ms")));
        for p in &c.processes {
            head.extend([format!("{p}_cpu_percent"), format!("{p}_peak_rss_kib")]);
        }
        if c.verdict {
            head.push("verdict".into());
        }
        let header: Vec<&str> = head.iter().map(String::as_str).collect();
        let mut sheet = Sheet::new(&self.name, &header);
        for r in &self.rows {
            sheet.push(self.sheet_row(r, &c));
        }
        if let Some(line) = self.partial_line() {
            sheet.push(vec![Cell::from(line)]);
        }
        sheet
    }

    fn sheet_row(&self, r: &StudyRow, c: &Columns) -> Vec<Cell> {
        let mut cells: Vec<Cell> = r.labels.iter().map(|l| Cell::from(l.as_str())).collect();
        if self.offered_column.is_some() {
            cells.push(Cell::from(r.offered));
        }
        let figures = |figures: &[Figure], cells: &mut Vec<Cell>| {
            for &f in figures {
                let s = r.figure(f);
                cells.push(Cell::from(s.map(|s| f.in_column_unit(s.mean))));
                if self.spread {
                    cells.push(Cell::from(s.map(|s| f.in_column_unit(s.sd))));
                }
            }
        };
        figures(&HEADLINE, &mut cells);
        if c.cache {
            cells.push(Cell::from(r.figure(Figure::HitRatio).map(|s| s.mean * 100.0)));
            cells.push(Cell::from(r.byte_hit_ratio().map(|v| v * 100.0)));
        }
        if c.hits {
            let hits = r.hits();
            cells.push(Cell::from(hits.map(|h| h.asked * 100.0)));
            cells.push(Cell::from(hits.and_then(|h| h.got).map(|g| g * 100.0)));
            cells.push(Cell::from(hits.map(|h| h.false_hits as f64)));
            cells.push(Cell::from(hits.map(|h| h.false_misses as f64)));
        }
        if c.flows {
            figures(&Figure::FLOWS, &mut cells);
        }
        if c.background {
            cells.push(r.background_asked().map_or(Cell::Empty, Cell::from));
            cells.push(Cell::from(r.background_throughput().map(|s| s.mean)));
        }
        cells.extend(c.phases.iter().map(|p| Cell::from(r.phase_mean_us(p).map(|us| us / 1e3))));
        for p in &c.processes {
            let (cpu, mem) = r.process(p);
            cells.push(Cell::from(cpu.map(|s| s.mean)));
            cells.push(Cell::from(mem.map(|m| m as f64)));
        }
        if c.verdict {
            cells.push(Cell::from(self.verdict(r)));
        }
        cells
    }

    /// The rows as JSON objects (`schema/study.schema.json`'s `row`): labels by column, the
    /// figures in base units (µs, fractions, per second), spreads, processes, objectives.
    pub fn json_rows(&self) -> Vec<Value> {
        self.rows.iter().map(|r| self.json_row(r)).collect()
    }

    fn json_row(&self, r: &StudyRow) -> Value {
        let mut o = Map::new();
        // Labels apart from figures: an experiment factor may be named like a figure.
        let labels: Map<String, Value> =
            self.label_columns.iter().zip(&r.labels).map(|(col, label)| (col.clone(), json!(label))).collect();
        o.insert("labels".into(), Value::Object(labels));
        if self.offered_column.is_some() {
            o.insert("offered".into(), json!(r.offered));
        }
        let mut sd = Map::new();
        for f in HEADLINE.into_iter().chain([Figure::HitRatio]).chain(Figure::FLOWS) {
            let s = r.figure(f);
            o.insert(f.json_key(), json!(s.map(|s| s.mean)));
            if let Some(s) = s.filter(|s| s.n > 1) {
                sd.insert(f.json_key(), json!(s.sd));
            }
        }
        o.insert("byte_hit_ratio".into(), json!(r.byte_hit_ratio()));
        o.insert("runs".into(), json!(r.runs.len()));
        o.insert("requests".into(), json!(r.runs.iter().map(|s| s.requests.total).sum::<u64>()));
        // Each run's own, so that a run can be checked against its target's count (one an
        // experiment's fleet made, say) without reading its file.
        o.insert("requests_per_run".into(), json!(r.runs.iter().map(|s| s.requests.total).collect::<Vec<_>>()));
        if !sd.is_empty() {
            o.insert("sd".into(), Value::Object(sd));
        }
        if !r.background.is_empty() {
            o.insert("background".into(), json!(r.background_asked()));
            o.insert("background_throughput_per_sec".into(), json!(r.background_throughput().map(|s| s.mean)));
        }
        if let Some(h) = r.hits() {
            o.insert(
                "hits".into(),
                json!({ "asked": h.asked, "got": h.got, "false_hits": h.false_hits, "false_misses": h.false_misses }),
            );
        }
        o.insert("workload".into(), json!(r.deviation()));
        let phases: Map<String, Value> =
            PHASES.iter().filter_map(|p| r.phase_mean_us(p).map(|v| (p.to_string(), json!(v)))).collect();
        o.insert("phase_mean_us".into(), Value::Object(phases));
        let mut processes = Map::new();
        for name in r.runs.iter().flat_map(|s| s.processes.iter().map(|p| p.name.clone())) {
            let (cpu, mem) = r.process(&name);
            processes.insert(name, json!({ "cpu_mean_percent": cpu.map(|s| s.mean), "peak_rss_kib": mem }));
        }
        o.insert("processes".into(), Value::Object(processes));
        let slos: Vec<Value> =
            r.slos.iter().map(|x| json!({ "slo": x.slo, "actual": x.actual, "pass": x.pass })).collect();
        o.insert("slos".into(), Value::Array(slos));
        o.insert("failed".into(), json!(r.failure().filter(|_| !self.unrun(r))));
        o.insert("verdict".into(), json!(self.verdict(r)));
        let events: Vec<Value> = (1..)
            .zip(&r.runs)
            .flat_map(|(run, s)| {
                s.events
                    .iter()
                    .map(move |e| json!({ "run": run, "at_s": e.at_s, "command": e.command, "failed": e.failed }))
            })
            .collect();
        if !events.is_empty() {
            o.insert("events".into(), Value::Array(events));
        }
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::summary::{CacheSummary, ErrorStat};
    use barrage_metrics::ProcessSummary;

    fn run(ok: u64, total: u64, p99_us: u64) -> RunSummary {
        let mut s = RunSummary::default();
        s.requests.total = total;
        s.requests.ok = ok;
        s.success_ratio = if total > 0 { ok as f64 / total as f64 } else { 0.0 };
        s.throughput_per_sec = Some(ok as f64 / 10.0);
        s.latency.corrected.p99_us = p99_us;
        s.processes = vec![
            ProcessSummary { name: "nginx".into(), cpu_mean_percent: 40.0, rss_max_kib: 2048, ..Default::default() },
            ProcessSummary { name: "barrage".into(), cpu_mean_percent: 10.0, rss_max_kib: 4096, ..Default::default() },
        ];
        s
    }

    #[test]
    fn every_table_has_the_headline_the_processes_and_a_verdict_for_failures() {
        let mut t = StudyTable::new("sweep", &["level"]);
        t.offered_column = Some("offered".into());
        t.rows
            .push(StudyRow { offered: Some(100.0), ..StudyRow::new(vec!["100/s".into()], vec![run(1000, 1000, 900)]) });
        let mut failed = run(0, 500, 800);
        failed.errors.push(ErrorStat { kind: "tls".into(), count: 500, example: "UnknownIssuer".into() });
        t.rows.push(StudyRow { offered: Some(200.0), ..StudyRow::new(vec!["200/s".into()], vec![failed]) });
        let text = t.to_text();
        assert!(text.contains("nginx cpu") && text.contains("nginx mem") && text.contains("barrage mem"), "{text}");
        assert!(text.contains("FAILED: all 500 requests failed (mostly tls: UnknownIssuer)"), "{text}");
        assert!(text.contains("WARNING: 200/s: all 500 requests failed"), "{text}");
        assert!(text.contains("2.00 MiB"), "{text}");
        let sheet = t.sheet();
        let col = |name: &str| sheet.header.iter().position(|h| h == name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(sheet.rows[0][col("nginx_peak_rss_kib")], Cell::from(2048.0));
        assert_eq!(sheet.rows[0][col("offered")], Cell::from(100.0));
        assert_eq!(sheet.rows[0][col("p99_ms")], Cell::from(0.9));
        assert_eq!(
            sheet.rows[1][col("verdict")],
            Cell::from("FAILED: all 500 requests failed (mostly tls: UnknownIssuer)")
        );
        let json = t.json_rows();
        assert_eq!(json[0]["processes"]["nginx"]["peak_rss_kib"], 2048);
        assert_eq!(json[1]["labels"]["level"], "200/s");
        assert_eq!(json[0]["verdict"], "ok");
        assert_eq!(json[1]["failed"], "all 500 requests failed (mostly tls: UnknownIssuer)");
    }

    #[test]
    fn a_missed_objective_is_named_in_the_verdict() {
        let slo = |text: &str, pass: bool| SloResult { slo: text.into(), actual: "180ms".into(), pass };
        let mut r = StudyRow::new(vec!["400/s".into()], vec![run(100, 100, 180_000)]);
        r.slos = vec![slo("p50<1s", true), slo("p99<100ms", false)];
        assert_eq!(r.verdict(), "SLO missed: p99<100ms (actual 180ms)");
        r.slos.push(slo("max<150ms", false));
        assert_eq!(r.verdict(), "SLO missed: p99<100ms (actual 180ms) and 1 more");
        // Built on failure comes first: the objectives of such a row mean nothing.
        r.runs = vec![run(10, 100, 1)];
        assert!(r.verdict().starts_with("FAILED: only 10.0% succeeded"), "{}", r.verdict());
        assert_eq!(failure_of(&r.runs), r.failure());
    }

    /// A run whose 200s its flow's checks refused failed by those checks, not "mostly
    /// status 200"; a failing status outnumbering them is named instead.
    #[test]
    fn a_run_failed_by_its_checks_says_so() {
        let mut s = run(30, 100, 1);
        s.status_codes = [("200".to_string(), 90), ("503".to_string(), 10)].into();
        s.requests.rejected = 60;
        s.by_name = vec![barrage_metrics::summary::GroupSummary { check_failed: 60, ..Default::default() }];
        assert_eq!(failure_of(std::slice::from_ref(&s)).unwrap(), "only 30.0% succeeded (mostly check failed)");
        s.status_codes = [("200".to_string(), 40), ("503".to_string(), 60)].into();
        s.requests.rejected = 10;
        assert_eq!(failure_of(&[s]).unwrap(), "only 30.0% succeeded (mostly status 503)");
    }

    #[test]
    fn with_retries_a_run_is_judged_by_its_final_success() {
        // 40% of the attempts succeeded, but 90% of the requests did in the end.
        let mut s = run(40, 100, 1);
        s.retries = Some(barrage_metrics::summary::RetrySummary { final_success_ratio: 0.9, ..Default::default() });
        assert_eq!(failure_of(std::slice::from_ref(&s)), None);
        s.retries.as_mut().unwrap().final_success_ratio = 0.3;
        assert!(failure_of(&[s]).unwrap().starts_with("only 30.0% succeeded"));
    }

    #[test]
    fn a_partial_table_says_so_in_every_form() {
        let mut t = StudyTable::new("sweep", &["level"]);
        t.rows.push(StudyRow::new(vec!["8 workers".into()], vec![run(10, 10, 1)]));
        t.planned = 3;
        t.partial = true;
        assert!(t.to_text().contains("PARTIAL: interrupted; the table has the 1 of 3 run(s) that finished"));
        let sheet = t.sheet();
        assert_eq!(sheet.rows.last().unwrap()[0], Cell::from(t.partial_line().unwrap()));
        let mut whole = t.clone();
        whole.partial = false;
        assert!(!whole.to_text().contains("PARTIAL"));
        // A level stopped part-way is in the table, not among the runs that finished.
        let mut stopped = run(5, 5, 1);
        stopped.interrupted = true;
        t.rows.push(StudyRow::new(vec!["16 workers".into()], vec![stopped]));
        let line = t.partial_line().unwrap();
        assert!(line.ends_with("the 1 of 3 run(s) that finished, and 1 stopped part-way"), "{line}");
        // Which row was cut short, and which never ran, in every form; neither is a failure.
        t.rows.push(StudyRow::new(vec!["32 workers".into()], Vec::new()));
        let text = t.to_text();
        assert!(text.contains(STOPPED) && text.contains(NOT_RUN) && !text.contains("FAILED"), "{text}");
        assert!(t.failures().is_empty(), "{:?}", t.failures());
        let verdicts: Vec<Cell> = t.sheet().rows.iter().take(3).map(|r| r[r.len() - 1].clone()).collect();
        assert_eq!(verdicts[1..], [Cell::from(STOPPED), Cell::from(NOT_RUN)]);
        let json = t.json_rows();
        assert_eq!((json[2]["verdict"].as_str(), json[2]["failed"].is_null()), (Some(NOT_RUN), true));
        // A matrix counts runs, not rows: two cases of three repeats, one run done.
        let mut m = StudyTable::new("matrix", &["case"]);
        m.rows.push(StudyRow::new(vec!["TC0".into()], vec![run(10, 10, 1)]));
        m.rows.push(StudyRow::new(vec!["TC1".into()], vec![]));
        (m.planned, m.runs_per_row, m.partial) = (2, 3, true);
        assert!(m.partial_line().unwrap().ends_with("the 1 of 6 run(s) that finished"), "{:?}", m.partial_line());
    }

    #[test]
    fn repeats_show_mean_and_spread_and_cache_columns_appear_with_a_cache() {
        let mut t = StudyTable::new("matrix", &["case"]);
        t.spread = true;
        let mut a = run(100, 100, 1000);
        let mut b = run(100, 100, 3000);
        for s in [&mut a, &mut b] {
            s.cache = Some(CacheSummary { hit_ratio: 0.5, byte_hit_ratio: 0.25, ..Default::default() });
        }
        t.rows.push(StudyRow::new(vec!["TC0".into()], vec![a, b]));
        let text = t.to_text();
        assert!(text.contains("2.00ms ±1.41ms"), "{text}");
        assert!(text.contains("hit ratio") && text.contains("50.0%") && text.contains("25.0%"), "{text}");
        let sheet = t.sheet();
        assert!(sheet.header.contains(&"p99_ms_sd".to_string()));
        let json = t.json_rows();
        assert_eq!(json[0]["p99_us"], 2000.0);
        assert_eq!(json[0]["hit_ratio"], 0.5);
        assert!(json[0]["sd"]["p99_us"].as_f64().unwrap() > 1400.0);
    }
}
