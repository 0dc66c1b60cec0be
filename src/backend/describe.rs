//! What a backend says about itself ([`Traits`], from [`Backend::describe`](super::Backend)):
//! the class of device it runs on (§6 c, §6.2 b), how it hands operators to that device (§6 g's
//! three routes), whether it is the plain host CPU, the sensor that observes its device, where
//! its peak FLOP/s comes from, and which engine can independently check an FP32 reference it
//! computed. Code outside `backend/` asks [`describe`] and never matches backend names; a
//! backend answers for its own providers in its own file.

use super::{BackendSettings, BackendSpec};
pub use crate::report::schema::session::{AdaptationRoute, DeviceClass};

/// The sensor that reads a device's utilization and power (besides the host's procfs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sensor {
    /// NVIDIA's NVML (`nvml-wrapper`), by the GPU's NVML index.
    Nvml,
    /// Ascend's DCMI (`libdcmi.so`), by NPU id.
    Dcmi,
}

/// Where the peak FLOP/s of a backend's device comes from (`device::peak`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeakSource {
    /// Measured: an FMA probe on the CPU threads the run uses.
    CpuFma,
    /// The NVIDIA GPU's published peak, by the model NVML names.
    NvidiaGpu,
    /// An NPU's peak, stated by the profile (`[speed] peak_gflops`); unknown without it.
    Stated,
    /// None known, and why.
    Unknown(&'static str),
}

/// A backend's description of itself for one `--backend` spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Traits {
    pub class: DeviceClass,
    pub route: AdaptationRoute,
    /// What the route means for this backend (§6 g's evidence).
    pub route_detail: &'static str,
    /// The device under test is the host CPU and every node runs on it, so placement needs
    /// no engine profile.
    pub plain_cpu: bool,
    /// A node the engine put on its default CPU kernels is a fallback from the provider
    /// asked for (listed in placement records).
    pub reports_cpu_fallback: bool,
    /// The sensor whose utilization and power an accelerated run must record; `None` where
    /// acceval has none for this device (the CPU's procfs sampler always runs).
    pub sensor: Option<Sensor>,
    pub peak: PeakSource,
    /// The other engine that can compute the same FP32 reference independently
    /// (`--backend` spec), when this backend may compute references at all.
    pub cross_check: Option<&'static str>,
}

impl Traits {
    /// A host-CPU engine: its own kernels, the CPU's FMA peak, the host sensors.
    pub const fn host_cpu(route_detail: &'static str, cross_check: Option<&'static str>) -> Traits {
        Traits {
            class: DeviceClass::Cpu,
            route: AdaptationRoute::OperatorMapping,
            route_detail,
            plain_cpu: true,
            reports_cpu_fallback: false,
            sensor: None,
            peak: PeakSource::CpuFma,
            cross_check,
        }
    }

    /// An accelerator backend; nodes left on the CPU are fallbacks.
    pub const fn accelerator(
        class: DeviceClass,
        route: AdaptationRoute,
        route_detail: &'static str,
        sensor: Option<Sensor>,
        peak: PeakSource,
    ) -> Traits {
        Traits {
            class,
            route,
            route_detail,
            plain_cpu: false,
            reports_cpu_fallback: true,
            sensor,
            peak,
            cross_check: None,
        }
    }

    /// What is said of a spec no backend recognises (it cannot load either).
    fn unknown() -> Traits {
        Traits {
            class: DeviceClass::Cpu,
            route: AdaptationRoute::OperatorMapping,
            route_detail: "unknown backend",
            plain_cpu: false,
            reports_cpu_fallback: true,
            sensor: None,
            peak: PeakSource::Unknown("no peak is known for this backend's device"),
            cross_check: None,
        }
    }
}

/// What the backend of `b` says about itself.
pub fn describe(b: &BackendSettings) -> Traits {
    super::find(&b.spec.backend)
        .ok()
        .and_then(|backend| backend.describe(b))
        .unwrap_or_else(Traits::unknown)
}

/// [`describe`] for a spec with the engine's default settings.
pub fn describe_spec(spec: &BackendSpec) -> Traits {
    describe(&BackendSettings::new(spec.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> BackendSettings {
        BackendSettings::new(x.parse().unwrap())
    }

    #[test]
    fn classes_and_routes() {
        assert_eq!(describe(&s("cpu")).class, DeviceClass::Cpu);
        assert_eq!(describe(&s("ort")).class, DeviceClass::Cpu);
        assert_eq!(describe(&s("ort:cuda@1")).class, DeviceClass::Gpu);
        assert_eq!(describe(&s("ort:cann")).class, DeviceClass::Npu);
        assert_eq!(describe(&s("acl")).class, DeviceClass::Npu);
        assert_eq!(describe(&s("mock")).class, DeviceClass::Emulated);
        let mut ov = s("ort:openvino");
        assert_eq!(describe(&ov).class, DeviceClass::Cpu);
        ov.ep_options.push(("device_type".into(), "NPU".into()));
        assert!(describe(&ov).class.is_dedicated_ai_chip());
        assert!(!DeviceClass::Gpu.is_dedicated_ai_chip());
        assert_eq!(
            describe(&s("ort:openvino")).route,
            AdaptationRoute::GraphHandoff
        );
        assert_eq!(describe(&s("cpu")).route, AdaptationRoute::OperatorMapping);
    }

    /// The questions that six files used to answer by matching names, answered once: the
    /// CPU engines (xnnpack and onednn included) are the plain CPU with the FMA peak; the
    /// GPU routes read NVML, the Ascend ones DCMI; only the two CPU engines cross-check each
    /// other's references.
    #[test]
    fn every_backend_answers_for_itself() {
        for cpu in ["cpu", "ort", "ort:cpu", "ort:xnnpack", "ort:onednn"] {
            let t = describe(&s(cpu));
            assert!(t.plain_cpu, "{cpu}");
            assert_eq!(t.peak, PeakSource::CpuFma, "{cpu}");
            assert_eq!(t.sensor, None, "{cpu}");
        }
        // An EP asked for on the CPU still has fallbacks to the default CPU kernels.
        assert!(describe(&s("ort:xnnpack")).reports_cpu_fallback);
        assert!(!describe(&s("ort:cpu")).reports_cpu_fallback);
        for gpu in ["cuda", "cuda@1", "ort:cuda", "ort:tensorrt"] {
            let t = describe(&s(gpu));
            assert_eq!(t.sensor, Some(Sensor::Nvml), "{gpu}");
            assert_eq!(t.peak, PeakSource::NvidiaGpu, "{gpu}");
            assert!(!t.plain_cpu && t.reports_cpu_fallback, "{gpu}");
        }
        for npu in ["acl", "ort:cann"] {
            assert_eq!(describe(&s(npu)).sensor, Some(Sensor::Dcmi), "{npu}");
            assert_eq!(describe(&s(npu)).peak, PeakSource::Stated, "{npu}");
        }
        assert_eq!(describe(&s("cpu")).cross_check, Some("ort:cpu"));
        assert_eq!(describe(&s("ort:cpu")).cross_check, Some("cpu"));
        for other in ["cuda", "ort:cuda", "ort:xnnpack", "mock", "acl", "tpu"] {
            assert_eq!(describe(&s(other)).cross_check, None, "{other}");
        }
        let mock = describe(&s("mock"));
        assert!(!mock.plain_cpu && mock.sensor.is_none());
        assert!(matches!(mock.peak, PeakSource::Unknown(_)));
        // An unknown name or provider is described as unknown, not as the CPU engine.
        assert!(!describe(&s("tpu")).plain_cpu);
        assert!(!describe(&s("ort:nope")).plain_cpu);
    }
}
