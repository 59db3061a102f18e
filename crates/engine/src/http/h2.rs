//! HTTP/2, lean: a client of our own over the connection's stream (TCP or TLS), with no
//! task, channel, header map or allocation per request, as HTTP/1.1's ([`super::h1`]).
//!
//! - A connection is driven by a task of its own ([`spawn_local`](tokio::task::spawn_local),
//!   on the engine thread), because several slots' requests share it: whichever of them
//!   polled the socket last would otherwise be the only one woken when bytes arrive. The
//!   driver reads frames off one reused buffer (RFC 9113's 9-byte headers, parsed by hand),
//!   decodes each response head with our HPACK decoder ([`super::hpack`]) straight into its
//!   stream's reused [`Fields`], counts DATA (keeping a body only when a flow's step reads
//!   it), and wakes the stream's slot when its response is complete.
//! - A request is its target's header block, encoded once ([`Template`]; a template's path
//!   and a flow's filled headers per request), framed into the connection's one output
//!   buffer, which the driver writes: the requests that several slots queue in one turn of
//!   the engine thread go out in one write. With `--rounds` a connection sends in rounds
//!   (see [`Conn::handshake`]). When a request's frames were written is its `send` phase's
//!   end.
//! - Everything a server controls is bounded: a frame ([`MAX_FRAME`], ours, the default),
//!   a header block and its decoded list ([`MAX_HEADER_LIST`]), the CONTINUATION frames of
//!   one block ([`MAX_CONTINUATIONS`]), the dynamic table (4 KiB). A server that breaks the
//!   protocol ends the connection (GOAWAY) and fails its streams as `protocol`; one that
//!   stalls is the slot's `--timeout`, whose dropped exchange resets its stream (CANCEL).
//!
//! What a connection saw of its streams (the most open at once, flow-control stalls, the
//! server's limit on streams) and its bytes on the wire are counted in [`Inner`] and handed
//! to whichever request finishes next, so the totals are exact however the requests
//! interleave.
//!
//! Flow control: each stream may receive [`STREAM_WINDOW`] bytes unread, and the
//! connection as much as all its streams together, so only a stream's window ever holds
//! the server back, and each such stall is counted. The driver reads data as it arrives
//! and gives the windows back once half of them is used (one WINDOW_UPDATE per half
//! window, not per frame). Request bodies go out as the server's windows allow; each wait
//! for more window is a send stall. Streams above the server's limit
//! (SETTINGS_MAX_CONCURRENT_STREAMS; one until its SETTINGS came) wait for one to close.

use super::hpack::{self, Decoder, Fields};
use super::{Answer, Outgoing, Reading};
use crate::conn::{io_failure, Failure, Stream};
use barrage_metrics::recorder::StreamFigures;
use barrage_metrics::ErrorKind;
use http::{HeaderMap, Method, Uri};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The receive window of each stream: what the server may send a stream before barrage
/// has read it. 1 MiB: a response of up to 1 MiB needs no WINDOW_UPDATE before it is
/// whole (h2load's default is 1 GiB, which leaves flow control out; 64 KiB, the protocol's
/// default, would stall every larger response on loopback).
pub(crate) const STREAM_WINDOW: u32 = 1 << 20;

/// The most header bytes a response may carry, as a block and decoded (RFC 7541's count):
/// a server cannot make barrage hold more for one head.
pub const MAX_HEADER_LIST: usize = 1 << 20;

/// The most CONTINUATION frames one header block may take: a flood of empty ones is a
/// protocol error, not a loop. 1 MiB in 16 KiB frames is 64.
const MAX_CONTINUATIONS: u32 = 128;

/// The largest frame payload we take: the protocol's default, never raised.
pub const MAX_FRAME: usize = 16_384;

/// The read buffer: a frame of the largest size and the start of the next always fit.
pub const READ_BUF: usize = 64 * 1024;

/// Frames read by the driver before it lets the slots run (a server streaming large bodies
/// must not starve the engine thread).
const READS_PER_TURN: u32 = 16;

/// With `--rounds` (see [`Conn::handshake`]), the longest a request waits for the rest of
/// its round: a round goes out when as many requests wait as are still out, or after this
/// (tokio's millisecond timer fires it up to 2 ms later). It bounds what a round costs the
/// requests that are quick when most of the connection's streams wait on slow ones.
/// Shorter costs CPU, since the engine thread then sleeps with a timer due soon: at `-c 10
/// --streams 10` against nginx, 9.2 µs a request at 1 ms, 8.0 at 5 ms, 7.2 at 10 ms (perf
/// stat, 4 s runs each; bench/results/2026-11-26_0700-i17-rounds.md).
const ROUND_WAIT: std::time::Duration = std::time::Duration::from_millis(5);

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// Frame types and flags (RFC 9113 6).
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;
pub const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY: u8 = 0x2;
pub const PRIORITY_FLAG: u8 = 0x20;

// Error codes (RFC 9113 7).
const PROTOCOL_ERROR: u32 = 0x1;
const FLOW_CONTROL_ERROR: u32 = 0x3;
const FRAME_SIZE_ERROR: u32 = 0x6;
const REFUSED_STREAM: u32 = 0x7;
const CANCEL: u32 = 0x8;
const COMPRESSION_ERROR: u32 = 0x9;
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// Acknowledgements (of PING and SETTINGS) queued and not yet written out that end the
/// connection: a server that floods them, or sends them and reads no answer, must not make
/// the output buffer grow without bound. No server needs a fraction of this.
const MAX_UNSENT_ACKS: u32 = 10_000;

/// The largest stream id (RFC 9113 5.1.1).
const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// The largest window (RFC 9113 6.9.1).
const MAX_WINDOW: i64 = (1 << 31) - 1;

/// An open HTTP/2 connection: a handle to open streams on it. Cloning it gives another
/// slot its own handle to the same connection.
pub struct Conn {
    inner: Rc<RefCell<Inner>>,
}

impl Clone for Conn {
    fn clone(&self) -> Self {
        self.inner.borrow_mut().handles += 1;
        Conn { inner: self.inner.clone() }
    }
}

impl Drop for Conn {
    /// The last handle gone, the driver closes the connection once its streams are done.
    fn drop(&mut self) {
        let mut i = self.inner.borrow_mut();
        i.handles -= 1;
        if i.handles == 0 {
            i.wake_driver();
        }
    }
}

/// How a stream, or the whole connection, ended without a response.
#[derive(Clone, Debug)]
enum Ended {
    /// The server reset the stream (RST_STREAM), with this code.
    Reset(u32),
    /// The stream was above the server's GOAWAY's last stream id: not processed.
    GoAway(u32),
    /// The server broke the protocol (we sent GOAWAY or RST_STREAM with this code).
    Broke(u32, &'static str),
    /// Reading or writing failed.
    Io(ErrorKind, Rc<str>),
    /// The server closed the connection.
    Closed,
}

/// Where a stream's response is.
#[derive(Clone, Debug, Default)]
enum Stage {
    /// Waiting for its head (interim 1xx heads are skipped).
    #[default]
    Head,
    /// The head came; the body is coming.
    Body,
    /// The response is complete.
    Done,
    Failed(Ended),
}

/// A stream in flight, in a slab: reused, with its buffers, by the next request.
#[derive(Default)]
struct Entry {
    id: u32,
    stage: Stage,
    status: u16,
    head_at: Option<Instant>,
    end_at: Option<Instant>,
    /// The decoded head (and, for a moment, interim heads').
    fields: Fields,
    /// Keep the body (a flow's step reads it).
    keep: bool,
    body: Vec<u8>,
    /// What we may still send on the stream.
    send_window: i64,
    /// Received on the stream since its window was last given back.
    recv_unacked: u32,
    /// Our END_STREAM is queued.
    sent_end: bool,
    /// When the request's last frame was written out.
    written_at: Option<Instant>,
    waker: Option<Waker>,
}

/// What the streams of one connection share.
struct Inner {
    /// Frames to write; the driver writes them out.
    out: Vec<u8>,
    driver: Option<Waker>,
    driver_woken: bool,
    /// Live handles; with none and no stream, the driver closes the connection.
    handles: usize,
    /// The connection ended: why (each stream still open failed with it).
    ended: Option<Ended>,
    /// The server's GOAWAY: its code.
    goaway: Option<u32>,
    next_id: u32,
    // The server's settings.
    settings_came: bool,
    /// Acknowledgements queued since the output buffer was last written out whole.
    unsent_acks: u32,
    /// Streams whose request is queued whole and not yet all written: (id, slab index, the
    /// end of its last frame in `out`), in the order of `out`.
    unwritten: VecDeque<(u32, usize, usize)>,
    /// Of `out`, the bytes that are whole requests without a body (a round may wait).
    request_bytes: usize,
    /// Send requests in rounds (`--rounds`): see [`Inner::round_waits`].
    rounds: bool,
    max_streams: u32,
    initial_window: i64,
    max_frame: usize,
    /// What we may still send on the connection.
    send_window: i64,
    /// Our connection window, and what of it was received and not yet given back.
    conn_window: u32,
    conn_unacked: u32,
    /// Streams in flight by id (the server counts them against its limit): (id, slab index).
    active: Vec<(u32, usize)>,
    entries: Vec<Entry>,
    free: Vec<usize>,
    /// Slots waiting for a stream below the server's limit.
    waiting: Vec<Waker>,
    hpack: Decoder,
    /// A header block split by CONTINUATION: its stream, flags, frames so far, bytes.
    block: Vec<u8>,
    block_stream: u32,
    block_flags: u8,
    block_frames: u32,
    /// Heads of streams nobody waits for (cancelled) and trailers: decoded and dropped.
    trash: Fields,
    /// A request's header block, framed from here.
    scratch: Vec<u8>,
    // What the connection saw.
    bytes_in: u64,
    bytes_out: u64,
    /// Wire bytes (in, out) already counted into finished requests.
    counted: (u64, u64),
    figures: StreamFigures,
    /// `--streams`: a server limit below it is reported.
    streams: u64,
    /// The server's limit was read (after a response head: its SETTINGS came by then).
    cap_read: bool,
}

impl Conn {
    /// Starts HTTP/2 over `io` for `streams` requests at once: queues the preface and our
    /// SETTINGS, and spawns the driver.
    ///
    /// `rounds` (`--rounds`: a closed loop without think time, several streams): the
    /// connection sends its requests in rounds, as h2load's slower turns do by themselves. A
    /// request whose stream frees up waits until as many wait as are still out (half the
    /// streams), or [`ROUND_WAIT`]. Written as each slot freed up, a write carried 1.3
    /// requests at `--streams 100` against nginx (at one core), which then read and answered
    /// them as few at a time; in rounds a write carries 45, and nginx answered 1.1-1.2× as
    /// many requests a second (bench/results/2026-11-26_0700-i17-rounds.md). The wait is the
    /// request's `send` phase (its stream opened, its frames not yet written), in its
    /// latency. Off by default: quick requests sharing a connection with slow ones wait for
    /// the rounds the slow ones hold back, and barrage's latency is the server's unless asked
    /// otherwise.
    pub(super) async fn handshake(io: Stream, streams: u32, rounds: bool) -> Result<Conn, Failure> {
        let inner = Rc::new(RefCell::new(Inner::new(streams, rounds)));
        let driver = Driver {
            inner: inner.clone(),
            io,
            buf: Vec::with_capacity(READ_BUF),
            written: 0,
            round_wait: Box::pin(tokio::time::sleep(ROUND_WAIT)),
            round: Round::Idle,
            flushing: false,
        };
        tokio::task::spawn_local(driver);
        Ok(Conn { inner })
    }

