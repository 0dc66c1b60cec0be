//! Training evaluation (§7.1, optional in the draft): `acceval train`.
//!
//! Two sources of a training: a built-in workload on acceval's candle trainer (`builtin`:
//! the zoo's graphs trained on the project's labelled data, `workload`, `forecast`,
//! `classify`, `detect`), or a lab's own training process (`exec`), read through the MLPerf
//! `:::MLLOG` events it prints (`mllog`). Both give the same [`TrainReport`]: single-step
//! and total time (§7.1.3), utilization per epoch (§7.1.4), throughput (§7.1.5), power
//! (§7.1.6) and energy efficiency (§7.1.7), from one telemetry sampler over the run whose
//! ticks are cut into epoch windows (`timing`). This module owns the settings and the
//! report; views are in `report::train`, the command in `commands::train`.

pub mod act;
pub mod builtin;
pub mod classify;
pub mod conv;
mod cpu;
pub mod depthwise;
pub mod detect;
pub mod engine;
pub mod exec;
pub mod forecast;
pub mod graph;
pub mod lstm;
pub mod mllog;
pub mod probe;
pub mod timing;
#[cfg(feature = "tch")]
pub mod torch;
pub mod workload;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::device::telemetry::{self, Recording, SensorStatus};
use crate::measure::bench::TelemetrySettings;
use crate::measure::stats::Summary;
use crate::report::schema::telemetry::State;
use crate::report::schema::train::TRAIN_SCHEMA_VERSION;
pub use crate::report::schema::train::{
    DataRef, Division, Epoch, EvalPoint, Measured, PeakPowerStep, PrecisionSupport, Repeat,
    RunSummary, StepStats, Submission, Target, TrainMode, TrainPower, TrainReport,
};
use crate::util::progress::Progress;
use crate::util::signal::Cut;
use timing::Window;

/// A setting of a training ([`TrainSettings`]), by the field that holds it (the CLI shows
/// its flag, `grade` its profile's `[train]` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The built-in workload's name.
    Workload,
    /// The lab's command line.
    Exec,
    Precision,
    /// The image side the image workloads train at.
    ImageSize,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Setting::Workload => "workload",
            Setting::Exec => "exec",
            Setting::Precision => "precision",
            Setting::ImageSize => "image_size",
        })
    }
}

