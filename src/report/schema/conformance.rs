//! `acceval conformance`: an ONNX test-data suite (ONNX's backend node tests) through a
//! backend, counted per operator.

use schemars::JsonSchema;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How one case ended.
#[derive(Debug, Clone, Serialize, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    /// The outputs differ beyond the tolerance.
    Mismatch,
    /// The model or its data could not be read.
    BadCase,
    LoadFailed,
    RunFailed,
    TimedOut,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CaseResult {
    pub name: String,
    /// The operator under test (the single node's op type), or `composite` for
    /// multi-node (function-expanded) cases.
    pub op: String,
    pub status: Status,
    pub reason: Option<String>,
    pub max_abs_diff: Option<f64>,
    pub seconds: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Counts {
    pub cases: usize,
    pub loaded: usize,
    pub ran: usize,
    pub passed: usize,
}

/// What `acceval conformance` reports.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConformanceReport {
    pub schema: String,
    pub backend: String,
    pub engine: Option<String>,
    pub suite: String,
    pub rtol: f64,
    pub atol: f64,
    /// `fp32` or `all`.
    pub types: SuiteTypes,
    /// Cases in the suite folder, and how many the type selection skipped.
    pub cases_found: usize,
    pub cases_skipped: usize,
    pub totals: Counts,
    pub pass_rate: Option<f64>,
    pub by_op: BTreeMap<String, Counts>,
    pub cases: Vec<CaseResult>,
    pub seconds: f64,
    /// Whether the table view lists every failing case (`--failures`; not serialized).
    #[serde(skip)]
    #[schemars(skip)]
    pub show_failures: bool,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SuiteTypes {
    Fp32,
    All,
}
