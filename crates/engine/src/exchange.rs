//! One request on a slot's connection, measured into a [`Sample`]. The hot path: no lock, no
//! channel, no formatting; the recorder is this thread's own.

use crate::conn::{Endpoint, Failure};
use crate::http::{Conn, Filled, Outgoing, Reading, Shared};
use crate::thread::Worker;
use crate::timing::Phases;
use crate::watchdog::{Expired, Watchdog};
use barrage_metrics::recorder::{FlowFailure, SampleKeys};
use barrage_metrics::secrets::Redaction;
use barrage_metrics::{CacheStatus, ErrorKind, Intent, Origin, Outcome, Protocol, Sample};
use barrage_plan::flow::{FlowState, Response, Scenario, Step, Verdict, CHECK_KINDS};
use barrage_plan::{IdTemplate, Plan, Target};
use bytes::Bytes;
use http::header::{HeaderValue, AUTHORIZATION, CONNECTION, HOST};
use http::{HeaderMap, Method, Uri};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A target made ready to send: its HTTP/1.1 head and HTTP/2 header block encoded, the
/// absolute URI for HTTP/3, headers with Host, its endpoint. What it has alike with other
/// targets (its headers, most of its head) it shares with them: a run holds a million.
pub struct Prepared {
    method: Method,
    /// The HTTP/1.1 request head, encoded once.
    h1: crate::http::h1::Template,
    /// The HTTP/2 request header block, encoded once, for a run that speaks HTTP/2.
    h2: Option<Box<crate::http::h2::Template>>,
    /// Absolute form, for HTTP/3 (`:scheme` and `:authority` come from it) and a flow's
    /// steps (an unfilled path, the log's URL of a filled one); `None` for other runs.
    full_uri: Option<Box<Uri>>,
    /// Its headers, for the runs that send them as maps per request (a flow's steps, and
    /// HTTP/3); `None` for others, which send them encoded in `h1` and `h2`.
    head: Option<Arc<Head>>,
    body: barrage_plan::BodySource,
    /// A URL template's path-and-query around `{id}`, filled per request.
    template: Option<Box<IdTemplate>>,
    /// The name, for the request log and the figures by name.
    pub(crate) name: Option<Arc<str>>,
    /// The URL as given (a template keeps `{id}`), redacted, for the request log: only
    /// when there is one.
    url_text: Option<Box<str>>,
    /// Index into the run's endpoints.
    pub endpoint: usize,
}

/// The headers a target sends, with Host and what its URL implies: the same for the
/// targets of one authority given the same headers (a list's million, usually).
struct Head {
    headers: HeaderMap,
    /// `headers` as HTTP/2 and HTTP/3 send them: without Host (the authority is a
    /// pseudo-header) and connection headers (forbidden), made once rather than per request.
    h2_headers: HeaderMap,
}

/// The most heads, and encoded parts of heads, kept to share while preparing: the targets
/// beyond a run's first this many distinct ones (a header of its own each) have their own.
const SHARED_HEADS: usize = 4096;

