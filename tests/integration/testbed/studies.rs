//! Studies run against a testbed: `testbed bench` over every front, experiment cases that
//! bring a testbed up, and the album study through a balancer whose origins share one
//! album directory.

use super::{f, programs, run_json, varnish_counters, Testbed};
use crate::util::{barrage, require};
use barrage_testbed::program_path;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;

#[test]
fn bench_compares_every_front_in_one_table_and_tears_down() {
    for program in programs("all") {
        if !require(program, program_path(program).is_some()) {
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("bed");
    let out = barrage()
        .args(["testbed", "bench", "-d", "1s", "-c", "2", "--no-tls", "--dir"])
        .arg(&state_dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{text}", String::from_utf8_lossy(&out.stderr));
    let row = |label: &str| -> Vec<String> {
        let line =
            text.lines().find(|l| l.starts_with(&format!("{label} "))).unwrap_or_else(|| panic!("{label}: {text}"));
        line.split_whitespace().skip(label.split_whitespace().count()).map(str::to_string).collect()
    };
    for label in ["direct", "nginx-lb", "haproxy-lb", "varnish hits", "varnish misses", "squid hits", "squid misses"] {
        let cells = row(label);
        assert_eq!(cells[1], "100.00%", "{label} succeeded: {text}");
    }
    // Hits and misses as asked: one miss at the start at most, then hits; never a hit for
    // the misses.
    let percent = |cell: &str| cell.trim_end_matches('%').parse::<f64>().unwrap();
    assert!(percent(&row("varnish hits")[7]) >= 99.0, "{text}");
    assert!(percent(&row("squid hits")[7]) >= 99.0, "{text}");
    assert_eq!(row("varnish misses")[7], "0.0%", "{text}");
    assert_eq!(row("squid misses")[7], "0.0%", "{text}");
    assert_eq!(row("direct")[7], "-", "no cache in front of the origin");
    assert!(!state_dir.exists(), "the testbed went down");
}

#[test]
fn an_experiment_case_runs_against_a_testbed_it_brings_up() {
    if !require("varnishd", program_path("varnishd").is_some()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cache.toml");
    let text = r#"duration = "1s"
compare = ["server"]

[base]
concurrency = 2
testbed = "varnish"

[factors.server]
backend = { url = "{origin-1}/bytes/1k" }
cache = { url = "{varnish}/bytes/1k" }
"#;
    std::fs::write(&file, text).unwrap();
    let results = dir.path().join("results");
    let out =
        barrage().arg("experiment").arg(&file).arg("-o").arg(&results).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let matrix = json["matrix"].as_array().unwrap();
    assert!(matrix[0]["hit_ratio"].is_null(), "straight to the origin: {}", matrix[0]);
    assert!(f(&matrix[1]["hit_ratio"]) > 0.9, "through varnish: {}", matrix[1]);
    // Brought up once for both cases, watched, and taken down at the end.
    assert!(!results.join("testbed-varnish").exists(), "the testbed went down");
    let run = results.join("TC1.r1.brg");
    let report = barrage().arg("report").arg(&run).args(["--format", "json"]).output().unwrap();
    let s: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert!(s["processes"].as_array().unwrap().iter().any(|p| p["name"] == "varnish"), "{}", s["processes"]);
}

#[test]
fn a_cache_miss_case_misses_in_varnish_after_its_warmup_and_in_every_repeat() {
    if !require("varnishstat", program_path("varnishstat").is_some()) {
        return;
    }
    let Some(bed) = Testbed::up("varnish", &[]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("miss.toml");
    // Two repeats of a case that asks for new objects only, each after a warm-up: if they
    // drew one request stream, a repeat would ask varnish for what a warm-up or the other
    // repeat cached.
    let text = format!(
        r#"duration = "1s"
warmup = "1s"
repeats = 2

[base]
url = "{}obj/{{id}}"
rate = 300
objects = 1000000000

[factors.server]
cache-miss = {{ hit-ratio = 0 }}
"#,
        bed.url("varnish")
    );
    std::fs::write(&file, text).unwrap();
    let (sent_before, hits_before, misses_before) = varnish_counters(&bed);
    let origin_before = bed.origin_requests("origin-1");
    let out = barrage()
        .arg("experiment")
        .arg(&file)
        .arg("-o")
        .arg(dir.path().join("results"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (sent, hits, misses) = varnish_counters(&bed);
    let (sent, hits, misses) = (sent - sent_before, hits - hits_before, misses - misses_before);
    let fetched = bed.origin_requests("origin-1") - origin_before;
    let case = &json["matrix"][0];
    let measured = case["requests"].as_u64().unwrap();
    eprintln!("varnish: {sent} requests, {hits} hits, {misses} misses; origin: {fetched}; barrage: {measured} measured, hit ratio {}", case["hit_ratio"]);
    // Ground truth from varnish and the origin: every request of the case, its warm-ups'
    // included, was a miss that reached the origin.
    assert!(
        sent >= measured + 2 * 250 && sent <= measured + 2 * 350,
        "a warm-up of about 300 before each repeat, besides the {measured} measured: {sent}"
    );
    assert!(hits * 100 <= sent, "varnish served {hits} of {sent} requests from its cache ({misses} misses)");
    assert!(misses * 100 >= 99 * sent, "varnish missed only {misses} of {sent}");
    assert!(fetched * 100 >= 99 * sent, "the origin served {fetched} of the {sent} requests");
    // And barrage's figure agrees: about no hits in either repeat.
    assert_eq!(case["runs"], 2, "{case}");
    assert!(f(&case["hit_ratio"]) <= 0.01, "{case}");
}

/// The study behind a balancer: each album POSTed through it is found by a GET through it,
/// whichever origin takes each (round robin sends the GET to the other one), because all
/// origins of a testbed share one album directory in its state directory. The origins'
/// counts add up to what was sent, also under load from `barrage run --form`.
fn albums_are_found_through(topology: &str) {
    use crate::albums::{album_counts, post_album, send, IMAGE_LEN, PROFILE};
    let Some(bed) = Testbed::up(topology, &[]) else { return };
    let front = bed.state.server(topology).unwrap().spec.listen;
    let mut across = 0;
    for i in 0..20 {
        let profile = format!(r#"{{"artist": "Rock Pistols", "title": "{topology} {i}", "year": "1977"}}"#);
        let (id, posted) = post_album(front, &profile);
        let got = send(front, "GET", &format!("/albums/{id}"), None);
        assert_eq!((got.status, got.text()), (200, profile), "album {i}");
        across += usize::from(got.header("x-served-by") != posted.header("x-served-by"));
    }
    assert!(across > 0, "no GET went to another origin than its POST");
    let image = bed.dir().join("nmtb.png");
    std::fs::write(&image, crate::albums::image(IMAGE_LEN)).unwrap();
    let s = run_json(&[
        "-X",
        "POST",
        "-n",
        "50",
        "-c",
        "4",
        "--form",
        &format!("profile={PROFILE};type=application/json"),
        "--form",
        &format!("image=@{}", image.display()),
        &format!("{}albums", bed.url(topology)),
    ]);
    assert_eq!(s["status_codes"]["200"].as_u64(), Some(50), "{}", s["status_codes"]);
    let origins = ["origin-1", "origin-2"].map(|name| album_counts(bed.state.server(name).unwrap().spec.listen));
    let sum = |key: &str| origins.iter().map(|c| c[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("created"), sum("read"), sum("not_found")), (70, 20, 0), "{origins:?}");
    assert!(origins.iter().all(|c| c["created"].as_u64().unwrap() > 0), "both origins stored albums: {origins:?}");
    // One directory inside the state directory (`down` removes it), private to the user.
    let albums = barrage_testbed::album_dir(bed.dir());
    assert_eq!(std::fs::read_dir(&albums).unwrap().count(), 70);
    assert_eq!(std::fs::metadata(&albums).unwrap().permissions().mode() & 0o777, 0o700);
}

#[test]
fn albums_posted_through_haproxy_are_found_whichever_origin_answers() {
    albums_are_found_through("haproxy-lb");
}

#[test]
fn albums_posted_through_nginx_are_found_whichever_origin_answers() {
    albums_are_found_through("nginx-lb");
}

/// The album study's flow through haproxy and two origins at 10 workers: every GET of an
/// album the flow just posted finds it (the check compares its content) though round robin
/// sends many GETs to the other origin, and the origins' own counts add up to barrage's.
#[test]
fn the_album_flow_succeeds_through_haproxy_whichever_origin_answers() {
    use crate::albums::album_counts;
    use crate::flows::{album_scenario, key, run_scenario};
    let Some(bed) = Testbed::up("haproxy-lb", &["--backends", "2"]) else { return };
    let front = bed.state.server("haproxy-lb").unwrap().spec.listen;
    let image = bed.dir().join("nmtb.png");
    std::fs::write(&image, crate::albums::image(crate::albums::IMAGE_LEN)).unwrap();
    let work = tempfile::tempdir().unwrap();
    let log = work.path().join("log.csv");
    let scenario = album_scenario(&front.to_string(), &image, "$.albumID", 200);
    let (_, total) = run_scenario(work.path(), &scenario, &["-c", "10", "-d", "2s", "--log", log.to_str().unwrap()]);
    let flows = key(&total.flows, "album");
    let (post, get) = (key(&total.names, "post-album"), key(&total.names, "get-album"));
    assert!(flows.requests >= 20, "only {} flows", flows.requests);
    assert_eq!((flows.failed, get.failed), (0, 0));
    let origins = ["origin-1", "origin-2"].map(|name| album_counts(bed.state.server(name).unwrap().spec.listen));
    let sum = |k: &str| origins.iter().map(|c| c[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("created"), sum("read"), sum("not_found")), (post.requests, get.requests, 0), "{origins:?}");
    assert!(origins.iter().all(|c| c["read"].as_u64().unwrap() > 0), "both origins answered GETs: {origins:?}");
    // Flows whose GET reached another origin than their POST: the shared store at work.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    let columns: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| columns.iter().position(|c| *c == name).unwrap();
    let (flow, step, backend) = (col("flow_id"), col("step_index"), col("backend"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let backend_of = |id: &str, s: &str| rows.iter().find(|r| r[flow] == id && r[step] == s).map(|r| r[backend]);
    let across =
        rows.iter().filter(|r| r[step] == "1").filter(|r| backend_of(r[flow], "0") != Some(r[backend])).count();
    assert!(across > 0, "no GET went to another origin than its POST");
}
