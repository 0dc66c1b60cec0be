//! "Real peer" test: parameter counts of models written by real tools (onnx's helper and
//! external-data writer, onnxruntime's static quantizer), not by acceval, against a ground
//! truth computed from the ONNX protos in Python (`tests/py/make_peer_models.py`, whose
//! docstring states the counting rule).
//!
//! Needs a Python with `onnx`, `onnxruntime` and `numpy`: `$ACCEVAL_PYTHON`, else `python3`.
//! Without one the test prints SKIPPED and passes, unless `ACCEVAL_REQUIRE_PYTHON=1` (CI),
//! where it fails. Every mismatch is collected and reported together, so one run shows all
//! the discrepancies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

mod common;
use common::python;

const MODELS: [&str; 7] = [
    "cnn_fp32.onnx",
    "cnn_qdq_int8.onnx",
    "cnn_qoperator_uint8.onnx",
    "cnn_fp16.onnx",
    "cnn_constants.onnx",
    "cnn_external.onnx",
    "if_model.onnx",
];

/// MACs of the CNN at its declared input [1,3,32,32] (every storage form is the same net):
///   conv1  3->8, 3x3, pad 1, stride 1: out [1,8,32,32]  = 8,192 outputs x 3·3·3 = 221,184
///   conv2  8->16, 3x3, pad 1, stride 2: out [1,16,16,16] = 4,096 outputs x 8·3·3 = 294,912
///   fc     Gemm 16->5: out [1,5]                         =     5 outputs x 16    =      80
///   total                                                                       = 516,176
/// (Relu, GlobalAveragePool, the bias adds and the Q/DQ nodes are "other ops", not MACs.)
const CNN_MACS: u64 = 516_176;

/// Quantized weight elements of the CNN: 8·3·3·3 + 16·8·3·3 + 5·16 = 216 + 1,152 + 80.
const CNN_WEIGHTS: u64 = 1_448;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/make_peer_models.py")
}

fn acceval() -> assert_cmd::Command {
    common::bin()
}

fn u(v: &Value, ptr: &str) -> Option<u64> {
    v.pointer(ptr).and_then(Value::as_u64)
}

/// `(tensors, count, bytes)` per element type.
type ByType = BTreeMap<String, (u64, u64, u64)>;

fn expected_by_type(e: &Value) -> ByType {
    e["by_type"]
        .as_object()
        .expect("expected.json by_type")
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                (
                    u(v, "/tensors").unwrap(),
                    u(v, "/count").unwrap(),
                    u(v, "/bytes").unwrap(),
                ),
            )
        })
        .collect()
}

fn got_by_type(a: &Value) -> ByType {
    a["params"]["by_type"]
        .as_array()
        .map(|v| v.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|t| {
            (
                t["elem_type"].as_str().unwrap_or("?").to_string(),
                (
                    u(t, "/tensors").unwrap_or(0),
                    u(t, "/count").unwrap_or(0),
                    u(t, "/bytes").unwrap_or(0),
                ),
            )
        })
        .collect()
}

/// Elements of the 8-bit parameter tensors of rank >= 2 (the quantized Conv/Gemm weights;
/// zero points are scalars or per-channel vectors), per element type.
fn got_quantized_weights(a: &Value) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for t in a["params"]["list"].as_array().into_iter().flatten() {
        let ty = t["elem_type"].as_str().unwrap_or("?");
        let rank = t["dims"].as_array().map_or(0, Vec::len);
        if matches!(ty, "INT8" | "UINT8") && rank >= 2 {
            *m.entry(ty.to_string()).or_insert(0) += u(t, "/count").unwrap_or(0);
        }
    }
    m
}

struct Checker {
    fails: Vec<String>,
}

impl Checker {
    fn eq<T: PartialEq + std::fmt::Debug>(&mut self, model: &str, field: &str, want: T, got: T) {
        if want != got {
            self.fails.push(format!(
                "{model}: {field}: expected {want:?}, acceval gave {got:?}"
            ));
        }
    }

    fn ok(&mut self, model: &str, what: &str, cond: bool, detail: String) {
        if !cond {
            self.fails.push(format!("{model}: {what}: {detail}"));
        }
    }
}

