//! A shard's results file streamed to the collector (`run --report-to`): every record the
//! run writes goes into a queue, and a thread of its own posts the queue, whole records at a
//! time, off the engine's threads. A post the collector did not take is sent again from
//! what it says it has; the run itself never waits for the collector.

use crate::client::Client;
use crate::protocol::{Ack, Adopt, BATCH_BYTES};
use barrage_metrics::file::Mirror;
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
/// knows its flags.
pub type Takeover = Box<dyn Fn(Adopt) -> std::process::Command + Send>;

/// Which stream of a shard a run is: its own (0) or its takeover (1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The shard's own run.
    Own,
    /// A survivor's run of what was left of the shard's share.
    Takeover,
}

/// The thread that streams one run.
pub struct Reporter {
    tx: mpsc::Sender<Message>,
    thread: std::thread::JoinHandle<Result<(), String>>,
}

impl Reporter {
    /// Starts streaming shard `shard` (I, N) to `client`'s collector: the mirror to hand the
    /// run's results writer. A collector's stop cancels `stop`; its request to take over a
    /// lost shard's share starts `takeover`'s command (once per lost shard), which the
    /// reporter waits for before it ends.
    pub fn start(
        client: Client,
        shard: (u32, u32),
        part: Part,
        takeover: Option<Takeover>,
        stop: CancellationToken,
    ) -> std::io::Result<(Reporter, Mirror)> {
        let (tx, rx) = mpsc::channel();
        let sender = tx.clone();
        let mirror = Mirror(Arc::new(move |bytes: &[u8]| {
            let _ = sender.send(Message::Record(bytes.to_vec()));
        }));
        let thread = std::thread::Builder::new().name("barrage-report-to".into()).spawn(move || {
            let mut stream = Stream {
                client,
                shard,
                part,
                stop,
                queue: VecDeque::new(),
                queued: 0,
                sent: 0,
                takeover,
                adopted: Vec::new(),
            };
            let streamed = stream.run(rx);
            stream.wait_for_takeovers();
            streamed
        })?;
        Ok((Reporter { tx, thread }, mirror))
    }

    /// The run ended: posts what is left (for at most [`FLUSH_FOR`]); why not all of it
    /// reached the collector, if it did not.
    pub fn finish(self) -> Result<(), String> {
        let _ = self.tx.send(Message::End);
        self.thread.join().unwrap_or_else(|_| Err("the reporting thread panicked".into()))
    }
}

struct Stream {
    client: Client,
    shard: (u32, u32),
    part: Part,
    stop: CancellationToken,
    /// Records not yet taken by the collector, in order.
    queue: VecDeque<Vec<u8>>,
    queued: usize,
    /// Bytes the collector has: the offset of the queue's first record.
    sent: u64,
    takeover: Option<Takeover>,
    /// The takeovers started: the lost shard and its process.
    adopted: Vec<(u32, std::process::Child)>,
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
            if !self.queue.is_empty() {
                failure = match self.post() {
                    Ok(()) => None,
                    // Refused (not this run's collector, a shard it does not know): said
                    // at once, not after the run; the run goes on without it.
                    Err(Failure::Refused(why)) => {
                        eprintln!(
                            "barrage: --report-to: the collector at {} refused the results: {why}",
                            self.client.base()
                        );
                        return Ok(());
                    }
                    Err(Failure::Unreachable(why)) => Some(why),
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
        let part = match self.part {
            Part::Own => 0,
            Part::Takeover => 1,
        };
        let path = format!("/v1/data?shard={}&shards={}&offset={}&part={part}", self.shard.0, self.shard.1, self.sent);
        let sent = self.client.send(Method::POST, &path, Bytes::from(body));
        let (status, answer) = sent.map_err(|e| Failure::Unreachable(e.to_string()))?;
        let said = |other: StatusCode| {
            let said: serde_json::Value = serde_json::from_slice(&answer).unwrap_or_default();
            said["error"].as_str().map(str::to_string).unwrap_or_else(|| other.to_string())
        };
        let ack: Ack = match status {
            StatusCode::OK | StatusCode::CONFLICT => serde_json::from_slice(&answer)
                .map_err(|e| Failure::Refused(format!("an answer that is not ours: {e}")))?,
            other if other.is_client_error() => return Err(Failure::Refused(said(other))),
            other => return Err(Failure::Unreachable(said(other))),
        };
        self.taken(ack.have).map_err(Failure::Refused)?;
        if let Some(adopt) = ack.adopt {
            self.adopt(adopt);
        }
        if let Some(why) = ack.stop {
            if !self.stop.is_cancelled() {
                eprintln!("barrage: the collector stopped the run: {why}");
                self.stop.cancel();
            }
        }
        Ok(())
    }

    /// Starts the takeover of `a`'s share, once.
    fn adopt(&mut self, a: Adopt) {
        let Some(command) = &self.takeover else { return };
        if self.stop.is_cancelled() || self.adopted.iter().any(|(shard, _)| *shard == a.shard) {
            return;
        }
        match command(a).spawn() {
            Ok(child) => {
                eprintln!("barrage: taking over shard {}/{}'s share from second {}", a.shard, self.shard.1, a.from_s);
                self.adopted.push((a.shard, child));
            }
            Err(e) => eprintln!("barrage: cannot take over shard {}/{}: {e}", a.shard, self.shard.1),
        }
    }

    /// Waits for the takeovers started: each ends with the run's schedule.
    fn wait_for_takeovers(&mut self) {
        for (shard, mut child) in self.adopted.drain(..) {
            match child.wait() {
                Ok(status) if status.success() => {}
                Ok(status) => eprintln!("barrage: the takeover of shard {shard}/{} ended with {status}", self.shard.1),
                Err(e) => eprintln!("barrage: the takeover of shard {shard}/{}: {e}", self.shard.1),
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
