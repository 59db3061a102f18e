//! Every mode honours every flag it accepts, or refuses it (issue 32, finding 9: `sweep
//! --scenario FILE -c 4 --think-time 10ms` sent 43,433 req/s, `run` with the same flags
//! 343). Every flag of `run` (enumerated from clap's `RunArgs`, so a new flag cannot be
//! forgotten) goes through `sweep`, `capacity` and `experiment` (as a TOML key of a case),
//! against a URL and with `--scenario`, and each time either is refused (exit 2, one line
//! naming it) or changed what ran: what the first results file says was run (the plan,
//! labels, redaction, clock offset, the processes watched, the events), the files written,
//! the output's format and objectives, the metrics endpoint, or what the origin stored.
//!
//! Each flag is compared with the same command without it. Runs are short (200 ms levels
//! and probes at 20/s) against a testbed's `barrage serve` origin on loopback.

use crate::args;
use crate::testbed::Testbed;
use crate::util::barrage;
use clap::CommandFactory;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `run`'s flags alone.
#[derive(clap::Parser)]
#[command(name = "run")]
struct RunOnly {
    #[command(flatten)]
    run: args::RunArgs,
}

/// Every option of `run`: (long name, short name).
fn run_flags() -> Vec<(String, Option<char>)> {
    RunOnly::command()
        .get_arguments()
        .filter(|a| !a.is_positional() && a.get_long() != Some("help"))
        .map(|a| (a.get_long().expect("every option of run has a long name").to_string(), a.get_short()))
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Sweep,
    Capacity,
}

/// What the base command loads: a URL or a scenario of one flow.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Aim {
    Url,
    Scenario,
}

/// The load a flag is tried under (a think time is for closed loop).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Loop {
    Open,
    Closed,
}

/// How a flag is tried.
struct Sample {
    /// The flag with its values, as given on the command line.
    given: Vec<String>,
    /// Given with it and in the command it is compared with (what it needs: --body-size
    /// for --body-pattern); a flag of the base command given here replaces it.
    with: Vec<String>,
    /// The load of both commands.
    load: Loop,
    /// The flag replaces the URL or the scenario (`--targets FILE`).
    replaces_aim: bool,
    /// A path on the origin both commands send to instead of `/`.
    path: Option<String>,
    /// Meant only for this aim (`--var` needs a scenario): with the other, it must be
    /// refused.
    only: Option<Aim>,
    /// Flags a refusal may name instead of it: what it needs, beside those of `with`
    /// (`--junit` refused for want of `--slo`).
    needs: &'static [&'static str],
    /// Ran, it left this body stored at this path of the origin (what the plan cannot
    /// show: the bytes of a generated body).
    stored: Option<(String, &'static str)>,
}

impl Sample {
    /// The same, its stored body at a path of its own (`tag`): the walk runs side by side.
    fn apart(mut self, tag: &str) -> Sample {
        if let Some((path, _)) = &mut self.stored {
            path.push_str(&format!("-{tag}"));
            self.path = Some(path.clone());
        }
        self
    }
}

/// What the walk runs against, and the files flags name.
struct World {
    bed: Testbed,
    url: String,
    dir: tempfile::TempDir,
}

