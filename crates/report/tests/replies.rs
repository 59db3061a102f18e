//! A key-value store's server error replies in every output: results files written as the
//! key-value engine writes them (each reply that was a server error recorded as a request
//! with the status its class maps to, and under its class with an example), `summarize`d as
//! `barrage report` would, then rendered. The expected figures are counted by hand from the
//! fixture below, and the latencies come from histograms of the same values recorded here:
//! never from the code under test.

mod common;
use barrage_metrics::file::{IntervalRecord, Mode, RunHeader, StepInfo};
use barrage_metrics::recorder::new_histogram;
use barrage_metrics::summary::{GroupSummary, LatencyStats, WarningKind};
use barrage_metrics::{testing, Outcome, Recorder, RunSummary, Sample};
use barrage_report::{Cell, Page, Report};
use common::{cells, row, sheet, summary_of, us, write_run};
use hdrhistogram::Histogram;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const START_MS: u64 = 1_714_564_800_000;
const SECONDS: u64 = 3;
/// Requests per second of a fixture run.
const PER_SECOND: u64 = 20;

/// Which fixture run: the first sees `ERR`, `MOVED` and `LOADING`, the second `ERR` and
/// `SERVER_ERROR`; a clean one none.
#[derive(Clone, Copy, PartialEq)]
enum Run {
    Redis,
    Second,
    Clean,
}

/// Request `k` of second `i` takes this long, µs.
fn latency_us(i: u64, k: u64) -> u64 {
    1_000 + k * 100 + i * 10
}

/// The first reply of `ERR`: it quotes a URL with a password, which no output may show.
const ERR_FIRST: &str = "ERR invalid target redis://default:S3CRET@cache.test:6379";
const ERR_SHOWN: &str = "ERR invalid target redis://default:<redacted>@cache.test:6379";

/// The server error reply (class, status, reply) of request `k` of second `i`, if it was one.
fn reply(run: Run, i: u64, k: u64) -> Option<(&'static str, u16, &'static str)> {
    match (run, i, k) {
        (Run::Redis, 0, 19) => Some(("ERR", 500, ERR_FIRST)),
        (Run::Redis, _, 19) => Some(("ERR", 500, "ERR a later one, never shown")),
        (Run::Redis, 1, 18) => Some(("MOVED", 421, "MOVED 3999 127.0.0.1:6381")),
        (Run::Redis, 2, 17) => Some(("LOADING", 503, "LOADING Redis is loading the dataset in memory")),
        (Run::Second, _, 0) => Some(("ERR", 500, "ERR of the second run, never shown")),
        (Run::Second, 2, 5) => Some(("SERVER_ERROR", 500, "SERVER_ERROR out of memory storing object")),
        _ => None,
    }
}

/// Second `i` of `run`, recorded as the engine records it: every request, and each server
/// error reply under its class as well.
fn interval(run: Run, i: u64) -> IntervalRecord {
    let us = Duration::from_micros;
    let mut r = Recorder::new();
    for k in 0..PER_SECOND {
        let at = i * 1_000_000 + k * 50_000;
        let replied = reply(run, i, k);
        let s = Sample {
            intended: us(at),
            started: us(at),
            ended: us(at + latency_us(i, k)),
            phases: [None, None, None, Some(us(10)), Some(us(latency_us(i, k) - 10)), None],
            bytes_in: 16,
            bytes_out: 40,
            ..testing::sample(Duration::ZERO, Outcome::Status(replied.map_or(200, |(_, status, _)| status)))
        };
        r.record_sent();
        r.record(&s);
        r.names.record(if k % 2 == 0 { b"SET" } else { b"GET" }, &s);
        if let Some((class, _, text)) = replied {
            r.replies.record_example(class.as_bytes(), &s, || text.to_string());
        }
    }
    IntervalRecord {
        index: i as u32,
        start_unix_ms: START_MS + i * 1000,
        length_ms: 1000,
        step: 0,
        recorder: r,
        watch: None,
    }
}

/// The latencies of `class`'s replies in `runs`, recorded by hand.
fn histogram(runs: &[Run], class: &str) -> Histogram<u64> {
    let mut h = new_histogram();
    for run in runs {
        for i in 0..SECONDS {
            for k in (0..PER_SECOND).filter(|k| reply(*run, i, *k).is_some_and(|r| r.0 == class)) {
                h.record(latency_us(i, k)).unwrap();
            }
        }
    }
    h
}

