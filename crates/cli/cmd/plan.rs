//! `run`'s flags to a validated [`Plan`] and a [`RunOrder`] (what it watches, logs and does
//! beside sending). Every mode builds its base plan here; levels and cases derive from it.

use crate::args::RunArgs;
use barrage_engine::{Load, Plan, TlsOptions};
use barrage_plan::run_flags::{self, check_scope, shard_of};
use barrage_plan::units::LoadFlags;
use barrage_study::RunOrder;
use std::sync::Arc;

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
        // A takeover joins a schedule that started long ago; anyone else must be on time.
        if a.launch.resume_at.is_none() {
            at.wait_from(std::time::SystemTime::now()).map_err(anyhow::Error::msg)?;
        }
        job.start_at = Some(at.0);
    }
    if let Some(index) = a.launch.study_index {
        job.plan.stream.index = index;
    }
    if let Some(from) = a.launch.resume_at {
        job.resume_from = Some(from.0);
        let lanes = a.launch.resume_after.as_ref().map(|l| l.0.clone());
        if let Some(l) = lanes.as_ref().filter(|l| l.len() != a.load.threads) {
            anyhow::bail!(
                "--resume-after gives {} lanes, one per engine thread of the lost shard: --threads must be {0}, not {}",
                l.len(),
                a.load.threads
            );
        }
        // The arrivals of the share whose outcome the lost shard recorded, and those it had
        // in flight, sent again: what its row and the coverage count.
        let recorded = lanes.as_deref().map(barrage_metrics::lanes::recorded);
        let again = lanes.as_deref().map(|l| barrage_metrics::lanes::in_flight(l).0);
        job.resume_after = lanes;
        job.fleet = Some(serde_json::json!({ "takeover": {
            "from_s": from.0.as_secs_f64(),
            "after": recorded,
            "again": again,
        } }));
    }
    job.clock_offset_us = a.launch.clock_offset.map(|c| c.0);
    Ok(job)
}

/// `--phases`, checked ([`run_flags::phases`]).
pub fn phases(a: &RunArgs) -> anyhow::Result<Vec<barrage_plan::phases::PhaseSpec>> {
    run_flags::phases(&a.request.phases, a.request.scenario.is_some()).map_err(anyhow::Error::msg)
}

/// A study of several runs (`mode`) is not split or started at a time ([`run_flags::one_machine`]),
/// and its page has no trace ids to link (`--trace-url`: a flag it would take and ignore).
pub fn one_machine(a: &RunArgs, mode: &str) -> anyhow::Result<()> {
    if a.trace.links.trace_url.is_some() {
        anyhow::bail!(
            "--trace-url links the trace ids of a run's page; {mode} shows none: give it to `barrage report --html` of a run's results file"
        );
    }
    if a.launch.report_to.is_some() {
        anyhow::bail!("--report-to streams one run to a collector; {mode} is a series of runs");
    }
    if a.launch.study_index.is_some() {
        anyhow::bail!(
            "--study-index names a run of an experiment made elsewhere; {mode} gives each of its runs its own"
        );
    }
    run_flags::one_machine(a.launch.shard.is_some(), a.launch.start_at.is_some(), mode).map_err(anyhow::Error::msg)
}

/// An objective on a scenario's group or step that does not exist is refused before the
/// run, not found missing after it.
fn slo_scopes(slos: &[barrage_report::Slo], plan: &Plan) -> anyhow::Result<()> {
    for (slo, (group, name)) in slos.iter().filter_map(|slo| Some((slo, slo.scope()?))) {
        check_scope(plan.scenario.as_deref(), slo.text(), group, name).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// Builds and validates the plan from the flags, its load from `flags`.
fn plan(a: &RunArgs, flags: &LoadFlags) -> anyhow::Result<Plan> {
    // Reading a million targets takes a while: a signal meanwhile ends barrage at once.
    let _loading = barrage_study::signals::loading();
    let kv = a.kv_flags().setup().map_err(anyhow::Error::msg)?;
    let protocol = a.protocol_flags().protocol(kv.as_ref().map(|k| k.plan.clone())).map_err(anyhow::Error::msg)?;
    let mut load = flags.load().map_err(anyhow::Error::msg)?;
    if let (Load::Open { max_in_flight, .. }, None) = (&mut load, flags.max_in_flight) {
        // --connections counts connections; the bound counts what they carry.
        *max_in_flight = protocol.open_bound(*max_in_flight);
    }
    let sf = a.scenario_flags();
    let (scenario, targets) = match (sf.read(flags, &load).map_err(anyhow::Error::msg)?, &kv) {
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
        duration: sf.duration(flags, &load, scenario.as_deref()).map_err(anyhow::Error::msg)?,
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
        send_precision: a.load.send_precision.map(|d| d.0).filter(|&d| d != barrage_plan::plan::DEFAULT_SEND_PRECISION),
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
        trace: a.trace.spec(),
    };
    plan.validate().map_err(|e| anyhow::anyhow!(e))?;
    plan.shard = shard_of(a.launch.shard, &plan).map_err(anyhow::Error::msg)?;
    barrage_study::machine::fits(&plan, flags).map_err(anyhow::Error::msg)?;
    Ok(plan)
}
