//! Device identification (§6.2 c): the host CPU and memory, the OS, whether we run in a
//! container, NVIDIA GPUs (NVML), Ascend NPUs (DCMI or `npu-smi`), the ONNX Runtime
//! library and its providers, and every backend's availability.
//!
//! Every vendor library is loaded at run time; where one is absent the report says which
//! library was looked for and why it could not be used, never an empty list that could be
//! read as "no device".

pub mod ascend;
pub mod nvidia;
pub mod peak;
pub mod telemetry;

pub use crate::report::schema::devices::{
    BackendStatus, Container, Devices, Host, OnnxRuntime, ProviderStatus,
};

use crate::backend;

/// Detects the container runtime from the usual markers.
pub fn container() -> Container {
    let mut evidence = Vec::new();
    let mut runtime = None;
    let mut set = |r: &str, e: String, runtime: &mut Option<String>| {
        runtime.get_or_insert_with(|| r.to_string());
        evidence.push(e);
    };
    if std::path::Path::new("/.dockerenv").exists() {
        set("docker", "/.dockerenv exists".into(), &mut runtime);
    }
    if std::path::Path::new("/run/.containerenv").exists() {
        set("podman", "/run/.containerenv exists".into(), &mut runtime);
    }
    if let Ok(c) = std::env::var("container") {
        set(
            &c.clone(),
            format!("environment variable container={c}"),
            &mut runtime,
        );
    }
    if std::env::var("KUBERNETES_SERVICE_HOST").is_ok() {
        set(
            "kubernetes",
            "KUBERNETES_SERVICE_HOST is set".into(),
            &mut runtime,
        );
    }
    if let Ok(cg) = std::fs::read_to_string("/proc/1/cgroup") {
        for (marker, name) in [
            ("kubepods", "kubernetes"),
            ("docker", "docker"),
            ("containerd", "containerd"),
            ("libpod", "podman"),
            ("lxc", "lxc"),
        ] {
            if cg.contains(marker) {
                set(
                    name,
                    format!("/proc/1/cgroup mentions '{marker}'"),
                    &mut runtime,
                );
                break;
            }
        }
    }
    if let Ok(mi) = std::fs::read_to_string("/proc/self/mountinfo") {
        // Fields: id parent major:minor root mountpoint options ... - fstype source options
        for line in mi.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            if f.get(4) == Some(&"/") {
                let fstype = f
                    .iter()
                    .position(|x| *x == "-")
                    .and_then(|i| f.get(i + 1))
                    .copied()
                    .unwrap_or("");
                if fstype == "overlay" {
                    evidence.push("the root filesystem is an overlay mount".into());
                }
                break;
            }
        }
    }
    Container {
        in_container: !evidence.is_empty(),
        runtime,
        evidence,
    }
}

/// The host CPU, memory and OS.
pub fn host() -> Host {
    use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};
    let sys = System::new_with_specifics(
        RefreshKind::nothing()
            .with_cpu(CpuRefreshKind::nothing().with_frequency())
            .with_memory(MemoryRefreshKind::nothing().with_ram()),
    )
    .ok();
    let cpus = sys.as_ref().map(|s| s.cpus()).unwrap_or(&[]);
    Host {
        arch: std::env::consts::ARCH.to_string(),
        cpu_model: cpus
            .first()
            .map(|c| c.brand().trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown (not reported by the OS)".into()),
        cpu_vendor: cpus
            .first()
            .map(|c| c.vendor_id().to_string())
            .unwrap_or_default(),
        physical_cores: System::physical_core_count().ok(),
        logical_cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(cpus.len()),
        cpu_frequency_mhz: cpus.first().map(|c| c.frequency()).filter(|&f| f > 0),
        memory_bytes: sys.as_ref().map(|s| s.total_memory()).unwrap_or(0),
        os: System::name().unwrap_or_else(|_| std::env::consts::OS.to_string()),
        os_version: System::os_version().unwrap_or_default(),
        kernel: System::kernel_version().unwrap_or_default(),
        hostname: System::host_name().unwrap_or_default(),
        container: container(),
    }
}

/// Identifies everything.
pub fn identify() -> Devices {
    let (library, not_found) = match backend::ort::library() {
        Ok(l) => (Some(l), None),
        Err(e) => (None, Some(e)),
    };
    let providers = if library.is_some() {
        backend::ort::compiled_providers().unwrap_or_default()
    } else {
        Vec::new()
    };
    let backends = backend::registry()
        .iter()
        .map(|b| BackendStatus {
            name: b.name().to_string(),
            summary: b.summary().to_string(),
            availability: b.probe(),
            providers: b
                .providers()
                .into_iter()
                .map(|(name, availability)| ProviderStatus { name, availability })
                .collect(),
        })
        .collect();
    Devices {
        schema: "acceval.devices/1".into(),
        host: host(),
        nvidia: nvidia::identify(),
        ascend: ascend::identify(),
        onnxruntime: OnnxRuntime {
            library,
            not_found,
            providers,
        },
        backends,
    }
}