/// Why a training could not be run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Setting(#[from] crate::util::setting::SettingError<Setting>),
    #[error(
        "{device}: acceval was not compiled with CUDA for training; rebuild on a CUDA host with `cargo build --release --features candle-cuda`"
    )]
    NoCuda { device: String },
    #[error("{device}: {err}")]
    Device {
        device: String,
        err: candle_core::Error,
    },
    /// A tensor operation of the trainer failed.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
    /// The libtorch trainer failed, or is not in this build.
    #[error("training on libtorch: {0}")]
    Torch(String),
    #[error("cannot start '{program}': {err}")]
    Start {
        program: String,
        err: std::io::Error,
    },
    #[error("the training process gave no stdout pipe")]
    NoStdout,
    #[error("waiting for the training process: {0}")]
    Wait(std::io::Error),
    #[error("no input set '{0}'")]
    NoInputSet(&'static str),
    /// Data-parallel training lost a rank, or cannot run on this engine.
    #[error("data-parallel training: {0}")]
    DataParallel(String),
    #[error("no zoo model '{0}'")]
    NoZooModel(String),
    #[error("cannot write '{}': {err}", path.display())]
    SaveWeights {
        path: PathBuf,
        err: candle_core::Error,
    },
    #[error("cannot write the training record: {0}")]
    Record(toml::ser::Error),
    #[error(transparent)]
    Task(#[from] crate::task::Error),
    #[error(transparent)]
    Series(#[from] crate::task::forecast::SeriesError),
    #[error(transparent)]
    Image(#[from] crate::task::image::ImageError),
    #[error(transparent)]
    Zoo(#[from] crate::zoo::Error),
    #[error(transparent)]
    Backend(#[from] crate::backend::BackendError),
    #[error(transparent)]
    Files(#[from] crate::util::Error),
}

/// What to train.
#[derive(Debug, Clone)]
pub enum Source {
    Builtin(String),
    /// The lab's command line.
    Exec(Vec<String>),
}

/// Where candle trains (`--backend candle` / `candle:cuda@N`); written `cpu` / `cuda:N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainDevice {
    Cpu,
    Cuda(usize),
}

impl std::fmt::Display for TrainDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrainDevice::Cpu => f.write_str("cpu"),
            TrainDevice::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// Everything `acceval train` needs, validated.
#[derive(Debug, Clone)]
pub struct TrainSettings {
    pub source: Source,
    pub epochs: usize,
    /// `None`: the workload's default.
    pub batch: Option<usize>,
    pub lr: Option<f64>,
    pub seed: u64,
    /// fp32, fp16 or fp64.
    pub precision: String,
    pub target: Option<Target>,
    pub repeat: usize,
    /// The framework that trains a built-in workload.
    pub engine: engine::Engine,
    pub device: TrainDevice,
    /// Steps left out of the step statistics (they stay in the total).
    pub warmup_steps: usize,
    /// Evaluate after every Nth epoch and after the last.
    pub eval_every: usize,
    pub workload: workload::WorkloadOptions,
    pub telemetry: TelemetrySettings,
    /// Where to save the trained weights (safetensors).
    pub save_weights: Option<PathBuf>,
    /// Where to write the trained model as ONNX (the zoo graph with these weights).
    pub export_onnx: Option<PathBuf>,
    /// Where to write acceval's own mllog events.
    pub mllog: Option<PathBuf>,
    /// MLPerf's submission fields for the mllog, as given.
    pub submission: Submission,
    pub peak_power: bool,
    /// The command line (recorded beside saved weights).
    pub command_line: Vec<String>,
    /// Data-parallel training (`train --cluster`): this rank's share of every global batch,
    /// its gradients summed over the ranks before the update.
    pub data_parallel: Option<DataParallel>,
}

/// A rank's all-reduce, shared with the trainer (issue 25, point 5).
#[derive(Clone)]
pub struct DataParallel(pub std::sync::Arc<std::sync::Mutex<crate::cluster::collective::Reducer>>);

impl std::fmt::Debug for DataParallel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.lock() {
            Ok(r) => write!(
                f,
                "DataParallel(rank {} of {}, {:?})",
                r.rank, r.world, r.mode
            ),
            Err(_) => f.write_str("DataParallel(poisoned)"),
        }
    }
}

/// The sampler's time base: ms from its first tick.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub t0: Instant,
}

impl Clock {
    pub fn ms(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.t0).as_secs_f64() * 1e3
    }
}

/// Epoch windows as a run records them.
#[derive(Debug, Default, Clone)]
pub struct Epochs {
    pub windows: Vec<Window>,
    pub samples: Vec<u64>,
    pub loss: Vec<Option<f64>>,
    pub eval: Vec<Option<EvalPoint>>,
    /// (epoch, seconds from the run start) of the first evaluation that met the target.
    pub target: Option<(usize, f64)>,
}

impl Epochs {
    pub fn push(&mut self, w: Window, samples: u64, loss: Option<f64>, eval: Option<EvalPoint>) {
        self.windows.push(w);
        self.samples.push(samples);
        self.loss.push(loss);
        self.eval.push(eval);
    }
    /// The latest value of `metric` (`loss`, or the evaluation's metric).
    pub fn metric(&self, metric: &str) -> Option<f64> {
        if metric == "loss" {
            return self.loss.last().copied().flatten();
        }
        self.eval
            .last()
            .and_then(|e| e.as_ref())
            .filter(|e| e.metric == metric)
            .map(|e| e.value)
    }
    pub fn reached(&mut self, epoch: usize, at_s: f64) {
        if self.target.is_none() {
            self.target = Some((epoch, at_s));
        }
    }
}

/// Runs the training the settings describe.
pub fn run(
    s: &TrainSettings,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<TrainReport, Error> {
    match &s.source {
        Source::Builtin(name) => run_builtin(s, name, progress, stop),
        Source::Exec(argv) => exec::run(s, argv, progress, stop),
    }
}

/// The sensors and a started sampler (or none when `sample_ms` is 0).
pub fn start_telemetry(
    t: &TelemetrySettings,
) -> (Option<telemetry::Sampler>, Vec<SensorStatus>, Clock) {
    if t.sample_ms == 0 {
        return (None, Vec::new(), Clock { t0: Instant::now() });
    }
    let (sensors, status) = telemetry::probe(&telemetry::ProbeOptions {
        ptd: t.ptd.clone(),
        powercap: None,
    });
    let t0 = Instant::now();
    let sampler = telemetry::start(sensors, std::time::Duration::from_millis(t.sample_ms));
    (Some(sampler), status, Clock { t0 })
}

/// FP16, FP32 and FP64 (§6 e): a step of a small network in each type on the device.
pub fn precision_support(dev: &candle_core::Device) -> Vec<PrecisionSupport> {
    use candle_core::{DType, Tensor, Var};
    use candle_nn::Optimizer;
    let probe = |dt: DType| -> candle_core::Result<()> {
        let w = Var::from_tensor(&Tensor::ones((4, 3), dt, dev)?)?;
        let x = Tensor::ones((2, 4), dt, dev)?;
        let y = candle_nn::ops::sigmoid(&x.matmul(w.as_tensor())?)?;
        let mut opt = candle_nn::AdamW::new(vec![w], Default::default())?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
        Ok(())
    };
    [
        ("fp16", DType::F16),
        ("fp32", DType::F32),
        ("fp64", DType::F64),
    ]
    .into_iter()
    .map(|(name, dt)| PrecisionSupport {
        precision: name.into(),
        status: match probe(dt) {
            Ok(()) => State::Available(format!("candle {dt:?} on {dev:?}")),
            Err(e) => State::Unavailable(format!("candle {dt:?} on {dev:?}: {e}")),
        },
    })
    .collect()
}

/// What trains on `--backend tch`: the libtorch that tch 0.26 is built for.
pub const TCH_FRAMEWORK: &str = "libtorch 2.13.0 through tch 0.26 (acceval's interpreter of the zoo graph on libtorch operators, libtorch's AdamW)";

/// FP16, FP32 and FP64 on libtorch (§6 e), or why the engine is absent.
fn tch_precision_support(s: &TrainSettings) -> Result<Vec<PrecisionSupport>, Error> {
    #[cfg(feature = "tch")]
    {
        Ok(torch::precision_support(s.device))
    }
    #[cfg(not(feature = "tch"))]
    {
        let _ = s;
        Err(Error::Torch(engine::NOT_COMPILED.into()))
    }
}

fn run_builtin(
    s: &TrainSettings,
    name: &str,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<TrainReport, Error> {
    if s.engine == engine::Engine::Tch && workload::HEAD_ONLY.contains(&name) {
        return Err(crate::util::setting::SettingError::says(
            Setting::Workload,
            format!(
                "{name} trains its head alone, the rest of its graph frozen, which only the candle trainer does (libtorch would train every weight): use --backend candle"
            ),
        )
        .into());
    }
    // The device candle trains on, or (libtorch) the one the batches are made on.
    let (dev, precisions) = match s.engine {
        engine::Engine::Candle => {
            let dev = builtin::device(s.device)?;
            let p = precision_support(&dev);
            (dev, p)
        }
        engine::Engine::Tch => (candle_core::Device::Cpu, tch_precision_support(s)?),
    };
    if let Some(p) = precisions.iter().find(|p| p.precision == s.precision)
        && !p.status.is_available()
    {
        return Err(crate::util::setting::SettingError::says(
            Setting::Precision,
            format!("{}: {}", s.precision, p.status),
        )
        .into());
    }
    let kept = engine::keep_freed_memory();
    let mut runs = Vec::new();
    let mut last = None;
    for r in 0..s.repeat {
        let t_run = Instant::now();
        let w = workload::workload(name, &s.workload)?;
        let (sampler, sensors, clock) = start_telemetry(&s.telemetry);
        let result = builtin::run_once(s, w.as_ref(), &dev, &clock, progress, stop);
        // The sweep runs under the same sampler, after the training (not on its clock).
        let sweep = match &result {
            Ok(r) if s.peak_power && r.error.is_none() => {
                progress.note("peak power (§7.1.6): raising the batch");
                Some(builtin::peak_sweep(s, w.as_ref(), &dev, &clock, stop)?)
            }
            _ => None,
        };
        let recording = sampler.map(|x| x.stop());
        let result = result?;
        let files = save(s, w.as_ref(), &result)?;
        let run_s = t_run.elapsed().as_secs_f64();
        runs.push(RunSummary {
            total_s: run_s,
            time_to_target_s: Measured::of(result.epochs.target.map(|t| t.1), "target not reached"),
        });
        let ended_early = result.error.is_some();
        last = Some((w, result, recording, sensors, files, sweep));
        if ended_early || r + 1 == s.repeat {
            break;
        }
    }
    let (w, result, recording, sensors, files, sweep) = last.expect("at least one run");
    let mut report = builtin_report(s, name, w.as_ref(), &result, recording.as_ref(), sensors);
    if let Some((steps, end)) = sweep {
        sweep_figures(&mut report, &steps, recording.as_ref());
        report.peak_power_sweep_stop = Some(end);
    }
    report.precisions = precisions;
    if kept {
        report.step_definition.push_str("; the process keeps the memory it frees for its next allocations (glibc mallopt: M_MMAP_MAX 0, M_TRIM_THRESHOLD 2 GiB), so a step does not pay the kernel's clearing of fresh pages");
    }
    // candle's CPU kernels and its matrix products run on RAYON_NUM_THREADS threads, else
    // one per core; libtorch is given the same number.
    report.device = engine::device_text(s);
    report.files = files;
    report.held_out = result.final_eval.map(|e| e.held_out);
    report.repeat = (s.repeat > 1).then(|| repeat_summary(runs));
    // Te − Ts: from the process's start (reading the data, building the graph, training,
    // saving) to now, timed by the kernel's clock, not the loop's.
    report.total_s = timing::process_age_s().unwrap_or(report.total_s);
    Ok(report)
}

/// The sweep's steps in the report, each with its largest power sample; the peak power
/// (§7.1.6 b) becomes the largest of them when any sensor answered.
fn sweep_figures(r: &mut TrainReport, steps: &[builtin::SweepStep], rec: Option<&Recording>) {
    let why = match &r.power_w.average {
        Measured::Missing(m) => m.0.clone(),
        Measured::Value(_) => "no power sample inside the step's window".into(),
    };
    let mut peak: Option<f64> = None;
    for st in steps {
        let t = timing::epoch_telemetry(rec, st.window, None, &r.sensors, st.batch as u64);
        peak = match (peak, t.peak_power_w) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        r.peak_power_sweep.push(PeakPowerStep {
            batch: st.batch,
            samples_per_s: st.samples_per_s,
            max_power_w: Measured::of(t.peak_power_w, &why),
        });
    }
    if let Some(p) = peak {
        r.power_w.peak = Measured::Value(p);
    }
}

/// Writes the weights, the ONNX and the mllog events the settings ask for.
fn save(
    s: &TrainSettings,
    w: &dyn workload::Workload,
    r: &builtin::RunResult,
) -> Result<Vec<String>, Error> {
    let mut files = Vec::new();
    let weights = w.saved_weights(r.graph.weights()?)?;
    if let Some(p) = &s.save_weights {
        if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::util::create_dir_all(d)?;
        }
        candle_core::safetensors::save(&weights, p).map_err(|err| Error::SaveWeights {
            path: p.clone(),
            err,
        })?;
        files.push(p.display().to_string());
        let rec = record(s, w, r, &crate::util::read(p)?);
        let q = p.with_extension("toml");
        let text = toml::to_string_pretty(&rec).map_err(Error::Record)?;
        crate::util::fs::write_file(&q, text.as_bytes())?;
        files.push(q.display().to_string());
    }
    if let Some(p) = &s.export_onnx {
        let trained = crate::zoo::weights_from_tensors(&weights)?;
        let (e, _) = crate::zoo::parse_name(w.zoo_name())
            .ok_or_else(|| Error::NoZooModel(w.zoo_name().to_string()))?;
        let bytes = crate::zoo::build_with(&e, crate::zoo::Precision::Fp32, Some(&trained));
        crate::util::fs::write_file(p, &bytes)?;
        files.push(p.display().to_string());
    }
    if let Some(p) = &s.mllog {
        // Its default is train.mllog in --out, a folder the report creates later.
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::util::create_dir_all(dir)?;
        }
        crate::util::fs::write_file(p, r.log.text().as_bytes())?;
        files.push(p.display().to_string());
    }
    Ok(files)
}

/// How the saved weights were trained (the zoo copies it into models/zoo.toml).
fn record(
    s: &TrainSettings,
    w: &dyn workload::Workload,
    r: &builtin::RunResult,
    weights: &[u8],
) -> crate::report::schema::zoo::TrainingRecord {
    let held = r.final_eval.as_ref().map(|e| &e.held_out);
    crate::report::schema::zoo::TrainingRecord {
        workload: w.zoo_name().to_string(),
        command: s.command_line.join(" "),
        epochs: r.epochs.windows.len(),
        batch: s.batch.unwrap_or(w.default_batch()),
        learning_rate: s.lr.unwrap_or(w.default_lr()),
        seed: s.seed,
        recipe: w.recipe(),
        data: w
            .data()
            .into_iter()
            .map(|d| crate::report::schema::zoo::TrainingData {
                split: d.split,
                name: d.name,
                samples: d.samples,
                sha256: d.sha256,
            })
            .collect(),
        held_out_metric: held.map(|h| h.metric.clone()).unwrap_or_default(),
        held_out_value: held.map(|h| h.value).unwrap_or(f64::NAN),
        baseline: held.map(|h| h.baseline.clone()).unwrap_or_default(),
        baseline_value: held.map(|h| h.baseline_value).unwrap_or(f64::NAN),
        train_s: timing::process_age_s().unwrap_or(0.0),
        device: format!("{} {}", s.engine.name(), engine::device_text(s)),
        weights_sha256: crate::util::fs::sha256_hex(weights),
    }
}

fn repeat_summary(runs: Vec<RunSummary>) -> Repeat {
    let totals: Vec<f64> = runs.iter().map(|r| r.total_s).collect();
    let ttt: Vec<f64> = runs
        .iter()
        .map(|r| r.time_to_target_s.value().unwrap_or(f64::INFINITY))
        .collect();
    let why = "needs ≥ 3 runs (and, for time to target, every run reaching it)";
    Repeat {
        olympic_total_s: Measured::of(timing::olympic_mean(&totals), why),
        olympic_time_to_target_s: Measured::of(timing::olympic_mean(&ttt), why),
        runs,
        rule: "MLPerf Training: drop the fastest and the slowest run, mean of the rest".into(),
    }
}

/// The report's figures from epoch windows, step times and the recording.
pub struct Figures<'a> {
    pub epochs: &'a Epochs,
    pub step_ms: &'a [f64],
    pub recording: Option<&'a Recording>,
    pub sensors: Vec<SensorStatus>,
    pub bytes_per_sample: Option<u64>,
    pub prefer_cpu: bool,
}

