//! Scenario files: flows of steps (requests with captures and checks), CSV feeders, and
//! the groups that run the flows, read into a [`Scenario`] and the [`Target`] of each step.
//!
//! ```toml
//! name = "album study"            # default: the file's stem
//!
//! [vars]                          # constants for {{name}}; --var NAME=VALUE overrides
//! host = "127.0.0.1:8080"
//!
//! [feeder.users]
//! file = "users.csv"              # beside the scenario file; its header row names columns
//! order = "sequential"            # or "random", "per-worker"
//! on-end = "recycle"              # or "stop"
//!
//! [flow.album]
//! feeder = "users"
//! repeat = { first = "get-album", last = "get-album", times = 3 }
//!
//! [[flow.album.step]]
//! name = "post-album"
//! method = "POST"
//! url = "http://{{host}}/albums"
//! form.profile = { json = { user = "{{row.user}}" } }
//! form.image = { file = "img/cat.jpg", type = "image/jpeg" }
//! capture.albumID = { json-path = "$.albumID", public = true }   # shown in outputs; else secret
//! check.status = [200, 201]
//! think = "100ms..300ms"
//!
//! [[flow.album.step]]
//! name = "get-album"
//! url = "http://{{host}}/albums/{{albumID}}"
//! check.json = [{ path = "$.user", equals = "{{row.user}}" }]
//!
//! [group.writers]                 # without groups, the only flow runs under the run's load
//! flow = "album"
//! concurrency = 10                # or rate = 50 (flows started per second)
//! ramp = "5s"
//! start = "0s"
//! duration = "30s"               # at most; with iterations = 100, each worker stops
//!                                 # after its 100th flow
//! ```
//!
//! Everything is checked as the file is read, and each error names the file, the line and
//! the key: every `{{name}}` resolves to a constant (filled in at once), a feeder column, a
//! built-in, or a value an earlier step captures; JSONPaths are parsed and regexes
//! compiled. The scheme, host and port of a step's URL are fixed then, so the engine knows
//! where each step connects; only the path, headers and body may vary per flow.

use crate::body::{boundary, guess_type, multipart_end, multipart_type, no_controls, part_head, quoted_name};
use crate::flow::{
    Capture, Check, Expect, FeedOrder, Feeder, Flow, Group, JsonAt, Name, OnEnd, Scenario, Source, Step, Template, Var,
};
use crate::limits::{
    MAX_BODY, MAX_EXPERIMENT_FILE, MAX_FLOWS, MAX_FLOW_STEPS, MAX_GROUPS, MAX_TARGETS, MAX_TARGETS_FILE, MAX_WORKERS,
};
use crate::plan::{Load, Target};
use crate::units::{Dur, Levels, LoadFlags, RateSpec};
use crate::Pacer;
use barrage_metrics::limits::fmt_limit;
use http::{HeaderName, HeaderValue, Method};
use indexmap::IndexMap;
use serde::de::{self, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use toml::Spanned;

/// A scenario file (or a file it names) that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file: the scenario, or a feeder's CSV.
    pub file: String,
    /// 1-based line; 0 when the error is about the whole file.
    pub line: usize,
    /// The key, what is wrong and what would be valid.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file, self.message),
            line => write!(f, "{}:{line}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// An error on one line, whatever the text it quotes holds (a TOML string may hold a
    /// line break).
    fn new(file: &str, line: usize, message: &str) -> Self {
        let message = message.replace('\n', "\\n").replace('\r', "\\r");
        ScenarioError { file: file.into(), line, message }
    }
}

type Res<T> = Result<T, ScenarioError>;

/// Reads a scenario file: `vars` are `--var NAME=VALUE` (over the file's `[vars]`), and
/// `default_load` the run's load flags, for a scenario without groups. Returns the
/// scenario and the targets of its steps, one per step in flow and step order.
pub fn read(path: &Path, vars: &[(String, String)], default_load: &Load) -> Res<(Scenario, Vec<Target>)> {
    let file = path.display().to_string();
    let whole = |message: String| ScenarioError::new(&file, 0, &message);
    let bytes = barrage_metrics::limits::read_capped(path, MAX_EXPERIMENT_FILE).map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => whole(e.to_string()),
        _ => whole(format!("cannot read: {e}")),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| whole("not UTF-8 text".into()))?;
    let base = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    parse(&text, &file, base, vars, default_load)
}

/// Parses the text of a scenario file named `file`, whose relative paths (feeders, body
/// files, form files) are from `base_dir`; otherwise as [`read`].
pub fn parse(
    text: &str,
    file: &str,
    base_dir: &Path,
    vars: &[(String, String)],
    default_load: &Load,
) -> Res<(Scenario, Vec<Target>)> {
    let doc = Doc { file, text, base: base_dir };
    let raw: RawFile = toml::from_str(text).map_err(|e| doc.serde_error(&e))?;
    let given = vars;
    let vars = constants(&doc, &raw.vars, given)?;
    unused_vars(&doc, &raw.vars, given)?;
    let feeders = raw.feeder.iter().map(|(name, f)| feeder(&doc, name, f)).collect::<Res<Vec<_>>>()?;
    if raw.flow.is_empty() {
        return Err(doc.whole("no flows: a scenario needs a [[flow.NAME.step]] table with at least a name and a url"));
    }
    if let Some((name, f)) = raw.flow.get_index(MAX_FLOWS) {
        return Err(doc.fail(f.span(), &format!("flow.{name}"), format!("more than {MAX_FLOWS} flows, the limit")));
    }
    let mut out = Targets { targets: Vec::new(), bodies: 0 };
    let mut flows = Vec::new();
    for (name, f) in &raw.flow {
        flows.push(flow(&doc, name, f, &vars, &feeders, &mut out)?);
    }
    let groups = groups(&doc, &raw, &flows, default_load)?;
    let stem = Path::new(file).file_stem().map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    Ok((Scenario::new(raw.name.unwrap_or(stem), flows, feeders, groups), out.targets))
}

/// What the groups add up to, for the run's header and its thread count: open loop at the
/// sum of the groups' rates (each at its peak) and of their in-flight bounds when every
/// group is open loop, else closed loop with the sum of their workers (an open group
/// counting its in-flight bound).
pub fn overall_load(s: &Scenario) -> Load {
    let open: Option<Vec<(f64, usize)>> = s
        .groups
        .iter()
        .map(|g| match &g.load {
            Load::Open { pacer, max_in_flight } => Some((peak_rate(pacer), *max_in_flight)),
            Load::Closed { .. } => None,
        })
        .collect();
    match open {
        Some(open) => Load::Open {
            pacer: Pacer::Constant { rate: open.iter().map(|(r, _)| r).sum() },
            max_in_flight: open.iter().map(|(_, m)| m).sum(),
        },
        None => Load::Closed {
            concurrency: s
                .groups
                .iter()
                .map(|g| match &g.load {
                    Load::Open { max_in_flight, .. } => *max_in_flight,
                    Load::Closed { concurrency, .. } => *concurrency,
                })
                .sum(),
            think_time: Duration::ZERO,
        },
    }
}

fn peak_rate(p: &Pacer) -> f64 {
    match p {
        Pacer::Constant { rate } => *rate,
        Pacer::Ramp { from, to, .. } => from.max(*to),
        Pacer::Steps { rates, .. } => rates.iter().copied().fold(0.0, f64::max),
    }
}

/// The most flows a group's worker may be asked to run (`iterations`).
pub const MAX_ITERATIONS: u64 = 1_000_000_000;

/// When the last group ends (its start plus its duration); `None` when a group runs to
/// the end of the run (or until its workers ran their `iterations`).
pub fn span(s: &Scenario) -> Option<Duration> {
    s.groups.iter().map(|g| g.duration.map(|d| g.start + d)).collect::<Option<Vec<_>>>()?.into_iter().max()
}

/// Whether every group ends by itself (a duration, or its workers' `iterations`): the run
/// then lasts until the last one ends, with no default duration.
pub fn ends_by_itself(s: &Scenario) -> bool {
    s.groups.iter().all(|g| g.duration.is_some() || g.iterations.is_some())
}

// ---------------------------------------------------------------------------------------
// The file as written. Values whose line an error may name are `Spanned`.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: Option<String>,
    #[serde(default)]
    vars: IndexMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    feeder: IndexMap<String, Spanned<RawFeeder>>,
    #[serde(default)]
    flow: IndexMap<String, Spanned<RawFlow>>,
    #[serde(default)]
    group: IndexMap<String, Spanned<RawGroup>>,
}

#[derive(Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RawOrder {
    #[default]
    Sequential,
    Random,
    PerWorker,
}

