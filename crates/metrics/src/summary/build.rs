//! A [`RunSummary`] from results files: their intervals merged by second, each figure worked
//! out from the merged recorder, in the order a report reads them.

use super::cache::{cache_summary, hit_ratios};
use super::checks::{flow_check, reply_check, self_check, stream_check, watch_check};
use super::flows::flow_summaries;
use super::{
    success_ratio, BackendSummary, Bytes, Durations, ErrorStat, ExemplarRow, Generator, GroupSummary, IntervalRow,
    Latencies, LatencyStats, PhaseStats, RequestCounts, RetrySummary, RunSummary, Spectrum, StepSummary, StreamSummary,
    TraceContextSummary, Warning, WarningKind, WorkloadSummary, GENERATOR, MIN_RATE_REQUESTS, SCATTER_POINTS,
    SUMMARY_VERSION,
};
use crate::coverage::ShardEnd;
use crate::file::{FileError, MergedIntervals, Mode, ResultsReader, RunFooter};
use crate::recorder::{new_histogram, Counts, Recorder, CLASS_NAMES};
use crate::sample::{ErrorKind, Phase, Protocol};
use crate::secrets::Redaction;
use crate::watch::{combine, HostSummary, HostTally, ProcKey, ProcSample, ProcessSummary, ProcessTally, WatchSample};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Requests of `timeline` finished in the first `seconds` of the run; a tick across that
/// moment counts by the share of it before.
fn finished_by(timeline: &crate::recorder::Timeline, seconds: f64) -> u64 {
    let tick_s = crate::recorder::TICK.as_secs_f64();
    let n: f64 = timeline
        .iter()
        .map(|t| {
            let before = ((seconds - f64::from(t.tick) * tick_s) / tick_s).clamp(0.0, 1.0);
            f64::from(t.ok.saturating_add(t.failed)) * before
        })
        .sum();
    n.round() as u64
}

/// Sampled requests gathered interval by interval, halved (every other one) whenever they
/// pass four times [`SCATTER_POINTS`], so a day-long run keeps a few MiB.
#[derive(Default)]
struct Scatter {
    points: Vec<crate::recorder::RequestPoint>,
    /// Keep one in this many of the points still to come.
    stride: usize,
    seen: usize,
}

impl Scatter {
    fn add(&mut self, points: Vec<crate::recorder::RequestPoint>) {
        let stride = self.stride.max(1);
        for p in points {
            // Failed requests are rare and telling: they are always kept.
            if !p.ok || self.seen.is_multiple_of(stride) {
                self.points.push(p);
            }
            self.seen += 1;
        }
        if self.points.len() > 4 * SCATTER_POINTS {
            let mut keep = false;
            self.points.retain(|p| {
                keep = !keep;
                !p.ok || keep
            });
            self.stride = stride * 2;
        }
    }
}

/// At most [`SCATTER_POINTS`] of `points`, evenly thinned, every failed one kept first.
fn thin(points: Vec<crate::recorder::RequestPoint>) -> Vec<crate::recorder::RequestPoint> {
    if points.len() <= SCATTER_POINTS {
        return points;
    }
    let (failed, ok): (Vec<_>, Vec<_>) = points.into_iter().partition(|p| !p.ok);
    let failed: Vec<_> = failed.into_iter().take(SCATTER_POINTS / 4).collect();
    let room = SCATTER_POINTS - failed.len();
    let step = ok.len().div_ceil(room).max(1);
    let mut out: Vec<_> = failed.into_iter().chain(ok.into_iter().step_by(step)).collect();
    out.sort_by_key(|p| p.ended_ms);
    out
}

/// Reads and merges results files into one summary. Merged, the shards of a split run must
/// all be there, once each, of one plan ([`crate::shards::check`]); with `force`, what
/// does not fit is merged anyway and said in a warning. One shard's file alone is that
/// shard's report, and says so. A file without a footer is a run that was killed.
pub fn summarize_with(paths: &[PathBuf], force: bool) -> Result<RunSummary, FileError> {
    summarize_as(paths, force, Progress::Ended)
}

/// [`summarize_with`], refusing an incomplete or mixed set of shards.
pub fn summarize(paths: &[PathBuf]) -> Result<RunSummary, FileError> {
    summarize_with(paths, false)
}

/// Reads and merges the files of a run still going on, as they are being written (the live
/// page and fleet-wide `--slo` of `barrage collect`): the figures are the run so far. A file
/// without a footer is a run still going on, not one killed: its arrivals are due up to
/// the last second it recorded (the seconds its data covers), and nothing of it is judged
/// lost or never sent; the summary says how far the run has got ([`RunSummary::running`]),
/// and its shard rows say running. What does not fit is merged anyway, as with `force`.
/// `ended`: the copies of shards known to have ended even without a footer (a collector
/// judged them lost): read as killed, as the final report reads them.
pub fn summarize_running(paths: &[PathBuf], ended: &[PathBuf]) -> Result<RunSummary, FileError> {
    summarize_as(paths, true, Progress::Running(ended))
}

/// How files without a footer are read: a run killed, or one still being written (but
/// for the files said to have ended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Progress<'a> {
    Ended,
    Running(&'a [PathBuf]),
}

impl Progress<'_> {
    /// How the file `path` alone is read.
    fn of(self, path: &PathBuf) -> Self {
        match self {
            Progress::Running(ended) if ended.contains(path) => Progress::Ended,
            p => p,
        }
    }

    fn running(self) -> bool {
        matches!(self, Progress::Running(_))
    }
}

