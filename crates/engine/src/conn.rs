//! Connections with every phase timed: DNS, TCP connect, TLS handshake; the protocols on
//! top are in [`crate::http`] and [`crate::kv`]. HTTP/3
//! is QUIC over UDP, with the same rustls configuration and DNS: [`crate::http::h3`].

use barrage_metrics::ErrorKind;
use barrage_plan::{Load, Plan, Protocol, TlsOptions};
use rustls::pki_types::ServerName;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A failed request: its kind for counting, and the cause, formatted only when an example
/// message is still wanted.
#[derive(Debug)]
pub struct Failure {
    /// The kind.
    pub kind: ErrorKind,
    /// The cause.
    pub cause: Box<dyn std::error::Error + Send + Sync>,
    /// The connection ended before any of the request was written: safe to send again.
    pub unsent: bool,
    /// Nothing of the response had arrived when the request failed.
    pub unanswered: bool,
    /// The server said it did not process the request (HTTP/2: it refused the stream, or
    /// the stream was above its GOAWAY's last stream id; HTTP/3: it rejected the request,
    /// or a GOAWAY came before it went): safe to send again.
    pub unprocessed: bool,
}

impl Failure {
    pub(crate) fn new(kind: ErrorKind, cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Failure { kind, cause: cause.into(), unsent: false, unanswered: false, unprocessed: false }
    }

    /// The server closed (or reset) the connection before answering anything: on a
    /// kept-alive connection, the request may go once more on a new one if nothing of it
    /// was written, or if sending it twice is harmless (`idempotent`), as browsers and
    /// hyper's pool do.
    pub fn stale(&self, idempotent: bool) -> bool {
        self.kind == ErrorKind::Reset && (self.unsent || (idempotent && self.unanswered))
    }

    /// One line: the cause and its sources.
    pub fn message(&self) -> String {
        let mut msg = self.cause.to_string();
        let mut src = self.cause.source();
        while let Some(s) = src {
            let s_text = s.to_string();
            if !msg.contains(&s_text) {
                msg.push_str(": ");
                msg.push_str(&s_text);
            }
            src = s.source();
        }
        msg
    }
}

/// Where and how to connect for one target.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// Host as written in the URL (name or IP literal, without brackets).
    pub host: String,
    /// Port.
    pub port: u16,
    /// HTTPS.
    pub tls: bool,
    /// Address from `--resolve`, or the IP literal: no DNS lookup then.
    pub fixed_addr: Option<SocketAddr>,
}

impl Endpoint {
    /// The endpoint of `url` under the plan's `--resolve` overrides.
    pub fn of(url: &http::Uri, plan: &Plan) -> Endpoint {
        let tls = url.scheme_str() == Some("https");
        let host = url.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']').to_string();
        let port = url.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let literal = host.parse::<std::net::IpAddr>().ok().map(|ip| SocketAddr::new(ip, port));
        let fixed_addr = plan.resolve.get(&(host.clone(), port)).copied().or(literal);
        Endpoint { host, port, tls, fixed_addr }
    }
}

/// Whether HTTP/2 connections may send in rounds: every request of the run (its load's, and
/// each group's) goes as soon as its worker is free. Not in an open loop, whose requests go
/// when due, nor with a think time (the load's, or a flow step's), whose requests go when
/// the simulated user sends them.
fn back_to_back(plan: &Plan) -> bool {
    let eager = |l: &Load| matches!(l, Load::Closed { think_time, .. } if think_time.is_zero());
    let no_think = |s: &barrage_plan::flow::Step| s.think.is_none_or(|(_, most)| most.is_zero());
    eager(&plan.load)
        && plan.scenario.as_ref().is_none_or(|s| {
            s.groups.iter().all(|g| eager(&g.load)) && s.flows.iter().flat_map(|f| &f.steps).all(no_think)
        })
}

/// The QUIC side of a run's connector: TLS over the run's rustls configuration, the
/// transport settings, and the endpoint configuration each connection's endpoint is made
/// with. Built by `http::h3` (see its `client_config`), held here so that the connector
/// names no protocol above it.
pub(crate) struct Quic {
    pub(crate) crypto: Arc<quinn::crypto::rustls::QuicClientConfig>,
    pub(crate) transport: Arc<quinn::TransportConfig>,
    pub(crate) endpoint: quinn::EndpointConfig,
    /// `--streams`: a server limit below it is reported.
    pub(crate) streams: u64,
    /// The connections receive with UDP GRO (see `http::h3`'s `Datagrams`).
    pub(crate) gro: bool,
}

