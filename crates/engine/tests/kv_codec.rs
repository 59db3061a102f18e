//! The kv codecs against real servers on loopback: the replies redis-server and memcached
//! actually send parse to what the unit tests expect.

use barrage_engine::kv::{memcache, resp, ErrorClass, ProtocolError, Reply};
use bytes::BytesMut;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the server when the test ends, also on panic.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether `binary` is on the PATH; prints `SKIPPED` when not, and fails when
/// BARRAGE_REQUIRE_EXTERNAL=1.
fn require(binary: &str) -> bool {
    let found = Command::new("sh").args(["-c", &format!("command -v {binary}")]).stdout(Stdio::null()).status();
    if found.is_ok_and(|s| s.success()) {
        return true;
    }
    assert_ne!(
        std::env::var("BARRAGE_REQUIRE_EXTERNAL").as_deref(),
        Ok("1"),
        "{binary} not found, and BARRAGE_REQUIRE_EXTERNAL=1"
    );
    eprintln!("SKIPPED: {binary} not found");
    false
}

/// Starts `program` on a free loopback port and connects to it once it listens.
fn start(program: &str, args: impl Fn(u16) -> Vec<String>) -> (Server, TcpStream) {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(program).args(args(port)).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let mut server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => {
                stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                return (server, stream);
            }
            Err(_) if server.0.try_wait().unwrap().is_some() => panic!("{program} exited: {:?}", server.0.try_wait()),
            Err(e) if Instant::now() > deadline => panic!("{program} did not listen on {port}: {e}"),
            // Polling for the port to open is the only readiness signal either server gives.
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

type Parse<'a> = &'a dyn Fn(&[u8]) -> Result<Option<(Reply, usize)>, ProtocolError>;

/// Sends `out`, then reads until `parse` returns as many replies as `want` has, and checks
/// them; returns the reply bytes for further checks.
fn exchange(stream: &mut TcpStream, out: &[u8], parse: Parse, want: &[Reply]) -> Vec<u8> {
    stream.write_all(out).unwrap();
    let (mut buf, mut at, mut got) = (Vec::new(), 0, Vec::new());
    while got.len() < want.len() {
        match parse(&buf[at..]).unwrap() {
            Some((reply, used)) => {
                got.push(reply);
                at += used;
            }
            None => {
                let mut chunk = [0u8; 4096];
                let n = stream.read(&mut chunk).unwrap();
                assert!(n > 0, "the server closed after {got:?}");
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
    assert_eq!(got, want, "replies to {:?}", String::from_utf8_lossy(out));
    assert_eq!(at, buf.len(), "nothing left over");
    buf
}

#[test]
fn redis_replies_parse() {
    if !require("redis-server") {
        return;
    }
    let (_server, mut s) = start("redis-server", |p| {
        ["--port", &p.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"].map(String::from).to_vec()
    });
    let mut out = BytesMut::new();
    resp::encode_command(&mut out, &[b"SET", b"k1", b"hello"]);
    resp::encode_command(&mut out, &[b"GET", b"k1"]);
    resp::encode_command(&mut out, &[b"GET", b"missing"]);
    resp::encode_command(&mut out, &[b"LPUSH", b"k1", b"x"]);
    resp::encode_command(&mut out, &[b"NOSUCHCMD"]);
    let wrongtype = Reply::Error { class: ErrorClass::WrongType, message: 0..0 };
    let unknown = Reply::Error { class: ErrorClass::Err, message: 0..0 };
    let strip = |r: Reply| match r {
        Reply::Error { class, .. } => Reply::Error { class, message: 0..0 },
        other => other,
    };
    let want = [Reply::Ok, Reply::Value { len: 5 }, Reply::Miss, wrongtype.clone(), unknown.clone()];
    let resp2 = |b: &[u8]| resp::parse_resp2(b).map(|r| r.map(|(reply, n)| (strip(reply), n)));
    exchange(&mut s, &out, &resp2, &want);

    // RESP3 after HELLO 3: the map HELLO answers, then `_` for the missing key.
    out.clear();
    resp::encode_command(&mut out, &[b"HELLO", b"3"]);
    resp::encode_command(&mut out, &[b"GET", b"k1"]);
    resp::encode_command(&mut out, &[b"GET", b"missing"]);
    resp::encode_command(&mut out, &[b"LPUSH", b"k1", b"x"]);
    let resp3 = |b: &[u8]| resp::parse_resp3(b).map(|r| r.map(|(reply, n)| (strip(reply), n)));
    let bytes = exchange(&mut s, &out, &resp3, &[Reply::Other, Reply::Value { len: 5 }, Reply::Miss, wrongtype]);
    assert!(bytes.starts_with(b"%"), "HELLO 3 answers a RESP3 map");
    assert!(bytes.ends_with(b"_\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"));
}

#[test]
fn memcached_replies_parse() {
    if !require("memcached") {
        return;
    }
    // `-u` is memcached's condition for running as root (as in CI); it is ignored otherwise.
    let (_server, mut s) = start("memcached", |p| {
        ["-p", &p.to_string(), "-U", "0", "-l", "127.0.0.1", "-u", "nobody"].map(String::from).to_vec()
    });
    let text = |kind| move |b: &[u8]| memcache::parse_text(b, kind);
    let mut out = BytesMut::new();
    memcache::encode_set(&mut out, b"k1", b"hello", 0);
    exchange(&mut s, &out, &text(memcache::TextKind::Storage), &[Reply::Stored]);
    for (key, want) in [(&b"k1"[..], Reply::Value { len: 5 }), (b"nokey", Reply::Miss)] {
        out.clear();
        memcache::encode_get(&mut out, key);
        exchange(&mut s, &out, &text(memcache::TextKind::Get), &[want]);
    }

    out.clear();
    memcache::encode_ms(&mut out, b"mk1", b"hello");
    memcache::encode_mg(&mut out, b"mk1");
    memcache::encode_mg(&mut out, b"nokey");
    out.extend_from_slice(b"mn\r\n");
    let want = [Reply::Ok, Reply::Value { len: 5 }, Reply::Miss, Reply::Other];
    exchange(&mut s, &out, &memcache::parse_meta, &want);

    // The server's own error lines, with their messages.
    let bytes = exchange(
        &mut s,
        b"ms mk3 S3 T0\r\nabc\r\n",
        &memcache::parse_meta,
        &[
            Reply::Error { class: ErrorClass::ClientError, message: 0..36 },
            Reply::Error { class: ErrorClass::McError, message: 0..5 },
        ],
    );
    assert_eq!(&bytes[..36], b"CLIENT_ERROR bad command line format");
}
