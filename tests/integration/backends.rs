//! Which backend answered: shares, Jain's fairness index, and a backend that stops.

use crate::util::{barrage, closed, open, origin, plan, run, run_in};
use barrage_metrics::file::ResultsReader;
use barrage_server::ServeConfig;
use std::time::{Duration, Instant};

fn named(name: &str) -> barrage_server::RunningServer {
    origin(ServeConfig { name: Some(name.into()), ..Default::default() })
}

#[test]
fn round_robin_over_three_backends_is_even() {
    let origins = [named("a"), named("b"), named("c")];
    let mut p = plan(&origins[0].url(), closed(3));
    for o in &origins[1..] {
        p.targets.push(plan(&o.url(), closed(3)).targets.remove(0));
    }
    p.requests = Some(300);
    let s = run(p);
    assert_eq!(s.backends.len(), 3, "{:?}", s.backends);
    for b in &s.backends {
        assert!((b.share - 1.0 / 3.0).abs() <= 0.02, "{}: {}", b.name, b.share);
        assert_eq!(b.failed, 0);
    }
    assert!(s.fairness.unwrap() > 0.99, "{:?}", s.fairness);
}

#[test]
fn a_backend_stopped_mid_run_shows_when() {
    let (a, b) = (named("a"), named("b"));
    let c = named("c");
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(&a.url(), open(150.0));
    for o in [&b, &c] {
        p.targets.push(plan(&o.url(), open(1.0)).targets.remove(0));
    }
    // Long enough that the stop (after 2 s, plus the origin's 0.5 s shutdown grace for
    // open connections) is well before the end.
    p.duration = Some(Duration::from_secs(6));
    p.timeout = Duration::from_secs(1);
    let path = dir.path().join("stop.brg");
    let s = std::thread::scope(|scope| {
        let runner = scope.spawn(|| run_in(dir.path(), "stop", p).1);
        // Once two seconds are on disk, stop backend c.
        let deadline = Instant::now() + Duration::from_secs(10);
        while ResultsReader::open(&path).map_or(0, |mut r| std::iter::from_fn(|| r.next_interval()).count()) < 2 {
            assert!(Instant::now() < deadline, "the run wrote nothing");
            std::thread::sleep(Duration::from_millis(20));
        }
        c.shutdown();
        runner.join().unwrap()
    });
    let c_stats = s.backends.iter().find(|b| b.name == "c").expect("c answered at first");
    let last = s.intervals.last().unwrap().second;
    assert!(c_stats.last_second + 1 < last, "c answered until second {} of {last}", c_stats.last_second);
    // Its share went to zero: later seconds have no c, and requests meant for it failed.
    let after: Vec<_> = s.intervals.iter().filter(|i| i.second > c_stats.last_second).collect();
    assert!(after.iter().all(|i| !i.backends.contains_key("c")));
    assert!(after.iter().any(|i| i.fairness.is_some_and(|f| f < 0.7)), "{:?}", after);
    assert!(s.requests.errors > 0);
    let text = barrage().args(["report", path.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let line = text.lines().find(|l| l.contains("c answered nothing from")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.ends_with("other request(s) finished") && line.contains("to the end:"), "{line}");
}

/// Kills the child when dropped, so a failed assertion leaves no server running.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_instances_behind_a_round_robin_url_list() {
    use std::io::BufRead;
    let mut child = Child(
        barrage()
            .args(["serve", "--instances", "3", "--listen", "127.0.0.1:0", "--threads", "1"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = std::io::BufReader::new(child.0.stdout.take().unwrap());
    let urls: Vec<String> = stdout
        .lines()
        .take(3)
        .map(|l| l.unwrap().strip_prefix("listening on ").expect("an address line").to_string())
        .collect();
    let out = barrage().args(["run", "-n", "300", "-c", "3", "--format", "json"]).args(&urls).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut names: Vec<&str> = v["backends"].as_array().unwrap().iter().map(|b| b["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["origin-1", "origin-2", "origin-3"]);
    for b in v["backends"].as_array().unwrap() {
        assert!((b["share"].as_f64().unwrap() - 1.0 / 3.0).abs() <= 0.02, "{b}");
    }
    assert!(v["fairness"].as_f64().unwrap() > 0.99);
    // SIGTERM ends the server cleanly.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    assert!(child.0.wait().unwrap().success());
}

/// Ground truth: the test stops backend b and starts it again on the same port, timing the
/// outage itself. The report shows the gap in b's answers, as long as the outage within
/// its stated resolution (a tenth of a second each end, and a little for a busy machine).
#[test]
fn a_backend_stopped_and_restarted_shows_a_gap_as_long_as_its_outage() {
    let (a, b) = (named("a"), named("b"));
    let b_addr = b.addr();
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(&a.url(), open(200.0));
    p.targets.push(plan(&b.url(), open(1.0)).targets.remove(0));
    p.duration = Some(Duration::from_secs(7));
    p.timeout = Duration::from_secs(1);
    let path = dir.path().join("gap.brg");
    let (outage, restarted) = std::thread::scope(|scope| {
        let runner = scope.spawn(|| run_in(dir.path(), "gap", p).1);
        let deadline = Instant::now() + Duration::from_secs(10);
        while ResultsReader::open(&path).map_or(0, |mut r| std::iter::from_fn(|| r.next_interval()).count()) < 2 {
            assert!(Instant::now() < deadline, "the run wrote nothing");
            std::thread::sleep(Duration::from_millis(20));
        }
        let stopped = Instant::now();
        b.shutdown();
        // The outage itself (not a synchronisation): about two seconds, measured below.
        std::thread::sleep((stopped + Duration::from_secs(2)).saturating_duration_since(Instant::now()));
        let config = ServeConfig { listen: b_addr, threads: 1, name: Some("b".into()), ..Default::default() };
        let again = barrage_server::RunningServer::start(config).expect("b starts again on its port");
        let outage = stopped.elapsed();
        runner.join().unwrap();
        (outage.as_secs_f64(), again)
    });
    let out = barrage().args(["report", path.to_str().unwrap(), "--format", "json"]).output().unwrap();
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let backend = |name: &str| s["backends"].as_array().unwrap().iter().find(|x| x["name"] == name).unwrap().clone();
    let gaps = backend("b")["gaps"].as_array().cloned().unwrap_or_default();
    let longest = gaps
        .iter()
        .max_by(|x, y| x["length_s"].as_f64().unwrap().total_cmp(&y["length_s"].as_f64().unwrap()))
        .unwrap_or_else(|| panic!("no gap in b's answers (outage {outage:.2} s): {}", backend("b")));
    let length = longest["length_s"].as_f64().unwrap();
    assert!((length - outage).abs() <= 0.25, "gap {length} s against an outage of {outage:.3} s: {longest}");
    assert!(longest["to_s"].is_number(), "b answered again after its restart: {longest}");
    // a answered throughout: no gap anywhere near that long.
    let a_gaps = backend("a")["gaps"].as_array().cloned().unwrap_or_default();
    assert!(a_gaps.iter().all(|g| g["length_s"].as_f64().unwrap() < 0.5), "{a_gaps:?}");
    // The text says it, with the resolution; the old "answered 0s–7s" alone hid it.
    let text = barrage().args(["report", path.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let line = text.lines().find(|l| l.contains("b answered nothing from")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(&format!("{length:.1}s ± 0.1s")), "{line}");
    assert!(restarted.requests() > 0, "the restarted b served requests");
}
