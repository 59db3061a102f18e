//! Redis and memcached load: the wire codecs (pure functions, no I/O), a pipelined
//! connection ([`conn`]), commands and connections made ready ([`run`]), and the groups of
//! lanes that send them on the engine's slots ([`group`]).
//!
//! Each protocol has encoders that append one command to an output buffer, and a parser that
//! reads the first reply at the start of a read buffer. A parser returns
//! `Ok(Some((reply, consumed)))` for a complete reply (the caller advances its buffer by
//! `consumed` and calls again: pipelined replies come out one at a time), `Ok(None)` when the
//! buffer holds only a prefix of one (read more), and `Err` when the bytes are not the protocol
//! (the connection is out of step and must be closed).
//!
//! - [`resp`]: Redis, RESP2 and RESP3, on the `redis-protocol` crate.
//! - [`memcache`]: memcached, the text and the meta protocols, by hand.
//!
//! Both map every reply onto the one [`Reply`], which says what a load generator counts: a hit
//! and its size, a miss, a store, or a server error with its class and where its message is.
//! Nothing here allocates per reply or per command beyond the caller's buffer growing, and
//! every length the server declares is bounded ([`MAX_VALUE`], [`MAX_LINE`]) before it is
//! trusted, so a broken or hostile server cannot make the client reserve gigabytes.

pub(crate) mod conn;
mod group;
pub mod memcache;
pub mod resp;
mod run;

pub(crate) use group::{spawn_groups, Feed};
pub use run::KvRun;

use std::ops::Range;

/// The longest value a reply may declare (1 GiB); above it the reply is a [`ProtocolError`].
/// Redis refuses bulk strings over 512 MB by default and memcached's items are smaller still.
pub const MAX_VALUE: u64 = 1 << 30;

/// The longest reply line (without its CRLF); a line still unterminated past it is a
/// [`ProtocolError`] rather than a reason to keep reading.
pub const MAX_LINE: usize = 8 * 1024;

/// The most bytes one reply may take, all its frames or values together: the largest value
/// and 1 MiB of lines. Past it the reply is a [`ProtocolError`]: an aggregate of a billion
/// elements, or a `get` whose values never end, must not make the client read without end.
pub const MAX_REPLY: usize = MAX_VALUE as usize + (1 << 20);

/// How far a reply not yet complete was walked, for the next parse to go on from there: a
/// connection keeps one between reads, so a reply that arrives in many reads (an aggregate,
/// a memcached `get` of many values) is walked once, not once per read. Without it a
/// server trickling `*1\r\n` a few bytes at a time cost time quadratic in the reply: 100 s
/// for 80 KB. Only at the start of a reply's frame (or `VALUE` block): a frame cut short is
/// read again whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Partial {
    /// Where the next frame (or block) starts.
    at: usize,
    /// RESP: the frames still to come (0: nothing walked yet).
    left: u64,
    /// memcached: the values walked, and their bytes.
    values: usize,
    bytes: usize,
}

/// One reply, as a load generator counts it. Ranges index the buffer given to the parser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A value came back (a GET hit): `len` bytes of data (the sum over `VALUE` blocks for a
    /// memcached multi-key `get`).
    Value {
        /// The value's size in bytes, as the server declared it.
        len: usize,
    },
    /// Nothing there: a RESP nil (`$-1`, `*-1`, RESP3 `_`), memcached `END` without a value,
    /// `EN`, and `NOT_FOUND`/`NF` (to a delete, touch, incr or CAS, the caller knows which).
    Miss,
    /// memcached text `STORED`.
    Stored,
    /// A success without a value: RESP `+OK`, memcached `DELETED`, and meta `HD` (stored after
    /// `ms`, deleted after `md`, a hit after `mg` without `v`: the caller knows which it sent).
    Ok,
    /// The server refused or failed the command; `class` says how and `message` is where the
    /// whole message is (without the `-` and the CRLF), to keep as the class's example.
    Error {
        /// What kind of refusal or failure.
        class: ErrorClass,
        /// The message's bytes in the parsed buffer.
        message: Range<usize>,
    },
    /// Any other well-formed reply (an integer, a status other than OK, an aggregate, `MN`).
    Other,
}

