//! `run`'s flags to a validated [`Plan`] and a [`RunOrder`] (what it watches, logs and does
//! beside sending). Every mode builds its base plan here; levels and cases derive from it.

use crate::args::RunArgs;
use barrage_engine::{Load, Pacer, Plan, Target, TlsOptions};
use barrage_plan::units::LoadFlags;
use barrage_study::RunOrder;
use std::sync::Arc;
use std::time::Duration;

/// Default duration when neither --duration nor --requests is given (as wrk).
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// The job of `a`: its plan, watches, `--at` commands and logs; results to `-o`.
pub fn job(a: &RunArgs) -> anyhow::Result<RunOrder> {
    job_at(a, &a.load_flags())
}

/// The job of `a` under the load of `flags` (a study's first level, not the flags').
pub fn job_at(a: &RunArgs, flags: &LoadFlags) -> anyhow::Result<RunOrder> {
    let plan = plan(a, flags)?;
    slo_scopes(&a.gates.slo, &plan)?;
    let mut job = RunOrder::new(plan);
    job.watch = barrage_study::watch::watches(&a.watch.monitor, a.watch.testbed.as_deref(), &job.plan)
        .map_err(anyhow::Error::msg)?;
    // `barrage` in an `--at` command is this binary, wherever PATH points.
    let barrage = std::env::current_exe().ok();
    // `barrage testbed ...` in it acts on the testbed of --testbed (a case's own).
    job.at = barrage_study::watch::schedule(
        &a.watch.at,
        job.plan.attack_limit(),
        barrage.as_deref(),
        a.watch.testbed.as_deref(),
    )
    .map_err(anyhow::Error::msg)?;
    job.output = a.output.output.clone();
    job.log = a.output.log.clone().map(|path| barrage_engine::reqlog::LogSpec { path, sample: a.output.log_sample });
    job.hdr_log = a.output.hdr_log.clone();
    job.redaction = a.output.redaction();
    if let Some(at) = a.launch.start_at {
        at.wait_from(std::time::SystemTime::now()).map_err(anyhow::Error::msg)?;
        job.start_at = Some(at.0);
    }
    job.clock_offset_us = a.launch.clock_offset.map(|c| c.0);
    Ok(job)
}

/// `--phases fill,measure[:LENGTH]`, checked. Flows draw no objects from the run's stream,
/// so a scenario has no phases to fill and measure.
pub fn phases(a: &RunArgs) -> anyhow::Result<Vec<barrage_plan::phases::PhaseSpec>> {
    let phases = barrage_plan::phases::parse(&a.request.phases).map_err(|e| anyhow::anyhow!("--phases: {e}"))?;
    if !phases.is_empty() && a.request.scenario.is_some() {
        anyhow::bail!("--phases fills and measures a run's request stream; a --scenario's flows ask for what their steps say: drop --phases");
    }
    Ok(phases)
}

/// A study of several runs (`mode`) is not split or started at a time: each of its runs
/// would be. Refused with the way to do it.
pub fn one_machine(a: &RunArgs, mode: &str) -> anyhow::Result<()> {
    if a.launch.shard.is_some() || a.launch.start_at.is_some() {
        anyhow::bail!(
            "--shard and --start-at split and start one run; {mode} is a series of runs: split each run with `barrage run --shard`"
        );
    }
    Ok(())
}

/// This shard's part of the run: refused when it would have nothing to do.
fn shard(a: &RunArgs, plan: &Plan) -> anyhow::Result<barrage_plan::Shard> {
    let Some(shard) = a.launch.shard else { return Ok(barrage_plan::Shard::WHOLE) };
    let flag = match &plan.load {
        Load::Closed { .. } => "-c",
        Load::Open { .. } => "--max-in-flight",
    };
    // Connections are never split between shards.
    let n = plan.connections();
    if shard.share(n as u64) == 0 {
        let what = match plan.protocol.streams() {
            1 => format!("{flag} {n}"),
            s => format!("{n} connection(s) of --streams {s}"),
        };
        anyhow::bail!(
            "--shard {shard}: {what} leaves this shard nothing; give at least {} over {} shards",
            shard.count,
            shard.count
        );
    }
    Ok(shard)
}

/// An objective on a scenario's group or step that does not exist is refused before the
/// run, not found missing after it.
fn slo_scopes(slos: &[barrage_report::Slo], plan: &Plan) -> anyhow::Result<()> {
    let Some(s) = plan.scenario.as_deref() else {
        if let Some(slo) = slos.iter().find(|slo| matches!(slo.scope(), Some((true, _)))) {
            anyhow::bail!("--slo '{}': flow objectives need a --scenario", slo.text());
        }
        return Ok(());
    };
    let groups: Vec<&str> = s.groups.iter().map(|g| g.name.as_str()).collect();
    let steps: Vec<String> = (0..s.groups.len())
        .flat_map(|g| s.flows[s.groups[g].flow].steps.iter().map(move |st| s.step_key(g, st)))
        .collect();
    for slo in slos {
        let (known, what): (Vec<&str>, &str) = match slo.scope() {
            None => continue,
            Some((true, _)) => (groups.clone(), "group"),
            Some((false, _)) => (steps.iter().map(String::as_str).collect(), "step"),
        };
        let name = slo.scope().map_or("", |(_, n)| n);
        if !known.contains(&name) {
            anyhow::bail!(
                "--slo '{}': the scenario has no {what} {name} (its {what}s: {})",
                slo.text(),
                known.join(", ")
            );
        }
    }
    Ok(())
}

