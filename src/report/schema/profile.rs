//! Scenario profiles (`profiles/*.toml`): what `acceval grade` measures and the thresholds it
//! judges by, as read from the file and as recorded in the report. Loading and validation
//! are `grade::profile`'s.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Precision;
use super::bench::BenchMode;
use super::llm::Api;
use super::train::Target;
use crate::standard::Level;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub schema: String,
    pub name: String,
    pub scenario: String,
    pub description: String,
    pub model: ModelSection,
    pub accuracy: AccuracySection,
    pub speed: SpeedSection,
    pub policy: PolicySection,
    #[serde(default)]
    pub telemetry: TelemetrySection,
    /// §7.2.5: when present, `grade` serves the model on loopback and measures its QPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qps: Option<QpsSection>,
    /// MindIE Benchmark's client mode against an LLM service (`acceval llm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSection>,
    /// §7.1 (optional): when present, `grade` trains a built-in workload and reports the
    /// training figures; its bounds are the profile's (the draft gives training no levels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<TrainSection>,
    /// §7.2.4 b: when present, `grade --cluster-run DIR` merges a cluster run the lab
    /// launched (`acceval bench --cluster DIR` under its launcher) and judges it on these
    /// bounds; acceval launches no cluster itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterSection>,
    #[serde(default)]
    pub attestations: Attestations,
}

/// A cluster stage: the merged figures of a cluster run of the grade's speed model. The
/// draft gives no cluster thresholds; these are the profile's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// The run must have at least this many ranks.
    #[serde(default = "default_cluster_ranks")]
    pub min_ranks: usize,
    /// §7.2.4 b cluster FPS = N / (max Tio − min Tis) must be at least this, inferences/s;
    /// judged on the low end of its clock-offset error bar.
    pub min_fps: f64,
    /// The slowest node's time over the mean node time must be at most this (1 = even).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_imbalance: Option<f64>,
}

fn default_cluster_ranks() -> usize {
    2
}

/// A training stage: `acceval train --workload W` with these settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainSection {
    /// lstm-load-forecast, mobilenetv2-meter or yolov8n-line.
    pub workload: String,
    #[serde(default = "default_train_epochs")]
    pub epochs: usize,
    pub batch: Option<usize>,
    /// Train on at most this many samples per epoch.
    pub samples: Option<usize>,
    pub eval_samples: Option<usize>,
    /// METRIC<=X or METRIC>=X: time to target is measured against it.
    #[serde(default, with = "target_text")]
    #[schemars(with = "Option<String>")]
    pub target: Option<Target>,
    /// The profile's bound: time to target at most this, s (needs `target`).
    pub max_time_to_target_s: Option<f64>,
    /// The profile's bound: the single-step P90 at most this, ms.
    pub max_step_p90_ms: Option<f64>,
    /// The profile's bound: throughput at least this, samples/s.
    pub min_throughput_samples_per_s: Option<f64>,
    #[serde(default)]
    pub seed: u64,
    /// MLPerf's `submission_org` for the mllog, as the lab attests it.
    pub submission_org: Option<String>,
    /// MLPerf's `submission_platform` (the system's name) for the mllog.
    pub submission_platform: Option<String>,
    /// MLPerf's `submission_division` for the mllog: closed or open.
    pub submission_division: Option<super::train::Division>,
}

