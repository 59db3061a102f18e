//! Issue 39: a live fleet. Shards stream their results to `barrage collect` as they run
//! (`run --report-to`), start together at the time it publishes once their clocks are
//! measured (`--rendezvous`); its final report is the post-run merge of their files,
//! exactly; a lost shard is named, never silent; one fleet-wide `--slo` stops every shard;
//! its address in a browser is the HTML report of the run so far.

use crate::util::{barrage, http_get, origin, raw_get, require};
use barrage_server::{LatencyDist, ServeConfig};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Requests the origin has served, by its own count.
fn served(addr: std::net::SocketAddr) -> u64 {
    serde_json::from_str::<Value>(&http_get(addr, "/_barrage/stats")).unwrap()["requests"].as_u64().unwrap()
}

/// A collector of `n` shards in `dir`/fleet, JSON on stdout; its URL from its first line.
pub(crate) struct Collect {
    pub(crate) child: Child,
    pub(crate) url: String,
    /// Its `/metrics`, with `--metrics-addr`.
    metrics: Option<std::net::SocketAddr>,
    /// Its stderr so far, line by line (all of it once the reading thread ended).
    said: std::sync::Arc<std::sync::Mutex<String>>,
    stderr: std::thread::JoinHandle<()>,
}

pub(crate) fn collect(dir: &Path, n: u32, more: &[&str]) -> Collect {
    let mut child = barrage()
        .args(["collect", "--shards", &n.to_string(), "--listen", "127.0.0.1:0", "--format", "json"])
        .args(["--dir", dir.join("fleet").to_str().unwrap()])
        .args(more)
        // One machine, one clock: what a busy machine's round trips add to the measured
        // offset (up to half of one) must not fail the start, unless the test asks.
        .args(if more.contains(&"--max-clock-offset") { &[][..] } else { &["--max-clock-offset", "1s"][..] })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let url = first.split_whitespace().find(|w| w.starts_with("http://")).expect(&first).to_string();
    let metrics = more.contains(&"--metrics-addr").then(|| {
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        first.push_str(&line);
        let at = line.trim().trim_start_matches("metrics on http://").trim_end_matches("/metrics");
        at.parse().expect(&line)
    });
    let said = std::sync::Arc::new(std::sync::Mutex::new(first));
    let into = said.clone();
    let stderr = std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            let mut said = into.lock().unwrap();
            said.push_str(&line);
            said.push('\n');
        }
    });
    Collect { child, url, metrics, said, stderr }
}

impl Collect {
    /// Its exit code, report and stderr, once it ended (within `within`).
    pub(crate) fn wait(mut self, within: Duration) -> (Option<i32>, Value, String) {
        let code = wait_for(&mut self.child, within);
        let mut out = String::new();
        self.child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let report = serde_json::from_str(&out).unwrap_or(Value::Null);
        self.stderr.join().unwrap();
        let said = self.said.lock().unwrap().clone();
        (code, report, said)
    }

    /// Waits (at most a minute) until the collector has shard `i`'s interval `k`.
    pub(crate) fn wait_for_interval(&self, i: usize, k: u64) {
        self.wait_until(&format!("shard {i} reaches its interval {k}"), |s| {
            s["shards"][i]["last_interval"].as_u64().is_some_and(|last| last >= k)
        });
    }

