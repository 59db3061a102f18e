//! [`Pacer`]: when each request of an open-loop run should start.
//!
//! A pacer is a value, not a mode: a constant rate, a linear ramp and a list of steps are
//! all answered by one pure function, [`Pacer::due`], from the request's number to its
//! intended start offset. No clock is involved, so it is tested as a table of numbers.

use std::time::Duration;

/// An open-loop arrival schedule.
#[derive(Clone, Debug, PartialEq)]
pub enum Pacer {
    /// `rate` requests per second, forever.
    Constant {
        /// Requests per second.
        rate: f64,
    },
    /// A rate moving linearly from `from` to `to` over `over`, then staying at `to`.
    Ramp {
        /// Starting rate, per second.
        from: f64,
        /// Final rate, per second.
        to: f64,
        /// Length of the ramp.
        over: Duration,
    },
    /// Each rate for `step`, one after the other; the schedule ends after the last.
    Steps {
        /// Rates per second.
        rates: Vec<f64>,
        /// Length of each step.
        step: Duration,
    },
}

impl Pacer {
    /// The same schedule at `factor` times its rates (a shard's part of a split run's).
    pub fn scaled(&self, factor: f64) -> Pacer {
        match self {
            Pacer::Constant { rate } => Pacer::Constant { rate: rate * factor },
            Pacer::Ramp { from, to, over } => Pacer::Ramp { from: from * factor, to: to * factor, over: *over },
            Pacer::Steps { rates, step } => {
                Pacer::Steps { rates: rates.iter().map(|r| r * factor).collect(), step: *step }
            }
        }
    }

    /// The highest rate of the schedule, per second.
    pub fn peak_rate(&self) -> f64 {
        match self {
            Pacer::Constant { rate } => *rate,
            Pacer::Ramp { from, to, .. } => from.max(*to),
            Pacer::Steps { rates, .. } => rates.iter().copied().fold(0.0, f64::max),
        }
    }

    /// Intended start of request number `k` (from 0), as an offset from the run's start;
    /// `None` when the schedule has ended (after the last step).
    ///
    /// Request `k` is due when the integral of the rate reaches `k`, so the first request
    /// starts at 0 and by time `t` at most `⌊N(t)⌋ + 1` requests are due: never ahead.
    pub fn due(&self, k: u64) -> Option<Duration> {
        let k = k as f64;
        let secs = match self {
            Pacer::Constant { rate } => k / rate,
            Pacer::Ramp { from, to, over } => ramp_due(*from, *to, over.as_secs_f64(), k),
            Pacer::Steps { rates, step } => steps_due(rates, step.as_secs_f64(), k)?,
        };
        // A vanishing rate puts later requests beyond any representable time: never due.
        Duration::try_from_secs_f64(secs).ok()
    }

    /// How many requests of the schedule are due before `t`, at most `total`: the first
    /// number due at or after `t` (or the schedule's end). Found by searching [`Pacer::due`]
    /// (monotone) from the integral's estimate, so it is exact and takes a few dozen steps.
    pub fn due_before(&self, t: Duration, total: Option<u64>) -> u64 {
        let cap = total.unwrap_or(u64::MAX);
        let before = |k: u64| self.due(k).is_some_and(|d| d < t);
        let mut hi = (self.expected(t).max(0.0).ceil() as u64).saturating_add(2).min(cap);
        while hi < cap && before(hi) {
            hi = hi.saturating_mul(2).min(cap);
        }
        if before(hi) {
            return cap;
        }
        // The first number not due before `t` is in [0, hi].
        let mut lo = 0;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The intended number of requests started in `[0, t)`: the integral of the rate.
    pub fn expected(&self, t: Duration) -> f64 {
        let t = t.as_secs_f64();
        match self {
            Pacer::Constant { rate } => rate * t,
            Pacer::Ramp { from, to, over } => {
                let over = over.as_secs_f64();
                let ramp_t = t.min(over);
                let ramp = from * ramp_t + (to - from) * ramp_t * ramp_t / (2.0 * over);
                ramp + to * (t - over).max(0.0)
            }
            Pacer::Steps { rates, step } => {
                let step = step.as_secs_f64();
                rates.iter().enumerate().map(|(i, r)| r * (t - i as f64 * step).clamp(0.0, step)).sum()
            }
        }
    }

    /// Which step the offset `t` falls in (0 for unstepped schedules).
    pub fn step_at(&self, t: Duration) -> usize {
        match self {
            Pacer::Steps { rates, step } => ((t.as_secs_f64() / step.as_secs_f64()) as usize).min(rates.len() - 1),
            _ => 0,
        }
    }

    /// When the schedule ends by itself (only steps do).
    pub fn natural_end(&self) -> Option<Duration> {
        match self {
            Pacer::Steps { rates, step } => Some(step.saturating_mul(rates.len() as u32)),
            _ => None,
        }
    }

    /// Labels of the steps, as reports show them.
    pub fn step_labels(&self) -> Vec<String> {
        match self {
            Pacer::Constant { rate } => vec![format!("{} req/s", fmt_rate(*rate))],
            Pacer::Ramp { from, to, .. } => vec![format!("{} → {} req/s", fmt_rate(*from), fmt_rate(*to))],
            Pacer::Steps { rates, .. } => rates.iter().map(|r| format!("{} req/s", fmt_rate(*r))).collect(),
        }
    }
}

fn fmt_rate(r: f64) -> String {
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.2}")
    }
}

