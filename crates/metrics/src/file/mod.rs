//! The results file (`.brg`): a run streamed to disk as it goes, re-rendered and merged later.
//!
//! # Encoding
//! ```text
//! file    = magic version record*
//! magic   = "BARRAGE\n"                       8 bytes
//! version = u16 little-endian                 (FORMAT_VERSION)
//! record  = len:u32le crc:u32le payload[len]  crc = CRC-32 of payload
//! payload = postcard(Record)                  first a Header and the Urls beyond its own,
//!                                             then Intervals, last a Footer
//! ```
//! Histograms inside an interval use HdrHistogram's compressed V2 encoding (deflate), so a
//! one-second interval of a busy run takes a few hundred bytes to a few KiB. Each record is
//! flushed as it is written (at least once per second), so a run killed with SIGKILL leaves
//! a file that reads back up to its last complete record; the reader stops at a truncated or
//! corrupt tail with a warning instead of failing.
//!
//! Version 4 added the machine's boot ID to the header and the roots of each watched
//! process tree (PID and start time) to its samples, so merged files can tell one process
//! watched by several runs from several processes, and each backend's answers per tenth of
//! a second, for the gaps in them. Version 3 files are still read (module `legacy::v3`): their
//! samples carry no roots and their backends no timeline.
//!
//! Version 5 added flows: each recorder's figures per scenario group, and each key's flow
//! counts (checks and captures failed, steps skipped, arrivals dropped). Version 4 files
//! read with none (module `legacy::v4`).
//!
//! Version 6 added the server error replies of key-value stores: each recorder's replies
//! per class (`ERR`, `MOVED`, `SERVER_ERROR`, ...) with an example each. Version 5 files
//! read with none (module `legacy::v5`).
//!
//! Version 7 added how a run was launched: its shard of a split run (`--shard`), a digest
//! of the plan the shards must share, the start asked for (`--start-at`) and the actual
//! one, and the clock offset an orchestrator measured. Version 6 files read as unsplit runs
//! started when they say (module `legacy::v6`).
//!
//! Version 8 added what HTTP/2 and HTTP/3 runs need: connections by the protocol the
//! server agreed to (and how many fell back to HTTP/1.1), the most streams open at once on
//! one connection, the server's stream limit when it was below `--streams`, flow-control
//! stalls each way, and requests sent again because the server had not processed them.
//! Version 7 and 6 files read with them at 0 (module `legacy::v7`).
//!
//! Version 9 added what a cache study meant and met: each recorder's requests for new and
//! for repeated objects, its false hits and false misses, and the answers the origin
//! stamped; and in the footer the prefix of the stream that was all sent. Version 8 files
//! read with none (module `legacy::v8`).
//!
//! Version 10 counts the requests a flow's step rejected apart: a 2xx or 3xx answer whose
//! check or capture failed is no longer `ok` but `rejected`. Files of versions 5 to 9
//! counted it `ok` in the totals (and failed under its step's name); they are read with
//! the totals put right from the names (module `legacy::v9`, `legacy::v9::RecorderV9`).
//! Its footer says what a closed loop with `-n` was due to send (its workers' part of the
//! count); version 9 footers read without it.
//!
//! Version 11 keeps the header's record small however many targets a run has: it holds the
//! run's first URLs (at most [`URLS_PER_RECORD`], [`URL_BYTES_PER_RECORD`] of text), and
//! records of the next ones follow it, each as bounded, before the first interval. A
//! million URLs in the header's record took more than the 64 MiB a record may, and nothing
//! could read the file. The reader gathers them back into [`RunHeader::urls`]. Version 10
//! files, all of their URLs in the header, read as they are. Its launch names the run: a
//! random id each run draws (see [`Launch::run_id`]); files before it read without one
//! (module `legacy::v10`), and a group of iterations says so, so that its rate is over the time its
//! workers ran.
//!
//! Version 12 counts in the footer the requests whose `traceparent` said sampled
//! (`--trace-context`); version 11 files read with none (module `legacy::v11`).
//!
//! Version 13 lists an open loop's intended arrivals second by second, in a record after
//! the header's URLs ([`Record::Schedule`]): what a shard that died never sent is known
//! from it; and before the footer, when the run sent its first request
//! ([`Record::FirstSend`]). Its records are version 12's and two more, so version 12 files
//! read as they are.
//!
//! Version 14 records, before each interval of an open loop, where each engine thread was
//! in its lane of the schedule ([`Record::Lanes`], [`crate::lanes`]): what it had passed and
//! what it still had in flight, so a survivor sends exactly the rest of a lost shard's share.
//! And before the footer of a run stopped by someone other than its user (a collector:
//! a fleet-wide objective missed, a shard lost), who and why ([`Record::StoppedBy`]).
//! Its records are version 13's and two more, so version 13 files read as they are.
//!
//! Version 15 records, before the footer of a closed loop whose engine threads coalesced
//! their wake-ups, the longest sleep one took before waiting on its sockets
//! ([`Record::Coalesced`]): the most an answer could have waited in a socket unread. Its
//! records are version 14's and one more, so version 14 files read as they are.

