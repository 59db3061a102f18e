//! A panic anywhere is a bug and never a success: one line saying so and exit 101, from the
//! main thread and from a worker thread whose runtime would otherwise swallow it (before the
//! hook, such a process went on and exited 0). `BARRAGE_TEST_PANIC` is the binary's hidden
//! trigger for these tests.

use crate::util::{barrage, origin};
use barrage_server::ServeConfig;
use std::process::Output;

fn with_panic(at: &str, args: &[&str]) -> Output {
    barrage().args(args).env("BARRAGE_TEST_PANIC", at).env_remove("RUST_BACKTRACE").output().unwrap()
}

fn assert_one_bug_line(out: &Output, message: &str) {
    assert_eq!(out.status.code(), Some(101), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line, no backtrace:\n{err}");
    let line = lines[0];
    let head = format!("barrage: internal error: {message} at crates/cli/main.rs:");
    assert!(line.starts_with(&head) && line.ends_with("; this is a bug, please report it"), "{line}");
}

#[test]
fn a_panic_in_the_main_thread_exits_101_saying_it_is_a_bug() {
    let out = with_panic("main", &["--version"]);
    assert_one_bug_line(&out, "BARRAGE_TEST_PANIC=main");
    assert!(out.stdout.is_empty(), "the command never ran");
}

#[test]
fn a_panic_in_a_worker_thread_exits_101_not_0_with_a_report() {
    let server = origin(ServeConfig::default());
    let out = with_panic("worker", &["run", "-n", "5", "--format", "json", &server.url()]);
    assert_one_bug_line(&out, "BARRAGE_TEST_PANIC=worker");
    assert!(out.stdout.is_empty(), "no report: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(server.requests(), 0, "the process ended at the panic");
}

#[test]
fn rust_backtrace_keeps_rusts_own_panic_message_before_the_bug_line() {
    let out =
        barrage().args(["--version"]).env("BARRAGE_TEST_PANIC", "main").env("RUST_BACKTRACE", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(101));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("panicked at crates/cli/main.rs:") && err.contains("stack backtrace:"), "{err}");
    assert!(err.trim_end().ends_with("this is a bug, please report it"), "{err}");
}
