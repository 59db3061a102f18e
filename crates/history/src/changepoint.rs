//! Change points in a series of figures from repeated runs (the p99 latency of every nightly
//! run, say): the runs after which the figure moved and stayed moved, told apart from noise.
//!
//! The method is Apache Otava's (formerly DataStax Hunter: Fleming et al., "Hunter: Using
//! Change Point Detection to Hunt for Performance Regressions", ICPE 2023), in two steps:
//!
//! 1. **Split.** E-Divisive means (Matteson and James, "A Nonparametric Approach for Multiple
//!    Change Point Analysis of Multivariate Data", 2014) runs in windows of [`Options::window`]
//!    points that overlap by half. In each window the split that maximises the energy
//!    statistic Q̂ is tested with Student's t-test; while the test passes, the pieces are split
//!    again. The test is run at a relaxed level (ten times [`Options::max_p_value`]), so this
//!    step over-collects: its results are only *weak* change points.
//! 2. **Merge.** Every weak change point is tested again against its neighbours over the whole
//!    series, and the weakest one is removed, its neighbours re-tested (each now reaches across
//!    the removed one), until every one left passes: p-value below [`Options::max_p_value`], at
//!    least [`Options::min_points_each_side`] points each side, most of them on that side of
//!    the midpoint between the two means (a filter after Chromium's, which Otava does not
//!    have), and a magnitude above [`Options::min_magnitude`].
//!
//! Windows keep the cost linear in the series' length (E-Divisive over a whole series is
//! quadratic in memory and time) and keep one old, large change from hiding a later, smaller
//! one. The t-test in place of E-Divisive's permutation test is
//! what Otava does now: it needs no random numbers, so the same series always gives the same
//! answer, and it works with the few points a window has.
//!
//! Where this port departs from Otava (0.8), on purpose:
//!
//! - the t-test uses sample variances; Otava hands scipy population ones, which makes short
//!   stretches look quieter than they are (`t_test`);
//! - after a removal both neighbours are re-tested; Otava re-tests the right neighbour and the
//!   one after it, and keeps the left one's stale test (`merge`);
//! - Chromium's filter ([`Options::min_points_each_side`]), on by default: without it a single
//!   outlying run among the newest few is reported as a change;
//! - figures that are not finite (NaN, ±∞: a failed run, a division by zero) are no
//!   measurement and are skipped: the analysis runs on the finite figures, and every index it
//!   reports is an index into the series as given. Otava fills missing figures with their
//!   neighbour's instead; a copied figure would look like a quiet run and shrink the variance
//!   the t-test sees.
//!
//! With those departures turned off, the tests reproduce the change points Otava's own tests
//! expect, to the index.
//!
//! Noise alone has change points now and then: the t-test is at [`Options::max_p_value`] for
//! each split, but each window tries every split and keeps the best. In pure normal noise
//! the defaults find about one change point in 1,300 points, mostly pairs around a short
//! excursion (Otava's filters alone: one in 850). The rate does not depend on the noise's
//! size: the t-test measures a change in units of the noise.
//!
//! A slow drift is no step, and E-Divisive looks for steps: once the drift adds up to more than
//! the noise hides, it is reported as a staircase of small changes, all one way. At 2 % noise
//! and 0.1 % a run, about half of 40-run series show one change point, and 300 runs show five
//! to nine.
//!
//! [`prediction_check`] is the fast gate for CI: is the newest run's figure outside the
//! prediction interval of the last stable stretch, and which way?

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// How [`change_points`] decides. [`Options::default`] is Otava's defaults, with the window of
/// Hunter and Otava's `split()` (Otava's command line now defaults to 50) and Chromium's
/// minimum of points each side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Options {
    /// Points E-Divisive looks at at once (30). Windows start every `window / 2` points, so each
    /// point is seen twice. Large windows resist noise better but can dismiss a short-lived
    /// change; Otava's advice is a window that holds at most one change. Below 2 acts as 2.
    pub window: usize,
    /// Largest p-value of Student's t-test between the points before and after a change point
    /// for it to be kept (0.001). NaN acts as 0: nothing is kept.
    pub max_p_value: f64,
    /// Smallest magnitude of a change point for it to be kept, exclusive (0.0). The magnitude is
    /// Otava's: the larger of |after/before − 1| and |before/after − 1|, so a halving and a
    /// doubling weigh the same (1.0). NaN acts as 0.
    pub min_magnitude: f64,
    /// Fewest points the stretches before and after a change point must each have (3), and
    /// more than half of each stretch must be on its side of the midpoint between the two
    /// means (Chromium judges changes by medians, for the same reason): one outlying run can
    /// carry neither a stretch of its own nor a stretch of a few runs. It also means a change
    /// is only reported once this many runs show it; [`prediction_check`] judges the newest
    /// run alone. 0 and 1 turn the filter off (Otava's behaviour).
    pub min_points_each_side: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { window: 30, max_p_value: 0.001, min_magnitude: 0.0, min_points_each_side: 3 }
    }
}

