//! The trainer's loop: one run of a built-in workload on an engine (`engine`: candle or
//! libtorch). Steps: data → graph → optimizer →
//! epochs of timed steps (T0 when the batch is handed to the input, T1 after the update
//! and the device's synchronisation) → an evaluation after each epoch (on the clock) →
//! per-epoch telemetry from one sampler over the run → weights and mllog events.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use candle_core::{DType, Device};

use super::engine::Trainer;
use super::graph::Graph;
use super::mllog::Log;
use super::timing::Window;
use super::workload::{Workload, shuffle};
use super::{Epochs, TrainSettings};
use crate::report::schema::train::EvalPoint;
use crate::util::progress::Progress;
use crate::util::signal::Cut;

/// What one run measured (the report is built from it in `mod.rs`).
pub struct RunResult {
    pub epochs: Epochs,
    pub step_ms: Vec<f64>,
    pub warmup_steps: usize,
    pub graph: Graph,
    pub log: Log,
    /// Why the run ended early, when it did.
    pub error: Option<Cut>,
    pub final_eval: Option<super::workload::Evaluation>,
}

/// The candle device of `d`: CUDA only when compiled with it.
pub fn device(d: super::TrainDevice) -> Result<Device, super::Error> {
    match d {
        super::TrainDevice::Cpu => Ok(Device::Cpu),
        super::TrainDevice::Cuda(ordinal) => {
            let device = format!("candle:cuda@{ordinal}");
            if !cfg!(feature = "candle-cuda") {
                return Err(super::Error::NoCuda { device });
            }
            Device::new_cuda(ordinal).map_err(|err| super::Error::Device { device, err })
        }
    }
}

pub fn dtype(p: &str) -> DType {
    match p {
        "fp16" => DType::F16,
        "fp64" => DType::F64,
        _ => DType::F32,
    }
}

/// What one epoch's steps measured.
struct EpochSteps {
    step_ms: Vec<f64>,
    steps: usize,
    losses: Vec<f64>,
    samples: u64,
    error: Option<Cut>,
}

/// Scales the gradients of `vars` down so that their total L2 norm is at most `max`, as
/// `torch.nn.utils.clip_grad_norm_` does; returns the norm before clipping. candle has no
/// such helper, hence these lines.
pub fn clip_grad_norm(
    grads: &mut candle_core::backprop::GradStore,
    vars: &[candle_core::Var],
    max: f64,
) -> candle_core::Result<f64> {
    let mut sq = 0f64;
    for v in vars {
        if let Some(g) = grads.get(v) {
            sq += g
                .to_dtype(DType::F64)?
                .sqr()?
                .sum_all()?
                .to_scalar::<f64>()?;
        }
    }
    let norm = sq.sqrt();
    if norm.is_finite() && norm > max {
        let k = max / (norm + 1e-6);
        for v in vars {
            if let Some(g) = grads.remove(v) {
                grads.insert(v, g.affine(k, 0.0)?);
            }
        }
    }
    Ok(norm)
}

