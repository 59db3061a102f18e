//! Reading one HTTP/1.1 response from a connection's bytes as they arrive, in any pieces:
//! its head, then its body as the head frames it ([`Reader`]). Pure: no socket, no clock.
//! Everything a server controls is bounded: the head ([`MAX_HEAD`] bytes, [`MAX_HEADERS`]
//! lines), a chunk-size line ([`MAX_CHUNK_LINE`]) and the trailers.

use crate::conn::Failure;
use barrage_metrics::ErrorKind;
use std::mem::MaybeUninit;
use std::ops::Range;

/// Longest response head read (status line and header lines), as bytes.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header lines in a head (or in the trailers), as hyper's default.
pub(crate) const MAX_HEADERS: usize = 100;
/// Longest chunk-size line (the size and its extensions).
pub(crate) const MAX_CHUNK_LINE: usize = 4 * 1024;

pub(super) fn closed() -> Failure {
    Failure::new(ErrorKind::Reset, "the server closed the connection before the response was complete")
}

fn protocol(what: &'static str) -> Failure {
    Failure::new(ErrorKind::Protocol, what)
}

/// Reads one response from the bytes of a connection as they arrive, in any pieces: its
/// head (skipping interim 1xx responses), then its body as the head frames it.
pub(crate) struct Reader {
    state: State,
    /// The request was a HEAD: no body follows, whatever the head says.
    head_request: bool,
    /// The response leaves the connection open.
    pub(crate) keep_alive: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Head,
    /// The body, ending after this many more bytes.
    Length(u64),
    /// The body, chunked.
    Chunked(Chunk),
    /// The body, ending when the server closes the connection.
    Close,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// A chunk-size line.
    Size,
    /// This many more bytes of a chunk's data.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: the trailer lines and the empty line that ends them.
    Trailers,
}

/// What one [`Reader::read`] did with its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// Bytes used, from the input's start; none when it needs more to go on.
    pub used: usize,
    /// Body bytes among them (`input[data]`).
    pub data: Range<usize>,
    /// The response is complete.
    pub done: bool,
}

impl Reader {
    pub(crate) fn new(head_request: bool) -> Reader {
        Reader { state: State::Head, head_request, keep_alive: false }
    }

    /// Reads on from `input`, the bytes after those used so far. A complete head is handed
    /// to `on_head` (status and header lines) before its body is read. At most one stretch
    /// of body data per call: call again while it uses bytes.
    pub(crate) fn read(
        &mut self,
        input: &[u8],
        on_head: &mut dyn FnMut(u16, &[httparse::Header<'_>]),
    ) -> Result<Step, Failure> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            let step = move |len: usize, done| Ok(Step { used: used + len, data: used..used + len, done });
            match self.state {
                State::Head => match self.head(rest, on_head)? {
                    Some(len) => used += len,
                    None if rest.len() >= MAX_HEAD => return Err(protocol("a response head over 64 KiB")),
                    None => return step(0, false),
                },
                State::Length(left) => {
                    let take = left.min(rest.len() as u64);
                    self.state = if take == left { State::Done } else { State::Length(left - take) };
                    return step(take as usize, take == left);
                }
                State::Close => return step(rest.len(), false),
                State::Chunked(Chunk::Data(left)) => {
                    let take = left.min(rest.len() as u64);
                    if take == 0 {
                        return step(0, false);
                    }
                    self.state = State::Chunked(if take == left { Chunk::DataEnd } else { Chunk::Data(left - take) });
                    return step(take as usize, false);
                }
                State::Chunked(chunk) => match chunk_line(chunk, rest)? {
                    Some((len, next)) => {
                        used += len;
                        self.state = next;
                    }
                    None => return step(0, false),
                },
                State::Done => return step(0, true),
            }
        }
    }

    /// How many body bytes are still to come, when the reader is in a body's data (a body
    /// that runs to the close: `u64::MAX`); `None` in a head, a chunk line or the trailers.
    pub(crate) fn body_left(&self) -> Option<u64> {
        match self.state {
            State::Length(left) | State::Chunked(Chunk::Data(left)) => Some(left),
            State::Close => Some(u64::MAX),
            _ => None,
        }
    }

