//! Studies through the library (barrage-study in-process) and the few things only the
//! binary shows: a sweep's table per level and phase, `report` of merged files into every
//! output, CPU and memory of a watched server in every table, live views across levels.

use crate::util::{barrage, closed, open, origin, plan};
use barrage_report::{Report, Slo};
use barrage_server::{CacheStyle, LatencyDist, ServeConfig};
use barrage_study::capacity::{Bounds, Capacity, Found};
use barrage_study::experiment::{Bed, Built, CaseSpec, Experiment};
use barrage_study::{Level, Quiet, RunOrder, Runner, StudyDir, Sweep};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn delayed(ms: u64) -> barrage_server::RunningServer {
    origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(ms))), ..Default::default() })
}

#[test]
fn a_sweep_in_process_derives_levels_from_a_base_plan_and_counts_match_the_server() {
    let server = delayed(5);
    let base = plan(&server.url(), closed(1));
    let sweep = Sweep {
        base: RunOrder::new(base),
        levels: vec![Level::Workers(1), Level::Workers(4)],
        step: Duration::from_secs(2),
        phases: Vec::new(),
        dir: None,
        slos: vec!["p50<1s".parse::<Slo>().unwrap()],
    };
    let table = sweep.run(&mut Runner::new("sweep", Default::default(), &mut Quiet)).unwrap();
    assert_eq!(table.rows.len(), 2);
    assert!(!table.partial);
    let throughput = |r: usize| table.rows[r].runs[0].throughput_per_sec.expect("a rate");
    let ratio = throughput(1) / throughput(0);
    assert!((3.0..5.0).contains(&ratio), "four workers against 5 ms: {ratio}");
    // Ground truth outside barrage: the origin counted every request of both levels.
    let sent: u64 = table.rows.iter().map(|r| r.runs[0].requests.total).sum();
    assert_eq!(server.requests(), sent);
    assert!(table.rows.iter().all(|r| r.passed() && r.verdict() == "ok"));
}

#[test]
fn a_capacity_search_in_process_finds_a_known_capacity() {
    // At most 4 requests at once, 10 ms each: about 360 req/s (tokio's timer adds ~1 ms).
    let server = origin(ServeConfig {
        max_concurrency: Some(4),
        latency: Some(LatencyDist::Fixed(Duration::from_millis(10))),
        ..Default::default()
    });
    let search = Capacity {
        base: RunOrder::new(plan(&server.url(), open(100.0))),
        bounds: Bounds {
            start_rate: 100.0,
            max_rate: 5000.0,
            precision: 0.1,
            step: Duration::from_secs(2),
            max_time: Duration::from_secs(60),
        },
        slos: vec!["p99<100ms".parse().unwrap(), "success>=99%".parse().unwrap()],
        dir: None,
    };
    let found = search.run(&mut Runner::new("capacity", Default::default(), &mut Quiet)).unwrap();
    let capacity = found.findings.capacity.expect("100/s is within capacity");
    assert!((200.0..=420.0).contains(&capacity), "4 slots of 10 ms: found {capacity}/s: {:?}", found.findings);
    assert!(found.findings.failed_at.unwrap() > capacity);
    // Every probe the search counted is a row, in the order tried.
    let rates: Vec<f64> = found.table.rows.iter().map(|r| r.offered.unwrap()).collect();
    assert_eq!(rates, found.findings.rates());
}

/// Issue 32, finding 6: two identical searches against nginx gave 188 and 700 req/s. The
/// probe that failed delivered 1.5% under its rate (6 requests still queued at the end of a
/// 2 s probe), below what a 2 s probe resolves, and the search took it for the target's
/// limit. Here a target falls behind by exactly that at the end of the first probe, by
/// count: it holds the last 8 answers of the first 2 s at 200/s for 500 ms (5 to 7 queued
/// beyond the one or two a target that keeps up owes at any moment: 1.25% to 1.75% short),
/// and answers everything else at once, up to any rate probed.
#[test]
fn a_capacity_probe_that_missed_within_its_resolution_is_probed_again_and_the_capacity_held() {
    let server = crate::util::RawServer::holding(393..=400, Duration::from_millis(500));
    let (found, rows) = search_200_to_400(&server, "success>=99%");
    // The first probe missed only by the requests held at its end, within its resolution:
    // probed again, it met, and the search went on to --max-rate.
    let first = &rows[0].1;
    assert!(
        first.starts_with("SLO missed: delivered>=99% (actual ")
            && first.contains("queued at the end), within the 2.0% a 2 s probe resolves: probed again)"),
        "{rows:#?}"
    );
    assert_eq!(found.findings.capacity, Some(400.0), "{rows:#?}");
    let stages: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(stages, ["200/s ramp", "200/s again", "400/s ramp", "400/s hold"], "{rows:#?}");
    assert!(rows[1..].iter().all(|(_, v)| v == "ok"), "{rows:#?}");
    // The capacity was held once more for a step, and says so.
    assert_eq!(found.findings.verified(), Some(true));
    assert_eq!(found.findings.interval(), (400.0, None));
}

