//! wrk2's standard output (wrk's too), best run with `--latency`:
//!
//! ```text
//! Running 30s test @ http://127.0.0.1:80/index.html
//!   ...
//!   Latency Distribution (HdrHistogram - Recorded Latency)
//!  50.000%    6.67ms
//!  ...
//!   Detailed Percentile spectrum:
//!        Value   Percentile   TotalCount 1/(1-Percentile)
//!        0.921     0.000000            1         1.00
//!        ...
//! #[Mean    =        6.602, StdDeviation   =        1.919]
//! ----------------------------------------------------------
//!   60018 requests in 30.00s, 19.81MB read
//!   Non-2xx or 3xx responses: 12
//! Requests/sec:   2000.28
//! ```
//!
//! The latency figures are the printed percentiles (50, 90, 99, 99.9 and 100%), the mean
//! and the max of the recorded latency: wrk2's is corrected for coordinated omission (timed
//! from each request's intended start). The one interval is a histogram rebuilt from the
//! detailed spectrum: each row's new requests recorded at its value, so it is approximate
//! between rows (its quantiles at the rows' percentiles are wrk2's); its service latency is
//! the `--u_latency` spectrum's when there is one, else the recorded one. The histograms
//! leave out wrk2's calibration (its first 10 s), so they count fewer requests.
//!
//! A request failed with a status of 400 or more (wrk2's "Non-2xx or 3xx") or a connect,
//! read or write error; timeouts are left out, as wrk2 counts a slow connection at each
//! check, not a request. The throughput is `Requests/sec` less the failed answers' share.
//! Lines it does not know (a script's output) are skipped; the run's start is taken as its
//! length before the file was written.

use super::lines::{self, Lines};
use super::{written_ms, Found};
use crate::entry::Interval;
use crate::fingerprint::mask_loopback_port;
use crate::HistoryError;
use barrage_metrics::recorder::{encode_histogram, new_histogram, HIGHEST_US};
use hdrhistogram::Histogram;
use std::path::Path;

/// One latency distribution: its printed percentiles and its spectrum.
#[derive(Default)]
struct Distribution {
    /// (percent, µs).
    percentiles: Vec<(f64, f64)>,
    /// (µs, total count) of each row.
    spectrum: Vec<(f64, u64)>,
    mean_us: Option<f64>,
    max_us: Option<f64>,
}

impl Distribution {
    fn at(&self, percent: f64) -> Option<f64> {
        self.percentiles.iter().find(|p| (p.0 - percent).abs() < 1e-9).map(|p| p.1)
    }

    /// The spectrum as a histogram: each row's new requests at its value.
    fn histogram(&self) -> Option<Histogram<u64>> {
        let mut h = new_histogram();
        let mut before = 0;
        for &(us, total) in &self.spectrum {
            let v = (us.round().max(0.0) as u64).min(HIGHEST_US);
            if total > before {
                h.record_n(v, total - before).ok()?;
                before = total;
            }
        }
        (!h.is_empty()).then_some(h)
    }
}

/// What wrk2 printed.
#[derive(Default)]
struct Output {
    target: Option<String>,
    requests: Option<u64>,
    duration_s: Option<f64>,
    /// connect, read, write errors.
    socket_errors: u64,
    non_2xx: u64,
    rate: Option<f64>,
    /// The thread stats' latency: average and max (µs).
    thread_latency: Option<(f64, f64)>,
    recorded: Distribution,
    uncorrected: Option<Distribution>,
}

/// Which part of the output a line is in.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    Top,
    Recorded,
    Uncorrected,
    RecordedSpectrum,
    UncorrectedSpectrum,
}

/// Reads wrk2's output at `path`.
pub(super) fn read(path: &Path) -> Result<Found, HistoryError> {
    let out = parse(path)?;
    let (Some(requests), Some(rate)) = (out.requests, out.rate) else {
        return Err(lines::error(
            path,
            None,
            "no 'N requests in' and 'Requests/sec:' lines: not wrk2's output, or cut off",
        ));
    };
    let mut found = Found { target: out.target.as_deref().map(mask_loopback_port), ..Default::default() };
    let d = &out.recorded;
    for (figure, percent) in [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9), ("max", 100.0)] {
        if let Some(us) = d.at(percent) {
            found.set(figure, us);
        }
    }
    let spectrum = d.histogram();
    if found.figures.is_empty() {
        // A distribution without its percentile lines: the spectrum's.
        if let Some(h) = &spectrum {
            found.latency(h);
        }
    }
    if let Some(us) = d.mean_us.or(out.thread_latency.map(|t| t.0)) {
        found.set("mean", us);
    }
    if let Some(us) = d.max_us.or(out.thread_latency.map(|t| t.1)).filter(|_| !found.figures.contains_key("max")) {
        found.set("max", us);
    }
    let ok = requests.saturating_sub(out.non_2xx);
    if requests > 0 {
        found.set("throughput", rate * ok as f64 / requests as f64);
    }
    found.counts(requests + out.socket_errors, ok);
    found.duration_s = out.duration_s;
    let started_ms = written_ms(path, out.duration_s.unwrap_or(0.0));
    found.started_ms = Some(started_ms);
    if let Some(corrected) = spectrum {
        let service = out.uncorrected.as_ref().and_then(Distribution::histogram);
        let success = found.figures.get("success").copied().unwrap_or(1.0);
        let length_ms = (out.duration_s.unwrap_or(0.0) * 1000.0).round().min(u32::MAX as f64) as u32;
        found.intervals = vec![Interval {
            index: 0,
            start_ms: started_ms,
            length_ms,
            completed: corrected.len(),
            ok: (corrected.len() as f64 * success).round() as u64,
            corrected: encode_histogram(&corrected),
            service: encode_histogram(service.as_ref().unwrap_or(&corrected)),
        }];
    }
    Ok(found)
}

