//! The start barrier (`run --rendezvous`): the shard measures its clock against the
//! collector's, says it is ready, and waits for the start the collector publishes once every
//! shard is; it starts its schedule then, on its own clock.

use crate::client::{Client, ClientError};
use crate::clock::{best, Exchange, Offset};
use crate::protocol::{Ready, Start, READY_BYTES};
use http::Method;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// Clock exchanges per shard: the shortest round trip of these is kept.
const EXCHANGES: usize = 8;
/// How long a shard keeps trying to reach a collector that is not up yet (a pod scheduled
/// before the collector's).
const REACH_FOR: Duration = Duration::from_secs(60);
/// Between two tries to reach it.
const RETRY_EVERY: Duration = Duration::from_millis(200);

/// The start a shard got.
#[derive(Clone, Copy, Debug)]
pub struct Rendezvous {
    /// When its schedule starts, on its own clock.
    pub start: SystemTime,
    /// Its clock against the collector's.
    pub clock: Offset,
}

/// Why there is no start.
#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    /// The collector could not be reached or refused the shard.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The collector called the start off.
    #[error("the collector called the start off: {0}")]
    Aborted(String),
    /// Stopped (Ctrl-C) while waiting.
    #[error("stopped while waiting for the start")]
    Stopped,
}

/// Who comes to the rendezvous: its shard (I, N), its process's token and its plan's digest
/// (the collector refuses a second process for one shard, and another plan).
pub struct Comer<'a> {
    /// I and N of `--shard I/N`.
    pub shard: (u32, u32),
    /// The shard process's token.
    pub run: &'a str,
    /// Its plan's digest.
    pub plan: &'a str,
    /// Its results header's settings: what names how its plan differs, if it does.
    pub settings: &'a str,
}

/// Measures the clock, says ready, waits for the start (or `stop`).
pub fn rendezvous(client: &Client, comer: &Comer, stop: &CancellationToken) -> Result<Rendezvous, RendezvousError> {
    let shard = comer.shard;
    let clock = measure(client, stop)?;
    // Settings that would not fit are left out: the plan is still checked, by its digest.
    let settings = if comer.settings.len() < READY_BYTES / 2 { comer.settings } else { "" };
    let ready = Ready {
        shard: shard.0,
        shards: shard.1,
        clock,
        run: comer.run.into(),
        plan: comer.plan.into(),
        settings: settings.into(),
    };
    client.post::<serde_json::Value>("/v1/ready", &ready)?;
    loop {
        if stop.is_cancelled() {
            return Err(RendezvousError::Stopped);
        }
        // The collector holds the question up to a second when it has no start yet.
        match client.get::<Start>(&format!("/v1/start?shard={}", shard.0))? {
            Some(Start::At(us)) => {
                // The collector's time on this machine's clock: ours is ahead by the offset.
                let local = us as i64 + clock.offset_us;
                let start = UNIX_EPOCH + Duration::from_micros(local.max(0) as u64);
                return Ok(Rendezvous { start, clock });
            }
            Some(Start::Abort(why)) => return Err(RendezvousError::Aborted(why)),
            None => {}
        }
    }
}

/// The clock against the collector's, from [`EXCHANGES`] exchanges; tries to reach the
/// collector for [`REACH_FOR`] first, and says so at once. An address that answers but not
/// as a collector is refused at once: waiting would not make it one.
fn measure(client: &Client, stop: &CancellationToken) -> Result<Offset, RendezvousError> {
    let gave_up = std::time::Instant::now() + REACH_FOR;
    let mut exchanges = Vec::with_capacity(EXCHANGES);
    let mut said = false;
    while exchanges.len() < EXCHANGES {
        if stop.is_cancelled() {
            return Err(RendezvousError::Stopped);
        }
        match exchange(client) {
            Ok(e) => exchanges.push(e),
            // Not up yet: a shard's pod may be scheduled before the collector's.
            Err(ClientError::Unreachable(_, why)) if exchanges.is_empty() && std::time::Instant::now() < gave_up => {
                if !std::mem::replace(&mut said, true) {
                    eprintln!(
                        "barrage: --rendezvous: waiting up to {} s (until {}) for the collector at {} ({why})",
                        REACH_FOR.as_secs(),
                        utc_clock(SystemTime::now() + REACH_FOR),
                        client.base()
                    );
                }
                std::thread::sleep(RETRY_EVERY)
            }
            Err(ClientError::Unreachable(at, why)) if exchanges.is_empty() => {
                let why = format!("no answer in {} s of trying ({why})", REACH_FOR.as_secs());
                return Err(ClientError::Unreachable(at, why).into());
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(best(&exchanges).expect("several exchanges"))
}

fn exchange(client: &Client) -> Result<Exchange, ClientError> {
    let t1 = now_us();
    let (status, body) = client.send(Method::GET, "/v1/clock", bytes::Bytes::new())?;
    let t4 = now_us();
    let said: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    match (status.is_success(), said["t2"].as_i64(), said["t3"].as_i64()) {
        (true, Some(t2), Some(t3)) => Ok(Exchange { t1, t2, t3, t4 }),
        _ => Err(ClientError::Refused(
            client.base().into(),
            format!("it answers {status} to a collector's clock question: not a barrage collector"),
        )),
    }
}

/// This machine's clock, µs since the Unix epoch.
pub fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// A time of day in UTC, for a line a person reads: `23:59:59 UTC`.
fn utc_clock(t: SystemTime) -> String {
    let s = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) % 86_400;
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}
