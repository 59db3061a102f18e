//! HTTP/3 for the origin: a quinn endpoint on the UDP twin of the TLS port, h3 on each
//! connection, and every request answered by the same [`handler::handle`] as over TCP, so
//! `/_barrage/stats` counts HTTP/3 requests with the others.
//!
//! One UDP socket serves every connection (as Caddy and nginx do): its endpoint task reads
//! the datagrams, and each connection and each request is a task of a multi-thread runtime
//! with as many workers as the origin has threads.

use std::net::UdpSocket;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http_body_util::BodyExt;
use hyper::body::Frame;
use tokio::sync::watch;

use crate::handler::{self, ServerState};
use crate::ServeError;

/// The largest request head (QPACK-decoded) taken; larger ones are refused by h3.
const MAX_REQUEST_HEAD: u64 = 256 * 1024;
/// How long connections get to finish at shutdown before the endpoint closes them.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// The HTTP/3 listener, ready to run on a thread of its own.
pub(crate) struct Listener {
    runtime: tokio::runtime::Runtime,
    endpoint: quinn::Endpoint,
    state: Arc<ServerState>,
}

impl Listener {
    /// Takes the UDP socket (bound) and QUIC's TLS configuration; the runtime gets
    /// `threads` workers, and each connection may carry `max_streams` requests at once.
    /// Built on the caller's thread so that failures are reported by
    /// [`crate::RunningServer::start`].
    pub(crate) fn new(
        socket: UdpSocket,
        tls: Arc<rustls::ServerConfig>,
        state: Arc<ServerState>,
        threads: usize,
        max_streams: u32,
    ) -> Result<Listener, ServeError> {
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
            .map_err(|e| ServeError::Tls(format!("QUIC's TLS configuration: {e}")))?;
        let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        transport.max_concurrent_bidi_streams(max_streams.into());
        config.transport_config(Arc::new(transport));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("barrage-serve-h3")
            .enable_all()
            .build()?;
        // The endpoint's task belongs to the runtime that will poll it.
        let endpoint = {
            let _guard = runtime.enter();
            quinn::Endpoint::new(quinn::EndpointConfig::default(), Some(config), socket, Arc::new(quinn::TokioRuntime))?
        };
        Ok(Listener { runtime, endpoint, state })
    }

    /// Serves until `shutdown`, then closes every connection after a short grace.
    pub(crate) fn run(self, mut shutdown: watch::Receiver<bool>) {
        let Listener { runtime, endpoint, state } = self;
        runtime.block_on(async {
            loop {
                let incoming = tokio::select! {
                    biased;
                    _ = shutdown.changed() => break,
                    incoming = endpoint.accept() => match incoming {
                        Some(incoming) => incoming,
                        None => break,
                    },
                };
                tokio::spawn(serve_connection(incoming, state.clone()));
            }
            // Refuse new connections, let those open finish what they were sending, then
            // close them all (H3_NO_ERROR).
            endpoint.set_server_config(None);
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, endpoint.wait_idle()).await;
            endpoint.close(h3::error::Code::H3_NO_ERROR.value().try_into().unwrap_or_default(), b"shutting down");
            // The closes are sent by the connections' tasks, which this runtime runs.
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, endpoint.wait_idle()).await;
        });
    }
}

/// One QUIC connection: its handshake (counted), then each request it opens in a task.
async fn serve_connection(incoming: quinn::Incoming, state: Arc<ServerState>) {
    // A failed handshake has no one to answer; the client sees it on its side.
    let Ok(conn) = incoming.await else { return };
    if let Some(h) = &state.handshakes {
        h.quic.fetch_add(1, Ordering::Relaxed);
    }
    let mut builder = h3::server::builder();
    builder.max_field_section_size(MAX_REQUEST_HEAD);
    let Ok(mut h3) = builder.build(h3_quinn::Connection::new(conn)).await else { return };
    // Ends when the client closes the connection, or breaks HTTP/3.
    while let Ok(Some(resolver)) = h3.accept().await {
        let state = state.clone();
        tokio::spawn(async move {
            if let Ok((request, stream)) = resolver.resolve_request().await {
                serve_request(request, stream, state).await;
            }
        });
    }
}

type Stream<S> = h3::server::RequestStream<S, Bytes>;

/// Answers one request: its body is read as the handler asks, the answer's body is sent as
/// it is made (a frame at a time, as over TCP).
async fn serve_request(
    request: http::Request<()>,
    stream: Stream<h3_quinn::BidiStream<Bytes>>,
    state: Arc<ServerState>,
) {
    let (mut send, recv) = stream.split();
    let request = request.map(|()| RequestBody(recv));
    let response = match handler::handle(state, request).await {
        Ok(response) => response,
        Err(reset) => {
            send.stop_stream(reset_code(reset.reason()));
            return;
        }
    };
    let (head, mut body) = response.into_parts();
    if send.send_response(http::Response::from_parts(head, ())).await.is_err() {
        return;
    }
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame;
        if let Ok(data) = frame.into_data() {
            if send.send_data(data).await.is_err() {
                return;
            }
        }
    }
    let _ = send.finish().await;
}

/// The HTTP/3 code that stands for `/reset/{reason}`'s HTTP/2 one: a refused stream is a
/// rejected request (the client may send it again, RFC 9114 4.1.1), a cancelled one a
/// cancelled request, a protocol error a general protocol error; the rest, whose HTTP/3
/// codes are not the stream's to send, an internal error.
fn reset_code(reason: Option<h2::Reason>) -> h3::error::Code {
    use h3::error::Code;
    match reason {
        Some(h2::Reason::REFUSED_STREAM) => Code::H3_REQUEST_REJECTED,
        Some(h2::Reason::CANCEL) => Code::H3_REQUEST_CANCELLED,
        Some(h2::Reason::PROTOCOL_ERROR) => Code::H3_GENERAL_PROTOCOL_ERROR,
        _ => Code::H3_INTERNAL_ERROR,
    }
}

/// An HTTP/3 request's body, as the handler reads every body.
struct RequestBody(Stream<h3_quinn::RecvStream>);

impl hyper::body::Body for RequestBody {
    type Data = Bytes;
    type Error = h3::error::StreamError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.get_mut().0.poll_recv_data(cx).map(|data| match data {
            Ok(Some(mut data)) => Some(Ok(Frame::data(data.copy_to_bytes(data.remaining())))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3::error::Code;

    /// `/reset/{reason}`'s HTTP/2 codes as HTTP/3 resets: refused is rejected (the client
    /// may send it again), cancel is cancelled, a protocol error stays one, the others an
    /// internal error.
    #[test]
    fn reset_reasons_have_their_http3_counterparts() {
        let table = [
            (Some(h2::Reason::REFUSED_STREAM), Code::H3_REQUEST_REJECTED),
            (Some(h2::Reason::CANCEL), Code::H3_REQUEST_CANCELLED),
            (Some(h2::Reason::PROTOCOL_ERROR), Code::H3_GENERAL_PROTOCOL_ERROR),
            (Some(h2::Reason::INTERNAL_ERROR), Code::H3_INTERNAL_ERROR),
            (Some(h2::Reason::from(0xff)), Code::H3_INTERNAL_ERROR),
            (None, Code::H3_INTERNAL_ERROR),
        ];
        for (reason, code) in table {
            assert_eq!(reset_code(reason), code, "{reason:?}");
        }
    }
}
