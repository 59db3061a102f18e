//! `barrage collect`: the shards of a split run stream their results here as they run; the
//! fleet's live view while they do, and at the end the report `barrage report` gives of
//! their files (the collector's copies are those files, byte for byte).

use super::emit::{emit_with, exit, gates};
use crate::args::CollectArgs;
use crate::Exit;
use barrage_engine::CancellationToken;
use barrage_fleet::{Collected, Collector, Config};
use barrage_report::{Report, Slo};
use std::path::PathBuf;

/// How often the live page is loaded again.
const LIVE_PAGE_REFRESH_S: u32 = 5;

/// Collects until every shard ended or was lost, then reports the merged run.
pub fn collect(a: CollectArgs, stop: CancellationToken) -> anyhow::Result<Exit> {
    if a.emit.format == crate::args::Format::HdrLog {
        anyhow::bail!(
            "--format hdr-log is for `barrage report` of results files: collect writes the shards' files to report"
        );
    }
    a.emit.files().check(a.gates.junit.as_deref())?;
    let html = a.links.html_options()?;
    let dir = a.dir.clone().unwrap_or_else(default_dir);
    // Its /metrics bound first: a port in use leaves no directory behind either.
    let mut live = barrage_live::Live::start(&a.live.options(), stop.clone())?;
    let config = Config {
        listen: a.listen,
        shards: a.shards,
        dir: dir.clone(),
        lateness: a.lateness.0,
        max_clock_offset: a.max_clock_offset.0,
        lead: a.lead.0,
        on_loss: a.on_shard_loss.of(),
    };
    let mut collector = Collector::start(config, Some(live_page(&html)))?;
    eprintln!(
        "barrage collect: listening on http://{}/ for {} shard(s) (the run so far: this address in a browser), their files in {}",
        collector.addr(),
        a.shards,
        dir.display()
    );
    if let Some(addr) = live.metrics_addr() {
        eprintln!("metrics on http://{addr}/metrics");
    }
    let collected = collector.collect(&mut live, &mut |files, lost| fleet_slo(&a.gates.slo, files, lost), &stop);
    live.finish();
    drop(collector);
    report(&a, collected, &html)
}

/// The merged report of what came, as `barrage report` gives it; the lost shards named first.
fn report(a: &CollectArgs, c: Collected, html: &barrage_report::HtmlOptions) -> anyhow::Result<Exit> {
    for why in &c.refused {
        eprintln!("barrage collect: refused: {why}");
    }
    // Stopped before anything came: that is the one thing to say, not each shard's loss.
    if let (true, None, Some(why)) = (c.files.is_empty(), &c.aborted, &c.stopped) {
        anyhow::bail!("{why} before any shard sent data");
    }
    for lost in &c.lost {
        eprintln!("barrage collect: shard {}/{} lost: {}", lost.shard, a.shards, lost.why);
    }
    if let Some(why) = &c.stopped {
        eprintln!("barrage collect: every shard was told to stop: {why}");
    }
    if let Some(why) = c.aborted {
        anyhow::bail!("the start failed: {why}");
    }
    if c.files.is_empty() {
        anyhow::bail!("no shard sent its run");
    }
    // What came is merged, whatever is missing: the report says first what does not fit.
    let mut summary = barrage_metrics::summary::summarize_with(&c.files, true)?;
    if summary.interrupted {
        summary.stopped_by = c.stopped.as_ref().map(|why| format!("the collector: {why}"));
    }
    emit_with(&Report::Run(&summary), &a.emit, html)?;
    let results: Vec<_> = a.gates.slo.iter().map(|s| s.check(&summary)).collect();
    let suite = format!("barrage collect {}", barrage_report::urls_line(&summary.urls));
    let passed =
        gates(&results, a.emit.format, a.gates.junit.as_deref(), &suite, summary.duration.total_s, summary.unredacted)?;
    // A run aborted for a lost shard is not the run planned.
    let aborted = a.on_shard_loss == crate::args::ShardLoss::Abort && !c.lost.is_empty();
    Ok(exit(&Report::Run(&summary), 1, "run", passed && !aborted))
}

/// The live page: the HTML report of the run so far, as `barrage report --html` writes it
/// of the copies but with the shards still sending read as running, not killed
/// ([`barrage_metrics::summary::summarize_running`]), loaded again by the browser every few
/// seconds.
fn live_page(html: &barrage_report::HtmlOptions) -> barrage_fleet::Render {
    let options = barrage_report::HtmlOptions { refresh_s: Some(LIVE_PAGE_REFRESH_S), ..html.clone() };
    std::sync::Arc::new(move |files: &[PathBuf], lost: &[PathBuf]| {
        let summary = barrage_metrics::summary::summarize_running(files, lost).ok()?;
        Some(barrage_report::html_with(&barrage_report::Page::Run(&summary), &options))
    })
}

