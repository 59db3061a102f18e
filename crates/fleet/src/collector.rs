//! `barrage collect`: the shards of a split run stream their results files here as they
//! run ([`crate::reporter`]). The collector keeps a copy of each, byte for byte, and merges
//! their intervals as they come, by intended interval (the shards share one start, so
//! interval k of each is the same second of the schedule), for the fleet's live views. An
//! interval is final, and shown, when every shard still alive has passed it; a shard is
//! alive while its data keeps coming (a record a second), so a busy machine that misses a
//! heartbeat is not lost, and one whose stream stops for `--lateness` is. The end result is
//! `barrage report` of the copies: the post-run merge of the shards' own files, exactly.

use crate::protocol::{Adopt, Start, MAX_SHARDS};
use crate::server::{self, stream_file, Shard, Shared, State};
use barrage_live::{Live, RunInfo, URLS_SHOWN};
use barrage_metrics::file::{IntervalRecord, ResultsReader};
use barrage_metrics::lanes::LaneMark;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often the collector reads what came and moves the watermark.
const TICK: Duration = Duration::from_millis(200);
/// How long a collector waits for the first shard's data.
const FIRST_DATA_WITHIN: Duration = Duration::from_secs(600);

/// How a collector is set up (`barrage collect`'s flags).
#[derive(Clone, Debug)]
pub struct Config {
    /// Where shards reach it.
    pub listen: SocketAddr,
    /// N: the shards of the run.
    pub shards: u32,
    /// Its copies of the shards' files; created, must not exist.
    pub dir: PathBuf,
    /// A shard whose data stops for this long before its end is lost.
    pub lateness: Duration,
    /// `--rendezvous`: the largest clock offset a shard may have.
    pub max_clock_offset: Duration,
    /// `--rendezvous`: from the last shard ready to the start.
    pub lead: Duration,
    /// What a lost shard does to the others.
    pub on_loss: OnLoss,
}

/// What the collector does when a shard is lost (`--on-shard-loss`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnLoss {
    /// The others go on; the lost shard's share is shown as never sent.
    #[default]
    Continue,
    /// Every other shard is told to stop: the run is not the one planned.
    Abort,
    /// A survivor sends what is left of the lost shard's share from the last second it
    /// recorded: an open loop's arrivals exactly; a closed loop's workers and a scenario's
    /// groups restarted there, to their window's end. A count of a closed loop's is not
    /// taken over ([`not_adoptable`]).
    Takeover,
}

/// Why a collector could not start.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// A bad flag value.
    #[error("{0}")]
    Config(String),
    /// The directory or the listening socket. The cause is in the message, not a source
    /// as well: a one-line error says it once.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// A shard that did not end: why.
#[derive(Clone, Debug)]
pub struct Lost {
    /// I.
    pub shard: u32,
    /// What happened, for people.
    pub why: String,
}

/// What a collection ended with.
#[derive(Debug, Default)]
pub struct Collected {
    /// The copies of the shards' files that hold a run (at least a header), by shard.
    pub files: Vec<PathBuf>,
    /// The shards that never ended.
    pub lost: Vec<Lost>,
    /// Why the shards were told to stop, if they were.
    pub stopped: Option<String>,
    /// Why the start failed (a clock over budget), if it did.
    pub aborted: Option<String>,
    /// The shards refused (another plan, a second process for one shard), and why.
    pub refused: Vec<String>,
}

/// Whether the run so far must stop, and why (a fleet-wide `--slo`), asked of the copies so
/// far and those of them whose streams were judged lost.
pub type Check<'a> = dyn FnMut(&[PathBuf], &[PathBuf]) -> Option<String> + 'a;