/// Shared, immutable connection settings of a run.
pub struct Connector {
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The run asked for HTTP/2 (`--http2`).
    asks_http2: bool,
    /// `--streams`: requests an HTTP/2 connection carries at once (its windows are sized
    /// for them; HTTP/3's are in `quic`).
    streams: u32,
    /// HTTP/2 connections send their requests in rounds: `--rounds`, in a closed loop
    /// without think time (see [`crate::http::h2::Conn::handshake`]).
    in_rounds: bool,
    /// `--http3`: QUIC's configuration, over the same rustls configuration as TLS.
    pub(crate) quic: Option<Quic>,
    connect_timeout: Duration,
    /// `--bind`: the local address connections are made from.
    pub(crate) bind: Option<std::net::IpAddr>,
}

impl Connector {
    /// Builds the TLS configuration when any target is HTTPS; an HTTP/3 run's QUIC
    /// configuration, over it, is `quic`'s (the HTTP/3 client's), so this floor names none.
    pub fn new(
        plan: &Plan,
        needs_tls: bool,
        quic: impl FnOnce(Arc<rustls::ClientConfig>, u32, usize) -> Result<Quic, crate::EngineError>,
    ) -> Result<Connector, crate::EngineError> {
        // Redis and memcached negotiate no application protocol: they get no ALPN. HTTP/3
        // offers h3 alone: a QUIC server that does not speak it fails the handshake.
        let alpn: &[&[u8]] = match &plan.protocol {
            Protocol::Kv(_) => &[],
            Protocol::Http3 { .. } => &[b"h3"],
            Protocol::Http2 { .. } => &[b"h2", b"http/1.1"],
            Protocol::Http1 { .. } => &[b"http/1.1"],
        };
        let http3 = matches!(plan.protocol, Protocol::Http3 { .. });
        let tls = if needs_tls || http3 { Some(Arc::new(tls_config(&plan.tls, alpn)?)) } else { None };
        let streams = plan.protocol.streams();
        let quic = match (&tls, http3) {
            (Some(tls), true) => Some(quic(tls.clone(), streams, plan.connections())?),
            _ => None,
        };
        Ok(Connector {
            tls,
            asks_http2: matches!(plan.protocol, Protocol::Http2 { .. }),
            streams,
            in_rounds: matches!(plan.protocol, Protocol::Http2 { rounds: true, .. }) && back_to_back(plan),
            quic,
            connect_timeout: plan.connect_timeout,
            bind: plan.bind,
        })
    }

    /// Whether the run asked for HTTP/2.
    pub(crate) fn asks_http2(&self) -> bool {
        self.asks_http2
    }

    /// `--streams`.
    pub(crate) fn streams(&self) -> u32 {
        self.streams
    }

    /// Whether HTTP/2 connections send their requests in rounds.
    pub(crate) fn in_rounds(&self) -> bool {
        self.in_rounds
    }

    /// Opens a stream to `ep` as [`Connector::open`] does; with it, the protocol the server
    /// chose by ALPN (HTTP/2 when it said `h2`; over cleartext, the run's choice).
    pub async fn connect(&self, ep: &Endpoint, phases: &crate::timing::Phases) -> Result<(Stream, bool), Failure> {
        let stream = self.open(ep, phases).await?;
        let h2 = match &stream {
            Stream::Right(tls) => tls.get_ref().1.alpn_protocol() == Some(b"h2"),
            Stream::Left(_) => self.asks_http2,
        };
        Ok((stream, h2))
    }

    /// How a connection to `ep` that outlasted the connect timeout failed.
    pub(crate) fn timed_out(&self, ep: &Endpoint) -> Failure {
        Failure::new(
            ErrorKind::ConnectTimeout,
            format!("connecting to {}:{} took longer than {:?}", ep.host, ep.port, self.connect_timeout),
        )
    }

    /// Opens a stream to `ep` (TCP, then TLS when the endpoint asks for it), timing DNS,
    /// connect and TLS into `phases`. The opening is marked there while under way, for the
    /// slot's watchdog to bound by the connect timeout (a key-value connection's opening is
    /// bounded by its caller).
    pub(crate) async fn open(&self, ep: &Endpoint, phases: &crate::timing::Phases) -> Result<Stream, Failure> {
        use barrage_metrics::Phase;
        let began = Instant::now();
        phases.opening(Some(began));
        let (addr, t) = self.address(ep, phases, began).await?;
        let tcp = match self.bind {
            None => TcpStream::connect(addr).await,
            Some(local) => connect_from(local, addr).await,
        }
        .map_err(connect_failure)?;
        phases.set(Phase::Connect, t.elapsed());
        // Requests are small and latency is what we measure: never wait for Nagle.
        let _ = tcp.set_nodelay(true);
        let stream = match (&self.tls, ep.tls) {
            (Some(cfg), true) => {
                let t = Instant::now();
                // Boxed: rustls's state is kilobytes, which a cleartext request's future
                // would otherwise carry too.
                let tls = Box::pin(self.handshake(cfg, ep, tcp)).await?;
                phases.set(Phase::Tls, t.elapsed());
                Stream::Right(Box::new(tls))
            }
            _ => Stream::Left(tcp),
        };
        phases.opening(None);
        Ok(stream)
    }

