//! `barrage experiment FILE`: a case's settings are `run` flags, read with `run`'s parser;
//! barrage-study runs the cases into their directory and tabulates them.

use super::emit::{emit, exit, gates};
use crate::args::{ExperimentArgs, Format, RunArgs};
use crate::Exit;
use anyhow::{bail, Context};
use barrage_engine::CancellationToken;
use barrage_metrics::secrets::Redaction;
use barrage_plan::experiment::{Case, Experiment};
use barrage_report::output::Files;
use barrage_report::Report;
use barrage_study::cases::Settings;
use barrage_study::control::Control;
use barrage_study::experiment::{
    fill, listing, manifest, servers_of, Bed, Built, CaseSpec, Environment, Experiment as Study,
};
use barrage_study::views::Views;
use barrage_study::{Runner, StudyDir};
use clap::Parser;
use std::path::Path;

/// `run`'s flags alone, to read a case's settings with the same parser and checks.
#[derive(Parser)]
#[command(name = "run")]
struct RunOnly {
    #[command(flatten)]
    run: RunArgs,
}

/// Checks every case, then lists them (`--dry-run`) or runs them.
pub fn experiment(a: ExperimentArgs, stop: CancellationToken) -> anyhow::Result<Exit> {
    let e = Experiment::read(&a.file)?;
    let mut cases = e.cases().into_iter().map(|c| prepare(&e, &a.file, c)).collect::<anyhow::Result<Vec<_>>>()?;
    if a.show_secrets {
        // Shown as written: the manifest then says it is unredacted, and is private.
        cases.iter_mut().for_each(|c| c.redaction = Redaction::off());
    }
    if cases.is_empty() {
        bail!("{}: every combination is excluded: no case to run", a.file.display());
    }
    // Everything that can be checked is, before the listing: a dry run that passes runs.
    let mut settings = Settings::of(&e, &a.file).map_err(anyhow::Error::msg)?;
    // The file's objectives (`slo = [...]`), then those of `--slo`.
    settings.slos.extend(a.slo.iter().cloned());
    // cache-study.toml → cache-study.results
    let path = a.output.clone().unwrap_or_else(|| a.file.with_extension("results"));
    barrage_report::output::check_dir(&path, "-o")?;
    a.emit.files().check(a.junit.as_deref())?;
    let barrage = std::env::current_exe().context("finding the barrage binary to run testbed origins")?;
    if a.dry_run {
        return dry_run(&e, &cases, &a, StudyDir { path, manifest: manifest(&e, &cases) }, settings, barrage);
    }
    let dir = StudyDir::create(&path, manifest(&e, &cases), a.resume)?;
    let study = Study::new(&e, &dir, &cases, settings, barrage, a.noise);
    let mut otlp = super::otel::Otlp::start(&a.otel)?;
    let feed = otlp.as_ref().map(super::otel::Otlp::feed);
    let build = |c: usize, bed: &Bed| {
        let mut job = build(&cases[c], bed)?;
        if let Some(feed) = &feed {
            feed.apply(&mut job.main);
        }
        Ok(job)
    };
    let mut views = Views::start(&a.live.options(), &stop, true)?;
    let results = study.run(
        &build,
        &mut Runner::new("experiment", stop, &mut super::otel::Exported { views: &mut views, otlp: otlp.as_mut() })
            .with_history(super::history::keeper(&a.keep))
            .with_control(Control::of(a.keep.control.as_ref(), cases.iter().any(|c| c.testbed.is_some()))),
    );
    views.finish();
    if let Some(o) = otlp {
        o.finish();
    }
    let results = results?;
    let report = barrage_study::cases::report(&e, results);
    let report = Report::Experiment(&report);
    keep_beside(&report, &path)?;
    emit(&report, &a.emit)?;
    let suite = format!("barrage experiment {}", e.name);
    let passed = gates(
        &report.slo_results(),
        a.emit.format,
        a.junit.as_deref(),
        &suite,
        report.duration_s(),
        report.unredacted(),
    )?;
    let rows = report.table().map_or(0, |t| t.rows.len());
    // With phases a case has a row each: counted as rows, not as cases (found trying seed
    // 000's study: "1 of 4 cases" of an experiment of 3).
    let what = if rows == cases.len() { "case" } else { "matrix row" };
    Ok(exit(&report, rows, what, passed))
}