/// A running collector: its server, and the state its loop merges from.
pub struct Collector {
    shared: Arc<Shared>,
    addr: SocketAddr,
    config: Config,
    server: Option<(tokio::sync::oneshot::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl Collector {
    /// Makes the directory and starts listening; serves `page`'s rendering of the copies so
    /// far at `/`, if given.
    pub fn start(config: Config, page: Option<crate::Render>) -> Result<Collector, CollectError> {
        if config.shards == 0 || config.shards > MAX_SHARDS {
            return Err(CollectError::Config(format!("--shards {}: give 1 to {MAX_SHARDS}", config.shards)));
        }
        // Bound first: a port in use leaves no directory behind.
        let listener = std::net::TcpListener::bind(config.listen)
            .map_err(|e| CollectError::Io(format!("--listen {}", config.listen), e))?;
        make_private_dir(&config.dir).map_err(|e| CollectError::Io(format!("--dir {}", config.dir.display()), e))?;
        let addr = listener.local_addr().map_err(|e| CollectError::Io("--listen".into(), e))?;
        listener.set_nonblocking(true).map_err(|e| CollectError::Io("--listen".into(), e))?;
        let state = State {
            n: config.shards,
            // Each shard's stream, then each one's takeover's.
            shards: (0..config.shards * 2)
                .map(|i| Shard {
                    status: crate::protocol::ShardStatus { shard: i % config.shards, ..Default::default() },
                    ..Default::default()
                })
                .collect(),
            dir: config.dir.clone(),
            stop: None,
            final_intervals: 0,
            max_offset_us: config.max_clock_offset.as_micros() as i64,
            lead: config.lead,
            files: Vec::new(),
            lost_files: Vec::new(),
            plan: None,
            refused: Vec::new(),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            start: tokio::sync::watch::channel(None).0,
            page: page.map(crate::page::Page::new),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| CollectError::Io("runtime".into(), e))?;
        let listener = {
            let _in = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(|e| CollectError::Io("--listen".into(), e))?
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let served = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("barrage-collect".into())
            .spawn(move || runtime.block_on(server::serve(listener, served, rx)))
            .map_err(|e| CollectError::Io("thread".into(), e))?;
        Ok(Collector { shared, addr, config, server: Some((tx, thread)) })
    }

    /// Where shards reach it (the port picked when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Merges as the shards stream, feeding `live` each final interval, until every shard
    /// ended or was lost. `check` is asked about the copies so far, now and then, whether
    /// the run must stop (a fleet-wide `--slo`): its answer is told to every shard. `stop`
    /// (Ctrl-C) tells every shard to stop.
    pub fn collect(&mut self, live: &mut Live, check: &mut Check<'_>, stop: &CancellationToken) -> Collected {
        let mut merge = Merge::new(self.config.shards as usize * 2);
        let began = Instant::now();
        let mut checked = Instant::now();
        loop {
            std::thread::sleep(TICK);
            if stop.is_cancelled() {
                self.shared.lock().stop.get_or_insert_with(|| "the collector was stopped".into());
            }
            merge.read(&self.shared, live);
            self.judge(&mut merge);
            merge.finalize(&self.shared, live);
            let elapsed = began.elapsed();
            if merge.shown > 0 && checked.elapsed() >= Duration::from_secs(5).max(elapsed / 10) {
                checked = Instant::now();
                let lost = self.shared.lock().lost_files.clone();
                if let Some(why) = check(&merge.files(), &lost) {
                    self.shared.lock().stop.get_or_insert(why);
                }
            }
            if let Some(done) = self.done(&merge, began) {
                return done;
            }
        }
    }

    /// Marks lost the streams whose data stopped (or never came) for longer than the
    /// lateness bound, and does what `--on-shard-loss` says.
    fn judge(&self, merge: &mut Merge) {
        let mut state = self.shared.lock();
        let n = state.n as usize;
        let lateness = self.config.lateness;
        let aborted = matches!(*self.shared.start.borrow(), Some(Start::Abort(_)));
        let first = state.shards[..n].iter().filter_map(|s| s.first_data).min().filter(|_| !aborted);
        let mut newly = Vec::new();
        for (i, s) in state.shards.iter_mut().enumerate() {
            if s.status.finished || s.status.lost {
                continue;
            }
            let why = if i < n { silence(s, first, lateness) } else { takeover_silence(s, lateness) };
            if let Some(why) = why {
                s.status.lost = true;
                newly.push((i, why));
            }
        }
        for (i, why) in newly {
            let header = merge.readers[i].as_ref().map(|r| r.header());
            let refused = header.and_then(not_adoptable);
            // An open loop's share is a pure function of the arrivals' numbers: where each of
            // its threads left its lane says exactly what is left of it.
            // (Checked: a shard may post anything.)
            let lanes =
                merge.readers[i].as_ref().and_then(|r| r.lanes()).filter(|l| barrage_metrics::lanes::check(l).is_ok());
            let after = lanes.filter(|_| header.is_some_and(|h| h.groups.is_empty())).map(<[_]>::to_vec);
            state.lost_files.extend(merge.paths[i].clone());
            let lost = self.lose(&mut state, i, why, refused, after);
            merge.lost.push(lost);
        }
    }

    /// Stream `i` was lost for `why`: what follows, said; `refused`: why its share cannot
    /// be taken over, if it cannot; `after`: where an open loop's threads left their lanes.
    fn lose(
        &self,
        state: &mut State,
        i: usize,
        why: String,
        refused: Option<&str>,
        after: Option<Vec<LaneMark>>,
    ) -> Lost {
        let n = state.n as usize;
        let shard = (i % n) as u32;
        let why = match (i < n, self.config.on_loss) {
            (false, _) => format!("its takeover: {why}"),
            (true, OnLoss::Abort) => {
                state.stop.get_or_insert(format!("shard {shard}/{n} was lost (--on-shard-loss abort): {why}"));
                why
            }
            (true, OnLoss::Takeover) => match refused {
                Some(no) => format!("{why}; its share cannot be taken over: {no}"),
                None => match adopt(state, shard, after.clone()) {
                    Some((by, from)) => match after {
                        Some(lanes) => {
                            format!("{why}; shard {by}/{n} takes over its share{}", after_lanes(&lanes, from))
                        }
                        None => format!("{why}; shard {by}/{n} takes over its share from second {from}"),
                    },
                    None => format!("{why}; no shard is left to take over its share"),
                },
            },
            (true, OnLoss::Continue) => why,
        };
        Lost { shard, why }
    }

    fn done(&self, merge: &Merge, began: Instant) -> Option<Collected> {
        let state = self.shared.lock();
        let aborted = match &*self.shared.start.borrow() {
            Some(Start::Abort(why)) => Some(why.clone()),
            _ => None,
        };
        let n = state.n as usize;
        // Every shard, and every takeover asked for, ended or was lost.
        let ended = state
            .shards
            .iter()
            .enumerate()
            .all(|(i, s)| s.status.finished || s.status.lost || (i >= n && s.asked.is_none()));
        let nobody = state.shards.iter().all(|s| s.first_data.is_none())
            && (began.elapsed() > FIRST_DATA_WITHIN || state.stop.is_some() || aborted.is_some());
        if !ended && !nobody {
            return None;
        }
        let mut lost = merge.lost.clone();
        if nobody {
            let why = match (&aborted, &state.stop) {
                (Some(a), _) => format!("no start: {a}"),
                (None, Some(stop)) => format!("it sent no data before {stop}"),
                (None, None) => format!("no shard sent data within {FIRST_DATA_WITHIN:?}"),
            };
            lost = (0..self.config.shards).map(|shard| Lost { shard, why: why.clone() }).collect();
        }
        let (stopped, refused) = (state.stop.clone(), state.refused.clone());
        Some(Collected { files: merge.files(), lost, stopped, aborted, refused })
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some((tx, thread)) = self.server.take() {
            let _ = tx.send(());
            let _ = thread.join();
        }
    }
}

/// Why a shard's stream counts as lost: its data stopped for `lateness`, or none came
/// within `lateness` of the `first` shard's.
fn silence(s: &Shard, first: Option<Instant>, lateness: Duration) -> Option<String> {
    match (s.last_data, first) {
        (Some(last), _) if last.elapsed() > lateness => Some(format!(
            "its data stopped {:.1} s ago, after interval {}",
            last.elapsed().as_secs_f64(),
            s.status.last_interval.map_or("none".into(), |k| k.to_string())
        )),
        (None, Some(f)) if f.elapsed() > lateness => {
            Some(format!("it sent nothing within {:.0} s of the first shard's data", lateness.as_secs_f64()))
        }
        _ => None,
    }
}

/// Why a takeover's stream counts as lost: it never began (a process to start, a plan to
/// make: twice the lateness and 5 s), or its data stopped.
fn takeover_silence(s: &Shard, lateness: Duration) -> Option<String> {
    match (s.asked, s.last_data) {
        (Some(asked), None) if asked.elapsed() > lateness * 2 + Duration::from_secs(5) => {
            Some(format!("it sent nothing within {:.0} s of being asked", asked.elapsed().as_secs_f64()))
        }
        (_, Some(last)) if last.elapsed() > lateness => {
            Some(format!("its data stopped {:.1} s ago", last.elapsed().as_secs_f64()))
        }
        _ => None,
    }
}

/// What a takeover of an open loop's share sends, said: after the arrivals the lost shard
/// recorded, those it had in flight again, and those it had in flight beyond the listed.
fn after_lanes(lanes: &[LaneMark], from: u32) -> String {
    let (again, unlisted) = barrage_metrics::lanes::in_flight(lanes);
    let mut said =
        format!(" after the {} arrivals it recorded (second {from})", barrage_metrics::lanes::recorded(lanes));
    if again > 0 {
        said.push_str(&format!(", sending again the {again} it had in flight"));
    }
    if unlisted > 0 {
        said.push_str(&format!(
            "; {unlisted} more it had in flight are not sent again (more than {} listed)",
            barrage_metrics::lanes::MAX_FLYING
        ));
    }
    said
}

/// Why a lost shard's share cannot be taken over, by its results file's header: a closed
/// loop's count (`-n`, a group's `iterations`), of which what its workers sent after its
/// last record (up to a second's worth, and what they had in flight) is not known, so no
/// survivor can send exactly the rest; or no start its shards shared (`--start-at`,
/// `--rendezvous`), without which its schedule is not a survivor's.
pub fn not_adoptable(h: &barrage_metrics::file::RunHeader) -> Option<&'static str> {
    let settings: serde_json::Value = serde_json::from_str(&h.settings_json).unwrap_or_default();
    let counted = !settings["plan"]["requests"].is_null();
    if h.mode == barrage_metrics::file::Mode::Closed && counted && h.groups.is_empty() {
        return Some(
            "a closed loop's count (-n): what its workers sent after its last record is not known, so no survivor can send exactly the rest; the rest of its part is shown as never sent",
        );
    }
    if h.groups.iter().any(|g| g.iterations.is_some()) {
        return Some(
            "its groups count each worker's flows (iterations): what its workers ran after its last record is not known, so no survivor can run exactly the rest",
        );
    }
    h.launch.start_at_unix_us.is_none().then_some("its shards shared no start (--start-at or --rendezvous)")
}

/// Asks the first shard still sending to take over lost shard `lost`'s share from the last
/// second it recorded (an open loop's: after the `after` arrivals it recorded); which, and
/// from when.
fn adopt(state: &mut State, lost: u32, after: Option<Vec<LaneMark>>) -> Option<(u32, u32)> {
    let n = state.n as usize;
    let from_s = state.shards[lost as usize].status.last_interval.unwrap_or(0);
    let by = (0..n).find(|&i| {
        let s = &state.shards[i];
        i != lost as usize && !s.status.finished && !s.status.lost && s.first_data.is_some()
    })?;
    state.shards[by].adopt = Some(Adopt { shard: lost, from_s, after });
    state.shards[n + lost as usize].asked = Some(Instant::now());
    Some((by as u32, from_s))
}

/// Makes `dir`, the user's alone, or takes an empty directory of the user's that is there
/// (a volume's mount point) and makes it theirs alone; refuses anything else (another run's
/// copies, a link, a path someone else planted).
fn make_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(dir)?;
            // SAFETY: geteuid has no preconditions and cannot fail.
            let mine = m.uid() == unsafe { libc::geteuid() };
            if !m.is_dir() || !mine || std::fs::read_dir(dir)?.next().is_some() {
                return Err(std::io::Error::new(
                    e.kind(),
                    "there already, and not an empty directory of yours: give a new one",
                ));
            }
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
        made => made,
    }
}

