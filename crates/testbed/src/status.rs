//! What the testbed's commands show: `testbed status` as a table or JSON, what `set` left
//! each origin serving, and how to name the directory back to the user. Apart from the
//! supervisor, since it only reads the state the supervisor wrote.

use crate::{check_dir, control, default_dir, is_up, State, Status, TestbedError};
use std::path::{Path, PathBuf};

/// The version of `testbed status --format json` (schema/testbed-status.schema.json).
pub const STATUS_VERSION: u32 = 1;

/// The state of the testbed in `dir`, refused when none is up or its supervisor is gone.
pub fn running(dir: &Path) -> Result<State, TestbedError> {
    check_dir(dir)?;
    let Some(state) = State::load(dir) else { return Err(TestbedError::NotUp(dir.display().to_string())) };
    if !is_up(dir) {
        return Err(TestbedError::Gone { dir: dir.display().to_string(), flag: dir_flag(dir) });
    }
    Ok(state)
}

/// `testbed set NAME SHAPE`, answered once the origin serves with it: a line `NAME: shape
/// SHAPE` for each origin it set, with the whole shape it has now, as the supervisor
/// recorded it.
pub fn set(dir: &Path, name: &str, shape: &str) -> Result<Vec<String>, TestbedError> {
    control(dir, &format!("set {name} {shape}"))?;
    let state = State::load(dir).ok_or_else(|| TestbedError::NotUp(dir.display().to_string()))?;
    let set = state.servers.iter().filter(|s| name == "all" || s.spec.name == name);
    Ok(set.filter_map(|s| Some(format!("{}: shape {}", s.spec.name, s.spec.shape()?))).collect())
}

/// `testbed status --format json`: the testbed and every server, with its directory, its
/// output and its own logs.
pub fn status_json(state: &State) -> serde_json::Value {
    let servers: Vec<serde_json::Value> = state
        .servers
        .iter()
        .map(|s| {
            let (status, exit) = match &s.status {
                Status::Running => ("running", None),
                Status::Stopped => ("stopped", None),
                Status::Exited(how) => ("exited", Some(how.as_str())),
            };
            serde_json::json!({
                "name": s.spec.name,
                "kind": s.spec.kind.name(),
                "role": s.spec.role,
                "urls": s.spec.urls(),
                "pid": s.pid,
                "status": status,
                "exit": exit,
                "dir": s.spec.dir,
                "output": s.log(),
                "logs": s.spec.logs,
            })
        })
        .collect();
    serde_json::json!({
        "version": STATUS_VERSION,
        "dir": state.dir,
        "topology": state.options.topology.name(),
        "tls": state.options.tls,
        "supervisor_pid": state.supervisor_pid,
        "ca": state.ca,
        "servers": servers,
    })
}

/// NAME, ROLE, URL, PID, STATUS (and SHAPE, when an origin has one): one row per URL, then
/// the CA certificate to trust, each line ending with a newline.
pub fn table(state: &State) -> String {
    let mut rows =
        vec![["NAME".to_string(), "ROLE".into(), "URL".into(), "PID".into(), "STATUS".into(), "SHAPE".into()]];
    for s in &state.servers {
        let pid = s.pid.map_or("-".to_string(), |p| p.to_string());
        // Empty for an origin as fast as it can be, so the column shows only when set.
        let shape = s.spec.shape().unwrap_or_default().to_string();
        for url in s.spec.urls() {
            let row = [s.spec.name.clone(), s.spec.role.clone(), url, pid.clone(), s.status.to_string(), shape.clone()];
            rows.push(row);
        }
    }
    if rows.iter().skip(1).all(|r| r[5].is_empty()) {
        rows[0][5].clear();
    }
    let widths: Vec<usize> = (0..6).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if let Some(ca) = &state.ca {
        out.push_str(&format!("CA certificate: {} (use --cacert {})\n", ca.display(), ca.display()));
    }
    out
}

/// ` --dir DIR` unless `dir` is the default: what a command shown to the user needs to
/// find this testbed.
pub fn dir_flag(dir: &Path) -> String {
    if dir == default_dir() {
        String::new()
    } else {
        format!(" --dir {}", dir.display())
    }
}

/// `dir` from the caller's directory: the supervisor runs elsewhere (`/`), so paths must not
/// depend on it.
pub fn absolute(dir: &Path) -> std::io::Result<PathBuf> {
    Ok(if dir.is_absolute() { dir.to_path_buf() } else { std::env::current_dir()?.join(dir) })
}

/// The supervisor's answer to the `up` that started it, `ready` or `error: …` on stdout;
/// then stdout goes to /dev/null, `up` having read its line and gone: nothing may write to
/// the closed pipe.
pub fn answer_up(ready: Result<&State, &TestbedError>) {
    use std::io::Write;
    // Not println!: the caller may be gone (that is why it stopped), its pipe closed.
    let mut out = std::io::stdout();
    let _ = match ready {
        Ok(_) => writeln!(out, "ready"),
        Err(e) => writeln!(out, "error: {e}"),
    };
    let _ = out.flush();
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        // SAFETY: dup2 onto fd 1 replaces stdout with /dev/null; both descriptors are valid.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
}
