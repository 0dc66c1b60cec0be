//! `acceval bench`: latency (§7.2.3), FPS (§7.2.4 a), utilization, power and energy
//! (§7.2.6, §7.1.4–7.1.7) under a run policy, judged VALID or INVALID.
//!
//! Two modes. The pipeline (the default for zoo models and `--task`): each sample is one
//! module — decode, pre-process, the backend's run (copy in, forward, copy out), post-process
//! — on input files held in memory, so the hot loop reads no file. Model only
//! (`--model-only`, and models without a task): the backend's run on pre-processed tensors.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;

use crate::Outcome;
use crate::backend::{self, SessionInfo};
use crate::cli::BenchArgs;
use crate::commands::reference::zoo_identity;
use crate::commands::run::{InputsPath, gather_inputs, input_specs, inputs_path, load_options};
use crate::device::telemetry::{self, TelemetrySummary};
use crate::measure::harness::{self, Measured, Policy, Validity};
use crate::measure::stats::{PercentileSupport, Summary, percentile_support};
use crate::model::tensor::{HostTensor, TensorData};
use crate::zoo::{self, Task};

/// One timed figure with its definition.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    pub value: Option<f64>,
    pub unit: &'static str,
    pub definition: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub latency_ms: Option<Summary>,
    pub definition: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct ColdStart {
    /// Parsing and optimising the model into the engine's IR, ms (null when the engine does
    /// it inside session creation).
    pub convert_ms: Option<f64>,
    pub init_ms: f64,
    /// The first inference after initialisation, ms (never part of the steady state).
    pub first_inference_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct InputsInfo {
    pub source: String,
    /// Distinct inputs the samples cycle through.
    pub count: usize,
    /// Bytes of model input per sample (all inputs of one inference), averaged.
    pub model_input_bytes: u64,
    /// Bytes of the input files per sample (pipeline mode), averaged.
    pub file_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BatchPoint {
    pub batch: usize,
    pub latency_ms: Option<Summary>,
    /// batch × N / ΣTi.
    pub samples_per_s: f64,
    /// batch × N / (end − start).
    pub samples_per_s_wall: f64,
    /// Model input MB (10^6 bytes) per second, wall clock.
    pub input_mb_per_s: f64,
    pub validity: Validity,
}

/// What `acceval bench` reports (schema `acceval.bench/1`).
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub schema: &'static str,
    pub model: String,
    pub model_sha256: String,
    /// "pipeline" or "model-only".
    pub mode: &'static str,
    pub task: Option<Task>,
    pub session: SessionInfo,
    pub policy: Policy,
    pub inputs: InputsInfo,
    pub cold_start: ColdStart,
    pub warmup_samples: usize,
    pub warmup_ms: f64,
    /// The harness's own cost per sample (the loop around an empty closure), µs.
    pub harness_overhead_us: f64,
    /// End to end per sample, ms (§7.2.3).
    pub latency_ms: Option<Summary>,
    pub latency_definition: &'static str,
    pub stages: BTreeMap<String, StageReport>,
    /// Where the host↔device copies are.
    pub copies: String,
    pub percentile_support: Vec<PercentileSupport>,
    /// N / ΣTi (§7.2.4 a).
    pub fps: Figure,
    /// N / (end − start).
    pub throughput: Figure,
    pub validity: Validity,
    pub batch_sweep: Vec<BatchPoint>,
    /// `--peak-power`: the batch raised until throughput stops growing (§7.1.6 b).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_power: Option<PeakPower>,
    pub telemetry: Option<TelemetrySummary>,
    pub samples: usize,
    pub wall_s: f64,
    /// False when the run was interrupted or a sample failed; `error` says which.
    pub complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip)]
    pub raw: Vec<harness::Sample>,
    #[serde(skip)]
    pub stage_names: Vec<&'static str>,
    #[serde(skip)]
    pub recording: Option<telemetry::Recording>,
}

