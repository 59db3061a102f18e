//! What the flags of a run mean beside the plan's own fields: `--scenario` read under the
//! flags' load with its `--var`s, refused beside flags that would choose nothing; how long
//! the run lasts; which of its groups and steps an objective may name; this shard's part.
//! Apart from the scenario parser and the plan, which know files and values, not flags.

use crate::flow::Scenario;
use crate::phases::PhaseSpec;
use crate::plan::{Load, Plan, Shard, Target};
use crate::units::LoadFlags;
use crate::Pacer;
use std::path::PathBuf;
use std::time::Duration;

/// Default duration when neither --duration nor --requests is given (as wrk).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// The flags that meet `--scenario`, as the command line gives them.
#[derive(Clone, Debug, Default)]
pub struct ScenarioFlags {
    /// `--scenario FILE`.
    pub scenario: Option<PathBuf>,
    /// `--var NAME=VALUE`, repeated.
    pub vars: Vec<(String, String)>,
    /// `-X` was given.
    pub method: bool,
    /// `--pick` was given.
    pub pick: bool,
    /// `--key-pattern` was given.
    pub key_pattern: bool,
    /// `-n`.
    pub requests: Option<u64>,
}

impl ScenarioFlags {
    /// `--scenario`, read under `load` with its variables, and its targets: refused with the
    /// flags that would choose nothing beside it.
    pub fn read(&self, flags: &LoadFlags, load: &Load) -> Result<Option<(Scenario, Vec<Target>)>, String> {
        // clap does not require --scenario of --var when a URL (which --scenario excludes) is given.
        if !self.vars.is_empty() && self.scenario.is_none() {
            return Err("--var sets a {{NAME}} of a --scenario file: give --scenario FILE".into());
        }
        let Some(path) = &self.scenario else { return Ok(None) };
        let (s, targets) = crate::scenario::read(path, &self.vars, load).map_err(|e| format!("--scenario {e}"))?;
        if (flags.rate.is_some() || flags.concurrency.is_some()) && s.groups.iter().all(|g| g.own_load) {
            return Err(format!(
                "{}: every group of --scenario {} has its own rate or concurrency: the flags' load would apply to none",
                if flags.rate.is_some() { "--rate" } else { "-c" },
                path.display()
            ));
        }
        // Each step has its method and its target: flags that choose them would choose nothing.
        let chooses = [(self.method, "-X/--method"), (self.pick, "--pick")];
        if let Some((_, flag)) = chooses.iter().find(|(given, _)| *given) {
            return Err(format!(
                "{flag} chooses the requests of URLs and target files; the steps of --scenario {} say their own",
                path.display()
            ));
        }
        if self.key_pattern {
            return Err("--key-pattern is for redis:// and memcache:// targets, not a --scenario's steps".into());
        }
        Ok(Some((s, targets)))
    }

    /// How long the run lasts: `-d`, a scenario's span, or the default unless it ends by
    /// itself (`-n`, stepped rates, a scenario whose groups all end by themselves).
    pub fn duration(
        &self,
        flags: &LoadFlags,
        load: &Load,
        scenario: Option<&Scenario>,
    ) -> Result<Option<Duration>, String> {
        if scenario.is_some() && self.requests.is_some() {
            return Err(
                "-n counts requests; a --scenario runs flows for a duration: give -d (or group durations)".into()
            );
        }
        let natural_end = matches!(load, Load::Open { pacer: Pacer::Steps { .. }, .. })
            || scenario.is_some_and(crate::scenario::ends_by_itself);
        let span = scenario.and_then(crate::scenario::span);
        let default = (self.requests.is_none() && !natural_end).then_some(DEFAULT_DURATION);
        Ok(flags.duration.or(span).or(default))
    }
}

/// An objective (`text`) on a scenario's group (`group`) or step called `name` is refused
/// before the run, not found missing after it: the run's scenario must have one.
pub fn check_scope(scenario: Option<&Scenario>, text: &str, group: bool, name: &str) -> Result<(), String> {
    let Some(s) = scenario else {
        return if group { Err(format!("--slo '{text}': flow objectives need a --scenario")) } else { Ok(()) };
    };
    let known: Vec<String> = if group {
        s.groups.iter().map(|g| g.name.clone()).collect()
    } else {
        (0..s.groups.len())
            .flat_map(|g| s.flows[s.groups[g].flow].steps.iter().map(move |st| s.step_key(g, st)))
            .collect()
    };
    if !known.iter().any(|k| k == name) {
        let what = if group { "group" } else { "step" };
        return Err(format!("--slo '{text}': the scenario has no {what} {name} (its {what}s: {})", known.join(", ")));
    }
    Ok(())
}

