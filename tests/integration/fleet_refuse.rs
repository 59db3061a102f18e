//! Issue 39: what a collector refuses, and how. A shard of another split, a second process
//! given the same `--shard`, and a shard of another plan are refused (at the rendezvous, or
//! at their first data without one), each stops at once with exit code 2, and the fleet's
//! run goes on without them; a rendezvous with an address that is not a collector fails at
//! once, and one with a collector not up yet says it waits; `collect`'s own errors say their
//! cause once and leave nothing behind.

use crate::fleet::{collect, wait_for, Collect};
use crate::util::{barrage, origin, refused_url};
use barrage_server::ServeConfig;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `run ARGS --shard I/N --report-to URL [--rendezvous]`, JSON on stdout, its file `NAME.brg`.
fn member(dir: &Path, name: &str, shard: &str, c: &Collect, args: &[&str], rendezvous: bool) -> Child {
    barrage()
        .arg("run")
        .args(args)
        .args(["--shard", shard, "--report-to", &c.url, "--format", "json"])
        .args(rendezvous.then_some("--rendezvous"))
        .args(["-o", dir.join(format!("{name}.brg")).to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a shard the collector refuses: it must end with exit code 2 within `within`
/// (its run was planned much longer); its stderr.
fn refused(mut child: Child, within: Duration) -> String {
    let began = Instant::now();
    let code = wait_for(&mut child, Duration::from_secs(60));
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(code, Some(2), "a refused shard exits 2: {err}");
    assert_eq!(err.trim().lines().count(), 1, "a refused shard says why in one line: {err}");
    assert!(began.elapsed() < within, "a refused shard stops at once, not after its run: {err}");
    err
}

/// Waits (at most a minute) until the collector has shard `i` ready at its rendezvous.
fn wait_ready(c: &Collect, i: usize) {
    c.wait_until(&format!("shard {i} comes to the rendezvous"), |s| !s["shards"][i]["clock"].is_null());
}

#[test]
fn a_shard_of_another_split_is_refused_and_stops_at_once_with_exit_2() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let c = collect(dir.path(), 3, &["--lateness", "2s"]);
    let url = format!("{}/bytes/1k", server.url());
    // Shard 0 of 2, to a collector of 3: refused at its first post; its 60 s run stops.
    let run = member(dir.path(), "other", "0/2", &c, &[&url, "--rate", "50", "-d", "60s"], false);
    let err = refused(run, Duration::from_secs(30));
    assert!(
        err.contains("refused the results, so this shard stopped: shard 0/2 does not belong here: this collector collects 3 shard(s)"),
        "{err}"
    );
    // The collector, stopped before any shard of its own run sent data, says that alone.
    unsafe { libc::kill(c.child.id() as i32, libc::SIGINT) };
    let (code, _, stderr) = c.wait(Duration::from_secs(30));
    assert_eq!(code, Some(130), "{stderr}");
    let last = stderr.trim().lines().last().unwrap_or_default();
    assert_eq!(last, "barrage: error: the collector was stopped before any shard sent data", "{stderr}");
    assert!(!stderr.contains("within 600s") && !stderr.contains("lost"), "{stderr}");
    assert!(stderr.contains("barrage collect: refused: shard 0/2 does not belong here"), "{stderr}");
}

#[test]
fn a_second_shard_0_and_a_shard_of_another_plan_are_refused_at_the_rendezvous() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    // Lateness to spare: the right shard 1 comes only after the refused ones ended.
    let c = collect(dir.path(), 2, &["--lateness", "10s"]);
    let url = format!("{}/bytes/1k", server.url());
    let plan = [url.as_str(), "--rate", "50", "-d", "2s"];
    let first = member(dir.path(), "s0", "0/2", &c, &plan, true);
    wait_ready(&c, 0);
    let twice = member(dir.path(), "again", "0/2", &c, &plan, true);
    let other = member(dir.path(), "other", "1/2", &c, &[&url, "--rate", "60", "-d", "2s"], true);
    let err = refused(twice, Duration::from_secs(30));
    assert!(err.contains("shard 0/2 is already here, sent by another process"), "{err}");
    let err = refused(other, Duration::from_secs(30));
    // What differs is named: the rate, and the clients that follow it.
    assert!(err.contains("shard 1/2 runs a different plan than shard 0/2 (clients 60, not 50; load.open.pacer.constant_per_sec 60.0, not 50.0)"), "{err}");
    // The right shard 1 comes: the run starts, and is the two shards' alone.
    let mut shards = vec![first, member(dir.path(), "s1", "1/2", &c, &plan, true)];
    for s in &mut shards {
        assert_eq!(wait_for(s, Duration::from_secs(60)), Some(0));
    }
    let (code, live, stderr) = c.wait(Duration::from_secs(60));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(live["requests"]["total"], 100, "{stderr}");
    assert!(stderr.contains("barrage collect: refused: shard 0/2 is already here"), "{stderr}");
    assert!(stderr.contains("barrage collect: refused: shard 1/2 runs a different plan"), "{stderr}");
    // While it waited, the collector said for which shard.
    assert!(stderr.contains("barrage collect: shard 0/2 is at the rendezvous; waiting for 1/2"), "{stderr}");
}

#[test]
fn without_a_rendezvous_a_second_shard_0_and_another_plan_are_refused_at_their_first_data() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    // Lateness to spare: the right shard 1 comes only after the refused ones ended.
    let c = collect(dir.path(), 2, &["--lateness", "10s"]);
    let url = format!("{}/bytes/1k", server.url());
    let plan = [url.as_str(), "--rate", "50", "-d", "6s"];
    let first = member(dir.path(), "s0", "0/2", &c, &plan, false);
    c.wait_for_interval(0, 0);
    let twice = member(dir.path(), "again", "0/2", &c, &plan, false);
    let other = member(dir.path(), "other", "1/2", &c, &[&url, "--rate", "60", "-d", "6s"], false);
    assert!(refused(twice, Duration::from_secs(20)).contains("shard 0/2 is already here"));
    let err = refused(other, Duration::from_secs(20));
    // Named from the header of its first post, which the shard sends with the file's start.
    assert!(err.contains("shard 1/2 runs a different plan than shard 0/2 (clients 60, not 50; load.open.pacer.constant_per_sec 60.0, not 50.0)"), "{err}");
    // Its own file says who stopped it, not Ctrl-C.
    let kept = barrage_metrics::summary::summarize(&[dir.path().join("other.brg")]).unwrap();
    assert!(
        kept.stopped_by.as_deref().is_some_and(|w| w.contains("refused this shard: shard 1/2 runs a different plan")),
        "{:?}",
        kept.stopped_by
    );
    let mut shards = vec![first, member(dir.path(), "s1", "1/2", &c, &plan, false)];
    for s in &mut shards {
        assert_eq!(wait_for(s, Duration::from_secs(60)), Some(0));
    }
    let (code, live, stderr) = c.wait(Duration::from_secs(60));
    assert_eq!(code, Some(0), "{stderr}");
    // The collector's copy of shard 0 is shard 0's file, not mixed with the second one's.
    let own = barrage_metrics::summary::summarize(&[dir.path().join("s0.brg"), dir.path().join("s1.brg")]).unwrap();
    assert_eq!(live["requests"]["total"], own.requests.total, "{stderr}");
    assert_eq!(own.requests.total, 300);
}

