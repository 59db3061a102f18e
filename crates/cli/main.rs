//! The `barrage` binary: parses the command line, installs signal handling once, dispatches
//! to a subcommand, and decides the exit code in one place: 0 ok, 1 an objective or check
//! failed, 2 bad usage, config or I/O, 3 a run the result depends on is built on failure
//! (under half of its requests succeeded), 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP
//! (partial results kept), 101 an internal error (a panic in any thread: a bug).

mod args;
mod cmd;
#[cfg(test)]
mod fuzz;
mod message;

use args::{Cli, Command, TestbedCommand};
use barrage_study::signals;
use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

/// How a subcommand ended, for the exit code `main` decides (not a sample's
/// [`barrage_metrics::Outcome`]).
pub enum Exit {
    /// Everything went as asked.
    Ok,
    /// A threshold or comparison failed.
    Failed,
    /// A run, level, probe or case the result depends on is built on failure
    /// (`barrage_report::study::failure_of`): its figures are not a result, whatever the
    /// objectives say. Why, in one line.
    NotAResult(String),
}

/// Exit code of [`Exit::NotAResult`]: apart from 1, so that a script or CI job can tell
/// "the service missed an objective" from "nothing worked: the test itself is broken"
/// (an untrusted certificate, a refused port).
const NOT_A_RESULT: u8 = 3;

/// Exit code of a panic in any thread, Rust's own for a panicking main thread.
const INTERNAL_ERROR: i32 = 101;

fn main() -> ExitCode {
    keep_freed_memory();
    signals::quit_on_panic(INTERNAL_ERROR);
    test_panic();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(e),
    };
    let result = dispatch(cli.command);
    if let Some(code) = signals::exit_code() {
        if let Err(e) = &result {
            say(&format!("error: {e:#}"));
        }
        return ExitCode::from(code);
    }
    match result {
        Ok(Exit::Ok) => ExitCode::SUCCESS,
        Ok(Exit::Failed) => ExitCode::from(1),
        Ok(Exit::NotAResult(why)) => {
            say(&format!("FAILED: {why}"));
            ExitCode::from(NOT_A_RESULT)
        }
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            say(&format!("error: {e:#}"));
            ExitCode::from(2)
        }
    }
}

/// Has glibc's malloc keep freed memory for reuse. A latency histogram is a 184 KiB block,
/// and a run makes hundreds: a dozen a recorder, a recorder an interval, and again as its
/// results file is read back. glibc's defaults map a block over 128 KiB anew (raising that
/// bound only after such a block is freed) and give the heap's free top back beyond twice
/// the bound, so histogram after histogram faulted its pages in as it was zeroed: 28%
/// of the CPU of a short run (1,000 commands: 32 ms, 23 ms with this). Blocks under 1 MiB
/// now come from the heap, which keeps up to 64 MiB free; larger ones (a 4 MiB discard
/// buffer) are mapped as they come and unmapped as they go, the bound no longer moving.
/// The price is 5 to 11 MiB more at the peak, not growing with the run; a 4 MiB bound gave
/// back about half of that and kept a third of the saving. Measured with this setting alone
/// in bench/results/2026-11-29_1250-i36-allocator-memory.txt.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets allocator parameters; called first thing in `main`,
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Prints barrage's last word on stderr, on one line, secrets redacted by the built-in
/// rules whatever `--no-redact` says: an error may quote a URL or a header as given, and
/// stderr ends up in CI logs.
/// Not `eprintln!`: with stderr a pipe nobody reads (`2>&1 | head -1`), that panics, and the
/// exit code would be 101 (a bug) instead of the one decided here.
fn say(line: &str) {
    let line = barrage_report::message::one_line(&barrage_metrics::secrets::Redaction::default().text(line));
    let _ = writeln!(std::io::stderr(), "barrage: {line}");
}

/// Commands that send load, and `testbed up` (which takes down what it started when stopped
/// while its testbed comes up), get the signal handler; `serve` and the testbed's other
/// commands handle signals their way (each ends cleanly on SIGINT, SIGTERM and SIGHUP).
fn dispatch(command: Command) -> anyhow::Result<Exit> {
    let stop = || signals::install();
    match command {
        Command::Run(a) => cmd::run::run(*a, stop()?),
        Command::Sweep(a) => cmd::sweep::sweep(*a, stop()?),
        Command::Capacity(a) => cmd::capacity::capacity(*a, stop()?),
        Command::Experiment(a) => cmd::experiment::experiment(a, stop()?),
        Command::Demo(a) => cmd::demo::demo(a, stop()?),
        Command::Testbed(a) => match a.command {
            TestbedCommand::Bench(b) => cmd::bench::bench(b, stop()?),
            TestbedCommand::Up(u) if !u.foreground => cmd::testbed::up(u, stop()?),
            other => cmd::testbed::testbed(other),
        },
        Command::Report(a) => cmd::report::report(a),
        Command::Serve(a) => cmd::serve::serve(*a),
        Command::Compare(a) => cmd::compare::compare(a),
        Command::History(a) => cmd::history::history(a),
        Command::Collect(a) => cmd::collect::collect(*a, stop()?),
        Command::Generated(a) => cmd::completions::generated(a),
    }
}

/// Help and version go to stdout with 0; a usage error is one line on stderr with 2.
fn usage(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    say(&format!("error: {} (see --help)", message::clap_error(&e)));
    ExitCode::from(2)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

/// `BARRAGE_TEST_PANIC=main|worker`: a panic on purpose, for the tests of the panic hook
/// only (undocumented). `worker` panics in a task of a tokio runtime on its own thread and
/// swallows the task's error, as the engine's threads do with their request tasks.
fn test_panic() {
    match std::env::var("BARRAGE_TEST_PANIC").as_deref() {
        Ok("main") => panic!("BARRAGE_TEST_PANIC=main"),
        Ok("worker") => {
            let worker = std::thread::spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, async {
                    let _ = tokio::task::spawn_local(async { panic!("BARRAGE_TEST_PANIC=worker") }).await;
                });
            });
            let _ = worker.join();
        }
        _ => {}
    }
}