/// The intervals received, merged once final.
struct Merge {
    readers: Vec<Option<ResultsReader>>,
    paths: Vec<Option<PathBuf>>,
    /// Intervals not yet final: by index, each shard's.
    pending: BTreeMap<u32, Vec<Option<IntervalRecord>>>,
    lost: Vec<Lost>,
    shown: u32,
    /// The index after the last interval shown: a takeover's intervals before it (empty:
    /// its schedule began in the past) are in its file, and not shown again.
    next: u32,
    begun: bool,
}

impl Merge {
    fn new(n: usize) -> Merge {
        Merge {
            readers: (0..n).map(|_| None).collect(),
            paths: vec![None; n],
            pending: BTreeMap::new(),
            lost: Vec::new(),
            shown: 0,
            next: 0,
            begun: false,
        }
    }

    fn files(&self) -> Vec<PathBuf> {
        self.paths.iter().flatten().cloned().collect()
    }

    /// Reads each copy's new intervals into `pending`.
    fn read(&mut self, shared: &Shared, live: &mut Live) {
        let streams = self.readers.len();
        let (dir, n, received): (PathBuf, u32, Vec<bool>) = {
            let state = shared.lock();
            (state.dir.clone(), state.n, state.shards.iter().map(|s| s.bytes > 0).collect())
        };
        for (i, received) in received.into_iter().enumerate() {
            if self.readers[i].is_none() && received {
                // The header may not all be there yet: tried again next time.
                if let Ok(r) = ResultsReader::open(&stream_file(&dir, i as u32, n)) {
                    if !self.begun {
                        self.begun = true;
                        live.begin(info(r.header(), n as usize));
                    }
                    self.paths[i] = Some(r.path().to_path_buf());
                    self.readers[i] = Some(r);
                    shared.lock().files = self.files();
                }
            }
            let Some(r) = self.readers[i].as_mut() else { continue };
            let mut last = None;
            while let Some(interval) = r.next_interval() {
                let k = interval.index;
                last = Some(k);
                if k >= self.next {
                    self.pending.entry(k).or_insert_with(|| vec![None; streams])[i] = Some(interval);
                }
            }
            let finished = r.footer().is_some();
            let mut state = shared.lock();
            let status = &mut state.shards[i].status;
            if let Some(k) = last {
                status.last_interval = Some(k);
            }
            status.finished |= finished;
        }
    }

