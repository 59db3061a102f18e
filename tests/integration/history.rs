//! The run history on the real workflow: runs of `barrage run` against origins whose latency
//! the test steps at a known run, kept as they finish, then `history trend`, `check`,
//! `regressions`, `import` and the control channel read back from the file.

use crate::util::{barrage, origin};
use barrage_server::{LatencyDist, ServeConfig, Shape};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// The smallest change the history keeps here. Three CPU burners beside this test moved a
/// run's p50 by up to 5% from its neighbours; a CI machine once found a lasting change at run
/// 4 in the series without a control, which only this bound tells from the system's. The step
/// is 20% (19% measured: the origin's latency steps, not the machine's own part).
const NOISE: &str = "10%";

/// A shape answering after 18–22 ms, `scale` times that.
fn latency(scale: f64) -> Shape {
    let ms = |m: f64| Duration::from_micros((m * scale * 1000.0) as u64);
    Shape { latency: Some(LatencyDist::Uniform(ms(18.0), ms(22.0))), ..Shape::default() }
}

fn history(db: &Path, args: &[&str]) -> Output {
    barrage().arg("history").args(args).args(["--history", db.to_str().unwrap()]).output().unwrap()
}

/// Checks `instance` against alternative `which` of `schema/history.schema.json` (0: list,
/// 1: series, 2: trend, 3: check, 4: show).
fn assert_schema(which: usize, instance: &Value) {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/history.schema.json");
    let mut schema: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let alternative = schema["anyOf"][which].clone();
    let root = schema.as_object_mut().unwrap();
    root.remove("anyOf");
    for (k, v) in alternative.as_object().unwrap() {
        root.insert(k.clone(), v.clone());
    }
    let v = jsonschema::draft202012::new(&schema).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(instance).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{instance:#}");
}

fn json(out: &Output) -> Value {
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// One short run of 20 requests by 2 workers against `url`, kept in `db` with `labels`.
fn run(db: &Path, url: &str, labels: &[&str]) {
    let mut c = barrage();
    c.args(["run", url, "-n", "20", "-c", "2", "--format", "json", "--history", db.to_str().unwrap()]);
    for l in labels {
        c.args(["--label", l]);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The change points of `figure` in the one series with `labels`: (run index in the series
/// from 1, regression, the machine's).
fn changes(db: &Path, figure: &str, labels: &str) -> Vec<(usize, bool, bool)> {
    let t = json(&history(db, &["trend", figure, "--where", labels, "--noise", NOISE, "--format", "json"]));
    assert_schema(2, &t);
    let series = t.as_array().unwrap();
    assert_eq!(series.len(), 1, "{labels}: {t}");
    let runs: Vec<i64> = series[0]["points"].as_array().unwrap().iter().map(|p| p["run"].as_i64().unwrap()).collect();
    assert_eq!(runs.len(), 40, "{labels}");
    series[0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let at = runs.iter().position(|r| Some(*r) == c["run"].as_i64()).unwrap() + 1;
            (at, c["regression"].as_bool().unwrap(), !c["machine"].is_null())
        })
        .collect()
}

/// 40 rounds of four series against origins on one machine: the control (`channel=control`)
/// and a system that both step up 20% at run 25 (the machine changed); a system that never
/// steps; a system that steps alone at run 25, on a machine without a control. The step is
/// found at run 25 ± 1 in each series that has one (in the lone system's, nowhere else),
/// the gate fails the stepped system by its 27th run and passes the steady one's last, and
/// only the system that stepped alone is a regression. Any other change on the control's
/// machine (the busy test machine's own) is the machine's.
#[test]
fn forty_runs_with_a_step_at_run_25_find_it_and_tell_the_machine_from_the_system() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let (reference, moved, steady, alone) = (
        origin(ServeConfig::default()),
        origin(ServeConfig::default()),
        origin(ServeConfig::default()),
        origin(ServeConfig::default()),
    );
    let url = |o: &barrage_server::RunningServer| format!("{}/obj/1", o.url());
    let (mut gate_failed_at, mut verdicts) = (Vec::new(), String::new());
    for round in 1..=40 {
        let scale = if round >= 25 { 1.2 } else { 1.0 };
        for o in [&reference, &moved, &alone] {
            o.set_shape(latency(scale)).unwrap();
        }
        steady.set_shape(latency(1.0)).unwrap();
        // The four series' runs side by side, as a machine running its suite would.
        std::thread::scope(|s| {
            s.spawn(|| run(&db, &url(&reference), &["channel=control", "series=ref"]));
            s.spawn(|| run(&db, &url(&moved), &["series=moved"]));
            s.spawn(|| run(&db, &url(&steady), &["series=steady"]));
            s.spawn(|| run(&db, &url(&alone), &["series=alone", "machine=other"]));
        });
        if (25..=28).contains(&round) {
            let gate =
                ["check", "--where", "series=alone", "--figure", "p50", "--confidence", "0.999", "--noise", NOISE];
            let out = history(&db, &gate);
            if out.status.code() == Some(1) {
                gate_failed_at.push(round);
            }
            let said = [&out.stdout[..], &out.stderr[..]].concat();
            verdicts += &format!("round {round}: {}", String::from_utf8_lossy(&said));
        }
    }
    assert!(
        gate_failed_at.iter().any(|r| *r == 26 || *r == 27),
        "the gate failed at rounds {gate_failed_at:?}\n{verdicts}"
    );
    // The gate passes the steady series' newest run (at 99.9%: a false alarm in 2,000).
    let gate = ["check", "--where", "series=steady", "--figure", "p50", "--confidence", "0.999", "--noise", NOISE];
    let out = history(&db, &gate);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let gates = json(&history(&db, &["check", "--where", "series=alone", "--format", "json"]));
    assert_schema(3, &gates);
    assert_schema(1, &json(&history(&db, &["list", "--series", "--format", "json"])));
    let near = |c: &[(usize, bool, bool)]| c.len() == 1 && (24..=26).contains(&c[0].0) && c[0].1;
    let stepped = |c: &[(usize, bool, bool)]| c.iter().any(|c| (24..=26).contains(&c.0) && c.1);
    let of = |labels: &str| changes(&db, "p50", labels);
    let (r, m, s, a) = (of("series=ref"), of("series=moved"), of("series=steady"), of("series=alone"));
    // On the control's machine, a busy spell of the test machine (a CI neighbour) is a real
    // change too: it may be found, and then it is the machine's, never the system's.
    assert!(stepped(&r) && r.iter().all(|c| c.2), "the control steps, the machine's: {r:?}");
    assert!(stepped(&m) && m.iter().all(|c| c.2), "a step the control shows too is the machine's: {m:?}");
    // No alert: no change for the worse that is not the machine's (the first runs of a cold
    // machine may be slower, a change for the better at run 4 or so).
    assert!(s.iter().all(|c| !c.1 || c.2), "no step, no regression of the system: {s:?}");
    assert!(near(&a) && !a[0].2, "a step of the system alone is a regression: {a:?}");
    // Above the step's size, `--noise` keeps no change.
    let t = json(&history(&db, &["trend", "p50", "--where", "series=alone", "--noise", "30%", "--format", "json"]));
    assert_eq!(t[0]["changes"], serde_json::json!([]), "{t}");
    // Regressions: only the system's fails.
    // (p50: the max of 20 requests moves with a busy machine's other work.)
    let out = history(&db, &["regressions", "--where", "series=alone", "--figure", "p50", "--noise", NOISE]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    for labels in ["series=ref", "series=moved", "series=steady"] {
        let out = history(&db, &["regressions", "--where", labels, "--figure", "p50", "--noise", NOISE]);
        assert_eq!(out.status.code(), Some(0), "{labels}: {}", String::from_utf8_lossy(&out.stdout));
    }
    // The last run of the stepped system against its 20th (not its first: a busy machine's
    // start-up slows the first runs), compared as `barrage compare` does.
    let runs = json(&history(&db, &["list", "--where", "series=alone", "--last", "40", "--format", "json"]));
    let ids: Vec<String> = runs.as_array().unwrap().iter().map(|r| r["id"].to_string()).collect();
    let out = history(&db, &["compare", &ids[0], "--against", &ids[20], "--fail-if", "p50>+5%"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    // Against the previous run (the default baseline), both after the step: only noise, up
    // to +10.5% between neighbours on a busy machine (a CI suite), and below the 20% step,
    // which a wrong baseline before the step would show.
    let out = history(&db, &["compare", &ids[0], "--fail-if", "p50>+15%"]);
    assert_eq!(out.status.code(), Some(0), "against the previous run: {}", String::from_utf8_lossy(&out.stdout));
    // The trend's page draws a chart per series.
    let page = dir.path().join("trend.html");
    let out = history(&db, &["trend", "p50", "--html", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&page).unwrap().contains("\"page\":\"trend\""));
    // A note on the time line shows in the series' trend.
    assert!(history(&db, &["annotate", "origin slowed", "--where", "series=alone"]).status.success());
    let out = history(&db, &["trend", "p50", "--where", "series=alone"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(": origin slowed"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Stale: every series had a run within the hour, none within a millisecond.
    assert_eq!(history(&db, &["stale", "--max-age", "1h"]).status.code(), Some(0));
    assert_eq!(history(&db, &["stale", "--max-age", "1ms"]).status.code(), Some(1));
    // gc keeps the newest 10 of each series and the baseline.
    assert!(history(&db, &["baseline", "set", "before", &ids[39]]).status.success());
    assert!(history(&db, &["gc", "--keep-last", "10"]).status.success());
    let kept = json(&history(&db, &["list", "--where", "series=alone", "--last", "100", "--format", "json"]));
    let kept: Vec<String> = kept.as_array().unwrap().iter().map(|r| r["id"].to_string()).collect();
    assert_eq!(kept.len(), 11, "{kept:?}");
    assert!(kept.contains(&ids[39]) && kept.contains(&ids[0]));
    assert!(history(&db, &["show", "before"]).status.success(), "a baseline by its name");
}

/// k6 summaries of a known p50 each (ms), a minute apart, imported into `db` as one series
/// labelled `series=NAME`.
fn import_p50s(dir: &Path, db: &Path, name: &str, p50s: &[f64]) {
    let files: Vec<String> = p50s
        .iter()
        .enumerate()
        .map(|(k, ms)| {
            let summary = serde_json::json!({
                "metadata": {"generatedAt": format!("2026-01-01T{:02}:{:02}:00Z", k / 60, k % 60)},
                "config": {"duration": 30},
                "results": {"metrics": [
                    {"name": "http_req_duration", "values": {"med": ms, "avg": ms}},
                    {"name": "http_reqs", "values": {"count": 3000, "rate": 100}},
                ]},
            });
            let file = dir.join(format!("{name}-{k:03}.json"));
            std::fs::write(&file, summary.to_string()).unwrap();
            file.to_str().unwrap().to_string()
        })
        .collect();
    let mut args = vec!["import", "--label"];
    let label = format!("series={name}");
    args.push(&label);
    args.extend(files.iter().map(String::as_str));
    let out = history(db, &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The gate on figures known exactly: a lasting shift under the default `--noise` (5%) is
/// within, however many runs show it (left out of the stretch as outside, it would fail
/// every run after it); a 20% step just after a 4% spell fails at the default, and slips
/// by with `--noise 0%`, where the spell is a change point and the stretch after it too
/// short to see anything.
#[test]
fn the_gates_noise_is_the_smallest_change_it_calls_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let jitter = [1.8, -1.4, 0.4, -2.2, 0.8, 0.0, -0.4, 1.4, -0.8, 2.2, -1.8, 0.4];
    let shift: Vec<f64> = (0..40).map(|k| if k < 30 { 100.0 } else { 104.0 } + jitter[k % 12] / 10.0).collect();
    import_p50s(dir.path(), &db, "shift", &shift);
    let mut step: Vec<f64> = (0..24).map(|k| if k < 20 { 100.0 } else { 104.0 } + jitter[k % 12]).collect();
    step.push(120.0);
    import_p50s(dir.path(), &db, "step", &step);
    let gate = |series: &str, extra: &[&str]| {
        let out = history(
            &db,
            &[&["check", "--where", series, "--figure", "p50", "--confidence", "0.999"][..], extra].concat(),
        );
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, said) = gate("series=shift", &[]);
    assert_eq!(code, Some(0), "a 4% shift is under the noise:\n{said}");
    // Its first run is outside the interval, and passes by the noise, said in the verdict.
    import_p50s(dir.path(), &db, "first", &shift[..31]);
    let (code, said) = gate("series=first", &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("outside, by no more than --noise of their mean"), "{said}");
    let (code, said) = gate("series=step", &[]);
    assert_eq!(code, Some(1), "the step after the spell:\n{said}");
    let (code, said) = gate("series=step", &["--noise", "0%"]);
    assert_eq!(code, Some(0), "no minimum: the spell cuts the stretch short:\n{said}");
}

fn list(db: &Path) -> Vec<Value> {
    let runs = json(&history(db, &["list", "--format", "json", "--last", "1000"]));
    assert_schema(0, &runs);
    runs.as_array().unwrap().clone()
}

/// Two processes started together by `--start-at`, of the same length: both finish within
/// a moment of each other, and both runs land.
#[test]
fn two_processes_finishing_at_once_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let server = origin(ServeConfig::default());
    let at = (std::time::SystemTime::now() + Duration::from_secs(2)).duration_since(std::time::UNIX_EPOCH).unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            barrage()
                .args(["run", &server.url(), "--rate", "200", "-d", "1s", "--format", "json"])
                .args(["--start-at", &at.as_secs().to_string(), "--history", db.to_str().unwrap()])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let runs = list(&db);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["series"], runs[1]["series"], "the same run twice: one series");
}

/// A split run's shards imported together are one run, with every request of the unsplit
/// run's count; `--no-history` keeps nothing, and the default history is the user's own.
#[test]
fn shards_import_as_one_run_and_the_default_history_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let server = origin(ServeConfig::default());
    let home = dir.path().join("home");
    let mut files = Vec::new();
    for i in 0..3 {
        let file = dir.path().join(format!("s{i}.brg"));
        let out = barrage()
            .args(["run", &server.url(), "--rate", "300", "-d", "1s", "--shard", &format!("{i}/3"), "--no-history"])
            .args(["-o", file.to_str().unwrap()])
            .env("XDG_DATA_HOME", &home)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        files.push(file);
    }
    assert!(!home.exists(), "--no-history keeps nothing, and makes no directory");
    let db = dir.path().join("history.db");
    let mut args = vec!["import", "--label", "branch=main"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    assert!(history(&db, &args).status.success());
    let runs = list(&db);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["shards"], 3);
    assert_eq!(runs[0]["labels"]["branch"], "main");
    let shown = json(&history(&db, &["show", &runs[0]["id"].to_string(), "--format", "json"]));
    assert_schema(4, &shown);
    assert_eq!(shown["pooled"]["requests"], 300, "every shard's requests, once: {shown}");
    // The default place: the user's data directory, the file for the user alone.
    let out = barrage().args(["run", &server.url(), "-n", "10"]).env("XDG_DATA_HOME", &home).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    use std::os::unix::fs::PermissionsExt;
    let file = home.join("barrage").join("history.db");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(list(&file).len(), 1);
}

/// `--control self` keeps a control run against barrage's own origin before the study's
/// first run, in the machine's control series.
#[test]
fn a_control_run_is_kept_before_the_study() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let server = origin(ServeConfig::default());
    let out = barrage()
        .args(["sweep", &server.url(), "-c", "1,2", "--step", "500ms", "--control", "self", "--format", "json"])
        .args(["--history", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = list(&db);
    let kinds: Vec<&str> = runs.iter().rev().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["control", "sweep", "sweep"], "{runs:?}");
    let control = runs.last().unwrap();
    assert_eq!(control["labels"]["channel"], "control");
    assert!(control["figures"]["throughput"].as_f64().unwrap() > 100.0, "{control}");
    assert_ne!(runs[0]["series"], runs[1]["series"], "each level its own series");
}

/// The peers' files come in with their figures, their format told from their first bytes
/// (wrk2's README output, JMeter's test file, HdrHistogram's jHiccup log), and a file of no
/// format barrage knows is refused in one line naming it.
#[test]
fn the_peers_files_import_with_their_figures() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/crates/history/tests/data");
    let files = ["wrk2-latency.txt", "jmeter-HTMLReportTestFile.csv", "jHiccup-2.0.7S.logV2.hlog"];
    let mut args = vec!["import".to_string(), "--label".into(), "team=web".into()];
    args.extend(files.iter().map(|f| format!("{data}/{f}")));
    let out = barrage().arg("history").args(&args).args(["--history", db.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = list(&db);
    let mut tools: Vec<&str> = runs.iter().map(|r| r["labels"]["tool"].as_str().unwrap()).collect();
    tools.sort();
    assert_eq!(tools, ["hdr-log", "jmeter", "wrk2"], "{runs:?}");
    let wrk2 = runs.iter().find(|r| r["labels"]["tool"] == "wrk2").unwrap();
    // The README's own figures: 2000.28 requests a second, p99 11.18 ms.
    assert!((wrk2["figures"]["throughput"].as_f64().unwrap() - 2000.28).abs() < 1.0, "{wrk2}");
    assert!((wrk2["figures"]["p99"].as_f64().unwrap() - 11_180.0).abs() < 20.0, "{wrk2}");
    assert!(runs.iter().all(|r| r["labels"]["team"] == "web" && r["kind"] == "import"));
    let junk = dir.path().join("notes.txt");
    std::fs::write(&junk, "nothing a tool wrote\n").unwrap();
    let out = history(&db, &["import", junk.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.lines().count() == 1 && err.contains("notes.txt") && err.contains("--from"), "{err}");
}

/// On a testbed the machine's control is kept by default, before the study; `--control
/// none` keeps none.
#[test]
fn a_run_on_a_testbed_keeps_the_machines_control_by_default() {
    let Some(bed) = crate::testbed::Testbed::up("direct", &["--backends", "1"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let run = |extra: &[&str]| {
        let out = barrage()
            .args(["run", &bed.url("origin-1"), "-n", "20", "-c", "2", "--format", "json", "--testbed"])
            .arg(bed.dir())
            .args(["--history", db.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    run(&[]);
    let kinds =
        |runs: Vec<Value>| runs.iter().rev().map(|r| r["kind"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(kinds(list(&db)), ["control", "run"]);
    run(&["--control", "none"]);
    assert_eq!(kinds(list(&db)), ["control", "run", "run"]);
}
