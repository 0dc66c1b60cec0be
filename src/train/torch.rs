//! The libtorch trainer (`train --backend tch`, cargo feature `tch`): a built-in workload's
//! zoo graph interpreted node for node on libtorch's operators, as `graph` does on candle's,
//! with its initializers as leaf tensors that keep gradients, libtorch's own AdamW, and the
//! workload's loss as PyTorch names it (`mse_loss`, log-softmax + `nll_loss`). The batches,
//! their order, the starting weights and the loop are the candle trainer's, so the step
//! times of the two engines compare the frameworks on one workload and batch.
//!
//! The held-out evaluation runs on candle's interpreter with the weights libtorch trained
//! (copied to the CPU after the epoch, off the step clock): one evaluation code for both
//! engines, so their held-out figures differ only by the weights.

use std::collections::HashMap;

use tch::{Device, Kind, Reduction, Tensor};

use super::TrainDevice;
use super::engine::{Loss, Objective, Trainer};
use super::graph::{Graph, axis_of, dims_of, float_values, is_trainable, reshape_dims};
use super::workload::{Evaluation, Workload};
use crate::model::onnx::{DataType, ModelProto, NodeProto};
use crate::report::schema::telemetry::State;
use crate::report::schema::train::PrecisionSupport;

type Error = super::Error;

fn torch_err(e: tch::TchError) -> Error {
    Error::Torch(e.to_string())
}

fn msg(s: String) -> Error {
    Error::Torch(s)
}

/// libtorch's device for `d`.
fn device_of(d: TrainDevice) -> Result<Device, Error> {
    match d {
        TrainDevice::Cpu => Ok(Device::Cpu),
        TrainDevice::Cuda(n) => {
            if !tch::Cuda::is_available() || (n as i64) >= tch::Cuda::device_count() {
                return Err(msg(format!(
                    "cuda:{n}: libtorch sees {} CUDA device(s) (the CPU build of scripts/with-torch.sh has none; set TORCH_CUDA=1 on a CUDA host)",
                    tch::Cuda::device_count()
                )));
            }
            Ok(Device::Cuda(n))
        }
    }
}

fn kind_of(precision: &str) -> Kind {
    match precision {
        "fp16" => Kind::Half,
        "fp64" => Kind::Double,
        _ => Kind::Float,
    }
}

/// The threads libtorch's CPU kernels use: as many as candle's (`RAYON_NUM_THREADS`, else
/// one per core), so the two engines are compared on the same cores.
fn set_threads() -> usize {
    let n = candle_core::utils::get_num_threads().max(1);
    tch::set_num_threads(n as i32);
    n
}

/// `report.device` on libtorch.
pub fn device_text(d: TrainDevice) -> String {
    format!("{d} ({} thread(s), libtorch)", set_threads())
}

/// §6 e on libtorch: a step of a small network in each type on the device.
pub fn precision_support(d: TrainDevice) -> Vec<PrecisionSupport> {
    let probe = |kind: Kind| -> Result<(), Error> {
        let dev = device_of(d)?;
        let w = Tensor::f_ones([4, 3], (kind, dev))
            .and_then(|t| t.f_set_requires_grad(true))
            .map_err(torch_err)?;
        let x = Tensor::f_ones([2, 4], (kind, dev)).map_err(torch_err)?;
        let mut opt =
            tch::COptimizer::adamw(1e-3, 0.9, 0.999, 0.0, 1e-8, false).map_err(torch_err)?;
        opt.add_parameters(&w, 0).map_err(torch_err)?;
        let y = x
            .f_matmul(&w)
            .and_then(|y| y.f_sigmoid())
            .and_then(|y| y.f_square())
            .and_then(|y| y.f_mean(kind))
            .map_err(torch_err)?;
        y.f_backward().map_err(torch_err)?;
        opt.step().map_err(torch_err)
    };
    [
        ("fp16", Kind::Half),
        ("fp32", Kind::Float),
        ("fp64", Kind::Double),
    ]
    .into_iter()
    .map(|(name, kind)| PrecisionSupport {
        precision: name.into(),
        status: match probe(kind) {
            Ok(()) => State::Available(format!("libtorch {kind:?} on {d}")),
            Err(e) => State::Unavailable(format!("libtorch {kind:?} on {d}: {e}")),
        },
    })
    .collect()
}

