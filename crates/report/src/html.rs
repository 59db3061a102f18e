//! The HTML report: one self-contained page (scripts, styles and data inline; nothing is
//! fetched, which the page's Content-Security-Policy enforces) with interactive charts drawn
//! by [uPlot](https://github.com/leeoniya/uPlot), embedded from `assets/` (see its README).
//!
//! The page has three parts:
//! - text rendered here: the key figures, warnings, events and tables, readable without
//!   JavaScript (a run's flows, server replies, phases, steps, and requests by name and by
//!   method are the tables of the text report, with the same cells);
//! - the data, as JSON in `<script type="application/json" id="barrage-data">` (every `<`
//!   written `\u003c`, so no string in it can end the element);
//! - `assets/report.js`, which turns that data into uPlot charts (hover for values, drag to
//!   zoom the time axis, click the legend to hide a series) and then writes a self-check,
//!   `{"charts": {id: {"series", "points", "drawn", "markers"}}, "errors": [...]}`, into
//!   `<pre id="barrage-selfcheck" hidden>` for tests run in a headless browser.
//!
//! # The data of a run
//! `{"page": "run", "summary", "series", "spectrum", "scatter"}`: `summary` is the
//! [`RunSummary`] as in the JSON report, floats rounded to 6 significant digits, without
//! what the page draws from the other keys or shows only as tables (`intervals`,
//! `latency_spectrum`, `by_name`, `by_method`, `flows`, `flows_total`, `replies`). `series` holds the
//! intervals column by column (`t` their start in seconds, `length_s`, `due` (null when
//! the results files do not list the schedule), `sent`, `ok`,
//! `errors`, latencies in ms with 3 decimals: `p50_ms`,
//! `p90_ms`, `p99_ms`, `max_ms`, `service_p50_ms`, `service_p99_ms`; `hit_ratio` and
//! `byte_hit_ratio` (null when unknown); `host_cpu_percent`; and maps of columns by name:
//! `phase_mean_ms`, `backends` (responses), `cpu_percent`, `rss_kib`; with trace context,
//! `exemplars`: each interval's three slowest sampled requests, `[[ms, ended_s, trace_id,
//! span_id, url], ...]`, `url` (filled from [`HtmlOptions::trace_url`]) only with one). `spectrum` is
//! `{"corrected"|"service": {"nines": [..], "ms": [..]}}`, the percentile spectrum with
//! percentiles as nines (-log10(1 - p/100); 100% dropped). `scatter` is `[[t_s, latency_ms,
//! ok 0/1], ...]` sorted by time, from [`RunSummary::scatter`].
//!
//! Charts of a run, by self-check id: `latency`, `scatter`, `distribution`, `throughput`,
//! `phases`, `phases-run`, `status`, `cache-ratio`, `cache-latency`, `backends` (two
//! backends or more), `cpu` and `memory` (with host samples). A chart without data is left
//! out. The latency chart marks the p99 of each interval with exemplars (a ring, its series
//! `p99 traced`; `exemplars` in its self-check counts them) and lists an interval's
//! exemplars under the chart when hovered or clicked. Time charts mark the events (dashed) and, in a stepped run, the start of each step
//! (dotted grey); `markers` counts those drawn. A curve has `curve-latency`,
//! `curve-throughput`, `curve-errors`; a comparison
//! `compare-distribution`, `compare-p99`, `compare-throughput`; an experiment
//! `exp-throughput_per_sec`, `exp-p50_ms`, `exp-p99_ms`.
//!
//! ```
//! use barrage_metrics::summary::{LatencyStats, RunSummary};
//!
//! let mut s = RunSummary { version: 1, mode: barrage_metrics::file::Mode::Closed, ..Default::default() };
//! s.urls.push("http://127.0.0.1:8080/</script>".into());
//! s.latency.corrected = LatencyStats { count: 10, p50_us: 1_200, ..Default::default() };
//! let page = barrage_report::html(&barrage_report::Page::Run(&s));
//! assert!(page.starts_with("<!DOCTYPE html>"));
//! assert!(page.contains(r#"<script type="application/json" id="barrage-data">"#));
//! assert!(page.contains(r#"8080/\u003c/script>"#)); // in the data
//! assert!(page.contains("8080/&lt;/script&gt;")); // in the text
//! ```

use crate::export::{Cell, Sheet};
use crate::sections::{self, rate_or_count, thousands, Section};
use crate::text::{utc, Align};
use crate::traces::TraceUrl;
use barrage_metrics::events::EventSummary;
use barrage_metrics::file::Mode;
use barrage_metrics::recorder::RequestPoint;
use barrage_metrics::summary::{ExemplarRow, IntervalRow, RunSummary};
use barrage_metrics::units::fmt_us;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::fmt::Write;

