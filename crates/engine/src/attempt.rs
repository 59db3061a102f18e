//! The attempt's bookkeeping, one home for HTTP (plain requests and flows' steps) and
//! key-value lanes alike: the job an attempt runs, what a finished one yields ([`Done`]), its
//! failure made data, its sample, recorded and logged, and what comes after it ([`settle`]:
//! the one place that decides whether it is retried and after what pause, and counts the
//! request as the client saw it), and the requests and flows that were due and never sent.
//! The slot and the key-value lanes differ only in how they wait: the slot awaits, the lanes'
//! state machine polls. Below both; uses the worker, prepared, conn and timing floors.

use crate::conn::Failure;
use crate::prepared::Prepared;
use crate::timing::Phases;
use crate::trace::TraceHeaders;
use crate::worker::Worker;
use barrage_metrics::recorder::SampleKeys;
use barrage_metrics::trace;
use barrage_metrics::{CacheStatus, Intent, Origin, Outcome, Sample};
use http::header::HeaderValue;
use std::borrow::Cow;
use std::time::Duration;

/// One request to make.
#[derive(Clone, Copy, Debug)]
pub struct Job {
    /// Intended start offset.
    pub intended: Duration,
    /// Index into the run's targets.
    pub target: u64,
    /// A template's id.
    pub id: u64,
    /// Its number in the whole run's request stream (`k`, see [`barrage_plan::Picker`]):
    /// what it sends beyond target and id (a unique body's window, a value's size) is drawn
    /// from it, so a split run sends what the unsplit one would.
    pub number: u64,
    /// Could not start on time because every slot was busy.
    pub late: bool,
    /// Attempt number: 1, then 2, 3… for retries.
    pub attempt: u32,
    /// `intended` was read off the clock just now, so the attempt starts then too (a closed
    /// loop's request, a retry): one clock read fewer per request.
    pub starts_now: bool,
    /// What its object was meant to meet in a cache (its stream's draw).
    pub intent: Intent,
}

impl Job {
    /// A job due at `intended` with nothing drawn yet: a flow's arrival (its steps draw
    /// their own), a lane before its first command.
    pub(crate) fn at(intended: Duration) -> Job {
        Job { intended, target: 0, id: 0, number: 0, late: false, attempt: 1, starts_now: false, intent: Intent::Any }
    }

    /// The attempt after this one, starting `now`, when its retry's pause ended: on time
    /// (its pause was the policy's, not a busy slot's).
    pub(crate) fn retried(self, now: Duration) -> Job {
        Job { intended: now, late: false, attempt: self.attempt + 1, starts_now: true, ..self }
    }
}

/// What comes after an attempt ([`settle`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Next {
    /// The request is sent again ([`Job::retried`]) once `pause` has passed.
    Retry { pause: Duration },
    /// The request is done with.
    Finished,
}

/// A request's first attempt, as a retry policy counts the request: when it was due, and
/// whether it succeeded.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FirstAttempt {
    intended: Duration,
    ok: bool,
}

/// Settles attempt `job`, which ended with `outcome` (`ok`: whether it succeeded, a flow
/// step's checks and captures included), once it is recorded: whether the request is retried
/// and after what pause, the policy's one decision for HTTP, flows' steps and key-value
/// commands. A request done with under a policy is counted once more, as the client saw
/// it: its attempts, whether the first and the last succeeded, its latency from the first's
/// intended start. `first` carries the first attempt's figures to the last.
#[inline]
pub(crate) fn settle(w: &Worker, job: &Job, outcome: Outcome, ok: bool, first: &mut FirstAttempt) -> Next {
    if w.plan.retry.is_none() {
        return Next::Finished;
    }
    if job.attempt == 1 {
        *first = FirstAttempt { intended: job.intended, ok };
    }
    if let Some(pause) = retry_pause(w, job.attempt, outcome) {
        return Next::Retry { pause };
    }
    let whole = w.start.elapsed().saturating_sub(first.intended);
    w.recorder.borrow_mut().record_logical(first.ok, ok, job.attempt, whole);
    Next::Finished
}

