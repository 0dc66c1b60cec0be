//! `acceval run`: one model on one backend (the §5.3 timings, the outputs, operator
//! placement), and the task pipeline's runs on images or a load series.

use schemars::JsonSchema;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Task;
use super::session::{LoadTimings, NodePlacement, PlacementSummary, SessionInfo};
use super::stats::Summary;

/// Per-stage wall-clock times of one pass, ms.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct StageTimes {
    /// Reading and decoding the file (image decode, CSV parse).
    pub decode_ms: f64,
    /// Resize/letterbox/normalise/NCHW, or windowing/normalising.
    pub preprocess_ms: f64,
    /// The backend's run: copy in, forward, copy out.
    pub forward_ms: f64,
    /// The copies and the execution inside `forward_ms`, where the session times them apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<super::session::CopyTimes>,
    /// Softmax/top-k, box decoding + NMS, or de-normalisation.
    pub postprocess_ms: f64,
    /// All of the above (the §7.2.3 module time).
    pub total_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutput {
    Classes(Vec<Class>),
    Detections(Vec<Detection>),
    /// Forecast load, MW, one value per step.
    ForecastMw(Vec<f64>),
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TaskRun {
    pub input: String,
    pub stages: StageTimes,
    pub output: TaskOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub letterbox: Option<Letterbox>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Class {
    pub class: usize,
    pub label: String,
    pub probability: f32,
}

/// One detection, in original-image pixels (x1, y1) top-left, (x2, y2) bottom-right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Detection {
    pub class: usize,
    pub label: String,
    pub score: f32,
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
}

/// Thresholds of the post-processing (ultralytics' defaults for prediction).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
pub struct DetectParams {
    pub conf: f32,
    pub iou: f64,
    pub max_det: usize,
}

/// How a letterboxed image maps back to the original.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Letterbox {
    /// Scale applied to the original (same on both axes).
    pub scale: f64,
    /// Padding added on the left and top, pixels of the model input.
    pub pad_x: f64,
    pub pad_y: f64,
    pub orig_w: u32,
    pub orig_h: u32,
}

/// Where an input came from.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InputRecord {
    pub name: String,
    pub elem_type: String,
    pub shape: Vec<usize>,
    pub source: String,
}

/// One output, summarised.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OutputRecord {
    pub name: String,
    pub elem_type: String,
    pub shape: Vec<usize>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    pub nan_count: usize,
    pub inf_count: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunTimings {
    #[serde(flatten)]
    pub load: LoadTimings,
    /// The first inference after initialisation (cold), ms.
    pub first_inference_ms: f64,
    /// The steady runs after it, ms per inference (host wall clock, synchronised).
    pub steady_ms: Option<Summary>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PlacementRecord {
    pub source: String,
    pub nodes_by_device: BTreeMap<String, usize>,
    /// Nodes that ran on the CPU although an accelerator was asked for.
    pub cpu_fallback: Vec<String>,
    pub nodes: Vec<NodePlacement>,
}

/// What `acceval run` reports (`--json`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunReport {
    pub schema: String,
    pub model: String,
    pub session: SessionInfo,
    pub timings: RunTimings,
    pub inputs: Vec<InputRecord>,
    pub outputs: Vec<OutputRecord>,
    pub output_file: Option<String>,
    pub placement: Option<PlacementRecord>,
    /// The share of the graph's nodes and MACs on the device under test (with --placement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_summary: Option<PlacementSummary>,
}

/// What `acceval run --image/--series` reports.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TaskReport {
    pub schema: String,
    pub model: String,
    pub task: Task,
    pub session: SessionInfo,
    pub load: LoadTimings,
    /// False when a file of the batch failed: `runs` then holds the ones before it.
    pub complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub runs: Vec<TaskRun>,
}
