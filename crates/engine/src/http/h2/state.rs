//! A connection's state, shared by the slots whose requests use it and by its driver: the
//! streams in a slab, the server's settings, the windows, the output buffer, and what a
//! request does to them (wait for room, open a stream, send its body, wait for its
//! response). What the server's frames do to it is in [`super::handle`].

use super::frames::{
    frame, reason_kind, settings, window_update, Reason, CONTINUATION, DATA, END_HEADERS, END_STREAM, HEADERS,
    MAX_STREAM_ID, PREFACE, REFUSED_STREAM,
};
use super::window::{RecvWindow, SendWindow, MAX_WINDOW};
use super::{Outgoing, MAX_FRAME, MAX_HEADER_LIST, STREAM_WINDOW};
use crate::conn::Failure;
use crate::http::hpack::{Decoder, Fields};
use barrage_metrics::recorder::StreamFigures;
use barrage_metrics::ErrorKind;
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// How a stream, or the whole connection, ended without a response.
#[derive(Clone, Debug)]
pub(super) enum Ended {
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
pub(super) enum Stage {
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
pub(super) struct Entry {
    pub(super) id: u32,
    pub(super) stage: Stage,
    pub(super) status: u16,
    pub(super) head_at: Option<Instant>,
    pub(super) end_at: Option<Instant>,
    /// The decoded head (and, for a moment, interim heads').
    pub(super) fields: Fields,
    /// Keep the body (a flow's step reads it).
    pub(super) keep: bool,
    pub(super) body: Vec<u8>,
    /// What we may still send on the stream.
    pub(super) send_window: SendWindow,
    /// What the server may still send on the stream.
    pub(super) recv_window: RecvWindow,
    /// Our END_STREAM is queued.
    pub(super) sent_end: bool,
    /// When the request's last frame was written out.
    pub(super) written_at: Option<Instant>,
    pub(super) waker: Option<Waker>,
}

/// What the server's SETTINGS said (RFC 9113 6.5.2), as far as a client heeds them.
pub(super) struct PeerSettings {
    /// Its first SETTINGS came.
    pub(super) came: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub(super) max_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: each new stream's send window.
    pub(super) initial_window: i64,
    /// SETTINGS_MAX_FRAME_SIZE: the largest frame we send.
    pub(super) max_frame: usize,
}

/// A header block split by CONTINUATION frames, while its frames come.
#[derive(Default)]
pub(super) struct HeaderBlock {
    /// Its stream; 0 when no block is open.
    pub(super) stream: u32,
    /// Its HEADERS frame's flags.
    pub(super) flags: u8,
    /// CONTINUATION frames so far.
    pub(super) frames: u32,
    pub(super) bytes: Vec<u8>,
}

/// The connection's bytes on the wire, and what of them finished requests have counted.
#[derive(Default)]
pub(super) struct WireBytes {
    pub(super) bytes_in: u64,
    pub(super) bytes_out: u64,
    /// (in, out) already counted into finished requests.
    counted: (u64, u64),
}

impl WireBytes {
    /// The wire bytes no finished request has counted yet: a stream's own frames cannot be
    /// told apart on a shared connection, so each request takes what the connection moved
    /// since the last one finished. The total is exact.
    pub(super) fn take(&mut self) -> (u64, u64) {
        let now = (self.bytes_in, self.bytes_out);
        let before = std::mem::replace(&mut self.counted, now);
        (now.0 - before.0, now.1 - before.1)
    }
}

/// What the streams of one connection share.
pub(super) struct Inner {
    /// Frames to write; the driver writes them out.
    pub(super) out: Vec<u8>,
    pub(super) driver: Option<Waker>,
    pub(super) driver_woken: bool,
    /// Live handles; with none and no stream, the driver closes the connection.
    pub(super) handles: usize,
    /// The connection ended: why (each stream still open failed with it).
    pub(super) ended: Option<Ended>,
    /// The server's GOAWAY: its code.
    pub(super) goaway: Option<u32>,
    pub(super) next_id: u32,
    /// Acknowledgements queued since the output buffer was last written out whole.
    pub(super) unsent_acks: u32,
    /// Streams whose request is queued whole and not yet all written: (id, slab index, the
    /// end of its last frame in `out`), in the order of `out`.
    pub(super) unwritten: VecDeque<(u32, usize, usize)>,
    /// Of `out`, the bytes that are whole requests without a body (a round may wait).
    pub(super) request_bytes: usize,
    /// Send requests in rounds (`--rounds`): see [`Inner::round_waits`].
    pub(super) in_rounds: bool,
    pub(super) peer: PeerSettings,
    /// What we may still send on the connection.
    pub(super) send_window: SendWindow,
    /// What the server may still send on the connection.
    pub(super) recv_window: RecvWindow,
    /// Streams in flight by id (the server counts them against its limit): (id, slab index).
    pub(super) active: Vec<(u32, usize)>,
    pub(super) entries: Vec<Entry>,
    pub(super) free: Vec<usize>,
    /// Slots waiting for a stream below the server's limit.
    pub(super) waiting: Vec<Waker>,
    pub(super) hpack: Decoder,
    pub(super) block: HeaderBlock,
    /// Heads of streams nobody waits for (cancelled) and trailers: decoded and dropped.
    pub(super) trash: Fields,
    /// A request's header block, framed from here.
    scratch: Vec<u8>,
    pub(super) wire: WireBytes,
    /// What the connection saw of its streams, handed to the next request that finishes.
    pub(super) figures: StreamFigures,
    /// `--streams`: a server limit below it is reported.
    streams: u64,
    /// The server's limit was read (after a response head: its SETTINGS came by then).
    cap_read: bool,
}

impl Inner {
    /// A connection's state for `streams` requests at once (`rounds`: see
    /// [`Conn::handshake`](super::Conn::handshake)), with the preface, our SETTINGS and our
    /// connection window queued.
    pub(super) fn new(streams: u32, rounds: bool) -> Inner {
        let streams = streams.max(1);
        let conn_window = STREAM_WINDOW.saturating_mul(streams).min(MAX_WINDOW as u32);
        let mut out = Vec::with_capacity(16 * 1024);
        out.extend_from_slice(PREFACE);
        settings(
            &mut out,
            &[
                // ENABLE_PUSH off: a PUSH_PROMISE is then a protocol error.
                (0x2, 0),
                (0x4, STREAM_WINDOW),
                (0x6, MAX_HEADER_LIST as u32),
            ],
        );
        window_update(&mut out, 0, conn_window - 65_535);
        Inner {
            out,
            driver: None,
            driver_woken: false,
            handles: 1,
            ended: None,
            goaway: None,
            next_id: 1,
            unsent_acks: 0,
            unwritten: VecDeque::with_capacity(streams as usize),
            request_bytes: 0,
            in_rounds: rounds && streams > 1,
            peer: PeerSettings {
                came: false,
                // Until the server's SETTINGS say how many streams it takes, one: a burst
                // above its limit would be refused (REFUSED_STREAM) and sent again. Its
                // SETTINGS come first on the connection, so the others wait at most a round
                // trip, once.
                max_streams: 1,
                initial_window: 65_535,
                max_frame: MAX_FRAME,
            },
            send_window: SendWindow::new(65_535),
            recv_window: RecvWindow::new(conn_window),
            active: Vec::with_capacity(streams as usize),
            entries: Vec::new(),
            free: Vec::new(),
            waiting: Vec::new(),
            hpack: Decoder::default(),
            block: HeaderBlock::default(),
            trash: Fields::default(),
            scratch: Vec::new(),
            wire: WireBytes::default(),
            figures: StreamFigures::default(),
            streams: u64::from(streams),
            cap_read: false,
        }
    }

