//! One module per subcommand: glue from arguments to the library crates; `emit` is the one
//! way a report leaves, `plan` the one way flags become a plan.

pub mod bench;
pub mod capacity;
pub mod compare;
pub mod completions;
pub mod demo;
pub mod emit;
pub mod experiment;
pub mod plan;
pub mod report;
pub mod run;
pub mod serve;
pub mod sweep;
pub mod testbed;
