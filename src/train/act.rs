//! A convolution's bias and activation as one candle op with a hand-written backward pass,
//! for the candle trainer on the CPU.
//!
//! Built from candle's ops, `Clip(Conv(x) + b, 0, 6)` is a broadcast add and a `maximum`
//! and a `minimum` against full-size bound tensors, and candle's backward of each bound is
//! two equality masks, two casts, two products, two divisions and two accumulations, all
//! of the whole activation; the bias's gradient is a strided reduction over the broadcast
//! axes. perf on `mobilenetv2-meter` (batch 32, 96 px) put 80 % of a step in those
//! elementwise kernels and their fresh pages, 2 % in the matrix products. Here the forward is
//! one pass, y = act(x + b[c]), and the backward one pass that gives dL/dx and, per
//! channel, dL/db. The gradients are PyTorch's for the same graph (`train::torch` runs it
//! on libtorch): `clamp` passes the gradient where lo ≤ x + b ≤ hi, `relu` where the
//! output is above 0, SiLU (`x · sigmoid(x)`) is s + x·s·(1 − s) with s = sigmoid(x).
//! f32, contiguous, CPU; the trainer keeps candle's ops elsewhere.

use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

/// Whether the fused op runs for tensors of this dtype on this device.
pub fn supported(dtype: candle_core::DType, device: &candle_core::Device) -> bool {
    dtype == candle_core::DType::F32 && device.is_cpu()
}

/// The activation after the bias.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Act {
    /// None: the op is the bias add alone.
    Identity,
    Relu,
    /// ONNX `Clip` with constant bounds.
    Clip(f32, f32),
    /// `x · sigmoid(x)` (ONNX `Sigmoid` and `Mul` on the same input).
    Silu,
}

impl Act {
    #[inline(always)]
    fn apply(self, z: f32) -> f32 {
        match self {
            Act::Identity => z,
            Act::Relu => z.max(0.0),
            Act::Clip(lo, hi) => z.max(lo).min(hi),
            Act::Silu => z / (1.0 + super::cpu::exp(-z)),
        }
    }

    /// dL/dz from dL/dy at the pre-activation z.
    #[inline(always)]
    fn back(self, z: f32, g: f32) -> f32 {
        match self {
            Act::Identity => g,
            Act::Relu => {
                if z > 0.0 {
                    g
                } else {
                    0.0
                }
            }
            Act::Clip(lo, hi) => {
                if z >= lo && z <= hi {
                    g
                } else {
                    0.0
                }
            }
            Act::Silu => {
                let s = 1.0 / (1.0 + super::cpu::exp(-z));
                g * s + g * z * (s * (1.0 - s))
            }
        }
    }
}

/// The elements of one task: planes are grouped so a task is at least this long.
const MIN_TASK: usize = 16 * 1024;

/// How many (n, c) planes one task takes.
fn planes_per_task(plane: usize) -> usize {
    MIN_TASK.div_ceil(plane.max(1)).max(1)
}

/// Runs `$run` (a generic function's name) with the activation's forward or backward as a
/// closure on a known variant, so each activation gets its own loop that the compiler can
/// vectorise (with the `match` inside the loop, the bias gradient's loop stayed scalar).
macro_rules! per_act {
    ($act:expr, $method:ident, $run:ident($($arg:expr),*)) => {
        match $act {
            Act::Identity => $run(|z, g| Act::Identity.$method(z, g), $($arg),*),
            Act::Relu => $run(|z, g| Act::Relu.$method(z, g), $($arg),*),
            Act::Clip(lo, hi) => $run(move |z, g| Act::Clip(lo, hi).$method(z, g), $($arg),*),
            Act::Silu => $run(|z, g| Act::Silu.$method(z, g), $($arg),*),
        }
    };
}

impl Act {
    /// [`Act::apply`] in the shape [`per_act`] calls (the second argument unused).
    #[inline(always)]
    fn apply_first(self, z: f32, _: f32) -> f32 {
        self.apply(z)
    }
}

/// y = act(x + b[c]) over planes of `plane` elements, channel `c` = plane index mod `c`.
fn forward(act: Act, x: &[f32], b: Option<&[f32]>, c: usize, plane: usize) -> Vec<f32> {
    per_act!(act, apply_first, forward_with(x, b, c, plane))
}

