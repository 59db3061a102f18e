//! `barrage experiment FILE`: a case's settings are `run` flags, read with `run`'s parser;
//! barrage-study runs the cases into their directory and tabulates them.

use super::emit::{emit, files, gates};
use super::live::Views;
use crate::args::{EmitArgs, ExperimentArgs, Format, RunArgs};
use crate::Outcome;
use anyhow::{bail, Context};
use barrage_engine::CancellationToken;
use barrage_plan::experiment::{Case, Experiment, Order};
use barrage_report::{ExperimentReport, Report, Slo};
use barrage_study::dir::{Manifest, ManifestCase};
use barrage_study::experiment::{
    fill, levels_text, servers_of, Bed, Built, CaseSpec, Environment, Experiment as Study,
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

/// A case: what runs, as flags with `{SERVER}` placeholders.
struct Prepared {
    spec: CaseSpec,
    flags: Vec<String>,
    background: Option<Vec<String>>,
}

/// Checks every case, then lists them (`--dry-run`) or runs them.
pub fn experiment(a: ExperimentArgs, stop: CancellationToken) -> anyhow::Result<Outcome> {
    let e = Experiment::read(&a.file)?;
    let prepared = e.cases().into_iter().map(|c| prepare(&e, &a.file, c)).collect::<anyhow::Result<Vec<_>>>()?;
    if prepared.is_empty() {
        bail!("{}: every combination is excluded: no case to run", a.file.display());
    }
    if a.dry_run {
        print!("{}", dry_run(&e, &prepared));
        return Ok(Outcome::Ok);
    }
    // cache-study.toml → cache-study.results
    let path = a.output.clone().unwrap_or_else(|| a.file.with_extension("results"));
    let dir = StudyDir::create(&path, manifest(&e, &prepared), a.resume)?;
    let mut slos: Vec<Slo> =
        e.slo.iter().map(|s| s.parse()).collect::<Result<_, String>>().map_err(anyhow::Error::msg)?;
    slos.extend(a.slo.iter().cloned());
    let specs: Vec<CaseSpec> = prepared.iter().map(|p| p.spec.clone()).collect();
    let study = Study {
        name: e.name.clone(),
        dir: &dir,
        cases: &specs,
        factors: e
            .factors
            .iter()
            .map(|f| (f.name.clone(), f.levels.iter().map(|l| l.name.clone()).collect()))
            .collect(),
        compare: e.compare.clone(),
        repeats: e.repeats,
        shuffle: (e.order == Order::Random).then_some(e.seed),
        warmup: e.warmup.as_deref().map(duration).transpose()?,
        pause: e.pause.as_deref().map(duration).transpose()?,
        barrage: std::env::current_exe().context("finding the barrage binary to run testbed origins")?,
        slos,
        noise: a.noise,
    };
    let build = |c: usize, bed: &Bed| build(&prepared[c], bed);
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
    // The tables and the page go beside the results, whatever the flags say.
    std::fs::write(path.join("summary.txt"), report.text(false))?;
    let beside = EmitArgs {
        format: Format::Text,
        html: Some(path.join("report.html")),
        xlsx: None,
        csv_dir: Some(path.clone()),
    };
    files(&report, &beside)?;
    emit(&report, &a.emit)?;
    let suite = format!("barrage experiment {}", e.name);
    let passed = gates(&report.slo_results(), a.emit.format, a.junit.as_deref(), &suite, report.duration_s())?;
    Ok(if passed { Outcome::Ok } else { Outcome::Failed })
}

/// The case's settings as `run` flags, parsed and checked like `run`'s own.
fn prepare(e: &Experiment, file: &Path, case: Case) -> anyhow::Result<Prepared> {
    let lines: Vec<String> = case.lines.iter().map(|l| l.to_string()).collect();
    let at = |what: &str| {
        let levels = case.levels.iter().map(|(f, l)| format!("{f}={l}")).collect::<Vec<_>>().join(", ");
        anyhow::anyhow!("{}: case {} ({levels}; levels on lines {}): {what}", file.display(), case.id, lines.join(", "))
    };
    let c = e.case_flags(&case).map_err(|m| at(&m))?;
    let testbed = match c.testbed {
        Some((name, tls)) => Some(Environment { topology: name.parse().map_err(|m: String| at(&m))?, tls }),
        None => None,
    };
    // Checked now with stand-in addresses for the testbed's servers, which start later.
    let stand_in = Bed {
        servers: match testbed {
            Some(env) => {
                servers_of(&barrage_testbed::plan(&env.options(Path::new("barrage")), Path::new("/nonexistent"))?)
            }
            None => Vec::new(),
        },
        ..Default::default()
    };
    let spec = CaseSpec { id: case.id.clone(), levels: case.levels.clone(), testbed, phases: c.phases };
    let (flags, background) = (c.flags, c.background);
    let p = Prepared { spec, flags, background };
    build(&p, &stand_in).map_err(|m| at(&m))?;
    Ok(p)
}

/// The case's runs against its testbed: the flags filled with the servers' URLs.
fn build(p: &Prepared, bed: &Bed) -> Result<Built, String> {
    let job = |flags: &[String], what: &str| -> Result<barrage_study::Job, String> {
        let args = std::iter::once("run".to_string()).chain(fill(flags, &bed.servers));
        let mut run = RunOnly::try_parse_from(args).map(|r| r.run).map_err(|e| {
            let text = e.render().to_string();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid settings").to_string();
            format!("{what}{}", first.trim_start_matches("error: "))
        })?;
        // A testbed's servers are watched by themselves, and its CA is trusted.
        run.watch.testbed = run.watch.testbed.or(bed.dir.clone());
        if run.conn.cacert.is_none() && !run.conn.insecure {
            run.conn.cacert = bed.ca.clone();
        }
        super::plan::job(&run).map_err(|e| format!("{what}{e:#}"))
    };
    let main = job(&p.flags, "")?;
    let background = p.background.as_deref().map(|f| job(f, "background: ")).transpose()?;
    Ok(Built { main, background })
}

fn manifest(e: &Experiment, prepared: &[Prepared]) -> Manifest {
    let cases = prepared
        .iter()
        .map(|p| ManifestCase {
            id: p.spec.id.clone(),
            levels: p.spec.levels.iter().cloned().collect(),
            run: p.flags.clone(),
            background: p.background.clone(),
            testbed: p.spec.testbed.map(Environment::name),
            phases: p.spec.phases.clone(),
        })
        .collect();
    let order = if e.order == Order::Random { "random" } else { "sequential" };
    Manifest {
        name: e.name.clone(),
        repeats: e.repeats,
        warmup: e.warmup.clone(),
        pause: e.pause.clone(),
        order: order.into(),
        seed: e.seed,
        compare: e.compare.clone(),
        slo: e.slo.clone(),
        cases,
        ..Default::default()
    }
}

fn dry_run(e: &Experiment, prepared: &[Prepared]) -> String {
    let order = if e.order == Order::Random { "random" } else { "sequential" };
    let mut out = format!("{}: {} case(s) × {} repeat(s), {order} order\n", e.name, prepared.len(), e.repeats);
    for p in prepared {
        out.push_str(&format!("{}  {}\n    run {}\n", p.spec.id, levels_text(&p.spec), shell_words(&p.flags)));
        if let Some(env) = p.spec.testbed {
            let tls = if env.tls { " with HTTPS" } else { "" };
            out.push_str(&format!("    against a testbed: {}{tls}\n", env.topology.name()));
        }
        if !p.spec.phases.is_empty() {
            out.push_str(&format!("    phases {}\n", p.spec.phases.join(", ")));
        }
        if let Some(flags) = &p.background {
            out.push_str(&format!("    background {}\n", shell_words(flags)));
        }
    }
    out
}

fn shell_words(flags: &[String]) -> String {
    let quote = |f: &String| {
        if f.contains([' ', '\'', '"', '{', '}', '&', ';']) {
            format!("'{}'", f.replace('\'', "'\\''"))
        } else {
            f.clone()
        }
    };
    flags.iter().map(quote).collect::<Vec<_>>().join(" ")
}

fn duration(s: &str) -> anyhow::Result<std::time::Duration> {
    barrage_metrics::units::parse_duration(s).map_err(|e| anyhow::anyhow!("'{s}': {e}"))
}
