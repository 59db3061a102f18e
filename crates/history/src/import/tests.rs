//! Each format read from files in its tool's own form (real outputs under `tests/data`, see
//! its README, or written here as the tool's encoder writes them), its throughput, p50 and
//! p99 checked against values computed here from the same data, within histogram precision
//! (3 significant digits: 0.1% and one µs); and hostile files.

use super::bins::Bins;
use super::*;
use crate::Store;
use barrage_metrics::recorder::{decode_histogram, new_histogram};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Within 0.1% and `unit` of `want`.
#[track_caller]
fn near(e: &Entry, figure: &str, want: f64, unit: f64) {
    let got = *e.figures.get(figure).unwrap_or_else(|| panic!("no {figure} in {:?}", e.figures));
    assert!((got - want).abs() <= want.abs() * 1e-3 + unit, "{figure}: got {got}, want {want}");
}

/// The nearest-rank `q` quantile of `sorted`.
fn rank(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn import(path: &Path, f: Foreign) -> Entry {
    entry_of(path, f, &[]).unwrap_or_else(|e| panic!("{e}"))
}

#[track_caller]
fn refused(path: &Path, f: Foreign, with: &[&str]) -> String {
    let e = entry_of(path, f, &[]).err().unwrap_or_else(|| panic!("{f} of {} was read", path.display())).to_string();
    for w in with {
        assert!(e.contains(w), "'{e}' does not say '{w}'");
    }
    e
}

/// `n` requests (start ns, latency ns, code, error) of a Vegeta attack on a loopback port:
/// 100 a second for 30 s, latencies spread from 0.2 to 80 ms, one in 37 a 500, one in 101
/// refused; in the order they finished, as Vegeta writes them.
fn vegeta_results(n: u64) -> Vec<(i64, u64, u64, String)> {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut out: Vec<_> = (0..n)
        .map(|i| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let latency = 200_000 + (seed >> 33) % 80_000_000;
            let start = 1_551_783_627_000_000_000 + i as i64 * 10_000_000 + (seed % 1000) as i64;
            match i {
                i if i % 101 == 0 => {
                    (start, 1_234, 0, "Get \"http://127.0.0.1:41234/hello\": connection refused".into())
                }
                i if i % 37 == 0 => (start, latency, 500, "500 Internal Server Error".into()),
                _ => (start, latency, 200, String::new()),
            }
        })
        .collect();
    out.sort_by_key(|r| r.0 + r.1 as i64);
    out
}

/// Throughput, p50 and p99 (µs) of Vegeta's results, as `vegeta report` computes them.
fn vegeta_expected(rs: &[(i64, u64, u64, String)]) -> (f64, f64, f64) {
    let ok = rs.iter().filter(|r| (200..400).contains(&r.2) && r.3.is_empty()).count();
    let first = rs.iter().map(|r| r.0).min().unwrap();
    let end = rs.iter().map(|r| r.0 + r.1 as i64).max().unwrap();
    let mut lat: Vec<f64> = rs.iter().map(|r| r.1 as f64 / 1000.0).collect();
    lat.sort_by(f64::total_cmp);
    (ok as f64 / ((end - first) as f64 / 1e9), rank(&lat, 0.5), rank(&lat, 0.99))
}

/// A CSV field as Go's `encoding/csv` writes it.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn vegeta_csv(rs: &[(i64, u64, u64, String)]) -> String {
    let url = "http://127.0.0.1:41234/hello";
    rs.iter()
        .enumerate()
        .map(|(i, (t, l, c, e))| {
            format!(
                "{t},{c},{l},0,5,{},aGVsbG8=,,{i},GET,{url},Q29udGVudC1UeXBlOiB0ZXh0L3BsYWluDQoNCg==\n",
                csv_field(e)
            )
        })
        .collect()
}

