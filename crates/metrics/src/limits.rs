//! The upper limits of what this crate reads and parses, in one place (docs/reference.md, "Limits"):
//! every duration a flag or file gives, every record and histogram of a results file, and
//! [`read_capped`], the one way a file someone else may have written is read whole.
//!
//! A limit exists so that no input, however hostile (`@/dev/zero`, a crafted results
//! file, `-d 1e19s`), can make barrage allocate without bound, hang or overflow a clock:
//! what is over a limit is refused with a message naming it.
//!
//! ```
//! use barrage_metrics::limits::{read_capped, MAX_DURATION};
//!
//! assert_eq!(MAX_DURATION.as_secs(), 365 * 24 * 3600);
//! let err = read_capped(std::path::Path::new("/dev/zero"), 1024).unwrap_err();
//! assert_eq!(err.to_string(), "over the 1 KiB limit");
//! ```

use std::io::{self, Read};
use std::path::Path;
use std::time::Duration;

/// The longest duration any flag or file may give (`-d`, `--step`, `--timeout`, `--backoff`,
/// `--think-time`, `--at`, an experiment's `duration`, `warmup` and `pause`, `serve
/// --latency` and `--stall`, an SLO's latency bound): a year. Far beyond any test, and far
/// below where adding it to a clock reading could overflow (about 292 years of
/// nanoseconds).
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// The largest record of a results file accepted when reading; anything bigger is
/// corruption (a busy one-second interval takes a few KiB).
pub const MAX_RECORD_BYTES: u32 = 64 << 20;

/// The longest run whose arrivals a results file lists second by second (its
/// [`crate::file::Record::Schedule`], a few MiB at most): a week. A longer run has none,
/// and its report no coverage of intended arrivals.
pub const MAX_SCHEDULE_SECONDS: u64 = 7 * 24 * 3600;

/// The largest histogram of a results file once inflated. Ours (1 µs to an hour at three
/// significant digits: 23,552 counters of at most 9 bytes each) takes under 208 KiB at
/// worst; the length a crafted file declares is never trusted beyond this.
pub const MAX_HISTOGRAM_BYTES: usize = 1 << 20;

/// The most counters a histogram of a results file may declare by its bounds (ours has
/// 23,552): a histogram is allocated from its header before its counts are read.
pub const MAX_HISTOGRAM_COUNTERS: u64 = 1 << 20;

// The most entries a list of a results file may hold. Each is refused from its length
// before it is decoded: an entry decodes to many times its bytes (an empty URL of one byte
// to 24, an empty key of 11 to 150), so only the record's size would otherwise bound it.
// The lists of a recorder that construction bounds (its keys, `MAX_KEYS`; its phases,
// classes, status codes and error examples) keep those bounds.

/// The most ticks of an interval's timeline, and of each backend's: an interval spans a
/// second, ten ticks ([`TICK`](crate::recorder::TICK)); a thread that hands its interval
/// over late adds the few it ran past the end. A hundred times that, 1,000, keeps all the
/// timelines of a record (the interval's and 320 keys') under 5 MiB decoded. A recorder
/// writes no more than this.
pub const MAX_INTERVAL_TICKS: usize = 100 * TICKS_PER_INTERVAL;

/// Ticks in an interval of [`INTERVAL_MS`](crate::file::INTERVAL_MS).
const TICKS_PER_INTERVAL: usize = crate::file::INTERVAL_MS as usize / crate::recorder::TICK.as_millis() as usize;

/// The most request samples of an interval, for the scatter plot: [`SAMPLES_PER_TICK`]
/// per tick and engine thread are 102,400 a second at the most threads a run has (1,024,
/// `barrage_plan::limits::MAX_THREADS`); ten times that, rounded to 2^20 (12 MiB decoded).
/// A recorder writes no more than this.
///
/// [`SAMPLES_PER_TICK`]: crate::recorder::SAMPLES_PER_TICK
pub const MAX_INTERVAL_SAMPLES: usize = 1 << 20;

/// The most URLs of a run's header: a run's targets (`barrage_plan::limits::MAX_TARGETS`),
/// a scenario's steps or a key-value run's servers.
pub const MAX_RUN_URLS: usize = 1_000_000;

/// The most steps of a run's header: the steps of `--rate` (`barrage_plan::limits::MAX_LEVELS`).
pub const MAX_RUN_STEPS: usize = 1000;

