//! Training results (§7.1, optional in the draft): single-step and total time (§7.1.3),
//! utilization per epoch (§7.1.4), throughput (§7.1.5), power (§7.1.6) and energy
//! efficiency (§7.1.7), for a built-in workload on candle or a lab's own training script
//! read through its MLPerf `:::MLLOG` events. A figure that was not measured is
//! `"n/a: <reason>"`, never 0 ([`Measured`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::stats::Summary;
use super::telemetry::SensorStatus;

/// A figure that is a number when measured and `"n/a: <reason>"` when not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Measured {
    Value(f64),
    Missing(NotMeasured),
}

/// Why a figure is missing, serialized `"n/a: <reason>"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(into = "String", try_from = "String")]
#[schemars(with = "String")]
pub struct NotMeasured(pub String);

impl From<NotMeasured> for String {
    fn from(n: NotMeasured) -> String {
        format!("n/a: {}", n.0)
    }
}

impl TryFrom<String> for NotMeasured {
    type Error = String;
    fn try_from(s: String) -> Result<NotMeasured, String> {
        s.strip_prefix("n/a: ")
            .map(|r| NotMeasured(r.to_string()))
            .ok_or_else(|| format!("'{s}' is neither a number nor 'n/a: <reason>'"))
    }
}

impl Measured {
    /// `Some(x)` for a finite value; a non-finite one is "n/a".
    pub fn of(v: Option<f64>, why: &str) -> Measured {
        match v {
            Some(x) if x.is_finite() => Measured::Value(x),
            _ => Measured::Missing(NotMeasured(why.to_string())),
        }
    }
    pub fn na(why: impl Into<String>) -> Measured {
        Measured::Missing(NotMeasured(why.into()))
    }
    pub fn value(&self) -> Option<f64> {
        match self {
            Measured::Value(v) => Some(*v),
            Measured::Missing(_) => None,
        }
    }
}

impl std::fmt::Display for Measured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Measured::Value(v) if v.abs() >= 100.0 => write!(f, "{v:.1}"),
            Measured::Value(v) => write!(f, "{v:.4}"),
            Measured::Missing(n) => write!(f, "n/a: {}", n.0),
        }
    }
}

/// Where the training ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrainMode {
    /// A built-in workload on acceval's candle trainer.
    Builtin,
    /// A lab's own training process (`--exec`), read through its `:::MLLOG` events.
    Exec,
}

/// Utilization over one epoch (§7.1.4): the 1 s samples inside the epoch window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EpochUtilization {
    /// S/N: the mean of the samples, %.
    pub mean: Measured,
    pub max: Measured,
    /// Samples inside the epoch (one per second of epoch at the default interval).
    pub n: usize,
}

/// One epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Epoch {
    /// Numbered from 1, as MLPerf does.
    pub index: usize,
    /// Epoch start to its end (after device synchronisation), s.
    pub time_s: f64,
    pub samples: u64,
    pub throughput_samples_per_s: f64,
    pub utilization: EpochUtilization,
    /// Ei: the energy counter or the trapezoid of power samples inside the epoch.
    pub energy_j: Measured,
    /// Mean training loss over the epoch's steps (built-in workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    /// The evaluation after the epoch (`eval_accuracy` for --exec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<EvalPoint>,
}

/// An evaluation: the metric's name and value, and when it finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EvalPoint {
    pub metric: String,
    pub value: f64,
    /// From the run start (the clock start of time to target), s.
    pub at_s: f64,
}

/// `--target METRIC<=X` or `METRIC>=X`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Target {
    pub metric: String,
    /// `<=` (a loss, an error) or `>=` (an accuracy).
    pub op: String,
    pub value: f64,
}

impl Target {
    pub fn reached(&self, v: f64) -> bool {
        if self.op == "<=" {
            v <= self.value
        } else {
            v >= self.value
        }
    }
}

impl std::str::FromStr for Target {
    type Err = String;
    /// `METRIC<=X` or `METRIC>=X` (`mae_mw<=30`, `eval_accuracy>=0.9`).
    fn from_str(s: &str) -> Result<Target, String> {
        let (metric, op, v) = if let Some((m, v)) = s.split_once("<=") {
            (m, "<=", v)
        } else if let Some((m, v)) = s.split_once(">=") {
            (m, ">=", v)
        } else {
            return Err(format!(
                "'{s}' is not METRIC<=X or METRIC>=X (e.g. mae_mw<=30)"
            ));
        };
        let metric = metric.trim();
        if metric.is_empty()
            || !metric
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!(
                "'{metric}' is not a metric name (letters, digits, _)"
            ));
        }
        let value: f64 = v
            .trim()
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite())
            .ok_or_else(|| format!("'{}' is not a finite number", v.trim()))?;
        Ok(Target {
            metric: metric.to_string(),
            op: op.to_string(),
            value,
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}{}", self.metric, self.op, self.value)
    }
}

/// Power over the training (§7.1.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrainPower {
    /// Energy / time over the run, W.
    pub average: Measured,
    /// The largest power sample; with `--peak-power`, over the batch sweep (§7.1.6 b).
    pub peak: Measured,
}

/// One precision the draft asks training to support (§6 e: FP16, FP32, FP64).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PrecisionSupport {
    pub precision: String,
    /// `"available: ..."` or `"n/a: <reason>"`.
    pub status: super::telemetry::State,
}

/// One step of the peak-power sweep (§7.1.6 b).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeakPowerStep {
    pub batch: usize,
    pub samples_per_s: f64,
    pub max_power_w: Measured,
}

