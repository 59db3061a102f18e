//! `barrage testbed bench`: the classic comparisons in one command. `all` comes up, the
//! same load runs against each front in turn (direct, nginx, haproxy, varnish and squid
//! with hits and with misses, then each again over HTTPS), and one table compares them.

use super::emit::{emit, outcome};
use super::live::Views;
use crate::args::{BalanceArg, LiveArgs, TestbedBenchArgs};
use crate::Outcome;
use anyhow::Context;
use barrage_engine::{CancellationToken, Load, Pacer, Plan, Target, Watch, WatchTarget};
use barrage_report::{Report, StudyRow, StudyTable};
use barrage_study::{RunOrder, Runner};
use barrage_testbed::{State, Topology};
use std::path::PathBuf;
use std::time::Duration;

/// Workers of the closed loop when neither --rate nor --concurrency is given.
const DEFAULT_CONCURRENCY: u32 = 16;

/// Takes a testbed down when dropped, so an error or a signal in the middle leaves nothing.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        if let Err(e) = barrage_testbed::down(&self.0) {
            eprintln!("barrage: taking the testbed down: {e}");
        }
    }
}

/// Runs the comparison and prints the table.
pub fn bench(a: TestbedBenchArgs, stop: CancellationToken) -> anyhow::Result<Outcome> {
    let dir =
        a.dir.dir.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("barrage-bench-{}", std::process::id())));
    let options = super::testbed::options(Topology::All, Some(a.backends), !a.no_tls, BalanceArg::Roundrobin)?;
    // Checked before the servers come up: a bad output is not worth a testbed.
    super::emit::check_outputs(&a.emit, None)?;
    if let Some(out) = &a.output_dir {
        super::emit::check_dir(out, "--output-dir")?;
    }
    if a.rate.is_none() {
        super::limits::check_connections(a.concurrency.unwrap_or(DEFAULT_CONCURRENCY) as usize, 0, "-c")?;
    }
    eprintln!("bringing up nginx, haproxy, varnish and squid over {} origins…", a.backends);
    crate::signals::down_on_exit(&dir);
    let state = barrage_testbed::up(&options, &dir, barrage_testbed::Lifetime::Caller, &|| stop.is_cancelled())?;
    let _down = Down(dir.clone());
    if let Some(out) = &a.output_dir {
        std::fs::create_dir_all(out).with_context(|| format!("--output-dir {}", out.display()))?;
    }
    let cases = cases(&state, &a.size, !a.no_tls);
    let mut table = StudyTable::new("bench", &["front"]);
    table.planned = cases.len();
    let mut views = Views::start(&LiveArgs { tui: false, metrics_addr: None }, &stop, true)?;
    let mut runner = Runner::new("bench", stop, &mut views);
    runner.plan_runs(cases.len());
    for (i, (label, url, unique)) in cases.into_iter().enumerate() {
        let mut job = job(&label, &url, unique, &a, &state)?;
        // Each front its own stream: the HTTPS misses row must not hit what HTTP cached.
        job.plan.in_study(i as u64 + 1, &[], 0, 0);
        let Some(done) = runner.run(&job)? else { break };
        let ok =
            done.summary.throughput_per_sec.map_or_else(|| "n/a (too few requests)".into(), |t| format!("{t:.0}/s"));
        runner.note(&format!("{label}: {ok} ok"));
        table.rows.push(StudyRow::new(vec![label], vec![done.summary]));
        if done.interrupted {
            break;
        }
    }
    table.partial = runner.stopped();
    drop(runner);
    views.finish();
    let report = Report::Bench(&table);
    emit(&report, &a.emit)?;
    if a.no_tls && a.emit.format == crate::args::Format::Text {
        println!("(HTTPS rows skipped: --no-tls)");
    }
    Ok(outcome(&report, table.rows.len(), "front", true))
}

/// (label, URL, every request a new object) in table order: every front over HTTP, then
/// over HTTPS (varnish's through hitch).
fn cases(state: &State, size: &str, tls: bool) -> Vec<(String, String, bool)> {
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
            // Varnish's HTTPS is hitch's (varnish-tls).
            let tls_url = || server.spec.tls_url().or_else(|| state.server(&format!("{front}-tls"))?.spec.tls_url());
            let Some(base) = (if https { tls_url() } else { Some(server.spec.url()) }) else { continue };
            let path = if unique { format!("bytes/{size}?miss={{id}}") } else { format!("bytes/{size}") };
            let label = if https { format!("{label} (https)") } else { label.to_string() };
            out.push((label, format!("{base}{path}"), unique));
        }
    }
    out
}

/// One run against one front, watching every server of the testbed.
fn job(label: &str, url: &str, unique: bool, a: &TestbedBenchArgs, state: &State) -> anyhow::Result<RunOrder> {
    let target = Target::new(http::Method::GET, url).map_err(anyhow::Error::msg)?;
    let load = match a.rate {
        Some(rate) => Load::Open {
            pacer: Pacer::Constant { rate: rate.0 },
            max_in_flight: barrage_plan::units::DEFAULT_OPEN_CONNECTIONS as usize,
        },
        None => Load::Closed {
            concurrency: a.concurrency.unwrap_or(DEFAULT_CONCURRENCY) as usize,
            think_time: Duration::ZERO,
        },
    };
    let mut plan = Plan::new(vec![target], load);
    plan.duration = Some(a.duration.0);
    // A new id per request, never repeated within the run: the Wisconsin stream with no
    // repeats gives each client ids of its own.
    if unique {
        plan.objects = Some(1 << 40);
        plan.hit_ratio = Some(0.0);
    }
    plan.tls.cacert = state.ca.clone();
    plan.validate().map_err(anyhow::Error::msg)?;
    let mut job = RunOrder::new(plan).label("front", label);
    job.output = a
        .output_dir
        .as_ref()
        .map(|d| d.join(format!("{}.brg", label.replace([' ', '(', ')'], "-").replace("--", "-"))));
    job.watch = state
        .servers
        .iter()
        .map(|s| Watch { label: s.spec.name.clone(), target: WatchTarget::PidFile(s.pid_file()) })
        .collect();
    Ok(job)
}