/// Otava's magnitude of a change from `before` to `after`: |after − before| over the smaller
/// of the two sizes, which is max(|after/before − 1|, |before/after − 1|) for values of one
/// sign. A change from or to 0 is infinitely large.
pub fn magnitude(before: f64, after: f64) -> f64 {
    let change = (after - before).abs();
    if change == 0.0 {
        0.0
    } else {
        change / before.abs().min(after.abs())
    }
}

/// Which way a figure moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The figure grew.
    Up,
    /// The figure shrank.
    Down,
}

/// Which way of a figure is good: whether a move up is an improvement or a regression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sense {
    /// Throughput, requests per second: a move down is a regression.
    HigherIsBetter,
    /// Latency, errors, CPU per request: a move up is a regression.
    LowerIsBetter,
}

impl Direction {
    /// Whether a move this way is a regression of a figure of this sense.
    pub fn is_regression(self, sense: Sense) -> bool {
        matches!((self, sense), (Direction::Up, Sense::LowerIsBetter) | (Direction::Down, Sense::HigherIsBetter))
    }
}

/// A point of the series from which on the figure is different.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// The index, in the series as given, of the first point of the new stretch.
    pub index: usize,
    /// The mean of the finite points from the change point before (or the start) to this one.
    pub mean_before: f64,
    /// The mean of the finite points from this one to the next change point (or the end).
    pub mean_after: f64,
    /// (after − before) / |before|: +0.2 is 20 % up. ±∞ when `mean_before` is 0 and
    /// `mean_after` is not (which JSON cannot hold: serde_json writes it as null).
    pub relative_change: f64,
    /// Student's t-test's two-sided p-value for the two stretches having one mean.
    pub p_value: f64,
    /// Which way the figure moved.
    pub direction: Direction,
}

impl ChangePoint {
    /// Whether this change made a figure of this sense worse.
    pub fn is_regression(&self, sense: Sense) -> bool {
        self.direction.is_regression(sense)
    }
}

/// The change points of `series`, sorted by index: see the [module](self) for the method.
///
/// Deterministic (no random numbers) and linear in the series' length: 10,000 points take a
/// few milliseconds. An empty series, a single point and a constant series have none.
/// Non-finite figures are skipped (see the [module](self)).
pub fn change_points(series: &[f64], opts: &Options) -> Vec<ChangePoint> {
    analyse(series, opts, Flavour::Corrected)
}

/// Where this port departs from Otava on purpose (see [`t_test`] and [`merge`]). The tests run
/// Otava's flavour to check the port against Otava's own expected results, to the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    /// Sample variances; both neighbours of a removed change point re-tested.
    Corrected,
    /// Otava 0.8's: population variances; the right neighbour of a removed change point and
    /// the one after it re-tested.
    #[cfg_attr(not(test), allow(dead_code))]
    Otava,
}

fn analyse(series: &[f64], opts: &Options, flavour: Flavour) -> Vec<ChangePoint> {
    let (values, at): (Vec<f64>, Vec<usize>) =
        series.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, &v)| (v, i)).unzip();
    let max_p = if opts.max_p_value.is_nan() { 0.0 } else { opts.max_p_value };
    let weak = split(&values, opts.window.max(2), first_pass_p_value(max_p), flavour);
    let limits = Limits {
        max_p,
        min_magnitude: if opts.min_magnitude.is_nan() { 0.0 } else { opts.min_magnitude },
        min_points: opts.min_points_each_side,
        flavour,
    };
    merge(&values, &weak, &limits).iter().map(|cut| cut.publish(&at)).collect()
}

