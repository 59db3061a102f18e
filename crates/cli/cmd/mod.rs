//! One module per subcommand: glue from arguments to the library crates.

pub mod bench;
pub mod demo;
pub mod report;
pub mod run;
pub mod serve;
pub mod testbed;
pub mod watch;
