//! `--otlp`: the live views' observer, wrapped so each interval also goes to the OTLP
//! export thread; the export's one line on stderr at the end when something was lost.

use crate::args::OtelArgs;
use anyhow::Context;
use barrage_metrics::IntervalRecord;
use barrage_otel::{Config, Exporter, MetricsEncoder};
use barrage_study::views::Views;
use barrage_study::{Observer, RunOrder};
use std::time::Duration;

/// How long the end of a run waits for what is still queued for the collector.
const FLUSH_WAIT: Duration = Duration::from_secs(5);

/// The export a command's runs feed, when one is asked for.
pub struct Otlp {
    config: Config,
    exporter: Exporter,
    encoder: Option<MetricsEncoder>,
}

impl Otlp {
    /// Starts the export the flags and `OTEL_*` variables ask for; `None` when none is.
    pub fn start(a: &OtelArgs) -> anyhow::Result<Option<Otlp>> {
        let Some(config) = barrage_otel::resolve(&a.flags(), &|k| std::env::var(k).ok())? else {
            return Ok(None);
        };
        let resource = barrage_otel::metrics::resource(&config);
        let exporter = Exporter::start(config.clone(), resource).context("otlp: cannot start the export thread")?;
        Ok(Some(Otlp { config, exporter, encoder: None }))
    }

    /// What each run of the export needs to know of it ([`Feed::apply`]).
    pub fn feed(&self) -> Feed {
        Feed { spans: barrage_metrics::trace::Spans(std::sync::Arc::new(self.exporter.spans())), view: self.view() }
    }

    /// What the results file's settings say of the export: how, never where (an endpoint may
    /// hold credentials, and where the figures went is the user's).
    pub fn view(&self) -> serde_json::Value {
        let c = &self.config;
        serde_json::json!({ "protocol": c.protocol.name(), "temporality": c.temporality.name(), "scale": c.scale })
    }

    /// Sends what is queued (waiting at most [`FLUSH_WAIT`]) and says on stderr what the
    /// collector did not get.
    pub fn finish(self) {
        if let Some(line) = self.exporter.finish(FLUSH_WAIT).line() {
            eprintln!("{line}");
        }
    }
}

/// What a run order takes of the export: where its sampled requests' client spans go, and
/// what its settings say of the export.
#[derive(Clone)]
pub struct Feed {
    spans: barrage_metrics::trace::Spans,
    view: serde_json::Value,
}

impl Feed {
    /// `order` exported: its client spans when it has `--trace-context` (without it no
    /// request is sampled), and its settings saying how.
    pub fn apply(&self, order: &mut RunOrder) {
        order.spans = order.plan.trace.is_some().then(|| self.spans.clone());
        order.otlp = Some(self.view.clone());
    }
}

/// The views, and the export beside them.
pub struct Exported<'a> {
    /// The live views.
    pub views: &'a mut Views,
    /// The export, if any.
    pub otlp: Option<&'a mut Otlp>,
}

impl Observer for Exported<'_> {
    fn begin(&mut self, order: &RunOrder, index: usize, planned: usize) -> Result<(), String> {
        if let Some(o) = self.otlp.as_deref_mut() {
            // Each run of a study starts its own cumulative series.
            o.encoder = Some(MetricsEncoder::new(&o.config, order.plan.protocol.kv().is_some()));
        }
        self.views.begin(order, index, planned)
    }

    fn interval(&mut self, i: IntervalRecord) {
        if let Some(o) = self.otlp.as_deref_mut() {
            if let Some(e) = &mut o.encoder {
                o.exporter.send_metrics(e.encode(&i));
            }
        }
        self.views.interval(i);
    }

    fn end(&mut self) -> Result<(), String> {
        self.views.end()
    }

    fn note(&mut self, line: &str) {
        self.views.note(line);
    }

    fn testbed_up(&mut self, dir: &std::path::Path) {
        self.views.testbed_up(dir);
    }
}
