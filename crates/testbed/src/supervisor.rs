//! The supervisor: starts the servers, reaps every child (and, as a child subreaper, every
//! orphan of theirs), and carries out `stop`, `start` and `down` sent to its socket.
//!
//! The protocol is one line per connection: `stop NAME`, `start NAME`, `set NAME|all SHAPE`,
//! `purge [NAME]` or `down`; the reply is one line, `ok` or `error: WHY`, sent once the work
//! is done (a stopped server has exited and been reaped, a started one answers: HTTP, or a
//! key-value server's ping, on its plain port and over TLS on its TLS port; a shaped origin
//! says its new shape in `/_barrage/stats`; a purged cache is empty).

use crate::layout::{plan, tls_files, Kind, Options, ServerSpec};
use crate::state::{Owner, ServerState, State, Status};
use crate::TestbedError;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a server may take to answer its first request (varnishd compiles its VCL).
pub const READY_DEADLINE: Duration = Duration::from_secs(20);
/// How long a server may take to exit after SIGTERM before it is killed.
pub const STOP_DEADLINE: Duration = Duration::from_secs(5);
/// How often the supervisor looks for exited children, commands and signals.
const TICK: Duration = Duration::from_millis(10);

/// A running testbed: its state, the exits reaped but not yet matched to a server, with
/// TLS a client trusting the testbed's CA, to check the TLS ports, and the flag that ends
/// it (a signal, or the end of the process it is tied to).
struct Supervisor {
    state: State,
    exits: HashMap<u32, String>,
    trust: Option<Arc<rustls::ClientConfig>>,
    quit: Arc<AtomicBool>,
    /// The length of each server's first log when it was last started: varnishd is ready
    /// once its access log grew past it (see [`Supervisor::silent`]).
    log_marks: HashMap<usize, u64>,
}

/// What ties a supervisor to the process that brought its testbed up. That process holds
/// the write end of a pipe that is the supervisor's standard input, and never writes to it:
/// end-of-file there is that process's end, however it ended (SIGKILL included). Neither a
/// signal nor `PR_SET_PDEATHSIG` (which fires when the *thread* that forked ends, any
/// thread of a tokio program) would tell it reliably.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tie {
    /// Nothing: the supervisor is the process itself (`up --foreground`, its standard input
    /// the terminal).
    None,
    /// Until every server answers: a `testbed up` interrupted or killed while its testbed
    /// comes up takes it down; once up, the testbed outlives it, until `down`.
    UntilReady,
    /// For the testbed's life: it goes down when process `owner` ends (a study's testbed).
    Owner(u32),
}