    /// Whether a new stream may be opened: the connection is up and no GOAWAY came.
    pub(super) fn usable(&mut self) -> bool {
        let i = self.inner.borrow();
        i.ended.is_none() && i.goaway.is_none() && i.next_id <= MAX_STREAM_ID
    }

    /// Whether `self` and `other` are handles to the same connection.
    pub(super) fn same(&self, other: &Conn) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }

    /// What the connection saw of its streams since last asked.
    pub(super) fn take_figures(&self) -> StreamFigures {
        let mut i = self.inner.borrow_mut();
        let most_open = i.active.len() as u64;
        std::mem::replace(&mut i.figures, StreamFigures { most_open, ..StreamFigures::default() })
    }

    /// Sends `out` on a new stream and reads its response to the end.
    pub(super) async fn exchange(
        &mut self,
        out: &Outgoing<'_>,
        reading: &mut Reading<'_>,
        start: Instant,
    ) -> Result<Answer, Failure> {
        // Above the server's limit on streams, the request waits for one to close. That
        // wait is in the request's latency but not in a phase.
        poll_fn(|cx| self.inner.borrow_mut().poll_room(cx)).await?;
        let body = out.target.body(out);
        let index = self.inner.borrow_mut().open_stream(out, body.is_empty(), reading.body.is_some());
        let stream = StreamGuard { inner: &self.inner, index };
        let sent = start.elapsed();
        let mut offset = 0;
        let mut stalled = false;
        while offset < body.len() {
            poll_fn(|cx| self.inner.borrow_mut().poll_send(index, &body, &mut offset, &mut stalled, cx)).await?;
        }
        poll_fn(|cx| self.inner.borrow_mut().poll_response(index, cx)).await?;
        let mut i = self.inner.borrow_mut();
        i.read_cap();
        let entry = &i.entries[index];
        let at = |t: Option<Instant>| t.map_or_else(|| start.elapsed(), |t| t.saturating_duration_since(start));
        let (head, end) = (at(entry.head_at), at(entry.end_at));
        let written = entry.written_at.map(|t| t.saturating_duration_since(start));
        let fields = &entry.fields;
        let (cache, backend) = reading.head(fields, |keep| keep_fields(keep, fields));
        reading.keep_body(&entry.body);
        let status = entry.status;
        let (bytes_in, bytes_out) = i.take_bytes();
        drop(i);
        drop(stream);
        Ok(Answer { status, cache, backend, sent, written, head, end, bytes_in, bytes_out })
    }
}

/// Keeps a head's fields as a header map, for a flow's step whose captures or checks read
/// them (pseudo-headers left out).
fn keep_fields(keep: &mut HeaderMap, fields: &Fields) {
    keep.clear();
    for (name, value) in fields.iter().filter(|(n, _)| !n.starts_with(b":")) {
        if let (Ok(name), Ok(value)) = (http::HeaderName::from_bytes(name), http::HeaderValue::from_bytes(value)) {
            keep.append(name, value);
        }
    }
}

/// A stream while its request's exchange lives: dropped before the response ended (the
/// request's timeout, or the run stopping), it resets the stream (CANCEL) and frees it.
struct StreamGuard<'a> {
    inner: &'a Rc<RefCell<Inner>>,
    index: usize,
}

impl Drop for StreamGuard<'_> {
    fn drop(&mut self) {
        let mut i = self.inner.borrow_mut();
        let e = &i.entries[self.index];
        let (id, sent_end, done) = (e.id, e.sent_end, matches!(e.stage, Stage::Done));
        // In flight, or answered before its body was all sent: the server is told.
        if (i.close_stream(id) || (done && !sent_end)) && i.ended.is_none() {
            rst_stream(&mut i.out, id, CANCEL);
            i.wake_driver();
        }
        let e = &mut i.entries[self.index];
        e.waker = None;
        e.body.clear();
        i.free.push(self.index);
    }
}

