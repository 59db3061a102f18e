//! One HTTP request on an open connection, whatever the protocol: the slot
//! ([`crate::slot::Slot`]) hands a connection an [`Outgoing`] request and a [`Reading`]
//! (what to read off the response, what to keep of it for a flow's step), and gets back an
//! [`Answer`]: the status, what the headers said, the bytes each way and when the request
//! was written, its head arrived and its last byte came in. Phases, samples and retries are
//! the slot's; each protocol module only moves bytes and tells the times.
//!
//! HTTP/1.1 is [`h1`], lean: pre-encoded requests, `httparse` on a bounded buffer. HTTP/2
//! is [`h2`], as lean, with our HPACK decoder ([`hpack`]); HTTP/3 is [`h3`], on `h3` over
//! `quinn`.

pub(crate) mod h1;
pub(crate) mod h1_encode;
pub(crate) mod h1_read;
pub(crate) mod h2;
pub(crate) mod h3;
pub(crate) mod hpack;
mod shared;

pub(crate) use shared::SharedConns;

use crate::conn::{Connector, Endpoint, Failure};
pub(crate) use crate::prepared::{Filled, Outgoing};
use crate::timing::Phases;
use barrage_metrics::recorder::StreamFigures;
use barrage_metrics::{CacheStatus, Protocol};
use barrage_plan::{CacheRules, HeaderView};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::time::{Duration, Instant};

/// What an exchange reads off the response's head, and what it keeps of the response for
/// a flow's step whose captures or checks read it.
pub(crate) struct Reading<'a> {
    /// How the cache status is read from the headers.
    pub rules: &'a CacheRules,
    /// The headers that name the backend, first present wins.
    pub backend_headers: &'a [HeaderName],
    /// The backend the slot's last response named, reused when the next names the same.
    pub last_backend: &'a mut Option<HeaderValue>,
    /// Kept: every header of the response.
    pub headers: Option<&'a mut HeaderMap>,
    /// Kept: the body, up to [`barrage_plan::flow::MAX_JUDGED_BODY`] bytes.
    pub body: Option<&'a mut Vec<u8>>,
    /// Read: when the origin's stamp says it made the answer, µs since the Unix epoch.
    pub stamp: Option<u64>,
}

impl Reading<'_> {
    /// Keeps the start of a body chunk, when the body is kept.
    pub(crate) fn keep_body(&mut self, chunk: &[u8]) {
        if let Some(body) = self.body.as_deref_mut() {
            let room = barrage_plan::flow::MAX_JUDGED_BODY.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    }

    /// The cache status and backend a head's headers say (a header map, or the lines or
    /// fields a lean client read them as), kept by `keep` when the step reads them.
    pub(crate) fn head<H: HeaderView + ?Sized>(
        &mut self,
        headers: &H,
        keep: impl FnOnce(&mut HeaderMap),
    ) -> (CacheStatus, Option<HeaderValue>) {
        if let Some(kept) = self.headers.as_deref_mut() {
            keep(kept);
        }
        self.stamp = headers.value(&STAMP).and_then(barrage_metrics::sample::stamp_time);
        (self.rules.classify(headers), self.backend_of(headers))
    }

    /// The backend a head names: the first of the backend headers present. A server names
    /// itself on every response: the slot's last value is reused (a reference count) when
    /// it is the same, instead of copied.
    fn backend_of<H: HeaderView + ?Sized>(&mut self, headers: &H) -> Option<HeaderValue> {
        let value = self.backend_headers.iter().find_map(|h| headers.value(h))?;
        let last = &mut *self.last_backend;
        if last.as_ref().is_none_or(|v| v.as_bytes() != value) {
            *last = Some(HeaderValue::from_bytes(value).ok()?);
        }
        last.clone()
    }
}

/// The header of the origin's stamp ([`barrage_metrics::sample::STAMP_HEADER`]).
static STAMP: HeaderName = HeaderName::from_static(barrage_metrics::sample::STAMP_HEADER);