    /// The address of `ep`, for an opening that `began` then: `--resolve`'s or the IP
    /// literal, else looked up (the DNS phase). With it, when the lookup ended (`began`
    /// when there was none): when the connect starts.
    pub(crate) async fn address(
        &self,
        ep: &Endpoint,
        phases: &crate::timing::Phases,
        began: Instant,
    ) -> Result<(SocketAddr, Instant), Failure> {
        match ep.fixed_addr {
            Some(a) => Ok((a, began)),
            None => {
                let addr = resolve(ep).await?;
                let looked_up = Instant::now();
                phases.set(barrage_metrics::Phase::Dns, looked_up - began);
                Ok((addr, looked_up))
            }
        }
    }

    /// The bound on opening a connection.
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    async fn handshake(
        &self,
        cfg: &Arc<rustls::ClientConfig>,
        ep: &Endpoint,
        tcp: TcpStream,
    ) -> Result<TlsStream<TcpStream>, Failure> {
        let name = ServerName::try_from(ep.host.clone())
            .map_err(|e| Failure::new(ErrorKind::Tls, format!("'{}' is not a valid TLS server name: {e}", ep.host)))?;
        tokio_rustls::TlsConnector::from(cfg.clone()).connect(name, tcp).await.map_err(|e| {
            let kind = match e.kind() {
                io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted | io::ErrorKind::BrokenPipe => {
                    ErrorKind::Reset
                }
                _ => ErrorKind::Tls,
            };
            Failure::new(kind, e)
        })
    }
}

/// Connects to `addr` from `local` (any free port of it). A target of the other address
/// family cannot be reached from it: refused as unreachable, with both addresses said.
async fn connect_from(local: std::net::IpAddr, addr: SocketAddr) -> io::Result<TcpStream> {
    same_family(local, addr)?;
    let socket = if local.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.bind(SocketAddr::new(local, 0))?;
    socket.connect(addr).await
}

/// A target of another address family than `--bind`'s cannot be reached from it: unreachable,
/// with both addresses said.
pub(crate) fn same_family(local: std::net::IpAddr, addr: SocketAddr) -> io::Result<()> {
    if local.is_ipv4() != addr.is_ipv4() {
        return Err(io::Error::new(
            io::ErrorKind::NetworkUnreachable,
            format!("{addr} cannot be reached from --bind {local} (another address family)"),
        ));
    }
    Ok(())
}

async fn resolve(ep: &Endpoint) -> Result<SocketAddr, Failure> {
    let mut addrs = tokio::net::lookup_host((ep.host.as_str(), ep.port))
        .await
        .map_err(|e| Failure::new(ErrorKind::Dns, format!("resolving '{}': {e}", ep.host)))?;
    addrs.next().ok_or_else(|| Failure::new(ErrorKind::Dns, format!("'{}' resolved to no address", ep.host)))
}

pub(crate) fn connect_failure(e: io::Error) -> Failure {
    let kind = match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
        io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable => ErrorKind::Unreachable,
        io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
        io::ErrorKind::ConnectionReset => ErrorKind::Reset,
        _ => ErrorKind::Other,
    };
    Failure::new(kind, e)
}

/// The kind of a failed read or write on an open connection (rustls reports its failures
/// as invalid data).
fn io_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => ErrorKind::Reset,
        io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable => ErrorKind::Unreachable,
        io::ErrorKind::InvalidData => ErrorKind::Tls,
        _ => ErrorKind::Other,
    }
}

/// A failed read or write on an open connection, classified.
pub(crate) fn io_failure(e: io::Error) -> Failure {
    Failure::new(io_error_kind(&e), e)
}

fn tls_config(opts: &TlsOptions, alpn: &[&[u8]]) -> Result<rustls::ClientConfig, crate::EngineError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| crate::EngineError::Tls(e.to_string()))?;
    let mut cfg = if opts.insecure {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(NoVerify(provider))).with_no_client_auth()
    } else {
        builder.with_root_certificates(roots(opts)?).with_no_client_auth()
    };
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    // Every new connection pays a full handshake, like curl in a loop, so the TLS phase
    // measures what a new client costs the server.
    cfg.resumption = rustls::client::Resumption::disabled();
    Ok(cfg)
}

