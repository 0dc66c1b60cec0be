//! The compliance report of `acceval grade`: `report.json` is the serialization of
//! [`GradeReport`], and report.md, report.html, the CSVs and the terminal summary are
//! rendered from it (here and by `acceval report`). `manifest.json` is [`Manifest`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Verdict;
use super::accuracy::AccuracyReport;
use super::bench::{BenchReport, ComputeRate};
use super::devices::Devices;
use super::llm::LlmReport;
use super::profile::{Profile, SpeedLevel};
use super::qps::QpsReport;
use super::session::PlacementSummary;
use crate::standard::Level;

/// The schema of `report.json`. Version 1 (acceval 0.1 before the typed report) had the
/// same fields; `verify` still checks its hashes and schema, `report` cannot render it.
pub const SCHEMA: &str = "acceval.report/2";
/// The schema of `manifest.json`.
pub const MANIFEST_SCHEMA: &str = "acceval.manifest/2";
/// Manifests written before `provenance_sha256` existed (verified without it).
pub const MANIFEST_SCHEMA_V1: &str = "acceval.manifest/1";

use super::Precision;

/// The tool that wrote a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tool {
    pub name: String,
    pub version: String,
    /// The commit acceval was built from, captured at build time (`... (modified)` when its
    /// sources differed from that commit).
    pub git_commit: String,
    /// The cargo features it was built with. Absent when there were none, and in reports
    /// written before they were recorded (whose manifests must re-serialise byte for byte).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
}

/// How a stage of the grade ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StageStatus {
    #[serde(rename = "done")]
    Done,
    #[serde(rename = "failed")]
    Failed,
    #[serde(rename = "interrupted")]
    Interrupted,
    #[serde(rename = "not run")]
    NotRun,
}

impl std::fmt::Display for StageStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StageStatus::Done => "done",
            StageStatus::Failed => "failed",
            StageStatus::Interrupted => "interrupted",
            StageStatus::NotRun => "not run",
        })
    }
}

/// One stage of the grade.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stage {
    pub name: String,
    pub status: StageStatus,
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Whose threshold a clause is judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Source {
    /// The draft's requirement.
    #[serde(rename = "standard")]
    Standard,
    /// A threshold the profile sets where the draft gives none.
    #[serde(rename = "profile")]
    Profile,
    #[serde(rename = "report only")]
    ReportOnly,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Source::Standard => "standard",
            Source::Profile => "profile",
            Source::ReportOnly => "report only",
        })
    }
}

/// One clause of the standard (or of the profile) and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Clause {
    pub clause: String,
    pub title: String,
    pub requirement: String,
    pub measured: String,
    /// PASS, FAIL, N/A, ATTESTED, INCOMPLETE or INVALID.
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: Source,
}

/// Tables 1–2 of the model under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelSummary {
    pub name: String,
    pub file: String,
    pub sha256: String,
    pub params: u64,
    pub params_bytes: u64,
    /// MB = 10^6 bytes.
    pub params_mb: f64,
    pub table1_level: Option<Level>,
    pub macs: Option<u64>,
    pub flops: Option<u64>,
    pub gflops: Option<f64>,
    pub table2_level: Option<Level>,
}

/// A precision whose accuracy could not be measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AccuracyError {
    pub precision: Precision,
    pub error: String,
}

/// Utilization and power channels over the speed run: rows `[t_ms, v1, v2, ...]`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Timeline {
    pub channels: Vec<String>,
    #[serde(deserialize_with = "super::nan::rows")]
    #[schemars(with = "Vec<Vec<Option<f64>>>")]
    pub ticks: Vec<Vec<f64>>,
}