use crate::bounded::{self, limit};
use crate::limits::{MAX_GROUP_STEPS, MAX_RUN_GROUPS, MAX_RUN_STEPS, MAX_RUN_URLS};
use crate::recorder::Recorder;
use crate::watch::{EventRecord, WatchSample};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// First bytes of every results file.
pub const MAGIC: &[u8; 8] = b"BARRAGE\n";
/// The encoding version this build writes and reads.
pub const FORMAT_VERSION: u16 = 15;
pub use crate::legacy::OLDEST_READ_VERSION;
pub use merge::{MergedInterval, MergedIntervals, SliverFold};

mod merge;
mod mirror;
pub use mirror::{Mirror, MirrorFn};
/// The length of an interval the engine closes; only the last of a run is shorter.
pub const INTERVAL_MS: u32 = 1000;
/// The most URLs one record holds (the header's, or a record of the URLs after them).
pub const URLS_PER_RECORD: usize = 65_536;
/// The most bytes of URLs one record holds, unless a single URL is longer (the http crate
/// takes at most 64 KiB): a record of URLs stays far below the 64 MiB a record may take.
pub const URL_BYTES_PER_RECORD: usize = 1 << 20;

/// Errors of reading or writing a results file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The file could not be opened, read or written.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause, in the message and not a `source` as well: an error chain printed
        /// whole (`{:#}`) would say it twice.
        cause: io::Error,
    },
    /// Not a barrage results file.
    #[error("{path}: not a barrage results file (bad magic bytes)")]
    NotResults {
        /// The file.
        path: PathBuf,
    },
    /// Written by a barrage whose format this build does not know.
    #[error("{path}: results format version {found} is not supported (this barrage reads versions {OLDEST_READ_VERSION} to {FORMAT_VERSION})")]
    Version {
        /// The file.
        path: PathBuf,
        /// The version found.
        found: u16,
    },
    /// Files that are not the shards of one run, each once (see [`crate::shards::check`]).
    #[error("{0}")]
    Shards(String),
    /// The header record is missing or unreadable.
    #[error("{path}: no readable run header: {reason}")]
    NoHeader {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
}

/// Open loop (a schedule of arrivals) or closed loop (workers waiting for responses).
///
/// Results files keep it by serde's derive (its variant's index); a summary says it by
/// [`Mode::name`] ([`mode_name`]), as its JSON always has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Requests sent on a schedule of intended start times.
    Open,
    /// Each worker sends its next request when the last one finished (also what an empty
    /// summary says).
    #[default]
    Closed,
}

impl Mode {
    /// `open` or `closed`, as reports and the summary's JSON say it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Open => "open",
            Mode::Closed => "closed",
        }
    }
}

/// A [`Mode`] in a summary's JSON: `"open"` or `"closed"`.
pub mod mode_name {
    use super::Mode;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes [`Mode::name`].
    pub fn serialize<S: Serializer>(mode: &Mode, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(mode.name())
    }

    /// Reads `open` or `closed`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
        match String::deserialize(d)?.as_str() {
            "open" => Ok(Mode::Open),
            "closed" => Ok(Mode::Closed),
            other => Err(serde::de::Error::custom(format!("mode {other:?}: open or closed"))),
        }
    }
}

/// One step of a stepped rate (`--rate 10,50,100 --step 10s`); a constant rate or a ramp is
/// a single step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    /// How the step is shown ("100/s", "100/s → 2000/s", "50 workers").
    pub label: String,
    /// Offset of the step's start from the run's start, in milliseconds.
    pub start_ms: u64,
}

