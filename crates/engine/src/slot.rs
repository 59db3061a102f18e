//! The slot: at most one HTTP request at a time on its own connection (or, with
//! `--streams`, one its group shares), a plain request or a flow's step, measured into a
//! [`barrage_metrics::Sample`] and settled by the attempt floor; and a flow's run of steps,
//! which the slot sends one after the other. The hot path: no lock, no channel, no
//! formatting; the recorder is this thread's own.

use crate::attempt::{
    failure_done, log_row, record_done, settle, traced, Attempted, Done, FirstAttempt, FlowLog, Job, Logged, Next,
};
use crate::conn::Failure;
use crate::http::{Conn, Filled, Outgoing, Reading, SharedConns};
use crate::prepared::Prepared;
use crate::timing::Phases;
use crate::trace::TraceHeaders;
use crate::watchdog::{Expired, Watchdog};
use crate::worker::Worker;
use barrage_metrics::recorder::FlowFailure;
use barrage_metrics::{ErrorKind, Intent, Origin, Outcome, Protocol};
use barrage_plan::flow::{FlowState, Response, Scenario, Step, Verdict, CHECK_KINDS};
use bytes::Bytes;
use http::header::HeaderValue;
use http::HeaderMap;
use std::borrow::Cow;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A flow's step being sent: what fills its request, where its figures go, and what its
/// response said (kept only as far as its captures and checks read it).
struct StepIo<'a> {
    step: &'a Step,
    state: &'a mut FlowState,
    key: &'a [u8],
    /// The flow instance and the step's place in it, for the request log. The instance's
    /// id is also its trace's number (`--trace-context`): a flow's arrival draws no number
    /// from the run's stream (its `Job` has 0; its steps ask for what they say), and the
    /// id is unique per instance across threads and shards ([`Scenario::start_flow`]
    /// numbers them from one counter, in the shard's lane), as a plain run's numbers are.
    flow_id: u64,
    index: usize,
    headers: HeaderMap,
    body: Vec<u8>,
    verdict: Verdict,
    /// The path as filled, when variables filled it (for the request log).
    path: Option<String>,
}

impl StepIo<'_> {
    /// What the flow's variables fill in the step's request; the filled path is kept for the
    /// request log.
    fn fill(&mut self) -> Result<Filled, Failure> {
        let (step, st) = (self.step, &mut *self.state);
        let bad = |what: &str| Failure::new(ErrorKind::Other, format!("step {}: {what}", step.name));
        let mut filled = Filled::default();
        if let Some(path) = &step.path {
            let path = barrage_plan::flow::encode_path(&path.fill_string(st));
            if path.parse::<http::uri::PathAndQuery>().is_err() {
                return Err(bad("the filled URL is not valid"));
            }
            self.path = Some(path.clone());
            filled.path = Some(path);
        }
        for (name, value) in &step.headers {
            let mut bytes = Vec::new();
            value.fill(st, &mut bytes);
            let value = HeaderValue::from_bytes(&bytes)
                .map_err(|_| bad(&format!("the filled header {name} is not a valid header value")))?;
            filled.headers.push((name.clone(), value));
        }
        if let Some(body) = &step.body {
            let mut bytes = Vec::with_capacity(256);
            body.fill(st, &mut bytes);
            filled.body = Some(Bytes::from(bytes));
        }
        Ok(filled)
    }

    /// The filled path as the request log shows it: the flow's secret captured values
    /// concealed unless redaction is off (`--no-redact`).
    fn shown_path(&self, redact: bool) -> Option<String> {
        let path = self.path.as_deref()?;
        Some(if redact { self.state.conceal(path).into_owned() } else { path.to_string() })
    }

    /// Forgets what an earlier attempt's response said.
    fn reset(&mut self) {
        self.headers.clear();
        self.body.clear();
    }

    /// Judges the attempt that ended with `outcome`, capturing into the flow's state; what
    /// reads the body does not begin after `until`.
    fn judge(&mut self, outcome: Outcome, until: Instant) {
        let status = match outcome {
            Outcome::Status(code) => Some(code),
            Outcome::Error(_) => None,
        };
        let response = Response { status, headers: &self.headers, body: &self.body, until: Some(until) };
        self.verdict = self.step.judge(&response, self.state);
    }

    /// How the verdict fails the step's request besides its status: a check or a capture
    /// that failed (a request that failed by itself, by its status or without an answer, is
    /// failed already).
    fn rejection(&self) -> Option<FlowFailure> {
        match self.verdict {
            Verdict::CheckFailed(_) => Some(FlowFailure::Check),
            Verdict::CaptureFailed(_) => Some(FlowFailure::Capture),
            Verdict::Ok | Verdict::RequestFailed | Verdict::OutOfTime => None,
        }
    }

    /// The verdict as the request log shows it.
    fn outcome_text(&self) -> String {
        match self.verdict {
            Verdict::Ok => "ok".into(),
            Verdict::RequestFailed | Verdict::OutOfTime => "request_failed".into(),
            Verdict::CheckFailed(kind) => format!("check_failed:{}", CHECK_KINDS[kind]),
            Verdict::CaptureFailed(i) => format!("capture_failed:{}", self.step.captures[i].name),
        }
    }
}

