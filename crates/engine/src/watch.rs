//! Watching the servers (`--monitor`): once per interval, the CPU, memory, threads, open
//! descriptors and context switches of each watched process, of barrage itself, and of the
//! machine, read from /proc with the `procfs` crate.
//!
//! A watched process counts with its descendants: nginx's master does no work, its workers
//! do; varnishd's manager forks the cache child. A process that exits between two samples
//! is simply no longer counted, and one that appears (a restarted origin) counts from its
//! start. Each sample names the roots of its tree (PID and start time), so results files
//! merged later can tell one process watched by several runs from several processes.
//!
//! barrage's own CPU is not read here: it is its engine threads', which they report
//! themselves ([`Watcher::sample`] takes it); the rest of barrage's sample (memory,
//! descriptors) is the process's.

use barrage_metrics::limits::MAX_ROOTS;
use barrage_metrics::watch::ProcRoot;
use barrage_metrics::{HostSample, ProcSample, WatchSample};
use procfs::process::Process;
use procfs::{Current, CurrentSI};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

/// What to watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchTarget {
    /// One process (and its descendants).
    Pid(u32),
    /// Every process with this name (`comm`, as `top` shows it), and their descendants.
    Name(String),
    /// The process whose PID is in this file, read at every sample, so a restarted server
    /// is followed (a testbed keeps one per server).
    PidFile(PathBuf),
}

impl WatchTarget {
    /// Whether a process of this target runs now (a PID file that names none is fine: the
    /// server may be stopped for now).
    pub fn is_running(&self) -> bool {
        match self {
            WatchTarget::Pid(pid) => Process::new(*pid as i32).is_ok(),
            WatchTarget::Name(_) => !roots(&process_table(), self).is_empty(),
            WatchTarget::PidFile(_) => true,
        }
    }

    /// A watched PID's process name (`comm`, as `top` shows it); `None` for the others, or
    /// when the process is gone.
    pub fn process_name(&self) -> Option<String> {
        match self {
            WatchTarget::Pid(pid) => read_proc(*pid as i32).map(|p| p.comm),
            _ => None,
        }
    }
}

/// A watched process and the label it is reported under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    /// The name in reports.
    pub label: String,
    /// Which process.
    pub target: WatchTarget,
}

/// One process as read from /proc/PID/stat.
#[derive(Clone, Debug)]
struct ProcInfo {
    ppid: i32,
    comm: String,
    /// Clock ticks from boot to the process's start.
    start_ticks: u64,
    user_ticks: u64,
    system_ticks: u64,
    rss_pages: u64,
    threads: i64,
}

/// CPU ticks and context switches of a process at the previous sample.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    user_ticks: u64,
    system_ticks: u64,
    switches: u64,
}

/// Takes the samples; keeps the previous readings to turn counters into rates.
pub(crate) struct Watcher {
    watches: Vec<Watch>,
    seen: HashMap<i32, Seen>,
    host: Option<(u64, u64, u64, u64)>,
    last: Instant,
    ticks_per_sec: f64,
    page_kib: u64,
}

impl Watcher {
    /// Starts watching: the first reading is the baseline the first interval is measured from.
    pub(crate) fn new(watches: Vec<Watch>) -> Self {
        let mut w = Watcher {
            watches,
            seen: HashMap::new(),
            host: None,
            last: Instant::now(),
            ticks_per_sec: procfs::ticks_per_second() as f64,
            page_kib: procfs::page_size() / 1024,
        };
        w.sample((0.0, 0.0));
        w
    }

    /// What happened since the last sample; `engine_cpu` is the engine threads' CPU over
    /// the interval (user, system, % of one core), barrage's CPU.
    pub(crate) fn sample(&mut self, engine_cpu: (f64, f64)) -> WatchSample {
        let now = Instant::now();
        let secs = now.duration_since(self.last).as_secs_f64().max(1e-3);
        self.last = now;
        let table = if self.watches.is_empty() { HashMap::new() } else { process_table() };
        let mut seen = HashMap::new();
        let processes = self
            .watches
            .iter()
            .map(|w| {
                let roots = roots(&table, &w.target);
                let mut s = self.proc_sample(&w.label, &tree(&table, &roots), &table, secs, &mut seen);
                s.roots = identify(&table, &roots);
                s
            })
            .collect();
        let me = std::process::id() as i32;
        let mine: HashMap<i32, ProcInfo> = read_proc(me).map(|p| (me, p)).into_iter().collect();
        let mut generator = self.proc_sample("barrage", &[me], &mine, secs, &mut seen);
        (generator.cpu_user_percent, generator.cpu_system_percent) = (engine_cpu.0 as f32, engine_cpu.1 as f32);
        self.seen = seen;
        WatchSample { host: self.host_sample(), generator, processes }
    }

