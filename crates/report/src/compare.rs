//! [`Comparison`]: runs side by side against the first (the baseline), each headline metric
//! with its absolute and % change, and whether the change is significant.
//!
//! # Significance
//! A run's one-second intervals are its samples: for throughput, the interval's successes
//! per second; for p50, p90 and p99, the interval's value of that percentile (the mean,
//! max, success and errors have no per-interval sample and are not tested). Two runs
//! are compared with the Mann-Whitney U test (two-sided, normal approximation with tie
//! correction), which assumes only that intervals are independent draws from a steady
//! state, not that they are normally distributed. Several metrics are tested per pair of
//! runs, so each test is held to [`ALPHA`] divided by their number (Bonferroni): the chance
//! that two runs of one configuration show any significant change stays under [`ALPHA`]. A
//! change is **significant** when its p-value is under that level *and* the change is larger
//! than the noise threshold (default 5%), so that a difference too small to matter is not
//! flagged however many intervals there are. With fewer than [`MIN_INTERVALS`] full
//! intervals in a run there is no test, and every output says so ([`NoTest`]) rather than
//! "not significant".
//!
//! # Bounds
//! A [`FailIf`] bound trips on the size of the change alone, tested or not: a CI gate must
//! also hold on runs too short to test. What the test made of the change is printed with
//! it ([`FailIf::failure`]).

use crate::export::{Cell, Sheet};
use crate::figure::Figure;
use crate::study::failure_of;
use crate::text::{p_text, Align, Table};
use barrage_metrics::summary::RunSummary;
use std::str::FromStr;

pub use barrage_metrics::stats::{mann_whitney, ALPHA};
/// Fewest full intervals a run needs for the test.
pub const MIN_INTERVALS: usize = barrage_metrics::stats::MIN_SAMPLES;

/// The figures a comparison shows, in table order.
pub const COMPARED: [Figure; 8] = [
    Figure::Throughput,
    Figure::Success,
    Figure::Errors,
    Figure::Mean,
    Figure::P50,
    Figure::P90,
    Figure::P99,
    Figure::Max,
];

/// A comparison's metric: one of the headline [`Figure`]s.
pub type Metric = Figure;

/// The figures compared between `runs`: [`COMPARED`], then the flows' ([`Figure::FLOWS`],
/// which have no per-interval sample) when a run had a scenario's flows.
pub fn compared(runs: &[(String, RunSummary)]) -> Vec<Figure> {
    let flows = runs.iter().any(|(_, s)| s.flows_total.is_some());
    COMPARED.into_iter().chain(Figure::FLOWS.into_iter().filter(|_| flows)).collect()
}

fn value(f: Figure, s: &RunSummary) -> f64 {
    f.of(s).unwrap_or(0.0)
}

/// Compare shows success to three decimals: a change of 0.01% matters between two runs.
fn show(f: Figure, v: f64) -> String {
    match f {
        Figure::Success => format!("{:.3}%", v * 100.0),
        f => f.show(v),
    }
}

/// Why a change has no p-value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoTest {
    /// The metric has no per-interval sample (mean, max, success, errors).
    NoSamples,
    /// A run had fewer than [`MIN_INTERVALS`] full intervals.
    TooFewIntervals,
    /// Every interval of both runs had the same value.
    AllEqual,
    /// A run did not get the workload it asked for, or the two asked for the same one and
    /// got different ones ([`Comparison::workloads`] says how): a change between them may be
    /// the workload's, not the configuration's.
    Workload,
    /// A run is built on failure ([`crate::study::failure_of`]): the latency of refused
    /// or failed requests says nothing of the configuration.
    Failed,
}

impl NoTest {
    /// `no test: fewer than 5 full intervals`, as every output says it.
    pub fn text(self) -> String {
        match self {
            NoTest::NoSamples => "no test: no per-interval sample".into(),
            NoTest::TooFewIntervals => format!("no test: fewer than {MIN_INTERVALS} full intervals"),
            NoTest::AllEqual => "no test: every interval the same".into(),
            NoTest::Workload => "no test: not the same workload".into(),
            NoTest::Failed => "no test: built on failure".into(),
        }
    }
}

/// One run's value of a metric against the baseline's.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The value.
    pub value: f64,
    /// % change from the baseline; `None` when the baseline is 0.
    pub percent: Option<f64>,
    /// Two-sided p-value of the Mann-Whitney test; `None` without a test.
    pub p_value: Option<f64>,
    /// Why there is no test, when there is none.
    pub untested: Option<NoTest>,
    /// Significant: p under ALPHA over the metrics tested, and beyond the noise threshold.
    pub significant: bool,
}

impl Change {
    /// The verdict in words: `significant (p=0.002)`, `not significant (p=0.394)`, or why
    /// there was no test.
    pub fn verdict(&self) -> String {
        match (self.p_value, self.untested) {
            (Some(p), _) if self.significant => format!("significant (p={})", p_text(p)),
            (Some(p), _) => format!("not significant (p={})", p_text(p)),
            (None, why) => why.unwrap_or(NoTest::NoSamples).text(),
        }
    }

    /// The test in the JSON: `Mann-Whitney U`, or why there was none.
    pub fn test(&self) -> String {
        match self.untested {
            None => "Mann-Whitney U".into(),
            Some(why) => why.text(),
        }
    }

    /// The significance cell of the sheets: `yes`, `no`, or why there was no test.
    fn significance_cell(&self) -> Cell {
        match self.untested {
            None => Cell::from(if self.significant { "yes" } else { "no" }),
            Some(why) => Cell::from(why.text()),
        }
    }
}

