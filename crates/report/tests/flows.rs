//! A scenario's flows in every output: a results file written as the engine writes one
//! (two groups, steps named `group/step`, flows that fail by a check, a capture and a request,
//! a skipped step, dropped arrivals), `summarize`d as `barrage report` would, then rendered.
//! The expected figures are counted by hand from the fixture below, and the latencies come
//! from a histogram of the same values recorded here: never from the code under test.

mod common;
use barrage_metrics::file::{GroupInfo, IntervalRecord, Mode, RunHeader, StepInfo};
use barrage_metrics::recorder::{new_histogram, FlowFailure};
use barrage_metrics::summary::{FlowSummary, LatencyStats, WarningKind};
use barrage_metrics::{testing, Outcome, Recorder, RunSummary, Sample};
use barrage_report::{Cell, Figure, Report, Slo, StudyRow, StudyTable};
use common::{cells, row, sheet, summary_of, us, write_run};
use hdrhistogram::Histogram;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const START_MS: u64 = 1_714_564_800_000;
const SECONDS: u64 = 4;

/// What a fixture run does: the writers' flows finished per second and asked per second,
/// and the flow arrivals it dropped in its last second.
#[derive(Clone, Copy)]
struct Plan {
    writers: u64,
    asked: f64,
    dropped: u64,
}

/// Ten writer flows a second asked and run, three of which fail (see [`interval`]), two
/// arrivals dropped.
const FAILING: Plan = Plan { writers: 10, asked: 10.0, dropped: 2 };
/// Six a second asked and run, none failing, none dropped.
const CLEAN: Plan = Plan { writers: 6, asked: 6.0, dropped: 0 };

/// Writer flow `k` of second `i`: `post` then `get`, its latency in µs.
fn writer_latency_us(i: u64, k: u64) -> u64 {
    20_000 + k * 1_000 + i * 100
}

/// Reader flows (one `list` step) take 5 ms.
const READER_US: u64 = 5_000;

fn sample(at_us: u64, latency_us: u64, status: u16) -> Sample {
    let us = Duration::from_micros;
    Sample {
        intended: us(at_us),
        started: us(at_us),
        ended: us(at_us + latency_us),
        phases: [None, None, None, None, Some(us(latency_us)), None],
        ..testing::sample(Duration::ZERO, Outcome::Status(status))
    }
}

/// One request of a step, recorded as the engine records it.
fn request(r: &mut Recorder, name: &[u8], method: &[u8], s: &Sample) {
    r.record_sent();
    r.record(s);
    r.names.record(name, s);
    r.methods.record(method, s);
}

