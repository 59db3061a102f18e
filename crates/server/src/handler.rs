//! What the origin answers: the shared state of one server and the per-request routing.
//!
//! This is the server's hot path. It allocates nothing of its own on `/`, `/bytes/{n}`
//! and `/status/{code}` (bodies are static or slices of the pattern buffer, headers are
//! prebuilt), takes one uncontended read lock to clone the shape in force (an `Arc`: the
//! shape can be swapped while the origin serves, see [`ServerState::set_shape`]), no other lock
//! unless the store is in use or a latency delay was applied (then one short lock to record
//! it, beside a sleep of milliseconds). With an access log, a line is formatted into the
//! thread's own buffer. With a capacity ([`ServeConfig::max_concurrency`]) every request
//! but [`STATS_PATH`] also takes a permit from one semaphore shared by all threads (an
//! atomic operation while permits are free).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use barrage_metrics::units::parse_size;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http::header::{
    HeaderName, HeaderValue, ACCEPT_RANGES, ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, ETAG,
    IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, RANGE,
};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::access_log::AccessLog;
use crate::album::{self, Albums};
use crate::body::ResponseBody;
use crate::dist::{SizeDist, SplitMix64, Stall, MAX_BODY};
use crate::shape::{Capacity, Shape};
use crate::store::{Store, STORE_CAP};
use crate::{ServeConfig, ServeError};

/// The path of the statistics endpoint; requests to it are not counted.
pub(crate) const STATS_PATH: &str = "/_barrage/stats";

const X_SERVED_BY: HeaderName = HeaderName::from_static("x-served-by");
const STAMP: HeaderName = HeaderName::from_static(barrage_metrics::sample::STAMP_HEADER);

thread_local! {
    /// Per-thread generator for latency and error draws: no lock, no shared cache line.
    static RNG: RefCell<SmallRng> = RefCell::new(SmallRng::from_entropy());
}

fn with_rng<T>(f: impl FnOnce(&mut SmallRng) -> T) -> T {
    RNG.with(|rng| f(&mut rng.borrow_mut()))
}

/// State shared by every thread and connection of one server.
#[derive(Debug)]
pub(crate) struct ServerState {
    /// Requests received, except those to [`STATS_PATH`].
    pub(crate) requests: AtomicU64,
    /// The shape every request meets (latency, sizes, errors, capacity), swapped whole by
    /// [`ServerState::set_shape`] while the origin serves: a request reads it once, on arrival,
    /// and keeps that copy to the end (a read lock held for an `Arc` clone).
    live: RwLock<Arc<Live>>,
    /// The delays applied, as this origin's clock measured them (µs; the client's
    /// histogram bounds and precision, so the two compare exactly).
    delays: Mutex<Histogram<u64>>,
    /// Requests answered 503 at once because the capacity's queue was full.
    queue_full: AtomicU64,
    served_by: Option<HeaderValue>,
    cache_control: Option<HeaderValue>,
    /// `--objects N`: the catalog holds ids 0..N; others are 404.
    objects: Option<u64>,
    stall: Option<StallState>,
    /// `--access-log`: one line per request.
    access_log: Option<AccessLog>,
    pub(crate) store: Store,
    /// `/albums`: in `store`, or in the shared directory of [`ServeConfig::album_store`].
    albums: Albums,
    cache_sim: Option<crate::cachesim::CacheSim>,
    /// With TLS: the handshakes this origin completed, for `/_barrage/stats`.
    pub(crate) handshakes: Option<Handshakes>,
    /// With HTTP/3: `Alt-Svc` on every answer, saying where HTTP/3 is served.
    pub(crate) alt_svc: Option<HeaderValue>,
    /// This origin, in every answer's stamp: unique per process and configuration.
    instance: u64,
}

/// An answer's object generation, set by the route that knows it (the store's), for the
/// stamp.
#[derive(Clone, Copy)]
struct Generation(u64);

/// Handshakes completed, counted by the origin itself: a client's count of connections
/// and connect phases is checked against them.
#[derive(Debug, Default)]
pub(crate) struct Handshakes {
    /// TLS over TCP.
    pub(crate) tls: AtomicU64,
    /// QUIC (TLS inside).
    pub(crate) quic: AtomicU64,
    /// Of both, those that resumed a session (the client presented a ticket this origin
    /// issued): none from a client that pays a full handshake every time.
    pub(crate) resumed: Arc<AtomicU64>,
}

/// The shape in force, with the limiter its capacity needs.
#[derive(Debug)]
pub(crate) struct Live {
    pub(crate) shape: Shape,
    limit: Option<Arc<Limiter>>,
}

/// Capacity: `concurrency` permits handed out in arrival order (tokio's semaphore is
/// fair), shared by every thread, and a count of the requests waiting for one.
#[derive(Debug)]
struct Limiter {
    capacity: Capacity,
    permits: Arc<Semaphore>,
    queued: AtomicUsize,
}

