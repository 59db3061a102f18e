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
    if a.runs.iter().all(|p| p.join("experiment.json").is_file()) {
        return compare_experiments(&a);
    }
    let runs = a.runs.iter().map(|p| load(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let c = compare_runs(&runs, a.noise);
    match a.format {
        Format::Text => print!("{}", comparison_text(&c)),
        Format::Json => println!("{}", json(&c)),
        Format::Csv => print!("{}", barrage_report::to_csv(&comparison_sheet(&c))),
        Format::Html => print!("{}", page(&runs, &c)),
        Format::HdrLog => bail!("--format hdr-log is for `barrage report`"),
    }
    if let Some(path) = &a.html {
        std::fs::write(path, page(&runs, &c)).with_context(|| format!("--html {}", path.display()))?;
    }
    super::export::export(&[comparison_sheet(&c)], a.xlsx.as_deref(), a.csv_dir.as_deref())?;
    Ok(if crossed(&a, &c, "") { Outcome::Failed } else { Outcome::Ok })
}

fn page(runs: &[(String, RunSummary)], c: &Comparison) -> String {
    barrage_report::html(&barrage_report::Page::Compare { runs, table: &comparison_sheet(c) })
}

/// Prints the runs whose change crosses a --fail-if bound; true if any did.
fn crossed(a: &CompareArgs, c: &Comparison, case: &str) -> bool {
    let mut failed = false;
    for bound in &a.fail_if {
        for (label, change) in bound.crossed(c) {
            eprintln!("FAIL  {}: {label}{case} changed {change:+.1}%", bound.text());
            failed = true;
        }
    }
    failed
}

/// Experiment directories (the same experiment before and after a change): case by case.
fn compare_experiments(a: &CompareArgs) -> anyhow::Result<Outcome> {
    if a.html.is_some() || a.format == Format::Html {
        bail!("HTML for experiment directories is each experiment's own report.html; compare them as text, JSON, CSV or --xlsx");
    }
    let resolved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(a.runs[0].join("experiment.json")).context("reading experiment.json")?,
    )?;
    let cases = resolved["cases"].as_array().cloned().unwrap_or_default();
    let mut failed = false;
    let mut sheets = Vec::new();
    let mut json_cases = Vec::new();
    for case in &cases {
        let id = case["id"].as_str().unwrap_or_default();
        let runs = a.runs.iter().map(|dir| case_run(dir, id)).collect::<anyhow::Result<Vec<_>>>()?;
        let c = compare_runs(&runs, a.noise);
        if a.format == Format::Text {
            println!("== {id} {}", case["levels"]);
            println!("{}", comparison_text(&c));
        }
        json_cases.push(
            serde_json::json!({ "case": id, "comparison": serde_json::from_str::<serde_json::Value>(&json(&c))? }),
        );
        let mut sheet = comparison_sheet(&c);
        sheet.name = id.to_string();
        sheets.push(sheet);
        failed |= crossed(a, &c, &format!(" {id}"));
    }
    match a.format {
        Format::Json => println!("{}", serde_json::Value::Array(json_cases)),
        Format::Csv => sheets.iter().for_each(|s| print!("{}", barrage_report::to_csv(s))),
        _ => {}
    }
    super::export::export(&sheets, a.xlsx.as_deref(), a.csv_dir.as_deref())?;
    Ok(if failed { Outcome::Failed } else { Outcome::Ok })
}

/// A case of an experiment directory: its repeats, headline figures averaged, intervals
/// pooled as the samples of the significance test. Labelled by the directory.
fn case_run(dir: &Path, id: &str) -> anyhow::Result<(String, RunSummary)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            name.starts_with(&format!("{id}.r")) && name.ends_with(".brg") && name.matches('.').count() == 2
        })
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("{}: no results of case {id}", dir.display());
    }
    let repeats = files.iter().map(|f| Ok(summarize(std::slice::from_ref(f))?)).collect::<anyhow::Result<Vec<_>>>()?;
    let label = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    Ok((label, pooled(repeats)))
}

/// One summary standing for several sequential repeats.
fn pooled(repeats: Vec<RunSummary>) -> RunSummary {
    let n = repeats.len() as f64;
    let mean = |f: fn(&RunSummary) -> f64| repeats.iter().map(f).sum::<f64>() / n;
    let mut s = repeats[0].clone();
    s.throughput_per_sec = mean(|r| r.throughput_per_sec);
    s.success_ratio = mean(|r| r.success_ratio);
    let l = &mut s.latency.corrected;
    l.mean_us = mean(|r| r.latency.corrected.mean_us);
    l.p50_us = mean(|r| r.latency.corrected.p50_us as f64) as u64;
    l.p90_us = mean(|r| r.latency.corrected.p90_us as f64) as u64;
    l.p99_us = mean(|r| r.latency.corrected.p99_us as f64) as u64;
    l.max_us = repeats.iter().map(|r| r.latency.corrected.max_us).max().unwrap_or(0);
    s.requests.total = repeats.iter().map(|r| r.requests.total).sum();
    s.requests.ok = repeats.iter().map(|r| r.requests.ok).sum();
    s.intervals = repeats.into_iter().flat_map(|r| r.intervals).collect();
    s
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
