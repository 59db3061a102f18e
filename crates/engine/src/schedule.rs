//! [`Schedule`]: the open-loop scheduler of one engine thread, as a value.
//!
//! Every decision the scheduler makes (send the next request, wait for it, wait for a free
//! slot, give up on what the end of the attack left unsent, stop) is a pure function of
//! the time and the number of requests in flight, both passed in. The async loop in
//! `thread.rs` only carries decisions out (sleeps, hands a job to a slot, counts), so the
//! scheduling rules are tested here as tables of numbers, without a clock.

use barrage_plan::Pacer;
use std::time::Duration;

/// At the end of the attack, a request due before the end is still sent (late, its wait in
/// its latency) when the thread is at most this late for it, waiting for a slot if every
/// one is busy; later than that, the thread or the target is overloaded and the rest is
/// dropped. Without the grace, a backlog of a few milliseconds at the last instant of a
/// probe (the target's queue at that moment, not a failure) would count as dropped
/// requests: a 2 s probe at 40,000/s fails `success>=99.9%` with 2 ms of backlog.
pub const END_GRACE: Duration = Duration::from_millis(100);

/// The precision of the open loop: after sending, the scheduler sleeps at least this long
/// before it sends again, and then sends every request that came due meanwhile. So at high
/// rates a wake-up sends a batch (ten requests at 20,000/s) instead of one. A wake-up costs
/// far more than a request: the engine thread's, and on loopback the server's, which the
/// sender pays. Measured at 20,000/s, CPU per request fell from 22 µs (wake-ups 100 µs
/// apart) to 15 (250 µs) and 11 (500 µs), where oha's was 14: about 27 µs per wake-up.
/// A request is never sent before its intended start, and at most this much after it:
/// its schedule lag, which its corrected latency includes and the report shows. Below
/// 1 / PRECISION = 2,000 req/s a thread's requests are further apart than this and each goes
/// out when due (but for one that follows a late one closer than this). Half a millisecond: half the tick that tokio's timer, and so oha, paces
/// by; a tenth of the schedule lag the report warns of (5 ms). `--send-precision` sets it
/// per run ([`Schedule::precise_to`]): on a VM, where waking an idle core costs tens of
/// microseconds, 100 µs costs about twice the CPU per request at 20,000/s
/// (`bench/results/2026-11-29_0620-i36-send-precision.md`).
pub const PRECISION: Duration = barrage_plan::plan::DEFAULT_SEND_PRECISION;

/// What the scheduler does next. Times are offsets from the run's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send request `index` of the run's schedule now; it was due at `intended`. The
    /// scheduler may itself be a little behind (`intended` < now), but no slot shortage
    /// delayed it.
    Due {
        /// Number of the request in the whole run's schedule (all threads).
        index: u64,
        /// When it should have started.
        intended: Duration,
    },
    /// Send request `index` now, late because every slot was busy: since the scheduler last
    /// had to wait for a slot it has not caught up with the schedule, so even a request
    /// that finds a slot free at once (slots freed together) starts late because of the
    /// bound. Its latency still counts from `intended`.
    Late {
        /// Number of the request in the whole run's schedule.
        index: u64,
        /// When it should have started.
        intended: Duration,
        /// How late it starts.
        late_by: Duration,
    },
    /// Nothing is to be sent before `until`: sleep until then.
    Wait {
        /// When the next request is due.
        until: Duration,
    },
    /// A request is due but every slot is busy: wait for one to free up, or for the end
    /// of the attack, then ask again.
    Bound,
    /// The attack ended with `count` requests of this thread's share still unsent that
    /// were due before the end (every slot stayed busy, or the thread could not keep up):
    /// count them as dropped; they are never sent. [`Decision::Done`] follows.
    Dropped {
        /// How many.
        count: u64,
    },
    /// The attack is over: nothing more is sent. It ended at `attack_end`.
    Done {
        /// When the attack ended.
        attack_end: Duration,
    },
}

