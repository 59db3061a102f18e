//! The collector's HTTP side (see [`crate::protocol`]): the shards' clocks, readiness, the
//! start, and their results streams appended to the collector's copies. A thread of its
//! own with a current-thread runtime; each exchange bounded in time and size.

use crate::protocol::{Ack, Adopt, Ready, ShardStatus, Start, Status, MAX_POST_BYTES, READY_BYTES};
use crate::rendezvous::now_us;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The longest one connection may take (a data post of a few MiB on a slow link included).
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a question for the start is held when there is none yet.
const START_WAIT: Duration = Duration::from_secs(1);

/// One stream as received: a shard's, or its takeover's (see [`State::shards`]).
#[derive(Default)]
pub(crate) struct Shard {
    pub bytes: u64,
    pub file: Option<File>,
    pub first_data: Option<Instant>,
    pub last_data: Option<Instant>,
    pub ready: Option<Ready>,
    pub status: ShardStatus,
    /// A lost shard's share this shard is to take over: said in each answer until the
    /// takeover's data come.
    pub adopt: Option<Adopt>,
    /// A takeover's stream: when a survivor was asked to start it.
    pub asked: Option<Instant>,
    /// The token of the process that sends it: another process is refused.
    pub run: Option<String>,
}

/// What the collector knows, shared by the server and the merging loop.
pub(crate) struct State {
    /// N: the shards of the run.
    pub n: u32,
    /// The streams: shard I's at I, its takeover's at N + I.
    pub shards: Vec<Shard>,
    pub dir: PathBuf,
    /// Why the shards must stop, once they must.
    pub stop: Option<String>,
    pub final_intervals: u32,
    /// The budget of a shard's clock offset, and the time from the last ready to the start.
    pub max_offset_us: i64,
    pub lead: Duration,
    /// The copies that hold a run (a whole header), by stream: what the live page shows.
    pub files: Vec<PathBuf>,
    /// Of those, the copies of streams judged lost: ended, without a footer.
    pub lost_files: Vec<PathBuf>,
    /// The run's plan, as the first shard came with it: a shard with another is refused.
    pub plan: Option<Planned>,
    /// The shards refused, and why, for the collector's last word.
    pub refused: Vec<String>,
}

/// The run's plan, as the first shard to come brought it.
pub(crate) struct Planned {
    /// That shard.
    pub shard: u32,
    /// Its plan's digest.
    pub digest: String,
    /// Its results header's settings (empty when not known): what names a difference.
    pub settings: String,
}

pub(crate) struct Shared {
    pub state: Mutex<State>,
    pub start: watch::Sender<Option<Start>>,
    /// The live page, when the collector serves one.
    pub page: Option<crate::page::Page>,
}

/// The most refusals kept for the collector's last word: anyone who reaches its port may post.
const REFUSALS_KEPT: usize = 64;

impl State {
    /// Keeps a refusal for the last word, up to [`REFUSALS_KEPT`] (the same one once).
    pub(crate) fn refuse(&mut self, why: &str) {
        if self.refused.len() < REFUSALS_KEPT && !self.refused.iter().any(|r| r == why) {
            self.refused.push(why.to_string());
        }
    }
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The path of shard `i`'s copy in `dir`.
pub fn shard_file(dir: &std::path::Path, i: u32) -> PathBuf {
    dir.join(format!("shard-{i}.brg"))
}

/// The path of stream `s`'s copy in `dir` (of `n` shards): a shard's, or its takeover's.
pub(crate) fn stream_file(dir: &std::path::Path, s: u32, n: u32) -> PathBuf {
    match s.checked_sub(n) {
        Some(i) => dir.join(format!("shard-{i}.takeover.brg")),
        None => shard_file(dir, s),
    }
}

/// Stream `s` (of `n` shards) for people: `shard 1/3`, or `the takeover of shard 1/3`.
pub(crate) fn stream_name(s: u32, n: u32) -> String {
    match s.checked_sub(n) {
        Some(i) => format!("the takeover of shard {i}/{n}"),
        None => format!("shard {s}/{n}"),
    }
}

/// Accepts connections until `stop` fires.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let http = http1::Builder::new();
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let (http, shared) = (http.clone(), Arc::clone(&shared));
                    tokio::spawn(async move {
                        let service = service_fn(move |req| {
                            let shared = Arc::clone(&shared);
                            async move { Ok::<_, Infallible>(respond(req, &shared).await) }
                        });
                        let _ = tokio::time::timeout(CONNECTION_TIMEOUT, http.serve_connection(TokioIo::new(stream), service)).await;
                    });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            },
        }
    }
}

