//! `barrage testbed`: real servers (barrage origins, nginx, haproxy, varnishd with hitch
//! for TLS, squid, Caddy; redis-server, memcached) on loopback, started from generated
//! configs and owned by a small supervisor process. Every server keeps its own log
//! ([`ServerSpec::logs`]).
//!
//! [`up`] starts the supervisor in the background (`barrage testbed supervise`, a session
//! of its own) and returns once every server answers (HTTP, or a key-value ping); [`control`] sends it `stop NAME`,
//! `start NAME`, `set NAME SHAPE` (an origin's [`barrage_server::Shape`], live), `purge [NAME]`
//! (empty the caches) or `down`; [`State::load`] reads what runs. [`supervise`] is the supervisor
//! itself, also used in the foreground by `testbed up --foreground`.

#![warn(missing_docs)]

mod congestion;
mod layout;
mod process;
pub mod servers;
mod state;
mod status;
mod supervisor;

pub use congestion::congestion_note;
pub use layout::{album_dir, origin_shape, parse_shape, plan, store_dir, Kind, Options, ServerSpec, Topology};
pub use servers::{Balance, Eviction};
pub use state::{check_dir, create_dir, default_dir, Owner, ServerState, State, Status};
pub use status::{absolute, answer_up, dir_flag, running, set, status_json, table, STATUS_VERSION};
pub use supervisor::{answers, answers_http, program_path, supervise, Tie, READY_DEADLINE, STOP_DEADLINE};

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// What can go wrong with a testbed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestbedError {
    /// A program the topology needs is not installed.
    #[error("{program} not found: install the Debian package '{package}' (apt-get install {package})")]
    Missing {
        /// The program.
        program: String,
        /// Its Debian package.
        package: String,
    },
    /// A testbed already runs in the directory.
    #[error("a testbed is already up in {0} (run `barrage testbed down --dir {0}` first, or use another --dir)")]
    Busy(String),
    /// The directory holds other files: `down` would remove them.
    #[error("--dir {0} is not empty and holds no testbed: give a new or empty directory (down removes it)")]
    NotEmpty(String),
    /// The topology cannot serve TLS.
    #[error("the {topology} testbed has no TLS: {why}; leave out --tls (testbed-tls in an experiment)")]
    NoTls {
        /// The topology's name.
        topology: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// Options that do not fit together (weights for another number of origins, a shape
    /// for an origin that is not there).
    #[error("{0}")]
    Options(String),
    /// A cache could not be purged.
    #[error("cannot purge {name}: {reason}")]
    Purge {
        /// The server.
        name: String,
        /// Why.
        reason: String,
    },
    /// No testbed runs in the directory.
    #[error("no testbed is up in {0} (start one with `barrage testbed up TOPOLOGY --dir {0}`)")]
    NotUp(String),
    /// The testbed's state is there, its supervisor is not.
    #[error("the testbed supervisor in {dir} is gone (servers may be left): run `barrage testbed down{flag}`")]
    Gone {
        /// The directory.
        dir: String,
        /// ` --dir DIR` unless it is the default ([`dir_flag`]).
        flag: String,
    },
    /// No server of that name.
    #[error("no server '{name}' in this testbed (it has {known})")]
    NoSuchServer {
        /// The name asked for.
        name: String,
        /// The names it has.
        known: String,
    },
    /// A server did not start.
    #[error("{name} did not start: {reason}")]
    Start {
        /// The server.
        name: String,
        /// Why, with the end of its output.
        reason: String,
    },
    /// The supervisor said something unexpected, or was asked something it does not know.
    #[error("testbed supervisor: {0}")]
    Protocol(String),
    /// The state directory is not one this user can trust.
    #[error("testbed directory {dir} {why}: refusing to use it (give a --dir of your own)")]
    Untrusted {
        /// The directory.
        dir: String,
        /// What is wrong with it.
        why: String,
    },
    /// Stopped (a signal) while the servers were coming up: what had started is down again.
    #[error("interrupted while the testbed came up: what had started was taken down")]
    Interrupted,
    /// Files or sockets failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// How long a testbed [`up`] brings up lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// Until `barrage testbed down`: `barrage testbed up` returns, the testbed stays.
    UntilDown,
    /// Until `down` or the end of the calling process, however it ends (SIGKILL included):
    /// the testbed of a study, which nobody else would take down.
    Caller,
}

