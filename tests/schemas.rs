//! The JSON every command writes validates against its committed JSON Schema (schemas/,
//! generated from the typed results by `acceval schemas --write schemas`), the committed
//! schemas are current, and reports of the previous schema version are still verified.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

fn schema(file: &str) -> Value {
    common::schema(file)
}

/// Panics with every violation when `doc` does not match `schemas/FILE`.
fn assert_valid(file: &str, doc: &str) {
    let doc: Value = serde_json::from_str(doc).unwrap_or_else(|e| panic!("not JSON ({e}): {doc}"));
    common::assert_schema_valid(file, &doc);
}

#[test]
fn committed_schemas_match_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let (code, out, err) = acceval(&["schemas", "--check", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_schema_rejects_a_wrong_document() {
    // The check can fail: a bench report with a string where a number belongs.
    let s = schema("bench.schema.json");
    let v = jsonschema::validator_for(&s).unwrap();
    assert!(!v.is_valid(&serde_json::json!({"schema": "acceval.bench/1", "samples": "many"})));
}

#[test]
fn run_devices_bench_and_accuracy_json_validate() {
    let (code, out, err) = acceval(&["devices", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_valid("devices.schema.json", &out);

    let (code, out, err) = acceval(&["zoo", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_valid("zoo-list.schema.json", &out);

    let (code, out, err) = acceval(&[
        "run",
        "--model",
        "lstm-load-forecast",
        "--json",
        "--runs",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_valid("run.schema.json", &out);

    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("bench.json");
    let (code, out, err) = acceval(&[
        "bench",
        "--model",
        "lstm-load-forecast",
        "--runs",
        "5",
        "--duration",
        "0",
        "--warmup-runs",
        "1",
        "--allow-invalid",
        "--json",
        "--export-json",
        f.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_valid("bench.schema.json", &out);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["samples"],
        serde_json::from_slice::<Value>(&std::fs::read(&f).unwrap()).unwrap()["samples"]
    );

    let (code, out, err) = acceval(&[
        "accuracy",
        "--model",
        "lstm-load-forecast@int8",
        "--json",
        "--limit",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_valid("accuracy.schema.json", &out);
}

#[test]
fn a_non_finite_accuracy_report_validates() {
    // NaN metrics are written as null; the schema allows it and the report reads back.
    let g = acceval::model::build::GraphBuilder::new("g")
        .input("x", acceval::model::onnx::DataType::FLOAT, &[1, 4])
        .node(acceval::model::build::node("Log", &["x"], &["l"], vec![]))
        .node(acceval::model::build::node("Neg", &["l"], &["y"], vec![]))
        .output("y", acceval::model::onnx::DataType::FLOAT, &[1, 4]);
    let w = write(g, 17);
    let refdir = w.dir.path().join("ref");
    let (code, _, err) = acceval(&[
        "reference",
        "--model",
        w.path.to_str().unwrap(),
        "--out",
        refdir.to_str().unwrap(),
        "--no-cross-check",
        "--count",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    // A model that returns log(x - 1): NaN for inputs in [0, 1).
    let g = acceval::model::build::GraphBuilder::new("g")
        .input("x", acceval::model::onnx::DataType::FLOAT, &[1, 4])
        .init(acceval::model::build::tensor_raw(
            "one",
            acceval::model::onnx::DataType::FLOAT,
            &[],
            1f32.to_le_bytes().to_vec(),
        ))
        .node(acceval::model::build::node(
            "Sub",
            &["x", "one"],
            &["d"],
            vec![],
        ))
        .node(acceval::model::build::node("Log", &["d"], &["y"], vec![]))
        .output("y", acceval::model::onnx::DataType::FLOAT, &[1, 4]);
    let bad = w.dir.path().join("bad.onnx");
    std::fs::write(&bad, g.encode(17)).unwrap();
    let (code, out, err) = acceval(&[
        "accuracy",
        "--model",
        bad.to_str().unwrap(),
        "--reference",
        refdir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 1, "{err}");
    assert_valid("accuracy.schema.json", &out);
    let r: acceval::report::schema::accuracy::AccuracyReport = serde_json::from_str(&out).unwrap();
    assert!(r.mse.is_nan() && r.level.is_none());
}

#[test]
fn a_version_1_report_still_verifies_but_is_not_rendered() {
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v1");
    let (code, out, _) = acceval(&["verify", v1.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("acceval.report/1"), "{out}");
    assert!(
        out.contains("legacy integrity-only format") && out.contains("recomputed"),
        "{out}"
    );
    // Its verdict edited to COMPLIANT and report.json re-hashed into the manifest (a v1
    // manifest has no hash of its own): the verdict recomputed from the clauses catches it.
    let d = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&v1).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), d.path().join(e.file_name())).unwrap();
    }
    let mut r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(r["verdict"], "NOT COMPLIANT");
    r["verdict"] = "COMPLIANT".into();
    let bytes = serde_json::to_vec_pretty(&r).unwrap();
    std::fs::write(d.path().join("report.json"), &bytes).unwrap();
    let mpath = d.path().join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        if f["file"] == "report.json" {
            use sha2::Digest;
            f["bytes"] = bytes.len().into();
            f["sha256"] = format!("{:x}", sha2::Sha256::digest(&bytes)).into();
        }
    }
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let (code, out, _) = acceval(&["verify", d.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("says COMPLIANT but its clauses and stages give NOT COMPLIANT"),
        "{out}"
    );
    let (code, _, err) = acceval(&["report", v1.to_str().unwrap(), "--format", "md"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("acceval.report/1 report") && err.contains("renders acceval.report/2"),
        "{err}"
    );
}