/// Second `i`: `plan.writers` writer flows; with ten of them, flow 9 of second 1 fails its
/// capture on `post` (a 200) and skips `get`, flow 8 of second 2 fails a check on `get` (a
/// 200 where 201 was wanted), flow 7 of second 3 gets a 503 on `get`. Readers run five
/// flows a second in seconds 1 and 2 (their group runs from 1 s to 3 s).
fn interval(i: u64, plan: Plan) -> IntervalRecord {
    let mut r = Recorder::new();
    for k in 0..plan.writers {
        let at = i * 1_000_000 + k * 50_000;
        let latency = writer_latency_us(i, k);
        // A step's check or capture judges its answer before it is recorded.
        let post = Sample { rejected: (i, k) == (1, 9), ..sample(at, latency / 2, 201) };
        request(&mut r, b"writers/post", b"POST", &post);
        let failure = if post.rejected {
            r.names.mark(b"writers/post", FlowFailure::Capture, || "capture id found nothing".into());
            r.names.skip(b"writers/get");
            Some(FlowFailure::Capture)
        } else {
            let status = if (i, k) == (3, 7) { 503 } else { 200 };
            let get = Sample { rejected: (i, k) == (2, 8), ..sample(at + latency / 2, latency / 2, status) };
            request(&mut r, b"writers/get", b"GET", &get);
            match (i, k) {
                (2, 8) => {
                    r.names.mark(b"writers/get", FlowFailure::Check, || "check json failed".into());
                    Some(FlowFailure::Check)
                }
                (3, 7) => Some(FlowFailure::Request),
                _ => None,
            }
        };
        let skipped = u64::from(failure == Some(FlowFailure::Capture));
        r.flows.record_flow(b"writers", failure, Duration::from_micros(latency), skipped, Duration::ZERO);
    }
    if i == 1 || i == 2 {
        for k in 0..5 {
            let s = sample(i * 1_000_000 + k * 200_000, READER_US, 200);
            request(&mut r, b"readers/list", b"GET", &s);
            r.flows.record_flow(b"readers", None, Duration::from_micros(READER_US), 0, Duration::ZERO);
        }
    }
    if i == SECONDS - 1 {
        // As the engine counts a dropped flow: its group's, and its first step's, due with it.
        r.flows.record_dropped(b"writers", plan.dropped);
        r.names.record_dropped(b"writers/post", plan.dropped);
        r.methods.record_dropped(b"POST", plan.dropped);
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

/// The writers' flow latencies of a run of `plan`, recorded by hand.
fn writer_histogram(plan: Plan) -> Histogram<u64> {
    let mut h = new_histogram();
    for i in 0..SECONDS {
        for k in 0..plan.writers {
            h.record(writer_latency_us(i, k)).unwrap();
        }
    }
    h
}

/// The readers' flow latencies, ten of them, recorded by hand.
fn reader_histogram() -> Histogram<u64> {
    let mut h = new_histogram();
    h.record_n(READER_US, 10).unwrap();
    h
}

fn write(dir: &Path, name: &str, plan: Plan) -> PathBuf {
    let path = dir.join(name);
    let info = |name: &str, flow: &str, steps: &[&str], load: String| GroupInfo {
        name: name.into(),
        flow: flow.into(),
        steps: steps.iter().map(|s| s.to_string()).collect(),
        load,
        ..Default::default()
    };
    let header = RunHeader {
        barrage_version: "flows".into(),
        started_unix_ms: START_MS,
        host: name.into(),
        boot_id: "boot".into(),
        mode: Mode::Open,
        urls: vec!["http://albums.test/albums".into()],
        settings_json: "{}".into(),
        steps: vec![StepInfo { label: "scenario".into(), start_ms: 0 }],
        threads: 1,
        insecure: false,
        groups: vec![
            GroupInfo {
                rate: Some(plan.asked),
                ..info("writers", "album", &["post", "get"], format!("{} flows/s", plan.asked))
            },
            GroupInfo {
                workers: Some(2),
                start_ms: 1_000,
                end_ms: Some(3_000),
                ..info("readers", "browse", &["list"], "2 workers".into())
            },
        ],
        launch: Default::default(),
    };
    write_run(&path, &header, (0..SECONDS).map(|i| interval(i, plan)), 50_000)
}

/// The summary of one run of `plan` (or of several merged).
fn summary(plans: &[Plan]) -> (tempfile::TempDir, RunSummary) {
    summary_of(plans, write)
}

fn group<'a>(s: &'a RunSummary, name: &str) -> &'a FlowSummary {
    s.flows.iter().find(|g| g.name == name).unwrap_or_else(|| panic!("no group {name}: {:?}", s.flows))
}

#[test]
fn each_group_counts_its_flows_as_the_fixture_ran_them() {
    let (_dir, s) = summary(&[FAILING]);
    assert_eq!(s.flows.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["writers", "readers"], "header order");
    let w = group(&s, "writers");
    // 4 seconds × 10 flows; one capture, one check and one request failure; one get skipped.
    let counts = (w.flows, w.ok, w.failed, w.check_failed, w.capture_failed, w.request_failed, w.skipped_steps);
    assert_eq!(counts, (40, 37, 3, 1, 1, 1, 1));
    // The two flows due and never started count as failed.
    assert_eq!((w.dropped, w.success_ratio), (2, 37.0 / 42.0));
    assert_eq!(
        (w.flow.as_str(), w.steps.clone(), w.load.as_str()),
        ("album", vec!["post".into(), "get".into()], "10 flows/s")
    );
    assert_eq!((w.start_s, w.duration_s, w.flows_per_sec, w.asked_per_sec), (0.0, 4.0, Some(10.0), Some(10.0)));
    assert_eq!(w.latency, LatencyStats::of(&writer_histogram(FAILING)));

    let r = group(&s, "readers");
    assert_eq!((r.flows, r.ok, r.failed, r.skipped_steps, r.dropped), (10, 10, 0, 0, 0));
    // Its own span, 1 s to 3 s: 10 flows over 2 s.
    assert_eq!((r.start_s, r.duration_s, r.flows_per_sec, r.asked_per_sec), (1.0, 2.0, Some(5.0), None));
    assert_eq!(r.latency, LatencyStats::of(&reader_histogram()));

    let all = s.flows_total.as_ref().unwrap();
    assert_eq!((all.name.as_str(), all.flows, all.ok, all.failed, all.dropped), ("all", 50, 47, 3, 2));
    assert_eq!((all.start_s, all.duration_s, all.flows_per_sec, all.asked_per_sec), (0.0, 4.0, Some(12.5), None));
    let mut both = writer_histogram(FAILING);
    both.add(reader_histogram()).unwrap();
    assert_eq!(all.latency, LatencyStats::of(&both));

    // The steps: post sent 40 times (one failed its capture), get 39 (one skipped; a check
    // failed on a 200 and a 503), list 10.
    let step = |name: &str| s.by_name.iter().find(|g| g.name == name).unwrap().clone();
    let post = step("writers/post");
    assert_eq!((post.requests, post.failed, post.capture_failed, post.check_failed, post.skipped), (40, 1, 1, 0, 0));
    // The dropped flows' first step was due and never sent.
    assert_eq!((post.dropped, post.success_ratio), (2, 39.0 / 42.0));
    let get = step("writers/get");
    assert_eq!((get.requests, get.failed, get.capture_failed, get.check_failed, get.skipped), (39, 2, 0, 1, 1));
    let list = step("readers/list");
    assert_eq!((list.requests, list.failed, list.check_failed + list.capture_failed + list.skipped), (10, 0, 0));
}

