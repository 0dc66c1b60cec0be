//! NVIDIA GPUs through NVML (`libnvidia-ml.so.1`, loaded at run time by nvml-wrapper).

pub use crate::report::schema::devices::{Gpu, Nvidia};

/// Queries NVML.
pub fn identify() -> Nvidia {
    use nvml_wrapper::Nvml;
    let nvml = match Nvml::init() {
        Ok(n) => n,
        Err(e) => {
            return Nvidia {
                not_available: Some(format!(
                    "NVML cannot be loaded ({}): no NVIDIA driver on this machine",
                    error_chain(&e)
                )),
                driver_version: None,
                cuda_driver_version: None,
                gpus: Vec::new(),
            };
        }
    };
    let cuda = nvml.sys_cuda_driver_version().ok().map(|v| {
        format!(
            "{}.{}",
            nvml_wrapper::cuda_driver_version_major(v),
            nvml_wrapper::cuda_driver_version_minor(v)
        )
    });
    let count = nvml.device_count().unwrap_or(0);
    let gpus = (0..count)
        .filter_map(|i| {
            let d = nvml.device_by_index(i).ok()?;
            Some(Gpu {
                index: i,
                name: d.name().unwrap_or_default(),
                uuid: d.uuid().unwrap_or_default(),
                pci_bus_id: d.pci_info().map(|p| p.bus_id).unwrap_or_default(),
                memory_bytes: d.memory_info().map(|m| m.total).unwrap_or(0),
                power_limit_w: d.enforced_power_limit().ok().map(|mw| mw as f64 / 1e3),
            })
        })
        .collect();
    Nvidia {
        not_available: None,
        driver_version: nvml.sys_driver_version().ok(),
        cuda_driver_version: cuda,
        gpus,
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}
