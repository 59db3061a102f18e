//! The testbed with the real servers: caches counted against what reached the origin,
//! balancers spreading and failing over, HTTPS at the front, monitoring, and `down`
//! leaving nothing behind. Each test brings up its own testbed in a temporary directory
//! and takes it down even when it fails.

use crate::util::{barrage, require};
use barrage_testbed::{program_path, State};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A testbed of the test's own; `down` when dropped, also while a failing test unwinds.
pub(crate) struct Testbed {
    dir: tempfile::TempDir,
    pub(crate) state: State,
}

/// The programs a topology needs, with the names `require` reports.
fn programs(topology: &str) -> &'static [&'static str] {
    match topology {
        "varnish" => &["varnishd"],
        "squid" => &["squid"],
        "nginx-lb" => &["nginx"],
        "haproxy-lb" => &["haproxy"],
        "all" => &["nginx", "haproxy", "varnishd", "squid"],
        "redis" => &["redis-server"],
        "memcached" => &["memcached"],
        "caddy" => &["caddy"],
        "nginx-cache" => &["nginx"],
        _ => &[],
    }
}

impl Testbed {
    /// `barrage testbed up TOPOLOGY ARGS`; `None` (the test is skipped) when a server
    /// program is not installed.
    pub(crate) fn up(topology: &str, args: &[&str]) -> Option<Testbed> {
        // With --tls, hitch serves HTTPS in front of varnish.
        let hitch = args.contains(&"--tls") && ["varnish", "all"].contains(&topology);
        for program in programs(topology).iter().chain(hitch.then_some(&"hitch")) {
            if !require(program, program_path(program).is_some()) {
                return None;
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let out = barrage().args(["testbed", "up", topology, "--dir"]).arg(dir.path()).args(args).output().unwrap();
        let state = State::load(dir.path());
        // A partial start is taken down before the assertion can fail.
        let bed = state.map(|state| Testbed { dir, state });
        assert!(out.status.success(), "testbed up {topology}: {}", String::from_utf8_lossy(&out.stderr));
        let bed = bed.expect("state written");
        let table = String::from_utf8_lossy(&out.stdout);
        for s in &bed.state.servers {
            assert!(table.contains(&s.spec.url()), "the table lists {}: {table}", s.spec.name);
        }
        Some(bed)
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn url(&self, name: &str) -> String {
        self.state.server(name).unwrap_or_else(|| panic!("no {name}")).spec.url()
    }

    /// Where server `name` listens (plain TCP).
    pub(crate) fn addr(&self, name: &str) -> std::net::SocketAddr {
        self.state.server(name).unwrap_or_else(|| panic!("no {name}")).spec.listen
    }

    fn tls_url(&self, name: &str) -> String {
        self.state.server(name).and_then(|s| s.spec.tls_url()).unwrap_or_else(|| panic!("{name} has no HTTPS"))
    }

    fn pids(&self) -> Vec<u32> {
        State::load(self.dir()).expect("state").servers.iter().filter_map(|s| s.pid).collect()
    }

    /// Requests the origin has served (its own count, which `/_barrage/stats` does not add to).
    pub(crate) fn origin_requests(&self, name: &str) -> u64 {
        let addr = self.state.server(name).unwrap().spec.listen;
        let body = crate::util::http_get(addr, "/_barrage/stats");
        let json: Value = serde_json::from_str(body.rsplit("\r\n\r\n").next().unwrap()).unwrap();
        json["requests"].as_u64().unwrap()
    }

    /// `barrage testbed ARGS --dir DIR`.
    pub(crate) fn command(&self, args: &[&str]) -> Output {
        barrage().arg("testbed").args(args).arg("--dir").arg(self.dir()).output().unwrap()
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let out = barrage().args(["testbed", "down", "--dir"]).arg(self.dir.path()).output().unwrap();
        if !std::thread::panicking() {
            assert!(out.status.success(), "down: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// `barrage run ARGS --format json`, successful, as JSON.
pub(crate) fn run_json(args: &[&str]) -> Value {
    let out = barrage().arg("run").args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "run {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

pub(crate) fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// One client, one URL, 40 times: the first request is the cache's only miss, and the
/// origin saw exactly the misses.
fn cache_counts_what_reached_the_origin(topology: &str) {
    let Some(bed) = Testbed::up(topology, &[]) else { return };
    let before = bed.origin_requests("origin-1");
    let url = format!("{}bytes/2k?{topology}", bed.url(topology));
    let s = run_json(&["-n", "40", "-c", "1", &url]);
    let fetched = bed.origin_requests("origin-1") - before;
    let cache = &s["cache"];
    let statuses = &cache["statuses"];
    assert_eq!(statuses["miss"].as_u64(), Some(1), "{cache}");
    assert_eq!(statuses["hit"].as_u64(), Some(39), "{cache}");
    assert_eq!(fetched, 1, "the origin served only the miss");
    assert!((f(&cache["hit_ratio"]) - 39.0 / 40.0).abs() < 1e-9, "{cache}");
    // Every response has the same body, so bytes split as requests do (headers aside).
    let byte_hit = f(&cache["byte_hit_ratio"]);
    assert!((byte_hit - 39.0 / 40.0).abs() < 0.01, "{cache}");
    // Hits carry the origin's X-Served-By too: the backend report works through the cache.
    let backends = s["backends"].as_array().unwrap();
    assert_eq!(
        (backends.len(), &backends[0]["name"], backends[0]["requests"].as_u64()),
        (1, &Value::from("origin-1"), Some(40))
    );
}

#[test]
fn varnish_serves_a_miss_then_hits_and_the_origin_agrees() {
    cache_counts_what_reached_the_origin("varnish");
}

#[test]
fn squid_serves_a_miss_then_hits_and_the_origin_agrees() {
    cache_counts_what_reached_the_origin("squid");
}

/// Round robin over two origins, keep-alive on: both balancers pick per request, so one
/// kept-alive connection still spreads 50/50.
fn balancer_spreads_evenly(topology: &str) {
    let Some(bed) = Testbed::up(topology, &[]) else { return };
    let s = run_json(&["-n", "400", "-c", "2", &bed.url(topology)]);
    assert_eq!(s["requests"]["ok"].as_u64(), Some(400));
    assert_eq!(s["requests"]["connections"].as_u64(), Some(2), "kept alive");
    let backends = s["backends"].as_array().unwrap();
    assert_eq!(backends.len(), 2, "{backends:?}");
    for b in backends {
        let share = f(&b["share"]);
        assert!((share - 0.5).abs() <= 0.05, "{}: {share}", b["name"]);
    }
}

#[test]
fn nginx_spreads_round_robin_evenly_over_kept_alive_connections() {
    balancer_spreads_evenly("nginx-lb");
}

#[test]
fn haproxy_spreads_round_robin_evenly_over_kept_alive_connections() {
    balancer_spreads_evenly("haproxy-lb");
}

#[test]
fn haproxy_marks_a_stopped_origin_down_and_takes_it_back() {
    let Some(bed) = Testbed::up("haproxy-lb", &[]) else { return };
    let exe = env!("CARGO_BIN_EXE_barrage");
    let dir = bed.dir().display().to_string();
    let stop = format!("{exe} testbed stop origin-2 --dir {dir}");
    let start = format!("{exe} testbed start origin-2 --dir {dir}");
    // Three seconds down: a burst that ends within a second still leaves the one-second
    // bridge before the restart, so a slow tick on a busy machine cannot join the two.
    let s = run_json(&[
        "--rate",
        "400",
        "-d",
        "7s",
        &bed.url("haproxy-lb"),
        "--testbed",
        &dir,
        "--at",
        "2s",
        &stop,
        "--at",
        "5s",
        &start,
    ]);
    let events = s["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
    let (down, up) = (&events[0], &events[1]);
    assert_eq!(down["exit"].as_i64(), Some(0), "{down}");
    assert!(down["output"].as_str().unwrap().contains("stopped origin-2"), "{down}");
    // Requests to origin-2 fail until a health check (every 250 ms) marks it down; then
    // they stop, within 1.5 s on a machine busy with other testbeds (1.08 s seen at load 8;
    // without the checks they would fail until the restart, 3 s on).
    let recovery = f(&down["recovery_s"]);
    assert!(recovery > 0.0 && recovery < 1.5, "recovery {recovery}: {down}");
    assert!(down["burst_errors"].as_u64().unwrap() > 0, "{down}");
    let after = &down["after"]["backends"];
    assert_eq!(after.as_object().unwrap().keys().collect::<Vec<_>>(), ["origin-1"], "{after}");
    assert_eq!(f(&down["after"]["error_ratio"]), 0.0, "{down}");
    // Started again, it is checked up and gets its share back.
    let back = f(&up["after"]["backends"]["origin-2"]);
    assert!(back > 0.3, "origin-2 takes traffic again: {up}");
    // Its answers stop while the stop command runs and resume only after the start: one
    // long gap, placed by the commands' own times to within a tenth of a second.
    let backend2 = s["backends"].as_array().unwrap().iter().find(|b| b["name"] == "origin-2").unwrap();
    let long: Vec<&Value> = backend2["gaps"].as_array().unwrap().iter().filter(|g| f(&g["length_s"]) > 1.0).collect();
    assert_eq!(long.len(), 1, "{backend2}");
    let (from, to) = (f(&long[0]["from_s"]), f(&long[0]["to_s"]));
    assert!(from >= f(&down["at_s"]) - 0.1 && from <= f(&down["ended_s"]) + 0.1, "gap from {from}: {down}");
    // (`to_s` starts the tenth of a second of its first answer again.)
    assert!(to + 0.1 >= f(&up["at_s"]), "gap to {to}: {up}");
    // The testbed's servers were watched without --monitor, origin-2 down for a while.
    let procs = s["processes"].as_array().unwrap();
    let origin2 = procs.iter().find(|p| p["name"] == "origin-2").expect("origin-2 watched");
    assert!(origin2["down_samples"].as_u64().unwrap() >= 1, "{origin2}");
    // Its downtime, bounded by the once-a-second samples, holds the outage the commands
    // bound: stopped while the stop ran, started while the start ran.
    let (shortest, longest) = (f(&up["at_s"]) - f(&down["ended_s"]), f(&up["ended_s"]) - f(&down["at_s"]));
    let (min, max) = (f(&origin2["down_min_s"]), f(&origin2["down_max_s"]));
    assert!(min <= longest && max >= shortest, "down {min}–{max} s, outage {shortest:.2}–{longest:.2} s");
    assert!(procs.iter().any(|p| p["name"] == "haproxy-lb"), "{procs:?}");
}

#[test]
fn nginx_retries_a_stopped_origin_silently() {
    let Some(bed) = Testbed::up("nginx-lb", &[]) else { return };
    let stop = format!("{} testbed stop origin-2 --dir {}", env!("CARGO_BIN_EXE_barrage"), bed.dir().display());
    let s = run_json(&["--rate", "300", "-d", "4s", &bed.url("nginx-lb"), "--at", "1500ms", &stop]);
    let down = &s["events"][0];
    // Passive checks: the request that met the dead origin went on to the other one.
    assert_eq!(s["requests"]["ok"], s["requests"]["total"], "no error reached the client: {}", s["status_codes"]);
    assert_eq!(down["burst_errors"].as_u64(), Some(0), "{down}");
    let after = down["after"]["backends"].as_object().unwrap();
    assert_eq!(after.keys().collect::<Vec<_>>(), ["origin-1"], "{down}");
}

/// HTTPS at the balancer with the testbed's CA: every request a new TLS connection, each
/// with its handshake measured.
fn https_through(topology: &str) {
    let Some(bed) = Testbed::up(topology, &["--tls"]) else { return };
    let ca = bed.state.ca.clone().expect("a CA with --tls");
    let url = bed.tls_url(topology);
    let s = run_json(&["-n", "20", "-c", "1", "--no-keepalive", "--cacert", ca.to_str().unwrap(), &url]);
    assert_eq!(s["requests"]["ok"].as_u64(), Some(20), "{}", s["errors"]);
    assert_eq!(s["phases"]["tls"]["count"].as_u64(), Some(20));
    assert!(s["phases"]["tls"]["p50_us"].as_u64().unwrap() > 0);
    assert_eq!(s["backends"].as_array().unwrap().len(), 2, "both origins behind the TLS front");
    // The private keys are the user's alone; the certificates are public.
    for (file, want) in [("key.pem", 0o600), ("combined.pem", 0o600), ("cert.pem", 0o644), ("ca.pem", 0o644)] {
        let path = bed.dir().join(file);
        let mode = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode();
        assert_eq!(mode & 0o777, want, "{file}: {:o}", mode & 0o777);
    }
}

#[test]
fn https_through_nginx_with_the_testbed_ca() {
    https_through("nginx-lb");
}

#[test]
fn https_through_haproxy_with_the_testbed_ca() {
    https_through("haproxy-lb");
}

/// HTTP/3 through Caddy: every request reached an origin once (their own counts), each
/// connection one QUIC handshake; Caddy stops and starts by name, and while it is stopped a
/// run is refused at once (nothing listens on its UDP port); `--streams` above Caddy's
/// limit waits for streams and says what Caddy allows.
#[test]
fn http3_through_caddy_reaches_the_origins_exactly_and_caddy_stops_and_starts_by_name() {
    let Some(bed) = Testbed::up("caddy", &["--tls"]) else { return };
    let ca = bed.state.ca.clone().expect("a CA with --tls");
    let ca = ca.to_str().unwrap();
    let url = format!("{}bytes/1k", bed.tls_url("caddy"));
    // The supervisor's readiness probes reached the origins before.
    let counts = || [bed.origin_requests("origin-1"), bed.origin_requests("origin-2")];
    let before = counts();
    let s = run_json(&["--http3", "-n", "60", "-c", "3", "--cacert", ca, &url]);
    assert_eq!(s["requests"]["ok"].as_u64(), Some(60), "{}", s["errors"]);
    let by_origin = [counts()[0] - before[0], counts()[1] - before[1]];
    assert_eq!(by_origin.iter().sum::<u64>(), 60, "the origins served exactly what barrage counted: {by_origin:?}");
    assert_eq!(by_origin, [30, 30], "round robin");
    let backends: Vec<(&str, u64)> = s["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["name"].as_str().unwrap(), b["requests"].as_u64().unwrap()))
        .collect();
    assert_eq!(backends, [("origin-1", 30), ("origin-2", 30)], "X-Served-By passes through Caddy");
    assert_eq!(s["requests"]["connections"].as_u64(), Some(3));
    assert_eq!(s["phases"]["connect"]["count"].as_u64(), Some(3));
    assert!(s["phases"]["tls"]["count"].as_u64().unwrap_or(0) == 0, "TLS is inside QUIC's connect");

    let out = bed.command(&["stop", "caddy"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let started = std::time::Instant::now();
    let out = barrage()
        .args(["run", "--http3", "-n", "2", "-c", "1", "--cacert", ca, &url, "--format", "json"])
        .output()
        .unwrap();
    let stopped: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stopped["errors"][0]["kind"], "refused", "{stopped}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "not the connect timeout: {:?}", started.elapsed());
    let out = bed.command(&["start", "caddy"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = barrage().args(["run", "--http3", "-n", "4", "-c", "1", "--cacert", ca, &url]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}{text}", String::from_utf8_lossy(&out.stderr));
    let said = |label: &str| text.lines().find(|l| l.trim_start().starts_with(label)).map(str::split_whitespace);
    assert_eq!(said("ok").and_then(|mut w| w.nth(1)), Some("4"), "{text}");
    assert_eq!(said("HTTP/3 connections").and_then(|w| w.last()), Some("1"), "the report says the protocol: {text}");
    // The origins serve HTTP/3 themselves too, for the direct comparison.
    let direct = run_json(&["--http3", "-n", "4", "-c", "1", "--cacert", ca, &bed.tls_url("origin-1")]);
    assert_eq!(direct["requests"]["ok"].as_u64(), Some(4), "{}", direct["errors"]);

    // Multiplexed: Caddy (quic-go) takes 100 streams a connection (its QUIC
    // initial_max_streams_bidi), fewer than 150 asked; the rest wait for a stream, none
    // fails, the report says what Caddy allows, and the origins served exactly the run.
    let before = counts();
    let slow = format!("{}delay/50", bed.tls_url("caddy"));
    let s = run_json(&["--http3", "--streams", "150", "-c", "1", "-n", "600", "--cacert", ca, &slow]);
    assert_eq!(s["requests"]["ok"].as_u64(), Some(600), "{}", s["errors"]);
    assert_eq!(counts()[0] + counts()[1] - before[0] - before[1], 600);
    assert_eq!(s["requests"]["protocols"], serde_json::json!({"HTTP/3": 1}));
    assert_eq!(
        s["streams"]["stream_cap"].as_u64(),
        Some(100),
        "quic-go's limit, read off the handshake: {}",
        s["streams"]
    );
    // The limit was reached. (A stream Caddy has ended is free for the next request, by
    // the credit Caddy grants, before barrage has read its end: on a busy machine all 150
    // were once seen in flight by barrage's count. That Caddy's 100 bound what was open at
    // once is what `stream_cap` and the warning say.)
    let most = s["streams"]["streams_max"].as_u64().unwrap();
    assert!((90..=150).contains(&most), "Caddy's 100 in use: {most}");
    let said = "the server allows 100 concurrent stream(s) per connection (QUIC's initial_max_streams_bidi)";
    let warned = |w: &serde_json::Value| w["kind"] == "stream_cap" && w["text"].as_str().unwrap().contains(said);
    assert!(s["warnings"].as_array().unwrap().iter().any(warned), "{}", s["warnings"]);
}

#[test]
fn monitoring_sees_the_front_work_under_load() {
    let Some(bed) = Testbed::up("nginx-lb", &[]) else { return };
    let dir = bed.dir().display().to_string();
    // Idle nginx: a trickle straight to an origin.
    let idle = run_json(&["--rate", "5", "-d", "2s", &bed.url("origin-1"), "--testbed", &dir, "--monitor", "nginx-lb"]);
    // Busy nginx: 8 workers flat out through it.
    let busy = run_json(&["-c", "8", "-d", "2s", &bed.url("nginx-lb"), "--testbed", &dir]);
    let cpu = |s: &Value| {
        let p = s["processes"].as_array().unwrap().iter().find(|p| p["name"] == "nginx-lb").expect("nginx watched");
        (f(&p["cpu_mean_percent"]), p["samples"].as_u64().unwrap(), p["threads_max"].as_u64().unwrap())
    };
    let (idle_cpu, idle_samples, _) = cpu(&idle);
    let (busy_cpu, busy_samples, threads) = cpu(&busy);
    assert!(idle_samples >= 2 && busy_samples >= 2);
    assert!(threads >= 2, "master and worker counted together");
    assert!(busy_cpu > idle_cpu + 10.0, "nginx CPU rose under load: idle {idle_cpu:.1}%, busy {busy_cpu:.1}%");
    // barrage and the machine are always there; the CSV series carries them.
    assert!(busy["processes"].as_array().unwrap().iter().any(|p| p["name"] == "barrage"));
    assert!(f(&busy["host"]["cpu_mean_percent"]) > 0.0);
    assert!(busy["intervals"][0]["cpu_percent"]["nginx-lb"].is_number());
}

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

/// A process that is neither running nor a zombie (reaped).
pub(crate) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
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
fn bench_compares_every_front_in_one_table_and_tears_down() {
    for program in programs("all") {
        if !require(program, program_path(program).is_some()) {
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("bed");
    let out = barrage()
        .args(["testbed", "bench", "-d", "1s", "-c", "2", "--no-tls", "--dir"])
        .arg(&state_dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{text}", String::from_utf8_lossy(&out.stderr));
    let row = |label: &str| -> Vec<String> {
        let line =
            text.lines().find(|l| l.starts_with(&format!("{label} "))).unwrap_or_else(|| panic!("{label}: {text}"));
        line.split_whitespace().skip(label.split_whitespace().count()).map(str::to_string).collect()
    };
    for label in ["direct", "nginx-lb", "haproxy-lb", "varnish hits", "varnish misses", "squid hits", "squid misses"] {
        let cells = row(label);
        assert_eq!(cells[1], "100.00%", "{label} succeeded: {text}");
    }
    // Hits and misses as asked: one miss at the start at most, then hits; never a hit for
    // the misses.
    let percent = |cell: &str| cell.trim_end_matches('%').parse::<f64>().unwrap();
    assert!(percent(&row("varnish hits")[7]) >= 99.0, "{text}");
    assert!(percent(&row("squid hits")[7]) >= 99.0, "{text}");
    assert_eq!(row("varnish misses")[7], "0.0%", "{text}");
    assert_eq!(row("squid misses")[7], "0.0%", "{text}");
    assert_eq!(row("direct")[7], "-", "no cache in front of the origin");
    assert!(!state_dir.exists(), "the testbed went down");
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

#[test]
fn an_experiment_case_runs_against_a_testbed_it_brings_up() {
    if !require("varnishd", program_path("varnishd").is_some()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cache.toml");
    let text = r#"duration = "1s"
compare = ["server"]

[base]
concurrency = 2
testbed = "varnish"

[factors.server]
backend = { url = "{origin-1}/bytes/1k" }
cache = { url = "{varnish}/bytes/1k" }
"#;
    std::fs::write(&file, text).unwrap();
    let results = dir.path().join("results");
    let out =
        barrage().arg("experiment").arg(&file).arg("-o").arg(&results).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let matrix = json["matrix"].as_array().unwrap();
    assert!(matrix[0]["hit_ratio"].is_null(), "straight to the origin: {}", matrix[0]);
    assert!(f(&matrix[1]["hit_ratio"]) > 0.9, "through varnish: {}", matrix[1]);
    // Brought up once for both cases, watched, and taken down at the end.
    assert!(!results.join("testbed-varnish").exists(), "the testbed went down");
    let run = results.join("TC1.r1.brg");
    let report = barrage().arg("report").arg(&run).args(["--format", "json"]).output().unwrap();
    let s: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert!(s["processes"].as_array().unwrap().iter().any(|p| p["name"] == "varnish"), "{}", s["processes"]);
}

/// varnish's own counters of the testbed's cache: (client requests, hits, misses).
pub(crate) fn varnish_counters(bed: &Testbed) -> (u64, u64, u64) {
    let dir = &bed.state.server("varnish").expect("a varnish").spec.dir;
    let out = std::process::Command::new("varnishstat").arg("-n").arg(dir).arg("-j").output().unwrap();
    assert!(out.status.success(), "varnishstat: {}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    // varnishstat 6 nests the counters under "counters"; older ones do not.
    let counters = json.get("counters").unwrap_or(&json);
    let n = |name: &str| counters[name]["value"].as_u64().unwrap_or_else(|| panic!("{name}: {json}"));
    (n("MAIN.client_req"), n("MAIN.cache_hit"), n("MAIN.cache_miss"))
}

#[test]
fn a_cache_miss_case_misses_in_varnish_after_its_warmup_and_in_every_repeat() {
    if !require("varnishstat", program_path("varnishstat").is_some()) {
        return;
    }
    let Some(bed) = Testbed::up("varnish", &[]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("miss.toml");
    // Two repeats of a case that asks for new objects only, each after a warm-up: if they
    // drew one request stream, a repeat would ask varnish for what a warm-up or the other
    // repeat cached.
    let text = format!(
        r#"duration = "1s"
warmup = "1s"
repeats = 2

[base]
url = "{}obj/{{id}}"
rate = 300
objects = 1000000000

[factors.server]
cache-miss = {{ hit-ratio = 0 }}
"#,
        bed.url("varnish")
    );
    std::fs::write(&file, text).unwrap();
    let (sent_before, hits_before, misses_before) = varnish_counters(&bed);
    let origin_before = bed.origin_requests("origin-1");
    let out = barrage()
        .arg("experiment")
        .arg(&file)
        .arg("-o")
        .arg(dir.path().join("results"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (sent, hits, misses) = varnish_counters(&bed);
    let (sent, hits, misses) = (sent - sent_before, hits - hits_before, misses - misses_before);
    let fetched = bed.origin_requests("origin-1") - origin_before;
    let case = &json["matrix"][0];
    let measured = case["requests"].as_u64().unwrap();
    eprintln!("varnish: {sent} requests, {hits} hits, {misses} misses; origin: {fetched}; barrage: {measured} measured, hit ratio {}", case["hit_ratio"]);
    // Ground truth from varnish and the origin: every request of the case, its warm-ups'
    // included, was a miss that reached the origin.
    assert!(
        sent >= measured + 2 * 250 && sent <= measured + 2 * 350,
        "a warm-up of about 300 before each repeat, besides the {measured} measured: {sent}"
    );
    assert!(hits * 100 <= sent, "varnish served {hits} of {sent} requests from its cache ({misses} misses)");
    assert!(misses * 100 >= 99 * sent, "varnish missed only {misses} of {sent}");
    assert!(fetched * 100 >= 99 * sent, "the origin served {fetched} of the {sent} requests");
    // And barrage's figure agrees: about no hits in either repeat.
    assert_eq!(case["runs"], 2, "{case}");
    assert!(f(&case["hit_ratio"]) <= 0.01, "{case}");
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

/// The study behind a balancer: each album POSTed through it is found by a GET through it,
/// whichever origin takes each (round robin sends the GET to the other one), because all
/// origins of a testbed share one album directory in its state directory. The origins'
/// counts add up to what was sent, also under load from `barrage run --form`.
fn albums_are_found_through(topology: &str) {
    use crate::albums::{album_counts, post_album, send, IMAGE_LEN, PROFILE};
    let Some(bed) = Testbed::up(topology, &[]) else { return };
    let front = bed.state.server(topology).unwrap().spec.listen;
    let mut across = 0;
    for i in 0..20 {
        let profile = format!(r#"{{"artist": "Rock Pistols", "title": "{topology} {i}", "year": "1977"}}"#);
        let (id, posted) = post_album(front, &profile);
        let got = send(front, "GET", &format!("/albums/{id}"), None);
        assert_eq!((got.status, got.text()), (200, profile), "album {i}");
        across += usize::from(got.header("x-served-by") != posted.header("x-served-by"));
    }
    assert!(across > 0, "no GET went to another origin than its POST");
    let image = bed.dir().join("nmtb.png");
    std::fs::write(&image, crate::albums::image(IMAGE_LEN)).unwrap();
    let s = run_json(&[
        "-X",
        "POST",
        "-n",
        "50",
        "-c",
        "4",
        "--form",
        &format!("profile={PROFILE};type=application/json"),
        "--form",
        &format!("image=@{}", image.display()),
        &format!("{}albums", bed.url(topology)),
    ]);
    assert_eq!(s["status_codes"]["200"].as_u64(), Some(50), "{}", s["status_codes"]);
    let origins = ["origin-1", "origin-2"].map(|name| album_counts(bed.state.server(name).unwrap().spec.listen));
    let sum = |key: &str| origins.iter().map(|c| c[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("created"), sum("read"), sum("not_found")), (70, 20, 0), "{origins:?}");
    assert!(origins.iter().all(|c| c["created"].as_u64().unwrap() > 0), "both origins stored albums: {origins:?}");
    // One directory inside the state directory (`down` removes it), private to the user.
    let albums = barrage_testbed::album_dir(bed.dir());
    assert_eq!(std::fs::read_dir(&albums).unwrap().count(), 70);
    assert_eq!(std::fs::metadata(&albums).unwrap().permissions().mode() & 0o777, 0o700);
}

#[test]
fn albums_posted_through_haproxy_are_found_whichever_origin_answers() {
    albums_are_found_through("haproxy-lb");
}

#[test]
fn albums_posted_through_nginx_are_found_whichever_origin_answers() {
    albums_are_found_through("nginx-lb");
}

/// The album study's flow through haproxy and two origins at 10 workers: every GET of an
/// album the flow just posted finds it (the check compares its content) though round robin
/// sends many GETs to the other origin, and the origins' own counts add up to barrage's.
#[test]
fn the_album_flow_succeeds_through_haproxy_whichever_origin_answers() {
    use crate::albums::album_counts;
    use crate::flows::{album_scenario, key, run_scenario};
    let Some(bed) = Testbed::up("haproxy-lb", &["--backends", "2"]) else { return };
    let front = bed.state.server("haproxy-lb").unwrap().spec.listen;
    let image = bed.dir().join("nmtb.png");
    std::fs::write(&image, crate::albums::image(crate::albums::IMAGE_LEN)).unwrap();
    let work = tempfile::tempdir().unwrap();
    let log = work.path().join("log.csv");
    let scenario = album_scenario(&front.to_string(), &image, "$.albumID", 200);
    let (_, total) = run_scenario(work.path(), &scenario, &["-c", "10", "-d", "2s", "--log", log.to_str().unwrap()]);
    let flows = key(&total.flows, "album");
    let (post, get) = (key(&total.names, "post-album"), key(&total.names, "get-album"));
    assert!(flows.requests >= 20, "only {} flows", flows.requests);
    assert_eq!((flows.failed, get.failed), (0, 0));
    let origins = ["origin-1", "origin-2"].map(|name| album_counts(bed.state.server(name).unwrap().spec.listen));
    let sum = |k: &str| origins.iter().map(|c| c[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("created"), sum("read"), sum("not_found")), (post.requests, get.requests, 0), "{origins:?}");
    assert!(origins.iter().all(|c| c["read"].as_u64().unwrap() > 0), "both origins answered GETs: {origins:?}");
    // Flows whose GET reached another origin than their POST: the shared store at work.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    let columns: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| columns.iter().position(|c| *c == name).unwrap();
    let (flow, step, backend) = (col("flow_id"), col("step_index"), col("backend"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let backend_of = |id: &str, s: &str| rows.iter().find(|r| r[flow] == id && r[step] == s).map(|r| r[backend]);
    let across =
        rows.iter().filter(|r| r[step] == "1").filter(|r| backend_of(r[flow], "0") != Some(r[backend])).count();
    assert!(across > 0, "no GET went to another origin than its POST");
}

/// Whether `addr` answers `ping` with `pong` at once, over a plain std TcpStream.
fn kv_answers(addr: std::net::SocketAddr, ping: &[u8], pong: &[u8]) -> bool {
    use std::io::{Read, Write};
    let Ok(mut conn) = std::net::TcpStream::connect(addr) else { return false };
    conn.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
    let mut reply = vec![0u8; pong.len()];
    conn.write_all(ping).is_ok() && conn.read_exact(&mut reply).is_ok() && reply == pong
}

/// `up TOPOLOGY --backends N`: every instance answers its ping and `status` lists its URL;
/// `stop VICTIM` refuses connections there while the others answer; `start VICTIM` answers
/// on the same port again; `down` leaves none of the processes the state listed.
fn key_value_instances_stop_start_and_go_down(topology: &str, n: usize, victim: &str, ping: &[u8], pong: &[u8]) {
    let Some(bed) = Testbed::up(topology, &["--backends", &n.to_string()]) else { return };
    let names: Vec<String> = (1..=n).map(|i| format!("{topology}-{i}")).collect();
    let listed: Vec<&str> = bed.state.servers.iter().map(|s| s.spec.name.as_str()).collect();
    assert_eq!(listed, names, "{n} instances and nothing else");
    let addr = |name: &str| bed.state.server(name).unwrap().spec.listen;
    let status = String::from_utf8(bed.command(&["status"]).stdout).unwrap();
    for name in &names {
        assert!(kv_answers(addr(name), ping, pong), "{name} answers");
        let scheme = if topology == "redis" { "redis" } else { "memcache" };
        let line = status.lines().find(|l| l.starts_with(name.as_str())).unwrap_or_else(|| panic!("{status}"));
        assert!(line.contains(&format!("{scheme}://{}", addr(name))) && line.ends_with("running"), "{status}");
    }
    let out = bed.command(&["stop", victim]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let refused = std::net::TcpStream::connect(addr(victim)).map_err(|e| e.kind());
    assert_eq!(refused.err(), Some(std::io::ErrorKind::ConnectionRefused), "{victim} is stopped");
    assert!(names.iter().filter(|n| *n != victim).all(|n| kv_answers(addr(n), ping, pong)), "the others answer");
    let out = bed.command(&["start", victim]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(kv_answers(addr(victim), ping, pong), "{victim} answers on the same port again");
    let pids = bed.pids();
    assert_eq!(pids.len(), n, "{pids:?}");
    let dir = bed.dir().to_path_buf();
    drop(bed);
    for pid in pids {
        assert!(!alive(pid), "server {pid} still runs after down");
    }
    assert!(!dir.exists(), "state removed: {}", dir.display());
}

#[test]
fn redis_instances_answer_ping_stop_start_by_name_and_go_down() {
    key_value_instances_stop_start_and_go_down("redis", 2, "redis-2", b"PING\r\n", b"+PONG\r\n");
}

#[test]
fn memcached_instances_answer_version_stop_start_by_name_and_go_down() {
    key_value_instances_stop_start_and_go_down("memcached", 3, "memcached-2", b"version\r\n", b"VERSION ");
}

/// `INFO commandstats` of the redis-server at `addr`, over plain TCP: each command's
/// `calls`, by name (`set`, `get`).
fn redis_calls(addr: std::net::SocketAddr) -> std::collections::HashMap<String, u64> {
    use std::io::{BufRead, Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    conn.write_all(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n").unwrap();
    // A bulk string: `$LEN\r\n`, LEN bytes, `\r\n`.
    let mut reader = std::io::BufReader::new(conn);
    let mut head = String::new();
    reader.read_line(&mut head).unwrap();
    let len: usize = head.trim().strip_prefix('$').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{head}"));
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).unwrap();
    // `cmdstat_set:calls=1000,usec=…,…`
    String::from_utf8(body)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (name, stats) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats.split(',').find_map(|kv| kv.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_string(), calls))
        })
        .collect()
}

/// `barrage run URL ARGS -o FILE` against a key-value server: its output, and the results
/// file added up.
fn kv_run(dir: &Path, url: &str, args: &[&str]) -> (Output, barrage_metrics::Recorder) {
    let file = dir.join("run.brg");
    let _ = std::fs::remove_file(&file);
    let base = ["-n", "2000", "-c", "4", "--ratio", "1:1", "--key-maximum", "99", "--timeout", "5s"];
    let out = barrage().arg("run").arg(url).args(base).args(args).arg("-o").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(file.exists(), "no results file: {stderr}");
    (out, crate::flows::totals(&file).1)
}

/// SETs and GETs of a run, as barrage counted them (`By name`), each all successful.
fn sets_and_gets(total: &barrage_metrics::Recorder) -> (u64, u64) {
    let named = |name: &str| {
        let k = total.names.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("no {name} in {:?}", total.names));
        assert_eq!(k.failed, 0, "{name}");
        k.requests
    };
    (named("SET"), named("GET"))
}

/// `up redis --tls`: the instance serves `rediss://` beside `redis://` with the testbed's
/// certificate. A run trusting the CA (or `-k`) succeeds, with one handshake measured per
/// connection and redis-server's own counters agreeing; a run trusting neither fails every
/// request with a TLS error, and nothing reaches the server.
#[test]
fn redis_serves_tls_with_the_testbed_certificate() {
    use barrage_metrics::{ErrorKind, Phase};
    let Some(bed) = Testbed::up("redis", &["--tls", "--backends", "1"]) else { return };
    let ca = bed.state.ca.clone().expect("a CA with --tls");
    let spec = &bed.state.server("redis-1").unwrap().spec;
    let tls = spec.tls_listen.expect("a TLS port");
    let url = bed.tls_url("redis-1");
    assert_eq!(url, format!("rediss://{tls}"));
    let status = String::from_utf8(bed.command(&["status"]).stdout).unwrap();
    let rows: Vec<&str> = status.lines().filter(|l| l.starts_with("redis-1 ")).collect();
    assert_eq!(rows.len(), 2, "{status}");
    assert!(rows[0].contains(&format!("redis://{}", spec.listen)) && rows[1].contains(&url), "{status}");
    assert!(status.contains(&format!("--cacert {}", ca.display())), "{status}");
    let before = redis_calls(spec.listen);
    let calls = |name: &str| redis_calls(spec.listen).get(name).copied().unwrap_or(0);
    let out_dir = tempfile::tempdir().unwrap();

    let (out, total) = kv_run(out_dir.path(), &url, &["--cacert", ca.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = &total.counts;
    assert_eq!((c.completed, c.ok), (2000, 2000), "every command succeeded: {:?}", c.errors);
    assert_eq!(c.connections, 4, "one connection per client");
    assert_eq!(total.phases[Phase::Tls as usize].len(), 4, "one handshake per connection");
    assert!(total.phases[Phase::Tls as usize].min() > 0);
    assert_eq!((before.get("set"), before.get("get")), (None, None), "nothing was sent before");
    // redis-server counted what barrage did: --ratio 1:1's rounds are exact over the run.
    let (sets, gets) = sets_and_gets(&total);
    assert_eq!((calls("set"), calls("get")), (sets, gets), "redis-server counted them");
    assert_eq!((sets, gets), (1000, 1000));

    let (out, total) = kv_run(out_dir.path(), &url, &["-k"]);
    assert!(out.status.success(), "-k: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!((total.counts.ok, total.counts.connections), (2000, 4));
    assert_eq!(total.phases[Phase::Tls as usize].len(), 4);
    let (more_sets, more_gets) = sets_and_gets(&total);
    assert_eq!((calls("set"), calls("get")), (sets + more_sets, gets + more_gets));
    let (sets, gets) = (calls("set"), calls("get"));

    // Trusting neither the CA nor anything: the system's roots do not know the testbed's CA.
    let (out, total) = kv_run(out_dir.path(), &url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "not a result: {stderr}");
    let said = "all 2000 requests failed (mostly tls: invalid peer certificate: UnknownIssuer)";
    assert!(stderr.contains(said), "the failure is said: {stderr}");
    let c = &total.counts;
    assert_eq!((c.completed, c.ok, c.connections), (2000, 0, 0), "{c:?}");
    assert_eq!(c.errors[ErrorKind::Tls as usize], 2000, "every request failed on TLS: {:?}", c.errors);
    assert_eq!((calls("set"), calls("get")), (sets, gets), "no command reached redis-server");
}

#[test]
fn memcached_refuses_tls_with_exit_2_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = barrage().args(["testbed", "up", "memcached", "--tls", "--dir"]).arg(dir.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("the memcached testbed has no TLS: barrage has no memcache-over-TLS target"), "{stderr}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing was started or written");
}

/// Issue 32, finding 7, as it was found: a stepped run through haproxy whose origins cannot
/// keep up (each answer takes 500 ms, so 256 slots carry about 512 a second and the 700/s
/// step cannot be sent whole) once read "success 100.00%", its last step too, beside a
/// warning of the requests never sent. Success is over the requests due.
#[test]
fn a_stepped_run_through_haproxy_counts_what_it_never_sent() {
    let Some(bed) = Testbed::up("haproxy-lb", &[]) else { return };
    let url = format!("{}delay/500", bed.url("haproxy-lb"));
    let s = run_json(&["--rate", "10,50,100,500,700", "--step", "1s", "--timeout", "5s", &url]);
    let r = &s["requests"];
    let count = |v: &Value| v.as_u64().unwrap();
    let (total, ok, dropped) = (count(&r["total"]), count(&r["ok"]), count(&r["dropped"]));
    assert_eq!(ok, total, "haproxy answered every request it was sent: {r}");
    assert!(dropped >= 50, "the 700/s step cannot be sent whole through 256 slots of 500 ms: {r}");
    let success = f(&s["success_ratio"]);
    assert_eq!(success, ok as f64 / (total + dropped) as f64, "{r}");
    assert!(success < 1.0);
    let last = &s["steps"][4];
    assert_eq!((last["label"].as_str(), count(&last["dropped"])), (Some("700 req/s"), dropped), "{last}");
    assert!(f(&last["success_ratio"]) < 1.0, "{last}");
    for step in &s["steps"].as_array().unwrap()[..4] {
        assert_eq!((count(&step["dropped"]), f(&step["success_ratio"])), (0, 1.0), "{step}");
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