fn vegeta_json(rs: &[(i64, u64, u64, String)]) -> String {
    let zone = chrono::FixedOffset::east_opt(3600).unwrap();
    rs.iter()
        .enumerate()
        .map(|(i, (t, l, c, e))| {
            let at = chrono::DateTime::from_timestamp_nanos(*t).with_timezone(&zone);
            let at = at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, false);
            let line = serde_json::json!({"attack": "", "seq": i, "code": c, "timestamp": at, "latency": l,
                "bytes_out": 0, "bytes_in": 5, "error": e, "body": "aGVsbG8=", "method": "GET",
                "url": "http://127.0.0.1:41234/hello", "headers": {"Content-Type": ["text/plain"]}});
            format!("{line}\n")
        })
        .collect()
}

#[test]
fn vegeta_csv_and_json_round_trip_throughput_and_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let rs = vegeta_results(3000);
    let (throughput, p50, p99) = vegeta_expected(&rs);
    for (name, text) in [("results.csv", vegeta_csv(&rs)), ("results.json", vegeta_json(&rs))] {
        let path = write(&dir, name, &text);
        assert_eq!(detect(&path, text.as_bytes()), Some(Foreign::Vegeta), "{name}");
        let e = import(&path, Foreign::Vegeta);
        near(&e, "throughput", throughput, 0.0);
        near(&e, "p50", p50, 1.0);
        near(&e, "p99", p99, 1.0);
        let ok = rs.iter().filter(|r| r.2 == 200).count() as f64;
        near(&e, "success", ok / 3000.0, 0.0);
        near(&e, "errors", 3000.0 - ok, 0.0);
        assert_eq!(e.started_ms, (rs.iter().map(|r| r.0).min().unwrap() / 1_000_000) as u64);
        assert_eq!(e.fingerprint.labels["target"], "http://127.0.0.1:*/hello");
        // A second an interval, every request in one, in barrage's histograms.
        assert_eq!(e.intervals.len(), 30, "{name}");
        assert_eq!(e.intervals.iter().map(|i| i.completed).sum::<u64>(), 3000);
        assert_eq!(e.intervals.iter().map(|i| i.ok).sum::<u64>() as f64, ok);
        let h = decode_histogram(&e.intervals[3].corrected).unwrap();
        assert_eq!(h.len(), e.intervals[3].completed);
        assert!(e.intervals.windows(2).all(|w| w[1].start_ms == w[0].start_ms + 1000));
    }
}

#[test]
fn an_import_is_kept_and_its_histograms_give_back_its_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let rs = vegeta_results(2000);
    let path = write(&dir, "r.csv", &vegeta_csv(&rs));
    let labels = [("branch".to_string(), Some("main".to_string())), ("tool".to_string(), Some(String::new()))];
    let e = entry_of(&path, Foreign::Vegeta, &labels).unwrap();
    assert_eq!(e.kind, "import");
    let l = &e.fingerprint.labels;
    assert_eq!((l["kind"].as_str(), l["branch"].as_str()), ("import", "main"));
    // The user's labels win: `tool=` removed it. No machine is known.
    assert!(!l.contains_key("tool") && !l.contains_key("machine"));
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let id = store.record(&e).unwrap();
    let h = store.histogram(&[id], false).unwrap();
    assert_eq!(h.len(), 2000);
    assert_eq!(h.value_at_quantile(0.99) as f64, e.figures["p99"]);
    assert_eq!(store.run(id).unwrap().figures, e.figures);
}

#[test]
fn seconds_out_of_order_and_past_a_day_are_binned_in_bounded_memory() {
    let mut bins = Bins::new();
    let t0 = 1_700_000_000_000_000i64;
    for s in 0..200 {
        bins.record(t0 + s * 1_000_000, 1000 + s as u64, true);
    }
    // Stragglers for seconds long compressed, and a request earlier than all.
    bins.record(t0 + 3 * 1_000_000 + 5, 70_000, false);
    bins.record(t0 + 10 * 1_000_000, 80_000, true);
    bins.record(t0 - 5 * 1_000_000, 90_000, true);
    // Past the first day: in the figures only.
    bins.record(t0 + 100_000 * 1_000_000, 2_000, true);
    let found = bins.finish();
    assert_eq!(found.intervals.len(), 205);
    assert_eq!(found.intervals[0].start_ms as i64, (t0 - 5 * 1_000_000) / 1000);
    let third = &found.intervals[8];
    assert_eq!((third.completed, third.ok), (2, 1));
    let h = decode_histogram(&third.corrected).unwrap();
    assert_eq!((h.len(), h.max()), (2, h.highest_equivalent(70_000)));
    assert_eq!(found.intervals.iter().map(|i| i.completed).sum::<u64>(), 203);
    assert_eq!(found.figures["errors"], 1.0);
}

