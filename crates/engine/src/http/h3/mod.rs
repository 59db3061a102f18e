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
//! A connection is a handle ([`Conn`], cloned for each slot that shares it with
//! `--streams`), as HTTP/2's is ([`super::h2`]): quinn drives the QUIC connection in a
//! task of its own, and h3's connection (its control stream: SETTINGS, GOAWAY) is driven by
//! another ([`spawn_local`](tokio::task::spawn_local), on the engine thread), so that no
//! request has to poll it for the others. Each request opens its stream straight through
//! quinn, sends, and reads its response in its slot's task: nothing is spawned or sent
//! through a channel per request.
//!
//! Streams: the server's limit on concurrent requests is QUIC's `initial_max_streams_bidi`
//! transport parameter, read off the handshake ([`peer`]); a request above it waits in
//! quinn for a stream to close (in its latency, in no phase) and the report says the
//! server capped the streams, as HTTP/2's `SETTINGS_MAX_CONCURRENT_STREAMS` does. Each
//! stream may receive [`STREAM_WINDOW`](super::h2::STREAM_WINDOW) bytes unread, as over
//! HTTP/2. Flow-control stalls are QUIC's own account of them: the `STREAM_DATA_BLOCKED`
//! and `DATA_BLOCKED` frames quinn sent (barrage had a body to send and no window) and
//! those the server sent (it had a response to send and barrage's window was full; a
//! server that never says so counts none).
//!
//! Phases: DNS as over TCP; `connect` is the whole QUIC handshake, TLS 1.3 inside it (QUIC
//! carries TLS in its own packets: there is no separate TLS phase to record, so none is);
//! `wait` runs from the request handed to its stream (once it has one) to the response
//! head; `receive` from the head to the last byte. There is no `send` phase: the request's
//! bytes go into quinn's stream buffer and leave in packets the connection's own task
//! builds, so when its last byte reached the wire is not known here.
//!
//! Bytes are HTTP/3 bytes: the frames of the request's own stream, both ways (HEADERS with
//! the QPACK-encoded fields, DATA frame headers and payload). QUIC's packet headers,
//! encryption tags, acknowledgements, the handshake and the control and QPACK streams are
//! not counted, as TCP/IP headers and TLS records are not over TCP. Counting per stream
//! (not per connection) keeps each request's figure its own when several share a
//! connection.

use super::{Answer, Outgoing, Reading};
use crate::conn::{connect_failure, same_family, Connector, Endpoint, Failure};
use crate::timing::Phases;
use barrage_metrics::recorder::StreamFigures;
use barrage_metrics::{CacheStatus, ErrorKind, Phase};
use bytes::{Buf, Bytes};
use h3::error::{Code, ConnectionError, StreamError};
use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

mod peer;
mod quic_counted;

/// Most bytes of a response head (its fields as QPACK decodes them) a connection accepts;
/// larger heads fail the request (`protocol`), so a hostile server cannot grow memory.
const MAX_RESPONSE_HEAD: u64 = 256 * 1024;

/// QUIC's configuration over `tls` (which offers ALPN `h3` alone and keeps no session), for
/// `streams` requests at once on each of `connections` connections.
pub(crate) fn client_config(
    tls: Arc<rustls::ClientConfig>,
    streams: u32,
    connections: usize,
) -> Result<crate::conn::Quic, crate::EngineError> {
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| crate::EngineError::Tls(format!("QUIC needs TLS 1.3 with AES-128-GCM: {e}")))?;
    let mut transport = quinn::TransportConfig::default();
    // What a server may send a stream unread, as over HTTP/2. The connection's own window
    // stays quinn's (unbounded): only a stream's ever holds the server back, and the
    // streams in use (at most --streams) bound the whole.
    transport.stream_receive_window(super::h2::STREAM_WINDOW.into());
    Ok(crate::conn::Quic {
        crypto: Arc::new(crypto),
        transport: Arc::new(transport),
        endpoint: quinn::EndpointConfig::default(),
        streams: u64::from(streams.max(1)),
        gro: Datagrams::gro_fits(connections),
    })
}

