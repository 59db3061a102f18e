//! The testbed's fronts as a user checks them against the servers' own ground truth:
//! `testbed status --format json` and every server's log, HTTP and HTTPS against one
//! varnish (hitch in front), purges of each cache (varnishstat, squid's access log, nginx's
//! X-Cache-Status), and the key-value servers' memory settings.

use crate::testbed::{f, run_json, varnish_counters, Testbed};
use crate::util::{barrage, raw_get, require};
use barrage_testbed::program_path;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a log writer (varnishncsa, squid at the end of a transaction) may take.
const LOG_DEADLINE: Duration = Duration::from_secs(10);

/// Polls `done` until it holds or `bound` passes; whether it held.
fn eventually(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Lines of `path` containing `needle`, once at least `n` are there (bounded wait).
fn lines_with(path: &Path, needle: &str, n: usize) -> Vec<String> {
    let matching = || read(path).lines().filter(|l| l.contains(needle)).map(str::to_string).collect::<Vec<_>>();
    eventually(LOG_DEADLINE, || matching().len() >= n);
    matching()
}

fn status_json(bed: &Testbed) -> Value {
    let out = bed.command(&["status", "--format", "json"]);
    assert!(out.status.success(), "status: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn validator() -> jsonschema::Validator {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/testbed-status.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

/// The schema names every topology and every kind of server there is.
#[test]
fn the_status_schema_knows_every_topology_and_kind() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/testbed-status.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let names = |v: &Value| v.as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(names(&schema["properties"]["topology"]["enum"]), barrage_testbed::Topology::NAMES);
    use barrage_testbed::Kind::*;
    let kinds = [Origin, Nginx, Haproxy, Varnish, Squid, Redis, Memcached, Caddy, NginxCache, Hitch].map(|k| k.name());
    assert_eq!(names(&schema["$defs"]["server"]["properties"]["kind"]["enum"]), kinds);
}

fn assert_valid(v: &jsonschema::Validator, instance: &Value) {
    let errors: Vec<String> = v.iter_errors(instance).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{instance:#}");
}

/// `all --tls`: three requests through every URL of every front, then the status lists
/// every server, validates against its schema, and each server's logs exist and show the
/// requests as the server saw them.
#[test]
fn status_json_validates_and_every_front_logs_the_requests_it_served() {
    if !require("hitch", program_path("hitch").is_some()) {
        return;
    }
    let Some(bed) = Testbed::up("all", &["--tls"]) else { return };
    let ca = bed.state.ca.clone().expect("a CA with --tls").display().to_string();
    for s in bed.state.servers.iter().filter(|s| s.spec.kind != barrage_testbed::Kind::Origin) {
        for url in s.spec.urls() {
            let url = format!("{url}bytes/100?logged");
            let summary = run_json(&["-n", "3", "-c", "1", "--cacert", &ca, &url]);
            assert_eq!(summary["requests"]["ok"].as_u64(), Some(3), "{url}: {}", summary["requests"]);
        }
    }
    let status = status_json(&bed);
    assert_valid(&validator(), &status);
    assert_eq!(status["ca"].as_str(), Some(ca.as_str()));
    let servers = status["servers"].as_array().unwrap();
    let names: Vec<&str> = servers.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["origin-1", "origin-2", "nginx-lb", "haproxy-lb", "varnish", "varnish-tls", "squid"],
        "every server"
    );
    for s in servers {
        let name = s["name"].as_str().unwrap();
        let state = bed.state.server(name).unwrap();
        assert_eq!(s["pid"].as_u64(), state.pid.map(u64::from), "{name}");
        assert_eq!((s["status"].as_str(), &s["exit"]), (Some("running"), &Value::Null), "{name}");
        assert!(Path::new(s["dir"].as_str().unwrap()).is_dir(), "{name}: {s}");
        assert!(Path::new(s["output"].as_str().unwrap()).is_file(), "{name}: {s}");
        let urls: Vec<&str> = s["urls"].as_array().unwrap().iter().map(|u| u.as_str().unwrap()).collect();
        assert_eq!(urls, state.spec.urls(), "{name}");
        let logs = s["logs"].as_array().unwrap();
        if s["kind"] != "origin" {
            assert!(!logs.is_empty(), "{name} has a log of its own");
        }
        for log in logs {
            let path = Path::new(log.as_str().unwrap());
            assert!(eventually(LOG_DEADLINE, || read(path).lines().count() > 0), "{name}: {} is empty", path.display());
        }
    }
    // Each log as its server writes it, the requests in it (the fronts' readiness checks
    // ask for `/`, not for `/bytes/100?logged`).
    let log = |name: &str| bed.state.server(name).unwrap().spec.logs[0].clone();
    let nginx = lines_with(&log("nginx-lb"), "/bytes/100?logged", 6);
    assert_eq!(nginx.len(), 6, "HTTP and HTTPS, three each: {nginx:?}");
    assert!(nginx.iter().all(|l| l.contains(" 200 ") && l.contains("upstream=127.0.0.1:")), "{nginx:?}");
    let haproxy = lines_with(&log("haproxy-lb"), "/bytes/100?logged", 6);
    assert_eq!(haproxy.len(), 6, "{haproxy:?}");
    assert!(haproxy.iter().all(|l| l.contains(" origins/origin-") && l.contains(" 200 ")), "{haproxy:?}");
    let varnish = lines_with(&log("varnish"), "/bytes/100?logged", 6);
    assert_eq!(varnish.len(), 6, "{varnish:?}");
    let listeners = |l: &str| varnish.iter().filter(|v| v.ends_with(l)).count();
    assert_eq!((listeners(" http"), listeners(" tls")), (3, 3), "HTTPS came through hitch: {varnish:?}");
    let hitch = read(&log("varnish-tls"));
    assert!(hitch.contains("ssl end handshake") && hitch.contains("backend connected"), "{hitch}");
    let squid = lines_with(&log("squid"), "/bytes/100?logged", 6);
    assert_eq!(squid.len(), 6, "{squid:?}");
    assert!(
        squid.iter().any(|l| l.contains("TCP_MISS/200")) && squid.iter().any(|l| l.contains("HIT/200")),
        "{squid:?}"
    );
}

/// One experiment, one varnish: an HTTP case, an HTTPS case through hitch and a third
/// case after a pause, during which varnish's own counters and log are read. Varnish
/// counts both cases' requests, the HTTPS one arrived on hitch's listener, and it was all
/// hits: the two protocols share the cache.
#[test]
fn an_experiment_runs_http_and_https_against_one_varnish_through_hitch() {
    for program in ["varnishd", "varnishstat", "hitch"] {
        if !require(program, program_path(program).is_some()) {
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("protocols.toml");
    let text = r#"pause = "5s"

[base]
testbed = "varnish"
testbed-tls = true
requests = 40
concurrency = 1

[factors.protocol]
http = { url = "{varnish}/bytes/1k?one-cache" }
https = { url = "{varnish:https}/bytes/1k?one-cache" }
origin = { url = "{origin-1}/bytes/1k" }
"#;
    std::fs::write(&file, text).unwrap();
    let results = dir.path().join("results");
    let child = barrage()
        .arg("experiment")
        .arg(&file)
        .arg("-o")
        .arg(&results)
        .args(["--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // In the pause after the HTTPS case (TC1), the testbed is still up.
    let https_done = eventually(Duration::from_secs(90), || results.join("TC1.r1.brg").is_file());
    let varnish = results.join("testbed-varnish-tls").join("varnish");
    let counters = https_done.then(|| {
        let out = std::process::Command::new("varnishstat").arg("-n").arg(&varnish).arg("-j").output().unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    });
    let log = lines_with(&varnish.join("access.log"), "/bytes/1k?one-cache", 80);
    let hitch = read(&results.join("testbed-varnish-tls").join("varnish-tls").join("hitch.log"));
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let counters = counters.expect("the HTTPS case finished");
    let counters = counters.get("counters").unwrap_or(&counters);
    let n = |name: &str| counters[name]["value"].as_u64().unwrap();
    assert!(n("MAIN.client_req") >= 80, "both cases' requests: {}", n("MAIN.client_req"));
    let http: Vec<&String> = log.iter().filter(|l| l.ends_with(" http")).collect();
    let https: Vec<&String> = log.iter().filter(|l| l.ends_with(" tls")).collect();
    assert_eq!((http.len(), https.len()), (40, 40), "{log:#?}");
    assert_eq!(http.iter().filter(|l| l.contains(" miss ")).count(), 1, "{http:#?}");
    assert!(https.iter().all(|l| l.contains(" hit ")), "the HTTPS case hit what HTTP cached: {https:#?}");
    assert!(n("MAIN.cache_hit") >= 79, "{}", n("MAIN.cache_hit"));
    assert!(hitch.matches("backend connected").count() >= 1, "{hitch}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let matrix = json["matrix"].as_array().unwrap();
    assert!((f(&matrix[1]["hit_ratio"]) - 1.0).abs() < 1e-9, "{}", matrix[1]);
}

/// varnish: a miss then hits, a purge, and the same URL misses once again, by varnish's
/// own counters.
#[test]
fn a_purge_empties_varnish() {
    if !require("varnishstat", program_path("varnishstat").is_some()) {
        return;
    }
    let Some(bed) = Testbed::up("varnish", &[]) else { return };
    let url = format!("{}bytes/1k?purged", bed.url("varnish"));
    let (_, h0, m0) = varnish_counters(&bed);
    run_json(&["-n", "10", "-c", "1", &url]);
    let (_, h1, m1) = varnish_counters(&bed);
    assert_eq!((h1 - h0, m1 - m0), (9, 1), "a miss, then hits");
    let out = bed.command(&["purge", "varnish"]);
    assert!(out.status.success(), "purge: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "purged varnish");
    run_json(&["-n", "10", "-c", "1", &url]);
    let (_, h2, m2) = varnish_counters(&bed);
    assert_eq!((h2 - h1, m2 - m1), (9, 1), "after the purge, a miss again");
    // Restarted, it logs from its first request on (varnishncsa attached before `start`
    // returned).
    for verb in ["stop", "start"] {
        let out = bed.command(&[verb, "varnish"]);
        assert!(out.status.success(), "{verb}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let (head, _) = raw_get(bed.addr("varnish"), "/bytes/1k?after-restart", "");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let log = bed.state.server("varnish").unwrap().spec.logs[0].clone();
    assert_eq!(lines_with(&log, "?after-restart", 1).len(), 1, "{}", read(&log));
    // Only caches purge.
    let out = bed.command(&["purge", "origin-1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot purge origin-1: it keeps no cache"));
}

/// squid: its access log shows a miss then hits, and after the purge a miss again.
#[test]
fn a_purge_empties_squid() {
    let Some(bed) = Testbed::up("squid", &[]) else { return };
    let url = format!("{}bytes/1k?purged", bed.url("squid"));
    let log = bed.state.server("squid").unwrap().spec.logs[0].clone();
    run_json(&["-n", "5", "-c", "1", &url]);
    lines_with(&log, "/bytes/1k?purged", 5);
    let out = bed.command(&["purge"]);
    assert!(out.status.success(), "purge: {}", String::from_utf8_lossy(&out.stderr));
    run_json(&["-n", "5", "-c", "1", &url]);
    let lines = lines_with(&log, "/bytes/1k?purged", 10);
    let codes: Vec<&str> = lines.iter().map(|l| l.split_whitespace().nth(3).unwrap()).collect();
    let expected = ["TCP_MISS/200", "TCP_MEM_HIT/200", "TCP_MEM_HIT/200", "TCP_MEM_HIT/200", "TCP_MEM_HIT/200"];
    assert_eq!(codes, [expected, expected].concat(), "{lines:#?}");
    // Its cache manager answers this machine.
    let (head, body) = raw_get(bed.addr("squid"), "/squid-internal-mgr/info", "");
    assert!(
        head.starts_with("HTTP/1.1 200") && String::from_utf8_lossy(&body).contains("Squid Object Cache"),
        "{head}"
    );
}

/// X-Cache-Status of a GET to nginx-cache.
fn nginx_cache_status(addr: SocketAddr, path: &str) -> String {
    let (head, _) = raw_get(addr, path, "");
    head.lines()
        .find_map(|l| l.strip_prefix("X-Cache-Status: ").or_else(|| l.strip_prefix("x-cache-status: ")))
        .unwrap_or_else(|| panic!("no X-Cache-Status: {head}"))
        .to_string()
}

/// nginx-cache: caches what the origin's Cache-Control allows, says so in X-Cache-Status
/// and in its access log, and misses again once purged.
#[test]
fn nginx_cache_serves_hits_and_a_purge_empties_it() {
    let Some(bed) = Testbed::up("nginx-cache", &[]) else { return };
    let addr = bed.addr("nginx-cache");
    let path = "/bytes/1k?nginx-cached";
    let before = bed.origin_requests("origin-1");
    let statuses: Vec<String> = (0..3).map(|_| nginx_cache_status(addr, path)).collect();
    assert_eq!(statuses, ["MISS", "HIT", "HIT"]);
    assert_eq!(bed.origin_requests("origin-1") - before, 1, "the origin served the miss only");
    let cache = bed.state.server("nginx-cache").unwrap().spec.dir.join("cache");
    assert!(std::fs::read_dir(&cache).unwrap().next().is_some(), "cache files in {}", cache.display());
    let out = bed.command(&["purge", "nginx-cache"]);
    assert!(out.status.success(), "purge: {}", String::from_utf8_lossy(&out.stderr));
    let statuses: Vec<String> = (0..2).map(|_| nginx_cache_status(addr, path)).collect();
    assert_eq!(statuses, ["MISS", "HIT"], "after the purge");
    let log = bed.state.server("nginx-cache").unwrap().spec.logs[0].clone();
    let lines = lines_with(&log, path, 5);
    let cached: Vec<&str> =
        lines.iter().map(|l| l.rsplit("cache=").next().unwrap().split(' ').next().unwrap()).collect();
    assert_eq!(cached, ["MISS", "HIT", "HIT", "MISS", "HIT"], "{lines:#?}");
}

/// `testbed-purge = true`: each repeat starts on an empty cache, so both repeats of ten
/// requests have one miss (without the purge the second would have none).
#[test]
fn an_experiment_purges_the_cache_before_each_repeat_when_asked() {
    if !require("nginx", program_path("nginx").is_some()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("purge.toml");
    let text = r#"repeats = 2

[base]
testbed = "nginx-cache"
testbed-purge = true
requests = 10
concurrency = 1

[factors.cache]
purged = { url = "{nginx-cache}/bytes/1k?each-repeat" }
"#;
    std::fs::write(&file, text).unwrap();
    let results = dir.path().join("results");
    crate::util::experiment_ok(&file, &results);
    for repeat in ["TC0.r1.brg", "TC0.r2.brg"] {
        let report = barrage().arg("report").arg(results.join(repeat)).args(["--format", "json"]).output().unwrap();
        let s: Value = serde_json::from_slice(&report.stdout).unwrap();
        let statuses = &s["cache"]["statuses"];
        assert_eq!((statuses["miss"].as_u64(), statuses["hit"].as_u64()), (Some(1), Some(9)), "{repeat}: {statuses}");
    }
    // A testbed without a cache cannot purge: said before anything starts.
    std::fs::write(&file, text.replace("nginx-cache", "nginx-lb")).unwrap();
    let out = barrage().arg("experiment").arg(&file).arg("-o").arg(dir.path().join("r2")).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no cache to purge"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One RESP command on `conn`; the reply's lines up to the first that is not an array
/// header or a bulk length (enough for simple strings, numbers and CONFIG GET's pair).
fn redis(conn: &mut BufReader<TcpStream>, args: &[&str]) -> Vec<String> {
    let mut cmd = format!("*{}\r\n", args.len());
    for a in args {
        cmd += &format!("${}\r\n{a}\r\n", a.len());
    }
    conn.get_mut().write_all(cmd.as_bytes()).unwrap();
    let mut lines = Vec::new();
    let mut pending = 1;
    while pending > 0 {
        let mut line = String::new();
        conn.read_line(&mut line).unwrap();
        let line = line.trim_end().to_string();
        match line.chars().next() {
            Some('*') => pending += line[1..].parse::<i64>().unwrap(),
            Some('$') => {
                let len: usize = line[1..].parse().unwrap();
                let mut body = vec![0u8; len + 2];
                conn.read_exact(&mut body).unwrap();
                lines.push(String::from_utf8_lossy(&body[..len]).into_owned());
            }
            _ => lines.push(line),
        }
        pending -= 1;
    }
    lines
}

/// `--memory 2mb --eviction allkeys-lru`: redis-server says so, and writing 4 MB into it
/// evicts keys instead of refusing the writes. Its log is in the status.
#[test]
fn redis_takes_maxmemory_and_an_eviction_policy() {
    let Some(bed) = Testbed::up("redis", &["--memory", "2mb", "--eviction", "allkeys-lru"]) else { return };
    let conn = TcpStream::connect(bed.addr("redis-1")).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut conn = BufReader::new(conn);
    assert_eq!(redis(&mut conn, &["CONFIG", "GET", "maxmemory"]), ["maxmemory", "2097152"]);
    assert_eq!(redis(&mut conn, &["CONFIG", "GET", "maxmemory-policy"]), ["maxmemory-policy", "allkeys-lru"]);
    let value = "v".repeat(1000);
    for i in 0..4000 {
        assert_eq!(redis(&mut conn, &["SET", &format!("key:{i}"), &value]), ["+OK"], "key {i}");
    }
    let info = redis(&mut conn, &["INFO", "stats"]).concat();
    let evicted: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("evicted_keys:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{info}"));
    assert!(evicted > 0, "4 MB written into 2 MB: {info}");
    let keys: u64 = redis(&mut conn, &["DBSIZE"])[0].trim_start_matches(':').parse().unwrap();
    assert!(keys > 0 && keys < 4000, "{keys} keys kept");
    // A purge flushes them.
    let out = bed.command(&["purge", "redis-1"]);
    assert!(out.status.success(), "purge: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(redis(&mut conn, &["DBSIZE"]), [":0"]);
    let status = status_json(&bed);
    assert_valid(&validator(), &status);
    let logs = status["servers"][0]["logs"].as_array().unwrap();
    let log = Path::new(logs[0].as_str().unwrap());
    assert!(log.ends_with("redis-1/redis.log") && read(log).contains("Ready to accept connections"), "{}", read(log));
    // A policy for a testbed without redis-server is refused before anything starts.
    let out = barrage()
        .args(["testbed", "up", "varnish", "--eviction", "allkeys-lru", "--dir"])
        .arg(bed.dir().join("x"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("maxmemory-policy"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--memory 8m`: memcached's `stats settings` says 8 MB.
#[test]
fn memcached_takes_its_memory_size() {
    let Some(bed) = Testbed::up("memcached", &["--memory", "8m"]) else { return };
    let mut conn = TcpStream::connect(bed.addr("memcached-1")).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(b"stats settings\r\n").unwrap();
    let mut reader = BufReader::new(conn);
    let mut settings = String::new();
    while !settings.ends_with("END\r\n") {
        assert!(reader.read_line(&mut settings).unwrap() > 0, "{settings}");
    }
    assert!(settings.lines().any(|l| l == "STAT maxbytes 8388608"), "{settings}");
    // A purge flushes its items.
    let get = |reader: &mut BufReader<TcpStream>| {
        reader.get_mut().write_all(b"get k\r\n").unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.starts_with("VALUE") {
            for _ in 0..2 {
                reader.read_line(&mut line).unwrap();
            }
        }
        line
    };
    reader.get_mut().write_all(b"set k 0 0 1\r\nx\r\n").unwrap();
    let mut stored = String::new();
    reader.read_line(&mut stored).unwrap();
    assert_eq!(stored, "STORED\r\n");
    assert!(get(&mut reader).starts_with("VALUE k 0 1"));
    let out = bed.command(&["purge"]);
    assert!(out.status.success(), "purge: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(get(&mut reader), "END\r\n", "flushed");
}

/// `examples/cache/https.toml` as shipped (cut to one second a case): HTTP and HTTPS,
/// directly and through one Varnish; the HTTPS cache row hits what the HTTP one stored.
#[test]
fn the_https_cache_example_runs_as_shipped() {
    for program in ["varnishd", "hitch"] {
        if !require(program, program_path(program).is_some()) {
            return;
        }
    }
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cache/https.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("https.toml");
    std::fs::write(&file, text.replace("duration = \"2s\"", "duration = \"1s\"")).unwrap();
    let json = crate::util::experiment_ok(&file, &dir.path().join("results"));
    let rows = json["matrix"].as_array().unwrap();
    let labels: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["labels"]["protocol"].as_str().unwrap(), r["labels"]["server"].as_str().unwrap()))
        .collect();
    assert_eq!(labels, [("http", "backend"), ("http", "cache"), ("https", "backend"), ("https", "cache")]);
    for row in rows {
        assert_eq!(row["verdict"], "ok", "{row}");
    }
    assert!(rows[0]["hit_ratio"].is_null() && rows[2]["hit_ratio"].is_null(), "the origin directly");
    assert!(f(&rows[1]["hit_ratio"]) > 0.99 && f(&rows[3]["hit_ratio"]) == 1.0, "{} {}", rows[1], rows[3]);
}
