//! The shards of a split run (`--shard i/N`), merged: every shard once, all of one plan,
//! and each shard's own figures beside the total, so that a load machine that fell behind
//! its share stands out instead of lowering the total unseen.

use crate::file::RunHeader;
use crate::summary::RunSummary;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A shard that sent on time less than this share of what was due to it fell behind.
pub const ON_TIME_SHARE: f64 = 0.99;

/// A closed loop's shard that finished its part of `-n` this much later than the first
/// shard to finish (as a share of that one's time, plus one request's p99) fell behind:
/// its workers each send the same number of requests as everyone else's, so the shards end
/// together but for one request, and the merged run's throughput is taken over the last.
pub const CLOSED_END_SLACK: f64 = 0.10;

/// One shard's figures, read from its own file alone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardSummary {
    /// `i/N`.
    pub shard: String,
    /// The machine that ran it.
    pub host: String,
    /// Its results file.
    pub file: String,
    /// Requests it sent.
    pub sent: u64,
    /// Open loop: requests due to it (sent and dropped); closed loop with `-n`: its
    /// workers' part of the count; closed loop by time: sent.
    pub due: u64,
    /// Sent late because every slot was busy.
    pub late: u64,
    /// Its successful requests.
    #[serde(default)]
    pub ok: u64,
    /// Due but never sent.
    pub dropped: u64,
    /// Its successes per second.
    pub throughput_per_sec: Option<f64>,
    /// The share of the requests due to it that succeeded: ok over those that finished and
    /// those dropped ([`crate::summary::success_ratio`]); when it did not reach its share
    /// (lost, stopped), ok over every request due to it, as the run's success counts them.
    pub success_ratio: f64,
    /// Corrected latency p50 and p99, µs.
    pub p50_us: u64,
    /// Corrected latency p99, µs.
    pub p99_us: u64,
    /// Its generator's CPU, % of one core.
    pub cpu_percent: f64,
    /// How far its sends lagged behind the schedule, p99, µs.
    pub lag_p99_us: u64,
    /// How long after the asked start (`--start-at`) it was ready to send, ms; `None`
    /// without one.
    pub start_delay_ms: Option<f64>,
    /// The clock offset its orchestrator measured, µs.
    pub clock_offset_us: Option<i64>,
    /// When it sent its first request, ms after the schedule's start (its `--start-at`).
    #[serde(default)]
    pub first_send_ms: Option<f64>,
    /// When it sent its last request, seconds after the run's (earliest) start.
    #[serde(default)]
    pub ended_s: f64,
    /// Why it fell behind its share, if it did: its figures describe that machine, not
    /// the server.
    pub behind: Option<String>,
    /// Still running: the figures are its run so far
    /// ([`crate::summary::summarize_running`]).
    #[serde(default)]
    pub running: bool,
}

/// A row of a run still going on for a shard none of whose results came yet: it has no
/// file, and nothing of it is judged.
pub fn waiting(row: &ShardSummary) -> bool {
    row.running && row.file == "-"
}

/// What a shard that did not reach its share sent none of: due, and neither sent nor
/// dropped (dropped ones are counted as such).
pub fn never_sent(row: &ShardSummary) -> u64 {
    row.due.saturating_sub(row.sent + row.dropped)
}

/// A shard that did not reach its share: its success over every request due to it, those
/// never sent and those it sent and never saw end (in flight when it died) failed, as in
/// the run's success ratio ([`crate::coverage`]).
fn count_never_sent(row: &mut ShardSummary) {
    let never = never_sent(row);
    row.success_ratio = crate::summary::success_ratio(row.ok, row.sent, row.dropped + never);
}

/// Checks that `headers` (with their files) are the shards of one run, each once: the same
/// shard count, the same plan, no shard missing or twice. Files of unsplit runs may be
/// different runs merged by hand (several machines' runs), but never one run twice
/// ([`once_each`]); mixing them with shards is refused. The error is one line naming the
/// files.
pub fn check(files: &[(&Path, &RunHeader)]) -> Result<(), String> {
    check_as(files, true)
}

/// [`check`] of a run still going on ([`crate::summary::summarize_running`]): a shard with no
/// file yet is not missing but still to come, so only what could never be one run is unfit.
pub(crate) fn check_running(files: &[(&Path, &RunHeader)]) -> Result<(), String> {
    check_as(files, false)
}

