//! How load loops hand out work, below the thread that runs them and the slots and
//! key-value lanes they feed: an open loop's pool of free slots (an HTTP slot's mailbox, a
//! key-value group's inbox), a closed loop's quota of requests and each worker's turns in
//! its round. Apart from the thread's loop so that the key-value lanes take their work from
//! the same floor as HTTP slots without naming the thread. Uses the attempt and worker floors.

use crate::attempt::Job;
use crate::worker::Worker;
use barrage_plan::Picker;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::Waker;
use std::time::Duration;
use tokio::sync::Notify;

/// What a load loop runs: the run's requests, or the flows of one group of a scenario.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Work {
    Requests,
    Flows(usize),
}

/// A slot's mailbox: the scheduler puts a job in and wakes it.
#[derive(Default)]
pub(crate) struct Mailbox {
    job: Cell<Option<Job>>,
    wake: Notify,
}

impl Mailbox {
    /// Waits to be woken: with a job, or with none when the loop has ended.
    pub(crate) async fn receive(&self) -> Option<Job> {
        self.wake.notified().await;
        self.job.take()
    }
}

/// What an open loop's scheduler hands a key-value group: commands for its free lanes.
#[derive(Default)]
pub(crate) struct Inbox {
    jobs: RefCell<Vec<(u32, Job)>>,
    waker: RefCell<Option<Waker>>,
}

impl Inbox {
    /// Hands lane `lane` its `job`.
    pub(crate) fn push(&self, lane: u32, job: Job) {
        self.jobs.borrow_mut().push((lane, job));
        self.wake();
    }

    /// The loop has ended ([`Pool::closed`]): the group finishes once its lanes are done.
    pub(crate) fn close(&self) {
        self.wake();
    }

