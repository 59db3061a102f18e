//! The parts of a run's report that the text and the HTML report both show, built once here
//! so that both say the same thing in the same words: the targets of the header, the phases,
//! the steps, the requests by name and by method and a key-value store's server error
//! replies (as [`Section`]s: a [`Table`] of
//! formatted cells, rendered by `text.rs` as aligned columns and by `html.rs` as an HTML
//! table), and a rate that is not one.

use crate::text::{percent, rate, secs, us, Align, Table};
use barrage_metrics::summary::{FlowSummary, GroupSummary, RunSummary};
use barrage_metrics::units::fmt_us;
use barrage_metrics::{Mode, Phase, Protocol};

/// URLs a report's header lists; the others are counted. A targets file of thousands of
/// entries would otherwise push everything else pages down.
pub(crate) const URLS_SHOWN: usize = 5;

/// The URLs a header lists, and the line counting the others ("… and 1,995 more (2,000
/// targets)") when there are more than [`URLS_SHOWN`].
pub(crate) fn urls(urls: &[String]) -> (&[String], Option<String>) {
    if urls.len() <= URLS_SHOWN {
        return (urls, None);
    }
    let more = format!(
        "… and {} more ({} targets)",
        thousands((urls.len() - URLS_SHOWN) as u64),
        thousands(urls.len() as u64)
    );
    (&urls[..URLS_SHOWN], Some(more))
}

/// The URLs of a header on one line (a spreadsheet's cell, a JUnit suite's name): the
/// first [`URLS_SHOWN`], and the line counting the others.
pub fn urls_line(all: &[String]) -> String {
    let (shown, more) = urls(all);
    shown.iter().map(String::as_str).chain(more.as_deref()).collect::<Vec<_>>().join(" ")
}

/// A rate as `show` writes it, or, when there is none (fewer than
/// [`MIN_RATE_REQUESTS`] in its window), the count it would have been taken over:
/// `n/a (1 request)`.
///
/// [`MIN_RATE_REQUESTS`]: barrage_metrics::summary::MIN_RATE_REQUESTS
pub(crate) fn rate_or_count(rate: Option<f64>, requests: u64, show: impl Fn(f64) -> String) -> String {
    match rate {
        Some(r) => show(r),
        None => format!("n/a ({})", requests_count(requests)),
    }
}

/// `1 request`, `2,000 requests`.
fn requests_count(n: u64) -> String {
    if n == 1 {
        "1 request".into()
    } else {
        format!("{} requests", thousands(n))
    }
}

/// `1234567` as `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let first = match digits.len() % 3 {
        0 => 3.min(digits.len()),
        r => r,
    };
    let mut out = digits[..first].to_string();
    for group in digits.as_bytes()[first..].chunks(3) {
        out.push(',');
        out.push_str(std::str::from_utf8(group).expect("digits are ASCII"));
    }
    out
}

/// A titled table and the lines under it. The table's first row holds the column heads,
/// the first of which names the rows ("phase"); the others hold plain labels.
pub(crate) struct Section {
    /// "Phases", "Steps", "By name", "By method", "Flows", "Server replies".
    pub title: &'static str,
    /// Heads, then rows.
    pub table: Table,
    /// Lines under the table: what the columns mean.
    pub notes: Vec<String>,
}

