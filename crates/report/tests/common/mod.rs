//! The fixed run both report tests render: a results file written with `ResultsWriter`
//! (frozen start time, host "golden", samples from fixed formulas), then `summarize`d, as
//! `barrage report` would; and the golden-file check (regenerate with `UPDATE_GOLDEN=1`).

#![allow(dead_code)]

use barrage_metrics::file::{IntervalRecord, Mode, ResultsWriter, RunFooter, RunHeader, StepInfo};
use barrage_metrics::summary::summarize;
use barrage_metrics::{
    testing, ErrorKind, EventKind, EventRecord, HostSample, Outcome, ProcSample, Recorder, RunSummary, Sample,
    WatchSample,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const START_MS: u64 = 1_714_564_800_000; // 2024-05-01 12:00:00 UTC
pub const INTERVALS: u64 = 4;

/// The samples of interval `i` (1 s each): two steps, 50/s then 100/s; in the last second the
/// sends fall behind the schedule (lag grows), so corrected and service latency part ways.
pub fn interval(i: u64) -> IntervalRecord {
    let step = (i / 2) as u32;
    let n: u64 = if step == 0 { 50 } else { 100 };
    let mut r = Recorder::new();
    for k in 0..n {
        let intended_us = i * 1_000_000 + k * (1_000_000 / n);
        let lag_us = match i {
            0 | 1 => 50,
            2 => 200,
            _ => k * 150,
        };
        let mut service_us = 800 + (k * 37 % 50) * 100;
        if k % 25 == 24 {
            service_us = 45_000;
        }
        let outcome = if i == 3 && k == 50 {
            Outcome::Error(ErrorKind::RequestTimeout)
        } else if k % 97 == 96 {
            Outcome::Error(ErrorKind::Reset)
        } else if k % 40 == 39 {
            Outcome::Status(503)
        } else if i == 1 && k == 10 {
            Outcome::Status(404)
        } else {
            Outcome::Status(200)
        };
        let failed = matches!(outcome, Outcome::Error(_));
        let new_connection = k < 2 && (i == 0 || i == 2);
        let us = Duration::from_micros;
        let send = 20 + k % 5;
        let phases = [
            None,
            new_connection.then(|| us(300)),
            None,
            Some(us(send)),
            (!failed).then(|| us(service_us - 100 - send)),
            (!failed).then(|| us(100)),
        ];
        r.record_sent();
        if new_connection {
            r.record_connection();
        }
        if let Outcome::Error(kind) = outcome {
            let message = match kind {
                ErrorKind::Reset => "connection reset by peer",
                _ => "no response within 5s",
            };
            r.set_example(kind, message.into());
        }
        let sample = Sample {
            intended: us(intended_us),
            started: us(intended_us + lag_us),
            ended: us(intended_us + lag_us + service_us),
            phases,
            bytes_in: if failed { 0 } else { 512 + (k % 3) * 100 },
            bytes_out: 120,
            late: lag_us > 10_000,
            // A cache in front: failures carry no header, most answers are hits, some misses.
            cache: match (failed, k % 4) {
                (true, _) => barrage_metrics::CacheStatus::Unknown,
                (false, 0) => barrage_metrics::CacheStatus::Miss,
                (false, 1) if i == 0 => barrage_metrics::CacheStatus::Stale,
                _ => barrage_metrics::CacheStatus::Hit,
            },
            ..testing::sample(Duration::ZERO, outcome)
        };
        r.record(&sample);
        // Named requests: a PUT of an object now and then, GETs otherwise.
        let (method, name): (&[u8], &[u8]) = if k % 5 == 0 { (b"PUT", b"put-object") } else { (b"GET", b"get-object") };
        r.methods.record(method, &sample);
        r.names.record(name, &sample);
        // A client that retried: every tenth request needed a second attempt.
        let retried = k % 10 == 0;
        r.record_logical(
            !failed && !retried,
            !failed,
            1 + u32::from(retried),
            sample.corrected() * (1 + u32::from(retried)),
        );
        // Three backends behind a balancer; web-3 stops answering after the second second.
        let backends: &[&[u8]] = if i < 2 { &[b"web-1", b"web-2", b"web-3"] } else { &[b"web-1", b"web-2"] };
        if !failed {
            r.backends.record(backends[(k as usize) % backends.len()], &sample);
        }
    }
    if i == INTERVALS - 1 {
        // Two requests still in flight when the wait limit ended the run.
        r.record_sent();
        r.record_sent();
    }
    IntervalRecord {
        index: i as u32,
        start_unix_ms: START_MS + i * 1000,
        length_ms: 1000,
        step,
        recorder: r,
        watch: Some(watch(i)),
    }
}

/// What the run watched in second `i`: a balancer whose CPU climbs with the load, a backend
/// stopped in the last second, barrage, and the machine.
pub fn watch(i: u64) -> WatchSample {
    let f = i as f32;
    let proc = |name: &str, cpu: f32, up: bool| ProcSample {
        name: name.into(),
        roots: Vec::new(),
        processes: if up { 2 } else { 0 },
        cpu_user_percent: if up { cpu * 0.75 } else { 0.0 },
        cpu_system_percent: if up { cpu * 0.25 } else { 0.0 },
        rss_kib: if up { 10_240 + i * 512 } else { 0 },
        threads: if up { 3 } else { 0 },
        fds: if up { 20 + i as u32 } else { 0 },
        context_switches: if up { 1000 * (i + 1) } else { 0 },
    };
    WatchSample {
        host: HostSample {
            cpus: 2,
            cpu_percent: 40.0 + 10.0 * f,
            mem_used_kib: 4_000_000 + i * 1000,
            mem_total_kib: 16_000_000,
            net_rx_bytes: 1_000_000 * (i + 1),
            net_tx_bytes: 500_000 * (i + 1),
        },
        generator: proc("barrage", 20.0 + 5.0 * f, true),
        processes: vec![proc("haproxy-lb", 30.0 + 20.0 * f, true), proc("web-3", 10.0, i < 3)],
    }
}

/// `--at 2s 'testbed stop web-3'`: started at 2.0 s, ended at 2.1 s.
pub fn events() -> [EventRecord; 2] {
    let command = "barrage testbed stop web-3".to_string();
    [
        EventRecord { index: 0, offset_ms: 2000, command: command.clone(), kind: EventKind::Started },
        EventRecord {
            index: 0,
            offset_ms: 2100,
            command,
            kind: EventKind::Ended { exit: Some(0), problem: None, output: "stopped web-3".into() },
        },
    ]
}

pub fn write_results(path: &Path) {
    let header = RunHeader {
        barrage_version: "golden".into(),
        started_unix_ms: START_MS,
        host: "golden".into(),
        boot_id: "golden-boot".into(),
        mode: Mode::Open,
        urls: vec!["http://golden.test/api".into(), "http://golden.test/static/logo.png".into()],
        // Keys in sorted order, so the JSON is the same whether serde_json preserves order or not.
        settings_json: r#"{"duration":"4s","max_in_flight":64,"rate":"50/s,100/s","step":"2s"}"#.into(),
        steps: vec![StepInfo { label: "50/s".into(), start_ms: 0 }, StepInfo { label: "100/s".into(), start_ms: 2000 }],
        threads: 2,
        insecure: false,
        groups: Vec::new(),
        launch: Default::default(),
    };
    let mut w = ResultsWriter::create(path, &header).unwrap();
    for i in 0..INTERVALS {
        w.write_interval(&interval(i)).unwrap();
        if i == 2 {
            events().iter().for_each(|e| w.write_event(e).unwrap());
        }
    }
    w.finish(&RunFooter {
        ended_unix_ms: START_MS + 4_100,
        attack_us: 4_000_000,
        wait_us: 100_000,
        // What the per-second samples of barrage add up to (20, 25, 30, 35% of a core).
        cpu_user_us: 825_000,
        cpu_system_us: 275_000,
        interrupted: false,
        bound_reached: true,
        log_chunks_dropped: 0,
        peak_rss_kib: 18_432,
        sent_prefix: 0,
        due: None,
        trace_sampled: 0,
    })
    .unwrap();
}

/// The fixed run: its results file (in a temp dir kept alive by the first value) and summary,
/// with the temp path replaced so renderings do not depend on it.
pub fn fixture() -> (tempfile::TempDir, PathBuf, RunSummary) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("golden.brg");
    write_results(&path);
    let mut s = summarize(std::slice::from_ref(&path)).unwrap();
    assert_eq!(s.files, vec![path.display().to_string()]);
    s.files = vec!["golden.brg".into()];
    (dir, path, s)
}

