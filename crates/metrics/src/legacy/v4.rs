//! The records of format version 4, as they were, read into today's: recorders without
//! flows.

use crate::bounded;
use crate::bounded::{refuse, Bounded};
use crate::legacy::v7::CountsV7;
use crate::recorder::{from_wire, Counts, FlowCounts, KeyTicks, Recorder, Wire};
use crate::watch::{EventRecord, WatchSample};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub(crate) struct IntervalRecord {
    pub index: u32,
    pub start_unix_ms: u64,
    pub length_ms: u32,
    pub step: u32,
    pub recorder: RecorderV4,
    pub watch: Option<WatchSample>,
}

#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct RunHeader {
    pub barrage_version: String,
    pub started_unix_ms: u64,
    pub host: String,
    pub boot_id: String,
    pub mode: crate::file::Mode,
    #[serde(deserialize_with = "bounded::vec::<crate::file::UrlLimit, _, _>")]
    pub urls: Vec<String>,
    pub settings_json: String,
    #[serde(deserialize_with = "bounded::vec::<crate::file::StepLimit, _, _>")]
    pub steps: Vec<crate::file::StepInfo>,
    pub threads: u32,
    pub insecure: bool,
}

impl From<RunHeader> for crate::file::RunHeader {
    fn from(h: RunHeader) -> Self {
        crate::legacy::v6::RunHeader {
            barrage_version: h.barrage_version,
            started_unix_ms: h.started_unix_ms,
            host: h.host,
            boot_id: h.boot_id,
            mode: h.mode,
            urls: h.urls,
            settings_json: h.settings_json,
            steps: h.steps,
            threads: h.threads,
            insecure: h.insecure,
            groups: Vec::new(),
        }
        .into()
    }
}

#[derive(Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    Header(RunHeader),
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

/// One key in a file of format version 4: no flow counts.
type KeyedWireV4 = (String, u64, u64, Vec<u8>, KeyTicks);

/// A recorder as format version 4 wrote it, read into today's: no flows, keys without flow
/// counts.
pub struct RecorderV4(pub Recorder);

impl<'de> Deserialize<'de> for RecorderV4 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::<KeyedWireV4, CountsV7, (), ()>::deserialize(d)?;
        let w = w.map(
            |(name, requests, failed, latency, ticks)| {
                (name, requests, failed, latency, ticks, FlowCounts::default(), None)
            },
            Counts::from,
            Some,
            |()| Bounded::default(),
            |()| Bounded::default(),
        );
        from_wire(w).map(RecorderV4).map_err(refuse)
    }
}

impl Serialize for RecorderV4 {
    /// Only so that the version 4 record types derive both ways (tests write old files).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let w = self.0.wire().map(
            |(name, requests, failed, latency, ticks, ..)| (name, requests, failed, latency, ticks),
            CountsV7::from,
            Some,
            |_| (),
            |_| (),
        );
        w.serialize(s)
    }
}