/// When group `g`'s window ends: its own end or the attack's, whichever comes first.
pub(crate) fn group_end(w: &Worker, g: usize) -> Option<Duration> {
    crate::own_end(&w.plan.scenario.as_deref()?.groups[g], w.attack_limit)
}

/// How a step's verdict (its last attempt's) fails its flow.
fn step_failure(io: &StepIo<'_>) -> Option<FlowFailure> {
    match io.verdict {
        Verdict::Ok => None,
        Verdict::RequestFailed | Verdict::OutOfTime => Some(FlowFailure::Request),
        _ => io.rejection(),
    }
}

/// Most characters of a body quoted in a failure's example.
const EXAMPLE_BODY: usize = 120;

/// What a failed check or capture saw, to tell why: `capture albumID found nothing in a 200
/// answer of 0 bytes: ""`. Made once per step and interval, redacted like error examples.
fn failure_example(io: &StepIo<'_>, outcome: Outcome, redaction: &barrage_metrics::secrets::Redaction) -> String {
    let what = match io.verdict {
        Verdict::CheckFailed(kind) => format!("check {} failed on", CHECK_KINDS[kind]),
        Verdict::CaptureFailed(i) => format!("capture {} found nothing in", io.step.captures[i].name),
        Verdict::Ok | Verdict::RequestFailed | Verdict::OutOfTime => String::new(),
    };
    let status = match outcome {
        Outcome::Status(code) => code.to_string(),
        Outcome::Error(kind) => ErrorKind::name(kind).to_string(),
    };
    if !io.step.reads_body() {
        return format!("{what} a {status} answer");
    }
    // Redacted as it is read, no further than it is shown (a large answer is not read whole,
    // nor into a tree, to show a line): a login answer's token must not show in part, nor a
    // value the flow captured, which the answer may echo. Read past what is shown by the
    // longest such value, so that one cut by the line's end is still recognised.
    let reach = EXAMPLE_BODY.saturating_add(if redaction.enabled { io.state.secret_reach() } else { 0 });
    let (text, cut) = redaction.body(&io.body, reach);
    let text = if redaction.enabled { io.state.conceal(&text) } else { Cow::Borrowed(text.as_str()) };
    let head: String = text.chars().take(EXAMPLE_BODY).collect();
    let more = if cut || text.chars().nth(EXAMPLE_BODY).is_some() { "…" } else { "" };
    format!("{what} a {status} answer of {} bytes: {:?}{more}", io.body.len(), head)
}

/// A slot: at most one request at a time, on its own connection or, with `--streams`, on
/// one its group shares.
pub struct Slot {
    conn: Option<(usize, Conn)>,
    /// With `--streams` above 1: the connections this slot shares with the others of its
    /// group (a handle to one is in `conn` while a request uses it).
    shared: Option<Rc<SharedConns>>,
    /// The backend its last response named.
    backend: Option<HeaderValue>,
    /// A flow's pauses, to the microsecond: the step after one is due when the pause ends,
    /// so a millisecond timer's oversleep would count in its latency. Made at the first.
    timer: Option<crate::timing::PreciseTimer>,
    /// Worker (closed loop) or slot (open loop) number within the run, for the log.
    worker: usize,
    /// Bounds its attempts and their openings of connections. Made at the first.
    watchdog: Option<Watchdog>,
}

