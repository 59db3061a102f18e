//! [`Plan`]: a validated description of a run. The CLI builds it from flags; the engine
//! never sees clap types.

use crate::cache::ResponseRules;
use crate::pacer::Pacer;
use crate::pick::Pick;
use crate::protocol::Protocol;
use bytes::Bytes;
use http::{HeaderMap, Method, Uri};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// One request to send.
#[derive(Clone, Debug)]
pub struct Target {
    /// Method.
    pub method: Method,
    /// Absolute URL (`http` or `https`); for a template, with `{id}` replaced by `0`.
    pub url: Uri,
    /// Extra headers (Host is derived from the URL unless given here).
    pub headers: Headers,
    /// Body, shared by every request (cloning `Bytes` is a reference count).
    pub body: Bytes,
    /// `--body-unique`: each request sends this many bytes of `body` from a different offset.
    pub body_unique_len: Option<usize>,
    /// Name for per-request breakdowns (`# name:` in a target file), shared by the targets
    /// of one name.
    pub name: Option<Arc<str>>,
    /// For a URL template such as `http://host/obj/{id}`: the path-and-query around `{id}`
    /// (boxed: a list of a million targets holds few templates).
    pub id_template: Option<Box<IdTemplate>>,
}

/// The path-and-query of a URL template, split around `{id}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdTemplate {
    /// Before `{id}`, e.g. `/obj/`.
    pub prefix: String,
    /// After `{id}`, e.g. `?v=1`.
    pub suffix: String,
}

/// The placeholder of a URL template.
pub const ID: &str = "{id}";

impl Target {
    /// A target for `url`, validated: `http` or `https` with a host. `{id}` may stand once in
    /// the path or query, making a template whose ids are filled per request.
    pub fn new(method: Method, url: &str) -> Result<Target, String> {
        let bad = |why: &str| format!("invalid URL '{url}': {why}; expected http://host[:port]/path or https://...");
        let id_template = match url.find(ID) {
            None => None,
            Some(at) => {
                let scheme_end = url.find("://").map_or(0, |i| i + 3);
                let path_start = url[scheme_end..].find(['/', '?']).map(|i| i + scheme_end).filter(|p| *p <= at);
                let Some(path_start) = path_start else { return Err(bad("{id} may only stand in the path or query")) };
                let (prefix, suffix) = (&url[path_start..at], &url[at + ID.len()..]);
                if suffix.contains(ID) {
                    return Err(bad("{id} may stand only once"));
                }
                Some(Box::new(IdTemplate { prefix: prefix.to_string(), suffix: suffix.to_string() }))
            }
        };
        let parsed = match id_template {
            Some(_) => url.replacen(ID, "0", 1).parse::<Uri>(),
            None => url.parse(),
        };
        let parsed = parsed.map_err(|_| bad("not a URL"))?;
        if !matches!(parsed.scheme_str(), Some("http" | "https")) {
            return Err(bad("the scheme must be http or https"));
        }
        if parsed.host().is_none_or(str::is_empty) {
            return Err(bad("no host"));
        }
        // The http crate keeps a port it cannot read (`:99999`) and reports none, which
        // would send to port 80.
        if let Some(port) = port_text(parsed.authority().map_or("", |a| a.as_str())) {
            if !port.parse::<u16>().is_ok_and(|p| p > 0) {
                return Err(bad(&format!("port {port} is not in 1..=65535")));
            }
        }
        Ok(Target {
            method,
            url: parsed,
            headers: Headers::default(),
            body: Bytes::new(),
            body_unique_len: None,
            name: None,
            id_template,
        })
    }
}

impl Target {
    /// A key-value run's target: the command `name` (`SET`, `GET`, `HSET`) to the server at
    /// `url` (`redis://`, `rediss://`, `memcache://`; checked by [`crate::kv::KvServer::parse`]).
    /// What it sends is the plan's [`crate::kv::KvPlan`]'s; the target carries the name and
    /// method its figures go under.
    pub fn kv(name: &str, url: &str) -> Result<Target, String> {
        let method = Method::from_bytes(name.as_bytes()).map_err(|_| format!("invalid command name '{name}'"))?;
        let server = crate::kv::KvServer::parse(url)?;
        let host = if server.host.contains(':') { format!("[{}]", server.host) } else { server.host.clone() };
        let scheme = url.split_once("://").map_or("redis", |(s, _)| s);
        // The user and password stay in the URL as given: every output redacts them.
        let user_info = url.split_once("://").and_then(|(_, rest)| rest.split('/').next()?.rsplit_once('@'));
        let auth = match user_info {
            Some((info, _)) => format!("{info}@{host}:{}", server.port),
            None => format!("{host}:{}", server.port),
        };
        let url: Uri = format!("{scheme}://{auth}/").parse().map_err(|_| format!("invalid server '{url}'"))?;
        Ok(Target {
            method,
            url,
            headers: Headers::default(),
            body: Bytes::new(),
            body_unique_len: None,
            name: Some(name.into()),
            id_template: None,
        })
    }

    /// The URL as the user wrote it: a template shows `{id}` again.
    pub fn url_text(&self) -> String {
        match (&self.id_template, self.url.scheme_str(), self.url.authority()) {
            (Some(tpl), Some(scheme), Some(auth)) => format!("{scheme}://{auth}{}{ID}{}", tpl.prefix, tpl.suffix),
            _ => self.url.to_string(),
        }
    }

