//! `inspect` must not copy weights: on a 100 MB model its peak memory stays below 2× the
//! file size and it finishes quickly even in a debug build. (Release timings are in the
//! README, measured with hyperfine.) This file holds one test so that the peak RSS of
//! this process's children is the one `acceval` run.

mod common;

use std::time::Instant;

#[test]
fn inspect_100mb_model_is_fast_and_does_not_copy_weights() {
    // 25 layers × 1000×1000 FP32 = 100,000,000 bytes of weights.
    let model = acceval::model::build::gemm_chain(25, 1000).encode(17);
    let w = common::write_bytes("big.onnx", &model);
    drop(model);
    let file_bytes = std::fs::metadata(&w.path).unwrap().len();
    assert!(file_bytes > 100_000_000);

    let start = Instant::now();
    let out = common::bin()
        .args(["inspect", w.path.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let wall = start.elapsed();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["params"]["bytes"], 100_000_000u64);
    assert_eq!(v["macs"], 25_000_000u64);

    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) },
        0
    );
    let peak_bytes = ru.ru_maxrss as u64 * 1024; // Linux reports KiB
    eprintln!(
        "inspect of {file_bytes} bytes: {:.3} s wall (debug build), peak RSS {peak_bytes} bytes",
        wall.as_secs_f64()
    );
    assert!(
        peak_bytes < 2 * file_bytes,
        "peak RSS {peak_bytes} >= 2 × file size {file_bytes}"
    );
    assert!(wall.as_secs_f64() < 5.0, "took {wall:?}");
}
