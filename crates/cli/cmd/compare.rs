//! `barrage compare A B [C …]`: runs side by side against the first, with significance,
//! and `--fail-if` bounds for CI.

use crate::args::{CompareArgs, Format};
use crate::Outcome;
use anyhow::{bail, Context};
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_report::compare::{compare as compare_runs, comparison_sheet, comparison_text, Comparison};
use std::path::{Path, PathBuf};

/// Compares the runs and applies the bounds.
pub fn compare(a: CompareArgs) -> anyhow::Result<Outcome> {
    if a.runs.len() < 2 {
        bail!("compare needs at least two runs: a baseline and one to compare with it");
    }
    let runs = a.runs.iter().map(|p| load(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let c = compare_runs(&runs, a.noise);
    match a.format {
        Format::Text => print!("{}", comparison_text(&c)),
        Format::Json => println!("{}", json(&c)),
        Format::Csv => print!("{}", barrage_report::to_csv(&comparison_sheet(&c))),
        Format::HdrLog => bail!("--format hdr-log is for `barrage report`"),
    }
    if let Some(path) = &a.xlsx {
        barrage_report::write_xlsx(path, &[comparison_sheet(&c)])?;
    }
    let mut failed = false;
    for bound in &a.fail_if {
        for (label, change) in bound.crossed(&c) {
            eprintln!("FAIL  {}: {label} changed {change:+.1}%", bound.text());
            failed = true;
        }
    }
    Ok(if failed { Outcome::Failed } else { Outcome::Ok })
}

/// A run: a results file, or a directory whose results files are merged into one.
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
    let label = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    Ok((label, summarize(&files)?))
}

fn json(c: &Comparison) -> String {
    let rows: Vec<serde_json::Value> = c
        .rows
        .iter()
        .map(|r| {
            let changes: Vec<serde_json::Value> = r
                .changes
                .iter()
                .zip(&c.labels[1..])
                .map(|(ch, label)| {
                    serde_json::json!({
                        "run": label, "value": ch.value, "change_percent": ch.percent,
                        "p_value": ch.p_value, "significant": ch.significant,
                    })
                })
                .collect();
            serde_json::json!({ "metric": r.metric.name(), "baseline": r.baseline, "runs": changes })
        })
        .collect();
    serde_json::json!({ "baseline": c.labels[0], "runs": c.labels, "noise": c.noise, "metrics": rows }).to_string()
}
