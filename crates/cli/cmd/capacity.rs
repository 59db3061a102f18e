//! `barrage capacity`: the highest open-loop rate that meets every `--slo`. An exponential
//! ramp brackets it, a binary search narrows the bracket to `--precision`, within a bound on
//! the total time; a collapse of the target ends the ramp at once.

use super::sweep::{run_level, Level, LevelResult};
use crate::args::{CapacityArgs, Format};
use crate::Outcome;
use anyhow::bail;
use barrage_metrics::units::fmt_us;
use barrage_report::{Align, Cell, Sheet, Table};
use std::time::{Duration, Instant};

/// Length of a probe when --step is not given.
const DEFAULT_STEP: Duration = Duration::from_secs(10);

/// What the search found.
struct Search {
    probes: Vec<LevelResult>,
    /// Highest rate that met every objective.
    capacity: Option<f64>,
    /// Lowest rate that missed one.
    failed_at: Option<f64>,
    /// Why the search stopped.
    stop: String,
}

/// Runs the search and prints what it found.
pub fn capacity(a: CapacityArgs) -> anyhow::Result<Outcome> {
    if a.run.slo.is_empty() {
        bail!("capacity needs at least one --slo, e.g. --slo 'p99<100ms' --slo 'success>=99.9%'");
    }
    super::sweep::refuse_per_run_flags(&a.run, "capacity")?;
    if a.run.duration.is_some() {
        bail!("capacity runs each probe for --step (default 10s): drop -d/--duration");
    }
    if a.run.rate.is_some() || a.run.concurrency.is_some() {
        bail!("capacity chooses the rates itself: drop --rate and -c (use --start-rate and --max-rate)");
    }
    let step = a.run.step.map_or(DEFAULT_STEP, |s| s.0);
    if let Some(dir) = &a.run.output {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("-o {}: {e}", dir.display()))?;
    }
    let search = search(&a, step)?;
    let sheet = probes_sheet(&search.probes);
    match a.run.format {
        Format::Text => print!("{}", text(&search)),
        Format::Csv => print!("{}", barrage_report::to_csv(&sheet)),
        Format::Json => println!("{}", json(&search)),
        Format::Html => print!("{}", page(&search, &sheet, &a)),
        Format::HdrLog => bail!("--format hdr-log is for `barrage report`"),
    }
    if let Some(path) = &a.run.html {
        std::fs::write(path, page(&search, &sheet, &a))
            .map_err(|e| anyhow::anyhow!("--html {}: {e}", path.display()))?;
    }
    super::export::export(&[sheet], a.run.xlsx.as_deref(), a.run.csv_dir.as_deref())?;
    if let Some(path) = &a.run.junit {
        let results: Vec<barrage_report::SloResult> = search
            .probes
            .iter()
            .flat_map(|p| {
                p.slos.iter().map(|x| barrage_report::SloResult {
                    slo: format!("{} at {}", x.slo, p.level.label()),
                    ..x.clone()
                })
            })
            .collect();
        let secs: f64 = search.probes.iter().map(|p| p.summary.duration.total_s).sum();
        std::fs::write(path, barrage_report::junit("barrage capacity", &results, secs))
            .map_err(|e| anyhow::anyhow!("--junit {}: {e}", path.display()))?;
    }
    Ok(if search.capacity.is_some() { Outcome::Ok } else { Outcome::Failed })
}

