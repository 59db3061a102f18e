//! What a run watches and does beside sending: `--monitor` names resolved to processes
//! (a PID, a testbed server, a process name) plus every server of the testbed the plan aims
//! at, and `--at OFFSET COMMAND` pairs checked against the run's length.

use barrage_engine::{Plan, ScheduledCommand, Watch, WatchTarget};
use barrage_metrics::limits::MAX_WATCHED;
use barrage_plan::units::Dur;
use barrage_testbed::State;
use std::path::Path;
use std::time::Duration;

/// The processes to watch: each of `monitor`, then every server of the testbed in
/// `testbed` (or the default one) when the plan's URLs point at it; at most [`MAX_WATCHED`],
/// the most a results file holds.
pub fn watches(monitor: &[String], testbed: Option<&Path>, plan: &Plan) -> Result<Vec<Watch>, String> {
    // Checked before each name is looked up (each reads the process table).
    too_many(monitor.len())?;
    let dir = testbed.map_or_else(barrage_testbed::default_dir, Path::to_path_buf);
    let state = State::load(&dir).filter(|_| barrage_testbed::is_up(&dir));
    if let (Some(dir), None) = (testbed, &state) {
        return Err(format!("--testbed {}: no testbed is up there (`barrage testbed up … --dir DIR`)", dir.display()));
    }
    let mut out = Vec::new();
    for m in monitor {
        let target = match (m.parse::<u32>(), state.as_ref().and_then(|s| s.server(m))) {
            (Ok(pid), _) => WatchTarget::Pid(pid),
            (_, Some(server)) => WatchTarget::PidFile(server.pid_file()),
            _ => WatchTarget::Name(m.clone()),
        };
        if !target.is_running() {
            return Err(format!("--monitor {m}: no running process, PID or testbed server of that name"));
        }
        out.push(Watch { label: m.clone(), target });
    }
    name_pids(&mut out);
    if let Some(state) = state.filter(|s| aims_at(s, plan)) {
        for s in &state.servers {
            if !out.iter().any(|w| w.label == s.spec.name) {
                out.push(Watch { label: s.spec.name.clone(), target: WatchTarget::PidFile(s.pid_file()) });
            }
        }
    }
    too_many(out.len())?;
    Ok(out)
}

/// Processes watched by PID are labelled by their name, not their number; with the PID
/// (`nginx[4242]`, as syslog writes it) where another watch, or barrage itself, has that
/// name.
fn name_pids(watches: &mut [Watch]) {
    let names: Vec<Option<String>> = watches.iter().map(|w| w.target.process_name()).collect();
    let label = |i: usize| names[i].clone().unwrap_or_else(|| watches[i].label.clone());
    let labels: Vec<String> = (0..watches.len()).map(label).collect();
    for (i, w) in watches.iter_mut().enumerate() {
        let (Some(name), WatchTarget::Pid(pid)) = (&names[i], &w.target) else { continue };
        let shared = name == "barrage" || labels.iter().enumerate().any(|(j, l)| j != i && l == name);
        w.label = if shared { format!("{name}[{pid}]") } else { name.clone() };
    }
}

fn too_many(watched: usize) -> Result<(), String> {
    match watched {
        n if n > MAX_WATCHED => Err(format!("--monitor: {n} processes to watch, more than {MAX_WATCHED}")),
        _ => Ok(()),
    }
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

/// `--at OFFSET COMMAND` pairs, each offset within the run; `barrage` in a command runs
/// the binary at `barrage` (the one running) when given, and `barrage testbed ...` acts on
/// the testbed in `testbed` (`--testbed DIR`; an experiment's case: its own) when given.
pub fn schedule(
    at: &[String],
    duration: Option<Duration>,
    barrage: Option<&Path>,
    testbed: Option<&Path>,
) -> Result<Vec<ScheduledCommand>, String> {
    at.chunks(2)
        .map(|pair| {
            let [offset, command] = pair else {
                return Err("--at needs an offset and a command: --at 10s 'COMMAND'".into());
            };
            let parsed: Dur = offset.parse().map_err(|e| format!("--at '{offset}': {e}"))?;
            if command.trim().is_empty() {
                return Err(format!("--at {offset}: the command is empty"));
            }
            if let Some(d) = duration.filter(|d| parsed.0 >= *d) {
                return Err(format!("--at {offset}: after the end of the run ({}s)", d.as_secs_f64()));
            }
            Ok(ScheduledCommand {
                offset: parsed.0,
                command: command.clone(),
                barrage: barrage.map(Path::to_path_buf),
                testbed: testbed.map(Path::to_path_buf),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_pairs_are_checked_against_the_run() {
        let ok = schedule(&["1s".into(), "true".into()], Some(Duration::from_secs(5)), None, None).unwrap();
        assert_eq!(ok[0].offset, Duration::from_secs(1));
        for (pair, want) in [
            (["9s", "true"], "after the end of the run"),
            (["1s", " "], "the command is empty"),
            (["soon", "true"], "--at 'soon'"),
        ] {
            let e = schedule(&pair.map(String::from), Some(Duration::from_secs(5)), None, None).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
