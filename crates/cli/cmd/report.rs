//! `barrage report`: render and merge results files.

use crate::args::{Format, ReportArgs};
use crate::Outcome;
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;

/// Renders `files` (merged) in `format` to standard output.
pub fn report(args: ReportArgs) -> anyhow::Result<Outcome> {
    render(&args.files, args.format)?;
    Ok(Outcome::Ok)
}

/// Renders results files to standard output; warnings about the files go to stderr.
pub fn render(files: &[PathBuf], format: Format) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if format == Format::HdrLog {
        barrage_report::write_hdr_log(files, &mut out).context("writing the HdrHistogram log")?;
        return Ok(out.flush()?);
    }
    let summary = barrage_metrics::summary::summarize(files)?;
    print_summary(&summary, format)
}

/// Prints a summary in a text, JSON or CSV report on standard output.
pub fn print_summary(summary: &barrage_metrics::RunSummary, format: Format) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let text = match format {
        Format::Text => barrage_report::text(summary, use_color()),
        Format::Json => barrage_report::json(summary),
        Format::Csv => barrage_report::csv(summary),
        Format::Html => barrage_report::html(&barrage_report::Page::Run(summary)),
        Format::HdrLog => unreachable!("handled above"),
    };
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
