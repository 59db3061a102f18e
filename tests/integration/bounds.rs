//! Bounded by design, and validated up front (issue 13 items 4 and 6): what is over a limit
//! is refused at once with one line naming the flag, a run ends within its duration and
//! timeout, a crafted results file reads in bounded memory, outputs that cannot be written
//! fail before the run, and binding beyond loopback is said. The corpus of hostile inputs
//! is in `hostile`.

use crate::hostile::{corpus, run_bounded, Bounded};
use crate::util::{barrage, origin};
use barrage_server::ServeConfig;
use std::io::BufRead;
use std::process::Stdio;
use std::time::Duration;

/// Runs the binary with `args`, bounded in memory and time (and open files).
fn bounded(args: &[&str], open_files: Option<u64>) -> Bounded {
    let mut cmd = barrage();
    cmd.args(args).env("NO_COLOR", "1");
    run_bounded(cmd, open_files).unwrap_or_else(|| panic!("{args:?} still ran after the time limit"))
}

/// Exit 2 within `within`, one line on stderr naming `flag`, no panic.
fn assert_refused(run: &Bounded, args: &[&str], flag: &str, within: Duration) {
    let err = run.stderr();
    assert_eq!(run.output.status.code(), Some(2), "{args:?} ({:?}): {err}", run.took);
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(flag) && !err.contains("panicked"), "{args:?} does not name {flag}: {err}");
    assert!(run.took < within, "{args:?} took {:?}", run.took);
}

#[test]
fn rates_past_the_limit_are_refused_and_the_highest_rate_ends_within_duration_and_timeout() {
    let o = origin(ServeConfig::default());
    let url = o.url();
    // The hangs: --rate 1e10 never ended, 1e9 took 11 s. Both are over 10^7/s.
    for rate in ["1e10", "1e9", "10000001"] {
        let args = ["run", "--rate", rate, "-d", "1s", url.as_str()];
        assert_refused(&bounded(&args, None), &args, "--rate", Duration::from_secs(2));
    }
    // The promise of docs/reference.md (Limits): no run lasts longer than its duration, its timeout and a
    // second, however hostile the valid inputs (measured from outside, start-up included).
    let (d, timeout) = (1.0, 1.0);
    let error_url = format!("{url}/status/500");
    let table: [&[&str]; 4] = [
        &["run", "--rate", "1e7", "-d", "1s", "--timeout", "1s", &url],
        &["run", "--rate", "1e7", "--max-in-flight", "4000", "-d", "1s", "--timeout", "1s", &url],
        &["run", "-c", "4", "-d", "1s", "--timeout", "1s", "--think-time", "8760h", &url],
        &["run", "-c", "4", "-d", "1s", "--timeout", "1s", "--retries", "1000", "--backoff", "1s..8760h", &error_url],
    ];
    for args in table {
        let run = bounded(args, None);
        assert!(matches!(run.output.status.code(), Some(0 | 3)), "{args:?}: {:?} {}", run.output.status, run.stderr());
        assert!(run.took.as_secs_f64() < d + timeout + 1.0, "{args:?} took {:?}", run.took);
    }
}

#[test]
fn workers_past_the_open_file_limit_are_refused_before_anything_is_sent() {
    let o = origin(ServeConfig::default());
    let url = o.url();
    // 300 open files (soft and hard): 500 workers cannot all have their connection.
    let args = ["run", "-c", "500", "-d", "2s", url.as_str()];
    let run = bounded(&args, Some(300));
    assert_refused(&run, &args, "-c 500", Duration::from_secs(2));
    assert!(run.stderr().contains("limit of 300 (ulimit -n): at most -c 172 fits"), "{}", run.stderr());
    let args = ["run", "--rate", "100", "--connections", "500", "-d", "2s", url.as_str()];
    assert_refused(&bounded(&args, Some(300)), &args, "--connections 500", Duration::from_secs(2));
    assert_eq!(o.requests(), 0, "nothing was sent");
    // 100 workers fit, and do send.
    let run = bounded(&["run", "-c", "100", "-n", "200", url.as_str()], Some(300));
    assert_eq!(run.output.status.code(), Some(0), "{}", run.stderr());
    assert_eq!(o.requests(), 200, "the origin's own count");
}

