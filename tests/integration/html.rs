//! The HTML report in a real browser: a run against the built-in origins (two backends,
//! Varnish-style cache headers, 10% of 500s, a port that refuses, an event), its page opened
//! in headless Chromium. The page's self-check must list every chart with its series and
//! data, and no script error, also after playing a reader's clicks; the page and a
//! screenshot are left in `target/html-report.html` and `target/html-report.png`. Sweep,
//! comparison and experiment pages are checked the same way.
//!
//! Needs `chromium` on PATH (Debian: `apt-get install chromium`); skipped without it unless
//! BARRAGE_REQUIRE_EXTERNAL=1.

use crate::util::{barrage, origin, refused_url, require};
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_report::{html, Cell, Page, Sheet, TrendChart};
use barrage_server::{CacheStyle, ServeConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one Chromium may take before it is killed.
const CHROMIUM_LIMIT: Duration = Duration::from_secs(60);

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("chromium")).find(|p| p.is_file())
}

/// Runs headless Chromium on `page` with `extra` flags, killed after [`CHROMIUM_LIMIT`];
/// returns what it printed on stdout.
fn headless(chromium: &Path, dir: &Path, page: &Path, extra: &[&str]) -> String {
    let profile = tempfile::tempdir_in(dir).unwrap();
    let (out, err) = (dir.join("chromium.out"), dir.join("chromium.err"));
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            // As root in a container there is no user namespace for the sandbox.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--no-first-run",
            "--hide-scrollbars",
            // Run the page's timers (uPlot draws in a microtask, the self-check in a timeout)
            // before dumping or capturing it.
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CHROMIUM_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium ran over {CHROMIUM_LIMIT:?}: {}", std::fs::read_to_string(&err).unwrap_or_default());
        }
        // Polls the child's exit; synchronises nothing.
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "chromium failed ({status}): {stderr}");
    std::fs::read_to_string(&out).unwrap()
}

/// The self-check the page's script wrote into `#barrage-selfcheck`, from the dumped DOM.
fn selfcheck(dom: &str) -> Value {
    let at = dom.find("id=\"barrage-selfcheck\"").unwrap_or_else(|| panic!("no self-check element in {dom}"));
    let start = at + dom[at..].find('>').unwrap() + 1;
    let end = start + dom[start..].find("</pre>").unwrap();
    let text =
        dom[start..end].replace("&lt;", "<").replace("&gt;", ">").replace("&nbsp;", "\u{a0}").replace("&amp;", "&");
    assert!(!text.is_empty(), "the page's script wrote no self-check");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("self-check {text}: {e}"))
}

/// What a reader does, played on every chart once the page has drawn: hide and show each
/// series (a stacked chart restacks), hover the middle (the legend shows values), zoom into
/// the first half and out again; then drag across the first time chart, which zooms every
/// time chart to the same stretch, and double-click, which zooms them all out. Errors land
/// in the self-check, which is written again (each chart then counts at least two draws).
const INTERACT: &str = r#"<script>
setTimeout(async function () {
  const drawn = () => new Promise((resolve) => setTimeout(resolve, 0)); // uPlot redraws in a microtask
  try {
    for (const [id, u] of Object.entries(window.barrageCharts)) {
      for (let i = 1; i < u.series.length; i++) {
        u.setSeries(i, { show: false });
        u.setSeries(i, { show: true });
      }
      u.setCursor({ left: u.over.clientWidth / 2, top: 10 });
      if (u.cursor.idx == null) throw new Error(id + ": hovering shows no values");
      const xs = u.data[0];
      if (u.cursor.drag.x && xs.length > 2) {
        const { min, max } = u.scales.x;
        const half = xs[Math.floor(xs.length / 2)];
        u.setScale("x", { min: xs[0], max: half });
        await drawn();
        if (u.scales.x.min !== xs[0] || u.scales.x.max !== half) {
          throw new Error(id + ": zoomed to " + [u.scales.x.min, u.scales.x.max] + ", not " + [xs[0], half]);
        }
        u.setScale("x", { min: min, max: max });
        await drawn();
      }
    }
    // Drag across the first time chart: every time chart zooms to the same stretch; a
    // double-click zooms them all out again.
    const timed = Object.entries(window.barrageCharts).filter(([, u]) => u.cursor.sync && u.cursor.sync.key === "barrage-time");
    if (timed.length) {
      const u = timed[0][1];
      const before = timed.map(([, c]) => [c.scales.x.min, c.scales.x.max].join());
      const r = u.over.getBoundingClientRect();
      const mouse = (type, x, target) =>
        (target || u.over).dispatchEvent(
          new MouseEvent(type, { clientX: r.left + x, clientY: r.top + 20, bubbles: true, button: 0, buttons: 1, movementX: 5 })
        );
      mouse("mouseenter", r.width * 0.2);
      mouse("mousemove", r.width * 0.2);
      mouse("mousedown", r.width * 0.2);
      mouse("mousemove", r.width * 0.4);
      mouse("mousemove", r.width * 0.6);
      mouse("mouseup", r.width * 0.6, document);
      await drawn();
      const zoomed = timed.map(([, c]) => [c.scales.x.min, c.scales.x.max].join());
      if (zoomed.some((z) => z !== zoomed[0]) || zoomed[0] === before[0]) {
        throw new Error("drag zoom: " + JSON.stringify({ before, zoomed }));
      }
      u.over.dispatchEvent(new MouseEvent("dblclick", { clientX: r.left + 10, clientY: r.top + 20, bubbles: true }));
      await drawn();
      const after = timed.map(([, c]) => [c.scales.x.min, c.scales.x.max].join());
      if (after.join(";") !== before.join(";")) throw new Error("zoom out: " + JSON.stringify({ before, after }));
    }
  } catch (e) {
    window.__barrageErrors.push("interacting: " + e.stack);
  }
  await drawn();
  window.__barrageFlush();
}, 100);
</script>
"#;

