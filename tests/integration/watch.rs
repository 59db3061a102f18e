//! `--monitor` and `--at` on a plain run against the built-in origin.

use crate::util::{barrage, open, origin, plan, run_in};
use barrage_server::ServeConfig;
use serde_json::Value;
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
    // The test process itself was watched by PID; barrage and the machine always are.
    let names: Vec<&str> = s["processes"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, [std::process::id().to_string().as_str(), "barrage"]);
    let rows = s["intervals"].as_array().unwrap();
    assert!(rows.iter().take(2).all(|r| r["host_cpu_percent"].is_number()), "{rows:?}");
    let csv = barrage().arg("report").arg(&file).args(["--format", "csv"]).output().unwrap();
    let header = String::from_utf8(csv.stdout).unwrap();
    assert!(
        header.lines().next().unwrap().ends_with(
            ",host_cpu_percent,{0}_cpu_percent,{0}_rss_kib,barrage_cpu_percent,barrage_rss_kib"
                .replace("{0}", &std::process::id().to_string())
                .as_str()
        ),
        "{header}"
    );
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
    for (args, want) in cases {
        let out = barrage().args(["run", "-d", "2s", &url]).args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
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
        !s.warnings.iter().any(|w| w.contains("barrage used") || w.contains("barrage's own CPU")),
        "{:?}",
        s.warnings
    );
}