fn default_train_epochs() -> usize {
    3
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// A zoo model (`yolov8n-line`) or an ONNX file (relative to the profile).
    pub name: String,
    /// Precisions graded for accuracy: `fp32`, `fp16`, `int8` (zoo variants).
    pub precisions: Vec<Precision>,
    /// The precision whose speed is measured.
    pub speed_precision: Precision,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccuracySection {
    /// Table 4: the Table 3 level every graded precision must reach.
    pub required: Level,
    /// The FP32 reference folder [default: the zoo model's].
    pub reference: Option<String>,
    /// The profile's task-agreement thresholds (beside the standard's MSE): the share of
    /// inputs whose top-1 class agrees with the reference's (classification), 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_top1: Option<f64>,
    /// ... whose top-5 classes hold the reference's top-1, 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_top5: Option<f64>,
    /// Detection: F1 of the boxes matched at IoU ≥ 0.5 with the reference's class, 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_f1: Option<f64>,
    /// Forecasting: mean absolute error against the reference, in the output's units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mae: Option<f64>,
    /// Forecasting: mean absolute percentage error against the reference, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mape_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpeedLevel {
    /// The judged percentile of the end-to-end batch-1 latency must be at most this, ms.
    pub max_latency_ms: f64,
    /// FPS (N / ΣTi) must be at least this, 1/s.
    pub min_fps: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpeedSection {
    /// Table 5: the speed level required (C1 the most demanding).
    pub required: Level,
    /// The latency percentile the levels are judged on, e.g. 90 (MLPerf SingleStream).
    pub percentile: f64,
    /// `pipeline` (decode, pre-process, forward, post-process) or `model-only`.
    pub mode: BenchMode,
    /// The profile's thresholds: `C1` .. `C4`, every one.
    pub levels: BTreeMap<Level, SpeedLevel>,
    /// The accelerator's FP32 peak, GFLOP/s, as its vendor states it: the denominator of
    /// the speed stage's share of peak where acceval cannot measure one (an NPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_gflops: Option<f64>,
    /// The FPS of Table 5 from the module pipelined (`bench --pipelined K`): K threads
    /// decode and pre-process while one runs the model, FPS = N / T over the module; the
    /// latency stays the one-at-a-time figure. Unset: FPS = N / ΣTi one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_workers: Option<usize>,
    /// With `pipeline_workers`: the model instances that take the prepared inputs, each its
    /// own session (`bench --instances M`, Triton's `instance_group` count). Unset: 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_instances: Option<usize>,
}

/// §7.2.5: the highest QPS within a latency bound, measured open loop against `acceval
/// serve` on 127.0.0.1 (the same backend as the speed stage, the speed precision's model).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QpsSection {
    /// The latency bound(s), as `acceval qps --slo`: `p99<=100ms`.
    pub slo: String,
    /// The profile's threshold: the max QPS must be at least this, 1/s.
    pub min_qps: f64,
    #[serde(default)]
    pub error_budget: f64,
    #[serde(default = "default_qps_step")]
    pub step_duration_s: f64,
    #[serde(default = "default_qps_warmup")]
    pub warmup_s: f64,
    #[serde(default = "default_qps_max_rate")]
    pub max_rate: f64,
    /// Stop bisecting when the bracket is narrower than this share.
    #[serde(default = "default_qps_precision")]
    pub precision: f64,
    /// Binary tensors (Triton's extension) rather than JSON.
    #[serde(default = "default_true")]
    pub binary: bool,
}

/// An LLM serving stage: `acceval llm` against `url` (or `grade --llm-url`), judged on the
/// profile's thresholds. The draft gives none; every threshold here is the profile's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    /// The service, e.g. `http://127.0.0.1:8080` (`grade --llm-url` overrides it).
    pub url: String,
    pub model: String,
    /// openai, openai-chat, tgi, triton or vllm.
    #[serde(default = "default_llm_api")]
    pub api: Api,
    /// MindIE's synthetic_config.json, relative to the profile.
    pub synthetic_config: String,
    #[serde(default = "default_one")]
    pub concurrency: usize,
    #[serde(default = "default_llm_warmup")]
    pub warmup: usize,
    /// FirstTokenTime SLO_P90 (MindIE's per-request P90) must be at most this, ms.
    pub max_first_token_ms: Option<f64>,
    /// TPOT SLO_P90 must be at most this, ms.
    pub max_tpot_ms: Option<f64>,
    /// Throughput must be at least this, req/s.
    pub min_throughput: Option<f64>,
    /// GenerateSpeed must be at least this, token/s.
    pub min_generate_speed: Option<f64>,
}

fn default_llm_api() -> Api {
    Api::Openai
}
fn default_one() -> usize {
    1
}
fn default_llm_warmup() -> usize {
    10
}

fn default_qps_step() -> f64 {
    5.0
}
fn default_qps_warmup() -> f64 {
    1.0
}
fn default_qps_max_rate() -> f64 {
    10000.0
}
fn default_qps_precision() -> f64 {
    0.1
}
fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicySection {
    pub warmup: usize,
    #[serde(default)]
    pub warmup_time_s: f64,
    pub runs: usize,
    pub duration_s: f64,
    #[serde(default)]
    pub interval_ms: f64,
    #[serde(default = "default_sample_ms")]
    pub sample_ms: u64,
    #[serde(default = "default_max_cv")]
    pub max_cv: f64,
    #[serde(default = "default_stability")]
    pub stability: f64,
}

fn default_sample_ms() -> u64 {
    1000
}
fn default_max_cv() -> f64 {
    0.25
}
fn default_stability() -> f64 {
    0.10
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySection {
    /// Sensors that must be available (`cpu`, `process`, `nvml`, `dcmi`, `rapl`, `ipmi`,
    /// `ptdaemon`); the grade fails when one is not.
    #[serde(default)]
    pub require: Vec<SensorName>,
}

/// A telemetry sensor a profile can require (`device::telemetry`'s names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SensorName {
    Cpu,
    Process,
    Nvml,
    Dcmi,
    Rapl,
    Ipmi,
    Ptdaemon,
}

impl SensorName {
    pub fn as_str(self) -> &'static str {
        match self {
            SensorName::Cpu => "cpu",
            SensorName::Process => "process",
            SensorName::Nvml => "nvml",
            SensorName::Dcmi => "dcmi",
            SensorName::Rapl => "rapl",
            SensorName::Ipmi => "ipmi",
            SensorName::Ptdaemon => "ptdaemon",
        }
    }
}

impl std::fmt::Display for SensorName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A training target as the text `METRIC<=X` / `METRIC>=X` (its `FromStr`), in the profile
/// and in the report that records it.
mod target_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Target;

    pub fn serialize<S: Serializer>(t: &Option<Target>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&t.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Target>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| s.parse::<Target>().map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// §7.2.1: what cannot be measured, attested by the lab (free text: what, version, where).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Attestations {
    pub installation_package: Option<String>,
    pub cpp_library: Option<String>,
    pub container_run_image: Option<String>,
    pub container_build_image: Option<String>,
}
