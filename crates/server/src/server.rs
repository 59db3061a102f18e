//! Threads, sockets and connections: one listening socket shared by `threads` OS threads,
//! each running a current-thread tokio runtime that accepts on it and serves the
//! connections it accepted. No work moves between threads, so nothing on the request
//! path is shared except the request counter (and, with
//! [`ServeConfig::max_concurrency`](crate::ServeConfig::max_concurrency), the semaphore
//! that bounds requests in service across all threads).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;

use crate::handler::{self, ServerState};
use crate::{tls, ServeConfig, ServeError};

/// How long connections get to finish in-flight requests at shutdown before they are dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);
/// A client that has not finished the TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a failed accept: errors such as EMFILE repeat at once, and retrying in a
/// tight loop would starve the connections already open.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);
/// Pending connections the kernel queues; std's default of 128 overflows when a load
/// generator opens hundreds of connections at once.
const LISTEN_BACKLOG: i32 = 1024;

type HttpBuilder = auto::Builder<TokioExecutor>;

/// A started origin. It serves until [`RunningServer::shutdown`] or drop.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    url: String,
    ca_path: Option<PathBuf>,
    /// The CA file is ours to remove (we chose its path in the temp directory).
    remove_ca: bool,
    state: Arc<ServerState>,
    shutdown: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
}

impl RunningServer {
    /// Binds `config.listen`, makes the certificates when TLS is on, and starts the serving
    /// threads. When it returns the socket is bound and listening, so connections made
    /// right away are queued, not refused.
    pub fn start(config: ServeConfig) -> Result<RunningServer, ServeError> {
        if config.http3 && !config.tls {
            let reason = "HTTP/3 runs over QUIC, which is always encrypted: serve TLS too".to_string();
            return Err(ServeError::Config { field: "http3", reason });
        }
        let mut state = ServerState::new(&config)?;
        let (listener, udp) = bind_both(config.listen, config.http3)?;
        let addr = listener.local_addr()?;
        let resumed = state.handshakes.as_ref().map(|h| h.resumed.clone()).unwrap_or_default();
        let tls = setup_tls(&config, addr, resumed)?;
        if udp.is_some() {
            // Clients that came over TCP learn that HTTP/3 answers on the same port.
            state.alt_svc = Some(
                http::HeaderValue::from_str(&format!("h3=\":{}\"; ma=86400", addr.port())).expect("a valid header"),
            );
        }
        let state = Arc::new(state);
        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut server = RunningServer {
            addr,
            url: url_for(addr, config.tls),
            ca_path: tls.ca_path,
            remove_ca: tls.remove_ca,
            state: state.clone(),
            shutdown,
            threads: Vec::new(),
        };
        let max_streams = config.max_streams.max(1);
        let ctx = ConnContext { state: state.clone(), builder: Arc::new(http_builder(max_streams)), tls: tls.acceptor };
        // On an error part-way, dropping `server` stops the threads already started.
        if let (Some(udp), Some(quic)) = (udp, tls.quic) {
            let h3 = crate::h3::Listener::new(udp, quic, state, thread_count(config.threads), max_streams)?;
            let rx = shutdown_rx.clone();
            server.threads.push(std::thread::Builder::new().name("barrage-serve-h3".into()).spawn(move || h3.run(rx))?);
        }
        for i in 0..thread_count(config.threads) {
            let worker = Worker::new(listener.try_clone()?, ctx.clone(), shutdown_rx.clone())?;
            let thread = std::thread::Builder::new().name(format!("barrage-serve-{i}")).spawn(move || worker.run())?;
            server.threads.push(thread);
        }
        Ok(server)
    }

    /// The address listened on, with the real port when 0 was asked for.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL to send requests to: `http://127.0.0.1:PORT`, or `https://…` with TLS
    /// (the certificate covers the address). A wildcard listen address becomes loopback.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// With TLS, the handshakes this origin has completed (as `/_barrage/stats` says them).
    pub fn handshakes(&self) -> Option<crate::Handshakes> {
        let h = self.state.handshakes.as_ref()?;
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Some(crate::Handshakes { tls: n(&h.tls), quic: n(&h.quic), resumed: n(&h.resumed) })
    }

    /// Whether HTTP/3 is served too (UDP, same address and port).
    pub fn http3(&self) -> bool {
        self.state.alt_svc.is_some()
    }