/// One metric over all runs.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricRow {
    /// Which.
    pub metric: Metric,
    /// The baseline's value.
    pub baseline: f64,
    /// The other runs', in order.
    pub changes: Vec<Change>,
}

/// What a watched process (or barrage) used in each run: CPU or peak memory. Not tested
/// for significance: one sample a second of a process is not a steady-state draw.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceRow {
    /// The process as the run named it.
    pub process: String,
    /// Peak resident memory (KiB) rather than mean CPU (% of one core).
    pub memory: bool,
    /// The value in each run, baseline first; `None` where the run did not watch it.
    pub values: Vec<Option<f64>>,
}

impl ResourceRow {
    /// `nginx_cpu_percent` or `nginx_peak_rss_kib`.
    pub fn name(&self) -> String {
        format!("{}_{}", self.process, if self.memory { "peak_rss_kib" } else { "cpu_percent" })
    }

    fn show(&self, v: Option<f64>) -> String {
        match v {
            None => "-".into(),
            Some(kib) if self.memory => barrage_metrics::units::fmt_bytes(kib * 1024.0),
            Some(cpu) => format!("{cpu:.0}%"),
        }
    }

    fn change(&self, i: usize) -> Option<f64> {
        match (self.values[0], self.values[i]) {
            (Some(b), Some(v)) if b != 0.0 => Some((v - b) / b * 100.0),
            _ => None,
        }
    }
}

/// The CPU and peak memory rows of every process watched in any run, barrage last.
fn resources(runs: &[(String, RunSummary)]) -> Vec<ResourceRow> {
    let mut names: Vec<String> = Vec::new();
    for p in runs.iter().flat_map(|(_, s)| &s.processes) {
        if !names.contains(&p.name) {
            names.push(p.name.clone());
        }
    }
    if let Some(i) = names.iter().position(|n| n == "barrage") {
        let b = names.remove(i);
        names.push(b);
    }
    let mut rows = Vec::new();
    for name in names {
        for memory in [false, true] {
            let values = runs
                .iter()
                .map(|(_, s)| {
                    let p = s.processes.iter().find(|p| p.name == name)?;
                    Some(if memory { p.rss_max_kib as f64 } else { p.cpu_mean_percent })
                })
                .collect();
            rows.push(ResourceRow { process: name.clone(), memory, values });
        }
    }
    rows
}

/// Runs side by side against the first.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The runs' labels, baseline first.
    pub labels: Vec<String>,
    /// One row per metric.
    pub rows: Vec<MetricRow>,
    /// CPU and peak memory of the watched processes and of barrage.
    pub resources: Vec<ResourceRow>,
    /// The noise threshold, a fraction.
    pub noise: f64,
    /// For each run after the baseline, why its workload and the baseline's cannot be
    /// compared (nothing is significant between them then); `None` when they can, or when
    /// one of them is built on failure (`failures` says so).
    pub workloads: Vec<Option<String>>,
    /// For each run after the baseline, which of the two is built on failure, and why
    /// (nothing is significant between them then); `None` when neither is.
    pub failures: Vec<Option<String>>,
}

/// Why a run is not a result, as its row in a table says: built on failure, or on another
/// workload than it asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Unfit {
    /// Built on failure ([`failure_of`]).
    pub failed: Option<String>,
    /// Not the workload it asked for ([`crate::workload::deviation_of`]).
    pub workload: Option<String>,
}

impl Unfit {
    /// Of `runs` (one run, or a case's repeats, each judged as the matrix judges them)
    /// beside their `background`.
    pub fn of(runs: &[RunSummary], background: &[RunSummary]) -> Unfit {
        Unfit { failed: failure_of(runs), workload: crate::workload::deviation_of(runs, background) }
    }

    /// Why it is not a result, as the row's warning says it ([`crate::study::StudyRow::not_a_result`]).
    pub fn why(&self) -> Option<String> {
        let workload = || self.workload.as_ref().map(|w| format!("{}: {w}", crate::study::WRONG_WORKLOAD));
        self.failed.clone().or_else(workload)
    }
}

/// Compares `runs` (label, summary) against the first; `noise` is the smallest relative
/// change flagged as significant. Each run is judged alone ([`Unfit::of`]).
pub fn compare(runs: &[(String, RunSummary)], noise: f64) -> Comparison {
    let unfit: Vec<Unfit> = runs.iter().map(|(_, s)| Unfit::of(std::slice::from_ref(s), &[])).collect();
    compare_judged(runs, noise, &unfit)
}