#[derive(Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RawOnEnd {
    #[default]
    Recycle,
    Stop,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawFeeder {
    file: Spanned<String>,
    #[serde(default)]
    order: RawOrder,
    on_end: Option<Spanned<RawOnEnd>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    feeder: Option<Spanned<String>>,
    repeat: Option<Spanned<RawRepeat>>,
    #[serde(default)]
    step: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRepeat {
    first: String,
    last: String,
    times: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawStep {
    name: Spanned<String>,
    method: Option<Spanned<String>>,
    url: Spanned<String>,
    #[serde(default)]
    headers: IndexMap<String, Spanned<String>>,
    body: Option<Spanned<String>>,
    body_file: Option<Spanned<String>>,
    json: Option<Spanned<toml::Value>>,
    #[serde(default)]
    form: IndexMap<String, Spanned<RawPart>>,
    #[serde(default)]
    capture: IndexMap<String, Spanned<RawCapture>>,
    #[serde(default)]
    check: RawChecks,
    think: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPart {
    json: Option<toml::Value>,
    text: Option<String>,
    file: Option<String>,
    #[serde(rename = "type")]
    content_type: Option<String>,
    filename: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawCapture {
    json_path: Option<String>,
    json_pointer: Option<String>,
    header: Option<String>,
    regex: Option<String>,
    status: Option<bool>,
    /// The value may be shown in outputs (an id); by default a captured value is secret.
    #[serde(default)]
    public: bool,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawChecks {
    status: Option<Spanned<OneOrMany<u16>>>,
    json: Option<Spanned<OneOrMany<RawJsonCheck>>>,
    body_contains: Option<Spanned<String>>,
    header: Option<Spanned<OneOrMany<RawHeaderCheck>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJsonCheck {
    path: Option<String>,
    pointer: Option<String>,
    equals: Option<toml::Value>,
    matches: Option<String>,
    present: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeaderCheck {
    name: String,
    equals: Option<toml::Value>,
    matches: Option<String>,
    present: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawGroup {
    flow: Option<Spanned<String>>,
    concurrency: Option<Spanned<u32>>,
    rate: Option<Spanned<toml::Value>>,
    max_in_flight: Option<Spanned<u32>>,
    think_time: Option<Spanned<String>>,
    ramp: Option<Spanned<String>>,
    start: Option<Spanned<String>>,
    duration: Option<Spanned<String>>,
    iterations: Option<Spanned<i64>>,
}

/// A value written alone or as a list (`status = 200`, `status = [200, 201]`). Items of a
/// list keep their place in the file; one alone has the place of the whole.
enum OneOrMany<T> {
    One(T),
    Many(Vec<Spanned<T>>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("one value or a list of them")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(OneOrMany::Many)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(OneOrMany::One)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(OneOrMany::One)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Each item with its place in the file.
fn items<T>(v: &Spanned<OneOrMany<T>>) -> Vec<(Range<usize>, &T)> {
    match v.get_ref() {
        OneOrMany::One(t) => vec![(v.span(), t)],
        OneOrMany::Many(items) => items.iter().map(|i| (i.span(), i.get_ref())).collect(),
    }
}

// ---------------------------------------------------------------------------------------
// Errors in the file's terms.

/// The scenario file being read: its name and text, for messages; its folder, for the
/// files it names.
struct Doc<'a> {
    file: &'a str,
    text: &'a str,
    base: &'a Path,
}

impl Doc<'_> {
    fn line(&self, at: &Range<usize>) -> usize {
        self.text[..at.start.min(self.text.len())].matches('\n').count() + 1
    }

    /// `FILE:LINE: KEY: what`.
    fn fail(&self, at: Range<usize>, key: &str, what: impl fmt::Display) -> ScenarioError {
        ScenarioError::new(self.file, self.line(&at), &format!("{key}: {what}"))
    }

    fn whole(&self, what: impl fmt::Display) -> ScenarioError {
        ScenarioError::new(self.file, 0, &what.to_string())
    }

    /// A TOML or type error, on one line, with the key of the line it points at (serde
    /// names the field only when it is unknown or missing).
    fn serde_error(&self, e: &toml::de::Error) -> ScenarioError {
        let message = one_line(e.message());
        let Some(at) = e.span() else { return self.whole(message) };
        let line = self.line(&at);
        let key = self.text.lines().nth(line - 1).and_then(key_of_line);
        let message = match key {
            Some(key) if !message.starts_with("unknown field") => format!("{key}: {message}"),
            _ => message,
        };
        ScenarioError::new(self.file, line, &message)
    }
}

/// The key a line of TOML sets, or the table it opens.
fn key_of_line(line: &str) -> Option<String> {
    let line = line.trim();
    if line.starts_with('[') {
        return Some(line.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    }
    line.split_once('=').map(|(k, _)| k.trim().to_string()).filter(|k| !k.is_empty())
}

/// A message that spans lines (a regex's, with its caret drawing) on one.
fn one_line(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c == ' ' || c == '|'))
        .collect();
    lines.join(": ")
}

/// A name of the file (flow, step, feeder, group, variable): letters, digits, `_.-`.
fn check_name(doc: &Doc, at: Range<usize>, key: &str, name: &str) -> Res<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')) {
        return Err(doc.fail(at, key, format!("'{name}' is not a name: use letters, digits, '_', '.' and '-'")));
    }
    Ok(())
}

/// The closest of `known` to `name`, if one is close enough to be a slip.
fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    known
        .into_iter()
        .map(|k| (strsim::damerau_levenshtein(&lower, &k.to_lowercase()), k))
        .filter(|(d, k)| *d <= 2.min(k.len() / 2).max(1) || k.eq_ignore_ascii_case(name))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// `(did you mean X?)`, or the list of what there is.
fn hint<'a>(name: &str, known: impl IntoIterator<Item = &'a str> + Clone) -> String {
    match closest(name, known.clone()) {
        Some(k) => format!(" (did you mean {k}?)"),
        None => match known.into_iter().collect::<Vec<_>>() {
            none if none.is_empty() => " (there are none)".into(),
            all => format!(" ({})", list(&all)),
        },
    }
}

/// Names for a message: the first few, so a feeder of a thousand columns keeps it short.
fn list(names: &[&str]) -> String {
    const SHOWN: usize = 20;
    match names.len() > SHOWN {
        true => format!("{}, and {} more", names[..SHOWN].join(", "), names.len() - SHOWN),
        false => names.join(", "),
    }
}

// ---------------------------------------------------------------------------------------
// Constants and feeders.

/// Names `{{...}}` gives another meaning.
fn reserved(name: &str) -> bool {
    matches!(name, "seq" | "uuid") || name.starts_with("row.") || name.starts_with("flow.")
}

/// A `--var` that neither names a `[vars]` entry nor stands in any `{{...}}` of the file
/// would change nothing: a typo, refused with the names that would do something.
fn unused_vars(doc: &Doc, declared: &IndexMap<String, Spanned<toml::Value>>, given: &[(String, String)]) -> Res<()> {
    let used = names_in(doc.text);
    for (name, _) in given {
        if !declared.contains_key(name) && !used.contains(&name.as_str()) {
            let known = declared.keys().map(String::as_str).chain(used.iter().copied().filter(|n| !reserved(n)));
            let mut known: Vec<&str> = known.collect();
            known.sort_unstable();
            known.dedup();
            // Not `--var NAME: …`: a secret-like NAME would redact the rest of the line.
            let what = format!("--var {name} is read by no {{{{{name}}}}} of the scenario{}", hint(name, known));
            return Err(doc.whole(what));
        }
    }
    Ok(())
}

/// `[vars]` with `--var` over them.
fn constants(
    doc: &Doc,
    raw: &IndexMap<String, Spanned<toml::Value>>,
    given: &[(String, String)],
) -> Res<IndexMap<String, String>> {
    let mut vars = IndexMap::new();
    for (name, value) in raw {
        let key = format!("vars.{name}");
        check_name(doc, value.span(), &key, name)?;
        if reserved(name) {
            return Err(doc.fail(value.span(), &key, format!("'{name}' is a built-in name; choose another")));
        }
        let text = match value.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => return Err(doc.fail(value.span(), &key, format!("{other} is not text or a number"))),
        };
        vars.insert(name.clone(), text);
    }
    for (name, value) in given {
        if reserved(name)
            || name.is_empty()
            || name.contains(|c: char| !c.is_ascii_alphanumeric() && !"_.-".contains(c))
        {
            return Err(doc.whole(format!(
                "--var {name}: not a variable name (letters, digits, '_', '.' and '-', not a built-in)"
            )));
        }
        vars.insert(name.clone(), value.clone());
    }
    Ok(vars)
}

fn feeder(doc: &Doc, name: &str, raw: &Spanned<RawFeeder>) -> Res<Feeder> {
    check_name(doc, raw.span(), &format!("feeder.{name}"), name)?;
    let r = raw.get_ref();
    let order = match r.order {
        RawOrder::Sequential => FeedOrder::Sequential,
        RawOrder::Random => FeedOrder::Random,
        RawOrder::PerWorker => FeedOrder::PerWorker,
    };
    let on_end = match &r.on_end {
        None => OnEnd::Recycle,
        Some(e) if order != FeedOrder::Sequential => {
            return Err(doc.fail(
                e.span(),
                "on-end",
                "goes with order = \"sequential\": the other orders never run out",
            ))
        }
        Some(e) => match e.get_ref() {
            RawOnEnd::Recycle => OnEnd::Recycle,
            RawOnEnd::Stop => OnEnd::Stop,
        },
    };
    let path = doc.base.join(r.file.get_ref());
    let bytes = crate::limits::read_file(&path, MAX_TARGETS_FILE).map_err(|e| doc.fail(r.file.span(), "file", e))?;
    let (columns, rows) = read_csv(&path.display().to_string(), &bytes)?;
    Ok(Feeder::new(name.to_string(), columns, rows, order, on_end))
}

/// A row of a feeder.
type Row = Arc<[String]>;

/// A feeder's columns (its header row) and rows, every row as long as the header; errors
/// name the CSV file and its line.
fn read_csv(file: &str, bytes: &[u8]) -> Res<(Vec<String>, Vec<Row>)> {
    let fail = |line: u64, message: String| ScenarioError::new(file, line as usize, &message);
    let csv_error = |e: csv::Error| {
        let line = e.position().map_or(0, |p| p.line());
        match e.kind() {
            csv::ErrorKind::UnequalLengths { expected_len, len, .. } => fail(
                line,
                format!("a row of {len} fields where the header row has {expected_len}: every row has as many"),
            ),
            csv::ErrorKind::Utf8 { .. } => fail(line, "not UTF-8 text".into()),
            _ => fail(line, one_line(&e.to_string())),
        }
    };
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(bytes);
    let columns: Vec<String> = reader.headers().map_err(csv_error)?.iter().map(str::to_string).collect();
    if columns.is_empty() || columns.iter().any(String::is_empty) {
        return Err(fail(1, "the header row names every column ({{row.NAME}} reads one): a column has no name".into()));
    }
    if let Some(twice) = columns.iter().enumerate().find(|(i, c)| columns[..*i].contains(c)) {
        return Err(fail(1, format!("column '{}' is named twice in the header row", twice.1)));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(csv_error)?;
        if rows.len() == MAX_TARGETS {
            let line = record.position().map_or(0, |p| p.line());
            return Err(fail(line, format!("more than {MAX_TARGETS} rows, the limit of a feeder")));
        }
        rows.push(record.iter().map(str::to_string).collect::<Vec<_>>().into());
    }
    if rows.is_empty() {
        return Err(fail(0, "no rows after the header row: a feeder needs at least one".into()));
    }
    Ok((columns, rows))
}

// ---------------------------------------------------------------------------------------
// Templates: what `{{name}}` is in a step.

/// The built-in variables, as listed in messages.
const BUILTINS: [&str; 6] = ["flow.iteration", "flow.worker", "flow.id", "seq", "uuid", "random:N"];

fn builtin(name: &str) -> Result<Option<Var>, String> {
    Ok(Some(match name {
        "flow.iteration" => Var::Iteration,
        "flow.worker" => Var::Worker,
        "flow.id" => Var::FlowId,
        "seq" => Var::Seq,
        "uuid" => Var::Uuid,
        _ => match name.strip_prefix("random:") {
            None => return Ok(None),
            Some(n) => match n.trim().parse::<u64>() {
                Ok(n) if n >= 1 => Var::Random(n),
                _ => {
                    return Err(format!(
                        "'{{{{{name}}}}}': N of {{{{random:N}}}} is a whole number from 1, e.g. {{{{random:1000}}}}"
                    ))
                }
            },
        },
    }))
}

/// What `{{name}}` can read in one step: the file's constants, the flow's feeder, the
/// built-ins and what earlier steps capture.
struct Scope<'a> {
    vars: &'a IndexMap<String, String>,
    feeder: Option<&'a Feeder>,
    flow: &'a str,
    step: &'a str,
    /// Captured by the steps before this one: name → slot.
    captured: &'a IndexMap<String, usize>,
    /// Every capture of the flow: name → the first step capturing it.
    capturers: &'a IndexMap<String, String>,
}

impl Scope<'_> {
    fn resolve(&self, name: &str) -> Result<Name, String> {
        if let Some(column) = name.strip_prefix("row.") {
            return self.column(column).map(|c| Name::Var(Var::Column(c)));
        }
        if let Some(v) = builtin(name)? {
            return Ok(Name::Var(v));
        }
        if let Some(slot) = self.captured.get(name) {
            return Ok(Name::Var(Var::Capture(*slot)));
        }
        if let Some(text) = self.vars.get(name) {
            return Ok(Name::Text(text.clone()));
        }
        Err(self.unknown(name))
    }

    fn column(&self, column: &str) -> Result<usize, String> {
        let Some(f) = self.feeder else {
            return Err(format!(
                "'{{{{row.{column}}}}}': flow {} has no feeder; name one with feeder = \"NAME\" under [flow.{}]",
                self.flow, self.flow
            ));
        };
        f.columns.iter().position(|c| c == column).ok_or_else(|| {
            format!(
                "'{{{{row.{column}}}}}': feeder {} has no column {column}{}",
                f.name,
                hint(column, f.columns.iter().map(String::as_str))
            )
        })
    }

    fn unknown(&self, name: &str) -> String {
        let head = format!("'{{{{{name}}}}}' is not captured before step {}", self.step);
        match self.capturers.get(name) {
            Some(by) if by == self.step => {
                format!("{head}: a step's captures are for the steps after it")
            }
            Some(by) => format!("{head}: step {by} captures it, later in the flow"),
            None => {
                let columns =
                    self.feeder.map_or(Vec::new(), |f| f.columns.iter().map(|c| format!("row.{c}")).collect());
                let known: Vec<&str> = (self.captured.keys().chain(self.vars.keys()).map(String::as_str))
                    .chain(columns.iter().map(String::as_str))
                    .chain(BUILTINS)
                    .collect();
                match closest(name, known.iter().copied()) {
                    Some(k) => format!("{head} (did you mean {k}?)"),
                    None => format!("{head}, nor is it a [vars] name or a built-in (known here: {})", list(&known)),
                }
            }
        }
    }

    /// Compiles `text`, and beside it the same text with `0` for each run-time variable.
    fn compile(&self, text: &str, json: bool) -> Result<Built, String> {
        let tpl = Template::compile(text, json, &|n| self.resolve(n))?;
        let zeros = Template::compile(text, json, &|n| {
            self.resolve(n).map(|v| match v {
                Name::Var(_) => Name::Text("0".into()),
                constant => constant,
            })
        })?;
        Ok(Built { tpl, sample: zeros.as_literal().expect("no variable left").to_vec() })
    }
}

/// A template being put together, and beside it its text with `0` for each run-time
/// variable: what URLs and header values are checked with, and a form's boundary chosen
/// against, when the file is read.
#[derive(Default)]
struct Built {
    tpl: Template,
    sample: Vec<u8>,
}

impl Built {
    fn lit(bytes: &[u8]) -> Built {
        Built { tpl: Template::literal(bytes), sample: bytes.to_vec() }
    }

    fn then(mut self, other: Built) -> Built {
        self.tpl = self.tpl.then(other.tpl);
        self.sample.extend_from_slice(&other.sample);
        self
    }
}

/// The `{{...}}` names in `text`, as written.
fn names_in(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else { break };
        names.push(after[..close].trim());
        rest = &after[close + 2..];
    }
    names
}

