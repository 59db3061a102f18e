//! What is sent: method, headers, body, Host under --resolve, round-robin over URLs.

use crate::util::{barrage, closed, origin, plan, raw_get, run, CaptureServer, ServeProcess};
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
    // Five requests are too few for a rate (MIN_RATE_REQUESTS).
    assert_eq!(s.bytes.out_per_sec, None);
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
    let bad = format!("file:{}", dir.path().join("missing/sizes.txt").display())
        .parse::<barrage_server::SizeDist>()
        .unwrap_err();
    assert!(bad.to_string().contains("object size file"), "{bad}");
}

/// A streamed GET over a raw socket: time to the first byte and to the end, the response
/// head, the body's length, and the CRC-32 of the body bytes in `range`.
struct Streamed {
    first_byte: std::time::Duration,
    total: std::time::Duration,
    head: String,
    len: u64,
    crc: u32,
}

fn stream_get(addr: std::net::SocketAddr, path: &str, extra: &str, range: std::ops::Range<u64>) -> Streamed {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let started = std::time::Instant::now();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n").unwrap();
    let mut buf = vec![0u8; 256 << 10];
    let (mut first_byte, mut head, mut raw_head) = (None, None, Vec::new());
    let (mut len, mut crc) = (0u64, crc32fast::Hasher::new());
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        first_byte.get_or_insert_with(|| started.elapsed());
        let mut body = &buf[..n];
        if head.is_none() {
            raw_head.extend_from_slice(body);
            let Some(end) = raw_head.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
            head = Some(String::from_utf8_lossy(&raw_head[..end]).into_owned());
            let already = raw_head.len() - (end + 4);
            body = &buf[n - already..n];
        }
        let (from, to) = (len, len + body.len() as u64);
        let (a, b) = (range.start.clamp(from, to), range.end.clamp(from, to));
        crc.update(&body[(a - from) as usize..(b - from) as usize]);
        len = to;
    }
    Streamed {
        first_byte: first_byte.unwrap(),
        total: started.elapsed(),
        head: head.unwrap(),
        len,
        crc: crc.finalize(),
    }
}

#[test]
fn large_bodies_stream_from_the_origin() {
    // The origin in its own process, so its peak memory is the kernel's figure for it alone.
    let o = ServeProcess::start(&["--object-size", "64m"]);
    const MIB: u64 = 1 << 20;
    // A small body sent whole, first: it also makes the pattern, once per process.
    let small = stream_get(o.addr, "/bytes/1m", "", 0..MIB);
    let peak_before = o.vm_hwm_kib();
    // The largest body the origin makes: a fixed cost such as a scheduling delay on a busy
    // machine is small beside its transfer.
    let big = stream_get(o.addr, "/bytes/1g", "", 1023 * MIB..1024 * MIB);
    let grown_kib = o.vm_hwm_kib() - peak_before;
    assert!(big.head.starts_with("HTTP/1.1 200"), "{}", big.head);
    assert_eq!(big.len, 1024 * MIB);
    // Streamed: the origin holds a few frames at a time, not the body (before: 1 GiB more).
    assert!(grown_kib < 64 * 1024, "the origin's peak memory grew by {grown_kib} KiB");
    // The head leaves before the body is made: the first byte comes at the start of the
    // transfer, not at its end (before: two thirds of the way through).
    assert!(big.first_byte * 10 < big.total, "first byte after {:?} of {:?}", big.first_byte, big.total);
    // The same bytes as the small body: the pattern repeats every MiB.
    assert_eq!((small.len, big.crc), (MIB, small.crc));
    // A range of a large object is that slice of the whole object.
    let range = 40_000_000..41_000_000;
    let whole = stream_get(o.addr, "/obj/3", "", range.clone());
    let part =
        stream_get(o.addr, "/obj/3", &format!("Range: bytes={}-{}\r\n", range.start, range.end - 1), 0..u64::MAX);
    assert_eq!(whole.len, 64 * MIB);
    assert!(part.head.starts_with("HTTP/1.1 206"), "{}", part.head);
    assert_eq!((part.len, part.crc), (range.end - range.start, whole.crc));
}

/// `--bind 127.0.0.2`: every connection comes from that address (the server sees it as the
/// peer); an address this machine does not have is refused
/// before the run, exit 2.
#[test]
fn bind_makes_every_connection_from_the_given_address() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let peers = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = peers.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            seen.lock().unwrap().push(conn.peer_addr().unwrap().ip());
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while let Ok(n) = conn.read(&mut chunk) {
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        if conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    let url = format!("http://{addr}/");
    let out =
        crate::util::barrage().args(["run", &url, "--bind", "127.0.0.2", "-n", "20", "-c", "3"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let peers = peers.lock().unwrap().clone();
    assert_eq!(peers.len(), 3, "one connection per worker: {peers:?}");
    assert!(peers.iter().all(|p| p.to_string() == "127.0.0.2"), "{peers:?}");
    for (bind, want) in [("192.0.2.1", "not a local address"), ("nonsense", "invalid --bind")] {
        let out = crate::util::barrage().args(["run", &url, "--bind", bind, "-n", "1"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bind}: {stderr}");
        assert!(stderr.contains(want) && stderr.trim().lines().count() == 1, "{bind}: {stderr}");
    }
}
