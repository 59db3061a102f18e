//! The task that moves a connection's bytes: it reads frames into one reused buffer and
//! hands them to the connection's state, and writes out what the streams queued, in
//! rounds with `--rounds`. The only part of HTTP/2 that touches the socket.

use super::frames::goaway;
use super::state::{Ended, Inner};
use super::{MAX_FRAME, READS_PER_TURN, READ_BUF, ROUND_WAIT};
use crate::conn::{io_failure, Stream};
use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The task that moves a connection's bytes: reads and handles frames, writes what the
/// streams queued. It ends when the connection does, or when no handle and no stream is
/// left (or a GOAWAY came and the last stream ended), closing the connection.
pub(super) struct Driver {
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
    /// The driver of the connection whose state is `inner`, over `io`.
    pub(super) fn new(inner: Rc<RefCell<Inner>>, io: Stream) -> Driver {
        Driver {
            inner,
            io,
            buf: Vec::with_capacity(READ_BUF),
            written: 0,
            round_wait: Box::pin(tokio::time::sleep(ROUND_WAIT)),
            round: Round::Idle,
            flushing: false,
        }
    }

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
        i.wire.bytes_in += n as u64;
        match i.on_bytes(&self.buf, now) {
            Ok(used) => {
                self.buf.drain(..used);
                Poll::Ready(Ok(true))
            }
            Err((code, what)) => {
                let last = i.next_id.saturating_sub(2);
                goaway(&mut i.out, last, code);
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
                    i.wire.bytes_out += n as u64;
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

/// Makes room in the read buffer, which holds at most the start of a frame: a frame of the
/// largest size fits behind it.
pub(super) fn read_room(buf: &mut Vec<u8>) {
    if buf.capacity() - buf.len() < MAX_FRAME + 9 {
        buf.reserve_exact(READ_BUF - buf.len());
    }
}
