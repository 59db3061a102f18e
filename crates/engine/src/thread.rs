//! One engine thread: a current-thread tokio runtime running a share of the slots (open
//! loop) or workers (closed loop), recording into its own [`Recorder`] and handing it to the
//! collector once per interval (HdrHistogram's "phase shift"). Everything the thread's
//! tasks share is in its one [`Worker`].

use crate::attempt::Job;
use crate::exchange::Slot;
use crate::http::Shared;
use crate::schedule::{Decision, Schedule};
use crate::timing::{instant_at, PreciseTimer};
use crate::worker::{thread_cpu, Msg, ThreadCpu, Worker, INTERVAL};
use barrage_plan::{Load, Pacer, Picker};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant as TokioInstant;
use tokio_util::sync::CancellationToken;

/// Runs the thread to completion.
pub fn run(worker: Worker) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, body(worker));
    drop(local);
    // A DNS lookup abandoned by a timeout still runs on the blocking pool; dropping the
    // runtime normally would wait for it, past --duration + --timeout.
    rt.shutdown_background();
    Ok(())
}

async fn body(worker: Worker) {
    // Every time in a sample is an offset from the common start: nothing may begin before it.
    // With --start-at that may be hours away: a signal meanwhile ends the wait, and the load
    // below then stops at once, sending nothing.
    let mut timer = PreciseTimer::new();
    tokio::select! {
        _ = timer.sleep_until(worker.start) => {}
        _ = worker.stop.cancelled() => {}
    }
    let (user, system) = thread_cpu();
    worker.cpu_at_start.set(ThreadCpu { at: Duration::ZERO, user, system });
    let w = Rc::new(worker);
    let start = TokioInstant::from_std(w.start);
    let ticker = async {
        loop {
            let end = INTERVAL * (w.interval.get() + 1);
            tokio::time::sleep_until(start + end).await;
            w.hand_over(end);
        }
    };
    let load = async {
        match &w.plan.scenario {
            Some(_) => groups(&w).await,
            None => {
                let whole = Window { start: Duration::ZERO, end: w.attack_limit };
                run_load(&w, &w.plan.load, whole, Work::Requests).await
            }
        }
    };
    let outcome = tokio::select! {
        o = load => o,
        _ = ticker => unreachable!("the ticker never ends"),
    };
    // Read before `end`, so the thread's CPU is never counted over more time than it had.
    let cpu = w.cpu();
    let end = w.start.elapsed();
    w.hand_over(end);
    let done = Msg::Done {
        attack_end: outcome.attack_end,
        end,
        cpu,
        bound_reached: outcome.bound_reached,
        unsent: outcome.unsent,
    };
    let _ = w.tx.send((w.index, done));
}

struct LoadOutcome {
    attack_end: Duration,
    bound_reached: bool,
    /// The first number of the thread's lane it did not send (0 for flows, whose requests
    /// are steps, not the stream's).
    unsent: u64,
}

/// What a load loop runs: the run's requests, or the flows of one group of a scenario.
#[derive(Clone, Copy, Debug)]
enum Work {
    Requests,
    Flows(usize),
}

/// When a load loop sends: from `start` to `end` (offsets from the run's start).
#[derive(Clone, Copy, Debug)]
struct Window {
    start: Duration,
    end: Option<Duration>,
}

/// One load loop: open or closed.
/// Connections are shared out to the threads, never split: each of a thread's connections
/// carries `--streams` HTTP/2 slots or workers (a key-value run's, `--pipeline` of them).
/// An open loop's bound counts requests in HTTP (`--streams` to a connection), connections
/// in a key-value run.
async fn run_load(w: &Rc<Worker>, load: &Load, window: Window, work: Work) -> LoadOutcome {
    let per_conn = w.plan.protocol.per_connection();
    match load {
        Load::Open { pacer, .. } => {
            let conns = w.plan.protocol.connections(load);
            open_loop(w, pacer, w.share(conns) * per_conn, window, work).await
        }
        Load::Closed { concurrency, think_time } => {
            let shard_workers = w.plan.shard.share(*concurrency as u64) as usize;
            let workers = (w.share(*concurrency) * per_conn, shard_workers * per_conn);
            closed_loop(w, workers, *think_time, window, work).await
        }
    }
}

