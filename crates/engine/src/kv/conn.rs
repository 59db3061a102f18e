//! A pipelined Redis or memcached connection: many slots' commands in flight on one socket,
//! their replies matched back in order.
//!
//! Slots [`KvConn::submit`] a command: it is encoded straight into the connection's output
//! buffer and queued as pending, and the connection's one driver task ([`KvConn::drive`],
//! spawned when the connection opens) is woken. The driver writes whatever the buffer holds
//! (so commands submitted in the same tick leave in one write), reads, and parses replies
//! while the buffer holds a complete one, handing each to the oldest pending command.
//!
//! One task owns the stream, so there is no split and no lock, and TLS works unchanged.
//!
//! `--timeout` is kept here too, with one timer per connection rather than one per command
//! (a timer per command was an eighth of the generator's CPU at `--pipeline 16`): each
//! command has a deadline, its attempt's start plus the timeout; deadlines come in the order
//! commands do, so the timer waits for the oldest one not yet answered. A command that
//! passes its deadline fails as a request timeout and stays queued: its reply still comes in
//! its turn and is dropped, so the commands behind it keep their own replies. When the
//! connection ends (closed by the server, reset, or bytes that are not the protocol), every
//! pending command fails with the reason and the connection is not used again.

use super::{memcache, resp, ErrorClass, ProtocolError, Reply};
use crate::conn::{Failure, TimedIo};
use barrage_metrics::ErrorKind;
use bytes::{Buf, BytesMut};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Poll, Waker};
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
    /// The first reply in `buf`, as [`super`]'s parsers read it.
    pub(crate) fn reply(self, buf: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
        match self {
            Parse::Resp2 => resp::parse_resp2(buf),
            Parse::Resp3 => resp::parse_resp3(buf),
            Parse::Text(kind) => memcache::parse_text(buf, kind),
            Parse::Meta => memcache::parse_meta(buf),
        }
    }
}

/// What a reply said, as a slot counts it.
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

/// Where a slot's answer arrives: made once per slot and reused for every command it sends.
/// `seq` tells a reply to the command the slot waits for from one it gave up on.
#[derive(Default)]
pub(crate) struct ReplyCell {
    seq: Cell<u64>,
    answer: RefCell<Option<Result<Answer, Failure>>>,
    waker: RefCell<Option<Waker>>,
}

impl ReplyCell {
    /// Starts waiting for a new command: earlier commands' answers are dropped from now on.
    fn next(&self) -> u64 {
        self.answer.borrow_mut().take();
        self.seq.set(self.seq.get() + 1);
        self.seq.get()
    }

