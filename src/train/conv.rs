//! A dense convolution (one group, square kernel, equal stride and padding on both axes) as
//! one candle op with a hand-written backward pass, for the candle trainer on the CPU.
//!
//! Per image it is a matrix product on the image's columns (im2col): Y_n [Co, OH·OW] =
//! W [Co, Ci·k·k] · cols(X_n) [Ci·k·k, OH·OW]; a 1×1 convolution at stride 1 needs no
//! columns, X_n is its own. The backward pass is two products per image, dL/dW += dL/dY_n ·
//! cols(X_n)ᵀ (one partial sum per thread) and dL/dcols = Wᵀ · dL/dY_n, scattered back onto
//! dL/dX_n (col2im). All products run on candle's GEMM (the `gemm` crate) on the tensors'
//! own memory, the images spread over rayon's pool (a batch smaller than the pool gives
//! gemm the threads instead).
//!
//! candle's own kernels were the cost: `broadcast_matmul` for 1×1 copies W per image and
//! sums W's gradient over the images with a strided reduction (12 % of a MobileNetV2 step),
//! and candle's CPU conv2d backward runs the input's gradient as a transposed convolution of
//! dot products and the kernel's as a convolution over transposed tensors (`vec_dot_f32`
//! and their loops were ~40 % of a YOLOv8n step). f32, contiguous, CPU; the trainer keeps
//! candle's ops elsewhere.