/// The relaxed level of the split step, Otava's: ten times the final one below 0.05, twice it
/// below 0.5, else the same. Ten times 0.1 or more would be a level of 1 or more, which lets
/// every candidate through and leaves the merge step to undo the split step point by point.
fn first_pass_p_value(max_p: f64) -> f64 {
    if max_p < 0.05 {
        max_p * 10.0
    } else if max_p < 0.5 {
        max_p * 2.0
    } else {
        max_p
    }
}

/// The weak change points of `values`: E-Divisive in each window, the union of what the
/// windows found, sorted.
fn split(values: &[f64], window: usize, max_p: f64, flavour: Flavour) -> Vec<usize> {
    // Half a window apart, so a change near the edge of one window is in the middle of the next.
    let step = window / 2;
    let mut found = Vec::new();
    let mut start = 0;
    while start < values.len() {
        let end = (start + window).min(values.len());
        let local = divide(&values[start..end], max_p, flavour);
        // Otava starts the next window at the last change found if that is further on: what
        // lies before it has been split already, and the next window then begins on a level
        // stretch.
        let last = local.last().map_or(0, |&i| start + i);
        found.extend(local.into_iter().map(|i| start + i));
        start = last.max(start + step);
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// E-Divisive with the t-test in one window: the window's change points, sorted, as indexes
/// into `window`.
///
/// Each round takes, over every stretch between the change points found so far, the split
/// with the highest Q̂; if the t-test between the two halves of its stretch passes, it is a
/// change point and the next round starts, else the window is done (a lower Q̂ elsewhere would
/// be weaker still).
fn divide(window: &[f64], max_p: f64, flavour: Flavour) -> Vec<usize> {
    let energy = Energy::new(window);
    let mut cuts: Vec<usize> = Vec::new();
    while let Some((lo, tau, hi)) = best_candidate(&energy, &cuts) {
        let test = t_test(&window[lo..tau], &window[tau..hi], flavour);
        if test.p_value > max_p {
            break;
        }
        cuts.insert(cuts.partition_point(|&c| c < tau), tau);
    }
    cuts
}

/// Over the stretches between `cuts` (and the ends), the split with the highest Q̂ as
/// (stretch start, split, stretch end). The first stretch wins a tie, as in Otava.
fn best_candidate(energy: &Energy, cuts: &[usize]) -> Option<(usize, usize, usize)> {
    let mut bounds = Vec::with_capacity(cuts.len() + 2);
    bounds.push(0);
    bounds.extend_from_slice(cuts);
    bounds.push(energy.len);
    let mut best: Option<(f64, (usize, usize, usize))> = None;
    for pair in bounds.windows(2) {
        let (lo, hi) = (pair[0], pair[1]);
        if hi - lo < 2 {
            continue;
        }
        let (tau, q) = energy.best_split(lo, hi);
        if best.is_none_or(|(top, _)| q > top) {
            best = Some((q, (lo, tau, hi)));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// E-Divisive's energy statistic over one window, from the sums of the distances between its
/// points (|x − y|, Otava's exponent α = 1).
struct Energy {
    len: usize,
    /// `within[a * (len + 1) + b]`: the sum of |x_i − x_k| over a ≤ i < k < b. Every statistic
    /// of the window is a difference of these, so Q̂ of any split of any stretch costs O(1) and
    /// the whole table O(window²), once per window.
    within: Vec<f64>,
}

impl Energy {
    fn new(xs: &[f64]) -> Energy {
        let n = xs.len();
        let stride = n + 1;
        let mut within = vec![0.0; stride * stride];
        for b in 2..=n {
            // Extending [a, b − 1) by the point b − 1 adds its distances to the points of [a, b − 1).
            let last = xs[b - 1];
            let mut column = 0.0;
            for a in (0..b - 1).rev() {
                column += (xs[a] - last).abs();
                within[a * stride + b] = within[a * stride + b - 1] + column;
            }
        }
        Energy { len: n, within }
    }

    fn within(&self, a: usize, b: usize) -> f64 {
        self.within[a * (self.len + 1) + b]
    }

    /// Q̂ of X = [s, tau) against Y = [tau, kappa): the energy distance between the two, weighted
    /// by mn / (m + n) so a split is judged by how much of the stretch it explains:
    /// 2/(m+n) Σ|X−Y| − 2m/((m+n)(n−1)) Σ|X−X| − 2n/((m+n)(m−1)) Σ|Y−Y|.
    fn q(&self, s: usize, tau: usize, kappa: usize) -> f64 {
        let (n, m) = ((tau - s) as f64, (kappa - tau) as f64);
        let in_x = self.within(s, tau);
        let in_y = self.within(tau, kappa);
        let across = self.within(s, kappa) - in_x - in_y;
        // A lone point has no distances within it: its term is 0, not 0/0.
        let x_term = if n > 1.0 { 2.0 * m / ((m + n) * (n - 1.0)) * in_x } else { 0.0 };
        let y_term = if m > 1.0 { 2.0 * n / ((m + n) * (m - 1.0)) * in_y } else { 0.0 };
        2.0 / (m + n) * across - x_term - y_term
    }

    /// The split tau of [lo, hi) that maximises Q̂ over every end kappa ≤ hi of the second
    /// half, with that Q̂. Letting the second half end early is E-Divisive's: it finds a change
    /// next to a later one. The first maximum wins, as numpy's argmax does for Otava.
    fn best_split(&self, lo: usize, hi: usize) -> (usize, f64) {
        let mut best = (lo + 1, self.q(lo, lo + 1, lo + 2));
        for tau in lo + 1..hi {
            for kappa in tau + 1..=hi {
                let q = self.q(lo, tau, kappa);
                if q > best.1 {
                    best = (tau, q);
                }
            }
        }
        best
    }
}

/// What the merge step keeps: [`Options`], made safe, and how it tests.
struct Limits {
    max_p: f64,
    min_magnitude: f64,
    min_points: usize,
    flavour: Flavour,
}

/// A change point between the stretches `[lo, index)` and `[index, hi)` of the finite values,
/// with its test.
#[derive(Debug, Clone, Copy)]
struct Cut {
    index: usize,
    shorter_side: usize,
    /// Whether most points of each side are on that side of the midpoint of the two means.
    carried: bool,
    test: TTest,
}

impl Cut {
    fn new(values: &[f64], lo: usize, index: usize, hi: usize, flavour: Flavour) -> Cut {
        let (before, after) = (&values[lo..index], &values[index..hi]);
        let test = t_test(before, after, flavour);
        let mid = 0.5 * (test.mean_before + test.mean_after);
        let carried = carried_by_most(before, test.mean_before, mid) && carried_by_most(after, test.mean_after, mid);
        Cut { index, shorter_side: before.len().min(after.len()), carried, test }
    }

    /// Whether Chromium's filter removes this change point: too few points on a side, or a
    /// change that most points of a side do not show.
    fn fails_chromium(&self, min_points: usize) -> bool {
        min_points > 1 && (self.shorter_side < min_points || !self.carried)
    }

    /// The [`magnitude`] of the change between the two means.
    fn magnitude(&self) -> f64 {
        magnitude(self.test.mean_before, self.test.mean_after)
    }

    fn publish(&self, at: &[usize]) -> ChangePoint {
        let TTest { mean_before, mean_after, p_value } = self.test;
        let relative_change = if mean_before != 0.0 {
            (mean_after - mean_before) / mean_before.abs()
        } else if mean_after == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(mean_after)
        };
        let direction = if mean_after > mean_before { Direction::Up } else { Direction::Down };
        ChangePoint { index: at[self.index], mean_before, mean_after, relative_change, p_value, direction }
    }
}

/// The merge step: the weak change points tested over the whole series, then the weakest
/// removed, one at a time, until all that are left pass `limits`.
///
/// One at a time, because removing a change point merges its two stretches, and the tests of
/// its neighbours, which reach into them, change: often they get stronger (more points),
/// sometimes weaker (a stretch that now holds a change). Otava re-tests the wrong pair after a
/// removal (the right neighbour and the one after it, whose stretches did not change), and
/// leaves the left neighbour's test as it was, against a stretch that ended at the removed
/// point; here both neighbours are re-tested.
fn merge(values: &[f64], weak: &[usize], limits: &Limits) -> Vec<Cut> {
    let bound = |k: usize| if k == 0 { 0 } else { weak[k - 1] };
    let next = |k: usize| weak.get(k + 1).copied().unwrap_or(values.len());
    let mut cuts: Vec<Cut> =
        weak.iter().enumerate().map(|(k, &index)| Cut::new(values, bound(k), index, next(k), limits.flavour)).collect();
    while let Some(gone) = weakest(values, &cuts, limits) {
        let k = gone.start;
        cuts.drain(gone);
        // After the removal the right neighbour is at k, the left one at k - 1.
        let neighbours = match limits.flavour {
            Flavour::Corrected => [k.checked_sub(1), Some(k)],
            Flavour::Otava => [Some(k), Some(k + 1)],
        };
        let len = cuts.len();
        for j in neighbours.into_iter().flatten().filter(|&j| j < len) {
            retest(values, &mut cuts, j, limits.flavour);
        }
    }
    cuts
}

/// Whether more than half of `side` lies on its mean's side of `mid`, the midpoint between the
/// two sides' means: whether most of the runs show the change, as Chromium judges a change by
/// medians. The pooled t-test alone takes one outlying run among a few for a change against a
/// long quiet stretch: its variance is the quiet stretch's, and [150, 100, 100] after 37 runs
/// of 100 ± 0.2 is a shift of 16.7 with p ≈ 1e-4, though two of the three runs did not move.
fn carried_by_most(side: &[f64], mean: f64, mid: f64) -> bool {
    let own = |x: &f64| if mean > mid { *x > mid } else { mean < mid && *x < mid };
    2 * side.iter().filter(|x| own(x)).count() > side.len()
}

/// The test of `cuts[k]` against its neighbours as they are now.
fn retest(values: &[f64], cuts: &mut [Cut], k: usize, flavour: Flavour) {
    let lo = if k == 0 { 0 } else { cuts[k - 1].index };
    let hi = cuts.get(k + 1).map_or(values.len(), |c| c.index);
    cuts[k] = Cut::new(values, lo, cuts[k].index, hi, flavour);
}

/// Which change points to remove next, if any fails `limits`: first the least significant if
/// it is not significant enough (Otava), then what Chromium's filter fails (see
/// [`chromium_weakest`]), then the smallest if it is not large enough (Otava). Significance
/// comes first because a test decides it over the most points.
fn weakest(values: &[f64], cuts: &[Cut], limits: &Limits) -> Option<Range<usize>> {
    // The first of equal p-values, as Otava's max(): min_by keeps the first, max_by the last.
    let (k, worst) = cuts.iter().enumerate().min_by(|a, b| b.1.test.p_value.total_cmp(&a.1.test.p_value))?;
    if worst.test.p_value >= limits.max_p {
        return Some(k..k + 1);
    }
    if let Some(gone) = chromium_weakest(values, cuts, limits) {
        return Some(gone);
    }
    let (k, smallest) = cuts.iter().enumerate().min_by(|a, b| a.1.magnitude().total_cmp(&b.1.magnitude()))?;
    (smallest.magnitude() <= limits.min_magnitude).then_some(k..k + 1)
}

/// Of the change points Chromium's filter fails, the one with the shortest side (of equal
/// sides the less significant), or, if that side is a short stretch between it and another
/// change point, what [`island`] says of that stretch.
fn chromium_weakest(values: &[f64], cuts: &[Cut], limits: &Limits) -> Option<Range<usize>> {
    let (k, cut) =
        cuts.iter().enumerate().filter(|(_, c)| c.fails_chromium(limits.min_points)).min_by(|a, b| {
            a.1.shorter_side.cmp(&b.1.shorter_side).then(b.1.test.p_value.total_cmp(&a.1.test.p_value))
        })?;
    if cut.shorter_side >= limits.min_points {
        // Sides long enough, but the change is not in most of their points.
        return Some(k..k + 1);
    }
    let lo = if k == 0 { 0 } else { cuts[k - 1].index };
    let hi = cuts.get(k + 1).map_or(values.len(), |c| c.index);
    if k > 0 && cut.index - lo == cut.shorter_side {
        return Some(island(values, cuts, k - 1, limits));
    }
    if k + 1 < cuts.len() && hi - cut.index == cut.shorter_side {
        return Some(island(values, cuts, k, limits));
    }
    // The short side is the start or the end of the series: only this change point bounds it.
    Some(k..k + 1)
}

/// What to remove for the short stretch between `cuts[k]` and `cuts[k + 1]`: both change
/// points if the stretches either side of it do not differ (runs that went off and came back:
/// outliers), else the one that joins it to the side whose mean is nearer its own (runs on
/// their way from one level to the next, as MongoDB's tests have them).
///
/// Removing one change point of an outlier's two would leave the outlier in a stretch next to
/// the other, and the next one along: an outlier among the few runs before a real change can
/// weaken that change's test enough to have it removed instead, and a change point next to the
/// outlier kept in its place.
fn island(values: &[f64], cuts: &[Cut], k: usize, limits: &Limits) -> Range<usize> {
    let lo = if k == 0 { 0 } else { cuts[k - 1].index };
    let (a, b) = (cuts[k].index, cuts[k + 1].index);
    let hi = cuts.get(k + 2).map_or(values.len(), |c| c.index);
    let around = t_test(&values[lo..a], &values[b..hi], limits.flavour);
    if around.p_value >= limits.max_p {
        return k..k + 2;
    }
    let (_, mean, _) = moments(&values[a..b]);
    if (mean - around.mean_before).abs() <= (mean - around.mean_after).abs() {
        k..k + 1
    } else {
        k + 1..k + 2
    }
}

/// Student's two-sample t-test: the means of two stretches and the two-sided p-value of their
/// having one mean.
#[derive(Debug, Clone, Copy, PartialEq)]
struct TTest {
    mean_before: f64,
    mean_after: f64,
    p_value: f64,
}

/// Student's t-test with the pooled variance, as Otava (scipy's `ttest_ind_from_stats`): the
/// stretches of a series of runs of one benchmark have much the same spread, and the pooled
/// test has more degrees of freedom than Welch's with few points. Unlike Otava, the variances
/// are the sample variances (n − 1); Otava passes numpy's default population ones (n) where
/// scipy expects sample ones, which shrinks the variance of a short stretch and so flags
/// changes too readily.
fn t_test(before: &[f64], after: &[f64], flavour: Flavour) -> TTest {
    let (n1, mean_before, ss1) = moments(before);
    let (n2, mean_after, ss2) = moments(after);
    let (ss1, ss2) = match flavour {
        Flavour::Corrected => (ss1, ss2),
        // scipy computes (n − 1)·std², and Otava's std² is ss / n.
        Flavour::Otava => (ss1 * (n1 - 1.0) / n1, ss2 * (n2 - 1.0) / n2),
    };
    // Two points, one each side, have no spread to judge a difference by: Otava's p = 1.
    let p_value = if n1 + n2 <= 2.0 {
        1.0
    } else {
        let df = n1 + n2 - 2.0;
        let se = ((ss1 + ss2) / df * (1.0 / n1 + 1.0 / n2)).sqrt();
        pooled_p_value(mean_after - mean_before, se, mean_before.abs().max(mean_after.abs()), df)
    };
    TTest { mean_before, mean_after, p_value }
}

/// The p-value of a difference of means `diff` with standard error `se`. Stretches of equal
/// figures leave, from rounding alone, a spread and a difference of about 1e-16 of the
/// figures' size, whose ratio is anything; below 1e-12 of `scale` they count as exact: no
/// spread and no difference is no change (p = 1), no spread and a difference is a certain one
/// (p = 0).
fn pooled_p_value(diff: f64, se: f64, scale: f64, df: f64) -> f64 {
    let noise = scale * 1e-12;
    if se <= noise {
        return if diff.abs() <= noise { 1.0 } else { 0.0 };
    }
    student_t_two_sided(diff / se, df)
}

/// The count, mean and sum of squared deviations of `xs` (not empty), in two passes: the sum
/// of squares less the square of the sum would cancel for figures far from 0 with little spread.
fn moments(xs: &[f64]) -> (f64, f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let ss = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    (n, mean, ss)
}

/// P(|T| ≥ |t|) for Student's t with `df` degrees of freedom: I_x(df/2, 1/2) with
/// x = df / (df + t²), the regularized incomplete beta function.
fn student_t_two_sided(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    let t2 = t * t;
    // 1 − x computed on its own, not as 1 − x, which loses everything for small t.
    regularized_beta(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2))
}

/// The t with P(|T| ≥ t) = `p` for Student's t with `df` degrees of freedom, by bisection (the
/// p-value falls as t grows): a prediction interval needs it once, so speed does not matter.
fn student_t_quantile(p: f64, df: f64) -> f64 {
    let mut hi = 1.0_f64;
    while student_t_two_sided(hi, df) > p && hi < 1e300 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..2000 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if student_t_two_sided(mid, df) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// I_x(a, b), the regularized incomplete beta function, with y = 1 − x given exactly
/// (Numerical Recipes, §6.4): the continued fraction converges fast for x < (a + 1)/(a + b + 2),
/// and I_x(a, b) = 1 − I_y(b, a) covers the rest.
fn regularized_beta(a: f64, b: f64, x: f64, y: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * y.ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, y) / b
    }
}

/// The continued fraction of the incomplete beta function by the modified Lentz method
/// (Numerical Recipes' `betacf`). It converges in about √max(a, b) terms at worst, so the
/// bound allows a series of millions of points.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..100_000 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        // The even step of the fraction, then the odd one.
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// ln Γ(x) for x ≥ 1/2 by Lanczos' approximation (g = 7, nine terms; about 1e-15 relative):
/// the t-test needs it at n/2 and 1/2 only.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The verdict of [`prediction_check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Fewer than two finite figures in the stable stretch, or a newest figure that is not
    /// finite: nothing to judge by, or nothing to judge.
    NotEnoughData,
    /// The newest figure is inside the prediction interval: what the stable stretch predicts.
    Within,
    /// Outside the interval, on the bad side of the figure's [`Sense`].
    Regression,
    /// Outside the interval, on the good side.
    Improvement,
}

/// A prediction interval: where the next figure of the stable stretch falls with the asked
/// confidence, if nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The stretch's mean.
    pub mean: f64,
    /// The interval's lower bound.
    pub lower: f64,
    /// The interval's upper bound.
    pub upper: f64,
    /// The finite figures of the stretch it was built from.
    pub points: usize,
}

