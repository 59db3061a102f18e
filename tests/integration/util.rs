//! Test fixtures: the origin and misbehaving servers on 127.0.0.1:0, in-process runs, and
//! the built binary.

use barrage_engine::{Load, Pacer, Plan, RunSpec, Target};
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_server::{RunningServer, ServeConfig};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The built-in origin with `config`, on a free loopback port.
pub fn origin(config: ServeConfig) -> RunningServer {
    RunningServer::start(ServeConfig { listen: "127.0.0.1:0".parse().unwrap(), threads: 1, ..config })
        .expect("origin starts")
}

/// A plan with one GET target and test bounds: 5 s timeout, 2 s to connect, one thread.
pub fn plan(url: &str, load: Load) -> Plan {
    let mut p = Plan::new(vec![Target::new(http::Method::GET, url).unwrap()], load);
    p.timeout = Duration::from_secs(5);
    p.connect_timeout = Duration::from_secs(2);
    p.threads = 1;
    p
}

/// Open loop at `rate` per second.
pub fn open(rate: f64) -> Load {
    Load::Open { pacer: Pacer::Constant { rate }, max_in_flight: 256 }
}

/// Closed loop with `n` workers.
pub fn closed(n: usize) -> Load {
    Load::Closed { concurrency: n, think_time: Duration::ZERO }
}

/// Runs `plan` in-process into `dir/name.brg` and returns the file's summary.
pub fn run_in(dir: &Path, name: &str, plan: Plan) -> (PathBuf, RunSummary) {
    let output = dir.join(format!("{name}.brg"));
    let spec = RunSpec { output: output.clone(), settings_json: "{}".into(), log: None, ..Default::default() };
    barrage_engine::run(plan, &spec, Default::default(), &mut |_| {}).expect("run completes");
    let summary = summarize(std::slice::from_ref(&output)).expect("results read back");
    (output, summary)
}

/// Runs `plan` in a fresh temp dir.
pub fn run(plan: Plan) -> RunSummary {
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), "run", plan).1
}

/// Count of one error kind in a summary.
pub fn errors_of(s: &RunSummary, kind: &str) -> u64 {
    s.errors.iter().find(|e| e.kind == kind).map_or(0, |e| e.count)
}

/// The built binary, keeping its runs in the test process's own history (under its own
/// `XDG_DATA_HOME`), never in the user's; `--at` commands it runs inherit that.
pub fn barrage() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_barrage"));
    // Nor the user's trace links: a test gives its own.
    c.env_remove("BARRAGE_HISTORY").env_remove("BARRAGE_TRACE_URL").env("XDG_DATA_HOME", data_home());
    c
}

/// The tests' data directory: under the target directory's own scratch space (cargo's
/// `CARGO_TARGET_TMPDIR`), so that `cargo clean` removes the history the tests' runs keep.
pub fn data_home() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("data-home")
}

/// How a misbehaving server treats each connection.
#[derive(Clone, Copy)]
pub enum Fault {
    /// Reads the request, then resets the connection (RST).
    Reset,
    /// Reads the request, answers bytes that are not HTTP, closes.
    Garbage,
    /// Accepts and never answers.
    Silent,
    /// Answers one request as if keeping the connection alive, then closes it.
    CloseWhenIdle,
    /// Accepts and closes at once, before reading anything.
    CloseAtOnce,
    /// Reads what the client sends first, answers these bytes, and holds the connection
    /// without reading more (a key-value server refusing a greeting).
    Answer(&'static [u8]),
}

/// Stops a [`listen`] loop when dropped.
struct Stopper(Arc<AtomicBool>);

impl Drop for Stopper {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A listener on a free loopback port, each accepted connection handed to `on_conn` on a
/// thread of its own, until the returned [`Stopper`] is dropped.
fn listen(mut on_conn: impl FnMut(TcpStream) + Send + 'static) -> (SocketAddr, Stopper) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((s, _)) => on_conn(s),
                // Non-blocking accept so the thread notices the stop; the pause only paces
                // this polling loop, it synchronises nothing.
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    });
    (addr, Stopper(stop))
}

