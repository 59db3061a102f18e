//! The load generator of barrage: the only crate that sends.
//!
//! [`run`] takes a validated [`Plan`], starts one current-thread runtime per engine thread
//! (each with one worker: its share of the slots or closed-loop workers, and its own
//! [`Recorder`]), and collects their interval recorders once per second into a results
//! file, so memory stays flat however long the run. The schedule comes from a [`Pacer`], a
//! pure function; each thread's open-loop scheduler is a value too, deciding from the time
//! and the requests in flight what the thread does next.
//!
//! ```no_run
//! use barrage_engine::{run, Load, Pacer, Plan, RunSpec, Target};
//! use std::time::Duration;
//!
//! let target = Target::new(http::Method::GET, "http://127.0.0.1:8080/").unwrap();
//! let load = Load::Open { pacer: Pacer::Constant { rate: 100.0 }, max_in_flight: 64 };
//! let mut plan = Plan::new(vec![target], load);
//! plan.duration = Some(Duration::from_secs(2));
//! let spec = RunSpec { output: "run.brg".into(), settings_json: "{}".into(), log: None, ..Default::default() };
//! let footer = run(plan, &spec, Default::default(), &mut |_| {}).unwrap();
//! println!("attack took {} µs", footer.attack_us);
//! ```

mod attempt;
mod coalesce;
mod conn;
mod events;
mod feed;
#[cfg(any(test, feature = "fuzz"))]
#[doc(hidden)]
pub mod fuzz;
mod http;
pub mod kv;
pub mod limits;
mod marks;
mod prepared;
pub mod reqlog;
mod schedule;
mod slot;
mod thread;
mod timing;
pub mod trace;
mod watch;
mod watchdog;
mod worker;

pub use events::ScheduledCommand;
pub use watch::{Watch, WatchTarget};

pub use barrage_plan::{
    default_backend_headers, CacheRule, CacheRules, Load, Pacer, Pick, Plan, RetryOn, RetryPolicy, Target, TlsOptions,
};
pub use tokio_util::sync::CancellationToken;

use barrage_metrics::file::{FileError, IntervalRecord, Launch, Mode, ResultsWriter, RunFooter, RunHeader, StepInfo};
use barrage_metrics::lanes::LaneMark;
use barrage_metrics::secrets::Redaction;
use barrage_metrics::Recorder;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use worker::{Msg, ThreadCpu, Worker, INTERVAL};

