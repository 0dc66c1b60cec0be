//! A fused LSTM layer for the candle trainer: one graph node for the whole sequence, with a
//! hand-written backward pass through time.
//!
//! Built from candle's ops, a 96-step, 2-layer LSTM is ~35 nodes per step per layer
//! (matmuls, slices, activations, products), and candle's backward of each gate slice
//! (`narrow`) builds a zero-padded gradient of the full gate tensor: per training step
//! thousands of small allocations and O(T²) bytes in the padding. candle has no fused LSTM
//! (candle-nn's `LSTM` is a per-step cell built from the same ops), so this custom op does
//! what cuDNN's and PyTorch's CPU LSTM do: the recurrence in one forward over the sequence,
//! keeping the gate activations, and one backward over it (the standard LSTM BPTT), with the
//! time-independent parts as single large matmuls.
//!
//! The op takes `gx` [T, B, 4H] (the input projection, computed by the caller with an
//! ordinary, differentiable matmul for all steps), the recurrent weight `r` [4H, H] and the
//! bias [4H] (both of ONNX's biases summed; its gradient is a column sum here, where
//! candle's broadcast-add backward was a strided reduction at 7 % of a step); it returns
//! the hidden state of every step, [T, B, H]. ONNX gate
//! order (i, o, f, c), zero initial state, forward direction. CPU and f32 only; the trainer
//! uses the per-step graph elsewhere.

use std::ops::Range;
use std::sync::Mutex;

use rayon::prelude::*;

use candle_core::{CpuStorage, CustomOp3, DType, Device, Layout, Result, Shape, Tensor};

use super::cpu::{Mat, cpu_f32, gemm_into};

/// What the forward pass keeps for the backward pass, per step `t` at `t * B * 4H`
/// (activations) and `t * B * H` (cell and hidden state).
struct Saved {
    /// i, o, f (after the sigmoid) and the candidate (after tanh), [T, B, 4H].
    acts: Vec<f32>,
    /// The cell state after each step, [T, B, H].
    c: Vec<f32>,
    /// tanh of the cell state, [T, B, H].
    tc: Vec<f32>,
    /// The hidden state after each step, [T, B, H] (the output).
    h: Vec<f32>,
}

/// The custom op; one instance per forward call (it holds that call's activations).
pub struct LstmSeq {
    hidden: usize,
    /// How many parts the batch is split in (one thread each).
    parts: usize,
    saved: Mutex<Option<Saved>>,
}

impl LstmSeq {
    /// The op for hidden size `hidden`, its batch split over the thread pool's threads.
    pub fn new(hidden: usize) -> LstmSeq {
        LstmSeq::split(hidden, rayon::current_num_threads())
    }

    /// The op with its batch split in `parts`.
    fn split(hidden: usize, parts: usize) -> LstmSeq {
        LstmSeq {
            hidden,
            parts,
            saved: Mutex::new(None),
        }
    }
}

/// Whether the fused layer runs for tensors of this dtype on this device.
pub fn supported(dtype: DType, device: &Device) -> bool {
    dtype == DType::F32 && device.is_cpu()
}

#[inline(always)]
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + super::cpu::exp(-x))
}

/// tanh from one `exp` of a non-positive argument (no overflow): `f32::tanh` is libm's
/// `tanhf` through `expm1f`, measured at 18 % of a training step here (perf), against 2 %
/// for `expf` (now [`super::cpu::exp`], which vectorises). Absolute error ≲ 1e-7 (the subtraction `1 − e` near x = 0), well inside what
/// training needs; the test below holds the layer to candle's `tanh` within 1e-5.
#[inline(always)]
fn tanh(x: f32) -> f32 {
    let e = super::cpu::exp(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

/// The batch rows `0..b` as `parts` contiguous ranges of near-equal size. Each sample's
/// recurrence depends on its own state only, so each range runs its whole sequence on one
/// thread, forward and backward, with no meeting per step (handing each step's small
/// product to the thread pool cost more than it saved, see [`gemm_into`]); at 2 threads
/// this halves the recurrence, which was single-threaded and ~60 % of an LSTM step.
fn batch_parts(b: usize, parts: usize) -> Vec<Range<usize>> {
    let p = parts.clamp(1, b.max(1));
    // b = p·q + m: the first m parts take q + 1 rows.
    let (q, m) = (b / p, b % p);
    let start = |k: usize| k * q + k.min(m);
    (0..p).map(|k| start(k)..start(k + 1)).collect()
}

/// For each part, its rows of every step of `v` ([T, B, width]): the slices that part's
/// thread alone writes.
fn rows_of<'a>(
    v: &'a mut [f32],
    b: usize,
    width: usize,
    parts: &[Range<usize>],
) -> Vec<Vec<&'a mut [f32]>> {
    let mut out: Vec<Vec<&mut [f32]>> = parts.iter().map(|_| Vec::new()).collect();
    for step in v.chunks_exact_mut(b * width) {
        let mut rest = step;
        for (rows, part) in parts.iter().zip(out.iter_mut()) {
            let (head, tail) = rest.split_at_mut(rows.len() * width);
            part.push(head);
            rest = tail;
        }
    }
    out
}