#[test]
fn the_text_and_html_reports_show_the_flows_and_the_step_columns() {
    let (_dir, s) = summary(&[FAILING]);
    let text = barrage_report::text(&s, false);
    let w = writer_histogram(FAILING);
    let (mean, p50, p99, max) = (
        barrage_metrics::units::fmt_us(w.mean()),
        us(w.value_at_quantile(0.5)),
        us(w.value_at_quantile(0.99)),
        us(w.max()),
    );
    let heads = row(&text, "Flows");
    assert_eq!(heads[..4], ["Flows", "flow", "asked", "flows"], "{text}");
    let writers = row(&text, "writers ");
    let want = ["writers", "album", "10", "flows/s", "40", "10.00/s", "88.10%", "1", "1", "1", "1", "2", "0"];
    assert_eq!(writers[..want.len()], want, "{text}");
    assert_eq!(writers[want.len()..], [mean.as_str(), &p50, &p99, &max], "{text}");
    let readers = row(&text, "readers ");
    assert_eq!(
        readers[..12],
        ["readers", "browse", "2", "workers", "10", "5.00/s", "100.00%", "0", "0", "0", "0", "0"]
    );
    assert_eq!(row(&text, "all ")[..5], ["all", "album,", "browse", "10", "flows/s"], "the groups together, last");
    // The steps of flows get their columns in By name.
    let heads = row(&text, "By name");
    assert_eq!(heads[heads.len() - 5..], ["checks", "failed", "captures", "failed", "skipped"], "{text}");
    assert_eq!(row(&text, "writers/post").last_chunk::<3>().unwrap(), &["0", "1", "0"]);
    assert_eq!(row(&text, "writers/get").last_chunk::<3>().unwrap(), &["1", "0", "1"]);

    let page = barrage_report::html(&barrage_report::Page::Run(&s));
    let section = &page[page.find("<section id=\"table-flows\">").expect("a Flows table")..];
    let section = &section[..section.find("</section>").unwrap()];
    for cell in ["<td>writers</td>", "<td>album</td>", "<td class=\"num\">40</td>", "<td class=\"num\">88.10%</td>"] {
        assert!(section.contains(cell), "{cell} in {section}");
    }
    assert!(section.contains(&format!("<td class=\"num\">{p99}</td>")), "{section}");
    assert!(page.contains("<th scope=\"col\">checks failed</th>"), "the By name table has the flow columns");
    assert!(
        page.contains("flow success</span><span class=\"value\">90.38%"),
        "47 of 52 flows due, among the key figures"
    );
}