/// [`compare`], with each run's `unfit` as its row says it: a case's repeats pooled into
/// one summary are judged as the repeats (one under half successes fails the row) and with
/// their background, which the pooled summary cannot tell.
pub fn compare_judged(runs: &[(String, RunSummary)], noise: f64, unfit: &[Unfit]) -> Comparison {
    let (_, base) = &runs[0];
    let tested = COMPARED.iter().filter(|m| m.samples(base).is_some()).count().max(1);
    let level = ALPHA / tested as f64;
    // The baseline's reason first, then the run's: (who, why).
    let which = |i: usize, pick: fn(&Unfit) -> &Option<String>| {
        [("the baseline", 0), ("this run", i)].into_iter().find_map(|(who, k)| Some((who, pick(&unfit[k]).as_ref()?)))
    };
    let failures: Vec<Option<String>> =
        (1..runs.len()).map(|i| which(i, |u| &u.failed).map(|(who, why)| format!("{who}: {why}"))).collect();
    let workloads: Vec<Option<String>> = (1..runs.len())
        .zip(&failures)
        .map(|(i, failed)| match failed {
            Some(_) => None,
            None => which(i, |u| &u.workload)
                .map(|(who, why)| format!("{who} is not the workload it asked for ({why})"))
                .or_else(|| hits_apart(base, &runs[i].1)),
        })
        .collect();
    let rows = compared(runs)
        .into_iter()
        .map(|metric| {
            let baseline = value(metric, base);
            let base_samples = metric.samples(base);
            let changes = runs[1..]
                .iter()
                .zip(workloads.iter().zip(&failures))
                .map(|((_, s), (mismatch, failed))| {
                    let value = value(metric, s);
                    let percent = (baseline != 0.0).then(|| (value - baseline) / baseline * 100.0);
                    let (p_value, untested) = match (failed, mismatch) {
                        (Some(_), _) => (None, Some(NoTest::Failed)),
                        (None, Some(_)) => (None, Some(NoTest::Workload)),
                        (None, None) => test(base_samples.as_deref(), metric.samples(s).as_deref()),
                    };
                    let big = percent.is_some_and(|p| p.abs() >= noise * 100.0);
                    Change { value, percent, p_value, untested, significant: big && p_value.is_some_and(|p| p < level) }
                })
                .collect();
            MetricRow { metric, baseline, changes }
        })
        .collect();
    let labels = runs.iter().map(|(l, _)| l.clone()).collect();
    Comparison { labels, rows, resources: resources(runs), noise, workloads, failures }
}

/// Why `b` cannot be compared with `a` as a change of configuration alone, when each got
/// the workload it asked for: both asked for the same hits and got hits more than the
/// tolerance apart (a change between them may be the cache's doing, not the factor's). Two
/// runs that asked for different hits (a cache hit against a miss) are compared: that is
/// the comparison.
fn hits_apart(a: &RunSummary, b: &RunSummary) -> Option<String> {
    use crate::workload::{Hits, HIT_TOLERANCE};
    let (ha, hb) = (Hits::of(std::slice::from_ref(a))?, Hits::of(std::slice::from_ref(b))?);
    let (ga, gb) = (ha.got?, hb.got?);
    ((ha.asked - hb.asked).abs() <= HIT_TOLERANCE && (ga - gb).abs() > HIT_TOLERANCE + 1e-9).then(|| {
        format!("both asked for {:.1}% hits and got {:.1}% against {:.1}%", ha.asked * 100.0, ga * 100.0, gb * 100.0)
    })
}

/// The p-value of two runs' samples of a metric, or why there is none.
fn test(a: Option<&[f64]>, b: Option<&[f64]>) -> (Option<f64>, Option<NoTest>) {
    let (Some(a), Some(b)) = (a, b) else { return (None, Some(NoTest::NoSamples)) };
    if a.len().min(b.len()) < MIN_INTERVALS {
        return (None, Some(NoTest::TooFewIntervals));
    }
    match mann_whitney(a, b) {
        Some(p) => (Some(p), None),
        None => (None, Some(NoTest::AllEqual)),
    }
}

/// Fewest full intervals of the runs, when some run has too few to test: `a.brg 1, b.brg 1`.
fn too_short(runs: &[(String, RunSummary)]) -> Option<String> {
    let counts: Vec<(String, usize)> =
        runs.iter().map(|(l, s)| (l.clone(), Figure::P50.samples(s).map_or(0, |v| v.len()))).collect();
    counts
        .iter()
        .any(|(_, n)| *n < MIN_INTERVALS)
        .then(|| counts.iter().map(|(l, n)| format!("{l} {n}")).collect::<Vec<_>>().join(", "))
}

/// `--fail-if 'p99>+10%'`: a bound on the % change of a metric against the baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct FailIf {
    text: String,
    metric: Metric,
    above: bool,
    percent: f64,
}

impl FromStr for FailIf {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let text = s.trim();
        let bad =
            |why: String| format!("invalid --fail-if '{text}': {why}; expected e.g. 'p99>+10%' or 'throughput<-5%'");
        let at = text.find(['<', '>']).ok_or_else(|| bad("no < or >".into()))?;
        let metric = text[..at].trim().parse::<Metric>().map_err(bad)?;
        if !COMPARED.contains(&metric) && !metric.is_flow() {
            let names: Vec<&str> = COMPARED.iter().chain(&Figure::FLOWS).map(|m| m.name()).collect();
            return Err(bad(format!("'{}' is not compared; compared are {}", metric.name(), names.join(", "))));
        }
        let above = text[at..].starts_with('>');
        let value = text[at + 1..].trim();
        let percent = value
            .strip_suffix('%')
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|p| p.is_finite())
            .ok_or_else(|| bad(format!("'{value}' is not a signed percentage")))?;
        // No figure falls by more than all of it: a bound at or below -100% could never trip.
        if percent <= -100.0 {
            return Err(bad(format!("'{value}' is a change no figure can make: the bound must be above -100%")));
        }
        Ok(FailIf { text: text.to_string(), metric, above, percent })
    }
}

