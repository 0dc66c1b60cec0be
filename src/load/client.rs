//! The HTTP(S) client of the load generator: hyper's pooled HTTP/1.1 client over rustls.
//! Certificates are verified by default (the system's roots, or a given CA file); a client
//! certificate and key may be presented; CRLs check the server's chain against revocation.
//! The client counts the requests it sends (to reconcile with a server's own counter), tells
//! a failed request's kind from hyper's error, and reads response bodies under a cap.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};

use super::Error;
use super::settings::{Setting, SettingsError};
use crate::report::schema::qps::FailureKind;

type Pool = HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// TLS settings: a CA file, a client certificate and key, revocation lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub crl: Vec<PathBuf>,
}

/// `setting`'s file `path` is unusable because `why`.
fn bad(setting: Setting, path: &Path, why: String) -> Error {
    SettingsError::bad(setting, path.display(), why).into()
}

fn certs(path: &Path, what: Setting) -> Result<Vec<CertificateDer<'static>>, Error> {
    let v: Result<Vec<_>, _> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(what, path, format!("cannot read it as PEM: {e}")))?
        .collect();
    let v = v.map_err(|e| bad(what, path, format!("not a PEM certificate file: {e}")))?;
    if v.is_empty() {
        return Err(bad(what, path, "holds no certificate".into()));
    }
    Ok(v)
}

fn tls_config(t: &Tls) -> Result<rustls::ClientConfig, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    match &t.cacert {
        Some(p) => {
            for c in certs(p, Setting::CaCert)? {
                roots.add(c).map_err(|e| {
                    bad(
                        Setting::CaCert,
                        p,
                        format!("not a usable CA certificate: {e}"),
                    )
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for c in found.certs {
                let _ = roots.add(c);
            }
        }
    }
    let mut crls = Vec::new();
    for p in &t.crl {
        let v: Result<Vec<_>, _> = CertificateRevocationListDer::pem_file_iter(p)
            .map_err(|e| bad(Setting::Crl, p, format!("cannot read it as PEM: {e}")))?
            .collect();
        crls.extend(v.map_err(|e| bad(Setting::Crl, p, format!("not a PEM CRL file: {e}")))?);
    }
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::clone(&provider),
    )
    .with_crls(crls)
    .build()
    .map_err(|e| Error::Verifier(e.to_string()))?;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::TlsVersions)?
        .with_webpki_verifier(verifier);
    Ok(match (&t.cert, &t.key) {
        (Some(c), Some(k)) => {
            let key = PrivateKeyDer::from_pem_file(k)
                .map_err(|e| bad(Setting::Key, k, format!("not a PEM private key: {e}")))?;
            builder
                .with_client_auth_cert(certs(c, Setting::Cert)?, key)
                .map_err(|e| {
                    bad(
                        Setting::Cert,
                        c,
                        format!(
                            "does not form a usable client certificate with the key '{}': {e}",
                            k.display()
                        ),
                    )
                })?
        }
        _ => builder.with_no_client_auth(),
    })
}

/// A pooled HTTP(S) client that counts what it sends; cheap to clone (clones share the pool
/// and the count).
#[derive(Clone)]
pub struct Client {
    pool: Pool,
    issued: Arc<AtomicU64>,
}

impl Client {
    /// A client keeping up to `max_connections` idle connections per host. Call inside a
    /// tokio runtime.
    pub fn new(tls: &Tls, max_connections: usize, timeout: Duration) -> Result<Client, Error> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(timeout));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config(tls)?)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let pool = HyperClient::builder(TokioExecutor::new())
            .pool_max_idle_per_host(max_connections)
            .pool_idle_timeout(Duration::from_secs(90))
            .build(https);
        Ok(Client {
            pool,
            issued: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Sends `req` (counted in [`Client::issued`]) and waits for the response head.
    pub async fn send(
        &self,
        req: hyper::Request<Full<Bytes>>,
    ) -> Result<hyper::Response<Incoming>, (FailureKind, String)> {
        self.issued.fetch_add(1, Ordering::Relaxed);
        self.pool.request(req).await.map_err(|e| classify(&e))
    }

    /// A GET whose body is read whole (up to `cap` bytes): metadata, not load.
    pub async fn get(&self, url: &str, cap: usize) -> Result<(u16, Vec<u8>), String> {
        let req = hyper::Request::get(url)
            .body(Full::new(Bytes::new()))
            .map_err(|e| format!("{url}: {e}"))?;
        let r = self.pool.request(req).await.map_err(|e| classify(&e).1)?;
        let status = r.status().as_u16();
        let body = collect(r.into_body(), cap)
            .await
            .map_err(|e| e.to_string())?;
        if body.cut {
            return Err(format!("{url}: the answer is over {cap} bytes"));
        }
        Ok((status, body.bytes))
    }

    /// Requests sent through this client and its clones (warm-ups and probes included; a
    /// metadata GET excluded).
    pub fn issued(&self) -> u64 {
        self.issued.load(Ordering::Relaxed)
    }
}

/// The kind of a client error, with its full message (the chain of causes).
pub fn classify(e: &hyper_util::client::legacy::Error) -> (FailureKind, String) {
    let mut msg = e.to_string();
    let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
    let mut closed = false;
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        if let Some(h) = s.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_closed() || h.is_canceled())
        {
            closed = true;
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            )
        {
            closed = true;
        }
        src = s.source();
    }
    let kind = if e.is_connect() {
        FailureKind::ConnectionFailed
    } else if closed {
        FailureKind::ConnectionClosed
    } else {
        FailureKind::Other
    };
    (kind, msg)
}

/// A body read under a cap.
#[derive(Debug, Default)]
pub struct Collected {
    /// The bytes read (at most the cap).
    pub bytes: Vec<u8>,
    /// The body was longer than the cap; the rest was not read.
    pub cut: bool,
}

/// A body that broke off.
#[derive(Debug, thiserror::Error)]
#[error("reading the response: {0}")]
pub struct BodyError(String);

/// Reads `body` into memory, at most `cap` bytes (then stops reading: the connection is
/// dropped, not drained).
pub async fn collect(mut body: Incoming, cap: usize) -> Result<Collected, BodyError> {
    let mut out = Collected::default();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError(e.to_string()))?;
        if let Some(d) = frame.data_ref() {
            let room = cap - out.bytes.len();
            if d.len() > room {
                out.bytes.extend_from_slice(&d[..room]);
                out.cut = true;
                return Ok(out);
            }
            out.bytes.extend_from_slice(d);
        }
    }
    Ok(out)
}

/// Reads `body` to its end without keeping it; `Ok(None)` once it passes `cap` bytes.
pub async fn drain(mut body: Incoming, cap: u64) -> Result<Option<u64>, BodyError> {
    let mut n = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError(e.to_string()))?;
        if let Some(d) = frame.data_ref() {
            n += d.len() as u64;
            if n > cap {
                return Ok(None);
            }
        }
    }
    Ok(Some(n))
}

/// The start of an error body as text, for a failure message.
pub fn error_text(c: &Collected) -> String {
    let mut s = String::from_utf8_lossy(&c.bytes[..c.bytes.len().min(300)]).into_owned();
    if c.cut {
        s.push_str(" [error body over the max_error_bytes cap, not read further]");
    }
    s
}