    fn proc_sample(
        &self,
        label: &str,
        pids: &[i32],
        table: &HashMap<i32, ProcInfo>,
        secs: f64,
        seen: &mut HashMap<i32, Seen>,
    ) -> ProcSample {
        let mut s = ProcSample { name: label.to_string(), ..ProcSample::default() };
        let (mut user, mut system) = (0, 0);
        for pid in pids {
            let Some(info) = table.get(pid) else { continue };
            let process = Process::new(*pid).ok();
            let switches = process.as_ref().map_or(0, context_switches);
            let now = Seen { user_ticks: info.user_ticks, system_ticks: info.system_ticks, switches };
            // A process first seen after the baseline started since: all it did is new.
            let before = self.seen.get(pid).copied().unwrap_or_default();
            user += now.user_ticks.saturating_sub(before.user_ticks);
            system += now.system_ticks.saturating_sub(before.system_ticks);
            s.context_switches += now.switches.saturating_sub(before.switches);
            seen.insert(*pid, now);
            s.processes += 1;
            s.rss_kib += info.rss_pages * self.page_kib;
            s.threads += u32::try_from(info.threads).unwrap_or(0);
            s.fds += process.and_then(|p| p.fd_count().ok()).unwrap_or(0) as u32;
        }
        let percent = |ticks: u64| (ticks as f64 / self.ticks_per_sec / secs * 100.0) as f32;
        s.cpu_user_percent = percent(user);
        s.cpu_system_percent = percent(system);
        s
    }

    fn host_sample(&mut self) -> HostSample {
        let mut h = HostSample::default();
        if let Ok(m) = procfs::Meminfo::current() {
            h.mem_total_kib = m.mem_total / 1024;
            h.mem_used_kib = m.mem_total.saturating_sub(m.mem_available.unwrap_or(m.mem_free)) / 1024;
        }
        let (busy, total) = match procfs::KernelStats::current() {
            Ok(k) => {
                h.cpus = k.cpu_time.len() as u32;
                let t = &k.total;
                let busy =
                    t.user + t.nice + t.system + t.irq.unwrap_or(0) + t.softirq.unwrap_or(0) + t.steal.unwrap_or(0);
                (busy, busy + t.idle + t.iowait.unwrap_or(0))
            }
            Err(_) => (0, 0),
        };
        let (rx, tx) = procfs::net::dev_status()
            .map(|d| d.values().fold((0, 0), |(r, t), s| (r + s.recv_bytes, t + s.sent_bytes)))
            .unwrap_or((0, 0));
        if let Some((busy0, total0, rx0, tx0)) = self.host {
            let spent = total.saturating_sub(total0);
            if spent > 0 {
                h.cpu_percent = (busy.saturating_sub(busy0) as f64 / spent as f64 * 100.0) as f32;
            }
            h.net_rx_bytes = rx.saturating_sub(rx0);
            h.net_tx_bytes = tx.saturating_sub(tx0);
        }
        self.host = Some((busy, total, rx, tx));
        h
    }
}

/// Every process on the machine, by PID.
fn process_table() -> HashMap<i32, ProcInfo> {
    let Ok(all) = procfs::process::all_processes() else { return HashMap::new() };
    all.filter_map(Result::ok).filter_map(|p| read_proc(p.pid).map(|info| (p.pid, info))).collect()
}

fn read_proc(pid: i32) -> Option<ProcInfo> {
    let stat = Process::new(pid).ok()?.stat().ok()?;
    Some(ProcInfo {
        ppid: stat.ppid,
        comm: stat.comm,
        start_ticks: stat.starttime,
        user_ticks: stat.utime,
        system_ticks: stat.stime,
        rss_pages: stat.rss,
        threads: stat.num_threads,
    })
}

/// The running roots of a watched tree, as PID and start time, sorted: the first
/// [`MAX_ROOTS`], the most a results file holds (enough to tell one tree from another).
fn identify(table: &HashMap<i32, ProcInfo>, roots: &[i32]) -> Vec<ProcRoot> {
    let mut ids: Vec<ProcRoot> = roots
        .iter()
        .filter_map(|pid| table.get(pid).map(|p| ProcRoot { pid: *pid as u32, start_ticks: p.start_ticks }))
        .collect();
    ids.sort_unstable();
    ids.truncate(MAX_ROOTS);
    ids
}

/// This boot of this machine (`/proc/sys/kernel/random/boot_id`); empty when unreadable.
pub(crate) fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Context switches of all the process's threads (its own status shows the main thread's).
fn context_switches(p: &Process) -> u64 {
    let Ok(tasks) = p.tasks() else { return 0 };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| t.status().ok())
        .map(|s| s.voluntary_ctxt_switches.unwrap_or(0) + s.nonvoluntary_ctxt_switches.unwrap_or(0))
        .sum()
}

