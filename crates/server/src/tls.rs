//! HTTPS for the origin: a throwaway CA and a leaf certificate made at start-up (rcgen),
//! served with rustls on the ring provider. Clients trust the CA through the PEM file the
//! server writes (`--cacert`), so no system trust store is touched.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions};
use rustls::ServerConfig;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ServeError;

/// What TLS setup produces: the acceptor's configuration, QUIC's (ALPN h3, TLS 1.3 alone,
/// early data accepted), and, for a generated certificate, the CA to hand to clients.
pub(crate) struct Tls {
    pub(crate) config: Arc<ServerConfig>,
    pub(crate) quic: Arc<ServerConfig>,
    pub(crate) ca_pem: Option<String>,
}

fn tls_err(what: &str) -> impl FnOnce(rcgen::Error) -> ServeError + '_ {
    move |e| ServeError::Tls(format!("{what}: {e}"))
}

/// A CA and a leaf certificate signed by it, in PEM.
#[derive(Clone, Debug)]
pub struct Pki {
    /// The CA certificate, for clients to trust (`--cacert`).
    pub ca_pem: String,
    /// The leaf certificate followed by the CA's: the chain a server presents.
    pub chain_pem: String,
    /// The leaf's private key (PKCS#8).
    pub key_pem: String,
}

/// Makes a throwaway CA and a leaf for `localhost`, `127.0.0.1`, `::1` and `listen_ip`
/// (when it is a specific, non-loopback address).
pub fn generate_pki(listen_ip: IpAddr) -> Result<Pki, ServeError> {
    let ca_key = KeyPair::generate().map_err(tls_err("generating the CA key"))?;
    let mut ca_params = CertificateParams::new(Vec::new()).map_err(tls_err("CA parameters"))?;
    ca_params.distinguished_name.push(DnType::CommonName, "barrage serve test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca_params.self_signed(&ca_key).map_err(tls_err("signing the CA"))?;

    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
    if !listen_ip.is_unspecified() && !listen_ip.is_loopback() {
        names.push(listen_ip.to_string());
    }
    let leaf_key = KeyPair::generate().map_err(tls_err("generating the server key"))?;
    let mut leaf_params = CertificateParams::new(names).map_err(tls_err("server names"))?;
    leaf_params.distinguished_name.push(DnType::CommonName, "barrage serve");
    let leaf = leaf_params.signed_by(&leaf_key, &ca, &ca_key).map_err(tls_err("signing the server certificate"))?;
    Ok(Pki { ca_pem: ca.pem(), chain_pem: format!("{}{}", leaf.pem(), ca.pem()), key_pem: leaf_key.serialize_pem() })
}

/// A rustls config offering h2 and http/1.1 by ALPN, and one for QUIC offering h3: with the
/// certificate and key of `files` (PEM: chain, key), or else a fresh [`generate_pki`] whose
/// CA is returned. Both keep sessions for resumption (rustls's default cache) and count the
/// handshakes that resumed one in `resumed`: a client that says it never resumes (barrage)
/// can be checked against it.
pub(crate) fn setup(
    listen_ip: IpAddr,
    files: Option<&(PathBuf, PathBuf)>,
    resumed: Arc<AtomicU64>,
) -> Result<Tls, ServeError> {
    let (chain, key, ca_pem) = match files {
        Some((cert, key)) => {
            let read_err = |path: &Path| {
                let path = path.display().to_string();
                move |e: rustls::pki_types::pem::Error| ServeError::Tls(format!("{path}: {e}"))
            };
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(read_err(cert))?;
            let key_der = PrivateKeyDer::from_pem_file(key).map_err(read_err(key))?;
            (chain, key_der, None)
        }
        None => {
            let pki = generate_pki(listen_ip)?;
            let chain = CertificateDer::pem_slice_iter(pki.chain_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ServeError::Tls(format!("reading the generated chain: {e}")))?;
            let key = PrivateKeyDer::from_pem_slice(pki.key_pem.as_bytes())
                .map_err(|e| ServeError::Tls(format!("reading the generated key: {e}")))?;
            (chain, key, Some(pki.ca_pem))
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let failed = |e: rustls::Error| ServeError::Tls(format!("building the rustls configuration: {e}"));
    let store: Arc<dyn StoresServerSessions> =
        Arc::new(CountingStore { inner: ServerSessionMemoryCache::new(SESSIONS), resumed });
    let mut config = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain.clone(), key.clone_key()))
        .map_err(failed)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config.session_storage = store.clone();
    let mut quic = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(failed)?;
    quic.alpn_protocols = vec![b"h3".to_vec()];
    quic.session_storage = store;
    // A client may resume and send 0-RTT data (QUIC allows no other limit than all or
    // none): the origin accepts what clients try, so a client's claim never to (barrage's)
    // is put to the test.
    quic.max_early_data_size = u32::MAX;
    Ok(Tls { config: Arc::new(config), quic: Arc::new(quic), ca_pem })
}

/// Sessions kept for resumption (rustls's default cache size).
const SESSIONS: usize = 256;

/// rustls's session cache, counting the lookups that found a session: each is a handshake
/// in which the client presented a ticket this server issued, to resume (and, over QUIC,
/// maybe to send 0-RTT data).
#[derive(Debug)]
struct CountingStore {
    inner: Arc<ServerSessionMemoryCache>,
    resumed: Arc<AtomicU64>,
}

impl CountingStore {
    fn found(&self, session: Option<Vec<u8>>) -> Option<Vec<u8>> {
        if session.is_some() {
            self.resumed.fetch_add(1, Ordering::Relaxed);
        }
        session
    }
}

impl StoresServerSessions for CountingStore {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.inner.put(key, value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.found(self.inner.get(key))
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.found(self.inner.take(key))
    }

    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}
