//! The flag parser: clap and every value parser behind it (durations, rates, ranges,
//! levels, sizes, headers, forms, SLO and `--fail-if` expressions, `serve`'s latency and
//! size specs), then what the command does with the flags before sending anything: the
//! plan of `run`, `sweep` and `capacity`, and a draw from each of `serve`'s distributions.
//! The flags of each command are read from clap itself, so a new flag is fuzzed at once.

use super::{config, within, words};
use crate::args::{Cli, Command, RunArgs, ServeArgs};
use clap::{CommandFactory, Parser};
use proptest::prelude::*;
use proptest::sample::Index;
use rand::SeedableRng;

/// The commands fuzzed, as typed after `barrage`, and the positional arguments they get
/// (files that do not exist: only the flags are under test).
const COMMANDS: &[(&[&str], &[&str])] = &[
    (&["run"], &["http://127.0.0.1:1/"]),
    (&["run"], &["redis://127.0.0.1:1"]),
    (&["sweep"], &["http://127.0.0.1:1/"]),
    (&["capacity"], &["http://127.0.0.1:1/"]),
    (&["serve"], &[]),
    (&["compare"], &["a.brg", "b.brg"]),
    (&["report"], &["a.brg"]),
    (&["experiment"], &["e.toml"]),
    (&["demo"], &[]),
    (&["testbed", "up"], &[]),
    (&["testbed", "bench"], &[]),
];

/// A `--long` flag of a command: its name, how many values it takes, and what the help
/// calls its value.
struct Flag {
    name: String,
    values: usize,
    value_name: String,
}

/// The `--long` flags of a command.
fn flags_of(path: &[&str]) -> Vec<Flag> {
    let mut command = Cli::command();
    for name in path {
        command = command.find_subcommand(name).unwrap_or_else(|| panic!("no command {name}")).clone();
    }
    command
        .get_arguments()
        .filter_map(|a| {
            let values = if a.get_action().takes_values() { a.get_num_args().map_or(1, |n| n.min_values()) } else { 0 };
            let value_name = a.get_value_names().and_then(|n| n.first()).map_or(String::new(), |n| n.to_string());
            a.get_long().map(|l| Flag { name: format!("--{l}"), values, value_name })
        })
        .filter(|f| f.name != "--help" && f.name != "--version")
        .collect()
}

/// One flag of a case: which (of the command's), and its value, either a plausible one
/// for what the help calls it (`words::plausible`) or `words::value`'s.
type Pick = (Index, Option<Index>, String);

fn pick() -> impl Strategy<Value = Pick> {
    (any::<Index>(), prop::option::weighted(0.85, any::<Index>()), words::value())
}

/// The command line of one case: the command, its flags with values, the positionals.
fn command_line(command: usize, picks: &[Pick], positionals: bool) -> Vec<String> {
    let (path, extra) = COMMANDS[command];
    let flags = flags_of(path);
    let mut args: Vec<String> = std::iter::once("barrage").chain(path.iter().copied()).map(String::from).collect();
    for (flag, plausible, value) in picks {
        let flag = &flags[flag.index(flags.len())];
        args.push(flag.name.clone());
        let pool = words::plausible(&flag.value_name);
        let value = match plausible {
            Some(i) if !pool.is_empty() => pool[i.index(pool.len())].to_string(),
            _ => value.clone(),
        };
        args.extend(std::iter::repeat_n(value, flag.values));
    }
    if positionals {
        args.extend(extra.iter().map(|p| p.to_string()));
    }
    args
}

/// Parses `args` as `main` does, then does what the command does with its flags before
/// sending, reading or serving anything.
pub(super) fn check(args: &[String]) {
    let cli = match within(args, || Cli::try_parse_from(args)) {
        Ok(cli) => cli,
        Err(e) => {
            // `main` prints it: rendering must not panic either.
            within(args, || e.render().to_string());
            return;
        }
    };
    within(args, || match cli.command {
        Command::Run(a) | Command::Sweep(a) => plan(&a),
        Command::Capacity(a) => plan(&a.run),
        Command::Serve(a) => draw(&a),
        _ => {}
    });
}

/// The job of `run`'s flags: the plan, its checks, the `--at` schedule and the watches.
fn plan(a: &RunArgs) {
    // `--targets -` and `--urls -` read standard input, which a test does not have. A
    // generated body of hundreds of MiB (up to the documented 1 GiB) is allowed, and slow
    // to fill on purpose.
    let stdin = [&a.request.targets, &a.request.urls_file].into_iter().any(|f| f.as_deref() == Some("-"));
    if stdin || a.request.body_size.is_some_and(|s| s > 64 << 20) {
        return;
    }
    let _ = crate::cmd::plan::job(a);
}

/// A few draws from `serve`'s latency and object size distributions, as each request makes.
fn draw(a: &ServeArgs) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for _ in 0..8 {
        if let Some(latency) = a.latency {
            latency.sample(&mut rng);
        }
        a.object_size.sample(&mut rng);
    }
}

/// The commands are found and have flags: else the property below tests nothing.
#[test]
fn every_fuzzed_command_has_flags() {
    for (path, _) in COMMANDS {
        assert!(!flags_of(path).is_empty(), "{path:?} has flags");
    }
}

proptest! {
    #![proptest_config(config(1500))]

    /// Every command's flags parse to `Ok` or a clean error, and whatever parses plans.
    #[test]
    fn any_flags_parse_to_ok_or_a_clean_error(
        command in 0..COMMANDS.len(),
        picks in prop::collection::vec(pick(), 0..5),
        positionals in prop::bool::weighted(0.9),
    ) {
        check(&command_line(command, &picks, positionals));
    }
}
