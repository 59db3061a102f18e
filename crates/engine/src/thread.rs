//! One engine thread: a current-thread tokio runtime running a share of the slots (open
//! loop) or workers (closed loop), recording into its own [`Recorder`] and handing it to the
//! collector once per interval (HdrHistogram's "phase shift").

use crate::conn::{Connector, Endpoint};
use crate::exchange::{Job, Prepared, Shared, Slot};
use barrage_metrics::Recorder;
use barrage_plan::{Load, Pacer, Picker, Plan};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio::time::Instant as TokioInstant;
use tokio_util::sync::CancellationToken;

/// Length of an interval.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// What a thread tells the collector.
pub enum Msg {
    /// A closed interval of this thread.
    Interval {
        /// Interval index.
        index: u32,
        /// Offset of the interval's end from the run's start.
        end: Duration,
        /// Its samples.
        recorder: Box<Recorder>,
    },
    /// The thread has finished; no more intervals follow from it.
    Done {
        /// Thread index.
        thread: usize,
        /// When it stopped sending new requests.
        attack_end: Duration,
        /// When its last request finished.
        end: Duration,
        /// The thread's CPU time (user, system).
        cpu: (Duration, Duration),
        /// Every slot was busy at least once when a request was due.
        bound_reached: bool,
    },
}

/// Everything a thread needs; cheap to clone.
#[derive(Clone)]
pub struct ThreadCtx {
    /// This thread's index.
    pub index: usize,
    /// Number of threads.
    pub threads: usize,
    /// The run.
    pub plan: Arc<Plan>,
    /// Prepared targets.
    pub targets: Arc<Vec<Prepared>>,
    /// Endpoints.
    pub endpoints: Arc<Vec<Endpoint>>,
    /// Connector.
    pub connector: Arc<Connector>,
    /// The run's start.
    pub start: Instant,
    /// The same instant on the wall clock, ms since the Unix epoch.
    pub start_unix_ms: u64,
    /// Ctrl-C.
    pub stop: CancellationToken,
    /// To the collector.
    pub tx: Sender<(usize, Msg)>,
}

/// Runs the thread to completion.
pub fn run(ctx: ThreadCtx, log: Option<crate::reqlog::LogHandle>) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, body(ctx, log));
    drop(local);
    // A DNS lookup abandoned by a timeout still runs on the blocking pool; dropping the
    // runtime normally would wait for it, past --duration + --timeout.
    rt.shutdown_background();
    Ok(())
}

async fn body(ctx: ThreadCtx, log: Option<crate::reqlog::LogHandle>) {
    // Every time in a sample is an offset from the common start: nothing may begin before it.
    PreciseTimer::new().sleep_until(ctx.start).await;
    let recorder = Rc::new(RefCell::new(Recorder::new()));
    let index = Cell::new(0u32);
    let start = TokioInstant::from_std(ctx.start);
    let send_interval = |end: Duration| {
        let rec = std::mem::take(&mut *recorder.borrow_mut());
        let msg = Msg::Interval { index: index.get(), end, recorder: Box::new(rec) };
        let _ = ctx.tx.send((ctx.index, msg));
        index.set(index.get() + 1);
    };
    let ticker = async {
        loop {
            let end = INTERVAL * (index.get() + 1);
            tokio::time::sleep_until(start + end).await;
            send_interval(end);
        }
    };
    let load = run_load(&ctx, recorder.clone(), log);
    let outcome = tokio::select! {
        o = load => o,
        _ = ticker => unreachable!("the ticker never ends"),
    };
    let end = ctx.start.elapsed();
    send_interval(end);
    let done = Msg::Done {
        thread: ctx.index,
        attack_end: outcome.attack_end,
        end,
        cpu: thread_cpu(),
        bound_reached: outcome.bound_reached,
    };
    let _ = ctx.tx.send((ctx.index, done));
}

struct LoadOutcome {
    attack_end: Duration,
    bound_reached: bool,
}

