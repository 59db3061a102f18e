//! Studies get the workload they ask for, checked on the studies users run, against the
//! servers' own counts: the svLoad matrix against Varnish (varnishstat), a Wisconsin Proxy
//! Benchmark sweep against Squid (the origin's own request count), and every row's hits
//! asked and got told by the origin's stamps.

use crate::testbed::Testbed;
use crate::util::{barrage, experiment, kept_logs, require};
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_testbed::program_path;
use serde_json::Value;
use std::path::{Path, PathBuf};

const SVLOAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cache/study.toml");

/// A row's labels by column.
fn label<'v>(row: &'v Value, column: &str) -> &'v str {
    row["labels"][column].as_str().unwrap_or_else(|| panic!("no {column} in {row}"))
}

/// The hits a row asked for and got.
fn hits(row: &Value) -> (f64, f64) {
    let h = &row["hits"];
    (h["asked"].as_f64().unwrap_or_else(|| panic!("no hits in {row}")), h["got"].as_f64().expect("answers told"))
}

/// What every row of the svLoad matrix must show: a cache-hit measure asks for 100% hits
/// and gets at least 99%, a cache-miss row asks for none and gets at most 1%, by the
/// origin's stamps; every row with load shows the one background asked for behind every
/// case; and the comparisons hold every pair of the paper's tables.
fn check_svload(json: &Value) {
    let rows = json["matrix"].as_array().unwrap();
    assert_eq!(rows.len(), 14, "10 cases, 4 of them in two phases");
    for row in rows {
        let (server, phase) = (label(row, "server"), label(row, "phase"));
        assert_eq!(row["verdict"], "ok", "{row}");
        match (server, phase) {
            ("cache-hit", "measure") => {
                let (asked, got) = hits(row);
                assert!(asked == 1.0 && got >= 0.99, "{row}");
                assert_eq!(row["hits"]["false_misses"], 0, "{row}");
            }
            ("cache-miss", _) => {
                let (asked, got) = hits(row);
                assert!(asked == 0.0 && got <= 0.01, "{row}");
                assert_eq!(row["hits"]["false_hits"], 0, "{row}");
            }
            _ => {}
        }
        let background = row.get("background").and_then(Value::as_str);
        match label(row, "load") {
            "with" => assert_eq!(background, Some("200/s, 0.0% repeats of 100000 objects"), "{row}"),
            _ => assert_eq!(background, None, "{row}"),
        }
    }
    let pairs = |factor: &str| -> Vec<String> {
        json["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["factor"] == factor)
            .map(|c| format!("{}->{}", c["from_case"].as_str().unwrap(), c["to_case"].as_str().unwrap()))
            .collect()
    };
    // Table IX: the backend against a hit and against a miss, for each URL and load.
    let server = pairs("server");
    for pair in ["TC0->TC2", "TC1->TC3", "TC4->TC6", "TC5->TC7", "TC4->TC8", "TC5->TC9"] {
        assert!(server.contains(&pair.to_string()), "{pair} missing from {server:?}");
    }
    assert_eq!(pairs("load").len(), 7, "every case without load against with, phase by phase");
}

/// The example as shipped: against the testbed it brings up itself, every row gets the
/// workload it asks for, and the experiment says so (exit 0). Its cache-miss rows used to
/// be 91% hits (each run's "new" objects a range other runs also drew), and its cache-hit
/// rows half misses (the measure outran what its fill had warmed).
#[test]
fn the_svload_example_runs_as_shipped_and_every_row_gets_what_it_asks() {
    if !require("varnishd", program_path("varnishd").is_some()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, json) = experiment(Path::new(SVLOAD), &dir.path().join("results"));
    assert_eq!(code, 0, "{json}");
    check_svload(&json);
    assert!(dir.path().join("results/summary.txt").is_file());
}

/// The same matrix against a Varnish the test runs itself, as a user runs it against their
/// own: the counts barrage gives every run add up to varnishstat's, and the origin served
/// exactly the answers barrage's stamps say it made.
#[test]
fn the_svload_matrix_is_what_varnishstat_counts() {
    if !require("varnishstat", program_path("varnishstat").is_some()) {
        return;
    }
    let Some(bed) = Testbed::up("varnish", &[]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(SVLOAD).unwrap();
    let origin = bed.url("origin-1");
    let varnish = bed.url("varnish");
    // The testbed is the test's: the file names its servers instead.
    let text = text
        .replace("testbed = \"varnish\"\n", "")
        .replace("url = \"{{server}}/obj/{id}\"", "url = \"{server}obj/{id}\"")
        .replace("server = \"origin-1\"", &format!("server = \"{origin}\""))
        .replace("server = \"varnish\"", &format!("server = \"{varnish}\""));
    let file = dir.path().join("svload.toml");
    std::fs::write(&file, text).unwrap();
    let before = crate::testbed::varnish_counters(&bed);
    let origin_before = bed.origin_requests("origin-1");
    let results = dir.path().join("results");
    let (code, json) = experiment(&file, &results);
    let after = crate::testbed::varnish_counters(&bed);
    let served = bed.origin_requests("origin-1") - origin_before;
    assert_eq!(code, 0, "{json}");
    check_svload(&json);
    // Every run of the study, backgrounds included: barrage's cache statuses are varnish's,
    // and what the origin made is what barrage's stamps say it made.
    let runs: Vec<RunSummary> =
        brg_files(&results).iter().map(|f| summarize(std::slice::from_ref(f)).unwrap()).collect();
    let cache = |status: &str| -> u64 {
        runs.iter().filter_map(|s| s.cache.as_ref()).map(|c| c.statuses.get(status).copied().unwrap_or(0)).sum()
    };
    let (requests, hits, misses) = (after.0 - before.0, after.1 - before.1, after.2 - before.2);
    eprintln!("varnish: {requests} requests, {hits} hits, {misses} misses; origin: {served}");
    assert_eq!((cache("hit"), cache("miss")), (hits, misses), "barrage's cache statuses against varnishstat");
    let direct: u64 = runs.iter().filter(|s| s.cache.is_none()).map(|s| s.requests.total).sum();
    assert_eq!(served, misses + direct, "the origin made each miss and each request sent to it directly");
}

const WPB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/wpb/study.toml");

/// The WPB example as shipped, checked against Squid's own access log (kept beside its
/// testbed when the experiment takes it down): Squid's hits are barrage's, every measure
/// row through Squid gets the 50% of hits it asks for, with a byte hit ratio near it (sizes
/// are a function of the object, not of its being a hit), and the rows with no cache show
/// the origin's 50 ms latency.
#[test]
fn the_wpb_example_runs_as_shipped_and_squids_log_counts_its_hits() {
    if !require("squid", program_path("squid").is_some()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let (code, json) = experiment(Path::new(WPB), &results);
    assert_eq!(code, 0, "{json}");
    let rows = json["matrix"].as_array().unwrap();
    assert_eq!(rows.len(), 12, "6 cases in two phases");
    let mut got_hits: f64 = 0.0;
    for row in rows {
        assert_eq!(row["verdict"], "ok", "{row}");
        let requests = row["requests"].as_f64().unwrap();
        match (label(row, "caching"), label(row, "phase")) {
            ("no-caching", _) => {
                let p50 = row["p50_us"].as_f64().unwrap();
                assert!((50_000.0..55_000.0).contains(&p50), "the origin's 50 ms: {row}");
            }
            ("caching", "measure") => {
                let (asked, got) = hits(row);
                assert!((asked - 0.5).abs() < 0.03 && (got - asked).abs() < 0.02, "{row}");
                let bytes = row["byte_hit_ratio"].as_f64().unwrap();
                assert!((bytes - got).abs() < 0.15, "byte hit ratio {bytes} against {got}: {row}");
                got_hits += got * requests;
            }
            _ => assert_eq!(hits(row), (0.0, 0.0), "a fill asks for new objects: {row}"),
        }
    }
    let log = std::fs::read_to_string(kept_logs(&results, "testbed-squid-").join("squid/access.log")).unwrap();
    let squid_hits = log.lines().filter(|l| l.contains("/obj/") && l.contains("_HIT/")).count();
    assert!(squid_hits > 500, "{squid_hits}");
    assert_eq!(squid_hits as f64, got_hits.round(), "Squid's hits are barrage's");
}

const KVSTORE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/kvstore/study.toml");

/// The key-value example as shipped (seed 001 over HTTP): haproxy hashes each key to one of
/// 3 origins sharing a store. Checked against the origins' own access logs, kept beside the
/// testbed: while all are up, every key's Put and Get land on one origin, and every origin
/// has keys; with origin-2 leaving for 2 s and coming back, the flows still find their keys
/// (the retries cover what was in flight to it), and the 1-server testbed's origin served
/// exactly the requests barrage counted.
#[test]
fn the_kvstore_example_hashes_each_key_to_one_origin_by_their_logs() {
    if !require("haproxy", program_path("haproxy").is_some()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let (code, json) = experiment(Path::new(KVSTORE), &results);
    assert_eq!(code, 0, "{json}");
    let rows = json["matrix"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "{json}");
    let mut one_server_requests = 0;
    for row in rows {
        let flows = row["flow_success_ratio"].as_f64().unwrap();
        match label(row, "membership") {
            "steady" => assert_eq!(flows, 1.0, "{row}"),
            _ => {
                assert!(flows >= 0.95, "{row}");
                let events = row["events"].as_array().unwrap_or_else(|| panic!("no events in {row}"));
                assert_eq!(events.len(), 2, "{row}");
            }
        }
        if label(row, "servers") == "1-server" {
            one_server_requests += row["requests"].as_u64().unwrap();
        }
    }
    let kept = |servers: u32| kept_logs(&results, &format!("testbed-haproxy-lb-{servers}-"));
    let kv_lines = |log: &Path, tag: &str| -> Vec<String> {
        let text = std::fs::read_to_string(log).unwrap();
        text.lines().filter_map(|l| l.split(' ').nth(2).filter(|p| p.starts_with(tag)).map(str::to_string)).collect()
    };
    let one = kv_lines(&kept(1).join("origin-1/access.log"), "/kv/");
    assert_eq!(one.len() as u64, one_server_requests, "the origin's log against barrage's count");
    let mut home: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for origin in 1..=3 {
        let keys = kv_lines(&kept(3).join(format!("origin-{origin}/access.log")), "/kv/steady-");
        assert!(!keys.is_empty(), "origin-{origin} has keys");
        for key in keys {
            let first = *home.entry(key.clone()).or_insert(origin);
            assert_eq!(first, origin, "{key} on origin-{first} and origin-{origin}");
        }
    }
    assert!(home.len() > 100, "{} keys", home.len());
}

/// The results files of an experiment's directory.
fn brg_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "brg"))
        .collect();
    files.sort();
    assert!(files.len() > 20, "{files:?}");
    files
}

/// The Wisconsin Proxy Benchmark's two phases against Squid, at three client counts: the
/// fill asks for new objects only (0% hits), the measure repeats half of its requests (the
/// benchmark's inherent hit ratio) over what the fill warmed and what it asked for itself,
/// and gets it within 2 points at every level; as many measure requests as the fill sent
/// (the measure used to run as long as the fill, twice as many requests, past the warmed
/// objects). The origin made exactly the answers the stamps say were not the cache's.
#[test]
fn a_wpb_sweep_against_squid_gets_the_inherent_hit_ratio_at_every_level() {
    let Some(bed) = Testbed::up("squid", &[]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}obj/{{id}}", bed.url("squid"));
    let origin_before = bed.origin_requests("origin-1");
    let out = barrage()
        // Clients with a think time, as the benchmark's; repeats over the last 1,000 objects
        // (a memory-only Squid stops storing new objects once its 64 MB are full).
        .args(["sweep", "-c", "2,4,8", "--think-time", "5ms", "--step", "2s", "--phases", "fill,measure"])
        .args(["--hit-ratio", "0.5", "--objects", "1000", "--format", "json", "-o"])
        .arg(dir.path().join("levels"))
        .arg(&url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let served = bed.origin_requests("origin-1") - origin_before;
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["levels"].as_array().unwrap_or_else(|| panic!("{json}"));
    assert_eq!(rows.len(), 6);
    let mut fresh = 0;
    for pair in rows.chunks(2) {
        let (fill, measure) = (&pair[0], &pair[1]);
        assert_eq!((label(fill, "phase"), label(measure, "phase")), ("fill", "measure"));
        let (asked, got) = hits(fill);
        assert!(asked == 0.0 && got <= 0.01, "a fill asks for new objects only: {fill}");
        let (asked, got) = hits(measure);
        assert!((asked - 0.5).abs() <= 0.05, "{measure}");
        assert!((got - asked).abs() <= 0.02, "the inherent hit ratio within 2 points: {measure}");
        assert_eq!(measure["verdict"], "ok", "{measure}");
        let level = label(fill, "level").split(' ').next().unwrap().to_string();
        let file = |phase: &str| {
            let name = std::fs::read_dir(dir.path().join("levels"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| {
                    let n = p.file_name().unwrap().to_string_lossy().to_string();
                    n.contains(&format!("-{level}workers.")) && n.ends_with(&format!(".{phase}.brg"))
                })
                .unwrap();
            summarize(&[name]).unwrap()
        };
        let (f, m) = (file("fill"), file("measure"));
        assert_eq!(m.requests.total, f.sent_prefix, "the measure asks for as many as the fill sent");
        for s in [&f, &m] {
            let w = s.workload.as_ref().unwrap();
            assert_eq!(w.stamped, s.requests.total, "squid keeps the origin's stamp");
            fresh += w.judged - (w.achieved_hit_ratio.unwrap() * w.judged as f64).round() as u64;
        }
    }
    assert_eq!(served, fresh, "the origin made every answer the stamps say it made, and no other");
}

/// A study that did not get the workload it asked for says so in every output, and exits 3:
/// a sweep run twice with one seed against a cache asks the second time for the "new"
/// objects the first time cached (as the same seed promises), and every row is marked in
/// the text, the JSON, the CSV, the workbook and the page, each a false hit in its counts.
#[test]
fn a_row_on_another_workload_is_marked_in_every_output() {
    if !require("unzip", std::process::Command::new("unzip").arg("-v").output().is_ok()) {
        return;
    }
    let cache = crate::util::origin(barrage_server::ServeConfig {
        cache_headers: Some(barrage_server::CacheStyle::Varnish),
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/obj/{{id}}", cache.url());
    let sweep = |outputs: &[&str]| {
        barrage()
            .current_dir(dir.path())
            .args(["sweep", "-c", "1,2", "--step", "1s", "--hit-ratio", "0", "--objects", "1000"])
            .args(outputs)
            .arg(&url)
            .output()
            .unwrap()
    };
    let first = sweep(&[]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let again = sweep(&["--csv-dir", "csv", "--xlsx", "t.xlsx", "--html", "t.html"]);
    assert_eq!(again.status.code(), Some(3), "{}", String::from_utf8_lossy(&again.stderr));
    let text = String::from_utf8_lossy(&again.stdout);
    // As many "new" objects the first time as a level sent then are hits: most of the
    // second time's, whose levels may send more in their second.
    assert!(text.contains("WORKLOAD: asked 0.0% hits, got ") && text.contains("false hits)"), "{text}");
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("2 of 2 runs are not a result") && err.contains("not the workload asked for"), "{err}");
    let json = sweep(&["--format", "json"]);
    assert_eq!(json.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    for row in v["levels"].as_array().unwrap() {
        assert!(row["verdict"].as_str().unwrap().starts_with("WORKLOAD: asked 0.0% hits"), "{row}");
        assert!(row["hits"]["false_hits"].as_u64().unwrap() > 0, "{row}");
    }
    let csv = std::fs::read_to_string(dir.path().join("csv/sweep.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains("hits_got_percent"), "{csv}");
    assert_eq!(csv.lines().filter(|l| l.contains("WORKLOAD: asked 0.0% hits")).count(), 2, "{csv}");
    let xlsx = std::process::Command::new("unzip").arg("-p").arg(dir.path().join("t.xlsx")).output().unwrap();
    assert!(String::from_utf8_lossy(&xlsx.stdout).contains("WORKLOAD: asked 0.0% hits"));
    let html = std::fs::read_to_string(dir.path().join("t.html")).unwrap();
    assert!(html.contains("WORKLOAD: asked 0.0% hits"));
}

/// A measure of its own length (`measure:2s`) goes round the objects its fill warmed for
/// that long: all hits, however many more requests than the fill it sends; its file and
/// row are named by the phase's name.
#[test]
fn a_measure_of_its_own_length_goes_round_what_the_fill_warmed() {
    let cache = crate::util::origin(barrage_server::ServeConfig {
        cache_headers: Some(barrage_server::CacheStyle::Varnish),
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = barrage()
        .args(["run", "-n", "50", "-c", "1", "--objects", "1000000", "--phases", "fill,measure:2s", "-o"])
        .arg(dir.path().join("run.brg"))
        .arg(format!("{}/obj/{{id}}", cache.url()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let measure = summarize(&[dir.path().join("run.measure.brg")]).unwrap();
    assert!(measure.requests.total > 500, "2 s of requests against 50 filled: {}", measure.requests.total);
    assert!((1.9..3.0).contains(&measure.duration.attack_s), "{:?}", measure.duration);
    let cache = measure.cache.unwrap();
    assert_eq!(cache.hit_ratio, 1.0, "every request one of the 50 warmed: {:?}", cache.statuses);
    let bad = barrage().args(["run", "--phases", "fill:1s,measure", "http://127.0.0.1:1/"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("only a later phase (a measure) takes one"));
}
