//! Results files merged into one summary: each watched process counted once, the header of
//! the merged run, and the sliver that ends a run folded into the second before it. The
//! files are written here with known figures, so every expectation is exact.

use barrage_metrics::file::{IntervalRecord, Launch, Mode, ResultsWriter, RunFooter, RunHeader, StepInfo};
use barrage_metrics::summary::{summarize, RunSummary, Warning, WarningKind};
use barrage_metrics::testing;
use barrage_metrics::watch::ProcRoot;
use barrage_metrics::{Outcome, ProcSample, Recorder, Sample, WatchSample};
use std::path::{Path, PathBuf};
use std::time::Duration;

const START_MS: u64 = 1_700_000_000_000;
/// Each file a run of its own, as a real run's header tells (the microsecond it was ready
/// to send): files that share it are one run's, refused merged.
fn own_run() -> Launch {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let ready_unix_us = START_MS * 1000 + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Launch { ready_unix_us, ..Launch::default() }
}

/// The watched server, as its machine knows it.
const SERVER: ProcRoot = ProcRoot { pid: 4242, start_ticks: 987_654 };

/// One run's file: what it ran, from where, and the server it watched.
struct Run<'a> {
    host: &'a str,
    boot_id: &'a str,
    url: &'a str,
    step: &'a str,
    /// The roots its samples of "server" name (empty: a file without process identity).
    roots: Vec<ProcRoot>,
    /// Lengths of its intervals, ms.
    lengths: &'a [u32],
}

impl Run<'_> {
    fn new(url: &str) -> Run<'_> {
        Run {
            host: "client-1",
            boot_id: "boot-1",
            url,
            step: "100 req/s",
            roots: vec![SERVER],
            lengths: &[1000, 1000, 1000],
        }
    }
}

fn sample(ended_ms: u64) -> Sample {
    let intended = Duration::from_millis(ended_ms - 1);
    Sample { intended, started: intended, ..testing::sample(Duration::from_millis(ended_ms), Outcome::Status(200)) }
}

/// `n` requests that ended in the interval starting at `start_ms` (from the run's start).
fn recorder(start_ms: u64, n: u64) -> Recorder {
    let mut r = Recorder::new();
    for k in 0..n {
        r.record_sent();
        r.record(&sample(start_ms + 1 + k % 900));
    }
    r
}

/// The server at 30% of a core and 10 MiB; barrage's engine threads at 10%; a sliver's
/// samples read what /proc's 10 ms ticks make of a few ms (200%).
fn watch(roots: &[ProcRoot], sliver: bool) -> WatchSample {
    let cpu = if sliver { 200.0 } else { 30.0 };
    WatchSample {
        generator: ProcSample {
            name: "barrage".into(),
            processes: 1,
            cpu_user_percent: if sliver { 200.0 } else { 10.0 },
            rss_kib: 20_000,
            ..ProcSample::default()
        },
        processes: vec![ProcSample {
            name: "server".into(),
            roots: roots.to_vec(),
            processes: 2,
            cpu_user_percent: cpu,
            rss_kib: 10_240,
            threads: 3,
            fds: 30,
            context_switches: 100,
            ..ProcSample::default()
        }],
        ..WatchSample::default()
    }
}

