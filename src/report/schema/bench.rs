//! `acceval bench` (and grade's speed stage): latency (§7.2.3), FPS (§7.2.4), utilization,
//! power and energy under a run policy, judged VALID or INVALID.

use schemars::JsonSchema;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::session::SessionInfo;
use super::stats::{PercentileSupport, Summary};
use super::telemetry::{Recording, TelemetrySummary};
use super::{Task, Verdict};

/// The most stages a sample can have.
pub const MAX_STAGES: usize = 6;

/// How long and how often to measure.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Policy {
    /// Warm-up samples (untimed) — at least this many...
    pub warmup: usize,
    /// ...and for at least this long, s.
    pub warmup_time_s: f64,
    /// Steady samples — at least this many...
    pub runs: usize,
    /// ...and for at least this long, s (both minimums apply, as in MLPerf LoadGen).
    pub duration_s: f64,
    /// Idle time between samples, ms (a camera at 25 fps is not back-to-back).
    pub interval_ms: f64,
    /// The percentile the run is judged on (0.9 = P90).
    pub percentile: f64,
    /// Largest coefficient of variation of the end-to-end latency.
    pub max_cv: f64,
    /// Largest spread of the medians of the last 3 of 5 windows, max/min − 1.
    pub stability: f64,
}

/// One timed sample.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
pub struct Sample {
    /// Start, ms after the steady window's start (`BenchReport::origin_unix_ms`), on the
    /// monotonic clock.
    pub start_ms: f64,
    /// End to end, ms (host wall clock around the closure).
    pub total_ms: f64,
    /// Per-stage times, ms, in the order of the stage names.
    pub stages: [f64; MAX_STAGES],
}

/// One validity rule and whether it held.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Rule {
    pub rule: String,
    pub passed: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Validity {
    pub result: Verdict,
    pub rules: Vec<Rule>,
}

/// One timed figure with its definition.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Figure {
    pub value: Option<f64>,
    pub unit: String,
    pub definition: String,
}