    /// Wakes `waker` when a job comes or the loop ends.
    pub(crate) fn register(&self, waker: &Waker) {
        let mut held = self.waker.borrow_mut();
        if !held.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *held = Some(waker.clone());
        }
    }

    /// Swaps the jobs handed over so far with `jobs` (empty): their vectors take turns.
    pub(crate) fn take(&self, jobs: &mut Vec<(u32, Job)>) {
        std::mem::swap(&mut *self.jobs.borrow_mut(), jobs);
    }

    fn wake(&self) {
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// A free slot of an open loop, and how a job reaches it: an HTTP slot's task, or a lane of
/// a key-value group (whose one task runs all its lanes).
pub(crate) enum Free {
    Slot(Rc<Mailbox>),
    Lane(Rc<Inbox>, u32),
}

impl Free {
    /// Hands `job` over and wakes whoever runs it.
    pub(crate) fn dispatch(self, job: Job) {
        match self {
            Free::Slot(mb) => {
                mb.job.set(Some(job));
                mb.wake.notify_one();
            }
            Free::Lane(inbox, lane) => inbox.push(lane, job),
        }
    }

    /// Tells it the loop has ended: no job is coming.
    pub(crate) fn close(self) {
        match self {
            Free::Slot(mb) => mb.wake.notify_one(),
            Free::Lane(inbox, _) => inbox.close(),
        }
    }
}

/// An open loop's free slots: the scheduler takes one for each request; a slot done with
/// its request gives itself back.
pub(crate) struct Pool {
    idle: RefCell<Vec<Free>>,
    freed: Notify,
    closed: Cell<bool>,
}

impl Pool {
    /// An empty pool for `slots` slots.
    pub(crate) fn new(slots: usize) -> Pool {
        Pool { idle: RefCell::new(Vec::with_capacity(slots)), freed: Notify::new(), closed: Cell::new(false) }
    }

    /// How many slots are free.
    pub(crate) fn idle(&self) -> usize {
        self.idle.borrow().len()
    }

    /// The free slot used last (its connection the warmest).
    pub(crate) fn take(&self) -> Option<Free> {
        self.idle.borrow_mut().pop()
    }

    /// Waits for a slot to be given back.
    pub(crate) async fn freed(&self) {
        self.freed.notified().await;
    }

    /// Ends the loop: the free slots are told no job is coming.
    pub(crate) fn close(&self) {
        self.closed.set(true);
        for free in self.idle.borrow_mut().drain(..) {
            free.close();
        }
    }

    /// `slot` joins the pool, free.
    pub(crate) fn join(&self, slot: Free) {
        self.idle.borrow_mut().push(slot);
    }

    /// `slot` is done with its request and free again.
    pub(crate) fn release(&self, slot: Free) {
        // Most recently used first, so warm connections are reused and a slow run does not
        // open every slot's connection.
        self.idle.borrow_mut().push(slot);
        self.freed.notify_one();
    }

    /// The loop has ended: slots finish their request and take no other.
    pub(crate) fn closed(&self) -> bool {
        self.closed.get()
    }
}

/// A closed-loop worker's (or key-value lane's) place in the round of targets: it takes
/// a whole round of the quota at a time and sends it itself (memtier's way), so the mix
/// holds on every worker, and with `-n` over the run exactly.
#[derive(Default)]
pub(crate) struct Turns {
    /// Its next request's place in its round.
    next: u64,
    /// Requests of its round not sent yet.
    left: u64,
}

impl Turns {
    /// This turn, the next one taken.
    fn take(&mut self) -> u64 {
        self.next += 1;
        self.next - 1
    }
}

/// What the workers of a closed loop (or the lanes of its key-value groups) share: the
/// quota of requests, their turns, and when the attack ended.
pub(crate) struct Closed {
    quota: Option<Cell<u64>>,
    /// The requests of a round ([`Plan::round`]), which a worker takes from the quota at once.
    round: u64,
    /// Requests the workers took from the quota and have not sent yet.
    taken: Cell<u64>,
    turn: Cell<u64>,
    attack_end: Cell<Duration>,
    /// The end of the loop's window.
    deadline: Option<Duration>,
    /// The pause after each request.
    pub(crate) think: Duration,
    /// This thread's lanes of the run's request numbers, and how many lanes there are: its
    /// workers' places among the whole loop's ([`Plan::worker_lanes`]), each lane w owning
    /// the numbers w, w + all, w + 2·all, …
    lanes: (std::ops::Range<u64>, u64),
    picker: Picker,
    request_of: Box<dyn Fn(u64, u64) -> (u64, u64)>,
}

impl Closed {
    pub(crate) fn new(w: &Worker, work: Work, deadline: Option<Duration>, think: Duration) -> Closed {
        // A request run's lanes are its workers: each worker of the whole loop sends its own
        // share of `-n`, so a thread's (and a shard's) part follows its workers, however they
        // fall over threads and shards, and they all end together. (Split evenly per thread
        // instead, the lone worker of a thread of one sent as much as the two of another.)
        // A flow's requests are its steps, numbered by their flows: its lane is the thread's.
        let lanes = match work {
            Work::Requests => (w.plan.worker_lanes(w.index, w.threads), w.plan.clients()),
            Work::Flows(_) => {
                let (lane, lanes) = w.lane();
                (lane..lane + 1, lanes)
            }
        };
        let quota = match work {
            Work::Requests => {
                w.plan.requests.map(|n| Cell::new(barrage_plan::requests_of(n, lanes.0.clone(), lanes.1)))
            }
            Work::Flows(_) => None,
        };
        Closed {
            quota,
            round: w.plan.round(),
            taken: Cell::new(0),
            turn: Cell::new(0),
            attack_end: Cell::new(Duration::ZERO),
            deadline,
            think,
            // The threads take the numbers of their lanes each at its own pace: repeats look
            // back along their own lane.
            picker: w.picker().in_lanes(lanes.1),
            lanes,
            request_of: Box::new(w.plan.request_of()),
        }
    }

    /// Whether a worker may start another request (or flow) at `now`: `Some(last)` (true
    /// for the quota's last), or `None` when it stops (`stopped` by Ctrl-C, the window's
    /// end, the quota used up), the attack's end noted.
    pub(crate) fn admit(&self, now: Duration, stopped: bool, turns: &mut Turns) -> Option<bool> {
        if stopped || self.deadline.is_some_and(|d| now >= d) {
            self.ended_at(self.deadline.map_or(now, |d| now.min(d)));
            return None;
        }
        if turns.left == 0 {
            // A new round: taken whole from the quota (its rest, at the end), so that with
            // `-n 5500` and `--ratio 1:10` the run sends exactly 500 SETs.
            let round = match &self.quota {
                Some(q) if q.get() == 0 => return None,
                Some(q) => {
                    let r = q.get().min(self.round);
                    q.set(q.get() - r);
                    r
                }
                None => self.round,
            };
            *turns = Turns { next: 0, left: round };
            self.taken.set(self.taken.get() + round);
        }
        turns.left -= 1;
        self.taken.set(self.taken.get() - 1);
        let last = self.quota.as_ref().is_some_and(|q| q.get() == 0) && self.taken.get() == 0;
        if last {
            // The quota's last request: the attack ends as it is sent.
            self.ended_at(now);
        }
        Some(last)
    }

    /// The next request of a worker whose own turns are at `turn`, admitted at `now`, with
    /// its number taken.
    pub(crate) fn request(&self, now: Duration, turn: &mut Turns) -> Job {
        // The thread's requests take the numbers of its lanes in the order they start, a
        // round of its lanes at a time, so the threads' (and shards') numbers together are
        // 0, 1, 2, …: what request k asks for (its id, its value's size) is the same however
        // the run is split. Its target goes by the worker's own turn (see `Plan::request_of`).
        let k = self.number(self.turn.get());
        self.turn.set(self.turn.get() + 1);
        let (draw, intent) = self.picker.draw(k);
        let (target, id) = (self.request_of)(turn.take(), draw);
        Job { intended: now, target, id, number: k, late: false, attempt: 1, starts_now: true, intent }
    }

    /// The number the thread's request `turn` takes: lane `turn mod m` of its `m`, round
    /// `turn / m`. With `-n` its quota is exactly the numbers of its lanes below `n`
    /// ([`barrage_plan::requests_of`]): its first lanes, the lower ones, take one more.
    fn number(&self, turn: u64) -> u64 {
        barrage_plan::lane_number(&self.lanes.0, self.lanes.1, turn)
    }

    /// The first number of the thread's lanes not taken.
    pub(crate) fn next_number(&self) -> u64 {
        self.number(self.turn.get())
    }

    /// The attack ended no earlier than `at`.
    pub(crate) fn ended_at(&self, at: Duration) {
        self.attack_end.set(self.attack_end.get().max(at));
    }

    /// When the attack ended, as far as noted.
    pub(crate) fn attack_end(&self) -> Duration {
        self.attack_end.get()
    }

    /// The end of the loop's window.
    pub(crate) fn deadline(&self) -> Option<Duration> {
        self.deadline
    }
}