// ---------------------------------------------------------------------------------------
// Flows and steps.

/// The targets of the steps so far, and the bytes of their bodies (bounded together, as
/// a target file's).
struct Targets {
    targets: Vec<Target>,
    bodies: u64,
}

fn flow(
    doc: &Doc,
    name: &str,
    raw: &Spanned<RawFlow>,
    vars: &IndexMap<String, String>,
    feeders: &[Feeder],
    out: &mut Targets,
) -> Res<Flow> {
    let key = format!("flow.{name}");
    check_name(doc, raw.span(), &key, name)?;
    let r = raw.get_ref();
    if r.step.is_empty() {
        return Err(doc.fail(
            raw.span(),
            &key,
            format!("no steps: add [[flow.{name}.step]] tables, each with a name and a url"),
        ));
    }
    let feeder = match &r.feeder {
        None => None,
        Some(f) => Some(feeders.iter().position(|x| &x.name == f.get_ref()).ok_or_else(|| {
            let known = feeders.iter().map(|x| x.name.as_str());
            let what = format!("no [feeder.{}]{}", f.get_ref(), hint(f.get_ref(), known));
            doc.fail(f.span(), "feeder", what)
        })?),
    };
    let order = run_order(doc, name, r)?;
    let capturers = capturers(r);
    let mut captured = IndexMap::new();
    let mut steps = Vec::new();
    for s in &r.step {
        let scope = Scope {
            vars,
            feeder: feeder.map(|f| &feeders[f]),
            flow: name,
            step: s.get_ref().name.get_ref(),
            captured: &captured,
            capturers: &capturers,
        };
        let step = step(doc, s, &scope, out)?;
        for c in &step.captures {
            captured.entry(c.name.clone()).or_insert(c.slot);
        }
        steps.push(step);
    }
    Ok(Flow { name: name.to_string(), steps, order, feeder, slots: captured.len() })
}

/// Every capture name of a flow, with the first step that captures it.
fn capturers(r: &RawFlow) -> IndexMap<String, String> {
    let mut by = IndexMap::new();
    for s in &r.step {
        for c in s.get_ref().capture.keys() {
            by.entry(c.clone()).or_insert_with(|| s.get_ref().name.get_ref().clone());
        }
    }
    by
}

/// The order a flow's steps run in, its repeated block written out; checks the step names.
fn run_order(doc: &Doc, flow: &str, r: &RawFlow) -> Res<Vec<usize>> {
    let names: Vec<&str> = r.step.iter().map(|s| s.get_ref().name.get_ref().as_str()).collect();
    for (i, s) in r.step.iter().enumerate() {
        let name = &s.get_ref().name;
        check_name(doc, name.span(), "name", name.get_ref())?;
        if names[..i].contains(&name.get_ref().as_str()) {
            return Err(doc.fail(
                name.span(),
                "name",
                format!("a second step named {} in flow {flow}: names are unique within a flow", name.get_ref()),
            ));
        }
    }
    let n = names.len();
    let Some(rep) = &r.repeat else {
        if n > MAX_FLOW_STEPS {
            return Err(doc.fail(
                r.step[MAX_FLOW_STEPS].span(),
                &format!("flow.{flow}.step"),
                format!("more than {MAX_FLOW_STEPS} steps, the limit of a flow"),
            ));
        }
        return Ok((0..n).collect());
    };
    let (at, rp) = (rep.span(), rep.get_ref());
    let find = |key: &str, step: &str| {
        names.iter().position(|s| *s == step).ok_or_else(|| {
            doc.fail(
                at.clone(),
                &format!("repeat.{key}"),
                format!("no step {step} in flow {flow}{}", hint(step, names.iter().copied())),
            )
        })
    };
    let (first, last) = (find("first", &rp.first)?, find("last", &rp.last)?);
    if first > last {
        let (first, last) = (&rp.first, &rp.last);
        let what =
            format!("step {last} comes before step {first}: first and last are the ends of a block, in file order");
        return Err(doc.fail(at, "repeat", what));
    }
    if !(1..=MAX_FLOW_STEPS as u32).contains(&rp.times) {
        return Err(doc.fail(at, "repeat.times", format!("{}: from 1 to {MAX_FLOW_STEPS}", rp.times)));
    }
    let block = last - first + 1;
    let total = n + block * (rp.times as usize - 1);
    if total > MAX_FLOW_STEPS {
        return Err(doc.fail(
            at,
            "repeat",
            format!("the flow would run {total} steps: more than {MAX_FLOW_STEPS}, the limit of a flow"),
        ));
    }
    let mut order: Vec<usize> = (0..first).collect();
    (0..rp.times).for_each(|_| order.extend(first..=last));
    order.extend(last + 1..n);
    Ok(order)
}

fn step(doc: &Doc, raw: &Spanned<RawStep>, scope: &Scope, out: &mut Targets) -> Res<Step> {
    let r = raw.get_ref();
    let method = match &r.method {
        None => Method::GET,
        Some(m) => Method::from_bytes(m.get_ref().as_bytes()).map_err(|_| {
            doc.fail(m.span(), "method", format!("'{}' is not a method: e.g. GET, POST, PUT", m.get_ref()))
        })?,
    };
    let (mut target, path, url_text) = url(doc, &r.url, method, scope)?;
    target.name = Some(scope.step.into());
    let headers = headers(doc, r, scope, &mut target)?;
    let body = body(doc, raw, scope, &mut target, &mut out.bodies)?;
    let step = Step {
        name: scope.step.to_string(),
        target: out.targets.len(),
        url_text,
        path,
        headers,
        body,
        captures: captures(doc, r, scope)?,
        checks: checks(doc, r, scope)?,
        think: think(doc, r)?,
    };
    out.targets.push(target);
    Ok(step)
}

/// Where the path of a URL starts: the first `/` or `?` after `scheme://`, outside
/// `{{...}}` when `braces`.
fn path_start(url: &str, braces: bool) -> Option<usize> {
    // Bytes, not chars: the bytes looked for are ASCII, so never inside a character.
    let bytes = url.as_bytes();
    let mut i = url.find("://").map_or(0, |at| at + 3);
    while i < bytes.len() {
        if braces && bytes[i..].starts_with(b"{{") {
            i = url[i..].find("}}").map_or(url.len(), |close| i + close + 2);
            continue;
        }
        if matches!(bytes[i], b'/' | b'?') {
            return Some(i);
        }
        i += 1;
    }
    None
}

const FIXED_ORIGIN: &str = "the scheme, host and port must be known when the file is read: \
    only the path and query may hold captures, columns and built-ins (a host goes in [vars])";

/// A step's target (its URL checked with `0` for each run-time variable) and the template
/// of its path when variables fill it.
/// A step's URL: its target (run-time variables as `0`), the path's template when variables
/// fill it, and the URL as shown (constants filled, the others as written).
fn url(doc: &Doc, raw: &Spanned<String>, method: Method, scope: &Scope) -> Res<(Target, Option<Template>, String)> {
    let fail = |what: String| doc.fail(raw.span(), "url", what);
    let text = raw.get_ref();
    let split = path_start(text, true).unwrap_or(text.len());
    let origin = scope.compile(&text[..split], false).map_err(fail)?;
    if origin.tpl.as_literal().is_none() {
        let var = names_in(&text[..split]).into_iter().find(|n| matches!(scope.resolve(n), Ok(Name::Var(_))));
        let var = var.unwrap_or_default();
        return Err(fail(format!("'{{{{{var}}}}}' is read at run time, but {FIXED_ORIGIN}")));
    }
    // A constant may hold the start of the path as well as the host.
    let origin = String::from_utf8_lossy(&origin.sample).into_owned();
    let at = path_start(&origin, false).unwrap_or(origin.len());
    let mut path = Built::lit(&origin.as_bytes()[at..]).then(scope.compile(&text[split..], false).map_err(fail)?);
    if path.sample.first() == Some(&b'?') {
        path = Built::lit(b"/").then(path);
    }
    let checked = format!("{}{}", &origin[..at], String::from_utf8_lossy(&path.sample));
    if checked.contains(crate::plan::ID) {
        return Err(fail(format!(
            "'{{id}}' in '{checked}' is `run`'s URL template; in a flow, write {{{{seq}}}} or {{{{random:N}}}}"
        )));
    }
    let target = Target::new(method, &checked).map_err(fail)?;
    let path = match path.tpl.as_literal() {
        Some(_) => None,
        None => Some(path.tpl),
    };
    Ok((target, path, format!("{origin}{}", &text[split..])))
}

/// Puts a step's constant headers on its target; returns those variables fill.
fn headers(doc: &Doc, r: &RawStep, scope: &Scope, target: &mut Target) -> Res<Vec<(HeaderName, Template)>> {
    let mut filled = Vec::new();
    for (name, value) in &r.headers {
        let fail = |what: String| doc.fail(value.span(), &format!("headers.{name}"), what);
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| fail(format!("'{name}' is not a header name: letters, digits and -, e.g. X-User")))?;
        let built = scope.compile(value.get_ref(), false).map_err(fail)?;
        let checked = HeaderValue::from_bytes(&built.sample)
            .map_err(|_| fail("not a header value: it holds a control character such as a line break".into()))?;
        header_columns(scope, &built.tpl).map_err(fail)?;
        match built.tpl.as_literal() {
            Some(_) => {
                target.headers.append(header, checked);
            }
            None => filled.push((header, built.tpl)),
        }
    }
    Ok(filled)
}

