//! The series runner: every mode runs its plans through one [`Runner`], so every mode has
//! the same results files, the same live views and the same interruption policy.
//!
//! # Interruption
//! The study's [`CancellationToken`] is cancelled by the binary on the first SIGINT, SIGTERM
//! or SIGHUP (or by `q` in the TUI). The run in progress then stops sending, counts its
//! requests in flight as unfinished and closes its results file, which is kept (a temporary
//! one is removed once read) and marked interrupted;
//! every finished run is kept as it was; the runner starts no further run. The mode renders
//! its table from what finished, marked partial, and the binary exits 130 or 143.

use crate::StudyError;
use barrage_engine::reqlog::LogSpec;
use barrage_engine::{CancellationToken, Plan, RunSpec, ScheduledCommand, Watch};
use barrage_metrics::secrets::Redaction;
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_metrics::IntervalRecord;
use std::path::PathBuf;

/// One run of a study: the plan, what it is within the study, where its results go and
/// what it watches and does beside sending.
#[derive(Clone, Debug)]
pub struct RunOrder {
    /// What runs.
    pub plan: Plan,
    /// What the run is within its study, in order: `("level", "16 workers")`,
    /// `("phase", "fill")`, `("case", "TC3")`, `("repeat", "2")`.
    pub labels: Vec<(String, String)>,
    /// The results file; a temporary one (removed after the summary is read) when `None`.
    pub output: Option<PathBuf>,
    /// `--log`: one row per request.
    pub log: Option<LogSpec>,
    /// `--hdr-log`: the latency intervals as an HdrHistogram log (written by the observer).
    pub hdr_log: Option<PathBuf>,
    /// Processes sampled every interval.
    pub watch: Vec<Watch>,
    /// Commands run at offsets of the run.
    pub at: Vec<ScheduledCommand>,
    /// How secrets are kept out of its outputs (`--no-redact`, `--redact-header`).
    pub redaction: Redaction,
    /// `--start-at`: when its schedule starts, on the wall clock.
    pub start_at: Option<std::time::SystemTime>,
    /// `--clock-offset`, µs.
    pub clock_offset_us: Option<i64>,
    /// `--otlp` with `--trace-context`: where sampled requests' client spans go.
    pub spans: Option<barrage_metrics::trace::Spans>,
    /// `--otlp`: how the run's figures are exported, for its settings.
    pub otlp: Option<serde_json::Value>,
    /// `--report-to`: where a copy of its results file's bytes goes as they are written.
    pub mirror: Option<barrage_metrics::file::Mirror>,
    /// `--rendezvous`: the start and clock offset measured against the collector; a
    /// takeover's shard and second: for its settings.
    pub fleet: Option<serde_json::Value>,
    /// `--resume-at`: the schedule's arrivals before this offset are not this run's.
    pub resume_from: Option<std::time::Duration>,
    /// `--resume-after`: where a lost shard's engine threads left their lanes of its share
    /// (instead of an offset): what was in flight is this run's, what was passed is not.
    pub resume_after: Option<Vec<barrage_metrics::lanes::LaneMark>>,
    /// Who stopped the run, when not its user (`--report-to`: the collector).
    pub stopped_by: barrage_metrics::file::StoppedBy,
}

impl RunOrder {
    /// A run order for `plan` with no labels, no files and nothing watched.
    pub fn new(plan: Plan) -> RunOrder {
        RunOrder {
            plan,
            labels: Vec::new(),
            output: None,
            log: None,
            hdr_log: None,
            watch: Vec::new(),
            at: Vec::new(),
            redaction: Redaction::default(),
            start_at: None,
            clock_offset_us: None,
            spans: None,
            otlp: None,
            mirror: None,
            fleet: None,
            resume_from: None,
            resume_after: None,
            stopped_by: Default::default(),
        }
    }

    /// The run order with one more label.
    pub fn label(mut self, key: &str, value: impl Into<String>) -> RunOrder {
        self.labels.push((key.into(), value.into()));
        self
    }

    /// The labels for people: `level 16 workers, phase fill`; empty for a lone run.
    pub fn title(&self) -> String {
        self.labels.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
    }

