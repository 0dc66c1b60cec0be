//! The benchmark (`acceval bench`, and grade's speed stage): latency (§7.2.3), FPS
//! (§7.2.4 a), utilization, power and energy (§7.2.6, §7.1.4–7.1.7) under a run policy,
//! judged VALID or INVALID. Returns a [`BenchReport`]; prints nothing.
//!
//! Two modes. The pipeline (the default for zoo models and `--task`): each sample is one
//! module — decode, pre-process, the backend's run (copy in, forward, copy out), post-process
//! — on input files held in memory, so the hot loop reads no file. Model only
//! (`--model-only`, and models without a task): the backend's run on pre-processed tensors.
//! Steps: inputs → session → cold start → timed loop (telemetry over its window) →
//! statistics → optional batch sweep and peak-power sweep.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Error, Setting};
use crate::backend::{self, BackendSettings, Session};
use crate::data::inputs::{InputSpec, InputsPath, gather_inputs, inputs_path};
use crate::device::telemetry::{self, Kind, SensorStatus, TelemetrySummary};
use crate::measure::harness::{self, Measured, Policy};
use crate::measure::stats::{Summary, percentile_support};
use crate::model::InputShape;
use crate::model::tensor::{HostTensor, TensorData};
pub use crate::report::schema::bench::{
    BatchPoint, BenchMode, BenchReport, ColdStart, ComputeRate, Figure, InputsInfo, PeakPower,
    PeakStep, StageReport,
};
use crate::task::detect::DetectParams;
use crate::task::{Task, TaskSpec};
use crate::util::progress::Progress;
use crate::util::setting::SettingError;
use crate::util::signal::Cut;
use crate::zoo::{self, Entry};

/// Default warm-up samples.
pub const DEFAULT_WARMUP: usize = 10;
/// Default minimum timed samples.
pub const DEFAULT_RUNS: usize = 100;
/// Default minimum measured duration, s.
pub const DEFAULT_DURATION_S: f64 = 10.0;
/// Default judged percentile (P90, MLPerf SingleStream).
pub const DEFAULT_PERCENTILE: f64 = 90.0;
/// Default largest coefficient of variation.
pub const DEFAULT_MAX_CV: f64 = 0.25;
/// Default largest spread of the window medians.
pub const DEFAULT_STABILITY: f64 = 0.10;
/// Default telemetry interval, ms (§7.1.4: every second).
pub const DEFAULT_SAMPLE_MS: u64 = 1000;

/// What to sample while measuring.
#[derive(Debug, Clone)]
pub struct TelemetrySettings {
    /// Interval, ms (0 turns telemetry off).
    pub sample_ms: u64,
    /// A SPEC PTDaemon serving a power analyser, `HOST:PORT`.
    pub ptd: Option<String>,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        TelemetrySettings {
            sample_ms: DEFAULT_SAMPLE_MS,
            ptd: None,
        }
    }
}

/// Everything a benchmark needs, validated.
#[derive(Debug, Clone)]
pub struct BenchSettings {
    pub backend: BackendSettings,
    /// A zoo name or an ONNX file.
    pub model: PathBuf,
    /// Input files (see `data::inputs::inputs_path`); `None`: the zoo input set or seeded.
    pub inputs: Option<PathBuf>,
    /// The task of a model outside the zoo.
    pub task: Option<Task>,
    pub model_only: bool,
    pub shapes: Vec<InputShape>,
    pub seed: u64,
    pub policy: Policy,
    /// Batch sizes for the offline throughput sweep.
    pub batch: Vec<usize>,
    /// §7.1.6 b: raise the batch until throughput stops growing.
    pub peak_power: bool,
    pub telemetry: TelemetrySettings,
    pub detect: DetectParams,
    /// The accelerator's peak, GFLOP/s, where acceval cannot measure it (a profile's
    /// `[speed] peak_gflops`, for an NPU).
    pub peak_gflops: Option<f64>,
    /// After the one-at-a-time run, a pipelined one with this many decode/pre-process
    /// threads (0: none).
    pub pipeline_workers: usize,
    /// Model instances in the pipelined run (each its own session; 0 or 1: the one).
    pub pipeline_instances: usize,
}

impl BenchSettings {
    /// `model` on `backend` with the default policy.
    pub fn new(model: PathBuf, backend: BackendSettings) -> BenchSettings {
        BenchSettings {
            backend,
            model,
            inputs: None,
            task: None,
            model_only: false,
            shapes: Vec::new(),
            seed: 0,
            policy: default_policy(),
            batch: Vec::new(),
            peak_power: false,
            telemetry: TelemetrySettings::default(),
            detect: DetectParams::default(),
            peak_gflops: None,
            pipeline_workers: 0,
            pipeline_instances: 1,
        }
    }
}

