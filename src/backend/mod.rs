//! Backends: where a model runs. A [`Backend`] probes whether it can run here and loads a
//! model into a [`Session`]; a session runs one set of inputs and synchronises the device.
//!
//! The implementations are listed explicitly in [`registry`] (no registration before
//! `main`). A backend whose hardware or library is missing stays in the list and says
//! "not available: <reason>", like candle's stub devices. Owns: the traits, `--backend`
//! parsing, the timings every backend reports (§5.3: IR conversion, graph initialisation),
//! and operator placement records (§6.2 f). Leaves measurement policy to `measure`.

pub mod acl;
pub mod mock;
pub mod ort;

pub mod tract;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::model::tensor::HostTensor;

/// `--backend NAME[:PROVIDER][@DEVICE]`, e.g. `cpu`, `ort:cuda@1`, `cuda@0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSpec {
    pub backend: String,
    pub provider: Option<String>,
    pub device: Option<u32>,
}

impl std::str::FromStr for BackendSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (rest, device) = match s.rsplit_once('@') {
            Some((r, d)) => (
                r,
                Some(d.parse::<u32>().map_err(|_| {
                    format!("device '{d}' in '{s}' must be a number, e.g. ort:cuda@0")
                })?),
            ),
            None => (s, None),
        };
        let (backend, provider) = match rest.split_once(':') {
            Some((b, p)) if !p.is_empty() => (b, Some(p.to_ascii_lowercase())),
            Some((_, _)) => return Err(format!("'{s}' has an empty provider after ':'")),
            None => (rest, None),
        };
        if backend.is_empty() {
            return Err(format!(
                "'{s}' names no backend; try cpu, ort:cpu, ort:cuda, cuda"
            ));
        }
        Ok(BackendSpec {
            backend: backend.to_ascii_lowercase(),
            provider,
            device,
        })
    }
}

impl std::fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.backend)?;
        if let Some(p) = &self.provider {
            write!(f, ":{p}")?;
        }
        if let Some(d) = self.device {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Graph optimisation level (ONNX Runtime's; tract always optimises fully).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphOpt {
    Disable,
    Basic,
    Extended,
    All,
}

/// How to load a model.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Concrete shape of every model input (the backend pins dynamic dims to these).
    pub input_shapes: Vec<(String, Vec<usize>)>,
    /// Intra-op threads (`None`: the engine's default).
    pub threads: Option<usize>,
    pub graph_opt: Option<GraphOpt>,
    /// Execution-provider options, `--ep-option key=value`.
    pub ep_options: Vec<(String, String)>,
    /// Record which device each node ran on (engine profiling; adds overhead).
    pub placement: bool,
}

/// Time to make a model runnable, split as §5.3 asks.
#[derive(Debug, Clone, Serialize)]
pub struct LoadTimings {
    /// IR conversion: parsing the ONNX model and optimising it into the engine's IR.
    /// `None` when the engine does it inside session creation (see `convert_note`).
    #[serde(serialize_with = "ser_opt_ms", rename = "convert_ms")]
    pub convert: Option<Duration>,
    pub convert_note: Option<String>,
    /// Graph initialisation: building the executable plan / session on the device.
    #[serde(serialize_with = "ser_ms", rename = "init_ms")]
    pub init: Duration,
}

pub fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

pub fn ser_opt_ms<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64() * 1e3),
        None => s.serialize_none(),
    }
}

/// What a loaded session is, for reports.
#[derive(Debug, Clone, Serialize)]
pub struct SessionInfo {
    /// `--backend` as given, normalised (`ort:cuda@0`).
    pub backend: String,
    /// The engine and its version, e.g. `tract 0.23.9`, `onnxruntime 1.32.0`.
    pub engine: String,
    /// The device the session runs on, e.g. `CPU`, `CUDAExecutionProvider device 0`.
    pub device: String,
    /// The engine library loaded at run time, where there is one.
    pub library: Option<String>,
    /// Every session option that was set, as recorded.
    pub options: BTreeMap<String, String>,
}

/// Where one node ran.
#[derive(Debug, Clone, Serialize)]
pub struct NodePlacement {
    pub node: String,
    pub op_type: String,
    /// `CPU`, or the accelerator provider / device name.
    pub device: String,
}

