//! HTTP/3 over QUIC (`--http3`): quinn for QUIC, h3 for HTTP/3's frames and QPACK.
//!
//! quinn's TLS is the run's own rustls configuration (ALPN `h3` alone), so `--cacert`,
//! `--insecure` and SNI behave as over TCP, and session resumption stays off: rustls keeps
//! no ticket and does not enable early data, so every connection pays a full handshake and
//! 0-RTT cannot happen.
//!
//! Each connection has a UDP socket of its own, *connected* to the server, as a TCP
//! connection has its 4-tuple: a balancer in front sees as many flows as connections, and
//! the kernel reports an ICMP port unreachable on it (nothing listening: `refused` at
//! once, not a connect timeout). A second connection never shares the first one's socket.
//!
//! Phases: DNS as over TCP; `connect` is the whole QUIC handshake, TLS 1.3 inside it (QUIC
//! carries TLS in its own packets: there is no separate TLS phase to record, so none is);
//! `wait` runs from the request handed to the stream to the response head; `receive` from
//! the head to the last byte. There is no `send` phase: the request's bytes go into quinn's
//! stream buffer and leave in packets the connection's own task builds, so when its last
//! byte reached the wire is not known here.
//!
//! Bytes are HTTP/3 bytes: the frames of the request's own stream, both ways (HEADERS with
//! the QPACK-encoded fields, DATA frame headers and payload). QUIC's packet headers,
//! encryption tags, acknowledgements, the handshake and the control and QPACK streams are
//! not counted, as TCP/IP headers and TLS records are not over TCP. Counting per stream
//! (not per connection) keeps each request's figure its own when several share a
//! connection.

use super::{Answer, Outgoing, Reading};
use crate::conn::{connect_failure, same_family, Connector, Endpoint, Failure};
use crate::exchange::Phases;
use barrage_metrics::{CacheStatus, ErrorKind, Phase};
use bytes::{Buf, Bytes};
use h3::error::{Code, ConnectionError, StreamError};
use h3::quic::{self, StreamErrorIncoming, StreamId, WriteBuf};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Most bytes of a response head (its fields as QPACK decodes them) a connection accepts;
/// larger heads fail the request (`protocol`), so a hostile server cannot grow memory.
const MAX_RESPONSE_HEAD: u64 = 256 * 1024;

/// The QUIC side of a run's connector: the client configuration over the run's rustls one,
/// and the endpoint configuration each connection's endpoint is made with.
pub(crate) struct Quic {
    client: quinn::ClientConfig,
    endpoint: quinn::EndpointConfig,
}

/// QUIC's configuration over `tls` (which offers ALPN `h3` alone and keeps no session).
pub(crate) fn client_config(tls: Arc<rustls::ClientConfig>) -> Result<Quic, crate::EngineError> {
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| crate::EngineError::Tls(format!("QUIC needs TLS 1.3 with AES-128-GCM: {e}")))?;
    Ok(Quic { client: quinn::ClientConfig::new(Arc::new(crypto)), endpoint: quinn::EndpointConfig::default() })
}

type Bidi = quic_counted::Stream<h3_quinn::BidiStream<Bytes>>;
type Driver = h3::client::Connection<quic_counted::Counted<h3_quinn::Connection>, Bytes>;
type Sender = h3::client::SendRequest<quic_counted::Counted<h3_quinn::OpenStreams>, Bytes>;

/// An open HTTP/3 connection.
pub(crate) struct Conn {
    send: Sender,
    driving: Driving,
    link: Link,
    /// What each request stream carried.
    ledger: Rc<quic_counted::Ledger>,
    /// Keeps the endpoint (its socket and task) as long as the connection.
    _endpoint: quinn::Endpoint,
}

/// h3's connection, which reads the control stream (SETTINGS, GOAWAY): polled beside every
/// request, as hyper's connection is in [`super::hyper`] (one task, no wake-up across
/// tasks).
struct Driving {
    driver: Driver,
    /// The connection has not ended.
    alive: bool,
}

