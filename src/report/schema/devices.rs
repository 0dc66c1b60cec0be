//! `acceval devices` (§6.2 c): the host, NVIDIA GPUs (NVML), Ascend NPUs (DCMI / npu-smi),
//! ONNX Runtime and its providers, and every backend's availability.

use schemars::JsonSchema;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::session::Availability;

/// An ONNX Runtime library found on this machine.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OrtLibrary {
    pub path: PathBuf,
    /// `ORT_DYLIB_PATH`, `python onnxruntime package`, or `system library path`.
    pub found_by: String,
    pub version: String,
}

/// One GPU as NVML describes it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Gpu {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub pci_bus_id: String,
    pub memory_bytes: u64,
    /// The enforced power limit, W.
    pub power_limit_w: Option<f64>,
    /// The power draw when identified, W (NVML power usage; a 1 s average on Ampere+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
}

/// NVML's view of the machine.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Nvidia {
    /// Why NVML could not be used (no driver, no library); `None` when it answered.
    pub not_available: Option<String>,
    pub driver_version: Option<String>,
    /// The CUDA version the driver supports, e.g. `13.0`.
    pub cuda_driver_version: Option<String>,
    pub gpus: Vec<Gpu>,
    /// Set when the NVML library is acceval's emulator: what it says of itself. Its GPUs are
    /// never certified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Npu {
    pub card_id: i32,
    pub device_id: i32,
    pub chip_name: String,
    pub chip_type: String,
    pub aicore_count: Option<u32>,
    /// The logic id (ACL's device id), when DCMI gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logic_id: Option<i32>,
    /// PCI bus id (npu-smi's Bus-Id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<String>,
    /// Chip power when identified, W (DCMI's 0.1 W units, or npu-smi's Power(W)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<f64>,
    /// AI Core utilization when identified, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aicore_util_pct: Option<f64>,
    /// On-chip memory (HBM) in use and in all, MB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hbm_used_mb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hbm_total_mb: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ascend {
    /// `dcmi`, `npu-smi`, or `None` when neither was found.
    pub source: Option<String>,
    pub not_available: Option<String>,
    pub dcmi_version: Option<String>,
    pub npus: Vec<Npu>,
    /// `npu-smi info` as printed, when that was the source.
    pub npu_smi: Option<String>,
    /// The NPU driver's version (`dcmi_get_driver_version`, or npu-smi's version line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// The CANN toolkit's version, read beside the libascendcl.so acceval would load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cann_version: Option<String>,
    /// Set when DCMI (or npu-smi) is acceval's emulator: what it says of itself. Its NPUs are
    /// never certified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated: Option<String>,
}

/// The host machine.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Host {
    /// Processor architecture as Rust names it (`x86_64`, `aarch64`, `riscv64`, ...).
    pub arch: String,
    pub cpu_model: String,
    pub cpu_vendor: String,
    pub physical_cores: Option<usize>,
    pub logical_cpus: usize,
    pub cpu_frequency_mhz: Option<u64>,
    pub memory_bytes: u64,
    pub os: String,
    pub os_version: String,
    pub kernel: String,
    pub hostname: String,
    pub container: Container,
}

/// Whether the process runs in a container, and the evidence.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Container {
    pub in_container: bool,
    /// `docker`, `podman`, `kubernetes`, `containerd`, `lxc`, ... when recognisable.
    pub runtime: Option<String>,
    pub evidence: Vec<String>,
}

/// A backend and what it can do here.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BackendStatus {
    pub name: String,
    pub summary: String,
    pub availability: Availability,
    pub providers: Vec<ProviderStatus>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProviderStatus {
    pub name: String,
    pub availability: Availability,
}

/// The ONNX Runtime library acceval would load.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OnnxRuntime {
    pub library: Option<OrtLibrary>,
    pub not_found: Option<String>,
    /// Execution providers compiled into the library (ONNX Runtime's names).
    pub providers: Vec<String>,
}

/// Everything `acceval devices` reports.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Devices {
    pub schema: String,
    pub host: Host,
    pub nvidia: Nvidia,
    pub ascend: Ascend,
    pub onnxruntime: OnnxRuntime,
    pub backends: Vec<BackendStatus>,
}
