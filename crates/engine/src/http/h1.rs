//! HTTP/1.1, lean: one request at a time on a connection the slot owns, with no task, no
//! channel and no map of headers per request.
//!
//! - A target's request head is encoded once ([`Template`](super::h1_encode::Template)): a request copies it into the
//!   connection's reused output buffer, with a template's id written in between and a small
//!   body behind it, and goes out in one write (a large body follows by `writev`, from its
//!   shared buffer, never copied). A flow's step, whose variables fill its path, headers or
//!   body, is encoded per request ([`encode_head`](super::h1_encode::encode_head)): flows are not the hot path.
//! - The response is read through one bounded buffer per connection: `httparse` parses the
//!   head where it lies, the cache status and backend are read off its lines, and the body
//!   streams through the same buffer ([`Reader`]), never accumulated (a flow's step keeps
//!   what its checks read, capped). So a 1 MiB response costs a connection at most
//!   [`READ_BUF`] of memory.
//! - Everything a server controls is bounded: the head ([`MAX_HEAD`] bytes, [`MAX_HEADERS`]
//!   lines), a chunk-size line ([`MAX_CHUNK_LINE`]) and the trailers. A server that stalls
//!   is the slot's `--timeout`.
//!
//! Errors are classified as hyper's client classified them: bytes that are not HTTP/1.x, a
//! head over the bounds or a bad framing are `protocol`; a connection closed or reset
//! before the response was complete is `reset`. A failure says whether any of the request
//! was written and any of the response read, for the slot's stale-connection retry.

#[cfg(test)]
use super::h1_encode::{encode_head, push_decimal, Template};
use super::{Answer, Outgoing, Reading};
use crate::conn::{io_failure, Failure, Stream};
use barrage_metrics::ErrorKind;
#[cfg(test)]
use http::{header::CONTENT_LENGTH, Method};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Longest response head read (status line and header lines), as bytes.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header lines in a head (or in the trailers), as hyper's default.
pub(crate) const MAX_HEADERS: usize = 100;
/// Longest chunk-size line (the size and its extensions).
pub(crate) const MAX_CHUNK_LINE: usize = 4 * 1024;
/// The read buffer of a connection: a large body streams through it, a read at a time.
/// Only the pages a read touches take memory: a connection of small responses holds about
/// one. Measured with 50 connections of 1 MiB bodies: 32 KiB reads cost the same CPU per
/// body as 64 KiB ones for 1.6 MiB less memory, 16 KiB ones twice the CPU (four times the
/// reads). A head (or trailers) longer than the buffer grows it, up to [`MAX_HEAD`].
pub const READ_BUF: usize = 32 * 1024;
/// An open HTTP/1.1 connection.
pub(crate) struct Conn {
    io: Stream,
    /// Read, not yet used: `buf[pos..]`.
    buf: Vec<u8>,
    pos: usize,
    /// The request being written.
    out: Vec<u8>,
    /// Bytes written on the connection so far.
    bytes_out: u64,
    /// The last response left the connection fit for another request: kept alive, nothing
    /// read beyond it.
    reusable: bool,
}

/// Most buffers an engine thread keeps for its next connections.
const SPARE_BUFFERS: usize = 256;