impl Inner {
    /// A connection's state for `streams` requests at once (`rounds`: see
    /// [`Conn::handshake`]), with the preface, our SETTINGS and our connection window queued.
    fn new(streams: u32, rounds: bool) -> Inner {
        let streams = streams.max(1);
        let conn_window = STREAM_WINDOW.saturating_mul(streams).min(MAX_WINDOW as u32);
        let mut out = Vec::with_capacity(16 * 1024);
        out.extend_from_slice(PREFACE);
        let settings: [(u16, u32); 3] = [
            // ENABLE_PUSH off: a PUSH_PROMISE is then a protocol error.
            (0x2, 0),
            (0x4, STREAM_WINDOW),
            (0x6, MAX_HEADER_LIST as u32),
        ];
        frame(&mut out, settings.len() * 6, SETTINGS, 0, 0);
        for (id, value) in settings {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&value.to_be_bytes());
        }
        window_update(&mut out, 0, conn_window - 65_535);
        Inner {
            out,
            driver: None,
            driver_woken: false,
            handles: 1,
            ended: None,
            goaway: None,
            next_id: 1,
            settings_came: false,
            unsent_acks: 0,
            unwritten: VecDeque::with_capacity(streams as usize),
            request_bytes: 0,
            rounds: rounds && streams > 1,
            // Until the server's SETTINGS say how many streams it takes, one: a burst above
            // its limit would be refused (REFUSED_STREAM) and sent again. Its SETTINGS come
            // first on the connection, so the others wait at most a round trip, once.
            max_streams: 1,
            initial_window: 65_535,
            max_frame: MAX_FRAME,
            send_window: 65_535,
            conn_window,
            conn_unacked: 0,
            active: Vec::with_capacity(streams as usize),
            entries: Vec::new(),
            free: Vec::new(),
            waiting: Vec::new(),
            hpack: Decoder::default(),
            block: Vec::new(),
            block_stream: 0,
            block_flags: 0,
            block_frames: 0,
            trash: Fields::default(),
            scratch: Vec::new(),
            bytes_in: 0,
            bytes_out: 0,
            counted: (0, 0),
            figures: StreamFigures::default(),
            streams: u64::from(streams),
            cap_read: false,
        }
    }

    fn wake_driver(&mut self) {
        if !self.driver_woken {
            self.driver_woken = true;
            if let Some(w) = &self.driver {
                w.wake_by_ref();
            }
        }
    }

    /// Whether the queued requests may wait for more of their round: the connection sends
    /// in rounds, only whole requests are queued (nothing the server waits for:
    /// acknowledgements, window updates, resets, bodies), and fewer of them than are out.
    fn round_waits(&self) -> bool {
        let queued = self.unwritten.len();
        self.rounds
            && self.ended.is_none()
            && self.goaway.is_none()
            && queued > 0
            && self.out.len() == self.request_bytes
            && queued < self.active.len().saturating_sub(queued)
    }

    /// The requests whose last frame is within the first `written` bytes of `out` were
    /// written now.
    fn stamp_written(&mut self, written: usize) {
        let mut now = None;
        while let Some(&(id, index, _)) = self.unwritten.front().filter(|&&(_, _, end)| end <= written) {
            self.unwritten.pop_front();
            // A stream cancelled meanwhile may have been reused by another request.
            let e = &mut self.entries[index];
            if e.id == id {
                e.written_at = Some(*now.get_or_insert_with(Instant::now));
            }
        }
    }

    fn count(&mut self, f: impl FnOnce(&mut StreamFigures)) {
        f(&mut self.figures);
    }

    /// Ready when a stream may be opened; an error when none ever will on this connection.
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        if let Some(ended) = &self.ended {
            return Poll::Ready(Err(ended.failure(false, true)));
        }
        if let Some(code) = self.goaway {
            return Poll::Ready(Err(Ended::GoAway(code).failure(false, true)));
        }
        if self.next_id > MAX_STREAM_ID {
            // Every stream id used (2^30 requests): as a GOAWAY, the request goes on a new
            // connection.
            return Poll::Ready(Err(Ended::GoAway(0).failure(false, true)));
        }
        if self.active.len() < self.max_streams as usize {
            return Poll::Ready(Ok(()));
        }
        if !self.waiting.iter().any(|w| w.will_wake(cx.waker())) {
            self.waiting.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Opens a stream for `out`: its HEADERS (END_STREAM when `no_body`) queued. Returns
    /// its slab index.
    fn open_stream(&mut self, out: &Outgoing<'_>, no_body: bool, keep: bool) -> usize {
        let id = self.next_id;
        self.next_id += 2;
        let index = self.free.pop().unwrap_or_else(|| {
            self.entries.push(Entry::default());
            self.entries.len() - 1
        });
        let e = &mut self.entries[index];
        e.id = id;
        e.stage = Stage::Head;
        e.head_at = None;
        e.end_at = None;
        e.keep = keep;
        e.send_window = self.initial_window;
        e.recv_unacked = 0;
        e.sent_end = no_body;
        e.written_at = None;
        e.fields.clear();
        // Streams in use: from their HEADERS to the end of their response read (or their
        // reset), as the server counts them against its limit.
        self.active.push((id, index));
        let open = self.active.len() as u64;
        self.count(|f| f.most_open = f.most_open.max(open));
        // The block, then framed: in CONTINUATION frames when over the server's frame size.
        let mut block = std::mem::take(&mut self.scratch);
        block.clear();
        out.target.h2_block(out, &mut block);
        let queued = self.out.len();
        let mut flags = if no_body { END_STREAM } else { 0 };
        let mut kind = HEADERS;
        let mut rest = &block[..];
        loop {
            let n = rest.len().min(self.max_frame);
            if n == rest.len() {
                flags |= END_HEADERS;
            }
            frame(&mut self.out, n, kind, flags, id);
            self.out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if rest.is_empty() {
                break;
            }
            (kind, flags) = (CONTINUATION, 0);
        }
        self.scratch = block;
        if no_body {
            self.request_bytes += self.out.len() - queued;
            self.unwritten.push_back((id, index, self.out.len()));
        }
        self.wake_driver();
        index
    }

    /// Queues what the windows allow of `body` from `offset`; ready when all of it is
    /// queued, or the response ended first (the server need not read the rest).
    fn poll_send(
        &mut self,
        index: usize,
        body: &[u8],
        offset: &mut usize,
        stalled: &mut bool,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), Failure>> {
        loop {
            let e = &self.entries[index];
            match &e.stage {
                Stage::Failed(ended) => return Poll::Ready(Err(ended.failure(e.head_at.is_some(), false))),
                Stage::Done => {
                    *offset = body.len();
                    return Poll::Ready(Ok(()));
                }
                Stage::Head | Stage::Body => {}
            }
            let left = body.len() - *offset;
            let room = self.send_window.min(e.send_window).min(self.max_frame as i64).min(left as i64);
            if room <= 0 {
                if !*stalled {
                    *stalled = true;
                    self.count(|f| f.send_stalls += 1);
                }
                self.entries[index].waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            *stalled = false;
            let n = room as usize;
            let last = n == left;
            let id = e.id;
            frame(&mut self.out, n, DATA, if last { END_STREAM } else { 0 }, id);
            self.out.extend_from_slice(&body[*offset..*offset + n]);
            *offset += n;
            self.send_window -= room;
            let e = &mut self.entries[index];
            e.send_window -= room;
            e.sent_end = last;
            if last {
                self.unwritten.push_back((id, index, self.out.len()));
            }
            self.wake_driver();
            if last {
                return Poll::Ready(Ok(()));
            }
        }
    }

    /// Ready when the stream's response is complete, or it failed.
    fn poll_response(&mut self, index: usize, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        let e = &mut self.entries[index];
        match &e.stage {
            Stage::Done => Poll::Ready(Ok(())),
            Stage::Failed(ended) => Poll::Ready(Err(ended.failure(e.head_at.is_some(), false))),
            Stage::Head | Stage::Body => {
                if !e.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    e.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }

    /// Reads the server's limit on streams once, after a response head: its SETTINGS come
    /// first on the connection, so they have arrived by then.
    fn read_cap(&mut self) {
        if std::mem::replace(&mut self.cap_read, true) {
            return;
        }
        let cap = u64::from(self.max_streams);
        if cap < self.streams {
            self.count(|f| f.cap = cap);
        }
    }

    /// The wire bytes no finished request has counted yet: a stream's own frames cannot be
    /// told apart on a shared connection, so each request takes what the connection moved
    /// since the last one finished. The total is exact.
    fn take_bytes(&mut self) -> (u64, u64) {
        let now = (self.bytes_in, self.bytes_out);
        let before = std::mem::replace(&mut self.counted, now);
        (now.0 - before.0, now.1 - before.1)
    }

    /// The slab index of stream `id`, while it is in flight.
    fn find(&self, id: u32) -> Option<usize> {
        self.active.iter().find(|(i, _)| *i == id).map(|&(_, index)| index)
    }

    /// Takes stream `id` out of flight (the server no longer counts it): whether it was.
    /// The slots waiting for a stream are woken.
    fn close_stream(&mut self, id: u32) -> bool {
        let Some(at) = self.active.iter().position(|(i, _)| *i == id) else { return false };
        self.active.swap_remove(at);
        for w in self.waiting.drain(..) {
            w.wake();
        }
        true
    }

    /// Ends stream `index` (id `id`) as `stage`, and wakes its slot.
    fn finish(&mut self, index: usize, id: u32, stage: Stage) {
        self.close_stream(id);
        let e = &mut self.entries[index];
        e.stage = stage;
        if let Some(w) = e.waker.take() {
            w.wake();
        }
    }

    /// The connection ended: every stream in flight fails with `why`, and the slots waiting
    /// for one are woken to fail too.
    fn end(&mut self, why: Ended) {
        if self.ended.is_some() {
            return;
        }
        for (_, index) in std::mem::take(&mut self.active) {
            let e = &mut self.entries[index];
            e.stage = Stage::Failed(why.clone());
            if let Some(w) = e.waker.take() {
                w.wake();
            }
        }
        for w in self.waiting.drain(..) {
            w.wake();
        }
        self.ended = Some(why);
    }

    /// Reads the frames in `buf` at `now`: how many bytes they took (a frame cut short
    /// waits for the rest). An error is the server breaking the protocol: the connection
    /// ends.
    fn on_bytes(&mut self, buf: &[u8], now: Instant) -> Result<usize, (u32, &'static str)> {
        let mut used = 0;
        while buf.len() - used >= 9 {
            let h = &buf[used..used + 9];
            let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
            if len > MAX_FRAME {
                return Err((FRAME_SIZE_ERROR, "a frame over SETTINGS_MAX_FRAME_SIZE"));
            }
            if buf.len() - used < 9 + len {
                break;
            }
            let (kind, flags) = (h[3], h[4]);
            let id = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            self.on_frame(kind, flags, id, &buf[used + 9..used + 9 + len], now)?;
            used += 9 + len;
        }
        Ok(used)
    }

    fn on_frame(
        &mut self,
        kind: u8,
        flags: u8,
        id: u32,
        payload: &[u8],
        now: Instant,
    ) -> Result<(), (u32, &'static str)> {
        if self.block_stream != 0 && kind != CONTINUATION {
            return Err((PROTOCOL_ERROR, "a frame inside a header block"));
        }
        if matches!(kind, PING | SETTINGS) && flags & ACK == 0 {
            self.unsent_acks += 1;
            if self.unsent_acks > MAX_UNSENT_ACKS {
                return Err((ENHANCE_YOUR_CALM, "a flood of PING or SETTINGS frames (10,000 answers unsent)"));
            }
        }
        if matches!(kind, DATA | HEADERS | RST_STREAM | WINDOW_UPDATE) && self.idle(id) {
            // RFC 9113 5.1: on an idle stream only HEADERS (and PRIORITY) may come, and a
            // server opens none here (push is off).
            return Err((PROTOCOL_ERROR, "a frame on a stream never opened"));
        }
        match kind {
            DATA => self.on_data(flags, id, payload, now),
            HEADERS => {
                if id == 0 {
                    return Err((PROTOCOL_ERROR, "HEADERS on stream 0"));
                }
                let mut fragment = unpad(flags, payload)?;
                if flags & PRIORITY_FLAG != 0 {
                    fragment = fragment.get(5..).ok_or((PROTOCOL_ERROR, "a HEADERS frame too short"))?;
                }
                if flags & END_HEADERS != 0 {
                    return self.on_head(id, flags, fragment, now);
                }
                self.block.clear();
                self.block.extend_from_slice(fragment);
                (self.block_stream, self.block_flags, self.block_frames) = (id, flags, 0);
                Ok(())
            }
            CONTINUATION => {
                if self.block_stream == 0 || id != self.block_stream {
                    return Err((PROTOCOL_ERROR, "a CONTINUATION frame outside a header block"));
                }
                self.block_frames += 1;
                if self.block_frames > MAX_CONTINUATIONS || self.block.len() + payload.len() > MAX_HEADER_LIST {
                    return Err((PROTOCOL_ERROR, "a header block over 1 MiB or 128 CONTINUATION frames"));
                }
                self.block.extend_from_slice(payload);
                if flags & END_HEADERS != 0 {
                    self.block_stream = 0;
                    let block = std::mem::take(&mut self.block);
                    let done = self.on_head(id, self.block_flags, &block, now);
                    self.block = block;
                    return done;
                }
                Ok(())
            }
            SETTINGS => self.on_settings(flags, id, payload),
            PING => {
                if id != 0 {
                    return Err((PROTOCOL_ERROR, "PING on a stream"));
                }
                if payload.len() != 8 {
                    return Err((FRAME_SIZE_ERROR, "a PING frame not of 8 bytes"));
                }
                if flags & ACK == 0 {
                    frame(&mut self.out, 8, PING, ACK, 0);
                    self.out.extend_from_slice(payload);
                }
                Ok(())
            }
            WINDOW_UPDATE => {
                let [a, b, c, d] = payload.try_into().map_err(|_| (FRAME_SIZE_ERROR, "a bad WINDOW_UPDATE frame"))?;
                let inc = i64::from(u32::from_be_bytes([a, b, c, d]) & 0x7fff_ffff);
                if id == 0 {
                    if inc == 0 {
                        return Err((PROTOCOL_ERROR, "a WINDOW_UPDATE of 0"));
                    }
                    self.send_window += inc;
                    if self.send_window > MAX_WINDOW {
                        return Err((FLOW_CONTROL_ERROR, "a connection window over 2^31-1"));
                    }
                    self.wake_senders();
                } else if let Some(index) = self.find(id) {
                    let e = &mut self.entries[index];
                    e.send_window += inc;
                    if inc == 0 {
                        self.stream_error(index, id, PROTOCOL_ERROR, "a WINDOW_UPDATE of 0 on a stream");
                    } else if e.send_window > MAX_WINDOW {
                        self.stream_error(index, id, FLOW_CONTROL_ERROR, "a stream's window over 2^31-1");
                    } else if let Some(w) = e.waker.take() {
                        w.wake();
                    }
                }
                Ok(())
            }
            RST_STREAM => {
                let [a, b, c, d] = payload.try_into().map_err(|_| (FRAME_SIZE_ERROR, "a bad RST_STREAM frame"))?;
                if id == 0 {
                    return Err((PROTOCOL_ERROR, "RST_STREAM on stream 0"));
                }
                if let Some(index) = self.find(id) {
                    self.finish(index, id, Stage::Failed(Ended::Reset(u32::from_be_bytes([a, b, c, d]))));
                }
                Ok(())
            }
            GOAWAY => {
                if id != 0 || payload.len() < 8 {
                    return Err((PROTOCOL_ERROR, "a bad GOAWAY frame"));
                }
                let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
                let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                self.goaway = Some(code);
                // The streams above its last id were not processed: they may go again.
                let above: Vec<(u32, usize)> = self.active.iter().copied().filter(|&(i, _)| i > last).collect();
                for (id, index) in above {
                    self.finish(index, id, Stage::Failed(Ended::GoAway(code)));
                }
                for w in self.waiting.drain(..) {
                    w.wake();
                }
                Ok(())
            }
            PUSH_PROMISE => Err((PROTOCOL_ERROR, "a PUSH_PROMISE, with push disabled")),
            // Its advice is ignored, but not its form (RFC 9113 6.3).
            PRIORITY => {
                if id == 0 {
                    return Err((PROTOCOL_ERROR, "PRIORITY on stream 0"));
                }
                if let Some(index) = self.find(id).filter(|_| payload.len() != 5) {
                    self.stream_error(index, id, FRAME_SIZE_ERROR, "a PRIORITY frame not of 5 bytes");
                }
                Ok(())
            }
            // Frame types of extensions are ignored (RFC 9113 4.1, 5.5).
            _ => Ok(()),
        }
    }

    /// Whether stream `id` is idle (RFC 9113 5.1.1): one of ours not opened yet, or one a
    /// server would open (even), which it may not with push off.
    fn idle(&self, id: u32) -> bool {
        id != 0 && (id.is_multiple_of(2) || id >= self.next_id)
    }

    /// Wakes the streams that may wait for window to send.
    fn wake_senders(&mut self) {
        for &(_, index) in &self.active {
            if !self.entries[index].sent_end {
                if let Some(w) = self.entries[index].waker.take() {
                    w.wake();
                }
            }
        }
    }

    /// Stream `id` broke the protocol: reset, failed as such.
    fn stream_error(&mut self, index: usize, id: u32, code: u32, what: &'static str) {
        rst_stream(&mut self.out, id, code);
        self.finish(index, id, Stage::Failed(Ended::Broke(code, what)));
    }

    fn on_settings(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), (u32, &'static str)> {
        if id != 0 {
            return Err((PROTOCOL_ERROR, "SETTINGS on a stream"));
        }
        if !payload.len().is_multiple_of(6) || (flags & ACK != 0 && !payload.is_empty()) {
            return Err((FRAME_SIZE_ERROR, "a bad SETTINGS frame"));
        }
        if flags & ACK != 0 {
            return Ok(());
        }
        if !self.settings_came {
            self.settings_came = true;
            // Absent, the limit is none.
            self.max_streams = u32::MAX;
        }
        for s in payload.chunks_exact(6) {
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match u16::from_be_bytes([s[0], s[1]]) {
                // RFC 9113 6.5.2: a client treats any value but 0 from a server as an error.
                0x2 if value != 0 => return Err((PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH from a server")),
                0x3 => self.max_streams = value,
                0x4 => {
                    if i64::from(value) > MAX_WINDOW {
                        return Err((FLOW_CONTROL_ERROR, "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1"));
                    }
                    let delta = i64::from(value) - self.initial_window;
                    self.initial_window = i64::from(value);
                    for &(_, index) in &self.active {
                        let window = &mut self.entries[index].send_window;
                        *window += delta;
                        if *window > MAX_WINDOW {
                            // RFC 9113 6.9.2: a connection error.
                            return Err((
                                FLOW_CONTROL_ERROR,
                                "SETTINGS_INITIAL_WINDOW_SIZE taking a window over 2^31-1",
                            ));
                        }
                    }
                    self.wake_senders();
                }
                0x5 => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err((PROTOCOL_ERROR, "a bad SETTINGS_MAX_FRAME_SIZE"));
                    }
                    self.max_frame = value as usize;
                }
                _ => {}
            }
        }
        frame(&mut self.out, 0, SETTINGS, ACK, 0);
        for w in self.waiting.drain(..) {
            w.wake();
        }
        Ok(())
    }

    /// A complete header block on stream `id`: a response head, an interim one, or trailers.
    fn on_head(&mut self, id: u32, flags: u8, block: &[u8], now: Instant) -> Result<(), (u32, &'static str)> {
        let index = self.find(id);
        let Inner { hpack, entries, trash, .. } = self;
        // Decoded whoever waits: the dynamic table must follow every block.
        let into = match index {
            Some(index) if matches!(entries[index].stage, Stage::Head) => &mut entries[index].fields,
            _ => trash,
        };
        hpack.decode(block, into, MAX_HEADER_LIST).map_err(|e| match e {
            hpack::Error::Compression(what) => (COMPRESSION_ERROR, what),
            hpack::Error::TooLarge => (PROTOCOL_ERROR, "a response head over 1 MiB"),
        })?;
        let Some(index) = index else { return Ok(()) };
        let end = flags & END_STREAM != 0;
        match self.entries[index].stage {
            Stage::Head => {
                let status = self.entries[index].fields.get(b":status").and_then(parse_status);
                match status {
                    None => self.stream_error(index, id, PROTOCOL_ERROR, "a response head without a valid :status"),
                    // Interim (1xx but 101): the final head follows.
                    Some(s) if (100..200).contains(&s) && s != 101 => {
                        if end {
                            self.stream_error(index, id, PROTOCOL_ERROR, "an interim response ending the stream");
                        }
                    }
                    Some(s) => {
                        let e = &mut self.entries[index];
                        e.status = s;
                        e.head_at = Some(now);
                        e.stage = Stage::Body;
                        if end {
                            e.end_at = Some(now);
                            self.finish(index, id, Stage::Done);
                        }
                    }
                }
            }
            // Trailers: they end the stream.
            Stage::Body if end => {
                self.entries[index].end_at = Some(now);
                self.finish(index, id, Stage::Done);
            }
            Stage::Body => self.stream_error(index, id, PROTOCOL_ERROR, "trailers not ending the stream"),
            Stage::Done | Stage::Failed(_) => {}
        }
        Ok(())
    }

    fn on_data(&mut self, flags: u8, id: u32, payload: &[u8], now: Instant) -> Result<(), (u32, &'static str)> {
        if id == 0 {
            return Err((PROTOCOL_ERROR, "DATA on stream 0"));
        }
        // The whole frame counts against the windows, padding included.
        let len = payload.len() as u32;
        self.conn_unacked += len;
        if self.conn_unacked > self.conn_window {
            return Err((FLOW_CONTROL_ERROR, "DATA beyond the connection's window"));
        }
        if self.conn_unacked >= self.conn_window / 2 {
            window_update(&mut self.out, 0, self.conn_unacked);
            self.conn_unacked = 0;
        }
        let data = unpad(flags, payload)?;
        let Some(index) = self.find(id) else { return Ok(()) };
        let end = flags & END_STREAM != 0;
        let e = &mut self.entries[index];
        if !matches!(e.stage, Stage::Body) {
            self.stream_error(index, id, PROTOCOL_ERROR, "DATA before the response head");
            return Ok(());
        }
        e.recv_unacked += len;
        if e.recv_unacked > STREAM_WINDOW {
            self.stream_error(index, id, FLOW_CONTROL_ERROR, "DATA beyond the stream's window");
            return Ok(());
        }
        if e.keep {
            let room = barrage_plan::flow::MAX_JUDGED_BODY.saturating_sub(e.body.len());
            e.body.extend_from_slice(&data[..data.len().min(room)]);
        }
        if end {
            e.end_at = Some(now);
            self.finish(index, id, Stage::Done);
            return Ok(());
        }
        if e.recv_unacked == STREAM_WINDOW {
            // The server sent all the window allowed: it waits for a WINDOW_UPDATE.
            self.count(|f| f.recv_stalls += 1);
        }
        let e = &mut self.entries[index];
        if e.recv_unacked >= STREAM_WINDOW / 2 {
            let n = std::mem::take(&mut e.recv_unacked);
            window_update(&mut self.out, id, n);
        }
        Ok(())
    }
}

/// A frame's payload without its padding.
fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], (u32, &'static str)> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let (&pad, rest) = payload.split_first().ok_or((PROTOCOL_ERROR, "a padded frame without its pad length"))?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|n| &rest[..n])
        .ok_or((PROTOCOL_ERROR, "padding longer than its frame"))
}

fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

/// Makes room in the read buffer, which holds at most the start of a frame: a frame of the
/// largest size fits behind it.
fn read_room(buf: &mut Vec<u8>) {
    if buf.capacity() - buf.len() < MAX_FRAME + 9 {
        buf.reserve_exact(READ_BUF - buf.len());
    }
}

/// Reads `bytes`, what a server sent after its preface, as a connection's driver does:
/// four requests in flight (streams 1, 3, 5 and 7, two of them keeping their bodies, as a
/// flow's steps do), each read taking the next of `reads` bytes or what the buffer has
/// room for, the frames handled as they complete. Stops at the first connection error.
#[cfg(any(test, feature = "fuzz"))]
pub(crate) fn fuzz_frames(bytes: &[u8], reads: &[usize]) -> crate::fuzz::Http2 {
    use crate::fuzz::{Http2, Http2Stream};
    let target = barrage_plan::Target::new(Method::GET, "http://127.0.0.1:1/x").expect("a valid target");
    let load = barrage_plan::Load::Closed { concurrency: 1, think_time: std::time::Duration::ZERO };
    let mut plan = barrage_plan::Plan::new(vec![target], load);
    plan.protocol = barrage_plan::Protocol::http2(1);
    let (prepared, _) = crate::exchange::prepare(&plan, None);
    let mut inner = Inner::new(4, false);
    let streams: Vec<usize> = (0..4)
        .map(|n| {
            let out = Outgoing { target: &prepared[0], id: 0, number: n, filled: None };
            inner.open_stream(&out, true, n % 2 == 0)
        })
        .collect();
    let queued = inner.out.len();
    let (mut buf, mut input, mut reads) = (Vec::new(), bytes, reads.iter());
    let mut out = Http2 { error: None, streams: Vec::new(), peak: 0, out: 0 };
    while !input.is_empty() {
        read_room(&mut buf);
        let n = reads.next().copied().unwrap_or(usize::MAX).clamp(1, input.len()).min(buf.capacity() - buf.len());
        buf.extend_from_slice(&input[..n]);
        input = &input[n..];
        let handled = inner.on_bytes(&buf, Instant::now());
        let held: usize = inner.entries.iter().map(|e| e.fields.capacity() + e.body.capacity()).sum();
        let peak = buf.capacity() + inner.block.capacity() + inner.trash.capacity() + inner.hpack.held() + held;
        out.peak = out.peak.max(peak);
        out.out = inner.out.len() - queued;
        match handled {
            Ok(used) => drop(buf.drain(..used)),
            Err((code, what)) => {
                out.error = Some(format!("{}: {what}", Reason(code)));
                break;
            }
        }
    }
    for index in streams {
        let e = &inner.entries[index];
        let ended = match &e.stage {
            Stage::Head | Stage::Body => None,
            Stage::Done => Some(Ok(())),
            Stage::Failed(why) => Some(Err(why.failure(e.head_at.is_some(), false).message())),
        };
        out.streams.push(Http2Stream { status: e.status, body: e.body.len(), ended });
    }
    out
}

/// Appends a frame header.
fn frame(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, id: u32) {
    let [_, a, b, c] = (len as u32).to_be_bytes();
    out.extend_from_slice(&[a, b, c, kind, flags]);
    out.extend_from_slice(&id.to_be_bytes());
}

fn window_update(out: &mut Vec<u8>, id: u32, inc: u32) {
    frame(out, 4, WINDOW_UPDATE, 0, id);
    out.extend_from_slice(&inc.to_be_bytes());
}

fn rst_stream(out: &mut Vec<u8>, id: u32, code: u32) {
    frame(out, 4, RST_STREAM, 0, id);
    out.extend_from_slice(&code.to_be_bytes());
}

/// The task that moves a connection's bytes: reads and handles frames, writes what the
/// streams queued. It ends when the connection does, or when no handle and no stream is
/// left (or a GOAWAY came and the last stream ended), closing the connection.
struct Driver {
    inner: Rc<RefCell<Inner>>,
    io: Stream,
    buf: Vec<u8>,
    /// Of the output buffer, written so far.
    written: usize,
    /// Ends a round's wait (see [`Inner::round_waits`]), armed when it starts.
    round_wait: Pin<Box<tokio::time::Sleep>>,
    round: Round,
    /// A flush that returned `Pending` (TLS holds records back): tried again on every write.
    flushing: bool,
}

/// Where the driver's queued requests are in their round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Written, or not waiting.
    Idle,
    /// Waiting for more of the round, until the timer.
    Waiting,
    /// The timer fired: written as soon as the socket takes them, however many.
    Due,
}

impl std::future::Future for Driver {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let mut reads = 0;
        loop {
            this.inner.borrow_mut().driver_woken = false;
            let read = this.poll_read(cx);
            let mut i = this.inner.borrow_mut();
            let read_pending = match read {
                Poll::Ready(Ok(true)) => false,
                Poll::Ready(Ok(false)) => {
                    i.end(Ended::Closed);
                    return Poll::Ready(());
                }
                Poll::Ready(Err(ended)) => {
                    i.end(ended);
                    // A GOAWAY of ours may be queued: sent as far as the socket takes it.
                    drop(i);
                    let _ = this.poll_write(cx);
                    return Poll::Ready(());
                }
                Poll::Pending => true,
            };
            drop(i);
            if this.round_waits(cx) {
                // Woken by the socket, a slot queueing, or the round's timer.
            } else if let Poll::Ready(Err(e)) = this.poll_write(cx) {
                let f = io_failure(e);
                this.inner.borrow_mut().end(Ended::Io(f.kind, f.message().into()));
                return Poll::Ready(());
            }
            let mut i = this.inner.borrow_mut();
            if i.active.is_empty() && (i.handles == 0 || i.goaway.is_some()) && i.out.is_empty() {
                return Poll::Ready(());
            }
            reads += 1;
            if read_pending || reads >= READS_PER_TURN {
                if read_pending && i.driver_woken {
                    // A stream queued frames meanwhile: write them now.
                    drop(i);
                    continue;
                }
                if !read_pending {
                    cx.waker().wake_by_ref();
                }
                if !i.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    i.driver = Some(cx.waker().clone());
                }
                return Poll::Pending;
            }
        }
    }
}

