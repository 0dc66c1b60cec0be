//! A zoo ONNX graph run on candle with its weights as trainable variables.
//!
//! The zoo builds each model as an ONNX graph (`zoo::arch`, `zoo::yolo`); training the
//! same graph, node for node, means the trained weights carry the initializers' names and
//! go back into the zoo's ONNX unchanged (`models/weights/<name>.safetensors`). This module
//! interprets the operators the zoo uses, with a batch dimension in front: a `Reshape` whose
//! target starts with 1 takes the batch instead. It leaves data, losses and the loop to the
//! workloads.
//!
//! On the CPU in f32 these are not candle's kernels but fused ops with their own backward
//! passes: convolutions (`conv`: im2col and candle's GEMM, one group; `depthwise`: one filter
//! per channel, where candle splits a grouped convolution into one convolution per
//! channel), each convolution's bias with the activation that alone consumes its output
//! (`act`: `Relu`, `Clip`, SiLU as `Mul(x, Sigmoid(x))`), and LSTM layers (`lstm`). Elsewhere
//! the same nodes are candle's ops (a depthwise convolution as nine shifted multiply-adds).
//! Max pooling with a stride below its kernel is the maximum of shifted views (candle 0.11
//! has no backward for it).

use std::collections::HashMap;

use candle_core::{DType, Device, Result, Tensor, Var};

use super::act::Act;

use crate::model::onnx::{DataType, ModelProto, NodeProto, TensorProto};

/// The graph with its trainable parameters.
pub struct Graph {
    nodes: Vec<NodeProto>,
    /// Non-trainable float initializers (clip bounds, anchors, DFL bins).
    consts: HashMap<String, Tensor>,
    /// Integer initializers (shapes, split sizes, axes).
    ints: HashMap<String, Vec<i64>>,
    /// Trainable parameters, in graph order.
    pub params: Vec<(String, Var)>,
    pub dtype: DType,
    pub device: Device,
}

/// Whether an initializer is a weight the trainer updates: Conv/MatMul weights and
/// biases, LSTM W/R/B; not the decoder's constants or the activation bounds.
pub fn is_trainable(name: &str) -> bool {
    !name.starts_with("dfl.")
        && !name.starts_with("decode.")
        && [".weight", ".bias", ".W", ".R", ".B"]
            .iter()
            .any(|s| name.ends_with(s))
}

pub(super) fn float_values(t: &TensorProto) -> Option<Vec<f32>> {
    if t.dtype() != DataType::FLOAT {
        return None;
    }
    t.float_values(u64::MAX)
        .map(|v| v.into_iter().map(|x| x as f32).collect())
}

pub(super) fn dims_of(t: &TensorProto) -> Vec<usize> {
    t.dims.iter().map(|&d| d.max(0) as usize).collect()
}

impl Graph {
    /// The FP32 graph `m` on `device` in `dtype`, its weights replaced by `start` where it
    /// has them (a checkpoint to continue from).
    pub fn new(
        m: &ModelProto,
        device: &Device,
        dtype: DType,
        start: Option<&HashMap<String, Tensor>>,
    ) -> Result<Graph> {
        let g = m
            .graph
            .as_ref()
            .ok_or_else(|| candle_core::Error::Msg("the model has no graph".into()))?;
        let mut consts = HashMap::new();
        let mut ints = HashMap::new();
        let mut params = Vec::new();
        for t in &g.initializer {
            if t.dtype() == DataType::INT64 {
                ints.insert(t.name.clone(), t.int_values(u64::MAX).unwrap_or_default());
                continue;
            }
            let Some(v) = float_values(t) else {
                candle_core::bail!("initializer '{}' is not FP32", t.name);
            };
            let shape = dims_of(t);
            let x = match start.and_then(|s| s.get(&t.name)) {
                Some(s) if s.dims() == shape.as_slice() => s.to_device(device)?,
                _ => Tensor::from_vec(v, shape, device)?,
            }
            .to_dtype(dtype)?;
            if is_trainable(&t.name) {
                params.push((t.name.clone(), Var::from_tensor(&x)?));
            } else {
                consts.insert(t.name.clone(), x);
            }
        }
        Ok(Graph {
            nodes: g.node.clone(),
            consts,
            ints,
            params,
            dtype,
            device: device.clone(),
        })
    }

