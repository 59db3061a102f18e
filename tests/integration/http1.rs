//! HTTP/1.1 as barrage reads it: servers whose bytes the test writes, each framing read to
//! the exact byte; servers that send garbage, never end a head or a chunk-size line, stall
//! or close mid-body, each classified and bounded, never a hang; and real nginx for what it
//! frames itself: chunked and close-delimited bodies, HEAD, 204, 304 and 100 Continue.

use crate::util::{closed, errors_of, plan, require, run, RawServer};
use barrage_metrics::summary::RunSummary;
use barrage_plan::Plan;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `n` requests, one at a time, to `url`, each bounded by `timeout`.
fn requests(url: &str, n: u64, timeout: Duration) -> RunSummary {
    run(sequential(url, n, timeout))
}

fn sequential(url: &str, n: u64, timeout: Duration) -> Plan {
    let mut p = plan(url, closed(1));
    p.requests = Some(n);
    p.timeout = timeout;
    p
}

#[test]
fn every_framing_is_read_to_the_exact_byte() {
    // (response, the server keeps the connection, status)
    let table: &[(&[u8], bool, u16)] = &[
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", true, 200),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
              5;name=value\r\nhello\r\n19\r\n, chunked with a trailer.\r\n0\r\nX-Checksum: 1\r\n\r\n",
            true,
            200,
        ),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", true, 200),
        (
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n\
              HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
            true,
            201,
        ),
        (b"HTTP/1.1 204 No Content\r\n\r\n", true, 204),
        (b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", true, 304),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 4\r\nConnection: keep-alive\r\n\r\n1.0!", true, 200),
        // Close-delimited: the body ends when the server closes.
        (b"HTTP/1.0 200 OK\r\nServer: old\r\n\r\nuntil the server closes", false, 200),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbye", false, 200),
    ];
    for &(response, keeps, status) in table {
        let server = RawServer::answering(response, keeps);
        let s = requests(&server.url(), 5, Duration::from_secs(5));
        let what = String::from_utf8_lossy(response);
        assert_eq!(s.status_codes.get(&status.to_string()), Some(&5), "{what}: {:?} {:?}", s.status_codes, s.errors);
        assert_eq!(s.requests.errors, 0, "{what}: {:?}", s.errors);
        assert_eq!(s.bytes.in_total, 5 * response.len() as u64, "{what}");
        assert_eq!(s.requests.connections, if keeps { 1 } else { 5 }, "{what}");
        // Every phase of every request: sent, waited for, received.
        for phase in ["send", "wait", "receive"] {
            assert_eq!(s.phases[phase].count, 5, "{what}: {phase}");
        }
    }
}

#[test]
fn a_head_longer_than_the_read_buffer_is_read_whole() {
    // 50 KiB of cookies, under the 64 KiB bound on a head (leaked: the server answers
    // with it for the test binary's life).
    let cookies = "c".repeat(50 << 10);
    let response =
        format!("HTTP/1.1 200 OK\r\nSet-Cookie: {cookies}\r\nContent-Length: 2\r\n\r\nok").into_bytes().leak();
    let server = RawServer::answering(response, true);
    let s = requests(&server.url(), 3, Duration::from_secs(5));
    assert_eq!(s.requests.ok, 3, "{:?}", s.errors);
    assert_eq!(s.bytes.in_total, 3 * response.len() as u64);
    assert_eq!(s.requests.connections, 1);
}

/// Found in issue 33: a status the parser takes is recorded as itself, never as 0: `999`
/// was counted under "0" (the counters stopped at 599). Under 100 is not HTTP (as HTTP/2's
/// `:status` and hyper say): a protocol error, not a status 0.
#[test]
fn every_status_the_parser_takes_is_recorded_as_itself() {
    for (response, status) in [
        (&b"HTTP/1.1 999 X\r\nContent-Length: 0\r\n\r\n"[..], "999"),
        (b"HTTP/1.1 600 Beyond\r\nContent-Length: 0\r\n\r\n", "600"),
        (b"HTTP/1.1 599 Edge\r\nContent-Length: 0\r\n\r\n", "599"),
    ] {
        let server = RawServer::answering(response, true);
        let s = requests(&server.url(), 3, Duration::from_secs(5));
        assert_eq!(s.status_codes, [(status.to_string(), 3)].into(), "{status}: {:?}", s.errors);
        assert_eq!((s.requests.ok, s.requests.http_errors), (0, 3), "{status}: not a success");
    }
    let server = RawServer::answering(b"HTTP/1.1 099 Under\r\nContent-Length: 0\r\n\r\n", true);
    let s = requests(&server.url(), 3, Duration::from_secs(5));
    assert_eq!(errors_of(&s, "protocol"), 3, "{:?} {:?}", s.status_codes, s.errors);
    assert!(s.status_codes.is_empty(), "{:?}", s.status_codes);
}

