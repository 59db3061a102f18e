//! The records of format version 10, as they were, read into today's: a launch without
//! the run's id (all its URLs in the header, which today's reader takes as they are).

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
    pub groups: Vec<GroupInfo>,
    pub launch: Launch,
}

/// A group as version 10 and before told it: without its iterations.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct GroupInfo {
    pub name: String,
    pub flow: String,
    #[serde(deserialize_with = "bounded::vec::<crate::file::GroupStepLimit, _, _>")]
    pub steps: Vec<String>,
    pub load: String,
    pub rate: Option<f64>,
    pub workers: Option<u32>,
    pub start_ms: u64,
    pub end_ms: Option<u64>,
}

impl From<GroupInfo> for crate::file::GroupInfo {
    fn from(g: GroupInfo) -> Self {
        crate::file::GroupInfo {
            name: g.name,
            flow: g.flow,
            steps: g.steps,
            load: g.load,
            rate: g.rate,
            workers: g.workers,
            start_ms: g.start_ms,
            end_ms: g.end_ms,
            iterations: None,
        }
    }
}

/// Version 10's groups as today's.
pub(crate) fn groups(old: Vec<GroupInfo>) -> Vec<crate::file::GroupInfo> {
    old.into_iter().map(Into::into).collect()
}

#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Launch {
    pub shard: Option<(u32, u32)>,
    pub plan_digest: String,
    pub start_at_unix_us: Option<u64>,
    pub ready_unix_us: u64,
    pub clock_offset_us: Option<i64>,
}

impl From<RunHeader> for crate::file::RunHeader {
    fn from(h: RunHeader) -> Self {
        let l = h.launch;
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
            groups: groups(h.groups),
            launch: crate::file::Launch {
                shard: l.shard,
                plan_digest: l.plan_digest,
                start_at_unix_us: l.start_at_unix_us,
                ready_unix_us: l.ready_unix_us,
                clock_offset_us: l.clock_offset_us,
                run_id: String::new(),
            },
        }
    }
}

/// Today's header as version 10 wrote it: without the run's id.
#[cfg(test)]
impl From<&crate::file::RunHeader> for RunHeader {
    fn from(h: &crate::file::RunHeader) -> Self {
        let l = h.launch.clone();
        RunHeader {
            barrage_version: h.barrage_version.clone(),
            started_unix_ms: h.started_unix_ms,
            host: h.host.clone(),
            boot_id: h.boot_id.clone(),
            mode: h.mode,
            urls: h.urls.clone(),
            settings_json: h.settings_json.clone(),
            steps: h.steps.clone(),
            threads: h.threads,
            insecure: h.insecure,
            groups: h
                .groups
                .iter()
                .map(|g| GroupInfo {
                    name: g.name.clone(),
                    flow: g.flow.clone(),
                    steps: g.steps.clone(),
                    load: g.load.clone(),
                    rate: g.rate,
                    workers: g.workers,
                    start_ms: g.start_ms,
                    end_ms: g.end_ms,
                })
                .collect(),
            launch: Launch {
                shard: l.shard,
                plan_digest: l.plan_digest,
                start_at_unix_us: l.start_at_unix_us,
                ready_unix_us: l.ready_unix_us,
                clock_offset_us: l.clock_offset_us,
            },
        }
    }
}

#[derive(Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    Header(RunHeader),
    Interval(crate::file::IntervalRecord),
    Event(EventRecord),
    Footer(crate::legacy::v11::RunFooter),
}

impl From<Record> for crate::file::Record {
    fn from(r: Record) -> Self {
        match r {
            Record::Header(h) => crate::file::Record::Header(h.into()),
            Record::Interval(i) => crate::file::Record::Interval(i),
            Record::Event(e) => crate::file::Record::Event(e),
            Record::Footer(f) => crate::file::Record::Footer(f.into()),
        }
    }
}
