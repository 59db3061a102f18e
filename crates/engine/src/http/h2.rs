//! HTTP/2 on the `h2` crate: requests as streams of one connection, several at once.
//!
//! A connection is driven by a task of its own ([`spawn_local`](tokio::task::spawn_local),
//! on the engine thread), because several slots' requests share it: whichever of them
//! polled the socket last would otherwise be the only one woken when bytes arrive, and it
//! may have gone on to other work. The driver only moves frames; each request, in its
//! slot's task, opens its stream, sends its body as flow control allows, and reads its
//! response. Nothing is spawned or sent through a channel per request: a stream is opened
//! straight into the connection's shared state (h2's own), and the driver writes it out.
//!
//! What a connection saw of its streams (the most open at once, flow-control stalls, the
//! server's limit on streams) and its bytes on the wire are counted in [`State`] and
//! handed to whichever request finishes next, so the totals are exact however the
//! requests interleave.
//!
//! Flow control: each stream may receive [`STREAM_WINDOW`] bytes unread, and the
//! connection as much as all its streams together, so only a stream's window ever holds
//! the server back, and each such stall is counted. Data is read and its window given back
//! as it arrives; what the server may send unread is bounded by the windows.

use super::{Answer, Outgoing, Reading};
use crate::conn::{io_kind, CountedIo, Failure, IoCounts};
use barrage_metrics::recorder::StreamFigures;
use barrage_metrics::ErrorKind;
use bytes::Bytes;
use h2::client::SendRequest;
use h2::{Reason, SendStream};
use std::cell::Cell;
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// The receive window of each stream: what the server may send a stream before barrage
/// has read it. 1 MiB: a response of up to 1 MiB needs no WINDOW_UPDATE before it is
/// whole (h2load's default is 1 GiB, which leaves flow control out; the h2 crate's is
/// 64 KiB, which would stall every larger response on loopback).
pub(crate) const STREAM_WINDOW: u32 = 1 << 20;

/// The most header bytes a response may carry (decoded): a server cannot make barrage
/// hold more for one head.
const MAX_HEADER_LIST: u32 = 1 << 20;

/// An open HTTP/2 connection: a handle to open streams on it. Cloning it gives another
/// slot its own handle to the same connection.
pub struct Conn {
    send: SendRequest<Bytes>,
    state: Rc<State>,
    /// A stream opened through this handle may still be queued behind the server's limit
    /// (its request was cancelled while it waited): the handle must be ready again before
    /// it opens another.
    queued: bool,
}

impl Clone for Conn {
    /// Another handle, with nothing queued through it.
    fn clone(&self) -> Self {
        Conn { send: self.send.clone(), state: self.state.clone(), queued: false }
    }
}

/// What the streams of one connection share, beside h2's own state.
struct State {
    counts: Arc<IoCounts>,
    /// Wire bytes (in, out) already counted into finished requests.
    counted: Cell<(u64, u64)>,
    /// Streams open now.
    open: Cell<u64>,
    /// What was seen since the figures were last taken.
    figures: Cell<StreamFigures>,
    /// `--streams`: a server limit below it is reported.
    streams: u64,
    /// The server's limit was read (once its SETTINGS had surely arrived).
    cap_read: Cell<bool>,
    /// The driver has finished: the connection is closed.
    ended: Cell<bool>,
}

