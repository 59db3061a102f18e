//! The HTML report: the data it embeds for a fixed run (a golden file, regenerate with
//! `UPDATE_GOLDEN=1`), that the page is self-contained and small, and that every kind of page
//! renders with its data. (That the charts draw is checked in a real browser by the
//! integration test `html`.)
//!
//! The fixed run is the one of `render.rs`, built the same way: a results file written with
//! `ResultsWriter` (frozen start time, host "golden", samples from fixed formulas), then
//! `summarize`d.

use barrage_metrics::events::EventSummary;
use barrage_metrics::recorder::RequestPoint;
use barrage_metrics::summary::{
    BackendSummary, IntervalRow, LatencyStats, PhaseStats, RunSummary, Spectrum, Warning, WarningKind,
};
use barrage_metrics::HostSummary;
use barrage_report::{html, Cell, Page, Sheet};
use serde_json::Value;

mod common;
use common::*;

/// The JSON in the page's `barrage-data` element.
fn embedded(page: &str) -> Value {
    let open = r#"<script type="application/json" id="barrage-data">"#;
    let start = page.find(open).expect("a data element") + open.len();
    let end = start + page[start..].find("</script>").expect("the data element ends");
    serde_json::from_str(&page[start..end]).expect("the data is JSON")
}

/// `v` as indented JSON, but arrays of scalars on one line (a column, a scatter point), so
/// that the golden file reads and diffs by row.
fn pretty(v: &Value, indent: usize, out: &mut String) {
    let pad = |n: usize| " ".repeat(n);
    let scalar = |x: &Value| !x.is_array() && !x.is_object();
    match v {
        Value::Array(a) if a.iter().all(scalar) => out.push_str(&v.to_string()),
        Value::Array(a) => {
            out.push_str("[\n");
            for (k, x) in a.iter().enumerate() {
                out.push_str(&pad(indent + 2));
                pretty(x, indent + 2, out);
                out.push_str(if k + 1 < a.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Object(m) => {
            out.push_str("{\n");
            for (k, (key, x)) in m.iter().enumerate() {
                out.push_str(&format!("{}{}: ", pad(indent + 2), Value::from(key.as_str())));
                pretty(x, indent + 2, out);
                out.push_str(if k + 1 < m.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
        x => out.push_str(&x.to_string()),
    }
}

/// The start tags of the page, (name, attributes) in lower case, outside the raw text of
/// script and style elements: what a browser would take for markup.
fn tags(page: &str) -> Vec<(String, String)> {
    let lower = page.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(k) = lower[i..].find('<') {
        let at = i + k;
        let rest = &lower[at + 1..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        if name.is_empty() {
            i = at + 1;
            continue;
        }
        let end = at + 1 + rest.find('>').expect("every tag ends");
        out.push((name.clone(), lower[at + 1 + name.len()..end].to_string()));
        i = end + 1;
        if name == "script" || name == "style" {
            i += lower[i..].find(&format!("</{name}")).expect("raw text ends");
        }
    }
    out
}

/// The value of attribute `name` in a tag's attributes, if it has it.
fn attribute<'a>(attrs: &'a str, name: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(k) = attrs[from..].find(&format!("{name}=")) {
        let at = from + k;
        from = at + name.len() + 1;
        if at > 0 && !attrs.as_bytes()[at - 1].is_ascii_whitespace() {
            continue; // data-src=, etc.
        }
        let value = attrs[from..].trim_start();
        return Some(match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or(""),
            _ => value.split(|c: char| c.is_ascii_whitespace()).next().unwrap_or(""),
        });
    }
    None
}

/// The page fetches nothing: no external src or href, no stylesheet link, no import.
fn assert_self_contained(page: &str) {
    let tags = tags(page);
    for (name, attrs) in &tags {
        for attr in ["src", "href", "srcset", "action", "poster", "data"] {
            if let Some(v) = attribute(attrs, attr) {
                let v = v.trim();
                assert!(
                    !(v.starts_with("http:") || v.starts_with("https:") || v.starts_with("//")),
                    "<{name}> loads {v} from outside"
                );
            }
        }
        assert_ne!(name, "link", "a <link{attrs}>: stylesheets and icons are inline");
        assert!(!(name == "script" && attribute(attrs, "src").is_some()), "an external script: <script{attrs}>");
    }
    assert!(!page.contains("@import"), "a CSS import");
    assert_eq!(tags.iter().filter(|(n, _)| n == "script").count(), 4, "boot, data, uPlot, report.js");
    assert_eq!(tags.iter().filter(|(n, _)| n == "style").count(), 1);
    assert!(page.contains("Content-Security-Policy"), "the policy that keeps the page offline");
}

#[test]
fn golden_data() {
    let (_dir, _, s) = fixture();
    let page = html(&Page::Run(&s));
    let data = embedded(&page);
    let mut text = String::new();
    pretty(&data, 0, &mut text);
    golden("report-data.json", &(text + "\n"));

    // What the charts draw is there, and what they do not is not.
    assert_eq!(data["page"], "run");
    assert!(data["summary"].get("intervals").is_none() && data["summary"].get("latency_spectrum").is_none());
    assert_eq!(data["summary"]["requests"]["total"], s.requests.total);
    let series = &data["series"];
    assert_eq!(series["t"].as_array().unwrap().len(), s.intervals.len());
    for (name, col) in series.as_object().unwrap() {
        let len = |c: &Value| c.as_array().map(Vec::len);
        match col {
            Value::Object(cols) => cols.values().for_each(|c| assert_eq!(len(c), Some(s.intervals.len()), "{name}")),
            c => assert_eq!(len(c), Some(s.intervals.len()), "{name}"),
        }
    }
    assert_eq!(series["backends"].as_object().unwrap().len(), 3);
    assert!(series["cpu_percent"].as_object().unwrap().contains_key("barrage"));
    assert!(series["phase_mean_ms"].as_object().unwrap().contains_key("wait"));
    assert_eq!(series["p99_ms"][0], s.intervals[0].p99_us as f64 / 1e3);
    let scatter = data["scatter"].as_array().unwrap();
    assert!(!s.scatter.is_empty());
    assert_eq!(scatter.len(), s.scatter.len());
    assert!(scatter.windows(2).all(|w| w[0][0].as_f64() <= w[1][0].as_f64()), "sorted by time");
    assert!(scatter.iter().any(|p| p[2] == 0) && scatter.iter().any(|p| p[2] == 1));
    let nines = data["spectrum"]["corrected"]["nines"].as_array().unwrap();
    assert_eq!(nines.len(), data["spectrum"]["corrected"]["ms"].as_array().unwrap().len());
    assert!(nines.len() > 10 && nines[0] == 0);
    assert_eq!(data["summary"]["events"][0]["command"], "barrage testbed stop web-3");
}

#[test]
fn page_is_self_contained() {
    let (_dir, _, mut s) = fixture();
    assert_self_contained(&html(&Page::Run(&s)));

    // Hostile text cannot end the data element or add markup.
    let url = r#"http://evil.test/</script><script src="https://evil.test/x.js"></script><!--"#;
    let command = "echo '</SCRIPT><img src=https://evil.test/p.png>' <!-- -->";
    s.urls.push(url.into());
    s.events[0].command = command.into();
    s.warnings.push(Warning::new(WarningKind::Other, "<link rel=stylesheet href=https://evil.test/s.css>"));
    let page = html(&Page::Run(&s));
    assert_self_contained(&page);
    let data = embedded(&page);
    assert_eq!(data["summary"]["urls"][2], url);
    assert_eq!(data["summary"]["events"][0]["command"], command);
    assert!(page.contains("&lt;/script&gt;&lt;script src=&quot;https://evil.test/x.js&quot;&gt;"));
}

/// A one-hour run at the limits: 3600 intervals with three backends, four processes and
/// every phase, 20,000 sampled requests, a long spectrum.
fn hour() -> RunSummary {
    let mut s = RunSummary { version: 1, mode: barrage_metrics::file::Mode::Open, ..Default::default() };
    s.urls = vec!["http://lb.test/api/items".into()];
    s.started_unix_ms = START_MS;
    s.duration.total_s = 3600.25;
    s.requests.total = 3_600_000;
    s.latency.corrected = LatencyStats { count: 3_600_000, p50_us: 1_234, p99_us: 48_765, ..Default::default() };
    let backends = ["web-1", "web-2", "web-3"];
    let processes = ["haproxy-lb", "web-1", "web-2", "barrage"];
    s.intervals = (0..3600u64)
        .map(|i| {
            let wobble = |k: u64| ((i * 7919 + k * 104_729) % 1000) as f64 / 1000.0;
            IntervalRow {
                due: None,
                second: i,
                length_s: 1.0,
                sent: 1000 + i % 7,
                dropped: 0,
                ok: 990 + i % 5,
                errors: 10 - i % 5,
                throughput_per_sec: 990.0 + (i % 5) as f64,
                p50_us: 1_100 + (i * 37) % 400,
                p90_us: 4_000 + (i * 53) % 3_000,
                p99_us: 40_000 + (i * 7919) % 60_000,
                max_us: 150_000 + (i * 104_729) % 200_000,
                service_p50_us: 1_000 + (i * 31) % 300,
                service_p99_us: 30_000 + (i * 6007) % 50_000,
                bytes_in: 1_000_000 + i,
                bytes_out: 120_000,
                hit_ratio: Some(0.8 + wobble(1) / 10.0),
                byte_hit_ratio: Some(0.7 + wobble(2) / 10.0),
                backends: backends
                    .iter()
                    .enumerate()
                    .map(|(k, b)| (b.to_string(), 330 + (i + k as u64) % 11))
                    .collect(),
                fairness: Some(0.99 + wobble(3) / 100.0),
                cpu_percent: processes
                    .iter()
                    .enumerate()
                    .map(|(k, p)| (p.to_string(), 20.0 + 60.0 * wobble(k as u64)))
                    .collect(),
                rss_kib: processes
                    .iter()
                    .enumerate()
                    .map(|(k, p)| (p.to_string(), 100_000 + i * 10 + k as u64))
                    .collect(),
                host_cpu_percent: Some(50.0 + 40.0 * wobble(9)),
                exemplars: Vec::new(),
                phase_mean_us: ["dns", "connect", "tls", "send", "wait", "receive"]
                    .iter()
                    .enumerate()
                    .map(|(k, p)| (p.to_string(), 10.0 + 1000.0 * wobble(k as u64 + 10)))
                    .collect(),
            }
        })
        .collect();
    s.scatter = (0..20_000u32)
        .map(|k| RequestPoint { ended_ms: k * 180 + k % 97, latency_us: 800 + (k * 7919) % 250_000, ok: k % 50 != 0 })
        .collect();
    let tail = |base: u64| {
        (0..200u32).map(|k| (100.0 * (1.0 - 0.5f64.powf(f64::from(k) / 5.0)), base + u64::from(k) * 997)).collect()
    };
    s.latency_spectrum = Spectrum { corrected: tail(1_000), service: tail(900) };
    s.backends = backends
        .iter()
        .map(|b| BackendSummary { name: b.to_string(), requests: 1_200_000, share: 1.0 / 3.0, ..Default::default() })
        .collect();
    s.host = Some(HostSummary { cpus: 8, cpu_mean_percent: 70.0, ..Default::default() });
    s.events = (0..5)
        .map(|k| EventSummary {
            command: format!("barrage testbed stop web-{k}"),
            at_s: 600.0 * f64::from(k),
            ..Default::default()
        })
        .collect();
    s.phases = ["connect", "send", "wait", "receive"]
        .iter()
        .map(|p| {
            (
                p.to_string(),
                PhaseStats {
                    count: 3_600_000,
                    mean_us: 123.456,
                    p50_us: 100,
                    p99_us: 900,
                    total_us: 123.456 * 3_600_000.0,
                    per_request_us: 123.456,
                },
            )
        })
        .collect();
    s
}

#[test]
fn an_hour_fits_in_two_mib_or_three_traced() {
    let s = hour();
    let page = html(&Page::Run(&s));
    let data = embedded(&page);
    let data_len = serde_json::to_string(&data).unwrap().len();
    eprintln!("a one-hour page: {} bytes, {data_len} of them data", page.len());
    assert!(page.len() < 2 * 1024 * 1024, "{} bytes", page.len());
    assert_eq!(data["series"]["t"].as_array().unwrap().len(), 3600);
    assert_eq!(data["series"]["backends"]["web-2"].as_array().unwrap().len(), 3600);
    assert_eq!(data["scatter"].as_array().unwrap().len(), 20_000);
    assert_self_contained(&page);

    // Traced all along, its three slowest sampled requests linked in each interval.
    let mut s = s;
    for r in &mut s.intervals {
        r.exemplars = (0..8u64)
            .map(|k| barrage_metrics::summary::ExemplarRow {
                trace_id: format!("{:032x}", r.second * 1_000_003 + k),
                span_id: format!("{:016x}", r.second * 7 + k),
                latency_us: 250_000 - k * 1_000,
                ended_s: r.second as f64 + 0.123,
            })
            .collect();
    }
    let template = "http://localhost:16686/trace/{trace_id}".parse().unwrap();
    let page = barrage_report::html_with(
        &Page::Run(&s),
        &barrage_report::HtmlOptions { trace_url: Some(template), ..Default::default() },
    );
    eprintln!("a one-hour page traced and linked: {} bytes", page.len());
    assert!(page.len() < 3 * 1024 * 1024, "{} bytes", page.len());
    assert_eq!(embedded(&page)["series"]["exemplars"][3599].as_array().unwrap().len(), 3);

    // A typical page, for the record: the fixed run.
    let (_dir, _, s) = fixture();
    eprintln!("the fixed run's page: {} bytes", html(&Page::Run(&s)).len());
}

#[test]
fn an_empty_run_renders() {
    let page = html(&Page::Run(&RunSummary::default()));
    let data = embedded(&page);
    assert_eq!(data["series"]["t"], Value::Array(vec![]));
    assert_eq!(data["scatter"], Value::Array(vec![]));
    assert_self_contained(&page);
}

/// A sweep's table, as `barrage sweep` writes it.
fn sweep_sheet() -> Sheet {
    let mut sheet = Sheet::new(
        "sweep",
        &["level", "offered", "throughput_per_sec", "success_percent", "p50_ms", "p90_ms", "p99_ms", "errors"],
    );
    for (k, rate) in [100.0, 200.0, 400.0, 800.0, 1600.0].into_iter().enumerate() {
        let k = k as f64;
        sheet.push(vec![
            Cell::from(format!("{rate}/s")),
            Cell::from(rate),
            Cell::from(rate.min(900.0) * 0.99),
            Cell::from(100.0 - k * k),
            Cell::from(1.2 * (1.0 + k * k)),
            Cell::from(3.5 * (1.0 + k * k)),
            Cell::from(8.0 * (1.0 + k * k * k)),
            Cell::from((k * k * 10.0) as u64),
        ]);
    }
    sheet
}

#[test]
fn a_curve_renders_with_its_data() {
    let sheet = sweep_sheet();
    let slo = [("p99".to_string(), 50.0)];
    let page = html(&Page::Curve {
        title: "sweep",
        sheet: &sheet,
        x: "offered",
        slo_ms: &slo,
        knee: Some(400.0),
        capacity: None,
    });
    assert_self_contained(&page);
    let data = embedded(&page);
    assert_eq!(data["page"], "curve");
    assert_eq!(data["x"], "offered");
    assert_eq!(data["sheet"]["header"][1], "offered");
    assert_eq!(data["sheet"]["rows"].as_array().unwrap().len(), 5);
    assert_eq!(data["sheet"]["rows"][2][6], 72.0);
    assert_eq!(data["slo_ms"][0]["ms"], 50);
    assert_eq!((&data["knee"], &data["capacity"]), (&Value::from(400), &Value::Null));
    assert!(page.contains("<td>400/s</td>"), "the table");

    // A capacity search: probes in the order tried, and no p90 column.
    let mut probes = Sheet::new(
        "capacity",
        &["probe", "rate_per_sec", "throughput_per_sec", "success_percent", "p50_ms", "p99_ms", "errors", "objectives"],
    );
    for (k, rate) in [1000.0, 500.0, 750.0, 625.0].into_iter().enumerate() {
        probes.push(vec![
            Cell::from(k as u64 + 1),
            Cell::from(rate),
            Cell::from(rate * 0.98),
            Cell::from(99.0),
            Cell::from(2.0),
            Cell::from(rate / 10.0),
            Cell::from(3u64),
            Cell::from(if rate <= 625.0 { "met" } else { "missed" }),
        ]);
    }
    let page = html(&Page::Curve {
        title: "capacity search",
        sheet: &probes,
        x: "rate_per_sec",
        slo_ms: &[],
        knee: None,
        capacity: Some(625.0),
    });
    assert_self_contained(&page);
    let data = embedded(&page);
    assert_eq!(data["capacity"], 625);
    assert_eq!(data["sheet"]["rows"][1][1], 500);
    assert!(page.contains("<td>missed</td>"));
}

#[test]
fn a_comparison_renders_with_its_data() {
    let (_dir, _, a) = fixture();
    let mut b = a.clone();
    for row in &mut b.intervals {
        row.p99_us *= 2;
    }
    let runs = vec![("before".to_string(), a), ("after <b>".to_string(), b)];
    let table = barrage_report::compare::comparison_sheet(&barrage_report::compare::compare(&runs, 0.02));
    let page = html(&Page::Compare { runs: &runs, table: &table });
    assert_self_contained(&page);
    let data = embedded(&page);
    assert_eq!(data["page"], "compare");
    assert_eq!(data["runs"][1]["label"], "after <b>");
    assert_eq!(data["runs"][0]["series"]["t"].as_array().unwrap().len(), runs[0].1.intervals.len());
    assert_eq!(data["runs"][1]["series"]["p99_ms"][0].as_f64().unwrap(), runs[1].1.intervals[0].p99_us as f64 / 1e3);
    assert!(!data["runs"][0]["spectrum"]["corrected"]["nines"].as_array().unwrap().is_empty());
    assert_eq!(data["table"]["header"], serde_json::json!(table.header));
    assert!(page.contains("after &lt;b&gt;"));
    assert!(page.contains("<td>throughput</td>"), "the comparison table");
}

#[test]
fn an_experiment_renders_with_its_data() {
    let mut matrix =
        Sheet::new("matrix", &["case", "cache", "throughput_per_sec", "p50_ms", "p99_ms", "success_percent"]);
    for (k, cache) in ["off", "on"].into_iter().enumerate() {
        let k = k as f64;
        matrix.push(vec![
            Cell::from(format!("c{k}")),
            Cell::from(cache),
            Cell::from(1000.0 + 500.0 * k),
            Cell::from(2.0 - k),
            Cell::from(20.0 - 10.0 * k),
            Cell::from(100.0),
        ]);
    }
    let mut comparisons = Sheet::new(
        "comparisons",
        &["factor", "from", "to", "other levels", "from case", "to case", "throughput_change_percent"],
    );
    comparisons.push(vec![
        "cache".into(),
        "off".into(),
        "on".into(),
        "".into(),
        "c0".into(),
        "c1".into(),
        Cell::from(50.0),
    ]);
    let page = html(&Page::Experiment { title: "cache & <tls>", matrix: &matrix, comparisons: &comparisons });
    assert_self_contained(&page);
    let data = embedded(&page);
    assert_eq!(data["page"], "experiment");
    assert_eq!(data["title"], "cache & <tls>");
    assert_eq!(data["matrix"]["rows"][1][2], 1500);
    assert_eq!(data["comparisons"]["rows"][0][6], 50);
    assert!(page.contains("<title>barrage experiment cache &amp; &lt;tls&gt;</title>"));
    assert_eq!(page.matches("<table class=\"data\">").count(), 2);
}

/// `s` with trace context: three sampled requests kept in the first interval, one in the
/// third, the run's slowest those four.
fn traced(mut s: RunSummary) -> RunSummary {
    use barrage_metrics::summary::{ExemplarRow, TraceContextSummary};
    let ex = |k: u64, latency_us: u64, ended_s: f64| ExemplarRow {
        trace_id: format!("{k:032x}"),
        span_id: format!("{:016x}", k + 100),
        latency_us,
        ended_s,
    };
    s.intervals[0].exemplars = vec![ex(0xa1, 9_000, 0.9), ex(0xa2, 5_000, 0.5), ex(0xa3, 1_000, 0.1)];
    s.intervals[2].exemplars = vec![ex(0xc1, 12_000, 2.4)];
    let mut slowest: Vec<ExemplarRow> = s.intervals.iter().flat_map(|r| r.exemplars.clone()).collect();
    slowest.sort_by_key(|e| std::cmp::Reverse(e.latency_us));
    s.trace_context =
        Some(TraceContextSummary { sample: 0.05, requests_sampled: 1_234, header_bytes_per_request: 116, slowest });
    s
}

/// The trace ids of the page's trace section, and each one's link (`None`: text to copy).
fn trace_ids(page: &str) -> Vec<(String, Option<String>)> {
    let start = page.find("<section id=\"trace-context\">").expect("a trace section");
    let section = &page[start..start + page[start..].find("</section>").unwrap()];
    section
        .match_indices("class=\"trace-id\"")
        .map(|(at, _)| {
            let start = section[..at].rfind('<').unwrap();
            let end = at + section[at..].find('>').unwrap();
            let tag = &section[start + 1..end];
            let text = &section[end + 1..end + 1 + section[end + 1..].find('<').unwrap()];
            let href = tag.starts_with("a ").then(|| attribute(tag, "href").expect("a link has an href").to_string());
            (text.to_string(), href.map(|h| h.replace("&amp;", "&")))
        })
        .collect()
}

#[test]
fn a_traced_run_lists_its_slowest_trace_ids_and_marks_its_intervals() {
    let (_dir, _, s) = fixture();
    let s = traced(s);
    let page = html(&Page::Run(&s));
    let wanted: Vec<String> = s.trace_context.as_ref().unwrap().slowest.iter().map(|e| e.trace_id.clone()).collect();
    assert_eq!(trace_ids(&page), wanted.iter().map(|id| (id.clone(), None)).collect::<Vec<_>>());
    assert!(page.contains("5.00% of requests sampled (1,234 requests); traceparent and tracestate added 116 B"));
    assert!(page.contains("--trace-url TEMPLATE"), "says how to make them links");

    // The chart's data: each interval's exemplars, in its column, without links.
    let data = embedded(&page);
    let ex = data["series"]["exemplars"].as_array().unwrap();
    assert_eq!(ex.len(), s.intervals.len());
    assert_eq!(ex.iter().filter(|e| !e.as_array().unwrap().is_empty()).count(), 2);
    assert_eq!(ex[0][0], serde_json::json!([9, 0.9, format!("{:032x}", 0xa1), format!("{:016x}", 0xa1 + 100)]));
    assert_eq!(ex[2][0][1], 2.4);
}

#[test]
fn trace_ids_link_through_the_template_escaped() {
    let (_dir, _, s) = fixture();
    let s = traced(s);
    // `&` and `'` are URL characters that HTML must escape in an attribute.
    let template: barrage_report::TraceUrl = "https://ui.test/t/{trace_id}?span={span_id}&q='x'".parse().unwrap();
    let options = barrage_report::HtmlOptions { trace_url: Some(template), ..Default::default() };
    let page = barrage_report::html_with(&Page::Run(&s), &options);
    let links = trace_ids(&page);
    assert_eq!(links.len(), 4);
    for (e, (id, href)) in s.trace_context.as_ref().unwrap().slowest.iter().zip(&links) {
        assert_eq!(id, &e.trace_id);
        let href = href.as_deref().expect("a link").replace("&#39;", "'");
        assert_eq!(href, format!("https://ui.test/t/{}?span={}&q='x'", e.trace_id, e.span_id));
    }
    assert!(page.contains("&amp;q=&#39;x&#39;\">"), "escaped in the href");
    assert_eq!(
        embedded(&page)["series"]["exemplars"][2][0][4],
        format!("https://ui.test/t/{:032x}?span={:016x}&q='x'", 0xc1, 0xc1 + 100)
    );
    // The links lead out of the page only when followed: nothing is loaded.
    let tags = tags(&page);
    assert_eq!(tags.iter().filter(|(n, _)| n == "script").count(), 4);
    assert!(tags.iter().all(|(n, _)| n != "img" && n != "link" && n != "iframe"));
}

#[test]
fn a_template_that_could_inject_markup_is_refused() {
    for t in [
        "http://x/\"><script>alert(1)</script>/{trace_id}",
        "javascript:alert(document.cookie)//{trace_id}",
        "http://x/{trace_id}' onmouseover='alert(1)",
        "http://x/<img src=x onerror=alert(1)>{trace_id}",
    ] {
        assert!(t.parse::<barrage_report::TraceUrl>().is_err(), "{t}");
    }
}

#[test]
fn without_trace_context_the_page_says_nothing_of_traces() {
    let (_dir, _, s) = fixture();
    assert!(s.trace_context.is_none() && s.intervals.iter().all(|r| r.exemplars.is_empty()));
    let template = "http://localhost:16686/trace/{trace_id}".parse().unwrap();
    let page = barrage_report::html_with(
        &Page::Run(&s),
        &barrage_report::HtmlOptions { trace_url: Some(template), ..Default::default() },
    );
    assert!(!page.contains("<section id=\"trace-context\">") && !page.contains("class=\"trace-id\""));
    let data = embedded(&page);
    assert!(data["series"].get("exemplars").is_none());
    assert_eq!(data["summary"]["trace_context"], Value::Null);
    // Rendered alike with or without a template when there is nothing to link.
    assert_eq!(page, html(&Page::Run(&s)));
}
