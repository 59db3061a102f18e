//! Key-value load on the engine's slots: groups of lanes, each group one task.
//!
//! Slots come in groups of `--pipeline` P: a group shares one connection per server, so a
//! run of C connections (`-c`, or `--connections` in open loop) has C × P slots and at most P
//! commands in flight on each connection, as memtier's `--pipeline` does. Each slot is a
//! *lane* of its group: at most one command at a time, counted, timed and retried as an HTTP
//! slot's request is. Connections open lazily, by the first lane that needs one (its DNS,
//! connect, TLS and HELLO/AUTH/SELECT time is that command's), and again after one ends.
//!
//! One task runs a whole group, its lanes and its connections: no task of its own per slot
//! or per connection, and no allocation per command. When a read brings replies, the task
//! records them (alike ones at once) and, in a closed loop, puts each lane's next command on
//! the wire at once, so P commands cost one wake-up, one read and one write. A reply's end
//! is stamped with the read that completed it, and in a closed loop the lane's next command
//! is due then: no clock read per command. In an open loop, the scheduler hands commands to
//! free lanes through the group's [`Inbox`], as it hands HTTP slots theirs.

use super::conn::{Answered, KvConn};
use super::run::{connect, done, encode, fill_keys, parse_of, KvRun, Unopened};
use crate::attempt::{failure_done, log_row, record_done, settle, FirstAttempt, Job, Logged, Next};
use crate::conn::{Failure, Stream};
use crate::feed::{Closed, Free, Inbox, Pool, Turns};
use crate::timing::{instant_at, Phases};
use crate::worker::Worker;
use barrage_metrics::recorder::SampleKeys;
use barrage_metrics::{ErrorKind, Phase, Sample};
use barrage_plan::kv::KvCommand;
use bytes::BytesMut;
use std::future::{poll_fn, Future};
use std::ops::Range;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Where a group's lanes get their commands.
#[derive(Clone)]
pub(crate) enum Feed {
    /// A closed loop: each lane sends its next command when its last one is done.
    Closed(Rc<Closed>),
    /// An open loop: the scheduler hands free lanes their commands ([`Inbox`]).
    Open(Rc<Pool>),
}

/// Spawns the groups of this thread's `lanes` lanes of a load loop, `--pipeline` to a
/// group, fed by `feed`. In an open loop their lanes join its pool.
pub(crate) fn spawn_groups(
    w: &Rc<Worker>,
    run: &Arc<KvRun>,
    lanes: usize,
    feed: Feed,
) -> Vec<tokio::task::JoinHandle<()>> {
    let p = run.pipeline();
    (0..lanes.div_ceil(p))
        .map(|g| {
            let numbers = (g * p..lanes.min((g + 1) * p)).map(|i| w.index + i * w.threads);
            let group = Group::new(w, run, numbers, feed.clone());
            tokio::task::spawn_local(group.run())
        })
        .collect()
}

/// What a lane is doing.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// Free: waits for the open loop's next command.
    Idle,
    /// A closed loop's lane whose next command is due then (its first, or after a think).
    Next(Duration),
    /// Its command is to be sent again then (`--retry`).
    Retry(Duration),
    /// Waits for its server's connection to open.
    Linking,
    /// Waits for room on its server's connection (a server that stopped reading), until
    /// then, its `--timeout`.
    Waiting(Duration),
    /// Its command is on a connection.
    InFlight,
    /// Its loop has ended.
    Done,
}

/// One of a group's slots: at most one command at a time.
struct Lane {
    /// The slot's number in the run (the request log's worker).
    number: usize,
    state: State,
    /// The command, and when its attempt started (`--timeout` counts from then,
    /// connecting included).
    job: Job,
    started: Duration,
    /// When it was handed to its connection, and its length there.
    submitted: Duration,
    bytes_out: u64,
    /// The server it goes to.
    server: usize,
    /// Its phases (a new connection's DNS, connect and TLS; then send, wait, receive).
    phases: Phases,
    /// The closed loop's quota ends with this command: no think after it.
    last: bool,
    /// With `--retry`: its command's first attempt.
    first: FirstAttempt,
    /// A closed loop's lane runs the round of commands itself (`--ratio`, `--command`).
    turns: Turns,
}

