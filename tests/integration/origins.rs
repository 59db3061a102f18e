//! Testbed origins with a shape (latency, capacity), changed mid-run by `testbed set`; the
//! shared store behind a balancer; URI hashing checked against the origins' own access
//! logs. Real servers, free ports, each test bounded.

use crate::albums::send;
use crate::testbed::Testbed;
use crate::util::barrage;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// `barrage run ARGS --format json`, successful, as JSON.
fn run_json(args: &[&str]) -> Value {
    let out = barrage().arg("run").args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "run {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Closed-loop throughput through haproxy over `n` origins of 4 requests at once, 20 ms each.
fn capacity_limited_throughput(n: usize) -> Option<f64> {
    let backends = n.to_string();
    let bed = Testbed::up("haproxy-lb", &["--backends", &backends, "--shape", "latency=20ms,capacity=4"])?;
    // Twice the 16 slots of 4 origins: every origin stays saturated; the rate is the
    // capacity's (4 / 20 ms = 200/s an origin), far below what the CPU allows.
    let s = run_json(&["-c", "32", "-d", "3s", &format!("{}obj/1", bed.url("haproxy-lb"))]);
    assert_eq!(s["requests"]["ok"], s["requests"]["total"], "{}", s["status_codes"]);
    Some(f(&s["throughput_per_sec"]))
}

#[test]
fn four_capacity_limited_origins_give_at_least_3_5_times_the_throughput_of_one() {
    let Some(one) = capacity_limited_throughput(1) else { return };
    let Some(four) = capacity_limited_throughput(4) else { return };
    eprintln!("capacity=4, latency=20ms: 1 origin {one:.0}/s, 4 origins {four:.0}/s ({:.2}×)", four / one);
    // One origin's capacity bounds it: not more than 200/s (and some of it).
    assert!(one <= 210.0 && one > 120.0, "1 origin: {one}/s");
    assert!(four >= 3.5 * one, "4 origins {four}/s, 1 origin {one}/s");
}

/// The lines of every origin's access log for paths starting with `prefix`, by origin,
/// once there are `want` of them in all (they are written within a second), or the deadline.
fn logged(bed: &Testbed, origins: usize, prefix: &str, want: usize) -> BTreeMap<String, Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut by_origin = BTreeMap::new();
        for i in 1..=origins {
            let name = format!("origin-{i}");
            let spec = &bed.state.server(&name).unwrap().spec;
            assert_eq!(spec.logs.len(), 1, "{name}: {:?}", spec.logs);
            let text = std::fs::read_to_string(&spec.logs[0]).unwrap_or_default();
            let paths: Vec<String> = text
                .lines()
                .filter_map(|l| l.split(' ').nth(2))
                .filter(|p| p.starts_with(prefix))
                .map(str::to_string)
                .collect();
            by_origin.insert(name, paths);
        }
        let total: usize = by_origin.values().map(Vec::len).sum();
        if total >= want || Instant::now() >= deadline {
            return by_origin;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// 40 keys, each GET three times through the balancer: each key's requests all reach one
/// origin (its access log says so), and the keys spread over all three.
fn uri_hash_sends_each_key_to_one_origin(topology: &str) {
    uri_hash_spreads_keys(topology, 3)
}

/// As [`uri_hash_sends_each_key_to_one_origin`], the keys on at least `spread` origins.
fn uri_hash_spreads_keys(topology: &str, spread: usize) {
    let Some(bed) = Testbed::up(topology, &["--backends", "3", "--balance", "uri-hash"]) else { return };
    let status = barrage().args(["testbed", "status", "--dir"]).arg(bed.dir()).output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("uri-hash over 3 origins"), "{status}");
    let front = bed.addr(topology);
    for round in 0..3 {
        for k in 0..40 {
            let answer = send(front, "GET", &format!("/obj/key-{k}"), None);
            assert_eq!(answer.status, 200, "key-{k}, round {round}");
        }
    }
    let by_origin = logged(&bed, 3, "/obj/key-", 120);
    let mut owners: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (origin, paths) in &by_origin {
        for p in paths {
            owners.entry(p.as_str()).or_default().insert(origin.as_str());
        }
    }
    assert_eq!(owners.len(), 40, "{by_origin:?}");
    for (key, origins) in &owners {
        assert_eq!(origins.len(), 1, "{key} reached {origins:?}");
    }
    let counts: Vec<usize> = by_origin.values().map(Vec::len).collect();
    assert_eq!(counts.iter().sum::<usize>(), 120, "{counts:?}");
    let used = counts.iter().filter(|&&c| c > 0).count();
    assert!(used >= spread, "the keys spread over {spread} origins or more: {counts:?}");
}

/// Caddy 2.6.2 hashes by highest random weight; its spread is uneven (caddy#5229, fixed
/// later), so only two of three origins are asked for.
#[test]
fn caddy_uri_hash_sends_each_key_to_one_origin_by_the_origins_logs() {
    uri_hash_spreads_keys("caddy", 2);
}

/// Weights 3,1: three requests to origin-1 for each to origin-2, at both balancers.
fn weights_split_requests(topology: &str) {
    let Some(bed) = Testbed::up(topology, &["--backends", "2", "--weights", "3,1"]) else { return };
    let s = run_json(&["-n", "400", "-c", "2", &bed.url(topology)]);
    assert_eq!(s["requests"]["ok"].as_u64(), Some(400));
    let backends = s["backends"].as_array().unwrap();
    let share =
        |name: &str| f(&backends.iter().find(|b| b["name"] == name).unwrap_or_else(|| panic!("{backends:?}"))["share"]);
    assert!((share("origin-1") - 0.75).abs() <= 0.05, "{backends:?}");
    assert!((share("origin-2") - 0.25).abs() <= 0.05, "{backends:?}");
}

#[test]
fn haproxy_weights_split_requests_three_to_one() {
    weights_split_requests("haproxy-lb");
}

#[test]
fn nginx_weights_split_requests_three_to_one() {
    weights_split_requests("nginx-lb");
}

#[test]
fn haproxy_uri_hash_sends_each_key_to_one_origin_by_the_origins_logs() {
    uri_hash_sends_each_key_to_one_origin("haproxy-lb");
}

#[test]
fn nginx_uri_hash_sends_each_key_to_one_origin_by_the_origins_logs() {
    uri_hash_sends_each_key_to_one_origin("nginx-lb");
}

/// Where the median of requests to a 100 ms origin falls: 100 ms of latency, plus the
/// little the path adds, within 10% (a machine compiling on both cores put the direct
/// median at 105.0 ms); a doubled or missing latency is far outside.
const P50_OF_100MS: std::ops::Range<f64> = 100.0..110.0;

/// The median of 20 requests that each reach the origin.
fn p50_of_misses(url: &str) -> f64 {
    let s = run_json(&["-n", "20", "-c", "2", "--objects", "20", url]);
    assert_eq!(s["requests"]["ok"].as_u64(), Some(20), "{}", s["status_codes"]);
    f(&s["latency"]["service"]["p50_us"]) / 1000.0
}

#[test]
fn a_100ms_origin_latency_shows_in_the_p50_direct_and_through_varnish_misses() {
    let Some(bed) = Testbed::up("direct", &["--backends", "1", "--shape", "latency=100ms"]) else { return };
    let p50 = p50_of_misses(&format!("{}obj/{{id}}", bed.url("origin-1")));
    eprintln!("latency=100ms: direct p50 {p50:.2} ms");
    assert!(P50_OF_100MS.contains(&p50), "direct p50 {p50} ms");
    drop(bed);
    let Some(bed) = Testbed::up("varnish", &["--shape", "latency=100ms"]) else { return };
    let before = bed.origin_requests("origin-1");
    let p50 = p50_of_misses(&format!("{}obj/{{id}}?miss", bed.url("varnish")));
    assert_eq!(bed.origin_requests("origin-1") - before, 20, "every request was a miss");
    eprintln!("latency=100ms: varnish miss p50 {p50:.2} ms");
    assert!(P50_OF_100MS.contains(&p50), "varnish miss p50 {p50} ms");
}

#[test]
fn testbed_set_changes_a_live_origins_latency_mid_run_without_an_error() {
    let Some(bed) = Testbed::up("direct", &["--backends", "1", "--shape", "latency=10ms"]) else { return };
    let exe = env!("CARGO_BIN_EXE_barrage");
    let dir = bed.dir().display().to_string();
    let set = format!("{exe} testbed set origin-1 latency=60ms --dir {dir}");
    let s = run_json(&["-c", "4", "-d", "5s", &format!("{}obj/1", bed.url("origin-1")), "--at", "2s", &set]);
    let events = s["events"].as_array().unwrap();
    assert_eq!(events[0]["exit"].as_i64(), Some(0), "{}", events[0]);
    assert!(events[0]["output"].as_str().unwrap().contains("origin-1: shape latency=60ms"), "{}", events[0]);
    assert_eq!(s["requests"]["ok"], s["requests"]["total"], "no error: {} {}", s["status_codes"], s["errors"]);
    assert_eq!(s["requests"]["connections"].as_u64(), Some(4), "the same connections throughout");
    let intervals = s["intervals"].as_array().unwrap();
    let p50 = |i: &Value| f(&i["p50_us"]) / 1000.0;
    let (before, after): (Vec<&Value>, Vec<&Value>) = intervals.iter().partition(|i| i["second"].as_u64().unwrap() < 2);
    assert!(before.iter().all(|i| p50(i) < 30.0), "before: {:?}", before.iter().map(|i| p50(i)).collect::<Vec<_>>());
    // The second the event ran in mixes both; the ones after are the new shape's.
    let later: Vec<f64> = after.iter().filter(|i| i["second"].as_u64().unwrap() >= 3).map(|i| p50(i)).collect();
    eprintln!("p50 by second, set at 2 s: {:?}", intervals.iter().map(p50).collect::<Vec<_>>());
    assert!(!later.is_empty() && later.iter().all(|&p| (60.0..75.0).contains(&p)), "after: {later:?}");
    let status = barrage().args(["testbed", "status", "--dir"]).arg(bed.dir()).output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.lines().any(|l| l.starts_with("origin-1") && l.ends_with("latency=60ms")), "{status}");
}

