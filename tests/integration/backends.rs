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
    assert!(text.contains("c stopped answering after second"), "{text}");
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