/// The default run policy.
pub fn default_policy() -> Policy {
    Policy {
        warmup: DEFAULT_WARMUP,
        warmup_time_s: 0.0,
        runs: DEFAULT_RUNS,
        duration_s: DEFAULT_DURATION_S,
        interval_ms: 0.0,
        percentile: DEFAULT_PERCENTILE / 100.0,
        max_cv: DEFAULT_MAX_CV,
        stability: DEFAULT_STABILITY,
    }
}

const LATENCY_DEF: &str = "end to end per sample: host wall clock (monotonic) from the start of the sample to its end after device synchronisation; in pipeline mode decode + pre-process + the backend's run (copy in, forward, copy out) + post-process";
const FPS_DEF: &str = "N / ΣTi: samples over the sum of their end-to-end times (§7.2.4 a), 1/s";
const THROUGHPUT_DEF: &str = "N / (end − start): samples over the wall time from the first sample's start to the last one's end, idle gaps included, 1/s";
const PEAK_DEF: &str = "batch 1, 2, 4, ... until samples/s grows by less than 5 %; the largest power sample of each device over the sweep (§7.1.6 b)";

fn stage_def(name: &str) -> &'static str {
    match name {
        "decode" => "decoding the in-memory file (JPEG/PNG, CSV)",
        "preprocess" => "resize/letterbox/normalise/NCHW, or windowing/standardising",
        "forward" => {
            "the backend's run: copy in, forward, copy out, device synchronised (where h2d and d2h are stages of their own, the device's execution alone)"
        }
        "h2d" => "every input copied host to device (the session's own timing)",
        "d2h" => "every output copied device to host into host tensors (the session's own timing)",
        "postprocess" => "softmax/top-k, box decoding + NMS, or de-normalising",
        _ => "",
    }
}

/// Bytes of model input in `t`.
pub fn bytes_of(t: &[HostTensor]) -> u64 {
    t.iter()
        .map(|x| {
            let per = match &x.data {
                TensorData::F64(_) | TensorData::I64(_) => 8,
                TensorData::F32(_) | TensorData::I32(_) => 4,
                _ => 1,
            };
            (x.data.len() * per) as u64
        })
        .sum()
}

/// What the samples cycle through.
enum Work {
    /// In-memory files for the task pipeline.
    Files(Vec<(String, Vec<u8>)>),
    /// Model input sets.
    Tensors(Vec<Vec<HostTensor>>),
}

impl Work {
    fn len(&self) -> usize {
        match self {
            Work::Files(f) => f.len(),
            Work::Tensors(t) => t.len(),
        }
    }
}

/// The files of `path` (a file, or a folder's files with one of `exts`), sorted.
fn read_files(path: &Path, exts: &[&str]) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let mut paths: Vec<PathBuf> = if path.is_dir() {
        std::fs::read_dir(path)
            .map_err(crate::util::Error::read(path))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| exts.contains(&e.to_ascii_lowercase().as_str()))
            })
            .collect()
    } else {
        vec![path.to_path_buf()]
    };
    paths.sort();
    if paths.is_empty() {
        return Err(Error::NoFiles {
            path: path.to_path_buf(),
            exts: exts.join("/"),
        });
    }
    paths
        .into_iter()
        .map(|p| {
            let b = crate::util::read(&p)?;
            Ok((p.display().to_string(), b))
        })
        .collect()
}

/// The pipeline's input files: the given ones, or the zoo model's input set.
fn pipeline_files(
    s: &BenchSettings,
    task: Task,
    entry: Option<&Entry>,
) -> Result<(Work, String), Error> {
    match (&s.inputs, entry) {
        (Some(p), _) => {
            let exts: &[&str] = if task == Task::Forecasting {
                &["csv"]
            } else {
                &["jpg", "jpeg", "png"]
            };
            let files = read_files(p, exts)?;
            let src = format!("{} ({} files)", p.display(), files.len());
            Ok((Work::Files(files), src))
        }
        (None, Some(e)) => {
            let files: Vec<(String, Vec<u8>)> = crate::task::inputs::generate(e.input_set)
                .unwrap_or_default()
                .into_iter()
                .map(|(n, b, _)| (n, b))
                .collect();
            let src = format!("input set '{}' ({} files)", e.input_set, files.len());
            Ok((Work::Files(files), src))
        }
        (None, None) => Err(SettingError::says(
            Setting::Inputs,
            "is needed: give the pipeline's input files",
        )
        .into()),
    }
}

