//! Helpers shared by the integration tests: write a built model to a temporary
//! directory, analyse it, run the real binary in the test project (`project.rs`: never in
//! the checkout), and skip visibly (`skip.rs`).
#![allow(dead_code, unused_imports)]

use std::path::PathBuf;
use std::sync::OnceLock;

pub mod project;
pub mod skip;
pub mod sse_server;

pub use project::{project, project_env, reference, zoo_model};
pub use skip::skip;

use acceval::model::build::GraphBuilder;
use acceval::model::{Analysis, InputShape, analyse};

pub struct Written {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

pub fn write_bytes(name: &str, bytes: &[u8]) -> Written {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write model");
    Written { dir, path }
}

pub fn write(g: GraphBuilder, opset: i64) -> Written {
    write_bytes("model.onnx", &g.encode(opset))
}

/// An `.npy` (format 1.0) of `descr` (e.g. `<f4`) in `shape` (a Python tuple, `(2, 3)`)
/// holding `body`, its header padded to 64 bytes as numpy writes it.
pub fn npy_bytes(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.extend(h.as_bytes());
    b.extend(body);
    b
}

/// `g` with a Loop over `body` from its input `x` to its output `y`: `trip` iterations,
/// the condition constantly true.
pub fn with_loop(
    g: GraphBuilder,
    trip: i64,
    body: acceval::model::onnx::GraphProto,
) -> GraphBuilder {
    use acceval::model::build::{Attr, attr, node, tensor_i64, tensor_raw};
    use acceval::model::onnx::DataType;
    g.init(tensor_i64("trip", &[], &[trip]))
        .init(tensor_raw("keep", DataType::BOOL, &[], vec![1]))
        .node(node(
            "Loop",
            &["trip", "keep", "x"],
            &["y"],
            vec![attr("body", Attr::Graph(body))],
        ))
}

pub fn analyse_graph(g: GraphBuilder, opset: i64) -> Analysis {
    let w = write(g, opset);
    analyse(&w.path, &[]).expect("analyse")
}

pub fn analyse_with(g: GraphBuilder, opset: i64, inputs: &[&str]) -> Analysis {
    let w = write(g, opset);
    let shapes: Vec<InputShape> = inputs.iter().map(|s| s.parse().expect("shape")).collect();
    analyse(&w.path, &shapes).expect("analyse")
}

/// The binary under test, pointed at the test project.
pub fn bin() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("acceval").expect("binary");
    c.envs(project_env());
    c
}

/// The binary under test as a `std::process::Command` (for servers and signals), pointed at
/// the test project.
pub fn command() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("acceval"));
    c.envs(project_env());
    c
}

/// `acceval devices --json`, once per test binary (it reads no project folder).
pub fn devices_json() -> &'static serde_json::Value {
    static V: OnceLock<serde_json::Value> = OnceLock::new();
    V.get_or_init(|| {
        let out = assert_cmd::Command::cargo_bin("acceval")
            .expect("binary")
            .args(["devices", "--json"])
            .output()
            .expect("run acceval devices");
        assert!(out.status.success(), "acceval devices --json failed");
        serde_json::from_slice(&out.stdout).expect("devices JSON")
    })
}

/// MACs of the single node named `name` in the analysis.
pub fn node_macs(a: &Analysis, op: &str) -> u64 {
    a.per_op
        .iter()
        .filter(|n| n.op_type == op)
        .map(|n| n.macs)
        .sum()
}

/// Runs `acceval ARGS`; returns (exit code, stdout, stderr).
pub fn acceval(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().expect("run acceval");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether ONNX Runtime can be loaded here (else a visible skip, or a failure when
/// `ACCEVAL_REQUIRE_ORT=1`).
pub fn ort_available() -> bool {
    let v = devices_json();
    let ok = v["onnxruntime"]["library"].is_object();
    if !ok {
        let why = v["onnxruntime"]["not_found"].as_str().unwrap_or("?");
        skip(
            "ACCEVAL_REQUIRE_ORT",
            &format!("ONNX Runtime not found ({why})"),
        );
    }
    ok
}

/// A Python with onnx, onnxruntime and numpy: `$ACCEVAL_PYTHON`, else `python3`. Without
/// one: a visible skip (`None`), or a failure when `ACCEVAL_REQUIRE_PYTHON=1` (CI).
pub fn python() -> Option<String> {
    python_with(
        "onnx, onnxruntime, numpy",
        "pip install onnx onnxruntime numpy",
    )
}

/// `$ACCEVAL_PYTHON` (else `python3`) when it imports `modules` (comma-separated); else a
/// visible skip naming `fix`, or a failure when `ACCEVAL_REQUIRE_PYTHON=1`.
pub fn python_with(modules: &str, fix: &str) -> Option<String> {
    let py = std::env::var("ACCEVAL_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(&py)
        .args(["-c", &format!("import {modules}")])
        .output();
    match out {
        Ok(o) if o.status.success() => Some(py),
        other => {
            let why = match other {
                Ok(o) => {
                    let e = String::from_utf8_lossy(&o.stderr);
                    e.trim().lines().last().unwrap_or("").to_string()
                }
                Err(e) => e.to_string(),
            };
            skip(
                "ACCEVAL_REQUIRE_PYTHON",
                &format!(
                    "no python with {modules} ({fix}, or set ACCEVAL_PYTHON; tried '{py}': {why})"
                ),
            );
            None
        }
    }
}

/// `schemas/FILE` (committed, generated from the types) as JSON.
pub fn schema(file: &str) -> serde_json::Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(file);
    serde_json::from_slice(&std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

/// Panics with every violation when `doc` does not match `schemas/FILE`.
pub fn assert_schema_valid(file: &str, doc: &serde_json::Value) {
    let s = schema(file);
    let v = jsonschema::validator_for(&s).unwrap();
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{file}: {errors:#?}");
}

/// Whether this CPU has VNNI (AVX512-VNNI or AVX-VNNI), from /proc/cpuinfo (false elsewhere).
/// Without it, ONNX Runtime's u8s8 integer convolutions on x86 add pairs of 8-bit products in
/// 16 bits (VPMADDUBSW), which can saturate: its INT8 MobileNetV2 then drifts (MSE 0.151
/// against the FP32 model on an AVX2-only AMD EPYC, where tract gives 5.3e-4).
pub fn vnni() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
        c.split_whitespace()
            .any(|f| f == "avx512_vnni" || f == "avx_vnni")
    })
}
