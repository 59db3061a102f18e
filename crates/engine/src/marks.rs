//! [`Marks`]: where an open loop's engine thread is in its lane of the schedule, for the
//! results file to record after each interval ([`barrage_metrics::lanes`]).

use barrage_metrics::lanes::LaneMark;
use std::collections::VecDeque;

/// The arrivals of one thread's lane (`lane + j × lanes`) it has passed, and those of them
/// sent and not ended yet. Kept on the hot path: a request costs a push when it is sent and
/// a bisection when it ends.
#[derive(Debug)]
pub(crate) struct Marks {
    lane: u64,
    lanes: u64,
    passed: u64,
    /// Ascending.
    flying: VecDeque<u64>,
}

impl Marks {
    /// Lane `lane` of `lanes`, its first `passed` arrivals passed by another run (a
    /// takeover's lost shard), none in flight.
    pub(crate) fn new(lane: u64, lanes: u64, passed: u64) -> Marks {
        Marks { lane, lanes: lanes.max(1), passed, flying: VecDeque::new() }
    }

    fn j(&self, number: u64) -> u64 {
        (number - self.lane) / self.lanes
    }

    /// Arrival `number` was sent: the next of the lane, or one sent again (a takeover's).
    pub(crate) fn sent(&mut self, number: u64) {
        let j = self.j(number);
        if j >= self.passed {
            self.passed = j + 1;
            self.flying.push_back(j);
        } else {
            let at = self.flying.partition_point(|&f| f < j);
            self.flying.insert(at, j);
        }
    }

    /// Arrival `number` ended: its outcome is recorded.
    pub(crate) fn ended(&mut self, number: u64) {
        // Ascending: found by bisection however many are in flight, and taken out from the
        // nearer end (the oldest, at the front, usually end first).
        if let Ok(at) = self.flying.binary_search(&self.j(number)) {
            self.flying.remove(at);
        }
    }

    /// The next `count` arrivals of the lane were dropped at the end of the attack.
    pub(crate) fn dropped(&mut self, count: u64) {
        self.passed += count;
    }

    /// As the results file records it.
    pub(crate) fn mark(&self) -> LaneMark {
        LaneMark { passed: self.passed, flying: self.flying.iter().copied().collect(), unlisted: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lane 1 of 3: arrivals 1, 4, 7, ... are its j = 0, 1, 2, ...
    #[test]
    fn the_mark_lists_what_was_sent_and_has_not_ended() {
        let mut m = Marks::new(1, 3, 0);
        for k in [1, 4, 7, 10] {
            m.sent(k);
        }
        m.ended(4);
        m.ended(1);
        assert_eq!(m.mark(), LaneMark { passed: 4, flying: vec![2, 3], unlisted: 0 });
        m.dropped(5);
        assert_eq!(m.mark().passed, 9);
        // A takeover sends a lost shard's in-flight arrival again, below what it passed.
        let mut t = Marks::new(1, 3, 4);
        t.sent(7);
        t.sent(13);
        assert_eq!(t.mark(), LaneMark { passed: 5, flying: vec![2, 4], unlisted: 0 });
        t.ended(7);
        assert_eq!(t.mark().flying, [4]);
    }
}
