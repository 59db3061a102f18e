//! A pipelined Redis or memcached connection: the commands of a group's lanes in flight on
//! one socket, their replies matched back in order.
//!
//! The group's task owns the connection (no `Rc`, no `RefCell`, no task of its own): it
//! [`KvConn::submit`]s a command, which is encoded straight into the output buffer and
//! queued as pending, and it [`KvConn::poll`]s the connection, which writes whatever the
//! buffer holds (so the commands submitted in one turn leave in one write), reads, and
//! parses replies while the buffer holds a complete one, answering the oldest pending
//! command with each. Answers go into a list the group works through once the socket has
//! nothing more: one wake-up per read, not one per command.
//!
//! One owner for the stream, so there is no split and no lock, and TLS works unchanged.
//!
//! `--timeout` is kept here too, with one timer per connection rather than one per command
//! (a timer per command was an eighth of the generator's CPU at `--pipeline 16`): each
//! command has a deadline, its attempt's start plus the timeout; deadlines come in the order
//! commands do, so the timer waits for the oldest one not yet answered. A command that
//! passes its deadline fails as a request timeout and stays queued: its reply still comes in
//! its turn and is dropped, so the commands behind it keep their own replies. When the
//! connection ends (closed by the server, reset, or bytes that are not the protocol), every
//! pending command fails with the reason and the connection is not used again.

use super::{memcache, resp, ErrorClass, Partial, ProtocolError, Reply};
use crate::conn::{io_failure, Failure, Stream};
use barrage_metrics::ErrorKind;
use bytes::{Buf, BytesMut};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How the reply of a pending command is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parse {
    /// RESP2.
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
    /// memcached text, answering a command of this kind.
    Text(memcache::TextKind),
    /// memcached meta.
    Meta,
}

impl Parse {
    /// The first reply in `buf`, as [`super`]'s parsers read it, going on from where the
    /// last call stopped on the same reply (`partial`).
    pub(crate) fn reply(self, buf: &[u8], partial: &mut Partial) -> Result<Option<(Reply, usize)>, ProtocolError> {
        match self {
            Parse::Resp2 => resp::resume_resp2(buf, partial),
            Parse::Resp3 => resp::resume_resp3(buf, partial),
            Parse::Text(kind) => memcache::resume_text(buf, kind, partial),
            // A meta reply is a line and its data: nothing to walk.
            Parse::Meta => memcache::parse_meta(buf),
        }
    }
}

/// What a reply said, as a lane counts it.
#[derive(Debug)]
pub(crate) enum Got {
    /// A value (a hit).
    Value,
    /// Nothing there (a miss).
    Miss,
    /// Done, no value (`OK`, `STORED`, an integer, an array).
    Done,
    /// A refusal or failure, with its message for the class's example (errors only, so the
    /// copy is off the hot path).
    Error(ErrorClass, Box<str>),
}

/// One command's answer and its times (offsets from the run's start).
#[derive(Debug)]
pub(crate) struct Answer {
    pub got: Got,
    /// Bytes of the reply.
    pub bytes_in: u64,
    /// When the command's last byte was written.
    pub written: Duration,
    /// When the reply's first byte was read.
    pub first_byte: Duration,
    /// When the reply was complete.
    pub done: Duration,
}

/// What a connection hands its group: the lane a command came from, and how it ended.
pub(crate) type Answered = (u32, Result<Answer, Failure>);

/// A command written or to be written, waiting for its reply.
struct Pending {
    /// The lane that sent it.
    lane: u32,
    parse: Parse,
    /// The output stream's offsets of the command's first byte and just past its last.
    start: u64,
    end: u64,
    /// When its last byte was written.
    written: Option<Duration>,
    /// When it times out.
    deadline: Duration,
    /// It timed out: its lane has moved on, and its reply is dropped.
    timed_out: bool,
}

/// Longest a connection's output buffer grows before it takes no more commands: a server
/// that stopped reading must not make the client buffer without bound. Commands then wait
/// for room ([`KvConn::has_room`]), as an HTTP request waits for its socket.
const MAX_OUT: usize = 64 << 20;

