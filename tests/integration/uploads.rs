//! Uploads: generated bodies, unique per request or not, and multipart forms.

use crate::util::{barrage, http_get, origin, CaptureServer, Fault, FaultServer};
use barrage_server::ServeConfig;

#[test]
fn multipart_form_arrives_intact() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let image: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    let cover = dir.path().join("cover.jpg");
    std::fs::write(&cover, &image).unwrap();
    let profile = r#"{"artist":"x","title":"a; b"}"#;
    let out = barrage()
        .args(["run", "-n", "1", "-c", "1", "--format", "json"])
        .args(["--form", &format!("profile={profile};type=application/json")])
        .args(["--form", &format!("image=@{}", cover.display())])
        .arg(format!("{}/_barrage/multipart", o.url()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status_codes"]["200"], 1, "{v}");
    // What the origin's multipart parser found.
    let parts: serde_json::Value = serde_json::from_str(&http_get(o.addr(), "/_barrage/multipart/last")).unwrap();
    let parts = parts.as_array().unwrap();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_eq!(parts[0]["name"], "profile");
    assert_eq!(parts[0]["content_type"], "application/json");
    assert_eq!(parts[0]["len"], profile.len());
    assert_eq!(parts[0]["crc32"], crc32fast::hash(profile.as_bytes()));
    assert_eq!(parts[1]["name"], "image");
    assert_eq!(parts[1]["filename"], "cover.jpg");
    assert_eq!(parts[1]["len"], image.len());
    assert_eq!(parts[1]["crc32"], crc32fast::hash(&image));
}

fn bodies(args: &[&str]) -> Vec<(String, Vec<u8>)> {
    let cap = CaptureServer::start();
    let url = format!("http://{}/up", cap.addr);
    let out = barrage().args(["run", "-c", "1", "-n", "3"]).args(args).arg(&url).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (0..3)
        .map(|_| {
            let req = cap.next_raw();
            let end = req.windows(4).position(|w| w == b"\r\n\r\n").expect("a request head");
            (String::from_utf8_lossy(&req[..end]).into_owned(), req[end + 4..].to_vec())
        })
        .collect()
}

#[test]
fn generated_bodies_pattern_unique_and_default_method() {
    let pattern = bodies(&["--body-size", "100", "--body-pattern", "abc"]);
    for (head, body) in &pattern {
        assert!(head.starts_with("POST /up "), "{head}");
        assert_eq!(body, &b"abc".iter().copied().cycle().take(100).collect::<Vec<u8>>());
    }
    let unique = bodies(&["--body-size", "1k", "--body-unique", "-X", "PUT"]);
    assert!(unique.iter().all(|(head, body)| head.starts_with("PUT ") && body.len() == 1024));
    assert_ne!(unique[0].1, unique[1].1);
    assert_ne!(unique[1].1, unique[2].1);
}

#[test]
fn upload_throughput_is_reported() {
    let o = origin(ServeConfig::default());
    let out = barrage()
        .args(["run", "-n", "20", "-c", "2", "-X", "PUT", "--body-size", "64k", "--format", "json"])
        .arg(format!("{}/store/object", o.url()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status_codes"]["201"], 20, "{v}");
    let out_mean = v["bytes"]["out_mean"].as_f64().unwrap();
    assert!(out_mean > 65_536.0 && out_mean < 66_000.0, "{out_mean}");
    assert!(v["bytes"]["out_per_sec"].as_f64().unwrap() > v["bytes"]["in_per_sec"].as_f64().unwrap());
    let bad = barrage().args(["run", "-n", "1", "--body-size", "2g", &o.url()]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// The head and body of each request `cap` received, by request line.
fn captured(cap: &CaptureServer, n: usize) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = (0..n)
        .map(|_| {
            let req = cap.next_raw();
            let end = req.windows(4).position(|w| w == b"\r\n\r\n").expect("a request head");
            (String::from_utf8_lossy(&req[..end]).to_ascii_lowercase(), req[end + 4..].to_vec())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn form_with_targets_goes_only_to_targets_that_take_a_body() {
    // What each request carried, as the server received it: a GET takes no form, a POST
    // without a body of its own takes it, a PUT with its own body keeps that body.
    let cap = CaptureServer::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("own.txt"), b"own body").unwrap();
    let targets = dir.path().join("targets.txt");
    let a = cap.addr;
    std::fs::write(&targets, format!("GET http://{a}/a\n\nPOST http://{a}/b\n\nPUT http://{a}/c\n@own.txt\n")).unwrap();
    let out = barrage()
        .args(["run", "-c", "1", "-n", "3", "--form", "field=value"])
        .args(["--targets", targets.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reqs = captured(&cap, 3);
    let (get, post, put) = (&reqs[0], &reqs[1], &reqs[2]);
    assert!(get.0.starts_with("get /a "), "{}", get.0);
    assert!(!get.0.contains("content-length") && !get.0.contains("content-type"), "GET head: {}", get.0);
    assert!(get.1.is_empty(), "GET body: {:?}", String::from_utf8_lossy(&get.1));
    assert!(post.0.starts_with("post /b ") && post.0.contains("content-type: multipart/form-data; boundary="));
    assert!(String::from_utf8_lossy(&post.1).contains("name=\"field\"\r\n\r\nvalue\r\n"), "{:?}", post.1);
    assert!(put.0.starts_with("put /c ") && !put.0.contains("multipart"), "PUT head: {}", put.0);
    assert_eq!(put.1, b"own body");
}

#[test]
fn a_body_no_target_can_take_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("gets.txt");
    std::fs::write(&targets, "GET http://127.0.0.1:1/a\n\nPOST http://127.0.0.1:1/b\n@gets.txt\n").unwrap();
    for flag in [["--form", "a=1"], ["--body", "x"], ["--body-size", "1k"]] {
        let out = barrage()
            .args(["run", "-n", "1"])
            .args(flag)
            .args(["--targets", targets.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {err}");
        assert!(err.contains(flag[0]) && err.contains("gets.txt") && err.lines().count() == 1, "{flag:?}: {err}");
    }
}

#[test]
fn form_fields_from_files_as_curl() {
    // curl -F: `<file` is the file's content as a text field (no file name), `@file` a file
    // upload whose name and type can be set; the origin's parser reports what arrived.
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.md");
    std::fs::write(&notes, "first line\nsecond; line\n").unwrap();
    let data = dir.path().join("data.bin");
    let bytes: Vec<u8> = (0..3000u32).map(|i| (i * 13 % 256) as u8).collect();
    std::fs::write(&data, &bytes).unwrap();
    let out = barrage()
        .args(["run", "-n", "1", "-c", "1"])
        .args(["--form", &format!("note=<{}", notes.display())])
        .args(["--form", &format!("doc=@{};type=text/csv;filename=report.csv", data.display())])
        .args(["--form", &format!("raw=@{}", data.display())])
        .args(["--form", "plain=a value"])
        .arg(format!("{}/_barrage/multipart", o.url()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let parts: serde_json::Value = serde_json::from_str(&http_get(o.addr(), "/_barrage/multipart/last")).unwrap();
    let parts = parts.as_array().unwrap();
    assert_eq!(parts.len(), 4, "{parts:?}");
    let note = &parts[0];
    assert_eq!(
        (&note["name"], &note["filename"], &note["content_type"]),
        (&"note".into(), &None::<()>.into(), &None::<()>.into()),
        "{note}"
    );
    assert_eq!(
        (note["len"].as_u64(), note["crc32"].as_u64()),
        (Some(24), Some(crc32fast::hash(b"first line\nsecond; line\n").into()))
    );
    let doc = &parts[1];
    assert_eq!(
        (doc["filename"].as_str(), doc["content_type"].as_str()),
        (Some("report.csv"), Some("text/csv")),
        "{doc}"
    );
    assert_eq!(doc["crc32"].as_u64(), Some(crc32fast::hash(&bytes).into()));
    let raw = &parts[2];
    assert_eq!(
        (raw["filename"].as_str(), raw["content_type"].as_str()),
        (Some("data.bin"), Some("application/octet-stream")),
        "{raw}"
    );
    let plain = &parts[3];
    assert_eq!((plain["filename"].as_str(), plain["len"].as_u64()), (None, Some(7)), "{plain}");
}

#[test]
fn body_files_are_bounded() {
    // A sparse file just over the 1 GiB limit: refused from its size, without reading it.
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.bin");
    std::fs::File::create(&big).unwrap().set_len((1 << 30) + 1).unwrap();
    let targets = dir.path().join("targets.txt");
    std::fs::write(&targets, "POST http://127.0.0.1:1/b\n@big.bin\n").unwrap();
    let big = big.display().to_string();
    let cases: [&[&str]; 4] = [
        &["--form", &format!("f=@{big}"), "http://127.0.0.1:1/"],
        &["--form", &format!("f=<{big}"), "http://127.0.0.1:1/"],
        &["--body", &format!("@{big}"), "http://127.0.0.1:1/"],
        &["--targets", targets.to_str().unwrap()],
    ];
    for args in cases {
        let started = std::time::Instant::now();
        let out = barrage().args(["run", "-n", "1"]).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("1 GiB") && err.contains("big.bin"), "{args:?}: {err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{args:?} read the file");
    }
}

/// Runs barrage with `args` to its end, sampling the kernel's peak resident memory of the
/// process (VmHWM) as it runs: the largest figure read, KiB, and the JSON report. The run
/// must exit with `code`.
fn peak_rss_of_run(args: &[&str], code: i32) -> (u64, serde_json::Value) {
    let mut child = barrage().args(args).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        // VmHWM only grows, so the last figure read before exit is within one sampling
        // period of the peak; the pause paces the sampling, it synchronises nothing.
        let status = std::fs::read_to_string(&status_file).unwrap_or_default();
        let hwm = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next());
        peak = peak.max(hwm.and_then(|v| v.parse().ok()).unwrap_or(0));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(code), "{args:?}");
    (peak, serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn large_bodies_are_shared_by_every_request_in_flight() {
    // A server that accepts and never reads: every request stays in flight, its body queued
    // on its connection, until --timeout. 10 MiB at 200/s puts hundreds of them in flight at
    // once; one shared body means memory stays under 64 MiB plus that body, unique or not.
    let stalled = FaultServer::start(Fault::Silent);
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("run.brg");
    let body = 10 << 20;
    for unique in [false, true] {
        let mut args = vec!["run", "--rate", "200", "-d", "2s", "--timeout", "2s", "--body-size", "10m"];
        args.extend(["--format", "json", "-o", output.to_str().unwrap()]);
        if unique {
            args.push("--body-unique");
        }
        let url = stalled.url();
        args.push(&url);
        // Every request times out, so the run is a failure (exit 3) by design.
        let (peak_kib, v) = peak_rss_of_run(&args, 3);
        let r = &v["requests"];
        eprintln!("--body-unique {unique}: peak RSS {peak_kib} KiB, requests {r}");
        // Hundreds were sent and waited on the server together (256 in flight at most).
        assert!(r["sent"].as_u64().unwrap() >= 200, "{v}");
        assert_eq!(r["errors"], r["total"], "{v}");
        assert!(peak_kib < (64 << 10) + body / 1024, "--body-unique {unique}: peak RSS {peak_kib} KiB");
    }
}
