//! One request on a slot's connection, measured into a [`Sample`]. The hot path: no lock, no
//! channel, no formatting; the recorder is this thread's own.

use crate::conn::{classify, Conn, Endpoint, Failure};
use crate::thread::Worker;
use barrage_metrics::{CacheStatus, ErrorKind, Outcome, Phase, Sample};
use barrage_plan::{IdTemplate, Plan};
use bytes::Bytes;
use http::header::{HeaderValue, AUTHORIZATION, CONNECTION, HOST};
use http::{HeaderMap, Method, Uri};
use http_body_util::{BodyExt, Full};
use std::time::Duration;

/// Phase durations of one request, `None` where the phase did not happen.
#[derive(Default)]
pub struct Phases(pub [Option<Duration>; barrage_metrics::sample::PHASE_COUNT]);

impl Phases {
    /// Records a phase.
    pub fn set(&mut self, p: Phase, d: Duration) {
        self.0[p as usize] = Some(d);
    }
}

/// A target made ready to send: URIs in both forms, headers with Host, its endpoint.
pub struct Prepared {
    method: Method,
    /// Origin-form (`/path?q`) for HTTP/1.1.
    path_uri: Uri,
    /// Absolute form for HTTP/2 (`:scheme` and `:authority` come from it).
    full_uri: Uri,
    headers: HeaderMap,
    body: barrage_plan::BodySource,
    /// Requests sent with this target, to move a unique body's window.
    sent: std::sync::atomic::AtomicU64,
    /// A URL template's path-and-query around `{id}`, filled per request.
    template: Option<IdTemplate>,
    /// The name, for the request log.
    name: Option<String>,
    /// The URL as given (a template keeps `{id}`), redacted, for the request log.
    url_text: String,
    /// Index into the run's endpoints.
    pub endpoint: usize,
}

/// Prepares the plan's targets; returns them and the distinct endpoints they use. The
/// request log shows each URL as `redaction` allows.
pub fn prepare(plan: &Plan, redaction: &barrage_metrics::secrets::Redaction) -> (Vec<Prepared>, Vec<Endpoint>) {
    let mut endpoints: Vec<Endpoint> = Vec::new();
    let prepared = plan
        .targets
        .iter()
        .map(|t| {
            let ep = Endpoint::of(&t.url, plan);
            let endpoint = endpoints
                .iter()
                .position(|e| e.host == ep.host && e.port == ep.port && e.tls == ep.tls)
                .unwrap_or_else(|| {
                    endpoints.push(ep);
                    endpoints.len() - 1
                });
            endpoints[endpoint].flat_writes &= t.body.is_empty();
            let mut headers = t.headers.clone();
            let (full_uri, user_info) = split_user_info(&t.url);
            if !headers.contains_key(HOST) {
                if let Some(auth) = full_uri.authority() {
                    headers.insert(HOST, HeaderValue::from_str(auth.as_str()).expect("an authority is a valid header"));
                }
            }
            if let (Some(credentials), false) = (user_info, headers.contains_key(AUTHORIZATION)) {
                // As curl and Go's net/http (so Vegeta) do: the URL's user and password
                // authenticate by Basic unless an Authorization header says otherwise.
                headers.insert(AUTHORIZATION, basic_auth(credentials));
            }
            if !plan.keepalive && !plan.http2 {
                // Let the server close first so TIME_WAIT piles up on its side, not ours.
                headers.insert(CONNECTION, HeaderValue::from_static("close"));
            }
            let path = t.url.path_and_query().map_or("/", |p| p.as_str());
            // `http://host?x=1` has the query but no path: the request target is `/?x=1`.
            let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
            Prepared {
                method: t.method.clone(),
                path_uri: path.parse().expect("a path of a valid URI is valid"),
                full_uri,
                headers,
                body: barrage_plan::BodySource { bytes: t.body.clone(), unique_len: t.body_unique_len },
                sent: std::sync::atomic::AtomicU64::new(0),
                name: t.name.clone(),
                url_text: redaction.url(&t.url_text()).into_owned(),
                template: t.id_template.clone().map(|mut tpl| {
                    if !tpl.prefix.starts_with('/') {
                        tpl.prefix.insert(0, '/');
                    }
                    tpl
                }),
                endpoint,
            }
        })
        .collect();
    (prepared, endpoints)
}

