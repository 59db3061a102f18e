//! The human report: sections of aligned columns, in the spirit of `vegeta report`, with both
//! latency measures side by side and barrage's check of itself.

use crate::sections::{self, rate_or_count, Section};
use barrage_metrics::summary::{LatencyStats, RunSummary};
use barrage_metrics::units::{fmt_bytes, fmt_us};
use std::fmt::Write;

/// Shown under the two latency rows of an open-loop run.
const LATENCY_NOTE: &str =
    "corrected latency counts the time a request waited for its turn when the server or barrage \
fell behind the schedule; service time starts when it was actually sent — a large gap means queueing \
(coordinated omission) that service time alone would hide.";

/// Renders the report. `color` adds ANSI colour to warnings and errors only; the caller
/// decides it (from `NO_COLOR` and whether the output is a terminal).
///
/// Sections, each present only when it has something to say: header, requests, duration,
/// latency (corrected and service rows in open loop, with a line on the difference), latency by
/// status class, the flows of a scenario's groups, phases, bytes, status codes, errors, a key-value store's server
/// error replies, steps, servers (watched processes and the machine), events, generator, warnings.
pub fn text(s: &RunSummary, color: bool) -> String {
    let paint = Paint { on: color };
    let sections = [
        header(s),
        failed(s, paint),
        requests(s),
        duration(s),
        latency(s),
        latency_by_class(s),
        section(sections::flows(s)),
        section(sections::phases(s)),
        by_name_and_method(s),
        retries(s),
        trace_context(s),
        cache(s),
        workload(s),
        backends(s),
        bytes(s),
        status_codes(s),
        errors(s, paint),
        section(sections::replies(s)),
        section(sections::shards(s)),
        section(sections::steps(s)),
        servers(s),
        crate::events::text(s),
        generator(s),
        warnings(s, paint),
    ];
    let mut out = String::new();
    for section in sections.iter().filter(|t| !t.is_empty()) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(section);
    }
    out
}

/// A run built on failure says so before any figure, which would otherwise read as a result.
fn failed(s: &RunSummary, paint: Paint) -> String {
    match crate::study::run_verdict(s) {
        v if v == "ok" => String::new(),
        v => paint.red(&format!("{v}: the figures below are not a result\n")),
    }
}

/// ANSI colours, or none.
#[derive(Clone, Copy)]
struct Paint {
    on: bool,
}

impl Paint {
    fn red(self, s: &str) -> String {
        self.wrap("31", s)
    }

    fn yellow(self, s: &str) -> String {
        self.wrap("33", s)
    }

