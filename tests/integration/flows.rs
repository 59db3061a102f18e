//! Scenario flows against real servers: the album study's POST → capture → GET at 10
//! workers with every GET checked by content and the origin's own counts; failed captures
//! and checks counted and the rest of the flow skipped; two thread groups at their own
//! rates and offsets; flow latency against a known delay and a stall; a feeder's rows each
//! used once per pass. The balancer case is in `testbed.rs`.

use crate::albums::{album_counts, image, IMAGE_LEN};
use crate::util::{barrage, ServeProcess};
use barrage_metrics::summary::{Warning, WarningKind};
use barrage_metrics::{Recorder, ResultsReader};
use std::path::Path;

/// Every interval of a results file added up, and its header.
pub fn totals(path: &Path) -> (barrage_metrics::RunHeader, Recorder) {
    let mut r = ResultsReader::open(path).unwrap();
    let header = r.header().clone();
    let mut total = Recorder::new();
    while let Some(i) = r.next_interval() {
        total.add(&i.recorder);
    }
    assert!(r.warning().is_none(), "{:?}", r.warning());
    (header, total)
}

/// Runs `barrage run --scenario FILE ARGS -o DIR/run.brg`, which must succeed.
pub fn run_scenario(dir: &Path, scenario: &str, args: &[&str]) -> (barrage_metrics::RunHeader, Recorder) {
    run_scenario_ending(dir, scenario, args, None)
}

/// [`run_scenario`] of a run built on failed flows: it must end with exit code 3 and say
/// why (`want`) in one line, its results kept.
fn run_failing_scenario(dir: &Path, scenario: &str, args: &[&str], want: &str) -> Recorder {
    run_scenario_ending(dir, scenario, args, Some(want)).1
}

fn run_scenario_ending(
    dir: &Path,
    scenario: &str,
    args: &[&str],
    failure: Option<&str>,
) -> (barrage_metrics::RunHeader, Recorder) {
    let file = dir.join("scenario.toml");
    std::fs::write(&file, scenario).unwrap();
    let out = dir.join("run.brg");
    let result = barrage()
        .args(["run", "--scenario", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "--timeout", "5s"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    match failure {
        None => assert!(result.status.success(), "{stderr}"),
        Some(want) => {
            assert_eq!(result.status.code(), Some(3), "{stderr}");
            assert!(stderr.contains("not a result") && stderr.contains(want), "{stderr}");
        }
    }
    totals(&out)
}

pub fn key<'r>(keyed: &'r barrage_metrics::recorder::Keyed, name: &str) -> &'r barrage_metrics::recorder::KeyedStats {
    keyed.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("no key {name} in {:?}", names(keyed)))
}

fn names(keyed: &barrage_metrics::recorder::Keyed) -> Vec<&str> {
    keyed.iter().map(|k| k.name.as_str()).collect()
}

/// The album study's flow; `capture` and `status` let a test break it.
pub fn album_scenario(addr: &str, image: &Path, capture: &str, status: u16) -> String {
    format!(
        r#"
[vars]
host = "{addr}"

[[flow.album.step]]
name = "post-album"
method = "POST"
url = "http://{{{{host}}}}/albums"
form.profile = {{ json = {{ artist = "Rock Pistols", title = "Album {{{{flow.id}}}}", year = "1977" }} }}
form.image = {{ file = "{image}", type = "image/png" }}
check.status = [{status}]
capture.albumID = {{ json-path = "{capture}", public = true }}

[[flow.album.step]]
name = "get-album"
url = "http://{{{{host}}}}/albums/{{{{albumID}}}}"
check.status = [200]
check.json = [{{ path = "$.title", equals = "Album {{{{flow.id}}}}" }}]
"#,
        image = image.display()
    )
}

fn album_origin(dir: &Path) -> (ServeProcess, std::path::PathBuf) {
    let store = dir.join("albums");
    let origin = ServeProcess::start(&["--album-store", store.to_str().unwrap(), "--latency", "1ms"]);
    let img = dir.join("nmtb.png");
    std::fs::write(&img, image(IMAGE_LEN)).unwrap();
    (origin, img)
}

