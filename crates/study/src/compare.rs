//! What `barrage compare` compares, read from disk: a run (a results file, or a directory of
//! them merged into one run from several machines) and experiment directories, case by case.
//! The comparison itself is barrage-report's; this is where its runs come from.

use crate::{StudyDir, StudyError};
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_report::compare::{compare_judged, pool, CaseComparison, Comparison, Unfit};
use std::path::{Path, PathBuf};

/// Experiment directories compared case by case against the first.
#[derive(Debug, Default)]
pub struct Cases {
    /// A row per case (and phase) and directory against the first.
    pub pairs: Vec<CaseComparison>,
    /// Each case's comparison as JSON: `{"case", "phase", "comparison"}`.
    pub json: Vec<serde_json::Value>,
    /// The compared runs built on failure, as `CASE of LABEL: REASON` lines.
    pub failures: Vec<String>,
    /// How many runs were compared.
    pub compared: usize,
    /// Whether `crossed` said a bound was crossed in any case.
    pub crossed: bool,
}

/// Compares `dirs` case by case (each case's repeats pooled) with `noise` as the smallest
/// significant change; `crossed` is asked of each case's comparison (with ` CASE` to name
/// it) whether it crosses a bound.
pub fn cases(
    dirs: &[StudyDir],
    noise: f64,
    crossed: &mut dyn FnMut(&Comparison, &str) -> bool,
) -> Result<Cases, StudyError> {
    let mut out = Cases::default();
    for case in &dirs[0].manifest.cases {
        for phase in dirs[0].phases(&case.id) {
            let judged = dirs.iter().map(|d| case_run(d, &case.id, phase.as_deref())).collect::<Result<Vec<_>, _>>()?;
            let (runs, unfit): (Vec<_>, Vec<_>) = judged.into_iter().unzip();
            let c = compare_judged(&runs, noise, &unfit);
            let name = match &phase {
                Some(p) => format!("{}.{p}", case.id),
                None => case.id.clone(),
            };
            out.json.push(serde_json::json!({ "case": case.id, "phase": phase, "comparison": barrage_report::reports::comparison_json(&c) }));
            // Each directory's case as its own matrix judged it: built on failure, or on
            // another workload than it asked for.
            for ((label, _), u) in runs.iter().zip(&unfit) {
                out.failures.extend(u.why().map(|why| format!("{name} of {label}: {why}")));
            }
            out.compared += runs.len();
            out.crossed |= crossed(&c, &format!(" {}", case.id));
            let levels: Vec<String> = case.levels.iter().map(|(f, l)| format!("{f}={l}")).collect();
            out.pairs.extend(runs.iter().enumerate().skip(1).map(|(i, run)| CaseComparison {
                factor: "directory".into(),
                from: runs[0].0.clone(),
                to: run.0.clone(),
                others: levels.join(", "),
                from_case: case.id.clone(),
                to_case: case.id.clone(),
                phase: phase.clone(),
                comparison: compare_judged(
                    &[runs[0].clone(), run.clone()],
                    noise,
                    &[unfit[0].clone(), unfit[i].clone()],
                ),
            }));
        }
    }
    Ok(out)
}

/// A case of an experiment directory: its repeats pooled, labelled by the directory, and
/// what its matrix row says of them (judged repeat by repeat, with its background).
fn case_run(dir: &StudyDir, id: &str, phase: Option<&str>) -> Result<((String, RunSummary), Unfit), StudyError> {
    let files = dir.measured(id, phase);
    if files.is_empty() {
        return Err(StudyError::Dir(format!("{}: no results of case {id}", dir.path.display())));
    }
    let repeats = crate::dir::summaries(&files)?;
    let unfit = Unfit::of(&repeats, &crate::dir::summaries(&dir.background(id, phase))?);
    Ok(((label(&dir.path), pool(repeats)), unfit))
}

/// A run: a results file, or a directory whose results files (one run from several
/// machines) are merged into one; labelled by its name.
pub fn load(path: &Path) -> Result<(String, RunSummary), StudyError> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut f: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| StudyError::Io(path.to_path_buf(), e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "brg"))
            .collect();
        f.sort();
        if f.is_empty() {
            return Err(StudyError::Dir(format!("{}: no results files (*.brg) in this directory", path.display())));
        }
        f
    } else {
        vec![path.to_path_buf()]
    };
    Ok((label(path), summarize(&files)?))
}

/// A run's or directory's label: its file name.
pub fn label(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