/// How one request went, as the protocol saw it. Times are offsets from the run's start.
pub(crate) struct Answer {
    pub status: u16,
    pub cache: CacheStatus,
    /// The backend header's value.
    pub backend: Option<HeaderValue>,
    /// When the protocol began sending the request.
    pub sent: Duration,
    /// When the request's last byte was written, where the protocol can tell (HTTP/2 tells
    /// by the connection's write that carried it; HTTP/3 cannot: quinn sends from its own
    /// buffer, later).
    pub written: Option<Duration>,
    /// When the response's head had arrived.
    pub head: Duration,
    /// When its last byte had.
    pub end: Duration,
    /// Bytes each way, headers and body.
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl Answer {
    /// The send, wait and receive phases of the exchange.
    pub(crate) fn phases(&self, phases: &Phases) {
        // A connection's write may be stamped after the head it carried the request for
        // came in (HTTP/2 stamps by the write's turn): the request was written by then.
        let written = self.written.map(|w| w.clamp(self.sent, self.head));
        phases.exchanged(self.sent, written, self.head, self.end);
    }
}

/// An open connection, of whichever protocol the endpoint and the server chose.
pub(crate) enum Conn {
    /// HTTP/1.1.
    H1(h1::Conn),
    /// HTTP/2: a handle to a connection that several slots may share.
    H2(h2::Conn),
    /// HTTP/3 over QUIC (`--http3`): a handle to a connection that several slots may share.
    H3(h3::Conn),
}

impl Conn {
    /// Opens a connection to `ep`: DNS, connect and TLS go into `phases`. HTTP/2 when the
    /// server agreed to it (ALPN) or the run asked for it over cleartext; HTTP/3 (QUIC)
    /// when the run asked for it.
    pub(crate) async fn open(connector: &Connector, ep: &Endpoint, phases: &Phases) -> Result<Conn, Failure> {
        // QUIC's and HTTP/2's openings are boxed: held in place, their states would make
        // every request's future (which each in-flight slot holds) kilobytes larger, for
        // the few requests that open a connection of theirs.
        if connector.quic.is_some() {
            return Ok(Conn::H3(Box::pin(h3::Conn::open(connector, ep, phases)).await?));
        }
        let (stream, h2) = connector.connect(ep, phases).await?;
        if h2 {
            let handshake = h2::Conn::handshake(stream, connector.streams(), connector.in_rounds());
            return Ok(Conn::H2(Box::pin(handshake).await?));
        }
        Ok(Conn::H1(h1::Conn::new(stream)))
    }

    /// The protocol the connection speaks.
    pub(crate) fn protocol(&self) -> Protocol {
        match self {
            Conn::H1(_) => Protocol::Http1,
            Conn::H2(_) => Protocol::Http2,
            Conn::H3(_) => Protocol::Http3,
        }
    }

    /// Another handle to the connection, when it carries several requests at once (HTTP/2
    /// and HTTP/3); `None` for HTTP/1.1, one request at a time.
    pub(crate) fn share(&self) -> Option<Conn> {
        match self {
            Conn::H1(_) => None,
            Conn::H2(c) => Some(Conn::H2(c.clone())),
            Conn::H3(c) => Some(Conn::H3(c.clone())),
        }
    }

    /// Whether `self` and `other` are handles to the same shared connection.
    pub(crate) fn same(&self, other: &Conn) -> bool {
        match (self, other) {
            (Conn::H2(a), Conn::H2(b)) => a.same(b),
            (Conn::H3(a), Conn::H3(b)) => a.same(b),
            _ => false,
        }
    }

    /// Whether the connection can take another request, waiting (and driving it) until it
    /// can.
    pub(crate) async fn reusable(&mut self) -> bool {
        match self {
            Conn::H1(c) => std::future::poll_fn(|cx| std::task::Poll::Ready(c.reusable(cx))).await,
            Conn::H2(_) | Conn::H3(_) => self.usable(),
        }
    }

    /// Whether an HTTP/2 or HTTP/3 connection may open another stream (no GOAWAY came, it
    /// is up); an HTTP/1.1 one, whether its last response left it open.
    pub(crate) fn usable(&mut self) -> bool {
        match self {
            Conn::H1(c) => c.usable(),
            Conn::H2(c) => c.usable(),
            Conn::H3(c) => c.usable(),
        }
    }

    /// Bytes written so far on the connection, for a request sent again elsewhere to
    /// count what its first try wrote. 0 for HTTP/2 and HTTP/3, whose connections carry
    /// other requests' bytes meanwhile: HTTP/2's bytes go to the requests that finish on
    /// it ([`h2`]), HTTP/3's to the request of each stream ([`h3`]).
    pub(crate) fn bytes_out(&self) -> u64 {
        match self {
            Conn::H1(c) => c.bytes_out(),
            Conn::H2(_) | Conn::H3(_) => 0,
        }
    }

    /// What an HTTP/2 or HTTP/3 connection saw of its streams since last asked.
    pub(crate) fn take_figures(&self) -> Option<StreamFigures> {
        match self {
            Conn::H1(_) => None,
            Conn::H2(c) => Some(c.take_figures()),
            Conn::H3(c) => Some(c.take_figures()),
        }
    }

    /// Sends `out` and reads its response to the end.
    pub(crate) async fn exchange(
        &mut self,
        out: &Outgoing<'_>,
        reading: &mut Reading<'_>,
        start: Instant,
    ) -> Result<Answer, Failure> {
        match self {
            Conn::H1(c) => c.exchange(out, reading, start).await,
            Conn::H2(c) => c.exchange(out, reading, start).await,
            // Boxed: h3's request future is over a kilobyte, which every HTTP/1.1 and HTTP/2
            // request's future would carry too; QUIC allocates per stream anyway.
            Conn::H3(c) => Box::pin(c.exchange(out, reading, start)).await,
        }
    }
}
