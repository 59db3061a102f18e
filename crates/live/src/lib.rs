//! The live views of barrage: what a person or a scraper sees while the load goes, fed
//! interval by interval (the engine closes one [`IntervalRecord`] a second).
//!
//! - The terminal view (`--tui`): a full-screen dashboard of the current run on stderr;
//!   `q`, Esc or Ctrl-C stop the work.
//! - The progress line: one line on stderr, rewritten each second, when there is no
//!   terminal view and stderr is a terminal.
//! - The OpenMetrics endpoint (`--metrics-addr`): `GET /metrics` for Prometheus to scrape;
//!   the [`metrics`] module lists what it serves.
//! - [`HdrLog`]: the `--hdr-log` file of one run, an HdrHistogram interval log written as
//!   the run goes.
//!
//! A study (a sweep of load levels, a capacity search, the cases of an experiment, the
//! phases of a run) runs many runs one after another, and a person watching it wants one
//! screen and a scraper one endpoint for all of them. So [`Live`] is started once for the
//! whole study ([`Live::start`]), told when each run begins ([`Live::begin`], with a
//! [`RunInfo`] that labels the run) and ends ([`Live::end`]), fed the intervals of the
//! current run ([`Live::interval`]), and finished once ([`Live::finish`]). [`HdrLog`] stays
//! per run: each run has its own file.
//!
//! Errors are [`LiveError`]s; drawing or scraping never fails a run.
//!
//! # Example
//!
//! ```no_run
//! use barrage_live::{Live, LiveOptions, RunInfo};
//! use barrage_metrics::{IntervalRecord, Recorder};
//! use tokio_util::sync::CancellationToken;
//!
//! let stop = CancellationToken::new();
//! let opts = LiveOptions { tui: false, metrics_addr: Some("127.0.0.1:0".parse()?) };
//! let mut live = Live::start(&opts, stop.clone())?;
//! if let Some(addr) = live.metrics_addr() {
//!     eprintln!("metrics on http://{addr}/metrics");
//! }
//! for (n, workers) in [8, 16].into_iter().enumerate() {
//!     let label = format!("level {}/2: {workers} workers", n + 1);
//!     live.begin(RunInfo { label: Some(label), concurrency: Some(workers), ..RunInfo::default() });
//!     // What the engine's interval callback would pass, once a second until the run ends
//!     // or `stop` is cancelled.
//!     let recorder = Recorder::new();
//!     live.interval(IntervalRecord { index: 0, start_unix_ms: 0, length_ms: 1000, step: 0, recorder, watch: None });
//!     live.end();
//! }
//! live.finish();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod exemplars;
mod hdr_log;
pub mod metrics;
mod progress;
mod tui;

pub use hdr_log::HdrLog;

use barrage_metrics::file::SliverFold;
use barrage_metrics::IntervalRecord;
use metrics::MetricsEndpoint;
use progress::Progress;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tui::Tui;

/// What the multiplexed connections (HTTP/2, HTTP/3) did in `c`, for the live views:
/// `streams 87`, the most open at once on one connection, then what is not routine: the
/// server's limit when it was below `--streams`, flow-control stalls, requests sent again
/// because the server did not process them. `None` when no connection carried streams.
fn streams_text(c: &barrage_metrics::recorder::Counts) -> Option<String> {
    if c.streams_max == 0 {
        return None;
    }
    let mut text = format!("streams {}", c.streams_max);
    if c.stream_cap > 0 {
        text += &format!(" (server allows {})", c.stream_cap);
    }
    if c.send_stalls + c.recv_stalls > 0 {
        text += &format!("  stalls {} send, {} receive", c.send_stalls, c.recv_stalls);
    }
    if c.stream_retries > 0 {
        text += &format!("  re-sent {}", c.stream_retries);
    }
    Some(text)
}

/// Which live views to start.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    /// The terminal view (`--tui`) instead of the progress line.
    pub tui: bool,
    /// Where to serve `/metrics` (`--metrics-addr`); port 0 picks a free one.
    pub metrics_addr: Option<SocketAddr>,
}

/// The most target URLs a view shows; it counts the others.
pub const URLS_SHOWN: usize = 3;