impl World {
    fn file(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// How each flag is tried. A flag with no entry fails the walk: give it one.
fn sample(flag: &str, w: &World) -> Sample {
    let plain = |given: Vec<String>| Sample {
        given,
        with: Vec::new(),
        load: Loop::Open,
        replaces_aim: false,
        path: None,
        only: None,
        needs: &[],
        stored: None,
    };
    let with = |given: Vec<String>, with: Vec<String>| Sample { with, ..plain(given) };
    let closed = |given: Vec<String>| Sample { load: Loop::Closed, ..plain(given) };
    let aim = |given: Vec<String>| Sample { replaces_aim: true, ..plain(given) };
    let templated = |given: Vec<String>| Sample { path: Some("/obj/{id}".into()), ..plain(given) };
    let origin = w.bed.addr("origin-1");
    match flag {
        // Load
        "rate" => plain(s(&["--rate", "30"])),
        "step" => plain(s(&["--step", "300ms"])),
        "max-in-flight" => plain(s(&["--max-in-flight", "7"])),
        "send-precision" => plain(s(&["--send-precision", "100us"])),
        "concurrency" => closed(s(&["-c", "3"])),
        "think-time" => closed(s(&["--think-time", "20ms"])),
        "rate-cap" => closed(s(&["--rate-cap", "10"])),
        "duration" => plain(s(&["-d", "300ms"])),
        "requests" => plain(s(&["-n", "3"])),
        "threads" => plain(s(&["--threads", "1"])),
        // Connections
        "connections" => plain(s(&["--connections", "3"])),
        "no-keepalive" => plain(s(&["--no-keepalive"])),
        "http2" => plain(s(&["--http2"])),
        "streams" => plain(s(&["--streams", "2"])),
        "rounds" => Sample { load: Loop::Closed, ..with(s(&["--rounds"]), s(&["--streams", "2"])) },
        "http3" => plain(s(&["--http3"])),
        "cacert" => plain(vec!["--cacert".into(), w.bed.state.ca.as_ref().expect("a CA").display().to_string()]),
        "insecure" => plain(s(&["-k"])),
        "resolve" => plain(vec!["--resolve".into(), format!("walk.test:{}:127.0.0.1", origin.port())]),
        "bind" => plain(s(&["--bind", "127.0.0.1"])),
        "timeout" => plain(s(&["--timeout", "7s"])),
        "connect-timeout" => plain(s(&["--connect-timeout", "3s"])),
        // Key-value: an HTTP run refuses them (a Redis run's are its plan).
        "servers" => plain(s(&["--servers", "redis://127.0.0.1:1"])),
        "protocol" => plain(s(&["--protocol", "resp3"])),
        "ratio" => plain(s(&["--ratio", "1:1"])),
        "key-prefix" => plain(s(&["--key-prefix", "walk-"])),
        "key-minimum" => plain(s(&["--key-minimum", "5"])),
        "key-maximum" => plain(s(&["--key-maximum", "50"])),
        "key-pattern" => plain(s(&["--key-pattern", "R"])),
        "data-size" => plain(s(&["--data-size", "64"])),
        "data-size-range" => plain(s(&["--data-size-range", "10-20"])),
        "data-size-list" => plain(s(&["--data-size-list", "10:1,20:1"])),
        "pipeline" => plain(s(&["--pipeline", "2"])),
        "command" => plain(s(&["--command", "PING"])),
        "distribution" => plain(s(&["--distribution", "modulo"])),
        // Request
        "targets" => aim(vec!["--targets".into(), w.file("targets.txt")]),
        "urls" => aim(vec!["--urls".into(), w.file("urls.txt")]),
        "pick" => plain(s(&["--pick", "random"])),
        "objects" => Sample { with: s(&["--objects", "3"]), ..templated(s(&["--objects", "5"])) },
        "scenario" => aim(vec!["--scenario".into(), w.file("other-scenario.toml")]),
        "var" => Sample { only: Some(Aim::Scenario), needs: &["scenario"], ..plain(s(&["--var", "size=20"])) },
        "hit-ratio" => Sample { with: s(&["--objects", "100"]), ..templated(s(&["--hit-ratio", "0.5"])) },
        "phases" => plain(s(&["--phases", "fill,measure"])),
        "seed" => plain(s(&["--seed", "9"])),
        "method" => plain(s(&["-X", "PUT"])),
        "header" => plain(s(&["-H", "X-Walk: 1"])),
        "body" => plain(s(&["--body", "hello"])),
        "body-size" => plain(s(&["--body-size", "16"])),
        "body-pattern" => Sample {
            stored: Some(("/walk/pattern".into(), "abababab")),
            ..with(s(&["--body-pattern", "ab"]), s(&["-X", "PUT", "--body-size", "8"]))
        },
        "body-unique" => with(s(&["--body-unique"]), s(&["--body-size", "8"])),
        "form" => plain(s(&["--form", "a=b"])),
        // Measure
        "cache-rule" => plain(s(&["--cache-rule", "X-Walk~^h=hit"])),
        "backend-header" => plain(s(&["--backend-header", "X-Walk"])),
        // Watch: the origin is the testbed's; --testbed names it (the default names none).
        "monitor" => plain(vec!["--monitor".into(), w.bed.state.servers[0].pid.expect("running").to_string()]),
        "at" => plain(s(&["--at", "50ms", "true"])),
        "testbed" => plain(vec!["--testbed".into(), w.bed.dir().display().to_string()]),
        // Gates
        "slo" => plain(s(&["--slo", "p99<10s"])),
        "junit" => with(vec!["--junit".into(), "junit.xml".into()], s(&["--slo", "p99<10s"])),
        // Retries
        "retries" => plain(s(&["--retries", "2"])),
        "backoff" => with(s(&["--backoff", "5ms..50ms"]), s(&["--retries", "2"])),
        "retry-on" => with(s(&["--retry-on", "5xx"]), s(&["--retries", "2"])),
        // Output
        "format" => plain(s(&["--format", "csv"])),
        "html" => plain(s(&["--html", "report.html"])),
        "xlsx" => plain(s(&["--xlsx", "report.xlsx"])),
        "csv-dir" => plain(s(&["--csv-dir", "tables"])),
        "output" => plain(s(&["-o", "elsewhere"])),
        "log" => plain(s(&["--log", "requests.jsonl"])),
        "log-sample" => with(s(&["--log-sample", "0.5"]), s(&["--log", "requests.jsonl"])),
        "hdr-log" => plain(s(&["--hdr-log", "latency.hlog"])),
        "redact-header" => plain(s(&["--redact-header", "X-Walk"])),
        "no-redact" => plain(s(&["--no-redact"])),
        "tui" => plain(s(&["--tui"])),
        "metrics-addr" => plain(s(&["--metrics-addr", "127.0.0.1:0"])),
        // Tracing: the plan's view says it (the share and the bytes per request).
        "trace-context" => plain(s(&["--trace-context"])),
        "trace-sample" => plain(s(&["--trace-sample", "0.5"])),
        // Refused: a study's pages have no trace ids to link.
        "trace-url" => plain(s(&["--trace-url", "http://localhost:16686/trace/{trace_id}"])),
        // OpenTelemetry: to a collector that refuses (the run says so on stderr); the
        // results file's settings say how it was exported.
        "otlp" => plain(vec!["--otlp".into(), crate::util::refused_url()]),
        "otlp-protocol" => with(s(&["--otlp-protocol", "grpc"]), vec!["--otlp".into(), crate::util::refused_url()]),
        "otlp-temporality" => {
            with(s(&["--otlp-temporality", "cumulative"]), vec!["--otlp".into(), crate::util::refused_url()])
        }
        "otlp-scale" => with(s(&["--otlp-scale", "4"]), vec!["--otlp".into(), crate::util::refused_url()]),
        // Scale-out
        "shard" => plain(s(&["--shard", "0/2"])),
        "start-at" => {
            let soon = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 2;
            plain(vec!["--start-at".into(), soon.to_string()])
        }
        "clock-offset" => plain(s(&["--clock-offset", "+1ms"])),
        // A study is a series of runs: it streams none to a collector (refused).
        "report-to" => with(vec!["--report-to".into(), crate::util::refused_url()], s(&["--shard", "0/1"])),
        "rendezvous" => with(
            s(&["--rendezvous"]),
            vec!["--report-to".into(), crate::util::refused_url(), "--shard".into(), "0/1".into()],
        ),
        "resume-at" => {
            let soon = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 2;
            with(s(&["--resume-at", "1s"]), vec!["--shard".into(), "0/2".into(), "--start-at".into(), soon.to_string()])
        }
        "resume-after" => {
            let soon = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 2;
            let base = ["--resume-at", "1s", "--shard", "0/2", "--threads", "2", "--start-at"].map(String::from);
            with(s(&["--resume-after", "5:3,4"]), [base.to_vec(), vec![soon.to_string()]].concat())
        }
        // A run of an experiment made elsewhere: its stream.
        "study-index" => plain(s(&["--study-index", "3"])),
        // History
        "history" => plain(s(&["--history", "kept.db"])),
        "no-history" => plain(s(&["--no-history"])),
        "label" => plain(s(&["--label", "walk=1"])),
        "control" => plain(s(&["--control", "self"])),
        other => panic!("--{other} is a flag of run the walk does not know: give it a sample in modes.rs"),
    }
}

/// A command line as (flag, values) groups, so that a flag given replaces the base's.
fn groups(args: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for a in args {
        match out.last_mut() {
            Some(g) if !a.starts_with('-') || a.parse::<f64>().is_ok() => g.push(a.clone()),
            _ => out.push(vec![a.clone()]),
        }
    }
    out
}

/// `base`, then `over`: a group of the same flag given later replaces the one before.
fn overlay(base: &[String], over: &[String]) -> Vec<String> {
    let alias = |f: &str| match f {
        "-c" => "--concurrency".to_string(),
        "-o" => "--output".to_string(),
        "-d" => "--duration".to_string(),
        other => other.to_string(),
    };
    let mut out: Vec<Vec<String>> = Vec::new();
    for g in groups(base).into_iter().chain(groups(over)) {
        if !repeatable(&g[0]) {
            out.retain(|o| alias(&o[0]) != alias(&g[0]));
        }
        out.push(g);
    }
    out.concat()
}

/// Flags given several times add up rather than replace.
fn repeatable(flag: &str) -> bool {
    matches!(flag, "-H" | "--at" | "--monitor")
}

/// What a command showed of what it ran.
#[derive(Debug)]
struct Ran {
    code: Option<i32>,
    stderr: String,
    what: Value,
}

/// Runs `barrage ARGS` in `dir` and gathers what it shows of what it ran.
fn run_in(w: &World, dir: &Path, args: &[String], stored: Option<&str>, results: &str) -> Ran {
    std::fs::create_dir_all(dir).unwrap();
    // Its runs kept in its own directory, so that what it kept is seen.
    let out = barrage()
        .args(args)
        .current_dir(dir)
        .env("BARRAGE_TESTBED_DIR", w.dir.path().join("no-testbed"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut files: Vec<String> = walk(dir).into_iter().filter(|f| !f.ends_with(".brg")).collect();
    files.sort();
    let first = walk(dir).into_iter().filter(|f| f.ends_with(".brg") && f.starts_with(results)).min();
    let format = match stdout.trim_start().chars().next() {
        Some('{') => "json",
        Some('<') => "html",
        _ if stdout.lines().next().is_some_and(|l| l.contains(',')) => "csv",
        _ => "text",
    };
    let objectives: Value = serde_json::from_str::<Value>(&stdout)
        .ok()
        .and_then(|v| v.get("levels").or(v.get("probes")).and_then(|r| r.get(0)).cloned())
        .map_or(Value::Null, |row| {
            row["slos"]
                .as_array()
                .map_or(Value::Null, |a| json!(a.iter().map(|s| s["slo"].clone()).collect::<Vec<_>>()))
        });
    let what = json!({
        "run": first.map(|f| results_view(&dir.join(f))),
        "files": files,
        "format": format,
        "objectives": objectives,
        "metrics": stderr.contains("/metrics"),
        "stored": stored.map(|path| crate::util::http_get(w.bed.addr("origin-1"), path)),
        "kept": kept(dir),
    });
    Ran { code: out.status.code(), stderr, what }
}

/// What the run history kept of the runs (at the default place or `--history kept.db`):
/// each run's kind and labels.
fn kept(dir: &Path) -> Value {
    let db = [dir.join("kept.db"), dir.join("data/barrage/history.db")].into_iter().find(|p| p.is_file());
    let Some(db) = db else { return Value::Null };
    let out = barrage().args(["history", "list", "--format", "json", "--history"]).arg(&db).output().unwrap();
    let runs: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let runs = runs.as_array().cloned().unwrap_or_default();
    json!(runs.iter().map(|r| json!([r["kind"], r["labels"]])).collect::<Vec<_>>())
}

/// What a results file says was run.
fn results_view(path: &Path) -> Value {
    let r = barrage_metrics::ResultsReader::open(path).unwrap();
    let h = r.header();
    let settings: Value = serde_json::from_str(&h.settings_json).unwrap();
    let summary = barrage_metrics::summary::summarize(&[path.to_path_buf()]).unwrap();
    json!({
        "settings": settings,
        "clock_offset_us": h.launch.clock_offset_us,
        "watched": summary.processes.iter().map(|p| p.name.clone()).filter(|n| n != "barrage").collect::<Vec<_>>(),
        "events": summary.events.iter().map(|e| e.command.clone()).collect::<Vec<_>>(),
    })
}

/// Files under `dir`, relative to it.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    out
}

/// Refused as the walk expects: exit 2 and one line naming the flag (by its long or short
/// name), or a flag it needs (`--body-size` for `--body-pattern`, refused with `--scenario`).
fn refused(r: &Ran, names: &Names) -> Result<bool, String> {
    if r.code != Some(2) {
        return Ok(false);
    }
    let line = r.stderr.trim_end();
    // As a flag (`--at`), a quoted key (`'at'`) or a key set (`at = …`), not any word.
    let named = names
        .long
        .iter()
        .any(|l| [format!("--{l}"), format!("'{l}'"), format!("{l} =")].iter().any(|n| line.contains(n)))
        || names.short.is_some_and(|c| line.contains(&format!("-{c} ")) || line.contains(&format!("-{c}/")));
    if line.lines().count() != 1 || !named {
        return Err(format!("refused, but not in one line naming {:?}: {line}", names.long));
    }
    Ok(true)
}

/// What a refusal of a flag may name.
struct Names {
    long: Vec<String>,
    short: Option<char>,
}

impl Names {
    fn of(long: &str, short: Option<char>, sample: &Sample) -> Names {
        let mut names = vec![long.to_string()];
        names.extend(sample.with.iter().filter(|a| a.starts_with("--")).map(|a| a.trim_start_matches('-').to_string()));
        names.extend(sample.needs.iter().map(|n| n.to_string()));
        Names { long: names, short }
    }
}

/// Where two views differ, as JSON pointers.
fn differences(a: &Value, b: &Value, at: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (a, b) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                differences(a, b, &format!("{at}/{k}"), out);
            }
        }
        _ if a != b => out.push(at.to_string()),
        _ => {}
    }
}