fn parse(path: &Path) -> Result<Output, HistoryError> {
    let mut lines = Lines::new(lines::open(path)?, path);
    let (mut out, mut part, mut text) = (Output::default(), Part::Top, String::new());
    while lines.read(&mut text)? {
        let line = text.trim();
        if let Some(p) = section(line) {
            part = p;
            if p == Part::Uncorrected {
                out.uncorrected = Some(Distribution::default());
            }
            continue;
        }
        if line.starts_with("----") {
            part = Part::Top;
            continue;
        }
        let d = match part {
            Part::Top => {
                top_line(line, &mut out);
                continue;
            }
            Part::Recorded | Part::RecordedSpectrum => &mut out.recorded,
            Part::Uncorrected | Part::UncorrectedSpectrum => out.uncorrected.get_or_insert_with(Default::default),
        };
        let in_spectrum = matches!(part, Part::RecordedSpectrum | Part::UncorrectedSpectrum);
        if line.starts_with("Detailed Percentile spectrum") {
            part = if part == Part::Recorded { Part::RecordedSpectrum } else { Part::UncorrectedSpectrum };
        } else if !distribution_line(line, d, in_spectrum) {
            if in_spectrum {
                return Err(lines.error("not a row of wrk2's percentile spectrum"));
            }
            // wrk's distribution (percentiles alone) ends without a rule.
            part = Part::Top;
            top_line(line, &mut out);
        }
    }
    Ok(out)
}

/// The part a `Latency Distribution` heading starts.
fn section(line: &str) -> Option<Part> {
    let rest = line.strip_prefix("Latency Distribution")?;
    Some(if rest.contains("Uncorrected") { Part::Uncorrected } else { Part::Recorded })
}

/// Reads a line of a distribution into `d`; `false` when it is not one.
fn distribution_line(line: &str, d: &mut Distribution, spectrum: bool) -> bool {
    if line.is_empty() || line.starts_with("Value") || line.starts_with("#[Buckets") {
        return true;
    }
    if let Some(rest) = line.strip_prefix("#[Mean") {
        d.mean_us = after_eq(rest).map(|ms| ms * 1000.0);
        return d.mean_us.is_some();
    }
    if let Some(rest) = line.strip_prefix("#[Max") {
        d.max_us = after_eq(rest).map(|ms| ms * 1000.0);
        return d.max_us.is_some();
    }
    let fields: Vec<&str> = line.split_whitespace().collect();
    if spectrum {
        // Value (ms), percentile, total count, 1/(1-percentile) (`inf` at the end).
        let ms = fields.first().and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite());
        let percentile = fields.get(1).and_then(|v| v.parse::<f64>().ok());
        let total = fields.get(2).and_then(|v| v.parse::<u64>().ok());
        let (Some(ms), Some(_), Some(total)) = (ms, percentile, total) else { return false };
        d.spectrum.push((ms * 1000.0, total));
        return true;
    }
    let percent = fields.first().and_then(|p| p.strip_suffix('%')).and_then(|p| p.parse::<f64>().ok());
    match (percent, fields.get(1).and_then(|v| time_us(v))) {
        (Some(p), Some(us)) => {
            d.percentiles.push((p, us));
            true
        }
        _ => false,
    }
}

/// The number after the first `=` of `#[Mean    =        6.602, StdDeviation ...`.
fn after_eq(rest: &str) -> Option<f64> {
    let value = rest.split_once('=')?.1;
    value.split([',', ']']).next()?.trim().parse().ok().filter(|v: &f64| v.is_finite())
}

/// A line outside the distributions: the target, the counts and the rate.
fn top_line(line: &str, out: &mut Output) {
    let words: Vec<&str> = line.split_whitespace().collect();
    if line.starts_with("Running ") {
        out.target = line.split_once(" @ ").map(|(_, t)| t.trim().to_string());
    } else if let (Some(n), Some(&"requests"), Some(&"in")) = (words.first(), words.get(1), words.get(2)) {
        out.requests = n.parse().ok();
        out.duration_s = words.get(3).and_then(|d| time_us(d.trim_end_matches(','))).map(|us| us / 1e6);
    } else if let Some(rest) = line.strip_prefix("Socket errors:") {
        // `connect 0, read 0, write 0, timeout 0`: all but the timeouts.
        out.socket_errors = rest
            .split(',')
            .filter_map(|p| p.trim().split_once(' '))
            .filter(|(k, _)| *k != "timeout")
            .filter_map(|(_, n)| n.trim().parse::<u64>().ok())
            .sum();
    } else if let Some(n) = line.strip_prefix("Non-2xx or 3xx responses:") {
        out.non_2xx = n.trim().parse().unwrap_or(0);
    } else if let Some(r) = line.strip_prefix("Requests/sec:") {
        out.rate = r.trim().parse().ok().filter(|r: &f64| r.is_finite());
    } else if words.first() == Some(&"Latency") && words.len() >= 4 {
        // Thread Stats: `Latency   6.60ms  1.92ms  12.50ms  68.46%` (avg, stdev, max).
        if let (Some(avg), Some(max)) = (time_us(words[1]), time_us(words[3])) {
            out.thread_latency = Some((avg, max));
        }
    }
}

/// A time as wrk prints it (`950.00us`, `6.67ms`, `1.42s`, `2.00m`, `1.00h`), in µs.
fn time_us(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = s.split_at(split);
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    n.parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| v * scale)
}
