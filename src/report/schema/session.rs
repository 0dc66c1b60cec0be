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
    /// Set when the device is an emulator (acceval's CANN or NVML stand-in): what it says of
    /// itself. An emulated device proves acceval's code, never the hardware, and is never
    /// certified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated: Option<String>,
    /// How the session times host-to-device and device-to-host copies apart from the
    /// forward (§7.2.3's copy stages), when it does; absent: the copies are inside the
    /// forward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<String>,
}

/// One inference's copy and compute times, where a session times them apart, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CopyTimes {
    /// Every input copied host → device.
    pub h2d_ms: f64,
    /// The device's execution, synchronised.
    pub execute_ms: f64,
    /// Every output copied device → host, into host tensors.
    pub d2h_ms: f64,
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

/// The class of device a backend runs on (§6 c, §6.2 b ask for a dedicated AI chip besides
/// CPU and GPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeviceClass {
    Cpu,
    Gpu,
    /// A neural processing unit (Ascend, Hexagon, an OpenVINO NPU).
    Npu,
    Asic,
    Fpga,
    Tpu,
    /// A stand-in for tests (the mock backend): never certified.
    Emulated,
}

impl DeviceClass {
    /// Whether it is a dedicated AI chip in §6.2 b's sense (not a CPU, not a GPU).
    pub fn is_dedicated_ai_chip(self) -> bool {
        matches!(
            self,
            DeviceClass::Npu | DeviceClass::Asic | DeviceClass::Fpga | DeviceClass::Tpu
        )
    }
}

impl std::fmt::Display for DeviceClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceClass::Cpu => "CPU",
            DeviceClass::Gpu => "GPU",
            DeviceClass::Npu => "NPU",
            DeviceClass::Asic => "ASIC",
            DeviceClass::Fpga => "FPGA",
            DeviceClass::Tpu => "TPU",
            DeviceClass::Emulated => "emulated device",
        })
    }
}

/// How a backend hands operators to its device (§6 g): the draft's three routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdaptationRoute {
    /// Operator development or mapping: each ONNX operator runs on a kernel of the device.
    OperatorMapping,
    /// Graph-engine hand-off: the device takes subgraphs (or the whole graph) and runs them.
    GraphHandoff,
    /// Compiler back end: the graph is compiled to the device's code.
    CompilerBackend,
    /// No device (the mock).
    None,
}

impl std::fmt::Display for AdaptationRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AdaptationRoute::OperatorMapping => "operator mapping",
            AdaptationRoute::GraphHandoff => "subgraph / whole-graph hand-off",
            AdaptationRoute::CompilerBackend => "compiler back end",
            AdaptationRoute::None => "none",
        })
    }
}

/// A subgraph an execution provider took whole (e.g. OpenVINO's fused subgraphs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FusedSubgraph {
    pub name: String,
    pub provider: String,
}

/// Where the model's operators ran (§6.2 f), with the share of nodes and of MACs on the
/// device under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlacementSummary {
    pub device_class: DeviceClass,
    pub route: AdaptationRoute,
    /// What the route means for this backend.
    pub route_detail: String,
    /// How placement was obtained (ONNX Runtime profiling, tract's transform, ...).
    pub source: Option<String>,
    /// Nodes of the ONNX graph.
    pub nodes: usize,
    pub nodes_on_device: Option<usize>,
    pub macs: Option<u64>,
    pub macs_on_device: Option<u64>,
    /// Execution-provider subgraphs that took several original nodes at once.
    pub fused_subgraphs: Vec<FusedSubgraph>,
    /// Nodes that ran on the CPU although the device under test is not the CPU.
    pub cpu_fallback: Vec<String>,
    /// Why placement could not be recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}