/// [`check`]; `whole`: every shard must be there.
fn check_as(files: &[(&Path, &RunHeader)], whole: bool) -> Result<(), String> {
    let shards: Vec<_> = files.iter().filter_map(|(p, h)| h.launch.shard.map(|s| (*p, *h, s))).collect();
    let Some(&(first_path, first, (_, count))) = shards.first() else { return once_each(files) };
    let name = |p: &Path| p.display().to_string();
    if shards.len() < files.len() {
        let plain: Vec<String> = files.iter().filter(|(_, h)| h.launch.shard.is_none()).map(|(p, _)| name(p)).collect();
        return Err(format!(
            "the shards of a split run ({}) cannot be merged with other runs ({}): not one run (--force merges anyway)",
            shards.iter().map(|(p, ..)| name(p)).collect::<Vec<_>>().join(", "),
            plain.join(", ")
        ));
    }
    if let Some((p, _, (_, n))) = shards.iter().find(|(_, _, (_, n))| *n != count) {
        return Err(format!(
            "{} is a shard of {n} but {} of {count}: not one split run (--force merges anyway)",
            name(p),
            name(first_path)
        ));
    }
    if let Some((p, h, _)) = shards.iter().find(|(_, h, _)| h.launch.plan_digest != first.launch.plan_digest) {
        return Err(format!(
            "{} ran a different plan than {} ({}): not shards of one run (--force merges anyway)",
            name(p),
            name(first_path),
            crate::plan_difference::plan_difference(&first.settings_json, &h.settings_json)
        ));
    }
    // A takeover runs the rest of its shard's share: it stands beside the shard's own file
    // (or for it, when none came), once.
    let (takeovers, own): (Vec<_>, Vec<_>) = shards.iter().partition(|(_, h, _)| takeover_from(h).is_some());
    let mut seen: Vec<Option<&Path>> = vec![None; count as usize];
    let mut taken: Vec<Option<&Path>> = vec![None; count as usize];
    for &&(p, _, (i, _)) in &takeovers {
        match taken.get_mut(i as usize) {
            Some(Some(other)) => {
                return Err(format!(
                    "two takeovers of shard {i}/{count}: {} and {} (--force merges anyway)",
                    name(other),
                    name(p)
                ))
            }
            Some(slot) => *slot = Some(p),
            None => return Err(format!("{}: shard {i}/{count} does not exist", name(p))),
        }
    }
    for &&(p, _, (i, _)) in &own {
        match seen.get_mut(i as usize) {
            Some(Some(other)) => {
                return Err(format!("shard {i}/{count} twice: {} and {} (--force merges anyway)", name(other), name(p)))
            }
            Some(slot) => *slot = Some(p),
            None => return Err(format!("{}: shard {i}/{count} does not exist", name(p))),
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| seen[*i as usize].is_none() && taken[*i as usize].is_none())
        .map(|i| i.to_string())
        .collect();
    if whole && !missing.is_empty() {
        return Err(format!(
            "shard(s) {} of {count} missing: the merge would not be the whole run (--force merges what is there)",
            missing.join(", ")
        ));
    }
    Ok(())
}

/// What tells one run's file from another's: the id it drew (version 11 on); before it, the
/// machine and its boot, the run's start and the microsecond it was ready to send, and its
/// shard, which two runs share when one `--start-at` started them on one machine without
/// `--shard` (files before format version 7 have no ready time, and their start is to the
/// millisecond). A copy of a file, or a file and a cut-off copy of it, share it.
#[derive(PartialEq, Eq, Hash)]
enum RunId<'h> {
    Drawn(&'h str),
    Before11(&'h str, &'h str, u64, u64, Option<(u32, u32)>),
}

fn run_id(h: &RunHeader) -> RunId<'_> {
    match h.launch.run_id.as_str() {
        "" => RunId::Before11(&h.host, &h.boot_id, h.started_unix_ms, h.launch.ready_unix_us, h.launch.shard),
        id => RunId::Drawn(id),
    }
}

/// Refuses one run's files twice (`report run.brg copy.brg`): merged, every figure would
/// count twice.
fn once_each(files: &[(&Path, &RunHeader)]) -> Result<(), String> {
    let mut seen = std::collections::HashMap::new();
    for &(path, header) in files {
        if let Some(first) = seen.insert(run_id(header), path) {
            return Err(format!(
                "{} and {} hold the same run (one run's id: a copy?): merged, every figure would count twice (--force merges anyway)",
                first.display(),
                path.display()
            ));
        }
    }
    Ok(())
}

/// The second a takeover's run resumed its lost shard's schedule from (`run --resume-at`,
/// its settings' `fleet.takeover`); `None` for a shard's own run.
pub fn takeover_from(h: &RunHeader) -> Option<u64> {
    let settings: serde_json::Value = serde_json::from_str(&h.settings_json).ok()?;
    settings["fleet"]["takeover"]["from_s"].as_f64().map(|s| s as u64)
}

