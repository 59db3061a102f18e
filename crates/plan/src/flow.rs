//! Flows: what one instance of a multi-step scenario does as it runs. A [`Scenario`] (read
//! from a scenario file by [`crate::scenario`]) holds flows of [`Step`]s, feeders of CSV
//! rows, and groups that each run one flow under their own load.
//!
//! Everything here is prepared when the file is read: a template is a list of literal bytes
//! and variable slots, a capture's JSONPath is parsed, a regex compiled, so running a step
//! costs one copy per piece and no lookup by name. A filled value is never scanned again: a
//! captured value holding `{{x}}` is sent as it is.

pub use crate::json::JsonAt;
use crate::plan::Load;
use barrage_metrics::secrets::REDACTED;
use bytes::Bytes;
use http::{HeaderMap, HeaderName};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a template's variable reads when a step is sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Var {
    /// A value an earlier step captured: its slot in [`FlowState::captures`].
    Capture(usize),
    /// A column of the flow's feeder row (`{{row.NAME}}`).
    Column(usize),
    /// The flow's iteration on its worker, from 0 (`{{flow.iteration}}`).
    Iteration,
    /// The worker (closed loop) or slot (open loop) running the flow (`{{flow.worker}}`).
    Worker,
    /// The flow instance, unique in the run (`{{flow.id}}`).
    FlowId,
    /// A counter of the whole run, one more at each use (`{{seq}}`).
    Seq,
    /// A seeded random number in `0..N` (`{{random:N}}`).
    Random(u64),
    /// A seeded random UUID, version 4 layout (`{{uuid}}`).
    Uuid,
}

/// How a name in `{{...}}` resolves when a template is compiled.
#[derive(Clone, Debug, PartialEq)]
pub enum Name {
    /// Read when the step is sent.
    Var(Var),
    /// Known when the file is read (`[vars]`, `--var`): filled in once.
    Text(String),
}

#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Lit(Bytes),
    /// A variable; `true`: its value escaped as the inside of a JSON string.
    Var(Var, bool),
}

/// Text with `{{name}}` variables, compiled once; [`Template::fill`] writes it out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Compiles `text`: `{{name}}` is looked up with `resolve` (whose error becomes this
    /// function's); `{{` without a closing `}}` is an error. With `json`, values are
    /// escaped for the inside of a JSON string (a template within a JSON body).
    pub fn compile(text: &str, json: bool, resolve: &dyn Fn(&str) -> Result<Name, String>) -> Result<Template, String> {
        let mut t = Template::default();
        let mut rest = text;
        let mut lit = String::new();
        while let Some(open) = rest.find("{{") {
            lit.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or_else(|| format!("'{{{{' without a closing '}}}}' in '{text}'"))?;
            match resolve(after[..close].trim())? {
                Name::Text(value) if json => lit.push_str(&json_escape(&value)),
                Name::Text(value) => lit.push_str(&value),
                Name::Var(v) => {
                    t.push_lit(std::mem::take(&mut lit).as_bytes());
                    t.pieces.push(Piece::Var(v, json));
                }
            }
            rest = &after[close + 2..];
        }
        lit.push_str(rest);
        t.push_lit(lit.as_bytes());
        Ok(t)
    }

    /// A template of fixed bytes.
    pub fn literal(bytes: &[u8]) -> Template {
        let mut t = Template::default();
        t.push_lit(bytes);
        t
    }

    /// `self` followed by `other`.
    pub fn then(mut self, other: Template) -> Template {
        for p in other.pieces {
            match p {
                Piece::Lit(b) => self.push_lit(&b),
                v => self.pieces.push(v),
            }
        }
        self
    }

    fn push_lit(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(Piece::Lit(prev)) => {
                let mut joined = prev.to_vec();
                joined.extend_from_slice(bytes);
                *prev = Bytes::from(joined);
            }
            _ => self.pieces.push(Piece::Lit(Bytes::copy_from_slice(bytes))),
        }
    }

    /// The bytes, when no variable is read at run time.
    pub fn as_literal(&self) -> Option<Bytes> {
        match &self.pieces[..] {
            [] => Some(Bytes::new()),
            [Piece::Lit(b)] => Some(b.clone()),
            _ => None,
        }
    }

    /// The variables it reads.
    pub fn vars(&self) -> impl Iterator<Item = &Var> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Var(v, _) => Some(v),
            Piece::Lit(_) => None,
        })
    }

    /// Appends the template, filled from `st`, to `out`.
    pub fn fill(&self, st: &mut FlowState, out: &mut Vec<u8>) {
        for p in &self.pieces {
            match p {
                Piece::Lit(b) => out.extend_from_slice(b),
                Piece::Var(v, json) => st.write(v, *json, out),
            }
        }
    }

    /// The template filled from `st`, as text (invalid UTF-8 replaced).
    pub fn fill_string(&self, st: &mut FlowState) -> String {
        let mut out = Vec::new();
        self.fill(st, &mut out);
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// `s` escaped as the inside of a JSON string.
pub fn json_escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).expect("a string serialises");
    quoted[1..quoted.len() - 1].to_string()
}