/// The feeder values a header template reads are valid in a header: a line break in a CSV
/// cell would otherwise fail every flow that draws its row, or inject a header.
fn header_columns(scope: &Scope, tpl: &Template) -> Result<(), String> {
    let Some(feeder) = scope.feeder else { return Ok(()) };
    for var in tpl.vars() {
        let Var::Column(c) = var else { continue };
        let bad = feeder.rows.iter().position(|row| row[*c].bytes().any(|b| b.is_ascii_control() && b != b'\t'));
        if let Some(i) = bad {
            return Err(format!(
                "{{{{row.{}}}}} of feeder {} holds a control character (a line break?) in its row {}: a header cannot carry it",
                feeder.columns[*c],
                feeder.name,
                i + 1
            ));
        }
    }
    Ok(())
}

fn has_header(r: &RawStep, name: &str) -> bool {
    r.headers.keys().any(|h| h.eq_ignore_ascii_case(name))
}

/// Sets the step's constant body on its target; returns the template when variables fill
/// it. JSON and form bodies bring their Content-Type.
fn body(
    doc: &Doc,
    raw: &Spanned<RawStep>,
    scope: &Scope,
    target: &mut Target,
    bodies: &mut u64,
) -> Res<Option<Template>> {
    let r = raw.get_ref();
    let given: Vec<(&str, Range<usize>)> = [
        ("body", r.body.as_ref().map(Spanned::span)),
        ("body-file", r.body_file.as_ref().map(Spanned::span)),
        ("json", r.json.as_ref().map(Spanned::span)),
        ("form", r.form.values().next().map(Spanned::span)),
    ]
    .into_iter()
    .filter_map(|(k, at)| Some((k, at?)))
    .collect();
    if let [(first, _), (second, at), ..] = &given[..] {
        let what =
            format!("{first} and {second} given together: a step has at most one of body, body-file, json and form");
        return Err(doc.fail(at.clone(), second, what));
    }
    let content_type = |target: &mut Target, value: &str| {
        if !has_header(r, "content-type") {
            target.headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_str(value).expect("a header value"));
        }
    };
    let (built, at, key) = if let Some(b) = &r.body {
        (scope.compile(b.get_ref(), false).map_err(|e| doc.fail(b.span(), "body", e))?, b.span(), "body")
    } else if let Some(f) = &r.body_file {
        let bytes =
            crate::body::read_body_file(&doc.base.join(f.get_ref())).map_err(|e| doc.fail(f.span(), "body-file", e))?;
        (Built::lit(&bytes), f.span(), "body-file")
    } else if let Some(j) = &r.json {
        content_type(target, "application/json");
        (json_value(j.get_ref(), scope).map_err(|e| doc.fail(j.span(), "json", e))?, j.span(), "json")
    } else if !r.form.is_empty() {
        let (built, boundary) = form(doc, r, scope)?;
        target.headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_str(&multipart_type(&boundary)).expect("a header value"),
        );
        (built, raw.span(), "form")
    } else {
        return Ok(None);
    };
    *bodies += built.sample.len() as u64;
    if *bodies > MAX_BODY {
        return Err(doc.fail(at, key, format!("the bodies of the steps are over {} in all", fmt_limit(MAX_BODY))));
    }
    match built.tpl.as_literal() {
        Some(bytes) => {
            target.body = bytes;
            Ok(None)
        }
        None => Ok(Some(built.tpl)),
    }
}

/// A TOML value as JSON; its strings are templates whose values are escaped for JSON.
fn json_value(v: &toml::Value, scope: &Scope) -> Result<Built, String> {
    let lit = |s: String| Built::lit(s.as_bytes());
    Ok(match v {
        toml::Value::String(s) => Built::lit(b"\"").then(scope.compile(s, true)?).then(Built::lit(b"\"")),
        toml::Value::Integer(i) => lit(i.to_string()),
        toml::Value::Float(f) => {
            lit(serde_json::Number::from_f64(*f).ok_or(format!("{f} is not a JSON number"))?.to_string())
        }
        toml::Value::Boolean(b) => lit(b.to_string()),
        toml::Value::Datetime(d) => lit(serde_json::Value::String(d.to_string()).to_string()),
        toml::Value::Array(items) => {
            let mut out = Built::lit(b"[");
            for (i, item) in items.iter().enumerate() {
                out = out.then(Built::lit(if i == 0 { b"" } else { b"," })).then(json_value(item, scope)?);
            }
            out.then(Built::lit(b"]"))
        }
        toml::Value::Table(t) => {
            let mut out = Built::lit(b"{");
            for (i, (k, item)) in t.iter().enumerate() {
                let key = format!("{}{}:", if i == 0 { "" } else { "," }, serde_json::Value::String(k.clone()));
                out = out.then(lit(key)).then(json_value(item, scope)?);
            }
            out.then(Built::lit(b"}"))
        }
    })
}

/// One part of a form, its data a template (`json`, `text`) or literal bytes (`file`).
struct Part {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    data: Built,
}

/// A multipart form body and its boundary, which occurs in no part as the file gives it.
fn form(doc: &Doc, r: &RawStep, scope: &Scope) -> Res<(Built, String)> {
    if let Some((h, v)) = r.headers.iter().find(|(h, _)| h.eq_ignore_ascii_case("content-type")) {
        return Err(doc.fail(
            v.span(),
            &format!("headers.{h}"),
            "a form sets its own Content-Type, with the boundary between its parts: leave it out",
        ));
    }
    let parts = r.form.iter().map(|(name, p)| part(doc, name, p, scope)).collect::<Res<Vec<_>>>()?;
    let boundary = boundary(parts.iter().map(|p| &p.data.sample[..]));
    let mut out = Built::default();
    for p in parts {
        let head = part_head(&boundary, &p.name, p.filename.as_deref(), p.content_type.as_deref());
        out = out.then(Built::lit(head.as_bytes())).then(p.data).then(Built::lit(b"\r\n"));
    }
    Ok((out.then(Built::lit(multipart_end(&boundary).as_bytes())), boundary))
}

const PART_FORMS: &str = "json = { ... } (application/json), text = \"...\", \
    or file = \"PATH\" with optional type = \"MIME\" and filename = \"NAME\"";

fn part(doc: &Doc, name: &str, raw: &Spanned<RawPart>, scope: &Scope) -> Res<Part> {
    let fail = |what: String| doc.fail(raw.span(), &format!("form.{name}"), what);
    if name.contains('"') {
        return Err(fail("a field name has no '\"'".into()));
    }
    no_controls("the field name", name).map_err(fail)?;
    let p = raw.get_ref();
    for (what, v) in [("the type", &p.content_type), ("the file name", &p.filename)] {
        no_controls(what, v.as_deref().unwrap_or_default()).map_err(fail)?;
    }
    let content_type = p.content_type.clone();
    let (data, filename, content_type) = match (&p.json, &p.text, &p.file) {
        (Some(j), None, None) => {
            (json_value(j, scope).map_err(fail)?, p.filename.clone(), content_type.or(Some("application/json".into())))
        }
        (None, Some(t), None) => (scope.compile(t, false).map_err(fail)?, p.filename.clone(), content_type),
        (None, None, Some(f)) => {
            let bytes = crate::body::read_body_file(&doc.base.join(f)).map_err(fail)?;
            let filename =
                p.filename.clone().or_else(|| Path::new(f).file_name().map(|n| n.to_string_lossy().into_owned()));
            no_controls("the file name", filename.as_deref().unwrap_or_default()).map_err(fail)?;
            let guessed = filename.as_deref().and_then(guess_type).unwrap_or("application/octet-stream");
            (Built::lit(&bytes), filename, content_type.or(Some(guessed.into())))
        }
        _ => return Err(fail(format!("a part is one of {PART_FORMS}"))),
    };
    Ok(Part { name: name.to_string(), filename: filename.as_deref().map(quoted_name), content_type, data })
}

const CAPTURE_FORMS: &str =
    "json-path = \"$.id\", json-pointer = \"/id\", header = \"Location\", regex = 'id=(\\w+)' or status = true";

fn captures(doc: &Doc, r: &RawStep, scope: &Scope) -> Res<Vec<Capture>> {
    let mut out = Vec::new();
    let mut new = 0;
    for (name, raw) in &r.capture {
        let key = format!("capture.{name}");
        check_name(doc, raw.span(), &key, name)?;
        let fail = |what: String| doc.fail(raw.span(), &key, what);
        if reserved(name) {
            return Err(fail(format!("'{name}' is a built-in name; choose another")));
        }
        if scope.vars.contains_key(name) {
            return Err(fail(format!(
                "'{name}' is a [vars] name too; choose another, so {{{{{name}}}}} means one thing"
            )));
        }
        let source = source(raw.get_ref()).map_err(fail)?;
        // A name captured before keeps its slot: the later value replaces the earlier.
        let slot = scope.captured.get(name).copied().unwrap_or_else(|| {
            new += 1;
            scope.captured.len() + new - 1
        });
        // A status is a status, never a credential.
        let public = raw.get_ref().public || matches!(source, Source::Status);
        out.push(Capture { name: name.clone(), slot, source, public });
    }
    Ok(out)
}

fn source(c: &RawCapture) -> Result<Source, String> {
    let given =
        [c.json_path.is_some(), c.json_pointer.is_some(), c.header.is_some(), c.regex.is_some(), c.status.is_some()];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(format!("a capture reads one of {CAPTURE_FORMS}"));
    }
    if let Some(p) = &c.json_path {
        return json_path(p).map(Source::Json);
    }
    if let Some(p) = &c.json_pointer {
        return json_pointer(p).map(Source::Json);
    }
    if let Some(h) = &c.header {
        return header_name(h).map(Source::Header);
    }
    if let Some(re) = &c.regex {
        return regex::bytes::Regex::new(re).map(Source::Regex).map_err(|e| regex_error(re, &e));
    }
    match c.status {
        Some(true) => Ok(Source::Status),
        _ => Err("status = false captures nothing: write status = true".into()),
    }
}

/// A regex's error on one line: its last, which says what is wrong (those before draw
/// where).
fn regex_error(re: &str, e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or_default();
    format!("invalid regex '{re}': {}", last.trim_start_matches("error: "))
}

fn json_path(p: &str) -> Result<JsonAt, String> {
    JsonAt::path(p).map_err(|e| {
        format!(
            "invalid JSONPath '{p}': {}; expected RFC 9535 syntax such as $.albumID or $.items[0].id",
            one_line(&e.to_string())
        )
    })
}

fn json_pointer(p: &str) -> Result<JsonAt, String> {
    JsonAt::pointer(p)
        .ok_or_else(|| format!("invalid JSON Pointer '{p}': it starts with '/', e.g. /albumID or /items/0/id"))
}

fn header_name(h: &str) -> Result<HeaderName, String> {
    HeaderName::from_bytes(h.as_bytes())
        .map_err(|_| format!("'{h}' is not a header name: letters, digits and -, e.g. Location"))
}

