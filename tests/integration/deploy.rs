//! deploy/: the Ansible playbook over three "hosts" on this machine, and the Kubernetes Jobs,
//! validated offline and run locally as the kubelet would. Every merge is checked against
//! the count of the origin the shards loaded.

use crate::util::{http_get, origin, require};
use barrage_server::ServeConfig;
use barrage_testbed::program_path;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy");

/// One playbook at a time: each starts three shards and a dozen Python processes, and its
/// lead time must cover launching them on this 2-core machine.
static ANSIBLE: Mutex<()> = Mutex::new(());

/// The playbook's bound: copying the debug binary three times, the lead time, the run, the
/// fetch and the merge.
const PLAYBOOK_LIMIT: Duration = Duration::from_secs(300);

#[test]
fn ansible_runs_three_shards_from_their_own_addresses_and_merges_exactly() {
    if !require("ansible-playbook", program_path("ansible-playbook").is_some()) {
        return;
    }
    let _one = ANSIBLE.lock().unwrap_or_else(|e| e.into_inner());
    let o = origin(ServeConfig::default());
    let relay = Relay::start(o.addr());
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = playbook(
        tmp.path(),
        serde_json::json!({
            "barrage_targets": [relay.url()],
            "barrage_concurrency": 3,
            "barrage_count": 300,
        }),
    );
    // First, so that a failing test leaves nothing running either.
    assert_nothing_left(tmp.path());
    assert!(status.success(), "ansible-playbook failed ({status}):\n{out}");

    let run = run_dir(tmp.path());
    let shards: Vec<PathBuf> = (0..3).map(|i| run.join(format!("shard-{i}.brg"))).collect();
    for s in &shards {
        assert!(s.is_file(), "{} not fetched:\n{out}", s.display());
    }
    // The merged total is -n exactly, and what the origin itself counted.
    let served = stats_requests(o.addr());
    let json: Value = serde_json::from_str(&read(&run.join("report.json"))).unwrap();
    assert_eq!(json["requests"]["total"], 300, "{}", json["requests"]);
    assert_eq!(served, 300, "the origin's count");
    let text = read(&run.join("report.txt"));
    assert!(out.contains(text.lines().next().unwrap()), "the report is also on the playbook's output");
    assert!(read(&run.join("report.html")).contains("<html"));
    assert_eq!(xlsx_requests(&run.join("report.xlsx")), 300.0);
    assert_three_shards(&json, &text, 100);
    // Each host's connections came from its own loopback address, and from no other.
    let sources = relay.sources();
    let expected: Vec<IpAddr> = ["127.0.0.2", "127.0.0.3", "127.0.0.4"].map(|a| a.parse().unwrap()).to_vec();
    assert_eq!(sources.keys().copied().collect::<Vec<_>>(), expected, "connections by source: {sources:?}");
}

/// With `barrage_collect`, the controller runs `barrage collect` and the shards stream to it
/// and start when it says (their clocks measured): its report (live.json) is the merge of
/// the fetched files (report.json), figure for figure, and the origin's count.
#[test]
fn ansible_collects_the_shards_live_and_the_collector_reports_the_merge() {
    if !require("ansible-playbook", program_path("ansible-playbook").is_some()) {
        return;
    }
    let _one = ANSIBLE.lock().unwrap_or_else(|e| e.into_inner());
    let o = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    let free = crate::util::refused_url();
    let listen = free.trim_start_matches("http://").trim_end_matches('/');
    let (out, status) = playbook(
        tmp.path(),
        serde_json::json!({
            "barrage_targets": [o.url()],
            "barrage_rate": 300,
            "barrage_duration": "3s",
            "barrage_collect": true,
            "barrage_collect_listen": listen,
        }),
    );
    assert_nothing_left(tmp.path());
    assert!(status.success(), "ansible-playbook failed ({status}):\n{out}");
    let run = run_dir(tmp.path());
    let without_paths = |mut v: Value| {
        v.as_object_mut().unwrap().remove("files");
        for s in v["shards"].as_array_mut().into_iter().flatten() {
            s.as_object_mut().unwrap().remove("file");
        }
        v
    };
    let live: Value = serde_json::from_str(&read(&run.join("live.json"))).unwrap();
    let merged: Value = serde_json::from_str(&read(&run.join("report.json"))).unwrap();
    assert_eq!(live["requests"]["total"], 900, "{}", live["requests"]);
    assert_eq!(stats_requests(o.addr()), 900, "the origin's count");
    assert_eq!(without_paths(live.clone()), without_paths(merged), "the collector's report is the merge");
    for s in live["shards"].as_array().unwrap() {
        assert!(s["clock_offset_us"].as_i64().is_some_and(|o| o.abs() < 2_000), "measured: {s}");
    }
    assert!(read(&run.join("live.html")).contains("<html"));
}

