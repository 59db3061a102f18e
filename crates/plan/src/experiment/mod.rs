//! Experiment files: a design of runs. Base settings, **factors** with named levels (each
//! level adds settings), **exclusions** of impossible combinations, repeats, warm-up, pause,
//! order; [`Experiment::cases`] expands the matrix into cases with stable ids (TC0, TC1, …).
//!
//! ```toml
//! name = "cache study"
//! duration = "10s"          # of each measured run
//! warmup = "2s"             # before each run, not measured
//! pause = "1s"              # between runs
//! repeats = 3
//! order = "random"          # or "sequential" (the default)
//! seed = 7
//! compare = ["protocol", "server"]
//! slo = ["p99<250ms"]
//!
//! [base]                    # settings every case starts from: `run` flags without dashes
//! concurrency = 8
//!
//! url = "{scheme}://{host}/a"  # parts set by the levels below
//!
//! [factors.protocol]        # factors and levels in file order
//! http = { vars = { scheme = "http" } }
//! https = { vars = { scheme = "https" }, cacert = "ca.pem" }
//!
//! [factors.server]
//! cache = { vars = { host = "cache.example.net" } }
//! backend = { vars = { host = "origin.example.net:8080" } }
//!
//! [factors.load]
//! without = {}
//! with = { background = { rate = 500, connections = 64 } }
//!
//! exclude = ["https & with"]   # at the top, before the tables; `factor=level` also works
//! ```
//!
//! Settings are the flags of `barrage run` as keys (`rate`, `concurrency`, `header`,
//! `http2`, `no-keepalive`…), `url` (one or a list) for the targets, `background`: a heavy
//! load sent at the same time as the case's own run, which then measures what one client
//! sees under it, and `vars`: values for `{name}` placeholders in the other settings. A
//! level's settings replace the base's; two levels of one case setting the same key (or
//! the same key of `background` or `vars`) is an error naming both, since neither could
//! be said to win: factors compose through `vars` instead.

mod testbed;

pub use testbed::TestbedSetting;

use crate::limits::{MAX_CASES, MAX_EXPERIMENT_FILE, MAX_REPEATS, MAX_RUNS};
use indexmap::IndexMap;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use testbed::take_testbed;
use toml::Spanned;

/// Settings of a run: `run` flags as keys.
pub type Settings = BTreeMap<String, toml::Value>;

/// Errors of reading an experiment file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ExperimentError {
    /// The file.
    pub path: String,
    /// What is wrong, with the line where there is one.
    pub message: String,
}

/// In which order the runs go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Case by case, repeats together.
    #[default]
    Sequential,
    /// Every (case, repeat) shuffled with the seed, so drift over time spreads evenly.
    Random,
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    duration: Option<String>,
    warmup: Option<String>,
    pause: Option<String>,
    repeats: Option<u32>,
    #[serde(default)]
    order: Order,
    seed: Option<u64>,
    #[serde(default)]
    compare: Vec<String>,
    #[serde(default)]
    slo: Vec<String>,
    #[serde(default)]
    exclude: Vec<Spanned<String>>,
    #[serde(default)]
    base: Settings,
    /// Factors and their levels in file order, each level with where it is.
    #[serde(default)]
    factors: IndexMap<String, Spanned<IndexMap<String, Spanned<toml::Value>>>>,
}

/// A level of a factor.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// Its name.
    pub name: String,
    /// What it sets.
    pub settings: Settings,
    /// The line of the file it is on.
    pub line: usize,
}

/// A factor and its levels, in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct Factor {
    /// Its name.
    pub name: String,
    /// Its levels.
    pub levels: Vec<Level>,
}

/// One combination of levels.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// `TC0`, `TC1`, … in matrix order (first factor slowest), after exclusions.
    pub id: String,
    /// (factor, level) for every factor.
    pub levels: Vec<(String, String)>,
    /// Base settings with every level's on top.
    pub settings: Settings,
    /// Lines of the levels, for messages about their settings.
    pub lines: Vec<usize>,
    /// Two of its levels set the same key: which, and which levels (an error of the case,
    /// raised by [`Experiment::case_flags`]; an excluded combination may have one).
    pub conflict: Option<String>,
}