    /// The CA certificate (PEM) to trust, when TLS is on.
    pub fn ca_path(&self) -> Option<&Path> {
        self.ca_path.as_deref()
    }

    /// Swaps the origin's shape while it serves: requests arriving from now on meet it,
    /// those in progress finish under the old one, no connection is touched. With the same
    /// capacity, the queue stays as it is.
    pub fn set_shape(&self, shape: crate::Shape) -> Result<(), ServeError> {
        self.state.set_shape(shape)
    }

    /// The shape in force.
    pub fn shape(&self) -> crate::Shape {
        self.state.live().shape.clone()
    }

    /// How many requests reached this origin so far, not counting `/_barrage/stats`.
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::Relaxed)
    }

    /// Stops accepting, gives open connections a short grace to finish in-flight requests,
    /// drops the rest, and joins the threads.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shutdown.send_replace(true);
        for thread in self.threads.drain(..) {
            // A panicked server thread has nothing left to clean up.
            let _ = thread.join();
        }
        self.state.flush_log();
        if self.remove_ca {
            if let Some(path) = &self.ca_path {
                let _ = std::fs::remove_file(path);
            }
            self.remove_ca = false;
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Tries of a free port that is free for UDP too, when HTTP/3 wants one and port 0 was asked.
const PORT_TRIES: usize = 16;

/// Binds `addr` for TCP and, with `udp`, the same address and port for UDP (HTTP/3): for
/// port 0, a free TCP port whose UDP twin is free too.
fn bind_both(addr: SocketAddr, udp: bool) -> Result<(std::net::TcpListener, Option<std::net::UdpSocket>), ServeError> {
    if !udp {
        return Ok((bind(addr)?, None));
    }
    let tries = if addr.port() == 0 { PORT_TRIES } else { 1 };
    let mut last = None;
    for _ in 0..tries {
        let listener = bind(addr)?;
        let bound = SocketAddr::new(addr.ip(), listener.local_addr()?.port());
        match std::net::UdpSocket::bind(bound) {
            Ok(socket) => return Ok((listener, Some(socket))),
            Err(source) => last = Some(ServeError::Bind { addr: bound, source }),
        }
    }
    Err(last.expect("at least one try"))
}

fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, ServeError> {
    let bind_err = |source| ServeError::Bind { addr, source };
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Lets a restarted server take its port back while old connections sit in TIME_WAIT.
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into()).map_err(bind_err)?;
    socket.listen(LISTEN_BACKLOG).map_err(bind_err)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// What TLS setup gives the server.
#[derive(Default)]
struct TlsSetup {
    acceptor: Option<TlsAcceptor>,
    /// QUIC's rustls configuration.
    quic: Option<Arc<rustls::ServerConfig>>,
    ca_path: Option<PathBuf>,
    /// The CA file is ours to remove.
    remove_ca: bool,
}

/// The TLS acceptor and QUIC configuration, the CA path, and whether that path is ours to
/// remove; resumed sessions count into `resumed`.
fn setup_tls(config: &ServeConfig, addr: SocketAddr, resumed: Arc<AtomicU64>) -> Result<TlsSetup, ServeError> {
    if !config.tls {
        return Ok(TlsSetup::default());
    }
    let tls = tls::setup(addr.ip(), config.tls_cert.as_ref(), resumed)?;
    let (acceptor, quic) = (Some(TlsAcceptor::from(tls.config)), Some(tls.quic));
    // With the caller's certificate, the caller has the CA too.
    let Some(ca_pem) = &tls.ca_pem else { return Ok(TlsSetup { acceptor, quic, ..TlsSetup::default() }) };
    let (path, ours) = match &config.ca_out {
        Some(path) => {
            barrage_metrics::secrets::write(path, ca_pem, false)
                .map_err(|source| ServeError::CaWrite { path: path.clone(), source })?;
            (path.clone(), false)
        }
        None => (write_temporary_ca(ca_pem, addr.port())?, true),
    };
    Ok(TlsSetup { acceptor, quic, ca_path: Some(path), remove_ca: ours })
}

/// Writes the CA to a new file of the temporary directory under a name nobody can guess
/// beforehand, created exclusively: a link planted there by another user is never followed.
fn write_temporary_ca(ca_pem: &str, port: u16) -> Result<PathBuf, ServeError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir();
    let failed = |source| ServeError::CaWrite { path: dir.clone(), source };
    let mut file = tempfile::Builder::new()
        .prefix(&format!("barrage-serve-ca-{port}-"))
        .suffix(".pem")
        .tempfile_in(&dir)
        .map_err(failed)?;
    file.write_all(ca_pem.as_bytes()).map_err(failed)?;
    // A certificate is public: clients run by other users may read it.
    file.as_file().set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(failed)?;
    let (_, path) = file.keep().map_err(|e| failed(e.error))?;
    Ok(path)
}