    /// Makes every parameter not in `keep` a constant: it no longer trains, and
    /// [`Graph::weights`] leaves it out.
    pub fn freeze_except(&mut self, keep: &std::collections::HashSet<String>) {
        let (train, frozen): (Vec<_>, Vec<_>) = std::mem::take(&mut self.params)
            .into_iter()
            .partition(|(n, _)| keep.contains(n));
        self.params = train;
        for (n, v) in frozen {
            self.consts.insert(n, v.as_tensor().detach());
        }
    }

    pub fn vars(&self) -> Vec<Var> {
        self.params.iter().map(|(_, v)| v.clone()).collect()
    }

    /// Number of trainable scalars.
    pub fn param_count(&self) -> usize {
        self.params.iter().map(|(_, v)| v.elem_count()).sum()
    }

    /// The current weights by name, as FP32 on the CPU (for saving).
    pub fn weights(&self) -> Result<HashMap<String, Tensor>> {
        self.params
            .iter()
            .map(|(n, v)| {
                Ok((
                    n.clone(),
                    v.as_tensor()
                        .to_dtype(DType::F32)?
                        .to_device(&Device::Cpu)?,
                ))
            })
            .collect()
    }

    /// Runs the graph on `inputs` until every name in `outputs` is computed.
    pub fn forward(&self, inputs: &[(&str, Tensor)], outputs: &[&str]) -> Result<Vec<Tensor>> {
        let mut env: HashMap<String, Tensor> = inputs
            .iter()
            .map(|(n, t)| Ok((n.to_string(), t.to_dtype(self.dtype)?)))
            .collect::<Result<_>>()?;
        for (n, v) in &self.params {
            env.insert(n.clone(), v.as_tensor().clone());
        }
        for (n, t) in &self.consts {
            env.insert(n.clone(), t.clone());
        }
        // Sequences as their steps, for LSTM layers fed by LSTM layers: slicing a stacked
        // tensor step by step costs a full-size gradient per slice in backward (O(T²)).
        let mut seqs: HashMap<String, Vec<Tensor>> = HashMap::new();
        let fused = self.fusions(outputs);
        for (i, node) in self.nodes.iter().enumerate() {
            if outputs.iter().all(|o| env.contains_key(*o)) {
                break;
            }
            match fused.get(&i) {
                Some(Fused::Skip) => continue,
                Some(Fused::ConvAct { act, out }) => {
                    let b = node.input.get(2).and_then(|b| env.get(b));
                    let y = conv(
                        node,
                        arg_of(node, &env, 0)?,
                        arg_of(node, &env, 1)?,
                        b,
                        Some(*act),
                    )?;
                    env.insert(out.clone(), y);
                    continue;
                }
                None => {}
            }
            match node.op_type.as_str() {
                "LSTM" if self.fused_lstm(node, &mut env, &seqs)? => {}
                "LSTM" => {
                    let x = &node.input[0];
                    let steps = match seqs.remove(x) {
                        Some(v) => v,
                        None => {
                            let t = env.get(x).ok_or_else(|| {
                                candle_core::Error::Msg(format!("LSTM: no input '{x}'"))
                            })?;
                            (0..t.dim(0)?).map(|i| t.get(i)).collect::<Result<_>>()?
                        }
                    };
                    let p = |i: usize| {
                        env.get(&node.input[i])
                            .ok_or_else(|| candle_core::Error::Msg(format!("LSTM: no input {i}")))
                    };
                    let (hs, h) = lstm(node, &steps, p(1)?, p(2)?, p(3)?)?;
                    // Y [T, 1, B, H] for a consumer that wants the tensor (forward only
                    // unless the loss depends on it).
                    let y = Tensor::stack(&hs, 0)?.unsqueeze(1)?;
                    seqs.insert(node.output[0].clone(), hs);
                    env.insert(node.output[0].clone(), y);
                    env.insert(node.output[1].clone(), h.unsqueeze(0)?);
                }
                "Squeeze" if seqs.contains_key(&node.input[0]) => {
                    let hs = seqs.remove(&node.input[0]).unwrap_or_default();
                    let y = Tensor::stack(&hs, 0)?;
                    seqs.insert(node.output[0].clone(), hs);
                    env.insert(node.output[0].clone(), y);
                }
                _ => {
                    let ys = self.eval(node, &env)?;
                    for (name, y) in node.output.iter().zip(ys) {
                        env.insert(name.clone(), y);
                    }
                }
            }
        }
        outputs
            .iter()
            .map(|o| {
                env.get(*o)
                    .cloned()
                    .ok_or_else(|| candle_core::Error::Msg(format!("no value '{o}' in the graph")))
            })
            .collect()
    }

