//! A shard's results file streamed to the collector (`run --report-to`): every record the
//! run writes goes into a queue, and a thread of its own posts the queue, whole records at a
//! time, off the engine's threads. A post the collector did not take is sent again from
//! what it says it has; the run itself never waits for the collector.

use crate::client::Client;
use crate::protocol::{Ack, Adopt, BATCH_BYTES};
use barrage_metrics::file::{Mirror, StoppedBy};
use bytes::Bytes;
use http::{Method, StatusCode};
use std::collections::VecDeque;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often the queue is posted (a run writes a record a second).
const POST_EVERY: Duration = Duration::from_millis(250);
/// How long the end of a run waits for the collector to take the rest.
const FLUSH_FOR: Duration = Duration::from_secs(15);
/// The most bytes queued for a collector that does not take them: past it the stream is
/// given up (the run's own file is whole), so a dead collector costs no more memory.
const QUEUE_BYTES: usize = 256 << 20;

/// Why a post did not go through: for now (tried again), or for good.
enum Failure {
    /// The collector could not be reached, or failed: tried again.
    Unreachable(String),
    /// The collector refused the stream, or lost what it had taken: reporting ends.
    Refused(String),
}

enum Message {
    Record(Vec<u8>),
    End,
}

/// How a shard starts a takeover of a lost shard's share: the command that sends it (the
/// shard's own, for the other shard from the second given), made by the binary, which
/// knows its flags, and the results file it keeps, if the shard keeps its own.
pub type Takeover = Box<dyn Fn(Adopt) -> (std::process::Command, Option<std::path::PathBuf>) + Send>;

/// Which stream of a shard a run is: its own (0) or its takeover (1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The shard's own run.
    Own,
    /// A survivor's run of what was left of the shard's share.
    Takeover,
}

/// Which stream a run sends: its shard, its part, its process's token and its plan's
/// digest (the collector refuses a second process for one stream, and another plan).
#[derive(Clone, Debug)]
pub struct Who {
    /// I and N of `--shard I/N`.
    pub shard: (u32, u32),
    /// The shard's own run, or its takeover.
    pub part: Part,
    /// The process's token.
    pub run: String,
    /// The plan's digest.
    pub plan: String,
}

/// How a stream ended.
#[derive(Debug, Default)]
pub struct Ended {
    /// The collector refused the shard, and why: the run was stopped at once.
    pub refused: Option<String>,
    /// The collector told the run to stop, and why.
    pub stopped: Option<String>,
    /// Why not all of the stream reached the collector, if it did not.
    pub short: Option<String>,
}

/// The thread that streams one run.
pub struct Reporter {
    tx: mpsc::Sender<Message>,
    thread: std::thread::JoinHandle<Ended>,
}

impl Reporter {
    /// Starts streaming `who` to `client`'s collector: the mirror to hand the run's results
    /// writer. A collector's stop, or its refusal of the shard, cancels `stop` (a stop said
    /// first in `stopped_by`, for the results file); its request to take over a lost
    /// shard's share starts `takeover`'s command (once per lost shard), which the reporter
    /// waits for before it ends.
    pub fn start(
        client: Client,
        who: Who,
        takeover: Option<Takeover>,
        stop: CancellationToken,
        stopped_by: StoppedBy,
    ) -> std::io::Result<(Reporter, Mirror)> {
        let (tx, rx) = mpsc::channel();
        let sender = tx.clone();
        let mirror = Mirror(Arc::new(move |bytes: &[u8]| {
            let _ = sender.send(Message::Record(bytes.to_vec()));
        }));
        let thread = std::thread::Builder::new().name("barrage-report-to".into()).spawn(move || {
            let mut stream = Stream {
                client,
                who,
                stop,
                stopped_by,
                warned: false,
                queue: VecDeque::new(),
                queued: 0,
                sent: 0,
                takeover,
                adopted: Vec::new(),
                ended: Ended::default(),
            };
            stream.ended.short = stream.run(rx).err();
            stream.wait_for_takeovers();
            stream.ended
        })?;
        Ok((Reporter { tx, thread }, mirror))
    }