/// One request's place in the queue, given back however it ends (served, or the client gone).
struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Limiter {
    fn new(capacity: Capacity) -> Result<Limiter, ServeError> {
        if !(1..=Semaphore::MAX_PERMITS).contains(&capacity.concurrency) {
            return Err(ServeError::Config {
                field: "max_concurrency",
                reason: format!("{} is not between 1 and {}", capacity.concurrency, Semaphore::MAX_PERMITS),
            });
        }
        Ok(Limiter { capacity, permits: Arc::new(Semaphore::new(capacity.concurrency)), queued: AtomicUsize::new(0) })
    }

    /// A turn to be served, at once or after those queued before; `None` when the queue is
    /// full (the request is answered 503 at once).
    async fn enter(&self) -> Option<OwnedSemaphorePermit> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Some(permit);
        }
        let waiting = self.queued.fetch_add(1, Ordering::AcqRel);
        let _place = Queued(&self.queued);
        if self.capacity.queue.is_some_and(|bound| waiting >= bound) {
            return None;
        }
        // The semaphore is never closed, so acquiring fails only if it were.
        self.permits.clone().acquire_owned().await.ok()
    }
}

impl Live {
    fn new(shape: Shape, previous: Option<&Live>) -> Result<Live, ServeError> {
        if !(0.0..=1.0).contains(&shape.error_rate) {
            return Err(ServeError::Config {
                field: "error_rate",
                reason: format!("{} is not a fraction between 0 and 1", shape.error_rate),
            });
        }
        // The same capacity keeps its limiter: requests queued and in service stay counted.
        // A new one starts empty; requests holding the old one's permits finish under it.
        let limit = match (shape.capacity, previous.and_then(|p| p.limit.as_ref())) {
            (None, _) => None,
            (Some(c), Some(old)) if old.capacity == c => Some(old.clone()),
            (Some(c), _) => Some(Arc::new(Limiter::new(c)?)),
        };
        Ok(Live { shape, limit })
    }

    /// Waits for a turn under the capacity; `Err` when the queue is full.
    async fn permit(&self) -> Result<Option<OwnedSemaphorePermit>, ()> {
        match &self.limit {
            None => Ok(None),
            Some(l) => l.enter().await.map(Some).ok_or(()),
        }
    }
}

impl ServerState {
    /// Checks the configuration and prebuilds the per-response headers.
    pub(crate) fn new(config: &ServeConfig) -> Result<Self, ServeError> {
        let shape = Shape {
            latency: config.latency,
            object_size: config.object_size.clone(),
            error_rate: config.error_rate,
            capacity: config.max_concurrency.map(|n| Capacity { concurrency: n, queue: config.max_queue }),
        };
        if config.max_queue.is_some() && config.max_concurrency.is_none() {
            let reason = "a queue bound is for requests waiting under max_concurrency: set it too".to_string();
            return Err(ServeError::Config { field: "max_queue", reason });
        }
        let live = Live::new(shape, None)?;
        let access_log = match &config.access_log {
            Some(path) => {
                Some(AccessLog::open(path).map_err(|source| ServeError::AccessLog { path: path.clone(), source })?)
            }
            None => None,
        };
        Ok(ServerState {
            requests: AtomicU64::new(0),
            live: RwLock::new(Arc::new(live)),
            delays: Mutex::new(barrage_metrics::recorder::new_histogram()),
            queue_full: AtomicU64::new(0),
            served_by: header_value("name", config.name.as_deref())?,
            cache_control: header_value("cache_control", config.cache_control.as_deref())?,
            objects: config.objects,
            stall: config.stall.map(|stall| StallState { stall, until: OnceLock::new() }),
            access_log,
            store: Store::open(config.store_dir.as_deref())?,
            albums: Albums::open(config.album_store.as_deref())?,
            cache_sim: config.cache_headers.map(crate::cachesim::CacheSim::new),
            handshakes: config.tls.then(Handshakes::default),
            alt_svc: None,
            instance: rand::random(),
        })
    }
}

fn header_value(field: &'static str, value: Option<&str>) -> Result<Option<HeaderValue>, ServeError> {
    value
        .map(|v| {
            HeaderValue::from_str(v).map_err(|_| ServeError::Config {
                field,
                reason: format!("'{v}' is not a valid header value (visible ASCII expected)"),
            })
        })
        .transpose()
}

/// The stall of one server: when it was triggered, if it was.
#[derive(Debug)]
struct StallState {
    stall: Stall,
    until: OnceLock<Instant>,
}

impl StallState {
    /// Called with each request's number on arrival: the one that reaches the count
    /// starts the pause.
    fn trigger(&self, request_number: u64) {
        if request_number == self.stall.after_requests {
            // Only one request has this number, so the pause starts once.
            // The duration is at most a year (its parser's limit): the sum cannot overflow.
            let now = Instant::now();
            let _ = self.until.set(now.checked_add(self.stall.duration).unwrap_or(now));
        }
    }