/// The verdict on one flag in one mode: how it was refused or what it changed, else why
/// it was neither.
fn judge(with: &Ran, without: &Ran, names: &Names, stored: Option<&str>) -> Result<String, String> {
    if refused(with, names)? {
        return Ok(format!("refused: {}", with.stderr.trim_end()));
    }
    if !matches!(without.code, Some(0 | 1)) {
        return Err(format!("the command without it failed ({:?}): {}", without.code, without.stderr.trim_end()));
    }
    if !matches!(with.code, Some(0 | 1)) {
        return Err(format!("neither refused nor ran ({:?}): {}", with.code, with.stderr.trim_end()));
    }
    if let Some(want) = stored {
        let got = with.what["stored"].as_str().unwrap_or_default();
        return match got.ends_with(want) {
            true => Ok(format!("changed what the origin stored: {want}")),
            false => Err(format!("the origin stored {got:?}, not {want:?}")),
        };
    }
    let mut changed = Vec::new();
    differences(&without.what, &with.what, "", &mut changed);
    if changed.is_empty() {
        return Err(format!("accepted and nothing changed: {}", with.what));
    }
    Ok(format!("changed {}", changed.join(", ")))
}

/// The base command of a mode (flags before the aim's).
fn base(mode: Mode, load: Loop) -> Vec<String> {
    let load = match load {
        Loop::Open => s(&["--rate", "20"]),
        Loop::Closed => s(&["-c", "2"]),
    };
    match mode {
        Mode::Sweep => [s(&["sweep", "--step", "200ms", "-o", "out", "--format", "json"]), load].concat(),
        Mode::Capacity => s(&[
            "capacity",
            "--slo",
            "p50<10s",
            "--start-rate",
            "20",
            "--max-rate",
            "20",
            "--step",
            "200ms",
            "-o",
            "out",
            "--format",
            "json",
        ]),
    }
}

