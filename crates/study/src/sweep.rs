//! Levels and phases: plans derived from a base plan, one run per level and phase, one row
//! each. `run --phases` is a sweep of one level; a capacity search probes levels it chooses.

use crate::series::{RunOrder, Runner};
use crate::StudyError;
use barrage_engine::{Load, Pacer, Plan};
use barrage_plan::phases::PhaseSpec;
use barrage_plan::units::{Levels, LoadFlags, RateSpec};
use barrage_report::{Slo, StudyRow, StudyTable};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// In-flight bound of an open-loop level when the base plan was closed loop.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;

/// One load level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Level {
    /// Open loop at this rate.
    Rate(f64),
    /// Closed loop with this many workers.
    Workers(u32),
}

impl Level {
    /// `100/s` or `32 workers`.
    pub fn label(self) -> String {
        match self {
            Level::Rate(r) => format!("{r}/s"),
            Level::Workers(n) => format!("{n} workers"),
        }
    }

    /// The offered load: the rate, or the workers.
    pub fn offered(self) -> f64 {
        match self {
            Level::Rate(r) => r,
            Level::Workers(n) => f64::from(n),
        }
    }

    /// A file-name part: `100rps`, `32workers`.
    pub fn file_label(self) -> String {
        match self {
            Level::Rate(r) => format!("{r}rps"),
            Level::Workers(n) => format!("{n}workers"),
        }
    }

    /// `base` at this level for `step`: the load replaced, every other setting kept (an
    /// open level keeps an open base's in-flight bound, a closed one its think time).
    pub fn apply(self, base: &Plan, step: Duration) -> Plan {
        let mut plan = base.clone();
        plan.load = self.load_from(&base.load);
        // A closed loop's cap, spread over each level's workers; a rate level is its rate.
        if matches!(plan.load, Load::Open { .. }) {
            plan.rate_cap = None;
        }
        plan.duration = Some(step);
        plan.requests = None;
        // A one-group scenario runs its flows at the level's load, from the group's own (its
        // think time between flows, its in-flight bound; the plan's load only sums the
        // groups up). The CLI refuses a sweep or a capacity search of several groups, whose
        // loads are their own.
        if let Some(s) = base.scenario.as_deref() {
            if let [group] = &s.groups[..] {
                plan.load = self.load_from(&group.load);
                plan.scenario = s.with_load(plan.load.clone()).map(std::sync::Arc::new);
            }
        }
        plan
    }

    /// `load` at this level: the rate or the workers replaced, the rest kept.
    fn load_from(self, load: &Load) -> Load {
        match (self, load) {
            (Level::Rate(rate), Load::Open { max_in_flight, .. }) => {
                Load::Open { pacer: Pacer::Constant { rate }, max_in_flight: *max_in_flight }
            }
            (Level::Rate(rate), Load::Closed { .. }) => {
                Load::Open { pacer: Pacer::Constant { rate }, max_in_flight: DEFAULT_MAX_IN_FLIGHT }
            }
            (Level::Workers(n), Load::Closed { think_time, .. }) => {
                Load::Closed { concurrency: n as usize, think_time: *think_time }
            }
            (Level::Workers(n), Load::Open { .. }) => {
                Load::Closed { concurrency: n as usize, think_time: Duration::ZERO }
            }
        }
    }
}

/// Whether a study that sets the load itself (`mode`: a sweep or a capacity search) can
/// run `plan`: a scenario of one group, whose load it replaces, but not one of several
/// groups with loads of their own.
pub fn one_group(plan: &Plan, mode: &str) -> Result<(), String> {
    match plan.scenario.as_deref() {
        // Capacity judges delivery in requests per second against the rate it asked; a
        // flow rate asks for several requests per arrival, so its verdict would be wrong.
        Some(_) if mode == "capacity" => Err(
            "capacity searches a request rate; a --scenario's rate is of flows: sweep --rate over the scenario instead"
                .into(),
        ),
        Some(s) if s.groups.len() > 1 => Err(format!(
            "{mode} sets the load of each run; --scenario has {} groups with loads of their own: give it one group (or none, to use the flags' load)",
            s.groups.len()
        )),
        _ => Ok(()),
    }
}

