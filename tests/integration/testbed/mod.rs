//! The testbed with the real servers, one submodule per side of it: its fronts (caches,
//! balancers, HTTPS, HTTP/3, monitoring), the studies that bring one up, its key-value
//! servers, and its lifecycle (`down` leaving nothing behind, whoever died). Each test brings
//! up its own testbed in a temporary directory and takes it down even when it fails; the
//! [`Testbed`] that does so, and the helpers other modules read a testbed with, live here.

mod fronts;
mod kv;
mod lifecycle;
mod studies;

use crate::util::{barrage, require};
use barrage_testbed::{program_path, State};
use serde_json::Value;
use std::path::Path;
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

/// A process that is neither running nor a zombie (reaped).
pub(crate) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
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