fn write(dir: &Path, name: &str, run: Run) -> PathBuf {
    let path = dir.join(name);
    let header = RunHeader {
        barrage_version: "replies".into(),
        started_unix_ms: START_MS,
        host: name.into(),
        boot_id: "boot".into(),
        mode: Mode::Open,
        urls: vec!["redis://127.0.0.1:6379".into()],
        settings_json: "{}".into(),
        steps: vec![StepInfo { label: "20 req/s".into(), start_ms: 0 }],
        threads: 1,
        insecure: false,
        groups: Vec::new(),
        launch: Default::default(),
    };
    write_run(&path, &header, (0..SECONDS).map(|i| interval(run, i)), 20_000)
}

/// The summary of `runs` merged (one run alone when there is one).
fn summary(runs: &[Run]) -> (tempfile::TempDir, RunSummary) {
    summary_of(runs, write)
}

fn class<'a>(s: &'a RunSummary, name: &str) -> &'a GroupSummary {
    s.replies.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("no class {name}: {:?}", s.replies))
}

#[test]
fn each_class_is_counted_as_the_fixture_ran_it() {
    let (_dir, s) = summary(&[Run::Redis]);
    // 3 seconds × 20 requests; an ERR each second, a MOVED in the second, a LOADING in the
    // third; by count, ties by name.
    assert_eq!(s.requests.total, 60);
    let rows: Vec<_> = s.replies.iter().map(|r| (r.name.as_str(), r.requests, r.failed, r.share)).collect();
    assert_eq!(rows, [("ERR", 3, 3, 3.0 / 60.0), ("LOADING", 1, 1, 1.0 / 60.0), ("MOVED", 1, 1, 1.0 / 60.0)]);
    for name in ["ERR", "LOADING", "MOVED"] {
        assert_eq!(class(&s, name).latency, LatencyStats::of(&histogram(&[Run::Redis], name)), "{name}");
    }
    // The first reply of each class, redacted: the file was written as it came.
    assert_eq!(class(&s, "ERR").example.as_deref(), Some(ERR_SHOWN));
    assert_eq!(class(&s, "MOVED").example.as_deref(), Some("MOVED 3999 127.0.0.1:6381"));
    // The replies are requests too: 5 failed of 60, by their statuses.
    assert_eq!((s.requests.ok, s.requests.http_errors), (55, 5));
    assert_eq!((s.status_codes["500"], s.status_codes["421"], s.status_codes["503"]), (3, 1, 1));
}

#[test]
fn the_text_and_html_reports_show_server_replies() {
    let (_dir, s) = summary(&[Run::Redis]);
    let text = barrage_report::text(&s, false);
    assert_eq!(row(&text, "Server replies"), ["Server", "replies", "count", "share", "p50", "p99", "example"]);
    let err = histogram(&[Run::Redis], "ERR");
    let (p50, p99) = (us(err.value_at_quantile(0.5)), us(err.value_at_quantile(0.99)));
    let want: Vec<&str> = ["ERR", "3", "5.00%", &p50, &p99].into_iter().chain(ERR_SHOWN.split(' ')).collect();
    assert_eq!(row(&text, "ERR "), want, "{text}");
    let moved = histogram(&[Run::Redis], "MOVED");
    let p50 = us(moved.value_at_quantile(0.5));
    assert_eq!(row(&text, "MOVED")[..5], ["MOVED", "1", "1.67%", &p50, &p50], "{text}");
    assert!(!text.contains("S3CRET"), "{text}");
    // After the Errors section's place, before the steps'.
    assert!(text.find("Server replies").unwrap() > text.find("Status codes").unwrap(), "{text}");

    let page = barrage_report::html(&Page::Run(&s));
    let section = &page[page.find("<section id=\"table-server-replies\">").expect("a Server replies table")..];
    let section = &section[..section.find("</section>").unwrap()];
    for cell in [
        "<th scope=\"col\">example</th>".to_string(),
        "<td>ERR</td>".into(),
        "<td class=\"num\">3</td>".into(),
        "<td class=\"num\">5.00%</td>".into(),
        format!("<td class=\"num\">{}</td>", us(err.value_at_quantile(0.99))),
        format!("<td>{}</td>", ERR_SHOWN.replace('<', "&lt;").replace('>', "&gt;")),
        "<td>LOADING</td>".into(),
    ] {
        assert!(section.contains(&cell), "{cell} in {section}");
    }
    assert!(!page.contains("S3CRET"));
}

