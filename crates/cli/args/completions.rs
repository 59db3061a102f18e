//! The arguments of `barrage completions` and `barrage man`: apart from the load flags, as
//! they describe the parser itself rather than a run. Only clap here: the integration tests
//! read this directory as the definition of the flags.

use clap::{Subcommand, ValueEnum};

const COMPLETIONS_EXAMPLES: &str = "Examples:
  barrage completions bash > ~/.local/share/bash-completion/completions/barrage
  barrage completions zsh > ~/.zfunc/_barrage          with fpath+=(~/.zfunc) in .zshrc
  barrage completions fish > ~/.config/fish/completions/barrage.fish";

/// The subcommands that print something generated from the parser.
#[derive(Subcommand, Debug)]
pub enum Generated {
    /// Print a completion script for bash, zsh or fish, generated from this parser.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum, value_name = "SHELL")]
        shell: Shell,
    },
    /// Print the manual (roff), generated from this parser: `barrage man | man -l -`.
    Man,
}

/// The shells `barrage completions` writes a script for.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    /// Bash (bash-completion).
    Bash,
    /// Zsh (compsys).
    Zsh,
    /// Fish.
    Fish,
}