    /// Waits (at most a minute) until the collector's status `holds`; fails naming `what`.
    pub(crate) fn wait_until(&self, what: &str, holds: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let status = self.status();
            if holds(&status) {
                return;
            }
            // What the collector knew and said, so that a miss on a busy machine can be read.
            assert!(
                Instant::now() < deadline,
                "never: {what}; the collector's status: {status}; it said:\n{}",
                self.said.lock().unwrap()
            );
            // Polls the collector's status; synchronises nothing else.
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILLs shard 1 of `children` once the collector has its interval `k`, waits for
    /// every shard, then for the collector: its exit code, report and stderr.
    /// Kills shard 1 once the collector has its interval `k`: the collector's exit code,
    /// report, and stderr followed by the other shards' (`--- shard I ---` before each).
    fn kill_shard_1_at(self, k: u64, mut children: Vec<Child>) -> (Option<i32>, Value, String) {
        self.wait_for_interval(1, k);
        children[1].kill().unwrap();
        for child in &mut children {
            wait_for(child, Duration::from_secs(60));
        }
        let (code, live, mut stderr) = self.wait(Duration::from_secs(60));
        for (i, child) in children.iter_mut().enumerate().filter(|(i, _)| *i != 1) {
            stderr.push_str(&format!("--- shard {i} ---\n"));
            let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
        }
        (code, live, stderr)
    }

    /// Its status; a collector gone fails with what it said.
    pub(crate) fn status(&self) -> Value {
        if std::net::TcpStream::connect(self.addr()).is_err() {
            panic!("the collector is gone; it said:\n{}", self.said.lock().unwrap());
        }
        serde_json::from_str(&http_get(self.addr(), "/v1/status")).unwrap()
    }

    fn addr(&self) -> std::net::SocketAddr {
        self.url.trim_start_matches("http://").trim_end_matches('/').parse().unwrap()
    }
}

/// The collector's live page (`GET /`) and the data it draws.
fn live_page(c: &Collect) -> (String, Value) {
    let (head, body) = raw_get(c.addr(), "/", "");
    let page = String::from_utf8(body).unwrap();
    assert!(head.starts_with("HTTP/1.1 200") && head.to_lowercase().contains("text/html"), "{head}");
    let data = page.split("id=\"barrage-data\">").nth(1).and_then(|d| d.split("</script>").next()).expect("its data");
    let data = serde_json::from_str(data).unwrap();
    (page, data)
}

/// The live page of a fleet still running, against an origin that answers everything: the
/// run so far, not a failed one. Its shards are running, not lost or killed; it succeeded
/// in full; and it is due what the shards have reached, not the whole run's 3,600.
fn assert_running((page, data): &(String, Value)) {
    let s = &data["summary"];
    assert!(page.contains("running: ") && page.contains(" of 6 s: the run so far"), "the page says how far it is");
    assert!(page.contains("<td>running") && !page.contains("FAILED"), "each shard's row says running");
    assert_not_judged(s);
    assert_eq!(s["success_ratio"], 1.0, "{}", s["requests"]);
    assert!(s["running"]["covered_s"].as_f64().unwrap() < 6.0, "{}", s["running"]);
    let shards = s["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 3);
    for row in shards {
        assert!(row["running"] == true && row["success_ratio"] == 1.0, "{row}");
    }
    let (due, sent, unsent) = (
        s["coverage"]["intended"].as_u64().unwrap(),
        s["requests"]["sent"].as_u64().unwrap(),
        s["coverage"]["unsent"].as_u64().unwrap(),
    );
    // Sent when due, give or take those due at the end of a shard's last second recorded
    // and sent in the next one.
    assert!(due < 3600 && sent <= due + 3 && sent as f64 >= 0.9 * due as f64, "due {due}, sent {sent}");
    assert_eq!(unsent, 0, "nothing of a running shard is never sent");
}

/// A summary of the run so far judges nothing that is still to come: no shard killed, lost,
/// missing, forced into the merge or alone, and no arrival never sent. (A busy test machine
/// may still lag, and say so: that is the run so far too.)
fn assert_not_judged(s: &Value) {
    for w in s["warnings"].as_array().unwrap() {
        let (kind, text) = (w["kind"].as_str().unwrap(), w["text"].as_str().unwrap());
        let judged = ["run_killed", "arrivals_never_sent", "requests_never_sent", "one_shard", "shards_forced"];
        assert!(!judged.contains(&kind), "{w}");
        assert!(!["lost", "missing", "never sent", "waiting"].iter().any(|t| text.contains(t)), "{w}");
    }
    for row in s["shards"].as_array().unwrap() {
        let why = row["behind"].as_str().unwrap_or("");
        assert!(!["lost", "missing", "never sent", "killed"].iter().any(|t| why.contains(t)), "{row}");
    }
}

/// Waits for `child` at most `within`; kills it and fails past that.
pub(crate) fn wait_for(child: &mut Child, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("a process outlived its {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Shard `i` of 3 of `args`, streaming to `url` with a rendezvous, its file `s{i}.brg`.
pub(crate) fn shard(dir: &Path, i: u32, url: &str, args: &[&str], wrap: &[&str]) -> Child {
    let bin = barrage().get_program().to_owned();
    let mut cmd = match wrap.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(&bin);
            c
        }
        None => Command::new(&bin),
    };
    cmd.arg("run")
        .args(args)
        .args(["--shard", &format!("{i}/3"), "--report-to", url, "--rendezvous", "--format", "json"])
        .args(["-o", dir.join(format!("s{i}.brg")).to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn files(dir: &Path) -> Vec<PathBuf> {
    (0..3).map(|i| dir.join(format!("s{i}.brg"))).collect()
}

/// A report without where its files were: the collector's copies and the shards' own
/// files are at different paths, and are otherwise the same.
fn without_paths(mut v: Value) -> Value {
    v.as_object_mut().unwrap().remove("files");
    for s in v["shards"].as_array_mut().into_iter().flatten() {
        s.as_object_mut().unwrap().remove("file");
    }
    v
}

#[test]
fn the_collectors_report_is_the_post_run_merge_exactly_and_the_clocks_are_recorded() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--metrics-addr", "127.0.0.1:0"]);
    // Before any data, the live page says it waits, and asks again.
    let (head, body) = raw_get(c.addr(), "/", "");
    assert!(head.starts_with("HTTP/1.1 503") && String::from_utf8_lossy(&body).contains("Waiting"), "{head}");
    let url = format!("{}/bytes/1k", server.url());
    let mut children: Vec<_> =
        (0..3).map(|i| shard(dir.path(), i, &c.url, &[&url, "--rate", "600", "-d", "6s"], &[])).collect();
    // While they run, the collector's /metrics counts the fleet: more than any one shard
    // sends in its first three seconds (600) while all of them still run.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let body = http_get(c.metrics.unwrap(), "/metrics");
        let sent =
            body.lines().find(|l| l.starts_with("barrage_requests_sent_total")).and_then(|l| l.split(' ').nth(1));
        if sent.and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v > 600.0) {
            assert!(children.iter_mut().all(|c| c.try_wait().unwrap().is_none()), "seen live, not after the run");
            // The live page is the HTML report of the run so far: the fleet's, loaded again.
            let page = live_page(&c);
            assert!(page.0.contains("<meta http-equiv=\"refresh\" content=\"5\">"), "{}", &page.0[..400]);
            assert!(page.1["summary"]["requests"]["total"].as_u64().unwrap() > 600, "{}", page.1["summary"]);
            assert_running(&page);
            assert!(children.iter_mut().all(|c| c.try_wait().unwrap().is_none()), "seen live, not after the run");
            break;
        }
        assert!(Instant::now() < deadline, "the fleet's /metrics never passed one shard's share: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
    for mut child in children {
        assert_eq!(wait_for(&mut child, Duration::from_secs(60)), Some(0));
    }
    let (code, live, stderr) = c.wait(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{stderr}");
    let merged = barrage().arg("report").args(files(dir.path())).args(["--format", "json"]).output().unwrap();
    let merged: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(live["requests"]["total"], 3600);
    assert_eq!(served(server.addr()), 3600, "the origin's own count");
    assert_eq!(without_paths(live.clone()), without_paths(merged), "the collector's report is the merge of the files");
    for i in 0..3 {
        let (own, copy) =
            (dir.path().join(format!("s{i}.brg")), barrage_fleet::shard_file(&dir.path().join("fleet"), i));
        assert_eq!(std::fs::read(own).unwrap(), std::fs::read(copy).unwrap(), "shard {i}'s copy is its file");
    }
    // Each shard measured its clock against the collector's (one machine: within 2 ms),
    // and started at the time it was given.
    for s in live["shards"].as_array().unwrap() {
        let offset = s["clock_offset_us"].as_i64().expect("measured");
        assert!(offset.abs() < 2_000, "{s}");
        assert!(s["start_delay_ms"].as_f64().unwrap() < 100.0, "{s}");
        // Its first arrival is due at 0, 1.7 or 3.3 ms: sent then, give or take a busy machine.
        assert!(s["first_send_ms"].as_f64().expect("recorded") < 100.0, "{s}");
    }
}

/// Shard `i` of 3 of `args`, streaming to `url` without a rendezvous: it starts at once,
/// whatever the other shards do.
fn shard_alone(dir: &Path, i: u32, url: &str, args: &[&str]) -> Child {
    barrage()
        .arg("run")
        .args(args)
        .args(["--shard", &format!("{i}/3"), "--report-to", url, "--format", "json"])
        .args(["-o", dir.join(format!("s{i}.brg")).to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Without a rendezvous the shards start when they are started: while only one has sent
/// its results, the live page is the fleet's run so far, not that one shard's report, nor a
/// merge missing shards: the others wait, and nothing is forced, behind or failed.
#[test]
fn the_live_page_shows_the_shards_not_come_yet_as_waiting() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    // A shard that never sends is lost --lateness after the first one's data: not here.
    let c = collect(dir.path(), 3, &["--lateness", "60s"]);
    let url = format!("{}/bytes/1k", server.url());
    let args = [url.as_str(), "--rate", "300", "-d", "4s"];
    let mut children = vec![shard_alone(dir.path(), 0, &c.url, &args)];
    c.wait_for_interval(0, 1);
    let (page, data) = live_page(&c);
    assert!(children[0].try_wait().unwrap().is_none(), "seen while shard 0 runs");
    let s = &data["summary"];
    assert_not_judged(s);
    assert!(!page.contains("FAILED") && page.contains("running: "), "{page}");
    assert_eq!(page.matches("<td>waiting: none of its results came yet</td>").count(), 2, "{}", s["shards"]);
    let rows = s["shards"].as_array().unwrap();
    let shown: Vec<(&str, bool)> = rows.iter().map(|r| (r["shard"].as_str().unwrap(), r["running"] == true)).collect();
    assert_eq!(shown, [("0/3", true), ("1/3", true), ("2/3", true)], "{rows:?}");
    assert!(rows[1]["behind"].is_null() && rows[2]["behind"].is_null(), "{rows:?}");
    assert_eq!(s["success_ratio"], 1.0, "{}", s["requests"]);
    // Due: what shard 0 has reached of its 400, none of it never sent.
    let due = s["coverage"]["intended"].as_u64().unwrap();
    assert!((100..400).contains(&due) && s["coverage"]["unsent"] == 0, "{}", s["coverage"]);
    // Two of three: a merge of the fleet so far, not one missing a shard.
    children.push(shard_alone(dir.path(), 1, &c.url, &args));
    c.wait_for_interval(1, 1);
    let (page, data) = live_page(&c);
    assert_not_judged(&data["summary"]);
    assert_eq!(page.matches("<td>waiting: none of its results came yet</td>").count(), 1, "{}", data["summary"]);
    children.push(shard_alone(dir.path(), 2, &c.url, &args));
    for mut child in children {
        assert_eq!(wait_for(&mut child, Duration::from_secs(60)), Some(0));
    }
    let (code, report, stderr) = c.wait(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["requests"]["total"], 1200, "{}", report["warnings"]);
    assert_eq!(served(server.addr()), 1200, "the origin's own count");
}

#[test]
fn a_killed_shard_is_lost_and_named_and_the_others_are_merged() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--lateness", "2s"]);
    let url = format!("{}/bytes/1k", server.url());
    let children: Vec<_> =
        (0..3).map(|i| shard(dir.path(), i, &c.url, &[&url, "--rate", "300", "-d", "8s"], &[])).collect();
    // At 40% of the run, by the collector's own view of shard 1's stream.
    let mut children = children;
    c.wait_for_interval(1, 2);
    children[1].kill().unwrap();
    // Once judged lost, the live page reads it lost while the others still run.
    c.wait_until("shard 1 is judged lost", |s| s["shards"][1]["lost"] == true);
    let (_, data) = live_page(&c);
    let rows = data["summary"]["shards"].as_array().unwrap().clone();
    assert!(
        rows[1]["running"] == false && rows[1]["behind"].as_str().unwrap().starts_with("lost: sent"),
        "{}",
        rows[1]
    );
    assert!(rows[0]["running"] == true || rows[0]["behind"].is_null(), "{}", rows[0]);
    for child in &mut children {
        wait_for(child, Duration::from_secs(60));
    }
    let (code, live, stderr) = c.wait(Duration::from_secs(60));
    assert!(stderr.contains("shard 1/3 lost: its data stopped"), "{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
    let shards = live["shards"].as_array().unwrap();
    let sent = |i: usize| shards[i]["sent"].as_u64().unwrap();
    assert_eq!((sent(0), sent(2)), (800, 800));
    assert!(sent(1) < 400, "shard 1 was killed at 40%: {}", sent(1));
    // SIGKILL loses at most the last second of the killed shard (100/s).
    let total = live["requests"]["total"].as_u64().unwrap();
    let origin_count = served(server.addr());
    assert!(total <= origin_count && origin_count - total <= 100 + 10, "{total} of {origin_count}");
    // Its unsent share is never sent, against the whole run's 2,400 intended arrivals,
    // known exactly from the schedule each file lists.
    let c = &live["coverage"];
    assert_eq!(c["intended"], 2400);
    assert_eq!(c["unsent"].as_u64().unwrap(), 800 - sent(1), "{c}");
    assert_eq!(shards[1]["due"], 800);
    assert!(shards[1]["behind"].as_str().unwrap().starts_with("lost: sent"), "{}", shards[1]);
    // Its success is of the requests due to it, never sent ones failed: not 100%.
    let own = shards[1]["ok"].as_f64().unwrap() / 800.0;
    assert!(own < 0.5 && (shards[1]["success_ratio"].as_f64().unwrap() - own).abs() < 1e-9, "{}", shards[1]);
    let ok = live["requests"]["ok"].as_f64().unwrap();
    assert!((live["success_ratio"].as_f64().unwrap() - ok / 2400.0).abs() < 1e-9, "never sent counts as failed");
    let intervals = live["intervals"].as_array().unwrap();
    assert!(intervals.iter().take(8).all(|r| r["due"] == 300), "300 due each second: {intervals:?}");
}

#[test]
fn a_shard_stopped_early_shows_its_share_never_sent_exactly() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &[]);
    let url = format!("{}/bytes/1k", server.url());
    let mut children: Vec<_> =
        (0..3).map(|i| shard(dir.path(), i, &c.url, &[&url, "--rate", "300", "-d", "6s"], &[])).collect();
    c.wait_for_interval(2, 1);
    // SIGTERM: the shard ends cleanly, its file whole: what it sent is exactly known.
    unsafe { libc::kill(children[2].id() as i32, libc::SIGTERM) };
    for child in &mut children {
        wait_for(child, Duration::from_secs(60));
    }
    let (code, live, stderr) = c.wait(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{stderr}");
    let cov = &live["coverage"];
    let origin_count = served(server.addr());
    assert_eq!(cov["intended"], 1800);
    assert_eq!(cov["sent"].as_u64().unwrap(), origin_count, "exactly what the origin saw: {cov}");
    assert_eq!(cov["unsent"].as_u64().unwrap() + origin_count, 1800, "{cov}");
    assert!(live["shards"][2]["behind"].as_str().unwrap().starts_with("stopped: sent"), "{}", live["shards"][2]);
    // One shard stopped while the others ran to their end: the run was not stopped, its
    // never-sent arrivals count as failed, and it says so.
    assert_eq!(live["interrupted"], false, "{}", live["stopped_by"]);
    let ok = live["requests"]["ok"].as_f64().unwrap();
    assert!((live["success_ratio"].as_f64().unwrap() - ok / 1800.0).abs() < 1e-9, "{}", live["success_ratio"]);
    assert!(
        live["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "arrivals_never_sent"),
        "{}",
        live["warnings"]
    );
}

#[test]
fn one_fleet_wide_slo_stops_every_shard() {
    let server =
        origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(20))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--slo", "p99<5ms"]);
    let url = format!("{}/bytes/1k", server.url());
    let started = Instant::now();
    let children: Vec<_> =
        (0..3).map(|i| shard(dir.path(), i, &c.url, &[&url, "--rate", "60", "-d", "120s"], &[])).collect();
    for mut child in children {
        wait_for(&mut child, Duration::from_secs(60));
        let out = child.wait_with_output().unwrap();
        assert!(String::from_utf8_lossy(&out.stderr)
            .contains("the collector stopped the run: fleet-wide --slo missed: p99<5ms"));
    }
    assert!(started.elapsed() < Duration::from_secs(60), "stopped long before its 120 s");
    let (code, _, stderr) = c.wait(Duration::from_secs(30));
    assert!(stderr.contains("every shard was told to stop: fleet-wide --slo missed: p99<5ms"), "{stderr}");
    assert_eq!(code, Some(1), "{stderr}");
}

/// A fleet-wide `--slo` judges the run so far as running: on the arrivals due by then, not
/// on the whole run's, of which the rest is still to come. Checked every 5 s, it judges an
/// 8 s run while it runs; read as ended (killed), the run so far would have failed
/// `success>=99%` (about half of the run's arrivals not sent yet) and been stopped.
#[test]
fn a_fleet_wide_slo_judges_a_running_fleet_on_what_is_due_so_far() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--slo", "success>=99%"]);
    let url = format!("{}/bytes/1k", server.url());
    let children: Vec<_> =
        (0..3).map(|i| shard(dir.path(), i, &c.url, &[&url, "--rate", "300", "-d", "8s"], &[])).collect();
    for mut child in children {
        assert_eq!(wait_for(&mut child, Duration::from_secs(60)), Some(0));
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("the collector stopped the run"), "{err}");
    }
    let (code, live, stderr) = c.wait(Duration::from_secs(30));
    assert!(!stderr.contains("told to stop"), "{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(live["requests"]["total"], 2400, "the whole run: never stopped");
}

/// The offset a refusal names: `shard 1/3's clock is 1999.997 ms off`.
fn offset_ms(text: &str) -> f64 {
    let after = text.split("'s clock is ").nth(1).unwrap_or_default();
    after.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(f64::NAN)
}

#[test]
fn a_clock_beyond_the_budget_fails_the_start_for_every_shard() {
    if !require("faketime", barrage_testbed::program_path("faketime").is_some()) {
        return;
    }
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--max-clock-offset", "100ms"]);
    let url = format!("{}/bytes/1k", server.url());
    let skewed = ["env", "FAKETIME_DONT_FAKE_MONOTONIC=1", "faketime", "-f", "+2s"];
    let children: Vec<_> = (0..3)
        .map(|i| shard(dir.path(), i, &c.url, &[&url, "--rate", "60", "-d", "3s"], if i == 1 { &skewed } else { &[] }))
        .collect();
    for mut child in children {
        assert_eq!(wait_for(&mut child, Duration::from_secs(60)), Some(2));
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("the collector called the start off: shard 1/3's clock is "), "{err}");
        assert!((1990.0..2010.0).contains(&offset_ms(&err)), "two seconds ahead: {err}");
    }
    let (code, _, stderr) = c.wait(Duration::from_secs(30));
    assert!(stderr.contains("the start failed: shard 1/3's clock is "), "{stderr}");
    assert!((1990.0..2010.0).contains(&offset_ms(&stderr)), "two seconds ahead: {stderr}");
    assert_eq!(code, Some(2));
    assert_eq!(served(server.addr()), 0, "nobody started");
}

#[test]
fn with_on_shard_loss_abort_a_lost_shard_stops_the_others() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--lateness", "2s", "--on-shard-loss", "abort"]);
    let url = format!("{}/bytes/1k", server.url());
    let started = Instant::now();
    let mut children: Vec<_> =
        (0..3).map(|i| shard(dir.path(), i, &c.url, &[&url, "--rate", "60", "-d", "120s"], &[])).collect();
    c.wait_for_interval(0, 1);
    children[0].kill().unwrap();
    for child in &mut children {
        wait_for(child, Duration::from_secs(60));
    }
    assert!(started.elapsed() < Duration::from_secs(60), "the others stopped long before their 120 s");
    let (code, live, stderr) = c.wait(Duration::from_secs(30));
    assert!(stderr.contains("every shard was told to stop: shard 0/3 was lost (--on-shard-loss abort)"), "{stderr}");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(live["shards"][1]["behind"].as_str().unwrap().starts_with("stopped: sent"), "{}", live["shards"][1]);
    // Who stopped the run, and why, in the fleet's report and in each survivor's own.
    let why = "the collector: shard 0/3 was lost (--on-shard-loss abort)";
    assert!(live["stopped_by"].as_str().unwrap().starts_with(why), "{}", live["stopped_by"]);
    for child in children.into_iter().skip(1) {
        let own: Value = serde_json::from_slice(&child.wait_with_output().unwrap().stdout).unwrap();
        assert!(own["interrupted"] == true && own["stopped_by"].as_str().unwrap().starts_with(why), "{own}");
    }
    // Its results file keeps it: a report of it later says who stopped it, not Ctrl-C.
    let out = barrage().args(["report", "--format", "text"]).arg(dir.path().join("s1.brg")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("early ({why}")) && !text.contains("Ctrl-C"), "{text}");
}

/// (intended start in ms from the first request's, URL) of every row of request logs, as a
/// set (a killed shard's log may not exist).
fn requests(logs: &[PathBuf]) -> std::collections::BTreeSet<(u64, String)> {
    let logs: Vec<PathBuf> = logs.iter().filter(|p| p.exists()).cloned().collect();
    // Shards' clocks agree to a few µs; arrivals are 3.3 ms apart.
    crate::shard::log_rows(&logs).0.into_iter().map(|(t, url)| ((t + 500) / 1000, url)).collect()
}

/// A shard judged lost near the end of the run: its takeover begins at the end or past it,
/// and still sends every arrival of the share the lost shard did not record, late (it is
/// the rest of the run planned), none dropped and none shown as never sent.
#[test]
fn a_takeover_begun_at_the_end_still_sends_the_whole_rest() {
    // Answers take a second: the survivors wait for their last ones a second past the end,
    // still there to take over a share whose loss is judged at about the end.
    let server =
        origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_secs(1))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--lateness", "2s", "--on-shard-loss", "takeover"]);
    let url = format!("{}/bytes/1k", server.url());
    let children: Vec<_> = (0..3)
        .map(|i| shard(dir.path(), i, &c.url, &[&url, "--rate", "300", "-d", "4s", "--max-in-flight", "1000"], &[]))
        .collect();
    // Its data stop after interval 1: judged lost 2 s later, at about 4 s of 4.
    let (code, live, stderr) = c.kill_shard_1_at(1, children);
    assert!(stderr.contains("takes over its share after the "), "{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!((live["requests"]["total"].as_u64(), live["requests"]["dropped"].as_u64()), (Some(1200), Some(0)));
    assert_eq!(live["coverage"]["unsent"], 0, "{}", live["coverage"]);
    let kinds: Vec<&str> = live["warnings"].as_array().unwrap().iter().map(|w| w["kind"].as_str().unwrap()).collect();
    assert!(
        kinds.contains(&"takeover_late") && !kinds.contains(&"requests_never_sent"),
        "{kinds:?} {}",
        live["warnings"]
    );
}

#[test]
fn with_takeover_a_survivor_sends_the_rest_of_a_lost_shards_share() {
    // Each answer takes 100 ms, and each shard sends one every 10 ms: about ten of the lost
    // shard's arrivals are in flight at each of its records, for the takeover to send again.
    let server =
        origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(100))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--lateness", "2s", "--on-shard-loss", "takeover"]);
    let url = format!("{}/obj/{{id}}", server.url());
    let plan = [url.as_str(), "--objects", "100000", "--pick", "random", "--rate", "300", "-d", "8s"];
    let children: Vec<_> = (0..3)
        .map(|i| {
            let log = dir.path().join(format!("s{i}.csv")).display().to_string();
            let args: Vec<&str> = plan.iter().copied().chain(["--log", log.as_str()]).collect();
            shard(dir.path(), i, &c.url, &args, &[])
        })
        .collect();
    // Shard 1 is killed at 40% of the run, by the collector's view of its stream.
    let (code, live, stderr) = c.kill_shard_1_at(3, children);
    assert!(
        stderr.contains("shard 1/3 lost: its data stopped") && stderr.contains("takes over its share after the "),
        "{stderr}"
    );
    assert_eq!(code, Some(0), "{stderr}");
    // The survivor names the takeover's file, which a merge by hand needs too.
    let named =
        format!("took over shard 1/3's share; its results are in {}", dir.path().join("s0.takeover-1.brg").display());
    assert!(stderr.contains(&named), "{stderr}");
    // Every arrival of the plan ended once: the takeover sent the lost shard's share after
    // the arrivals its results recorded, not its last second again (which sent 2,500 of the
    // 2,400), and what the lost shard had in flight at its last record again: `sent` counts
    // those twice (the lost shard's attempt, whose answer died with it, and the takeover's).
    let counts = &live["requests"];
    assert_eq!(counts["total"], 2400, "{counts}");
    let twice = counts["sent"].as_u64().unwrap() - 2400;
    assert_eq!(counts["unfinished"].as_u64(), Some(twice), "{counts}");
    assert_eq!((live["coverage"]["intended"].as_u64(), live["coverage"]["unsent"].as_u64()), (Some(2400), Some(0)));
    // Every arrival of the plan, once: the request logs are the schedule of an unkilled run
    // (rate 300/s for 8 s: every 10/3 ms), each arrival's URL its own draw. The takeover
    // took up each of the lost shard's engine threads' lanes where its last record left it.
    let logs: Vec<PathBuf> =
        ["s0.csv", "s1.csv", "s2.csv", "s0.takeover-1.csv"].iter().map(|f| dir.path().join(f)).collect();
    let rows = crate::shard::log_rows(&logs.iter().filter(|p| p.exists()).cloned().collect::<Vec<_>>()).0.len();
    let got = requests(&logs);
    let times: std::collections::BTreeSet<u64> = got.iter().map(|(t, _)| *t).collect();
    let planned: std::collections::BTreeSet<u64> = (0..2400u64).map(|k| (k * 10_000 / 3 + 500) / 1000).collect();
    let (missing, extra): (Vec<_>, Vec<_>) =
        (planned.difference(&times).collect(), times.difference(&planned).collect());
    assert!(
        missing.is_empty() && extra.is_empty() && rows == got.len(),
        "the takeover sends what the lost shard did not record: missing {} ({:?}…), extra {} ({:?}…), twice {}",
        missing.len(),
        &missing[..missing.len().min(5)],
        extra.len(),
        &extra[..extra.len().min(5)],
        rows - got.len()
    );
    assert_eq!(rows, 2400, "each arrival with one URL");
    let takeover = live["shards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shard"].as_str().unwrap().contains("takeover"))
        .expect("a takeover row");
    assert!(takeover["sent"].as_u64().unwrap() > 300, "{takeover}");
    let label = takeover["shard"].as_str().unwrap();
    // Sent again: what the lost shard had in flight (of which the ones its slots had not
    // yet begun, dispatched as the interval closed, were sent once only).
    let again: u64 =
        label.strip_suffix(" in flight sent again").and_then(|l| l.rsplit(' ').next()?.parse().ok()).expect(label);
    // At most one per engine thread was between the two as its interval closed.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    assert!(
        again > 0 && (again.saturating_sub(threads)..=again).contains(&twice),
        "about ten were in flight: {label}, {counts}"
    );
    assert_eq!(live["coverage"]["unsent"], 0, "{}", live["coverage"]);
    // Its catch-up is its late start's, said so; not blamed on the generator or its slots.
    let kinds: Vec<&str> = live["warnings"].as_array().unwrap().iter().map(|w| w["kind"].as_str().unwrap()).collect();
    let late = live["warnings"].as_array().unwrap().iter().find(|w| w["kind"] == "takeover_late").expect("{kinds:?}");
    assert!(late["text"].as_str().unwrap().starts_with("the takeover of shard 1/3 began "), "{late}");
    // The run's lag and late warnings stand only for another shard's own (a busy machine).
    let others =
        live["shards"].as_array().unwrap().iter().filter(|r| !r["shard"].as_str().unwrap().contains("takeover"));
    let others_late = others.clone().any(|r| r["late"].as_u64() > Some(0) || r["lag_p99_us"].as_u64() > Some(5000));
    let blamed = kinds.contains(&"schedule_lag") || kinds.contains(&"requests_late");
    assert!(!blamed || others_late, "{kinds:?} {}", live["shards"]);
    assert!(takeover["behind"].is_null(), "{takeover}");
}