    /// The nodes `forward` runs fused ([`super::act`]): each convolution with its bias and,
    /// where the convolution's output goes only to it, its activation (`Relu`, `Clip` with
    /// constant bounds, or SiLU as `Mul(x, Sigmoid(x))`), whose nodes are then skipped. A name
    /// in `outputs` counts as a consumer, so a requested tensor is always computed. CPU and
    /// f32 only (none elsewhere).
    fn fusions(&self, outputs: &[&str]) -> HashMap<usize, Fused> {
        let mut plan = HashMap::new();
        if !super::act::supported(self.dtype, &self.device) {
            return plan;
        }
        let mut consumers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            for x in &n.input {
                consumers.entry(x.as_str()).or_default().push(i);
            }
        }
        for o in outputs {
            consumers.entry(o).or_default().push(usize::MAX);
        }
        let scalar = |name: &str| -> Option<f32> {
            let t = self.consts.get(name)?;
            (t.elem_count() == 1)
                .then(|| {
                    t.flatten_all()
                        .ok()?
                        .to_vec1::<f32>()
                        .ok()?
                        .first()
                        .copied()
                })
                .flatten()
        };
        let node = |j: usize| self.nodes.get(j);
        for (i, n) in self.nodes.iter().enumerate() {
            if n.op_type != "Conv" || n.output.len() != 1 {
                continue;
            }
            let c = n.output[0].as_str();
            let cons = consumers.get(c).map(|v| v.as_slice()).unwrap_or(&[]);
            let act = match cons {
                [j] => node(*j).and_then(|m| match m.op_type.as_str() {
                    "Relu" => Some((Act::Relu, m.output[0].clone(), vec![*j])),
                    "Clip" if m.input.len() == 3 && m.input[0] == c => {
                        let (lo, hi) = (scalar(&m.input[1])?, scalar(&m.input[2])?);
                        Some((Act::Clip(lo, hi), m.output[0].clone(), vec![*j]))
                    }
                    _ => None,
                }),
                [j, k] => {
                    let silu = |sj: usize, mk: usize| -> Option<(Act, String, Vec<usize>)> {
                        let (sg, mul) = (node(sj)?, node(mk)?);
                        let s = sg.output.first()?;
                        let inputs_ok = sg.op_type == "Sigmoid"
                            && mul.op_type == "Mul"
                            && consumers.get(s.as_str())? == &vec![mk]
                            && (mul.input == [c, s.as_str()] || mul.input == [s.as_str(), c]);
                        inputs_ok.then(|| (Act::Silu, mul.output[0].clone(), vec![sj, mk]))
                    };
                    silu(*j, *k).or_else(|| silu(*k, *j))
                }
                _ => None,
            };
            let (act, out, skip) = act.unwrap_or((Act::Identity, c.to_string(), vec![]));
            plan.insert(i, Fused::ConvAct { act, out });
            for j in skip {
                plan.insert(j, Fused::Skip);
            }
        }
        plan
    }

    /// Runs `node` as the fused layer ([`super::lstm`]) when it can (CPU, f32, its input a
    /// tensor): its outputs are then in `env`, and the answer is true.
    fn fused_lstm(
        &self,
        node: &NodeProto,
        env: &mut HashMap<String, Tensor>,
        seqs: &HashMap<String, Vec<Tensor>>,
    ) -> Result<bool> {
        let x = &node.input[0];
        let Some(xt) = env.get(x) else {
            return Ok(false);
        };
        if seqs.contains_key(x) || !super::lstm::supported(xt.dtype(), xt.device()) {
            return Ok(false);
        }
        let hidden = node.attr_i("hidden_size").unwrap_or(0) as usize;
        let p = |i: usize| {
            node.input
                .get(i)
                .and_then(|n| env.get(n))
                .ok_or_else(|| candle_core::Error::Msg(format!("LSTM: no input {i}")))
        };
        let b = p(3)?.squeeze(0)?;
        let bias = (b.narrow(0, 0, 4 * hidden)? + b.narrow(0, 4 * hidden, 4 * hidden)?)?;
        let y = super::lstm::layer(xt, p(1)?, p(2)?, &bias, hidden)?;
        let last = y.get(y.dim(0)? - 1)?;
        env.insert(node.output[0].clone(), y.unsqueeze(1)?);
        env.insert(node.output[1].clone(), last.unsqueeze(0)?);
        Ok(true)
    }

    fn ints_of(&self, name: &str) -> Result<&[i64]> {
        self.ints
            .get(name)
            .map(|v| v.as_slice())
            .ok_or_else(|| candle_core::Error::Msg(format!("'{name}' is not an INT64 constant")))
    }

    fn eval(&self, n: &NodeProto, env: &HashMap<String, Tensor>) -> Result<Vec<Tensor>> {
        let arg = |i: usize| arg_of(n, env, i);
        let one = |t: Tensor| Ok(vec![t]);
        match n.op_type.as_str() {
            "Conv" => one(conv(
                n,
                arg(0)?,
                arg(1)?,
                n.input.get(2).and_then(|b| env.get(b)),
                None,
            )?),
            "Relu" => one(arg(0)?.relu()?),
            "Clip" => {
                let lo = arg(1)?.to_dtype(DType::F64)?.to_scalar::<f64>()?;
                let hi = arg(2)?.to_dtype(DType::F64)?.to_scalar::<f64>()?;
                let x = arg(0)?;
                if x.rank() >= 2 && super::act::supported(x.dtype(), x.device()) {
                    // candle's clamp is a maximum and a minimum whose backward passes are a
                    // dozen full-size kernels each; the fused op's is one.
                    one(super::act::apply(x, None, Act::Clip(lo as f32, hi as f32))?)
                } else {
                    one(x.clamp(lo, hi)?)
                }
            }
            "Sigmoid" => one(candle_nn::ops::sigmoid(arg(0)?)?),
            "Add" => one(arg(0)?.broadcast_add(arg(1)?)?),
            "Sub" => one(arg(0)?.broadcast_sub(arg(1)?)?),
            "Mul" => one(arg(0)?.broadcast_mul(arg(1)?)?),
            "Div" => one(arg(0)?.broadcast_div(arg(1)?)?),
            "MatMul" => one(arg(0)?.broadcast_matmul(arg(1)?)?),
            "Concat" => {
                let xs: Vec<&Tensor> = (0..n.input.len()).map(arg).collect::<Result<_>>()?;
                let axis = axis_of(n.attr_i("axis").unwrap_or(0), xs[0].rank());
                one(Tensor::cat(&xs, axis)?)
            }
            "Split" => {
                let x = arg(0)?;
                let axis = axis_of(n.attr_i("axis").unwrap_or(0), x.rank());
                let sizes = self.ints_of(&n.input[1])?;
                let mut at = 0;
                let mut out = Vec::new();
                for &s in sizes {
                    out.push(x.narrow(axis, at, s as usize)?);
                    at += s as usize;
                }
                Ok(out)
            }
            "MaxPool" => one(maxpool(n, arg(0)?)?),
            "Resize" => {
                let x = arg(0)?;
                let (_, _, h, w) = x.dims4()?;
                one(x.upsample_nearest2d(2 * h, 2 * w)?)
            }
            "Reshape" => one(reshape(arg(0)?, self.ints_of(&n.input[1])?)?),
            "Transpose" => {
                let perm: Vec<usize> = n
                    .attr_ints("perm")
                    .unwrap_or(&[])
                    .iter()
                    .map(|&p| p as usize)
                    .collect();
                one(arg(0)?.permute(perm)?.contiguous()?)
            }
            "Softmax" => {
                let x = arg(0)?;
                let axis = axis_of(n.attr_i("axis").unwrap_or(-1), x.rank());
                one(candle_nn::ops::softmax(x, axis)?)
            }
            "GlobalAveragePool" => one(arg(0)?.mean_keepdim(3)?.mean_keepdim(2)?),
            "Flatten" => one(arg(0)?.flatten_from(1)?),
            "Squeeze" => {
                let mut x = arg(0)?.clone();
                let mut axes: Vec<usize> = self
                    .ints_of(&n.input[1])?
                    .iter()
                    .map(|&a| axis_of(a, x.rank()))
                    .collect();
                axes.sort_unstable_by(|a, b| b.cmp(a));
                for a in axes {
                    x = x.squeeze(a)?;
                }
                one(x)
            }
            "ConstantOfShape" => {
                let dims: Vec<usize> = self
                    .ints_of(&n.input[0])?
                    .iter()
                    .map(|&d| d as usize)
                    .collect();
                one(Tensor::zeros(dims, self.dtype, &self.device)?)
            }
            "Identity" | "Cast" => one(arg(0)?.clone()),
            op => candle_core::bail!("the trainer has no operator '{op}' (node '{}')", n.name),
        }
    }
}

