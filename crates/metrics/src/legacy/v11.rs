//! The records of format version 11, as they were, read into today's: a footer without the
//! count of requests whose `traceparent` said sampled (`--trace-context` came after).

use crate::watch::EventRecord;
use serde::{Deserialize, Serialize};

/// The footer of versions 10 and 11: without the requests sampled.
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
    pub sent_prefix: u64,
    pub due: Option<u64>,
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
            sent_prefix: f.sent_prefix,
            due: f.due,
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
            sent_prefix: f.sent_prefix,
            due: f.due,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    Header(crate::file::RunHeader),
    Interval(crate::file::IntervalRecord),
    Event(EventRecord),
    Footer(RunFooter),
    Urls(#[serde(deserialize_with = "crate::bounded::vec::<crate::file::RecordUrlLimit, _, _>")] Vec<String>),
}

impl From<Record> for crate::file::Record {
    fn from(r: Record) -> Self {
        match r {
            Record::Header(h) => crate::file::Record::Header(h),
            Record::Interval(i) => crate::file::Record::Interval(i),
            Record::Event(e) => crate::file::Record::Event(e),
            Record::Footer(f) => crate::file::Record::Footer(f.into()),
            Record::Urls(u) => crate::file::Record::Urls(u),
        }
    }
}