const LATENCY_DEF: &str = "end to end per sample: host wall clock (monotonic) from the start of the sample to its end after device synchronisation; in pipeline mode decode + pre-process + the backend's run (copy in, forward, copy out) + post-process";
const FPS_DEF: &str = "N / ΣTi: samples over the sum of their end-to-end times (§7.2.4 a), 1/s";
const THROUGHPUT_DEF: &str = "N / (end − start): samples over the wall time from the first sample's start to the last one's end, idle gaps included, 1/s";

fn stage_def(name: &str) -> &'static str {
    match name {
        "decode" => "decoding the in-memory file (JPEG/PNG, CSV)",
        "preprocess" => "resize/letterbox/normalise/NCHW, or windowing/standardising",
        "forward" => "the backend's run: copy in, forward, copy out, device synchronised",
        "postprocess" => "softmax/top-k, box decoding + NMS, or de-normalising",
        _ => "",
    }
}

fn bytes_of(t: &[HostTensor]) -> u64 {
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

enum Work {
    /// In-memory files for the task pipeline.
    Files(Vec<(String, Vec<u8>)>),
    /// Model input sets.
    Tensors(Vec<Vec<HostTensor>>),
}

fn read_files(path: &Path, exts: &[&str]) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut paths: Vec<PathBuf> = if path.is_dir() {
        std::fs::read_dir(path)
            .with_context(|| format!("reading '{}'", path.display()))?
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
        bail!("'{}' holds no {} file", path.display(), exts.join("/"));
    }
    paths
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p)
                .map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", p.display()))?;
            Ok((p.display().to_string(), b))
        })
        .collect()
}

pub fn run(args: BenchArgs) -> anyhow::Result<Outcome> {
    let report = measure(&args, &crate::util::signal::stop_flag())?;
    write_exports(&args, &report)?;
    let mut o = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut o, &report)?;
        writeln!(o)?;
    } else {
        crate::report::bench::write_text(&mut o, &report)?;
    }
    if let (Some(e), false) = (
        &report.error,
        report.error.as_deref() == Some(crate::util::signal::INTERRUPTED),
    ) {
        bail!(
            "{e}: {} samples were measured before it{}",
            report.samples,
            if args.export_json.is_some() {
                " (written, complete: false)"
            } else {
                ""
            }
        );
    }
    Ok(if report.validity.result == "VALID" || args.allow_invalid {
        Outcome::Ok
    } else {
        Outcome::NotCompliant
    })
}

