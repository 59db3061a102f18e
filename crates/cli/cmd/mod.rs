//! One module per subcommand: glue from arguments to the library crates; `emit` is the one
//! way a report leaves, `plan` the one way flags become a plan.

/// Appends a line to a command's output, which is written at once when it is done
/// ([`emit::print`]: a closed pipe is success, not a panic).
macro_rules! say {
    ($o:expr, $($t:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($o, $($t)*);
    }};
}

pub mod bench;
pub mod capacity;
pub mod collect;
pub mod compare;
pub mod completions;
pub mod demo;
pub mod emit;
pub mod experiment;
pub mod history;
pub mod history_trend;
pub mod otel;
pub mod plan;
pub mod report;
pub mod run;
pub mod serve;
pub mod sweep;
pub mod takeover;
pub mod testbed;
pub mod trace;
