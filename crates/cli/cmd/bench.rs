//! `barrage testbed bench`: the classic comparisons in one command. `all` comes up, the
//! same load runs against each front in turn (direct, nginx, haproxy, varnish and squid
//! with hits and with misses, then each again over HTTPS), and one table compares them:
//! throughput, latency, success, hit ratio, and the CPU of the front.

use crate::args::{BalanceArg, TestbedBenchArgs};
use crate::Outcome;
use anyhow::Context;
use barrage_engine::{CancellationToken, Load, Pacer, Plan, RunSpec, Target, Watch, WatchTarget};
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_metrics::units::fmt_us;
use barrage_report::{Align, Table};
use barrage_testbed::{State, Topology};
use std::path::PathBuf;
use std::time::Duration;

/// Workers of the closed loop when neither --rate nor --concurrency is given.
const DEFAULT_CONCURRENCY: u32 = 16;

/// One row of the comparison: which front, which URL.
struct Case {
    label: String,
    front: String,
    url: String,
    /// Every request a new object: a cache misses each time.
    unique: bool,
}

/// Takes a testbed down when dropped, so an error or Ctrl-C in the middle leaves nothing.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        if let Err(e) = barrage_testbed::down(&self.0) {
            eprintln!("barrage: taking the testbed down: {e}");
        }
    }
}

/// Runs the comparison and prints the table.
pub fn bench(a: TestbedBenchArgs) -> anyhow::Result<Outcome> {
    let dir = match &a.dir.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("barrage-bench-{}", std::process::id())),
    };
    let options = super::testbed::options(Topology::All, Some(a.backends), !a.no_tls, BalanceArg::Roundrobin)?;
    eprintln!("bringing up nginx, haproxy, varnish and squid over {} origins…", a.backends);
    let state = barrage_testbed::up(&options, &dir)?;
    let _down = Down(dir.clone());
    if let Some(out) = &a.output_dir {
        std::fs::create_dir_all(out).with_context(|| format!("--output-dir {}", out.display()))?;
    }
    // Ctrl-C ends the current run and skips the rest; the testbed still goes down.
    let stop = super::run::ctrl_c()?;
    super::run::down_on_exit(&dir);
    let mut rows = Vec::new();
    for case in cases(&state, &a.size, !a.no_tls) {
        eprintln!("{}: {}", case.label, case.url);
        let summary = run_case(&case, &a, &state, &stop)?;
        rows.push((case, summary));
        if stop.is_cancelled() {
            break;
        }
    }
    print!("{}", table(&rows));
    if a.no_tls {
        println!("(HTTPS rows skipped: --no-tls)");
    } else {
        println!("(varnish has no TLS: no HTTPS row for it)");
    }
    Ok(Outcome::Ok)
}

/// The cases in table order: every front over HTTP, then over HTTPS.
fn cases(state: &State, size: &str, tls: bool) -> Vec<Case> {
    let fronts: [(&str, &str, bool); 7] = [
        ("direct", "origin-1", false),
        ("nginx-lb", "nginx-lb", false),
        ("haproxy-lb", "haproxy-lb", false),
        ("varnish hits", "varnish", false),
        ("varnish misses", "varnish", true),
        ("squid hits", "squid", false),
        ("squid misses", "squid", true),
    ];
    let mut out = Vec::new();
    for https in [false, true].into_iter().filter(|h| !h || tls) {
        for (label, front, unique) in fronts {
            let Some(server) = state.server(front) else { continue };
            let base = if https { server.spec.tls_url() } else { Some(server.spec.url()) };
            let Some(base) = base else { continue };
            let path = if unique { format!("bytes/{size}?miss={{id}}") } else { format!("bytes/{size}") };
            let label = if https { format!("{label} (https)") } else { label.to_string() };
            out.push(Case { label, front: front.into(), url: format!("{base}{path}"), unique });
        }
    }
    out
}

/// One run against one front, watching every server of the testbed.
fn run_case(case: &Case, a: &TestbedBenchArgs, state: &State, stop: &CancellationToken) -> anyhow::Result<RunSummary> {
    let target = Target::new(http::Method::GET, &case.url).map_err(anyhow::Error::msg)?;
    let load = match a.rate {
        Some(rate) => Load::Open { pacer: Pacer::Constant { rate }, max_in_flight: 256 },
        None => Load::Closed {
            concurrency: a.concurrency.unwrap_or(DEFAULT_CONCURRENCY) as usize,
            think_time: Duration::ZERO,
        },
    };
    let mut plan = Plan::new(vec![target], load);
    plan.duration = Some(a.duration.0);
    // A new id per request, never repeated within the run: the Wisconsin stream with no
    // repeats gives each client ids of its own.
    if case.unique {
        plan.objects = Some(1 << 40);
        plan.hit_ratio = Some(0.0);
    }
    plan.tls.cacert = state.ca.clone();
    plan.validate().map_err(anyhow::Error::msg)?;
    let temp;
    let output = match &a.output_dir {
        Some(dir) => dir.join(format!("{}.brg", case.label.replace([' ', '(', ')'], "-").replace("--", "-"))),
        None => {
            temp = tempfile::Builder::new().prefix("barrage-bench-").suffix(".brg").tempfile()?;
            temp.path().to_path_buf()
        }
    };
    let watch = state
        .servers
        .iter()
        .map(|s| Watch { label: s.spec.name.clone(), target: WatchTarget::PidFile(s.pid_file()) })
        .collect();
    let settings = serde_json::json!({ "bench": case.label, "url": case.url }).to_string();
    let spec = RunSpec { output: output.clone(), settings_json: settings, watch, ..Default::default() };
    barrage_engine::run(plan, &spec, stop.clone(), &mut |_| {})?;
    Ok(summarize(&[output])?)
}

/// The comparison table.
fn table(rows: &[(Case, RunSummary)]) -> String {
    use Align::{Left, Right};
    let mut t = Table::new(&[Left, Right, Right, Right, Right, Right, Right, Right]);
    t.row(["front", "throughput", "p50", "p99", "success", "hit ratio", "front cpu", "origins cpu"]);
    for (case, s) in rows {
        let cpu = |name: &str| s.processes.iter().find(|p| p.name == name).map_or(0.0, |p| p.cpu_mean_percent);
        let origins: f64 =
            s.processes.iter().filter(|p| p.name.starts_with("origin-")).map(|p| p.cpu_mean_percent).sum();
        let front_cpu =
            if case.front.starts_with("origin") { "-".to_string() } else { format!("{:.0}%", cpu(&case.front)) };
        t.row([
            case.label.clone(),
            format!("{:.0}/s", s.throughput_per_sec),
            fmt_us(s.latency.corrected.p50_us as f64),
            fmt_us(s.latency.corrected.p99_us as f64),
            format!("{:.2}%", s.success_ratio * 100.0),
            s.cache.as_ref().map_or("-".to_string(), |c| format!("{:.1}%", c.hit_ratio * 100.0)),
            front_cpu,
            format!("{origins:.0}%"),
        ]);
    }
    let mut out = t.to_text();
    out.push_str("(latency is corrected; cpu is the mean % of one core, a server counted with its children)\n");
    out
}