/// The pipelined run: K worker threads decode and pre-process inputs into a bounded queue
/// while one thread runs the model and post-processes, as Triton ensembles and DALI
/// overlap them.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Pipelined {
    /// Threads that decode and pre-process.
    pub workers: usize,
    /// Model instances (each its own session with the run's intra-op threads) that take
    /// the prepared inputs, as Triton's `instance_group` count; 1 before they existed.
    #[serde(default = "one")]
    pub instances: usize,
    /// Prepared inputs that may wait for the model.
    pub queue_depth: usize,
    /// N: inputs taken and outputs written.
    pub samples: usize,
    /// Outputs each instance wrote, the warm one-at-a-time session first.
    #[serde(default)]
    pub outputs_per_instance: Vec<usize>,
    /// T: from the first input taken to the last output written, s.
    pub t_s: f64,
    /// N / T.
    pub fps: Figure,
    /// The same model and inputs one at a time: N / ΣTi of the run above.
    pub one_at_a_time_fps: Option<f64>,
    /// fps / one_at_a_time_fps.
    pub speedup: Option<f64>,
    /// Mean time a prepared input waited in the queue for a model instance, ms: long
    /// when the model is the bottleneck, near zero when the workers are.
    pub mean_wait_ms: Option<f64>,
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn one() -> usize {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StageReport {
    pub latency_ms: Option<Summary>,
    pub definition: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ColdStart {
    /// Parsing and optimising the model into the engine's IR, ms (null when the engine does
    /// it inside session creation).
    pub convert_ms: Option<f64>,
    pub init_ms: f64,
    /// The first inference after initialisation, ms (never part of the steady state).
    pub first_inference_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InputsInfo {
    pub source: String,
    /// Distinct inputs the samples cycle through.
    pub count: usize,
    /// Bytes of model input per sample (all inputs of one inference), averaged.
    pub model_input_bytes: u64,
    /// Bytes of the input files per sample (pipeline mode), averaged.
    pub file_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BatchPoint {
    pub batch: usize,
    pub latency_ms: Option<Summary>,
    /// batch × N / ΣTi.
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub samples_per_s: f64,
    /// batch × N / (end − start).
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub samples_per_s_wall: f64,
    /// Model input MB (10^6 bytes) per second, wall clock.
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub input_mb_per_s: f64,
    pub validity: Validity,
}

/// What `acceval bench` reports (schema `acceval.bench/1`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BenchReport {
    pub schema: String,
    pub model: String,
    pub model_sha256: String,
    pub mode: BenchMode,
    pub task: Option<Task>,
    pub session: SessionInfo,
    pub policy: Policy,
    pub inputs: InputsInfo,
    pub cold_start: ColdStart,
    pub warmup_samples: usize,
    pub warmup_ms: f64,
    /// The harness's own cost per sample (the loop around an empty closure), µs.
    pub harness_overhead_us: f64,
    /// End to end per sample, ms (§7.2.3).
    pub latency_ms: Option<Summary>,
    pub latency_definition: String,
    pub stages: BTreeMap<String, StageReport>,
    /// Where the host↔device copies are.
    pub copies: String,
    pub percentile_support: Vec<PercentileSupport>,
    /// N / ΣTi (§7.2.4 a).
    pub fps: Figure,
    /// N / (end − start).
    pub throughput: Figure,
    pub validity: Validity,
    pub batch_sweep: Vec<BatchPoint>,
    /// `--pipelined K`: the module's throughput with decode and pre-processing of the next
    /// inputs overlapping the current forward pass (§7.2.4 over the whole module).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipelined: Option<Pipelined>,
    /// `--peak-power`: the batch raised until throughput stops growing (§7.1.6 b).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_power: Option<PeakPower>,
    pub telemetry: Option<TelemetrySummary>,
    /// The forward pass's achieved arithmetic rate and its share of the device's peak
    /// (absent in reports written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<ComputeRate>,
    pub samples: usize,
    pub wall_s: f64,
    /// The UNIX time of the steady window's start, ms: every sample's `start_ms` in
    /// `samples.csv` is an offset from it on the monotonic clock (absent in reports written
    /// before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_unix_ms: Option<f64>,
    /// False when the run was interrupted or a sample failed; `error` says which.
    pub complete: bool,
    /// The stop flag (Ctrl-C, SIGTERM) ended it (absent when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip)]
    pub raw: Vec<Sample>,
    #[serde(skip)]
    pub stage_names: Vec<String>,
    #[serde(skip)]
    pub recording: Option<Recording>,
}

/// The peak arithmetic rate of a device (FP32), and how it was obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Peak {
    /// GFLOP/s (10^9 floating-point operations per second); null when unknown.
    pub gflop_per_s: Option<f64>,
    /// What it is the peak of, e.g. `CPU, 2 threads`, `GPU 0 NVIDIA H100`.
    pub device: String,
    /// How it was measured or computed.
    pub method: String,
    /// Why there is no figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// Achieved GFLOP/s of the forward pass: the model's FLOPs (`acceval inspect`) over the
/// forward time, beside the device's peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComputeRate {
    /// FLOPs of one forward pass at the measured input shapes (2 × MACs + other ops).
    pub model_flops: Option<u64>,
    /// True when some nodes could not be counted: the FLOPs and the rate are lower bounds.
    pub flops_lower_bound: bool,
    /// The forward time the rate is computed from: the median (P50), ms.
    pub forward_p50_ms: Option<f64>,
    /// model_flops / forward_p50, GFLOP/s.
    pub achieved_gflop_per_s: Option<f64>,
    pub peak: Peak,
    /// achieved / peak, %.
    pub share_of_peak_pct: Option<f64>,
    pub definition: String,
    /// Why a figure is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One step of the peak-power sweep.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PeakStep {
    pub batch: usize,
    pub samples_per_s: f64,
    /// The largest power sample per device during this step, W.
    pub max_power_w: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PeakPower {
    pub definition: String,
    pub steps: Vec<PeakStep>,
    /// The largest power sample per device over the sweep, W, and the batch it came at.
    pub peak: Vec<(String, f64, usize)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// What one sample times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BenchMode {
    /// Decode, pre-process, the backend's run, post-process.
    #[serde(rename = "pipeline")]
    Pipeline,
    /// The backend's run alone on pre-processed tensors.
    #[serde(rename = "model-only")]
    ModelOnly,
}

impl std::fmt::Display for BenchMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BenchMode::Pipeline => "pipeline",
            BenchMode::ModelOnly => "model-only",
        })
    }
}