impl Case {
    /// The level of `factor`.
    pub fn level(&self, factor: &str) -> Option<&str> {
        self.levels.iter().find(|(f, _)| f == factor).map(|(_, l)| l.as_str())
    }
}

/// A parsed, checked experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct Experiment {
    /// Its name (the file's stem when not given).
    pub name: String,
    /// Length of each measured run (`None`: the settings decide).
    pub duration: Option<String>,
    /// Warm-up before each run.
    pub warmup: Option<String>,
    /// Pause between runs.
    pub pause: Option<String>,
    /// Runs per case.
    pub repeats: u32,
    /// Order of the runs.
    pub order: Order,
    /// Seed of the random order.
    pub seed: u64,
    /// Factors to compare cases along.
    pub compare: Vec<String>,
    /// Objectives of every case.
    pub slo: Vec<String>,
    /// Settings of every case.
    pub base: Settings,
    /// The factors.
    pub factors: Vec<Factor>,
    /// Excluded combinations: each a list of (factor, level) that may not occur together.
    pub exclude: Vec<Vec<(String, String)>>,
}

impl Experiment {
    /// Reads and checks an experiment file.
    pub fn read(path: &Path) -> Result<Experiment, ExperimentError> {
        let failed = |message: String| ExperimentError { path: path.display().to_string(), message };
        let bytes =
            barrage_metrics::limits::read_capped(path, MAX_EXPERIMENT_FILE).map_err(|e| failed(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| failed("not UTF-8 text".into()))?;
        let stem = path.file_stem().map_or_else(|| "experiment".into(), |s| s.to_string_lossy().into_owned());
        Experiment::parse(&text, &stem).map_err(|message| ExperimentError { path: path.display().to_string(), message })
    }

    /// Parses the text of an experiment file; `stem` names it when it has no name.
    pub fn parse(text: &str, stem: &str) -> Result<Experiment, String> {
        let file: File = toml::from_str(text).map_err(|e| one_line(&e.to_string()))?;
        let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let factors = factors(&file.factors, &line_of)?;
        let exclude = file
            .exclude
            .iter()
            .map(|e| exclusion(e.get_ref(), &factors).map_err(|m| format!("line {}: {m}", line_of(e.span().start))))
            .collect::<Result<Vec<_>, String>>()?;
        for f in &file.compare {
            if !factors.iter().any(|x| &x.name == f) {
                return Err(format!("compare = [\"{f}\"]: no factor of that name (factors: {})", names(&factors)));
            }
        }
        let repeats = file.repeats.unwrap_or(1);
        if !(1..=MAX_REPEATS).contains(&repeats) {
            return Err(format!("repeats = {repeats}: repeats must be at least 1 and at most {MAX_REPEATS}"));
        }
        // Counted from the level counts, before any case is built: nine factors of ten
        // levels are a billion cases.
        let combinations = factors.iter().fold(1u64, |n, f| n.saturating_mul(f.levels.len() as u64));
        if combinations > MAX_CASES {
            return Err(format!(
                "the factors make {} combinations of levels: over the limit of {MAX_CASES} cases",
                if combinations == u64::MAX { "over 2^64".into() } else { combinations.to_string() }
            ));
        }
        if combinations * u64::from(repeats) > MAX_RUNS {
            return Err(format!(
                "{combinations} combinations × repeats = {repeats} are over the limit of {MAX_RUNS} runs"
            ));
        }
        for (key, value) in [("duration", &file.duration), ("warmup", &file.warmup), ("pause", &file.pause)] {
            if let Some(v) = value {
                barrage_metrics::units::parse_duration(v).map_err(|e| format!("{key} = {v:?}: {e}"))?;
            }
        }
        Ok(Experiment {
            name: file.name.unwrap_or_else(|| stem.to_string()),
            duration: file.duration,
            warmup: file.warmup,
            pause: file.pause,
            repeats,
            order: file.order,
            seed: file.seed.unwrap_or(1),
            compare: file.compare,
            slo: file.slo,
            base: file.base,
            factors,
            exclude,
        })
    }

    /// The valid cases, in matrix order: the first factor changes slowest.
    pub fn cases(&self) -> Vec<Case> {
        let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
        for f in &self.factors {
            combos = combos
                .into_iter()
                .flat_map(|c| (0..f.levels.len()).map(move |l| [c.clone(), vec![l]].concat()))
                .collect();
        }
        combos
            .into_iter()
            .map(|c| self.case(&c))
            .filter(|case| !self.excluded(case))
            .enumerate()
            .map(|(i, mut case)| {
                case.id = format!("TC{i}");
                case
            })
            .collect()
    }

    fn case(&self, choice: &[usize]) -> Case {
        let mut settings = self.base.clone();
        let mut levels = Vec::new();
        let mut lines = Vec::new();
        let mut owners = Owners::new();
        let mut conflict = None;
        for (f, &l) in self.factors.iter().zip(choice) {
            let level = &f.levels[l];
            let name = format!("{}={} (line {})", f.name, level.name, level.line);
            if let Err(m) = merge(&mut settings, &level.settings, &name, &mut owners) {
                conflict = conflict.or(Some(m));
            }
            levels.push((f.name.clone(), level.name.clone()));
            lines.push(level.line);
        }
        Case { id: String::new(), levels, settings, lines, conflict }
    }

    fn excluded(&self, case: &Case) -> bool {
        self.exclude.iter().any(|rule| rule.iter().all(|(f, l)| case.level(f) == Some(l)))
    }
}

/// Case settings that are the experiment's own outputs, not a case's.
const NOT_CASE_SETTINGS: [&str; 16] = [
    "slo",
    "junit",
    "log",
    "log-sample",
    "hdr-log",
    "html",
    "tui",
    "metrics-addr",
    "xlsx",
    "csv-dir",
    "format",
    "output",
    "history",
    "no-history",
    "label",
    "control",
];

/// The settings of a background load that are its own and never the case's: its load and
/// its workload (a templated URL then needs its own `objects`, and a cache study its own
/// `hit-ratio`).
pub const BACKGROUND_OWN: [&str; 11] = [
    "rate",
    "concurrency",
    "connections",
    "max-in-flight",
    "think-time",
    "objects",
    "hit-ratio",
    "pick",
    "seed",
    "requests",
    "step",
];

/// What a case runs, from its settings.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseFlags {
    /// The measured run as `run` flags (URLs last).
    pub flags: Vec<String>,
    /// The background load beside it: the case's targets, connection settings and duration,
    /// with its own load and workload ([`BACKGROUND_OWN`]).
    pub background: Option<Vec<String>>,
    /// The testbed it runs against.
    pub testbed: Option<TestbedSetting>,
    /// Its phases (fill, measure).
    pub phases: Vec<String>,
}