/// The open-loop schedule of one engine thread: requests `first`, `first + step`, ... of
/// the run's [`Pacer`] schedule, so the threads together follow it exactly.
#[derive(Clone, Debug)]
pub struct Schedule<'p> {
    pacer: &'p Pacer,
    /// The next request of this thread's share.
    next: u64,
    /// Requests of the share before `next` to send first, ascending: a lost shard's
    /// thread's in flight when it was lost, sent again by its takeover.
    again: std::collections::VecDeque<u64>,
    /// Distance between two requests of this thread (the number of lanes: threads × shards).
    step: u64,
    /// Slots: at most this many requests in flight.
    bound: usize,
    /// End of the attack, if it ends by time (`--duration`, or the last step).
    limit: Option<Duration>,
    /// Number of requests of the whole run (`-n`), if it ends by count.
    total: Option<u64>,
    /// Waited for a slot and not yet caught up with the schedule since.
    behind: bool,
    /// Every slot was busy at least once when a request was due.
    bound_reached: bool,
    /// Set once the attack is over.
    ended: Option<Duration>,
    /// A takeover's: every request of the share is sent, however late (it began only once
    /// the lost shard was judged lost, perhaps past the end): none is dropped at the end.
    sends_all: bool,
    /// When the last request was sent (`PRECISION` before the start: the first goes when due).
    sent_at: Option<Duration>,
    /// The send window: [`PRECISION`] unless `--send-precision` says otherwise.
    precision: Duration,
}

impl<'p> Schedule<'p> {
    /// Lane `lane` of `lanes` following `pacer` (requests lane, lane + lanes, ...: a thread
    /// of a shard), with `bound` slots (at least one), until `limit` or after `total`
    /// requests of the whole run, whichever comes first.
    pub fn new(
        pacer: &'p Pacer,
        lane: u64,
        lanes: u64,
        bound: usize,
        limit: Option<Duration>,
        total: Option<u64>,
    ) -> Self {
        Schedule {
            pacer,
            next: lane,
            again: Default::default(),
            step: lanes.max(1),
            bound: bound.max(1),
            limit,
            total,
            behind: false,
            bound_reached: false,
            ended: None,
            sends_all: false,
            sent_at: None,
            precision: PRECISION,
        }
    }

    /// The same schedule with send window `precision` instead of [`PRECISION`].
    pub fn precise_to(mut self, precision: Duration) -> Self {
        self.precision = precision;
        self
    }

    /// The same schedule from offset `from` on: its lane's first number due at or after it
    /// (a survivor adopting a lost shard's share sends only what is left of it).
    pub fn resumed(mut self, from: Option<Duration>) -> Self {
        let lane = self.next;
        let first = from.map(|from| self.pacer.due_before(from, self.total));
        if let Some(first) = first.filter(|&f| f > lane) {
            self.next = lane + (first - lane).div_ceil(self.step) * self.step;
        }
        self
    }

    /// The same schedule where a lost shard's thread on this lane left it: the requests it
    /// had in flight again, then those after the ones it passed.
    pub fn resumed_lane(mut self, mark: &barrage_metrics::lanes::LaneMark) -> Self {
        let lane = self.next;
        self.again = mark.flying.iter().map(|j| lane + j * self.step).collect();
        self.next = lane + mark.passed * self.step;
        self.sends_all = true;
        self
    }

    /// Whether every request due before the end is sent, however late ([`Schedule::resumed_lane`]).
    pub fn sends_all(&self) -> bool {
        self.sends_all
    }

    /// What to do at `now` with `in_flight` requests of this thread in flight. A returned
    /// [`Decision::Due`] or [`Decision::Late`] is taken as sent (the caller has a free slot:
    /// `in_flight` was below the bound), and [`Decision::Dropped`] as counted.
    pub fn next(&mut self, now: Duration, in_flight: usize) -> Decision {
        if let Some(attack_end) = self.ended {
            return Decision::Done { attack_end };
        }
        let k = self.again.front().copied().unwrap_or(self.next);
        let due = match self.pacer.due(k) {
            Some(d) if self.total.is_none_or(|n| k < n) => d,
            // Count reached or schedule over: the attack ends when the next request of the
            // whole schedule would have started.
            _ => {
                let end = self.total.and_then(|n| self.pacer.due(n)).or(self.limit).unwrap_or(now);
                return self.end(end);
            }
        };
        let Some(limit) = self.limit else { return self.send_or_wait(k, due, now, in_flight) };
        if due >= limit {
            return self.end(limit);
        }
        if now >= limit && now.saturating_sub(due) > END_GRACE && !self.sends_all {
            // Due before the end and still not started more than END_GRACE after it was
            // due: every slot stayed busy, or the thread is hopelessly behind. What is left
            // is dropped at once, so the attack ends at most END_GRACE late however far
            // behind the thread is. (A request the thread is only a little late for, timer
            // jitter or the target's queue at the end, is still sent below: a run at 500/s
            // for 2 s sends its 1,000 requests.)
            let count = self.due_before(limit);
            self.end(limit);
            return Decision::Dropped { count };
        }
        self.send_or_wait(k, due, now, in_flight)
    }