/// What one finished request yields besides its times.
pub(crate) struct Done<'a> {
    pub outcome: Outcome,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub cache: CacheStatus,
    /// Where the answer came from, by the origin's stamp.
    pub origin: Origin,
    /// The backend header's value (a reference-counted clone, no copy), or the key-value
    /// server that answered.
    pub backend: Option<Cow<'a, HeaderValue>>,
    /// A key-value server's error reply: its class and message.
    pub reply: Option<(crate::kv::ErrorClass, Box<str>)>,
    /// When the answer was complete, if the attempt knows (a key-value reply's parse): else
    /// when the slot saw it.
    pub ended: Option<Duration>,
}

impl Done<'_> {
    /// The sample of `job`'s attempt, started at `started` with its `phases` filled: it
    /// ended when its answer was complete, as far as the attempt knows, else now.
    #[inline]
    pub(crate) fn sample(&self, w: &Worker, job: &Job, started: Duration, phases: &Phases) -> Sample {
        Sample {
            intended: job.intended,
            started,
            ended: self.ended.unwrap_or_else(|| w.start.elapsed()),
            phases: phases.values(),
            outcome: self.outcome,
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            late: job.late,
            cache: self.cache,
            intent: job.intent,
            origin: self.origin,
            rejected: false,
        }
    }
}

/// What a request log row says of the request, besides its sample.
pub(crate) struct Logged<'a> {
    pub target: &'a Prepared,
    pub id: u64,
    pub attempt: u32,
    pub backend: Option<&'a HeaderValue>,
    /// A flow's step.
    pub flow: Option<FlowLog<'a>>,
    /// A key-value command's server (its URL, as the run lists it) and key: the target's
    /// URL is the first server's.
    pub kv: Option<(&'a str, &'a [u8])>,
    /// `--trace-context`: its trace id and whether it is sampled.
    pub trace: Option<(barrage_metrics::trace::TraceId, bool)>,
}

/// What a request log row says of a flow's step.
pub(crate) struct FlowLog<'a> {
    /// The flow instance.
    pub id: u64,
    /// The step's place in the flow's run order.
    pub index: usize,
    /// `ok`, `check_failed:status`, ...
    pub outcome: String,
    /// The path as filled, when variables filled it.
    pub path: Option<String>,
    /// The step's key (its name, or `group/step`).
    pub key: &'a [u8],
}

/// Most requests of one give-up whose targets are worked out one by one, for their names
/// and methods: beyond it (an impossible rate, millions due at once) the rest are counted
/// in the totals only. The draws take a few ms, once per thread, as the attack ends (it
/// has ended: its end is noted already).
const ATTRIBUTED: u64 = 1 << 16;

/// Counts `count` requests of the run's stream that were due and never sent, numbers
/// `first`, `first + lanes`, …: in the totals, and under the name and the method of the
/// target each would have asked for, so that every table counts them against its success.
pub(crate) fn record_dropped(w: &Worker, first: u64, lanes: u64, count: u64) {
    let mut rec = w.recorder.borrow_mut();
    rec.record_dropped(count);
    // A key-value run's figures have names (its commands) and no methods.
    let http = w.kv.is_none();
    fn key(t: &Prepared, http: bool) -> (Option<&str>, Option<&str>) {
        (t.name.as_deref(), http.then(|| t.method.as_str()))
    }
    let mut put = |t: &Prepared, n: u64| {
        let (name, method) = key(t, http);
        if let Some(name) = name {
            rec.names.record_dropped(name.as_bytes(), n);
        }
        if let Some(method) = method {
            rec.methods.record_dropped(method.as_bytes(), n);
        }
    };
    if w.targets.windows(2).all(|p| key(&p[0], http) == key(&p[1], http)) {
        // One name and one method for all (the usual case): which target is no matter.
        if let Some(t) = w.targets.first() {
            put(t, count);
        }
        return;
    }
    let (picker, request_of) = (barrage_plan::Picker::of(&w.plan), w.plan.request_of());
    let mut each = vec![0u64; w.targets.len()];
    for j in 0..count.min(ATTRIBUTED) {
        let k = first + j * lanes;
        let (target, _) = request_of(k, picker.draw(k).0);
        each[target as usize] += 1;
    }
    for (t, n) in w.targets.iter().zip(each).filter(|(_, n)| *n > 0) {
        put(t, n);
    }
}

