//! Task pipelines end to end (`acceval run --image/--series`), input sets, bad input, and
//! pre-processing against Pillow/numpy on the same files.

mod common;

use std::path::{Path, PathBuf};

use acceval::task::{image, inputs};
use common::*;
use ndarray_npy::WriteNpyExt;

/// Generates set `name` into a temporary folder (checking nothing; see the manifest test).
fn set(name: &str) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let m = inputs::write_set(name, dir.path()).unwrap();
    let files = m
        .files
        .iter()
        .map(|f| dir.path().join(name).join(&f.file))
        .collect();
    (dir, files)
}

fn run_json(args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = bin().args(args).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), v, e)
}

#[test]
fn input_sets_are_reproducible() {
    // The committed manifests hold the hashes; regenerating gives the same bytes.
    for s in ["line-inspection", "substation", "load-series"] {
        let committed: inputs::InputManifest = toml::from_str(
            &std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("inputs")
                    .join(s)
                    .join("manifest.toml"),
            )
            .unwrap(),
        )
        .unwrap();
        let files = inputs::generate(s).unwrap();
        assert_eq!(files.len(), committed.files.len(), "{s}");
        for ((name, bytes, _), c) in files.iter().zip(&committed.files) {
            assert_eq!(name, &c.file);
            assert_eq!(acceval::util::fs::sha256_hex(bytes), c.sha256, "{s}/{name}");
        }
    }
}