/// What a run was: written first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// Version of the barrage that wrote the file.
    pub barrage_version: String,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// Host name of the machine that ran it.
    pub host: String,
    /// The machine's boot ID (`/proc/sys/kernel/random/boot_id`): with the host name, which
    /// machine, and since which boot, the PIDs of its watched processes belong to. Empty in
    /// version 3 files and where it cannot be read.
    pub boot_id: String,
    /// Open or closed loop.
    pub mode: Mode,
    /// Target URLs, every one: the header's record holds the first of them and records of
    /// URLs the others (since version 11), which the reader puts back here.
    #[serde(deserialize_with = "bounded::vec::<UrlLimit, _, _>")]
    pub urls: Vec<String>,
    /// The run's settings as JSON (as `barrage run` resolved them).
    pub settings_json: String,
    /// Steps of the load profile.
    #[serde(deserialize_with = "bounded::vec::<StepLimit, _, _>")]
    pub steps: Vec<StepInfo>,
    /// Engine threads.
    pub threads: u32,
    /// TLS certificate verification was off (`--insecure`).
    pub insecure: bool,
    /// The groups of a scenario (`--scenario`): what each was asked to do, and when.
    #[serde(deserialize_with = "bounded::vec::<GroupLimit, _, _>")]
    pub groups: Vec<GroupInfo>,
    /// How the run was split and started.
    pub launch: Launch,
}

/// How a run was launched: which shard of a split run it is (`--shard i/N`), and when it
/// was asked to start and did (`--start-at`). Merging shard files checks them against
/// each other: every shard once, all of one plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    /// `--shard i/N`: (i, N); `None` for an unsplit run.
    pub shard: Option<(u32, u32)>,
    /// A digest of the plan (the settings without what may differ between shards: the
    /// shard, the source address, the thread count, the start): shards of one run share it.
    pub plan_digest: String,
    /// `--start-at`: the start asked for, µs since the Unix epoch. The schedule counts from
    /// it, so shards started together align to the microsecond.
    pub start_at_unix_us: Option<u64>,
    /// When the engine was ready to send, µs since the Unix epoch: the asked start, or
    /// later when the process came late to it.
    pub ready_unix_us: u64,
    /// `--clock-offset`: this machine's clock minus the reference, µs, as the orchestrator
    /// measured it.
    pub clock_offset_us: Option<i64>,
    /// 32 hex digits the run drew at random when it started (each shard its own): a copy of
    /// its file shares it, no other run's file does. Empty in files before version 11.
    pub run_id: String,
}

limit!(UrlLimit = MAX_RUN_URLS, "URLs");
limit!(RecordUrlLimit = URLS_PER_RECORD, "URLs of a record");
limit!(ExemplarLimit = crate::trace::EXEMPLARS_PER_INTERVAL, "exemplars of an interval");
limit!(StepLimit = MAX_RUN_STEPS, "steps");
limit!(ScheduleLimit = crate::limits::MAX_SCHEDULE_SECONDS as usize + 1, "seconds of a schedule");
limit!(GroupLimit = MAX_RUN_GROUPS, "scenario groups");
limit!(GroupStepLimit = MAX_GROUP_STEPS, "steps of a scenario group");
limit!(LaneLimit = crate::lanes::MAX_LANES, "lanes of an interval");

/// A group of a scenario as it was asked to run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupInfo {
    /// Its name: the key of its flows' figures.
    pub name: String,
    /// The flow it runs.
    pub flow: String,
    /// Its steps' names in the order they run once (a repeated block once).
    #[serde(deserialize_with = "bounded::vec::<GroupStepLimit, _, _>")]
    pub steps: Vec<String>,
    /// Its load as asked: `10 workers`, `50 flows/s`.
    pub load: String,
    /// Open loop: flows asked per second (constant rate); `None` for workers or a ramp.
    pub rate: Option<f64>,
    /// Closed loop: workers.
    pub workers: Option<u32>,
    /// When it starts, ms from the run's start.
    pub start_ms: u64,
    /// When it ends, ms from the run's start; `None`: with the run.
    pub end_ms: Option<u64>,
    /// Closed loop: the flows each worker runs before it stops (`iterations`); such a group
    /// ends with its last flow, which its flows' timeline says. `None` in files before
    /// version 11.
    pub iterations: Option<u64>,
}

/// One closed interval (normally one second) of samples, by completion time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// Index of the interval from the start of the run (0, 1, 2, ...).
    pub index: u32,
    /// Wall-clock start of the interval, milliseconds since the Unix epoch.
    pub start_unix_ms: u64,
    /// Length of the interval in milliseconds (the last one may be shorter).
    pub length_ms: u32,
    /// Index into [`RunHeader::steps`] of the step the interval belongs to.
    pub step: u32,
    /// The samples of the interval.
    pub recorder: Recorder,
    /// The machine, barrage and the watched processes over the interval.
    pub watch: Option<WatchSample>,
}

