//! What kind of device each backend runs on (§6 c, §6.2 b) and how it hands operators to it
//! (§6 g's three routes), as a table: adding a backend or a provider adds a row.

use super::{BackendSettings, BackendSpec};
pub use crate::report::schema::session::{AdaptationRoute, DeviceClass};

/// (backend, provider, class, route, what the route means here).
type Row = (
    &'static str,
    Option<&'static str>,
    DeviceClass,
    AdaptationRoute,
    &'static str,
);

const TABLE: &[Row] = &[
    (
        "cpu",
        None,
        DeviceClass::Cpu,
        AdaptationRoute::OperatorMapping,
        "tract runs every ONNX operator on its own CPU kernels",
    ),
    (
        "cuda",
        None,
        DeviceClass::Gpu,
        AdaptationRoute::OperatorMapping,
        "tract maps operators to CUDA kernels (cuBLAS, cuDNN, NVRTC); the others stay on the CPU",
    ),
    (
        "ort",
        Some("cpu"),
        DeviceClass::Cpu,
        AdaptationRoute::OperatorMapping,
        "ONNX Runtime's CPU execution provider kernels",
    ),
    (
        "ort",
        Some("cuda"),
        DeviceClass::Gpu,
        AdaptationRoute::OperatorMapping,
        "the CUDA execution provider takes the nodes it has kernels for; the rest fall back to the CPU provider",
    ),
    (
        "ort",
        Some("tensorrt"),
        DeviceClass::Gpu,
        AdaptationRoute::GraphHandoff,
        "the TensorRT execution provider builds engines for the subgraphs it takes",
    ),
    (
        "ort",
        Some("openvino"),
        DeviceClass::Cpu,
        AdaptationRoute::GraphHandoff,
        "the OpenVINO execution provider compiles the subgraphs it takes (the whole graph when it can)",
    ),
    (
        "ort",
        Some("cann"),
        DeviceClass::Npu,
        AdaptationRoute::GraphHandoff,
        "the CANN execution provider hands subgraphs to the Ascend graph engine",
    ),
    (
        "ort",
        Some("qnn"),
        DeviceClass::Npu,
        AdaptationRoute::GraphHandoff,
        "the QNN execution provider hands subgraphs to the Qualcomm HTP",
    ),
    (
        "ort",
        Some("migraphx"),
        DeviceClass::Gpu,
        AdaptationRoute::CompilerBackend,
        "MIGraphX compiles the subgraphs it takes for AMD GPUs",
    ),
    (
        "ort",
        Some("rocm"),
        DeviceClass::Gpu,
        AdaptationRoute::OperatorMapping,
        "the ROCm execution provider's kernels",
    ),
    (
        "ort",
        Some("xnnpack"),
        DeviceClass::Cpu,
        AdaptationRoute::OperatorMapping,
        "XNNPACK's CPU kernels",
    ),
    (
        "ort",
        Some("onednn"),
        DeviceClass::Cpu,
        AdaptationRoute::OperatorMapping,
        "oneDNN's CPU kernels",
    ),
    (
        "acl",
        None,
        DeviceClass::Npu,
        AdaptationRoute::CompilerBackend,
        "ATC compiles the whole graph into an Ascend .om model",
    ),
    (
        "mock",
        None,
        DeviceClass::Emulated,
        AdaptationRoute::None,
        "a test stand-in that returns zeros: no device",
    ),
];

fn row(spec: &BackendSpec) -> Option<&'static Row> {
    let provider = spec
        .provider
        .as_deref()
        .or((spec.backend == "ort").then_some("cpu"));
    TABLE
        .iter()
        .find(|r| r.0 == spec.backend && r.1 == provider)
}

/// The class of device `b` runs on. OpenVINO takes its device from `device_type`
/// (`--ep-option device_type=NPU|GPU|CPU`).
pub fn device_class(b: &BackendSettings) -> DeviceClass {
    if b.spec.backend == "ort" && b.spec.provider.as_deref() == Some("openvino") {
        let dt = b
            .ep_options
            .iter()
            .find(|(k, _)| k == "device_type")
            .map(|(_, v)| v.to_ascii_uppercase());
        return match dt.as_deref() {
            Some(d) if d.starts_with("NPU") => DeviceClass::Npu,
            Some(d) if d.starts_with("GPU") => DeviceClass::Gpu,
            _ => DeviceClass::Cpu,
        };
    }
    row(&b.spec).map(|r| r.2).unwrap_or(DeviceClass::Cpu)
}

/// How `spec` hands operators to its device, and what that means for it.
pub fn route(spec: &BackendSpec) -> (AdaptationRoute, &'static str) {
    row(spec)
        .map(|r| (r.3, r.4))
        .unwrap_or((AdaptationRoute::OperatorMapping, "unknown backend"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> BackendSettings {
        BackendSettings::new(x.parse().unwrap())
    }

    #[test]
    fn classes_and_routes() {
        assert_eq!(device_class(&s("cpu")), DeviceClass::Cpu);
        assert_eq!(device_class(&s("ort")), DeviceClass::Cpu);
        assert_eq!(device_class(&s("ort:cuda@1")), DeviceClass::Gpu);
        assert_eq!(device_class(&s("ort:cann")), DeviceClass::Npu);
        assert_eq!(device_class(&s("mock")), DeviceClass::Emulated);
        let mut ov = s("ort:openvino");
        assert_eq!(device_class(&ov), DeviceClass::Cpu);
        ov.ep_options.push(("device_type".into(), "NPU".into()));
        assert!(device_class(&ov).is_dedicated_ai_chip());
        assert!(!DeviceClass::Gpu.is_dedicated_ai_chip());
        assert_eq!(
            route(&"ort:openvino".parse().unwrap()).0,
            AdaptationRoute::GraphHandoff
        );
        assert_eq!(
            route(&"cpu".parse().unwrap()).0,
            AdaptationRoute::OperatorMapping
        );
    }
}
