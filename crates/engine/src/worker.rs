//! The worker: the context one engine thread's tasks share (the plan, the prepared targets,
//! the connector, the recorder, the request log, the run's start), and what it hands the
//! collector. Apart from the thread's loops so that the slot, the watchdog and the
//! key-value lanes, which all read it, need not name the thread that runs them. Uses the
//! conn and prepared floors.

use crate::conn::{Connector, Endpoint};
use crate::prepared::{GroupKeys, Prepared};
use crate::reqlog::LogHandle;
use barrage_metrics::Recorder;
use barrage_plan::{Picker, Plan};
use std::cell::{Cell, RefCell};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Length of an interval.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// What a thread tells the collector, with its index.
pub enum Msg {
    /// A closed interval of this thread.
    Interval {
        /// Interval index.
        index: u32,
        /// Offset of the interval's end from the run's start.
        end: Duration,
        /// Its samples.
        recorder: Box<Recorder>,
        /// The thread's CPU time since the run's start, as the interval was handed over.
        cpu: ThreadCpu,
        /// An open loop of requests: where the thread was in its lane.
        lane: Option<barrage_metrics::lanes::LaneMark>,
    },
    /// The thread has finished; no more intervals follow from it.
    Done {
        /// When it stopped sending new requests.
        attack_end: Duration,
        /// When its last request finished.
        end: Duration,
        /// The thread's CPU time from the run's start to `end`.
        cpu: ThreadCpu,
        /// Every slot was busy at least once when a request was due.
        bound_reached: bool,
        /// The first number of its lane of the stream it did not send.
        unsent: u64,
        /// Its requests whose `traceparent` said sampled.
        trace_sampled: u64,
        /// When it sent its first request that finished, from the run's start.
        first_sent: Option<Duration>,
        /// The longest sleep it took before waiting on its sockets ([`crate::coalesce`]).
        coalesced: Duration,
    },
}

/// One engine thread: everything its open-loop scheduler, its slots and its closed-loop
/// workers share, built once per thread and borrowed by all of them. Only this thread
/// touches it (hence `Cell` and `RefCell`, not locks): the hot path records into its
/// recorder with no lock and no channel.
pub struct Worker {
    /// This thread's index.
    pub index: usize,
    /// Number of threads.
    pub threads: usize,
    /// The run.
    pub plan: Arc<Plan>,
    /// The run's targets, ready to send.
    pub targets: Arc<[Prepared]>,
    /// A scenario's keys of figures, per group.
    pub keys: Arc<[GroupKeys]>,
    /// `--trace-context`: the run's trace key, sampling and `tracestate`; `None` sends no
    /// trace headers.
    pub trace: Option<crate::trace::RunTrace>,
    /// Requests this thread sent whose `traceparent` said sampled (each attempt).
    pub trace_sampled: Cell<u64>,
    /// When this thread sent its first request that finished (the earliest send of its
    /// finished requests), from the run's start.
    pub first_sent: Cell<Option<Duration>>,
    /// How URLs are shown in the request log.
    pub redaction: barrage_metrics::secrets::Redaction,
    /// A key-value run's servers and commands.
    pub kv: Option<Arc<crate::kv::KvRun>>,
    /// Their distinct endpoints, by index.
    pub endpoints: Arc<[Endpoint]>,
    /// Opens connections.
    pub connector: Arc<Connector>,
    /// The run's start, common to all threads: every time in a sample is an offset from it.
    pub start: Instant,
    /// The same instant on the wall clock, µs since the Unix epoch, for log timestamps.
    pub start_unix_us: u64,
    /// The plan's end of the attack, if it ends by time (worked out once, not per retry).
    pub attack_limit: Option<Duration>,
    /// `--resume-at`: the arrivals before this offset are not this run's; its closed-loop
    /// workers start at it.
    pub resume_from: Option<Duration>,
    /// `--resume-after`: where the lost shard's thread left this thread's lane.
    pub resume_after: Option<barrage_metrics::lanes::LaneMark>,
    /// An open loop of requests: where this thread is in its lane, for each interval's record.
    pub(crate) marks: RefCell<Option<crate::marks::Marks>>,
    /// Ctrl-C.
    pub stop: CancellationToken,
    /// This thread's recorder for the current interval.
    pub recorder: RefCell<Recorder>,
    /// `--log`: this thread's side of the request log.
    pub log: Option<RefCell<LogHandle>>,
    /// To the collector.
    pub tx: Sender<(usize, Msg)>,
    /// Index of the current interval.
    pub interval: Cell<u32>,
    /// The thread's CPU time when the run started (after the runtime was built and the
    /// common start waited for): what came before is not the run's.
    pub cpu_at_start: Cell<ThreadCpu>,
    /// Closed loops only: the sleep before each wait on the sockets ([`crate::coalesce`]).
    pub(crate) coalesce: Option<crate::coalesce::Coalesce>,
}

