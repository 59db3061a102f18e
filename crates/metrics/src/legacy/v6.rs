//! The records of format version 6, as they were, read into today's: a header without how
//! the run was launched, recorders as version 7's.

use crate::bounded;
use crate::watch::EventRecord;
use serde::{Deserialize, Serialize};

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
    #[serde(deserialize_with = "bounded::vec::<crate::file::GroupLimit, _, _>")]
    pub groups: Vec<crate::legacy::v10::GroupInfo>,
}

#[derive(Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    Header(RunHeader),
    Interval(crate::legacy::v7::IntervalRecord),
    Event(EventRecord),
    Footer(crate::legacy::v8::RunFooter),
}

impl From<RunHeader> for crate::file::RunHeader {
    fn from(h: RunHeader) -> Self {
        crate::file::RunHeader {
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
            groups: crate::legacy::v10::groups(h.groups),
            launch: crate::file::Launch { ready_unix_us: h.started_unix_ms * 1000, ..Default::default() },
        }
    }
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