/// The timed steps of epoch `e`: the seeded order, T0 before the batch reaches the
/// device, T1 after the update and the synchronisation, the loss read after T1.
#[allow(clippy::too_many_arguments)]
fn train_epoch(
    s: &TrainSettings,
    w: &dyn Workload,
    trainer: &mut dyn Trainer,
    e: usize,
    batch: usize,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<EpochSteps, super::Error> {
    let mut order: Vec<usize> = (0..w.train_len()).collect();
    shuffle(&mut order, s.seed.wrapping_add(e as u64));
    let mut out = EpochSteps {
        step_ms: Vec::new(),
        steps: 0,
        losses: Vec::new(),
        samples: 0,
        error: None,
    };
    for chunk in order.chunks(batch) {
        if stop.load(Ordering::Relaxed) {
            out.error = Some(Cut::Interrupted);
            break;
        }
        let t0 = Instant::now();
        trainer.step(w, chunk)?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        // The loss leaves the device after T1 (a copy that would synchronise).
        let l = trainer.last_loss()?;
        if !l.is_finite() {
            out.error = Some(Cut::Failed(format!(
                "the loss is {l} in epoch {e}: lower the learning rate"
            )));
            break;
        }
        out.step_ms.push(ms);
        out.steps += 1;
        out.losses.push(l);
        out.samples += chunk.len() as u64;
        progress.inc(1);
        progress.set_message(format!("epoch {e}/{} loss {l:.4}", s.epochs));
    }
    Ok(out)
}

/// One training run.
pub fn run_once(
    s: &TrainSettings,
    w: &dyn Workload,
    dev: &Device,
    clock: &super::Clock,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<RunResult, super::Error> {
    let mut log = Log::default();
    log.start("init_start", &[]);
    let mut trainer = super::engine::start(s, w, dev)?;
    let batch = s.batch.unwrap_or(w.default_batch());
    let benchmark = match &s.source {
        super::Source::Builtin(name) => name.as_str(),
        super::Source::Exec(_) => "exec",
    };
    log.submission(&s.submission, benchmark);
    // acceval drops no OS caches (the data is in memory from the start): said as false.
    log.event("cache_clear", false.into(), &[]);
    log.event("seed", s.seed.into(), &[]);
    log.event("global_batch_size", batch.into(), &[]);
    log.event("gradient_accumulation_steps", 1.into(), &[]);
    log.event("opt_name", "adamw".into(), &[]);
    log.event("train_samples", w.train_len().into(), &[]);
    log.end("init_stop", &[]);
    log.start("run_start", &[]);
    let run_start = Instant::now();
    let mut epochs = Epochs::default();
    let mut step_ms = Vec::new();
    let mut steps_done = 0usize;
    // Samples trained so far (MLPerf's samples_count at an evaluation).
    let mut trained = 0u64;
    let mut error = None;
    let mut final_eval = None;
    progress.set_length((s.epochs * w.train_len().div_ceil(batch)) as u64);
    'epochs: for e in 1..=s.epochs {
        log.start("epoch_start", &[("epoch_num", e as u64)]);
        let t_epoch = Instant::now();
        let ep = train_epoch(s, w, trainer.as_mut(), e, batch, progress, stop)?;
        for (i, ms) in ep.step_ms.into_iter().enumerate() {
            if steps_done + i >= s.warmup_steps {
                step_ms.push(ms);
            }
        }
        steps_done += ep.steps;
        let (losses, samples) = (ep.losses, ep.samples);
        trained += samples;
        if error.is_none() {
            error = ep.error;
        }
        let end = Instant::now();
        log.end(
            "epoch_stop",
            &[("epoch_num", e as u64), ("samples_count", samples)],
        );
        let window = Window {
            start_ms: clock.ms(t_epoch),
            end_ms: clock.ms(end),
        };
        let loss = (!losses.is_empty()).then(|| losses.iter().sum::<f64>() / losses.len() as f64);
        if error.is_some() {
            // A partial epoch is not an epoch of §7.1.5: keep the steps, not the epoch.
            break 'epochs;
        }
        if !(e % s.eval_every.max(1) == 0 || e == s.epochs) {
            epochs.push(window, samples, loss, None);
            progress.note(format!(
                "epoch {e}: {:.2} s, loss {:.5} (no evaluation: every {} epochs)",
                (end - t_epoch).as_secs_f64(),
                loss.unwrap_or(f64::NAN),
                s.eval_every
            ));
            continue;
        }
        let at = [("epoch_num", e as u64), ("samples_count", trained)];
        log.start("eval_start", &at);
        let ev = trainer.evaluate(w)?;
        log.end("eval_stop", &at);
        if !log.has("eval_samples") {
            log.event("eval_samples", ev.held_out.samples.into(), &[]);
        }
        log.event("eval_accuracy", ev.held_out.value.into(), &at);
        progress.note(format!(
            "epoch {e}: {:.2} s, loss {:.5}, held-out {} {:.4} (baseline {:.4})",
            (end - t_epoch).as_secs_f64(),
            loss.unwrap_or(f64::NAN),
            ev.held_out.metric,
            ev.held_out.value,
            ev.held_out.baseline_value
        ));
        let point = EvalPoint {
            metric: ev.held_out.metric.clone(),
            value: ev.held_out.value,
            at_s: run_start.elapsed().as_secs_f64(),
        };
        epochs.push(window, samples, loss, Some(point.clone()));
        final_eval = Some(ev);
        if let Some(t) = &s.target
            && let Some(v) = epochs.metric(&t.metric)
            && t.reached(v)
        {
            epochs.reached(e, point.at_s);
            break;
        }
    }
    log.run_stop(error.is_none());
    Ok(RunResult {
        epochs,
        step_ms,
        warmup_steps: steps_done.min(s.warmup_steps),
        graph: trainer.into_graph()?,
        log,
        error,
        final_eval,
    })
}

/// One batch size of the §7.1.6 peak-power sweep.
pub struct SweepStep {
    pub batch: usize,
    pub samples_per_s: f64,
    pub window: Window,
}

/// The most the sweep raises the batch over the training batch. On the CPU a failed
/// allocation aborts the process instead of returning an error, so the sweep cannot run
/// "up to out of memory" there; it stops at a throughput plateau, at the training set's
/// size, or at this factor.
const SWEEP_MAX_FACTOR: usize = 16;

/// Steps timed per batch size of the sweep (after one warm-up step).
const SWEEP_STEPS: usize = 3;

/// §7.1.6 peak power: training steps on a fresh copy of the graph at the training batch
/// b, then 2b, 4b, ... until the throughput grows by less than 5 %, a step fails (out of
/// device memory), the batch passes the training set or `SWEEP_MAX_FACTOR` × b. Each
/// batch's window (on the run's clock) gives its largest power sample to the caller.
pub fn peak_sweep(
    s: &TrainSettings,
    w: &dyn Workload,
    dev: &Device,
    clock: &super::Clock,
    stop: &AtomicBool,
) -> Result<(Vec<SweepStep>, String), super::Error> {
    let mut trainer = super::engine::start(s, w, dev)?;
    let base = s.batch.unwrap_or(w.default_batch());
    let order: Vec<usize> = (0..w.train_len()).collect();
    let mut out: Vec<SweepStep> = Vec::new();
    let mut batch = base;
    let end = loop {
        if stop.load(Ordering::Relaxed) {
            break Cut::Interrupted.to_string();
        }
        if batch > w.train_len() {
            break format!(
                "the batch passed the training set ({} samples)",
                w.train_len()
            );
        }
        if batch > SWEEP_MAX_FACTOR * base {
            break format!(
                "the batch reached {SWEEP_MAX_FACTOR}× the training batch (on the CPU an allocation failure aborts instead of failing, so the sweep does not go to out of memory)"
            );
        }
        let idx = &order[..batch];
        let mut step = || trainer.step(w, idx);
        if let Err(e) = step() {
            break format!("batch {batch} failed ({e}): taken as the memory limit");
        }
        let t0 = Instant::now();
        let mut failed = None;
        for _ in 0..SWEEP_STEPS {
            if let Err(e) = step() {
                failed = Some(e);
                break;
            }
        }
        if let Some(e) = failed {
            break format!("batch {batch} failed ({e}): taken as the memory limit");
        }
        let t1 = Instant::now();
        let rate = (SWEEP_STEPS * batch) as f64 / (t1 - t0).as_secs_f64();
        out.push(SweepStep {
            batch,
            samples_per_s: rate,
            window: Window {
                start_ms: clock.ms(t0),
                end_ms: clock.ms(t1),
            },
        });
        if let [.., a, b] = out.as_slice()
            && b.samples_per_s < a.samples_per_s * 1.05
        {
            break format!(
                "throughput grew less than 5 % from batch {} to {}",
                a.batch, b.batch
            );
        }
        batch *= 2;
    };
    Ok((out, end))
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor, Var};

    #[test]
    fn gradients_are_clipped_to_the_norm_and_small_ones_are_kept() {
        let dev = Device::Cpu;
        let w = Var::from_tensor(&Tensor::ones(4, candle_core::DType::F32, &dev).unwrap()).unwrap();
        // d(sum(3w))/dw = 3 everywhere: norm √(4·9) = 6.
        let loss = w.as_tensor().affine(3.0, 0.0).unwrap().sum_all().unwrap();
        let mut g = loss.backward().unwrap();
        let before = super::clip_grad_norm(&mut g, std::slice::from_ref(&w), 1.5).unwrap();
        assert!((before - 6.0).abs() < 1e-9, "{before}");
        let after: Vec<f32> = g.get(&w).unwrap().to_vec1().unwrap();
        assert!(after.iter().all(|x| (x - 0.75).abs() < 1e-5), "{after:?}");
        // Under the bound nothing changes.
        let mut g = loss.backward().unwrap();
        super::clip_grad_norm(&mut g, std::slice::from_ref(&w), 10.0).unwrap();
        let kept: Vec<f32> = g.get(&w).unwrap().to_vec1().unwrap();
        assert_eq!(kept, [3.0; 4]);
    }
}
