//! A real non-CPU execution provider: ONNX Runtime's OpenVINO EP (the `onnxruntime-openvino`
//! wheel, x86 CPUs). Placement maps the fused subgraph back to the nodes and MACs it
//! covers, and shows the split when an operator falls back to the CPU provider.
//!
//! Needs `$ACCEVAL_OPENVINO_ORT`: the wheel's `libonnxruntime.so.*` (.ci/run installs it in
//! its own venv). Skipped without it unless `$ACCEVAL_REQUIRE_OPENVINO=1`.

mod common;

use acceval::model::build::{Attr, GraphBuilder, attr, node, tensor_f32};
use acceval::model::onnx::DataType;

fn openvino_ort() -> Option<String> {
    match std::env::var("ACCEVAL_OPENVINO_ORT") {
        Ok(p) if std::path::Path::new(&p).is_file() => Some(p),
        _ => {
            common::skip(
                "ACCEVAL_REQUIRE_OPENVINO",
                "no ONNX Runtime with OpenVINO (pip install onnxruntime-openvino, then set $ACCEVAL_OPENVINO_ORT to its libonnxruntime.so)",
            );
            None
        }
    }
}

fn placement(lib: &str, model: &str) -> String {
    let out = common::bin()
        .args([
            "run",
            "--backend",
            "ort:openvino",
            "--model",
            model,
            "--placement",
            "--runs",
            "3",
        ])
        .env("ORT_DYLIB_PATH", lib)
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn squeezenet_is_handed_to_openvino_whole() {
    let Some(lib) = openvino_ort() else { return };
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/models/squeezenet1_1.onnx");
    let text = placement(&lib, model);
    assert!(
        text.contains("on OpenVINOExecutionProvider"),
        "the session did not run on OpenVINO:\n{text}"
    );
    assert!(
        text.contains(
            "whole graph handed to OpenVINOExecutionProvider: 83 of 83 nodes, 100.0 % of MACs"
        ),
        "{text}"
    );
    assert!(text.contains("subgraph / whole-graph hand-off"), "{text}");
}

#[test]
fn an_operator_openvino_does_not_take_falls_back_to_the_cpu() {
    let Some(lib) = openvino_ort() else { return };
    // Conv → Relu → Flatten → Hardmax: OpenVINO's EP has no Hardmax.
    let g = GraphBuilder::new("g")
        .input("x", DataType::FLOAT, &[1, 3, 16, 16])
        .init(tensor_f32("w", &[8, 3, 3, 3], 1))
        .node(node(
            "Conv",
            &["x", "w"],
            &["c"],
            vec![attr("pads", Attr::Ints(vec![1, 1, 1, 1]))],
        ))
        .node(node("Relu", &["c"], &["r"], vec![]))
        .node(node("Flatten", &["r"], &["f"], vec![]))
        .node(node("Hardmax", &["f"], &["y"], vec![]))
        .output("y", DataType::FLOAT, &[1, 2048]);
    let w = common::write(g, 13);
    let text = placement(&lib, w.path.to_str().unwrap());
    let line = text
        .lines()
        .find(|l| l.contains("fused subgraph(s) on OpenVINOExecutionProvider"))
        .unwrap_or_else(|| panic!("no split reported:\n{text}"));
    assert!(line.contains("3 of 4 nodes"), "{line}");
    assert!(
        line.contains("CPU fallback:") && line.contains("(Hardmax)"),
        "{line}"
    );
    assert!(
        !line.contains("(Conv)"),
        "Conv should run on OpenVINO: {line}"
    );
    // The Conv's MACs are on OpenVINO: a share strictly between 0 and 100 % is not possible
    // here (Hardmax has no MACs), so it reads 100.0 %.
    assert!(line.contains("100.0 % of MACs"), "{line}");
}