pub(super) fn axis_of(a: i64, rank: usize) -> usize {
    if a < 0 {
        (rank as i64 + a) as usize
    } else {
        a as usize
    }
}

/// ONNX Reshape with a batch in front: 0 copies the input's dimension, -1 is inferred, and
/// a leading 1 that does not fit the element count becomes the batch.
fn reshape(x: &Tensor, target: &[i64]) -> Result<Tensor> {
    x.reshape(reshape_dims(x.dims(), target))
}

/// The dimensions [`reshape`] gives an input of dimensions `dims` (shared with libtorch's
/// interpreter).
pub(super) fn reshape_dims(dims_in: &[usize], target: &[i64]) -> Vec<usize> {
    let numel: usize = dims_in.iter().product();
    let mut dims: Vec<i64> = target
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            if d == 0 {
                dims_in.get(i).copied().unwrap_or(1) as i64
            } else {
                d
            }
        })
        .collect();
    let known: i64 = dims.iter().filter(|&&d| d > 0).product();
    if let Some(i) = dims.iter().position(|&d| d < 0) {
        dims[i] = numel as i64 / known.max(1);
    } else if known as usize != numel && dims.first() == Some(&1) {
        dims[0] = numel as i64 / dims[1..].iter().product::<i64>().max(1);
    }
    dims.iter().map(|&d| d.max(0) as usize).collect()
}