#[test]
fn jmeter_csv_round_trips_its_samples() {
    // Apache JMeter's bin/testfiles/HTMLReportTestFile.csv: 255 samples, 3 failed.
    let path = data("jmeter-HTMLReportTestFile.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(detect(&path, text.as_bytes()), Some(Foreign::Jmeter));
    let rows: Vec<(i64, i64, bool)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f[7] == "true")
        })
        .collect();
    let ok = rows.iter().filter(|r| r.2).count() as f64;
    let span_ms = rows.iter().map(|r| r.0 + r.1).max().unwrap() - rows.iter().map(|r| r.0).min().unwrap();
    let mut lat: Vec<f64> = rows.iter().map(|r| r.1 as f64 * 1000.0).collect();
    lat.sort_by(f64::total_cmp);
    let e = import(&path, Foreign::Jmeter);
    near(&e, "throughput", ok / (span_ms as f64 / 1000.0), 0.0);
    near(&e, "p50", rank(&lat, 0.5), 1.0);
    near(&e, "p99", rank(&lat, 0.99), 1.0);
    near(&e, "success", ok / 255.0, 0.0);
    assert_eq!(e.started_ms, 1_551_783_627_191);
    // Its URLs are `null` and its two labels are not a target.
    assert!(!e.fingerprint.labels.contains_key("target"));
    assert_eq!(e.intervals.iter().map(|i| i.completed).sum::<u64>(), 255);
}

#[test]
fn jmeter_columns_are_found_by_name_with_any_delimiter_and_quoted_lines() {
    let dir = tempfile::tempdir().unwrap();
    let text = "timeStamp;label;success;elapsed;failureMessage;URL\n\
        1700000000000;home;true;120;;http://localhost:8080/\n\
        1700000000100;home;false;340;\"Test failed: text expected to contain /ok/;\n\"\"see\"\" the body\";http://localhost:8080/\n\
        \n\
        1700000000900;home;true;80;;http://localhost:8080/\n";
    let path = write(&dir, "r.jtl", text);
    assert_eq!(detect(&path, text.as_bytes()), Some(Foreign::Jmeter));
    let e = import(&path, Foreign::Jmeter);
    near(&e, "p50", 120_000.0, 1.0);
    near(&e, "max", 340_000.0, 1.0);
    near(&e, "throughput", 2.0 / 0.98, 0.0);
    assert_eq!(e.fingerprint.labels["target"], "http://localhost:*/");
    // Without its header: JMeter's default columns.
    let bare = "1700000000000,120,home,200,OK,t 1-1,text,true,,10,5,1,1,http://h/a,100,0,3\n\
        1700000000500,80,home,200,OK,t 1-1,text,true,,10,5,1,1,http://h/b,70,0,3\n";
    let e = import(&write(&dir, "bare.csv", bare), Foreign::Jmeter);
    near(&e, "p50", 80_000.0, 1.0);
    assert_eq!(e.fingerprint.labels["target"], "http://h/*");
}

/// The sum of an interval log's histograms and their span (s), read with hdrhistogram's
/// own log parser.
fn hdr_reference(path: &Path, tag: Option<&str>) -> (hdrhistogram::Histogram<u64>, f64, usize) {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let bytes = std::fs::read(path).unwrap();
    let mut sum = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    let (mut first, mut last, mut n) = (f64::MAX, 0.0f64, 0);
    for entry in IntervalLogIterator::new(&bytes) {
        if let Ok(LogEntry::Interval(i)) = entry {
            if i.tag().map(|t| t.as_str()) != tag {
                continue;
            }
            let raw = base64::engine::general_purpose::STANDARD.decode(i.encoded_histogram()).unwrap();
            let h: hdrhistogram::Histogram<u64> = Deserializer::new().deserialize(&mut &raw[..]).unwrap();
            sum.add(&h).unwrap();
            first = first.min(i.start_timestamp().as_secs_f64());
            last = last.max((i.start_timestamp() + i.duration()).as_secs_f64());
            n += 1;
        }
    }
    (sum, last - first, n)
}