/// A takeover of an open loop's share by its lanes (`--resume-after`): the arrivals of the
/// share whose outcome the lost shard recorded, which it resumed after.
pub fn takeover_after(h: &RunHeader) -> Option<u64> {
    let settings: serde_json::Value = serde_json::from_str(&h.settings_json).ok()?;
    settings["fleet"]["takeover"]["after"].as_u64()
}

/// Of a takeover by lanes, the arrivals the lost shard had in flight, which it sent again.
fn takeover_again(h: &RunHeader) -> u64 {
    let settings: serde_json::Value = serde_json::from_str(&h.settings_json).unwrap_or_default();
    settings["fleet"]["takeover"]["again"].as_u64().unwrap_or(0)
}

/// Whether a takeover restarted its shard's workers rather than continued its schedule: a
/// closed loop's workers, or a scenario's flows (a worker's or a flow's state is not a
/// function of the schedule: what was in flight on the lost machine is lost, and the
/// takeover's start afresh).
fn restarted(h: &RunHeader) -> bool {
    h.mode == crate::file::Mode::Closed || !h.groups.is_empty()
}

/// The warning a takeover that restarted its shard's workers or flows gives the merged
/// report ([`restarted`]); `None` for any other file.
pub fn restarted_warning(h: &RunHeader) -> Option<crate::summary::Warning> {
    let from = takeover_from(h).filter(|_| restarted(h))?;
    let (i, n) = h.launch.shard.unwrap_or((0, 1));
    let what = if h.groups.is_empty() {
        "its closed-loop workers were restarted there: the requests in flight on the lost machine were lost, and the workers started afresh"
    } else {
        "its groups' flows were restarted there: the flows in flight on the lost machine were lost, and new ones started from their first step"
    };
    Some(crate::summary::Warning::new(
        crate::summary::WarningKind::TakeoverRestarted,
        format!("shard {i}/{n}'s share was taken over from second {from} to its end, not continued exactly: {what}"),
    ))
}

/// The shards of a split run that shared no start and started more than a second apart:
/// their seconds are merged by index, as if they had run together, so the run's rate,
/// timeline and duration are not the fleet's. Said, with how far apart.
pub(crate) fn apart(headers: &[RunHeader]) -> Option<crate::summary::Warning> {
    if headers.iter().any(|h| h.launch.start_at_unix_us.is_some()) {
        return None;
    }
    let starts = headers.iter().map(|h| h.started_unix_ms);
    let spread = starts.clone().max()?.saturating_sub(starts.min()?);
    (spread > 1000).then(|| crate::summary::Warning::new(crate::summary::WarningKind::ShardsApart, format!(
        "the shards started {:.1} s apart, with no start they shared (--start-at or --rendezvous): their seconds are merged as if they had run together, so the offered rate, the timeline and the duration are not the fleet's",
        spread as f64 / 1e3
    )))
}

/// Files merged as the machines of one run, side by side, that did not all run at the same
/// time (one ended before another started, beyond a second): their requests are added as
/// if they had, so the rates are no one moment's. Found trying seed 000's study: two runs
/// 33 s apart merged into one throughput of both. `spans`: each file's start and end (Unix
/// ms; `None` for a file without a footer, a run killed: it ran from its start at least).
pub(crate) fn runs_apart(spans: &[(u64, Option<u64>)]) -> Option<crate::summary::Warning> {
    let last_start = spans.iter().map(|s| s.0).max()?;
    let first_end = spans.iter().filter_map(|s| s.1).min()?;
    (spans.len() > 1 && last_start > first_end + 1000).then(|| {
        crate::summary::Warning::new(crate::summary::WarningKind::RunsApart, format!(
            "the files did not run at the same time (one ended {:.1} s before another started): merged as one run of machines side by side, their requests and rates are added as if they had; to set runs against each other, `barrage compare` them",
            (last_start - first_end) as f64 / 1e3
        ))
    })
}

