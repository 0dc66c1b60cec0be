//! The libtorch backend (cargo feature `tch`): TorchScript models made by torch itself (a
//! ResNet-18 and a 2-layer LSTM, `tests/py/tch_models.py`) run on `--backend tch` and give
//! torch's own outputs; their ONNX exports are checked against them on `cpu` and `ort:cpu` by
//! the conversion check. Without the feature, the backend says it is not compiled.
//!
//! Run with libtorch: `scripts/with-torch.sh cargo test --features tch --test tch` (CI does,
//! with ACCEVAL_REQUIRE_TCH=1); the models need a Python with torch and onnx
//! ($ACCEVAL_TORCH_PYTHON).

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

fn acceval(args: &[&str]) -> std::process::Output {
    common::command().args(args).output().expect("run acceval")
}

fn text(o: &std::process::Output) -> String {
    format!(
        "exit {:?}\n{}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The models torch made, or why there are none (a visible skip).
fn models() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = DIR.get_or_init(|| {
        if !cfg!(feature = "tch") {
            return Err("acceval built without the tch feature (scripts/with-torch.sh cargo test --features tch --test tch)".into());
        }
        let py = std::env::var("ACCEVAL_TORCH_PYTHON").unwrap_or_else(|_| "python3".into());
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tch-models");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/tch_models.py");
        let out = std::process::Command::new(&py)
            .arg(&script)
            .arg(&dir)
            .output()
            .map_err(|e| format!("no python with torch and onnx ({py}: {e}); set ACCEVAL_TORCH_PYTHON"))?;
        if !out.status.success() {
            return Err(format!(
                "no python with torch and onnx (pip install torch onnx, then set ACCEVAL_TORCH_PYTHON; tried '{py}': {})",
                String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
            ));
        }
        Ok(dir)
    });
    match r {
        Ok(d) => Some(d),
        Err(why) => {
            common::skip("ACCEVAL_REQUIRE_TCH", why);
            None
        }
    }
}

/// The arrays of an .npz as f64.
fn npz(path: &Path, name: &str) -> Vec<f64> {
    let mut r = ndarray_npy::NpzReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let a: ndarray::ArrayD<f32> = r.by_name(name).unwrap();
    a.iter().map(|&v| v as f64).collect()
}

fn npy(path: &Path) -> Vec<f64> {
    let a: ndarray::ArrayD<f32> = ndarray_npy::read_npy(path).unwrap();
    a.iter().map(|&v| v as f64).collect()
}

fn rel_l2(x: &[f64], y: &[f64]) -> f64 {
    let num: f64 = x.iter().zip(y).map(|(a, b)| (a - b).powi(2)).sum();
    let den: f64 = y.iter().map(|b| b * b).sum();
    (num / den).sqrt()
}