impl Conn {
    /// The HTTP/2 handshake over `io`, for `streams` requests at once; spawns the driver.
    pub(super) async fn handshake(io: CountedIo, streams: u32) -> Result<Conn, Failure> {
        let counts = io.counts.clone();
        let streams = streams.max(1);
        let (send, connection) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(STREAM_WINDOW.saturating_mul(streams).min(i32::MAX as u32))
            // Until the server's SETTINGS say how many streams it takes, one: a burst above
            // its limit would be refused (REFUSED_STREAM) and sent again. Its SETTINGS come
            // first on the connection, so the others wait at most a round trip, once.
            .initial_max_send_streams(1)
            // A request body is the run's buffer, sliced: queueing it costs no memory, so
            // only the server's window ever holds a body back (a stall is a window's).
            .max_send_buffer_size(i32::MAX as usize)
            .max_header_list_size(MAX_HEADER_LIST)
            .enable_push(false)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|e| classify(e, false))?;
        let state = Rc::new(State {
            counts,
            counted: Cell::new((0, 0)),
            open: Cell::new(0),
            figures: Cell::new(StreamFigures::default()),
            streams: u64::from(streams),
            cap_read: Cell::new(false),
            ended: Cell::new(false),
        });
        let driven = state.clone();
        // It ends by itself once every handle and stream is dropped (h2 then sends GOAWAY
        // and closes), or when the server closes or the connection fails.
        tokio::task::spawn_local(async move {
            let _ = connection.await;
            driven.ended.set(true);
        });
        Ok(Conn { send, state, queued: false })
    }

    /// Whether a new stream may be opened: the connection is up and no GOAWAY came.
    pub(super) fn usable(&mut self) -> bool {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        !self.state.ended.get() && !matches!(self.send.poll_ready(&mut cx), std::task::Poll::Ready(Err(_)))
    }

    /// Whether `self` and `other` are handles to the same connection.
    pub(super) fn same(&self, other: &Conn) -> bool {
        Rc::ptr_eq(&self.state, &other.state)
    }

    /// What the connection saw of its streams since last asked.
    pub(super) fn take_figures(&self) -> StreamFigures {
        let s = &self.state;
        let f = s.figures.get();
        s.figures.set(StreamFigures { most_open: s.open.get(), ..StreamFigures::default() });
        f
    }

    /// Sends `out` on a new stream and reads its response to the end.
    pub(super) async fn exchange(
        &mut self,
        out: &Outgoing<'_>,
        reading: &mut Reading<'_>,
        start: Instant,
    ) -> Result<Answer, Failure> {
        let request = out.target.h2_head(out);
        let body = out.target.body(out);
        let unsent = |e| classify(e, true);
        if self.queued {
            poll_fn(|cx| self.send.poll_ready(cx)).await.map_err(unsent)?;
        }
        let (response, send) = self.send.send_request(request, body.is_empty()).map_err(unsent)?;
        // Above the server's limit on streams the stream waits in h2's queue until one
        // closes: it is sent when this handle is ready again. That wait is in the request's
        // latency but not in a phase.
        self.queued = true;
        poll_fn(|cx| self.send.poll_ready(cx)).await.map_err(unsent)?;
        self.queued = false;
        let sent = start.elapsed();
        let _open = Open::new(&self.state);
        if !body.is_empty() {
            send_body(send, body, &self.state).await?;
        }
        let response = response.await.map_err(|e| classify(e, false))?;
        let head = start.elapsed();
        self.read_cap();
        let (parts, mut body) = response.into_parts();
        let (cache, backend) = reading.head(&parts.headers);
        let answered = |e| Failure { unanswered: false, ..classify(e, false) };
        // Whether the body made the request wait (else it had come with the head, and its
        // end is the head's time: one clock read fewer per request).
        let mut waited = false;
        loop {
            let next = poll_fn(|cx| {
                let poll = body.poll_data(cx);
                waited |= poll.is_pending();
                poll
            });
            let Some(chunk) = next.await else { break };
            let chunk = chunk.map_err(answered)?;
            let flow = body.flow_control();
            if !chunk.is_empty() && flow.available_capacity() <= 0 {
                // The server sent all the window allowed: it waits for a WINDOW_UPDATE.
                self.state.count(|f| f.recv_stalls += 1);
            }
            // Given back at once: the window bounds what is unread, not what was read.
            let _ = flow.release_capacity(chunk.len());
            reading.keep_body(&chunk);
        }
        if !body.is_end_stream() {
            waited = true;
            body.trailers().await.map_err(answered)?;
        }
        let end = if waited { start.elapsed() } else { head };
        let (bytes_in, bytes_out) = self.state.take_bytes();
        Ok(Answer {
            status: parts.status.as_u16(),
            cache,
            backend,
            sent,
            written: None,
            head,
            end,
            bytes_in,
            bytes_out,
        })
    }

    /// Reads the server's limit on streams once, after a response head: its SETTINGS come
    /// first on the connection, so they have arrived by then.
    fn read_cap(&self) {
        let s = &self.state;
        if s.cap_read.replace(true) {
            return;
        }
        let cap = self.send.current_max_send_streams() as u64;
        if cap < s.streams {
            s.count(|f| f.cap = cap);
        }
    }
}

impl State {
    fn count(&self, f: impl FnOnce(&mut StreamFigures)) {
        let mut figures = self.figures.get();
        f(&mut figures);
        self.figures.set(figures);
    }

    /// The wire bytes no finished request has counted yet: a stream's own frames cannot be
    /// told apart on a shared connection, so each request takes what the connection moved
    /// since the last one finished. The total is exact.
    fn take_bytes(&self) -> (u64, u64) {
        let now = (self.counts.bytes_in(), self.counts.bytes_out());
        let before = self.counted.replace(now);
        (now.0 - before.0, now.1 - before.1)
    }
}

/// A stream counted as open while it lives.
struct Open<'a>(&'a State);

impl<'a> Open<'a> {
    fn new(state: &'a State) -> Self {
        let open = state.open.get() + 1;
        state.open.set(open);
        state.count(|f| f.most_open = f.most_open.max(open));
        Open(state)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.open.set(self.0.open.get() - 1);
    }
}

/// Sends `body` as the stream's window allows, counting each wait for more window.
async fn send_body(mut send: SendStream<Bytes>, mut body: Bytes, state: &State) -> Result<(), Failure> {
    let failed = |e| classify(e, false);
    while !body.is_empty() {
        send.reserve_capacity(body.len());
        let mut room = send.capacity();
        if room == 0 {
            state.count(|f| f.send_stalls += 1);
            room = match poll_fn(|cx| send.poll_capacity(cx)).await {
                Some(room) => room.map_err(failed)?,
                None => {
                    return Err(Failure::new(ErrorKind::Reset, "the stream closed before the request body was sent"))
                }
            };
        }
        let chunk = body.split_to(room.min(body.len()));
        send.send_data(chunk, body.is_empty()).map_err(failed)?;
    }
    Ok(())
}