/// The sizes of one call: `t_len` steps, batch `b`, hidden size `hd`.
#[derive(Clone, Copy)]
struct Dims {
    t_len: usize,
    b: usize,
    hd: usize,
}

/// One part's rows of [`Saved`], step by step.
struct PartRows<'a> {
    rows: Range<usize>,
    acts: Vec<&'a mut [f32]>,
    c: Vec<&'a mut [f32]>,
    tc: Vec<&'a mut [f32]>,
    h: Vec<&'a mut [f32]>,
}

/// The forward recurrence over `gx` [T, B, 4H] plus `bias` [4H], with the recurrent weight
/// `r` [4H, H], the batch split in `parts`.
fn forward(gx: &[f32], r: &[f32], bias: &[f32], d: Dims, parts: usize) -> Result<Saved> {
    let (t_len, b, hd) = (d.t_len, d.b, d.hd);
    let mut acts = vec![0f32; t_len * b * 4 * hd];
    let mut c = vec![0f32; t_len * b * hd];
    let mut tc = vec![0f32; t_len * b * hd];
    let mut h = vec![0f32; t_len * b * hd];
    let ranges = batch_parts(b, parts);
    let work: Vec<PartRows> = rows_of(&mut acts, b, 4 * hd, &ranges)
        .into_iter()
        .zip(rows_of(&mut c, b, hd, &ranges))
        .zip(rows_of(&mut tc, b, hd, &ranges))
        .zip(rows_of(&mut h, b, hd, &ranges))
        .zip(&ranges)
        .map(|((((acts, c), tc), h), rows)| PartRows {
            rows: rows.clone(),
            acts,
            c,
            tc,
            h,
        })
        .collect();
    work.into_par_iter()
        .try_for_each(|part| forward_part(gx, r, bias, d, part))?;
    Ok(Saved { acts, c, tc, h })
}

/// [`forward`] on one part's rows.
fn forward_part(gx: &[f32], r: &[f32], bias: &[f32], d: Dims, mut p: PartRows) -> Result<()> {
    let (b, hd, g4) = (d.b, d.hd, 4 * d.hd);
    let rt = Mat::row_major(r, g4, hd).t();
    let nb = p.rows.len();
    // The gates' pre-activations of one step: gx[t] + h[t-1]·rᵀ.
    let mut pre = vec![0f32; nb * g4];
    for t in 0..d.t_len {
        let from = (t * b + p.rows.start) * g4;
        pre.copy_from_slice(&gx[from..from + nb * g4]);
        for row in pre.chunks_exact_mut(g4) {
            row.iter_mut().zip(bias).for_each(|(p, b)| *p += b);
        }
        let (done, now) = p.h.split_at_mut(t);
        let (c_done, c_now) = p.c.split_at_mut(t);
        // The recurrent part (none at the first step: h₋₁ = 0).
        if let Some(h_prev) = done.last() {
            gemm_into(&mut pre, Mat::row_major(h_prev, nb, hd), rt, true)?;
        }
        let (h, c, tc, acts) = (&mut *now[0], &mut *c_now[0], &mut *p.tc[t], &mut *p.acts[t]);
        let c_prev = c_done.last().map(|c| &**c);
        for n in 0..nb {
            let (row, out) = (n * g4, n * hd);
            let (pr, a) = (&pre[row..row + g4], &mut acts[row..row + g4]);
            // Each gate over its whole row, one loop per function: straight-line loops
            // that the compiler vectorises (the gates i, o, f are sigmoids, g a tanh).
            let (sig, g) = a.split_at_mut(3 * hd);
            sig.iter_mut().zip(pr).for_each(|(a, &p)| *a = sigmoid(p));
            g.iter_mut()
                .zip(&pr[3 * hd..])
                .for_each(|(a, &p)| *a = tanh(p));
            let (i, rest) = sig.split_at(hd);
            let (o, f) = rest.split_at(hd);
            let cell = out..out + hd;
            let (c, tc, h) = (
                &mut c[cell.clone()],
                &mut tc[cell.clone()],
                &mut h[cell.clone()],
            );
            // c = f·c₋ + i·g (c₋ = 0 at the first step), then tanh(c) and h = o·tanh(c).
            match c_prev {
                Some(cp) => {
                    for (((c, &cp), &f), (&i, &g)) in
                        c.iter_mut().zip(&cp[cell]).zip(f).zip(i.iter().zip(&*g))
                    {
                        *c = f * cp + i * g;
                    }
                }
                None => c
                    .iter_mut()
                    .zip(i.iter().zip(&*g))
                    .for_each(|(c, (&i, &g))| *c = i * g),
            }
            for (((tc, h), &c), &o) in tc.iter_mut().zip(h.iter_mut()).zip(&*c).zip(o) {
                *tc = tanh(c);
                *h = o * *tc;
            }
        }
    }
    Ok(())
}