const UPLOT_JS: &str = include_str!("../assets/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uPlot.min.css");
const BOOT_JS: &str = include_str!("../assets/boot.js");
const REPORT_JS: &str = include_str!("../assets/report.js");
const REPORT_CSS: &str = include_str!("../assets/report.css");

/// What an HTML report shows.
#[derive(Clone, Copy, Debug)]
pub enum Page<'a> {
    /// One run, or several merged.
    Run(&'a RunSummary),
    /// A sweep or a capacity search: one row per level or probe.
    Curve {
        /// The page's title ("sweep", "capacity search", ...).
        title: &'a str,
        /// One row per level or probe, with the columns `throughput_per_sec`, `p50_ms`,
        /// `p90_ms` (may be absent), `p99_ms`, `success_percent`, `errors`, and `x`.
        sheet: &'a Sheet,
        /// The column of the offered load: `offered` for a sweep, `rate_per_sec` for a
        /// capacity search. Rows are drawn in its order.
        x: &'a str,
        /// Latency objectives, (label, ms), drawn as horizontal lines.
        slo_ms: &'a [(String, f64)],
        /// The knee's x, drawn as a vertical line.
        knee: Option<f64>,
        /// The capacity found, drawn as a vertical line.
        capacity: Option<f64>,
    },
    /// Runs side by side: their latency spectra and time series overlaid, and the
    /// comparison table ([`crate::compare::comparison_sheet`]).
    Compare {
        /// The runs, labelled; the first is the baseline.
        runs: &'a [(String, RunSummary)],
        /// The comparison table.
        table: &'a Sheet,
    },
    /// An experiment: its matrix and comparisons as tables, and one small bar chart per
    /// metric (throughput, p50, p99) with a bar per case.
    Experiment {
        /// The page's title (the experiment's name).
        title: &'a str,
        /// A row per case: `case`, one column per factor, `throughput_per_sec`, `p50_ms`,
        /// `p99_ms`, ...
        matrix: &'a Sheet,
        /// The comparisons between cases.
        comparisons: &'a Sheet,
    },
    /// A figure over the runs of one or more series of the run history, a chart and a table
    /// each, change points and notes marked.
    Trend {
        /// The figure's name (`p99`, `throughput`).
        figure: &'a str,
        /// A chart per series.
        series: &'a [TrendChart],
    },
    /// A table without charts (`testbed bench`, `run --phases`).
    Table {
        /// The page's title.
        title: &'a str,
        /// The table.
        sheet: &'a Sheet,
    },
}

/// One series of a [`Page::Trend`].
#[derive(Clone, Debug)]
pub struct TrendChart {
    /// What the series is (its labels).
    pub title: String,
    /// A row per run, oldest first: `run`, `started`, the figure's column (its
    /// [`crate::Figure::column`] unit), and `note` (why it is not a result, a change).
    pub sheet: Sheet,
    /// The figure's column in the sheet.
    pub column: String,
    /// Change points: the row where each starts, and what it is.
    pub changes: Vec<(usize, String)>,
    /// Notes on the time line (`history annotate`): where they fall, in rows (2.5: between
    /// the third and fourth runs), and what they say.
    pub notes: Vec<(f64, String)>,
}

/// How a page is rendered beyond what it shows: what the reader's flags ask for.
#[derive(Clone, Debug, Default)]
pub struct HtmlOptions {
    /// `--trace-url`: a run's trace ids become links through this template; without it
    /// they are text to copy.
    pub trace_url: Option<TraceUrl>,
    /// A live page (`barrage collect`'s, of the run so far): the browser loads it again
    /// after this many seconds, and its title says it is live.
    pub refresh_s: Option<u32>,
}

/// The page as one self-contained HTML document, with the default [`HtmlOptions`].
pub fn html(page: &Page) -> String {
    html_with(page, &HtmlOptions::default())
}

