//! [`Keeper`]: what a study's runner hands each finished run to, so that every mode keeps
//! its runs the same way. A history that cannot be written never fails the run: the run's
//! report matters more. The keeper says so once, on standard error, and goes on.

use crate::{Entry, Environment, HistoryError, Store};
use std::path::{Path, PathBuf};

/// Keeps runs in the history at a path, with the user's labels.
pub struct Keeper {
    path: PathBuf,
    labels: Vec<(String, Option<String>)>,
    env: Environment,
    warned: bool,
    /// How many runs it kept.
    pub kept: usize,
}

impl Keeper {
    /// A keeper writing to the history at `path`, applying `labels` (`--label`) to each
    /// run's fingerprint, recording barrage `version`.
    pub fn new(path: PathBuf, labels: Vec<(String, Option<String>)>, version: &str) -> Keeper {
        Keeper { path, labels, env: Environment::here(version), warned: false, kept: 0 }
    }

    /// The history's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entry of the run in `files`, as `kind` at `study` labels; `None` (said once) when
    /// its files cannot be read.
    pub fn entry(&mut self, files: &[PathBuf], kind: &str, study: &[(String, String)]) -> Option<Entry> {
        match Entry::of_files(files, kind, study, &self.labels, &self.env) {
            Ok(e) => Some(e),
            Err(e) => self.warn(e),
        }
    }

    /// Stores `entry`; its number, or `None` (said once) when the history cannot be written.
    pub fn keep(&mut self, entry: &Entry) -> Option<i64> {
        match Store::open(&self.path).and_then(|mut s| s.record(entry)) {
            Ok(id) => {
                self.kept += 1;
                Some(id)
            }
            Err(e) => self.warn(e),
        }
    }

    fn warn<T>(&mut self, e: HistoryError) -> Option<T> {
        if !std::mem::replace(&mut self.warned, true) {
            use std::io::Write;
            // Not eprintln!: a closed stderr must not panic the run.
            let _ =
                writeln!(std::io::stderr(), "barrage: the run history was not written ({e}); --no-history skips it");
        }
        None
    }
}