/// A fleet-wide objective missed by the run so far: why every shard must stop. The run so
/// far as the live page reads it: judged on the arrivals due by now, not on those to come.
fn fleet_slo(slos: &[Slo], files: &[PathBuf], lost: &[PathBuf]) -> Option<String> {
    if slos.is_empty() || files.is_empty() {
        return None;
    }
    let summary = barrage_metrics::summary::summarize_running(files, lost).ok()?;
    let missed: Vec<String> = slos
        .iter()
        .map(|s| s.check(&summary))
        .filter(|r| !r.pass)
        .map(|r| format!("{} (actual {})", r.slo, r.actual))
        .collect();
    (!missed.is_empty()).then(|| format!("fleet-wide --slo missed: {}", missed.join(", ")))
}

/// `fleet-<UTC time>` in the working directory: `fleet-20261128T235959Z`.
fn default_dir() -> PathBuf {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let digits: String = barrage_report::utc(ms).chars().filter(char::is_ascii_digit).collect();
    PathBuf::from(format!("fleet-{}T{}Z", &digits[..8], &digits[8..14]))
}

/// A shard's part in a fleet (`run --report-to`, `--rendezvous`): its stream to the
/// collector, joined to the run's order.
pub struct Shard {
    reporter: barrage_fleet::Reporter,
    /// The collector's URL, for a refusal's line.
    url: String,
}

impl Shard {
    /// Starts streaming `job` to the collector of `--report-to`; with `--rendezvous`, waits
    /// for the collector's start first and sets it, and the clock offset measured, on `job`.
    /// `None` without `--report-to`.
    pub fn join(
        launch: &crate::args::LaunchArgs,
        job: &mut barrage_study::RunOrder,
        stop: &CancellationToken,
    ) -> anyhow::Result<Option<Shard>> {
        let Some(url) = &launch.report_to else { return Ok(None) };
        let shard = (job.plan.shard.index, job.plan.shard.count);
        let (run, plan) = (token(), job.plan_digest());
        if launch.rendezvous {
            let client = barrage_fleet::client::Client::new(url)?;
            let settings = job.settings_json("run");
            let comer = barrage_fleet::rendezvous::Comer { shard, run: &run, plan: &plan, settings: &settings };
            let met = barrage_fleet::rendezvous::rendezvous(&client, &comer, stop)?;
            job.start_at = Some(met.start);
            job.clock_offset_us = Some(met.clock.offset_us);
            job.fleet = Some(serde_json::json!({ "rendezvous": met.clock }));
        }
        let client = barrage_fleet::client::Client::new(url)?;
        let (part, takeover) = match launch.resume_at {
            Some(_) => (barrage_fleet::Part::Takeover, None),
            None => (barrage_fleet::Part::Own, takeover(job)),
        };
        let who = barrage_fleet::Who { shard, part, run, plan };
        let (reporter, mirror) =
            barrage_fleet::Reporter::start(client, who, takeover, stop.clone(), job.stopped_by.clone())?;
        job.mirror = Some(mirror);
        Ok(Some(Shard { reporter, url: url.trim_end_matches('/').to_string() }))
    }

    /// The run ended: the rest of its stream sent, or a line on why not. A shard the
    /// collector refused is an error (exit 2): it is not a part of the fleet's run.
    pub fn finish(self) -> anyhow::Result<()> {
        let ended = self.reporter.finish();
        if let Some(why) = ended.short {
            eprintln!("barrage: --report-to: {why}");
        }
        if let Some(why) = ended.refused {
            anyhow::bail!(
                "--report-to: the collector at {} refused the results, so this shard stopped: {why}",
                self.url
            );
        }
        Ok(())
    }
}

/// A token of this process, for the collector to tell two processes given one `--shard`
/// apart: its pid and the time it asked, in hex.
fn token() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format!("{:x}{:x}", std::process::id(), now.as_nanos())
}

/// How this shard takes over a lost one's share: its own command line again, as that shard
/// from the second the collector gives; `None` without a start to share (no --start-at or
/// --rendezvous: the shards' schedules are not one) and for a count of a closed loop's
/// (`-n`, a group's `iterations`), which the collector does not ask to take over
/// ([`barrage_fleet::collector::not_adoptable`] says why).
fn takeover(job: &barrage_study::RunOrder) -> Option<barrage_fleet::Takeover> {
    let closed = matches!(job.plan.load, barrage_engine::Load::Closed { .. });
    let counted = job.plan.scenario.as_ref().is_some_and(|s| s.groups.iter().any(|g| g.iterations.is_some()));
    if counted || (closed && job.plan.requests.is_some()) {
        return None;
    }
    let start = job.start_at?.duration_since(std::time::UNIX_EPOCH).ok()?.as_micros() as u64;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (n, output, log) = (job.plan.shard.count, job.output.clone(), job.log.as_ref().map(|l| l.path.clone()));
    let exe = std::env::current_exe().ok()?;
    Some(Box::new(move |a| {
        let file = output.as_deref().map(|o| super::takeover::beside(o, a.shard));
        let mut command = std::process::Command::new(&exe);
        command
            .args(super::takeover::command(&args, a, n, start, output.as_deref(), log.as_deref()))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        (command, file)
    }))
}
