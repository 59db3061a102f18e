//! `barrage completions` and `barrage man`: the shell completion scripts and the manual page,
//! generated from the same clap parser as the command line, so they cannot drift from it.

use crate::args::completions::{Generated, Shell};
use crate::args::Cli;
use crate::Exit;
use clap::CommandFactory;
use std::io::Write;

/// Prints what `command` asks for on stdout.
pub fn generated(command: Generated) -> anyhow::Result<Exit> {
    match command {
        Generated::Completions { shell } => completions(shell),
        Generated::Man => man(),
    }
}

/// Prints the completion script for `shell` on stdout.
fn completions(shell: Shell) -> anyhow::Result<Exit> {
    let mut cli = Cli::command();
    let name = cli.get_name().to_string();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    // Rendered in memory first: the generators panic on a failed write, and a closed pipe
    // (`| head`) is an ordinary end, not a bug.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cli, name, &mut script);
    print(&script)
}

/// Prints the manual on stdout: barrage(1), then a page for each subcommand (barrage-run(1),
/// barrage-testbed-up(1)…), which the first page's SUBCOMMANDS section names, all in one roff
/// stream (`barrage man | man -l -`).
fn man() -> anyhow::Result<Exit> {
    let mut cli = Cli::command();
    // Built, so that each subcommand knows its display name (barrage-run) and inherited args.
    cli.build();
    let mut pages = Vec::new();
    render_pages(&cli, &mut pages)?;
    print(&pages)
}

/// `command`'s page, then its subcommands' pages in order, depth first; clap's own `help`
/// subcommand has none, and hidden ones (the testbed's supervisor) none either.
fn render_pages(command: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    // Every page's footer names barrage and its version, not the subcommand's own name.
    let source = concat!("barrage ", env!("CARGO_PKG_VERSION"));
    clap_mangen::Man::new(command.clone()).source(source).render(out)?;
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help" && !s.is_hide_set()) {
        render_pages(sub, out)?;
    }
    Ok(())
}

fn print(bytes: &[u8]) -> anyhow::Result<Exit> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(Exit::Ok)
}