/// A filled path with what may not stand in a URI (spaces, quotes, non-ASCII from a
/// captured value) percent-encoded, and `%`, `/`, `?`, `&`, `=` left as they are.
pub fn encode_path(path: &str) -> String {
    use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
    const NOT_IN_URI: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b'<').add(b'>').add(b'`').add(b'{').add(b'}');
    const MORE: &AsciiSet = &NOT_IN_URI.add(b'|').add(b'\\').add(b'^');
    utf8_percent_encode(path, MORE).to_string()
}

/// A flow instance's variables: what its steps captured, its feeder row, who runs it.
#[derive(Debug)]
pub struct FlowState {
    /// Captured values by slot; `None` until captured.
    pub captures: Vec<Option<String>>,
    /// Whether each slot's value was captured by a `public = true` capture (or is a
    /// status): any other captured value is secret ([`FlowState::conceal`]).
    pub public: Vec<bool>,
    /// The feeder row, if the flow has a feeder.
    pub row: Option<Arc<[String]>>,
    /// The flow's iteration on its worker.
    pub iteration: u64,
    /// The worker or slot running it.
    pub worker: u64,
    /// The instance's number in the run.
    pub id: u64,
    rng: SmallRng,
    seq: Arc<AtomicU64>,
    lane: Lane,
}

impl FlowState {
    /// `text` (a filled URL, an answer quoted) with each secret value the flow captured
    /// replaced by [`REDACTED`], as captured and as a filled path or JSON string holds it. A
    /// login token captured and sent back in a path, a query or a header, or echoed by an
    /// answer, is a credential whatever its name: only a capture that says `public = true`
    /// is shown.
    pub fn conceal<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut hidden: Vec<(usize, usize)> = Vec::new();
        let secrets = self.captures.iter().zip(&self.public).filter(|(_, public)| !**public);
        for value in secrets.filter_map(|(v, _)| v.as_deref()).filter(|v| !v.is_empty()) {
            for form in [value.to_string(), encode_path(value), json_escape(value)] {
                hidden.extend(text.match_indices(form.as_str()).map(|(at, m)| (at, at + m.len())));
            }
        }
        if hidden.is_empty() {
            return Cow::Borrowed(text);
        }
        // One pass over the text: overlapping matches (a value inside another) are one.
        hidden.sort_unstable();
        let (mut out, mut copied) = (String::with_capacity(text.len()), 0);
        for (start, end) in hidden {
            if end <= copied {
                continue;
            }
            if start >= copied {
                out.push_str(&text[copied..start]);
                out.push_str(REDACTED);
            }
            copied = end;
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }

    /// How many characters the longest form [`FlowState::conceal`] looks for may take: a
    /// value JSON-escaped (`\u0000`) or percent-encoded grows six times at most.
    pub fn secret_reach(&self) -> usize {
        let secrets = self.captures.iter().zip(&self.public).filter(|(_, public)| !**public);
        secrets.filter_map(|(v, _)| v.as_deref()).map(|v| v.len().saturating_mul(6)).max().unwrap_or(0)
    }