/// The page as one self-contained HTML document, rendered as `options` say.
pub fn html_with(page: &Page, options: &HtmlOptions) -> String {
    let links = options.trace_url.as_ref();
    let (title, (before, after), data) = match page {
        Page::Run(s) => ("barrage run".to_string(), (run_body(s), run_tables(s, links)), run_data(s, links)),
        Page::Curve { title, sheet, x, slo_ms, knee, capacity } => {
            let data = json!({
                "page": "curve",
                "title": title,
                "x": x,
                "sheet": sheet_data(sheet),
                "slo_ms": slo_ms.iter().map(|(label, ms)| json!({"label": label, "ms": sig(*ms)})).collect::<Vec<_>>(),
                "knee": knee.map_or(Value::Null, sig),
                "capacity": capacity.map_or(Value::Null, sig),
            });
            (format!("barrage {title}"), curve_body(title, sheet, x, slo_ms, *knee, *capacity), data)
        }
        Page::Compare { runs, table } => {
            let data = json!({
                "page": "compare",
                "runs": runs.iter().map(|(label, s)| compare_run(label, s)).collect::<Vec<_>>(),
                "table": sheet_data(table),
            });
            ("barrage comparison".to_string(), compare_body(runs, table), data)
        }
        Page::Experiment { title, matrix, comparisons } => {
            let data = json!({
                "page": "experiment",
                "title": title,
                "matrix": sheet_data(matrix),
                "comparisons": sheet_data(comparisons),
            });
            (format!("barrage experiment {title}"), experiment_body(title, matrix, comparisons), data)
        }
        Page::Trend { figure, series } => {
            let data = json!({
                "page": "trend",
                "figure": figure,
                "series": series.iter().map(|c| json!({
                    "title": c.title,
                    "column": c.column,
                    "sheet": sheet_data(&c.sheet),
                    "changes": c.changes.iter().map(|(row, what)| json!({"row": row, "label": what})).collect::<Vec<_>>(),
                    "notes": c.notes.iter().map(|(at, what)| json!({"at": at, "label": what})).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            });
            (format!("barrage history trend {figure}"), trend_body(figure, series), data)
        }
        Page::Table { title, sheet } => {
            let data = json!({ "page": "table", "title": title, "sheet": sheet_data(sheet) });
            let head = format!("<header>\n<h1>barrage {}</h1>\n</header>\n", esc(title));
            (format!("barrage {title}"), (head, table(title, sheet)), data)
        }
    };
    match options.refresh_s {
        Some(s) => document(
            &format!("{title} (live)"),
            &format!("<meta http-equiv=\"refresh\" content=\"{s}\">\n"),
            &before,
            &after,
            &data,
        ),
        None => document(&title, "", &before, &after, &data),
    }
}

/// The whole document: `head` (more of it), `before` and `after` the charts, the assets and
/// `data`.
fn document(title: &str, head: &str, before: &str, after: &str, data: &Value) -> String {
    let data = serde_json::to_string(data).expect("the page data always serialises: its map keys are strings");
    let mut out =
        String::with_capacity(UPLOT_JS.len() + REPORT_JS.len() + before.len() + after.len() + data.len() + 8192);
    // Nothing may be fetched: every script and style is inline, and there are no images.
    let csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"generator\" content=\"barrage {version}\">\n<title>{title}</title>\n{head}\
         <style>\n{UPLOT_CSS}\n{REPORT_CSS}</style>\n<script>\n{BOOT_JS}</script>\n</head>\n<body>\n\
         <div class=\"page\">\n{before}<div id=\"charts\"></div>\n{after}\
         <noscript><p>The charts need JavaScript; the figures above do not.</p></noscript>\n\
         <footer>Written by barrage {version}. Charts by uPlot (MIT licence). \
         Everything is in this file: it opens without a network.</footer>\n</div>\n\
         <pre id=\"barrage-selfcheck\" hidden></pre>\n\
         <script type=\"application/json\" id=\"barrage-data\">",
        version = env!("CARGO_PKG_VERSION"),
        title = esc(title),
    );
    // `<` escaped: a `</script>` or `<!--` in a URL or a command cannot end the element.
    out.push_str(&data.replace('<', "\\u003c"));
    out.push_str("</script>\n<script>\n");
    out.push_str(UPLOT_JS);
    out.push_str("\n</script>\n<script>\n");
    out.push_str(REPORT_JS);
    out.push_str("</script>\n</body>\n</html>\n");
    out
}

// ---- data ----------------------------------------------------------------------------

/// `x` rounded to `decimals` places; integral values as JSON integers (shorter), non-finite
/// ones as null.
fn num(x: f64, decimals: i32) -> Value {
    if !x.is_finite() {
        return Value::Null;
    }
    let scale = 10f64.powi(decimals);
    let r = (x * scale).round() / scale;
    if r.fract() == 0.0 && r.abs() < 9e15 {
        Value::from(r as i64)
    } else {
        Value::from(r)
    }
}

/// `x` rounded to 6 significant digits.
fn sig(x: f64) -> Value {
    if x == 0.0 || !x.is_finite() {
        return num(x, 0);
    }
    let magnitude = x.abs().log10().floor() as i32;
    num(x, (5 - magnitude).clamp(0, 15))
}

/// µs as ms with 3 decimals (exact).
fn ms(us: f64) -> Value {
    num(us / 1e3, 3)
}

/// Rounds every float in `v` to 6 significant digits.
fn round_floats(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => *v = sig(n.as_f64().unwrap_or(f64::NAN)),
        Value::Array(a) => a.iter_mut().for_each(round_floats),
        Value::Object(m) => m.values_mut().for_each(round_floats),
        _ => {}
    }
}

fn run_data(s: &RunSummary, links: Option<&TraceUrl>) -> Value {
    let mut summary = serde_json::to_value(s).expect("a RunSummary always serialises: its map keys are strings");
    if let Value::Object(m) = &mut summary {
        for drawn_or_unused in
            ["intervals", "latency_spectrum", "by_name", "by_method", "flows", "flows_total", "replies"]
        {
            m.remove(drawn_or_unused);
        }
    }
    round_floats(&mut summary);
    let mut series = series(&s.intervals);
    // Only a run with trace context has them: a page without says nothing of traces.
    if s.intervals.iter().any(|r| !r.exemplars.is_empty()) {
        series.insert("exemplars".into(), exemplars(&s.intervals, links));
    }
    json!({
        "page": "run",
        "summary": summary,
        "series": Value::Object(series),
        "spectrum": {
            "corrected": spectrum(&s.latency_spectrum.corrected),
            "service": spectrum(&s.latency_spectrum.service),
        },
        "scatter": scatter(&s.scatter),
    })
}

/// The intervals column by column (see the module's documentation).
fn series(rows: &[IntervalRow]) -> Map<String, Value> {
    let col = |f: &dyn Fn(&IntervalRow) -> Value| Value::Array(rows.iter().map(f).collect());
    let ratio = |r: Option<f64>| r.map_or(Value::Null, |r| num(r, 4));
    let mut m = Map::new();
    m.insert("t".into(), col(&|r| r.second.into()));
    m.insert("length_s".into(), col(&|r| num(r.length_s, 3)));
    m.insert("due".into(), col(&|r| r.due.map_or(Value::Null, Value::from)));
    m.insert("sent".into(), col(&|r| r.sent.into()));
    m.insert("ok".into(), col(&|r| r.ok.into()));
    m.insert("errors".into(), col(&|r| r.errors.into()));
    m.insert("p50_ms".into(), col(&|r| ms(r.p50_us as f64)));
    m.insert("p90_ms".into(), col(&|r| ms(r.p90_us as f64)));
    m.insert("p99_ms".into(), col(&|r| ms(r.p99_us as f64)));
    m.insert("max_ms".into(), col(&|r| ms(r.max_us as f64)));
    m.insert("service_p50_ms".into(), col(&|r| ms(r.service_p50_us as f64)));
    m.insert("service_p99_ms".into(), col(&|r| ms(r.service_p99_us as f64)));
    m.insert("hit_ratio".into(), col(&|r| ratio(r.hit_ratio)));
    m.insert("byte_hit_ratio".into(), col(&|r| ratio(r.byte_hit_ratio)));
    m.insert("host_cpu_percent".into(), col(&|r| r.host_cpu_percent.map_or(Value::Null, |c| num(c, 2))));
    m.insert("phase_mean_ms".into(), by_key(rows, |r| &r.phase_mean_us, |v| v.map_or(Value::Null, |us| ms(*us))));
    m.insert("backends".into(), by_key(rows, |r| &r.backends, |v| Value::from(v.copied().unwrap_or(0))));
    m.insert("cpu_percent".into(), by_key(rows, |r| &r.cpu_percent, |v| v.map_or(Value::Null, |c| num(*c, 2))));
    m.insert("rss_kib".into(), by_key(rows, |r| &r.rss_kib, |v| v.map_or(Value::Null, |k| Value::from(*k))));
    m
}

/// Each interval's slowest sampled requests, at most [`EXEMPLARS_SHOWN`], as `[ms, at_s,
/// trace_id, span_id]`, and the link filled from `--trace-url` fifth when there is one.
fn exemplars(rows: &[IntervalRow], links: Option<&TraceUrl>) -> Value {
    let one = |e: &ExemplarRow| {
        let mut v = vec![ms(e.latency_us as f64), num(e.ended_s, 3), json!(e.trace_id), json!(e.span_id)];
        v.extend(links.and_then(|t| t.url(&e.trace_id, &e.span_id)).map(Value::from));
        Value::Array(v)
    };
    let interval = |r: &IntervalRow| Value::Array(r.exemplars.iter().take(EXEMPLARS_SHOWN).map(one).collect());
    Value::Array(rows.iter().map(interval).collect())
}

/// The exemplars the page keeps of each interval, slowest first: an hour traced would
/// otherwise add megabytes (the results file and the JSON summary have them all).
const EXEMPLARS_SHOWN: usize = 3;

/// A column per key of the rows' maps (every key any row has), `cell` of each row's value.
fn by_key<T>(
    rows: &[IntervalRow],
    map: impl Fn(&IntervalRow) -> &std::collections::BTreeMap<String, T>,
    cell: impl Fn(Option<&T>) -> Value,
) -> Value {
    let keys: BTreeSet<&String> = rows.iter().flat_map(|r| map(r).keys()).collect();
    Value::Object(
        keys.into_iter()
            .map(|k| (k.clone(), Value::Array(rows.iter().map(|r| cell(map(r).get(k))).collect())))
            .collect(),
    )
}

/// A percentile spectrum as nines and ms; 100% (infinitely many nines) dropped.
fn spectrum(points: &[(f64, u64)]) -> Value {
    let mut nines: Vec<Value> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    for &(p, us) in points.iter().filter(|(p, _)| *p < 100.0) {
        let n = num(-(1.0 - p / 100.0).log10(), 3);
        if nines.last() == Some(&n) {
            // Rounded onto the previous point: the higher latency stands.
            values.pop();
        } else {
            nines.push(n);
        }
        values.push(ms(us as f64));
    }
    json!({"nines": nines, "ms": values})
}

/// Sampled requests as `[t_s, ms, ok]`, by time.
fn scatter(points: &[RequestPoint]) -> Value {
    let mut points = points.to_vec();
    points.sort_by_key(|p| p.ended_ms);
    Value::Array(
        points
            .iter()
            .map(|p| json!([num(f64::from(p.ended_ms) / 1e3, 3), ms(f64::from(p.latency_us)), u8::from(p.ok)]))
            .collect(),
    )
}

/// A table as `{"name", "header", "rows"}`: numbers (6 significant digits), strings, nulls.
fn sheet_data(sheet: &Sheet) -> Value {
    let cell = |c: &Cell| match c {
        Cell::Text(t) => Value::from(t.as_str()),
        Cell::Number(n) => sig(*n),
        Cell::Empty => Value::Null,
    };
    json!({
        "name": sheet.name,
        "header": sheet.header,
        "rows": sheet.rows.iter().map(|r| r.iter().map(cell).collect::<Vec<_>>()).collect::<Vec<_>>(),
    })
}

/// What the comparison page draws of a run.
fn compare_run(label: &str, s: &RunSummary) -> Value {
    let mut all = series(&s.intervals);
    let mut series = Map::new();
    for key in ["t", "length_s", "ok", "errors", "p99_ms"] {
        series.insert(key.into(), all.remove(key).unwrap_or(Value::Null));
    }
    json!({
        "label": label,
        "spectrum": {"corrected": spectrum(&s.latency_spectrum.corrected)},
        "series": series,
    })
}

// ---- text ----------------------------------------------------------------------------

/// `s` with HTML's special characters escaped, for text and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn rate(per_sec: f64) -> String {
    if per_sec >= 100.0 {
        format!("{}/s", thousands(per_sec.round() as u64))
    } else {
        format!("{per_sec:.2}/s")
    }
}