/// Sets up the testbed in `dir` and supervises it until `down`, SIGTERM/SIGINT/SIGHUP or the
/// end of what it is tied to (`tie`), also while its servers are coming up. `ready` is
/// called once every server answers (or with the error that stopped the start-up, after
/// whatever had started is stopped again).
pub fn supervise(
    options: Options,
    dir: &Path,
    tie: Tie,
    ready: impl FnOnce(Result<&State, &TestbedError>),
) -> Result<(), TestbedError> {
    let dir = &std::path::absolute(dir)?;
    become_subreaper();
    let quit = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, quit.clone()).map_err(TestbedError::Io)?;
    }
    let detached = Arc::new(AtomicBool::new(false));
    if tie != Tie::None {
        watch_tie(quit.clone(), detached.clone())?;
    }
    let owner = match tie {
        Tie::Owner(pid) => Owner::of(pid),
        Tie::None | Tie::UntilReady => None,
    };
    let mut sup = match Supervisor::up(options, dir, owner, quit.clone()) {
        Ok(s) => s,
        Err(e) => {
            ready(Err(&e));
            return Err(e);
        }
    };
    let listener = match UnixListener::bind(State::socket(dir)).and_then(|l| l.set_nonblocking(true).map(|()| l)) {
        Ok(l) => l,
        Err(e) => {
            sup.down();
            let e = TestbedError::Io(e);
            ready(Err(&e));
            return Err(e);
        }
    };
    // Before `ready`: the caller of `testbed up` closes the tie once it has read it.
    detached.store(tie == Tie::UntilReady, Ordering::Relaxed);
    ready(Ok(&sup.state));
    while !quit.load(Ordering::Relaxed) {
        sup.reap();
        match listener.accept() {
            Ok((conn, _)) => {
                if sup.serve(conn) {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(TICK),
            Err(e) => eprintln!("barrage testbed: control socket: {e}"),
        }
    }
    sup.down();
    Ok(())
}

/// Reads the tie (standard input) on a thread of its own until end-of-file, then sets `quit`
/// unless the testbed is `detached` by then. Nothing is ever written to it.
fn watch_tie(quit: Arc<AtomicBool>, detached: Arc<AtomicBool>) -> Result<(), TestbedError> {
    let watch = move || {
        let mut byte = [0u8; 1];
        loop {
            match std::io::stdin().read(&mut byte) {
                Ok(1..) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(0) | Err(_) => break,
            }
        }
        if !detached.load(Ordering::Relaxed) {
            quit.store(true, Ordering::Relaxed);
        }
    };
    std::thread::Builder::new().name("barrage-testbed-tie".into()).spawn(watch)?;
    Ok(())
}

/// Orphans of the servers (a worker whose master died) become ours to reap, not PID 1's,
/// which here reaps nothing.
fn become_subreaper() {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag and touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

impl Supervisor {
    /// Writes the certificate and starts every server, origins first, unless `quit` is set
    /// meanwhile.
    fn up(
        options: Options,
        dir: &Path,
        owner: Option<Owner>,
        quit: Arc<AtomicBool>,
    ) -> Result<Supervisor, TestbedError> {
        crate::state::create_dir(dir)?;
        let ca = if options.tls { Some(write_certificate(dir)?) } else { None };
        let trust = match &ca {
            Some(path) => Some(trusting(&std::fs::read(path)?)?),
            None => None,
        };
        let specs = plan(&options, dir)?;
        let servers = specs
            .into_iter()
            .map(|spec| ServerState { spec, pid: None, started: None, status: Status::Stopped })
            .collect();
        let state = State { options, dir: dir.to_path_buf(), supervisor_pid: std::process::id(), owner, ca, servers };
        let mut sup = Supervisor { state, exits: HashMap::new(), trust, quit, log_marks: HashMap::new() };
        for i in 0..sup.state.servers.len() {
            if let Err(e) = sup.start(i) {
                sup.down();
                return Err(e);
            }
        }
        Ok(sup)
    }

    /// Handles one command; true once the testbed is down.
    fn serve(&mut self, conn: UnixStream) -> bool {
        let _ = conn.set_nonblocking(false);
        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
        let mut line = String::new();
        let mut reader = BufReader::new(&conn);
        if reader.read_line(&mut line).is_err() {
            return false;
        }
        let mut words = line.split_whitespace();
        let reply = match (words.next(), words.next()) {
            (Some("set"), Some(name)) => {
                // The shape is the rest of the line (a `file:` path may hold spaces).
                let rest = line.trim().splitn(3, char::is_whitespace).nth(2).unwrap_or("");
                self.set_shape(name, rest.trim())
            }
            (Some("down"), None) => {
                self.down();
                let _ = (&conn).write_all(b"ok\n");
                return true;
            }
            (Some("purge"), name) if words.next().is_none() => self.purge(name),
            (Some(cmd @ ("stop" | "start")), Some(name)) => match self.index(name) {
                Some(i) if cmd == "stop" => self.stop(i),
                Some(i) => self.start(i),
                None => Err(TestbedError::NoSuchServer { name: name.into(), known: self.state.names() }),
            },
            _ => Err(TestbedError::Protocol(line.trim().to_string())),
        };
        let answer = match reply {
            Ok(()) => "ok\n".to_string(),
            Err(e) => format!("error: {e}\n"),
        };
        let _ = (&conn).write_all(answer.as_bytes());
        false
    }

    /// Lays `spec` over the shape of origin `name` (every origin for `all`): rewrites its
    /// shape file (also what a later `start` writes) and, while it runs, sends it SIGHUP and
    /// waits, bounded, until its `/_barrage/stats` says the new shape. Nothing restarts and
    /// no connection is dropped.
    fn set_shape(&mut self, name: &str, spec: &str) -> Result<(), TestbedError> {
        let targets: Vec<usize> = if name == "all" {
            (0..self.state.servers.len()).filter(|&i| self.state.servers[i].spec.kind == Kind::Origin).collect()
        } else {
            match self.index(name) {
                Some(i) if self.state.servers[i].spec.kind == Kind::Origin => vec![i],
                Some(_) => {
                    return Err(TestbedError::Options(format!(
                        "{name} is not an origin: only origins (origin-N, or all) have a shape"
                    )))
                }
                None => return Err(TestbedError::NoSuchServer { name: name.into(), known: self.state.names() }),
            }
        };
        if targets.is_empty() {
            return Err(TestbedError::Options("this testbed has no origins to shape".into()));
        }
        spec.parse::<barrage_server::ShapeSpec>().map_err(|e| TestbedError::Options(format!("set {name}: {e}")))?;
        for i in targets {
            let spec_of = &self.state.servers[i].spec;
            let merged = barrage_server::ShapeSpec::merge(spec_of.shape().unwrap_or(""), spec)
                .map_err(|e| TestbedError::Options(e.to_string()))?;
            let file = spec_of.shape_file().expect("an origin has a shape file").to_path_buf();
            let text = format!("{merged}\n");
            // Renamed into place: the origin never reads half a file.
            let tmp = file.with_extension("tmp");
            std::fs::write(&tmp, &text)?;
            std::fs::rename(&tmp, &file)?;
            let server = &mut self.state.servers[i];
            if let Some(entry) = server.spec.files.iter_mut().find(|(p, _)| *p == file) {
                entry.1 = text;
            }
            self.state.save()?;
            let server = &self.state.servers[i];
            if let (Status::Running, Some(pid)) = (&server.status, server.pid) {
                let mut want = barrage_server::Shape::default();
                merged.parse::<barrage_server::ShapeSpec>().expect("checked").apply(&mut want);
                let want = want.to_string();
                signal(pid as i32, libc::SIGHUP);
                let deadline = Instant::now() + SET_DEADLINE;
                loop {
                    let now = stats_shape(server.spec.listen);
                    if now.as_deref() == Some(want.as_str()) {
                        break;
                    }
                    if Instant::now() >= deadline {
                        let now = now.unwrap_or_else(|| "no answer".into());
                        return Err(TestbedError::Options(format!(
                            "{}: the shape file says {want}, the origin still {now} after {SET_DEADLINE:?} (see {})",
                            server.spec.name,
                            server.log().display()
                        )));
                    }
                    std::thread::sleep(TICK);
                }
            }
        }
        Ok(())
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.state.servers.iter().position(|s| s.spec.name == name)
    }

    /// Starts server `i` (a no-op if it runs) and waits until it answers (see [`answers`]),
    /// on its TLS port too, or until the supervisor is told to quit (then stops it again).
    fn start(&mut self, i: usize) -> Result<(), TestbedError> {
        if self.state.servers[i].status == Status::Running {
            return Ok(());
        }
        let first_log = self.state.servers[i].spec.logs.first();
        self.log_marks.insert(i, first_log.map_or(0, |log| file_len(log)));
        let pid = spawn(&self.state.servers[i])?;
        if let Err(e) = spawn_companions(&self.state.servers[i], pid) {
            signal(-(pid as i32), libc::SIGKILL);
            return Err(e);
        }
        let server = &mut self.state.servers[i];
        server.pid = Some(pid);
        // Not yet reaped, so the PID is still this child's: its start time is its own.
        server.started = crate::process::start_time(pid);
        server.status = Status::Running;
        std::fs::write(server.pid_file(), format!("{pid}\n"))?;
        self.state.save()?;
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            self.reap();
            if let Status::Exited(how) = &self.state.servers[i].status {
                let tail = log_tail(&self.state.servers[i].log());
                return Err(self.failed(i, format!("exited ({how}) while starting: {tail}")));
            }
            let Some(silent) = self.silent(i) else { return Ok(()) };
            if self.quit.load(Ordering::Relaxed) {
                let _ = self.stop(i);
                return Err(TestbedError::Interrupted);
            }
            if Instant::now() >= deadline {
                let _ = self.stop(i);
                let tail = log_tail(&self.state.servers[i].log());
                return Err(self.failed(i, format!("no answer on {silent} within {READY_DEADLINE:?}: {tail}")));
            }
            std::thread::sleep(TICK);
        }
    }

    /// The first of server `i`'s listeners that does not answer yet (`127.0.0.1:P`, or
    /// `127.0.0.1:P (TLS)`), or `None` once all do. The TLS port is asked over TLS, trusting
    /// the testbed's CA: a port that merely accepts could still fail every handshake (a
    /// certificate the server cannot read, Redis asking for client certificates).
    fn silent(&self, i: usize) -> Option<String> {
        let spec = &self.state.servers[i].spec;
        // Hitch has no plain port: its `listen` is its TLS one, asked below.
        if spec.kind != Kind::Hitch && !answers(spec.kind, spec.listen) {
            return Some(spec.listen.to_string());
        }
        // varnishncsa reads the shared-memory log from where it is when it attaches: only
        // once it logged a request (these checks) are all later ones in the access log,
        // which it appends to across restarts.
        let mark = self.log_marks.get(&i).copied().unwrap_or(0);
        if spec.kind == Kind::Varnish && spec.logs.first().is_none_or(|log| file_len(log) <= mark) {
            return Some(format!("{} (its access log, by varnishncsa)", spec.listen));
        }
        let tls = spec.tls_listen?;
        let answered = self.trust.as_ref().is_some_and(|trust| answers_tls(spec.kind, tls, trust));
        if !answered {
            return Some(format!("{tls} (TLS)"));
        }
        (spec.quic && !udp_bound(tls)).then(|| format!("{tls} (UDP, HTTP/3)"))
    }

    fn failed(&self, i: usize, reason: String) -> TestbedError {
        TestbedError::Start { name: self.state.servers[i].spec.name.clone(), reason }
    }

    /// Stops server `i`: SIGTERM, then SIGKILL to its whole process group after
    /// [`STOP_DEADLINE`]; returns once it has been reaped.
    fn stop(&mut self, i: usize) -> Result<(), TestbedError> {
        let Some(pid) = self.state.servers[i].pid else { return Ok(()) };
        if self.state.servers[i].status == Status::Running {
            signal(pid as i32, libc::SIGTERM);
            let deadline = Instant::now() + STOP_DEADLINE;
            while self.state.servers[i].status == Status::Running && Instant::now() < deadline {
                self.reap();
                std::thread::sleep(TICK);
            }
        }
        // Whatever of its group is left (workers of a master that died) goes too.
        signal(-(pid as i32), libc::SIGKILL);
        while self.state.servers[i].status == Status::Running {
            self.reap();
            std::thread::sleep(TICK);
        }
        let server = &mut self.state.servers[i];
        server.pid = None;
        server.started = None;
        server.status = Status::Stopped;
        let _ = std::fs::remove_file(server.pid_file());
        remove_leftovers(&server.spec);
        self.state.save()?;
        Ok(())
    }

    /// Empties cache `name`, or every cache of the testbed (see [`Kind::is_cache`]).
    fn purge(&mut self, name: Option<&str>) -> Result<(), TestbedError> {
        let caches: Vec<usize> =
            (0..self.state.servers.len()).filter(|&i| self.state.servers[i].spec.kind.is_cache()).collect();
        let names = || caches.iter().map(|&i| self.state.servers[i].spec.name.as_str()).collect::<Vec<_>>().join(", ");
        let targets = match name {
            None if caches.is_empty() => {
                return Err(TestbedError::Purge { name: "the testbed".into(), reason: "it has no cache".into() })
            }
            None => caches.clone(),
            Some(name) => {
                let i = self
                    .index(name)
                    .ok_or_else(|| TestbedError::NoSuchServer { name: name.into(), known: self.state.names() })?;
                if !caches.contains(&i) {
                    let reason = format!(
                        "it keeps no cache (the caches here: {})",
                        if caches.is_empty() { "none".to_string() } else { names() }
                    );
                    return Err(TestbedError::Purge { name: name.into(), reason });
                }
                vec![i]
            }
        };
        for i in targets {
            self.purge_one(i)?;
        }
        Ok(())
    }

    /// Empties the cache of server `i`: Varnish bans every object (`varnishadm ban`), squid
    /// (a memory cache) restarts, nginx's cache files are removed, redis-server and
    /// memcached flush their keys.
    fn purge_one(&mut self, i: usize) -> Result<(), TestbedError> {
        let server = &self.state.servers[i];
        let spec = server.spec.clone();
        let failed = |reason: String| TestbedError::Purge { name: spec.name.clone(), reason };
        if server.status != Status::Running {
            return Err(failed(format!("it is {} (start it first)", server.status)));
        }
        match spec.kind {
            Kind::Varnish => {
                let varnishadm = program_path("varnishadm")
                    .ok_or_else(|| TestbedError::Missing { program: "varnishadm".into(), package: "varnish".into() })?;
                // Every object cached before now is a miss from now on (the ban is checked at
                // lookup; the ban lurker frees the memory later).
                let out = Command::new(varnishadm)
                    .arg("-n")
                    .arg(&spec.dir)
                    .args(["-t", "5", "ban", "req.url", "~", "."])
                    .stdin(Stdio::null())
                    .output()?;
                if !out.status.success() {
                    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
                    return Err(failed(format!("varnishadm ban: {} ({})", text.trim(), describe_exit(out.status))));
                }
            }
            // A memory cache: a restart empties it (its counters start again too).
            Kind::Squid => {
                self.stop(i)?;
                self.start(i)?;
            }
            // nginx opens cache files by path, and takes a key whose file is gone for a miss:
            // the cache directory is swapped for an empty one at once, and the old one
            // removed in the background (thousands of files take seconds).
            Kind::NginxCache => {
                let cache = spec.dir.join("cache");
                let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                let old = spec.dir.join(format!("cache.purged-{}", stamp.as_nanos()));
                match std::fs::rename(&cache, &old) {
                    Ok(()) => {
                        std::thread::spawn(move || std::fs::remove_dir_all(old));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e.into()),
                }
                std::fs::create_dir_all(&cache)?;
            }
            Kind::Redis => {
                let mut conn = connect(spec.listen).ok_or_else(|| failed("no connection".into()))?;
                // ASYNC: the keys are gone at once, their memory is freed in the background
                // (a large data set would outlast the connection's timeout otherwise).
                if !ping(&mut conn, b"FLUSHALL ASYNC\r\n", b"+OK\r\n") {
                    return Err(failed("FLUSHALL ASYNC did not answer +OK".into()));
                }
            }
            Kind::Memcached => {
                let mut conn = connect(spec.listen).ok_or_else(|| failed("no connection".into()))?;
                if !ping(&mut conn, b"flush_all\r\n", b"OK\r\n") {
                    return Err(failed("flush_all did not answer OK".into()));
                }
            }
            Kind::Origin | Kind::Nginx | Kind::Haproxy | Kind::Caddy | Kind::Hitch => {
                return Err(failed("it keeps no cache".into()))
            }
        }
        Ok(())
    }

    /// Stops everything, fronts first, and removes the state directory.
    fn down(&mut self) {
        // SIGTERM to all at once, so the slow ones stop side by side.
        for s in self.state.servers.iter().filter(|s| s.status == Status::Running) {
            if let Some(pid) = s.pid {
                signal(pid as i32, libc::SIGTERM);
            }
        }
        for i in (0..self.state.servers.len()).rev() {
            let _ = self.stop(i);
        }
        self.reap();
        if let Some(keep) = &self.state.options.keep_logs {
            keep_logs(&self.state, keep);
        }
        remove_at_once(&self.state.dir);
    }

    /// Reaps every exited child or orphan, marking the servers that ended.
    fn reap(&mut self) {
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes only into `status`.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            self.exits.insert(pid as u32, describe(status));
        }
        let mut changed = false;
        for s in &mut self.state.servers {
            if let (Some(pid), Status::Running) = (s.pid, &s.status) {
                if let Some(how) = self.exits.remove(&pid) {
                    s.status = Status::Exited(how);
                    changed = true;
                }
            }
        }
        self.exits.clear();
        if changed {
            let _ = self.state.save();
        }
    }
}

