//! One engine thread: a current-thread tokio runtime running a share of the slots (open
//! loop) or workers (closed loop), recording into its own [`Recorder`] and handing it to the
//! collector once per interval (HdrHistogram's "phase shift"). Everything the thread's
//! tasks share is in its one [`Worker`]; how its loops hand out work is in [`crate::feed`].

use crate::attempt::Job;
use crate::feed::{Closed, Free, Mailbox, Pool, Turns, Work};
use crate::http::SharedConns;
use crate::schedule::{Decision, Schedule, END_GRACE};
use crate::slot::Slot;
use crate::timing::{instant_at, PreciseTimer};
use crate::worker::{thread_cpu, Msg, ThreadCpu, Worker, INTERVAL};
use barrage_plan::{Load, Pacer};
use std::rc::Rc;
use std::time::Duration;
use tokio::time::Instant as TokioInstant;
use tokio_util::sync::CancellationToken;

/// Runs the thread to completion.
pub fn run(worker: Worker) -> std::io::Result<()> {
    let mut runtime = tokio::runtime::Builder::new_current_thread();
    if let Some(coalesce) = &worker.coalesce {
        runtime.on_thread_park(coalesce.hook());
        crate::coalesce::precise_sleeps();
    }
    let rt = runtime.enable_all().build()?;
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
            // A send may have handed it over already (see `Worker::catch_up`).
            w.catch_up(end);
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
        trace_sampled: w.trace_sampled.get(),
        first_sent: w.first_sent.get(),
        coalesced: w.coalesce.as_ref().map_or(Duration::ZERO, crate::coalesce::Coalesce::longest),
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
        let window = Window { start: group.start, end: crate::slot::group_end(w, g) };
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

/// This thread's `n` HTTP slots (or closed-loop workers), numbered within the run for the
/// request log; with `--streams` N, each N in a row share their connections.
fn new_slots(w: &Worker, n: usize) -> impl Iterator<Item = Slot> + '_ {
    let per_conn = w.plan.protocol.streams().max(1) as usize;
    let mut shared = Rc::new(SharedConns::default());
    (0..n).map(move |i| {
        let number = w.index + i * w.threads;
        if per_conn == 1 {
            return Slot::new(number);
        }
        if i % per_conn == 0 {
            shared = Rc::new(SharedConns::default());
        }
        Slot::sharing(number, shared.clone())
    })
}

