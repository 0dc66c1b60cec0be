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
        Engine::Candle => {
            let mut t = CandleTrainer::new(w, dev, super::builtin::dtype(&s.precision), lr)?;
            t.dp = s.data_parallel.clone();
            Ok(Box::new(t))
        }
        Engine::Tch if s.data_parallel.is_some() => Err(Error::DataParallel(
            "runs on candle only (--backend candle); libtorch's own DistributedDataParallel is torchrun's job".into(),
        )),
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
            "{} ({} thread(s); candle's elementwise ops on {})",
            s.device,
            candle_core::utils::get_num_threads(),
            match std::env::var("CANDLE_NUM_THREADS").ok().as_deref() {
                Some("1") => "the calling thread (CANDLE_NUM_THREADS=1)".to_string(),
                Some(n) => format!("CANDLE_NUM_THREADS={n}"),
                // Unset, candle sizes that pool like rayon's.
                None => format!("{} thread(s)", candle_core::utils::get_num_threads()),
            }
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
    /// Data-parallel: the all-reduce of the gradients over the ranks.
    dp: Option<super::DataParallel>,
}

impl CandleTrainer {
    pub fn new(w: &dyn Workload, dev: &Device, dt: DType, lr: f64) -> Result<Self, Error> {
        let mut graph = Graph::new(&w.model(), dev, dt, None)?;
        if let Some(keep) = w.trainable() {
            graph.freeze_except(&keep);
        }
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
            dp: None,
        })
    }
}

impl CandleTrainer {
    /// One step of data-parallel training: this rank's share of the global batch `idx`
    /// (an even split, the remainder to the first ranks), its gradients and loss weighted by
    /// its share (so that their sum over the ranks is the gradient of the global batch's mean
    /// loss), summed over the ranks, then clipping and the update, the same on every rank.
    fn data_parallel_step(
        &mut self,
        w: &dyn Workload,
        idx: &[usize],
        dp: &super::DataParallel,
    ) -> Result<(), Error> {
        let t0 = std::time::Instant::now();
        let mut red =
            dp.0.lock()
                .map_err(|_| Error::DataParallel("the all-reduce was poisoned".into()))?;
        let share = crate::report::schema::cluster::Shard::of(idx.len(), red.world, red.rank);
        let local = &idx[share.start..share.end];
        let k = local.len() as f64 / idx.len().max(1) as f64;
        let vars = self.graph.vars();
        let mut flat: Vec<f32> = Vec::new();
        let mut loss_here = 0.0;
        if local.is_empty() {
            for v in &vars {
                flat.extend(std::iter::repeat_n(0f32, v.elem_count()));
            }
        } else {
            let b = w.batch(local, &self.dev, self.dt)?;
            let loss = w.loss(&self.graph, &b)?;
            let grads = loss.backward()?;
            for v in &vars {
                match grads.get(v) {
                    Some(g) => flat.extend(
                        g.affine(k, 0.0)?
                            .flatten_all()?
                            .to_dtype(DType::F32)?
                            .to_vec1::<f32>()?,
                    ),
                    None => flat.extend(std::iter::repeat_n(0f32, v.elem_count())),
                }
            }
            loss_here = loss.to_dtype(DType::F64)?.to_scalar::<f64>()? * k;
        }
        flat.push(loss_here as f32);
        red.all_reduce_sum(&mut flat)
            .map_err(|e| Error::DataParallel(e.to_string()))?;
        let mut grads = candle_core::backprop::GradStore::default();
        let mut at = 0;
        for v in &vars {
            let n = v.elem_count();
            let g =
                Tensor::from_slice(&flat[at..at + n], v.shape(), &self.dev)?.to_dtype(v.dtype())?;
            grads.insert(v, g);
            at += n;
        }
        if let Some(max) = w.max_grad_norm() {
            super::builtin::clip_grad_norm(&mut grads, &vars, max)?;
        }
        self.opt.step(&grads)?;
        self.dev.synchronize()?;
        self.last = Some(Tensor::new(flat[at], &self.dev)?);
        red.local_samples += local.len() as u64;
        red.step_seconds += t0.elapsed().as_secs_f64();
        Ok(())
    }
}

impl Trainer for CandleTrainer {
    fn step(&mut self, w: &dyn Workload, idx: &[usize]) -> Result<(), Error> {
        if let Some(dp) = self.dp.clone() {
            return self.data_parallel_step(w, idx, &dp);
        }
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
