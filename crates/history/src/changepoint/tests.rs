//! Tests of the change points: Student's t against tables and closed forms, the vectors of
//! Apache Otava's and MongoDB's tests, generated series from a fixed-seed generator, and the
//! prediction check.

use super::*;

/// A tiny deterministic generator (xorshift64*), so the generated series are the same on
/// every machine, without a dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Spread small seeds over the state; a zero state would stay zero.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal, by Box-Muller.
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// `len` points of `level(i)` with relative normal noise `sigma` (0.02: 2 %).
fn generated(seed: u64, len: usize, sigma: f64, level: impl Fn(usize) -> f64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..len).map(|i| level(i) * (1.0 + sigma * rng.normal())).collect()
}

fn indexes(series: &[f64], opts: &Options) -> Vec<usize> {
    change_points(series, opts).iter().map(|c| c.index).collect()
}

/// The change points with this port's departures from Otava turned off.
fn otava_indexes(series: &[f64], opts: &Options) -> Vec<usize> {
    analyse(series, opts, Flavour::Otava).iter().map(|c| c.index).collect()
}

/// Options as Otava's tests give them: no Chromium filter.
fn otava(window: usize, max_p_value: f64, min_magnitude: f64) -> Options {
    Options { window, max_p_value, min_magnitude, min_points_each_side: 0 }
}

fn close(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= tolerance
}

// ---- Student's t ----------------------------------------------------------------------------

#[test]
fn student_t_matches_the_tables() {
    // (t, degrees of freedom, two-sided p) from printed t tables, whose t have three decimals.
    let table = [
        (2.228, 10.0, 0.05),
        (3.169, 10.0, 0.01),
        (1.812, 10.0, 0.10),
        (12.706, 1.0, 0.05),
        (63.657, 1.0, 0.01),
        (4.303, 2.0, 0.05),
        (4.032, 5.0, 0.01),
        (2.042, 30.0, 0.05),
        (3.646, 17.0, 0.002),
        (1.984, 100.0, 0.05),
    ];
    for (t, df, p) in table {
        let got = student_t_two_sided(t, df);
        assert!(close(got, p, p * 0.01), "t = {t}, df = {df}: p = {got}, want {p}");
        assert!(close(student_t_two_sided(-t, df), got, 0.0), "the test is two-sided");
    }
}

#[test]
fn student_t_matches_closed_forms() {
    // df = 1 is Cauchy's distribution, df = 2 has a closed form too.
    for t in [0.0, 0.001, 0.1, 0.5, 1.0, 2.0, 5.0, 30.0, 1e4] {
        let cauchy = 1.0 - 2.0 / std::f64::consts::PI * f64::atan(t);
        let two = 1.0 - t / (2.0 + t * t).sqrt();
        assert!(close(student_t_two_sided(t, 1.0), cauchy, 1e-12 * cauchy.max(1e-3)), "df 1, t {t}");
        assert!(close(student_t_two_sided(t, 2.0), two, 1e-12 * two.max(1e-3)), "df 2, t {t}");
    }
}

#[test]
fn student_t_tends_to_the_normal() {
    // With many degrees of freedom, as with the t-test over a long series, t is nearly normal:
    // 1.959964 and 2.575829 are the normal's two-sided 5 % and 1 %.
    for df in [1e4, 1e5, 1e6] {
        assert!(close(student_t_two_sided(1.959_964, df), 0.05, 1e-4), "df {df}");
        assert!(close(student_t_two_sided(2.575_829, df), 0.01, 1e-4), "df {df}");
    }
    // Far tails stay positive and tiny rather than 0 or NaN.
    let tail = student_t_two_sided(40.0, 30.0);
    assert!(tail > 0.0 && tail < 1e-25, "{tail}");
    assert_eq!(student_t_two_sided(f64::INFINITY, 10.0), 0.0);
    assert_eq!(student_t_two_sided(0.0, 10.0), 1.0);
}

#[test]
fn student_t_quantile_inverts_the_p_value() {
    let table = [(0.05, 10.0, 2.228_139), (0.01, 10.0, 3.169_273), (0.05, 1.0, 12.706_205), (0.05, 4.0, 2.776_445)];
    for (p, df, t) in table {
        let got = student_t_quantile(p, df);
        assert!(close(got, t, 1e-5), "p {p}, df {df}: t = {got}, want {t}");
        assert!(close(student_t_two_sided(got, df), p, 1e-12));
    }
}