/// Fills the timing, throughput, utilization, power and energy fields of `r`.
pub fn fill_figures(r: &mut TrainReport, f: Figures) {
    let channel = f
        .recording
        .and_then(|rec| timing::utilization_channel(rec, f.prefer_cpu));
    r.utilization_channel = channel
        .clone()
        .unwrap_or_else(|| "n/a: no utilization sensor".into());
    r.steps = f.step_ms.len();
    r.step_ms = Summary::of(f.step_ms).as_ref().map(StepStats::from);
    let mut energies = Vec::new();
    let mut peak: Option<f64> = None;
    for (i, w) in f.epochs.windows.iter().enumerate() {
        let samples = f.epochs.samples[i];
        let t = timing::epoch_telemetry(f.recording, *w, channel.as_deref(), &f.sensors, samples);
        let time_s = (w.end_ms - w.start_ms) / 1e3;
        energies.push(t.energy_j.value());
        peak = match (peak, t.peak_power_w) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        r.epochs.push(Epoch {
            index: i + 1,
            time_s,
            samples,
            throughput_samples_per_s: if time_s > 0.0 {
                samples as f64 / time_s
            } else {
                0.0
            },
            utilization: t.utilization,
            energy_j: t.energy_j,
            loss: f.epochs.loss[i],
            eval: f.epochs.eval[i].clone(),
        });
    }
    let n = r.epochs.len() as f64;
    let no_epoch = "no complete epoch";
    let mean_time = (n > 0.0).then(|| r.epochs.iter().map(|e| e.time_s).sum::<f64>() / n);
    let mean_samples =
        (n > 0.0).then(|| r.epochs.iter().map(|e| e.samples as f64).sum::<f64>() / n);
    let thr = mean_time.zip(mean_samples).map(|(t, s)| s / t);
    r.throughput_samples_per_s = Measured::of(thr, no_epoch);
    r.throughput_mb_per_s = match f.bytes_per_sample {
        Some(b) => Measured::of(thr.map(|t| t * b as f64 / 1e6), no_epoch),
        None => Measured::na("the script does not say how many bytes a sample has"),
    };
    let energy_na = r
        .epochs
        .first()
        .and_then(|e| match &e.energy_j {
            Measured::Missing(m) => Some(m.0.clone()),
            Measured::Value(_) => None,
        })
        .unwrap_or_else(|| no_epoch.into());
    let all: Option<Vec<f64>> = energies.iter().copied().collect();
    let all = all.filter(|v| !v.is_empty());
    let total_e = all.as_ref().map(|v| v.iter().sum::<f64>());
    let mean_e = all.as_ref().map(|v| v.iter().sum::<f64>() / v.len() as f64);
    let epoch_time: f64 = r.epochs.iter().map(|e| e.time_s).sum();
    r.energy_j = Measured::of(total_e, &energy_na);
    r.efficiency_samples_per_j =
        Measured::of(mean_samples.zip(mean_e).map(|(s, e)| s / e), &energy_na);
    r.efficiency_mb_per_j = match f.bytes_per_sample {
        Some(b) => Measured::of(
            mean_samples
                .zip(mean_e)
                .map(|(s, e)| s * b as f64 / 1e6 / e),
            &energy_na,
        ),
        None => Measured::na("the script does not say how many bytes a sample has"),
    };
    r.power_w = TrainPower {
        average: Measured::of(total_e.map(|e| e / epoch_time), &energy_na),
        peak: Measured::of(peak, &energy_na),
    };
    if let Some((epoch, at_s)) = f.epochs.target {
        r.time_to_target_s = Measured::Value(at_s);
        r.epochs_to_target = Measured::Value(epoch as f64);
    } else {
        let why = if r.target.is_some() {
            "the target was not reached"
        } else {
            "no target given"
        };
        r.time_to_target_s = Measured::na(why);
        r.epochs_to_target = Measured::na(why);
    }
    r.sensors = f.sensors;
}

