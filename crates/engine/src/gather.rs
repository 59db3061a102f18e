//! Gathering answers into one wake-up: when a closed loop's answers come often but each
//! takes long, its engine thread sleeps a little before it waits on its sockets, and reads
//! the answers that landed meanwhile at once, instead of being woken for each.
//!
//! Why: a server that sends to a client asleep on its sockets wakes it, and pays for the
//! wake-up. On a VM, waking an idle vCPU is an exit to the hypervisor: at HTTP/2 with 10 ×
//! 100 streams, nginx spent 9.4-9.7 µs a response under barrage and 6.1-6.3 µs once
//! barrage slept 20 µs before each wait, and answered 1.5× as many requests a second
//! (bench/results/2026-11-29_1935-i36-h2-gather.txt). A thread asleep on a timer is not
//! waiting on its sockets, so the server's sends wake nobody.
//!
//! What it may cost the figures: an answer that lands during the sleep is read when it
//! ends, up to the sleep later. So the sleep is at most a [`SHARE`]th of the quickest
//! service time among the thread's last [`EVERY`] answers (and at most [`MAX_SLEEP`]): an
//! answer as quick as those is measured at most 1% slow. It is taken only when it is long
//! enough to be worth a timer ([`MIN_SLEEP`]) and at least [`MIN_GATHERED`] answers are
//! expected to land in it; otherwise (short service times, few answers, an open loop,
//! whose sends must keep their schedule) the thread waits on its sockets as before. Its
//! timers may fire up to the sleep late too: a retry's pause, a flow's think time, the
//! run's end.

use barrage_plan::{Load, Plan};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The sleep's bound as a share of the quickest recent service time: 1%.
const SHARE: u32 = 100;
/// No sleep is longer: a thread must still notice a stop or a timer soon.
const MAX_SLEEP: Duration = Duration::from_millis(1);
/// Shorter sleeps are not taken: the timer's own wake-up would cost about what it saves.
const MIN_SLEEP: Duration = Duration::from_micros(20);
/// Answers expected to land within one sleep, at the recent rate, for it to be taken.
const MIN_GATHERED: f64 = 2.0;
/// Answers between two decisions.
const EVERY: u64 = 256;

/// One engine thread's gathering: the sleep it takes before each wait on its sockets
/// ([`Gather::hook`]), decided from its recent answers ([`Gather::answered`]).
pub(crate) struct Gather {
    /// The sleep, in nanoseconds (0: none); read by the runtime's park hook.
    sleep_ns: Arc<AtomicU64>,
    /// Of the answers since the last decision: how many, the quickest service time, and
    /// when the first ended (from the run's start).
    answers: Cell<u64>,
    quickest: Cell<Duration>,
    since: Cell<Option<Duration>>,
}

impl Gather {
    /// A thread's gathering for `plan`: none when any of its loads is open.
    pub(crate) fn of(plan: &Plan) -> Option<Gather> {
        let closed = |load: &Load| matches!(load, Load::Closed { .. });
        let groups = plan.scenario.as_deref().is_none_or(|s| s.groups.iter().all(|g| closed(&g.load)));
        (closed(&plan.load) && groups).then(Gather::new)
    }

    /// A thread that gathers nothing until its answers say it should.
    fn new() -> Gather {
        Gather {
            sleep_ns: Arc::new(AtomicU64::new(0)),
            answers: Cell::new(0),
            quickest: Cell::new(Duration::MAX),
            since: Cell::new(None),
        }
    }

    /// What the runtime runs as the thread is about to wait on its sockets: the sleep.
    pub(crate) fn hook(&self) -> impl Fn() + Send + Sync + 'static {
        let sleep = self.sleep_ns.clone();
        move || {
            let ns = sleep.load(Ordering::Relaxed);
            if ns > 0 {
                std::thread::sleep(Duration::from_nanos(ns));
            }
        }
    }

    /// `n` answers alike, each served in `service`, the last ended at `ended`.
    pub(crate) fn answered(&self, service: Duration, ended: Duration, n: u64) {
        let since = self.since.get().unwrap_or(ended);
        self.since.set(Some(since));
        self.quickest.set(self.quickest.get().min(service));
        let answers = self.answers.get() + n;
        if answers < EVERY {
            self.answers.set(answers);
            return;
        }
        let sleep = decide(self.quickest.get(), answers, ended.saturating_sub(since));
        self.sleep_ns.store(sleep.as_nanos() as u64, Ordering::Relaxed);
        self.answers.set(0);
        self.quickest.set(Duration::MAX);
        self.since.set(None);
    }

    /// The sleep now decided (for tests).
    #[cfg(test)]
    fn sleep(&self) -> Duration {
        Duration::from_nanos(self.sleep_ns.load(Ordering::Relaxed))
    }
}