    /// The target as reports list it: its URL as written, after its method unless that is
    /// GET, as a target file writes it (`PUT http://h/obj/{id}`), so a PUT and a GET of one
    /// URL are two lines.
    pub fn listed(&self) -> String {
        match self.method {
            Method::GET => self.url_text(),
            ref m => format!("{m} {}", self.url_text()),
        }
    }
}

/// A target's extra headers, shared: the targets of a list given the same headers (`-H`, a
/// target file's lines) hold one map, not a map each (a million targets took 660 bytes
/// each for one header), and no headers take no allocation at all. Changing a target's
/// headers changes its own: a shared map is copied first.
#[derive(Clone, Debug, Default)]
pub struct Headers(Option<Arc<HeaderMap>>);

impl Headers {
    /// Whether `self` and `other` are one map, shared (or both none).
    pub fn same(&self, other: &Headers) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

impl Deref for Headers {
    type Target = HeaderMap;
    fn deref(&self) -> &HeaderMap {
        static NONE: std::sync::LazyLock<HeaderMap> = std::sync::LazyLock::new(HeaderMap::new);
        self.0.as_deref().unwrap_or(&NONE)
    }
}

impl DerefMut for Headers {
    fn deref_mut(&mut self) -> &mut HeaderMap {
        Arc::make_mut(self.0.get_or_insert_with(Default::default))
    }
}

impl From<HeaderMap> for Headers {
    fn from(map: HeaderMap) -> Headers {
        Headers((!map.is_empty()).then(|| Arc::new(map)))
    }
}

/// A plan's targets, shared: cloning a plan (each run of a study, the engine's own) copies
/// none of them, and a study of a million targets holds them once. Changing a plan's
/// targets changes its own: shared ones are copied first.
#[derive(Clone, Debug, Default)]
pub struct Targets(Arc<Vec<Target>>);

impl Deref for Targets {
    type Target = Vec<Target>;
    fn deref(&self) -> &Vec<Target> {
        &self.0
    }
}

impl DerefMut for Targets {
    fn deref_mut(&mut self) -> &mut Vec<Target> {
        Arc::make_mut(&mut self.0)
    }
}

impl From<Vec<Target>> for Targets {
    fn from(targets: Vec<Target>) -> Targets {
        Targets(Arc::new(targets))
    }
}

impl<'a> IntoIterator for &'a Targets {
    type Item = &'a Target;
    type IntoIter = std::slice::Iter<'a, Target>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut Targets {
    type Item = &'a mut Target;
    type IntoIter = std::slice::IterMut<'a, Target>;
    fn into_iter(self) -> Self::IntoIter {
        Arc::make_mut(&mut self.0).iter_mut()
    }
}

/// The port of a URL's authority as written (`host:PORT`, `[::1]:PORT`, after any
/// user-info), if one is written.
fn port_text(authority: &str) -> Option<&str> {
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let after_host = match host_port.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or("", |(_, after)| after),
        None => host_port.find(':').map_or("", |at| &host_port[at..]),
    };
    after_host.strip_prefix(':').filter(|p| !p.is_empty())
}

/// How load is generated.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// Requests start on a schedule, whatever the server does.
    Open {
        /// The schedule.
        pacer: Pacer,
        /// Most requests outstanding at once; a request due when all are busy is late.
        max_in_flight: usize,
    },
    /// Each worker sends its next request when the last one finished.
    Closed {
        /// Workers.
        concurrency: usize,
        /// Pause between a response and the worker's next request.
        think_time: Duration,
    },
}

/// TLS settings.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Trust only these CA certificates (PEM) instead of the system roots.
    pub cacert: Option<PathBuf>,
    /// Do not verify certificates.
    pub insecure: bool,
}

/// Everything the engine needs for a run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Requests, sent round-robin.
    pub targets: Targets,
    /// Open or closed loop.
    pub load: Load,
    /// Stop sending after this long.
    pub duration: Option<Duration>,
    /// Stop after this many requests.
    pub requests: Option<u64>,
    /// How the run speaks to its targets, and what each connection carries.
    pub protocol: Protocol,
    /// TLS settings.
    pub tls: TlsOptions,
    /// `--resolve host:port:addr` overrides, keyed by (host, port).
    pub resolve: HashMap<(String, u16), SocketAddr>,
    /// `--bind ADDR`: the local address every connection is made from (a multi-homed load
    /// machine's interface, or one loopback address per load generator); the system's
    /// choice when `None`.
    pub bind: Option<std::net::IpAddr>,
    /// Bound on one request, from its start to its last byte (connecting included).
    pub timeout: Duration,
    /// Bound on DNS + TCP connect + TLS handshake.
    pub connect_timeout: Duration,
    /// Engine threads; 0 = one per CPU the process may run on.
    pub threads: usize,
    /// `--rate-cap`: a closed loop's cap, in requests a second over all its workers, spread
    /// evenly: each worker starts a request at most once every `workers / rate` seconds,
    /// and one that fell behind does not catch up in a burst. `None`: as fast as answers
    /// come.
    pub rate_cap: Option<f64>,
    /// `--send-precision`: an open loop's send window, how late a request may go out so
    /// that several go per wake-up; `None`: the engine's default (0.5 ms).
    pub send_precision: Option<Duration>,
    /// How the next target is chosen.
    pub pick: Pick,
    /// Wisconsin Proxy Benchmark stream: this fraction of requests repeats a target the same
    /// client requested before, the rest go to new ones (overrides `pick`).
    pub hit_ratio: Option<f64>,
    /// Size of a URL template's id space (`--objects`): ids `0..objects`.
    pub objects: Option<u64>,
    /// Seed of the run's request stream (see [`crate::Picker`]).
    pub seed: u64,
    /// Where its new objects come from within its study, and which part of its stream
    /// (`--phases`) it is.
    pub stream: crate::pick::Stream,
    /// `--shard i/N`: which part of the run this process sends.
    pub shard: Shard,
    /// How each response's cache status and backend are read from its headers.
    pub responses: ResponseRules,
    /// Retries of failed requests; `None` sends each request once.
    pub retry: Option<crate::retry::RetryPolicy>,
    /// Flows run by groups (`--scenario`): each step's request is one of `targets`, and the
    /// groups' loads replace `load`, which then only sums them up (see
    /// [`crate::scenario::overall_load`]).
    pub scenario: Option<std::sync::Arc<crate::flow::Scenario>>,
    /// `--trace-context`: every HTTP request carries a W3C `traceparent` derived from the
    /// run and its number; `None` sends none (and costs nothing).
    pub trace: Option<TraceSpec>,
}