/// An empty report of `mode` (the figures are filled in by the caller).
pub fn blank_report(s: &TrainSettings, mode: TrainMode, workload: String) -> TrainReport {
    TrainReport {
        schema_version: TRAIN_SCHEMA_VERSION,
        mode,
        workload,
        framework: String::new(),
        device_requested: s.device.to_string(),
        device: s.device.to_string(),
        precision: s.precision.clone(),
        precisions: Vec::new(),
        batch: Measured::na("not given"),
        seed: Measured::Value(s.seed as f64),
        learning_rate: Measured::na("not given"),
        optimizer: String::new(),
        data: Vec::new(),
        total_s: 0.0,
        total_definition: String::new(),
        steps: 0,
        warmup_steps: 0,
        step_ms: None,
        step_definition: String::new(),
        epochs: Vec::new(),
        throughput_samples_per_s: Measured::na("no epoch"),
        throughput_mb_per_s: Measured::na("no epoch"),
        target: s.target.clone(),
        time_to_target_s: Measured::na("no target given"),
        epochs_to_target: Measured::na("no target given"),
        power_w: TrainPower {
            average: Measured::na("no epoch"),
            peak: Measured::na("no epoch"),
        },
        energy_j: Measured::na("no epoch"),
        efficiency_samples_per_j: Measured::na("no epoch"),
        efficiency_mb_per_j: Measured::na("no epoch"),
        utilization_channel: String::new(),
        sensors: Vec::new(),
        peak_power_sweep: Vec::new(),
        peak_power_sweep_stop: None,
        held_out: None,
        repeat: None,
        files: Vec::new(),
        exit_code: None,
        mllog_events: 0,
        standard_note: "Training evaluation is optional (非必须) in the T/CES draft (§5.2, §6.1, §7.1) and has no C-levels; pass/fail bounds, where a profile sets them, are the profile's, not the standard's.".into(),
        complete: true,
        interrupted: false,
        error: None,
    }
}

