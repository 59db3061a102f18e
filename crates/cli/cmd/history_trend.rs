//! `barrage history trend`, `regressions` and `check`: a figure over each series' runs with
//! its change points, every change for the worse since a time, and the CI gate.

use super::history::{distinct_labels, label_line, show_filter};
use crate::Exit;
use anyhow::bail;
use barrage_history::analysis::{gate, sense, trend, Change, Gate, Trend};
use barrage_history::changepoint::{Options, Sense, Verdict};
use barrage_history::entry::EXTRA_FIGURES;
use barrage_history::store::{now_ms, Series};
use barrage_history::Store;
use barrage_report::{utc, Cell, Figure, Sheet, SloResult, TrendChart};
use std::path::Path;
use std::time::Duration;

/// The figures `check` judges when none is named.
const CHECKED: [&str; 3] = ["p99", "throughput", "error_ratio"];

/// A figure's value for people: in its unit when it is one of [`Figure`]'s.
fn show(figure: &str, v: f64) -> String {
    figure.parse::<Figure>().map_or_else(|_| format!("{v:.2}"), |f| f.show(v))
}

/// Refuses a figure the history never keeps (a typo would otherwise find nothing).
fn known(figure: &str) -> anyhow::Result<()> {
    let extra = |e: &&str| e.strip_suffix("NAME").map_or(figure == *e, |stem| figure.starts_with(stem));
    if figure.parse::<Figure>().is_ok() || EXTRA_FIGURES.iter().any(extra) {
        return Ok(());
    }
    let names: Vec<&str> = Figure::ALL.iter().map(|f| f.name()).chain(EXTRA_FIGURES).collect();
    bail!("unknown figure '{figure}': expected one of {}", names.join(", "))
}

/// The series a command reads, and how their change points are found.
pub struct Scope<'a> {
    pub store: &'a Store,
    /// `--where`.
    pub filter: &'a [(String, Option<String>)],
    pub opts: Options,
}

impl<'a> Scope<'a> {
    /// Otava's defaults, with `noise` (`--noise`) as the smallest change kept.
    pub fn new(store: &'a Store, filter: &'a [(String, Option<String>)], noise: f64) -> Self {
        Scope { store, filter, opts: Options { min_magnitude: noise, ..Options::default() } }
    }

    /// The series `--where` selects; none is an error (a typo would otherwise find nothing).
    fn series(&self) -> anyhow::Result<Vec<Series>> {
        let all = self.store.matching(self.filter)?;
        if all.is_empty() {
            bail!(
                "no series in the history matches {}",
                if self.filter.is_empty() { "(the history is empty)".into() } else { show_filter(self.filter) }
            );
        }
        Ok(all)
    }
}

/// `history trend FIGURE`.
pub fn trend_cmd(
    o: &mut String,
    scope: &Scope,
    figure: &str,
    last: usize,
    html: Option<&Path>,
    json: bool,
) -> anyhow::Result<Exit> {
    known(figure)?;
    let mut trends = Vec::new();
    for s in scope.series()? {
        let t = trend(scope.store, &s, figure, last, &scope.opts)?;
        if !t.points.is_empty() {
            trends.push(t);
        }
    }
    if let Some(path) = html {
        let charts: Vec<TrendChart> = trends.iter().map(chart).collect();
        let page = barrage_report::html(&barrage_report::Page::Trend { figure, series: &charts });
        barrage_report::output::write(path, page, false, "--html")?;
    }
    if json {
        say!(o, "{}", serde_json::to_string_pretty(&trends)?);
        return Ok(Exit::Ok);
    }
    let labels: Vec<_> = trends.iter().map(|t| &t.series.labels).collect();
    let keys = distinct_labels(&labels);
    for t in &trends {
        print_trend(o, t, &keys);
    }
    Ok(Exit::Ok)
}

/// The column of `figure` in sheets, and its value in that unit.
fn column(figure: &str, v: f64) -> (String, f64) {
    match figure.parse::<Figure>() {
        Ok(f) => (f.column(), f.in_column_unit(v)),
        Err(_) => (figure.to_string(), v),
    }
}

