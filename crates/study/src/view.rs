//! What a results file says was run: the plan's view, which the plan crate defines beside
//! the [`barrage_plan::Plan`] it shows (see [`barrage_plan::view`]).

pub use barrage_plan::view::{digest, PlanView, VIEW_TARGETS};
