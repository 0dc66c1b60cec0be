//! `serve --tls-cert/--tls-key`: the rustls (ring) server configuration, HTTP/1.1 only.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The server side of TLS, ready to accept connections.
#[derive(Clone)]
pub struct Tls(pub tokio_rustls::TlsAcceptor);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls(..)")
    }
}

/// A TLS acceptor for the certificate chain and private key in these PEM files.
pub fn acceptor(cert: &Path, key: &Path) -> anyhow::Result<Tls> {
    let chain: Result<Vec<CertificateDer<'static>>, _> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("--tls-cert '{}': cannot read it as PEM", cert.display()))?
        .collect();
    let chain = chain.with_context(|| {
        format!(
            "--tls-cert '{}': not a PEM certificate file",
            cert.display()
        )
    })?;
    if chain.is_empty() {
        bail!("--tls-cert '{}' holds no certificate", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("--tls-key '{}': not a PEM private key", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("--tls-cert/--tls-key do not form a usable certificate and key (does the key belong to the certificate?)")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
}
