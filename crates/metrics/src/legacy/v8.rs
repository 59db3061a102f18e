//! The records of format version 8, as they were, read into today's: recorders without
//! the workload's intents, a footer without the sent prefix.

use crate::bounded::refuse;
use crate::recorder::{from_wire, Counts, KeyedWire, Recorder, Wire, Workload};
use crate::sample::{CACHE_STATUS_COUNT, ERROR_KIND_COUNT, PROTOCOL_COUNT};
use crate::watch::{EventRecord, WatchSample};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub(crate) struct IntervalRecord {
    pub index: u32,
    pub start_unix_ms: u64,
    pub length_ms: u32,
    pub step: u32,
    pub recorder: RecorderV8,
    pub watch: Option<WatchSample>,
}

impl From<IntervalRecord> for crate::file::IntervalRecord {
    fn from(i: IntervalRecord) -> Self {
        crate::file::IntervalRecord {
            index: i.index,
            start_unix_ms: i.start_unix_ms,
            length_ms: i.length_ms,
            step: i.step,
            recorder: i.recorder.0,
            watch: i.watch,
        }
    }
}

/// The footer of versions 3 to 8.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunFooter {
    pub ended_unix_ms: u64,
    pub attack_us: u64,
    pub wait_us: u64,
    pub cpu_user_us: u64,
    pub cpu_system_us: u64,
    pub interrupted: bool,
    pub bound_reached: bool,
    pub log_chunks_dropped: u64,
    pub peak_rss_kib: u64,
}

impl From<RunFooter> for crate::file::RunFooter {
    fn from(f: RunFooter) -> Self {
        crate::file::RunFooter {
            ended_unix_ms: f.ended_unix_ms,
            attack_us: f.attack_us,
            wait_us: f.wait_us,
            cpu_user_us: f.cpu_user_us,
            cpu_system_us: f.cpu_system_us,
            interrupted: f.interrupted,
            bound_reached: f.bound_reached,
            log_chunks_dropped: f.log_chunks_dropped,
            peak_rss_kib: f.peak_rss_kib,
            sent_prefix: 0,
            due: None,
            trace_sampled: 0,
        }
    }
}

impl From<crate::file::RunFooter> for RunFooter {
    /// Only for tests that write older files.
    fn from(f: crate::file::RunFooter) -> Self {
        RunFooter {
            ended_unix_ms: f.ended_unix_ms,
            attack_us: f.attack_us,
            wait_us: f.wait_us,
            cpu_user_us: f.cpu_user_us,
            cpu_system_us: f.cpu_system_us,
            interrupted: f.interrupted,
            bound_reached: f.bound_reached,
            log_chunks_dropped: f.log_chunks_dropped,
            peak_rss_kib: f.peak_rss_kib,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    Header(crate::legacy::v10::RunHeader),
    Interval(IntervalRecord),
    Event(EventRecord),
    Footer(RunFooter),
}

impl From<Record> for crate::file::Record {
    fn from(r: Record) -> Self {
        match r {
            Record::Header(h) => crate::file::Record::Header(h.into()),
            Record::Interval(i) => crate::file::Record::Interval(i.into()),
            Record::Event(e) => crate::file::Record::Event(e),
            Record::Footer(f) => crate::file::Record::Footer(f.into()),
        }
    }
}

/// [`Counts`] as version 8 of the results file wrote them: before the workload's intents.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct CountsV8 {
    sent: u64,
    completed: u64,
    ok: u64,
    late: u64,
    dropped: u64,
    bytes_in: u64,
    bytes_out: u64,
    connections: u64,
    errors: [u64; ERROR_KIND_COUNT],
    cache: [u64; CACHE_STATUS_COUNT],
    cache_bytes: [u64; CACHE_STATUS_COUNT],
    logical: u64,
    first_ok: u64,
    final_ok: u64,
    attempts: u64,
    stale_retries: u64,
    protocols: [u64; PROTOCOL_COUNT],
    http1_fallbacks: u64,
    streams_max: u64,
    stream_cap: u64,
    send_stalls: u64,
    recv_stalls: u64,
    stream_retries: u64,
}

impl From<CountsV8> for Counts {
    fn from(c: CountsV8) -> Counts {
        Counts {
            sent: c.sent,
            completed: c.completed,
            ok: c.ok,
            rejected: 0,
            late: c.late,
            dropped: c.dropped,
            bytes_in: c.bytes_in,
            bytes_out: c.bytes_out,
            connections: c.connections,
            errors: c.errors,
            cache: c.cache,
            cache_bytes: c.cache_bytes,
            logical: c.logical,
            first_ok: c.first_ok,
            final_ok: c.final_ok,
            attempts: c.attempts,
            stale_retries: c.stale_retries,
            protocols: c.protocols,
            http1_fallbacks: c.http1_fallbacks,
            streams_max: c.streams_max,
            stream_cap: c.stream_cap,
            send_stalls: c.send_stalls,
            recv_stalls: c.recv_stalls,
            stream_retries: c.stream_retries,
            workload: Workload::default(),
        }
    }
}

impl From<Counts> for CountsV8 {
    /// Only for tests that write older files: the intents are dropped.
    fn from(c: Counts) -> CountsV8 {
        CountsV8 {
            sent: c.sent,
            completed: c.completed,
            ok: c.ok + c.rejected,
            late: c.late,
            dropped: c.dropped,
            bytes_in: c.bytes_in,
            bytes_out: c.bytes_out,
            connections: c.connections,
            errors: c.errors,
            cache: c.cache,
            cache_bytes: c.cache_bytes,
            logical: c.logical,
            first_ok: c.first_ok,
            final_ok: c.final_ok,
            attempts: c.attempts,
            stale_retries: c.stale_retries,
            protocols: c.protocols,
            http1_fallbacks: c.http1_fallbacks,
            streams_max: c.streams_max,
            stream_cap: c.stream_cap,
            send_stalls: c.send_stalls,
            recv_stalls: c.recv_stalls,
            stream_retries: c.stream_retries,
        }
    }
}

/// A recorder as format version 8 wrote it, read into today's: no workload intents.
pub struct RecorderV8(pub Recorder);

impl<'de> Deserialize<'de> for RecorderV8 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::<KeyedWire, CountsV8>::deserialize(d)?;
        let w = w.map(|k| k, Counts::from, Some, |f| f, |r| r);
        from_wire(w).map(|r| RecorderV8(r.count_rejections())).map_err(refuse)
    }
}

impl Serialize for RecorderV8 {
    /// Only so that the version 8 record types derive both ways (tests write old files).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.wire().map(|k| k, CountsV8::from, Some, |f| f, |r| r).serialize(s)
    }
}