fn forward_with(
    f: impl Fn(f32, f32) -> f32 + Sync,
    x: &[f32],
    b: Option<&[f32]>,
    c: usize,
    plane: usize,
) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    let per = planes_per_task(plane);
    y.par_chunks_mut(plane * per)
        .zip(x.par_chunks(plane * per))
        .enumerate()
        .for_each(|(t, (ys, xs))| {
            for (k, (yp, xp)) in ys.chunks_mut(plane).zip(xs.chunks(plane)).enumerate() {
                let bias = b.map_or(0.0, |b| b[(t * per + k) % c]);
                for (o, &v) in yp.iter_mut().zip(xp) {
                    *o = f(v + bias, 0.0);
                }
            }
        });
    y
}

/// dL/dx and each plane's sum of it (for dL/db), from dL/dy `g`.
fn backward(
    act: Act,
    x: &[f32],
    b: Option<&[f32]>,
    g: &[f32],
    c: usize,
    plane: usize,
) -> (Vec<f32>, Vec<f64>) {
    per_act!(act, back, backward_with(x, b, g, c, plane))
}

fn backward_with(
    back: impl Fn(f32, f32) -> f32 + Sync,
    x: &[f32],
    b: Option<&[f32]>,
    g: &[f32],
    c: usize,
    plane: usize,
) -> (Vec<f32>, Vec<f64>) {
    let mut dx = vec![0f32; x.len()];
    let mut sums = vec![0f64; x.len() / plane.max(1)];
    let per = planes_per_task(plane);
    dx.par_chunks_mut(plane * per)
        .zip(sums.par_chunks_mut(per))
        .zip(x.par_chunks(plane * per).zip(g.par_chunks(plane * per)))
        .enumerate()
        .for_each(|(t, ((dxs, ss), (xs, gs)))| {
            let planes = dxs
                .chunks_mut(plane)
                .zip(xs.chunks(plane).zip(gs.chunks(plane)));
            for (k, ((dp, (xp, gp)), s)) in planes.zip(ss.iter_mut()).enumerate() {
                let bias = b.map_or(0.0, |b| b[(t * per + k) % c]);
                for ((o, &v), &gv) in dp.iter_mut().zip(xp).zip(gp) {
                    *o = back(v + bias, gv);
                }
                *s = f64::from(super::cpu::sum(dp));
            }
        });
    (dx, sums)
}

/// The channel count and plane size of an [N, C, ...] layout.
fn geometry(dims: &[usize]) -> Result<(usize, usize)> {
    let [n, c, rest @ ..] = dims else {
        candle_core::bail!("bias and activation: input {dims:?} has no channel axis");
    };
    let plane: usize = rest.iter().product();
    if *n == 0 || *c == 0 || plane == 0 {
        candle_core::bail!("bias and activation: empty input {dims:?}");
    }
    Ok((*c, plane))
}

/// Bias and activation: `(x [N, C, ...], b [C]) → act(x + b)`.
#[derive(Debug, Clone, Copy)]
pub struct BiasAct(pub Act);

impl CustomOp2 for BiasAct {
    fn name(&self) -> &'static str {
        "acceval-bias-activation"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (c, plane) = geometry(l1.dims())?;
        if l2.dims().iter().product::<usize>() != c {
            candle_core::bail!("bias and activation: bias {:?} for {c} channels", l2.dims());
        }
        let x = super::cpu::cpu_f32(s1, l1, "bias and activation: the input")?;
        let b = super::cpu::cpu_f32(s2, l2, "bias and activation: the bias")?;
        let y = forward(self.0, x, Some(b), c, plane);
        Ok((CpuStorage::F32(y), l1.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let (c, plane) = geometry(x.dims())?;
        let grad = grad.contiguous()?;
        let (dx, sums) = if self.0 == Act::Identity {
            // dL/dx is dL/dy itself; only the bias needs a pass.
            let sums = super::cpu::with_f32(&grad, "the gradient", |g| {
                Ok(g.par_chunks(plane)
                    .map(|p| f64::from(super::cpu::sum(p)))
                    .collect())
            })?;
            (grad.clone(), sums)
        } else {
            let (dx, sums) = super::cpu::with_f32(x, "the input", |xv| {
                super::cpu::with_f32(b, "the bias", |bv| {
                    super::cpu::with_f32(&grad, "the gradient", |g| {
                        Ok(backward(self.0, xv, Some(bv), g, c, plane))
                    })
                })
            })?;
            (Tensor::from_vec(dx, x.shape(), x.device())?, sums)
        };
        let mut db = vec![0f64; c];
        for (i, s) in sums.iter().enumerate() {
            db[i % c] += s;
        }
        let db: Vec<f32> = db.into_iter().map(|v| v as f32).collect();
        let db = Tensor::from_vec(db, b.shape(), b.device())?;
        Ok((Some(dx), Some(db)))
    }
}

/// An activation alone: `x [N, C, ...] → act(x)`.
#[derive(Debug, Clone, Copy)]
pub struct ActOnly(pub Act);

impl CustomOp1 for ActOnly {
    fn name(&self) -> &'static str {
        "acceval-activation"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (c, plane) = geometry(l.dims())?;
        let x = super::cpu::cpu_f32(s, l, "activation: the input")?;
        Ok((
            CpuStorage::F32(forward(self.0, x, None, c, plane)),
            l.shape().clone(),
        ))
    }