use base64::Engine as _;

#[test]
fn a_jhiccup_log_round_trips_and_matches_hdrhistogram_own_reader() {
    let path = data("jHiccup-2.0.7S.logV2.hlog");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(detect(&path, &text.as_bytes()[..400]), Some(Foreign::HdrLog));
    let e = import(&path, Foreign::HdrLog);
    let (sum, span, n) = hdr_reference(&path, None);
    // HdrHistogram's own test of this file: 62 intervals, 48,761 values, max 1,796,210,687.
    assert_eq!((n, sum.len()), (62, 48_761));
    assert_eq!(e.intervals.len(), 62);
    assert_eq!(e.intervals.iter().map(|i| i.completed).sum::<u64>(), 48_761);
    near(&e, "throughput", 48_761.0 / span, 0.0);
    near(&e, "p50", sum.value_at_quantile(0.5) as f64, 1.0);
    near(&e, "p99", sum.value_at_quantile(0.99) as f64, 1.0);
    near(&e, "max", 1_796_210_687.0, 1.0);
    // Relative to its StartTime: the first interval 0.127 s after it.
    assert_eq!(e.started_ms, 1_441_812_279_601);
    assert_eq!(e.intervals[1].length_ms, 999);
    assert!(!e.figures.contains_key("success"));
}

#[test]
fn a_tagged_log_reads_its_untagged_lines_or_one_tag() {
    let path = data("tagged-Log.logV2.hlog");
    let untagged = import(&path, Foreign::HdrLog);
    let a = entry_with(&path, Foreign::HdrLog, &[], &Options { tag: Some("A".into()) }).unwrap();
    // HdrHistogram's own test: 32,290 values in all, tag A's the same as the untagged.
    let count = |e: &Entry| e.intervals.iter().map(|i| i.completed).sum::<u64>();
    assert_eq!((count(&untagged), count(&a)), (16_145, 16_145));
    assert_eq!(untagged.figures, a.figures);
    assert_eq!(a.fingerprint.labels["tag"], "A");
    assert!(!untagged.fingerprint.labels.contains_key("tag"));
    let b = entry_with(&path, Foreign::HdrLog, &[], &Options { tag: Some("B".into()) });
    assert!(b.unwrap_err().to_string().contains("no Tag=B intervals"));
}

#[test]
fn a_log_written_by_hdrhistogram_writer_round_trips() {
    use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
    use hdrhistogram::serialization::V2DeflateSerializer;
    use std::time::{Duration, UNIX_EPOCH};
    let (mut out, mut ser) = (Vec::new(), V2DeflateSerializer::new());
    let base = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut log = IntervalLogWriterBuilder::new()
        .with_start_time(base)
        .with_base_time(base)
        .with_max_value_divisor(1000.0)
        .begin_log_with(&mut out, &mut ser)
        .unwrap();
    let mut all = Vec::new();
    for s in 0..10u64 {
        let mut h = new_histogram();
        for k in 0..500u64 {
            let v = 100 + (s * 7919 + k * k * 31) % 250_000;
            h.record(v).unwrap();
            all.push(v as f64);
        }
        log.write_histogram(&h, Duration::from_secs(s), Duration::from_secs(1), None).unwrap();
    }
    drop(log);
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "barrage.hlog", std::str::from_utf8(&out).unwrap());
    let e = import(&path, Foreign::HdrLog);
    all.sort_by(f64::total_cmp);
    near(&e, "throughput", 500.0, 0.0);
    near(&e, "p50", rank(&all, 0.5), 1.0);
    near(&e, "p99", rank(&all, 0.99), 1.0);
    assert_eq!(e.started_ms, 1_700_000_000_000);
    assert_eq!(e.intervals[9].start_ms, 1_700_000_009_000);
}

/// The µs of wrk2's printed percentile line `percent` of `text`'s first distribution.
fn printed(text: &str, percent: &str) -> f64 {
    let line = text.lines().map(str::trim).find(|l| l.starts_with(percent)).unwrap();
    let value = line.split_whitespace().nth(1).unwrap();
    value.strip_suffix("ms").unwrap().parse::<f64>().unwrap() * 1000.0
}