impl IntervalRecord {
    /// Whether this is a sliver: an interval shorter than half of [`INTERVAL_MS`]. Only the
    /// last interval of a run can be one (the few ms between the last whole second and the
    /// last response). A per-second figure computed over it (a rate, a CPU share, a backend
    /// share) is a spike made of a handful of requests or clock ticks, so every consumer
    /// folds it into the interval before it ([`IntervalRecord::absorb`]).
    pub fn is_sliver(&self) -> bool {
        self.length_ms < INTERVAL_MS / 2
    }

    /// Folds `later`, the interval that follows this one, into this one: samples added,
    /// the length grown to cover both, watch samples weighted by their lengths.
    pub fn absorb(&mut self, later: &IntervalRecord) {
        self.recorder.add(&later.recorder);
        let (secs, later_secs) = (f64::from(self.length_ms) / 1e3, f64::from(later.length_ms) / 1e3);
        let end_ms = later.start_unix_ms + u64::from(later.length_ms);
        self.length_ms = u32::try_from(end_ms.saturating_sub(self.start_unix_ms))
            .unwrap_or(u32::MAX)
            .max(self.length_ms + later.length_ms);
        match (&mut self.watch, &later.watch) {
            (Some(mine), Some(theirs)) => mine.absorb(theirs, secs, later_secs),
            (None, Some(theirs)) => self.watch = Some(theirs.clone()),
            _ => {}
        }
    }
}

/// How a run ended: written last. A file without one comes from a run that was killed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFooter {
    /// Wall-clock end, milliseconds since the Unix epoch.
    pub ended_unix_ms: u64,
    /// Time spent sending new requests, µs.
    pub attack_us: u64,
    /// Time spent waiting for the last responses after the attack, µs.
    pub wait_us: u64,
    /// barrage's own user CPU time, µs.
    pub cpu_user_us: u64,
    /// barrage's own system CPU time, µs.
    pub cpu_system_us: u64,
    /// Stopped early by Ctrl-C.
    pub interrupted: bool,
    /// The in-flight bound (`--max-in-flight`, or the connection count) was reached.
    pub bound_reached: bool,
    /// Chunks of `--log` rows dropped because the disk fell behind.
    pub log_chunks_dropped: u64,
    /// barrage's peak resident memory, KiB.
    pub peak_rss_kib: u64,
    /// Requests 0, 1, … `sent_prefix` − 1 of the stream were all sent: what a fill phase
    /// warmed, for its measure to ask for (a closed loop's threads stop at different
    /// numbers, an open loop at the last arrival it sent).
    pub sent_prefix: u64,
    /// A closed loop with `-n`: the requests it was due to send, its workers' part of the
    /// whole run's count (a shard's part of a split run); `None` otherwise.
    pub due: Option<u64>,
    /// `--trace-context`: the requests (each attempt) whose `traceparent` said sampled
    /// (since version 12; 0 before, and without trace context).
    pub trace_sampled: u64,
}