#[test]
fn detection_classification_and_forecast_pipelines() {
    let (_d, imgs) = set("line-inspection");
    let (code, v, e) = run_json(&[
        "run",
        "--model",
        "yolov8n-line",
        "--image",
        imgs[0].to_str().unwrap(),
        "--image",
        imgs[6].to_str().unwrap(),
        "--conf",
        "0.0002",
        "--json",
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(v["task"], "detection");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        let s = &r["stages"];
        for k in ["decode_ms", "preprocess_ms", "forward_ms", "postprocess_ms"] {
            assert!(s[k].as_f64().unwrap() > 0.0, "{k}: {s}");
        }
        let parts: f64 = ["decode_ms", "preprocess_ms", "forward_ms", "postprocess_ms"]
            .iter()
            .map(|k| s[*k].as_f64().unwrap())
            .sum();
        assert!(s["total_ms"].as_f64().unwrap() >= parts);
        // 1920×1080 letterboxed into 640: scale 1/3, 140 px of padding top and bottom.
        assert_eq!(r["letterbox"]["pad_y"], 140.0);
        for d in r["output"]["detections"].as_array().unwrap() {
            let (x1, x2) = (d["x1"].as_f64().unwrap(), d["x2"].as_f64().unwrap());
            assert!(
                (0.0..=1920.0).contains(&x1) && x1 <= x2 && x2 <= 1920.0,
                "{d}"
            );
            assert!(d["score"].as_f64().unwrap() >= 0.0002);
            assert!(d["label"].is_string());
        }
    }

    let (_d, imgs) = set("substation");
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("classes.json");
    let (code, v, e) = run_json(&[
        "run",
        "--model",
        "mobilenetv2-meter",
        "--image",
        imgs[0].to_str().unwrap(),
        "--top-k",
        "3",
        "--json",
        "--output",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{e}");
    let classes = v["runs"][0]["output"]["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 3);
    let p: Vec<f64> = classes
        .iter()
        .map(|c| c["probability"].as_f64().unwrap())
        .collect();
    assert!(p[0] >= p[1] && p[1] >= p[2] && p.iter().sum::<f64>() <= 1.0 + 1e-6);
    // --output holds the same report.
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(written["runs"][0]["output"], v["runs"][0]["output"]);

    let (_d, series) = set("load-series");
    let (code, v, e) = run_json(&[
        "run",
        "--model",
        "lstm-load-forecast",
        "--series",
        series[0].to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{e}");
    let f = v["runs"][0]["output"]["forecast_mw"].as_array().unwrap();
    assert_eq!(f.len(), 24);
    // De-normalised with the series' own statistics: values in the series' MW range.
    assert!(
        f.iter()
            .all(|x| (300.0..1500.0).contains(&x.as_f64().unwrap())),
        "{f:?}"
    );
}

#[test]
fn bad_task_inputs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let corrupt = dir.path().join("corrupt.jpg");
    std::fs::write(&corrupt, b"\xff\xd8\xff\xe0 not really a jpeg").unwrap();
    let (code, _, e) = run_json(&[
        "run",
        "--model",
        "mobilenetv2-meter-fp16",
        "--image",
        corrupt.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        e.contains("corrupt.jpg") && e.contains("truncated or corrupt JPEG"),
        "{e}"
    );

    let grey = dir.path().join("grey.png");
    ::image::GrayImage::new(32, 32).save(&grey).unwrap();
    let (code, _, e) = run_json(&[
        "run",
        "--model",
        "mobilenetv2-meter-fp16",
        "--image",
        grey.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("grey.png") && e.contains("1 channel"), "{e}");

    let csv = dir.path().join("gaps.csv");
    let text = inputs::load_series_csv(1);
    let mut lines: Vec<String> = text.lines().map(|s| s.to_string()).collect();
    lines[10] = lines[10].split(',').take(2).collect::<Vec<_>>().join(",") + ",,55.0";
    std::fs::write(&csv, lines.join("\n")).unwrap();
    let (code, _, e) = run_json(&[
        "run",
        "--model",
        "lstm-load-forecast",
        "--series",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        e.contains("line 11") && e.contains("missing value") && e.contains("temperature_c"),
        "{e}"
    );

    let (code, _, e) = run_json(&[
        "run",
        "--model",
        "lstm-load-forecast",
        "--image",
        grey.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("takes --series"), "{e}");
    // A batch that fails part way: the report keeps the images done, marked incomplete.
    let (_s, imgs) = set("substation");
    let partial = dir.path().join("partial.json");
    let (code, _, e) = run_json(&[
        "run",
        "--model",
        "mobilenetv2-meter-int8",
        "--image",
        imgs[0].to_str().unwrap(),
        "--image",
        corrupt.to_str().unwrap(),
        "--output",
        partial.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        e.contains("1 of 2 files done") && e.contains("complete: false"),
        "{e}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&partial).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
    assert!(v["error"].as_str().unwrap().contains("corrupt.jpg"));
    // An empty folder is an error; a folder of images runs them all.
    let empty = tempfile::tempdir().unwrap();
    let (code, _, e) = run_json(&[
        "run",
        "--model",
        "mobilenetv2-meter-int8",
        "--image",
        empty.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("holds no .jpg/.jpeg/.png image"), "{e}");
    let folder = imgs[0].parent().unwrap();
    let (code, v, e) = run_json(&[
        "run",
        "--model",
        "mobilenetv2-meter-int8",
        "--image",
        folder.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(v["runs"].as_array().unwrap().len(), 8);
    assert_eq!(v["complete"], true);

    let missing = dir.path().join("nope.jpg");
    let (code, _, e) = run_json(&[
        "run",
        "--model",
        "mobilenetv2-meter-fp16",
        "--image",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("nope.jpg"), "{e}");
}

const PILLOW: &str = r#"
import sys, numpy as np
from PIL import Image
path, ours_cls, ours_det = sys.argv[1:4]
img = Image.open(path).convert("RGB")
w, h = img.size
# Classification: short side 256 (BILINEAR, antialiased like ours), centre crop 224, ImageNet.
if w <= h: nw, nh = 256, (h * 256 + w // 2) // w
else: nw, nh = (w * 256 + h // 2) // h, 256
r = img.resize((nw, nh), Image.BILINEAR)
x0, y0 = (nw - 224) // 2, (nh - 224) // 2
c = np.asarray(r.crop((x0, y0, x0 + 224, y0 + 224)), dtype=np.float32) / 255.0
mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
ref_cls = ((c - mean) / std).transpose(2, 0, 1)[None]
# Detection: letterbox into 640, grey 114 padding, pixels / 255.
s = min(640 / w, 640 / h)
lw, lh = round(w * s), round(h * s)
canvas = np.full((640, 640, 3), 114, np.uint8)
px, py = (640 - lw) // 2, (640 - lh) // 2
canvas[py:py + lh, px:px + lw] = np.asarray(img.resize((lw, lh), Image.BILINEAR))
ref_det = (canvas.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
for name, ours, ref, scale in [("classification", ours_cls, ref_cls, std.min() * 255), ("detection", ours_det, ref_det, 255.0)]:
    d = np.abs(np.load(ours) - ref) * scale  # in 8-bit pixel levels
    print(f"{name} {d.max():.3f} {d.mean():.4f}")
"#;

#[test]
fn preprocessing_matches_pillow() {
    let Some(py) = python_with("PIL, numpy", "pip install pillow numpy") else {
        return;
    };
    let (_d, sub) = set("substation");
    let (_e, line) = set("line-inspection");
    let tmp = tempfile::tempdir().unwrap();
    for file in [&sub[0], &sub[7], &line[0], &line[7]] {
        let img = image::decode(file).unwrap();
        let cls = image::to_nchw(
            &image::resize_center_crop(img.clone(), 256, 224),
            image::IMAGENET_MEAN,
            image::IMAGENET_STD,
        );
        let (lb, _) = image::letterbox(img, 640);
        let det = image::to_nchw(&lb, image::UNIT_MEAN, image::UNIT_STD);
        let (pc, pd) = (tmp.path().join("cls.npy"), tmp.path().join("det.npy"));
        cls.write_npy(std::fs::File::create(&pc).unwrap()).unwrap();
        det.write_npy(std::fs::File::create(&pd).unwrap()).unwrap();
        let o = std::process::Command::new(&py)
            .args(["-c", PILLOW])
            .args([file, &pc, &pd])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (max, mean): (f64, f64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
            eprintln!(
                "{} {}: max {max:.3} mean {mean:.4} pixel levels from Pillow",
                file.display(),
                f[0]
            );
            // Stated tolerance: at most 2 of 255 levels anywhere, 0.25 on average (measured:
            // max 1, mean 0.06–0.09; decoders and resampling round differently).
            assert!(max <= 2.0 && mean <= 0.25, "{}: {line}", file.display());
        }
    }
}
