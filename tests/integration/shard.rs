//! Issue 16: one run split over shards (`--shard i/N`), started together (`--start-at`),
//! merged by `barrage report`: the shards together are the unsplit run, request for
//! request; an incomplete set is refused; a shard that fell behind is flagged.

use crate::util::{barrage, http_get, origin};
use barrage_server::{LatencyDist, ServeConfig};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Requests the origin has served, by its own count.
fn served(addr: std::net::SocketAddr) -> u64 {
    serde_json::from_str::<Value>(&http_get(addr, "/_barrage/stats")).unwrap()["requests"].as_u64().unwrap()
}

/// A start time `lead` from now, as Unix seconds: every shard is spawned well before it.
fn start_in(lead: Duration) -> String {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + lead;
    format!("{}.{:06}", t.as_secs(), t.subsec_micros())
}

/// Runs `barrage run` with `args` plus each shard's own flags, all at once, and waits.
fn shards(dir: &Path, args: &[String], each: impl Fn(usize) -> Vec<String>) -> Vec<Output> {
    let children: Vec<_> = (0..3)
        .map(|i| {
            let out = dir.join(format!("s{i}.brg"));
            let log = dir.join(format!("s{i}.csv"));
            barrage()
                .arg("run")
                .args(args)
                .args(each(i))
                .args(["-o", out.to_str().unwrap(), "--log", log.to_str().unwrap(), "--format", "json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children.into_iter().map(|c| c.wait_with_output().unwrap()).collect()
}

/// (intended start from the first request's, URL) of every row of request logs, and every
/// row's corrected latency.
pub(crate) fn log_rows(paths: &[std::path::PathBuf]) -> (Vec<(u64, String)>, Vec<u64>) {
    let mut rows = Vec::new();
    let mut corrected = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(p).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        for line in lines {
            let f: Vec<&str> = line.split(',').collect();
            rows.push((f[col("intended_unix_us")].parse::<u64>().unwrap(), f[col("url")].to_string()));
            corrected.push(f[col("corrected_us")].parse::<u64>().unwrap());
        }
    }
    let first = rows.iter().map(|r| r.0).min().unwrap();
    let mut rows: Vec<_> = rows.into_iter().map(|(t, u)| (t - first, u)).collect();
    rows.sort();
    corrected.sort();
    (rows, corrected)
}

/// The issue's proof: three shards of the same plan with a common start, merged, are the
/// unsplit run: the same count (the origin's own), the same (intended time, URL) set from
/// the request logs, percentiles equal to the logs' within histogram precision and to the
/// origin's known latency distribution.
#[test]
fn three_shards_together_are_the_unsplit_run() {
    let delay = LatencyDist::Uniform(Duration::from_millis(10), Duration::from_millis(50));
    let o = origin(ServeConfig { latency: Some(delay), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/obj/{{id}}", o.url());
    let plan: Vec<String> =
        ["--rate", "300", "-n", "600", "--pick", "zipf:1.0", "--objects", "5000", "--seed", "7", &url]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let whole_log = dir.path().join("whole.csv");
    let out = barrage()
        .arg("run")
        .args(&plan)
        .args(["--log", whole_log.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let before = served(o.addr());
    let at = start_in(Duration::from_secs(2));
    let outs = shards(dir.path(), &plan, |i| {
        vec![
            "--shard".into(),
            format!("{i}/3"),
            "--start-at".into(),
            at.clone(),
            "--bind".into(),
            format!("127.0.0.{}", i + 2),
        ]
    });
    for out in &outs {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(served(o.addr()) - before, 600, "the origin served the whole run once");
    // Each shard sent its exact part: 200 of 600.
    for out in &outs {
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["requests"]["sent"], 200, "{v}");
    }
    let files: Vec<_> = (0..3).map(|i| dir.path().join(format!("s{i}.brg"))).collect();
    let merged = barrage().arg("report").args(&files).args(["--format", "json"]).output().unwrap();
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let m: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(m["requests"]["total"], 600);
    assert_eq!(m["shards"].as_array().unwrap().len(), 3);
    let sent: Vec<u64> = m["shards"].as_array().unwrap().iter().map(|r| r["sent"].as_u64().unwrap()).collect();
    assert_eq!(sent, [200, 200, 200]);
    // Request for request: the same intended times (from the common start) and URLs.
    let (whole, _) = log_rows(&[whole_log]);
    let logs: Vec<_> = (0..3).map(|i| dir.path().join(format!("s{i}.csv"))).collect();
    let (split, corrected) = log_rows(&logs);
    assert_eq!(whole.len(), 600);
    assert_eq!(whole, split, "the shards' stream is the unsplit run's");
    let urls: BTreeSet<&String> = split.iter().map(|r| &r.1).collect();
    assert!(urls.len() > 50, "zipf over 5000 ids picks many ({})", urls.len());
    // The merged percentiles are the logs' (HdrHistogram keeps 3 significant digits).
    for (q, key) in [(0.5, "p50_us"), (0.9, "p90_us"), (0.99, "p99_us")] {
        let exact = corrected[((corrected.len() as f64 * q).ceil() as usize).saturating_sub(1)] as f64;
        let merged = m["latency"]["corrected"][key].as_f64().unwrap();
        assert!((merged - exact).abs() <= exact * 0.002 + 1.0, "{key}: merged {merged} µs, logs {exact} µs");
    }
    // And the origin's known spread: uniform over 10-50 ms (service time, plus loopback).
    let service = &m["latency"]["service"];
    let p50 = service["p50_us"].as_f64().unwrap() / 1e3;
    let p90 = service["p90_us"].as_f64().unwrap() / 1e3;
    assert!((29.0..36.0).contains(&p50), "p50 {p50} ms, uniform 10-50 ms has 30");
    assert!((45.0..52.0).contains(&p90), "p90 {p90} ms, uniform 10-50 ms has 46");
    // Every shard records when it was asked to start; the merge shows each.
    let text = barrage().arg("report").args(&files).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Shards") && text.contains("0/3") && text.contains("2/3"), "{text}");
    assert!(text.contains("open loop, 300 req/s"), "the shards' rate is the run's, not 3 × 300: {text}");
    // The Shards note says what this run's columns are: an open loop's corrected p99, a
    // start set by --start-at, and every shard's first send known (each wrote its footer).
    assert!(text.contains("p99: corrected latency (from each request's intended start)"), "{text}");
    assert!(text.contains("start: how long after --start-at it was ready to send"), "{text}");
    assert!(!text.contains("(--rendezvous) it was ready") && !text.contains("-: not known yet"), "{text}");
}

/// A missing or doubled shard, or a shard of another plan, is refused with one line and
/// exit 2; `--force` merges what is there and says so.
#[test]
fn an_incomplete_set_of_shards_is_refused() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let url = o.url();
    let plan: Vec<String> = ["--rate", "100", "-n", "60", &url].iter().map(|s| s.to_string()).collect();
    let outs = shards(dir.path(), &plan, |i| vec!["--shard".into(), format!("{i}/3")]);
    assert!(outs.iter().all(|o| o.status.success()));
    let other = dir.path().join("other.brg");
    let out = barrage()
        .args(["run", "--rate", "100", "-n", "90", "--shard", "1/3", "-o", other.to_str().unwrap(), &url])
        .output()
        .unwrap();
    assert!(out.status.success());
    let f = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    for (files, want) in [
        (vec![f("s0.brg"), f("s2.brg")], "shard(s) 1 of 3 missing"),
        (vec![f("s0.brg"), f("s1.brg"), f("s1.brg"), f("s2.brg")], "shard 1/3 twice"),
        // The difference named, not only that there is one.
        (vec![f("s0.brg"), f("other.brg"), f("s2.brg")], "ran a different plan than s0.brg (requests 90, not 60)"),
    ] {
        let out = barrage().arg("report").args(&files).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{files:?}: {err}");
        let err = err.replace(&format!("{}/", dir.path().display()), "");
        assert!(err.contains(want) && err.trim().lines().count() == 1, "{files:?}: {err}");
    }
    let out = barrage().args(["report", "--force", "--format", "json", &f("s0.brg"), &f("s2.brg")]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"]["total"], 40);
    let first = &v["warnings"][0];
    assert!(
        first["kind"] == "shards_forced" && first["text"].as_str().unwrap().contains("merged anyway (--force)"),
        "{v}"
    );
}

/// Shards started one after the other, with no start they shared, are merged as if they
/// had run together: the merge says so, and how far apart they started.
#[test]
fn shards_started_apart_are_said_to_be() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<String> = (0..2)
        .map(|i| {
            let file = dir.path().join(format!("s{i}.brg")).display().to_string();
            let out = barrage()
                .args(["run", "--rate", "20", "-d", "1500ms", "--shard", &format!("{i}/2"), "-o", &file, &o.url()])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            file
        })
        .collect();
    let out = barrage().args(["report", "--format", "json"]).args(&files).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let apart = v["warnings"].as_array().unwrap().iter().find(|w| w["kind"] == "shards_apart").expect("said");
    let secs: f64 =
        apart["text"].as_str().unwrap()["the shards started ".len()..].split(' ').next().unwrap().parse().unwrap();
    assert!(secs >= 1.5, "{apart}");
}

/// A shard whose in-flight bound cannot carry its share (one slot, 50 ms per request, 50
/// requests a second due) is flagged in the merge, with why; the others are not flagged
/// for it.
#[test]
fn a_shard_that_fell_behind_is_flagged() {
    let o = origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(50))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let url = o.url();
    let plan: Vec<String> = ["--rate", "150", "-d", "2s", &url].iter().map(|s| s.to_string()).collect();
    let at = start_in(Duration::from_secs(1));
    let outs = shards(dir.path(), &plan, |i| {
        let mut each = vec!["--shard".into(), format!("{i}/3"), "--start-at".into(), at.clone()];
        if i == 1 {
            // Its share of 3 slots is 1.
            each.extend(["--max-in-flight".into(), "3".into()]);
        }
        each
    });
    assert!(outs[0].status.success() && outs[2].status.success());
    // The shard behind never sent most of its part: under half of its requests due
    // succeeded, and its own report says it is built on failure.
    let err = String::from_utf8_lossy(&outs[1].stderr);
    assert!(outs[1].status.code() == Some(3) && err.contains("(mostly dropped"), "{err}");
    let files: Vec<_> = (0..3).map(|i| dir.path().join(format!("s{i}.brg"))).collect();
    let out = barrage().arg("report").args(&files).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["shards"].as_array().unwrap();
    let behind = |i: usize| rows[i]["behind"].as_str().unwrap_or("");
    assert!(behind(1).contains("on time"), "{}", rows[1]);
    for i in [0, 2] {
        assert!(!behind(i).contains("on time"), "{}", rows[i]);
    }
    let behind =
        |w: &serde_json::Value| w["kind"] == "shard_behind" && w["text"].as_str().unwrap().starts_with("shard 1/3 on ");
    let warned = v["warnings"].as_array().unwrap().iter().any(behind);
    assert!(warned, "{}", v["warnings"]);
}

/// Bad scale-out flags are one-line errors with exit 2.
#[test]
fn bad_scale_out_flags_are_refused() {
    let past = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() - 60;
    let url = "http://127.0.0.1:9/";
    for (args, want) in [
        (vec!["run", "--shard", "3/3", url], "invalid --shard '3/3'"),
        (vec!["run", "--shard", "0/0", url], "invalid --shard '0/0'"),
        (vec!["run", "--start-at", "yesterday", url], "invalid --start-at 'yesterday'"),
        (vec!["run", "--start-at", &past.to_string(), url], "past already"),
        (vec!["run", "-c", "2", "--shard", "2/3", url], "leaves this shard nothing"),
        (vec!["sweep", "--rate", "10,20", "--shard", "0/2", url], "split each run with `barrage run --shard`"),
    ] {
        let out = barrage().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want) && err.trim().lines().count() == 1, "{args:?}: {err}");
    }
}

/// A scenario split over shards: a sequential feeder's rows are used once over all of
/// them (each shard stops when its part runs out), and `{{seq}}` never repeats across
/// shards, so split users and ids stay apart as in the unsplit run.
#[test]
fn split_flows_share_the_feeder_and_seq_without_overlap() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..300).map(|i| format!("user-{i}\n")).collect();
    std::fs::write(dir.path().join("users.csv"), format!("user\n{rows}")).unwrap();
    let scenario = dir.path().join("flow.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"
[feeder.users]
file = "users.csv"
on-end = "stop"

[flow.lookup]
feeder = "users"

[[flow.lookup.step]]
name = "user"
url = "{}/bytes/8?user={{{{row.user}}}}&n={{{{seq}}}}"
"#,
            o.url()
        ),
    )
    .unwrap();
    let args: Vec<String> =
        ["--scenario", scenario.to_str().unwrap(), "-c", "3", "-d", "20s"].iter().map(|s| s.to_string()).collect();
    let outs = shards(dir.path(), &args, |i| vec!["--shard".into(), format!("{i}/3")]);
    for out in &outs {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut users = Vec::new();
    let mut seqs = Vec::new();
    for i in 0..3 {
        let text = std::fs::read_to_string(dir.path().join(format!("s{i}.csv"))).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let url = header.iter().position(|h| *h == "url").unwrap();
        let mut mine = 0;
        for line in lines {
            let query = line.split(',').nth(url).unwrap().split_once('?').unwrap().1.to_string();
            let (user, n) = query.split_once('&').unwrap();
            users.push(user.to_string());
            seqs.push(n.to_string());
            mine += 1;
        }
        assert_eq!(mine, 100, "shard {i} used its third of the rows");
    }
    users.sort();
    users.dedup();
    assert_eq!(users.len(), 300, "every row once over the shards");
    let distinct: BTreeSet<&String> = seqs.iter().collect();
    assert_eq!(distinct.len(), 300, "no {{{{seq}}}} twice");
}

/// `barrage run ARGS --format json`, successful: its JSON summary.
fn run_json(args: &[String]) -> Value {
    let out = barrage().arg("run").args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Issue 32, finding 10, at its root: a closed loop's `-n` was split evenly over the engine
/// threads whatever their workers, so of 3 workers on 2 threads the lone one sent half the
/// requests by itself and the run took half as long again. Each worker now sends its own
/// share: the run keeps the pace of the same workers on one thread.
#[test]
fn a_closed_loop_with_n_gives_each_worker_its_share_whatever_the_threads() {
    let o = origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(20))), ..Default::default() });
    let pace = |threads: &str| {
        let args = ["-c", "3", "-n", "300", "--threads", threads, &o.url()].map(String::from);
        let v = run_json(&args);
        assert_eq!(v["requests"]["ok"], 300, "{v}");
        v["throughput_per_sec"].as_f64().unwrap()
    };
    let (one, two) = (pace("1"), pace("2"));
    assert!(two >= 0.85 * one, "3 workers on 2 threads: {two:.0}/s, on 1 thread: {one:.0}/s");
}