/// One pipelined connection, owned by its group's task.
pub(crate) struct KvConn {
    io: Stream,
    out: BytesMut,
    pending: VecDeque<Pending>,
    /// The output stream's offset past the last command submitted.
    submitted: u64,
    st: DriveState,
    /// The oldest pending command's deadline, when armed (see [`KvConn::time_out`]).
    timer: Pin<Box<tokio::time::Sleep>>,
    armed: bool,
    base: Instant,
}

impl KvConn {
    /// A connection on `io` whose times are offsets from `base`.
    pub(crate) fn new(io: Stream, base: Instant, pipeline: usize) -> KvConn {
        KvConn {
            io,
            out: BytesMut::with_capacity(4096),
            pending: VecDeque::with_capacity(pipeline),
            submitted: 0,
            st: DriveState::default(),
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            armed: false,
            base,
        }
    }

    /// Whether the connection takes another command: fewer than [`MAX_OUT`] bytes of
    /// commands wait unwritten (the server reads what it is sent).
    pub(crate) fn has_room(&self) -> bool {
        self.out.len() <= MAX_OUT
    }

    /// Queues the command `encode` writes, whose reply is read as `parse`, for `lane`;
    /// returns its length on the wire. It times out at `deadline` (an offset from the run's
    /// start). The next [`KvConn::poll`] writes it. Only while [`KvConn::has_room`].
    pub(crate) fn submit(
        &mut self,
        lane: u32,
        parse: Parse,
        deadline: Duration,
        encode: impl FnOnce(&mut BytesMut),
    ) -> u64 {
        debug_assert!(self.has_room(), "a command submitted to a connection with no room");
        let before = self.out.len();
        encode(&mut self.out);
        let len = (self.out.len() - before) as u64;
        let start = self.submitted;
        self.submitted += len;
        let p = Pending { lane, parse, start, end: self.submitted, written: None, deadline, timed_out: false };
        self.pending.push_back(p);
        len
    }

    fn now(&self) -> Duration {
        self.base.elapsed()
    }

    /// Writes what is submitted, reads, and times out what passed its deadline: every
    /// command answered or failed goes into `answered`. `Err` when the connection ended: then
    /// every command still pending has failed with why, and it must not be used again.
    pub(crate) fn poll(&mut self, cx: &mut std::task::Context<'_>, answered: &mut Vec<Answered>) -> Result<(), ()> {
        let ended = self.write(cx).and_then(|()| self.read(cx, answered));
        if let Err(end) = ended {
            let why = end.message();
            for p in self.pending.drain(..).filter(|p| !p.timed_out) {
                let unsent = p.start >= self.st.written;
                let f = Failure { unsent, unanswered: true, ..Failure::new(end.kind, why.clone()) };
                answered.push((p.lane, Err(f)));
            }
            return Err(());
        }
        self.time_out(cx, answered);
        Ok(())
    }

    /// Fails the commands past their deadline, and sets the timer for the oldest one left.
    /// The timer is moved only when it fires or has nothing to wait for: a command answered
    /// in time costs no timer operation (it then fires early, finds nothing due, and moves
    /// on to the next deadline).
    fn time_out(&mut self, cx: &mut std::task::Context<'_>, answered: &mut Vec<Answered>) {
        loop {
            if self.armed && self.timer.as_mut().poll(cx).is_pending() {
                return;
            }
            let now = self.now();
            let mut next = None;
            for p in self.pending.iter_mut().filter(|p| !p.timed_out) {
                if p.deadline > now {
                    next = Some(p.deadline);
                    break;
                }
                p.timed_out = true;
                let f = Failure::new(ErrorKind::RequestTimeout, "no complete reply within --timeout");
                answered.push((p.lane, Err(f)));
            }
            let Some(next) = next else {
                // Nothing to wait for: the group polls again after a submit, which arms it.
                self.armed = false;
                return;
            };
            self.timer.as_mut().reset(tokio::time::Instant::from_std(self.base + next));
            self.armed = true;
        }
    }