/// Operator placement of a session (§6.2 f).
#[derive(Debug, Clone, Serialize)]
pub struct Placement {
    /// How it was obtained (e.g. "ONNX Runtime profiling events").
    pub source: String,
    pub nodes: Vec<NodePlacement>,
}

impl Placement {
    /// Nodes per device.
    pub fn by_device(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for n in &self.nodes {
            *m.entry(n.device.clone()).or_insert(0) += 1;
        }
        m
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("unknown backend '{name}'; the backends are: {list}")]
    Unknown { name: String, list: String },
    #[error("backend '{backend}' is not available: {reason}")]
    NotAvailable { backend: String, reason: String },
    #[error("{backend} could not load '{model}': {reason}")]
    Load {
        backend: String,
        model: String,
        reason: String,
    },
    #[error("{backend} failed to run the model: {reason}")]
    Run { backend: String, reason: String },
}

/// Whether a backend (or provider) can run here.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Availability {
    Available { detail: String },
    NotAvailable { reason: String },
}

impl Availability {
    pub fn is_available(&self) -> bool {
        matches!(self, Availability::Available { .. })
    }
}

impl std::fmt::Display for Availability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Availability::Available { detail } => write!(f, "available: {detail}"),
            Availability::NotAvailable { reason } => write!(f, "not available: {reason}"),
        }
    }
}

/// A place models can run.
pub trait Backend: Sync {
    /// The name used in `--backend`.
    fn name(&self) -> &'static str;
    /// One line on what it is.
    fn summary(&self) -> &'static str;
    /// Whether it can run here, and why not.
    fn probe(&self) -> Availability;
    /// Providers this backend can select with `NAME:PROVIDER`, and their availability.
    fn providers(&self) -> Vec<(String, Availability)> {
        Vec::new()
    }
    /// Loads `model` for running.
    fn load(
        &self,
        model: &Path,
        spec: &BackendSpec,
        opts: &LoadOptions,
    ) -> Result<Box<dyn Session>, BackendError>;
}

/// A model loaded on a backend.
pub trait Session {
    fn info(&self) -> &SessionInfo;
    fn timings(&self) -> &LoadTimings;
    /// Runs one inference; inputs in the model's input order. Returns when the outputs
    /// are on the host (device synchronised).
    fn run(&mut self, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, BackendError>;
    /// Waits for all queued device work (a no-op on the CPU).
    fn synchronize(&mut self) -> Result<(), BackendError>;
    /// Where each node ran, when `LoadOptions::placement` was set.
    fn placement(&mut self) -> Result<Placement, BackendError>;
}

/// Every backend acceval knows, in the order `devices` lists them.
pub fn registry() -> [&'static dyn Backend; 5] {
    [&tract::CPU, &ort::ORT, &tract::CUDA, &acl::ACL, &mock::MOCK]
}

/// The backend named `name`.
pub fn find(name: &str) -> Result<&'static dyn Backend, BackendError> {
    registry()
        .into_iter()
        .find(|b| b.name() == name)
        .ok_or_else(|| BackendError::Unknown {
            name: name.to_string(),
            list: registry()
                .iter()
                .map(|b| b.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Loads `model` on the backend of `spec`.
pub fn load(
    model: &Path,
    spec: &BackendSpec,
    opts: &LoadOptions,
) -> Result<Box<dyn Session>, BackendError> {
    find(&spec.backend)?.load(model, spec, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_backend_specs() {
        let s: BackendSpec = "ort:CUDA@1".parse().unwrap();
        assert_eq!(s.backend, "ort");
        assert_eq!(s.provider.as_deref(), Some("cuda"));
        assert_eq!(s.device, Some(1));
        assert_eq!(s.to_string(), "ort:cuda@1");
        let s: BackendSpec = "cpu".parse().unwrap();
        assert_eq!((s.provider, s.device), (None, None));
        assert!("ort:".parse::<BackendSpec>().is_err());
        assert!("cuda@x".parse::<BackendSpec>().is_err());
        assert!("".parse::<BackendSpec>().is_err());
    }

    #[test]
    fn unknown_backend_lists_the_known_ones() {
        let e = find("tpu").err().unwrap().to_string();
        assert!(e.contains("cpu, ort, cuda, acl"), "{e}");
    }
}
