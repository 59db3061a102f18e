//! The time series as CSV, one row per interval, for spreadsheets and plotting tools.

use barrage_metrics::RunSummary;
use std::fmt::Write;

/// The CSV header line (without its newline).
const HEADER: &str =
    "second,length_s,sent,ok,errors,throughput_per_sec,p50_ms,p90_ms,p99_ms,bytes_in,bytes_out,hit_ratio,byte_hit_ratio,fairness,backend_requests";

/// One row per interval of [`RunSummary::intervals`], after a header line: [`HEADER`], then,
/// when the run sampled them, `host_cpu_percent` and a `NAME_cpu_percent,NAME_rss_kib` pair
/// per watched process (barrage last).
///
/// `second` counts from the start of the (earliest) run; latencies are the corrected ones
/// (from the intended start), in milliseconds with 3 decimals (µs precision); `errors` counts
/// every failed request (errors and 4xx/5xx). No field ever needs quoting.
pub fn csv(s: &RunSummary) -> String {
    let mut out = String::with_capacity(64 * (s.intervals.len() + 1));
    out.push_str(HEADER);
    let watched: Vec<&str> = s.processes.iter().map(|p| p.name.as_str()).collect();
    if s.host.is_some() {
        out.push_str(",host_cpu_percent");
        for name in &watched {
            let name = field(name);
            write!(out, ",{name}_cpu_percent,{name}_rss_kib").expect("writing to a String cannot fail");
        }
    }
    out.push('\n');
    let ms = |us: u64| us as f64 / 1e3;
    for i in &s.intervals {
        writeln!(
            out,
            "{},{:.3},{},{},{},{:.3},{:.3},{:.3},{:.3},{},{},{},{},{},{}",
            i.second,
            i.length_s,
            i.sent,
            i.ok,
            i.errors,
            i.throughput_per_sec,
            ms(i.p50_us),
            ms(i.p90_us),
            ms(i.p99_us),
            i.bytes_in,
            i.bytes_out,
            // Empty when no response of the interval carried a recognised cache header.
            i.hit_ratio.map_or(String::new(), |r| format!("{r:.4}")),
            i.byte_hit_ratio.map_or(String::new(), |r| format!("{r:.4}")),
            i.fairness.map_or(String::new(), |f| format!("{f:.4}")),
            // name=count pairs; names are quoted away from the CSV's own separators.
            i.backends
                .iter()
                .map(|(k, v)| format!("{}={v}", k.replace([',', ';', '='], "_")))
                .collect::<Vec<_>>()
                .join(";")
        )
        .expect("writing to a String cannot fail");
        if s.host.is_some() {
            out.pop();
            out.push_str(&watch_fields(i, &watched));
            out.push('\n');
        }
    }
    out
}

/// The watch columns of one row; empty where a process had no sample that second.
fn watch_fields(i: &barrage_metrics::summary::IntervalRow, watched: &[&str]) -> String {
    let mut out = String::new();
    let host = i.host_cpu_percent.map_or(String::new(), |c| format!("{c:.1}"));
    write!(out, ",{host}").expect("writing to a String cannot fail");
    for name in watched {
        let cpu = i.cpu_percent.get(*name).map_or(String::new(), |c| format!("{c:.1}"));
        let rss = i.rss_kib.get(*name).map_or(String::new(), u64::to_string);
        write!(out, ",{cpu},{rss}").expect("writing to a String cannot fail");
    }
    out
}

/// A process name as a column name: only letters, digits, `-` and `_`.
fn field(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::summary::IntervalRow;

    #[test]
    fn header_and_rows() {
        let mut s = RunSummary::default();
        assert_eq!(csv(&s), format!("{HEADER}\n"));
        s.intervals.push(IntervalRow {
            second: 3,
            length_s: 0.5,
            sent: 10,
            ok: 9,
            errors: 1,
            throughput_per_sec: 18.0,
            p50_us: 1_234,
            p90_us: 20_001,
            p99_us: 7,
            bytes_in: 1000,
            bytes_out: 100,
            hit_ratio: None,
            byte_hit_ratio: None,
            ..Default::default()
        });
        s.intervals.push(IntervalRow {
            second: 4,
            hit_ratio: Some(0.75),
            byte_hit_ratio: Some(0.5),
            ..Default::default()
        });
        let text = csv(&s);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows[1], "3,0.500,10,9,1,18.000,1.234,20.001,0.007,1000,100,,,,");
        assert!(rows[2].ends_with(",0.7500,0.5000,,"), "{}", rows[2]);
        // Every row has as many fields as the header.
        assert!(rows.iter().all(|r| r.split(',').count() == HEADER.split(',').count()));
    }
}