/// One-input tensor sets from pre-processed files.
fn one_input_sets(spec: &InputSpec, tensors: Vec<ndarray::ArrayD<f32>>) -> Vec<Vec<HostTensor>> {
    tensors
        .into_iter()
        .map(|t| {
            vec![HostTensor {
                name: spec.name.clone(),
                data: TensorData::F32(t),
            }]
        })
        .collect()
}

/// The model-only inputs: tensor files, pre-processed images, the zoo set, or seeded.
fn model_only_inputs(
    s: &BenchSettings,
    specs: &[InputSpec],
    task: Option<Task>,
    entry: Option<&Entry>,
) -> Result<(Work, String), Error> {
    match (&s.inputs, entry) {
        (Some(p), _) => match (inputs_path(p, specs), task) {
            (Ok(InputsPath::Files(f)), _) => {
                let (t, _) = gather_inputs(specs, &f, &s.shapes, s.seed)?;
                Ok((Work::Tensors(vec![t]), format!("{}", p.display())))
            }
            (Ok(InputsPath::Images) | Err(_), Some(task)) => {
                let files = read_files(p, &["jpg", "jpeg", "png", "csv"])?;
                let [spec] = specs else {
                    return Err(Error::NotOneInput {
                        inputs: specs.len(),
                    });
                };
                let shape: Vec<usize> = spec
                    .dims
                    .iter()
                    .map(|d| d.known().unwrap_or(1).max(1) as usize)
                    .collect();
                let prepared = crate::task::prepare_inputs(task, &shape, &files)?;
                let sets = one_input_sets(spec, prepared.into_iter().map(|p| p.tensor).collect());
                Ok((
                    Work::Tensors(sets),
                    format!("{} (pre-processed)", p.display()),
                ))
            }
            (Ok(InputsPath::Images), None) => Err(SettingError::says(
                Setting::Task,
                format!(
                    "is needed: '{}' holds images; say how to pre-process them",
                    p.display()
                ),
            )
            .into()),
            (Err(e), None) => Err(e.into()),
        },
        (None, Some(e)) => {
            let spec = InputSpec {
                name: e.input.to_string(),
                dtype: crate::model::onnx::DataType::FLOAT,
                dims: Vec::new(),
                loose: false,
            };
            let prepared = zoo::input_set_tensors(e)?;
            let sets = one_input_sets(&spec, prepared.into_iter().map(|p| p.tensor).collect());
            Ok((
                Work::Tensors(sets),
                format!("input set '{}', pre-processed", e.input_set),
            ))
        }
        (None, None) => {
            let (t, rec) = gather_inputs(specs, &[], &s.shapes, s.seed)?;
            let src = rec
                .iter()
                .map(|r| format!("{}: {}", r.name, r.source))
                .collect::<Vec<_>>()
                .join("; ");
            Ok((Work::Tensors(vec![t]), src))
        }
    }
}

/// The task pipeline's static input shape, or the first tensor set's shapes.
fn load_shapes(work: &Work, specs: &[InputSpec]) -> Result<Vec<(String, Vec<usize>)>, Error> {
    match work {
        Work::Tensors(sets) => Ok(sets[0]
            .iter()
            .map(|t| (t.name.clone(), t.data.shape().to_vec()))
            .collect()),
        Work::Files(_) => {
            let s = specs.first().ok_or(Error::NoInput)?;
            let dims: Option<Vec<usize>> = s
                .dims
                .iter()
                .map(|d| d.known().map(|v| v as usize))
                .collect();
            let dims = dims.ok_or_else(|| Error::DynamicInput {
                input: s.name.clone(),
            })?;
            Ok(vec![(s.name.clone(), dims)])
        }
    }
}

/// The stages one sample is split into (in the order `one_sample` writes them): h2d and d2h
/// where the session times its copies apart.
fn stage_names(work: &Work, split: bool) -> Vec<&'static str> {
    match (work, split) {
        (Work::Files(_), false) => vec!["decode", "preprocess", "forward", "postprocess"],
        (Work::Files(_), true) => {
            vec![
                "decode",
                "preprocess",
                "h2d",
                "forward",
                "d2h",
                "postprocess",
            ]
        }
        (Work::Tensors(_), false) => vec!["forward"],
        (Work::Tensors(_), true) => vec!["h2d", "forward", "d2h"],
    }
}