/// Errors that stop a run before or while it runs (failed requests are data, not errors).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The TLS configuration could not be built.
    #[error("TLS setup: {0}")]
    Tls(String),
    /// `--cacert` could not be used.
    #[error("--cacert {0}: {1}")]
    CaCert(PathBuf, String),
    /// The results file failed.
    #[error(transparent)]
    Results(#[from] FileError),
    /// The request log could not be written.
    #[error("--log {0}: {1}")]
    Log(PathBuf, std::io::Error),
    /// A thread or runtime could not start.
    #[error("starting the engine: {0}")]
    Start(#[from] std::io::Error),
    /// `stop` was cancelled before the run started: nothing was sent, no file written.
    #[error("stopped before the run started")]
    Stopped,
}

/// Where the run's results go, what the file says about it, and what the run watches and
/// does beside sending.
#[derive(Clone, Debug, Default)]
pub struct RunSpec {
    /// The results file.
    pub output: PathBuf,
    /// The run's settings, as JSON, for the header.
    pub settings_json: String,
    /// `--log`: one row per request.
    pub log: Option<reqlog::LogSpec>,
    /// `--monitor`: processes sampled every interval (barrage and the machine always are).
    pub watch: Vec<Watch>,
    /// `--at`: commands run at offsets of the run, recorded as events.
    pub at: Vec<ScheduledCommand>,
    /// How secrets are kept out of the results file and the request log (URLs, error
    /// examples, `--at` commands); `settings_json` is the caller's, redacted by it.
    pub redaction: Redaction,
    /// `--start-at`: the schedule's zero, on the wall clock; the run waits for it (cancelled
    /// by `stop`). At most a moment past (the caller checks how far): the schedule still
    /// counts from it, and what is late for it is measured late.
    pub start_at: Option<SystemTime>,
    /// `--clock-offset`, µs: recorded.
    pub clock_offset_us: Option<i64>,
    /// What the shards of one run must share (see [`barrage_metrics::file::Launch`]).
    pub plan_digest: String,
    /// `--otlp` with `--trace-context`: where sampled requests' client spans go.
    pub spans: Option<barrage_metrics::trace::Spans>,
    /// `--report-to`: a copy of the results file's bytes as they are written.
    pub mirror: Option<barrage_metrics::file::Mirror>,
    /// `--resume-at`: a survivor adopting a lost shard's share, its start in the past. An
    /// open loop (a group's flow arrivals too) sends only the arrivals due from this offset
    /// of its schedule on, their numbers those of its lane from there; a closed loop's
    /// workers (a group's too) start fresh at this offset and stop at their window's end.
    pub resume_from: Option<Duration>,
    /// `--resume-after`: an open loop without groups sends, in each engine thread's lane
    /// (one per thread, as the lost shard had), the arrivals the lost shard had in flight
    /// again and then those after what it passed, whatever their offset: exactly the
    /// arrivals of its share whose outcome its results do not hold.
    pub resume_after: Option<Vec<barrage_metrics::lanes::LaneMark>>,
    /// Who stopped the run, when not its user: said before the footer.
    pub stopped_by: barrage_metrics::file::StoppedBy,
}

impl RunSpec {
    /// How the targets' URLs are shown, when something shows them (the request log, the
    /// client spans).
    fn shown_urls(&self) -> Option<&Redaction> {
        (self.log.is_some() || self.spans.is_some()).then_some(&self.redaction)
    }
}

/// Runs the plan, writing intervals to `spec.output` as they close and calling
/// `on_interval` with each. Ctrl-C (`stop`) ends the attack early; the file is complete
/// either way. Returns the footer written last, or [`EngineError::Stopped`] when `stop`
/// came before the run started.
pub fn run(
    plan: Plan,
    spec: &RunSpec,
    stop: CancellationToken,
    on_interval: &mut dyn FnMut(IntervalRecord),
) -> Result<RunFooter, EngineError> {
    let kv = plan.protocol.kv().cloned().map(|kv| Arc::new(kv::KvRun::new(&plan, kv)));
    let connector = Arc::new(conn::Connector::new(&plan, needs_tls(&plan), http::h3::client_config)?);
    let (targets, endpoints) = prepared::prepare(&plan, spec.shown_urls());
    let threads = plan.thread_count();
    // Preparing a million targets takes a moment: a stop meanwhile starts nothing (its
    // temporary file is the caller's to remove).
    if stop.is_cancelled() {
        return Err(EngineError::Stopped);
    }
    // A stop while waiting for --start-at ends the wait at once, and the run is reported as
    // interrupted before its first request.
    let (start, mut launch) = start(spec, &stop);
    launch.shard = plan.shard.is_split().then_some((plan.shard.index, plan.shard.count));
    // The schedule's zero on the wall clock: the asked start, or when the engine was ready.
    let start_unix_us = launch.start_at_unix_us.unwrap_or(launch.ready_unix_us);
    let started_unix_ms = start_unix_us / 1000;
    // Each request's trace id derives from the run id (each shard's its own).
    let trace = trace::RunTrace::of(plan.trace, &launch.run_id, spec.spans.clone());
    let header = header(&plan, spec, started_unix_ms, threads, launch);
    let mut writer = writer(&plan, spec, &header)?;
    let log = spec.log.as_ref().map(open_log).transpose()?;
    let (tx, rx) = std::sync::mpsc::channel();
    let attack_limit = plan.attack_limit();
    let keys: Arc<[prepared::GroupKeys]> = prepared::group_keys(&plan).into();
    let plan = Arc::new(plan);
    let endpoints: Arc<[_]> = endpoints.into();
    let mut handles = Vec::with_capacity(threads);
    for index in 0..threads {
        let worker = Worker {
            index,
            threads,
            plan: plan.clone(),
            targets: targets.clone(),
            keys: keys.clone(),
            redaction: spec.redaction.clone(),
            trace: trace.clone(),
            trace_sampled: Cell::new(0),
            first_sent: Cell::new(None),
            endpoints: endpoints.clone(),
            kv: kv.clone(),
            connector: connector.clone(),
            start,
            start_unix_us,
            attack_limit,
            resume_from: spec.resume_from,
            resume_after: spec.resume_after.as_ref().and_then(|lanes| lanes.get(index).cloned()),
            marks: RefCell::new(None),
            stop: stop.clone(),
            recorder: RefCell::new(Recorder::new()),
            log: log.as_ref().map(|l| RefCell::new(l.handle())),
            tx: tx.clone(),
            interval: Cell::new(0),
            cpu_at_start: Cell::new(ThreadCpu::default()),
            coalesce: coalesce::Coalesce::of(&plan),
        };
        let h =
            std::thread::Builder::new().name(format!("barrage-engine-{index}")).spawn(move || thread::run(worker))?;
        handles.push(h);
    }
    drop(tx);
    let events = events::EventRunner::start(spec.at.clone(), start)?;
    let mut collector = Collector::new(threads, started_unix_ms, &plan, watch::Watcher::new(spec.watch.clone()));
    collector.redaction = spec.redaction.clone();
    let result = collector.collect(rx, &mut writer, &events, on_interval);
    if result.is_err() {
        // The results cannot be kept: stop sending load nobody will see.
        stop.cancel();
    }
    handles.into_iter().try_for_each(|h| h.join().expect("engine threads do not panic"))?;
    release_freed_memory();
    result?;
    collector.interrupted = stop.is_cancelled();
    finish_file(writer, &collector, events, log, spec, started_unix_ms)
}

/// Whether any target is reached over TLS (https, rediss).
fn needs_tls(plan: &Plan) -> bool {
    plan.targets.iter().any(|t| t.url.scheme_str() == Some("https"))
        || plan.protocol.kv().is_some_and(|kv| kv.servers.iter().any(|s| s.tls))
}

/// Creates the request log `l` asks for and starts its writer.
fn open_log(l: &reqlog::LogSpec) -> Result<reqlog::RequestLog, EngineError> {
    reqlog::RequestLog::create(l).map_err(|e| EngineError::Log(l.path.clone(), e))
}

/// Ends the results file of a run whose threads have finished: the `--at` commands' events
/// (those still running ended as the run did), the request log's count of dropped chunks,
/// and the footer, which it returns.
fn finish_file(
    mut writer: ResultsWriter,
    collector: &Collector,
    events: events::EventRunner,
    log: Option<reqlog::RequestLog>,
    spec: &RunSpec,
    started_unix_ms: u64,
) -> Result<RunFooter, EngineError> {
    for mut event in events.finish(collector.interrupted) {
        event.redact(&spec.redaction);
        writer.write_event(&event)?;
    }
    if let Some(first) = collector.first_sent {
        writer.write_first_send(first.as_micros() as u64)?;
    }
    if collector.coalesced > Duration::ZERO {
        writer.write_coalesced(collector.coalesced.as_micros() as u64)?;
    }
    if let Some(who) = spec.stopped_by.said().filter(|_| collector.interrupted) {
        writer.write_stopped_by(who)?;
    }
    let mut footer = collector.footer(started_unix_ms);
    if let (Some(log), Some(spec)) = (log, &spec.log) {
        footer.log_chunks_dropped = log.finish(&spec.path).map_err(|e| EngineError::Log(spec.path.clone(), e))?;
    }
    writer.finish(&footer)?;
    Ok(footer)
}

/// Hands what the engine threads freed back to the system. glibc keeps a thread's freed
/// memory in that thread's own arena, where no other thread allocates: what the report
/// builds next (from the results file, on this thread) would come on top of it, and the
/// peak memory of a run would be the engine's and the report's added together. (Measured:
/// 50 connections of 1 MiB bodies peaked at 38 MiB without this, 32 MiB with it.)
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's arenas to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn unix_us(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// Lead of the common start over the moment it is fixed: the threads are spawned and
/// waiting by then, so none begins behind schedule.
const LEAD: Duration = Duration::from_millis(20);

/// When the run starts (every thread's time zero) and how it was launched. With
/// `--start-at`, waits (in steps, so `stop` ends the wait) until just before it; the start
/// is then the asked time, on the monotonic clock, even when the process came a moment late.
fn start(spec: &RunSpec, stop: &CancellationToken) -> (Instant, Launch) {
    let Some(at) = spec.start_at else {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let launch = Launch {
            shard: None,
            plan_digest: spec.plan_digest.clone(),
            start_at_unix_us: None,
            ready_unix_us: unix_us(wall + LEAD),
            clock_offset_us: spec.clock_offset_us,
            run_id: run_id(),
        };
        return (now + LEAD, launch);
    };
    while let Ok(ahead) = at.duration_since(SystemTime::now()) {
        if ahead <= LEAD || stop.is_cancelled() {
            break;
        }
        std::thread::sleep((ahead - LEAD).min(Duration::from_millis(100)));
    }
    let (now, wall) = (Instant::now(), SystemTime::now());
    let start = match at.duration_since(wall) {
        Ok(ahead) => now + ahead,
        // Come late: the schedule still counts from the asked time.
        Err(late) => now.checked_sub(late.duration()).unwrap_or(now),
    };
    let launch = Launch {
        shard: None,
        plan_digest: spec.plan_digest.clone(),
        start_at_unix_us: Some(unix_us(at)),
        ready_unix_us: unix_us(wall.max(at)),
        clock_offset_us: spec.clock_offset_us,
        run_id: run_id(),
    };
    (start, launch)
}

/// A run's id: 128 random bits, as 32 hex digits (see [`Launch::run_id`]).
fn run_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The run's header, without its URLs ([`listed_urls`]).
fn header(plan: &Plan, spec: &RunSpec, started_unix_ms: u64, threads: usize, launch: Launch) -> RunHeader {
    let groups = plan.scenario.as_deref().map(|s| group_infos(s, plan.attack_limit(), plan.shard)).unwrap_or_default();
    let (mode, mut steps) = match &plan.load {
        Load::Open { pacer, .. } => {
            let step_len = match pacer {
                Pacer::Steps { step, .. } => *step,
                _ => Duration::ZERO,
            };
            let steps = pacer
                .step_labels()
                .into_iter()
                .enumerate()
                .map(|(i, label)| StepInfo { label, start_ms: (step_len * i as u32).as_millis() as u64 })
                .collect();
            (Mode::Open, steps)
        }
        Load::Closed { concurrency, .. } => {
            let mut label = match plan.protocol.streams() {
                1 => format!("{concurrency} workers"),
                n => format!("{concurrency} connections × {n} streams"),
            };
            if let Some(rate) = plan.rate_cap {
                label.push_str(&format!(", at most {rate}/s"));
            }
            (Mode::Closed, vec![StepInfo { label, start_ms: 0 }])
        }
    };
    if let Some(s) = plan.scenario.as_deref() {
        // The plan's load only sums the groups up: say what each was asked, in the whole
        // run (as every shard's step says).
        let whole = group_infos(s, plan.attack_limit(), barrage_plan::Shard::WHOLE);
        let each: Vec<String> = whole.iter().map(|g| format!("{} {}", g.name, g.load)).collect();
        steps = vec![StepInfo { label: format!("scenario: {}", each.join(", ")), start_ms: 0 }];
    }
    RunHeader {
        barrage_version: env!("CARGO_PKG_VERSION").to_string(),
        started_unix_ms,
        host: hostname(),
        boot_id: watch::boot_id(),
        mode,
        urls: Vec::new(),
        settings_json: spec.settings_json.clone(),
        steps,
        threads: threads as u32,
        insecure: plan.tls.insecure,
        groups,
        launch,
    }
}

/// The run's URLs as the header and the live views list them, redacted by `redaction`: a
/// scenario's steps as written (`{{albumID}}` where a variable fills the path), in flow
/// order; a key-value run's servers, once each; every target as [`Target::listed`] writes
/// it (a template as written, `PUT` before a PUT's URL). Made one by one as they are
/// taken: a view takes the first few of a million.
pub fn listed_urls<'a>(plan: &'a Plan, redaction: &'a Redaction) -> Box<dyn ExactSizeIterator<Item = String> + 'a> {
    let redacted = move |url: String| {
        let changed = match redaction.url(&url) {
            std::borrow::Cow::Owned(redacted) => Some(redacted),
            std::borrow::Cow::Borrowed(_) => None,
        };
        changed.unwrap_or(url)
    };
    if let Some(kv) = plan.protocol.kv() {
        return Box::new(kv.servers.iter().map(barrage_plan::kv::KvServer::url).map(redacted));
    }
    match plan.scenario.as_deref() {
        Some(s) => {
            let steps: Vec<String> =
                s.flows.iter().flat_map(|f| f.steps.iter().map(|st| st.url_text.clone())).collect();
            Box::new(steps.into_iter().map(redacted))
        }
        None => Box::new(plan.targets.iter().map(Target::listed).map(redacted)),
    }
}

/// When a group's window ends: its own end or the run's, whichever comes first.
pub(crate) fn own_end(g: &barrage_plan::flow::Group, run: Option<Duration>) -> Option<Duration> {
    let own = g.duration.map(|d| g.start.saturating_add(d));
    match (own, run) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What each group of a scenario was asked to do, for the header: this shard's part of it
/// (its workers, its share of the arrivals), so that merged shards add up to the group.
fn group_infos(
    s: &barrage_plan::flow::Scenario,
    run_end: Option<Duration>,
    shard: barrage_plan::Shard,
) -> Vec<barrage_metrics::GroupInfo> {
    s.groups
        .iter()
        .map(|g| {
            let flow = &s.flows[g.flow];
            let mut once = Vec::new();
            for &i in &flow.order {
                if !once.contains(&flow.steps[i].name) {
                    once.push(flow.steps[i].name.clone());
                }
            }
            let (load, rate, workers) = match &g.load {
                Load::Open { pacer, .. } => {
                    // Every N-th arrival: a shard's rate is the N-th part.
                    let pacer = pacer.scaled(1.0 / f64::from(shard.count.max(1)));
                    let rate = match pacer {
                        Pacer::Constant { rate } => Some(rate),
                        _ => None,
                    };
                    (pacer.step_labels().join(", ").replace("req/s", "flows/s"), rate, None)
                }
                Load::Closed { concurrency, .. } => {
                    // The flows asked for in all (not per worker): merged shards add up.
                    let workers = shard.share(*concurrency as u64);
                    let each = g.iterations.map_or(String::new(), |n| format!(", {} flows", n.saturating_mul(workers)));
                    (format!("{workers} workers{each}"), None, Some(workers as u32))
                }
            };
            barrage_metrics::GroupInfo {
                name: g.name.clone(),
                flow: flow.name.clone(),
                steps: once,
                load,
                rate,
                workers,
                start_ms: g.start.as_millis() as u64,
                // A group of iterations ends when its workers are done, which no header can
                // know: its flows' timeline tells (see `iterations`).
                end_ms: own_end(g, run_end).filter(|_| g.iterations.is_none()).map(|d| d.as_millis() as u64),
                iterations: g.iterations,
            }
        })
        .collect()
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// An interval being gathered from the threads.
struct Pending {
    recorder: Recorder,
    /// The latest end any thread gave it.
    end: Duration,
    /// The engine threads' CPU over it, % of one core (user, system).
    cpu_percent: (f64, f64),
    /// An open loop of requests: where each thread that handed it over was in its lane.
    lanes: Vec<Option<LaneMark>>,
}

/// Gathers the threads' interval recorders; an interval is written once every thread has
/// handed it over or finished.
struct Collector {
    threads: usize,
    next: Vec<u32>,
    done: Vec<bool>,
    /// Each thread's CPU as of its last interval.
    cpu_seen: Vec<ThreadCpu>,
    /// Where each thread was in its lane as of the last interval written (a thread that
    /// ended stays where it ended).
    lanes: Vec<Option<LaneMark>>,
    pending: BTreeMap<u32, Pending>,
    started_unix_ms: u64,
    attack_end: Duration,
    end: Duration,
    /// The engine threads' CPU time over the run (user, system); the collector's own thread
    /// (sampling /proc, writing the file) and the rest of the process are not counted.
    cpu: (Duration, Duration),
    bound_reached: bool,
    /// The least of the threads' first unsent numbers (`u64::MAX` until one ends).
    sent_prefix: u64,
    /// The threads' requests whose `traceparent` said sampled.
    trace_sampled: u64,
    /// The earliest send of a finished request, from the run's start.
    first_sent: Option<Duration>,
    /// The longest sleep a thread took before waiting on its sockets ([`coalesce`]).
    coalesced: Duration,
    pacer: Option<Pacer>,
    /// A closed loop with `-n`: what it was due to send ([`Plan::closed_requests_due`]).
    due: Option<u64>,
    interrupted: bool,
    watcher: watch::Watcher,
    /// Applied to the error examples and events before they are written or shown.
    redaction: Redaction,
}

impl Collector {
    fn new(threads: usize, started_unix_ms: u64, plan: &Plan, watcher: watch::Watcher) -> Self {
        let pacer = match &plan.load {
            Load::Open { pacer, .. } => Some(pacer.clone()),
            Load::Closed { .. } => None,
        };
        Collector {
            threads,
            next: vec![0; threads],
            done: vec![false; threads],
            cpu_seen: vec![ThreadCpu::default(); threads],
            lanes: vec![None; threads],
            pending: BTreeMap::new(),
            started_unix_ms,
            attack_end: Duration::ZERO,
            end: Duration::ZERO,
            cpu: (Duration::ZERO, Duration::ZERO),
            bound_reached: false,
            sent_prefix: u64::MAX,
            trace_sampled: 0,
            first_sent: None,
            coalesced: Duration::ZERO,
            pacer,
            due: plan.scenario.is_none().then(|| plan.closed_requests_due()).flatten(),
            interrupted: false,
            watcher,
            redaction: Redaction::default(),
        }
    }

    fn collect(
        &mut self,
        rx: std::sync::mpsc::Receiver<(usize, Msg)>,
        writer: &mut ResultsWriter,
        events: &events::EventRunner,
        on_interval: &mut dyn FnMut(IntervalRecord),
    ) -> Result<(), FileError> {
        for (thread, msg) in rx {
            for mut event in events.poll() {
                event.redact(&self.redaction);
                writer.write_event(&event)?;
            }
            match msg {
                Msg::Interval { index, end, recorder, cpu, lane } => {
                    self.next[thread] = index + 1;
                    // The interval's first recorder is kept as it came, the others added to
                    // it: a fresh one to add them all into would cost a recorder's worth of
                    // histograms (3 MiB) and a pass over them per interval.
                    let slot = match self.pending.entry(index) {
                        std::collections::btree_map::Entry::Vacant(v) => v.insert(Pending {
                            recorder: *recorder,
                            end,
                            cpu_percent: (0.0, 0.0),
                            lanes: vec![None; self.threads],
                        }),
                        std::collections::btree_map::Entry::Occupied(o) => {
                            let slot = o.into_mut();
                            slot.recorder.add(&recorder);
                            slot
                        }
                    };
                    slot.end = slot.end.max(end);
                    slot.lanes[thread] = lane;
                    // The thread's CPU over the time since its last reading, as a share of
                    // that time: never more than 100% for one thread.
                    let seen = std::mem::replace(&mut self.cpu_seen[thread], cpu);
                    let span = cpu.at.saturating_sub(seen.at).as_secs_f64();
                    if span > 0.0 {
                        let percent =
                            |now: Duration, then: Duration| now.saturating_sub(then).as_secs_f64() / span * 100.0;
                        slot.cpu_percent.0 += percent(cpu.user, seen.user);
                        slot.cpu_percent.1 += percent(cpu.system, seen.system);
                    }
                }
                Msg::Done { attack_end, end, cpu, bound_reached, unsent, trace_sampled, first_sent, coalesced } => {
                    self.trace_sampled += trace_sampled;
                    self.coalesced = self.coalesced.max(coalesced);
                    self.first_sent = self.first_sent.into_iter().chain(first_sent).min();
                    self.done[thread] = true;
                    self.sent_prefix = self.sent_prefix.min(unsent);
                    self.attack_end = self.attack_end.max(attack_end);
                    self.end = self.end.max(end);
                    self.cpu.0 += cpu.user;
                    self.cpu.1 += cpu.system;
                    self.bound_reached |= bound_reached;
                }
            }
            self.flush(writer, on_interval)?;
        }
        Ok(())
    }

    /// Writes where every thread was in its lane as of an interval (`handed`: the marks of
    /// those that handed it over) before the interval, when the run is an open loop of
    /// requests.
    fn write_lanes(&mut self, writer: &mut ResultsWriter, handed: Vec<Option<LaneMark>>) -> Result<(), FileError> {
        for (mine, new) in self.lanes.iter_mut().zip(handed) {
            if new.is_some() {
                *mine = new;
            }
        }
        let Some(mut lanes) = self.lanes.iter().cloned().collect::<Option<Vec<LaneMark>>>() else { return Ok(()) };
        barrage_metrics::lanes::cap(&mut lanes);
        writer.write_lanes(lanes)
    }

    /// Writes every interval that no thread can add to any more.
    fn flush(
        &mut self,
        writer: &mut ResultsWriter,
        on_interval: &mut dyn FnMut(IntervalRecord),
    ) -> Result<(), FileError> {
        let complete = (0..self.threads).map(|t| if self.done[t] { u32::MAX } else { self.next[t] }).min().unwrap_or(0);
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() >= complete {
                break;
            }
            let (index, Pending { mut recorder, end, cpu_percent, lanes }) = entry.remove_entry();
            self.write_lanes(writer, lanes)?;
            // Once per interval, off the hot path: what the workers kept as they failed.
            recorder.redact_examples(&self.redaction);
            let begin = INTERVAL * index;
            let step = self.pacer.as_ref().map_or(0, |p| p.step_at(begin)) as u32;
            let record = IntervalRecord {
                index,
                start_unix_ms: self.started_unix_ms + begin.as_millis() as u64,
                length_ms: end.saturating_sub(begin).as_millis().max(1) as u32,
                step,
                recorder,
                // Sampled as the interval is written, a few ms after it closed.
                watch: Some(self.watcher.sample(cpu_percent)),
            };
            std::thread::yield_now();
            writer.write_interval(&record)?;
            std::thread::yield_now();
            on_interval(record);
        }
        Ok(())
    }

    fn footer(&self, started_unix_ms: u64) -> RunFooter {
        let attack = self.attack_end.min(self.end);
        RunFooter {
            ended_unix_ms: started_unix_ms + self.end.as_millis() as u64,
            attack_us: attack.as_micros() as u64,
            wait_us: (self.end - attack).as_micros() as u64,
            cpu_user_us: self.cpu.0.as_micros() as u64,
            cpu_system_us: self.cpu.1.as_micros() as u64,
            interrupted: self.interrupted,
            bound_reached: self.bound_reached,
            log_chunks_dropped: 0,
            peak_rss_kib: thread::peak_rss_kib(),
            // No thread ended: nothing is known to have been sent.
            sent_prefix: if self.sent_prefix == u64::MAX { 0 } else { self.sent_prefix },
            due: self.due,
            trace_sampled: self.trace_sampled,
        }
    }
}

/// The run's results file, its header written (its URLs, a million maybe, listed as they
/// are written) and an open loop's intended arrivals, mirrored to `--report-to` if asked.
fn writer(plan: &Plan, spec: &RunSpec, header: &RunHeader) -> Result<ResultsWriter, FileError> {
    let urls = listed_urls(plan, &spec.redaction);
    let mut w = ResultsWriter::create_mirrored(&spec.output, header, urls, spec.mirror.clone())?;
    if let Some(arrivals) = plan.arrival_seconds() {
        w.write_schedule(arrivals)?;
    }
    Ok(w)
}
