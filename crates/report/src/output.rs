//! Where a report's files go (`--html`, `--xlsx`, `--csv-dir`, `--junit`, a study's
//! directory): checked before a run, since they are written after one of any length, and
//! written readable by others as usual, or by their owner alone when the report was not
//! redacted. Apart from the renderers, which never do I/O.

use crate::{HtmlOptions, Report, ReportError, Sheet};
use std::path::{Path, PathBuf};

/// What went wrong with a report's file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// A file or directory asked for cannot be written: the flag, the path and why.
    #[error("{0}")]
    Unwritable(String),
    /// Writing a file failed.
    #[error("{what}")]
    Write {
        /// The flag and the file.
        what: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A workbook could not be written.
    #[error(transparent)]
    Report(#[from] ReportError),
}

/// The files a report is written to beside standard output.
#[derive(Clone, Debug, Default)]
pub struct Files {
    /// `--html`: the report as one self-contained page.
    pub html: Option<PathBuf>,
    /// `--xlsx`: its tables as a workbook.
    pub xlsx: Option<PathBuf>,
    /// `--csv-dir`: each of its tables as DIR/NAME.csv.
    pub csv_dir: Option<PathBuf>,
}

impl Files {
    /// Checks, before anything runs, that these files and `junit` can be written.
    pub fn check(&self, junit: Option<&Path>) -> Result<(), OutputError> {
        for (flag, path) in [("--html", self.html.as_deref()), ("--xlsx", self.xlsx.as_deref()), ("--junit", junit)] {
            if let Some(path) = path {
                check_file(path, flag)?;
            }
        }
        if let Some(dir) = &self.csv_dir {
            check_dir(dir, "--csv-dir")?;
        }
        Ok(())
    }

    /// Writes `report` to these files, its page rendered as `options` say: for their owner
    /// alone when it was not redacted (`--no-redact`).
    pub fn write(&self, report: &Report, options: &HtmlOptions) -> Result<(), OutputError> {
        let private = report.unredacted();
        if let Some(path) = &self.html {
            write(path, report.html(options), private, &format!("--html {}", path.display()))?;
        }
        if self.xlsx.is_some() || self.csv_dir.is_some() {
            // Made only when asked for: a million URLs make them cost.
            self.write_sheets(&report.sheets(), private)?;
        }
        Ok(())
    }

    /// Writes `--xlsx` and `--csv-dir` of these tables, for their owner alone when `private`.
    pub fn write_sheets(&self, sheets: &[Sheet], private: bool) -> Result<(), OutputError> {
        if let Some(path) = &self.xlsx {
            crate::write_xlsx(path, sheets, private)?;
        }
        if let Some(dir) = &self.csv_dir {
            std::fs::create_dir_all(dir)
                .map_err(|source| OutputError::Write { what: format!("--csv-dir {}", dir.display()), source })?;
            for sheet in sheets {
                let path = dir.join(format!("{}.csv", sheet.name));
                write(&path, crate::to_csv(sheet), private, &format!("--csv-dir {}", path.display()))?;
            }
        }
        Ok(())
    }
}

/// Writes a report's file: 0644, or 0600 when `private` ([`barrage_metrics::secrets::create`]);
/// a failure says `what` (the flag and the file).
pub fn write(path: &Path, contents: impl AsRef<[u8]>, private: bool, what: &str) -> Result<(), OutputError> {
    barrage_metrics::secrets::write(path, contents, private)
        .map_err(|source| OutputError::Write { what: what.to_string(), source })
}

/// A file can be written at `path`: a writable file there, or a directory it can be created
/// in. Nothing is left behind: a new file is tried as a temporary one beside it.
pub fn check_file(path: &Path, flag: &str) -> Result<(), OutputError> {
    let cannot = |why: String| OutputError::Unwritable(format!("{flag} {}: cannot be written: {why}", path.display()));
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
pub fn check_dir(dir: &Path, flag: &str) -> Result<(), OutputError> {
    let cannot = |why: String| OutputError::Unwritable(format!("{flag} {}: cannot be written: {why}", dir.display()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_cannot_be_written_is_refused_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let e = check_file(dir.path(), "--html").unwrap_err().to_string();
        assert_eq!(e, format!("--html {d}: cannot be written: it is a directory"));
        let e = check_file(&dir.path().join("no/x.html"), "--html").unwrap_err().to_string();
        assert_eq!(e, format!("--html {d}/no/x.html: cannot be written: no directory {d}/no"));
        check_file(&dir.path().join("x.html"), "--html").unwrap();
        check_dir(&dir.path().join("new/tables"), "--csv-dir").unwrap();
        // Nothing is left behind by the checks.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
