//! What is sent: method, headers, body, Host under --resolve, round-robin over URLs.

use crate::util::{barrage, closed, origin, plan, raw_get, run, CaptureServer};
use barrage_server::ServeConfig;

#[test]
fn method_headers_and_body_arrive_as_given() {
    let cap = CaptureServer::start();
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("order.json");
    std::fs::write(&body, br#"{"artist":"x","n":1}"#).unwrap();
    let url = format!("http://{}/orders?x=1", cap.addr);
    let out = barrage()
        .args(["run", "-n", "1", "-c", "1", "-X", "POST", "-H", "Content-Type: application/json", "-H", "X-Trace: abc"])
        .args(["--body", &format!("@{}", body.display()), &url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let req = cap.next();
    assert!(req.starts_with("POST /orders?x=1 HTTP/1.1\r\n"), "{req}");
    let lower = req.to_ascii_lowercase();
    assert!(lower.contains("content-type: application/json"), "{req}");
    assert!(lower.contains("x-trace: abc"), "{req}");
    assert!(lower.contains(&format!("host: {}", cap.addr)), "{req}");
    assert!(req.ends_with(r#"{"artist":"x","n":1}"#), "{req}");
}

#[test]
fn resolve_keeps_the_name_for_host_and_skips_dns() {
    let cap = CaptureServer::start();
    let port = cap.addr.port();
    let url = format!("http://api.example.test:{port}/");
    let out = barrage()
        .args([
            "run",
            "-n",
            "1",
            "-c",
            "1",
            "--format",
            "json",
            "--resolve",
            &format!("api.example.test:{port}:127.0.0.1"),
            &url,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let req = cap.next();
    assert!(req.to_ascii_lowercase().contains(&format!("host: api.example.test:{port}")), "{req}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"]["ok"], 1);
    assert_eq!(v["phases"]["dns"]["count"], 0);
}

#[test]
fn several_urls_are_sent_round_robin() {
    let (a, b) = (origin(ServeConfig::default()), origin(ServeConfig::default()));
    let mut p = plan(&a.url(), closed(2));
    let second = plan(&b.url(), closed(2)).targets.remove(0);
    p.targets.push(second);
    p.requests = Some(40);
    let s = run(p);
    assert_eq!(s.requests.ok, 40);
    assert_eq!((a.requests(), b.requests()), (20, 20));
    assert_eq!(s.urls.len(), 2);
}

#[test]
fn bytes_out_count_headers_and_body() {
    let o = origin(ServeConfig::default());
    let mut p = plan(&format!("{}/store/item", o.url()), closed(1));
    p.targets[0].method = http::Method::PUT;
    p.targets[0].body = bytes::Bytes::from(vec![b'x'; 10_000]);
    p.requests = Some(5);
    let s = run(p);
    assert_eq!(s.status_codes["201"], 5, "{:?}", s.status_codes);
    // Every request carried its 10,000-byte body plus a request line and headers.
    assert!(s.bytes.out_mean > 10_000.0 && s.bytes.out_mean < 10_300.0, "{}", s.bytes.out_mean);
    assert!(s.bytes.out_per_sec > 0.0);
}

#[test]
fn objects_answer_ranges_and_conditional_requests() {
    let o = origin(ServeConfig { object_size: barrage_server::SizeDist::Fixed(5000), ..Default::default() });
    let (head, whole) = raw_get(o.addr(), "/obj/7", "");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(whole.len(), 5000);
    let etag = head.lines().find_map(|l| l.strip_prefix("etag: ")).expect("an ETag").to_string();
    let (head, part) = raw_get(o.addr(), "/obj/7", "Range: bytes=100-199\r\n");
    assert!(head.starts_with("HTTP/1.1 206") && head.contains("content-range: bytes 100-199/5000"), "{head}");
    assert_eq!(part, whole[100..200]);
    let (head, tail) = raw_get(o.addr(), "/obj/7", "Range: bytes=-10\r\n");
    assert!(head.starts_with("HTTP/1.1 206"), "{head}");
    assert_eq!(tail, whole[4990..]);
    let (head, _) = raw_get(o.addr(), "/obj/7", "Range: bytes=9000-\r\n");
    assert!(head.starts_with("HTTP/1.1 416") && head.contains("content-range: bytes */5000"), "{head}");
    let (head, body) = raw_get(o.addr(), "/obj/7", &format!("If-None-Match: {etag}\r\n"));
    assert!(head.starts_with("HTTP/1.1 304") && body.is_empty(), "{head}");
    let (head, _) = raw_get(o.addr(), "/obj/7", "If-Modified-Since: Tue, 02 Jan 2024 00:00:00 GMT\r\n");
    assert!(head.starts_with("HTTP/1.1 304"), "{head}");
    let (head, _) = raw_get(o.addr(), "/obj/7", "If-Modified-Since: Sun, 31 Dec 2023 00:00:00 GMT\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200") && head.contains("last-modified: Mon, 01 Jan 2024 00:00:00 GMT"),
        "{head}"
    );
}

#[test]
fn object_catalog_bounds_and_sizes_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = dir.path().join("sizes.txt");
    std::fs::write(&sizes, "# sizes seen in production\n100\n2k\n").unwrap();
    let object_size: barrage_server::SizeDist = format!("file:{}", sizes.display()).parse().unwrap();
    let o = origin(ServeConfig { objects: Some(50), object_size, ..Default::default() });
    let mut seen = std::collections::BTreeSet::new();
    for id in 0..50 {
        let (head, body) = raw_get(o.addr(), &format!("/obj/{id}"), "");
        assert!(head.starts_with("HTTP/1.1 200"), "{id}: {head}");
        seen.insert(body.len());
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [100, 2048]);
    for outside in ["/obj/50", "/obj/abc"] {
        let (head, _) = raw_get(o.addr(), outside, "");
        assert!(head.starts_with("HTTP/1.1 404"), "{outside}: {head}");
    }
    let bad = "file:/nonexistent/sizes.txt".parse::<barrage_server::SizeDist>().unwrap_err();
    assert!(bad.to_string().contains("object size file"), "{bad}");
}