#[test]
fn parameter_counts_match_models_from_real_tools() {
    let Some(py) = python() else { return };
    let start = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let gen_out = std::process::Command::new(&py)
        .arg(script())
        .arg(dir.path())
        .output()
        .expect("run make_peer_models.py");
    let gen_time = start.elapsed();
    assert!(
        gen_out.status.success(),
        "make_peer_models.py failed ({}):\n{}{}",
        gen_out.status,
        String::from_utf8_lossy(&gen_out.stdout),
        String::from_utf8_lossy(&gen_out.stderr)
    );
    let expected: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("expected.json")).expect("read expected.json"),
    )
    .expect("parse expected.json");

    let mut c = Checker { fails: Vec::new() };
    for model in MODELS {
        let e = &expected[model];
        assert!(e.is_object(), "expected.json has no entry for {model}");
        let out = acceval()
            .arg("inspect")
            .arg(dir.path().join(model))
            .arg("--json")
            .output()
            .expect("run acceval");
        if out.status.code() != Some(0) {
            c.fails.push(format!(
                "{model}: exit code: expected 0, acceval gave {:?}; stderr: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            continue;
        }
        let a: Value = match serde_json::from_slice(&out.stdout) {
            Ok(a) => a,
            Err(err) => {
                c.fails.push(format!("{model}: stdout is not JSON ({err})"));
                continue;
            }
        };

        c.eq(
            model,
            "params.count",
            u(e, "/count"),
            u(&a, "/params/count"),
        );
        c.eq(
            model,
            "params.bytes",
            u(e, "/bytes"),
            u(&a, "/params/bytes"),
        );
        c.eq(
            model,
            "params.tensors",
            u(e, "/tensors"),
            u(&a, "/params/tensors"),
        );
        let (want, got) = (expected_by_type(e), got_by_type(&a));
        for ty in want.keys().chain(got.keys()) {
            c.eq(
                model,
                &format!("params.by_type[{ty}] (tensors, count, bytes)"),
                want.get(ty),
                got.get(ty),
            );
        }
        for f in ["tensors", "count", "bytes"] {
            c.eq(
                model,
                &format!("shape_tensors.{f}"),
                u(e, &format!("/shape_tensors/{f}")),
                u(&a, &format!("/shape_tensors/{f}")),
            );
        }

        // Quantized weights are counted in their 8-bit stored type.
        let qw: BTreeMap<String, u64> = e["quantized_weights"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        let weight_type = match model {
            "cnn_qdq_int8.onnx" => Some("INT8"),
            "cnn_qoperator_uint8.onnx" => Some("UINT8"),
            _ => None,
        };
        if let Some(ty) = weight_type {
            // The ground truth itself must hold every weight (a quantizer change would
            // show here, not as an acceval error).
            c.eq(
                model,
                "quantized weight elements in expected.json (hand count)",
                CNN_WEIGHTS,
                qw.values().sum::<u64>(),
            );
            c.ok(
                model,
                &format!("params.by_type has a {ty} entry holding weights"),
                got.get(ty)
                    .is_some_and(|t| t.1 >= qw.get(ty).copied().unwrap_or(1)),
                format!(
                    "expected {ty} with >= {:?} elements, acceval gave {:?}",
                    qw.get(ty),
                    got.get(ty)
                ),
            );
            c.eq(
                model,
                "8-bit weight elements per type in params.list",
                &qw,
                &got_quantized_weights(&a),
            );
        }

        // MACs: the same network whatever the storage or quantization.
        if model.starts_with("cnn_") {
            c.eq(model, "macs", Some(CNN_MACS), u(&a, "/macs"));
            c.eq(
                model,
                "lower_bound",
                Some(false),
                a["lower_bound"].as_bool(),
            );
            c.eq(
                model,
                "unsupported_ops",
                "[]".to_string(),
                a["unsupported_ops"].to_string(),
            );
        }
        if model == "if_model.onnx" {
            // Both branches are one MatMul [2,4]x[4,3] = 2·3 outputs x 4 = 24 MACs (the
            // larger branch is counted; they tie).
            c.eq(model, "macs", Some(24), u(&a, "/macs"));
            c.eq(
                model,
                "lower_bound",
                Some(false),
                a["lower_bound"].as_bool(),
            );
        }
        eprintln!(
            "{model}: params {} elements / {} bytes, by_type {:?}, shape tensors {}, macs {}, lower_bound {}",
            a["params"]["count"],
            a["params"]["bytes"],
            got,
            a["shape_tensors"]["count"],
            a["macs"],
            a["lower_bound"]
        );
    }

    // The external model without its data file: a one-line error naming the file, exit 2.
    let lone = tempfile::tempdir().expect("temp dir");
    let lone_model = lone.path().join("cnn_external.onnx");
    std::fs::copy(dir.path().join("cnn_external.onnx"), &lone_model).expect("copy model");
    let out = acceval()
        .arg("inspect")
        .arg(&lone_model)
        .arg("--json")
        .output()
        .expect("run acceval");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let m = "cnn_external.onnx without cnn_external.data";
    c.eq(m, "exit code", Some(2), out.status.code());
    c.ok(
        m,
        "stderr names cnn_external.data",
        stderr.contains("cnn_external.data"),
        format!("stderr: {stderr:?}"),
    );
    c.eq(m, "stderr lines", 1, stderr.trim_end().lines().count());
    c.ok(
        m,
        "no panic",
        !stderr.contains("panicked"),
        format!("stderr: {stderr:?}"),
    );

    eprintln!(
        "python generation {:.2} s, whole test {:.2} s",
        gen_time.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        c.fails.is_empty(),
        "{} mismatch(es) between acceval and the peer models:\n  {}",
        c.fails.len(),
        c.fails.join("\n  ")
    );
}
