//! Target lists at the limit (issue 33 item 2): a million targets, as a URL list or a
//! target file, run and report in time and memory linear in the list, their results file
//! reads back, and a signal while they load ends barrage at once.

use crate::hostile::{run_within, Bounded};
use crate::util::{barrage, origin};
use barrage_server::ServeConfig;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The most targets a list may hold (`barrage_plan::limits::MAX_TARGETS`).
const MILLION: usize = 1_000_000;

/// Writes `n` URLs of `origin` to `dir/name`, one a line, each its own path.
fn url_list(dir: &Path, name: &str, origin: &str, n: usize) -> PathBuf {
    let path = dir.join(name);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..n {
        writeln!(out, "{origin}/obj/{i}").unwrap();
    }
    out.flush().unwrap();
    path
}

/// Writes a target file of `n` targets to `dir/name`: named, every other one a PUT with a
/// header and a body file, as an upload list is.
fn target_file(dir: &Path, name: &str, origin: &str, n: usize) -> PathBuf {
    std::fs::write(dir.join("body.bin"), [b'x'; 100]).unwrap();
    let path = dir.join(name);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..n {
        match i % 2 {
            0 => writeln!(out, "# name: get\nGET {origin}/obj/{i}\n").unwrap(),
            _ => {
                writeln!(out, "# name: put\nPUT {origin}/obj/{i}\nContent-Type: application/octet-stream\n@body.bin\n")
                    .unwrap()
            }
        }
    }
    out.flush().unwrap();
    path
}

/// `barrage ARGS` bounded in memory and killed after `limit`; panics if it was.
fn bounded(args: &[&str], limit: Duration) -> Bounded {
    let mut cmd = barrage();
    cmd.args(args).env("NO_COLOR", "1");
    run_within(cmd, None, limit).unwrap_or_else(|| panic!("{args:?} still ran after {limit:?}"))
}

/// `run -n 1 -c 1` of the targets `flag FILE` into `dir/name.brg`, then `report --format
/// json` of that file: both runs, and the report's JSON.
fn run_and_report(dir: &Path, name: &str, flag: &str, file: &Path, limit: Duration) -> (Bounded, Bounded, Value) {
    let brg = dir.join(format!("{name}.brg"));
    let (file, brg) = (file.to_str().unwrap(), brg.to_str().unwrap());
    let run = bounded(&["run", "-n", "1", "-c", "1", flag, file, "-o", brg, "--format", "json"], limit);
    assert_eq!(run.output.status.code(), Some(0), "{name}: run: {}", run.stderr());
    let report = bounded(&["report", "--format", "json", brg], limit);
    assert_eq!(report.output.status.code(), Some(0), "{name}: report: {}", report.stderr());
    let json = serde_json::from_slice(&report.output.stdout).unwrap();
    eprintln!(
        "{name}: run {:?} ({:?} CPU, {} MiB), report {:?} ({:?} CPU, {} MiB)",
        run.took,
        run.cpu,
        run.max_rss_kib >> 10,
        report.took,
        report.cpu,
        report.max_rss_kib >> 10
    );
    (run, report, json)
}

/// 50,000 and 200,000 URLs: four times the list costs about four times the work, not
/// sixteen (the merged URLs were made distinct by comparing each with all before it, the
/// run and report of 400,000 took minutes). CPU time, not wall time, so that a busy machine
/// does not fail it; the ratio allowed is twice the linear one, half the quadratic one.
#[test]
fn run_and_report_take_time_linear_in_the_url_list() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let limit = Duration::from_secs(120);
    let mut cpu = Vec::new();
    for n in [50_000, 200_000] {
        let urls = url_list(dir.path(), &format!("urls-{n}.txt"), &o.url(), n);
        let (run, report, json) = run_and_report(dir.path(), &format!("urls-{n}"), "--urls", &urls, limit);
        assert_eq!(json["urls"].as_array().map(Vec::len), Some(n), "every URL once");
        cpu.push(run.cpu + report.cpu);
    }
    assert!(cpu[1] < cpu[0] * 8, "50,000 URLs took {:?} of CPU, 200,000 took {:?}", cpu[0], cpu[1]);
}

/// A million targets that `write` writes, given as `flag FILE`: the run and its report,
/// each within 1 GiB, the report listing every target. Returns the report's JSON and the
/// origin's URL.
fn a_million(flag: &str, write: fn(&Path, &str, &str, usize) -> PathBuf) -> (Value, String) {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "targets.txt", &o.url(), MILLION);
    let (run, report, json) = run_and_report(dir.path(), "million", flag, &file, Duration::from_secs(300));
    assert_eq!(json["urls"].as_array().map(Vec::len), Some(MILLION), "every target once");
    for (what, b) in [("run", &run), ("report", &report)] {
        assert!(b.max_rss_kib < 1 << 20, "{what} of a million {flag} took {} MiB", b.max_rss_kib >> 10);
    }
    (json, o.url())
}

/// A million URLs, the limit of a list: the run writes a results file that `report`
/// reads, every URL in it, each in bounded memory. (Its header held every URL and the
/// plan's view of every target: over the 64 MiB a record may take, so nothing could read
/// the file, and the run took 3.6 GB.)
#[test]
fn a_million_urls_run_and_report_in_bounded_memory() {
    let (json, origin) = a_million("--urls", url_list);
    assert_eq!(json["urls"][MILLION - 1], format!("{origin}/obj/{}", MILLION - 1));
    assert_eq!(json["requests"]["total"], 1);
}

/// A target file of a million targets, half of them PUTs with a header and a body file:
/// the run and its report, in bounded memory (it aborted on a 64-byte allocation under a
/// 4 GiB address space).
#[test]
fn a_million_target_file_entries_run_and_report_in_bounded_memory() {
    let (json, origin) = a_million("--targets", target_file);
    assert_eq!(json["urls"][1], format!("PUT {origin}/obj/1"));
}

/// The bytes `pid` has read so far (`rchar` of /proc/PID/io).
fn read_bytes(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    let line = io.lines().find_map(|l| l.strip_prefix("rchar:")).unwrap_or("0");
    line.trim().parse().unwrap()
}

/// SIGTERM while a million URLs load (the file read, its lines being parsed): barrage ends
/// within a second with 143, as an interrupted run does, and leaves no temporary file. It
/// went on loading and planning for as long as that took.
#[test]
fn sigterm_while_a_million_urls_load_ends_barrage_within_a_second() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let urls = url_list(dir.path(), "urls.txt", &o.url(), MILLION);
    let size = std::fs::metadata(&urls).unwrap().len();
    let mut child = barrage()
        .args(["run", "-n", "1", "-c", "1", "--urls", urls.to_str().unwrap()])
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Polls the kernel's count of what it read; synchronises nothing.
    while read_bytes(child.id()) < size {
        assert!(Instant::now() < deadline, "barrage never read the list");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("barrage still ran a minute after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = signalled.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(took < Duration::from_secs(1), "barrage ended {took:?} after SIGTERM: {err}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "a temporary file was left");
}
