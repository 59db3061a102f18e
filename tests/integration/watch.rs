//! `--monitor` and `--at` on a plain run against the built-in origin.

use crate::util::{barrage, origin};
use barrage_server::ServeConfig;
use serde_json::Value;

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
