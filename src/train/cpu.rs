//! What the trainer's fused CPU ops share: their f32 data borrowed from candle's storage,
//! and candle's own GEMM (the `gemm` crate) on row- or column-major views of it.

use std::ops::Range;

use candle_core::{CpuStorage, CustomOp2, Layout, Result, Tensor};

/// The contiguous f32 data of a CPU storage (`what` names it in the error), for the
/// trainer's custom ops.
pub(super) fn cpu_f32<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> Result<&'a [f32]> {
    let CpuStorage::F32(v) = s else {
        candle_core::bail!("{what} must be f32");
    };
    let Some((a, b)) = l.contiguous_offsets() else {
        candle_core::bail!("{what} must be contiguous");
    };
    Ok(&v[a..b])
}

/// A matrix in a slice: `rows` × `cols`, element (i, j) at `i * rs + j * cs`.
#[derive(Clone, Copy)]
pub(super) struct Mat<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl<'a> Mat<'a> {
    pub(super) fn row_major(data: &'a [f32], rows: usize, cols: usize) -> Mat<'a> {
        Mat {
            data,
            rows,
            cols,
            rs: cols,
            cs: 1,
        }
    }
    /// The transpose, without copying.
    pub(super) fn t(self) -> Mat<'a> {
        Mat {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
        }
    }
    /// Whether every element lies inside `data`.
    fn fits(&self) -> bool {
        self.rows == 0
            || self.cols == 0
            || (self.rows - 1) * self.rs + (self.cols - 1) * self.cs < self.data.len()
    }
}

/// `dst` (row-major, a.rows × b.cols) = `dst` (when `acc`) + a · b, on this thread (the
/// callers split their work over threads themselves: the LSTM's per-step products are small,
/// 64 × 128 × 512 at the workload's batch, and handing each to the thread pool cost more than
/// it saved, perf: scheduler wake-ups ~15 % of a step; the pointwise convolution runs one
/// image per task).
pub(super) fn gemm_into(dst: &mut [f32], a: Mat, b: Mat, acc: bool) -> Result<()> {
    gemm_with(dst, a, b, acc, gemm::Parallelism::None)
}

/// [`gemm_into`] with gemm's own threads (`par`), for a product the caller does not split.
pub(super) fn gemm_with(
    dst: &mut [f32],
    a: Mat,
    b: Mat,
    acc: bool,
    par: gemm::Parallelism,
) -> Result<()> {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if b.rows != k || dst.len() != m * n || !a.fits() || !b.fits() {
        candle_core::bail!("product of {m}×{k} and {}×{n} into {}", b.rows, dst.len());
    }
    // SAFETY: the checks above keep every element gemm reads (a, b) or writes (dst, m × n
    // row-major) inside its slice; dst is borrowed mutably, a and b shared, so they do not
    // alias.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            acc,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            par,
        );
    }
    Ok(())
}

/// A tensor's contiguous f32 data on the CPU, borrowed for `f` (no copy).
pub(super) fn with_f32<R>(
    t: &Tensor,
    what: &str,
    f: impl FnOnce(&[f32]) -> Result<R>,
) -> Result<R> {
    let (s, l) = t.storage_and_layout();
    let candle_core::Storage::Cpu(cs) = &*s else {
        candle_core::bail!("{what} must be on the CPU");
    };
    f(cpu_f32(cs, l, what)?)
}

/// On one axis of a convolution (stride `s`, padding `p`), the outputs `lo..hi` (of `olen`)
/// whose tap `j` reads inside an input row of `len`: o·s + j − p in [0, len). Loops over this
/// range need no test per element, so at stride 1 they are contiguous multiply-adds the
/// compiler vectorises (with a test per element, the depthwise convolution's three loops were
/// a third of a MobileNetV2 step).
pub(super) fn span(j: usize, s: usize, p: usize, len: usize, olen: usize) -> Range<usize> {
    let lo = p.saturating_sub(j).div_ceil(s);
    // The last o with o·s + j − p ≤ len − 1.
    let hi = match (len + p).checked_sub(j + 1) {
        Some(top) => (top / s + 1).min(olen),
        None => 0,
    };
    lo..hi.max(lo)
}

/// e^x for the trainer's activations, in straight-line arithmetic that the compiler
/// vectorises inside a loop (a call to libm's `expf` keeps the loop scalar; it was 10 % of
/// an LSTM step's CPU samples). Cephes' `expf`: x = n·ln 2 + r with n the nearest integer to
/// x·log₂e (rounded by adding 1.5·2²³), e^r by its degree-7 polynomial on |r| ≤ ln 2 / 2,
/// 2ⁿ built in the exponent bits. Relative error ≤ 2e-7 (the test); x is held to [−87, 88]
/// so 2ⁿ stays a normal float (e^−87 ≈ 1.6e-38 stands for anything smaller, e^88 ≈ 1.7e38
/// for anything larger); NaN stays NaN.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³
    // `clamp`, not `max`/`min`, so that a NaN passes through.
    let x = x.clamp(-87.0, 88.0);
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    // The low bits of t's mantissa hold n as a two's-complement integer.
    let bits = t.to_bits().wrapping_sub(ROUND.to_bits());
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let p = (((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2)
        * r
        + 1.666_666_5e-1)
        * r
        + 0.5)
        * r
        * r
        + r
        + 1.0;
    p * f32::from_bits(bits.wrapping_add(127) << 23)
}

/// Σ f(a[i], b[i]) in eight running sums, a fixed order, so the same bits on every run (a
/// single running sum is a dependency chain the compiler does not vectorise). The shared
/// reduction of the fused ops: [`sum`] and [`dot`].
#[inline(always)]
fn sum8(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(&x, &y)| f(x, y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            lanes[l] += f(x[l], y[l]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// The sum of `v` (see [`sum8`]).
pub(super) fn sum(v: &[f32]) -> f32 {
    sum8(v, v, |x, _| x)
}

/// The sum of a[i]·b[i] over the shorter of the two (see [`sum8`]).
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    sum8(a, b, |x, y| x * y)
}

/// `op` on `x` and `w` made contiguous: the entry point of the fused convolutions.
pub(super) fn apply2(
    x: &Tensor,
    w: &Tensor,
    op: impl CustomOp2 + Send + Sync + 'static,
) -> Result<Tensor> {
    x.contiguous()?.apply_op2(&w.contiguous()?, op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_two_tenths_of_a_millionth_and_keeps_nan() {
        let mut worst = 0f64;
        for k in -870_000..=880_000 {
            let x = k as f32 * 1e-4;
            let want = f64::from(x).exp();
            let rel = ((f64::from(exp(x)) - want) / want).abs();
            worst = worst.max(rel);
        }
        assert!(worst <= 2e-7, "worst relative error {worst:e}");
        assert!(exp(f32::NAN).is_nan());
        // Outside [−87, 88] the bounds stand in: tiny and huge, finite, no wrapped exponent.
        assert!(exp(-200.0) > 0.0 && exp(-200.0) < 2e-38);
        assert!(exp(f32::NEG_INFINITY) < 2e-38);
        assert!(exp(200.0) > 1e38 && exp(200.0).is_finite());
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn sum_and_dot_cover_the_tail() {
        let v: Vec<f32> = (1..=19).map(|i| i as f32).collect();
        assert_eq!(sum(&v), 190.0);
        assert_eq!(dot(&v, &v), (1..=19).map(|i| (i * i) as f32).sum::<f32>());
        assert_eq!(sum(&[]), 0.0);
    }
}