fn summarize_as(paths: &[PathBuf], force: bool, progress: Progress<'_>) -> Result<RunSummary, FileError> {
    if paths.is_empty() {
        return Err(FileError::Shards("no results file to summarize".into()));
    }
    let readers = paths.iter().map(|p| ResultsReader::open(p)).collect::<Result<Vec<_>, _>>()?;
    // Every shard's file lists the whole run's arrivals (one plan): any one's will do.
    let arrivals = readers.iter().find_map(|r| r.schedule().map(<[u64]>::to_vec));
    // Running, one shard's file is the fleet's first: the others are still to come.
    let first = readers[0].header().launch.shard;
    if readers.len() == 1 && (progress == Progress::Ended || first.is_none_or(|(_, n)| n < 2)) {
        let shard = first;
        drop(readers);
        let mut s = merge(paths, progress)?;
        if let Some((i, n)) = shard {
            s.warnings.push(Warning::new(WarningKind::OneShard, format!(
                "this is shard {i}/{n} of a split run: its figures are its part of the run; `barrage report` over all {n} shards' files (and a takeover's, `NAME.takeover-I.brg`, if one ran) gives the whole"
            )));
        }
        let end = ShardEnd {
            shard: shard.unwrap_or((0, 1)),
            killed: killed(&s),
            from_s: None,
            through_s: through(&s),
            after: None,
        };
        if let Some(arrivals) = &arrivals {
            crate::coverage::apply(&mut s, arrivals, &[end]);
        }
        return Ok(s);
    }
    let files: Vec<_> = readers.iter().map(|r| (r.path(), r.header())).collect();
    let unfit = match progress {
        Progress::Ended => crate::shards::check(&files),
        Progress::Running(_) => crate::shards::check_running(&files),
    }
    .err();
    if let (Some(why), false) = (&unfit, force) {
        return Err(FileError::Shards(why.clone()));
    }
    let headers: Vec<_> = readers.iter().map(|r| r.header().clone()).collect();
    let spans: Vec<(u64, Option<u64>)> =
        readers.iter().map(|r| (r.header().started_unix_ms, r.footer().map(|f| f.ended_unix_ms))).collect();
    drop(readers);
    let mut s = merge(paths, progress)?;
    if let Some(why) = unfit {
        let text = format!("{why}; merged anyway (--force): the totals are not one run's");
        s.warnings.insert(0, Warning::new(WarningKind::ShardsForced, text));
    }
    if crate::shards::split(&headers.iter().collect::<Vec<_>>()) {
        add_shards(&mut s, paths, &headers, arrivals.as_deref(), progress)?;
        s.warnings.extend(crate::shards::apart(&headers));
    } else {
        s.warnings.extend(crate::shards::runs_apart(&spans));
    }
    Ok(s)
}

/// The rows of a split run's shards, each from its own file, and what the shards' ends make
/// of the run's coverage and success.
fn add_shards(
    s: &mut RunSummary,
    paths: &[PathBuf],
    headers: &[crate::file::RunHeader],
    arrivals: Option<&[u64]>,
    progress: Progress<'_>,
) -> Result<(), FileError> {
    let origin_ms = headers.iter().map(|h| h.started_unix_ms).min().unwrap_or(0);
    let mut counted = true;
    let mut ends = Vec::new();
    for (path, header) in paths.iter().zip(headers) {
        let own = merge(std::slice::from_ref(path), progress.of(path))?;
        counted &= own.requests.quota.is_some();
        let mut row = crate::shards::row(path, header, &own, origin_ms);
        let (shard, from_s) = (header.launch.shard.unwrap_or((0, 1)), crate::shards::takeover_from(header));
        // A shard's own run whose share a takeover took over was lost, footer or not.
        let taken = from_s.is_none()
            && headers.iter().any(|h| h.launch.shard == Some(shard) && crate::shards::takeover_from(h).is_some());
        let through_s = through(&own).filter(|_| !taken);
        row.running = through_s.is_some();
        s.shards.push(row);
        let killed = killed(&own) || (taken && own.running.is_some());
        ends.push(ShardEnd { shard, killed, from_s, through_s, after: crate::shards::takeover_after(header) });
        s.warnings.extend(crate::shards::restarted_warning(header));
    }
    if !ends.iter().any(|e| e.through_s.is_some()) {
        s.running = None;
    }
    crate::shards::judge_ends(&mut s.shards, s.mode == Mode::Closed && counted);
    let rows = std::mem::take(&mut s.shards);
    crate::shards::takeover_late(&rows, s);
    crate::shards::takeover_gaps(&rows, s);
    s.shards = rows;
    match arrivals {
        Some(arrivals) => crate::coverage::apply(s, arrivals, &ends),
        None => {
            crate::shards::mark_taken_over(&mut s.shards, &ends);
            if let Some(count) = crate::shards::count_lost(&mut s.shards, &ends, headers) {
                crate::coverage::apply_count(s, count);
            }
        }
    }
    for row in &s.shards {
        let Some(why) = &row.behind else { continue };
        // A shard lost, stopped or missing did not fall behind: it ended, or never came.
        let ended = ["lost", "stopped", "missing"].iter().any(|w| why.starts_with(w));
        let text = match ended {
            true => format!("shard {} on {}: {why}", row.shard, row.host),
            false => format!(
                "shard {} on {} fell behind its share: {why}; its part of the figures describes that load machine, not the server",
                row.shard, row.host
            ),
        };
        s.warnings.push(Warning::new(WarningKind::ShardBehind, text));
    }
    Ok(())
}

