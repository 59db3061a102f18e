//! HTTP/1.1 over hyper's low-level connection API (HTTP/2 is [`super::h2`]'s).
//!
//! hyper's `Connection` future is driven in the same task as the request ([`Conn::drive`])
//! rather than spawned, so a request costs no cross-task wake-up, and the I/O wrapper
//! ([`TimedIo`]) can note when the request was written and count bytes on the wire.

use super::{Answer, Outgoing, Reading};
use crate::conn::{classify, Failure, IoClock, TimedIo};
use barrage_metrics::ErrorKind;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

/// Request body type.
pub type Body = Full<Bytes>;

type Io = TokioIo<TimedIo>;

type Driver = Pin<Box<http1::Connection<Io, Body>>>;

/// An open HTTP/1.1 connection.
pub struct Conn {
    sender: http1::SendRequest<Body>,
    driver: Driver,
    /// Still usable: the connection future has not finished.
    alive: bool,
    /// Bytes and write times.
    pub clock: Arc<IoClock>,
}

impl Conn {
    pub(super) async fn handshake(io: TimedIo, flat_writes: bool) -> Result<Conn, Failure> {
        let clock = io.clock.clone();
        let io = TokioIo::new(io);
        // One flat write per request costs fewer syscall cycles than writev for small
        // requests; but flattening copies the body into the connection's buffer (a copy per
        // request in flight, kept as the buffer's size), so bodies go out by writev.
        let (sender, driver) = http1::Builder::new().writev(!flat_writes).handshake(io).await.map_err(classify)?;
        Ok(Conn { sender, driver: Box::pin(driver), alive: true, clock })
    }

    /// Whether the connection can take another request.
    pub fn usable(&self) -> bool {
        self.alive && !self.sender.is_closed()
    }

    /// Waits until the connection can send, driving it meanwhile.
    pub async fn ready(&mut self) -> Result<(), Failure> {
        let Conn { sender, driver, alive, .. } = self;
        drive(driver, alive, sender.ready()).await.map_err(closed)?.map_err(classify)
    }

    /// Sends a request; resolves when the response head has arrived. A failure tells
    /// whether any of the request went out and any of the response came in.
    async fn send(&mut self, req: http::Request<Body>) -> Result<http::Response<hyper::body::Incoming>, Failure> {
        let (written_before, read_before) = (self.clock.bytes_out(), self.clock.bytes_in());
        let Conn { sender, driver, alive, clock } = self;
        let res = drive(driver, alive, sender.send_request(req)).await;
        res.map_err(closed).and_then(|r| r.map_err(classify)).map_err(|mut f| {
            f.unsent = clock.bytes_out() == written_before;
            f.unanswered = clock.bytes_in() == read_before;
            f
        })
    }

    /// Sends `out` and reads its response to the end.
    pub(super) async fn exchange(
        &mut self,
        out: &Outgoing<'_>,
        reading: &mut Reading<'_>,
        start: Instant,
    ) -> Result<Answer, Failure> {
        let (in0, out0) = (self.clock.bytes_in(), self.clock.bytes_out());
        let request = out.target.request(false, out);
        let sent = start.elapsed();
        let resp = self.send(request).await?;
        let head = start.elapsed();
        // The last write before the head arrived ends the send phase.
        let written = Some(self.clock.last_write());
        let status = resp.status().as_u16();
        let (cache, backend) = reading.head(resp.headers());
        let mut body = resp.into_body();
        while let Some(frame) = self.with(body.frame()).await? {
            let frame = frame.map_err(classify)?;
            if let Some(data) = frame.data_ref() {
                reading.keep_body(data);
            }
        }
        let end = start.elapsed();
        let (bytes_in, bytes_out) = (self.clock.bytes_in() - in0, self.clock.bytes_out() - out0);
        Ok(Answer { status, cache, backend, sent, written, head, end, bytes_in, bytes_out })
    }

    /// Runs `fut` (reading a body) while driving the connection.
    async fn with<F: Future>(&mut self, fut: F) -> Result<F::Output, Failure> {
        let Conn { driver, alive, .. } = self;
        drive(driver, alive, fut).await.map_err(closed)
    }
}

/// How the connection ended while a request was still waiting on it.
type Ended = Option<hyper::Error>;

fn closed(end: Ended) -> Failure {
    match end {
        Some(e) => classify(e),
        None => Failure::new(ErrorKind::Reset, "the server closed the connection before the response was complete"),
    }
}

/// Polls `fut` and the connection together until `fut` completes. When the connection
/// finishes first (closed by the peer, or failed) and `fut` is still pending, it never will
/// be: hyper keeps a request queued on a connection that closed while idle. That is an
/// `Err` carrying the connection's error, if any. (Polling the connection first was
/// measured: no faster.)
async fn drive<F: Future>(driver: &mut Driver, alive: &mut bool, fut: F) -> Result<F::Output, Ended> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        if !*alive {
            return Poll::Ready(Err(None));
        }
        match driver.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(end) => {
                *alive = false;
                match fut.as_mut().poll(cx) {
                    Poll::Ready(out) => Poll::Ready(Ok(out)),
                    Poll::Pending => Poll::Ready(Err(end.err())),
                }
            }
        }
    })
    .await
}
