//! [`Figure`]: the one vocabulary of headline figures. SLOs (`--slo 'p99<100ms'`),
//! `--fail-if 'p99>+10%'`, `barrage compare`, the experiment matrix and every study table
//! read the same figure off a [`RunSummary`] by the same name, in the same unit.
//!
//! ```
//! use barrage_report::Figure;
//! let f: Figure = "p99".parse().unwrap();
//! assert_eq!(f.show(1500.0), "1.50ms");
//! assert_eq!(Figure::Success.show(0.995), "99.50%");
//! ```

use barrage_metrics::summary::{IntervalRow, LatencyStats, RunSummary};
use barrage_metrics::units::fmt_us;
use std::str::FromStr;

/// A headline figure of a run. Latency figures are corrected latency, in µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Figure {
    /// Successes per second of the whole run.
    Throughput,
    /// Share of the requests due that succeeded (a 2xx or 3xx that no check or capture
    /// rejected; a request due and never sent counts as failed), a fraction.
    Success,
    /// Requests due without success: transport errors, 4xx/5xx answers, answers a flow's
    /// check or capture rejected, and requests due and never sent (dropped).
    Errors,
    /// Mean latency.
    Mean,
    /// Median latency.
    P50,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Largest latency.
    Max,
    /// Share of classified responses served by a cache (hit or stale), a fraction.
    HitRatio,
    /// Flows of a scenario finished per second (every group's together).
    FlowRate,
    /// Share of flows whose every step succeeded, a fraction.
    FlowSuccess,
    /// Median flow latency (intended start of its first step to the end of its last).
    FlowP50,
    /// 99th percentile of flow latency.
    FlowP99,
}

impl Figure {
    /// Every figure, in table order.
    pub const ALL: [Figure; 15] = [
        Figure::Throughput,
        Figure::Success,
        Figure::Errors,
        Figure::Mean,
        Figure::P50,
        Figure::P90,
        Figure::P95,
        Figure::P99,
        Figure::P999,
        Figure::Max,
        Figure::HitRatio,
        Figure::FlowRate,
        Figure::FlowSuccess,
        Figure::FlowP50,
        Figure::FlowP99,
    ];

    /// The figures of a scenario's flows, in table order: shown, compared and checked beside
    /// the headline once a run has flows.
    pub const FLOWS: [Figure; 4] = [Figure::FlowRate, Figure::FlowSuccess, Figure::FlowP50, Figure::FlowP99];

    /// Its name in flags, tables and JSON keys' stems.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Throughput => "throughput",
            Figure::Success => "success",
            Figure::Errors => "errors",
            Figure::Mean => "mean",
            Figure::P50 => "p50",
            Figure::P90 => "p90",
            Figure::P95 => "p95",
            Figure::P99 => "p99",
            Figure::P999 => "p999",
            Figure::Max => "max",
            Figure::HitRatio => "hit_ratio",
            Figure::FlowRate => "flows",
            Figure::FlowSuccess => "flow_success",
            Figure::FlowP50 => "flow_p50",
            Figure::FlowP99 => "flow_p99",
        }
    }

    /// Whether it is a corrected-latency figure (µs), of requests or of flows.
    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Figure::Mean
                | Figure::P50
                | Figure::P90
                | Figure::P95
                | Figure::P99
                | Figure::P999
                | Figure::Max
                | Figure::FlowP50
                | Figure::FlowP99
        )
    }

    /// Whether it is a figure of flows, read off [`RunSummary::flows_total`].
    pub fn is_flow(self) -> bool {
        Figure::FLOWS.contains(&self)
    }

    /// The figure of a latency distribution, for latency figures (a flow's of a flow
    /// latency's).
    pub fn of_latency(self, l: &LatencyStats) -> Option<f64> {
        Some(match self {
            Figure::Mean => l.mean_us,
            Figure::P50 | Figure::FlowP50 => l.p50_us as f64,
            Figure::P90 => l.p90_us as f64,
            Figure::P95 => l.p95_us as f64,
            Figure::P99 | Figure::FlowP99 => l.p99_us as f64,
            Figure::P999 => l.p999_us as f64,
            Figure::Max => l.max_us as f64,
            _ => return None,
        })
    }

    /// Its value in `s`: per second, a fraction, a count or µs; `None` for a hit ratio when
    /// no response was classified, for a throughput over too few requests to be a rate, and
    /// for a flow figure of a run without flows (or, for a rate and a latency, none finished).
    pub fn of(self, s: &RunSummary) -> Option<f64> {
        let flows = || s.flows_total.as_ref();
        match self {
            Figure::Throughput => s.throughput_per_sec,
            Figure::Success => Some(s.success_ratio),
            Figure::Errors => Some((s.requests.total + s.requests.dropped).saturating_sub(s.requests.ok) as f64),
            Figure::HitRatio => s.cache.as_ref().map(|c| c.hit_ratio),
            Figure::FlowRate => flows()?.flows_per_sec,
            Figure::FlowSuccess => flows().map(|f| f.success_ratio),
            Figure::FlowP50 | Figure::FlowP99 => self.of_latency(&flows().filter(|f| f.flows > 0)?.latency),
            latency => latency.of_latency(&s.latency.corrected),
        }
    }

    /// The per-interval samples a significance test compares (full intervals with requests);
    /// `None` for figures without one.
    pub fn samples(self, s: &RunSummary) -> Option<Vec<f64>> {
        let pick: fn(&IntervalRow) -> f64 = match self {
            Figure::Throughput => |r| r.throughput_per_sec,
            Figure::P50 => |r| r.p50_us as f64,
            Figure::P90 => |r| r.p90_us as f64,
            Figure::P99 => |r| r.p99_us as f64,
            _ => return None,
        };
        // The last, partial interval holds only the stragglers.
        Some(s.intervals.iter().filter(|r| r.length_s >= 0.99 && r.ok + r.errors > 0).map(pick).collect())
    }

    /// For people: `12.3/s`, `99.50%`, `5`, `1.20ms`.
    pub fn show(self, v: f64) -> String {
        match self {
            Figure::Throughput | Figure::FlowRate => format!("{v:.1}/s"),
            Figure::Success | Figure::FlowSuccess => format!("{:.2}%", v * 100.0),
            Figure::HitRatio => format!("{:.1}%", v * 100.0),
            // A count; a mean over repeats keeps two decimals (one error in two repeats is
            // 0.5, not 0: found trying seed 000's study), a whole count none.
            Figure::Errors => format!("{v:.2}").trim_end_matches('0').trim_end_matches('.').to_string(),
            _ => fmt_us(v),
        }
    }

    /// Its column in sheets (CSV, xlsx): `throughput_per_sec`, `success_percent`, `p99_ms`.
    pub fn column(self) -> String {
        match self {
            Figure::Throughput => "throughput_per_sec".into(),
            Figure::Success => "success_percent".into(),
            Figure::HitRatio => "hit_ratio_percent".into(),
            Figure::Errors => "errors".into(),
            Figure::FlowRate => "flows_per_sec".into(),
            Figure::FlowSuccess => "flow_success_percent".into(),
            latency => format!("{}_ms", latency.name()),
        }
    }

    /// A value in the unit of [`Figure::column`].
    pub fn in_column_unit(self, v: f64) -> f64 {
        match self {
            Figure::Success | Figure::HitRatio | Figure::FlowSuccess => v * 100.0,
            f if f.is_latency() => v / 1e3,
            _ => v,
        }
    }

    /// Its key in JSON tables: `throughput_per_sec`, `success_ratio`, `p99_us`.
    pub fn json_key(self) -> String {
        match self {
            Figure::Throughput => "throughput_per_sec".into(),
            Figure::Success => "success_ratio".into(),
            Figure::HitRatio => "hit_ratio".into(),
            Figure::Errors => "errors".into(),
            Figure::FlowRate => "flows_per_sec".into(),
            Figure::FlowSuccess => "flow_success_ratio".into(),
            latency => format!("{}_us", latency.name()),
        }
    }
}

