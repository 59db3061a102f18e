//! A recorder's requests in time: finished requests per tenth of a second ([`Timeline`]) and
//! a few of them each tick for the scatter plot ([`RequestPoint`]).

use crate::bounded::Bounded;
use crate::limits::MAX_INTERVAL_TICKS;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Individual requests kept per tick per recorder for the scatter plot: up to 100 a second
/// per engine thread, a few KiB per interval.
pub const SAMPLES_PER_TICK: u32 = 10;

/// One request of the scatter plot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestPoint {
    /// When it finished, ms from the run's start.
    pub ended_ms: u32,
    /// Its corrected latency, µs.
    pub latency_us: u32,
    /// It succeeded (2xx, 3xx).
    pub ok: bool,
}

/// Length of a [`Tick`].
pub const TICK: Duration = Duration::from_millis(100);

/// Requests that finished in one tenth of a second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tick {
    /// Tenths of a second from the run's start to the tick's start.
    pub tick: u32,
    /// Successful responses (2xx, 3xx).
    pub ok: u32,
    /// The rest: errors, 4xx and 5xx.
    pub failed: u32,
    /// The slowest of them, corrected latency in µs (saturating at about 71 minutes).
    pub max_us: u32,
}

/// Finished requests per [`TICK`], in tick order. An interval holds about ten ticks, so
/// recording touches the last one and allocates about once per tick, never per request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline(pub(super) Vec<Tick>);

impl std::ops::Deref for Timeline {
    type Target = [Tick];
    fn deref(&self) -> &[Tick] {
        &self.0
    }
}

impl Timeline {
    /// Counts a request that finished `ended` after the run's start, `latency_us` after its
    /// intended start; returns how many requests its tick now holds.
    pub fn record(&mut self, ended: Duration, ok: bool, latency_us: u64) -> u32 {
        self.record_n(ended, ok, latency_us, 1)
    }

    /// Counts `n` requests as [`Timeline::record`] counts one.
    pub fn record_n(&mut self, ended: Duration, ok: bool, latency_us: u64, n: u32) -> u32 {
        let tick = u32::try_from(ended.as_millis() / TICK.as_millis()).unwrap_or(u32::MAX);
        let t = self.slot(tick);
        if ok {
            t.ok = t.ok.saturating_add(n);
        } else {
            t.failed = t.failed.saturating_add(n);
        }
        t.max_us = t.max_us.max(u32::try_from(latency_us).unwrap_or(u32::MAX));
        t.ok.saturating_add(t.failed)
    }

    fn slot(&mut self, tick: u32) -> &mut Tick {
        let i = match self.0.iter().rposition(|t| t.tick <= tick) {
            Some(i) if self.0[i].tick == tick => i,
            found => {
                let at = found.map_or(0, |i| i + 1);
                self.0.insert(at, Tick { tick, ..Tick::default() });
                at
            }
        };
        &mut self.0[i]
    }

    /// Adds another timeline tick by tick.
    pub fn add(&mut self, other: &Timeline) {
        for t in &other.0 {
            let mine = self.slot(t.tick);
            mine.ok += t.ok;
            mine.failed += t.failed;
            mine.max_us = mine.max_us.max(t.max_us);
        }
    }

    /// The ticks as a results file holds them: at most [`MAX_INTERVAL_TICKS`], the most a
    /// reader takes, which an interval's timeline never comes near.
    pub(super) fn written<L>(&self) -> Bounded<Tick, L> {
        self.0.iter().take(MAX_INTERVAL_TICKS).copied().collect()
    }

    /// Moves every tick `by` ticks later: to line up runs that started at different times.
    pub fn shift(&mut self, by: u32) {
        for t in &mut self.0 {
            t.tick = t.tick.saturating_add(by);
        }
    }
}