fn roots(opts: &TlsOptions) -> Result<rustls::RootCertStore, crate::EngineError> {
    let mut roots = rustls::RootCertStore::empty();
    match &opts.cacert {
        Some(path) => {
            let pem = barrage_metrics::limits::read_capped(path, barrage_plan::limits::MAX_CA_FILE)
                .map_err(|e| crate::EngineError::CaCert(path.clone(), e.to_string()))?;
            let certs: Vec<_> = rustls_pemfile::certs(&mut &pem[..])
                .collect::<Result<_, _>>()
                .map_err(|e| crate::EngineError::CaCert(path.clone(), e.to_string()))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(crate::EngineError::CaCert(path.clone(), "no PEM certificate in the file".into()));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    Ok(roots)
}

/// `--insecure`: accepts any certificate, still checking handshake signatures.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// TCP or TLS: tokio-util's `Either` forwards reads and writes to whichever it holds.
pub type Stream = tokio_util::either::Either<TcpStream, Box<TlsStream<TcpStream>>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// HTTP/2 rounds only where every request goes as soon as its worker is free.
    #[test]
    fn only_a_closed_loop_without_think_time_sends_in_rounds() {
        let target = || vec![barrage_plan::Target::new(http::Method::GET, "http://127.0.0.1:1/").unwrap()];
        let closed = |think_ms| Load::Closed { concurrency: 4, think_time: Duration::from_millis(think_ms) };
        let open = Load::Open { pacer: barrage_plan::Pacer::Constant { rate: 100.0 }, max_in_flight: 4 };
        let table = [(closed(0), true), (closed(10), false), (open, false)];
        for (load, rounds) in &table {
            assert_eq!(back_to_back(&Plan::new(target(), load.clone())), *rounds, "{load:?}");
        }
        // A flow's step with a think time: its user sends the next request, not the loop.
        for (think, rounds) in [("", true), ("think = \"100ms\"", false), ("think = \"0s\"", true)] {
            let text = format!("[[flow.f.step]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/\"\n{think}\n");
            let (scenario, targets) =
                barrage_plan::scenario::parse(&text, "t.toml", std::path::Path::new("."), &[], &closed(0)).unwrap();
            let mut plan = Plan::new(targets, closed(0));
            plan.scenario = Some(Arc::new(scenario));
            assert_eq!(back_to_back(&plan), rounds, "{think}");
        }
    }

    #[test]
    fn unreachable_networks_and_hosts_are_their_own_kind() {
        let table = [
            (io::Error::from(io::ErrorKind::NetworkUnreachable), ErrorKind::Unreachable),
            (io::Error::from(io::ErrorKind::HostUnreachable), ErrorKind::Unreachable),
            (io::Error::from_raw_os_error(libc::ENETUNREACH), ErrorKind::Unreachable),
            (io::Error::from_raw_os_error(libc::EHOSTUNREACH), ErrorKind::Unreachable),
            (io::Error::from_raw_os_error(libc::ECONNREFUSED), ErrorKind::Refused),
            (io::Error::from_raw_os_error(libc::ETIMEDOUT), ErrorKind::ConnectTimeout),
            (io::Error::from_raw_os_error(libc::EMFILE), ErrorKind::Other),
        ];
        for (e, kind) in table {
            let text = e.to_string();
            assert_eq!(connect_failure(e).kind, kind, "{text}");
        }
        assert_eq!(io_failure(io::Error::from_raw_os_error(libc::EHOSTUNREACH)).kind, ErrorKind::Unreachable);
    }

    #[test]
    fn only_unanswered_closes_of_idempotent_requests_or_unsent_ones_are_stale() {
        let closed = |unsent, unanswered, kind| Failure { unsent, unanswered, ..Failure::new(kind, "x") };
        // (failure, idempotent, stale)
        let table = [
            (closed(false, true, ErrorKind::Reset), true, true),
            (closed(false, true, ErrorKind::Reset), false, false),
            (closed(true, true, ErrorKind::Reset), false, true),
            (closed(true, true, ErrorKind::Protocol), true, false),
            (closed(false, false, ErrorKind::Reset), true, false),
            (closed(false, true, ErrorKind::Protocol), true, false),
            (closed(false, true, ErrorKind::RequestTimeout), true, false),
        ];
        for (i, (f, idempotent, stale)) in table.into_iter().enumerate() {
            assert_eq!(f.stale(idempotent), stale, "row {i}");
        }
    }
}