/// The most groups of a scenario in a run's header (`barrage_plan::limits::MAX_GROUPS`).
pub const MAX_RUN_GROUPS: usize = 64;

/// The most steps a group of the header lists: its flow's, each once
/// (`barrage_plan::limits::MAX_FLOW_STEPS`).
pub const MAX_GROUP_STEPS: usize = 1000;

/// The most processes one interval watches (`--monitor`, a testbed's servers).
pub const MAX_WATCHED: usize = 1024;

/// The most roots a watched process names (every process of the name `--monitor` gives
/// that is not the child of one: a handful in practice); a sample names the first of them.
pub const MAX_ROOTS: usize = 1024;

/// Reads the file at `path` whole, refusing one over `cap` bytes: a regular file from its
/// size, before reading; a pipe or a device (`/dev/zero`, `/dev/stdin`) once one byte past
/// the cap has been read. Memory never goes past `cap + 1` bytes, however the input lies.
/// The error over the cap says `over the N limit`.
pub fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata().ok().filter(std::fs::Metadata::is_file).map(|m| m.len());
    read_capped_from(file, size, cap)
}

/// [`read_capped`] of a reader (standard input), with its size when known.
pub fn read_capped_from(mut input: impl Read, size: Option<u64>, cap: u64) -> io::Result<Vec<u8>> {
    if size.is_some_and(|s| s > cap) {
        return Err(over(cap));
    }
    let mut data: Vec<u8> = Vec::new();
    // Growth by doubling, but never past the cap: `read_to_end` alone would double a
    // buffer of `cap` bytes to `2 × cap` for the one byte that proves the input too long.
    // A file of known size is read into one buffer of its size and a byte (the byte shows
    // whether it grew meanwhile).
    let mut chunk = size.map_or(64 << 10, |s| s.saturating_add(1)).max(1);
    let limit = cap.saturating_add(1);
    loop {
        let room = limit - data.len() as u64;
        if room == 0 {
            return Err(over(cap));
        }
        let want = chunk.min(room);
        data.try_reserve_exact(usize::try_from(want).unwrap_or(usize::MAX))
            .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "out of memory"))?;
        // Exactly the room reserved: std reads into it without zeroing it first, and never
        // grows the buffer.
        let read = (&mut input).take(want).read_to_end(&mut data)?;
        if (read as u64) < want {
            // Short: the input ended.
            break;
        }
        chunk = data.len() as u64;
    }
    if data.len() as u64 > cap {
        return Err(over(cap));
    }
    Ok(data)
}

fn over(cap: u64) -> io::Error {
    io::Error::new(io::ErrorKind::FileTooLarge, format!("over the {} limit", fmt_limit(cap)))
}

/// A limit in bytes as docs/reference.md writes it: `1 GiB`, `16 MiB`, `512 bytes`.
pub fn fmt_limit(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_reads_refuse_what_is_over_without_reading_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_capped(&path, 10).unwrap(), b"0123456789");
        assert_eq!(read_capped(&path, 9).unwrap_err().to_string(), "over the 9 bytes limit");
        // A sparse file far over the cap is refused from its size, never read.
        std::fs::File::create(&path).unwrap().set_len(1 << 40).unwrap();
        assert_eq!(read_capped(&path, 1 << 20).unwrap_err().kind(), io::ErrorKind::FileTooLarge);
        // An endless device stops one byte past the cap, the buffer never larger.
        let err = read_capped(Path::new("/dev/zero"), 3 << 20).unwrap_err();
        assert_eq!(err.to_string(), "over the 3 MiB limit");
        // A reader of unknown length, just at and just over the cap.
        let text = vec![b'x'; 100_000];
        assert_eq!(read_capped_from(&text[..], None, 100_000).unwrap().len(), 100_000);
        assert!(read_capped_from(&text[..], None, 99_999).is_err());
        assert!(read_capped_from(&[][..], None, 0).unwrap().is_empty());
    }

    #[test]
    fn limits_read_as_the_readme_writes_them() {
        assert_eq!(fmt_limit(1 << 30), "1 GiB");
        assert_eq!(fmt_limit(256 << 20), "256 MiB");
        assert_eq!(fmt_limit(1500), "1500 bytes");
    }
}