/// Every phase in the order a request goes through them (then any name this build does not
/// know): count, mean, p50 and p99 over the requests where it happened, and its total time
/// per finished request; for a phase that never happened, why not.
pub(crate) fn phases(s: &RunSummary) -> Option<Section> {
    if s.phases.is_empty() {
        return None;
    }
    let known: Vec<&str> = Phase::ALL.iter().map(|p| p.name()).collect();
    let mut names: Vec<&str> = known.iter().copied().filter(|n| s.phases.contains_key(*n)).collect();
    names.extend(s.phases.keys().map(String::as_str).filter(|n| !known.contains(n)));
    let mut table = Table::new(&[Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right]);
    table.row(["phase", "count", "mean", "per request", "p50", "p99"]);
    for name in names {
        let p = &s.phases[name];
        if p.count == 0 {
            table.note(name, &format!("not measured: {}", not_measured(s, name)));
        } else {
            table.row([
                name.to_string(),
                thousands(p.count),
                fmt_us(p.mean_us),
                small_us(p.per_request_us),
                us(p.p50_us),
                us(p.p99_us),
            ]);
        }
    }
    let finished = match s.requests.total {
        1 => "the 1 finished request".to_string(),
        n => format!("all {} finished requests", thousands(n)),
    };
    let mut notes = vec![format!(
        "(count: requests in which the phase happened; mean, p50 and p99: over those; per request: the phase's total time divided by {finished})"
    )];
    let sent_on_http2 = s.requests.protocols.contains_key(Protocol::Http2.name())
        && s.phases.get(Phase::Send.name()).is_some_and(|p| p.count > 0);
    if sent_on_http2 {
        notes.push(
            "(send on HTTP/2: from the stream's opening to the write that carried the request, a wait for flow-control window included)"
                .into(),
        );
    }
    if sent_on_http2 && s.settings.get("rounds").and_then(|r| r.as_bool()) == Some(true) {
        notes.push(
            "(--rounds: each connection sent its requests in rounds; a request's wait for its round, about 5 ms at most, is in its send and its latency)"
                .into(),
        );
    }
    Some(Section { title: "Phases", table, notes })
}

/// µs as `fmt_us` writes them, with two decimals below 10 µs: a phase spread over many
/// requests costs each a fraction of a microsecond, which is not 0.
fn small_us(v: f64) -> String {
    if v > 0.0 && v < 10.0 {
        format!("{v:.2}µs")
    } else {
        fmt_us(v)
    }
}

/// The figures of multiplexed connections (HTTP/2 and HTTP/3) as rows of two label and
/// value pairs (the Requests table of the text report; the HTML one's key figures take the
/// pairs): connections by protocol, streams in use, flow-control stalls and unprocessed
/// stream retries, each when there is something to say.
pub(crate) fn stream_rows(s: &RunSummary) -> Vec<[String; 4]> {
    let r = &s.requests;
    let pair = |label: &str, value: String| (format!("  {label}"), value);
    let none = || (String::new(), String::new());
    let mut rows = Vec::new();
    if let Some(h) = &s.streams {
        let protocols: Vec<_> =
            r.protocols.iter().map(|(p, n)| pair(&format!("{p} connections"), thousands(*n))).collect();
        for two in protocols.chunks(2) {
            rows.push((two[0].clone(), two.get(1).cloned().unwrap_or_else(none)));
        }
        let cap = h.stream_cap.map_or(String::new(), |cap| format!(" (server allows {cap})"));
        rows.push((pair("streams in use (most)", format!("{}{cap}", h.streams_max)), none()));
        if h.send_stalls + h.recv_stalls > 0 {
            rows.push((
                pair("flow-control stalls sending", thousands(h.send_stalls)),
                pair("flow-control stalls receiving", thousands(h.recv_stalls)),
            ));
        }
    }
    if r.stream_retries > 0 {
        rows.push((pair("unprocessed stream retries", thousands(r.stream_retries)), none()));
    }
    rows.into_iter().map(|((a, x), (b, y))| [a, x, b, y]).collect()
}

