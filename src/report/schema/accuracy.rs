//! Accuracy (§6.2 i, Table 3): a backend's outputs against the FP32 CPU reference — per
//! output and per input MSE, max abs error, relative L2, cosine, decision agreement — and
//! the reference's own manifest (`reference_outputs/<model>/manifest.toml`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::session::SessionInfo;
use super::stats::Summary;
use super::{Precision, Verdict};
use crate::standard::Level;

/// The definition printed with every figure.
pub const DEFINITION: &str = "per output: MSE = Σ(output − reference)² / n over every element of every input (f64 sums); max abs error = max |output − reference|; relative L2 = ‖output − reference‖₂ / ‖reference‖₂; cosine = Σ output·reference / (‖output‖₂‖reference‖₂). The worst output's MSE is graded by Table 3 (C4 < 0.01, C3 < 0.1, C2 < 1, C1 < 10). NaN or Inf in any output fails.";

/// The error of one output tensor.
#[derive(Debug, Clone, Serialize, PartialEq, Deserialize, JsonSchema)]
pub struct ErrorMetrics {
    pub elements: u64,
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub mse: f64,
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub max_abs_error: f64,
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub rel_l2_error: f64,
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub cosine: f64,
    /// NaN / Inf values in the actual output (any of them fails the grading).
    pub nan_count: u64,
    pub inf_count: u64,
    /// Flat (row-major) index of the first NaN / Inf, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_nonfinite: Option<u64>,
}

/// Agreement over all inputs.
#[derive(Debug, Clone, Serialize, PartialEq, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Agreement {
    /// Classification: inputs whose top-1 class equals the reference's, and inputs whose
    /// top-5 classes include the reference's top-1.
    Top1 {
        inputs: u64,
        agree: u64,
        #[serde(default)]
        top5_agree: u64,
    },
    /// Detection at the given post-processing thresholds: boxes matched one to one at
    /// IoU >= match_iou; `same_class` of them with the reference's class.
    Detection {
        conf: f32,
        nms_iou: f64,
        match_iou: f64,
        reference_boxes: u64,
        boxes: u64,
        matched: u64,
        same_class: u64,
    },
    /// Forecasting: the absolute error of every output element, and the absolute
    /// percentage error where the reference is away from zero (|reference| > 1e-6).
    Forecast {
        inputs: u64,
        elements: u64,
        abs_error_sum: f64,
        ape_sum: f64,
        ape_elements: u64,
    },
    NotApplicable {
        reason: String,
    },
}

/// A tensor the model takes or gives, as the reference holds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct IoDecl {
    pub name: String,
    pub elem_type: String,
    pub shape: Vec<usize>,
}

/// One file of the reference and its hash.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct FileHash {
    pub file: String,
    pub sha256: String,
    pub bytes: u64,
}

/// One `test_data_set_N`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct SetRecord {
    pub dir: String,
    /// Where its inputs come from: `substation-03.jpg`, `load-series.csv rows 0..96`, ...
    pub source: String,
    /// SHA-256 of the source file (image, CSV, array) the inputs were made from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_sha256: Option<String>,
    pub files: Vec<FileHash>,
}

/// How one output agreed between the two engines, worst over the sets.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct OutputAgreement {
    pub name: String,
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub max_rel_l2_error: f64,
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub max_abs_error: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct CrossCheck {
    /// "agreed", or "not done: <reason>".
    pub status: String,
    pub backend: String,
    pub engine: String,
    pub tolerance_rel_l2: f64,
    pub outputs: Vec<OutputAgreement>,
}