fn url_for(addr: SocketAddr, tls: bool) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{}", SocketAddr::new(ip, addr.port()))
}

fn thread_count(asked: usize) -> usize {
    match asked {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

fn http_builder(max_streams: u32) -> HttpBuilder {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // No `pipeline_flush`: with it hyper buffers without limit and copies every frame into
    // one buffer (its "flatten" strategy), so `/bytes/1g` sat whole in memory, head
    // included, before its first write. Without it a response leaves as it is made, a few
    // frames of the shared pattern queued at a time; pipelined answers cost a write each.
    builder.http1().keep_alive(true);
    // Load generators multiplex many requests per connection; hyper's default of 200
    // concurrent streams would cap their concurrency below what they ask for.
    builder.http2().max_concurrent_streams(max_streams);
    builder
}

/// What every connection needs, cloned once per connection.
#[derive(Clone)]
struct ConnContext {
    state: Arc<ServerState>,
    builder: Arc<HttpBuilder>,
    tls: Option<TlsAcceptor>,
}

/// One serving thread: its runtime and its handle on the shared socket.
struct Worker {
    runtime: tokio::runtime::Runtime,
    listener: TcpListener,
    ctx: ConnContext,
    shutdown: watch::Receiver<bool>,
}

impl Worker {
    /// Built on the caller's thread so that failures are reported by `start`.
    fn new(
        listener: std::net::TcpListener,
        ctx: ConnContext,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Worker, ServeError> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        // Registering the socket needs the runtime that will poll it.
        let listener = {
            let _guard = runtime.enter();
            TcpListener::from_std(listener)?
        };
        Ok(Worker { runtime, listener, ctx, shutdown })
    }

    fn run(self) {
        let Worker { runtime, listener, ctx, shutdown } = self;
        runtime.block_on(accept_loop(listener, ctx, shutdown));
        // Dropping the runtime drops the connections still open after the grace.
    }
}

async fn accept_loop(listener: TcpListener, ctx: ConnContext, mut shutdown: watch::Receiver<bool>) {
    // Each connection task holds a sender; `recv` returns `None` once all are gone.
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    loop {
        let stream = tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        tokio::spawn(ctx.clone().serve(stream, shutdown.clone(), done_tx.clone()));
    }
    drop(listener);
    drop(done_tx);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, done_rx.recv()).await;
}

impl ConnContext {
    async fn serve(self, stream: TcpStream, shutdown: watch::Receiver<bool>, _done: mpsc::Sender<()>) {
        // Small responses must leave at once, not wait for Nagle's ack timer.
        let _ = stream.set_nodelay(true);
        match &self.tls {
            None => self.serve_http(stream, shutdown).await,
            Some(acceptor) => {
                let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream));
                // A failed handshake has no one to answer; the client sees it on its side.
                if let Ok(Ok(stream)) = handshake.await {
                    if let Some(h) = &self.state.handshakes {
                        h.tls.fetch_add(1, Ordering::Relaxed);
                    }
                    self.serve_http(stream, shutdown).await;
                }
            }
        }
    }

    async fn serve_http<I>(&self, io: I, mut shutdown: watch::Receiver<bool>)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let state = self.state.clone();
        let service = service_fn(move |req| handler::handle(state.clone(), req));
        let conn = self.builder.serve_connection(TokioIo::new(io), service);
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => {}
            _ = shutdown.changed() => {
                // Finish the requests in flight, then close; the accept loop bounds the wait.
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let table = [
            ("127.0.0.1:8080", false, "http://127.0.0.1:8080"),
            ("0.0.0.0:8080", true, "https://127.0.0.1:8080"),
            ("[::]:443", true, "https://[::1]:443"),
            ("10.1.2.3:80", false, "http://10.1.2.3:80"),
        ];
        for (addr, tls, want) in table {
            assert_eq!(url_for(addr.parse().unwrap(), tls), want);
        }
    }
}
