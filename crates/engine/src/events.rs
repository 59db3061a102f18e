//! Commands on the timeline (`--at 10s 'barrage testbed stop origin-2'`): each started at its
//! offset from the run's start with `sh -c`, its start and end handed to the collector as
//! [`EventRecord`]s for the results file.
//!
//! Commands run side by side, so a slow one never delays the next. One still running when
//! the run ends gets [`GRACE`] to finish and is then killed, so a run always ends; when a
//! signal stopped the run, it is killed at once (`docker stop` and systemd send one SIGTERM,
//! then SIGKILL: the process has to end now).
//!
//! `barrage` in a command runs the barrage that schedules it (a shell function), not
//! whichever PATH finds: `--at 5s 'barrage testbed stop origin-2'` works from a build tree.
//! `command barrage` still asks PATH.

use barrage_metrics::{EventKind, EventRecord};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a command may outlive the run before it is killed.
pub const GRACE: Duration = Duration::from_secs(5);
/// How often a running command is checked for its end.
const POLL: Duration = Duration::from_millis(10);
/// How long an ended command's output may take to be read to its end.
const OUTPUT_WAIT: Duration = Duration::from_millis(500);
/// The most characters of a line of output an event keeps.
const LINE_CHARS: usize = 200;

/// A command to run at an offset of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduledCommand {
    /// When, from the run's start.
    pub offset: Duration,
    /// A shell command line (`sh -c`).
    pub command: String,
    /// The barrage binary `barrage` in the command runs (the one running); `None`: PATH's.
    pub barrage: Option<PathBuf>,
    /// The testbed the run aims at: `barrage testbed stop NAME` in the command acts on it
    /// (set as `BARRAGE_TESTBED_DIR`); `None`: the environment's, or the default one.
    pub testbed: Option<PathBuf>,
}

/// Runs the scheduled commands in the background.
pub(crate) struct EventRunner {
    thread: JoinHandle<()>,
    /// The grace the commands still running get, sent once the run is over.
    finish: Sender<Duration>,
    records: Receiver<EventRecord>,
}

impl EventRunner {
    /// Starts the schedule, with offsets counted from `start`.
    pub(crate) fn start(commands: Vec<ScheduledCommand>, start: Instant) -> std::io::Result<Self> {
        let (finish, finished) = mpsc::channel();
        let (tx, records) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("barrage-events".into())
            .spawn(move || schedule(commands, start, finished, tx))?;
        Ok(EventRunner { thread, finish, records })
    }

    /// The records produced since the last call.
    pub(crate) fn poll(&self) -> Vec<EventRecord> {
        self.records.try_iter().collect()
    }

    /// The run is over: commands not yet due are not run, running ones get [`GRACE`], or
    /// none when the run was `interrupted`. Returns the records not yet polled.
    pub(crate) fn finish(self, interrupted: bool) -> Vec<EventRecord> {
        let _ = self.finish.send(if interrupted { Duration::ZERO } else { GRACE });
        let _ = self.thread.join();
        self.records.try_iter().collect()
    }
}

/// Starts each command when due; then waits for all to end.
fn schedule(commands: Vec<ScheduledCommand>, start: Instant, finished: Receiver<Duration>, tx: Sender<EventRecord>) {
    let mut order: Vec<(u32, ScheduledCommand)> = (0..).zip(commands).collect();
    order.sort_by_key(|(_, c)| c.offset);
    // When the commands still running are killed: set once the run is over.
    let kill_at = Arc::new(OnceLock::new());
    let over = |grace: Option<Duration>| {
        let _ = kill_at.set(Instant::now() + grace.unwrap_or(GRACE));
    };
    let mut waiters = Vec::new();
    for (index, c) in order {
        let due = crate::timing::instant_at(start, c.offset);
        match finished.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Err(RecvTimeoutError::Timeout) => {}
            // The run ended before this one was due.
            grace => {
                over(grace.ok());
                break;
            }
        }
        let (tx, kill_at) = (tx.clone(), kill_at.clone());
        waiters.push(std::thread::spawn(move || run_one(index, c, start, &tx, &kill_at)));
    }
    if kill_at.get().is_none() {
        over(finished.recv().ok());
    }
    for w in waiters {
        let _ = w.join();
    }
}