use candle_core::{CpuStorage, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use std::ops::Range;

use super::cpu::{Mat, cpu_f32, gemm_with, span, with_f32};

/// Kernel side, stride and padding (the same on both axes).
#[derive(Debug, Clone, Copy)]
pub struct Dense {
    pub k: usize,
    pub s: usize,
    pub p: usize,
}

/// The geometry of one call.
#[derive(Clone, Copy)]
struct Dims {
    n: usize,
    ci: usize,
    co: usize,
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
}

impl Dims {
    /// Rows of an image's columns (Ci·k·k) and their length (OH·OW).
    fn cols(&self, k: usize) -> (usize, usize) {
        (self.ci * k * k, self.oh * self.ow)
    }
}

impl Dense {
    fn dims(&self, x: &[usize], w: &[usize]) -> Result<Dims> {
        let [n, ci, h, wd] = x else {
            candle_core::bail!("convolution: input {x:?} is not N×C×H×W");
        };
        let [co, wci, kh, kw] = w else {
            candle_core::bail!("convolution: weight {w:?} is not Co×Ci×k×k");
        };
        if wci != ci || *kh != self.k || *kw != self.k || self.k == 0 || self.s == 0 {
            candle_core::bail!(
                "convolution: weight {w:?} does not fit {ci} input channels, kernel {}",
                self.k
            );
        }
        let (hp, wp) = (h + 2 * self.p, wd + 2 * self.p);
        if hp < self.k || wp < self.k {
            candle_core::bail!(
                "convolution: kernel {} larger than the padded input",
                self.k
            );
        }
        Ok(Dims {
            n: *n,
            ci: *ci,
            co: *co,
            h: *h,
            w: *wd,
            oh: (hp - self.k) / self.s + 1,
            ow: (wp - self.k) / self.s + 1,
        })
    }

    /// Whether X_n is its own columns (1×1, stride 1, no padding).
    fn direct(&self) -> bool {
        self.k == 1 && self.s == 1 && self.p == 0
    }

    /// Every run of an image's columns that lies inside the image: for column row r =
    /// (c, i, j) and output row oy, `f(r, oy, at, outputs)`: the image's elements from `at`
    /// (C×H×W order), stepping by the stride, meet the columns `outputs` of that output row.
    /// [`Dense::im2col`] and its transpose walk the same runs.
    fn runs(&self, d: Dims, mut f: impl FnMut(usize, usize, usize, Range<usize>)) {
        let k = self.k;
        for r in 0..d.ci * k * k {
            let (c, i, j) = (r / (k * k), r / k % k, r % k);
            let span = span(j, self.s, self.p, d.w, d.ow);
            if span.is_empty() {
                continue;
            }
            let first = span.start * self.s + j - self.p;
            for oy in 0..d.oh {
                let Some(iy) = (oy * self.s + i).checked_sub(self.p).filter(|&v| v < d.h) else {
                    continue;
                };
                f(r, oy, (c * d.h + iy) * d.w + first, span.clone());
            }
        }
    }

    /// An image's columns: row (c, i, j), column (oy, ox) = x[c, oy·s + i − p, ox·s + j − p]
    /// (0 outside the image).
    fn im2col(&self, x: &[f32], d: Dims, cols: &mut [f32]) {
        let olen = d.oh * d.ow;
        cols.fill(0.0);
        self.runs(d, |r, oy, at, outs| {
            let dst = &mut cols[r * olen + oy * d.ow..][outs];
            if self.s == 1 {
                dst.copy_from_slice(&x[at..at + dst.len()]);
            } else {
                for (o, &v) in dst.iter_mut().zip(x[at..].iter().step_by(self.s)) {
                    *o = v;
                }
            }
        });
    }

    /// The columns' gradient added back onto the image's (the transpose of [`Dense::im2col`]).
    fn col2im(&self, dcols: &[f32], d: Dims, dx: &mut [f32]) {
        let olen = d.oh * d.ow;
        self.runs(d, |r, oy, at, outs| {
            let src = &dcols[r * olen + oy * d.ow..][outs];
            if self.s == 1 {
                let dst = &mut dx[at..at + src.len()];
                dst.iter_mut().zip(src).for_each(|(o, &v)| *o += v);
            } else {
                for (o, &v) in dx[at..].iter_mut().step_by(self.s).zip(src) {
                    *o += v;
                }
            }
        });
    }

    /// Whether the images go one per task (else gemm gets the threads).
    fn per_image(d: Dims) -> bool {
        d.n >= rayon::current_num_threads()
    }

    fn forward(&self, x: &[f32], w: &[f32], d: Dims) -> Result<Vec<f32>> {
        let (rows, olen) = d.cols(self.k);
        let wm = Mat::row_major(w, d.co, rows);
        let (xs, ys) = ((d.ci * d.h * d.w).max(1), (d.co * olen).max(1));
        let mut y = vec![0f32; d.n * d.co * olen];
        let one = |yn: &mut [f32], xn: &[f32], cols: &mut Vec<f32>, par| {
            let c = if self.direct() {
                xn
            } else {
                cols.resize(rows * olen, 0.0);
                self.im2col(xn, d, cols);
                cols.as_slice()
            };
            gemm_with(yn, wm, Mat::row_major(c, rows, olen), false, par)
        };
        if Self::per_image(d) {
            y.par_chunks_mut(ys)
                .zip(x.par_chunks(xs))
                .try_for_each_init(Vec::new, |cols, (yn, xn)| {
                    one(yn, xn, cols, gemm::Parallelism::None)
                })?;
        } else {
            let mut cols = Vec::new();
            for (yn, xn) in y.chunks_mut(ys).zip(x.chunks(xs)) {
                one(yn, xn, &mut cols, gemm::Parallelism::Rayon(0))?;
            }
        }
        Ok(y)
    }

    /// dL/dX and dL/dW from dL/dY `g`.
    fn backward(&self, x: &[f32], w: &[f32], g: &[f32], d: Dims) -> Result<(Vec<f32>, Vec<f32>)> {
        let (rows, olen) = d.cols(self.k);
        let wt = Mat::row_major(w, d.co, rows).t();
        let (xs, ys) = ((d.ci * d.h * d.w).max(1), (d.co * olen).max(1));
        let wlen = d.co * rows;
        let mut dx = vec![0f32; d.n * d.ci * d.h * d.w];
        // One image: its dL/dW added to `dw`, its dL/dX written.
        let one = |dw: &mut [f32],
                   bufs: &mut (Vec<f32>, Vec<f32>),
                   dxn: &mut [f32],
                   gn: &[f32],
                   xn: &[f32],
                   par|
         -> Result<()> {
            let gm = Mat::row_major(gn, d.co, olen);
            if self.direct() {
                gemm_with(dw, gm, Mat::row_major(xn, rows, olen).t(), true, par)?;
                return gemm_with(dxn, wt, gm, false, par);
            }
            let (cols, dcols) = bufs;
            cols.resize(rows * olen, 0.0);
            dcols.resize(rows * olen, 0.0);
            self.im2col(xn, d, cols);
            gemm_with(dw, gm, Mat::row_major(cols, rows, olen).t(), true, par)?;
            gemm_with(dcols, wt, gm, false, par)?;
            self.col2im(dcols, d, dxn);
            Ok(())
        };
        let dw = if Self::per_image(d) {
            // A fixed split of the batch, one run of images per thread, and the partial sums
            // added in that order: the same bits on every run (a work-stealing fold would
            // group the images differently from run to run).
            let per = d.n.div_ceil(rayon::current_num_threads()).max(1);
            let partials = dx
                .par_chunks_mut(xs * per)
                .zip(g.par_chunks(ys * per).zip(x.par_chunks(xs * per)))
                .map(|(dxc, (gc, xc))| {
                    let (mut dw, mut bufs) = (vec![0f32; wlen], (Vec::new(), Vec::new()));
                    for (dxn, (gn, xn)) in dxc.chunks_mut(xs).zip(gc.chunks(ys).zip(xc.chunks(xs)))
                    {
                        one(&mut dw, &mut bufs, dxn, gn, xn, gemm::Parallelism::None)?;
                    }
                    Ok(dw)
                })
                .collect::<Result<Vec<_>>>()?;
            let mut dw = vec![0f32; wlen];
            for p in &partials {
                dw.iter_mut().zip(p).for_each(|(a, b)| *a += b);
            }
            dw
        } else {
            let (mut dw, mut bufs) = (vec![0f32; wlen], (Vec::new(), Vec::new()));
            for (dxn, (gn, xn)) in dx.chunks_mut(xs).zip(g.chunks(ys).zip(x.chunks(xs))) {
                one(&mut dw, &mut bufs, dxn, gn, xn, gemm::Parallelism::Rayon(0))?;
            }
            dw
        };
        Ok((dx, dw))
    }
}

impl CustomOp2 for Dense {
    fn name(&self) -> &'static str {
        "acceval-dense-conv"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let d = self.dims(l1.dims(), l2.dims())?;
        let x = cpu_f32(s1, l1, "convolution: the input")?;
        let w = cpu_f32(s2, l2, "convolution: the weight")?;
        let y = self.forward(x, w, d)?;
        Ok((CpuStorage::F32(y), Shape::from((d.n, d.co, d.oh, d.ow))))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let d = self.dims(x.dims(), w.dims())?;
        let grad = grad.contiguous()?;
        let (dx, dw) = with_f32(x, "the input", |xv| {
            with_f32(w, "the weight", |wv| {
                with_f32(&grad, "the gradient", |g| self.backward(xv, wv, g, d))
            })
        })?;
        let dx = Tensor::from_vec(dx, x.shape(), x.device())?;
        let dw = Tensor::from_vec(dw, w.shape(), w.device())?;
        Ok((Some(dx), Some(dw)))
    }
}

