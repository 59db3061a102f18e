//! `barrage run`: one run, or with `--phases` the same run once per phase (a sweep of one
//! level), each reported on its own and then side by side.

use super::emit::{emit_with, gates, not_a_result};
use crate::args::{EmitArgs, Format, RunArgs};
use crate::Exit;
use barrage_engine::CancellationToken;
use barrage_report::Report;
use barrage_study::control::Control;
use barrage_study::sweep::suffixed;
use barrage_study::views::Views;
use barrage_study::{Runner, Sweep};
use std::path::Path;
use std::time::Duration;

/// Runs the load and prints the report; with `--phases`, once per phase.
pub fn run(a: RunArgs, stop: CancellationToken) -> anyhow::Result<Exit> {
    if a.emit.format == Format::HdrLog {
        anyhow::bail!("--format hdr-log is for `barrage report`; on `run` use --hdr-log FILE");
    }
    a.emit.files().check(a.gates.junit.as_deref())?;
    // Checked before the run, as the files are: a bad template is known at once.
    let html = a.trace.links.html_options()?;
    let mut job = super::plan::job(&a)?;
    let phases = super::plan::phases(&a)?;
    if a.launch.report_to.is_some() && !phases.is_empty() {
        anyhow::bail!("--report-to streams one run to a collector; --phases makes one run per phase");
    }
    let shard = super::collect::Shard::join(&a.launch, &mut job, &stop)?;
    let mut otlp = super::otel::Otlp::start(&a.otel)?;
    if let Some(o) = &otlp {
        o.feed().apply(&mut job);
    }
    let mut views = Views::start(&a.live.options(), &stop, !a.request.phases.is_empty())?;
    let sweep =
        Sweep { base: job, levels: Vec::new(), step: Duration::ZERO, phases, dir: None, slos: a.gates.slo.clone() };
    let table = sweep.run(
        &mut Runner::new("run", stop, &mut super::otel::Exported { views: &mut views, otlp: otlp.as_mut() })
            .with_history(super::history::keeper(&a.keep))
            .with_control(Control::of(a.keep.control.as_ref(), a.watch.testbed.is_some())),
    );
    views.finish();
    if let Some(o) = otlp {
        o.finish();
    }
    if let Some(s) = shard {
        s.finish()?;
    }
    // Who stopped the run, if the collector did, its results file says.
    let table = table?;
    let phases = sweep.phases.len();
    let mut passed = true;
    for (i, row) in table.rows.iter().enumerate() {
        let phase = sweep.phases.get(i).map(|p| p.name.as_str());
        if let (Some(name), Format::Text) = (phase, a.emit.format) {
            println!("== phase {}/{phases}: {name}\n", i + 1);
        }
        emit_with(&Report::Run(&row.runs[0]), &per_phase(&a.emit, phase), &html)?;
        let junit = a.gates.junit.as_deref().map(|j| per(j, phase));
        let suite = format!("barrage run {}", barrage_report::urls_line(&row.runs[0].urls));
        let time = row.runs[0].duration.total_s;
        passed &= gates(&row.slos, a.emit.format, junit.as_deref(), &suite, time, row.runs[0].unredacted)?;
        if i + 1 < table.rows.len() && a.emit.format == Format::Text {
            println!();
        }
    }
    if phases > 0 && a.emit.format == Format::Text {
        println!("\n== phases side by side\n");
        print!("{}", table.to_text());
    }
    if table.rows.is_empty() {
        anyhow::bail!("stopped before the run started: nothing was sent");
    }
    // Each phase is a run the result depends on.
    let (failures, what) = match phases {
        0 => (Report::Run(&table.rows[0].runs[0]).failures(), "run"),
        _ => (table.failures(), "phase"),
    };
    Ok(not_a_result(&failures, table.rows.len(), what).unwrap_or(if passed { Exit::Ok } else { Exit::Failed }))
}

/// `--html run.html` becomes `run.fill.html` in phase `fill`.
fn per_phase(e: &EmitArgs, phase: Option<&str>) -> EmitArgs {
    EmitArgs {
        format: e.format,
        html: e.html.as_deref().map(|p| per(p, phase)),
        xlsx: e.xlsx.as_deref().map(|p| per(p, phase)),
        csv_dir: e.csv_dir.as_deref().map(|p| per(p, phase)),
    }
}

fn per(path: &Path, phase: Option<&str>) -> std::path::PathBuf {
    suffixed(path, &phase.map(String::from).into_iter().collect::<Vec<_>>())
}
