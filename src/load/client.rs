//! The HTTP(S) client of the load generator: hyper's pooled HTTP/1.1 client over rustls.
//! Certificates are verified by default (the system's roots, or `--cacert`); `--cert/--key`
//! present a client certificate; `--crl` checks the server's chain against revocation lists.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};

pub type Client = HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// TLS settings from the command line.
#[derive(Debug, Clone, Default)]
pub struct Tls {
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub crl: Vec<PathBuf>,
}

fn certs(path: &Path, what: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let v: Result<Vec<_>, _> = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("{what} '{}': cannot read it as PEM", path.display()))?
        .collect();
    let v =
        v.with_context(|| format!("{what} '{}': not a PEM certificate file", path.display()))?;
    if v.is_empty() {
        bail!("{what} '{}' holds no certificate", path.display());
    }
    Ok(v)
}

fn tls_config(t: &Tls) -> anyhow::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    match &t.cacert {
        Some(p) => {
            for c in certs(p, "--cacert")? {
                roots.add(c).with_context(|| {
                    format!("--cacert '{}': not a usable CA certificate", p.display())
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
            .with_context(|| format!("--crl '{}': cannot read it as PEM", p.display()))?
            .collect();
        crls.extend(v.with_context(|| format!("--crl '{}': not a PEM CRL file", p.display()))?);
    }
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::clone(&provider),
    )
    .with_crls(crls)
    .build()
    .context("building the certificate verifier (is --cacert a CA certificate?)")?;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_webpki_verifier(verifier);
    Ok(match (&t.cert, &t.key) {
        (Some(c), Some(k)) => {
            let key = PrivateKeyDer::from_pem_file(k)
                .with_context(|| format!("--key '{}': not a PEM private key", k.display()))?;
            builder
                .with_client_auth_cert(certs(c, "--cert")?, key)
                .context("--cert/--key do not form a usable client certificate")?
        }
        _ => builder.with_no_client_auth(),
    })
}

/// A pooled client keeping up to `max_connections` idle connections per host.
pub fn build(tls: &Tls, max_connections: usize, timeout: Duration) -> anyhow::Result<Client> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(timeout));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(tls)?)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(HyperClient::builder(TokioExecutor::new())
        .pool_max_idle_per_host(max_connections)
        .pool_idle_timeout(Duration::from_secs(90))
        .build(https))
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    Ok,
    /// A non-2xx status.
    Status(u16),
    Timeout,
    /// The connection could not be made (refused, unreachable, TLS handshake).
    Connect,
    /// The server closed or reset the connection before the response was complete.
    Closed,
    /// Anything else on the wire.
    Other,
}

impl Outcome {
    pub fn label(self) -> String {
        match self {
            Outcome::Ok => "ok".into(),
            Outcome::Status(s) => format!("http_{s}"),
            Outcome::Timeout => "timeout".into(),
            Outcome::Connect => "connection_failed".into(),
            Outcome::Closed => "connection_closed".into(),
            Outcome::Other => "other".into(),
        }
    }
    pub fn code(self) -> u32 {
        match self {
            Outcome::Ok => 1,
            Outcome::Timeout => 2,
            Outcome::Connect => 3,
            Outcome::Closed => 4,
            Outcome::Other => 5,
            Outcome::Status(s) => 1000 + s as u32,
        }
    }
    pub fn from_code(c: u32) -> Option<Outcome> {
        Some(match c {
            1 => Outcome::Ok,
            2 => Outcome::Timeout,
            3 => Outcome::Connect,
            4 => Outcome::Closed,
            5 => Outcome::Other,
            c if c >= 1000 => Outcome::Status((c - 1000) as u16),
            _ => return None,
        })
    }
}

/// The classification of a client error, with its full message.
pub fn classify(e: &hyper_util::client::legacy::Error) -> (Outcome, String) {
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
        Outcome::Connect
    } else if closed {
        Outcome::Closed
    } else {
        Outcome::Other
    };
    (kind, msg)
}

/// Requests this process has sent (warm-ups and probes included), to reconcile with a
/// server's own counters.
pub static ISSUED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What one request needs: where, and the prepared body.
#[derive(Clone)]
pub struct Target {
    pub uri: hyper::Uri,
    pub body: Bytes,
    pub header_len: Option<usize>,
}

/// Sends one request and reads the whole response; returns the outcome, the response
/// (status, header length, body) when there is one, and the error text when there is one.
pub async fn send(
    client: &Client,
    t: &Target,
    timeout: Duration,
) -> (
    Outcome,
    Option<(u16, Option<String>, Bytes)>,
    Option<String>,
) {
    let mut b = hyper::Request::post(t.uri.clone()).header(
        "content-type",
        if t.header_len.is_some() {
            "application/octet-stream"
        } else {
            "application/json"
        },
    );
    if let Some(n) = t.header_len {
        b = b.header(crate::protocol::kserve::HEADER_LENGTH, n);
    }
    let req = b.body(Full::new(t.body.clone())).expect("a valid request");
    ISSUED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let fut = async {
        let resp = client.request(req).await;
        match resp {
            Err(e) => Err(classify(&e)),
            Ok(r) => {
                let status = r.status().as_u16();
                let hl = r
                    .headers()
                    .get(crate::protocol::kserve::HEADER_LENGTH)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                match r.into_body().collect().await {
                    Ok(body) => Ok((status, hl, body.to_bytes())),
                    Err(e) => Err((Outcome::Closed, format!("reading the response: {e}"))),
                }
            }
        }
    };
    match tokio::time::timeout(timeout, fut).await {
        Err(_) => (
            Outcome::Timeout,
            None,
            Some(format!("no response within {:.1} s", timeout.as_secs_f64())),
        ),
        Ok(Err((k, m))) => (k, None, Some(m)),
        Ok(Ok((status, hl, body))) => {
            let o = if (200..300).contains(&status) {
                Outcome::Ok
            } else {
                Outcome::Status(status)
            };
            let err = (o != Outcome::Ok)
                .then(|| String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned());
            (o, Some((status, hl, body)), err)
        }
    }
}