thread_local! {
    /// The read and output buffers of this engine thread's closed connections, for its next
    /// ones: a new connection per request (`--no-keepalive`) would otherwise allocate a read
    /// buffer per request, and fault its pages in again when the allocator had returned them.
    /// (An engine thread is a current-thread runtime: no lock.)
    static SPARE: std::cell::RefCell<Vec<(Vec<u8>, Vec<u8>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for Conn {
    fn drop(&mut self) {
        let (mut buf, mut out) = (std::mem::take(&mut self.buf), std::mem::take(&mut self.out));
        if buf.capacity() == READ_BUF {
            buf.clear();
            out.clear();
            SPARE.with_borrow_mut(|spare| {
                if spare.len() < SPARE_BUFFERS {
                    spare.push((buf, out));
                }
            });
        }
    }
}

/// How writing the request ended.
enum Written {
    /// All of it went out.
    All,
    /// The server answered before taking all of it (a refusal of an upload): the response
    /// is read, and the connection not used again.
    Answered,
}

impl Conn {
    pub(super) fn new(io: Stream) -> Conn {
        let (buf, out) = SPARE.with_borrow_mut(|spare| spare.pop()).unwrap_or_default();
        Conn { io, buf, pos: 0, out, bytes_out: 0, reusable: true }
    }

    /// Bytes written so far.
    pub(super) fn bytes_out(&self) -> u64 {
        self.bytes_out
    }

    /// Whether the last response left the connection open (without looking for a close
    /// since: [`Conn::reusable`] does).
    pub(super) fn usable(&self) -> bool {
        self.reusable
    }

    /// Whether the connection can take another request: its last response allowed it, and
    /// the server has not closed it (or sent anything) since. tokio knows without a system
    /// call when nothing arrived since the last read drained the socket.
    pub(super) fn reusable(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.reusable {
            return false;
        }
        match self.poll_fill(cx) {
            Poll::Pending => true,
            // Closed (0), failed, or bytes nobody asked for: not to be trusted.
            Poll::Ready(_) => {
                self.reusable = false;
                false
            }
        }
    }

    /// Sends `out` and reads its response to the end.
    pub(super) async fn exchange(
        &mut self,
        out: &Outgoing<'_>,
        reading: &mut Reading<'_>,
        start: Instant,
    ) -> Result<Answer, Failure> {
        self.reusable = false;
        self.out.clear();
        let body = out.target.h1_request(out, &mut self.out);
        let out0 = self.bytes_out;
        let sent = start.elapsed();
        let written = self.write(body).await.map_err(|mut f| {
            f.unsent = self.bytes_out == out0;
            f.unanswered = true;
            f
        })?;
        let written_at = start.elapsed();
        let mut answer = Answer {
            status: 0,
            cache: barrage_metrics::CacheStatus::Unknown,
            backend: None,
            sent,
            written: Some(written_at),
            head: written_at,
            end: written_at,
            bytes_in: 0,
            bytes_out: self.bytes_out - out0,
        };
        let keep_alive = self.read(out.target.is_head(), reading, &mut answer, start).await.map_err(|mut f| {
            f.unanswered = answer.bytes_in == 0;
            f
        })?;
        self.reusable = keep_alive && matches!(written, Written::All) && self.pos == self.buf.len();
        Ok(answer)
    }

    /// Writes the request in `self.out`, then `body`, and flushes.
    async fn write(&mut self, body: &[u8]) -> Result<Written, Failure> {
        let (head_len, total) = (self.out.len(), self.out.len() + body.len());
        let mut done = 0;
        std::future::poll_fn(|cx| {
            while done < total {
                let io = Pin::new(&mut self.io);
                let res = match (done < head_len, body.is_empty()) {
                    (true, true) => io.poll_write(cx, &self.out[done..]),
                    (true, false) => io.poll_write_vectored(cx, &[IoSlice::new(&self.out[done..]), IoSlice::new(body)]),
                    (false, _) => io.poll_write(cx, &body[done - head_len..]),
                };
                match res {
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err(Failure::new(
                            ErrorKind::Reset,
                            "the server stopped reading the request",
                        )))
                    }
                    Poll::Ready(Ok(n)) => {
                        done += n;
                        self.bytes_out += n as u64;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(io_failure(e))),
                    Poll::Pending => return self.answered_early(cx),
                }
            }
            // TLS keeps what it could not send yet.
            match ready!(Pin::new(&mut self.io).poll_flush(cx)) {
                Ok(()) => Poll::Ready(Ok(Written::All)),
                Err(e) => Poll::Ready(Err(io_failure(e))),
            }
        })
        .await
    }

    /// While the server does not take the rest of the request: whether it answered already.
    fn answered_early(&mut self, cx: &mut Context<'_>) -> Poll<Result<Written, Failure>> {
        match ready!(self.poll_fill(cx)) {
            Ok(0) => Poll::Ready(Err(closed())),
            Ok(_) => Poll::Ready(Ok(Written::Answered)),
            Err(e) => Poll::Ready(Err(io_failure(e))),
        }
    }

    /// Reads the response into `answer`: its head's status, cache status and backend, its
    /// body (kept as far as `reading` asks), bytes and times. Returns whether the response
    /// leaves the connection open for another request.
    async fn read(
        &mut self,
        head_request: bool,
        reading: &mut Reading<'_>,
        answer: &mut Answer,
        start: Instant,
    ) -> Result<bool, Failure> {
        let mut reader = Reader::new(head_request);
        // When the bytes in the buffer arrived: the read that completes the head or the
        // body is when it did (one clock read per read, not per event).
        let mut now = answer.end;
        loop {
            let Conn { buf, pos, .. } = self;
            let step = reader.read(&buf[*pos..], &mut |status, lines| {
                answer.status = status;
                answer.head = now;
                let view = barrage_plan::HeaderLines::new(lines);
                (answer.cache, answer.backend) = reading.head(&view, |keep| keep_lines(keep, lines));
            })?;
            reading.keep_body(&buf[*pos..][step.data]);
            *pos += step.used;
            answer.bytes_in += step.used as u64;
            if step.done {
                answer.end = now;
                return Ok(reader.keep_alive);
            }
            if step.used > 0 {
                continue;
            }
            let discard = reader.body_left().filter(|_| reading.body.is_none() && self.pos == self.buf.len());
            let n = match discard {
                Some(left) => std::future::poll_fn(|cx| self.poll_discard(cx, left)).await,
                None => std::future::poll_fn(|cx| self.poll_fill(cx)).await,
            };
            let n = n.map_err(io_failure)?;
            now = start.elapsed();
            if n == 0 {
                reader.eof()?;
                answer.end = now;
                return Ok(false);
            }
            if discard.is_some() {
                reader.discarded(n as u64);
                answer.bytes_in += n as u64;
            }
        }
    }

    /// Drops up to `left` body bytes the server sent, in the kernel when the connection is
    /// plain TCP on Linux (`recv` with `MSG_TRUNC` discards TCP data without copying it to
    /// user space), else through the buffer: how many (0 when it closed). Only for a body
    /// nobody reads, with nothing left in the buffer: the bytes after `left` are the next
    /// response's, never taken.
    fn poll_discard(&mut self, cx: &mut Context<'_>, left: u64) -> Poll<std::io::Result<usize>> {
        #[cfg(target_os = "linux")]
        if let tokio_util::either::Either::Left(tcp) = &self.io {
            return poll_discard_tcp(tcp, cx, left);
        }
        let n = ready!(self.poll_fill(cx))?;
        // What arrived beyond the body stays in the buffer for the reader.
        let take = n.min(usize::try_from(left).unwrap_or(usize::MAX));
        self.pos += take;
        Poll::Ready(Ok(take))
    }

    /// Reads what the server sent into the buffer's free end: how much (0 when it closed).
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        make_room(&mut self.buf, &mut self.pos);
        let mut rb = ReadBuf::uninit(self.buf.spare_capacity_mut());
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut rb))?;
        let n = rb.filled().len();
        // SAFETY: `poll_read` initialised the first `n` bytes of the spare capacity.
        unsafe { self.buf.set_len(self.buf.len() + n) };
        Poll::Ready(Ok(n))
    }
}

