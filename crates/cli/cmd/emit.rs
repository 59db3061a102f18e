//! The one way a report leaves barrage: the chosen format on standard output, and
//! `--html`, `--xlsx`, `--csv-dir` beside it; and the one way objectives are checked: SLO
//! lines and `--junit`.

use crate::args::{EmitArgs, Format};
use crate::Outcome;
use anyhow::{bail, Context};
use barrage_report::{Report, SloResult};
use std::io::Write;
use std::path::Path;

/// Prints `report` in `e.format` and writes the files `e` asks for.
pub fn emit(report: &Report, e: &EmitArgs) -> anyhow::Result<()> {
    let text = match e.format {
        Format::Text => report.text(use_color()),
        Format::Json => report.json(),
        Format::Csv => report.csv(),
        Format::Html => report.html(),
        Format::HdrLog => {
            bail!("--format hdr-log is for `barrage report` of results files; on `run` use --hdr-log FILE")
        }
    };
    print(&text)?;
    files(report, e)?;
    warn_partial(report, e.format);
    Ok(())
}

/// Checks, before anything runs, that the files `e` asks for and `--junit` can be written:
/// they are written at the end, after a run of any length.
pub fn check_outputs(e: &EmitArgs, junit: Option<&Path>) -> anyhow::Result<()> {
    for (flag, path) in [("--html", e.html.as_deref()), ("--xlsx", e.xlsx.as_deref()), ("--junit", junit)] {
        if let Some(path) = path {
            check_file(path, flag)?;
        }
    }
    if let Some(dir) = &e.csv_dir {
        check_dir(dir, "--csv-dir")?;
    }
    Ok(())
}

/// A file can be written at `path`: a writable file there, or a directory it can be created
/// in. Nothing is left behind: a new file is tried as a temporary one beside it.
pub fn check_file(path: &Path, flag: &str) -> anyhow::Result<()> {
    let cannot = |why: String| anyhow::anyhow!("{flag} {}: cannot be written: {why}", path.display());
    // Refused now, not after a run: a link planted where others can write.
    barrage_metrics::secrets::follows_link(path).map_err(|e| cannot(e.to_string()))?;
    if path.is_dir() {
        return Err(cannot("it is a directory".into()));
    }
    if path.exists() {
        // Opened for appending, so nothing of it is lost if the run fails later.
        return std::fs::OpenOptions::new().append(true).open(path).map(drop).map_err(|e| cannot(e.to_string()));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(cannot(format!("no directory {}", parent.display())));
    }
    writable_dir(parent).map_err(cannot)
}

/// A directory can be written at `dir`: a writable one there, or one that can be created in
/// its nearest existing parent.
pub fn check_dir(dir: &Path, flag: &str) -> anyhow::Result<()> {
    let cannot = |why: String| anyhow::anyhow!("{flag} {}: cannot be written: {why}", dir.display());
    // Its files would be written through the link, wherever it points.
    barrage_metrics::secrets::follows_link(dir).map_err(|e| cannot(e.to_string()))?;
    let existing = dir.ancestors().find(|a| a.as_os_str().is_empty() || a.exists()).unwrap_or(Path::new("."));
    let existing = if existing.as_os_str().is_empty() { Path::new(".") } else { existing };
    if !existing.is_dir() {
        return Err(cannot(format!("{} is not a directory", existing.display())));
    }
    writable_dir(existing).map_err(cannot)
}

/// Whether a file can be created in `dir`, by creating one (permissions, a read-only file
/// system, quotas and root all answer alike).
fn writable_dir(dir: &Path) -> Result<(), String> {
    tempfile::Builder::new().prefix(".barrage-check-").tempfile_in(dir).map(drop).map_err(|e| {
        // tempfile's error names a random file: say what was tried.
        format!("cannot create a file in {}: {}", dir.display(), e.kind())
    })
}