impl Lane {
    /// A random number of its command, drawn from the run's `seed` and the command's number
    /// in the stream: a split run's shards draw the unsplit run's value sizes.
    fn random(&self, seed: u64) -> u64 {
        barrage_plan::pick::splitmix64(seed ^ barrage_plan::pick::splitmix64(self.job.number))
    }
}

/// A connection opening: its lane's DNS, connect and TLS phases, and the stream.
type Opening = Pin<Box<dyn Future<Output = (Result<Stream, Unopened>, Phases)>>>;

/// A group's connection to one server.
enum Link {
    Down,
    /// Lane `opener` is opening it; other lanes wait for it ([`State::Linking`]).
    Opening {
        opener: u32,
        connecting: Opening,
    },
    Up(Box<KvConn>),
}

/// One task's lanes and their connections, one per server.
struct Group {
    w: Rc<Worker>,
    run: Arc<KvRun>,
    feed: Feed,
    inbox: Rc<Inbox>,
    lanes: Vec<Lane>,
    links: Vec<Link>,
    /// Commands answered or failed, not yet recorded.
    answered: Vec<Answered>,
    /// Commands recorded but not yet into the recorder: alike ones go in together.
    alike: Option<Alike>,
    /// The open loop's jobs taken from the inbox (its vector and this one swap).
    jobs: Vec<(u32, Job)>,
    /// A command's keys, one after the other, and where each is (filled per command).
    keys: BytesMut,
    ranges: Vec<Range<usize>>,
    /// Lanes in [`State::Next`], [`State::Retry`] or [`State::Waiting`], and the timer for
    /// the soonest.
    due: usize,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Ctrl-C, as seen at the start of this turn (looked at once per wake-up, not per command).
    stopped: bool,
}

/// Busy turns one poll of a group takes before it lets the thread's other tasks run: a
/// failure that returns at once (a refused connect on loopback) awaits nothing.
const TURNS: usize = 32;

impl Group {
    fn new(w: &Rc<Worker>, run: &Arc<KvRun>, numbers: impl Iterator<Item = usize>, feed: Feed) -> Group {
        let inbox = Rc::new(Inbox::default());
        let closed = matches!(feed, Feed::Closed(_));
        let lanes: Vec<Lane> = numbers
            .map(|number| Lane {
                number,
                state: if closed { State::Next(Duration::ZERO) } else { State::Idle },
                job: Job::at(Duration::ZERO),
                started: Duration::ZERO,
                submitted: Duration::ZERO,
                bytes_out: 0,
                server: 0,
                phases: Phases::default(),
                last: false,
                first: FirstAttempt::default(),
                turns: Turns::default(),
            })
            .collect();
        if let Feed::Open(pool) = &feed {
            for i in 0..lanes.len() {
                pool.join(Free::Lane(inbox.clone(), i as u32));
            }
        }
        let due = if closed { lanes.len() } else { 0 };
        let p = lanes.len();
        Group {
            w: w.clone(),
            run: run.clone(),
            feed,
            inbox,
            links: (0..run.plan.servers.len()).map(|_| Link::Down).collect(),
            answered: Vec::with_capacity(2 * p),
            alike: None,
            jobs: Vec::with_capacity(p),
            keys: BytesMut::with_capacity(64),
            ranges: Vec::with_capacity(4),
            due,
            timer: None,
            stopped: false,
            lanes,
        }
    }

    async fn run(mut self) {
        poll_fn(|cx| self.poll(cx)).await;
    }

