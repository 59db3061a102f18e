//! `barrage compare A B [C …]`: runs side by side against the first, with significance,
//! and `--fail-if` bounds for CI; experiment directories case by case.

use super::emit::{emit, exit, not_a_result, print};
use crate::args::{CompareArgs, Format};
use crate::Exit;
use anyhow::bail;
use barrage_report::compare::{case_comparisons_sheet, compare as compare_runs, comparisons_table, Comparison};
use barrage_report::Report;
use barrage_study::compare::{label, load};
use barrage_study::StudyDir;

/// Compares the runs and applies the bounds.
pub fn compare(a: CompareArgs) -> anyhow::Result<Exit> {
    if a.runs.len() < 2 {
        bail!("compare needs at least two runs: a baseline and one to compare with it");
    }
    a.emit.files().check(None)?;
    if a.runs.iter().all(|p| StudyDir::is_one(p)) {
        return compare_experiments(&a);
    }
    let runs = a.runs.iter().map(|p| load(p)).collect::<Result<Vec<_>, _>>()?;
    let c = compare_runs(&runs, a.noise);
    let report = Report::Comparison { runs: &runs, comparison: &c };
    emit(&report, &a.emit)?;
    // A run built on failure makes the comparison meaningless, whatever the bounds say.
    let passed = !crossed(&a, &c, "");
    Ok(exit(&report, runs.len(), "compared run", passed))
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
fn compare_experiments(a: &CompareArgs) -> anyhow::Result<Exit> {
    if a.emit.html.is_some() || a.emit.format == Format::Html {
        bail!("HTML for experiment directories is each experiment's own report.html; compare them as text, JSON, CSV or --xlsx");
    }
    let dirs = a.runs.iter().map(|p| StudyDir::open(p)).collect::<Result<Vec<_>, _>>()?;
    let cases = barrage_study::compare::cases(&dirs, a.noise, &mut |c, case| crossed(a, c, case))?;
    let sheet = case_comparisons_sheet(&cases.pairs);
    match a.emit.format {
        Format::Text => {
            let title = format!(
                "Comparison against {} (the baseline), case by case (% change; * significant, as `barrage compare` tests)",
                label(&dirs[0].path)
            );
            print(&comparisons_table(&title, &cases.pairs.iter().collect::<Vec<_>>()))?
        }
        Format::Json => print(&serde_json::Value::Array(cases.json).to_string())?,
        Format::Csv => print(&barrage_report::to_csv(&sheet))?,
        _ => {}
    }
    // A comparison's tables hold figures and file names, never request data.
    a.emit.files().write_sheets(&[sheet], false)?;
    let passed = if cases.crossed { Exit::Failed } else { Exit::Ok };
    Ok(not_a_result(&cases.failures, cases.compared, "compared run").unwrap_or(passed))
}