async fn run_load(
    ctx: &ThreadCtx,
    recorder: Rc<RefCell<Recorder>>,
    log: Option<crate::reqlog::LogHandle>,
) -> LoadOutcome {
    let targets = ctx.targets.clone();
    let endpoints = ctx.endpoints.clone();
    let connector = ctx.connector.clone();
    let log = log.map(RefCell::new);
    let shared = Rc::new(SharedOwned { targets, endpoints, connector, recorder, log, ctx: ctx.clone() });
    match &ctx.plan.load {
        Load::Open { pacer, max_in_flight } => open_loop(shared, pacer, share(*max_in_flight, ctx)).await,
        Load::Closed { concurrency, think_time } => closed_loop(shared, share(*concurrency, ctx), *think_time).await,
    }
}

/// The picker of one client: an open-loop thread, or a closed-loop worker.
fn new_picker(plan: &Plan, client: usize, clients: usize) -> Picker {
    Picker::new(&plan.pick, plan.pick_space(), plan.seed, client as u64, clients as u64, plan.hit_ratio)
}

/// This thread's part of `n` (slots, workers, requests) split evenly over the threads.
fn share(n: usize, ctx: &ThreadCtx) -> usize {
    n / ctx.threads + usize::from(ctx.index < n % ctx.threads)
}

/// Owned twin of [`Shared`], held in an `Rc` by the thread's tasks.
struct SharedOwned {
    targets: Arc<Vec<Prepared>>,
    endpoints: Arc<Vec<Endpoint>>,
    connector: Arc<Connector>,
    log: Option<RefCell<crate::reqlog::LogHandle>>,
    recorder: Rc<RefCell<Recorder>>,
    ctx: ThreadCtx,
}

impl SharedOwned {
    fn borrow(&self) -> Shared<'_> {
        Shared {
            targets: &self.targets,
            endpoints: &self.endpoints,
            connector: &self.connector,
            base: self.ctx.start,
            recorder: &self.recorder,
            keepalive: self.ctx.plan.keepalive,
            timeout: self.ctx.plan.timeout,
            cache_rules: &self.ctx.plan.cache_rules,
            backend_headers: &self.ctx.plan.backend_headers,
            retry: self.ctx.plan.retry.as_ref(),
            attack_end: self.ctx.plan.attack_limit().map(|l| self.ctx.start + l),
            log: self.log.as_ref(),
            start_unix_us: self.ctx.start_unix_ms * 1000,
        }
    }

    /// Runs one exchange. Ctrl-C does not race each request (that would register a waiter
    /// per request); it aborts the slot tasks instead ([`join_or_abort`]).
    async fn exchange(&self, slot: &mut Slot, job: Job) {
        slot.request(&self.borrow(), job).await;
    }
}

/// A slot's mailbox: the scheduler puts a job in and wakes it.
struct Mailbox {
    job: Cell<Option<Job>>,
    wake: Notify,
}