impl Slot {
    /// A slot without a connection yet.
    pub fn new(worker: usize) -> Self {
        Slot { conn: None, shared: None, backend: None, timer: None, worker, watchdog: None }
    }

    /// The slot's number within the run.
    pub(crate) fn number(&self) -> usize {
        self.worker
    }

    /// A slot of a group that shares its connections (`--streams`).
    pub(crate) fn sharing(worker: usize, shared: Rc<SharedConns>) -> Self {
        Slot { shared: Some(shared), ..Slot::new(worker) }
    }

    /// Sends one request, retrying it as the policy says. Every attempt is recorded as a
    /// sample (what the server saw); with a policy, the request as the client saw it is
    /// recorded once more, with its attempts and whole latency.
    pub async fn request(&mut self, w: &Worker, job: Job) {
        self.send(w, job, None).await;
    }

    /// [`Slot::request`], for a plain request or a flow's step; returns the last attempt's
    /// outcome.
    async fn send(&mut self, w: &Worker, mut job: Job, mut io: Option<&mut StepIo<'_>>) -> Outcome {
        let mut first = FirstAttempt::default();
        loop {
            let outcome = self.exchange(w, job, io.as_deref_mut()).await;
            // An attempt a step's check or capture rejected failed, as its sample says.
            let ok = outcome.is_success() && io.as_ref().is_none_or(|io| io.rejection().is_none());
            match settle(w, &job, outcome, ok, &mut first) {
                Next::Finished => return outcome,
                Next::Retry { pause } => {
                    tokio::time::sleep(pause).await;
                    job = job.retried(w.start.elapsed());
                }
            }
        }
    }

    /// Sends one attempt and records it; a flow's step is judged too.
    async fn exchange(&mut self, w: &Worker, job: Job, mut io: Option<&mut StepIo<'_>>) -> Outcome {
        let started = if job.starts_now { job.intended } else { w.start.elapsed() };
        w.recorder.borrow_mut().record_sent();
        let phases = Phases::default();
        let (target, id) = match (&w.targets[..], &io) {
            (all, Some(io)) => (&all[io.step.target], 0),
            (all, None) => (&all[job.target as usize], job.id),
        };
        let trace = trace_headers(w, io.as_deref(), &job);
        let what = (id, job.number, trace);
        if let Some(io) = io.as_deref_mut() {
            io.reset();
        }
        // Taken while the attempt borrows the slot; a cancelled one's is made again.
        let mut dog =
            self.watchdog.take().unwrap_or_else(|| Watchdog::new(w.plan.timeout, w.connector.connect_timeout()));
        let began = crate::timing::instant_at(w.start, started);
        let res = dog.bound(began, &phases, self.attempt(w, target, what, &phases, io.as_deref_mut())).await;
        self.watchdog = Some(dog);
        let mut done = match res {
            Ok(Ok(done)) => done,
            Ok(Err(f)) => self.failed(w, f),
            Err(Expired::Attempt) => {
                self.failed(w, Failure::new(ErrorKind::RequestTimeout, "no complete response within --timeout"))
            }
            Err(Expired::Opening) => self.failed(w, w.connector.timed_out(&w.endpoints[target.endpoint])),
        };
        if let Some(io) = io.as_deref_mut() {
            // Judged within the request's bound, as its answer was read: a run still ends
            // within its duration and --timeout however long the answers' judging takes.
            io.judge(done.outcome, crate::timing::instant_at(began, w.plan.timeout));
            if io.verdict == Verdict::OutOfTime {
                let late = Failure::new(ErrorKind::RequestTimeout, "captures and checks not judged within --timeout");
                done = Done { bytes_in: done.bytes_in, bytes_out: done.bytes_out, ..failure_done(w, late) };
            }
        }
        let mut sample = done.sample(w, &job, started, &phases);
        if !w.plan.protocol.keepalive() {
            self.conn = None;
        }
        let mut rejection = None;
        if let Some(io) = io.as_deref_mut() {
            // Judged before it is recorded: a check or capture that failed fails the request
            // in every figure it goes into, as a 5xx would.
            rejection = io.rejection();
            sample.rejected = rejection.is_some();
        }
        let name = match (&io, &target.name) {
            (Some(io), _) => Some(io.key),
            (None, name) => name.as_deref().map(str::as_bytes),
        };
        record_done(w, &sample, name, Some(target.method.as_str().as_bytes()), &done);
        let (number, step) = io.as_deref().map_or((job.number, None), |io| (io.flow_id, Some(io.step)));
        traced(w, trace, &sample, &Attempted { number, attempt: job.attempt, target, step });
        if let (Some(io), Some(failure)) = (io.as_deref(), rejection) {
            let example = || failure_example(io, done.outcome, &w.redaction);
            w.recorder.borrow_mut().names.mark(io.key, failure, example);
        }
        if let Some(log) = &w.log {
            let flow = io.as_deref().map(|io| FlowLog {
                id: io.flow_id,
                index: io.index,
                outcome: io.outcome_text(),
                path: io.shown_path(w.redaction.enabled),
                key: io.key,
            });
            let trace = trace.map(|t| (t.trace, t.sampled));
            let what =
                Logged { target, id, attempt: job.attempt, backend: done.backend.as_deref(), flow, kv: None, trace };
            log_row(&mut log.borrow_mut(), w, self.worker, &what, &sample);
        }
        done.outcome
    }