/// `acceval run --backend tch --model DIR/NAME.pt EXTRA...`.
fn run_tch(dir: &Path, name: &str, extra: &[&str]) -> std::process::Output {
    let model = dir.join(format!("{name}.pt"));
    let mut args = vec![
        "run",
        "--backend",
        "tch",
        "--model",
        model.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    acceval(&args)
}

/// libtorch's load runs under `--load-timeout` like tract's and ONNX Runtime's: past it the
/// run ends with exit 2 naming the stage, and does not hang or die by a signal.
#[test]
fn a_tch_load_past_its_budget_ends_naming_the_stage() {
    let Some(dir) = models() else { return };
    let t = std::time::Instant::now();
    let o = run_tch(dir, "resnet18", &["--load-timeout", "0.001", "--runs", "1"]);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(2), "{all}");
    assert!(
        all.contains("libtorch's TorchScript load")
            && all.contains("within 0.001 s (--load-timeout"),
        "{all}"
    );
    assert!(t.elapsed().as_secs_f64() < 30.0, "{all}");
    // With its default budget the same file loads.
    let input = format!("image={}", dir.join("resnet18-input.npy").display());
    let o = run_tch(dir, "resnet18", &["--input", &input, "--runs", "1"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn torchscript_models_give_torchs_own_outputs_on_tch() {
    let Some(dir) = models() else { return };
    for (name, input) in [("resnet18", "image"), ("lstm", "series")] {
        let out = dir.join(format!("{name}-tch.npz"));
        let arg = format!(
            "{input}={}",
            dir.join(format!("{name}-input.npy")).display()
        );
        let o = run_tch(
            dir,
            name,
            &[
                "--input",
                &arg,
                "--output",
                out.to_str().unwrap(),
                "--runs",
                "3",
                "--json",
            ],
        );
        assert!(o.status.success(), "{name}: {}", text(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            r["session"]["engine"]
                .as_str()
                .unwrap()
                .starts_with("libtorch 2.13.0")
        );
        // Inputs named after forward's argument, read from the archive.
        assert_eq!(r["session"]["options"]["inputs"], input, "{name}");
        assert_eq!(r["inputs"][0]["name"], input);
        let torch = npy(&dir.join(format!("{name}-output.npy")));
        let got = npz(&out, "output_0");
        assert_eq!(got.len(), torch.len(), "{name}");
        let e = rel_l2(&got, &torch);
        assert!(e <= 1e-5, "{name}: rel L2 {e} against torch's own outputs");
        assert!(
            torch.iter().any(|v| *v != torch[0]),
            "{name}: a constant output proves nothing"
        );
    }
    // inspect: Table 1 from the module's parameters (ResNet-18: 11,689,512), no FLOPs.
    let o = acceval(&[
        "inspect",
        dir.join("resnet18.pt").to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["parameters"], 11_689_512, "{r}");
    assert_eq!(r["parameter_bytes"], 4 * 11_689_512u64);
    assert_eq!(r["size_level"], "C3");
    assert_eq!(r["inputs"][0], "image");
    assert!(r["flops"].as_str().unwrap().starts_with("n/a"));
    // TorchScript declares no shapes: a generated input needs --shape.
    let o = acceval(&[
        "run",
        "--backend",
        "tch",
        "--model",
        dir.join("lstm.pt").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--shape series:"),
        "{}",
        text(&o)
    );
    let o = acceval(&[
        "run",
        "--backend",
        "tch",
        "--model",
        dir.join("lstm.pt").to_str().unwrap(),
        "--shape",
        "series:2x96x8",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // bench: model only, at the shape given.
    let o = acceval(&[
        "bench",
        "--backend",
        "tch",
        "--model",
        dir.join("lstm.pt").to_str().unwrap(),
        "--shape",
        "series:1x96x8",
        "--runs",
        "10",
        "--duration",
        "0",
        "--json",
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let b: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(b["complete"], true);
    assert_eq!(b["latency_ms"]["n"], 10, "{}", b["latency_ms"]);
    // A format each engine cannot take names the one that can.
    let o = acceval(&[
        "run",
        "--backend",
        "tch",
        "--model",
        dir.join("lstm.onnx").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("ort:cpu"),
        "{}",
        text(&o)
    );
    let o = acceval(&[
        "run",
        "--backend",
        "cpu",
        "--model",
        dir.join("lstm.pt").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--backend tch"),
        "{}",
        text(&o)
    );
}

#[test]
fn the_onnx_exports_pass_the_conversion_check() {
    let Some(dir) = models() else { return };
    for (name, task) in [("resnet18", Some("classification")), ("lstm", None)] {
        let mut args = vec![
            "accuracy".to_string(),
            "--backend".into(),
            "tch".into(),
            "--model".into(),
            dir.join(format!("{name}.pt")).display().to_string(),
            "--against".into(),
            dir.join(format!("{name}.onnx")).display().to_string(),
            "--against-backend".into(),
            "cpu".into(),
            "--sets".into(),
            "3".into(),
            "--require".into(),
            "C4".into(),
            "--json".into(),
        ];
        if common::ort_available() {
            args.extend(["--against-backend".into(), "ort:cpu".into()]);
        }
        if let Some(t) = task {
            args.extend(["--task".into(), t.into()]);
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = acceval(&a);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["schema"], "acceval.conversion/1");
        assert_eq!(r["input_sets"], 3);
        for e in r["engines"].as_array().unwrap() {
            let mse = e["mse"].as_f64().unwrap();
            assert!(
                mse < 1e-6,
                "{name} on {}: MSE {mse}",
                e["session"]["backend"]
            );
            assert_eq!(e["level"], "C4");
            assert_eq!(e["verdict"], "PASS");
            if task.is_some() {
                assert_eq!(e["top1_agreement"], 1.0, "{e}");
            }
        }
    }
    // A conversion that changed the model (every output shifted by 1) fails C4, exit 1.
    let o = acceval(&[
        "accuracy",
        "--backend",
        "tch",
        "--model",
        dir.join("lstm.pt").to_str().unwrap(),
        "--against",
        dir.join("lstm-altered.onnx").to_str().unwrap(),
        "--against-backend",
        "cpu",
        "--sets",
        "2",
        "--require",
        "C4",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mse = r["engines"][0]["mse"].as_f64().unwrap();
    assert!((mse - 1.0).abs() < 1e-4, "shifted by 1: MSE {mse}");
    assert_eq!(r["engines"][0]["verdict"], "FAIL");
}

/// A `train` run's JSON report (validated against the committed schema) and its mllog keys.
fn train(args: &[&str]) -> (std::process::Output, Value, Vec<String>) {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("train.json");
    let mut all = vec!["train", "--export-json", json.to_str().unwrap()];
    all.extend(args);
    let o = acceval(&all);
    let v: Value = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    if !v.is_null() {
        common::assert_schema_valid("train.schema.json", &v);
    }
    let keys = std::fs::read_to_string(json.with_extension("mllog"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix(":::MLLOG "))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| e["key"].as_str().map(str::to_string))
        .collect();
    (o, v, keys)
}

fn epoch_losses(v: &Value) -> Vec<f64> {
    v["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["loss"].as_f64().unwrap())
        .collect()
}

/// `train --backend tch`: every built-in workload on libtorch from the same seeded weights,
/// batches and order as on candle. The loss of the first step (one step per epoch) agrees
/// with candle's to 1e-4 (1e-3 for YOLOv8's loss over every anchor; an LSTM gate order, a
/// layout or a loss-term slip would be far off), the
/// following epochs stay within 2 %, and the report has the same figures and the mllog the
/// same events.
#[test]
fn tch_trains_the_workloads_from_candles_start_to_candles_losses() {
    if !cfg!(feature = "tch") {
        common::skip(
            "ACCEVAL_REQUIRE_TCH",
            "acceval built without the tch feature (scripts/with-torch.sh cargo test --features tch --test tch)",
        );
        return;
    }
    let cases: [(&str, &[&str]); 3] = [
        (
            "lstm-load-forecast",
            &["--samples", "64", "--batch", "64", "--eval-samples", "24"],
        ),
        (
            "mobilenetv2-meter",
            &[
                "--samples",
                "16",
                "--batch",
                "16",
                "--eval-samples",
                "10",
                "--image-size",
                "32",
            ],
        ),
        (
            "yolov8n-line",
            &[
                "--samples",
                "2",
                "--batch",
                "2",
                "--eval-samples",
                "1",
                "--eval-every",
                "3",
                "--image-size",
                "64",
            ],
        ),
    ];
    for (workload, extra) in cases {
        let mut runs = Vec::new();
        for backend in ["candle", "tch"] {
            let mut args = vec![
                "--workload",
                workload,
                "--backend",
                backend,
                "--epochs",
                "3",
                "--warmup-steps",
                "0",
                "--threads",
                "1",
            ];
            args.extend(extra);
            let (o, v, keys) = train(&args);
            assert!(o.status.success(), "{workload} on {backend}: {}", text(&o));
            assert_eq!(v["complete"], true);
            assert_eq!(v["steps"], 3, "{workload} on {backend}");
            assert_eq!(v["step_ms"]["n"], 3);
            assert!(v["step_ms"]["p50"].as_f64().unwrap() > 0.0);
            assert!(
                v["throughput_samples_per_s"].as_f64().unwrap() > 0.0,
                "{}",
                v["throughput_samples_per_s"]
            );
            for k in ["run_start", "epoch_stop", "eval_accuracy", "run_stop"] {
                assert!(keys.iter().any(|x| x == k), "{backend}: mllog lacks {k}");
            }
            runs.push(v);
        }
        let (c, t) = (&runs[0], &runs[1]);
        assert!(
            t["framework"]
                .as_str()
                .unwrap()
                .starts_with("libtorch 2.13.0"),
            "{}",
            t["framework"]
        );
        assert!(c["framework"].as_str().unwrap().starts_with("candle"));
        let (lc, lt) = (epoch_losses(c), epoch_losses(t));
        let rel = |a: f64, b: f64| (a - b).abs() / a.abs().max(1e-12);
        // YOLOv8's loss sums over every anchor of three levels: 8e-5 apart in release here.
        let first = if workload == "yolov8n-line" {
            1e-3
        } else {
            1e-4
        };
        assert!(
            rel(lc[0], lt[0]) < first,
            "{workload}: first-step loss candle {} vs libtorch {}",
            lc[0],
            lt[0]
        );
        for (a, b) in lc.iter().zip(&lt) {
            assert!(rel(*a, *b) < 2e-2, "{workload}: losses {lc:?} vs {lt:?}");
        }
        // The held-out figure of each engine's weights, on one evaluation code.
        assert_eq!(c["held_out"]["metric"], t["held_out"]["metric"]);
        assert!(t["held_out"]["value"].as_f64().unwrap().is_finite());
    }
}

/// Built without the feature, `train --backend tch` says which feature and script it needs.
#[test]
fn training_on_tch_without_the_feature_says_how_to_build_it() {
    if cfg!(feature = "tch") {
        return;
    }
    let o = acceval(&[
        "train",
        "--workload",
        "lstm-load-forecast",
        "--backend",
        "tch",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("not compiled (cargo feature tch)") && t.contains("scripts/with-torch.sh"),
        "{t}"
    );
}