/// Why a phase has no measurement in `s`, from what the summary knows: the targets'
/// schemes and hosts, the connections opened and the errors.
pub(crate) fn not_measured(s: &RunSummary, phase: &str) -> String {
    if s.requests.total == 0 {
        return "no request finished".into();
    }
    // Read for the phase asked about alone: a million URLs, for each phase of the report.
    let urls = || s.urls.iter().map(|u| url_of(u));
    if phase == Phase::Tls.name() && !urls().any(|u| u.starts_with("https://") || u.starts_with("rediss://")) {
        let scheme = urls().next().and_then(|u| u.split_once("://")).map_or("http", |(scheme, _)| scheme);
        return format!("no TLS ({scheme})");
    }
    let mut hosts = s.urls.iter().filter_map(|u| host(u)).peekable();
    if phase == Phase::Dns.name() && hosts.peek().is_some() && hosts.all(is_ip_literal) {
        return "IP literal (no DNS)".into();
    }
    // QUIC carries TLS inside its handshake, timed whole as `connect`; its request leaves
    // from quinn's stream buffer, in packets the connection builds later.
    let only = |p: Protocol| s.requests.protocols.len() == 1 && s.requests.protocols.contains_key(p.name());
    let quic = only(Protocol::Http3);
    let multiplexed = !s.requests.protocols.is_empty() && !s.requests.protocols.contains_key(Protocol::Http1.name());
    if quic && phase == Phase::Tls.name() {
        return "part of connect over HTTP/3 (the QUIC handshake carries TLS)".into();
    }
    if quic && phase == Phase::Send.name() {
        return "HTTP/3 does not tell when a request left (QUIC sends from its own buffer)".into();
    }
    let failed = error_counts(s);
    match (s.requests.connections, failed.is_empty()) {
        (0, false) => return format!("every connection failed ({failed})"),
        (0, true) => return "no new connection was opened".into(),
        _ => {}
    }
    match phase {
        // Files from before barrage timed an HTTP/2 request's write, or runs where no
        // request's frames were all written (each answered before its body was sent).
        "send" if only(Protocol::Http2) => {
            "HTTP/2 (a stream's writes share its connection's; wait runs from its opening)".into()
        }
        "send" if multiplexed => {
            "HTTP/2 and HTTP/3 (a stream's writes share its connection's; wait runs from its opening)".into()
        }
        "dns" => "host names pinned by --resolve (no DNS)".into(),
        "tls" if s.errors.iter().any(|e| e.kind == "tls") => format!("every TLS handshake failed ({failed})"),
        "connect" | "tls" => "no new connection was timed".into(),
        _ if failed.is_empty() => "no request got this far".into(),
        _ => format!("no request got this far ({failed})"),
    }
}

/// `tls: 4`, `refused: 3, tls: 1`: the run's errors by kind.
fn error_counts(s: &RunSummary) -> String {
    s.errors.iter().map(|e| format!("{}: {}", e.kind, thousands(e.count))).collect::<Vec<_>>().join(", ")
}

/// The host of an absolute URL, without user info, port or IPv6 brackets.
/// A listed target's URL: after its method, when one is written (`PUT http://h/`; a URL
/// has no space).
fn url_of(listed: &str) -> &str {
    listed.rsplit_once(' ').map_or(listed, |(_, url)| url)
}

fn host(url: &str) -> Option<&str> {
    let rest = url_of(url).split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next(),
        None => authority.split(':').next(),
    }
}

fn is_ip_literal(host: &str) -> bool {
    host.parse::<std::net::IpAddr>().is_ok()
}

/// What the success ratio counts, when requests due were never sent: they count as failed,
/// and the share of the finished requests alone is given beside it, so that neither reads
/// as the other.
pub(crate) fn success_note(s: &RunSummary) -> Option<String> {
    let r = &s.requests;
    (r.dropped > 0).then(|| {
        let finished = barrage_metrics::summary::success_ratio(r.ok, r.total, 0);
        format!(
            "(success is over the {} requests due: the {} dropped, never sent, count as failed; of the {} that finished, {} succeeded)",
            thousands(r.total + r.dropped),
            thousands(r.dropped),
            thousands(r.total),
            percent(finished)
        )
    })
}

/// Each step of a stepped run (two or more): when it started, how long, requests finished
/// and dropped, rate, throughput, success (of the requests due: dropped ones count as
/// failed) and corrected latency; under the table, each step that finished more requests
/// than it sent, and why.
pub(crate) fn steps(s: &RunSummary) -> Option<Section> {
    if s.steps.len() < 2 {
        return None;
    }
    let heads = ["step", "start", "duration", "requests", "dropped", "rate", "throughput", "success", "p50", "p99"];
    let mut align = vec![Align::Right; heads.len()];
    align[0] = Align::Left;
    let mut table = Table::new(&align);
    table.row(heads);
    for st in &s.steps {
        table.row([
            st.label.clone(),
            format!("{:.2}s", st.start_s),
            secs(st.duration_s),
            st.requests.to_string(),
            st.dropped.to_string(),
            rate_or_count(st.rate_per_sec, st.sent, rate),
            rate_or_count(st.throughput_per_sec, st.requests, rate),
            percent(st.success_ratio),
            us(st.latency.corrected.p50_us),
            us(st.latency.corrected.p99_us),
        ]);
    }
    let mut notes = vec![
        "(rate: requests sent per second of the step; requests and throughput: finished in the step, whenever sent; success: of the requests finished and dropped; p50 and p99 are corrected latency)".to_string(),
    ];
    notes.extend(s.steps.iter().filter_map(step_carry_note));
    Some(Section { title: "Steps", table, notes })
}