    /// Runs one flow instance of group `g` that arrived at `job.intended`, its
    /// `iteration`th on this slot: each step after the last (and its think time), the rest
    /// skipped once one fails. The flow's latency runs from its intended start to its last
    /// step's end; each step's own from when it was due (the end of the step before, plus
    /// the think time). Returns false when the group's feeder stops and has run out.
    pub async fn flow(&mut self, w: &Worker, g: usize, job: Job, iteration: u64) -> bool {
        let scenario: &Scenario = w.plan.scenario.as_deref().expect("a scenario run");
        let flow = &scenario.flows[scenario.groups[g].flow];
        let keys = &w.keys[g];
        let Some(mut state) = scenario.start_flow(g, self.worker as u64, iteration, w.plan.draw_seed()) else {
            return false;
        };
        let flow_id = state.id;
        let end = group_end(w, g);
        let mut failure: Option<FlowFailure> = None;
        let (mut intended, mut skipped) = (job.intended, 0);
        for (index, &s) in flow.order.iter().enumerate() {
            let step = &flow.steps[s];
            if failure.is_none() && index > 0 && end.is_some_and(|end| intended >= end) {
                // The window ended: no step starts after it (nor a pause), so the run ends
                // on time. The flow did not finish; it is counted as such.
                w.recorder.borrow_mut().flows.record_unfinished(&keys.group);
                return true;
            }
            if failure.is_some() {
                skipped += 1;
                self.skip(w, &keys.steps[s], step, (flow_id, index));
                continue;
            }
            let step_job = Job {
                intended,
                target: step.target as u64,
                id: 0,
                number: job.number,
                late: job.late && index == 0,
                attempt: 1,
                starts_now: false,
                intent: Intent::Any,
            };
            let mut io = StepIo {
                step,
                state: &mut state,
                key: &keys.steps[s],
                flow_id,
                index,
                headers: HeaderMap::new(),
                body: Vec::new(),
                verdict: Verdict::Ok,
                path: None,
            };
            self.send(w, step_job, Some(&mut io)).await;
            failure = step_failure(&io);
            intended = w.start.elapsed();
            if let (Some(think), None, true) = (step.think, failure, index + 1 < flow.order.len()) {
                intended += Scenario::think(&mut state, think);
                let wake = end.map_or(intended, |end| intended.min(end));
                let timer = self.timer.get_or_insert_with(crate::timing::PreciseTimer::new);
                timer.sleep_until(crate::timing::instant_at(w.start, wake)).await;
            }
        }
        let ended = w.start.elapsed();
        let latency = ended.saturating_sub(job.intended);
        w.recorder.borrow_mut().flows.record_flow(&keys.group, failure, latency, skipped, ended);
        true
    }