#[test]
fn the_album_flow_reads_back_every_album_it_posted() {
    let dir = tempfile::tempdir().unwrap();
    let (origin, img) = album_origin(dir.path());
    let scenario = album_scenario(&origin.addr.to_string(), &img, "$.albumID", 200);
    let log = dir.path().join("log.csv");
    let (header, total) =
        run_scenario(dir.path(), &scenario, &["-c", "10", "-d", "2s", "--log", log.to_str().unwrap()]);
    assert_eq!(header.groups.len(), 1);
    assert_eq!((header.groups[0].name.as_str(), header.groups[0].steps.len()), ("album", 2));
    let flows = key(&total.flows, "album");
    let (post, get) = (key(&total.names, "post-album"), key(&total.names, "get-album"));
    assert!(flows.requests >= 50, "only {} flows", flows.requests);
    // Every flow succeeded: each GET found the album just posted, with its own title.
    assert_eq!((flows.failed, post.failed, get.failed), (0, 0, 0));
    assert_eq!((get.flow.check_failed, get.flow.skipped), (0, 0));
    // The origin's own counts: as many albums created and read as barrage counted per step,
    // none unknown (an interrupted last flow may have posted without reading back).
    let counts = album_counts(origin.addr);
    assert_eq!(counts["created"].as_u64(), Some(post.requests), "{counts}");
    assert_eq!(counts["read"].as_u64(), Some(get.requests), "{counts}");
    assert_eq!(counts["not_found"].as_u64(), Some(0), "{counts}");
    assert!(post.requests - flows.requests <= 10 && get.requests == flows.requests, "{counts}");
    // The request log: each flow's POST then its GET of the id the POST returned.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    let columns: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| columns.iter().position(|c| *c == name).unwrap();
    let (flow_id, step, outcome, url, name) =
        (col("flow_id"), col("step_index"), col("outcome"), col("url"), col("name"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let gets: Vec<&Vec<&str>> = rows.iter().filter(|r| r[name] == "get-album").collect();
    assert_eq!(gets.len() as u64, get.requests);
    for g in gets {
        assert_eq!((g[step], g[outcome]), ("1", "ok"));
        let id = g[url].rsplit('/').next().unwrap();
        assert!(id.len() == 32 && std::fs::metadata(dir.path().join("albums").join(id)).is_ok(), "{}", g[url]);
        assert!(rows.iter().any(|r| r[flow_id] == g[flow_id] && r[name] == "post-album" && r[step] == "0"));
    }
}

#[test]
fn a_capture_that_cannot_match_fails_the_flow_and_skips_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (origin, img) = album_origin(dir.path());
    let scenario = album_scenario(&origin.addr.to_string(), &img, "$.albumId", 200);
    let want = "failed (mostly capture failed)";
    let log = dir.path().join("log.jsonl");
    let args = ["-c", "2", "-d", "1s", "--log", log.to_str().unwrap()];
    let total = run_failing_scenario(dir.path(), &scenario, &args, want);
    let flows = key(&total.flows, "album");
    let (post, get) = (key(&total.names, "post-album"), key(&total.names, "get-album"));
    assert!(flows.requests > 5);
    assert_eq!((flows.failed, flows.flow.capture_failed, flows.flow.check_failed), (flows.requests, flows.requests, 0));
    // Every POST was answered 200 but failed its capture; no GET was sent, each skipped.
    assert_eq!((post.failed, post.flow.capture_failed), (post.requests, post.requests));
    assert_eq!((get.requests, get.flow.skipped), (0, flows.requests));
    // Each was answered 200, and its capture failed it: rejected, not ok.
    assert_eq!((total.counts.ok, total.counts.rejected), (0, post.requests));
    assert_eq!(album_counts(origin.addr)["read"].as_u64(), Some(0));
    // The report says why: what the capture saw.
    let s = barrage_metrics::summary::summarize(&[dir.path().join("run.brg")]).unwrap();
    let step = |w: &&Warning| w.kind == WarningKind::StepFailed && w.text.starts_with("step post-album: ");
    let why = &s.warnings.iter().find(step).expect("an example").text;
    assert!(why.contains("capture albumID found nothing in a 200 answer of") && why.contains("imageSize"), "{why}");
    // The log says why each flow failed, and shows every skipped step with no status.
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let outcome =
        |name: &str| rows.iter().filter(|r| r["name"] == name).map(|r| r["outcome"].clone()).collect::<Vec<_>>();
    assert!(outcome("post-album").iter().all(|o| o == "capture_failed:albumID"));
    let skipped: Vec<_> = rows.iter().filter(|r| r["name"] == "get-album").collect();
    assert_eq!(skipped.len() as u64, flows.requests);
    for r in skipped {
        assert_eq!(
            (&r["outcome"], &r["status"], &r["step_index"]),
            (&"skipped".into(), &serde_json::Value::Null, &1.into())
        );
        assert!(r["url"].as_str().unwrap().ends_with("/albums/{{albumID}}"), "{r}");
    }
}

#[test]
fn a_status_check_that_does_not_hold_fails_the_flow_as_check_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (origin, img) = album_origin(dir.path());
    let scenario = album_scenario(&origin.addr.to_string(), &img, "$.albumID", 201);
    let want = "failed (mostly check failed)";
    let total = run_failing_scenario(dir.path(), &scenario, &["-c", "2", "-d", "1s"], want);
    let flows = key(&total.flows, "album");
    let (post, get) = (key(&total.names, "post-album"), key(&total.names, "get-album"));
    assert!(flows.requests > 5);
    assert_eq!((flows.flow.check_failed, flows.flow.capture_failed), (flows.requests, 0));
    assert_eq!((post.flow.check_failed, post.failed), (post.requests, post.requests));
    let s = barrage_metrics::summary::summarize(&[dir.path().join("run.brg")]).unwrap();
    assert!(
        s.warnings.iter().any(|w| w.kind == WarningKind::StepFailed
            && w.text.starts_with("step post-album: check status failed on a 200 answer")),
        "{:?}",
        s.warnings
    );
    assert_eq!((get.requests, get.flow.skipped), (0, flows.requests));
}

