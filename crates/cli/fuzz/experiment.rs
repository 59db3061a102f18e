//! Experiment files, through `experiment --dry-run`: the file parsed, the matrix expanded,
//! each case's settings read as `run` flags by `run`'s parser and planned. Files are built
//! as TOML from plausible and hostile keys and values, then some are cut and spliced as
//! text.

use super::{config, within, words};
use crate::args::{Cli, Command};
use clap::Parser;
use proptest::prelude::*;
use toml::{Table, Value};

/// Keys of a case's settings: `run`'s flags, the experiment's own keys, and others.
const SETTINGS: &[&str] = &[
    "url",
    "rate",
    "concurrency",
    "duration",
    "requests",
    "header",
    "body",
    "form",
    "think-time",
    "max-in-flight",
    "connections",
    "timeout",
    "http2",
    "streams",
    "http3",
    "no-keepalive",
    "insecure",
    "pick",
    "objects",
    "seed",
    "phases",
    "retries",
    "vars",
    "background",
    "testbed",
    "testbed-tls",
    "slo",
    "output",
    "step",
    "bogus",
    "think_time",
];
const NAMES: &[&str] = &["a", "b", "c", "proto", "server", "load", "with", "without", "é", "a b", "", "a.b"];

/// Any value: text, numbers and flags, now and then a list or a table.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        5 => words::value().prop_map(Value::String),
        2 => any::<i64>().prop_map(Value::Integer),
        1 => prop::sample::select(&[0i64, 1, -1, 8, 1000, u32::MAX as i64][..]).prop_map(Value::Integer),
        1 => any::<f64>().prop_map(Value::Float),
        2 => any::<bool>().prop_map(Value::Boolean),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(SETTINGS), inner), 0..4)
                .prop_map(|kv| Value::Table(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

fn text(choices: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop::sample::select(choices).prop_map(|s| Value::String(s.into())).boxed()
}

/// A value of the type `key` takes (mostly one a person would write), else anything.
fn value_for(key: &'static str) -> BoxedStrategy<Value> {
    let typed = match key {
        "rate" | "concurrency" | "requests" | "connections" | "max-in-flight" | "objects" | "seed" | "retries"
        | "streams" => {
            prop_oneof![(1i64..100).prop_map(Value::Integer), text(&["100/s", "10,20", "1..4", "5:50", "0"])].boxed()
        }
        "duration" | "think-time" | "think_time" | "timeout" | "step" => {
            text(&["1s", "250ms", "2m", "0s", "-1s", "1e19s"])
        }
        "http2" | "http3" | "no-keepalive" | "insecure" | "testbed-tls" => {
            any::<bool>().prop_map(Value::Boolean).boxed()
        }
        "url" => text(&[
            "http://127.0.0.1:1/",
            "http://127.0.0.1:1/{p}",
            "{scheme}://127.0.0.1:1/",
            "http://{varnish}/",
            "https://[::1]:1/",
        ]),
        "header" => text(&["X-A: b", "Authorization: Bearer t", "no colon", "X: {p}"]),
        "pick" => text(&["random", "zipf:1.1", "same", "round-robin", "zipf:-1", "gauss", "gauss:1:1e9"]),
        "phases" => text(&["fill,measure", "a/b", ""]),
        "testbed" => text(&["varnish", "nginx", "direct", "haproxy", "nope"]),
        "vars" => {
            prop::collection::vec((prop::sample::select(&["p", "scheme", "x", "1a", ""][..]), words::value()), 0..3)
                .prop_map(|kv| Value::Table(kv.into_iter().map(|(k, v)| (k.to_string(), Value::String(v))).collect()))
                .boxed()
        }
        "background" => {
            prop::collection::vec((prop::sample::select(&["rate", "connections", "concurrency"][..]), 1i64..500), 0..3)
                .prop_map(|kv| Value::Table(kv.into_iter().map(|(k, v)| (k.to_string(), Value::Integer(v))).collect()))
                .boxed()
        }
        _ => words::value().prop_map(Value::String).boxed(),
    };
    prop_oneof![6 => typed, 1 => any_value()].boxed()
}

fn settings() -> impl Strategy<Value = Table> {
    prop::collection::vec(prop::sample::select(SETTINGS).prop_flat_map(|k| (Just(k), value_for(k))), 0..5)
        .prop_map(|kv| kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// The experiment's own keys: mostly of the right type, now and then not, or unknown.
fn top() -> impl Strategy<Value = Table> {
    let key = prop_oneof![
        20 => prop::sample::select(&["name", "duration", "warmup", "pause", "repeats", "order", "seed", "slo"][..]),
        1 => Just("x"),
    ];
    let entry = key.prop_flat_map(|k| {
        let typed = match k {
            "duration" | "warmup" | "pause" => value_for("duration"),
            "repeats" => prop_oneof![9 => (1i64..4).prop_map(Value::Integer), 1 => Just(Value::Integer(0))].boxed(),
            "order" => text(&["sequential", "random", "sequential", "random", "shuffled"]),
            "seed" => (0i64..100).prop_map(Value::Integer).boxed(),
            "slo" => prop::collection::vec(words::value().prop_map(Value::String), 0..3).prop_map(Value::Array).boxed(),
            _ => words::value().prop_map(Value::String).boxed(),
        };
        (Just(k), prop_oneof![20 => typed, 1 => any_value()])
    });
    prop::collection::vec(entry, 0..5).prop_map(|kv| kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// Factors: names, and levels with their settings.
type Factors = Vec<(&'static str, Vec<(&'static str, Table)>)>;

/// An experiment file as a TOML table, `compare` and `exclude` mostly naming its own
/// factors and levels. Up to 7 factors of 7 levels (823,543 cases, past the 100,000 limit
/// that is checked before any case is built).
fn file() -> impl Strategy<Value = Table> {
    let level = (prop::sample::select(NAMES), settings());
    let factor = (prop::sample::select(NAMES), prop::collection::vec(level, 1..8));
    let factors = prop::collection::vec(factor, 0..8);
    (top(), settings(), factors)
        .prop_flat_map(|(top, base, factors): (Table, Table, Factors)| {
            let level_names: Vec<String> =
                factors.iter().flat_map(|(f, levels)| levels.iter().map(move |(l, _)| format!("{f}={l}"))).collect();
            let names: Vec<String> = factors.iter().map(|(f, _)| f.to_string()).collect();
            // A name of the file's own now and then wrong, and nothing to name without factors.
            let one_of = |names: Vec<String>| match names.is_empty() {
                true => Just(String::new()).boxed(),
                false => prop_oneof![9 => prop::sample::select(names), 1 => Just("nope".to_string())].boxed(),
            };
            let some = if names.is_empty() { 0..1 } else { 0..2 };
            let exclude = prop::collection::vec(
                (one_of(level_names.clone()), one_of(level_names)).prop_map(|(a, b)| format!("{a} & {b}")),
                some.clone(),
            );
            let compare = prop::collection::vec(one_of(names), some);
            (Just((top, base, factors)), exclude, compare)
        })
        .prop_map(|((mut t, mut base, factors), exclude, compare)| {
            if !exclude.is_empty() {
                t.insert("exclude".into(), Value::Array(exclude.into_iter().map(Value::String).collect()));
            }
            if !compare.is_empty() {
                t.insert("compare".into(), Value::Array(compare.into_iter().map(Value::String).collect()));
            }
            base.entry("url").or_insert_with(|| Value::String("http://127.0.0.1:1/".into()));
            t.insert("base".into(), Value::Table(base));
            let factors: Table = factors
                .into_iter()
                .map(|(name, levels)| {
                    let levels: Table = levels.into_iter().map(|(n, s)| (n.to_string(), Value::Table(s))).collect();
                    (name.to_string(), Value::Table(levels))
                })
                .collect();
            t.insert("factors".into(), Value::Table(factors));
            t
        })
}

/// An edit of the file's text: a cut, an insertion, a line repeated.
#[derive(Clone, Debug)]
enum Edit {
    Cut(prop::sample::Index, usize),
    Insert(prop::sample::Index, String),
    RepeatLine(prop::sample::Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<prop::sample::Index>(), 1usize..20).prop_map(|(at, n)| Edit::Cut(at, n)),
        (any::<prop::sample::Index>(), words::token()).prop_map(|(at, t)| Edit::Insert(at, t)),
        any::<prop::sample::Index>().prop_map(Edit::RepeatLine),
    ]
}

fn apply(text: &str, edit: &Edit) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return text.to_string();
    }
    match edit {
        Edit::Cut(at, n) => {
            let at = at.index(chars.len());
            chars[..at].iter().chain(&chars[(at + n).min(chars.len())..]).collect()
        }
        Edit::Insert(at, t) => {
            let at = at.index(chars.len());
            chars[..at].iter().collect::<String>() + t + &chars[at..].iter().collect::<String>()
        }
        Edit::RepeatLine(at) => {
            let mut lines: Vec<&str> = text.lines().collect();
            let at = at.index(lines.len().max(1)).min(lines.len().saturating_sub(1));
            if let Some(line) = lines.get(at).copied() {
                lines.insert(at, line);
            }
            lines.join("\n")
        }
    }
}

/// `text` as `barrage experiment --dry-run FILE` takes it.
pub(super) fn check(text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("study.toml");
    std::fs::write(&path, text).unwrap();
    let args = ["barrage", "experiment", "--dry-run", path.to_str().unwrap()];
    let Command::Experiment(a) = Cli::try_parse_from(args).unwrap().command else { unreachable!() };
    within(text, || {
        if let Err(e) = crate::cmd::experiment::experiment(a, Default::default()) {
            assert!(format!("{e:#}").contains("study.toml"), "the error names the file: {e:#}");
        }
    });
}

proptest! {
    #![proptest_config(config(600))]

    /// Whatever the file holds, the dry run lists its cases or refuses it naming the file.
    #[test]
    fn experiment_files_dry_run_or_fail_cleanly(
        file in file(),
        edits in prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..3)],
    ) {
        let text = toml::to_string(&file).unwrap();
        let text = edits.iter().fold(text, |t, e| apply(&t, e));
        check(&text);
    }
}