/// One flag through `sweep` or `capacity`, with and without it.
fn through_cli(w: &World, mode: Mode, aim: Aim, long: &str, short: Option<char>, n: usize) -> Result<String, String> {
    let sample = sample(long, w).apart(&format!("{mode:?}-{aim:?}"));
    let aim_args = |path: Option<&str>| match aim {
        Aim::Url => vec![format!("{}{}", w.url.trim_end_matches('/'), path.unwrap_or("/"))],
        Aim::Scenario => vec!["--scenario".to_string(), w.file("scenario.toml")],
    };
    let without = overlay(&base(mode, sample.load), &sample.with);
    let without = [without, aim_args(sample.path.as_deref())].concat();
    let mut with = overlay(&base(mode, sample.load), &[sample.with.clone(), sample.given.clone()].concat());
    if !sample.replaces_aim {
        with.extend(aim_args(sample.path.as_deref()));
    }
    let root = w.dir.path().join(format!("{mode:?}-{aim:?}-{n}"));
    let results = if long == "output" { "elsewhere" } else { "out" };
    let stored = sample.stored.as_ref().map(|(p, _)| p.as_str());
    let names = Names::of(long, short, &sample);
    let shown =
        |e: String| format!("{e}\n    without: barrage {}\n    with:    barrage {}", without.join(" "), with.join(" "));
    if sample.only.is_some_and(|only| only != aim) {
        let b = run_in(w, &root.join("with"), &with, None, results);
        return match refused(&b, &names) {
            Ok(true) => Ok(format!("refused: {}", b.stderr.trim_end())),
            Ok(false) => Err(shown(format!("meant for {:?}, yet not refused ({:?})", sample.only, b.code))),
            Err(e) => Err(shown(e)),
        };
    }
    let a = run_in(w, &root.join("without"), &without, stored, "out");
    let b = run_in(w, &root.join("with"), &with, stored, results);
    judge(&b, &a, &names, sample.stored.as_ref().map(|(_, body)| *body)).map_err(shown)
}

