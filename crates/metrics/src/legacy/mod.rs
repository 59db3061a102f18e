//! Readers of the results-file versions before today's ([`crate::file::FORMAT_VERSION`]),
//! one module per version: its records as that version wrote them and how each becomes
//! today's.
//!
//! # Policy
//! Every version barrage ever wrote to a file is still read, from
//! [`OLDEST_READ_VERSION`] on: users keep their results files, re-render and merge them
//! long after the run, and the run history imports them. A version's reader is frozen
//! code: it changes only to fix a bug in reading that version, never to follow today's
//! types, and each is tested by a file of that version (in `tests`). A new
//! version moves the reader of the one it replaces here, as `vN`, and adds its arm to
//! [`decode`]; which version reads through which module is decided there and nowhere else.
//!
//! Some modules also hold a recorder as that version wrote it ([`v3::RecorderV3`] and
//! so on): the counters' layout and the keyed lists a version had, read into today's
//! [`crate::Recorder`].

use crate::file::Record;

pub(crate) mod v10;
pub(crate) mod v11;
pub(crate) mod v3;
pub(crate) mod v4;
pub(crate) mod v5;
pub(crate) mod v6;
pub(crate) mod v7;
pub(crate) mod v8;
pub(crate) mod v9;

#[cfg(test)]
mod tests;

/// The oldest encoding version this build still reads. Version 3 has no boot ID, process roots,
/// per-backend timelines, `unreachable` error kind or stale connection retries: they read empty.
pub const OLDEST_READ_VERSION: u16 = 3;

/// One record of a file of `version`, older than today's, read into today's.
pub(crate) fn decode(version: u16, payload: &[u8]) -> postcard::Result<Record> {
    match version {
        3 => postcard::from_bytes::<v3::Record>(payload).map(Record::from),
        4 => postcard::from_bytes::<v4::Record>(payload).map(Record::from),
        5 => postcard::from_bytes::<v5::Record>(payload).map(Record::from),
        6 => postcard::from_bytes::<v6::Record>(payload).map(Record::from),
        7 => postcard::from_bytes::<v7::Record>(payload).map(Record::from),
        8 => postcard::from_bytes::<v8::Record>(payload).map(Record::from),
        9 => postcard::from_bytes::<v9::Record>(payload).map(Record::from),
        10 => postcard::from_bytes::<v10::Record>(payload).map(Record::from),
        11 => postcard::from_bytes::<v11::Record>(payload).map(Record::from),
        _ => postcard::from_bytes(payload),
    }
}