#[test]
fn two_groups_run_at_their_own_rates_from_their_own_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let origin = ServeProcess::start(&[]);
    let scenario = format!(
        r#"
[[flow.front.step]]
name = "page"
url = "http://{addr}/bytes/1"

[[flow.back.step]]
name = "api"
url = "http://{addr}/bytes/2"

[group.steady]
flow = "front"
rate = 40
duration = "3s"

[group.late]
flow = "back"
rate = 20
start = "1s"
duration = "2s"
"#,
        addr = origin.addr
    );
    let log = dir.path().join("log.csv");
    let (header, total) = run_scenario(dir.path(), &scenario, &["--log", log.to_str().unwrap()]);
    // An open-loop schedule is exact: 40/s for 3 s and 20/s for 2 s.
    let (steady, late) = (key(&total.flows, "steady"), key(&total.flows, "late"));
    assert_eq!((steady.requests, steady.failed, steady.flow.dropped), (120, 0, 0));
    assert_eq!((late.requests, late.failed, late.flow.dropped), (40, 0, 0));
    assert_eq!(key(&total.names, "steady/page").requests, 120);
    assert_eq!(key(&total.names, "late/api").requests, 40);
    assert_eq!(header.groups[1].start_ms, 1000);
    assert_eq!(header.groups[1].end_ms, Some(3000));
    // The report gives each group's rate over its own window, against what it was asked.
    let summary = barrage_metrics::summary::summarize(&[dir.path().join("run.brg")]).unwrap();
    for (group, asked) in [("steady", 40.0), ("late", 20.0)] {
        let g = summary.flows.iter().find(|f| f.name == group).unwrap();
        let ran = g.flows_per_sec.unwrap();
        assert_eq!(g.asked_per_sec, Some(asked));
        assert!((ran - asked).abs() <= asked * 0.01, "{group}: {ran}/s of {asked}/s over {} s", g.duration_s);
    }
    assert!(summary.warnings.iter().all(|w| !w.text.contains("group")), "{:?}", summary.warnings);
    // The late group sent nothing before its start, and everything within its window.
    let text = std::fs::read_to_string(&log).unwrap();
    let start_us = header.started_unix_ms * 1000;
    let offsets: Vec<u64> = text
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(2) == Some("late/api"))
        .map(|l| l.split(',').next().unwrap().parse::<u64>().unwrap() - start_us)
        .collect();
    assert_eq!(offsets.len(), 40);
    assert!(offsets.iter().all(|o| (1_000_000..3_000_000).contains(o)), "{offsets:?}");
}