/// A case's settings in TOML: `--flag value` as `flag = "value"`, a bare flag as `true`,
/// a flag of two values (`--at 10s CMD`) as a list of lists.
fn settings(args: &[String]) -> Vec<(String, Value)> {
    let long = |f: &str| match f {
        "-c" => "concurrency".to_string(),
        "-d" => "duration".to_string(),
        "-n" => "requests".to_string(),
        "-k" => "insecure".to_string(),
        "-X" => "method".to_string(),
        "-H" => "header".to_string(),
        "-o" => "output".to_string(),
        f => f.trim_start_matches('-').to_string(),
    };
    let mut out: Vec<(String, Value)> = Vec::new();
    for g in groups(args) {
        let value = match &g[1..] {
            [] => json!(true),
            [v] => json!(v),
            vs => json!([vs]),
        };
        out.push((long(&g[0]), value));
    }
    out
}

fn toml_value(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::String(s) => toml::Value::String(s.clone()).to_string(),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        other => panic!("{other}"),
    }
}

/// A level of the one factor: its settings as an inline table.
fn level(name: &str, settings: &[(String, Value)]) -> String {
    let kv: Vec<String> = settings.iter().map(|(k, v)| format!("{k} = {}", toml_value(v))).collect();
    format!("{} = {{ {} }}\n", toml::Value::String(name.into()), kv.join(", "))
}