    /// The run ended: posts what is left (for at most [`FLUSH_FOR`]); how the stream ended.
    pub fn finish(self) -> Ended {
        let _ = self.tx.send(Message::End);
        self.thread
            .join()
            .unwrap_or_else(|_| Ended { short: Some("the reporting thread panicked".into()), ..Ended::default() })
    }
}

struct Stream {
    client: Client,
    who: Who,
    stop: CancellationToken,
    /// Said before `stop` is cancelled: the run's results file keeps it.
    stopped_by: StoppedBy,
    /// The collector was said to be unreachable.
    warned: bool,
    /// Records not yet taken by the collector, in order.
    queue: VecDeque<Vec<u8>>,
    queued: usize,
    /// Bytes the collector has: the offset of the queue's first record.
    sent: u64,
    takeover: Option<Takeover>,
    /// The takeovers started: the lost shard and its process.
    adopted: Vec<(u32, std::process::Child, Option<std::path::PathBuf>)>,
    ended: Ended,
}

impl Stream {
    fn run(&mut self, rx: mpsc::Receiver<Message>) -> Result<(), String> {
        let mut ending: Option<Instant> = None;
        let mut failure = None;
        loop {
            match rx.recv_timeout(POST_EVERY) {
                Ok(Message::Record(r)) => self.push(r),
                Ok(Message::End) | Err(RecvTimeoutError::Disconnected) => ending = ending.or(Some(Instant::now())),
                Err(RecvTimeoutError::Timeout) => {}
            }
            while let Ok(m) = rx.try_recv() {
                match m {
                    Message::Record(r) => self.push(r),
                    Message::End => ending = ending.or(Some(Instant::now())),
                }
            }
            if self.queued > QUEUE_BYTES {
                return Err(format!(
                    "the collector at {} took none of the last {} MiB: no longer reporting to it",
                    self.client.base(),
                    QUEUE_BYTES >> 20
                ));
            }
            // The first post holds the header with the file's start (magic and version,
            // mirrored on their own): the collector checks the shard's plan by it.
            let header_due = self.sent == 0 && self.queue.len() < 2 && ending.is_none();
            if !self.queue.is_empty() && !header_due {
                failure = match self.post() {
                    Ok(()) => None,
                    // Refused (another plan, a second process for this shard, a shard it
                    // does not know, not a collector): the run stops at once, and its one
                    // error line says why: a shard of a fleet whose collector will not have
                    // it is not a part of the run planned.
                    Err(Failure::Refused(why)) => {
                        self.stopped_by
                            .say(&format!("the collector at {} refused this shard: {why}", self.client.base()));
                        self.ended.refused = Some(why);
                        self.stop.cancel();
                        return Ok(());
                    }
                    Err(Failure::Unreachable(why)) => {
                        // Said once, at once: the run goes on, its file kept, and the
                        // posts are tried again.
                        if failure.is_none() && !self.warned {
                            self.warned = true;
                            eprintln!(
                                "barrage: --report-to: cannot reach the collector at {} ({why}); the run goes on, its results file is kept, and posting is tried again",
                                self.client.base()
                            );
                        }
                        Some(why)
                    }
                };
            }
            match ending {
                Some(_) if self.queue.is_empty() => return Ok(()),
                Some(since) if since.elapsed() > FLUSH_FOR => {
                    return Err(format!(
                        "{} bytes of the results never reached the collector: {}",
                        self.queued,
                        failure.unwrap_or_default()
                    ));
                }
                Some(_) if failure.is_some() => std::thread::sleep(POST_EVERY),
                _ => {}
            }
        }
    }

    fn push(&mut self, record: Vec<u8>) {
        self.queued += record.len();
        self.queue.push_back(record);
    }

