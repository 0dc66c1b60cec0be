//! A depthwise convolution (one k × k filter per channel, ONNX `Conv` with `group` = channels)
//! as one candle op with a hand-written backward pass, for the candle trainer on the CPU.
//!
//! candle runs a grouped convolution as one convolution per channel; the trainer built it
//! from k² shifted views multiplied and added instead, and candle's backward of each view (a
//! `narrow`) allocates a zero-padded gradient of the whole activation: perf on
//! `mobilenetv2-meter` showed 39 % of a step in the kernel zeroing fresh pages, and the step
//! was 33× PyTorch's. Here the forward, dL/dx and dL/dw are direct loops over each channel
//! plane, spread over candle's thread pool by plane (dL/dw: by channel, summed over the batch).
//! Square kernels, equal stride and padding on both axes, f32 (what the zoo's graphs use);
//! otherwise the trainer keeps its general path.

use candle_core::{CpuStorage, CustomOp2, DType, Device, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

/// Kernel side, stride and padding (the same on both axes).
#[derive(Debug, Clone, Copy)]
pub struct Depthwise {
    pub k: usize,
    pub s: usize,
    pub p: usize,
}

/// Whether the fused op runs for tensors of this dtype on this device.
pub fn supported(dtype: DType, device: &Device) -> bool {
    dtype == DType::F32 && device.is_cpu()
}

/// The geometry of one call.
#[derive(Clone, Copy)]
struct Dims {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
}

impl Depthwise {
    fn dims(&self, x: &[usize], w: &[usize]) -> Result<Dims> {
        let [n, c, h, wd] = x else {
            candle_core::bail!("depthwise: input {x:?} is not N×C×H×W");
        };
        if w != [*c, 1, self.k, self.k] || self.s == 0 || self.k == 0 {
            candle_core::bail!(
                "depthwise: weight {w:?} does not fit {c} channels, kernel {}",
                self.k
            );
        }
        let (hp, wp) = (h + 2 * self.p, wd + 2 * self.p);
        if hp < self.k || wp < self.k {
            candle_core::bail!("depthwise: kernel {} larger than the padded input", self.k);
        }
        Ok(Dims {
            n: *n,
            c: *c,
            h: *h,
            w: *wd,
            oh: (hp - self.k) / self.s + 1,
            ow: (wp - self.k) / self.s + 1,
        })
    }

    /// The padded plane the loops run on (see [`Wide`]).
    fn wide(&self, d: Dims) -> Wide {
        Wide {
            k: self.k,
            s: self.s,
            p: self.p,
            w: d.w,
            oh: d.oh,
            ow: d.ow,
            wp: d.w + 2 * self.p,
        }
    }

    /// Output planes from input planes (`x`, per (n, c)) and the channels' filters.
    fn forward(&self, x: &[f32], w: &[f32], d: Dims) -> Vec<f32> {
        let (k, plane_in, plane_out) = (self.k, d.h * d.w, d.oh * d.ow);
        let g = self.wide(d);
        let mut y = vec![0f32; d.n * d.c * plane_out];
        y.par_chunks_mut(plane_out).enumerate().for_each_init(
            || (vec![0f32; g.in_len()], vec![0f32; g.out_len()]),
            |(xp, acc), (nc, out)| {
                g.pad(&x[nc * plane_in..(nc + 1) * plane_in], xp);
                acc.fill(0.0);
                let f = &w[(nc % d.c) * k * k..(nc % d.c + 1) * k * k];
                for (tap, &wt) in f.iter().enumerate() {
                    let src = &xp[g.tap(tap)..];
                    if g.s == 1 {
                        let n = acc.len();
                        axpy(acc, &src[..n], wt);
                    } else {
                        for (o, &v) in acc.iter_mut().zip(src.iter().step_by(g.s)) {
                            *o += wt * v;
                        }
                    }
                }
                for (orow, arow) in out.chunks_exact_mut(d.ow).zip(acc.chunks(g.wp)) {
                    orow.copy_from_slice(&arow[..d.ow]);
                }
            },
        );
        y
    }
}

/// One channel plane laid out so that each of the k² taps is a single loop over the whole
/// plane rather than one short loop per output row (rows are 3 to 48 wide in the zoo's
/// graphs, and the per-row bounds work was half of the old loops' time, perf). The input is
/// copied with its zero padding into rows of pitch `wp` = W + 2p, and the outputs are
/// computed at the same pitch: output (oy, ox) at q = oy·wp + ox reads tap (i, j) at
/// s·q + i·wp + j, so tap (i, j) is `out[q] += w_ij · xp[s·q + i·wp + j]` for every q. The
/// columns ox ≥ OW are not outputs (they read across a row's end) and are dropped; on the
/// backward pass dL/dy is zero there, so they add nothing.
#[derive(Clone, Copy)]
struct Wide {
    k: usize,
    s: usize,
    p: usize,
    w: usize,
    oh: usize,
    ow: usize,
    wp: usize,
}

impl Wide {
    /// The padded input's length: s·OH + k rows, enough for the last wide output's last tap
    /// ((OH + k − 1)·wp + k − 1 − s < (s·OH + k)·wp since wp ≥ k) and for the padded input
    /// (s·OH + k ≥ H + 2p + 1).
    fn in_len(&self) -> usize {
        (self.s * self.oh + self.k) * self.wp
    }

    /// The wide output's length.
    fn out_len(&self) -> usize {
        self.oh * self.wp
    }

    /// Where tap `tap` (= i·k + j) starts in the padded input.
    fn tap(&self, tap: usize) -> usize {
        (tap / self.k) * self.wp + tap % self.k
    }

    /// `plane` (H × W) into `xp` with its zero padding.
    fn pad(&self, plane: &[f32], xp: &mut [f32]) {
        xp.fill(0.0);
        for (y, row) in plane.chunks_exact(self.w).enumerate() {
            let at = (y + self.p) * self.wp + self.p;
            xp[at..at + self.w].copy_from_slice(row);
        }
    }

    /// dL/dy's plane (OH × OW) into `wide` at pitch wp, zero in the columns past OW.
    fn widen(&self, plane: &[f32], wide: &mut [f32]) {
        for (wrow, row) in wide
            .chunks_exact_mut(self.wp)
            .zip(plane.chunks_exact(self.ow))
        {
            wrow[..self.ow].copy_from_slice(row);
            wrow[self.ow..].fill(0.0);
        }
    }

    /// The padded plane `xp`'s inside (H × W) into `plane`.
    fn crop(&self, xp: &[f32], plane: &mut [f32]) {
        for (y, row) in plane.chunks_exact_mut(self.w).enumerate() {
            let at = (y + self.p) * self.wp + self.p;
            row.copy_from_slice(&xp[at..at + self.w]);
        }
    }
}

/// dst += a · src, elementwise.
fn axpy(dst: &mut [f32], src: &[f32], a: f32) {
    for (d, &v) in dst.iter_mut().zip(src) {
        *d += a * v;
    }
}

impl CustomOp2 for Depthwise {
    fn name(&self) -> &'static str {
        "acceval-depthwise-conv"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let d = self.dims(l1.dims(), l2.dims())?;
        let x = super::cpu::cpu_f32(s1, l1, "depthwise: the input")?;
        let w = super::cpu::cpu_f32(s2, l2, "depthwise: the weight")?;
        let y = self.forward(x, w, d);
        Ok((CpuStorage::F32(y), Shape::from((d.n, d.c, d.oh, d.ow))))
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
        let (dx, dw) = super::cpu::with_f32(x, "depthwise: the input", |xv| {
            super::cpu::with_f32(w, "depthwise: the weight", |wv| {
                super::cpu::with_f32(&grad, "depthwise: the gradient", |dy| {
                    Ok(self.backward(xv, wv, dy, d))
                })
            })
        })?;
        let dx = Tensor::from_vec(dx, x.shape(), &Device::Cpu)?;
        let dw = Tensor::from_vec(dw, w.shape(), &Device::Cpu)?;
        Ok((Some(dx), Some(dw)))
    }
}