/// What [`Graph::forward`] does at a node instead of evaluating it alone.
enum Fused {
    /// Its work is done by an earlier convolution's fused op.
    Skip,
    /// The convolution, then its bias and `act` as one op, written to `out`.
    ConvAct { act: Act, out: String },
}

/// Input `i` of node `n` from `env`.
fn arg_of<'a>(n: &NodeProto, env: &'a HashMap<String, Tensor>, i: usize) -> Result<&'a Tensor> {
    let name = n.input.get(i).map(|s| s.as_str()).unwrap_or("");
    env.get(name).ok_or_else(|| {
        candle_core::Error::Msg(format!("{} '{}': no input '{name}'", n.op_type, n.name))
    })
}

/// A convolution (square kernel, symmetric pads) with an optional bias; with `act`, the
/// bias and that activation as the fused op ([`super::act`]).
fn conv(
    n: &NodeProto,
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    act: Option<Act>,
) -> Result<Tensor> {
    let k = n
        .attr_ints("kernel_shape")
        .and_then(|v| v.first().copied())
        .unwrap_or(1) as usize;
    let s = n
        .attr_ints("strides")
        .and_then(|v| v.first().copied())
        .unwrap_or(1) as usize;
    let p = n
        .attr_ints("pads")
        .and_then(|v| v.first().copied())
        .unwrap_or(0) as usize;
    let groups = n.attr_i("group").unwrap_or(1) as usize;
    let cin = x.dim(1)?;
    let y = if groups > 1 && groups == cin && w.dim(1)? == 1 {
        if super::depthwise::supported(x.dtype(), x.device()) {
            super::depthwise::conv(x, w, super::depthwise::Depthwise { k, s, p })?
        } else {
            depthwise(x, w, k, s, p)?
        }
    } else if groups == 1 && w.dims()[2..] == [k, k] && super::act::supported(x.dtype(), x.device())
    {
        super::conv::conv(x, w, super::conv::Dense { k, s, p })?
    } else if k == 1 && s == 1 && p == 0 && groups == 1 {
        // A 1×1 convolution is a matrix product over the channels.
        let (bsz, c, h, wd) = x.dims4()?;
        let cout = w.dim(0)?;
        let wm = w.reshape((cout, c))?;
        wm.broadcast_matmul(&x.reshape((bsz, c, h * wd))?)?
            .reshape((bsz, cout, h, wd))?
    } else {
        x.conv2d(w, p, s, 1, groups)?
    };
    match (b, act) {
        (None, Some(Act::Identity)) => Ok(y),
        (b, Some(act)) => super::act::apply(&y, b, act),
        (Some(b), None) => y.broadcast_add(&b.reshape((1, b.elem_count(), 1, 1))?),
        (None, None) => Ok(y),
    }
}

