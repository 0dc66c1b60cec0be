//! NVIDIA GPUs through NVML (nvml-wrapper loads libnvidia-ml at run time): utilization,
//! power, the total-energy counter, memory, clocks, temperature.

use super::{Channel, Kind, Sensor};

// ---------------------------------------------------------------------------------------
// NVIDIA: NVML.

pub struct Nvml {
    nvml: nvml_wrapper::Nvml,
    count: u32,
    first_energy_mj: Vec<Option<u64>>,
    /// The emulator's self-description, when NVML is acceval's emulator.
    emulated: Option<String>,
    /// The last error of each channel (NaN reads), for the recording.
    errors: Vec<Option<String>>,
}

impl Nvml {
    pub fn probe() -> Result<Nvml, String> {
        let nvml = nvml_wrapper::Nvml::init()
            .map_err(|e| format!("NVML cannot be loaded ({e}): no NVIDIA driver"))?;
        let count = nvml.device_count().map_err(|e| e.to_string())?;
        if count == 0 {
            return Err("NVML lists no GPU".into());
        }
        let first_energy_mj = (0..count)
            .map(|i| {
                nvml.device_by_index(i)
                    .ok()
                    .and_then(|d| d.total_energy_consumption().ok())
            })
            .collect();
        Ok(Nvml {
            nvml,
            count,
            first_energy_mj,
            emulated: crate::device::nvidia::emulated(),
            errors: vec![None; count as usize * GPU_CHANNELS.len()],
        })
    }
}

const GPU_CHANNELS: [(&str, Kind, &str); 8] = [
    (
        "util_pct",
        Kind::Utilization,
        "NVML utilization.gpu: share of the last sample period (1/6–1 s) a kernel ran",
    ),
    (
        "mem_util_pct",
        Kind::Utilization,
        "NVML utilization.memory: share of time memory was read or written",
    ),
    (
        "mem_used_mb",
        Kind::Memory,
        "NVML memory_info.used, MB = 10^6 bytes",
    ),
    (
        "power_w",
        Kind::Power,
        "NVML power_usage (mW → W); a 1 s average on Ampere and later",
    ),
    (
        "energy_j",
        Kind::Energy,
        "NVML total_energy_consumption (mJ → J) since the window start",
    ),
    ("sm_clock_mhz", Kind::Clock, "NVML clock_info(SM)"),
    ("temp_c", Kind::Temperature, "NVML temperature(GPU)"),
    (
        "throttle_reasons",
        Kind::Other,
        "NVML current_throttle_reasons bit mask (0 = none)",
    ),
];

/// A reading, or the error with the NVML call that gave it.
fn got<T>(r: Result<T, nvml_wrapper::error::NvmlError>, call: &str) -> Result<T, String> {
    r.map_err(|e| format!("{call}: {}", crate::util::fmt::error_chain(&e)))
}

impl Sensor for Nvml {
    fn name(&self) -> String {
        format!(
            "NVML ({} GPU){}",
            self.count,
            self.emulated
                .as_deref()
                .map(|e| format!(" [EMULATED: {e}]"))
                .unwrap_or_default()
        )
    }
    fn channels(&self) -> Vec<Channel> {
        let tag = if self.emulated.is_some() {
            " [emulated sensor]"
        } else {
            ""
        };
        (0..self.count)
            .flat_map(|i| {
                GPU_CHANNELS.iter().map(move |(n, k, d)| Channel {
                    name: format!("gpu{i}.{n}"),
                    kind: *k,
                    device: format!("gpu{i}"),
                    definition: format!("{d}{tag}"),
                })
            })
            .collect()
    }
    fn read(&mut self, out: &mut [f64]) {
        use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
        let w = GPU_CHANNELS.len();
        for i in 0..self.count as usize {
            let reads: [Result<f64, String>; 8] = match got(
                self.nvml.device_by_index(i as u32),
                "nvmlDeviceGetHandleByIndex",
            ) {
                Err(e) => std::array::from_fn(|_| Err(e.clone())),
                Ok(d) => {
                    let u = got(d.utilization_rates(), "nvmlDeviceGetUtilizationRates");
                    [
                        u.clone().map(|u| u.gpu as f64),
                        u.map(|u| u.memory as f64),
                        got(d.memory_info(), "nvmlDeviceGetMemoryInfo")
                            .map(|m| m.used as f64 / 1e6),
                        got(d.power_usage(), "nvmlDeviceGetPowerUsage").map(|p| p as f64 / 1e3),
                        got(
                            d.total_energy_consumption(),
                            "nvmlDeviceGetTotalEnergyConsumption",
                        )
                        .and_then(|e| match self.first_energy_mj[i] {
                            Some(first) => Ok(e.saturating_sub(first) as f64 / 1e3),
                            None => {
                                Err("the energy counter could not be read at the window start"
                                    .into())
                            }
                        }),
                        got(d.clock_info(Clock::SM), "nvmlDeviceGetClockInfo(SM)")
                            .map(|c| c as f64),
                        got(
                            d.temperature(TemperatureSensor::Gpu),
                            "nvmlDeviceGetTemperature",
                        )
                        .map(|t| t as f64),
                        got(
                            d.current_throttle_reasons(),
                            "nvmlDeviceGetCurrentClocksThrottleReasons",
                        )
                        .map(|r| r.bits() as f64),
                    ]
                }
            };
            for (k, r) in reads.into_iter().enumerate() {
                let (v, e) = match r {
                    Ok(v) => (v, None),
                    Err(e) => (f64::NAN, Some(e)),
                };
                out[i * w + k] = v;
                self.errors[i * w + k] = e;
            }
        }
    }
    fn failure(&self, i: usize) -> Option<String> {
        self.errors.get(i).cloned().flatten()
    }
}