fn percent(ratio: f64) -> String {
    format!("{:.2}%", ratio * 100.0)
}

/// A number in a table: integers as they are, others with at most 3 decimals.
fn cell_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{n}")
    } else if n.is_finite() {
        let s = format!("{n:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{n}")
    }
}

/// The key figures as a list of labelled values; `bad` ones are highlighted.
fn figures(items: &[(&str, String, bool)]) -> String {
    let mut out = String::from("<ul class=\"figures\" aria-label=\"Key figures\">\n");
    for (label, value, bad) in items {
        let class = if *bad { " class=\"bad\"" } else { "" };
        let _ = writeln!(
            out,
            "<li{class}><span class=\"label\">{}</span><span class=\"value\">{}</span></li>",
            esc(label),
            esc(value)
        );
    }
    out.push_str("</ul>\n");
    out
}

fn warnings<T: AsRef<str>>(list: &[T]) -> String {
    if list.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section class=\"warnings\" role=\"note\" aria-label=\"Warnings\"><strong>Warnings</strong><ul>\n",
    );
    for w in list {
        let _ = writeln!(out, "<li>{}</li>", esc(w.as_ref()));
    }
    out.push_str("</ul></section>\n");
    out
}

fn run_body(s: &RunSummary) -> String {
    let mut out = run_header(s);
    out.push_str(&run_figures(s));
    // A run built on failure, or on another workload than it asked for, says so first,
    // among the warnings.
    let failed = match crate::study::run_verdict(s) {
        v if v == "ok" => None,
        v => Some(format!("{v}: these figures are not a result")),
    };
    out.push_str(&warnings(&failed.into_iter().chain(s.warnings.iter().map(|w| w.text.clone())).collect::<Vec<_>>()));
    out.push_str(&events(&s.events));
    if !s.events.is_empty() || !s.intervals.is_empty() {
        out.push_str(
            "<p class=\"hint\">Hover a chart for its values; drag across a time chart to zoom (all time charts \
             follow), double-click to zoom out; click a legend entry to hide or show its series.</p>\n",
        );
    }
    out
}