    /// Every request handled before the pause ends waits for it to end.
    async fn wait(&self) {
        if let Some(&until) = self.until.get() {
            if Instant::now() < until {
                tokio::time::sleep_until(until.into()).await;
            }
        }
    }
}

/// A request's body, whichever protocol brought it: hyper's for HTTP/1.1 and HTTP/2, h3's
/// for HTTP/3 (see [`crate::h3`]).
pub(crate) trait RequestBody:
    hyper::body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + Unpin + 'static
{
}

impl<B> RequestBody for B where
    B: hyper::body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + Unpin + 'static
{
}

/// Answers one request. Every problem is an HTTP status; the one `Err` is
/// `/reset/{reason}`, a fault asked for: HTTP/2 resets the stream with that reason code
/// (hyper sends the reason of an `h2::Error`), HTTP/3 with its counterpart ([`crate::h3`]),
/// HTTP/1.1 closes the connection unanswered.
pub(crate) async fn handle<B: RequestBody>(
    state: Arc<ServerState>,
    req: Request<B>,
) -> Result<Response<ResponseBody>, h2::Error> {
    if req.uri().path() == STATS_PATH {
        return Ok(stats(&state, req.method()));
    }
    let began = Instant::now();
    let logged = state.access_log.as_ref().map(|_| {
        let trace = req.headers().get("traceparent").cloned();
        (req.method().clone(), req.uri().clone(), trace)
    });
    let resp = handle_counted(&state, req).await;
    if let (Some(log), Some((method, uri, trace)), Ok(resp)) = (&state.access_log, logged, &resp) {
        let trace = trace.as_ref().map(http::HeaderValue::as_bytes);
        log.record(&method, &uri, (resp.status(), resp.body().len()), began.elapsed(), trace);
    }
    resp
}

async fn handle_counted<B: RequestBody>(
    state: &Arc<ServerState>,
    req: Request<B>,
) -> Result<Response<ResponseBody>, h2::Error> {
    // Counted on arrival, so requests waiting for a permit are counted too.
    let number = state.requests.fetch_add(1, Ordering::Relaxed) + 1;
    let live = state.live();
    // The stamp's time: the request had been sent by now, so an answer made for it is
    // stamped after its send, and a cache's copy of an earlier answer before.
    let arrived = std::time::SystemTime::now();
    if let Some(reason) = req.uri().path().strip_prefix(RESET_PATH) {
        return match reset_reason(reason) {
            Some(reason) => Err(h2::Error::from(reason)),
            None => Ok(bad_request(
                "/reset/{reason}: reason is an HTTP/2 error code, by name (cancel, refused_stream, internal_error, ...) or number\n",
            )),
        };
    }
    if let Some(stall) = &state.stall {
        stall.trigger(number);
    }
    // Held until the response is produced: the stall, the latency and the route are all
    // service time under the limit. Dropped (so the next in line goes) if the client
    // goes away while this request waits or is served.
    let Ok(_permit) = live.permit().await else {
        state.queue_full.fetch_add(1, Ordering::Relaxed);
        let mut resp = status_response(StatusCode::SERVICE_UNAVAILABLE);
        state.add_headers(resp.headers_mut());
        state.stamp(&mut resp, arrived, number);
        return Ok(resp);
    };
    if let Some(stall) = &state.stall {
        // After the permit: requests queued behind the limit must not be served during
        // the pause either.
        stall.wait().await;
    }
    if let Some(latency) = &live.shape.latency {
        let delay = with_rng(|rng| latency.sample(rng));
        if !delay.is_zero() {
            // Timed here, not assumed: a timer wakes late (tokio's by up to a millisecond,
            // any by the scheduler's delay on a busy machine), and that lateness is the
            // origin's, which `/_barrage/stats` reports.
            let asleep = Instant::now();
            tokio::time::sleep(delay).await;
            state.record_delay(asleep.elapsed());
        }
    }
    let head = req.method() == Method::HEAD;
    // Only a successful GET would be cached; its path keys the simulated cache.
    let cache_key = (state.cache_sim.is_some() && req.method() == Method::GET).then(|| req.uri().path().to_string());
    let error_rate = live.shape.error_rate;
    let mut resp = if error_rate > 0.0 && with_rng(|rng| rng.gen_bool(error_rate)) {
        status_response(StatusCode::INTERNAL_SERVER_ERROR)
    } else {
        route(state, &live.shape.object_size, req).await
    };
    state.add_headers(resp.headers_mut());
    state.stamp(&mut resp, arrived, number);
    if let (Some(sim), Some(path)) = (&state.cache_sim, cache_key) {
        if resp.status().is_success() {
            sim.label(&path, resp.headers_mut());
        }
    }
    if head {
        strip_body(&mut resp);
    }
    Ok(resp)
}

