//! `barrage demo`'s two runs: a short open loop and a closed loop against one URL, each on
//! one engine thread so that an origin in the same process keeps the other core.

use crate::RunOrder;
use barrage_engine::{Load, Pacer, Plan, Target};
use std::time::Duration;

/// The demo's runs against `url`, each with its title: `rate` a second open loop, then
/// `concurrency` workers closed loop, each for `duration`.
pub fn runs(url: &str, rate: f64, concurrency: u32, duration: Duration) -> Result<Vec<(String, RunOrder)>, String> {
    let runs = [
        (format!("1/2 open loop: {rate}/s"), Load::Open { pacer: Pacer::Constant { rate }, max_in_flight: 256 }),
        (
            format!("2/2 closed loop: {concurrency} workers"),
            Load::Closed { concurrency: concurrency as usize, think_time: Duration::ZERO },
        ),
    ];
    runs.into_iter()
        .map(|(title, load)| {
            let mut p = Plan::new(vec![Target::new(http::Method::GET, url)?], load);
            p.duration = Some(duration);
            p.timeout = Duration::from_secs(10);
            p.connect_timeout = Duration::from_secs(5);
            p.threads = 1;
            Ok((title.clone(), RunOrder::new(p).label("demo", title)))
        })
        .collect()
}