/// A capacity search of `server` from 200/s to 400/s in 2 s probes against `slo`, with its
/// rows as (stage, verdict).
fn search_200_to_400(server: &crate::util::RawServer, slo: &str) -> (Found, Vec<(String, String)>) {
    let search = Capacity {
        base: RunOrder::new(plan(&server.url(), open(200.0))),
        bounds: Bounds {
            start_rate: 200.0,
            max_rate: 400.0,
            precision: 0.05,
            step: Duration::from_secs(2),
            max_time: Duration::from_secs(30),
        },
        slos: vec![slo.parse().unwrap()],
        dir: None,
    };
    let found = search.run(&mut Runner::new("capacity", Default::default(), &mut Quiet)).unwrap();
    let rows = found.table.rows.iter().map(|r| (r.labels[1..].join(" "), r.verdict())).collect();
    (found, rows)
}

/// Found by the reruns of bench/capacity.sh: a pause of the machine in one probe, far below
/// the capacity (nginx at 400/s, p99 399 ms, where it delivers 10,000/s), was taken for the
/// limit (394/s). Here the target pauses for 300 ms in the first probe (it holds requests
/// 100 to 140, by count), everything else answered at once: the probe delivers its rate but
/// misses `p99<100ms`; probed again, it meets, and the search goes on to --max-rate.
#[test]
fn a_capacity_probe_that_missed_in_a_pause_is_probed_again() {
    let server = crate::util::RawServer::holding(100..=140, Duration::from_millis(300));
    let (found, rows) = search_200_to_400(&server, "p99<100ms");
    let first = &rows[0].1;
    assert!(first.starts_with("SLO missed: p99<100ms (actual ") && first.ends_with(": probed again)"), "{rows:#?}");
    assert_eq!(found.findings.capacity, Some(400.0), "{rows:#?}");
    let stages: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(stages, ["200/s ramp", "200/s again", "400/s ramp", "400/s hold"], "{rows:#?}");
}

#[test]
fn an_experiment_in_process_runs_cases_with_phases_into_its_directory() {
    let server = origin(ServeConfig { cache_headers: Some(CacheStyle::Varnish), ..Default::default() });
    let tmp = tempfile::tempdir().unwrap();
    let manifest = barrage_study::dir::Manifest { name: "t".into(), repeats: 2, ..Default::default() };
    let dir = StudyDir::create(tmp.path(), manifest, false).unwrap();
    let cases: Vec<CaseSpec> = [1usize, 2]
        .iter()
        .map(|w| CaseSpec {
            id: format!("TC{}", w - 1),
            levels: vec![("workers".into(), w.to_string())],
            testbed: None,
            purge: false,
            phases: vec!["fill".into(), "measure".into()],
            flags: Vec::new(),
            background: None,
            redaction: Default::default(),
        })
        .collect();
    let url = format!("{}/obj/{{id}}", server.url());
    let build = |c: usize, _: &Bed| -> Result<Built, String> {
        let mut p = plan(&url, closed(c + 1));
        p.requests = Some(50);
        p.duration = None;
        p.objects = Some(1 << 30);
        // The fill asks for new objects, the measure repeats every one of them.
        p.hit_ratio = Some(1.0);
        // Each case its own seed; its own new objects are the study's doing.
        p.seed = 100 + c as u64;
        Ok(Built { main: RunOrder::new(p), background: None })
    };
    let study = Experiment {
        name: "t".into(),
        dir: &dir,
        cases: &cases,
        factors: vec![("workers".into(), vec!["1".into(), "2".into()])],
        compare: vec!["workers".into()],
        repeats: 2,
        shuffle: Some(7),
        warmup: None,
        pause: None,
        barrage: env!("CARGO_BIN_EXE_barrage").into(),
        slos: Vec::new(),
        noise: 0.05,
    };
    let results = study.run(&build, &mut Runner::new("experiment", Default::default(), &mut Quiet)).unwrap();
    assert_eq!(results.table.rows.len(), 4, "a row per case and phase");
    for row in &results.table.rows {
        assert_eq!(row.runs.len(), 2, "two repeats: {:?}", row.labels);
    }
    let hit = |i: usize| results.table.rows[i].figure(barrage_report::Figure::HitRatio).unwrap().mean;
    assert_eq!(hit(0), 0.0, "the fill asks for new objects");
    assert!(hit(1) > 0.99, "the measure repeats what the fill warmed");
    assert_eq!(results.comparisons.len(), 2, "TC0 → TC1 for each phase");
    assert!(dir.file("TC1", 2, Some("measure"), barrage_study::dir::Role::Measured).is_file());
    let text = Report::Experiment(&barrage_report::ExperimentReport {
        name: "t".into(),
        repeats: 2,
        compare: vec!["workers".into()],
        table: results.table,
        comparisons: results.comparisons,
    })
    .text(false);
    assert!(text.contains("Comparison along workers") && text.contains("measure"), "{text}");
}