/// The zoo graph on libtorch: the same nodes and initializers as [`Graph`].
pub struct TorchGraph {
    nodes: Vec<NodeProto>,
    consts: HashMap<String, Tensor>,
    ints: HashMap<String, Vec<i64>>,
    /// Trainable parameters (leaves with gradients), in graph order.
    params: Vec<(String, Tensor)>,
    kind: Kind,
    device: Device,
}

impl TorchGraph {
    pub fn new(m: &ModelProto, device: Device, kind: Kind) -> Result<TorchGraph, Error> {
        let g = m
            .graph
            .as_ref()
            .ok_or_else(|| msg("the model has no graph".into()))?;
        let mut consts = HashMap::new();
        let mut ints = HashMap::new();
        let mut params = Vec::new();
        for t in &g.initializer {
            if t.dtype() == DataType::INT64 {
                ints.insert(t.name.clone(), t.int_values(u64::MAX).unwrap_or_default());
                continue;
            }
            let Some(v) = float_values(t) else {
                return Err(msg(format!("initializer '{}' is not FP32", t.name)));
            };
            let shape: Vec<i64> = dims_of(t).iter().map(|&d| d as i64).collect();
            let x = Tensor::f_from_slice(&v)
                .and_then(|x| x.f_reshape(&shape))
                .and_then(|x| x.f_to_kind(kind))
                .and_then(|x| x.f_to_device(device))
                .map_err(torch_err)?;
            if is_trainable(&t.name) {
                let x = x.f_set_requires_grad(true).map_err(torch_err)?;
                params.push((t.name.clone(), x));
            } else {
                consts.insert(t.name.clone(), x);
            }
        }
        Ok(TorchGraph {
            nodes: g.node.clone(),
            consts,
            ints,
            params,
            kind,
            device,
        })
    }

    /// The current weights by name, as FP32 candle tensors on the CPU.
    pub fn weights(&self) -> Result<HashMap<String, candle_core::Tensor>, Error> {
        self.params
            .iter()
            .map(|(n, p)| {
                let t = p
                    .f_detach()
                    .and_then(|t| t.f_to_kind(Kind::Float))
                    .and_then(|t| t.f_to_device(Device::Cpu))
                    .and_then(|t| t.f_contiguous())
                    .map_err(torch_err)?;
                let numel = t.numel();
                let mut v = vec![0f32; numel];
                t.f_copy_data(&mut v, numel).map_err(torch_err)?;
                let dims: Vec<usize> = t.size().iter().map(|&d| d as usize).collect();
                Ok((
                    n.clone(),
                    candle_core::Tensor::from_vec(v, dims, &candle_core::Device::Cpu)?,
                ))
            })
            .collect()
    }

    /// Runs the graph on `inputs` until every name in `outputs` is computed.
    pub fn forward(
        &self,
        inputs: &[(&str, Tensor)],
        outputs: &[&str],
    ) -> Result<Vec<Tensor>, Error> {
        let mut env: HashMap<String, Tensor> = HashMap::new();
        for (n, t) in inputs {
            env.insert(n.to_string(), t.f_to_kind(self.kind).map_err(torch_err)?);
        }
        for (n, t) in self
            .params
            .iter()
            .map(|(n, t)| (n, t))
            .chain(self.consts.iter())
        {
            env.insert(n.clone(), t.shallow_clone());
        }
        for node in &self.nodes {
            if outputs.iter().all(|o| env.contains_key(*o)) {
                break;
            }
            let ys = self.eval(node, &env).map_err(|e| match e {
                Error::Torch(m) => msg(format!("{} '{}': {m}", node.op_type, node.name)),
                e => e,
            })?;
            for (name, y) in node.output.iter().zip(ys) {
                if !name.is_empty() {
                    env.insert(name.clone(), y);
                }
            }
        }
        outputs
            .iter()
            .map(|o| {
                env.get(*o)
                    .map(Tensor::shallow_clone)
                    .ok_or_else(|| msg(format!("no value '{o}' in the graph")))
            })
            .collect()
    }