/// The run's header: what kind of run, when and how long, and its targets.
fn run_header(s: &RunSummary) -> String {
    let mut out = String::from("<header>\n<h1>barrage run</h1>\n");
    let loop_kind = if s.mode == Mode::Open { "open loop" } else { "closed loop" };
    let mut meta = vec![loop_kind.to_string()];
    let steps: Vec<&str> = s.steps.iter().map(|st| st.label.as_str()).filter(|l| !l.is_empty()).collect();
    if !steps.is_empty() {
        meta.push(steps.join(", "));
    }
    if s.started_unix_ms > 0 {
        meta.push(format!("started {}", utc(s.started_unix_ms)));
    }
    match &s.running {
        // Still going on: how far it has got, not how long it lasted.
        Some(r) => meta.push(format!("running: {}: the run so far", r.progress())),
        None => meta.push(format!("{} long", fmt_us(s.duration.total_s * 1e6))),
    }
    if s.interrupted {
        meta.push(format!("stopped early ({})", crate::text::stopped_by(s)));
    }
    if s.generator.coalesced_us > 0 {
        // As the text report says it: every answer may have been read up to that late.
        meta.push(format!("wake-ups coalesced: answers read up to {} late", fmt_us(s.generator.coalesced_us as f64)));
    }
    let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&meta.join(" · ")));
    let (shown, more) = sections::urls(&s.urls);
    for url in shown {
        let _ = writeln!(out, "<p class=\"meta\"><code>{}</code></p>", esc(url));
    }
    if let Some(more) = more {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&more));
    }
    if s.files.len() > 1 || s.hosts.len() > 1 {
        let from = crate::text::merged_from(s);
        let _ = writeln!(out, "<p class=\"meta\">{}: {}</p>", esc(&from), esc(&s.hosts.join(", ")));
    }
    out.push_str("</header>\n");
    out
}

