//! Uploads: generated bodies, unique per request or not, and multipart forms.

use crate::util::{barrage, http_get, origin, CaptureServer};
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