/// Backpropagation through time on one part's rows: dL/d(gates) into `dg` (that part's
/// rows of each step), from dL/dY `dy`.
fn backward_part(
    saved: &Saved,
    r: &[f32],
    dy: &[f32],
    d: Dims,
    rows: Range<usize>,
    mut dg: Vec<&mut [f32]>,
) -> Result<()> {
    let (b, hd, g4) = (d.b, d.hd, 4 * d.hd);
    let r_mat = Mat::row_major(r, g4, hd);
    let nb = rows.len();
    let mut dh_next = vec![0f32; nb * hd];
    let mut dc_next = vec![0f32; nb * hd];
    for t in (0..d.t_len).rev() {
        let dg_t = &mut *dg[t];
        for n in 0..nb {
            let row = (t * b + rows.start + n) * g4;
            let out = (t * b + rows.start + n) * hd;
            for j in 0..hd {
                let k = n * hd + j;
                let (i, o, f, g) = (
                    saved.acts[row + j],
                    saved.acts[row + hd + j],
                    saved.acts[row + 2 * hd + j],
                    saved.acts[row + 3 * hd + j],
                );
                let tc = saved.tc[out + j];
                let dh = dy[out + j] + dh_next[k];
                let dc = dc_next[k] + dh * o * (1.0 - tc * tc);
                let c_prev = if t == 0 {
                    0.0
                } else {
                    saved.c[out - b * hd + j]
                };
                let at = n * g4;
                dg_t[at + j] = dc * g * i * (1.0 - i);
                dg_t[at + hd + j] = dh * tc * o * (1.0 - o);
                dg_t[at + 2 * hd + j] = dc * c_prev * f * (1.0 - f);
                dg_t[at + 3 * hd + j] = dc * i * (1.0 - g * g);
                dc_next[k] = dc * f;
            }
        }
        // dh₋ = dG·r (g = h₋·rᵀ); nothing flows before the first step.
        if t > 0 {
            gemm_into(&mut dh_next, Mat::row_major(dg_t, nb, g4), r_mat, false)?;
        }
    }
    Ok(())
}