/// A server that misbehaves on purpose; stops when dropped.
pub struct FaultServer {
    pub addr: SocketAddr,
    _stop: Stopper,
}

impl FaultServer {
    pub fn start(fault: Fault) -> FaultServer {
        let mut held = Vec::new();
        let (addr, stop) = listen(move |s| held.extend(misbehave(fault, s)));
        FaultServer { addr, _stop: stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

fn misbehave(fault: Fault, mut s: TcpStream) -> Option<TcpStream> {
    s.set_nonblocking(false).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    match fault {
        Fault::Silent => return Some(s),
        Fault::CloseAtOnce => return None,
        _ => {}
    }
    let mut buf = [0u8; 4096];
    let _ = s.read(&mut buf);
    match fault {
        Fault::Reset => set_linger_zero(&s),
        Fault::Garbage => {
            let _ = s.write_all(b"THIS IS NOT HTTP AT ALL\r\n\r\n");
        }
        Fault::CloseWhenIdle => {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
        Fault::Answer(bytes) => {
            let _ = s.write_all(bytes);
            return Some(s);
        }
        Fault::Silent | Fault::CloseAtOnce => unreachable!(),
    }
    None
}

/// SO_LINGER 0 makes close() send RST instead of FIN.
pub fn set_linger_zero(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: a valid socket fd and a correctly sized option value.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// A loopback port with nothing listening.
pub fn refused_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}/")
}

/// Whether an external program or Python module this test needs is present; prints
/// `SKIPPED: <what> not found` when not, and fails when BARRAGE_REQUIRE_EXTERNAL=1.
pub fn require(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var("BARRAGE_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
        panic!("{what} not found, and BARRAGE_REQUIRE_EXTERNAL=1");
    }
    eprintln!("SKIPPED: {what} not found");
    false
}

/// A server that answers `200` with an empty body and hands each raw request (head and
/// body, as received) to the test.
pub struct CaptureServer {
    pub addr: SocketAddr,
    pub requests: std::sync::mpsc::Receiver<Vec<u8>>,
    _stop: Stopper,
}

impl CaptureServer {
    pub fn start() -> CaptureServer {
        let (tx, requests) = std::sync::mpsc::channel();
        let (addr, stop) = listen(move |s| {
            if let Some(text) = read_request(s) {
                let _ = tx.send(text);
            }
        });
        CaptureServer { addr, requests, _stop: stop }
    }

    /// The next request received, as text, waiting at most 5 s.
    pub fn next(&self) -> String {
        String::from_utf8_lossy(&self.next_raw()).into_owned()
    }

    /// The next request received, as bytes (bodies may be binary), waiting at most 5 s.
    pub fn next_raw(&self) -> Vec<u8> {
        self.requests.recv_timeout(Duration::from_secs(5)).expect("a request arrives")
    }
}

/// Reads one request (head, then Content-Length bytes of body) and answers 200.
fn read_request(mut s: TcpStream) -> Option<Vec<u8>> {
    s.set_nonblocking(false).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if data.len() >= end + 4 + len {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                return Some(data);
            }
        }
    }
}

/// A plain HTTP/1.1 GET over a raw socket: the response body, for checking what a server
/// kept without going through barrage.
pub fn http_get(addr: SocketAddr, path: &str) -> String {
    String::from_utf8_lossy(&raw_get(addr, path, "").1).into_owned()
}

/// A GET with extra header lines (each ending in \r\n): the response head and body.
pub fn raw_get(addr: SocketAddr, path: &str, extra: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n").unwrap();
    let mut data = Vec::new();
    s.read_to_end(&mut data).unwrap();
    let end = data.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
    (String::from_utf8_lossy(&data[..end]).into_owned(), data[end + 4..].to_vec())
}

/// `barrage serve` as its own process (one thread, a free port, and `args`), so the kernel's
/// counters for it are the origin's alone; killed when dropped.
pub struct ServeProcess {
    pub child: std::process::Child,
    pub addr: SocketAddr,
}

impl ServeProcess {
    pub fn start(args: &[&str]) -> ServeProcess {
        use std::io::BufRead;
        let mut child = barrage()
            .args(["serve", "--listen", "127.0.0.1:0", "--threads", "1"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("listening on http://").unwrap_or_else(|| panic!("{line}"));
        ServeProcess { addr: addr.parse().unwrap(), child }
    }

    /// The peak resident memory the kernel reports for the process, KiB.
    pub fn vm_hwm_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a [`RawServer`] answers: it writes what it likes on the connection, after reading one
/// request, and says whether to read the next request on it.
pub type Answer = Arc<dyn Fn(&mut TcpStream) -> bool + Send + Sync>;

/// A server that answers every request with bytes of the test's making (HTTP of any
/// framing, or bytes that are not HTTP at all), each connection on a thread of its own;
/// stops when dropped.
pub struct RawServer {
    pub addr: SocketAddr,
    _stop: Stopper,
}

impl RawServer {
    pub fn start(answer: Answer) -> RawServer {
        let (addr, stop) = listen(move |mut s| {
            let answer = answer.clone();
            std::thread::spawn(move || {
                // Bounded: a client that stops talking ends the thread.
                if s.set_nonblocking(false).is_err() || s.set_read_timeout(Some(Duration::from_secs(5))).is_err() {
                    return;
                }
                while read_head(&mut s) && answer(&mut s) {}
            });
        });
        RawServer { addr, _stop: stop }
    }

    /// A server that answers every request with `response` and keeps the connection
    /// (`keep`) or closes it.
    pub fn answering(response: &'static [u8], keep: bool) -> RawServer {
        RawServer::start(Arc::new(move |s: &mut TcpStream| s.write_all(response).is_ok() && keep))
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// Reads one request: its head, then as many body bytes as its Content-Length says. False
/// when the client closed or stopped sending.
fn read_head(s: &mut TcpStream) -> bool {
    let mut data = Vec::new();
    let mut byte = [0u8; 1];
    while !data.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => data.push(byte[0]),
            _ => return false,
        }
    }
    let head = String::from_utf8_lossy(&data).to_ascii_lowercase();
    let len = head.lines().find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)));
    let mut body = vec![0u8; len.unwrap_or(0)];
    s.read_exact(&mut body).is_ok()
}

impl RawServer {
    /// A server that answers every request at once with an empty 200 (keeping the
    /// connection), but for requests number `held` (from 1, counted over all connections in
    /// the order they arrive), each answered only `delay` after it arrived: a target that
    /// falls behind at a moment the test chooses by count, not by time.
    pub fn holding(held: std::ops::RangeInclusive<u64>, delay: Duration) -> RawServer {
        let arrived = Arc::new(std::sync::atomic::AtomicU64::new(0));
        RawServer::start(Arc::new(move |s: &mut TcpStream| {
            let n = arrived.fetch_add(1, Ordering::SeqCst) + 1;
            if held.contains(&n) {
                // The server's own slowness, on this connection's thread: it synchronises
                // nothing with the test.
                std::thread::sleep(delay);
            }
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").is_ok()
        }))
    }
}

/// `barrage experiment FILE -o OUT --format json`, run from the repository's root (so an
/// example's relative paths hold): its exit code and JSON.
pub fn experiment(file: &Path, out: &Path) -> (i32, serde_json::Value) {
    let output = barrage()
        .arg("experiment")
        .arg(file)
        .arg("-o")
        .arg(out)
        .args(["--format", "json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let json = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code().unwrap_or(-1), json)
}

/// [`experiment`] that must succeed: its JSON.
pub fn experiment_ok(file: &Path, out: &Path) -> serde_json::Value {
    let (code, json) = experiment(file, out);
    assert_eq!(code, 0, "{json}");
    json
}

/// The servers' logs an experiment in `results` kept of the testbed whose directory name
/// holds `name` (`testbed-squid-…`): `testbed-….logs/`.
pub fn kept_logs(results: &Path, name: &str) -> PathBuf {
    std::fs::read_dir(results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "logs") && p.to_string_lossy().contains(name))
        .unwrap_or_else(|| panic!("no kept logs of a testbed named like {name} in {}", results.display()))
}
