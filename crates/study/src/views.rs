//! The study's observer as the command line shows it: barrage-live's views (the progress
//! line, `--tui`, `--metrics-addr`), each run's `--hdr-log`, the study's progress lines on
//! stderr, and the testbeds a second signal must take down ([`crate::signals`]). Apart from
//! the runner, which knows only the [`Observer`] it feeds.

use crate::{Observer, RunOrder};
use barrage_engine::{CancellationToken, Load, Pacer};
use barrage_live::{HdrLog, Live, LiveError, LiveOptions, RunInfo};
use barrage_metrics::IntervalRecord;

/// The views could not start: the flag that asked for them, and why.
#[derive(Debug, thiserror::Error)]
#[error("{flag}")]
pub struct ViewsError {
    /// `--metrics-addr ADDR` or `--tui`.
    pub flag: String,
    /// Why.
    #[source]
    pub source: LiveError,
}

/// What watches a command's runs.
pub struct Views {
    live: Option<Live>,
    hdr: Option<HdrLog>,
    /// Study progress lines go to stderr (not for a lone run).
    notes: bool,
}

impl Views {
    /// Starts the views `a` asks for; `q` in the TUI cancels `stop`.
    pub fn start(a: &LiveOptions, stop: &CancellationToken, notes: bool) -> Result<Views, ViewsError> {
        let live = Live::start(a, stop.clone()).map_err(|source| ViewsError {
            flag: match a.metrics_addr {
                Some(addr) if !a.tui => format!("--metrics-addr {addr}"),
                _ => "--tui".into(),
            },
            source,
        })?;
        if let Some(addr) = live.metrics_addr() {
            eprintln!("metrics on http://{addr}/metrics");
            barrage_server::warn_if_exposed("--metrics-addr", addr);
        }
        Ok(Views { live: Some(live), hdr: None, notes })
    }

    /// Restores the terminal and stops the endpoint.
    pub fn finish(mut self) {
        if let Some(live) = self.live.take() {
            live.finish();
        }
    }
}

impl Observer for Views {
    fn begin(&mut self, order: &RunOrder, index: usize, planned: usize) -> Result<(), String> {
        self.hdr = Some(HdrLog::create(order.hdr_log.clone()).map_err(|e| e.to_string())?);
        let title = order.title();
        let label = (!title.is_empty()).then(|| match planned {
            0 | 1 => title.clone(),
            n => format!("{}/{n}: {title}", index + 1),
        });
        if let Some(live) = &mut self.live {
            live.begin(info(order, label));
        }
        Ok(())
    }

    fn interval(&mut self, i: IntervalRecord) {
        if let Some(h) = &mut self.hdr {
            h.write(&i);
        }
        if let Some(live) = &mut self.live {
            live.interval(i);
        }
    }

    fn end(&mut self) -> Result<(), String> {
        if let Some(live) = &mut self.live {
            live.end();
        }
        self.hdr.take().map_or(Ok(()), |h| h.finish().map_err(|e| e.to_string()))
    }

    fn note(&mut self, line: &str) {
        if self.notes {
            eprintln!("{line}");
        }
    }

    fn testbed_up(&mut self, dir: &std::path::Path) {
        crate::signals::down_on_exit(dir);
    }
}

/// What the views know about a run before it starts.
fn info(order: &RunOrder, label: Option<String>) -> RunInfo {
    let plan = &order.plan;
    let (target_rate, concurrency) = match &plan.load {
        Load::Open { pacer: Pacer::Constant { rate }, .. } => (Some(*rate), None),
        Load::Open { .. } => (None, None),
        Load::Closed { concurrency, .. } => (None, Some(*concurrency)),
    };
    let urls = barrage_engine::listed_urls(plan, &order.redaction);
    RunInfo {
        label,
        url_count: urls.len(),
        // The views show the first few: a million would take 70 MB for the run's length.
        urls: urls.take(barrage_live::URLS_SHOWN).collect(),
        target_rate,
        concurrency,
        total: plan.attack_limit(),
        requests: plan.requests,
    }
}

#[cfg(test)]
mod tests {
    use crate::RunOrder;
    use barrage_engine::{Load, Plan, Target};

    /// The TUI's header and every view show the URLs as the run's outputs do.
    #[test]
    fn the_live_views_show_urls_redacted() {
        let t = Target::new(http::Method::GET, "http://u:S3CRET@127.0.0.1/?token=S3CRET&x=1").unwrap();
        let mut order =
            RunOrder::new(Plan::new(vec![t], Load::Closed { concurrency: 1, think_time: Default::default() }));
        assert_eq!(super::info(&order, None).urls, ["http://u:<redacted>@127.0.0.1/?token=<redacted>&x=1"]);
        order.redaction = barrage_metrics::secrets::Redaction::off();
        assert_eq!(super::info(&order, None).urls, ["http://u:S3CRET@127.0.0.1/?token=S3CRET&x=1"]);
    }
}
