//! `barrage capacity`: the highest open-loop rate that meets every `--slo`, found by
//! barrage-study's search with real probes.

use super::emit::{emit, gates, not_a_result};
use crate::args::CapacityArgs;
use crate::Exit;
use anyhow::bail;
use barrage_engine::CancellationToken;
use barrage_report::{CapacityReport, Report, Slo, StudyTable};
use barrage_study::capacity::{generator_limited, knee, Bounds, Capacity};
use barrage_study::control::Control;
use barrage_study::views::Views;
use barrage_study::{Level, Runner};
use std::time::Duration;

/// Length of a probe when --step is not given.
const DEFAULT_STEP: Duration = Duration::from_secs(10);

/// Runs the search and prints what it found.
pub fn capacity(a: CapacityArgs, stop: CancellationToken) -> anyhow::Result<Exit> {
    let run = &a.run;
    if run.gates.slo.is_empty() {
        bail!("capacity needs at least one --slo, e.g. --slo 'p99<100ms' --slo 'success>=99.9%'");
    }
    if run.load.duration.is_some() {
        bail!("capacity runs each probe for --step (default 10s): drop -d/--duration");
    }
    if run.load.requests.is_some() {
        bail!("-n/--requests is for `barrage run`; capacity runs each probe for --step");
    }
    if !run.request.phases.is_empty() {
        bail!("--phases runs a stream once per phase; capacity probes each rate once: use `barrage sweep --phases` at its rates");
    }
    if run.load.rate_cap.is_some() {
        bail!("--rate-cap caps a closed loop (-c); capacity probes open-loop rates: drop it");
    }
    if run.load.rate.is_some() || run.load.concurrency.is_some() {
        bail!("capacity chooses the rates itself: drop --rate and -c (use --start-rate and --max-rate)");
    }
    let (start_rate, max_rate) = (a.start_rate.0, a.max_rate.0);
    if start_rate > max_rate {
        bail!(
            "--start-rate {start_rate} is above --max-rate {max_rate}: the search goes from the first up to the second"
        );
    }
    run.emit.files().check(run.gates.junit.as_deref())?;
    if let Some(dir) = &run.output.output {
        barrage_report::output::check_dir(dir, "-o")?;
    }
    let step = run.load.step.map_or(DEFAULT_STEP, |s| s.0);
    // The base plan at the first probe's rate for one step; each probe replaces the load.
    let first = Level::Rate(start_rate).flags(step, run.load_flags());
    super::plan::one_machine(run, "capacity")?;
    let mut base = super::plan::job_at(run, &first)?;
    barrage_study::sweep::one_group(&base.plan, "capacity").map_err(anyhow::Error::msg)?;
    let dir = base.output.take();
    let bounds = Bounds { start_rate, max_rate, precision: a.precision, step, max_time: a.max_time.0 };
    let mut otlp = super::otel::Otlp::start(&run.otel)?;
    if let Some(o) = &otlp {
        o.feed().apply(&mut base);
    }
    let search = Capacity { base, bounds, slos: run.gates.slo.clone(), dir };
    let mut views = Views::start(&run.live.options(), &stop, true)?;
    let found = search.run(
        &mut Runner::new("capacity", stop, &mut super::otel::Exported { views: &mut views, otlp: otlp.as_mut() })
            .with_history(super::history::keeper(&a.run.keep))
            .with_control(Control::of(a.run.keep.control.as_ref(), a.run.watch.testbed.is_some())),
    );
    views.finish();
    if let Some(o) = otlp {
        o.finish();
    }
    let found = found?;
    let report = CapacityReport {
        capacity: found.findings.capacity,
        failed_at: found.findings.failed_at,
        interval: found.findings.interval(),
        verified: found.findings.verified(),
        stopped: found.findings.stop_text(&bounds),
        knee: knee(&found.table),
        generator_limited: generator_limited(&found),
        slo_ms: run.gates.slo.iter().filter_map(Slo::latency_bound_ms).collect(),
        table: found.table,
    };
    let no_rate = report.capacity.is_none().then(|| lowest_failed(&report.table)).flatten();
    let report = Report::Capacity(&report);
    emit(&report, &run.emit)?;
    let junit = run.gates.junit.as_deref();
    gates(&report.slo_results(), run.emit.format, junit, "barrage capacity", report.duration_s(), report.unredacted())?;
    // Probes above the capacity may collapse: that is the finding. Without a capacity, it
    // depends on the lowest probe: built on failure, nothing was measured at all.
    Ok(match no_rate {
        Some(line) => not_a_result(&[line], 1, "lowest probe").expect("a failure"),
        None if found.findings.capacity.is_some() => Exit::Ok,
        None => Exit::Failed,
    })
}

/// The lowest-rate probe, as `label: reason`, when it is built on failure.
fn lowest_failed(table: &StudyTable) -> Option<String> {
    let lowest = table.rows.iter().min_by(|a, b| a.offered.unwrap_or(0.0).total_cmp(&b.offered.unwrap_or(0.0)))?;
    lowest.failure().map(|why| format!("{}: {why}", lowest.labels.join(" ")))
}
