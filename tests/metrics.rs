//! Accuracy metrics against numpy (float64) on random data, up to 10^8 elements, where a
//! naive f32 running sum goes wrong.

mod common;

use acceval::accuracy::metrics;
use acceval::data::io;
use acceval::model::tensor::TensorData;

const NUMPY: &str = r#"
import sys, json, numpy as np
n, out = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(n)
y = rng.standard_normal(n, dtype=np.float32) * 3 + 1
x = y + rng.standard_normal(n, dtype=np.float32) * np.float32(0.01)
if out != "-":
    np.save(out + "/x.npy", x); np.save(out + "/y.npy", y)
x64, y64 = x.astype(np.float64), y.astype(np.float64)
d = x64 - y64
naive_mse = float(np.cumsum(np.square((x - y)), dtype=np.float32)[-1] / np.float32(n))
sys.stdout.write(json.dumps({
  "mse": float(np.mean(d * d)), "max_abs_error": float(np.max(np.abs(d))),
  "rel_l2_error": float(np.linalg.norm(d) / np.linalg.norm(y64)),
  "cosine": float(np.dot(x64, y64) / (np.linalg.norm(x64) * np.linalg.norm(y64))),
  "naive_f32_mse": naive_mse}) + "\n")
sys.stdout.flush()
if out == "-":
    # The large case comes back through the pipe as raw little-endian float32 (x, then y):
    # 800 MB that need not touch the disk (a CI machine's /tmp may not have it free).
    sys.stdout.buffer.write(x.astype("<f4").tobytes()); sys.stdout.buffer.write(y.astype("<f4").tobytes())
"#;

/// A Python with numpy (`$ACCEVAL_PYTHON`, else `python3`); `None` is a visible skip, or a
/// failure when `ACCEVAL_REQUIRE_PYTHON=1` (CI).
fn numpy_python() -> Option<String> {
    let py = std::env::var("ACCEVAL_PYTHON").unwrap_or_else(|_| "python3".into());
    if std::process::Command::new(&py)
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(py);
    }
    common::skip(
        "ACCEVAL_REQUIRE_PYTHON",
        &format!("no python with numpy (pip install numpy, or set ACCEVAL_PYTHON; tried '{py}')"),
    );
    None
}

#[test]
fn metrics_match_numpy_float64() {
    let Some(py) = numpy_python() else { return };
    for n in [1_000usize, 100_000_000] {
        // The small case goes through .npy files and `read_npy`; the large one through the pipe.
        let dir = tempfile::tempdir().unwrap();
        let on_disk = n <= 1_000_000;
        let out = if on_disk {
            dir.path().to_str().unwrap()
        } else {
            "-"
        };
        let o = std::process::Command::new(&py)
            .args(["-c", NUMPY, &n.to_string(), out])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let eol = o
            .stdout
            .iter()
            .position(|&b| b == b'\n')
            .expect("a JSON line");
        let want: serde_json::Value = serde_json::from_slice(&o.stdout[..eol]).unwrap();
        let (x, y) = if on_disk {
            let x = io::read_npy(&dir.path().join("x.npy")).unwrap();
            let y = io::read_npy(&dir.path().join("y.npy")).unwrap();
            (x, y)
        } else {
            let raw = &o.stdout[eol + 1..];
            assert_eq!(
                raw.len(),
                8 * n,
                "numpy sent {} bytes for 2 x {n} float32",
                raw.len()
            );
            let f32s = |b: &[u8]| {
                let v: Vec<f32> = b
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                TensorData::F32(ndarray::ArrayD::from_shape_vec(vec![n], v).unwrap())
            };
            (f32s(&raw[..4 * n]), f32s(&raw[4 * n..]))
        };
        let m = metrics::metrics(&x, &y).unwrap();
        assert_eq!(m.elements, n as u64);
        let close = |got: f64, key: &str| {
            let w = want[key].as_f64().unwrap();
            let rel = (got - w).abs() / w.abs().max(1e-300);
            eprintln!("n={n} {key}: acceval {got:.12e} numpy {w:.12e} (rel {rel:.1e})");
            assert!(rel < 1e-9, "n={n} {key}: {got} vs numpy {w}");
        };
        close(m.mse, "mse");
        close(m.max_abs_error, "max_abs_error");
        close(m.rel_l2_error, "rel_l2_error");
        close(m.cosine, "cosine");
        if n == 100_000_000 {
            // The naive float32 running sum is far off at this size; ours is not.
            let naive = want["naive_f32_mse"].as_f64().unwrap();
            let naive_rel = (naive - m.mse).abs() / m.mse;
            eprintln!("n={n}: naive float32 running-sum MSE {naive:.6e} is off by {naive_rel:.1e}");
            assert!(
                naive_rel > 1e-3,
                "expected the f32 sum to drift, got {naive_rel}"
            );
        }
    }
}

const NUMPY_PERCENTILES: &str = r#"
import sys, json, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(7)
cases = {
  "lognormal": rng.lognormal(1.0, 0.5, 1237),
  "ties": np.repeat(np.array([1.0, 2.0, 2.0, 3.0]), 25),
  "two": np.array([5.0, 1.0]),
  "one": np.array([4.25]),
}
res = {}
for k, v in cases.items():
    np.save(f"{out}/{k}.npy", v)
    res[k] = {p: float(np.percentile(v, p)) for p in (50, 75, 90, 99, 99.9)}
    res[k]["mean"] = float(np.mean(v)); res[k]["std"] = float(np.std(v, ddof=1)) if len(v) > 1 else 0.0
print(json.dumps(res))
"#;

/// The percentile rule (linear interpolation) and the summary against numpy.
#[test]
fn summary_statistics_match_numpy() {
    let Some(py) = numpy_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(&py)
        .args(["-c", NUMPY_PERCENTILES, dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for case in ["lognormal", "ties", "two", "one"] {
        let v = io::read_npy(&dir.path().join(format!("{case}.npy")))
            .unwrap()
            .to_f64();
        let s = acceval::measure::stats::Summary::of(&v).unwrap();
        let w = &want[case];
        let close = |got: f64, key: &str| {
            let e = w[key].as_f64().unwrap();
            assert!(
                (got - e).abs() <= 1e-12 * e.abs().max(1.0),
                "{case} {key}: {got} vs numpy {e}"
            );
        };
        close(s.p50, "50");
        close(s.p75, "75");
        close(s.p90, "90");
        close(s.p99, "99");
        close(s.mean, "mean");
        close(s.stddev, "std");
        if v.len() >= 1000 {
            close(s.p999.unwrap(), "99.9");
        } else {
            assert_eq!(s.p999, None);
        }
    }
    assert!(acceval::measure::stats::Summary::of(&[]).is_none());
}