/// Opens `page` (written into `dir` as `name`, with [`INTERACT`] added) and checks that each
/// of `expected` (chart id, fewest series) drew data, and that no script error happened;
/// returns the self-check.
fn check_page(chromium: &Path, dir: &Path, name: &str, page: &str, expected: &[(&str, u64)]) -> Value {
    let path = dir.join(name);
    let at = page.rfind("</body>").expect("the page ends");
    std::fs::write(&path, format!("{}{INTERACT}{}", &page[..at], &page[at..])).unwrap();
    let dom = headless(chromium, dir, &path, &["--dump-dom"]);
    let check = selfcheck(&dom);
    eprintln!("{name}: {check}");
    assert_eq!(check["errors"], Value::Array(vec![]), "{name}: script errors");
    for (id, series) in expected {
        let chart = &check["charts"][id];
        assert!(chart.is_object(), "{name}: no chart {id}: {check}");
        assert!(chart["series"].as_u64().unwrap() >= *series, "{name}: {id} has too few series: {chart}");
        assert!(chart["points"].as_u64().unwrap() > 0, "{name}: {id} has no data: {chart}");
        assert!(chart["drawn"].as_u64().unwrap() >= 2, "{name}: {id} was not drawn, then redrawn: {chart}");
    }
    check
}

/// Where test artifacts go: the target directory.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