fn builtin_report(
    s: &TrainSettings,
    name: &str,
    w: &dyn workload::Workload,
    r: &builtin::RunResult,
    recording: Option<&Recording>,
    sensors: Vec<SensorStatus>,
) -> TrainReport {
    let mut rep = blank_report(s, TrainMode::Builtin, name.to_string());
    rep.framework = match s.engine {
        engine::Engine::Candle => "candle 0.11.1 (acceval's trainer)".into(),
        engine::Engine::Tch => TCH_FRAMEWORK.into(),
    };
    let batch = s.batch.unwrap_or(w.default_batch());
    rep.batch = Measured::Value(batch as f64);
    rep.learning_rate = Measured::Value(s.lr.unwrap_or(w.default_lr()));
    rep.optimizer = "AdamW (β1 0.9, β2 0.999, ε 1e-8, no weight decay)".into();
    rep.data = w.data();
    rep.total_definition = "Te − Ts: from the acceval process's start (/proc/self/stat) to the end of the training, including data generation, graph building, evaluation and saving".into();
    rep.step_definition = format!(
        "T1 − T0: T0 before the batch is copied to the device, T1 after the optimizer update and the device's synchronisation; the first {} step(s) are warm-up, left out",
        s.warmup_steps
    );
    rep.warmup_steps = r.warmup_steps;
    rep.mllog_events = r.log.events.len();
    fill_figures(
        &mut rep,
        Figures {
            epochs: &r.epochs,
            step_ms: &r.step_ms,
            recording,
            sensors,
            bytes_per_sample: Some(w.bytes_per_sample()),
            prefer_cpu: s.device == TrainDevice::Cpu,
        },
    );
    rep.complete = r.error.is_none();
    rep.interrupted = r.error.as_ref().is_some_and(Cut::is_interrupted);
    rep.error = r.error.as_ref().map(Cut::to_string);
    rep
}