/// The plan of the closed-loop shard tests: 10 workers, 1,000 requests of a Zipf stream,
/// two engine threads each (so a shard's 3 workers split 2 and 1).
fn closed_plan(o: &barrage_server::RunningServer) -> Vec<String> {
    let url = format!("{}/obj/{{id}}", o.url());
    ["-c", "10", "-n", "1000", "--threads", "2", "--pick", "zipf:1.0", "--objects", "5000", "--seed", "9", &url]
        .map(String::from)
        .to_vec()
}

/// Issue 32, finding 10: a closed loop with `-n` split over three shards once ran at 59% of
/// the unsplit pace (937/s against 1,580/s), every shard "kept its share". Each shard now
/// sends its workers' part (4, 3 and 3 of 10 workers: 400, 300 and 300 of 1,000), the
/// merged run keeps the unsplit pace, and the shards together ask for what the unsplit run
/// asks for, request for request.
#[test]
fn a_split_closed_loop_with_n_keeps_the_unsplit_pace() {
    let o = origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(20))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let plan = closed_plan(&o);
    let whole_log = dir.path().join("whole.csv");
    let mut args = plan.clone();
    args.extend(["--log".into(), whole_log.to_str().unwrap().into()]);
    let whole = run_json(&args);
    let unsplit = whole["throughput_per_sec"].as_f64().unwrap();
    let at = start_in(Duration::from_secs(2));
    let outs = shards(dir.path(), &plan, |i| vec!["--shard".into(), format!("{i}/3"), "--start-at".into(), at.clone()]);
    for out in &outs {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let files: Vec<_> = (0..3).map(|i| dir.path().join(format!("s{i}.brg"))).collect();
    let merged = barrage().arg("report").args(&files).args(["--format", "json"]).output().unwrap();
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let m: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(m["requests"]["total"], 1000);
    let rows = m["shards"].as_array().unwrap();
    let part = |r: &Value| (r["sent"].as_u64().unwrap(), r["due"].as_u64().unwrap());
    assert_eq!(rows.iter().map(part).collect::<Vec<_>>(), [(400, 400), (300, 300), (300, 300)], "{rows:?}");
    for r in rows {
        assert!(r["behind"].is_null(), "{r}");
    }
    let split = m["throughput_per_sec"].as_f64().unwrap();
    assert!(split >= 0.85 * unsplit, "merged {split:.0}/s, unsplit {unsplit:.0}/s");
    // Request for request: every number of the stream once, as in the unsplit run.
    let logs: Vec<_> = (0..3).map(|i| dir.path().join(format!("s{i}.csv"))).collect();
    let urls = |paths: &[std::path::PathBuf]| {
        let mut all: Vec<String> = log_rows(paths).0.into_iter().map(|(_, url)| url).collect();
        all.sort();
        all
    };
    assert_eq!(urls(&logs), urls(&[whole_log]), "the shards' stream is the unsplit run's");
}

