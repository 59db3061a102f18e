//! The study modes' JSON (`sweep`, `capacity`, `experiment`, `testbed bench`) against
//! `schema/study.schema.json`, and `compare`'s (two runs, and experiment directories case by
//! case) against `schema/comparison.schema.json`.
//!
//! The tables are built from hand-made summaries that exercise every optional part of a row:
//! watched processes, a cache, phases, repeats with spread, a background load, objectives met
//! and missed, a row built on failure, a row without a finished run, a partial table. Then
//! the schemas must reject documents a little wrong, so that they are not too loose to check
//! anything.

use barrage_metrics::summary::{CacheSummary, ErrorStat, IntervalRow, LatencyStats, PhaseStats};
use barrage_metrics::{ProcessSummary, RunSummary};
use barrage_report::compare::{compare, pool, CaseComparison};
use barrage_report::reports::comparison_json;
use barrage_report::{CapacityReport, ExperimentReport, Report, Slo, SloResult, StudyRow, StudyTable};
use jsonschema::Validator;
use serde_json::{json, Value};

fn study_schema() -> Value {
    let text = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/study.schema.json"));
    serde_json::from_str(text).expect("the study schema is JSON")
}

fn comparison_schema() -> Value {
    let text = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/comparison.schema.json"));
    serde_json::from_str(text).expect("the comparison schema is JSON")
}

fn validator(schema: &Value) -> Validator {
    jsonschema::meta::validate(schema).expect("the schema is a valid JSON Schema");
    jsonschema::draft202012::new(schema).expect("the schema compiles")
}

/// Parses `json` and checks it against `schema`. On failure, the errors are those of the
/// branch of the schema's `oneOf` named `branch` alone, which name the field (a `oneOf`'s own
/// error only says no branch matched).
fn valid(schema: &Value, branch: &str, json: &str) -> Value {
    let instance: Value = serde_json::from_str(json).expect("the report is JSON");
    if validator(schema).is_valid(&instance) {
        return instance;
    }
    let mut narrowed = schema.clone();
    narrowed.as_object_mut().unwrap().remove("oneOf");
    narrowed["$ref"] = json!(format!("#/$defs/{branch}"));
    let errors: Vec<String> =
        validator(&narrowed).iter_errors(&instance).map(|e| format!("{}: {e}", e.instance_path)).collect();
    panic!("{branch} does not match the schema: {errors:#?}\n{instance:#}");
}

type Mutation = (&'static str, fn(&mut Value));

/// Every mutation of `good` is rejected.
fn rejects(schema: &Value, good: &Value, mutations: &[Mutation]) {
    let v = validator(schema);
    assert!(v.is_valid(good), "the unmutated document is valid");
    for (what, mutate) in mutations {
        let mut bad = good.clone();
        mutate(&mut bad);
        assert_ne!(&bad, good, "{what}: the mutation changes nothing");
        assert!(!v.is_valid(&bad), "the schema accepts {what}");
    }
}

/// The first row of `v[rows]` for which `pick` holds.
fn row<'a>(v: &'a mut Value, rows: &str, pick: fn(&Value) -> bool) -> &'a mut Value {
    v[rows].as_array_mut().expect("rows").iter_mut().find(|r| pick(r)).expect("a row to mutate")
}