/// Runs the whole measurement of `args` (no output); `stop` ends it early.
pub fn measure(args: &BenchArgs, stop: &AtomicBool) -> anyhow::Result<BenchReport> {
    if !(0.0..100.0).contains(&args.percentile) || args.percentile <= 0.0 {
        bail!("--percentile {} must be in (0, 100)", args.percentile);
    }
    let model = zoo::resolve(&args.model)?;
    if !model.is_file() {
        bail!("model '{}' does not exist", model.display());
    }
    let specs = input_specs(&model)?;
    let zoo_entry = zoo_identity(&model);
    let task = args.task.or(zoo_entry.as_ref().map(|(e, _)| e.task));
    let model_only = args.model_only || task.is_none() || !args.batch.is_empty() || args.peak_power;

    // The inputs, all in memory before anything is timed.
    let (work, source) = if !model_only {
        let task = task.expect("a task");
        let files = match (&args.inputs, &zoo_entry) {
            (Some(p), _) => read_files(
                p,
                if task == Task::Forecasting {
                    &["csv"]
                } else {
                    &["jpg", "jpeg", "png"]
                },
            )?,
            (None, Some((e, _))) => crate::task::inputs::generate(e.input_set)
                .unwrap_or_default()
                .into_iter()
                .map(|(n, b, _)| (n, b))
                .collect(),
            (None, None) => bail!("give the pipeline's input files with --inputs"),
        };
        let src = match (&args.inputs, &zoo_entry) {
            (Some(p), _) => format!("{} ({} files)", p.display(), files.len()),
            (_, Some((e, _))) => format!("input set '{}' ({} files)", e.input_set, files.len()),
            _ => String::new(),
        };
        (Work::Files(files), src)
    } else {
        match (&args.inputs, &zoo_entry) {
            (Some(p), _) => match inputs_path(p, &specs) {
                Ok(InputsPath::Files(f)) => {
                    let (t, _) = gather_inputs(&specs, &f, &args.shapes, args.seed)?;
                    (Work::Tensors(vec![t]), format!("{}", p.display()))
                }
                Ok(InputsPath::Images) | Err(_) if task.is_some() => {
                    let files = read_files(p, &["jpg", "jpeg", "png", "csv"])?;
                    let [spec] = specs.as_slice() else {
                        bail!("pre-processed images feed one-input models");
                    };
                    let shape: Vec<usize> = spec
                        .dims
                        .iter()
                        .map(|d| d.known().unwrap_or(1).max(1) as usize)
                        .collect();
                    let sets = crate::task::prepare_inputs(task.expect("task"), &shape, &files)?
                        .into_iter()
                        .map(|p| {
                            vec![HostTensor {
                                name: spec.name.clone(),
                                data: TensorData::F32(p.tensor),
                            }]
                        })
                        .collect();
                    (
                        Work::Tensors(sets),
                        format!("{} (pre-processed)", p.display()),
                    )
                }
                Ok(InputsPath::Images) => bail!(
                    "--inputs '{}' holds images: pass --task to pre-process them",
                    p.display()
                ),
                Err(e) => return Err(e),
            },
            (None, Some((e, _))) => {
                let sets = zoo::input_set_tensors(e)?
                    .into_iter()
                    .map(|p| {
                        vec![HostTensor {
                            name: e.input.to_string(),
                            data: TensorData::F32(p.tensor),
                        }]
                    })
                    .collect();
                (
                    Work::Tensors(sets),
                    format!("input set '{}', pre-processed", e.input_set),
                )
            }
            (None, None) => {
                let (t, rec) = gather_inputs(&specs, &[], &args.shapes, args.seed)?;
                (
                    Work::Tensors(vec![t]),
                    rec.iter()
                        .map(|r| format!("{}: {}", r.name, r.source))
                        .collect::<Vec<_>>()
                        .join("; "),
                )
            }
        }
    };

    let policy = Policy {
        warmup: args.warmup,
        warmup_time_s: args.warmup_time,
        runs: args.runs,
        duration_s: args.duration,
        interval_ms: args.interval_ms,
        percentile: args.percentile / 100.0,
        max_cv: args.max_cv,
        stability: args.stability,
    };

    // The task pipeline's static input shape, or the first tensor set's shapes.
    let shapes: Vec<(String, Vec<usize>)> = match &work {
        Work::Tensors(sets) => sets[0]
            .iter()
            .map(|t| (t.name.clone(), t.data.shape().to_vec()))
            .collect(),
        Work::Files(_) => {
            let s = &specs[0];
            let dims: Option<Vec<usize>> = s
                .dims
                .iter()
                .map(|d| d.known().map(|v| v as usize))
                .collect();
            vec![(
                s.name.clone(),
                dims.ok_or_else(|| {
                    anyhow::anyhow!(
                        "input '{}' has dynamic dims; the task pipeline needs a static input shape",
                        s.name
                    )
                })?,
            )]
        }
    };
    let opts = load_options(&args.backend, shapes.clone(), false)?;
    let overhead = harness::overhead_us(20_000);
    let mut session = backend::load(&model, &args.backend.backend, &opts)?;
    let timings = session.timings().clone();
    let info = session.info().clone();

    let spec = crate::task::TaskSpec {
        task: task.unwrap_or(Task::Classification),
        input_name: specs.first().map(|s| s.name.clone()).unwrap_or_default(),
        input_shape: shapes.first().map(|s| s.1.clone()).unwrap_or_default(),
        labels: zoo_entry
            .as_ref()
            .map(|(e, _)| e.labels.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default(),
        top_k: 5,
        detect: args.detect.params(),
    };

    // Cold start: the first inference, apart.
    let t = Instant::now();
    let first: anyhow::Result<()> = match &work {
        Work::Files(files) => {
            crate::task::run_bytes(session.as_mut(), &spec, &files[0].0, &files[0].1).map(|_| ())
        }
        Work::Tensors(sets) => session
            .run(&sets[0])
            .and_then(|_| session.synchronize())
            .map_err(Into::into),
    };
    first.with_context(|| {
        format!(
            "the first inference of {} on {}",
            model.display(),
            info.backend
        )
    })?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;

    let (model_bytes, file_bytes) = match &work {
        Work::Tensors(sets) => (
            sets.iter().map(|s| bytes_of(s)).sum::<u64>() / sets.len() as u64,
            None,
        ),
        Work::Files(files) => (
            shapes[0].1.iter().product::<usize>() as u64 * 4,
            Some(files.iter().map(|f| f.1.len() as u64).sum::<u64>() / files.len() as u64),
        ),
    };

    // Telemetry around the timed loop.
    let (sensors, sensor_status) = if args.sample_ms > 0 {
        telemetry::probe(&telemetry::ProbeOptions {
            ptd: args.ptd.clone(),
            powercap: None,
        })
    } else {
        (Vec::new(), Vec::new())
    };
    let bar = indicatif::ProgressBar::new(policy.runs as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {elapsed_precise} {pos} samples (min {len}) {msg}",
        )
        .expect("valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let mut sampler = None;
    let sample_every = Duration::from_millis(args.sample_ms);
    let start_telemetry = || {
        if !sample_every.is_zero() {
            sampler = Some(telemetry::start(sensors, sample_every));
        }
    };

    let stage_names: Vec<&'static str> = match &work {
        Work::Files(_) => vec!["decode", "preprocess", "forward", "postprocess"],
        Work::Tensors(_) => vec!["forward"],
    };
    let progress = |k: usize, mean: f64| {
        bar.set_position(k as u64);
        bar.set_message(format!("mean {mean:.3} ms"));
    };
    let measured: Measured = match &work {
        Work::Files(files) => {
            let n = files.len();
            harness::run_windowed(
                &policy,
                |i, st| {
                    let (label, bytes) = &files[i % n];
                    let r = crate::task::run_bytes(session.as_mut(), &spec, label, bytes)?;
                    st[0] = r.stages.decode_ms;
                    st[1] = r.stages.preprocess_ms;
                    st[2] = r.stages.forward_ms;
                    st[3] = r.stages.postprocess_ms;
                    Ok(())
                },
                stop,
                progress,
                start_telemetry,
            )
        }
        Work::Tensors(sets) => {
            let n = sets.len();
            harness::run_windowed(
                &policy,
                |i, st| {
                    let t = Instant::now();
                    let out = session.run(&sets[i % n])?;
                    session.synchronize()?;
                    st[0] = t.elapsed().as_secs_f64() * 1e3;
                    drop(out);
                    Ok(())
                },
                stop,
                progress,
                start_telemetry,
            )
        }
    };
    let recording = sampler.map(|s| s.stop());
    bar.finish_and_clear();

    let totals: Vec<f64> = measured.samples.iter().map(|s| s.total_ms).collect();
    let latency = Summary::of(&totals);
    let mut validity = harness::validity(&policy, &measured, latency.as_ref());
    let mut stages = BTreeMap::new();
    for (k, name) in stage_names.iter().enumerate() {
        let v: Vec<f64> = measured.samples.iter().map(|s| s.stages[k]).collect();
        stages.insert(
            name.to_string(),
            StageReport {
                latency_ms: Summary::of(&v),
                definition: stage_def(name),
            },
        );
    }
    let n = measured.samples.len() as f64;
    let sum_s: f64 = totals.iter().sum::<f64>() / 1e3;
    let telemetry = recording.as_ref().map(|r| {
        telemetry::summarise(
            r,
            sensor_status.clone(),
            measured.samples.len() as u64,
            model_bytes as f64 * n / 1e6,
        )
    });
    if let Some(r) = &recording {
        let missed: u64 = r.gaps.iter().map(|g| g.missed_ticks).sum();
        validity.rules.push(harness::Rule {
            rule: "telemetry ticks".into(),
            passed: true,
            detail: format!(
                "{} ticks every {} ms, {} missed (recorded as gaps, informational)",
                r.ticks.len(),
                args.sample_ms,
                missed
            ),
        });
    }

    // Offline throughput over batch sizes (model only, dynamic batch).
    let mut batch_sweep = Vec::new();
    let mut peak_power = None;
    if (!args.batch.is_empty() || args.peak_power)
        && measured.error.is_none()
        && !measured.interrupted
    {
        let Work::Tensors(sets) = &work else {
            unreachable!("--batch and --peak-power run model only")
        };
        let ctx = BatchCtx {
            model: &model,
            args,
            specs: &specs,
            base: &sets[0],
            policy: &policy,
            stop,
        };
        for &b in &args.batch {
            batch_sweep.push(batch_point(&ctx, b, None)?.0);
        }
        if args.peak_power {
            peak_power = Some(peak_power_sweep(&ctx)?);
        }
    }

    let report = BenchReport {
        schema: "acceval.bench/1",
        model: model.display().to_string(),
        model_sha256: crate::util::fs::sha256_hex(&std::fs::read(&model)?),
        mode: if model_only { "model-only" } else { "pipeline" },
        task: if model_only { None } else { task },
        session: info,
        policy,
        inputs: InputsInfo {
            source,
            count: match &work {
                Work::Files(f) => f.len(),
                Work::Tensors(t) => t.len(),
            },
            model_input_bytes: model_bytes,
            file_bytes,
        },
        cold_start: ColdStart {
            convert_ms: timings.convert.map(|d| d.as_secs_f64() * 1e3),
            init_ms: timings.init.as_secs_f64() * 1e3,
            first_inference_ms: first_ms,
        },
        warmup_samples: measured.warmup_samples,
        warmup_ms: measured.warmup_ms,
        harness_overhead_us: overhead,
        latency_ms: latency,
        latency_definition: LATENCY_DEF,
        stages,
        copies: format!(
            "inside forward: {} takes and returns host tensors, so copy in and copy out cannot be timed apart (no h2d/d2h stages)",
            args.backend.backend
        ),
        percentile_support: percentile_support(measured.samples.len()),
        fps: Figure {
            value: (sum_s > 0.0).then(|| n / sum_s),
            unit: "1/s",
            definition: FPS_DEF,
        },
        throughput: Figure {
            value: (measured.wall_s > 0.0).then(|| n / measured.wall_s),
            unit: "1/s",
            definition: THROUGHPUT_DEF,
        },
        validity,
        batch_sweep,
        peak_power,
        telemetry,
        samples: measured.samples.len(),
        wall_s: measured.wall_s,
        complete: !measured.interrupted && measured.error.is_none(),
        error: measured.error.clone().or_else(|| {
            measured
                .interrupted
                .then(|| crate::util::signal::INTERRUPTED.to_string())
        }),
        raw: measured.samples,
        stage_names,
        recording,
    };
    Ok(report)
}

/// What a batch point needs.
struct BatchCtx<'a> {
    model: &'a Path,
    args: &'a BenchArgs,
    specs: &'a [crate::commands::run::InputSpec],
    base: &'a [HostTensor],
    policy: &'a Policy,
    stop: &'a AtomicBool,
}