    /// What the results file's header says was run: the mode, the labels, the plan (its
    /// secrets redacted) and how secrets were kept out, for the reports of the file.
    pub fn settings_json(&self, mode: &str) -> String {
        let labels: serde_json::Map<String, serde_json::Value> =
            self.labels.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str()))).collect();
        let plan = crate::view::PlanView::of(&self.plan, &self.redaction);
        // The request log's share, not its path (the file is the user's, wherever it is).
        let log = self.log.as_ref().map(|l| serde_json::json!({ "sample": l.sample }));
        let mut settings = serde_json::json!({ "mode": mode, "labels": labels, "plan": plan, "redaction": self.redaction, "log": log });
        if let Some(otlp) = &self.otlp {
            settings["otlp"] = otlp.clone();
        }
        if let Some(fleet) = &self.fleet {
            settings["fleet"] = fleet.clone();
        }
        settings.to_string()
    }

    /// A digest of what the shards of one split run must share: the plan as the results
    /// file shows it, without what may differ from one load machine to the next (its
    /// threads, source address and in-flight bound; the shard and the start are not in the
    /// view), and every target, of which the view lists the first.
    pub fn plan_digest(&self) -> String {
        crate::view::digest(&self.plan)
    }
}

/// What watches a study's runs as they go: the progress line, the TUI, the metrics
/// endpoint, an HdrHistogram log. The engine's per-interval callback feeds it.
pub trait Observer {
    /// A run starts (`index` of `planned`, counting from 0; `planned` is 0 when unknown).
    fn begin(&mut self, _order: &RunOrder, _index: usize, _planned: usize) -> Result<(), String> {
        Ok(())
    }
    /// One closed interval of the run.
    fn interval(&mut self, _i: IntervalRecord) {}
    /// The run ended; an error of the observer's own outputs (an HdrHistogram log).
    fn end(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// A line about the study's progress ("level 16 workers: 1200/s ok, ...").
    fn note(&mut self, _line: &str) {}
    /// The study is bringing up a testbed in `dir`: whoever ends the process at once must
    /// take it down.
    fn testbed_up(&mut self, _dir: &std::path::Path) {}
}

/// An observer that shows nothing.
pub struct Quiet;

impl Observer for Quiet {}

/// A finished (or interrupted) run.
#[derive(Clone, Debug)]
pub struct Finished {
    /// Its summary, read back from its results file.
    pub summary: RunSummary,
    /// Its results file, when kept.
    pub path: Option<PathBuf>,
    /// The study was stopped during this run: it is partial.
    pub interrupted: bool,
}

/// Runs a study's runs one after another under one cancellation token.
pub struct Runner<'a> {
    mode: &'static str,
    stop: CancellationToken,
    observer: &'a mut dyn Observer,
    planned: usize,
    started: usize,
    /// Where each finished run is kept (the run history), if anywhere.
    history: Option<barrage_history::Keeper>,
    /// A capacity search's last hold, kept once the search knows its capacity.
    hold: Option<barrage_history::Entry>,
    /// The control run to keep before the study's first (`--control`), until it ran.
    control: Option<crate::control::Control>,
}

