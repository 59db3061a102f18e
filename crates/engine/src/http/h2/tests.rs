//! The client over a real socket, against raw servers that send chosen frames: reads,
//! rounds, and hostile servers, through the driver as a run sees them.

use super::frames::*;
use super::*;
use crate::prepared::{prepare, Prepared};
use barrage_metrics::ErrorKind;
use barrage_plan::{Load, Plan, Target};
use http::Method;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

/// The client's connection, its preface read (10 s at most for each read after).
fn accept_client(listener: &std::net::TcpListener) -> std::net::TcpStream {
    let (mut s, _) = listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut preface = [0u8; 24];
    s.read_exact(&mut preface).unwrap();
    assert_eq!(&preface[..], PREFACE);
    s
}

/// A raw HTTP/2 server on a real socket: reads the client's preface, sends `frames`
/// (after its SETTINGS), keeps reading until the client closes.
fn raw_server(frames: Vec<u8>, linger: bool) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut s = accept_client(&listener);
        let mut out = Vec::new();
        frame(&mut out, 0, SETTINGS, 0, 0);
        out.extend_from_slice(&frames);
        // The client's frames up to its request's HEADERS, then the answer.
        let mut got = vec![0u8; 1 << 16];
        loop {
            let mut h = [0u8; 9];
            s.read_exact(&mut h).unwrap();
            let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
            s.read_exact(&mut got[..len]).unwrap();
            if h[3] == HEADERS {
                break;
            }
        }
        let _ = s.write_all(&out);
        while linger && matches!(s.read(&mut got), Ok(n) if n > 0) {}
    });
    addr
}

/// A server that sends PINGs without end and reads nothing: the acknowledgements pile
/// up until the connection is ended, a classified failure rather than a buffer
/// growing until memory runs out.
#[test]
fn a_ping_flood_that_reads_no_answer_ends_the_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut pings = Vec::new();
        frame(&mut pings, 0, SETTINGS, 0, 0);
        for _ in 0..4096 {
            frame(&mut pings, 8, PING, 0, 0);
            pings.extend_from_slice(b"pingpong");
        }
        // Until the client closes the connection.
        while s.write_all(&pings).is_ok() {}
    });
    let f = get(addr).expect_err("the flood ends the connection");
    assert_eq!(f.kind, ErrorKind::Protocol, "{}", f.message());
    assert!(f.message().contains("a flood of PING or SETTINGS frames"), "{}", f.message());
}

/// Target `t` of an HTTP/2 run under `load`, prepared.
fn prepared(t: Target, load: Load) -> Arc<[Prepared]> {
    let mut plan = Plan::new(vec![t], load);
    plan.protocol = barrage_plan::Protocol::http2(1);
    prepare(&plan, None).0
}

/// One GET over our client to `addr`: its answer or failure, within 10 s.
fn get(addr: std::net::SocketAddr) -> Result<(u16, Vec<u8>), Failure> {
    let url = format!("http://{addr}/x");
    let t = Target::new(Method::GET, &url).unwrap();
    let load = Load::Closed { concurrency: 1, think_time: Duration::ZERO };
    let prepared = prepared(t, load);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut conn = Conn::handshake(Stream::Left(tcp), 4, false).await?;
        let out = Outgoing { target: &prepared[0], id: 0, number: 0, filled: None, trace: None };
        let rules = barrage_plan::CacheRules::default();
        let (mut last, mut body) = (None, Vec::new());
        let mut reading = Reading {
            rules: &rules,
            backend_headers: &[],
            last_backend: &mut last,
            headers: None,
            body: Some(&mut body),
            stamp: None,
        };
        let exchange = conn.exchange(&out, &mut reading, Instant::now());
        let a = tokio::time::timeout(Duration::from_secs(10), exchange).await.expect("no hang")?;
        Ok((a.status, body))
    })
}

