//! The words reports are made of: tasks, precision variants, and the statuses and verdicts
//! every result carries, as enums with serde and `Display` (never strings compared by value).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a model does with its output.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    Classification,
    Detection,
    Forecasting,
}

/// A numeric precision variant of a zoo model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp32,
    Fp16,
    /// INT8 QDQ: weights per-channel symmetric, activations per-tensor, calibrated on the
    /// model's input set.
    Int8,
}

impl Precision {
    /// The zoo file-name suffix of the variant (`-fp16`, `-int8`; none for FP32).
    pub fn suffix(self) -> &'static str {
        match self {
            Precision::Fp32 => "",
            Precision::Fp16 => "-fp16",
            Precision::Int8 => "-int8",
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::Fp32 => "FP32",
            Precision::Fp16 => "FP16",
            Precision::Int8 => "INT8",
        })
    }
}