/// Open loop: this thread sends requests `index`, `index + threads`, ... of the global
/// schedule, so the threads together follow it exactly and round-robin over targets stays
/// exact too.
async fn open_loop(shared: Rc<SharedOwned>, pacer: &Pacer, slots: usize) -> LoadOutcome {
    let ctx = &shared.ctx;
    let idle: Rc<RefCell<Vec<Rc<Mailbox>>>> = Rc::new(RefCell::new(Vec::with_capacity(slots)));
    let freed = Rc::new(Notify::new());
    let closed = Rc::new(Cell::new(false));
    let mut handles = Vec::with_capacity(slots);
    for i in 0..slots.max(1) {
        let worker = ctx.index + i * ctx.threads;
        let mb = Rc::new(Mailbox { job: Cell::new(None), wake: Notify::new() });
        idle.borrow_mut().push(mb.clone());
        let (shared, idle, freed, closed) = (shared.clone(), idle.clone(), freed.clone(), closed.clone());
        handles.push(tokio::task::spawn_local(async move {
            let mut slot = Slot::new(worker);
            loop {
                mb.wake.notified().await;
                let Some(job) = mb.job.take() else { return };
                shared.exchange(&mut slot, job).await;
                if closed.get() {
                    return;
                }
                // Most recently used first, so warm connections are reused and a slow run
                // does not open every slot's connection.
                idle.borrow_mut().push(mb.clone());
                freed.notify_one();
            }
        }));
    }
    let mut timer = PreciseTimer::new();
    let limit = ctx.plan.attack_limit();
    let total = ctx.plan.requests;
    let mut bound_reached = false;
    let end_of_attack = async {
        match limit {
            Some(l) => tokio::time::sleep_until(TokioInstant::from_std(ctx.start + l)).await,
            None => std::future::pending().await,
        }
    };
    let mut end_of_attack = std::pin::pin!(end_of_attack);
    let (mut k, step) = (ctx.index as u64, ctx.threads as u64);
    let mut behind_on_slots = false;
    // Each thread is one client of the pick stream; round robin interleaves the threads
    // exactly (thread i takes targets i, i+T, ...), like the schedule itself.
    let mut picker = new_picker(&ctx.plan, ctx.index, ctx.threads).interleaved(ctx.threads as u64);
    let schedule = async {
        loop {
            let due = match pacer.due(k) {
                Some(d) if total.is_none_or(|n| k < n) => d,
                // Count reached or schedule over: the attack ends when the next request of
                // the whole schedule would have started.
                _ => break total.and_then(|n| pacer.due(n)).or(limit).unwrap_or_else(|| ctx.start.elapsed()),
            };
            if let Some(l) = limit.filter(|l| due >= *l) {
                break l;
            }
            let at = ctx.start + due;
            if at > Instant::now() {
                // Caught up with the schedule: what follows is on time again.
                behind_on_slots = false;
                timer.sleep_until(at).await;
            }
            let mb = loop {
                if let Some(mb) = idle.borrow_mut().pop() {
                    break Some(mb);
                }
                behind_on_slots = true;
                bound_reached = true;
                // Waiting for a slot must not carry the attack past its end.
                tokio::select! {
                    _ = freed.notified() => {}
                    _ = end_of_attack.as_mut() => break None,
                }
            };
            let Some(mb) = mb else { break limit.expect("only a limit ends the wait") };
            // Once the scheduler had to wait for a slot, every request it sends until it has
            // caught up started late because of the bound, even one that then finds a slot
            // free at once (slots freed together).
            let late = behind_on_slots;
            mb.job.set(Some(Job { intended: due, target: picker.next_index(), late, attempt: 1 }));
            mb.wake.notify_one();
            k += step;
            // Catching up after a stall dispatches without awaiting anything: let the slots run.
            tokio::task::consume_budget().await;
        }
    };
    // Ctrl-C is raced once against the whole schedule, not once per request.
    let attack_end = tokio::select! {
        end = schedule => end,
        _ = ctx.stop.cancelled() => ctx.start.elapsed(),
    };
    if !ctx.stop.is_cancelled() {
        let dropped = dropped_requests(pacer, k, step, limit, total);
        shared.recorder.borrow_mut().record_dropped(dropped);
    }
    closed.set(true);
    for mb in idle.borrow_mut().drain(..) {
        mb.wake.notify_one();
    }
    join_or_abort(handles, &ctx.stop).await;
    LoadOutcome { attack_end, bound_reached }
}

/// Requests of this thread's share of the schedule (from `k`, every `step`) that were due
/// before the attack ended but never started: every slot stayed busy until the end.
fn dropped_requests(pacer: &Pacer, mut k: u64, step: u64, limit: Option<Duration>, total: Option<u64>) -> u64 {
    let mut n = 0;
    while total.is_none_or(|t| k < t) && pacer.due(k).is_some_and(|d| limit.is_some_and(|l| d < l)) {
        n += 1;
        k += step;
    }
    n
}

