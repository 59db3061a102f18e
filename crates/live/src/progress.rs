//! The one-line progress on stderr, rewritten once per closed interval, when stderr is a
//! terminal and the terminal view was not asked for.

use crate::RunInfo;
use barrage_metrics::units::fmt_us;
use barrage_metrics::IntervalRecord;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Erases the terminal's current line and returns to its start.
const CLEAR_LINE: &str = "\r\x1b[2K";

/// The live progress line on stderr, only when it is a terminal.
pub(crate) struct Progress {
    on: bool,
    /// Label of the current run, put before its figures.
    label: Option<String>,
    /// Length of the current run's attack, when known.
    total: Option<Duration>,
    /// A line is on the screen: clearing is needed, and only then (clearing a line that
    /// holds something else, a study's report, would erase it).
    shown: bool,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        Progress { on: std::io::stderr().is_terminal(), label: None, total: None, shown: false }
    }

    /// A run starts: its label and length from now on.
    pub(crate) fn begin(&mut self, info: &RunInfo) {
        self.clear();
        self.label = info.label.clone();
        self.total = info.total;
    }

    pub(crate) fn show(&mut self, i: &IntervalRecord) {
        if !self.on {
            return;
        }
        let line = self.line(i);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{CLEAR_LINE}{line}");
        let _ = err.flush();
        self.shown = true;
    }

    /// `[3s/10s] rate 100/s  ok 99/s  p99 1.20ms  errors 1`, after the run's label if any,
    /// then the interval's streams when connections carried several at once.
    fn line(&self, i: &IntervalRecord) -> String {
        let r = &i.recorder;
        let secs = f64::from(i.length_ms) / 1e3;
        let elapsed = i.index + 1;
        let total = self.total.map_or(String::new(), |t| format!("/{}s", t.as_secs()));
        let p99 = if r.corrected.is_empty() { 0 } else { r.corrected.value_at_quantile(0.99) };
        let mut figures = format!(
            "[{elapsed}s{total}] rate {:.0}/s  ok {:.0}/s  p99 {}  errors {}",
            r.counts.sent as f64 / secs,
            r.counts.ok as f64 / secs,
            fmt_us(p99 as f64),
            r.counts.completed.saturating_sub(r.counts.ok)
        );
        if let Some(streams) = crate::streams_text(&r.counts) {
            figures += &format!("  {streams}");
        }
        match &self.label {
            Some(label) => format!("{label}  {figures}"),
            None => figures,
        }
    }

    /// Erases the line, if one is shown.
    pub(crate) fn clear(&mut self) {
        if self.shown {
            eprint!("{CLEAR_LINE}");
            self.shown = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::{testing, Outcome, Recorder};

    fn interval(index: u32) -> IntervalRecord {
        let mut recorder = Recorder::new();
        for outcome in [Outcome::Status(200), Outcome::Status(200), Outcome::Status(500)] {
            recorder.record_sent();
            let s = testing::sample(Duration::from_millis(2), outcome);
            recorder.record(&s);
        }
        IntervalRecord { length_ms: 500, ..testing::interval(index, 0, recorder) }
    }

    /// A progress that draws nothing (the test's stderr may be a terminal).
    fn quiet() -> Progress {
        Progress { on: false, label: None, total: None, shown: false }
    }

    #[test]
    fn the_line_shows_the_interval() {
        let mut p = quiet();
        p.begin(&RunInfo { total: Some(Duration::from_secs(10)), ..RunInfo::default() });
        let line = p.line(&interval(2));
        assert!(line.starts_with("[3s/10s] rate 6/s  ok 4/s  p99 2."), "{line}");
        assert!(line.ends_with("errors 1"), "{line}");
    }

    /// Multiplexed connections add their streams, and what is not routine about them.
    #[test]
    fn the_line_shows_the_streams_of_the_interval() {
        let p = quiet();
        let mut i = interval(0);
        i.recorder.counts.streams_max = 10;
        assert!(p.line(&i).ends_with("errors 1  streams 10"), "{}", p.line(&i));
        let c = &mut i.recorder.counts;
        (c.stream_cap, c.send_stalls, c.recv_stalls, c.stream_retries) = (8, 2, 3, 4);
        let line = p.line(&i);
        assert!(line.ends_with("streams 10 (server allows 8)  stalls 2 send, 3 receive  re-sent 4"), "{line}");
    }

    #[test]
    fn a_run_of_a_study_is_prefixed_with_its_label() {
        let mut p = quiet();
        p.begin(&RunInfo { label: Some("level 2/4: 16 workers".into()), ..RunInfo::default() });
        assert!(p.line(&interval(0)).starts_with("level 2/4: 16 workers  [1s] rate "));
        // The next run has no length and no label: neither is kept from the last one.
        p.begin(&RunInfo::default());
        assert!(p.line(&interval(0)).starts_with("[1s] rate "));
    }

    #[test]
    fn nothing_is_cleared_that_was_not_drawn() {
        let mut p = quiet();
        p.show(&interval(0));
        assert!(!p.shown, "off: nothing drawn");
        p.clear();
        assert!(!p.shown);
    }
}
