//! `barrage demo`: the origin in-process, a short open-loop and closed-loop run against it.

use crate::args::DemoArgs;
use crate::Exit;
use barrage_engine::CancellationToken;
use barrage_plan::units::RateSpec;
use barrage_report::Report;
use barrage_server::{RunningServer, ServeConfig};
use barrage_study::views::Views;
use barrage_study::Runner;

/// Runs the demo and prints both reports.
pub fn demo(a: DemoArgs, stop: CancellationToken) -> anyhow::Result<Exit> {
    let server =
        RunningServer::start(ServeConfig { threads: 1, name: Some("demo-origin".into()), ..ServeConfig::default() })?;
    let url = format!("{}/bytes/1k", server.url());
    let RateSpec::Constant(rate) = a.rate else { anyhow::bail!("--rate: the demo takes a constant rate such as 2000") };
    println!("barrage demo: origin on {} (1 thread); each run lasts {:?}\n", server.url(), a.duration.0);
    let runs = barrage_study::demo::runs(&url, rate, a.concurrency, a.duration.0).map_err(anyhow::Error::msg)?;
    let mut views = Views::start(&Default::default(), &stop, false)?;
    let mut runner = Runner::new("demo", stop, &mut views);
    for (i, (title, job)) in runs.iter().enumerate() {
        println!("{}== {title} against {url}\n", if i > 0 { "\n" } else { "" });
        let Some(done) = runner.run(job)? else { break };
        super::emit::print(&Report::Run(&done.summary).text(false))?;
    }
    drop(runner);
    views.finish();
    println!("\nThe origin answered {} requests. Try: barrage run --help", server.requests());
    server.shutdown();
    Ok(Exit::Ok)
}