#[test]
fn wrk2_output_gives_its_percentiles_and_an_approximate_histogram() {
    let path = data("wrk2-latency.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(detect(&path, text.as_bytes()), Some(Foreign::Wrk2));
    let e = import(&path, Foreign::Wrk2);
    let rate: f64 = text.lines().find_map(|l| l.strip_prefix("Requests/sec:")).unwrap().trim().parse().unwrap();
    near(&e, "throughput", rate, 0.0);
    near(&e, "p50", printed(&text, "50.000%"), 1.0);
    near(&e, "p99", printed(&text, "99.000%"), 1.0);
    near(&e, "p999", printed(&text, "99.900%"), 1.0);
    near(&e, "mean", 6602.0, 1.0);
    near(&e, "success", 1.0, 0.0);
    assert_eq!(e.fingerprint.labels["target"], "http://127.0.0.1:*/index.html");
    // The spectrum's histogram: 39,500 requests (the calibration left out), its quantiles at
    // the spectrum's rows theirs.
    let [i] = &e.intervals[..] else { panic!("{} intervals", e.intervals.len()) };
    assert_eq!((i.completed, i.length_ms), (39_500, 30_000));
    let h = decode_histogram(&i.corrected).unwrap();
    assert!((h.value_at_quantile(0.5) as f64 - 6671.0).abs() <= 6671.0 * 1e-3 + 1.0);
    assert!((h.value_at_quantile(0.9) as f64 - 9143.0).abs() <= 9143.0 * 1e-3 + 1.0);
    assert_eq!(i.corrected, i.service);
}

#[test]
fn wrk2_uncorrected_latency_is_the_service_time_and_errors_count() {
    let path = data("wrk2-u-latency.txt");
    let e = import(&path, Foreign::Wrk2);
    let i = &e.intervals[0];
    let service = decode_histogram(&i.service).unwrap();
    assert!((service.value_at_quantile(0.5) as f64 - 2679.0).abs() <= 2679.0 * 1e-3 + 1.0);
    near(&e, "p50", 6210.0, 1.0);
    // With failures: 600 answers of 4xx/5xx and 5 socket errors (timeouts are not requests).
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "60031 requests in 30.01s, 19.82MB read",
        "60031 requests in 30.01s, 19.82MB read\n  Socket errors: connect 2, read 3, write 0, timeout 7\n  Non-2xx or 3xx responses: 600",
    );
    let e = import(&write(&dir, "out.txt", &text), Foreign::Wrk2);
    near(&e, "throughput", 2000.67 * (60031.0 - 600.0) / 60031.0, 0.0);
    near(&e, "success", (60031.0 - 600.0) / 60036.0, 0.0);
    near(&e, "errors", 605.0, 0.0);
}

#[test]
fn wrk_output_without_the_spectrum_gives_what_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    // wrk's README example, and its `--latency` distribution.
    let text = "Running 30s test @ http://127.0.0.1:8080/index.html\n  12 threads and 400 connections\n\
        \x20 Thread Stats   Avg      Stdev     Max   +/- Stdev\n    Latency   635.91us    0.89ms  12.92ms   93.69%\n\
        \x20   Req/Sec    56.20k     8.07k   62.00k    86.54%\n  Latency Distribution\n     50%  610.00us\n\
        \x20    75%  700.00us\n     90%  900.00us\n     99%    3.50ms\n  22464657 requests in 30.00s, 17.76GB read\n\
        Requests/sec: 748868.53\nTransfer/sec:    606.33MB\n";
    let e = import(&write(&dir, "wrk.txt", text), Foreign::Wrk2);
    near(&e, "throughput", 748_868.53, 0.0);
    near(&e, "p50", 610.0, 1.0);
    near(&e, "p99", 3500.0, 1.0);
    near(&e, "mean", 635.91, 1.0);
    near(&e, "max", 12_920.0, 1.0);
    assert!(e.intervals.is_empty());
}