/// Whether the run of `readers` was stopped early as a whole: every file that ended did so
/// stopped. One shard of several stopped (its Ctrl-C) while the others ran to their end is
/// a shard that did not send its share, not a run stopped on purpose.
fn stopped(readers: &[ResultsReader]) -> bool {
    let mut ended = readers.iter().filter_map(|r| r.footer()).peekable();
    ended.peek().is_some() && ended.all(|f| f.interrupted)
}

/// Whether the files of `s` end without a footer: their run was killed.
fn killed(s: &RunSummary) -> bool {
    s.warnings.iter().any(|w| w.kind == WarningKind::RunKilled)
}

/// A run still going on: the seconds of its schedule its file holds so far (an interval
/// `k` holds the second from `k` to `k + 1` of it); `None` for a run that ended.
fn through(s: &RunSummary) -> Option<u64> {
    s.running.as_ref().map(|_| s.intervals.last().map_or(0, |r| r.second + 1))
}

/// Reads and merges results files into one summary, as they are.
fn merge(paths: &[PathBuf], progress: Progress<'_>) -> Result<RunSummary, FileError> {
    let readers = paths.iter().map(|p| ResultsReader::open(p)).collect::<Result<Vec<_>, _>>()?;
    let mut merged = MergedIntervals::new(readers);
    let mut total = Recorder::new();
    let mut steps: BTreeMap<u32, StepTotal> = BTreeMap::new();
    let mut intervals = Vec::new();
    let mut seen: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut watched = Watched::new(merged.readers());
    let mut scatter = Scatter::default();
    for mut m in merged.by_ref() {
        // Sampled requests go to the scatter alone, thinned as they come: memory stays flat.
        scatter.add(std::mem::take(&mut m.recorder.samples));
        for b in m.recorder.backends.iter().filter(|b| b.requests > 0) {
            let span = seen.entry(b.name.clone()).or_insert((m.second, m.second));
            span.1 = m.second;
        }
        total.add(&m.recorder);
        let length_s = f64::from(m.length_ms) / 1e3;
        steps.entry(m.step).or_insert_with(StepTotal::new).add(&m.recorder, length_s);
        let mut row = row(m.second, length_s, &m.recorder);
        watched.add(&mut row, &m.watch, length_s);
        intervals.push(row);
    }
    let timeline = total.timeline.clone();
    // Each backend's answers per tick, for its gaps and the events' backend shares.
    let backends = total.backends.clone();
    let completed = total.counts.completed;
    let mut s = build(merged.readers(), total, steps, intervals, progress);
    add_fairness(&mut s, &seen);
    let unproven = watched.unproven.clone();
    (s.processes, s.host) = watched.finish();
    if let Some(me) = s.processes.iter_mut().find(|p| p.name == GENERATOR) {
        s.generator.cpu_max_percent = me.cpu_max_percent;
        // The run's CPU over its whole duration, exact, is the one figure of barrage's CPU;
        // the per-second samples only draw its course.
        if let Some((user, system)) = generator_cpu(merged.readers(), s.duration.total_s) {
            (me.cpu_user_mean_percent, me.cpu_system_mean_percent) = (user, system);
            me.cpu_mean_percent = user + system;
        }
    }
    s.warnings.extend(unproven.into_iter().map(|name| {
        Warning::new(WarningKind::ProcessIdentity, format!(
            "{name} was watched by several results files without process identity (written by a barrage before format version 4): its samples were added up as different processes; if they watched the same process, its CPU and memory are overstated"
        ))
    }));
    // Runs merged from different start times end where the last interval ends.
    let end_s = s.intervals.last().map_or(0.0, |r| r.second as f64 + r.length_s).max(s.duration.total_s);
    let mut gaps = crate::gaps::find(&timeline, completed, &backends, end_s);
    for b in &mut s.backends {
        b.gaps = gaps.remove(&b.name).unwrap_or_default();
    }
    let backend_ticks = crate::events::backend_ticks(&backends);
    s.events = crate::events::analyse(&events(merged.readers()), &timeline, &backend_ticks, &s.intervals, end_s);
    s.warnings.extend(watch_check(&s));
    s.scatter = thin(scatter.points);
    s.finished_in_attack = Some(finished_by(&timeline, s.duration.attack_s));
    Ok(s)
}

/// The events of every file, their offsets moved onto the earliest run's start, their
/// commands and output redacted.
fn events(readers: &[ResultsReader]) -> Vec<crate::watch::EventRecord> {
    let origin = readers.iter().map(|r| r.header().started_unix_ms).min().unwrap_or(0);
    let redaction = redaction_of(readers);
    let mut out = Vec::new();
    for (file, r) in readers.iter().enumerate() {
        let late = r.header().started_unix_ms - origin;
        out.extend(r.events().iter().cloned().map(|mut e| {
            e.offset_ms += late;
            // Keep the commands of different files apart.
            e.index += (file as u32) << 16;
            e.redact(&redaction);
            e
        }));
    }
    out
}

/// How the summary of these files keeps secrets out: as their settings say (redacted unless
/// every file was written with `--no-redact`). A file written by this barrage is redacted
/// already; an older one, or one made by hand, is redacted here.
fn redaction_of(readers: &[ResultsReader]) -> Redaction {
    let each: Vec<Redaction> = readers
        .iter()
        .map(|r| Redaction::of_settings(&serde_json::from_str(&r.header().settings_json).unwrap_or_default()))
        .collect();
    Redaction::strictest(&each)
}