/// The takeovers of an open loop's share that sent late (`rows`, of the run `s`): each
/// began only once its shard was judged lost, `--lateness` after its data stopped, so the
/// arrivals it took over that were due by then went out late, catching up. Said in a
/// warning with their count and the late start, in place of the run's warnings that blame
/// the generator or its slots for them when no other shard was late or lagged: the
/// corrected latency counts them, as it should, and the warning says so.
pub(crate) fn takeover_late(rows: &[ShardSummary], s: &mut RunSummary) {
    let lagged = |r: &ShardSummary| r.late > 0 || r.lag_p99_us > crate::summary::LAG_LIMIT_US;
    let late: Vec<&ShardSummary> = rows.iter().filter(|r| r.shard.contains(" takeover ") && lagged(r)).collect();
    if late.is_empty() || s.mode != crate::file::Mode::Open {
        return;
    }
    let others_clean = rows
        .iter()
        .filter(|r| !r.shard.contains(" takeover "))
        .all(|r| r.late == 0 && r.lag_p99_us <= crate::summary::LAG_LIMIT_US);
    if others_clean {
        use crate::summary::WarningKind::{RequestsLate, ScheduleLag};
        s.warnings.retain(|w| !matches!(w.kind, ScheduleLag | RequestsLate));
    }
    let p99_others = rows.iter().filter(|r| !r.shard.contains(" takeover ")).map(|r| r.p99_us).max().unwrap_or(0);
    for r in late {
        let (shard, _) = r.shard.split_once(" takeover ").unwrap_or((&r.shard, ""));
        s.warnings.push(crate::summary::Warning::new(
            crate::summary::WarningKind::TakeoverLate,
            format!(
                "the takeover of shard {shard} began {:.1} s into the run, once the shard was judged lost (--lateness after its data stopped): the arrivals of its {} that were due before it began went out late, catching up (p99 lag {}, {} waiting for a free slot); the corrected latency counts their wait (p99 {} against the other shards' {})",
                r.start_delay_ms.unwrap_or(0.0) / 1e3,
                r.sent,
                crate::units::fmt_us(r.lag_p99_us as f64),
                r.late,
                crate::units::fmt_us(r.p99_us as f64),
                crate::units::fmt_us(p99_others as f64),
            ),
        ));
    }
}

/// The time a restarted takeover's share went unsent (`rows`, of the run `s`): from the
/// end of the lost shard's last record to the takeover's first send, said in the run's
/// warning that its workers were restarted.
pub(crate) fn takeover_gaps(rows: &[ShardSummary], s: &mut RunSummary) {
    for t in rows.iter().filter(|r| r.shard.ends_with(", restarted")) {
        let shard = t.shard.split_once(" takeover ").map_or(t.shard.as_str(), |(i, _)| i);
        let (Some(lost), Some(first_ms)) = (rows.iter().find(|r| r.shard == shard), t.first_send_ms) else { continue };
        let named = format!("shard {shard}'s share was taken over");
        for w in s.warnings.iter_mut().filter(|w| w.text.starts_with(&named)) {
            w.text.push_str(&format!(
                "; nothing of its share was sent from {:.1} s to {:.1} s of the run (the lost shard's last record to the takeover's first request)",
                lost.ended_s,
                first_ms / 1e3
            ));
        }
    }
}

/// Whether the run these headers belong to was split.
pub fn split(headers: &[&RunHeader]) -> bool {
    headers.iter().any(|h| h.launch.shard.is_some())
}

/// A shard's row, from its own summary and header; `origin_ms`: the run's earliest start
/// (ms since the Unix epoch). Whether a closed loop's shard finished its part with the
/// others is judged over all of them ([`judge_ends`]).
pub fn row(file: &Path, header: &RunHeader, s: &RunSummary, origin_ms: u64) -> ShardSummary {
    let (i, n) = header.launch.shard.unwrap_or((0, 1));
    let open = s.mode == crate::file::Mode::Open;
    let due = match (open, s.requests.quota) {
        (true, _) => s.requests.sent + s.requests.dropped,
        (false, Some(part)) => part,
        (false, None) => s.requests.sent,
    };
    let mut row = ShardSummary {
        shard: match (takeover_from(header), takeover_after(header), restarted(header)) {
            (Some(_), Some(after), false) => match takeover_again(header) {
                0 => format!("{i}/{n} takeover after {after} arrivals"),
                again => format!("{i}/{n} takeover after {after} arrivals, {again} in flight sent again"),
            },
            (Some(from), _, false) => format!("{i}/{n} takeover from {from} s"),
            (Some(from), _, true) => format!("{i}/{n} takeover from {from} s, restarted"),
            (None, ..) => format!("{i}/{n}"),
        },
        host: header.host.clone(),
        file: file.display().to_string(),
        sent: s.requests.sent,
        due,
        late: s.requests.late,
        ok: s.requests.ok,
        dropped: s.requests.dropped,
        throughput_per_sec: s.throughput_per_sec,
        success_ratio: s.success_ratio,
        p50_us: s.latency.corrected.p50_us,
        p99_us: s.latency.corrected.p99_us,
        cpu_percent: s.generator.cpu_percent,
        lag_p99_us: s.generator.lag_p99_us,
        start_delay_ms: header
            .launch
            .start_at_unix_us
            .map(|at| header.launch.ready_unix_us.saturating_sub(at) as f64 / 1e3),
        clock_offset_us: header.launch.clock_offset_us,
        first_send_ms: s.first_send_ms,
        ended_s: header.started_unix_ms.saturating_sub(origin_ms) as f64 / 1e3 + s.duration.attack_s,
        behind: None,
        running: false,
    };
    // A takeover's late sends are its late start's, said by [`takeover_late`].
    row.behind = behind(&row, s, open, takeover_from(header).is_some());
    if takeover_from(header).is_some() {
        row.throughput_per_sec = active_throughput(&row, s).or(row.throughput_per_sec);
    }
    row
}