/// A scenario: every group's load loop at once, each in its own window.
async fn groups(w: &Rc<Worker>) -> LoadOutcome {
    let scenario = w.plan.scenario.clone().expect("a scenario run");
    let loops = scenario.groups.iter().enumerate().filter_map(|(g, group)| {
        let window = Window { start: group.start, end: crate::exchange::group_end(w, g) };
        // A group that would start after the run's end never runs (the report says so).
        if window.end.is_some_and(|end| end <= window.start) {
            return None;
        }
        let w = w.clone();
        let scenario = scenario.clone();
        Some(tokio::task::spawn_local(
            async move { run_load(&w, &scenario.groups[g].load, window, Work::Flows(g)).await },
        ))
    });
    let handles: Vec<_> = loops.collect();
    let mut all = LoadOutcome { attack_end: Duration::ZERO, bound_reached: false, unsent: 0 };
    for h in handles {
        // A group's loop ends by itself (its window) or on Ctrl-C; it does not panic.
        if let Ok(o) = h.await {
            all.attack_end = all.attack_end.max(o.attack_end);
            all.bound_reached |= o.bound_reached;
        }
    }
    if w.stop.is_cancelled() {
        all.attack_end = all.attack_end.max(w.start.elapsed());
    }
    all
}

/// A slot's mailbox: the scheduler puts a job in and wakes it.
pub(crate) struct Mailbox {
    job: Cell<Option<Job>>,
    wake: Notify,
}

/// A free slot of an open loop, and how a job reaches it: an HTTP slot's task, or a lane of
/// a key-value group (whose one task runs all its lanes).
pub(crate) enum Free {
    Slot(Rc<Mailbox>),
    Lane(Rc<crate::kv::Inbox>, u32),
}

impl Free {
    /// Hands `job` over and wakes whoever runs it.
    fn dispatch(self, job: Job) {
        match self {
            Free::Slot(mb) => {
                mb.job.set(Some(job));
                mb.wake.notify_one();
            }
            Free::Lane(inbox, lane) => inbox.push(lane, job),
        }
    }

