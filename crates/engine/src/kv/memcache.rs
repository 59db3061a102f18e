//! memcached's text and meta protocols (`doc/protocol.txt` of memcached 1.6.18), by hand: the
//! crates for it are whole clients that copy every value into a `Vec`.
//!
//! - Text: [`encode_get`] (`get <key>`), [`encode_set`] (`set <key> 0 <exptime> <len>` and the
//!   data) and [`parse_text`]. A text reply does not say which command it answers (a `get`'s
//!   reply spans several lines, `NOT_FOUND` answers both `delete` and `incr`), so the parser is
//!   told with a [`TextKind`].
//! - Meta: [`encode_mg`] (`mg <key> v`), [`encode_ms`] (`ms <key> <len> T0` and the data) and
//!   [`parse_meta`]. Meta replies delimit themselves, so no kind is needed.
//!
//! Keys go on the wire as given: the plan keeps them to memcached's rules (at most 250 bytes,
//! no spaces or control characters).

use super::{append, length, line, put_decimal, ErrorClass, Partial, ProtocolError, Reply, MAX_REPLY};
use bytes::BytesMut;

/// Which text command a reply answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextKind {
    /// `get`/`gets`: `VALUE` blocks then `END` (a hit), or `END` alone (a miss).
    Get,
    /// `set`, `add`, `replace`, `append`, `prepend`, `cas`: `STORED`, `NOT_STORED`, `EXISTS`,
    /// `NOT_FOUND`.
    Storage,
    /// `delete`, `touch`, `incr`, `decr`: `DELETED`, `TOUCHED`, the new number, `NOT_FOUND`.
    Delete,
}

/// Appends `get <key>\r\n`.
pub fn encode_get(out: &mut BytesMut, key: &[u8]) {
    out.reserve(key.len() + 6);
    append(out, b"get ");
    append(out, key);
    append(out, b"\r\n");
}

/// Appends `set <key> 0 <exptime> <len>\r\n<value>\r\n` (flags 0, as memtier sends).
pub fn encode_set(out: &mut BytesMut, key: &[u8], value: &[u8], exptime: u32) {
    out.reserve(key.len() + value.len() + 40);
    append(out, b"set ");
    append(out, key);
    append(out, b" 0 ");
    put_decimal(out, u64::from(exptime));
    append(out, b" ");
    put_decimal(out, value.len() as u64);
    append(out, b"\r\n");
    append(out, value);
    append(out, b"\r\n");
}

/// Appends `mg <key> v\r\n`: a meta get asking for the value.
pub fn encode_mg(out: &mut BytesMut, key: &[u8]) {
    out.reserve(key.len() + 8);
    append(out, b"mg ");
    append(out, key);
    append(out, b" v\r\n");
}

/// Appends `ms <key> <len> T0\r\n<value>\r\n`: a meta set that never expires. (memcached 1.6.18
/// takes the length as the second token and refuses the older `S<len>` flag.)
pub fn encode_ms(out: &mut BytesMut, key: &[u8], value: &[u8]) {
    out.reserve(key.len() + value.len() + 32);
    append(out, b"ms ");
    append(out, key);
    append(out, b" ");
    put_decimal(out, value.len() as u64);
    append(out, b" T0\r\n");
    append(out, value);
    append(out, b"\r\n");
}

/// The first text-protocol reply in `buf`, answering a command of `kind`, and the bytes it
/// takes; `None` when `buf` holds only part of it. A multi-key `get` is one reply whose
/// [`Reply::Value`] length is the sum of its values'.
pub fn parse_text(buf: &[u8], kind: TextKind) -> Result<Option<(Reply, usize)>, ProtocolError> {
    resume_text(buf, kind, &mut Partial::default())
}

/// [`parse_text`], going on from where the last parse of the same reply stopped
/// (`partial`, kept by the caller between reads, and reset here when the reply is whole):
/// a `get` of many values is walked once, not once per read.
pub fn resume_text(buf: &[u8], kind: TextKind, partial: &mut Partial) -> Result<Option<(Reply, usize)>, ProtocolError> {
    if partial.at > 0 {
        return parse_values(buf, partial);
    }
    let Some(head) = line(buf)? else {
        return Ok(None);
    };
    let used = head.len() + 2;
    if let Some(reply) = error_line(head) {
        return Ok(Some((reply, used)));
    }
    let reply = match (kind, head) {
        (TextKind::Get, _) => return parse_values(buf, partial),
        (TextKind::Storage, b"STORED") => Reply::Stored,
        (TextKind::Storage, b"NOT_STORED") => refused(ErrorClass::NotStored, head),
        (TextKind::Storage, b"EXISTS") => refused(ErrorClass::Exists, head),
        (TextKind::Delete, b"DELETED") => Reply::Ok,
        (TextKind::Delete, b"TOUCHED") => Reply::Ok,
        (TextKind::Delete, number) if decimal(number) => Reply::Other,
        (TextKind::Storage | TextKind::Delete, b"NOT_FOUND") => Reply::Miss,
        (TextKind::Storage, _) => return Err(ProtocolError::Unexpected("a storage reply (STORED, NOT_STORED, …)")),
        (TextKind::Delete, _) => return Err(ProtocolError::Unexpected("DELETED, TOUCHED, a number or NOT_FOUND")),
    };
    Ok(Some((reply, used)))
}