/// The kinds of error and refusal replies that a report counts apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// Redis `-ERR`: a generic error.
    Err,
    /// Redis `-WRONGTYPE`: the key holds another type.
    WrongType,
    /// Redis Cluster `-MOVED`: the slot lives on another node.
    Moved,
    /// Redis Cluster `-ASK`: the slot is migrating.
    Ask,
    /// Redis `-LOADING`: the dataset is still loading.
    Loading,
    /// Redis `-BUSY`: a script is running.
    Busy,
    /// Redis `-NOAUTH`: authentication required.
    NoAuth,
    /// Redis `-WRONGPASS`: bad credentials.
    WrongPass,
    /// Redis `-NOPERM`: the ACL forbids the command.
    NoPerm,
    /// Redis `-OOM`: over `maxmemory`.
    Oom,
    /// Redis `-READONLY`: a write sent to a replica.
    ReadOnly,
    /// Redis `-MASTERDOWN`: the replica lost its master.
    MasterDown,
    /// Redis `-TRYAGAIN`: a multi-key command during resharding.
    TryAgain,
    /// Redis `-CLUSTERDOWN`: the cluster is down.
    ClusterDown,
    /// A Redis error whose first word is none of the above (modules define their own).
    OtherRedis,
    /// memcached `ERROR`: an unknown command.
    McError,
    /// memcached `CLIENT_ERROR <msg>`: the client sent something bad.
    ClientError,
    /// memcached `SERVER_ERROR <msg>`: the server failed (it may close the connection).
    ServerError,
    /// memcached `NOT_STORED`/`NS`: an add/replace condition failed.
    NotStored,
    /// memcached `EXISTS`/`EX`: a CAS mismatch.
    Exists,
}

impl ErrorClass {
    /// The class of a Redis error from its message (`MOVED 3999 127.0.0.1:6381` is `Moved`).
    pub fn of_redis(message: &[u8]) -> ErrorClass {
        let word = message.split(|&b| b == b' ').next().unwrap_or_default();
        match word {
            b"ERR" => ErrorClass::Err,
            b"WRONGTYPE" => ErrorClass::WrongType,
            b"MOVED" => ErrorClass::Moved,
            b"ASK" => ErrorClass::Ask,
            b"LOADING" => ErrorClass::Loading,
            b"BUSY" => ErrorClass::Busy,
            b"NOAUTH" => ErrorClass::NoAuth,
            b"WRONGPASS" => ErrorClass::WrongPass,
            b"NOPERM" => ErrorClass::NoPerm,
            b"OOM" => ErrorClass::Oom,
            b"READONLY" => ErrorClass::ReadOnly,
            b"MASTERDOWN" => ErrorClass::MasterDown,
            b"TRYAGAIN" => ErrorClass::TryAgain,
            b"CLUSTERDOWN" => ErrorClass::ClusterDown,
            _ => ErrorClass::OtherRedis,
        }
    }

    /// The name a report shows: the protocol's own word (`OTHER` for an unknown Redis prefix,
    /// whose message example then shows the word).
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Err => "ERR",
            ErrorClass::WrongType => "WRONGTYPE",
            ErrorClass::Moved => "MOVED",
            ErrorClass::Ask => "ASK",
            ErrorClass::Loading => "LOADING",
            ErrorClass::Busy => "BUSY",
            ErrorClass::NoAuth => "NOAUTH",
            ErrorClass::WrongPass => "WRONGPASS",
            ErrorClass::NoPerm => "NOPERM",
            ErrorClass::Oom => "OOM",
            ErrorClass::ReadOnly => "READONLY",
            ErrorClass::MasterDown => "MASTERDOWN",
            ErrorClass::TryAgain => "TRYAGAIN",
            ErrorClass::ClusterDown => "CLUSTERDOWN",
            ErrorClass::OtherRedis => "OTHER",
            ErrorClass::McError => "ERROR",
            ErrorClass::ClientError => "CLIENT_ERROR",
            ErrorClass::ServerError => "SERVER_ERROR",
            ErrorClass::NotStored => "NOT_STORED",
            ErrorClass::Exists => "EXISTS",
        }
    }
}