/// Reads frames until `n` requests' HEADERS came: their stream ids, and how many reads
/// of the socket brought them.
fn read_requests(s: &mut std::net::TcpStream, pending: &mut Vec<u8>, n: usize) -> (Vec<u32>, usize) {
    let (mut ids, mut reads) = (Vec::new(), 0);
    let mut buf = vec![0u8; 1 << 16];
    while ids.len() < n {
        let got = s.read(&mut buf).unwrap();
        assert!(got > 0, "the client closed the connection");
        reads += 1;
        pending.extend_from_slice(&buf[..got]);
        while pending.len() >= 9 {
            let len = (usize::from(pending[0]) << 16) | (usize::from(pending[1]) << 8) | usize::from(pending[2]);
            if pending.len() < 9 + len {
                break;
            }
            if pending[3] == HEADERS {
                ids.push(u32::from_be_bytes([pending[5], pending[6], pending[7], pending[8]]));
            }
            pending.drain(..9 + len);
        }
    }
    (ids, reads)
}

/// In closed loop a connection sends in rounds: a request whose stream freed up waits
/// while fewer wait than are out, ROUND_WAIT at most (then it goes alone, though the
/// server answered nothing more), and its wait is its send phase; once half the
/// streams wait, they go at once, in one write.
#[test]
fn a_closed_loop_sends_in_rounds_and_a_round_waits_at_most_round_wait() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let mut s = accept_client(&listener);
        let mut settings = Vec::new();
        frame(&mut settings, 0, SETTINGS, 0, 0);
        s.write_all(&settings).unwrap();
        let answer = |ids: &[u32]| {
            let mut out = Vec::new();
            for &id in ids {
                frame(&mut out, 1, HEADERS, END_HEADERS | END_STREAM, id);
                out.push(0x88);
            }
            out
        };
        let mut pending = Vec::new();
        let (first, _) = read_requests(&mut s, &mut pending, 4);
        assert_eq!(first, [1, 3, 5, 7]);
        // One of four answered: its worker's next request waits for its round.
        let answered = Instant::now();
        s.write_all(&answer(&[1])).unwrap();
        let (alone, _) = read_requests(&mut s, &mut pending, 1);
        let held = answered.elapsed();
        // Two more answered: two wait, two are out, so the round goes, in one write.
        s.write_all(&answer(&[3, 5])).unwrap();
        let (round, reads) = read_requests(&mut s, &mut pending, 2);
        s.write_all(&answer(&[7, 9, 11, 13])).unwrap();
        while matches!(s.read(&mut [0u8; 1024]), Ok(n) if n > 0) {}
        (alone, held, round, reads)
    });
    let url = format!("http://{addr}/x");
    let t = Target::new(Method::GET, &url).unwrap();
    let load = Load::Closed { concurrency: 4, think_time: Duration::ZERO };
    let prepared = prepared(t, load);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    // Workers 0, 1 and 2 send two requests each, 3 one: the send phase of each.
    let sends = local.block_on(&rt, async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let conn = Conn::handshake(Stream::Left(tcp), 4, true).await.unwrap();
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let (mut conn, prepared) = (conn.clone(), prepared.clone());
                tokio::task::spawn_local(async move {
                    let mut sends = Vec::new();
                    for _ in 0..if w == 3 { 1 } else { 2 } {
                        let out = Outgoing { target: &prepared[0], id: 0, number: 0, filled: None, trace: None };
                        let rules = barrage_plan::CacheRules::default();
                        let mut last = None;
                        let mut reading = Reading {
                            rules: &rules,
                            backend_headers: &[],
                            last_backend: &mut last,
                            headers: None,
                            body: None,
                            stamp: None,
                        };
                        let a = conn.exchange(&out, &mut reading, Instant::now()).await.unwrap();
                        sends.push(a.written.expect("HTTP/2 times a request's write") - a.sent);
                    }
                    sends
                })
            })
            .collect();
        drop(conn);
        let mut all = Vec::new();
        for w in workers {
            all.push(w.await.unwrap());
        }
        all
    });
    let (alone, held, round, reads) = server.join().unwrap();
    assert_eq!(alone, [9], "worker 0's second request went alone once ROUND_WAIT passed");
    assert!(held >= ROUND_WAIT, "it waited {held:?}, under ROUND_WAIT");
    assert!(sends[0][1] >= ROUND_WAIT, "its send phase holds its wait: {:?}", sends[0]);
    assert_eq!((round, reads), (vec![11, 13], 1), "a full round goes in one write");
}

