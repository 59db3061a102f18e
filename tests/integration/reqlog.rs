//! `--log`: one row per request, streamed; CSV or JSON lines; sampled.

use crate::util::{barrage, origin};
use barrage_server::ServeConfig;

#[test]
fn csv_log_has_a_row_per_request_with_every_column() {
    let o = origin(ServeConfig { name: Some("web-1".into()), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.csv");
    let url = format!("{}/obj/{{id}}", o.url());
    let out = barrage()
        .args(["run", "-n", "300", "-c", "3", "--objects", "50", "--log", log.to_str().unwrap(), &url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 300);
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{r:?}");
        assert_eq!(r[col("status")], "200");
        assert_eq!(r[col("backend")], "web-1");
        assert!(r[col("url")].contains("/obj/") && !r[col("url")].contains("{id}"), "{r:?}");
        assert!(r[col("service_us")].parse::<u64>().unwrap() > 0);
        assert!(r[col("wait_us")].parse::<u64>().is_ok());
        assert_eq!(r[col("attempt")], "1");
    }
    // A kept-alive connection's later requests have no connect phase: an empty cell, not 0.
    assert!(rows.iter().any(|r| r[col("connect_us")].is_empty()));
    let workers: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[col("worker")]).collect();
    assert_eq!(workers.len(), 3);
}

#[test]
fn jsonl_log_is_sampled_and_memory_stays_flat() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let out = barrage()
        .args([
            "run",
            "-n",
            "100000",
            "-c",
            "32",
            "--format",
            "json",
            "--log",
            log.to_str().unwrap(),
            "--log-sample",
            "0.5",
            &o.url(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let n = text.lines().count();
    assert!((47_000..=53_000).contains(&n), "{n} rows for a 0.5 sample of 100,000");
    for line in text.lines().take(100) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["status"], 200);
        assert!(v["error"].is_null());
        assert!(v["service_us"].as_u64().is_some());
    }
    // The log (over 10 MiB here) is streamed, not kept: barrage's memory stays small.
    assert!(text.len() > 10 << 20, "{} bytes", text.len());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let peak_kib = v["generator"]["peak_rss_kib"].as_u64().unwrap();
    assert!(peak_kib > 0 && peak_kib < 64 * 1024, "peak {peak_kib} KiB: {} {}", v["generator"], v["duration"]);
}