    /// Posts the queue's first records (whole ones, up to [`BATCH_BYTES`]); drops what the
    /// collector says it has.
    fn post(&mut self) -> Result<(), Failure> {
        let mut body = Vec::new();
        for r in &self.queue {
            if !body.is_empty() && body.len() + r.len() > BATCH_BYTES {
                break;
            }
            body.extend_from_slice(r);
        }
        let part = match self.who.part {
            Part::Own => 0,
            Part::Takeover => 1,
        };
        let (i, n, at, run, plan) = (self.who.shard.0, self.who.shard.1, self.sent, &self.who.run, &self.who.plan);
        let path = format!("/v1/data?shard={i}&shards={n}&offset={at}&part={part}&run={run}&plan={plan}");
        let sent = self.client.send(Method::POST, &path, Bytes::from(body));
        let (status, answer) = sent.map_err(|e| Failure::Unreachable(e.to_string()))?;
        let asked = "a shard's results (POST /v1/data)";
        let said = |other: StatusCode| Client::refusal(other, &answer, asked);
        let ack: Ack = match status {
            StatusCode::OK | StatusCode::CONFLICT => serde_json::from_slice(&answer).map_err(|_| {
                Failure::Refused(format!(
                    "it answers {status} to {asked} without a collector's acknowledgement: not a barrage collector"
                ))
            })?,
            other if other.is_client_error() => return Err(Failure::Refused(said(other))),
            other => return Err(Failure::Unreachable(said(other))),
        };
        self.taken(ack.have).map_err(Failure::Refused)?;
        if let Some(adopt) = ack.adopt {
            self.adopt(adopt);
        }
        if let Some(why) = ack.stop {
            if self.ended.stopped.is_none() && !self.stop.is_cancelled() {
                eprintln!("barrage: the collector stopped the run: {why}");
                self.stopped_by.say(&format!("the collector: {why}"));
                self.ended.stopped = Some(why);
                self.stop.cancel();
            }
        }
        Ok(())
    }

    /// Starts the takeover of `a`'s share, once.
    fn adopt(&mut self, a: Adopt) {
        let Some(command) = &self.takeover else { return };
        if self.stop.is_cancelled() || self.adopted.iter().any(|(shard, ..)| *shard == a.shard) {
            return;
        }
        let (shard, from_s) = (a.shard, a.from_s);
        let (mut command, file) = command(a);
        match command.spawn() {
            Ok(child) => {
                eprintln!("barrage: taking over shard {shard}/{}'s share from second {from_s}", self.who.shard.1);
                self.adopted.push((shard, child, file));
            }
            Err(e) => eprintln!("barrage: cannot take over shard {shard}/{}: {e}", self.who.shard.1),
        }
    }

    /// Waits for the takeovers started: each ends with the run's schedule.
    fn wait_for_takeovers(&mut self) {
        let n = self.who.shard.1;
        for (shard, mut child, file) in self.adopted.drain(..) {
            match child.wait() {
                // Its file is a part of the run: a merge by hand needs it too.
                Ok(status) if status.success() => match file {
                    Some(f) => eprintln!(
                        "barrage: took over shard {shard}/{n}'s share; its results are in {}: `barrage report` over the shards' files and it gives the whole",
                        f.display()
                    ),
                    None => eprintln!("barrage: took over shard {shard}/{n}'s share (its results went to the collector)"),
                },
                Ok(status) => {
                    eprintln!("barrage: the takeover of shard {shard}/{n} ended with {status}")
                }
                Err(e) => eprintln!("barrage: the takeover of shard {shard}/{n}: {e}"),
            }
        }
    }

    /// The collector has `have` bytes: drops the records it holds.
    fn taken(&mut self, have: u64) -> Result<(), String> {
        if have < self.sent {
            return Err(format!("the collector lost data it had taken (it has {have} bytes, it took {})", self.sent));
        }
        while let Some(r) = self.queue.front() {
            if self.sent + r.len() as u64 > have {
                break;
            }
            self.sent += r.len() as u64;
            self.queued -= r.len();
            self.queue.pop_front();
        }
        if have > self.sent {
            return Err(format!("the collector has {have} bytes, inside a record at {}", self.sent));
        }
        Ok(())
    }
}
