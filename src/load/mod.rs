//! The load generator: one driver (open and closed loop, latency from the scheduled send
//! time) over a pooled HTTP(S) client, arrival schedules, latency bounds, the checks of a
//! run's settings, KServe v2 inference as a load endpoint, and the max-QPS search of §7.2.5.
//! `llm` drives its generation endpoint through the same driver.

pub mod client;
pub mod driver;
pub mod infer;
pub mod qps;
pub mod schedule;
pub mod settings;
pub mod slo;

pub use qps::{QpsPlan, QpsSettings};
pub use settings::{Setting, SettingsError};

use crate::util::signal::Cut;

/// Why a load run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Setting(#[from] SettingsError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// Ctrl-C came before the first request.
    #[error("QPS: stopped before the requests were formed")]
    Stopped(#[source] Cut),
    #[error("building the certificate verifier (is the CA file a CA certificate?): {0}")]
    Verifier(String),
    #[error("TLS protocol versions: {0}")]
    TlsVersions(rustls::Error),
    /// Neither a body file, nor a zoo model, nor readable metadata.
    #[error(
        "cannot form requests for '{model}': it is not a zoo model and its metadata ({url}) could not be read; give a request body file or start the server: {why}"
    )]
    NoMetadata {
        model: String,
        url: String,
        why: String,
    },
    #[error("{url}: the metadata has no 'inputs'")]
    MetadataInputs { url: String },
    #[error("{url}: input '{input}' has an unsupported datatype {datatype}")]
    MetadataType {
        url: String,
        input: String,
        datatype: String,
    },
    #[error("input '{input}' is {datatype}; give a request body file")]
    CannotGenerate { input: String, datatype: String },
    #[error(transparent)]
    Model(#[from] crate::model::onnx::LoadError),
    #[error(transparent)]
    Zoo(#[from] crate::zoo::Error),
}

impl Error {
    /// Whether Ctrl-C ended it.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Error::Stopped(c) if c.is_interrupted())
    }
}