/// A run of `seconds` one-second intervals: `rate` requests per second of which a share
/// `success` succeeds, median latency `p50_us`, with phases, two watched processes (nginx
/// and barrage itself) and per-interval samples for `compare`'s test.
fn run(rate: f64, success: f64, p50_us: u64, seconds: u64) -> RunSummary {
    let total = (rate * seconds as f64) as u64;
    let ok = (total as f64 * success) as u64;
    let mut s = RunSummary {
        version: 1,
        mode: barrage_metrics::file::Mode::Open,
        urls: vec!["http://127.0.0.1:8080/".into()],
        rate_per_sec: Some(rate),
        throughput_per_sec: Some(ok as f64 / seconds as f64),
        success_ratio: if total > 0 { ok as f64 / total as f64 } else { 0.0 },
        ..Default::default()
    };
    s.requests.total = total;
    s.requests.sent = total;
    s.requests.ok = ok;
    s.duration.total_s = seconds as f64;
    s.duration.attack_s = seconds as f64;
    s.latency.corrected = LatencyStats {
        count: total,
        min_us: p50_us / 4,
        mean_us: p50_us as f64 * 1.3,
        p50_us,
        p90_us: p50_us * 2,
        p95_us: p50_us * 3,
        p99_us: p50_us * 5,
        p999_us: p50_us * 9,
        max_us: p50_us * 20,
    };
    s.latency.service = s.latency.corrected.clone();
    let phase = |count, mean_us: f64| PhaseStats {
        count,
        mean_us,
        p50_us: mean_us as u64,
        p99_us: 3 * mean_us as u64,
        total_us: mean_us * count as f64,
        per_request_us: mean_us * count as f64 / total.max(1) as f64,
    };
    s.phases.insert("dns".into(), phase(0, 0.0));
    s.phases.insert("connect".into(), phase(16, 310.5));
    s.phases.insert("tls".into(), phase(16, 1_250.0));
    s.phases.insert("send".into(), phase(total, 21.0));
    s.phases.insert("wait".into(), phase(ok, p50_us as f64 * 0.9));
    if ok < total {
        s.errors.push(ErrorStat {
            kind: "tls".into(),
            count: total - ok,
            example: "invalid peer certificate: UnknownIssuer".into(),
        });
    }
    s.processes = vec![
        ProcessSummary {
            name: "nginx".into(),
            samples: seconds,
            cpu_mean_percent: rate / 50.0,
            cpu_max_percent: rate / 40.0,
            rss_mean_kib: 20_000.0,
            rss_max_kib: 20_480 + rate as u64,
            threads_max: 2,
            fds_max: 40,
            ..Default::default()
        },
        ProcessSummary {
            name: "barrage".into(),
            samples: seconds,
            cpu_mean_percent: rate / 200.0,
            rss_max_kib: 9_000,
            ..Default::default()
        },
    ];
    s.intervals = (0..seconds)
        .map(|i| {
            let jitter = 1.0 + (i % 4) as f64 * 0.02;
            IntervalRow {
                second: i,
                length_s: 1.0,
                sent: rate as u64,
                ok: (rate * success) as u64,
                errors: rate as u64 - (rate * success) as u64,
                throughput_per_sec: rate * success * jitter,
                p50_us: (p50_us as f64 * jitter) as u64,
                p90_us: (p50_us as f64 * 2.0 * jitter) as u64,
                p99_us: (p50_us as f64 * 5.0 * jitter) as u64,
                ..Default::default()
            }
        })
        .collect();
    s
}

/// `s` behind a cache that answered a share `hit` of the responses.
fn cached(mut s: RunSummary, hit: f64) -> RunSummary {
    let classified = s.requests.ok;
    let hits = (classified as f64 * hit) as u64;
    s.cache = Some(CacheSummary {
        classified,
        statuses: [("hit".to_string(), hits), ("miss".to_string(), classified - hits)].into(),
        hit_ratio: hit,
        byte_hit_ratio: hit * 0.8,
        ..Default::default()
    });
    s
}

fn slos() -> Vec<Slo> {
    ["p99<20ms", "success>=99%", "hit_ratio>=50%"].iter().map(|s| s.parse().unwrap()).collect()
}

fn checked(s: &RunSummary) -> Vec<SloResult> {
    slos().iter().map(|slo| slo.check(s)).collect()
}

/// `barrage sweep --rate 100,200,400 --phases fill,measure --slo …` through a cache,
/// interrupted during the last level: 400/s fill collapsed (30% succeeded), 400/s measure
/// never ran.
fn sweep() -> StudyTable {
    let mut t = StudyTable::new("sweep", &["level", "phase"]);
    t.offered_column = Some("offered".into());
    let levels = [(100.0, 1.0, 1_000), (200.0, 0.998, 4_500), (400.0, 0.3, 90_000)];
    for (rate, success, p50) in levels {
        for (phase, hit) in [("fill", 0.1), ("measure", 0.9)] {
            if rate == 400.0 && phase == "measure" {
                continue;
            }
            let s = cached(run(rate, success, p50, 10), hit);
            let slos = checked(&s);
            let row = StudyRow::new(vec![format!("{rate}/s"), phase.into()], vec![s]);
            t.rows.push(StudyRow { offered: Some(rate), slos, ..row });
        }
    }
    t.planned = 6;
    t.partial = true;
    t
}