/// Moves each stopped server's output and own logs to `keep/NAME/` (a directory of this
/// user's alone, as the state directory is). Best effort: a log that cannot be moved is lost
/// with the testbed, as it would be without `keep`.
fn keep_logs(state: &State, keep: &Path) {
    use std::os::unix::fs::DirBuilderExt;
    for s in &state.servers {
        let into = keep.join(&s.spec.name);
        if std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&into).is_err() {
            continue;
        }
        for log in std::iter::once(s.spec.dir.join("output.log")).chain(s.spec.logs.iter().cloned()) {
            let Some(name) = log.file_name() else { continue };
            // A resumed study's testbed keeps its logs beside the first one's.
            let free = |n: u32| {
                let mut to = name.to_owned();
                if n > 0 {
                    to.push(format!(".{n}"));
                }
                into.join(to)
            };
            let Some(to) = (0..100).map(free).find(|p| !p.exists()) else { continue };
            // The state directory is inside the experiment's: a rename, else a copy.
            if std::fs::rename(&log, &to).is_err() {
                let _ = std::fs::copy(&log, &to);
            }
        }
    }
}

/// Removes `dir` as one step to whoever looks: it is renamed out of the way first, then
/// removed. The next `up` in `dir` (a `--resume` right after its study was killed) must find
/// the whole testbed, which it waits for, or none, never a directory half removed.
fn remove_at_once(dir: &Path) {
    let mut gone = dir.as_os_str().to_owned();
    gone.push(format!(".down-{}", std::process::id()));
    let gone = std::path::PathBuf::from(gone);
    let _ = std::fs::remove_dir_all(if std::fs::rename(dir, &gone).is_ok() { &gone } else { dir });
}

