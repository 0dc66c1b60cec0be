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

    /// The input position of output `o` and tap `i` on one axis, if inside the input.
    fn at(&self, o: usize, i: usize, len: usize) -> Option<usize> {
        (o * self.s + i).checked_sub(self.p).filter(|&v| v < len)
    }

    /// Output planes from input planes (`x`, per (n, c)) and the channels' filters.
    fn forward(&self, x: &[f32], w: &[f32], d: Dims) -> Vec<f32> {
        let (k, plane_in, plane_out) = (self.k, d.h * d.w, d.oh * d.ow);
        let mut y = vec![0f32; d.n * d.c * plane_out];
        y.par_chunks_mut(plane_out)
            .enumerate()
            .for_each(|(nc, out)| {
                let xin = &x[nc * plane_in..(nc + 1) * plane_in];
                let f = &w[(nc % d.c) * k * k..(nc % d.c + 1) * k * k];
                for oy in 0..d.oh {
                    for i in 0..k {
                        let Some(iy) = self.at(oy, i, d.h) else {
                            continue;
                        };
                        let row = &xin[iy * d.w..(iy + 1) * d.w];
                        let orow = &mut out[oy * d.ow..(oy + 1) * d.ow];
                        for j in 0..k {
                            let wij = f[i * k + j];
                            let r = super::cpu::span(j, self.s, self.p, d.w, d.ow);
                            if r.is_empty() {
                                continue;
                            }
                            let first = r.start * self.s + j - self.p;
                            if self.s == 1 {
                                let src = &row[first..first + r.len()];
                                for (o, &v) in orow[r].iter_mut().zip(src) {
                                    *o += wij * v;
                                }
                            } else {
                                let src = row[first..].iter().step_by(self.s);
                                for (o, &v) in orow[r].iter_mut().zip(src) {
                                    *o += wij * v;
                                }
                            }
                        }
                    }
                }
            });
        y
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
        let xv = x.detach().flatten_all()?.to_vec1::<f32>()?;
        let wv = w.detach().flatten_all()?.to_vec1::<f32>()?;
        let dy = grad.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        let (k, plane_in, plane_out) = (self.k, d.h * d.w, d.oh * d.ow);
        // dL/dx: every output's gradient back to the inputs its filter read.
        let mut dx = vec![0f32; d.n * d.c * plane_in];
        dx.par_chunks_mut(plane_in)
            .enumerate()
            .for_each(|(nc, gin)| {
                let g = &dy[nc * plane_out..(nc + 1) * plane_out];
                let f = &wv[(nc % d.c) * k * k..(nc % d.c + 1) * k * k];
                for oy in 0..d.oh {
                    for i in 0..k {
                        let Some(iy) = self.at(oy, i, d.h) else {
                            continue;
                        };
                        let grow = &g[oy * d.ow..(oy + 1) * d.ow];
                        let irow = &mut gin[iy * d.w..(iy + 1) * d.w];
                        for j in 0..k {
                            let wij = f[i * k + j];
                            let r = super::cpu::span(j, self.s, self.p, d.w, d.ow);
                            if r.is_empty() {
                                continue;
                            }
                            let first = r.start * self.s + j - self.p;
                            if self.s == 1 {
                                let dst = &mut irow[first..first + r.len()];
                                for (o, &v) in dst.iter_mut().zip(&grow[r]) {
                                    *o += wij * v;
                                }
                            } else {
                                let dst = irow[first..].iter_mut().step_by(self.s);
                                for (o, &v) in dst.zip(&grow[r]) {
                                    *o += wij * v;
                                }
                            }
                        }
                    }
                }
            });
        // dL/dw: per channel, summed over the batch.
        let mut dw = vec![0f32; d.c * k * k];
        dw.par_chunks_mut(k * k).enumerate().for_each(|(c, gw)| {
            for n in 0..d.n {
                let nc = n * d.c + c;
                let xin = &xv[nc * plane_in..(nc + 1) * plane_in];
                let g = &dy[nc * plane_out..(nc + 1) * plane_out];
                for oy in 0..d.oh {
                    for i in 0..k {
                        let Some(iy) = self.at(oy, i, d.h) else {
                            continue;
                        };
                        let xrow = &xin[iy * d.w..(iy + 1) * d.w];
                        let grow = &g[oy * d.ow..(oy + 1) * d.ow];
                        for j in 0..k {
                            let r = super::cpu::span(j, self.s, self.p, d.w, d.ow);
                            if r.is_empty() {
                                continue;
                            }
                            let first = r.start * self.s + j - self.p;
                            let xs = xrow[first..].iter().step_by(self.s);
                            let mut acc = 0f32;
                            for (&xv, &gv) in xs.zip(&grow[r]) {
                                acc += xv * gv;
                            }
                            gw[i * k + j] += acc;
                        }
                    }
                }
            }
        });
        let dx = Tensor::from_vec(dx, x.shape(), &Device::Cpu)?;
        let dw = Tensor::from_vec(dw, w.shape(), &Device::Cpu)?;
        Ok((Some(dx), Some(dw)))
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