/// Runs sample `i` of `work` and writes its stage times.
fn one_sample(
    session: &mut dyn Session,
    spec: &TaskSpec,
    work: &Work,
    i: usize,
    st: &mut [f64; harness::MAX_STAGES],
) -> Result<(), Error> {
    match work {
        Work::Files(files) => {
            let (label, bytes) = &files[i % files.len()];
            let r = crate::task::run_bytes(session, spec, label, bytes)?;
            st[0] = r.stages.decode_ms;
            st[1] = r.stages.preprocess_ms;
            match r.stages.copies {
                Some(c) => {
                    (st[2], st[3], st[4]) = (c.h2d_ms, c.execute_ms, c.d2h_ms);
                    st[5] = r.stages.postprocess_ms;
                }
                None => (st[2], st[3]) = (r.stages.forward_ms, r.stages.postprocess_ms),
            }
        }
        Work::Tensors(sets) => {
            let ran = session.timed_run(&sets[i % sets.len()])?;
            match ran.copies {
                Some(c) => (st[0], st[1], st[2]) = (c.h2d_ms, c.execute_ms, c.d2h_ms),
                None => st[0] = ran.forward_ms,
            }
        }
    }
    Ok(())
}

/// A rank's part in a cluster run (issue 25): which of the cluster's samples it runs, and
/// the barriers around its timed window.
pub trait ClusterPart {
    /// The first of this rank's sample indices (sample k uses input k mod the inputs).
    fn first_sample(&self) -> usize;
    /// After the warm-up, right before the timed window; an error ends the run.
    fn start(&mut self) -> Result<(), String>;
    /// Right after the timed window.
    fn end(&mut self);
}