#[test]
fn t_test_p_values() {
    // scipy.stats.ttest_ind([1, 2, 3], [4, 5, 6]): t = -3.674, p = 0.021311641128756.
    let test = t_test(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], Flavour::Corrected);
    assert_eq!((test.mean_before, test.mean_after), (2.0, 5.0));
    assert!(close(test.p_value, 0.021_311_641_128_756, 1e-12), "{}", test.p_value);
    // Otava's analysis_test.py, test_significance_tester: the same five figures twice (p = 1),
    // and a 20 % drop of five figures (significant at 0.001).
    let same = [1.00, 1.02, 1.05, 0.95, 0.98];
    assert!(close(t_test(&same, &same, Flavour::Corrected).p_value, 1.0, 1e-9));
    let p = t_test(&same, &[0.80, 0.82, 0.85, 0.79, 0.77], Flavour::Corrected).p_value;
    assert!(p > 0.0 && p < 0.001, "{p}");
}

#[test]
fn t_test_of_stretches_without_spread() {
    let cases: [(&[f64], &[f64], f64); 5] = [
        (&[5.0, 5.0, 5.0], &[5.0, 5.0], 1.0),
        (&[5.0, 5.0, 5.0], &[7.0, 7.0], 0.0),
        (&[0.1, 0.1, 0.1], &[0.1, 0.1, 0.1, 0.1], 1.0),
        (&[0.0, 0.0], &[0.0], 1.0),
        // One point each side: nothing to judge a difference by (Otava's p = 1).
        (&[1.0], &[100.0], 1.0),
    ];
    for (before, after, p) in cases {
        assert_eq!(t_test(before, after, Flavour::Corrected).p_value, p, "{before:?} | {after:?}");
    }
}

// ---- edge cases -----------------------------------------------------------------------------

#[test]
fn series_without_a_change() {
    let constant_tenths = vec![0.1; 100];
    let cases: [(&str, &[f64]); 6] = [
        ("empty", &[]),
        ("one point", &[42.0]),
        ("two points", &[1.0, 1000.0]),
        ("constant", &[100.0; 64]),
        ("constant tenths, whose sums round", &constant_tenths),
        ("zeros", &[0.0; 40]),
    ];
    for (name, series) in cases {
        assert_eq!(indexes(series, &Options::default()), Vec::<usize>::new(), "{name}");
        assert_eq!(otava_indexes(series, &otava(30, 0.001, 0.0)), Vec::<usize>::new(), "{name}");
    }
}

#[test]
fn non_finite_figures_are_skipped_and_indexes_kept() {
    let clean = generated(1, 40, 0.02, |i| if i < 25 { 100.0 } else { 120.0 });
    assert_eq!(indexes(&clean, &Options::default()), [25]);
    // Failed runs before the change shift it by one in the series as given; one at the change
    // itself moves it to the next finite figure.
    let mut gaps = clean.clone();
    gaps.insert(3, f64::NAN);
    gaps.insert(30, f64::INFINITY);
    gaps.insert(33, f64::NEG_INFINITY);
    assert_eq!(indexes(&gaps, &Options::default()), [26]);
    let mut at_change = clean.clone();
    at_change.insert(25, f64::NAN);
    let found = change_points(&at_change, &Options::default());
    assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), [26]);
    assert!(found[0].mean_before.is_finite() && found[0].p_value.is_finite());
    assert_eq!(indexes(&[f64::NAN; 10], &Options::default()), Vec::<usize>::new());
}

#[test]
fn change_points_are_deterministic() {
    let series = generated(7, 500, 0.03, |i| 100.0 + 10.0 * (i / 100) as f64);
    let first = change_points(&series, &Options::default());
    assert!(!first.is_empty());
    assert_eq!(first, change_points(&series, &Options::default()));
}

// ---- Otava's test vectors -------------------------------------------------------------------