/// Builds and validates the plan from the flags, its load from `flags`.
fn plan(a: &RunArgs, flags: &LoadFlags) -> anyhow::Result<Plan> {
    // Reading a million targets takes a while: a signal meanwhile ends barrage at once.
    let _loading = crate::signals::loading();
    let kv = a.kv_flags().setup().map_err(anyhow::Error::msg)?;
    let protocol = a.protocol_flags().protocol(kv.as_ref().map(|k| k.plan.clone())).map_err(anyhow::Error::msg)?;
    let mut load = flags.load().map_err(anyhow::Error::msg)?;
    if let (Load::Open { max_in_flight, .. }, None) = (&mut load, flags.max_in_flight) {
        // --connections counts connections; the bound counts what they carry.
        *max_in_flight = protocol.open_bound(*max_in_flight);
    }
    let (scenario, targets) = match (scenario(a, flags, &load)?, &kv) {
        (Some((s, targets)), _) => {
            // The groups' loads replace the flags'; the plan's load only sums them up.
            load = barrage_plan::scenario::overall_load(&s);
            let shard = a.launch.shard.unwrap_or(barrage_plan::Shard::WHOLE);
            (Some(Arc::new(s.in_shard(shard.index.into(), shard.count.into()))), targets)
        }
        (None, Some(kv)) => (None, kv.targets.clone()),
        (None, None) => (None, a.request_flags().targets().map_err(anyhow::Error::msg)?),
    };
    let (c, r) = (&a.conn, &a.request);
    let mut plan = Plan {
        targets: a.request_flags().apply(targets).map_err(anyhow::Error::msg)?.into(),
        duration: duration(a, flags, &load, scenario.as_deref())?,
        load,
        requests: a.load.requests,
        protocol,
        tls: TlsOptions { cacert: c.cacert.clone(), insecure: c.insecure },
        resolve: c.resolve.iter().map(|r| ((r.host.clone(), r.port), r.addr)).collect(),
        bind: c.bind,
        timeout: c.timeout.0,
        connect_timeout: c.connect_timeout.0.min(c.timeout.0),
        threads: a.load.threads,
        rate_cap: a.load.rate_cap.map(|r| r.0),
        pick: match (&kv, &a.kv.key_pattern, &r.pick) {
            (_, Some(p), _) | (_, None, Some(p)) => p.clone(),
            // memtier's default key pattern is random (R:R).
            (Some(_), None, None) => barrage_plan::Pick::Random,
            (None, None, None) => barrage_plan::Pick::RoundRobin,
        },
        hit_ratio: r.hit_ratio,
        objects: kv.as_ref().map_or(r.objects, |kv| Some(kv.keys)),
        seed: r.seed,
        stream: barrage_plan::Stream::default(),
        responses: a.measure.responses(),
        retry: a.retry.retries.map(|max_retries| barrage_plan::RetryPolicy {
            max_retries,
            backoff_min: a.retry.backoff.0,
            backoff_max: a.retry.backoff.1,
            on: a.retry.retry_on.clone(),
        }),
        scenario,
        shard: barrage_plan::Shard::WHOLE,
    };
    plan.validate().map_err(|e| anyhow::anyhow!(e))?;
    plan.shard = shard(a, &plan)?;
    super::limits::fits(&plan, flags)?;
    Ok(plan)
}

/// `--scenario`, read under `load` with its variables, and its targets: refused with the
/// flags that would choose nothing beside it.
fn scenario(
    a: &RunArgs,
    flags: &LoadFlags,
    load: &Load,
) -> anyhow::Result<Option<(barrage_plan::flow::Scenario, Vec<Target>)>> {
    let r = &a.request;
    // clap does not require --scenario of --var when a URL (which --scenario excludes) is given.
    if !r.vars.is_empty() && r.scenario.is_none() {
        anyhow::bail!("--var sets a {{{{NAME}}}} of a --scenario file: give --scenario FILE");
    }
    let Some(path) = &r.scenario else { return Ok(None) };
    let (s, targets) =
        barrage_plan::scenario::read(path, &r.vars, load).map_err(|e| anyhow::anyhow!("--scenario {e}"))?;
    if (flags.rate.is_some() || flags.concurrency.is_some()) && s.groups.iter().all(|g| g.own_load) {
        anyhow::bail!(
            "{}: every group of --scenario {} has its own rate or concurrency: the flags' load would apply to none",
            if flags.rate.is_some() { "--rate" } else { "-c" },
            path.display()
        );
    }
    // Each step has its method and its target: flags that choose them would choose nothing.
    let chooses = [(r.method.is_some(), "-X/--method"), (r.pick.is_some(), "--pick")];
    if let Some((_, flag)) = chooses.iter().find(|(given, _)| *given) {
        anyhow::bail!(
            "{flag} chooses the requests of URLs and target files; the steps of --scenario {} say their own",
            path.display()
        );
    }
    if a.kv.key_pattern.is_some() {
        anyhow::bail!("--key-pattern is for redis:// and memcache:// targets, not a --scenario's steps");
    }
    Ok(Some((s, targets)))
}

/// How long the run lasts: `-d`, a scenario's span, or the default unless it ends by
/// itself (`-n`, stepped rates, a scenario whose groups all end by themselves).
fn duration(
    a: &RunArgs,
    flags: &LoadFlags,
    load: &Load,
    scenario: Option<&barrage_plan::flow::Scenario>,
) -> anyhow::Result<Option<Duration>> {
    let requests = a.load.requests;
    if scenario.is_some() && requests.is_some() {
        anyhow::bail!("-n counts requests; a --scenario runs flows for a duration: give -d (or group durations)");
    }
    let natural_end = matches!(load, Load::Open { pacer: Pacer::Steps { .. }, .. })
        || scenario.is_some_and(barrage_plan::scenario::ends_by_itself);
    let span = scenario.and_then(barrage_plan::scenario::span);
    let default = (requests.is_none() && !natural_end).then_some(DEFAULT_DURATION);
    Ok(flags.duration.or(span).or(default))
}