/// Each row of a request log: (intended start, µs since the Unix epoch; its name: the
/// step's `group/step` in a scenario; its worker).
fn log_of(path: &Path) -> Vec<(u64, String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (t, name, worker) = (col("intended_unix_us"), col("name"), col("worker"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[t].parse().unwrap(), f[name].to_string(), f[worker].to_string())
        })
        .collect()
}

/// The shared start (µs since the Unix epoch) and the second resumed from, of a takeover's
/// results file.
fn takeover_of(file: &Path) -> (u64, u64) {
    let reader = barrage_metrics::file::ResultsReader::open(file).unwrap();
    let h = reader.header();
    (h.launch.start_at_unix_us.expect("a shared start"), barrage_metrics::shards::takeover_from(h).expect("a takeover"))
}

/// Runs three shards of `plan` (each with its request log `s{i}.csv`) to a collector that
/// takes over a lost shard; kills shard 1 once the collector has its interval 3; returns
/// the collector's report and stderr once all ended.
fn run_with_takeover(dir: &Path, plan: &[&str]) -> (Value, String) {
    let c = collect(dir, 3, &["--lateness", "2s", "--on-shard-loss", "takeover"]);
    let children: Vec<_> = (0..3)
        .map(|i| {
            let log = dir.join(format!("s{i}.csv")).display().to_string();
            let args: Vec<&str> = plan.iter().copied().chain(["--log", log.as_str()]).collect();
            shard(dir, i, &c.url, &args, &[])
        })
        .collect();
    let (code, live, stderr) = c.kill_shard_1_at(3, children);
    assert!(
        stderr.contains("shard 1/3 lost: its data stopped")
            && stderr.contains("shard 0/3 takes over its share from second"),
        "{stderr}"
    );
    assert_eq!(code, Some(0), "{stderr}");
    (live, stderr)
}

