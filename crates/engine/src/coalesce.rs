//! Coalesced wake-ups: when a closed loop's answers come often but each takes long, its
//! engine thread sleeps a little before it waits on its sockets, and reads the answers that
//! landed meanwhile at once, instead of being woken for each (as a network card coalesces
//! its interrupts).
//!
//! Why: a server that sends to a client asleep on its sockets wakes it, and pays for the
//! wake-up. On a VM, waking an idle vCPU is an exit to the hypervisor: at HTTP/2 with 10 ×
//! 100 streams, nginx spent 9.4-9.5 µs a response under barrage, and 6.6-6.8 µs once
//! barrage coalesced its wake-ups, answering 1.41× as many requests a second
//! (bench/results/2026-11-29_1935-i36-h2-coalesce.txt). A thread asleep on a timer is not
//! waiting on its sockets, so the server's sends wake nobody.
//!
//! What it may cost the figures: an answer that lands during a sleep is read when it ends,
//! up to the sleep later, and an answer that waits on the network more than once (a new
//! connection's handshakes, a large body's flow control) may meet a sleep at each wait.
//! So the sleep is at most a [`SHARE`]th of the quickest service time among the thread's
//! recent answers (and at most [`MAX_SLEEP`]), and an answer quicker than that allows
//! shortens it at once. It is taken only when it is long enough to be worth a timer
//! ([`MIN_SLEEP`]) and at least [`MIN_GATHERED`] answers are expected to land in it.
//! Otherwise the thread waits on its sockets as before: short service times, few answers,
//! an open loop (its sends keep their schedule), HTTP/3 (a UDP socket drops what overflows
//! its buffer while nobody reads). The thread's timers may fire up to the sleep late too:
//! a retry's pause, a flow's think time, a capped worker's next turn, `--timeout`, the
//! run's end. The longest sleep a run's threads took is in its results
//! ([`Coalesce::longest`]), and the report says it.

use barrage_plan::{Load, Plan, Protocol};
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
const MIN_GATHERED: u128 = 2;
/// Answers between two decisions.
const EVERY: u64 = 256;

/// One engine thread's coalescing: the sleep it takes before each wait on its sockets
/// ([`Coalesce::hook`]), decided from its recent answers ([`Coalesce::answered`]).
pub(crate) struct Coalesce {
    /// The sleep, in nanoseconds (0: none), that the runtime's park hook takes.
    sleep_ns: Arc<AtomicU64>,
    /// The longest sleep the hook took so far, in nanoseconds.
    longest_ns: Arc<AtomicU64>,
    /// Of the answers since the last decision: how many, and the quickest service time.
    answers: Cell<u64>,
    quickest: Cell<Duration>,
    /// When the last decision was made, or the first answer ended (from the run's start);
    /// `None` before that answer.
    since: Cell<Option<Duration>>,
}

impl Coalesce {
    /// A thread's coalescing for `plan`: none for HTTP/3, or when any of its loads is open.
    pub(crate) fn of(plan: &Plan) -> Option<Coalesce> {
        let closed = |load: &Load| matches!(load, Load::Closed { .. });
        let groups = plan.scenario.as_deref().is_none_or(|s| s.groups.iter().all(|g| closed(&g.load)));
        let udp = matches!(plan.protocol, Protocol::Http3 { .. });
        (closed(&plan.load) && groups && !udp).then(Coalesce::new)
    }

    /// A thread that sleeps not at all until its answers say it should.
    fn new() -> Coalesce {
        Coalesce {
            sleep_ns: Arc::new(AtomicU64::new(0)),
            longest_ns: Arc::new(AtomicU64::new(0)),
            answers: Cell::new(0),
            quickest: Cell::new(Duration::MAX),
            since: Cell::new(None),
        }
    }

    /// What the runtime runs as the thread is about to wait on its sockets: the sleep.
    pub(crate) fn hook(&self) -> impl Fn() + Send + Sync + 'static {
        let (sleep, longest) = (self.sleep_ns.clone(), self.longest_ns.clone());
        move || {
            let ns = sleep.load(Ordering::Relaxed);
            if ns > 0 {
                std::thread::sleep(Duration::from_nanos(ns));
                longest.fetch_max(ns, Ordering::Relaxed);
            }
        }
    }

    /// The longest sleep the thread took (zero: it never slept).
    pub(crate) fn longest(&self) -> Duration {
        Duration::from_nanos(self.longest_ns.load(Ordering::Relaxed))
    }

    /// `n` answers alike, each served in `service`, the last ended at `ended`.
    pub(crate) fn answered(&self, service: Duration, ended: Duration, n: u64) {
        let since = self.since.get().unwrap_or(ended);
        self.since.set(Some(since));
        if service / SHARE < self.sleep() {
            // Quicker than the sleep allows: shorter from the next wait on.
            self.set(allowed(service / SHARE));
        }
        self.quickest.set(self.quickest.get().min(service));
        let answers = self.answers.get() + n;
        // A rate needs time: replies of one read, all ended at once, wait for later ones.
        if answers < EVERY || ended <= since {
            self.answers.set(answers);
            return;
        }
        self.set(decide(self.quickest.get(), answers, ended.saturating_sub(since)));
        self.answers.set(0);
        self.quickest.set(Duration::MAX);
        self.since.set(Some(ended));
    }

    /// The sleep now decided.
    fn sleep(&self) -> Duration {
        Duration::from_nanos(self.sleep_ns.load(Ordering::Relaxed))
    }

    fn set(&self, sleep: Duration) {
        self.sleep_ns.store(sleep.as_nanos() as u64, Ordering::Relaxed);
    }
}

