//! The records of format version 5, as they were, read into today's: recorders without
//! server replies.

use crate::bounded::{refuse, Bounded};
use crate::legacy::v7::CountsV7;
use crate::recorder::{from_wire, Counts, FlowLimit, KeyedWire, Keys, Recorder, Wire};
use crate::watch::{EventRecord, WatchSample};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub(crate) struct IntervalRecord {
    pub index: u32,
    pub start_unix_ms: u64,
    pub length_ms: u32,
    pub step: u32,
    pub recorder: RecorderV5,
    pub watch: Option<WatchSample>,
}

#[derive(Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    Header(crate::legacy::v6::RunHeader),
    Interval(IntervalRecord),
    Event(EventRecord),
    Footer(crate::legacy::v8::RunFooter),
}

impl From<Record> for crate::file::Record {
    fn from(r: Record) -> Self {
        match r {
            Record::Header(h) => crate::file::Record::Header(h.into()),
            Record::Interval(i) => crate::file::Record::Interval(crate::file::IntervalRecord {
                index: i.index,
                start_unix_ms: i.start_unix_ms,
                length_ms: i.length_ms,
                step: i.step,
                recorder: i.recorder.0,
                watch: i.watch,
            }),
            Record::Event(e) => crate::file::Record::Event(e),
            Record::Footer(f) => crate::file::Record::Footer(f.into()),
        }
    }
}

/// A recorder as format version 5 wrote it, read into today's: no server replies.
pub struct RecorderV5(pub Recorder);

impl<'de> Deserialize<'de> for RecorderV5 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::<KeyedWire, CountsV7, Keys<FlowLimit>, ()>::deserialize(d)?;
        let w = w.map(|k| k, Counts::from, Some, |f| f, |()| Bounded::default());
        from_wire(w).map(|r| RecorderV5(r.count_rejections())).map_err(refuse)
    }
}

impl Serialize for RecorderV5 {
    /// Only so that the version 5 record types derive both ways (tests write old files).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.wire().map(|k| k, CountsV7::from, Some, |f| f, |_| ()).serialize(s)
    }
}