const K6_EXPORT: &str = r#"{
    "root_group": {"name": "", "path": "", "id": "d41d8cd98f00b204e9800998ecf8427e", "groups": {}, "checks": {}},
    "metrics": {
        "http_req_duration": {"avg": 12.5, "min": 1.2, "med": 10.25, "max": 250.75, "p(90)": 20.5, "p(95)": 30.125, "p(99)": 99.875},
        "http_reqs": {"count": 6000, "rate": 99.98},
        "http_req_failed": {"passes": 60, "fails": 5940, "value": 0.01},
        "vus": {"value": 10, "min": 10, "max": 10}
    }
}"#;

const K6_HANDLE_SUMMARY: &str = r#"{"root_group":{"name":"","path":"","id":"d41d8cd98f00b204e9800998ecf8427e","groups":[],"checks":[]},"options":{"summaryTrendStats":["avg","min","med","max","p(90)","p(95)","p(99)"],"summaryTimeUnit":"","noColor":false},"state":{"isStdErrTTY":false,"isStdOutTTY":false,"testRunDurationMs":60012.5},"metrics":{"http_req_duration":{"type":"trend","contains":"time","values":{"avg":12.5,"min":1.2,"med":10.25,"max":250.75,"p(90)":20.5,"p(95)":30.125,"p(99)":99.875}},"http_reqs":{"type":"counter","contains":"default","values":{"count":6000,"rate":99.98}},"http_req_failed":{"type":"rate","contains":"default","values":{"rate":0.01,"passes":60,"fails":5940}}}}"#;

const K6_MACHINE_READABLE: &str = r#"{"version":"1.0.0","config":{"duration":60,"execution":"local","script":"script.js"},"metadata":{"generatedAt":"2025-06-01T12:01:00Z","k6Version":"2.0.0"},"results":{"metrics":[{"name":"http_req_duration","type":"trend","contains":"time","values":{"avg":12.5,"max":250.75,"med":10.25,"min":1.2,"p(90)":20.5,"p(95)":30.125}},{"name":"http_reqs","type":"counter","contains":"default","values":{"count":6000}},{"name":"http_req_failed","type":"rate","contains":"default","values":{"matches":60,"rate":0.01,"total":6000}}]}}"#;

#[test]
fn k6_summaries_of_every_shape_give_their_figures() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [("export.json", K6_EXPORT), ("summary.json", K6_HANDLE_SUMMARY)] {
        let path = write(&dir, name, text);
        assert_eq!(detect(&path, text.as_bytes()), Some(Foreign::K6Summary));
        let e = import(&path, Foreign::K6Summary);
        near(&e, "throughput", 99.98 * 0.99, 0.0);
        near(&e, "p50", 10_250.0, 1.0);
        near(&e, "p99", 99_875.0, 1.0);
        near(&e, "mean", 12_500.0, 1.0);
        near(&e, "error_ratio", 0.01, 0.0);
        near(&e, "errors", 60.0, 0.0);
        assert!(e.intervals.is_empty());
    }
    let path = write(&dir, "mr.json", K6_MACHINE_READABLE);
    let e = import(&path, Foreign::K6Summary);
    near(&e, "throughput", 6000.0 / 60.0 * 0.99, 0.0);
    near(&e, "p50", 10_250.0, 1.0);
    assert!(!e.figures.contains_key("p99"), "not asked of k6");
    assert_eq!(e.started_ms, 1_748_779_200_000);
}

#[test]
fn locust_stats_give_the_aggregated_row() {
    let dir = tempfile::tempdir().unwrap();
    let text = "Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,Min Response Time,\
Max Response Time,Average Content Size,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%\n\
GET,/,2000,20,110,123.456,3.2,1234.5,1024.0,33.3,0.333,110,130,150,160,200,250,400,610,1200,1200,1200\n\
POST,\"/login, then home\",100,0,95,99.5,40.1,300.2,12.0,1.66,0.0,95,100,110,120,150,200,250,300,300,300,300\n\
,Aggregated,2100,20,110,122.3,3.2,1234.5,975.8,34.96,0.333,110,130,150,160,200,250,390,600,1200,1200,1200\n";
    let path = write(&dir, "run_stats.csv", text);
    assert_eq!(detect(&path, text.as_bytes()), Some(Foreign::Locust));
    let agg: Vec<&str> = text.lines().last().unwrap().split(',').collect();
    let num = |i: usize| agg[i].parse::<f64>().unwrap();
    let e = import(&path, Foreign::Locust);
    near(&e, "throughput", num(9) - num(10), 0.0);
    near(&e, "p50", num(11) * 1000.0, 1.0);
    near(&e, "p99", num(18) * 1000.0, 1.0);
    near(&e, "max", 1_234_500.0, 1.0);
    near(&e, "success", 2080.0 / 2100.0, 0.0);
    assert!(e.intervals.is_empty());
}

