//! The flags of `barrage collect`.

use super::{EmitArgs, GateArgs, LiveArgs, TraceUrlArgs};
use barrage_plan::units::PositiveDur;
use clap::Args;
use std::path::PathBuf;

/// `barrage collect`: the shards of a split run stream here (`run --report-to`).
#[derive(Args, Debug, Clone)]
pub struct CollectArgs {
    /// N: the shards of the run (`run --shard I/N`).
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// Where the shards reach the collector; 0.0.0.0:PORT for other machines, port 0
    /// picks a free one (the first line on stderr says which).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7340")]
    pub listen: std::net::SocketAddr,
    /// Its copies of the shards' results files, byte for byte (shard-I.brg): a new
    /// directory, the user's alone. [default: fleet-<UTC time>, as fleet-20261128T235959Z]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A shard whose data stops for this long before it ends is lost: its intervals so far
    /// count, the rest of its share is shown as never sent.
    #[arg(long, value_name = "DUR", default_value = "5s", allow_hyphen_values = true)]
    pub lateness: PositiveDur,
    /// With `run --rendezvous`: the start fails when a shard's clock is further than this
    /// from the collector's.
    #[arg(long, value_name = "DUR", default_value = "50ms", allow_hyphen_values = true)]
    pub max_clock_offset: PositiveDur,
    /// With `run --rendezvous`: from the last shard ready to the start.
    #[arg(long, value_name = "DUR", default_value = "2s", allow_hyphen_values = true)]
    pub lead: PositiveDur,
    /// When a shard is lost: continue (the others go on, its share shown as never sent),
    /// abort (every other shard is told to stop; the collector exits 1) or takeover (the
    /// first shard still sending runs what is left of its share from the last second it
    /// recorded to the run's end: an open loop's arrivals, exactly; a closed loop's workers
    /// and a scenario's groups, restarted and marked so; a closed loop's count (-n,
    /// iterations) is not taken over, and the collector says why).
    #[arg(long, value_enum, value_name = "WHAT", default_value = "continue")]
    pub on_shard_loss: ShardLoss,
    #[command(flatten)]
    pub gates: GateArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub links: TraceUrlArgs,
    #[command(flatten)]
    pub emit: EmitArgs,
}

/// `--on-shard-loss`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardLoss {
    /// The others go on; the lost shard's share is shown as never sent.
    Continue,
    /// Every other shard is told to stop.
    Abort,
    /// A survivor sends what is left of its share.
    Takeover,
}

impl ShardLoss {
    /// The collector's setting.
    pub fn of(self) -> barrage_fleet::OnLoss {
        match self {
            ShardLoss::Continue => barrage_fleet::OnLoss::Continue,
            ShardLoss::Abort => barrage_fleet::OnLoss::Abort,
            ShardLoss::Takeover => barrage_fleet::OnLoss::Takeover,
        }
    }
}