impl ServerState {
    /// The shape in force now.
    pub(crate) fn live(&self) -> Arc<Live> {
        // Nothing panics while the lock is held (a swap of one `Arc`): a poisoned lock
        // still holds a whole value.
        self.live.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Swaps the shape in force: requests arriving from now on meet `shape`; those in
    /// progress finish under the one they arrived with. The same capacity keeps its queue.
    pub(crate) fn set_shape(&self, shape: Shape) -> Result<(), ServeError> {
        let mut live = self.live.write().unwrap_or_else(|e| e.into_inner());
        *live = Arc::new(Live::new(shape, Some(&live))?);
        Ok(())
    }

    /// Writes out what the access log holds.
    pub(crate) fn flush_log(&self) {
        if let Some(log) = &self.access_log {
            log.flush();
        }
    }

    fn record_delay(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        // A poisoned lock only means a panic elsewhere mid-record; the counts stand.
        self.delays.lock().unwrap_or_else(|e| e.into_inner()).saturating_record(us);
    }

    /// `/_barrage/stats`: the request count, the album counts, with TLS the handshakes and,
    /// with a latency, the delays applied.
    fn stats_json(&self) -> String {
        use std::fmt::Write;
        let requests = self.requests.load(Ordering::Relaxed);
        let mut json = format!("{{\"requests\": {requests}, \"albums\": {}", self.albums.counts.json());
        if let Some(h) = &self.handshakes {
            let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
            let (tls, quic, resumed) = (n(&h.tls), n(&h.quic), n(&h.resumed));
            let _ = write!(json, ", \"handshakes\": {{\"tls\": {tls}, \"quic\": {quic}, \"resumed\": {resumed}}}");
        }
        let live = self.live();
        let queue_full = self.queue_full.load(Ordering::Relaxed);
        if live.limit.as_ref().is_some_and(|l| l.capacity.queue.is_some()) || queue_full > 0 {
            let _ = write!(json, ", \"queue_full\": {queue_full}");
        }
        let h = self.delays.lock().unwrap_or_else(|e| e.into_inner());
        if live.shape.latency.is_some() || !h.is_empty() {
            let q = |q: f64| if h.is_empty() { 0 } else { h.value_at_quantile(q) };
            let _ = write!(
                json,
                ", \"delay_us\": {{\"count\": {}, \"p50\": {}, \"p90\": {}, \"p99\": {}, \"max\": {}}}",
                h.len(),
                q(0.5),
                q(0.9),
                q(0.99),
                q(1.0)
            );
        }
        drop(h);
        if self.access_log.is_some() || live.shape != Shape::default() {
            let _ = write!(json, ", \"shape\": \"{}\"", live.shape);
        }
        json.push_str("}\n");
        json
    }

    /// Stamps an answer ([`barrage_metrics::sample::STAMP_HEADER`]): when it was made, its
    /// number and this origin's, and its object's generation.
    fn stamp(&self, resp: &mut Response<ResponseBody>, made: std::time::SystemTime, number: u64) {
        let unix_us = made.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        let generation = resp.extensions().get::<Generation>().map_or(0, |g| g.0);
        let value = barrage_metrics::sample::stamp(unix_us, number, self.instance, generation);
        let value = HeaderValue::try_from(value).expect("digits, letters, = and spaces");
        resp.headers_mut().insert(STAMP, value);
    }

    fn add_headers(&self, headers: &mut HeaderMap) {
        if let Some(name) = &self.served_by {
            headers.insert(X_SERVED_BY, name.clone());
        }
        if let Some(cache_control) = &self.cache_control {
            headers.insert(CACHE_CONTROL, cache_control.clone());
        }
        if let Some(alt_svc) = &self.alt_svc {
            headers.insert(http::header::ALT_SVC, alt_svc.clone());
        }
    }
}

/// A HEAD response carries the length the GET body would have, but no body.
fn strip_body(resp: &mut Response<ResponseBody>) {
    let len = resp.body().len();
    *resp.body_mut() = ResponseBody::empty();
    if !matches!(resp.status(), StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED) {
        resp.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(len));
    }
}

/// `/reset/{reason}`: the stream is reset with that HTTP/2 error code.
const RESET_PATH: &str = "/reset/";