    fn bwd(&self, x: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        let (c, plane) = geometry(x.dims())?;
        let grad = grad.contiguous()?;
        let dx = super::cpu::with_f32(x, "the input", |xv| {
            super::cpu::with_f32(&grad, "the gradient", |g| {
                Ok(backward(self.0, xv, None, g, c, plane).0)
            })
        })?;
        Ok(Some(Tensor::from_vec(dx, x.shape(), x.device())?))
    }
}

/// act(x + b) with `b` [C] (or act(x) without one) on `x` [N, C, ...]: the fused op.
pub fn apply(x: &Tensor, b: Option<&Tensor>, act: Act) -> Result<Tensor> {
    let x = x.contiguous()?;
    match b {
        Some(b) => x.apply_op2(&b.contiguous()?, BiasAct(act)),
        None => x.apply_op1(ActOnly(act)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::graph::tests::max_diff as diff;
    use super::*;
    use candle_core::{Device, Var};

    /// The fused op's output and gradients against candle's own ops on the same graph
    /// (`x + b` broadcast, then the activation), for each activation, with and without a
    /// bias, on planes that straddle the tasks' boundaries.
    #[test]
    fn fused_forward_and_gradients_are_candles_ops() {
        let dev = Device::Cpu;
        let shape = (3, 5, 37, 41);
        let x = Var::from_tensor(&(Tensor::randn(0f32, 3.0, shape, &dev).unwrap())).unwrap();
        let b = Var::from_tensor(&Tensor::randn(0f32, 1.0, 5, &dev).unwrap()).unwrap();
        // A weighting so every element's gradient differs.
        let wgt = Tensor::randn(0f32, 1.0, shape, &dev).unwrap();
        let reference = |z: &Tensor, act: Act| -> Tensor {
            match act {
                Act::Identity => z.clone(),
                Act::Relu => z.relu().unwrap(),
                Act::Clip(lo, hi) => z.clamp(lo, hi).unwrap(),
                Act::Silu => (z * candle_nn::ops::sigmoid(z).unwrap()).unwrap(),
            }
        };
        for act in [Act::Identity, Act::Relu, Act::Clip(0.0, 6.0), Act::Silu] {
            for with_bias in [true, false] {
                let bias = with_bias.then(|| b.as_tensor());
                let y = apply(x.as_tensor(), bias, act).unwrap();
                let z = match bias {
                    Some(b) => x.broadcast_add(&b.reshape((1, 5, 1, 1)).unwrap()).unwrap(),
                    None => x.as_tensor().clone(),
                };
                let r = reference(&z, act);
                assert!(diff(&y, &r) < 1e-5, "{act:?} bias {with_bias}: forward");
                let g1 = (y * &wgt).unwrap().sum_all().unwrap().backward().unwrap();
                let g2 = (r * &wgt).unwrap().sum_all().unwrap().backward().unwrap();
                let dx = diff(
                    g1.get(x.as_tensor()).unwrap(),
                    g2.get(x.as_tensor()).unwrap(),
                );
                assert!(dx < 1e-5, "{act:?} bias {with_bias}: dL/dx differs by {dx}");
                if with_bias {
                    let (d1, d2) = (
                        g1.get(b.as_tensor()).unwrap(),
                        g2.get(b.as_tensor()).unwrap(),
                    );
                    let db = diff(d1, d2);
                    assert!(db < 1e-3, "{act:?}: dL/db differs by {db}");
                }
            }
        }
    }

    #[test]
    fn a_bias_of_the_wrong_length_is_an_error() {
        let dev = Device::Cpu;
        let x = Tensor::zeros((1, 3, 4, 4), candle_core::DType::F32, &dev).unwrap();
        let b = Tensor::zeros(2, candle_core::DType::F32, &dev).unwrap();
        let e = apply(&x, Some(&b), Act::Relu).unwrap_err();
        assert!(e.to_string().contains("for 3 channels"), "{e}");
    }
}