/// Counts `count` flows of group `g` that were due and never started, and each one's first
/// step as a request due and never sent (its later steps were never due: each is due when
/// the one before it ends).
pub(crate) fn record_dropped_flows(w: &Worker, g: usize, count: u64) {
    let scenario = w.plan.scenario.as_deref().expect("a scenario run");
    let flow = &scenario.flows[scenario.groups[g].flow];
    let keys = &w.keys[g];
    let mut rec = w.recorder.borrow_mut();
    rec.flows.record_dropped(&keys.group, count);
    if let Some(&first) = flow.order.first() {
        rec.names.record_dropped(&keys.steps[first], count);
        rec.methods.record_dropped(w.targets[flow.steps[first].target].method.as_str().as_bytes(), count);
    }
}

/// What a failed attempt yields: its kind as the outcome, its message kept as the kind's
/// example while the interval has none (formatted only then).
pub(crate) fn failure_done(w: &Worker, f: Failure) -> Done<'static> {
    let mut rec = w.recorder.borrow_mut();
    if rec.wants_example(f.kind) {
        rec.set_example(f.kind, f.message());
    }
    Done {
        outcome: Outcome::Error(f.kind),
        bytes_in: 0,
        bytes_out: 0,
        cache: CacheStatus::Unknown,
        origin: Origin::Unstamped,
        backend: None,
        reply: None,
        ended: None,
    }
}

/// Records a finished attempt into the thread's recorder: its sample, and under its name,
/// its method, the backend that answered and the class of a key-value server's error reply
/// (with the reply as the class's example).
pub(crate) fn record_done(w: &Worker, sample: &Sample, name: Option<&[u8]>, method: Option<&[u8]>, done: &Done<'_>) {
    if w.first_sent.get().is_none_or(|first| sample.started < first) {
        w.first_sent.set(Some(sample.started));
    }
    if let Some(c) = &w.coalesce {
        c.answered(sample.service(), sample.ended, 1);
    }
    let mut rec = w.recorder.borrow_mut();
    let backend = done.backend.as_deref().map(HeaderValue::as_bytes);
    rec.record_keyed(sample, &SampleKeys { name, method, backend });
    if let Some((class, message)) = &done.reply {
        rec.replies.record_example(class.name().as_bytes(), sample, || message.to_string());
    }
}

/// How long to wait before attempt `attempt + 1`, when the retry policy says the attempt
/// that ended with `outcome` is to be retried and the retry would start before the attack
/// ends (runs stay bounded).
fn retry_pause(w: &Worker, attempt: u32, outcome: Outcome) -> Option<Duration> {
    let policy = w.plan.retry.as_ref()?;
    if attempt > policy.max_retries || !policy.on.matches(outcome) {
        return None;
    }
    let pause = policy.backoff(attempt, rand::random::<f64>());
    match w.attack_limit {
        Some(end) if w.start.elapsed() + pause >= end => None,
        _ => Some(pause),
    }
}

/// Writes an attempt's row into the request log, when the log wants it; `worker` is the
/// slot's (or key-value lane's) number.
pub(crate) fn log_row(
    log: &mut crate::reqlog::LogHandle,
    w: &Worker,
    worker: usize,
    what: &Logged<'_>,
    sample: &Sample,
) {
    if !log.wants() {
        return;
    }
    let t = what.target;
    // A filled path is shown as sent, redacted as the run's URLs are.
    let filled = what.flow.as_ref().and_then(|f| f.path.as_ref()).map(|path| {
        let uri = t.full_uri();
        let base = uri.authority().map_or(String::new(), |a| format!("{}://{a}", uri.scheme_str().unwrap_or("http")));
        w.redaction.url(&format!("{base}{path}")).into_owned()
    });
    let server = what.kv.map(|(url, _)| w.redaction.url(url));
    let row = crate::reqlog::Row {
        run_start_unix_us: w.start_unix_us,
        worker,
        name: match &what.flow {
            Some(f) => std::str::from_utf8(f.key).ok(),
            None => t.name.as_deref(),
        },
        method: t.method.as_str(),
        url: server.as_deref().or(filled.as_deref()).or(t.url_text.as_deref()).unwrap_or_default(),
        id: t.template.is_some().then_some(what.id),
        key: what.kv.map(|(_, key)| key),
        attempt: what.attempt,
        backend: what.backend.map(HeaderValue::as_bytes),
        flow: what.flow.as_ref().map(|f| crate::reqlog::FlowCols { id: f.id, step: f.index, outcome: &f.outcome }),
        trace: what.trace,
    };
    log.row(&row, sample);
}

