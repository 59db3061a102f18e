//! `barrage collect`: the shards of a split run stream their results files here as they
//! run ([`crate::reporter`]). The collector keeps a copy of each, byte for byte, and merges
//! their intervals as they come, by intended interval (the shards share one start, so
//! interval k of each is the same second of the schedule), for the fleet's live views. An
//! interval is final, and shown, when every shard still alive has passed it; a shard is
//! alive while its data keeps coming (a record a second), so a busy machine that misses a
//! heartbeat is not lost, and one whose stream stops for `--lateness` is. The end result is
//! `barrage report` of the copies: the post-run merge of the shards' own files, exactly.

use crate::protocol::{Start, MAX_SHARDS};
use crate::server::{self, shard_file, Shard, Shared, State};
use barrage_live::{Live, RunInfo, URLS_SHOWN};
use barrage_metrics::file::{IntervalRecord, ResultsReader};
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
}

/// Why a collector could not start.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// A bad flag value.
    #[error("{0}")]
    Config(String),
    /// The directory or the listening socket.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
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
}

/// A running collector: its server, and the state its loop merges from.
pub struct Collector {
    shared: Arc<Shared>,
    addr: SocketAddr,
    config: Config,
    server: Option<(tokio::sync::oneshot::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl Collector {
    /// Makes the directory and starts listening.
    pub fn start(config: Config) -> Result<Collector, CollectError> {
        if config.shards == 0 || config.shards > MAX_SHARDS {
            return Err(CollectError::Config(format!("--shards {}: give 1 to {MAX_SHARDS}", config.shards)));
        }
        make_private_dir(&config.dir).map_err(|e| CollectError::Io(format!("--dir {}", config.dir.display()), e))?;
        let listener = std::net::TcpListener::bind(config.listen)
            .map_err(|e| CollectError::Io(format!("--listen {}", config.listen), e))?;
        let addr = listener.local_addr().map_err(|e| CollectError::Io("--listen".into(), e))?;
        listener.set_nonblocking(true).map_err(|e| CollectError::Io("--listen".into(), e))?;
        let state = State {
            shards: (0..config.shards)
                .map(|i| Shard {
                    status: crate::protocol::ShardStatus { shard: i, ..Default::default() },
                    ..Default::default()
                })
                .collect(),
            dir: config.dir.clone(),
            stop: None,
            final_intervals: 0,
            max_offset_us: config.max_clock_offset.as_micros() as i64,
            lead: config.lead,
        };
        let shared = Arc::new(Shared { state: Mutex::new(state), start: tokio::sync::watch::channel(None).0 });
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
    pub fn collect(
        &mut self,
        live: &mut Live,
        check: &mut dyn FnMut(&[PathBuf]) -> Option<String>,
        stop: &CancellationToken,
    ) -> Collected {
        let mut merge = Merge::new(self.config.shards as usize);
        let began = Instant::now();
        let mut checked = Instant::now();
        loop {
            std::thread::sleep(TICK);
            if stop.is_cancelled() {
                self.shared.lock().stop.get_or_insert_with(|| "the collector was stopped".into());
            }
            merge.read(&self.shared, live);
            self.judge(&mut merge);
            merge.finalize(&self.shared, live, self.config.shards as usize);
            let elapsed = began.elapsed();
            if merge.shown > 0 && checked.elapsed() >= Duration::from_secs(5).max(elapsed / 10) {
                checked = Instant::now();
                if let Some(why) = check(&merge.files()) {
                    self.shared.lock().stop.get_or_insert(why);
                }
            }
            if let Some(done) = self.done(&merge, began) {
                return done;
            }
        }
    }

    /// Marks lost the shards whose data stopped (or never came) for longer than the
    /// lateness bound.
    fn judge(&self, merge: &mut Merge) {
        let mut state = self.shared.lock();
        let lateness = self.config.lateness;
        let start = self.shared.start.borrow().clone();
        let first = state.shards.iter().filter_map(|s| s.first_data).min();
        let mut stop = None;
        for (i, s) in state.shards.iter_mut().enumerate() {
            if s.status.finished || s.status.lost {
                continue;
            }
            let why = match (s.last_data, first) {
                (Some(last), _) if last.elapsed() > lateness => Some(format!(
                    "its data stopped {:.1} s ago, after interval {}",
                    last.elapsed().as_secs_f64(),
                    s.status.last_interval.map_or("none".into(), |k| k.to_string())
                )),
                (None, Some(f)) if f.elapsed() > lateness && !matches!(start, Some(Start::Abort(_))) => {
                    Some(format!("it sent nothing within {:.0} s of the first shard's data", lateness.as_secs_f64()))
                }
                _ => None,
            };
            if let Some(why) = why {
                s.status.lost = true;
                if self.config.on_loss == OnLoss::Abort && stop.is_none() {
                    stop = Some(format!("shard {i} was lost (--on-shard-loss abort): {why}"));
                }
                merge.lost.push(Lost { shard: i as u32, why });
            }
        }
        if let Some(why) = stop {
            state.stop.get_or_insert(why);
        }
    }

    fn done(&self, merge: &Merge, began: Instant) -> Option<Collected> {
        let state = self.shared.lock();
        let aborted = match &*self.shared.start.borrow() {
            Some(Start::Abort(why)) => Some(why.clone()),
            _ => None,
        };
        let ended = state.shards.iter().all(|s| s.status.finished || s.status.lost);
        let nobody = state.shards.iter().all(|s| s.first_data.is_none())
            && (began.elapsed() > FIRST_DATA_WITHIN || state.stop.is_some() || aborted.is_some());
        if !ended && !nobody {
            return None;
        }
        let mut lost = merge.lost.clone();
        if nobody {
            let why = aborted
                .clone()
                .map_or(format!("no shard sent data within {FIRST_DATA_WITHIN:?}"), |a| format!("no start: {a}"));
            lost = (0..self.config.shards).map(|shard| Lost { shard, why: why.clone() }).collect();
        }
        Some(Collected { files: merge.files(), lost, stopped: state.stop.clone(), aborted })
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

/// Makes `dir`, the user's alone; refuses one that exists (another run's copies, or a path
/// someone planted).
fn make_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

/// The intervals received, merged once final.
struct Merge {
    readers: Vec<Option<ResultsReader>>,
    paths: Vec<Option<PathBuf>>,
    /// Intervals not yet final: by index, each shard's.
    pending: BTreeMap<u32, Vec<Option<IntervalRecord>>>,
    lost: Vec<Lost>,
    shown: u32,
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
            begun: false,
        }
    }

    fn files(&self) -> Vec<PathBuf> {
        self.paths.iter().flatten().cloned().collect()
    }

    /// Reads each copy's new intervals into `pending`.
    fn read(&mut self, shared: &Shared, live: &mut Live) {
        let n = self.readers.len();
        let (dir, received): (PathBuf, Vec<bool>) = {
            let state = shared.lock();
            (state.dir.clone(), state.shards.iter().map(|s| s.bytes > 0).collect())
        };
        for (i, received) in received.into_iter().enumerate() {
            if self.readers[i].is_none() && received {
                // The header may not all be there yet: tried again next time.
                if let Ok(r) = ResultsReader::open(&shard_file(&dir, i as u32)) {
                    if !self.begun {
                        self.begun = true;
                        live.begin(info(r.header(), n));
                    }
                    self.paths[i] = Some(r.path().to_path_buf());
                    self.readers[i] = Some(r);
                }
            }
            let Some(r) = self.readers[i].as_mut() else { continue };
            let mut last = None;
            while let Some(interval) = r.next_interval() {
                let k = interval.index;
                last = Some(k);
                self.pending.entry(k).or_insert_with(|| vec![None; n])[i] = Some(interval);
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

    /// Shows, in order, every pending interval each shard still alive has passed.
    fn finalize(&mut self, shared: &Shared, live: &mut Live, n: usize) {
        loop {
            let Some((&k, _)) = self.pending.first_key_value() else { return };
            let passed = {
                let state = shared.lock();
                (0..n).all(|i| {
                    let s = &state.shards[i].status;
                    s.finished || s.lost || s.last_interval.is_some_and(|last| last > k)
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
