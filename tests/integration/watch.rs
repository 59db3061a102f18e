//! `--monitor` and `--at` on a plain run against the built-in origin.

use crate::studies::{served, vm_hwm};
use crate::util::{barrage, open, origin, plan, run_in, ServeProcess};
use barrage_metrics::file::{ResultsReader, ResultsWriter, RunHeader};
use barrage_metrics::summary::WarningKind;
use barrage_server::ServeConfig;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[test]
fn at_commands_are_events_in_the_results_file_with_their_exit() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.brg");
    let out = barrage()
        .args(["run", "--rate", "200", "-d", "2s", &server.url(), "-o"])
        .arg(&file)
        .args(["--at", "500ms", "echo starting; exit 3", "--at", "1s", "true", "--monitor"])
        .arg(std::process::id().to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Events") && text.contains("echo starting; exit 3"), "{text}");
    // Read back from the file, as `barrage report` does.
    let out = barrage().arg("report").arg(&file).args(["--format", "json"]).output().unwrap();
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = s["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["exit"].as_i64(), Some(3));
    assert_eq!(events[0]["output"], "starting");
    let at = events[0]["at_s"].as_f64().unwrap();
    assert!((0.5..0.7).contains(&at), "started at {at} s");
    assert_eq!(events[1]["exit"].as_i64(), Some(0));
    // The command did nothing to the server: no errors around it. (Its fork may still slow
    // one tenth of a second on a busy machine, which the analysis rightly reports as a
    // latency burst; the unit tests of the analysis pin its rules down.)
    assert_eq!(events[0]["burst_errors"], 0, "{}", events[0]);
    assert_eq!(events[0]["before"]["error_ratio"], 0.0, "{}", events[0]);
    // The test process itself was watched by PID, and is named by its name (issue 32 found
    // it named by its PID); barrage and the machine always are.
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap().trim().to_string();
    let names: Vec<&str> = s["processes"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, [comm.as_str(), "barrage"]);
    let rows = s["intervals"].as_array().unwrap();
    assert!(rows.iter().take(2).all(|r| r["host_cpu_percent"].is_number()), "{rows:?}");
    let csv = barrage().arg("report").arg(&file).args(["--format", "csv"]).output().unwrap();
    let header = String::from_utf8(csv.stdout).unwrap();
    assert!(
        header.lines().next().unwrap().ends_with(
            ",host_cpu_percent,{0}_cpu_percent,{0}_rss_kib,barrage_cpu_percent,barrage_rss_kib"
                .replace("{0}", &comm)
                .as_str()
        ),
        "{header}"
    );
}

/// `barrage report FILE --format FORMAT`, which must succeed: its standard output.
fn report_of(file: &Path, format: &str) -> String {
    let out = barrage().arg("report").arg(file).args(["--format", format]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Found in issue 32: a command that failed (exit 127) had the run's changes put down to
/// it. Here it really disturbs the origin (stopped for 400 ms) and then fails: the event
/// says it failed, with its exit code and the first line of its standard error (redacted
/// as every output is), in text, JSON and HTML, and no effect is put down to it.
#[test]
fn a_failed_at_command_is_shown_failed_with_its_error_and_no_effect() {
    let origin = ServeProcess::start(&[]);
    let pid = origin.child.id();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.brg");
    let command = format!(
        "kill -STOP {pid}; sleep 0.4; kill -CONT {pid}; echo done; echo 'cannot reach http://u:S3CRET@127.0.0.1:1/' >&2; echo more >&2; exit 127"
    );
    let url = format!("http://{}/", origin.addr);
    let out = barrage()
        .args(["run", "--rate", "200", "-d", "3s", &url, "--at", "1s", &command, "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s: Value = serde_json::from_str(&report_of(&file, "json")).unwrap();
    let e = &s["events"][0];
    assert_eq!((e["exit"].as_i64(), e["failed"].as_bool()), (Some(127), Some(true)), "{e}");
    assert_eq!(e["problem"], "cannot reach http://u:<redacted>@127.0.0.1:1/", "{e}");
    assert!(e["burst_s"].is_null() && e["burst_errors"] == 0 && e["changes"] == serde_json::json!([]), "{e}");
    assert!(e["before"]["requests"].as_u64() > Some(100), "before is still shown: {e}");
    let text = report_of(&file, "text");
    let events = &text[text.find("Events").expect("an Events section")..];
    let line = "failed, exit 127: cannot reach http://u:<redacted>@127.0.0.1:1/";
    assert!(events.contains(line) && events.contains("effect  none put down to it: the command failed"), "{events}");
    assert!(!events.contains("S3CRET") && !events.contains("recovered") && !events.contains("changed"), "{events}");
    let html = report_of(&file, "html");
    let escaped = line.replace('<', "&lt;").replace('>', "&gt;");
    assert!(html.contains(&escaped) && html.contains("none put down to it: the command failed"), "the HTML too");
    assert!(!html.contains("S3CRET"));
    let bytes = std::fs::read(&file).unwrap();
    assert!(!bytes.windows(6).any(|w| w == b"S3CRET"), "the results file holds it redacted too");
}

/// Found in issue 32: the README's own `--at 'barrage testbed stop …'` failed with exit 127
/// unless barrage was on PATH. `barrage` in a command runs the barrage that is running.
#[test]
fn barrage_in_an_at_command_is_the_running_barrage_whatever_path_says() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.brg");
    let out = barrage()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "--rate", "50", "-d", "1s", &server.url(), "--at", "200ms", "barrage --version", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s: Value = serde_json::from_str(&report_of(&file, "json")).unwrap();
    let e = &s["events"][0];
    assert_eq!(e["exit"].as_i64(), Some(0), "{e}");
    assert_eq!(e["output"].as_str(), Some(format!("barrage {}", env!("CARGO_PKG_VERSION")).as_str()), "{e}");
}

/// Processes watched by PID are named by their name, the PID added where two would share
/// one: two `barrage serve` origins beside barrage itself.
#[test]
fn processes_watched_by_pid_are_named_by_their_name_and_pid_when_shared() {
    let (a, b) = (ServeProcess::start(&[]), ServeProcess::start(&[]));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.brg");
    let (pa, pb) = (a.child.id().to_string(), b.child.id().to_string());
    let url = format!("http://{}/", a.addr);
    let out = barrage()
        .args(["run", "-n", "20", "-c", "1", &url, "--monitor", &pa, "--monitor", &pb, "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s: Value = serde_json::from_str(&report_of(&file, "json")).unwrap();
    let names: Vec<&str> = s["processes"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, [format!("barrage[{pa}]"), format!("barrage[{pb}]"), "barrage".to_string()]);
    let csv = report_of(&file, "csv");
    assert!(csv.lines().next().unwrap().contains(&format!(",barrage_{pa}_cpu_percent,barrage_{pa}_rss_kib,")), "{csv}");
}

#[test]
fn monitor_and_at_usage_errors_are_one_line_with_exit_2() {
    let server = origin(ServeConfig::default());
    let url = server.url();
    let cases: &[(&[&str], &str)] = &[
        (&["--monitor", "no-such-process-here"], "--monitor no-such-process-here"),
        (&["--monitor", "4000000000"], "--monitor 4000000000"),
        (&["--at", "soon", "true"], "--at 'soon'"),
        (&["--at", "5s", "true"], "--at 5s: after the end of the run"),
        (&["--at", "1s", " "], "the command is empty"),
        (&["--at", "1s"], "--at"),
    ];
    // More processes than a results file holds, refused before any is looked up.
    let many: Vec<&str> = ["--monitor", "1"].repeat(1025);
    let cases = [cases, &[(&many[..], "--monitor: 1025 processes to watch, more than 1024")]].concat();
    for (args, want) in &cases {
        let out = barrage().args(["run", "-d", "2s", &url]).args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// CPU time (user and system, clock ticks) the kernel counts for `pid` and its waited-for
/// children: the ground truth of a watched server's CPU.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime), counted from field 3 after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn report_json(files: &[PathBuf]) -> Value {
    let out = barrage().arg("report").args(files).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A watched process's figure in each interval row, by second.
fn per_second(s: &Value, figure: &str, name: &str) -> BTreeMap<u64, f64> {
    let rows = s["intervals"].as_array().unwrap();
    rows.iter().filter_map(|r| Some((r["second"].as_u64()?, r[figure][name].as_f64()?))).collect()
}

/// Copies a results file as if another machine had written it: same PIDs and start times
/// in its samples, another host in its header.
fn as_if_from(host: &str, from: &Path, to: &Path) {
    let mut r = ResultsReader::open(from).unwrap();
    // Another machine's run: its host, and an id of its own.
    let mut header = RunHeader { host: host.into(), ..r.header().clone() };
    header.launch.run_id = format!("{:032x}", u128::from_str_radix(&header.launch.run_id, 16).unwrap() ^ 1);
    let mut w = ResultsWriter::create(to, &header).unwrap();
    while let Some(i) = r.next_interval() {
        w.write_interval(&i).unwrap();
    }
    w.finish(r.footer().unwrap()).unwrap();
}

/// Issue 12, item 4: four clients watching the same server, merged, count it once (its
/// memory at most what the kernel says its peak was, its CPU what the kernel counted), and
/// the merged header describes the four runs together. A copy of one file claiming another
/// machine is another process.
#[test]
fn four_runs_watching_one_server_count_it_once() {
    let server = served();
    let pid = server.0.id();
    // A `barrage serve`, named with its PID beside barrage itself.
    let name = format!("barrage[{pid}]");
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..4).map(|k| dir.path().join(format!("client{k}.brg"))).collect();
    let ticks_before = cpu_ticks(pid);
    let clock = Instant::now();
    let clients: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(k, file)| {
            let url = format!("{}/bytes/{}", server.1, 100 * (k + 1));
            barrage()
                .args(["run", "--rate", "500", "-d", "3s", "--monitor", &pid.to_string(), "--threads", "1", &url, "-o"])
                .arg(file)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in clients {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let (ticks, secs) = (cpu_ticks(pid) - ticks_before, clock.elapsed().as_secs_f64());
    // SAFETY: sysconf only reads a constant of the system.
    let per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let truth_cpu = ticks as f64 / per_sec / secs * 100.0;
    let hwm = vm_hwm(pid) as f64;

    let merged = report_json(&files);
    let single = report_json(&files[..1]);
    let (rss, cpu) = (per_second(&merged, "rss_kib", &name), per_second(&merged, "cpu_percent", &name));
    assert!(rss.len() >= 3, "{:?}", merged["intervals"]);
    for (second, kib) in &rss {
        assert!(*kib <= hwm, "second {second}: {kib} KiB, more than the server's peak {hwm} KiB");
    }
    let p = merged["processes"].as_array().unwrap().iter().find(|p| p["name"] == name.as_str()).unwrap();
    let peak = p["rss_max_kib"].as_f64().unwrap();
    assert!(peak <= hwm && peak >= hwm / 2.0, "peak {peak} KiB, kernel's {hwm} KiB");
    // CPU: what the kernel counted over the four runs (and their start-up), not four times it.
    let mean = p["cpu_mean_percent"].as_f64().unwrap();
    let rows_mean = cpu.values().sum::<f64>() / cpu.len() as f64;
    for figure in [mean, rows_mean] {
        assert!(figure <= 1.5 * truth_cpu + 5.0 && figure >= truth_cpu / 2.0 - 2.0, "{figure}% vs {truth_cpu:.1}%");
    }
    let single_mean = single["processes"][0]["cpu_mean_percent"].as_f64().unwrap();
    assert!((mean - single_mean).abs() <= 0.5 * single_mean + 3.0, "merged {mean}%, one run {single_mean}%");
    // The header of the merged run: the four runs' rate and threads added, every URL.
    let rates: f64 = files.iter().map(|f| report_json(std::slice::from_ref(f))["rate_per_sec"].as_f64().unwrap()).sum();
    let rate = merged["rate_per_sec"].as_f64().unwrap();
    assert!((rate - rates).abs() <= 0.02 * rates, "merged {rate}/s, the files' {rates}/s");
    assert_eq!(merged["steps"][0]["label"], "2000 req/s");
    assert_eq!(merged["generator"]["threads"], 4 * single["generator"]["threads"].as_u64().unwrap());
    assert_eq!(merged["urls"].as_array().unwrap().len(), 4, "{}", merged["urls"]);
    let text = barrage().arg("report").args(&files).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.lines().next().unwrap().ends_with("2000 req/s, merged from 4 files on 1 host"), "{text}");
    // The CSV shows the same rows.
    let csv = barrage().arg("report").args(&files).args(["--format", "csv"]).output().unwrap();
    let csv = String::from_utf8(csv.stdout).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == format!("barrage_{pid}_rss_kib")).unwrap();
    for line in csv.lines().skip(1) {
        let kib: f64 = line.split(',').nth(col).unwrap().parse().unwrap();
        assert!(kib <= hwm, "{line}");
    }
    // Another machine's file naming the same PID and start time: another process, added.
    let elsewhere = dir.path().join("elsewhere.brg");
    as_if_from("another-machine", &files[0], &elsewhere);
    let five = report_json(&[files.clone(), vec![elsewhere]].concat());
    let first = per_second(&single, "rss_kib", &name);
    for (second, kib) in per_second(&five, "rss_kib", &name) {
        assert_eq!(kib, rss[&second] + first[&second], "second {second}");
    }
}

/// The calling thread's CPU time, from the kernel.
fn thread_cpu() -> Duration {
    // SAFETY: clock_gettime writes the struct we pass.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Spins until `stop`, then returns the CPU it used and for how long it ran.
fn burn(stop: &AtomicBool) -> (Duration, Duration) {
    let (cpu, clock) = (thread_cpu(), Instant::now());
    let mut x = 0u64;
    while !stop.load(Ordering::Relaxed) {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
    (thread_cpu() - cpu, clock.elapsed())
}

/// Issue 12, item 8: barrage's CPU is its engine threads', in every figure: a thread burning
/// CPU in the same process (as the demo's in-process origin does) is not in it, and the
/// report shows it once.
#[test]
fn barrage_cpu_is_its_engine_threads_not_its_process() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let (s, (burnt, burning)) = std::thread::scope(|scope| {
        let burner = scope.spawn(|| burn(&stop));
        let mut p = plan(&o.url(), open(200.0));
        p.duration = Some(Duration::from_secs(2));
        let (_, s) = run_in(dir.path(), "busy", p);
        stop.store(true, Ordering::Relaxed);
        (s, burner.join().unwrap())
    });
    let burner = burnt.as_secs_f64() / burning.as_secs_f64() * 100.0;
    assert!(burner >= 20.0, "the burner got {burner:.0}% of a core: the machine is too busy to tell");
    let me = s.processes.iter().find(|p| p.name == "barrage").unwrap();
    for (what, figure) in [
        ("cpu", s.generator.cpu_percent),
        ("cpu peak", s.generator.cpu_max_percent),
        ("process mean", me.cpu_mean_percent),
    ] {
        assert!(figure < burner / 2.0, "barrage's {what} {figure:.1}% counts the burner's {burner:.1}%");
    }
    assert!(s.intervals.iter().all(|i| i.cpu_percent["barrage"] < burner / 2.0), "{:?}", s.intervals);
    assert_eq!(me.cpu_mean_percent, s.generator.cpu_percent);
    // One value in one place: the Generator section, not a row of the Servers table.
    let text = barrage_report::text(&s, false);
    assert!(!text.lines().any(|l| l.starts_with("  barrage ")), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains("% of one core")).count(), 2, "cpu and cpu peak: {text}");
}

/// A 20 ms run of two threads, on a thread that already used CPU (a study's earlier runs,
/// the command line's start-up): barrage's CPU is never more than its threads can give.
#[test]
fn a_20ms_run_never_reports_more_than_its_threads() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    // This thread's CPU so far: at least 200 ms (bounded at 5 s of wall time).
    let clock = Instant::now();
    while thread_cpu() < Duration::from_millis(200) && clock.elapsed() < Duration::from_secs(5) {
        std::hint::black_box(clock.elapsed());
    }
    let mut p = plan(&o.url(), open(1000.0));
    p.threads = 2;
    p.duration = Some(Duration::from_millis(20));
    let (_, s) = run_in(dir.path(), "short", p);
    assert_eq!(s.generator.threads, 2);
    assert!(s.generator.cpu_percent <= 200.0, "{:?} over {} s", s.generator, s.duration.total_s);
    assert!(s.intervals.iter().all(|i| i.cpu_percent["barrage"] <= 200.0), "{:?}", s.intervals);
    assert!(
        !s.warnings
            .iter()
            .any(|w| matches!(w.kind, WarningKind::GeneratorSaturated | WarningKind::GeneratorNearSaturation)),
        "{:?}",
        s.warnings
    );
}

/// Ground truth by construction: one URL in 100 of a round-robin list is an object the
/// first `--at` command deletes, so from then on exactly 1/100 of the requests fail (404)
/// and before it none did. At 1000/s that is one failure per tenth of a second, not over
/// the 1-point floor that makes a tenth "disturbed", yet a real change in the error rate:
/// the event must say so, not "no visible effect". The second command changes nothing:
/// the same 1/100 fail before and after it, which must not be called a change.
#[test]
fn an_error_rate_that_changes_after_an_event_is_reported_and_one_that_does_not_is_not() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let (url, object) = (format!("{}/", server.url()), format!("{}/obj", server.url()));
    let put = barrage().args(["run", "-n", "1", "-X", "PUT", "--body", "ok", &object]).output().unwrap();
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
    let urls = dir.path().join("urls.txt");
    let mut list = vec![url.as_str(); 99];
    list.push(&object);
    std::fs::write(&urls, list.join("\n")).unwrap();
    let delete = format!("{} run -n 1 -X DELETE {object} --format json", env!("CARGO_BIN_EXE_barrage"));
    let file = dir.path().join("run.brg");
    let out = barrage()
        .args(["run", "--rate", "1000", "-d", "7s", "--urls"])
        .arg(&urls)
        .args(["--at", "2s", &delete, "--at", "4500ms", "true", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = barrage().arg("report").arg(&file).args(["--format", "json"]).output().unwrap();
    let s: Value = serde_json::from_slice(&report.stdout).unwrap();
    let failed = s["requests"]["total"].as_u64().unwrap() - s["requests"]["ok"].as_u64().unwrap();
    assert_eq!(
        s["status_codes"]["404"].as_u64(),
        Some(failed),
        "only the deleted object failed: {}",
        s["status_codes"]
    );
    let events = s["events"].as_array().unwrap();
    let changed = |e: &Value, figure: &str| -> Option<Value> {
        e["changes"].as_array().and_then(|c| c.iter().find(|c| c["figure"] == figure).cloned())
    };
    // The real change: from none to one in 100.
    let errors = changed(&events[0], "error_ratio").unwrap_or_else(|| panic!("no change in errors: {}", events[0]));
    assert_eq!(errors["before"].as_f64(), Some(0.0), "{errors}");
    let after = errors["after"].as_f64().unwrap();
    assert!((after - 0.01).abs() < 0.003, "{errors}");
    // The null one: one in 100 on both sides.
    assert_eq!(changed(&events[1], "error_ratio"), None, "{}", events[1]);
    let text = barrage().arg("report").arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let block = &text[text.find("DELETE").unwrap_or_else(|| panic!("{text}"))..];
    let (real, null) = block.split_at(block.find("  true  (").unwrap_or_else(|| panic!("{text}")));
    assert!(!real.contains("no visible effect") && real.contains("changed errors 0.00% → "), "{text}");
    assert!(!null.contains("changed errors"), "{text}");
}
