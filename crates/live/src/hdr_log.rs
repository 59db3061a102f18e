//! `--hdr-log FILE`: a run's HdrHistogram interval log, written interval by interval.

use crate::LiveError;
use barrage_metrics::IntervalRecord;
use barrage_report::HdrLogWriter;
use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

/// The HdrHistogram interval log of one run (`--hdr-log FILE`), written interval by interval
/// as the run goes, like the results file, so a killed run keeps what it measured.
///
/// Writing never stops the run: the first failure is kept, later intervals are skipped, and
/// [`finish`](HdrLog::finish) reports it.
pub struct HdrLog {
    path: Option<PathBuf>,
    /// The created file, until the first interval tells the run's start and the log's header
    /// can be written.
    file: Option<File>,
    writer: Option<HdrLogWriter<File>>,
    error: Option<String>,
}

impl HdrLog {
    /// Creates (truncates) the file at `path`, 0644: latencies only, no request data; with
    /// `None`, a log that writes nothing, so the caller feeds it whether or not a log was
    /// asked for.
    pub fn create(path: Option<PathBuf>) -> Result<HdrLog, LiveError> {
        let create = |p: &PathBuf| barrage_metrics::secrets::create(p, false);
        let file = match &path {
            Some(p) => Some(create(p).map_err(|e| LiveError::HdrLog(p.clone(), e.to_string()))?),
            None => None,
        };
        Ok(HdrLog { path, file, writer: None, error: None })
    }

    /// Appends one closed interval (its corrected latency and its service time) and flushes.
    pub fn write(&mut self, i: &IntervalRecord) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.try_write(i) {
            self.error = Some(e.to_string());
        }
    }

    fn try_write(&mut self, i: &IntervalRecord) -> Result<(), barrage_report::ReportError> {
        if let Some(file) = self.file.take() {
            // Intervals are one second each but the last: the run started `index` seconds
            // before this one.
            let start_unix_ms = i.start_unix_ms.saturating_sub(u64::from(i.index) * 1000);
            self.writer = Some(HdrLogWriter::new(file, start_unix_ms)?);
        }
        if let Some(w) = &mut self.writer {
            let start = Duration::from_secs(u64::from(i.index));
            w.write_interval(start, Duration::from_millis(u64::from(i.length_ms)), &i.recorder)?;
        }
        Ok(())
    }

    /// Ends the log; an error when any interval could not be written.
    pub fn finish(self) -> Result<(), LiveError> {
        match (self.error, self.path) {
            (Some(e), Some(p)) => Err(LiveError::HdrLog(p, e)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::{testing, Recorder};

    fn interval(index: u32) -> IntervalRecord {
        testing::interval(index, 1_700_000_000_000 + u64::from(index) * 1000, Recorder::new())
    }

    #[test]
    fn writes_each_interval_as_it_comes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.hlog");
        let mut log = HdrLog::create(Some(path.clone())).unwrap();
        log.write(&interval(0));
        // Flushed per interval: readable before the run ends.
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("#[StartTime: 1700000000.000"), "{text}");
        assert_eq!(text.matches("Tag=service,").count(), 1, "{text}");
        log.write(&interval(1));
        log.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\nTag=service,1.000,1.000,"), "{text}");
    }

    #[test]
    fn without_a_path_nothing_is_written() {
        let mut log = HdrLog::create(None).unwrap();
        log.write(&interval(0));
        log.finish().unwrap();
    }

    #[test]
    fn an_uncreatable_file_names_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("run.hlog");
        let err = HdrLog::create(Some(path.clone())).err().expect("no such directory");
        assert!(matches!(&err, LiveError::HdrLog(p, _) if *p == path), "{err:?}");
        assert!(err.to_string().starts_with(&format!("--hdr-log {}: ", path.display())), "{err}");
    }
}
