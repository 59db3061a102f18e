//! An experiment's runs made elsewhere. barrage schedules no fleet of its own: an engine
//! that already runs jobs on many machines (the Ansible playbook, a Kubernetes Job per run)
//! follows the experiment's plan, `experiment FILE --dry-run --format json`
//! ([`Experiment::plan_json`]), runs each run split over its machines (`run ... --shard
//! I/N`), and puts the shards' files at the run's place in the results directory, where
//! `experiment FILE --resume` finds the run done ([`crate::dir::run_files`]) and reports
//! the whole experiment from them.

use crate::dir::Role;
use crate::experiment::{CaseSpec, Experiment, StreamRole};
use serde_json::{json, Value};

/// Version of the plan's JSON (`schema/experiment-plan.schema.json`).
pub const PLAN_VERSION: u32 = 1;

impl Experiment<'_> {
    /// Every measured run in the order the experiment runs them: its case, levels and
    /// repeat, the `run` flags that make it (shown as the listing shows them, so redacted
    /// unless `--show-secrets`; `--study-index` last, so that the run draws what the
    /// experiment's own would), where its results go, and whether other machines can make
    /// it at all.
    pub fn plan_json(&self, redacted: bool) -> Value {
        let runs: Vec<Value> = self.order().into_iter().map(|(c, repeat)| self.run_json(c, repeat)).collect();
        json!({
            "version": PLAN_VERSION,
            "experiment": self.name,
            "results": self.dir.path.to_string_lossy(),
            "repeats": self.repeats,
            "redacted": redacted,
            "fleet": runs.iter().all(|r| r["fleet"] == true),
            "runs": runs,
        })
    }

    fn run_json(&self, c: usize, repeat: u32) -> Value {
        let case = &self.cases[c];
        let index = self.stream_index(c, repeat, StreamRole::Measured, 0);
        let mut run = case.shown_flags();
        run.extend(["--study-index".to_string(), index.to_string()]);
        let last = *Self::phases(case).last().expect("at least one phase");
        let place = self.dir.file(&case.id, repeat, last, Role::Measured);
        let results = place.file_name().expect("a file name").to_string_lossy().into_owned();
        let local = self.local_only(case);
        let levels: serde_json::Map<String, Value> =
            case.levels.iter().map(|(f, l)| (f.clone(), Value::from(l.as_str()))).collect();
        json!({
            "case": case.id,
            "levels": levels,
            "repeat": repeat,
            "study_index": index,
            "run": run,
            "results": results,
            "fleet": local.is_none(),
            "local_only": local,
        })
    }

    /// Why a case's runs must be made by the experiment on this machine, if they must:
    /// what the run needs besides its flags lives here, or would happen once per machine.
    fn local_only(&self, case: &CaseSpec) -> Option<String> {
        if let Some(env) = &case.testbed {
            return Some(format!("testbed = {:?}: it runs on this machine's loopback", env.name()));
        }
        if !case.phases.is_empty() {
            return Some("phases: a measure replays what its fill sent, one stream on one machine".into());
        }
        if case.background.is_some() {
            return Some("background: its load runs beside the run, from this machine".into());
        }
        if self.warmup.is_some() {
            return Some("warmup: the experiment warms up before each run, from this machine".into());
        }
        if !case.events().is_empty() {
            return Some("at: its events would run once on every load machine".into());
        }
        None
    }
}