/// Compares `actual` with `tests/golden/<name>`, or rewrites it when `UPDATE_GOLDEN=1`.
pub fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1 to create it", path.display()));
    if expected != actual {
        let line = expected.lines().zip(actual.lines()).position(|(a, b)| a != b);
        panic!(
            "{} differs from the rendering (first differing line: {line:?}); if the change is intended, \
             run with UPDATE_GOLDEN=1\n--- actual ---\n{actual}",
            path.display()
        );
    }
}

/// The words of the line of `text` that starts (after indentation) with `first`.
pub fn row<'a>(text: &'a str, first: &str) -> Vec<&'a str> {
    let line =
        text.lines().find(|l| l.trim_start().starts_with(first)).unwrap_or_else(|| panic!("no {first} in\n{text}"));
    line.split_whitespace().collect()
}

/// Microseconds as the reports print them.
pub fn us(v: u64) -> String {
    barrage_metrics::units::fmt_us(v as f64)
}

/// Writes the results file `path` of `header` and `intervals` (one a second, from the header's
/// start), ending `wait_us` after the last.
pub fn write_run(
    path: &Path,
    header: &RunHeader,
    intervals: impl IntoIterator<Item = IntervalRecord>,
    wait_us: u64,
) -> PathBuf {
    let mut w = ResultsWriter::create(path, header).unwrap();
    let mut seconds = 0;
    for interval in intervals {
        w.write_interval(&interval).unwrap();
        seconds += 1;
    }
    w.finish(&RunFooter {
        ended_unix_ms: header.started_unix_ms + seconds * 1000 + wait_us / 1000,
        attack_us: seconds * 1_000_000,
        wait_us,
        ..Default::default()
    })
    .unwrap();
    path.to_path_buf()
}

/// The summary of one results file per run, each written by `write(dir, file name, run)`,
/// merged; and the directory that holds them.
pub fn summary_of<T: Copy>(runs: &[T], write: impl Fn(&Path, &str, T) -> PathBuf) -> (tempfile::TempDir, RunSummary) {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> =
        runs.iter().enumerate().map(|(n, r)| write(dir.path(), &format!("run{n}.brg"), *r)).collect();
    let s = summarize(&paths).unwrap();
    (dir, s)
}

/// The sheet named `name` of a run's report.
pub fn sheet(s: &RunSummary, name: &str) -> barrage_report::Sheet {
    use barrage_report::Report;
    Report::Run(s).sheets().into_iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no sheet {name}"))
}

/// `sheet`'s row whose first cell is `first`, by column title.
pub fn cells(sheet: &barrage_report::Sheet, first: &str) -> std::collections::BTreeMap<String, barrage_report::Cell> {
    use barrage_report::Cell;
    let row = sheet.rows.iter().find(|r| r[0] == Cell::from(first)).unwrap_or_else(|| panic!("no row {first}"));
    sheet.header.iter().cloned().zip(row.iter().cloned()).collect()
}