    /// Counts a step not sent because its flow failed before it, under its `key`, and logs
    /// it as the `index`th step of flow `id`: a row without times, so no step vanishes from
    /// the log.
    fn skip(&self, w: &Worker, key: &[u8], step: &Step, (id, index): (u64, usize)) {
        w.recorder.borrow_mut().names.skip(key);
        let Some(log) = &w.log else { return };
        // Never filled: the URL as written, `{{albumID}}` and all.
        let url = w.redaction.url(&step.url_text);
        let row = crate::reqlog::Row {
            run_start_unix_us: w.start_unix_us,
            worker: self.worker,
            name: Some(std::str::from_utf8(key).unwrap_or("")),
            method: w.targets[step.target].method.as_str(),
            url: &url,
            id: None,
            key: None,
            attempt: 0,
            backend: None,
            flow: Some(crate::reqlog::FlowCols { id, step: index, outcome: "skipped" }),
            trace: None,
        };
        log.borrow_mut().skipped(&row, w.start.elapsed());
    }

    fn failed(&mut self, w: &Worker, f: Failure) -> Done<'static> {
        // A connection that failed a request is not trusted with the next one, unless it is
        // an HTTP/2 or HTTP/3 one still up: a stream's failure (a reset, or a timeout, which
        // cancels the stream) leaves the connection and its other streams as they were.
        let keep = match &mut self.conn {
            Some((_, c @ (Conn::H2(_) | Conn::H3(_)))) => c.usable(),
            _ => false,
        };
        if !keep {
            self.conn = None;
        }
        failure_done(w, f)
    }

    /// `what`: the template's id, the request's number in the stream and its trace headers.
    async fn attempt(
        &mut self,
        w: &Worker,
        t: &Prepared,
        what: (u64, u64, Option<TraceHeaders<'_>>),
        phases: &Phases,
        mut io: Option<&mut StepIo<'_>>,
    ) -> Result<Done<'static>, Failure> {
        let fresh = self.connect_if_needed(w, t.endpoint, phases, None).await?;
        let written_before = self.bytes_out();
        match self.exchange_on_conn(w, t, what, phases, io.as_deref_mut()).await {
            // A kept-alive connection the server had closed before answering anything (while
            // idle, or on reading this request): the request goes once more on a new
            // connection, as browsers and hyper's pool do, if nothing of it went out or its
            // method is idempotent. A request the server says it did not process (HTTP/2:
            // a refused stream, or one above its GOAWAY's last stream id; HTTP/3: a rejected
            // request, or one a GOAWAY stopped) goes once more too, whatever its method. Once only. Counted, so it is never hidden; its
            // latency runs from the first try.
            Err(f) if f.unprocessed || (!fresh && f.stale(t.method.is_idempotent())) => {
                if f.unprocessed {
                    w.recorder.borrow_mut().record_stream_retry();
                } else {
                    w.recorder.borrow_mut().record_stale_retry();
                }
                let written = self.bytes_out() - written_before;
                let lost = self.conn.take().map(|(_, c)| c);
                self.connect_if_needed(w, t.endpoint, phases, lost.as_ref()).await?;
                if let Some(io) = io.as_deref_mut() {
                    io.reset();
                }
                let mut done = self.exchange_on_conn(w, t, what, phases, io).await?;
                done.bytes_out += written;
                Ok(done)
            }
            other => other,
        }
    }

    /// Bytes written so far on the slot's connection.
    fn bytes_out(&self) -> u64 {
        self.conn.as_ref().map_or(0, |(_, c)| c.bytes_out())
    }

    async fn exchange_on_conn(
        &mut self,
        w: &Worker,
        target: &Prepared,
        (id, number, trace): (u64, u64, Option<TraceHeaders<'_>>),
        phases: &Phases,
        mut io: Option<&mut StepIo<'_>>,
    ) -> Result<Done<'static>, Failure> {
        let conn = &mut self.conn.as_mut().expect("connected by the caller").1;
        let filled = match io.as_deref_mut() {
            Some(io) => Some(io.fill()?),
            None => None,
        };
        let out = Outgoing { target, id, number, filled: filled.as_ref(), trace };
        // A step whose captures or checks read the response keeps what they read.
        let (keep_headers, keep_body) =
            io.as_deref().map_or((false, false), |io| (io.step.reads_headers(), io.step.reads_body()));
        let (headers, body) = match io {
            Some(io) => (keep_headers.then_some(&mut io.headers), keep_body.then_some(&mut io.body)),
            None => (None, None),
        };
        let mut reading = Reading {
            rules: &w.plan.responses.cache,
            backend_headers: &w.plan.responses.backend_headers,
            last_backend: &mut self.backend,
            headers,
            body,
            stamp: None,
        };
        let answer = conn.exchange(&out, &mut reading, w.start).await;
        let stamp = reading.stamp;
        if let Some(figures) = conn.take_figures() {
            w.recorder.borrow_mut().record_streams(&figures);
        }
        let answer = answer?;
        answer.phases(phases);
        let sent_unix_us = w.start_unix_us.saturating_add(answer.sent.as_micros() as u64);
        Ok(Done {
            outcome: Outcome::Status(answer.status),
            bytes_in: answer.bytes_in,
            bytes_out: answer.bytes_out,
            cache: answer.cache,
            origin: Origin::of(stamp, sent_unix_us),
            backend: answer.backend.map(Cow::Owned),
            reply: None,
            ended: Some(answer.end),
        })
    }

    /// Makes sure the slot holds a usable connection to `endpoint`; true when a new one was
    /// opened (its DNS, connect and TLS phases then belong to this request). `lost`: a
    /// shared connection the server would not process a request on, not to be used again.
    async fn connect_if_needed(
        &mut self,
        w: &Worker,
        endpoint: usize,
        phases: &Phases,
        lost: Option<&Conn>,
    ) -> Result<bool, Failure> {
        if let Some(shared) = &self.shared {
            if let (Some((ep, held)), None) = (&mut self.conn, lost) {
                if *ep == endpoint && shared.holds(endpoint, held) {
                    return Ok(false);
                }
            }
            let ep = (endpoint, &w.endpoints[endpoint]);
            // Boxed: the opening's state is large, and rare (once per connection).
            let (conn, opened) = Box::pin(shared.conn(&w.connector, ep, phases, lost)).await?;
            if opened {
                count_connection(w, &conn)?;
            }
            self.conn = Some((endpoint, conn));
            return Ok(opened);
        }
        let reusable = match &mut self.conn {
            Some((ep, conn)) => *ep == endpoint && conn.reusable().await,
            None => false,
        };
        if reusable {
            return Ok(false);
        }
        self.conn = None;
        let conn = Conn::open(&w.connector, &w.endpoints[endpoint], phases).await?;
        count_connection(w, &conn)?;
        self.conn = Some((endpoint, conn));
        Ok(true)
    }
}