/// apache/otava tests/tigerbeetle_test.py: Nyrkiö's TigerBeetle demo series (a drop at 15, a
/// rise at 71, an outlier at 10, a slow climb). Its expected change points, window 30.
#[test]
fn otava_tigerbeetle() {
    let series: Vec<f64> = TIGERBEETLE.iter().map(|&v| f64::from(v)).collect();
    let cases: [(f64, f64, &[usize]); 10] = [
        (0.01, 0.05, &[15, 71]),
        (0.05, 0.05, &[15, 71]),
        (0.1, 0.05, &[10, 11, 15, 71, 363]),
        (0.2, 0.05, &[10, 11, 15, 71]),
        (
            0.2,
            0.0,
            &[
                3, 6, 7, 10, 11, 13, 15, 16, 28, 29, 35, 37, 39, 41, 44, 48, 49, 56, 58, 61, 65, 66, 69, 71, 74, 76,
                82, 95, 108, 117, 125, 126, 129, 131, 136, 137, 142, 148, 165, 169, 187, 190, 192, 197, 200, 212, 220,
                241, 243, 246, 247, 249, 250, 260, 265, 266, 268, 278, 282, 288, 305, 306, 325, 330, 337, 338, 340,
                347, 349, 363,
            ],
        ),
        (
            0.1,
            0.0,
            &[
                3, 6, 10, 11, 15, 16, 28, 29, 35, 37, 39, 41, 44, 48, 49, 61, 71, 95, 117, 131, 142, 148, 165, 169,
                192, 206, 212, 260, 265, 268, 278, 282, 288, 305, 363,
            ],
        ),
        (0.01, 0.0, &[15, 26, 61, 71, 95, 117, 131, 142, 148, 165, 169, 192, 212, 260]),
        (0.001, 0.0, &[15, 61, 71, 95, 117, 131, 142, 148, 192, 212, 260]),
        (0.0001, 0.0, &[71, 95, 117, 131, 142, 148, 192, 212]),
        (0.00001, 0.0, &[71, 95, 131, 192, 212]),
    ];
    for (p, magnitude, want) in cases {
        assert_eq!(otava_indexes(&series, &otava(30, p, magnitude)), want, "p {p}, magnitude {magnitude}");
    }
}

/// The same series with this port's departures: the sample variances make the t-test a
/// little stricter, so a few of the weakest change points go; Chromium's filter removes the
/// outlier at 10 (and its partner at 11) and the two-point stretch at the end (363).
#[test]
fn tigerbeetle_as_ported() {
    let series: Vec<f64> = TIGERBEETLE.iter().map(|&v| f64::from(v)).collect();
    let cases: [(Options, &[usize]); 6] = [
        (otava(30, 0.01, 0.05), &[15, 71]),
        (otava(30, 0.1, 0.05), &[10, 11, 15, 71]),
        (Options { max_p_value: 0.1, min_magnitude: 0.05, ..Options::default() }, &[15, 71]),
        (otava(30, 0.001, 0.0), &[15, 61, 71, 95, 117, 131, 142, 148, 192, 212]),
        (otava(30, 0.0001, 0.0), &[71, 95, 131, 192, 212]),
        (Options::default(), &[15, 61, 71, 95, 117, 131, 142, 148, 192, 212]),
    ];
    for (opts, want) in cases {
        assert_eq!(indexes(&series, &opts), want, "{opts:?}");
    }
    let found = change_points(&series, &Options::default());
    let drop = found.iter().find(|c| c.index == 15).unwrap();
    assert_eq!(drop.direction, Direction::Down);
    assert!(drop.is_regression(Sense::HigherIsBetter) && !drop.is_regression(Sense::LowerIsBetter));
    // The stretch before holds the outlier at 10, which pulls its mean down.
    assert!(close(drop.relative_change, -0.09, 0.01), "{drop:?}");
}

