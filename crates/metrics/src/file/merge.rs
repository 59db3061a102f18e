//! Intervals read back together: each file's last interval, when a sliver, folded into the
//! one before ([`SliverFold`]), and several files' intervals merged by wall-clock second
//! ([`MergedIntervals`]), so reports and live views see the same seconds.

use super::{IntervalRecord, ResultsReader};
use crate::recorder::{Recorder, TICK};
use crate::watch::WatchSample;

/// The intervals a per-second figure is computed over, as they arrive one by one (the live
/// views): each interval itself, except that a sliver is folded into the one before it
/// ([`IntervalRecord::is_sliver`]), the same rule the summary applies.
///
/// It keeps the interval it is given rather than a copy: a recorder is megabytes of
/// histograms, and copying two a second on the collector's thread held the engine thread
/// off its core for milliseconds when they shared one.
#[derive(Default)]
pub struct SliverFold {
    last: Option<IntervalRecord>,
    sliver: Option<IntervalRecord>,
}

impl SliverFold {
    /// Takes interval `i`: returns it, and the interval to rate it over: `i` itself, or the
    /// previous interval with the sliver `i` folded in (the same index as the one shown
    /// before, so a view replaces it).
    pub fn fold(&mut self, i: IntervalRecord) -> (&IntervalRecord, &IntervalRecord) {
        let SliverFold { last, sliver } = self;
        if last.as_ref().is_some_and(|previous| i.is_sliver() && previous.index + 1 == i.index) {
            let previous = last.as_mut().expect("checked above");
            previous.absorb(&i);
            return (sliver.insert(i), previous);
        }
        let i = last.insert(i);
        (i, i)
    }
}

/// The intervals of several results files merged by wall-clock second, in time order, one
/// merged interval at a time (memory stays flat however long the runs were). Each file's
/// last interval, when it is a sliver, is first folded into the one before it
/// ([`IntervalRecord::is_sliver`]), so every figure of the summary is over at least half a
/// second; [`MergedIntervals::unfolded`] keeps the intervals as recorded.
pub struct MergedIntervals {
    readers: Vec<ResultsReader>,
    fold: bool,
    heads: Vec<Option<IntervalRecord>>,
    /// The interval read after each head, not yet known not to be a sliver.
    next: Vec<Option<IntervalRecord>>,
    origin_ms: u64,
}

/// One merged interval.
pub struct MergedInterval {
    /// Whole seconds since the earliest run's start.
    pub second: u64,
    /// Wall-clock start, ms since the Unix epoch.
    pub start_unix_ms: u64,
    /// Length in ms (the longest of the merged ones).
    pub length_ms: u32,
    /// Step index.
    pub step: u32,
    /// The samples of every file in that second.
    pub recorder: Recorder,
    /// What each file watched in that second, with the file's index in the readers.
    pub watch: Vec<(usize, WatchSample)>,
}

impl MergedIntervals {
    /// Merges the intervals of `readers` (opened, header read), slivers folded.
    pub fn new(readers: Vec<ResultsReader>) -> Self {
        Self::start(readers, true)
    }

    /// Merges the intervals of `readers` as they were recorded, slivers kept: for the
    /// HdrHistogram log, whose every line carries its true length and no rate, and which
    /// must equal the log the run wrote as it went.
    pub fn unfolded(readers: Vec<ResultsReader>) -> Self {
        Self::start(readers, false)
    }

    fn start(readers: Vec<ResultsReader>, fold: bool) -> Self {
        let origin_ms = readers.iter().map(|r| r.header.started_unix_ms).min().unwrap_or(0);
        let n = readers.len();
        let mut m = MergedIntervals { readers, fold, heads: vec![None; n], next: vec![None; n], origin_ms };
        for k in 0..n {
            m.next[k] = m.readers[k].next_interval();
            m.heads[k] = m.pull(k);
        }
        m
    }

    /// The readers, to look at headers, footers and warnings (complete once iteration ended).
    pub fn readers(&self) -> &[ResultsReader] {
        &self.readers
    }

    /// File `k`'s next interval, with the sliver that follows it, if any, folded in.
    fn pull(&mut self, k: usize) -> Option<IntervalRecord> {
        let mut i = self.next[k].take()?;
        self.next[k] = self.readers[k].next_interval();
        while let Some(sliver) = self.next[k].take_if(|n| self.fold && n.is_sliver()) {
            i.absorb(&sliver);
            self.next[k] = self.readers[k].next_interval();
        }
        Some(i)
    }