    fn write(&mut self, v: &Var, json: bool, out: &mut Vec<u8>) {
        use std::io::Write;
        let text = |out: &mut Vec<u8>, s: &str| match json {
            true => out.extend_from_slice(json_escape(s).as_bytes()),
            false => out.extend_from_slice(s.as_bytes()),
        };
        // Numbers need no escaping: written straight into `out`.
        let _ = match v {
            Var::Capture(slot) => {
                text(out, self.captures.get(*slot).and_then(|c| c.as_deref()).unwrap_or_default());
                Ok(())
            }
            Var::Column(c) => {
                text(out, self.row.as_ref().and_then(|r| r.get(*c)).map_or("", |s| s.as_str()));
                Ok(())
            }
            Var::Iteration => write!(out, "{}", self.iteration),
            Var::Worker => write!(out, "{}", self.worker),
            Var::FlowId => write!(out, "{}", self.id),
            Var::Seq => write!(out, "{}", self.lane.at(self.seq.fetch_add(1, Ordering::Relaxed))),
            Var::Random(n) => write!(out, "{}", self.rng.gen_range(0..*n)),
            Var::Uuid => {
                let b: u128 = self.rng.gen();
                // Version 4, variant 1 bits, as a random UUID has them.
                let b = (b & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
                let h = format!("{b:032x}");
                write!(out, "{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
            }
        };
    }
}

/// Where a captured value comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A value of the JSON body.
    Json(JsonAt),
    /// A response header's value.
    Header(HeaderName),
    /// A regex over the body: its first group if it has one, else the whole match.
    Regex(regex::bytes::Regex),
    /// The status code.
    Status,
}

/// A value read from a response into a variable.
#[derive(Clone, Debug)]
pub struct Capture {
    /// The variable's name.
    pub name: String,
    /// Its slot in [`FlowState::captures`].
    pub slot: usize,
    /// Where it comes from.
    pub source: Source,
    /// Its value may be shown (`public = true`, or a status): else it is concealed in
    /// every output.
    pub public: bool,
}

/// What a check expects of a value.
#[derive(Clone, Debug)]
pub enum Expect {
    /// It is there.
    Present,
    /// It equals the template, filled.
    Equals(Template),
    /// It matches the regex.
    Matches(regex::Regex),
}

impl Expect {
    fn holds(&self, value: Option<&str>, st: &mut FlowState) -> bool {
        match (self, value) {
            (_, None) => false,
            (Expect::Present, Some(_)) => true,
            (Expect::Equals(t), Some(v)) => t.fill_string(st) == v,
            (Expect::Matches(re), Some(v)) => re.is_match(v),
        }
    }
}

/// A condition on a response; a false one fails the flow.
#[derive(Clone, Debug)]
pub enum Check {
    /// The status is one of these.
    Status(Vec<u16>),
    /// A value of the JSON body.
    Json(JsonAt, Expect),
    /// The body contains the text.
    BodyContains(Template),
    /// A header.
    Header(HeaderName, Expect),
}

/// The kinds of check, as failures are counted.
pub const CHECK_KINDS: [&str; 4] = ["status", "json", "body", "header"];

impl Check {
    /// Its kind, an index into [`CHECK_KINDS`].
    pub fn kind(&self) -> usize {
        match self {
            Check::Status(_) => 0,
            Check::Json(..) => 1,
            Check::BodyContains(_) => 2,
            Check::Header(..) => 3,
        }
    }
}

/// A response as a step judges it.
#[derive(Debug)]
pub struct Response<'a> {
    /// The status, `None` when the request failed without one.
    pub status: Option<u16>,
    /// Its headers (empty when the step reads none).
    pub headers: &'a HeaderMap,
    /// Its body, up to [`MAX_JUDGED_BODY`] (empty when the step reads none).
    pub body: &'a [u8],
    /// When judging must end: a capture or check that reads the body does not begin after
    /// it. Each reads a body of up to [`MAX_JUDGED_BODY`] in linear time (some 100 ms in
    /// the worst case), so a run's end is kept within a read of it.
    pub until: Option<Instant>,
}