/// A trend as the HTML page's chart and table.
fn chart(t: &Trend) -> TrendChart {
    let name = column(&t.figure, 0.0).0;
    let mut sheet = Sheet::new(&format!("series {}", t.series.id), &["run", "started", &name, "note"]);
    let mut changes = Vec::new();
    for (row, p) in t.points.iter().enumerate() {
        let change = t.changes.iter().find(|c| c.run == p.run);
        let note = match (&p.failure, change) {
            (Some(why), _) => format!("not a result: {why}"),
            (None, Some(c)) => change_line(&t.figure, c),
            _ => String::new(),
        };
        if let Some(c) = change {
            changes.push((row, change_line(&t.figure, c)));
        }
        let value = column(&t.figure, p.value).1;
        sheet.rows.push(vec![
            Cell::Number(p.run as f64),
            Cell::Text(utc(p.started_ms)),
            Cell::Number(value),
            Cell::Text(note),
        ]);
    }
    // A note falls between the runs before and after it.
    let notes = t
        .annotations
        .iter()
        .map(|a| (t.points.iter().filter(|p| p.started_ms <= a.at_ms).count() as f64 - 0.5, a.text.clone()))
        .collect();
    let title = format!("series #{} {}", t.series.id, label_line(&t.series.labels, &[]));
    TrendChart { title, sheet, column: name, changes, notes }
}

fn print_trend(o: &mut String, t: &Trend, keys: &[String]) {
    let values: Vec<f64> = t.points.iter().map(|p| p.value).collect();
    say!(o, "Series #{} ({} runs shown) {}", t.series.id, t.points.len(), label_line(&t.series.labels, keys));
    let (lo, hi) = values.iter().fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    say!(
        o,
        "  {}: {} .. {}, newest {}",
        t.figure,
        show(&t.figure, lo),
        show(&t.figure, hi),
        show(&t.figure, values[values.len() - 1])
    );
    say!(o, "  {}", sparkline(&values));
    let marks: String = t
        .points
        .iter()
        .map(|p| match (t.changes.iter().any(|c| c.run == p.run), p.failure.is_some()) {
            (true, _) => '^',
            (false, true) => 'x',
            _ => ' ',
        })
        .collect();
    if marks.trim().is_empty() {
        say!(o, "  no change point (windows of 30, p <= 0.001)");
    } else {
        say!(o, "  {}   ^ change point, x not a result", marks.trim_end());
    }
    for c in &t.changes {
        say!(o, "  {}", change_line(&t.figure, c));
    }
    for a in &t.annotations {
        say!(o, "  note {}: {}", utc(a.at_ms), a.text);
    }
    say!(o,);
}

fn change_line(figure: &str, c: &Change) -> String {
    let what = match (c.regression, &c.machine) {
        (_, Some(why)) => format!("the machine's, not the system's: {why}"),
        (true, None) => "REGRESSION".to_string(),
        (false, None) => "improvement".to_string(),
    };
    format!(
        "change at run {} ({}): {} {} -> {} ({:+.1}%, p={:.2e}): {what}",
        c.run,
        utc(c.started_ms),
        figure,
        show(figure, c.point.mean_before),
        show(figure, c.point.mean_after),
        c.point.relative_change * 100.0,
        c.point.p_value
    )
}

/// The values as a line of block characters, lowest to highest.
fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let (lo, hi) = values.iter().fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    values
        .iter()
        .map(|v| if hi > lo { BARS[(((v - lo) / (hi - lo)) * 7.0).round() as usize] } else { BARS[3] })
        .collect()
}

