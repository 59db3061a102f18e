//! `barrage compare A B [C …]`: runs side by side against the first, with significance,
//! and `--fail-if` bounds for CI; experiment directories case by case.

use super::emit::{emit, not_a_result, outcome, print};
use crate::args::{CompareArgs, Format};
use crate::Outcome;
use anyhow::{bail, Context};
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_report::compare::{
    case_comparisons_sheet, compare as compare_runs, comparisons_table, pool, CaseComparison, Comparison,
};
use barrage_report::Report;
use barrage_study::StudyDir;
use std::path::{Path, PathBuf};

/// Compares the runs and applies the bounds.
pub fn compare(a: CompareArgs) -> anyhow::Result<Outcome> {
    if a.runs.len() < 2 {
        bail!("compare needs at least two runs: a baseline and one to compare with it");
    }
    super::emit::check_outputs(&a.emit, None)?;
    if a.runs.iter().all(|p| StudyDir::is_one(p)) {
        return compare_experiments(&a);
    }
    let runs = a.runs.iter().map(|p| load(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let c = compare_runs(&runs, a.noise);
    let report = Report::Comparison { runs: &runs, comparison: &c };
    emit(&report, &a.emit)?;
    // A run built on failure makes the comparison meaningless, whatever the bounds say.
    let passed = !crossed(&a, &c, "");
    Ok(outcome(&report, runs.len(), "compared run", passed))
}

/// Prints the runs whose change crosses a --fail-if bound, and how that was decided; true
/// if any did.
fn crossed(a: &CompareArgs, c: &Comparison, case: &str) -> bool {
    let mut failed = false;
    for bound in &a.fail_if {
        for (label, change) in bound.crossed(c) {
            eprintln!("{}", bound.failure(&format!("{label}{case}"), change));
            failed = true;
        }
    }
    failed
}

/// Experiment directories (the same experiment before and after a change): case by case,
/// as one table, a row per case (and phase) and directory against the first.
fn compare_experiments(a: &CompareArgs) -> anyhow::Result<Outcome> {
    if a.emit.html.is_some() || a.emit.format == Format::Html {
        bail!("HTML for experiment directories is each experiment's own report.html; compare them as text, JSON, CSV or --xlsx");
    }
    let dirs = a.runs.iter().map(|p| StudyDir::open(p)).collect::<Result<Vec<_>, _>>()?;
    let mut failed = false;
    let (mut pairs, mut json_cases) = (Vec::new(), Vec::new());
    let (mut failures, mut compared) = (Vec::new(), 0);
    for case in &dirs[0].manifest.cases {
        for phase in dirs[0].phases(&case.id) {
            let runs =
                dirs.iter().map(|d| case_run(d, &case.id, phase.as_deref())).collect::<anyhow::Result<Vec<_>>>()?;
            let c = compare_runs(&runs, a.noise);
            let report = Report::Comparison { runs: &runs, comparison: &c };
            let name = match &phase {
                Some(p) => format!("{}.{p}", case.id),
                None => case.id.clone(),
            };
            json_cases.push(serde_json::json!({ "case": case.id, "phase": phase, "comparison": barrage_report::reports::comparison_json(&c) }));
            failures.extend(report.failures().into_iter().map(|line| format!("{name} of {line}")));
            compared += runs.len();
            failed |= crossed(a, &c, &format!(" {}", case.id));
            let levels: Vec<String> = case.levels.iter().map(|(f, l)| format!("{f}={l}")).collect();
            pairs.extend(runs[1..].iter().map(|run| CaseComparison {
                factor: "directory".into(),
                from: runs[0].0.clone(),
                to: run.0.clone(),
                others: levels.join(", "),
                from_case: case.id.clone(),
                to_case: case.id.clone(),
                phase: phase.clone(),
                comparison: compare_runs(&[runs[0].clone(), run.clone()], a.noise),
            }));
        }
    }
    let sheet = case_comparisons_sheet(&pairs);
    match a.emit.format {
        Format::Text => {
            let title = format!(
                "Comparison against {} (the baseline), case by case (% change; * significant, as `barrage compare` tests)",
                label(&dirs[0].path)
            );
            print(&comparisons_table(&title, &pairs.iter().collect::<Vec<_>>()))?
        }
        Format::Json => print(&serde_json::Value::Array(json_cases).to_string())?,
        Format::Csv => print(&barrage_report::to_csv(&sheet))?,
        _ => {}
    }
    // A comparison's tables hold figures and file names, never request data.
    super::emit::sheets(&[sheet], &a.emit, false)?;
    Ok(not_a_result(&failures, compared, "compared run").unwrap_or(if failed { Outcome::Failed } else { Outcome::Ok }))
}

/// A case of an experiment directory: its repeats pooled, labelled by the directory.
fn case_run(dir: &StudyDir, id: &str, phase: Option<&str>) -> anyhow::Result<(String, RunSummary)> {
    let files = dir.measured(id, phase);
    if files.is_empty() {
        bail!("{}: no results of case {id}", dir.path.display());
    }
    let repeats = files.iter().map(|f| Ok(summarize(std::slice::from_ref(f))?)).collect::<anyhow::Result<Vec<_>>>()?;
    Ok((label(&dir.path), pool(repeats)))
}

/// A run: a results file, or a directory whose results files (one run from several
/// machines) are merged into one.
fn load(path: &Path) -> anyhow::Result<(String, RunSummary)> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut f: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| path.display().to_string())?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "brg"))
            .collect();
        f.sort();
        if f.is_empty() {
            bail!("{}: no results files (*.brg) in this directory", path.display());
        }
        f
    } else {
        vec![path.to_path_buf()]
    };
    Ok((label(path), summarize(&files)?))
}

fn label(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