/// A takeover's successes per second over the time it sent (from its first send to its
/// end), not over the run's window from the shared start, most of which it was not there.
fn active_throughput(row: &ShardSummary, s: &RunSummary) -> Option<f64> {
    let active = s.duration.attack_s - row.first_send_ms? / 1e3;
    (active > 0.0).then(|| row.ok as f64 / active)
}

/// A closed loop with `-n` (every shard says what it was due): a shard that finished its
/// part more than [`CLOSED_END_SLACK`] (and one request) after the first shard to finish
/// fell behind. Its workers were to send as many requests each as every other worker, so
/// the shards finish together; one that finished later (a machine that started late,
/// stalled, or reached the server more slowly) sent alone at the run's end, and the merged
/// throughput, taken over the whole run, describes its load there, not the run's.
pub fn judge_ends(rows: &mut [ShardSummary], closed_with_count: bool) {
    if !closed_with_count {
        return;
    }
    let first = rows.iter().map(|r| r.ended_s).fold(f64::INFINITY, f64::min);
    if !first.is_finite() {
        return;
    }
    for r in rows.iter_mut().filter(|r| r.behind.is_none()) {
        let request_s = r.p99_us as f64 / 1e6;
        if r.ended_s > first * (1.0 + CLOSED_END_SLACK) + request_s {
            r.behind = Some(format!(
                "finished its part of the requests ({}) {:.2} s into the run, {:.2} s after the first shard to finish ({:.2} s): it sent alone at the run's end",
                r.due,
                r.ended_s,
                r.ended_s - first,
                first
            ));
        }
    }
}

/// Why a shard fell behind its share: it sent on time less than [`ON_TIME_SHARE`] of what
/// was due to it (open loop), it sent less than its part of `-n` (closed loop: stopped or
/// killed), or its own summary says its generator could not keep up.
fn behind(row: &ShardSummary, s: &RunSummary, open: bool, takeover: bool) -> Option<String> {
    if !open && row.sent < row.due {
        let how = if s.interrupted { "stopped early" } else { "killed, or cut short" };
        return Some(format!("sent {} of its {} requests ({how})", row.sent, row.due));
    }
    let on_time = row.sent.saturating_sub(row.late);
    // A takeover's lateness and lag are its late start's ([`takeover_late`]).
    if open && !takeover && row.due > 0 && (on_time as f64) < ON_TIME_SHARE * row.due as f64 {
        return Some(format!(
            "sent {:.1}% of its {} due requests on time ({} late, {} never sent)",
            on_time as f64 * 100.0 / row.due as f64,
            row.due,
            row.late,
            row.dropped
        ));
    }
    // The generator checks of its own summary.
    if crate::summary::saturated(s) {
        return Some(format!("its generator was saturated ({:.0}% CPU)", s.generator.cpu_percent));
    }
    (crate::summary::lagging(s) && !takeover)
        .then(|| format!("sends lagged behind the schedule (p99 lag {:.1} ms)", s.generator.lag_p99_us as f64 / 1e3))
}

/// Without a schedule of arrivals (a closed loop, a scenario's closed-loop groups), marks
/// each shard's own run whose share a takeover took over (`ends` in the order of `rows`):
/// its figures stop where it was lost, and the takeover's workers were restarted.
pub(crate) fn mark_taken_over(rows: &mut [ShardSummary], ends: &[crate::coverage::ShardEnd]) {
    let handed = |i: u32| ends.iter().find_map(|e| (e.shard.0 == i).then_some(e.from_s).flatten());
    for (row, end) in rows.iter_mut().zip(ends).filter(|(_, e)| e.from_s.is_none()) {
        if let Some(from) = handed(end.shard.0) {
            let how = if end.killed { "lost" } else { "stopped" };
            row.behind = Some(format!("{how}; its share from second {from} taken over, restarted"));
        }
    }
}