/// Bytes that are not the protocol: the connection is out of step and must be closed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A line ran past [`MAX_LINE`] bytes without a CRLF.
    #[error("reply line longer than {MAX_LINE} bytes")]
    LineTooLong,
    /// A declared length or count over [`MAX_VALUE`].
    #[error("reply declares {0} bytes or items, over the limit of {MAX_VALUE}")]
    TooLarge(u64),
    /// A reply of more than [`MAX_REPLY`] bytes.
    #[error("a reply longer than {MAX_REPLY} bytes")]
    ReplyTooLong,
    /// A reply this parser does not understand; says what was expected.
    #[error("unexpected reply: {0}")]
    Unexpected(&'static str),
    /// The `redis-protocol` decoder refused the bytes.
    #[error("RESP: {0}")]
    Resp(#[from] redis_protocol::error::RedisProtocolError),
}

/// The first line of `buf` without its CRLF, or `None` when it is not complete yet.
fn line(buf: &[u8]) -> Result<Option<&[u8]>, ProtocolError> {
    let window = &buf[..buf.len().min(MAX_LINE + 2)];
    match window.windows(2).position(|w| w == b"\r\n") {
        Some(end) => Ok(Some(&buf[..end])),
        None if window.len() == MAX_LINE + 2 => Err(ProtocolError::LineTooLong),
        None => Ok(None),
    }
}

/// A decimal length or count, refused over [`MAX_VALUE`].
fn length(digits: &[u8]) -> Result<usize, ProtocolError> {
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(ProtocolError::Unexpected("a decimal length"));
    }
    let n = digits.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    if n > MAX_VALUE {
        return Err(ProtocolError::TooLarge(n));
    }
    Ok(n as usize)
}

/// Appends `n` in decimal (itoa: no formatter, no allocation).
fn put_decimal(out: &mut bytes::BytesMut, n: u64) {
    append(out, itoa::Buffer::new().format(n).as_bytes());
}

/// Appends `src` to `out`. A command is a dozen pieces of a few bytes (a length, a name, a
/// key, line ends): `extend_from_slice` copies each with a call to `memcpy`, whose cost for
/// so few bytes is the call, and those calls were 5% of a pipelined GET's CPU. A piece of at
/// most 32 bytes is copied here as two fixed-size blocks that overlap, as `memcpy` does
/// inside, which the compiler turns into a load and a store each; a longer one (a value)
/// goes to `memcpy`.
#[inline(always)]
pub(crate) fn append(out: &mut bytes::BytesMut, src: &[u8]) {
    let n = src.len();
    if n > 32 {
        out.extend_from_slice(src);
        return;
    }
    out.reserve(n);
    let len = out.len();
    copy_short(&mut out.spare_capacity_mut()[..n], src);
    // SAFETY: `copy_short` initialised the `n` bytes after `len`, within the capacity
    // `reserve` made.
    unsafe { out.set_len(len + n) };
}

/// Appends the first `len` bytes (at most 8) of `word`, little-endian, with one store.
#[inline(always)]
pub(crate) fn append_word(out: &mut bytes::BytesMut, word: u64, len: usize) {
    debug_assert!(len <= 8, "a word has 8 bytes");
    out.reserve(8);
    let at = out.len();
    for (d, b) in out.spare_capacity_mut()[..8].iter_mut().zip(word.to_le_bytes()) {
        d.write(b);
    }
    // SAFETY: the 8 bytes after `at`, within the capacity `reserve` made, were initialised;
    // the length takes the first `len` of them.
    unsafe { out.set_len(at + len.min(8)) };
}

