//! Results files: merged exactly, readable after a kill, and readable by HdrHistogram's tools.

use crate::util::{barrage, http_get, open, origin, plan, require, run_in};
use barrage_metrics::file::ResultsReader;
use barrage_metrics::summary::WarningKind;
use barrage_metrics::summary::{summarize, LatencyStats};
use barrage_metrics::Recorder;
use barrage_server::ServeConfig;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Everything in a file, summed into one recorder.
fn total_of(path: &Path) -> Recorder {
    let mut r = ResultsReader::open(path).unwrap();
    let mut total = Recorder::new();
    while let Some(i) = r.next_interval() {
        total.add(&i.recorder);
    }
    total
}

#[test]
fn merge_adds_counts_and_histograms_exactly() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/bytes/256", o.url());
    // Two "machines" running side by side, as a distributed run would.
    let runs: Vec<(PathBuf, _)> = std::thread::scope(|s| {
        let handles: Vec<_> = ["a", "b"]
            .map(|name| {
                let (dir, url) = (dir.path(), url.clone());
                s.spawn(move || {
                    let mut p = plan(&url, open(500.0));
                    p.duration = Some(Duration::from_secs(2));
                    run_in(dir, name, p)
                })
            })
            .into_iter()
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let paths: Vec<PathBuf> = runs.iter().map(|r| r.0.clone()).collect();
    // Two runs of one process, started in the same microsecond or not, each drew its id:
    // merged as two runs, not refused as one run's copies.
    let merged = barrage_metrics::summary::summarize(&paths).unwrap();
    assert_eq!(merged.requests.total, runs[0].1.requests.total + runs[1].1.requests.total);
    assert_eq!(merged.requests.total, 2000);
    assert_eq!(merged.bytes.in_total, runs[0].1.bytes.in_total + runs[1].1.bytes.in_total);
    let mut sum = total_of(&paths[0]);
    sum.add(&total_of(&paths[1]));
    assert_eq!(merged.latency.corrected, LatencyStats::of(&sum.corrected));
    assert_eq!(merged.latency.service, LatencyStats::of(&sum.service));
    // The runs overlapped in time, so their seconds were aligned, not appended.
    assert!(merged.intervals.len() <= 4, "{} intervals", merged.intervals.len());
    assert_eq!(merged.intervals.iter().map(|i| i.sent).sum::<u64>(), 2000);
    assert_eq!(merged.hosts.len(), 1);
    assert_eq!(merged.files.len(), 2);
}

#[test]
fn a_file_cut_mid_record_reads_back_with_a_warning() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(&o.url(), open(200.0));
    p.duration = Some(Duration::from_millis(2500));
    let (path, whole) = run_in(dir.path(), "cut", p);
    let len = std::fs::metadata(&path).unwrap().len();
    // Past the footer and the first send (under 100 bytes), into the last interval.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 200).unwrap();
    let s = summarize(std::slice::from_ref(&path)).unwrap();
    assert!(
        s.warnings.iter().any(|w| w.kind == WarningKind::FileCutOff && w.text.contains("cut off")),
        "{:?}",
        s.warnings
    );
    assert!(
        s.requests.total > 0 && s.requests.total < whole.requests.total,
        "{} of {}",
        s.requests.total,
        whole.requests.total
    );
    // The CLI says the same and still renders.
    let out = barrage().args(["report", path.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cut off"));
}

#[test]
fn sigkill_leaves_a_readable_file() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.brg");
    let mut child = barrage()
        .args(["run", "--rate", "200", "-d", "30s", "-o", path.to_str().unwrap(), &o.url()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) until two intervals are on disk; then kill without warning.
    let deadline = Instant::now() + Duration::from_secs(15);
    while intervals_in(&path) < 2 {
        assert!(Instant::now() < deadline, "no intervals written");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let s = summarize(std::slice::from_ref(&path)).unwrap();
    assert!(s.requests.total >= 300, "{}", s.requests.total);
    assert!(
        s.warnings.iter().any(|w| w.kind == WarningKind::RunKilled && w.text.contains("killed")),
        "{:?}",
        s.warnings
    );
}

/// Found in issue 33: a file whose first interval is corrupt read "-0 s" and "the run was
/// killed". It says what is true: a record is corrupt, no interval could be read, how long
/// the run lasted is unknown; no duration is negative. (The file is a good run's with one
/// byte of its first interval changed, in the fuzz corpus.)
#[test]
fn a_file_whose_first_interval_is_corrupt_says_so_and_no_negative_duration() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/fuzz/results/first-interval-corrupt.brg");
    let s = summarize(std::slice::from_ref(&path)).unwrap();
    let warnings = s.warnings.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join("\n");
    assert!(!warnings.contains("killed") && !warnings.contains("-0"), "{warnings}");
    assert!(warnings.contains("fails its checksum: corrupt; read the first 0 interval(s)"), "{warnings}");
    assert!(warnings.contains("how long the run lasted is unknown"), "{warnings}");
    let d = &s.duration;
    for (what, v) in [("total", d.total_s), ("attack", d.attack_s), ("wait", d.wait_s)] {
        assert!(v.is_sign_positive(), "{what}: {v}");
    }
    let out = barrage().args(["report", path.to_str().unwrap()]).env("NO_COLOR", "1").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("-0") && !text.contains("killed"), "{text}");
}

fn intervals_in(path: &Path) -> usize {
    let Ok(mut r) = ResultsReader::open(path) else { return 0 };
    std::iter::from_fn(|| r.next_interval()).count()
}

#[test]
fn hdr_log_reads_back_with_python_hdrhistogram() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(&o.url(), open(300.0));
    p.duration = Some(Duration::from_secs(2));
    let (path, s) = run_in(dir.path(), "h", p);
    let log = dir.path().join("h.hlog");
    let out = barrage().args(["report", "--format", "hdr-log", path.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    read_back_with_python(&out.stdout, &log, &s);
}

#[test]
fn run_writes_the_hdr_log_as_it_goes() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let (log, brg) = (dir.path().join("run.hlog"), dir.path().join("run.brg"));
    let out = barrage()
        .args([
            "run",
            "--rate",
            "200",
            "-d",
            "2s",
            "--hdr-log",
            log.to_str().unwrap(),
            "-o",
            brg.to_str().unwrap(),
            &o.url(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let from_report = barrage().args(["report", "--format", "hdr-log", brg.to_str().unwrap()]).output().unwrap();
    let data_lines = |t: &str| {
        t.lines().filter(|l| !l.starts_with('#') && !l.starts_with('"')).map(str::to_string).collect::<Vec<_>>()
    };
    let written = std::fs::read_to_string(&log).unwrap();
    assert_eq!(data_lines(&written), data_lines(&String::from_utf8_lossy(&from_report.stdout)));
    assert!(data_lines(&written).len() >= 4, "{written}");
}

fn read_back_with_python(log_bytes: &[u8], log: &Path, s: &barrage_metrics::RunSummary) {
    let python_has_hdrh = std::process::Command::new("python3")
        .args(["-c", "import hdrh"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !require("python3 module hdrh (pip install hdrhistogram)", python_has_hdrh) {
        return;
    }
    // The Python reader does not filter tags: give it the untagged (corrected) intervals.
    let untagged: String = String::from_utf8(log_bytes.to_vec())
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("Tag="))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(log, untagged).unwrap();
    let script = r#"
import sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
acc = HdrHistogram(1, 3600 * 1000 * 1000, 3)
reader = HistogramLogReader(sys.argv[1], acc)
n = 0
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    acc.add(h)
    n += 1
print(acc.get_total_count(), acc.get_value_at_percentile(50), acc.get_value_at_percentile(99), n)
"#;
    let py = std::process::Command::new("python3").args(["-c", script, log.to_str().unwrap()]).output().unwrap();
    assert!(py.status.success(), "{}", String::from_utf8_lossy(&py.stderr));
    let text = String::from_utf8(py.stdout).unwrap();
    let v: Vec<u64> = text.split_whitespace().map(|x| x.parse().unwrap()).collect();
    // hdrh reads untagged intervals (the corrected latency) only.
    assert_eq!(v[0], s.latency.corrected.count, "{text}");
    let close = |a: u64, b: u64| a.abs_diff(b) as f64 <= 0.002 * b as f64 + 1.0;
    assert!(close(v[1], s.latency.corrected.p50_us), "p50 {} vs {}", v[1], s.latency.corrected.p50_us);
    assert!(close(v[2], s.latency.corrected.p99_us), "p99 {} vs {}", v[2], s.latency.corrected.p99_us);
    assert!(v[3] >= 2, "{} intervals", v[3]);
}

/// Issue 12, item 5: a run that ends 2 ms after a whole second ends with a sliver of an
/// interval; folded into the second before, no row rates its few requests over its few ms.
/// The rows still cover the whole run and add up to what the origin served.
#[test]
fn the_last_sliver_of_a_run_makes_no_spike() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(&o.url(), open(100.0));
    p.duration = Some(Duration::from_millis(2002));
    let (_, s) = run_in(dir.path(), "sliver", p);
    let stats: serde_json::Value = serde_json::from_str(&http_get(o.addr(), "/_barrage/stats")).unwrap();
    let served = stats["requests"].as_u64().unwrap();
    assert_eq!(s.intervals.iter().map(|i| i.ok).sum::<u64>(), served);
    assert_eq!(s.intervals.iter().map(|i| i.sent).sum::<u64>(), served);
    let covered: f64 = s.intervals.iter().map(|i| i.length_s).sum();
    assert!((covered - s.duration.total_s).abs() < 0.01, "rows cover {covered} s of {} s", s.duration.total_s);
    for i in &s.intervals {
        assert!(i.length_s >= 0.5, "a {} s interval: {:?}", i.length_s, s.intervals);
        assert!(i.throughput_per_sec <= 150.0 && i.sent as f64 / i.length_s <= 150.0, "{i:?}");
        assert!(i.cpu_percent["barrage"] <= 100.0, "{i:?}");
    }
    // The CSV is the same rows.
    let csv = barrage_report::csv(&s);
    let col = csv.lines().next().unwrap().split(',').position(|h| h == "throughput_per_sec").unwrap();
    for line in csv.lines().skip(1) {
        let throughput: f64 = line.split(',').nth(col).unwrap().parse().unwrap();
        assert!(throughput <= 150.0, "{line}");
    }
    assert!(
        !s.warnings
            .iter()
            .any(|w| matches!(w.kind, WarningKind::GeneratorSaturated | WarningKind::GeneratorNearSaturation)),
        "{:?}",
        s.warnings
    );
}