impl Driver {
    /// Reads once and handles the frames read: `true` when something was read, `false` at
    /// the end of the stream, an error when reading failed or the server broke the
    /// protocol (our GOAWAY is then queued).
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<Result<bool, Ended>> {
        read_room(&mut self.buf);
        let mut rb = ReadBuf::uninit(self.buf.spare_capacity_mut());
        if let Err(e) = std::task::ready!(Pin::new(&mut self.io).poll_read(cx, &mut rb)) {
            let f = io_failure(e);
            return Poll::Ready(Err(Ended::Io(f.kind, f.message().into())));
        }
        let n = rb.filled().len();
        if n == 0 {
            return Poll::Ready(Ok(false));
        }
        // SAFETY: `poll_read` initialised the first `n` bytes of the spare capacity.
        unsafe { self.buf.set_len(self.buf.len() + n) };
        let now = Instant::now();
        let mut i = self.inner.borrow_mut();
        i.bytes_in += n as u64;
        match i.on_bytes(&self.buf, now) {
            Ok(used) => {
                self.buf.drain(..used);
                Poll::Ready(Ok(true))
            }
            Err((code, what)) => {
                let last = i.next_id.saturating_sub(2);
                frame(&mut i.out, 8, GOAWAY, 0, 0);
                i.out.extend_from_slice(&last.to_be_bytes());
                i.out.extend_from_slice(&code.to_be_bytes());
                Poll::Ready(Err(Ended::Broke(code, what)))
            }
        }
    }