#[test]
fn outputs_that_cannot_be_written_fail_before_the_run() {
    let o = origin(ServeConfig::default());
    let url = o.url();
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("e.toml");
    std::fs::write(&exp, std::fs::read_to_string(corpus().join("experiment-repeats-ok.toml")).unwrap()).unwrap();
    // Under a directory the test made and left empty: missing whatever the machine has.
    let missing = |name: &str| dir.path().join("missing").join(name).to_string_lossy().into_owned();
    let (html, xlsx, junit) = (missing("r.html"), missing("r.xlsx"), missing("j.xml"));
    let table: [(&[&str], &str); 6] = [
        (&["run", "-d", "5s", "--html", &html, &url], "--html"),
        (&["run", "-d", "5s", "--xlsx", &xlsx, &url], "--xlsx"),
        (&["run", "-d", "5s", "--slo", "p99<1s", "--junit", &junit, &url], "--junit"),
        (&["run", "-d", "5s", "--csv-dir", "/dev/null/tables", &url], "--csv-dir"),
        (&["sweep", "-c", "1,2", "--step", "2s", "-o", "/dev/null/levels", &url], "-o"),
        (&["experiment", exp.to_str().unwrap(), "--dry-run", "--junit", &junit], "--junit"),
    ];
    for (args, flag) in table {
        let run = bounded(args, None);
        assert_refused(&run, args, flag, Duration::from_secs(2));
        assert!(run.stderr().contains("cannot be written"), "{args:?}: {}", run.stderr());
    }
    assert_eq!(o.requests(), 0, "no run started");
    // A writable one still is, and nothing is left beside it.
    let html = dir.path().join("r.html");
    let run = bounded(&["run", "-n", "5", "-c", "1", "--html", html.to_str().unwrap(), &url], None);
    assert_eq!(run.output.status.code(), Some(0), "{}", run.stderr());
    let mut left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["e.toml", "r.html"]);
}

#[test]
fn experiment_dry_run_refuses_what_the_run_would() {
    // Each was listed by --dry-run and failed only when run (a bad SLO after every case).
    for (file, key) in [
        ("experiment-warmup-negative.toml", "warmup = \"-1s\""),
        ("experiment-pause-negative.toml", "pause = \"-1s\""),
        ("experiment-bad-slo.toml", "slo = [\"p99<fast\"]"),
        ("experiment-long-duration.toml", "duration = \"10000000000000000000s\""),
        ("experiment-repeats.toml", "repeats = 4294967295"),
        ("experiment-9x10.toml", "1000000000 combinations"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = corpus().join(file);
        let args = ["experiment", path.to_str().unwrap(), "--dry-run", "-o", dir.path().to_str().unwrap()];
        assert_refused(&bounded(&args, None), &args, key, Duration::from_secs(2));
    }
    let ok = corpus().join("experiment-repeats-ok.toml");
    let dir = tempfile::tempdir().unwrap();
    let run = bounded(&["experiment", ok.to_str().unwrap(), "--dry-run", "-o", dir.path().to_str().unwrap()], None);
    assert_eq!(run.output.status.code(), Some(0), "{}", run.stderr());
}

#[test]
fn a_crafted_results_file_reads_in_bounded_memory() {
    // Its first interval's histogram declares 4 GiB of counts in 39 bytes: report and
    // compare allocated them inside hdrhistogram and aborted under a memory limit.
    let file = corpus().join("histogram-4gib.brg");
    let path = file.to_str().unwrap();
    for args in [&["report", "--format", "json", path][..], &["compare", "--format", "json", path, path]] {
        let run = bounded(args, None);
        assert_eq!(run.output.status.code(), Some(3), "{args:?}: {:?} {}", run.output.status, run.stderr());
        assert!(!run.stderr().contains("panicked") && run.took < Duration::from_secs(5), "{args:?}");
    }
    let run = bounded(&["report", "--format", "json", path], None);
    let json: serde_json::Value = serde_json::from_slice(&run.output.stdout).unwrap();
    let warnings = json["warnings"].to_string();
    assert!(warnings.contains("a record does not decode"), "{warnings}");
}

/// A record of the 64 MiB a record may take, holding five million empty server reply
/// classes (11 bytes each): decoded before anything counted them, they took over a GiB.
/// Refused from the list's length, the report costs the record's bytes and what it always
/// does, and says why it stopped there.
#[test]
fn a_crafted_record_of_millions_of_tiny_entries_reads_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replies.brg");
    let n = 5_000_000;
    let len = crafted_replies(&path, n);
    let run = bounded(&["report", "--format", "json", path.to_str().unwrap()], None);
    // What a report costs anyway, a debug build: some 20 MiB.
    let bound = (len as u64 >> 10) + (64 << 10);
    eprintln!("a record of {len} bytes: peak RSS {} KiB (bound {bound} KiB)", run.max_rss_kib);
    let err = run.stderr();
    assert_eq!(run.output.status.code(), Some(0), "{:?} {err}", run.output.status);
    assert!(!err.contains("panicked"), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&run.output.stdout).unwrap();
    let warnings = json["warnings"].to_string();
    assert!(
        warnings.contains("a record does not decode: 5000000 server reply classes, over the limit of 64"),
        "{warnings}"
    );
    assert_eq!(json["requests"]["total"], 3, "the interval before it reads");
    assert!(run.max_rss_kib < bound, "peak RSS {} KiB", run.max_rss_kib);
}