    /// `n` body bytes, at most [`Reader::body_left`], were dropped unread.
    pub(crate) fn discarded(&mut self, n: u64) {
        self.state = match self.state {
            State::Length(left) if n >= left => State::Done,
            State::Length(left) => State::Length(left - n),
            State::Chunked(Chunk::Data(left)) if n >= left => State::Chunked(Chunk::DataEnd),
            State::Chunked(Chunk::Data(left)) => State::Chunked(Chunk::Data(left - n)),
            other => other,
        };
    }

    /// The server closed the connection: the end of a body that runs to it, else a
    /// response cut short.
    pub(crate) fn eof(&mut self) -> Result<(), Failure> {
        match self.state {
            State::Close => {
                self.state = State::Done;
                Ok(())
            }
            _ => Err(closed()),
        }
    }

    /// Parses a head at the start of `input`: its length when complete (an interim one is
    /// skipped; a final one sets how the body is read).
    fn head(
        &mut self,
        input: &[u8],
        on_head: &mut dyn FnMut(u16, &[httparse::Header<'_>]),
    ) -> Result<Option<usize>, Failure> {
        let mut lines = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
        let mut response = httparse::Response::new(&mut []);
        let len = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut response,
            input,
            &mut lines,
        ) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(protocol("a response head of over 100 header lines")),
            Err(_) => return Err(protocol("the response is not valid HTTP/1.1")),
        };
        let status = response.code.expect("a complete head has a status");
        if status < 100 {
            // httparse takes any three digits; a status is 100 to 999 (hyper's `StatusCode`,
            // and HTTP/2's `:status` here), and a code under it no status at all.
            return Err(protocol("a status code under 100"));
        }
        if (100..200).contains(&status) && status != 101 {
            // 100 Continue, 103 Early Hints: the final response follows.
            return Ok(Some(len));
        }
        let framing = Framing::of(response.version == Some(1), response.headers)?;
        // 101 switches to a protocol barrage never asked for: the connection is done.
        self.keep_alive = framing.keep_alive && status != 101;
        self.state = if self.head_request || matches!(status, 101 | 204 | 304) {
            State::Done
        } else {
            match framing.body {
                Some(0) => State::Done,
                Some(n) => State::Length(n),
                None if framing.chunked => State::Chunked(Chunk::Size),
                None => {
                    self.keep_alive = false;
                    State::Close
                }
            }
        };
        on_head(status, response.headers);
        Ok(Some(len))
    }
}

/// A chunked body's line at the start of `input`, in state `chunk`: its length and the
/// state after it, or `None` while incomplete.
fn chunk_line(chunk: Chunk, input: &[u8]) -> Result<Option<(usize, State)>, Failure> {
    match chunk {
        Chunk::Size => match httparse::parse_chunk_size(input) {
            Ok(httparse::Status::Complete((len, 0))) => Ok(Some((len, State::Chunked(Chunk::Trailers)))),
            Ok(httparse::Status::Complete((len, size))) => Ok(Some((len, State::Chunked(Chunk::Data(size))))),
            Ok(httparse::Status::Partial) if input.len() >= MAX_CHUNK_LINE => {
                Err(protocol("a chunk-size line over 4 KiB"))
            }
            Ok(httparse::Status::Partial) => Ok(None),
            Err(_) => Err(protocol("a chunk size that is not hexadecimal")),
        },
        Chunk::DataEnd => match input {
            [b'\r', b'\n', ..] => Ok(Some((2, State::Chunked(Chunk::Size)))),
            [] | [b'\r'] => Ok(None),
            _ => Err(protocol("a chunk's data runs past its size")),
        },
        Chunk::Trailers => match input {
            [b'\r', b'\n', ..] => Ok(Some((2, State::Done))),
            [] | [b'\r'] => Ok(None),
            _ => {
                let mut lines = [httparse::EMPTY_HEADER; MAX_HEADERS];
                match httparse::parse_headers(input, &mut lines) {
                    Ok(httparse::Status::Complete((len, _))) => Ok(Some((len, State::Done))),
                    Ok(httparse::Status::Partial) if input.len() >= MAX_HEAD => Err(protocol("trailers over 64 KiB")),
                    Ok(httparse::Status::Partial) => Ok(None),
                    Err(httparse::Error::TooManyHeaders) => Err(protocol("over 100 trailer lines")),
                    Err(_) => Err(protocol("trailers that are not header lines")),
                }
            }
        },
        Chunk::Data(_) => unreachable!("data is read by the reader"),
    }
}