    /// Tells it the loop has ended: no job is coming.
    fn close(self) {
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
    fn new(w: &Worker, work: Work, deadline: Option<Duration>, think: Duration) -> Closed {
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
    fn next_number(&self) -> u64 {
        self.number(self.turn.get())
    }

    /// The attack ended no earlier than `at`.
    pub(crate) fn ended_at(&self, at: Duration) {
        self.attack_end.set(self.attack_end.get().max(at));
    }

    /// The end of the loop's window.
    pub(crate) fn deadline(&self) -> Option<Duration> {
        self.deadline
    }
}

/// This thread's `n` HTTP slots (or closed-loop workers), numbered within the run for the
/// request log; with `--streams` N, each N in a row share their connections.
fn new_slots(w: &Worker, n: usize) -> impl Iterator<Item = Slot> + '_ {
    let per_conn = w.plan.protocol.streams().max(1) as usize;
    let mut shared = Rc::new(Shared::default());
    (0..n).map(move |i| {
        let number = w.index + i * w.threads;
        if per_conn == 1 {
            return Slot::new(number);
        }
        if i % per_conn == 0 {
            shared = Rc::new(Shared::default());
        }
        Slot::sharing(number, shared.clone())
    })
}

/// The task of an open loop's HTTP slot: it waits in the pool for a job, sends it, and
/// gives itself back.
fn slot_task(w: &Rc<Worker>, pool: &Rc<Pool>, mut slot: Slot, work: Work) -> tokio::task::JoinHandle<()> {
    let mb = Rc::new(Mailbox { job: Cell::new(None), wake: Notify::new() });
    pool.join(Free::Slot(mb.clone()));
    let (w, pool) = (w.clone(), pool.clone());
    tokio::task::spawn_local(async move {
        let mut iteration = 0;
        loop {
            mb.wake.notified().await;
            let Some(job) = mb.job.take() else { return };
            // Ctrl-C does not race each request (that would register a waiter per
            // request); it aborts the slot tasks instead ([`join_or_abort`]).
            match work {
                Work::Requests => slot.request(&w, job).await,
                Work::Flows(g) => {
                    slot.flow(&w, g, job, iteration).await;
                    iteration += 1;
                }
            }
            if pool.closed() {
                return;
            }
            pool.release(Free::Slot(mb.clone()));
        }
    })
}

/// Open loop: this thread sends the requests of its lane of the global schedule (`index`,
/// `index + threads`, ... when the run is not split), so the threads (and shards) together
/// follow it exactly. The [`Schedule`] decides; this only carries its decisions out.
async fn open_loop(w: &Rc<Worker>, pacer: &Pacer, slots: usize, window: Window, work: Work) -> LoadOutcome {
    let slots = slots.max(1);
    let pool =
        Rc::new(Pool { idle: RefCell::new(Vec::with_capacity(slots)), freed: Notify::new(), closed: Cell::new(false) });
    let handles = match (&w.kv, work) {
        (Some(run), Work::Requests) => crate::kv::spawn_groups(w, run, slots, crate::kv::Feed::Open(pool.clone())),
        _ => new_slots(w, slots).map(|slot| slot_task(w, &pool, slot, work)).collect(),
    };
    // The schedule counts from the window's start; so do its decisions' times.
    let base = window.start;
    let count = match work {
        Work::Requests => w.plan.requests,
        Work::Flows(_) => None,
    };
    let limit = window.end.map(|e| e.saturating_sub(base));
    let (lane, lanes) = w.lane();
    let mut schedule = Schedule::new(pacer, lane, lanes, slots, limit, count);
    let mut timer = PreciseTimer::new();
    let end_of_attack = async {
        match window.end {
            Some(l) => tokio::time::sleep_until(TokioInstant::from_std(instant_at(w.start, l))).await,
            None => std::future::pending().await,
        }
    };
    let mut end_of_attack = std::pin::pin!(end_of_attack);
    let picker = w.picker();
    let request_of = w.plan.request_of();
    let run = async {
        // A group's window opens later: waited for here, where Ctrl-C is raced.
        timer.sleep_until(instant_at(w.start, base)).await;
        loop {
            let in_flight = slots - pool.idle.borrow().len();
            let (k, intended, late) = match schedule.next(w.start.elapsed().saturating_sub(base), in_flight) {
                Decision::Due { index, intended } => (index, base + intended, false),
                Decision::Late { index, intended, .. } => (index, base + intended, true),
                Decision::Wait { until } => {
                    timer.sleep_until(instant_at(w.start, base + until)).await;
                    continue;
                }
                Decision::Bound => {
                    // Waiting for a slot must not carry the attack past its end.
                    tokio::select! {
                        _ = pool.freed.notified() => {}
                        _ = end_of_attack.as_mut() => {}
                    }
                    continue;
                }
                Decision::Dropped { count } => {
                    // The schedule gives up on its lane from its next number on.
                    match work {
                        Work::Requests => crate::attempt::record_dropped(w, schedule.next_index(), lanes, count),
                        Work::Flows(g) => crate::attempt::record_dropped_flows(w, g, count),
                    }
                    continue;
                }
                Decision::Done { attack_end } => break base + attack_end,
            };
            let free = pool.idle.borrow_mut().pop().expect("the schedule sends only with a slot free");
            // An open loop's turn is the arrival's number: the round is exact over the run.
            let (draw, intent) = picker.draw(k);
            let (target, id) = request_of(k, draw);
            free.dispatch(Job { intended, target, id, number: k, late, attempt: 1, starts_now: false, intent });
            // Catching up after a stall dispatches without awaiting anything: let the slots run.
            tokio::task::consume_budget().await;
        }
    };
    // Ctrl-C is raced once against the whole schedule, not once per request.
    let attack_end = tokio::select! {
        end = run => end,
        _ = w.stop.cancelled() => w.start.elapsed(),
    };
    pool.closed.set(true);
    for free in pool.idle.borrow_mut().drain(..) {
        free.close();
    }
    join_or_abort(handles, &w.stop).await;
    LoadOutcome { attack_end, bound_reached: schedule.bound_reached(), unsent: schedule.next_index() }
}

/// Closed loop: each worker sends its next request (or runs its next flow) when the last
/// one finished. `workers`: this thread's and the whole loop's. A group's workers start
/// evenly over its ramp.
async fn closed_loop(
    w: &Rc<Worker>,
    (workers, all_workers): (usize, usize),
    think: Duration,
    window: Window,
    work: Work,
) -> LoadOutcome {
    let closed = Rc::new(Closed::new(w, work, window.end, think));
    let handles = match (&w.kv, work) {
        (Some(run), Work::Requests) => {
            crate::kv::spawn_groups(w, run, workers, crate::kv::Feed::Closed(closed.clone()))
        }
        _ => new_slots(w, workers).map(|slot| worker_task(w, &closed, (slot, all_workers), window, work)).collect(),
    };
    join_or_abort(handles, &w.stop).await;
    if w.stop.is_cancelled() {
        closed.ended_at(w.start.elapsed());
    }
    LoadOutcome { attack_end: closed.attack_end.get(), bound_reached: false, unsent: closed.next_number() }
}

/// The task of a closed loop's HTTP worker (its slot's number among `all`): it sends its
/// next request (or runs its next flow) when the last one finished. A group's workers start
/// evenly over its ramp.
fn worker_task(
    w: &Rc<Worker>,
    closed: &Rc<Closed>,
    (mut slot, all): (Slot, usize),
    window: Window,
    work: Work,
) -> tokio::task::JoinHandle<()> {
    let ramp = match work {
        Work::Flows(g) => w.plan.scenario.as_ref().map_or(Duration::ZERO, |s| s.groups[g].ramp),
        Work::Requests => Duration::ZERO,
    };
    let number = slot.number();
    let (w, closed) = (w.clone(), closed.clone());
    let first = window.start + ramp.mul_f64(number as f64 / all.max(1) as f64);
    let deadline = closed.deadline();
    let new_connections = !w.plan.protocol.keepalive();
    // A group's `iterations`: the flows this worker runs before it stops.
    let iterations = match work {
        Work::Flows(g) => w.plan.scenario.as_ref().and_then(|s| s.groups[g].iterations),
        Work::Requests => None,
    };
    // `--rate-cap`: this worker's share of the cap, its first start staggered by its place
    // among all the loop's workers so that together they go evenly.
    let cap = match work {
        Work::Requests => {
            w.plan.worker_interval().map(|every| (every, every.mul_f64(number as f64 / all.max(1) as f64)))
        }
        Work::Flows(_) => None,
    };
    tokio::task::spawn_local(async move {
        let mut iteration = 0;
        let mut turns = Turns::default();
        // A timerfd only for a worker that waits for its turn (a ramp, a cap).
        let mut timer: Option<PreciseTimer> = None;
        if !first.is_zero() {
            // A worker whose turn in the ramp comes after the end never starts.
            timer
                .get_or_insert_with(PreciseTimer::new)
                .sleep_until(instant_at(w.start, first.min(deadline.unwrap_or(first))))
                .await;
        }
        let mut due = cap.map(|(_, stagger)| first + stagger);
        loop {
            if iterations.is_some_and(|n| iteration >= n) {
                // Its flows are run: the worker is done, its loop's end noted.
                closed.ended_at(w.start.elapsed());
                return;
            }
            if let Some(at) = due {
                // Capped: the next start waits for its turn, never past the end (where
                // `admit` ends the worker).
                let wake = instant_at(w.start, at.min(deadline.unwrap_or(at)));
                timer.get_or_insert_with(PreciseTimer::new).sleep_until(wake).await;
            }
            let now = w.start.elapsed();
            let Some(last) = closed.admit(now, w.stop.is_cancelled(), &mut turns) else { return };
            if let (Some(at), Some((every, _))) = (due.as_mut(), cap) {
                // On a grid, so that timer lateness does not add up; a worker that fell
                // behind (a slow answer) starts its next request at once, without a burst
                // to catch up: the cap is an upper bound, not a schedule.
                *at = (*at + every).max(now);
            }
            match work {
                Work::Requests => slot.request(&w, closed.request(now, &mut turns)).await,
                Work::Flows(g) => {
                    let job = Job::at(now);
                    if !slot.flow(&w, g, job, iteration).await {
                        // Its feeder ran out and stops: so does the worker.
                        closed.ended_at(now);
                        return;
                    }
                    iteration += 1;
                }
            }
            if !closed.think.is_zero() && !last {
                // Thinking never carries a worker past the end of the attack.
                let wake = w.start.elapsed().saturating_add(closed.think).min(deadline.unwrap_or(Duration::MAX));
                tokio::time::sleep_until(TokioInstant::from_std(instant_at(w.start, wake))).await;
            }
            if new_connections {
                // With a connection per request, the worker lets the others whose requests
                // ended in this turn of the runtime finish theirs before it opens its next:
                // the server then takes the new connections in one wake-up rather than one
                // each. Measured against nginx: its context switches per request fell from
                // 0.74-0.77 to 0.53-0.64, and the generator's CPU per request by 3-6 %
                // (bench/results/2026-11-26_1035-i17-watchdog-gather.md). The next request
                // starts after the wait, so it is in no latency.
                tokio::task::yield_now().await;
            } else {
                // A failure that returns at once (a refused connect on loopback, EMFILE)
                // awaits nothing: yield now and then so the thread's other tasks and the
                // interval ticker still run.
                tokio::task::consume_budget().await;
            }
        }
    })
}

/// Waits for the tasks to finish; on Ctrl-C aborts them, leaving their requests unfinished.
async fn join_or_abort(handles: Vec<tokio::task::JoinHandle<()>>, stop: &CancellationToken) {
    let aborts: Vec<_> = handles.iter().map(|h| h.abort_handle()).collect();
    let join = async {
        for h in handles {
            let _ = h.await;
        }
    };
    tokio::select! {
        _ = join => {}
        _ = stop.cancelled() => aborts.iter().for_each(|a| a.abort()),
    }
}

/// The process's peak resident memory, KiB.
pub(crate) fn peak_rss_kib() -> u64 {
    // VmHWM, the peak of this process image: getrusage's ru_maxrss would also count the
    // memory of the parent that forked us before exec (a test binary, a shell).
    procfs::process::Process::myself().ok().and_then(|p| p.status().ok()).and_then(|s| s.vmhwm).unwrap_or(0)
}