/// Why a step finished more requests than it sent: those still in flight from the steps
/// before when it began finished in it (a response counts in the step it finished in).
pub(crate) fn step_carry_note(st: &barrage_metrics::summary::StepSummary) -> Option<String> {
    (st.requests > st.sent).then(|| {
        format!(
            "{}: {} finished in it, more than the {} it sent: {} sent in the steps before were still in flight when it began, and a response counts in the step it finished in",
            st.label,
            thousands(st.requests),
            thousands(st.sent),
            thousands(st.carried_in)
        )
    })
}

/// Requests per name or method, shown once there are at least `min` groups; `head` names
/// the rows ("name", "method").
pub(crate) fn groups(
    title: &'static str,
    head: &str,
    s: &RunSummary,
    groups: &[GroupSummary],
    min: usize,
) -> Option<Section> {
    if groups.is_empty() || groups.len() < min {
        return None;
    }
    // The steps of flows: how many failed a check or a capture, and were skipped.
    let flows = groups.iter().any(|g| g.check_failed + g.capture_failed + g.skipped > 0);
    let dropped = groups.iter().any(|g| g.dropped > 0);
    let mut heads = vec![head, "requests", "share", "success", "ok/s", "mean", "p50", "p99"];
    if dropped {
        heads.insert(2, "dropped");
    }
    if flows {
        heads.extend(["checks failed", "captures failed", "skipped"]);
    }
    let mut align = vec![Align::Right; heads.len()];
    align[0] = Align::Left;
    let mut table = Table::new(&align);
    table.row(heads);
    for g in groups {
        let mut cells = vec![
            g.name.clone(),
            g.requests.to_string(),
            percent(g.share),
            percent(g.success_ratio),
            // Over the run's window: the run's count says whether it is a rate.
            rate_or_count(g.throughput_per_sec, s.requests.total, rate),
            fmt_us(g.latency.mean_us),
            us(g.latency.p50_us),
            us(g.latency.p99_us),
        ];
        if dropped {
            cells.insert(2, thousands(g.dropped));
        }
        if flows {
            cells.extend([g.check_failed, g.capture_failed, g.skipped].map(thousands));
        }
        table.row(cells);
    }
    let mut notes = vec!["(latency is corrected latency)".to_string()];
    if dropped {
        notes.push("(dropped: due and never sent; success counts them as failed)".into());
    }
    if flows {
        notes.push("(a request that failed a check or a capture counts as failed; a skipped step was never sent, after an earlier step of its flow failed)".into());
    }
    Some(Section { title, table, notes })
}

/// Each group of a scenario: its flow and the load it was asked, then the flows it
/// finished, how they ended, and their latency; with two groups or more, all of them
/// together last.
pub(crate) fn flows(s: &RunSummary) -> Option<Section> {
    let total = s.flows_total.as_ref().filter(|_| s.flows.len() > 1);
    if s.flows.is_empty() {
        return None;
    }
    let heads = [
        "group",
        "flow",
        "asked",
        "flows",
        "flows/s",
        "success",
        "check failed",
        "capture failed",
        "request failed",
        "steps skipped",
        "dropped",
        "unfinished",
        "mean",
        "p50",
        "p99",
        "max",
    ];
    let mut align = vec![Align::Right; heads.len()];
    align[..3].fill(Align::Left);
    let mut table = Table::new(&align);
    table.row(heads);
    for f in s.flows.iter().chain(total) {
        table.row(flow_cells(f));
    }
    let notes = vec![
        "(flow latency is corrected: from each flow's intended start to its last step's end; flows/s: flows finished per second of the group's own duration; request failed: a request had no response, or a status no check allowed; steps skipped: never sent after an earlier step failed; dropped: arrivals due that never started; unfinished: stopped by the end of the group's window before their last step)".into(),
    ];
    Some(Section { title: "Flows", table, notes })
}

