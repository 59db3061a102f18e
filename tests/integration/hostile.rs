//! The corpus of hostile inputs (tests/corpus/hostile): each `.args` file is a command
//! line that once hung barrage, exhausted its memory, panicked or was accepted when it
//! should not have been. Each runs through the binary under a memory limit and a time
//! limit, and must end with the exit code it names (2 unless it says otherwise), one line
//! on stderr naming the flag or key at fault, and no panic.
//!
//! An `.args` file holds one argument per line; `#` lines are comments, `# names: TEXT`
//! what stderr must contain, `# exit: N` the exit code. In arguments `{dir}` is the corpus
//! directory, `{tmp}` a temporary one, `{url}` a loopback port nothing listens on, and
//! `\r`, `\n`, `\t`, `\\`, `\xHH` are escapes.

use crate::util::{barrage, refused_url};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The address space each input runs in: a run that would allocate without bound fails
/// to, and aborts, instead of taking the machine's memory.
pub const MEMORY_LIMIT: u64 = 2 << 30;

/// The longest any input may take, on a busy machine, in a debug build.
pub const TIME_LIMIT: Duration = Duration::from_secs(20);

/// What a bounded run gave: its output, how long it took and the most memory it held.
pub struct Bounded {
    pub output: Output,
    pub took: Duration,
    /// Its peak resident memory (`ru_maxrss`), KiB.
    pub max_rss_kib: u64,
    /// The CPU time it took, user and system: a measure of its work that a busy machine
    /// does not stretch as it does the wall time.
    pub cpu: Duration,
}

impl Bounded {
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
}

/// Runs `cmd` with at most [`MEMORY_LIMIT`] of address space (and `open_files` open files,
/// if given), killed after [`TIME_LIMIT`]; `None` if it was.
pub fn run_bounded(cmd: Command, open_files: Option<u64>) -> Option<Bounded> {
    run_within(cmd, open_files, TIME_LIMIT)
}

/// [`run_bounded`], killed after `time_limit`.
pub fn run_within(mut cmd: Command, open_files: Option<u64>, time_limit: Duration) -> Option<Bounded> {
    // SAFETY: only async-signal-safe calls (setrlimit) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            set_limit(libc::RLIMIT_AS, MEMORY_LIMIT)?;
            if let Some(n) = open_files {
                set_limit(libc::RLIMIT_NOFILE, n)?;
            }
            Ok(())
        });
    }
    let started = Instant::now();
    // Reaped by `wait4`, for its peak memory, which `Child::wait` does not give.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Read both pipes on threads so a chatty child never blocks on a full pipe.
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let (status, usage) = loop {
        if let Some(done) = wait4(child.id(), libc::WNOHANG) {
            break done;
        }
        if started.elapsed() > time_limit {
            let _ = child.kill();
            let _ = wait4(child.id(), 0);
            return None;
        }
        // Polls the child's exit; synchronises nothing.
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let output = Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() };
    let seconds = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let cpu = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    Some(Bounded { output, took, max_rss_kib: usage.ru_maxrss as u64, cpu })
}

/// Reaps child `pid` (`flags` 0: waiting for it), with its resource usage; `None` while it
/// still runs.
fn wait4(pid: u32, flags: i32) -> Option<(std::process::ExitStatus, libc::rusage)> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 writes it and the status.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pointers to the locals above, alive for the call.
    loop {
        match unsafe { libc::wait4(pid as i32, &mut status, flags, &mut usage) } {
            0 => return None,
            -1 if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            -1 => panic!("wait4: {}", std::io::Error::last_os_error()),
            _ => return Some((std::os::unix::process::ExitStatusExt::from_raw(status), usage)),
        }
    }
}

fn set_limit(resource: libc::__rlimit_resource_t, n: u64) -> std::io::Result<()> {
    let limit = libc::rlimit { rlim_cur: n, rlim_max: n };
    // SAFETY: setrlimit reads the struct it is given.
    match unsafe { libc::setrlimit(resource, &limit) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// The corpus directory.
pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/hostile")
}

/// One input of the corpus.
struct Input {
    name: String,
    args: Vec<String>,
    names: String,
    exit: i32,
}

fn inputs(tmp: &Path, url: &str) -> Vec<Input> {
    let dir = corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "args"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let directive =
                |key: &str| text.lines().find_map(|l| l.strip_prefix(&format!("# {key}: "))).map(str::to_string);
            let args = text
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| {
                    unescape(l)
                        .replace("{dir}", dir.to_str().unwrap())
                        .replace("{tmp}", tmp.to_str().unwrap())
                        .replace("{url}", url)
                })
                .collect();
            let names = directive("names").unwrap_or_else(|| panic!("{name}: no '# names:' line"));
            let exit = directive("exit").map_or(2, |e| e.parse().unwrap());
            Input { name, args, names, exit }
        })
        .collect()
}

/// `\r`, `\n`, `\t`, `\\` and `\xHH` of an `.args` line.
fn unescape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('r') => out.push('\r'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                out.push(u8::from_str_radix(&hex, 16).unwrap() as char);
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Takes down a testbed an input may have brought up (a bench that should have been
/// refused before it did), so a failing input leaves no servers behind.
struct TestbedDown(PathBuf);

impl Drop for TestbedDown {
    fn drop(&mut self) {
        if self.0.join("testbed.json").exists() {
            let _ = barrage().args(["testbed", "down", "--dir"]).arg(&self.0).output();
        }
    }
}

#[test]
fn every_hostile_input_ends_bounded_with_one_line_and_no_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = inputs(tmp.path(), &refused_url());
    assert!(inputs.len() >= 50, "the corpus holds {} inputs", inputs.len());
    let mut failures = Vec::new();
    let mut slowest = (Duration::ZERO, String::new());
    for input in &inputs {
        let _down = TestbedDown(tmp.path().join("testbed"));
        let mut cmd = barrage();
        cmd.args(&input.args).env("NO_COLOR", "1");
        let Some(run) = run_bounded(cmd, None) else {
            failures.push(format!("{}: still running after {TIME_LIMIT:?}", input.name));
            continue;
        };
        let err = run.stderr();
        let code = run.output.status.code();
        let problem = if err.contains("panicked") {
            Some("panicked".to_string())
        } else if code != Some(input.exit) {
            Some(format!(
                "exit {code:?} (signal {:?}), not {}",
                std::os::unix::process::ExitStatusExt::signal(&run.output.status),
                input.exit
            ))
        } else if err.trim_end().lines().count() != 1 {
            Some(format!("{} lines on stderr", err.trim_end().lines().count()))
        } else if !err.contains(&input.names) {
            Some(format!("stderr does not name '{}'", input.names))
        } else if err.chars().any(|c| c.is_control() && c != '\n') {
            Some("a raw control character on stderr".into())
        } else {
            None
        };
        if let Some(problem) = problem {
            failures.push(format!("{}: {problem}: {}", input.name, err.chars().take(500).collect::<String>()));
        }
        if run.took > slowest.0 {
            slowest = (run.took, input.name.clone());
        }
    }
    eprintln!("{} hostile inputs; the slowest, {}, took {:?}", inputs.len(), slowest.1, slowest.0);
    assert!(failures.is_empty(), "{} of {} inputs:\n{}", failures.len(), inputs.len(), failures.join("\n"));
}