/// Runs one command to its end (or until [`GRACE`] after the run) and records both ends.
fn run_one(index: u32, c: ScheduledCommand, start: Instant, tx: &Sender<EventRecord>, kill_at: &OnceLock<Instant>) {
    let command = c.command.clone();
    let at =
        |kind| EventRecord { index, offset_ms: start.elapsed().as_millis() as u64, command: command.clone(), kind };
    // Standard output and error apart: a failed command is shown with the first line of
    // its error, which says why (`sh: 1: barrage: not found`), whatever it printed after.
    // A process group of its own: what the command starts goes with it when it is killed.
    let mut sh = Command::new("sh");
    if let Some(dir) = &c.testbed {
        sh.env("BARRAGE_TESTBED_DIR", dir);
    }
    let spawned = sh
        .arg("-c")
        .arg(script(&c))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.send(at(EventKind::Started));
            let problem = Some(format!("cannot start sh: {e}"));
            let _ = tx.send(at(EventKind::Ended { exit: None, problem, output: String::new() }));
            return;
        }
    };
    let _ = tx.send(at(EventKind::Started));
    let (stdout, stderr) = (collect(child.stdout.take()), collect(child.stderr.take()));
    let (exit, problem) = wait(&mut child, kill_at);
    // The readers may not have drained the pipes yet when the exit is seen: give them until
    // the end of the output, but no longer than OUTPUT_WAIT if a background process holds it.
    let deadline = Instant::now() + OUTPUT_WAIT;
    let (stdout, stderr) = (stdout.read_by(deadline), stderr.read_by(deadline));
    // The last line printed, on standard output, or on standard error if nothing was.
    let output = last_line(&stdout).or_else(|| last_line(&stderr)).unwrap_or_default();
    let problem = match exit {
        Some(code) if code != 0 => first_line(&stderr),
        _ => problem,
    };
    let _ = tx.send(at(EventKind::Ended { exit, problem, output }));
}

/// The shell script of a command: `barrage` defined as the running binary first, on the
/// same line, so the shell's messages still count the command's lines from 1.
fn script(c: &ScheduledCommand) -> String {
    match &c.barrage {
        Some(exe) => {
            let quoted = exe.to_string_lossy().replace('\'', r"'\''");
            format!("barrage() {{ '{quoted}' \"$@\"; }}; {}", c.command)
        }
        None => c.command.clone(),
    }
}

/// A pipe read to its end on a thread of its own: a command that leaves a background
/// process holding the pipe must not keep its event open.
struct Output {
    bytes: Arc<Mutex<Vec<u8>>>,
    eof: Receiver<()>,
}

impl Output {
    /// What was read by `deadline` (or the end of the output, if sooner).
    fn read_by(self, deadline: Instant) -> Vec<u8> {
        let _ = self.eof.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        self.bytes.lock().map(|o| o.clone()).unwrap_or_default()
    }
}

/// Reads `pipe` in the background; the receiver hears (or sees hung up) once it ended.
fn collect<P: Read + Send + 'static>(pipe: Option<P>) -> Output {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let (done, eof) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        let bytes = bytes.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                if let Ok(mut o) = bytes.lock() {
                    o.extend_from_slice(&buf[..n]);
                }
            }
            let _ = done.send(());
        });
    }
    Output { bytes, eof }
}

/// Waits for the end; kills the command at `kill_at`, once the run is over.
fn wait(child: &mut Child, kill_at: &OnceLock<Instant>) -> (Option<i32>, Option<String>) {
    use std::os::unix::process::ExitStatusExt;
    let mut killed = false;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let problem = match (killed, status.signal()) {
                    (true, Some(_)) => Some("still running after the run: killed".to_string()),
                    (false, Some(sig)) => Some(format!("killed by signal {sig}")),
                    _ => None,
                };
                return (status.code(), problem);
            }
            Ok(None) => {}
            Err(e) => return (None, Some(format!("lost track of the command: {e}"))),
        }
        if kill_at.get().is_some_and(|at| Instant::now() >= *at) {
            killed = true;
            // SAFETY: kill only sends a signal, to the command's own process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        }
        std::thread::sleep(POLL);
    }
}

/// The last non-empty line, at most [`LINE_CHARS`] characters.
fn last_line(output: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(output);
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    Some(line.trim().chars().take(LINE_CHARS).collect())
}