/// An HTTP/2 error code by its name in RFC 9113 (any case, `_` or `-`) or its number.
fn reset_reason(text: &str) -> Option<h2::Reason> {
    use h2::Reason;
    if let Ok(n) = text.parse::<u32>() {
        return Some(Reason::from(n));
    }
    const NAMES: [(&str, Reason); 14] = [
        ("NO_ERROR", Reason::NO_ERROR),
        ("PROTOCOL_ERROR", Reason::PROTOCOL_ERROR),
        ("INTERNAL_ERROR", Reason::INTERNAL_ERROR),
        ("FLOW_CONTROL_ERROR", Reason::FLOW_CONTROL_ERROR),
        ("SETTINGS_TIMEOUT", Reason::SETTINGS_TIMEOUT),
        ("STREAM_CLOSED", Reason::STREAM_CLOSED),
        ("FRAME_SIZE_ERROR", Reason::FRAME_SIZE_ERROR),
        ("REFUSED_STREAM", Reason::REFUSED_STREAM),
        ("CANCEL", Reason::CANCEL),
        ("COMPRESSION_ERROR", Reason::COMPRESSION_ERROR),
        ("CONNECT_ERROR", Reason::CONNECT_ERROR),
        ("ENHANCE_YOUR_CALM", Reason::ENHANCE_YOUR_CALM),
        ("INADEQUATE_SECURITY", Reason::INADEQUATE_SECURITY),
        ("HTTP_1_1_REQUIRED", Reason::HTTP_1_1_REQUIRED),
    ];
    let name = text.to_ascii_uppercase().replace('-', "_");
    NAMES.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

/// Where `POST /_barrage/multipart` keeps what it parsed last.
const MULTIPART_PATH: &str = "/_barrage/multipart";
const MULTIPART_LAST: &str = "/_barrage/multipart/last";

/// `POST /albums` creates an album; `/albums/{id}` reads one (see [`album`]).
const ALBUMS_PATH: &str = "/albums";

/// The built-in routes; everything else is the store.
enum Route<'a> {
    Multipart,
    Albums,
    Album(&'a str),
    Bytes(&'a str),
    Delay(&'a str),
    Status(&'a str),
    Object(&'a str),
    Store,
}

fn classify(path: &str) -> Route<'_> {
    let prefixed = |prefix: &str| path.strip_prefix(prefix);
    if path == MULTIPART_PATH {
        Route::Multipart
    } else if path == ALBUMS_PATH {
        Route::Albums
    } else if let Some(id) = path.strip_prefix(ALBUMS_PATH).and_then(|rest| rest.strip_prefix('/')) {
        Route::Album(id)
    } else if let Some(n) = prefixed("/bytes/") {
        Route::Bytes(n)
    } else if let Some(ms) = prefixed("/delay/") {
        Route::Delay(ms)
    } else if let Some(code) = prefixed("/status/") {
        Route::Status(code)
    } else if let Some(id) = prefixed("/obj/") {
        Route::Object(id)
    } else {
        Route::Store
    }
}

async fn route<B: RequestBody>(state: &ServerState, sizes: &SizeDist, req: Request<B>) -> Response<ResponseBody> {
    let read_only = matches!(*req.method(), Method::GET | Method::HEAD);
    match classify(req.uri().path()) {
        Route::Store => store_route(state, req).await,
        Route::Multipart if req.method() == Method::POST => multipart_route(state, req).await,
        Route::Multipart => method_not_allowed("POST"),
        Route::Albums => album::create_route(&state.albums, &state.store, req).await,
        Route::Album(id) => album::read_route(&state.albums, &state.store, id, req.method()),
        _ if !read_only => method_not_allowed("GET, HEAD"),
        Route::Bytes(n) => bytes_route(n),
        Route::Delay(ms) => delay_route(ms).await,
        Route::Status(code) => status_route(code),
        Route::Object(id) => object_route(state, sizes, id, req.headers()),
    }
}

pub(crate) fn respond(status: StatusCode, body: ResponseBody) -> Response<ResponseBody> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp
}

/// A response with `status` whose body is its reason phrase (none where HTTP forbids one).
fn status_response(status: StatusCode) -> Response<ResponseBody> {
    let body = match status {
        StatusCode::NO_CONTENT | StatusCode::RESET_CONTENT | StatusCode::NOT_MODIFIED => ResponseBody::empty(),
        _ => ResponseBody::text(status.canonical_reason().unwrap_or("")),
    };
    respond(status, body)
}

fn bad_request(why: &'static str) -> Response<ResponseBody> {
    respond(StatusCode::BAD_REQUEST, ResponseBody::text(why))
}

pub(crate) fn method_not_allowed(allow: &'static str) -> Response<ResponseBody> {
    let mut resp = status_response(StatusCode::METHOD_NOT_ALLOWED);
    resp.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    resp
}

fn bytes_route(n: &str) -> Response<ResponseBody> {
    match parse_size(n) {
        Ok(len) if len <= MAX_BODY => respond(StatusCode::OK, ResponseBody::pattern(0, len)),
        Ok(_) => bad_request("/bytes/{n}: n is at most 1g\n"),
        Err(_) => bad_request("/bytes/{n}: n is a size such as 1024, 1k or 1m\n"),
    }
}

async fn delay_route(ms: &str) -> Response<ResponseBody> {
    match ms.parse::<u64>() {
        Ok(ms) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            respond(StatusCode::OK, ResponseBody::text("ok\n"))
        }
        Err(_) => bad_request("/delay/{ms}: ms is a whole number of milliseconds\n"),
    }
}

fn status_route(code: &str) -> Response<ResponseBody> {
    match code.parse::<u16>() {
        // hyper cannot send a 1xx as the final response (it would turn it into a 500),
        // so say so rather than answer something else.
        Ok(100..=199) => bad_request("/status/{code}: a 1xx code cannot be a final response\n"),
        Ok(code @ 200..=599) => match StatusCode::from_u16(code) {
            Ok(status) => status_response(status),
            Err(_) => bad_request("/status/{code}: code is between 100 and 599\n"),
        },
        _ => bad_request("/status/{code}: code is between 100 and 599\n"),
    }
}

/// A deterministic object: size and bytes are functions of the id alone, so repeated
/// requests (through a cache, from several clients) see the same object.
fn object_route(state: &ServerState, sizes: &SizeDist, id: &str, req_headers: &HeaderMap) -> Response<ResponseBody> {
    if id.is_empty() {
        return bad_request("/obj/{id}: the id is missing\n");
    }
    if let Some(n) = state.objects {
        if id.parse::<u64>().map_or(true, |i| i >= n) {
            return status_response(StatusCode::NOT_FOUND);
        }
    }
    let seed = fnv1a(id.as_bytes());
    let mut rng = SplitMix64(seed);
    let size = sizes.sample(&mut rng);
    let offset = rng.next_u64();
    let etag = format!("\"{seed:016x}-{size:x}\"");
    // Answering conditional requests lets caches revalidate against the origin.
    let mut resp = if not_modified(req_headers, &etag) {
        respond(StatusCode::NOT_MODIFIED, ResponseBody::empty())
    } else {
        ranged(req_headers, offset, size)
    };
    let etag = HeaderValue::try_from(etag).expect("hex digits and quotes are a valid header value");
    let headers = resp.headers_mut();
    headers.insert(ETAG, etag);
    headers.insert(LAST_MODIFIED, HeaderValue::from_static(OBJECTS_MODIFIED));
    headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    resp
}

/// Objects never change: they all carry this Last-Modified.
const OBJECTS_MODIFIED: &str = "Mon, 01 Jan 2024 00:00:00 GMT";

/// `If-None-Match` matching the ETag, or (without it) `If-Modified-Since` not before
/// [`OBJECTS_MODIFIED`].
fn not_modified(h: &HeaderMap, etag: &str) -> bool {
    if let Some(v) = h.get(IF_NONE_MATCH) {
        return v == "*" || v == etag;
    }
    let since = h.get(IF_MODIFIED_SINCE).and_then(|v| v.to_str().ok()).and_then(|v| httpdate::parse_http_date(v).ok());
    let modified = httpdate::parse_http_date(OBJECTS_MODIFIED).expect("a valid HTTP date");
    since.is_some_and(|since| since >= modified)
}

/// The whole object (200), or the single byte range asked for (206), or 416 for a range
/// outside it. Several ranges are answered with the whole object, which RFC 9110 allows.
fn ranged(h: &HeaderMap, offset: u64, size: u64) -> Response<ResponseBody> {
    let Some(spec) = h.get(RANGE).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("bytes=")) else {
        return respond(StatusCode::OK, ResponseBody::pattern(offset, size));
    };
    if spec.contains(',') {
        return respond(StatusCode::OK, ResponseBody::pattern(offset, size));
    }
    match byte_range(spec, size) {
        Some((first, last)) => {
            let mut resp =
                respond(StatusCode::PARTIAL_CONTENT, ResponseBody::pattern(offset + first, last - first + 1));
            let range = format!("bytes {first}-{last}/{size}");
            resp.headers_mut().insert(CONTENT_RANGE, HeaderValue::try_from(range).expect("digits"));
            resp
        }
        None => {
            let mut resp = respond(StatusCode::RANGE_NOT_SATISFIABLE, ResponseBody::empty());
            resp.headers_mut().insert(CONTENT_RANGE, HeaderValue::try_from(format!("bytes */{size}")).expect("digits"));
            resp
        }
    }
}

/// `a-b`, `a-` or `-n` within an object of `size` bytes, as inclusive first and last byte.
fn byte_range(spec: &str, size: u64) -> Option<(u64, u64)> {
    let (a, b) = spec.trim().split_once('-')?;
    let (first, last) = match (a.parse::<u64>().ok(), b.parse::<u64>().ok()) {
        (Some(first), Some(last)) => (first, last.min(size.checked_sub(1)?)),
        (Some(first), None) if b.is_empty() => (first, size.checked_sub(1)?),
        (None, Some(n)) if a.is_empty() && n > 0 => (size.saturating_sub(n), size.checked_sub(1)?),
        _ => return None,
    };
    (first <= last && first < size).then_some((first, last))
}

/// FNV-1a: a stable hash (std's `DefaultHasher` may change between Rust releases).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

async fn store_route<B: RequestBody>(state: &ServerState, req: Request<B>) -> Response<ResponseBody> {
    match *req.method() {
        Method::GET | Method::HEAD => {
            let path = req.uri().path();
            match state.store.get_generation(path) {
                Err(_) => status_response(StatusCode::INTERNAL_SERVER_ERROR),
                Ok(Some((body, generation))) => {
                    let mut resp = respond(StatusCode::OK, ResponseBody::bytes(body));
                    resp.extensions_mut().insert(Generation(generation));
                    resp
                }
                Ok(None) if path == "/" => respond(StatusCode::OK, ResponseBody::text("ok\n")),
                Ok(None) => status_response(StatusCode::NOT_FOUND),
            }
        }
        Method::PUT => store_put(state, req, StatusCode::CREATED).await,
        Method::POST => store_put(state, req, StatusCode::OK).await,
        Method::DELETE => match state.store.delete(req.uri().path()) {
            Ok(true) => respond(StatusCode::NO_CONTENT, ResponseBody::empty()),
            Ok(false) => status_response(StatusCode::NOT_FOUND),
            Err(_) => status_response(StatusCode::INTERNAL_SERVER_ERROR),
        },
        _ => method_not_allowed("GET, HEAD, PUT, POST, DELETE"),
    }
}

async fn store_put<B: RequestBody>(state: &ServerState, req: Request<B>, ok: StatusCode) -> Response<ResponseBody> {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, STORE_CAP).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<LengthLimitError>() => return status_response(StatusCode::INSUFFICIENT_STORAGE),
        Err(_) => return bad_request("the request body could not be read\n"),
    };
    match state.store.put(parts.uri.path(), body) {
        Ok(()) => respond(ok, ResponseBody::empty()),
        Err(crate::store::PutError::Full) => status_response(StatusCode::INSUFFICIENT_STORAGE),
        Err(crate::store::PutError::Io(e)) => respond(
            StatusCode::INTERNAL_SERVER_ERROR,
            ResponseBody::bytes(Bytes::from(format!("the store failed: {e}\n"))),
        ),
    }
}

