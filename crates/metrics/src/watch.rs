//! What a run sees beside its requests: samples of the servers' processes and of the
//! machine ([`WatchSample`], one per interval), and commands run on the timeline
//! ([`EventRecord`], `--at`).

use crate::bounded::{self, limit};
use crate::limits::{MAX_ROOTS, MAX_WATCHED};
use serde::{Deserialize, Serialize};

/// One process at the root of a watched tree, as the machine knows it: a PID is reused,
/// a PID with its start time is not (until the machine reboots).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProcRoot {
    /// The process ID.
    pub pid: u32,
    /// When it started, in clock ticks since the machine booted (`/proc/PID/stat` field 22).
    pub start_ticks: u64,
}

/// A watched process and its descendants (nginx's workers, varnishd's child) over one
/// interval. CPU is a share of one core, so 200% is two cores busy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcSample {
    /// What the user called it: a testbed name, a process name or a PID.
    pub name: String,
    /// Which processes were watched: the roots of the tree, sorted. With the machine (the
    /// run header's host and boot ID) they say whether two results files watched the same
    /// process. Empty when none was running, for barrage itself (its sample is the run's
    /// engine threads, never shared with another run), and in files of format version 3.
    #[serde(deserialize_with = "bounded::vec::<RootLimit, _, _>")]
    pub roots: Vec<ProcRoot>,
    /// Processes counted (the watched ones and their descendants); 0 when none was running.
    pub processes: u32,
    /// User CPU over the interval, % of one core.
    pub cpu_user_percent: f32,
    /// System CPU over the interval, % of one core.
    pub cpu_system_percent: f32,
    /// Resident memory at the end of the interval, KiB (shared pages counted in each process).
    pub rss_kib: u64,
    /// Threads at the end of the interval.
    pub threads: u32,
    /// Open file descriptors at the end of the interval.
    pub fds: u32,
    /// Context switches (voluntary and involuntary) during the interval.
    pub context_switches: u64,
}

impl ProcSample {
    /// User and system CPU, % of one core.
    pub fn cpu_percent(&self) -> f32 {
        self.cpu_user_percent + self.cpu_system_percent
    }

    /// Folds `later`, the sample of the `later_secs` that followed this one's `secs`, into
    /// one sample of both: CPU weighted by time, counters summed, gauges as at the end.
    fn absorb(&mut self, later: &ProcSample, secs: f64, later_secs: f64) {
        let total = secs + later_secs;
        let weigh = |a: f32, b: f32| {
            if total > 0.0 {
                ((f64::from(a) * secs + f64::from(b) * later_secs) / total) as f32
            } else {
                b
            }
        };
        self.cpu_user_percent = weigh(self.cpu_user_percent, later.cpu_user_percent);
        self.cpu_system_percent = weigh(self.cpu_system_percent, later.cpu_system_percent);
        self.context_switches += later.context_switches;
        self.roots.clone_from(&later.roots);
        self.processes = later.processes;
        self.rss_kib = later.rss_kib;
        self.threads = later.threads;
        self.fds = later.fds;
    }

    /// One sample from several samples of the same process taken by different runs over
    /// the same second: each measured all of it, so they are averaged (CPU, switches) or the
    /// largest kept (gauges), never added.
    fn same_process(samples: &[&ProcSample]) -> ProcSample {
        let n = samples.len().max(1) as f64;
        let mean = |f: &dyn Fn(&ProcSample) -> f64| samples.iter().map(|p| f(p)).sum::<f64>() / n;
        let mut s = samples.first().map(|p| (*p).clone()).unwrap_or_default();
        s.cpu_user_percent = mean(&|p| f64::from(p.cpu_user_percent)) as f32;
        s.cpu_system_percent = mean(&|p| f64::from(p.cpu_system_percent)) as f32;
        s.context_switches = mean(&|p| p.context_switches as f64).round() as u64;
        for p in samples {
            s.processes = s.processes.max(p.processes);
            s.rss_kib = s.rss_kib.max(p.rss_kib);
            s.threads = s.threads.max(p.threads);
            s.fds = s.fds.max(p.fds);
        }
        s
    }

    /// Adds a different process of the same name (another machine's nginx): everything sums.
    fn add_distinct(&mut self, other: &ProcSample) {
        self.processes += other.processes;
        self.cpu_user_percent += other.cpu_user_percent;
        self.cpu_system_percent += other.cpu_system_percent;
        self.rss_kib += other.rss_kib;
        self.threads += other.threads;
        self.fds += other.fds;
        self.context_switches += other.context_switches;
        self.roots.clear();
    }
}