/// Writes `run` into `dir/name.brg`: 100 requests a second, and in a sliver (an interval
/// shorter than half a second) 5.
fn write(dir: &Path, name: &str, run: &Run) -> PathBuf {
    let path = dir.join(format!("{name}.brg"));
    let header = RunHeader {
        host: run.host.into(),
        boot_id: run.boot_id.into(),
        urls: vec![run.url.into()],
        steps: vec![StepInfo { label: run.step.into(), start_ms: 0 }],
        launch: own_run(),
        ..testing::header(START_MS)
    };
    let mut w = ResultsWriter::create(&path, &header).unwrap();
    let mut start = 0u64;
    for (index, &length_ms) in run.lengths.iter().enumerate() {
        let sliver = length_ms < 500;
        let record = IntervalRecord {
            index: index as u32,
            start_unix_ms: START_MS + start,
            length_ms,
            step: 0,
            recorder: recorder(start, if sliver { 5 } else { 100 }),
            watch: Some(watch(&run.roots, sliver)),
        };
        w.write_interval(&record).unwrap();
        start += u64::from(length_ms);
    }
    let secs: u64 = run.lengths.iter().map(|l| u64::from(*l)).sum();
    w.finish(&RunFooter {
        ended_unix_ms: START_MS + secs,
        attack_us: secs * 1000,
        // The engine threads at 10% of a core over the run.
        cpu_user_us: secs * 100,
        ..RunFooter::default()
    })
    .unwrap();
    path
}

fn server(s: &RunSummary) -> &barrage_metrics::ProcessSummary {
    s.processes.iter().find(|p| p.name == "server").unwrap()
}

/// Four clients watching the same server (same machine, PID and start time): the server
/// counts once in every row and in the summary, barrage (four runs' engine threads) four
/// times, and the header describes the four runs together.
#[test]
fn one_server_watched_by_four_runs_counts_once() {
    let dir = tempfile::tempdir().unwrap();
    let urls = ["http://a/1", "http://a/2", "http://a/1", "http://a/3"];
    let paths: Vec<PathBuf> =
        urls.iter().enumerate().map(|(k, url)| write(dir.path(), &format!("c{k}"), &Run::new(url))).collect();
    let s = summarize(&paths).unwrap();
    assert_eq!(s.intervals.len(), 3);
    for row in &s.intervals {
        assert_eq!(row.rss_kib["server"], 10_240, "{row:?}");
        assert!((row.cpu_percent["server"] - 30.0).abs() < 1e-9, "{row:?}");
        assert!((row.cpu_percent["barrage"] - 40.0).abs() < 1e-9, "four runs' engine threads: {row:?}");
    }
    let p = server(&s);
    assert_eq!((p.samples, p.rss_max_kib, p.threads_max, p.fds_max), (3, 10_240, 3, 30));
    assert!((p.cpu_mean_percent - 30.0).abs() < 1e-9 && (p.context_switches_per_sec - 100.0).abs() < 1e-9, "{p:?}");
    // barrage: the footers' CPU, four runs of one thread at 10% each.
    assert_eq!(s.generator.threads, 4);
    assert!((s.generator.cpu_percent - 40.0).abs() < 1e-9, "{:?}", s.generator);
    let me = s.processes.iter().find(|p| p.name == "barrage").unwrap();
    assert_eq!(me.cpu_mean_percent, s.generator.cpu_percent, "one figure of barrage's CPU");
    // The merged run's header: the four runs' rates added, every URL once, one host.
    assert_eq!(s.steps.len(), 1);
    assert_eq!(s.steps[0].label, "400 req/s");
    let rate = s.rate_per_sec.expect("a rate");
    assert!((rate - 400.0).abs() < 1e-9, "{rate}");
    assert_eq!(s.urls, ["http://a/1", "http://a/2", "http://a/3"]);
    assert_eq!((s.files.len(), s.hosts.as_slice()), (4, ["client-1".to_string()].as_slice()));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

/// A file from another machine, or from the same machine but another boot or another
/// process that had the same PID, names a different process even if it claims the same
/// PID: its samples add up instead of being taken for the same server.
#[test]
fn the_same_pid_elsewhere_is_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths: Vec<PathBuf> = (0..2).map(|k| write(dir.path(), &format!("c{k}"), &Run::new("http://a/"))).collect();
    let others = [
        Run { host: "client-2", ..Run::new("http://a/") },
        Run { boot_id: "boot-2", ..Run::new("http://a/") },
        Run { roots: vec![ProcRoot { start_ticks: 1, ..SERVER }], ..Run::new("http://a/") },
    ];
    for (k, run) in others.iter().enumerate() {
        paths.push(write(dir.path(), &format!("other{k}"), run));
        let s = summarize(&paths).unwrap();
        let want = 10_240 * (k as u64 + 2);
        assert!(s.intervals.iter().all(|r| r.rss_kib["server"] == want), "{:?}", s.intervals[0].rss_kib);
        assert_eq!(server(&s).rss_max_kib, want);
        assert!((server(&s).cpu_mean_percent - 30.0 * (k as f64 + 2.0)).abs() < 1e-6);
    }
    let s = summarize(&paths).unwrap();
    assert_eq!(s.hosts, ["client-1", "client-2"]);
    assert!(s.steps[0].label == "500 req/s", "{}", s.steps[0].label);
}