/// Runs the policy at batch `b` (a fresh session with the batched shapes), with telemetry
/// over the timed window when `sample` is given.
fn batch_point(
    c: &BatchCtx,
    b: usize,
    sample: Option<Duration>,
) -> anyhow::Result<(BatchPoint, Option<TelemetrySummary>)> {
    if b == 0 {
        bail!("--batch sizes must be at least 1");
    }
    let batched: Vec<HostTensor> = c
        .base
        .iter()
        .zip(c.specs)
        .map(|(t, s)| {
            if s.dims.first().and_then(|d| d.known()).is_some_and(|d| d as usize != b) {
                bail!(
                    "input '{}' has a static batch dimension {}; --batch and --peak-power need a model with a dynamic first dimension",
                    s.name,
                    crate::model::shape::shape_str(&s.dims)
                );
            }
            Ok(HostTensor {
                name: t.name.clone(),
                data: repeat_batch(&t.data, b)?,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let shapes = batched
        .iter()
        .map(|t| (t.name.clone(), t.data.shape().to_vec()))
        .collect();
    let opts = load_options(&c.args.backend, shapes, false)?;
    let mut s = backend::load(c.model, &c.args.backend.backend, &opts)?;
    let (sensors, status) = match sample {
        Some(_) => telemetry::probe(&telemetry::ProbeOptions {
            ptd: c.args.ptd.clone(),
            powercap: None,
        }),
        None => (Vec::new(), Vec::new()),
    };
    let mut sampler = None;
    let m = harness::run_windowed(
        c.policy,
        |_, st| {
            let t = Instant::now();
            let out = s.run(&batched)?;
            s.synchronize()?;
            st[0] = t.elapsed().as_secs_f64() * 1e3;
            drop(out);
            Ok(())
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
        bail!("batch {b}: {e}");
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
            validity: harness::validity(c.policy, &m, lat.as_ref()),
            latency_ms: lat,
        },
        tm,
    ))
}

/// One step of the peak-power sweep.
#[derive(Debug, Clone, Serialize)]
pub struct PeakStep {
    pub batch: usize,
    pub samples_per_s: f64,
    /// The largest power sample per device during this step, W.
    pub max_power_w: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PeakPower {
    pub definition: &'static str,
    pub steps: Vec<PeakStep>,
    /// The largest power sample per device over the sweep, W, and the batch it came at.
    pub peak: Vec<(String, f64, usize)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// §7.1.6 b: batch 1, 2, 4, ... until samples/s grows by less than 5 % (or batch 1024),
/// sampling power throughout; the peak is the largest power sample.
fn peak_power_sweep(c: &BatchCtx) -> anyhow::Result<PeakPower> {
    let every = Duration::from_millis(c.args.sample_ms.max(100));
    let mut steps: Vec<PeakStep> = Vec::new();
    let mut unavailable = None;
    let mut b = 1usize;
    let mut prev = 0.0f64;
    loop {
        let (p, tm) = batch_point(c, b, Some(every))?;
        let mut max_power_w = BTreeMap::new();
        if let Some(tm) = &tm {
            for ch in tm
                .channels
                .iter()
                .filter(|ch| ch.kind == telemetry::Kind::Power)
            {
                if let Some(m) = ch.max {
                    max_power_w.insert(ch.name.clone(), m);
                }
            }
            if max_power_w.is_empty() {
                unavailable = tm.energy_unavailable.clone();
            }
        }
        let gain = p.samples_per_s / prev.max(1e-12) - 1.0;
        steps.push(PeakStep {
            batch: b,
            samples_per_s: p.samples_per_s,
            max_power_w,
        });
        if (prev > 0.0 && gain < 0.05)
            || b >= 1024
            || c.stop.load(std::sync::atomic::Ordering::Relaxed)
        {
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
        definition: "batch 1, 2, 4, ... until samples/s grows by less than 5 %; the largest power sample of each device over the sweep (§7.1.6 b)",
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
fn repeat_batch(data: &TensorData, b: usize) -> anyhow::Result<TensorData> {
    macro_rules! rep {
        ($a:expr, $v:ident) => {{
            let a = $a;
            let one = a.index_axis(ndarray::Axis(0), 0);
            let views: Vec<_> = (0..b).map(|_| one.view()).collect();
            TensorData::$v(ndarray::stack(ndarray::Axis(0), &views)?)
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

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    crate::util::fs::write_atomic(path, bytes)
        .map_err(|e| anyhow::anyhow!("cannot write '{}': {e}", path.display()))
}

fn write_exports(args: &BenchArgs, r: &BenchReport) -> anyhow::Result<()> {
    if let Some(p) = &args.export_json {
        write_file(p, &serde_json::to_vec_pretty(r)?)?;
    }
    if let Some(p) = &args.export_csv {
        write_file(p, crate::report::bench::summary_csv(r).as_bytes())?;
    }
    if let Some(p) = &args.export_samples {
        write_file(p, crate::report::bench::samples_csv(r).as_bytes())?;
    }
    if let Some(p) = &args.export_telemetry {
        let Some(rec) = &r.recording else {
            bail!("--export-telemetry: telemetry is off (--sample-ms 0)");
        };
        write_file(p, crate::report::bench::telemetry_csv(rec).as_bytes())?;
    }
    Ok(())
}