/// Which process a sample measured, across results files: the machine (host name and boot
/// ID, from the file's header) and the roots of the watched tree. `None` when the sample
/// cannot say (no roots: an old file, nothing running, barrage's own engine threads), and
/// such a sample is a process of its own.
pub(crate) type ProcKey<'a> = Option<(&'a str, &'a str, &'a [ProcRoot])>;

/// The samples of one second, from every merged file, one per name: samples of the same
/// process (equal keys) are averaged, different processes of one name added up. Names keep
/// the order in which they come.
pub(crate) fn combine<'a>(samples: impl IntoIterator<Item = (ProcKey<'a>, &'a ProcSample)>) -> Vec<ProcSample> {
    // The samples of each process: its name, its key, the samples.
    let mut groups: Vec<(&str, ProcKey<'a>, Vec<&ProcSample>)> = Vec::new();
    for (key, p) in samples {
        match groups.iter_mut().find(|(name, k, _)| *name == p.name && key.is_some() && *k == key) {
            Some((_, _, same)) => same.push(p),
            None => groups.push((&p.name, key, vec![p])),
        }
    }
    let mut out: Vec<ProcSample> = Vec::new();
    for (name, _, same) in groups {
        let one = ProcSample::same_process(&same);
        match out.iter_mut().find(|o| o.name == name) {
            Some(sum) => sum.add_distinct(&one),
            None => out.push(one),
        }
    }
    out
}

/// The whole machine over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSample {
    /// CPUs of the machine.
    pub cpus: u32,
    /// Busy CPU (all but idle and iowait), % of the whole machine.
    pub cpu_percent: f32,
    /// Memory in use (total minus available), KiB.
    pub mem_used_kib: u64,
    /// Memory of the machine, KiB.
    pub mem_total_kib: u64,
    /// Bytes received on all interfaces (loopback included) during the interval.
    pub net_rx_bytes: u64,
    /// Bytes sent on all interfaces during the interval.
    pub net_tx_bytes: u64,
}

/// Everything watched over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchSample {
    /// The machine barrage runs on.
    pub host: HostSample,
    /// barrage itself: CPU is that of the run's engine threads (what sends the load, not an
    /// origin or a study running in the same process); memory, threads, descriptors and
    /// context switches are the whole process's.
    pub generator: ProcSample,
    /// The processes of `--monitor` (and of a testbed), in the order given.
    #[serde(deserialize_with = "bounded::vec::<ProcessLimit, _, _>")]
    pub processes: Vec<ProcSample>,
}

limit!(ProcessLimit = MAX_WATCHED, "watched processes");
limit!(RootLimit = MAX_ROOTS, "roots of a watched process");

impl WatchSample {
    /// Folds `later`, the sample of the `later_secs` that followed this one's `secs`, into
    /// one sample of both (see [`crate::file::IntervalRecord::absorb`]).
    pub(crate) fn absorb(&mut self, later: &WatchSample, secs: f64, later_secs: f64) {
        self.host.absorb(&later.host, secs, later_secs);
        self.generator.absorb(&later.generator, secs, later_secs);
        for p in &later.processes {
            match self.processes.iter_mut().find(|mine| mine.name == p.name) {
                Some(mine) => mine.absorb(p, secs, later_secs),
                None => self.processes.push(p.clone()),
            }
        }
    }
}

impl HostSample {
    fn absorb(&mut self, later: &HostSample, secs: f64, later_secs: f64) {
        let total = secs + later_secs;
        if total > 0.0 {
            self.cpu_percent =
                ((f64::from(self.cpu_percent) * secs + f64::from(later.cpu_percent) * later_secs) / total) as f32;
        }
        self.cpus = self.cpus.max(later.cpus);
        self.mem_used_kib = later.mem_used_kib;
        self.mem_total_kib = later.mem_total_kib;
        self.net_rx_bytes += later.net_rx_bytes;
        self.net_tx_bytes += later.net_tx_bytes;
    }
}

/// A command run at an offset of the run (`--at 10s 'COMMAND'`): one record when it
/// starts and one when it ends, so a run killed meanwhile still shows the start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Which `--at` (0, 1, ...), pairing the start with the end.
    pub index: u32,
    /// When it happened, ms from the run's start.
    pub offset_ms: u64,
    /// The command, as given.
    pub command: String,
    /// Started or ended.
    pub kind: EventKind,
}

impl EventRecord {
    /// The command, its problem and its output as they may be shown: a command line or
    /// what it printed may carry a credential (`curl -H 'Authorization: …'`).
    pub fn redact(&mut self, r: &crate::secrets::Redaction) {
        self.command = r.text(&self.command).into_owned();
        if let EventKind::Ended { problem, output, .. } = &mut self.kind {
            *output = r.text(output).into_owned();
            if let Some(p) = problem {
                *p = r.text(p).into_owned();
            }
        }
    }
}