impl CustomOp3 for LstmSeq {
    fn name(&self) -> &'static str {
        "acceval-fused-lstm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (t_len, b, g4) = l1.shape().dims3()?;
        let hd = self.hidden;
        if b == 0 || hd == 0 {
            candle_core::bail!(
                "fused LSTM: an empty batch or hidden state ({:?})",
                l1.shape()
            );
        }
        if g4 != 4 * hd || l2.shape().dims2()? != (4 * hd, hd) || l3.shape().dims1()? != g4 {
            candle_core::bail!(
                "fused LSTM: gates {:?}, recurrence {:?} and bias {:?} do not fit hidden size {hd}",
                l1.shape(),
                l2.shape(),
                l3.shape()
            );
        }
        let gx = cpu_f32(s1, l1, "fused LSTM: the input gates")?;
        let r = cpu_f32(s2, l2, "fused LSTM: the recurrent weight")?;
        let bias = cpu_f32(s3, l3, "fused LSTM: the bias")?;
        let d = Dims { t_len, b, hd };
        let saved = forward(gx, r, bias, d, self.parts)?;
        let y = CpuStorage::F32(saved.h.clone());
        *self.saved.lock().unwrap_or_else(|e| e.into_inner()) = Some(saved);
        Ok((y, Shape::from((t_len, b, hd))))
    }

    /// Backpropagation through time: from dL/dY [T, B, H], dL/d(gx) [T, B, 4H], dL/dr
    /// [4H, H] and dL/d(bias) [4H].
    fn bwd(
        &self,
        gx: &Tensor,
        r: &Tensor,
        bias: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (t_len, b, g4) = gx.dims3()?;
        let hd = self.hidden;
        let r = r.detach().flatten_all()?.to_vec1::<f32>()?;
        let d = Dims { t_len, b, hd };
        let saved = match self.saved.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(s) => s,
            // Not kept (a second backward over the same graph): run the forward again.
            None => {
                let gx = gx.detach().flatten_all()?.to_vec1::<f32>()?;
                let bias = bias.detach().to_vec1::<f32>()?;
                forward(&gx, &r, &bias, d, self.parts)?
            }
        };
        let dy = grad.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        let mut dg = vec![0f32; t_len * b * g4];
        let ranges = batch_parts(b, self.parts);
        rows_of(&mut dg, b, g4, &ranges)
            .into_iter()
            .zip(ranges.iter().cloned())
            .collect::<Vec<_>>()
            .into_par_iter()
            .try_for_each(|(part, rows)| backward_part(&saved, &r, &dy, d, rows, part))?;
        // dr = Σₜ dGₜᵀ·hₜ₋₁ over t ≥ 1: one matmul over all steps.
        let dr = if t_len > 1 {
            let dgs = Tensor::from_slice(&dg[b * g4..], ((t_len - 1) * b, g4), &Device::Cpu)?;
            let hs = Tensor::from_slice(
                &saved.h[..(t_len - 1) * b * hd],
                ((t_len - 1) * b, hd),
                &Device::Cpu,
            )?;
            dgs.t()?.matmul(&hs)?
        } else {
            Tensor::zeros((g4, hd), DType::F32, &Device::Cpu)?
        };
        // dbias = Σ over steps and samples of dG.
        let mut db = vec![0f32; g4];
        for row in dg.chunks_exact(g4) {
            db.iter_mut().zip(row).for_each(|(d, g)| *d += g);
        }
        let db = Tensor::from_vec(db, g4, &Device::Cpu)?;
        let dgx = Tensor::from_vec(dg, (t_len, b, g4), &Device::Cpu)?;
        Ok((Some(dgx), Some(dr), Some(db)))
    }
}

/// The layer: `x` [T, B, I], ONNX's `w` [1, 4H, I], `r` [1, 4H, H], `bias` [4H] (both
/// biases summed); the hidden state of every step [T, B, H].
pub fn layer(x: &Tensor, w: &Tensor, r: &Tensor, bias: &Tensor, hidden: usize) -> Result<Tensor> {
    layer_with(x, w, r, bias, LstmSeq::new(hidden))
}