/// Copies `src` into `dst`, of the same length: up to 32 bytes with fixed-size moves.
#[inline(always)]
fn copy_short(dst: &mut [std::mem::MaybeUninit<u8>], src: &[u8]) {
    fn block<const K: usize>(dst: &mut [std::mem::MaybeUninit<u8>], at: usize, src: &[u8]) {
        let bytes: &[u8; K] = src[at..at + K].try_into().expect("K bytes");
        for (d, b) in dst[at..at + K].iter_mut().zip(bytes) {
            d.write(*b);
        }
    }
    debug_assert_eq!(dst.len(), src.len(), "a copy fills its destination");
    let n = src.len();
    match n {
        0 => {}
        1..=3 => {
            // The first, middle and last byte: all of them when there are at most 3.
            for i in [0, n / 2, n - 1] {
                dst[i].write(src[i]);
            }
        }
        4..=7 => {
            block::<4>(dst, 0, src);
            block::<4>(dst, n - 4, src);
        }
        8..=16 => {
            block::<8>(dst, 0, src);
            block::<8>(dst, n - 8, src);
        }
        17..=32 => {
            block::<16>(dst, 0, src);
            block::<16>(dst, n - 16, src);
        }
        _ => {
            for (d, b) in dst.iter_mut().zip(src) {
                d.write(*b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length, across each block size's edges, appends exactly its bytes after what
    /// the buffer held, as `extend_from_slice` does.
    #[test]
    fn append_copies_every_length_exactly() {
        let src: Vec<u8> = (1..=40u8).collect();
        for n in 0..=src.len() {
            for before in [0, 3, 4096] {
                let mut out = bytes::BytesMut::from(&vec![0xAA; before][..]);
                append(&mut out, &src[..n]);
                let mut want = vec![0xAA; before];
                want.extend_from_slice(&src[..n]);
                assert_eq!(&out[..], &want[..], "{n} bytes after {before}");
            }
        }
    }

    #[test]
    fn redis_classes_come_from_the_first_word() {
        for (msg, class) in [
            (&b"ERR unknown command 'FOO'"[..], ErrorClass::Err),
            (b"WRONGTYPE Operation against a key holding the wrong kind of value", ErrorClass::WrongType),
            (b"MOVED 3999 127.0.0.1:6381", ErrorClass::Moved),
            (b"LOADING Redis is loading the dataset in memory", ErrorClass::Loading),
            (b"NOAUTH Authentication required.", ErrorClass::NoAuth),
            (b"ERRX not err", ErrorClass::OtherRedis),
            (b"", ErrorClass::OtherRedis),
        ] {
            assert_eq!(ErrorClass::of_redis(msg), class, "{}", String::from_utf8_lossy(msg));
        }
        assert_eq!(ErrorClass::Moved.name(), "MOVED");
        assert_eq!(ErrorClass::ServerError.name(), "SERVER_ERROR");
    }

    #[test]
    fn lines_are_bounded() {
        assert_eq!(line(b"END\r\nx").unwrap(), Some(&b"END"[..]));
        assert_eq!(line(b"END\r").unwrap(), None);
        assert_eq!(line(&[b'a'; MAX_LINE + 1]).unwrap(), None);
        assert!(matches!(line(&[b'a'; MAX_LINE + 2]), Err(ProtocolError::LineTooLong)));
        let mut ok = vec![b'a'; MAX_LINE];
        ok.extend_from_slice(b"\r\n");
        assert_eq!(line(&ok).unwrap().map(<[u8]>::len), Some(MAX_LINE));
    }

    #[test]
    fn lengths_are_bounded() {
        assert_eq!(length(b"5").unwrap(), 5);
        assert_eq!(length(b"1073741824").unwrap(), 1 << 30);
        assert!(matches!(length(b"1073741825"), Err(ProtocolError::TooLarge(1073741825))));
        assert!(matches!(length(b"99999999999999999999"), Err(ProtocolError::Unexpected(_))));
        assert!(length(b"").is_err());
        assert!(length(b"-1").is_err());
        assert!(length(b"5x").is_err());
    }

    #[test]
    fn decimals() {
        let mut out = bytes::BytesMut::new();
        for n in [0, 7, 10, 1234567890, u64::MAX] {
            out.clear();
            put_decimal(&mut out, n);
            assert_eq!(&out[..], n.to_string().as_bytes());
        }
    }
}
