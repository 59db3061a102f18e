//! OpenMetrics exemplars on `/metrics`: each bucket of `barrage_request_latency_seconds`
//! names the trace of the latest sampled request that fell in it (`--trace-context`), so a
//! Grafana panel of the histogram links a slow bucket to the trace the server recorded.
//!
//! The buckets are filled from HdrHistograms, not observed one request at a time, and the
//! `prometheus-client` crate makes exemplars only as it observes: it offers no way to hand
//! its encoder an exemplar of our own. So the exemplars are written onto the encoded bucket
//! lines, in the OpenMetrics syntax (`… 12 # {trace_id="…",span_id="…"} 0.0093 1700000000.123`).

use barrage_metrics::trace::Exemplar;
use std::fmt::Write as _;

/// A bucket's exemplar as exposed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BucketExemplar {
    trace: u128,
    span: u64,
    /// Its latency, seconds.
    value_s: f64,
    /// When it ended, seconds since the Unix epoch.
    at_unix_s: f64,
}

impl BucketExemplar {
    /// `e` of a run whose first interval started at `run_start_unix_ms`.
    pub(crate) fn of(e: &Exemplar, run_start_unix_ms: u64) -> BucketExemplar {
        BucketExemplar {
            trace: e.trace,
            span: e.span,
            value_s: e.latency_us as f64 / 1e6,
            at_unix_s: (run_start_unix_ms + u64::from(e.ended_ms)) as f64 / 1e3,
        }
    }
}

/// Puts each of `exemplars` into `per_bucket`, at the bucket of `bounds_us` (upper bounds,
/// µs; `+Inf` after them) its latency falls in, replacing what the bucket held.
pub(crate) fn place(
    per_bucket: &mut [Option<BucketExemplar>],
    bounds_us: &[u64],
    exemplars: &[Exemplar],
    run_start_unix_ms: u64,
) {
    for e in exemplars {
        let bucket = bounds_us.partition_point(|&bound| bound < e.latency_us);
        per_bucket[bucket] = Some(BucketExemplar::of(e, run_start_unix_ms));
    }
}

/// Appends each bucket's exemplar to the line of `bucket_metric` (`…_bucket`) for that
/// bucket, in order: `per_bucket[i]` goes on the `i`th such line.
pub(crate) fn annotate(body: &mut String, bucket_metric: &str, per_bucket: &[Option<BucketExemplar>]) {
    if per_bucket.iter().all(Option::is_none) {
        return;
    }
    let mut out = String::with_capacity(body.len() + per_bucket.len() * 96);
    let mut bucket = 0;
    for line in body.split_inclusive('\n') {
        let is_bucket = line.strip_prefix(bucket_metric).is_some_and(|rest| rest.starts_with('{'));
        if !is_bucket {
            out.push_str(line);
            continue;
        }
        let text = line.trim_end_matches('\n');
        out.push_str(text);
        if let Some(Some(e)) = per_bucket.get(bucket) {
            let _ = write!(
                out,
                " # {{trace_id=\"{:032x}\",span_id=\"{:016x}\"}} {} {:.3}",
                e.trace, e.span, e.value_s, e.at_unix_s
            );
        }
        out.push('\n');
        bucket += 1;
    }
    *body = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bucket_line_gets_its_own_exemplar_and_nothing_else_changes() {
        let mut body = "# TYPE barrage_request_latency_seconds histogram\n\
            barrage_request_latency_seconds_sum 0.5\n\
            barrage_request_latency_seconds_count 3\n\
            barrage_request_latency_seconds_bucket{le=\"0.001\"} 1\n\
            barrage_request_latency_seconds_bucket{le=\"0.01\"} 2\n\
            barrage_request_latency_seconds_bucket{le=\"+Inf\"} 3\n\
            barrage_service_time_seconds_bucket{le=\"0.001\"} 1\n\
            # EOF\n"
            .to_string();
        let e = Exemplar { trace: 0xab, span: 0xcd, latency_us: 9300, ended_ms: 1500 };
        annotate(
            &mut body,
            "barrage_request_latency_seconds_bucket",
            &[None, Some(BucketExemplar::of(&e, 1_700_000_000_000)), None],
        );
        let lines: Vec<&str> = body.lines().collect();
        assert_eq!(lines[3], "barrage_request_latency_seconds_bucket{le=\"0.001\"} 1");
        assert_eq!(
            lines[4],
            "barrage_request_latency_seconds_bucket{le=\"0.01\"} 2 # {trace_id=\"000000000000000000000000000000ab\",span_id=\"00000000000000cd\"} 0.0093 1700000001.500"
        );
        assert_eq!(lines[5], "barrage_request_latency_seconds_bucket{le=\"+Inf\"} 3");
        assert_eq!(lines[6], "barrage_service_time_seconds_bucket{le=\"0.001\"} 1", "only the asked metric");
        assert_eq!(lines[7], "# EOF");
    }
}