/// The task pipeline's settings for the model's first input (classification when the run
/// has no task: model-only runs never post-process).
fn task_spec(
    s: &BenchSettings,
    task: Option<Task>,
    specs: &[InputSpec],
    shapes: &[(String, Vec<usize>)],
    entry: Option<&Entry>,
) -> TaskSpec {
    TaskSpec {
        task: task.unwrap_or(Task::Classification),
        input_name: specs.first().map(|s| s.name.clone()).unwrap_or_default(),
        input_shape: shapes.first().map(|s| s.1.clone()).unwrap_or_default(),
        labels: entry
            .map(|e| e.labels.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default(),
        top_k: 5,
        detect: s.detect,
    }
}

/// The mean bytes of one sample's model inputs, and of its input file in a pipeline run.
fn sizes(work: &Work, shapes: &[(String, Vec<usize>)]) -> (u64, Option<u64>) {
    match work {
        Work::Tensors(sets) => (
            sets.iter().map(|s| bytes_of(s)).sum::<u64>() / sets.len() as u64,
            None,
        ),
        Work::Files(files) => (
            shapes[0].1.iter().product::<usize>() as u64 * 4,
            Some(files.iter().map(|f| f.1.len() as u64).sum::<u64>() / files.len() as u64),
        ),
    }
}

/// Runs the whole measurement of `s`; `stop` ends it early (the report is then incomplete).
pub fn measure(
    s: &BenchSettings,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<BenchReport, Error> {
    measure_part(s, progress, stop, None)
}

/// `measure` as one rank of a cluster run when `part` is given: `s.policy.runs` samples
/// from `part.first_sample()`, between its barriers.
pub fn measure_part(
    s: &BenchSettings,
    progress: &Progress,
    stop: &AtomicBool,
    part: Option<&mut dyn ClusterPart>,
) -> Result<BenchReport, Error> {
    if !(s.policy.percentile > 0.0 && s.policy.percentile < 1.0) {
        return Err(SettingError::says(
            Setting::Percentile,
            format!("{} must be in (0, 100)", s.policy.percentile * 100.0),
        )
        .into());
    }
    let model = zoo::resolve(&s.model)?;
    if !model.is_file() {
        return Err(Error::NoModel { path: model });
    }
    // A model file acceval does not read (.om, .pt): its backend declares the inputs, and
    // only model-only runs of given or seeded tensors apply.
    let (specs, loaded) = super::run::model_inputs(&model, &s.backend, false, &s.shapes)?;
    let foreign = loaded.is_some();
    let entry = zoo::identify(&model).map(|(e, _)| e);
    let task = s.task.or(entry.as_ref().map(|e| e.task));
    let model_only =
        s.model_only || task.is_none() || !s.batch.is_empty() || s.peak_power || foreign;
    let (work, source) = match (model_only, task) {
        (false, Some(t)) => pipeline_files(s, t, entry.as_ref())?,
        _ => model_only_inputs(s, &specs, task, entry.as_ref())?,
    };
    let shapes = load_shapes(&work, &specs)?;
    let overhead = harness::overhead_us(20_000);
    let mut session = match loaded {
        Some(session) => session,
        None => backend::load(
            &model,
            &s.backend.spec,
            &s.backend.load_options(shapes.clone(), false),
        )?,
    };
    let spec = task_spec(s, task, &specs, &shapes, entry.as_ref());

    // Cold start: the first inference, apart.
    let t = Instant::now();
    let mut scratch = [0.0; harness::MAX_STAGES];
    one_sample(session.as_mut(), &spec, &work, 0, &mut scratch).map_err(|err| {
        Error::FirstInference {
            model: model.clone(),
            backend: session.info().backend.clone(),
            err: Box::new(err),
        }
    })?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;

    let (model_bytes, file_bytes) = sizes(&work, &shapes);

    let (measured, recording, sensor_status) =
        timed_loop(s, session.as_mut(), &spec, &work, progress, stop, part);
    let stage_names = stage_names(&work, session.info().copies.is_some());
    let mut report = summarise(SummaryInput {
        s,
        model: &model,
        mode: if model_only {
            BenchMode::ModelOnly
        } else {
            BenchMode::Pipeline
        },
        task: if model_only { None } else { task },
        session: session.as_ref(),
        source,
        inputs: work.len(),
        model_bytes,
        file_bytes,
        first_ms,
        overhead,
        stage_names,
        measured,
        recording,
        sensor_status,
    })?;
    if report.complete && !foreign {
        report.compute = Some(compute_rate(s, &model, &shapes, &report));
    }

    // The module pipelined (§7.2.4 over decode, pre-processing, forward, post-processing).
    if s.pipeline_workers > 0 && report.complete {
        progress.note(format!(
            "acceval: pipelined run: {} inputs, {} decode/pre-process thread(s), {} model instance(s)",
            s.policy.runs.max(1),
            s.pipeline_workers,
            s.pipeline_instances.max(1)
        ));
        let mut p = pipelined(s, &model, &shapes, session.as_mut(), &spec, &work, stop)?;
        p.one_at_a_time_fps = report.fps.value;
        p.speedup = p.fps.value.zip(p.one_at_a_time_fps).map(|(a, b)| a / b);
        report.pipelined = Some(p);
    }

    // Offline throughput over batch sizes (model only, dynamic batch).
    if (!s.batch.is_empty() || s.peak_power) && report.complete {
        let Work::Tensors(sets) = &work else {
            return Err(Error::BatchOfFiles);
        };
        let ctx = BatchCtx {
            model: &model,
            s,
            specs: &specs,
            base: &sets[0],
            stop,
        };
        for &b in &s.batch {
            report.batch_sweep.push(batch_point(&ctx, b, None)?.0);
        }
        if s.peak_power {
            report.peak_power = Some(peak_power_sweep(&ctx)?);
        }
    }
    Ok(report)
}

/// The pipelined run of `s` (super::pipelined): `session` is its first model instance,
/// the others are opened with the same backend and options.
fn pipelined(
    s: &BenchSettings,
    model: &Path,
    shapes: &[(String, Vec<usize>)],
    session: &mut dyn Session,
    spec: &TaskSpec,
    work: &Work,
    stop: &AtomicBool,
) -> Result<crate::report::schema::bench::Pipelined, Error> {
    let Work::Files(files) = work else {
        return Err(Error::PipelinedModelOnly);
    };
    let opts = s.backend.load_options(shapes.to_vec(), false);
    let open = || backend::load(model, &s.backend.spec, &opts).map_err(|e| e.to_string());
    Ok(super::pipelined::run(
        session,
        &super::pipelined::Plan {
            spec,
            files,
            n: s.policy.runs.max(1),
            workers: s.pipeline_workers,
            instances: s.pipeline_instances.max(1),
            open: &open,
            stop,
        },
    ))
}

/// The timed loop with telemetry over its window (after the warm-up).
fn timed_loop(
    s: &BenchSettings,
    session: &mut dyn Session,
    spec: &TaskSpec,
    work: &Work,
    progress: &Progress,
    stop: &AtomicBool,
    part: Option<&mut dyn ClusterPart>,
) -> (Measured, Option<telemetry::Recording>, Vec<SensorStatus>) {
    let (sensors, sensor_status) = if s.telemetry.sample_ms > 0 {
        telemetry::probe(&telemetry::ProbeOptions {
            ptd: s.telemetry.ptd.clone(),
            powercap: None,
        })
    } else {
        (Vec::new(), Vec::new())
    };
    progress.set_length(s.policy.runs as u64);
    let mut sampler = None;
    let every = Duration::from_millis(s.telemetry.sample_ms);
    // In a cluster run the timed samples are the rank's shard (the warm-up cycles from 0),
    // and a failed start barrier fails the first timed sample.
    let first = part.as_ref().map(|p| p.first_sample());
    let timed: std::cell::Cell<Option<usize>> = std::cell::Cell::new(None);
    let refused: std::cell::RefCell<Option<String>> = std::cell::RefCell::new(None);
    let mut part = part;
    let measured = harness::run_windowed(
        &s.policy,
        |i, st| {
            let i = match (first, timed.get()) {
                (Some(f), Some(k)) => {
                    if let Some(e) = refused.borrow().as_ref() {
                        return Err(Error::Cluster(e.clone()));
                    }
                    timed.set(Some(k + 1));
                    f + k
                }
                _ => i,
            };
            one_sample(session, spec, work, i, st)
        },
        stop,
        |k, mean| {
            progress.set_position(k as u64);
            progress.set_message(format!("mean {mean:.3} ms"));
        },
        || {
            if let Some(p) = part.as_mut()
                && let Err(e) = p.start()
            {
                *refused.borrow_mut() = Some(e);
            }
            timed.set(Some(0));
            if !every.is_zero() {
                sampler = Some(telemetry::start(sensors, every));
            }
        },
    );
    let recording = sampler.map(|x| x.stop());
    if let Some(p) = part {
        p.end();
    }
    (measured, recording, sensor_status)
}

/// What the report is made from.
struct SummaryInput<'a> {
    s: &'a BenchSettings,
    model: &'a Path,
    mode: BenchMode,
    task: Option<Task>,
    session: &'a dyn Session,
    source: String,
    inputs: usize,
    model_bytes: u64,
    file_bytes: Option<u64>,
    first_ms: f64,
    overhead: f64,
    stage_names: Vec<&'static str>,
    measured: Measured,
    recording: Option<telemetry::Recording>,
    sensor_status: Vec<SensorStatus>,
}

/// Statistics, validity and the report from the measured samples.
fn summarise(x: SummaryInput) -> Result<BenchReport, Error> {
    let m = &x.measured;
    let totals: Vec<f64> = m.samples.iter().map(|s| s.total_ms).collect();
    let latency = Summary::of(&totals);
    let mut validity = harness::validity(&x.s.policy, m, latency.as_ref());
    let mut stages = BTreeMap::new();
    for (k, name) in x.stage_names.iter().enumerate() {
        let v: Vec<f64> = m.samples.iter().map(|s| s.stages[k]).collect();
        stages.insert(
            name.to_string(),
            StageReport {
                latency_ms: Summary::of(&v),
                definition: stage_def(name).to_string(),
            },
        );
    }
    let n = m.samples.len() as f64;
    let sum_s: f64 = totals.iter().sum::<f64>() / 1e3;
    let telemetry = x.recording.as_ref().map(|r| {
        telemetry::summarise(
            r,
            x.sensor_status.clone(),
            m.samples.len() as u64,
            x.model_bytes as f64 * n / 1e6,
        )
    });
    if let Some(r) = &x.recording {
        let missed: u64 = r.gaps.iter().map(|g| g.missed_ticks).sum();
        validity.rules.push(harness::Rule {
            rule: "telemetry ticks".into(),
            passed: true,
            detail: format!(
                "{} ticks every {} ms, {} missed (recorded as gaps, informational)",
                r.ticks.len(),
                x.s.telemetry.sample_ms,
                missed
            ),
        });
    }
    let timings = x.session.timings();
    Ok(BenchReport {
        schema: "acceval.bench/1".into(),
        model: x.model.display().to_string(),
        model_sha256: crate::util::fs::sha256_hex(&crate::util::read(x.model)?),
        mode: x.mode,
        task: x.task,
        session: x.session.info().clone(),
        policy: x.s.policy.clone(),
        inputs: InputsInfo {
            source: x.source,
            count: x.inputs,
            model_input_bytes: x.model_bytes,
            file_bytes: x.file_bytes,
        },
        cold_start: ColdStart {
            convert_ms: timings.convert_ms,
            init_ms: timings.init_ms,
            first_inference_ms: x.first_ms,
        },
        warmup_samples: m.warmup_samples,
        warmup_ms: m.warmup_ms,
        harness_overhead_us: x.overhead,
        latency_ms: latency,
        latency_definition: LATENCY_DEF.into(),
        stages,
        copies: match &x.session.info().copies {
            Some(how) => format!("timed apart by {}: {how}", x.s.backend.spec),
            None => format!(
                "inside forward: {} takes and returns host tensors, so copy in and copy out cannot be timed apart (no h2d/d2h stages)",
                x.s.backend.spec
            ),
        },
        percentile_support: percentile_support(m.samples.len()),
        fps: Figure {
            value: (sum_s > 0.0).then(|| n / sum_s),
            unit: "1/s".into(),
            definition: FPS_DEF.into(),
        },
        throughput: Figure {
            value: (m.wall_s > 0.0).then(|| n / m.wall_s),
            unit: "1/s".into(),
            definition: THROUGHPUT_DEF.into(),
        },
        validity,
        batch_sweep: Vec::new(),
        pipelined: None,
        peak_power: None,
        telemetry,
        compute: None,
        samples: m.samples.len(),
        wall_s: m.wall_s,
        origin_unix_ms: (m.origin_unix_ms > 0.0).then_some(m.origin_unix_ms),
        complete: !m.interrupted && m.error.is_none(),
        interrupted: m.interrupted,
        error: m
            .error
            .clone()
            .or_else(|| m.interrupted.then(|| Cut::Interrupted.to_string())),
        raw: x.measured.samples,
        stage_names: x.stage_names.iter().map(|s| s.to_string()).collect(),
        recording: x.recording,
    })
}

const COMPUTE_DEF: &str = "achieved = the model's FLOPs for one forward pass at the measured input shapes (acceval inspect: 2 × MACs + other ops) / the median (P50) forward time; share = achieved / the device's FP32 peak";

/// Achieved GFLOP/s of the forward pass, and its share of the device's peak.
fn compute_rate(
    s: &BenchSettings,
    model: &Path,
    shapes: &[(String, Vec<usize>)],
    report: &BenchReport,
) -> ComputeRate {
    let overrides: Vec<InputShape> = shapes
        .iter()
        .map(|(n, d)| InputShape {
            name: n.clone(),
            dims: d.iter().map(|&x| x as i64).collect(),
        })
        .collect();
    // The declared shapes when the measured ones are refused (a model declaring -1).
    let analysis =
        crate::model::analyse(model, &overrides).or_else(|_| crate::model::analyse(model, &[]));
    let (flops, lower_bound, mut note) = match analysis {
        Ok(a) => (
            a.flops.filter(|&f| f > 0),
            a.lower_bound,
            a.macs_unavailable.clone(),
        ),
        Err(e) => (
            None,
            false,
            Some(format!("the model's FLOPs are unknown: {e}")),
        ),
    };
    let forward_p50_ms = report
        .stages
        .get("forward")
        .and_then(|st| st.latency_ms.as_ref())
        .map(|l| l.p50);
    let achieved = match (flops, forward_p50_ms) {
        (Some(f), Some(ms)) if ms > 0.0 => Some(f as f64 / (ms / 1e3) / 1e9),
        _ => None,
    };
    if flops.is_none() && note.is_none() {
        note = Some("inspect counted no FLOPs for this model".into());
    }
    let threads = s
        .backend
        .threads
        .unwrap_or_else(crate::backend::tract::all_cores);
    let peak = crate::device::peak::for_backend(&s.backend.spec, threads, s.peak_gflops);
    let share_of_peak_pct = match (achieved, peak.gflop_per_s) {
        (Some(a), Some(p)) if p > 0.0 => Some(100.0 * a / p),
        _ => None,
    };
    ComputeRate {
        model_flops: flops,
        flops_lower_bound: lower_bound,
        forward_p50_ms,
        achieved_gflop_per_s: achieved,
        peak,
        share_of_peak_pct,
        definition: COMPUTE_DEF.into(),
        note,
    }
}

/// What a batch point needs.
struct BatchCtx<'a> {
    model: &'a Path,
    s: &'a BenchSettings,
    specs: &'a [InputSpec],
    base: &'a [HostTensor],
    stop: &'a AtomicBool,
}

