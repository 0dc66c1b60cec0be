//! `acceval train` (§7.1): short runs of each built-in workload on the real candle trainer,
//! the figures checked against each other (throughput = samples / mean epoch time, one
//! utilization sample per second of epoch, step_ms.n == steps, total_s within the
//! process's wall time seen from here), the mllog events it writes, and a lab's own
//! training through `--exec` (a Python script printing :::MLLOG lines; the PyTorch one
//! when torch is installed).

mod common;

use std::path::Path;
use std::time::Instant;

use common::*;

fn run_train(args: &[&str]) -> (i32, serde_json::Value, String, f64) {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("train.json");
    let j = json.to_str().unwrap().to_string();
    // Before the arguments: everything after `--` is the lab's command.
    let mut all: Vec<&str> = vec!["train", "--export-json", &j];
    all.extend(args);
    let t = Instant::now();
    let out = bin().args(&all).output().unwrap();
    let wall = t.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    if !v.is_null() {
        // Every report validates against the committed schema.
        let schema = acceval::report::schema::schema_json("train.schema.json").unwrap();
        let errors: Vec<String> = jsonschema::validator_for(&schema)
            .unwrap()
            .iter_errors(&v)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }
    if json.with_extension("mllog").exists() {
        let log = std::fs::read_to_string(json.with_extension("mllog")).unwrap();
        let keys: Vec<String> = log
            .lines()
            .map(|l| {
                let e: serde_json::Value =
                    serde_json::from_str(l.strip_prefix(":::MLLOG ").unwrap()).unwrap();
                e["key"].as_str().unwrap().to_string()
            })
            .collect();
        for k in [
            "init_start",
            "run_start",
            "epoch_start",
            "epoch_stop",
            "eval_accuracy",
            "run_stop",
        ] {
            assert!(keys.iter().any(|x| x == k), "mllog lacks {k}: {keys:?}");
        }
    }
    (out.status.code().unwrap_or(-1), v, err, wall)
}

fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The checks every training report must pass.
fn check_consistent(v: &serde_json::Value, wall_s: f64, interval_s: f64) {
    let epochs = v["epochs"].as_array().unwrap();
    assert!(!epochs.is_empty(), "{v:#}");
    let n = epochs.len() as f64;
    let mean_t = epochs.iter().map(|e| num(&e["time_s"])).sum::<f64>() / n;
    let mean_s = epochs.iter().map(|e| num(&e["samples"])).sum::<f64>() / n;
    let thr = num(&v["throughput_samples_per_s"]);
    assert!(
        (thr - mean_s / mean_t).abs() <= 1e-6 * thr,
        "{thr} vs {}",
        mean_s / mean_t
    );
    for e in epochs {
        // One utilization sample per interval of epoch (the first may fall just outside).
        let t = num(&e["time_s"]);
        let k = e["utilization"]["n"].as_u64().unwrap() as f64;
        assert!(
            (k - t / interval_s).abs() <= 1.5,
            "{k} samples in a {t} s epoch"
        );
        assert!(e["energy_j"].as_str().unwrap().starts_with("n/a: "), "{e}");
    }
    assert_eq!(v["step_ms"]["n"], v["steps"]);
    for k in ["average", "min", "max", "p50", "p75", "p90", "p99"] {
        assert!(num(&v["step_ms"][k]) > 0.0, "{k}");
    }
    let total = num(&v["total_s"]);
    assert!(
        total > 0.0 && total <= wall_s,
        "total_s {total} outside the wall time {wall_s}"
    );
    let epoch_sum: f64 = epochs.iter().map(|e| num(&e["time_s"])).sum();
    assert!(
        total >= epoch_sum,
        "total_s {total} < the epochs' {epoch_sum}"
    );
    for k in ["energy_j", "efficiency_samples_per_j"] {
        assert!(v[k].as_str().unwrap().starts_with("n/a: "), "{k}: {}", v[k]);
    }
    for k in ["average", "peak"] {
        assert!(
            v["power_w"][k].as_str().unwrap().starts_with("n/a: "),
            "{k}"
        );
    }
}