/// What the targets of a run have alike, each made once and shared while they are
/// prepared: heads, encoded parts of requests, endpoints. Looked up by what the
/// plan's targets hold, borrowed.
struct Alike<'a> {
    plan: &'a Plan,
    /// Heads by the target's headers (the map the plan's targets share) and authority.
    heads: HashMap<(*const HeaderMap, &'a str), Arc<Head>>,
    /// The run sends the header maps per request (see [`Prepared::head`]).
    keeps_heads: bool,
    /// Encoded parts of requests, by their bytes.
    bytes: HashSet<Arc<[u8]>>,
    /// Indexes of endpoints by host, port and TLS.
    endpoint_of: HashMap<(&'a str, u16, bool), usize>,
    endpoints: Vec<Endpoint>,
}

/// The keys a group's figures go under: its own (flows) and each of its flow's steps'
/// (by step index), made once per run so no request formats one.
pub struct GroupKeys {
    /// The group's name.
    pub group: Box<[u8]>,
    /// Its steps' keys: the step's name, or `group/step` when there are several groups.
    pub steps: Vec<Box<[u8]>>,
}

/// The keys of every group of the plan's scenario (none without one).
pub fn group_keys(plan: &Plan) -> Vec<GroupKeys> {
    let Some(s) = &plan.scenario else { return Vec::new() };
    let keys = |g: usize| GroupKeys {
        group: s.groups[g].name.as_bytes().into(),
        steps: s.flows[s.groups[g].flow].steps.iter().map(|step| s.step_key(g, step).into_bytes().into()).collect(),
    };
    (0..s.groups.len()).map(keys).collect()
}

/// A flow's step being sent: what fills its request, where its figures go, and what its
/// response said (kept only as far as its captures and checks read it).
struct StepIo<'a> {
    step: &'a Step,
    state: &'a mut FlowState,
    key: &'a [u8],
    /// The flow instance and the step's place in it, for the request log.
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

/// Prepares the plan's targets; returns them and the distinct endpoints they use. With a
/// request log, each keeps its URL as `log` (the log's redaction) shows it.
pub fn prepare(plan: &Plan, log: Option<&Redaction>) -> (Arc<[Prepared]>, Vec<Endpoint>) {
    let mut alike = Alike {
        plan,
        heads: HashMap::new(),
        keeps_heads: matches!(plan.protocol, barrage_plan::Protocol::Http3 { .. }) || plan.scenario.is_some(),
        bytes: HashSet::new(),
        endpoint_of: HashMap::new(),
        endpoints: Vec::new(),
    };
    let prepared = plan.targets.iter().map(|t| alike.prepare(t, log)).collect();
    (prepared, alike.endpoints)
}

impl<'a> Alike<'a> {
    fn prepare(&mut self, t: &'a Target, log: Option<&Redaction>) -> Prepared {
        let (full_uri, user_info) = split_user_info(&t.url);
        let head = self.head(t, &full_uri, user_info);
        let path = origin_form(&full_uri);
        let template = t.id_template.clone().map(|mut tpl| {
            if !tpl.prefix.starts_with('/') {
                tpl.prefix.insert(0, '/');
            }
            tpl
        });
        let body = barrage_plan::BodySource { bytes: t.body.clone(), unique_len: t.body_unique_len };
        let h1_path = match &template {
            Some(tpl) => (tpl.prefix.as_str(), Some(tpl.suffix.as_str())),
            None => (&*path, None),
        };
        let rest = self.bytes(crate::http::h1::Template::rest(&head.headers, body.len()));
        let h1 = crate::http::h1::Template::new(&t.method, h1_path, rest);
        let h2 = matches!(self.plan.protocol, barrage_plan::Protocol::Http2 { .. }).then(|| {
            let pseudo = self.bytes(crate::http::h2::Template::pseudo_headers(&t.method, &full_uri));
            let after = self.bytes(crate::http::h2::Template::fields(&head.h2_headers));
            Box::new(crate::http::h2::Template::new(pseudo, template.is_none().then_some(&*path), after))
        });
        Prepared {
            method: t.method.clone(),
            h1,
            h2,
            full_uri: self.keeps_heads.then(|| Box::new(full_uri.clone().into_owned())),
            head: self.keeps_heads.then_some(head),
            body,
            template,
            name: t.name.clone(),
            url_text: log.map(|redaction| redaction.url(&t.url_text()).into()),
            endpoint: self.endpoint(&t.url),
        }
    }

    /// The head of target `t` (`url` without user info; `user_info` its URL's).
    fn head(&mut self, t: &'a Target, url: &Uri, user_info: Option<&str>) -> Arc<Head> {
        let key = (&*t.headers as *const HeaderMap, t.url.authority().map_or("", |a| a.as_str()));
        if let Some(shared) = self.heads.get(&key) {
            return shared.clone();
        }
        let head = Arc::new(self.make_head(t, url, user_info));
        if self.heads.len() < SHARED_HEADS {
            self.heads.insert(key, head.clone());
        }
        head
    }

    /// The head of target `t`, made: its headers with Host and what its URL (`url`, without
    /// its `user_info`) and the plan imply.
    fn make_head(&self, t: &Target, url: &Uri, user_info: Option<&str>) -> Head {
        let plan = self.plan;
        let mut headers = (*t.headers).clone();
        if !headers.contains_key(HOST) {
            if let Some(auth) = url.authority() {
                headers.insert(HOST, HeaderValue::from_str(auth.as_str()).expect("an authority is a valid header"));
            }
        }
        if let (Some(credentials), false) = (user_info, headers.contains_key(AUTHORIZATION)) {
            // As curl and Go's net/http (so Vegeta) do: the URL's user and password
            // authenticate by Basic unless an Authorization header says otherwise.
            headers.insert(AUTHORIZATION, basic_auth(credentials));
        }
        if let barrage_plan::Protocol::Http1 { keepalive: false } = plan.protocol {
            // Let the server close first so TIME_WAIT piles up on its side, not ours.
            headers.insert(CONNECTION, HeaderValue::from_static("close"));
        }
        // Built anew, not cloned and trimmed: an empty map then holds no allocation, so
        // cloning it per request costs none.
        let h2_headers: HeaderMap = headers
            .iter()
            .filter(|(name, _)| *name != HOST && *name != CONNECTION)
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        Head { headers, h2_headers }
    }

    /// `bytes`, shared with the targets before that encoded the same (while they are few:
    /// a head of its own for each target would only fill the set).
    fn bytes(&mut self, bytes: Vec<u8>) -> Arc<[u8]> {
        if let Some(shared) = self.bytes.get(&bytes[..]) {
            return shared.clone();
        }
        let shared: Arc<[u8]> = bytes.into();
        if self.bytes.len() < SHARED_HEADS {
            self.bytes.insert(shared.clone());
        }
        shared
    }

    /// The index of `url`'s endpoint among the run's.
    fn endpoint(&mut self, url: &'a Uri) -> usize {
        let tls = url.scheme_str() == Some("https");
        let host = url.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
        let port = url.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let (plan, endpoints) = (self.plan, &mut self.endpoints);
        *self.endpoint_of.entry((host, port, tls)).or_insert_with(|| {
            endpoints.push(Endpoint::of(url, plan));
            endpoints.len() - 1
        })
    }
}

/// The path and query of `url` as a request line has them: `http://host?x=1` has the query
/// but no path, so its request target is `/?x=1`.
fn origin_form(url: &Uri) -> Cow<'_, str> {
    let path = url.path_and_query().map_or("/", |p| p.as_str());
    if path.starts_with('/') {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(format!("/{path}"))
    }
}