    pub(super) fn wake_driver(&mut self) {
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
    pub(super) fn round_waits(&self) -> bool {
        let queued = self.unwritten.len();
        self.in_rounds
            && self.ended.is_none()
            && self.goaway.is_none()
            && queued > 0
            && self.out.len() == self.request_bytes
            && queued < self.active.len().saturating_sub(queued)
    }

    /// The requests whose last frame is within the first `written` bytes of `out` were
    /// written now.
    pub(super) fn stamp_written(&mut self, written: usize) {
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

    pub(super) fn count(&mut self, f: impl FnOnce(&mut StreamFigures)) {
        f(&mut self.figures);
    }

    /// Ready when a stream may be opened; an error when none ever will on this connection.
    pub(super) fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
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
        if self.active.len() < self.peer.max_streams as usize {
            return Poll::Ready(Ok(()));
        }
        if !self.waiting.iter().any(|w| w.will_wake(cx.waker())) {
            self.waiting.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Opens a stream for `out`: its HEADERS (END_STREAM when `no_body`) queued. Returns
    /// its slab index.
    pub(super) fn open_stream(&mut self, out: &Outgoing<'_>, no_body: bool, keep: bool) -> usize {
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
        e.send_window = SendWindow::new(self.peer.initial_window);
        e.recv_window = RecvWindow::new(STREAM_WINDOW);
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
            let n = rest.len().min(self.peer.max_frame);
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
    pub(super) fn poll_send(
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
            let room = self
                .send_window
                .available()
                .min(e.send_window.available())
                .min(self.peer.max_frame as i64)
                .min(left as i64);
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
            self.send_window.consume(room);
            let e = &mut self.entries[index];
            e.send_window.consume(room);
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
    pub(super) fn poll_response(&mut self, index: usize, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
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
    pub(super) fn read_cap(&mut self) {
        if std::mem::replace(&mut self.cap_read, true) {
            return;
        }
        let cap = u64::from(self.peer.max_streams);
        if cap < self.streams {
            self.count(|f| f.cap = cap);
        }
    }

    /// The slab index of stream `id`, while it is in flight.
    pub(super) fn find(&self, id: u32) -> Option<usize> {
        self.active.iter().find(|(i, _)| *i == id).map(|&(_, index)| index)
    }

    /// Takes stream `id` out of flight (the server no longer counts it): whether it was.
    /// The slots waiting for a stream are woken.
    pub(super) fn close_stream(&mut self, id: u32) -> bool {
        let Some(at) = self.active.iter().position(|(i, _)| *i == id) else { return false };
        self.active.swap_remove(at);
        for w in self.waiting.drain(..) {
            w.wake();
        }
        true
    }

    /// Ends stream `index` (id `id`) as `stage`, and wakes its slot.
    pub(super) fn finish(&mut self, index: usize, id: u32, stage: Stage) {
        self.close_stream(id);
        let e = &mut self.entries[index];
        e.stage = stage;
        if let Some(w) = e.waker.take() {
            w.wake();
        }
    }

    /// The connection ended: every stream in flight fails with `why`, and the slots waiting
    /// for one are woken to fail too.
    pub(super) fn end(&mut self, why: Ended) {
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
}

impl Ended {
    /// The failure of a request this ended. `answered`: its head had come. `unsent`: it
    /// came before the stream was opened, so nothing of the request went out. A stream the
    /// server refused (REFUSED_STREAM) or left above its GOAWAY's last stream id was never
    /// processed: it may go again on a new connection.
    pub(super) fn failure(&self, answered: bool, unsent: bool) -> Failure {
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

#[cfg(test)]
mod tests {
    use super::super::frames::{CANCEL, COMPRESSION_ERROR, FLOW_CONTROL_ERROR, PROTOCOL_ERROR};
    use super::*;

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
}
