//! One interruption policy in every mode: SIGINT or SIGTERM in the middle of a study keeps
//! every finished run and the interrupted one's file, prints the table marked partial, and
//! exits 130 or 143. Each test waits until the named run has written an interval (so the
//! signal lands inside it, not between runs), then signals.

use crate::util::{barrage, origin};
use barrage_server::{LatencyDist, ServeConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// Starts `barrage ARGS`, waits (bounded) until `file` holds an interval, sends `signal`,
/// and returns what it printed.
fn interrupt_in(args: &[&str], file: &Path, signal: i32) -> Output {
    let child = barrage().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    while !has_interval(file) {
        assert!(Instant::now() < deadline, "{} never started", file.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    child.wait_with_output().unwrap()
}

fn has_interval(path: &Path) -> bool {
    barrage_metrics::file::ResultsReader::open(path).is_ok_and(|mut r| r.next_interval().is_some())
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    n.sort();
    n
}

fn summary(file: PathBuf) -> barrage_metrics::RunSummary {
    barrage_metrics::summary::summarize(&[file]).unwrap()
}

#[test]
fn sigterm_in_the_second_level_of_a_sweep_keeps_the_first_and_prints_a_partial_table() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let levels = dir.path().join("levels");
    let out = interrupt_in(
        &["sweep", &server.url(), "-c", "1,2,3", "--step", "3s", "--format", "json", "-o", levels.to_str().unwrap()],
        &levels.join("level-02-2workers.brg"),
        libc::SIGTERM,
    );
    assert_eq!(out.status.code(), Some(143), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!(v["partial"], true);
    let rows = v["levels"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "the finished level and the interrupted one: {v}");
    assert_eq!(rows[0]["labels"]["level"], "1 workers");
    assert_eq!(names(&levels), ["level-01-1workers.brg", "level-02-2workers.brg"]);
    assert!(!summary(levels.join("level-01-1workers.brg")).interrupted);
    assert!(summary(levels.join("level-02-2workers.brg")).interrupted, "the stopped level says so");
    assert!(String::from_utf8_lossy(&out.stderr).contains("PARTIAL"));
}

#[test]
fn sigint_in_the_third_probe_of_a_capacity_search_keeps_the_probes() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let probes = dir.path().join("probes");
    let out = interrupt_in(
        &[
            "capacity",
            &server.url(),
            "--slo",
            "p99<1s",
            "--step",
            "2s",
            "--start-rate",
            "50",
            "--format",
            "json",
            "-o",
            probes.to_str().unwrap(),
        ],
        &probes.join("probe-03-200rps.brg"),
        libc::SIGINT,
    );
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!(v["partial"], true);
    assert_eq!(v["probes"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["capacity_per_sec"], 100.0, "from the probes that finished: {v}");
    assert!(v["stopped"].as_str().unwrap().starts_with("interrupted"), "{v}");
    assert_eq!(names(&probes).len(), 3);
}

#[test]
fn sigterm_in_the_second_case_of_an_experiment_keeps_its_part_file_and_resume_finishes() {
    let server =
        origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(2))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("study.toml");
    let text = format!(
        "duration = \"3s\"\n[base]\nurl = \"{}/bytes/100\"\n[factors.workers]\none = {{ concurrency = 1 }}\ntwo = {{ concurrency = 2 }}\n",
        server.url()
    );
    std::fs::write(&file, text).unwrap();
    let results = dir.path().join("out");
    let r = results.to_str().unwrap();
    let out = interrupt_in(
        &["experiment", file.to_str().unwrap(), "-o", r, "--format", "json"],
        &results.join("TC1.r1.brg.part"),
        libc::SIGTERM,
    );
    assert_eq!(out.status.code(), Some(143), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!(v["partial"], true);
    assert_eq!(v["matrix"][0]["runs"], 1, "{v}");
    assert_eq!(v["matrix"][1]["runs"], 0, "the interrupted repeat is not a result: {v}");
    assert!(v["matrix"][1]["verdict"].as_str().unwrap().starts_with("FAILED: no run finished"), "{v}");
    let files = names(&results);
    assert!(files.contains(&"TC0.r1.brg".to_string()) && files.contains(&"TC1.r1.brg.part".to_string()), "{files:?}");
    assert!(!files.contains(&"TC1.r1.brg".to_string()));
    let again = barrage()
        .args(["experiment", file.to_str().unwrap(), "-o", r, "--resume", "--format", "json"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let v = json(&again);
    assert_eq!((v["partial"].as_bool(), v["matrix"][1]["runs"].as_u64()), (Some(false), Some(1)), "{v}");
}

#[test]
fn sigint_in_the_second_phase_keeps_the_first_and_reports_both() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("run.brg");
    let out = interrupt_in(
        &["run", "-c", "2", "-d", "3s", "--phases", "fill,measure", "-o", out_file.to_str().unwrap(), &server.url()],
        &dir.path().join("run.measure.brg"),
        libc::SIGINT,
    );
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("== phase 2/2: measure") && text.contains("PARTIAL"), "{text}");
    assert!(!summary(dir.path().join("run.fill.brg")).interrupted, "the fill phase ran in full");
    let measure = summary(dir.path().join("run.measure.brg"));
    assert!(measure.interrupted && measure.requests.total > 0, "the measure phase started, then stopped");
}
