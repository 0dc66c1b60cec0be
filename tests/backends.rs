//! Backends end to end through the real binary: `run` on tract (`cpu`) and ONNX Runtime
//! (`ort:cpu`), their agreement with each other and with Python onnxruntime, input checks,
//! provider errors, and `devices`.
//!
//! ONNX Runtime is found as acceval finds it (ORT_DYLIB_PATH, the Python package of
//! $ACCEVAL_PYTHON / python3, the system path). Without it the ORT checks print SKIPPED,
//! unless ACCEVAL_REQUIRE_ORT=1 (set by .ci/run), which turns the skip into a failure.

mod common;

use std::path::{Path, PathBuf};

use acceval::data::io;
use acceval::model::build::{Attr, GraphBuilder, attr, node, tensor_f32};
use acceval::model::onnx::DataType;
use acceval::model::tensor::{HostTensor, TensorData};
use common::*;

const F: DataType = DataType::FLOAT;

fn conv_gemm() -> GraphBuilder {
    GraphBuilder::new("conv_gemm")
        .input("x", F, &[1, 3, 16, 16])
        .init(tensor_f32("w", &[8, 3, 3, 3], 1))
        .init(tensor_f32("b", &[8], 2))
        .init(tensor_f32("fc", &[10, 2048], 3))
        .init(tensor_f32("fcb", &[10], 4))
        .node(node(
            "Conv",
            &["x", "w", "b"],
            &["c"],
            vec![attr("pads", Attr::Ints(vec![1, 1, 1, 1]))],
        ))
        .node(node("Relu", &["c"], &["r"], vec![]))
        .node(node("Flatten", &["r"], &["f"], vec![]))
        .node(node(
            "Gemm",
            &["f", "fc", "fcb"],
            &["y"],
            vec![attr("transB", Attr::Int(1))],
        ))
        .output("y", F, &[1, 10])
}

fn lstm() -> GraphBuilder {
    GraphBuilder::new("lstm")
        .input("x", F, &[5, 2, 8])
        .init(tensor_f32("w", &[1, 64, 8], 1))
        .init(tensor_f32("r", &[1, 64, 16], 2))
        .init(tensor_f32("b", &[1, 128], 3))
        .node(node(
            "LSTM",
            &["x", "w", "r", "b"],
            &["y", "yh"],
            vec![attr("hidden_size", Attr::Int(16))],
        ))
        .output("y", F, &[5, 1, 2, 16])
        .output("yh", F, &[1, 2, 16])
}

fn attention() -> GraphBuilder {
    // softmax(Q·Kᵀ / sqrt(8))·V, the way exporters write scaled dot-product attention.
    GraphBuilder::new("attention")
        .input("q", F, &[2, 4, 8])
        .input("k", F, &[2, 6, 8])
        .input("v", F, &[2, 6, 8])
        .init(acceval::model::build::tensor_raw(
            "scale",
            F,
            &[],
            (1.0f32 / 8f32.sqrt()).to_le_bytes().to_vec(),
        ))
        .node(node(
            "Transpose",
            &["k"],
            &["kt"],
            vec![attr("perm", Attr::Ints(vec![0, 2, 1]))],
        ))
        .node(node("MatMul", &["q", "kt"], &["s"], vec![]))
        .node(node("Mul", &["s", "scale"], &["ss"], vec![]))
        .node(node(
            "Softmax",
            &["ss"],
            &["p"],
            vec![attr("axis", Attr::Int(-1))],
        ))
        .node(node("MatMul", &["p", "v"], &["y"], vec![]))
        .output("y", F, &[2, 4, 8])
}

fn seeded_inputs(g: &GraphBuilder, seed: u64) -> Vec<HostTensor> {
    g.graph
        .input
        .iter()
        .enumerate()
        .map(|(k, i)| {
            let dims: Vec<usize> = i
                .tensor_type()
                .unwrap()
                .shape
                .as_ref()
                .unwrap()
                .dim
                .iter()
                .map(|d| d.dim_value.unwrap() as usize)
                .collect();
            HostTensor {
                name: i.name.clone(),
                data: TensorData::seeded(F, &dims, seed + k as u64).unwrap(),
            }
        })
        .collect()
}