fn checks(doc: &Doc, r: &RawStep, scope: &Scope) -> Res<Vec<Check>> {
    let c = &r.check;
    let mut out = Vec::new();
    if let Some(status) = &c.status {
        let mut codes = Vec::new();
        for (at, code) in items(status) {
            if !(100..=599).contains(code) {
                return Err(doc.fail(
                    at,
                    "check.status",
                    format!("{code} is not a status code: from 100 to 599, e.g. 200 or [200, 201]"),
                ));
            }
            codes.push(*code);
        }
        out.push(Check::Status(codes));
    }
    for (at, j) in c.json.as_ref().map(items).unwrap_or_default() {
        let check = json_check(j, scope).map_err(|e| doc.fail(at, "check.json", e))?;
        out.push(check);
    }
    if let Some(b) = &c.body_contains {
        out.push(Check::BodyContains(
            scope.compile(b.get_ref(), false).map_err(|e| doc.fail(b.span(), "check.body-contains", e))?.tpl,
        ));
    }
    for (at, h) in c.header.as_ref().map(items).unwrap_or_default() {
        let fail = |e: String| doc.fail(at.clone(), "check.header", e);
        let name = header_name(&h.name).map_err(fail)?;
        out.push(Check::Header(name, expect(h.equals.as_ref(), h.matches.as_deref(), h.present, scope).map_err(fail)?));
    }
    Ok(out)
}

fn json_check(j: &RawJsonCheck, scope: &Scope) -> Result<Check, String> {
    let at = match (&j.path, &j.pointer) {
        (Some(p), None) => json_path(p)?,
        (None, Some(p)) => json_pointer(p)?,
        _ => return Err("a JSON check reads one of path = \"$.user\" (JSONPath) or pointer = \"/user\"".into()),
    };
    Ok(Check::Json(at, expect(j.equals.as_ref(), j.matches.as_deref(), j.present, scope)?))
}

fn expect(
    equals: Option<&toml::Value>,
    matches: Option<&str>,
    present: Option<bool>,
    scope: &Scope,
) -> Result<Expect, String> {
    match (equals, matches, present) {
        (Some(v), None, None) => {
            let text = match v {
                toml::Value::String(s) => return Ok(Expect::Equals(scope.compile(s, false)?.tpl)),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => {
                    serde_json::Number::from_f64(*f).ok_or(format!("{f} is not a JSON number"))?.to_string()
                }
                toml::Value::Boolean(b) => b.to_string(),
                other => return Err(format!("equals = {other}: expected text, a number or true/false")),
            };
            Ok(Expect::Equals(Template::literal(text.as_bytes())))
        }
        (None, Some(re), None) => regex::Regex::new(re).map(Expect::Matches).map_err(|e| regex_error(re, &e)),
        (None, None, Some(true)) => Ok(Expect::Present),
        (None, None, Some(false)) => Err("present = false: write present = true, or leave the check out".into()),
        _ => Err("a check expects one of equals = \"...\", matches = \"REGEX\" or present = true".into()),
    }
}

/// `think = "100ms"` or `"100ms..300ms"` (uniform between the two).
fn think(doc: &Doc, r: &RawStep) -> Res<Option<(Duration, Duration)>> {
    let Some(t) = &r.think else { return Ok(None) };
    let fail = |e: String| doc.fail(t.span(), "think", e);
    let (lo, hi) = t.get_ref().split_once("..").unwrap_or((t.get_ref(), t.get_ref()));
    let (lo, hi) = (lo.parse::<Dur>().map_err(fail)?.0, hi.parse::<Dur>().map_err(fail)?.0);
    if lo > hi {
        return Err(fail(format!(
            "'{}' ends before it starts; expected a pause such as \"100ms\" or \"100ms..300ms\"",
            t.get_ref()
        )));
    }
    Ok(Some((lo, hi)))
}

// ---------------------------------------------------------------------------------------
// Groups.

fn groups(doc: &Doc, raw: &RawFile, flows: &[Flow], default_load: &Load) -> Res<Vec<Group>> {
    if raw.group.is_empty() {
        if let Some((name, f)) = raw.flow.get_index(1) {
            let what = "several flows and no [group.NAME]: add a group for each flow to run, \
                e.g. [group.writers] with flow = \"album\" and concurrency = 10";
            return Err(doc.fail(f.span(), &format!("flow.{name}"), what));
        }
        let only = &flows[0];
        let load = default_load.clone();
        return Ok(vec![Group {
            name: only.name.clone(),
            flow: 0,
            load,
            start: Duration::ZERO,
            duration: None,
            ramp: Duration::ZERO,
            own_load: false,
            iterations: None,
        }]);
    }
    if let Some((name, g)) = raw.group.get_index(MAX_GROUPS) {
        return Err(doc.fail(g.span(), &format!("group.{name}"), format!("more than {MAX_GROUPS} groups, the limit")));
    }
    raw.group.iter().map(|(name, g)| group(doc, name, g, flows, default_load)).collect()
}

fn group(doc: &Doc, name: &str, raw: &Spanned<RawGroup>, flows: &[Flow], default_load: &Load) -> Res<Group> {
    let key = |k: &str| format!("group.{name}.{k}");
    check_name(doc, raw.span(), &format!("group.{name}"), name)?;
    let g = raw.get_ref();
    let flow_names = || flows.iter().map(|f| f.name.as_str());
    let flow = match &g.flow {
        Some(f) => flows.iter().position(|x| &x.name == f.get_ref()).ok_or_else(|| {
            doc.fail(f.span(), &key("flow"), format!("no flow {}{}", f.get_ref(), hint(f.get_ref(), flow_names())))
        })?,
        None if flows.len() == 1 => 0,
        None => {
            let what = format!(
                "several flows: say which this group runs with flow = \"NAME\" ({})",
                list(&flow_names().collect::<Vec<_>>())
            );
            return Err(doc.fail(raw.span(), &format!("group.{name}"), what));
        }
    };
    let dur = |v: &Option<Spanned<String>>, k: &str| -> Res<Option<Duration>> {
        v.as_ref()
            .map(|d| d.get_ref().parse::<Dur>().map(|d| d.0).map_err(|e| doc.fail(d.span(), &key(k), e)))
            .transpose()
    };
    let (start, duration) = (dur(&g.start, "start")?.unwrap_or_default(), dur(&g.duration, "duration")?);
    let think_time = dur(&g.think_time, "think-time")?;
    let ramp = dur(&g.ramp, "ramp")?;
    let load = group_load(doc, name, g, duration, think_time, default_load)?;
    if let (Some(r), Load::Open { .. }) = (&g.ramp, &load) {
        let what = "ramp starts workers over time, for closed loop (concurrency); \
            an open-loop group ramps its rate: rate = \"10:100\"";
        return Err(doc.fail(r.span(), &key("ramp"), what));
    }
    let iterations = match &g.iterations {
        None => None,
        Some(n) if matches!(load, Load::Open { .. }) => {
            let what = "iterations counts each closed-loop worker's flows (concurrency); \
                an open-loop group starts flows at its rate";
            return Err(doc.fail(n.span(), &key("iterations"), what));
        }
        Some(n) => match u64::try_from(*n.get_ref()) {
            Ok(i @ 1..=MAX_ITERATIONS) => Some(i),
            _ => {
                let what = format!("{}: flows per worker, from 1 to {MAX_ITERATIONS}", n.get_ref());
                return Err(doc.fail(n.span(), &key("iterations"), what));
            }
        },
    };
    let own_load = g.rate.is_some() || g.concurrency.is_some();
    let ramp = ramp.unwrap_or_default();
    Ok(Group { name: name.to_string(), flow, load, start, duration, ramp, own_load, iterations })
}

/// A group's load: closed loop with `concurrency`, open loop with `rate`, else the run's
/// load flags (with the group's think time or in-flight bound).
fn group_load(
    doc: &Doc,
    name: &str,
    g: &RawGroup,
    duration: Option<Duration>,
    think_time: Option<Duration>,
    default_load: &Load,
) -> Res<Load> {
    let key = |k: &str| format!("group.{name}.{k}");
    let workers = |v: &Spanned<u32>, k: &str| match (1..=MAX_WORKERS).contains(v.get_ref()) {
        true => Ok(*v.get_ref()),
        false => Err(doc.fail(v.span(), &key(k), format!("{}: from 1 to {MAX_WORKERS}", v.get_ref()))),
    };
    let open_only = |v: &Spanned<u32>| doc.fail(v.span(), &key("max-in-flight"), OPEN_ONLY);
    let closed_only = |v: &Spanned<String>| doc.fail(v.span(), &key("think-time"), CLOSED_ONLY);
    let max_in_flight = g.max_in_flight.as_ref().map(|m| workers(m, "max-in-flight")).transpose()?;
    match (&g.rate, &g.concurrency, default_load) {
        (Some(_), Some(c), _) => Err(doc.fail(c.span(), &key("concurrency"), BOTH_LOADS)),
        (Some(_), None, _) | (None, None, Load::Open { .. }) if g.think_time.is_some() => {
            Err(closed_only(g.think_time.as_ref().expect("given")))
        }
        (None, Some(_), _) | (None, None, Load::Closed { .. }) if g.max_in_flight.is_some() => {
            Err(open_only(g.max_in_flight.as_ref().expect("given")))
        }
        (Some(r), None, _) => {
            let fail = |e: String| doc.fail(r.span(), &key("rate"), e);
            let rate = rate_spec(r.get_ref()).map_err(fail)?;
            if !matches!(rate, RateSpec::Constant(_)) && duration.is_none() {
                return Err(fail("a ramp or steps of rates run over the group's duration: give duration too".into()));
            }
            LoadFlags { rate: Some(rate), max_in_flight, duration, ..Default::default() }.load().map_err(fail)
        }
        (None, Some(c), _) => {
            let concurrency = Some(Levels(vec![workers(c, "concurrency")?]));
            let flags = LoadFlags { concurrency, think_time, ..Default::default() };
            flags.load().map_err(|e| doc.fail(c.span(), &key("concurrency"), e))
        }
        (None, None, Load::Open { pacer, max_in_flight: run }) => {
            Ok(Load::Open { pacer: pacer.clone(), max_in_flight: max_in_flight.map_or(*run, |m| m as usize) })
        }
        (None, None, Load::Closed { concurrency, think_time: run }) => {
            Ok(Load::Closed { concurrency: *concurrency, think_time: think_time.unwrap_or(*run) })
        }
    }
}

const BOTH_LOADS: &str = "concurrency and rate given together: a group is closed loop (concurrency = \
    workers) or open loop (rate = flows started per second)";
const OPEN_ONLY: &str = "is for open loop (rate); in closed loop the workers are what is in flight";
const CLOSED_ONLY: &str = "is for closed loop (concurrency): an open-loop group's flows start on its schedule";