/// The warning says how many replies were server errors, by class, in every report that
/// shows warnings; a run without any says nothing of them.
#[test]
fn server_error_replies_are_warned_about_and_only_then() {
    let (_dir, s) = summary(&[Run::Redis]);
    let line = "5 server error replies (ERR: 3, LOADING: 1, MOVED: 1): see Server replies";
    assert!(s.warnings.iter().any(|w| w.kind == WarningKind::ServerErrors && w.text == line), "{:?}", s.warnings);
    assert!(barrage_report::text(&s, false).contains(&format!("warning: {line}")));
    assert!(barrage_report::html(&Page::Run(&s)).contains(&format!("<li>{line}</li>")));
    let json: Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    assert!(json["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "server_errors" && w["text"] == line));

    let (_dir, s) = summary(&[Run::Clean]);
    assert!(s.replies.is_empty());
    assert!(!s.warnings.iter().any(|w| w.kind == WarningKind::ServerErrors), "{:?}", s.warnings);
    let text = barrage_report::text(&s, false);
    assert!(!text.contains("Server replies") && !text.contains("server error"), "{text}");
    assert!(!barrage_report::html(&Page::Run(&s)).contains("table-server-replies"));
    let json: Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    assert_eq!(json["replies"], Value::Array(Vec::new()));
    assert_eq!(
        Report::Run(&s).sheets().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["summary", "intervals", "by_name"]
    );
}

#[test]
fn csv_and_xlsx_carry_the_replies() {
    let (dir, s) = summary(&[Run::Redis]);
    let replies = sheet(&s, "replies");
    assert_eq!(
        replies.header,
        ["class", "count", "share", "mean_ms", "min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms", "example"]
    );
    assert_eq!(replies.rows.len(), 3);
    let err = histogram(&[Run::Redis], "ERR");
    let ms = |v: u64| Cell::Number(v as f64 / 1e3);
    let row = cells(&replies, "ERR");
    for (column, want) in [
        ("count", Cell::Number(3.0)),
        ("share", Cell::Number(0.05)),
        ("min_ms", ms(err.min())),
        ("p50_ms", ms(err.value_at_quantile(0.5))),
        ("p99_ms", ms(err.value_at_quantile(0.99))),
        ("max_ms", ms(err.max())),
        ("example", Cell::from(ERR_SHOWN)),
    ] {
        assert_eq!(row[column], want, "{column}");
    }
    let summary = sheet(&s, "summary");
    assert_eq!(cells(&summary, "reply_ERR")["value"], Cell::Number(3.0));
    assert_eq!(cells(&summary, "reply_MOVED")["value"], Cell::Number(1.0));

    // --csv-dir writes each sheet as it is: replies.csv.
    let csv = barrage_report::to_csv(&replies);
    assert!(csv.starts_with("class,count,share,mean_ms,min_ms,p50_ms,p90_ms,p99_ms,max_ms,example\n"), "{csv}");
    let line: Vec<&str> = csv.lines().find(|l| l.starts_with("MOVED,")).unwrap().split(',').collect();
    let moved = histogram(&[Run::Redis], "MOVED");
    let ms = |v: u64| (v as f64 / 1e3).to_string();
    // The mean is the histogram's, from its buckets' middles: any number there.
    let (min, p50) = (ms(moved.min()), ms(moved.value_at_quantile(0.5)));
    let want = ["MOVED".to_string(), "1".into(), (1.0f64 / 60.0).to_string(), line[3].into(), min, p50];
    assert_eq!(line[..6], want, "{csv}");
    assert_eq!(line[9], "MOVED 3999 127.0.0.1:6381", "{csv}");

    // The workbook holds the same cells.
    use calamine::{open_workbook_auto, Data, Reader};
    let path = dir.path().join("run.xlsx");
    barrage_report::write_xlsx(&path, &Report::Run(&s).sheets(), false).unwrap();
    let mut book = open_workbook_auto(&path).unwrap();
    assert_eq!(book.sheet_names(), ["summary", "intervals", "by_name", "replies"]);
    let range = book.worksheet_range("replies").unwrap();
    let rows: Vec<Vec<Data>> = range.rows().map(<[Data]>::to_vec).collect();
    let col = |title: &str| rows[0].iter().position(|h| *h == Data::String(title.into())).unwrap();
    let loading = rows.iter().find(|r| r[0] == Data::String("LOADING".into())).unwrap();
    assert_eq!(loading[col("count")], Data::Float(1.0));
    assert_eq!(loading[col("example")], Data::String("LOADING Redis is loading the dataset in memory".into()));
}

type Mutation = (&'static str, fn(&mut Value));

fn validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/summary.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

fn assert_valid(v: &jsonschema::Validator, instance: &Value) {
    let errors: Vec<String> = v.iter_errors(instance).map(|e| format!("{}: {e}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn json_carries_the_replies_and_matches_the_schema() {
    let (_dir, s) = summary(&[Run::Redis]);
    let json: Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    let schema = validator();
    assert_valid(&schema, &json);
    let err = &json["replies"][0];
    assert_eq!((err["name"].as_str(), err["requests"].as_u64()), (Some("ERR"), Some(3)));
    assert_eq!((err["share"].as_f64(), err["example"].as_str()), (Some(0.05), Some(ERR_SHOWN)));
    let h = histogram(&[Run::Redis], "ERR");
    assert_eq!(err["latency"]["p99_us"].as_u64(), Some(h.value_at_quantile(0.99)));
    // It reads back.
    let back: RunSummary = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back.replies, s.replies);
    // A summary written before replies existed reads with none.
    let mut old = json.clone();
    old.as_object_mut().unwrap().remove("replies");
    assert!(serde_json::from_value::<RunSummary>(old).unwrap().replies.is_empty());

    // The schema holds the new field to its shape.
    let mutations: [Mutation; 4] = [
        ("replies missing", |v| {
            v.as_object_mut().unwrap().remove("replies");
        }),
        ("a reply class without its count", |v| {
            v["replies"][0].as_object_mut().unwrap().remove("requests");
        }),
        ("a negative count", |v| v["replies"][0]["requests"] = (-1).into()),
        ("replies as an object", |v| v["replies"] = serde_json::json!({"ERR": 3})),
    ];
    for (what, mutate) in mutations {
        let mut bad = json.clone();
        mutate(&mut bad);
        assert!(!schema.is_valid(&bad), "the schema accepts {what}");
    }
}

/// Two runs side by side merge into one whose replies are the sums, counted here by hand,
/// with the first run's examples.
#[test]
fn merged_runs_add_their_replies_exactly() {
    let (_dir, s) = summary(&[Run::Redis, Run::Second]);
    assert_eq!(s.requests.total, 120);
    // ERR: 3 + 3; SERVER_ERROR only in the second run, LOADING and MOVED only in the first.
    let rows: Vec<_> = s.replies.iter().map(|r| (r.name.as_str(), r.requests)).collect();
    assert_eq!(rows, [("ERR", 6), ("LOADING", 1), ("MOVED", 1), ("SERVER_ERROR", 1)]);
    let both = [Run::Redis, Run::Second];
    for name in ["ERR", "LOADING", "MOVED", "SERVER_ERROR"] {
        assert_eq!(class(&s, name).latency, LatencyStats::of(&histogram(&both, name)), "{name}");
    }
    assert_eq!(class(&s, "ERR").share, 6.0 / 120.0);
    assert_eq!(class(&s, "ERR").example.as_deref(), Some(ERR_SHOWN), "the first run's first, in time order");
    assert_eq!(class(&s, "SERVER_ERROR").example.as_deref(), Some("SERVER_ERROR out of memory storing object"));
    assert!(
        s.warnings
            .iter()
            .any(|w| w.text
                == "9 server error replies (ERR: 6, LOADING: 1, MOVED: 1, SERVER_ERROR: 1): see Server replies"),
        "{:?}",
        s.warnings
    );
}
