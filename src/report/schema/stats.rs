//! The statistics every timed figure is reported with (MindIE's set: average, min, max,
//! P50, P75, P90, P99, N; P99.9 from 1,000 samples). The functions that compute them are in
//! `measure::stats`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Summary of a set of samples (units are the caller's field name's; these carry none).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    /// P99.9, when there are at least 1,000 samples (below that it is the max).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999: Option<f64>,
    /// Sample standard deviation (n − 1 in the denominator); 0 for one sample.
    pub stddev: f64,
}

/// Whether N samples support a percentile (MLPerf's bound at 99 % confidence).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct PercentileSupport {
    pub percentile: String,
    pub min_samples: usize,
    pub supported: bool,
}
