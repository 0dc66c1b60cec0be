//! Telemetry results (§7.1.4, §7.1.6, §7.1.7, §7.2.6): channels, the recorded timeline and
//! its summary. A figure that could not be measured is "n/a: <reason>", never 0.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a channel measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Utilization,
    Power,
    Energy,
    Memory,
    Clock,
    Temperature,
    Other,
}

impl Kind {
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Utilization => "%",
            Kind::Power => "W",
            Kind::Energy => "J",
            Kind::Memory => "MB",
            Kind::Clock => "MHz",
            Kind::Temperature => "°C",
            Kind::Other => "",
        }
    }
}

/// One measured quantity, e.g. `gpu0.power_w`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Channel {
    pub name: String,
    pub kind: Kind,
    /// The device the channel belongs to (energy figures are per device).
    pub device: String,
    pub definition: String,
}

/// Whether something (a sensor, a backend, a library) could be used: serialized as
/// `"available: <what>"` or `"n/a: <reason>"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(into = "String", try_from = "String")]
#[schemars(with = "String")]
pub enum State {
    Available(String),
    Unavailable(String),
}

impl State {
    pub fn is_available(&self) -> bool {
        matches!(self, State::Available(_))
    }
    /// What is available, or why not.
    pub fn detail(&self) -> &str {
        match self {
            State::Available(s) | State::Unavailable(s) => s,
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            State::Available(s) => write!(f, "available: {s}"),
            State::Unavailable(s) => write!(f, "n/a: {s}"),
        }
    }
}

impl From<State> for String {
    fn from(s: State) -> String {
        s.to_string()
    }
}

impl TryFrom<String> for State {
    type Error = String;
    fn try_from(s: String) -> Result<State, String> {
        if let Some(x) = s.strip_prefix("available: ") {
            Ok(State::Available(x.to_string()))
        } else if let Some(x) = s.strip_prefix("n/a: ") {
            Ok(State::Unavailable(x.to_string()))
        } else {
            Err(format!("'{s}' is neither 'available: ...' nor 'n/a: ...'"))
        }
    }
}

/// Whether a sensor could be used.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct SensorStatus {
    pub sensor: String,
    pub status: State,
}

/// One tick: its time from the window start and every channel's value (NaN when a read
/// failed; serialized as null).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Tick {
    pub t_ms: f64,
    #[serde(deserialize_with = "super::nan::vec")]
    #[schemars(with = "Vec<Option<f64>>")]
    pub values: Vec<f64>,
}

/// Ticks that came late by more than half an interval.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Gap {
    pub at_ms: f64,
    pub missed_ticks: u64,
}

/// A channel whose reads failed inside the window: how often, when, and the sensor's error.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ReadFailure {
    pub channel: String,
    pub count: usize,
    /// The first and the last failed tick, ms from the window start.
    pub first_at_ms: f64,
    pub last_at_ms: f64,
    /// The first error the sensor gave (e.g. "nvmlDeviceGetPowerUsage: GPU is lost").
    pub error: String,
}

/// Everything the sampler recorded over a window.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Recording {
    pub interval_ms: f64,
    pub channels: Vec<Channel>,
    pub ticks: Vec<Tick>,
    pub gaps: Vec<Gap>,
    /// Reads that failed (a NaN tick value with the sensor's reason).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<ReadFailure>,
}

/// A channel over the window.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChannelSummary {
    pub name: String,
    pub kind: Kind,
    pub unit: String,
    /// Mean of the samples (S/N over the window).
    pub mean: Option<f64>,
    pub max: Option<f64>,
    pub samples: usize,
    pub definition: String,
    /// Why some reads failed, when some did ("3 of 10 reads failed from 2.0 s: ..."); with
    /// the last read failed or most reads failed, `mean` and `max` are left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// How an energy figure was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum EnergyMethod {
    /// The device's cumulative energy counter (NVML total energy, RAPL).
    #[serde(rename = "energy counter")]
    Counter,
    /// The trapezoid rule over timestamped power samples inside the window.
    #[serde(rename = "trapezoid of power samples")]
    Trapezoid,
}

impl std::fmt::Display for EnergyMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EnergyMethod::Counter => "energy counter",
            EnergyMethod::Trapezoid => "trapezoid of power samples",
        })
    }
}

/// Energy of one device over the window.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EnergyFigure {
    pub device: String,
    pub joules: f64,
    pub method: EnergyMethod,
    #[serde(deserialize_with = "super::nan::f64")]
    #[schemars(with = "Option<f64>")]
    pub average_power_w: f64,
    pub peak_power_w: Option<f64>,
    /// Where the figure comes from a counter and the device also reports power: the
    /// trapezoid of its power samples over the same window, J (the two should agree; a
    /// 1 s power average hides transients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_integral_j: Option<f64>,
    /// Inferences (samples) per joule over the window.
    pub inferences_per_joule: Option<f64>,
    /// Input megabytes per joule.
    pub mb_per_joule: Option<f64>,
}

/// The telemetry of one measured window.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TelemetrySummary {
    pub interval_ms: f64,
    pub window_s: f64,
    pub ticks: usize,
    pub gaps: Vec<Gap>,
    pub sensors: Vec<SensorStatus>,
    pub channels: Vec<ChannelSummary>,
    pub energy: Vec<EnergyFigure>,
    /// Why there is no energy figure, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_unavailable: Option<String>,
    /// Devices with power or energy channels whose figures could not be computed over the
    /// whole window (a read failed, the device was lost), and why: "n/a", never 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub energy_na: Vec<DeviceNa>,
}

/// A device's energy that could not be measured, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct DeviceNa {
    pub device: String,
    pub reason: String,
}
