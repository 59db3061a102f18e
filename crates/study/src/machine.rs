//! Whether a run fits this machine: its `--bind` address, and its connections within the
//! process's limits (the engine's [`barrage_engine::limits`]). Apart from the plan crate,
//! since it asks the system, not the flags; every mode's base plan is checked with it.

use barrage_engine::{Load, Plan};
use barrage_plan::units::LoadFlags;

/// The plan fits this machine: its `--bind` address is one of its own, its connections
/// within the process's limits; a scenario's group that would start after the end is
/// warned of.
pub fn fits(plan: &Plan, flags: &LoadFlags) -> Result<(), String> {
    if let Some(local) = plan.bind {
        // Refused now, not as every request's error: an address this machine does not have.
        std::net::TcpListener::bind((local, 0))
            .map_err(|e| format!("--bind {local}: not a local address of this machine ({e})"))?;
    }
    if let (Some(s), Some(end)) = (plan.scenario.as_deref(), plan.attack_limit()) {
        for g in s.groups.iter().filter(|g| g.start >= end) {
            eprintln!(
                "barrage: warning: group {} of --scenario starts at {:?}, when the run has ended ({:?}): it will not run",
                g.name, g.start, end
            );
        }
    }
    let flag = match &plan.load {
        Load::Closed { .. } => "-c",
        Load::Open { .. } if flags.max_in_flight.is_some() => "--max-in-flight",
        Load::Open { .. } => "--connections",
    };
    barrage_engine::limits::check_connections(plan.connections(), plan.threads, flag)
}