/// Files without process identity (written before format version 4) cannot prove that they
/// watched the same process: their samples add up, and the report says so.
#[test]
fn samples_without_identity_add_up_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let old = || Run { roots: Vec::new(), ..Run::new("http://a/") };
    let paths = vec![write(dir.path(), "a", &old()), write(dir.path(), "b", &old())];
    let s = summarize(&paths).unwrap();
    assert_eq!(server(&s).rss_max_kib, 2 * 10_240);
    assert!(s.warnings.iter().any(|w| w.kind == WarningKind::ProcessIdentity
        && w.text.starts_with("server was watched by several results files without process identity")));
}

/// A run that ends 3 ms after a whole second: its last interval (5 requests, CPU read as
/// 200%) is folded into the second before, so no row rates 5 requests over 3 ms (1,667/s)
/// and no CPU figure comes from it.
#[test]
fn the_sliver_that_ends_a_run_is_folded_into_the_second_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s", &Run { lengths: &[1000, 1000, 3], ..Run::new("http://a/") });
    let s = summarize(std::slice::from_ref(&path)).unwrap();
    assert_eq!(s.intervals.len(), 2, "{:?}", s.intervals.iter().map(|i| i.length_s).collect::<Vec<_>>());
    let last = &s.intervals[1];
    assert!((last.length_s - 1.003).abs() < 1e-9, "{}", last.length_s);
    assert_eq!((last.sent, last.ok), (105, 105));
    assert_eq!(s.intervals.iter().map(|i| i.ok).sum::<u64>(), s.requests.ok);
    assert!(s.intervals.iter().all(|i| i.throughput_per_sec <= 105.0), "{:?}", s.intervals);
    // The sliver's CPU counts for the 3 ms it lasted.
    let weighted = (30.0 * 1.0 + 200.0 * 0.003) / 1.003;
    assert!((last.cpu_percent["server"] - weighted).abs() < 1e-3, "{:?}", last.cpu_percent);
    assert!(s.generator.cpu_max_percent < 11.0, "{:?}", s.generator);
    let cpu = |k| {
        matches!(k, WarningKind::GeneratorSaturated | WarningKind::GeneratorNearSaturation | WarningKind::MachineBusy)
    };
    assert!(!s.warnings.iter().any(|w| cpu(w.kind)), "{:?}", s.warnings);
}

/// Labels of one shape add up number by number; different shapes are listed.
#[test]
fn steps_of_merged_runs_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["100 → 2000 req/s", "50.5 → 1000 req/s"], "150.50 → 3000 req/s"),
        (&["32 workers", "32 workers", "16 workers"], "80 workers"),
        (&["100 req/s", "8 workers", "100 req/s"], "100 req/s + 8 workers"),
    ];
    for (labels, want) in cases {
        let paths: Vec<PathBuf> = labels
            .iter()
            .enumerate()
            .map(|(k, step)| write(dir.path(), &format!("l{k}"), &Run { step, ..Run::new("http://a/") }))
            .collect();
        assert_eq!(summarize(&paths).unwrap().steps[0].label, *want);
    }
}