/// The convolution of `x` [N, Ci, H, W] with `w` [Co, Ci, k, k].
pub fn conv(x: &Tensor, w: &Tensor, op: Dense) -> Result<Tensor> {
    super::cpu::apply2(x, w, op)
}

#[cfg(test)]
mod tests {
    use super::super::graph::tests::max_diff as diff;
    use super::*;
    use candle_core::{Device, Var};

    /// Output and both gradients against candle's own conv2d: 1×1 (no columns), 3×3 at
    /// strides 1 and 2 with and without padding, an input smaller than the kernel's reach,
    /// at a batch larger than the thread count and at batch 1 (gemm's threads). Where the
    /// stride leaves input rows unread (8 × 7 at stride 2), candle 0.11's conv2d backward
    /// returns a gradient of the wrong shape ([1, 7, 8, 8]), so there only the outputs are
    /// compared.
    #[test]
    fn output_and_gradients_are_candles_conv2d() {
        let dev = Device::Cpu;
        let cases = [
            (1, 1, 0, 9, 11),
            (3, 1, 1, 9, 11),
            (3, 2, 1, 9, 11),
            (3, 2, 0, 9, 7),
            (3, 1, 2, 2, 3),
            (5, 2, 2, 7, 7),
            (3, 2, 0, 8, 7),
            (5, 2, 2, 6, 6),
        ];
        for n in [1, 5] {
            for (k, s, p, h, wd) in cases {
                let x = Var::from_tensor(&Tensor::randn(0f32, 1.0, (n, 7, h, wd), &dev).unwrap())
                    .unwrap();
                let w = Var::from_tensor(&Tensor::randn(0f32, 1.0, (13, 7, k, k), &dev).unwrap())
                    .unwrap();
                let a = conv(x.as_tensor(), w.as_tensor(), Dense { k, s, p }).unwrap();
                let b = x.as_tensor().conv2d(w.as_tensor(), p, s, 1, 1).unwrap();
                let at = format!("batch {n}, k {k} s {s} p {p}, {h}×{wd}");
                assert_eq!(a.dims(), b.dims(), "{at}");
                assert!(diff(&a, &b) < 1e-3, "forward at {at}");
                if (h + 2 * p - k) % s != 0 || (wd + 2 * p - k) % s != 0 {
                    continue;
                }
                let wgt = Tensor::randn(0f32, 1.0, a.dims(), &dev).unwrap();
                let ga = (a * &wgt).unwrap().sum_all().unwrap().backward().unwrap();
                let gb = (b * &wgt).unwrap().sum_all().unwrap().backward().unwrap();
                for (v, what) in [(&x, "dL/dx"), (&w, "dL/dw")] {
                    let e = diff(
                        ga.get(v.as_tensor()).unwrap(),
                        gb.get(v.as_tensor()).unwrap(),
                    );
                    assert!(e < 1e-3, "{what} at {at} differs by {e}");
                }
            }
        }
    }

    #[test]
    fn a_weight_that_does_not_fit_is_an_error() {
        let dev = Device::Cpu;
        let x = Tensor::zeros((1, 3, 4, 4), candle_core::DType::F32, &dev).unwrap();
        let w = Tensor::zeros((2, 4, 1, 1), candle_core::DType::F32, &dev).unwrap();
        let e = conv(&x, &w, Dense { k: 1, s: 1, p: 0 }).unwrap_err();
        assert!(
            e.to_string().contains("does not fit 3 input channels"),
            "{e}"
        );
    }
}
