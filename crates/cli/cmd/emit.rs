//! The one way a report leaves barrage: the chosen format on standard output, and
//! `--html`, `--xlsx`, `--csv-dir` beside it; and the one way objectives are checked: SLO
//! lines and `--junit`.

use crate::args::{EmitArgs, Format};
use crate::Exit;
use anyhow::bail;
use barrage_report::{HtmlOptions, Report, SloResult};
use std::io::Write;
use std::path::Path;

/// Prints `report` in `e.format` and writes the files `e` asks for.
pub fn emit(report: &Report, e: &EmitArgs) -> anyhow::Result<()> {
    emit_with(report, e, &HtmlOptions::default())
}

/// [`emit`], its HTML page rendered as `html` says (`--trace-url` of `run` and `report`).
pub fn emit_with(report: &Report, e: &EmitArgs, html: &HtmlOptions) -> anyhow::Result<()> {
    let text = match e.format {
        Format::Text => report.text(use_color()),
        Format::Json => report.json(),
        Format::Csv => report.csv(),
        Format::Html => report.html(html),
        Format::HdrLog => {
            bail!("--format hdr-log is for `barrage report` of results files; on `run` use --hdr-log FILE")
        }
    };
    print(&text)?;
    e.files().write(report, html)?;
    warn_partial(report, e.format);
    Ok(())
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
        let junit = barrage_report::junit(suite, results, time_s);
        barrage_report::output::write(path, junit, private, &format!("--junit {}", path.display()))?;
    }
    Ok(results.iter().all(|r| r.pass))
}

/// What a command's report says for its exit code: built on failure when any of its runs
/// or rows is (`report.failures()`; `of` of them, each a `what`), else whether every
/// objective `passed`.
pub fn exit(report: &Report, of: usize, what: &str, passed: bool) -> Exit {
    not_a_result(&report.failures(), of, what).unwrap_or(if passed { Exit::Ok } else { Exit::Failed })
}

/// [`Exit::NotAResult`] for these failures ([`barrage_report::message::not_a_result`]);
/// `None` without any.
pub fn not_a_result(failures: &[String], of: usize, what: &str) -> Option<Exit> {
    barrage_report::message::not_a_result(failures, of, what).map(Exit::NotAResult)
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