#[test]
fn sweep_with_phases_prints_a_row_per_level_and_phase() {
    let server = origin(ServeConfig { cache_headers: Some(CacheStyle::Varnish), ..Default::default() });
    let url = format!("{}/obj/{{id}}", server.url());
    let dir = tempfile::tempdir().unwrap();
    let out = barrage()
        .args(["sweep", &url, "-c", "1,2", "--step", "1s", "--phases", "fill,measure", "--objects", "1000000000"])
        .args(["--hit-ratio", "1", "--format", "json", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["levels"].as_array().unwrap();
    let keys: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["labels"]["level"].as_str().unwrap(), r["labels"]["phase"].as_str().unwrap())).collect();
    assert_eq!(
        keys,
        [("1 workers", "fill"), ("1 workers", "measure"), ("2 workers", "fill"), ("2 workers", "measure")]
    );
    assert_eq!(rows[0]["hit_ratio"], 0.0, "fill meets new objects");
    // Each level draws its own new objects: the second level's fill is not warmed by the
    // first level's runs (the origin labels a path's first GET a miss).
    assert_eq!(rows[2]["hit_ratio"], 0.0, "a new level meets new objects: {}", rows[2]);
    // The measure asks for as many requests as the fill sent, every one a repeat of what the
    // fill warmed: all hits (it used to run as long as the fill, past what it had warmed).
    for (level, (fill, measure)) in [("01-1", (&rows[0], &rows[1])), ("02-2", (&rows[2], &rows[3]))] {
        // Exactly the fill's requests that were all sent in order (its threads stop a few
        // numbers apart): what its results file says it warmed.
        let warmed = barrage_metrics::summary::summarize(&[dir.path().join(format!("level-{level}workers.fill.brg"))])
            .unwrap()
            .sent_prefix;
        let (f, m) = (fill["requests"].as_u64().unwrap(), measure["requests"].as_u64().unwrap());
        assert!(m == warmed && m <= f && m > 0, "{m} of {warmed} warmed, {f} filled");
        assert_eq!(measure["hit_ratio"], 1.0, "{rows:?}");
        assert_eq!(measure["hits"]["asked"], 1.0, "{rows:?}");
    }
    assert!(rows.iter().all(|r| r["byte_hit_ratio"].is_number() && r["p99_us"].is_number()));
    // The text table has the same rows and the cache's columns.
    let text = barrage()
        .args(["sweep", &url, "-c", "1", "--step", "1s", "--phases", "fill,measure", "--objects", "1000"])
        .args(["--hit-ratio", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("hit ratio") && text.contains("byte hit") && text.contains("measure"), "{text}");
}

#[test]
fn report_writes_merged_files_to_every_output() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = ["a", "b"]
        .iter()
        .map(|n| {
            crate::util::run_in(dir.path(), n, {
                let mut p = plan(&server.url(), closed(1));
                p.requests = Some(100);
                p.duration = None;
                p
            })
            .0
        })
        .collect();
    let (xlsx, html, csv) = (dir.path().join("all.xlsx"), dir.path().join("all.html"), dir.path().join("tables"));
    let out = barrage()
        .arg("report")
        .args(&files)
        .args(["--format", "json", "--xlsx"])
        .arg(&xlsx)
        .arg("--html")
        .arg(&html)
        .arg("--csv-dir")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"]["total"], 200, "merged");
    assert_eq!(server.requests(), 200);
    use calamine::Reader;
    let book = calamine::open_workbook_auto(&xlsx).unwrap();
    assert_eq!(book.sheet_names(), ["summary", "intervals"]);
    let summary = std::fs::read_to_string(csv.join("summary.csv")).unwrap();
    assert!(summary.lines().count() > 1 && csv.join("intervals.csv").is_file(), "{summary}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("barrage-data"));
}

/// `barrage serve` as its own process, to be watched.
pub(crate) struct Served(pub(crate) std::process::Child, pub(crate) String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn served() -> Served {
    let mut child = barrage()
        .args(["serve", "--listen", "127.0.0.1:0", "--threads", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url =
        line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("{line}")).to_string();
    Served(child, url.trim_end_matches('/').to_string())
}

/// The peak resident memory the kernel reports for `pid`, KiB.
pub(crate) fn vm_hwm(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn every_study_table_has_the_watched_servers_cpu_and_peak_memory() {
    let s = served();
    let pid = s.0.id().to_string();
    // Named by its name, a `barrage serve` with its PID beside barrage itself.
    let label = format!("barrage[{pid}]");
    let dir = tempfile::tempdir().unwrap();
    let sweep = barrage()
        .args(["sweep", &s.1, "-c", "1,2", "--step", "1s", "--monitor", &pid, "--format", "json", "--csv-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(sweep.status.success(), "{}", String::from_utf8_lossy(&sweep.stderr));
    let v: Value = serde_json::from_slice(&sweep.stdout).unwrap();
    let hwm = vm_hwm(s.0.id());
    for row in v["levels"].as_array().unwrap() {
        let p = &row["processes"][&label];
        let peak = p["peak_rss_kib"].as_u64().unwrap_or_else(|| panic!("{row}"));
        // Ground truth from the kernel: the peak barrage saw is at most the peak so far,
        // and not far below it (the server reached most of its size at start).
        assert!(peak <= hwm && peak * 2 > hwm, "peak {peak} KiB, VmHWM {hwm} KiB");
        assert!(p["cpu_mean_percent"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["processes"]["barrage"]["peak_rss_kib"].as_u64().unwrap() > 0);
    }
    let csv = std::fs::read_to_string(dir.path().join("sweep.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(&format!("{label}_cpu_percent")) && header.contains(&format!("{label}_peak_rss_kib")),
        "{header}"
    );
    // The same columns in an experiment's matrix.
    let file = dir.path().join("e.toml");
    std::fs::write(
        &file,
        format!(
            "duration = \"1s\"\n[base]\nurl = \"{}\"\nmonitor = \"{pid}\"\n[factors.c]\none = {{ concurrency = 1 }}\n",
            s.1
        ),
    )
    .unwrap();
    let exp = barrage()
        .arg("experiment")
        .arg(&file)
        .arg("-o")
        .arg(dir.path().join("e"))
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(exp.status.success(), "{}", String::from_utf8_lossy(&exp.stderr));
    let matrix = String::from_utf8_lossy(&exp.stdout);
    assert!(matrix.lines().next().unwrap().contains(&format!("{label}_peak_rss_kib")), "{matrix}");
}

#[test]
fn a_sweep_serves_its_metrics_across_levels_and_names_the_running_one() {
    let server = origin(ServeConfig::default());
    let (mut child, addr) = crate::live::with_metrics(&["sweep", &server.url(), "-c", "1,2", "--step", "2s"]);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (_, body) = crate::live::scrape(&addr);
        if body.contains("2/2: level 2 workers") {
            break;
        }
        assert!(Instant::now() < deadline, "the second level never showed: {body}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(child.wait().unwrap().success());
}

#[test]
fn new_objects_are_new_for_another_seed() {
    let server = origin(ServeConfig { cache_headers: Some(CacheStyle::Varnish), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/obj/{{id}}", server.url());
    let hit_ratio = |seed: u64| {
        let mut p = plan(&url, closed(2));
        p.requests = Some(300);
        p.duration = None;
        p.objects = Some(1 << 30);
        p.hit_ratio = Some(0.0);
        p.seed = seed;
        let s = crate::util::run_in(dir.path(), &format!("s{seed}"), p).1;
        s.cache.unwrap().hit_ratio
    };
    assert_eq!(hit_ratio(5), 0.0);
    assert_eq!(hit_ratio(6), 0.0, "--seed 6 after --seed 5 asks for other objects");
    // The same seed asks for the same ones again (all of them, but for the few a worker
    // sent beyond its share of the first run: -n is shared by workers as they finish).
    assert!(hit_ratio(5) >= 0.95, "the same seed asks for the same ones again");
}

/// `barrage ARGS`: (exit code, stderr).
fn exit_and_stderr(args: &[&str]) -> (Option<i32>, String) {
    let out = barrage().args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Its last line: the one that says why the command exits as it does.
fn last_line(err: &str) -> &str {
    err.trim_end().lines().last().unwrap_or("")
}

#[test]
fn a_result_built_on_failure_exits_3_from_every_command() {
    let refused = crate::util::refused_url();
    let healthy = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let file = |n: &str| dir.path().join(n).display().to_string();
    let (bad, good) = (file("bad.brg"), file("good.brg"));
    assert_eq!(exit_and_stderr(&["run", "-n", "20", "-c", "2", &healthy.url(), "-o", &good]).0, Some(0));
    let (code, err) = exit_and_stderr(&["run", "-n", "20", "-c", "2", &refused, "-o", &bad]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(
        last_line(&err),
        "barrage: FAILED: the run is not a result: all 20 requests failed (mostly refused: Connection refused (os error 111))"
    );
    // The same verdict from the files, alone or compared.
    let (code, err) = exit_and_stderr(&["report", &bad, "--format", "json"]);
    assert_eq!((code, last_line(&err)), (Some(3), "barrage: FAILED: the run is not a result: all 20 requests failed (mostly refused: Connection refused (os error 111))"));
    assert_eq!(exit_and_stderr(&["report", &good]).0, Some(0));
    // Every output of the run says so: the text before any figure, the JSON and CSV verdict,
    // the HTML among its warnings; the healthy run says ok.
    let (html, csv) = (file("bad.html"), file("csv"));
    let out = barrage().args(["report", &bad, "--html", &html, "--csv-dir", &csv]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let failed = text.find("FAILED: all 20 requests failed").unwrap_or_else(|| panic!("{text}"));
    assert!(failed < text.find("Latency").unwrap(), "FAILED comes before the figures: {text}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("FAILED: all 20 requests failed"));
    let summary = std::fs::read_to_string(dir.path().join("csv/summary.csv")).unwrap();
    assert!(summary.lines().any(|l| l.starts_with("verdict,FAILED: all 20 requests failed")), "{summary}");
    let verdict = |f: &str| {
        let out = barrage().args(["report", f, "--format", "json"]).output().unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["verdict"].as_str().unwrap().to_string()
    };
    assert!(verdict(&bad).starts_with("FAILED: all 20 requests failed"));
    assert_eq!(verdict(&good), "ok");
    let (code, err) = exit_and_stderr(&["compare", &good, &bad]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        last_line(&err).starts_with("barrage: FAILED: 1 of 2 compared runs are not a result: bad.brg: all 20"),
        "{err}"
    );
    assert_eq!(exit_and_stderr(&["compare", &good, &good]).0, Some(0));
    // A sweep whose levels all failed, and a capacity search whose lowest probe did (each
    // probe shown FAILED, none met).
    let (code, err) = exit_and_stderr(&["sweep", "-c", "1,2", "--step", "1s", &refused, "--format", "json"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(last_line(&err).starts_with("barrage: FAILED: 2 of 2 runs are not a result: 1 workers: all "), "{err}");
    let out = barrage()
        .args(["capacity", &refused, "--slo", "p99<1s", "--step", "1s", "--max-time", "3s", "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(last_line(&err).starts_with("barrage: FAILED: the lowest probe is not a result: "), "{err}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let probes = json["probes"].as_array().unwrap();
    assert!(!probes.is_empty() && json["capacity_per_sec"].is_null(), "{json}");
    assert!(probes.iter().all(|p| p["verdict"].as_str().unwrap().starts_with("FAILED: all ")), "{json}");
}

#[test]
fn an_experiment_against_an_untrusted_certificate_exits_3_and_a_trusted_one_0() {
    let plain = origin(ServeConfig::default());
    let tls = origin(ServeConfig { tls: true, ..Default::default() });
    let https = tls.url().replace("http://", "https://");
    let ca = tls.ca_path().unwrap().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let experiment = |trust: &str| {
        let file = dir.path().join(format!("e{}.toml", trust.len()));
        let text = format!(
            "duration = \"1s\"\n[base]\nconcurrency = 1\n[factors.protocol]\nhttp = {{ url = \"{}\" }}\nhttps = {{ url = \"{https}\"{trust} }}\n",
            plain.url()
        );
        std::fs::write(&file, text).unwrap();
        barrage().arg("experiment").arg(&file).arg("-o").arg(file.with_extension("results")).output().unwrap()
    };
    let out = experiment("");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let line = last_line(&err);
    assert!(
        line.starts_with("barrage: FAILED: 1 of 2 cases are not a result: TC1 https: all ")
            && line.contains("UnknownIssuer"),
        "{err}"
    );
    // The table says so too.
    assert!(String::from_utf8_lossy(&out.stdout).contains("WARNING: TC1 https: all "));
    let out = experiment(&format!(", cacert = \"{ca}\""));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