/// The most targets whose URLs a span names (beyond, a list's span names its server).
const SPAN_URLS: usize = 64;

/// What a sampled attempt's span says besides its sample.
pub(crate) struct Attempted<'a> {
    /// The request's (or flow's) number and the attempt.
    pub number: u64,
    pub attempt: u32,
    pub target: &'a Prepared,
    /// A flow's step.
    pub step: Option<&'a barrage_plan::flow::Step>,
}

/// An attempt ended: when its `traceparent` said sampled, it is kept as an exemplar if it
/// is among its interval's slowest, and its client span is handed to the exporter. Only
/// sampled attempts: a server keeps their traces, so an exemplar or a span leads to one.
pub(crate) fn traced(w: &Worker, trace: Option<TraceHeaders<'_>>, sample: &Sample, a: &Attempted<'_>) {
    let (Some(run), Some(t)) = (&w.trace, trace.filter(|t| t.sampled)) else { return };
    let latency_us = sample.corrected().as_micros() as u64;
    let ended_ms = u32::try_from(sample.ended.as_millis()).unwrap_or(u32::MAX);
    let exemplar = trace::Exemplar { trace: t.trace.0, span: t.span.0, latency_us, ended_ms };
    trace::keep_exemplar(&mut w.recorder.borrow_mut().exemplars, exemplar);
    let Some(spans) = run.spans() else { return };
    let unix = |d: std::time::Duration| w.start_unix_us.saturating_add(d.as_micros() as u64);
    let endpoint = &w.endpoints[a.target.endpoint];
    // Bounded cardinality: a step's URL as written (its variables unfilled), a target's
    // name, a URL template (its id unfilled), a short list's URL; a long list's
    // targets are only their server.
    let target = match (a.step, &a.target.name, &a.target.url_text) {
        (Some(step), _, _) => step.url_text.as_str().into(),
        (None, Some(name), _) => name.clone(),
        (None, None, Some(url)) if a.target.template.is_some() || w.targets.len() <= SPAN_URLS => url.as_ref().into(),
        _ => format!("{}://{}:{}", if endpoint.tls { "https" } else { "http" }, endpoint.host, endpoint.port).into(),
    };
    spans.0.put(trace::SpanRecord {
        trace: t.trace,
        span: t.span,
        // A flow's steps are spans of its trace beside each other: the flow itself is
        // no span of its own (its latency is in the flows' figures).
        parent: None,
        number: a.number,
        attempt: a.attempt,
        intended_unix_us: unix(sample.intended),
        started_unix_us: unix(sample.started),
        ended_unix_us: unix(sample.ended),
        phases: sample.phases,
        outcome: sample.outcome,
        rejected: sample.rejected,
        method: method_name(&a.target.method),
        target,
        server: format!("{}:{}", endpoint.host, endpoint.port).into(),
        step: a.step.map(|s| s.name.as_str().into()),
        captures: a.step.map(|s| s.captures.iter().map(|c| c.name.as_str().into()).collect()).unwrap_or_default(),
        bytes_in: sample.bytes_in,
        bytes_out: sample.bytes_out,
        cache: sample.cache,
    });
}

/// A method's name as OpenTelemetry's HTTP conventions want it: the standard ones, and
/// `_OTHER` for any other (a bounded attribute).
fn method_name(m: &http::Method) -> &'static str {
    use http::Method as M;
    [M::GET, M::HEAD, M::POST, M::PUT, M::DELETE, M::CONNECT, M::OPTIONS, M::TRACE, M::PATCH]
        .iter()
        .zip(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"])
        .find_map(|(known, name)| (known == m).then_some(name))
        .unwrap_or("_OTHER")
}