/// Writes the testbed's CA and server certificate; returns the CA's path.
fn write_certificate(dir: &Path) -> Result<std::path::PathBuf, TestbedError> {
    let pki = barrage_server::generate_pki(std::net::Ipv4Addr::LOCALHOST.into())
        .map_err(|e| TestbedError::Start { name: "certificate".into(), reason: e.to_string() })?;
    let files = tls_files(dir);
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &pki.ca_pem)?;
    std::fs::write(&files.cert, &pki.chain_pem)?;
    // Private keys for this user alone, from their creation: every server reads its
    // certificate before it drops to its own user (squid to `proxy`).
    write_private(&files.key, pki.key_pem.as_bytes())?;
    write_private(&files.combined, format!("{}{}", pki.chain_pem, pki.key_pem).as_bytes())?;
    for f in [&files.cert, &ca] {
        set_mode(f, 0o644)?;
    }
    Ok(ca)
}

/// A TLS client trusting the CA certificates in `ca_pem` alone, for [`answers_tls`].
fn trusting(ca_pem: &[u8]) -> Result<Arc<rustls::ClientConfig>, TestbedError> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let failed = |why: String| TestbedError::Start { name: "certificate".into(), reason: why };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.map_err(|e| failed(format!("the CA: {e}")))?).map_err(|e| failed(format!("the CA: {e}")))?;
    }
    // ring, as everywhere in barrage: the process-wide default provider is not relied on.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| failed(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Writes a new file only this user can read.
fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?.write_all(contents)
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Writes the server's files and starts it in a process group of its own, its output in
/// its directory.
fn spawn(server: &ServerState) -> Result<u32, TestbedError> {
    let spec = &server.spec;
    std::fs::create_dir_all(&spec.dir)?;
    for (path, contents) in &spec.files {
        std::fs::write(path, contents)?;
    }
    // Squid, once it is `proxy`, cannot reach its directory inside the private testbed
    // directory: its access log is opened here (created before `give_to`, so it is proxy's)
    // and handed over as descriptor 3, which squid opens again as /dev/fd/3.
    let squid_log = match spec.kind {
        Kind::Squid => {
            let path = crate::servers::squid_access_log(&spec.dir);
            Some(std::fs::OpenOptions::new().create(true).append(true).open(path)?)
        }
        _ => None,
    };
    if let Some(owner) = &spec.owner {
        give_to(&spec.dir, owner)?;
    }
    let log = std::fs::OpenOptions::new().create(true).append(true).open(server.log())?;
    let mut cmd = Command::new(program_path(&spec.program).ok_or_else(|| missing(spec))?);
    if let Some(file) = squid_log {
        use std::os::fd::IntoRawFd;
        let fd = file.into_raw_fd();
        // SAFETY: between fork and exec only async-signal-safe calls: dup2 and fcntl. The
        // descriptor stays open in the supervisor until the child has been spawned.
        unsafe {
            cmd.pre_exec(move || {
                if fd == 3 {
                    // dup2 onto itself keeps close-on-exec: clear it instead.
                    libc::fcntl(3, libc::F_SETFD, 0);
                } else if libc::dup2(fd, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let spawned = spawn_with_output(cmd, server, log);
        // SAFETY: `fd` came from into_raw_fd above and is closed once, here.
        unsafe { libc::close(fd) };
        return spawned;
    }
    spawn_with_output(cmd, server, log)
}

/// Spawns `cmd` as server `server`: its arguments and environment, in its directory, in a
/// process group of its own, its output to `log`.
fn spawn_with_output(mut cmd: Command, server: &ServerState, log: std::fs::File) -> Result<u32, TestbedError> {
    let spec = &server.spec;
    let child = cmd
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| TestbedError::Start { name: spec.name.clone(), reason: format!("{}: {e}", spec.program) })?;
    // The child is reaped by `reap`, through waitpid(-1): the handle is not needed.
    Ok(child.id())
}

/// Starts the programs that run beside server `pid` ([`ServerSpec::companions`]) in its
/// process group, so that they end with it, their output with its.
fn spawn_companions(server: &ServerState, pid: u32) -> Result<(), TestbedError> {
    for companion in &server.spec.companions {
        let Some((program, args)) = companion.split_first() else { continue };
        let path = program_path(program)
            .ok_or_else(|| TestbedError::Missing { program: program.clone(), package: server.spec.package.clone() })?;
        let log = std::fs::OpenOptions::new().create(true).append(true).open(server.log())?;
        Command::new(path)
            .args(args)
            .current_dir(&server.spec.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(pid as i32)
            .spawn()
            .map_err(|e| TestbedError::Start { name: server.spec.name.clone(), reason: format!("{program}: {e}") })?;
    }
    Ok(())
}

/// The length of the file at `path`; 0 when there is none.
fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// "exit 1", "signal 9", from a finished command.
fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => status.to_string(),
    }
}

fn missing(spec: &ServerSpec) -> TestbedError {
    TestbedError::Missing { program: spec.program.clone(), package: spec.package.clone() }
}

/// `program` as a path: as given when it has a slash, else found on PATH or in the sbin
/// directories (where Debian puts nginx, haproxy, varnishd and squid).
pub fn program_path(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        return Path::new(program).exists().then(|| program.into());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let sbin = ["/usr/sbin", "/sbin", "/usr/local/sbin"].map(std::path::PathBuf::from);
    std::env::split_paths(&path).chain(sbin).map(|d| d.join(program)).find(|p| p.is_file())
}

/// Makes `user` own `dir` and what is in it, when we are root (squid drops to `proxy`).
fn give_to(dir: &Path, user: &str) -> Result<(), TestbedError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(());
    }
    let name = std::ffi::CString::new(user).map_err(|_| TestbedError::Protocol(user.into()))?;
    // SAFETY: getpwnam reads a NUL-terminated name; the result is copied out at once.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(TestbedError::Start { name: user.into(), reason: format!("no user '{user}' on this machine") });
    }
    // SAFETY: pw is non-null and points to libc's static passwd record.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    std::os::unix::fs::chown(dir, Some(uid), Some(gid))?;
    for entry in std::fs::read_dir(dir)? {
        std::os::unix::fs::chown(entry?.path(), Some(uid), Some(gid))?;
    }
    Ok(())
}