/// Runs `model` on `backend` with the inputs in `inputs.npz`; returns the outputs file.
fn run_to_npz(dir: &Path, model: &Path, backend: &str, inputs: &Path) -> PathBuf {
    let out = dir.join(format!("out_{}.npz", backend.replace(':', "_")));
    let (code, stdout, stderr) = acceval(&[
        "run",
        "--backend",
        backend,
        "--model",
        model.to_str().unwrap(),
        "--input",
        inputs.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--runs",
        "3",
        "--json",
    ]);
    assert_eq!(code, 0, "{backend}: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["schema"], "acceval.run/1");
    assert!(v["timings"]["init_ms"].as_f64().unwrap() > 0.0);
    assert!(v["timings"]["first_inference_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(v["timings"]["steady_ms"]["n"], 3);
    out
}

/// Max |a − b| / max(|b|, 1e-6) over all outputs (relative to the reference's scale).
fn max_rel_diff(a: &Path, b: &Path) -> f64 {
    let names = io::npz_names(b).unwrap();
    assert_eq!(io::npz_names(a).unwrap(), names);
    let mut worst = 0.0f64;
    for n in &names {
        let x = io::read_npz(a, n).unwrap().to_f64();
        let y = io::read_npz(b, n).unwrap().to_f64();
        assert_eq!(x.len(), y.len());
        let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-6);
        for (p, q) in x.iter().zip(&y) {
            worst = worst.max((p - q).abs() / scale);
        }
    }
    worst
}

fn python_with_ort() -> Option<String> {
    python_with("onnxruntime, numpy", "pip install onnxruntime numpy")
}

#[test]
fn cpu_and_ort_cpu_agree_with_each_other_and_with_python_onnxruntime() {
    let models = [
        ("conv_gemm", conv_gemm()),
        ("lstm", lstm()),
        ("attention", attention()),
    ];
    let have_ort = ort_available();
    for (name, g) in models {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join(format!("{name}.onnx"));
        std::fs::write(&model, g.clone().encode(17)).unwrap();
        let inputs = dir.path().join("inputs.npz");
        io::write_npz(&inputs, &seeded_inputs(&g, 11)).unwrap();
        let cpu = run_to_npz(dir.path(), &model, "cpu", &inputs);
        if !have_ort {
            continue;
        }
        let ort = run_to_npz(dir.path(), &model, "ort:cpu", &inputs);
        let d = max_rel_diff(&cpu, &ort);
        eprintln!("{name}: cpu vs ort:cpu max relative diff {d:.3e}");
        assert!(
            d <= 1e-4,
            "{name}: cpu and ort:cpu differ by {d:.3e} (relative)"
        );

        // The same inputs through Python onnxruntime: acceval's ort:cpu must match it.
        let Some(py) = python_with_ort() else {
            continue;
        };
        let script = r#"
import sys, numpy as np, onnxruntime as ort
model, inputs, got = sys.argv[1:4]
s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
feeds = dict(np.load(inputs))
ref = s.run(None, feeds)
out = np.load(got)
worst = 0.0
for o, r in zip(s.get_outputs(), ref):
    worst = max(worst, float(np.max(np.abs(out[o.name] - r)) / max(float(np.max(np.abs(r))), 1e-6)))
print(worst)
"#;
        let o = std::process::Command::new(&py)
            .args([
                "-c",
                script,
                model.to_str().unwrap(),
                inputs.to_str().unwrap(),
            ])
            .arg(&ort)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let d: f64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
        eprintln!("{name}: ort:cpu vs Python onnxruntime max relative diff {d:.3e}");
        assert!(
            d <= 1e-6,
            "{name}: acceval ort:cpu differs from Python onnxruntime by {d:.3e}"
        );
    }
}

#[test]
fn ort_cuda_on_a_machine_without_it_is_a_clear_error() {
    let w = write(conv_gemm(), 17);
    let (code, stdout, stderr) = acceval(&[
        "run",
        "--backend",
        "ort:cuda",
        "--model",
        w.path.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("backend 'ort:cuda' is not available"),
        "{stderr}"
    );
    if ort_available() {
        assert!(
            stderr.contains("CUDAExecutionProvider is not compiled into ONNX Runtime")
                && stderr.contains("onnxruntime-gpu"),
            "{stderr}"
        );
    }
    // tract's CUDA runtime: no driver here, so it says so.
    let (code, _, stderr) = acceval(&[
        "run",
        "--backend",
        "cuda",
        "--model",
        w.path.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("libcuda"), "{stderr}");
}

#[test]
fn run_checks_inputs_against_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.onnx");
    std::fs::write(&model, conv_gemm().encode(17)).unwrap();
    let m = model.to_str().unwrap();
    let npy = |name: &str, data: TensorData| {
        let p = dir.path().join(name);
        io::write_npz(
            &p,
            &[HostTensor {
                name: "x".into(),
                data,
            }],
        )
        .unwrap();
        p
    };
    // Wrong shape.
    let p = npy(
        "wrong_shape.npz",
        TensorData::seeded(F, &[1, 3, 8, 8], 1).unwrap(),
    );
    let (code, _, e) = acceval(&[
        "run",
        "--model",
        m,
        "--input",
        &format!("x={}", p.display()),
    ]);
    assert_eq!(code, 2);
    assert!(
        e.contains("input 'x'") && e.contains("1x3x16x16") && e.contains("1x3x8x8"),
        "{e}"
    );
    // Wrong element type.
    let p = npy(
        "wrong_type.npz",
        TensorData::seeded(DataType::DOUBLE, &[1, 3, 16, 16], 1).unwrap(),
    );
    let (code, _, e) = acceval(&[
        "run",
        "--model",
        m,
        "--input",
        &format!("x={}", p.display()),
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("expects FP32") && e.contains("FP64"), "{e}");
    // Unknown input name.
    let (code, _, e) = acceval(&["run", "--model", m, "--input", "images=/tmp/none.npy"]);
    assert_eq!(code, 2);
    assert!(
        e.contains("no input 'images'") && e.contains("its inputs are x"),
        "{e}"
    );
    // Missing file.
    let (code, _, e) = acceval(&["run", "--model", m, "--input", "x=/nonexistent/x.npy"]);
    assert_eq!(code, 2);
    assert!(e.contains("/nonexistent/x.npy"), "{e}");
    // Dynamic dims need a shape.
    let dynm = dir.path().join("dyn.onnx");
    let g = GraphBuilder::new("g")
        .input("x", F, &[-1, 4])
        .node(node("Relu", &["x"], &["y"], vec![]))
        .output("y", F, &[]);
    std::fs::write(&dynm, g.encode(17)).unwrap();
    let (code, _, e) = acceval(&["run", "--model", dynm.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(e.contains("--shape x:"), "{e}");
    let (code, out, e) = acceval(&[
        "run",
        "--model",
        dynm.to_str().unwrap(),
        "--shape",
        "x:3x4",
        "--json",
    ]);
    assert_eq!(code, 0, "{e}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outputs"][0]["shape"], serde_json::json!([3, 4]));
    // Relu of uniform [0,1) inputs: all outputs in [0,1).
    assert!(v["outputs"][0]["max"].as_f64().unwrap() < 1.0);
    assert_eq!(v["outputs"][0]["nan_count"], 0);
}

#[test]
fn run_reports_nan_outputs() {
    // Log of the generated inputs minus 2 → log of negatives → NaN everywhere.
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 4])
        .init(acceval::model::build::tensor_raw(
            "two",
            F,
            &[],
            2f32.to_le_bytes().to_vec(),
        ))
        .node(node("Sub", &["x", "two"], &["d"], vec![]))
        .node(node("Log", &["d"], &["y"], vec![]))
        .output("y", F, &[1, 4]);
    let w = write(g, 17);
    let (code, out, e) = acceval(&["run", "--model", w.path.to_str().unwrap(), "--json"]);
    // Non-finite outputs fail the run (exit 1), after the report is printed.
    assert_eq!(code, 1, "{e}");
    assert!(e.contains("'y' (4 NaN, 0 Inf)"), "{e}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outputs"][0]["nan_count"], 4);
    assert!(v["outputs"][0]["min"].is_null());
}

#[test]
fn placement_on_cpu_lists_every_node() {
    let w = write(conv_gemm(), 17);
    let (code, out, e) = acceval(&[
        "run",
        "--model",
        w.path.to_str().unwrap(),
        "--placement",
        "--json",
    ]);
    assert_eq!(code, 0, "{e}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["placement"]["nodes_by_device"]["CPU"], 4);
    if ort_available() {
        let (code, out, e) = acceval(&[
            "run",
            "--backend",
            "ort:cpu",
            "--model",
            w.path.to_str().unwrap(),
            "--placement",
            "--json",
        ]);
        assert_eq!(code, 0, "{e}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        // ONNX Runtime fuses Conv+Relu: fewer kernels than ONNX nodes, all on the CPU.
        let n = v["placement"]["nodes_by_device"]["CPU"].as_u64().unwrap();
        assert!((1..=4).contains(&n), "{v}");
        assert_eq!(v["session"]["options"]["provider"], "CPUExecutionProvider");
    }
}

#[test]
fn devices_identifies_this_machine() {
    let (code, out, e) = acceval(&["devices", "--json"]);
    assert_eq!(code, 0, "{e}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["host"]["arch"], std::env::consts::ARCH);
    assert!(v["host"]["logical_cpus"].as_u64().unwrap() >= 1);
    assert!(v["host"]["memory_bytes"].as_u64().unwrap() > 0);
    let backends = v["backends"].as_array().unwrap();
    let names: Vec<&str> = backends
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cpu", "ort", "cuda", "acl", "tch", "mock"]);
    assert_eq!(backends[0]["availability"]["status"], "available");
    assert_eq!(backends[3]["availability"]["status"], "not_available");
    // Compiled out, tch says which feature it needs.
    if !cfg!(feature = "tch") {
        let why = backends[4]["availability"]["reason"].as_str().unwrap();
        assert!(why.contains("cargo feature tch"), "{why}");
    }
    // No GPU here: NVML says why instead of listing nothing.
    if v["nvidia"]["gpus"].as_array().unwrap().is_empty() {
        assert!(
            v["nvidia"]["not_available"]
                .as_str()
                .unwrap()
                .contains("libnvidia-ml")
        );
        assert_eq!(backends[2]["availability"]["status"], "not_available");
    }
    let (code, text, _) = acceval(&["devices"]);
    assert_eq!(code, 0);
    assert!(text.contains("NVIDIA GPUs (NVML)") && text.contains("Backends (--backend)"));
}

#[test]
fn inputs_from_folders_archives_and_test_data_sets() {
    use prost::Message;
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.onnx");
    let g = GraphBuilder::new("g")
        .input("a", F, &[2, 3])
        .input("b", F, &[2, 3])
        .node(node("Add", &["a", "b"], &["y"], vec![]))
        .output("y", F, &[2, 3]);
    std::fs::write(&model, g.encode(17)).unwrap();
    let m = model.to_str().unwrap();
    let sum_of = |out: &str| -> f64 {
        let v: serde_json::Value = serde_json::from_str(out).unwrap();
        v["outputs"][0]["mean"].as_f64().unwrap()
    };
    // An ONNX test_data_set folder: input_0.pb is a = 1, input_1.pb is b = 2 → mean 3.
    let set = dir.path().join("case").join("test_data_set_0");
    std::fs::create_dir_all(&set).unwrap();
    for (k, (name, v)) in [("a", 1f32), ("b", 2f32)].iter().enumerate() {
        let t = acceval::model::build::tensor_raw(name, F, &[2, 3], v.to_le_bytes().repeat(6));
        std::fs::write(set.join(format!("input_{k}.pb")), t.encode_to_vec()).unwrap();
    }
    let case = dir.path().join("case");
    let (code, out, e) = acceval(&[
        "run",
        "--model",
        m,
        "--inputs",
        case.to_str().unwrap(),
        "--runs",
        "0",
        "--json",
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(sum_of(&out), 3.0);
    // A folder of NAME.npy files.
    let npys = dir.path().join("npys");
    std::fs::create_dir_all(&npys).unwrap();
    for (name, v) in [("a", 5f32), ("b", 6f32)] {
        let arr = ndarray::ArrayD::from_elem(vec![2, 3], v);
        ndarray_npy::WriteNpyExt::write_npy(
            &arr,
            std::fs::File::create(npys.join(format!("{name}.npy"))).unwrap(),
        )
        .unwrap();
    }
    let (code, out, e) = acceval(&[
        "run",
        "--model",
        m,
        "--inputs",
        npys.to_str().unwrap(),
        "--runs",
        "0",
        "--json",
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(sum_of(&out), 11.0);
    // An .npz archive.
    let npz = dir.path().join("in.npz");
    io::write_npz(
        &npz,
        &[
            HostTensor {
                name: "a".into(),
                data: TensorData::F32(ndarray::ArrayD::from_elem(vec![2, 3], 0.5)),
            },
            HostTensor {
                name: "b".into(),
                data: TensorData::F32(ndarray::ArrayD::from_elem(vec![2, 3], 0.25)),
            },
        ],
    )
    .unwrap();
    let (code, out, e) = acceval(&[
        "run",
        "--model",
        m,
        "--inputs",
        npz.to_str().unwrap(),
        "--runs",
        "0",
        "--json",
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(sum_of(&out), 0.75);
    // A folder with none of these is an error naming what it looked for.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, _, e) = acceval(&["run", "--model", m, "--inputs", empty.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        e.contains("no images, no test_data_set") && e.contains("a.npy, b.npy"),
        "{e}"
    );
}
