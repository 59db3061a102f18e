//! `barrage history`: the runs kept, their series, trends with change points, the CI gate;
//! and [`keeper`], how every mode that runs load keeps its runs.

use super::history_trend::Scope;
use crate::args::{BaselineCommand, Format, HistoryArgs, HistoryCommand, HistoryCommandArgs};
use crate::Exit;
use anyhow::{bail, Context};
use barrage_history::import::Foreign;
use barrage_history::store::{default_path, now_ms, Series};
use barrage_history::{Entry, Environment, Keeper, RunRow, Store};
use barrage_report::{utc, Align, Figure, Table};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The keeper of a run's flags: `None` with `--no-history`, or when there is no place for
/// the default history (no home).
pub fn keeper(a: &HistoryArgs) -> Option<Keeper> {
    if a.no_history {
        return None;
    }
    let path = a.history.clone().or_else(default_path)?;
    Some(Keeper::new(path, a.labels.clone(), env!("CARGO_PKG_VERSION")))
}

/// Runs a `history` command.
pub fn history(a: HistoryCommandArgs) -> anyhow::Result<Exit> {
    let path = match a.history.clone().or_else(default_path) {
        Some(p) => p,
        None => bail!("no history file: give --history FILE (neither $HOME nor $XDG_DATA_HOME is set)"),
    };
    if !path.exists() && !matches!(a.command, HistoryCommand::Import { .. }) {
        bail!("no history at {} yet: runs are kept there as they finish (or `history import FILES`)", path.display());
    }
    let mut store = Store::open(&path)?;
    let json = a.format == Format::Json;
    if let HistoryCommand::Compare { run, against, fail_if, noise } = &a.command {
        return compare(&store, run, against, fail_if, *noise, a.format);
    }
    if !matches!(a.format, Format::Text | Format::Json) {
        bail!(
            "--format {}: history prints text or json (history compare also csv and html)",
            format!("{:?}", a.format).to_lowercase()
        );
    }
    let mut out = String::new();
    let o = &mut out;
    let exit = match a.command {
        HistoryCommand::List { filter, last, series } => list(o, &store, &filter.filter, last, series, json),
        HistoryCommand::Show { runs } => show(o, &store, &runs, json),
        HistoryCommand::Trend { figure, filter, last, html, noise } => {
            let scope = Scope::new(&store, &filter.filter, noise);
            super::history_trend::trend_cmd(o, &scope, &figure, last, html.as_deref(), json)
        }
        HistoryCommand::Regressions { filter, figures, since, noise } => {
            let scope = Scope::new(&store, &filter.filter, noise);
            super::history_trend::regressions(o, &scope, &figures, since.0, json)
        }
        HistoryCommand::Check { filter, figures, confidence, junit, noise } => {
            let scope = Scope::new(&store, &filter.filter, noise);
            super::history_trend::check(o, &scope, &figures, confidence, junit.as_deref(), json)
        }
        HistoryCommand::Compare { .. } => unreachable!("compared above"),
        HistoryCommand::Baseline { command } => baseline(o, &mut store, command, json),
        HistoryCommand::Annotate { text, at, filter } => {
            if text.len() > MAX_NOTE_BYTES {
                bail!("a note is at most {MAX_NOTE_BYTES} bytes; this one is {}", text.len());
            }
            let series = one_series(&store, &filter.filter)?;
            let at_ms = at.map_or_else(now_ms, |t| t.unix_us() / 1000);
            store.annotate(at_ms, series, &text)?;
            Ok(Exit::Ok)
        }
        HistoryCommand::Stale { filter, max_age } => stale(o, &store, &filter.filter, max_age.0, json),
        HistoryCommand::Gc { keep_last } => {
            if keep_last == 0 {
                bail!("--keep-last 0 would remove every run but the baselines: keep at least 1");
            }
            let removed = store.gc(keep_last)?;
            say!(o, "removed {removed} run(s); kept the newest {keep_last} of each series and every baseline");
            Ok(Exit::Ok)
        }
        HistoryCommand::Import { files, labels, from, tag } => {
            import(o, &mut store, &files, from.as_deref(), tag, &labels, json)
        }
    }?;
    super::emit::print(&out)?;
    Ok(exit)
}

/// Longest note `history annotate` keeps.
const MAX_NOTE_BYTES: usize = 1_000;

/// The one series `filter` selects, `None` for an empty filter (every series).
fn one_series(store: &Store, filter: &[(String, Option<String>)]) -> anyhow::Result<Option<i64>> {
    if filter.is_empty() {
        return Ok(None);
    }
    match &store.matching(filter)?[..] {
        [one] => Ok(Some(one.id)),
        [] => bail!("no series has the labels {}", show_filter(filter)),
        many => bail!("{} series have the labels {}: add --where labels to pick one", many.len(), show_filter(filter)),
    }
}

