//! The records of format version 7, as they were, read into today's: recorders without
//! connections by protocol and without the HTTP/2 figures.

use crate::bounded::refuse;
use crate::recorder::{from_wire, Counts, KeyedWire, Recorder, Wire};
use crate::sample::{CACHE_STATUS_COUNT, ERROR_KIND_COUNT};
use crate::watch::{EventRecord, WatchSample};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub(crate) struct IntervalRecord {
    pub index: u32,
    pub start_unix_ms: u64,
    pub length_ms: u32,
    pub step: u32,
    pub recorder: RecorderV7,
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

#[derive(Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    Header(crate::legacy::v10::RunHeader),
    Interval(IntervalRecord),
    Event(EventRecord),
    Footer(crate::legacy::v8::RunFooter),
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

/// [`Counts`] as versions 4 to 7 of the results file wrote them: before connections by
/// protocol and the HTTP/2 figures.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct CountsV7 {
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
}

impl From<CountsV7> for Counts {
    fn from(c: CountsV7) -> Counts {
        Counts {
            sent: c.sent,
            completed: c.completed,
            ok: c.ok,
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
            ..Counts::default()
        }
    }
}

impl From<Counts> for CountsV7 {
    /// Only for tests that write older files: the figures those versions did not have are
    /// dropped.
    fn from(c: Counts) -> CountsV7 {
        CountsV7 {
            sent: c.sent,
            completed: c.completed,
            ok: c.ok,
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
        }
    }
}

/// A recorder as format versions 6 and 7 wrote it, read into today's: no connections by
/// protocol, no HTTP/2 figures.
pub struct RecorderV7(pub Recorder);

impl<'de> Deserialize<'de> for RecorderV7 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::<KeyedWire, CountsV7>::deserialize(d)?;
        let w = w.map(|k| k, Counts::from, Some, |f| f, |r| r);
        from_wire(w).map(|r| RecorderV7(r.count_rejections())).map_err(refuse)
    }
}

impl Serialize for RecorderV7 {
    /// Only so that the version 7 record types derive both ways (tests write old files).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.wire().map(|k| k, CountsV7::from, Some, |f| f, |r| r).serialize(s)
    }
}