/// Per-process tallies over the run, in order of first appearance, barrage last.
///
/// Each second, the samples of every merged file are first combined into one per name:
/// samples of the same process (same machine, same PIDs started at the same times) watched
/// by several runs are averaged, never added; different processes of one name (each
/// machine's own nginx) add up. So the rows (CSV, charts) and the tallies (the summary)
/// count each process once. barrage's sample of each run is that run's engine threads: one
/// per run, always added.
struct Watched {
    /// Per file: the machine its PIDs belong to (host name, boot ID).
    machines: Vec<(String, String)>,
    processes: Vec<ProcessTally>,
    names: Vec<String>,
    generator: ProcessTally,
    host: HostTally,
    /// Names that several files watched without process identity (version 3 files).
    unproven: std::collections::BTreeSet<String>,
}

impl Watched {
    fn new(readers: &[ResultsReader]) -> Self {
        Watched {
            machines: readers.iter().map(|r| (r.header().host.clone(), r.header().boot_id.clone())).collect(),
            processes: Vec::new(),
            names: Vec::new(),
            generator: ProcessTally::default(),
            host: HostTally::default(),
            unproven: Default::default(),
        }
    }

    /// Which process `p`, watched by file `file`, is (see [`ProcKey`]).
    fn key<'a>(&'a self, file: usize, p: &'a ProcSample) -> ProcKey<'a> {
        let (host, boot) = &self.machines[file];
        (!p.roots.is_empty()).then_some((host.as_str(), boot.as_str(), p.roots.as_slice()))
    }

    /// Adds one interval's samples (one per merged file) to the tallies and to its row.
    fn add(&mut self, row: &mut IntervalRow, samples: &[(usize, WatchSample)], secs: f64) {
        let watched = combine(samples.iter().flat_map(|(f, w)| w.processes.iter().map(|p| (self.key(*f, p), p))));
        self.note_unproven(samples);
        for p in &watched {
            let i = match self.names.iter().position(|n| *n == p.name) {
                Some(i) => i,
                None => {
                    self.names.push(p.name.clone());
                    self.processes.push(ProcessTally::default());
                    self.names.len() - 1
                }
            };
            self.processes[i].add(p, secs);
            row.cpu_percent.insert(p.name.clone(), f64::from(p.cpu_percent()));
            row.rss_kib.insert(p.name.clone(), p.rss_kib);
        }
        let runs = combine(samples.iter().map(|(_, w)| (None, &w.generator)));
        if let Some(mut me) = runs.into_iter().next() {
            me.name = GENERATOR.into();
            self.generator.add(&me, secs);
            row.cpu_percent.insert(GENERATOR.into(), f64::from(me.cpu_percent()));
            row.rss_kib.insert(GENERATOR.into(), me.rss_kib);
        }
        for (_, w) in samples {
            self.host.add(&w.host, secs);
            row.host_cpu_percent = Some(f64::from(w.host.cpu_percent));
        }
    }

    /// Remembers the names that more than one file watched, running, without identity.
    fn note_unproven(&mut self, samples: &[(usize, WatchSample)]) {
        let mut files: BTreeMap<&str, std::collections::BTreeSet<usize>> = BTreeMap::new();
        for (f, w) in samples {
            for p in w.processes.iter().filter(|p| p.roots.is_empty() && p.processes > 0) {
                files.entry(p.name.as_str()).or_default().insert(*f);
            }
        }
        for (name, f) in files {
            if f.len() > 1 && !self.unproven.contains(name) {
                self.unproven.insert(name.to_string());
            }
        }
    }

    fn finish(self) -> (Vec<ProcessSummary>, Option<HostSummary>) {
        let host = self.host.finish();
        let mut processes: Vec<ProcessSummary> = self.processes.into_iter().map(ProcessTally::finish).collect();
        if host.is_some() {
            processes.push(self.generator.finish());
        }
        (processes, host)
    }
}

/// Jain's fairness index over `counts`, taken over `n` backends (missing ones count 0).
fn jain(counts: impl Iterator<Item = u64>, n: usize) -> Option<f64> {
    let (sum, squares) = counts.fold((0.0, 0.0), |(s, q), x| (s + x as f64, q + (x * x) as f64));
    (n >= 2 && sum > 0.0).then(|| sum * sum / (n as f64 * squares))
}

/// Fairness over the run and per interval, against every backend the run saw, and when
/// each backend first and last answered.
fn add_fairness(s: &mut RunSummary, seen: &BTreeMap<String, (u64, u64)>) {
    let n = s.backends.len();
    s.fairness = jain(s.backends.iter().map(|b| b.requests), n);
    for row in &mut s.intervals {
        row.fairness = jain(row.backends.values().copied(), n);
    }
    for b in &mut s.backends {
        if let Some((first, last)) = seen.get(&b.name) {
            (b.first_second, b.last_second) = (*first, *last);
        }
    }
}

fn row(second: u64, length_s: f64, r: &Recorder) -> IntervalRow {
    let failed = r.counts.completed.saturating_sub(r.counts.ok);
    IntervalRow {
        second,
        length_s,
        sent: r.counts.sent,
        dropped: r.never_sent(),
        ok: r.counts.ok,
        errors: failed,
        throughput_per_sec: if length_s > 0.0 { r.counts.ok as f64 / length_s } else { 0.0 },
        p50_us: quantile(&r.corrected, 0.5),
        p90_us: quantile(&r.corrected, 0.9),
        p99_us: quantile(&r.corrected, 0.99),
        max_us: if r.corrected.is_empty() { 0 } else { r.corrected.max() },
        service_p50_us: quantile(&r.service, 0.5),
        service_p99_us: quantile(&r.service, 0.99),
        exemplars: ExemplarRow::of(&r.exemplars),
        phase_mean_us: Phase::ALL
            .iter()
            .filter(|p| !r.phase(**p).is_empty())
            .map(|p| (p.name().to_string(), r.phase(*p).mean()))
            .collect(),
        bytes_in: r.counts.bytes_in,
        bytes_out: r.counts.bytes_out,
        hit_ratio: hit_ratios(r).map(|h| h.0),
        byte_hit_ratio: hit_ratios(r).map(|h| h.1),
        backends: r.backends.iter().map(|b| (b.name.clone(), b.requests)).collect(),
        fairness: None,
        ..Default::default()
    }
}