/// apache/otava tests/analysis_test.py, series_test.py and change_point_divisive_test.py.
#[test]
fn otava_small_series() {
    let single = [
        1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01, 0.98, 1.01, 0.96, 0.50, 0.51, 0.48, 0.48, 0.55, 0.50, 0.49, 0.51,
        0.50, 0.49,
    ];
    let series_1 = [1.02, 0.95, 0.99, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55];
    let series_2 = [2.02, 2.03, 2.01, 2.04, 1.82, 1.85, 1.79, 1.81, 1.80, 1.76, 1.78];
    let zeros_first = [0.0, 0.0, 0.0, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55];
    let steps = [0.3, 2.4, 1.5, -0.9, -0.5, 99.7, 98.3, 99.1, 149.0, 149.7, 149.5, 149.1, 148.8, 150.0];
    let cases: [(&str, &[f64], Options, &[usize]); 7] = [
        ("test_single_series", &single, otava(10, 0.0001, 0.0), &[10]),
        ("test_change_point_detection 1", &series_1, otava(50, 0.001, 0.0), &[6]),
        ("test_change_point_detection 2", &series_2, otava(50, 0.001, 0.0), &[4]),
        ("test_change_point_min_magnitude 1", &series_1, otava(50, 0.001, 0.2), &[6]),
        ("test_change_point_min_magnitude 2", &series_2, otava(50, 0.001, 0.2), &[]),
        // Otava checks two change points, the first at 3.
        ("test_div_by_zero", &zeros_first, otava(50, 0.001, 0.0), &[3, 6]),
        ("test_ttest", &steps, otava(14, 0.01, 0.0), &[5, 8]),
    ];
    for (name, series, opts, want) in cases {
        assert_eq!(otava_indexes(series, &opts), want, "{name}, Otava's flavour");
        assert_eq!(indexes(series, &opts), want, "{name}");
        let defaults = Options { min_magnitude: opts.min_magnitude, ..Options::default() };
        assert_eq!(indexes(series, &defaults), want, "{name}, default options");
    }
    // A change from a mean of 0 is infinitely large, and up.
    let from_zero = change_points(&zeros_first, &Options::default());
    assert_eq!((from_zero[0].relative_change, from_zero[0].direction), (f64::INFINITY, Direction::Up));
}

// ---- MongoDB's test vectors -----------------------------------------------------------------

/// mongodb/signal-processing-algorithms tests/test_detection.py and tests/data/profiling/short.json,
/// at their p-value of 0.01. Their E-Divisive runs on the whole series with a permutation test.
///
/// Their random-ish data (three levels of 20 uniform draws) is the one that differs at their
/// level: the t-test also finds the six lowest draws of the first level (14, p = 0.005) and the
/// ten highest of the last (50, p = 0.0015). At the default 0.001 it finds their [20, 40].
#[test]
fn mongodb_series() {
    let level = |len: usize, f: &dyn Fn(usize) -> f64| (0..len).map(f).collect::<Vec<f64>>();
    let random_ish = [
        41.0, 18.0, 23.0, 3.0, 32.0, 11.0, 40.0, 13.0, 29.0, 48.0, 47.0, 35.0, 18.0, 21.0, 6.0, 2.0, 23.0, 3.0, 4.0,
        7.0, 120.0, 103.0, 102.0, 81.0, 71.0, 62.0, 115.0, 61.0, 108.0, 63.0, 70.0, 98.0, 65.0, 96.0, 64.0, 74.0, 70.0,
        113.0, 90.0, 114.0, 208.0, 196.0, 153.0, 150.0, 225.0, 179.0, 206.0, 165.0, 177.0, 151.0, 218.0, 217.0, 244.0,
        245.0, 229.0, 195.0, 225.0, 229.0, 176.0, 250.0,
    ];
    let cases: [(&str, Vec<f64>, &[usize]); 9] = [
        ("test_random_ish_data", random_ish.to_vec(), &[14, 20, 40, 50]),
        ("test_finds_simple_regression", level(30, &|i| if i < 15 { 50.0 } else { 100.0 }), &[15]),
        ("test_finds_ahead", level(30, &|i| [50.0, 74.0, 100.0][(i >= 14) as usize + (i >= 15) as usize]), &[15]),
        ("test_finds_behind", level(30, &|i| [50.0, 76.0, 100.0][(i >= 14) as usize + (i >= 15) as usize]), &[14]),
        ("test_finds_simple_regression2", level(30, &|i| if i == 2 || i >= 15 { 100.0 } else { 50.0 }), &[15]),
        (
            "test_two_regressions",
            level(45, &|i| if i == 2 { 100.0 } else { [50.0, 100.0, 150.0][(i >= 15) as usize + (i >= 30) as usize] }),
            &[15, 30],
        ),
        ("test_no_regressions", vec![50.0; 30], &[]),
        ("short.json", vec![1.0; 11], &[]),
        // MongoDB expects [15, 33]: its permutation test takes the outlier at 32 for the start
        // of the recovery. The t-test puts the recovery where the level changes, at 30.
        (
            "test_regression_and_recovery",
            level(45, &|i| if i == 2 || (15..30).contains(&i) || i == 32 { 100.0 } else { 50.0 }),
            &[15, 30],
        ),
    ];
    for (name, series, want) in cases {
        let opts = Options { max_p_value: 0.01, ..Options::default() };
        assert_eq!(indexes(&series, &opts), want, "{name}");
    }
    assert_eq!(indexes(&random_ish, &Options::default()), [20, 40]);
}

