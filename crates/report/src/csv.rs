//! The time series as CSV, one row per interval, for spreadsheets and plotting tools.

use crate::export::{to_csv, Cell, Sheet};
use barrage_metrics::summary::{FlowSummary, GroupSummary, LatencyStats};
use barrage_metrics::RunSummary;

/// The CSV header line (without its newline).
const HEADER: &str =
    "second,length_s,due,sent,dropped,ok,errors,throughput_per_sec,p50_ms,p90_ms,p99_ms,bytes_in,bytes_out,hit_ratio,byte_hit_ratio,fairness,backend_requests";

/// One row per interval of [`RunSummary::intervals`], after a header line: [`HEADER`], then,
/// when the run sampled them, `host_cpu_percent` and a `NAME_cpu_percent,NAME_rss_kib` pair
/// per watched process (barrage last).
///
/// `second` counts from the start of the (earliest) run; latencies are the corrected ones
/// (from the intended start), in milliseconds; `due` counts the run's intended arrivals in
/// that second of its schedule, every shard's, sent or not (empty when the results files do
/// not list them: a closed loop); `dropped` counts the requests due and never sent (in the
/// second the attack gave up on them, its end); `errors` counts every failed
/// request (errors, 4xx/5xx, rejected by a flow's check or capture); ratios are fractions; an empty field is a figure the interval has not
/// (no classified cache answer, no backend).
pub fn csv(s: &RunSummary) -> String {
    to_csv(&intervals_sheet(s))
}

