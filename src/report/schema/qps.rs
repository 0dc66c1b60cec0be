//! The result of `acceval qps` (§7.2.5): the steps of the max-rate search (open loop) or of
//! the concurrency sweep (closed loop), each with its latency, failures by kind and the
//! checks that passed or failed it; and the words the load generator's results share with
//! `acceval llm` (load mode, arrival process, failure kinds).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::stats::Summary;

/// The schema tag of [`QpsReport`].
pub const SCHEMA: &str = "acceval.qps/1";

/// How load is offered.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum LoadMode {
    /// Arrivals at a target rate, independent of responses (LoadGen's Server scenario).
    Open,
    /// N clients each sending its next request when the last returns (the draft's jmeter
    /// threads).
    Closed,
}

impl fmt::Display for LoadMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoadMode::Open => "open",
            LoadMode::Closed => "closed",
        })
    }
}

/// How open-loop arrivals are spaced.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Exponential gaps (a Poisson process), seeded.
    Poisson,
    /// Equal gaps of 1/rate.
    Uniform,
}

impl fmt::Display for Arrival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arrival::Poisson => "poisson",
            Arrival::Uniform => "uniform",
        })
    }
}

/// Why a request failed. Serialized as the labels the reports have always used
/// (`http_500`, `timeout`, `connection_failed`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    /// A non-2xx status.
    Http(u16),
    /// No complete response within the timeout (or not sent: no free connection in time).
    Timeout,
    /// The connection could not be made (refused, unreachable, TLS handshake).
    ConnectionFailed,
    /// The server closed or reset the connection before the response was complete.
    ConnectionClosed,
    /// A response body, an SSE line or an SSE event over the client's cap.
    ResponseTooLarge,
    /// A whole (not streamed) response that is not what the API answers.
    BadResponse,
    /// A streamed event that is not JSON.
    BadEvent,
    /// An error event inside a stream that began with HTTP 200.
    StreamError,
    /// An error object in a whole (not streamed) response.
    ResponseError,
    /// A stream that ended without its end marker, or inside an event.
    CutStream,
    /// A response that carried no generated text.
    Empty,
    /// The client's tokenizer could not encode the output.
    Tokenizer,
    /// Abandoned at Ctrl-C before the response ended.
    Interrupted,
    /// Anything else on the wire.
    Other,
}

const LABELS: &[(FailureKind, &str)] = &[
    (FailureKind::Timeout, "timeout"),
    (FailureKind::ConnectionFailed, "connection_failed"),
    (FailureKind::ConnectionClosed, "connection_closed"),
    (FailureKind::ResponseTooLarge, "response_too_large"),
    (FailureKind::BadResponse, "bad_response"),
    (FailureKind::BadEvent, "bad_event"),
    (FailureKind::StreamError, "stream_error"),
    (FailureKind::ResponseError, "response_error"),
    (FailureKind::CutStream, "cut_stream"),
    (FailureKind::Empty, "empty"),
    (FailureKind::Tokenizer, "tokenizer"),
    (FailureKind::Interrupted, "interrupted"),
    (FailureKind::Other, "other"),
];

impl FailureKind {
    /// Whether a response came back (MindIE's "Returned"): false for requests that never
    /// got one (no connection, a timeout, abandoned at Ctrl-C).
    pub fn returned(self) -> bool {
        !matches!(
            self,
            FailureKind::Timeout | FailureKind::ConnectionFailed | FailureKind::Interrupted
        )
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let FailureKind::Http(s) = self {
            return write!(f, "http_{s}");
        }
        let label = LABELS
            .iter()
            .find(|(k, _)| k == self)
            .map(|(_, l)| *l)
            .unwrap_or("other");
        f.write_str(label)
    }
}

impl FromStr for FailureKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(code) = s.strip_prefix("http_") {
            return code
                .parse()
                .map(FailureKind::Http)
                .map_err(|_| format!("'{s}': http_ takes a status code"));
        }
        LABELS
            .iter()
            .find(|(_, l)| *l == s)
            .map(|(k, _)| *k)
            .ok_or_else(|| format!("'{s}' is not a failure kind"))
    }
}

impl Serialize for FailureKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FailureKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for FailureKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FailureKind".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = LABELS.iter().map(|(_, l)| *l).collect();
        schemars::json_schema!({
            "type": "string",
            "description": "http_<status>, or one of the listed kinds",
            "pattern": format!("^(http_[0-9]{{3}}|{})$", names.join("|")),
        })
    }
}

/// The statistic a latency bound applies to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    Avg,
    Max,
    /// A percentile, as a fraction (0.99).
    Quantile(f64),
}

/// One latency bound: `stat <= limit_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bound {
    /// As written, e.g. `p99`.
    pub stat_name: String,
    pub stat: Stat,
    pub limit_ms: f64,
}

/// A check a step failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum StepFailure {
    /// Ctrl-C cut the step short.
    Interrupted,
    /// No request went out.
    NothingSent,
    /// More failures than the error budget allows.
    ErrorBudget {
        error_rate: f64,
        budget: f64,
        failures: BTreeMap<FailureKind, u64>,
    },
    /// A latency bound does not hold.
    Bound {
        stat_name: String,
        value_ms: f64,
        limit_ms: f64,
    },
    /// A bound has no successful response to measure.
    NoSample { stat_name: String },
    /// Too few successes for the highest bounded percentile.
    TooFewSamples { ok: u64, needed: usize },
}

