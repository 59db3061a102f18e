//! The records of format version 3, as they were, read into today's: the header without a
//! boot ID, process samples without roots.

use crate::bounded;
use crate::bounded::{refuse, Bounded};
use crate::recorder::{from_wire, Counts, FlowCounts, Recorder, Wire};
use crate::sample::{ErrorKind, CACHE_STATUS_COUNT, ERROR_KIND_COUNT};
use crate::watch::{EventRecord, HostSample};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub(crate) struct RunHeader {
    pub barrage_version: String,
    pub started_unix_ms: u64,
    pub host: String,
    pub mode: crate::file::Mode,
    #[serde(deserialize_with = "bounded::vec::<crate::file::UrlLimit, _, _>")]
    pub urls: Vec<String>,
    pub settings_json: String,
    #[serde(deserialize_with = "bounded::vec::<crate::file::StepLimit, _, _>")]
    pub steps: Vec<crate::file::StepInfo>,
    pub threads: u32,
    pub insecure: bool,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct ProcSample {
    pub name: String,
    pub processes: u32,
    pub cpu_user_percent: f32,
    pub cpu_system_percent: f32,
    pub rss_kib: u64,
    pub threads: u32,
    pub fds: u32,
    pub context_switches: u64,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct WatchSample {
    pub host: HostSample,
    pub generator: ProcSample,
    #[serde(deserialize_with = "bounded::vec::<crate::watch::ProcessLimit, _, _>")]
    pub processes: Vec<ProcSample>,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct IntervalRecord {
    pub index: u32,
    pub start_unix_ms: u64,
    pub length_ms: u32,
    pub step: u32,
    pub recorder: RecorderV3,
    pub watch: Option<WatchSample>,
}

#[derive(Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    Header(RunHeader),
    Interval(IntervalRecord),
    Event(EventRecord),
    Footer(crate::legacy::v8::RunFooter),
}

impl From<ProcSample> for crate::watch::ProcSample {
    fn from(p: ProcSample) -> Self {
        crate::watch::ProcSample {
            name: p.name,
            roots: Vec::new(),
            processes: p.processes,
            cpu_user_percent: p.cpu_user_percent,
            cpu_system_percent: p.cpu_system_percent,
            rss_kib: p.rss_kib,
            threads: p.threads,
            fds: p.fds,
            context_switches: p.context_switches,
        }
    }
}

impl From<Record> for crate::file::Record {
    fn from(r: Record) -> Self {
        match r {
            Record::Header(h) => crate::file::Record::Header(
                crate::legacy::v6::RunHeader {
                    barrage_version: h.barrage_version,
                    started_unix_ms: h.started_unix_ms,
                    host: h.host,
                    boot_id: String::new(),
                    mode: h.mode,
                    urls: h.urls,
                    settings_json: h.settings_json,
                    steps: h.steps,
                    threads: h.threads,
                    insecure: h.insecure,
                    groups: Vec::new(),
                }
                .into(),
            ),
            Record::Interval(i) => crate::file::Record::Interval(crate::file::IntervalRecord {
                index: i.index,
                start_unix_ms: i.start_unix_ms,
                length_ms: i.length_ms,
                step: i.step,
                recorder: i.recorder.0,
                watch: i.watch.map(|w| crate::watch::WatchSample {
                    host: w.host,
                    generator: w.generator.into(),
                    processes: w.processes.into_iter().map(Into::into).collect(),
                }),
            }),
            Record::Event(e) => crate::file::Record::Event(e),
            Record::Footer(f) => crate::file::Record::Footer(f.into()),
        }
    }
}

/// [`Counts`] as version 3 of the results file wrote them: before
/// [`ErrorKind::Unreachable`] and stale connection retries.
#[derive(Serialize, Deserialize)]
struct CountsV3 {
    sent: u64,
    completed: u64,
    ok: u64,
    late: u64,
    dropped: u64,
    bytes_in: u64,
    bytes_out: u64,
    connections: u64,
    errors: [u64; 8],
    cache: [u64; CACHE_STATUS_COUNT],
    cache_bytes: [u64; CACHE_STATUS_COUNT],
    logical: u64,
    first_ok: u64,
    final_ok: u64,
    attempts: u64,
}

/// The error kinds of version 3, in its order.
const KINDS_V3: [ErrorKind; 8] = [
    ErrorKind::Refused,
    ErrorKind::ConnectTimeout,
    ErrorKind::RequestTimeout,
    ErrorKind::Reset,
    ErrorKind::Tls,
    ErrorKind::Protocol,
    ErrorKind::Dns,
    ErrorKind::Other,
];

impl From<CountsV3> for Counts {
    fn from(c: CountsV3) -> Counts {
        let mut errors = [0; ERROR_KIND_COUNT];
        for (kind, n) in KINDS_V3.iter().zip(c.errors) {
            errors[*kind as usize] = n;
        }
        Counts {
            sent: c.sent,
            completed: c.completed,
            ok: c.ok,
            late: c.late,
            dropped: c.dropped,
            bytes_in: c.bytes_in,
            bytes_out: c.bytes_out,
            connections: c.connections,
            errors,
            cache: c.cache,
            cache_bytes: c.cache_bytes,
            logical: c.logical,
            first_ok: c.first_ok,
            final_ok: c.final_ok,
            attempts: c.attempts,
            ..Counts::default()
        }
    }
}

impl From<Counts> for CountsV3 {
    /// Only for tests that write version 3 files: kinds version 3 did not have are dropped.
    fn from(c: Counts) -> CountsV3 {
        CountsV3 {
            sent: c.sent,
            completed: c.completed,
            ok: c.ok,
            late: c.late,
            dropped: c.dropped,
            bytes_in: c.bytes_in,
            bytes_out: c.bytes_out,
            connections: c.connections,
            errors: KINDS_V3.map(|kind| c.errors[kind as usize]),
            cache: c.cache,
            cache_bytes: c.cache_bytes,
            logical: c.logical,
            first_ok: c.first_ok,
            final_ok: c.final_ok,
            attempts: c.attempts,
        }
    }
}

/// One key in a file of format version 3: no timeline.
type KeyedWireV3 = (String, u64, u64, Vec<u8>);

/// A recorder as format version 3 wrote it, read into today's: keys without timelines,
/// counters and example indices moved to today's error kinds, stale connection retries 0.
pub struct RecorderV3(pub Recorder);

impl<'de> Deserialize<'de> for RecorderV3 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::<KeyedWireV3, CountsV3, (), ()>::deserialize(d)?;
        let w = w.map(
            |(name, requests, failed, latency)| {
                (name, requests, failed, latency, Bounded::default(), FlowCounts::default(), None)
            },
            Counts::from,
            |i| KINDS_V3.get(usize::from(i)).map(|k| *k as u8),
            |()| Bounded::default(),
            |()| Bounded::default(),
        );
        from_wire(w).map(RecorderV3).map_err(refuse)
    }
}

impl Serialize for RecorderV3 {
    /// Only so that the version 3 record types derive both ways (tests write old files).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let w = self.0.wire().map(
            |(name, requests, failed, latency, ..)| (name, requests, failed, latency),
            CountsV3::from,
            |i| KINDS_V3.iter().position(|k| *k as u8 == i).map(|p| p as u8),
            |_| (),
            |_| (),
        );
        w.serialize(s)
    }
}