/// `rate = 50`, `rate = 0.5` or `rate = "10:100"`, as `--rate` reads them.
fn rate_spec(v: &toml::Value) -> Result<RateSpec, String> {
    match v {
        toml::Value::String(s) => s.parse(),
        toml::Value::Integer(i) => i.to_string().parse(),
        toml::Value::Float(f) => f.to_string().parse(),
        other => Err(format!("{other} is not a rate: e.g. 50, \"50/s\" or \"10:100\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{Response, Verdict, CHECK_KINDS};
    use http::HeaderMap;
    use std::path::PathBuf;

    const IMAGE: &[u8] = b"\xff\xd8\x00{{row.user}}\r\n--not-a-boundary\r\n\x01\xfe";

    /// A folder with the files the album scenario names.
    fn fixtures() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("users.csv"), "user,caption\nann,first\nbob,\"say \"\"hi\"\"\"\n").unwrap();
        std::fs::create_dir(dir.path().join("img")).unwrap();
        std::fs::write(dir.path().join("img/cat.jpg"), IMAGE).unwrap();
        dir
    }

    fn closed(concurrency: usize) -> Load {
        Load::Closed { concurrency, think_time: Duration::ZERO }
    }

    fn parse_in(dir: &Path, text: &str) -> Res<(Scenario, Vec<Target>)> {
        parse(text, "s.toml", dir, &[], &closed(4))
    }

    const ALBUM: &str = r#"name = "album study"

[vars]
host = "127.0.0.1:8080"

[feeder.users]
file = "users.csv"

[flow.album]
feeder = "users"

[[flow.album.step]]
name = "post-album"
method = "POST"
url = "http://{{host}}/albums"
headers = { "X-User" = "{{row.user}}", "X-Client" = "barrage" }
form.profile = { json = { user = "{{row.user}}", caption = "{{row.caption}}", n = 3 } }
form.image = { file = "img/cat.jpg", type = "image/jpeg" }
capture.albumID = { json-path = "$.albumID" }
capture.size = { json-pointer = "/imageSize" }
check.status = [200, 201]
think = "100ms..300ms"

[[flow.album.step]]
name = "get-album"
url = "http://{{host}}/albums/{{albumID}}?v={{seq}}"
check.status = 200
check.json = [
  { path = "$.user", equals = "{{row.user}}" },
  { pointer = "/n", matches = "^[0-9]+$" },
]
check.body-contains = "{{albumID}}"
check.header = { name = "Content-Type", matches = "json" }
capture.etag = { header = "ETag" }

[group.writers]
flow = "album"
concurrency = 10
ramp = "5s"
think-time = "1s"

[group.readers]
rate = 50
max-in-flight = 200
start = "20s"
duration = "30s"
"#;

    #[test]
    fn the_album_file_parses_into_its_steps_captures_checks_and_groups() {
        let dir = fixtures();
        let (s, targets) = parse_in(dir.path(), ALBUM).unwrap();
        assert_eq!(s.name, "album study");
        let flow = &s.flows[0];
        let names: Vec<&str> = flow.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            (names, &flow.order[..], flow.feeder, flow.slots),
            (vec!["post-album", "get-album"], &[0, 1][..], Some(0), 3)
        );
        // One target per step, named after it; the constant parts on the target.
        assert_eq!(targets.len(), 2);
        let (post, get) = (&targets[0], &targets[1]);
        assert_eq!(
            (post.method.as_str(), post.url.to_string().as_str(), post.name.as_deref()),
            ("POST", "http://127.0.0.1:8080/albums", Some("post-album"))
        );
        assert_eq!(post.headers["x-client"], "barrage");
        assert!(post.headers.get("x-user").is_none(), "a header variables fill is the step's, not the target's");
        assert!(post.headers["content-type"].to_str().unwrap().starts_with("multipart/form-data; boundary="));
        assert!(post.body.is_empty() && flow.steps[0].body.is_some());
        assert_eq!(flow.steps[0].headers[0].0.as_str(), "x-user");
        assert!(flow.steps[0].path.is_none(), "a constant path stays on the target");
        assert_eq!((get.method.as_str(), get.url.to_string().as_str()), ("GET", "http://127.0.0.1:8080/albums/0?v=0"));
        assert_eq!(flow.steps[1].target, 1);
        // Captures: slots per name, in the order first captured.
        let caps: Vec<(&str, usize)> =
            flow.steps.iter().flat_map(|s| &s.captures).map(|c| (c.name.as_str(), c.slot)).collect();
        assert_eq!(caps, [("albumID", 0), ("size", 1), ("etag", 2)]);
        assert!(matches!(&flow.steps[0].captures[0].source, Source::Json(at) if at.to_string() == "$.albumID"));
        assert!(matches!(&flow.steps[0].captures[1].source, Source::Json(at) if at.to_string() == "/imageSize"));
        assert!(matches!(&flow.steps[1].captures[0].source, Source::Header(h) if h == "etag"));
        let kinds = |i: usize| flow.steps[i].checks.iter().map(|c| CHECK_KINDS[c.kind()]).collect::<Vec<_>>();
        assert_eq!((kinds(0), kinds(1)), (vec!["status"], vec!["status", "json", "json", "body", "header"]));
        assert!(matches!(&flow.steps[1].checks[0], Check::Status(c) if c == &[200]));
        assert_eq!(flow.steps[0].think, Some((Duration::from_millis(100), Duration::from_millis(300))));
        assert_eq!(flow.steps[1].think, None);
        // Groups: their own loads, starts and durations.
        let g = &s.groups;
        assert_eq!(
            (g[0].name.as_str(), g[0].flow, &g[0].load, g[0].ramp),
            (
                "writers",
                0,
                &Load::Closed { concurrency: 10, think_time: Duration::from_secs(1) },
                Duration::from_secs(5)
            )
        );
        assert_eq!((g[0].start, g[0].duration), (Duration::ZERO, None));
        assert_eq!(g[1].load, Load::Open { pacer: Pacer::Constant { rate: 50.0 }, max_in_flight: 200 });
        assert_eq!((g[1].start, g[1].duration), (Duration::from_secs(20), Some(Duration::from_secs(30))));
        assert_eq!(overall_load(&s), closed(210), "an open group counts its in-flight bound among workers");
        assert_eq!(span(&s), None, "writers run to the end of the run");
        // Variables fill from a flow's state: the feeder's first row, a capture, the counter.
        let mut st = s.start_flow(0, 0, 0, 1).unwrap();
        st.captures[0] = Some("a-1".into());
        assert_eq!(flow.steps[1].path.as_ref().unwrap().fill_string(&mut st), "/albums/a-1?v=0");
        assert_eq!(flow.steps[0].headers[0].1.fill_string(&mut st), "ann");
    }

    /// The parts of a multipart body, by name: (part headers, bytes).
    fn parts(body: &[u8], boundary: &str) -> IndexMap<String, (String, Vec<u8>)> {
        let text = body.to_vec();
        let sep = format!("--{boundary}");
        let mut out = IndexMap::new();
        let mut rest = &text[..];
        let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
        assert!(rest.starts_with(sep.as_bytes()));
        assert!(body.ends_with(format!("--{boundary}--\r\n").as_bytes()));
        while let Some(start) = find(rest, sep.as_bytes()) {
            rest = &rest[start + sep.len()..];
            if rest.starts_with(b"--") {
                break;
            }
            let head_end = find(rest, b"\r\n\r\n").unwrap();
            let head = String::from_utf8(rest[2..head_end].to_vec()).unwrap();
            let data_end = find(rest, format!("\r\n{sep}").as_bytes()).unwrap();
            let name = head.split("name=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
            out.insert(name, (head, rest[head_end + 4..data_end].to_vec()));
            rest = &rest[data_end + 2..];
        }
        out
    }

    #[test]
    fn a_multipart_body_fills_its_json_part_and_keeps_the_image_bytes() {
        let dir = fixtures();
        let (s, targets) = parse_in(dir.path(), ALBUM).unwrap();
        let ctype = targets[0].headers["content-type"].to_str().unwrap().to_string();
        let boundary = ctype.strip_prefix("multipart/form-data; boundary=").unwrap();
        let body = s.flows[0].steps[0].body.as_ref().unwrap();
        for (row, user, caption) in [(0, "ann", "first"), (1, "bob", "say \"hi\"")] {
            let mut st = s.start_flow(0, 0, row, 1).unwrap();
            let mut out = Vec::new();
            body.fill(&mut st, &mut out);
            let parts = parts(&out, boundary);
            assert_eq!(parts.keys().collect::<Vec<_>>(), ["profile", "image"], "in file order");
            let (head, json) = &parts["profile"];
            assert!(head.ends_with("Content-Type: application/json"), "{head}");
            let json: serde_json::Value = serde_json::from_slice(json).unwrap();
            assert_eq!(json, serde_json::json!({ "user": user, "caption": caption, "n": 3 }), "escaped as JSON");
            let (head, image) = &parts["image"];
            assert_eq!(
                head,
                "Content-Disposition: form-data; name=\"image\"; filename=\"cat.jpg\"\r\nContent-Type: image/jpeg"
            );
            assert_eq!(image, IMAGE, "a file part's bytes go as they are, {{...}} included");
        }
    }

    #[test]
    fn a_repeat_runs_its_block_and_later_steps_of_the_block_see_its_captures() {
        let step = |name: &str, url: &str, capture: &str| {
            format!("[[flow.f.step]]\nname = \"{name}\"\nurl = \"http://h:1/{url}\"\n{capture}\n")
        };
        let text = [
            "[flow.f]\nrepeat = { first = \"b\", last = \"c\", times = 3 }\n".to_string(),
            step("a", "a", ""),
            step("b", "b", "capture.x = { status = true }"),
            step("c", "c/{{x}}", ""),
            step("d", "d/{{x}}", ""),
        ]
        .concat();
        let (s, targets) = parse_in(Path::new("."), &text).unwrap();
        assert_eq!(s.flows[0].order, [0, 1, 2, 1, 2, 1, 2, 3]);
        assert_eq!(targets.len(), 4, "a target per step written, not per run");
        assert_eq!(s.groups[0].name, "f");
        assert_eq!(s.groups[0].load, closed(4), "the implicit group runs under the run's load");
        // Within the block, a step sees only what steps before it capture.
        let bad = text
            .replace("c/{{x}}", "c")
            .replace("b\"\nurl = \"http://h:1/b\"", "b\"\nurl = \"http://h:1/b/{{y}}\"")
            .replace("d/{{x}}\"\n", "d/{{x}}\"\ncapture.y = { status = true }\n");
        let e = parse_in(Path::new("."), &bad).unwrap_err().to_string();
        assert!(e.contains("url: '{{y}}' is not captured before step b: step d captures it, later in the flow"), "{e}");
        for (times, want) in
            [("0", "repeat.times: 0: from 1 to 1000"), ("500", "the flow would run 1002 steps: more than 1000")]
        {
            let e = parse_in(Path::new("."), &text.replace("times = 3", &format!("times = {times}"))).unwrap_err();
            assert_eq!((e.line, e.message.contains(want)), (2, true), "{e}");
        }
        let e = parse_in(Path::new("."), &text.replace("first = \"b\", last = \"c\"", "first = \"c\", last = \"b\""))
            .unwrap_err();
        assert!(e.to_string().starts_with("s.toml:2: repeat: step b comes before step c"), "{e}");
    }

    #[test]
    fn a_captured_value_is_concealed_unless_its_capture_is_public() {
        let text = "[[flow.f.step]]\nname = \"login\"\nurl = \"http://h:1/login\"\ncapture.tok = { json-path = \"$.t\" }\ncapture.id = { json-path = \"$.id\", public = true }\ncapture.code = { status = true }\n\n[[flow.f.step]]\nname = \"get\"\nurl = \"http://h:1/x/{{id}}/{{tok}}?sig={{tok}}&c={{code}}\"\n";
        let (s, _) = parse_in(Path::new("."), text).unwrap();
        let flow = &s.flows[0];
        let public: Vec<bool> = flow.steps[0].captures.iter().map(|c| c.public).collect();
        assert_eq!(public, [false, true, true], "a status is never a secret");
        let answer = br#"{"t":"S3 CRET\"","id":"7"}"#;
        let response = Response { status: Some(200), headers: &HeaderMap::new(), body: answer, until: None };
        let mut st = s.start_flow(0, 0, 0, 1).unwrap();
        assert_eq!(flow.steps[0].judge(&response, &mut st), Verdict::Ok);
        let path = crate::flow::encode_path(&flow.steps[1].path.as_ref().unwrap().fill_string(&mut st));
        assert_eq!(path, "/x/7/S3%20CRET%22?sig=S3%20CRET%22&c=200", "sent as captured");
        assert_eq!(st.conceal(&path), "/x/7/<redacted>?sig=<redacted>&c=200", "as the request log shows it");
        let quoted = String::from_utf8_lossy(answer);
        assert_eq!(st.conceal(&quoted), r#"{"t":"<redacted>","id":"7"}"#, "an answer quoted, JSON-escaped");
        assert_eq!(st.conceal("nothing captured here"), "nothing captured here");
    }

    /// The album flow's two steps, small, for the table of errors.
    const BASE: &str = "[vars]\nhost = \"h:1\"\n\n[flow.album]\n\n[[flow.album.step]]\nname = \"post\"\nurl = \"http://{{host}}/x\"\ncapture.albumID = { json-path = \"$.id\" }\n\n[[flow.album.step]]\nname = \"get\"\nurl = \"http://{{host}}/x/{{albumID}}\"\n";

    #[test]
    fn errors_name_the_file_the_line_and_the_key() {
        assert!(parse_in(Path::new("."), BASE).is_ok());
        let r = |from: &str, to: &str| BASE.replace(from, to);
        let with = |more: &str| format!("{BASE}{more}");
        let table = [
            (with("bogus = 1\n"), "s.toml:14: unknown field `bogus`, expected one of `name`, `method`, `url`"),
            (r("{{albumID}}\"", "{{albumId}}\""), "s.toml:13: url: '{{albumId}}' is not captured before step get (did you mean albumID?)"),
            (r("{{albumID}}\"", "{{zzz}}\""), "s.toml:13: url: '{{zzz}}' is not captured before step get, nor is it a [vars] name or a built-in (known here: albumID, host, flow.iteration"),
            (r("/x\"\ncapture", "/x/{{albumID}}\"\ncapture"), "s.toml:8: url: '{{albumID}}' is not captured before step post: a step's captures are for the steps after it"),
            (r("http://{{host}}/x/", "http://{{albumID}}/x/"), "s.toml:13: url: '{{albumID}}' is read at run time, but the scheme, host and port must be known"),
            (r("$.id", "$.["), "s.toml:9: capture.albumID: invalid JSONPath '$.[': "),
            (r("json-path = \"$.id\"", "regex = 'id=('"), "s.toml:9: capture.albumID: invalid regex 'id=(': unclosed group"),
            (r("json-path = \"$.id\"", "json-path = \"$.id\", status = true"), "s.toml:9: capture.albumID: a capture reads one of json-path"),
            (r("json-path = \"$.id\"", "json-pointer = \"id\""), "s.toml:9: capture.albumID: invalid JSON Pointer 'id': it starts with '/'"),
            (r("capture.albumID", "capture.host"), "s.toml:9: capture.host: 'host' is a [vars] name too"),
            (with("check.json = [{ path = \"$.a\", matches = \"(\" }]\n"), "s.toml:14: check.json: invalid regex '(': unclosed group"),
            (with("check.json = [\n  { path = \"$.a\", present = true },\n  { path = \"$.a\" },\n]\n"), "s.toml:16: check.json: a check expects one of equals"),
            (with("check.header = { name = \"ETag\", present = false }\n"), "s.toml:14: check.header: present = false: write present = true"),
            (with("check.status = [200, 700]\n"), "s.toml:14: check.status: 700 is not a status code"),
            (with("check.status = \"200\"\n"), "s.toml:14: check.status: invalid type: string \"200\", expected one value or a list of them"),
            (with("think = \"3s..1s\"\n"), "s.toml:14: think: '3s..1s' ends before it starts"),
            (with("think = \"soon\"\n"), "s.toml:14: think: invalid duration 'soon'"),
            (with("body = \"a\"\njson = { a = 1 }\n"), "s.toml:15: json: body and json given together: a step has at most one of body, body-file, json and form"),
            (with("body-file = \"nope.bin\"\n"), "s.toml:14: body-file: cannot read ./nope.bin"),
            (with("form.f = { text = \"a\" }\nheaders = { Content-Type = \"x\" }\n"), "s.toml:15: headers.Content-Type: a form sets its own Content-Type"),
            (with("form.f = { text = \"a\", file = \"b\" }\n"), "s.toml:14: form.f: a part is one of json = "),
            (with("headers = { \"X A\" = \"1\" }\n"), "s.toml:14: headers.X A: 'X A' is not a header name"),
            (with("method = \"G T\"\n"), "s.toml:14: method: 'G T' is not a method"),
            (with("body = \"{{random:0}}\"\n"), "s.toml:14: body: '{{random:0}}': N of {{random:N}} is a whole number from 1"),
            (with("body = \"{{row.user}}\"\n"), "s.toml:14: body: '{{row.user}}': flow album has no feeder"),
            (r("name = \"get\"", "name = \"post\""), "s.toml:12: name: a second step named post in flow album"),
            (r("name = \"get\"", "name = \"get/1\""), "s.toml:12: name: 'get/1' is not a name"),
            (r("/x/{{albumID}}", "/x/{id}"), "s.toml:13: url: '{id}' in 'http://h:1/x/{id}' is `run`'s URL template"),
            (r("http://{{host}}/x\"", "ftp://{{host}}/x\""), "s.toml:8: url: invalid URL 'ftp://h:1/x': the scheme must be http or https"),
            (r("[flow.album]\n", "[flow.album]\nfeeder = \"users\"\n"), "s.toml:5: feeder: no [feeder.users] (there are none)"),
            (r("[flow.album]\n", "[flow.album]\nrepeat = { first = \"gett\", last = \"get\", times = 2 }\n"), "s.toml:5: repeat.first: no step gett in flow album (did you mean get?)"),
            (with("[group.g]\nflow = \"albums\"\n"), "s.toml:15: group.g.flow: no flow albums (did you mean album?)"),
            (with("[[flow.other.step]]\nname = \"x\"\nurl = \"http://h:1/\"\n"), "s.toml:14: flow.other: several flows and no [group.NAME]"),
            (with("[[flow.other.step]]\nname = \"x\"\nurl = \"http://h:1/\"\n[group.g]\nrate = 5\n"), "s.toml:17: group.g: several flows: say which this group runs with flow = \"NAME\" (album, other)"),
            (with("[group.g]\nrate = 5\nconcurrency = 2\n"), "s.toml:16: group.g.concurrency: concurrency and rate given together"),
            (with("[group.g]\nrate = 5\nramp = \"1s\"\n"), "s.toml:16: group.g.ramp: ramp starts workers over time"),
            (with("[group.g]\nrate = 5\nthink-time = \"1s\"\n"), "s.toml:16: group.g.think-time: is for closed loop"),
            (with("[group.g]\nconcurrency = 5\nmax-in-flight = 9\n"), "s.toml:16: group.g.max-in-flight: is for open loop"),
            (with("[group.g]\nconcurrency = 0\n"), "s.toml:15: group.g.concurrency: 0: from 1 to 1000000"),
            (with("[group.g]\nrate = \"10:100\"\n"), "s.toml:15: group.g.rate: a ramp or steps of rates run over the group's duration"),
            (with("[group.g]\nrate = \"fast\"\n"), "s.toml:15: group.g.rate: invalid rate 'fast': expected"),
            (with("[group.g]\nrate = 5\nstart = \"later\"\n"), "s.toml:16: group.g.start: invalid duration 'later'"),
            (with("[group.g]\nrate = 5\nduraton = \"1s\"\n"), "s.toml:16: unknown field `duraton`, expected one of"),
            (r("host = \"h:1\"", "seq = \"1\""), "s.toml:2: vars.seq: 'seq' is a built-in name"),
            (r("host = \"h:1\"", "host = [1]"), "s.toml:2: vars.host: [1] is not text or a number"),
            (r("/x\"\ncapture", "/x\\n\"\ncapture"), "s.toml:8: url: invalid URL 'http://h:1/x\\n': not a URL"),
            (r("url = \"http://{{host}}/x\"", "url = 3"), "s.toml:8: url: invalid type: integer `3`, expected a string"),
            (r("name = \"get\"\n", ""), "s.toml:11: flow.album.step: missing field `name`"),
            ("[vars]\n".into(), "s.toml: no flows"),
            ("[flow.a]\n".into(), "s.toml:1: flow.a: no steps"),
        ];
        for (text, want) in table {
            let e = parse_in(Path::new("."), &text).unwrap_err().to_string();
            assert!(e.starts_with(want) && !e.contains('\n'), "{text}\nwant: {want}\ngot:  {e}");
        }
    }

    #[test]
    fn feeder_errors_name_the_csv_file_and_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("users.csv");
        let text = "[feeder.users]\nfile = \"users.csv\"\n[flow.a]\nfeeder = \"users\"\n[[flow.a.step]]\nname = \"s\"\nurl = \"http://h:1/{{row.user}}\"\n";
        let table = [
            (
                &b"user,caption\nann,a\nbob\n"[..],
                format!("{}:3: a row of 1 fields where the header row has 2", csv.display()),
            ),
            (b"user,user\nann,a\n", format!("{}:1: column 'user' is named twice", csv.display())),
            (b"user\n", format!("{}: no rows after the header row", csv.display())),
            (b"user,\nann,a\n", format!("{}:1: the header row names every column", csv.display())),
            (b"user,caption\nann,\xff\n", format!("{}:2: not UTF-8 text", csv.display())),
            (
                b"usr,caption\nann,a\n",
                "s.toml:7: url: '{{row.user}}': feeder users has no column user (did you mean usr?)".into(),
            ),
        ];
        for (rows, want) in table {
            std::fs::write(&csv, rows).unwrap();
            let e = parse_in(dir.path(), text).unwrap_err().to_string();
            assert!(e.starts_with(&want), "{:?}\nwant: {want}\ngot:  {e}", String::from_utf8_lossy(rows));
        }
        // A line break in a cell a header reads is refused when the file is read.
        std::fs::write(&csv, "user\nann\n\"evil\r\nX-Injected: 1\"\n").unwrap();
        let in_header = text.replace(
            "url = \"http://h:1/{{row.user}}\"",
            "url = \"http://h:1/\"\nheaders = { X-User = \"{{row.user}}\" }",
        );
        let e = parse_in(dir.path(), &in_header).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:8: headers.X-User: {{row.user}} of feeder users holds a control character (a line break?) in its row 2"), "{e}");
        assert!(parse_in(dir.path(), text).is_ok(), "in a path it is percent-encoded");
        // A long list of what there is is cut short.
        let wide: Vec<String> = (0..30).map(|i| format!("col{i}")).collect();
        std::fs::write(&csv, format!("{}\n{}\n", wide.join(","), wide.join(","))).unwrap();
        let e = parse_in(dir.path(), text).unwrap_err().to_string();
        assert!(e.ends_with("has no column user (col0, col1, col2, col3, col4, col5, col6, col7, col8, col9, col10, col11, col12, col13, col14, col15, col16, col17, col18, col19, and 10 more)"), "{e}");
        std::fs::remove_file(&csv).unwrap();
        let e = parse_in(dir.path(), text).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:2: file: cannot read "), "{e}");
        let e = parse_in(dir.path(), &text.replace("[flow.a]", "order = \"random\"\non-end = \"stop\"\n[flow.a]"))
            .unwrap_err();
        assert!(e.to_string().starts_with("s.toml:4: on-end: goes with order = \"sequential\""), "{e}");
        let e = parse_in(dir.path(), &text.replace("[flow.a]", "order = \"shuffle\"\n[flow.a]")).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "s.toml:3: order: unknown variant `shuffle`, expected one of `sequential`, `random`, `per-worker`"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_feeder_of_a_thousand_rows_hands_each_out_once_per_pass() {
        let dir = tempfile::tempdir().unwrap();
        let rows: String = (0..1000).map(|i| format!("{i},u{i}\n")).collect();
        std::fs::write(dir.path().join("ids.csv"), format!("id,user\n{rows}")).unwrap();
        let text = "[feeder.ids]\nfile = \"ids.csv\"\non-end = \"stop\"\n[flow.a]\nfeeder = \"ids\"\n[[flow.a.step]]\nname = \"s\"\nurl = \"http://h:1/{{row.id}}\"\n";
        let (s, _) = parse_in(dir.path(), text).unwrap();
        assert_eq!(
            (s.feeders[0].columns.clone(), s.feeders[0].rows.len()),
            (vec!["id".to_string(), "user".into()], 1000)
        );
        let mut seen: Vec<String> =
            (0..1000).map(|i| s.start_flow(0, i % 7, i, 1).unwrap().row.unwrap()[0].clone()).collect();
        seen.sort_by_key(|id| id.parse::<u32>().unwrap());
        assert_eq!(seen, (0..1000).map(|i| i.to_string()).collect::<Vec<_>>());
        assert!(s.start_flow(0, 0, 1000, 1).is_none(), "on-end = \"stop\": no row after the last");
    }

    #[test]
    fn constants_fill_at_load_and_json_bodies_escape_their_values() {
        let text = "[vars]\nhost = \"h:1/api\"\nuser = \"ann\"\n[[flow.a.step]]\nname = \"s\"\nmethod = \"PUT\"\nurl = \"http://{{host}}/u/{{user}}/{{flow.worker}}\"\nheaders = { X-N = \"{{flow.id}}\" }\njson = { name = \"{{user}}\", at = \"{{seq}}\", list = [1, 2.5, true] }\n";
        let vars = [("user".to_string(), "b\"ob".to_string())];
        let (s, t) = parse(text, "dir/s.toml", Path::new("."), &vars, &closed(1)).unwrap();
        assert_eq!(s.name, "s", "named after the file's stem");
        assert_eq!(t[0].url.to_string(), "http://h:1/api/u/b%22ob/0".replace("%22", "\""));
        assert_eq!(t[0].headers["content-type"], "application/json");
        let step = &s.flows[0].steps[0];
        let mut st = s.start_flow(0, 7, 0, 1).unwrap();
        assert_eq!(
            step.path.as_ref().unwrap().fill_string(&mut st),
            "/api/u/b\"ob/7",
            "a constant's path part stays in the path"
        );
        let body = step.body.as_ref().unwrap().fill_string(&mut st);
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(json, serde_json::json!({ "name": "b\"ob", "at": "0", "list": [1, 2.5, true] }));
        // Constant bodies and headers stay on the target.
        let constant = text.replace("{{seq}}", "x").replace("{{flow.id}}", "1").replace("/{{flow.worker}}", "");
        let (s, t) = parse(&constant, "s.toml", Path::new("."), &[], &closed(1)).unwrap();
        let step = &s.flows[0].steps[0];
        assert!(step.body.is_none() && step.headers.is_empty() && step.path.is_none());
        assert_eq!(serde_json::from_slice::<serde_json::Value>(&t[0].body).unwrap()["name"], "ann");
        assert_eq!(t[0].headers["x-n"], "1");
        let e = parse(text, "s.toml", Path::new("."), &[("row.x".into(), "1".into())], &closed(1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.toml: --var row.x: not a variable name (letters, digits, '_', '.' and '-', not a built-in)"
        );
    }

    #[test]
    fn groups_add_up_to_the_overall_load_and_span() {
        let text = "[[flow.a.step]]\nname = \"s\"\nurl = \"http://h:1/\"\n[group.one]\nrate = 10\nduration = \"10s\"\n[group.two]\nrate = \"5:20\"\nstart = \"5s\"\nduration = \"20s\"\n[group.three]\nmax-in-flight = 3\nduration = \"1s\"\n";
        let open = Load::Open { pacer: Pacer::Constant { rate: 100.0 }, max_in_flight: 64 };
        let (s, _) = parse(text, "s.toml", Path::new("."), &[], &open).unwrap();
        assert_eq!(
            s.groups[1].load,
            Load::Open {
                pacer: Pacer::Ramp { from: 5.0, to: 20.0, over: Duration::from_secs(20) },
                max_in_flight: 256
            }
        );
        assert_eq!(
            s.groups[2].load,
            Load::Open { pacer: Pacer::Constant { rate: 100.0 }, max_in_flight: 3 },
            "the run's load, its bound replaced"
        );
        assert_eq!(overall_load(&s), Load::Open { pacer: Pacer::Constant { rate: 130.0 }, max_in_flight: 515 });
        assert_eq!(span(&s), Some(Duration::from_secs(25)));
        let e = parse(text, "s.toml", Path::new("."), &[], &closed(2)).unwrap_err();
        assert!(e.to_string().starts_with("s.toml:12: group.three.max-in-flight: is for open loop"), "{e}");
    }

    /// A group of `iterations` ends by itself: with every other group timed, the run has no
    /// default duration; a group that runs to the run's end takes one again.
    #[test]
    fn iterations_end_a_group_by_themselves() {
        let text = |other: &str| {
            format!("[[flow.a.step]]\nname = \"s\"\nurl = \"http://h:1/\"\n[group.one]\nconcurrency = 3\niterations = 7\n[group.two]\nconcurrency = 1\n{other}")
        };
        let (s, _) = parse(&text("duration = \"2s\"\n"), "s.toml", Path::new("."), &[], &closed(2)).unwrap();
        assert_eq!((s.groups[0].iterations, s.groups[1].iterations), (Some(7), None));
        assert!(ends_by_itself(&s));
        assert_eq!(span(&s), None, "no group's end is known before the run");
        let (s, _) = parse(&text(""), "s.toml", Path::new("."), &[], &closed(2)).unwrap();
        assert!(!ends_by_itself(&s), "group two runs to the run's end");
    }

    #[test]
    fn read_takes_files_beside_the_scenario_and_bounds_its_size() {
        let dir = fixtures();
        let path: PathBuf = dir.path().join("album.toml");
        std::fs::write(&path, ALBUM.replace("name = \"album study\"\n", "")).unwrap();
        let (s, targets) = read(&path, &[], &closed(1)).unwrap();
        assert_eq!((s.name.as_str(), targets.len(), s.feeders[0].rows.len()), ("album", 2, 2));
        let e = read(Path::new("/dev/zero"), &[], &closed(1)).unwrap_err();
        assert_eq!(e.to_string(), "/dev/zero: over the 16 MiB limit");
        let e = read(&dir.path().join("none.toml"), &[], &closed(1)).unwrap_err();
        assert!(e.to_string().contains("none.toml: cannot read: "), "{e}");
    }

    #[test]
    fn flows_steps_and_groups_are_bounded() {
        let step = |f: &str, i: usize| format!("[[flow.{f}.step]]\nname = \"s{i}\"\nurl = \"http://h:1/\"\n");
        let steps: String = (0..=MAX_FLOW_STEPS).map(|i| step("a", i)).collect();
        let e = parse_in(Path::new("."), &steps).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("s.toml:{}: flow.a.step: more than 1000 steps, the limit of a flow", 3 * MAX_FLOW_STEPS + 1)
        );
        let flows: String = (0..=MAX_FLOWS).map(|i| step(&format!("f{i}"), 0)).collect();
        let e = parse_in(Path::new("."), &flows).unwrap_err();
        assert_eq!(e.to_string(), format!("s.toml:{}: flow.f64: more than 64 flows, the limit", 3 * MAX_FLOWS + 1));
        let groups: String = (0..=MAX_GROUPS).map(|i| format!("[group.g{i}]\nrate = 1\n")).collect();
        let e = parse_in(Path::new("."), &format!("{}{groups}", step("a", 0))).unwrap_err();
        assert_eq!(e.to_string(), format!("s.toml:{}: group.g64: more than 64 groups, the limit", 4 + 2 * MAX_GROUPS));
        // A feeder file over the limit is refused from its size, unread.
        let dir = tempfile::tempdir().unwrap();
        std::fs::File::create(dir.path().join("big.csv")).unwrap().set_len(MAX_TARGETS_FILE + 1).unwrap();
        let e = parse_in(dir.path(), &format!("[feeder.big]\nfile = \"big.csv\"\n{}", step("a", 0))).unwrap_err();
        assert!(
            e.to_string().starts_with("s.toml:2: file: ") && e.to_string().ends_with("big.csv: over the 256 MiB limit"),
            "{e}"
        );
    }

    proptest::proptest! {
        /// Whatever a file holds, reading it ends in a scenario or a one-line error, never a
        /// panic: the album file with a piece cut out and other text put in.
        #[test]
        fn a_damaged_file_never_panics(cut in 0usize..2000, len in 0usize..40, insert in "[{}\\[\\]=\"'./:?a-zé€ \n0-9$]{0,12}") {
            let dir = fixtures();
            let mut text = ALBUM.to_string();
            let at = text.char_indices().map(|(i, _)| i).nth(cut % ALBUM.chars().count()).unwrap_or(0);
            let end = text[at..].char_indices().map(|(i, _)| at + i).nth(len).unwrap_or(text.len());
            text.replace_range(at..end, &insert);
            if let Err(e) = parse_in(dir.path(), &text) {
                proptest::prop_assert!(!e.to_string().contains('\n'), "{}", e);
            }
        }
    }
    /// Judging keeps to the request's deadline: what reads the body does not begin past it,
    /// so a run still ends within its duration and --timeout (issue 33 item 1).
    #[test]
    fn a_step_reading_the_body_is_not_judged_past_its_deadline() {
        use crate::flow::{Response, Verdict};
        let dir = tempfile::tempdir().unwrap();
        let text = "[[flow.f.step]]\nname = \"s\"\nurl = \"http://h:1/\"\ncapture.id = { json-path = \"$.id\" }\n";
        let (scenario, _) = parse_in(dir.path(), text).unwrap();
        let step = &scenario.flows[0].steps[0];
        let headers = http::HeaderMap::new();
        let now = std::time::Instant::now();
        for (until, verdict) in
            [(None, Verdict::Ok), (Some(now + Duration::from_secs(60)), Verdict::Ok), (Some(now), Verdict::OutOfTime)]
        {
            let mut st = scenario.start_flow(0, 0, 0, 1).unwrap();
            let r = Response { status: Some(200), headers: &headers, body: br#"{"id": 7}"#, until };
            assert_eq!(step.judge(&r, &mut st), verdict, "{until:?}");
            assert_eq!(st.captures[0].as_deref(), (verdict == Verdict::Ok).then_some("7"));
        }
    }
}