/// Rows/columns `off, off+s, ...` (`len` of them) of dimension `dim`: a strided view made
/// of a narrow and, for s = 2, a reshape that picks one parity.
fn strided(x: &Tensor, dim: usize, off: usize, len: usize, s: usize) -> Result<Tensor> {
    if s == 1 {
        return x.narrow(dim, off, len);
    }
    let size = x.dim(dim)?;
    // Take s·len elements from `off` (pad the end when the tensor is short).
    let need = off + s * len;
    let x = if need > size {
        x.pad_with_zeros(dim, 0, need - size)?
    } else {
        x.clone()
    };
    let x = x.narrow(dim, off, s * len)?;
    let mut shape: Vec<usize> = x.dims().to_vec();
    shape[dim] = len;
    shape.insert(dim + 1, s);
    x.reshape(shape)?.narrow(dim + 1, 0, 1)?.squeeze(dim + 1)
}

/// Depthwise convolution: Σ over the kernel of w[c, 0, i, j] · x shifted by (i, j) (where
/// the fused op, `super::depthwise`, does not run: not f32 or not on the CPU).
fn depthwise(x: &Tensor, w: &Tensor, k: usize, s: usize, p: usize) -> Result<Tensor> {
    let (_, c, h, wd) = x.dims4()?;
    let xp = x.pad_with_zeros(2, p, p)?.pad_with_zeros(3, p, p)?;
    let oh = (h + 2 * p - k) / s + 1;
    let ow = (wd + 2 * p - k) / s + 1;
    let mut acc: Option<Tensor> = None;
    for i in 0..k {
        let rows = strided(&xp, 2, i, oh, s)?;
        for j in 0..k {
            let v = strided(&rows, 3, j, ow, s)?;
            let wij = w.narrow(2, i, 1)?.narrow(3, j, 1)?.reshape((1, c, 1, 1))?;
            let t = v.broadcast_mul(&wij)?;
            acc = Some(match acc {
                Some(a) => (a + t)?,
                None => t,
            });
        }
    }
    acc.ok_or_else(|| candle_core::Error::Msg("empty kernel".into()))
}