/// The sleep for answers whose quickest took `quickest`, `answers` of them within `over`.
fn decide(quickest: Duration, answers: u64, over: Duration) -> Duration {
    let sleep = (quickest / SHARE).min(MAX_SLEEP);
    let per_second = answers as f64 / over.as_secs_f64().max(1e-6);
    if sleep >= MIN_SLEEP && per_second * sleep.as_secs_f64() >= MIN_GATHERED {
        sleep
    } else {
        Duration::ZERO
    }
}

/// Makes this thread's timers end when asked: Linux lets a thread's sleeps run up to 50 µs
/// late by default (its timer slack), which would add as much to the answers gathered.
pub(crate) fn precise_sleeps() {
    // SAFETY: PR_SET_TIMERSLACK takes a number of nanoseconds and touches only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const US: Duration = Duration::from_micros(1);

    #[test]
    fn the_sleep_is_a_hundredth_of_the_quickest_answer_and_at_most_1_ms() {
        // 150,000 answers a second: any sleep of 20 µs or more gathers at least three.
        let busy = |quickest| decide(quickest, 150_000, Duration::from_secs(1));
        assert_eq!(busy(3 * MS), 30 * US);
        assert_eq!(busy(7 * MS + 500 * US), 75 * US);
        assert_eq!(busy(100 * MS), MS);
        assert_eq!(busy(Duration::from_secs(2)), MAX_SLEEP);
        // Below 2 ms the hundredth is too short to be worth a timer.
        assert_eq!(busy(1999 * US), Duration::ZERO);
        assert_eq!(busy(2 * MS), MIN_SLEEP);
    }

    #[test]
    fn no_sleep_when_fewer_than_two_answers_would_land_in_it() {
        // 100 µs gathers two answers at 20,000 a second, not at 19,000.
        assert_eq!(decide(10 * MS, 20_000, Duration::from_secs(1)), 100 * US);
        assert_eq!(decide(10 * MS, 19_000, Duration::from_secs(1)), Duration::ZERO);
        // 1 ms, two at 2,000 a second.
        assert_eq!(decide(100 * MS, 2_000, Duration::from_secs(1)), MS);
        assert_eq!(decide(100 * MS, 1_900, Duration::from_secs(1)), Duration::ZERO);
        // A closed loop of one at 10 ms: a hundred answers a second.
        assert_eq!(decide(10 * MS, 256, Duration::from_millis(2_560)), Duration::ZERO);
        // All at once (alike replies of one read): as fast as can be.
        assert_eq!(decide(10 * MS, 256, Duration::ZERO), 100 * US);
    }

    #[test]
    fn a_thread_decides_every_256_answers_from_those_alone() {
        let g = Gather::new();
        // 255 answers of 5 ms, 10 µs apart: not yet.
        for i in 0..255 {
            g.answered(5 * MS, i * 10 * US, 1);
        }
        assert_eq!(g.sleep(), Duration::ZERO);
        g.answered(5 * MS, 2550 * US, 1);
        assert_eq!(g.sleep(), 50 * US);
        // The next 256, one of them quick: the quickest decides, not the earlier ones.
        g.answered(MS, 3 * MS, 1);
        g.answered(5 * MS, 4 * MS, 255);
        assert_eq!(g.sleep(), Duration::ZERO);
        // And the hook sleeps what was decided.
        for _ in 0..2 {
            g.answered(50 * MS, 5 * MS, 128);
        }
        assert_eq!(g.sleep(), 500 * US);
        let hook = g.hook();
        let t = std::time::Instant::now();
        hook();
        assert!(t.elapsed() >= 500 * US, "{:?}", t.elapsed());
    }

    #[test]
    fn only_closed_loops_gather() {
        let target = || vec![barrage_plan::Target::new(http::Method::GET, "http://127.0.0.1:1/").unwrap()];
        let closed = Load::Closed { concurrency: 10, think_time: Duration::ZERO };
        let open = Load::Open { pacer: barrage_plan::Pacer::Constant { rate: 100.0 }, max_in_flight: 10 };
        assert!(Gather::of(&Plan::new(target(), closed.clone())).is_some());
        assert!(Gather::of(&Plan::new(target(), open)).is_none());
        // A scenario gathers only if every group is a closed loop.
        let flow = "[[flow.f.step]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/\"\n";
        for (groups, gathers) in [
            ("[group.a]\nflow = \"f\"\nconcurrency = 2\n", true),
            ("[group.a]\nflow = \"f\"\nconcurrency = 2\n[group.b]\nflow = \"f\"\nrate = 5\n", false),
        ] {
            let text = format!("{flow}{groups}");
            let (scenario, targets) =
                barrage_plan::scenario::parse(&text, "t.toml", std::path::Path::new("."), &[], &closed).unwrap();
            let mut plan = Plan::new(targets, closed.clone());
            plan.scenario = Some(std::sync::Arc::new(scenario));
            assert_eq!(Gather::of(&plan).is_some(), gathers, "{groups}");
        }
    }
}
