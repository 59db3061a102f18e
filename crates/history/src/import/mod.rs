//! Importing the results of the tools people migrate from, so that a team keeps its trend
//! line: k6's JSON summary, Vegeta's results, wrk2's output, HdrHistogram interval logs,
//! JMeter's CSV results and Locust's statistics CSV, each as one history [`Entry`] of kind
//! `import`.
//!
//! What each gives:
//!
//! | format    | latency                                           | intervals            |
//! |-----------|---------------------------------------------------|----------------------|
//! | `vegeta`  | every request's (CSV or JSON lines)               | one a second         |
//! | `jmeter`  | every sample's (CSV or JTL written as CSV)        | one a second         |
//! | `hdr-log` | the log's interval histograms, values taken as µs | the log's own        |
//! | `wrk2`    | the printed percentiles; the spectrum's histogram | one, approximate     |
//! | `k6`      | the summary's statistics                          | none                 |
//! | `locust`  | the `Aggregated` row's statistics                 | none                 |
//!
//! None of Vegeta, JMeter, k6 or Locust corrects for coordinated omission: their latency
//! is service time, kept as both the corrected and the service latency. wrk2's recorded
//! latency is corrected (from each request's intended start), its `--u_latency` one not.
//!
//! # Errors
//! A line that cannot be read (a field missing or not a number, a histogram that does not
//! decode, a record cut off) is an error naming the file and the line, never skipped: an
//! import that quietly dropped requests would put a wrong point on the trend line, and a
//! file cut off mid-line imports once its partial last line is removed. (wrk2's output is
//! free text, a script's among it: there only its own lines must read.) An empty file, or
//! one without a result, is an error too. Every file is read a line at a time, bounded
//! ([`MAX_FILE_BYTES`], [`MAX_LINE_BYTES`]), but a k6 summary, which is parsed whole and
//! read to 16 MiB.

mod bins;
mod hdrlog;
mod jmeter;
mod k6;
mod lines;
mod locust;
#[cfg(test)]
mod tests;
mod vegeta;
mod wrk2;

pub use lines::{MAX_FILE_BYTES, MAX_LINE_BYTES};

use crate::entry::Interval;
use crate::fingerprint::mask_loopback_port;
use crate::{Entry, Environment, Fingerprint, HistoryError};
use barrage_metrics::summary::LatencyStats;
use barrage_report::Figure;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::Path;

/// A format of another tool's results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Foreign {
    /// k6's end-of-test summary as JSON: `--summary-export`, `handleSummary`'s data, or
    /// the machine-readable summary.
    K6Summary,
    /// Vegeta's results, encoded as CSV or JSON lines (`vegeta encode`).
    Vegeta,
    /// wrk2's (or wrk's) standard output, best with `--latency`.
    Wrk2,
    /// An HdrHistogram interval log (`HistogramLogWriter`, jHiccup, barrage's own).
    HdrLog,
    /// JMeter's results as CSV (a `.jtl` saved as CSV).
    Jmeter,
    /// Locust's `*_stats.csv`.
    Locust,
}

impl Foreign {
    /// Every format.
    pub const ALL: [Foreign; 6] =
        [Foreign::K6Summary, Foreign::Vegeta, Foreign::Wrk2, Foreign::HdrLog, Foreign::Jmeter, Foreign::Locust];

    /// Its name, as `--from` takes it and as the `tool` label keeps it.
    pub fn name(self) -> &'static str {
        match self {
            Foreign::K6Summary => "k6",
            Foreign::Vegeta => "vegeta",
            Foreign::Wrk2 => "wrk2",
            Foreign::HdrLog => "hdr-log",
            Foreign::Jmeter => "jmeter",
            Foreign::Locust => "locust",
        }
    }
}

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Foreign {
    type Err = String;

    fn from_str(s: &str) -> Result<Foreign, String> {
        Foreign::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(s.trim())).ok_or_else(|| {
            let names: Vec<&str> = Foreign::ALL.iter().map(|f| f.name()).collect();
            format!("unknown format '{s}': one of {}", names.join(", "))
        })
    }
}