/// [`layer`] through `op`.
fn layer_with(x: &Tensor, w: &Tensor, r: &Tensor, bias: &Tensor, op: LstmSeq) -> Result<Tensor> {
    let (t_len, b, i) = x.dims3()?;
    let gx = x
        .reshape((t_len * b, i))?
        .matmul(&w.squeeze(0)?.t()?)?
        .reshape((t_len, b, 4 * op.hidden))?
        .contiguous()?;
    gx.apply_op3(&r.squeeze(0)?.contiguous()?, &bias.contiguous()?, op)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Var;

    use crate::model::build::{Attr, attr, node};
    use crate::train::graph::tests::max_diff;

    /// The trainer's per-step LSTM (candle's ops, autograd through every step) over `x`
    /// with ONNX's two biases `b2` [1, 8H], as reference.
    fn reference(x: &Tensor, w: &Tensor, r: &Tensor, b2: &Tensor, hd: usize) -> Result<Tensor> {
        let n = node(
            "LSTM",
            &["x", "w", "r", "b"],
            &["y", "y_h"],
            vec![attr("hidden_size", Attr::Int(hd as i64))],
        );
        let steps: Vec<Tensor> = (0..x.dim(0)?).map(|t| x.get(t)).collect::<Result<_>>()?;
        let (hs, _) = crate::train::graph::lstm(&n, &steps, w, r, b2)?;
        Tensor::stack(&hs, 0)
    }

    /// A layer's random input `x` [T, B, I], weights `w` [1, 4H, I] and `r` [1, 4H, H], and
    /// loss weights [T, B, H] that weight every step and unit differently.
    struct Fixture {
        x: Var,
        w: Var,
        r: Var,
        weights: Tensor,
    }

    fn fixture(t_len: usize, b: usize, i: usize, hd: usize) -> Result<Fixture> {
        let dev = Device::Cpu;
        let var = |sd: f32, dims: &[usize]| Var::from_tensor(&Tensor::randn(0f32, sd, dims, &dev)?);
        Ok(Fixture {
            x: var(1.0, &[t_len, b, i])?,
            w: var(0.5, &[1, 4 * hd, i])?,
            r: var(0.5, &[1, 4 * hd, hd])?,
            weights: Tensor::randn(0f32, 1.0, (t_len, b, hd), &dev)?,
        })
    }

    #[test]
    fn fused_layer_matches_the_per_step_graph_forward_and_backward() -> Result<()> {
        let hd = 4;
        let Fixture { x, w, r, weights } = fixture(7, 3, 5, hd)?;
        let b2 = Var::from_tensor(&(Tensor::randn(0f32, 0.5, (1, 8 * hd), &Device::Cpu)?))?;
        let sum = b2.squeeze(0)?;
        let bias = (sum.narrow(0, 0, 4 * hd)? + sum.narrow(0, 4 * hd, 4 * hd)?)?;
        let fused = layer(&x, &w, &r, &bias, hd)?;
        let slow = reference(&x, &w, &r, &b2, hd)?;
        assert!(max_diff(&fused, &slow) < 1e-5);
        let gf = (fused * &weights)?.sum_all()?.backward()?;
        let gs = (slow * &weights)?.sum_all()?.backward()?;
        for (name, v) in [("x", &x), ("w", &w), ("r", &r), ("b", &b2)] {
            let (a, b) = (gf.get(v).unwrap(), gs.get(v).unwrap());
            let d = max_diff(a, b);
            assert!(d < 1e-4, "d{name}: {d}");
        }
        Ok(())
    }

    /// The batch split in 1, 2, 3 and 5 parts (uneven ones included) gives the same output
    /// and gradients, to rounding: each sample's recurrence is its own.
    #[test]
    fn split_batch_gives_the_same_output_and_gradients() -> Result<()> {
        let (b, hd) = (11, 8);
        let Fixture { x, w, r, weights } = fixture(6, b, 4, hd)?;
        let bias = Var::from_tensor(&(Tensor::randn(0f32, 0.5, 4 * hd, &Device::Cpu)?))?;
        let run = |parts| -> Result<Vec<Tensor>> {
            let y = layer_with(&x, &w, &r, &bias, LstmSeq::split(hd, parts))?;
            let g = (&y * &weights)?.sum_all()?.backward()?;
            let mut out = vec![y];
            out.extend([&x, &w, &r, &bias].map(|v| g.get(v).unwrap().clone()));
            Ok(out)
        };
        let one = run(1)?;
        for parts in [2, 3, 5] {
            assert_eq!(batch_parts(b, parts).len(), parts);
            for (k, (a, z)) in one.iter().zip(run(parts)?).enumerate() {
                // To rounding: the GEMMs of dh₋ round differently at another row count
                // (1–2e-6 on gradients up to ~20 in 12 of 200 runs at an absolute 1e-6).
                let scale = a.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?.max(1.0);
                let d = max_diff(a, &z);
                assert!(
                    d <= 1e-6 * scale,
                    "{parts} parts, tensor {k}: {d} (scale {scale})"
                );
            }
        }
        Ok(())
    }

    #[test]
    fn one_step_has_no_recurrent_gradient() -> Result<()> {
        let dev = Device::Cpu;
        let x = Tensor::randn(0f32, 1.0, (1, 2, 3), &dev)?;
        let w = Tensor::randn(0f32, 1.0, (1, 8, 3), &dev)?;
        let r = Var::from_tensor(&Tensor::randn(0f32, 1.0, (1, 8, 2), &dev)?)?;
        let bias = Tensor::zeros(8, DType::F32, &dev)?;
        let y = layer(&x, &w, &r, &bias, 2)?;
        let g = y.sum_all()?.backward()?;
        let dr = g.get(&r).unwrap().abs()?.sum_all()?.to_scalar::<f32>()?;
        assert_eq!(dr, 0.0);
        Ok(())
    }
}