/// A concurrency sweep without phases, objectives, processes or cache: the smallest rows.
fn plain_sweep() -> StudyTable {
    let mut t = StudyTable::new("sweep", &["level"]);
    t.offered_column = Some("offered".into());
    for workers in [8u32, 16, 32] {
        let mut s = run(f64::from(workers) * 50.0, 1.0, 2_000, 5);
        s.processes.clear();
        s.phases.clear();
        let row = StudyRow::new(vec![format!("{workers} workers")], vec![s]);
        t.rows.push(StudyRow { offered: Some(f64::from(workers)), ..row });
    }
    t.planned = 3;
    t
}

/// Phases without levels (a `Sweep` with no levels): no offered load.
fn phases_only() -> StudyTable {
    let mut t = StudyTable::new("phases", &["phase"]);
    for phase in ["fill", "measure"] {
        t.rows.push(StudyRow::new(vec![phase.into()], vec![cached(run(100.0, 1.0, 1_200, 10), 0.5)]));
    }
    t.planned = 2;
    t
}

/// `barrage capacity --slo p99<20ms --slo success>=99%`: the ramp, then the bisection, a
/// probe again (the one before missed within its resolution) and the hold.
fn capacity() -> CapacityReport {
    let mut t = StudyTable::new("capacity", &["probe", "rate", "stage"]);
    t.offered_column = Some("rate_per_sec".into());
    let probes = [
        (500.0, 1.0, 1_000, "ramp"),
        (1000.0, 1.0, 1_500, "ramp"),
        (2000.0, 0.2, 400_000, "ramp"),
        (1500.0, 0.999, 6_000, "search"),
        (1250.0, 0.985, 2_000, "search"),
        (1250.0, 1.0, 2_000, "again"),
        (1250.0, 1.0, 2_000, "hold"),
    ];
    let objectives: Vec<Slo> = ["p99<20ms", "success>=99%"].iter().map(|s| s.parse().unwrap()).collect();
    for (i, (rate, success, p50, stage)) in probes.into_iter().enumerate() {
        let s = run(rate, success, p50, 10);
        let slos = objectives.iter().map(|o| o.check(&s)).collect();
        let row = StudyRow::new(vec![(i + 1).to_string(), format!("{rate:.0}/s"), stage.into()], vec![s]);
        t.rows.push(StudyRow { offered: Some(rate), slos, ..row });
    }
    t.planned = t.rows.len();
    CapacityReport {
        table: t,
        capacity: Some(1250.0),
        failed_at: Some(1500.0),
        interval: (1250.0, Some(1500.0)),
        verified: Some(true),
        stopped: "the target collapsed at 2000/s (under half the offered rate succeeded); bracketed to within 20%; held 1250/s for a step: met"
            .into(),
        knee: Some(1500.0),
        generator_limited: vec!["barrage used 97% of a core at 2000/s".into()],
        slo_ms: vec![("p99<20ms".into(), 20.0)],
    }
}

/// A capacity search interrupted during its first probe: nothing found.
fn interrupted_capacity() -> CapacityReport {
    let mut t = StudyTable::new("capacity", &["probe", "rate", "stage"]);
    t.offered_column = Some("rate_per_sec".into());
    let mut s = run(500.0, 1.0, 1_000, 3);
    s.interrupted = true;
    let slos = vec!["p99<20ms".parse::<Slo>().unwrap().check(&s)];
    t.rows.push(StudyRow {
        offered: Some(500.0),
        slos,
        ..StudyRow::new(vec!["1".into(), "500/s".into(), "ramp".into()], vec![s])
    });
    t.planned = 1;
    t.partial = true;
    CapacityReport {
        table: t,
        stopped: "interrupted: the capacity is from the probes that finished".into(),
        ..Default::default()
    }
}

