//! The zoo's manifest (`models/zoo.toml`): every model's file, hash, parameters and MACs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Precision, Task};

/// One line of `models/zoo.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct ManifestModel {
    pub name: String,
    pub file: String,
    pub scenario: String,
    pub task: Task,
    pub precision: Precision,
    pub input: String,
    pub input_shape: Vec<i64>,
    pub architecture: String,
    pub reference: String,
    pub labels: Vec<String>,
    pub sha256: String,
    pub bytes: u64,
    pub params: u64,
    pub params_bytes: u64,
    pub macs: u64,
    /// Whether the file is committed (at most 5 MB) or built on demand.
    pub committed: bool,
    /// How the weights were trained (absent: seeded weights).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingRecord>,
}

/// How a zoo model's weights were trained (`acceval train ... --save-weights`): written
/// beside the weights as `models/weights/<name>.toml` and copied into the manifest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct TrainingRecord {
    pub workload: String,
    /// The command line that trained them.
    pub command: String,
    pub epochs: usize,
    pub batch: usize,
    pub learning_rate: f64,
    pub seed: u64,
    /// The recipe: data, pre-processing, loss, evaluation.
    pub recipe: String,
    pub data: Vec<TrainingData>,
    /// The held-out metric after the last epoch, and its baseline.
    pub held_out_metric: String,
    pub held_out_value: f64,
    pub baseline: String,
    pub baseline_value: f64,
    /// Te − Ts of the training, s, and where it ran.
    pub train_s: f64,
    pub device: String,
    /// SHA-256 of the weights file.
    pub weights_sha256: String,
}

/// A data split a training read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct TrainingData {
    pub split: String,
    pub name: String,
    pub samples: u64,
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default, JsonSchema)]
pub struct Manifest {
    /// Format of the models (bumped when generation changes, with new hashes).
    pub zoo_version: u32,
    pub models: Vec<ManifestModel>,
}

/// `acceval zoo list --json`: the manifest, and each model's null check.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct Listing {
    #[serde(flatten)]
    pub manifest: Manifest,
    pub null_checks: Vec<NullCheck>,
}

/// Whether a zoo model's committed reference can tell a broken device from a working one at
/// the level its shipped profiles require: the null outputs (zeros, the mean of the
/// reference outputs, the outputs of another input) graded like a device's. A model whose
/// null output meets that level is marked: its accuracy grades are INVALID until its
/// weights make the outputs depend on the input (trained weights).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct NullCheck {
    /// The zoo model (its FP32 file's reference serves every precision).
    pub model: String,
    /// The shipped profiles that grade it.
    pub profiles: Vec<String>,
    /// The strictest accuracy level those profiles require (none: no shipped profile).
    pub required: Option<crate::standard::Level>,
    /// Whether its weights are trained (zoo.toml's training record) or seeded.
    pub trained: bool,
    /// The reference folder.
    pub reference: String,
    /// False when the reference was computed from another file than the zoo's FP32 model
    /// (`acceval reference --model NAME` recomputes it).
    pub reference_current: Option<bool>,
    /// The null baselines (absent when the reference could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discrimination: Option<super::accuracy::Discrimination>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}