/// A closed loop with `-n` is judged per shard by when it finished its part: one shard
/// that came 0.4 s late (it joins the run, under the second allowed) sends its part 0.4 s
/// after the others, alone for the run's last stretch. It is BEHIND, with why; the others
/// kept their share.
#[test]
fn a_closed_loop_shard_that_finished_its_part_last_is_flagged() {
    let o = origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(20))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let plan = closed_plan(&o);
    let start = SystemTime::now() + Duration::from_secs(1);
    let t = start.duration_since(UNIX_EPOCH).unwrap();
    let at = format!("{}.{:06}", t.as_secs(), t.subsec_micros());
    let spawn = |i: usize| {
        let out = dir.path().join(format!("s{i}.brg"));
        barrage()
            .arg("run")
            .args(&plan)
            .args(["--shard", &format!("{i}/3"), "--start-at", &at, "-o", out.to_str().unwrap(), "--format", "json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let on_time = [spawn(0), spawn(1)];
    // The third machine is started 0.4 s after the common start: a late launch, the fault
    // under test (not a wait for anything).
    std::thread::sleep((start + Duration::from_millis(400)).duration_since(SystemTime::now()).unwrap_or_default());
    let late = spawn(2);
    for child in on_time.into_iter().chain([late]) {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let files: Vec<_> = (0..3).map(|i| dir.path().join(format!("s{i}.brg"))).collect();
    let out = barrage().arg("report").args(&files).args(["--format", "json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["shards"].as_array().unwrap();
    let behind = |i: usize| rows[i]["behind"].as_str().unwrap_or("").to_string();
    assert!(behind(2).contains("finished its part"), "{rows:#?}");
    assert!(behind(0).is_empty() && behind(1).is_empty(), "{rows:?}");
    let behind =
        |w: &serde_json::Value| w["kind"] == "shard_behind" && w["text"].as_str().unwrap().starts_with("shard 2/3 on ");
    let warned = v["warnings"].as_array().unwrap().iter().any(behind);
    assert!(warned, "{}", v["warnings"]);
}

/// The same run's file twice (a copy, or a copy cut short) is refused merged: every figure
/// would count twice. Two runs of one plan merge; `compare` of a file with itself compares.
#[test]
fn one_run_merged_twice_is_refused() {
    let o = origin(ServeConfig::default());
    let url = format!("http://{}/", o.addr());
    let dir = tempfile::tempdir().unwrap();
    let f = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    for name in ["whole.brg", "other.brg"] {
        let run = barrage().args(["run", "-n", "40", "-c", "2", "-o", &f(name), &url]).output().unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    }
    std::fs::copy(f("whole.brg"), f("copy.brg")).unwrap();
    let bytes = std::fs::read(f("whole.brg")).unwrap();
    std::fs::write(f("cut.brg"), &bytes[..bytes.len() - 100]).unwrap();
    for pair in [["whole.brg", "copy.brg"], ["cut.brg", "whole.brg"], ["whole.brg", "whole.brg"]] {
        let out = barrage().arg("report").args(pair.map(f)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{pair:?}: {err}");
        let named = err.contains(&f(pair[0])) && err.contains(&f(pair[1]));
        assert!(named && err.contains("the same run") && err.trim().lines().count() == 1, "{pair:?}: {err}");
    }
    let requests = |args: &[String]| {
        let out = barrage().arg("report").args(args).args(["--format", "json"]).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["requests"]["total"].as_u64().unwrap()
    };
    assert_eq!(requests(&[f("whole.brg"), f("other.brg")]), 80, "two runs");
    assert_eq!(requests(&["--force".into(), f("whole.brg"), f("copy.brg")]), 80, "forced, and said");
    let compared = barrage().args(["compare", &f("whole.brg"), &f("copy.brg")]).output().unwrap();
    assert!(compared.status.success(), "{}", String::from_utf8_lossy(&compared.stderr));
}