// ---- generated series -----------------------------------------------------------------------

#[test]
fn a_step_is_found_where_it_is() {
    for seed in 0..20 {
        let series = generated(seed, 40, 0.02, |i| if i < 25 { 100.0 } else { 120.0 });
        let found = change_points(&series, &Options::default());
        assert_eq!(found.len(), 1, "seed {seed}: {found:?}");
        let step = found[0];
        assert!((24..=26).contains(&step.index), "seed {seed}: {step:?}");
        assert_eq!(step.direction, Direction::Up);
        assert!(step.is_regression(Sense::LowerIsBetter) && !step.is_regression(Sense::HigherIsBetter));
        assert!(close(step.relative_change, 0.2, 0.03), "seed {seed}: {step:?}");
        assert!(step.p_value < 1e-10, "seed {seed}: {step:?}");
    }
}

#[test]
fn noise_alone_has_no_change() {
    for seed in 0..20 {
        for len in [40, 200] {
            let series = generated(seed, len, 0.02, |_| 100.0);
            assert_eq!(indexes(&series, &Options::default()), Vec::<usize>::new(), "seed {seed}, {len} points");
        }
    }
}

#[test]
fn a_slow_drift_is_a_staircase_once_it_shows() {
    let drift = |rate: f64| move |i: usize| 100.0 * (1.0 + rate * i as f64);
    for seed in 0..20 {
        // 0.02 % a run for 40 runs is lost in 2 % noise.
        assert_eq!(indexes(&generated(seed, 40, 0.02, drift(0.0002)), &Options::default()), Vec::<usize>::new());
        // 0.1 % a run for 300 runs (+30 %) is cut into steps, all up.
        let found = change_points(&generated(seed, 300, 0.02, drift(0.001)), &Options::default());
        assert!((3..=10).contains(&found.len()), "seed {seed}: {} change points", found.len());
        assert!(found.iter().all(|c| c.direction == Direction::Up), "seed {seed}: {found:?}");
    }
}

#[test]
fn single_outliers_are_no_change() {
    for seed in 0..20 {
        for at in [0, 1, 2, 10, 20, 36, 37, 38, 39] {
            let series = generated(seed, 40, 0.02, |i| if i == at { 150.0 } else { 100.0 });
            assert_eq!(indexes(&series, &Options::default()), Vec::<usize>::new(), "seed {seed}, outlier at {at}");
        }
    }
}

/// In a quiet series Otava's filters take an outlier among the newest runs for a change;
/// Chromium's filter is what stops that.
#[test]
fn chromium_filter_stops_outliers_among_the_newest() {
    for seed in 0..5 {
        for at in [37, 38, 39] {
            let series = generated(seed, 40, 0.002, |i| if i == at { 150.0 } else { 100.0 });
            assert_eq!(indexes(&series, &otava(30, 0.001, 0.0)), [at], "seed {seed}, outlier at {at}");
            assert_eq!(indexes(&series, &Options::default()), Vec::<usize>::new(), "seed {seed}, outlier at {at}");
        }
        // A real change three runs ago is reported all the same.
        let series = generated(seed, 40, 0.002, |i| if i < 37 { 100.0 } else { 150.0 });
        assert_eq!(indexes(&series, &Options::default()), [37], "seed {seed}");
    }
}

#[test]
fn two_steps_are_two_change_points() {
    for seed in 0..20 {
        let series = generated(seed, 90, 0.02, |i| [100.0, 120.0, 102.0][i / 30]);
        let found = change_points(&series, &Options::default());
        let got: Vec<(usize, Direction)> = found.iter().map(|c| (c.index, c.direction)).collect();
        assert_eq!(got.len(), 2, "seed {seed}: {found:?}");
        assert!(got[0].0.abs_diff(30) <= 1 && got[0].1 == Direction::Up, "seed {seed}: {found:?}");
        assert!(got[1].0.abs_diff(60) <= 1 && got[1].1 == Direction::Down, "seed {seed}: {found:?}");
        // Each change's means are those of its own stretches, not of the whole series.
        assert!(close(found[1].mean_before, 120.0, 2.0) && close(found[1].mean_after, 102.0, 2.0), "{found:?}");
    }
}

