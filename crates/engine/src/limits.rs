//! Whether a run's connections fit in the process's limits (open files, address space),
//! raised up to the hard limit when they can be: "too many open files" would otherwise
//! count as the server's errors, and an allocation past the address space aborts with
//! nothing reported. The engine's, since it opens the connections and knows their cost.

/// Open files a run needs besides its connections: its results file and log, each engine
/// thread's runtime and timer, the watcher's reads of /proc, standard streams.
const RESERVED_FILES: u64 = 128;

/// A run of `connections` connections (given by `flag`) on `threads` engine threads (0: one
/// per CPU) fits in the process's limits: open files and address space.
pub fn check_connections(connections: usize, threads: usize, flag: &str) -> Result<(), String> {
    check_open_files(connections, flag)?;
    check_address_space(connections, barrage_plan::plan::engine_threads(threads, connections), flag)
}

/// A run of `connections` connections fits in the process's open-file limit, else the
/// reason it does not, for [`check_connections`]; "too many open files" would otherwise
/// count as errors of the server.
fn check_open_files(connections: usize, flag: &str) -> Result<(), String> {
    let needed = connections as u64 + RESERVED_FILES;
    let Err(hard) = make_room(libc::RLIMIT_NOFILE, needed) else { return Ok(()) };
    Err(format!(
        "{flag} {connections} needs {needed} open files (one per connection, {RESERVED_FILES} for barrage itself), over this process's limit of {hard} (ulimit -n): at most {flag} {} fits; raise the limit for more",
        hard.saturating_sub(RESERVED_FILES)
    ))
}

/// Address space a connection reserves, whatever its protocol: measured at about 128 KiB
/// over TLS for HTTP/1.1, HTTP/2 and HTTP/3 alike (VmPeak of 2,000 connections against
/// 1,000), doubled. The responses it holds come on top.
const CONNECTION_ADDRESS_SPACE: u64 = 256 << 10;

/// Address space an engine thread reserves besides its connections: its stack, its runtime.
const THREAD_ADDRESS_SPACE: u64 = 8 << 20;

/// Address space the run needs besides its threads and connections: the collector, the
/// results file's and the report's buffers.
const RESERVED_ADDRESS_SPACE: u64 = 64 << 20;

/// A run of `connections` connections on `threads` engine threads fits in the process's
/// address-space limit (`ulimit -v`) beside what it has mapped already, else the reason it
/// does not, for [`check_connections`]: past the limit an allocation fails, and a Rust
/// program aborts (exit 134) with nothing reported.
fn check_address_space(connections: usize, threads: usize, flag: &str) -> Result<(), String> {
    let own = mapped_bytes() + RESERVED_ADDRESS_SPACE + threads as u64 * THREAD_ADDRESS_SPACE;
    let needed = own + connections as u64 * CONNECTION_ADDRESS_SPACE;
    let Err(hard) = make_room(libc::RLIMIT_AS, needed) else { return Ok(()) };
    let mib = |bytes: u64| bytes.div_ceil(1 << 20);
    Err(format!(
        "{flag} {connections} needs about {} MiB of address space ({} KiB a connection, {} MiB for barrage itself), over this process's limit of {} MiB (ulimit -v): at most {flag} {} fits; raise the limit for more",
        mib(needed),
        CONNECTION_ADDRESS_SPACE >> 10,
        mib(own),
        hard >> 20,
        hard.saturating_sub(own) / CONNECTION_ADDRESS_SPACE
    ))
}

/// The address space the process has mapped now (`VmSize`), bytes; 0 when not known.
fn mapped_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads a system setting.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

/// The type of a resource `getrlimit` takes.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

/// Makes `needed` of `resource` fit under the process's soft limit, raising it up to the
/// hard one when needed (as Go does with open files for every program; no privilege
/// needed). The hard limit when even that is too small.
fn make_room(resource: Resource, needed: u64) -> Result<(), u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given, nothing else.
    if unsafe { libc::getrlimit(resource, &mut limit) } != 0 || needed <= limit.rlim_cur {
        return Ok(());
    }
    let raised = libc::rlimit { rlim_cur: needed, rlim_max: limit.rlim_max };
    // SAFETY: setrlimit reads the struct it is given.
    if needed <= limit.rlim_max && unsafe { libc::setrlimit(resource, &raised) } == 0 {
        return Ok(());
    }
    Err(limit.rlim_max)
}