fn flow_cells(f: &FlowSummary) -> Vec<String> {
    vec![
        f.name.clone(),
        f.flow.clone(),
        f.load.clone(),
        thousands(f.flows),
        match f.flows_per_sec {
            Some(r) => rate(r),
            None if f.flows == 1 => "n/a (1 flow)".into(),
            None => format!("n/a ({} flows)", thousands(f.flows)),
        },
        percent(f.success_ratio),
        thousands(f.check_failed),
        thousands(f.capture_failed),
        thousands(f.request_failed),
        thousands(f.skipped_steps),
        thousands(f.dropped),
        thousands(f.unfinished),
        fmt_us(f.latency.mean_us),
        us(f.latency.p50_us),
        us(f.latency.p99_us),
        us(f.latency.max_us),
    ]
}

/// A key-value store's server error replies, one row per class by count: how many, their
/// share of all finished requests, their corrected latency and the first reply of each.
pub(crate) fn replies(s: &RunSummary) -> Option<Section> {
    if s.replies.is_empty() {
        return None;
    }
    let mut table = Table::new(&[Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Left]);
    table.row(["class", "count", "share", "p50", "p99", "example"]);
    for r in &s.replies {
        table.row([
            r.name.clone(),
            thousands(r.requests),
            percent(r.share),
            us(r.latency.p50_us),
            us(r.latency.p99_us),
            r.example.clone().unwrap_or_default(),
        ]);
    }
    let notes = vec![
        "(count: requests the server answered with an error of this class; share: of all finished requests; p50 and p99 are corrected latency; example: the first such reply)".into(),
    ];
    Some(Section { title: "Server replies", table, notes })
}

/// The shards of a split run, one row each beside the total: what each sent of what was due
/// to it, its own figures, when it was ready against the asked start, and whether it fell
/// behind its share (then its row says why, and the warnings repeat it).
pub(crate) fn shards(s: &RunSummary) -> Option<Section> {
    if s.shards.is_empty() {
        return None;
    }
    // Shard and host, eleven figures, the verdict.
    let mut aligns = vec![Align::Left, Align::Left];
    aligns.extend([Align::Right; 11]);
    aligns.push(Align::Left);
    let mut table = Table::new(&aligns);
    table.row([
        "shard",
        "host",
        "sent",
        "due",
        "late",
        "throughput",
        "success",
        "p99",
        "cpu",
        "start",
        "first",
        "clock",
        "ended",
        "verdict",
    ]);
    for r in &s.shards {
        table.row([
            r.shard.clone(),
            r.host.clone(),
            thousands(r.sent),
            thousands(r.due),
            thousands(r.late),
            rate_or_count(r.throughput_per_sec, r.sent, rate),
            percent(r.success_ratio),
            us(r.p99_us),
            format!("{:.0}%", r.cpu_percent),
            r.start_delay_ms.map_or("-".into(), |d| format!("+{}", secs(d / 1e3))),
            r.first_send_ms.map_or("-".into(), |ms| format!("+{}", secs(ms / 1e3))),
            r.clock_offset_us.map_or("-".into(), |us| format!("{:+.3}ms", us as f64 / 1e3)),
            format!("{:.2}s", r.ended_s),
            shard_verdict(r),
        ]);
    }
    let mut notes = vec![shards_note(s)];
    if s.shards.iter().any(|r| r.shard.ends_with(", restarted")) {
        notes.push("(takeover from N s, restarted: a survivor ran the lost shard's closed-loop workers or flows again from second N to the end, afresh: not an exact continuation; what was in flight on the lost machine was lost)".into());
    }
    Some(Section { title: "Shards", table, notes })
}

/// A shard's verdict: waiting for its first results, running, kept its share, or behind it
/// and why.
fn shard_verdict(r: &barrage_metrics::shards::ShardSummary) -> String {
    if barrage_metrics::shards::waiting(r) {
        return "waiting: none of its results came yet".into();
    }
    match (&r.behind, r.running) {
        (None, true) => "running".into(),
        (Some(why), true) => format!("running; BEHIND: {why}"),
        (None, false) => "kept its share".into(),
        (Some(why), false) => format!("BEHIND: {why}"),
    }
}