/// `url` without its user info (never sent in `Host` or HTTP/2's `:authority`), and that
/// user info (`user:password`, still percent-encoded) when there is one.
fn split_user_info(url: &Uri) -> (Uri, Option<&str>) {
    let Some((user_info, host)) = url.authority().and_then(|a| a.as_str().rsplit_once('@')) else {
        return (url.clone(), None);
    };
    let mut parts = url.clone().into_parts();
    parts.authority = Some(host.parse().expect("the host part of a valid authority is valid"));
    (Uri::from_parts(parts).expect("valid parts"), Some(user_info))
}

/// `Authorization: Basic …` for a URL's `user:password` (percent-decoded, as curl does).
fn basic_auth(user_info: &str) -> HeaderValue {
    use base64::Engine;
    let (user, password) = user_info.split_once(':').unwrap_or((user_info, ""));
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let mut credentials = decode(user);
    credentials.push(b':');
    credentials.extend(decode(password));
    let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).expect("base64 is a valid header value");
    value.set_sensitive(true);
    value
}

impl Prepared {
    fn request(&self, h2: bool, id: u64) -> http::Request<Full<Bytes>> {
        let body = match self.body.unique_len {
            None => self.body.bytes.clone(),
            Some(_) => self.body.body(self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed)),
        };
        let mut req = http::Request::new(Full::new(body));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri(h2, id);
        let mut headers = self.headers.clone();
        if h2 {
            // HTTP/2 carries the authority in a pseudo-header and forbids connection headers.
            headers.remove(HOST);
            headers.remove(CONNECTION);
        }
        *req.headers_mut() = headers;
        req
    }

    /// The request URI: origin-form for HTTP/1.1, absolute for HTTP/2, with a template's id
    /// filled in (the one allocation per request, and only for templates).
    fn uri(&self, h2: bool, id: u64) -> Uri {
        let Some(tpl) = &self.template else {
            return if h2 { self.full_uri.clone() } else { self.path_uri.clone() };
        };
        let path = format!("{}{id}{}", tpl.prefix, tpl.suffix);
        let mut parts = if h2 { self.full_uri.clone().into_parts() } else { http::uri::Parts::default() };
        parts.path_and_query = Some(path.parse().expect("a template validated with id 0 takes any id"));
        Uri::from_parts(parts).expect("valid parts")
    }
}

/// What one finished request yields besides its times.
struct Done {
    outcome: Outcome,
    bytes_in: u64,
    bytes_out: u64,
    cache: CacheStatus,
    /// The backend header's value (a reference-counted clone, no copy).
    backend: Option<HeaderValue>,
}

/// A slot: at most one request at a time, on its own connection.
pub struct Slot {
    conn: Option<(usize, Conn)>,
    /// Worker (closed loop) or slot (open loop) number within the run, for the log.
    worker: usize,
}

/// One request to make.
#[derive(Clone, Copy, Debug)]
pub struct Job {
    /// Intended start offset.
    pub intended: Duration,
    /// Index into the pick space: a target, or a template's id.
    pub target: u64,
    /// Could not start on time because every slot was busy.
    pub late: bool,
    /// Attempt number: 1, then 2, 3… for retries.
    pub attempt: u32,
}

impl Slot {
    /// A slot without a connection yet.
    pub fn new(worker: usize) -> Self {
        Slot { conn: None, worker }
    }