    /// Shows, in order, every pending interval each shard still alive has passed (and each
    /// takeover that began).
    fn finalize(&mut self, shared: &Shared, live: &mut Live) {
        loop {
            let Some((&k, _)) = self.pending.first_key_value() else { return };
            let passed = {
                let state = shared.lock();
                let n = state.n as usize;
                state.shards.iter().enumerate().all(|(i, s)| {
                    let st = &s.status;
                    (i >= n && s.first_data.is_none())
                        || st.finished
                        || st.lost
                        || st.last_interval.is_some_and(|last| last > k)
                })
            };
            if !passed {
                return;
            }
            let parts = self.pending.remove(&k).expect("the first key");
            if let Some(merged) = merged(parts) {
                live.interval(merged);
            }
            self.shown += 1;
            self.next = k + 1;
            shared.lock().final_intervals = self.shown;
        }
    }
}

/// The shards' copies of one interval as one.
fn merged(parts: Vec<Option<IntervalRecord>>) -> Option<IntervalRecord> {
    let mut parts = parts.into_iter().flatten();
    let mut first = parts.next()?;
    // The machines differ: no one machine's CPU and processes stand for the fleet.
    first.watch = None;
    for p in parts {
        first.length_ms = first.length_ms.max(p.length_ms);
        first.recorder.add(&p.recorder);
    }
    Some(first)
}

fn info(h: &barrage_metrics::RunHeader, n: usize) -> RunInfo {
    RunInfo {
        label: Some(format!("fleet of {n} shard(s)")),
        urls: h.urls.iter().take(URLS_SHOWN).cloned().collect(),
        url_count: h.urls.len(),
        ..Default::default()
    }
}