/// The window of a group's rate is the whole run's, so the run's count says whether it is one.
fn groups(keyed: &crate::recorder::Keyed, all: u64, run_s: f64) -> Vec<GroupSummary> {
    let mut out: Vec<GroupSummary> = keyed
        .iter()
        .map(|k| GroupSummary {
            name: k.name.clone(),
            requests: k.requests,
            share: ratio(k.requests as f64, all as f64),
            failed: k.failed,
            dropped: k.flow.dropped,
            success_ratio: success_ratio(k.requests - k.failed, k.requests, k.flow.dropped),
            throughput_per_sec: per_sec(k.requests - k.failed, all, run_s),
            latency: LatencyStats::of(&k.latency),
            check_failed: k.flow.check_failed,
            capture_failed: k.flow.capture_failed,
            skipped: k.flow.skipped,
            example: k.example.clone(),
        })
        .collect();
    out.sort_by(|a, b| b.requests.cmp(&a.requests).then_with(|| a.name.cmp(&b.name)));
    out
}

/// `--trace-context`, as the first file's settings say it was asked, with the requests the
/// files' footers counted sampled.
fn trace_context(
    readers: &[ResultsReader],
    settings: &serde_json::Value,
    total: &Recorder,
) -> Option<TraceContextSummary> {
    let trace = settings.get("plan")?.get("trace")?;
    Some(TraceContextSummary {
        sample: trace.get("sample")?.as_f64()?,
        requests_sampled: readers.iter().filter_map(|r| r.footer()).map(|f| f.trace_sampled).sum(),
        header_bytes_per_request: trace.get("header_bytes_per_request")?.as_u64()?,
        slowest: ExemplarRow::of(&total.exemplars),
    })
}

fn retry_summary(total: &Recorder) -> Option<RetrySummary> {
    let c = &total.counts;
    // A request due and never sent had no attempt: it failed at the first and in the end.
    let never = total.never_sent();
    (c.logical > 0).then(|| RetrySummary {
        requests: c.logical,
        attempts: c.attempts,
        attempts_per_request: ratio(c.attempts as f64, c.logical as f64),
        first_try_success_ratio: success_ratio(c.first_ok, c.logical, never),
        final_success_ratio: success_ratio(c.final_ok, c.logical, never),
        latency: total.whole.as_deref().map(LatencyStats::of).unwrap_or_default(),
    })
}

fn backend_summaries(total: &Recorder) -> Vec<BackendSummary> {
    let attributed: u64 = total.backends.iter().map(|b| b.requests).sum();
    let mut out: Vec<BackendSummary> = total
        .backends
        .iter()
        .map(|b| BackendSummary {
            name: b.name.clone(),
            requests: b.requests,
            share: ratio(b.requests as f64, attributed as f64),
            failed: b.failed,
            p50_us: quantile(&b.latency, 0.5),
            p99_us: quantile(&b.latency, 0.99),
            first_second: 0,
            last_second: 0,
            gaps: Vec::new(),
        })
        .collect();
    out.sort_by(|a, b| b.requests.cmp(&a.requests).then_with(|| a.name.cmp(&b.name)));
    out
}

/// A phase's figures, its total spread over `requests` (all those finished, whether the
/// phase happened in them or not).
pub(super) fn phase_stats(h: &Histogram<u64>, requests: u64) -> PhaseStats {
    // Summed as the histogram's mean is taken (each value at the middle of its bucket), in
    // integers: exact, so the total is the mean times the count without float noise.
    let total: u128 = h
        .iter_recorded()
        .map(|v| u128::from(h.median_equivalent(v.value_iterated_to())) * u128::from(v.count_at_value()))
        .sum();
    let total_us = total as f64;
    PhaseStats {
        count: h.len(),
        mean_us: if h.is_empty() { 0.0 } else { h.mean() },
        p50_us: quantile(h, 0.5),
        p99_us: quantile(h, 0.99),
        total_us,
        per_request_us: ratio(total_us, requests as f64),
    }
}