/// The two ends of an event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum EventKind {
    /// The command was started.
    Started,
    /// The command ended (or could not start): how, and the last line it printed.
    Ended {
        /// Exit code; `None` when killed by a signal or never started.
        exit: Option<i32>,
        /// What went wrong: why it was killed or could not start ("killed by signal 9",
        /// "cannot start"), or, when it exited non-zero, the first line of its standard
        /// error (at most 200 characters).
        problem: Option<String>,
        /// The last line of its output (standard output's, or standard error's when it
        /// printed nothing else), for the report.
        output: String,
    },
}

/// A watched process over the run: means and peaks of its per-interval samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSummary {
    /// Its name in the run (`--monitor`, testbed name, or `barrage`).
    pub name: String,
    /// Intervals sampled.
    pub samples: u64,
    /// Intervals in which no process of it was running (stopped, crashed, not yet started).
    pub down_samples: u64,
    /// Least time it can have been down: samples are taken once per interval, at its end,
    /// so an outage seen by consecutive samples lasted at least from the first to the last.
    pub down_min_s: f64,
    /// Most time it can have been down: from the last sample that found it running before
    /// each outage to the first after (or the run's start or end).
    pub down_max_s: f64,
    /// Mean CPU (user and system), % of one core.
    pub cpu_mean_percent: f64,
    /// Highest CPU of one interval, % of one core.
    pub cpu_max_percent: f64,
    /// Mean user CPU, % of one core.
    pub cpu_user_mean_percent: f64,
    /// Mean system CPU, % of one core.
    pub cpu_system_mean_percent: f64,
    /// Mean resident memory, KiB.
    pub rss_mean_kib: f64,
    /// Highest resident memory, KiB.
    pub rss_max_kib: u64,
    /// Most threads at once.
    pub threads_max: u32,
    /// Most open file descriptors at once.
    pub fds_max: u32,
    /// Context switches per second, mean.
    pub context_switches_per_sec: f64,
}

/// The machine over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSummary {
    /// CPUs of the machine.
    pub cpus: u32,
    /// Mean busy CPU, % of the whole machine.
    pub cpu_mean_percent: f64,
    /// Highest busy CPU of one interval, % of the whole machine.
    pub cpu_max_percent: f64,
    /// Memory of the machine, KiB.
    pub mem_total_kib: u64,
    /// Most memory in use at once, KiB.
    pub mem_used_max_kib: u64,
    /// Bytes received per second on all interfaces, mean.
    pub net_rx_per_sec: f64,
    /// Bytes sent per second on all interfaces, mean.
    pub net_tx_per_sec: f64,
}

/// Intervals shorter than this do not set a maximum: /proc counts CPU in ticks of 10 ms, so
/// a 20 ms last interval reads 0% or 200% for a process using 100%.
const MIN_MAX_SECS: f64 = 0.5;

/// Sums samples of the same process over intervals into a [`ProcessSummary`]. Means are
/// weighted by interval length (CPU seconds over wall seconds), so a short last interval
/// counts for what it lasted, not as a whole second.
#[derive(Default)]
pub(crate) struct ProcessTally {
    s: ProcessSummary,
    /// The previous sample found it down.
    was_down: bool,
    cpu: f64,
    user: f64,
    system: f64,
    rss: f64,
    switches: f64,
    secs: f64,
}

impl ProcessTally {
    pub(crate) fn add(&mut self, p: &ProcSample, secs: f64) {
        let s = &mut self.s;
        s.name.clone_from(&p.name);
        s.samples += 1;
        let down = p.processes == 0;
        s.down_samples += u64::from(down);
        // This interval (up to this sample) may have been down in part if either end was;
        // wholly if both were.
        if down || self.was_down {
            s.down_max_s += secs;
        }
        if down && self.was_down {
            s.down_min_s += secs;
        }
        self.was_down = down;
        if secs >= MIN_MAX_SECS {
            s.cpu_max_percent = s.cpu_max_percent.max(f64::from(p.cpu_percent()));
        }
        s.rss_max_kib = s.rss_max_kib.max(p.rss_kib);
        s.threads_max = s.threads_max.max(p.threads);
        s.fds_max = s.fds_max.max(p.fds);
        self.cpu += f64::from(p.cpu_percent()) * secs;
        self.user += f64::from(p.cpu_user_percent) * secs;
        self.system += f64::from(p.cpu_system_percent) * secs;
        self.rss += p.rss_kib as f64 * secs;
        self.switches += p.context_switches as f64;
        self.secs += secs;
    }