/// What tells why a connection ended: quinn's connection, and the kernel on its socket.
struct Link {
    quic: quinn::Connection,
    /// Resolves when the server's host says nothing listens there any more.
    unreachable: RefCell<Unreachable>,
    addr: SocketAddr,
}

impl Conn {
    /// Opens a connection to `ep` within the connect timeout: DNS (unless the address is
    /// known), then the QUIC handshake, recorded as `connect`.
    pub(crate) async fn open(connector: &Connector, ep: &Endpoint, phases: &mut Phases) -> Result<Conn, Failure> {
        match tokio::time::timeout(connector.connect_timeout(), Self::handshake(connector, ep, phases)).await {
            Ok(r) => r,
            Err(_) => Err(connector.timed_out(ep)),
        }
    }

    async fn handshake(connector: &Connector, ep: &Endpoint, phases: &mut Phases) -> Result<Conn, Failure> {
        let q = connector.quic.as_ref().expect("an HTTP/3 run has a QUIC configuration");
        let addr = connector.address(ep, phases).await?;
        let t = Instant::now();
        let socket = udp_socket(addr, connector.bind).map_err(connect_failure)?;
        let mut unreachable = socket.try_clone().and_then(unreachable).map_err(connect_failure)?;
        let runtime = Arc::new(quinn::TokioRuntime);
        let endpoint = quinn::Endpoint::new(q.endpoint.clone(), None, socket, runtime).map_err(connect_failure)?;
        let connecting = endpoint.connect_with(q.client.clone(), addr, &ep.host).map_err(|e| {
            let kind = match e {
                quinn::ConnectError::InvalidServerName(_) => ErrorKind::Tls,
                _ => ErrorKind::Other,
            };
            Failure::new(kind, e)
        })?;
        let quic = tokio::select! {
            done = connecting => done.map_err(|e| quic_failure(&e, true))?,
            e = &mut unreachable => {
                let why = format!("nothing listens on UDP {addr} (ICMP port unreachable: {e})");
                return Err(Failure::new(ErrorKind::Refused, why));
            }
        };
        let link = Link { quic: quic.clone(), unreachable: RefCell::new(unreachable), addr };
        let ledger = Rc::new(quic_counted::Ledger::default());
        let counted = quic_counted::Counted::new(h3_quinn::Connection::new(quic), ledger.clone());
        let (driver, send) = h3::client::builder()
            .max_field_section_size(MAX_RESPONSE_HEAD)
            .build(counted)
            .await
            .map_err(|e| link.connection_failure(&e))?;
        phases.set(Phase::Connect, t.elapsed());
        Ok(Conn { send, driving: Driving { driver, alive: true }, link, ledger, _endpoint: endpoint })
    }

    /// Whether the connection can take another request: it has not ended, and the server
    /// has not said it is going away (h3 sees a GOAWAY when its control stream is polled,
    /// which this does without waiting).
    pub(crate) async fn usable(&mut self) -> bool {
        let Driving { driver, alive } = &mut self.driving;
        if *alive {
            std::future::poll_fn(|cx| {
                if driver.poll_close(cx).is_ready() {
                    *alive = false;
                }
                Poll::Ready(())
            })
            .await;
        }
        *alive && self.link.quic.close_reason().is_none()
    }

    /// Whether the connection has not ended, as far as is known without polling it.
    pub(crate) fn up(&self) -> bool {
        self.driving.alive && self.link.quic.close_reason().is_none()
    }

    /// Bytes written so far on the connection's request streams.
    pub(crate) fn bytes_out(&self) -> u64 {
        self.ledger.sent.get()
    }

    /// Sends `out` and reads its response to the end.
    pub(crate) async fn exchange(
        &mut self,
        out: &Outgoing<'_>,
        reading: &mut Reading<'_>,
        start: Instant,
    ) -> Result<Answer, Failure> {
        let head = out.target.head(true, out);
        let body = out.target.body(out);
        let sent = start.elapsed();
        let stream = drive(&mut self.driving, &self.link, self.send.send_request(head)).await?;
        let mut stream = stream.map_err(|e| self.link.stream_failure(e))?;
        let bytes = self.ledger.claim(stream.id());
        let (status, cache, backend, head) =
            self.respond(&mut stream, body, reading, start).await.map_err(|mut f| {
                f.unanswered = bytes.received.get() == 0;
                f
            })?;
        let end = start.elapsed();
        let (bytes_in, bytes_out) = (bytes.received.get(), bytes.sent.get());
        Ok(Answer { status, cache, backend, sent, written: None, head, end, bytes_in, bytes_out })
    }