/// How a response head frames its body and whether it keeps the connection, by RFC 9112
/// section 6.3, as hyper's client reads it.
#[derive(Debug, PartialEq, Eq)]
struct Framing {
    /// `Content-Length`, when it says (and no `Transfer-Encoding` overrides it).
    body: Option<u64>,
    /// `Transfer-Encoding` ends in `chunked`. Without it, and without a length, the body
    /// runs until the server closes.
    chunked: bool,
    keep_alive: bool,
}

impl Framing {
    fn of(http11: bool, lines: &[httparse::Header<'_>]) -> Result<Framing, Failure> {
        let (mut length, mut te, mut close, mut keep) = (None::<u64>, None::<&[u8]>, false, false);
        let mut bad_length = false;
        for line in lines {
            let name = line.name.as_bytes();
            if name.eq_ignore_ascii_case(b"content-length") {
                // Every value (and every comma-separated one) must be the same number.
                for part in line.value.split(|&b| b == b',') {
                    match (digits(part.trim_ascii()), length) {
                        (Some(n), None) => length = Some(n),
                        (Some(n), Some(was)) if n == was => {}
                        _ => bad_length = true,
                    }
                }
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                te = Some(line.value);
            } else if name.eq_ignore_ascii_case(b"connection") {
                for token in line.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        let keep_alive = !close && (http11 || keep);
        if let Some(te) = te {
            if !http11 {
                return Err(protocol("an HTTP/1.0 response with Transfer-Encoding"));
            }
            // The last line's last coding.
            let last = te.rsplit(|&b| b == b',').next().unwrap_or_default().trim_ascii();
            return Ok(Framing { body: None, chunked: last.eq_ignore_ascii_case(b"chunked"), keep_alive });
        }
        if bad_length {
            return Err(protocol("an invalid Content-Length"));
        }
        Ok(Framing { body: length, chunked: false, keep_alive })
    }
}

/// A decimal number of ASCII digits only.
fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| match b {
        b'0'..=b'9' => n.checked_mul(10)?.checked_add(u64::from(b - b'0')),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What reading a whole response gave: status, body, bytes used, keep-alive; or the
    /// error kind and message.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Read {
        status: u16,
        body: Vec<u8>,
        used: usize,
        keep_alive: bool,
    }

    /// Reads `response` fed in the pieces `cuts` makes (offsets), then EOF when `eof`; as
    /// a connection does: a piece is added to what is left when the reader needs more.
    fn read_in_pieces(response: &[u8], cuts: &[usize], head_request: bool, eof: bool) -> Result<Read, String> {
        pieces(response, cuts, head_request, eof, false).map(|(read, _)| read)
    }

    /// [`read_in_pieces`], and with `discard` as a connection that drops a body nobody
    /// reads: a piece that comes while the reader is in a body's data, with nothing left in
    /// the buffer, is discarded up to [`Reader::body_left`] (what follows it kept). Gives
    /// the response read (its body without the bytes dropped) and how many were dropped.
    fn pieces(
        response: &[u8],
        cuts: &[usize],
        head_request: bool,
        eof: bool,
        discard: bool,
    ) -> Result<(Read, usize), String> {
        let mut reader = Reader::new(head_request);
        let (mut buf, mut pos, mut fed) = (Vec::new(), 0, 0);
        let mut ends: Vec<usize> = cuts.iter().copied().filter(|&c| c < response.len()).collect();
        ends.sort();
        ends.push(response.len());
        let mut ends = ends.into_iter();
        let (mut status, mut body, mut used, mut dropped) = (0, Vec::new(), 0, 0);
        let err = |f: Failure| format!("{}: {}", f.kind.name(), f.message());
        loop {
            let step = reader.read(&buf[pos..], &mut |s, _| status = s).map_err(err)?;
            body.extend_from_slice(&buf[pos..][step.data.clone()]);
            pos += step.used;
            used += step.used;
            if step.done {
                return Ok((Read { status, body, used, keep_alive: reader.keep_alive }, dropped));
            }
            if step.used > 0 {
                continue;
            }
            let Some(end) = ends.next() else {
                return match eof {
                    true => {
                        reader.eof().map(|()| (Read { status, body, used, keep_alive: false }, dropped)).map_err(err)
                    }
                    false => Err("needs more".into()),
                };
            };
            let mut piece = &response[fed..end];
            fed = end;
            if let Some(left) = reader.body_left().filter(|_| discard && pos == buf.len()) {
                let n = piece.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                reader.discarded(n as u64);
                (used, dropped, piece) = (used + n, dropped + n, &piece[n..]);
            }
            buf.extend_from_slice(piece);
        }
    }

    fn read_whole(response: &[u8]) -> Result<Read, String> {
        read_in_pieces(response, &[], false, true)
    }

    #[test]
    fn framings() {
        let cl = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let chunked =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let trailers =
            "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 1\r\nX-T: 2\r\n\r\n";
        let close = "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nuntil the end";
        let te_not_chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nzipped";
        let interim = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
                       HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        let cut = "reset: the server closed the connection before the response was complete";
        // (response, status, body, keep-alive) read whole, or the error.
        type Want = Result<(u16, &'static str, bool), &'static str>;
        let table: &[(&str, Want)] = &[
            (cl, Ok((200, "hello", true))),
            (chunked, Ok((200, "hello world", true))),
            (trailers, Ok((200, "abc", true))),
            (close, Ok((200, "until the end", false))),
            (te_not_chunked, Ok((200, "zipped", false))),
            (interim, Ok((201, "ok", true))),
            ("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", Ok((204, "", true))),
            ("HTTP/1.1 304 Not Modified\r\n\r\n", Ok((304, "", true))),
            ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", Ok((200, "", true))),
            ("HTTP/1.1 101 Switching Protocols\r\n\r\n", Ok((101, "", false))),
            // Keep-alive: HTTP/1.1 unless closed; HTTP/1.0 only when asked.
            ("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", Ok((200, "x", false))),
            ("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\nx", Ok((200, "x", false))),
            ("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", Ok((200, "x", false))),
            ("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx", Ok((200, "x", true))),
            ("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc", Ok((200, "abc", true))),
            // Errors.
            ("THIS IS NOT HTTP AT ALL\r\n\r\n", Err("protocol: the response is not valid HTTP/1.1")),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
                Err("protocol: an invalid Content-Length"),
            ),
            ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", Err("protocol: an invalid Content-Length")),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
                Err("protocol: an invalid Content-Length"),
            ),
            (
                "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                Err("protocol: an HTTP/1.0 response with Transfer-Encoding"),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                Err("protocol: a chunk size that is not hexadecimal"),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
                Err("protocol: a chunk's data runs past its size"),
            ),
            ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", Err(cut)),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", Err(cut)),
            ("HTTP/1.1 200 OK\r\nContent-", Err(cut)),
            ("", Err(cut)),
        ];
        for (response, want) in table {
            let want = match *want {
                Ok((status, body, keep_alive)) => {
                    Ok(Read { status, body: body.as_bytes().to_vec(), used: response.len(), keep_alive })
                }
                Err(e) => Err(e.to_string()),
            };
            assert_eq!(read_whole(response.as_bytes()), want, "{response:?}");
        }
        // A HEAD's response has no body, whatever its head says.
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n";
        let want = Read { status: 200, body: Vec::new(), used: head.len(), keep_alive: true };
        assert_eq!(read_in_pieces(head.as_bytes(), &[], true, false), Ok(want));
    }