/// Checks that every program the testbed needs is installed.
pub fn check_programs(options: &Options, dir: &Path) -> Result<(), TestbedError> {
    // Planning in a scratch place gives the programs without touching `dir`.
    let scratch = dir.join(".plan");
    for spec in plan(options, &scratch)? {
        let companions = spec.companions.iter().filter_map(|c| c.first());
        if let Some(program) = std::iter::once(&spec.program).chain(companions).find(|p| program_path(p).is_none()) {
            return Err(TestbedError::Missing { program: program.clone(), package: spec.package });
        }
    }
    Ok(())
}

/// Starts a testbed in `dir` under a supervisor in the background (a new session, away from
/// the terminal's signals) and returns its state once every server answers. It lives for
/// `lifetime`. `stopped` is asked every 20 ms while the servers come up: once it says
/// so, what had started is taken down and the answer is [`TestbedError::Interrupted`].
pub fn up(
    options: &Options,
    dir: &Path,
    lifetime: Lifetime,
    stopped: &dyn Fn() -> bool,
) -> Result<State, TestbedError> {
    // Servers start in their own directories: every path must stand on its own.
    let dir = &std::path::absolute(dir)?;
    prepare(options, dir)?;
    let json = serde_json::to_string(options).map_err(|e| TestbedError::Protocol(e.to_string()))?;
    create_dir(dir)?;
    let log = std::fs::File::create(dir.join("supervisor.log"))?;
    let mut cmd = Command::new(&options.barrage);
    cmd.args(["testbed", "supervise", "--dir"]).arg(dir).arg("--options").arg(json);
    if lifetime == Lifetime::Caller {
        cmd.arg("--owner").arg(std::process::id().to_string());
    }
    // Its standard input is its tie to this process (see [`Tie`]).
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(log);
    // SAFETY: setsid is async-signal-safe; it makes the supervisor leader of a new session,
    // away from the terminal's Ctrl-C and hang-up.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let tie = child.stdin.take().expect("piped");
    let Some(line) = first_line(child.stdout.take().expect("piped"), stopped) else {
        // Closing the tie before the testbed is up takes down what had started.
        drop(tie);
        // Bounded by a readiness check in progress and the servers' stop.
        wait_until(STOP_DEADLINE * 2, || !matches!(child.try_wait(), Ok(None)));
        return Err(TestbedError::Interrupted);
    };
    if !line.starts_with("ready") {
        let _ = child.wait();
        let reason = line.trim().strip_prefix("error: ").unwrap_or(line.trim()).to_string();
        let reason = if reason.is_empty() {
            format!("the supervisor ended (see {})", dir.join("supervisor.log").display())
        } else {
            reason
        };
        return Err(TestbedError::Protocol(reason));
    }
    match lifetime {
        // Open until this process ends, by whatever end: the kernel closes it then.
        Lifetime::Caller => std::mem::forget(tie),
        Lifetime::UntilDown => drop(tie),
    }
    // The supervisor lives on; it is not ours to wait for.
    drop(child);
    State::load(dir).ok_or_else(|| TestbedError::NotUp(dir.display().to_string()))
}

/// How often [`up`] asks whether it was stopped.
const TICK: Duration = Duration::from_millis(20);

