//! `--monitor` and `--at` of `run`: which processes to watch, which commands to run when.

use anyhow::bail;
use barrage_engine::{Plan, ScheduledCommand, Watch, WatchTarget};
use barrage_testbed::State;
use std::path::Path;

/// The processes to watch: each `--monitor` (a PID, a testbed server's name, or a process
/// name), then every server of the testbed the plan's URLs point at.
pub fn watches(monitor: &[String], testbed: Option<&Path>, plan: &Plan) -> anyhow::Result<Vec<Watch>> {
    let dir = testbed.map_or_else(barrage_testbed::default_dir, Path::to_path_buf);
    let state = State::load(&dir).filter(|_| barrage_testbed::is_up(&dir));
    let mut out = Vec::new();
    for m in monitor {
        let target = match (m.parse::<u32>(), state.as_ref().and_then(|s| s.server(m))) {
            (Ok(pid), _) => WatchTarget::Pid(pid),
            (_, Some(server)) => WatchTarget::PidFile(server.pid_file()),
            _ => WatchTarget::Name(m.clone()),
        };
        if !target.is_running() {
            bail!("--monitor {m}: no running process, PID or testbed server of that name");
        }
        out.push(Watch { label: m.clone(), target });
    }
    if let Some(state) = state.filter(|s| aims_at(s, plan)) {
        for s in &state.servers {
            if !out.iter().any(|w| w.label == s.spec.name) {
                out.push(Watch { label: s.spec.name.clone(), target: WatchTarget::PidFile(s.pid_file()) });
            }
        }
    }
    Ok(out)
}

/// Whether any target URL is one of the testbed's.
fn aims_at(state: &State, plan: &Plan) -> bool {
    let ports: Vec<u16> = state
        .servers
        .iter()
        .flat_map(|s| std::iter::once(s.spec.listen).chain(s.spec.tls_listen))
        .map(|a| a.port())
        .collect();
    plan.targets.iter().any(|t| {
        let loopback = t.url.host().is_some_and(|h| h == "localhost" || h.starts_with("127.") || h == "[::1]");
        loopback && t.url.port_u16().is_some_and(|p| ports.contains(&p))
    })
}

/// `--at OFFSET COMMAND` pairs, each offset within the run.
pub fn schedule(at: &[String], duration: Option<std::time::Duration>) -> anyhow::Result<Vec<ScheduledCommand>> {
    at.chunks(2)
        .map(|pair| {
            let [offset, command] = pair else { bail!("--at needs an offset and a command: --at 10s 'COMMAND'") };
            let parsed: crate::args::units::Dur =
                offset.parse().map_err(|e| anyhow::anyhow!("--at '{offset}': {e}"))?;
            if command.trim().is_empty() {
                bail!("--at {offset}: the command is empty");
            }
            if let Some(d) = duration.filter(|d| parsed.0 >= *d) {
                bail!("--at {offset}: after the end of the run ({}s)", d.as_secs_f64());
            }
            Ok(ScheduledCommand { offset: parsed.0, command: command.clone() })
        })
        .collect()
}