/// Parses a multipart/form-data body and answers, as JSON, each part's name, file name,
/// content type, length and CRC-32, so a client can check what arrived intact. The answer
/// is also kept at [`MULTIPART_LAST`].
async fn multipart_route<B: RequestBody>(state: &ServerState, req: Request<B>) -> Response<ResponseBody> {
    let mut parts = match multipart_form(req, STORE_CAP as u64) {
        Ok(parts) => parts,
        Err(refusal) => return refusal.into(),
    };
    let mut out = Vec::new();
    loop {
        match parts.next_field().await {
            Ok(Some(field)) => {
                let (name, file, ctype) = (
                    field.name().map(str::to_string),
                    field.file_name().map(str::to_string),
                    field.content_type().map(|m| m.to_string()),
                );
                let Ok(data) = field.bytes().await else { return bad_request("a part could not be read\n") };
                out.push(serde_json::json!({
                    "name": name, "filename": file, "content_type": ctype,
                    "len": data.len(), "crc32": crc32fast::hash(&data),
                }));
            }
            Ok(None) => break,
            Err(e) => return form_error(e).into(),
        }
    }
    let json = Bytes::from(serde_json::Value::Array(out).to_string());
    let _ = state.store.put(MULTIPART_LAST, json.clone());
    let mut resp = respond(StatusCode::OK, ResponseBody::bytes(json));
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// A request refused: its status and a one-line reason (small, unlike a response, so it
/// travels in a `Result` cheaply).
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) why: Cow<'static, str>,
}