/// Max pooling with padding (the pad never wins: it repeats an edge value inside the same
/// window); kernel = stride without padding goes to candle's kernel.
fn maxpool(n: &NodeProto, x: &Tensor) -> Result<Tensor> {
    let k = n
        .attr_ints("kernel_shape")
        .and_then(|v| v.first().copied())
        .unwrap_or(1) as usize;
    let s = n
        .attr_ints("strides")
        .and_then(|v| v.first().copied())
        .unwrap_or(1) as usize;
    let p = n
        .attr_ints("pads")
        .and_then(|v| v.first().copied())
        .unwrap_or(0) as usize;
    if k == s && p == 0 {
        return x.max_pool2d(k);
    }
    let (_, _, h, w) = x.dims4()?;
    let oh = (h + 2 * p - k) / s + 1;
    let ow = (w + 2 * p - k) / s + 1;
    let xp = x.pad_with_same(2, p, p)?.pad_with_same(3, p, p)?;
    // Separable: the maximum over the kernel's rows, then over its columns.
    let mut rows = strided(&xp, 2, 0, oh, s)?;
    for i in 1..k {
        rows = rows.maximum(&strided(&xp, 2, i, oh, s)?)?;
    }
    let mut out = strided(&rows, 3, 0, ow, s)?;
    for j in 1..k {
        out = out.maximum(&strided(&rows, 3, j, ow, s)?)?;
    }
    Ok(out)
}