#[test]
fn the_step_columns_stay_out_of_a_run_without_flows() {
    let (_dir, mut s) = summary(&[CLEAN]);
    for g in &mut s.by_name {
        assert_eq!((g.check_failed, g.capture_failed, g.skipped), (0, 0, 0));
    }
    let text = barrage_report::text(&s, false);
    assert!(text.contains("By name") && !text.contains("checks failed"), "{text}");
    s.flows.clear();
    s.flows_total = None;
    let text = barrage_report::text(&s, false);
    assert!(!text.contains("Flows"), "{text}");
    assert!(!barrage_report::html(&barrage_report::Page::Run(&s)).contains("table-flows"));
    assert_eq!(
        Report::Run(&s).sheets().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["summary", "intervals", "by_name"]
    );
}

#[test]
fn csv_and_xlsx_carry_the_flows_and_the_step_columns() {
    let (dir, s) = summary(&[FAILING]);
    let flows = sheet(&s, "flows");
    assert_eq!(flows.rows.len(), 3, "writers, readers, all");
    let w = cells(&flows, "writers");
    let num = |n: f64| Cell::Number(n);
    for (column, want) in [
        ("flows", num(40.0)),
        ("ok", num(37.0)),
        ("failed", num(3.0)),
        ("check_failed", num(1.0)),
        ("capture_failed", num(1.0)),
        ("request_failed", num(1.0)),
        ("skipped_steps", num(1.0)),
        ("dropped", num(2.0)),
        ("flows_per_sec", num(10.0)),
        ("asked_per_sec", num(10.0)),
        ("duration_s", num(4.0)),
        ("p99_ms", num(writer_histogram(FAILING).value_at_quantile(0.99) as f64 / 1e3)),
        ("steps", Cell::from("post > get")),
        ("load", Cell::from("10 flows/s")),
    ] {
        assert_eq!(w[column], want, "{column}");
    }
    assert_eq!(cells(&flows, "readers")["asked_per_sec"], Cell::Empty, "workers ask no rate");
    let names = sheet(&s, "by_name");
    let get = cells(&names, "writers/get");
    assert_eq!((&get["requests"], &get["check_failed"], &get["skipped"]), (&num(39.0), &num(1.0), &num(1.0)));
    assert_eq!(cells(&names, "writers/post")["capture_failed"], num(1.0));
    let summary = cells(&sheet(&s, "summary"), "flows");
    assert_eq!(summary["value"], num(50.0));

    // --csv-dir writes each sheet as it is.
    let csv = barrage_report::to_csv(&flows);
    let line = csv.lines().find(|l| l.starts_with("writers,")).unwrap();
    assert!(
        line.starts_with("writers,album,post > get,10 flows/s,0,4,40,37,3,0.8809523809523809,1,1,1,1,2,0,10,10,"),
        "{line}"
    );

    // The workbook holds the same cells.
    use calamine::{open_workbook_auto, Data, Reader};
    let path = dir.path().join("run.xlsx");
    barrage_report::write_xlsx(&path, &Report::Run(&s).sheets(), false).unwrap();
    let mut book = open_workbook_auto(&path).unwrap();
    assert_eq!(book.sheet_names(), ["summary", "intervals", "by_name", "flows"]);
    let range = book.worksheet_range("flows").unwrap();
    let rows: Vec<Vec<Data>> = range.rows().map(<[Data]>::to_vec).collect();
    let col = |title: &str| rows[0].iter().position(|h| *h == Data::String(title.into())).unwrap();
    let writers = rows.iter().find(|r| r[0] == Data::String("writers".into())).unwrap();
    assert_eq!(writers[col("check_failed")], Data::Float(1.0));
    assert_eq!(writers[col("flows")], Data::Float(40.0));
    let range = book.worksheet_range("by_name").unwrap();
    let rows: Vec<Vec<Data>> = range.rows().map(<[Data]>::to_vec).collect();
    let skipped = rows[0].iter().position(|h| *h == Data::String("skipped".into())).unwrap();
    let get = rows.iter().find(|r| r[0] == Data::String("writers/get".into())).unwrap();
    assert_eq!(get[skipped], Data::Float(1.0));
}