#[test]
fn ansible_stops_a_shard_that_outlives_its_bound_and_fails() {
    if !require("ansible-playbook", program_path("ansible-playbook").is_some()) {
        return;
    }
    let _one = ANSIBLE.lock().unwrap_or_else(|e| e.into_inner());
    let o = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    // Two minutes of load, a 15 s bound: the controller gives up waiting and stops them.
    let (out, status) = playbook(
        tmp.path(),
        serde_json::json!({
            "barrage_targets": [o.url()],
            "barrage_rate": 30,
            "barrage_duration": "120s",
            "barrage_run_timeout": 15,
            "barrage_poll_interval": 1,
        }),
    );
    assert_nothing_left(tmp.path());
    assert!(!status.success(), "the playbook should fail:\n{out}");
    assert_eq!(out.matches("\"msg\": \"shard still running after barrage_run_timeout (15 s)").count(), 3, "{out}");
    let stop = section(&out, "Stop the shard if it is still running");
    for host in ["shard-a", "shard-b", "shard-c"] {
        assert!(stop.contains(&format!("changed: [{host}]")), "{host} was not stopped:\n{stop}");
    }
    assert!(stats_requests(o.addr()) > 0, "the shards ran before they were stopped");
}

#[test]
fn ansible_shards_stop_by_themselves_when_the_controller_dies() {
    if !require("ansible-playbook", program_path("ansible-playbook").is_some()) {
        return;
    }
    let _one = ANSIBLE.lock().unwrap_or_else(|e| e.into_inner());
    let o = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    let vars = serde_json::json!({
        "barrage_targets": [o.url()],
        "barrage_rate": 30,
        "barrage_duration": "120s",
        "barrage_run_timeout": 10,
    });
    let log = tmp.path().join("playbook.log");
    let Running { child: mut controller, .. } = spawn_logged(&mut playbook_command(tmp.path(), vars), log.clone());
    // Once every shard is launched, the controller dies without a chance to clean up.
    let started = Instant::now();
    while !read(&log).contains("TASK [barrage : Wait for the shard to finish]") {
        if let Some(status) = controller.try_wait().unwrap() {
            panic!("the playbook ended ({status}) before launching the shards:\n{}", read(&log));
        }
        assert!(started.elapsed() < PLAYBOOK_LIMIT, "no shard launched:\n{}", read(&log));
        // Polls the playbook's output; synchronises nothing.
        std::thread::sleep(Duration::from_millis(100));
    }
    let launched = Instant::now();
    // SAFETY: kill(2) on the process group of the child we spawned just above, then on
    // its workers, which ansible puts in sessions of their own (they name our `root`).
    unsafe { libc::kill(-(controller.id() as i32), libc::SIGKILL) };
    controller.wait().unwrap();
    for (pid, _) in processes_naming(tmp.path()).iter().filter(|(_, c)| c.contains("bin/ansible-playbook ")) {
        // SAFETY: as above.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    // The shards outlive it (the async jobs are daemons; their modules may still be
    // starting barrage).
    let shards =
        || processes_naming(tmp.path()).iter().filter(|(_, c)| c.starts_with(tmp.path().to_str().unwrap())).count();
    while shards() < 3 && launched.elapsed() < Duration::from_secs(30) {
        // Polls /proc; synchronises nothing.
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(shards(), 3, "{:?}", processes_naming(tmp.path()));
    // Each shard stops itself barrage_run_timeout + 30 s after its launch (coreutils'
    // timeout), long before its 120 s run would end.
    while !processes_naming(tmp.path()).is_empty() && launched.elapsed() < Duration::from_secs(90) {
        // Polls /proc; synchronises nothing.
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_nothing_left(tmp.path());
    assert!(stats_requests(o.addr()) > 0, "the shards ran without their controller");
}

/// The album example as shipped (`examples/albums/`: a scenario, its feeder and the image it
/// uploads) over three shards: the playbook copies the three files to each host, private,
/// and runs the scenario there. The merged flows and requests are exactly the unsplit run's
/// (30 workers × 50 flows of two requests, as `albums.rs` runs it), and the origin's own.
#[test]
fn ansible_runs_the_album_scenario_on_three_shards_with_its_files() {
    if !require("ansible-playbook", program_path("ansible-playbook").is_some()) {
        return;
    }
    let _one = ANSIBLE.lock().unwrap_or_else(|e| e.into_inner());
    let o = origin(ServeConfig::default());
    let relay = Relay::start(o.addr());
    let tmp = tempfile::tempdir().unwrap();
    // The paths as a user gives them: relative to where ansible-playbook runs.
    std::os::unix::fs::symlink(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"), tmp.path().join("examples"))
        .unwrap();
    let (out, status) = playbook(
        tmp.path(),
        serde_json::json!({
            "barrage_scenario": "examples/albums/albums.toml",
            "barrage_files": ["examples/albums/artists.csv", "examples/albums/nmtb.png"],
            "barrage_vars": {"base": relay.url().trim_end_matches('/')},
            "barrage_extra_args": ["--retries", "3", "--backoff", "10ms..1s"],
        }),
    );
    assert_nothing_left(tmp.path());
    assert!(status.success(), "ansible-playbook failed ({status}):\n{out}");
    for host in ["shard-a", "shard-b", "shard-c"] {
        let files = tmp.path().join("hosts").join(host).join("files");
        assert_eq!(mode(&files), 0o700, "{}", files.display());
        for name in ["albums.toml", "artists.csv", "nmtb.png"] {
            let shipped = files.join(name);
            assert_eq!(read_bytes(&shipped), read_bytes(&tmp.path().join("examples/albums").join(name)));
            assert_eq!(mode(&shipped), 0o600, "{}", shipped.display());
        }
    }
    let run = run_dir(tmp.path());
    let json: Value = serde_json::from_str(&read(&run.join("report.json"))).unwrap();
    let total = &json["flows_total"];
    assert_eq!((total["flows"].as_u64(), total["ok"].as_u64()), (Some(1500), Some(1500)), "{total}");
    // Each group as the scenario asks it, once (not once per shard), and all its flows.
    for (group, load, flows) in [("phase-1", "10 workers, 500 flows", 500), ("phase-2", "20 workers, 1000 flows", 1000)]
    {
        let g = json["flows"].as_array().unwrap().iter().find(|g| g["name"] == group).unwrap();
        assert_eq!((g["load"].as_str(), g["flows"].as_u64()), (Some(load), Some(flows)), "{g}");
    }
    assert_eq!(json["requests"]["total"], 3000, "{}", json["requests"]);
    assert_eq!(json["requests"]["ok"], 3000, "{}", json["errors"]);
    // The origin saw every request once: no retry was needed, every album was created
    // once and read back.
    assert_eq!(stats_requests(o.addr()), 3000, "the origin's count");
    let albums = crate::albums::album_counts(o.addr());
    assert_eq!((albums["created"].as_u64(), albums["read"].as_u64()), (Some(1500), Some(1500)), "{albums}");
    let warnings = json["warnings"].to_string();
    assert!(!warnings.contains("flows asked"), "{warnings}");
    // A shard's workers: phase-1's 10 split 4, 3, 3 and phase-2's 20 split 7, 7, 6; each
    // runs 50 flows of two requests.
    let sent: Vec<u64> = json["shards"].as_array().unwrap().iter().map(|r| r["sent"].as_u64().unwrap()).collect();
    assert_eq!(sent, [1100, 1000, 900], "{}", json["shards"]);
    let sources = relay.sources();
    let expected: Vec<IpAddr> = ["127.0.0.2", "127.0.0.3", "127.0.0.4"].map(|a| a.parse().unwrap()).to_vec();
    assert_eq!(sources.keys().copied().collect::<Vec<_>>(), expected, "connections by source: {sources:?}");
}

/// An experiment through the playbook (`barrage_experiment`): its 2 cases × 2 repeats, each
/// run split over the three hosts in the experiment's order, each run's three shards'
/// files at its place in the experiment's directory, and the experiment's report written
/// from them on the controller: every case with each run's requests, which add up to the
/// origin's own count.
#[test]
fn ansible_runs_an_experiments_runs_over_the_hosts_and_reports_it() {
    if !require("ansible-playbook", program_path("ansible-playbook").is_some()) {
        return;
    }
    let _one = ANSIBLE.lock().unwrap_or_else(|e| e.into_inner());
    let o = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    crate::experiments::fleet_experiment(tmp.path(), &o.url());
    // As a user gives it: relative to where ansible-playbook runs.
    let (out, status) = playbook(tmp.path(), serde_json::json!({"barrage_experiment": "fleet.toml"}));
    assert_nothing_left(tmp.path());
    assert!(status.success(), "ansible-playbook failed ({status}):\n{out}");
    let run = run_dir(tmp.path());
    let json: Value = serde_json::from_str(&read(&run.join("report.json"))).unwrap();
    let rows = json["matrix"].as_array().unwrap();
    let per_run: Vec<(&str, &Value)> =
        rows.iter().map(|r| (r["labels"]["case"].as_str().unwrap(), &r["requests_per_run"])).collect();
    assert_eq!(per_run, [("TC0", &serde_json::json!([150, 150])), ("TC1", &serde_json::json!([300, 300]))]);
    assert_eq!(stats_requests(o.addr()), 900, "the origin's count: the runs' sum");
    for place in ["TC0.r1.brg", "TC0.r2.brg", "TC1.r1.brg", "TC1.r2.brg"] {
        let mut shards: Vec<String> = std::fs::read_dir(run.join(place))
            .unwrap_or_else(|e| panic!("{place}: {e}\n{out}"))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        shards.sort();
        assert_eq!(shards, ["shard-0.brg", "shard-1.brg", "shard-2.brg"], "{place}");
    }
    assert!(read(&run.join("report.html")).contains("<html"));
    assert!(out.contains("Experiment fleet: 2 case(s)"), "the report is on the output:\n{out}");
}

/// A bad plan fails the play before anything is copied, with one line naming the variable.
#[test]
fn ansible_refuses_a_bad_plan_naming_the_variable() {
    if !require("ansible-playbook", program_path("ansible-playbook").is_some()) {
        return;
    }
    let _one = ANSIBLE.lock().unwrap_or_else(|e| e.into_inner());
    let url = serde_json::json!(["http://127.0.0.1:9/"]);
    for (vars, want) in [
        (serde_json::json!({}), "\"barrage_targets is empty and barrage_scenario unset: "),
        (
            serde_json::json!({"barrage_targets": url, "barrage_scenario": "s.toml"}),
            "\"barrage_targets and barrage_scenario are both set: ",
        ),
        (
            serde_json::json!({"barrage_scenario": "no.toml"}),
            "\"barrage_scenario: no.toml is not a file on the controller",
        ),
        (serde_json::json!({"barrage_targets": url, "barrage_files": "a.csv"}), "\"barrage_files must be a list"),
        (
            serde_json::json!({"barrage_targets": url, "barrage_files": ["no.csv"]}),
            "\"barrage_files: no.csv: no.csv is not a file or directory on the controller",
        ),
        (
            serde_json::json!({"barrage_targets": url, "barrage_files": [{"src": "s.toml", "dest": "../s.toml"}]}),
            "dest must be a path relative to files/ on each host, without ..",
        ),
        (
            serde_json::json!({"barrage_scenario": "s.toml", "barrage_files": ["d/s.toml"]}),
            "\"barrage_files: two files would be files/s.toml on the hosts",
        ),
        (
            serde_json::json!({"barrage_experiment": "s.toml", "barrage_targets": url}),
            "\"barrage_experiment and barrage_targets are both set: ",
        ),
        (
            serde_json::json!({"barrage_experiment": "bed.toml"}),
            "\"barrage_experiment: bed.toml: case TC0 runs on the controller only (testbed = \\\"direct\\\"",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("s.toml"), "").unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join("d/s.toml"), "").unwrap();
        std::fs::write(tmp.path().join("bed.toml"), BED).unwrap();
        let (out, status) = playbook(tmp.path(), vars.clone());
        assert!(!status.success() && out.contains(want), "{vars}: {want}:\n{out}");
        assert!(!tmp.path().join("hosts").exists(), "{vars}: nothing copied");
    }
    // A work directory that is a symbolic link (another user's, in a shared directory).
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir(tmp.path().join("hosts")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, tmp.path().join("hosts/shard-b")).unwrap();
    let (out, status) = playbook(tmp.path(), serde_json::json!({"barrage_targets": url}));
    assert_nothing_left(tmp.path());
    assert!(!status.success() && out.contains("shard-b is a symbolic link on shard-b: refusing it"), "{out}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing went through the link");
}

/// An experiment whose case runs against a testbed, which lives on the controller.
const BED: &str = "name = \"bed\"\n[base]\ntestbed = \"direct\"\nurl = \"{origin-1}/\"\nrequests = 10\n[factors.c]\none = { concurrency = 1 }\n";

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn read_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs deploy/ansible/playbook.yml over inventory.local.ini with `vars` and the test's
/// binary, work directories and output under `root`: its output (stdout and stderr) and
/// status.
fn playbook(root: &Path, vars: Value) -> (String, ExitStatus) {
    spawn_logged(&mut playbook_command(root, vars), root.join("playbook.log")).wait(PLAYBOOK_LIMIT)
}

/// The command running the playbook (see [`playbook`]). Ansible's own temporary and
/// async-job files go under `root` too, so that every process of the run names `root` on
/// its command line.
fn playbook_command(root: &Path, vars: Value) -> Command {
    let mut vars = vars;
    let extra = vars.as_object_mut().unwrap();
    extra.insert("barrage_local_root".into(), root.join("hosts").to_str().unwrap().into());
    extra.insert("barrage_binary".into(), env!("CARGO_BIN_EXE_barrage").into());
    extra.insert("barrage_output_dir".into(), root.join("out").to_str().unwrap().into());
    extra.insert("barrage_lead_time".into(), 12.into());
    extra.insert("ansible_remote_tmp".into(), root.join("ansible-tmp").to_str().unwrap().into());
    extra.insert("ansible_async_dir".into(), root.join("ansible-async").to_str().unwrap().into());
    let mut cmd = Command::new("ansible-playbook");
    // The shards' runs go into the tests' history, never the user's.
    cmd.env("XDG_DATA_HOME", crate::util::data_home());
    cmd.current_dir(root)
        .args(["-i", &format!("{DEPLOY}/ansible/inventory.local.ini"), &format!("{DEPLOY}/ansible/playbook.yml")])
        .arg("-e")
        .arg(vars.to_string())
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
        .env("ANSIBLE_LOCAL_TEMP", root.join("ansible-local"));
    cmd
}

/// The run's directory on the controller: the playbook's output dir holds one.
fn run_dir(root: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(root.join("out")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// The part of the playbook's output under the task named `task`, up to the next task.
fn section<'a>(out: &'a str, task: &str) -> &'a str {
    let start = out.find(&format!("{task}] ")).unwrap_or_else(|| panic!("no task '{task}' in:\n{out}"));
    let rest = &out[start..];
    &rest[..rest[1..].find("TASK [").map_or(rest.len(), |e| e + 1)]
}

/// Fails when a process whose command line names `root` is still running, after killing it
/// (it can only be one this test started: `root` is the test's own temporary directory).
fn assert_nothing_left(root: &Path) {
    let left = processes_naming(root);
    for (pid, _) in &left {
        // SAFETY: kill(2) with a pid read from /proc just now; no memory is involved.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "still running after the playbook: {left:?}");
}

/// The processes whose command line contains `root`: pid and command line.
fn processes_naming(root: &Path) -> Vec<(i32, String)> {
    let needle = root.to_str().unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if pid != std::process::id() as i32 && cmdline.contains(needle) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// The origin's own request count.
fn stats_requests(addr: SocketAddr) -> u64 {
    let stats: Value = serde_json::from_str(&http_get(addr, "/_barrage/stats")).unwrap();
    stats["requests"].as_u64().unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `requests` figure of an xlsx report's summary sheet.
fn xlsx_requests(path: &Path) -> f64 {
    use calamine::{Data, Reader};
    let mut book = calamine::open_workbook_auto(path).unwrap();
    let summary = book.worksheet_range("summary").unwrap();
    let row = summary.rows().find(|r| r[0] == Data::String("requests".into())).expect("a requests row");
    match row[1] {
        Data::Float(n) => n,
        ref other => panic!("requests is {other:?}"),
    }
}

/// The merged report shows three shards, each from its own file (`shard-I.brg` holds shard
/// I/3) and with its exact part of the total, in JSON and in the text's Shards table.
fn assert_three_shards(json: &Value, text: &str, each: u64) {
    let rows = json["shards"].as_array().unwrap_or_else(|| panic!("no shards in {json}"));
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["shard"], format!("{i}/3"), "{row}");
        assert!(row["file"].as_str().unwrap().ends_with(&format!("shard-{i}.brg")), "{row}");
        assert_eq!(row["sent"], each, "{row}");
    }
    let table = &text[text.find("\nShards").unwrap_or_else(|| panic!("no Shards table in:\n{text}"))..];
    for i in 0..3 {
        assert!(table.contains(&format!("{i}/3")), "shard {i}/3 not in:\n{table}");
    }
}

/// A TCP relay in front of the origin that notes each connection's source address: the
/// origin does not record peers, so this is how the test sees where connections came from.
struct Relay {
    addr: SocketAddr,
    sources: Arc<Mutex<BTreeMap<IpAddr, usize>>>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    fn start(to: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let sources = Arc::new(Mutex::new(BTreeMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, flag) = (sources.clone(), stop.clone());
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, peer)) => {
                        *seen.lock().unwrap().entry(peer.ip()).or_insert(0) += 1;
                        relay(client, to);
                    }
                    // Paces the polling of a non-blocking accept; synchronises nothing.
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Relay { addr, sources, stop }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Connections by source address, so far.
    fn sources(&self) -> BTreeMap<IpAddr, usize> {
        self.sources.lock().unwrap().clone()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copies bytes both ways between `client` and a new connection to `to`, a thread per way;
/// each side's end of stream is passed on as a write shutdown.
fn relay(client: TcpStream, to: SocketAddr) {
    client.set_nonblocking(false).unwrap();
    let Ok(server) = TcpStream::connect(to) else { return };
    for (mut from, mut into) in [(client.try_clone().unwrap(), server.try_clone().unwrap()), (server, client)] {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut from, &mut into);
            let _ = into.shutdown(std::net::Shutdown::Write);
        });
    }
}

/// A child process in its own process group, its output (stdout and stderr) going to `log`.
struct Running {
    child: std::process::Child,
    log: PathBuf,
}

/// Starts `cmd` with stdin closed, in its own process group (so that it can be killed
/// with everything it started), its output into `log`.
fn spawn_logged(cmd: &mut Command, log: PathBuf) -> Running {
    let file = std::fs::File::create(&log).unwrap();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    Running { child, log }
}

impl Running {
    /// Its output and exit status; its process group is killed past `limit`.
    fn wait(mut self, limit: Duration) -> (String, ExitStatus) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > limit {
                // SAFETY: kill(2) on the process group of the child we spawned.
                unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
                let _ = self.child.wait();
                panic!("ran over {limit:?}: {}", read(&self.log));
            }
            // Polls the child's exit; synchronises nothing.
            std::thread::sleep(Duration::from_millis(50));
        };
        (read(&self.log), status)
    }
}

// ---- Kubernetes: deploy/k8s.rs ----

mod k8s;
