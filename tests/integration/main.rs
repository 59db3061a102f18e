//! barrage's integration tests: one binary, real servers on 127.0.0.1:0, every run bounded.

mod albums;
// barrage's own argument parser (the definition clap parses), so that tests can walk every
// flag (modes) and parse every command line of the docs (docs) without running barrage.
#[allow(dead_code)]
#[path = "../../crates/cli/args/mod.rs"]
mod args;
mod backends;
mod bounds;
mod cache;
mod cli;
mod counting;
mod deploy;
mod docs;
mod experiments;
mod faults;
mod files;
mod fleet;
mod fleet_refuse;
mod flows;
mod fronts;
mod gates;
mod history;
mod hostile;
mod html;
mod http1;
mod http3;
mod kv;
mod live;
mod measure;
mod modes;
mod origins;
mod otel;
mod panics;
mod pick;
mod reqlog;
mod request;
mod retries;
mod secrets;
mod shard;
mod signals;
mod streams;
mod studies;
mod targets;
mod testbed;
mod trace;
mod uploads;
mod util;
mod watch;
mod workloads;