    fn ints_of(&self, name: &str) -> Result<&[i64], Error> {
        self.ints
            .get(name)
            .map(|v| v.as_slice())
            .ok_or_else(|| msg(format!("'{name}' is not an INT64 constant")))
    }

    fn eval(&self, n: &NodeProto, env: &HashMap<String, Tensor>) -> Result<Vec<Tensor>, Error> {
        let arg = |i: usize| -> Result<&Tensor, Error> {
            let name = n.input.get(i).map(|s| s.as_str()).unwrap_or("");
            env.get(name)
                .ok_or_else(|| msg(format!("no input '{name}'")))
        };
        let opt_arg = |i: usize| {
            n.input
                .get(i)
                .filter(|s| !s.is_empty())
                .and_then(|s| env.get(s))
        };
        let one = |t: Result<Tensor, tch::TchError>| Ok(vec![t.map_err(torch_err)?]);
        let first = |a: &str, d: i64| n.attr_ints(a).and_then(|v| v.first().copied()).unwrap_or(d);
        let scalar = |t: &Tensor| {
            t.f_flatten(0, -1)
                .and_then(|t| t.f_double_value(&[0]))
                .map_err(torch_err)
        };
        match n.op_type.as_str() {
            "Conv" => {
                let (k, s, p) = (
                    first("kernel_shape", 1),
                    first("strides", 1),
                    first("pads", 0),
                );
                let _ = k;
                let groups = n.attr_i("group").unwrap_or(1);
                one(arg(0)?.f_conv2d(arg(1)?, opt_arg(2), [s, s], [p, p], [1, 1], groups))
            }
            "Relu" => one(arg(0)?.f_relu()),
            "Clip" => {
                let (lo, hi) = (scalar(arg(1)?)?, scalar(arg(2)?)?);
                one(arg(0)?.f_clamp(lo, hi))
            }
            "Sigmoid" => one(arg(0)?.f_sigmoid()),
            "Add" => one(arg(0)?.f_add(arg(1)?)),
            "Sub" => one(arg(0)?.f_sub(arg(1)?)),
            "Mul" => one(arg(0)?.f_mul(arg(1)?)),
            "Div" => one(arg(0)?.f_div(arg(1)?)),
            "MatMul" => one(arg(0)?.f_matmul(arg(1)?)),
            "Concat" => {
                let xs: Vec<&Tensor> = (0..n.input.len()).map(arg).collect::<Result<_, _>>()?;
                let axis = axis_of(n.attr_i("axis").unwrap_or(0), xs[0].dim()) as i64;
                one(Tensor::f_cat(&xs, axis))
            }
            "Split" => {
                let x = arg(0)?;
                let axis = axis_of(n.attr_i("axis").unwrap_or(0), x.dim()) as i64;
                let mut at = 0;
                let mut out = Vec::new();
                for &s in self.ints_of(&n.input[1])? {
                    out.push(x.f_narrow(axis, at, s).map_err(torch_err)?);
                    at += s;
                }
                Ok(out)
            }
            "MaxPool" => {
                let (k, s, p) = (
                    first("kernel_shape", 1),
                    first("strides", 1),
                    first("pads", 0),
                );
                one(arg(0)?.f_max_pool2d([k, k], [s, s], [p, p], [1, 1], false))
            }
            "Resize" => {
                let x = arg(0)?;
                let size = x.size();
                let (h, w) = (size[size.len() - 2], size[size.len() - 1]);
                one(x.f_upsample_nearest2d([2 * h, 2 * w], None, None))
            }
            "Reshape" => {
                let x = arg(0)?;
                let dims: Vec<usize> = x.size().iter().map(|&d| d as usize).collect();
                let to: Vec<i64> = reshape_dims(&dims, self.ints_of(&n.input[1])?)
                    .iter()
                    .map(|&d| d as i64)
                    .collect();
                one(x.f_reshape(&to))
            }
            "Transpose" => {
                let perm = n.attr_ints("perm").unwrap_or(&[]);
                one(arg(0)?.f_permute(perm).and_then(|t| t.f_contiguous()))
            }
            "Softmax" => {
                let x = arg(0)?;
                let axis = axis_of(n.attr_i("axis").unwrap_or(-1), x.dim()) as i64;
                one(x.f_softmax(axis, self.kind))
            }
            "GlobalAveragePool" => one(arg(0)?.f_mean_dim([2i64, 3].as_slice(), true, self.kind)),
            "Flatten" => one(arg(0)?.f_flatten(1, -1)),
            "Squeeze" => {
                let mut x = arg(0)?.shallow_clone();
                let mut axes: Vec<i64> = self
                    .ints_of(&n.input[1])?
                    .iter()
                    .map(|&a| axis_of(a, x.dim()) as i64)
                    .collect();
                axes.sort_unstable_by(|a, b| b.cmp(a));
                for a in axes {
                    x = x.f_squeeze_dim(a).map_err(torch_err)?;
                }
                Ok(vec![x])
            }
            "ConstantOfShape" => {
                let dims = self.ints_of(&n.input[0])?;
                one(Tensor::f_zeros(dims, (self.kind, self.device)))
            }
            "Identity" | "Cast" => Ok(vec![arg(0)?.shallow_clone()]),
            "LSTM" => self.lstm(n, env),
            op => Err(msg(format!("the libtorch trainer has no operator '{op}'"))),
        }
    }