/// ONNX LSTM (forward, gates i, o, f, c; zero initial state) over the steps `xs`
/// ([B, I] each): the hidden state of every step and the last one.
pub(super) fn lstm(
    n: &NodeProto,
    xs: &[Tensor],
    w: &Tensor,
    r: &Tensor,
    b: &Tensor,
) -> Result<(Vec<Tensor>, Tensor)> {
    let hidden = n.attr_i("hidden_size").unwrap_or(0) as usize;
    let first = xs
        .first()
        .ok_or_else(|| candle_core::Error::Msg("LSTM over no step".into()))?;
    let bsz = first.dim(0)?;
    let wt = w.squeeze(0)?.t()?; // [I, 4H]
    let rt = r.squeeze(0)?.t()?; // [H, 4H]
    let b = b.squeeze(0)?; // [8H]
    let bias = (b.narrow(0, 0, 4 * hidden)? + b.narrow(0, 4 * hidden, 4 * hidden)?)?;
    let mut h = Tensor::zeros((bsz, hidden), first.dtype(), first.device())?;
    let mut c = h.clone();
    let mut hs = Vec::with_capacity(xs.len());
    for x in xs {
        let g = (x.matmul(&wt)? + h.matmul(&rt)?)?.broadcast_add(&bias)?;
        let i = candle_nn::ops::sigmoid(&g.narrow(1, 0, hidden)?)?;
        let o = candle_nn::ops::sigmoid(&g.narrow(1, hidden, hidden)?)?;
        let f = candle_nn::ops::sigmoid(&g.narrow(1, 2 * hidden, hidden)?)?;
        let cc = g.narrow(1, 3 * hidden, hidden)?.tanh()?;
        c = ((f * c)? + (i * cc)?)?;
        h = (o * c.tanh()?)?;
        hs.push(h.clone());
    }
    Ok((hs, h))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::build::{Attr, attr, node};

    fn node_with(op: &str, attrs: Vec<crate::model::onnx::AttributeProto>) -> NodeProto {
        node(op, &["x"], &["y"], attrs)
    }

    #[test]
    fn depthwise_and_strided_match_candle_conv() {
        let dev = Device::Cpu;
        let x = Tensor::randn(0f32, 1.0, (2, 3, 7, 6), &dev).unwrap();
        let w = Tensor::randn(0f32, 1.0, (3, 1, 3, 3), &dev).unwrap();
        for s in [1, 2] {
            let a = depthwise(&x, &w, 3, s, 1).unwrap();
            let b = x.conv2d(&w, 1, s, 1, 3).unwrap();
            assert_eq!(a.dims(), b.dims(), "stride {s}");
            let d = (a - b).unwrap().abs().unwrap().max_all().unwrap();
            assert!(d.to_scalar::<f32>().unwrap() < 1e-4, "stride {s}");
        }
    }

    /// The largest absolute difference of two f32 tensors of one shape.
    pub(crate) fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b)
            .and_then(|d| d.abs())
            .and_then(|d| d.flatten_all())
            .and_then(|d| d.max(0))
            .and_then(|d| d.to_scalar::<f32>())
            .unwrap()
    }

    /// The fused depthwise op against the shifted views (forward and both gradients, by
    /// candle's autograd) and candle's grouped conv2d (forward), at strides 1 and 2, with
    /// and without padding.
    #[test]
    fn fused_depthwise_matches_the_shifted_views_forward_and_backward() {
        use super::super::depthwise::{Depthwise, conv};
        let dev = Device::Cpu;
        let cases = [
            (1, 1, 7, 6, 3),
            (2, 1, 7, 6, 3),
            (2, 0, 8, 9, 3),
            (1, 2, 5, 5, 3),
            (1, 1, 1, 1, 3),
            (2, 1, 1, 2, 3),
            (2, 2, 3, 4, 3),
            (1, 0, 3, 3, 3),
            (2, 1, 16, 15, 3),
            (1, 2, 9, 11, 5),
            (2, 2, 10, 7, 5),
        ];
        for (s, p, h, wd, k) in cases {
            let x =
                Var::from_tensor(&Tensor::randn(0f32, 1.0, (2, 3, h, wd), &dev).unwrap()).unwrap();
            let w =
                Var::from_tensor(&Tensor::randn(0f32, 1.0, (3, 1, k, k), &dev).unwrap()).unwrap();
            let a = conv(&x, &w, Depthwise { k, s, p }).unwrap();
            let b = depthwise(&x, &w, k, s, p).unwrap();
            let c = x.conv2d(&w, p, s, 1, 3).unwrap();
            assert_eq!(a.dims(), b.dims(), "stride {s} pad {p}");
            assert!(max_diff(&a, &b) < 1e-4, "stride {s} pad {p}");
            assert!(max_diff(&a, &c) < 1e-4, "stride {s} pad {p}");
            let weights = Tensor::randn(0f32, 1.0, a.dims(), &dev).unwrap();
            let ga = (a * &weights)
                .unwrap()
                .sum_all()
                .unwrap()
                .backward()
                .unwrap();
            let gb = (b * &weights)
                .unwrap()
                .sum_all()
                .unwrap()
                .backward()
                .unwrap();
            for (name, v) in [("x", &x), ("w", &w)] {
                let d = max_diff(ga.get(v).unwrap(), gb.get(v).unwrap());
                assert!(d < 1e-4, "d{name} at stride {s} pad {p}: {d}");
            }
        }
    }

    #[test]
    fn maxpool_with_padding_matches_a_direct_maximum() {
        let dev = Device::Cpu;
        let x = Tensor::randn(0f32, 1.0, (1, 2, 6, 6), &dev).unwrap();
        let n = node_with(
            "MaxPool",
            vec![
                attr("kernel_shape", Attr::Ints(vec![5, 5])),
                attr("strides", Attr::Ints(vec![1, 1])),
                attr("pads", Attr::Ints(vec![2, 2, 2, 2])),
            ],
        );
        let y = maxpool(&n, &x).unwrap();
        assert_eq!(y.dims(), &[1, 2, 6, 6]);
        let xs: Vec<f32> = x.flatten_all().unwrap().to_vec1().unwrap();
        let ys: Vec<f32> = y.flatten_all().unwrap().to_vec1().unwrap();
        for c in 0..2 {
            for i in 0..6i64 {
                for j in 0..6i64 {
                    let mut m = f32::MIN;
                    for a in (i - 2).max(0)..=(i + 2).min(5) {
                        for b in (j - 2).max(0)..=(j + 2).min(5) {
                            m = m.max(xs[c * 36 + a as usize * 6 + b as usize]);
                        }
                    }
                    assert_eq!(ys[c * 36 + i as usize * 6 + j as usize], m);
                }
            }
        }
        // And the gradient flows.
        let v = Var::from_tensor(&x).unwrap();
        let y = maxpool(&n, v.as_tensor()).unwrap();
        let g = y.sum_all().unwrap().backward().unwrap();
        assert!(g.get(v.as_tensor()).is_some());
    }

    #[test]
    fn reshape_takes_the_batch() {
        let x = Tensor::zeros((4, 1, 128), DType::F32, &Device::Cpu).unwrap();
        assert_eq!(reshape(&x, &[1, 128]).unwrap().dims(), &[4, 128]);
        assert_eq!(reshape(&x, &[0, -1]).unwrap().dims(), &[4, 128]);
    }
}