/// The first non-empty line, at most [`LINE_CHARS`] characters.
fn first_line(output: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(output);
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    Some(line.trim().chars().take(LINE_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, command: &str) -> ScheduledCommand {
        ScheduledCommand { offset: Duration::from_millis(ms), command: command.into(), barrage: None, testbed: None }
    }

    /// The records of `commands` once every one has ended (bounded).
    fn all_ended(commands: Vec<ScheduledCommand>) -> Vec<EventRecord> {
        let (start, n) = (Instant::now(), commands.len());
        let runner = EventRunner::start(commands, start).unwrap();
        let mut records = Vec::new();
        while records.iter().filter(|r: &&EventRecord| matches!(r.kind, EventKind::Ended { .. })).count() < n {
            assert!(start.elapsed() < Duration::from_secs(10), "{records:?}");
            records.extend(runner.poll());
            std::thread::yield_now();
        }
        records.extend(runner.finish(false));
        records
    }

    /// A failed command's problem is the first line of its standard error: what says why.
    #[test]
    fn a_failed_command_keeps_the_first_line_of_its_error() {
        let records = all_ended(vec![at(0, "echo out; echo first >&2; echo second >&2; exit 2")]);
        let EventKind::Ended { exit, problem, output } = &ended(&records, 0).kind else { unreachable!() };
        assert_eq!((*exit, problem.as_deref(), output.as_str()), (Some(2), Some("first"), "out"));
    }

    /// `barrage` in a command is the binary given, not PATH's (here `echo` stands for it).
    #[test]
    fn barrage_in_a_command_runs_the_binary_given() {
        let mut c = at(0, "barrage it\\'s me");
        c.barrage = Some("/bin/echo".into());
        let records = all_ended(vec![c]);
        let EventKind::Ended { exit, output, .. } = &ended(&records, 0).kind else { unreachable!() };
        assert_eq!((*exit, output.as_str()), (Some(0), "it's me"));
    }

    /// A command runs with the run's testbed as `BARRAGE_TESTBED_DIR`, which `barrage
    /// testbed` honours: an experiment's case acts on its own testbed.
    #[test]
    fn a_command_acts_on_the_runs_testbed() {
        let mut c = at(0, "echo \"$BARRAGE_TESTBED_DIR\"");
        c.testbed = Some("/tmp/the case's testbed".into());
        let records = all_ended(vec![c]);
        let EventKind::Ended { exit, output, .. } = &ended(&records, 0).kind else { unreachable!() };
        assert_eq!((*exit, output.as_str()), (Some(0), "/tmp/the case's testbed"));
    }

    fn ended(records: &[EventRecord], index: u32) -> &EventRecord {
        records.iter().find(|r| r.index == index && matches!(r.kind, EventKind::Ended { .. })).expect("an end")
    }

    #[test]
    fn commands_start_on_time_and_report_how_they_ended() {
        let start = Instant::now();
        let commands = vec![
            at(200, "echo one; echo two; exit 3"),
            at(50, "echo fail >&2; kill -9 $$"),
            at(3_600_000, "echo never"),
        ];
        let runner = EventRunner::start(commands, start).unwrap();
        let mut records = Vec::new();
        // Both due commands end on their own; wait for their two ends (bounded).
        while records.iter().filter(|r: &&EventRecord| matches!(r.kind, EventKind::Ended { .. })).count() < 2 {
            assert!(start.elapsed() < Duration::from_secs(10), "{records:?}");
            records.extend(runner.poll());
            std::thread::yield_now();
        }
        records.extend(runner.finish(false));
        let started: Vec<(u32, u64)> =
            records.iter().filter(|r| r.kind == EventKind::Started).map(|r| (r.index, r.offset_ms)).collect();
        assert_eq!(started.len(), 2, "the command due in an hour never ran: {records:?}");
        for (index, offset_ms) in started {
            let due = if index == 0 { 200 } else { 50 };
            assert!((due..due + 150).contains(&offset_ms), "command {index} started at {offset_ms} ms");
        }
        let EventKind::Ended { exit, problem, output } = &ended(&records, 0).kind else { unreachable!() };
        assert_eq!((*exit, problem.as_deref(), output.as_str()), (Some(3), None, "two"));
        let EventKind::Ended { exit, problem, output } = &ended(&records, 1).kind else { unreachable!() };
        assert_eq!((*exit, problem.as_deref(), output.as_str()), (None, Some("killed by signal 9"), "fail"));
    }

    /// How long `finish` took for a command still running (`sleep 60`), and its problem.
    fn outliving(interrupted: bool) -> (Duration, Option<String>) {
        let runner = EventRunner::start(vec![at(0, "sleep 60; true")], Instant::now()).unwrap();
        while !runner.records.try_iter().any(|r| r.kind == EventKind::Started) {
            std::thread::yield_now();
        }
        let finishing = Instant::now();
        let records = runner.finish(interrupted);
        let EventKind::Ended { problem, .. } = &ended(&records, 0).kind else { unreachable!() };
        (finishing.elapsed(), problem.clone())
    }

    #[test]
    fn a_command_outliving_the_run_is_killed_after_the_grace() {
        let (took, problem) = outliving(false);
        assert!(took >= GRACE && took < GRACE + Duration::from_secs(3), "{took:?}");
        assert_eq!(problem.as_deref(), Some("still running after the run: killed"));
    }

    /// One SIGTERM (docker, systemd) must end the process now: no grace.
    #[test]
    fn a_command_outliving_an_interrupted_run_is_killed_at_once() {
        let (took, problem) = outliving(true);
        assert!(took < Duration::from_secs(1), "{took:?}");
        assert_eq!(problem.as_deref(), Some("still running after the run: killed"));
    }
}