    /// ONNX LSTM (forward; gates i, o, f, c) as libtorch's fused LSTM (gates i, f, g, o):
    /// the weights are reordered in the graph, so gradients reach the ONNX layout.
    fn lstm(&self, n: &NodeProto, env: &HashMap<String, Tensor>) -> Result<Vec<Tensor>, Error> {
        let get = |i: usize| {
            n.input
                .get(i)
                .filter(|s| !s.is_empty())
                .and_then(|s| env.get(s))
        };
        let need = |i: usize| get(i).ok_or_else(|| msg(format!("no input {i}")));
        let hidden = n.attr_i("hidden_size").unwrap_or(0);
        if n.attr_s("direction").is_some_and(|d| d != "forward") {
            return Err(msg("only forward LSTM layers are trained".into()));
        }
        let x = need(0)?;
        let bsz = x.size().get(1).copied().unwrap_or(1);
        // ONNX chunks (i, o, f, c) → PyTorch's (i, f, g, o).
        let order = |t: &Tensor| -> Result<Tensor, Error> {
            let c = t.f_chunk(4, 0).map_err(torch_err)?;
            Tensor::f_cat(&[&c[0], &c[2], &c[3], &c[1]], 0).map_err(torch_err)
        };
        let squeeze = |t: &Tensor| t.f_squeeze_dim(0).map_err(torch_err);
        let mut params = vec![order(&squeeze(need(1)?)?)?, order(&squeeze(need(2)?)?)?];
        let has_biases = get(3).is_some();
        if let Some(b) = get(3) {
            let b = squeeze(b)?;
            let half = |at: i64| b.f_narrow(0, at, 4 * hidden).map_err(torch_err);
            params.push(order(&half(0)?)?);
            params.push(order(&half(4 * hidden)?)?);
        }
        // The initial states (zeros in the zoo: ConstantOfShape of batch 1) at this batch.
        let state = |i: usize| -> Result<Tensor, Error> {
            match get(i) {
                Some(t) => t
                    .f_expand([1, bsz, hidden], false)
                    .and_then(|t| t.f_contiguous())
                    .map_err(torch_err),
                None => {
                    Tensor::f_zeros([1, bsz, hidden], (self.kind, self.device)).map_err(torch_err)
                }
            }
        };
        let (h0, c0) = (state(5)?, state(6)?);
        let (y, h, c) = x
            .f_lstm(
                &[&h0, &c0],
                &params.iter().collect::<Vec<_>>(),
                has_biases,
                1,
                0.0,
                true,
                false,
                false,
            )
            .map_err(torch_err)?;
        // Y [T, 1, B, H], Y_h and Y_c [1, B, H].
        Ok(vec![y.f_unsqueeze(1).map_err(torch_err)?, h, c])
    }
}

