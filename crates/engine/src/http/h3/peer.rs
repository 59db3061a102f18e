//! What the server's QUIC transport parameters say, read as its handshake brings them:
//! quinn applies them without telling, so the TLS session it runs is wrapped to see them
//! pass. Only `initial_max_streams_bidi` is kept: how many requests the server takes at
//! once on the connection (RFC 9000 18.2), which quinn then holds the requests to.

use quinn::crypto::{self, ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey, Session};
use quinn::{ConnectError, ConnectionId, Side};
use quinn_proto::coding::Codec;
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::TransportError;
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The limit before the server's transport parameters are known.
pub(crate) const UNKNOWN: u64 = u64::MAX;

/// `initial_max_streams_bidi`'s transport parameter id.
const MAX_STREAMS_BIDI: u64 = 0x08;

/// The run's QUIC TLS configuration, for one connection whose server's stream limit
/// goes into `streams`.
pub(crate) struct Reading {
    inner: Arc<quinn::crypto::rustls::QuicClientConfig>,
    streams: Arc<AtomicU64>,
}

impl Reading {
    pub(crate) fn new(inner: Arc<quinn::crypto::rustls::QuicClientConfig>, streams: Arc<AtomicU64>) -> Self {
        Reading { inner, streams }
    }
}

impl crypto::ClientConfig for Reading {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn Session>, ConnectError> {
        let inner = self.inner.clone().start_session(version, server_name, params)?;
        Ok(Box::new(Read { inner, streams: self.streams.clone() }))
    }
}

/// A TLS session that notes the server's stream limit when its parameters arrive.
struct Read {
    inner: Box<dyn Session>,
    streams: Arc<AtomicU64>,
}

impl Session for Read {
    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        let params = self.inner.transport_parameters()?;
        if let (Some(p), UNKNOWN) = (&params, self.streams.load(Ordering::Relaxed)) {
            self.streams.store(max_streams_bidi(p), Ordering::Relaxed);
        }
        Ok(params)
    }

    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        self.inner.initial_keys(dst_cid, side)
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.inner.handshake_data()
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.inner.peer_identity()
    }

    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        self.inner.early_crypto()
    }

    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }

    fn is_handshaking(&self) -> bool {
        self.inner.is_handshaking()
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        self.inner.read_handshake(buf)
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        self.inner.write_handshake(buf)
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        self.inner.next_1rtt_keys()
    }

    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}

/// `initial_max_streams_bidi` of `params`, read off their encoding (quinn keeps the
/// field to itself): a sequence of (id, length, value), varints but the value's bytes.
/// Absent, it is 0 (RFC 9000 18.2: the server takes no request).
pub(crate) fn max_streams_bidi(params: &TransportParameters) -> u64 {
    let mut encoded = Vec::new();
    params.write(&mut encoded);
    let mut rest = &encoded[..];
    let var = |r: &mut &[u8]| quinn::VarInt::decode(r).ok().map(quinn::VarInt::into_inner);
    while let (Some(id), Some(len)) = (var(&mut rest), var(&mut rest)) {
        let Some((mut value, after)) = usize::try_from(len).ok().and_then(|n| rest.split_at_checked(n)) else {
            break;
        };
        if id == MAX_STREAMS_BIDI {
            return var(&mut value).unwrap_or(0);
        }
        rest = after;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's stream limit, from its transport parameters as they come off the wire:
    /// among others, absent (0: none), and as large as a varint goes.
    #[test]
    fn the_servers_stream_limit_is_read_off_its_transport_parameters() {
        use quinn_proto::coding::Codec;
        let var = |x: u64, out: &mut Vec<u8>| quinn::VarInt::from_u64(x).unwrap().encode(out);
        // (id, value) pairs as a server encodes them: 0x04 initial_max_data, 0x08
        // initial_max_streams_bidi, 0x09 initial_max_streams_uni, 0x1f00 unknown.
        let limit = |fields: &[(u64, u64)]| {
            let mut wire = Vec::new();
            for &(id, value) in fields {
                let mut v = Vec::new();
                var(value, &mut v);
                var(id, &mut wire);
                var(v.len() as u64, &mut wire);
                wire.extend_from_slice(&v);
            }
            let params =
                quinn_proto::transport_parameters::TransportParameters::read(quinn::Side::Client, &mut &wire[..]);
            max_streams_bidi(&params.unwrap())
        };
        assert_eq!(limit(&[(0x04, 1 << 20), (0x08, 5), (0x09, 3)]), 5);
        assert_eq!(limit(&[(0x1f00, 7), (0x08, 100)]), 100);
        assert_eq!(limit(&[(0x08, 1 << 60)]), 1 << 60);
        assert_eq!(limit(&[(0x04, 1 << 20)]), 0, "absent: no stream allowed");
    }
}