/// The merged report marks a takeover that restarted workers: its row, and a warning.
fn assert_marked_restarted(live: &Value, what: &str) {
    let rows = live["shards"].as_array().unwrap();
    let row = rows.iter().find(|s| s["shard"].as_str().unwrap().contains("takeover")).expect("a takeover row");
    assert!(row["shard"].as_str().unwrap().ends_with(", restarted"), "{row}");
    assert!(row["sent"].as_u64().unwrap() > 0, "{row}");
    let warned = live["warnings"].as_array().unwrap().iter().any(|w| {
        w["kind"] == "takeover_restarted"
            && w["text"].as_str().unwrap().contains("shard 1/3's share was taken over from second")
            && w["text"].as_str().unwrap().contains(what)
    });
    assert!(warned, "{}", live["warnings"]);
}

/// The origin served what the report counts, but for what the killed shard sent after its
/// last record (its results of that stretch died with it): at most `tail`.
fn assert_served(live: &Value, served: u64, tail: u64) {
    let total = live["requests"]["total"].as_u64().unwrap();
    assert!(total <= served && served - total <= tail, "the report counts {total}, the origin served {served}");
}

#[test]
fn a_closed_loop_takeover_restarts_the_lost_shards_workers_for_the_rest_of_the_window() {
    let server =
        origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(10))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/bytes/1k", server.url());
    let (live, _) = run_with_takeover(dir.path(), &[&url, "-c", "6", "-d", "12s"]);
    let (start_us, from_s) = takeover_of(&dir.path().join("s0.takeover-1.brg"));
    assert!((3..12).contains(&from_s), "lost after its interval 3: {from_s}");
    let rows = log_of(&dir.path().join("s0.takeover-1.csv"));
    let first = rows.iter().map(|r| r.0).min().expect("the takeover sent");
    let last = rows.iter().map(|r| r.0).max().unwrap();
    // From the second it took over, not from the start; to the window's end, not a fresh
    // duration: no request starts after the end (a request's start is its intended one).
    assert!(first >= start_us + from_s * 1_000_000, "first at {} ms", (first - start_us) / 1000);
    assert!(last <= start_us + 12_000_000, "last at {} ms", (last - start_us) / 1000);
    assert!(last >= start_us + 11_000_000, "it ran to the end: last at {} ms", (last - start_us) / 1000);
    // The lost shard's share of -c 6: two workers.
    let workers: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(workers.len(), 2, "{workers:?}");
    assert_marked_restarted(&live, "closed-loop workers were restarted");
    let lost = live["shards"].as_array().unwrap().iter().find(|s| s["shard"] == "1/3").expect("the lost shard's row");
    assert!(lost["behind"].as_str().unwrap().contains("taken over, restarted"), "{lost}");
    // The gap is said: from the lost shard's last record to the takeover's first request.
    let restarted = live["warnings"].as_array().unwrap().iter().find(|w| w["kind"] == "takeover_restarted").unwrap();
    let takeover = live["shards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shard"] != "1/3" && s["shard"].as_str().unwrap().starts_with("1/3"))
        .unwrap();
    let gap = format!(
        "nothing of its share was sent from {:.1} s to {:.1} s of the run",
        lost["ended_s"].as_f64().unwrap(),
        takeover["first_send_ms"].as_f64().unwrap() / 1e3
    );
    assert!(restarted["text"].as_str().unwrap().contains(&gap), "{restarted} {gap}");
    // Its throughput is over the time it sent, not the run's window from the shared start.
    let active = takeover["ended_s"].as_f64().unwrap() - takeover["first_send_ms"].as_f64().unwrap() / 1e3;
    let per_s = takeover["ok"].as_f64().unwrap() / active;
    assert!((takeover["throughput_per_sec"].as_f64().unwrap() / per_s - 1.0).abs() < 0.05, "{takeover}");
    // The text and HTML reports of the files say so too: the row, its note, the warning.
    let page = dir.path().join("r.html");
    let files = ["s0.brg", "s1.brg", "s2.brg", "s0.takeover-1.brg"].map(|f| dir.path().join(f));
    let out = barrage().arg("report").args(&files).args(["--format", "text", "--html"]).arg(&page).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    for shown in [text.as_ref(), html.as_str()] {
        assert!(shown.contains(&format!("1/3 takeover from {from_s} s, restarted")), "{shown}");
        assert!(shown.contains("afresh: not an exact continuation"), "the Shards table's note");
        assert!(shown.contains("to its end, not continued exactly"), "the warning");
        // The note says what this run's columns are: a closed loop's latency is not
        // corrected; the start was the collector's; the lost shard's unknown first send.
        assert!(shown.contains("p99: latency from each request"), "{shown}");
        assert!(!shown.contains("p99 is corrected") && !shown.contains("corrected latency (from each"), "{shown}");
        assert!(shown.contains("start: how long after the start the collector gave (--rendezvous)"), "{shown}");
        assert!(!shown.contains("after --start-at"), "{shown}");
        assert!(shown.contains("(-: not known yet; a shard writes it with its footer"), "{shown}");
    }
    // Two workers at 10 ms a request: 200/s; SIGKILL loses at most its last second and a
    // half of results (the interval not yet written, and the one in flight); two, on a busy
    // machine whose post of it came late.
    assert_served(&live, served(server.addr()), 400 + 10);
}