/// The settings of a flag's case, without (`given` false) or with it.
fn case(w: &World, aim: Aim, sample: &Sample, given: bool) -> Vec<(String, Value)> {
    let load = match sample.load {
        Loop::Open => s(&["--rate", "20"]),
        Loop::Closed => s(&["-c", "2"]),
    };
    let mut args = [load, sample.with.clone()].concat();
    if given {
        args = overlay(&args, &sample.given);
    }
    let mut out = settings(&args);
    if !(given && sample.replaces_aim) {
        out.push(match aim {
            Aim::Url => (
                "url".into(),
                json!(format!("{}{}", w.url.trim_end_matches('/'), sample.path.as_deref().unwrap_or("/"))),
            ),
            Aim::Scenario => ("scenario".into(), json!(w.file("scenario.toml"))),
        });
    }
    out
}

fn experiment_file(path: &Path, levels: &str) {
    std::fs::write(path, format!("duration = \"200ms\"\n\n[factors.flag]\n{levels}")).unwrap();
}

/// A flag an experiment accepted: its name, its case's level, what a refusal may name, and
/// the body it should leave stored.
type Accepted = (String, String, Names, Option<(String, &'static str)>);

/// Every flag through experiments: refused ones found by `--dry-run`, one case each; the
/// others in two experiments of one case per flag, the first without the flags and the
/// second with them, in the same order (a case's request stream derives from its place).
fn through_experiment(w: &World, aim: Aim, flags: &[(String, Option<char>)]) -> (Vec<String>, Vec<String>) {
    let dir = w.dir.path().join(format!("experiment-{aim:?}"));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut failures, mut verdicts) = (Vec::new(), Vec::new());
    let (mut withouts, mut withs) = (String::new(), String::new());
    let mut accepted: Vec<Accepted> = Vec::new();
    for (n, (long, short)) in flags.iter().enumerate() {
        let sample = sample(long, w).apart(&format!("experiment-{aim:?}"));
        let names = Names::of(long, *short, &sample);
        // Named apart from the flag, so that a refusal names the flag only if it says it.
        let name = format!("case-{n}");
        let (without, with) = (level(&name, &case(w, aim, &sample, false)), level(&name, &case(w, aim, &sample, true)));
        let file = dir.join(format!("dry-{n}.toml"));
        experiment_file(&file, &with);
        let out = barrage().arg("experiment").arg(&file).arg("--dry-run").output().unwrap();
        let ran =
            Ran { code: out.status.code(), stderr: String::from_utf8_lossy(&out.stderr).into(), what: Value::Null };
        match refused(&ran, &names) {
            Ok(true) => verdicts.push(format!("experiment {aim:?} {long}: refused: {}", ran.stderr.trim_end())),
            Ok(false) if sample.only.is_some_and(|only| only != aim) => {
                failures.push(format!("experiment {aim:?} {long}: meant for {:?}, yet not refused", sample.only))
            }
            Ok(false) if ran.code != Some(0) => {
                failures.push(format!("experiment {aim:?} {long}: --dry-run failed: {}", ran.stderr.trim_end()))
            }
            Ok(false) => {
                withouts.push_str(&without);
                withs.push_str(&with);
                accepted.push((long.clone(), name, names, sample.stored));
            }
            Err(e) => failures.push(format!("experiment {aim:?} {long}: {e}")),
        }
    }
    let run = |name: &str, levels: &str| -> Result<(PathBuf, Value), String> {
        let file = dir.join(format!("{name}.toml"));
        experiment_file(&file, levels);
        let results = dir.join(format!("{name}.results"));
        let out = barrage()
            .arg("experiment")
            .arg(&file)
            .arg("-o")
            .arg(&results)
            .env("BARRAGE_TESTBED_DIR", w.dir.path().join("no-testbed"))
            .output()
            .unwrap();
        if !matches!(out.status.code(), Some(0 | 1)) {
            return Err(format!("experiment {aim:?}: {name} failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let manifest = serde_json::from_slice(&std::fs::read(results.join("experiment.json")).unwrap()).unwrap();
        Ok((results, manifest))
    };
    // The stored body is read after each experiment: only the flag's own case writes there.
    let stored_after = |accepted: &[Accepted]| -> Vec<Option<String>> {
        let origin = w.bed.addr("origin-1");
        accepted.iter().map(|(_, _, _, s)| s.as_ref().map(|(p, _)| crate::util::http_get(origin, p))).collect()
    };
    let without = run("without", &withouts).map(|r| (r, stored_after(&accepted)));
    let with = run("with", &withs).map(|r| (r, stored_after(&accepted)));
    let (((without, without_manifest), without_stored), ((with, with_manifest), with_stored)) = match (without, with) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            failures.extend(a.err().into_iter().chain(b.err()));
            return (failures, verdicts);
        }
    };
    let view = |results: &Path, manifest: &Value, level: &str| -> Value {
        let case = manifest["cases"].as_array().unwrap().iter().find(|c| c["levels"]["flag"] == level);
        let id = case.unwrap_or_else(|| panic!("no case {level}: {manifest}"))["id"].as_str().unwrap().to_string();
        let file =
            walk(results).into_iter().filter(|f| f.starts_with(&format!("{id}.r1")) && f.ends_with(".brg")).min();
        let file = file.unwrap_or_else(|| panic!("no results of {id} ({level})"));
        json!({ "run": results_view(&results.join(&file)), "files": file })
    };
    for (k, (long, name, names, stored)) in accepted.iter().enumerate() {
        let ran = |what: Value| Ran { code: Some(0), stderr: String::new(), what };
        let (a, b) = match stored {
            Some(_) => (json!({ "stored": without_stored[k] }), json!({ "stored": with_stored[k] })),
            None => (view(&without, &without_manifest, name), view(&with, &with_manifest, name)),
        };
        match judge(&ran(b), &ran(a), names, stored.as_ref().map(|(_, body)| *body)) {
            Ok(v) => verdicts.push(format!("experiment {aim:?} {long}: {v}")),
            Err(e) => failures.push(format!("experiment {aim:?} {long}: {e}")),
        }
    }
    (failures, verdicts)
}

/// The files the flags name, and the testbed.
fn world() -> Option<World> {
    let bed = Testbed::up("direct", &["--backends", "1", "--tls"])?;
    let url = bed.url("origin-1");
    let dir = tempfile::tempdir().unwrap();
    let host = bed.addr("origin-1");
    let scenario = |size: &str| {
        format!("[vars]\nhost = \"{host}\"\nsize = \"{size}\"\n\n[[flow.f.step]]\nname = \"get\"\nurl = \"http://{{{{host}}}}/bytes/{{{{size}}}}\"\n")
    };
    std::fs::write(dir.path().join("scenario.toml"), scenario("10")).unwrap();
    std::fs::write(dir.path().join("other-scenario.toml"), scenario("30")).unwrap();
    std::fs::write(dir.path().join("targets.txt"), format!("GET http://{host}/bytes/11\n")).unwrap();
    std::fs::write(dir.path().join("urls.txt"), format!("http://{host}/bytes/12\n")).unwrap();
    std::fs::create_dir(dir.path().join("no-testbed")).unwrap();
    Some(World { bed, url, dir })
}

#[test]
fn every_mode_honours_every_flag_of_run_or_refuses_it() {
    let Some(w) = world() else { return };
    let flags = run_flags();
    assert!(flags.len() > 70, "{flags:?}");
    // Every flag has a sample before anything runs.
    flags.iter().for_each(|(long, _)| drop(sample(long, &w)));
    let mut jobs = Vec::new();
    for (n, (long, short)) in flags.iter().enumerate() {
        for (mode, aim) in [(Mode::Sweep, Aim::Url), (Mode::Sweep, Aim::Scenario), (Mode::Capacity, Aim::Url)] {
            jobs.push((mode, aim, long.clone(), *short, n));
        }
    }
    let (failures, verdicts) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()));
    let jobs = Mutex::new(jobs);
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| loop {
                let Some((mode, aim, long, short, n)) = jobs.lock().unwrap().pop() else { break };
                match through_cli(&w, mode, aim, &long, short, n) {
                    Ok(v) => verdicts.lock().unwrap().push(format!("{mode:?} {aim:?} --{long}: {v}")),
                    Err(e) => failures.lock().unwrap().push(format!("{mode:?} {aim:?} --{long}: {e}")),
                }
            });
        }
        for aim in [Aim::Url, Aim::Scenario] {
            let (w, flags, failures, verdicts) = (&w, &flags, &failures, &verdicts);
            scope.spawn(move || {
                let (bad, good) = through_experiment(w, aim, flags);
                failures.lock().unwrap().extend(bad);
                verdicts.lock().unwrap().extend(good);
            });
        }
    });
    // What each flag did, for whoever reads the test's output (`--nocapture`).
    let mut verdicts = verdicts.into_inner().unwrap();
    verdicts.sort();
    eprintln!("{}", verdicts.join("\n"));
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    assert!(failures.is_empty(), "{} flag(s) neither refused nor honoured:\n{}", failures.len(), failures.join("\n"));
}

/// The finding itself, in numbers: a think time between a scenario's flows in a sweep's
/// level is the think time `run` keeps.
#[test]
fn a_sweep_of_a_scenario_keeps_its_think_time() {
    let Some(w) = world() else { return };
    let scenario = w.file("scenario.toml");
    let out = barrage()
        .args(["sweep", "--scenario", &scenario, "-c", "2", "--think-time", "50ms", "--step", "1s", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let throughput = v["levels"][0]["throughput_per_sec"].as_f64().unwrap();
    // Two workers, each a request of about a millisecond then 50 ms of thought: under 40/s.
    assert!(throughput < 45.0, "think time dropped: {throughput}/s: {v}");
}
