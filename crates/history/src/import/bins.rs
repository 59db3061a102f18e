//! Per-request results (Vegeta's, JMeter's) binned into one-second intervals by each
//! request's start, as barrage's own intervals are.
//!
//! A histogram with barrage's bounds takes 184 KiB, so a day of seconds cannot all be open at
//! once. Requests come nearly in order (a tool writes each as it finishes, so one is out of
//! place by at most its latency): the newest [`OPEN`] seconds keep live histograms, older ones
//! are compressed as the history stores them. A request for a second already compressed
//! waits in a bounded list of stragglers, merged into its second in one pass per second
//! touched when the list fills, so time stays linear in the number of requests.

use super::Found;
use crate::entry::{Interval, MAX_INTERVALS};
use barrage_metrics::recorder::{decode_histogram, encode_histogram, new_histogram};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Seconds kept open: a minute of disorder, 11 MiB of histograms.
const OPEN: usize = 64;

/// Stragglers held before they are merged into their compressed seconds.
const STRAGGLERS: usize = 1 << 20;

/// One second's requests.
struct Bin {
    hist: Histogram<u64>,
    completed: u64,
    ok: u64,
}

/// One second's requests, compressed.
struct Sealed {
    bytes: Vec<u8>,
    completed: u64,
    ok: u64,
}

/// Requests binned by the second they started in; the whole run's histogram beside.
pub(super) struct Bins {
    total: Histogram<u64>,
    open: BTreeMap<i64, Bin>,
    sealed: BTreeMap<i64, Sealed>,
    stragglers: Vec<(i64, u64)>,
    /// Histograms of sealed seconds, emptied, for the next ones.
    spare: Vec<Histogram<u64>>,
    /// The earliest second seen: intervals are kept for a day from it.
    first_second: i64,
    first_start_us: i64,
    last_end_us: i64,
    completed: u64,
    ok: u64,
}

impl Bins {
    pub fn new() -> Bins {
        Bins {
            total: new_histogram(),
            open: BTreeMap::new(),
            sealed: BTreeMap::new(),
            stragglers: Vec::new(),
            spare: Vec::new(),
            first_second: i64::MAX,
            first_start_us: i64::MAX,
            last_end_us: i64::MIN,
            completed: 0,
            ok: 0,
        }
    }

    /// Requests recorded.
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// Records a request that started at `start_us` (µs since the Unix epoch) and took
    /// `latency_us`, `ok` when it succeeded. Latencies past an hour count as an hour.
    pub fn record(&mut self, start_us: i64, latency_us: u64, ok: bool) {
        self.total.saturating_record(latency_us);
        self.completed += 1;
        self.ok += u64::from(ok);
        self.first_start_us = self.first_start_us.min(start_us);
        let end = start_us.saturating_add(i64::try_from(latency_us).unwrap_or(i64::MAX));
        self.last_end_us = self.last_end_us.max(end);
        let second = start_us.div_euclid(1_000_000);
        if second < self.first_second {
            self.first_second = second;
            self.forget_after(second.saturating_add(MAX_INTERVALS as i64));
        }
        if second >= self.first_second.saturating_add(MAX_INTERVALS as i64) {
            // Past the first day: in the figures, not in the intervals.
            return;
        }
        if let Some(bin) = self.open.get_mut(&second) {
            bin.hist.saturating_record(latency_us);
            bin.completed += 1;
            bin.ok += u64::from(ok);
        } else if let Some(sealed) = self.sealed.get_mut(&second) {
            sealed.completed += 1;
            sealed.ok += u64::from(ok);
            self.stragglers.push((second, latency_us));
            if self.stragglers.len() >= STRAGGLERS {
                self.merge_stragglers();
            }
        } else {
            let mut hist = self.spare.pop().unwrap_or_else(new_histogram);
            hist.saturating_record(latency_us);
            self.open.insert(second, Bin { hist, completed: 1, ok: u64::from(ok) });
            if self.open.len() > OPEN {
                self.seal_oldest();
            }
        }
    }

    /// Drops the seconds from `end` on: a request earlier than all before moved the day.
    fn forget_after(&mut self, end: i64) {
        for (_, bin) in self.open.split_off(&end) {
            self.spare.push(bin.hist);
        }
        self.sealed.split_off(&end);
        self.stragglers.retain(|&(s, _)| s < end);
    }

    fn seal_oldest(&mut self) {
        let Some((second, mut bin)) = self.open.pop_first() else { return };
        let bytes = encode_histogram(&bin.hist);
        bin.hist.reset();
        self.spare.push(bin.hist);
        self.sealed.insert(second, Sealed { bytes, completed: bin.completed, ok: bin.ok });
    }

    /// Merges the stragglers into their compressed seconds: each second touched is decoded
    /// and encoded once.
    fn merge_stragglers(&mut self) {
        self.stragglers.sort_unstable();
        let mut at = 0;
        while at < self.stragglers.len() {
            let second = self.stragglers[at].0;
            let run = self.stragglers[at..].iter().take_while(|s| s.0 == second).count();
            if let Some(sealed) = self.sealed.get_mut(&second) {
                // Encoded here from a histogram of the same bounds: it decodes.
                let mut hist = decode_histogram(&sealed.bytes).unwrap_or_else(|_| new_histogram());
                for &(_, v) in &self.stragglers[at..at + run] {
                    hist.saturating_record(v);
                }
                sealed.bytes = encode_histogram(&hist);
            }
            at += run;
        }
        self.stragglers.clear();
    }

    /// The figures of every request and the intervals of the first day, one a second from
    /// the earliest start, seconds without requests empty. The latency is the tool's (it
    /// does not correct for coordinated omission), so it is both the corrected and the
    /// service latency.
    pub fn finish(mut self) -> Found {
        while !self.open.is_empty() {
            self.seal_oldest();
        }
        self.merge_stragglers();
        let mut found = Found::default();
        found.latency(&self.total);
        found.counts(self.completed, self.ok);
        let span_s = (self.last_end_us - self.first_start_us) as f64 / 1e6;
        if span_s > 0.0 {
            found.set("throughput", self.ok as f64 / span_s);
        }
        found.started_ms = Some(self.first_start_us.div_euclid(1000).max(0) as u64);
        found.intervals = self.intervals();
        found
    }

    fn intervals(&mut self) -> Vec<Interval> {
        let Some((&last, _)) = self.sealed.last_key_value() else { return Vec::new() };
        let empty = encode_histogram(&new_histogram());
        (self.first_second..=last)
            .enumerate()
            .map(|(index, second)| {
                let s = self.sealed.remove(&second);
                let (bytes, completed, ok) = s.map_or((empty.clone(), 0, 0), |s| (s.bytes, s.completed, s.ok));
                Interval {
                    index: index as u32,
                    start_ms: (second.max(0) as u64) * 1000,
                    length_ms: 1000,
                    completed,
                    ok,
                    corrected: bytes.clone(),
                    service: bytes,
                }
            })
            .collect()
    }
}