impl Experiment {
    /// A case's settings as what runs; an error says which setting is wrong and why.
    pub fn case_flags(&self, case: &Case) -> Result<CaseFlags, String> {
        if let Some(conflict) = &case.conflict {
            return Err(conflict.clone());
        }
        let mut settings = case.settings.clone();
        let vars = take_vars(&mut settings)?;
        substitute(&mut settings, &vars);
        let background = settings.remove("background");
        let testbed = take_testbed(&mut settings)?;
        let phases = take_phases(&mut settings)?;
        if let Some(d) = &self.duration {
            settings.entry("duration".into()).or_insert_with(|| toml::Value::String(d.clone()));
        }
        let own = |k: &str| settings.contains_key(k) || settings.contains_key(&k.replace('-', "_"));
        if let Some(key) = NOT_CASE_SETTINGS.into_iter().find(|k| own(k)) {
            return Err(format!("'{key}' is not a case setting (objectives go in `slo = [...]` at the top; outputs are the experiment's own)"));
        }
        let flags = to_flags(&settings)?;
        let background = match background {
            None => None,
            Some(toml::Value::Table(bg)) => {
                // The background takes the case's targets, connection and TLS settings and
                // its length; its workload is its own, declared in its table, so that it is
                // the same behind every case (a cache-hit case's background is not a stream
                // of hits because the case's stream is).
                let mut merged = settings.clone();
                for key in BACKGROUND_OWN {
                    merged.remove(key);
                    merged.remove(&key.replace('-', "_"));
                }
                merged.extend(bg);
                Some(to_flags(&merged).map_err(|m| format!("background: {m}"))?)
            }
            Some(_) => return Err("background must be a table of settings, e.g. background = { rate = 500 }".into()),
        };
        Ok(CaseFlags { flags, background, testbed, phases })
    }
}

