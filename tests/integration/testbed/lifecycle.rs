//! A testbed's life: `stop`, `start` and `status` by name, its usage errors, and `down`
//! leaving no process and no state, also after a supervisor or a study that died, without
//! ever killing a process it did not start.

use super::{alive, Testbed};
use crate::util::barrage;
use barrage_testbed::State;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[test]
fn down_leaves_no_process_and_no_state_even_when_the_test_fails() {
    let Some(probe) = Testbed::up("all", &["--tls"]) else { return };
    // A test that fails with a testbed up: its guard takes it down while unwinding.
    let dir = probe.dir().to_path_buf();
    let pids = probe.pids();
    let squid_shm = probe.state.server("squid").unwrap().spec.leftovers.clone();
    assert!(!squid_shm.is_empty() && !shm_files(&squid_shm).is_empty(), "squid keeps segments while it runs");
    let failed = std::thread::spawn(move || {
        let _bed = probe;
        panic!("a failing test");
    })
    .join();
    assert!(failed.is_err());
    assert_eq!(pids.len(), 7, "two origins, nginx, haproxy, varnish, hitch and squid: {pids:?}");
    for pid in pids {
        assert!(!alive(pid), "server {pid} still runs");
    }
    // Nor what ran beside a server (varnishncsa, in varnish's process group): nothing left
    // names the testbed's directory on its command line.
    let named: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok_and(alive))
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&*dir.to_string_lossy()))
        .collect();
    assert!(named.is_empty(), "{named:?}");
    assert!(!dir.exists(), "state removed: {}", dir.display());
    let left = shm_files(&squid_shm);
    assert!(left.is_empty(), "squid's shared memory removed: {left:?}");
}

/// Files in /dev/shm whose path starts with one of `prefixes`.
fn shm_files(prefixes: &[PathBuf]) -> Vec<PathBuf> {
    let all: Vec<PathBuf> =
        std::fs::read_dir("/dev/shm").map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    all.into_iter()
        .filter(|f| prefixes.iter().any(|p| f.to_string_lossy().starts_with(&*p.to_string_lossy())))
        .collect()
}