/// `base` repeated to batch `b` (models with a dynamic first dimension only).
fn batched_inputs(c: &BatchCtx, b: usize) -> Result<Vec<HostTensor>, Error> {
    c.base
        .iter()
        .zip(c.specs)
        .map(|(t, s)| {
            if s.dims
                .first()
                .and_then(|d| d.known())
                .is_some_and(|d| d as usize != b)
            {
                return Err(Error::StaticBatch {
                    input: s.name.clone(),
                    dims: crate::model::shape::shape_str(&s.dims),
                });
            }
            Ok(HostTensor {
                name: t.name.clone(),
                data: repeat_batch(&t.data, b)?,
            })
        })
        .collect()
}

/// Runs the policy at batch `b` (a fresh session with the batched shapes), with telemetry
/// over the timed window when `sample` is given.
fn batch_point(
    c: &BatchCtx,
    b: usize,
    sample: Option<Duration>,
) -> Result<(BatchPoint, Option<TelemetrySummary>), Error> {
    if b == 0 {
        return Err(SettingError::says(Setting::Batch, "sizes must be at least 1").into());
    }
    let batched = batched_inputs(c, b)?;
    let shapes = batched
        .iter()
        .map(|t| (t.name.clone(), t.data.shape().to_vec()))
        .collect();
    let mut sess = backend::load(
        c.model,
        &c.s.backend.spec,
        &c.s.backend.load_options(shapes, false),
    )?;
    let (sensors, status) = match sample {
        Some(_) => telemetry::probe(&telemetry::ProbeOptions {
            ptd: c.s.telemetry.ptd.clone(),
            powercap: None,
        }),
        None => (Vec::new(), Vec::new()),
    };
    let mut sampler = None;
    let m = harness::run_windowed(
        &c.s.policy,
        |_, st| {
            st[0] = sess.timed_run(&batched)?.forward_ms;
            Ok::<(), crate::backend::BackendError>(())
        },
        c.stop,
        |_, _| {},
        || {
            if let Some(every) = sample {
                sampler = Some(telemetry::start(sensors, every));
            }
        },
    );
    let rec = sampler.map(|s| s.stop());
    if let Some(e) = &m.error {
        return Err(Error::Batch {
            batch: b,
            error: e.clone(),
        });
    }
    let tot: Vec<f64> = m.samples.iter().map(|x| x.total_ms).collect();
    let sum: f64 = tot.iter().sum::<f64>() / 1e3;
    let lat = Summary::of(&tot);
    let nn = m.samples.len() as f64;
    let bytes = bytes_of(&batched) as f64;
    let tm = rec.map(|r| {
        telemetry::summarise(
            &r,
            status,
            b as u64 * m.samples.len() as u64,
            bytes * nn / 1e6,
        )
    });
    Ok((
        BatchPoint {
            batch: b,
            samples_per_s: b as f64 * nn / sum,
            samples_per_s_wall: b as f64 * nn / m.wall_s,
            input_mb_per_s: bytes * nn / 1e6 / m.wall_s,
            validity: harness::validity(&c.s.policy, &m, lat.as_ref()),
            latency_ms: lat,
        },
        tm,
    ))
}