/// The run's headline figures, a failing one marked.
fn run_figures(s: &RunSummary) -> String {
    let r = &s.requests;
    let l = &s.latency.corrected;
    let failed = r.total.saturating_sub(r.ok);
    let mut items = vec![
        ("requests", thousands(r.total), false),
        ("throughput", rate_or_count(s.throughput_per_sec, r.total, rate), false),
        ("success", percent(s.success_ratio), failed + r.dropped > 0),
        ("failed", thousands(failed), failed > 0),
        ("p50", fmt_us(l.p50_us as f64), false),
        ("p99", fmt_us(l.p99_us as f64), false),
        ("max", fmt_us(l.max_us as f64), false),
    ];
    if s.mode == Mode::Open {
        items.insert(1, ("offered rate", rate_or_count(s.rate_per_sec, r.sent, rate), false));
    }
    if r.dropped > 0 {
        // Due and never sent: the success ratio counts them as failed.
        items.insert(4, ("dropped", thousands(r.dropped), true));
    }
    if r.stale_retries > 0 {
        items.push(("stale connection retries", thousands(r.stale_retries), false));
    }
    let streams: Vec<(String, String)> = crate::sections::stream_rows(s)
        .into_iter()
        .flat_map(|[a, x, b, y]| [(a, x), (b, y)])
        .filter(|(label, _)| !label.is_empty())
        .map(|(label, value)| (label.trim().to_string(), value))
        .collect();
    items.extend(streams.iter().map(|(label, value)| (label.as_str(), value.clone(), false)));
    if let Some(f) = &s.flows_total {
        items.push(("flows", thousands(f.flows), false));
        items.push(("flow success", percent(f.success_ratio), f.failed > 0));
        items.push(("flow p99", fmt_us(f.latency.p99_us as f64), false));
    }
    if let Some(h) = crate::workload::Hits::of(std::slice::from_ref(s)) {
        items.push(("hits asked", percent(h.asked), false));
        let got = h.got.map_or_else(|| "-".into(), percent);
        items.push(("hits got", got, h.deviates()));
        items.push(("false hits", thousands(h.false_hits), h.false_hits > 0));
        items.push(("false misses", thousands(h.false_misses), h.false_misses > 0));
    }
    figures(&items)
}

fn events(events: &[EventSummary]) -> String {
    if events.is_empty() {
        return String::new();
    }
    let mut out = String::from("<section class=\"events\"><h2>Events</h2>\n<ol>\n");
    for (i, e) in events.iter().enumerate() {
        let (effect, changed) = crate::events::event_effect(events, i);
        let effect = match changed {
            Some(changed) => format!("{effect}; changed: {changed}"),
            None => effect,
        };
        let _ = writeln!(
            out,
            "<li><strong>{:.2} s</strong> <code>{}</code> ({})<span class=\"effect\">{}</span></li>",
            e.at_s,
            esc(&e.command),
            esc(&crate::events::event_status(e)),
            esc(&effect)
        );
    }
    out.push_str("</ol></section>\n");
    out
}

