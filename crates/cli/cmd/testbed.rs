//! `barrage testbed`: up, status, stop, start, down (and the hidden supervisor); `bench` is
//! in [`super::bench`], and `up` (but in the foreground) in [`up`], dispatched by `main` with
//! the signal handler.

use crate::args::{BalanceArg, StatusFormat, TestbedCommand, TestbedDirArgs, TestbedUpArgs};
use crate::Outcome;
use anyhow::Context;
use barrage_engine::CancellationToken;
use barrage_testbed::{Balance, Lifetime, Options, State, TestbedError, Tie};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Dispatches a testbed subcommand.
pub fn testbed(command: TestbedCommand) -> anyhow::Result<Outcome> {
    match command {
        // `main` runs `up` in the background itself, with the signal handler.
        TestbedCommand::Up(a) => foreground(a),
        TestbedCommand::Status(a) => status(&dir(&a.dir), a.format),
        TestbedCommand::Purge(a) => {
            let dir = dir(&a.dir);
            let command = a.name.as_deref().map_or("purge".to_string(), |name| format!("purge {name}"));
            barrage_testbed::control(&dir, &command)?;
            println!("purged {}", a.name.as_deref().unwrap_or("every cache"));
            Ok(Outcome::Ok)
        }
        TestbedCommand::Down(a) => {
            let dir = dir(&a);
            barrage_testbed::down(&dir)?;
            println!("testbed in {} is down", dir.display());
            Ok(Outcome::Ok)
        }
        TestbedCommand::Stop(a) => control(&dir(&a.dir), "stop", &a.name),
        TestbedCommand::Start(a) => control(&dir(&a.dir), "start", &a.name),
        TestbedCommand::Set(a) => set(&dir(&a.dir), &a.name, &a.shape.join(",")),
        // `main` runs bench itself, with the signal handler.
        TestbedCommand::Bench(_) => anyhow::bail!("testbed bench is dispatched by main"),
        TestbedCommand::Supervise(a) => supervise(&a.dir, &a.options, a.owner),
    }
}

/// `--dir`, or the default state directory.
pub fn dir(a: &TestbedDirArgs) -> PathBuf {
    a.dir.clone().unwrap_or_else(barrage_testbed::default_dir)
}

/// The testbed options of a topology, caches at their default sizes.
pub fn options(
    topology: barrage_testbed::Topology,
    backends: Option<u32>,
    tls: bool,
    balance: BalanceArg,
) -> anyhow::Result<Options> {
    Ok(Options {
        topology,
        backends: backends.unwrap_or(topology.default_backends()),
        tls,
        balance: match balance {
            BalanceArg::Roundrobin => Balance::RoundRobin,
            BalanceArg::Leastconn => Balance::LeastConn,
            BalanceArg::Iphash => Balance::IpHash,
            BalanceArg::UriHash => Balance::UriHash,
        },
        barrage: std::env::current_exe().context("finding the barrage binary to run the origins")?,
        shapes: Vec::new(),
        weights: Vec::new(),
        memory: None,
        eviction: None,
        keep_logs: None,
    })
}

/// The options of `testbed up`, checked.
fn up_options(a: &TestbedUpArgs) -> anyhow::Result<Options> {
    let mut o = options(a.topology, a.backends, a.tls, a.balance)?;
    o.shapes = a.shape.clone();
    o.weights = a.weights.clone();
    (o.memory, o.eviction) = (a.memory, a.eviction);
    o.check()?;
    Ok(o)
}

/// `testbed set NAME SHAPE`: answered once the origin serves with it.
fn set(dir: &Path, name: &str, shape: &str) -> anyhow::Result<Outcome> {
    // Checked here too, so a typo is a usage error before the supervisor is asked.
    shape.parse::<barrage_server::ShapeSpec>()?;
    barrage_testbed::control(dir, &format!("set {name} {shape}"))?;
    // The whole shape each origin has now, as the supervisor recorded it.
    let state = State::load(dir).ok_or_else(|| TestbedError::NotUp(dir.display().to_string()))?;
    for s in state.servers.iter().filter(|s| name == "all" || s.spec.name == name) {
        if let Some(now) = s.spec.shape() {
            println!("{}: shape {now}", s.spec.name);
        }
    }
    Ok(Outcome::Ok)
}

/// `testbed up` in the background: returns once the testbed is up, and leaves it up. A
/// signal (`stop`) while it comes up takes it down again.
pub fn up(a: TestbedUpArgs, stop: CancellationToken) -> anyhow::Result<Outcome> {
    let dir = absolute(&dir(&a.dir))?;
    let options = up_options(&a)?;
    let state = barrage_testbed::up(&options, &dir, Lifetime::UntilDown, &|| stop.is_cancelled())?;
    print_table(&state)?;
    println!("testbed up in {}; `barrage testbed down{}` stops it", dir.display(), dir_flag(&dir));
    Ok(Outcome::Ok)
}

