//! HTTPS for the origin: a throwaway CA and a leaf certificate made at start-up (rcgen),
//! served with rustls on the ring provider. Clients trust the CA through the PEM file the
//! server writes (`--cacert`), so no system trust store is touched.

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;

use crate::ServeError;

/// What TLS setup produces: the acceptor's configuration and the CA to hand to clients.
pub(crate) struct Tls {
    pub(crate) config: Arc<ServerConfig>,
    pub(crate) ca_pem: String,
}

fn tls_err(what: &str) -> impl FnOnce(rcgen::Error) -> ServeError + '_ {
    move |e| ServeError::Tls(format!("{what}: {e}"))
}

/// Makes a CA and a leaf for `localhost`, `127.0.0.1`, `::1` and `listen_ip` (when it is a
/// specific address), and a rustls config offering h2 and http/1.1 by ALPN.
pub(crate) fn setup(listen_ip: IpAddr) -> Result<Tls, ServeError> {
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

    let chain = vec![leaf.der().clone(), CertificateDer::from(ca.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| ServeError::Tls(format!("building the rustls configuration: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls { config: Arc::new(config), ca_pem: ca.pem() })
}