/// The most of a body a step keeps for its captures and checks; past it the body is read
/// to the end, not kept, and checks see the first part.
pub const MAX_JUDGED_BODY: usize = 16 << 20;

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every check held, every capture found its value.
    Ok,
    /// No response, or a status other than 2xx/3xx that no status check allows.
    RequestFailed,
    /// A check was false: its kind (an index into [`CHECK_KINDS`]).
    CheckFailed(usize),
    /// A capture found nothing: its index among the step's captures.
    CaptureFailed(usize),
    /// Not judged by [`Response::until`]: the request ran out of time.
    OutOfTime,
}

/// One request of a flow.
#[derive(Clone, Debug)]
pub struct Step {
    /// Its name: the key of its figures.
    pub name: String,
    /// Its request: an index into the plan's targets (method, URL, fixed headers and body).
    pub target: usize,
    /// Its URL as shown: constants filled, run-time variables as written (`{{albumID}}`).
    pub url_text: String,
    /// The path and query, when variables fill them (starting with `/`).
    pub path: Option<Template>,
    /// Headers whose values variables fill.
    pub headers: Vec<(HeaderName, Template)>,
    /// The body, when variables fill it.
    pub body: Option<Template>,
    /// Values read from the response.
    pub captures: Vec<Capture>,
    /// Conditions on the response.
    pub checks: Vec<Check>,
    /// Pause after the step: uniform between the two (equal for a fixed pause).
    pub think: Option<(Duration, Duration)>,
}

impl Step {
    /// Whether judging it reads the response body.
    pub fn reads_body(&self) -> bool {
        self.captures.iter().any(|c| matches!(c.source, Source::Json(_) | Source::Regex(_)))
            || self.checks.iter().any(|c| matches!(c, Check::Json(..) | Check::BodyContains(_)))
    }

    /// Whether judging it reads the response headers.
    pub fn reads_headers(&self) -> bool {
        self.captures.iter().any(|c| matches!(c.source, Source::Header(_)))
            || self.checks.iter().any(|c| matches!(c, Check::Header(..)))
    }

    /// Judges a response: checks first, then captures into `st`.
    pub fn judge(&self, r: &Response, st: &mut FlowState) -> Verdict {
        let Some(status) = r.status else { return Verdict::RequestFailed };
        // A failing status the step did not ask for is the request failing (a balancer's
        // 503 in an outage), whether or not the step checks its status: a status check
        // fails on an answer it would otherwise take (a 200 where it asked for 201).
        // Found trying seed 004's study: with `check.status = [201]` an outage's 503s
        // were counted as failed checks, without it as failed requests.
        let allowed = self.checks.iter().any(|c| matches!(c, Check::Status(codes) if codes.contains(&status)));
        if !(200..400).contains(&status) && !allowed {
            return Verdict::RequestFailed;
        }
        let late = || r.until.is_some_and(|until| Instant::now() >= until);
        for c in &self.checks {
            if matches!(c, Check::Json(..) | Check::BodyContains(_)) && late() {
                return Verdict::OutOfTime;
            }
            let holds = match c {
                Check::Status(codes) => codes.contains(&status),
                Check::Json(at, expect) => match at.find_by(r.body, r.until) {
                    None if late() => return Verdict::OutOfTime,
                    found => expect.holds(found.as_deref(), st),
                },
                Check::BodyContains(t) => memchr::memmem::find(r.body, t.fill_string(st).as_bytes()).is_some(),
                Check::Header(name, expect) => {
                    let value = r.headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                    expect.holds(value.as_deref(), st)
                }
            };
            if !holds {
                return Verdict::CheckFailed(c.kind());
            }
        }
        for (i, c) in self.captures.iter().enumerate() {
            if matches!(c.source, Source::Json(_) | Source::Regex(_)) && late() {
                return Verdict::OutOfTime;
            }
            let value = match &c.source {
                Source::Json(at) => match at.find_by(r.body, r.until) {
                    None if late() => return Verdict::OutOfTime,
                    found => found,
                },
                Source::Header(name) => r.headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
                Source::Regex(re) => re
                    .captures(r.body)
                    .and_then(|m| m.get(1).or_else(|| m.get(0)))
                    .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned()),
                Source::Status => Some(status.to_string()),
            };
            match value {
                Some(v) => {
                    st.captures[c.slot] = Some(v);
                    st.public[c.slot] = c.public;
                }
                None => return Verdict::CaptureFailed(i),
            }
        }
        Verdict::Ok
    }
}