/// The sleep for answers whose quickest took `quickest`, `answers` of them within `over`.
fn decide(quickest: Duration, answers: u64, over: Duration) -> Duration {
    let sleep = allowed(quickest / SHARE);
    // Answers due within the sleep at this rate, in whole numbers: answers × sleep / over.
    let due = u128::from(answers) * sleep.as_nanos() / over.as_nanos().max(1);
    if due >= MIN_GATHERED {
        sleep
    } else {
        Duration::ZERO
    }
}

/// `sleep` within the bounds: at most [`MAX_SLEEP`], and none below [`MIN_SLEEP`].
fn allowed(sleep: Duration) -> Duration {
    if sleep < MIN_SLEEP {
        Duration::ZERO
    } else {
        sleep.min(MAX_SLEEP)
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
    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_sleep_is_a_hundredth_of_the_quickest_answer_and_at_most_1_ms() {
        // 150,000 answers a second: any sleep of 20 µs or more gathers at least three.
        let busy = |quickest| decide(quickest, 150_000, SECOND);
        assert_eq!(busy(3 * MS), 30 * US);
        assert_eq!(busy(7 * MS + 500 * US), 75 * US);
        assert_eq!(busy(100 * MS), MS);
        assert_eq!(busy(2 * SECOND), MAX_SLEEP);
        // Below 2 ms the hundredth is too short to be worth a timer.
        assert_eq!(busy(1999 * US), Duration::ZERO);
        assert_eq!(busy(2 * MS), MIN_SLEEP);
    }

    #[test]
    fn no_sleep_when_fewer_than_two_answers_would_land_in_it() {
        // 100 µs gathers two answers at 20,000 a second, not at 19,999.
        assert_eq!(decide(10 * MS, 20_000, SECOND), 100 * US);
        assert_eq!(decide(10 * MS, 19_999, SECOND), Duration::ZERO);
        // 1 ms, two at 2,000 a second.
        assert_eq!(decide(100 * MS, 2_000, SECOND), MS);
        assert_eq!(decide(100 * MS, 1_999, SECOND), Duration::ZERO);
        // A closed loop of one at 10 ms: a hundred answers a second.
        assert_eq!(decide(10 * MS, 256, Duration::from_millis(2_560)), Duration::ZERO);
    }

    #[test]
    fn a_thread_decides_every_256_answers_from_those_alone() {
        let c = Coalesce::new();
        // 255 answers of 5 ms, 10 µs apart: not yet.
        for i in 0..255 {
            c.answered(5 * MS, i * 10 * US, 1);
        }
        assert_eq!(c.sleep(), Duration::ZERO);
        c.answered(5 * MS, 2550 * US, 1);
        assert_eq!(c.sleep(), 50 * US);
        // The next 256, from the last decision on: 8 ms apiece over 2.56 ms.
        c.answered(8 * MS, 3 * MS, 1);
        c.answered(8 * MS, 5110 * US, 255);
        assert_eq!(c.sleep(), 80 * US);
        // Alike replies of one read, all ended at once, wait for a later answer to decide.
        c.answered(50 * MS, 5110 * US, 300);
        assert_eq!(c.sleep(), 80 * US);
        c.answered(50 * MS, 8 * MS, 1);
        assert_eq!(c.sleep(), 500 * US);
        // And the hook sleeps what was decided, which counts as taken only then.
        assert_eq!(c.longest(), Duration::ZERO);
        let hook = c.hook();
        let t = std::time::Instant::now();
        hook();
        assert!(t.elapsed() >= 500 * US, "{:?}", t.elapsed());
        assert_eq!(c.longest(), 500 * US);
    }

    #[test]
    fn a_quicker_answer_shortens_the_sleep_at_once() {
        let c = Coalesce::new();
        c.answered(50 * MS, Duration::ZERO, 255);
        c.answered(50 * MS, 10 * MS, 1);
        assert_eq!(c.sleep(), 500 * US);
        // A cache's hit among slow misses: its hundredth is the sleep from now on.
        c.answered(3 * MS, 11 * MS, 1);
        assert_eq!(c.sleep(), 30 * US);
        // One under 2 ms ends it.
        c.answered(MS, 12 * MS, 1);
        assert_eq!(c.sleep(), Duration::ZERO);
    }

    #[test]
    fn only_closed_loops_over_tcp_coalesce() {
        let target = || vec![barrage_plan::Target::new(http::Method::GET, "http://127.0.0.1:1/").unwrap()];
        let closed = Load::Closed { concurrency: 10, think_time: Duration::ZERO };
        let open = Load::Open { pacer: barrage_plan::Pacer::Constant { rate: 100.0 }, max_in_flight: 10 };
        assert!(Coalesce::of(&Plan::new(target(), closed.clone())).is_some());
        assert!(Coalesce::of(&Plan::new(target(), open)).is_none());
        let mut h3 = Plan::new(target(), closed.clone());
        h3.protocol = Protocol::http3(10);
        assert!(Coalesce::of(&h3).is_none());
        // A scenario coalesces only if every group is a closed loop.
        let flow = "[[flow.f.step]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/\"\n";
        for (groups, coalesces) in [
            ("[group.a]\nflow = \"f\"\nconcurrency = 2\n", true),
            ("[group.a]\nflow = \"f\"\nconcurrency = 2\n[group.b]\nflow = \"f\"\nrate = 5\n", false),
        ] {
            let text = format!("{flow}{groups}");
            let (scenario, targets) =
                barrage_plan::scenario::parse(&text, "t.toml", std::path::Path::new("."), &[], &closed).unwrap();
            let mut plan = Plan::new(targets, closed.clone());
            plan.scenario = Some(std::sync::Arc::new(scenario));
            assert_eq!(Coalesce::of(&plan).is_some(), coalesces, "{groups}");
        }
    }
}