type Bidi = quic_counted::Stream<h3_quinn::BidiStream<Bytes>>;
type Driver = h3::client::Connection<quic_counted::Counted<h3_quinn::Connection>, Bytes>;
type Sender = h3::client::SendRequest<quic_counted::Counted<h3_quinn::OpenStreams>, Bytes>;

/// An open HTTP/3 connection: a handle to open request streams on it. Cloning it gives
/// another slot its own handle to the same connection.
#[derive(Clone)]
pub(crate) struct Conn {
    send: Sender,
    state: Rc<State>,
}

/// What the requests of one connection share, beside quinn's and h3's own state.
struct State {
    quic: quinn::Connection,
    addr: SocketAddr,
    /// What each request stream carried.
    ledger: Rc<quic_counted::Ledger>,
    /// Streams open now.
    open: Cell<u64>,
    /// What was seen since the figures were last taken.
    figures: Cell<StreamFigures>,
    /// QUIC's BLOCKED frames (sent, received) already counted as stalls.
    blocked: Cell<(u64, u64)>,
    /// Why the connection is gone when quinn cannot tell: the server's host said nothing
    /// listens there any more (quinn then only knows it closed the connection itself).
    gone: RefCell<Option<String>>,
    /// h3's connection has ended: no new request goes on it.
    ended: Cell<bool>,
    /// The server sent GOAWAY: no new request goes on the connection.
    closing: Cell<bool>,
    /// Keeps the endpoint (its socket and task) as long as the connection.
    _endpoint: quinn::Endpoint,
}

impl Conn {
    /// Opens a connection to `ep`: DNS (unless the address is known), then the QUIC
    /// handshake, recorded as `connect`; marked as an opening in `phases`, so that the
    /// slot's watchdog bounds it by the connect timeout.
    pub(crate) async fn open(connector: &Connector, ep: &Endpoint, phases: &Phases) -> Result<Conn, Failure> {
        let began = Instant::now();
        phases.opening(Some(began));
        let conn = Self::handshake(connector, ep, phases, began).await;
        phases.opening(None);
        conn
    }