/// Writes `--html`, `--xlsx` and `--csv-dir`: readable by others as usual, or by their
/// owner alone when the report was not redacted (`--no-redact`).
pub fn files(report: &Report, e: &EmitArgs) -> anyhow::Result<()> {
    let private = report.unredacted();
    if let Some(path) = &e.html {
        write(path, report.html(), private).with_context(|| format!("--html {}", path.display()))?;
    }
    if e.xlsx.is_some() || e.csv_dir.is_some() {
        // Made only when asked for: a million URLs make them cost.
        sheets(&report.sheets(), e, private)?;
    }
    Ok(())
}

/// Writes `--xlsx` and `--csv-dir` of these tables, for their owner alone when `private`.
pub fn sheets(sheets: &[barrage_report::Sheet], e: &EmitArgs, private: bool) -> anyhow::Result<()> {
    if let Some(path) = &e.xlsx {
        barrage_report::write_xlsx(path, sheets, private)?;
    }
    if let Some(dir) = &e.csv_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("--csv-dir {}", dir.display()))?;
        for sheet in sheets {
            let path = dir.join(format!("{}.csv", sheet.name));
            write(&path, barrage_report::to_csv(sheet), private)
                .with_context(|| format!("--csv-dir {}", path.display()))?;
        }
    }
    Ok(())
}

/// Writes a report's file: 0644, or 0600 when `private` ([`barrage_metrics::secrets::create`]).
pub fn write(path: &Path, contents: impl AsRef<[u8]>, private: bool) -> std::io::Result<()> {
    barrage_metrics::secrets::write(path, contents, private)
}

/// A partial table or a failed row is said on stderr too when stdout carries data.
fn warn_partial(report: &Report, format: Format) {
    let Some(table) = report.table().filter(|_| format != Format::Text) else { return };
    for line in table.failures() {
        eprintln!("WARNING: {line}: its figures are not a result");
    }
    if let Some(line) = table.partial_line() {
        eprintln!("{line}");
    }
}

/// Prints the SLO verdicts (on stderr when stdout carries data) and writes `junit` (for its
/// owner alone when `private`: the suite of a run not redacted names its URLs); false when
/// any objective was missed.
pub fn gates(
    results: &[SloResult],
    format: Format,
    junit: Option<&Path>,
    suite: &str,
    time_s: f64,
    private: bool,
) -> anyhow::Result<bool> {
    if results.is_empty() {
        return Ok(true);
    }
    let lines = barrage_report::slo_lines(results);
    if format == Format::Text {
        print(&format!("\n{lines}"))?;
    } else {
        eprint!("{lines}");
    }
    if let Some(path) = junit {
        write(path, barrage_report::junit(suite, results, time_s), private)
            .with_context(|| format!("--junit {}", path.display()))?;
    }
    Ok(results.iter().all(|r| r.pass))
}

/// What a command's report says for its exit code: built on failure when any of its runs
/// or rows is (`report.failures()`; `of` of them, each a `what`), else whether every
/// objective `passed`.
pub fn outcome(report: &Report, of: usize, what: &str, passed: bool) -> Outcome {
    not_a_result(&report.failures(), of, what).unwrap_or(if passed { Outcome::Ok } else { Outcome::Failed })
}

/// [`Outcome::NotAResult`] for these failures (`label: reason` lines, or a lone run's
/// reason), in one line; `None` without any.
pub fn not_a_result(failures: &[String], of: usize, what: &str) -> Option<Outcome> {
    let (first, rest) = failures.split_first()?;
    let head = if of <= 1 {
        format!("the {what} is not a result")
    } else {
        format!("{} of {of} {what}s are not a result", failures.len())
    };
    let more = if rest.is_empty() { String::new() } else { format!("; and {} more", rest.len()) };
    Some(Outcome::NotAResult(format!("{head}: {first}{more}")))
}

/// Writes to stdout, ending with a newline.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    Ok(out.flush()?)
}

/// Colour only on a terminal, and never when NO_COLOR is set.
fn use_color() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
}