/// One record of the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub enum Record {
    /// The run's description (first).
    Header(RunHeader),
    /// A closed interval.
    Interval(IntervalRecord),
    /// A command of `--at` started or ended.
    Event(EventRecord),
    /// The run's end (last).
    Footer(RunFooter),
    /// The run's URLs after those of the header (or of the record of URLs before), in
    /// order: right after the header (since version 11).
    Urls(#[serde(deserialize_with = "bounded::vec::<RecordUrlLimit, _, _>")] Vec<String>),
    /// The exemplars of the interval that follows (since version 12; see
    /// [`Recorder::exemplars`]).
    Exemplars(#[serde(deserialize_with = "bounded::vec::<ExemplarLimit, _, _>")] Vec<crate::trace::Exemplar>),
    /// The whole run's intended arrivals due before each second of its schedule
    /// ([`crate::coverage`]), after the URLs (since version 13).
    Schedule(#[serde(deserialize_with = "bounded::vec::<ScheduleLimit, _, _>")] Vec<u64>),
    /// When the run sent its first request, µs after its schedule's start (the asked start,
    /// or when the engine was ready): before the footer (since version 13).
    FirstSend(u64),
    /// Where each engine thread of an open loop was in its lane when the interval that
    /// follows was handed over (since version 14; see [`crate::lanes`]).
    Lanes(#[serde(deserialize_with = "bounded::vec::<LaneLimit, _, _>")] Vec<crate::lanes::LaneMark>),
    /// Who stopped the run, and why, when not its user ([`StoppedBy`]): before the footer
    /// (since version 14).
    StoppedBy(String),
    /// The longest sleep, µs, an engine thread took before waiting on its sockets, when
    /// any did (since version 15; see `barrage_engine`'s coalesced wake-ups): before the
    /// footer.
    Coalesced(u64),
}

/// Who stopped a run other than its user (a fleet's collector), said by whoever stops it
/// before it cancels the run: its results file keeps it before the footer, so any report
/// of the file says it, not "Ctrl-C".
#[derive(Clone, Debug, Default)]
pub struct StoppedBy(pub std::sync::Arc<std::sync::OnceLock<String>>);

impl StoppedBy {
    /// The most characters of it a file keeps.
    pub const MAX_CHARS: usize = 4096;

    /// Says who stopped the run, once (the first to say it is kept).
    pub fn say(&self, who: &str) {
        let _ = self.0.set(who.chars().take(Self::MAX_CHARS).collect());
    }

    /// Who stopped the run, if anyone said so.
    pub fn said(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

/// Streams a run into a results file.
pub struct ResultsWriter {
    out: BufWriter<File>,
    path: PathBuf,
    buf: Vec<u8>,
    mirror: Option<Mirror>,
}

impl ResultsWriter {
    /// Creates `path`, readable by its owner alone, and writes the magic, the version and
    /// the header (its URLs over as many records as they take), flushed.
    pub fn create(path: &Path, header: &RunHeader) -> Result<Self, FileError> {
        Self::create_with_urls(path, header, header.urls.iter().cloned())
    }

    /// [`ResultsWriter::create`], with `urls` for the header's URLs (its own are not
    /// written): made as they are written, a run of a million targets does not hold its
    /// list of URLs all at once.
    pub fn create_with_urls(
        path: &Path,
        header: &RunHeader,
        urls: impl Iterator<Item = String>,
    ) -> Result<Self, FileError> {
        Self::create_mirrored(path, header, urls, None)
    }

    /// [`ResultsWriter::create_with_urls`], every byte also handed to `mirror`.
    pub fn create_mirrored(
        path: &Path,
        header: &RunHeader,
        urls: impl Iterator<Item = String>,
        mirror: Option<Mirror>,
    ) -> Result<Self, FileError> {
        let io_err = |cause| FileError::Io { path: path.to_path_buf(), cause };
        // Private: it holds the run's URLs, error messages and `--at` commands (redacted,
        // unless `--no-redact`), and the machine's process names.
        let file = crate::secrets::create(path, true).map_err(io_err)?;
        let mut w = ResultsWriter { out: BufWriter::new(file), path: path.to_path_buf(), buf: Vec::new(), mirror };
        let start: Vec<u8> = MAGIC.iter().copied().chain(FORMAT_VERSION.to_le_bytes()).collect();
        w.out.write_all(&start).map_err(io_err)?;
        if let Some(m) = &w.mirror {
            (m.0)(&start);
        }
        let mut records = url_records(urls);
        w.write(&Record::Header(header.with_urls(records.next().unwrap_or_default())))?;
        for urls in records {
            w.write(&Record::Urls(urls))?;
        }
        Ok(w)
    }

    /// Appends a closed interval and flushes it to the OS.
    pub fn write_interval(&mut self, interval: &IntervalRecord) -> Result<(), FileError> {
        if !interval.recorder.exemplars.is_empty() {
            self.write(&Record::Exemplars(interval.recorder.exemplars.clone()))?;
        }
        // Cloning the recorder would cost more than encoding it in place.
        self.buf.clear();
        postcard::to_io(&RecordRef::Interval(interval), &mut self.buf).expect("encoding into memory cannot fail");
        self.write_payload()
    }

    /// Appends where the open loop's engine threads were in their lanes ([`Record::Lanes`]):
    /// right before the interval they end with.
    pub fn write_lanes(&mut self, lanes: Vec<crate::lanes::LaneMark>) -> Result<(), FileError> {
        self.write(&Record::Lanes(lanes))
    }

    /// Appends the run's intended arrivals second by second ([`Record::Schedule`]): right
    /// after the header, before the first interval.
    pub fn write_schedule(&mut self, arrivals: Vec<u64>) -> Result<(), FileError> {
        self.write(&Record::Schedule(arrivals))
    }

    /// Appends when the run sent its first request ([`Record::FirstSend`]).
    pub fn write_first_send(&mut self, offset_us: u64) -> Result<(), FileError> {
        self.write(&Record::FirstSend(offset_us))
    }

    /// Appends an event and flushes it.
    pub fn write_event(&mut self, event: &EventRecord) -> Result<(), FileError> {
        self.write(&Record::Event(event.clone()))
    }

    /// Appends the longest sleep before a wait on the sockets ([`Record::Coalesced`]).
    pub fn write_coalesced(&mut self, longest_us: u64) -> Result<(), FileError> {
        self.write(&Record::Coalesced(longest_us))
    }

    /// Appends who stopped the run ([`Record::StoppedBy`]): right before the footer.
    pub fn write_stopped_by(&mut self, who: &str) -> Result<(), FileError> {
        self.write(&Record::StoppedBy(who.to_string()))
    }

    /// Appends the footer and flushes.
    pub fn finish(mut self, footer: &RunFooter) -> Result<(), FileError> {
        self.write(&Record::Footer(footer.clone()))
    }

    fn write(&mut self, record: &Record) -> Result<(), FileError> {
        self.buf = postcard::to_stdvec(record).expect("encoding into memory cannot fail");
        self.write_payload()
    }

    fn write_payload(&mut self) -> Result<(), FileError> {
        let len = u32::try_from(self.buf.len()).expect("records are far below 4 GiB");
        let crc = crc32fast::hash(&self.buf);
        let res = (|| {
            self.out.write_all(&len.to_le_bytes())?;
            self.out.write_all(&crc.to_le_bytes())?;
            self.out.write_all(&self.buf)?;
            self.out.flush()
        })();
        res.map_err(|cause| FileError::Io { path: self.path.clone(), cause })?;
        if let Some(m) = &self.mirror {
            let mut record = Vec::with_capacity(8 + self.buf.len());
            record.extend_from_slice(&len.to_le_bytes());
            record.extend_from_slice(&crc.to_le_bytes());
            record.extend_from_slice(&self.buf);
            (m.0)(&record);
        }
        Ok(())
    }
}

/// `urls` in consecutive runs of at most [`URLS_PER_RECORD`] URLs and [`URL_BYTES_PER_RECORD`]
/// bytes, each of one URL at least: the URLs of each record.
fn url_records(urls: impl Iterator<Item = String>) -> impl Iterator<Item = Vec<String>> {
    let mut urls = urls.peekable();
    std::iter::from_fn(move || {
        let first = urls.next()?;
        let mut bytes = first.len();
        let mut record = vec![first];
        while record.len() < URLS_PER_RECORD {
            let Some(url) = urls.next_if(|u| bytes + u.len() <= URL_BYTES_PER_RECORD) else { break };
            bytes += url.len();
            record.push(url);
        }
        Some(record)
    })
}

impl RunHeader {
    /// The header with `urls` instead of its own (which it does not copy): what its record
    /// holds.
    fn with_urls(&self, urls: Vec<String>) -> RunHeader {
        RunHeader {
            barrage_version: self.barrage_version.clone(),
            started_unix_ms: self.started_unix_ms,
            host: self.host.clone(),
            boot_id: self.boot_id.clone(),
            mode: self.mode,
            urls,
            settings_json: self.settings_json.clone(),
            steps: self.steps.clone(),
            threads: self.threads,
            insecure: self.insecure,
            groups: self.groups.clone(),
            launch: self.launch.clone(),
        }
    }
}

/// Borrowing twin of [`Record`] with the same encoding, to write an interval without a copy.
#[derive(Serialize)]
enum RecordRef<'a> {
    #[allow(dead_code)]
    Header(&'a RunHeader),
    Interval(&'a IntervalRecord),
}

/// Reads a results file record by record.
pub struct ResultsReader {
    input: BufReader<File>,
    version: u16,
    path: PathBuf,
    header: RunHeader,
    /// The record read after the header's URLs, for [`ResultsReader::next_interval`].
    pending: Option<Record>,
    /// The exemplars read for the next interval.
    exemplars: Vec<crate::trace::Exemplar>,
    footer: Option<RunFooter>,
    events: Vec<EventRecord>,
    warning: Option<String>,
    /// Reading stopped where the file ends inside a record, not at a corrupt one.
    cut_off: bool,
    intervals: u32,
    schedule: Option<Vec<u64>>,
    first_send_us: Option<u64>,
    /// The lanes of the last interval read, and those read for the next.
    lanes: Option<Vec<crate::lanes::LaneMark>>,
    next_lanes: Option<Vec<crate::lanes::LaneMark>>,
    stopped_by: Option<String>,
    coalesced_us: Option<u64>,
}

/// The header at the start of a results file's bytes (a shard's first post to its
/// collector), if they hold a whole one in a version this build reads.
pub fn header_of(bytes: &[u8]) -> Option<RunHeader> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let version = u16::from_le_bytes(rest.get(..2)?.try_into().ok()?);
    if !(OLDEST_READ_VERSION..=FORMAT_VERSION).contains(&version) {
        return None;
    }
    match read_record(&mut &rest[2..], version) {
        Ok(Some(Record::Header(h))) => Some(h),
        _ => None,
    }
}

impl ResultsReader {
    /// Opens `path`, checks magic and version, and reads the header with all its URLs.
    pub fn open(path: &Path) -> Result<Self, FileError> {
        let io_err = |cause| FileError::Io { path: path.to_path_buf(), cause };
        let mut input = BufReader::new(File::open(path).map_err(io_err)?);
        let mut magic = [0u8; 8];
        if input.read_exact(&mut magic).is_err() || &magic != MAGIC {
            return Err(FileError::NotResults { path: path.to_path_buf() });
        }
        let mut version = [0u8; 2];
        input.read_exact(&mut version).map_err(|_| FileError::NotResults { path: path.to_path_buf() })?;
        let found = u16::from_le_bytes(version);
        if !(OLDEST_READ_VERSION..=FORMAT_VERSION).contains(&found) {
            return Err(FileError::Version { path: path.to_path_buf(), found });
        }
        let no_header = |reason: String| FileError::NoHeader { path: path.to_path_buf(), reason };
        let header = match read_record(&mut input, found) {
            Ok(Some(Record::Header(h))) => h,
            Ok(Some(_)) => return Err(no_header("the first record is not a header".into())),
            Ok(None) => return Err(no_header("the file ends before it".into())),
            Err(e) => return Err(no_header(e.reason)),
        };
        let mut reader = ResultsReader {
            input,
            version: found,
            path: path.to_path_buf(),
            header,
            pending: None,
            exemplars: Vec::new(),
            footer: None,
            events: Vec::new(),
            warning: None,
            cut_off: false,
            intervals: 0,
            schedule: None,
            first_send_us: None,
            lanes: None,
            next_lanes: None,
            stopped_by: None,
            coalesced_us: None,
        };
        reader.read_more_urls();
        Ok(reader)
    }

    /// Reads the records of URLs after the header into it; keeps the record after them.
    /// URLs cut off or over the limit end the read there, with a warning.
    fn read_more_urls(&mut self) {
        loop {
            match read_record(&mut self.input, self.version) {
                Ok(Some(Record::Urls(more))) if self.header.urls.len() + more.len() > MAX_RUN_URLS => {
                    self.stop_with(format!("more than {MAX_RUN_URLS} URLs"));
                    return;
                }
                Ok(Some(Record::Urls(more))) => self.header.urls.extend(more),
                Ok(Some(Record::Schedule(arrivals))) => self.schedule = Some(arrivals),
                Ok(next) => {
                    self.pending = next;
                    return;
                }
                Err(e) => {
                    self.cut_off = e.cut_off;
                    self.stop_with(e.reason);
                    return;
                }
            }
        }
    }

    /// The run's header.
    pub fn header(&self) -> &RunHeader {
        &self.header
    }

    /// The run's intended arrivals second by second ([`Record::Schedule`]), if it has them.
    pub fn schedule(&self) -> Option<&[u64]> {
        self.schedule.as_deref()
    }

    /// When the run sent its first request, µs after its schedule's start, once the reader
    /// has reached it ([`Record::FirstSend`]).
    pub fn first_send_us(&self) -> Option<u64> {
        self.first_send_us
    }

    /// Where the open loop's engine threads were in their lanes at the end of the last
    /// interval read ([`Record::Lanes`]); `None` before one, and for runs that have none.
    pub fn lanes(&self) -> Option<&[crate::lanes::LaneMark]> {
        self.lanes.as_deref()
    }

    /// The longest sleep before a wait on the sockets ([`Record::Coalesced`]), once the
    /// reader has reached it; `None` when no thread slept.
    pub fn coalesced_us(&self) -> Option<u64> {
        self.coalesced_us
    }

    /// Who stopped the run other than its user, once the reader has reached it.
    pub fn stopped_by(&self) -> Option<&str> {
        self.stopped_by.as_deref()
    }

    /// The footer, once the reader has reached it; `None` for a run that was killed.
    pub fn footer(&self) -> Option<&RunFooter> {
        self.footer.as_ref()
    }

    /// The events read so far (all of them once the reader has reached the end).
    pub fn events(&self) -> &[EventRecord] {
        &self.events
    }

    /// The file, as opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A warning about a truncated or corrupt tail, once reading has stopped there.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// Reading stopped at a corrupt record (bytes that are not one, or a second header), not
    /// where the file is cut off: what follows it, the footer too, was never read.
    pub fn corrupt(&self) -> bool {
        self.warning.is_some() && !self.cut_off
    }

    /// The next interval, or `None` at the end of the readable part of the file.
    pub fn next_interval(&mut self) -> Option<IntervalRecord> {
        if self.warning.is_some() {
            return None;
        }
        loop {
            let next = match self.pending.take() {
                Some(record) => Ok(Some(record)),
                None => read_record(&mut self.input, self.version),
            };
            match next {
                Ok(Some(Record::Interval(mut i))) => {
                    self.intervals += 1;
                    i.recorder.exemplars = std::mem::take(&mut self.exemplars);
                    // Taken with its interval: a copy cut between the two is not ahead of it.
                    if let Some(lanes) = self.next_lanes.take() {
                        self.lanes = Some(lanes);
                    }
                    return Some(i);
                }
                Ok(Some(Record::Exemplars(e))) => self.exemplars = e,
                Ok(Some(Record::Lanes(l))) => self.next_lanes = Some(l),
                Ok(Some(Record::StoppedBy(who))) => self.stopped_by = Some(who),
                Ok(Some(Record::Coalesced(us))) => self.coalesced_us = Some(us),
                Ok(Some(Record::Footer(f))) => self.footer = Some(f),
                Ok(Some(Record::FirstSend(us))) => self.first_send_us = Some(us),
                Ok(Some(Record::Event(e))) => self.events.push(e),
                Ok(Some(Record::Header(_))) => {
                    self.stop_with(format!("a second header after interval {}", self.intervals));
                    return None;
                }
                Ok(Some(Record::Urls(_) | Record::Schedule(_))) => {
                    self.stop_with(format!(
                        "URLs or a schedule apart from the header, after interval {}",
                        self.intervals
                    ));
                    return None;
                }
                Ok(None) => return None,
                Err(e) => {
                    self.cut_off = e.cut_off;
                    self.stop_with(e.reason);
                    return None;
                }
            }
        }
    }

    fn stop_with(&mut self, reason: String) {
        self.warning = Some(format!(
            "{}: {reason}; read the first {} interval(s) and stopped there",
            self.path.display(),
            self.intervals
        ));
    }
}

/// Why a record could not be read: the file ends inside it (a run killed as it wrote it),
/// or its bytes are not a record (corrupt).
struct Unreadable {
    reason: String,
    cut_off: bool,
}

impl Unreadable {
    fn cut_off(reason: &str) -> Unreadable {
        Unreadable { reason: reason.into(), cut_off: true }
    }

    fn corrupt(reason: String) -> Unreadable {
        Unreadable { reason, cut_off: false }
    }
}

/// Reads one record of a file of `version`; `Ok(None)` at a clean end of file, `Err` for a
/// truncated or corrupt one.
fn read_record(input: &mut impl Read, version: u16) -> Result<Option<Record>, Unreadable> {
    let mut frame = [0u8; 8];
    match read_full(input, &mut frame) {
        0 => return Ok(None),
        8 => {}
        _ => return Err(Unreadable::cut_off("the file is cut off inside a record frame")),
    }
    let len = u32::from_le_bytes(frame[..4].try_into().unwrap());
    let crc = u32::from_le_bytes(frame[4..].try_into().unwrap());
    if len > crate::limits::MAX_RECORD_BYTES {
        return Err(Unreadable::corrupt(format!("a record claims {len} bytes: corrupt")));
    }
    let mut payload = vec![0u8; len as usize];
    if read_full(input, &mut payload) != payload.len() {
        return Err(Unreadable::cut_off("the file is cut off inside a record"));
    }
    if crc32fast::hash(&payload) != crc {
        return Err(Unreadable::corrupt("a record fails its checksum: corrupt".into()));
    }
    let record = bounded::decoding(|| crate::legacy::decode(version, &payload));
    record.map(Some).map_err(|reason| Unreadable::corrupt(format!("a record does not decode: {reason}")))
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    n
}

#[cfg(test)]
pub(crate) mod tests;