/// Choices an import takes beyond the format.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Of a tagged HdrHistogram log, the tag whose lines are read (`None`: the untagged
    /// lines). It becomes the fingerprint's `tag` label.
    pub tag: Option<String>,
}

/// The format of a file, guessed from its first bytes (a few KiB are enough), and from its
/// extension when they do not tell; `None` when neither does.
pub fn detect(path: &Path, first_bytes: &[u8]) -> Option<Foreign> {
    let text = String::from_utf8_lossy(first_bytes);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let first = text.lines().next().unwrap_or("");
    let has = |needles: &[&str]| needles.iter().all(|n| first.contains(n));
    if first.starts_with('{') && has(&["\"attack\"", "\"seq\"", "\"latency\""]) {
        return Some(Foreign::Vegeta);
    }
    let k6 = ["\"http_req_duration\"", "\"root_group\"", "\"testRunDurationMs\"", "\"k6Version\"", "\"http_reqs\""];
    if text.starts_with('{') && k6.iter().any(|m| text.contains(m)) {
        return Some(Foreign::K6Summary);
    }
    if hdrlog::looks_like(text) {
        return Some(Foreign::HdrLog);
    }
    if jmeter::delimiter_of(first).is_some() {
        return Some(Foreign::Jmeter);
    }
    if locust::is_header(first) {
        return Some(Foreign::Locust);
    }
    if vegeta::is_csv_line(first) {
        return Some(Foreign::Vegeta);
    }
    if text.contains("Latency Distribution") || (text.contains(" test @ ") && text.contains("Requests/sec:")) {
        return Some(Foreign::Wrk2);
    }
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("hlog") => Some(Foreign::HdrLog),
        Some("jtl") => Some(Foreign::Jmeter),
        _ => None,
    }
}

/// The history entry of `path`, a file of `format`, the user's `labels` applied to its
/// fingerprint.
///
/// Its fingerprint is `kind=import`, `tool=FORMAT` and, when the file names it, `target`
/// (a loopback port masked); the machine it ran on is not known, so there is no `machine`.
/// Its figures are those of [`Figure`] the file gives (latencies in µs).
pub fn entry_of(path: &Path, format: Foreign, labels: &[(String, Option<String>)]) -> Result<Entry, HistoryError> {
    entry_with(path, format, labels, &Options::default())
}

/// [`entry_of`] with `options`.
pub fn entry_with(
    path: &Path,
    format: Foreign,
    labels: &[(String, Option<String>)],
    options: &Options,
) -> Result<Entry, HistoryError> {
    let found = match format {
        Foreign::K6Summary => k6::read(path)?,
        Foreign::Vegeta => vegeta::read(path)?,
        Foreign::Wrk2 => wrk2::read(path)?,
        Foreign::HdrLog => hdrlog::read(path, options.tag.as_deref())?,
        Foreign::Jmeter => jmeter::read(path)?,
        Foreign::Locust => locust::read(path)?,
    };
    Ok(found.into_entry(path, format, labels))
}

/// What a reader made of a file, before it is an [`Entry`].
#[derive(Default)]
struct Found {
    figures: BTreeMap<String, f64>,
    /// The run's start, ms since the Unix epoch, when the file says.
    started_ms: Option<u64>,
    /// The run's length, s, when the file says: without a start, the start is taken as
    /// this much before the file was last written.
    duration_s: Option<f64>,
    target: Option<String>,
    /// Labels beside the tool's and the target's (an HdrHistogram log's tag).
    labels: Vec<(String, String)>,
    intervals: Vec<Interval>,
    failure: Option<String>,
}

impl Found {
    /// Sets figure `name` to `v`, when `v` is a number.
    fn set(&mut self, name: &str, v: f64) {
        if v.is_finite() {
            self.figures.insert(name.to_string(), v);
        }
    }

    /// Sets latency figure `name` from a value in ms.
    fn set_ms(&mut self, name: &str, ms: Option<f64>) {
        if let Some(ms) = ms {
            self.set(name, ms * 1000.0);
        }
    }