/// The ramp, then the bisection.
fn search(a: &CapacityArgs, step: Duration) -> anyhow::Result<Search> {
    let started = Instant::now();
    let mut probes: Vec<LevelResult> = Vec::new();
    let probe = |rate: f64, probes: &mut Vec<LevelResult>| -> anyhow::Result<bool> {
        let r = run_level(&a.run, Level::Rate(rate), step, probes.len())?;
        if super::run::interrupted() {
            bail!("interrupted during the probe at {rate:.0}/s");
        }
        let passed = r.passed();
        eprintln!("probe {}: {rate:.0}/s → {}", probes.len() + 1, verdict(&r));
        probes.push(r);
        Ok(passed)
    };
    let out_of_time = |started: Instant| started.elapsed() + step > a.max_time.0;
    let (mut lo, mut hi): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = a.start_rate.min(a.max_rate);
    let mut stop = String::new();
    let mut collapse = String::new();
    // Ramp: double until an objective is missed.
    loop {
        if out_of_time(started) {
            stop = "the time bound ran out during the ramp".into();
            break;
        }
        if probe(rate, &mut probes)? {
            lo = Some(rate);
            if rate >= a.max_rate {
                stop = format!("--max-rate {} met every objective: the capacity is at least that", a.max_rate);
                break;
            }
            rate = (rate * 2.0).min(a.max_rate);
        } else {
            hi = Some(rate);
            if collapsed(probes.last().expect("just probed")) {
                collapse = format!("the target collapsed at {rate:.0}/s (under half the offered rate succeeded); ");
            }
            break;
        }
    }
    // Bisection: between the highest pass (or nothing) and the lowest miss.
    while let Some(h) = hi {
        let l = lo.unwrap_or(0.0);
        if h - l <= a.precision * h.max(1.0) || h - l < 1.0 {
            stop = format!("bracketed to within {:.0}%", a.precision * 100.0);
            break;
        }
        if out_of_time(started) {
            stop = "the time bound ran out during the search".into();
            break;
        }
        let mid = (l + h) / 2.0;
        if probe(mid, &mut probes)? {
            lo = Some(mid);
        } else {
            hi = Some(mid);
        }
    }
    Ok(Search { probes, capacity: lo, failed_at: hi, stop: format!("{collapse}{stop}") })
}

fn page(s: &Search, sheet: &Sheet, a: &CapacityArgs) -> String {
    super::sweep::curve_page("Capacity search", sheet, "rate_per_sec", &a.run, knee(&s.probes), s.capacity)
}

/// The target gave up: fewer than half the offered requests succeeded.
fn collapsed(r: &LevelResult) -> bool {
    let s = &r.summary;
    s.throughput_per_sec < 0.5 * s.rate_per_sec || s.success_ratio < 0.5
}

fn verdict(r: &LevelResult) -> String {
    let s = &r.summary;
    let missed: Vec<String> =
        r.slos.iter().filter(|x| !x.pass).map(|x| format!("{} (actual {})", x.slo, x.actual)).collect();
    let head = format!("{:.1}/s ok, p99 {}", s.throughput_per_sec, fmt_us(s.latency.corrected.p99_us as f64));
    if missed.is_empty() {
        format!("{head}: meets every objective")
    } else {
        format!("{head}: misses {}", missed.join(", "))
    }
}

/// The knee: the lowest probed rate whose p99 is more than twice the p99 at the lowest rate.
fn knee(probes: &[LevelResult]) -> Option<f64> {
    let mut by_rate: Vec<(f64, u64)> = probes
        .iter()
        .map(|p| match p.level {
            Level::Rate(r) => (r, p.summary.latency.corrected.p99_us),
            Level::Workers(n) => (f64::from(n), p.summary.latency.corrected.p99_us),
        })
        .collect();
    by_rate.sort_by(|a, b| a.0.total_cmp(&b.0));
    let base = by_rate.first()?.1.max(1);
    by_rate.iter().find(|(_, p99)| *p99 > 2 * base).map(|(r, _)| *r)
}

/// barrage itself limited the probes near the capacity: its CPU or its schedule.
fn generator_limited(search: &Search) -> Vec<String> {
    let near = |p: &&LevelResult| match p.level {
        Level::Rate(r) => Some(r) == search.failed_at || Some(r) == search.capacity,
        Level::Workers(_) => false,
    };
    search
        .probes
        .iter()
        .filter(near)
        .flat_map(|p| p.summary.warnings.iter())
        .filter(|w| w.contains("generator") || w.contains("lagged") || w.contains("barrage's own CPU"))
        .cloned()
        .collect()
}

