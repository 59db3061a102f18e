//! The fuzz harness: property tests over every parser of what people hand barrage (flags
//! and their values, target files, experiment files, results files) and of what servers
//! send it (HTTP/1.1 responses, HTTP/2 frames and HPACK blocks, Redis and memcached
//! replies), each input taken through the code the command runs, asserting it ends in `Ok`
//! or a clean error: never a panic, within [`LIMIT`], and for servers' bytes in memory
//! bounded by the protocol's limits. Fixed seeds and case counts keep CI reproducible and short
//! (a few seconds per parser); `BARRAGE_FUZZ_CASES=N` runs N cases of each, and
//! `BARRAGE_FUZZ_SEED=S` other ones, for a deeper search. Inputs that once failed are kept in `tests/corpus/fuzz/` and run every time
//! ([`corpus`]).
//!
//! They live in the binary's tests because the binary is what hostile input reaches: a
//! flag goes through clap, then the plan; a case of an experiment file through `run`'s
//! parser; a results file through the reader, the summary and every renderer; a server's
//! bytes through the engine's connections (its `fuzz` hooks, on in these tests only).

mod corpus;
mod experiment;
mod flags;
mod http1;
mod http2;
mod kv;
mod mutate;
mod results;
mod targets;
mod words;

use proptest::test_runner::{Config, RngSeed};
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// The longest one input may take, however hostile: far above what a parser needs (well
/// under a millisecond to a few tens, in a debug build on a busy machine), far below a hang.
pub const LIMIT: Duration = Duration::from_secs(5);

/// `cases` cases from a fixed seed (`BARRAGE_FUZZ_CASES` and `BARRAGE_FUZZ_SEED` override
/// them); no failure files written, since the seed already makes a failure repeat; a
/// failure shrunk for at most a minute.
pub fn config(cases: u32) -> Config {
    let env = |name: &str| std::env::var(name).ok().and_then(|n| n.parse().ok());
    Config {
        cases: env("BARRAGE_FUZZ_CASES").map_or(cases, |n: u64| n as u32),
        rng_seed: RngSeed::Fixed(env("BARRAGE_FUZZ_SEED").unwrap_or(13)),
        failure_persistence: None,
        max_shrink_time: 60_000,
        ..Config::default()
    }
}

/// Runs `f` on `input`, failing when it takes longer than [`LIMIT`].
pub fn within<I: Debug + ?Sized, T>(input: &I, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    assert!(took < LIMIT, "took {took:?} on {input:?}");
    out
}
