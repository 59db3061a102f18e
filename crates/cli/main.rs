//! The `barrage` binary: parses the command line, installs signal handling once, dispatches
//! to a subcommand, and decides the exit code in one place: 0 ok, 1 an objective or check
//! failed, 2 bad usage, config or I/O, 3 a run the result depends on is built on failure
//! (under half of its requests succeeded), 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP
//! (partial results kept).

mod args;
mod cmd;
mod message;
mod signals;

use args::{Cli, Command, TestbedCommand};
use clap::Parser;
use std::process::ExitCode;

/// What a subcommand reports back.
pub enum Outcome {
    /// Everything went as asked.
    Ok,
    /// A threshold or comparison failed.
    Failed,
    /// A run, level, probe or case the result depends on is built on failure
    /// (`barrage_report::study::failure_of`): its figures are not a result, whatever the
    /// objectives say. Why, in one line.
    NotAResult(String),
}

/// Exit code of [`Outcome::NotAResult`]: apart from 1, so that a script or CI job can tell
/// "the service missed an objective" from "nothing worked: the test itself is broken"
/// (an untrusted certificate, a refused port).
const NOT_A_RESULT: u8 = 3;

fn main() -> ExitCode {
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
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Ok(Outcome::NotAResult(why)) => {
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

/// Prints barrage's last word on stderr, on one line, secrets redacted by the built-in rules whatever
/// `--no-redact` says: an error may quote a URL or a header as given, and stderr ends up
/// in CI logs.
fn say(line: &str) {
    eprintln!("barrage: {}", message::one_line(&barrage_metrics::secrets::Redaction::default().text(line)));
}

/// Commands that send load get the signal handler; `serve` and the testbed's own commands
/// handle signals their way (each ends cleanly on SIGINT, SIGTERM and SIGHUP).
fn dispatch(command: Command) -> anyhow::Result<Outcome> {
    let stop = || signals::install();
    match command {
        Command::Run(a) => cmd::run::run(*a, stop()?),
        Command::Sweep(a) => cmd::sweep::sweep(*a, stop()?),
        Command::Capacity(a) => cmd::capacity::capacity(*a, stop()?),
        Command::Experiment(a) => cmd::experiment::experiment(a, stop()?),
        Command::Demo(a) => cmd::demo::demo(a, stop()?),
        Command::Testbed(a) => match a.command {
            TestbedCommand::Bench(b) => cmd::bench::bench(b, stop()?),
            other => cmd::testbed::testbed(other),
        },
        Command::Report(a) => cmd::report::report(a),
        Command::Serve(a) => cmd::serve::serve(a),
        Command::Compare(a) => cmd::compare::compare(a),
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
    // clap spreads some errors over lines ("...not provided:\n  <URL>..."); keep what comes
    // before the usage and tips, on one line.
    let text = e.render().to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect();
    say(&format!("{} (see --help)", lines.join(" ")));
    ExitCode::from(2)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