/// The Shards table's note: what each column is, as this run's mode and start make it.
fn shards_note(s: &RunSummary) -> String {
    let running = if s.shards.iter().any(|r| r.running) {
        "; of a shard still running, its part so far: up to the last second it recorded"
    } else {
        ""
    };
    let p99 = match s.mode {
        Mode::Open => "p99: corrected latency (from each request's intended start)",
        // A closed loop sends when a worker is free: no schedule to be late against.
        Mode::Closed => "p99: latency from each request's send (a closed loop has no schedule to correct against)",
    };
    let rendezvous = s.settings["fleet"]["rendezvous"].is_object();
    let start = match (rendezvous, s.shards.iter().any(|r| r.start_delay_ms.is_some())) {
        (true, _) => "start: how long after the start the collector gave (--rendezvous) it was ready to send",
        (false, true) => "start: how long after --start-at it was ready to send",
        (false, false) => "start: - (no shared start: neither --start-at nor --rendezvous)",
    };
    let first = if s.shards.iter().any(|r| r.first_send_ms.is_none()) {
        "first: when it sent its first request, after the shared start (-: not known yet; a shard writes it with its footer, so a shard still running or killed has none)"
    } else {
        "first: when it sent its first request, after the shared start"
    };
    format!(
        "(due: the shard's part of the schedule, sent or never sent; of a closed loop's -n, its workers' part{running}; success: of the requests due; {p99}; cpu: its generator's; {start}; {first}; clock: its clock minus the reference's, from --clock-offset or measured by --rendezvous; ended: when it sent its last request)"
    )
}