    /// Hands command `seq`'s answer over, if the slot still waits for it.
    fn complete(&self, seq: u64, answer: Result<Answer, Failure>) {
        if self.seq.get() != seq {
            return;
        }
        *self.answer.borrow_mut() = Some(answer);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    /// The answer to the command last submitted with this cell.
    pub(crate) async fn wait(&self) -> Result<Answer, Failure> {
        poll_fn(|cx| match self.answer.borrow_mut().take() {
            Some(a) => Poll::Ready(a),
            None => {
                let mut waker = self.waker.borrow_mut();
                if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        })
        .await
    }
}

/// A command written or to be written, waiting for its reply.
struct Pending {
    cell: Rc<ReplyCell>,
    seq: u64,
    parse: Parse,
    /// The output stream's offsets of the command's first byte and just past its last.
    start: u64,
    end: u64,
    /// When its last byte was written.
    written: Option<Duration>,
    /// When it times out.
    deadline: Duration,
    /// It timed out: its slot has moved on, and its reply is dropped.
    timed_out: bool,
}

/// Longest a connection's output buffer grows before submitters are refused: a server that
/// stopped reading must not make the client buffer without bound.
const MAX_OUT: usize = 64 << 20;

/// One pipelined connection.
pub(crate) struct KvConn {
    out: RefCell<BytesMut>,
    pending: RefCell<VecDeque<Pending>>,
    /// The output stream's offset past the last command submitted.
    submitted: Cell<u64>,
    driver: RefCell<Option<Waker>>,
    alive: Cell<bool>,
    base: Instant,
}

impl KvConn {
    /// A connection whose times are offsets from `base`.
    pub(crate) fn new(base: Instant, pipeline: usize) -> KvConn {
        KvConn {
            out: RefCell::new(BytesMut::with_capacity(4096)),
            pending: RefCell::new(VecDeque::with_capacity(pipeline)),
            submitted: Cell::new(0),
            driver: RefCell::new(None),
            alive: Cell::new(true),
            base,
        }
    }

    /// Whether it can take commands.
    pub(crate) fn alive(&self) -> bool {
        self.alive.get()
    }

    /// Queues the command `encode` writes, whose reply is read as `parse`, for `cell`;
    /// returns its length on the wire.
    /// It times out at `deadline` (an offset from the run's start).
    pub(crate) fn submit(
        &self,
        cell: &Rc<ReplyCell>,
        parse: Parse,
        deadline: Duration,
        encode: impl FnOnce(&mut BytesMut),
    ) -> Result<u64, Failure> {
        let unsent =
            |why: &str| Failure { unsent: true, unanswered: true, ..Failure::new(ErrorKind::Reset, why.to_string()) };
        if !self.alive.get() {
            return Err(unsent("the connection had closed"));
        }
        let mut out = self.out.borrow_mut();
        if out.len() > MAX_OUT {
            return Err(unsent("the server has not read 64 MiB of commands"));
        }
        let before = out.len();
        encode(&mut out);
        let len = (out.len() - before) as u64;
        drop(out);
        self.submitted.set(self.submitted.get() + len);
        let seq = cell.next();
        self.pending.borrow_mut().push_back(Pending {
            cell: cell.clone(),
            seq,
            parse,
            start: self.submitted.get() - len,
            end: self.submitted.get(),
            written: None,
            deadline,
            timed_out: false,
        });
        if let Some(w) = self.driver.borrow_mut().take() {
            w.wake();
        }
        Ok(len)
    }

    fn now(&self) -> Duration {
        self.base.elapsed()
    }

    /// Runs the connection until it ends: writes what is submitted, reads and hands out
    /// replies. Every command still pending then fails with why it ended.
    pub(crate) async fn drive(self: Rc<Self>, mut io: TimedIo) {
        let mut state = DriveState::default();
        let mut timer = std::pin::pin!(tokio::time::sleep(Duration::ZERO));
        let mut armed = false;
        let end = poll_fn(|cx| {
            {
                let mut driver = self.driver.borrow_mut();
                if !driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *driver = Some(cx.waker().clone());
                }
            }
            if let Err(f) = self.write(&mut io, cx, &mut state) {
                return Poll::Ready(f);
            }
            if let Err(f) = self.read(&mut io, cx, &mut state) {
                return Poll::Ready(f);
            }
            self.time_out(cx, timer.as_mut(), &mut armed);
            Poll::Pending
        })
        .await;
        self.alive.set(false);
        let why = end.message();
        for p in self.pending.borrow_mut().drain(..).filter(|p| !p.timed_out) {
            let unsent = p.start >= state.written;
            let f = Failure { unsent, unanswered: true, ..Failure::new(end.kind, why.clone()) };
            p.cell.complete(p.seq, Err(f));
        }
    }

    /// Fails the commands past their deadline, and sets the timer for the oldest one left.
    /// The timer is moved only when it fires or has nothing to wait for: a command answered
    /// in time costs no timer operation (it then fires early, finds nothing due, and moves
    /// on to the next deadline).
    fn time_out(&self, cx: &mut std::task::Context<'_>, mut timer: Pin<&mut tokio::time::Sleep>, armed: &mut bool) {
        loop {
            if *armed && timer.as_mut().poll(cx).is_pending() {
                return;
            }
            let now = self.now();
            let mut next = None;
            for p in self.pending.borrow_mut().iter_mut().filter(|p| !p.timed_out) {
                if p.deadline > now {
                    next = Some(p.deadline);
                    break;
                }
                p.timed_out = true;
                let f = Failure::new(ErrorKind::RequestTimeout, "no complete reply within --timeout");
                p.cell.complete(p.seq, Err(f));
            }
            let Some(next) = next else {
                // Nothing to wait for: a submit wakes the driver, which arms it again.
                *armed = false;
                return;
            };
            timer.as_mut().reset(tokio::time::Instant::from_std(self.base + next));
            *armed = true;
        }
    }

    /// Writes everything submitted, as far as the socket takes it.
    fn write(&self, io: &mut TimedIo, cx: &mut std::task::Context<'_>, st: &mut DriveState) -> Result<(), Failure> {
        loop {
            let mut out = self.out.borrow_mut();
            if out.is_empty() {
                return Ok(());
            }
            let n = match Pin::new(&mut *io).poll_write(cx, &out) {
                Poll::Pending => return Ok(()),
                Poll::Ready(Ok(0)) => return Err(Failure::new(ErrorKind::Reset, "the server stopped taking commands")),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Err(io_failure(e)),
            };
            out.advance(n);
            drop(out);
            st.written += n as u64;
            let now = self.now();
            let mut pending = self.pending.borrow_mut();
            while let Some(p) = pending.get_mut(st.marked).filter(|p| p.end <= st.written) {
                p.written = Some(now);
                st.marked += 1;
            }
        }
    }

    /// Reads what the socket has and hands out every complete reply.
    fn read(&self, io: &mut TimedIo, cx: &mut std::task::Context<'_>, st: &mut DriveState) -> Result<(), Failure> {
        loop {
            if st.buf.capacity() - st.buf.len() < 4096 {
                st.buf.reserve(16 * 1024);
            }
            let spare = st.buf.spare_capacity_mut();
            let mut rb = ReadBuf::uninit(spare);
            match Pin::new(&mut *io).poll_read(cx, &mut rb) {
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
            let now = self.now();
            st.reads.push_back((st.read, now));
            self.replies(st, now)?;
        }
    }

    /// Hands out the complete replies at the start of the read buffer, oldest command first.
    fn replies(&self, st: &mut DriveState, now: Duration) -> Result<(), Failure> {
        loop {
            let mut pending = self.pending.borrow_mut();
            let Some(front) = pending.front() else {
                if st.buf.is_empty() {
                    return Ok(());
                }
                return Err(Failure::new(ErrorKind::Protocol, "a reply to no command"));
            };
            let Some((reply, used)) = front.parse.reply(&st.buf).map_err(|e| Failure::new(ErrorKind::Protocol, e))?
            else {
                return Ok(());
            };
            let p = pending.pop_front().expect("there was a front");
            st.marked = st.marked.saturating_sub(1);
            drop(pending);
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
            p.cell.complete(p.seq, Ok(answer));
        }
    }
}

/// The driver's own bookkeeping.
#[derive(Default)]
struct DriveState {
    /// Bytes read, not yet parsed.
    buf: BytesMut,
    /// Bytes written, read and parsed so far.
    written: u64,
    read: u64,
    consumed: u64,
    /// Pending commands (from the oldest) known to be written.
    marked: usize,
    /// Reads not yet wholly parsed: the stream offset each ended at, and when.
    reads: VecDeque<(u64, Duration)>,
}

fn io_failure(e: std::io::Error) -> Failure {
    use std::io::ErrorKind as Io;
    let kind = match e.kind() {
        Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe | Io::UnexpectedEof => ErrorKind::Reset,
        Io::InvalidData => ErrorKind::Tls,
        _ => ErrorKind::Other,
    };
    Failure::new(kind, e)
}