/// An experiment of server × tls, 3 repeats, a fill and a measure phase per case, a
/// background load on the haproxy cases; interrupted before TC3's measure phase ran.
fn experiment() -> ExperimentReport {
    let mut t = StudyTable::new("matrix", &["case", "server", "tls", "phase"]);
    t.spread = true;
    let cases = [("TC0", "nginx", "off", 1_000), ("TC1", "nginx", "on", 1_400), ("TC2", "haproxy", "off", 900)];
    let cases = cases.into_iter().chain([("TC3", "haproxy", "on", 1_300)]);
    let objective: Slo = "p99<6ms".parse().unwrap();
    let mut pooled = Vec::new();
    for (case, server, tls, p50) in cases {
        for phase in ["fill", "measure"] {
            let repeats: Vec<RunSummary> = if case == "TC3" && phase == "measure" {
                Vec::new()
            } else {
                (0..3u64)
                    .map(|k| cached(run(800.0 + 40.0 * k as f64, 1.0, p50 + 150 * k, 10), 0.6 + 0.1 * k as f64))
                    .collect()
            };
            let slos = repeats
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let r = objective.check(s);
                    SloResult { slo: format!("{case} {} repeat {}", r.slo, i + 1), ..r }
                })
                .collect();
            let background = if server == "haproxy" && !repeats.is_empty() {
                (0..3).map(|k| run(200.0 + f64::from(k), 1.0, 800, 10)).collect()
            } else {
                Vec::new()
            };
            if phase == "measure" && !repeats.is_empty() {
                pooled.push((case, pool(repeats.clone())));
            }
            let mut repeats = repeats;
            if case == "TC1" && phase == "measure" {
                // An `at` event in each repeat's measured run, the second failing.
                for (k, s) in repeats.iter_mut().enumerate() {
                    s.events = vec![barrage_metrics::events::EventSummary {
                        command: "barrage testbed stop origin-2".into(),
                        at_s: 1.0,
                        failed: k == 1,
                        ..Default::default()
                    }];
                }
            }
            let labels = vec![case.into(), server.into(), tls.into(), phase.into()];
            t.rows.push(StudyRow { labels, runs: repeats, background, slos, offered: None });
        }
    }
    t.planned = t.rows.len();
    t.partial = true;
    let pair = |a: usize, b: usize| {
        let runs = [(pooled[a].0.to_string(), pooled[a].1.clone()), (pooled[b].0.to_string(), pooled[b].1.clone())];
        compare(&runs, 0.05)
    };
    let comparisons = vec![
        CaseComparison {
            factor: "tls".into(),
            from: "off".into(),
            to: "on".into(),
            others: "server=nginx".into(),
            from_case: "TC0".into(),
            to_case: "TC1".into(),
            phase: Some("measure".into()),
            comparison: pair(0, 1),
        },
        CaseComparison {
            factor: "server".into(),
            from: "nginx".into(),
            to: "haproxy".into(),
            others: "tls=off".into(),
            from_case: "TC0".into(),
            to_case: "TC2".into(),
            phase: None,
            comparison: pair(0, 2),
        },
    ];
    ExperimentReport {
        name: "tls-cost".into(),
        repeats: 3,
        compare: vec!["tls".into(), "server".into()],
        table: t,
        comparisons,
    }
}

/// `testbed bench`: every front over HTTP, then HTTPS; squid's certificate is refused.
fn bench() -> StudyTable {
    let mut t = StudyTable::new("bench", &["front"]);
    let fronts = [("nginx", "http", 1.0), ("haproxy", "http", 1.0), ("varnish", "http", 1.0), ("squid", "https", 0.0)];
    for (front, scheme, success) in fronts {
        let mut s = run(1000.0, success, 800, 10);
        s.processes[0].name = front.into();
        if front == "varnish" {
            s = cached(s, 0.95);
        }
        t.rows.push(StudyRow::new(vec![format!("{front} {scheme}")], vec![s]));
    }
    t.planned = t.rows.len();
    t
}

/// Runs for `compare`: a baseline, a slower one, and one a little faster.
fn compared() -> Vec<(String, RunSummary)> {
    let mut after = run(1000.0, 0.99, 2_000, 20);
    after.errors[0].kind = "http".into();
    vec![
        ("before.brg".into(), run(1000.0, 1.0, 1_000, 20)),
        ("after.brg".into(), after),
        ("tuned".into(), run(1050.0, 1.0, 980, 20)),
    ]
}

