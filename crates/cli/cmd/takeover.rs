//! A survivor's takeover of a lost shard's share (`collect --on-shard-loss takeover`): the
//! survivor runs its own command line again as the lost shard, on the run's schedule from
//! the second the collector gives (`--resume-at`), streaming to the same collector as that
//! shard's takeover. Its own outputs (reports, live views, the history) are left out; its
//! results file and request log go beside the survivor's, named after the lost shard.

use barrage_fleet::protocol::Adopt;
use std::path::Path;

/// Flags of `run` dropped from the survivor's command line with their one value: they
/// place, name or show the survivor's own run, or the takeover sets its own.
const DROPPED_WITH_VALUE: &[&str] = &[
    "--shard",
    "--start-at",
    "--clock-offset",
    "--resume-at",
    "--resume-after",
    "-o",
    "--output",
    "--html",
    "--xlsx",
    "--csv-dir",
    "--junit",
    "--metrics-addr",
    "--hdr-log",
    "--format",
    "--history",
    "--log",
];
/// Flags dropped alone.
const DROPPED: &[&str] = &["--rendezvous", "--tui"];

/// The takeover's command: the survivor's `args` (without the program) as shard `a.shard`
/// of `n` from second `a.from_s` of the schedule that started at `start_unix_us` (the
/// survivor's own start), its results file beside `output` (a temporary one without) and
/// its log beside `log`.
pub fn command(
    args: &[String],
    a: Adopt,
    n: u32,
    start_unix_us: u64,
    output: Option<&Path>,
    log: Option<&Path>,
) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 12);
    let mut skip = 0;
    for arg in args {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        let name = arg.split('=').next().unwrap_or(arg);
        let inline = arg.contains('=') && arg.starts_with("--");
        if DROPPED.contains(&name) {
            continue;
        }
        // An open loop's takeover runs as many threads as the lost shard had.
        if DROPPED_WITH_VALUE.contains(&name) || (name == "--threads" && a.after.is_some()) {
            skip = usize::from(!inline);
            continue;
        }
        if name == "--at" {
            // Its commands are the survivor's to run, once.
            skip = if inline { 1 } else { 2 };
            continue;
        }
        out.push(arg.clone());
    }
    let start = format!("{}.{:06}", start_unix_us / 1_000_000, start_unix_us % 1_000_000);
    out.extend([
        "--shard".into(),
        format!("{}/{n}", a.shard),
        "--start-at".into(),
        start,
        "--resume-at".into(),
        format!("{}s", a.from_s),
        "--format".into(),
        "json".into(),
        "--no-history".into(),
    ]);
    if let Some(lanes) = &a.after {
        // The lost shard's threads' lanes, each taken up by a thread of the takeover.
        out.extend(["--threads".into(), lanes.len().to_string()]);
        out.extend(["--resume-after".into(), barrage_metrics::lanes::to_arg(lanes)]);
    }
    if let Some(output) = output {
        out.extend(["-o".into(), beside(output, a.shard).display().to_string()]);
    }
    if let Some(log) = log {
        out.extend(["--log".into(), beside(log, a.shard).display().to_string()]);
    }
    out
}

/// `dir/run.brg` → `dir/run.takeover-2.brg`: beside it, its extension kept (a log's says
/// its format).
pub fn beside(path: &Path, shard: u32) -> std::path::PathBuf {
    let stem = path.file_stem().map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.takeover-{shard}.{}", ext.to_string_lossy()),
        None => format!("{stem}.takeover-{shard}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::lanes::LaneMark;

    fn s(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    /// The survivor's own placement and outputs go; the plan stays; the lost shard's part
    /// and the second to resume from come.
    #[test]
    fn the_takeover_runs_the_plan_as_the_lost_shard() {
        let a = Adopt { shard: 1, from_s: 3, after: None };
        let args = s(&[
            "run",
            "http://h/",
            "--rate",
            "300",
            "-d",
            "6s",
            "--shard",
            "0/3",
            "--report-to",
            "http://c:1/",
            "--rendezvous",
            "-o",
            "/w/s0.brg",
            "--log=/w/s0.csv",
            "--at",
            "2s",
            "true",
            "--html",
            "r.html",
            "--tui",
        ]);
        let got = command(
            &args,
            a.clone(),
            3,
            1_700_000_000_000_123,
            Some(Path::new("/w/s0.brg")),
            Some(Path::new("/w/s0.csv")),
        );
        let lanes = vec![LaneMark::at(40), LaneMark { passed: 41, flying: vec![39], unlisted: 0 }];
        let counted =
            command(&s(&["run", "http://h/", "--threads", "8"]), Adopt { after: Some(lanes), ..a }, 3, 0, None, None);
        assert_eq!(
            counted[2..],
            s(&[
                "--shard",
                "1/3",
                "--start-at",
                "0.000000",
                "--resume-at",
                "3s",
                "--format",
                "json",
                "--no-history",
                "--threads",
                "2",
                "--resume-after",
                "40,41:39"
            ])[..]
        );
        assert_eq!(
            got,
            s(&[
                "run",
                "http://h/",
                "--rate",
                "300",
                "-d",
                "6s",
                "--report-to",
                "http://c:1/",
                "--shard",
                "1/3",
                "--start-at",
                "1700000000.000123",
                "--resume-at",
                "3s",
                "--format",
                "json",
                "--no-history",
                "-o",
                "/w/s0.takeover-1.brg",
                "--log",
                "/w/s0.takeover-1.csv",
            ])
        );
    }
}