/// The first line the supervisor writes (`ready` or `error: …`; empty when it ended without
/// one), or `None` once `stopped` says so.
fn first_line(out: ChildStdout, stopped: &dyn Fn() -> bool) -> Option<String> {
    use std::sync::mpsc::RecvTimeoutError;
    let (tx, rx) = std::sync::mpsc::channel();
    // Read on a thread of its own, so this one can watch `stopped` meanwhile.
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(out).read_line(&mut line);
        let _ = tx.send(line);
    });
    loop {
        match rx.recv_timeout(TICK) {
            Ok(line) => return Some(line),
            Err(RecvTimeoutError::Disconnected) => return Some(String::new()),
            Err(RecvTimeoutError::Timeout) if stopped() => return None,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Waits until `done` says so, at most `bound`; whether it did.
fn wait_until(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Refuses options no testbed serves ([`Options::check`]) and a directory where a testbed
/// runs, clears a dead one's leftovers (also of one whose owner died: see
/// [`Lifetime::Caller`]), and checks the programs.
pub fn prepare(options: &Options, dir: &Path) -> Result<(), TestbedError> {
    options.check()?;
    check_dir(dir)?;
    if let Some(state) = State::load(dir) {
        if state.owner.is_some_and(|o| !o.alive()) {
            // Its supervisor is taking the servers down and removing `dir`, which must not
            // happen to the next testbed there: let it finish.
            if !wait_until(STOP_DEADLINE * 2, || !living(state.supervisor_pid)) {
                return Err(TestbedError::Busy(dir.display().to_string()));
            }
        } else if is_up(dir) {
            return Err(TestbedError::Busy(dir.display().to_string()));
        }
        clean_up(dir)?;
    } else if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        // `down` removes the state directory: it must be the testbed's alone.
        return Err(TestbedError::NotEmpty(dir.display().to_string()));
    }
    check_programs(options, dir)
}

/// Whether a supervisor runs for `dir`: it answers on its socket, or, while it is still
/// starting the servers (the socket comes last), its process lives.
pub fn is_up(dir: &Path) -> bool {
    UnixStream::connect(State::socket(dir)).is_ok()
        || State::load(dir).is_some_and(|s| s.supervisor_pid != std::process::id() && living(s.supervisor_pid))
}

/// Sends one command (`stop NAME`, `start NAME`, `purge [NAME]`, `down`) to the supervisor in `dir` and
/// waits for it to be done.
pub fn control(dir: &Path, command: &str) -> Result<(), TestbedError> {
    check_dir(dir)?;
    let not_up = || TestbedError::NotUp(dir.display().to_string());
    let mut conn = UnixStream::connect(State::socket(dir)).map_err(|_| not_up())?;
    // Bounded: a stop takes at most STOP_DEADLINE per server, a start READY_DEADLINE.
    conn.set_read_timeout(Some(READY_DEADLINE + STOP_DEADLINE * 8 + Duration::from_secs(5)))?;
    conn.write_all(format!("{command}\n").as_bytes())?;
    let mut reply = String::new();
    BufReader::new(&conn).read_line(&mut reply)?;
    match reply.trim() {
        "ok" => Ok(()),
        "" => Err(TestbedError::Protocol(format!("no answer to '{command}'"))),
        r => Err(TestbedError::Protocol(r.strip_prefix("error: ").unwrap_or(r).to_string())),
    }
}

/// Takes the testbed in `dir` down: through its supervisor, or, when the supervisor is
/// gone, by killing the servers its state lists. Afterwards `dir` is gone.
pub fn down(dir: &Path) -> Result<(), TestbedError> {
    check_dir(dir)?;
    if is_up(dir) {
        return control(dir, "down");
    }
    if State::load(dir).is_none() && !dir.join("supervisor.log").exists() {
        return Err(TestbedError::NotUp(dir.display().to_string()));
    }
    clean_up(dir)
}

/// Kills what a dead supervisor left running, waits (bounded) until it is gone, and
/// removes `dir`. Only processes the supervisor started are signalled: a server whose PID
/// and start time both match the state file, and the members of its process group, each
/// by its own PID (a process group read from a file is never signalled as such).
fn clean_up(dir: &Path) -> Result<(), TestbedError> {
    if let Some(state) = State::load(dir) {
        let mut killed = Vec::new();
        for s in state.servers.iter().rev() {
            let (Some(pid), Some(started)) = (s.pid, s.started) else { continue };
            if pid <= 1 || process::start_time(pid) != Some(started) {
                continue;
            }
            // The leader first, so it forks no more; then what is left of its group.
            for member in std::iter::once(pid).chain(process::group_members(pid, started)) {
                // SAFETY: kill only sends a signal, to one PID checked above.
                unsafe { libc::kill(member as i32, libc::SIGKILL) };
                killed.push(member);
            }
        }
        // SIGKILL is delivered asynchronously: return once the processes have died (orphans of
        // a dead supervisor may stay zombies, which hold nothing).
        wait_until(STOP_DEADLINE, || !killed.iter().any(|pid| living(*pid)));
    }
    std::fs::remove_dir_all(dir).or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })?;
    Ok(())
}

/// Whether `pid` exists and is not a zombie.
fn living(pid: u32) -> bool {
    process::stat(pid).is_some_and(|s| s.state != 'Z')
}