/// A held-out metric beside its baseline (the seasonal-naive MAE, chance accuracy, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeldOut {
    pub metric: String,
    pub value: f64,
    pub baseline: String,
    pub baseline_value: f64,
    /// Whether the model beats the baseline (lower or higher, as the metric goes).
    pub beats_baseline: bool,
    pub samples: usize,
}

/// One run of `--repeat N`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSummary {
    pub total_s: f64,
    pub time_to_target_s: Measured,
}

/// MLPerf's olympic mean over the runs (drop the fastest and the slowest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Repeat {
    pub runs: Vec<RunSummary>,
    /// Of total_s over the runs, s (≥ 3 runs; with fewer, "n/a").
    pub olympic_total_s: Measured,
    pub olympic_time_to_target_s: Measured,
    pub rule: String,
}

/// `acceval train`: one training evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrainReport {
    pub schema_version: u32,
    pub mode: TrainMode,
    /// The workload, or the command line of `--exec`.
    pub workload: String,
    pub framework: String,
    /// The device asked for and the device used.
    pub device_requested: String,
    pub device: String,
    pub precision: String,
    pub precisions: Vec<PrecisionSupport>,
    pub batch: Measured,
    pub seed: Measured,
    pub learning_rate: Measured,
    pub optimizer: String,
    /// The data sets trained and evaluated on, with their SHA-256.
    pub data: Vec<DataRef>,
    /// Te − Ts: the training's launch to its end (built-in: the process's start; --exec:
    /// the child's spawn to its exit), timed from outside the training loop, s.
    pub total_s: f64,
    pub total_definition: String,
    /// Optimizer steps timed (warm-up steps excluded).
    pub steps: usize,
    pub warmup_steps: usize,
    /// T1 − T0 per step, ms (average, min, max, P50, P75, P90, P99, N).
    pub step_ms: Option<StepStats>,
    pub step_definition: String,
    pub epochs: Vec<Epoch>,
    /// Samples per epoch / mean epoch time (§7.1.5 a).
    pub throughput_samples_per_s: Measured,
    /// Input MB per epoch / mean epoch time (the draft writes MB/s).
    pub throughput_mb_per_s: Measured,
    pub target: Option<Target>,
    /// From the run start to the first evaluation that meets the target (evaluation on the
    /// clock; pre-processing and model loading off it), s.
    pub time_to_target_s: Measured,
    pub epochs_to_target: Measured,
    pub power_w: TrainPower,
    /// Energy over the training's epochs, J.
    pub energy_j: Measured,
    /// N / E: samples per epoch / mean epoch energy (§7.1.7).
    pub efficiency_samples_per_j: Measured,
    pub efficiency_mb_per_j: Measured,
    /// The utilization channel the epochs are summarised on.
    pub utilization_channel: String,
    pub sensors: Vec<SensorStatus>,
    /// `--peak-power`: training steps at batch b, 2b, 4b, ... after the training (§7.1.6 b).
    #[serde(default)]
    pub peak_power_sweep: Vec<PeakPowerStep>,
    /// Why the sweep stopped (a throughput plateau, the training set's size, the cap, a
    /// failed step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_power_sweep_stop: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<HeldOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<Repeat>,
    /// Files written beside the report (weights, ONNX, the mllog).
    #[serde(default)]
    pub files: Vec<String>,
    /// --exec: the child's exit status; events read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub mllog_events: usize,
    /// Training is optional ("非必须") in the draft and has no C-levels.
    pub standard_note: String,
    /// False when interrupted or failed; `error` says which.
    pub complete: bool,
    /// The stop flag (Ctrl-C, SIGTERM) ended it: what was measured is kept, and it is no
    /// failure of the training (absent when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The step statistics, with the names the issue fixes (`average`, not `mean`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepStats {
    pub average: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub n: usize,
}

impl From<&Summary> for StepStats {
    fn from(s: &Summary) -> StepStats {
        StepStats {
            average: s.mean,
            min: s.min,
            max: s.max,
            p50: s.p50,
            p75: s.p75,
            p90: s.p90,
            p99: s.p99,
            n: s.n,
        }
    }
}

/// A data set file a training read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataRef {
    /// `train`, `held-out`, ...
    pub split: String,
    pub name: String,
    pub samples: u64,
    pub sha256: String,
}

/// The report's schema version.
pub const TRAIN_SCHEMA_VERSION: u32 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_is_a_number_or_na() {
        assert_eq!(serde_json::to_string(&Measured::Value(1.5)).unwrap(), "1.5");
        let na = Measured::na("no sensor");
        assert_eq!(serde_json::to_string(&na).unwrap(), "\"n/a: no sensor\"");
        let back: Measured = serde_json::from_str("\"n/a: no sensor\"").unwrap();
        assert_eq!(back, na);
        assert!(serde_json::from_str::<Measured>("\"12\"").is_err());
        assert_eq!(Measured::of(Some(f64::NAN), "x"), Measured::na("x"));
    }
}

/// MLPerf's submission division, as the lab attests it (`submission_division` in the mllog).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Division {
    Closed,
    Open,
}

impl Division {
    pub fn as_str(self) -> &'static str {
        match self {
            Division::Closed => "closed",
            Division::Open => "open",
        }
    }
}

/// MLPerf's submission fields of the mllog (`submission_org`, `submission_platform`,
/// `submission_division`), as the lab gives them: acceval never invents them, and an mllog
/// without them is not one MLPerf's compliance checker accepts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Submission {
    pub org: Option<String>,
    pub platform: Option<String>,
    pub division: Option<Division>,
}
