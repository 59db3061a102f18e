//! A shard's clock against the collector's, by NTP's four timestamps (RFC 5905, 8): the
//! shard sends at t1 (its clock), the collector receives at t2 and answers at t3 (its
//! clock), the shard receives at t4. Whatever the two clocks say, the exchange's round trip
//! is `(t4 - t1) - (t3 - t2)`, and if the two ways took as long as each other the collector's
//! clock is ahead of the shard's by `((t2 - t1) + (t3 - t4)) / 2`; the error is at most half
//! the round trip, so of several exchanges the one with the shortest round trip is kept (as
//! NTP's clock filter does).

use serde::{Deserialize, Serialize};

/// One exchange, µs since the Unix epoch on each side's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// The shard sent the request (shard's clock).
    pub t1: i64,
    /// The collector received it (collector's clock).
    pub t2: i64,
    /// The collector answered (collector's clock).
    pub t3: i64,
    /// The shard received the answer (shard's clock).
    pub t4: i64,
}

/// A shard's clock as measured against the collector's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offset {
    /// The shard's clock minus the collector's, µs (what `--clock-offset` records).
    pub offset_us: i64,
    /// The round trip of the exchange it came from, µs: the offset is known to within half
    /// of it.
    pub round_trip_us: i64,
}

impl Exchange {
    /// The round trip, without the collector's own time between t2 and t3.
    pub fn round_trip_us(&self) -> i64 {
        (self.t4 - self.t1) - (self.t3 - self.t2)
    }

    /// The shard's clock minus the collector's.
    pub fn offset_us(&self) -> i64 {
        // NTP's θ is the server's clock minus the client's; the shard records its own minus
        // the reference's.
        -(((self.t2 - self.t1) + (self.t3 - self.t4)) / 2)
    }
}

/// The offset of the exchange with the shortest round trip; `None` for none.
pub fn best(exchanges: &[Exchange]) -> Option<Offset> {
    let e = exchanges.iter().min_by_key(|e| e.round_trip_us())?;
    Some(Offset { offset_us: e.offset_us(), round_trip_us: e.round_trip_us().max(0) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard 250 ms behind the collector, 2 ms each way and 100 µs at the collector.
    #[test]
    fn a_symmetric_exchange_gives_the_offset_exactly() {
        let e = Exchange { t1: 1_000_000, t2: 1_252_000, t3: 1_252_100, t4: 1_004_100 };
        assert_eq!(e.round_trip_us(), 4_000);
        assert_eq!(e.offset_us(), -250_000);
    }

    /// The way out took 9 ms, the way back 1 ms: the error is half the difference, within
    /// half the round trip; the shortest round trip wins.
    #[test]
    fn the_shortest_round_trip_is_kept() {
        let slow = Exchange { t1: 0, t2: 9_000 + 500, t3: 9_000 + 500, t4: 10_000 };
        let fast = Exchange { t1: 20_000, t2: 20_000 + 100 + 500, t3: 20_000 + 100 + 500, t4: 20_200 };
        assert_eq!(slow.offset_us(), -4_500);
        assert!((slow.offset_us() + 500).abs() <= slow.round_trip_us() / 2);
        assert_eq!(best(&[slow, fast]), Some(Offset { offset_us: -500, round_trip_us: 200 }));
        assert_eq!(best(&[]), None);
    }
}