impl FailIf {
    /// The runs (by label) whose change crosses the bound, with the change. The size of the
    /// change decides, whatever its significance (see the module's doc).
    pub fn crossed<'c>(&self, c: &'c Comparison) -> Vec<(&'c str, &'c Change)> {
        let Some(row) = c.rows.iter().find(|r| r.metric == self.metric) else { return Vec::new() };
        row.changes
            .iter()
            .zip(&c.labels[1..])
            .filter(|(ch, _)| ch.percent.is_some_and(|p| if self.above { p > self.percent } else { p < self.percent }))
            .map(|(ch, label)| (label.as_str(), ch))
            .collect()
    }

    /// The line saying a run crossed the bound and how that was decided: `FAIL  p50>+10%:
    /// b.brg changed +100.0%, decided on the size of the change alone; the test found it not
    /// significant (p=0.394)`.
    pub fn failure(&self, label: &str, change: &Change) -> String {
        let test = match (change.p_value, change.untested) {
            (Some(p), _) => format!(
                "the test found it {}significant (p={})",
                if change.significant { "" } else { "not " },
                p_text(p)
            ),
            (None, why) => why.unwrap_or(NoTest::NoSamples).text(),
        };
        format!(
            "FAIL  {}: {label} changed {:+.1}%, decided on the size of the change alone; {test}",
            self.text,
            change.percent.unwrap_or(0.0)
        )
    }

    /// The bound as given.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// One summary standing for several sequential repeats of one configuration: the headline
/// figures are their means (the max their max), and their intervals are pooled as the
/// samples of the significance test.
pub fn pool(repeats: Vec<RunSummary>) -> RunSummary {
    let n = repeats.len().max(1) as f64;
    let mean = |f: fn(&RunSummary) -> f64| repeats.iter().map(f).sum::<f64>() / n;
    let mut s = repeats.first().cloned().unwrap_or_default();
    // A rate only when every repeat had one (see `MIN_RATE_REQUESTS`).
    s.throughput_per_sec = repeats.iter().map(|r| r.throughput_per_sec).sum::<Option<f64>>().map(|t| t / n);
    s.success_ratio = mean(|r| r.success_ratio);
    let l = &mut s.latency.corrected;
    l.mean_us = mean(|r| r.latency.corrected.mean_us);
    l.p50_us = mean(|r| r.latency.corrected.p50_us as f64) as u64;
    l.p90_us = mean(|r| r.latency.corrected.p90_us as f64) as u64;
    l.p99_us = mean(|r| r.latency.corrected.p99_us as f64) as u64;
    l.max_us = repeats.iter().map(|r| r.latency.corrected.max_us).max().unwrap_or(0);
    s.requests.total = repeats.iter().map(|r| r.requests.total).sum();
    s.requests.ok = repeats.iter().map(|r| r.requests.ok).sum();
    s.requests.dropped = repeats.iter().map(|r| r.requests.dropped).sum();
    s.flows_total = pool_flows(&repeats);
    s.workload = pool_workload(&repeats);
    s.intervals = repeats.into_iter().flat_map(|r| r.intervals).collect();
    s
}

/// The workload of repeats as one: counts added, the ratios over the sums (the achieved
/// one over the repeats whose answers told); `None` when no repeat meant anything.
fn pool_workload(repeats: &[RunSummary]) -> Option<barrage_metrics::summary::WorkloadSummary> {
    let h = crate::workload::Hits::of(repeats)?;
    let w: Vec<_> = repeats.iter().filter_map(|r| r.workload.as_ref()).collect();
    let sum = |pick: fn(&barrage_metrics::summary::WorkloadSummary) -> u64| w.iter().map(|w| pick(w)).sum::<u64>();
    Some(barrage_metrics::summary::WorkloadSummary {
        new: sum(|w| w.new),
        repeat: sum(|w| w.repeat),
        intended_hit_ratio: h.asked,
        judged: sum(|w| if w.achieved_hit_ratio.is_some() { w.judged } else { 0 }),
        achieved_hit_ratio: h.got,
        false_hits: h.false_hits,
        false_misses: h.false_misses,
        stamped: sum(|w| w.stamped),
    })
}

/// The flows of sequential repeats as one: flows and successes summed, the success ratio,
/// rate and latency percentiles their means (a rate only when every repeat had one), the
/// slowest their max; `None` when no repeat had flows.
fn pool_flows(repeats: &[RunSummary]) -> Option<barrage_metrics::summary::FlowSummary> {
    let flows: Vec<_> = repeats.iter().filter_map(|r| r.flows_total.as_ref()).collect();
    let mut f = (*flows.first()?).clone();
    let n = flows.len() as f64;
    let mean = |pick: fn(&barrage_metrics::summary::FlowSummary) -> f64| flows.iter().map(|f| pick(f)).sum::<f64>() / n;
    f.flows = flows.iter().map(|f| f.flows).sum();
    f.ok = flows.iter().map(|f| f.ok).sum();
    f.failed = flows.iter().map(|f| f.failed).sum();
    f.dropped = flows.iter().map(|f| f.dropped).sum();
    f.success_ratio = mean(|f| f.success_ratio);
    f.flows_per_sec = flows.iter().map(|f| f.flows_per_sec).sum::<Option<f64>>().map(|t| t / n);
    let l = &mut f.latency;
    l.mean_us = mean(|f| f.latency.mean_us);
    l.p50_us = mean(|f| f.latency.p50_us as f64) as u64;
    l.p99_us = mean(|f| f.latency.p99_us as f64) as u64;
    l.max_us = flows.iter().map(|f| f.latency.max_us).max().unwrap_or(0);
    Some(f)
}