/// A study of levels × phases: one run each, one row each.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The base run order: its plan's load is replaced per level; its `--log` and `--hdr-log`
    /// paths get the level and phase in their names; its watches and commands apply to
    /// every run.
    pub base: RunOrder,
    /// The levels; empty: the base plan as it is (`run --phases`).
    pub levels: Vec<Level>,
    /// Length of each level's run (ignored without levels).
    pub step: Duration,
    /// Phases of each level's request stream (fill, measure); empty: one run a level.
    pub phases: Vec<PhaseSpec>,
    /// Where each run's results file goes (`level-01-100rps.fill.brg`); temporary files
    /// when `None`.
    pub dir: Option<PathBuf>,
    /// Objectives checked on every run.
    pub slos: Vec<Slo>,
}

/// One run of a sweep: its row's labels and offered load, its phase, and its run order.
#[derive(Clone, Debug)]
pub struct SweepRun {
    /// The row's labels (level, phase).
    pub labels: Vec<String>,
    /// The level's offered load.
    pub offered: Option<f64>,
    /// Its phase's place among the level's phases (0 without phases).
    pub phase: usize,
    /// What runs; a measure's part and length are set once its fill has run.
    pub order: RunOrder,
}

impl Sweep {
    /// The runs in the order they run. Each level is a stream of its own (its new objects
    /// are new, whatever the other levels asked for); its phases share it: the fill asks
    /// for what the measures ask for again.
    pub fn runs(&self) -> Vec<SweepRun> {
        let levels: Vec<Option<Level>> =
            if self.levels.is_empty() { vec![None] } else { self.levels.iter().copied().map(Some).collect() };
        let phases: Vec<Option<&PhaseSpec>> =
            if self.phases.is_empty() { vec![None] } else { self.phases.iter().map(Some).collect() };
        let mut out = Vec::new();
        for (i, level) in levels.iter().enumerate() {
            for (p, phase) in phases.iter().enumerate() {
                let mut order = self.base.clone();
                order.labels.clear();
                let mut parts = Vec::new();
                let mut labels = Vec::new();
                if let Some(l) = level {
                    order.plan = l.apply(&self.base.plan, self.step);
                    order = order.label("level", l.label());
                    parts.push(format!("level-{:02}-{}", i + 1, l.file_label()));
                    labels.push(l.label());
                }
                // A lone run's phases keep its stream; each level is run i + 1 of the study.
                let index = if self.levels.is_empty() { self.base.plan.stream.index } else { i as u64 + 1 };
                order.plan.in_study(index, &self.phases, p, 0);
                if let Some(phase) = phase {
                    order = order.label("phase", phase.name.as_str());
                    parts.push(phase.name.clone());
                    labels.push(phase.name.clone());
                }
                order.output = self.output(&parts);
                order.log = self.base.log.clone().map(|mut l| {
                    l.path = suffixed(&l.path, &parts);
                    l
                });
                order.hdr_log = self.base.hdr_log.as_ref().map(|p| suffixed(p, &parts));
                out.push(SweepRun { labels, offered: level.map(Level::offered), phase: p, order });
            }
        }
        out
    }

    fn output(&self, parts: &[String]) -> Option<PathBuf> {
        match (&self.dir, &self.base.output) {
            (Some(dir), _) => Some(dir.join(format!("{}.brg", parts.join(".")))),
            (None, Some(file)) => Some(suffixed(file, parts)),
            (None, None) => None,
        }
    }

    /// The label columns of its table.
    pub fn label_columns(&self) -> Vec<&'static str> {
        let mut c = Vec::new();
        if !self.levels.is_empty() {
            c.push("level");
        }
        if !self.phases.is_empty() {
            c.push("phase");
        }
        c
    }

    /// Runs every level and phase; on a stop, the table has the runs that ran (the one
    /// stopped included, marked interrupted) and says it is partial.
    pub fn run(&self, runner: &mut Runner) -> Result<StudyTable, StudyError> {
        let runs = self.runs();
        let mut table = StudyTable::new("sweep", &self.label_columns());
        if !self.levels.is_empty() {
            table.offered_column = Some("offered".into());
        }
        if self.levels.is_empty() {
            table.name = "phases".into();
        }
        table.planned = runs.len();
        if let Some(dir) = &self.dir {
            std::fs::create_dir_all(dir).map_err(|e| StudyError::Io(dir.clone(), e))?;
        }
        runner.plan_runs(runs.len());
        // What the level's fill sent, for its measures.
        let mut warmed = 0;
        for SweepRun { labels, offered, phase, mut order } in runs {
            if phase > 0 {
                order.plan.in_study(order.plan.stream.index, &self.phases, phase, warmed);
            }
            let Some(done) = runner.run(&order)? else { break };
            if phase == 0 {
                warmed = done.summary.sent_prefix;
            }
            let slos = self.slos.iter().map(|s| s.check(&done.summary)).collect();
            let row = StudyRow { labels, offered, runs: vec![done.summary], slos, ..Default::default() };
            runner.note(&format!("{}: {}", order.title(), row_note(&row)));
            table.rows.push(row);
            if done.interrupted {
                break;
            }
        }
        table.partial = runner.stopped();
        Ok(table)
    }
}

