//! `serve` over HTTPS: the rustls (ring) server configuration, HTTP/1.1 only.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::{Error, Setting};
use crate::util::setting::SettingError;

/// The server side of TLS, ready to accept connections.
#[derive(Clone)]
pub struct Tls(pub tokio_rustls::TlsAcceptor);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls(..)")
    }
}

/// A TLS acceptor for the certificate chain and private key in these PEM files.
pub fn acceptor(cert: &Path, key: &Path) -> Result<Tls, Error> {
    let bad_cert =
        |why: String| Error::from(SettingError::bad(Setting::TlsCert, cert.display(), why));
    let chain: Result<Vec<CertificateDer<'static>>, _> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad_cert(format!("cannot read it as PEM: {e}")))?
        .collect();
    let chain = chain.map_err(|e| bad_cert(format!("not a PEM certificate file: {e}")))?;
    if chain.is_empty() {
        return Err(bad_cert("holds no certificate".into()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        SettingError::bad(
            Setting::TlsKey,
            key.display(),
            format!("not a PEM private key: {e}"),
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::TlsVersions)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(Error::TlsPair)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
}
