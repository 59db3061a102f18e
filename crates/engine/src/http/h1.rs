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
//!   what its checks read, capped), or is dropped by the kernel unread when nothing reads
//!   it. So a 1 MiB response costs a connection at most [`READ_BUF`] of memory.
//! - Everything a server controls is bounded ([`super::h1_read`]). A server that stalls is
//!   the slot's `--timeout`.
//!
//! Errors are classified as hyper's client classified them: bytes that are not HTTP/1.x, a
//! head over the bounds or a bad framing are `protocol`; a connection closed or reset
//! before the response was complete is `reset`. A failure says whether any of the request
//! was written and any of the response read, for the slot's stale-connection retry.

#[cfg(test)]
use super::h1_encode::{encode_head, push_decimal, Template};
use super::h1_read::{closed, Reader};
use super::{Answer, Outgoing, Reading};
use crate::conn::{io_failure, Failure, Stream};
use barrage_metrics::ErrorKind;
#[cfg(test)]
use http::{header::CONTENT_LENGTH, Method};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The read buffer of a connection: a large body streams through it, a read at a time.
/// Only the pages a read touches take memory: a connection of small responses holds about
/// one. Measured with 50 connections of 1 MiB bodies: 32 KiB reads cost the same CPU per
/// body as 64 KiB ones for 1.6 MiB less memory, 16 KiB ones twice the CPU (four times the
/// reads). A head (or trailers) longer than the buffer grows it, up to [`MAX_HEAD`](super::h1_read::MAX_HEAD).
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