/// One line on a finished row: throughput, success, p99, verdict.
pub fn row_note(r: &StudyRow) -> String {
    let s = &r.runs[0];
    let mut line = format!(
        // "successful", not "ok": the row's verdict follows, and may be FAILED.
        "{} successful, success {:.2}%, p99 {}",
        s.throughput_per_sec.map_or_else(|| "n/a (too few requests)".into(), |t| format!("{t:.1}/s")),
        s.success_ratio * 100.0,
        barrage_metrics::units::fmt_us(s.latency.corrected.p99_us as f64)
    );
    if s.interrupted {
        line.push_str(", interrupted");
    }
    let verdict = r.verdict();
    if verdict != "ok" {
        line.push_str(&format!(", {verdict}"));
    } else if !r.slos.is_empty() {
        line.push_str(", SLOs met");
    }
    line
}

/// `run.brg` with parts `[level-01-100rps, fill]` → `run.level-01-100rps.fill.brg`.
pub fn suffixed(path: &Path, parts: &[String]) -> PathBuf {
    if parts.is_empty() {
        return path.to_path_buf();
    }
    let stem = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let middle = parts.join(".");
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{middle}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{middle}"),
    };
    path.with_file_name(name)
}

impl Level {
    /// The levels of `--rate 10,50,100` or `-c 8..96/8`.
    pub fn of_flags(rate: Option<&RateSpec>, concurrency: Option<&Levels>) -> Result<Vec<Level>, String> {
        match (rate, concurrency) {
            (Some(RateSpec::Steps(rates)), _) => Ok(rates.iter().map(|r| Level::Rate(*r)).collect()),
            (Some(RateSpec::Constant(r)), _) => Ok(vec![Level::Rate(*r)]),
            (Some(RateSpec::Ramp(..)), _) => {
                Err("a sweep takes levels, not a ramp: --rate 10,50,100 or -c 8..96/8".into())
            }
            (None, Some(Levels(n))) => Ok(n.iter().map(|n| Level::Workers(*n)).collect()),
            (None, None) => Err("a sweep needs levels: --rate 10,50,100 or -c 8..96/8".into()),
        }
    }

    /// `flags` at this level for one `step`: the load a study's base plan is built at (so
    /// that `--at` is checked against a level's length), which each level then replaces.
    pub fn flags(self, step: Duration, flags: LoadFlags) -> LoadFlags {
        let (rate, concurrency) = match self {
            Level::Rate(r) => (Some(RateSpec::Constant(r)), None),
            Level::Workers(n) => (None, Some(Levels(vec![n]))),
        };
        LoadFlags { rate, concurrency, step: None, duration: Some(step), ..flags }
    }
}