fn remove_leftovers(spec: &ServerSpec) {
    for prefix in &spec.leftovers {
        let (Some(parent), Some(stem)) = (prefix.parent(), prefix.file_name()) else { continue };
        let Ok(entries) = std::fs::read_dir(parent) else { continue };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&*stem.to_string_lossy()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill only sends a signal; a PID that is gone gives ESRCH, which is fine.
    unsafe { libc::kill(pid, sig) };
}

/// "exit 0", "exit 1", "signal 9".
fn describe(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("signal {}", libc::WTERMSIG(status))
    } else {
        format!("status {status}")
    }
}

/// Whether a server of `kind` at `addr` answers its protocol: `GET /` for the HTTP
/// servers, `PING` (`+PONG`) for redis-server, `version` (`VERSION …`) for memcached.
pub fn answers(kind: Kind, addr: SocketAddr) -> bool {
    connect(addr).is_some_and(|mut conn| probe(kind, addr, &mut conn))
}

/// [`answers`] over TLS, the server's certificate checked by `trust` for `addr`'s IP.
fn answers_tls(kind: Kind, addr: SocketAddr, trust: &Arc<rustls::ClientConfig>) -> bool {
    let Some(conn) = connect(addr) else { return false };
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let Ok(session) = rustls::ClientConnection::new(trust.clone(), name) else { return false };
    // The handshake happens on the first write or read, under the socket's timeouts.
    probe(kind, addr, &mut rustls::StreamOwned::new(session, conn))
}