pub(super) fn show_filter(filter: &[(String, Option<String>)]) -> String {
    filter.iter().map(|(k, v)| v.as_ref().map_or(k.clone(), |v| format!("{k}={v}"))).collect::<Vec<_>>().join(" ")
}

/// The labels of a series worth showing in a line: the ones that are not the same in
/// every series listed.
pub(super) fn distinct_labels(all: &[&BTreeMap<String, String>]) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = all.iter().flat_map(|l| l.keys()).collect();
    keys.into_iter()
        .filter(|k| all.iter().map(|l| l.get(*k)).collect::<std::collections::BTreeSet<_>>().len() > 1)
        .cloned()
        .collect()
}

/// `k=v k=v` of `labels` named in `keys` (all of them when `keys` is empty).
pub(super) fn label_line(labels: &BTreeMap<String, String>, keys: &[String]) -> String {
    labels
        .iter()
        .filter(|(k, _)| keys.is_empty() || keys.contains(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn list(
    o: &mut String,
    store: &Store,
    filter: &[(String, Option<String>)],
    last: usize,
    series: bool,
    json: bool,
) -> anyhow::Result<Exit> {
    let chosen = store.matching(filter)?;
    if series {
        return list_series(o, &chosen, json);
    }
    let ids: std::collections::BTreeSet<i64> = chosen.iter().map(|s| s.id).collect();
    let mut runs: Vec<RunRow> = Vec::new();
    for s in &chosen {
        runs.extend(store.runs(Some(s.id), 0, last)?);
    }
    runs.retain(|r| ids.contains(&r.series));
    runs.sort_by_key(|r| std::cmp::Reverse((r.started_ms, r.id)));
    runs.truncate(last);
    if json {
        say!(o, "{}", serde_json::to_string_pretty(&runs)?);
        return Ok(Exit::Ok);
    }
    let labels: Vec<_> = chosen.iter().map(|s| &s.labels).collect();
    let keys = distinct_labels(&labels);
    let mut t =
        Table::new(&[Align::Right, Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Left]);
    t.row(["run", "started", "kind", "throughput", "p99", "success", "series"]);
    for r in &runs {
        let fig = |f: Figure| r.figures.get(f.name()).map_or("-".to_string(), |v| f.show(*v));
        let mut series = label_line(&r.labels, &keys);
        if let Some(why) = &r.failure {
            series = format!("NOT A RESULT ({why}) {series}");
        }
        t.row([
            r.id.to_string(),
            utc(r.started_ms),
            r.kind.clone(),
            fig(Figure::Throughput),
            fig(Figure::P99),
            fig(Figure::Success),
            format!("#{} {series}", r.series),
        ]);
    }
    o.push_str(&t.to_text());
    Ok(Exit::Ok)
}

fn list_series(o: &mut String, series: &[Series], json: bool) -> anyhow::Result<Exit> {
    if json {
        say!(o, "{}", serde_json::to_string_pretty(series)?);
        return Ok(Exit::Ok);
    }
    let mut t = Table::new(&[Align::Right, Align::Right, Align::Left, Align::Left]);
    t.row(["series", "runs", "newest", "labels"]);
    for s in series {
        t.row([s.id.to_string(), s.runs.to_string(), utc(s.newest_ms), label_line(&s.labels, &[])]);
    }
    o.push_str(&t.to_text());
    Ok(Exit::Ok)
}

/// A run's number from `RUN`: a number, or a baseline's name.
pub(super) fn run_id(store: &Store, run: &str) -> anyhow::Result<i64> {
    match run.parse::<i64>() {
        Ok(id) => Ok(id),
        Err(_) => Ok(store.baseline(run)?),
    }
}

/// `history compare RUN --against previous|RUN|NAME`: `barrage compare` of the two runs as
/// the history kept them.
fn compare(
    store: &Store,
    run: &str,
    against: &str,
    fail_if: &[barrage_report::compare::FailIf],
    noise: f64,
    format: Format,
) -> anyhow::Result<Exit> {
    let id = run_id(store, run)?;
    let base = match against {
        "previous" => {
            let row = store.run(id)?;
            let before = store.runs(Some(row.series), 0, usize::MAX >> 1)?;
            match before.iter().find(|r| (r.started_ms, r.id) < (row.started_ms, row.id)) {
                Some(r) => r.id,
                None => bail!("run {id} is the first of its series #{}: --against a run or a baseline", row.series),
            }
        }
        other => run_id(store, other)?,
    };
    let summary = |id| barrage_history::summary::summary(store, id).map(|s| (format!("run {id}"), s));
    let runs = vec![summary(base)?, summary(id)?];
    let c = barrage_report::compare::compare(&runs, noise);
    let report = barrage_report::Report::Comparison { runs: &runs, comparison: &c };
    let emit = crate::args::EmitArgs { format, html: None, xlsx: None, csv_dir: None };
    super::emit::emit(&report, &emit)?;
    let mut passed = true;
    for bound in fail_if {
        for (label, change) in bound.crossed(&c) {
            eprintln!("{}", bound.failure(label, change));
            passed = false;
        }
    }
    Ok(super::emit::exit(&report, 2, "compared run", passed))
}

/// Percentiles shown of a run's (or pooled runs') latency, recomputed from its histograms.
const PERCENTILES: [f64; 7] = [50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0];

fn show(o: &mut String, store: &Store, runs: &[String], json: bool) -> anyhow::Result<Exit> {
    let ids = runs.iter().map(|r| run_id(store, r)).collect::<anyhow::Result<Vec<_>>>()?;
    let rows = ids.iter().map(|&id| store.run(id)).collect::<Result<Vec<_>, _>>()?;
    let corrected = store.histogram(&ids, false)?;
    let service = store.histogram(&ids, true)?;
    let at =
        |h: &hdrhistogram::Histogram<u64>, p: f64| if h.is_empty() { None } else { Some(h.value_at_percentile(p)) };
    if json {
        let pct = |h| PERCENTILES.iter().map(|&p| (format!("p{p}"), at(h, p))).collect::<BTreeMap<_, _>>();
        let out = serde_json::json!({
            "runs": rows,
            "pooled": { "requests": corrected.len(), "corrected_us": pct(&corrected), "service_us": pct(&service) },
        });
        say!(o, "{}", serde_json::to_string_pretty(&out)?);
        return Ok(Exit::Ok);
    }
    for r in &rows {
        print_run(o, r);
    }
    let title = if ids.len() > 1 { format!("Latency of runs {} pooled", runs.join(", ")) } else { "Latency".into() };
    say!(o, "{title} (from the kept intervals' histograms, {} requests):", corrected.len());
    let mut t = Table::new(&[Align::Left, Align::Right, Align::Right]);
    t.row(["percentile", "corrected", "service"]);
    for p in PERCENTILES {
        let show = |h| at(h, p).map_or("-".to_string(), |v| barrage_metrics::units::fmt_us(v as f64));
        t.row([format!("p{p}"), show(&corrected), show(&service)]);
    }
    o.push_str(&t.to_text());
    Ok(Exit::Ok)
}

fn print_run(o: &mut String, r: &RunRow) {
    say!(o, "Run {} ({}, {}), series #{}", r.id, r.kind, utc(r.started_ms), r.series);
    if let Some(why) = &r.failure {
        say!(o, "  NOT A RESULT: {why}");
    }
    if r.interrupted {
        say!(o, "  interrupted: its figures are of what finished");
    }
    say!(o, "  labels: {}", label_line(&r.labels, &[]));
    if !r.study.is_empty() {
        let study: Vec<String> = r.study.iter().map(|(k, v)| format!("{k}={v}")).collect();
        say!(o, "  in its study: {}", study.join(" "));
    }
    let Environment { host, cpu, cpus, kernel, governor, version, commit } = &r.env;
    let or = |s: &str| if s.is_empty() { "-".to_string() } else { s.to_string() };
    say!(
        o,
        "  machine: {}, {cpus} CPU(s) {}, kernel {}, governor {}; barrage {} {}",
        or(host),
        or(cpu),
        or(kernel),
        or(governor),
        or(version),
        or(commit)
    );
    if r.shards > 1 {
        say!(o, "  {} shards merged", r.shards);
    }
    let mut t = Table::new(&[Align::Left, Align::Right]);
    for (name, value) in &r.figures {
        let shown = name.parse::<Figure>().map_or_else(|_| format!("{value:.2}"), |f| f.show(*value));
        t.row([name.clone(), shown]);
    }
    o.push_str(&t.to_text());
}

fn baseline(o: &mut String, store: &mut Store, command: BaselineCommand, json: bool) -> anyhow::Result<Exit> {
    match command {
        BaselineCommand::Set { name, run } => {
            store.set_baseline(&name, run)?;
            say!(o, "baseline {name} is run {run}");
        }
        BaselineCommand::List => {
            let all = store.baselines()?;
            if json {
                say!(o, "{}", serde_json::to_string_pretty(&all)?);
            } else {
                all.iter().for_each(|(name, run)| say!(o, "{name}\trun {run}"));
            }
        }
    }
    Ok(Exit::Ok)
}

fn stale(
    o: &mut String,
    store: &Store,
    filter: &[(String, Option<String>)],
    max_age: std::time::Duration,
    json: bool,
) -> anyhow::Result<Exit> {
    let now = now_ms();
    let stale: Vec<Series> = store
        .matching(filter)?
        .into_iter()
        .filter(|s| now.saturating_sub(s.newest_ms) > max_age.as_millis() as u64)
        .collect();
    if json {
        say!(o, "{}", serde_json::to_string_pretty(&stale)?);
    } else {
        for s in &stale {
            say!(o, "stale: series #{} ({}), newest run {}", s.id, label_line(&s.labels, &[]), utc(s.newest_ms));
        }
        if stale.is_empty() {
            say!(o, "every series has a run newer than {}", barrage_metrics::units::fmt_duration(max_age));
        }
    }
    Ok(if stale.is_empty() { Exit::Ok } else { Exit::Failed })
}

/// Imports files: barrage's results files (those of one split run as one run) and the
/// peers' (each a run of its own).
fn import(
    o: &mut String,
    store: &mut Store,
    files: &[PathBuf],
    from: Option<&str>,
    tag: Option<String>,
    labels: &[(String, Option<String>)],
    json: bool,
) -> anyhow::Result<Exit> {
    let from = match from {
        None => None,
        Some("barrage") => Some(None),
        Some(name) => Some(Some(name.parse::<Foreign>().map_err(|e| anyhow::anyhow!("--from {e}"))?)),
    };
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for f in files {
        match from.map_or_else(|| format_of(f), Ok)? {
            None => ours.push(f.clone()),
            Some(format) => theirs.push((f, format)),
        }
    }
    let mut kept = import_ours(store, &ours, labels)?;
    let options = barrage_history::import::Options { tag };
    for (f, format) in theirs {
        let entry = barrage_history::import::entry_with(f, format, labels, &options)?;
        kept.push((store.record(&entry)?, format!("from {format}: {}", f.display())));
    }
    if json {
        say!(o, "{}", serde_json::json!({ "runs": kept.iter().map(|k| k.0).collect::<Vec<_>>() }));
    } else {
        for (id, what) in &kept {
            say!(o, "run {id}: {what}");
        }
    }
    Ok(Exit::Ok)
}

/// A file's format: `None` for barrage's results file, else the peer's it looks like.
fn format_of(path: &std::path::Path) -> anyhow::Result<Option<Foreign>> {
    use std::io::Read;
    let mut head = Vec::new();
    let file = std::fs::File::open(path).with_context(|| format!("import {}", path.display()))?;
    file.take(8192).read_to_end(&mut head).with_context(|| format!("import {}", path.display()))?;
    if head.starts_with(b"BARRAGE\n") {
        return Ok(None);
    }
    match barrage_history::import::detect(path, &head) {
        Some(format) => Ok(Some(format)),
        None => bail!(
            "import {}: neither a barrage results file nor a format barrage can tell: give --from (k6, vegeta, wrk2, hdr-log, jmeter, locust)",
            path.display()
        ),
    }
}

/// Imports barrage's results files: those of one split run (one plan, count of shards and
/// start) as one run.
fn import_ours(
    store: &mut Store,
    files: &[PathBuf],
    labels: &[(String, Option<String>)],
) -> anyhow::Result<Vec<(i64, String)>> {
    let mut groups: BTreeMap<String, (String, Vec<PathBuf>)> = BTreeMap::new();
    for (k, f) in files.iter().enumerate() {
        let header = barrage_metrics::ResultsReader::open(f).with_context(|| format!("import {}", f.display()))?;
        let launch = &header.header().launch;
        // An unsplit run is its own; the shards of one run share its plan, its count of
        // shards and its start (`barrage report` checks they make a whole).
        let key = match launch.shard {
            Some((_, n)) => format!("{} {n} {:?}", launch.plan_digest, launch.start_at_unix_us),
            None => format!("file {k}"),
        };
        groups.entry(key).or_insert_with(|| (header.header().host.clone(), Vec::new())).1.push(f.clone());
    }
    let mut kept = Vec::new();
    for (host, paths) in groups.values() {
        // The machine of the run is the one that wrote it, not the one importing it: only
        // its name is known.
        let env = Environment { host: host.clone(), ..Default::default() };
        let entry = Entry::of_files(paths, "import", &[], labels, &env)?;
        let what = match paths.len() {
            1 => paths[0].display().to_string(),
            n => format!("{n} shards merged"),
        };
        kept.push((store.record(&entry)?, what));
    }
    Ok(kept)
}