/// A table of `sheet`, with a heading.
fn table(heading: &str, sheet: &Sheet) -> String {
    let rows: Vec<Vec<Td>> = sheet
        .rows
        .iter()
        .map(|row| {
            (0..row.len().max(sheet.header.len()))
                .map(|i| match row.get(i) {
                    Some(Cell::Number(n)) => Td::Number(cell_text(*n)),
                    Some(Cell::Text(t)) => Td::Text(t.clone()),
                    Some(Cell::Empty) | None => Td::Text(String::new()),
                })
                .collect()
        })
        .collect();
    data_table(heading, None, &sheet.header, &rows, &[])
}

/// What a run's page shows after the charts: its trace context, then the tables the text
/// report shows too: flows, server replies, phases, steps, by name and by method, each when
/// it has something to say.
fn run_tables(s: &RunSummary, links: Option<&TraceUrl>) -> String {
    let [by_name, by_method] = sections::by_name_and_method(s);
    let tables: String = [
        sections::flows(s),
        sections::replies(s),
        sections::shards(s),
        sections::phases(s),
        sections::steps(s),
        by_name,
        by_method,
    ]
    .into_iter()
    .flatten()
    .map(|t| section_table(&t))
    .collect();
    crate::traces::html_section(s, links) + &tables
}

/// A [`Section`] as an HTML table, with the same cells as in the text report; its id is
/// `table-` and its title in lower case, dashed (`table-by-name`).
fn section_table(section: &Section) -> String {
    let mut rows = section.table.rows();
    let head: Vec<String> = rows.next().map(|(cells, _)| cells.to_vec()).unwrap_or_default();
    let align = section.table.alignment();
    let rows: Vec<Vec<Td>> = rows
        .map(|(cells, note)| {
            if note {
                return vec![Td::Text(cells[0].clone()), Td::Rest(cells[1..].join(" "))];
            }
            cells
                .iter()
                .zip(align)
                .map(|(c, a)| match a {
                    Align::Right => Td::Number(c.clone()),
                    Align::Left => Td::Text(c.clone()),
                })
                .collect()
        })
        .collect();
    let id = format!("table-{}", section.title.to_lowercase().replace(' ', "-"));
    data_table(section.title, Some(&id), &head, &rows, &section.notes)
}

/// A cell of an HTML table.
enum Td {
    Text(String),
    /// Right-aligned.
    Number(String),
    /// Text spanning the rest of the row.
    Rest(String),
}

