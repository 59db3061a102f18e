//! The significance tests every report shares, so that "significant", "changed" and "a
//! gap" mean the same thing wherever they are printed: `compare` between runs, what changed
//! around an `--at` event, and the gaps in a backend's answers.
//!
//! - [`mann_whitney`] compares two sets of per-period values (one-second intervals, tenths
//!   of a second) without assuming they are normal.
//! - [`fisher_exact`] compares two proportions (failed requests, a backend's share) exactly,
//!   so a handful of errors after none is judged as fairly as thousands.
//! - Each report tests several figures at once and holds each test to [`ALPHA`] divided by
//!   their number (Bonferroni), so the chance of *any* false alarm stays under [`ALPHA`].

use statrs::distribution::{ContinuousCDF, Discrete, Hypergeometric, Normal};

/// Significance level over all the figures one report tests together.
pub const ALPHA: f64 = 0.05;
/// Smallest relative change of a measured figure (throughput, latency) that counts, however
/// significant: sequential stretches of one steady load drift by a few percent (`compare`'s
/// default `--noise`).
pub const NOISE: f64 = 0.05;
/// Fewest samples on each side for [`mann_whitney`].
pub const MIN_SAMPLES: usize = 5;

/// Two-sided p-value of the Mann-Whitney U test of `a` against `b`, by the normal
/// approximation with a tie correction; `None` with fewer than [`MIN_SAMPLES`] samples in
/// either, or when every sample is the same value.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 < MIN_SAMPLES || n2 < MIN_SAMPLES {
        return None;
    }
    let mut all: Vec<(f64, usize)> = a.iter().map(|x| (*x, 0)).chain(b.iter().map(|x| (*x, 1))).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Mid-ranks for ties, and the tie term of the variance.
    let n = all.len();
    let (mut rank_sum_a, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        rank_sum_a += all[i..=j].iter().filter(|x| x.1 == 0).count() as f64 * rank;
        i = j + 1;
    }
    let (n1, n2, nf) = (n1 as f64, n2 as f64, n as f64);
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if variance <= 0.0 {
        return None;
    }
    // Continuity correction: half a step toward the mean.
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    let normal = Normal::new(0.0, 1.0).expect("the standard normal is valid");
    Some((2.0 * (1.0 - normal.cdf(z))).min(1.0))
}

/// Two-sided p-value of Fisher's exact test that `a_yes` of `a_yes + a_no` and `b_yes` of
/// `b_yes + b_no` come from one proportion: the chance, given the totals, of a split at
/// least as unlikely as the one seen. 1 when either side is empty.
pub fn fisher_exact(a_yes: u64, a_no: u64, b_yes: u64, b_no: u64) -> f64 {
    let (draws, yes) = (a_yes + a_no, a_yes + b_yes);
    let population = draws + b_yes + b_no;
    if draws == 0 || draws == population || yes == 0 || yes == population {
        return 1.0;
    }
    let h = Hypergeometric::new(population, yes, draws).expect("the counts are consistent");
    let seen = h.ln_pmf(a_yes);
    let (lo, hi) = ((draws + yes).saturating_sub(population), yes.min(draws));
    // The pmf is unimodal: walk out from the mode both ways and stop once the terms are
    // too small to move the sum (e^-40 each), so a million requests cost no more than a few.
    let mode = (((draws + 1) * (yes + 1)) / (population + 2)).clamp(lo, hi);
    let peak = h.ln_pmf(mode);
    let mut p = 0.0;
    // Adds the term of `k` if it is no likelier than the split seen (with slack for
    // rounding); false once the walk is past the split seen and the terms are negligible.
    let mut add = |k: u64, past: bool| {
        let l = h.ln_pmf(k);
        if l <= seen + 1e-7 {
            p += l.exp();
        }
        !(past && l < peak - 40.0)
    };
    for k in (lo..=mode).rev() {
        if !add(k, k < a_yes.min(mode)) {
            break;
        }
    }
    for k in mode + 1..=hi {
        if !add(k, k > a_yes.max(mode)) {
            break;
        }
    }
    p.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mann_whitney_matches_known_answers() {
        // Fully separated samples of 8: U = 0; the normal approximation gives p ≈ 0.0009.
        let a: Vec<f64> = (1..=8).map(f64::from).collect();
        let b: Vec<f64> = (11..=18).map(f64::from).collect();
        let p = mann_whitney(&a, &b).unwrap();
        assert!((p - 0.00093).abs() < 0.0002, "{p}");
        // Interleaved samples: no difference.
        let c: Vec<f64> = (0..8).map(|i| f64::from(2 * i)).collect();
        let d: Vec<f64> = (0..8).map(|i| f64::from(2 * i + 1)).collect();
        assert!(mann_whitney(&c, &d).unwrap() > 0.5);
        // Too few, or all the same: no test.
        assert_eq!(mann_whitney(&a[..4], &b), None);
        assert_eq!(mann_whitney(&[5.0; 6], &[5.0; 6]), None);
        // Ties get mid-ranks: symmetric inputs give the same p either way round.
        let e = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0];
        let f = [2.0, 3.0, 4.0, 4.0, 5.0, 5.0];
        assert!((mann_whitney(&e, &f).unwrap() - mann_whitney(&f, &e).unwrap()).abs() < 1e-12);
    }

    #[test]
    fn fisher_matches_known_answers() {
        // The tea-tasting table [[3, 1], [1, 3]]: two-sided p = 0.4857.
        assert!((fisher_exact(3, 1, 1, 3) - 0.485_714).abs() < 1e-5);
        // [[1, 9], [11, 3]]: two-sided p = 0.002759 (R's fisher.test).
        assert!((fisher_exact(1, 9, 11, 3) - 0.002_759).abs() < 1e-5, "{}", fisher_exact(1, 9, 11, 3));
        // No errors in 3000, then 10 in 3000: p = 2 * C(3000,10)/C(6000,10) ≈ 0.0019.
        let p = fisher_exact(0, 3000, 10, 2990);
        assert!((0.0015..0.0025).contains(&p), "{p}");
        // The same rate on both sides, and empty sides: nothing to see.
        assert!(fisher_exact(50, 4950, 50, 4950) > 0.99);
        assert_eq!(fisher_exact(0, 0, 3, 5), 1.0);
        assert_eq!(fisher_exact(0, 100, 0, 200), 1.0);
        // Large counts stay fast and agree with the normal approximation (z ≈ 4.5).
        let p = fisher_exact(1_000, 999_000, 1_200, 998_800);
        assert!((1e-6..1e-4).contains(&p), "{p}");
    }
}