async fn respond(req: Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    let t2 = now_us();
    let query = Query::of(req.uri().query().unwrap_or(""));
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/v1/clock") => json(StatusCode::OK, &serde_json::json!({ "t2": t2, "t3": now_us() })),
        (&Method::POST, "/v1/ready") => match body(req, READY_BYTES).await {
            Ok(b) => ready(shared, &b),
            Err((status, why)) => error(status, &why),
        },
        (&Method::GET, "/v1/start") => start(shared).await,
        (&Method::POST, "/v1/data") => match (query.shard(shared), body(req, MAX_POST_BYTES).await) {
            (Ok(i), Ok(b)) => {
                // The lock is let go before `data` takes it again.
                // A first post begins with the header, whose settings name what differs.
                let settings = barrage_metrics::file::header_of(&b).map(|h| h.settings_json).unwrap_or_default();
                let comer = Comer { run: &query.run, plan: &query.plan, settings: &settings };
                let admitted = admit(&mut shared.lock(), i, &comer);
                match admitted {
                    Ok(()) => data(shared, i, query.offset, &b),
                    Err((status, why)) => error(status, &why),
                }
            }
            (Err((status, why)), _) | (_, Err((status, why))) => error(status, &why),
        },
        (&Method::GET, "/v1/status") => json(StatusCode::OK, &status(shared)),
        (&Method::GET, "/") => live_page(shared).await,
        _ => error(StatusCode::NOT_FOUND, "not a collector's path (see barrage collect --help)"),
    }
}

/// A request's query: `shard`, `shards`, `offset`, `part`, `run` and `plan`.
#[derive(Default)]
struct Query {
    shard: Option<u32>,
    shards: Option<u32>,
    offset: u64,
    part: u32,
    run: String,
    plan: String,
}

/// The longest token or digest taken from a query (an MD5's hex is 32).
const TOKEN_CHARS: usize = 64;

impl Query {
    fn of(q: &str) -> Query {
        let mut out = Query::default();
        for (k, v) in q.split('&').filter_map(|kv| kv.split_once('=')) {
            match k {
                "shard" => out.shard = v.parse().ok(),
                "shards" => out.shards = v.parse().ok(),
                "offset" => out.offset = v.parse().unwrap_or(u64::MAX),
                "part" => out.part = v.parse().unwrap_or(u32::MAX),
                "run" => out.run = v.chars().take(TOKEN_CHARS).collect(),
                "plan" => out.plan = v.chars().take(TOKEN_CHARS).collect(),
                _ => {}
            }
        }
        out
    }

    /// The stream named (shard I's, or with part 1 its takeover's), checked against the
    /// collector's N; a shard of another split is refused, and kept for the last word.
    fn shard(&self, shared: &Shared) -> Result<u32, Refusal> {
        let mut state = shared.lock();
        let n = state.n;
        match (self.shard, self.shards) {
            (Some(i), Some(of)) if of == n && i < n && self.part <= 1 => Ok(i + self.part * n),
            (Some(i), Some(of)) => {
                let why = not_here(i, of, n);
                state.refuse(&why);
                Err((StatusCode::BAD_REQUEST, why))
            }
            _ => Err((StatusCode::BAD_REQUEST, "give shard=I&shards=N".into())),
        }
    }
}