/// `url` without its user info (never sent in `Host` or HTTP/2's `:authority`), and that
/// user info (`user:password`, still percent-encoded) when there is one. Borrowed when
/// there is none: a clone would make each of a million URLs' buffers shared, 32 bytes more.
fn split_user_info(url: &Uri) -> (Cow<'_, Uri>, Option<&str>) {
    let Some((user_info, host)) = url.authority().and_then(|a| a.as_str().rsplit_once('@')) else {
        return (Cow::Borrowed(url), None);
    };
    let mut parts = url.clone().into_parts();
    parts.authority = Some(host.parse().expect("the host part of a valid authority is valid"));
    (Cow::Owned(Uri::from_parts(parts).expect("valid parts")), Some(user_info))
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
    /// The absolute URI, which an HTTP/3 run's and a flow's targets keep.
    fn full_uri(&self) -> &Uri {
        self.full_uri.as_deref().expect("an HTTP/3 run's and a flow's targets keep their URI")
    }

    /// The header maps, which an HTTP/3 run's and a flow's targets keep.
    fn head(&self) -> &Head {
        self.head.as_deref().expect("an HTTP/3 run's and a flow's targets keep their headers")
    }

    /// Whether the request is a HEAD (its response has no body).
    pub(crate) fn is_head(&self) -> bool {
        self.method == Method::HEAD
    }

    /// Encodes the HTTP/1.1 request `out` asks for into `head`: the target's head with a
    /// template's id (or the head of a flow's step, with what its variables filled), and a
    /// small body behind it. Returns the body to write after `head`: a large one, from its
    /// shared buffer.
    pub(crate) fn h1_request<'a>(&'a self, out: &Outgoing<'a>, head: &mut Vec<u8>) -> &'a [u8] {
        let body: &[u8] = match out.filled.and_then(|f| f.body.as_ref()) {
            Some(filled) => filled,
            None => self.body.window(out.number),
        };
        match out.filled {
            Some(filled) => {
                let path = match (&filled.path, &self.template) {
                    (Some(path), _) => Cow::Borrowed(path.as_str()),
                    (None, Some(tpl)) => Cow::Owned(format!("{}{}{}", tpl.prefix, out.id, tpl.suffix)),
                    (None, None) => origin_form(self.full_uri()),
                };
                let headers = &self.head().headers;
                crate::http::h1::encode_head(head, &self.method, &path, headers, &filled.headers, body.len());
            }
            None => self.h1.write(out.id, head),
        }
        if crate::http::h1::copies_body(body.len()) {
            head.extend_from_slice(body);
            return &[];
        }
        body
    }

    /// The body `out` sends over HTTP/2 or HTTP/3 (a reference-counted slice of the run's, never a
    /// copy).
    pub(crate) fn body(&self, out: &Outgoing<'_>) -> Bytes {
        match out.filled.and_then(|f| f.body.clone()) {
            Some(filled) => filled,
            None => self.body.body(out.number),
        }
    }

    /// Appends the HTTP/2 header block `out` asks for: the target's, with a template's id
    /// in its path (or a flow's filled path and headers).
    pub(crate) fn h2_block(&self, out: &Outgoing<'_>, block: &mut Vec<u8>) {
        let mut digits = itoa::Buffer::new();
        let filled_path = out.filled.and_then(|f| f.path.as_deref());
        let id_path;
        let path: Option<&[&[u8]]> = match (filled_path, &self.template) {
            (Some(path), _) => {
                id_path = [path.as_bytes(), &[], &[]];
                Some(&id_path[..1])
            }
            (None, Some(tpl)) => {
                id_path = [tpl.prefix.as_bytes(), digits.format(out.id).as_bytes(), tpl.suffix.as_bytes()];
                Some(&id_path)
            }
            (None, None) => None,
        };
        let extra = out.filled.map(|f| &f.headers[..]).unwrap_or_default();
        let h2 = self.h2.as_ref().expect("a run that speaks HTTP/2 prepares its targets for it");
        h2.write(path, extra.iter().map(|(n, v)| (n, v)), block);
    }

    /// The HTTP/3 request `out` asks for, without its body: the absolute URI
    /// (`:scheme` and `:authority` come from it), with what a flow filled in.
    pub(crate) fn h3_head(&self, out: &Outgoing<'_>) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.version_mut() = http::Version::HTTP_3;
        let path = match (out.filled.and_then(|f| f.path.as_deref()), &self.template) {
            (Some(path), _) => Some(Cow::Borrowed(path)),
            (None, Some(tpl)) => Some(Cow::Owned(format!("{}{}{}", tpl.prefix, out.id, tpl.suffix))),
            (None, None) => None,
        };
        *req.uri_mut() = match path {
            Some(path) => {
                let mut parts = self.full_uri().clone().into_parts();
                parts.path_and_query = Some(path.parse().expect("a template's or a filled path is checked valid"));
                Uri::from_parts(parts).expect("valid parts")
            }
            None => self.full_uri().clone(),
        };
        let mut headers = self.head().h2_headers.clone();
        if let Some(filled) = out.filled {
            for (name, value) in &filled.headers {
                headers.append(name.clone(), value.clone());
            }
        }
        *req.headers_mut() = headers;
        req
    }
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
}