/// The candle interpretation of a zoo graph computes what tract computes from its ONNX.
#[test]
fn the_trainers_graph_computes_what_tract_computes() {
    use acceval::model::tensor::{HostTensor, TensorData};
    use acceval::train::graph::Graph;
    use candle_core::{DType, Device, Tensor};
    use prost::Message;
    let (lstm, _) = acceval::zoo::parse_name("lstm-load-forecast").unwrap();
    let cases = [
        (
            acceval::zoo::build_graph(&lstm, acceval::model::onnx::DataType::FLOAT),
            "series",
            vec![1usize, 96, 8],
            "forecast",
        ),
        (
            acceval::train::detect::graph_at(64),
            "images",
            vec![1, 3, 64, 64],
            "output0",
        ),
        (
            acceval::train::classify::graph_at(64),
            "input",
            vec![1, 3, 64, 64],
            "logits",
        ),
    ];
    for (m, input, shape, output) in cases {
        let n: usize = shape.iter().product();
        let x: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
            .collect();
        let w = write_bytes("m.onnx", &m.encode_to_vec());
        let opts = acceval::backend::LoadOptions {
            input_shapes: vec![(input.to_string(), shape.clone())],
            ..Default::default()
        };
        let mut s = acceval::backend::load(&w.path, &"cpu".parse().unwrap(), &opts).unwrap();
        let arr = ndarray::ArrayD::from_shape_vec(shape.clone(), x.clone()).unwrap();
        let want = s
            .run(&[HostTensor {
                name: input.into(),
                data: TensorData::F32(arr),
            }])
            .unwrap();
        let want = want[0].data.to_f64();
        let g = Graph::new(&m, &Device::Cpu, DType::F32, None).unwrap();
        let t = Tensor::from_vec(x, shape.clone(), &Device::Cpu).unwrap();
        let got: Vec<f32> = g.forward(&[(input, t)], &[output]).unwrap()[0]
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert_eq!(got.len(), want.len(), "{output}");
        let scale = want.iter().fold(0f64, |a, v| a.max(v.abs())).max(1e-6);
        let err = got
            .iter()
            .zip(&want)
            .fold(0f64, |a, (g, w)| a.max((*g as f64 - w).abs()));
        assert!(
            err / scale < 1e-4,
            "{output}: max error {err} at scale {scale}"
        );
    }
}

#[test]
fn lstm_workload_reports_consistent_figures_and_beats_nothing_yet() {
    let (code, v, err, wall) = run_train(&[
        "--workload",
        "lstm-load-forecast",
        "--epochs",
        "2",
        "--samples",
        "256",
        "--eval-samples",
        "24",
        "--sample-ms",
        "250",
        "--target",
        "loss<=100",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["mode"], "builtin");
    assert_eq!(v["complete"], true);
    check_consistent(&v, wall, 0.25);
    assert_eq!(v["epochs"][0]["samples"], 256);
    // The loss target is met after the first epoch: time and epochs to target.
    assert_eq!(v["epochs_to_target"], 1.0);
    assert!(num(&v["time_to_target_s"]) > 0.0);
    assert_eq!(v["epochs"].as_array().unwrap().len(), 1);
    let h = &v["held_out"];
    assert_eq!(h["metric"], "mae_mw");
    assert!(num(&h["baseline_value"]) > 0.0 && num(&h["value"]) > 0.0);
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    let p: Vec<&str> = v["precisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"].as_str().unwrap())
        .collect();
    assert!(
        p.iter()
            .all(|s| s.starts_with("available: ") || s.starts_with("n/a: "))
    );
    assert!(p[1].starts_with("available: "), "fp32: {}", p[1]);
}

/// §7.1.6 b: `--peak-power` raises the batch after the training (b, 2b, 4b, ...) and says
/// why it stopped; with no power sensor here each step's power is n/a with the reason.
#[test]
fn peak_power_sweep_doubles_the_batch_and_says_why_it_stopped() {
    let (code, v, err, _) = run_train(&[
        "--workload",
        "lstm-load-forecast",
        "--epochs",
        "1",
        "--samples",
        "64",
        "--eval-samples",
        "8",
        "--batch",
        "8",
        "--peak-power",
    ]);
    assert_eq!(code, 0, "{err}");
    let sweep = v["peak_power_sweep"].as_array().unwrap();
    assert!(!sweep.is_empty(), "{v}");
    for (i, s) in sweep.iter().enumerate() {
        assert_eq!(s["batch"].as_u64().unwrap(), 8 << i);
        assert!(num(&s["samples_per_s"]) > 0.0);
        let p = &s["max_power_w"];
        assert!(
            p.is_number() || p.as_str().unwrap().starts_with("n/a: "),
            "{p}"
        );
    }
    let stop = v["peak_power_sweep_stop"].as_str().unwrap();
    assert!(
        stop.contains("throughput grew less than 5 %")
            || stop.contains("passed the training set")
            || stop.contains("16×"),
        "{stop}"
    );
}