/// Training state on libtorch.
pub struct TorchTrainer {
    graph: TorchGraph,
    opt: tch::COptimizer,
    objective: Objective,
    model: ModelProto,
    cuda: Option<usize>,
    last: Option<Tensor>,
}

impl TorchTrainer {
    pub fn new(w: &dyn Workload, d: TrainDevice, precision: &str, lr: f64) -> Result<Self, Error> {
        let objective = w.objective().ok_or_else(|| {
            msg(format!(
                "{}'s loss is written for candle only: train it on candle",
                w.zoo_name()
            ))
        })?;
        set_threads();
        let device = device_of(d)?;
        let model = w.model();
        let graph = TorchGraph::new(&model, device, kind_of(precision))?;
        // candle's AdamW defaults: β1 0.9, β2 0.999, ε 1e-8; no weight decay.
        let mut opt =
            tch::COptimizer::adamw(lr, 0.9, 0.999, 0.0, 1e-8, false).map_err(torch_err)?;
        for (_, p) in &graph.params {
            opt.add_parameters(p, 0).map_err(torch_err)?;
        }
        Ok(TorchTrainer {
            graph,
            opt,
            objective,
            model,
            cuda: match d {
                TrainDevice::Cuda(n) => Some(n),
                TrainDevice::Cpu => None,
            },
            last: None,
        })
    }

    /// Scales the gradients down to a total L2 norm of `max` (`clip_grad_norm_`).
    fn clip(&self, max: f64) -> Result<(), Error> {
        let _guard = tch::no_grad_guard();
        let mut sq = 0f64;
        let grads: Vec<Tensor> = self
            .graph
            .params
            .iter()
            .map(|(_, p)| p.f_grad().map_err(torch_err))
            .collect::<Result<_, _>>()?;
        for g in grads.iter().filter(|g| g.defined()) {
            sq += g
                .f_to_kind(Kind::Double)
                .and_then(|g| g.f_square())
                .and_then(|g| g.f_sum(Kind::Double))
                .and_then(|g| g.f_double_value(&[]))
                .map_err(torch_err)?;
        }
        let norm = sq.sqrt();
        if norm.is_finite() && norm > max {
            let k = max / (norm + 1e-6);
            for mut g in grads.into_iter().filter(|g| g.defined()) {
                let _ = g.f_mul_scalar_(k).map_err(torch_err)?;
            }
        }
        Ok(())
    }
}

/// An error of the detection loss: libtorch's, or the trainer's.
enum Tl {
    Torch(tch::TchError),
    Other(Error),
}

impl From<tch::TchError> for Tl {
    fn from(e: tch::TchError) -> Tl {
        Tl::Torch(e)
    }
}

/// A libtorch tensor's values as f32 on the CPU.
fn to_vec(t: &Tensor) -> Result<Vec<f32>, tch::TchError> {
    let t = t
        .f_to_kind(Kind::Float)?
        .f_to_device(Device::Cpu)?
        .f_contiguous()?;
    let n = t.numel();
    let mut v = vec![0f32; n];
    t.f_copy_data(&mut v, n)?;
    Ok(v)
}

