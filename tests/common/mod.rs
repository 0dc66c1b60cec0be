//! Helpers shared by the integration tests: write a built model to a temporary
//! directory, analyse it, run the real binary.
#![allow(dead_code)]

use std::path::PathBuf;

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