    /// Whether the queued requests wait for the rest of their round: at most
    /// [`ROUND_WAIT`] from when the wait began, and not again until they are written.
    fn round_waits(&mut self, cx: &mut Context<'_>) -> bool {
        if self.written > 0 || self.round == Round::Due || !self.inner.borrow().round_waits() {
            return false;
        }
        if self.round == Round::Idle {
            self.round = Round::Waiting;
            self.round_wait.as_mut().reset(tokio::time::Instant::now() + ROUND_WAIT);
        }
        if std::future::Future::poll(self.round_wait.as_mut(), cx).is_ready() {
            self.round = Round::Due;
            return false;
        }
        true
    }

    /// Writes what is queued, and flushes (TLS keeps what it could not send yet). Each
    /// request is timed written once the write that carried its last byte returned.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut i = self.inner.borrow_mut();
        let mut wrote = false;
        while self.written < i.out.len() {
            match Pin::new(&mut self.io).poll_write(cx, &i.out[self.written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.written += n;
                    i.bytes_out += n as u64;
                    wrote = true;
                    i.stamp_written(self.written);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        i.out.clear();
        i.unsent_acks = 0;
        i.request_bytes = 0;
        self.written = 0;
        self.round = Round::Idle;
        drop(i);
        if wrote || self.flushing {
            self.flushing = true;
            std::task::ready!(Pin::new(&mut self.io).poll_flush(cx))?;
            self.flushing = false;
        }
        Poll::Ready(Ok(()))
    }
}

impl Ended {
    /// The failure of a request this ended. `answered`: its head had come. `unsent`: it
    /// came before the stream was opened, so nothing of the request went out. A stream the
    /// server refused (REFUSED_STREAM) or left above its GOAWAY's last stream id was never
    /// processed: it may go again on a new connection.
    fn failure(&self, answered: bool, unsent: bool) -> Failure {
        let (kind, message, unprocessed, closed) = match self {
            Ended::Reset(code) => (
                reason_kind(*code),
                format!("the server reset the stream (RST_STREAM {})", Reason(*code)),
                *code == REFUSED_STREAM,
                false,
            ),
            Ended::GoAway(code) => (
                reason_kind(*code),
                format!("the server sent GOAWAY ({}) and did not process the stream", Reason(*code)),
                true,
                false,
            ),
            Ended::Broke(code, what) => {
                (ErrorKind::Protocol, format!("the server broke HTTP/2 ({}): {what}", Reason(*code)), false, false)
            }
            Ended::Io(kind, message) => (*kind, message.to_string(), false, true),
            Ended::Closed => (ErrorKind::Reset, "the server closed the connection".to_string(), false, true),
        };
        let mut f = Failure::new(kind, message);
        // Only the connection closing under the request makes it stale (sent again once on a
        // new connection when nothing was written, or it is idempotent): a stream the server
        // reset was answered, by the reset.
        f.unsent = unsent && closed;
        f.unanswered = closed && !answered;
        f.unprocessed = unprocessed;
        f
    }
}

/// Reason codes that say an endpoint broke the protocol, rather than gave up on a stream.
fn reason_kind(code: u32) -> ErrorKind {
    match code {
        // PROTOCOL_ERROR, FLOW_CONTROL_ERROR, SETTINGS_TIMEOUT, STREAM_CLOSED,
        // FRAME_SIZE_ERROR, COMPRESSION_ERROR, INADEQUATE_SECURITY, HTTP_1_1_REQUIRED.
        0x1 | 0x3 | 0x4 | 0x5 | 0x6 | 0x9 | 0xc | 0xd => ErrorKind::Protocol,
        _ => ErrorKind::Reset,
    }
}

/// A reason code, named as RFC 9113 names it.
struct Reason(u32);

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        match NAMES.get(self.0 as usize) {
            Some(name) => f.write_str(name),
            None => write!(f, "code {:#x}", self.0),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Requests

/// A target's request header block, encoded once: the pseudo-headers before `:path`, the
/// `:path` field when the path is fixed, and the headers after it (the parts before and
/// after the path shared by the targets that have them alike). Fields are literals
/// without indexing (or static-table indexes): no dynamic table, so a block never depends
/// on the ones before it, and no Huffman (the server would decode faster, but a request's
/// bytes are few).
#[derive(Clone, Debug)]
pub(crate) struct Template {
    before: Arc<[u8]>,
    path: Option<Box<[u8]>>,
    after: Arc<[u8]>,
}

/// Headers HTTP/2 forbids (RFC 9113 8.2.2), and Host (the authority is `:authority`).
const NOT_SENT: [&str; 6] = ["connection", "host", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];

impl Template {
    /// The block of `before` ([`Template::pseudo_headers`]), `path` (the fixed path, or
    /// `None` when each request fills its own) and `after` ([`Template::fields`]).
    pub(crate) fn new(before: Arc<[u8]>, path: Option<&str>, after: Arc<[u8]>) -> Template {
        let path = path.map(|p| {
            let mut field = Vec::new();
            put_path(&mut field, &[p.as_bytes()]);
            field.into_boxed_slice()
        });
        Template { before, path, after }
    }

    /// The pseudo-headers of `method` to `uri` (scheme and authority) before `:path`.
    pub(crate) fn pseudo_headers(method: &Method, uri: &Uri) -> Vec<u8> {
        let mut before = Vec::with_capacity(64);
        match hpack::static_index(":method", method.as_str()) {
            0 => hpack::put_literal(&mut before, 2, b"", method.as_str().as_bytes()),
            i => hpack::put_integer(&mut before, 0x80, 7, i),
        }
        let scheme = uri.scheme_str().unwrap_or("http");
        match hpack::static_index(":scheme", scheme) {
            0 => hpack::put_literal(&mut before, 6, b"", scheme.as_bytes()),
            i => hpack::put_integer(&mut before, 0x80, 7, i),
        }
        let authority = uri.authority().map_or("", |a| a.as_str());
        hpack::put_literal(&mut before, 1, b"", authority.as_bytes());
        before
    }

    /// `headers` as the block sends them, after `:path`.
    pub(crate) fn fields(headers: &HeaderMap) -> Vec<u8> {
        let mut after = Vec::with_capacity(64);
        put_headers(&mut after, headers.iter());
        after
    }

    /// The headers after the path, encoded: shared by the targets that have them alike.
    #[cfg(test)]
    pub(crate) fn after_path(&self) -> Arc<[u8]> {
        self.after.clone()
    }

    /// Appends the block to `out`, with `path` (its pieces) when the target's is not fixed,
    /// and `extra` headers.
    pub(crate) fn write<'a>(
        &self,
        path: Option<&[&[u8]]>,
        extra: impl Iterator<Item = (&'a http::HeaderName, &'a http::HeaderValue)>,
        out: &mut Vec<u8>,
    ) {
        out.extend_from_slice(&self.before);
        match (path, &self.path) {
            (Some(pieces), _) => put_path(out, pieces),
            (None, Some(field)) => out.extend_from_slice(field),
            (None, None) => put_path(out, &[b"/"]),
        }
        out.extend_from_slice(&self.after);
        put_headers(out, extra);
    }
}

/// Appends `:path` made of `pieces`.
fn put_path(out: &mut Vec<u8>, pieces: &[&[u8]]) {
    match pieces {
        [b"/"] => out.push(0x84),
        [b"/index.html"] => out.push(0x85),
        _ => {
            hpack::put_integer(out, 0, 4, 4);
            hpack::put_integer(out, 0, 7, pieces.iter().map(|p| p.len()).sum());
            for p in pieces {
                out.extend_from_slice(p);
            }
        }
    }
}

fn put_headers<'a>(out: &mut Vec<u8>, headers: impl Iterator<Item = (&'a http::HeaderName, &'a http::HeaderValue)>) {
    for (name, value) in headers {
        let name = name.as_str();
        if NOT_SENT.contains(&name) || (name == "te" && value.as_bytes() != b"trailers") {
            continue;
        }
        hpack::put_literal(out, hpack::static_name(name), name.as_bytes(), value.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::{prepare, Prepared};
    use barrage_plan::{Load, Plan, Target};
    use std::io::{Read, Write};
    use std::time::Duration;

    /// Each reason code's kind, and which may be sent again, as the server's RST_STREAM
    /// gives them.
    #[test]
    fn reason_codes_are_classified() {
        // (code, kind, unprocessed)
        let table = [
            (REFUSED_STREAM, "REFUSED_STREAM", ErrorKind::Reset, true),
            (CANCEL, "CANCEL", ErrorKind::Reset, false),
            (0x2, "INTERNAL_ERROR", ErrorKind::Reset, false),
            (0xb, "ENHANCE_YOUR_CALM", ErrorKind::Reset, false),
            (PROTOCOL_ERROR, "PROTOCOL_ERROR", ErrorKind::Protocol, false),
            (FLOW_CONTROL_ERROR, "FLOW_CONTROL_ERROR", ErrorKind::Protocol, false),
            (COMPRESSION_ERROR, "COMPRESSION_ERROR", ErrorKind::Protocol, false),
            (0xd, "HTTP_1_1_REQUIRED", ErrorKind::Protocol, false),
        ];
        for (code, name, kind, unprocessed) in table {
            let f = Ended::Reset(code).failure(false, false);
            assert_eq!((f.kind, f.unprocessed, f.unanswered, f.unsent), (kind, unprocessed, false, false), "{name}");
            assert!(f.message().contains(&format!("RST_STREAM {name}")), "{name}: {}", f.message());
        }
        let g = Ended::GoAway(0).failure(false, true);
        assert!(g.unprocessed && g.kind == ErrorKind::Reset, "{g:?}");
        assert_eq!(g.message(), "the server sent GOAWAY (NO_ERROR) and did not process the stream");
        // The connection closing is stale before the head, answered after.
        let c = Ended::Closed.failure(false, true);
        assert!(c.unsent && c.unanswered && c.stale(false));
        assert!(!Ended::Closed.failure(true, false).unanswered);
    }

    /// The client's connection, its preface read (10 s at most for each read after).
    fn accept_client(listener: &std::net::TcpListener) -> std::net::TcpStream {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut preface = [0u8; 24];
        s.read_exact(&mut preface).unwrap();
        assert_eq!(&preface[..], PREFACE);
        s
    }

    /// A raw HTTP/2 server on a real socket: reads the client's preface, sends `frames`
    /// (after its SETTINGS), keeps reading until the client closes.
    fn raw_server(frames: Vec<u8>, linger: bool) -> std::net::SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut s = accept_client(&listener);
            let mut out = Vec::new();
            frame(&mut out, 0, SETTINGS, 0, 0);
            out.extend_from_slice(&frames);
            // The client's frames up to its request's HEADERS, then the answer.
            let mut got = vec![0u8; 1 << 16];
            loop {
                let mut h = [0u8; 9];
                s.read_exact(&mut h).unwrap();
                let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                s.read_exact(&mut got[..len]).unwrap();
                if h[3] == HEADERS {
                    break;
                }
            }
            let _ = s.write_all(&out);
            while linger && matches!(s.read(&mut got), Ok(n) if n > 0) {}
        });
        addr
    }