/// An engine thread's CPU time since the run's start, and when it was read: barrage's own
/// CPU is its engine threads' (not an origin's, a study's or the collector's in the same
/// process), counted over the run only, so it can never exceed 100% per thread.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadCpu {
    /// When it was read, from the run's start.
    pub at: Duration,
    /// User CPU time.
    pub user: Duration,
    /// System CPU time.
    pub system: Duration,
}

impl Worker {
    /// Hands the current interval, which ends at `end`, to the collector and starts the next.
    pub(crate) fn hand_over(&self, end: Duration) {
        if let Some(log) = &self.log {
            log.borrow_mut().flush();
        }
        let cpu = self.cpu();
        let recorder = Box::new(std::mem::take(&mut *self.recorder.borrow_mut()));
        let index = self.interval.get();
        let lane = self.marks.borrow().as_ref().map(crate::marks::Marks::mark);
        let _ = self.tx.send((self.index, Msg::Interval { index, end, recorder, cpu, lane }));
        self.interval.set(index + 1);
    }

    /// Hands over every interval that ended by `now`. The ticker's timer fires up to a
    /// millisecond after a second's end, and a send meanwhile was counted in the second
    /// before: the first request of each `--step`, due at its start exactly, went to the
    /// step before it (found trying seed 002's study: `--rate 10,50 --step 2s` sent 21
    /// in its first step, its origin's log 20).
    pub(crate) fn catch_up(&self, now: Duration) {
        loop {
            let end = INTERVAL * (self.interval.get() + 1);
            if now < end {
                return;
            }
            self.hand_over(end);
        }
    }

    /// This thread's CPU time since the run's start, read now.
    pub(crate) fn cpu(&self) -> ThreadCpu {
        let (user, system) = thread_cpu();
        let base = self.cpu_at_start.get();
        ThreadCpu {
            at: self.start.elapsed(),
            user: user.saturating_sub(base.user),
            system: system.saturating_sub(base.system),
        }
    }

    /// This thread's part of `n` (slots, workers, requests) of the whole run: the shard's
    /// part (`--shard`), split evenly over the threads.
    pub(crate) fn share(&self, n: usize) -> usize {
        let n = self.plan.shard.share(n as u64) as usize;
        n / self.threads + usize::from(self.index < n % self.threads)
    }

    /// This thread's lane of the run's request numbers: it owns k = lane + j × lanes. The
    /// shards' threads interleave, so together they own every number once.
    pub(crate) fn lane(&self) -> (u64, u64) {
        let shard = self.plan.shard;
        let lanes = u64::from(shard.count) * self.threads as u64;
        (u64::from(shard.index) + u64::from(shard.count) * self.index as u64, lanes)
    }

    /// Arrival `number` of an open loop of requests was sent ([`crate::marks::Marks`]).
    pub(crate) fn lane_sent(&self, number: u64) {
        if let Some(m) = self.marks.borrow_mut().as_mut() {
            m.sent(number);
        }
    }

    /// Arrival `number` of an open loop of requests ended, its outcome recorded.
    pub(crate) fn lane_ended(&self, number: u64) {
        if let Some(m) = self.marks.borrow_mut().as_mut() {
            m.ended(number);
        }
    }

    /// The next `count` arrivals of the thread's lane were dropped at the end of the attack.
    pub(crate) fn lane_dropped(&self, count: u64) {
        if let Some(m) = self.marks.borrow_mut().as_mut() {
            m.dropped(count);
        }
    }

    /// What request k asks for: the same in every thread and every shard.
    pub(crate) fn picker(&self) -> Picker {
        Picker::of(&self.plan)
    }
}

/// CPU time of the calling thread.
pub(crate) fn thread_cpu() -> (Duration, Duration) {
    // SAFETY: getrusage writes into the struct we pass and reads nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}