/// The processes a target names; for a name, only the topmost of a family of the same
/// name (nginx's master, not also its workers, which come as descendants).
fn roots(table: &HashMap<i32, ProcInfo>, target: &WatchTarget) -> Vec<i32> {
    match target {
        WatchTarget::Pid(pid) => vec![*pid as i32],
        WatchTarget::PidFile(path) => {
            std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse().ok()).into_iter().collect()
        }
        WatchTarget::Name(name) => {
            let named = |pid: &i32| table.get(pid).is_some_and(|p| &p.comm == name);
            table.iter().filter(|(pid, p)| named(pid) && !named(&p.ppid)).map(|(pid, _)| *pid).collect()
        }
    }
}

/// `roots` and all their descendants, each once.
fn tree(table: &HashMap<i32, ProcInfo>, roots: &[i32]) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, p) in table {
        children.entry(p.ppid).or_default().push(*pid);
    }
    let mut out = Vec::new();
    let mut done = HashSet::new();
    let mut todo: Vec<i32> = roots.iter().copied().filter(|p| table.contains_key(p)).collect();
    while let Some(pid) = todo.pop() {
        if done.insert(pid) {
            out.push(pid);
            todo.extend(children.get(&pid).into_iter().flatten());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// A shell whose child burns CPU: watched by PID, the child's CPU counts.
    #[test]
    fn a_watched_process_counts_its_busy_child() {
        let mut sh = Command::new("sh")
            .args(["-c", "timeout 5 sh -c 'while :; do :; done' & wait"])
            .stdout(Stdio::null())
            .spawn()
            .expect("sh runs");
        // Field 22 of its stat: clock ticks from boot to its start.
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", sh.id())).unwrap();
        let started_ticks: u64 = stat.rsplit(')').next().unwrap().split_whitespace().nth(19).unwrap().parse().unwrap();
        let watch = Watch { label: "busy".into(), target: WatchTarget::Pid(sh.id()) };
        let mut w = Watcher::new(vec![watch]);
        // Wait (bounded) until the spinning child has used 0.3 s of CPU since the baseline.
        let start = Instant::now();
        let busy_ticks = |w: &Watcher| {
            let table = process_table();
            tree(&table, &[sh.id() as i32])
                .iter()
                .filter_map(|pid| table.get(pid).map(|p| (pid, p.user_ticks + p.system_ticks)))
                .map(|(pid, t)| t - w.seen.get(pid).map_or(0, |s| s.user_ticks + s.system_ticks))
                .sum::<u64>()
        };
        while (busy_ticks(&w) as f64) < 0.3 * w.ticks_per_sec && start.elapsed().as_secs() < 5 {
            std::thread::yield_now();
        }
        let s = w.sample((1.0, 2.0));
        let _ = sh.kill();
        let _ = sh.wait();
        let p = &s.processes[0];
        assert_eq!(p.name, "busy");
        assert!(p.processes >= 2, "{p:?}");
        assert!(p.cpu_percent() > 10.0, "a spinning child shows up: {p:?}");
        assert!(p.rss_kib > 0 && p.threads >= 2 && p.fds >= 1, "{p:?}");
        assert!(s.generator.rss_kib > 0, "{:?}", s.generator);
        // Named by its PID and start time, as the machine knows it.
        assert_eq!(p.roots, [ProcRoot { pid: sh.id(), start_ticks: started_ticks }]);
        // barrage's CPU is what the engine threads reported, not the process's.
        assert_eq!((s.generator.cpu_user_percent, s.generator.cpu_system_percent), (1.0, 2.0));
        assert!(s.generator.roots.is_empty(), "{:?}", s.generator.roots);
        assert!(s.host.mem_total_kib > s.host.mem_used_kib && s.host.mem_used_kib > 0, "{:?}", s.host);
        assert!(s.host.cpu_percent > 0.0, "the spinning child keeps the machine busy: {:?}", s.host);
    }

    #[test]
    fn a_name_counts_the_top_of_each_family_once() {
        let mut table = HashMap::new();
        let info = |ppid, comm: &str| ProcInfo {
            ppid,
            comm: comm.into(),
            start_ticks: 0,
            user_ticks: 0,
            system_ticks: 0,
            rss_pages: 0,
            threads: 1,
        };
        table.insert(1, info(0, "init"));
        table.insert(10, info(1, "nginx"));
        table.insert(11, info(10, "nginx"));
        table.insert(12, info(10, "nginx"));
        table.insert(20, info(1, "nginx"));
        table.insert(30, info(1, "varnishd"));
        table.insert(31, info(30, "cache-main"));
        let mut r = roots(&table, &WatchTarget::Name("nginx".into()));
        r.sort();
        assert_eq!(r, [10, 20]);
        let mut t = tree(&table, &r);
        t.sort();
        assert_eq!(t, [10, 11, 12, 20]);
        let mut v = tree(&table, &roots(&table, &WatchTarget::Name("varnishd".into())));
        v.sort();
        assert_eq!(v, [30, 31]);
        assert!(tree(&table, &[99]).is_empty(), "a PID that is gone counts nothing");
    }
}