fn run(dir: &Path) -> RunSummary {
    let config = |name: &str| ServeConfig {
        error_rate: 0.1,
        name: Some(name.into()),
        cache_headers: Some(CacheStyle::Varnish),
        ..Default::default()
    };
    let (o1, o2) = (origin(config("origin-1")), origin(config("origin-2")));
    let output = dir.join("run.brg");
    let out = barrage()
        .args(["run", "--rate", "150", "-d", "3s", "--connections", "4", "-o"])
        .arg(&output)
        // Each path misses the cache once, then hits.
        .args((0..6).map(|k| format!("{}/obj/{k}", if k % 2 == 0 { o1.url() } else { o2.url() })))
        .arg(refused_url())
        .args(["--at", "1500ms", "true"])
        .output()
        .unwrap();
    assert!(output.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = summarize(&[output]).unwrap();
    // Every chart has something to draw.
    assert!(s.cache.is_some(), "cache headers seen");
    assert!(s.backends.len() >= 2, "{:?}", s.backends);
    assert!(s.status_codes.contains_key("500") && !s.errors.is_empty(), "{:?} {:?}", s.status_codes, s.errors);
    assert!(s.host.is_some() && !s.scatter.is_empty() && s.intervals.len() >= 3 && s.events.len() == 1);
    s
}

#[test]
fn html_report_draws_every_chart() {
    let Some(chromium) = chromium() else {
        require("chromium", false);
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let s = run(dir.path());

    let page = html(&Page::Run(&s));
    eprintln!("run page: {} bytes", page.len());
    let expected = [
        ("latency", 6),
        ("scatter", 2),
        ("distribution", 2),
        // Due, sent, succeeded, failed and the error rate.
        ("throughput", 5),
        ("phases", 1),
        // Per request beside the mean where it happened.
        ("phases-run", 2),
        ("status", 3),
        ("cache-ratio", 1),
        ("cache-latency", 2),
        ("backends", 2),
        ("cpu", 1),
        ("memory", 1),
    ];
    check_page(&chromium, dir.path(), "run.html", &page, &expected);

    // The page as written, and a picture of it, for people to look at.
    let target = target_dir();
    std::fs::create_dir_all(&target).unwrap();
    let (copy, png) = (target.join("html-report.html"), target.join("html-report.png"));
    std::fs::write(&copy, &page).unwrap();
    let _ = std::fs::remove_file(&png);
    headless(&chromium, dir.path(), &copy, &[&format!("--screenshot={}", png.display()), "--window-size=1400,6000"]);
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    eprintln!("screenshot of the run's page: {} ({size} bytes)", png.display());
    assert!(size > 10_000, "{}: {size} bytes", png.display());

    // A sweep.
    let mut sweep = Sheet::new(
        "sweep",
        &["level", "offered", "throughput_per_sec", "success_percent", "p50_ms", "p90_ms", "p99_ms", "errors"],
    );
    for (k, rate) in [100.0, 200.0, 400.0, 800.0].into_iter().enumerate() {
        let k = k as f64;
        sweep.push(vec![
            Cell::from(format!("{rate}/s")),
            Cell::from(rate),
            Cell::from(rate.min(500.0)),
            Cell::from(100.0 - k),
            Cell::from(1.0 + k),
            Cell::from(2.0 + k * k),
            Cell::from(5.0 + k * k * k),
            Cell::from(k as u64),
        ]);
    }
    let slo = [("p99".to_string(), 20.0)];
    let page = html(&Page::Curve {
        title: "sweep",
        sheet: &sweep,
        x: "offered",
        slo_ms: &slo,
        knee: Some(400.0),
        capacity: None,
    });
    check_page(
        &chromium,
        dir.path(),
        "sweep.html",
        &page,
        &[("curve-latency", 3), ("curve-throughput", 1), ("curve-errors", 2)],
    );

    // Two runs compared.
    let runs = vec![("first".to_string(), s.clone()), ("second".to_string(), s)];
    let table = barrage_report::compare::comparison_sheet(&barrage_report::compare::compare(&runs, 0.02));
    let page = html(&Page::Compare { runs: &runs, table: &table });
    check_page(
        &chromium,
        dir.path(),
        "compare.html",
        &page,
        &[("compare-distribution", 2), ("compare-p99", 2), ("compare-throughput", 2)],
    );

    // An experiment.
    let mut matrix = Sheet::new("matrix", &["case", "cache", "throughput_per_sec", "p50_ms", "p99_ms"]);
    let mut comparisons = Sheet::new("comparisons", &["factor", "from", "to", "throughput_change_percent"]);
    for (k, level) in ["off", "on"].into_iter().enumerate() {
        let k = k as f64;
        matrix.push(vec![
            Cell::from(format!("c{k}")),
            Cell::from(level),
            Cell::from(900.0 + 300.0 * k),
            Cell::from(2.0 - k),
            Cell::from(30.0 - 20.0 * k),
        ]);
    }
    comparisons.push(vec!["cache".into(), "off".into(), "on".into(), Cell::from(33.3)]);
    let page = html(&Page::Experiment { title: "cache", matrix: &matrix, comparisons: &comparisons });
    check_page(
        &chromium,
        dir.path(),
        "experiment.html",
        &page,
        &[("exp-throughput_per_sec", 1), ("exp-p50_ms", 1), ("exp-p99_ms", 1)],
    );

    // A history trend: a series with a change point, and one without.
    let charts: Vec<TrendChart> = (0..2)
        .map(|k| {
            let mut sheet = Sheet::new("series", &["run", "started", "p99_ms", "note"]);
            for run in 0..40 {
                let step = if k == 0 && run >= 25 { 1.2 } else { 1.0 };
                sheet.push(vec![Cell::from(run as f64), "2026-11-28".into(), Cell::from(10.0 * step), "".into()]);
            }
            let changes = if k == 0 { vec![(25, "p99 +20%: REGRESSION".to_string())] } else { Vec::new() };
            let notes = vec![(24.5, "nginx 1.27".to_string())];
            TrendChart { title: format!("series #{k}"), sheet, column: "p99_ms".into(), changes, notes }
        })
        .collect();
    let page = html(&Page::Trend { figure: "p99", series: &charts });
    check_page(&chromium, dir.path(), "trend.html", &page, &[("trend-0", 1), ("trend-1", 1)]);
}

/// Where the charts start on the page, in CSS pixels from its top, as Chromium lays it out.
fn charts_top(chromium: &Path, dir: &Path, page: &str) -> f64 {
    const MEASURE: &str = r#"<script>
setTimeout(function () {
  const top = document.getElementById("charts").getBoundingClientRect().top + window.scrollY;
  document.getElementById("barrage-selfcheck").textContent = JSON.stringify({ top: top });
}, 200);
</script>
"#;
    let path = dir.join("layout.html");
    let at = page.rfind("</body>").expect("the page ends");
    std::fs::write(&path, format!("{}{MEASURE}{}", &page[..at], &page[at..])).unwrap();
    let dom = headless(chromium, dir, &path, &["--dump-dom", "--window-size=1400,900"]);
    selfcheck(&dom)["top"].as_f64().expect("the top of the charts")
}

/// A targets file of 2,000 entries: the page lists five and counts the rest, so the charts
/// start within the first screen (they started 44,819 px down when every URL was listed).
#[test]
fn a_long_target_list_leaves_the_charts_on_the_first_screen() {
    let Some(chromium) = chromium() else {
        require("chromium", false);
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut s = RunSummary { version: 1, mode: barrage_metrics::file::Mode::Closed, ..Default::default() };
    s.urls = (0..2000).map(|i| format!("http://127.0.0.1:8080/bytes/{i}")).collect();
    let page = html(&Page::Run(&s));
    assert_eq!(page.matches("<p class=\"meta\"><code>").count(), 5);
    assert!(page.contains("… and 1,995 more (2,000 targets)"));
    let top = charts_top(&chromium, dir.path(), &page);
    eprintln!("the charts start {top} px down");
    assert!(top < 900.0, "the charts start {top} px down the page");
}

/// The cells of the text report's section `title`: the rows under its heading line, split
/// on runs of two spaces.
fn text_rows(text: &str, title: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip_while(|l| !l.starts_with(title))
        .skip(1)
        .take_while(|l| l.starts_with("  ") && !l.starts_with("  ("))
        .map(|l| l.trim().split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect())
        .collect()
}

/// The cells of the page's table `id` (`table-steps`), the heads left out.
fn html_rows(page: &str, id: &str) -> Vec<Vec<String>> {
    let start = page.find(&format!("<section id=\"{id}\">")).unwrap_or_else(|| panic!("no {id}"));
    let body = &page[start..];
    let body = &body[body.find("<tbody>").unwrap()..body.find("</tbody>").unwrap()];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let text = &cell[cell.find('>').unwrap() + 1..cell.find("</td>").unwrap()];
                    text.replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&")
                })
                .collect()
        })
        .collect()
}

