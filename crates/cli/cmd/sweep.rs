//! `barrage sweep`: one run per load level (rates or worker counts) and phase, one row each.
//! The classic "latency and errors vs number of clients" and "report per rate" tables.

use super::emit::{emit, exit, gates};
use crate::args::RunArgs;
use crate::Exit;
use anyhow::bail;
use barrage_engine::CancellationToken;
use barrage_report::{Report, Slo};
use barrage_study::control::Control;
use barrage_study::views::Views;
use barrage_study::{Level, Runner, Sweep};
use std::time::Duration;

/// Length of a level when neither --step nor --duration is given.
const DEFAULT_STEP: Duration = Duration::from_secs(10);

/// Runs every level and prints the table.
pub fn sweep(a: RunArgs, stop: CancellationToken) -> anyhow::Result<Exit> {
    if a.load.requests.is_some() {
        bail!("-n/--requests is for `barrage run`; `barrage sweep` runs each level for --step");
    }
    let levels = Level::of_flags(a.load.rate.as_ref(), a.load.concurrency.as_ref()).map_err(anyhow::Error::msg)?;
    a.emit.files().check(a.gates.junit.as_deref())?;
    if let Some(dir) = &a.output.output {
        barrage_report::output::check_dir(dir, "-o")?;
    }
    // Every level within the process's limits, not only the first the base plan is built at.
    if let Some(most) = levels
        .iter()
        .filter_map(|l| match l {
            Level::Workers(n) => Some(*n),
            Level::Rate(_) => None,
        })
        .max()
    {
        barrage_engine::limits::check_connections(most as usize, a.load.threads, "-c").map_err(anyhow::Error::msg)?;
    }
    if let (Some(step), Some(d)) = (a.load.step, a.load.duration) {
        bail!("-d/--duration {:?} and --step {:?} both set a level's length: give one (--step)", d.0, step.0);
    }
    let step = a.load.step.map(|s| s.0).or(a.load.duration.map(|d| d.0)).unwrap_or(DEFAULT_STEP);
    // The base plan at the first level for one step (so `--at` is checked against a
    // level's length); each level replaces the load.
    let first = levels[0].flags(step, a.load_flags());
    super::plan::one_machine(&a, "sweep")?;
    let mut base = super::plan::job_at(&a, &first)?;
    barrage_study::sweep::one_group(&base.plan, "sweep").map_err(anyhow::Error::msg)?;
    // -o names a directory of level files.
    let dir = base.output.take();
    let phases = super::plan::phases(&a)?;
    let mut otlp = super::otel::Otlp::start(&a.otel)?;
    if let Some(o) = &otlp {
        o.feed().apply(&mut base);
    }
    let sweep = Sweep { base, levels, step, phases, dir, slos: a.gates.slo.clone() };
    let mut views = Views::start(&a.live.options(), &stop, true)?;
    let table = sweep.run(
        &mut Runner::new("sweep", stop, &mut super::otel::Exported { views: &mut views, otlp: otlp.as_mut() })
            .with_history(super::history::keeper(&a.keep))
            .with_control(Control::of(a.keep.control.as_ref(), a.watch.testbed.is_some())),
    );
    views.finish();
    if let Some(o) = otlp {
        o.finish();
    }
    let table = table?;
    let slo_ms: Vec<(String, f64)> = a.gates.slo.iter().filter_map(Slo::latency_bound_ms).collect();
    let report = Report::Sweep { table: &table, slo_ms: &slo_ms };
    emit(&report, &a.emit)?;
    if !a.gates.slo.is_empty() {
        let best = barrage_study::sweep::highest_meeting(&table);
        let line = format!("highest level meeting every SLO: {}", best.as_deref().unwrap_or("none"));
        if a.emit.format == crate::args::Format::Text {
            println!("\n{line}");
        } else {
            eprintln!("{line}");
        }
    }
    let passed = gates(
        &report.slo_results(),
        a.emit.format,
        a.gates.junit.as_deref(),
        "barrage sweep",
        report.duration_s(),
        report.unredacted(),
    )?;
    Ok(exit(&report, table.rows.len(), "run", passed))
}