impl fmt::Display for StepFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepFailure::Interrupted => f.write_str("interrupted (Ctrl-C) before the step ended"),
            StepFailure::NothingSent => f.write_str("no request was sent"),
            StepFailure::ErrorBudget {
                error_rate,
                budget,
                failures,
            } => write!(
                f,
                "error rate {error_rate:.4} exceeds the budget {budget} ({})",
                failures
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            StepFailure::Bound {
                stat_name,
                value_ms,
                limit_ms,
            } => write!(f, "{stat_name} {value_ms:.3} ms > {limit_ms} ms"),
            StepFailure::NoSample { stat_name } => {
                write!(f, "{stat_name}: no successful response to measure")
            }
            StepFailure::TooFewSamples { ok, needed } => {
                write!(f, "{ok} successful responses; the bounds need {needed}")
            }
        }
    }
}

/// The text of a step that passed.
pub const ALL_BOUNDS_HOLD: &str = "all bounds hold";

/// One measured step: a rate (open loop) or a concurrency (closed loop).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// Open loop: the target rate, req/s; closed loop: the concurrency.
    pub target: f64,
    pub duration_s: f64,
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    /// Failures by kind.
    pub failures: BTreeMap<FailureKind, u64>,
    /// One message per failure kind, as the client saw it.
    pub failure_examples: BTreeMap<FailureKind, String>,
    pub offered_rps: Option<f64>,
    pub achieved_rps: f64,
    pub error_rate: f64,
    pub latency_ms: Option<Summary>,
    /// The value of each bounded statistic, ms.
    pub slo_values: Vec<(String, Option<f64>)>,
    pub send_lag_ms: Option<Summary>,
    pub samples_needed: usize,
    pub passed: bool,
    /// The checks that failed (empty when the step passed).
    #[serde(default)]
    pub failed_checks: Vec<StepFailure>,
    /// Why the step failed, in words (or "all bounds hold").
    pub why: String,
    /// False when Ctrl-C cut the step short.
    pub complete: bool,
    /// Several servers (§7.2.5 b): each replica's share of the measured window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaStep>,
}

/// One server of a cluster in one step (client-side balancing, least outstanding).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplicaStep {
    pub url: String,
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    /// This replica's share of the step's requests sent.
    pub share: f64,
    /// Its successful responses / the step's measured window, 1/s.
    pub achieved_rps: f64,
    pub latency_ms: Option<Summary>,
}

/// The result of a QPS search or sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QpsReport {
    /// `acceval.qps/1`.
    pub schema: String,
    pub url: String,
    /// Several servers of one cluster (the first is `url`), balanced by the client: each
    /// request to the one with the fewest in flight (§7.2.5 b). Empty for one server or one
    /// load balancer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<String>,
    pub model: String,
    pub mode: LoadMode,
    pub distribution: Option<Arrival>,
    pub seed: u64,
    pub slo: Vec<Bound>,
    pub error_budget: f64,
    pub step_duration_s: f64,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub binary: bool,
    pub inputs: String,
    pub max_connections: usize,
    /// The largest successful response body read, bytes (larger ones fail as
    /// response_too_large).
    #[serde(default)]
    pub max_response_bytes: u64,
    pub steps: Vec<Step>,
    /// The answer: achieved req/s of the best passing step.
    pub max_qps: Option<f64>,
    /// Why there is none.
    pub max_qps_na: Option<String>,
    pub best_step: Option<usize>,
    /// Whether the search ran to its end (false after Ctrl-C).
    pub complete: bool,
    /// Inference requests sent in all, warm-ups, the start-rate probe and the first check
    /// included: what the server's own request counter should have grown by.
    pub requests_issued: u64,
    pub definitions: BTreeMap<String, String>,
}

/// Definitions printed with every result.
pub const DEFINITIONS: &[(&str, &str)] = &[
    (
        "offered_rps",
        "requests scheduled per second of the measured window (open loop), 1/s",
    ),
    (
        "achieved_rps",
        "successful responses / measured window, 1/s; the window runs from the first measured request's scheduled send to the last measured response",
    ),
    (
        "latency_ms",
        "scheduled send time (open loop) or actual send time (closed loop) to the last byte of a successful response, ms; percentiles by linear interpolation (numpy's default)",
    ),
    (
        "send_lag_ms",
        "actual send time minus scheduled send time (open loop): the generator's own delay plus any wait for a free connection, ms",
    ),
    (
        "error_rate",
        "failed requests / requests sent in the measured window",
    ),
    (
        "max_qps",
        "achieved_rps of the highest-rate step (open loop) or highest-throughput level (closed loop) whose latency bounds and error budget all hold, 1/s",
    ),
];

/// [`DEFINITIONS`] as the report carries them.
pub fn definitions() -> BTreeMap<String, String> {
    DEFINITIONS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_kinds_keep_their_labels() {
        for (k, l) in LABELS {
            assert_eq!(k.to_string(), *l);
            assert_eq!(l.parse::<FailureKind>().unwrap(), *k);
        }
        assert_eq!(FailureKind::Http(503).to_string(), "http_503");
        assert_eq!(
            "http_404".parse::<FailureKind>().unwrap(),
            FailureKind::Http(404)
        );
        let mut m = BTreeMap::new();
        m.insert(FailureKind::Http(500), 2u64);
        m.insert(FailureKind::ResponseTooLarge, 1);
        let j = serde_json::to_string(&m).unwrap();
        assert_eq!(j, r#"{"http_500":2,"response_too_large":1}"#);
        let back: BTreeMap<FailureKind, u64> = serde_json::from_str(&j).unwrap();
        assert_eq!(back, m);
        assert!("nope".parse::<FailureKind>().is_err());
        assert!(!FailureKind::Interrupted.returned() && FailureKind::CutStream.returned());
    }
}