    /// One wake-up: turns until nothing moves (every socket, timer and the inbox then has
    /// this task's waker), or until the group is done.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.stopped = self.w.stop.is_cancelled();
        for _ in 0..TURNS {
            let mut busy = self.poll_links(cx);
            busy |= !self.answered.is_empty();
            self.finish_answered();
            busy |= self.take_jobs(cx);
            busy |= self.start_due(cx);
            if self.done() {
                return Poll::Ready(());
            }
            if !busy {
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Whether every lane is finished: its loop ended and nothing of it is in flight.
    fn done(&self) -> bool {
        match &self.feed {
            Feed::Closed(_) => self.lanes.iter().all(|l| l.state == State::Done),
            Feed::Open(pool) => {
                pool.closed() && self.lanes.iter().all(|l| matches!(l.state, State::Idle | State::Done))
            }
        }
    }

    /// Moves the connections on: the ones opening, and the open ones (written, read, timed
    /// out); what they answered goes into `self.answered`. True when one opened (its lanes'
    /// commands are then to be written) or failed.
    fn poll_links(&mut self, cx: &mut Context<'_>) -> bool {
        let mut opened = false;
        for server in 0..self.links.len() {
            match &mut self.links[server] {
                Link::Down => {}
                Link::Opening { opener, connecting } => {
                    if let Poll::Ready((result, phases)) = connecting.as_mut().poll(cx) {
                        let opener = *opener;
                        self.opened(server, opener, result, phases);
                        opened = true;
                    }
                }
                Link::Up(conn) => {
                    if conn.poll(cx, &mut self.answered).is_err() {
                        // Its commands have failed into `answered`; the next one opens anew.
                        self.links[server] = Link::Down;
                    }
                    opened |= self.unwait(server);
                }
            }
        }
        opened
    }

    /// Moves the lanes waiting for room on `server`'s connection on, when it has room or
    /// has ended (they open a new one): whether any did.
    fn unwait(&mut self, server: usize) -> bool {
        let mut moved = false;
        if self.due == 0 {
            // No lane waits for anything: the common case, told without a look at each.
            return false;
        }
        for i in 0..self.lanes.len() {
            let lane = &self.lanes[i];
            if !matches!(lane.state, State::Waiting(_)) || lane.server != server {
                continue;
            }
            match &self.links[server] {
                Link::Up(conn) if !conn.has_room() => return moved,
                Link::Up(_) => {
                    self.due -= 1;
                    self.submit(i);
                }
                Link::Opening { .. } => {
                    self.due -= 1;
                    self.lanes[i].state = State::Linking;
                }
                Link::Down => {
                    self.due -= 1;
                    self.lanes[i].state = State::Linking;
                    self.open(server, i);
                }
            }
            moved = true;
        }
        moved
    }

    /// The connection to `server` that lane `opener` opened is up (its waiting lanes send
    /// now), or not (the opener's command fails, or has the server's refusal of the
    /// greeting as its reply, and the next waiting lane tries).
    fn opened(&mut self, server: usize, opener: u32, opened: Result<Stream, Unopened>, phases: Phases) {
        self.lanes[opener as usize].phases = phases;
        match opened {
            Ok(io) => {
                self.w.recorder.borrow_mut().record_connection();
                self.links[server] = Link::Up(Box::new(KvConn::new(io, self.w.start, self.run.pipeline())));
                for i in 0..self.lanes.len() {
                    if self.lanes[i].state == State::Linking && self.lanes[i].server == server {
                        self.submit(i);
                    }
                }
            }
            Err(unopened) => {
                self.links[server] = Link::Down;
                let lane = &mut self.lanes[opener as usize];
                lane.state = State::InFlight;
                let result = match unopened {
                    Unopened::Failed(f) => Err(f),
                    Unopened::Refused { answer, sent, bytes_out } => {
                        (lane.submitted, lane.bytes_out) = (sent, bytes_out);
                        Ok(answer)
                    }
                };
                self.answered.push((opener, result));
                let waiting = (0..self.lanes.len())
                    .find(|&i| self.lanes[i].state == State::Linking && self.lanes[i].server == server);
                if let Some(i) = waiting {
                    self.open(server, i);
                }
            }
        }
    }

    /// Lane `lane` opens the connection to `server`.
    fn open(&mut self, server: usize, lane: usize) {
        let (connector, run, base) = (self.w.connector.clone(), self.run.clone(), self.w.start);
        let connecting = Box::pin(async move {
            let phases = Phases::default();
            let opened = connect(&connector, &run, server, &phases, base).await;
            (opened, phases)
        });
        self.links[server] = Link::Opening { opener: lane as u32, connecting };
    }

    /// Takes the open loop's jobs for this group's lanes and starts them.
    fn take_jobs(&mut self, cx: &mut Context<'_>) -> bool {
        if matches!(self.feed, Feed::Closed(_)) {
            return false;
        }
        self.inbox.register(cx.waker());
        self.inbox.take(&mut self.jobs);
        if self.jobs.is_empty() {
            return false;
        }
        // Each starts when it is taken up: one clock read for all of them.
        let now = self.w.start.elapsed();
        let mut jobs = std::mem::take(&mut self.jobs);
        for (lane, job) in jobs.drain(..) {
            self.start(lane as usize, job, now);
        }
        self.jobs = jobs;
        true
    }

    /// Starts the lanes whose next command or retry is due, fails those that waited for room
    /// on their connection until their timeout, and sets the timer for the others. Only with
    /// lanes waiting: a closed loop's first commands, think times, retries, a full connection.
    fn start_due(&mut self, cx: &mut Context<'_>) -> bool {
        if self.due == 0 {
            return false;
        }
        let now = self.w.start.elapsed();
        let mut started = false;
        let mut soonest: Option<Duration> = None;
        for i in 0..self.lanes.len() {
            let at = match self.lanes[i].state {
                State::Next(at) | State::Retry(at) | State::Waiting(at) => at,
                _ => continue,
            };
            if at > now {
                soonest = Some(soonest.map_or(at, |s| s.min(at)));
                continue;
            }
            self.due -= 1;
            started = true;
            match self.lanes[i].state {
                State::Retry(_) => {
                    let job = self.lanes[i].job.retried(now);
                    self.start(i, job, now);
                }
                State::Waiting(_) => {
                    // Counted when the group finishes what was answered, as a reply is.
                    self.lanes[i].state = State::InFlight;
                    let why = "not written within --timeout: the server read none of the 64 MiB of commands before it";
                    self.answered.push((i as u32, Err(Failure::new(ErrorKind::RequestTimeout, why))));
                }
                _ => self.next_closed(i, now),
            }
        }
        if let Some(at) = soonest {
            let when = tokio::time::Instant::from_std(instant_at(self.w.start, at));
            let timer = self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(when)));
            timer.as_mut().reset(when);
            // Fired already: look again at once.
            started |= timer.as_mut().poll(cx).is_ready();
        }
        started
    }