/// `manifest.toml` of a reference.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct RefManifest {
    pub schema: String,
    /// The model's name: the zoo name, or the file's stem.
    pub model: String,
    pub model_file: String,
    pub model_sha256: String,
    pub backend: String,
    pub engine: String,
    /// Session options of the reference engine (threads, optimisation level).
    pub options: std::collections::BTreeMap<String, String>,
    pub created_utc: String,
    pub acceval_version: String,
    /// What the inputs are: an input set, files, or seeded data.
    pub input_source: String,
    pub preprocessing: String,
    pub inputs: Vec<IoDecl>,
    pub outputs: Vec<IoDecl>,
    pub cross_check: CrossCheck,
    pub sets: Vec<SetRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OutputResult {
    pub name: String,
    pub elem_type: String,
    pub shape: Vec<usize>,
    #[serde(flatten)]
    pub metrics: ErrorMetrics,
    pub level: Option<Level>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InputOutput {
    pub name: String,
    #[serde(flatten)]
    pub metrics: ErrorMetrics,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InputResult {
    /// `test_data_set_N`.
    pub set: String,
    /// What the input was made from (image, window of a series, ...).
    pub source: String,
    /// The worst output's MSE on this input.
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub mse: f64,
    pub level: Option<Level>,
    pub outputs: Vec<InputOutput>,
    pub agreement: Agreement,
    /// The backend's run on this input (copy in, forward, copy out), ms, warm.
    pub latency_ms: f64,
}

/// Where a NaN or Inf was found.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Nonfinite {
    pub output: String,
    pub set: String,
    pub nan_count: u64,
    pub inf_count: u64,
    /// Index of the first one, per dimension.
    pub first_index: Vec<usize>,
}

/// `provenance.toml` in a reference folder computed outside acceval (an ONNX
/// `test_data_set_N` tree written by PyTorch, ONNX Runtime or a vendor's framework): which
/// engine computed the outputs, so the reference can count as independent of the engine
/// under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The engine and its version, e.g. "onnxruntime 1.32.0" or "pytorch 2.13.0".
    pub engine: String,
    /// Where it ran, e.g. "CPU" or "NVIDIA A100".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Who or what wrote the folder (a script, a lab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produced_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_utc: Option<String>,
    /// SHA-256 of the model file the outputs are of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_sha256: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ReferenceInfo {
    pub dir: String,
    /// False for a folder of ONNX test data without acceval's manifest (nothing checked).
    pub manifest: bool,
    pub model: Option<String>,
    pub model_sha256: Option<String>,
    pub engine: Option<String>,
    pub created_utc: Option<String>,
    pub cross_check: Option<String>,
    /// How the model under test relates to the reference's model.
    pub relation: String,
    /// A folder without acceval's manifest: its provenance.toml, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// What `acceval accuracy` reports (`--json`, schema `acceval.accuracy/1`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AccuracyReport {
    pub schema: String,
    pub model: String,
    pub model_sha256: String,
    pub precision: Option<Precision>,
    pub session: SessionInfo,
    pub reference: ReferenceInfo,
    pub definition: String,
    /// The worst output's MSE (null when an output holds NaN/Inf).
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub mse: f64,
    pub worst_output: String,
    /// Table 3 level of `mse`; null when even C1 is missed or an output is not finite.
    pub level: Option<Level>,
    /// The bound the level was given by, e.g. "MSE < 0.1 (C3)".
    pub threshold: String,
    pub required: Option<Level>,
    /// PASS / FAIL when a level is required, FAIL whenever an output is not finite.
    pub verdict: Option<Verdict>,
    pub verdict_reason: Option<String>,
    pub outputs: Vec<OutputResult>,
    pub inputs: Vec<InputResult>,
    pub nonfinite: Vec<Nonfinite>,
    /// The null baselines: what zeros, a constant and input-independent outputs score.
    pub discrimination: Discrimination,
    /// Whether the reference comes from another engine than the one under test.
    pub independence: Independence,
    pub agreement: Agreement,
    pub agreement_text: String,
    /// Warm runs of the backend, one per input, ms.
    pub latency_ms: Option<Summary>,
    pub inputs_used: usize,
    pub inputs_available: usize,
    /// False when a run stopped early; `error` says why.
    pub complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `acceval accuracy --all-precisions`: one report per precision variant.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PrecisionTable {
    pub schema: String,
    pub model: String,
    pub backend: String,
    pub rows: Vec<AccuracyReport>,
}

/// A null output graded against the same reference: what a broken device would score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum NullKind {
    /// All zeros (a device that returns nothing).
    #[serde(rename = "zeros")]
    Zeros,
    /// The per-element mean of the reference outputs over the inputs: the best constant,
    /// input-independent output.
    #[serde(rename = "mean")]
    Mean,
    /// The reference outputs of another input (input k graded against input k+1's):
    /// plausible outputs that ignore the input.
    #[serde(rename = "permuted")]
    Permuted,
}

impl std::fmt::Display for NullKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NullKind::Zeros => "zeros",
            NullKind::Mean => "mean of the reference outputs",
            NullKind::Permuted => "reference outputs permuted across inputs",
        })
    }
}

/// One null baseline's grade.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NullBaseline {
    pub kind: NullKind,
    /// The worst output's MSE against the reference (null when it cannot be formed).
    pub mse: Option<f64>,
    pub worst_output: Option<String>,
    /// The Table 3 level this null output would get.
    pub level: Option<Level>,
    /// Whether it meets the required level (it must not, for the grade to count).
    pub meets_required: Option<bool>,
    /// Why it cannot be formed (one input, outputs of different shapes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// Whether the reference can tell a broken device from a working one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Discrimination {
    pub definition: String,
    pub nulls: Vec<NullBaseline>,
    /// How much the reference outputs depend on the input: the RMS of each output's
    /// deviation from its per-element mean over the inputs, over the RMS of the output,
    /// the smallest over the outputs (0: the outputs ignore the input).
    pub input_dependence: Option<f64>,
    /// False when a null output meets the required level: the grade is then INVALID.
    pub discriminating: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Whether the reference was computed, or cross-checked, on an engine other than the one
/// under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Independence {
    pub independent: bool,
    pub reason: String,
}

/// One output of a converted model against the source model's.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConvertedOutput {
    /// The source model's output (`output_0`, ...) and the converted model's, by position.
    pub source: String,
    pub converted: String,
    pub metrics: ErrorMetrics,
    pub level: Option<Level>,
}

/// The converted model on one engine against the source model on its own framework.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConvertedEngine {
    pub session: SessionInfo,
    /// Every output over every input, pooled (Table 3's MSE is the worst output's).
    pub outputs: Vec<ConvertedOutput>,
    pub mse: f64,
    pub worst_output: String,
    /// Table 3's level of the worst output's MSE.
    pub level: Option<Level>,
    /// Top-1 agreement of the first output (class scores), when the task is classification:
    /// the share of inputs whose arg-max is the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top1_agreement: Option<f64>,
    /// PASS/FAIL against `required`, when one is.
    pub verdict: Option<Verdict>,
    /// Why the engine could not run the converted model, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `acceval accuracy --model SOURCE --against CONVERTED`: a model's conversion (e.g. a
/// TorchScript model exported to ONNX, §5.3 a) checked by running both on the same inputs, the
/// source on its own framework (the reference: the lab's model as its framework runs it) and
/// the conversion on each engine, graded with Table 3.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConversionReport {
    pub schema: String,
    pub source: String,
    pub source_sha256: String,
    pub converted: String,
    pub converted_sha256: String,
    /// The session that ran the source model: the reference.
    pub reference: SessionInfo,
    /// How the inputs were made (seeded, at the converted model's declared shapes).
    pub inputs: String,
    pub input_sets: usize,
    pub definition: String,
    pub engines: Vec<ConvertedEngine>,
    pub required: Option<Level>,
}