/// Closed loop: each worker sends its next request when the last one finished.
async fn closed_loop(shared: Rc<SharedOwned>, workers: usize, think: Duration) -> LoadOutcome {
    let ctx = &shared.ctx;
    let quota = ctx.plan.requests.map(|n| Rc::new(Cell::new(share(n as usize, ctx) as u64)));
    let deadline = ctx.plan.attack_limit();
    let attack_end = Rc::new(Cell::new(Duration::ZERO));
    let mut handles = Vec::with_capacity(workers);
    let all_workers = match &ctx.plan.load {
        Load::Closed { concurrency, .. } => *concurrency,
        Load::Open { .. } => workers,
    };
    for w in 0..workers {
        let (shared, quota, attack_end) = (shared.clone(), quota.clone(), attack_end.clone());
        // Every worker is a client with its own stream (global number: thread + w × threads).
        let mut picker = new_picker(&ctx.plan, ctx.index + w * ctx.threads, all_workers);
        handles.push(tokio::task::spawn_local(async move {
            let ctx = &shared.ctx;
            let mut slot = Slot::new(ctx.index + w * ctx.threads);
            loop {
                let now = ctx.start.elapsed();
                if ctx.stop.is_cancelled() || deadline.is_some_and(|d| now >= d) {
                    attack_end.set(attack_end.get().max(deadline.map_or(now, |d| now.min(d))));
                    return;
                }
                let last = match &quota {
                    Some(q) if q.get() == 0 => return,
                    Some(q) => {
                        q.set(q.get() - 1);
                        q.get() == 0
                    }
                    None => false,
                };
                if last {
                    // The quota's last request: the attack ends as it is sent.
                    attack_end.set(attack_end.get().max(now));
                }
                let job = Job { intended: now, target: picker.next_index(), late: false, attempt: 1 };
                shared.exchange(&mut slot, job).await;
                if !think.is_zero() && !last {
                    // Thinking never carries a worker past the end of the attack.
                    let wake = ctx.start + (ctx.start.elapsed() + think).min(deadline.unwrap_or(Duration::MAX));
                    tokio::time::sleep_until(TokioInstant::from_std(wake)).await;
                }
                // A failure that returns at once (a refused connect on loopback, EMFILE)
                // awaits nothing: yield now and then so the thread's other tasks and the
                // interval ticker still run.
                tokio::task::consume_budget().await;
            }
        }));
    }
    join_or_abort(handles, &ctx.stop).await;
    if ctx.stop.is_cancelled() {
        attack_end.set(attack_end.get().max(ctx.start.elapsed()));
    }
    LoadOutcome { attack_end: attack_end.get(), bound_reached: false }
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

/// Sleeps to the microsecond. tokio's timer wheel rounds deadlines up to whole
/// milliseconds, which would add up to a millisecond of schedule lag to every paced request;
/// a timerfd wakes the runtime when the deadline passes, without blocking the thread.
struct PreciseTimer {
    fd: Option<tokio::io::unix::AsyncFd<timerfd::TimerFd>>,
}

impl PreciseTimer {
    fn new() -> Self {
        let fd = timerfd::TimerFd::new_custom(timerfd::ClockId::Monotonic, true, true).ok().and_then(|t| {
            // SAFETY: the TimerFd owns its descriptor and keeps it open, unchanged, until it
            // is dropped together with the AsyncFd that owns it.
            unsafe { tokio::io::unix::AsyncFd::register_with_interest(t, tokio::io::Interest::READABLE) }.ok()
        });
        PreciseTimer { fd }
    }

    async fn sleep_until(&mut self, at: Instant) {
        let now = Instant::now();
        if at <= now {
            return;
        }
        let Some(fd) = &mut self.fd else {
            // No timerfd (not Linux, or out of descriptors): millisecond precision it is.
            return tokio::time::sleep_until(TokioInstant::from_std(at)).await;
        };
        fd.get_mut().set_state(timerfd::TimerState::Oneshot(at - now), timerfd::SetTimeFlags::Default);
        loop {
            let Ok(mut guard) = fd.readable().await else { return };
            let fired = guard.get_inner().read() > 0;
            guard.clear_ready();
            if fired {
                return;
            }
        }
    }
}

/// The process's peak resident memory, KiB.
pub(crate) fn peak_rss_kib() -> u64 {
    // VmHWM, the peak of this process image: getrusage's ru_maxrss would also count the
    // memory of the parent that forked us before exec (a test binary, a shell).
    procfs::process::Process::myself().ok().and_then(|p| p.status().ok()).and_then(|s| s.vmhwm).unwrap_or(0)
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