/// A closed loop's count (`-n`, of the run's `headers`) split over shards of which one was
/// killed (`ends` in the order of `rows`): its file has no footer to say its part, which is
/// then the count less the others' parts; what it did not send of it is marked never sent
/// (a count of a closed loop's is not taken over: what its workers sent after its last
/// record is not known). `None` when there is no such count or no such shard.
pub(crate) fn count_lost(
    rows: &mut [ShardSummary],
    ends: &[crate::coverage::ShardEnd],
    headers: &[RunHeader],
) -> Option<CountLost> {
    let h = headers.first().filter(|h| h.mode == crate::file::Mode::Closed && h.groups.is_empty())?;
    let settings: serde_json::Value = serde_json::from_str(&h.settings_json).unwrap_or_default();
    let whole = settings["plan"]["requests"].as_u64()?;
    if ends.iter().any(|e| e.from_s.is_some()) || ends.iter().filter(|e| e.killed).count() != 1 {
        return None;
    }
    let kept: u64 = rows.iter().zip(ends).filter(|(_, e)| !e.killed).map(|(r, _)| r.due).sum();
    let (row, _) = rows.iter_mut().zip(ends).find(|(_, e)| e.killed)?;
    let due = whole.saturating_sub(kept);
    row.due = due;
    let never = never_sent(row);
    count_never_sent(row);
    row.behind = Some(format!(
        "lost: sent {} of its {due} requests, {never} never sent (its results stop there: killed)",
        row.sent
    ));
    Some(CountLost { whole, never, shard: format!("{} lost", row.shard) })
}

/// A closed loop's count (`-n`) of which a lost shard sent only part ([`count_lost`]).
pub(crate) struct CountLost {
    /// The whole run's count.
    pub whole: u64,
    /// What the lost shard never sent of its part.
    pub never: u64,
    /// The shard, as the warning names it (`1/3 lost`).
    pub shard: String,
}