/// A stepped run of named PUT and GET targets: the page has the text report's steps, by-name
/// and by-method tables, cell for cell, and marks each step's start on the time charts.
#[test]
fn a_stepped_run_of_named_targets_has_the_text_reports_tables() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("body.bin"), b"hello").unwrap();
    let targets = dir.path().join("named.txt");
    let url = o.url();
    std::fs::write(
        &targets,
        format!("# name: put-object\nPUT {url}/store/a\n@body.bin\n\n# name: get-object\nGET {url}/store/a\n"),
    )
    .unwrap();
    let page_path = dir.path().join("stepped.html");
    let out = barrage()
        .args(["run", "--rate", "20,40", "--step", "1s", "--targets"])
        .arg(&targets)
        .arg("--html")
        .arg(&page_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let page = std::fs::read_to_string(&page_path).unwrap();

    // The schedule's answer: 20 then 40 requests, half of them PUT; the origin saw them all.
    let steps = text_rows(&text, "Steps");
    assert_eq!(steps.len(), 2, "{text}");
    let requests: Vec<u64> = steps.iter().map(|r| r[3].parse().unwrap()).collect();
    assert!((18..=22).contains(&requests[0]) && (38..=42).contains(&requests[1]), "{steps:?}");
    let methods = text_rows(&text, "By method");
    let total: u64 = methods.iter().map(|r| r[1].parse::<u64>().unwrap()).sum();
    assert_eq!(o.requests(), total);
    assert_eq!(methods.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ["GET", "PUT"], "{methods:?}");

    // The page's tables are the text report's, cell for cell.
    for (title, id) in [("Steps", "table-steps"), ("By name", "table-by-name"), ("By method", "table-by-method")] {
        assert_eq!(html_rows(&page, id), text_rows(&text, title), "{title}");
    }

    let Some(chromium) = chromium() else {
        require("chromium", false);
        return;
    };
    let check = check_page(&chromium, dir.path(), "stepped.html", &page, &[("latency", 6), ("throughput", 5)]);
    // Every time chart marks both steps' starts.
    for id in ["latency", "throughput", "scatter"] {
        assert_eq!(check["charts"][id]["markers"], 2, "{id}: {check}");
    }
}