    /// Sends one request, retrying it as the policy says. Every attempt is recorded as a
    /// sample (what the server saw); with a policy, the request as the client saw it is
    /// recorded once more, with its attempts and whole latency.
    pub async fn request(&mut self, w: &Worker, mut job: Job) {
        let Some(policy) = &w.plan.retry else {
            self.exchange(w, job).await;
            return;
        };
        let first_intended = job.intended;
        let mut attempt = 1;
        let mut outcome = self.exchange(w, job).await;
        let first_ok = outcome.is_success();
        while attempt <= policy.max_retries && policy.on.matches(outcome) {
            let pause = policy.backoff(attempt, rand::random::<f64>());
            // A retry never starts after the attack ended: runs stay bounded.
            if w.attack_limit.is_some_and(|end| w.start.elapsed() + pause >= end) {
                break;
            }
            tokio::time::sleep(pause).await;
            attempt += 1;
            job = Job { intended: w.start.elapsed(), late: false, attempt, ..job };
            outcome = self.exchange(w, job).await;
        }
        let whole = w.start.elapsed().saturating_sub(first_intended);
        w.recorder.borrow_mut().record_logical(first_ok, outcome.is_success(), attempt, whole);
    }

    /// Sends one attempt and records it.
    async fn exchange(&mut self, w: &Worker, job: Job) -> Outcome {
        let started = w.start.elapsed();
        w.recorder.borrow_mut().record_sent();
        let mut phases = Phases::default();
        let (target, id) = match &w.targets[..] {
            [t] if t.template.is_some() => (t, job.target),
            all => (&all[job.target as usize], 0),
        };
        let res = tokio::time::timeout(w.plan.timeout, self.attempt(w, target, id, &mut phases)).await;
        let ended = w.start.elapsed();
        let Done { outcome, bytes_in, bytes_out, cache, backend } = match res {
            Ok(Ok(done)) => done,
            Ok(Err(f)) => self.failed(w, f),
            Err(_) => self.failed(w, Failure::new(ErrorKind::RequestTimeout, "no complete response within --timeout")),
        };
        if !w.plan.keepalive {
            self.conn = None;
        }
        let sample = Sample {
            intended: job.intended,
            started,
            ended,
            phases: phases.0,
            outcome,
            bytes_in,
            bytes_out,
            late: job.late,
            cache,
        };
        let mut rec = w.recorder.borrow_mut();
        rec.record(&sample);
        rec.methods.record(target.method.as_str().as_bytes(), &sample);
        if let Some(name) = &target.name {
            rec.names.record(name.as_bytes(), &sample);
        }
        if let Some(name) = &backend {
            rec.backends.record(name.as_bytes(), &sample);
        }
        if let Some(log) = &w.log {
            self.log(&mut log.borrow_mut(), w, target, id, job.attempt, backend.as_ref(), &sample);
        }
        outcome
    }

    #[allow(clippy::too_many_arguments)]
    fn log(
        &self,
        log: &mut crate::reqlog::LogHandle,
        w: &Worker,
        target: &Prepared,
        id: u64,
        attempt: u32,
        backend: Option<&HeaderValue>,
        sample: &Sample,
    ) {
        if !log.wants() {
            return;
        }
        let row = crate::reqlog::Row {
            run_start_unix_us: w.start_unix_us,
            worker: self.worker,
            name: target.name.as_deref(),
            method: target.method.as_str(),
            url: &target.url_text,
            id: target.template.as_ref().map(|_| id),
            attempt,
            backend: backend.map(HeaderValue::as_bytes),
        };
        log.row(&row, sample);
    }

    fn failed(&mut self, w: &Worker, f: Failure) -> Done {
        // A connection that failed a request is not trusted with the next one.
        self.conn = None;
        let mut rec = w.recorder.borrow_mut();
        if rec.wants_example(f.kind) {
            rec.set_example(f.kind, f.message());
        }
        Done { outcome: Outcome::Error(f.kind), bytes_in: 0, bytes_out: 0, cache: CacheStatus::Unknown, backend: None }
    }

