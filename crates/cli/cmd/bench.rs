//! `barrage testbed bench`: every front of `all`, the same load, one table.

use crate::args::TestbedBenchArgs;
use crate::Outcome;

/// Runs the comparison.
pub fn bench(_a: TestbedBenchArgs) -> anyhow::Result<Outcome> {
    anyhow::bail!("not yet")
}