#[test]
fn a_scenario_takeover_resumes_the_flow_arrivals_and_restarts_the_workers() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("flows.toml");
    let text = format!(
        r#"
[[flow.front.step]]
name = "page"
url = "{url}/bytes/1"

[[flow.back.step]]
name = "api"
url = "{url}/bytes/2"

[group.steady]
flow = "front"
rate = 60
duration = "12s"

[group.workers]
flow = "back"
concurrency = 3
think-time = "20ms"
duration = "12s"
"#,
        url = server.url()
    );
    std::fs::write(&scenario, text).unwrap();
    let (live, _) = run_with_takeover(dir.path(), &["--scenario", scenario.to_str().unwrap()]);
    let (start_us, from_s) = takeover_of(&dir.path().join("s0.takeover-1.brg"));
    assert!((3..12).contains(&from_s), "lost after its interval 3: {from_s}");
    let rows = log_of(&dir.path().join("s0.takeover-1.csv"));
    // The open-loop group: exactly shard 1's lane of the arrivals (every third of 60/s),
    // from the second resumed from to the group's end, each at its intended time (ms).
    let got: std::collections::BTreeSet<u64> =
        rows.iter().filter(|r| r.1 == "steady/page").map(|r| (r.0 - start_us + 500) / 1000).collect();
    let planned: std::collections::BTreeSet<u64> =
        (60 * from_s..720).filter(|k| k % 3 == 1).map(|k| (k * 1_000_000 / 60 + 500) / 1000).collect();
    assert_eq!(got, planned, "the lost shard's flow arrivals from second {from_s}");
    // The closed-loop group: shard 1's one worker, restarted at that second, to the end.
    let restarted: Vec<u64> = rows.iter().filter(|r| r.1 == "workers/api").map(|r| r.0).collect();
    let (first, last) = (restarted.iter().min().expect("its worker ran"), restarted.iter().max().unwrap());
    assert!(*first >= start_us + from_s * 1_000_000, "first at {} ms", (first - start_us) / 1000);
    assert!(*last <= start_us + 12_000_000, "last at {} ms", (last - start_us) / 1000);
    assert!(*last >= start_us + 11_000_000, "it ran to the end: last at {} ms", (last - start_us) / 1000);
    assert_marked_restarted(&live, "flows were restarted");
    // The takeover ran the lost shard's part of the group, which that shard's file asks.
    let steady = live["flows"].as_array().unwrap().iter().find(|g| g["name"] == "steady").unwrap();
    assert_eq!(steady["asked_per_sec"], 60.0, "{steady}");
    // 20 flows/s and a worker's ~50/s on the lost shard: two seconds of them at most.
    assert_served(&live, served(server.addr()), 150);
}