fn headers_frame(out: &mut Vec<u8>, flags: u8, block: &[u8]) {
    frame(out, block.len(), HEADERS, flags, 1);
    out.extend_from_slice(block);
}

/// A response as nginx frames it (Huffman, incremental indexing, padding, a PING, an
/// unknown frame type, a 100 Continue first) is read whole.
#[test]
fn a_response_is_read_through_its_frames() {
    let mut f = Vec::new();
    headers_frame(&mut f, END_HEADERS, &[0x08, 0x03, b'1', b'0', b'0']);
    frame(&mut f, 8, PING, 0, 0);
    f.extend_from_slice(b"pingpong");
    frame(&mut f, 3, 0xfa, 0, 1);
    f.extend_from_slice(b"???");
    // :status 200 (indexed), then server: nginx with incremental indexing, Huffman.
    let block = [0x88, 0x76, 0x84, 0xaa, 0x63, 0x55, 0xe7];
    frame(&mut f, block.len() + 3, HEADERS, END_HEADERS | PADDED, 1);
    f.push(2);
    f.extend_from_slice(&block);
    f.extend_from_slice(&[0, 0]);
    frame(&mut f, 6, DATA, PADDED, 1);
    f.extend_from_slice(&[1, b'h', b'i', b'!', b' ', 0]);
    frame(&mut f, 2, DATA, END_STREAM, 1);
    f.extend_from_slice(b"ok");
    let (status, body) = get(raw_server(f, true)).unwrap();
    assert_eq!((status, &body[..]), (200, &b"hi! ok"[..]));
}

/// A hostile server is a classified failure, never a hang or an unbounded buffer: a
/// CONTINUATION flood, a frame over our size, a PUSH_PROMISE, bad HPACK.
#[test]
fn hostile_servers_are_protocol_errors() {
    let mut flood = Vec::new();
    headers_frame(&mut flood, 0, &[0x88]);
    for _ in 0..200 {
        frame(&mut flood, 0, CONTINUATION, 0, 1);
    }
    let mut big = Vec::new();
    frame(&mut big, MAX_FRAME + 1, DATA, 0, 1);
    big.extend(std::iter::repeat_n(0, MAX_FRAME + 1));
    let mut push = Vec::new();
    frame(&mut push, 4, PUSH_PROMISE, END_HEADERS, 1);
    push.extend_from_slice(&2u32.to_be_bytes());
    let mut hpack = Vec::new();
    headers_frame(&mut hpack, END_HEADERS | END_STREAM, &[0xff, 0x80]);
    for (frames, what) in
        [(flood, "CONTINUATION"), (big, "FRAME_SIZE_ERROR"), (push, "PUSH_PROMISE"), (hpack, "COMPRESSION_ERROR")]
    {
        let f = get(raw_server(frames, true)).expect_err(what);
        assert_eq!(f.kind, ErrorKind::Protocol, "{what}: {}", f.message());
        assert!(f.message().contains(what), "{what}: {}", f.message());
    }
    // A reset stream, over the socket: classified by its code.
    let mut rst = Vec::new();
    rst_stream(&mut rst, 1, REFUSED_STREAM);
    let f = get(raw_server(rst, true)).expect_err("reset");
    assert!(f.unprocessed && f.message().contains("RST_STREAM REFUSED_STREAM"), "{}", f.message());
    // Closed before answering: stale.
    let f = get(raw_server(Vec::new(), false)).expect_err("closed");
    assert!(f.kind == ErrorKind::Reset && f.unanswered, "{f:?}");
}