    /// Writes everything submitted, as far as the socket takes it.
    fn write(&mut self, cx: &mut std::task::Context<'_>) -> Result<(), Failure> {
        while !self.out.is_empty() {
            let n = match Pin::new(&mut self.io).poll_write(cx, &self.out) {
                Poll::Pending => return Ok(()),
                Poll::Ready(Ok(0)) => return Err(Failure::new(ErrorKind::Reset, "the server stopped taking commands")),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Err(io_failure(e)),
            };
            self.out.advance(n);
            let st = &mut self.st;
            st.written += n as u64;
            let now = self.base.elapsed();
            while let Some(p) = self.pending.get_mut(st.marked).filter(|p| p.end <= st.written) {
                p.written = Some(now);
                st.marked += 1;
            }
        }
        Ok(())
    }

    /// Reads what the socket has and answers every complete reply.
    fn read(&mut self, cx: &mut std::task::Context<'_>, answered: &mut Vec<Answered>) -> Result<(), Failure> {
        loop {
            let st = &mut self.st;
            if st.buf.capacity() - st.buf.len() < 4096 {
                st.buf.reserve(16 * 1024);
            }
            let spare = st.buf.spare_capacity_mut();
            let mut rb = ReadBuf::uninit(spare);
            match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
                Poll::Pending => return Ok(()),
                Poll::Ready(Err(e)) => return Err(io_failure(e)),
                Poll::Ready(Ok(())) => {}
            }
            let n = rb.filled().len();
            if n == 0 {
                return Err(Failure::new(ErrorKind::Reset, "the server closed the connection"));
            }
            // SAFETY: `poll_read` initialised the first `n` bytes of the spare capacity.
            unsafe { st.buf.set_len(st.buf.len() + n) };
            st.read += n as u64;
            // One clock read per read: every reply it completes ended then.
            let now = self.base.elapsed();
            st.reads.push_back((st.read, now));
            self.replies(now, answered)?;
        }
    }

    /// Answers the complete replies at the start of the read buffer, oldest command first.
    fn replies(&mut self, now: Duration, answered: &mut Vec<Answered>) -> Result<(), Failure> {
        let st = &mut self.st;
        loop {
            let Some(front) = self.pending.front() else {
                if st.buf.is_empty() {
                    return Ok(());
                }
                return Err(Failure::new(ErrorKind::Protocol, "a reply to no command"));
            };
            let parsed = front.parse.reply(&st.buf, &mut st.partial);
            let Some((reply, used)) = parsed.map_err(|e| Failure::new(ErrorKind::Protocol, e))? else {
                return Ok(());
            };
            let p = self.pending.pop_front().expect("there was a front");
            st.marked = st.marked.saturating_sub(1);
            let got = match reply {
                Reply::Value { .. } => Got::Value,
                Reply::Miss => Got::Miss,
                Reply::Ok | Reply::Stored | Reply::Other => Got::Done,
                Reply::Error { class, message } => {
                    Got::Error(class, String::from_utf8_lossy(&st.buf[message]).into_owned().into_boxed_str())
                }
            };
            // The read that brought the reply's first byte.
            let first_byte = st.reads.iter().find(|(end, _)| *end > st.consumed).map_or(now, |(_, at)| *at);
            st.buf.advance(used);
            st.consumed += used as u64;
            while st.reads.front().is_some_and(|(end, _)| *end <= st.consumed) {
                st.reads.pop_front();
            }
            if p.timed_out {
                continue;
            }
            let written = p.written.unwrap_or(first_byte).min(first_byte);
            let answer = Answer { got, bytes_in: used as u64, written, first_byte, done: now };
            answered.push((p.lane, Ok(answer)));
        }
    }
}

/// The driver's own bookkeeping.
#[derive(Default)]
struct DriveState {
    /// Bytes read, not yet parsed.
    buf: BytesMut,
    /// How far the reply at the start of `buf` was walked.
    partial: Partial,
    /// Bytes written, read and parsed so far.
    written: u64,
    read: u64,
    consumed: u64,
    /// Pending commands (from the oldest) known to be written.
    marked: usize,
    /// Reads not yet wholly parsed: the stream offset each ended at, and when.
    reads: VecDeque<(u64, Duration)>,
}