/// What the views know about one run before it starts.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    /// Which run of a study this is, e.g. "level 2/4: 16 workers", "case TC3 repeat 1",
    /// "phase measure"; `None` for a lone run.
    pub label: Option<String>,
    /// The first [`URLS_SHOWN`] target URLs (or fewer).
    pub urls: Vec<String>,
    /// How many target URLs the run has.
    pub url_count: usize,
    /// Requests per second asked for (open loop at a constant rate).
    pub target_rate: Option<f64>,
    /// Workers (closed loop).
    pub concurrency: Option<usize>,
    /// How long the attack lasts; `None` when it lasts until `-n` requests were sent.
    pub total: Option<Duration>,
    /// Requests to send (`-n`).
    pub requests: Option<u64>,
}

/// Why a live view could not start or an HdrHistogram log could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LiveError {
    /// The metrics endpoint's address could not be bound (in use, not local, no permission).
    #[error("--metrics-addr: cannot listen on {0}")]
    Bind(SocketAddr, #[source] std::io::Error),
    /// The metrics endpoint could not start once bound (its runtime, its thread).
    #[error("cannot start the metrics endpoint")]
    Endpoint(#[source] std::io::Error),
    /// The terminal view was asked for but stderr is not a terminal.
    #[error("--tui needs a terminal on stderr")]
    NotATerminal,
    /// The terminal could not be taken over (raw mode, alternate screen, the key thread).
    #[error("cannot take over the terminal")]
    Terminal(#[source] std::io::Error),
    /// The HdrHistogram log (the path, what went wrong) could not be created or written.
    #[error("--hdr-log {path}: {message}", path = .0.display(), message = .1)]
    HdrLog(PathBuf, String),
}

/// The live views of a study (or of a lone run): started once, fed run by run.
///
/// Dropping it does what [`finish`](Live::finish) does, so the terminal is restored and
/// the endpoint stopped on an error path too.
pub struct Live {
    view: View,
    metrics: Option<MetricsEndpoint>,
    /// The current run's intervals as per-second figures are computed over them: the last,
    /// when a sliver, folded into the one before, as in the report.
    fold: SliverFold,
}

/// How the runs show themselves on the terminal.
enum View {
    /// The one-line progress on stderr (when it is a terminal).
    Line(Progress),
    /// `--tui`.
    Tui(Tui),
}

impl Live {
    /// Starts the endpoint (if asked; prints nothing, the caller prints `metrics on
    /// http://ADDR/metrics`) and the terminal view (if asked) once for the whole study;
    /// otherwise the progress line (drawn only when stderr is a terminal). The terminal view
    /// cancels `stop` on `q`, Esc or Ctrl-C (in raw mode Ctrl-C arrives as a key, not
    /// SIGINT); a second Ctrl-C restores the terminal and exits the process with code 130.
    ///
    /// The endpoint is bound here, so [`metrics_addr`](Live::metrics_addr) is known at once.
    pub fn start(opts: &LiveOptions, stop: CancellationToken) -> Result<Live, LiveError> {
        // The endpoint first: a busy port fails before the terminal is taken over.
        let metrics = opts.metrics_addr.map(MetricsEndpoint::start).transpose()?;
        let view = if opts.tui { View::Tui(Tui::start(stop)?) } else { View::Line(Progress::new()) };
        Ok(Live { view, metrics, fold: SliverFold::default() })
    }

    /// The address the endpoint is bound to (the port picked when 0 was asked for); `None`
    /// without an endpoint.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(MetricsEndpoint::local_addr)
    }

    /// A run starts: the terminal view resets its per-run figures and shows the label in its
    /// title; the progress line prefixes the label; the endpoint counts the run and exposes
    /// its label (its counters keep growing across runs).
    pub fn begin(&mut self, info: RunInfo) {
        self.fold = SliverFold::default();
        if let Some(m) = &self.metrics {
            m.begin(info.label.as_deref());
        }
        match &mut self.view {
            View::Line(p) => p.begin(&info),
            View::Tui(t) => t.begin(info),
        }
    }

    /// One closed interval of the current run. Counts and histograms take it as it is;
    /// per-second figures (rates, CPU) are over it, or, for the sliver that ends a run, over
    /// it and the interval before ([`SliverFold`]), so no view shows a spike made of a few
    /// milliseconds.
    pub fn interval(&mut self, i: IntervalRecord) {
        let (i, rated) = self.fold.fold(i);
        match &mut self.view {
            View::Line(p) => p.show(rated),
            View::Tui(t) => t.update(i, rated),
        }
        if let Some(m) = &self.metrics {
            m.update(i, rated);
        }
    }

    /// The current run ended: clears the progress line (the terminal view keeps showing the
    /// run's last figures until the next one begins).
    pub fn end(&mut self) {
        if let View::Line(p) = &mut self.view {
            p.clear();
        }
    }

    /// The study ended: clears the progress line, restores the terminal, stops the endpoint
    /// (its port is released when this returns).
    pub fn finish(self) {
        // Drop does the work (each view's own), so a `Live` dropped on an error path ends
        // just the same.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn runs_of_a_study_share_the_endpoint() {
        let opts = LiveOptions { tui: false, metrics_addr: Some("127.0.0.1:0".parse().unwrap()) };
        let mut live = Live::start(&opts, CancellationToken::new()).unwrap();
        let addr = live.metrics_addr().unwrap();
        assert_ne!(addr.port(), 0);
        for level in 1..=2 {
            live.begin(RunInfo { label: Some(format!("level {level}/2")), ..RunInfo::default() });
            let mut recorder = barrage_metrics::Recorder::new();
            (0..5).for_each(|_| recorder.record_sent());
            live.interval(barrage_metrics::testing::interval(0, 0, recorder));
            live.end();
        }
        let body = get(addr, "/metrics");
        assert!(body.contains("\nbarrage_requests_sent_total 10\n"), "counters span the runs: {body}");
        assert!(body.contains("\nbarrage_runs_started_total 2\n"), "{body}");
        assert!(body.contains("\nbarrage_current_run{run=\"level 2/2\"} 1\n"), "{body}");
        assert!(!body.contains("level 1/2"), "only the current run is labelled: {body}");
        live.finish();
    }

    /// The status code of a response.
    fn status(response: &str) -> u16 {
        response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{response}"))
    }

    #[test]
    fn the_endpoint_serves_until_finish() {
        let opts = LiveOptions { tui: false, metrics_addr: Some("127.0.0.1:0".parse().unwrap()) };
        let mut live = Live::start(&opts, CancellationToken::new()).unwrap();
        let addr = live.metrics_addr().unwrap();
        live.begin(RunInfo::default());
        let mut recorder = barrage_metrics::Recorder::new();
        (0..3).for_each(|_| recorder.record_connection());
        live.interval(barrage_metrics::testing::interval(0, 0, recorder));

        let scraped = get(addr, "/metrics");
        assert_eq!(status(&scraped), 200, "{scraped}");
        let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
        assert!(scraped.to_ascii_lowercase().contains(&format!("\r\ncontent-type: {content_type}\r\n")), "{scraped}");
        assert!(scraped.contains("\nbarrage_connections_opened_total 3\n"), "{scraped}");
        assert!(!scraped.contains("barrage_current_run{"), "a lone run has no label: {scraped}");
        assert_eq!(status(&get(addr, "/other")), 404);

        live.end();
        live.finish();
        // The thread is joined and its listener closed when finish returns; the deadline only
        // keeps a failure from hanging the test.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(addr).is_ok() {
            assert!(std::time::Instant::now() < deadline, "{addr} still accepts connections after finish");
            std::thread::yield_now();
        }
    }

    #[test]
    fn no_views_asked_for() {
        let live = Live::start(&LiveOptions::default(), CancellationToken::new()).unwrap();
        assert_eq!(live.metrics_addr(), None);
        live.finish();
    }

    #[test]
    fn a_busy_port_is_a_bind_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let opts = LiveOptions { tui: false, metrics_addr: Some(addr) };
        let err = Live::start(&opts, CancellationToken::new()).err().expect("the port is taken");
        assert!(matches!(err, LiveError::Bind(a, _) if a == addr), "{err:?}");
        assert_eq!(err.to_string(), format!("--metrics-addr: cannot listen on {addr}"));
    }
}