#[test]
fn study_json_matches_the_schema() {
    let schema = study_schema();

    let table = sweep();
    let v = valid(&schema, "sweep", &Report::Sweep { table: &table, slo_ms: &[] }.json());
    // The fixture exercises the optional parts of a row.
    let rows = v["levels"].as_array().unwrap();
    assert_eq!((v["kind"].as_str(), v["partial"].as_bool(), rows.len()), (Some("sweep"), Some(true), 5));
    assert_eq!(rows[0]["processes"]["nginx"]["peak_rss_kib"], 20_580);
    assert!(rows[0]["processes"]["barrage"]["cpu_mean_percent"].is_number());
    assert!(rows[0]["hit_ratio"].is_number() && rows[0]["byte_hit_ratio"].is_number());
    assert!(rows[0]["phase_mean_us"]["connect"].is_number() && rows[0]["phase_mean_us"].get("dns").is_none());
    let verdicts: Vec<&str> = rows.iter().map(|r| r["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts[1], "ok");
    for v in [verdicts[0], verdicts[2], verdicts[3]] {
        assert!(v.starts_with("SLO missed: ") && v.contains("(actual "), "names the objective: {v}");
    }
    assert_eq!(verdicts[4], "FAILED: only 30.0% succeeded (mostly tls: invalid peer certificate: UnknownIssuer)");
    assert_eq!(rows[4]["failed"], "only 30.0% succeeded (mostly tls: invalid peer certificate: UnknownIssuer)");

    for table in [plain_sweep(), phases_only()] {
        let v = valid(&schema, "sweep", &Report::Sweep { table: &table, slo_ms: &[] }.json());
        assert!(v["levels"].as_array().unwrap().iter().all(|r| r["verdict"] == "ok"));
    }

    let c = capacity();
    let v = valid(&schema, "capacity", &Report::Capacity(&c).json());
    assert_eq!((v["capacity_per_sec"].as_f64(), v["probes"][2]["offered"].as_f64()), (Some(1250.0), Some(2000.0)));
    assert!(v["probes"][2]["failed"].is_string());
    assert_eq!(
        (v["interval_per_sec"]["low"].as_f64(), v["interval_per_sec"]["high"].as_f64()),
        (Some(1250.0), Some(1500.0))
    );
    assert_eq!((v["verified"].as_bool(), v["probes"][5]["labels"]["stage"].as_str()), (Some(true), Some("again")));
    let c = interrupted_capacity();
    let v = valid(&schema, "capacity", &Report::Capacity(&c).json());
    assert!(v["capacity_per_sec"].is_null() && v["knee_per_sec"].is_null() && v["partial"] == true);
    assert!(v["verified"].is_null() && v["interval_per_sec"]["high"].is_null());

    let e = experiment();
    let v = valid(&schema, "experiment", &Report::Experiment(&e).json());
    let matrix = v["matrix"].as_array().unwrap();
    assert_eq!((matrix.len(), v["repeats"].as_u64()), (8, Some(3)));
    assert_eq!(matrix[0]["runs"], 3);
    assert!(matrix[0]["sd"]["p99_us"].as_f64().unwrap() > 0.0 && matrix[0]["sd"]["hit_ratio"].is_number());
    assert!(matrix[4]["background_throughput_per_sec"].is_number());
    assert!(matrix[0].get("background_throughput_per_sec").is_none());
    // A case's `at` events, run by run; a row without any has none.
    let events = matrix[3]["events"].as_array().unwrap();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!((events[1]["run"].as_u64(), events[1]["failed"].as_bool()), (Some(2), Some(true)));
    assert!(matrix[0].get("events").is_none());
    // The interruption came before it: not run, which is not a failure.
    let never_ran = &matrix[7];
    assert_eq!(
        (&never_ran["runs"], &never_ran["p99_us"], &never_ran["failed"], &never_ran["verdict"]),
        (&json!(0), &Value::Null, &Value::Null, &json!("no run finished: interrupted"))
    );
    assert!(never_ran.get("sd").is_none());
    let comparisons = v["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 2);
    let p_value = |metric: &str| -> Value {
        let metrics = comparisons[0]["comparison"]["metrics"].as_array().unwrap();
        metrics.iter().find(|m| m["metric"] == metric).unwrap()["runs"][0]["p_value"].clone()
    };
    assert!(p_value("p99").is_number() && p_value("mean").is_null(), "{}", comparisons[0]);
    // Each pair's comparison is `compare`'s own shape.
    for c in comparisons {
        let compiled = jsonschema::validator_for(&comparison_schema()).unwrap();
        assert!(compiled.is_valid(&c["comparison"]), "{c}");
    }

    let b = bench();
    let v = valid(&schema, "bench", &Report::Bench(&b).json());
    assert_eq!(
        v["fronts"][3]["verdict"],
        "FAILED: all 10000 requests failed (mostly tls: invalid peer certificate: UnknownIssuer)"
    );
    assert!(v["fronts"][2]["hit_ratio"].is_number() && v["fronts"][0]["hit_ratio"].is_null());
}

/// A row's keys are the schema's properties and the table's label columns: nothing the
/// renderer writes slips through as a "label".
#[test]
fn row_keys_are_declared_or_labels() {
    let schema = study_schema();
    let declared: Vec<&String> = schema["$defs"]["row"]["properties"].as_object().unwrap().keys().collect();
    let (c, e) = (capacity(), experiment());
    let (s, b) = (sweep(), bench());
    let reports = [
        (Report::Sweep { table: &s, slo_ms: &[] }, "levels"),
        (Report::Capacity(&c), "probes"),
        (Report::Experiment(&e), "matrix"),
        (Report::Bench(&b), "fronts"),
    ];
    for (report, key) in reports {
        let labels = &report.table().unwrap().label_columns;
        let v: Value = serde_json::from_str(&report.json()).unwrap();
        for row in v[key].as_array().unwrap() {
            for k in row.as_object().unwrap().keys() {
                assert!(declared.contains(&k) || labels.contains(k), "{key}: '{k}' is neither declared nor a label");
            }
        }
    }
}

#[test]
fn study_schema_rejects_what_it_should() {
    let schema = study_schema();
    let table = sweep();
    let good: Value = serde_json::from_str(&Report::Sweep { table: &table, slo_ms: &[] }.json()).unwrap();
    rejects(
        &schema,
        &good,
        &[
            ("p99_us as a string", |v| v["levels"][0]["p99_us"] = "5000".into()),
            ("a row without verdict", |v| {
                v["levels"][0].as_object_mut().unwrap().remove("verdict");
            }),
            ("a row without processes", |v| {
                v["levels"][0].as_object_mut().unwrap().remove("processes");
            }),
            ("an unknown kind", |v| v["kind"] = "matrix".into()),
            ("no kind", |v| {
                v.as_object_mut().unwrap().remove("kind");
            }),
            ("another version", |v| v["version"] = 2.into()),
            ("an unknown top-level field", |v| v["plan"] = 6.into()),
            ("partial as a string", |v| v["partial"] = "yes".into()),
            ("the rows under another key", |v| {
                let rows = v.as_object_mut().unwrap().remove("levels").unwrap();
                v["rows"] = rows;
            }),
            ("an undeclared figure (a number is no label)", |v| v["levels"][0]["p95_us"] = 1000.0.into()),
            ("a success ratio in percent", |v| v["levels"][0]["success_ratio"] = 99.5.into()),
            ("a negative throughput", |v| v["levels"][0]["throughput_per_sec"] = (-1.0).into()),
            ("runs as a fraction", |v| v["levels"][0]["runs"] = 1.5.into()),
            ("a spread as a string", |v| v["levels"][0]["sd"] = json!({ "p99_us": "12" })),
            ("an empty spread", |v| v["levels"][0]["sd"] = json!({})),
            ("a spread of an unknown figure", |v| v["levels"][0]["sd"] = json!({ "p95_us": 12.0 })),
            ("an unknown phase", |v| v["levels"][0]["phase_mean_us"]["send"] = 21.0.into()),
            ("a CPU share as a string", |v| v["levels"][0]["processes"]["nginx"]["cpu_mean_percent"] = "40%".into()),
            ("a fractional memory peak", |v| v["levels"][0]["processes"]["nginx"]["peak_rss_kib"] = 1.5.into()),
            ("a process with another figure", |v| v["levels"][0]["processes"]["nginx"]["threads"] = 2.into()),
            ("an objective without pass", |v| {
                v["levels"][0]["slos"][0].as_object_mut().unwrap().remove("pass");
            }),
            ("an objective's pass as a string", |v| v["levels"][0]["slos"][0]["pass"] = "true".into()),
            ("a failed row whose verdict is ok", |v| {
                row(v, "levels", |r| r["failed"].is_string())["verdict"] = "ok".into()
            }),
            ("a verdict of FAILED without a reason in failed", |v| {
                row(v, "levels", |r| r["verdict"] == "ok")["verdict"] = "FAILED: no request completed".into()
            }),
            ("a missed objective with verdict ok", |v| {
                row(v, "levels", |r| r["verdict"].as_str().unwrap().starts_with("SLO missed"))["verdict"] = "ok".into()
            }),
            ("objectives all met with verdict SLO missed", |v| {
                row(v, "levels", |r| r["verdict"] == "ok")["verdict"] = "SLO missed: p99<1ms (actual 2ms)".into()
            }),
            ("an unknown verdict", |v| v["levels"][0]["verdict"] = "meh".into()),
            ("a level without its offered load", |v| {
                v["levels"][0].as_object_mut().unwrap().remove("offered");
            }),
            ("an offered load as a label", |v| v["levels"][0]["offered"] = "100/s".into()),
            ("a row without a level or a phase", |v| {
                let r = v["levels"][0].as_object_mut().unwrap();
                r.remove("offered");
                let labels = r["labels"].as_object_mut().unwrap();
                for k in ["level", "phase"] {
                    labels.remove(k);
                }
            }),
            ("a label that is not text", |v| v["levels"][0]["labels"]["phase"] = 1.into()),
            ("a label beside the figures", |v| v["levels"][0]["level"] = "100/s".into()),
        ],
    );

    let c = capacity();
    let good: Value = serde_json::from_str(&Report::Capacity(&c).json()).unwrap();
    rejects(
        &schema,
        &good,
        &[
            ("a capacity as a string", |v| v["capacity_per_sec"] = "1000/s".into()),
            ("no knee", |v| {
                v.as_object_mut().unwrap().remove("knee_per_sec");
            }),
            ("generator limits as one string", |v| v["generator_limited"] = "barrage was the limit".into()),
            ("a probe without its rate label", |v| {
                v["probes"][0]["labels"].as_object_mut().unwrap().remove("rate");
            }),
            ("a probe without its offered rate", |v| v["probes"][0]["offered"] = Value::Null),
            ("a probe number as a number", |v| v["probes"][0]["labels"]["probe"] = 1.into()),
            ("a probe without its stage", |v| {
                v["probes"][0]["labels"].as_object_mut().unwrap().remove("stage");
            }),
            ("a stage the search has not", |v| v["probes"][0]["labels"]["stage"] = "retry".into()),
            ("no interval", |v| {
                v.as_object_mut().unwrap().remove("interval_per_sec");
            }),
            ("an interval as a pair", |v| v["interval_per_sec"] = json!([1250.0, 1500.0])),
            ("verified as text", |v| v["verified"] = "yes".into()),
            ("capacity rows under the sweep's key", |v| {
                let rows = v.as_object_mut().unwrap().remove("probes").unwrap();
                v["levels"] = rows;
            }),
        ],
    );

    let e = experiment();
    let good: Value = serde_json::from_str(&Report::Experiment(&e).json()).unwrap();
    rejects(
        &schema,
        &good,
        &[
            ("repeats as a string", |v| v["repeats"] = "3".into()),
            ("no name", |v| {
                v.as_object_mut().unwrap().remove("name");
            }),
            ("a case without its id", |v| {
                v["matrix"][0]["labels"].as_object_mut().unwrap().remove("case");
            }),
            ("a case with an offered load", |v| v["matrix"][0]["offered"] = 100.0.into()),
            ("a row without a run that does not say so", |v| {
                row(v, "matrix", |r| r["runs"] == 0)["verdict"] = "ok".into()
            }),
            ("a row of failures that says it was interrupted", |v| {
                let r = row(v, "matrix", |r| r["runs"] == 3);
                (r["failed"], r["verdict"]) = ("all 10 requests failed".into(), "stopped part-way: interrupted".into());
            }),
            ("a comparison without its baseline case", |v| {
                v["comparisons"][0].as_object_mut().unwrap().remove("from_case");
            }),
            ("a comparison without the comparison", |v| {
                v["comparisons"][0].as_object_mut().unwrap().remove("comparison");
            }),
            ("a comparison without its metrics", |v| {
                v["comparisons"][0]["comparison"].as_object_mut().unwrap().remove("metrics");
            }),
            ("a sheet-style key", |v| v["comparisons"][0]["other levels"] = "x".into()),
            ("the phase as a number", |v| v["comparisons"][1]["phase"] = 1.into()),
        ],
    );

    let b = bench();
    let good: Value = serde_json::from_str(&Report::Bench(&b).json()).unwrap();
    rejects(
        &schema,
        &good,
        &[
            ("a front without its name", |v| {
                v["fronts"][0]["labels"].as_object_mut().unwrap().remove("front");
            }),
            ("a bench that says it is a sweep", |v| v["kind"] = "sweep".into()),
        ],
    );
}

#[test]
fn comparison_json_matches_the_schema() {
    let schema = comparison_schema();
    let runs = compared();
    let c = compare(&runs, 0.05);
    let v = valid(&schema, "comparison", &Report::Comparison { runs: &runs, comparison: &c }.json());
    assert_eq!(v["runs"], json!(["before.brg", "after.brg", "tuned"]));
    let changes: Vec<&Value> =
        v["metrics"].as_array().unwrap().iter().flat_map(|m| m["runs"].as_array().unwrap()).collect();
    assert!(changes.iter().any(|c| c["significant"] == true));
    assert!(changes.iter().any(|c| c["p_value"].is_null() && c["test"] == "no test: no per-interval sample"));
    assert!(changes.iter().any(|c| c["change_percent"].is_null()), "errors from a baseline of 0");

    // `compare` of experiment directories: a comparison per case and phase, built as the
    // binary builds it.
    let cases = json!([
        { "case": "TC0", "phase": Value::Null, "comparison": comparison_json(&c) },
        { "case": "TC1", "phase": "measure", "comparison": comparison_json(&compare(&runs[..2], 0.02)) },
    ]);
    valid(&schema, "cases", &cases.to_string());
    valid(&schema, "cases", "[]");
}

#[test]
fn comparison_schema_rejects_what_it_should() {
    let schema = comparison_schema();
    let runs = compared();
    let c = compare(&runs, 0.05);
    let good = comparison_json(&c);
    rejects(
        &schema,
        &good,
        &[
            ("no noise", |v| {
                v.as_object_mut().unwrap().remove("noise");
            }),
            ("an unknown field", |v| v["version"] = 1.into()),
            ("an unknown metric", |v| v["metrics"][0]["metric"] = "p95".into()),
            ("a baseline value as a string", |v| v["metrics"][0]["baseline"] = "1000/s".into()),
            ("a significance as yes", |v| v["metrics"][0]["runs"][0]["significant"] = "yes".into()),
            ("a change as a string", |v| v["metrics"][0]["runs"][0]["change_percent"] = "+5%".into()),
            ("a change without its run", |v| {
                v["metrics"][0]["runs"][0].as_object_mut().unwrap().remove("run");
            }),
            ("a significant change without a test", |v| {
                let changes =
                    v["metrics"].as_array_mut().unwrap().iter_mut().flat_map(|m| m["runs"].as_array_mut().unwrap());
                changes.into_iter().find(|c| c["p_value"].is_null()).unwrap()["significant"] = true.into();
            }),
            ("a single run", |v| v["runs"] = json!(["before.brg"])),
            ("a test of another name", |v| v["metrics"][0]["runs"][0]["test"] = "t-test".into()),
            ("a p-value beside no test", |v| {
                let changes =
                    v["metrics"].as_array_mut().unwrap().iter_mut().flat_map(|m| m["runs"].as_array_mut().unwrap());
                changes.into_iter().find(|c| c["p_value"].is_null()).unwrap()["p_value"] = 0.5.into();
            }),
        ],
    );
    let cases = json!([{ "case": "TC0", "phase": "measure", "comparison": good }]);
    rejects(
        &schema,
        &cases,
        &[
            ("a case without a phase", |v| {
                v[0].as_object_mut().unwrap().remove("phase");
            }),
            ("a phase as a number", |v| v[0]["phase"] = 1.into()),
            ("a case whose comparison lacks metrics", |v| {
                v[0]["comparison"].as_object_mut().unwrap().remove("metrics");
            }),
            ("a bare comparison inside the array", |v| {
                let c = v[0]["comparison"].clone();
                v[0] = c;
            }),
        ],
    );
}

/// Every property the schemas declare has a description, and every object says what other
/// keys it takes (constraint-only subschemas, under `if`, `then`, `else` and `not`, aside).
#[test]
fn schemas_document_every_field() {
    fn walk(node: &Value, at: &str, problems: &mut Vec<String>) {
        match node {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{at}/{i}"), problems);
                }
            }
            Value::Object(obj) => {
                if obj.get("type").and_then(Value::as_str) == Some("object")
                    && !obj.contains_key("additionalProperties")
                {
                    problems.push(format!("{at}: object without additionalProperties"));
                }
                if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                    for (name, prop) in props {
                        if prop.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
                            problems.push(format!("{at}.{name}: no description"));
                        }
                    }
                }
                for (key, child) in obj {
                    if !matches!(key.as_str(), "if" | "then" | "else" | "not") {
                        walk(child, &format!("{at}/{key}"), problems);
                    }
                }
            }
            _ => {}
        }
    }
    for (name, schema) in [("study", study_schema()), ("comparison", comparison_schema())] {
        let mut problems = Vec::new();
        walk(&schema, "#", &mut problems);
        assert!(problems.is_empty(), "{name}: {problems:#?}");
        assert!(schema["description"].as_str().is_some_and(|d| !d.is_empty()), "{name}");
    }
}
