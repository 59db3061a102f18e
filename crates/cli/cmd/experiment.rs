//! `barrage experiment FILE`: a case's settings are `run` flags, read with `run`'s parser;
//! barrage-study runs the cases into their directory and tabulates them.

use super::emit::{emit, files, gates, outcome};
use super::live::Views;
use crate::args::{EmitArgs, ExperimentArgs, Format, RunArgs};
use crate::Outcome;
use anyhow::{bail, Context};
use barrage_engine::CancellationToken;
use barrage_metrics::secrets::Redaction;
use barrage_plan::experiment::{Case, Experiment, Order};
use barrage_report::{ExperimentReport, Report, Slo};
use barrage_study::experiment::{
    fill, listing, manifest, servers_of, Bed, Built, CaseSpec, Environment, Experiment as Study,
};
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
pub fn experiment(a: ExperimentArgs, stop: CancellationToken) -> anyhow::Result<Outcome> {
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
    let slos = slos(&e, &a)?;
    let warmup = e.warmup.as_deref().map(|w| duration(w, "warmup", &a.file)).transpose()?;
    let pause = e.pause.as_deref().map(|p| duration(p, "pause", &a.file)).transpose()?;
    // cache-study.toml → cache-study.results
    let path = a.output.clone().unwrap_or_else(|| a.file.with_extension("results"));
    super::emit::check_dir(&path, "-o")?;
    super::emit::check_outputs(&a.emit, a.junit.as_deref())?;
    if a.dry_run {
        print!("{}", listing(&e, &cases));
        return Ok(Outcome::Ok);
    }
    let dir = StudyDir::create(&path, manifest(&e, &cases), a.resume)?;
    let study = Study {
        name: e.name.clone(),
        dir: &dir,
        cases: &cases,
        factors: e
            .factors
            .iter()
            .map(|f| (f.name.clone(), f.levels.iter().map(|l| l.name.clone()).collect()))
            .collect(),
        compare: e.compare.clone(),
        repeats: e.repeats,
        shuffle: (e.order == Order::Random).then_some(e.seed),
        warmup,
        pause,
        barrage: std::env::current_exe().context("finding the barrage binary to run testbed origins")?,
        slos,
        noise: a.noise,
    };
    let build = |c: usize, bed: &Bed| build(&cases[c], bed);
    let mut views = Views::start(&a.live, &stop, true)?;
    let results = study.run(&build, &mut Runner::new("experiment", stop, &mut views));
    views.finish();
    let results = results?;
    let report = ExperimentReport {
        name: e.name.clone(),
        repeats: e.repeats,
        compare: e.compare.clone(),
        table: results.table,
        comparisons: results.comparisons,
    };
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
    Ok(outcome(&report, rows, "case", passed))
}

/// The file's objectives (`slo = [...]`), then those of `--slo`.
fn slos(e: &Experiment, a: &ExperimentArgs) -> anyhow::Result<Vec<Slo>> {
    let mut slos: Vec<Slo> = e
        .slo
        .iter()
        .map(|s| s.parse().map_err(|m: String| anyhow::anyhow!("{}: slo = [{s:?}]: {m}", a.file.display())))
        .collect::<anyhow::Result<_>>()?;
    slos.extend(a.slo.iter().cloned());
    Ok(slos)
}

/// The tables and the page go beside the results in `dir`, whatever the flags say.
fn keep_beside(report: &Report, dir: &Path) -> anyhow::Result<()> {
    super::emit::write(&dir.join("summary.txt"), report.text(false), report.unredacted())?;
    let beside = EmitArgs {
        format: Format::Text,
        html: Some(dir.join("report.html")),
        xlsx: None,
        csv_dir: Some(dir.to_path_buf()),
    };
    files(report, &beside)
}

/// The case's settings as `run` flags, parsed and checked like `run`'s own.
fn prepare(e: &Experiment, file: &Path, case: Case) -> anyhow::Result<CaseSpec> {
    let lines: Vec<String> = case.lines.iter().map(|l| l.to_string()).collect();
    let at = |what: &str| {
        let levels = case.levels.iter().map(|(f, l)| format!("{f}={l}")).collect::<Vec<_>>().join(", ");
        anyhow::anyhow!("{}: case {} ({levels}; levels on lines {}): {what}", file.display(), case.id, lines.join(", "))
    };
    let c = e.case_flags(&case).map_err(|m| at(&m))?;
    let purge = c.testbed.as_ref().is_some_and(|t| t.purge);
    let testbed = match c.testbed {
        Some(t) => {
            let env = Environment {
                topology: t.topology.parse().map_err(|m: String| {
                    at(&format!(
                        "testbed = {:?}: {m} (a case's testbed is a topology the experiment brings up, not the directory of run's --testbed)",
                        t.topology
                    ))
                })?,
                tls: t.tls,
                backends: t.backends,
                balance: match &t.balance {
                    Some(b) => b.parse().map_err(|m: String| at(&format!("testbed-balance = {b:?}: {m}")))?,
                    None => barrage_testbed::Balance::RoundRobin,
                },
                weights: t.weights,
                shapes: t.shapes,
                memory: t.memory,
                eviction: match &t.eviction {
                    Some(e) => Some(e.parse().map_err(|m: String| at(&format!("testbed-eviction = {e:?}: {m}")))?),
                    None => None,
                },
            };
            // Weights for the number of origins, shapes that parse and name origins it has.
            env.options(Path::new("barrage")).check().map_err(|e| {
                let e = e.to_string().replace("--weights", "testbed-weights").replace("--shape", "testbed-shape");
                at(&e.replace("--backends", "testbed-backends"))
            })?;
            Some(env)
        }
        None => None,
    };
    // Checked now with stand-in addresses for the testbed's servers, which start later.
    let specs = match &testbed {
        Some(env) => barrage_testbed::plan(&env.options(Path::new("barrage")), Path::new("/nonexistent"))?,
        None => Vec::new(),
    };
    if purge && !specs.iter().any(|s| s.kind.is_cache()) {
        let topology = testbed.as_ref().map_or("", |env| env.topology.name());
        return Err(at(&format!(
            "testbed-purge = true: the {topology} testbed has no cache to purge (varnish, squid, nginx-cache, all, redis and memcached have)"
        )));
    }
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
        // The case's phases, checked as `run --phases` checks them (a scenario has none).
        run.request.phases = p.phases.clone();
        super::plan::phases(&run).map_err(|e| format!("{what}{e:#}"))?;
        super::plan::job(&run).map_err(|e| format!("{what}{e:#}"))
    };
    let main = job(&p.flags, "")?;
    let background = p.background.as_deref().map(|f| job(f, "background: ")).transpose()?;
    Ok(Built { main, background })
}

/// The file's `key = "s"` as a duration.
fn duration(s: &str, key: &str, file: &Path) -> anyhow::Result<std::time::Duration> {
    barrage_metrics::units::parse_duration(s).map_err(|e| anyhow::anyhow!("{}: {key} = {s:?}: {e}", file.display()))
}