/// A case's settings as `run` flags: `url` values are the targets (last), `true` is a bare
/// flag, `false` leaves it out, a list repeats the flag, and a list in a list gives a flag of
/// several values (`at = [["10s", "barrage testbed stop origin-2"]]`).
fn to_flags(settings: &Settings) -> Result<Vec<String>, String> {
    let mut urls = Vec::new();
    let mut flags = Vec::new();
    for (key, value) in settings {
        let key = key.replace('_', "-");
        let values = match value {
            toml::Value::Array(items) => items.clone(),
            v => vec![v.clone()],
        };
        for v in values {
            if let toml::Value::Array(several) = &v {
                flags.push(format!("--{key}"));
                for one in several {
                    flags.push(match one {
                        toml::Value::String(s) => s.clone(),
                        toml::Value::Integer(i) => i.to_string(),
                        toml::Value::Float(f) => f.to_string(),
                        other => return Err(format!("'{key}' = [[…{other}…]]: expected text or numbers")),
                    });
                }
                continue;
            }
            let text = match &v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(true) => {
                    flags.push(format!("--{key}"));
                    continue;
                }
                toml::Value::Boolean(false) => continue,
                other => {
                    return Err(format!("'{key}' = {other}: expected text, a number, true/false or a list of them"))
                }
            };
            if key == "url" {
                urls.push(text);
            } else {
                flags.push(format!("--{key}"));
                flags.push(text);
            }
        }
    }
    flags.extend(urls);
    Ok(flags)
}

/// Takes `phases` out of a case's settings: a list of names, or one comma-separated text.
fn take_phases(settings: &mut Settings) -> Result<Vec<String>, String> {
    let names = match settings.remove("phases") {
        None => return Ok(Vec::new()),
        Some(toml::Value::String(s)) => s.split(',').map(|p| p.trim().to_string()).collect::<Vec<_>>(),
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(|| format!("phases: {v} is not a name")))
            .collect::<Result<_, _>>()?,
        Some(v) => return Err(format!("phases = {v}: expected a list of names such as [\"fill\", \"measure\"]")),
    };
    crate::phases::parse(&names).map_err(|e| format!("phases = {names:?}: {e}"))?;
    Ok(names)
}

/// Which level set each key of a case (`background.rate`, `vars.scheme` for the keys of
/// those tables).
type Owners = BTreeMap<String, String>;

/// The settings of `level` (named so for messages) over `into`: a level's setting replaces
/// the base's; `background` and `vars` tables merge key by key. A key another level of the
/// case already set is an error naming both levels and the key (the later level's
/// settings are merged all the same, so the case is whole for a listing).
fn merge(into: &mut Settings, from: &Settings, level: &str, owners: &mut Owners) -> Result<(), String> {
    let mut conflict = None;
    let mut own = |key: String| {
        if let Some(first) = owners.insert(key.clone(), level.to_string()) {
            conflict = conflict.take().or(Some(format!(
                "'{key}' is set by two levels, {first} and {level}: neither can win; set it in one factor, or compose it from parts each level sets, e.g. url = \"{{scheme}}://{{host}}/\" in [base] and vars = {{ scheme = \"https\" }} in a level"
            )));
        }
    };
    for (k, v) in from {
        match (into.get_mut(k), v) {
            (Some(toml::Value::Table(mine)), toml::Value::Table(theirs)) => {
                for (k2, v2) in theirs {
                    own(format!("{k}.{k2}"));
                    mine.insert(k2.clone(), v2.clone());
                }
            }
            (_, toml::Value::Table(theirs)) => {
                theirs.keys().for_each(|k2| own(format!("{k}.{k2}")));
                into.insert(k.clone(), v.clone());
            }
            _ => {
                own(k.clone());
                into.insert(k.clone(), v.clone());
            }
        }
    }
    conflict.map_or(Ok(()), Err)
}