    /// A server that sends PINGs without end and reads nothing: the acknowledgements pile
    /// up until the connection is ended, a classified failure rather than a buffer
    /// growing until memory runs out.
    #[test]
    fn a_ping_flood_that_reads_no_answer_ends_the_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut pings = Vec::new();
            frame(&mut pings, 0, SETTINGS, 0, 0);
            for _ in 0..4096 {
                frame(&mut pings, 8, PING, 0, 0);
                pings.extend_from_slice(b"pingpong");
            }
            // Until the client closes the connection.
            while s.write_all(&pings).is_ok() {}
        });
        let f = get(addr).expect_err("the flood ends the connection");
        assert_eq!(f.kind, ErrorKind::Protocol, "{}", f.message());
        assert!(f.message().contains("a flood of PING or SETTINGS frames"), "{}", f.message());
    }

    /// Target `t` of an HTTP/2 run under `load`, prepared.
    fn prepared(t: Target, load: Load) -> Arc<[Prepared]> {
        let mut plan = Plan::new(vec![t], load);
        plan.protocol = barrage_plan::Protocol::http2(1);
        prepare(&plan, None).0
    }

    /// One GET over our client to `addr`: its answer or failure, within 10 s.
    fn get(addr: std::net::SocketAddr) -> Result<(u16, Vec<u8>), Failure> {
        let url = format!("http://{addr}/x");
        let t = Target::new(Method::GET, &url).unwrap();
        let load = Load::Closed { concurrency: 1, think_time: Duration::ZERO };
        let prepared = prepared(t, load);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let mut conn = Conn::handshake(Stream::Left(tcp), 4, false).await?;
            let out = Outgoing { target: &prepared[0], id: 0, number: 0, filled: None };
            let rules = barrage_plan::CacheRules::default();
            let (mut last, mut body) = (None, Vec::new());
            let mut reading = Reading {
                rules: &rules,
                backend_headers: &[],
                last_backend: &mut last,
                headers: None,
                body: Some(&mut body),
                stamp: None,
            };
            let exchange = conn.exchange(&out, &mut reading, Instant::now());
            let a = tokio::time::timeout(Duration::from_secs(10), exchange).await.expect("no hang")?;
            Ok((a.status, body))
        })
    }

    /// Reads frames until `n` requests' HEADERS came: their stream ids, and how many reads
    /// of the socket brought them.
    fn read_requests(s: &mut std::net::TcpStream, pending: &mut Vec<u8>, n: usize) -> (Vec<u32>, usize) {
        let (mut ids, mut reads) = (Vec::new(), 0);
        let mut buf = vec![0u8; 1 << 16];
        while ids.len() < n {
            let got = s.read(&mut buf).unwrap();
            assert!(got > 0, "the client closed the connection");
            reads += 1;
            pending.extend_from_slice(&buf[..got]);
            while pending.len() >= 9 {
                let len = (usize::from(pending[0]) << 16) | (usize::from(pending[1]) << 8) | usize::from(pending[2]);
                if pending.len() < 9 + len {
                    break;
                }
                if pending[3] == HEADERS {
                    ids.push(u32::from_be_bytes([pending[5], pending[6], pending[7], pending[8]]));
                }
                pending.drain(..9 + len);
            }
        }
        (ids, reads)
    }

    /// In closed loop a connection sends in rounds: a request whose stream freed up waits
    /// while fewer wait than are out, ROUND_WAIT at most (then it goes alone, though the
    /// server answered nothing more), and its wait is its send phase; once half the
    /// streams wait, they go at once, in one write.
    #[test]
    fn a_closed_loop_sends_in_rounds_and_a_round_waits_at_most_round_wait() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let mut s = accept_client(&listener);
            let mut settings = Vec::new();
            frame(&mut settings, 0, SETTINGS, 0, 0);
            s.write_all(&settings).unwrap();
            let answer = |ids: &[u32]| {
                let mut out = Vec::new();
                for &id in ids {
                    frame(&mut out, 1, HEADERS, END_HEADERS | END_STREAM, id);
                    out.push(0x88);
                }
                out
            };
            let mut pending = Vec::new();
            let (first, _) = read_requests(&mut s, &mut pending, 4);
            assert_eq!(first, [1, 3, 5, 7]);
            // One of four answered: its worker's next request waits for its round.
            let answered = Instant::now();
            s.write_all(&answer(&[1])).unwrap();
            let (alone, _) = read_requests(&mut s, &mut pending, 1);
            let held = answered.elapsed();
            // Two more answered: two wait, two are out, so the round goes, in one write.
            s.write_all(&answer(&[3, 5])).unwrap();
            let (round, reads) = read_requests(&mut s, &mut pending, 2);
            s.write_all(&answer(&[7, 9, 11, 13])).unwrap();
            while matches!(s.read(&mut [0u8; 1024]), Ok(n) if n > 0) {}
            (alone, held, round, reads)
        });
        let url = format!("http://{addr}/x");
        let t = Target::new(Method::GET, &url).unwrap();
        let load = Load::Closed { concurrency: 4, think_time: Duration::ZERO };
        let prepared = prepared(t, load);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let local = tokio::task::LocalSet::new();
        // Workers 0, 1 and 2 send two requests each, 3 one: the send phase of each.
        let sends = local.block_on(&rt, async {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let conn = Conn::handshake(Stream::Left(tcp), 4, true).await.unwrap();
            let workers: Vec<_> = (0..4)
                .map(|w| {
                    let (mut conn, prepared) = (conn.clone(), prepared.clone());
                    tokio::task::spawn_local(async move {
                        let mut sends = Vec::new();
                        for _ in 0..if w == 3 { 1 } else { 2 } {
                            let out = Outgoing { target: &prepared[0], id: 0, number: 0, filled: None };
                            let rules = barrage_plan::CacheRules::default();
                            let mut last = None;
                            let mut reading = Reading {
                                rules: &rules,
                                backend_headers: &[],
                                last_backend: &mut last,
                                headers: None,
                                body: None,
                                stamp: None,
                            };
                            let a = conn.exchange(&out, &mut reading, Instant::now()).await.unwrap();
                            sends.push(a.written.expect("HTTP/2 times a request's write") - a.sent);
                        }
                        sends
                    })
                })
                .collect();
            drop(conn);
            let mut all = Vec::new();
            for w in workers {
                all.push(w.await.unwrap());
            }
            all
        });
        let (alone, held, round, reads) = server.join().unwrap();
        assert_eq!(alone, [9], "worker 0's second request went alone once ROUND_WAIT passed");
        assert!(held >= ROUND_WAIT, "it waited {held:?}, under ROUND_WAIT");
        assert!(sends[0][1] >= ROUND_WAIT, "its send phase holds its wait: {:?}", sends[0]);
        assert_eq!((round, reads), (vec![11, 13], 1), "a full round goes in one write");
    }

    fn headers_frame(out: &mut Vec<u8>, flags: u8, block: &[u8]) {
        frame(out, block.len(), HEADERS, flags, 1);
        out.extend_from_slice(block);
    }

    /// A response as nginx frames it (Huffman, incremental indexing, padding, a PING, an
    /// unknown frame type, a 100 Continue first) is read whole.
    #[test]
    fn a_response_is_read_through_its_frames() {
        let mut f = Vec::new();
        headers_frame(&mut f, END_HEADERS, &[0x08, 0x03, b'1', b'0', b'0']);
        frame(&mut f, 8, PING, 0, 0);
        f.extend_from_slice(b"pingpong");
        frame(&mut f, 3, 0xfa, 0, 1);
        f.extend_from_slice(b"???");
        // :status 200 (indexed), then server: nginx with incremental indexing, Huffman.
        let block = [0x88, 0x76, 0x84, 0xaa, 0x63, 0x55, 0xe7];
        frame(&mut f, block.len() + 3, HEADERS, END_HEADERS | PADDED, 1);
        f.push(2);
        f.extend_from_slice(&block);
        f.extend_from_slice(&[0, 0]);
        frame(&mut f, 6, DATA, PADDED, 1);
        f.extend_from_slice(&[1, b'h', b'i', b'!', b' ', 0]);
        frame(&mut f, 2, DATA, END_STREAM, 1);
        f.extend_from_slice(b"ok");
        let (status, body) = get(raw_server(f, true)).unwrap();
        assert_eq!((status, &body[..]), (200, &b"hi! ok"[..]));
    }

    /// h2spec's checks of a peer (RFC 9113), as they apply to a client reading a server:
    /// each frame, after the server's SETTINGS, with streams 1, 3, 5 and 7 in flight, ends
    /// the connection with its error code, or fails its stream with one, as the RFC says.
    #[test]
    fn frames_h2spec_checks_are_errors_of_the_rfc_s_codes() {
        let f = |kind, flags, id: u32, payload: &[u8]| {
            let mut out = Vec::new();
            frame(&mut out, payload.len(), kind, flags, id);
            out.extend_from_slice(payload);
            out
        };
        let setting = |id: u16, value: u32| f(SETTINGS, 0, 0, &[&id.to_be_bytes()[..], &value.to_be_bytes()].concat());
        let head = |id| f(HEADERS, END_HEADERS, id, &[0x88]);
        let window = |id, inc: u32| f(WINDOW_UPDATE, 0, id, &inc.to_be_bytes());
        // (h2spec's section, the frames, the connection error, or stream 1's failure)
        let table: Vec<(&str, Vec<u8>, &str)> = vec![
            ("4.2 DATA over the frame size", f(DATA, 0, 1, &[0; MAX_FRAME + 1]), "FRAME_SIZE_ERROR"),
            ("4.3 a bad header block", f(HEADERS, END_HEADERS, 1, &[0xff, 0x80]), "COMPRESSION_ERROR"),
            ("5.1 DATA on an idle stream", f(DATA, 0, 9, b"x"), "PROTOCOL_ERROR"),
            ("5.1 HEADERS on an idle stream", head(9), "PROTOCOL_ERROR"),
            ("5.1 HEADERS on a server's stream, push off", head(2), "PROTOCOL_ERROR"),
            ("5.1 RST_STREAM on an idle stream", f(RST_STREAM, 0, 9, &[0, 0, 0, 8]), "PROTOCOL_ERROR"),
            ("5.1 WINDOW_UPDATE on an idle stream", window(9, 1), "PROTOCOL_ERROR"),
            ("6.1 DATA on stream 0", f(DATA, 0, 0, b"x"), "PROTOCOL_ERROR"),
            ("6.1 DATA padded past its length", f(DATA, PADDED, 1, &[5, b'x']), "PROTOCOL_ERROR"),
            ("6.2 HEADERS on stream 0", head(0), "PROTOCOL_ERROR"),
            ("6.2 HEADERS padded past its length", f(HEADERS, END_HEADERS | PADDED, 1, &[3, 0x88]), "PROTOCOL_ERROR"),
            ("6.3 PRIORITY on stream 0", f(PRIORITY, 0, 0, &[0, 0, 0, 3, 16]), "PROTOCOL_ERROR"),
            ("6.3 PRIORITY of 4 bytes", f(PRIORITY, 0, 1, &[0, 0, 0, 3]), "stream FRAME_SIZE_ERROR"),
            ("6.4 RST_STREAM on stream 0", f(RST_STREAM, 0, 0, &[0, 0, 0, 8]), "PROTOCOL_ERROR"),
            ("6.4 RST_STREAM of 3 bytes", f(RST_STREAM, 0, 1, &[0, 0, 8]), "FRAME_SIZE_ERROR"),
            ("6.5 SETTINGS on stream 1", f(SETTINGS, 0, 1, &[]), "PROTOCOL_ERROR"),
            ("6.5 SETTINGS of 5 bytes", f(SETTINGS, 0, 0, &[0, 3, 0, 0, 1]), "FRAME_SIZE_ERROR"),
            ("6.5 SETTINGS ACK with a payload", f(SETTINGS, ACK, 0, &[0, 3, 0, 0, 0, 1]), "FRAME_SIZE_ERROR"),
            ("6.5.2 ENABLE_PUSH 2", setting(0x2, 2), "PROTOCOL_ERROR"),
            ("6.5.2 ENABLE_PUSH 1 from a server", setting(0x2, 1), "PROTOCOL_ERROR"),
            ("6.5.2 INITIAL_WINDOW_SIZE 2^31", setting(0x4, 1 << 31), "FLOW_CONTROL_ERROR"),
            ("6.5.2 MAX_FRAME_SIZE under 16384", setting(0x5, 16_383), "PROTOCOL_ERROR"),
            ("6.5.2 MAX_FRAME_SIZE over 2^24-1", setting(0x5, 1 << 24), "PROTOCOL_ERROR"),
            ("6.7 PING of 7 bytes", f(PING, 0, 0, &[0; 7]), "FRAME_SIZE_ERROR"),
            ("6.7 PING on stream 1", f(PING, 0, 1, &[0; 8]), "PROTOCOL_ERROR"),
            ("6.8 GOAWAY on stream 1", f(GOAWAY, 0, 1, &[0; 8]), "PROTOCOL_ERROR"),
            ("6.9 WINDOW_UPDATE of 0", window(0, 0), "PROTOCOL_ERROR"),
            ("6.9 WINDOW_UPDATE of 0 on a stream", window(1, 0), "stream PROTOCOL_ERROR"),
            ("6.9 WINDOW_UPDATE of 3 bytes", f(WINDOW_UPDATE, 0, 0, &[0, 0, 1]), "FRAME_SIZE_ERROR"),
            ("6.9.1 the connection's window over 2^31-1", window(0, MAX_WINDOW as u32), "FLOW_CONTROL_ERROR"),
            ("6.9.1 a stream's window over 2^31-1", window(1, MAX_WINDOW as u32), "stream FLOW_CONTROL_ERROR"),
            (
                "6.9.2 INITIAL_WINDOW_SIZE pushing a window over 2^31-1",
                [window(1, MAX_WINDOW as u32 - 65_535), setting(0x4, 65_536)].concat(),
                "FLOW_CONTROL_ERROR",
            ),
            (
                "6.10 a frame between HEADERS and CONTINUATION",
                [f(HEADERS, 0, 1, &[0x88]), f(DATA, 0, 1, b"x")].concat(),
                "PROTOCOL_ERROR",
            ),
            (
                "6.10 CONTINUATION on another stream",
                [f(HEADERS, 0, 1, &[0x88]), f(CONTINUATION, END_HEADERS, 3, &[])].concat(),
                "PROTOCOL_ERROR",
            ),
            (
                "6.10 CONTINUATION after END_HEADERS",
                [head(1), f(CONTINUATION, END_HEADERS, 1, &[])].concat(),
                "PROTOCOL_ERROR",
            ),
            ("8.1 trailers not ending the stream", [head(1), head(1)].concat(), "stream PROTOCOL_ERROR"),
            ("8.1 a head without :status", f(HEADERS, END_HEADERS, 1, &[0x82]), "stream PROTOCOL_ERROR"),
            ("8.4 PUSH_PROMISE, push off", f(PUSH_PROMISE, END_HEADERS, 1, &[0, 0, 0, 2, 0x88]), "PROTOCOL_ERROR"),
        ];
        let mut wrong = Vec::new();
        for (what, frames, want) in table {
            let bytes = [f(SETTINGS, 0, 0, &[]), frames].concat();
            let r = crate::fuzz::http2(&bytes, &[]);
            let got = match (&r.error, &r.streams[0].ended) {
                (Some(e), _) => e.split(':').next().unwrap_or_default().to_string(),
                (None, Some(Err(e))) => {
                    let code = e.split(['(', ')']).nth(1).unwrap_or(e);
                    format!("stream {code}")
                }
                (None, other) => format!("no error ({other:?})"),
            };
            if got != want {
                wrong.push(format!("{what}: {got}, not {want}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// A hostile server is a classified failure, never a hang or an unbounded buffer: a
    /// CONTINUATION flood, a frame over our size, a PUSH_PROMISE, bad HPACK.
    #[test]
    fn hostile_servers_are_protocol_errors() {
        let mut flood = Vec::new();
        headers_frame(&mut flood, 0, &[0x88]);
        for _ in 0..200 {
            frame(&mut flood, 0, CONTINUATION, 0, 1);
        }
        let mut big = Vec::new();
        frame(&mut big, MAX_FRAME + 1, DATA, 0, 1);
        big.extend(std::iter::repeat_n(0, MAX_FRAME + 1));
        let mut push = Vec::new();
        frame(&mut push, 4, PUSH_PROMISE, END_HEADERS, 1);
        push.extend_from_slice(&2u32.to_be_bytes());
        let mut hpack = Vec::new();
        headers_frame(&mut hpack, END_HEADERS | END_STREAM, &[0xff, 0x80]);
        for (frames, what) in
            [(flood, "CONTINUATION"), (big, "FRAME_SIZE_ERROR"), (push, "PUSH_PROMISE"), (hpack, "COMPRESSION_ERROR")]
        {
            let f = get(raw_server(frames, true)).expect_err(what);
            assert_eq!(f.kind, ErrorKind::Protocol, "{what}: {}", f.message());
            assert!(f.message().contains(what), "{what}: {}", f.message());
        }
        // A reset stream, over the socket: classified by its code.
        let mut rst = Vec::new();
        rst_stream(&mut rst, 1, REFUSED_STREAM);
        let f = get(raw_server(rst, true)).expect_err("reset");
        assert!(f.unprocessed && f.message().contains("RST_STREAM REFUSED_STREAM"), "{}", f.message());
        // Closed before answering: stale.
        let f = get(raw_server(Vec::new(), false)).expect_err("closed");
        assert!(f.kind == ErrorKind::Reset && f.unanswered, "{f:?}");
    }
}