/// A server that answers with `head`, then `more` over and over until the client goes.
fn endless(head: &'static [u8], more: &'static [u8]) -> RawServer {
    RawServer::start(Arc::new(move |s: &mut TcpStream| {
        if s.write_all(head).is_ok() {
            while s.write_all(more).is_ok() {}
        }
        false
    }))
}

#[test]
fn hostile_servers_are_classified_within_the_bounds_never_by_the_timeout() {
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let cases = [
        ("an endless header value", endless(b"HTTP/1.1 200 OK\r\nX-Long: ", b"0123456789abcdef"), "protocol"),
        ("endless header lines", endless(b"HTTP/1.1 200 OK\r\n", b"X-Again: and again\r\n"), "protocol"),
        ("an endless status line", endless(b"HTTP/1.1 200 ", b"OK OK OK "), "protocol"),
        (
            "an endless chunk-size line",
            endless(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;e=", b"eeeeeeee"),
            "protocol",
        ),
        (
            "endless trailers",
            endless(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n", b"X-Trailer: t\r\n"),
            "protocol",
        ),
        (
            "a chunk size of 17 hex digits",
            RawServer::answering(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", true),
            "protocol",
        ),
        (
            "a chunk longer than its size",
            RawServer::answering(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", true),
            "protocol",
        ),
        (
            "two lengths",
            RawServer::answering(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", true),
            "protocol",
        ),
        ("another protocol", RawServer::answering(b"SSH-2.0-OpenSSH_9.2\r\n", false), "protocol"),
        (
            "a body cut short",
            RawServer::answering(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", false),
            "reset",
        ),
        ("chunks cut short", RawServer::answering(chunked_cut_short(chunked), false), "reset"),
        ("a head cut short", RawServer::answering(b"HTTP/1.1 200 OK\r\nContent-Le", false), "reset"),
    ];
    for (what, server, kind) in cases {
        let started = Instant::now();
        let s = requests(&server.url(), 3, Duration::from_secs(20));
        assert_eq!(errors_of(&s, kind), 3, "{what}: {:?}", s.errors);
        assert_eq!(s.requests.total, 3, "{what}");
        // Refused by a bound (or the end of the stream), not after the 20 s timeout.
        let took = started.elapsed();
        assert!(took < Duration::from_secs(10), "{what}: took {took:?}");
    }
}

/// A chunked response cut off in a chunk's data (leaked: the server answers with it for
/// the whole test binary's life, a few bytes).
fn chunked_cut_short(head: &[u8]) -> &'static [u8] {
    let mut r = head.to_vec();
    r.extend_from_slice(b"10\r\nonly");
    r.leak()
}

#[test]
fn a_server_that_stalls_mid_body_times_out_and_the_run_ends_on_time() {
    let server = RawServer::start(Arc::new(|s: &mut TcpStream| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nthe first bytes of 1000");
        // Silent, with the connection open, until the client gives up and closes it (or
        // the server's 5 s read timeout).
        let _ = s.read(&mut [0u8; 1]);
        false
    }));
    let started = Instant::now();
    let s = requests(&server.url(), 2, Duration::from_millis(500));
    let took = started.elapsed();
    assert_eq!(errors_of(&s, "request_timeout"), 2, "{:?}", s.errors);
    // Two timeouts of 0.5 s one after the other: the run waits for each, and no longer.
    assert!(took >= Duration::from_millis(1000) && took < Duration::from_secs(4), "took {took:?}");
}

/// nginx on a free loopback port, serving files from a directory of its own; stopped when
/// dropped.
struct Nginx {
    child: std::process::Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// nginx with `locations` (an nginx `server` block's), serving `files`; `None` (the
    /// test is skipped) when nginx is not installed.
    fn start(files: &[(&str, &[u8])], locations: &str) -> Option<Nginx> {
        let program = barrage_testbed::program_path("nginx");
        if !require("nginx", program.is_some()) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("html");
        std::fs::create_dir(&root).unwrap();
        for (name, bytes) in files {
            std::fs::write(root.join(name), bytes).unwrap();
        }
        // Free now; nginx binds it a moment later.
        let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let d = dir.path().display();
        let conf = format!(
            "worker_processes 1;\n\
             # Workers stay root (the test's user) so they can read the private directory.\n\
             user root;\n\
             pid {d}/nginx.pid;\n\
             error_log stderr warn;\n\
             events {{ worker_connections 64; }}\n\
             http {{\n\
                 access_log off;\n\
                 default_type application/octet-stream;\n\
                 client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;\n\
                 uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
                 server {{\n\
                     listen {addr};\n\
                     root {d}/html;\n\
                     {locations}\n\
                 }}\n\
             }}\n"
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = std::process::Command::new(program.unwrap())
            .args(["-e", "stderr", "-p"])
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .args(["-g", "daemon off;"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut nginx = Nginx { child, addr, _dir: dir };
        // Up when it accepts: polled, bounded.
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() {
            assert!(nginx.child.try_wait().unwrap().is_none(), "nginx exited: see its configuration");
            assert!(Instant::now() < deadline, "nginx did not listen on {addr} within 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(nginx)
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: nginx's fast shutdown, its worker included. A SIGKILL of the master left
        // the worker listening, orphaned, after every run of the tests.
        // SAFETY: kill takes a PID and a signal number; the PID is our own child's, not yet
        // waited for, so it is still ours.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

#[test]
fn nginx_framings_are_read_whole() {
    // 5000 bytes of text: sub_filter rewrites it on the way out, so nginx cannot know its
    // length and frames it itself, chunked or (with chunked encoding off) to the close.
    let body: Vec<u8> = b"abcdefghijklmnopqrstuvwxyz\n".iter().copied().cycle().take(5000).collect();
    // And a body over many reads, as the kernel drops it unread (no check reads it): 1 MiB
    // and 3 bytes, from a file and chunked; each response's end must be found to the byte,
    // or the connection's next response would be misread.
    let big: Vec<u8> = body.iter().copied().cycle().take((1 << 20) + 3).collect();
    let locations = "\
        location = /file { }\n\
        location = /big { }\n\
        location = /bigchunked { sub_filter_types *; sub_filter 'z' 'Z'; sub_filter_once off; }\n\
        location = /chunked { sub_filter_types *; sub_filter 'z' 'Z'; sub_filter_once off; }\n\
        location = /close { sub_filter_types *; sub_filter 'z' 'Z'; sub_filter_once off; chunked_transfer_encoding off; }\n\
        location = /empty { return 204; }\n\
        location = /unchanged { return 304; }\n\
        location = /upload { return 201 \"stored\\n\"; }\n";
    let files: [(&str, &[u8]); 5] =
        [("file", &body), ("chunked", &body), ("close", &body), ("big", &big), ("bigchunked", &big)];
    let Some(nginx) = Nginx::start(&files, locations) else {
        return;
    };
    // (method, path, status, nginx keeps the connection, body bytes read)
    let cases = [
        ("GET", "/file", 200, true, 5000),
        ("GET", "/chunked", 200, true, 5000),
        ("GET", "/close", 200, false, 5000),
        ("GET", "/big", 200, true, big.len()),
        ("GET", "/bigchunked", 200, true, big.len()),
        ("HEAD", "/file", 200, true, 0),
        ("GET", "/empty", 204, true, 0),
        ("GET", "/unchanged", 304, true, 0),
    ];
    for (method, path, status, keeps, body_len) in cases {
        let mut p = sequential(&nginx.url(path), 5, Duration::from_secs(5));
        p.targets[0].method = method.parse().unwrap();
        let s = run(p);
        let what = format!("{method} {path}");
        assert_eq!(s.status_codes.get(&status.to_string()), Some(&5), "{what}: {:?} {:?}", s.status_codes, s.errors);
        assert_eq!(s.requests.errors, 0, "{what}: {:?}", s.errors);
        assert_eq!(s.requests.connections, if keeps { 1 } else { 5 }, "{what}");
        // The body, and a head of nginx's (with chunk sizes, when chunked): no more.
        let head = s.bytes.in_mean - body_len as f64;
        let framing = if path == "/bigchunked" { 12_000.0 } else { 400.0 };
        assert!((60.0..framing).contains(&head), "{what}: {} bytes read per response", s.bytes.in_mean);
    }
    // A request that expects 100 Continue gets it before nginx's answer: 25 bytes more
    // than the same request without the expectation, and the same answer.
    let upload = |expect: bool| {
        let mut p = sequential(&nginx.url("/upload"), 5, Duration::from_secs(5));
        p.targets[0].method = http::Method::POST;
        p.targets[0].body = bytes::Bytes::from_static(b"an album");
        if expect {
            p.targets[0].headers.insert(http::header::EXPECT, http::HeaderValue::from_static("100-continue"));
        }
        run(p)
    };
    let (plain, expecting) = (upload(false), upload(true));
    for s in [&plain, &expecting] {
        assert_eq!(s.status_codes.get("201"), Some(&5), "{:?} {:?}", s.status_codes, s.errors);
        assert_eq!(s.requests.connections, 1);
    }
    assert_eq!(expecting.bytes.in_total - plain.bytes.in_total, 5 * b"HTTP/1.1 100 Continue\r\n\r\n".len() as u64);
}
