//! barrage's integration tests: one binary, real servers on 127.0.0.1:0, every run bounded.

mod albums;
mod backends;
mod bounds;
mod cache;
mod cli;
mod experiments;
mod faults;
mod files;
mod flows;
mod gates;
mod hostile;
mod html;
mod live;
mod measure;
mod panics;
mod pick;
mod reqlog;
mod request;
mod retries;
mod secrets;
mod signals;
mod studies;
mod testbed;
mod uploads;
mod util;
mod watch;