/// What a request log row says of a flow's step.
pub(crate) struct FlowLog<'a> {
    /// The flow instance.
    id: u64,
    /// The step's place in the flow's run order.
    index: usize,
    /// `ok`, `check_failed:status`, ...
    outcome: String,
    /// The path as filled, when variables filled it.
    path: Option<String>,
    /// The step's key (its name, or `group/step`).
    key: &'a [u8],
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
    shared: Option<Rc<Shared>>,
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
    pub(crate) fn sharing(worker: usize, shared: Rc<Shared>) -> Self {
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
        if w.plan.retry.is_none() {
            return self.exchange(w, job, io).await;
        }
        let first_intended = job.intended;
        let mut attempt = 1;
        // An attempt a step's check or capture rejected failed, as its sample says.
        let succeeded = |outcome: Outcome, io: &Option<&mut StepIo<'_>>| {
            outcome.is_success() && io.as_ref().is_none_or(|io| io.rejection().is_none())
        };
        let mut outcome = self.exchange(w, job, io.as_deref_mut()).await;
        let first_ok = succeeded(outcome, &io);
        while let Some(pause) = retry_pause(w, attempt, outcome) {
            tokio::time::sleep(pause).await;
            attempt += 1;
            job = Job { intended: w.start.elapsed(), late: false, attempt, starts_now: true, ..job };
            outcome = self.exchange(w, job, io.as_deref_mut()).await;
        }
        let whole = w.start.elapsed().saturating_sub(first_intended);
        w.recorder.borrow_mut().record_logical(first_ok, succeeded(outcome, &io), attempt, whole);
        outcome
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
        let what = (id, job.number);
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
        let ended = done.ended.unwrap_or_else(|| w.start.elapsed());
        if !w.plan.protocol.keepalive() {
            self.conn = None;
        }
        let mut sample = Sample {
            intended: job.intended,
            started,
            ended,
            phases: phases.values(),
            outcome: done.outcome,
            bytes_in: done.bytes_in,
            bytes_out: done.bytes_out,
            late: job.late,
            cache: done.cache,
            intent: job.intent,
            origin: done.origin,
            rejected: false,
        };
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
            let what = Logged { target, id, attempt: job.attempt, backend: done.backend.as_deref(), flow, kv: None };
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

    /// `what`: the template's id and the request's number in the stream.
    async fn attempt(
        &mut self,
        w: &Worker,
        t: &Prepared,
        what: (u64, u64),
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
        (id, number): (u64, u64),
        phases: &Phases,
        mut io: Option<&mut StepIo<'_>>,
    ) -> Result<Done<'static>, Failure> {
        let conn = &mut self.conn.as_mut().expect("connected by the caller").1;
        let filled = match io.as_deref_mut() {
            Some(io) => Some(io.fill()?),
            None => None,
        };
        let out = Outgoing { target, id, number, filled: filled.as_ref() };
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
pub(crate) fn retry_pause(w: &Worker, attempt: u32, outcome: Outcome) -> Option<Duration> {
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
    };
    log.row(&row, sample);
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::{Load, Target};

    /// The HTTP/1.1 bytes a target's request goes out as.
    fn sent(t: &Target, out: impl FnOnce(&Prepared) -> (u64, u64, Option<Filled>)) -> String {
        let mut plan = Plan::new(vec![t.clone()], Load::Closed { concurrency: 1, think_time: Duration::ZERO });
        // Keeps the header maps a flow's step sends per request, as an HTTP/3 run does.
        plan.protocol = barrage_plan::Protocol::http3(1);
        let (prepared, _) = prepare(&plan, None);
        let (id, number, filled) = out(&prepared[0]);
        let outgoing = Outgoing { target: &prepared[0], id, number, filled: filled.as_ref() };
        let mut head = Vec::new();
        let body = prepared[0].h1_request(&outgoing, &mut head).to_vec();
        head.extend(body);
        String::from_utf8_lossy(&head).into_owned()
    }

    /// The HTTP/2 header block a target's request goes out as, decoded.
    fn h2_sent(t: &Target, id: u64, filled: Option<Filled>) -> Vec<(String, String)> {
        let mut plan = Plan::new(vec![t.clone()], Load::Closed { concurrency: 1, think_time: Duration::ZERO });
        plan.protocol = barrage_plan::Protocol::http2(1);
        let (prepared, _) = prepare(&plan, None);
        let outgoing = Outgoing { target: &prepared[0], id, number: 0, filled: filled.as_ref() };
        let mut block = Vec::new();
        prepared[0].h2_block(&outgoing, &mut block);
        crate::http::hpack::decode_list(&block)
    }

    /// A list's targets share what they have alike: their headers, the head after their
    /// path, their endpoint (a map and a head each took over a KiB a target, and finding
    /// the endpoint compared each target with every endpoint before).
    #[test]
    fn targets_share_their_heads_and_endpoints() {
        let mut auth = Target::new(Method::GET, "http://a.test/3").unwrap();
        auth.headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        let targets = vec![
            Target::new(Method::GET, "http://a.test/1").unwrap(),
            Target::new(Method::GET, "http://a.test/2").unwrap(),
            auth,
            Target::new(Method::GET, "http://b.test:81/1").unwrap(),
        ];
        let mut plan = Plan::new(targets, Load::Closed { concurrency: 1, think_time: Duration::ZERO });
        plan.protocol = barrage_plan::Protocol::http3(1);
        let (p, _) = prepare(&plan, None);
        let head = |i: usize| p[i].head.clone().unwrap();
        assert!(Arc::ptr_eq(&head(0), &head(1)) && !Arc::ptr_eq(&head(0), &head(2)));
        assert!(!Arc::ptr_eq(&head(0), &head(3)), "another authority, another Host");
        plan.protocol = barrage_plan::Protocol::http2(1);
        let (p, endpoints) = prepare(&plan, None);
        assert!(p.iter().all(|t| t.head.is_none()), "sent encoded, kept once");
        let h2 = |i: usize| p[i].h2.clone().unwrap().after_path();
        assert!(Arc::ptr_eq(&h2(0), &h2(1)) && !Arc::ptr_eq(&h2(0), &h2(2)));
        assert_eq!(
            endpoints.iter().map(|e| (e.host.as_str(), e.port)).collect::<Vec<_>>(),
            [("a.test", 80), ("b.test", 81)]
        );
        assert_eq!(p.iter().map(|t| t.endpoint).collect::<Vec<_>>(), [0, 0, 0, 1]);
        let sent = |i: usize| {
            let mut head = Vec::new();
            p[i].h1_request(&Outgoing { target: &p[i], id: 0, number: 0, filled: None }, &mut head);
            String::from_utf8(head).unwrap()
        };
        assert_eq!(sent(1), "GET /2 HTTP/1.1\r\nhost: a.test\r\n\r\n");
        assert_eq!(sent(2), "GET /3 HTTP/1.1\r\nauthorization: Bearer x\r\nhost: a.test\r\n\r\n");
    }

    #[test]
    fn http2_blocks_are_encoded_from_the_target() {
        let pairs = |p: &[(&str, &str)]| p.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect::<Vec<_>>();
        let mut get = Target::new(Method::GET, "http://user:pw@127.0.0.1:1/a?b=c").unwrap();
        get.headers.insert("connection", HeaderValue::from_static("keep-alive"));
        assert_eq!(
            h2_sent(&get, 0, None),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":authority", "127.0.0.1:1"),
                (":path", "/a?b=c"),
                ("authorization", "Basic dXNlcjpwdw=="),
            ])
        );
        let mut tpl = Target::new(Method::PUT, "https://127.0.0.1:1/obj/{id}?v=2").unwrap();
        tpl.id_template = Some(Box::new(barrage_plan::IdTemplate { prefix: "obj/".into(), suffix: "?v=2".into() }));
        let head = [(":method", "PUT"), (":scheme", "https"), (":authority", "127.0.0.1:1")];
        let with = |path: &str, extra: &[(&str, &str)]| {
            let mut p = pairs(&head);
            p.push((":path".into(), path.into()));
            p.extend(pairs(extra));
            p
        };
        assert_eq!(h2_sent(&tpl, 42, None), with("/obj/42?v=2", &[]));
        let filled = Filled {
            path: Some("/albums/7".into()),
            headers: vec![(http::HeaderName::from_static("x-token"), HeaderValue::from_static("t"))],
            body: None,
        };
        assert_eq!(h2_sent(&tpl, 5, Some(filled)), with("/albums/7", &[("x-token", "t")]));
        assert_eq!(h2_sent(&tpl, 5, Some(Filled::default())), with("/obj/5?v=2", &[]));
    }

    #[test]
    fn http1_requests_are_encoded_from_the_target() {
        let get = Target::new(Method::GET, "http://user:pw@127.0.0.1:1/a?b=c").unwrap();
        assert_eq!(
            sent(&get, |_| (0, 0, None)),
            "GET /a?b=c HTTP/1.1\r\nhost: 127.0.0.1:1\r\nauthorization: Basic dXNlcjpwdw==\r\n\r\n"
        );
        let mut tpl = Target::new(Method::GET, "http://127.0.0.1:1/obj/{id}?v=2").unwrap();
        tpl.id_template = Some(Box::new(barrage_plan::IdTemplate { prefix: "obj/".into(), suffix: "?v=2".into() }));
        assert_eq!(sent(&tpl, |_| (42, 0, None)), "GET /obj/42?v=2 HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n");
        // A unique body: request k's window, behind its length.
        let mut post = Target::new(Method::POST, "http://127.0.0.1:1/up").unwrap();
        post.body = Bytes::from_static(b"0123456789");
        post.body_unique_len = Some(4);
        assert_eq!(
            sent(&post, |_| (0, 3, None)),
            "POST /up HTTP/1.1\r\nhost: 127.0.0.1:1\r\ncontent-length: 4\r\n\r\n3456"
        );
        // A flow's step: what its variables filled, encoded per request.
        let filled = || Filled {
            path: Some("/albums/7".into()),
            headers: vec![(http::HeaderName::from_static("x-token"), HeaderValue::from_static("t"))],
            body: Some(Bytes::from_static(b"{}")),
        };
        assert_eq!(
            sent(&post, |_| (0, 3, Some(filled()))),
            "POST /albums/7 HTTP/1.1\r\nhost: 127.0.0.1:1\r\nx-token: t\r\ncontent-length: 2\r\n\r\n{}"
        );
        assert_eq!(
            sent(&tpl, |_| (5, 0, Some(Filled::default()))),
            "GET /obj/5?v=2 HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n"
        );
    }
}