/// Most bytes one discarding `recv` drops: what the socket holds, up to this. Measured
/// against nginx's 1 MiB file at 50 connections (3 s, generator and nginx on a core each):
/// copying 32 KiB reads cost 155 µs of generator CPU a response; discarding, 116 µs at
/// 32 KiB and 103-118 µs from 64 KiB to 4 MiB, and 435 µs at 16 KiB, where each small
/// read reopened the window and nginx's sending ran in barrage's softirqs (nginx at 14%
/// CPU). Large discards leave the sending to nginx, as on a real network.
#[cfg(target_os = "linux")]
const DISCARD_MAX: u64 = 4 * 1024 * 1024;

/// Drops up to `left` bytes of what `tcp` received, without copying them: the kernel's
/// `recv(MSG_TRUNC)` on TCP. How many (0 when the server closed).
#[cfg(target_os = "linux")]
fn poll_discard_tcp(tcp: &tokio::net::TcpStream, cx: &mut Context<'_>, left: u64) -> Poll<std::io::Result<usize>> {
    use std::os::fd::AsRawFd;
    let len = left.min(DISCARD_MAX) as usize;
    loop {
        ready!(tcp.poll_read_ready(cx))?;
        let discarded = tcp.try_io(tokio::io::Interest::READABLE, || {
            // SAFETY: with MSG_TRUNC, TCP's recvmsg drops the data instead of copying it:
            // the kernel never writes to the (absent) buffer.
            let n = unsafe { libc::recv(tcp.as_raw_fd(), std::ptr::null_mut(), len, libc::MSG_TRUNC) };
            usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
        });
        match discarded {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            done => return Poll::Ready(done),
        }
    }
}

/// Makes room at the end of a connection's read buffer, whose bytes before `pos` are used,
/// for the next read.
fn make_room(buf: &mut Vec<u8>, pos: &mut usize) {
    if *pos == buf.len() {
        buf.clear();
        *pos = 0;
    } else if *pos > 0 {
        // Part of a head or a chunk-size line: moved to the front, so the buffer's bound is
        // on what is still to be parsed.
        buf.drain(..*pos);
        *pos = 0;
    }
    if buf.len() == buf.capacity() {
        // The first read, or a head longer than the buffer (the reader stops it at
        // MAX_HEAD). Never a read into no room: it would read as the end of the stream.
        buf.reserve_exact(READ_BUF);
    }
}