    fn wrap(self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

use Align::{Left, Right};

/// Rows of cells rendered in aligned columns, two spaces apart: the one table shape of every
/// report (`Table::new(&[Left, Right]).row(["name", "1"])`).
pub struct Table {
    align: Vec<Align>,
    rows: Vec<Row>,
}

/// One row of a [`Table`].
pub struct Row {
    cells: Vec<String>,
    /// The second cell is free text running past the columns (not counted in their widths).
    note: bool,
    red: bool,
}

impl Table {
    /// A table whose columns line up as `align` says.
    pub fn new(align: &[Align]) -> Self {
        Table { align: align.to_vec(), rows: Vec::new() }
    }

    /// Adds a row.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Row {
        self.rows.push(Row { cells: cells.into_iter().map(Into::into).collect(), note: false, red: false });
        self.rows.last_mut().expect("just pushed")
    }

    /// Adds a row of its first cell and free text running past the other columns.
    pub(crate) fn note(&mut self, first: &str, text: &str) {
        self.rows.push(Row { cells: vec![first.into(), text.into()], note: true, red: false });
    }

    /// The table as plain text, one line per row.
    pub fn to_text(&self) -> String {
        self.render(Paint { on: false })
    }

    /// How each column lines up.
    pub(crate) fn alignment(&self) -> &[Align] {
        &self.align
    }

    /// Each row's cells, and whether its second cell is free text running past the columns.
    pub(crate) fn rows(&self) -> impl Iterator<Item = (&[String], bool)> {
        self.rows.iter().map(|r| (&r.cells[..], r.note))
    }

    fn render(&self, paint: Paint) -> String {
        let mut widths = vec![0; self.align.len()];
        for row in &self.rows {
            let counted = if row.note { &row.cells[..1] } else { &row.cells[..] };
            for (w, cell) in widths.iter_mut().zip(counted) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (k, cell) in row.cells.iter().enumerate() {
                if k > 0 {
                    line.push_str("  ");
                }
                if row.note && k > 0 {
                    line.push_str(cell);
                } else {
                    pad(&mut line, cell, widths[k], self.align[k]);
                }
            }
            let line = line.trim_end();
            if row.red {
                out.push_str(&paint.red(line));
            } else {
                out.push_str(line);
            }
            out.push('\n');
        }
        out
    }
}

fn pad(out: &mut String, cell: &str, width: usize, align: Align) {
    let fill = " ".repeat(width.saturating_sub(cell.chars().count()));
    match align {
        Left => {
            out.push_str(cell);
            out.push_str(&fill);
        }
        Right => {
            out.push_str(&fill);
            out.push_str(cell);
        }
    }
}

pub(crate) fn us(v: u64) -> String {
    fmt_us(v as f64)
}

pub(crate) fn secs(s: f64) -> String {
    fmt_us(s * 1e6)
}

pub(crate) fn rate(per_sec: f64) -> String {
    format!("{per_sec:.2}/s")
}

pub(crate) fn percent(ratio: f64) -> String {
    format!("{:.2}%", ratio * 100.0)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn is_open(s: &RunSummary) -> bool {
    s.mode == barrage_metrics::file::Mode::Open
}

fn header(s: &RunSummary) -> String {
    let loop_kind = if is_open(s) { "open loop" } else { "closed loop" };
    let labels: Vec<&str> = s.steps.iter().map(|st| st.label.as_str()).collect();
    let mut out = match labels.len() {
        0 => format!("barrage run: {loop_kind}"),
        1 => format!("barrage run: {loop_kind}, {}", labels[0]),
        n => format!("barrage run: {loop_kind}, {n} steps: {}", labels.join(", ")),
    };
    // Hosts and files only matter when several runs were merged.
    let merged = s.files.len() > 1 || s.hosts.len() > 1;
    if merged {
        out.push_str(&format!(", {}", merged_from(s)));
    }
    out.push('\n');
    let mut t = Table::new(&[Left, Left]);
    if s.started_unix_ms > 0 {
        t.row(["  started".to_string(), utc(s.started_unix_ms)]);
    }
    let url_label = if s.urls.len() > 1 { "  urls" } else { "  url" };
    let (shown, more) = sections::urls(&s.urls);
    for (k, url) in shown.iter().enumerate() {
        t.row([if k == 0 { url_label } else { "" }, url.as_str()]);
    }
    if let Some(more) = more {
        t.row(["", more.as_str()]);
    }
    if merged {
        t.row(["  hosts".to_string(), s.hosts.join(", ")]);
        t.row(["  files".to_string(), s.files.join(", ")]);
    }
    if s.interrupted {
        t.row(["  stopped".to_string(), format!("early ({}): the figures cover the run until then", stopped_by(s))]);
    }
    if let Some(r) = &s.running {
        t.row(["  running".to_string(), format!("{}: the figures are the run so far", r.progress())]);
    }
    out.push_str(&t.render(Paint { on: false }));
    out
}

fn requests(s: &RunSummary) -> String {
    let r = &s.requests;
    let mut t = Table::new(&[Left, Right, Left, Right]);
    t.row(["Requests", "", "", ""]);
    let pairs = [
        ("total", r.total.to_string(), "offered rate", rate_or_count(s.rate_per_sec, r.sent, rate)),
        ("sent", r.sent.to_string(), "throughput", rate_or_count(s.throughput_per_sec, r.total, rate)),
        ("ok", r.ok.to_string(), "success", percent(s.success_ratio)),
        ("4xx/5xx", r.http_errors.to_string(), "late", r.late.to_string()),
        ("errors", r.errors.to_string(), "unfinished", r.unfinished.to_string()),
    ];
    for (a, x, b, y) in pairs {
        t.row([format!("  {a}"), x, format!("  {b}"), y]);
    }
    t.row(["  dropped".to_string(), r.dropped.to_string(), "  connections".into(), r.connections.to_string()]);
    if r.stale_retries > 0 {
        t.row(["  stale connection retries".to_string(), r.stale_retries.to_string(), String::new(), String::new()]);
    }
    if let Some(c) = s.coverage.as_ref().filter(|c| c.unsent > 0) {
        // Arrivals no shard ever reached (one died, never reported, or was stopped).
        t.row([
            "  never sent".to_string(),
            c.unsent.to_string(),
            "  coverage".into(),
            format!("{} of {}", percent(c.ratio), c.intended),
        ]);
    }
    if r.rejected > 0 {
        // 2xx and 3xx answers a flow's step refused: failed, neither ok nor HTTP errors.
        t.row(["  check/capture failed".to_string(), r.rejected.to_string(), String::new(), String::new()]);
    }
    let mut out = String::new();
    for row in sections::stream_rows(s) {
        t.row(row);
    }
    out.push_str(&t.render(Paint { on: false }));
    if let Some(note) = sections::success_note(s) {
        writeln!(out, "  {note}").expect("writing to a String cannot fail");
    }
    out
}

fn duration(s: &RunSummary) -> String {
    let d = &s.duration;
    let mut t = Table::new(&[Left, Right, Right, Right]);
    t.row(["Duration", "total", "attack", "wait"]);
    t.row([String::new(), secs(d.total_s), secs(d.attack_s), secs(d.wait_s)]);
    t.render(Paint { on: false })
}

const QUANTILE_HEADS: [&str; 9] = ["", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"];

fn latency_cells(label: &str, l: &LatencyStats) -> Vec<String> {
    let mut cells = vec![label.to_string(), us(l.min_us), fmt_us(l.mean_us)];
    cells.extend([l.p50_us, l.p90_us, l.p95_us, l.p99_us, l.p999_us, l.max_us].map(us));
    cells
}

fn latency(s: &RunSummary) -> String {
    let l = &s.latency;
    let mut align = vec![Right; QUANTILE_HEADS.len()];
    align[0] = Left;
    let mut t = Table::new(&align);
    let mut heads = QUANTILE_HEADS.map(String::from);
    heads[0] = "Latency".into();
    t.row(heads);
    if l.corrected.count == 0 && l.service.count == 0 {
        t.note("  no request finished", "");
        return t.render(Paint { on: false });
    }
    if is_open(s) {
        t.row(latency_cells("  corrected (from intended start)", &l.corrected));
        t.row(latency_cells("  service (from actual send)", &l.service));
        let mut out = t.render(Paint { on: false });
        writeln!(out, "  {LATENCY_NOTE}").expect("writing to a String cannot fail");
        out
    } else {
        // Without a schedule both measures are the same: one row.
        t.row(latency_cells("  from send to response", &l.service));
        t.render(Paint { on: false })
    }
}

fn latency_by_class(s: &RunSummary) -> String {
    if s.latency_by_class.len() < 2 {
        return String::new();
    }
    let mut t = Table::new(&[Left, Right, Right, Right]);
    t.row(["Latency by status class", "count", "p50", "p99"]);
    for (class, l) in &s.latency_by_class {
        t.row([format!("  {class}"), l.count.to_string(), us(l.p50_us), us(l.p99_us)]);
    }
    t.render(Paint { on: false })
}

/// A section shared with the HTML report: its title heads the label column, the rows are
/// indented under it, and its notes follow.
fn section(shared: Option<Section>) -> String {
    let Some(Section { title, mut table, notes }) = shared else { return String::new() };
    for (k, row) in table.rows.iter_mut().enumerate() {
        row.cells[0] = if k == 0 { title.to_string() } else { format!("  {}", row.cells[0]) };
    }
    let mut out = table.render(Paint { on: false });
    for note in notes {
        writeln!(out, "  {note}").expect("writing to a String cannot fail");
    }
    out
}

/// Hit ratio, byte hit ratio, statuses and the hit/miss latency split; one line when no
/// response could be classified, instead of a table of zeros.
fn cache(s: &RunSummary) -> String {
    let Some(c) = &s.cache else {
        return "Cache  no response carried a recognised cache header (X-Cache, X-Cache-Status, CF-Cache-Status, X-Varnish, Age); --cache-rule adds one\n".to_string();
    };
    let mut out = format!(
        "Cache  hit ratio {}  byte hit ratio {}  of {} classified responses\n",
        percent(c.hit_ratio),
        percent(c.byte_hit_ratio),
        c.classified
    );
    let statuses: Vec<String> = c.statuses.iter().filter(|(_, n)| **n > 0).map(|(k, n)| format!("{k} {n}")).collect();
    out.push_str(&format!("  {}\n", statuses.join(", ")));
    let mut t = Table::new(&[Left, Right, Right, Right, Right, Right]);
    t.row(["  from", "count", "p50", "p99", "wait p50", "wait p99"]);
    for (label, side) in [("  cache (hit, stale)", &c.hit), ("  origin (miss, expired, pass)", &c.miss)] {
        if let Some(side) = side {
            let wait = side.phases.get("wait").cloned().unwrap_or_default();
            t.row([
                label.to_string(),
                side.latency.count.to_string(),
                us(side.latency.p50_us),
                us(side.latency.p99_us),
                us(wait.p50_us),
                us(wait.p99_us),
            ]);
        }
    }
    out.push_str(&t.render(Paint { on: false }));
    out
}

/// What the stream meant a cache to do and what it did: hits asked and got, false hits and
/// false misses, and what told.
fn workload(s: &RunSummary) -> String {
    let Some(w) = &s.workload else { return String::new() };
    let Some(hits) = crate::workload::Hits::of(std::slice::from_ref(s)) else { return String::new() };
    let mut out = format!("Workload  {}\n", hits.text());
    out.push_str(&format!(
        "  {} request(s) for new objects, {} for objects asked for before; {} answer(s) told where they came from, by {}\n",
        w.new,
        w.repeat,
        w.judged,
        w.judged_by()
    ));
    if hits.deviates() {
        out.push_str(&format!(
            "  WORKLOAD: more than {:.0} points from the hits asked for: not the workload asked for\n",
            crate::workload::HIT_TOLERANCE * 100.0
        ));
    }
    out
}

/// Requests by name and by method, each shown when it has something to say.
fn by_name_and_method(s: &RunSummary) -> String {
    let [name, method] = sections::by_name_and_method(s);
    let parts: Vec<String> = [section(name), section(method)].into_iter().filter(|t| !t.is_empty()).collect();
    parts.join("\n")
}

/// `--trace-context` in one line: what it sampled and what its headers cost each request;
/// then the slowest sampled requests' traces, the ones a server's tracing has for the tail.
fn trace_context(s: &RunSummary) -> String {
    let Some(t) = &s.trace_context else { return String::new() };
    let mut out = format!(
        "Trace context  {} sampled ({} requests), traceparent and tracestate added {} B to each request\n",
        percent(t.sample),
        t.requests_sampled,
        t.header_bytes_per_request
    );
    for e in t.slowest.iter().take(SLOWEST_SHOWN) {
        let _ = writeln!(out, "  slowest sampled  {:>9}  trace {}  at {:.1}s", us(e.latency_us), e.trace_id, e.ended_s);
    }
    out
}

/// The slowest sampled requests the text report names (the JSON has them all).
const SLOWEST_SHOWN: usize = 3;

/// Requests as the client saw them when failed attempts were retried.
fn retries(s: &RunSummary) -> String {
    let Some(r) = &s.retries else { return String::new() };
    let mut t = Table::new(&[Left, Right, Left, Right]);
    t.row(["Retries", "", "", ""]);
    t.row([
        "  requests".into(),
        r.requests.to_string(),
        "  first-try success".into(),
        percent(r.first_try_success_ratio),
    ]);
    t.row(["  attempts".into(), r.attempts.to_string(), "  final success".into(), percent(r.final_success_ratio)]);
    t.row([
        "  per request".into(),
        format!("{:.2}", r.attempts_per_request),
        "  whole p50 / p99".into(),
        format!("{} / {}", us(r.latency.p50_us), us(r.latency.p99_us)),
    ]);
    let mut out = t.render(Paint { on: false });
    out.push_str("  (the figures above count every attempt; whole latency runs from the first attempt's intended start to the last attempt's end)\n");
    out
}

/// Per backend: share, failures, latency, when it answered; fairness over the run and its
/// worst second; the gaps in its answers. Shown once two or more backends answered.
fn backends(s: &RunSummary) -> String {
    if s.backends.len() < 2 {
        return String::new();
    }
    let mut t = Table::new(&[Left, Right, Right, Right, Right, Right, Right]);
    t.row(["Backends", "requests", "share", "failed", "p50", "p99", "answered"]);
    for b in &s.backends {
        t.row([
            format!("  {}", b.name),
            b.requests.to_string(),
            percent(b.share),
            b.failed.to_string(),
            us(b.p50_us),
            us(b.p99_us),
            answered(b, end_s(s)),
        ]);
    }
    let mut out = t.render(Paint { on: false });
    if let Some(f) = s.fairness {
        let worst =
            s.intervals.iter().filter_map(|i| i.fairness.map(|f| (f, i.second))).min_by(|a, b| a.0.total_cmp(&b.0));
        match worst {
            Some((w, second)) => out.push_str(&format!(
                "  fairness (Jain's index, 1 = even): {f:.3} over the run, lowest {w:.3} in second {second}\n"
            )),
            None => out.push_str(&format!("  fairness (Jain's index, 1 = even): {f:.3} over the run\n")),
        }
    }
    for b in &s.backends {
        for g in b.gaps.iter().take(MAX_GAPS_SHOWN) {
            let from = if g.from_s == 0.0 { "the start".to_string() } else { format!("{:.1}s", g.from_s) };
            let to = g.to_s.map_or("the end".to_string(), |t| format!("{t:.1}s"));
            out.push_str(&format!(
                "  {} answered nothing from {from} to {to}: {:.1}s ± 0.1s, while {} other request(s) finished\n",
                b.name, g.length_s, g.finished
            ));
        }
        if b.gaps.len() > MAX_GAPS_SHOWN {
            out.push_str(&format!(
                "  … and {} more gaps of {} (all in the JSON)\n",
                b.gaps.len() - MAX_GAPS_SHOWN,
                b.name
            ));
        }
    }
    out
}

/// Gaps listed per backend; the JSON has them all.
const MAX_GAPS_SHOWN: usize = 5;

/// Where the run ended, s from its start (runs merged from different starts end with the
/// last interval).
fn end_s(s: &RunSummary) -> f64 {
    s.intervals.last().map_or(0.0, |r| r.second as f64 + r.length_s).max(s.duration.total_s)
}

/// When a backend answered: the stretches between its gaps, `0.0–3.0s, 5.1–7.0s`, or the
/// first to the last and how many stretches when there are more than three.
fn answered(b: &barrage_metrics::summary::BackendSummary, end_s: f64) -> String {
    let mut spans = Vec::new();
    let mut from = 0.0;
    for g in &b.gaps {
        if g.from_s > from {
            spans.push((from, g.from_s));
        }
        from = g.to_s.unwrap_or(end_s);
    }
    if from < end_s {
        spans.push((from, end_s));
    }
    match spans.as_slice() {
        [] => "-".into(),
        [first, .., last] if spans.len() > 3 => format!("{:.1}–{:.1}s in {} stretches", first.0, last.1, spans.len()),
        _ => spans.iter().map(|(a, b)| format!("{a:.1}–{b:.1}s")).collect::<Vec<_>>().join(", "),
    }
}

fn bytes(s: &RunSummary) -> String {
    let b = &s.bytes;
    let per_sec = |v: Option<f64>| rate_or_count(v, s.requests.total, |v| format!("{}/s", fmt_bytes(v)));
    let mut t = Table::new(&[Left, Right, Right, Right]);
    t.row(["Bytes", "total", "mean/request", "per second"]);
    t.row(["  in".into(), fmt_bytes(b.in_total as f64), fmt_bytes(b.in_mean), per_sec(b.in_per_sec)]);
    t.row(["  out".into(), fmt_bytes(b.out_total as f64), fmt_bytes(b.out_mean), per_sec(b.out_per_sec)]);
    t.render(Paint { on: false })
}

fn status_codes(s: &RunSummary) -> String {
    if s.status_codes.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&[Left, Right, Right]);
    t.row(["Status codes", "count", "share"]);
    for (code, n) in &s.status_codes {
        let code = if code == "0" { "other" } else { code.as_str() };
        t.row([format!("  {code}"), n.to_string(), percent(ratio(*n, s.requests.total))]);
    }
    t.render(Paint { on: false })
}

fn errors(s: &RunSummary, paint: Paint) -> String {
    if s.errors.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&[Left, Right, Left]);
    t.row(["Errors", "count", "example"]);
    for e in &s.errors {
        t.row([format!("  {}", e.kind), e.count.to_string(), e.example.clone()]).red = true;
    }
    t.render(paint)
}

fn generator(s: &RunSummary) -> String {
    let g = &s.generator;
    let mut t = Table::new(&[Left, Left]);
    t.row(["Generator", ""]);
    let threads = if g.threads == 1 { "1 thread".to_string() } else { format!("{} threads", g.threads) };
    t.row([
        "  cpu".to_string(),
        format!("{:.1}% of one core, over {threads} (at most {}%)", g.cpu_percent, u64::from(g.threads) * 100),
    ]);
    if is_open(s) {
        t.row(["  schedule lag p99".to_string(), us(g.lag_p99_us)]);
    }
    let bound = if g.bound_reached { "reached" } else { "not reached" };
    t.row(["  in-flight bound", bound]);
    if g.peak_rss_kib > 0 {
        t.row(["  peak memory".to_string(), fmt_bytes(g.peak_rss_kib as f64 * 1024.0)]);
    }
    if g.cpu_max_percent > 0.0 {
        t.row(["  cpu peak (1 s)".to_string(), format!("{:.1}% of one core", g.cpu_max_percent)]);
    }
    if g.coalesced_us > 0 {
        let slept = format!("slept up to {} before waiting: an answer read at most that late", us(g.coalesced_us));
        t.row(["  wake-ups coalesced".to_string(), slept]);
    }
    t.render(Paint { on: false })
}

/// `merged from 4 files on 1 host`.
pub(crate) fn merged_from(s: &RunSummary) -> String {
    let plural = |n: usize, one: &str| if n == 1 { format!("1 {one}") } else { format!("{n} {one}s") };
    format!("merged from {} on {}", plural(s.files.len(), "file"), plural(s.hosts.len(), "host"))
}

/// The watched processes (mean and peak per second) and the machine; barrage's own CPU
/// and memory are the Generator section's, shown there only.
fn servers(s: &RunSummary) -> String {
    let Some(h) = &s.host else { return String::new() };
    let mut align = vec![Right; 8];
    align[0] = Left;
    let mut t = Table::new(&align);
    t.row(["Servers", "cpu mean", "cpu max", "user/sys", "memory max", "threads", "fds", "switches/s"]);
    let watched: Vec<_> = s.processes.iter().filter(|p| p.name != barrage_metrics::summary::GENERATOR).collect();
    for p in &watched {
        let name = match p.down_samples {
            0 => format!("  {}", p.name),
            _ => format!("  {} (down {:.1}–{:.1}s)", p.name, p.down_min_s, p.down_max_s),
        };
        t.row([
            name,
            format!("{:.1}%", p.cpu_mean_percent),
            format!("{:.1}%", p.cpu_max_percent),
            format!("{:.0}/{:.0}%", p.cpu_user_mean_percent, p.cpu_system_mean_percent),
            fmt_bytes(p.rss_max_kib as f64 * 1024.0),
            p.threads_max.to_string(),
            p.fds_max.to_string(),
            format!("{:.0}", p.context_switches_per_sec),
        ]);
    }
    // Without a watched process, the machine alone.
    let mut out = if watched.is_empty() { "Machine\n".to_string() } else { t.render(Paint { on: false }) };
    out.push_str(&format!(
        "  machine: {} CPUs {:.0}% busy on average ({:.0}% peak), memory {} of {} at most, network {}/s in, {}/s out\n",
        h.cpus,
        h.cpu_mean_percent,
        h.cpu_max_percent,
        fmt_bytes(h.mem_used_max_kib as f64 * 1024.0),
        fmt_bytes(h.mem_total_kib as f64 * 1024.0),
        fmt_bytes(h.net_rx_per_sec),
        fmt_bytes(h.net_tx_per_sec),
    ));
    if !watched.is_empty() {
        out.push_str(
            "  (cpu is % of one core, a process counted with its children; memory is resident, shared pages in each)\n",
        );
    }
    if watched.iter().any(|p| p.down_samples > 0) {
        out.push_str("  (down: the least and most time stopped that the once-a-second samples allow)\n");
    }
    out
}

/// A p-value as the reports print it: three decimals, `<0.001` below that.
pub(crate) fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

fn warnings(s: &RunSummary, paint: Paint) -> String {
    let mut out = String::new();
    for w in &s.warnings {
        out.push_str(&paint.yellow(&format!("warning: {}", w.text)));
        out.push('\n');
    }
    out
}

/// Who stopped a run early: Ctrl-C or q, unless the summary names another (a collector).
pub(crate) fn stopped_by(s: &RunSummary) -> &str {
    s.stopped_by.as_deref().unwrap_or("Ctrl-C or q")
}

/// `ms` since the Unix epoch as `YYYY-MM-DD hh:mm:ss UTC`.
pub fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm), for days >= 0.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::summary::{ErrorStat, PhaseStats, StepSummary, Warning, WarningKind};

    fn summary(mode: barrage_metrics::file::Mode) -> RunSummary {
        let lat = |p50| LatencyStats {
            count: 10,
            min_us: 100,
            mean_us: 900.0,
            p50_us: p50,
            max_us: 9_000,
            ..Default::default()
        };
        let mut s = RunSummary { version: 1, mode, ..Default::default() };
        s.urls = vec!["http://a.test/".into()];
        s.requests.total = 10;
        s.requests.ok = 10;
        s.success_ratio = 1.0;
        s.latency.corrected = lat(2_000);
        s.latency.service = lat(1_000);
        s.phases.insert("dns".into(), PhaseStats::default());
        s.phases.insert(
            "wait".into(),
            PhaseStats { count: 10, mean_us: 500.0, p50_us: 400, p99_us: 900, ..Default::default() },
        );
        s
    }

    #[test]
    fn open_loop_shows_both_latencies_and_one_note() {
        let t = text(&summary(barrage_metrics::file::Mode::Open), false);
        assert!(t.contains("open loop"));
        assert_eq!(t.matches("corrected (from intended start)").count(), 1, "{t}");
        assert_eq!(t.matches("service (from actual send)").count(), 1, "{t}");
        assert_eq!(t.lines().filter(|l| l.contains("coordinated omission")).count(), 1);
        assert!(t.contains("schedule lag p99"));
    }

    #[test]
    fn closed_loop_shows_one_latency_row_without_note() {
        let t = text(&summary(barrage_metrics::file::Mode::Closed), false);
        assert!(t.contains("closed loop"));
        assert!(!t.contains("corrected (from intended start)"), "{t}");
        assert!(!t.contains("coordinated omission"));
        assert!(!t.contains("schedule lag"));
        let row = t.lines().find(|l| l.contains("from send to response")).unwrap();
        assert!(row.contains("1.00ms"), "the service figures: {row}");
    }

    #[test]
    fn unmeasured_phase_is_not_zero() {
        let t = text(&summary(barrage_metrics::file::Mode::Open), false);
        let dns = t.lines().find(|l| l.trim_start().starts_with("dns")).unwrap();
        assert!(dns.contains("not measured: no new connection was opened"), "{dns}");
        // Phases in request order, not alphabetical.
        assert!(t.find("\n  dns ").unwrap() < t.find("\n  wait ").unwrap());
    }

    #[test]
    fn columns_line_up() {
        let t = text(&summary(barrage_metrics::file::Mode::Open), false);
        let lines: Vec<&str> = t.lines().skip_while(|l| !l.starts_with("Latency")).take(3).collect();
        let end = |l: &str| l.chars().count();
        assert_eq!(end(lines[0]), end(lines[1]), "{lines:#?}");
        assert_eq!(end(lines[1]), end(lines[2]), "{lines:#?}");
    }

    #[test]
    fn colour_only_on_warnings_and_errors() {
        let mut s = summary(barrage_metrics::file::Mode::Open);
        assert!(!text(&s, true).contains('\x1b'));
        s.warnings.push(Warning::new(WarningKind::Other, "careful"));
        s.errors.push(ErrorStat { kind: "reset".into(), count: 2, example: "connection reset".into() });
        assert!(!text(&s, false).contains('\x1b'));
        let t = text(&s, true);
        for line in t.lines().filter(|l| l.contains('\x1b')) {
            assert!(line.contains("warning: careful") || line.contains("reset"), "{line}");
        }
        assert_eq!(t.lines().filter(|l| l.contains('\x1b')).count(), 2, "{t}");
        // A run built on failure is flagged in red before its figures.
        s.requests.ok = 0;
        s.success_ratio = 0.0;
        let t = text(&s, true);
        let first = t.lines().find(|l| l.contains('\x1b')).unwrap();
        assert!(first.contains("FAILED: all 10 requests failed (mostly reset: connection reset)"), "{t}");
    }

    #[test]
    fn optional_sections() {
        let mut s = summary(barrage_metrics::file::Mode::Open);
        let t = text(&s, false);
        assert!(!t.contains("Steps") && !t.contains("Latency by status class") && !t.contains("Errors"));
        assert!(!t.contains("hosts"), "hosts only when merged");
        s.steps = vec![StepSummary { label: "10/s".into(), ..Default::default() }; 2];
        s.latency_by_class.insert("2xx".into(), LatencyStats::default());
        s.latency_by_class.insert("5xx".into(), LatencyStats::default());
        s.files = vec!["a.brg".into(), "b.brg".into()];
        s.hosts = vec!["a".into(), "b".into()];
        let t = text(&s, false);
        assert!(t.contains("Steps") && t.contains("Latency by status class"));
        assert!(t.contains("a.brg, b.brg") && t.contains("  hosts"));
    }

    #[test]
    fn empty_run() {
        let t = text(&RunSummary::default(), false);
        assert!(t.contains("no request finished"), "{t}");
    }

    #[test]
    fn utc_dates() {
        for (ms, want) in [
            (0, "1970-01-01 00:00:00 UTC"),
            (951_782_400_000, "2000-02-29 00:00:00 UTC"),
            (1_714_564_800_000, "2024-05-01 12:00:00 UTC"),
            (4_102_444_799_999, "2099-12-31 23:59:59 UTC"),
        ] {
            assert_eq!(utc(ms), want);
        }
    }
}
