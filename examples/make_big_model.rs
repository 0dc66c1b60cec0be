//! Writes a model of about SIZE_MB megabytes (default 100) for timing `acceval inspect`:
//! a chain of Gemm layers with 1000×1000 FP32 weights (4 MB each).
//!
//!     cargo run --release --example make_big_model -- /tmp/big.onnx 100
//!     hyperfine --warmup 3 'target/release/acceval inspect /tmp/big.onnx'

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args.next().unwrap_or_else(|| "big.onnx".into());
    let mb: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
    let model = acceval::model::build::gemm_chain(mb.div_ceil(4).max(1), 1000).encode(17);
    std::fs::write(&out, &model)?;
    println!("wrote {out} ({} bytes)", model.len());
    Ok(())
}