/// `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n`, any number of times, then `END\r\n`;
/// from the block `partial` stopped at.
fn parse_values(buf: &[u8], partial: &mut Partial) -> Result<Option<(Reply, usize)>, ProtocolError> {
    let Partial { mut at, bytes: mut total, mut values, .. } = *partial;
    loop {
        if at > MAX_REPLY {
            return Err(ProtocolError::ReplyTooLong);
        }
        let Some(head) = line(&buf[at..])? else {
            *partial = Partial { at, bytes: total, values, ..Partial::default() };
            return Ok(None);
        };
        if head == b"END" {
            *partial = Partial::default();
            let reply = if values == 0 { Reply::Miss } else { Reply::Value { len: total } };
            return Ok(Some((reply, at + head.len() + 2)));
        }
        let mut words = head.split(|&b| b == b' ');
        let (Some(b"VALUE"), Some(key), Some(flags), Some(bytes)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            return Err(ProtocolError::Unexpected("VALUE <key> <flags> <bytes> or END"));
        };
        let cas = words.next();
        if key.is_empty() || !decimal(flags) || cas.is_some_and(|c| !decimal(c)) || words.next().is_some() {
            return Err(ProtocolError::Unexpected("VALUE <key> <flags> <bytes>[ <cas>]"));
        }
        let n = length(bytes)?;
        let Some(end) = data_end(buf, at + head.len() + 2, n)? else {
            *partial = Partial { at, bytes: total, values, ..Partial::default() };
            return Ok(None);
        };
        at = end;
        total += n;
        values += 1;
    }
}

/// The first meta-protocol reply in `buf` and the bytes it takes; `None` when `buf` holds only
/// part of it. `VA` is a hit, `EN` and `NF` are misses, `HD` is a success without a value,
/// `NS`/`EX` are refusals, `MN` (the no-op's answer) is [`Reply::Other`].
pub fn parse_meta(buf: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
    let Some(head) = line(buf)? else {
        return Ok(None);
    };
    let used = head.len() + 2;
    if let Some(reply) = error_line(head) {
        return Ok(Some((reply, used)));
    }
    let mut words = head.split(|&b| b == b' ');
    let reply = match words.next().unwrap_or_default() {
        b"VA" => {
            let n = length(words.next().unwrap_or_default())?;
            return Ok(data_end(buf, used, n)?.map(|end| (Reply::Value { len: n }, end)));
        }
        b"EN" | b"NF" => Reply::Miss,
        b"HD" => Reply::Ok,
        b"NS" => refused(ErrorClass::NotStored, head),
        b"EX" => refused(ErrorClass::Exists, head),
        b"MN" => Reply::Other,
        _ => return Err(ProtocolError::Unexpected("a meta reply (VA, EN, HD, NS, EX, NF, MN)")),
    };
    Ok(Some((reply, used)))
}

/// Where `n` bytes of data starting at `start`, and their CRLF, end; `None` if not all here.
fn data_end(buf: &[u8], start: usize, n: usize) -> Result<Option<usize>, ProtocolError> {
    let end = start + n + 2;
    if buf.len() < end {
        return Ok(None);
    }
    if &buf[end - 2..end] != b"\r\n" {
        return Err(ProtocolError::Unexpected("CRLF after the data"));
    }
    Ok(Some(end))
}

/// `ERROR`, `CLIENT_ERROR <msg>` and `SERVER_ERROR <msg>`, which may answer any command.
fn error_line(head: &[u8]) -> Option<Reply> {
    let class = if head == b"ERROR" {
        ErrorClass::McError
    } else if head.starts_with(b"CLIENT_ERROR") {
        ErrorClass::ClientError
    } else if head.starts_with(b"SERVER_ERROR") {
        ErrorClass::ServerError
    } else {
        return None;
    };
    Some(refused(class, head))
}

