//! `acceval conformance`: on a small suite written here (every status exercised), and on
//! ONNX's real backend node tests with the pass counts recorded in the README as floors.
//!
//! The real suite is found through ACCEVAL_CONFORMANCE_SUITE (set by .ci/run, which fetches
//! it with scripts/fetch-onnx-node-tests.sh). Without it that test prints SKIPPED, unless
//! ACCEVAL_REQUIRE_SUITE=1.

mod common;

use std::path::Path;

use acceval::model::build::{GraphBuilder, node, tensor_f32, tensor_i64};
use acceval::model::onnx::{DataType, TensorProto};
use common::*;
use prost::Message;

/// The pass counts of the FP32 subset of ONNX 1.22.0's node tests, as recorded in the
/// README. A drop below either fails this test.
const CPU_FLOOR: u64 = 599;
const ORT_CPU_FLOOR: u64 = 696;
const FP32_CASES: u64 = 719;

fn relu_expected(x: &TensorProto) -> TensorProto {
    let vals: Vec<u8> = x
        .raw_data
        .chunks_exact(4)
        .flat_map(|c| {
            f32::from_le_bytes(c.try_into().unwrap())
                .max(0.0)
                .to_le_bytes()
        })
        .collect();
    acceval::model::build::tensor_raw("y", DataType::FLOAT, &x.dims, vals)
}

fn write_case(
    root: &Path,
    name: &str,
    model: &[u8],
    inputs: &[TensorProto],
    outputs: &[TensorProto],
) {
    let dir = root.join(name);
    let set = dir.join("test_data_set_0");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::write(dir.join("model.onnx"), model).unwrap();
    for (k, t) in inputs.iter().enumerate() {
        std::fs::write(set.join(format!("input_{k}.pb")), t.encode_to_vec()).unwrap();
    }
    for (k, t) in outputs.iter().enumerate() {
        std::fs::write(set.join(format!("output_{k}.pb")), t.encode_to_vec()).unwrap();
    }
}

fn relu_model() -> Vec<u8> {
    GraphBuilder::new("g")
        .input("x", DataType::FLOAT, &[2, 3])
        .node(node("Relu", &["x"], &["y"], vec![]))
        .output("y", DataType::FLOAT, &[2, 3])
        .encode(17)
}

fn small_suite(root: &Path) {
    let mut x = tensor_f32("x", &[2, 3], 5);
    x.name = "x".into();
    write_case(
        root,
        "test_relu_ok",
        &relu_model(),
        &[x.clone()],
        &[relu_expected(&x)],
    );
    // The expected output is shifted by 0.01: beyond rtol 1e-3.
    let mut wrong = relu_expected(&x);
    let shifted: Vec<u8> = wrong
        .raw_data
        .chunks_exact(4)
        .flat_map(|c| (f32::from_le_bytes(c.try_into().unwrap()) + 0.01).to_le_bytes())
        .collect();
    wrong.raw_data = shifted.into();
    write_case(
        root,
        "test_relu_wrong",
        &relu_model(),
        &[x.clone()],
        &[wrong],
    );
    // Not a model at all.
    write_case(root, "test_broken", b"garbage", &[x.clone()], &[]);
    // An INT64 case: skipped by the FP32 selection, run with --types all.
    let neg = GraphBuilder::new("g")
        .input("a", DataType::INT64, &[3])
        .node(node("Neg", &["a"], &["b"], vec![]))
        .output("b", DataType::INT64, &[3])
        .encode(17);
    let a = tensor_i64("a", &[3], &[1, -2, 3]);
    let b = tensor_i64("b", &[3], &[-1, 2, -3]);
    write_case(root, "test_neg_int64", &neg, &[a], &[b]);
}

fn conformance_json(args: &[&str]) -> (i32, serde_json::Value, String) {
    let mut all = vec!["conformance", "--json"];
    all.extend_from_slice(args);
    let out = bin().args(&all).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), v, stderr)
}

