//! One interruption policy in every mode: SIGINT, SIGTERM or SIGHUP in the middle of a study
//! keeps every finished run and the interrupted one's file, prints the table marked partial,
//! removes the temporary files and exits 130, 143 or 129. Each test waits until the named
//! run has written an interval, or the origin has counted so many requests (so the signal
//! lands inside a run, not between runs), then signals.

use crate::util::{barrage, origin};
use barrage_server::{LatencyDist, RunningServer, ServeConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Starts `barrage ARGS`, waits (bounded) until `file` holds an interval, sends `signal`,
/// and returns what it printed.
fn interrupt_in(args: &[&str], file: &Path, signal: i32) -> Output {
    let what = format!("{} holds an interval", file.display());
    interrupt_when(barrage().args(args), &what, || has_interval(file), signal).output
}

/// Starts `barrage ARGS` with its temporary directory `tmp`, waits (bounded) until `server`
/// has counted `n` requests, sends `signal`, and returns what it printed.
fn interrupt_after(args: &[&str], tmp: &Path, server: &RunningServer, n: u64, signal: i32) -> Output {
    let what = format!("the origin counts {n} requests");
    interrupt_when(barrage().args(args).env("TMPDIR", tmp), &what, || server.requests() >= n, signal).output
}

/// What a signalled child printed, and how long it took to exit after the signal.
struct Stopped {
    output: Output,
    took: Duration,
}

/// Starts `cmd`, waits (at most 40 s) until `ready` says the moment has come (`what`, for
/// the failure), sends ONE `signal`, and waits for the child to exit.
fn interrupt_when(cmd: &mut Command, what: &str, mut ready: impl FnMut() -> bool, signal: i32) -> Stopped {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    while !ready() {
        assert!(Instant::now() < deadline, "never came: {what}");
        // Paces the polling only: `ready` is what synchronises.
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let output = child.wait_with_output().unwrap();
    Stopped { output, took: sent.elapsed() }
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

/// An experiment file in `dir` of 3 s runs of `url`'s `/bytes/100`: `top` before its base,
/// `rest` after the base's URL (more of the base, the factors); and its results directory.
fn study(dir: &Path, top: &str, url: &str, rest: &str) -> (PathBuf, PathBuf) {
    let file = dir.join("study.toml");
    let text = format!("duration = \"3s\"\n{top}[base]\nurl = \"{url}/bytes/100\"\n{rest}");
    std::fs::write(&file, text).unwrap();
    (file, dir.join("out"))
}

#[test]
fn sigterm_in_the_second_case_of_an_experiment_keeps_its_part_file_and_resume_finishes() {
    let server =
        origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(2))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let factors = "[factors.workers]\none = { concurrency = 1 }\ntwo = { concurrency = 2 }\n";
    let (file, results) = study(dir.path(), "", &server.url(), factors);
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
    // Interrupted, not failed: the signal, not the server, kept it from finishing.
    assert_eq!(v["matrix"][1]["verdict"], "no run finished: interrupted", "{v}");
    assert!(v["matrix"][1]["failed"].is_null(), "{v}");
    // Runs, not rows: the interrupted case has a row and no run (issue 33: "2 of 2").
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("PARTIAL: interrupted; the table has the 1 of 2 run(s) that finished"), "{stderr}");
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

/// Found in issue 33: an experiment of three runs stopped in its second said "3 of 3 runs
/// finished" when one had. One case of three repeats, SIGINT in the second: 1 of 3.
#[test]
fn sigint_in_the_second_repeat_of_an_experiment_counts_the_runs_that_finished() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let (file, results) =
        study(dir.path(), "repeats = 3\n", &server.url(), "concurrency = 1\n[factors.one]\nonly = {}\n");
    let out = interrupt_in(
        &["experiment", file.to_str().unwrap(), "-o", results.to_str().unwrap()],
        &results.join("TC0.r2.brg.part"),
        libc::SIGINT,
    );
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PARTIAL: interrupted; the table has the 1 of 3 run(s) that finished"), "{text}");
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

/// Ground truth, the origin's own count: every request it counted is in the results file,
/// finished, or among the at most `in_flight` the signal cut (counted unfinished).
fn assert_counts(total: u64, unfinished: u64, origin: u64, in_flight: u64) {
    assert!(
        total <= origin && origin <= total + unfinished,
        "{total} finished + {unfinished} unfinished, origin {origin}"
    );
    assert!(unfinished <= in_flight, "{unfinished} unfinished, at most {in_flight} were in flight");
}

/// The report printed after SIGHUP counts every request the origin counted, and the
/// temporary results file of a run without `-o` is gone. Before SIGHUP was handled: no
/// report, about a third of the requests missing from the file, and the file left behind.
#[test]
fn sighup_mid_run_prints_the_report_of_every_request_the_origin_counted_and_leaves_no_temp_file() {
    let server = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    let out = interrupt_after(
        &["run", "--rate", "500", "--max-in-flight", "8", "-d", "60s", "--format", "json", &server.url()],
        tmp.path(),
        &server,
        300,
        libc::SIGHUP,
    );
    assert_eq!(out.status.code(), Some(129), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!(v["interrupted"], true, "{v}");
    let count = |k: &str| v["requests"][k].as_u64().unwrap();
    assert_counts(count("total"), count("unfinished"), server.requests(), 8);
    assert_eq!(names(tmp.path()), Vec::<String>::new(), "the temporary results file is removed");
}

/// SIGTERM (what `timeout`, docker and CI send) with `-o`: the file holds every request the
/// origin counted, and nothing is left in the temp dir.
#[test]
fn sigterm_mid_run_keeps_every_request_the_origin_counted_in_the_results_file() {
    let server = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.brg");
    let out = interrupt_after(
        &["run", "-c", "4", "-d", "60s", "--format", "json", "-o", file.to_str().unwrap(), &server.url()],
        tmp.path(),
        &server,
        2_000,
        libc::SIGTERM,
    );
    assert_eq!(out.status.code(), Some(143), "{}", String::from_utf8_lossy(&out.stderr));
    let s = summary(file);
    assert!(s.interrupted);
    assert_counts(s.requests.total, s.requests.unfinished, server.requests(), 4);
    assert_eq!(json(&out)["requests"]["total"], s.requests.total, "the report is the file's");
    assert_eq!(names(tmp.path()), Vec::<String>::new());
}

/// A sweep without `-o` writes one temporary file per level: after SIGHUP in the second
/// level, the partial table's levels add up to the origin's count (but for the requests in
/// flight) and no file is left.
#[test]
fn sighup_in_the_second_level_of_a_sweep_counts_what_the_origin_counted_and_leaves_no_temp_file() {
    let server = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    // 1,000 requests at 200/s is the first level (5 s); 1,300 lands inside the second.
    let out = interrupt_after(
        &["sweep", &server.url(), "--rate", "200,300", "--max-in-flight", "8", "--step", "5s", "--format", "json"],
        tmp.path(),
        &server,
        1_300,
        libc::SIGHUP,
    );
    assert_eq!(out.status.code(), Some(129), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!(v["partial"], true);
    let rows = v["levels"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    let total: u64 = rows.iter().map(|r| r["requests"].as_u64().unwrap()).sum();
    assert!(
        total <= server.requests() && server.requests() <= total + 8,
        "{total} in the table, {} at the origin",
        server.requests()
    );
    assert_eq!(names(tmp.path()), Vec::<String>::new(), "every level's temporary file is removed");
}

/// `serve --tls` removes the CA file it generated on SIGHUP as on SIGTERM, and exits 0.
#[test]
fn sighup_ends_serve_cleanly_and_removes_its_generated_ca_file() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = barrage()
        .args(["serve", "--tls", "--listen", "127.0.0.1:0", "--threads", "1"])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // The CA line follows the address: once it is printed, the handler is in place.
    while !line.contains("CA certificate") {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "serve ended before naming its CA");
    }
    assert_eq!(names(tmp.path()).len(), 1, "the CA file");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    assert!(child.wait().unwrap().success());
    assert_eq!(names(tmp.path()), Vec::<String>::new());
}

/// The longest a wait may take to end after ONE signal, with slack for a busy machine:
/// every wait below would otherwise last a minute or more.
const PROMPT: Duration = Duration::from_secs(3);

/// Asserts the child ended on the signal, promptly, with its exit code.
fn assert_prompt(stopped: &Stopped, code: i32) {
    let err = String::from_utf8_lossy(&stopped.output.stderr);
    assert_eq!(stopped.output.status.code(), Some(code), "{err}");
    assert!(stopped.took < PROMPT, "took {:?} after the signal: {err}", stopped.took);
}

fn has_files(dir: &Path) -> bool {
    !names(dir).is_empty()
}

/// `docker stop`, systemd and CI send one SIGTERM, then SIGKILL: a shard waiting for its
/// `--start-at` (up to a day) ends on the first one, removes its temporary results file
/// and reports the run it did not start. Before: it printed "stopping" and waited on.
#[test]
fn one_sigterm_ends_the_wait_for_start_at_at_once_and_leaves_no_temp_file() {
    let server = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 120;
    let args = ["run", "-c", "1", "-d", "2s", "--start-at", &at.to_string(), "--format", "json", &server.url()];
    // Its temporary results file is made once the handler is in place, before the wait.
    let stopped = interrupt_when(
        barrage().args(args).env("TMPDIR", tmp.path()),
        "a temp file",
        || has_files(tmp.path()),
        libc::SIGTERM,
    );
    assert_prompt(&stopped, 143);
    let v = json(&stopped.output);
    assert_eq!((v["interrupted"].as_bool(), v["requests"]["total"].as_u64()), (Some(true), Some(0)), "{v}");
    assert_eq!(server.requests(), 0, "nothing was sent before the start");
    assert_eq!(names(tmp.path()), Vec::<String>::new(), "the temporary results file is removed");
}

/// A `--at` command still running when the run is stopped is killed at once, not after the
/// 5 s grace a run that ends on its own gives it.
#[test]
fn one_sigterm_kills_a_running_at_command_at_once() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("started");
    let file = dir.path().join("run.brg");
    let command = format!("touch '{}'; sleep 60", mark.display());
    let args = ["run", "-c", "1", "-d", "60s", "--at", "0s", &command, "-o", file.to_str().unwrap(), &server.url()];
    let stopped = interrupt_when(barrage().args(args), "the --at command started", || mark.exists(), libc::SIGTERM);
    assert_prompt(&stopped, 143);
    assert!(summary(file).interrupted);
}

/// An experiment of two 1 s cases with `extra` in its file, into `dir/out`.
fn two_cases(dir: &Path, server: &RunningServer, extra: &str) -> (PathBuf, PathBuf) {
    let file = dir.join("study.toml");
    let text = format!(
        "duration = \"1s\"\n{extra}\n[base]\nurl = \"{}/bytes/100\"\n[factors.workers]\none = {{ concurrency = 1 }}\ntwo = {{ concurrency = 2 }}\n",
        server.url()
    );
    std::fs::write(&file, text).unwrap();
    (file, dir.join("out"))
}

/// The pause between an experiment's cases ends on one signal: the finished case is kept,
/// the table is partial, nothing temporary is left.
#[test]
fn one_sigterm_ends_an_experiments_pause_between_cases_at_once() {
    let server = origin(ServeConfig::default());
    let (dir, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (file, out) = two_cases(dir.path(), &server, "pause = \"10m\"");
    let first = out.join("TC0.r1.brg");
    let mut cmd = barrage();
    cmd.args(["experiment", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "--format", "json"]);
    // The first case's file gets its name once it finished: the pause has begun.
    let stopped = interrupt_when(cmd.env("TMPDIR", tmp.path()), "the first case", || first.exists(), libc::SIGTERM);
    assert_prompt(&stopped, 143);
    assert_eq!(json(&stopped.output)["partial"], true);
    assert!(!names(&out).iter().any(|f| f.starts_with("TC1")), "{:?}", names(&out));
    assert_eq!(names(tmp.path()), Vec::<String>::new());
}

/// A warm-up is a run: it ends on one signal, its temporary file goes, and no case's file
/// is left behind.
#[test]
fn one_sigterm_ends_an_experiments_warm_up_at_once() {
    let server = origin(ServeConfig::default());
    let (dir, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (file, out) = two_cases(dir.path(), &server, "warmup = \"10m\"");
    let mut cmd = barrage();
    cmd.args(["experiment", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "--format", "json"]);
    // The warm-up's results go to a temporary file: once it is there, the warm-up runs.
    let stopped = interrupt_when(cmd.env("TMPDIR", tmp.path()), "the warm-up", || has_files(tmp.path()), libc::SIGTERM);
    assert_prompt(&stopped, 143);
    assert_eq!(json(&stopped.output)["partial"], true);
    assert!(!names(&out).iter().any(|f| f.starts_with("TC")), "{:?}", names(&out));
    assert_eq!(names(tmp.path()), Vec::<String>::new());
}

/// PATH with a stand-in `nginx` first, in `dir`, that never answers (it sleeps, and says
/// its PID in `dir/nginx.pid`): a testbed waits for it for its whole readiness deadline (20 s).
fn path_with_a_silent_nginx(dir: &Path) -> std::ffi::OsString {
    use std::os::unix::fs::PermissionsExt;
    let nginx = dir.join("nginx");
    std::fs::write(&nginx, "#!/bin/sh\necho $$ > \"$0.pid.tmp\" && mv \"$0.pid.tmp\" \"$0.pid\"\nexec sleep 600\n")
        .unwrap();
    std::fs::set_permissions(&nginx, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut path = std::ffi::OsString::from(dir);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

/// Starts `cmd` with the silent nginx first on PATH (in `bin`), signals it once while its
/// testbed in `bed` waits for nginx to answer, and checks that it ended promptly with 143,
/// taking down what had started: the origins and nginx gone, the testbed's directory too.
fn interrupt_while_the_testbed_comes_up(cmd: &mut Command, bin: &Path, bed: &Path) -> Output {
    let mut started = Vec::new();
    let ready = || {
        // Every server started (nginx last), so the supervisor waits for nginx to answer.
        let Some(state) = barrage_testbed::State::load(bed) else { return false };
        started = state.servers.iter().filter_map(|s| s.pid).collect();
        started.len() == state.servers.len() && bin.join("nginx.pid").exists()
    };
    let stopped = interrupt_when(cmd.env("PATH", path_with_a_silent_nginx(bin)), "nginx started", ready, libc::SIGTERM);
    assert_prompt(&stopped, 143);
    let nginx: u32 = std::fs::read_to_string(bin.join("nginx.pid")).unwrap().trim().parse().unwrap();
    let left: Vec<u32> = started.into_iter().chain([nginx]).filter(|p| crate::testbed::alive(*p)).collect();
    assert!(left.is_empty(), "still running: {left:?}");
    assert!(!bed.exists(), "the testbed's directory is removed");
    stopped.output
}

/// An experiment waiting for its testbed to answer ends on one signal, takes down what had
/// started and prints its (empty) table as partial. Before: the wait ran its 20 s.
#[test]
fn one_sigterm_ends_an_experiments_wait_for_its_testbed_and_takes_it_down() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("study.toml");
    let text = "duration = \"1s\"\n[base]\ntestbed = \"nginx-lb\"\nurl = \"{nginx-lb}/bytes/100\"\n\
                [factors.workers]\none = { concurrency = 1 }\n";
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    let mut cmd = barrage();
    cmd.args(["experiment", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "--format", "json"]);
    let output = interrupt_while_the_testbed_comes_up(&mut cmd, dir.path(), &out.join("testbed-nginx-lb"));
    assert_eq!(json(&output)["partial"], true);
}

/// `testbed up` interrupted while its testbed comes up takes it down: nobody would know it
/// is there. Before: `up` died and left the supervisor bringing the testbed up.
#[test]
fn one_sigterm_ends_testbed_up_while_it_comes_up_and_takes_the_testbed_down() {
    let dir = tempfile::tempdir().unwrap();
    let bed = dir.path().join("bed");
    let mut cmd = barrage();
    cmd.args(["testbed", "up", "nginx-lb", "--backends", "1", "--dir", bed.to_str().unwrap()]);
    interrupt_while_the_testbed_comes_up(&mut cmd, dir.path(), &bed);
}

/// A think time (here ten minutes) ends on one signal, as every wait inside a run does.
#[test]
fn one_sigterm_ends_a_think_time_at_once() {
    let server = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    let args = ["run", "-c", "2", "-d", "1h", "--think-time", "10m", "--format", "json", &server.url()];
    let mut cmd = barrage();
    let stopped = interrupt_when(
        cmd.args(args).env("TMPDIR", tmp.path()),
        "two requests",
        || server.requests() >= 2,
        libc::SIGTERM,
    );
    assert_prompt(&stopped, 143);
    assert_eq!(json(&stopped.output)["requests"]["total"], 2, "each worker's one request, then thinking");
    assert_eq!(names(tmp.path()), Vec::<String>::new());
}

/// Found in issue 33: `serve --tls 2>&1 | head -1` left its generated CA file behind. Its
/// last word ("served N requests") went to a stderr nobody read any more, which panicked
/// and ended the process before the file was removed. Now the servers are shut down (the
/// file removed) first, and a closed stderr costs only that line: exit 0, no file left.
#[test]
fn serve_removes_its_generated_ca_file_when_its_output_pipe_closes() {
    use std::io::BufRead;
    use std::os::fd::{FromRawFd, OwnedFd};
    let tmp = tempfile::tempdir().unwrap();
    let mut fds = [0; 2];
    // Close-on-exec, as a shell's pipe: the child must not hold the read end itself.
    // SAFETY: `fds` has room for the two descriptors pipe2(2) returns, owned from here on.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let mut child = barrage()
        .args(["serve", "--tls", "--listen", "127.0.0.1:0", "--threads", "1"])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::from(write.try_clone().unwrap()))
        .stderr(Stdio::from(write))
        .spawn()
        .unwrap();
    let mut output = std::io::BufReader::new(std::fs::File::from(read));
    let mut line = String::new();
    while !line.contains("CA certificate") {
        line.clear();
        assert!(output.read_line(&mut line).unwrap() > 0, "serve ended before naming its CA");
    }
    assert_eq!(names(tmp.path()).len(), 1, "the CA file");
    // `| head -1` is done: nobody reads stdout or stderr any more.
    drop(output);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(names(tmp.path()), Vec::<String>::new(), "the CA file is removed ({status})");
    assert!(status.success(), "{status}");
}