fn decimal(word: &[u8]) -> bool {
    !word.is_empty() && word.iter().all(u8::is_ascii_digit)
}

fn refused(class: ErrorClass, head: &[u8]) -> Reply {
    Reply::Error { class, message: 0..head.len() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn err(class: ErrorClass, line: &str) -> Reply {
        Reply::Error { class, message: 0..line.len() }
    }

    /// Text replies of design-kv.md §2, as memcached 1.6.18 sends them.
    fn text_examples() -> Vec<(TextKind, &'static str, Reply)> {
        use TextKind::*;
        vec![
            (Storage, "STORED\r\n", Reply::Stored),
            (Get, "VALUE k1 0 5\r\nhello\r\nEND\r\n", Reply::Value { len: 5 }),
            (Get, "END\r\n", Reply::Miss),
            (Get, "VALUE k1 0 5 1\r\nhello\r\nEND\r\n", Reply::Value { len: 5 }),
            (Get, "VALUE k1 0 5\r\nhello\r\nVALUE k1 0 5\r\nhello\r\nEND\r\n", Reply::Value { len: 10 }),
            (Get, "VALUE k 7 4\r\na\r\nb\r\nEND\r\n", Reply::Value { len: 4 }),
            (Delete, "NOT_FOUND\r\n", Reply::Miss),
            (Delete, "DELETED\r\n", Reply::Ok),
            (Delete, "6\r\n", Reply::Other),
            (Storage, "NOT_STORED\r\n", err(ErrorClass::NotStored, "NOT_STORED")),
            (Storage, "EXISTS\r\n", err(ErrorClass::Exists, "EXISTS")),
            (Storage, "NOT_FOUND\r\n", Reply::Miss),
            (Get, "ERROR\r\n", err(ErrorClass::McError, "ERROR")),
            (Storage, "CLIENT_ERROR bad data chunk\r\n", err(ErrorClass::ClientError, "CLIENT_ERROR bad data chunk")),
            (
                Storage,
                "SERVER_ERROR out of memory storing object\r\n",
                err(ErrorClass::ServerError, "SERVER_ERROR out of memory storing object"),
            ),
            (Get, "SERVER_ERROR busy\r\n", err(ErrorClass::ServerError, "SERVER_ERROR busy")),
        ]
    }

    /// Meta replies of design-kv.md §2.
    fn meta_examples() -> Vec<(&'static str, Reply)> {
        vec![
            ("HD\r\n", Reply::Ok),
            ("VA 5\r\nhello\r\n", Reply::Value { len: 5 }),
            ("VA 5 kmk1 s5 f0 t-1 c2 Oabc\r\nhello\r\n", Reply::Value { len: 5 }),
            ("VA 0\r\n\r\n", Reply::Value { len: 0 }),
            ("EN\r\n", Reply::Miss),
            ("EN Ox9\r\n", Reply::Miss),
            ("MN\r\n", Reply::Other),
            ("HD c3\r\n", Reply::Ok),
            ("NF\r\n", Reply::Miss),
            ("NS\r\n", err(ErrorClass::NotStored, "NS")),
            ("EX\r\n", err(ErrorClass::Exists, "EX")),
            (
                "CLIENT_ERROR bad command line format\r\n",
                err(ErrorClass::ClientError, "CLIENT_ERROR bad command line format"),
            ),
            ("ERROR\r\n", err(ErrorClass::McError, "ERROR")),
        ]
    }

    fn check(parse: impl Fn(&[u8]) -> Result<Option<(Reply, usize)>, ProtocolError>, wire: &str, want: &Reply) {
        let wire = wire.as_bytes();
        let got = parse(wire).unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(wire)));
        assert_eq!(got, Some((want.clone(), wire.len())), "{:?}", String::from_utf8_lossy(wire));
        for cut in 0..wire.len() {
            assert!(matches!(parse(&wire[..cut]), Ok(None)), "prefix {:?}", String::from_utf8_lossy(&wire[..cut]));
        }
    }

    #[test]
    fn text_examples_parse_and_their_prefixes_are_incomplete() {
        for (kind, wire, want) in text_examples() {
            check(|b| parse_text(b, kind), wire, &want);
            // A byte at a time, going on from where each parse stopped: the same reply.
            let mut partial = Partial::default();
            for cut in 0..wire.len() {
                assert!(matches!(resume_text(&wire.as_bytes()[..cut], kind, &mut partial), Ok(None)), "{wire:?}");
            }
            assert_eq!(resume_text(wire.as_bytes(), kind, &mut partial).unwrap(), Some((want, wire.len())));
            assert_eq!(partial, Partial::default(), "reset once the reply is whole");
        }
    }

    #[test]
    fn meta_examples_parse_and_their_prefixes_are_incomplete() {
        for (wire, want) in meta_examples() {
            check(parse_meta, wire, &want);
        }
    }

    #[test]
    fn pipelined_replies_come_one_at_a_time() {
        // A bad data chunk: the server answers CLIENT_ERROR, then reads the leftover as a command.
        let text = b"CLIENT_ERROR bad data chunk\r\nERROR\r\nVALUE k1 0 5\r\nhello\r\nEND\r\nEND\r\nVAL";
        let mut at = 0;
        let mut got = Vec::new();
        while let Some((reply, used)) = parse_text(&text[at..], TextKind::Get).unwrap() {
            got.push(reply);
            at += used;
        }
        assert_eq!(
            got,
            [
                err(ErrorClass::ClientError, "CLIENT_ERROR bad data chunk"),
                err(ErrorClass::McError, "ERROR"),
                Reply::Value { len: 5 },
                Reply::Miss,
            ]
        );
        assert_eq!(&text[at..], b"VAL");

        let meta = b"HD\r\nVA 5 c2\r\nhello\r\nEN\r\nMN\r\nVA 2";
        let mut at = 0;
        let mut got = Vec::new();
        while let Some((reply, used)) = parse_meta(&meta[at..]).unwrap() {
            got.push(reply);
            at += used;
        }
        assert_eq!(got, [Reply::Ok, Reply::Value { len: 5 }, Reply::Miss, Reply::Other]);
        assert_eq!(&meta[at..], b"VA 2");
    }

    #[test]
    fn encoders_write_the_documented_bytes() {
        let mut out = BytesMut::new();
        encode_set(&mut out, b"k1", b"hello", 0);
        encode_get(&mut out, b"k1");
        encode_set(&mut out, b"k2", b"hi", 3600);
        assert_eq!(&out[..], b"set k1 0 0 5\r\nhello\r\nget k1\r\nset k2 0 3600 2\r\nhi\r\n");
        out.clear();
        encode_ms(&mut out, b"mk1", b"hello");
        encode_mg(&mut out, b"mk1");
        assert_eq!(&out[..], b"ms mk1 5 T0\r\nhello\r\nmg mk1 v\r\n");
    }

    #[test]
    fn bad_or_oversized_replies_are_refused() {
        use TextKind::*;
        assert!(matches!(parse_text(b"VALUE k 0 1073741825\r\n", Get), Err(ProtocolError::TooLarge(_))));
        assert!(matches!(parse_meta(b"VA 99999999999\r\n"), Err(ProtocolError::TooLarge(_))));
        assert!(matches!(parse_meta(&[b'V'; 9000]), Err(ProtocolError::LineTooLong)));
        assert!(matches!(parse_text(&[b'V'; 9000], Get), Err(ProtocolError::LineTooLong)));
        // A legal large value is only incomplete.
        assert!(matches!(parse_meta(b"VA 1073741824\r\nabc"), Ok(None)));
        assert!(parse_text(b"STORED\r\n", Get).is_err(), "a reply to another command means we are out of step");
        assert!(parse_text(b"VALUE k1 0 5\r\nhello\r\n", Storage).is_err());
        assert!(parse_text(b"VALUE k1 0 5\r\nhelloXX", Get).is_err());
        assert!(parse_text(b"VALUE k1 0\r\n", Get).is_err());
        assert!(parse_text(b"VALUE k1 0 5 1 2\r\n", Get).is_err());
        assert!(parse_text(b"VALUE k1 x 5\r\n", Get).is_err());
        assert!(parse_meta(b"VA\r\n").is_err());
        assert!(parse_meta(b"VA 5\r\nhelloXX").is_err());
        assert!(parse_meta(b"\r\n").is_err());
        assert!(parse_meta(b"STORED\r\n").is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), prefix in 0usize..4) {
            let mut input = [&b""[..], b"VALUE k 0 ", b"VA ", b"END\r\n"][prefix].to_vec();
            input.extend(bytes);
            for result in [
                parse_meta(&input),
                parse_text(&input, TextKind::Get),
                parse_text(&input, TextKind::Storage),
                parse_text(&input, TextKind::Delete),
            ] {
                if let Ok(Some((_, used))) = result {
                    prop_assert!(used <= input.len() && used > 0);
                }
            }
        }
    }
}