/// `--phases fill,measure[:LENGTH]`, checked. Flows draw no objects from the run's stream,
/// so a run of a `scenario` has no phases to fill and measure.
pub fn phases(texts: &[String], scenario: bool) -> Result<Vec<PhaseSpec>, String> {
    let phases = crate::phases::parse(texts).map_err(|e| format!("--phases: {e}"))?;
    if !phases.is_empty() && scenario {
        return Err("--phases fills and measures a run's request stream; a --scenario's flows ask for what their steps say: drop --phases".into());
    }
    Ok(phases)
}

/// A study of several runs (`mode`) is not split (`shard`) or started at a time
/// (`start_at`): each of its runs would be. Refused with the way to do it.
pub fn one_machine(shard: bool, start_at: bool, mode: &str) -> Result<(), String> {
    if shard || start_at {
        return Err(format!(
            "--shard and --start-at split and start one run; {mode} is a series of runs: split each run with `barrage run --shard`"
        ));
    }
    Ok(())
}

/// This shard's part of `plan` (`--shard`; the whole run without): refused when it would
/// have nothing to do, connections being never split between shards.
pub fn shard_of(shard: Option<Shard>, plan: &Plan) -> Result<Shard, String> {
    let Some(shard) = shard else { return Ok(Shard::WHOLE) };
    let flag = match &plan.load {
        Load::Closed { .. } => "-c",
        Load::Open { .. } => "--max-in-flight",
    };
    let n = plan.connections();
    if shard.share(n as u64) == 0 {
        let what = match plan.protocol.streams() {
            1 => format!("{flag} {n}"),
            s => format!("{n} connection(s) of --streams {s}"),
        };
        return Err(format!(
            "--shard {shard}: {what} leaves this shard nothing; give at least {} over {} shards",
            shard.count, shard.count
        ));
    }
    Ok(shard)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed() -> Load {
        Load::Closed { concurrency: 1, think_time: Duration::ZERO }
    }

    #[test]
    fn a_run_lasts_its_duration_the_default_or_until_it_ends_by_itself() {
        let none = ScenarioFlags::default();
        assert_eq!(none.duration(&LoadFlags::default(), &closed(), None), Ok(Some(DEFAULT_DURATION)));
        let given = LoadFlags { duration: Some(Duration::from_secs(3)), ..LoadFlags::default() };
        assert_eq!(none.duration(&given, &closed(), None), Ok(Some(Duration::from_secs(3))));
        let counted = ScenarioFlags { requests: Some(100), ..ScenarioFlags::default() };
        assert_eq!(counted.duration(&LoadFlags::default(), &closed(), None), Ok(None));
        let steps =
            Load::Open { pacer: Pacer::Steps { rates: vec![1.0], step: Duration::from_secs(1) }, max_in_flight: 1 };
        assert_eq!(none.duration(&LoadFlags::default(), &steps, None), Ok(None));
    }

    #[test]
    fn flags_that_would_choose_nothing_are_refused() {
        let vars = ScenarioFlags { vars: vec![("a".into(), "b".into())], ..ScenarioFlags::default() };
        let e = vars.read(&LoadFlags::default(), &closed()).unwrap_err();
        assert_eq!(e, "--var sets a {{NAME}} of a --scenario file: give --scenario FILE");
        assert!(matches!(ScenarioFlags::default().read(&LoadFlags::default(), &closed()), Ok(None)));
        assert!(phases(&["fill".into(), "measure".into()], true).unwrap_err().contains("drop --phases"));
        assert!(phases(&[], true).unwrap().is_empty());
        assert!(one_machine(true, false, "sweep").unwrap_err().contains("sweep is a series of runs"));
        assert_eq!(one_machine(false, false, "sweep"), Ok(()));
        assert!(check_scope(None, "checkout:p99<1s", true, "checkout").unwrap_err().contains("need a --scenario"));
        assert_eq!(check_scope(None, "GET /:p99<1s", false, "GET /"), Ok(()));
    }
}
