//! Coverage: what a run sent of the arrivals it intended. An open loop's arrivals are a pure
//! function of its plan, so a run of known length writes the whole run's second by second
//! into its results file ([`crate::file::Record::Schedule`]: how many are due before each
//! second), and any shard's share follows from it ([`share`]). So a split run's merged report
//! knows exactly what a shard that died (killed, its machine lost) or never reported would
//! have sent, and shows it as never sent: never as success, never missing silently.

use serde::{Deserialize, Serialize};

/// The arrivals of shard `i` of `n` among the whole run's first `k` (numbers `0..k`): those
/// whose number is `i` modulo `n`, as a split open loop deals them.
pub fn share(k: u64, (i, n): (u32, u32)) -> u64 {
    let (i, n) = (u64::from(i), u64::from(n.max(1)));
    if k <= i {
        0
    } else {
        (k - i - 1) / n + 1
    }
}

/// A run's (or a split run's shards') arrivals: intended, sent, and never sent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// The arrivals the whole run intended (every shard's).
    pub intended: u64,
    /// Those sent.
    pub sent: u64,
    /// Due, and given up at the end of the attack (every slot busy): `requests.dropped`.
    pub dropped: u64,
    /// Never reached: the arrivals after a shard died or was stopped, or of a shard whose
    /// results never came.
    pub unsent: u64,
    /// `sent / intended`.
    pub ratio: f64,
}

/// A shard of the files merged, for its share: its index, whether its file ends without a
/// footer (the shard was killed), whether it is a takeover of the shard's share, and whether
/// it is still running.
#[derive(Clone, Copy, Debug)]
pub struct ShardEnd {
    /// `(i, n)` of `--shard i/n`.
    pub shard: (u32, u32),
    /// Its file has no footer, and the run is not going on: it was killed.
    pub killed: bool,
    /// A takeover's run: the second of the schedule it resumed the shard's share from.
    pub from_s: Option<u64>,
    /// Still running ([`crate::summary::summarize_running`]): the seconds of the schedule its
    /// file holds so far, the arrivals of which are all that is due of it yet.
    pub through_s: Option<u64>,
    /// A takeover of an open loop's share counted (`--resume-after N`): it resumed after
    /// the first N arrivals of the share, wherever they fell.
    pub after: Option<u64>,
}

/// The arrivals due to `end`'s run of the schedule `arrivals` (the whole run's, due before
/// each second; `ends`: every run merged): its shard's share, from the second a takeover
/// resumed it, to the second a takeover took it over, and, still running, up to the seconds
/// its file holds so far.
pub(crate) fn due(arrivals: &[u64], end: &ShardEnd, ends: &[ShardEnd]) -> u64 {
    let total = arrivals.last().copied().unwrap_or(0);
    let at = |s: u64| arrivals.get(s as usize).copied().unwrap_or(total);
    // Where a takeover resumed, in arrivals of the whole run: after its first N of the
    // share (shard i's are i, i + n, ...), or at its second.
    let resumed = |e: &ShardEnd| {
        let (i, n) = (u64::from(e.shard.0), u64::from(e.shard.1));
        e.from_s.map(|from| e.after.map_or(at(from), |a| i + n * a))
    };
    let handed = ends.iter().find(|e| e.shard.0 == end.shard.0 && e.from_s.is_some()).and_then(resumed);
    let to = match (end.from_s, handed) {
        (None, Some(k)) => k,
        _ => total,
    };
    let to = end.through_s.map_or(to, |s| at(s).min(to));
    share(to, end.shard).saturating_sub(resumed(end).map_or(0, |k| share(k, end.shard)))
}

/// Applies the schedule `arrivals` (the whole run's, due before each second) to `s`: its
/// coverage, each interval's intended arrivals, each shard's due share and a row for each
/// shard with no file; and, unless the run was stopped on purpose, the arrivals never sent
/// counted against its success ratio, with a warning naming the shards. A run still going
/// on is due what its files have reached so far, and of its shards still running nothing
/// is never sent yet.
pub(crate) fn apply(s: &mut crate::summary::RunSummary, arrivals: &[u64], shards: &[ShardEnd]) {
    // One shard's file alone is its share of the run; several are the whole run, a
    // missing shard's share never sent.
    let of = |k: u64| match shards {
        [one] => share(k, one.shard),
        _ => k,
    };
    let Some(total) = arrivals.last().copied() else { return };
    let lost = crate::shards::cover(&mut s.shards, arrivals, shards);
    let running = shards.iter().any(|e| e.through_s.is_some());
    let (intended, unsent) = if running {
        let ended = s.shards.iter().filter(|r| !r.running);
        (shards.iter().map(|e| due(arrivals, e, shards)).sum(), ended.map(crate::shards::never_sent).sum())
    } else {
        (of(total), of(total).saturating_sub(s.requests.sent + s.requests.dropped))
    };
    s.coverage = Some(Coverage {
        intended,
        sent: s.requests.sent,
        dropped: s.requests.dropped,
        unsent,
        ratio: if intended == 0 { 1.0 } else { s.requests.sent as f64 / intended as f64 },
    });
    // Running, a second is due once every shard still running has recorded it.
    let reached = shards.iter().filter_map(|e| e.through_s).min().unwrap_or(u64::MAX);
    for row in s.intervals.iter_mut() {
        let j = row.second as usize;
        row.due =
            arrivals.get(j + 1).zip(arrivals.get(j)).filter(|_| row.second < reached).map(|(&b, &a)| of(b) - of(a));
    }
    count_unsent(s, intended, unsent, &lost);
}

