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
    /// INT8 QDQ: weights INT8 per-channel symmetric, activations UINT8 per-tensor with a
    /// zero point, over ranges calibrated on the model's calibration inputs.
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

/// A verdict: of a run's validity, a clause, an accuracy grade, a whole report. Serialized
/// as the words reports print (`VALID`, `PASS`, `N/A`, `COMPLIANT`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Verdict {
    /// A measurement whose run policy held.
    #[serde(rename = "VALID")]
    Valid,
    /// A measurement that cannot be trusted (a rule failed), or a grade that cannot tell a
    /// broken device from a working one.
    #[serde(rename = "INVALID")]
    Invalid,
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "FAIL")]
    Fail,
    /// The clause does not apply to this run.
    #[serde(rename = "N/A")]
    NotApplicable,
    /// Cannot be measured; the lab attests it.
    #[serde(rename = "ATTESTED")]
    Attested,
    /// Evidence is missing (a stage did not finish, a sensor did not answer).
    #[serde(rename = "INCOMPLETE")]
    Incomplete,
    #[serde(rename = "COMPLIANT")]
    Compliant,
    #[serde(rename = "NOT COMPLIANT")]
    NotCompliant,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Valid => "VALID",
            Verdict::Invalid => "INVALID",
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NotApplicable => "N/A",
            Verdict::Attested => "ATTESTED",
            Verdict::Incomplete => "INCOMPLETE",
            Verdict::Compliant => "COMPLIANT",
            Verdict::NotCompliant => "NOT COMPLIANT",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
