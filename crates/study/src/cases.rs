//! An experiment as its file says it, checked before anything runs: the file's objectives,
//! warm-up and pause, each refused naming the file and key; a case's testbed from its
//! `testbed…` keys, with the options checked in the file's names for them and its servers
//! planned with stand-in addresses (it starts later). Apart from running the cases, which
//! brings the testbeds up.

use crate::experiment::{CaseSpec, Environment, Experiment, Results};
use crate::StudyDir;
use barrage_plan::experiment::{Experiment as File, Order, TestbedSetting};
use barrage_report::{ExperimentReport, Slo};
use barrage_testbed::{Balance, ServerSpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the experiment file says of every case: its objectives, warm-up and pause.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `slo = [...]`.
    pub slos: Vec<Slo>,
    /// `warmup = "…"`.
    pub warmup: Option<Duration>,
    /// `pause = "…"`.
    pub pause: Option<Duration>,
}

impl Settings {
    /// The settings of `e`, read from `file`.
    pub fn of(e: &File, file: &Path) -> Result<Settings, String> {
        let slos =
            e.slo.iter().map(|s| s.parse().map_err(|m: String| format!("{}: slo = [{s:?}]: {m}", file.display())));
        let duration = |s: &str, key: &str| {
            barrage_metrics::units::parse_duration(s).map_err(|e| format!("{}: {key} = {s:?}: {e}", file.display()))
        };
        Ok(Settings {
            slos: slos.collect::<Result<_, _>>()?,
            warmup: e.warmup.as_deref().map(|w| duration(w, "warmup")).transpose()?,
            pause: e.pause.as_deref().map(|p| duration(p, "pause")).transpose()?,
        })
    }
}

impl<'a> Experiment<'a> {
    /// The study of the file `e`, its `cases` run into `dir` by the `barrage` binary (for
    /// testbed origins), `noise` the smallest change called significant.
    pub fn new(
        e: &File,
        dir: &'a StudyDir,
        cases: &'a [CaseSpec],
        settings: Settings,
        barrage: PathBuf,
        noise: f64,
    ) -> Experiment<'a> {
        Experiment {
            name: e.name.clone(),
            dir,
            cases,
            factors: e
                .factors
                .iter()
                .map(|f| (f.name.clone(), f.levels.iter().map(|l| l.name.clone()).collect()))
                .collect(),
            compare: e.compare.clone(),
            repeats: e.repeats,
            shuffle: (e.order == Order::Random).then_some(e.seed),
            warmup: settings.warmup,
            pause: settings.pause,
            barrage,
            slos: settings.slos,
            noise,
        }
    }
}

impl Environment {
    /// The testbed of a case's `testbed…` keys, checked; a complaint names the key.
    pub fn from_setting(t: &TestbedSetting) -> Result<Environment, String> {
        let env = Environment {
            topology: t.topology.parse().map_err(|m: String| {
                format!(
                    "testbed = {:?}: {m} (a case's testbed is a topology the experiment brings up, not the directory of run's --testbed)",
                    t.topology
                )
            })?,
            tls: t.tls,
            backends: t.backends,
            balance: match &t.balance {
                Some(b) => b.parse().map_err(|m: String| format!("testbed-balance = {b:?}: {m}"))?,
                None => Balance::RoundRobin,
            },
            weights: t.weights.clone(),
            shapes: t.shapes.clone(),
            memory: t.memory,
            eviction: match &t.eviction {
                Some(e) => Some(e.parse().map_err(|m: String| format!("testbed-eviction = {e:?}: {m}"))?),
                None => None,
            },
        };
        // Weights for the number of origins, shapes that parse and name origins it has.
        env.options(Path::new("barrage")).check().map_err(|e| {
            let e = e.to_string().replace("--weights", "testbed-weights").replace("--shape", "testbed-shape");
            e.replace("--backends", "testbed-backends")
        })?;
        Ok(env)
    }
}

/// The servers `testbed` will have (none without one), with stand-in addresses: a case's
/// flags are checked before its testbed starts.
pub fn planned(testbed: Option<&Environment>) -> std::io::Result<Vec<ServerSpec>> {
    match testbed {
        Some(env) => barrage_testbed::plan(&env.options(Path::new("barrage")), Path::new("/nonexistent")),
        None => Ok(Vec::new()),
    }
}

/// `testbed-purge = true` needs a cache among the `specs` of `testbed` to purge.
pub fn check_purge(testbed: Option<&Environment>, specs: &[ServerSpec], purge: bool) -> Result<(), String> {
    if purge && !specs.iter().any(|s| s.kind.is_cache()) {
        let topology = testbed.map_or("", |env| env.topology.name());
        return Err(format!(
            "testbed-purge = true: the {topology} testbed has no cache to purge (varnish, squid, nginx-cache, all, redis and memcached have)"
        ));
    }
    Ok(())
}

/// The report of the experiment of the file `e`, from its `results`.
pub fn report(e: &File, results: Results) -> ExperimentReport {
    ExperimentReport {
        name: e.name.clone(),
        repeats: e.repeats,
        compare: e.compare.clone(),
        table: results.table,
        comparisons: results.comparisons,
    }
}
