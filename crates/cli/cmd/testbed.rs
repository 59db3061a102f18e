//! `barrage testbed`: up, status, stop, start, down (and the hidden supervisor); `bench` is
//! in [`super::bench`], and `up` (but in the foreground) in [`up`], dispatched by `main` with
//! the signal handler.

use crate::args::{BalanceArg, StatusFormat, TestbedCommand, TestbedDirArgs, TestbedUpArgs};
use crate::Exit;
use anyhow::Context;
use barrage_engine::CancellationToken;
use barrage_testbed::{Balance, Lifetime, Options, State, Tie, Topology};
use std::path::{Path, PathBuf};

/// Dispatches a testbed subcommand.
pub fn testbed(command: TestbedCommand) -> anyhow::Result<Exit> {
    match command {
        // `main` runs `up` in the background itself, with the signal handler.
        TestbedCommand::Up(a) => foreground(a),
        TestbedCommand::Status(a) => status(&dir(&a.dir), a.format),
        TestbedCommand::Purge(a) => {
            let dir = dir(&a.dir);
            let command = a.name.as_deref().map_or("purge".to_string(), |name| format!("purge {name}"));
            barrage_testbed::control(&dir, &command)?;
            println!("purged {}", a.name.as_deref().unwrap_or("every cache"));
            Ok(Exit::Ok)
        }
        TestbedCommand::Down(a) => {
            let dir = dir(&a);
            barrage_testbed::down(&dir)?;
            println!("testbed in {} is down", dir.display());
            Ok(Exit::Ok)
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
pub fn options(topology: Topology, backends: Option<u32>, tls: bool, balance: BalanceArg) -> anyhow::Result<Options> {
    let barrage = std::env::current_exe().context("finding the barrage binary to run the origins")?;
    let balance = match balance {
        BalanceArg::Roundrobin => Balance::RoundRobin,
        BalanceArg::Leastconn => Balance::LeastConn,
        BalanceArg::Iphash => Balance::IpHash,
        BalanceArg::UriHash => Balance::UriHash,
    };
    Ok(Options {
        backends: backends.unwrap_or(topology.default_backends()),
        tls,
        balance,
        ..Options::new(topology, barrage)
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
fn set(dir: &Path, name: &str, shape: &str) -> anyhow::Result<Exit> {
    // Checked here too, so a typo is a usage error before the supervisor is asked.
    shape.parse::<barrage_server::ShapeSpec>()?;
    barrage_testbed::set(dir, name, shape)?.iter().for_each(|line| println!("{line}"));
    Ok(Exit::Ok)
}

/// `testbed up` in the background: returns once the testbed is up, and leaves it up. A
/// signal (`stop`) while it comes up takes it down again.
pub fn up(a: TestbedUpArgs, stop: CancellationToken) -> anyhow::Result<Exit> {
    let dir = barrage_testbed::absolute(&dir(&a.dir))?;
    let options = up_options(&a)?;
    let state = barrage_testbed::up(&options, &dir, Lifetime::UntilDown, &|| stop.is_cancelled())?;
    print_table(&state)?;
    say_congestion();
    println!("testbed up in {}; `barrage testbed down{}` stops it", dir.display(), barrage_testbed::dir_flag(&dir));
    Ok(Exit::Ok)
}

/// `testbed up --foreground`: the supervisor is this process, until a signal.
fn foreground(a: TestbedUpArgs) -> anyhow::Result<Exit> {
    let dir = barrage_testbed::absolute(&dir(&a.dir))?;
    let options = up_options(&a)?;
    barrage_testbed::prepare(&options, &dir)?;
    barrage_testbed::supervise(options, &dir, Tie::None, |ready| {
        if let Ok(state) = ready {
            let _ = print_table(state);
            say_congestion();
            println!("testbed up in the foreground; Ctrl-C takes it down");
        }
    })?;
    eprintln!("testbed down");
    Ok(Exit::Ok)
}

/// The supervisor started by `up`: says `ready` (or `error: …`) on stdout, then runs, tied
/// to the process that started it (see [`Tie`]).
fn supervise(dir: &Path, options: &str, owner: Option<u32>) -> anyhow::Result<Exit> {
    let options: Options = serde_json::from_str(options).context("testbed supervise --options")?;
    let tie = owner.map_or(Tie::UntilReady, Tie::Owner);
    barrage_testbed::supervise(options, dir, tie, barrage_testbed::answer_up)?;
    Ok(Exit::Ok)
}

fn status(dir: &Path, format: StatusFormat) -> anyhow::Result<Exit> {
    let state = barrage_testbed::running(dir)?;
    let text = match format {
        StatusFormat::Text => barrage_testbed::table(&state),
        StatusFormat::Json => format!("{:#}\n", barrage_testbed::status_json(&state)),
    };
    super::emit::print(&text)?;
    Ok(Exit::Ok)
}

fn control(dir: &Path, verb: &str, name: &str) -> anyhow::Result<Exit> {
    barrage_testbed::control(dir, &format!("{verb} {name}"))?;
    let done = if verb == "stop" { "stopped" } else { "started" };
    println!("{done} {name}");
    Ok(Exit::Ok)
}

/// The testbed's table on stdout.
fn print_table(state: &State) -> anyhow::Result<()> {
    super::emit::print(&barrage_testbed::table(state))
}

/// On stderr, when this machine's congestion control paces loopback: the figures of large
/// responses would be the pacing's ([`barrage_testbed::congestion_note`]).
pub(super) fn say_congestion() {
    if let Some(note) = barrage_testbed::congestion_note() {
        eprintln!("{note}");
    }
}