#[test]
fn magnitude_filter() {
    // A 3 % step in 0.5 % noise is significant, but not a 5 % change.
    let series = generated(3, 60, 0.005, |i| if i < 30 { 100.0 } else { 103.0 });
    assert_eq!(indexes(&series, &Options::default()), [30]);
    assert_eq!(indexes(&series, &Options { min_magnitude: 0.05, ..Options::default() }), Vec::<usize>::new());
}

/// Long series: 5,000 points with a 10 % step every 500 runs, found without a quadratic cost.
///
/// Noise alone has change points too, now and then (see the module's documentation); this
/// series has three pairs of them around short excursions besides its nine steps.
#[test]
fn five_thousand_points() {
    let series = generated(11, 5_000, 0.02, |i| 100.0 * (1.0 + 0.1 * ((i / 500) % 2) as f64));
    let found = change_points(&series, &Options::default());
    for k in 1..10 {
        let step = found.iter().find(|c| c.index.abs_diff(k * 500) <= 1);
        let up = k % 2 == 1;
        assert!(step.is_some_and(|c| (c.direction == Direction::Up) == up), "no step at {}: {found:?}", k * 500);
    }
    assert!(found.len() <= 9 + 6, "{found:?}");
    let mut false_alarms = 0;
    for seed in 0..20 {
        false_alarms += indexes(&generated(seed, 1000, 0.02, |_| 100.0), &Options::default()).len();
    }
    assert!(false_alarms <= 20, "{false_alarms} change points in 20,000 points of noise");
}

/// The time of 10,000 points: `cargo test --release -p barrage-history -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a test"]
fn time_ten_thousand_points() {
    let series = generated(5, 10_000, 0.02, |i| 100.0 * (1.0 + 0.1 * ((i / 700) % 3) as f64));
    let start = std::time::Instant::now();
    let found = change_points(&series, &Options::default());
    println!("10,000 points: {} change points in {:?}", found.len(), start.elapsed());
}

// ---- prediction check -----------------------------------------------------------------------

#[test]
fn prediction_check_verdicts() {
    let stable = generated(2, 30, 0.01, |_| 100.0);
    let cases = [
        (101.0, Sense::LowerIsBetter, Verdict::Within),
        (99.0, Sense::HigherIsBetter, Verdict::Within),
        (120.0, Sense::LowerIsBetter, Verdict::Regression),
        (120.0, Sense::HigherIsBetter, Verdict::Improvement),
        (80.0, Sense::LowerIsBetter, Verdict::Improvement),
        (80.0, Sense::HigherIsBetter, Verdict::Regression),
        (f64::NAN, Sense::LowerIsBetter, Verdict::NotEnoughData),
    ];
    for (newest, sense, verdict) in cases {
        let check = prediction_check(&stable, newest, sense, 0.99);
        assert_eq!(check.verdict, verdict, "{newest} {sense:?}: {check:?}");
        assert_eq!(check.is_regression(), verdict == Verdict::Regression);
    }
}

#[test]
fn prediction_interval_bounds() {
    // n = 5, mean 3, s = √2.5, t(0.975, 4) = 2.776445: 3 ± 2.776445 · √2.5 · √1.2.
    let check = prediction_check(&[1.0, 2.0, 3.0, 4.0, 5.0], 3.5, Sense::LowerIsBetter, 0.95);
    let interval = check.interval.unwrap();
    let half = 2.776_445 * 2.5_f64.sqrt() * 1.2_f64.sqrt();
    assert_eq!((interval.mean, interval.points), (3.0, 5));
    assert!(close(interval.lower, 3.0 - half, 1e-5) && close(interval.upper, 3.0 + half, 1e-5), "{interval:?}");
    assert_eq!(check.verdict, Verdict::Within);
    // A higher confidence is a wider interval.
    let wider = prediction_check(&[1.0, 2.0, 3.0, 4.0, 5.0], 3.5, Sense::LowerIsBetter, 0.999).interval.unwrap();
    assert!(wider.upper - wider.lower > interval.upper - interval.lower);
}

