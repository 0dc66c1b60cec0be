//! Helpers shared by the integration tests: write a built model to a temporary
//! directory, analyse it, run the real binary.
#![allow(dead_code)]

use std::path::PathBuf;

pub mod sse_server;

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

pub fn analyse_graph(g: GraphBuilder, opset: i64) -> Analysis {
    let w = write(g, opset);
    analyse(&w.path, &[]).expect("analyse")
}

pub fn analyse_with(g: GraphBuilder, opset: i64, inputs: &[&str]) -> Analysis {
    let w = write(g, opset);
    let shapes: Vec<InputShape> = inputs.iter().map(|s| s.parse().expect("shape")).collect();
    analyse(&w.path, &shapes).expect("analyse")
}

pub fn bin() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("acceval").expect("binary")
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

/// Whether ONNX Runtime can be loaded here (else a visible skip, or a failure in CI).
pub fn ort_available() -> bool {
    let (code, out, _) = acceval(&["devices", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ok = v["onnxruntime"]["library"].is_object();
    if !ok {
        let why = v["onnxruntime"]["not_found"]
            .as_str()
            .unwrap_or("?")
            .to_string();
        if std::env::var("ACCEVAL_REQUIRE_ORT").as_deref() == Ok("1") {
            panic!("ONNX Runtime required (ACCEVAL_REQUIRE_ORT=1) but not found: {why}");
        }
        eprintln!("SKIPPED: ONNX Runtime not found ({why})");
    }
    ok
}

/// A Python with onnx, onnxruntime and numpy: `$ACCEVAL_PYTHON`, else `python3`. Without
/// one: a visible skip (`None`), or a failure when `ACCEVAL_REQUIRE_PYTHON=1` (CI).
pub fn python() -> Option<String> {
    let py = std::env::var("ACCEVAL_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(&py)
        .args(["-c", "import onnx, onnxruntime, numpy"])
        .output();
    match out {
        Ok(o) if o.status.success() => Some(py),
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                Err(e) => e.to_string(),
            };
            if std::env::var("ACCEVAL_REQUIRE_PYTHON").as_deref() == Ok("1") {
                panic!(
                    "SKIPPED: python with onnx+onnxruntime not found (pip install onnx onnxruntime numpy) (ACCEVAL_REQUIRE_PYTHON=1; tried '{py}': {why})"
                );
            }
            eprintln!(
                "SKIPPED: python with onnx+onnxruntime not found (pip install onnx onnxruntime numpy) (tried '{py}': {why})"
            );
            None
        }
    }
}