    #[test]
    fn the_bounds_hold_whatever_the_server_sends() {
        let endless_value = format!("HTTP/1.1 200 OK\r\nX-A: {}", "b".repeat(MAX_HEAD));
        let endless_headers = format!("HTTP/1.1 200 OK\r\n{}", "X-A: b\r\n".repeat(MAX_HEAD / 8 + 1));
        let many_headers = format!("HTTP/1.1 200 OK\r\n{}\r\n", "X-A: b\r\n".repeat(MAX_HEADERS + 1));
        let long_size =
            format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;{}", "e".repeat(MAX_CHUNK_LINE));
        let huge_size = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n";
        let trailers = |lines: &str| format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n{lines}");
        let endless_trailer = trailers(&format!("X-T: {}", "v".repeat(MAX_HEAD)));
        let endless_trailers = trailers(&"X-T: v\r\n".repeat(MAX_HEADERS + 1));
        let table = [
            (endless_value, "protocol: a response head over 64 KiB"),
            (endless_headers, "protocol: a response head of over 100 header lines"),
            (many_headers, "protocol: a response head of over 100 header lines"),
            (long_size, "protocol: a chunk-size line over 4 KiB"),
            (huge_size.to_string(), "protocol: a chunk size that is not hexadecimal"),
            (endless_trailer, "protocol: trailers over 64 KiB"),
            (endless_trailers, "protocol: over 100 trailer lines"),
        ];
        for (response, want) in table {
            // Fed in 1 KiB pieces, never closed: the bound ends it, not the end of input.
            let cuts: Vec<usize> = (1..=response.len() / 1024).map(|i| i * 1024).collect();
            let got = read_in_pieces(response.as_bytes(), &cuts, false, false);
            assert_eq!(got, Err(want.to_string()), "{}", &response[..60]);
        }
    }

