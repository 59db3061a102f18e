//! `barrage demo`: the origin in-process, a short open-loop and closed-loop run against it.

use super::run::Execution;
use crate::args::units::RateSpec;
use crate::args::DemoArgs;
use crate::Outcome;
use barrage_engine::{Load, Pacer, Plan, Target};
use barrage_server::{RunningServer, ServeConfig};
use std::time::Duration;

/// Runs the demo and prints both reports.
pub fn demo(a: DemoArgs) -> anyhow::Result<Outcome> {
    let server =
        RunningServer::start(ServeConfig { threads: 1, name: Some("demo-origin".into()), ..ServeConfig::default() })?;
    let url = format!("{}/bytes/1k", server.url());
    let rate = match a.rate {
        RateSpec::Constant(r) => Pacer::Constant { rate: r },
        _ => anyhow::bail!("--rate: the demo takes a constant rate such as 2000"),
    };
    println!("barrage demo: origin on {} (1 thread); each run lasts {:?}\n", server.url(), a.duration.0);
    let open = Load::Open { pacer: rate, max_in_flight: 256 };
    println!(
        "== 1/2 open loop: {} against {url}\n",
        Pacer::step_labels(match &open {
            Load::Open { pacer, .. } => pacer,
            Load::Closed { .. } => unreachable!(),
        })[0]
    );
    let settings = |mode: &str| Execution { settings_json: format!("{{\"demo\":\"{mode}\"}}"), ..Default::default() };
    super::run::execute(plan(&url, open, a.duration.0)?, settings("open"))?;
    println!("\n== 2/2 closed loop: {} workers against {url}\n", a.concurrency);
    let closed = Load::Closed { concurrency: a.concurrency as usize, think_time: Duration::ZERO };
    super::run::execute(plan(&url, closed, a.duration.0)?, settings("closed"))?;
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