#[test]
fn stop_and_start_one_server_and_status_show_it() {
    let Some(bed) = Testbed::up("direct", &["--backends", "2"]) else { return };
    let out = bed.command(&["stop", "origin-2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status = String::from_utf8(bed.command(&["status"]).stdout).unwrap();
    let line = status.lines().find(|l| l.starts_with("origin-2")).unwrap();
    assert!(line.ends_with("stopped"), "{status}");
    assert!(!barrage_testbed::answers_http(bed.state.server("origin-2").unwrap().spec.listen));
    let out = bed.command(&["start", "origin-2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(barrage_testbed::answers_http(bed.state.server("origin-2").unwrap().spec.listen), "same port again");
    let out = bed.command(&["stop", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no server 'nosuch'") && err.contains("origin-1, origin-2"), "{err}");
    // A second testbed in the same directory is refused.
    let out = barrage().args(["testbed", "up", "direct", "--dir"]).arg(bed.dir()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already up"));
}

#[test]
fn testbed_usage_errors_are_one_line_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    // A directory with someone's files is never a testbed's: down would remove it.
    let busy = tempfile::tempdir().unwrap();
    std::fs::write(busy.path().join("notes.txt"), "mine").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["up".into(), "direct".into(), "--dir".into(), busy.path().display().to_string()], "is not empty"),
        (vec!["up".into(), "mesh".into()], "unknown topology 'mesh'"),
        (vec!["up".into(), "direct".into(), "--balance".into(), "random".into()], "--balance"),
        (
            vec!["up".into(), "direct".into(), "--shape".into(), "latency=fast".into()],
            "invalid shape part 'latency=fast'",
        ),
        (vec!["up".into(), "direct".into(), "--shape".into(), "capacity=4,errors=150%".into()], "'errors=150%'"),
        (vec!["up".into(), "direct".into(), "--shape".into(), "origin-3:latency=1ms".into()], "no origin 'origin-3'"),
        (
            vec!["up".into(), "haproxy-lb".into(), "--backends".into(), "3".into(), "--weights".into(), "3,1".into()],
            "2 weight(s) for 3 origin(s)",
        ),
        (vec!["up".into(), "haproxy-lb".into(), "--weights".into(), "3,x".into()], "--weights"),
        (vec!["up".into(), "caddy".into(), "--weights".into(), "1,1".into()], "Caddy 2.6 has no weighted balancing"),
        (
            vec!["set".into(), "origin-1".into(), "speed=2".into(), "--dir".into(), dir.path().display().to_string()],
            "unknown key 'speed'",
        ),
        (
            vec![
                "set".into(),
                "origin-1".into(),
                "latency=1ms".into(),
                "--dir".into(),
                dir.path().display().to_string(),
            ],
            "no testbed is up",
        ),
        (vec!["status".into(), "--dir".into(), dir.path().display().to_string()], "no testbed is up"),
        (vec!["stop".into(), "origin-1".into(), "--dir".into(), dir.path().display().to_string()], "no testbed is up"),
        (vec!["down".into(), "--dir".into(), dir.path().display().to_string()], "no testbed is up"),
    ];
    for (args, want) in cases {
        let out = barrage().arg("testbed").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(busy.path().join("notes.txt").exists());
}

#[test]
fn down_cleans_up_after_a_supervisor_that_died() {
    let Some(bed) = Testbed::up("direct", &[]) else { return };
    let pids = bed.pids();
    // SAFETY: kill only sends a signal, to the supervisor this test started.
    unsafe { libc::kill(bed.state.supervisor_pid as i32, libc::SIGKILL) };
    // Bounded wait until its socket stops answering.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while barrage_testbed::is_up(bed.dir()) {
        assert!(std::time::Instant::now() < deadline, "the supervisor did not die");
        std::thread::yield_now();
    }
    let out = bed.command(&["status"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("supervisor"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = bed.command(&["down"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for pid in pids {
        assert!(!alive(pid), "origin {pid} killed by down");
    }
    assert!(!bed.dir().exists());
    // The guard's own `down` then finds nothing: that is the only error it may see.
    std::mem::forget(bed);
}

/// A process the test owns, that a planted state file names; killed when dropped.
struct Victim(std::process::Child);

impl Victim {
    fn spawn() -> Victim {
        Victim(std::process::Command::new("sleep").arg("60").spawn().expect("sleep runs"))
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A state file, as a dead supervisor would have left it in `dir`, naming `victim` as its
/// one server (program `sleep`, so that a check of the command line would pass), with
/// `started` as the start time it recorded.
fn plant_state(dir: &Path, victim: u32, started: Option<u64>) {
    let options = barrage_testbed::Options {
        topology: barrage_testbed::Topology::Direct,
        backends: 1,
        tls: false,
        balance: barrage_testbed::Balance::RoundRobin,
        barrage: "sleep".into(),
        shapes: Vec::new(),
        weights: Vec::new(),
        memory: None,
        eviction: None,
        keep_logs: None,
    };
    let mut spec = barrage_testbed::plan(&options, dir).unwrap().remove(0);
    spec.program = "sleep".into();
    let server =
        barrage_testbed::ServerState { spec, pid: Some(victim), started, status: barrage_testbed::Status::Running };
    let state =
        State { options, dir: dir.into(), supervisor_pid: u32::MAX, owner: None, ca: None, servers: vec![server] };
    std::fs::write(dir.join("testbed.json"), serde_json::to_vec(&state).unwrap()).unwrap();
}

#[test]
fn down_never_kills_a_process_the_supervisor_did_not_start() {
    // The PID was reused: the state file's start time is not the process's.
    let dir = tempfile::tempdir().unwrap();
    let mut victim = Victim::spawn();
    plant_state(dir.path(), victim.pid(), Some(1));
    let out = barrage().args(["testbed", "down", "--dir"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(victim.alive(), "down killed a process it did not start");
    assert!(!dir.path().exists(), "down removed the dead testbed's directory");
    // No start time recorded (a file from an older barrage, or forged): nothing is killed.
    let dir = tempfile::tempdir().unwrap();
    plant_state(dir.path(), victim.pid(), None);
    let out = barrage().args(["testbed", "down", "--dir"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(victim.alive(), "down killed a process it did not start");
}

#[test]
fn a_state_directory_others_can_write_is_refused() {
    let victim_start = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat.rsplit(')').next().unwrap().split_whitespace().nth(19).unwrap().parse::<u64>().unwrap()
    };
    let mut victim = Victim::spawn();
    let started = Some(victim_start(victim.pid()));
    // Writable by everyone: whoever planted this file even knew the start time.
    let open = tempfile::tempdir().unwrap();
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    plant_state(open.path(), victim.pid(), started);
    // A link to a directory elsewhere.
    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("bed");
    std::os::unix::fs::symlink(open.path(), &link).unwrap();
    let mut cases = vec![(open.path().to_path_buf(), "writable by other users"), (link, "symbolic link")];
    // Owned by another user (only root can make one).
    let foreign = tempfile::tempdir().unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        plant_state(foreign.path(), victim.pid(), started);
        std::os::unix::fs::chown(foreign.path(), Some(65534), Some(65534)).unwrap();
        std::os::unix::fs::chown(foreign.path().join("testbed.json"), Some(65534), Some(65534)).unwrap();
        cases.push((foreign.path().to_path_buf(), "belongs to user 65534"));
    }
    for (dir, why) in cases {
        for verb in [&["down"][..], &["status"], &["stop", "origin-1"], &["up", "direct"]] {
            let out = barrage().arg("testbed").args(verb).arg("--dir").arg(&dir).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{verb:?} {}: {err}", dir.display());
            assert!(err.contains(why) && err.contains("refusing"), "{verb:?} {}: {err}", dir.display());
            assert!(victim.alive(), "{verb:?} {} killed the planted PID", dir.display());
        }
        assert!(dir.join("testbed.json").exists(), "{} was left alone", dir.display());
    }
}

/// An experiment of two 1 s cases against a `direct` testbed it brings up, with a long pause
/// between them, started and SIGKILLed (which no handler sees) in that pause, when its
/// testbed is up. Returns the experiment file, its results directory and its testbed's
/// state as it was.
fn kill_an_experiment_in_its_pause(dir: &Path) -> (PathBuf, PathBuf, State) {
    let file = dir.join("study.toml");
    let text = "duration = \"1s\"\npause = \"10m\"\n[base]\ntestbed = \"direct\"\nurl = \"{origin-1}/bytes/100\"\n\
                [factors.workers]\none = { concurrency = 1 }\ntwo = { concurrency = 2 }\n";
    std::fs::write(&file, text).unwrap();
    let results = dir.join("results");
    let mut child = barrage()
        .arg("experiment")
        .arg(&file)
        .arg("-o")
        .arg(&results)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The first case's file gets its name once it finished: the pause has begun.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    while !results.join("TC0.r1.brg").exists() {
        assert!(std::time::Instant::now() < deadline, "the first case never finished");
        // Paces the polling only: the file is what synchronises.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let state = State::load(&results.join("testbed-direct")).expect("the testbed is up");
    child.kill().unwrap();
    child.wait().unwrap();
    (file, results, state)
}

/// The testbed's supervisor and servers, by PID.
fn processes(state: &State) -> Vec<u32> {
    state.servers.iter().filter_map(|s| s.pid).chain([state.supervisor_pid]).collect()
}

/// A SIGKILLed study's testbed goes down by itself: its supervisor ends its servers when
/// the process that brought it up is gone, and their ports are free. Before: the
/// supervisor, the origins and their ports stayed until someone ran `testbed down`.
#[test]
fn a_sigkilled_experiment_takes_its_testbed_down_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, results, state) = kill_an_experiment_in_its_pause(dir.path());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while processes(&state).into_iter().any(alive) {
        assert!(std::time::Instant::now() < deadline, "still running 10 s after the kill: {:?}", processes(&state));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for s in &state.servers {
        assert!(std::net::TcpStream::connect(s.spec.listen).is_err(), "{} still listens", s.spec.name);
    }
    assert!(!results.join("testbed-direct").exists(), "the testbed's directory is removed");
}

/// `--resume` right after a SIGKILL takes down the testbed its dead owner left (or waits
/// for it to go down) and finishes the experiment. Before: "a testbed is already up", exit 2.
#[test]
fn resume_after_a_sigkill_takes_the_stale_testbed_down_and_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let (file, results, state) = kill_an_experiment_in_its_pause(dir.path());
    let out = barrage()
        .arg("experiment")
        .arg(&file)
        .arg("-o")
        .arg(&results)
        .args(["--resume", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["partial"].as_bool(), v["matrix"][1]["runs"].as_u64()), (Some(false), Some(1)), "{v}");
    let left: Vec<u32> = processes(&state).into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "the first testbed's processes still run: {left:?}");
    assert!(!results.join("testbed-direct").exists(), "the second testbed went down at the end too");
}
