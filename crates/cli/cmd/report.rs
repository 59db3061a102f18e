//! `barrage report`: render and merge results files, in any format and as any file.

use super::emit::{emit_with, exit};
use crate::args::{Format, ReportArgs};
use crate::Exit;
use anyhow::Context;
use barrage_report::Report;
use std::io::Write;

/// Renders the files (merged) as the flags ask.
pub fn report(a: ReportArgs) -> anyhow::Result<Exit> {
    if let Some(id) = a.trace_id {
        return super::trace::find(id, &a.files, a.log.as_deref(), a.emit.format);
    }
    a.emit.files().check(None)?;
    let html = a.links.html_options()?;
    let summary = barrage_metrics::summary::summarize_with(&a.files, a.force)?;
    if a.emit.format == Format::HdrLog {
        let mut out = std::io::stdout().lock();
        barrage_report::write_hdr_log(&a.files, &mut out).context("writing the HdrHistogram log")?;
        out.flush()?;
        a.emit.files().write(&Report::Run(&summary), &html)?;
        return Ok(exit(&Report::Run(&summary), 1, "run", true));
    }
    emit_with(&Report::Run(&summary), &a.emit, &html)?;
    Ok(exit(&Report::Run(&summary), 1, "run", true))
}