/// Two cases of an experiment that differ only in one factor, the first at its baseline
/// level, compared as two runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseComparison {
    /// The factor compared along.
    pub factor: String,
    /// Its first level (the baseline).
    pub from: String,
    /// The level compared with it.
    pub to: String,
    /// The other factors' levels, `f=l, g=m`.
    pub others: String,
    /// The case at the baseline level.
    pub from_case: String,
    /// The case at the level compared.
    pub to_case: String,
    /// The phase compared, for cases with phases (the last, when only one case has them).
    pub phase: Option<String>,
    /// The later case against the earlier (its baseline), repeats pooled.
    pub comparison: Comparison,
}

/// The figures an experiment's comparisons show.
pub const CASE_FIGURES: [Figure; 5] = [Figure::Throughput, Figure::Mean, Figure::P50, Figure::P99, Figure::Success];

/// `+12.3%*`: the change, starred when significant; `-` without a baseline.
fn starred(ch: &Change) -> String {
    match ch.percent {
        Some(p) => format!("{p:+.1}%{}", if ch.significant { "*" } else { "" }),
        None => "-".into(),
    }
}

fn case_change(c: &CaseComparison, f: Figure) -> Option<&Change> {
    c.comparison.rows.iter().find(|r| r.metric == f).and_then(|r| r.changes.first())
}

/// The figures the comparisons of an experiment show: [`CASE_FIGURES`], then the flows'
/// when its cases ran a scenario's flows.
fn case_figures<'c>(rows: impl IntoIterator<Item = &'c CaseComparison>) -> Vec<Figure> {
    let flows = rows.into_iter().any(|c| c.comparison.rows.iter().any(|r| r.metric.is_flow()));
    CASE_FIGURES.into_iter().chain(Figure::FLOWS.into_iter().filter(|_| flows)).collect()
}

