//! Redis's RESP: commands out, RESP2 and RESP3 replies in.
//!
//! - [`encode_command`] appends a command as an array of bulk strings, which is what a client
//!   sends in both RESP2 and RESP3 (RESP3 changes only the replies, after `HELLO 3`).
//! - [`parse_resp2`] and [`parse_resp3`] read the first reply in a buffer into a [`Reply`]:
//!   a bulk (blob) string is a [`Reply::Value`], a nil (`$-1`, `*-1`, RESP3 `_`) a
//!   [`Reply::Miss`], `+OK` is [`Reply::Ok`], an error is [`Reply::Error`] classed by its first
//!   word, and anything else (integers, other statuses, aggregates) is [`Reply::Other`].
//!
//! Scalar replies, the ones GET and SET get, are decoded by `redis-protocol`'s `decode_range`,
//! which borrows the buffer and allocates nothing. Two things are checked here first: the
//! length a bulk string declares (the crate would wait for any length, so a corrupt `$9999…`
//! would make the caller read forever), and aggregates, which this module walks itself with a
//! counter instead of handing them to the crate, whose parser recurses once per nesting level
//! (a server sending `*1\r\n` a million times would overflow the stack) and allocates a `Vec`
//! or a map per aggregate, neither of which a load generator that only counts them needs.

use super::{append, append_word, length, line, ErrorClass, Partial, ProtocolError, Reply, MAX_REPLY};
use bytes::BytesMut;
use redis_protocol::{resp2, resp3};

/// Appends `args` as a RESP array of bulk strings: `*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n…`.
///
/// Written by hand rather than with `resp2::encode::encode_borrowed`: that needs the args as a
/// `[BorrowedFrame]`, which for a run-time number of arguments is either a `Vec` per command or
/// a fixed-size array with a cap on arguments; the format is five lines of code (a test checks
/// them against the crate's encoder).
pub fn encode_command(out: &mut BytesMut, args: &[&[u8]]) {
    let body: usize = args.iter().map(|a| a.len() + 16).sum();
    out.reserve(body + 16);
    put_header(out, b'*', args.len());
    for arg in args {
        put_bulk(out, arg);
    }
}

/// One argument as a bulk string: `$N\r\n`, its bytes, `\r\n`.
#[inline(always)]
fn put_bulk(out: &mut BytesMut, arg: &[u8]) {
    put_header(out, b'$', arg.len());
    append(out, arg);
    append(out, b"\r\n");
}

/// `GET key`: [`encode_command`]'s bytes, its first two lines copied as one.
pub fn encode_get(out: &mut BytesMut, key: &[u8]) {
    encode_keyed(out, b"*2\r\n$3\r\nGET\r\n", key, None);
}

/// `SET key value`: [`encode_command`]'s bytes, its first two lines copied as one.
pub fn encode_set(out: &mut BytesMut, key: &[u8], value: &[u8]) {
    encode_keyed(out, b"*3\r\n$3\r\nSET\r\n", key, Some(value));
}

/// A built-in command: its fixed `head` (the count and name lines, one copy instead of two
/// lines built a digit at a time; in perf, the encoding fell from 3.7% to 1.3% of a
/// pipelined GET's samples), its key and its value.
#[inline(always)]
fn encode_keyed(out: &mut BytesMut, head: &[u8], key: &[u8], value: Option<&[u8]>) {
    out.reserve(head.len() + key.len() + value.map_or(0, <[u8]>::len) + 32);
    append(out, head);
    put_bulk(out, key);
    if let Some(value) = value {
        put_bulk(out, value);
    }
}

