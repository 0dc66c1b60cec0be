//! A loaded session as reports describe it: the engine, its device and options, the §5.3
//! timings (IR conversion, graph initialisation), operator placement (§6.2 f), and whether a
//! backend or provider can run here.

use schemars::JsonSchema;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Graph optimisation level (ONNX Runtime's; tract always optimises fully).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum GraphOpt {
    Disable,
    Basic,
    Extended,
    All,
}

/// Time to make a model runnable, split as §5.3 asks.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LoadTimings {
    /// IR conversion: parsing the ONNX model and optimising it into the engine's IR.
    /// `None` when the engine does it inside session creation (see `convert_note`).
    pub convert_ms: Option<f64>,
    pub convert_note: Option<String>,
    /// Graph initialisation: building the executable plan / session on the device.
    pub init_ms: f64,
}

/// What a loaded session is, for reports.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NodePlacement {
    pub node: String,
    pub op_type: String,
    /// `CPU`, or the accelerator provider / device name.
    pub device: String,
}

/// Operator placement of a session (§6.2 f).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Placement {
    /// How it was obtained (e.g. "ONNX Runtime profiling events").
    pub source: String,
    pub nodes: Vec<NodePlacement>,
}

/// Whether a backend (or provider) can run here.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
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