/// Takes `vars` out of a case's settings: placeholder names and their text.
fn take_vars(settings: &mut Settings) -> Result<BTreeMap<String, String>, String> {
    let Some(vars) = settings.remove("vars") else { return Ok(BTreeMap::new()) };
    let toml::Value::Table(vars) = vars else {
        return Err(format!(
            "vars = {vars}: expected a table of names and values, e.g. vars = {{ scheme = \"https\" }}"
        ));
    };
    vars.into_iter()
        .map(|(name, v)| {
            if !is_name(&name) {
                return Err(format!("vars.{name}: a name starts with a letter and has letters, digits, '-' and '_'"));
            }
            let text = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                other => return Err(format!("vars.{name} = {other}: expected text or a number")),
            };
            Ok((name, text))
        })
        .collect()
}

/// A placeholder name: a letter, then letters, digits, `-` and `_`.
fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Every `{name}` of `vars` in the text settings (lists and tables such as `background`
/// included) replaced by its value. Other placeholders stay: `{id}` and a testbed's
/// servers are filled later, and anything else is then an error naming it.
fn substitute(settings: &mut Settings, vars: &BTreeMap<String, String>) {
    fn value(v: &mut toml::Value, vars: &BTreeMap<String, String>) {
        match v {
            toml::Value::String(s) => *s = fill_vars(s, vars),
            toml::Value::Array(items) => items.iter_mut().for_each(|i| value(i, vars)),
            toml::Value::Table(t) => t.iter_mut().for_each(|(_, i)| value(i, vars)),
            _ => {}
        }
    }
    if !vars.is_empty() {
        settings.values_mut().for_each(|v| value(v, vars));
    }
}

/// `text` with each `{name}` of `vars` replaced, in one pass (a value is not scanned
/// again), so `{{server}:{scheme}}` with `server = "varnish"` becomes `{varnish:https}`.
fn fill_vars(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after.find('}').and_then(|close| vars.get(&after[..close]).map(|v| (close, v)));
        match value {
            Some((close, v)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The `{name}` and `{name:word}` placeholders in `text` (not `${name}`, a shell's).
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (open, _) in text.match_indices('{') {
        if text[..open].ends_with('$') {
            continue;
        }
        let after = &text[open + 1..];
        let Some(close) = after.find('}') else { continue };
        let inside = &after[..close];
        let name = inside.split_once(':').map_or(inside, |(n, _)| n);
        if is_name(name) && inside[name.len()..].chars().all(|c| c == ':' || c.is_ascii_alphabetic()) {
            found.push(inside);
        }
    }
    found
}

fn names(factors: &[Factor]) -> String {
    factors.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// The factors and levels in file order, with the line of each level.
type RawFactors = IndexMap<String, Spanned<IndexMap<String, Spanned<toml::Value>>>>;

fn factors(raw: &RawFactors, line_of: &dyn Fn(usize) -> usize) -> Result<Vec<Factor>, String> {
    let mut out = Vec::new();
    for (name, levels) in raw {
        if levels.get_ref().is_empty() {
            return Err(format!(
                "line {}: factors.{name}: a factor needs at least one level",
                line_of(levels.span().start)
            ));
        }
        let mut ls = Vec::new();
        for (level, value) in levels.get_ref() {
            let line = line_of(value.span().start);
            let toml::Value::Table(settings) = value.get_ref() else {
                return Err(format!("line {line}: factors.{name}.{level}: expected a table of settings, e.g. {level} = {{ rate = 100 }}"));
            };
            ls.push(Level { name: level.clone(), settings: settings.clone().into_iter().collect(), line });
        }
        out.push(Factor { name: name.clone(), levels: ls });
    }
    Ok(out)
}

/// `same-url & cache-miss` or `url=same & server=cache-miss`.
fn exclusion(rule: &str, factors: &[Factor]) -> Result<Vec<(String, String)>, String> {
    rule.split('&')
        .map(|term| {
            let term = term.trim();
            let found: Vec<(String, String)> = match term.split_once('=') {
                Some((f, l)) => factors
                    .iter()
                    .filter(|x| x.name == f.trim())
                    .flat_map(|x| {
                        x.levels.iter().filter(|lv| lv.name == l.trim()).map(|lv| (x.name.clone(), lv.name.clone()))
                    })
                    .collect(),
                None => factors
                    .iter()
                    .flat_map(|x| {
                        x.levels.iter().filter(|lv| lv.name == term).map(|lv| (x.name.clone(), lv.name.clone()))
                    })
                    .collect(),
            };
            match found.len() {
                1 => Ok(found.into_iter().next().expect("one")),
                0 => Err(format!("exclude '{rule}': no level '{term}' in any factor")),
                _ => Err(format!("exclude '{rule}': level '{term}' is in several factors; write factor=level")),
            }
        })
        .collect()
}

/// toml's messages span lines (with a caret drawing): keep them on one.
fn one_line(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('|') && !l.chars().all(|c| c == '^' || c == ' ' || c == '|'))
        .collect();
    lines.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The study of the seeds: protocol × URL × load × server, a cache miss on the same URL
    /// impossible.
    const STUDY: &str = r#"
name = "web cache study"
repeats = 2
exclude = ["same-url & cache-miss"]
compare = ["protocol", "server"]

[base]
concurrency = 4

[factors.protocol]
http = { url = "http://127.0.0.1:1/" }
https = { url = "https://127.0.0.1:2/" }

[factors.url]
same-url = {}
different-url = { objects = 1000 }

[factors.load]
without = {}
with = { background = { rate = 500 } }

[factors.server]
backend = {}
cache-hit = { header = ["X-Want: hit"] }
cache-miss = { header = ["X-Want: miss"] }
"#;

    #[test]
    fn a_case_splits_into_flags_background_testbed_and_phases() {
        let text = r#"
duration = "2s"
[base]
url = "{varnish}/obj/{id}"
concurrency = 4
testbed = "varnish"
testbed-tls = true
phases = ["fill", "measure"]
[factors.load]
busy = { background = { rate = 100 } }
"#;
        let e = Experiment::parse(text, "t").unwrap();
        let c = e.case_flags(&e.cases()[0]).unwrap();
        assert_eq!(c.flags, ["--concurrency", "4", "--duration", "2s", "{varnish}/obj/{id}"]);
        assert_eq!(c.background.unwrap(), ["--duration", "2s", "--rate", "100", "{varnish}/obj/{id}"]);
        assert_eq!(c.testbed, Some(TestbedSetting { topology: "varnish".into(), tls: true, ..Default::default() }));
        assert_eq!(c.phases, ["fill", "measure"]);
        // The background's workload is its own: the case's objects, hit ratio, pick, seed
        // and count stay the case's.
        let text = "[base]\nurl = \"http://o/obj/{id}\"\nobjects = 10\nhit-ratio = 0.0\npick = \"random\"\nseed = 5\nrequests = 9\n[factors.load]\nbusy = { background = { rate = 100, objects = 50, hit-ratio = 0.5 } }\nidle = { background = { rate = 100 } }\n";
        let e = Experiment::parse(text, "t").unwrap();
        let busy = e.case_flags(&e.cases()[0]).unwrap().background.unwrap();
        assert_eq!(busy, ["--hit-ratio", "0.5", "--objects", "50", "--rate", "100", "http://o/obj/{id}"]);
        let idle = e.case_flags(&e.cases()[1]).unwrap().background.unwrap();
        assert_eq!(idle, ["--rate", "100", "http://o/obj/{id}"]);
        // A flag of two values (`--at OFFSET COMMAND`), as a list in a list.
        let e = Experiment::parse("[base]\nat = [[\"1s\", \"true\"], [\"2s\", \"false\"]]\n[factors.f]\nx = {}", "t")
            .unwrap();
        assert_eq!(e.case_flags(&e.cases()[0]).unwrap().flags, ["--at", "1s", "true", "--at", "2s", "false"]);
        for (bad, want) in [
            ("[base]\nphases = \"fill,a b\"\n[factors.f]\nx = {}", "a word without"),
            ("[base]\nhtml = \"x\"\n[factors.f]\nx = {}", "'html' is not a case setting"),
            ("[base]\nlog-sample = 0.5\n[factors.f]\nx = {}", "'log-sample' is not a case setting"),
            ("[base]\nbackground = 3\n[factors.f]\nx = {}", "background must be a table"),
        ] {
            let e = Experiment::parse(bad, "t").unwrap();
            let err = e.case_flags(&e.cases()[0]).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn the_four_factor_study_has_twenty_valid_cases_with_stable_ids() {
        let e = Experiment::parse(STUDY, "study").unwrap();
        assert_eq!(e.name, "web cache study");
        let names: Vec<&str> = e.factors.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["protocol", "url", "load", "server"], "file order, not alphabetical");
        let levels: Vec<&str> = e.factors[3].levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(levels, ["backend", "cache-hit", "cache-miss"]);
        let cases = e.cases();
        assert_eq!(cases.len(), 20, "24 combinations less the 4 of same-url & cache-miss");
        assert!(cases.iter().all(|c| !(c.level("url") == Some("same-url") && c.level("server") == Some("cache-miss"))));
        let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids[..3], ["TC0", "TC1", "TC2"]);
        assert_eq!(ids[19], "TC19");
        // The first factor changes slowest; settings pile up in factor order.
        assert_eq!(cases[0].levels[0], ("protocol".to_string(), "http".to_string()));
        assert_eq!(cases[19].levels[0].1, "https");
        assert_eq!(cases[0].settings["concurrency"].as_integer(), Some(4));
        assert_eq!(cases[0].settings["url"].as_str(), Some("http://127.0.0.1:1/"));
        let with = cases.iter().find(|c| c.level("load") == Some("with")).unwrap();
        assert_eq!(with.settings["background"]["rate"].as_integer(), Some(500));
        // The same file gives the same cases.
        assert_eq!(Experiment::parse(STUDY, "study").unwrap().cases(), cases);
        assert_eq!(e.factors[3].levels[2].line, 25, "levels know their line");
    }

    /// svLoad's protocol × server: each factor sets its part of the URL.
    const MATRIX: &str = r#"
[base]
url = "{scheme}://{host}/obj/{id}"
header = ["X-Case: {scheme}-{host}"]

[factors.protocol]
http = { vars = { scheme = "http" } }
https = { vars = { scheme = "https" }, cacert = "ca.pem" }

[factors.server]
cache = { vars = { host = "cache:8080" } }
backend = { vars = { host = "origin:9090" }, background = { rate = 10 } }
"#;

    #[test]
    fn levels_compose_a_url_from_the_parts_each_sets() {
        let e = Experiment::parse(MATRIX, "m").unwrap();
        let urls: Vec<String> =
            e.cases().iter().map(|c| e.case_flags(c).unwrap().flags.last().unwrap().clone()).collect();
        assert_eq!(
            urls,
            [
                "http://cache:8080/obj/{id}",
                "http://origin:9090/obj/{id}",
                "https://cache:8080/obj/{id}",
                "https://origin:9090/obj/{id}"
            ],
            "{{id}} is the engine's, left as it is"
        );
        let c = e.case_flags(&e.cases()[3]).unwrap();
        assert_eq!(c.flags[..4], ["--cacert", "ca.pem", "--header", "X-Case: https-origin:9090"]);
        assert_eq!(c.background.unwrap().last().unwrap(), "https://origin:9090/obj/{id}", "the background's too");
        // A value is not scanned again, so parts can make a testbed placeholder.
        let vars = [("server", "varnish"), ("scheme", "https")].map(|(k, v)| (k.to_string(), v.to_string())).into();
        assert_eq!(fill_vars("{{server}:{scheme}}/a?{x}", &vars), "{varnish:https}/a?{x}");
        assert_eq!(
            placeholders("{varnish:https}/{id}?a={x}&j={\"k\":1}&h=${HOME}&r={2,3}"),
            ["varnish:https", "id", "x"]
        );
    }

    #[test]
    fn two_levels_setting_one_key_is_an_error_naming_both() {
        let table = [
            // (the levels, the key named)
            ("a = { url = \"http://a/\" }\n[factors.g]\nb = { url = \"http://b/\" }", "'url'"),
            ("a = { vars = { x = 1 } }\n[factors.g]\nb = { vars = { x = 2 } }", "'vars.x'"),
            ("a = { background = { rate = 1 } }\n[factors.g]\nb = { background = { rate = 2 } }", "'background.rate'"),
        ];
        for (levels, key) in table {
            let text = format!("[base]\nurl = \"http://base/\"\n[factors.f]\n{levels}\n");
            let e = Experiment::parse(&text, "t").unwrap();
            let err = e.case_flags(&e.cases()[0]).unwrap_err();
            assert!(err.starts_with(&format!("{key} is set by two levels, f=a (line 4) and g=b (line 6)")), "{err}");
        }
        // The base is what levels replace; distinct keys of one table merge; an excluded
        // combination may set one key twice.
        let text = "exclude = [\"a & b\"]\n[base]\nurl = \"http://base/\"\n[factors.f]\na = { url = \"http://a/\", background = { rate = 1 } }\nc = {}\n[factors.g]\nb = { url = \"http://b/\", background = { connections = 2 } }\nd = { background = { connections = 2 } }\n";
        let e = Experiment::parse(text, "t").unwrap();
        let cases = e.cases();
        assert_eq!(cases.len(), 3);
        assert!(cases.iter().all(|c| e.case_flags(c).is_ok()), "{cases:?}");
        assert_eq!(cases[0].settings["background"].as_table().unwrap().len(), 2);
        for (bad, want) in [
            ("[base]\nvars = 3\n[factors.f]\nx = {}", "vars = 3: expected a table"),
            ("[base]\nvars = { on = true }\n[factors.f]\nx = {}", "vars.on = true: expected text or a number"),
            ("[base]\nvars = { 9x = \"a\" }\n[factors.f]\nx = {}", "vars.9x: a name starts with a letter"),
        ] {
            let e = Experiment::parse(bad, "t").unwrap();
            let err = e.case_flags(&e.cases()[0]).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn malformed_files_name_the_line() {
        let table = [
            ("repeats = \"two\"\n", "line 1"),
            ("[factors.a]\nx = {}\n\nbogus = 1\n", "line 4"),
            ("exclude = [\"nope\"]\n[factors.a]\nx = {}\n", "line 1: exclude 'nope': no level 'nope'"),
            ("\n[factors.a]\nx = 5\n", "line 3: factors.a.x: expected a table of settings"),
            ("unknown = 1\n", "unknown field `unknown`"),
            ("compare = [\"b\"]\n[factors.a]\nx = {}\n", "no factor of that name"),
            ("[factors.a]\nx = {}\n[factors.b]\nx = {}\n", ""),
            ("warmup = \"-1s\"\n", "warmup = \"-1s\": invalid duration '-1s'"),
            ("pause = \"soon\"\n", "pause = \"soon\": invalid duration"),
            ("duration = \"10000000000000000000s\"\n", "at most 8760h"),
            ("repeats = 4294967295\n", "repeats = 4294967295: repeats must be at least 1 and at most 10000"),
            ("repeats = 0\n", "at least 1 and at most 10000"),
        ];
        for (text, want) in table {
            match Experiment::parse(text, "t") {
                Err(e) => assert!(!want.is_empty() && e.contains(want) && !e.contains('\n'), "{text:?}: {e}"),
                Ok(_) => assert!(want.is_empty(), "{text:?} should fail with {want}"),
            }
        }
        // Nine factors of ten levels: refused from the counts, at once.
        let mut nine = String::new();
        for f in 0..9 {
            nine.push_str(&format!("[factors.f{f}]\n"));
            (0..10).for_each(|l| nine.push_str(&format!("l{l} = {{}}\n")));
        }
        let started = std::time::Instant::now();
        let e = Experiment::parse(&nine, "t").unwrap_err();
        assert!(e.contains("1000000000 combinations of levels: over the limit of 100000 cases"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
        let e = Experiment::parse(&format!("repeats = 100\n{}", &nine[..nine.find("[factors.f5]").unwrap()]), "t");
        assert!(e.unwrap_err().contains("over the limit of 1000000 runs"));
        let both = Experiment::parse("exclude = [\"x\"]\n[factors.a]\nx = {}\n[factors.b]\nx = {}\n", "t").unwrap_err();
        assert!(both.contains("write factor=level"), "{both}");
    }
}