    /// The latency figures of `h` (µs), as barrage's own runs have them.
    fn latency(&mut self, h: &Histogram<u64>) {
        if h.is_empty() {
            return;
        }
        let stats = LatencyStats::of(h);
        for f in Figure::ALL.into_iter().filter(|f| f.is_latency() && !f.is_flow()) {
            if let Some(v) = f.of_latency(&stats) {
                self.set(f.name(), v);
            }
        }
    }

    /// The success figures of `completed` requests of which `ok` succeeded.
    fn counts(&mut self, completed: u64, ok: u64) {
        if completed == 0 {
            return;
        }
        let success = ok as f64 / completed as f64;
        self.set("success", success);
        self.set("error_ratio", 1.0 - success);
        self.set("errors", completed.saturating_sub(ok) as f64);
        if ok == 0 {
            self.failure = Some("no request succeeded".into());
        }
    }

    fn into_entry(self, path: &Path, format: Foreign, labels: &[(String, Option<String>)]) -> Entry {
        let started_ms = self.started_ms.unwrap_or_else(|| written_ms(path, self.duration_s.unwrap_or(0.0)));
        let mut own =
            vec![("kind".to_string(), Some("import".to_string())), ("tool".into(), Some(format.name().into()))];
        if let Some(t) = self.target.filter(|t| !t.is_empty()) {
            own.push(("target".into(), Some(t)));
        }
        own.extend(self.labels.into_iter().map(|(k, v)| (k, Some(v))));
        let env = Environment::default();
        let mut fingerprint = Fingerprint::default();
        fingerprint.apply(&own, &env);
        fingerprint.apply(labels, &env);
        Entry {
            kind: "import".into(),
            run_id: format!("{}-{started_ms}", format.name()),
            started_ms,
            study: Vec::new(),
            fingerprint,
            env,
            figures: self.figures,
            intervals: self.intervals,
            files: vec![path.display().to_string()],
            shards: 1,
            interrupted: false,
            failure: self.failure,
        }
    }
}

/// When a run of `duration_s` written to `path` started: the file's last change less the
/// run's length (a tool writes its summary as the run ends); now, if the file system does
/// not say.
fn written_ms(path: &Path, duration_s: f64) -> u64 {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or_else(|_| std::time::SystemTime::now());
    let ms = modified.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let run_ms = if duration_s.is_finite() && duration_s > 0.0 { (duration_s * 1000.0) as u64 } else { 0 };
    ms.saturating_sub(run_ms)
}

/// The target of a file's requests, seen one at a time in constant memory: their one URL,
/// else their one origin (`http://host:port/*`), else the first origin and `+more`; a
/// loopback port masked, as barrage's own targets are.
#[derive(Default)]
struct Targets {
    first: Option<String>,
    same_url: bool,
    same_origin: bool,
}

impl Targets {
    fn see(&mut self, url: &str) {
        let url = url.trim();
        if url.is_empty() || url == "null" {
            return;
        }
        match &self.first {
            None => {
                self.first = Some(url.to_string());
                self.same_url = true;
                self.same_origin = true;
            }
            Some(first) if first == url => {}
            Some(first) => {
                self.same_url = false;
                self.same_origin &= origin(first) == origin(url);
            }
        }
    }

    /// The one value seen, when only one was.
    fn only(&self) -> Option<String> {
        self.first.clone().filter(|_| self.same_url)
    }

    fn name(&self) -> Option<String> {
        let first = self.first.as_deref()?;
        Some(match (self.same_url, self.same_origin) {
            (true, _) => mask_loopback_port(first),
            (false, true) => mask_loopback_port(&format!("{}/*", origin(first))),
            (false, false) => format!("{} +more", mask_loopback_port(origin(first))),
        })
    }
}

/// `scheme://authority` of a URL; the whole of anything else.
fn origin(url: &str) -> &str {
    let Some(at) = url.find("://") else { return url };
    let end = url[at + 3..].find(['/', '?', '#']).map_or(url.len(), |e| at + 3 + e);
    &url[..end]
}