#[test]
fn prediction_check_needs_two_points() {
    let cases: [&[f64]; 4] = [&[], &[100.0], &[100.0, f64::NAN], &[f64::NAN, f64::INFINITY, 5.0]];
    for stable in cases {
        let check = prediction_check(stable, 150.0, Sense::LowerIsBetter, 0.99);
        assert_eq!((check.verdict, check.interval), (Verdict::NotEnoughData, None), "{stable:?}");
    }
    // A constant stretch predicts its value exactly: anything else is outside.
    let constant = prediction_check(&[100.0; 10], 100.0, Sense::LowerIsBetter, 0.99);
    assert_eq!(constant.verdict, Verdict::Within);
    assert_eq!(prediction_check(&[100.0; 10], 100.5, Sense::LowerIsBetter, 0.99).verdict, Verdict::Regression);
}

#[test]
#[should_panic(expected = "confidence")]
fn prediction_check_rejects_a_confidence_of_one() {
    prediction_check(&[1.0, 2.0], 1.5, Sense::LowerIsBetter, 1.0);
}

#[test]
fn results_as_json() {
    // What a reader of the JSON sees: snake_case names, and options that may leave fields out.
    let check = prediction_check(&[1.0, 1.0], 2.0, Sense::LowerIsBetter, 0.99);
    let json = serde_json::to_value(check).unwrap();
    assert_eq!(json["verdict"], "regression");
    assert_eq!(json["interval"]["points"], 2);
    let found = change_points(&generated(1, 40, 0.02, |i| if i < 25 { 100.0 } else { 120.0 }), &Options::default());
    assert_eq!(serde_json::to_value(found[0]).unwrap()["direction"], "up");
    assert_eq!(serde_json::to_value(Sense::HigherIsBetter).unwrap(), "higher_is_better");
    let options: Options = serde_json::from_str(r#"{"window": 50}"#).unwrap();
    assert_eq!(options, Options { window: 50, ..Options::default() });
}

/// apache/otava tests/tigerbeetle_test.py's series.
const TIGERBEETLE: [u32; 365] = [
    26705, 26475, 26641, 26806, 26835, 26911, 26564, 26812, 26874, 26682, 15672, 26745, 26460, 26977, 26851, 23412,
    23547, 23674, 23519, 23670, 23662, 23462, 23750, 23717, 23524, 23588, 23687, 23793, 23937, 23715, 23570, 23730,
    23690, 23699, 23670, 23860, 23988, 23652, 23681, 23798, 23728, 23604, 23523, 23412, 23685, 23773, 23771, 23718,
    23409, 23739, 23674, 23597, 23682, 23680, 23711, 23660, 23990, 23938, 23742, 23703, 23536, 24363, 24414, 24483,
    24509, 24944, 24235, 24560, 24236, 24667, 24730, 28346, 28437, 28436, 28057, 28217, 28456, 28427, 28398, 28250,
    28331, 28222, 28726, 28578, 28345, 28274, 28514, 28590, 28449, 28305, 28411, 28788, 28404, 28821, 28580, 27483,
    26805, 27487, 27124, 26898, 27295, 26951, 27312, 27660, 27154, 27050, 26989, 27193, 27503, 27326, 27375, 27513,
    27057, 27421, 27574, 27609, 27123, 27824, 27644, 27394, 27836, 27949, 27702, 27457, 27272, 28207, 27802, 27516,
    27586, 28005, 27768, 28543, 28237, 27915, 28437, 28342, 27733, 28296, 28524, 28687, 28258, 28611, 29360, 28590,
    29641, 28965, 29474, 29256, 28611, 28205, 28539, 27962, 28398, 28509, 28240, 28592, 28102, 28461, 28578, 28669,
    28507, 28535, 28226, 28536, 28561, 28087, 27953, 28398, 28007, 28518, 28337, 28242, 28607, 28545, 28514, 28377,
    28010, 28412, 28633, 28576, 28195, 28637, 28724, 28466, 28287, 28719, 28425, 28860, 28842, 28604, 28327, 28216,
    28946, 28918, 29287, 28725, 29148, 29541, 29137, 29628, 29087, 28612, 29154, 29108, 28884, 29234, 28695, 28969,
    28809, 28695, 28634, 28916, 29852, 29389, 29757, 29531, 29363, 29251, 29552, 29561, 29046, 29795, 29022, 29395,
    28921, 29739, 29257, 29455, 29376, 29528, 28909, 29492, 28984, 29621, 29026, 29457, 29102, 29114, 28924, 29162,
    29259, 29554, 29616, 29211, 29367, 29460, 28836, 29645, 29586, 28848, 29324, 28969, 29150, 29243, 29081, 29312,
    28923, 29272, 29117, 29072, 29529, 29737, 29652, 29612, 29856, 29012, 30402, 29969, 29309, 29439, 29285, 29421,
    29023, 28772, 29692, 29416, 29267, 29542, 29904, 30045, 29739, 29945, 29141, 29163, 29765, 29197, 29441, 28910,
    29504, 29614, 29643, 29506, 29420, 29672, 29432, 29784, 29888, 29309, 29247, 29816, 29254, 29813, 29451, 29382,
    29618, 28558, 29845, 29499, 29283, 29184, 29246, 28790, 29952, 29145, 29415, 30437, 29227, 29605, 29859, 29156,
    29807, 29406, 29734, 29861, 29140, 29983, 29832, 29919, 29896, 29991, 29266, 29001, 29459, 29548, 29310, 29042,
    29303, 29894, 29091, 29018, 29537, 29614, 29180, 29736, 29500, 29218, 29581, 28906, 28542, 29306, 28987, 29878,
    28865, 30272, 29707, 29662, 29815, 30492, 29347, 30096, 29054, 30238, 28813, 31895, 28915,
];

/// Horreum's E-Divisive test data (Hyperfoil/Horreum,
/// `horreum-backend/src/test/resources/change/eDivisive/valid/tests/resources/horreum.csv`,
/// the numbers only): its test expects the first change point at dataset 1535410, the 14th
/// point (index 13), where the KPI drops from about 219 to about 207 for three runs.
#[test]
fn horreum_kpi_series() {
    let kpi = [
        218.18, 220.10, 227.12, 223.78, 216.40, 223.16, 216.08, 221.22, 215.02, 215.60, 215.04, 220.50, 217.76, 208.28,
        205.98, 207.66, 272.28, 394.14, 391.28, 391.64, 392.70, 386.06, 291.36, 290.66, 292.48, 295.60, 294.22, 293.54,
        289.58, 293.18, 296.98, 292.06, 245.02, 243.02, 246.40, 246.42, 245.82, 246.04, 248.62, 246.60, 242.62, 241.64,
        436.54, 437.38, 438.98, 442.50, 445.08, 444.62, 445.26, 441.32, 444.20, 446.12, 446.62,
    ];
    // As Otava (whose Hunter Horreum runs) places them: the first at 13, as Horreum's test
    // expects, then the rise through 16 to 17, and each level after.
    let theirs = otava_indexes(&kpi, &otava(30, 0.001, 0.0));
    assert_eq!(theirs.first(), Some(&13), "{theirs:?}");
    // With the filter on (three runs a side, most of them on their side): the dip at 13 is
    // three runs before the next step, one of them half way up, so it is not a level of its
    // own; the four level changes are found where Otava finds them.
    let ours = indexes(&kpi, &Options::default());
    for level in [17, 22, 32, 42] {
        assert!(ours.contains(&level) && theirs.contains(&level), "{level}: {ours:?} {theirs:?}");
    }
    assert!(!ours.contains(&13), "{ours:?}");
}

/// Horreum's model test: runs of 1 and 2 give no change; a 10 after them is +542.9% (its
/// alert). Here a single run after the stretch is not a change point (three runs a side, as
/// Chromium's filter asks), and the prediction check is what flags it at once.
#[test]
fn horreum_one_run_jump_is_the_gates_to_flag() {
    let runs = [1.0, 2.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0];
    assert!(indexes(&runs, &Options::default()).is_empty());
    let with_ten: Vec<f64> = runs.iter().copied().chain([10.0]).collect();
    assert!(indexes(&with_ten, &Options::default()).is_empty(), "one run is not yet a change point");
    let check = prediction_check(&runs, 10.0, Sense::LowerIsBetter, 0.99);
    assert!(check.is_regression(), "{check:?}");
    let mean = runs.iter().sum::<f64>() / runs.len() as f64;
    assert!(close((10.0 - mean) / mean * 100.0, 542.9, 0.05), "Horreum's +542.9%");
}