/// Solves `from·t + (to−from)·t²/(2·over) = k` for t on the ramp, then continues at `to`.
fn ramp_due(from: f64, to: f64, over: f64, k: f64) -> f64 {
    let on_ramp = (from + to) * over / 2.0;
    if k >= on_ramp {
        return over + (k - on_ramp) / to;
    }
    let slope = (to - from) / over;
    if slope.abs() < 1e-12 {
        return k / from;
    }
    // Positive root of slope/2·t² + from·t − k = 0, in the form that stays accurate when
    // the slope is small.
    2.0 * k / (from + (from * from + 2.0 * slope * k).sqrt())
}

fn steps_due(rates: &[f64], step: f64, k: f64) -> Option<f64> {
    let mut before = 0.0;
    for (i, rate) in rates.iter().enumerate() {
        let in_step = rate * step;
        if k < before + in_step {
            return Some(i as f64 * step + (k - before) / rate);
        }
        before += in_step;
    }
    None
}

#[cfg(test)]
mod tests {
    /// Counting by the search is counting one by one, at every rate shape and instant.
    #[test]
    fn due_before_counts_the_requests_due_before_an_instant() {
        let shapes = [
            Pacer::Constant { rate: 333.0 },
            Pacer::Ramp { from: 10.0, to: 500.0, over: Duration::from_secs(3) },
            Pacer::Steps { rates: vec![100.0, 7.5, 900.0], step: Duration::from_millis(1500) },
        ];
        for pacer in &shapes {
            for ms in (0..6000).step_by(137) {
                let t = Duration::from_millis(ms);
                let by_one = (0..100_000).take_while(|&k| pacer.due(k).is_some_and(|d| d < t)).count() as u64;
                assert_eq!(pacer.due_before(t, None), by_one, "{pacer:?} at {t:?}");
                assert_eq!(pacer.due_before(t, Some(50)), by_one.min(50));
            }
        }
    }

    use super::*;
    use proptest::prelude::*;

    fn count_due_before(p: &Pacer, t: Duration) -> u64 {
        (0..).take_while(|&k| p.due(k).is_some_and(|d| d < t)).count() as u64
    }

    #[test]
    fn constant_rate_table() {
        let p = Pacer::Constant { rate: 1000.0 };
        let table = [(0, 0), (1, 1_000), (999, 999_000), (1000, 1_000_000)];
        for (k, us) in table {
            assert_eq!(p.due(k).unwrap(), Duration::from_micros(us), "k={k}");
        }
        assert_eq!(count_due_before(&p, Duration::from_secs(3)), 3000);
    }

    #[test]
    fn ramp_hits_its_total() {
        // 100 → 2000 over 10 s: (100 + 2000) / 2 × 10 = 10,500 requests.
        let p = Pacer::Ramp { from: 100.0, to: 2000.0, over: Duration::from_secs(10) };
        assert_eq!(count_due_before(&p, Duration::from_secs(10)), 10_500);
        assert!((p.expected(Duration::from_secs(10)) - 10_500.0).abs() < 1e-6);
        // Early requests are spaced by about 1/100 s, late ones by about 1/2000 s.
        let early = p.due(1).unwrap() - p.due(0).unwrap();
        let late = p.due(10_400).unwrap() - p.due(10_399).unwrap();
        assert!((9_900..=10_000).contains(&early.as_micros()), "{early:?}");
        assert!((500..=520).contains(&late.as_micros()), "{late:?}");
    }

    #[test]
    fn down_ramp_and_flat_ramp() {
        let down = Pacer::Ramp { from: 2000.0, to: 100.0, over: Duration::from_secs(10) };
        assert_eq!(count_due_before(&down, Duration::from_secs(10)), 10_500);
        let flat = Pacer::Ramp { from: 50.0, to: 50.0, over: Duration::from_secs(2) };
        assert_eq!(count_due_before(&flat, Duration::from_secs(2)), 100);
    }

    #[test]
    fn steps_hit_their_totals_and_end() {
        let p = Pacer::Steps { rates: vec![10.0, 50.0, 100.0, 500.0, 700.0], step: Duration::from_secs(10) };
        assert_eq!(count_due_before(&p, Duration::from_secs(10)), 100);
        assert_eq!(count_due_before(&p, Duration::from_secs(20)), 600);
        assert_eq!(count_due_before(&p, Duration::from_secs(60)), 13_600);
        assert_eq!(p.due(13_600), None);
        assert_eq!(p.step_at(Duration::from_secs(25)), 2);
        assert_eq!(p.step_at(Duration::from_secs(99)), 4);
        assert_eq!(p.natural_end(), Some(Duration::from_secs(50)));
    }

    proptest! {
        /// By any time t, at most ⌊N(t)⌋ + 1 requests are due: the pacer is never ahead.
        #[test]
        fn never_ahead_of_its_rate(rate in 1.0f64..50_000.0, to in 1.0f64..50_000.0,
                                   t_ms in 0u64..5_000, kind in 0u8..3) {
            let p = match kind {
                0 => Pacer::Constant { rate },
                1 => Pacer::Ramp { from: rate, to, over: Duration::from_secs(2) },
                _ => Pacer::Steps { rates: vec![rate, to], step: Duration::from_secs(1) },
            };
            let t = Duration::from_millis(t_ms);
            let allowed = p.expected(t).floor() as u64 + 1;
            // Binary search the count of due(k) <= t.
            let (mut lo, mut hi) = (0u64, allowed + 10);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if p.due(mid).is_some_and(|d| d <= t) { lo = mid + 1 } else { hi = mid }
            }
            prop_assert!(lo <= allowed, "due by {t:?}: {lo} > {allowed}");
        }

        #[test]
        fn due_is_monotonic(rate in 1.0f64..50_000.0, to in 1.0f64..50_000.0, k in 0u64..100_000) {
            let p = Pacer::Ramp { from: rate, to, over: Duration::from_secs(3) };
            prop_assert!(p.due(k).unwrap() <= p.due(k + 1).unwrap());
        }
    }
}
