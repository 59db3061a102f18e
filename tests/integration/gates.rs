//! SLO gates on a run against an origin with a known delay: pass and fail with their exit
//! codes, JUnit XML valid against `schema/junit.xsd`.

use crate::util::{barrage, origin, require};
use barrage_server::{LatencyDist, ServeConfig};
use std::time::Duration;

#[test]
fn slos_pass_and_fail_with_exit_codes_and_valid_junit() {
    let server =
        origin(ServeConfig { latency: Some(LatencyDist::Fixed(Duration::from_millis(20))), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("slo.xml");
    let run = |slos: &[&str]| {
        let mut cmd = barrage();
        cmd.args(["run", "-n", "60", "-c", "4", &server.url(), "--junit"]).arg(&junit);
        for s in slos {
            cmd.args(["--slo", s]);
        }
        cmd.output().unwrap()
    };
    // 20 ms per answer: p50 is about 20 ms, never below.
    let pass = run(&["p50<40ms", "p99<250ms", "success>=99.5%", "errors<1", "throughput>=10/s"]);
    let text = String::from_utf8_lossy(&pass.stdout);
    assert_eq!(pass.status.code(), Some(0), "{text}");
    assert_eq!(text.matches("SLO pass").count(), 5, "{text}");
    let fail = run(&["p50<10ms", "success>=99.5%"]);
    let text = String::from_utf8_lossy(&fail.stdout);
    assert_eq!(fail.status.code(), Some(1), "a missed objective fails the run: {text}");
    assert!(text.contains("SLO FAIL  p50<10ms  (actual 2") && text.contains("SLO pass  success>=99.5%"), "{text}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
    if require("xmllint", std::process::Command::new("xmllint").arg("--version").output().is_ok()) {
        let schema = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/junit.xsd");
        let check =
            std::process::Command::new("xmllint").args(["--noout", "--schema", schema]).arg(&junit).output().unwrap();
        assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    }
    // A malformed objective is a usage error naming the token.
    let bad = barrage().args(["run", "-n", "1", &server.url(), "--slo", "p99<=fast"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("'fast' is not a duration"));
}