impl<'a> Runner<'a> {
    /// A runner for `mode` (`run`, `sweep`, `capacity`, `experiment`, `bench`), stopped by
    /// `stop`, shown by `observer`.
    pub fn new(mode: &'static str, stop: CancellationToken, observer: &'a mut dyn Observer) -> Runner<'a> {
        Runner { mode, stop, observer, planned: 0, started: 0, history: None, hold: None, control: None }
    }

    /// Keeps every finished run in the run history through `keeper`.
    pub fn with_history(mut self, keeper: Option<barrage_history::Keeper>) -> Runner<'a> {
        self.history = keeper;
        self
    }

    /// Before the study's first run, runs `control` and keeps it in the history (nothing
    /// without a history).
    pub fn with_control(mut self, control: Option<crate::control::Control>) -> Runner<'a> {
        self.control = control;
        self
    }

    /// Runs and keeps the control run, once.
    fn run_control(&mut self) -> Result<(), StudyError> {
        let (Some(control), Some(keeper)) = (self.control.take(), self.history.as_mut()) else { return Ok(()) };
        let own = match &control {
            crate::control::Control::Own => Some(
                barrage_server::RunningServer::start(barrage_server::ServeConfig {
                    threads: 1,
                    name: Some("control".into()),
                    ..Default::default()
                })
                .map_err(|e| StudyError::Plan(format!("--control self: the control origin: {e}")))?,
            ),
            crate::control::Control::Url(_) | crate::control::Control::Off => None,
        };
        let url = match (&control, &own) {
            (crate::control::Control::Url(u), _) => u.clone(),
            (_, Some(server)) => format!("{}/bytes/1k", server.url()),
            _ => return Ok(()),
        };
        let order = crate::control::order(&url).map_err(StudyError::Plan)?;
        self.observer.note(&format!("control run against {url} ({:?})", crate::control::CONTROL_LENGTH));
        let result = measure("control", &order, self.stop.child_token(), &mut |_| {}, &mut |p| {
            if let Some(mut entry) = keeper.entry(&[p.to_path_buf()], "control", &order.labels) {
                entry.files.clear();
                keeper.keep(&entry);
            }
        });
        if let Some(server) = own {
            server.shutdown();
        }
        result.map(|_| ())
    }

    /// How many runs the study means to do, for the live views ("level 2/4").
    pub fn plan_runs(&mut self, planned: usize) {
        self.planned = planned;
    }

    /// Whether the study was stopped: no further run starts.
    pub fn stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Passes a progress line to the observer.
    pub fn note(&mut self, line: &str) {
        self.observer.note(line);
    }

    /// Keeps a capacity search's result: its last hold's run, as kind `capacity`, with the
    /// `capacity` found, in the series of the search's `plan_digest` (not of the held rate).
    pub fn keep_capacity(&mut self, capacity: Option<f64>, plan_digest: &str) {
        let (Some(keeper), Some(mut entry)) = (self.history.as_mut(), self.hold.take()) else { return };
        if let Some(c) = capacity {
            entry.figures.insert("capacity".into(), c);
        }
        let labels = &mut entry.fingerprint.labels;
        labels.insert("load".into(), "capacity search".into());
        labels.insert("plan".into(), plan_digest.chars().take(12).collect());
        keeper.keep(&entry);
    }

    /// Tells the observer of a testbed the study brings up.
    pub fn testbed_up(&mut self, dir: &std::path::Path) {
        self.observer.testbed_up(dir);
    }

    /// The study's token (a background run beside a measured one shares it).
    pub fn token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Runs `order` to its end (or to the study's stop) and reads its summary back from its
    /// results file, so that what is shown now and a report re-rendered later are the same.
    /// `None` when the study was stopped before the run could start.
    pub fn run(&mut self, order: &RunOrder) -> Result<Option<Finished>, StudyError> {
        if self.stopped() {
            return Ok(None);
        }
        self.run_control()?;
        let index = self.started;
        self.started += 1;
        self.observer.begin(order, index, self.planned).map_err(StudyError::Output)?;
        let (observer, history, hold, mode) = (&mut *self.observer, &mut self.history, &mut self.hold, self.mode);
        let mut keep = |path: &std::path::Path| {
            let Some(keeper) = history.as_mut() else { return };
            let Some(mut entry) = keeper.entry(&[path.to_path_buf()], mode, &order.labels) else { return };
            // A temporary results file is gone once read: the history names none.
            if order.output.is_none() {
                entry.files.clear();
            }
            // A capacity search's probes are not runs of a series (each is at another rate):
            // its result is, kept with its last hold once the search ends.
            if mode == "capacity" {
                if order.labels.iter().any(|(k, v)| k == "stage" && v == "hold") {
                    *hold = Some(entry);
                }
                return;
            }
            keeper.keep(&entry);
        };
        let result = measure(mode, order, self.stop.child_token(), &mut |i| observer.interval(i), &mut keep);
        let ended = self.observer.end().map_err(StudyError::Output);
        let done = result?;
        ended?;
        Ok(done.map(|done| Finished { interrupted: self.stopped(), ..done }))
    }
}

/// Runs one run order into its results file (or a temporary one), summarizes it and hands
/// the file to `on_file` before a temporary one is removed; `None` when `stop` came before the
/// run started.
pub fn measure(
    mode: &str,
    order: &RunOrder,
    stop: CancellationToken,
    on_interval: &mut dyn FnMut(IntervalRecord),
    on_file: &mut dyn FnMut(&std::path::Path),
) -> Result<Option<Finished>, StudyError> {
    let temp;
    let path = match &order.output {
        Some(p) => p.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("barrage-")
                .suffix(".brg")
                .tempfile()
                .map_err(|e| StudyError::Io(std::env::temp_dir(), e))?;
            temp.path().to_path_buf()
        }
    };
    let spec = RunSpec {
        output: path.clone(),
        settings_json: order.settings_json(mode),
        log: order.log.clone(),
        watch: order.watch.clone(),
        at: order.at.clone(),
        redaction: order.redaction.clone(),
        start_at: order.start_at,
        clock_offset_us: order.clock_offset_us,
        plan_digest: order.plan_digest(),
        spans: order.spans.clone(),
        mirror: order.mirror.clone(),
        resume_from: order.resume_from,
        resume_after: order.resume_after.clone(),
        stopped_by: order.stopped_by.clone(),
    };
    // The settings and digest of a million targets take a moment: a stop meanwhile starts
    // no run.
    if stop.is_cancelled() {
        return Ok(None);
    }
    match barrage_engine::run(order.plan.clone(), &spec, stop.clone(), on_interval) {
        Err(barrage_engine::EngineError::Stopped) => return Ok(None),
        ran => ran?,
    };
    let summary = summarize(std::slice::from_ref(&path))?;
    on_file(&path);
    Ok(Some(Finished { summary, path: order.output.clone(), interrupted: stop.is_cancelled() }))
}