/// The speed stage (§7.2.3–7.2.6, Table 5).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SpeedResult {
    pub model: Option<String>,
    pub precision: Precision,
    /// The judged percentile, 0–100.
    pub percentile: f64,
    pub latency_at_percentile_ms: Option<f64>,
    pub fps: Option<f64>,
    /// The Table 5 level reached (the profile's thresholds).
    pub achieved: Option<Level>,
    pub required: Level,
    pub meets: bool,
    pub thresholds: BTreeMap<Level, SpeedLevel>,
    /// The forward pass's achieved GFLOP/s and share of the device's peak (also in `bench`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<ComputeRate>,
    pub bench: BenchReport,
    /// Every end-to-end sample, ms.
    pub latencies_ms: Vec<f64>,
    pub telemetry_timeline: Option<Timeline>,
}

/// A decision the numbers depend on, and whose it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    pub topic: String,
    pub source: String,
    pub text: String,
}

/// `report.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GradeReport {
    pub schema: String,
    pub tool: Tool,
    pub created_utc: String,
    pub command_line: Vec<String>,
    pub profile_file: String,
    pub profile_sha256: String,
    pub profile: Profile,
    /// `--runs`/`--duration` changed the profile's policy: not a certification result.
    pub policy_overridden: bool,
    pub backend: String,
    /// COMPLIANT, NOT COMPLIANT or INCOMPLETE.
    pub verdict: Verdict,
    pub verdict_reasons: Vec<String>,
    pub complete: bool,
    pub stages: Vec<Stage>,
    pub clauses: Vec<Clause>,
    pub devices: Option<Devices>,
    pub model: Option<ModelSummary>,
    pub accuracy: Vec<AccuracyReport>,
    pub accuracy_errors: Vec<AccuracyError>,
    pub speed: Option<SpeedResult>,
    /// Where the speed model's operators ran (§6.2 f) and the adaptation route (§6 g).
    #[serde(default)]
    pub placement: Option<PlacementSummary>,
    pub qps: Option<QpsReport>,
    pub llm: Option<LlmReport>,
    /// The `[train]` stage's result (§7.1, optional).
    #[serde(default)]
    pub train: Option<super::train::TrainReport>,
    /// The `[cluster]` stage's result: `merge` of the cluster run given with
    /// `--cluster-run` (§7.2.4 b).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<super::cluster::ClusterReport>,
    pub decisions: Vec<Decision>,
    /// Each `grade --resume` that continued this run: when, and which stages it kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<Resumed>,
}

/// One `grade --resume` of an INCOMPLETE run (same binary, profile, model and devices).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Resumed {
    pub at_utc: String,
    /// The stages carried over from the interrupted run as they were measured (with devices
    /// and model identified again and compared).
    pub kept_stages: Vec<String>,
    /// The accuracy precisions carried over from an accuracy stage cut part-way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_precisions: Vec<Precision>,
}

/// A file and its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileEntry {
    pub file: String,
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The profile a report was made with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileEntry {
    pub file: String,
    pub sha256: String,
}

/// The environment of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Environment {
    pub os: String,
    pub arch: String,
    /// ACCEVAL_*, ORT_DYLIB_PATH, CUDA_*, ASCEND_* as set.
    pub variables: BTreeMap<String, String>,
}

/// The seeds the run depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Seeds {
    /// How the inputs and weights are seeded.
    pub inputs: String,
    /// The seed of generated benchmark inputs.
    pub bench: u64,
}

/// `manifest.json`: what another lab needs to re-run the report, and the SHA-256 of every
/// file of the folder for `acceval verify`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Manifest {
    pub schema: String,
    pub tool: Tool,
    pub command_line: Vec<String>,
    pub profile: ProfileEntry,
    pub models: Vec<FileEntry>,
    pub inputs: Vec<FileEntry>,
    pub references: Vec<FileEntry>,
    pub seeds: Seeds,
    pub environment: Environment,
    pub files: Vec<FileEntry>,
    /// SHA-256 of this manifest's JSON with `files` emptied and this field left out: an
    /// edit of the provenance above (profile, models, inputs, references, seeds,
    /// environment) is found without a signature. It guards against accidents; a
    /// deliberate edit that recomputes it is what the signature (`grade --sign`) is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance_sha256: Option<String>,
}
