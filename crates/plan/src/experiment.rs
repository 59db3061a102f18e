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
//! [factors.protocol]        # factors and levels in file order
//! http = { url = "http://127.0.0.1:8080/a" }
//! https = { url = "https://127.0.0.1:8443/a", cacert = "ca.pem" }
//!
//! [factors.load]
//! without = {}
//! with = { background = { rate = 500, connections = 64 } }
//!
//! exclude = ["https & with"]   # at the top, before the tables; `factor=level` also works
//! ```
//!
//! Settings are the flags of `barrage run` as keys (`rate`, `concurrency`, `header`,
//! `http2`, `no-keepalive`…), `url` (one or a list) for the targets, and `background`: a
//! heavy load sent at the same time as the case's own run, which then measures what one
//! client sees under it. Later settings win: base, then each factor's level in file order.

use indexmap::IndexMap;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
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
        let text = std::fs::read_to_string(path)
            .map_err(|e| ExperimentError { path: path.display().to_string(), message: e.to_string() })?;
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
        if repeats == 0 {
            return Err("repeats must be at least 1".into());
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
        for (f, &l) in self.factors.iter().zip(choice) {
            let level = &f.levels[l];
            merge(&mut settings, &level.settings);
            levels.push((f.name.clone(), level.name.clone()));
            lines.push(level.line);
        }
        Case { id: String::new(), levels, settings, lines }
    }

    fn excluded(&self, case: &Case) -> bool {
        self.exclude.iter().any(|rule| rule.iter().all(|(f, l)| case.level(f) == Some(l)))
    }
}

/// Later settings win; `background` tables merge key by key.
/// Case settings that are the experiment's own outputs, not a case's.
const NOT_CASE_SETTINGS: [&str; 11] =
    ["slo", "junit", "log", "hdr-log", "html", "tui", "metrics-addr", "xlsx", "csv-dir", "format", "output"];

/// What a case runs, from its settings.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseFlags {
    /// The measured run as `run` flags (URLs last).
    pub flags: Vec<String>,
    /// The background load beside it: the case's target and duration, its own keys winning.
    pub background: Option<Vec<String>>,
    /// The testbed it runs against: (topology, HTTPS).
    pub testbed: Option<(String, bool)>,
    /// Its phases (fill, measure).
    pub phases: Vec<String>,
}

impl Experiment {
    /// A case's settings as what runs; an error says which setting is wrong and why.
    pub fn case_flags(&self, case: &Case) -> Result<CaseFlags, String> {
        let mut settings = case.settings.clone();
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
                let mut merged = settings.clone();
                for key in ["rate", "concurrency", "connections", "max-in-flight", "think-time"] {
                    merged.remove(key);
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
/// flag, `false` leaves it out, a list repeats the flag.
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

/// Takes `testbed` and `testbed-tls` out of a case's settings: the topology's name and
/// whether it serves HTTPS.
fn take_testbed(settings: &mut Settings) -> Result<Option<(String, bool)>, String> {
    let tls = match settings.remove("testbed-tls") {
        None | Some(toml::Value::Boolean(false)) => false,
        Some(toml::Value::Boolean(true)) => true,
        Some(v) => return Err(format!("testbed-tls = {v}: expected true or false")),
    };
    match settings.remove("testbed") {
        None => Ok(None),
        Some(toml::Value::String(t)) => Ok(Some((t, tls))),
        Some(v) => Err(format!("testbed = {v}: expected a topology name such as \"varnish\"")),
    }
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
    if names.iter().any(|n| n.is_empty() || n.contains(['/', '.', ' '])) {
        return Err(format!("phases = {names:?}: names are words without '/', '.' or spaces"));
    }
    Ok(names)
}

fn merge(into: &mut Settings, from: &Settings) {
    for (k, v) in from {
        match (into.get_mut(k), v) {
            (Some(toml::Value::Table(mine)), toml::Value::Table(theirs)) => {
                for (k2, v2) in theirs {
                    mine.insert(k2.clone(), v2.clone());
                }
            }
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
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
        assert_eq!(c.testbed, Some(("varnish".into(), true)));
        assert_eq!(c.phases, ["fill", "measure"]);
        for (bad, want) in [
            ("[base]\nphases = \"fill,a b\"\n[factors.f]\nx = {}", "names are words"),
            ("[base]\nhtml = \"x\"\n[factors.f]\nx = {}", "'html' is not a case setting"),
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
        ];
        for (text, want) in table {
            match Experiment::parse(text, "t") {
                Err(e) => assert!(!want.is_empty() && e.contains(want) && !e.contains('\n'), "{text:?}: {e}"),
                Ok(_) => assert!(want.is_empty(), "{text:?} should fail with {want}"),
            }
        }
        let both = Experiment::parse("exclude = [\"x\"]\n[factors.a]\nx = {}\n[factors.b]\nx = {}\n", "t").unwrap_err();
        assert!(both.contains("write factor=level"), "{both}");
    }
}
