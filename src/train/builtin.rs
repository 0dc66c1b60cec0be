//! The candle trainer: one run of a built-in workload. Steps: data → graph → optimizer →
//! epochs of timed steps (T0 when the batch is handed to the input, T1 after the update
//! and the device's synchronisation) → an evaluation after each epoch (on the clock) →
//! per-epoch telemetry from one sampler over the run → weights and mllog events.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use candle_core::{DType, Device};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};

use super::graph::Graph;
use super::mllog::Log;
use super::timing::Window;
use super::workload::{Workload, shuffle};
use super::{Epochs, TrainSettings};
use crate::report::schema::train::EvalPoint;
use crate::util::progress::Progress;
use crate::util::signal::INTERRUPTED;

/// What one run measured (the report is built from it in `mod.rs`).
pub struct RunResult {
    pub epochs: Epochs,
    pub step_ms: Vec<f64>,
    pub warmup_steps: usize,
    pub graph: Graph,
    pub log: Log,
    pub error: Option<String>,
    pub final_eval: Option<super::workload::Evaluation>,
}

/// The device `name` (`cpu`, `cuda`, `cuda:N`): CUDA only when compiled with it.
pub fn device(name: &str) -> anyhow::Result<Device> {
    match name {
        "cpu" => Ok(Device::Cpu),
        d if d == "cuda" || d.starts_with("cuda:") => {
            let ordinal: usize = d
                .strip_prefix("cuda:")
                .map(|n| n.parse())
                .transpose()
                .map_err(|_| anyhow::anyhow!("--device '{d}': the ordinal is not a number"))?
                .unwrap_or(0);
            if !cfg!(feature = "candle-cuda") {
                anyhow::bail!(
                    "--device {d}: acceval was not compiled with CUDA for training; rebuild on a CUDA host with `cargo build --release --features candle-cuda`"
                );
            }
            Device::new_cuda(ordinal).map_err(|e| anyhow::anyhow!("--device {d}: {e}"))
        }
        d => anyhow::bail!("--device '{d}' is neither cpu nor cuda[:N]"),
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
    error: Option<String>,
}

/// The timed steps of epoch `e`: the seeded order, T0 before the batch reaches the
/// device, T1 after the update and the synchronisation, the loss read after T1.
#[allow(clippy::too_many_arguments)]
fn train_epoch(
    s: &TrainSettings,
    w: &dyn Workload,
    dev: &Device,
    graph: &Graph,
    opt: &mut AdamW,
    e: usize,
    batch: usize,
    progress: &Progress,
    stop: &AtomicBool,
) -> anyhow::Result<EpochSteps> {
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
            out.error = Some(INTERRUPTED.to_string());
            break;
        }
        let t0 = Instant::now();
        let b = w.batch(chunk, dev, dtype(&s.precision))?;
        let loss = w.loss(graph, &b)?;
        opt.backward_step(&loss)?;
        dev.synchronize()?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        // The loss leaves the device after T1 (a copy that would synchronise).
        let l = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        if !l.is_finite() {
            out.error = Some(format!("the loss is {l} in epoch {e}: lower --lr"));
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
) -> anyhow::Result<RunResult> {
    let dt = dtype(&s.precision);
    let mut log = Log::default();
    log.start("init_start", &[]);
    let graph = Graph::new(&w.model(), dev, dt, None)?;
    let mut opt = AdamW::new(
        graph.vars(),
        ParamsAdamW {
            lr: s.lr.unwrap_or(w.default_lr()),
            weight_decay: 0.0,
            ..Default::default()
        },
    )?;
    let batch = s.batch.unwrap_or(w.default_batch());
    log.event("seed", s.seed.into(), &[]);
    log.event("global_batch_size", batch.into(), &[]);
    log.event("opt_name", "adamw".into(), &[]);
    log.event("train_samples", w.train_len().into(), &[]);
    log.end("init_stop", &[]);
    log.start("run_start", &[]);
    let run_start = Instant::now();
    let mut epochs = Epochs::default();
    let mut step_ms = Vec::new();
    let mut steps_done = 0usize;
    let mut error = None;
    let mut final_eval = None;
    progress.set_length((s.epochs * w.train_len().div_ceil(batch)) as u64);
    'epochs: for e in 1..=s.epochs {
        log.start("epoch_start", &[("epoch_num", e as u64)]);
        let t_epoch = Instant::now();
        let ep = train_epoch(s, w, dev, &graph, &mut opt, e, batch, progress, stop)?;
        for (i, ms) in ep.step_ms.into_iter().enumerate() {
            if steps_done + i >= s.warmup_steps {
                step_ms.push(ms);
            }
        }
        steps_done += ep.steps;
        let (losses, samples) = (ep.losses, ep.samples);
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
        log.start("eval_start", &[("epoch_num", e as u64)]);
        let ev = w.evaluate(&graph)?;
        log.end("eval_stop", &[("epoch_num", e as u64)]);
        log.event(
            "eval_accuracy",
            ev.held_out.value.into(),
            &[("epoch_num", e as u64)],
        );
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
        graph,
        log,
        error,
        final_eval,
    })
}