/// The time series as a table: the rows of [`csv`].
pub fn intervals_sheet(s: &RunSummary) -> Sheet {
    let watched: Vec<&str> = s.processes.iter().map(|p| p.name.as_str()).collect();
    let mut header: Vec<String> = HEADER.split(',').map(String::from).collect();
    if s.host.is_some() {
        header.push("host_cpu_percent".into());
        for name in &watched {
            let name = field(name);
            header.extend([format!("{name}_cpu_percent"), format!("{name}_rss_kib")]);
        }
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut sheet = Sheet::new("intervals", &header);
    let ms = |us: u64| Cell::from(us as f64 / 1e3);
    // Three decimals: µs precision, and no float noise such as 0.30000000000000004.
    let round = |x: f64, places: i32| Cell::from((x * 10f64.powi(places)).round() / 10f64.powi(places));
    for i in &s.intervals {
        let mut row = vec![
            Cell::from(i.second),
            round(i.length_s, 3),
            Cell::from(i.due.map(|d| d as f64)),
            Cell::from(i.sent),
            Cell::from(i.dropped),
            Cell::from(i.ok),
            Cell::from(i.errors),
            round(i.throughput_per_sec, 3),
            ms(i.p50_us),
            ms(i.p90_us),
            ms(i.p99_us),
            Cell::from(i.bytes_in),
            Cell::from(i.bytes_out),
            Cell::from(i.hit_ratio.map(|r| (r * 1e4).round() / 1e4)),
            Cell::from(i.byte_hit_ratio.map(|r| (r * 1e4).round() / 1e4)),
            Cell::from(i.fairness.map(|r| (r * 1e4).round() / 1e4)),
            // name=count pairs; names are kept away from the pair separators.
            Cell::from(
                i.backends
                    .iter()
                    .map(|(k, v)| format!("{}={v}", k.replace([',', ';', '='], "_")))
                    .collect::<Vec<_>>()
                    .join(";"),
            ),
        ];
        if s.host.is_some() {
            row.push(Cell::from(i.host_cpu_percent.map(|c| (c * 10.0).round() / 10.0)));
            for name in &watched {
                row.push(Cell::from(i.cpu_percent.get(*name).map(|c| (c * 10.0).round() / 10.0)));
                row.push(i.rss_kib.get(*name).map_or(Cell::Empty, |r| Cell::from(*r)));
            }
        }
        sheet.push(row);
    }
    sheet
}

/// The run's headline figures as a two-column table (metric, value), for spreadsheets.
pub fn summary_sheet(s: &RunSummary) -> Sheet {
    let mut sheet = Sheet::new("summary", &["metric", "value"]);
    let mut put = |name: &str, value: Cell| sheet.push(vec![Cell::from(name), value]);
    // Not every URL: a million of them in a cell, over a spreadsheet's 32,767 characters,
    // failed --xlsx.
    put("urls", Cell::from(crate::sections::urls_line(&s.urls)));
    put("mode", Cell::from(s.mode.name()));
    put("started_unix_ms", Cell::from(s.started_unix_ms));
    put("duration_s", Cell::from(s.duration.total_s));
    put("requests", Cell::from(s.requests.total));
    put("ok", Cell::from(s.requests.ok));
    put("rejected", Cell::from(s.requests.rejected));
    put("http_errors", Cell::from(s.requests.http_errors));
    put("errors", Cell::from(s.requests.errors));
    put("dropped", Cell::from(s.requests.dropped));
    put("stale_connection_retries", Cell::from(s.requests.stale_retries));
    put("connections", Cell::from(s.requests.connections));
    for (protocol, n) in &s.requests.protocols {
        // HTTP/1.1, HTTP/2 and HTTP/3 as connections_http1_1, connections_http2 and
        // connections_http3.
        put(&format!("connections_{}", protocol.to_lowercase().replace('/', "").replace('.', "_")), Cell::from(*n));
    }
    put("stream_retries", Cell::from(s.requests.stream_retries));
    // The JSON's `streams` object, its keys as they are there.
    if let Some(h) = &s.streams {
        put("streams_max", Cell::from(h.streams_max));
        put("stream_cap", Cell::from(h.stream_cap.map(|c| c as f64)));
        put("send_stalls", Cell::from(h.send_stalls));
        put("recv_stalls", Cell::from(h.recv_stalls));
        put("http1_fallbacks", Cell::from(h.http1_fallbacks));
    }
    put("rate_per_sec", Cell::from(s.rate_per_sec));
    put("throughput_per_sec", Cell::from(s.throughput_per_sec));
    put("success_ratio", Cell::from(s.success_ratio));
    put("verdict", Cell::from(crate::study::run_verdict(s)));
    for (which, l) in [("corrected", &s.latency.corrected), ("service", &s.latency.service)] {
        let figures =
            [("mean", l.mean_us), ("p50", l.p50_us as f64), ("p90", l.p90_us as f64), ("p99", l.p99_us as f64)];
        for (name, us) in figures.into_iter().chain([("p999", l.p999_us as f64), ("max", l.max_us as f64)]) {
            put(&format!("{which}_{name}_ms"), Cell::from(us / 1e3));
        }
    }
    if let Some(f) = &s.flows_total {
        put("flows", Cell::from(f.flows));
        put("flows_failed", Cell::from(f.failed));
        put("flow_success_ratio", Cell::from(f.success_ratio));
        put("flow_p50_ms", Cell::from(f.latency.p50_us as f64 / 1e3));
        put("flow_p99_ms", Cell::from(f.latency.p99_us as f64 / 1e3));
    }
    put("bytes_in", Cell::from(s.bytes.in_total));
    put("bytes_out", Cell::from(s.bytes.out_total));
    put("hit_ratio", Cell::from(s.cache.as_ref().map(|c| c.hit_ratio)));
    put("byte_hit_ratio", Cell::from(s.cache.as_ref().map(|c| c.byte_hit_ratio)));
    if let Some(h) = crate::workload::Hits::of(std::slice::from_ref(s)) {
        put("hits_asked", Cell::from(h.asked));
        put("hits_got", Cell::from(h.got));
        put("false_hits", Cell::from(h.false_hits));
        put("false_misses", Cell::from(h.false_misses));
    }
    put("generator_cpu_percent", Cell::from(s.generator.cpu_percent));
    if s.generator.coalesced_us > 0 {
        // The text report's "wake-ups coalesced": the most an answer was read late.
        put("coalesced_us", Cell::from(s.generator.coalesced_us));
    }
    for (code, n) in &s.status_codes {
        put(&format!("status_{code}"), Cell::from(*n));
    }
    for e in &s.errors {
        put(&format!("error_{}", e.kind), Cell::from(e.count));
    }
    for r in &s.replies {
        put(&format!("reply_{}", r.name), Cell::from(r.requests));
    }
    // What the other reports say in words, so that no table stands without it (a server
    // that refused HTTP/2, a generator that was the limit, ...).
    for w in &s.warnings {
        put("warning", Cell::from(w.text.as_str()));
    }
    sheet
}

/// Latency columns of the by-name, flows and replies tables, corrected, in ms.
const LATENCY_COLUMNS: [&str; 6] = ["mean_ms", "min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"];

fn latency_cells(l: &LatencyStats) -> impl Iterator<Item = Cell> {
    let us = [l.mean_us, l.min_us as f64, l.p50_us as f64, l.p90_us as f64, l.p99_us as f64, l.max_us as f64];
    us.into_iter().map(|v| Cell::from(v / 1e3))
}

/// The requests by name (a scenario's steps), one row each as the report's "By name"
/// table: counts, success, successes per second of the run, how many failed a check or a
/// capture and were skipped, and corrected latency.
pub fn names_sheet(s: &RunSummary) -> Sheet {
    let mut header = vec![
        "name",
        "requests",
        "share",
        "failed",
        "dropped",
        "success_ratio",
        "throughput_per_sec",
        "check_failed",
        "capture_failed",
        "skipped",
    ];
    header.extend(LATENCY_COLUMNS);
    let mut sheet = Sheet::new("by_name", &header);
    for g in &s.by_name {
        let GroupSummary { requests, share, failed, dropped, success_ratio, throughput_per_sec, .. } = *g;
        let mut row = vec![
            Cell::from(g.name.as_str()),
            Cell::from(requests),
            Cell::from(share),
            Cell::from(failed),
            Cell::from(dropped),
            Cell::from(success_ratio),
            Cell::from(throughput_per_sec),
            Cell::from(g.check_failed),
            Cell::from(g.capture_failed),
            Cell::from(g.skipped),
        ];
        row.extend(latency_cells(&g.latency));
        sheet.push(row);
    }
    sheet
}

/// The flows of a scenario, one row per group as the report's "Flows" table (`all`, every
/// group together, last when there are two or more); steps joined by ` > `.
pub fn flows_sheet(s: &RunSummary) -> Sheet {
    let mut header = vec![
        "group",
        "flow",
        "steps",
        "load",
        "start_s",
        "duration_s",
        "flows",
        "ok",
        "failed",
        "success_ratio",
        "check_failed",
        "capture_failed",
        "request_failed",
        "skipped_steps",
        "dropped",
        "unfinished",
        "flows_per_sec",
        "asked_per_sec",
    ];
    header.extend(LATENCY_COLUMNS);
    let mut sheet = Sheet::new("flows", &header);
    let total = s.flows_total.as_ref().filter(|_| s.flows.len() > 1);
    for f in s.flows.iter().chain(total) {
        let FlowSummary { start_s, duration_s, flows, ok, failed, success_ratio, .. } = *f;
        let mut row = vec![
            Cell::from(f.name.as_str()),
            Cell::from(f.flow.as_str()),
            Cell::from(f.steps.join(" > ")),
            Cell::from(f.load.as_str()),
            Cell::from(start_s),
            Cell::from(duration_s),
            Cell::from(flows),
            Cell::from(ok),
            Cell::from(failed),
            Cell::from(success_ratio),
            Cell::from(f.check_failed),
            Cell::from(f.capture_failed),
            Cell::from(f.request_failed),
            Cell::from(f.skipped_steps),
            Cell::from(f.dropped),
            Cell::from(f.unfinished),
            Cell::from(f.flows_per_sec),
            Cell::from(f.asked_per_sec),
        ];
        row.extend(latency_cells(&f.latency));
        sheet.push(row);
    }
    sheet
}

/// A key-value store's server error replies, one row per class as the report's "Server
/// replies" table: how many, their share of all finished requests, their corrected latency
/// and the first reply of the class.
pub fn replies_sheet(s: &RunSummary) -> Sheet {
    let mut header = vec!["class", "count", "share"];
    header.extend(LATENCY_COLUMNS);
    header.push("example");
    let mut sheet = Sheet::new("replies", &header);
    for r in &s.replies {
        let mut row = vec![Cell::from(r.name.as_str()), Cell::from(r.requests), Cell::from(r.share)];
        row.extend(latency_cells(&r.latency));
        row.push(r.example.as_deref().map_or(Cell::Empty, Cell::from));
        sheet.push(row);
    }
    sheet
}

/// The steps of a stepped run, one row each as the report's "Steps" table: requests sent,
/// dropped (due and never sent), carried in (in flight from the steps before when it
/// began) and finished, rates, success over the requests finished and dropped, corrected
/// latency, and why it finished more than it sent, when it did.
pub fn steps_sheet(s: &RunSummary) -> Sheet {
    let mut header = vec![
        "step",
        "start_s",
        "duration_s",
        "sent",
        "dropped",
        "carried_in",
        "requests",
        "ok",
        "failed",
        "rate_per_sec",
        "throughput_per_sec",
        "success_ratio",
    ];
    header.extend(["p50_ms", "p99_ms", "note"]);
    let mut sheet = Sheet::new("steps", &header);
    for st in &s.steps {
        let l = &st.latency.corrected;
        sheet.push(vec![
            Cell::from(st.label.as_str()),
            Cell::from(st.start_s),
            Cell::from(st.duration_s),
            Cell::from(st.sent),
            Cell::from(st.dropped),
            Cell::from(st.carried_in),
            Cell::from(st.requests),
            Cell::from(st.ok),
            Cell::from(st.failed),
            Cell::from(st.rate_per_sec),
            Cell::from(st.throughput_per_sec),
            Cell::from(st.success_ratio),
            Cell::from(l.p50_us as f64 / 1e3),
            Cell::from(l.p99_us as f64 / 1e3),
            crate::sections::step_carry_note(st).map_or(Cell::Empty, Cell::from),
        ]);
    }
    sheet
}

/// The shards of a split run, one row each as the report's "Shards" table.
pub fn shards_sheet(s: &RunSummary) -> Sheet {
    let header = [
        "shard",
        "host",
        "file",
        "sent",
        "due",
        "late",
        "dropped",
        "ok",
        "throughput_per_s",
        "success",
        "p50_ms",
        "p99_ms",
        "cpu_percent",
        "lag_p99_ms",
        "start_delay_ms",
        "first_send_ms",
        "clock_offset_us",
        "ended_s",
        "behind",
        "running",
    ];
    let mut sheet = Sheet::new("shards", &header);
    for r in &s.shards {
        sheet.push(vec![
            Cell::from(r.shard.as_str()),
            Cell::from(r.host.as_str()),
            Cell::from(r.file.as_str()),
            Cell::from(r.sent),
            Cell::from(r.due),
            Cell::from(r.late),
            Cell::from(r.dropped),
            Cell::from(r.ok),
            r.throughput_per_sec.map_or(Cell::Empty, Cell::from),
            Cell::from(r.success_ratio),
            Cell::from(r.p50_us as f64 / 1e3),
            Cell::from(r.p99_us as f64 / 1e3),
            Cell::from(r.cpu_percent),
            Cell::from(r.lag_p99_us as f64 / 1e3),
            r.start_delay_ms.map_or(Cell::Empty, Cell::from),
            r.first_send_ms.map_or(Cell::Empty, Cell::from),
            r.clock_offset_us.map_or(Cell::Empty, |o| Cell::from(o as f64)),
            Cell::from(r.ended_s),
            r.behind.as_deref().map_or(Cell::Empty, Cell::from),
            Cell::from(if r.running { "yes" } else { "no" }),
        ]);
    }
    sheet
}

/// A process name as a column name: only letters, digits, `-` and `_`, one `_` for a run of
/// anything else and none at the ends (`nginx[4242]` is `nginx_4242`).
fn field(name: &str) -> String {
    let mapped: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    mapped.split('_').filter(|part| !part.is_empty()).collect::<Vec<_>>().join("_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::summary::IntervalRow;

    /// A spreadsheet's cell holds at most 32,767 characters: the `urls` of a long list are
    /// its first and a count, as the text report shows them (all of them failed --xlsx).
    #[test]
    fn the_summary_sheet_lists_the_first_urls_and_counts_them_all() {
        let s = RunSummary { urls: (0..10_000).map(|i| format!("http://h/{i}")).collect(), ..Default::default() };
        let sheet = summary_sheet(&s);
        let urls = sheet.rows.iter().find(|r| r[0] == Cell::from("urls")).unwrap()[1].clone();
        let want = "http://h/0 http://h/1 http://h/2 http://h/3 http://h/4 … and 9,995 more (10,000 targets)";
        assert_eq!(urls, Cell::from(want));
    }

    #[test]
    fn the_summary_sheet_has_the_coalesced_sleep_only_when_a_thread_slept() {
        let row = |s: &RunSummary| summary_sheet(s).rows.into_iter().find(|r| r[0] == Cell::from("coalesced_us"));
        let mut s = RunSummary::default();
        assert!(row(&s).is_none());
        s.generator.coalesced_us = 1_000;
        assert_eq!(row(&s).unwrap()[1], Cell::from(1_000u64));
    }

    #[test]
    fn header_and_rows() {
        let mut s = RunSummary::default();
        assert_eq!(csv(&s), format!("{HEADER}\n"));
        s.intervals.push(IntervalRow {
            second: 3,
            length_s: 0.5,
            due: Some(12),
            sent: 10,
            dropped: 2,
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
        assert_eq!(rows[1], "3,0.5,12,10,2,9,1,18,1.234,20.001,0.007,1000,100,,,,");
        assert!(rows[2].ends_with(",0.75,0.5,,"), "{}", rows[2]);
        // A schedule not listed (a closed loop) leaves `due` empty.
        assert!(rows[2].starts_with("4,0,,0,"), "{}", rows[2]);
        // Every row has as many fields as the header.
        assert!(rows.iter().all(|r| r.split(',').count() == HEADER.split(',').count()));
    }
}
