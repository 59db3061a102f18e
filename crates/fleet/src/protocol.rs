//! What a shard and the collector say to each other, over HTTP/1.1 with JSON answers:
//!
//! | request | answer |
//! |---|---|
//! | `GET /v1/clock` | `{"t2": µs, "t3": µs}`: when the collector received it and answered |
//! | `POST /v1/ready` with a [`Ready`] | 200, or 409 with `{"error": …}` (wrong N, a second shard I, another plan) |
//! | `GET /v1/start?shard=I` | [`Start`] once every shard is ready (waits up to a second for it), 204 before |
//! | `POST /v1/data?shard=I&shards=N&offset=O&run=T&plan=D[&part=1]` with bytes | [`Ack`]; 409 with the [`Ack`] when O is not what the collector has; 403 with `{"error": …}` for a shard refused (another process already sends shard I, or plan D is not the run's) |
//! | `GET /v1/status` | [`Status`]: every shard, and what is final |
//!
//! The data are the shard's results file, byte for byte, in whole records: the collector's
//! copy is the file. Part 1 of a shard is its takeover: the run a survivor started to send
//! what was left of the shard's share once it was lost ([`Adopt`]). A post is idempotent by its offset, so a shard that lost an answer
//! sends again from what the collector says it has.

use serde::{Deserialize, Serialize};

/// The most shards of one run: as many as a run splits into.
pub use barrage_plan::plan::MAX_SHARDS;
/// The most bytes of one data post: a results record is at most 64 MiB, and a post holds
/// whole records (one larger record alone).
pub const MAX_POST_BYTES: usize = 80 << 20;
/// What a shard batches into one post, unless one record is larger.
pub const BATCH_BYTES: usize = 4 << 20;
/// The most bytes of a [`Ready`] the collector takes; a shard leaves out settings that would
/// not fit (its plan's difference, if any, is then not named).
pub const READY_BYTES: usize = 1 << 20;

/// A shard is ready to start, its clock measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ready {
    /// I of `--shard I/N`.
    pub shard: u32,
    /// N.
    pub shards: u32,
    /// Its clock against the collector's.
    pub clock: crate::clock::Offset,
    /// Who sends it: the shard process's own token, so that a second process given the same
    /// `--shard I/N` is told apart and refused.
    #[serde(default)]
    pub run: String,
    /// The digest of its plan (a results header's `plan_digest`): every shard of one run
    /// has the same.
    #[serde(default)]
    pub plan: String,
    /// Its results header's settings (`settings_json`): a plan that differs from the first
    /// shard's is refused naming what differs.
    #[serde(default)]
    pub settings: String,
}

/// The collector's word on the start: a time on its clock, or why there is none.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum Start {
    /// Every shard starts its schedule at this time, µs since the Unix epoch, collector's clock.
    At(u64),
    /// The start failed (a shard's clock too far off); nobody starts.
    Abort(String),
}

/// The collector's answer to a data post.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ack {
    /// The bytes of the shard's file the collector has.
    pub have: u64,
    /// Stop the run, and why (a fleet-wide `--slo` failed, or the collector was stopped).
    pub stop: Option<String>,
    /// Take over a lost shard's share (`collect --on-shard-loss takeover`): said until the
    /// takeover's data come.
    #[serde(default)]
    pub adopt: Option<Adopt>,
}

/// A lost shard's share, for a survivor to send from a second of the schedule on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Adopt {
    /// I of the lost shard.
    pub shard: u32,
    /// The schedule's second to resend from: the last the lost shard recorded. A closed
    /// loop's workers and a scenario's groups restart there.
    pub from_s: u32,
    /// An open loop without a scenario: where each of the lost shard's engine threads left
    /// its lane, as its last record says ([`barrage_metrics::lanes`]). The takeover sends,
    /// with as many threads, the arrivals each had in flight again, then each lane from
    /// there on: exactly the arrivals whose outcome the lost shard did not record.
    #[serde(default)]
    pub after: Option<Vec<barrage_metrics::lanes::LaneMark>>,
}

/// One shard as the collector sees it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ShardStatus {
    /// I.
    pub shard: u32,
    /// The bytes received.
    pub bytes: u64,
    /// Its clock, when it came to the rendezvous.
    pub clock: Option<crate::clock::Offset>,
    /// The last interval received.
    pub last_interval: Option<u32>,
    /// Its footer came: it ended.
    pub finished: bool,
    /// Its data stopped coming for longer than the lateness bound before it ended.
    pub lost: bool,
}

/// The fleet as the collector sees it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Status {
    /// Each shard.
    pub shards: Vec<ShardStatus>,
    /// Each shard's takeover (its part 1), as far as it went.
    pub takeovers: Vec<ShardStatus>,
    /// The intervals final so far: every shard still alive has passed them.
    pub final_intervals: u32,
}