/// A sequence of steps run in order by one flow instance.
#[derive(Clone, Debug)]
pub struct Flow {
    /// Its name.
    pub name: String,
    /// Its steps, as written.
    pub steps: Vec<Step>,
    /// The order they run in (a repeated block appears as many times as it repeats).
    pub order: Vec<usize>,
    /// Its feeder: an index into [`Scenario::feeders`].
    pub feeder: Option<usize>,
    /// How many variables its steps capture.
    pub slots: usize,
}

/// In which order a feeder hands out its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedOrder {
    /// Row after row over the whole run: each row once per pass.
    Sequential,
    /// A seeded random row for each flow.
    Random,
    /// One row per worker: worker `w` always uses row `w` (modulo the rows).
    PerWorker,
}

/// What a sequential feeder does when its rows run out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnEnd {
    /// Starts over.
    Recycle,
    /// No further flow of its groups starts.
    Stop,
}

/// Rows of a CSV file handed to flows: `{{row.COLUMN}}`.
#[derive(Debug)]
pub struct Feeder {
    /// Its name.
    pub name: String,
    /// The header row.
    pub columns: Vec<String>,
    /// The rows (at least one).
    pub rows: Vec<Arc<[String]>>,
    /// The order rows go in.
    pub order: FeedOrder,
    /// What a sequential feeder does at the end.
    pub on_end: OnEnd,
    /// The next row of a sequential feeder, over the whole run.
    next: AtomicU64,
}

impl Feeder {
    /// A feeder of `rows` (at least one).
    pub fn new(name: String, columns: Vec<String>, rows: Vec<Arc<[String]>>, order: FeedOrder, on_end: OnEnd) -> Self {
        Feeder { name, columns, rows, order, on_end, next: AtomicU64::new(0) }
    }

    /// The same rows, handed out from the first again (for another run of a study).
    fn restarted(&self) -> Feeder {
        Feeder::new(self.name.clone(), self.columns.clone(), self.rows.clone(), self.order, self.on_end)
    }

    /// The row for a flow of `worker`; `None` when a feeder that stops has run out.
    /// `worker` is the run's (in the shard's lane); a sequential feeder hands out the rows
    /// of the shard's `lane`.
    pub fn row(&self, worker: u64, rng: &mut SmallRng, lane: Lane) -> Option<Arc<[String]>> {
        let n = self.rows.len() as u64;
        let i = match self.order {
            FeedOrder::Sequential => {
                let k = lane.at(self.next.fetch_add(1, Ordering::Relaxed));
                if self.on_end == OnEnd::Stop && k >= n {
                    return None;
                }
                k % n
            }
            FeedOrder::Random => rng.gen_range(0..n),
            FeedOrder::PerWorker => worker % n,
        };
        Some(self.rows[i as usize].clone())
    }
}

/// A thread group: one flow under its own load, from its own start, for its own duration.
#[derive(Clone, Debug)]
pub struct Group {
    /// Its name: the key of its figures.
    pub name: String,
    /// Its flow: an index into [`Scenario::flows`].
    pub flow: usize,
    /// Flows started on a schedule (open loop: each arrival one flow) or by workers running
    /// flows back to back (closed loop; `think_time` between flows).
    pub load: Load,
    /// When it starts, from the run's start.
    pub start: Duration,
    /// How long it runs; `None`: to the end of the run.
    pub duration: Option<Duration>,
    /// Closed loop: the workers start evenly over this long.
    pub ramp: Duration,
    /// Its load is its own (`rate` or `concurrency`), not the run's flags'.
    pub own_load: bool,
    /// Closed loop: flows each worker runs before it stops (`iterations`, JMeter's loop
    /// count); `None`: until the group's end.
    pub iterations: Option<u64>,
}