fn quantile(h: &Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

pub(super) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// `n` per second of `secs`, a window that held `requests` requests; `None` when they are
/// fewer than [`MIN_RATE_REQUESTS`].
pub(super) fn per_sec(n: u64, requests: u64, secs: f64) -> Option<f64> {
    (requests >= MIN_RATE_REQUESTS).then(|| ratio(n as f64, secs))
}

fn build(
    readers: &[ResultsReader],
    total: Recorder,
    steps: BTreeMap<u32, StepTotal>,
    intervals: Vec<IntervalRow>,
    progress: Progress<'_>,
) -> RunSummary {
    let first = readers[0].header();
    let redaction = redaction_of(readers);
    let mut s = identity(readers, &redaction);
    s.duration = durations(readers, &intervals, &mut s.warnings, progress);
    if progress.running() && readers.iter().any(|r| r.footer().is_none() && !r.corrupt()) {
        let planned_s = s.settings["plan"]["duration_s"].as_f64();
        s.running = Some(super::Running { covered_s: s.duration.total_s, planned_s });
    }
    s.requests = counts(&total);
    s.requests.quota = readers.iter().map(|r| r.footer().and_then(|f| f.due)).sum();
    s.streams = stream_summary(&total.counts);
    let attack = s.duration.attack_s;
    let run = s.duration.total_s;
    s.rate_per_sec = per_sec(total.counts.sent, total.counts.sent, attack);
    s.throughput_per_sec = per_sec(total.counts.ok, total.counts.completed, run);
    s.success_ratio = success_ratio(total.counts.ok, total.counts.completed, total.never_sent());
    s.latency = Latencies { corrected: LatencyStats::of(&total.corrected), service: LatencyStats::of(&total.service) };
    s.latency_spectrum = Spectrum::of(&total.corrected, &total.service);
    s.latency_by_class = CLASS_NAMES
        .iter()
        .zip(&total.by_class)
        .filter(|(_, h)| !h.is_empty())
        .map(|(name, h)| (name.to_string(), LatencyStats::of(h)))
        .collect();
    s.phases = Phase::ALL
        .iter()
        .map(|&p| (p.name().to_string(), phase_stats(total.phase(p), total.counts.completed)))
        .collect();
    s.cache = cache_summary(&total);
    s.workload = WorkloadSummary::of(&total.counts.workload, s.cache.is_some());
    s.sent_prefix = readers.iter().map(|r| r.footer().map_or(0, |f| f.sent_prefix)).min().unwrap_or(0);
    s.first_send_ms = readers.iter().filter_map(ResultsReader::first_send_us).min().map(|us| us as f64 / 1e3);
    s.backends = backend_summaries(&total);
    s.retries = retry_summary(&total);
    s.trace_context = trace_context(readers, &s.settings, &total);
    s.by_name = groups(&total.names, total.counts.completed, s.duration.total_s);
    s.by_method = groups(&total.methods, total.counts.completed, s.duration.total_s);
    s.replies = groups(&total.replies, total.counts.completed, s.duration.total_s);
    // Written redacted by this barrage; an older file, or one made by hand, is redacted here.
    for example in s.replies.iter_mut().filter_map(|r| r.example.as_mut()) {
        *example = redaction.text(example).into_owned();
    }
    let done = total.counts.completed as f64;
    s.bytes = Bytes {
        in_total: total.counts.bytes_in,
        out_total: total.counts.bytes_out,
        in_mean: ratio(total.counts.bytes_in as f64, done),
        out_mean: ratio(total.counts.bytes_out as f64, done),
        in_per_sec: per_sec(total.counts.bytes_in, total.counts.completed, run),
        out_per_sec: per_sec(total.counts.bytes_out, total.counts.completed, run),
    };
    s.status_codes = total.status_counts().into_iter().map(|(c, n)| (c.to_string(), n)).collect();
    s.errors = ErrorKind::ALL
        .iter()
        .filter(|k| total.counts.errors[**k as usize] > 0)
        .map(|&k| ErrorStat {
            kind: k.name().into(),
            count: total.counts.errors[k as usize],
            example: redaction.text(total.example(k).unwrap_or_default()).into_owned(),
        })
        .collect();
    s.generator = generator(readers, &total, run, first.mode);
    s.steps = step_summaries(readers, steps, s.duration.attack_s);
    (s.flows, s.flows_total) = flow_summaries(readers, &total, s.duration.attack_s);
    s.intervals = intervals;
    add_warnings(&mut s, readers);
    s
}

/// What the merged files are, before any figure: their versions, hosts, start, mode, URLs
/// and settings (both redacted), and whether a run was insecure or stopped early.
fn identity(readers: &[ResultsReader], redaction: &Redaction) -> RunSummary {
    let first = readers[0].header();
    let mut settings = serde_json::from_str(&first.settings_json).unwrap_or(serde_json::Value::Null);
    redaction.json(&mut settings);
    let mut s = RunSummary {
        version: SUMMARY_VERSION,
        barrage_version: first.barrage_version.clone(),
        files: readers.iter().map(|r| r.path().display().to_string()).collect(),
        hosts: readers.iter().map(|r| r.header().host.clone()).collect(),
        started_unix_ms: readers.iter().map(|r| r.header().started_unix_ms).min().unwrap_or(0),
        mode: first.mode,
        urls: distinct(
            readers.iter().flat_map(|r| r.header().urls.iter()),
            readers.iter().map(|r| r.header().urls.len()).sum(),
        ),
        settings,
        insecure: readers.iter().any(|r| r.header().insecure),
        unredacted: !redaction.enabled,
        interrupted: stopped(readers),
        stopped_by: readers.iter().find_map(|r| r.stopped_by()).map(String::from),
        ..Default::default()
    };
    s.hosts = distinct(s.hosts.iter(), s.hosts.len());
    for url in &mut s.urls {
        if let std::borrow::Cow::Owned(redacted) = redaction.url(url) {
            *url = redacted;
        }
    }
    s
}

/// The warnings of the files (a cut-off tail, a lost log) and those the figures call for,
/// after every figure is in.
fn add_warnings(s: &mut RunSummary, readers: &[ResultsReader]) {
    s.warnings.extend(readers.iter().filter_map(|r| {
        let kind = if r.corrupt() { WarningKind::FileCorrupt } else { WarningKind::FileCutOff };
        r.warning().map(|text| Warning::new(kind, text))
    }));
    let log_dropped: u64 = readers.iter().filter_map(|r| r.footer()).map(|f| f.log_chunks_dropped).sum();
    if log_dropped > 0 {
        s.warnings.push(Warning::new(WarningKind::LogDropped, format!(
            "the request log lost {log_dropped} chunk(s) of rows because the disk fell behind (the load was not slowed down for it; the results file is complete)"
        )));
    }
    s.warnings.extend(flow_check(s));
    s.warnings.extend(reply_check(s));
    s.warnings.extend(stream_check(s));
    s.warnings.extend(self_check(s));
}

fn counts(total: &Recorder) -> RequestCounts {
    let c = &total.counts;
    let errors = total.error_count();
    RequestCounts {
        total: c.completed,
        sent: c.sent,
        ok: c.ok,
        rejected: c.rejected,
        http_errors: c.completed.saturating_sub(c.ok).saturating_sub(c.rejected).saturating_sub(errors),
        errors,
        late: c.late,
        dropped: total.never_sent(),
        unfinished: c.sent.saturating_sub(c.completed),
        quota: None,
        connections: c.connections,
        stale_retries: c.stale_retries,
        protocols: Protocol::ALL
            .iter()
            .filter(|p| c.protocols[**p as usize] > 0)
            .map(|p| (p.name().to_string(), c.protocols[*p as usize]))
            .collect(),
        stream_retries: c.stream_retries,
    }
}

/// The streams' figures, when any connection spoke HTTP/2 or HTTP/3 or was asked to speak
/// HTTP/2.
fn stream_summary(c: &crate::recorder::Counts) -> Option<StreamSummary> {
    let multiplexed = c.protocols[Protocol::Http2 as usize] + c.protocols[Protocol::Http3 as usize];
    if multiplexed == 0 && c.http1_fallbacks == 0 {
        return None;
    }
    Some(StreamSummary {
        streams_max: c.streams_max,
        stream_cap: (c.stream_cap > 0).then_some(c.stream_cap),
        send_stalls: c.send_stalls,
        recv_stalls: c.recv_stalls,
        http1_fallbacks: c.http1_fallbacks,
    })
}

/// The run's durations: by the footers; without one, by the intervals read. A file without
/// a footer is said killed, unless it is of a run still going on.
fn durations(
    readers: &[ResultsReader],
    intervals: &[IntervalRow],
    warnings: &mut Vec<Warning>,
    progress: Progress<'_>,
) -> Durations {
    let footers: Vec<_> = readers.iter().filter_map(|r| r.footer()).collect();
    if footers.len() == readers.len() {
        // Merged runs ran side by side: the longest one is the run's duration.
        let attack = footers.iter().map(|f| f.attack_us).max().unwrap_or(0);
        let wait = footers.iter().map(|f| f.wait_us).max().unwrap_or(0);
        return Durations {
            total_s: (attack + wait) as f64 / 1e6,
            attack_s: attack as f64 / 1e6,
            wait_s: wait as f64 / 1e6,
        };
    }
    // A run that was killed has no footer, and one read only up to a corrupt record has none
    // read: the intervals read are all we know. Folded from +0: a sum of no `f64` is -0,
    // which would read "-0 s".
    let seconds = intervals.iter().map(|i| i.length_s).fold(0.0, |a, b| a + b);
    let unread = readers.iter().filter(|r| r.footer().is_none());
    let corrupt = unread.clone().filter(|r| r.corrupt()).count();
    let (killed, n) = (unread.count() - corrupt, readers.len());
    let covered = if intervals.is_empty() {
        "no interval could be read, so how long the run lasted is unknown".to_string()
    } else {
        format!("figures cover the {seconds:.0} s of the {} interval(s) read", intervals.len())
    };
    if killed > 0 && progress == Progress::Ended {
        let text = format!("{killed} of {n} results file(s) have no footer (the run was killed): {covered}");
        warnings.push(Warning::new(WarningKind::RunKilled, text));
    }
    if corrupt > 0 {
        warnings.push(Warning::new(WarningKind::FooterUnread, format!(
            "{corrupt} of {n} results file(s) stop at a corrupt record (see its warning), their footer unread: {covered}"
        )));
    }
    Durations { total_s: seconds, attack_s: seconds, wait_s: 0.0 }
}

/// barrage's CPU (user, system) over `run_s`, % of one core: the CPU time of the engine
/// threads of every run (the files' footers), so merged runs add up as their threads do.
/// `None` when no file has a footer.
fn generator_cpu(readers: &[ResultsReader], run_s: f64) -> Option<(f64, f64)> {
    let footers: Vec<&RunFooter> = readers.iter().filter_map(|r| r.footer()).collect();
    (!footers.is_empty()).then(|| {
        let percent = |us: u64| ratio(us as f64 / 1e4, run_s);
        (percent(footers.iter().map(|f| f.cpu_user_us).sum()), percent(footers.iter().map(|f| f.cpu_system_us).sum()))
    })
}

fn generator(readers: &[ResultsReader], total: &Recorder, run_s: f64, mode: Mode) -> Generator {
    let threads = readers.iter().map(|r| r.header().threads).sum();
    Generator {
        cpu_percent: generator_cpu(readers, run_s).map_or(0.0, |(user, system)| user + system),
        threads,
        lag_p99_us: if mode == Mode::Open { quantile(&total.lag, 0.99) } else { 0 },
        bound_reached: readers.iter().any(|r| r.footer().is_some_and(|f| f.bound_reached)),
        peak_rss_kib: readers.iter().filter_map(|r| r.footer()).map(|f| f.peak_rss_kib).max().unwrap_or(0),
        cpu_max_percent: 0.0,
        coalesced_us: readers.iter().filter_map(ResultsReader::coalesced_us).max().unwrap_or(0),
    }
}

/// What a step's row needs of its intervals: their counts, latencies and length. Not a
/// whole recorder: the summary is built as the run ends, when memory peaks, and a
/// recorder's histograms are megabytes.
struct StepTotal {
    counts: Counts,
    never_sent: u64,
    corrected: Histogram<u64>,
    service: Histogram<u64>,
    secs: f64,
}

impl StepTotal {
    fn new() -> Self {
        StepTotal {
            counts: Counts::default(),
            never_sent: 0,
            corrected: new_histogram(),
            service: new_histogram(),
            secs: 0.0,
        }
    }

    fn add(&mut self, r: &Recorder, secs: f64) {
        self.counts.add(&r.counts);
        self.never_sent += r.never_sent();
        self.corrected.add(&r.corrected).expect("histograms share bounds");
        self.service.add(&r.service).expect("histograms share bounds");
        self.secs += secs;
    }
}

/// A step lasts from its start to the next step's start, or to the end of the attack:
/// the wait for the last responses is not part of any step's rate.
fn step_summaries(readers: &[ResultsReader], steps: BTreeMap<u32, StepTotal>, attack_s: f64) -> Vec<StepSummary> {
    let infos = &merged_steps(readers);
    let start_s = |i: usize| infos.get(i).map(|s| s.start_ms as f64 / 1e3);
    // Sent and not yet finished as each step begins: what the steps before carry into it.
    let mut in_flight = 0u64;
    steps
        .into_iter()
        .map(|(i, r)| {
            let carried_in = in_flight;
            in_flight = (in_flight + r.counts.sent).saturating_sub(r.counts.completed);
            let i = i as usize;
            let secs = match start_s(i) {
                Some(begin) => (start_s(i + 1).unwrap_or(attack_s).min(attack_s) - begin).max(0.0),
                None => r.secs,
            };
            let failed = r.counts.completed.saturating_sub(r.counts.ok);
            let c = &r.counts;
            StepSummary {
                label: infos.get(i).map(|s| s.label.clone()).unwrap_or_else(|| format!("step {i}")),
                duration_s: secs,
                requests: r.counts.completed,
                ok: r.counts.ok,
                failed,
                sent: c.sent,
                dropped: r.never_sent,
                carried_in,
                success_ratio: success_ratio(c.ok, c.completed, r.never_sent),
                rate_per_sec: per_sec(c.sent, c.sent, secs),
                throughput_per_sec: per_sec(c.ok, c.completed, secs),
                start_s: start_s(i).unwrap_or(0.0),
                latency: Latencies { corrected: LatencyStats::of(&r.corrected), service: LatencyStats::of(&r.service) },
            }
        })
        .collect()
}

/// Each value once, in order of first appearance; `most` is how many there are at most.
pub(super) fn distinct<S: AsRef<str> + Eq + std::hash::Hash + Copy>(
    values: impl Iterator<Item = S>,
    most: usize,
) -> Vec<String> {
    // Hashed: the URLs of merged runs are up to a million each, and comparing each with all
    // before it took minutes. Sized at once: growing, the set hashed them all again each
    // time it doubled, reading each from wherever it lies in memory (a second a million).
    let mut seen = std::collections::HashSet::with_capacity(most);
    values.filter(|v| seen.insert(*v)).map(|v| v.as_ref().to_string()).collect()
}

/// The steps of runs merged side by side: the first file's, each labelled with what all
/// the runs offered together ([`sum_labels`]): four runs of "100 req/s" are "400 req/s".
fn merged_steps(readers: &[ResultsReader]) -> Vec<crate::file::StepInfo> {
    let mut steps = readers[0].header().steps.clone();
    if readers.iter().all(|r| r.header().launch.shard.is_some()) {
        // The shards of one run each say what the whole run offered.
        return steps;
    }
    for (i, step) in steps.iter_mut().enumerate() {
        let labels: Vec<&str> =
            readers.iter().filter_map(|r| r.header().steps.get(i)).map(|st| st.label.as_str()).collect();
        step.label = sum_labels(&labels);
    }
    steps
}

/// One label for steps of several runs at once. Labels of one shape ("100 req/s",
/// "100 → 2000 req/s", "50 workers") add up number by number; labels of different shapes
/// are listed, each once, joined by " + ".
pub(super) fn sum_labels(labels: &[&str]) -> String {
    let numeric = |c: char| c.is_ascii_digit() || c == '.';
    // The label with each number replaced by '#'.
    let shape = |l: &str| {
        let mut out = String::new();
        for (k, c) in l.char_indices() {
            if !numeric(c) {
                out.push(c);
            } else if !l[..k].ends_with(numeric) {
                out.push('#');
            }
        }
        out
    };
    let numbers = |l: &str| -> Vec<f64> { l.split(|c: char| !numeric(c)).filter_map(|n| n.parse().ok()).collect() };
    let Some(first) = labels.first() else { return String::new() };
    if labels.len() == 1 || labels.iter().any(|l| shape(l) != shape(first)) {
        let mut kinds: Vec<&str> = Vec::new();
        for l in labels {
            if !kinds.contains(l) {
                kinds.push(l);
            }
        }
        return kinds.join(" + ");
    }
    let mut sums = numbers(first);
    for l in &labels[1..] {
        for (sum, n) in sums.iter_mut().zip(numbers(l)) {
            *sum += n;
        }
    }
    // Put the sums back between the label's words.
    let mut out = String::new();
    let mut sums = sums.into_iter();
    let mut in_number = false;
    for c in first.chars() {
        let digit = numeric(c);
        if digit && !in_number {
            let n = sums.next().unwrap_or(0.0);
            out.push_str(&if n.fract() == 0.0 { format!("{n:.0}") } else { format!("{n:.2}") });
        } else if !digit {
            out.push(c);
        }
        in_number = digit;
    }
    out
}
