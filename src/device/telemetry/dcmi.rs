//! Ascend NPUs through DCMI (libdcmi loaded at run time): AI Core utilization, HBM in use,
//! chip power and temperature, read once a second on the sampler thread. The sensor opens
//! DCMI and calls `dcmi_init` on the handle it reads (`device::ascend::DcmiApi`).

use super::{Channel, Kind, Sensor};
use crate::device::ascend::{DCMI_UTIL_AICORE, DcmiApi};

/// Channels per NPU, in the order `read` fills them.
const NPU_CHANNELS: [(&str, Kind, &str); 4] = [
    (
        "aicore_util_pct",
        Kind::Utilization,
        "DCMI utilization rate, input_type 2 (AI Core), %",
    ),
    (
        "hbm_used_mb",
        Kind::Memory,
        "DCMI hbm_info.memory_usage, MB as DCMI reports it",
    ),
    (
        "power_w",
        Kind::Power,
        "DCMI device power info: chip power, 0.1 W units → W",
    ),
    ("temp_c", Kind::Temperature, "DCMI device temperature, °C"),
];

pub struct Dcmi {
    api: DcmiApi,
    npus: Vec<(i32, i32)>,
    /// The last error of each channel (NaN reads), for the recording.
    errors: Vec<Option<String>>,
}

impl Dcmi {
    pub fn probe() -> Result<Dcmi, String> {
        let api = DcmiApi::open()?;
        let npus = api.npus()?;
        if npus.is_empty() {
            return Err(format!("DCMI ({}) lists no NPU", api.path));
        }
        Ok(Dcmi {
            errors: vec![None; npus.len() * NPU_CHANNELS.len()],
            api,
            npus,
        })
    }
}

impl Sensor for Dcmi {
    fn name(&self) -> String {
        format!(
            "DCMI ({} NPU, {}){}",
            self.npus.len(),
            self.api.path,
            self.api
                .emulated
                .as_deref()
                .map(|e| format!(" [EMULATED: {e}]"))
                .unwrap_or_default()
        )
    }
    fn channels(&self) -> Vec<Channel> {
        let tag = if self.api.emulated.is_some() {
            " [emulated sensor]"
        } else {
            ""
        };
        self.npus
            .iter()
            .enumerate()
            .flat_map(|(i, _)| {
                NPU_CHANNELS.map(|(n, k, d)| Channel {
                    name: format!("npu{i}.{n}"),
                    kind: k,
                    device: format!("npu{i}"),
                    definition: format!("{d}{tag}"),
                })
            })
            .collect()
    }
    fn read(&mut self, out: &mut [f64]) {
        let w = NPU_CHANNELS.len();
        for (i, &(card, dev)) in self.npus.iter().enumerate() {
            let reads = [
                self.api.util_pct(card, dev, DCMI_UTIL_AICORE),
                self.api.hbm_mb(card, dev).map(|h| h.0 as f64),
                self.api.power_w(card, dev),
                self.api.temperature_c(card, dev),
            ];
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