/// What [`prediction_check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Inside, a regression, an improvement, or not enough data.
    pub verdict: Verdict,
    /// The prediction interval; `None` with fewer than two finite figures in the stretch.
    pub interval: Option<Interval>,
    /// The figure judged (serde_json writes a non-finite one as null).
    pub newest: f64,
}

impl Check {
    /// Whether the newest figure is outside the interval on the bad side.
    pub fn is_regression(&self) -> bool {
        self.verdict == Verdict::Regression
    }
}

/// Whether `newest` lies outside the Student's t prediction interval of the stable stretch
/// `stable` (the runs since the last change point), at `confidence` (0.99: one stable run in a
/// hundred falls outside), and on which side.
///
/// The interval is mean ± t · s · √(1 + 1/n), with s the sample standard deviation of the n
/// finite figures of `stable` and t Student's two-sided quantile with n − 1 degrees of freedom:
/// it holds both the spread of a run and the doubt in the mean, so it is wide for a short
/// stretch. A gate for one run, fast and blunt: it assumes the stretch is stable and normal,
/// and one outlier fails it; [`change_points`] is the judge once more runs are in. Non-finite
/// figures in `stable` are skipped. A constant stretch has an interval of width 0: any
/// other figure is outside.
///
/// # Panics
///
/// If `confidence` is not strictly between 0 and 1.
pub fn prediction_check(stable: &[f64], newest: f64, sense: Sense, confidence: f64) -> Check {
    assert!(confidence > 0.0 && confidence < 1.0, "confidence {confidence} is not strictly between 0 and 1");
    let finite: Vec<f64> = stable.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.len() < 2 {
        return Check { verdict: Verdict::NotEnoughData, interval: None, newest };
    }
    let (n, mean, ss) = moments(&finite);
    let s = (ss / (n - 1.0)).sqrt();
    let half = student_t_quantile(1.0 - confidence, n - 1.0) * s * (1.0 + 1.0 / n).sqrt();
    let interval = Interval { mean, lower: mean - half, upper: mean + half, points: finite.len() };
    let direction = if newest > interval.upper {
        Some(Direction::Up)
    } else if newest < interval.lower {
        Some(Direction::Down)
    } else {
        None
    };
    let verdict = match direction {
        _ if !newest.is_finite() => Verdict::NotEnoughData,
        None => Verdict::Within,
        Some(d) if d.is_regression(sense) => Verdict::Regression,
        Some(_) => Verdict::Improvement,
    };
    Check { verdict, interval: Some(interval), newest }
}

#[cfg(test)]
mod tests;