type Mutation = (&'static str, fn(&mut Value));

fn validator(file: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema").join(file);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

fn assert_valid(v: &jsonschema::Validator, instance: &Value) {
    let errors: Vec<String> = v.iter_errors(instance).map(|e| format!("{}: {e}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn json_carries_the_flows_and_matches_the_schema() {
    let (_dir, s) = summary(&[FAILING]);
    let json: Value = serde_json::from_str(&barrage_report::json(&s)).unwrap();
    let schema = validator("summary.schema.json");
    assert_valid(&schema, &json);
    let w = &json["flows"][0];
    assert_eq!(
        (w["name"].as_str(), w["flows"].as_u64(), w["check_failed"].as_u64()),
        (Some("writers"), Some(40), Some(1))
    );
    assert_eq!(
        (w["capture_failed"].as_u64(), w["request_failed"].as_u64(), w["skipped_steps"].as_u64()),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!((w["flows_per_sec"].as_f64(), json["flows"][1]["asked_per_sec"].as_f64()), (Some(10.0), None));
    assert_eq!(json["flows_total"]["flows"], 50);
    let get = json["by_name"].as_array().unwrap().iter().find(|g| g["name"] == "writers/get").unwrap();
    assert_eq!((get["check_failed"].as_u64(), get["skipped"].as_u64()), (Some(1), Some(1)));
    // It reads back.
    let back: RunSummary = serde_json::from_value(json.clone()).unwrap();
    assert_eq!((back.flows.len(), back.flows[0].dropped), (2, 2));

    // The schema holds the new fields to their shape.
    let mutations: [Mutation; 4] = [
        ("a flow without its checks", |v| {
            v["flows"][0].as_object_mut().unwrap().remove("check_failed");
        }),
        ("a negative skip count", |v| v["by_name"][0]["skipped"] = (-1).into()),
        ("flows_total as a list", |v| v["flows_total"] = Value::Array(vec![])),
        ("an unknown flow field", |v| v["flows"][0]["retried"] = 1.into()),
    ];
    for (what, mutate) in mutations {
        let mut bad = json.clone();
        mutate(&mut bad);
        assert!(!schema.is_valid(&bad), "the schema accepts {what}");
    }
}

/// Two runs side by side merge into one whose flows are the sums, counted here by hand.
#[test]
fn merged_runs_add_their_flows_exactly() {
    let (_dir, s) = summary(&[FAILING, CLEAN]);
    let w = group(&s, "writers");
    // 40 + 24 flows; the failures and drops are the failing run's alone.
    let counts =
        (w.flows, w.ok, w.failed, w.check_failed, w.capture_failed, w.request_failed, w.skipped_steps, w.dropped);
    assert_eq!(counts, (40 + 24, 37 + 24, 3, 1, 1, 1, 1, 2));
    assert_eq!(
        (w.load.as_str(), w.asked_per_sec, w.flows_per_sec, w.duration_s),
        ("16 flows/s", Some(16.0), Some(16.0), 4.0)
    );
    let mut both = writer_histogram(FAILING);
    both.add(writer_histogram(CLEAN)).unwrap();
    assert_eq!(w.latency, LatencyStats::of(&both));
    let r = group(&s, "readers");
    assert_eq!((r.flows, r.load.as_str(), r.duration_s, r.flows_per_sec), (20, "4 workers", 2.0, Some(10.0)));
    let all = s.flows_total.as_ref().unwrap();
    assert_eq!((all.flows, all.ok, all.failed, all.dropped), (64 + 20, 61 + 20, 3, 2));
    let get = s.by_name.iter().find(|g| g.name == "writers/get").unwrap();
    assert_eq!((get.requests, get.failed, get.check_failed, get.skipped), (39 + 24, 2, 1, 1));
}

#[test]
fn failed_flows_skipped_steps_and_a_short_rate_are_warned_about() {
    let (_dir, s) = summary(&[FAILING]);
    let warned = |kind| s.warnings.iter().find(|w| w.kind == kind).map(|w| w.text.clone());
    assert_eq!(
        warned(WarningKind::FlowsFailed).as_deref(),
        Some("group writers: 3 of 40 flow(s) failed (1 check failed, 1 capture failed, 1 request failed), skipping 1 later step(s) that were never sent")
    );
    assert_eq!(
        warned(WarningKind::FlowsDropped).as_deref(),
        Some("group writers: 2 flow arrival(s) were due but never started (every slot stayed busy)")
    );
    assert!(!s.warnings.iter().any(|w| w.text.contains("readers")), "{:?}", s.warnings);
    let text = barrage_report::text(&s, false);
    assert!(text.contains("warning: group writers: 3 of 40 flow(s) failed"), "{text}");

    // All well: no word about flows.
    let (_dir, clean) = summary(&[CLEAN]);
    assert!(!clean.warnings.iter().any(|w| w.text.contains("group")), "{:?}", clean.warnings);

    // 40 flows in 4 s where 12/s were asked: 83.3%.
    let (_dir, short) = summary(&[Plan { asked: 12.0, dropped: 0, ..FAILING }]);
    let line =
        short.warnings.iter().find(|w| w.kind == WarningKind::FlowRateShort).expect("a short rate is warned about");
    assert_eq!(
        line.text,
        "group writers: 10.00 flows/s finished of the 12.00 flows/s asked (83.3%): the group did not run the load it was asked"
    );
    // Within 1% of the rate asked is the rate asked.
    let (_dir, close) = summary(&[Plan { asked: 6.06, ..CLEAN }]);
    assert!(close.warnings.iter().all(|w| w.kind != WarningKind::FlowRateShort), "6/s of 6.06/s: {:?}", close.warnings);
}

#[test]
fn a_run_whose_flows_mostly_failed_is_not_a_result() {
    let (_dir, mut s) = summary(&[FAILING]);
    assert_eq!(barrage_report::study::run_verdict(&s), "ok", "37 of 40 succeeded");
    // Every request answered, but most flows failed a check: built on failure all the same.
    let all = s.flows_total.as_mut().unwrap();
    (all.ok, all.failed, all.check_failed, all.request_failed) = (10, 40, 35, 5);
    all.success_ratio = 0.2;
    assert_eq!(barrage_report::study::run_verdict(&s), "FAILED: only 20.0% of flows succeeded (mostly check failed)");
    let all = s.flows_total.as_mut().unwrap();
    (all.ok, all.success_ratio) = (0, 0.0);
    assert_eq!(barrage_report::study::run_verdict(&s), "FAILED: all 50 flows failed (mostly check failed)");
    assert!(barrage_report::text(&s, false).contains("\nFAILED: all 50 flows failed"));
}

#[test]
fn flow_objectives_pass_and_fail_on_known_values() {
    let (_dir, s) = summary(&[FAILING]);
    let w = writer_histogram(FAILING);
    let p99 = w.value_at_quantile(0.99);
    let above = format!("flow:writers:p99<{}us", p99 + 1);
    let at = format!("flow:writers:p99<{p99}us");
    let table = [
        (above.as_str(), true, us(p99)),
        (at.as_str(), false, us(p99)),
        // Of the 42 flows due: 2 never started.
        ("flow:writers:success>=99%", false, "88.095%".into()),
        ("flow:writers:success>=88%", true, "88.095%".into()),
        ("flow:readers:success>=99%", true, "100.000%".into()),
        ("flow:readers:p50<6ms", true, us(reader_histogram().value_at_quantile(0.5))),
        ("flow:readers:throughput>=5/s", true, "5.0/s".into()),
        ("flow:writers:throughput>=10/s", false, format!("{:.1}/s", 37.0 / 4.0)),
        ("flow:writers:flows>=10/s", true, "10.0/s".into()),
        ("flow:writers:errors<=5", true, "5".into()),
        ("flow:nobody:p99<1s", false, "no flow group named 'nobody'".into()),
        ("flow_success>=90%", true, "90.385%".into()),
        ("flow_p99<1s", true, us(p99)),
        // Steps are requests by name, as before.
        ("writers/get:errors<2", false, "2".into()),
    ];
    for (text, pass, actual) in table {
        let r = text.parse::<Slo>().unwrap_or_else(|e| panic!("{e}")).check(&s);
        assert_eq!((r.pass, r.actual.as_str()), (pass, actual.as_str()), "{text}");
    }
    let mut plain = s.clone();
    (plain.flows, plain.flows_total) = (Vec::new(), None);
    let r = "flow_p99<1s".parse::<Slo>().unwrap().check(&plain);
    assert_eq!((r.pass, r.actual.as_str()), (false, "no flows in this run"));
    // `flow:` with a single colon is still a name: requests named "flow".
    let r = "flow:p99<1s".parse::<Slo>().unwrap().check(&s);
    assert_eq!(r.actual, "no requests named 'flow'");
}

#[test]
fn malformed_flow_objectives_name_the_problem() {
    let table = [
        ("flow::p99<1s", "no group after 'flow:'"),
        ("flow:writers:hit_ratio>50%", "the hit ratio is not kept per flow group"),
        ("flow:writers:flow_p99<1s", "in flow:GROUP: write p99, not flow_p99"),
        ("get:flow_success>99%", "flow_success is a figure of flows, not of the requests named 'get'"),
        ("flow:writers:p98<1s", "unknown metric 'p98'"),
        ("flow:writers:success>=99", "'99' is not a percentage"),
    ];
    for (text, want) in table {
        let e = text.parse::<Slo>().unwrap_err();
        assert!(e.starts_with(&format!("invalid --slo '{text}'")) && e.contains(want), "{text}: {e}");
    }
}

/// An experiment over scenario runs: its table shows the flow figures, its comparisons
/// compare them, and both match their schemas.
#[test]
fn study_tables_and_comparisons_carry_the_flow_figures() {
    let (_a, failing) = summary(&[FAILING]);
    let (_b, clean) = summary(&[CLEAN]);
    let mut t = StudyTable::new("matrix", &["case", "workers"]);
    t.spread = true;
    t.rows.push(StudyRow::new(vec!["TC0".into(), "10/s".into()], vec![failing.clone(), failing.clone()]));
    t.rows.push(StudyRow::new(vec!["TC1".into(), "6/s".into()], vec![clean.clone()]));
    t.planned = 2;
    let text = t.to_text();
    let heads = row(&text, "case");
    assert!(heads.windows(2).any(|w| w == ["flow", "p99"]) && heads.contains(&"flows/s"), "{text}");
    let tc0 = row(&text, "TC0");
    assert!(tc0.contains(&"90.38%") && tc0.contains(&"12.5/s"), "{text}");
    let all = |s: &RunSummary| s.flows_total.clone().unwrap();
    let sheet = t.sheet();
    let tc1 = cells(&sheet, "TC1");
    assert_eq!(tc1["flow_success_percent"], Cell::Number(100.0));
    assert_eq!(tc1["flow_p99_ms"], Cell::Number(all(&clean).latency.p99_us as f64 / 1e3));
    assert_eq!(tc1["flows_per_sec"], Cell::Number(all(&clean).flows_per_sec.unwrap()));
    assert_eq!(Figure::FlowP50.of(&failing), Some(all(&failing).latency.p50_us as f64));

    let pooled = |runs: Vec<RunSummary>| barrage_report::compare::pool(runs);
    let runs = [
        ("TC0".to_string(), pooled(vec![failing.clone(), failing.clone()])),
        ("TC1".to_string(), pooled(vec![clean.clone()])),
    ];
    let comparison = barrage_report::compare::compare(&runs, 0.05);
    let flow_success = comparison.rows.iter().find(|r| r.metric == Figure::FlowSuccess).expect("flow rows");
    assert_eq!((flow_success.baseline, flow_success.changes[0].value), (47.0 / 52.0, 1.0));
    let e = barrage_report::ExperimentReport {
        name: "albums".into(),
        repeats: 2,
        compare: vec!["workers".into()],
        table: t,
        comparisons: vec![barrage_report::compare::CaseComparison {
            factor: "workers".into(),
            from: "10/s".into(),
            to: "6/s".into(),
            others: String::new(),
            from_case: "TC0".into(),
            to_case: "TC1".into(),
            phase: None,
            comparison,
        }],
    };
    let report = Report::Experiment(&e);
    let text = report.text(false);
    assert!(text.contains("flow_success") && text.contains("flow_p99"), "the comparisons compare the flows: {text}");
    let sheets = report.sheets();
    assert!(sheets[1].header.contains(&"flow_p99_change_percent".to_string()), "{:?}", sheets[1].header);
    let json: Value = serde_json::from_str(&report.json()).unwrap();
    assert_valid(&validator("study.schema.json"), &json);
    assert_valid(&validator("comparison.schema.json"), &json["comparisons"][0]["comparison"]);
    let matrix = &json["matrix"];
    assert_eq!(matrix[1]["flow_success_ratio"], 1.0);
    assert_eq!(matrix[0]["flow_p99_us"].as_f64(), Some(all(&failing).latency.p99_us as f64));
    // A study without flows has null flow figures and no flow columns.
    let mut plain = StudyTable::new("sweep", &["level"]);
    let mut s = clean.clone();
    (s.flows, s.flows_total) = (Vec::new(), None);
    plain.rows.push(StudyRow::new(vec!["1".into()], vec![s]));
    assert!(!plain.to_text().contains("flow"));
    assert!(plain.json_rows()[0]["flow_p99_us"].is_null());
    // `--fail-if` takes the flow figures too.
    assert!("flow_p99>+10%".parse::<barrage_report::compare::FailIf>().is_ok());
}