/// The largest power sample of each device in a step's telemetry.
fn max_power(tm: &TelemetrySummary) -> BTreeMap<String, f64> {
    tm.channels
        .iter()
        .filter(|ch| ch.kind == Kind::Power)
        .filter_map(|ch| ch.max.map(|m| (ch.name.clone(), m)))
        .collect()
}

/// §7.1.6 b: batch 1, 2, 4, ... until samples/s grows by less than 5 % (or batch 1024),
/// sampling power throughout; the peak is the largest power sample.
fn peak_power_sweep(c: &BatchCtx) -> Result<PeakPower, Error> {
    let every = Duration::from_millis(c.s.telemetry.sample_ms.max(100));
    let mut steps: Vec<PeakStep> = Vec::new();
    let mut unavailable = None;
    let mut b = 1usize;
    let mut prev = 0.0f64;
    loop {
        let (p, tm) = batch_point(c, b, Some(every))?;
        let max_power_w = tm.as_ref().map(max_power).unwrap_or_default();
        if max_power_w.is_empty() {
            unavailable = tm.and_then(|t| t.energy_unavailable);
        }
        let gain = p.samples_per_s / prev.max(1e-12) - 1.0;
        steps.push(PeakStep {
            batch: b,
            samples_per_s: p.samples_per_s,
            max_power_w,
        });
        if (prev > 0.0 && gain < 0.05) || b >= 1024 || c.stop.load(Ordering::Relaxed) {
            break;
        }
        prev = p.samples_per_s;
        b *= 2;
    }
    let mut peak: Vec<(String, f64, usize)> = Vec::new();
    for st in &steps {
        for (d, &w) in &st.max_power_w {
            match peak.iter_mut().find(|x| &x.0 == d) {
                Some(x) if w > x.1 => *x = (d.clone(), w, st.batch),
                Some(_) => {}
                None => peak.push((d.clone(), w, st.batch)),
            }
        }
    }
    Ok(PeakPower {
        definition: PEAK_DEF.into(),
        unavailable: if peak.is_empty() {
            Some(unavailable.unwrap_or_else(|| "n/a: no power sensor".into()))
        } else {
            None
        },
        steps,
        peak,
    })
}

/// `data` repeated `b` times along a new first axis (its first axis replaced).
fn repeat_batch(data: &TensorData, b: usize) -> Result<TensorData, Error> {
    macro_rules! rep {
        ($a:expr, $v:ident) => {{
            let a = $a;
            let one = a.index_axis(ndarray::Axis(0), 0);
            let views: Vec<_> = (0..b).map(|_| one.view()).collect();
            TensorData::$v(ndarray::stack(ndarray::Axis(0), &views).map_err(Error::Repeat)?)
        }};
    }
    Ok(match data {
        TensorData::F32(a) => rep!(a, F32),
        TensorData::F64(a) => rep!(a, F64),
        TensorData::I64(a) => rep!(a, I64),
        TensorData::I32(a) => rep!(a, I32),
        TensorData::I8(a) => rep!(a, I8),
        TensorData::U8(a) => rep!(a, U8),
        TensorData::Bool(a) => rep!(a, Bool),
    })
}