#[test]
fn formats_are_named_and_detected() {
    for f in Foreign::ALL {
        assert_eq!(f.name().parse::<Foreign>(), Ok(f));
    }
    assert_eq!("HDR-LOG".parse::<Foreign>(), Ok(Foreign::HdrLog));
    assert!("gatling".parse::<Foreign>().unwrap_err().contains("k6, vegeta, wrk2, hdr-log, jmeter, locust"));
    assert_eq!(
        detect(Path::new("x.hlog"), b"0.1,1.0,2.0,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJ"),
        Some(Foreign::HdrLog)
    );
    assert_eq!(detect(Path::new("a.txt"), b"hello\n"), None);
    assert_eq!(detect(Path::new("a.jtl"), b"<?xml version=\"1.0\"?>"), Some(Foreign::Jmeter));
    let e = entry_of(
        &write(&tempfile::tempdir().unwrap(), "x.jtl", "<?xml version=\"1.0\"?>\n<testResults>\n"),
        Foreign::Jmeter,
        &[],
    );
    assert!(e.unwrap_err().to_string().contains("XML"));
}

/// Each format's file, `ok` and written by `make` from the good one.
fn each_format(dir: &tempfile::TempDir, make: impl Fn(Foreign, &str) -> String) -> Vec<(Foreign, PathBuf)> {
    let rs = vegeta_results(300);
    let good = [
        (Foreign::Vegeta, vegeta_csv(&rs)),
        (Foreign::Jmeter, std::fs::read_to_string(data("jmeter-HTMLReportTestFile.csv")).unwrap()),
        (Foreign::HdrLog, std::fs::read_to_string(data("jHiccup-2.0.7S.logV2.hlog")).unwrap()),
        (Foreign::Wrk2, std::fs::read_to_string(data("wrk2-latency.txt")).unwrap()),
        (Foreign::Locust, "Type,Name,Request Count,Failure Count,Median Response Time,Requests/s,Failures/s\nGET,/,10,0,5,1,0\n,Aggregated,10,0,5,1,0\n".into()),
        (Foreign::K6Summary, K6_EXPORT.into()),
    ];
    good.iter().map(|(f, text)| (*f, write(dir, &format!("{f}.in"), &make(*f, text)))).collect()
}

#[test]
fn an_empty_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (f, path) in each_format(&dir, |_, _| String::new()) {
        refused(&path, f, &["empty file", &path.display().to_string()]);
    }
    for (f, path) in each_format(&dir, |_, _| "\n\n  \n".into()) {
        refused(&path, f, &[]);
    }
}

#[test]
fn a_file_cut_off_is_refused_at_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    for (f, path) in each_format(&dir, |f, text| {
        let cut = match f {
            // Inside its last line's histogram, or before the counts.
            Foreign::HdrLog => text.len() - 30,
            Foreign::Wrk2 => text.find("60018 requests").unwrap(),
            Foreign::Locust => text.find(",Aggregated").unwrap(),
            _ => text.len() - text.lines().last().unwrap().len() / 2 - 1,
        };
        text[..cut].to_string()
    }) {
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        let e = refused(&path, f, &[]);
        if matches!(f, Foreign::Vegeta | Foreign::Jmeter | Foreign::HdrLog | Foreign::K6Summary) {
            assert!(e.contains(&format!(":{lines}:")), "{f}: '{e}' does not name line {lines}");
        }
    }
}