impl From<Refusal> for Response<ResponseBody> {
    fn from(r: Refusal) -> Self {
        let body = match r.why {
            Cow::Borrowed(why) => ResponseBody::text(why),
            Cow::Owned(why) => ResponseBody::bytes(Bytes::from(why)),
        };
        respond(r.status, body)
    }
}

/// A request's multipart/form-data body as parts read as they arrive (an upload is never
/// held whole), at most `max_body` bytes in all: a larger declared length is refused at
/// once, a longer body fails the read with [`multer::Error::StreamSizeExceeded`].
pub(crate) fn multipart_form<B: RequestBody>(
    req: Request<B>,
    max_body: u64,
) -> Result<multer::Multipart<'static>, Refusal> {
    let headers = req.headers();
    let Some(boundary) =
        headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).and_then(|ct| multer::parse_boundary(ct).ok())
    else {
        let why = "expected Content-Type: multipart/form-data; boundary=...\n";
        return Err(Refusal { status: StatusCode::BAD_REQUEST, why: why.into() });
    };
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max_body) {
        return Err(body_too_large(max_body));
    }
    let limit = multer::Constraints::new().size_limit(multer::SizeLimit::new().whole_stream(max_body));
    Ok(multer::Multipart::with_constraints(req.into_body().into_data_stream(), boundary, limit))
}