#[test]
fn a_closed_loops_count_is_not_taken_over_and_the_collector_says_why() {
    let server =
        origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(10))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--lateness", "2s", "--on-shard-loss", "takeover"]);
    let url = format!("{}/bytes/1k", server.url());
    let children: Vec<_> =
        (0..3).map(|i| shard(dir.path(), i, &c.url, &[&url, "-c", "6", "-n", "4800"], &[])).collect();
    let (code, live, stderr) = c.kill_shard_1_at(2, children);
    assert!(
        stderr.contains("shard 1/3 lost: its data stopped")
            && stderr.contains("its share cannot be taken over: a closed loop's count (-n)"),
        "{stderr}"
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!dir.path().join("s0.takeover-1.brg").exists() && !dir.path().join("s2.takeover-1.brg").exists());
    // Its part of the count shown as never sent: sent, of its 1,600.
    let lost = live["shards"].as_array().unwrap().iter().find(|s| s["shard"] == "1/3").expect("its row");
    assert_eq!(lost["due"], 1600, "{lost}");
    assert!(lost["behind"].as_str().unwrap().contains("never sent"), "{lost}");
    let never = 1600 - lost["sent"].as_u64().unwrap();
    assert!(never > 0, "{lost}");
    let own = lost["ok"].as_f64().unwrap() / 1600.0;
    assert!((lost["success_ratio"].as_f64().unwrap() - own).abs() < 1e-9, "of its part: {lost}");
    // And in the run's: the count is what it intended, what the lost shard never sent of
    // it is never sent, and failed.
    let c = &live["coverage"];
    assert_eq!((c["intended"].as_u64(), c["unsent"].as_u64()), (Some(4800), Some(never)), "{c}");
    let ok = live["requests"]["ok"].as_f64().unwrap();
    assert!((live["success_ratio"].as_f64().unwrap() - ok / 4800.0).abs() < 1e-9, "{}", live["success_ratio"]);
    let warned = live["warnings"].as_array().unwrap().iter().any(|w| {
        w["kind"] == "arrivals_never_sent"
            && w["text"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{never} of the run's 4800 requests (-n) were never sent (shard 1/3 lost)"))
    });
    assert!(warned, "{}", live["warnings"]);
}
