//! NVIDIA GPUs through NVML (nvml-wrapper loads libnvidia-ml at run time): utilization,
//! power, the total-energy counter, memory, clocks, temperature.

use super::{Channel, Kind, Sensor};

// ---------------------------------------------------------------------------------------
// NVIDIA: NVML.

pub struct Nvml {
    nvml: nvml_wrapper::Nvml,
    count: u32,
    first_energy_mj: Vec<Option<u64>>,
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

impl Sensor for Nvml {
    fn name(&self) -> String {
        format!("NVML ({} GPU)", self.count)
    }
    fn channels(&self) -> Vec<Channel> {
        (0..self.count)
            .flat_map(|i| {
                GPU_CHANNELS.iter().map(move |(n, k, d)| Channel {
                    name: format!("gpu{i}.{n}"),
                    kind: *k,
                    device: format!("gpu{i}"),
                    definition: d.to_string(),
                })
            })
            .collect()
    }
    fn read(&mut self, out: &mut [f64]) {
        use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
        for i in 0..self.count {
            let o = &mut out[i as usize * GPU_CHANNELS.len()..][..GPU_CHANNELS.len()];
            o.fill(f64::NAN);
            let Ok(d) = self.nvml.device_by_index(i) else {
                continue;
            };
            if let Ok(u) = d.utilization_rates() {
                o[0] = u.gpu as f64;
                o[1] = u.memory as f64;
            }
            if let Ok(m) = d.memory_info() {
                o[2] = m.used as f64 / 1e6;
            }
            if let Ok(p) = d.power_usage() {
                o[3] = p as f64 / 1e3;
            }
            if let (Ok(e), Some(first)) = (
                d.total_energy_consumption(),
                self.first_energy_mj[i as usize],
            ) {
                o[4] = e.saturating_sub(first) as f64 / 1e3;
            }
            if let Ok(c) = d.clock_info(Clock::SM) {
                o[5] = c as f64;
            }
            if let Ok(t) = d.temperature(TemperatureSensor::Gpu) {
                o[6] = t as f64;
            }
            if let Ok(r) = d.current_throttle_reasons() {
                o[7] = r.bits() as f64;
            }
        }
    }
}