/// How an HTTP/1.1 response read ended.
#[cfg(any(test, feature = "fuzz"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Complete; whether it left the connection open.
    Complete {
        /// The connection may carry another request.
        keep_alive: bool,
    },
    /// Failed: the error's kind and message.
    Failed(String),
    /// Never: the input always ends with the server closing.
    NeedsMore,
}

/// What reading an HTTP/1.1 response gave.
#[cfg(any(test, feature = "fuzz"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Http1 {
    /// The final status (0 before a head).
    pub status: u16,
    /// Body bytes read.
    pub body: u64,
    /// How it ended.
    pub end: End,
    /// The most bytes the read buffer and what was kept held.
    pub peak: usize,
}

/// Reads `response` as a connection does, through [`Reader`], its buffer and
/// [`Reading`]: each read takes the next of `reads` bytes (what the socket had) or as many
/// as the buffer has room for, whichever is fewer; the server closes after the last byte.
#[cfg(any(test, feature = "fuzz"))]
pub(crate) fn fuzz_read(response: &[u8], reads: &[usize], head_request: bool) -> Http1 {
    let rules = barrage_plan::CacheRules::default();
    let backend_headers = barrage_plan::default_backend_headers();
    let (mut last_backend, mut headers, mut body) = (None, HeaderMap::new(), Vec::new());
    let mut reading = Reading {
        rules: &rules,
        backend_headers: &backend_headers,
        last_backend: &mut last_backend,
        headers: Some(&mut headers),
        body: Some(&mut body),
        stamp: None,
    };
    let mut reader = Reader::new(head_request);
    let (mut buf, mut pos, mut input, mut reads) = (Vec::new(), 0, response, reads.iter());
    let mut out = Http1 { status: 0, body: 0, end: End::NeedsMore, peak: 0 };
    let end = loop {
        let step = match reader.read(&buf[pos..], &mut |status, lines| {
            out.status = status;
            let view = barrage_plan::HeaderLines::new(lines);
            let _ = reading.head(&view, |keep| keep_lines(keep, lines));
        }) {
            Ok(step) => step,
            Err(f) => break End::Failed(format!("{}: {}", f.kind.name(), f.message())),
        };
        reading.keep_body(&buf[pos..][step.data.clone()]);
        out.body += step.data.len() as u64;
        pos += step.used;
        if step.done {
            break End::Complete { keep_alive: reader.keep_alive };
        }
        if step.used > 0 {
            continue;
        }
        make_room(&mut buf, &mut pos);
        out.peak = out.peak.max(buf.capacity());
        if input.is_empty() {
            break match reader.eof() {
                Ok(()) => End::Complete { keep_alive: false },
                Err(f) => End::Failed(format!("{}: {}", f.kind.name(), f.message())),
            };
        }
        let n = reads.next().copied().unwrap_or(usize::MAX).clamp(1, input.len()).min(buf.capacity() - buf.len());
        buf.extend_from_slice(&input[..n]);
        input = &input[n..];
    };
    out.end = end;
    out.peak = out.peak.max(buf.capacity()) + body.capacity();
    out
}

fn closed() -> Failure {
    Failure::new(ErrorKind::Reset, "the server closed the connection before the response was complete")
}

fn protocol(what: &'static str) -> Failure {
    Failure::new(ErrorKind::Protocol, what)
}