    async fn attempt(&mut self, w: &Worker, t: &Prepared, id: u64, phases: &mut Phases) -> Result<Done, Failure> {
        let fresh = self.connect_if_needed(w, t.endpoint, phases).await?;
        let written_before = self.bytes_out();
        match self.exchange_on_conn(w, t, id, phases).await {
            // A kept-alive connection the server had closed before answering anything (while
            // idle, or on reading this request): the request goes once more on a new
            // connection, as browsers and hyper's pool do, if nothing of it went out or its
            // method is idempotent. Once only: the new connection is fresh. Counted, so it is
            // never hidden; its latency runs from the first try.
            Err(f) if !fresh && f.stale(t.method.is_idempotent()) => {
                w.recorder.borrow_mut().record_stale_retry();
                let written = self.bytes_out() - written_before;
                self.conn = None;
                self.connect_if_needed(w, t.endpoint, phases).await?;
                let mut done = self.exchange_on_conn(w, t, id, phases).await?;
                done.bytes_out += written;
                Ok(done)
            }
            other => other,
        }
    }

    /// Bytes written so far on the slot's connection.
    fn bytes_out(&self) -> u64 {
        self.conn.as_ref().map_or(0, |(_, c)| c.clock.bytes_out())
    }

    async fn exchange_on_conn(
        &mut self,
        w: &Worker,
        t: &Prepared,
        id: u64,
        phases: &mut Phases,
    ) -> Result<Done, Failure> {
        let conn = &mut self.conn.as_mut().expect("connected by the caller").1;
        let (in0, out0) = (conn.clock.bytes_in(), conn.clock.bytes_out());
        let sent_at = w.start.elapsed();
        let resp = conn.send(t.request(conn.is_h2(), id)).await?;
        let head_at = w.start.elapsed();
        // The last write before the head arrived ends the send phase.
        let written = conn.clock.last_write().clamp(sent_at, head_at);
        phases.set(Phase::Send, written - sent_at);
        phases.set(Phase::Wait, head_at - written);
        let status = resp.status().as_u16();
        let cache = w.plan.cache_rules.classify(resp.headers());
        let backend = w.plan.backend_headers.iter().find_map(|h| resp.headers().get(h)).cloned();
        let mut body = resp.into_body();
        while let Some(frame) = conn.with(body.frame()).await? {
            frame.map_err(classify)?;
        }
        phases.set(Phase::Receive, w.start.elapsed() - head_at);
        let (bytes_in, bytes_out) = (conn.clock.bytes_in() - in0, conn.clock.bytes_out() - out0);
        Ok(Done { outcome: Outcome::Status(status), bytes_in, bytes_out, cache, backend })
    }

    /// Makes sure the slot holds a usable connection to `endpoint`; true when a new one was
    /// opened (its DNS, connect and TLS phases then belong to this request).
    async fn connect_if_needed(&mut self, w: &Worker, endpoint: usize, phases: &mut Phases) -> Result<bool, Failure> {
        let reusable = match &mut self.conn {
            Some((ep, conn)) => *ep == endpoint && conn.usable() && conn.ready().await.is_ok(),
            None => false,
        };
        if reusable {
            return Ok(false);
        }
        self.conn = None;
        let conn = w.connector.connect(&w.endpoints[endpoint], w.start, phases).await?;
        w.recorder.borrow_mut().record_connection();
        self.conn = Some((endpoint, conn));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::{Load, Target};

    #[test]
    fn only_endpoints_without_bodies_flatten_writes() {
        let get = Target::new(Method::GET, "http://127.0.0.1:1/a").unwrap();
        let mut post = Target::new(Method::POST, "http://127.0.0.1:2/b").unwrap();
        post.body = Bytes::from_static(b"x");
        let get_same_endpoint = Target::new(Method::GET, "http://127.0.0.1:2/c").unwrap();
        let load = Load::Closed { concurrency: 1, think_time: Duration::ZERO };
        let (_, endpoints) = prepare(&Plan::new(vec![get, post, get_same_endpoint], load), &Default::default());
        let flat: Vec<(u16, bool)> = endpoints.iter().map(|e| (e.port, e.flat_writes)).collect();
        assert_eq!(flat, [(1, true), (2, false)]);
    }
}
