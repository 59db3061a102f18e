//! The process's signal handling, installed once, the study's interruption policy as the
//! process sees it: the first SIGINT, SIGTERM or SIGHUP
//! cancels the study's token (the run in progress stops, what finished is kept, the partial
//! report is printed, temporary files are removed, and the exit code is 130, 143 or 129);
//! the second takes down the testbeds the process brought up and exits at once, as a panic
//! does ([`quit_on_panic`]).
//!
//! SIGTERM is what `timeout`, docker, systemd and CI send, SIGHUP what a closed terminal or
//! SSH session sends: left at their default, either would kill the process mid-run, losing
//! the report, the last second of the results file and leaving the temporary one behind.
//!
//! While the command loads what it will run ([`loading`]: a target file of a million
//! targets, a scenario, a list on stdin that may never end), nothing is written or started
//! yet: the first signal then exits at once with the same code.

use barrage_engine::CancellationToken;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// The first signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Testbeds to take down if a second signal ends the process at once.
static TESTBEDS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// How many [`Loading`] guards are alive. The signal thread holds the lock from its check
/// to its exit, so no guard ends (and nothing is written) in between.
static LOADING: Mutex<usize> = Mutex::new(0);

/// The command loads what it will run until the guard is dropped: the first signal
/// meanwhile ends the process at once, there being nothing to keep or remove.
pub struct Loading(());

/// Marks the command as loading (see [`Loading`]).
pub fn loading() -> Loading {
    *LOADING.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    Loading(())
}

impl Drop for Loading {
    fn drop(&mut self) {
        *LOADING.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
    }
}

/// Installs the handler and returns the token it cancels. Returns once the handler is in
/// place, so a signal during the run is never the default one that would kill the process
/// and lose the report.
pub fn install() -> std::io::Result<CancellationToken> {
    let token = CancellationToken::new();
    let stop = token.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new().name("barrage-signals".into()).spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            let _ = ready_tx.send(false);
            return;
        };
        rt.block_on(async {
            let Ok(mut streams) = listen() else {
                let _ = ready_tx.send(false);
                return;
            };
            let _ = ready_tx.send(true);
            let first = next(&mut streams).await;
            RECEIVED.store(first, Ordering::SeqCst);
            quit_if_loading(first);
            eprintln!("\nbarrage: stopping; what finished is kept (again to quit at once)");
            stop.cancel();
            let second = next(&mut streams).await;
            quit(128 + second);
        });
    })?;
    if !ready_rx.recv().unwrap_or(false) {
        return Err(std::io::Error::other("cannot install the signal handler"));
    }
    Ok(token)
}

/// Ends the process at once, on `signal`, if the command is loading (see [`Loading`]).
fn quit_if_loading(signal: i32) {
    let loading = LOADING.lock().unwrap_or_else(|e| e.into_inner());
    if *loading > 0 {
        eprintln!("\nbarrage: stopped while loading; nothing was sent");
        quit(128 + signal);
    }
}

/// SIGINT, SIGTERM and SIGHUP taken from their default action (ending the process), for
/// [`next`]. Call inside a tokio runtime.
fn listen() -> std::io::Result<[Signal; 3]> {
    Ok([signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?, signal(SignalKind::hangup())?])
}

/// The next of SIGINT, SIGTERM and SIGHUP to arrive.
async fn next(streams: &mut [Signal; 3]) -> i32 {
    let [int, term, hup] = streams;
    tokio::select! {
        _ = int.recv() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
        _ = hup.recv() => libc::SIGHUP,
    }
}

/// SIGINT, SIGTERM and SIGHUP waited for one at a time, by a command that handles them its
/// own way rather than with [`install`]'s token (`serve`: each ends it cleanly, removing the
/// CA file it generated; SIGHUP re-reads its shape file).
pub struct Waiter {
    rt: tokio::runtime::Runtime,
    signals: [Signal; 3],
}

impl Waiter {
    /// Takes the three signals from their default action (ending the process).
    pub fn install() -> std::io::Result<Waiter> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let signals = rt.block_on(async { listen() })?;
        Ok(Waiter { rt, signals })
    }

    /// Blocks until the next signal, and says which.
    pub fn wait(&mut self) -> i32 {
        self.rt.block_on(next(&mut self.signals))
    }
}

/// 130 after SIGINT, 143 after SIGTERM, 129 after SIGHUP; `None` when no signal stopped the work.
pub fn exit_code() -> Option<u8> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some((128 + s) as u8),
    }
}

/// Ends the process at once with `code`, taking down the testbeds it brought up first: the
/// second signal, or a panic.
pub fn quit(code: i32) -> ! {
    // try_lock: a panic while the list is held must not wait for itself.
    let dirs = TESTBEDS.try_lock().map(|d| d.clone()).unwrap_or_default();
    for dir in dirs {
        let _ = barrage_testbed::down(&dir);
    }
    std::process::exit(code)
}

/// Takes the testbed in `dir` down even if a second signal or a panic ends the process.
pub fn down_on_exit(dir: &Path) {
    if let Ok(mut d) = TESTBEDS.lock() {
        d.push(dir.to_path_buf());
    }
}

/// A panic anywhere is a bug, never a result: one line saying so and exit `code` at once,
/// from whichever thread panicked, taking down the testbeds first as [`quit`] does. Without
/// this a panic in an engine, server or tokio worker thread is caught by its runtime or join
/// and the process goes on, exiting 0 with an empty or partial report. With
/// `RUST_BACKTRACE` set, Rust's own message and backtrace come first.
pub fn quit_on_panic(code: i32) {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
            default(info);
        }
        let payload = info.payload();
        let message = payload.downcast_ref::<&str>().copied().or(payload.downcast_ref::<String>().map(String::as_str));
        // One line: a multi-line assertion message is joined, control characters dropped.
        let message: String = message
            .unwrap_or("(no message)")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .filter(|c| !c.is_control())
            .collect();
        let at = info.location().map(|l| format!(" at {l}")).unwrap_or_default();
        // Not eprintln!, which would panic again (and abort) on a closed stderr.
        let _ = writeln!(std::io::stderr(), "barrage: internal error: {message}{at}; this is a bug, please report it");
        quit(code);
    }));
}