/// The comparisons of an experiment as one sheet: a row per pair, per figure its change,
/// p-value and significance.
pub fn case_comparisons_sheet(rows: &[CaseComparison]) -> Sheet {
    let figures = case_figures(rows);
    let mut header: Vec<String> =
        ["factor", "from", "to", "other levels", "from case", "to case", "phase"].map(String::from).to_vec();
    for f in &figures {
        header.extend([
            format!("{}_change_percent", f.name()),
            format!("{}_p_value", f.name()),
            format!("{}_significant", f.name()),
        ]);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut sheet = Sheet::new("comparisons", &header);
    for c in rows {
        let mut cells: Vec<Cell> = [&c.factor, &c.from, &c.to, &c.others, &c.from_case, &c.to_case]
            .into_iter()
            .map(|t| Cell::from(t.as_str()))
            .collect();
        cells.push(Cell::from(c.phase.clone().unwrap_or_default()));
        for &f in &figures {
            let ch = case_change(c, f);
            cells.push(Cell::from(ch.and_then(|x| x.percent)));
            cells.push(Cell::from(ch.and_then(|x| x.p_value)));
            cells.push(ch.map_or(Cell::Empty, Change::significance_cell));
        }
        sheet.push(cells);
    }
    sheet
}

/// The comparisons along each factor as text tables (change from the factor's first level;
/// `*` marks a significant change).
pub fn case_comparisons_text(factors: &[String], rows: &[CaseComparison]) -> String {
    let mut out = String::new();
    for factor in factors {
        let title = format!(
            "Comparison along {factor} (% change from its first level, the baseline, to each other; * significant, as `barrage compare` tests)"
        );
        let rows: Vec<&CaseComparison> = rows.iter().filter(|c| &c.factor == factor).collect();
        out.push('\n');
        out.push_str(&comparisons_table(&title, &rows));
    }
    out
}

/// Pairs compared as one text table under `title`: a row per pair (`fast → slow (TC0 → TC2,
/// measure)`, or `a → b (TC3)` for one case in two runs) with the other levels, a column per
/// figure with its % change, `*` where significant.
pub fn comparisons_table(title: &str, rows: &[&CaseComparison]) -> String {
    let figures = case_figures(rows.iter().copied());
    let mut align = vec![Align::Left, Align::Left];
    align.extend(std::iter::repeat_n(Align::Right, figures.len()));
    let mut t = Table::new(&align);
    let mut head = vec!["".to_string(), "other levels".to_string()];
    head.extend(figures.iter().map(|f| f.name().to_string()));
    t.row(head);
    for c in rows {
        let phase = c.phase.as_ref().map_or(String::new(), |p| format!(", {p}"));
        let cases = match c.from_case == c.to_case {
            true => c.from_case.clone(),
            false => format!("{} → {}", c.from_case, c.to_case),
        };
        // The row says itself what it is built on, as every table must: not only a note.
        let mark = match (unfit(c, |c| &c.failures), unfit(c, |c| &c.workloads)) {
            (Some(_), _) => "  FAILED",
            (None, Some(_)) => "  WORKLOAD",
            (None, None) => "",
        };
        let mut cells = vec![format!("{} → {} ({cases}{phase}){mark}", c.from, c.to), c.others.clone()];
        cells.extend(figures.iter().map(|f| case_change(c, *f).map_or("-".into(), starred)));
        t.row(cells);
    }
    let mut out = format!("{title}\n");
    out.push_str(&t.to_text());
    if rows.iter().any(|c| case_change(c, Figure::P50).is_some_and(|ch| ch.untested == Some(NoTest::TooFewIntervals))) {
        out.push_str(&format!("(some pairs had under {MIN_INTERVALS} full one-second intervals: no significance test for them; run longer or repeat more)\n"));
    }
    for c in rows {
        if let Some(why) = unfit(c, |c| &c.failures) {
            out.push_str(&format!(
                "({} → {}: no significance test, built on failure: {why})\n",
                c.from_case, c.to_case
            ));
        }
        if let Some(why) = unfit(c, |c| &c.workloads) {
            out.push_str(&format!(
                "({} → {}: no significance test, not the same workload: {why})\n",
                c.from_case, c.to_case
            ));
        }
    }
    out
}

/// Why a pair's runs cannot be compared, from its comparison's `failures` or `workloads`.
fn unfit(c: &CaseComparison, reasons: fn(&Comparison) -> &Vec<Option<String>>) -> Option<&String> {
    reasons(&c.comparison).first().and_then(Option::as_ref)
}

/// The comparison as a table: metric, baseline, then value and change per run.
pub fn comparison_sheet(c: &Comparison) -> Sheet {
    let mut header = vec!["metric".to_string(), c.labels[0].clone()];
    for label in &c.labels[1..] {
        header.extend([
            label.clone(),
            format!("{label} change %"),
            format!("{label} p-value"),
            format!("{label} significant"),
        ]);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut sheet = Sheet::new("comparison", &header);
    for row in &c.rows {
        let mut cells = vec![Cell::from(row.metric.name()), Cell::from(row.baseline)];
        for ch in &row.changes {
            cells.extend([
                Cell::from(ch.value),
                Cell::from(ch.percent),
                Cell::from(ch.p_value),
                ch.significance_cell(),
            ]);
        }
        sheet.push(cells);
    }
    for r in &c.resources {
        let mut cells = vec![Cell::from(r.name()), Cell::from(r.values[0])];
        for i in 1..r.values.len() {
            cells.extend([Cell::from(r.values[i]), Cell::from(r.change(i)), Cell::Empty, Cell::Empty]);
        }
        sheet.push(cells);
    }
    sheet
}

/// The comparison for people. `runs` give the interval counts of a comparison too short
/// to test.
pub fn comparison_text(c: &Comparison, runs: &[(String, RunSummary)]) -> String {
    use crate::text::{Align, Table};
    let mut align = vec![Align::Left, Align::Right];
    align.extend(std::iter::repeat_n([Align::Right, Align::Right, Align::Left], c.labels.len() - 1).flatten());
    let mut t = Table::new(&align);
    let mut head = vec!["metric".to_string(), c.labels[0].clone()];
    for label in &c.labels[1..] {
        head.extend([label.clone(), "change".into(), "".into()]);
    }
    t.row(head);
    for row in &c.rows {
        let mut cells = vec![row.metric.name().to_string(), show(row.metric, row.baseline)];
        for ch in &row.changes {
            let change = ch.percent.map_or("-".to_string(), |p| format!("{p:+.1}%"));
            // Figures without per-interval samples are never tested: the note says so.
            let verdict = if ch.untested == Some(NoTest::NoSamples) { String::new() } else { ch.verdict() };
            cells.extend([show(row.metric, ch.value), change, verdict]);
        }
        t.row(cells);
    }
    for r in &c.resources {
        let what = if r.memory { "peak mem" } else { "cpu" };
        let mut cells = vec![format!("{} {what}", r.process), r.show(r.values[0])];
        for i in 1..r.values.len() {
            let change = r.change(i).map_or("-".to_string(), |p| format!("{p:+.1}%"));
            cells.extend([r.show(r.values[i]), change, String::new()]);
        }
        t.row(cells);
    }
    let mut out = format!("Comparison against {} (the baseline)\n", c.labels[0]);
    out.push_str(&t.to_text());
    let tested = c.rows.iter().flat_map(|r| &r.changes).any(|ch| ch.p_value.is_some());
    if tested {
        out.push_str(&format!(
            "(significant: Mann-Whitney U over one-second intervals, p < {ALPHA} over all metrics tested (Bonferroni), and a change of at least {:.0}%; success, errors, mean and max are not tested; latency is corrected; cpu is the mean % of one core, not tested)\n",
            c.noise * 100.0
        ));
    } else {
        out.push_str("(nothing was tested for significance; latency is corrected; cpu is the mean % of one core)\n");
    }
    if let Some(counts) = too_short(runs) {
        out.push_str(&format!(
            "(no test: fewer than {MIN_INTERVALS} full one-second intervals in a run ({counts}); run longer to test the changes)\n"
        ));
    }
    for (label, why) in c.labels[1..].iter().zip(&c.failures) {
        if let Some(why) = why {
            out.push_str(&format!("(no test for {label}: built on failure, {why}; its figures are not a result)\n"));
        }
    }
    for (label, why) in c.labels[1..].iter().zip(&c.workloads) {
        if let Some(why) = why {
            out.push_str(&format!("(no test for {label}: not the same workload as the baseline: {why})\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::summary::IntervalRow;

    #[test]
    fn watched_processes_cpu_and_memory_are_compared_too() {
        let with = |cpu: f64, kib: u64| {
            let mut s = RunSummary::default();
            s.processes.push(barrage_metrics::ProcessSummary {
                name: "nginx".into(),
                cpu_mean_percent: cpu,
                rss_max_kib: kib,
                ..Default::default()
            });
            s
        };
        let runs = [
            ("a".to_string(), with(40.0, 1024)),
            ("b".to_string(), with(60.0, 2048)),
            ("c".to_string(), RunSummary::default()),
        ];
        let c = compare(&runs, 0.05);
        assert_eq!(c.resources.len(), 2);
        assert_eq!(c.resources[0].values, [Some(40.0), Some(60.0), None]);
        assert_eq!(c.resources[1].change(1), Some(100.0));
        let text = comparison_text(&c, &runs);
        assert!(text.contains("nginx cpu") && text.contains("+50.0%") && text.contains("nginx peak mem"), "{text}");
        assert!(text.contains("2.00 MiB"), "{text}");
        let sheet = comparison_sheet(&c);
        assert!(sheet.rows.iter().any(|r| r[0] == Cell::from("nginx_peak_rss_kib")));
    }

    /// `run` with a workload: `new` and `repeat` requests, the repeats' `misses` answered
    /// by the origin.
    fn cache_run(p50_ms: f64, new: u64, repeat: u64, misses: u64) -> RunSummary {
        let mut s = run(p50_ms, 100.0, 8);
        let w = barrage_metrics::recorder::Workload {
            new,
            repeat,
            new_judged: new,
            repeat_judged: repeat,
            false_misses: misses,
            stamped: new + repeat,
            ..Default::default()
        };
        s.workload = barrage_metrics::summary::WorkloadSummary::of(&w, true);
        s
    }

    /// Two runs that asked for the same hits and got them far apart are not compared for
    /// significance (the change may be the cache's doing), nor a run that did not get what
    /// it asked for; a hit against a miss, asked as such, is the comparison itself.
    #[test]
    fn runs_of_different_workloads_have_no_significant_change() {
        let label = |s: RunSummary, l: &str| (l.to_string(), s);
        let same_ask = [label(cache_run(10.0, 50, 50, 0), "a"), label(cache_run(20.0, 50, 50, 40), "b")];
        let c = compare(&same_ask, 0.05);
        let p50 = c.rows.iter().find(|r| r.metric == Figure::P50).unwrap();
        assert!(!p50.changes[0].significant);
        assert_eq!(p50.changes[0].verdict(), "no test: not the same workload");
        let why = c.workloads[0].as_deref().unwrap();
        assert!(why.contains("this run is not the workload it asked for"), "{why}");
        // Within its tolerance each, but 10 points apart: 45% and 55% hits of 50% asked
        // would each be marked; 49% against 51% are comparable.
        let close = [label(cache_run(10.0, 50, 50, 1), "a"), label(cache_run(20.0, 50, 50, 0), "b")];
        assert_eq!(compare(&close, 0.05).workloads, [None]);
        // A cache hit (100% asked) against a miss (0% asked): compared.
        let table_ix = [label(cache_run(10.0, 0, 100, 0), "hit"), label(cache_run(20.0, 100, 0, 0), "miss")];
        let c = compare(&table_ix, 0.05);
        assert_eq!(c.workloads, [None]);
        assert!(c.rows.iter().find(|r| r.metric == Figure::P50).unwrap().changes[0].significant);
        let text = comparison_text(&compare(&same_ask, 0.05), &same_ask);
        assert!(text.contains("(no test for b: not the same workload as the baseline: this run is not"), "{text}");
    }

    /// Found trying seed 000's study: a case whose every request was refused came out as a
    /// significant fall in latency. Built on failure, a run is not tested, and its row and
    /// the notes say so.
    #[test]
    fn a_run_built_on_failure_has_no_significant_change_and_says_so() {
        let mut refused = run(4.0, 0.0, 8);
        (refused.requests.ok, refused.success_ratio) = (0, 0.0);
        let runs = [("backend".to_string(), run(10.0, 100.0, 8)), ("dead".to_string(), refused)];
        let c = compare(&runs, 0.05);
        assert_eq!(c.failures, [Some("this run: all 100 requests failed".to_string())]);
        assert_eq!(c.workloads, [None]);
        for row in &c.rows {
            assert!(!row.changes[0].significant, "{:?}", row.metric);
        }
        let p50 = c.rows.iter().find(|r| r.metric == Figure::P50).unwrap();
        assert_eq!(p50.changes[0].verdict(), "no test: built on failure");
        let text = comparison_text(&c, &runs);
        assert!(
            text.contains(
                "(no test for dead: built on failure, this run: all 100 requests failed; its figures are not a result)"
            ),
            "{text}"
        );
        // The baseline's failure counts too.
        assert_eq!(
            compare(&[runs[1].clone(), runs[0].clone()], 0.05).failures[0].as_deref(),
            Some("the baseline: all 100 requests failed")
        );
        let pair = CaseComparison {
            factor: "server".into(),
            from: "backend".into(),
            to: "dead".into(),
            others: String::new(),
            from_case: "TC0".into(),
            to_case: "TC1".into(),
            phase: None,
            comparison: c,
        };
        // A case's repeats pooled: one repeat of three under half fails the row, as its
        // matrix says, though the pooled mean does not.
        let mut poor = run(10.0, 100.0, 8);
        (poor.requests.ok, poor.success_ratio) = (30, 0.3);
        let repeats = [run(10.0, 100.0, 8), run(10.0, 100.0, 8), poor];
        let pooled = pool(repeats.to_vec());
        assert_eq!(failure_of(std::slice::from_ref(&pooled)), None, "the mean hides it");
        let judged = [Unfit::default(), Unfit::of(&repeats, &[])];
        let c2 = compare_judged(&[runs[0].clone(), ("poor".to_string(), pooled)], 0.05, &judged);
        assert_eq!(c2.failures, [Some("this run: only 30.0% succeeded".to_string())]);
        let table = comparisons_table("t", &[&pair]);
        assert!(table.contains("backend → dead (TC0 → TC1)  FAILED"), "{table}");
        assert!(!table.contains('*'), "{table}");
        assert!(
            table.contains("(TC0 → TC1: no significance test, built on failure: this run: all 100 requests failed)"),
            "{table}"
        );
    }

    fn run(p50_ms: f64, throughput: f64, seconds: u64) -> RunSummary {
        let mut s = RunSummary { throughput_per_sec: Some(throughput), success_ratio: 1.0, ..Default::default() };
        s.requests.total = 100;
        s.requests.ok = 100;
        s.latency.corrected.p50_us = (p50_ms * 1000.0) as u64;
        s.latency.corrected.p99_us = (p50_ms * 2000.0) as u64;
        s.intervals = (0..seconds)
            .map(|i| {
                let jitter = (i % 3) as f64 * 0.01;
                IntervalRow {
                    second: i,
                    length_s: 1.0,
                    ok: 10,
                    throughput_per_sec: throughput * (1.0 + jitter),
                    p50_us: (p50_ms * 1000.0 * (1.0 + jitter)) as u64,
                    p90_us: (p50_ms * 1500.0 * (1.0 + jitter)) as u64,
                    p99_us: (p50_ms * 2000.0 * (1.0 + jitter)) as u64,
                    ..Default::default()
                }
            })
            .collect();
        s
    }

    #[test]
    fn a_doubled_latency_is_significant_and_crosses_a_bound() {
        let runs = [("a".into(), run(20.0, 1000.0, 8)), ("b".into(), run(40.0, 1000.0, 8))];
        let c = compare(&runs, 0.02);
        let p99 = c.rows.iter().find(|r| r.metric == Metric::P99).unwrap();
        assert_eq!(p99.baseline, 40_000.0);
        assert!((p99.changes[0].percent.unwrap() - 100.0).abs() < 1e-9);
        assert!(p99.changes[0].significant);
        let tput = c.rows.iter().find(|r| r.metric == Metric::Throughput).unwrap();
        assert!(!tput.changes[0].significant, "same throughput: {tput:?}");
        let bound: FailIf = "p99>+10%".parse().unwrap();
        let crossed = bound.crossed(&c);
        assert_eq!(crossed.iter().map(|(l, ch)| (*l, ch.percent)).collect::<Vec<_>>(), [("b", Some(100.0))]);
        let line = bound.failure(crossed[0].0, crossed[0].1);
        assert!(
            line.starts_with(
                "FAIL  p99>+10%: b changed +100.0%, decided on the size of the change alone; the test found it significant (p="
            ),
            "{line}"
        );
        assert!("throughput<-5%".parse::<FailIf>().unwrap().crossed(&c).is_empty());
        let text = comparison_text(&c, &runs);
        assert!(text.contains("+100.0%") && text.contains("significant (p="), "{text}");
        assert!(!text.contains("no test"), "{text}");
        let sheet = comparison_sheet(&c);
        assert_eq!(sheet.header, ["metric", "a", "b", "b change %", "b p-value", "b significant"]);
        assert_eq!(sheet.rows.len(), COMPARED.len());
    }

    #[test]
    fn runs_too_short_to_test_say_so_everywhere_and_a_bound_says_how_it_decided() {
        let runs = [("a".into(), run(20.0, 1000.0, 1)), ("b".into(), run(30.0, 1000.0, 2))];
        let c = compare(&runs, 0.05);
        let p50 = &c.rows.iter().find(|r| r.metric == Metric::P50).unwrap().changes[0];
        assert_eq!((p50.p_value, p50.untested, p50.significant), (None, Some(NoTest::TooFewIntervals), false));
        assert_eq!(p50.verdict(), "no test: fewer than 5 full intervals");
        let mean = &c.rows.iter().find(|r| r.metric == Metric::Mean).unwrap().changes[0];
        assert_eq!(mean.untested, Some(NoTest::NoSamples));
        let text = comparison_text(&c, &runs);
        assert!(text.contains("no test: fewer than 5 full intervals") && text.contains("(a 1, b 2)"), "{text}");
        assert!(!text.contains("Mann-Whitney") && !text.contains("not significant"), "{text}");
        let sheet = comparison_sheet(&c);
        let p50_row = sheet.rows.iter().find(|r| r[0] == Cell::from("p50")).unwrap();
        assert_eq!(p50_row[5], Cell::from("no test: fewer than 5 full intervals"));
        let bound: FailIf = "p50>+10%".parse().unwrap();
        let (label, change) = bound.crossed(&c)[0];
        assert_eq!(
            bound.failure(label, change),
            "FAIL  p50>+10%: b changed +50.0%, decided on the size of the change alone; no test: fewer than 5 full intervals"
        );
    }

    #[test]
    fn bad_bounds_name_the_token() {
        for (text, want) in [
            ("p99", "no < or >"),
            ("p98>+10%", "unknown metric 'p98'"),
            ("p99>10", "'10' is not a signed"),
            ("throughput<-101%", "the bound must be above -100%"),
            ("p99<-100%", "above -100%"),
        ] {
            let e = text.parse::<FailIf>().unwrap_err();
            assert!(e.contains(want) && e.starts_with(&format!("invalid --fail-if '{text}'")), "{e}");
        }
    }
}