/// A closed loop's count (`-n`) split over shards of which one was killed: the count is
/// what the run intended, and what the lost shard did not send of its part is never sent
/// ([`crate::shards::count_lost`]).
pub(crate) fn apply_count(s: &mut crate::summary::RunSummary, count: crate::shards::CountLost) {
    let r = &s.requests;
    s.coverage = Some(Coverage {
        intended: count.whole,
        sent: r.sent,
        dropped: r.dropped,
        unsent: count.never,
        ratio: if count.whole == 0 { 1.0 } else { r.sent as f64 / count.whole as f64 },
    });
    count_unsent(s, count.whole, count.never, &[count.shard]);
}

/// Counts `unsent` of the run's `intended` requests (never sent; `lost`: the shards that did
/// not reach their share) against its success ratio, and says so in a warning; not for a
/// run stopped on purpose.
fn count_unsent(s: &mut crate::summary::RunSummary, intended: u64, unsent: u64, lost: &[String]) {
    if unsent == 0 || s.interrupted {
        return;
    }
    let r = &s.requests;
    // Over every intended arrival: a request a killed shard sent and never saw end (in
    // flight when it died: unfinished) failed too.
    s.success_ratio = crate::summary::success_ratio(r.ok, r.total, r.dropped + unsent + r.unfinished);
    let whose = if lost.is_empty() { String::new() } else { format!(" (shard {})", lost.join(", ")) };
    let what = if s.mode == crate::file::Mode::Open { "intended arrivals" } else { "requests (-n)" };
    s.warnings.push(crate::summary::Warning::new(
        crate::summary::WarningKind::ArrivalsNeverSent,
        format!(
            "{unsent} of the run's {intended} {what} were never sent{whose}: the coverage is {:.2}%, and the success ratio counts them as failed",
            s.requests.sent as f64 * 100.0 / intended.max(1) as f64
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three shards' shares are the whole, at every count.
    #[test]
    fn the_shares_of_every_shard_add_up_to_the_whole() {
        for k in 0..50 {
            let each: Vec<u64> = (0..3).map(|i| share(k, (i, 3))).collect();
            assert_eq!(each.iter().sum::<u64>(), k);
            assert_eq!(each[0], (0..k).filter(|x| x % 3 == 0).count() as u64);
        }
        assert_eq!(share(10, (0, 1)), 10);
    }

    /// A shard is due its share of the schedule: to its takeover's second, from it for the
    /// takeover, and, still running, up to the seconds its file holds.
    #[test]
    fn a_shard_is_due_its_share_up_to_where_it_ended_was_taken_over_or_has_got() {
        // 30 arrivals a second for 4 s: due before each second.
        let arrivals = [0, 30, 60, 90, 120];
        let end = |i: u32, from_s: Option<u64>, through_s: Option<u64>| ShardEnd {
            shard: (i, 3),
            killed: false,
            from_s,
            through_s,
            after: None,
        };
        let whole = [end(0, None, None), end(1, None, None), end(2, None, None)];
        assert_eq!(due(&arrivals, &whole[1], &whole), 40);
        let running = [end(0, None, Some(2)), end(1, None, Some(1)), end(2, None, None)];
        let each: Vec<u64> = running.iter().map(|e| due(&arrivals, e, &running)).collect();
        assert_eq!(each, [20, 10, 40], "up to its second 2, its second 1, to the end");
        assert_eq!(due(&arrivals, &end(0, None, Some(0)), &running), 0, "nothing recorded: nothing due");
        let taken = [end(0, None, None), end(1, None, None), end(2, None, None), end(1, Some(3), None)];
        assert_eq!((due(&arrivals, &taken[1], &taken), due(&arrivals, &taken[3], &taken)), (30, 10));
        let taking = [end(1, None, None), end(1, Some(1), Some(3))];
        assert_eq!(due(&arrivals, &taking[1], &taking), 20, "the takeover so far: seconds 1 and 2");
    }
}