    /// Writes the request's body, then reads the response: its head (status, cache,
    /// backend, when it came) and its body to the end.
    async fn respond(
        &mut self,
        stream: &mut h3::client::RequestStream<Bidi, Bytes>,
        body: Bytes,
        reading: &mut Reading<'_>,
        start: Instant,
    ) -> Result<(u16, CacheStatus, Option<http::HeaderValue>, Duration), Failure> {
        let (driving, link) = (&mut self.driving, &self.link);
        if !body.is_empty() {
            link.written(drive(driving, link, stream.send_data(body)).await?)?;
        }
        link.written(drive(driving, link, stream.finish()).await?)?;
        let resp = drive(driving, link, stream.recv_response()).await?.map_err(|e| link.stream_failure(e))?;
        let head = start.elapsed();
        let (cache, backend) = reading.head(resp.headers());
        while let Some(mut chunk) =
            drive(driving, link, stream.recv_data()).await?.map_err(|e| link.stream_failure(e))?
        {
            while chunk.has_remaining() {
                let part = chunk.chunk();
                let n = part.len();
                reading.keep_body(part);
                chunk.advance(n);
            }
        }
        Ok((resp.status().as_u16(), cache, backend, head))
    }
}

/// Polls `fut` and the connection's control stream together until `fut` completes. When
/// the connection ends first and `fut` is still pending, it never completes: it fails with
/// the connection's end.
async fn drive<F: Future>(driving: &mut Driving, link: &Link, fut: F) -> Result<F::Output, Failure> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        if !driving.alive {
            return Poll::Ready(Err(link.ended(None)));
        }
        if let Poll::Ready(e) = link.unreachable.borrow_mut().as_mut().poll(cx) {
            // The server went away since the handshake: its host answers for it.
            driving.alive = false;
            let why = format!("the server is gone: nothing listens on UDP {} (ICMP port unreachable: {e})", link.addr);
            return Poll::Ready(Err(Failure::new(ErrorKind::Reset, why)));
        }
        match driving.driver.poll_close(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(end) => {
                driving.alive = false;
                match fut.as_mut().poll(cx) {
                    Poll::Ready(out) => Poll::Ready(Ok(out)),
                    Poll::Pending => Poll::Ready(Err(link.ended(Some(&end)))),
                }
            }
        }
    })
    .await
}

impl Link {
    /// A write of the request that failed because the server stopped reading it with
    /// `H3_NO_ERROR` is no failure: it has answered already (RFC 9114, 4.1), and the answer
    /// is read next.
    fn written(&self, res: Result<(), StreamError>) -> Result<(), Failure> {
        match res {
            Err(StreamError::RemoteTerminate { code, .. }) if code == Code::H3_NO_ERROR => Ok(()),
            Err(e) => Err(self.stream_failure(e)),
            Ok(()) => Ok(()),
        }
    }

    /// How a request stream failed.
    fn stream_failure(&self, e: StreamError) -> Failure {
        let (kind, unsent) = match &e {
            StreamError::ConnectionError { 0: c, .. } => return self.connection_failure(c),
            // The server reset the stream: a request it rejected was not processed (RFC
            // 9114, 4.1.1), so it may go again on a new connection.
            StreamError::RemoteTerminate { code, .. } => (ErrorKind::Reset, *code == Code::H3_REQUEST_REJECTED),
            // GOAWAY: the server takes no new request on this connection.
            StreamError::RemoteClosing { .. } => (ErrorKind::Reset, true),
            // A frame or field section that breaks HTTP/3, found on the stream, or a head
            // over the bound (ours on the response's, the server's on the request's).
            StreamError::StreamError { .. } | StreamError::HeaderTooBig { .. } => (ErrorKind::Protocol, false),
            _ => (ErrorKind::Other, false),
        };
        Failure { unsent, ..Failure::new(kind, e) }
    }