    fn second_of(&self, i: &IntervalRecord) -> u64 {
        // Round to the nearest second so runs started a few ms apart line up.
        (i.start_unix_ms.saturating_sub(self.origin_ms) + 500) / 1000
    }
}

impl Iterator for MergedIntervals {
    type Item = MergedInterval;

    fn next(&mut self) -> Option<MergedInterval> {
        let second = self.heads.iter().flatten().map(|i| self.second_of(i)).min()?;
        let mut merged: Option<MergedInterval> = None;
        for k in 0..self.heads.len() {
            while self.heads[k].as_ref().is_some_and(|i| self.second_of(i) == second) {
                let mut i = self.heads[k].take().expect("checked above");
                self.heads[k] = self.pull(k);
                // Ticks count from each run's own start: line them up on the earliest.
                let late_ms = self.readers[k].header.started_unix_ms - self.origin_ms;
                let late_ticks = (late_ms / TICK.as_millis() as u64) as u32;
                i.recorder.timeline.shift(late_ticks);
                i.recorder.backends.shift(late_ticks);
                for p in &mut i.recorder.samples {
                    p.ended_ms = p.ended_ms.saturating_add(late_ms as u32);
                }
                let watch = i.watch.take().map(|w| (k, w));
                match merged.as_mut() {
                    None => {
                        merged = Some(MergedInterval {
                            second,
                            start_unix_ms: i.start_unix_ms,
                            length_ms: i.length_ms,
                            step: i.step,
                            recorder: i.recorder,
                            watch: watch.into_iter().collect(),
                        })
                    }
                    Some(m) => {
                        m.recorder.add(&i.recorder);
                        m.watch.extend(watch);
                        m.length_ms = m.length_ms.max(i.length_ms);
                        m.start_unix_ms = m.start_unix_ms.min(i.start_unix_ms);
                    }
                }
            }
        }
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::tests::{header, interval, write};
    use crate::file::{ResultsWriter, RunFooter};

    /// The last interval, when shorter than half a second, is folded into the one before for
    /// the summary; the HdrHistogram log keeps it.
    #[test]
    fn a_sliver_is_folded_into_the_interval_before() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.brg");
        let mut w = ResultsWriter::create(&p, &header(0)).unwrap();
        w.write_interval(&interval(0, 0, 10)).unwrap();
        w.write_interval(&interval(1, 0, 10)).unwrap();
        w.write_interval(&IntervalRecord { length_ms: 4, ..interval(2, 0, 3) }).unwrap();
        w.finish(&RunFooter::default()).unwrap();
        let folded: Vec<_> = MergedIntervals::new(vec![ResultsReader::open(&p).unwrap()])
            .map(|m| (m.second, m.length_ms, m.recorder.counts.completed))
            .collect();
        assert_eq!(folded, [(0, 1000, 10), (1, 1004, 13)]);
        let kept: Vec<_> =
            MergedIntervals::unfolded(vec![ResultsReader::open(&p).unwrap()]).map(|m| m.length_ms).collect();
        assert_eq!(kept, [1000, 1000, 4]);
    }

    /// Live views fold the same way, interval by interval.
    #[test]
    fn live_views_fold_the_sliver_the_same_way() {
        let mut fold = SliverFold::default();
        let rated: Vec<_> =
            [interval(0, 0, 10), interval(1, 0, 10), IntervalRecord { length_ms: 4, ..interval(2, 0, 3) }]
                .into_iter()
                .map(|i| {
                    let (_, r) = fold.fold(i);
                    (r.index, r.length_ms, r.recorder.counts.completed)
                })
                .collect();
        assert_eq!(rated, [(0, 1000, 10), (1, 1000, 10), (1, 1004, 13)]);
    }

    #[test]
    fn merge_aligns_by_wall_clock() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        write(&a, 10_000, 3, true);
        write(&b, 11_020, 3, true); // one second later, 20 ms off
        let readers = vec![ResultsReader::open(&a).unwrap(), ResultsReader::open(&b).unwrap()];
        let merged: Vec<_> = MergedIntervals::new(readers).map(|m| (m.second, m.recorder.counts.completed)).collect();
        assert_eq!(merged, vec![(0, 10), (1, 20), (2, 20), (3, 10)]);
    }
}
