//! The run history's control channel: a short run against a fixed reference, kept beside a
//! study's runs, so that a change the reference shows too is the machine's, not the system's
//! (`--control`).

use crate::RunOrder;
use barrage_engine::{Load, Plan, Target};
use std::time::Duration;

/// How long the control run lasts.
pub const CONTROL_LENGTH: Duration = Duration::from_secs(2);

/// The reference a control run measures.
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    /// barrage's own origin, started in the process for the control run: the machine's
    /// CPU, kernel and loopback, whatever the system under test does.
    Own,
    /// A fixed reference the user keeps (a static nginx on the load machine).
    Url(String),
    /// None, even where a testbed is used (`--control none`).
    Off,
}

impl std::str::FromStr for Control {
    type Err = String;
    fn from_str(s: &str) -> Result<Control, String> {
        match s {
            "self" => Ok(Control::Own),
            "none" => Ok(Control::Off),
            url if url.starts_with("http://") || url.starts_with("https://") => Ok(Control::Url(url.to_string())),
            other => Err(format!("'{other}': `self` (barrage's own origin), `none`, or an http:// or https:// URL")),
        }
    }
}

impl Control {
    /// The control of a study: the one asked for, else barrage's own origin where the study
    /// uses a testbed (its changes are the system's own to find), else none.
    pub fn of(asked: Option<&Control>, testbed: bool) -> Option<Control> {
        match asked {
            Some(Control::Off) => None,
            Some(c) => Some(c.clone()),
            None => testbed.then_some(Control::Own),
        }
    }
}

/// The control run against `url`: two workers, closed loop, [`CONTROL_LENGTH`], one engine
/// thread (an origin in the process keeps the other core).
pub fn order(url: &str) -> Result<RunOrder, String> {
    let mut p = Plan::new(
        vec![Target::new(http::Method::GET, url)?],
        Load::Closed { concurrency: 2, think_time: Duration::ZERO },
    );
    p.duration = Some(CONTROL_LENGTH);
    p.timeout = Duration::from_secs(5);
    p.connect_timeout = Duration::from_secs(5);
    p.threads = 1;
    Ok(RunOrder::new(p).label("channel", "control"))
}
