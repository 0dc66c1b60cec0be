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

use std::sync::Mutex;

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
    saved: Mutex<Option<Saved>>,
}

impl LstmSeq {
    pub fn new(hidden: usize) -> LstmSeq {
        LstmSeq {
            hidden,
            saved: Mutex::new(None),
        }
    }
}

/// Whether the fused layer runs for tensors of this dtype on this device.
pub fn supported(dtype: DType, device: &Device) -> bool {
    dtype == DType::F32 && device.is_cpu()
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// tanh from one `exp` of a non-positive argument (no overflow): `f32::tanh` is libm's
/// `tanhf` through `expm1f`, measured at 18 % of a training step here (perf), against 2 %
/// for `expf`. Absolute error ≲ 1e-7 (the subtraction `1 − e` near x = 0), well inside what
/// training needs; the test below holds the layer to candle's `tanh` within 1e-5.
fn tanh(x: f32) -> f32 {
    let e = (-2.0 * x.abs()).exp();
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

/// The forward recurrence over `gx` [T, B, 4H] plus `bias` [4H], with the recurrent weight
/// `r` [4H, H].
fn forward(
    gx: &[f32],
    r: &[f32],
    bias: &[f32],
    t_len: usize,
    b: usize,
    hd: usize,
) -> Result<Saved> {
    let g4 = 4 * hd;
    let rt = Mat::row_major(r, g4, hd).t();
    // The gates' pre-activations of one step: gx[t] + h[t-1]·rᵀ.
    let mut pre = vec![0f32; b * g4];
    let mut acts = vec![0f32; t_len * b * g4];
    let mut c = vec![0f32; t_len * b * hd];
    let mut tc = vec![0f32; t_len * b * hd];
    let mut h = vec![0f32; t_len * b * hd];
    for t in 0..t_len {
        pre.copy_from_slice(&gx[t * b * g4..(t + 1) * b * g4]);
        for row in pre.chunks_exact_mut(g4) {
            row.iter_mut().zip(bias).for_each(|(p, b)| *p += b);
        }
        // The recurrent part (none at the first step: h₋₁ = 0).
        if t > 0 {
            let h_prev = Mat::row_major(&h[(t - 1) * b * hd..t * b * hd], b, hd);
            gemm_into(&mut pre, h_prev, rt, true)?;
        }
        for n in 0..b {
            let row = (t * b + n) * g4;
            let out = (t * b + n) * hd;
            let p = &pre[n * g4..(n + 1) * g4];
            for j in 0..hd {
                let i = sigmoid(p[j]);
                let o = sigmoid(p[hd + j]);
                let f = sigmoid(p[2 * hd + j]);
                let g = tanh(p[3 * hd + j]);
                let c_prev = if t == 0 { 0.0 } else { c[out - b * hd + j] };
                let ct = f * c_prev + i * g;
                let t_c = tanh(ct);
                c[out + j] = ct;
                tc[out + j] = t_c;
                h[out + j] = o * t_c;
                acts[row + j] = i;
                acts[row + hd + j] = o;
                acts[row + 2 * hd + j] = f;
                acts[row + 3 * hd + j] = g;
            }
        }
    }
    Ok(Saved { acts, c, tc, h })
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
        let saved = forward(gx, r, bias, t_len, b, hd)?;
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
        let saved = match self.saved.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(s) => s,
            // Not kept (a second backward over the same graph): run the forward again.
            None => {
                let gx = gx.detach().flatten_all()?.to_vec1::<f32>()?;
                let bias = bias.detach().to_vec1::<f32>()?;
                forward(&gx, &r, &bias, t_len, b, hd)?
            }
        };
        let r_mat = Mat::row_major(&r, g4, hd);
        let dy = grad.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        let mut dg = vec![0f32; t_len * b * g4];
        let mut dh_next = vec![0f32; b * hd];
        let mut dc_next = vec![0f32; b * hd];
        for t in (0..t_len).rev() {
            for n in 0..b {
                let row = (t * b + n) * g4;
                let out = (t * b + n) * hd;
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
                    dg[row + j] = dc * g * i * (1.0 - i);
                    dg[row + hd + j] = dh * tc * o * (1.0 - o);
                    dg[row + 2 * hd + j] = dc * c_prev * f * (1.0 - f);
                    dg[row + 3 * hd + j] = dc * i * (1.0 - g * g);
                    dc_next[k] = dc * f;
                }
            }
            // dh₋ = dG·r (g = h₋·rᵀ); nothing flows before the first step.
            if t > 0 {
                let dg_t = Mat::row_major(&dg[t * b * g4..(t + 1) * b * g4], b, g4);
                gemm_into(&mut dh_next, dg_t, r_mat, false)?;
            }
        }
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
    let (t_len, b, i) = x.dims3()?;
    let gx = x
        .reshape((t_len * b, i))?
        .matmul(&w.squeeze(0)?.t()?)?
        .reshape((t_len, b, 4 * hidden))?
        .contiguous()?;
    gx.apply_op3(
        &r.squeeze(0)?.contiguous()?,
        &bias.contiguous()?,
        LstmSeq::new(hidden),
    )
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

    #[test]
    fn fused_layer_matches_the_per_step_graph_forward_and_backward() -> Result<()> {
        let dev = Device::Cpu;
        let (t_len, b, i, hd) = (7, 3, 5, 4);
        let x = Var::from_tensor(&(Tensor::randn(0f32, 1.0, (t_len, b, i), &dev)?))?;
        let w = Var::from_tensor(&(Tensor::randn(0f32, 0.5, (1, 4 * hd, i), &dev)?))?;
        let r = Var::from_tensor(&(Tensor::randn(0f32, 0.5, (1, 4 * hd, hd), &dev)?))?;
        let b2 = Var::from_tensor(&(Tensor::randn(0f32, 0.5, (1, 8 * hd), &dev)?))?;
        // A loss that weights every step and unit differently.
        let weights = Tensor::randn(0f32, 1.0, (t_len, b, hd), &dev)?;
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
