//! Many load machines seen as one run while it runs (`barrage collect`, `run --report-to`,
//! `run --rendezvous`): each shard of a split run streams its results file to a collector,
//! which merges their intervals live and keeps byte-identical copies for the exact merge
//! after the run; the start barrier measures each shard's clock against the collector's.

pub mod client;
pub mod clock;
pub mod collector;
mod page;
pub mod protocol;
pub mod rendezvous;
pub mod reporter;
mod server;

pub use collector::{CollectError, Collected, Collector, Config, Lost, OnLoss};
pub use page::Render;
pub use reporter::{Ended, Part, Reporter, Takeover, Who};
pub use server::shard_file;