#[test]
fn image_workloads_train_at_tiny_sizes() {
    let (code, v, err, wall) = run_train(&[
        "--workload",
        "mobilenetv2-meter",
        "--epochs",
        "1",
        "--samples",
        "16",
        "--eval-samples",
        "10",
        "--image-size",
        "32",
        "--batch",
        "8",
    ]);
    assert_eq!(code, 0, "{err}");
    check_consistent(&v, wall, 1.0);
    assert_eq!(v["held_out"]["metric"], "accuracy");
    assert_eq!(v["steps"], 1, "2 steps, 1 warm-up: {v:#}");
    let (code, v, err, wall) = run_train(&[
        "--workload",
        "yolov8n-line",
        "--epochs",
        "3",
        "--eval-every",
        "2",
        "--samples",
        "4",
        "--eval-samples",
        "1",
        "--image-size",
        "64",
        "--batch",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    check_consistent(&v, wall, 1.0);
    assert_eq!(v["held_out"]["metric"], "map50");
    assert!(v["step_ms"]["n"].as_u64().unwrap() >= 1);
    // --eval-every 2: epoch 2 and the last are evaluated, epoch 1 is not.
    let evaluated: Vec<bool> = v["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.get("eval").is_some_and(|x| !x.is_null()))
        .collect();
    assert_eq!(evaluated, [false, true, true], "{v:#}");
}

/// `yolov8s-line-hires` trains its Detect head alone: the saved weights are the head's 36
/// tensors (2,116,815 values, what ultralytics' Detect has for 5 classes), the held-out mAP
/// is of the whole 1280 model, and libtorch, which would train every weight, is refused.
#[test]
fn the_hires_detector_trains_and_saves_its_head_alone() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path().join("y8s.safetensors");
    let (code, v, err, wall) = run_train(&[
        "--workload",
        "yolov8s-line-hires",
        "--epochs",
        "2",
        "--eval-every",
        "2",
        "--samples",
        "2",
        "--eval-samples",
        "1",
        "--image-size",
        "64",
        "--batch",
        "2",
        "--save-weights",
        w.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    check_consistent(&v, wall, 1.0);
    assert_eq!(v["held_out"]["metric"], "map50");
    let saved = candle_core::safetensors::load(&w, &candle_core::Device::Cpu).unwrap();
    assert_eq!(saved.len(), 36, "{:?}", saved.keys());
    let values: usize = saved.values().map(|t| t.elem_count()).sum();
    assert_eq!(values, 2_116_815);
    let record = std::fs::read_to_string(w.with_extension("toml")).unwrap();
    assert!(record.contains("the Detect head alone"), "{record}");
    let (code, _, err, _) = run_train(&[
        "--workload",
        "yolov8s-line-hires",
        "--backend",
        "tch",
        "--epochs",
        "1",
        "--samples",
        "2",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("only the candle trainer"), "{err}");
}

/// The ResNet-50 head trained on the seeded backbone's features (`train::probe`): only `fc`
/// is saved, and the zoo model built with it (the whole ResNet-50 on tract, from the
/// close-ups' JPEG bytes) classifies the held-out close-ups exactly as the report's
/// held-out accuracy says, so the fold of the standardisation into `fc` is right.
#[test]
fn the_resnet50_head_trains_on_seeded_features_and_the_zoo_model_scores_what_it_reported() {
    use acceval::model::tensor::{HostTensor, TensorData};
    let d = tempfile::tempdir().unwrap();
    let w = d.path().join("r50.safetensors");
    let onnx = d.path().join("r50.onnx");
    let (code, v, err, wall) = run_train(&[
        "--workload",
        "resnet50-substation",
        "--epochs",
        "15",
        "--samples",
        "30",
        "--eval-samples",
        "12",
        "--save-weights",
        w.to_str().unwrap(),
        "--export-onnx",
        onnx.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    check_consistent(&v, wall, 1.0);
    assert_eq!(v["held_out"]["metric"], "accuracy");
    assert_eq!(v["held_out"]["samples"], 12);
    let saved = candle_core::safetensors::load(&w, &candle_core::Device::Cpu).unwrap();
    let mut names: Vec<(&String, Vec<usize>)> =
        saved.iter().map(|(k, t)| (k, t.dims().to_vec())).collect();
    names.sort();
    assert_eq!(
        format!("{names:?}"),
        r#"[("fc.bias", [10]), ("fc.weight", [2048, 10])]"#
    );
    let spec: acceval::backend::BackendSpec = "cpu".parse().unwrap();
    let mut s = acceval::backend::load(&onnx, &spec, &Default::default()).unwrap();
    // The held-out subset the workload takes with --eval-samples 12 (seed 1).
    let idx = acceval::train::workload::subset(acceval::task::inputs::PANEL_HELDOUT, Some(12), 1);
    let mut right = 0;
    for &k in &idx {
        let (img, label) = acceval::task::labelled::panel_sample("heldout", k);
        let bytes = acceval::task::inputs::encode_jpeg(&img);
        let x = acceval::task::prepare_inputs(
            acceval::report::schema::Task::Classification,
            &[1, 3, 224, 224],
            &[("x.jpg".into(), bytes)],
        )
        .unwrap();
        let out = s
            .run(&[HostTensor {
                name: "input".into(),
                data: TensorData::F32(x[0].tensor.clone()),
            }])
            .unwrap();
        let logits = out[0].data.to_f64();
        let best = (0..logits.len())
            .max_by(|&a, &b| logits[a].total_cmp(&logits[b]))
            .unwrap();
        right += usize::from(best == label.class);
    }
    let reported = v["held_out"]["value"].as_f64().unwrap();
    assert_eq!(
        right as f64 / idx.len() as f64,
        reported,
        "the zoo model with the saved head scored {right} of {}; the report said {reported}",
        idx.len()
    );
}

#[test]
fn bad_flags_say_what_to_do() {
    let (code, _, err) = acceval(&["train", "--workload", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("lstm-load-forecast"), "{err}");
    let (code, _, err) = acceval(&[
        "train",
        "--workload",
        "lstm-load-forecast",
        "--backend",
        "candle:cuda@0",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("not compiled with CUDA") && err.contains("candle-cuda"),
        "{err}"
    );
    // Training names its device in the backend vocabulary, like every other command.
    let (code, _, err) = acceval(&[
        "train",
        "--workload",
        "lstm-load-forecast",
        "--device",
        "cuda",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--backend candle:cuda@N"), "{err}");
    let (code, _, err) = acceval(&[
        "train",
        "--workload",
        "lstm-load-forecast",
        "--backend",
        "cuda",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("training runs on candle"), "{err}");
    let (code, _, err) = acceval(&["train", "--workload", "lstm-load-forecast", "--lr", "NaN"]);
    assert_eq!(code, 2);
    assert!(err.contains("NaN"), "{err}");
    let (code, _, err) = acceval(&["train", "--exec", "--", "/nonexistent/train"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot start"), "{err}");
}

/// A stand-in lab script: plain Python printing mllog lines (no torch needed).
const FAKE: &str = r#"
import json, sys, time
def log(kind, key, value=None, **meta):
    meta = {"file": "fake.py", "lineno": 1, **meta}
    print(":::MLLOG " + json.dumps({"namespace": "", "time_ms": int(time.time() * 1e3), "event_type": kind, "key": key, "value": value, "metadata": meta}), flush=True)
log("INTERVAL_START", "run_start")
log("POINT_IN_TIME", "global_batch_size", 32)
print("some other output")
for e in (1, 2):
    log("INTERVAL_START", "epoch_start", epoch_num=e)
    for s in range(5):
        t = time.perf_counter()
        time.sleep(0.05)
        log("POINT_IN_TIME", "step_time_ms", (time.perf_counter() - t) * 1e3, step_num=s)
    log("INTERVAL_END", "epoch_stop", epoch_num=e, samples_count=160)
    log("POINT_IN_TIME", "eval_accuracy", 0.5 * e, epoch_num=e)
log("INTERVAL_END", "run_stop", status="success")
"#;

#[test]
fn exec_reads_a_scripts_mllog_events() {
    let d = tempfile::tempdir().unwrap();
    let script = d.path().join("fake.py");
    std::fs::write(&script, FAKE).unwrap();
    let (code, v, err, wall) = run_train(&[
        "--sample-ms",
        "100",
        "--target",
        "eval_accuracy>=0.9",
        "--exec",
        "--",
        "python3",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["mode"], "exec");
    assert_eq!(v["epochs"].as_array().unwrap().len(), 2);
    assert_eq!(v["steps"], 10);
    assert_eq!(v["batch"], 32.0);
    assert!(num(&v["step_ms"]["min"]) >= 50.0, "{}", v["step_ms"]);
    assert_eq!(v["epochs_to_target"], 2.0);
    assert!(err.contains("some other output"), "{err}");
    check_consistent(&v, wall, 0.1);
}

#[test]
fn exec_trains_a_pytorch_script() {
    let Some(py) = torch_python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/train_mllog.py");
    let (code, v, err, wall) = run_train(&[
        "--target",
        "eval_accuracy>=0.9",
        "--exec",
        "--",
        &py,
        script.to_str().unwrap(),
        "--epochs",
        "3",
    ]);
    assert_eq!(code, 0, "{err}");
    check_consistent(&v, wall, 1.0);
    assert_eq!(v["epochs"].as_array().unwrap().len(), 3);
    assert_eq!(v["steps"], 3 * 64);
    assert_eq!(v["exit_code"], 0);
    let acc = num(&v["epochs"][2]["eval"]["value"]);
    assert!(acc > 0.9, "the MLP learns the quadrants: {acc}");
}

/// A Python with torch: `$ACCEVAL_TORCH_PYTHON`. Without one: a visible skip, or a failure
/// when `ACCEVAL_REQUIRE_TORCH=1` (CI installs torch into its own venv).
fn torch_python() -> Option<String> {
    let py = std::env::var("ACCEVAL_TORCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&py)
        .args(["-c", "import torch"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        common::skip(
            "ACCEVAL_REQUIRE_TORCH",
            &format!(
                "no python with torch (pip install torch, then set ACCEVAL_TORCH_PYTHON; tried '{py}')"
            ),
        );
        return None;
    }
    Some(py)
}

/// Runs tests/py/mlperf_checker.py (MLPerf's compliance checker, training ruleset 6.0.0) in
/// `mode` on `mllog`: (exit code, output).
fn mlperf_checker(py: &str, mode: &str, mllog: &Path) -> (i32, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/mlperf_checker.py");
    let out = std::process::Command::new(py)
        .arg(&script)
        .arg(mode)
        .arg(mllog)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// The mllog of a built-in training against MLPerf's own compliance checker (mlperf-logging
/// 4.1.68, `--usage training --ruleset 6.0.0`). With the lab's submission fields given, every
/// rule of the ruleset's common and division files passes but one: MLPerf accepts only its
/// own benchmarks as `submission_benchmark`, so the checker as shipped refuses acceval's
/// workload (and stops on the missing rule file of that benchmark); with that one list lifted
/// it says SUCCESS. Without the submission fields it names what is missing: the check can
/// fail.
#[test]
fn the_mllog_passes_mlperfs_checker_but_for_its_benchmark_list() {
    let Some(py) = python_with(
        "mlperf_logging.compliance_checker, yaml",
        "pip install mlperf-logging==4.1.68",
    ) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let mllog = d.path().join("train.mllog");
    let (code, _, err, _) = run_train(&[
        "--workload",
        "lstm-load-forecast",
        "--epochs",
        "2",
        "--samples",
        "64",
        "--eval-samples",
        "24",
        "--mllog",
        mllog.to_str().unwrap(),
        "--submission-org",
        "acceval CI",
        "--submission-platform",
        "ci-2-core-x86",
        "--submission-division",
        "closed",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out) = mlperf_checker(&py, "derived", &mllog);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("SUCCESS"), "{out}");
    let (code, out) = mlperf_checker(&py, "shipped", &mllog);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("closed_lstm-load-forecast.yaml"), "{out}");
    // The same log without the lab's fields: the checker names each.
    let text = std::fs::read_to_string(&mllog).unwrap();
    let bare: String = text
        .lines()
        .filter(|l| !l.contains("\"submission_org\"") && !l.contains("\"submission_platform\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let bare_log = d.path().join("bare.mllog");
    std::fs::write(&bare_log, bare).unwrap();
    let (code, out) = mlperf_checker(&py, "derived", &bare_log);
    assert_ne!(code, 0, "{out}");
    for k in ["submission_org", "submission_platform"] {
        assert!(out.contains(&format!("'{k}' but found 0")), "{k}: {out}");
    }
}

#[test]
fn out_into_a_new_folder_and_an_interrupted_run_exits_2_saying_it_is_incomplete() {
    let d = tempfile::tempdir().unwrap();
    // --out names a folder that does not exist yet: the mllog goes into it as well.
    let out = d.path().join("new/run");
    let args = [
        "train",
        "--workload",
        "lstm-load-forecast",
        "--epochs",
        "1",
        "--samples",
        "64",
        "--eval-samples",
        "32",
        "--out",
        out.to_str().unwrap(),
    ];
    let (code, _, err) = acceval(&args);
    assert_eq!(code, 0, "{err}");
    for f in ["train.json", "train.mllog"] {
        assert!(out.join(f).is_file(), "{f} missing: {err}");
    }
    // SIGINT in the middle of a long run: the report is written, complete: false, exit 2.
    let out2 = d.path().join("cut");
    let mut long = args.map(String::from).to_vec();
    long[4] = "50".into();
    long[10] = out2.display().to_string();
    let child = command()
        .args(&long)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("complete: false"), "{err}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out2.join("train.json")).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(v["interrupted"], true);
}