#[test]
fn a_rendezvous_with_what_is_not_a_collector_fails_at_once_and_one_not_up_yet_is_said() {
    let server = origin(ServeConfig::default());
    let began = Instant::now();
    let out = barrage()
        .args(["run", &server.url(), "-n", "1", "--shard", "0/1", "--report-to", &server.url(), "--rendezvous"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a barrage collector") && err.lines().count() == 1, "{err}");
    assert!(began.elapsed() < Duration::from_secs(20), "not after the minute it waits for a collector");
    // Without a rendezvous, its first post finds out as fast, and the run stops.
    let began = Instant::now();
    let out = barrage()
        .args(["run", &server.url(), "--rate", "20", "-d", "60s", "--shard", "0/1", "--report-to", &server.url()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a barrage collector") && err.trim().lines().count() == 1, "{err}");
    assert!(began.elapsed() < Duration::from_secs(20), "a refused shard stops at once, not after its run: {err}");
    // Nothing there yet: it says at once that it waits, and for how long.
    let mut waiting = barrage()
        .args(["run", &server.url(), "-n", "1", "--shard", "0/1", "--report-to", &refused_url(), "--rendezvous"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = waiting.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(err).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(20));
    waiting.kill().unwrap();
    waiting.wait().unwrap();
    let line = line.expect("a line at once");
    assert!(
        line.contains("--rendezvous: waiting up to 60 s (until ")
            && line.contains(" UTC) for the collector at http://127.0.0.1:"),
        "{line}"
    );
    assert!(line.contains("Connection refused"), "the cause, not hyper's 'client error (Connect)': {line}");
}

/// A collector that cannot be reached, without a rendezvous to wait for it: the shard says
/// so as soon as its first post fails, runs on, keeps its file, and says at the end what
/// never reached the collector.
#[test]
fn an_unreachable_collector_is_said_at_once_and_the_file_kept() {
    let server = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s0.brg");
    let out = barrage()
        .args(["run", &format!("{}/bytes/1k", server.url()), "--rate", "20", "-d", "2s", "--shard", "0/3"])
        .args(["--report-to", &refused_url(), "-o", file.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines.first().is_some_and(|l| l.contains("--report-to: cannot reach the collector at http://127.0.0.1:")),
        "{err}"
    );
    assert!(lines.iter().any(|l| l.contains("never reached the collector")), "{err}");
    // Its share of the 40: arrivals 0, 3, ..., 39.
    assert_eq!(barrage_metrics::summary::summarize(&[file]).unwrap().requests.total, 14);
}

#[test]
fn report_to_needs_a_shard_and_takes_no_credentials() {
    let out = barrage()
        .args(["run", "http://127.0.0.1:9/", "-n", "1", "--report-to", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--shard"), "{err}");
    let out = barrage()
        .args(["run", "http://127.0.0.1:9/", "-n", "1", "--shard", "0/1"])
        .args(["--report-to", "http://u:s3cret@127.0.0.1:9/"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the collector takes no user or password") && !err.contains("s3cret"), "{err}");
}

#[test]
fn collect_says_its_errors_cause_once_and_leaves_no_directory_behind() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = taken.local_addr().unwrap().to_string();
    let fleet = dir.path().join("fleet");
    let out = barrage()
        .args(["collect", "--shards", "2", "--listen", &at, "--dir", fleet.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("--listen {at}: ")) && err.matches("in use").count() == 1, "{err}");
    assert!(!fleet.exists(), "a collector that could not listen made no directory");
    // Nor one whose /metrics could not listen, or with a format it cannot write; each said
    // at once, naming the flag.
    for (flag, value, said) in [
        ("--metrics-addr", at.as_str(), format!("--metrics-addr: cannot listen on {at}")),
        ("--format", "hdr-log", "--format hdr-log is for `barrage report`".to_string()),
    ] {
        let out = barrage()
            .args([
                "collect",
                "--shards",
                "2",
                "--listen",
                "127.0.0.1:0",
                flag,
                value,
                "--dir",
                fleet.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!((out.status.code(), err.lines().count()), (Some(2), 1), "{err}");
        assert!(err.contains(&said) && !fleet.exists(), "{err}");
    }
    std::fs::create_dir(&fleet).unwrap();
    std::fs::write(fleet.join("shard-0.brg"), "another run's").unwrap();
    let out = barrage()
        .args(["collect", "--shards", "2", "--listen", "127.0.0.1:0", "--dir", fleet.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("not an empty directory of yours").count(), 1, "{err}");
}

#[test]
fn collect_names_its_default_directory_by_the_utc_time_its_help_says() {
    let cwd = tempfile::tempdir().unwrap();
    let mut child = barrage()
        .args(["collect", "--shards", "1", "--listen", "127.0.0.1:0"])
        .current_dir(cwd.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    wait_for(&mut child, Duration::from_secs(30));
    let made: Vec<String> =
        std::fs::read_dir(cwd.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let [name] = made.as_slice() else { panic!("one directory: {made:?}") };
    // fleet-20261128T235959Z: 8 digits, T, 6 digits, Z.
    let stamp = name.strip_prefix("fleet-").unwrap_or_default();
    let shape: String = stamp.chars().map(|c| if c.is_ascii_digit() { '9' } else { c }).collect();
    assert_eq!(shape, "99999999T999999Z", "{name}");
    assert!(line.contains(&format!("their files in {name}")), "{line}");
    let help = barrage().args(["collect", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("[default: fleet-<UTC time>, as fleet-20261128T235959Z]"), "{help}");
}