    /// A closed loop's lane `i` sends its next command at `now`, if its loop goes on.
    fn next_closed(&mut self, i: usize, now: Duration) {
        let Feed::Closed(closed) = &self.feed else { unreachable!("only a closed loop's lanes wait for their next") };
        let lane = &mut self.lanes[i];
        let Some(last) = closed.admit(now, self.stopped, &mut lane.turns) else {
            lane.state = State::Done;
            return;
        };
        lane.last = last;
        let job = closed.request(now, &mut lane.turns);
        self.start(i, job, now);
    }

    /// Starts lane `i`'s `job` at `now`: on its server's connection if it is up, else when
    /// it is.
    fn start(&mut self, i: usize, job: Job, now: Duration) {
        self.w.recorder.borrow_mut().record_sent();
        let plan = &self.run.plan;
        let lane = &mut self.lanes[i];
        lane.job = job;
        lane.started = if job.starts_now { job.intended } else { now };
        lane.phases = Phases::default();
        let cmd = &plan.commands[job.target as usize];
        fill_keys(&mut self.keys, &mut self.ranges, plan, cmd, plan.key_min + job.id);
        let route = self.ranges.first().map_or(&[][..], |r| &self.keys[r.clone()]);
        let server = plan.server(route);
        lane.server = server;
        match &self.links[server] {
            Link::Up(_) => self.send(i),
            Link::Opening { .. } => lane.state = State::Linking,
            Link::Down => {
                lane.state = State::Linking;
                self.open(server, i);
            }
        }
    }

