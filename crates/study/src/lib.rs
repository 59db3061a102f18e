//! barrage studies: many plans run as one. Every mode that runs more than one plan (a
//! sweep of load levels, the capacity search, an experiment's cases and repeats, `run
//! --phases`, `testbed bench`) runs them through one [`Runner`], so all of them write the
//! same results files, feed the same live views through an [`Observer`], stop the same way
//! on a signal (the finished runs kept, the table marked partial), and give a typed
//! [`barrage_report::StudyTable`] that `barrage-report` renders once for every format.
//!
//! - [`series`]: [`RunOrder`] (a plan, its labels and files), [`Runner`], [`Observer`];
//! - [`sweep`]: [`Level`]s and phases derived from a base plan ([`Sweep`]);
//! - [`capacity`]: the search as a pure function over a probe callback ([`capacity::search`]);
//! - [`delivery`]: what a capacity probe delivered of its rate, counted in requests;
//! - [`experiment`]: cases, repeats, warm-up, order, background load and testbeds;
//! - [`cases`]: an experiment as its file says it (objectives, warm-up, a case's testbed), checked;
//! - [`bench`]: `testbed bench`, the same load against each front of a testbed;
//! - [`compare`]: the runs `barrage compare` reads, and experiment directories case by case;
//! - [`dir`]: [`StudyDir`], the versioned experiment directory;
//! - [`elsewhere`]: an experiment's runs made by other machines: its plan as JSON, their shards' files;
//! - [`machine`]: whether a run's plan fits this machine;
//! - [`view`]: what a results file says was run;
//! - [`views`]: [`views::Views`], the observer that shows a study's runs live;
//! - [`signals`]: the process's SIGINT, SIGTERM and SIGHUP, and its panics, as the stop of a study.
//!
//! ```no_run
//! use barrage_engine::{Load, Plan, Target};
//! use barrage_study::{RunOrder, Level, Quiet, Runner, Sweep};
//! use std::time::Duration;
//!
//! let target = Target::new(http::Method::GET, "http://127.0.0.1:8080/").unwrap();
//! let plan = Plan::new(vec![target], Load::Closed { concurrency: 1, think_time: Duration::ZERO });
//! let sweep = Sweep {
//!     base: RunOrder::new(plan),
//!     levels: vec![Level::Workers(4), Level::Workers(8)],
//!     step: Duration::from_secs(5),
//!     phases: Vec::new(),
//!     dir: None,
//!     slos: Vec::new(),
//! };
//! let mut quiet = Quiet;
//! let mut runner = Runner::new("sweep", Default::default(), &mut quiet);
//! let table = sweep.run(&mut runner).unwrap();
//! print!("{}", table.to_text());
//! ```

pub mod bench;
pub mod capacity;
pub mod cases;
pub mod compare;
pub mod control;
pub mod delivery;
pub mod demo;
pub mod dir;
pub mod elsewhere;
pub mod experiment;
pub mod machine;
pub mod series;
pub mod signals;
pub mod sweep;
pub mod view;
pub mod views;
pub mod watch;

pub use dir::StudyDir;
pub use series::{Finished, Observer, Quiet, RunOrder, Runner};
pub use sweep::{Level, Sweep};

use std::path::PathBuf;

/// Errors that stop a study (failed requests are data, not errors).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StudyError {
    /// The engine could not run a plan.
    #[error(transparent)]
    Engine(#[from] barrage_engine::EngineError),
    /// A results file could not be read back.
    #[error(transparent)]
    Results(#[from] barrage_metrics::file::FileError),
    /// A testbed could not be brought up.
    #[error(transparent)]
    Testbed(#[from] barrage_testbed::TestbedError),
    /// A file or directory of the study.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// A study directory that cannot be used.
    #[error("{0}")]
    Dir(String),
    /// A case or level that is not a valid plan.
    #[error("{0}")]
    Plan(String),
    /// A live view's own output (an HdrHistogram log) failed.
    #[error("{0}")]
    Output(String),
}