/// Jaeger's trace page: the template the traced runs link through.
const JAEGER: &str = "http://localhost:16686/trace/{trace_id}";

/// `barrage run` of 2 s at 200/s against the built-in origin's `/delay/1` with `args`,
/// writing `page.html` and `run.brg` in `dir`: the page, and the summary it printed as JSON.
fn run_with(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> (String, Value) {
    let o = origin(ServeConfig::default());
    let out = barrage()
        .arg("run")
        .arg(format!("{}/delay/1", o.url()))
        .args(["--rate", "200", "-d", "2s", "--no-history", "--format", "json", "--html"])
        .arg(dir.join("page.html"))
        .arg("-o")
        .arg(dir.join("run.brg"))
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    (std::fs::read_to_string(dir.join("page.html")).unwrap(), summary)
}

/// The trace ids of the page's trace section in order, each with its link (`None`: text to
/// copy), as the page's markup has them.
fn section_trace_ids(page: &str) -> Vec<(String, Option<String>)> {
    let Some(start) = page.find("<section id=\"trace-context\">") else { return Vec::new() };
    let section = &page[start..start + page[start..].find("</section>").unwrap()];
    section
        .match_indices("class=\"trace-id\"")
        .map(|(at, _)| {
            let open = section[..at].rfind('<').unwrap();
            let end = at + section[at..].find('>').unwrap();
            let tag = &section[open + 1..end];
            let text = &section[end + 1..end + 1 + section[end + 1..].find('<').unwrap()];
            let href = tag.strip_prefix("a ").map(|attrs| {
                let from = attrs.find("href=\"").expect("a link has an href") + 6;
                attrs[from..from + attrs[from..].find('"').unwrap()].replace("&amp;", "&")
            });
            (text.to_string(), href)
        })
        .collect()
}

/// The summary's slowest sampled requests: (trace id, span id).
fn slowest(summary: &Value) -> Vec<(String, String)> {
    let rows = summary["trace_context"]["slowest"].as_array().expect("trace context in the summary");
    rows.iter().map(|e| (e["trace_id"].as_str().unwrap().into(), e["span_id"].as_str().unwrap().into())).collect()
}

/// After the page has drawn, hovers the first ringed p99 point of the latency chart and
/// clicks it (which keeps the list), then writes what the list under the chart shows into
/// the self-check: the interval and each trace id with its link.
const HOVER_EXEMPLAR: &str = r##"<script>
setTimeout(function () {
  const out = {};
  try {
    const u = window.barrageCharts.latency;
    const k = u.series.length - 1;
    out.label = u.series[k].label;
    const i = u.data[k].findIndex((v) => v != null);
    out.interval = i;
    const r = u.over.getBoundingClientRect();
    const at = { clientX: r.left + u.valToPos(u.data[0][i], "x"), clientY: r.top + u.valToPos(u.data[k][i], "y"), bubbles: true };
    u.over.dispatchEvent(new MouseEvent("mouseenter", at));
    u.over.dispatchEvent(new MouseEvent("mousemove", at));
    out.hovered = document.querySelectorAll("#exemplars .trace-id").length;
    u.over.dispatchEvent(new MouseEvent("mousedown", at));
    document.dispatchEvent(new MouseEvent("mouseup", at));
    u.over.dispatchEvent(new MouseEvent("click", at));
    out.kept = document.getElementById("exemplars").textContent.indexOf("kept") >= 0;
    // Leaving the chart, or hovering an interval without traces, keeps the list clicked.
    u.over.dispatchEvent(new MouseEvent("mouseleave", at));
    u.setCursor({ left: u.valToPos(u.data[0][u.data[0].length - 1], "x"), top: 1 });
    out.listed = Array.from(document.querySelectorAll("#exemplars .trace-id")).map((a) => [a.textContent, a.getAttribute("href")]);
  } catch (e) {
    out.error = String(e.stack || e);
  }
  document.getElementById("barrage-selfcheck").textContent = JSON.stringify(out);
}, 200);
</script>
"##;

/// A run with trace context: its page rings the p99 of every interval that kept exemplars,
/// lists the run's slowest sampled requests (the JSON summary's, in its order), and links
/// every trace id through `--trace-url`; hovering a ringed point lists that interval's.
#[test]
fn a_traced_run_marks_its_p99_exemplars_and_links_its_slowest_traces() {
    let dir = tempfile::tempdir().unwrap();
    let (page, summary) = run_with(dir.path(), &["--trace-sample", "0.25", "--trace-url", JAEGER], &[]);
    let slowest = slowest(&summary);
    assert!(!slowest.is_empty(), "{}", summary["trace_context"]);
    let listed = section_trace_ids(&page);
    let wanted: Vec<(String, Option<String>)> =
        slowest.iter().map(|(t, _)| (t.clone(), Some(JAEGER.replace("{trace_id}", t)))).collect();
    assert_eq!(listed, wanted);

    // The intervals the chart should ring: those with exemplars and finished requests.
    let intervals = summary["intervals"].as_array().unwrap();
    let ringed: Vec<usize> = (0..intervals.len())
        .filter(|&i| {
            let r = &intervals[i];
            !r["exemplars"].as_array().unwrap().is_empty()
                && r["ok"].as_u64().unwrap() + r["errors"].as_u64().unwrap() > 0
        })
        .collect();
    assert!(!ringed.is_empty(), "no interval kept exemplars: {summary}");

    let Some(chromium) = chromium() else {
        require("chromium", false);
        return;
    };
    let check = check_page(&chromium, dir.path(), "traced.html", &page, &[("latency", 7)]);
    assert_eq!(check["charts"]["latency"]["series"], 7, "p99 traced beside the six: {check}");
    assert_eq!(check["charts"]["latency"]["exemplars"], ringed.len(), "{check}");

    let path = dir.path().join("hover.html");
    let at = page.rfind("</body>").unwrap();
    std::fs::write(&path, format!("{}{HOVER_EXEMPLAR}{}", &page[..at], &page[at..])).unwrap();
    let hovered = selfcheck(&headless(&chromium, dir.path(), &path, &["--dump-dom"]));
    eprintln!("hovered: {hovered}");
    assert_eq!(hovered["error"], Value::Null, "{hovered}");
    assert_eq!(hovered["label"], "p99 traced");
    assert_eq!(hovered["kept"], true, "a click keeps the list: {hovered}");
    assert!(hovered["hovered"].as_u64().unwrap() > 0, "hovering lists them: {hovered}");
    let i = hovered["interval"].as_u64().unwrap() as usize;
    assert_eq!(i, ringed[0]);
    let shown: Vec<(String, String)> = hovered["listed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap_or_default().into()))
        .collect();
    // The page keeps an interval's three slowest.
    let expected: Vec<(String, String)> = intervals[i]["exemplars"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|e| {
            let t = e["trace_id"].as_str().unwrap();
            (t.to_string(), JAEGER.replace("{trace_id}", t))
        })
        .collect();
    assert_eq!(shown, expected);
}

/// Without `--trace-context` nothing of traces appears, whatever template is given.
#[test]
fn without_trace_context_the_page_has_no_traces() {
    let dir = tempfile::tempdir().unwrap();
    let (page, summary) = run_with(dir.path(), &[], &[("BARRAGE_TRACE_URL", JAEGER)]);
    assert_eq!(summary["trace_context"], Value::Null);
    assert!(!page.contains("<section id=\"trace-context\">") && section_trace_ids(&page).is_empty());
    let open = r#"<script type="application/json" id="barrage-data">"#;
    let data = &page[page.find(open).unwrap() + open.len()..];
    let data: Value = serde_json::from_str(&data[..data.find("</script>").unwrap()]).unwrap();
    assert!(
        data["series"]["p99_ms"].is_array() && data["series"].get("exemplars").is_none(),
        "no exemplars in the data"
    );
    let Some(chromium) = chromium() else {
        require("chromium", false);
        return;
    };
    let check = check_page(&chromium, dir.path(), "untraced.html", &page, &[("latency", 6)]);
    assert_eq!(check["charts"]["latency"]["series"], 6, "{check}");
    assert_eq!(check["charts"]["latency"]["exemplars"], Value::Null, "{check}");
}

/// `barrage report --trace-url` links a results file's traces anew (`{span_id}` too), and
/// BARRAGE_TRACE_URL when the flag is absent; a template that could carry markup, or is no
/// http(s) URL, is one line naming the flag (or the variable) and exit 2; a sweep refuses
/// the flag, its page having no trace ids.
#[test]
fn report_trace_url_links_a_results_files_traces() {
    let dir = tempfile::tempdir().unwrap();
    let (_, summary) = run_with(dir.path(), &["--trace-context"], &[]);
    let slowest = slowest(&summary);
    let results = dir.path().join("run.brg");
    let report = |args: &[&str], envs: &[(&str, &str)]| {
        let page = dir.path().join("again.html");
        let _ = std::fs::remove_file(&page);
        let out = barrage()
            .arg("report")
            .arg(&results)
            .arg("--html")
            .arg(&page)
            .args(args)
            .envs(envs.iter().copied())
            .output();
        let out = out.unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), std::fs::read_to_string(&page).ok())
    };

    let tempo = "https://tempo.test/explore?trace={trace_id}&span={span_id}";
    let (code, stderr, page) = report(&["--trace-url", tempo], &[("BARRAGE_TRACE_URL", JAEGER)]);
    assert_eq!(code, Some(0), "{stderr}");
    let fill = |(t, s): &(String, String)| Some(tempo.replace("{trace_id}", t).replace("{span_id}", s));
    let wanted: Vec<_> = slowest.iter().map(|e| (e.0.clone(), fill(e))).collect();
    assert_eq!(section_trace_ids(&page.unwrap()), wanted, "the flag over the variable");

    let (code, stderr, page) = report(&[], &[("BARRAGE_TRACE_URL", JAEGER)]);
    assert_eq!(code, Some(0), "{stderr}");
    let wanted: Vec<_> = slowest.iter().map(|(t, _)| (t.clone(), Some(JAEGER.replace("{trace_id}", t)))).collect();
    assert_eq!(section_trace_ids(&page.unwrap()), wanted, "the variable");

    let (code, stderr, page) = report(&[], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let wanted: Vec<_> = slowest.iter().map(|(t, _)| (t.clone(), None)).collect();
    assert_eq!(section_trace_ids(&page.unwrap()), wanted, "text to copy");

    for (args, envs, names) in [
        (vec!["--trace-url", "http://x/\"><script>alert(1)</script>{trace_id}"], vec![], "--trace-url"),
        (vec!["--trace-url", "javascript:alert(1)//{trace_id}"], vec![], "--trace-url"),
        (vec!["--trace-url", "http://localhost:16686/trace/"], vec![], "--trace-url"),
        (vec![], vec![("BARRAGE_TRACE_URL", "http://x/'><img src=x onerror=alert(1)>{trace_id}")], "BARRAGE_TRACE_URL"),
    ] {
        let (code, stderr, page) = report(&args, &envs);
        assert_eq!(code, Some(2), "{args:?} {envs:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(names) && !stderr.contains("panicked"), "{stderr}");
        assert!(page.is_none(), "no page written");
    }

    let out = barrage()
        .args(["sweep", "http://127.0.0.1:9/", "--rate", "10,20", "--step", "200ms", "--trace-url", JAEGER])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--trace-url") && stderr.lines().count() == 1, "{stderr}");
}
