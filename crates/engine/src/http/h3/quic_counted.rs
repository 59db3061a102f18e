//! h3's QUIC traits over h3-quinn's, counting what each request stream carries: a layer
//! under h3, apart from the connection that uses it.

use bytes::{Buf, Bytes};
use h3::error::Code;
use h3::quic::{self, StreamErrorIncoming, StreamId, WriteBuf};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

/// What one request stream carried: its HTTP/3 frames, each way.
#[derive(Default)]
pub(crate) struct StreamBytes {
    pub(crate) sent: Cell<u64>,
    pub(crate) received: Cell<u64>,
    /// When the stream opened, if it had to wait for the server's limit on streams.
    pub(crate) opened_late: Cell<Option<Instant>>,
}

/// A connection's request streams opened and not yet claimed by their request (found
/// by id, so requests sharing the connection never take each other's).
#[derive(Default)]
pub(crate) struct Ledger {
    unclaimed: RefCell<Vec<(StreamId, Rc<StreamBytes>)>>,
}

impl Ledger {
    /// The counts of stream `id`, which its request takes once it is open. A stream
    /// whose request was cancelled before it took its counts is dropped from the
    /// ledger here, so the ledger holds only live streams.
    pub(crate) fn claim(&self, id: StreamId) -> Rc<StreamBytes> {
        let mut open = self.unclaimed.borrow_mut();
        open.retain(|(s, bytes)| *s == id || Rc::strong_count(bytes) > 1);
        match open.iter().position(|(s, _)| *s == id) {
            Some(i) => open.swap_remove(i).1,
            None => Rc::default(),
        }
    }
}

/// A QUIC connection or stream opener whose bidirectional streams are counted.
pub(crate) struct Counted<T> {
    inner: T,
    ledger: Rc<Ledger>,
    /// The stream being opened had to wait (for the server's limit).
    waiting: bool,
}

impl<T: Clone> Clone for Counted<T> {
    fn clone(&self) -> Self {
        Counted { inner: self.inner.clone(), ledger: self.ledger.clone(), waiting: false }
    }
}

impl<T> Counted<T> {
    pub(crate) fn new(inner: T, ledger: Rc<Ledger>) -> Self {
        Counted { inner, ledger, waiting: false }
    }

    fn count<S>(&self, stream: S, register: Option<StreamId>) -> Stream<S> {
        let bytes = Rc::new(StreamBytes::default());
        if let Some(id) = register {
            self.ledger.unclaimed.borrow_mut().push((id, bytes.clone()));
        }
        Stream { inner: stream, bytes }
    }
}

impl<O: quic::OpenStreams<Bytes>> quic::OpenStreams<Bytes> for Counted<O> {
    type BidiStream = Stream<O::BidiStream>;
    type SendStream = O::SendStream;

    fn poll_open_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
        let Poll::Ready(opened) = self.inner.poll_open_bidi(cx) else {
            // quinn waits only for the server's limit on streams.
            self.waiting = true;
            return Poll::Pending;
        };
        let waited = std::mem::take(&mut self.waiting);
        Poll::Ready(opened.map(|s| {
            let id = quic::SendStream::send_id(&s);
            let stream = self.count(s, Some(id));
            if waited {
                stream.bytes.opened_late.set(Some(Instant::now()));
            }
            stream
        }))
    }

    fn poll_open_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        self.inner.poll_open_send(cx)
    }

    fn close(&mut self, code: Code, reason: &[u8]) {
        self.inner.close(code, reason)
    }
}

impl<C: quic::Connection<Bytes>> quic::Connection<Bytes> for Counted<C> {
    type RecvStream = C::RecvStream;
    type OpenStreams = Counted<C::OpenStreams>;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::RecvStream, quic::ConnectionErrorIncoming>> {
        self.inner.poll_accept_recv(cx)
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, quic::ConnectionErrorIncoming>> {
        // A server never opens a bidirectional stream in HTTP/3 (h3 closes the
        // connection when one does); counted all the same, claimed by no request.
        self.inner.poll_accept_bidi(cx).map_ok(|s| self.count(s, None))
    }

    fn opener(&self) -> Self::OpenStreams {
        Counted::new(self.inner.opener(), self.ledger.clone())
    }
}

/// A stream whose frames are counted.
pub(crate) struct Stream<S> {
    inner: S,
    bytes: Rc<StreamBytes>,
}

impl<S: quic::SendStream<Bytes>> quic::SendStream<Bytes> for Stream<S> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.inner.poll_ready(cx)
    }

    fn send_data<T: Into<WriteBuf<Bytes>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        let data: WriteBuf<Bytes> = data.into();
        let n = data.remaining() as u64;
        self.inner.send_data(data)?;
        self.bytes.sent.set(self.bytes.sent.get() + n);
        Ok(())
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.inner.poll_finish(cx)
    }

    fn reset(&mut self, reset_code: u64) {
        self.inner.reset(reset_code)
    }

    fn send_id(&self) -> StreamId {
        self.inner.send_id()
    }
}

impl<S: quic::RecvStream> quic::RecvStream for Stream<S> {
    type Buf = S::Buf;

    fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Self::Buf>, StreamErrorIncoming>> {
        let res = self.inner.poll_data(cx);
        if let Poll::Ready(Ok(Some(buf))) = &res {
            self.bytes.received.set(self.bytes.received.get() + buf.remaining() as u64);
        }
        res
    }

    fn stop_sending(&mut self, error_code: u64) {
        self.inner.stop_sending(error_code)
    }

    fn recv_id(&self) -> StreamId {
        self.inner.recv_id()
    }
}

impl<S: quic::BidiStream<Bytes>> quic::BidiStream<Bytes> for Stream<S> {
    type SendStream = Stream<S::SendStream>;
    type RecvStream = Stream<S::RecvStream>;

    fn split(self) -> (Self::SendStream, Self::RecvStream) {
        let (send, recv) = self.inner.split();
        (Stream { inner: send, bytes: self.bytes.clone() }, Stream { inner: recv, bytes: self.bytes })
    }
}