#[test]
fn flow_latency_is_the_sum_of_its_steps_and_shows_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    let origin = ServeProcess::start(&["--latency", "40ms"]);
    let flow = |think: &str| {
        format!(
            r#"
[[flow.three.step]]
name = "one"
url = "http://{addr}/bytes/1"
think = "{think}"

[[flow.three.step]]
name = "two"
url = "http://{addr}/bytes/2"
think = "{think}"

[[flow.three.step]]
name = "three"
url = "http://{addr}/bytes/3"
"#,
            addr = origin.addr
        )
    };
    // 3 steps of 40 ms and 2 pauses of 20 ms: 160 ms a flow, at 4 flows a second, each on
    // its own slot.
    let (_, total) = run_scenario(dir.path(), &flow("20ms"), &["--rate", "4", "-d", "2s"]);
    let flows = key(&total.flows, "three");
    assert_eq!((flows.requests, flows.failed), (8, 0));
    let (p50, max) = (flows.latency.value_at_quantile(0.5), flows.latency.max());
    assert!((160_000..230_000).contains(&p50), "flow p50 {p50} µs, expected 160 ms and a little");
    assert!(max < 300_000, "flow max {max} µs");
    for step in ["one", "two", "three"] {
        let p50 = key(&total.names, step).latency.value_at_quantile(0.5);
        assert!((40_000..70_000).contains(&p50), "{step} p50 {p50} µs");
    }
    // One slot, flows due every 100 ms, each taking 160 ms: they queue, and the wait shows
    // in the flow latency (from each flow's intended start), not in any step's.
    let dir = tempfile::tempdir().unwrap();
    let (_, total) = run_scenario(dir.path(), &flow("20ms"), &["--rate", "10", "--max-in-flight", "1", "-d", "2s"]);
    let flows = key(&total.flows, "three");
    assert!(flows.latency.max() >= 500_000, "flow max {} µs: the backlog is missing", flows.latency.max());
    assert!(flows.flow.dropped > 0, "flows due and never started are counted");
    // The first step was due when the flow was, as a plain request would be; the later
    // steps were due when the step before ended (and its pause), so they carry no wait.
    let first = key(&total.names, "one").latency.value_at_quantile(0.99);
    assert!(first >= 400_000, "step one p99 {first} µs");
    for step in ["two", "three"] {
        let p99 = key(&total.names, step).latency.value_at_quantile(0.99);
        assert!(p99 < 120_000, "{step} p99 {p99} µs: a later step does not carry the flow's wait");
    }
}

#[test]
fn a_sequential_feeder_hands_each_row_out_once_per_pass() {
    let dir = tempfile::tempdir().unwrap();
    let origin = ServeProcess::start(&[]);
    let rows: String = (0..1000).map(|i| format!("user-{i},{}\n", i * 7)).collect();
    std::fs::write(dir.path().join("users.csv"), format!("user,score\n{rows}")).unwrap();
    let scenario = |on_end: &str| {
        format!(
            r#"
[feeder.users]
file = "users.csv"
on-end = "{on_end}"

[flow.lookup]
feeder = "users"

[[flow.lookup.step]]
name = "user"
url = "http://{addr}/bytes/16?user={{{{row.user}}}}&score={{{{row.score}}}}"
"#,
            addr = origin.addr
        )
    };
    let used = |dir: &Path| -> std::collections::BTreeMap<String, u64> {
        let text = std::fs::read_to_string(dir.join("log.csv")).unwrap();
        let mut used = std::collections::BTreeMap::new();
        for line in text.lines().skip(1) {
            let url = line.split(',').nth(4).unwrap();
            *used.entry(url.rsplit('/').next().unwrap().to_string()).or_insert(0) += 1;
        }
        used
    };
    // "stop": the run ends when the rows run out, each used exactly once.
    let log = dir.path().join("log.csv");
    let (_, total) =
        run_scenario(dir.path(), &scenario("stop"), &["-c", "4", "-d", "20s", "--log", log.to_str().unwrap()]);
    assert_eq!(key(&total.flows, "lookup").requests, 1000);
    let once = used(dir.path());
    assert_eq!(once.len(), 1000);
    assert!(once.iter().all(|(u, n)| *n == 1 && u.contains("&score=")), "{once:?}");
    assert!(once.contains_key(&format!("16?user=user-999&score={}", 999 * 7)));
    // "recycle": over more than one pass, every row is used as often as any other, give or
    // take the one pass in progress.
    let (_, total) =
        run_scenario(dir.path(), &scenario("recycle"), &["-c", "4", "-d", "1s", "--log", log.to_str().unwrap()]);
    let n = key(&total.flows, "lookup").requests;
    let counts = used(dir.path());
    let (lo, hi) = (counts.values().min().unwrap(), counts.values().max().unwrap());
    assert!(hi - lo <= 1 && counts.values().sum::<u64>() == n, "{lo}..{hi} over {n} flows");
    assert!(n > 1000 || counts.len() as u64 == n, "n {n}");
}

