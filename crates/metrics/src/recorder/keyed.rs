//! [`Keyed`]: a recorder's requests broken down by a key (backend, name, method, flow, reply
//! class), bounded to [`MAX_KEYS`] so that a key taken from the wire cannot make memory grow.

use super::wire::{decode, encode, Keys};
use super::{new_histogram, us, Figures, Timeline};
use crate::sample::Sample;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Most distinct keys (backends, names, methods, reply classes) one recorder keeps apart; later ones are
/// counted as `(other)`, so a header carrying a request id cannot make memory grow per request.
pub const MAX_KEYS: usize = 64;
const OTHER_KEY: &str = "(other)";

/// The requests of one key: a backend, a request name or a method.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyedStats {
    /// The key (a backend as its header named it, a target's name, a method).
    pub name: String,
    /// Finished requests.
    pub requests: u64,
    /// Of those, not successful (errors, 4xx, 5xx).
    pub failed: u64,
    /// Their corrected latency.
    pub latency: Histogram<u64>,
    /// When they finished, per tenth of a second; kept for backends only (see
    /// [`Keyed::timed`]), to find the gaps in a backend's answers.
    pub timeline: Timeline,
    /// How the flows of a step or group ended (zero outside scenarios).
    pub flow: FlowCounts,
    /// Of a step: what its first failed check or capture saw, to tell why.
    pub example: Option<String>,
}

/// What flows add to a key's figures: of a step (its name), how many of its requests failed
/// a check or a capture and how many times it was skipped; of a group (a flow's key), how
/// many of its flows ended by a failed check or capture, how many steps they skipped and
/// how many arrivals were dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowCounts {
    /// A check was false.
    pub check_failed: u64,
    /// A capture found nothing.
    pub capture_failed: u64,
    /// Steps not sent because an earlier step of their flow failed.
    pub skipped: u64,
    /// Open loop: flows due that never started (every slot stayed busy to the end), of a
    /// group; of a name or a method, its requests due that were never sent (a dropped
    /// flow's first step, a dropped request's target).
    pub dropped: u64,
    /// Flows the end of their group's window stopped before their last step: not counted
    /// as finished (their steps sent so far are), as a request in flight at the end is not.
    pub unfinished: u64,
}

impl std::ops::AddAssign<&FlowCounts> for FlowCounts {
    fn add_assign(&mut self, o: &FlowCounts) {
        self.check_failed += o.check_failed;
        self.capture_failed += o.capture_failed;
        self.skipped += o.skipped;
        self.dropped += o.dropped;
        self.unfinished += o.unfinished;
    }
}

/// How a step or a flow failed besides its requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowFailure {
    /// A check was false.
    Check,
    /// A capture found nothing.
    Capture,
    /// A request failed (no response, or a status no check allowed).
    Request,
}

/// Requests broken down by a key, in order of first appearance, at most [`MAX_KEYS`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Keyed {
    pub(super) stats: Vec<KeyedStats>,
    /// Each key keeps its own [`Timeline`].
    timed: bool,
}

impl std::ops::Deref for Keyed {
    type Target = [KeyedStats];
    fn deref(&self) -> &[KeyedStats] {
        &self.stats
    }
}

impl Keyed {
    /// Keys that also keep when their requests finished, per tenth of a second: backends,
    /// so an outage shorter than an interval, or one that straddles two, shows at its length.
    pub fn timed() -> Self {
        Keyed { stats: Vec::new(), timed: true }
    }

    /// Counts a finished request under `key`. Allocates only the first time a key appears
    /// (and, when timed, once per tenth of a second).
    pub fn record(&mut self, key: &[u8], s: &Sample) {
        self.record_entry(key, s);
    }

    /// Counts a finished request under `key` as [`Keyed::record`] does, and keeps `example`
    /// as the key's example while it has none: the closure runs once per key and
    /// recorder, so a reply is formatted once per class and interval, not once per request.
    pub fn record_example(&mut self, key: &[u8], s: &Sample, example: impl FnOnce() -> String) {
        let b = self.record_entry(key, s);
        if b.example.is_none() {
            b.example = Some(example());
        }
    }

    /// [`Keyed::record`], returning the key's stats.
    pub(super) fn record_entry(&mut self, key: &[u8], s: &Sample) -> &mut KeyedStats {
        self.record_figures(key, &Figures::of(s, 1))
    }

    /// Counts `f.n` finished requests, their figures worked out already, under `key`.
    pub(super) fn record_figures(&mut self, key: &[u8], f: &Figures) -> &mut KeyedStats {
        let timed = self.timed;
        let b = self.entry(key);
        b.requests += f.n;
        b.failed += f.n * u64::from(!f.ok);
        b.latency.saturating_record_n(f.corrected_us, f.n);
        if timed {
            b.timeline.record_n(f.ended, f.ok, f.corrected_us, f.tick_n());
        }
        b
    }

    /// Counts the last request recorded under `key` as failed by a check or a capture (it
    /// was recorded as failed already: its sample was [`Sample::rejected`]); `example` says
    /// what it saw, made only while the key has none.
    pub fn mark(&mut self, key: &[u8], failure: FlowFailure, example: impl FnOnce() -> String) {
        let b = self.entry(key);
        if b.example.is_none() && failure != FlowFailure::Request {
            b.example = Some(example());
        }
        match failure {
            FlowFailure::Check => b.flow.check_failed += 1,
            FlowFailure::Capture => b.flow.capture_failed += 1,
            FlowFailure::Request => {}
        }
    }