    async fn handshake(connector: &Connector, ep: &Endpoint, phases: &Phases, began: Instant) -> Result<Conn, Failure> {
        let q = connector.quic.as_ref().expect("an HTTP/3 run has a QUIC configuration");
        let (addr, t) = connector.address(ep, phases, began).await?;
        let socket = udp_socket(addr, connector.bind).map_err(connect_failure)?;
        let mut unreachable = socket.try_clone().and_then(unreachable).map_err(connect_failure)?;
        let runtime = Arc::new(quinn::TokioRuntime);
        let socket = Datagrams::wrap(socket, &*runtime, q.gro).map_err(connect_failure)?;
        let endpoint = quinn::Endpoint::new_with_abstract_socket(q.endpoint.clone(), None, socket, runtime)
            .map_err(connect_failure)?;
        // A configuration of the connection's own, to read the server's transport
        // parameters as its handshake brings them.
        let stream_limit = Arc::new(std::sync::atomic::AtomicU64::new(peer::UNKNOWN));
        let mut client = quinn::ClientConfig::new(Arc::new(peer::Reading::new(q.crypto.clone(), stream_limit.clone())));
        client.transport_config(q.transport.clone());
        let connecting = endpoint.connect_with(client, addr, &ep.host).map_err(|e| {
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
        let ledger = Rc::new(quic_counted::Ledger::default());
        let state = Rc::new(State {
            quic: quic.clone(),
            addr,
            ledger: ledger.clone(),
            open: Cell::new(0),
            figures: Cell::new(StreamFigures::default()),
            blocked: Cell::new((0, 0)),
            gone: RefCell::new(None),
            ended: Cell::new(false),
            closing: Cell::new(false),
            _endpoint: endpoint,
        });
        let counted = quic_counted::Counted::new(h3_quinn::Connection::new(quic), ledger);
        let (driver, send) = h3::client::builder()
            .max_field_section_size(MAX_RESPONSE_HEAD)
            .build(counted)
            .await
            .map_err(|e| state.connection_failure(&e))?;
        phases.set(Phase::Connect, t.elapsed());
        let limit = stream_limit.load(std::sync::atomic::Ordering::Relaxed);
        if limit < q.streams {
            state.count(|f| f.cap = limit);
        }
        drive(driver, unreachable, state.clone());
        Ok(Conn { send, state })
    }

    /// Whether a new request may go on the connection: it is up, and no request found the
    /// server going away (h3 reads GOAWAY off the control stream, and tells of it only by
    /// refusing the next request, which is sent again on a new connection, counted).
    pub(crate) fn usable(&self) -> bool {
        !self.state.ended.get() && !self.state.closing.get()
    }

    /// Whether `self` and `other` are handles to the same connection.
    pub(crate) fn same(&self, other: &Conn) -> bool {
        Rc::ptr_eq(&self.state, &other.state)
    }

    /// What the connection saw of its streams since last asked: the most open at once, the
    /// server's limit when it was below `--streams`, and the flow-control stalls QUIC's
    /// BLOCKED frames told of.
    pub(crate) fn take_figures(&self) -> StreamFigures {
        let s = &self.state;
        let mut f = s.figures.get();
        s.figures.set(StreamFigures { most_open: s.open.get(), ..StreamFigures::default() });
        let frames = s.quic.stats();
        let blocked = (
            frames.frame_tx.stream_data_blocked + frames.frame_tx.data_blocked,
            frames.frame_rx.stream_data_blocked + frames.frame_rx.data_blocked,
        );
        let before = s.blocked.replace(blocked);
        f.send_stalls += blocked.0.saturating_sub(before.0);
        f.recv_stalls += blocked.1.saturating_sub(before.1);
        f
    }

    /// Sends `out` on a new stream and reads its response to the end.
    pub(crate) async fn exchange(
        &mut self,
        out: &Outgoing<'_>,
        reading: &mut Reading<'_>,
        start: Instant,
    ) -> Result<Answer, Failure> {
        let head = out.target.h3_head(out);
        let body = out.target.body(out);
        let state = &*self.state;
        let sent = start.elapsed();
        let mut stream = self.send.send_request(head).await.map_err(|e| state.stream_failure(e))?;
        let bytes = state.ledger.claim(stream.id());
        // Above the server's limit the stream waited for another to close: the request was
        // handed to it then. That wait is in the request's latency but not in a phase.
        let sent = bytes.opened_late.get().map_or(sent, |t| t.saturating_duration_since(start));
        let _open = Open::new(state);
        let (status, cache, backend, head) =
            state.respond(&mut stream, body, reading, start).await.map_err(|mut f| {
                f.unanswered &= bytes.received.get() == 0;
                f
            })?;
        let end = start.elapsed();
        let (bytes_in, bytes_out) = (bytes.received.get(), bytes.sent.get());
        Ok(Answer { status, cache, backend, sent, written: None, head, end, bytes_in, bytes_out })
    }
}

/// Drives h3's connection (its control stream: SETTINGS, GOAWAY) in a task of its own
/// until it ends, watching the socket for the server's host saying nothing listens there
/// any more. It ends by itself once every handle is dropped (h3 then closes the
/// connection with `H3_NO_ERROR`), or when the server closes it or it fails.
fn drive(mut driver: Driver, unreachable: Unreachable, state: Rc<State>) {
    tokio::task::spawn_local(async move {
        tokio::select! {
            _ = poll_fn(|cx| driver.poll_close(cx)) => {}
            e = unreachable => {
                let why = format!(
                    "the server is gone: nothing listens on UDP {} (ICMP port unreachable: {e})",
                    state.addr
                );
                *state.gone.borrow_mut() = Some(why);
                // The requests waiting on the connection fail with it, and say why.
                state.quic.close(quinn::VarInt::from_u32(0), b"unreachable");
            }
        }
        state.ended.set(true);
    });
}

impl State {
    fn count(&self, f: impl FnOnce(&mut StreamFigures)) {
        let mut figures = self.figures.get();
        f(&mut figures);
        self.figures.set(figures);
    }

    /// Writes the request's body, then reads the response: its head (status, cache,
    /// backend, when it came) and its body to the end.
    async fn respond(
        &self,
        stream: &mut h3::client::RequestStream<Bidi, Bytes>,
        body: Bytes,
        reading: &mut Reading<'_>,
        start: Instant,
    ) -> Result<(u16, CacheStatus, Option<http::HeaderValue>, Duration), Failure> {
        if !body.is_empty() {
            self.written(stream.send_data(body).await)?;
        }
        self.written(stream.finish().await)?;
        let resp = stream.recv_response().await.map_err(|e| self.stream_failure(e))?;
        let head = start.elapsed();
        let (cache, backend) = reading.head(resp.headers(), |keep| keep.clone_from(resp.headers()));
        while let Some(mut chunk) = stream.recv_data().await.map_err(|e| self.stream_failure(e))? {
            while chunk.has_remaining() {
                let part = chunk.chunk();
                let n = part.len();
                reading.keep_body(part);
                chunk.advance(n);
            }
        }
        Ok((resp.status().as_u16(), cache, backend, head))
    }

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

    /// How a request stream failed. A request the server rejected (`H3_REQUEST_REJECTED`)
    /// was not processed (RFC 9114, 4.1.1), nor one a GOAWAY stopped before it went: either
    /// may go again on a new connection, as HTTP/2's refused streams do.
    fn stream_failure(&self, e: StreamError) -> Failure {
        let (kind, why, unprocessed) = match &e {
            StreamError::ConnectionError { 0: c, .. } => return self.connection_failure(c),
            StreamError::RemoteTerminate { code, .. } => {
                // A code that says the request broke the protocol is `protocol`, as HTTP/2's.
                let kind = if is_protocol(*code) { ErrorKind::Protocol } else { ErrorKind::Reset };
                (kind, format!("the server reset the stream ({code})"), *code == Code::H3_REQUEST_REJECTED)
            }
            StreamError::RemoteClosing { .. } => {
                self.closing.set(true);
                (
                    ErrorKind::Reset,
                    "the server sent GOAWAY: the request was not sent on its connection".to_string(),
                    true,
                )
            }
            // A frame or field section that breaks HTTP/3, found on the stream, or a head
            // over the bound (ours on the response's, the server's on the request's).
            StreamError::StreamError { .. } | StreamError::HeaderTooBig { .. } => {
                (ErrorKind::Protocol, e.to_string(), false)
            }
            _ => (ErrorKind::Other, e.to_string(), false),
        };
        let mut f = Failure::new(kind, why);
        f.unprocessed = unprocessed;
        f.unsent = matches!(e, StreamError::RemoteClosing { .. });
        f
    }

    /// An h3 connection error: why the connection is gone when the driver saw it, else
    /// quinn's reason when the QUIC connection is closed (the QUIC or HTTP/3 code the peer
    /// sent, an idle timeout, a stateless reset), else h3's. Only the connection ending
    /// under a request can leave it unanswered (a stale connection, whose request may go
    /// again on a new one): a stream the server reset was answered, by the reset.
    fn connection_failure(&self, e: &ConnectionError) -> Failure {
        let f = self.connection_end(e);
        Failure { unanswered: true, ..f }
    }

    fn connection_end(&self, e: &ConnectionError) -> Failure {
        if let Some(why) = &*self.gone.borrow() {
            return Failure::new(ErrorKind::Reset, why.clone());
        }
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

/// A stream counted as open while its request lives.
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

/// A connection's UDP socket as quinn sees it, with or without UDP GRO. quinn sizes an
/// endpoint's receive buffer for what its socket may hand over at once: with GRO (quinn
/// turns it on where the kernel has it), 64 coalesced datagrams of 1,472 bytes for each of a
/// batch's 32, [`GRO_BUFFER`]: 2.9 MiB of address space, and a run has an endpoint per
/// connection (`-c 976`: 4.2 GiB, and an abort under `ulimit -v`). Without, a batch is 32
/// datagrams: 46 KiB. GRO takes a quarter to a third of the client's CPU off large responses
/// (measured: 300 responses of 1 MiB over 4 connections, 0.42-0.51 s of CPU with it,
/// 0.66-0.67 s without), so a run keeps it while its buffers take at most [`GRO_BUDGET`] together and
/// the process's address space is not limited (`ulimit -v`, against which the CLI checks
/// connections at the size without GRO).
#[derive(Debug)]
struct Datagrams(Arc<dyn quinn::AsyncUdpSocket>);

/// What quinn's receive buffer takes per endpoint with GRO: 1,472 × 64 × 32 bytes.
const GRO_BUFFER: u64 = 1472 * 64 * 32;

/// The most address space the receive buffers of a run's connections take with GRO: up to
/// 89 connections have it.
const GRO_BUDGET: u64 = 256 << 20;

impl Datagrams {
    /// Whether `connections` connections receive with GRO (see [`Datagrams`]).
    fn gro_fits(connections: usize) -> bool {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes the struct it is given, nothing else.
        let unlimited =
            unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0 && limit.rlim_cur == libc::RLIM_INFINITY;
        unlimited && (connections as u64).saturating_mul(GRO_BUFFER) <= GRO_BUDGET
    }

    /// `socket` under `runtime`, with `gro` (quinn's own socket) or without (this one).
    fn wrap(
        socket: std::net::UdpSocket,
        runtime: &dyn quinn::Runtime,
        gro: bool,
    ) -> std::io::Result<Arc<dyn quinn::AsyncUdpSocket>> {
        use std::os::fd::AsRawFd;
        let fd = socket.as_raw_fd();
        let inner = runtime.wrap_udp_socket(socket)?;
        if gro {
            return Ok(inner);
        }
        let off: libc::c_int = 0;
        // SAFETY: `fd` is the socket `inner` owns and keeps open; the option value is a
        // correctly sized int.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_UDP,
                libc::UDP_GRO,
                (&off as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        // A kernel without UDP_GRO never coalesces: nothing to turn off.
        if rc != 0 && inner.max_receive_segments() > 1 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Arc::new(Datagrams(inner)))
    }
}

impl quinn::AsyncUdpSocket for Datagrams {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn quinn::UdpPoller>> {
        self.0.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &quinn::udp::Transmit) -> std::io::Result<()> {
        self.0.try_send(transmit)
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [std::io::IoSliceMut<'_>],
        meta: &mut [quinn::udp::RecvMeta],
    ) -> Poll<std::io::Result<usize>> {
        self.0.poll_recv(cx, bufs, meta)
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.0.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        1
    }

    fn may_fragment(&self) -> bool {
        self.0.may_fragment()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// GRO's receive buffers (2.9 MiB a connection) while 89 connections' fit the budget,
    /// and never under an address-space limit (which the CLI checks at the size without).
    #[test]
    fn gro_only_while_its_buffers_fit_the_budget() {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes the struct it is given, nothing else.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) }, 0);
        let unlimited = limit.rlim_cur == libc::RLIM_INFINITY;
        assert_eq!((Datagrams::gro_fits(1), Datagrams::gro_fits(89)), (unlimited, unlimited));
        assert!(!Datagrams::gro_fits(90));
        assert!(!Datagrams::gro_fits(usize::MAX), "no overflow");
    }

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