/// YOLOv8's loss on libtorch, term for term the candle loss of `detect` (the same
/// targets, from the workload's assignment on the detached predictions): BCE with logits
/// on the classes, 1 − IoU and DFL on the positives, each sum over the targets' norm, with
/// `detect::GAINS`.
fn detection_loss(w: &dyn Workload, levels: &[Tensor], rows: &[f32]) -> Result<Tensor, Tl> {
    let (classes, reg) = super::detect::HEAD;
    let (classes, reg) = (classes as i64, reg as i64);
    let flat: Vec<Tensor> = levels
        .iter()
        .map(|o| o.f_flatten(2, -1))
        .collect::<Result<_, _>>()?;
    // [B, A, 4·16 + classes]
    let logits = Tensor::f_cat(&flat, 2)?.f_transpose(1, 2)?.f_contiguous()?;
    let (kind, device) = (logits.kind(), logits.device());
    let size = logits.size();
    let (bsz, a_n) = (size[0], size[1]);
    let bins = Tensor::f_arange(reg, (kind, device))?;
    let expectation = |l: &Tensor| -> Result<Tensor, tch::TchError> {
        l.f_softmax(-1, kind)?
            .f_mul(&bins)?
            .f_sum_dim_intlist([-1i64].as_slice(), false, kind)
    };
    let box_logits = logits
        .f_narrow(2, 0, 4 * reg)?
        .f_reshape([bsz * a_n, 4, reg])?;
    let dist = to_vec(&expectation(&box_logits.f_detach()?)?)?;
    let cls = logits.f_narrow(2, 4 * reg, classes)?;
    let scores = to_vec(&cls.f_detach()?.f_sigmoid()?)?;
    let tg = w
        .detection_targets(&dist, &scores, rows, bsz as usize)
        .ok_or_else(|| Tl::Other(msg("the workload gives no detection targets".into())))?;
    let t = |v: &[f32], shape: &[i64]| -> Result<Tensor, tch::TchError> {
        Tensor::f_from_slice(v)?
            .f_reshape(shape)?
            .f_to_kind(kind)?
            .f_to_device(device)
    };
    let (g_cls, g_iou, g_dfl) = super::detect::GAINS;
    let target = t(&tg.cls, &[bsz, a_n, classes])?;
    let cls_loss = cls
        .f_binary_cross_entropy_with_logits(
            &target,
            None::<Tensor>,
            None::<Tensor>,
            Reduction::Sum,
        )?
        .f_div_scalar(tg.norm)?;
    if tg.n == 0 {
        return Ok(cls_loss.f_mul_scalar(g_cls)?);
    }
    let n = tg.n as i64;
    let idx = Tensor::f_from_slice(&tg.idx)?.f_to_device(device)?;
    let sel = logits
        .f_reshape([bsz * a_n, -1])?
        .f_index_select(0, &idx)?
        .f_narrow(1, 0, 4 * reg)?
        .f_reshape([n, 4, reg])?;
    let d = expectation(&sel)?;
    // Box corners: centre + sign · distance · stride.
    let pb = t(&tg.centre, &[n, 4])?.f_add(
        &d.f_mul(&t(&tg.stride, &[n, 4])?)?
            .f_mul(&t(&tg.sign, &[n, 4])?)?,
    )?;
    let tb = t(&tg.target, &[n, 4])?;
    let wt = t(&tg.weight, &[n])?;
    let col = |x: &Tensor, i: i64| x.f_narrow(1, i, 1);
    let iw = col(&pb, 2)?
        .f_minimum(&col(&tb, 2)?)?
        .f_sub(&col(&pb, 0)?.f_maximum(&col(&tb, 0)?)?)?
        .f_relu()?;
    let ih = col(&pb, 3)?
        .f_minimum(&col(&tb, 3)?)?
        .f_sub(&col(&pb, 1)?.f_maximum(&col(&tb, 1)?)?)?
        .f_relu()?;
    let inter = iw.f_mul(&ih)?;
    let area = |b: &Tensor| -> Result<Tensor, tch::TchError> {
        col(b, 2)?
            .f_sub(&col(b, 0)?)?
            .f_relu()?
            .f_mul(&col(b, 3)?.f_sub(&col(b, 1)?)?.f_relu()?)
    };
    let union = area(&pb)?
        .f_add(&area(&tb)?)?
        .f_sub(&inter)?
        .f_add_scalar(1e-7)?;
    let iou = inter.f_div(&union)?.f_squeeze_dim(1)?;
    let iou_loss = iou.f_neg()?.f_add_scalar(1.0)?.f_mul(&wt)?.f_sum(kind)?;
    let dfl = sel
        .f_log_softmax(-1, kind)?
        .f_mul(&t(&tg.dfl, &[n, 4, reg])?)?
        .f_sum_dim_intlist([-1i64].as_slice(), false, kind)?
        .f_mean_dim([1i64].as_slice(), false, kind)?
        .f_neg()?;
    let dfl_loss = dfl.f_mul(&wt)?.f_sum(kind)?;
    Ok(iou_loss
        .f_div_scalar(tg.norm)?
        .f_mul_scalar(g_iou)?
        .f_add(&cls_loss.f_mul_scalar(g_cls)?)?
        .f_add(&dfl_loss.f_div_scalar(tg.norm)?.f_mul_scalar(g_dfl)?)?)
}