/// Why shard `i` of `of` is not one of this collector's `n`.
fn not_here(i: u32, of: u32, n: u32) -> String {
    format!("shard {i}/{of} does not belong here: this collector collects {n} shard(s)")
}

/// A request refused: its status and why.
type Refusal = (StatusCode, String);

async fn body(req: Request<Incoming>, limit: usize) -> Result<Bytes, Refusal> {
    match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(_) => Err((StatusCode::PAYLOAD_TOO_LARGE, format!("a body over {limit} bytes, or cut off"))),
    }
}

fn ready(shared: &Shared, body: &[u8]) -> Response<Full<Bytes>> {
    let Ok(r) = serde_json::from_slice::<Ready>(body) else {
        return error(StatusCode::BAD_REQUEST, "not a ready message");
    };
    let mut state = shared.lock();
    let n = state.n;
    if r.shards != n || r.shard >= n {
        let why = not_here(r.shard, r.shards, n);
        state.refuse(&why);
        return error(StatusCode::CONFLICT, &why);
    }
    if shared.start.borrow().is_some() {
        return error(StatusCode::CONFLICT, &format!("shard {}/{n} came after the start was published", r.shard));
    }
    if let Err((status, why)) = admit(&mut state, r.shard, &Comer { run: &r.run, plan: &r.plan, settings: &r.settings })
    {
        return error(status, &why);
    }
    let i = r.shard;
    let shard = &mut state.shards[i as usize];
    shard.status.clock = Some(r.clock);
    shard.ready = Some(r);
    let missing: Vec<String> =
        (0..n).filter(|&j| state.shards[j as usize].ready.is_none()).map(|j| format!("{j}/{n}")).collect();
    if missing.is_empty() {
        let start = decide(&state);
        shared.start.send_replace(Some(start));
    } else {
        // Which shards the start waits for, said as each comes: a rendezvous that cannot
        // complete names the missing.
        eprintln!("barrage collect: shard {i}/{n} is at the rendezvous; waiting for {}", missing.join(", "));
    }
    json(StatusCode::OK, &serde_json::json!({ "ready": true }))
}

/// Who sends a stream, as far as the collector checks it.
struct Comer<'a> {
    /// Its process's token.
    run: &'a str,
    /// Its plan's digest.
    plan: &'a str,
    /// Its results header's settings, when known (empty when not): what names a plan's
    /// difference.
    settings: &'a str,
}

/// Admits stream `i`'s sender, or refuses it: another process already sends that stream
/// (two shards given the same `--shard`, or one started again), or its plan is not the one
/// the first shard came with (the check `barrage report` makes of shards' files). Each
/// refusal is kept for the collector's last word.
fn admit(state: &mut State, i: u32, comer: &Comer) -> Result<(), Refusal> {
    let (run, plan) = (comer.run, comer.plan);
    let n = state.n;
    let name = stream_name(i, n);
    let refused = |state: &mut State, why: String| {
        state.refuse(&why);
        Err((StatusCode::FORBIDDEN, why))
    };
    if state.shards[i as usize].run.as_deref().is_some_and(|r| r != run) {
        let why =
            format!("{name} is already here, sent by another process: two shards were given --shard {}/{n}", i % n);
        return refused(state, why);
    }
    if i < n && !plan.is_empty() {
        match &state.plan {
            Some(first) if first.digest != plan => {
                let differ = barrage_metrics::plan_difference::plan_difference(&first.settings, comer.settings);
                let why = format!(
                    "{name} runs a different plan than shard {}/{n} ({differ}): not a shard of this run",
                    first.shard
                );
                return refused(state, why);
            }
            Some(_) => {}
            None => {
                state.plan = Some(Planned { shard: i, digest: plan.to_string(), settings: comer.settings.to_string() })
            }
        }
    }
    state.shards[i as usize].run.get_or_insert_with(|| run.to_string());
    Ok(())
}