/// A table with a heading and notes under it; an empty one says so.
fn data_table(heading: &str, id: Option<&str>, head: &[String], rows: &[Vec<Td>], notes: &[String]) -> String {
    let id = id.map(|id| format!(" id=\"{}\"", esc(id))).unwrap_or_default();
    let mut out = format!("<section{id}><h2>{}</h2>\n", esc(heading));
    if rows.is_empty() {
        out.push_str("<p class=\"hint\">No rows.</p></section>\n");
        return out;
    }
    out.push_str("<div class=\"table-wrap\"><table class=\"data\">\n<thead><tr>");
    for h in head {
        let _ = write!(out, "<th scope=\"col\">{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        let mut columns = 0;
        for cell in row {
            match cell {
                Td::Text(t) => {
                    let _ = write!(out, "<td>{}</td>", esc(t));
                }
                Td::Number(t) => {
                    let _ = write!(out, "<td class=\"num\">{}</td>", esc(t));
                }
                Td::Rest(t) => {
                    let span = head.len().saturating_sub(columns).max(1);
                    let _ = write!(out, "<td colspan=\"{span}\">{}</td>", esc(t));
                    columns += span - 1;
                }
            }
            columns += 1;
        }
        for _ in columns..head.len() {
            out.push_str("<td></td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>");
    for note in notes {
        let _ = write!(out, "<p class=\"hint\">{}</p>", esc(note));
    }
    out.push_str("</section>\n");
    out
}

/// What goes before and after the charts.
type Body = (String, String);

fn curve_body(
    title: &str,
    sheet: &Sheet,
    x: &str,
    slo_ms: &[(String, f64)],
    knee: Option<f64>,
    capacity: Option<f64>,
) -> Body {
    let mut out = format!("<header>\n<h1>barrage {}</h1>\n", esc(title));
    let _ = writeln!(out, "<p class=\"meta\">{} rows, by {}</p>\n</header>", sheet.rows.len(), esc(x));
    let mut items = Vec::new();
    if let Some(c) = capacity {
        items.push(("capacity", cell_text(c), false));
    }
    if let Some(k) = knee {
        items.push(("knee", cell_text(k), false));
    }
    for (label, ms) in slo_ms {
        items.push(("objective", format!("{label} {}", fmt_us(ms * 1e3)), false));
    }
    if !items.is_empty() {
        out.push_str(&figures(&items));
    }
    out.push_str("<p class=\"hint\">Hover a chart for its values; drag to zoom, double-click to zoom out; click a legend entry to hide or show its series.</p>\n");
    (out, table(title, sheet))
}

fn compare_body(runs: &[(String, RunSummary)], comparison: &Sheet) -> Body {
    let mut out = String::from("<header>\n<h1>barrage comparison</h1>\n");
    let labels: Vec<&str> = runs.iter().map(|(l, _)| l.as_str()).collect();
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} runs: {} (the first is the baseline)</p>\n</header>",
        runs.len(),
        esc(&labels.join(", "))
    );
    let mut key =
        Sheet::new("runs", &["run", "requests", "throughput_per_sec", "success_percent", "p50_ms", "p99_ms", "max_ms"]);
    for (label, s) in runs {
        let l = &s.latency.corrected;
        key.push(vec![
            Cell::from(label.as_str()),
            Cell::from(s.requests.total),
            Cell::from(s.throughput_per_sec),
            Cell::from(s.success_ratio * 100.0),
            Cell::from(l.p50_us as f64 / 1e3),
            Cell::from(l.p99_us as f64 / 1e3),
            Cell::from(l.max_us as f64 / 1e3),
        ]);
    }
    out.push_str(&table("Runs", &key));
    out.push_str(&table("Comparison", comparison));
    for (label, s) in runs {
        if !s.warnings.is_empty() {
            let _ = writeln!(out, "<h3>{}</h3>", esc(label));
            out.push_str(&warnings(&s.warnings.iter().map(|w| w.text.as_str()).collect::<Vec<_>>()));
        }
    }
    (out, String::new())
}

/// The charts come first: the tables are long.
fn experiment_body(title: &str, matrix: &Sheet, comparisons: &Sheet) -> Body {
    let mut out = format!("<header>\n<h1>barrage experiment {}</h1>\n", esc(title));
    let _ = writeln!(out, "<p class=\"meta\">{} cases</p>\n</header>", matrix.rows.len());
    (out, table("Matrix", matrix) + &table("Comparisons", comparisons))
}

fn trend_body(figure: &str, series: &[TrendChart]) -> Body {
    let mut out = format!("<header>\n<h1>barrage history: {}</h1>\n", esc(figure));
    let _ = writeln!(out, "<p class=\"meta\">{} series; dashed lines mark change points</p>\n</header>", series.len());
    let mut tables = String::new();
    for c in series {
        let mut changes = String::new();
        for (_, what) in &c.changes {
            let _ = writeln!(changes, "<li>{}</li>", esc(what));
        }
        if !changes.is_empty() {
            let _ = write!(tables, "<h2>{}</h2>\n<ul>\n{changes}</ul>\n", esc(&c.title));
        }
        tables.push_str(&table(&c.title, &c.sheet));
    }
    (out, tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_cannot_end_their_element_early() {
        for (name, text) in [("uPlot.iife.min.js", UPLOT_JS), ("boot.js", BOOT_JS), ("report.js", REPORT_JS)] {
            let lower = text.to_ascii_lowercase();
            assert!(!lower.contains("</script") && !lower.contains("<!--"), "{name}");
        }
        for (name, text) in [("uPlot.min.css", UPLOT_CSS), ("report.css", REPORT_CSS)] {
            assert!(!text.to_ascii_lowercase().contains("</style"), "{name}");
        }
    }

    #[test]
    fn numbers_are_rounded_and_short() {
        assert_eq!(num(1.23456, 3), json!(1.235));
        assert_eq!(num(2.0, 3), json!(2));
        assert_eq!(num(f64::NAN, 3), Value::Null);
        assert_eq!(sig(123_456.789), json!(123_457));
        assert_eq!(sig(0.000_123_456_78), json!(0.000_123_457));
        assert_eq!(sig(99.999_904_632_568_36), json!(99.9999));
        assert_eq!(ms(1_500.0), json!(1.5));
        assert_eq!(cell_text(2.0), "2");
        assert_eq!(cell_text(2.5000), "2.5");
        assert_eq!(cell_text(1.0 / 3.0), "0.333");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(123_456), "123,456");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(0), "0");
        assert_eq!(esc("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn spectrum_is_in_nines_without_the_maximum() {
        let v = spectrum(&[(0.0, 1_000), (90.0, 2_000), (99.0, 3_000), (99.9, 4_500), (100.0, 9_000)]);
        assert_eq!(v, json!({"nines": [0, 1, 2, 3], "ms": [1, 2, 3, 4.5]}));
    }

    #[test]
    fn the_header_says_how_late_coalesced_answers_were_read() {
        let mut s = RunSummary::default();
        assert!(!run_header(&s).contains("coalesced"));
        s.generator.coalesced_us = 1_000;
        assert!(run_header(&s).contains("wake-ups coalesced: answers read up to 1.00ms late"), "{}", run_header(&s));
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(1_714_564_800_000), "2024-05-01 12:00:00 UTC");
    }
}