/// A file as a barrage before redaction (or a hand) wrote it: a URL with a password and a
/// token, an error example quoting it, an `--at` command with a header; `settings` its
/// settings JSON.
fn with_secrets(dir: &Path, name: &str, settings: &str) -> PathBuf {
    let path = dir.join(format!("{name}.brg"));
    let url = "http://u:S3CRET@127.0.0.1:1/?token=S3CRET&x=1";
    let header = RunHeader {
        barrage_version: "old".into(),
        host: "client-1".into(),
        boot_id: String::new(),
        mode: Mode::Closed,
        urls: vec![url.into()],
        settings_json: settings.into(),
        steps: vec![StepInfo { label: "1 workers".into(), start_ms: 0 }],
        launch: own_run(),
        ..testing::header(START_MS)
    };
    let mut w = ResultsWriter::create(&path, &header).unwrap();
    let mut rec = recorder(0, 10);
    rec.record(&Sample { outcome: Outcome::Error(barrage_metrics::ErrorKind::Other), ..sample(500) });
    rec.set_example(barrage_metrics::ErrorKind::Other, format!("error sending request for url ({url})"));
    let interval =
        IntervalRecord { index: 0, start_unix_ms: START_MS, length_ms: 1000, step: 0, recorder: rec, watch: None };
    w.write_interval(&interval).unwrap();
    let command = "curl -H 'Authorization: Bearer S3CRET' http://127.0.0.1:1/".to_string();
    w.write_event(&barrage_metrics::EventRecord {
        index: 0,
        offset_ms: 100,
        command,
        kind: barrage_metrics::EventKind::Started,
    })
    .unwrap();
    w.finish(&RunFooter { ended_unix_ms: START_MS + 1000, attack_us: 1_000_000, ..RunFooter::default() }).unwrap();
    path
}

#[test]
fn a_file_holding_secrets_is_reported_redacted_unless_every_file_says_no_redact() {
    let dir = tempfile::tempdir().unwrap();
    let old = with_secrets(dir.path(), "old", r#"{"plan":{"targets":[{"url":"http://u:S3CRET@h/"}]}}"#);
    let off = r#"{"redaction":{"enabled":false,"names":[]}}"#;
    let unredacted = with_secrets(dir.path(), "unredacted", off);
    let s = summarize(std::slice::from_ref(&old)).unwrap();
    let json = serde_json::to_string(&s).unwrap();
    assert!(!json.contains("S3CRET"), "{json}");
    assert_eq!(s.urls, ["http://u:<redacted>@127.0.0.1:1/?token=<redacted>&x=1"]);
    assert_eq!(
        s.errors[0].example,
        "error sending request for url (http://u:<redacted>@127.0.0.1:1/?token=<redacted>&x=1)"
    );
    assert_eq!(s.events[0].command, "curl -H 'Authorization: Bearer <redacted>' http://127.0.0.1:1/");
    assert_eq!(s.settings["plan"]["targets"][0]["url"], "http://u:<redacted>@h/");
    assert!(!s.unredacted && !s.warnings.iter().any(|w| w.kind == WarningKind::Unredacted));
    // Written with --no-redact: shown as written, and said so.
    let s = summarize(std::slice::from_ref(&unredacted)).unwrap();
    assert!(s.unredacted && s.urls[0].contains("S3CRET") && s.events[0].command.contains("S3CRET"));
    let warned = |w: &Warning| {
        w.kind == WarningKind::Unredacted && w.text.starts_with("secrets were not redacted (--no-redact)")
    };
    assert!(s.warnings.iter().any(warned), "{:?}", s.warnings);
    // Merged with a redacted file: redacted.
    let s = summarize(&[unredacted, old]).unwrap();
    assert!(!s.unredacted && !serde_json::to_string(&s).unwrap().contains("S3CRET"));
}

/// Nothing to merge is an error to say, not a run (a collector asked before any shard's data).
#[test]
fn no_file_is_an_error() {
    let e = barrage_metrics::summary::summarize_with(&[], true).unwrap_err();
    assert_eq!(e.to_string(), "no results file to summarize");
}