/// Every shard is ready: the start, unless a clock is further off than the budget.
fn decide(state: &State) -> Start {
    let off = state.shards.iter().enumerate().filter_map(|(i, s)| Some((i, s.ready.as_ref()?.clock)));
    if let Some((i, c)) =
        off.filter(|(_, c)| c.offset_us.abs() > state.max_offset_us).max_by_key(|(_, c)| c.offset_us.abs())
    {
        return Start::Abort(format!(
            "shard {i}/{}'s clock is {:.3} ms off the collector's (within {:.3} ms), over --max-clock-offset {:.3} ms",
            state.n,
            c.offset_us as f64 / 1e3,
            c.round_trip_us as f64 / 2e3,
            state.max_offset_us as f64 / 1e3
        ));
    }
    Start::At(now_us() as u64 + state.lead.as_micros() as u64)
}

async fn start(shared: &Shared) -> Response<Full<Bytes>> {
    let mut rx = shared.start.subscribe();
    let _ = tokio::time::timeout(START_WAIT, rx.wait_for(Option::is_some)).await;
    let start = rx.borrow().clone();
    match start {
        Some(s) => json(StatusCode::OK, &s),
        None => {
            Response::builder().status(StatusCode::NO_CONTENT).body(Full::new(Bytes::new())).expect("a valid response")
        }
    }
}

/// Appends stream `i`'s bytes at `offset`, if that is where its copy ends.
fn data(shared: &Shared, i: u32, offset: u64, bytes: &[u8]) -> Response<Full<Bytes>> {
    let mut state = shared.lock();
    let (stop, dir, n) = (state.stop.clone(), state.dir.clone(), state.n);
    if let Some(lost) = i.checked_sub(n) {
        // The takeover has begun: nobody is asked to start it any more.
        state
            .shards
            .iter_mut()
            .filter(|s| s.adopt.as_ref().is_some_and(|a| a.shard == lost))
            .for_each(|s| s.adopt = None);
    }
    let shard = &mut state.shards[i as usize];
    let adopt = shard.adopt.clone();
    if offset != shard.bytes {
        return json(StatusCode::CONFLICT, &Ack { have: shard.bytes, stop, adopt });
    }
    if shard.file.is_none() {
        match barrage_metrics::secrets::create(&stream_file(&dir, i, n), true) {
            Ok(f) => shard.file = Some(f),
            Err(e) => {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("cannot keep {}'s file: {e}", stream_name(i, n)),
                )
            }
        }
    }
    if let Err(e) = shard.file.as_mut().expect("made above").write_all(bytes) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, &format!("cannot keep {}'s file: {e}", stream_name(i, n)));
    }
    shard.bytes += bytes.len() as u64;
    shard.status.bytes = shard.bytes;
    let now = Instant::now();
    shard.first_data.get_or_insert(now);
    shard.last_data = Some(now);
    json(StatusCode::OK, &Ack { have: shard.bytes, stop, adopt })
}

async fn live_page(shared: &Shared) -> Response<Full<Bytes>> {
    let Some(page) = &shared.page else { return error(StatusCode::NOT_FOUND, "this collector serves no page") };
    let (files, lost) = {
        let state = shared.lock();
        (state.files.clone(), state.lost_files.clone())
    };
    page.get(files, lost).await
}

fn status(shared: &Shared) -> Status {
    let state = shared.lock();
    let (shards, takeovers) = state.shards.split_at(state.n as usize);
    let statuses = |s: &[Shard]| s.iter().map(|s| s.status.clone()).collect();
    Status { shards: statuses(shards), takeovers: statuses(takeovers), final_intervals: state.final_intervals }
}

fn json(status: StatusCode, value: &impl serde::Serialize) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(value).expect("our own values encode");
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a valid response")
}

fn error(status: StatusCode, why: &str) -> Response<Full<Bytes>> {
    json(status, &serde_json::json!({ "error": why }))
}