#[test]
fn a_garbage_line_in_the_middle_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for (f, path) in each_format(&dir, |f, text| {
        let mut lines: Vec<&str> = text.lines().collect();
        let at = match f {
            Foreign::Wrk2 => lines.iter().position(|l| l.contains("0.500000")).unwrap(),
            Foreign::Locust => 1,
            _ => 5,
        };
        lines.insert(at, "12,garbage;\u{1}here,9");
        lines.join("\n") + "\n"
    }) {
        let text = std::fs::read_to_string(&path).unwrap();
        let line = text.lines().position(|l| l.contains("garbage")).unwrap() + 1;
        refused(&path, f, &[&format!("{}:{line}:", path.display())]);
    }
}

#[test]
fn a_line_of_2_mib_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let long = "9".repeat(2 << 20);
    for (f, path) in each_format(&dir, |f, text| {
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(if f == Foreign::Locust { 1 } else { 3 }, &long);
        lines.join("\n") + "\n"
    }) {
        if f == Foreign::K6Summary {
            // Read whole (bounded at 16 MiB), it is not JSON.
            refused(&path, f, &[":4:"]);
        } else {
            let line = if f == Foreign::Locust { 2 } else { 4 };
            refused(&path, f, &[&format!(":{line}:"), "longer than 1 MiB"]);
        }
    }
}

/// A log line holding `bytes` as its histogram.
fn log_with(dir: &tempfile::TempDir, bytes: &[u8]) -> PathBuf {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    write(dir, "x.hlog", &format!("#[StartTime: 1700000000.000 (seconds since epoch)]\n0.000,1.000,1.000,{b64}\n"))
}

/// HdrHistogram's V2 header: payload length, digits, lowest and highest values.
fn v2_header(len: u32, digits: u32, low: u64, high: u64) -> Vec<u8> {
    let mut h = 0x1c84_9313u32.to_be_bytes().to_vec();
    for w in [len, 0, digits] {
        h.extend(w.to_be_bytes());
    }
    for w in [low, high] {
        h.extend(w.to_be_bytes());
    }
    h.extend(1.0f64.to_bits().to_be_bytes());
    h
}

fn deflated(plain: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(plain).unwrap();
    let z = z.finish().unwrap();
    let mut out = 0x1c84_9314u32.to_be_bytes().to_vec();
    out.extend((z.len() as u32).to_be_bytes());
    out.extend(z);
    out
}

#[test]
fn a_huge_declared_histogram_in_a_log_is_refused() {
    use hdrhistogram::serialization::V2DeflateSerializer;
    let dir = tempfile::tempdir().unwrap();
    // Bounds of 2^62 at 5 digits: gigabytes of counters, before a count is read.
    let wide = log_with(&dir, &deflated(&v2_header(0, 5, 1, 1 << 62)));
    refused(&wide, Foreign::HdrLog, &[":2:", "out of range"]);
    // A payload declared at 4 GiB.
    let long = log_with(&dir, &deflated(&v2_header(u32::MAX, 3, 1, 3_600_000_000)));
    refused(&long, Foreign::HdrLog, &[":2:", "declares"]);
    // 16 MiB of zeros deflated to a few KiB.
    let mut bomb = v2_header(16 << 20, 3, 1, 3_600_000_000);
    bomb.resize(40 + (16 << 20), 0);
    let bomb = log_with(&dir, &deflated(&bomb));
    refused(&bomb, Foreign::HdrLog, &[":2:", "limit"]);
    // Values past an hour as µs: a log in ns.
    let mut ns = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
    ns.record(5_000_000_000).unwrap();
    let mut bytes = Vec::new();
    hdrhistogram::serialization::Serializer::serialize(&mut V2DeflateSerializer::new(), &ns, &mut bytes).unwrap();
    refused(&log_with(&dir, &bytes), Foreign::HdrLog, &[":2:", "is the log in ns?"]);
    // An older log's V1 encoding.
    refused(&data("jHiccup-2.0.6.logV1.hlog"), Foreign::HdrLog, &[":5:", "V1"]);
}

#[test]
fn a_quoted_field_never_closed_is_a_file_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let rs = vegeta_results(10);
    let text = vegeta_csv(&rs) + "1551783627000000000,500,1000,0,0,\"500 Internal";
    let path = write(&dir, "r.csv", &text);
    refused(&path, Foreign::Vegeta, &[":11:", "never closed"]);
}
