//! NVIDIA GPUs through NVML (`libnvidia-ml.so.1`, loaded at run time by nvml-wrapper, found
//! by the loader's search path as the driver installs it). Where the library is acceval's
//! NVML emulator it says so (the symbol `acceval_emulator`), and the identification carries
//! that label.

pub use crate::report::schema::devices::{Gpu, Nvidia};

/// The file nvml-wrapper opens.
pub const NVML_LIB: &str = "libnvidia-ml.so.1";

/// What the NVML library says of itself when it is acceval's emulator.
pub fn emulated() -> Option<String> {
    // SAFETY: the same library nvml-wrapper opens (the loader returns the same handle); only
    // a marker symbol returning a static C string is read.
    unsafe {
        let lib = libloading::Library::new(NVML_LIB).ok()?;
        let f = lib
            .get::<unsafe extern "C" fn() -> *const std::ffi::c_char>(b"acceval_emulator\0")
            .ok()?;
        let p = f();
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

/// Queries NVML.
pub fn identify() -> Nvidia {
    use nvml_wrapper::Nvml;
    let nvml = match Nvml::init() {
        Ok(n) => n,
        Err(e) => {
            return Nvidia {
                not_available: Some(format!(
                    "NVML cannot be loaded ({}): no NVIDIA driver on this machine",
                    crate::util::fmt::error_chain(&e)
                )),
                driver_version: None,
                cuda_driver_version: None,
                gpus: Vec::new(),
                emulated: None,
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
                power_w: d.power_usage().ok().map(|mw| mw as f64 / 1e3),
            })
        })
        .collect();
    Nvidia {
        not_available: None,
        driver_version: nvml.sys_driver_version().ok(),
        cuda_driver_version: cuda,
        gpus,
        emulated: emulated(),
    }
}
