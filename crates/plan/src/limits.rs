//! The upper limits of what a plan may ask for, in one place (docs/reference.md, "Limits"). Each
//! bounds what an input could otherwise make barrage allocate or spend: a rate, a count of
//! workers or connections, a file read whole, the cases of an experiment. A value over
//! one is refused up front, naming the flag or key and the limit. Durations are bounded
//! where they are parsed ([`barrage_metrics::limits::MAX_DURATION`]).

/// The highest rate of an open-loop run (each step of `--rate`, `capacity --start-rate`
/// and `--max-rate`, `testbed bench --rate`): ten million requests per second, above what
/// one machine sends. Past it, every request would be due at once.
pub const MAX_RATE: f64 = 1e7;

/// The most workers (`-c`), connections (`--connections`) and requests in flight
/// (`--max-in-flight`) of a run: each holds a task and a connection. A run also needs
/// that many open files within the process's limit (`ulimit -n`).
pub const MAX_WORKERS: u32 = 1_000_000;

/// The most HTTP/2 streams one connection carries at once (`--streams`): as many as
/// `--pipeline` allows commands. Each stream's receive window (1 MiB) is what a server may
/// send it unread, so this also bounds what one connection may make barrage buffer.
pub const MAX_STREAMS: u32 = 1024;

/// The most engine threads (`--threads`, `serve --threads`).
pub const MAX_THREADS: u32 = 1024;

/// The most levels of a sweep (`-c 8..96/8`) or steps of `--rate 10,50,100`.
pub const MAX_LEVELS: usize = 1000;

/// The most retries of one request (`--retries`).
pub const MAX_RETRIES: u32 = 1000;

/// The largest body barrage sends: a generated body, a body file, a form file or a whole
/// form, and the bodies of a target file in all. Bodies are held in memory once per run,
/// so this bounds what a file (or a device such as /dev/zero) can make barrage allocate.
pub const MAX_BODY: u64 = 1 << 30;

/// The largest target file (`--targets`) or URL list (`--urls`), standard input included.
pub const MAX_TARGETS_FILE: u64 = 256 << 20;

/// The most targets of a target file or URL list (a URL template's `--objects` have no
/// limit: they are ids, not targets held in memory).
pub const MAX_TARGETS: usize = 1_000_000;

/// The largest CA file (`--cacert`): the system's whole bundle is a few hundred KiB.
pub const MAX_CA_FILE: u64 = 16 << 20;

/// The largest experiment file.
pub const MAX_EXPERIMENT_FILE: u64 = 16 << 20;

/// The most combinations of an experiment's factors, checked from the level counts before
/// any case is built (nine factors of ten levels are a billion).
pub const MAX_CASES: u64 = 100_000;

/// The most repeats of an experiment's cases.
pub const MAX_REPEATS: u32 = 10_000;

/// The most runs of an experiment: combinations × repeats.
pub const MAX_RUNS: u64 = 1_000_000;

/// Reads a file a flag or another file names, refusing one over `cap` bytes with the
/// message `PATH: over the N limit` (`PATH: cannot read: …` when it cannot be read).
pub fn read_file(path: &std::path::Path, cap: u64) -> Result<Vec<u8>, String> {
    barrage_metrics::limits::read_capped(path, cap).map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => format!("{}: {e}", path.display()),
        _ => format!("cannot read {}: {e}", path.display()),
    })
}

/// The most steps a flow of a scenario runs, its repeats expanded (and the most times a
/// repeat may run its steps).
pub const MAX_FLOW_STEPS: usize = 1000;

/// The most flows of a scenario file.
pub const MAX_FLOWS: usize = 64;

/// The most groups of a scenario file: each is reported on its own.
pub const MAX_GROUPS: usize = 64;

// A results file holds whatever a run may ask for: its reader refuses longer lists, and a
// run must never write a file that does not read back. Checked as the crate builds.
const _: () = {
    use barrage_metrics::limits as file;
    assert!(MAX_TARGETS <= file::MAX_RUN_URLS && MAX_FLOWS * MAX_FLOW_STEPS <= file::MAX_RUN_URLS);
    assert!(MAX_LEVELS <= file::MAX_RUN_STEPS);
    assert!(MAX_GROUPS <= file::MAX_RUN_GROUPS && MAX_FLOW_STEPS <= file::MAX_GROUP_STEPS);
    // The samples of a second, ten times over: ten a tick, ten ticks, per engine thread.
    let per_second = MAX_THREADS as usize * barrage_metrics::recorder::SAMPLES_PER_TICK as usize * 10;
    assert!(per_second * 10 <= file::MAX_INTERVAL_SAMPLES);
};
