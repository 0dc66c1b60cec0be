//! What trains a built-in workload's graph: candle (`graph`, acceval's interpreter of the
//! zoo's ONNX graphs on candle's operators; the default) or libtorch (`torch`, the same
//! graph on libtorch's operators and optimizer; cargo feature `tch`). The loop, the clocks,
//! the data order, the starting weights, the evaluations and the mllog (`builtin`) are the
//! same for both, so their step times compare the frameworks on one workload and batch.

use candle_core::{DType, Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};

use super::graph::Graph;
use super::workload::{Evaluation, Workload};
use super::{Error, TrainSettings};

/// The framework that trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    #[default]
    Candle,
    /// libtorch through the `tch` crate.
    Tch,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Candle => "candle",
            Engine::Tch => "tch",
        }
    }
}

/// The loss a workload's graph is trained on, where it is one a framework names: the
/// engines other than candle build it from this (candle calls the workload's own `loss`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The mean squared error between the output and the targets.
    Mse,
    /// Softmax cross-entropy of the output's logits against class indices, the batch mean.
    CrossEntropy,
    /// YOLOv8's loss (`detect`): the head's levels as logits [B, A, 4·16 + classes], the
    /// targets from the workload's assignment (`Workload::detection_targets`), BCE +
    /// 1 − IoU + DFL with `detect::GAINS`.
    Detection,
}

/// The graph outputs the loss reads and the loss.
#[derive(Debug, Clone)]
pub struct Objective {
    pub outputs: Vec<String>,
    pub loss: Loss,
}

/// One framework's training state: the graph's weights, the optimizer and the last loss.
pub trait Trainer {
    /// One optimizer step on the training samples `idx`: the batch to the device, forward,
    /// loss, backward, gradient clipping when the workload asks for it, the AdamW update and
    /// the device's synchronisation (it returns at T1).
    fn step(&mut self, w: &dyn Workload, idx: &[usize]) -> Result<(), Error>;
    /// The last step's loss (read after T1: the copy synchronises).
    fn last_loss(&self) -> Result<f64, Error>;
    /// The held-out evaluation of the current weights.
    fn evaluate(&self, w: &dyn Workload) -> Result<Evaluation, Error>;
    /// The trained graph on candle (the weights to save and the ONNX to export).
    fn into_graph(self: Box<Self>) -> Result<Graph, Error>;
}

/// Keeps the memory the process frees for its next allocations instead of handing it back
/// to the kernel (glibc: no allocation served by its own `mmap`, no trimming of the heap
/// below 2 GiB free). A training step allocates and frees the same activation and gradient
/// sizes every step; with glibc's defaults each large one was a fresh `mmap`, whose pages the
/// kernel clears on first touch: `clear_page_erms` was 40 % of a candle MobileNetV2 step
/// (perf, batch 32 at 96 px). Set for the whole training process, on both engines. Returns
/// whether the allocator took the settings (false off glibc).
pub fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets glibc's allocator parameters (under its own lock); both
        // values are in the documented ranges.
        unsafe {
            libc::mallopt(libc::M_MMAP_MAX, 0) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// A fresh trainer of `w` from its seeded weights: on candle on `dev` (the device the
/// batches are made on; libtorch takes them from the CPU).
pub fn start(s: &TrainSettings, w: &dyn Workload, dev: &Device) -> Result<Box<dyn Trainer>, Error> {
    let lr = s.lr.unwrap_or(w.default_lr());
    match s.engine {
        Engine::Candle => Ok(Box::new(CandleTrainer::new(
            w,
            dev,
            super::builtin::dtype(&s.precision),
            lr,
        )?)),
        Engine::Tch => tch_trainer(s, w, lr),
    }
}

#[cfg(feature = "tch")]
fn tch_trainer(s: &TrainSettings, w: &dyn Workload, lr: f64) -> Result<Box<dyn Trainer>, Error> {
    Ok(Box::new(super::torch::TorchTrainer::new(
        w,
        s.device,
        &s.precision,
        lr,
    )?))
}

#[cfg(not(feature = "tch"))]
fn tch_trainer(_: &TrainSettings, _: &dyn Workload, _: f64) -> Result<Box<dyn Trainer>, Error> {
    Err(Error::Torch(NOT_COMPILED.into()))
}

/// Why the tch engine is absent from a build without the feature.
pub const NOT_COMPILED: &str = "not compiled (cargo feature tch): build with `scripts/with-torch.sh cargo build --release --features tch` and run through scripts/with-torch.sh";

/// What `report.device` says: the device and the threads the framework's CPU kernels use.
pub fn device_text(s: &TrainSettings) -> String {
    match s.engine {
        Engine::Candle => format!(
            "{} ({} thread(s))",
            s.device,
            candle_core::utils::get_num_threads()
        ),
        #[cfg(feature = "tch")]
        Engine::Tch => super::torch::device_text(s.device),
        #[cfg(not(feature = "tch"))]
        Engine::Tch => format!("{} (tch not compiled)", s.device),
    }
}

/// The candle trainer: the graph's initializers as `Var`s, candle's AdamW.
pub struct CandleTrainer {
    graph: Graph,
    opt: AdamW,
    dev: Device,
    dt: DType,
    last: Option<Tensor>,
}

impl CandleTrainer {
    pub fn new(w: &dyn Workload, dev: &Device, dt: DType, lr: f64) -> Result<Self, Error> {
        let graph = Graph::new(&w.model(), dev, dt, None)?;
        let opt = AdamW::new(
            graph.vars(),
            ParamsAdamW {
                lr,
                weight_decay: 0.0,
                ..Default::default()
            },
        )?;
        Ok(CandleTrainer {
            graph,
            opt,
            dev: dev.clone(),
            dt,
            last: None,
        })
    }
}

impl Trainer for CandleTrainer {
    fn step(&mut self, w: &dyn Workload, idx: &[usize]) -> Result<(), Error> {
        let b = w.batch(idx, &self.dev, self.dt)?;
        let loss = w.loss(&self.graph, &b)?;
        let mut grads = loss.backward()?;
        if let Some(max) = w.max_grad_norm() {
            super::builtin::clip_grad_norm(&mut grads, &self.graph.vars(), max)?;
        }
        self.opt.step(&grads)?;
        self.dev.synchronize()?;
        self.last = Some(loss);
        Ok(())
    }
    fn last_loss(&self) -> Result<f64, Error> {
        match &self.last {
            Some(l) => Ok(l.to_dtype(DType::F64)?.to_scalar::<f64>()?),
            None => Ok(f64::NAN),
        }
    }
    fn evaluate(&self, w: &dyn Workload) -> Result<Evaluation, Error> {
        Ok(w.evaluate(&self.graph)?)
    }
    fn into_graph(self: Box<Self>) -> Result<Graph, Error> {
        Ok(self.graph)
    }
}