/// Why a multipart body could not be parsed: 413 when it was too long, else 400 with the
/// parser's reason.
pub(crate) fn form_error(e: multer::Error) -> Refusal {
    match e {
        multer::Error::StreamSizeExceeded { limit } => body_too_large(limit),
        e => Refusal { status: StatusCode::BAD_REQUEST, why: format!("not valid multipart/form-data: {e}\n").into() },
    }
}

fn body_too_large(limit: u64) -> Refusal {
    Refusal {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        why: format!("the request body is over {} MiB\n", limit >> 20).into(),
    }
}

fn stats(state: &ServerState, method: &Method) -> Response<ResponseBody> {
    if !matches!(*method, Method::GET | Method::HEAD) {
        return method_not_allowed("GET, HEAD");
    }
    let mut resp = respond(StatusCode::OK, ResponseBody::bytes(Bytes::from(state.stats_json())));
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if *method == Method::HEAD {
        strip_body(&mut resp);
    }
    resp
}

#[cfg(test)]
mod range_tests {
    use super::byte_range;

    #[test]
    fn byte_ranges() {
        let table = [
            ("0-99", Some((0, 99))),
            ("100-", Some((100, 999))),
            ("-100", Some((900, 999))),
            ("990-2000", Some((990, 999))),
            ("1000-", None),
            ("5-2", None),
            ("x-1", None),
            ("-0", None),
        ];
        for (spec, want) in table {
            assert_eq!(byte_range(spec, 1000), want, "{spec}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_sized_by_their_id_alone_and_their_bodies_have_that_size() {
        let state = ServerState::new(&ServeConfig::default()).unwrap();
        let sizes: SizeDist = "lognormal:4k,1.0".parse().unwrap();
        let none = HeaderMap::new();
        let lens = || -> Vec<u64> {
            (0..200).map(|i| object_route(&state, &sizes, &i.to_string(), &none).body().len()).collect()
        };
        let first = lens();
        // Again, as another origin or a later request would: the same sizes.
        assert_eq!(lens(), first);
        let mut distinct = first.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 150, "sizes vary by id: {} distinct", distinct.len());
        let mean = first.iter().sum::<u64>() as f64 / first.len() as f64;
        // A log-normal of median 4 KiB and sigma 1 has a mean of 4096·e^0.5 ≈ 6.7 KiB.
        assert!((4500.0..9500.0).contains(&mean), "mean {mean}");
        let resp = object_route(&state, &sizes, "7", &none);
        let etag = resp.headers()[ETAG].to_str().unwrap().to_string();
        assert!(etag.ends_with(&format!("-{:x}\"", first[7])), "{etag}");
    }

    #[test]
    fn fnv1a_is_stable() {
        // Published FNV-1a 64-bit test vectors: ids must hash the same forever.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn reset_reasons_by_name_or_number() {
        use h2::Reason;
        let table = [
            ("cancel", Some(Reason::CANCEL)),
            ("REFUSED_STREAM", Some(Reason::REFUSED_STREAM)),
            ("refused-stream", Some(Reason::REFUSED_STREAM)),
            ("11", Some(Reason::ENHANCE_YOUR_CALM)),
            ("1", Some(Reason::PROTOCOL_ERROR)),
            ("nope", None),
            ("", None),
        ];
        for (text, reason) in table {
            assert_eq!(reset_reason(text), reason, "{text}");
        }
    }

    #[test]
    fn routes_by_prefix() {
        assert!(matches!(classify("/bytes/1k"), Route::Bytes("1k")));
        assert!(matches!(classify("/delay/5"), Route::Delay("5")));
        assert!(matches!(classify("/status/503"), Route::Status("503")));
        assert!(matches!(classify("/obj/7"), Route::Object("7")));
        assert!(matches!(classify("/bytes"), Route::Store));
        assert!(matches!(classify("/albums"), Route::Albums));
        assert!(matches!(classify("/albums/..%2Fx"), Route::Album("..%2Fx")));
        assert!(matches!(classify("/albums/"), Route::Album("")));
        assert!(matches!(classify("/albumsx"), Route::Store));
        assert!(matches!(classify("/"), Route::Store));
    }

    #[test]
    fn status_codes() {
        let table = [
            ("503", StatusCode::SERVICE_UNAVAILABLE),
            ("200", StatusCode::OK),
            ("599", StatusCode::from_u16(599).unwrap()),
            ("100", StatusCode::BAD_REQUEST),
            ("600", StatusCode::BAD_REQUEST),
            ("abc", StatusCode::BAD_REQUEST),
        ];
        for (code, want) in table {
            assert_eq!(status_route(code).status(), want, "{code}");
        }
        assert_eq!(status_route("204").body().len(), 0);
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes_route("1k").body().len(), 1024);
        assert_eq!(bytes_route("1g").body().len(), 1 << 30);
        assert_eq!(bytes_route("2g").status(), StatusCode::BAD_REQUEST);
        assert_eq!(bytes_route("lots").status(), StatusCode::BAD_REQUEST);
    }
}