impl Depthwise {
    /// dL/dx and dL/dw from dL/dy `dy`.
    fn backward(&self, xv: &[f32], wv: &[f32], dy: &[f32], d: Dims) -> (Vec<f32>, Vec<f32>) {
        let (k, plane_in, plane_out) = (self.k, d.h * d.w, d.oh * d.ow);
        let g = self.wide(d);
        // dL/dx: every output's gradient back to the inputs its filter read.
        let mut dx = vec![0f32; d.n * d.c * plane_in];
        dx.par_chunks_mut(plane_in).enumerate().for_each_init(
            || (vec![0f32; g.in_len()], vec![0f32; g.out_len()]),
            |(dxp, gw), (nc, gin)| {
                g.widen(&dy[nc * plane_out..(nc + 1) * plane_out], gw);
                dxp.fill(0.0);
                let f = &wv[(nc % d.c) * k * k..(nc % d.c + 1) * k * k];
                for (tap, &wt) in f.iter().enumerate() {
                    let dst = &mut dxp[g.tap(tap)..];
                    if g.s == 1 {
                        let n = gw.len();
                        axpy(&mut dst[..n], gw, wt);
                    } else {
                        for (o, &v) in dst.iter_mut().step_by(g.s).zip(gw.iter()) {
                            *o += wt * v;
                        }
                    }
                }
                g.crop(dxp, gin);
            },
        );
        // dL/dw: per channel, summed over the batch in order.
        let mut dw = vec![0f32; d.c * k * k];
        dw.par_chunks_mut(k * k).enumerate().for_each_init(
            || (vec![0f32; g.in_len()], vec![0f32; g.out_len()]),
            |(xp, gw), (c, gwt)| {
                for n in 0..d.n {
                    let nc = n * d.c + c;
                    g.pad(&xv[nc * plane_in..(nc + 1) * plane_in], xp);
                    g.widen(&dy[nc * plane_out..(nc + 1) * plane_out], gw);
                    for (tap, acc) in gwt.iter_mut().enumerate() {
                        let src = &xp[g.tap(tap)..];
                        *acc += if g.s == 1 {
                            super::cpu::dot(gw, &src[..gw.len()])
                        } else {
                            gw.iter()
                                .zip(src.iter().step_by(g.s))
                                .map(|(a, b)| a * b)
                                .sum()
                        };
                    }
                }
            },
        );
        (dx, dw)
    }
}

/// The depthwise convolution of `x` [N, C, H, W] with `w` [C, 1, k, k].
pub fn conv(x: &Tensor, w: &Tensor, op: Depthwise) -> Result<Tensor> {
    super::cpu::apply2(x, w, op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_weight_of_the_wrong_shape_is_an_error() {
        let dev = Device::Cpu;
        let x = Tensor::zeros((1, 3, 4, 4), DType::F32, &dev).unwrap();
        let w = Tensor::zeros((2, 1, 3, 3), DType::F32, &dev).unwrap();
        let e = conv(&x, &w, Depthwise { k: 3, s: 1, p: 1 }).unwrap_err();
        assert!(e.to_string().contains("does not fit 3 channels"), "{e}");
    }
}