    /// Responses of every framing, with bodies of any bytes (CRLFs, digits, "HTTP/1.1"...).
    fn response() -> impl Strategy<Value = (Vec<u8>, bool)> {
        let body = proptest::collection::vec(any::<u8>(), 0..300);
        let chunks = proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..80), 0..6);
        prop_oneof![
            body.clone().prop_map(|b| {
                let mut r = format!("HTTP/1.1 200 OK\r\nServer: p\r\nContent-Length: {}\r\n\r\n", b.len()).into_bytes();
                r.extend(b);
                (r, false)
            }),
            chunks.prop_map(|cs| {
                let mut r =
                    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                for c in cs {
                    r.extend(format!("{:x};n=v\r\n", c.len()).into_bytes());
                    r.extend(c);
                    r.extend(b"\r\n");
                }
                r.extend(b"0\r\nX-Trailer: t\r\n\r\n");
                (r, false)
            }),
            body.prop_map(|b| {
                let mut r = b"HTTP/1.0 200 OK\r\nX-A: b\r\n\r\n".to_vec();
                r.extend(b);
                (r, true)
            }),
        ]
    }

    proptest! {
        /// However the bytes are split across reads, the reader finds the same response.
        #[test]
        fn any_split_reads_the_same((response, to_close) in response(), cuts in proptest::collection::vec(0usize..700, 0..12)) {
            let whole = read_in_pieces(&response, &[], false, to_close);
            prop_assert!(whole.is_ok(), "{:?}", whole);
            prop_assert_eq!(read_in_pieces(&response, &cuts, false, to_close), whole.clone());
            let bytewise: Vec<usize> = (1..response.len()).collect();
            prop_assert_eq!(read_in_pieces(&response, &bytewise, false, to_close), whole.clone());
        }

        /// Dropping a body's bytes unread, however they arrive, reads the same response: its
        /// status, body length, bytes and keep-alive, and never a byte past the body.
        #[test]
        fn a_discarded_body_reads_the_same((response, to_close) in response(), cuts in proptest::collection::vec(0usize..700, 0..12)) {
            let whole = read_in_pieces(&response, &[], false, to_close).unwrap();
            // The response read with its body's length in place of its bytes.
            let dropping = |response: &[u8], cuts: &[usize], eof: bool| {
                pieces(response, cuts, false, eof, true).map(|(r, n)| (r.status, r.body.len() + n, r.used, r.keep_alive))
            };
            let same = Ok((whole.status, whole.body.len(), whole.used, whole.keep_alive));
            prop_assert_eq!(dropping(&response, &cuts, to_close), same.clone());
            let bytewise: Vec<usize> = (1..response.len()).collect();
            prop_assert_eq!(dropping(&response, &bytewise, to_close), same);
            // A second response behind the first, on the same connection, is left whole.
            if !to_close {
                let mut two = response.clone();
                two.extend_from_slice(b"HTTP/1.1 204 No Content\r\n\r\n");
                let first = dropping(&two, &cuts, false).unwrap();
                prop_assert_eq!(first.2, whole.used);
            }
        }
    }
}