/// `testbed up --foreground`: the supervisor is this process, until a signal.
fn foreground(a: TestbedUpArgs) -> anyhow::Result<Outcome> {
    let dir = absolute(&dir(&a.dir))?;
    let options = up_options(&a)?;
    barrage_testbed::prepare(&options, &dir)?;
    barrage_testbed::supervise(options, &dir, Tie::None, |ready| {
        if let Ok(state) = ready {
            let _ = print_table(state);
            println!("testbed up in the foreground; Ctrl-C takes it down");
        }
    })?;
    eprintln!("testbed down");
    Ok(Outcome::Ok)
}

/// The supervisor started by `up`: says `ready` (or `error: …`) on stdout, then runs, tied
/// to the process that started it (see [`Tie`]).
fn supervise(dir: &Path, options: &str, owner: Option<u32>) -> anyhow::Result<Outcome> {
    let options: Options = serde_json::from_str(options).context("testbed supervise --options")?;
    let tie = owner.map_or(Tie::UntilReady, Tie::Owner);
    barrage_testbed::supervise(options, dir, tie, |ready| {
        // Not println!: the caller may be gone (that is why it stopped), its pipe closed.
        let mut out = std::io::stdout();
        let _ = match ready {
            Ok(_) => writeln!(out, "ready"),
            Err(e) => writeln!(out, "error: {e}"),
        };
        let _ = out.flush();
        // `up` has read its line and gone: nothing may write to the closed pipe.
        silence_stdout();
    })?;
    Ok(Outcome::Ok)
}

fn silence_stdout() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        // SAFETY: dup2 onto fd 1 replaces stdout with /dev/null; both descriptors are valid.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
}

fn status(dir: &Path, format: StatusFormat) -> anyhow::Result<Outcome> {
    barrage_testbed::check_dir(dir)?;
    let Some(state) = State::load(dir) else { return Err(TestbedError::NotUp(dir.display().to_string()).into()) };
    if !barrage_testbed::is_up(dir) {
        anyhow::bail!(
            "the testbed supervisor in {} is gone (servers may be left): run `barrage testbed down{}`",
            dir.display(),
            dir_flag(dir)
        );
    }
    match format {
        StatusFormat::Text => print_table(&state)?,
        StatusFormat::Json => {
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &status_json(&state))?;
            writeln!(out)?;
            out.flush()?;
        }
    }
    Ok(Outcome::Ok)
}

/// The version of `testbed status --format json` (schema/testbed-status.schema.json).
pub const STATUS_VERSION: u32 = 1;

/// `testbed status --format json`: the testbed and every server, with its directory, its
/// output and its own logs.
pub fn status_json(state: &State) -> serde_json::Value {
    let servers: Vec<serde_json::Value> = state
        .servers
        .iter()
        .map(|s| {
            let (status, exit) = match &s.status {
                barrage_testbed::Status::Running => ("running", None),
                barrage_testbed::Status::Stopped => ("stopped", None),
                barrage_testbed::Status::Exited(how) => ("exited", Some(how.as_str())),
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

fn control(dir: &Path, verb: &str, name: &str) -> anyhow::Result<Outcome> {
    barrage_testbed::control(dir, &format!("{verb} {name}"))?;
    let done = if verb == "stop" { "stopped" } else { "started" };
    println!("{done} {name}");
    Ok(Outcome::Ok)
}

/// NAME, ROLE, URL, PID, STATUS (and SHAPE, when an origin has one): one row per URL.
pub fn print_table(state: &State) -> anyhow::Result<()> {
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
    let mut out = std::io::stdout().lock();
    for r in &rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        writeln!(out, "{}", line.join("  ").trim_end())?;
    }
    if let Some(ca) = &state.ca {
        writeln!(out, "CA certificate: {} (use --cacert {})", ca.display(), ca.display())?;
    }
    Ok(out.flush()?)
}

/// ` --dir DIR` unless `dir` is the default.
fn dir_flag(dir: &Path) -> String {
    if dir == barrage_testbed::default_dir() {
        String::new()
    } else {
        format!(" --dir {}", dir.display())
    }
}

/// The supervisor runs elsewhere (`/`): paths must not depend on the caller's directory.
fn absolute(dir: &Path) -> anyhow::Result<PathBuf> {
    Ok(if dir.is_absolute() { dir.to_path_buf() } else { std::env::current_dir()?.join(dir) })
}