/// `--trace-context` and `--trace-sample`: which requests' `traceparent` says sampled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceSpec {
    /// The share of requests marked sampled, 0 < sample ≤ 1.
    pub sample: f64,
}

impl TraceSpec {
    /// The bytes the two headers add to each request of a run that speaks `protocol`:
    /// HTTP/1.1's two lines (`traceparent: ` and its 55 bytes and CRLF: 70), or HTTP/2's two
    /// HPACK literals without indexing, each a byte of type, its name's length and name,
    /// its value's length and value, no Huffman coding (HTTP/3's QPACK literals are counted
    /// alike). The engine's encoders are tested to add exactly this.
    pub fn header_bytes(&self, protocol: &Protocol) -> u64 {
        let state = barrage_metrics::trace::Sampling::new(self.sample)
            .map_or(0, |s| "barrage=,ot=th:".len() + 16 + s.threshold_hex().len());
        let parent = barrage_metrics::trace::TRACEPARENT_LEN;
        let bytes = match protocol {
            Protocol::Http1 { .. } => ("traceparent: \r\n".len() + parent) + ("tracestate: \r\n".len() + state),
            _ => (3 + "traceparent".len() + parent) + (3 + "tracestate".len() + state),
        };
        bytes as u64
    }
}

/// `--shard i/N`: this process sends part `index` (from 0) of `count` of one run's plan.
///
/// Open loop: arrival k of the whole run's schedule is this shard's when k ≡ index (mod
/// count), sent at its intended time in the whole run; closed loop: the shard has its
/// [`Shard::share`] of the workers (and of `-n`). Since what request k asks for depends on
/// the seed and k alone ([`crate::Picker`]), the shards together send the unsplit run.
/// A closed loop's `-n` goes by workers, not shards: each worker of the whole loop sends
/// its own share ([`Plan::worker_lanes`], [`requests_of`]), so a shard's part is its
/// workers' (4, 3 and 3 of 10 workers send 400, 300 and 300 of 1,000).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, in `0..count`.
    pub index: u32,
    /// How many shards the run is split into.
    pub count: u32,
}

/// Most shards a run can be split into.
pub const MAX_SHARDS: u32 = 10_000;

impl Shard {
    /// The whole run, unsplit.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// This shard's part of `n` workers, connections or requests: an equal split, the
    /// remainder one each to the first shards (largest remainder), so the parts sum to `n`.
    pub fn share(&self, n: u64) -> u64 {
        let part = split(n, u64::from(self.index), u64::from(self.count));
        part.end - part.start
    }

    /// Whether the run is split at all.
    pub fn is_split(&self) -> bool {
        self.count > 1
    }
}

/// Part `index` of `count` of `n` things (the first `n % count` parts one larger), as the
/// range of them it takes: the parts lie side by side in order.
pub fn split(n: u64, index: u64, count: u64) -> std::ops::Range<u64> {
    let count = count.max(1);
    let (each, extra) = (n / count, n % count);
    let start = index * each + index.min(extra);
    start..start + each + u64::from(index < extra)
}

/// The requests of `n` that the closed-loop workers `lanes` of `all` send: each worker its
/// own share of `n`, worker w `n / all`, one more when w < `n % all`. So the parts of any
/// split of the workers (shards, engine threads) sum to `n`, each in proportion to its
/// workers, and worker w's requests are the numbers w, w + all, w + 2·all, … below `n`.
pub fn requests_of(n: u64, lanes: std::ops::Range<u64>, all: u64) -> u64 {
    let all = all.max(1);
    let m = lanes.end.saturating_sub(lanes.start);
    m * (n / all) + (n % all).saturating_sub(lanes.start).min(m)
}