fn text(s: &Search) -> String {
    let mut out = String::new();
    match s.capacity {
        Some(c) => out.push_str(&format!("Capacity: {c:.0} req/s meets every objective")),
        None => out.push_str("Capacity: none of the probed rates met every objective"),
    }
    match s.failed_at {
        Some(f) => out.push_str(&format!("; {f:.0} req/s misses one\n")),
        None => out.push('\n'),
    }
    out.push_str(&format!("Stopped: {}\n", s.stop));
    match knee(&s.probes) {
        Some(k) => out.push_str(&format!("Knee: p99 more than doubled from the lowest rate at {k:.0} req/s\n")),
        None => out.push_str("Knee: p99 stayed within twice its lowest-rate value over the probed rates\n"),
    }
    let limited = generator_limited(s);
    if !limited.is_empty() {
        out.push_str("barrage itself was the limit near the capacity, so it is a lower bound:\n");
        for w in limited {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out.push('\n');
    let mut t = Table::new(&[
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Left,
    ]);
    t.row(["probe", "rate", "throughput", "success", "p50", "p99", "errors", "objectives"]);
    for (i, p) in s.probes.iter().enumerate() {
        let r = &p.summary;
        let l = &r.latency.corrected;
        t.row([
            (i + 1).to_string(),
            p.level.label(),
            format!("{:.1}/s", r.throughput_per_sec),
            format!("{:.2}%", r.success_ratio * 100.0),
            fmt_us(l.p50_us as f64),
            fmt_us(l.p99_us as f64),
            (r.requests.total - r.requests.ok).to_string(),
            if p.passed() { "met".to_string() } else { "missed".to_string() },
        ]);
    }
    out.push_str(&t.to_text());
    out
}

/// Every probe, in the order tried.
fn probes_sheet(probes: &[LevelResult]) -> Sheet {
    let mut sheet = Sheet::new(
        "capacity",
        &["probe", "rate_per_sec", "throughput_per_sec", "success_percent", "p50_ms", "p99_ms", "errors", "objectives"],
    );
    for (i, p) in probes.iter().enumerate() {
        let s = &p.summary;
        let rate = match p.level {
            Level::Rate(r) => r,
            Level::Workers(n) => f64::from(n),
        };
        sheet.push(vec![
            Cell::from((i + 1) as u64),
            Cell::from(rate),
            Cell::from(s.throughput_per_sec),
            Cell::from(s.success_ratio * 100.0),
            Cell::from(s.latency.corrected.p50_us as f64 / 1e3),
            Cell::from(s.latency.corrected.p99_us as f64 / 1e3),
            Cell::from(s.requests.total - s.requests.ok),
            Cell::from(if p.passed() { "met" } else { "missed" }),
        ]);
    }
    sheet
}

fn json(s: &Search) -> String {
    let probes: Vec<serde_json::Value> = s
        .probes
        .iter()
        .map(|p| {
            let r = &p.summary;
            serde_json::json!({
                "level": p.level.label(),
                "rate_per_sec": match p.level { Level::Rate(r) => r, Level::Workers(n) => f64::from(n) },
                "throughput_per_sec": r.throughput_per_sec,
                "success_ratio": r.success_ratio,
                "p50_us": r.latency.corrected.p50_us,
                "p99_us": r.latency.corrected.p99_us,
                "errors": r.requests.total - r.requests.ok,
                "met": p.passed(),
                "slos": p.slos.iter().map(|x| serde_json::json!({"slo": x.slo, "actual": x.actual, "pass": x.pass})).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({
        "capacity_per_sec": s.capacity,
        "failed_at_per_sec": s.failed_at,
        "stopped": s.stop,
        "knee_per_sec": knee(&s.probes),
        "generator_limited": generator_limited(s),
        "probes": probes,
    })
    .to_string()
}
