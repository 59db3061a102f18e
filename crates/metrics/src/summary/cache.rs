//! A run's cache figures: what its responses' cache statuses say (hits, misses, their
//! ratios by count and by bytes, and each side's latency).

use super::build::{phase_stats, ratio};
use super::{CacheSide, CacheSummary, LatencyStats};
use crate::recorder::{PhaseSet, Recorder};
use crate::sample::{CacheStatus, Phase};

/// (hit ratio, byte hit ratio) over the responses with a known cache status.
pub(super) fn hit_ratios(r: &Recorder) -> Option<(f64, f64)> {
    let c = &r.counts;
    let known = |v: &[u64]| -> (u64, u64) {
        let mut classified = 0;
        let mut cached = 0;
        for status in CacheStatus::ALL.into_iter().filter(|s| *s != CacheStatus::Unknown) {
            classified += v[status as usize];
            if status.from_cache() {
                cached += v[status as usize];
            }
        }
        (cached, classified)
    };
    let (hits, classified) = known(&c.cache);
    let (hit_bytes, bytes) = known(&c.cache_bytes);
    (classified > 0).then(|| (ratio(hits as f64, classified as f64), ratio(hit_bytes as f64, bytes as f64)))
}

/// The cache's figures: hit ratios over the responses classified, each status's count,
/// and the latency of hits and of misses apart.
pub(super) fn cache_summary(r: &Recorder) -> Option<CacheSummary> {
    let (hit_ratio, byte_hit_ratio) = hit_ratios(r)?;
    let side = |set: &Option<Box<PhaseSet>>| {
        set.as_deref().map(|p| CacheSide {
            latency: LatencyStats::of(&p.corrected),
            phases: Phase::ALL
                .iter()
                .zip(&p.phases)
                .map(|(ph, h)| (ph.name().to_string(), phase_stats(h, p.corrected.len())))
                .collect(),
        })
    };
    Some(CacheSummary {
        classified: r.counts.cache.iter().sum::<u64>() - r.counts.cache[CacheStatus::Unknown as usize],
        statuses: CacheStatus::ALL.iter().map(|s| (s.name().to_string(), r.counts.cache[*s as usize])).collect(),
        hit_ratio,
        byte_hit_ratio,
        hit: side(&r.hit),
        miss: side(&r.miss),
    })
}
