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
//! server's limit on streams) and its bytes on the wire are counted in its state and handed
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
//!
//! The parts: [`frames`] (the codec, no state), [`window`] (flow-control windows as
//! values), [`state`] (the connection's state and what a request does to it), [`handle`]
//! (what each frame the server sends does to it), [`driver`] (the socket), [`template`]
//! (a request's header block). This file is the handle a slot holds.

mod driver;
mod frames;
mod handle;
mod state;
pub(crate) mod template;
#[cfg(test)]
mod tests;
mod window;

// The frame types and flags, for the fuzz harness to build what a server sends.
#[cfg(any(test, feature = "fuzz"))]
pub use frames::{
    CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PADDED, PING, PRIORITY, PRIORITY_FLAG, PUSH_PROMISE,
    RST_STREAM, SETTINGS, WINDOW_UPDATE,
};
#[cfg(any(test, feature = "fuzz"))]
pub(crate) use handle::fuzz_frames;
#[cfg(any(test, feature = "fuzz"))]
pub use handle::{Http2, Http2Stream};

use super::hpack::Fields;
use super::{Answer, Outgoing, Reading};
use crate::conn::{Failure, Stream};
use barrage_metrics::recorder::StreamFigures;
use driver::Driver;
use frames::{rst_stream, CANCEL, MAX_STREAM_ID};
use http::HeaderMap;
use state::{Inner, Stage};
use std::cell::RefCell;
use std::future::poll_fn;
use std::rc::Rc;
use std::time::Instant;

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

/// Acknowledgements (of PING and SETTINGS) queued and not yet written out that end the
/// connection: a server that floods them, or sends them and reads no answer, must not make
/// the output buffer grow without bound. No server needs a fraction of this.
const MAX_UNSENT_ACKS: u32 = 10_000;

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
    /// many requests a second (bench/results/2026-11-26_0700-i17-rounds.md; 1.05-1.10× since
    /// a closed loop coalesces its wake-ups, [`crate::coalesce`]). The wait is the
    /// request's `send` phase (its stream opened, its frames not yet written), in its
    /// latency. Off by default: quick requests sharing a connection with slow ones wait for
    /// the rounds the slow ones hold back, and barrage's latency is the server's unless asked
    /// otherwise.
    pub(super) async fn handshake(io: Stream, streams: u32, rounds: bool) -> Result<Conn, Failure> {
        let inner = Rc::new(RefCell::new(Inner::new(streams, rounds)));
        tokio::task::spawn_local(Driver::new(inner.clone(), io));
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
        let (bytes_in, bytes_out) = i.wire.take();
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
