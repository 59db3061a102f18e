//! barrage's HDR histograms (µs) as OTLP exponential histograms (seconds), without
//! re-recording a sample: each recorded HDR bucket's count goes whole into the exponential
//! bucket that holds the HDR bucket's representative value.
//!
//! # Precision
//! The representative value of an HDR bucket is its *median equivalent value*, the one
//! HdrHistogram's own mean uses, so the exported `sum` / `count` is the HDR's mean. An
//! exponential bucket at scale `s` covers `(b^i, b^(i+1)]` with `b = 2^(2^-s)`: its relative
//! width is `b − 1`, so a value read back at the bucket's midpoint is within half of that of
//! the representative value. The representative value is itself within barrage's HDR
//! precision (3 significant digits: 1/2048 relative, half an HDR bucket) of every sample in
//! its bucket. A quantile of the export is therefore within
//! `1/2048 + (2^(2^-s) − 1)/2` (relative) of the same quantile of barrage's report
//! ([`relative_error_bound`]): scale 8 → 0.14% + 0.05%; scale 0 → 50%; scale 20 → 0.05%.
//!
//! Buckets are dense between the lowest and the highest used, so a wide range at a fine
//! scale would be millions of counts (1 µs to 1 h at scale 20: 33 million): like the
//! OpenTelemetry SDKs, the scale is lowered until at most [`MAX_BUCKETS`] buckets hold the
//! data, and the point says the scale it used.

use hdrhistogram::Histogram;
use opentelemetry_proto::tonic::metrics::v1::exponential_histogram_data_point::Buckets;
use opentelemetry_proto::tonic::metrics::v1::ExponentialHistogramDataPoint;

/// The most buckets one point holds; beyond, the scale is lowered (SDKs keep 160; backends
/// take more, and at scale 8 these 4096 span a 65,536-fold range, 100 µs to 6.5 s).
pub const MAX_BUCKETS: i64 = 4096;
/// The lowest scale OTLP allows.
pub const MIN_SCALE: i32 = -10;
/// The highest scale OTLP allows.
pub const MAX_SCALE: i32 = 20;

/// How far a quantile read from an exported point (at its bucket's midpoint) can be from
/// the same quantile of the HDR histogram, relative: HDR's half bucket plus the
/// exponential bucket's half width at `scale`.
pub fn relative_error_bound(scale: i32) -> f64 {
    1.0 / 2048.0 + (bucket_base(scale) - 1.0) / 2.0
}

/// `b = 2^(2^-scale)`: the ratio of a bucket's upper bound to its lower one.
pub fn bucket_base(scale: i32) -> f64 {
    (2f64.powi(-scale)).exp2()
}

/// The lower bound of bucket `index` at `scale` (its upper is that of `index + 1`).
pub fn lower_bound(index: i64, scale: i32) -> f64 {
    (index as f64 * 2f64.powi(-scale)).exp2()
}

/// The index of the bucket at `scale` holding `v` > 0: `b^i < v ≤ b^(i+1)`.
pub fn bucket_index(v: f64, scale: i32) -> i64 {
    let mut i = (v.log2() * 2f64.powi(scale)).ceil() as i64 - 1;
    // The logarithm can be off by an ulp at a boundary: settle on the exact side.
    while lower_bound(i + 1, scale) < v {
        i += 1;
    }
    while i > i64::MIN && lower_bound(i, scale) >= v {
        i -= 1;
    }
    i
}

/// One HDR histogram of microseconds as an exponential histogram point of seconds at
/// `scale` or coarser (see [`MAX_BUCKETS`]), times left for the caller to set. An empty
/// histogram gives a point with count 0 and no min or max.
pub fn to_exponential(h: &Histogram<u64>, scale: i32) -> ExponentialHistogramDataPoint {
    let mut point = ExponentialHistogramDataPoint { scale, ..Default::default() };
    if h.is_empty() {
        return point;
    }
    // (seconds, count) of each recorded HDR bucket, in increasing order.
    let values: Vec<(f64, u64)> = h
        .iter_recorded()
        .map(|v| (h.median_equivalent(v.value_iterated_to()) as f64 / 1e6, v.count_at_value()))
        .collect();
    let positive: Vec<&(f64, u64)> = values.iter().filter(|(s, _)| *s > 0.0).collect();
    let scale = match (positive.first(), positive.last()) {
        (Some((lo, _)), Some((hi, _))) => fitting_scale(*lo, *hi, scale),
        _ => scale,
    };
    let mut buckets = Buckets::default();
    for &(seconds, count) in &values {
        point.count += count;
        point.sum = Some(point.sum.unwrap_or(0.0) + seconds * count as f64);
        if seconds == 0.0 {
            point.zero_count += count;
            continue;
        }
        let i = bucket_index(seconds, scale);
        if buckets.bucket_counts.is_empty() {
            buckets.offset = i as i32;
        }
        let slot = (i - i64::from(buckets.offset)) as usize;
        if buckets.bucket_counts.len() <= slot {
            buckets.bucket_counts.resize(slot + 1, 0);
        }
        buckets.bucket_counts[slot] += count;
    }
    point.scale = scale;
    point.positive = Some(buckets);
    // HDR's min is its lowest bucket's lowest value and its max its highest's highest:
    // every representative value lies between them, as OTLP asks of min and max.
    point.min = Some(h.min() as f64 / 1e6);
    point.max = Some(h.max() as f64 / 1e6);
    point
}

/// The finest scale ≤ `scale` at which `lo..=hi` spans at most [`MAX_BUCKETS`] buckets.
fn fitting_scale(lo: f64, hi: f64, scale: i32) -> i32 {
    let mut s = scale.clamp(MIN_SCALE, MAX_SCALE);
    while s > MIN_SCALE && bucket_index(hi, s) - bucket_index(lo, s) >= MAX_BUCKETS {
        s -= 1;
    }
    s
}

/// The value at quantile `q` of a point, read at its bucket's midpoint (zeros as 0): what
/// a backend would show, for the tests' comparison with HDR. Counts ranks as HDR does.
pub fn quantile(p: &ExponentialHistogramDataPoint, q: f64) -> Option<f64> {
    if p.count == 0 {
        return None;
    }
    let rank = ((q * p.count as f64).ceil() as u64).clamp(1, p.count);
    let mut seen = p.zero_count;
    if seen >= rank {
        return Some(0.0);
    }
    let b = p.positive.as_ref()?;
    for (k, &n) in b.bucket_counts.iter().enumerate() {
        seen += n;
        if seen >= rank {
            let i = i64::from(b.offset) + k as i64;
            return Some((lower_bound(i, p.scale) + lower_bound(i + 1, p.scale)) / 2.0);
        }
    }
    None
}

#[cfg(test)]
mod tests;