    /// The connection ended while a request waited on it: why, from quinn when it knows
    /// (the QUIC or HTTP/3 code the peer sent, an idle timeout, a stateless reset), else
    /// from h3.
    fn ended(&self, end: Option<&ConnectionError>) -> Failure {
        match (self.quic.close_reason(), end) {
            (Some(e), _) => quic_failure(&e, false),
            (None, Some(e)) => self.connection_failure(e),
            (None, None) => {
                Failure::new(ErrorKind::Reset, "the HTTP/3 connection ended before the response was complete")
            }
        }
    }

    /// An h3 connection error: quinn's reason when the QUIC connection is closed, else h3's.
    fn connection_failure(&self, e: &ConnectionError) -> Failure {
        if let Some(reason) = self.quic.close_reason() {
            return quic_failure(&reason, false);
        }
        let kind = match e {
            ConnectionError::Local { error: h3::error::LocalError::Application { code, .. }, .. }
                if is_protocol(*code) =>
            {
                ErrorKind::Protocol
            }
            ConnectionError::Remote {
                0: h3::quic::ConnectionErrorIncoming::ApplicationClose { error_code }, ..
            } if is_protocol(Code::from(*error_code)) => ErrorKind::Protocol,
            ConnectionError::Local { .. } => ErrorKind::Other,
            _ => ErrorKind::Reset,
        };
        Failure::new(kind, format!("HTTP/3 connection error: {e}"))
    }
}