/// The labels of the highest level whose row met every objective and is a result.
pub fn highest_meeting(table: &StudyTable) -> Option<String> {
    table.rows.iter().rev().find(|r| r.passed() && r.failure().is_none()).map(|r| r.labels.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_engine::Target;
    use barrage_plan::Part;

    fn base(load: Load) -> Plan {
        Plan::new(vec![Target::new(http::Method::GET, "http://127.0.0.1:1/").unwrap()], load)
    }

    #[test]
    fn a_level_replaces_the_load_and_keeps_the_rest() {
        let mut open = base(Load::Open { pacer: Pacer::Constant { rate: 1.0 }, max_in_flight: 32 });
        open.seed = 7;
        open.requests = Some(5);
        let p = Level::Rate(100.0).apply(&open, Duration::from_secs(3));
        assert_eq!(p.load, Load::Open { pacer: Pacer::Constant { rate: 100.0 }, max_in_flight: 32 });
        assert_eq!((p.duration, p.requests, p.seed), (Some(Duration::from_secs(3)), None, 7));
        let closed = base(Load::Closed { concurrency: 1, think_time: Duration::from_millis(5) });
        let p = Level::Workers(16).apply(&closed, Duration::from_secs(1));
        assert_eq!(p.load, Load::Closed { concurrency: 16, think_time: Duration::from_millis(5) });
        let p = Level::Rate(10.0).apply(&closed, Duration::from_secs(1));
        assert!(matches!(p.load, Load::Open { max_in_flight: DEFAULT_MAX_IN_FLIGHT, .. }));
    }

    #[test]
    fn levels_times_phases_give_one_job_each_with_its_files() {
        let mut order = RunOrder::new(base(Load::Closed { concurrency: 1, think_time: Duration::ZERO }));
        order.hdr_log = Some("/tmp/x/lat.hlog".into());
        let s = Sweep {
            base: order,
            levels: vec![Level::Workers(4), Level::Workers(8)],
            step: Duration::from_secs(2),
            phases: barrage_plan::phases::parse(&["fill".into(), "measure".into()]).unwrap(),
            dir: Some("/tmp/out".into()),
            slos: Vec::new(),
        };
        let runs = s.runs();
        let names: Vec<String> = runs.iter().map(|j| j.order.output.as_ref().unwrap().display().to_string()).collect();
        assert_eq!(
            names,
            [
                "/tmp/out/level-01-4workers.fill.brg",
                "/tmp/out/level-01-4workers.measure.brg",
                "/tmp/out/level-02-8workers.fill.brg",
                "/tmp/out/level-02-8workers.measure.brg"
            ]
        );
        assert_eq!(runs[3].labels, ["8 workers", "measure"]);
        assert_eq!(runs[3].offered, Some(8.0));
        assert_eq!(
            runs[1].order.hdr_log.as_ref().unwrap().display().to_string(),
            "/tmp/x/lat.level-01-4workers.measure.hlog"
        );
        assert_eq!(runs[2].order.title(), "level 8 workers, phase fill");
        // Each level a stream of its own, its phases sharing it: the fill then the measure.
        let streams: Vec<(u64, Part)> =
            runs.iter().map(|j| (j.order.plan.stream.index, j.order.plan.stream.part)).collect();
        let measure = Part::Measure { warmed: 0 };
        assert_eq!(streams, [(1, Part::Fill), (1, measure), (2, Part::Fill), (2, measure)]);
        assert_eq!(s.label_columns(), ["level", "phase"]);
    }

    #[test]
    fn phases_alone_keep_the_plan_and_name_files_after_the_output() {
        let mut order = RunOrder::new(base(Load::Closed { concurrency: 3, think_time: Duration::ZERO }));
        order.output = Some("run.brg".into());
        let s = Sweep {
            base: order,
            levels: Vec::new(),
            step: Duration::ZERO,
            phases: barrage_plan::phases::parse(&["fill".into(), "measure".into()]).unwrap(),
            dir: None,
            slos: Vec::new(),
        };
        let runs = s.runs();
        assert_eq!(runs[0].order.output.as_deref(), Some(Path::new("run.fill.brg")));
        assert_eq!(runs[1].order.plan.load, Load::Closed { concurrency: 3, think_time: Duration::ZERO });
        assert_eq!(runs[1].labels, ["measure"]);
    }

    #[test]
    fn levels_come_from_rates_or_worker_counts_never_a_ramp() {
        let steps = RateSpec::Steps(vec![10.0, 50.0]);
        assert_eq!(Level::of_flags(Some(&steps), None), Ok(vec![Level::Rate(10.0), Level::Rate(50.0)]));
        assert_eq!(Level::of_flags(None, Some(&Levels(vec![8, 16]))), Ok(vec![Level::Workers(8), Level::Workers(16)]));
        assert!(Level::of_flags(Some(&RateSpec::Ramp(1.0, 2.0)), None).unwrap_err().contains("not a ramp"));
        assert!(Level::of_flags(None, None).unwrap_err().contains("needs levels"));
        let first = Level::Workers(8)
            .flags(Duration::from_secs(5), LoadFlags { step: Some(Duration::ZERO), ..Default::default() });
        assert_eq!(
            (first.concurrency, first.rate, first.step, first.duration),
            (Some(Levels(vec![8])), None, None, Some(Duration::from_secs(5)))
        );
    }
}