/// `--trace-context`: the trace headers of `job`'s attempt, counted when sampled. A flow's
/// trace is its instance (see `StepIo::flow_id`), each step a span in it.
fn trace_headers<'w>(w: &'w Worker, io: Option<&StepIo<'_>>, job: &Job) -> Option<TraceHeaders<'w>> {
    let headers = w.trace.as_ref().map(|t| match io {
        Some(io) => t.headers(io.flow_id, io.index as u32 + 1, job.attempt),
        None => t.headers(job.number, 0, job.attempt),
    });
    if headers.is_some_and(|t| t.sampled) {
        w.trace_sampled.set(w.trace_sampled.get() + 1);
    }
    headers
}

/// Counts a new connection by the protocol the server agreed to. With `--streams` above 1,
/// one on which it chose HTTP/1.1 cannot carry the streams: its request fails.
fn count_connection(w: &Worker, conn: &Conn) -> Result<(), Failure> {
    let protocol = conn.protocol();
    let fallback = w.connector.asks_http2() && protocol == Protocol::Http1;
    w.recorder.borrow_mut().record_http_connection(protocol, fallback);
    if fallback && w.plan.protocol.streams() > 1 {
        return Err(Failure::new(
            ErrorKind::Protocol,
            "the server did not agree to HTTP/2 (ALPN chose HTTP/1.1): --streams needs HTTP/2",
        ));
    }
    Ok(())
}
