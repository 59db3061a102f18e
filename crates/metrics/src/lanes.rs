//! Where an open loop's engine threads were in their lanes of the schedule, as the results
//! file records it after each interval ([`crate::file::Record::Lanes`]): what a survivor
//! needs to send exactly the rest of a lost shard's share.
//!
//! Engine thread t of a shard owns the arrivals `lane + j × lanes` (its lane, j = 0, 1, …)
//! and sends them in order, so the arrivals it has passed are a prefix of its lane; of
//! those, the ones still in flight when the interval was handed over have no outcome in
//! the results yet. A takeover sends exactly the others: each lane's in-flight ones again,
//! then the lane from where it stopped (`run --resume-after`, written by [`to_arg`]). A
//! count of the whole share could not say which: each thread stops at its own place.
//!
//! ```
//! use barrage_metrics::lanes::{from_arg, to_arg, LaneMark};
//!
//! let lanes = vec![LaneMark { passed: 40, flying: vec![37, 39], unlisted: 0 }, LaneMark::at(41)];
//! assert_eq!(to_arg(&lanes), "40:37.39,41");
//! assert_eq!(from_arg("40:37.39,41").unwrap(), lanes);
//! ```

use crate::bounded::{self, limit};
use serde::{Deserialize, Serialize};

/// The most engine threads a record lists (barrage's own limit of threads).
pub const MAX_LANES: usize = 1024;

/// The most in-flight arrivals a record lists over all its lanes: a survivor's takeover
/// gets them in one argument of its command line, which Linux caps at 128 KiB. Those in
/// flight beyond it are counted ([`LaneMark::unlisted`]), and not sent again.
pub const MAX_FLYING: usize = 8192;

limit!(FlyingLimit = MAX_FLYING, "in-flight arrivals of a lane");

/// One engine thread's lane, at the end of an interval.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneMark {
    /// The arrivals of its lane it had passed, sent or dropped at the end: j < `passed`.
    pub passed: u64,
    /// Of those, the ones sent and not ended yet (their j, ascending): in no interval's
    /// outcomes so far.
    #[serde(deserialize_with = "bounded::vec::<FlyingLimit, _, _>")]
    pub flying: Vec<u64>,
    /// In flight beyond those listed ([`MAX_FLYING`]).
    pub unlisted: u64,
}

impl LaneMark {
    /// A lane that had passed its first `passed` arrivals, none in flight.
    pub fn at(passed: u64) -> LaneMark {
        LaneMark { passed, flying: Vec::new(), unlisted: 0 }
    }
}

/// Keeps the first [`MAX_FLYING`] in-flight arrivals of `lanes` listed and counts the rest.
pub fn cap(lanes: &mut [LaneMark]) {
    let mut left = MAX_FLYING;
    for l in lanes {
        let keep = l.flying.len().min(left);
        l.unlisted += (l.flying.len() - keep) as u64;
        l.flying.truncate(keep);
        left -= keep;
    }
}

/// The arrivals of `lanes` whose outcome the results hold or will never hold: passed, but
/// not listed as in flight (an unlisted one is not sent again, so it stays the lane's).
pub fn recorded(lanes: &[LaneMark]) -> u64 {
    lanes.iter().map(|l| l.passed.saturating_sub(l.flying.len() as u64)).sum()
}

/// The in-flight arrivals of `lanes` listed (sent again by a takeover), and those not.
pub fn in_flight(lanes: &[LaneMark]) -> (u64, u64) {
    lanes.iter().fold((0, 0), |(f, u), l| (f + l.flying.len() as u64, u + l.unlisted))
}

/// `lanes` as `run --resume-after` takes them: `passed[:j.j…]` per lane, comma-separated.
pub fn to_arg(lanes: &[LaneMark]) -> String {
    let lane = |l: &LaneMark| {
        let flying: Vec<String> = l.flying.iter().map(u64::to_string).collect();
        match flying.is_empty() {
            true => l.passed.to_string(),
            false => format!("{}:{}", l.passed, flying.join(".")),
        }
    };
    lanes.iter().map(lane).collect::<Vec<_>>().join(",")
}

/// Reads [`to_arg`]'s form, [`check`]ed.
pub fn from_arg(s: &str) -> Result<Vec<LaneMark>, String> {
    let number = |n: &str| n.parse::<u64>().map_err(|_| format!("'{n}' is not a count"));
    let lanes = s
        .split(',')
        .take(MAX_LANES + 1)
        .map(|lane| {
            let (passed, flying) = match lane.split_once(':') {
                Some((passed, list)) => {
                    (passed, list.split('.').take(MAX_FLYING + 1).map(number).collect::<Result<_, _>>()?)
                }
                None => (lane, Vec::new()),
            };
            Ok(LaneMark { passed: number(passed)?, flying, unlisted: 0 })
        })
        .collect::<Result<Vec<LaneMark>, String>>()?;
    check(&lanes)?;
    Ok(lanes)
}

/// Whether `lanes` are lanes as an engine wrote them (a collector takes them from whatever
/// a shard posted): at most [`MAX_LANES`], at most [`MAX_FLYING`] in flight, each lane's
/// in-flight arrivals ascending and below what it passed.
pub fn check(lanes: &[LaneMark]) -> Result<(), String> {
    if lanes.len() > MAX_LANES {
        return Err(format!("more than {MAX_LANES} lanes: one per engine thread"));
    }
    if lanes.iter().map(|l| l.flying.len()).sum::<usize>() > MAX_FLYING {
        return Err(format!("more than {MAX_FLYING} arrivals in flight"));
    }
    match lanes.iter().find(|l| l.flying.windows(2).any(|w| w[0] >= w[1]) || l.flying.last() >= Some(&l.passed)) {
        Some(l) => Err(format!(
            "lane '{}': its in-flight arrivals ascend, each below {}",
            to_arg(std::slice::from_ref(l)),
            l.passed
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_reads_back_and_refuses_what_is_not_one() {
        let lanes = vec![LaneMark::at(0), LaneMark { passed: 9, flying: vec![1, 8], unlisted: 0 }];
        assert_eq!(from_arg(&to_arg(&lanes)).unwrap(), lanes);
        for bad in ["", "x", "3:3", "3:2.1", "3:", "3:1..2", "-1"] {
            assert!(from_arg(bad).is_err(), "{bad}");
        }
        assert!(from_arg(&vec!["1"; MAX_LANES + 1].join(",")).unwrap_err().contains("one per engine thread"));
        let many = format!("9000:{}", (0..8193).map(|j| j.to_string()).collect::<Vec<_>>().join("."));
        assert!(from_arg(&many).unwrap_err().contains("more than 8192"));
    }

    #[test]
    fn a_cap_lists_the_first_in_flight_and_counts_the_rest() {
        let mut lanes = vec![
            LaneMark { passed: 9000, flying: (0..8000).collect(), unlisted: 0 },
            LaneMark { passed: 500, flying: (0..300).collect(), unlisted: 0 },
        ];
        cap(&mut lanes);
        assert_eq!((lanes[1].flying.len(), lanes[1].unlisted), (192, 108));
        assert_eq!(in_flight(&lanes), (8192, 108));
        assert_eq!(recorded(&lanes), 9000 + 500 - 8192);
    }
}
