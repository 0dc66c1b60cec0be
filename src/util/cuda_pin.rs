//! `--backend cuda@N`: choosing the GPU for tract's CUDA runtime.
//!
//! tract-cuda opens CUDA device 0 once per process (`CudaContext::new(0)` behind a global),
//! so `@N` cannot be passed to it. The one way to put it on GPU N is to make GPU N the only
//! device CUDA sees, before CUDA starts: `main` calls [`pin_from_args`] first thing, while
//! the process has a single thread, and it sets `CUDA_VISIBLE_DEVICES` to GPU N (the Nth
//! entry of an existing list, as Slurm or Kubernetes set it) and `CUDA_DEVICE_ORDER=PCI_BUS_ID`
//! (CUDA's default order is fastest first; NVML's, which telemetry uses, is the PCI bus
//! order). The tract-cuda backend then refuses `cuda@N` unless the pin is in place, so `@N`
//! never again only changes a label.

use std::sync::OnceLock;

use super::Error;

/// What was pinned: the device index the command line named and the environment set.
#[derive(Debug, Clone, PartialEq)]
pub struct Pin {
    pub device: usize,
    pub visible_devices: String,
}

static PINNED: OnceLock<Option<Pin>> = OnceLock::new();
/// `CUDA_VISIBLE_DEVICES` as the process found it, before any pin.
static ORIGINAL_VISIBLE: OnceLock<Option<String>> = OnceLock::new();

fn original_visible() -> Option<String> {
    ORIGINAL_VISIBLE
        .get_or_init(|| std::env::var("CUDA_VISIBLE_DEVICES").ok())
        .clone()
        .filter(|v| !v.trim().is_empty())
}

/// The NVML index (what telemetry and `devices` number GPUs by) of CUDA device `n` as
/// `--backend cuda@n` / `ort:cuda@n` name it: the nth entry of `CUDA_VISIBLE_DEVICES` when
/// the environment restricts the devices, else `n`.
pub fn nvml_index(n: u32) -> Result<u32, Error> {
    nvml_index_in(n, original_visible().as_deref())
}

fn nvml_index_in(n: u32, visible: Option<&str>) -> Result<u32, Error> {
    let Some(list) = visible else {
        return Ok(n);
    };
    let entries: Vec<&str> = list.split(',').map(str::trim).collect();
    let e = entries.get(n as usize).ok_or_else(|| Error::NotVisible {
        device: n,
        list: list.to_string(),
        count: entries.len(),
    })?;
    e.parse().map_err(|_| Error::NotAnIndex {
        device: n,
        list: list.to_string(),
        entry: e.to_string(),
    })
}

/// The pin `main` made, if any.
pub fn pinned() -> Option<&'static Pin> {
    PINNED.get().and_then(|p| p.as_ref())
}

/// The tract-cuda devices named in `args` (`--backend cuda@N` or `--backend=cuda@N`).
fn cuda_devices(args: &[String]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let v = match a.strip_prefix("--backend=") {
            Some(v) => Some(v.to_string()),
            None if a == "--backend" => it.peek().map(|v| v.to_string()),
            None => None,
        };
        if let Some(d) = v
            .as_deref()
            .and_then(|v| {
                v.trim()
                    .to_ascii_lowercase()
                    .strip_prefix("cuda@")
                    .map(str::to_string)
            })
            .and_then(|d| d.parse::<usize>().ok())
        {
            out.push(d);
        }
    }
    out
}

/// The pin for `args` given the current `CUDA_VISIBLE_DEVICES`; `None` when no
/// `cuda@N` with N > 0 is named.
pub fn plan(args: &[String], visible: Option<&str>) -> Result<Option<Pin>, Error> {
    let mut devs = cuda_devices(args);
    devs.sort_unstable();
    devs.dedup();
    match devs.as_slice() {
        [] | [0] => Ok(None),
        [d] => {
            let visible_devices = match visible.map(str::trim).filter(|v| !v.is_empty()) {
                Some(list) => {
                    let entries: Vec<&str> = list.split(',').map(str::trim).collect();
                    entries
                        .get(*d)
                        .map(|e| e.to_string())
                        .ok_or_else(|| Error::PinNotVisible {
                            device: *d,
                            list: list.to_string(),
                            count: entries.len(),
                        })?
                }
                None => d.to_string(),
            };
            Ok(Some(Pin {
                device: *d,
                visible_devices,
            }))
        }
        many => Err(Error::ManyCudaDevices {
            devices: many.to_vec(),
        }),
    }
}

/// Sets the environment for `cuda@N`. Call first thing in `main`, before any thread starts
/// (setting the environment is sound only while no other thread reads it).
pub fn pin_from_args() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let visible = original_visible();
    let pin = plan(&args, visible.as_deref())?;
    if let Some(p) = &pin {
        // SAFETY: main calls this before it starts any thread; nothing reads the environment
        // concurrently.
        unsafe {
            std::env::set_var("CUDA_VISIBLE_DEVICES", &p.visible_devices);
            if std::env::var_os("CUDA_DEVICE_ORDER").is_none() {
                std::env::set_var("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
            }
        }
    }
    let _ = PINNED.set(pin);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn cuda_at_n_pins_the_nth_visible_device() {
        assert_eq!(plan(&a("acceval run --backend cpu"), None).unwrap(), None);
        assert_eq!(
            plan(&a("acceval run --backend cuda@0"), None).unwrap(),
            None
        );
        assert_eq!(
            plan(&a("acceval run --backend ort:cuda@1"), None).unwrap(),
            None
        );
        let p = plan(&a("acceval run --backend cuda@1"), None)
            .unwrap()
            .unwrap();
        assert_eq!((p.device, p.visible_devices.as_str()), (1, "1"));
        let p = plan(&a("acceval grade --backend=CUDA@1"), Some("4,6"))
            .unwrap()
            .unwrap();
        assert_eq!(p.visible_devices, "6");
        assert!(
            plan(&a("acceval run --backend cuda@2"), Some("4,6"))
                .unwrap_err()
                .to_string()
                .contains("cuda@0..cuda@1")
        );
        assert!(
            plan(&a("x --backend cuda@1 --backend cuda@2"), None)
                .unwrap_err()
                .to_string()
                .contains("one GPU per process")
        );
    }
}
