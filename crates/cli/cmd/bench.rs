//! `barrage testbed bench`: the classic comparisons in one command. `all` comes up, and
//! barrage-study's [`Bench`] runs the same load against each front in turn.

use super::emit::{emit, exit};
use crate::args::{BalanceArg, TestbedBenchArgs};
use crate::Exit;
use anyhow::Context;
use barrage_engine::CancellationToken;
use barrage_report::Report;
use barrage_study::bench::{Bench, Down, DEFAULT_CONCURRENCY};
use barrage_study::views::Views;
use barrage_study::Runner;
use barrage_testbed::Topology;

/// Runs the comparison and prints the table.
pub fn bench(a: TestbedBenchArgs, stop: CancellationToken) -> anyhow::Result<Exit> {
    let dir =
        a.dir.dir.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("barrage-bench-{}", std::process::id())));
    let options = super::testbed::options(Topology::All, Some(a.backends), !a.no_tls, BalanceArg::Roundrobin)?;
    // Checked before the servers come up: a bad output is not worth a testbed.
    a.emit.files().check(None)?;
    if let Some(out) = &a.output_dir {
        barrage_report::output::check_dir(out, "--output-dir")?;
    }
    let concurrency = a.concurrency.unwrap_or(DEFAULT_CONCURRENCY);
    if a.rate.is_none() {
        barrage_engine::limits::check_connections(concurrency as usize, 0, "-c").map_err(anyhow::Error::msg)?;
    }
    eprintln!("bringing up nginx, haproxy, varnish and squid over {} origins…", a.backends);
    // Under bbr, loopback paced responses of 256 KiB and more; 64 KiB ones measured alike
    // in a run under bbr and one under cubic.
    if barrage_metrics::units::parse_size(&a.size).is_ok_and(|n| n > 64 * 1024) {
        super::testbed::say_congestion();
    }
    barrage_study::signals::down_on_exit(&dir);
    let state = barrage_testbed::up(&options, &dir, barrage_testbed::Lifetime::Caller, &|| stop.is_cancelled())?;
    let _down = Down(dir.clone());
    if let Some(out) = &a.output_dir {
        std::fs::create_dir_all(out).with_context(|| format!("--output-dir {}", out.display()))?;
    }
    let bench = Bench {
        rate: a.rate.map(|r| r.0),
        concurrency,
        duration: a.duration.0,
        size: a.size.clone(),
        tls: !a.no_tls,
        output_dir: a.output_dir.clone(),
    };
    let mut views = Views::start(&Default::default(), &stop, true)?;
    let table = bench.run(&state, &mut Runner::new("bench", stop, &mut views));
    views.finish();
    let table = table?;
    let report = Report::Bench(&table);
    emit(&report, &a.emit)?;
    if a.no_tls && a.emit.format == crate::args::Format::Text {
        println!("(HTTPS rows skipped: --no-tls)");
    }
    Ok(exit(&report, table.rows.len(), "front", true))
}