/// Flows, feeders and the groups that run them.
#[derive(Debug)]
pub struct Scenario {
    /// Its name.
    pub name: String,
    /// Its flows.
    pub flows: Vec<Flow>,
    /// Its feeders.
    pub feeders: Vec<Feeder>,
    /// Its groups (at least one).
    pub groups: Vec<Group>,
    /// `{{seq}}`.
    seq: Arc<AtomicU64>,
    /// Flow instances started.
    ids: AtomicU64,
    /// The shard of a split run (`--shard`): its counters count in its lane.
    lane: Lane,
}

/// A shard's lane of a run's counters: its `n`th value is `n × count + index`, so the
/// shards of a split run never hand out the same `{{seq}}`, flow id, worker or feeder row,
/// and a sequential feeder's rows are each used once over all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lane {
    /// The shard.
    pub index: u64,
    /// How many shards.
    pub count: u64,
}

impl Lane {
    /// The `n`th value of the lane.
    pub fn at(&self, n: u64) -> u64 {
        n.saturating_mul(self.count).saturating_add(self.index)
    }
}

impl Scenario {
    /// A scenario of these parts.
    pub fn new(name: String, flows: Vec<Flow>, feeders: Vec<Feeder>, groups: Vec<Group>) -> Self {
        let (seq, ids) = (Arc::new(AtomicU64::new(0)), AtomicU64::new(0));
        Scenario { name, flows, feeders, groups, seq, ids, lane: Lane { index: 0, count: 1 } }
    }

    /// The scenario as shard `index` of `count` of a split run.
    pub fn in_shard(mut self, index: u64, count: u64) -> Scenario {
        self.lane = Lane { index, count: count.max(1) };
        self
    }

    /// The same scenario with its one group under `load`: a level of a sweep or a probe of
    /// a capacity search. `None` when it has several groups, each with its own load. Feeders
    /// start from their first row again; `{{seq}}` goes on counting, so ids made from it
    /// stay new across the runs of a study.
    pub fn with_load(&self, load: Load) -> Option<Scenario> {
        let [group] = &self.groups[..] else { return None };
        Some(Scenario {
            name: self.name.clone(),
            flows: self.flows.clone(),
            feeders: self.feeders.iter().map(Feeder::restarted).collect(),
            groups: vec![Group { load, ..group.clone() }],
            seq: self.seq.clone(),
            ids: AtomicU64::new(0),
            lane: self.lane,
        })
    }

    /// The key of a step's figures: its name, or `group/name` when there are several groups.
    pub fn step_key(&self, group: usize, step: &Step) -> String {
        match self.groups.len() {
            1 => step.name.clone(),
            _ => format!("{}/{}", self.groups[group].name, step.name),
        }
    }

    /// The state of a new flow instance of `group` on `worker`, its `iteration`th there,
    /// with randomness from `seed`; `None` when its feeder stops and has run out.
    /// `worker` is the shard's; the flow sees the run's (its lane's).
    pub fn start_flow(&self, group: usize, worker: u64, iteration: u64, seed: u64) -> Option<FlowState> {
        let worker = self.lane.at(worker);
        let flow = &self.flows[self.groups[group].flow];
        let mut rng = SmallRng::seed_from_u64(crate::pick::derive_seed(seed, &[group as u64, worker, iteration]));
        let row = match flow.feeder {
            Some(f) => Some(self.feeders[f].row(worker, &mut rng, self.lane)?),
            None => None,
        };
        Some(FlowState {
            captures: vec![None; flow.slots],
            public: vec![false; flow.slots],
            row,
            iteration,
            worker,
            id: self.lane.at(self.ids.fetch_add(1, Ordering::Relaxed)),
            rng,
            seq: self.seq.clone(),
            lane: self.lane,
        })
    }

    /// A think time drawn for a flow.
    pub fn think(st: &mut FlowState, think: (Duration, Duration)) -> Duration {
        let (lo, hi) = think;
        if hi <= lo {
            return lo;
        }
        lo + (hi - lo).mul_f64(st.rng.gen::<f64>())
    }
}