/// Whether something is bound to UDP `addr` on this machine (an HTTP/3 listener). UDP has
/// no handshake to ask for: a datagram too short to be a QUIC packet is sent from a
/// connected socket, which a QUIC server drops unread; when nothing is bound, the kernel
/// answers at once with an ICMP port unreachable, which the socket reports as refused. No
/// refusal within [`UDP_SILENCE`] means bound. For loopback addresses, where the ICMP answer
/// is immediate (the testbed's).
pub fn udp_bound(addr: SocketAddr) -> bool {
    let probe = || -> std::io::Result<bool> {
        let local: SocketAddr = if addr.is_ipv4() { "127.0.0.1:0" } else { "[::1]:0" }.parse().expect("an address");
        let socket = std::net::UdpSocket::bind(local)?;
        socket.connect(addr)?;
        socket.set_read_timeout(Some(UDP_SILENCE))?;
        socket.send(&[0])?;
        match socket.recv(&mut [0; 64]) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(false),
            _ => Ok(true),
        }
    };
    probe().unwrap_or(false)
}

/// How long [`udp_bound`] waits for a refusal.
const UDP_SILENCE: Duration = Duration::from_millis(50);

/// Whether `addr` answers `GET /` with any HTTP status (a TCP connect is not enough:
/// varnishd accepts before it serves).
pub fn answers_http(addr: SocketAddr) -> bool {
    answers(Kind::Origin, addr)
}

