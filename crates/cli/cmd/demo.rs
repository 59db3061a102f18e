//! `barrage demo`: the origin in-process, a short open-loop and closed-loop run against it.

use super::live::Views;
use crate::args::{DemoArgs, LiveArgs};
use crate::Outcome;
use barrage_engine::{CancellationToken, Load, Pacer, Plan, Target};
use barrage_plan::units::RateSpec;
use barrage_report::Report;
use barrage_server::{RunningServer, ServeConfig};
use barrage_study::{RunOrder, Runner};
use std::time::Duration;

/// Runs the demo and prints both reports.
pub fn demo(a: DemoArgs, stop: CancellationToken) -> anyhow::Result<Outcome> {
    let server =
        RunningServer::start(ServeConfig { threads: 1, name: Some("demo-origin".into()), ..ServeConfig::default() })?;
    let url = format!("{}/bytes/1k", server.url());
    let RateSpec::Constant(rate) = a.rate else { anyhow::bail!("--rate: the demo takes a constant rate such as 2000") };
    println!("barrage demo: origin on {} (1 thread); each run lasts {:?}\n", server.url(), a.duration.0);
    let runs = [
        (format!("1/2 open loop: {rate}/s"), Load::Open { pacer: Pacer::Constant { rate }, max_in_flight: 256 }),
        (
            format!("2/2 closed loop: {} workers", a.concurrency),
            Load::Closed { concurrency: a.concurrency as usize, think_time: Duration::ZERO },
        ),
    ];
    let mut views = Views::start(&LiveArgs { tui: false, metrics_addr: None }, &stop, false)?;
    let mut runner = Runner::new("demo", stop, &mut views);
    for (i, (title, load)) in runs.into_iter().enumerate() {
        println!("{}== {title} against {url}\n", if i > 0 { "\n" } else { "" });
        let job = RunOrder::new(plan(&url, load, a.duration.0)?).label("demo", title);
        let Some(done) = runner.run(&job)? else { break };
        super::emit::print(&Report::Run(&done.summary).text(false))?;
    }
    drop(runner);
    views.finish();
    println!("\nThe origin answered {} requests. Try: barrage run --help", server.requests());
    server.shutdown();
    Ok(Outcome::Ok)
}

/// The demo's plan: one GET, a 10 s timeout, and one engine thread so that the in-process
/// origin keeps the other core.
fn plan(url: &str, load: Load, duration: Duration) -> anyhow::Result<Plan> {
    let mut p = Plan::new(vec![Target::new(http::Method::GET, url).map_err(anyhow::Error::msg)?], load);
    p.duration = Some(duration);
    p.timeout = Duration::from_secs(10);
    p.connect_timeout = Duration::from_secs(5);
    p.threads = 1;
    Ok(p)
}