/// The requests of `s` by name (when any target was named) and by method (two or more).
pub(crate) fn by_name_and_method(s: &RunSummary) -> [Option<Section>; 2] {
    [groups("By name", "name", s, &s.by_name, 1), groups("By method", "method", s, &s.by_method, 2)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::summary::{ErrorStat, PhaseStats};

    #[test]
    fn long_url_lists_are_cut() {
        let list: Vec<String> = (0..2000).map(|i| format!("http://h/{i}")).collect();
        let (shown, more) = urls(&list);
        assert_eq!(shown.len(), URLS_SHOWN);
        assert_eq!(more.as_deref(), Some("… and 1,995 more (2,000 targets)"));
        let (shown, more) = urls(&list[..5]);
        assert_eq!((shown.len(), more), (5, None));
    }

    #[test]
    fn a_rate_or_its_count() {
        let rate = |r: f64| format!("{r:.2}/s");
        assert_eq!(rate_or_count(Some(12.5), 100, rate), "12.50/s");
        assert_eq!(rate_or_count(None, 1, rate), "n/a (1 request)");
        assert_eq!(rate_or_count(None, 9, rate), "n/a (9 requests)");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(0), "0");
    }

    #[test]
    fn hosts_of_urls() {
        let cases = [
            ("http://127.0.0.1:8080/a", Some("127.0.0.1")),
            ("https://user:pw@example.com/x?y", Some("example.com")),
            ("http://[::1]:80/", Some("::1")),
            ("http://localhost", Some("localhost")),
            ("PUT http://h.test/obj/{id}", Some("h.test")),
            ("not a url", None),
        ];
        for (url, want) in cases {
            assert_eq!(host(url), want, "{url}");
        }
    }

    /// Each reason from what the summary says.
    #[test]
    fn reasons_for_an_unmeasured_phase() {
        let base = |url: &str, connections: u64, errors: &[(&str, u64)]| {
            let mut s = RunSummary { urls: vec![url.into()], ..Default::default() };
            s.requests.total = 10;
            s.requests.connections = connections;
            s.errors = errors
                .iter()
                .map(|(k, n)| ErrorStat { kind: k.to_string(), count: *n, example: String::new() })
                .collect();
            s
        };
        let spoke = |mut s: RunSummary, protocols: &[&str]| {
            s.requests.protocols = protocols.iter().map(|p| (p.to_string(), 1)).collect();
            s
        };
        let quic = |s| spoke(s, &["HTTP/3"]);
        let cases = [
            (base("http://127.0.0.1/", 2, &[]), "tls", "no TLS (http)"),
            (base("https://127.0.0.1/", 2, &[]), "dns", "IP literal (no DNS)"),
            (base("https://127.0.0.1/", 0, &[("tls", 10)]), "tls", "every connection failed (tls: 10)"),
            (base("https://127.0.0.1/", 0, &[("tls", 10)]), "wait", "every connection failed (tls: 10)"),
            (
                base("http://h.test/", 0, &[("dns", 4), ("refused", 6)]),
                "connect",
                "every connection failed (dns: 4, refused: 6)",
            ),
            (base("http://h.test/", 3, &[]), "dns", "host names pinned by --resolve (no DNS)"),
            (
                base("http://h.test/", 3, &[("request_timeout", 10)]),
                "wait",
                "no request got this far (request_timeout: 10)",
            ),
            (base("http://h.test/", 0, &[]), "connect", "no new connection was opened"),
            (RunSummary::default(), "wait", "no request finished"),
            (
                quic(base("https://127.0.0.1/", 2, &[])),
                "tls",
                "part of connect over HTTP/3 (the QUIC handshake carries TLS)",
            ),
            (
                quic(base("https://127.0.0.1/", 2, &[])),
                "send",
                "HTTP/3 does not tell when a request left (QUIC sends from its own buffer)",
            ),
            (
                spoke(base("https://127.0.0.1/", 2, &[]), &["HTTP/2"]),
                "send",
                "HTTP/2 (a stream's writes share its connection's; wait runs from its opening)",
            ),
            (
                spoke(base("https://127.0.0.1/", 2, &[]), &["HTTP/2", "HTTP/3"]),
                "send",
                "HTTP/2 and HTTP/3 (a stream's writes share its connection's; wait runs from its opening)",
            ),
        ];
        for (s, phase, want) in cases {
            assert_eq!(not_measured(&s, phase), want, "{phase} of {:?}", s.urls);
        }
    }

    #[test]
    fn phases_show_per_request_beside_the_mean() {
        let mut s = RunSummary { urls: vec!["https://127.0.0.1/".into()], ..Default::default() };
        s.requests.total = 4_080;
        s.requests.connections = 4;
        let tls = PhaseStats {
            count: 4,
            mean_us: 20_000.0,
            total_us: 80_000.0,
            per_request_us: 80_000.0 / 4_080.0,
            ..Default::default()
        };
        s.phases.insert("tls".into(), tls);
        s.phases.insert("dns".into(), PhaseStats::default());
        let section = phases(&s).unwrap();
        let text = section.table.to_text();
        let tls = text.lines().find(|l| l.starts_with("tls")).unwrap();
        assert!(tls.contains("20.00ms") && tls.contains("20µs"), "{tls}");
        assert_eq!(small_us(0.049), "0.05µs");
        let dns = text.lines().find(|l| l.starts_with("dns")).unwrap();
        assert!(dns.ends_with("not measured: IP literal (no DNS)"), "{text}");
        assert!(section.notes[0].contains("divided by all 4,080 finished requests"), "{:?}", section.notes);
        assert_eq!(section.notes.len(), 1, "no HTTP/2, no note on its send: {:?}", section.notes);
    }

    /// HTTP/2's send phase says what is in it: with --rounds, the wait for a round.
    #[test]
    fn http2_send_says_what_it_holds() {
        let mut s = RunSummary { urls: vec!["http://127.0.0.1/".into()], ..Default::default() };
        s.requests.total = 10;
        s.requests.protocols = [("HTTP/2".to_string(), 1)].into();
        s.phases.insert("send".into(), PhaseStats { count: 10, ..Default::default() });
        let notes = phases(&s).unwrap().notes;
        assert!(notes.iter().any(|n| n.contains("send on HTTP/2: from the stream's opening")), "{notes:?}");
        assert!(!notes.iter().any(|n| n.contains("--rounds")), "no rounds asked: {notes:?}");
        s.settings = serde_json::json!({ "rounds": true });
        let notes = phases(&s).unwrap().notes;
        assert!(
            notes.iter().any(|n| n.contains("wait for its round, about 5 ms at most, is in its send")),
            "{notes:?}"
        );
        // Not measured (a file from before): no claim about what is in it.
        s.phases.insert("send".into(), PhaseStats::default());
        assert_eq!(phases(&s).unwrap().notes.len(), 1);
    }
}
