use super::*;
use barrage_metrics::recorder::new_histogram;

/// A histogram of `values` (µs), each recorded `n` times.
fn hdr(values: &[(u64, u64)]) -> Histogram<u64> {
    let mut h = new_histogram();
    for &(v, n) in values {
        h.saturating_record_n(v, n);
    }
    h
}

/// Latencies spread like a service's: most near 2 ms, a tail to 400 ms.
fn service_like() -> Histogram<u64> {
    let mut h = new_histogram();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..50_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        // Exponential-ish tail above a 1.5 ms floor.
        h.saturating_record((1500.0 - 8000.0 * (1.0 - u).ln()).min(400_000.0) as u64);
    }
    h
}

/// Counts and totals equal, min/max, and every quantile within the stated bound.
fn check(h: &Histogram<u64>, scale: i32) -> ExponentialHistogramDataPoint {
    let p = to_exponential(h, scale);
    let buckets: u64 = p.positive.as_ref().map_or(0, |b| b.bucket_counts.iter().sum());
    assert_eq!(p.count, h.len(), "scale {scale}");
    assert_eq!(buckets + p.zero_count, h.len(), "scale {scale}");
    let mean = p.sum.unwrap() / p.count as f64;
    assert!((mean - h.mean() / 1e6).abs() <= 1e-9 * mean.max(1e-9), "{mean} vs {}", h.mean() / 1e6);
    assert!(p.scale <= scale && p.scale >= MIN_SCALE);
    assert!(p.positive.as_ref().map_or(0, |b| b.bucket_counts.len()) as i64 <= MAX_BUCKETS);
    assert_eq!(p.min, Some(h.min() as f64 / 1e6));
    assert_eq!(p.max, Some(h.max() as f64 / 1e6));
    let bound = relative_error_bound(p.scale);
    for k in 0..=1000 {
        let q = f64::from(k) / 1000.0;
        let want = h.value_at_quantile(q) as f64 / 1e6;
        let got = quantile(&p, q).unwrap();
        assert!((got - want).abs() <= bound * want + 1e-12, "scale {} q {q}: {got} vs {want} (bound {bound})", p.scale);
    }
    p
}

#[test]
fn counts_sums_and_quantiles_hold_at_every_scale() {
    let h = service_like();
    for scale in [-2, 0, 8, 20] {
        let p = check(&h, scale);
        // A 1.5–400 ms range fits 4096 buckets at scale 8 but not at 20.
        match scale {
            20 => assert!(p.scale < 20 && p.scale >= 9, "{}", p.scale),
            s => assert_eq!(p.scale, s),
        }
    }
}

#[test]
fn extreme_values_one_microsecond_and_one_hour() {
    let h = hdr(&[(1, 3), (3_600_000_000, 2)]);
    for scale in [-2, 0, 8, 20] {
        let p = check(&h, scale);
        assert_eq!(p.min, Some(1e-6));
        assert!(p.max.unwrap() >= 3600.0);
        assert_eq!(p.positive.unwrap().bucket_counts.iter().filter(|&&n| n > 0).count(), 2);
    }
}

#[test]
fn zeros_go_to_zero_count_and_an_empty_interval_is_an_empty_point() {
    let p = check(&hdr(&[(0, 4), (250, 6)]), 8);
    assert_eq!(p.zero_count, 4);
    assert_eq!(p.min, Some(0.0));
    let empty = to_exponential(&new_histogram(), 8);
    assert_eq!((empty.count, empty.sum, empty.min, empty.max, empty.zero_count), (0, None, None, None, 0));
    assert_eq!(quantile(&empty, 0.5), None);
}

#[test]
fn bucket_boundaries_are_exact() {
    // OTLP's buckets are (b^i, b^(i+1)]: 1.0 is the upper bound of bucket −1 at every scale,
    // 2.0 that of bucket 2^scale − 1.
    for scale in [-10, -2, 0, 1, 8, 20] {
        assert_eq!(bucket_index(1.0, scale), -1, "scale {scale}");
        if scale >= 0 {
            assert_eq!(bucket_index(2.0, scale), (1i64 << scale) - 1, "scale {scale}");
            assert_eq!(bucket_index(2.0 * (1.0 + 1e-12), scale), 1i64 << scale, "scale {scale}");
        }
    }
    assert_eq!(bucket_index(4.0, -1), 0);
    assert_eq!(bucket_index(4.5, -1), 1);
    assert!((relative_error_bound(8) - (1.0 / 2048.0 + (2f64.powf(1.0 / 256.0) - 1.0) / 2.0)).abs() < 1e-15);
}

#[test]
fn every_scale_keeps_counts_and_bounds() {
    let h = service_like();
    for scale in MIN_SCALE..=MAX_SCALE {
        let p = check(&h, scale);
        assert!(p.scale <= scale);
    }
}