impl FromStr for Figure {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let s = if s == "hit-ratio" { "hit_ratio" } else { s };
        Figure::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Figure::ALL.iter().map(|m| m.name()).collect();
            format!("unknown metric '{s}': expected one of {}", names.join(", "))
        })
    }
}

/// A figure over several runs (an experiment case's repeats): mean and sample standard
/// deviation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// The mean.
    pub mean: f64,
    /// The sample standard deviation; 0 for one value.
    pub sd: f64,
    /// How many values.
    pub n: usize,
}

impl Spread {
    /// Over `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var =
            if values.len() > 1 { values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
        Some(Spread { mean, sd: var.sqrt(), n: values.len() })
    }

    /// `mean ±sd` (just the mean when there is no spread).
    pub fn show(self, show: impl Fn(f64) -> String) -> String {
        if self.sd > 0.0 {
            format!("{} ±{}", show(self.mean), show(self.sd))
        } else {
            show(self.mean)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_units_render() {
        for f in Figure::ALL {
            assert_eq!(f.name().parse::<Figure>().unwrap(), f);
        }
        assert!("p42".parse::<Figure>().unwrap_err().contains("expected one of throughput"));
        let table = [
            (Figure::Throughput, 12.34, "12.3/s", "throughput_per_sec", 12.34),
            (Figure::Success, 0.5, "50.00%", "success_percent", 50.0),
            (Figure::Errors, 3.0, "3", "errors", 3.0),
            (Figure::Errors, 0.5, "0.5", "errors", 0.5),
            (Figure::Errors, 1.0 / 30.0, "0.03", "errors", 1.0 / 30.0),
            (Figure::Errors, 10.0, "10", "errors", 10.0),
            (Figure::P99, 2500.0, "2.50ms", "p99_ms", 2.5),
            (Figure::HitRatio, 0.25, "25.0%", "hit_ratio_percent", 25.0),
        ];
        for (f, v, shown, column, in_unit) in table {
            assert_eq!(f.show(v), shown);
            assert_eq!(f.column(), column);
            assert_eq!(f.in_column_unit(v), in_unit);
        }
    }

    #[test]
    fn figures_are_read_off_a_summary() {
        let mut s = RunSummary::default();
        s.requests.total = 10;
        s.requests.ok = 7;
        s.throughput_per_sec = Some(70.0);
        s.success_ratio = 0.7;
        s.latency.corrected.p99_us = 900;
        assert_eq!(Figure::Errors.of(&s), Some(3.0));
        assert_eq!(Figure::P99.of(&s), Some(900.0));
        assert_eq!(Figure::HitRatio.of(&s), None);
    }

    #[test]
    fn spread_is_the_sample_standard_deviation() {
        let s = Spread::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.mean, s.sd, s.n), (2.0, 1.0, 3));
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[4.0]).unwrap().show(|v| format!("{v}")), "4");
        assert_eq!(s.show(|v| format!("{v}")), "2 ±1");
    }
}