/// A UDP socket for a connection to `addr`, from `--bind`'s address or the unspecified
/// one, connected so that the kernel reports ICMP errors on it.
fn udp_socket(addr: SocketAddr, bind: Option<IpAddr>) -> std::io::Result<std::net::UdpSocket> {
    let local = match bind {
        Some(local) => {
            same_family(local, addr)?;
            local
        }
        None if addr.is_ipv4() => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        None => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let socket = std::net::UdpSocket::bind(SocketAddr::new(local, 0))?;
    socket.connect(addr)?;
    Ok(socket)
}

/// HTTP/3 and QPACK codes that say the peer broke the protocol (RFC 9114 8.1, RFC 9204 6).
fn is_protocol(code: Code) -> bool {
    [
        Code::H3_GENERAL_PROTOCOL_ERROR,
        Code::H3_STREAM_CREATION_ERROR,
        Code::H3_CLOSED_CRITICAL_STREAM,
        Code::H3_FRAME_UNEXPECTED,
        Code::H3_FRAME_ERROR,
        Code::H3_ID_ERROR,
        Code::H3_SETTINGS_ERROR,
        Code::H3_MISSING_SETTINGS,
        Code::H3_MESSAGE_ERROR,
        Code::QPACK_DECOMPRESSION_FAILED,
        Code::QPACK_ENCODER_STREAM_ERROR,
        Code::QPACK_DECODER_STREAM_ERROR,
    ]
    .contains(&code)
}

/// How a QUIC connection ended, as an error kind and a message naming the QUIC or HTTP/3
/// code. `handshake`: it ended before the handshake completed.
fn quic_failure(e: &quinn::ConnectionError, handshake: bool) -> Failure {
    use quinn::ConnectionError as E;
    let kind = match e {
        E::TimedOut if handshake => ErrorKind::ConnectTimeout,
        // The server went silent past the idle timeout: the connection is gone.
        E::TimedOut => ErrorKind::Reset,
        E::ConnectionClosed(close) if is_crypto(close.error_code) => ErrorKind::Tls,
        E::ConnectionClosed(close) if close.error_code == quinn::TransportErrorCode::CONNECTION_REFUSED => {
            ErrorKind::Refused
        }
        E::ConnectionClosed(close) if close.error_code == quinn::TransportErrorCode::NO_ERROR => ErrorKind::Reset,
        E::ConnectionClosed(_) => ErrorKind::Protocol,
        E::ApplicationClosed(close) if is_protocol(Code::from(close.error_code.into_inner())) => ErrorKind::Protocol,
        E::ApplicationClosed(_) | E::Reset => ErrorKind::Reset,
        // Found by this side: a certificate it does not trust is a TLS alert of its own.
        E::TransportError(t) if is_crypto(t.code) => ErrorKind::Tls,
        E::TransportError(_) | E::VersionMismatch => ErrorKind::Protocol,
        _ => ErrorKind::Other,
    };
    let reason = |r: &[u8]| if r.is_empty() { String::new() } else { format!(" ({})", String::from_utf8_lossy(r)) };
    let what = match e {
        E::ApplicationClosed(close) => format!(
            "the server closed the connection with {}{}",
            Code::from(close.error_code.into_inner()),
            reason(&close.reason)
        ),
        E::ConnectionClosed(close) => {
            format!("the server closed the connection with QUIC {}: {close}", code_name(close.error_code))
        }
        E::TransportError(t) => format!("QUIC {}: {t}", code_name(t.code)),
        E::Reset => "stateless reset: the server had no state for the connection".to_string(),
        E::TimedOut => "QUIC idle timeout: nothing heard from the server".to_string(),
        e => format!("QUIC: {e}"),
    };
    Failure::new(kind, what)
}

/// A QUIC transport error code by its name: `PROTOCOL_VIOLATION`, `CRYPTO_ERROR 0x12a`.
fn code_name(code: quinn::TransportErrorCode) -> String {
    if is_crypto(code) {
        format!("CRYPTO_ERROR {:#x}", u64::from(code))
    } else {
        format!("{code:?}")
    }
}

/// QUIC's codes for TLS alerts (0x100 + the alert).
fn is_crypto(code: quinn::TransportErrorCode) -> bool {
    (0x100..0x200).contains(&u64::from(code))
}

/// What the kernel says of the connection's UDP socket that quinn does not: an ICMP port
/// unreachable (nothing listening there) is a pending `ECONNREFUSED` on a connected socket,
/// which epoll reports as an error event alone. quinn never waits for those (its reads wait
/// for data), and its next send takes the error and drops it, so the handshake would run to
/// the connect timeout. This waits for it on a second descriptor of the same socket.
type Unreachable = Pin<Box<dyn Future<Output = std::io::Error>>>;

fn unreachable(socket: std::net::UdpSocket) -> std::io::Result<Unreachable> {
    use tokio::io::Interest;
    socket.set_nonblocking(true)?;
    let socket = tokio::net::UdpSocket::from_std(socket)?;
    Ok(Box::pin(async move {
        loop {
            if let Err(e) = socket.ready(Interest::ERROR).await {
                return e;
            }
            // quinn may have taken the error already (a send does): then wait for the next.
            let refused = socket.try_io(Interest::ERROR, || match socket.take_error() {
                Ok(Some(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(e),
                _ => Err(std::io::ErrorKind::WouldBlock.into()),
            });
            if let Ok(e) = refused {
                return e;
            }
        }
    }))
}

/// h3's QUIC traits over h3-quinn's, counting what each request stream carries.
mod quic_counted {
    use super::*;

    /// What one request stream carried: its HTTP/3 frames, each way.
    #[derive(Default)]
    pub(crate) struct StreamBytes {
        pub(crate) sent: Cell<u64>,
        pub(crate) received: Cell<u64>,
    }

    /// A connection's request streams: those opened and not yet claimed by their request
    /// (found by id, so requests sharing the connection never take each other's), and the
    /// bytes written on all of them.
    #[derive(Default)]
    pub(crate) struct Ledger {
        unclaimed: RefCell<Vec<(StreamId, Rc<StreamBytes>)>>,
        pub(crate) sent: Cell<u64>,
    }

    impl Ledger {
        /// The counts of stream `id`, which its request takes once it is open.
        pub(crate) fn claim(&self, id: StreamId) -> Rc<StreamBytes> {
            let mut open = self.unclaimed.borrow_mut();
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
    }

    impl<T> Counted<T> {
        pub(crate) fn new(inner: T, ledger: Rc<Ledger>) -> Self {
            Counted { inner, ledger }
        }

        fn count<S>(&self, stream: S, register: Option<StreamId>) -> Stream<S> {
            let bytes = Rc::new(StreamBytes::default());
            if let Some(id) = register {
                self.ledger.unclaimed.borrow_mut().push((id, bytes.clone()));
            }
            Stream { inner: stream, bytes, ledger: self.ledger.clone() }
        }
    }

    impl<O: quic::OpenStreams<Bytes>> quic::OpenStreams<Bytes> for Counted<O> {
        type BidiStream = Stream<O::BidiStream>;
        type SendStream = O::SendStream;

        fn poll_open_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
            self.inner.poll_open_bidi(cx).map_ok(|s| {
                let id = quic::SendStream::send_id(&s);
                self.count(s, Some(id))
            })
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
            Counted { inner: self.inner.opener(), ledger: self.ledger.clone() }
        }
    }

    /// A stream whose frames are counted.
    pub(crate) struct Stream<S> {
        inner: S,
        bytes: Rc<StreamBytes>,
        ledger: Rc<Ledger>,
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
            self.ledger.sent.set(self.ledger.sent.get() + n);
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
            let half = |inner| Stream { inner, bytes: self.bytes.clone(), ledger: self.ledger.clone() };
            (half(send), Stream { inner: recv, bytes: self.bytes, ledger: self.ledger })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn::{ApplicationClose, ConnectionClose, ConnectionError as E, TransportErrorCode as T, VarInt};

    #[test]
    fn a_connections_end_is_classified_with_its_code_named() {
        let app = |code: Code| {
            let error_code = VarInt::from_u64(code.value()).unwrap();
            E::ApplicationClosed(ApplicationClose { error_code, reason: bytes::Bytes::from_static(b"bye") })
        };
        let closed = |error_code| {
            E::ConnectionClosed(ConnectionClose { error_code, frame_type: None, reason: Default::default() })
        };
        // Found by this side (a certificate it does not trust): quinn says the code alone here.
        let found = |code: T| E::TransportError(code.into());
        // (end, during the handshake, kind, what the example says)
        let table = [
            (app(Code::H3_NO_ERROR), false, ErrorKind::Reset, "with H3_NO_ERROR (bye)"),
            (app(Code::H3_INTERNAL_ERROR), false, ErrorKind::Reset, "H3_INTERNAL_ERROR"),
            (app(Code::H3_FRAME_UNEXPECTED), false, ErrorKind::Protocol, "H3_FRAME_UNEXPECTED"),
            (app(Code::QPACK_DECOMPRESSION_FAILED), false, ErrorKind::Protocol, "QPACK_DECOMPRESSION_FAILED"),
            (closed(T::crypto(0x2a)), true, ErrorKind::Tls, "CRYPTO_ERROR 0x12a"),
            (closed(T::CONNECTION_REFUSED), true, ErrorKind::Refused, "QUIC CONNECTION_REFUSED"),
            (closed(T::NO_ERROR), false, ErrorKind::Reset, "QUIC NO_ERROR"),
            (closed(T::PROTOCOL_VIOLATION), false, ErrorKind::Protocol, "QUIC PROTOCOL_VIOLATION"),
            (found(T::crypto(48)), true, ErrorKind::Tls, "QUIC CRYPTO_ERROR 0x130"),
            (found(T::FLOW_CONTROL_ERROR), false, ErrorKind::Protocol, "QUIC FLOW_CONTROL_ERROR"),
            (E::Reset, false, ErrorKind::Reset, "stateless reset"),
            (E::TimedOut, false, ErrorKind::Reset, "idle timeout"),
            (E::TimedOut, true, ErrorKind::ConnectTimeout, "idle timeout"),
            (E::VersionMismatch, true, ErrorKind::Protocol, "version"),
            (E::LocallyClosed, false, ErrorKind::Other, "closed"),
        ];
        for (i, (end, handshake, kind, says)) in table.into_iter().enumerate() {
            let f = quic_failure(&end, handshake);
            assert_eq!(f.kind, kind, "row {i}: {}", f.message());
            assert!(f.message().contains(says), "row {i}: {}", f.message());
        }
    }
}