/// `*N\r\n` or `$N\r\n`. A command is mostly these lines. Up to 5 digits the line is put
/// together in one 64-bit word and stored at once: made byte by byte in memory and copied
/// out, each line's copy waited on its bytes' stores (a store-forwarding stall), 6% of a
/// pipelined GET's CPU.
fn put_header(out: &mut BytesMut, kind: u8, n: usize) {
    if n >= 100_000 {
        append(out, &[kind]);
        super::put_decimal(out, n as u64);
        append(out, b"\r\n");
        return;
    }
    // The digits, least significant last: each new (more significant) one goes below the
    // others, so the first byte in memory is the first digit.
    let (mut digits, mut count, mut rest) = (0u64, 0, n as u64);
    loop {
        digits = (digits << 8) | u64::from(b'0' + (rest % 10) as u8);
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let line = u64::from(kind) | digits << 8 | u64::from(u16::from_le_bytes(*b"\r\n")) << (8 * (count + 1));
    append_word(out, line, count + 3);
}

/// The first RESP2 reply in `buf` and the bytes it takes; `None` when `buf` holds only part of it.
pub fn parse_resp2(buf: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
    resume_resp2(buf, &mut Partial::default())
}

/// [`parse_resp2`], going on from where the last parse of the same reply stopped
/// (`partial`, kept by the caller between reads, and reset here when the reply is whole).
// `precheck` is inlined into it: its nested result, passed back through memory, was
// re-read at other widths than it was written (a store-forwarding stall per reply).
pub fn resume_resp2(buf: &[u8], partial: &mut Partial) -> Result<Option<(Reply, usize)>, ProtocolError> {
    if let Some(found) = precheck(buf, false, partial)? {
        return Ok(found);
    }
    let Some((frame, used)) = resp2::decode::decode_range(buf)? else {
        return Ok(None);
    };
    let reply = match frame {
        resp2::types::RangeFrame::BulkString((s, e)) => Reply::Value { len: e - s },
        resp2::types::RangeFrame::Null => Reply::Miss,
        resp2::types::RangeFrame::SimpleString((s, e)) => status(&buf[s..e]),
        resp2::types::RangeFrame::Error((s, e)) => error(buf, s, e),
        resp2::types::RangeFrame::Integer(_) | resp2::types::RangeFrame::Array(_) => Reply::Other,
    };
    Ok(Some((reply, used)))
}

/// The first RESP3 reply in `buf` and the bytes it takes; `None` when `buf` holds only part of it.
/// Streamed strings and aggregates (`$?`, `*?`) are refused: Redis does not send them.
pub fn parse_resp3(buf: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
    resume_resp3(buf, &mut Partial::default())
}

/// [`parse_resp3`], going on from `partial` (see [`resume_resp2`]).
pub fn resume_resp3(buf: &[u8], partial: &mut Partial) -> Result<Option<(Reply, usize)>, ProtocolError> {
    if let Some(found) = precheck(buf, true, partial)? {
        return Ok(found);
    }
    let Some((frame, used)) = resp3::decode::complete::decode_range(buf)? else {
        return Ok(None);
    };
    use resp3::types::RangeFrame as F;
    let reply = match frame {
        F::BlobString { data: (s, e), .. } => Reply::Value { len: e - s },
        F::Null => Reply::Miss,
        F::SimpleString { data: (s, e), .. } => status(&buf[s..e]),
        F::SimpleError { data: (s, e), .. } | F::BlobError { data: (s, e), .. } => error(buf, s, e),
        _ => Reply::Other,
    };
    Ok(Some((reply, used)))
}

/// Checks the first line before the crate sees it: `Some(answer)` when it decides the reply
/// itself (incomplete, an aggregate, a bad length), `None` when the crate should decode it.
/// An aggregate walked in part before goes on from `partial`.
#[inline(always)]
fn precheck(buf: &[u8], resp3: bool, partial: &mut Partial) -> Result<Option<Option<(Reply, usize)>>, ProtocolError> {
    if partial.left > 0 {
        return Ok(Some(skip(buf, resp3, partial)?.map(|used| (Reply::Other, used))));
    }
    let Some(head) = line(buf)? else {
        return Ok(Some(None));
    };
    let Some((&kind, rest)) = head.split_first() else {
        return Err(ProtocolError::Unexpected("a RESP type byte"));
    };
    // A GET's nil: the commonest reply of a cold cache, told without the crate.
    let nil = match kind {
        b'*' | b'$' if !resp3 => rest == b"-1",
        b'*' => rest == b"-1",
        b'_' => resp3 && rest.is_empty(),
        _ => false,
    };
    if nil {
        return Ok(Some(Some((Reply::Miss, head.len() + 2))));
    }
    // A SET's `+OK` (any status): the line is all of it.
    if kind == b'+' {
        return Ok(Some(Some((status(rest), head.len() + 2))));
    }
    if aggregate(kind, resp3).is_some() {
        return Ok(Some(skip(buf, resp3, partial)?.map(|used| (Reply::Other, used))));
    }
    if is_blob(kind, resp3) && rest != b"-1" {
        // The crate takes the two bytes after the data without looking at them.
        let len = length(rest)?;
        let end = head.len() + 2 + len;
        if buf.len() >= end + 2 && &buf[end..end + 2] != b"\r\n" {
            return Err(ProtocolError::Unexpected("CRLF after a bulk string"));
        }
        // A GET's value, whole: its length is all a slot counts (the crate would say the same).
        if kind == b'$' && buf.len() >= end + 2 {
            return Ok(Some(Some((Reply::Value { len }, end + 2))));
        }
    }
    Ok(None)
}

/// The length of the first (complete) frame in `buf`, walked without recursion: `left` counts
/// the frames still to skip, and an aggregate adds its elements to it. Incomplete, it keeps
/// where it stopped in `partial` (at a frame's start) and goes on from there next time.
fn skip(buf: &[u8], resp3: bool, partial: &mut Partial) -> Result<Option<usize>, ProtocolError> {
    let (mut at, mut left) = if partial.left > 0 { (partial.at, partial.left) } else { (0usize, 1u64) };
    while left > 0 {
        let Some(end) = frame_end(buf, at, resp3, &mut left)? else {
            *partial = Partial { at, left, ..Partial::default() };
            return Ok(None);
        };
        at = end;
        if at > MAX_REPLY {
            return Err(ProtocolError::ReplyTooLong);
        }
    }
    *partial = Partial::default();
    Ok(Some(at))
}

/// Where the frame at `at` ends, its own bytes only (an aggregate's header, whose elements
/// it adds to `left`, which it takes itself off); `None` while it is not all in `buf`.
fn frame_end(buf: &[u8], at: usize, resp3: bool, left: &mut u64) -> Result<Option<usize>, ProtocolError> {
    let Some(head) = line(&buf[at..])? else {
        return Ok(None);
    };
    let Some((&kind, rest)) = head.split_first() else {
        return Err(ProtocolError::Unexpected("a RESP type byte"));
    };
    let end = at + head.len() + 2;
    if rest == b"-1" && (kind == b'*' || kind == b'$') {
        *left -= 1;
        return Ok(Some(end));
    }
    if let Some(per_item) = aggregate(kind, resp3) {
        // An attribute (`|`) comes before the frame it describes, which is still to come.
        *left = left.saturating_add(length(rest)? as u64 * per_item + u64::from(kind == b'|'));
    } else if is_blob(kind, resp3) {
        let n = length(rest)?;
        if buf.len() - end < n + 2 {
            return Ok(None);
        }
        if &buf[end + n..end + n + 2] != b"\r\n" {
            return Err(ProtocolError::Unexpected("CRLF after a bulk string"));
        }
        *left -= 1;
        return Ok(Some(end + n + 2));
    } else if !is_line(kind, resp3) {
        return Err(ProtocolError::Unexpected("a RESP type byte"));
    }
    *left -= 1;
    Ok(Some(end))
}

/// For an aggregate type byte, the frames per declared element (2 for maps and attributes).
fn aggregate(kind: u8, resp3: bool) -> Option<u64> {
    match kind {
        b'*' => Some(1),
        b'~' | b'>' if resp3 => Some(1),
        b'%' | b'|' if resp3 => Some(2),
        _ => None,
    }
}

/// Whether the type byte is followed by a length and that many bytes.
fn is_blob(kind: u8, resp3: bool) -> bool {
    kind == b'$' || (resp3 && matches!(kind, b'!' | b'='))
}

/// Whether the type byte's frame is its one line.
fn is_line(kind: u8, resp3: bool) -> bool {
    matches!(kind, b'+' | b'-' | b':') || (resp3 && matches!(kind, b'_' | b'#' | b',' | b'('))
}

fn status(text: &[u8]) -> Reply {
    if text == b"OK" {
        Reply::Ok
    } else {
        Reply::Other
    }
}

fn error(buf: &[u8], start: usize, end: usize) -> Reply {
    Reply::Error { class: ErrorClass::of_redis(&buf[start..end]), message: start..end }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Parser = fn(&[u8]) -> Result<Option<(Reply, usize)>, ProtocolError>;

    fn err(class: ErrorClass, wire: &str) -> Reply {
        Reply::Error { class, message: 1..wire.len() - 2 }
    }

    /// Replies both versions share, as redis-server 7.0.15 sends them (design-kv.md §1).
    fn common() -> Vec<(&'static str, Reply)> {
        vec![
            ("+OK\r\n", Reply::Ok),
            ("+PONG\r\n", Reply::Other),
            ("$5\r\nhello\r\n", Reply::Value { len: 5 }),
            ("$0\r\n\r\n", Reply::Value { len: 0 }),
            ("$7\r\nhe\r\nllo\r\n", Reply::Value { len: 7 }),
            (":42\r\n", Reply::Other),
            ("-ERR unknown command 'FOO'\r\n", err(ErrorClass::Err, "-ERR unknown command 'FOO'\r\n")),
            ("-MOVED 3999 127.0.0.1:6381\r\n", err(ErrorClass::Moved, "-MOVED 3999 127.0.0.1:6381\r\n")),
            (
                "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
                err(ErrorClass::WrongType, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ),
            (
                "-LOADING Redis is loading the dataset in memory\r\n",
                err(ErrorClass::Loading, "-LOADING Redis is loading the dataset in memory\r\n"),
            ),
            ("-NOAUTH Authentication required.\r\n", err(ErrorClass::NoAuth, "-NOAUTH Authentication required.\r\n")),
            ("*2\r\n$1\r\na\r\n$-1\r\n", Reply::Other),
            ("*0\r\n", Reply::Other),
            ("*1\r\n*2\r\n:1\r\n+x\r\n", Reply::Other),
        ]
    }

    fn resp2_examples() -> Vec<(&'static str, Reply)> {
        let mut all = common();
        all.extend([("$-1\r\n", Reply::Miss), ("*-1\r\n", Reply::Miss)]);
        all
    }

    fn resp3_examples() -> Vec<(&'static str, Reply)> {
        let mut all = common();
        all.extend([
            ("_\r\n", Reply::Miss),
            ("#t\r\n", Reply::Other),
            (",1.5\r\n", Reply::Other),
            ("(3492890328409238509324850943850943825024385\r\n", Reply::Other),
            ("!21\r\nSYNTAX invalid syntax\r\n", Reply::Error { class: ErrorClass::OtherRedis, message: 5..26 }),
            ("=15\r\ntxt:Some string\r\n", Reply::Other),
            ("%1\r\n+server\r\n+redis\r\n", Reply::Other),
            ("~2\r\n:1\r\n:2\r\n", Reply::Other),
            (">2\r\n+message\r\n$2\r\nhi\r\n", Reply::Other),
            ("|1\r\n+ttl\r\n:3600\r\n$2\r\nhi\r\n", Reply::Other),
        ]);
        all
    }

    fn check(parse: Parser, resume: crate::fuzz::Parser, examples: &[(&str, Reply)]) {
        for (wire, want) in examples {
            let wire = wire.as_bytes();
            let got = parse(wire).unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(wire)));
            assert_eq!(got, Some((want.clone(), wire.len())), "{:?}", String::from_utf8_lossy(wire));
            for cut in 0..wire.len() {
                let part = &wire[..cut];
                assert!(matches!(parse(part), Ok(None)), "prefix {:?}", String::from_utf8_lossy(part));
            }
            // A byte at a time, as a trickling server sends it: going on from where each
            // parse stopped gives the same reply.
            let mut partial = Partial::default();
            for cut in 0..wire.len() {
                assert!(matches!(resume(&wire[..cut], &mut partial), Ok(None)), "{:?}", String::from_utf8_lossy(wire));
            }
            assert_eq!(resume(wire, &mut partial).unwrap(), Some((want.clone(), wire.len())));
            assert_eq!(partial, Partial::default(), "reset once the reply is whole");
        }
    }

    #[test]
    fn resp2_examples_parse_and_their_prefixes_are_incomplete() {
        check(parse_resp2, resume_resp2, &resp2_examples());
    }

    #[test]
    fn resp3_examples_parse_and_their_prefixes_are_incomplete() {
        check(parse_resp3, resume_resp3, &resp3_examples());
    }

    #[test]
    fn error_messages_point_into_the_buffer() {
        let wire = b"-MOVED 3999 127.0.0.1:6381\r\n";
        let Some((Reply::Error { message, .. }, _)) = parse_resp2(wire).unwrap() else { panic!() };
        assert_eq!(&wire[message], b"MOVED 3999 127.0.0.1:6381");
    }

    #[test]
    fn pipelined_replies_come_one_at_a_time() {
        for parse in [parse_resp2 as Parser, parse_resp3] {
            let wire = b"+OK\r\n$5\r\nhello\r\n*1\r\n:1\r\n-ERR x\r\n$3\r\nab";
            let mut at = 0;
            let mut got = Vec::new();
            while let Some((reply, used)) = parse(&wire[at..]).unwrap() {
                got.push(reply);
                at += used;
            }
            assert_eq!(
                got,
                [
                    Reply::Ok,
                    Reply::Value { len: 5 },
                    Reply::Other,
                    Reply::Error { class: ErrorClass::Err, message: 1..6 }
                ]
            );
            assert_eq!(&wire[at..], b"$3\r\nab", "the incomplete reply is left for the next read");
        }
    }

    #[test]
    fn commands_encode_as_arrays_of_bulk_strings() {
        let mut out = BytesMut::new();
        encode_command(&mut out, &[b"SET", b"k1", b"hello"]);
        encode_command(&mut out, &[b"GET", b"k1"]);
        assert_eq!(&out[..], b"*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n");
        out.clear();
        encode_command(&mut out, &[b"SET", b"memtier-123", &[b'x'; 32]]);
        let want = format!("*3\r\n$3\r\nSET\r\n$11\r\nmemtier-123\r\n$32\r\n{}\r\n", "x".repeat(32));
        assert_eq!(&out[..], want.as_bytes());
    }

    #[test]
    fn oversized_or_unterminated_replies_are_refused_without_waiting() {
        for parse in [parse_resp2 as Parser, parse_resp3] {
            assert!(matches!(parse(b"$1073741825\r\n"), Err(ProtocolError::TooLarge(_))));
            assert!(matches!(parse(b"*1\r\n$99999999999\r\n"), Err(ProtocolError::TooLarge(_))));
            assert!(matches!(parse(b"*2000000000\r\n"), Err(ProtocolError::TooLarge(_))));
            assert!(matches!(parse(&[b'+'; 9000]), Err(ProtocolError::LineTooLong)));
            // A legal but large declared length is just incomplete: the caller reads on.
            assert!(matches!(parse(b"$1073741824\r\nabc"), Ok(None)));
            assert!(parse(b"$3\r\nabcd\r\n").is_err());
            assert!(parse(b"\r\n").is_err());
            assert!(parse(b"?what\r\n").is_err());
        }
        // Deep nesting is walked, not recursed into.
        let deep = "*1\r\n".repeat(200_000) + ":1\r\n";
        assert_eq!(parse_resp2(deep.as_bytes()).unwrap(), Some((Reply::Other, deep.len())));
        assert!(parse_resp3(b"$?\r\n;4\r\nHell\r\n;0\r\n").is_err());
    }

    /// The lengths at each digit count's edges, past the five digits a header's word holds.
    #[test]
    fn every_length_encodes_as_the_crate_does() {
        for n in [0, 9, 10, 99, 100, 9_999, 10_000, 99_999, 100_000, 1_048_576] {
            let value = vec![b'v'; n];
            let mut out = BytesMut::new();
            encode_command(&mut out, &[b"SET", b"k", &value]);
            let frames = [b"SET".as_slice(), b"k", &value].map(resp2::types::BorrowedFrame::BulkString);
            let frame = resp2::types::BorrowedFrame::Array(&frames);
            let mut theirs = vec![0u8; frame.encode_len(false)];
            resp2::encode::encode_borrowed(&mut theirs, &frame, false).unwrap();
            assert!(out[..] == theirs[..], "a value of {n} bytes");
        }
    }

    /// GET and SET, whose first lines are copied whole, are the generic encoder's bytes.
    #[test]
    fn get_and_set_encode_as_any_command_does() {
        for n in [0, 1, 9, 10, 31, 32, 33, 99_999, 100_000, 1_048_576] {
            let (key, value) = (vec![b'k'; n], vec![b'v'; n]);
            let (mut ours, mut generic) = (BytesMut::new(), BytesMut::new());
            encode_get(&mut ours, &key);
            encode_command(&mut generic, &[b"GET", &key]);
            assert!(ours == generic, "GET of a {}-byte key", key.len());
            let (mut ours, mut generic) = (BytesMut::new(), BytesMut::new());
            encode_set(&mut ours, &key, &value);
            encode_command(&mut generic, &[b"SET", &key, &value]);
            assert!(ours == generic, "SET of a {n}-byte value");
        }
    }

    proptest! {
        #[test]
        fn encoding_matches_the_crate(args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6)) {
            let mut out = BytesMut::new();
            let borrowed: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            encode_command(&mut out, &borrowed);
            let frames: Vec<resp2::types::BorrowedFrame> =
                borrowed.iter().map(|a| resp2::types::BorrowedFrame::BulkString(a)).collect();
            let frame = resp2::types::BorrowedFrame::Array(&frames);
            let mut theirs = vec![0u8; frame.encode_len(false)];
            resp2::encode::encode_borrowed(&mut theirs, &frame, false).unwrap();
            prop_assert_eq!(&out[..], &theirs[..]);
        }

        #[test]
        fn values_and_nils_parse_as_the_crate_does(data in proptest::collection::vec(any::<u8>(), 0..40), tail in proptest::collection::vec(any::<u8>(), 0..8)) {
            // What the fast path tells without the crate: a whole bulk string and a nil, with
            // whatever the next reply's bytes are after them.
            let mut value = format!("${}\r\n", data.len()).into_bytes();
            value.extend(&data);
            value.extend(b"\r\n");
            let used = value.len();
            value.extend(&tail);
            let Some((resp2::types::RangeFrame::BulkString(range), theirs)) = resp2::decode::decode_range(&value).unwrap() else {
                panic!("the crate reads a bulk string");
            };
            prop_assert_eq!(parse_resp2(&value).unwrap(), Some((Reply::Value { len: range.1 - range.0 }, theirs)));
            prop_assert_eq!(parse_resp3(&value).unwrap(), Some((Reply::Value { len: data.len() }, used)));
            for (nil, parse) in [(&b"$-1\r\n"[..], parse_resp2 as Parser), (b"*-1\r\n", parse_resp2), (b"_\r\n", parse_resp3)] {
                let wire = [nil, &tail[..]].concat();
                prop_assert_eq!(parse(&wire).unwrap(), Some((Reply::Miss, nil.len())));
            }
        }

        #[test]
        fn statuses_parse_as_the_crate_does(text in "[ -~]{0,20}", tail in proptest::collection::vec(any::<u8>(), 0..8)) {
            // What the fast path tells without the crate: a status line, `+OK` or another,
            // with whatever the next reply's bytes are after it.
            let mut wire = format!("+{text}\r\n").into_bytes();
            let used = wire.len();
            wire.extend(&tail);
            let Some((resp2::types::RangeFrame::SimpleString((s, e)), theirs)) = resp2::decode::decode_range(&wire).unwrap() else {
                panic!("the crate reads a simple string");
            };
            let expected = if &wire[s..e] == b"OK" { Reply::Ok } else { Reply::Other };
            prop_assert_eq!(parse_resp2(&wire).unwrap(), Some((expected.clone(), theirs)));
            prop_assert_eq!(parse_resp3(&wire).unwrap(), Some((expected, used)));
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), prefix in 0usize..3) {
            // Start some inputs with a real type byte so the parser gets past the first check.
            let mut input = [&b""[..], b"$", b"*"][prefix].to_vec();
            input.extend(bytes);
            for parse in [parse_resp2 as Parser, parse_resp3] {
                if let Ok(Some((_, used))) = parse(&input) {
                    prop_assert!(used <= input.len() && used > 0);
                }
            }
        }
    }
}