/// Writes a results file whose second interval holds `n` empty server reply classes;
/// returns that record's length. The replies are an interval's last list, followed only by
/// its watch sample (none: one byte), so the list's length is the record's next to last byte.
fn crafted_replies(path: &std::path::Path, n: u64) -> usize {
    use barrage_metrics::file::{ResultsWriter, MAGIC};
    use barrage_metrics::{testing, Outcome, Recorder, Sample};
    let header = testing::header(0);
    let interval = |index: u32| {
        let mut recorder = Recorder::new();
        for ms in [5, 150, 420] {
            let ended = Duration::from_millis(u64::from(index) * 1000 + ms);
            recorder.record(&Sample { bytes_in: 1, bytes_out: 1, ..testing::sample(ended, Outcome::Status(200)) });
        }
        testing::interval(index, u64::from(index) * 1000, recorder)
    };
    let mut w = ResultsWriter::create(path, &header).unwrap();
    w.write_interval(&interval(0)).unwrap();
    w.write_interval(&interval(1)).unwrap();
    drop(w);
    let mut bytes = std::fs::read(path).unwrap();
    // The last record: the second interval.
    let mut at = MAGIC.len() + 2;
    let last = loop {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if at + 8 + len == bytes.len() {
            break at;
        }
        at += 8 + len;
    };
    let mut payload = bytes.split_off(last + 8);
    assert_eq!(payload.split_off(payload.len() - 2), [0, 0], "no replies, no watch sample");
    let mut v = n;
    while v >= 0x80 {
        payload.push(v as u8 | 0x80);
        v >>= 7;
    }
    payload.push(v as u8);
    // An empty class: no name, no requests or failures, an empty histogram, no ticks, five
    // flow counts at 0, no example.
    payload.resize(payload.len() + 11 * n as usize, 0);
    payload.push(0);
    bytes.truncate(last);
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    bytes.extend_from_slice(&payload);
    std::fs::write(path, bytes).unwrap();
    payload.len()
}

#[test]
fn error_messages_are_one_line_with_inputs_escaped_and_cut() {
    let long = format!("http://{}/", "a".repeat(100_000));
    let hostile = "http://a\u{1b}[2J\u{1b}[31m/\r\nbarrage: error: forged";
    for url in [long.as_str(), hostile] {
        let out = barrage().args(["run", "-n", "1", url]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!err.contains(['\u{1b}', '\r']), "a raw control character: {err:?}");
        assert!(err.len() < 1000, "{} bytes", err.len());
        assert!(err.contains("invalid URL"), "{err}");
    }
    let out = barrage().args(["run", "-n", "1", &long]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("'http://{}…'", "a".repeat(193))));
    let out = barrage().args(["run", "-n", "1", hostile]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("http://a\\u{1b}[2J\\u{1b}[31m/\\r\\nbarrage: error: forged"));
}

#[test]
fn binding_beyond_loopback_warns_with_the_address_bound() {
    // `serve --listen 0.0.0.0:0` bound every interface silently and printed
    // http://127.0.0.1:PORT. (Killed as soon as it has said where it listens.)
    let mut child = barrage()
        .args(["serve", "--listen", "0.0.0.0:0", "--threads", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    // The warning is written before the address: all of it is there.
    let _ = child.kill();
    let mut warning = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut warning).unwrap();
    let _ = child.wait();
    let bound = line.trim().strip_prefix("listening on http://").unwrap_or_else(|| panic!("{line}"));
    assert!(bound.starts_with("0.0.0.0:") && !bound.ends_with(":0"), "{line}");
    assert!(warning.contains(&format!("--listen bound {bound}, every interface")), "{warning}");
    // The run's metrics likewise.
    let o = origin(ServeConfig::default());
    let out = barrage().args(["run", "-n", "5", "-c", "1", "--metrics-addr", "0.0.0.0:0", &o.url()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let at = err.lines().find_map(|l| l.strip_prefix("metrics on http://")).expect("the address line");
    let addr = at.trim_end_matches("/metrics");
    assert!(addr.starts_with("0.0.0.0:"), "{err}");
    assert!(err.contains(&format!("--metrics-addr bound {addr}, every interface")), "{err}");
    // Loopback says nothing.
    let out =
        barrage().args(["run", "-n", "5", "-c", "1", "--metrics-addr", "127.0.0.1:0", &o.url()]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}