/// Classifies an h2 error. `unsent`: it came before the stream was opened, so nothing of
/// the request went out. A stream the server refused (REFUSED_STREAM) or left above its
/// GOAWAY's last stream id was never processed: it may go again on a new connection.
/// The caller marks a failure after the response head as answered.
pub(crate) fn classify(e: h2::Error, unsent: bool) -> Failure {
    let reason = e.reason();
    let remote = e.is_remote();
    let unprocessed = remote && (e.is_go_away() || reason == Some(Reason::REFUSED_STREAM));
    let kind = match (e.get_io(), reason) {
        (Some(io), _) => io_kind(io).unwrap_or(ErrorKind::Other),
        (None, Some(r)) if protocol_error(r) => ErrorKind::Protocol,
        // h2 found the server breaking the protocol.
        (None, Some(_)) if e.is_library() => ErrorKind::Protocol,
        (None, Some(_)) => ErrorKind::Reset,
        (None, None) => ErrorKind::Other,
    };
    let message = match (reason, e.is_go_away(), remote) {
        (Some(r), true, true) => format!("the server sent GOAWAY ({r:?}) and did not process the stream"),
        (Some(r), false, true) => format!("the server reset the stream (RST_STREAM {r:?})"),
        (Some(r), _, false) => format!("the server broke HTTP/2 ({r:?}): {e}"),
        (None, ..) => e.to_string(),
    };
    let mut f = Failure::new(kind, message);
    // Only the connection closing under the request makes it stale (sent again once on a
    // new connection when nothing was written, or it is idempotent): a stream the server
    // reset was answered, by the reset.
    let closed = e.is_io();
    f.unsent = unsent && closed;
    f.unanswered = closed;
    f.unprocessed = unprocessed;
    f
}

/// Reason codes that say an endpoint broke the protocol, rather than gave up on a stream.
fn protocol_error(r: Reason) -> bool {
    [
        Reason::PROTOCOL_ERROR,
        Reason::FLOW_CONTROL_ERROR,
        Reason::SETTINGS_TIMEOUT,
        Reason::STREAM_CLOSED,
        Reason::FRAME_SIZE_ERROR,
        Reason::COMPRESSION_ERROR,
        Reason::INADEQUATE_SECURITY,
        Reason::HTTP_1_1_REQUIRED,
    ]
    .contains(&r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reason code's kind, and which may be sent again, from the server's side.
    #[test]
    fn reason_codes_are_classified() {
        // (reason, kind, unprocessed)
        let table = [
            (Reason::REFUSED_STREAM, ErrorKind::Reset, true),
            (Reason::CANCEL, ErrorKind::Reset, false),
            (Reason::INTERNAL_ERROR, ErrorKind::Reset, false),
            (Reason::ENHANCE_YOUR_CALM, ErrorKind::Reset, false),
            (Reason::PROTOCOL_ERROR, ErrorKind::Protocol, false),
            (Reason::FLOW_CONTROL_ERROR, ErrorKind::Protocol, false),
            (Reason::COMPRESSION_ERROR, ErrorKind::Protocol, false),
            (Reason::HTTP_1_1_REQUIRED, ErrorKind::Protocol, false),
        ];
        for (reason, kind, unprocessed) in table {
            // A reset as the server sends it: h2 gives a remote reset for a RST_STREAM.
            let f = classify(remote_reset(reason), false);
            assert_eq!((f.kind, f.unprocessed), (kind, unprocessed), "{reason:?}");
            assert!(f.message().contains(&format!("{reason:?}")), "{reason:?}: {}", f.message());
        }
        // A reason code of our own (h2 resetting a stream itself) is never "unprocessed".
        let local = classify(h2::Error::from(Reason::REFUSED_STREAM), false);
        assert!(!local.unprocessed);
    }

    /// An h2 error as a server's RST_STREAM gives it: only h2 makes those, so the test
    /// takes one from a real exchange.
    fn remote_reset(reason: Reason) -> h2::Error {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (client_io, server_io) = tokio::io::duplex(1 << 16);
            let server = tokio::spawn(async move {
                let mut conn = h2::server::handshake(server_io).await.unwrap();
                let (_, mut respond) = conn.accept().await.unwrap().unwrap();
                respond.send_reset(reason);
                // Keep the connection going until the client has seen the reset.
                let _ = conn.accept().await;
            });
            let (mut send, conn) = h2::client::handshake(client_io).await.unwrap();
            tokio::spawn(conn);
            let req = http::Request::get("http://x/").body(()).unwrap();
            let (response, _) = send.send_request(req, true).unwrap();
            let err = response.await.expect_err("the server resets the stream");
            server.abort();
            err
        })
    }
}