#[test]
fn a_body_put_through_haproxy_is_found_on_every_origin() {
    let Some(bed) = Testbed::up("haproxy-lb", &["--backends", "3"]) else { return };
    let front = bed.addr("haproxy-lb");
    let put = {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(front).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let body = "the value of k1";
        write!(
            s,
            "PUT /kv/k1 HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        reply
    };
    assert!(put.starts_with("HTTP/1.1 201"), "{put}");
    let mut served_by = BTreeSet::new();
    for _ in 0..9 {
        let got = send(front, "GET", "/kv/k1", None);
        assert_eq!((got.status, got.text()), (200, "the value of k1".to_string()), "{}", got.head);
        served_by.insert(got.header("x-served-by").unwrap());
    }
    assert_eq!(served_by.len(), 3, "round robin reached every origin: {served_by:?}");
    let store = barrage_testbed::store_dir(bed.dir());
    assert_eq!(
        std::fs::metadata(&store).map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777).unwrap(),
        0o700
    );
}

/// Two cases that differ only in `testbed-shape` run against testbeds of their own (each
/// in a directory named by a digest of its shape) and show their origins' latency.
#[test]
fn experiment_cases_with_other_shapes_get_testbeds_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shapes.toml");
    let text = r#"duration = "1s"

[base]
concurrency = 2
url = "{origin-1}/obj/1"
testbed = "direct"
testbed-backends = 1

[factors.origin]
fast = { testbed-shape = "latency=5ms" }
slow = { testbed-shape = ["latency=5ms", "origin-1:latency=50ms"] }
"#;
    std::fs::write(&file, text).unwrap();
    let results = dir.path().join("results");
    let json = crate::util::experiment_ok(&file, &results);
    let matrix = json["matrix"].as_array().unwrap();
    let p50 = |row: &Value| f(&row["p50_us"]) / 1000.0;
    let (fast, slow) = (p50(&matrix[0]), p50(&matrix[1]));
    assert!((5.0..15.0).contains(&fast) && (50.0..60.0).contains(&slow), "fast {fast} ms, slow {slow} ms");
    let manifest = std::fs::read_to_string(results.join("experiment.json")).unwrap();
    assert!(manifest.contains("shape latency=5ms origin-1:latency=50ms"), "{manifest}");
}