/// The task of an open loop's HTTP slot: it waits in the pool for a job, sends it, and
/// gives itself back.
fn slot_task(w: &Rc<Worker>, pool: &Rc<Pool>, mut slot: Slot, work: Work) -> tokio::task::JoinHandle<()> {
    let mb = Rc::new(Mailbox::default());
    pool.join(Free::Slot(mb.clone()));
    let (w, pool) = (w.clone(), pool.clone());
    tokio::task::spawn_local(async move {
        let mut iteration = 0;
        loop {
            let Some(job) = mb.receive().await else { return };
            // Ctrl-C does not race each request (that would register a waiter per
            // request); it aborts the slot tasks instead ([`join_or_abort`]).
            match work {
                Work::Requests => {
                    let number = job.number;
                    slot.request(&w, job).await;
                    w.lane_ended(number);
                }
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

/// The requests of the whole run an open loop's schedule ends after (`-n`); flows end by time.
fn count_of(w: &Worker, work: Work) -> Option<u64> {
    match work {
        Work::Requests => w.plan.requests,
        Work::Flows(_) => None,
    }
}

/// This thread's lane of `pacer`'s schedule over `window`, resumed where a takeover begins.
fn schedule<'p>(w: &Worker, pacer: &'p Pacer, slots: usize, window: Window, work: Work) -> Schedule<'p> {
    let base = window.start;
    let limit = window.end.map(|e| e.saturating_sub(base));
    let (lane, lanes) = w.lane();
    let fresh = Schedule::new(pacer, lane, lanes, slots, limit, count_of(w, work))
        .precise_to(w.plan.send_precision.unwrap_or(crate::schedule::PRECISION));
    if matches!(work, Work::Requests) {
        // Where the thread is in its lane, from where the lost shard's left it.
        let passed = w.resume_after.as_ref().map_or(0, |m| m.passed);
        *w.marks.borrow_mut() = Some(crate::marks::Marks::new(lane, lanes, passed));
    }
    match w.resume_after.as_ref().filter(|_| matches!(work, Work::Requests)) {
        // Where the lost shard's thread left this lane: what it had in flight, then on.
        Some(mark) => fresh.resumed_lane(mark),
        // The resume is the run's second; a group's schedule counts from its window's
        // start (one that had not started by then runs whole).
        None => fresh.resumed(w.resume_from.map(|from| from.saturating_sub(base))),
    }
}

/// Open loop: this thread sends the requests of its lane of the global schedule (`index`,
/// `index + threads`, ... when the run is not split), so the threads (and shards) together
/// follow it exactly. The [`Schedule`] decides; this only carries its decisions out.
async fn open_loop(w: &Rc<Worker>, pacer: &Pacer, slots: usize, window: Window, work: Work) -> LoadOutcome {
    let slots = slots.max(1);
    let pool = Rc::new(Pool::new(slots));
    let handles = match (&w.kv, work) {
        (Some(run), Work::Requests) => crate::kv::spawn_groups(w, run, slots, crate::kv::Feed::Open(pool.clone())),
        _ => new_slots(w, slots).map(|slot| slot_task(w, &pool, slot, work)).collect(),
    };
    // The schedule counts from the window's start; so do its decisions' times.
    let base = window.start;
    let lanes = w.lane().1;
    let mut schedule = schedule(w, pacer, slots, window, work);
    let mut timer = PreciseTimer::new();
    // A request due before the end still waits for a slot until it is END_GRACE late: the
    // latest such wait ends END_GRACE after the end.
    // A takeover's sends all of its share, however late: no grace ends it.
    let graced_end = window.end.filter(|_| !schedule.sends_all());
    let end_of_grace = async {
        match graced_end {
            Some(l) => tokio::time::sleep_until(TokioInstant::from_std(instant_at(w.start, l + END_GRACE))).await,
            None => std::future::pending().await,
        }
    };
    let mut end_of_grace = std::pin::pin!(end_of_grace);
    let picker = w.picker();
    let request_of = w.plan.request_of();
    let run = async {
        // A group's window opens later: waited for here, where Ctrl-C is raced.
        timer.sleep_until(instant_at(w.start, base)).await;
        loop {
            let in_flight = slots - pool.idle();
            let now = w.start.elapsed();
            w.catch_up(now); // Sent or dropped now: counted in this second (`Worker::catch_up`).
            let (k, intended, late) = match schedule.next(now.saturating_sub(base), in_flight) {
                Decision::Due { index, intended } => (index, base + intended, false),
                Decision::Late { index, intended, .. } => (index, base + intended, true),
                Decision::Wait { until } => {
                    timer.sleep_until(instant_at(w.start, base + until)).await;
                    continue;
                }
                Decision::Bound => {
                    // Waiting for a slot must not carry the attack past its end's grace.
                    tokio::select! {
                        _ = pool.freed() => {}
                        _ = end_of_grace.as_mut() => {}
                    }
                    continue;
                }
                Decision::Dropped { count } => {
                    // The schedule gives up on its lane from its next number on.
                    match work {
                        Work::Requests => {
                            crate::attempt::record_dropped(w, schedule.next_index(), lanes, count);
                            w.lane_dropped(count);
                        }
                        Work::Flows(g) => crate::attempt::record_dropped_flows(w, g, count),
                    }
                    continue;
                }
                Decision::Done { attack_end } => break base + attack_end,
            };
            let free = pool.take().expect("the schedule sends only with a slot free");
            // An open loop's turn is the arrival's number: the round is exact over the run.
            let (draw, intent) = picker.draw(k);
            let (target, id) = request_of(k, draw);
            w.lane_sent(k);
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
    pool.close();
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
    LoadOutcome { attack_end: closed.attack_end(), bound_reached: false, unsent: closed.next_number() }
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
    let number = slot.number();
    let (first, iterations, cap) = worker_pace(w, work, window, (number, all));
    let (w, closed) = (w.clone(), closed.clone());
    let deadline = closed.deadline();
    let new_connections = !w.plan.protocol.keepalive();
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
            between_requests(new_connections).await;
        }
    })
}

/// What a closed loop's worker awaits between one request and its next, besides thinking.
async fn between_requests(new_connections: bool) {
    if new_connections {
        // With a connection per request, the worker lets the others whose requests ended in
        // this turn of the runtime finish theirs before it opens its next: the server then
        // takes the new connections in one wake-up rather than one each. Measured against
        // nginx: its context switches per request fell from 0.74-0.77 to 0.53-0.64, and the
        // generator's CPU per request by 3-6 % (bench/results/2026-11-26_1035-i17-watchdog-gather.md).
        // The next request starts after the wait, so it is in no latency.
        tokio::task::yield_now().await;
    } else {
        // A failure that returns at once (a refused connect on loopback, EMFILE) awaits
        // nothing: yield now and then so the thread's other tasks and the interval ticker
        // still run.
        tokio::task::consume_budget().await;
    }
}

/// The pace of a closed loop's worker, number `number` of `all`: when it first starts (a
/// group's workers evenly over its ramp; a takeover's not before the second it resumes
/// from), how many flows it runs (a group's `iterations`), and with `--rate-cap` its share
/// of the cap (the interval between its starts) and its first start's stagger, by its
/// place among all the loop's workers so that together they go evenly.
fn worker_pace(
    w: &Worker,
    work: Work,
    window: Window,
    (number, all): (usize, usize),
) -> (Duration, Option<u64>, Option<(Duration, Duration)>) {
    let place = number as f64 / all.max(1) as f64;
    let group = match work {
        Work::Flows(g) => w.plan.scenario.as_ref().map(|s| &s.groups[g]),
        Work::Requests => None,
    };
    let ramp = group.map_or(Duration::ZERO, |g| g.ramp);
    let iterations = group.and_then(|g| g.iterations);
    let cap = match work {
        Work::Requests => w.plan.worker_interval().map(|every| (every, every.mul_f64(place))),
        Work::Flows(_) => None,
    };
    // A worker's state is not a function of the schedule: a takeover restarts the lost
    // shard's workers at its second, each fresh, and they run to the window's end.
    let first = (window.start + ramp.mul_f64(place)).max(w.resume_from.unwrap_or_default());
    (first, iterations, cap)
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