#[test]
fn small_suite_exercises_every_status() {
    let dir = tempfile::tempdir().unwrap();
    small_suite(dir.path());
    let suite = dir.path().to_str().unwrap();
    let (code, v, e) = conformance_json(&["--suite", suite]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(v["cases_found"], 4);
    // The broken model is counted (as a bad case); the INT64 case is skipped.
    assert_eq!(v["cases_skipped"], 1, "{v}");
    assert_eq!(v["totals"]["cases"], 3);
    assert_eq!(v["totals"]["passed"], 1);
    assert_eq!(v["totals"]["ran"], 2);
    let status = |n: &str| {
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .map(|c| c["status"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(status("test_relu_ok"), "passed");
    assert_eq!(status("test_relu_wrong"), "mismatch");
    assert_eq!(status("test_broken"), "bad_case");
    assert_eq!(v["by_op"]["Relu"]["passed"], 1);

    // All types: the INT64 case runs and passes too.
    let (_, v, _) = conformance_json(&["--suite", suite, "--types", "all"]);
    assert_eq!(v["totals"]["passed"], 2);
    assert_eq!(v["by_op"]["Neg"]["passed"], 1);

    // A looser tolerance lets the shifted case pass: 0.01 <= atol 0.02.
    let (_, v, _) = conformance_json(&["--suite", suite, "--atol", "0.02"]);
    assert_eq!(v["totals"]["passed"], 2);

    // --min-passed makes a drop a non-zero exit (1: ran, not compliant).
    let (code, _, e) = conformance_json(&["--suite", suite, "--min-passed", "2"]);
    assert_eq!(code, 1, "{e}");
    assert!(e.contains("fewer than --min-passed 2"), "{e}");

    // A folder without cases is an error (2) that names it.
    let empty = tempfile::tempdir().unwrap();
    let (code, _, e) = conformance_json(&["--suite", empty.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(e.contains("holds no test case"), "{e}");
}

fn real_suite() -> Option<String> {
    let p = std::env::var("ACCEVAL_CONFORMANCE_SUITE").ok().or_else(|| {
        let home = std::env::var("HOME").ok()?;
        let p = format!("{home}/.cache/acceval/onnx-node-tests/node");
        Path::new(&p).join(".complete").exists().then_some(p)
    });
    if p.is_none() {
        common::skip(
            "ACCEVAL_REQUIRE_SUITE",
            "ONNX node tests not found (scripts/fetch-onnx-node-tests.sh, then ACCEVAL_CONFORMANCE_SUITE=DIR)",
        );
    }
    p
}

#[test]
fn onnx_node_tests_pass_rates_do_not_drop() {
    let Some(suite) = real_suite() else { return };
    let (code, v, e) = conformance_json(&["--suite", &suite, "--backend", "cpu"]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(v["cases_found"], 1765);
    assert_eq!(v["totals"]["cases"], FP32_CASES);
    let passed = v["totals"]["passed"].as_u64().unwrap();
    eprintln!("cpu: {passed} of {FP32_CASES} FP32 node tests pass");
    assert!(
        passed >= CPU_FLOOR,
        "cpu passes {passed}, below the recorded {CPU_FLOOR}"
    );

    let (code, v, e) = conformance_json(&["--suite", &suite, "--backend", "ort:cpu"]);
    if code == 2 && e.contains("not available") {
        common::skip(
            "ACCEVAL_REQUIRE_ORT",
            &format!("ort:cpu conformance: {}", e.trim()),
        );
        return;
    }
    assert_eq!(code, 0, "{e}");
    let passed = v["totals"]["passed"].as_u64().unwrap();
    eprintln!("ort:cpu: {passed} of {FP32_CASES} FP32 node tests pass");
    assert!(
        passed >= ORT_CPU_FLOOR,
        "ort:cpu passes {passed}, below the recorded {ORT_CPU_FLOOR}"
    );
}
