//! The real binary on real files: output views, exit codes, and every kind of bad input
//! (exit code 2, one line naming the file or input and what to do, never a panic).

mod common;

use acceval::model::build::{GraphBuilder, node, tensor_external, tensor_f32};
use acceval::model::onnx::DataType;
use common::*;

const F: DataType = DataType::FLOAT;
const DEMO: &str = "models/squeezenet1_1.onnx";

fn small_conv(dims: &[i64]) -> GraphBuilder {
    GraphBuilder::new("g")
        .input("x", F, dims)
        .init(tensor_f32("w", &[4, 3, 3, 3], 1))
        .node(node("Conv", &["x", "w"], &["y"], vec![]))
        .output("y", F, &[])
}

/// Runs `acceval ARGS`, expects exit code 2 and a one-line error; returns stderr.
fn expect_error(args: &[&str]) -> String {
    let out = bin().args(args).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "args {args:?}: stderr {stderr}");
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    assert!(!stderr.contains("stack backtrace"), "{stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr}"
    );
    assert!(stderr.starts_with("acceval: error: "), "{stderr}");
    assert!(out.stdout.is_empty(), "stdout on error: {:?}", out.stdout);
    stderr
}

#[test]
fn demo_model_json_has_documented_fields() {
    let out = bin().args(["inspect", DEMO, "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["schema"], "acceval.inspect/1");
    // squeezenet1_1 exported by scripts/export_demo_model.py: 1,233,288 FP32 parameters
    // (BatchNorm-free, as torchvision's 1,235,496 minus the classifier bias merge...
    // counted from the file by onnx in scripts/torchvision_check.py) and 349,151,936 MACs
    // (torch's FlopCounter on the same model gives the same number).
    assert_eq!(v["params"]["count"], 1_233_288);
    assert_eq!(v["params"]["bytes"], 4 * 1_233_288);
    assert_eq!(v["macs"], 349_151_936u64);
    assert_eq!(v["flops"], 698_303_872u64);
    assert_eq!(v["levels"]["params"], "C4");
    assert_eq!(v["levels"]["flops"], "C4");
    assert_eq!(v["lower_bound"], false);
    assert_eq!(v["unsupported_ops"].as_array().map(|a| a.len()), Some(0));
    assert_eq!(v["inputs"][0]["name"], "input");
    assert_eq!(v["inputs"][0]["shape"], serde_json::json!([1, 3, 224, 224]));
    assert_eq!(
        v["outputs"][0]["resolved_shape"],
        serde_json::json!([1, 1000])
    );
    assert_eq!(v["op_histogram"]["Conv"], 26);
    assert_eq!(v["model"]["ir_version"], 8);
    assert_eq!(v["model"]["opsets"][0]["version"], 17);
}

#[test]
fn demo_model_tables_and_per_op() {
    let out = bin()
        .args(["inspect", DEMO, "--per-op", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "Table 1 — parameter size",
        "4.933 MB",
        "Table 2 — compute",
        "0.698 GFLOPs",
        "349,151,936",
        "Top 5 of",
        "Conv 26",
    ] {
        assert!(s.contains(needle), "missing {needle:?} in:\n{s}");
    }
    // The per-op table lists 5 nodes, largest first.
    let rows: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.starts_with("Top 5"))
        .filter(|l| l.starts_with("| /") || l.starts_with("| features") || l.contains("| Conv"))
        .collect();
    assert_eq!(rows.len(), 5, "{s}");
}

#[test]
fn dynamic_input_is_named_not_guessed() {
    let w = write(small_conv(&[-1, 3, -1, -1]), 17);
    let p = w.path.to_str().unwrap();
    let out = bin().args(["inspect", p, "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["macs"].is_null());
    assert!(v["levels"]["flops"].is_null());
    let why = v["macs_unavailable"].as_str().unwrap();
    assert!(
        why.contains("input 'x'") && why.contains("give its shape as x:") && !why.contains("--"),
        "{why}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("as x:") && err.contains("--input NAME:SHAPE"),
        "{err}"
    );
    // Table view says n/a with the reason, never 0.
    let out = bin().args(["inspect", p]).output().unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("n/a: input 'x'"), "{s}");
    // Given a shape: 2·4·6·6 × 27 = 7,776 MACs.
    let out = bin()
        .args(["inspect", p, "--json", "--input", "x:2x3x8x8"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["macs"], 7_776);
}

#[test]
fn missing_file() {
    let e = expect_error(&["inspect", "/nonexistent/model.onnx"]);
    assert!(
        e.contains("/nonexistent/model.onnx") && e.contains("check the path"),
        "{e}"
    );
}

#[test]
fn not_onnx() {
    let w = write_bytes("notes.onnx", b"this is a text file, not a model\n");
    let e = expect_error(&["inspect", w.path.to_str().unwrap()]);
    assert!(e.contains("notes.onnx") && e.contains("not"), "{e}");
}

#[test]
fn empty_file() {
    let w = write_bytes("empty.onnx", b"");
    let e = expect_error(&["inspect", w.path.to_str().unwrap()]);
    assert!(e.contains("empty.onnx") && e.contains("empty"), "{e}");
}

#[test]
fn truncated_model() {
    let bytes = std::fs::read(DEMO).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 3, 100] {
        let w = write_bytes("cut.onnx", &bytes[..cut]);
        let e = expect_error(&["inspect", w.path.to_str().unwrap()]);
        assert!(e.contains("cut.onnx") && e.contains("truncated"), "{e}");
    }
}

#[test]
fn missing_external_data_file() {
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 64])
        .init(tensor_external(
            "w",
            F,
            &[64, 32],
            "big_weights.bin",
            0,
            8192,
        ))
        .node(node("MatMul", &["x", "w"], &["y"], vec![]))
        .output("y", F, &[]);
    let w = write(g, 17);
    let e = expect_error(&["inspect", w.path.to_str().unwrap()]);
    assert!(
        e.contains("big_weights.bin") && e.contains("beside the model"),
        "{e}"
    );
}

#[test]
fn input_shape_contradicting_declared_dims() {
    let w = write(small_conv(&[1, 3, 32, 32]), 17);
    let e = expect_error(&[
        "inspect",
        w.path.to_str().unwrap(),
        "--input",
        "x:1x3x64x64",
    ]);
    assert!(e.contains("x:1x3x64x64") && e.contains("1x3x32x32"), "{e}");
    let e = expect_error(&["inspect", w.path.to_str().unwrap(), "--input", "x:1x3x32"]);
    assert!(e.contains("contradicts"), "{e}");
}

#[test]
fn input_shape_contradicting_the_weights() {
    // Declared [N,C,H,W]; the conv weights need 3 channels, 5 are given.
    let w = write(small_conv(&[-1, -1, -1, -1]), 17);
    let e = expect_error(&[
        "inspect",
        w.path.to_str().unwrap(),
        "--input",
        "x:1x5x16x16",
    ]);
    assert!(e.contains("5 channels") && e.contains("--input"), "{e}");
}

#[test]
fn unknown_input_name() {
    let w = write(small_conv(&[1, 3, 8, 8]), 17);
    let e = expect_error(&[
        "inspect",
        w.path.to_str().unwrap(),
        "--input",
        "images:1x3x8x8",
    ]);
    assert!(e.contains("'images'") && e.contains("x (1x3x8x8)"), "{e}");
}

#[test]
fn malformed_input_flag() {
    // clap rejects it before anything runs; exit code 2 as well.
    let out = bin()
        .args(["inspect", DEMO, "--input", "input:1x3xabc"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("1x3xabc"), "{e}");
}

#[test]
fn broken_pipe_is_not_an_error() {
    use std::io::Read;
    use std::process::Stdio;
    // 3,000 nodes listed with --per-op: far more output than a pipe buffers (64 KiB).
    let mut g = GraphBuilder::new("g").input("x0", F, &[1, 8]);
    for i in 0..3000 {
        g = g.node(node(
            "Relu",
            &[&format!("x{i}")],
            &[&format!("x{}", i + 1)],
            vec![],
        ));
    }
    let w = write(g.output("x3000", F, &[]), 17);
    let mut child = common::command()
        .args(["inspect", w.path.to_str().unwrap(), "--per-op", "3000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // stdout is now closed; the process must not panic.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// Provenance comes from the build, not from the folder the binary sits in: a copy of the
/// binary in a temporary folder, run from `/`, names the commit it was built from, its
/// features and profile, exactly as `build.rs` captured them.
#[test]
fn version_of_a_copied_binary_names_the_commit_it_was_built_from() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("acceval");
    std::fs::copy(assert_cmd::cargo::cargo_bin("acceval"), &copy).unwrap();
    let out = std::process::Command::new(&copy)
        .arg("--version")
        .current_dir("/")
        .env("PATH", "/nonexistent") // no git to ask, even by accident
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.trim(),
        format!("acceval {}", acceval::util::build_info::VERSION)
    );
    let head = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success());
    if let Some(h) = head {
        let h = String::from_utf8_lossy(&h.stdout).trim().to_string();
        assert!(text.contains(&format!("commit {h}")), "{text} lacks {h}");
    }
    if cfg!(feature = "cuda") {
        assert!(text.contains("features cuda"), "{text}");
    }
}

/// One flag, one meaning: `--warmup` counts runs (bench, as hyperfine); the spellings that
/// meant seconds (qps) or requests (llm), qps's `--precision` (a share) and train's
/// `--device` are refused with the flag to use; grade takes the common output flags.
#[test]
fn each_flag_means_one_thing_and_old_spellings_say_what_to_use() {
    for (args, hint) in [
        (
            vec![
                "qps",
                "--url",
                "http://127.0.0.1:1",
                "--model",
                "m",
                "--warmup",
                "1",
            ],
            "--warmup-s",
        ),
        (
            vec![
                "qps",
                "--url",
                "http://127.0.0.1:1",
                "--model",
                "m",
                "--precision",
                "0.1",
            ],
            "--search-precision",
        ),
        (
            vec![
                "llm",
                "--url",
                "http://127.0.0.1:1",
                "--model",
                "m",
                "--warmup",
                "1",
            ],
            "--warmup-requests",
        ),
        (
            vec![
                "train",
                "--workload",
                "lstm-load-forecast",
                "--device",
                "cpu",
            ],
            "--backend candle",
        ),
    ] {
        let (code, _, err) = acceval(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: {err}");
    }
    // bench's --warmup is the documented alias of --warmup-runs (same unit: runs).
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        GraphBuilder::new("g")
            .input("x", F, &[1, 4])
            .node(node("Relu", &["x"], &["y"], vec![]))
            .output("y", F, &[1, 4]),
        17,
    );
    for flag in ["--warmup", "--warmup-runs"] {
        let (code, out, err) = acceval(&[
            "bench",
            "--model",
            m.path.to_str().unwrap(),
            flag,
            "3",
            "--runs",
            "5",
            "--duration",
            "0",
            "--allow-invalid",
            "--sample-ms",
            "0",
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["warmup_samples"], 3, "{flag}");
    }
    // grade's outputs are OutputArgs: --export-csv is accepted (the profile is refused first).
    let bad = dir.path().join("none.toml");
    let csv = dir.path().join("x.csv");
    let (code, _, err) = acceval(&[
        "grade",
        "--profile",
        bad.to_str().unwrap(),
        "--export-csv",
        csv.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("none.toml"), "{err}");
}