    /// Lane `i`'s command goes on its server's connection, now up (keys filled again: other
    /// lanes' commands went meanwhile).
    fn submit(&mut self, i: usize) {
        let plan = &self.run.plan;
        let cmd = &plan.commands[self.lanes[i].job.target as usize];
        fill_keys(&mut self.keys, &mut self.ranges, plan, cmd, plan.key_min + self.lanes[i].job.id);
        self.send(i);
    }

    /// Hands lane `i`'s command, its keys filled, to its server's connection.
    fn send(&mut self, i: usize) {
        let (run, w) = (&*self.run, &*self.w);
        let plan = &run.plan;
        let lane = &mut self.lanes[i];
        let Link::Up(conn) = &mut self.links[lane.server] else { unreachable!("sent on an open connection") };
        let deadline = lane.started + w.plan.timeout;
        if !conn.has_room() {
            // The server reads nothing: the command waits, as an HTTP request waits to be
            // written, rather than fail at once (a lane failing without a system call made
            // millions of failures a second); [`Group::unwait`] sends it when there is room.
            lane.state = State::Waiting(deadline);
            self.due += 1;
            return;
        }
        let cmd = &plan.commands[lane.job.target as usize];
        let size = match cmd {
            KvCommand::Get => 0,
            _ => plan.values.size(lane.random(w.plan.draw_seed())) as usize,
        };
        let value = &run.value[..size];
        let (keys, ranges) = (&self.keys, &self.ranges);
        // A command that opened its connection is sent when it is open; the others when
        // they began (one clock read fewer per command).
        lane.submitted = if lane.phases.get(Phase::Connect).is_some() { w.start.elapsed() } else { lane.started };
        let parse = parse_of(plan.protocol, cmd);
        lane.state = State::InFlight;
        lane.bytes_out =
            conn.submit(i as u32, parse, deadline, |out| encode(out, plan.protocol, cmd, keys, ranges, value));
    }

    /// Records every command answered or failed, and moves each lane on.
    fn finish_answered(&mut self) {
        let mut answered = std::mem::take(&mut self.answered);
        for (lane, result) in answered.drain(..) {
            self.finish(lane as usize, result);
        }
        // Its capacity is kept; what finishing added (failures at once) waits for the next turn.
        answered.append(&mut self.answered);
        self.answered = answered;
        flush(&self.w, &self.run, &mut self.alike);
    }