/// The request number that turn `turn` of the workers `lanes` of `all` takes: lane `turn
/// mod m` of their `m`, round `turn / m` (lane w's numbers are w, w + all, w + 2·all, …).
/// With `-n`, the [`requests_of`] turns take exactly the numbers of the lanes below `n`:
/// the lower lanes, which take one more, come first in every round.
pub fn lane_number(lanes: &std::ops::Range<u64>, all: u64, turn: u64) -> u64 {
    let m = lanes.end.saturating_sub(lanes.start).max(1);
    lanes.start + turn % m + turn / m * all
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = |why: &str| format!("invalid --shard '{s}': {why}; expected I/N with 0 ≤ I < N, e.g. 0/3");
        let (i, n) = s.split_once('/').ok_or_else(|| bad("no '/'"))?;
        let index: u32 = i.trim().parse().map_err(|_| bad("I is not a whole number"))?;
        let count: u32 = n.trim().parse().map_err(|_| bad("N is not a whole number"))?;
        if count == 0 || count > MAX_SHARDS {
            return Err(bad(&format!("N must be 1 to {MAX_SHARDS}")));
        }
        if index >= count {
            return Err(bad("I counts from 0, so it must be below N"));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Headers that name the backend, tried in order when `--backend-header` is not given.
pub const DEFAULT_BACKEND_HEADERS: [&str; 5] =
    ["x-served-by", "x-backend", "x-upstream-address", "x-upstream", "server"];

/// [`DEFAULT_BACKEND_HEADERS`] as header names.
pub fn default_backend_headers() -> Vec<http::HeaderName> {
    DEFAULT_BACKEND_HEADERS.iter().map(|h| http::HeaderName::from_static(h)).collect()
}

/// The open loop's send window when `--send-precision` is not given (the engine's
/// `PRECISION`): given as such, it is taken as not given, so a plan's digest is one.
pub const DEFAULT_SEND_PRECISION: Duration = Duration::from_micros(500);
/// The narrowest `--send-precision`: a wake-up per request that is due.
pub const MIN_SEND_PRECISION: Duration = Duration::from_micros(1);
/// The widest: well within the schedule lag the report warns of (5 ms), so that the warning
/// still means the generator fell behind, not that it was asked to batch.
pub const MAX_SEND_PRECISION: Duration = Duration::from_millis(2);

impl Plan {
    /// A plan for `targets` under `load` with the defaults of `barrage run`: no duration or
    /// count (set one), keep-alive HTTP/1.1, 30 s timeout, 10 s connect timeout, one thread
    /// per CPU, round robin with seed 1, built-in cache and backend rules, no retries.
    pub fn new(targets: Vec<Target>, load: Load) -> Plan {
        Plan {
            targets: targets.into(),
            load,
            duration: None,
            requests: None,
            protocol: Protocol::default(),
            tls: TlsOptions::default(),
            resolve: HashMap::new(),
            bind: None,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            threads: 0,
            rate_cap: None,
            send_precision: None,
            pick: Pick::RoundRobin,
            hit_ratio: None,
            objects: None,
            seed: 1,
            stream: crate::pick::Stream::default(),
            shard: Shard::WHOLE,
            responses: ResponseRules::default(),
            retry: None,
            scenario: None,
            trace: None,
        }
    }

    /// A closed loop's workers that engine thread `thread` of `threads` of this shard runs,
    /// as their places among the whole loop's workers (every shard's, [`Plan::clients`] of
    /// them): the shard's connections ([`Shard::share`], side by side in shard order), the
    /// thread's of those, each carrying its streams' (or pipeline's) workers.
    pub fn worker_lanes(&self, thread: usize, threads: usize) -> std::ops::Range<u64> {
        let Load::Closed { concurrency, .. } = &self.load else { return 0..0 };
        let per_connection = self.clients() / (*concurrency as u64).max(1);
        let shard = split(*concurrency as u64, u64::from(self.shard.index), u64::from(self.shard.count));
        let mine = split(shard.end - shard.start, thread as u64, threads as u64);
        (shard.start + mine.start) * per_connection..(shard.start + mine.end) * per_connection
    }

    /// A closed loop's requests due by `-n` from this shard: its workers' part ([`requests_of`]);
    /// `None` for an open loop or a run that ends by time.
    pub fn closed_requests_due(&self) -> Option<u64> {
        let n = self.requests?;
        let Load::Closed { concurrency, .. } = &self.load else { return None };
        let per_connection = self.clients() / (*concurrency as u64).max(1);
        let shard = split(*concurrency as u64, u64::from(self.shard.index), u64::from(self.shard.count));
        Some(requests_of(n, shard.start * per_connection..shard.end * per_connection, self.clients()))
    }

    /// The threads the engine will run.
    pub fn thread_count(&self) -> usize {
        engine_threads(self.threads, self.shard.share(self.connections() as u64) as usize)
    }

    /// The connections the load keeps (at most), as its protocol carries requests
    /// ([`Protocol::connections`]).
    pub fn connections(&self) -> usize {
        self.protocol.connections(&self.load)
    }

    /// This plan as run `index` of its study (its draws and its new objects its own; the
    /// study's seed is the plan's), in phase `i` of `phases`: a measure (a phase after the
    /// first) asks for what its fill sent, `warmed` requests, for as many requests or its
    /// own length.
    pub fn in_study(&mut self, index: u64, phases: &[crate::phases::PhaseSpec], i: usize, warmed: u64) {
        let part = crate::phases::PhaseSpec::part(i, phases.len(), warmed);
        self.stream = crate::pick::Stream { index, part };
        if let crate::pick::Part::Measure { .. } = part {
            match phases[i].length {
                Some(length) => (self.duration, self.requests) = (Some(length), None),
                // A fill that sent nothing leaves its measure one request, which misses.
                None => (self.duration, self.requests) = (None, Some(warmed.max(1))),
            }
        }
    }

    /// The seed of this run's draws (picks, value sizes, flows' choices): the plan's own for
    /// a lone run, mixed with its index in a study ([`crate::pick::Stream::seed`]).
    pub fn draw_seed(&self) -> u64 {
        self.stream.seed(self.seed)
    }

    /// The load's clients, over the whole run (every shard), as a hit-ratio stream's repeats
    /// step past them ([`crate::Picker`]). Closed loop: its workers (`-c` × `--streams`, or
    /// × `--pipeline`), each with one request in flight; open loop: a second of arrivals at
    /// the highest rate (a request older than that has finished unless the server takes
    /// seconds). Never the in-flight bound, which a shard may set for itself: the shards of
    /// a split run must draw one stream.
    pub fn clients(&self) -> u64 {
        let per_connection = self.protocol.per_connection() as u64;
        match &self.load {
            Load::Closed { concurrency, .. } => (*concurrency as u64).saturating_mul(per_connection).max(1),
            Load::Open { pacer, .. } => pacer.peak_rate().ceil().clamp(1.0, u64::MAX as f64) as u64,
        }
    }

    /// How many targets picks choose from: the ids of `--objects` when a target is a
    /// template, or the target list.
    pub fn pick_space(&self) -> u64 {
        match self.objects {
            Some(n) if self.templated() => n,
            _ => self.targets.len() as u64,
        }
    }

    /// Whether a target holds `{id}`: picks then choose ids, and the targets go round robin
    /// (a target file's `PUT /obj/{id}` and `GET /obj/{id}` each get an id of their own).
    pub fn templated(&self) -> bool {
        self.protocol.kv().is_some() || self.targets.iter().any(|t| t.id_template.is_some())
    }

    /// How a request becomes (target, id): `turn` is its place in its client's round of
    /// targets, `draw` its pick. Made once per client, not asked per request:
    /// [`Plan::templated`] reads every target.
    ///
    /// The targets go round by turns, not by the request's number: an open loop's turn is
    /// its arrival's number, so the round is exact over the run; a closed loop's worker (or
    /// key-value lane) counts its own turns, so it runs the whole round itself (memtier's
    /// way). Rounds by number left each worker of a closed loop with the same few targets
    /// (the numbers of a thread's lane step by the threads: with two, one worker sent only
    /// SETs and another only GETs, and the mix followed whichever was faster).
    pub fn request_of(&self) -> impl Fn(u64, u64) -> (u64, u64) + Copy {
        let (templated, targets) = (self.templated(), self.targets.len() as u64);
        let rounds = self.round() > 1;
        move |turn, draw| match (templated, rounds) {
            (true, _) => (turn % targets, draw),
            (false, true) => (turn % targets, 0),
            (false, false) => (draw, 0),
        }
    }

    /// How many requests make one round of the targets, each target once (a key-value
    /// run's `--ratio` round is one target per command): the targets of a template, or of
    /// a round-robin pick, go in rounds; 1 when each request's target is drawn on its own.
    pub fn round(&self) -> u64 {
        let rounds = self.templated() || (self.pick == Pick::RoundRobin && self.hit_ratio.is_none());
        if rounds {
            self.targets.len().max(1) as u64
        } else {
            1
        }
    }

    /// Checks what the types cannot: a template needs `--objects`, a Gaussian pick's median
    /// lies among the ids it picks from.
    pub fn validate(&self) -> Result<(), String> {
        // First, before any check returns early, so that every kind of plan is held to it;
        // a template without its id count is refused below, not measured against 1 id.
        if self.objects.is_some() || !self.templated() {
            self.pick.check_space(self.pick_space())?;
        }
        if self.targets.is_empty() {
            return Err("no targets".into());
        }
        self.validate_rate_cap()?;
        self.validate_send_precision()?;
        if let Some(trace) = self.trace {
            if !(trace.sample > 0.0 && trace.sample <= 1.0) {
                return Err(format!("--trace-sample {}: a share above 0 and at most 1", trace.sample));
            }
        }
        if let Protocol::Kv(kv) = &self.protocol {
            if self.trace.is_some() {
                // Key-value commands have no headers to carry a traceparent in.
                return Err("--trace-context puts a traceparent header on HTTP requests; redis:// and memcache:// commands have no headers".into());
            }
            return self.validate_kv(kv);
        }
        self.protocol.validate(&self.load, &self.targets)?;
        let templates = self.targets.iter().filter(|t| t.id_template.is_some()).count();
        if templates > 0 && self.objects.is_none() {
            return Err("a URL with {id} needs --objects N (ids 0..N)".into());
        }
        if self.objects.is_some() && templates == 0 {
            return Err("--objects needs a URL with {id}, e.g. http://host/obj/{id}".into());
        }
        if self.hit_ratio.is_some() && templates == 0 {
            // Its new objects are numbered for the whole study: ids, not places in a list
            // of URLs (taken as one, such a number was an index far past the targets).
            return Err(
                "--hit-ratio asks for objects by id: it needs a URL with {id} and --objects N, e.g. http://host/obj/{id}"
                    .into(),
            );
        }
        if self.objects == Some(0) {
            return Err("--objects must be at least 1".into());
        }
        if self.stream.index >= crate::pick::MAX_STREAMS {
            return Err(format!(
                "a study of more than {} runs cannot give each its own new objects",
                crate::pick::MAX_STREAMS
            ));
        }
        Ok(())
    }

    /// `--rate-cap` caps the requests of a closed loop's workers: not an open loop's (its
    /// `--rate` is its rate), nor a key-value run's or a scenario's flows.
    fn validate_rate_cap(&self) -> Result<(), String> {
        let Some(rate) = self.rate_cap else { return Ok(()) };
        let flag = format!("--rate-cap {rate}");
        if !(rate.is_finite() && rate > 0.0) {
            return Err(format!("{flag}: a cap must be above 0 requests a second"));
        }
        if matches!(self.load, Load::Open { .. }) {
            return Err(format!("{flag} caps a closed loop (-c); an open loop (--rate) sends at its rate already"));
        }
        if self.protocol.kv().is_some() {
            return Err(format!("{flag} caps HTTP requests; a key-value run has no cap"));
        }
        if self.scenario.is_some() {
            return Err(format!(
                "{flag} caps the requests of URLs and target files; a --scenario's flows pace with think times"
            ));
        }
        if let Protocol::Http2 { rounds: true, .. } = self.protocol {
            return Err(format!("{flag} with --rounds: a capped worker's requests go when it may send, not in rounds"));
        }
        Ok(())
    }

    /// `--send-precision` paces an open loop's sends (a scenario's groups may have rates),
    /// from 1 µs to 2 ms ([`MAX_SEND_PRECISION`]).
    fn validate_send_precision(&self) -> Result<(), String> {
        let Some(p) = self.send_precision else { return Ok(()) };
        // Durations are given in whole microseconds at the finest.
        let flag = format!("--send-precision {}us", p.as_micros());
        if !(MIN_SEND_PRECISION..=MAX_SEND_PRECISION).contains(&p) {
            return Err(format!("{flag}: from 1us to 2000us (2ms)"));
        }
        let open = |l: &Load| matches!(l, Load::Open { .. });
        let any_open = match &self.scenario {
            Some(s) => s.groups.iter().any(|g| open(&g.load)),
            None => open(&self.load),
        };
        if !any_open {
            return Err(format!(
                "{flag} paces an open loop (--rate, or a group's rate); a closed loop's workers send when answered"
            ));
        }
        Ok(())
    }

    /// The pause a closed-loop worker keeps between the starts of its requests under
    /// `--rate-cap` (its share of the cap: workers / rate); `None` without a cap.
    pub fn worker_interval(&self) -> Option<Duration> {
        let rate = self.rate_cap?;
        let Load::Closed { .. } = &self.load else { return None };
        Some(Duration::from_secs_f64(
            (self.clients() as f64 / rate).min(barrage_metrics::limits::MAX_DURATION.as_secs_f64()),
        ))
    }

    /// A key-value plan: its commands match its targets, its key space is given, and it is
    /// not mixed with what only HTTP has.
    fn validate_kv(&self, kv: &crate::kv::KvPlan) -> Result<(), String> {
        kv.validate()?;
        if kv.commands.len() != self.targets.len() {
            return Err("a key-value plan needs one command per target".into());
        }
        if self.objects.is_none_or(|n| n == 0) {
            return Err("a key-value run needs a key space (--key-maximum)".into());
        }
        if self.scenario.is_some() {
            return Err("--scenario runs HTTP flows; Redis and memcached runs take --ratio or --command".into());
        }
        Ok(())
    }

    /// The whole run's intended arrivals second by second: entry `j` is how many are due
    /// before second `j` of the schedule, the last one all of them. An open loop of known
    /// length (`-d`, its steps or `-n`) of at most a week
    /// ([`barrage_metrics::limits::MAX_SCHEDULE_SECONDS`]) has one; any
    /// shard's share follows from it ([`barrage_metrics::coverage::share`]). `None` for a
    /// closed loop, a scenario's groups and a run until stopped.
    pub fn arrival_seconds(&self) -> Option<Vec<u64>> {
        let Load::Open { pacer, .. } = &self.load else { return None };
        if self.scenario.is_some() {
            return None;
        }
        let end = match (self.attack_limit(), self.requests) {
            (Some(limit), _) => limit,
            (None, Some(n)) => pacer.due(n).unwrap_or(Duration::ZERO),
            (None, None) => return None,
        };
        let seconds = end.as_secs_f64().ceil() as u64;
        if seconds > barrage_metrics::limits::MAX_SCHEDULE_SECONDS {
            return None;
        }
        let at = |j: u64| pacer.due_before(Duration::from_secs(j).min(end), self.requests);
        Some((0..=seconds).map(at).collect())
    }

    /// When the attack ends by itself (duration, or the end of a stepped schedule).
    pub fn attack_limit(&self) -> Option<Duration> {
        let natural = match &self.load {
            Load::Open { pacer, .. } => pacer.natural_end(),
            Load::Closed { .. } => None,
        };
        match (self.duration, natural) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The engine threads of a run asking for `threads` (0: one per CPU) over `connections`.
pub fn engine_threads(threads: usize, connections: usize) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let wanted = if threads == 0 { cpus } else { threads };
    // More threads than connections would leave some idle (a connection is never split
    // between threads).
    wanted.clamp(1, connections.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_by_largest_remainder_and_parse() {
        let shares = |n, count| (0..count).map(|index| Shard { index, count }.share(n)).collect::<Vec<_>>();
        assert_eq!(shares(10, 3), [4, 3, 3]);
        assert_eq!(shares(2, 3), [1, 1, 0]);
        assert_eq!(shares(9, 1), [9]);
        for (n, count) in [(1_000_003, 7), (5, 5), (0, 4)] {
            assert_eq!(shares(n, count).iter().sum::<u64>(), n);
        }
        assert_eq!("2/3".parse::<Shard>().unwrap(), Shard { index: 2, count: 3 });
        assert_eq!("0/1".parse::<Shard>().unwrap(), Shard::WHOLE);
        for bad in ["3/3", "1", "-1/3", "a/3", "0/0", "0/10001", "1/x"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.starts_with(&format!("invalid --shard '{bad}'")) && !e.contains('\n'), "{e}");
        }
    }

    /// A closed loop's `-n` over shards and threads: every worker its own share, so each
    /// shard's and thread's part follows its workers (10 workers over 3 shards: 4, 3, 3),
    /// and the numbers all of them take together are 0..n, each once, whatever the split.
    #[test]
    fn a_closed_loops_requests_go_by_workers_and_number_the_stream_once() {
        let mut p = Plan::new(
            vec![Target::new(Method::GET, "http://h/").unwrap()],
            Load::Closed { concurrency: 10, think_time: Duration::ZERO },
        );
        p.requests = Some(1000);
        let due: Vec<u64> = (0..3)
            .map(|index| Plan { shard: Shard { index, count: 3 }, ..p.clone() }.closed_requests_due().unwrap())
            .collect();
        assert_eq!(due, [400, 300, 300]);
        for (concurrency, streams, n, shards, threads) in
            [(10, 1, 1000, 3, 2), (3, 1, 300, 1, 2), (7, 4, 1001, 3, 3), (5, 2, 3, 2, 2), (4, 1, 0, 2, 2)]
        {
            let mut p = Plan::new(
                vec![Target::new(Method::GET, "http://h/").unwrap()],
                Load::Closed { concurrency, think_time: Duration::ZERO },
            );
            (p.requests, p.protocol) =
                (Some(n), if streams > 1 { Protocol::http2(streams) } else { Protocol::default() });
            let all = p.clients();
            let mut numbers = Vec::new();
            for index in 0..shards {
                let shard = Plan { shard: Shard { index, count: shards }, ..p.clone() };
                let mut part = 0;
                for t in 0..threads {
                    let lanes = shard.worker_lanes(t, threads);
                    let quota = requests_of(n, lanes.clone(), all);
                    part += quota;
                    numbers.extend((0..quota).map(|turn| lane_number(&lanes, all, turn)));
                }
                assert_eq!(Some(part), shard.closed_requests_due(), "shard {index} of {concurrency}×{streams}");
            }
            numbers.sort_unstable();
            assert_eq!(numbers, (0..n).collect::<Vec<_>>(), "{concurrency}×{streams} workers, {n} requests");
        }
    }

    #[test]
    fn urls_with_a_port_no_socket_has_are_refused() {
        for ok in
            ["http://h/", "http://h:8080/", "https://u:p@h:443/x", "http://[::1]:1/", "http://[::1]/", "http://h:/"]
        {
            assert!(Target::new(Method::GET, ok).is_ok(), "{ok}");
        }
        for (bad, port) in
            [("http://127.0.0.1:99999/", "99999"), ("http://h:0/", "0"), ("http://[::1]:65536/", "65536")]
        {
            let e = Target::new(Method::GET, bad).unwrap_err();
            assert!(e.contains(&format!("port {port} is not in 1..=65535")), "{bad}: {e}");
        }
    }

    /// What counts as a connection of a plan, and its threads: never more than connections.
    #[test]
    fn connections_carry_streams_and_threads_never_outnumber_them() {
        let open = |m| Load::Open { pacer: crate::Pacer::Constant { rate: 1.0 }, max_in_flight: m };
        let closed = |c| Load::Closed { concurrency: c, think_time: Duration::ZERO };
        let plan = |load, protocol| {
            let mut p = Plan::new(vec![Target::new(Method::GET, "https://h/").unwrap()], load);
            p.protocol = protocol;
            p
        };
        assert_eq!(plan(open(40), Protocol::http2(10)).connections(), 4);
        assert_eq!(plan(open(40), Protocol::http3(10)).connections(), 4);
        assert_eq!(plan(closed(3), Protocol::http3(10)).connections(), 3);
        assert_eq!(plan(closed(3), Protocol::http3(10)).clients(), 30);
        assert_eq!(plan(open(40), Protocol::http2(10)).validate(), Ok(()));
        assert!(plan(open(42), Protocol::http2(4)).validate().unwrap_err().contains("give a multiple of 4"));
        // Threads are never more than connections: one connection, one thread.
        let mut one = plan(open(10), Protocol::http2(10));
        one.threads = 8;
        assert_eq!(one.thread_count(), 1);
    }

    /// `--rate-cap`: each closed-loop worker's share, workers / rate apart (streams count as
    /// workers); refused where it would cap nothing.
    #[test]
    fn a_rate_cap_is_shared_by_the_workers_of_a_closed_loop_alone() {
        let capped = |load: Load, cap: f64, streams: u32| {
            let mut p = Plan::new(vec![Target::new(Method::GET, "http://h/").unwrap()], load);
            p.rate_cap = Some(cap);
            if streams > 1 {
                p.protocol = Protocol::http2(streams);
            }
            p
        };
        let closed = |c| Load::Closed { concurrency: c, think_time: Duration::ZERO };
        for (workers, streams, cap, every_ms) in
            [(1, 1, 50.0, 20), (4, 1, 100.0, 40), (2, 4, 80.0, 100), (1, 1, 0.5, 2000)]
        {
            let p = capped(closed(workers), cap, streams);
            assert_eq!(p.validate(), Ok(()));
            assert_eq!(
                p.worker_interval(),
                Some(Duration::from_millis(every_ms)),
                "-c {workers} × {streams} at {cap}/s"
            );
        }
        assert_eq!(Plan::new(vec![Target::new(Method::GET, "http://h/").unwrap()], closed(1)).worker_interval(), None);
        let open = Load::Open { pacer: Pacer::Constant { rate: 10.0 }, max_in_flight: 4 };
        for (p, want) in [
            (capped(open, 5.0, 1), "caps a closed loop (-c); an open loop (--rate) sends at its rate already"),
            (capped(closed(1), 0.0, 1), "a cap must be above 0"),
            (capped(closed(1), f64::NAN, 1), "a cap must be above 0"),
            (
                {
                    let mut p = capped(closed(1), 5.0, 2);
                    p.protocol = Protocol::Http2 { streams: crate::protocol::Streams::Kept(2), rounds: true };
                    p
                },
                "with --rounds",
            ),
        ] {
            let e = p.validate().unwrap_err();
            assert!(e.starts_with("--rate-cap") && e.contains(want), "{e}");
        }
    }

    /// `--send-precision`: an open loop's window, 1 µs to 2 ms; refused for a closed loop.
    #[test]
    fn a_send_precision_paces_an_open_loop_within_its_bounds() {
        let with = |load: Load, precision: Duration| {
            let mut p = Plan::new(vec![Target::new(Method::GET, "http://h/").unwrap()], load);
            p.send_precision = Some(precision);
            p.validate()
        };
        let open = || Load::Open { pacer: Pacer::Constant { rate: 10.0 }, max_in_flight: 4 };
        let us = Duration::from_micros;
        for fine in [MIN_SEND_PRECISION, us(100), MAX_SEND_PRECISION] {
            assert_eq!(with(open(), fine), Ok(()), "{fine:?}");
        }
        for (load, precision, want) in [
            (open(), Duration::ZERO, "--send-precision 0us: from 1us to 2000us (2ms)"),
            (open(), MAX_SEND_PRECISION + us(1), "--send-precision 2001us: from 1us to 2000us (2ms)"),
            (
                Load::Closed { concurrency: 2, think_time: Duration::ZERO },
                us(100),
                "--send-precision 100us paces an open loop (--rate, or a group's rate)",
            ),
        ] {
            let e = with(load, precision).unwrap_err();
            assert!(e.starts_with(want), "{e}");
        }
    }

    /// A Gaussian median outside the ids is refused, whether the ids are a template's
    /// `--objects` or a URL list; a template without `--objects` gets that error first.
    #[test]
    fn gaussian_median_must_lie_among_the_ids() {
        let closed = Load::Closed { concurrency: 1, think_time: Duration::ZERO };
        let plan = |url: &str, objects, median| {
            let mut p = Plan::new(vec![Target::new(Method::GET, url).unwrap()], closed.clone());
            p.objects = objects;
            p.pick = Pick::Gaussian { stddev: Some(1.0), median: Some(median) };
            p.validate()
        };
        assert_eq!(plan("http://h/obj/{id}", Some(1000), 999.0), Ok(()));
        let err = plan("http://h/obj/{id}", Some(1000), 1000.0).unwrap_err();
        assert_eq!(err, "--pick gauss: the median 1000 lies outside the ids 0..1000");
        assert!(plan("http://h/", None, 1.0).unwrap_err().contains("the median 1 lies outside the ids 0..1"));
        assert!(plan("http://h/obj/{id}", None, 5000.0).unwrap_err().contains("needs --objects"));
    }

    /// Found trying seed 003's study: `--hit-ratio` on URLs without `{id}` drew a new
    /// object's study-wide number as a target's index, and the engine panicked on it.
    #[test]
    fn a_hit_ratio_needs_objects_by_id() {
        let closed = Load::Closed { concurrency: 1, think_time: Duration::ZERO };
        let plan = |url: &str, objects| {
            let mut p = Plan::new(vec![Target::new(Method::GET, url).unwrap()], closed.clone());
            p.objects = objects;
            p.hit_ratio = Some(0.5);
            p.validate()
        };
        assert_eq!(plan("http://h/obj/{id}", Some(1000)), Ok(()));
        let err = plan("http://h/bytes/1k", None).unwrap_err();
        assert!(err.starts_with("--hit-ratio asks for objects by id: it needs a URL with {id}"), "{err}");
    }
}
