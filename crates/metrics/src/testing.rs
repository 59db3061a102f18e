//! Fixtures for the tests of every crate: a [`Sample`], a [`RunHeader`] and an
//! [`IntervalRecord`] holding the values a test does not care about, each test setting the
//! ones it does with `..`. Behind the `testing` feature, which only dev-dependencies turn on,
//! so that a field added to one of them is one change here, not one per test.

use crate::file::{IntervalRecord, Mode, RunHeader, StepInfo};
use crate::{CacheStatus, Outcome, Recorder, Sample};
use std::time::Duration;

/// A request intended and sent at the run's start that ended `latency` later, answered
/// `outcome`: on time, no phases, 100 bytes in and 10 out, no cache status, intent or
/// origin, not rejected.
pub fn sample(latency: Duration, outcome: Outcome) -> Sample {
    Sample {
        intended: Duration::ZERO,
        started: Duration::ZERO,
        ended: latency,
        phases: [None; 6],
        outcome,
        bytes_in: 100,
        bytes_out: 10,
        late: false,
        cache: CacheStatus::Unknown,
        intent: Default::default(),
        origin: Default::default(),
        rejected: false,
    }
}

/// The header of a test run started at `started_unix_ms`: open loop, one thread on host `h`
/// (boot `b`), one URL (`http://127.0.0.1:1/`), settings `{}`, one step `10/s` from the
/// start, no groups, not split.
pub fn header(started_unix_ms: u64) -> RunHeader {
    RunHeader {
        barrage_version: "test".into(),
        started_unix_ms,
        host: "h".into(),
        boot_id: "b".into(),
        mode: Mode::Open,
        urls: vec!["http://127.0.0.1:1/".into()],
        settings_json: "{}".into(),
        steps: vec![StepInfo { label: "10/s".into(), start_ms: 0 }],
        threads: 1,
        insecure: false,
        groups: Vec::new(),
        launch: Default::default(),
    }
}

/// Interval `index` of a run, `recorder` over one second from `start_unix_ms`, in its first
/// step, nothing watched.
pub fn interval(index: u32, start_unix_ms: u64, recorder: Recorder) -> IntervalRecord {
    IntervalRecord { index, start_unix_ms, length_ms: 1000, step: 0, recorder, watch: None }
}