/// Keeps a head's lines as a header map, for a flow's step whose captures or checks read
/// them.
fn keep_lines(keep: &mut HeaderMap, lines: &[httparse::Header<'_>]) {
    keep.clear();
    for line in lines {
        // httparse checked both: a token, and a value of visible characters.
        if let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(line.name.as_bytes()), HeaderValue::from_bytes(line.value))
        {
            keep.append(name, value);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Responses

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
        let mut reader = Reader::new(head_request);
        let (mut buf, mut pos, mut fed) = (Vec::new(), 0, 0);
        let mut ends: Vec<usize> = cuts.iter().copied().filter(|&c| c < response.len()).collect();
        ends.sort();
        ends.push(response.len());
        let mut ends = ends.into_iter();
        let (mut status, mut body, mut used) = (0, Vec::new(), 0);
        loop {
            let step = reader
                .read(&buf[pos..], &mut |s, _| status = s)
                .map_err(|f| format!("{}: {}", f.kind.name(), f.message()))?;
            body.extend_from_slice(&buf[pos..][step.data.clone()]);
            pos += step.used;
            used += step.used;
            if step.done {
                return Ok(Read { status, body, used, keep_alive: reader.keep_alive });
            }
            if step.used > 0 {
                continue;
            }
            match ends.next() {
                Some(end) => {
                    buf.extend_from_slice(&response[fed..end]);
                    fed = end;
                }
                None if eof => {
                    reader.eof().map_err(|f| format!("{}: {}", f.kind.name(), f.message()))?;
                    return Ok(Read { status, body, used, keep_alive: false });
                }
                None => return Err("needs more".into()),
            }
        }
    }

    /// As [`read_in_pieces`], but as a connection that drops a body nobody reads: a piece
    /// that comes while the reader is in a body's data, with nothing left in the buffer, is
    /// discarded up to [`Reader::body_left`] (what follows it kept). Gives the response read
    /// with its body's length in place of its bytes.
    fn discard_in_pieces(response: &[u8], cuts: &[usize], eof: bool) -> Result<(u16, usize, usize, bool), String> {
        let mut reader = Reader::new(false);
        let (mut buf, mut pos, mut fed) = (Vec::new(), 0, 0);
        let mut ends: Vec<usize> = cuts.iter().copied().filter(|&c| c < response.len()).collect();
        ends.sort();
        ends.push(response.len());
        let mut ends = ends.into_iter();
        let (mut status, mut body, mut used) = (0, 0, 0);
        let err = |f: Failure| format!("{}: {}", f.kind.name(), f.message());
        loop {
            let step = reader.read(&buf[pos..], &mut |s, _| status = s).map_err(err)?;
            body += step.data.len();
            pos += step.used;
            used += step.used;
            if step.done {
                return Ok((status, body, used, reader.keep_alive));
            }
            if step.used > 0 {
                continue;
            }
            let Some(end) = ends.next() else {
                return match eof {
                    true => reader.eof().map(|()| (status, body, used, false)).map_err(err),
                    false => Err("needs more".into()),
                };
            };
            let mut piece = &response[fed..end];
            fed = end;
            if let Some(left) = reader.body_left().filter(|_| pos == buf.len()) {
                let n = piece.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                reader.discarded(n as u64);
                (body, used, piece) = (body + n, used + n, &piece[n..]);
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

    #[test]
    fn heads_encode_as_hyper_did() {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        headers.insert("x-trace", HeaderValue::from_static("abc"));
        let get = Template::new(&Method::GET, ("/obj/", Some("?v=1")), Template::rest(&headers, 0).into());
        let mut out = Vec::new();
        get.write(1234, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET /obj/1234?v=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\nx-trace: abc\r\n\r\n"
        );
        // A body's own length replaces a Content-Length among the headers; without a body,
        // the user's is sent.
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("7"));
        let post = Template::new(&Method::POST, ("/orders?x=1", None), Template::rest(&headers, 12).into());
        let mut out = Vec::new();
        post.write(99, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "POST /orders?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\nx-trace: abc\r\ncontent-length: 12\r\n\r\n"
        );
        let mut out = Vec::new();
        let extra = [(HeaderName::from_static("x-flow"), HeaderValue::from_static("1"))];
        encode_head(&mut out, &Method::DELETE, "/a/b", &headers, &extra, 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "DELETE /a/b HTTP/1.1\r\nhost: 127.0.0.1:8080\r\nx-trace: abc\r\ncontent-length: 7\r\nx-flow: 1\r\n\r\n"
        );
        for (n, text) in [(0, "0"), (7, "7"), (10, "10"), (u64::MAX, "18446744073709551615")] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, text.as_bytes());
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
            let same = Ok((whole.status, whole.body.len(), whole.used, whole.keep_alive));
            prop_assert_eq!(discard_in_pieces(&response, &cuts, to_close), same.clone());
            let bytewise: Vec<usize> = (1..response.len()).collect();
            prop_assert_eq!(discard_in_pieces(&response, &bytewise, to_close), same);
            // A second response behind the first, on the same connection, is left whole.
            if !to_close {
                let mut two = response.clone();
                two.extend_from_slice(b"HTTP/1.1 204 No Content\r\n\r\n");
                let first = discard_in_pieces(&two, &cuts, false).unwrap();
                prop_assert_eq!(first.2, whole.used);
            }
        }
    }
}
