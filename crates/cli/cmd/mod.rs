//! One module per subcommand: glue from arguments to the library crates.

pub mod bench;
pub mod capacity;
pub mod compare;
pub mod demo;
pub mod experiment;
pub mod export;
pub mod live_metrics;
pub mod report;
pub mod run;
pub mod serve;
pub mod sweep;
pub mod testbed;
pub mod tui;
pub mod watch;