    /// Counts a step of `key` as skipped: never sent, in no latency.
    pub fn skip(&mut self, key: &[u8]) {
        self.entry(key).flow.skipped += 1;
    }

    /// Counts a finished flow under its group's `key`: its latency from its intended start
    /// to its last step's end, how it failed if it did, and the steps it skipped; `ended`
    /// (from the run's start) goes on the key's timeline, which says when a group of
    /// iterations ended.
    pub fn record_flow(
        &mut self,
        key: &[u8],
        failure: Option<FlowFailure>,
        latency: Duration,
        skipped: u64,
        ended: Duration,
    ) {
        let timed = self.timed;
        let b = self.entry(key);
        b.requests += 1;
        b.failed += u64::from(failure.is_some());
        b.latency.saturating_record(us(latency));
        if timed {
            b.timeline.record(ended, failure.is_none(), us(latency));
        }
        match failure {
            Some(FlowFailure::Check) => b.flow.check_failed += 1,
            Some(FlowFailure::Capture) => b.flow.capture_failed += 1,
            _ => {}
        }
        b.flow.skipped += skipped;
    }

    /// Counts a flow of `key` that the end of its window stopped before its last step.
    pub fn record_unfinished(&mut self, key: &[u8]) {
        self.entry(key).flow.unfinished += 1;
    }

    /// Counts flows of `key` (a group), or requests of `key` (a name, a method), that were
    /// due but never started.
    pub fn record_dropped(&mut self, key: &[u8], n: u64) {
        self.entry(key).flow.dropped += n;
    }

    pub(super) fn entry(&mut self, key: &[u8]) -> &mut KeyedStats {
        let i = match self.stats.iter().position(|b| b.name.as_bytes() == key) {
            Some(i) => i,
            None => self.slot(&String::from_utf8_lossy(key)),
        };
        &mut self.stats[i]
    }

    /// Moves every key's timeline `by` ticks later (see [`Timeline::shift`]).
    pub fn shift(&mut self, by: u32) {
        self.stats.iter_mut().for_each(|b| b.timeline.shift(by));
    }

    /// Drops the timelines, for a cumulative recorder that draws none of them.
    pub fn forget_timelines(&mut self) {
        self.stats.iter_mut().for_each(|b| b.timeline = Timeline::default());
    }

    /// The keys' examples as they may be written: a server's reply may quote what it was
    /// sent.
    pub fn redact_examples(&mut self, r: &crate::secrets::Redaction) {
        for example in self.stats.iter_mut().filter_map(|b| b.example.as_mut()) {
            if let std::borrow::Cow::Owned(shown) = r.text(example) {
                *example = shown;
            }
        }
    }

    /// The index of `key`'s stats, created if there is still room, else `(other)`'s.
    pub(super) fn slot(&mut self, key: &str) -> usize {
        if let Some(i) = self.stats.iter().position(|b| b.name == key) {
            return i;
        }
        let key = if self.stats.len() < MAX_KEYS - 1 { key } else { OTHER_KEY };
        if let Some(i) = self.stats.iter().position(|b| b.name == key) {
            return i;
        }
        self.stats.push(KeyedStats {
            name: key.to_string(),
            requests: 0,
            failed: 0,
            latency: new_histogram(),
            timeline: Timeline::default(),
            flow: FlowCounts::default(),
            example: None,
        });
        self.stats.len() - 1
    }

    pub(super) fn add(&mut self, other: &Keyed) {
        for b in &other.stats {
            let i = self.slot(&b.name);
            let mine = &mut self.stats[i];
            mine.requests += b.requests;
            mine.failed += b.failed;
            mine.latency.add(&b.latency).expect("histograms share bounds");
            mine.timeline.add(&b.timeline);
            mine.flow += &b.flow;
            if mine.example.is_none() {
                mine.example.clone_from(&b.example);
            }
        }
    }

    pub(super) fn encode<L>(&self) -> Keys<L> {
        self.stats
            .iter()
            .map(|b| {
                let (flow, example) = (b.flow, b.example.clone());
                let ticks = b.timeline.written();
                (b.name.clone(), b.requests, b.failed, encode(&b.latency), ticks, flow, example)
            })
            .collect()
    }

    pub(super) fn decode<L>(wire: Keys<L>, timed: bool) -> Result<Keyed, String> {
        let stats = wire.0.into_iter().map(|(name, requests, failed, latency, ticks, flow, example)| {
            // No recorder writes more failures than requests under a key: the file is corrupt
            // (and the summary's `requests - failed` would underflow).
            if failed > requests {
                return Err(format!("a key counts {failed} failed of {requests} requests"));
            }
            Ok(KeyedStats {
                name,
                requests,
                failed,
                latency: decode(&latency)?,
                timeline: Timeline(ticks.0),
                flow,
                example,
            })
        });
        Ok(Keyed { stats: stats.collect::<Result<_, String>>()?, timed })
    }
}