/// The end of a group's window stops a flow between steps: no step or pause starts after
/// it, so the run ends on time, and the flow is counted as unfinished, not as finished.
#[test]
fn a_flow_cut_by_the_end_of_its_window_is_unfinished_and_the_run_ends_on_time() {
    let dir = tempfile::tempdir().unwrap();
    let origin = ServeProcess::start(&[]);
    let scenario = format!(
        r#"
[[flow.slow.step]]
name = "one"
url = "http://{addr}/bytes/1"
think = "5s"

[[flow.slow.step]]
name = "two"
url = "http://{addr}/bytes/2"
"#,
        addr = origin.addr
    );
    let started = std::time::Instant::now();
    let total = run_failing_scenario(dir.path(), &scenario, &["-c", "2", "-d", "1s"], "no flow finished");
    assert!(started.elapsed() < std::time::Duration::from_millis(3500), "took {:?}", started.elapsed());
    let flows = key(&total.flows, "slow");
    assert_eq!((flows.requests, flows.flow.unfinished, flows.flow.skipped), (0, 2, 0));
    assert_eq!(key(&total.names, "one").requests, 2);
    assert!(total.names.iter().all(|k| k.name != "two"), "step two was never sent");
}

/// A group whose window would open after the run's end never runs: the run still ends on
/// time (an open-loop group waiting for its start once held it, deaf to Ctrl-C), says so
/// on stderr and in the report, and the flows of all groups are counted over the time the
/// groups that ran had.
#[test]
fn a_group_that_starts_after_the_end_never_runs_and_the_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let origin = ServeProcess::start(&[]);
    let scenario = format!(
        r#"
[[flow.f.step]]
name = "get"
url = "http://{addr}/bytes/1"

[group.now]
flow = "f"
rate = 20

[group.later]
flow = "f"
rate = 50
start = "100h"
"#,
        addr = origin.addr
    );
    let file = dir.path().join("s.toml");
    std::fs::write(&file, scenario).unwrap();
    let out_file = dir.path().join("run.brg");
    let started = std::time::Instant::now();
    let out = barrage()
        .args(["run", "--scenario", file.to_str().unwrap(), "-d", "1s", "-o", out_file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(
        stderr.contains("group later of --scenario starts at 360000s") && stderr.contains("it will not run"),
        "{stderr}"
    );
    let s = barrage_metrics::summary::summarize(&[out_file]).unwrap();
    let never = |w: &Warning| w.kind == WarningKind::GroupNeverRan && w.text.starts_with("group later: never ran");
    assert!(s.warnings.iter().any(never), "{:?}", s.warnings);
    let all = s.flows_total.as_ref().unwrap();
    assert_eq!((all.flows, all.duration_s), (20, 1.0));
}

/// A sweep runs a one-group scenario at each level's rate: every level's flows are what its
/// rate asks, in its own file, and the origin counts all of them.
#[test]
fn a_sweep_runs_a_scenario_at_each_level() {
    let dir = tempfile::tempdir().unwrap();
    let origin = ServeProcess::start(&[]);
    let file = dir.path().join("s.toml");
    std::fs::write(&file, format!("[[flow.f.step]]\nname = \"get\"\nurl = \"http://{}/bytes/1\"\n", origin.addr))
        .unwrap();
    let out = dir.path().join("sweep");
    let result = barrage()
        .args(["sweep", "--scenario", file.to_str().unwrap(), "--rate", "10,20", "--step", "2s"])
        .args(["-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    for (level, want) in [("level-01-10rps.brg", 20), ("level-02-20rps.brg", 40)] {
        let (_, total) = totals(&out.join(level));
        let f = key(&total.flows, "f");
        assert_eq!((f.requests, f.failed), (want, 0), "{level}");
    }
    let stats: serde_json::Value =
        serde_json::from_slice(&crate::albums::send(origin.addr, "GET", "/_barrage/stats", None).body).unwrap();
    assert_eq!(stats["requests"].as_u64(), Some(60), "{stats}");
}

/// Issue 32, finding 7 of the counting: a step whose check failed on a 2xx answer once
/// counted as ok at the top and in "By method" but as failed in "By name". Two rows of
/// three answer 200, the third 201, which the step's status check refuses: a third of the
/// requests failed, and every table, the JSON, the CSV and the exit code say so alike.
#[test]
fn a_failed_check_fails_its_request_in_every_table_and_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let origin = ServeProcess::start(&[]);
    std::fs::write(dir.path().join("codes.csv"), "code\n200\n200\n201\n").unwrap();
    let scenario = dir.path().join("checked.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"
[feeder.codes]
file = "codes.csv"

[flow.checked]
feeder = "codes"

[[flow.checked.step]]
name = "answer"
url = "http://{addr}/status/{{{{row.code}}}}"
check.status = [200]
"#,
            addr = origin.addr
        ),
    )
    .unwrap();
    let out = dir.path().join("run.brg");
    let run = barrage()
        .args(["run", "--scenario", scenario.to_str().unwrap(), "--rate", "60", "-d", "2s", "--timeout", "5s"])
        .args(["--slo", "success>=90%", "--format", "json", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    // A third of the requests failed their check: the objective is missed (1), and the run
    // is not built on failure (two thirds of the flows succeeded).
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let r = &v["requests"];
    let (total, ok) = (r["total"].as_u64().unwrap(), r["ok"].as_u64().unwrap());
    assert_eq!(total, 120, "{r}");
    assert_eq!(ok, v["status_codes"]["200"].as_u64().unwrap(), "only the 200s passed the check: {v}");
    assert_eq!(r["rejected"].as_u64(), v["status_codes"]["201"].as_u64(), "{r}");
    assert_eq!(r["http_errors"], 0, "a 201 is no HTTP error: {r}");
    assert_eq!(ok, 80, "two rows of three: {r}");
    let success = v["success_ratio"].as_f64().unwrap();
    assert!((success - 80.0 / 120.0).abs() < 1e-9, "{success}");
    // By method and by name: the same requests, the same success.
    for table in ["by_method", "by_name"] {
        let row = &v[table][0];
        assert_eq!(
            (row["requests"].as_u64(), row["failed"].as_u64()),
            (Some(total), Some(total - ok)),
            "{table}: {row}"
        );
        assert_eq!(row["success_ratio"].as_f64(), Some(success), "{table}: {row}");
    }
    assert_eq!(v["flows_total"]["ok"], 80, "{}", v["flows_total"]);
    // The CSV's seconds add up to the same successes, and the report's Requests table
    // names the failed checks.
    let csv = barrage().args(["report", "--format", "csv", out.to_str().unwrap()]).output().unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let (ok_col, err_col) =
        (head.iter().position(|h| *h == "ok").unwrap(), head.iter().position(|h| *h == "errors").unwrap());
    let sum =
        |col: usize| csv.lines().skip(1).map(|l| l.split(',').nth(col).unwrap().parse::<u64>().unwrap()).sum::<u64>();
    assert_eq!((sum(ok_col), sum(err_col)), (ok, total - ok), "{csv}");
    let text = barrage().args(["report", out.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let line = |label: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("{label}: {text}"))
            .to_string()
    };
    assert!(line("ok ").contains(" 80 ") && line("ok ").contains("66.67%"), "{text}");
    assert!(line("check/capture failed").contains("40"), "{text}");
}

/// An answer of `len` bytes of small JSON objects, `[{"a":{"b":0}},…,{"a":{"b":1}}]`: a tree
/// of it takes some 90 times its size.
fn small_objects(len: usize) -> Vec<u8> {
    let (item, last) = (&b"{\"a\":{\"b\":0}},"[..], &b"{\"a\":{\"b\":1}}]"[..]);
    let mut body = b"[".to_vec();
    while body.len() + item.len() + last.len() <= len {
        body.extend_from_slice(item);
    }
    body.extend_from_slice(last);
    body
}

/// Stores `body` at `path` on a `barrage serve` origin, which answers it to each GET.
fn store(addr: std::net::SocketAddr, path: &str, body: &[u8]) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    write!(s, "PUT {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())
        .unwrap();
    s.write_all(body).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
}

/// Issue 33 item 1: answers of 16 MiB (the most kept for judging) of small JSON objects,
/// judged at 4 flows in flight by a JSONPath capture, a failing JSON check (its example
/// quotes the answer) and a filter. Each answer was read into a tree of about a GiB (twice
/// over for a failed check's example), and the run ended seconds past its duration and
/// --timeout. Now a run holds what any run does and twice the answers in flight, and ends
/// on time.
#[test]
fn json_answers_are_judged_within_twice_their_size_and_on_time() {
    use crate::hostile::run_bounded;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let origin = ServeProcess::start(&[]);
    let answer = small_objects(barrage_plan::flow::MAX_JUDGED_BODY);
    store(origin.addr, "/answer.json", &answer);
    // As many flows as the issue measured (2.4 GiB before): the bound is 64 MiB and twice
    // each answer in flight.
    let (flows, answer_kib) = (16, answer.len() as u64 >> 10);
    for (what, judged) in [
        ("capture", r#"capture.b = { json-path = "$[0].a.b" }"#),
        ("check", r#"check.json = [{ path = "$[-1].a.b", equals = "2" }]"#),
        // One value; but finding it needs a tree of the whole answer, over the budget.
        ("filter", r#"capture.a = { json-path = "$[?@.a.b == 1].a" }"#),
    ] {
        let file = dir.path().join(format!("{what}.toml"));
        let url = format!("http://{}/answer.json", origin.addr);
        std::fs::write(&file, format!("[[flow.f.step]]\nname = \"get\"\nurl = \"{url}\"\n{judged}\n")).unwrap();
        let out = dir.path().join(format!("{what}.brg"));
        let mut cmd = barrage();
        // A debug build reads 16 MiB of JSON in some 0.7 s (a release build in 0.1 s): the
        // time out leaves room for each kind of judging to be done on a busy machine.
        cmd.args(["run", "--scenario", file.to_str().unwrap(), "-c", &flows.to_string(), "-d", "2s"]).args([
            "--timeout",
            "5s",
            "-o",
            out.to_str().unwrap(),
        ]);
        let run = run_bounded(cmd, None).unwrap_or_else(|| panic!("{what}: still ran after the time limit"));
        let err = run.stderr();
        eprintln!("{what}: peak RSS {} KiB, {:?}", run.max_rss_kib, run.took);
        // What any run holds (some 40 MiB, a debug build), and twice each answer in flight.
        let bound_kib = (64 << 10) + 2 * flows * answer_kib;
        assert!(run.max_rss_kib < bound_kib, "{what}: peak RSS {} KiB, over {bound_kib} KiB", run.max_rss_kib);
        // Its duration, its --timeout, and a second.
        assert!(run.took < Duration::from_secs(2 + 5 + 1), "{what}: took {:?}", run.took);
        assert!(matches!(run.output.status.code(), Some(0 | 3)) && !err.contains("panicked"), "{what}: {err}");
        let total = totals(&out).1;
        let get = key(&total.names, "get");
        match what {
            "capture" => assert!(get.requests > get.failed, "{what}: no capture found its value: {err}"),
            "check" => {
                assert!(get.flow.check_failed >= 1, "{what}: {err}");
                let example = get.example.as_deref().unwrap_or_default();
                let quoted = format!("check json failed on a 200 answer of {} bytes: \"[{{", answer.len());
                assert!(example.starts_with(&quoted) && example.ends_with('…'), "{example}");
            }
            _ => assert!(get.flow.capture_failed >= 1 && get.requests == get.failed, "{what}: {err}"),
        }
    }
}