    pub(crate) fn finish(mut self) -> ProcessSummary {
        let secs = if self.secs > 0.0 { self.secs } else { 1.0 };
        self.s.cpu_mean_percent = self.cpu / secs;
        self.s.cpu_user_mean_percent = self.user / secs;
        self.s.cpu_system_mean_percent = self.system / secs;
        self.s.rss_mean_kib = self.rss / secs;
        self.s.context_switches_per_sec = if self.secs > 0.0 { self.switches / self.secs } else { 0.0 };
        self.s
    }
}

/// Sums the machine's samples into a [`HostSummary`].
#[derive(Default)]
pub(crate) struct HostTally {
    s: HostSummary,
    cpu: f64,
    samples: u64,
    rx: f64,
    tx: f64,
    secs: f64,
}

impl HostTally {
    pub(crate) fn add(&mut self, h: &HostSample, secs: f64) {
        self.s.cpus = self.s.cpus.max(h.cpus);
        if secs >= MIN_MAX_SECS {
            self.s.cpu_max_percent = self.s.cpu_max_percent.max(f64::from(h.cpu_percent));
        }
        self.s.mem_total_kib = self.s.mem_total_kib.max(h.mem_total_kib);
        self.s.mem_used_max_kib = self.s.mem_used_max_kib.max(h.mem_used_kib);
        self.cpu += f64::from(h.cpu_percent) * secs;
        self.samples += 1;
        self.rx += h.net_rx_bytes as f64;
        self.tx += h.net_tx_bytes as f64;
        self.secs += secs;
    }

    pub(crate) fn finish(mut self) -> Option<HostSummary> {
        if self.samples == 0 {
            return None;
        }
        self.s.cpu_mean_percent = self.cpu / if self.secs > 0.0 { self.secs } else { 1.0 };
        if self.secs > 0.0 {
            self.s.net_rx_per_sec = self.rx / self.secs;
            self.s.net_tx_per_sec = self.tx / self.secs;
        }
        Some(self.s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process at 50% for two seconds, then a 20 ms last interval that /proc's 10 ms ticks
    /// read as 200%: the mean is CPU time over wall time, and the short interval sets no
    /// maximum.
    #[test]
    fn a_short_last_interval_counts_for_what_it_lasted() {
        let sample = |percent: f32| ProcSample {
            name: "nginx".into(),
            processes: 1,
            cpu_user_percent: percent,
            rss_kib: 1000,
            ..Default::default()
        };
        let mut t = ProcessTally::default();
        t.add(&sample(50.0), 1.0);
        t.add(&sample(50.0), 1.0);
        t.add(&sample(200.0), 0.02);
        let s = t.finish();
        assert!((s.cpu_mean_percent - (100.0 + 4.0) / 2.02).abs() < 1e-6, "{}", s.cpu_mean_percent);
        assert_eq!(s.cpu_max_percent, 50.0);
        assert_eq!(s.samples, 3);
        let mut h = HostTally::default();
        h.add(&HostSample { cpu_percent: 10.0, ..Default::default() }, 1.0);
        h.add(&HostSample { cpu_percent: 100.0, ..Default::default() }, 0.01);
        let host = h.finish().unwrap();
        assert!((host.cpu_mean_percent - 11.0 / 1.01).abs() < 1e-4, "{}", host.cpu_mean_percent);
        assert_eq!(host.cpu_max_percent, 10.0);
    }

    /// Samples at the end of each one-second interval see an outage from 3.3 s to 5.3 s at
    /// 4 s and 5 s only: two samples, yet anywhere from 1 s to 3 s of outage fits them,
    /// and the bounds say so rather than "down 2 s" (or "down 1 s" for one from 3.9 s to
    /// 5.1 s, which the 5 s sample alone sees).
    #[test]
    fn down_time_is_bounded_by_the_samples_around_it() {
        let tally = |up: &[bool]| {
            let mut t = ProcessTally::default();
            for u in up {
                t.add(&ProcSample { name: "origin".into(), processes: u32::from(*u), ..Default::default() }, 1.0);
            }
            let s = t.finish();
            (s.down_samples, s.down_min_s, s.down_max_s)
        };
        // Samples at 1..=7 s.
        assert_eq!(tally(&[true, true, true, false, false, true, true]), (2, 1.0, 3.0));
        assert_eq!(tally(&[true, true, true, true, false, true, true]), (1, 0.0, 2.0));
        // Down at the last sample: up to the end of the run, no further.
        assert_eq!(tally(&[true, false, false]), (2, 1.0, 2.0));
        assert_eq!(tally(&[true; 3]), (0, 0.0, 0.0));
    }
}