/// `history regressions --since AGE`: every change for the worse at a run newer than AGE,
/// in every figure a series' runs have.
pub fn regressions(
    o: &mut String,
    scope: &Scope,
    figures: &[String],
    since: Duration,
    json: bool,
) -> anyhow::Result<Exit> {
    figures.iter().try_for_each(|f| known(f))?;
    let from = now_ms().saturating_sub(since.as_millis() as u64);
    let mut found: Vec<(Trend, Change)> = Vec::new();
    for s in scope.series()? {
        // Every figure its runs have: the watched servers' CPU and memory too.
        let names = scope.store.figure_names(s.id)?;
        for f in names.into_iter().filter(|f| figures.is_empty() || figures.contains(f)) {
            let t = trend(scope.store, &s, &f, usize::MAX >> 1, &scope.opts)?;
            for c in t.changes.iter().filter(|c| c.regression && c.started_ms >= from) {
                found.push((t.clone(), c.clone()));
            }
        }
    }
    if json {
        let out: Vec<_> = found
            .iter()
            .map(|(t, c)| serde_json::json!({"series": t.series, "figure": t.figure, "change": c}))
            .collect();
        say!(o, "{}", serde_json::to_string_pretty(&out)?);
    } else if found.is_empty() {
        say!(o, "no regression since {}", utc(from));
    } else {
        for (t, c) in &found {
            say!(o, "series #{} {}: {}", t.series.id, label_line(&t.series.labels, &[]), change_line(&t.figure, c));
        }
    }
    let systems = found.iter().filter(|(_, c)| c.machine.is_none()).count();
    Ok(if systems == 0 { Exit::Ok } else { Exit::Failed })
}

/// `history check`: the newest run of each series against its stable runs.
pub fn check(
    o: &mut String,
    scope: &Scope,
    figures: &[String],
    confidence: f64,
    junit: Option<&Path>,
    json: bool,
) -> anyhow::Result<Exit> {
    if !(0.5..1.0).contains(&confidence) {
        bail!("--confidence {confidence}: a fraction from 0.5 to below 1 (0.99)");
    }
    let figures: Vec<String> = if figures.is_empty() { CHECKED.map(String::from).to_vec() } else { figures.to_vec() };
    figures.iter().try_for_each(|f| known(f))?;
    let mut gates: Vec<Gate> = Vec::new();
    for s in scope.series()? {
        for f in &figures {
            gates.extend(gate(scope.store, &s, f, confidence, &scope.opts)?);
        }
    }
    let results: Vec<SloResult> = gates.iter().map(result).collect();
    if let Some(path) = junit {
        let xml = barrage_report::junit("barrage history check", &results, 0.0);
        std::fs::write(path, xml).map_err(|e| anyhow::anyhow!("--junit {}: {e}", path.display()))?;
    }
    if json {
        say!(o, "{}", serde_json::to_string_pretty(&gates)?);
    } else {
        for (g, r) in gates.iter().zip(&results) {
            let mark = if r.pass { "ok  " } else { "FAIL" };
            say!(o, "{mark} series #{} {}: {}", g.series.id, label_line(&g.series.labels, &[]), r.actual);
        }
    }
    Ok(if results.iter().all(|r| r.pass) { Exit::Ok } else { Exit::Failed })
}

/// A gate as a JUnit test case: the run, its value and the interval it was judged against.
fn result(g: &Gate) -> SloResult {
    let f = g.figure.as_str();
    let worse = if sense(f) == Sense::LowerIsBetter { "above" } else { "below" };
    let actual = match &g.check.interval {
        Some(i) => format!(
            "run {}: {} {} against {} .. {} of the {} runs before it ({worse} is worse)",
            g.run,
            f,
            show(f, g.check.newest),
            show(f, i.lower),
            show(f, i.upper),
            i.points
        ),
        None => format!("run {}: {} {}, too few runs before it to judge", g.run, f, show(f, g.check.newest)),
    };
    let outside = g.check.interval.is_some_and(|i| !(i.lower..=i.upper).contains(&g.check.newest));
    let actual = if outside && g.check.verdict == Verdict::Within {
        format!("{actual}; outside, by no more than --noise of their mean")
    } else {
        actual
    };
    let actual = match &g.machine {
        Some(why) => format!("{actual}; the machine's, not the system's: {why}"),
        None => actual,
    };
    SloResult { slo: format!("series {} {f} not worse", g.series.id), actual, pass: !g.fails() }
}