/// A candle CPU tensor as a libtorch tensor of `kind` on `device`.
fn from_candle(t: &candle_core::Tensor, kind: Kind, device: Device) -> Result<Tensor, Error> {
    let dims: Vec<i64> = t.dims().iter().map(|&d| d as i64).collect();
    let x = match t.dtype() {
        candle_core::DType::U32 | candle_core::DType::I64 | candle_core::DType::U8 => {
            let v: Vec<i64> = t
                .to_dtype(candle_core::DType::I64)?
                .flatten_all()?
                .to_vec1()?;
            Tensor::f_from_slice(&v)
        }
        _ => {
            let v: Vec<f32> = t
                .to_dtype(candle_core::DType::F32)?
                .flatten_all()?
                .to_vec1()?;
            Tensor::f_from_slice(&v).and_then(|x| x.f_to_kind(kind))
        }
    };
    x.and_then(|x| x.f_reshape(&dims))
        .and_then(|x| x.f_to_device(device))
        .map_err(torch_err)
}

impl Trainer for TorchTrainer {
    fn step(&mut self, w: &dyn Workload, idx: &[usize]) -> Result<(), Error> {
        let (kind, device) = (self.graph.kind, self.graph.device);
        let b = w.batch(idx, &candle_core::Device::Cpu, candle_core::DType::F32)?;
        let x = from_candle(&b.x, kind, device)?;
        let names: Vec<&str> = self.objective.outputs.iter().map(String::as_str).collect();
        let outs = self.graph.forward(&[(w.input_name(), x)], &names)?;
        let loss = match self.objective.loss {
            Loss::Mse => {
                let y = from_candle(&b.y, kind, device)?;
                outs[0].f_mse_loss(&y, Reduction::Mean).map_err(torch_err)?
            }
            Loss::CrossEntropy => {
                let y = from_candle(&b.y, kind, device)?;
                outs[0]
                    .f_to_kind(Kind::Float)
                    .and_then(|o| o.f_log_softmax(-1, Kind::Float))
                    .and_then(|l| l.f_nll_loss(&y, None::<Tensor>, Reduction::Mean, -100))
                    .map_err(torch_err)?
            }
            Loss::Detection => {
                let rows: Vec<f32> = b.y.flatten_all()?.to_vec1()?;
                detection_loss(w, &outs, &rows).map_err(|e| match e {
                    Tl::Torch(e) => torch_err(e),
                    Tl::Other(e) => e,
                })?
            }
        };
        self.opt.zero_grad().map_err(torch_err)?;
        loss.f_backward().map_err(torch_err)?;
        if let Some(max) = w.max_grad_norm() {
            self.clip(max)?;
        }
        self.opt.step().map_err(torch_err)?;
        if let Some(n) = self.cuda {
            tch::Cuda::synchronize(n as i64);
        }
        self.last = Some(loss);
        Ok(())
    }
    fn last_loss(&self) -> Result<f64, Error> {
        match &self.last {
            Some(l) => l.f_double_value(&[]).map_err(torch_err),
            None => Ok(f64::NAN),
        }
    }
    fn evaluate(&self, w: &dyn Workload) -> Result<Evaluation, Error> {
        let weights = self.graph.weights()?;
        let g = Graph::new(
            &self.model,
            &candle_core::Device::Cpu,
            candle_core::DType::F32,
            Some(&weights),
        )?;
        Ok(w.evaluate(&g)?)
    }
    fn into_graph(self: Box<Self>) -> Result<Graph, Error> {
        let weights = self.graph.weights()?;
        Ok(Graph::new(
            &self.model,
            &candle_core::Device::Cpu,
            candle_core::DType::F32,
            Some(&weights),
        )?)
    }
}