    /// The next number of this thread's share: every one before it on its lane was sent
    /// (a request dropped at the end is never sent, and never passed).
    pub fn next_index(&self) -> u64 {
        self.next
    }

    /// Whether every slot was busy at least once when a request was due.
    pub fn bound_reached(&self) -> bool {
        self.bound_reached
    }

    fn send_or_wait(&mut self, k: u64, due: Duration, now: Duration, in_flight: usize) -> Decision {
        if due > now {
            // Caught up with the schedule: what follows is on time again. At most one
            // wake-up per PRECISION: what comes due meanwhile goes out together.
            self.behind = false;
            let until = self.sent_at.map_or(due, |sent| due.max(sent + self.precision));
            return Decision::Wait { until };
        }
        if in_flight >= self.bound {
            self.behind = true;
            self.bound_reached = true;
            return Decision::Bound;
        }
        if self.again.pop_front().is_none() {
            self.next += self.step;
        }
        self.sent_at = Some(now);
        if self.behind {
            Decision::Late { index: k, intended: due, late_by: now - due }
        } else {
            Decision::Due { index: k, intended: due }
        }
    }

    fn end(&mut self, attack_end: Duration) -> Decision {
        self.ended = Some(attack_end);
        Decision::Done { attack_end }
    }

    /// How many requests of this thread's share, from the next one on, are due before
    /// `limit` (and within the count). Found by bisection, since `due` grows with the
    /// request number: a very high rate must not cost one step per request.
    fn due_before(&self, limit: Duration) -> u64 {
        let counts = |j: u64| {
            let Some(k) = j.checked_mul(self.step).and_then(|d| self.next.checked_add(d)) else { return false };
            self.total.is_none_or(|n| k < n) && self.pacer.due(k).is_some_and(|d| d < limit)
        };
        let again = self.again.len() as u64;
        if !counts(0) {
            return again;
        }
        // counts(lo) holds and counts(hi) does not: grow hi, then halve the gap.
        let (mut lo, mut hi) = (0u64, 1u64);
        while counts(hi) {
            lo = hi;
            hi = hi.saturating_mul(2);
            if hi == u64::MAX {
                break;
            }
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if counts(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        again + lo + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Decision::*;

    const fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    const fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// Asks the schedule at each `(now, in_flight)` and checks each decision in turn.
    fn check(s: &mut Schedule<'_>, table: &[(Duration, usize, Decision)]) {
        for (row, &(now, in_flight, want)) in table.iter().enumerate() {
            assert_eq!(s.next(now, in_flight), want, "row {row}: now {now:?}, {in_flight} in flight");
        }
    }

    /// Runs the schedule against an ideal clock (each request answered at once, no sleep
    /// overshoot) and returns the intended starts of what it sent and the decision that
    /// ended it; bounded, so a schedule that never ends fails instead of hanging.
    fn follow(s: &mut Schedule<'_>) -> (Vec<Duration>, u64, Duration) {
        let (mut now, mut sent, mut dropped) = (Duration::ZERO, Vec::new(), 0);
        for _ in 0..1_000_000 {
            match s.next(now, 0) {
                Due { intended, .. } => sent.push(intended),
                Late { .. } | Bound => panic!("nothing is in flight"),
                Wait { until } => now = until,
                Dropped { count } => dropped += count,
                Done { attack_end } => return (sent, dropped, attack_end),
            }
        }
        panic!("the schedule did not end");
    }

    /// Resumed at 2 s of a 10/s schedule, lane 1 of 3 starts at number 22: the first of
    /// its own due at or after 2 s (20 is lane 2's, 21 lane 0's); the lanes together resend
    /// exactly the arrivals from 2 s on.
    #[test]
    fn a_resumed_schedule_starts_at_the_first_arrival_due_from_then() {
        let p = Pacer::Constant { rate: 10.0 };
        let resumed = Schedule::new(&p, 1, 3, 4, Some(ms(3000)), None).resumed(Some(ms(2000)));
        assert_eq!(resumed.next_index(), 22);
        let mut all: Vec<u64> = (0..3)
            .flat_map(|lane| {
                let mut s = Schedule::new(&p, lane, 3, 4, Some(ms(3000)), None).resumed(Some(ms(2000)));
                let (mut out, mut now) = (Vec::new(), ms(2000));
                loop {
                    match s.next(now, 0) {
                        Due { index, .. } => out.push(index),
                        Wait { until } => now = until,
                        _ => return out,
                    }
                }
            })
            .collect();
        all.sort();
        assert_eq!(all, (20..30).collect::<Vec<_>>());
        assert_eq!(Schedule::new(&p, 1, 3, 4, None, None).resumed(None).next_index(), 1);
    }

    /// Lane 1 of 3 left by a lost shard's thread that had passed 5 of its arrivals (1, 4,
    /// ..., 13), two of them (7 and 13) still in flight: its takeover sends those two, late,
    /// then the lane from 16 on, to the end.
    #[test]
    fn a_lane_resumed_sends_what_was_in_flight_then_what_was_not_passed() {
        let p = Pacer::Constant { rate: 10.0 };
        let mark = barrage_metrics::lanes::LaneMark { passed: 5, flying: vec![2, 4], unlisted: 0 };
        let mut s = Schedule::new(&p, 1, 3, 4, Some(ms(3000)), None).resumed_lane(&mark);
        let (mut sent, mut now) = (Vec::new(), ms(2000));
        loop {
            match s.next(now, 0) {
                Due { index, .. } => sent.push(index),
                Wait { until } => now = until,
                _ => break,
            }
        }
        assert_eq!(sent, [7, 13, 16, 19, 22, 25, 28]);
        // Begun past the end (the shard judged lost late), it still sends them all, late.
        let mut s = Schedule::new(&p, 1, 3, 4, Some(ms(3000)), None).resumed_lane(&mark);
        let mut late = Vec::new();
        while let Due { index, .. } | Late { index, .. } = s.next(ms(5000), 0) {
            late.push(index);
        }
        assert_eq!(late, sent);
    }

    #[test]
    fn constant_rate() {
        let p = Pacer::Constant { rate: 1000.0 };
        let mut s = Schedule::new(&p, 0, 1, 4, Some(ms(3)), None);
        check(
            &mut s,
            &[
                (ms(0), 0, Due { index: 0, intended: ms(0) }),
                (ms(0), 1, Wait { until: ms(1) }),
                // The sleep overshot a little: sent at once, on time as far as slots go.
                (us(1_040), 1, Due { index: 1, intended: ms(1) }),
                (us(1_040), 2, Wait { until: ms(2) }),
                (ms(2), 0, Due { index: 2, intended: ms(2) }),
                // Request 3 would start at the end of the attack: it ends, on time.
                (ms(2), 1, Done { attack_end: ms(3) }),
                (ms(9), 0, Done { attack_end: ms(3) }),
            ],
        );
        assert!(!s.bound_reached());
        let (sent, dropped, end) = follow(&mut Schedule::new(&p, 0, 1, 4, Some(ms(1_000)), None));
        assert_eq!((sent.len(), dropped, end), (1_000, 0, ms(1_000)));
    }

    #[test]
    fn high_rates_send_in_batches_never_early_and_at_most_the_precision_late() {
        // The default window, and --send-precision's narrowest, a narrow and its widest.
        let cases = [20_000.0, 3_000.0, 1_000.0, 100_000.0].map(|rate| (rate, PRECISION)).into_iter().chain([
            (20_000.0, us(1)),
            (71_500.0, us(50)),
            (20_000.0, ms(2)),
        ]);
        for (rate, precision) in cases {
            let p = Pacer::Constant { rate };
            let mut s = Schedule::new(&p, 0, 1, 64, Some(ms(20)), None).precise_to(precision);
            // An ideal clock: each wait ends when asked, each request is answered at once.
            let (mut now, mut wakes, mut sent) = (Duration::ZERO, Vec::new(), 0u64);
            loop {
                match s.next(now, 0) {
                    Due { intended, .. } => {
                        assert!(
                            intended <= now && now - intended <= precision,
                            "{rate}/s: {intended:?} sent at {now:?}"
                        );
                        sent += 1;
                    }
                    Wait { until } => {
                        wakes.push(until);
                        now = until;
                    }
                    Done { .. } => break,
                    other => panic!("{rate}/s: {other:?}"),
                }
            }
            // Every request of the 20 ms is sent; the thread wakes at most once per
            // window, and below 1 / window once per request, when it is due.
            assert_eq!(sent, (rate / 50.0) as u64, "{rate}/s");
            assert!(wakes.windows(2).all(|w| w[1] - w[0] >= precision), "{rate}/s: {wakes:?}");
            let per_wake = (rate * precision.as_secs_f64()).max(1.0);
            assert!((sent as f64 / wakes.len() as f64 - per_wake).abs() <= 1.0, "{rate}/s: {} wakes", wakes.len());
        }
    }

    #[test]
    fn threads_share_the_schedule() {
        // Thread 1 of 3 sends requests 1, 4, 7 of the whole run's schedule.
        let p = Pacer::Constant { rate: 1000.0 };
        let mut s = Schedule::new(&p, 1, 3, 4, Some(ms(9)), None);
        check(
            &mut s,
            &[
                (ms(0), 0, Wait { until: ms(1) }),
                (ms(1), 0, Due { index: 1, intended: ms(1) }),
                (ms(1), 1, Wait { until: ms(4) }),
                (ms(4), 1, Due { index: 4, intended: ms(4) }),
                (ms(4), 1, Wait { until: ms(7) }),
                (ms(7), 0, Due { index: 7, intended: ms(7) }),
                (ms(7), 1, Done { attack_end: ms(9) }),
            ],
        );
    }

    #[test]
    fn ramp() {
        // 1000 → 3000/s over 1 s: (1000 + 3000) / 2 = 2000 requests, closer and closer.
        let p = Pacer::Ramp { from: 1000.0, to: 3000.0, over: ms(1_000) };
        let mut s = Schedule::new(&p, 0, 1, 4, Some(ms(1_000)), None);
        let (sent, dropped, end) = follow(&mut s);
        assert_eq!((sent.len(), dropped, end), (2_000, 0, ms(1_000)));
        let gap = |i: usize| (sent[i + 1] - sent[i]).as_micros();
        assert!((995..=1_000).contains(&gap(0)), "first gap {} µs", gap(0));
        assert!((333..=336).contains(&gap(1_998)), "last gap {} µs", gap(1_998));
        // Two threads send the same 2000 between them, interleaved.
        let mut halves = Vec::new();
        for thread in 0..2 {
            let (sent, _, end) = follow(&mut Schedule::new(&p, thread, 2, 4, Some(ms(1_000)), None));
            assert_eq!((sent.len(), end), (1_000, ms(1_000)));
            halves.extend(sent);
        }
        halves.sort();
        assert_eq!(halves, follow(&mut Schedule::new(&p, 0, 1, 4, Some(ms(1_000)), None)).0);
    }

    #[test]
    fn steps() {
        // 10/s for 100 ms, then 20/s, then 50/s: 1 + 2 + 5 requests; the attack ends with
        // the last step (the plan's attack limit is the schedule's natural end).
        let p = Pacer::Steps { rates: vec![10.0, 20.0, 50.0], step: ms(100) };
        let mut s = Schedule::new(&p, 0, 1, 4, p.natural_end(), None);
        check(
            &mut s,
            &[
                (ms(0), 0, Due { index: 0, intended: ms(0) }),
                (ms(0), 1, Wait { until: ms(100) }),
                (ms(100), 0, Due { index: 1, intended: ms(100) }),
                (ms(100), 1, Wait { until: ms(150) }),
                (ms(150), 1, Due { index: 2, intended: ms(150) }),
                (ms(150), 2, Wait { until: ms(200) }),
                (ms(200), 0, Due { index: 3, intended: ms(200) }),
            ],
        );
        let (sent, dropped, end) = follow(&mut s);
        assert_eq!(sent, [ms(220), ms(240), ms(260), ms(280)]);
        assert_eq!((dropped, end), (0, ms(300)));
    }

    #[test]
    fn bound_reached_then_freed() {
        // 1000/s on 2 slots whose requests take longer than 2 ms.
        let p = Pacer::Constant { rate: 1000.0 };
        let mut s = Schedule::new(&p, 0, 1, 2, Some(ms(100)), None);
        check(
            &mut s,
            &[
                (ms(0), 0, Due { index: 0, intended: ms(0) }),
                (ms(0), 1, Wait { until: ms(1) }),
                (ms(1), 1, Due { index: 1, intended: ms(1) }),
                (ms(1), 2, Wait { until: ms(2) }),
                // Both slots busy when request 2 is due.
                (ms(2), 2, Bound),
                (us(2_500), 2, Bound),
                // A slot frees up: request 2 starts late, its intended start kept.
                (us(3_500), 1, Late { index: 2, intended: ms(2), late_by: us(1_500) }),
                (us(3_500), 2, Bound),
                // Two slots free up together: request 3 finds one at once, but the
                // scheduler has not caught up since it waited, so it is late too.
                (us(3_600), 0, Late { index: 3, intended: ms(3), late_by: us(600) }),
                // Caught up: request 4 is in the future, and on time again (sent a PRECISION
                // after request 3, which went at 3.6 ms, not sooner).
                (us(3_600), 1, Wait { until: us(4_100) }),
                (us(4_100), 1, Due { index: 4, intended: ms(4) }),
                (us(4_100), 2, Wait { until: ms(5) }),
            ],
        );
        assert!(s.bound_reached());
    }

    #[test]
    fn end_of_the_attack_with_requests_still_due() {
        // 1000/s for 10 ms on one slot that never frees up after the first request.
        let p = Pacer::Constant { rate: 1000.0 };
        let mut s = Schedule::new(&p, 0, 1, 1, Some(ms(10)), None);
        check(
            &mut s,
            &[
                (ms(0), 0, Due { index: 0, intended: ms(0) }),
                (ms(0), 1, Wait { until: ms(1) }),
                (ms(1), 1, Bound),
                // At the end, request 1 is 9 ms late: within the grace, it still waits for
                // a slot.
                (ms(10), 1, Bound),
                (ms(100), 1, Bound),
                // The wait for a slot ends with the grace: requests 1..=9 were due before
                // the end and are never sent; nothing is due after.
                (us(101_001), 1, Dropped { count: 9 }),
                (ms(102), 0, Done { attack_end: ms(10) }),
            ],
        );
        // A backlog of a few milliseconds at the end, every slot busy at its last instant
        // (the target's queue): sent late as slots free up within the grace, not dropped.
        let mut s = Schedule::new(&p, 0, 1, 1, Some(ms(3)), None);
        check(
            &mut s,
            &[
                (ms(0), 0, Due { index: 0, intended: ms(0) }),
                (ms(0), 1, Wait { until: ms(1) }),
                (ms(1), 1, Bound),
                (ms(4), 0, Late { index: 1, intended: ms(1), late_by: ms(3) }),
                (ms(4), 1, Bound),
                (ms(5), 0, Late { index: 2, intended: ms(2), late_by: ms(3) }),
                (ms(5), 1, Done { attack_end: ms(3) }),
            ],
        );
        // A thread that fell far behind (over END_GRACE) with slots free stops at the end
        // all the same.
        let mut s = Schedule::new(&p, 0, 1, 64, Some(ms(10)), None);
        check(
            &mut s,
            &[
                (ms(0), 0, Due { index: 0, intended: ms(0) }),
                (us(9_999), 1, Due { index: 1, intended: ms(1) }),
                (ms(150), 2, Dropped { count: 8 }),
                (ms(150), 2, Done { attack_end: ms(10) }),
            ],
        );
        // Timer jitter at the end: the last request, due 0.5 ms before the end, is sent
        // (late) when the thread wakes 0.2 ms after it with a slot free; not dropped.
        let mut s = Schedule::new(&p, 0, 1, 64, Some(us(9_500)), None);
        s.next = 9;
        check(
            &mut s,
            &[(us(9_700), 0, Due { index: 9, intended: ms(9) }), (us(9_700), 1, Done { attack_end: us(9_500) })],
        );
        // Thread 2 of 3 had requests 2, 5, 8 due before the end, and is far behind.
        let mut s = Schedule::new(&p, 2, 3, 1, Some(ms(10)), None);
        check(&mut s, &[(ms(200), 0, Dropped { count: 3 }), (ms(200), 0, Done { attack_end: ms(10) })]);
        // Nothing left before the end: nothing dropped.
        let mut s = Schedule::new(&p, 0, 1, 1, Some(us(500)), None);
        check(&mut s, &[(ms(0), 0, Due { index: 0, intended: ms(0) }), (ms(1), 0, Done { attack_end: us(500) })]);
    }

    #[test]
    fn very_high_rate_counts_dropped_requests_in_bulk() {
        // A billion requests per second for a second: what was not sent is counted by
        // bisection (a step per request would take seconds here).
        let p = Pacer::Constant { rate: 1e9 };
        let mut s = Schedule::new(&p, 0, 1, 1, Some(ms(1_000)), None);
        check(
            &mut s,
            &[
                (ms(0), 0, Due { index: 0, intended: ms(0) }),
                (us(1), 1, Bound),
                (ms(1_000), 1, Dropped { count: 999_999_999 }),
                (ms(1_000), 0, Done { attack_end: ms(1_000) }),
            ],
        );
        // Threads split the count exactly: thread 1 of 3 owns 1, 4, ..., 999_999_997.
        let mut s = Schedule::new(&p, 1, 3, 1, Some(ms(1_000)), None);
        check(&mut s, &[(ms(2_000), 0, Dropped { count: 333_333_333 })]);
        // Nor do 1e15 (a billion per second for a million seconds).
        let end = Duration::from_secs(1_000_000);
        let mut s = Schedule::new(&p, 0, 1, 1, Some(end), None);
        check(&mut s, &[(end, 0, Dropped { count: 1_000_000_000_000_000 })]);
    }

    #[test]
    fn request_count() {
        // -n 5 at 10/s over two threads: thread 0 sends 0, 2, 4; thread 1 sends 1, 3. Both
        // end the attack when request 5 would have started.
        let p = Pacer::Constant { rate: 10.0 };
        let mut s = Schedule::new(&p, 0, 2, 4, None, Some(5));
        check(
            &mut s,
            &[
                (ms(0), 0, Due { index: 0, intended: ms(0) }),
                (ms(0), 1, Wait { until: ms(200) }),
                (ms(200), 0, Due { index: 2, intended: ms(200) }),
                (ms(200), 1, Wait { until: ms(400) }),
                (ms(400), 0, Due { index: 4, intended: ms(400) }),
                (ms(400), 1, Done { attack_end: ms(500) }),
            ],
        );
        let mut s = Schedule::new(&p, 1, 2, 4, None, Some(5));
        let (sent, dropped, end) = follow(&mut s);
        assert_eq!((sent, dropped, end), (vec![ms(100), ms(300)], 0, ms(500)));
        // The count also bounds what the end of the attack drops: requests 1 and 2 only.
        let mut s = Schedule::new(&p, 0, 1, 1, Some(ms(1_000)), Some(3));
        check(
            &mut s,
            &[
                (ms(0), 0, Due { index: 0, intended: ms(0) }),
                (ms(100), 1, Bound),
                (ms(1_000), 1, Dropped { count: 2 }),
                (ms(1_000), 1, Done { attack_end: ms(1_000) }),
            ],
        );
        // Without a limit, a bound only ever waits.
        let mut s = Schedule::new(&p, 0, 1, 1, None, Some(3));
        check(&mut s, &[(ms(0), 0, Due { index: 0, intended: ms(0) }), (ms(5_000), 1, Bound)]);
    }
}
