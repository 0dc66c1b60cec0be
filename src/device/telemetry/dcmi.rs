//! Ascend NPUs through DCMI (libdcmi loaded at run time): AI Core and HBM utilization, power.

use super::{Channel, Kind, Sensor};

// ---------------------------------------------------------------------------------------
// Ascend: DCMI (libdcmi.so at run time).

/// DCMI reports power as an integer in units of 0.1 W.
pub fn dcmi_power_w(raw: i32) -> f64 {
    raw as f64 / 10.0
}

/// DCMI `input_type` of `dcmi_get_device_utilization_rate` for the AI Core.
pub const DCMI_UTIL_AICORE: i32 = 2;
/// ... for the on-chip memory (HBM).
pub const DCMI_UTIL_HBM: i32 = 6;

type DcmiPower = unsafe extern "C" fn(i32, i32, *mut i32) -> i32;
type DcmiUtil = unsafe extern "C" fn(i32, i32, i32, *mut u32) -> i32;
type DcmiTemp = unsafe extern "C" fn(i32, i32, *mut i32) -> i32;

pub struct Dcmi {
    _lib: libloading::Library,
    power: DcmiPower,
    util: DcmiUtil,
    temp: DcmiTemp,
    npus: Vec<(i32, i32)>,
}

// SAFETY: the function pointers come from `_lib`, which the struct owns; DCMI asks for one
// thread at a time, and the sampler is the only caller.
unsafe impl Send for Dcmi {}

impl Dcmi {
    pub fn probe() -> Result<Dcmi, String> {
        let a = crate::device::ascend::identify();
        if a.npus.is_empty() {
            return Err(a
                .not_available
                .unwrap_or_else(|| "DCMI lists no NPU".into()));
        }
        for p in crate::device::ascend::DCMI_PATHS {
            // SAFETY: the vendor library, as `device::ascend` loads it; symbols with the
            // signatures of dcmi_interface_api.h.
            unsafe {
                let Ok(lib) = libloading::Library::new(p) else {
                    continue;
                };
                let get = |n: &[u8]| {
                    lib.get::<*const ()>(n)
                        .map(|s| *s)
                        .map_err(|e| format!("{p}: {e}"))
                };
                let power = get(b"dcmi_get_device_power_info\0")?;
                let util = get(b"dcmi_get_device_utilization_rate\0")?;
                let temp = get(b"dcmi_get_device_temperature\0")?;
                return Ok(Dcmi {
                    power: std::mem::transmute::<*const (), DcmiPower>(power),
                    util: std::mem::transmute::<*const (), DcmiUtil>(util),
                    temp: std::mem::transmute::<*const (), DcmiTemp>(temp),
                    npus: a.npus.iter().map(|n| (n.card_id, n.device_id)).collect(),
                    _lib: lib,
                });
            }
        }
        Err("libdcmi.so not found".into())
    }
}

impl Sensor for Dcmi {
    fn name(&self) -> String {
        format!("DCMI ({} NPU)", self.npus.len())
    }
    fn channels(&self) -> Vec<Channel> {
        self.npus
            .iter()
            .enumerate()
            .flat_map(|(i, _)| {
                [
                    (
                        "aicore_util_pct",
                        Kind::Utilization,
                        "DCMI utilization rate, input_type 2 (AI Core)",
                    ),
                    (
                        "hbm_util_pct",
                        Kind::Utilization,
                        "DCMI utilization rate, input_type 6 (HBM)",
                    ),
                    (
                        "power_w",
                        Kind::Power,
                        "DCMI device power info (0.1 W units → W), chip power",
                    ),
                    ("temp_c", Kind::Temperature, "DCMI device temperature"),
                ]
                .map(|(n, k, d)| Channel {
                    name: format!("npu{i}.{n}"),
                    kind: k,
                    device: format!("npu{i}"),
                    definition: d.into(),
                })
            })
            .collect()
    }
    fn read(&mut self, out: &mut [f64]) {
        for (i, &(card, dev)) in self.npus.iter().enumerate() {
            let o = &mut out[i * 4..][..4];
            o.fill(f64::NAN);
            // SAFETY: valid out-pointers to locals; signatures per dcmi_interface_api.h.
            unsafe {
                let mut u = 0u32;
                if (self.util)(card, dev, DCMI_UTIL_AICORE, &mut u) == 0 {
                    o[0] = u as f64;
                }
                if (self.util)(card, dev, DCMI_UTIL_HBM, &mut u) == 0 {
                    o[1] = u as f64;
                }
                let mut p = 0i32;
                if (self.power)(card, dev, &mut p) == 0 {
                    o[2] = dcmi_power_w(p);
                }
                let mut t = 0i32;
                if (self.temp)(card, dev, &mut t) == 0 {
                    o[3] = t as f64;
                }
            }
        }
    }
}