/// `--dry-run`: the cases and their flags, or with `--format json` every run in order as an
/// engine of many machines runs them (`deploy/`), with where its results go in `dir`
/// (which is not made).
fn dry_run(
    e: &Experiment,
    cases: &[CaseSpec],
    a: &ExperimentArgs,
    dir: StudyDir,
    settings: Settings,
    barrage: std::path::PathBuf,
) -> anyhow::Result<Exit> {
    match a.emit.format {
        Format::Text => print!("{}", listing(e, cases)),
        Format::Json => {
            let study = Study::new(e, &dir, cases, settings, barrage, a.noise);
            println!("{:#}", study.plan_json(!a.show_secrets));
        }
        other => bail!("--dry-run lists the plan as text or json, not {}", format!("{other:?}").to_lowercase()),
    }
    Ok(Exit::Ok)
}

/// The tables and the page go beside the results in `dir`, whatever the flags say.
fn keep_beside(report: &Report, dir: &Path) -> anyhow::Result<()> {
    barrage_metrics::secrets::write(&dir.join("summary.txt"), report.text(false), report.unredacted())?;
    let beside = Files { html: Some(dir.join("report.html")), xlsx: None, csv_dir: Some(dir.to_path_buf()) };
    Ok(beside.write(report, &barrage_report::HtmlOptions::default())?)
}

/// The case's settings as `run` flags, parsed and checked like `run`'s own.
fn prepare(e: &Experiment, file: &Path, case: Case) -> anyhow::Result<CaseSpec> {
    let lines: Vec<String> = case.lines.iter().map(|l| l.to_string()).collect();
    let at = |what: &str| {
        let levels = case.levels.iter().map(|(f, l)| format!("{f}={l}")).collect::<Vec<_>>().join(", ");
        // A setting is a key of the file: named as such, not as the flag it becomes.
        let what = match what.strip_prefix("unexpected argument '--").and_then(|w| w.split_once('\'')) {
            Some((key, _)) => format!("unknown setting '{key}' (no run flag --{key})"),
            None => what.to_string(),
        };
        // Without levels (a study of one case), the case is [base]'s alone.
        let place = match levels.is_empty() {
            true => String::new(),
            false => format!(" ({levels}; levels on lines {})", lines.join(", ")),
        };
        anyhow::anyhow!("{}: case {}{place}: {what}", file.display(), case.id)
    };
    let c = e.case_flags(&case).map_err(|m| at(&m))?;
    let purge = c.testbed.as_ref().is_some_and(|t| t.purge);
    let testbed = c.testbed.as_ref().map(Environment::from_setting).transpose().map_err(|m| at(&m))?;
    // Checked now with stand-in addresses for the testbed's servers, which start later.
    let specs = barrage_study::cases::planned(testbed.as_ref())?;
    barrage_study::cases::check_purge(testbed.as_ref(), &specs, purge).map_err(|m| at(&m))?;
    let stand_in = Bed { servers: servers_of(&specs), ..Default::default() };
    let mut spec = CaseSpec {
        id: case.id.clone(),
        levels: case.levels.clone(),
        testbed,
        purge,
        phases: c.phases,
        flags: c.flags,
        background: c.background,
        redaction: Default::default(),
    };
    // The case's flags are shown (listing, manifest) as its own runs redact.
    spec.redaction = build(&spec, &stand_in).map_err(|m| at(&m))?.main.redaction;
    Ok(spec)
}

/// The case's runs against its testbed: the flags filled with the servers' URLs.
fn build(p: &CaseSpec, bed: &Bed) -> Result<Built, String> {
    let job = |flags: &[String], what: &str| -> Result<barrage_study::RunOrder, String> {
        let args =
            std::iter::once("run".to_string()).chain(fill(flags, &bed.servers).map_err(|m| format!("{what}{m}"))?);
        let mut run = RunOnly::try_parse_from(args)
            .map(|r| r.run)
            .map_err(|e| format!("{what}{}", crate::message::clap_error(&e)))?;
        // A testbed's servers are watched by themselves, and its CA is trusted.
        run.watch.testbed = run.watch.testbed.or(bed.dir.clone());
        if run.conn.cacert.is_none() && !run.conn.insecure {
            run.conn.cacert = bed.ca.clone();
        }
        super::plan::one_machine(&run, "an experiment").map_err(|e| format!("{what}{e:#}"))?;
        if let Some(flag) = run.otel.given() {
            return Err(format!(
                "{what}--{flag} is the whole experiment's: give it to `barrage experiment`, not to a case"
            ));
        }
        // The case's phases, checked as `run --phases` checks them (a scenario has none).
        run.request.phases = p.phases.clone();
        super::plan::phases(&run).map_err(|e| format!("{what}{e:#}"))?;
        super::plan::job(&run).map_err(|e| format!("{what}{e:#}"))
    };
    let main = job(&p.flags, "")?;
    let background = p.background.as_deref().map(|f| job(f, "background: ")).transpose()?;
    Ok(Built { main, background })
}