/// How long an origin may take to take a new shape after SIGHUP.
const SET_DEADLINE: Duration = Duration::from_secs(5);

/// The shape an origin at `addr` says it has (`shape` in `/_barrage/stats`).
fn stats_shape(addr: SocketAddr) -> Option<String> {
    let mut conn = connect(addr)?;
    let request = format!("GET /_barrage/stats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).ok()?;
    let mut reply = String::new();
    conn.take(1 << 20).read_to_string(&mut reply).ok()?;
    let body = reply.split_once("\r\n\r\n")?.1;
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    Some(json.get("shape")?.as_str()?.to_string())
}

/// A connection to `addr` with bounded waits, or `None` when it is refused or slow.
fn connect(addr: SocketAddr) -> Option<TcpStream> {
    let conn = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
    Some(conn)
}

/// Asks a server of `kind` at `addr` its protocol's question on `conn`.
fn probe(kind: Kind, addr: SocketAddr, conn: &mut (impl Read + Write)) -> bool {
    match kind {
        Kind::Redis => ping(conn, b"PING\r\n", b"+PONG\r\n"),
        Kind::Memcached => ping(conn, b"version\r\n", b"VERSION "),
        Kind::Origin
        | Kind::Nginx
        | Kind::Haproxy
        | Kind::Varnish
        | Kind::Squid
        | Kind::Caddy
        | Kind::NginxCache
        | Kind::Hitch => {
            let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            let mut start = [0u8; 12];
            conn.write_all(request.as_bytes()).is_ok()
                && conn.read_exact(&mut start).is_ok()
                && start.starts_with(b"HTTP/1.")
                && start[9].is_ascii_digit()
        }
    }
}

/// Whether `conn` answers `ping` with a reply starting with `pong`.
fn ping(conn: &mut (impl Read + Write), ping: &[u8], pong: &[u8]) -> bool {
    let mut reply = vec![0u8; pong.len()];
    conn.write_all(ping).is_ok() && conn.read_exact(&mut reply).is_ok() && reply == pong
}

/// The last lines of a server's output, on one line, for an error message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.is_empty() {
        format!("no output (see {})", path.display())
    } else {
        format!("{tail} (see {})", path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_server::Pki;
    use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};

    fn pki() -> Pki {
        barrage_server::generate_pki(std::net::Ipv4Addr::LOCALHOST.into()).unwrap()
    }

    /// A server answering `+PONG\r\n` to what the first `connections` connections send,
    /// over TLS with `pki`'s certificate when given, else in plain text.
    fn pong_server(pki: Option<&Pki>, connections: usize) -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let tls = pki.map(|pki| {
            let chain =
                CertificateDer::pem_slice_iter(pki.chain_pem.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
            let key = PrivateKeyDer::from_pem_slice(pki.key_pem.as_bytes()).unwrap();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .unwrap();
            Arc::new(config)
        });
        std::thread::spawn(move || {
            for conn in listener.incoming().take(connections) {
                let mut conn = conn.unwrap();
                conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                match &tls {
                    Some(config) => {
                        let session = rustls::ServerConnection::new(config.clone()).unwrap();
                        pong(&mut rustls::StreamOwned::new(session, conn));
                    }
                    None => pong(&mut conn),
                }
            }
        });
        addr
    }

    /// Answers what arrives first with `+PONG`; a failed handshake or read gets nothing.
    fn pong(conn: &mut (impl Read + Write)) {
        let mut buf = [0u8; 64];
        if conn.read(&mut buf).is_ok_and(|n| n > 0) {
            let _ = conn.write_all(b"+PONG\r\n").and_then(|()| conn.flush());
        }
    }

    #[test]
    fn a_tls_port_answers_only_over_tls_with_a_trusted_certificate() {
        let pki = pki();
        let trust = trusting(pki.ca_pem.as_bytes()).unwrap();
        let tls = pong_server(Some(&pki), 2);
        assert!(answers_tls(Kind::Redis, tls, &trust), "the testbed's CA");
        // Another CA: the handshake fails on the certificate.
        assert!(!answers_tls(Kind::Redis, tls, &trusting(self::pki().ca_pem.as_bytes()).unwrap()));
        // A port that accepts and answers PING in plain text is not a TLS port.
        let plain = pong_server(None, 2);
        assert!(answers(Kind::Redis, plain), "plain PING");
        assert!(!answers_tls(Kind::Redis, plain, &trust));
    }
}