/// Each shard's due share of the whole run's arrivals (`arrivals`, due before each second
/// of its schedule), split at a takeover's second between the shard's own run and its
/// takeover; a row for each shard of the run whose file is not among `ends`; a shard that
/// did not reach its share is marked, and named in the list returned ("1/3 lost", "2/3
/// missing").
pub(crate) fn cover(rows: &mut Vec<ShardSummary>, arrivals: &[u64], ends: &[crate::coverage::ShardEnd]) -> Vec<String> {
    let mut short = Vec::new();
    let (Some(&total), Some(n)) = (arrivals.last(), ends.first().map(|e| e.shard.1)) else { return short };
    if rows.len() != ends.len() {
        return short;
    }
    let share = |k: u64, i: u32| crate::coverage::share(k, (i, n));
    // Where each shard's own run hands over to its takeover, if one ran.
    let handed = |i: u32| ends.iter().find_map(|e| (e.shard.0 == i).then_some(e.from_s).flatten());
    for (row, end) in rows.iter_mut().zip(ends) {
        let i = end.shard.0;
        let due = crate::coverage::due(arrivals, end, ends);
        row.due = due;
        if end.through_s.is_some() {
            // Still running: what it has not sent yet is not due yet, or still to come.
            continue;
        }
        let never = never_sent(row);
        let taken = end.from_s.is_none() && handed(i).is_some();
        if taken {
            let how = if end.killed { "lost" } else { "stopped" };
            row.behind = Some(format!("{how}; its share from second {} taken over", handed(i).unwrap_or(0)));
        }
        if never == 0 {
            continue;
        }
        count_never_sent(row);
        let (what, how) = if end.killed {
            // What it sent after its last record died unrecorded: its results are all
            // that is known, and the origin may have seen a second's worth more.
            ("lost", "as its results say; they stop there: killed, what it sent after its last record is not known")
        } else {
            ("stopped", "it was stopped")
        };
        row.behind = Some(format!("{what}: sent {} of its {due} arrivals, {never} never sent ({how})", row.sent));
        short.push(format!("{} {what}", row.shard));
    }
    let running = ends.iter().any(|e| e.through_s.is_some());
    for i in (0..n).filter(|i| !ends.iter().any(|e| e.shard.0 == *i && e.from_s.is_none())) {
        if running && handed(i).is_none() {
            // The run goes on: a shard whose results have not come yet may still send them;
            // it is of the run so far, not behind ([`waiting`]).
            rows.push(ShardSummary {
                shard: format!("{i}/{n}"),
                host: "-".into(),
                file: "-".into(),
                running: true,
                ..Default::default()
            });
            continue;
        }
        let due =
            handed(i).map_or(share(total, i), |from| share(arrivals.get(from as usize).copied().unwrap_or(total), i));
        let behind = match (handed(i), due) {
            // Lost before it sent anything (killed in the lead): its whole share taken over.
            (Some(from), 0) => format!("lost: none of its results came; its share from second {from} taken over"),
            (_, 0) => continue,
            _ => format!("missing: none of its results came, its {due} arrivals never sent"),
        };
        rows.push(ShardSummary {
            shard: format!("{i}/{n}"),
            host: "-".into(),
            file: "-".into(),
            due,
            behind: Some(behind),
            ..Default::default()
        });
        if due > 0 {
            short.push(format!("{i}/{n} missing"));
        }
    }
    rows.sort_by_key(|r| r.shard.split('/').next().and_then(|i| i.parse::<u32>().ok()));
    short
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::Launch;
    use std::path::PathBuf;

    /// Closed-loop shards with `-n` end together but for one request; one that finished its
    /// part later than a tenth (and a request) after the first is behind, and says by how
    /// much. A run by time, or an open loop, is not judged by its end.
    #[test]
    fn a_closed_loop_shard_that_finished_its_part_last_is_behind() {
        let row = |ended_s: f64| ShardSummary { ended_s, p99_us: 20_000, due: 300, ..Default::default() };
        let mut rows = vec![row(2.0), row(2.2), row(2.45)];
        judge_ends(&mut rows, true);
        assert_eq!((rows[0].behind.as_deref(), rows[1].behind.as_deref()), (None, None), "within 10% and a request");
        let why = rows[2].behind.as_deref().unwrap();
        assert!(why.starts_with("finished its part of the requests (300) 2.45 s into the run, 0.45 s after the first shard to finish (2.00 s)"), "{why}");
        let mut by_time = vec![row(2.0), row(3.0)];
        judge_ends(&mut by_time, false);
        assert!(by_time.iter().all(|r| r.behind.is_none()));
        // A row already behind for another reason keeps it.
        let mut rows = vec![row(2.0), ShardSummary { behind: Some("its generator was saturated".into()), ..row(3.0) }];
        judge_ends(&mut rows, true);
        assert_eq!(rows[1].behind.as_deref(), Some("its generator was saturated"));
    }

    fn header(mode: crate::file::Mode, settings_json: &str, shard: (u32, u32)) -> RunHeader {
        RunHeader {
            barrage_version: "test".into(),
            started_unix_ms: 1_000,
            host: "h".into(),
            boot_id: "b".into(),
            mode,
            urls: Vec::new(),
            settings_json: settings_json.into(),
            steps: Vec::new(),
            threads: 1,
            insecure: false,
            groups: Vec::new(),
            launch: Launch { shard: Some(shard), ..Default::default() },
        }
    }

    /// A closed loop's count split over three shards, one killed: its part is the count
    /// less the others', and what it did not send of it is said never sent. A run by time,
    /// or one taken over, is left alone.
    #[test]
    fn a_killed_shards_part_of_a_closed_loops_count_is_what_the_others_left() {
        use crate::coverage::ShardEnd;
        let h = header(crate::file::Mode::Closed, r#"{"plan":{"requests":4800}}"#, (0, 3));
        let row = |sent: u64| ShardSummary { sent, due: sent, ..Default::default() };
        let end = |i: u32, killed: bool, from_s: Option<u64>| ShardEnd {
            shard: (i, 3),
            killed,
            from_s,
            through_s: None,
            after: None,
        };
        let mut rows = vec![row(1600), row(500), row(1600)];
        count_lost(
            &mut rows,
            &[end(0, false, None), end(1, true, None), end(2, false, None)],
            std::slice::from_ref(&h),
        );
        assert_eq!(rows[1].due, 1600);
        let why = rows[1].behind.as_deref().unwrap();
        assert_eq!(why, "lost: sent 500 of its 1600 requests, 1100 never sent (its results stop there: killed)");
        let by_time = header(crate::file::Mode::Closed, r#"{"plan":{"requests":null}}"#, (0, 3));
        let mut rows = vec![row(1600), row(500), row(1600)];
        count_lost(&mut rows, &[end(0, false, None), end(1, true, None), end(2, false, None)], &[by_time]);
        assert_eq!((rows[1].due, rows[1].behind.as_deref()), (500, None));
        let mut rows = vec![row(1600), row(500), row(1600), row(300)];
        let ends = [end(0, false, None), end(1, true, None), end(2, false, None), end(1, false, Some(2))];
        count_lost(&mut rows, &ends, &[h]);
        assert!(rows[1].behind.is_none());
    }

    /// A shard lost before it sent anything (killed in the rendezvous's lead), its whole
    /// share taken over from second 0: it has a row that says so, not none.
    #[test]
    fn a_shard_lost_before_any_data_has_its_row() {
        use crate::coverage::ShardEnd;
        let end = |i: u32, from_s: Option<u64>| ShardEnd {
            shard: (i, 3),
            killed: false,
            from_s,
            through_s: None,
            after: None,
        };
        let row = |shard: &str, sent: u64| ShardSummary { shard: shard.into(), sent, ..Default::default() };
        let mut rows = vec![row("0/3", 100), row("1/3 takeover from 0 s", 100), row("2/3", 100)];
        let short = cover(&mut rows, &[0, 150, 300], &[end(0, None), end(1, Some(0)), end(2, None)]);
        let lost = rows.iter().find(|r| r.shard == "1/3").expect("a row for the shard lost");
        assert_eq!(lost.behind.as_deref(), Some("lost: none of its results came; its share from second 0 taken over"));
        assert!(short.is_empty(), "its share is the takeover's: {short:?}");
    }

    /// A closed loop's takeover (or a scenario's) warns that it restarted its workers; an
    /// open loop's, and a shard's own run, do not.
    #[test]
    fn a_restarted_takeover_is_marked_and_an_exact_one_is_not() {
        let takeover = r#"{"fleet":{"takeover":{"from_s":3.0}}}"#;
        let closed = header(crate::file::Mode::Closed, takeover, (1, 3));
        let w = restarted_warning(&closed).unwrap();
        assert_eq!(w.kind, crate::summary::WarningKind::TakeoverRestarted);
        assert!(w.text.starts_with("shard 1/3's share was taken over from second 3 to its end, not continued exactly: its closed-loop workers"), "{}", w.text);
        assert!(restarted_warning(&header(crate::file::Mode::Open, takeover, (1, 3))).is_none());
        assert!(restarted_warning(&header(crate::file::Mode::Closed, "{}", (1, 3))).is_none());
    }

    #[test]
    fn one_run_twice_is_refused_and_different_runs_merge() {
        let run = |host: &str, ready_unix_us: u64| RunHeader {
            host: host.into(),
            launch: Launch { ready_unix_us, ..Default::default() },
            ..header(crate::file::Mode::Open, "{}", (0, 1))
        };
        let (a, b, c) = (run("h", 1_000_123), run("h", 1_000_124), run("g", 1_000_123));
        let files = |hs: &[&RunHeader]| -> Vec<(PathBuf, RunHeader)> {
            hs.iter().enumerate().map(|(i, h)| (PathBuf::from(format!("{i}.brg")), (*h).clone())).collect()
        };
        let checked = |hs: &[&RunHeader]| {
            let owned = files(hs);
            check(&owned.iter().map(|(p, h)| (p.as_path(), h)).collect::<Vec<_>>())
        };
        assert_eq!(checked(&[&a, &b, &c]), Ok(()), "a µs apart, or on another machine: other runs");
        let e = checked(&[&a, &c, &a]).unwrap_err();
        assert!(e.starts_with("0.brg and 2.brg hold the same run"), "{e}");
    }

    #[test]
    fn files_merged_side_by_side_that_ran_apart_are_said_to() {
        // Two runs of 2 s, 33 s apart (seed 000's TC0 and TC8): said, with how far.
        let w = runs_apart(&[(0, Some(2_000)), (35_000, Some(37_000))]).unwrap();
        assert_eq!(w.kind, crate::summary::WarningKind::RunsApart);
        assert!(
            w.text.starts_with("the files did not run at the same time (one ended 33.0 s before another started)"),
            "{}",
            w.text
        );
        // Machines side by side, started a little apart: nothing to say.
        assert_eq!(runs_apart(&[(0, Some(10_000)), (500, Some(10_400))]), None);
        // One file: nothing to compare. A killed one (no end) started after the other ended.
        assert_eq!(runs_apart(&[(0, Some(2_000))]), None);
        assert!(runs_apart(&[(0, Some(2_000)), (35_000, None)]).is_some());
        // A killed one that started first may have run through the other's time.
        assert_eq!(runs_apart(&[(0, None), (35_000, Some(37_000))]), None);
    }
}