    /// Records lane `i`'s command, then retries it, or sends the lane's next, or frees it.
    fn finish(&mut self, i: usize, result: Result<super::conn::Answer, Failure>) {
        let (run, w) = (&*self.run, &*self.w);
        let lane = &mut self.lanes[i];
        let label = &run.labels[lane.server];
        let done = match result {
            Ok(a) => done(a, lane.submitted, lane.bytes_out, label, &lane.phases),
            Err(f) => failure_done(w, f),
        };
        let job = lane.job;
        let sample = done.sample(w, &job, lane.started, &lane.phases);
        let ended = sample.ended;
        let target = &w.targets[job.target as usize];
        if let Some(log) = &w.log {
            // A command that failed is logged against the server it was meant for (the
            // backend figures count answers only). Its key again: other lanes' commands
            // filled the buffer meanwhile.
            let backend = Some(done.backend.as_deref().unwrap_or(label));
            let plan = &run.plan;
            fill_keys(
                &mut self.keys,
                &mut self.ranges,
                plan,
                &plan.commands[job.target as usize],
                plan.key_min + job.id,
            );
            let key = self.ranges.first().map_or(&[][..], |r| &self.keys[r.clone()]);
            let kv = Some((run.urls[lane.server].as_str(), key));
            let what = Logged { target, id: job.id, attempt: job.attempt, backend, flow: None, kv, trace: None };
            log_row(&mut log.borrow_mut(), w, lane.number, &what, &sample);
        }
        if done.reply.is_some() {
            // Its reply is kept as its class's example: recorded on its own.
            flush(w, run, &mut self.alike);
            // A command's method is its name: "By name" has it already.
            record_done(w, &sample, target.name.as_deref().map(str::as_bytes), None, &done);
        } else {
            let answered_by = done.backend.is_some().then_some(lane.server);
            tally(w, run, &mut self.alike, &sample, job.target, answered_by);
        }
        let ok = done.outcome.is_success();
        if let Next::Retry { pause } = settle(w, &job, done.outcome, ok, &mut lane.first) {
            lane.state = State::Retry(w.start.elapsed() + pause);
            self.due += 1;
            return;
        }
        w.lane_ended(job.number);
        match &self.feed {
            Feed::Closed(closed) if !closed.think.is_zero() && !lane.last => {
                // Thinking never carries a lane past the end of the attack.
                let wake = w.start.elapsed().saturating_add(closed.think);
                lane.state = State::Next(wake.min(closed.deadline().unwrap_or(Duration::MAX)));
                self.due += 1;
            }
            // Due as its last one ended.
            Feed::Closed(_) => self.next_closed(i, ended),
            Feed::Open(pool) if pool.closed() => lane.state = State::Done,
            Feed::Open(pool) => {
                lane.state = State::Idle;
                pool.release(Free::Lane(self.inbox.clone(), i as u32));
            }
        }
    }
}

/// Finished commands alike in every figure a histogram takes (their times and phases, their
/// outcome, cache status and lateness), of one command and answered by one server (or none):
/// recorded together ([`barrage_metrics::Recorder::record_alike`]), as the replies of one
/// read, written together and due together, often are (at `--pipeline 16`, a dozen
/// histograms recorded once per read instead of once per command).
struct Alike {
    /// One of them, with the bytes of all.
    sample: Sample,
    n: u64,
    /// The command's target, and the server that answered.
    target: u64,
    answered_by: Option<usize>,
}

impl Alike {
    /// Whether `sample`, of `target` and answered by `answered_by`, is like these.
    fn like(&self, sample: &Sample, target: u64, answered_by: Option<usize>) -> bool {
        let a = &self.sample;
        self.target == target
            && self.answered_by == answered_by
            && a.intended == sample.intended
            && a.started == sample.started
            && a.ended == sample.ended
            && a.phases == sample.phases
            && a.outcome == sample.outcome
            && a.late == sample.late
            && a.cache == sample.cache
    }
}

/// Adds `sample` to the commands waiting in `alike` when it is like them, else records those
/// and keeps `sample` waiting. Compared in place and copied only when it starts a new kind:
/// moving every sample into an [`Alike`] first cost 3% of a pipelined GET's CPU, in loads
/// stalled on the stores that had just built it.
fn tally(w: &Worker, run: &KvRun, alike: &mut Option<Alike>, sample: &Sample, target: u64, answered_by: Option<usize>) {
    if let Some(a) = alike.as_mut().filter(|a| a.like(sample, target, answered_by)) {
        a.n += 1;
        a.sample.bytes_in += sample.bytes_in;
        a.sample.bytes_out += sample.bytes_out;
        return;
    }
    flush(w, run, alike);
    *alike = Some(Alike { sample: sample.clone(), n: 1, target, answered_by });
}

/// Records the commands waiting in `alike`.
fn flush(w: &Worker, run: &KvRun, alike: &mut Option<Alike>) {
    let Some(a) = alike.take() else { return };
    let keys = SampleKeys {
        name: w.targets[a.target as usize].name.as_deref().map(str::as_bytes),
        method: None,
        backend: a.answered_by.map(|s| run.labels[s].as_bytes()),
    };
    if let Some(c) = &w.coalesce {
        c.answered(a.sample.service(), a.sample.ended, a.n);
    }
    w.recorder.borrow_mut().record_alike(&a.sample, a.n, &keys);
}
