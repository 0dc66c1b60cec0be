//! The command line turned into the library's settings, once: each conversion validates
//! what clap could not (pairs, paths, combinations) and names the flag in its errors. The
//! library never sees a clap type; `grade` builds the same settings from a profile.

use crate::backend::BackendSettings;
use crate::measure::bench::{BenchSettings, TelemetrySettings};
use crate::measure::harness::Policy;
use crate::report::export::Outputs;

use super::{BackendArgs, BenchArgs, OutputArgs, TelemetryArgs, TrainArgs};

impl BackendArgs {
    pub fn settings(&self) -> anyhow::Result<BackendSettings> {
        if self.threads == Some(0) {
            anyhow::bail!(
                "--threads 0: give at least 1 (or leave it out for the engine's default)"
            );
        }
        Ok(BackendSettings {
            spec: self.backend.clone(),
            threads: self.threads,
            graph_opt: self.graph_opt,
            ep_options: ep_options(&self.ep_option)?,
            load_timeout_s: self.load_timeout,
            run_timeout_s: self.run_timeout,
        })
    }
}

/// `--ep-option KEY=VALUE` pairs.
fn ep_options(list: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    list.iter()
        .map(|o| {
            o.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "--ep-option '{o}' must be KEY=VALUE, e.g. --ep-option cudnn_conv_algo_search=DEFAULT"
                    )
                })
        })
        .collect()
}

impl OutputArgs {
    pub fn outputs(&self) -> Outputs {
        Outputs {
            json: self.json,
            export_json: self.export_json.clone(),
            export_csv: self.export_csv.clone(),
            out: self.out.clone(),
        }
    }
}

impl TelemetryArgs {
    pub fn settings(&self) -> TelemetrySettings {
        TelemetrySettings {
            sample_ms: self.sample_ms,
            ptd: self.ptd.clone(),
        }
    }
}

impl BenchArgs {
    pub fn settings(&self) -> anyhow::Result<BenchSettings> {
        Ok(BenchSettings {
            backend: self.backend.settings()?,
            model: self.model.clone(),
            inputs: self.inputs.clone(),
            task: self.task,
            model_only: self.model_only,
            shapes: self.shapes.clone(),
            seed: self.seed,
            policy: Policy {
                warmup: self.warmup,
                warmup_time_s: self.warmup_time,
                runs: self.runs,
                duration_s: self.duration,
                interval_ms: self.interval_ms,
                percentile: self.percentile / 100.0,
                max_cv: self.max_cv,
                stability: self.stability,
            },
            batch: self.batch.clone(),
            peak_power: self.peak_power,
            telemetry: self.telemetry.settings(),
            detect: self.detect.params(),
            peak_gflops: None,
            pipeline_workers: self.pipelined.unwrap_or(0),
            pipeline_instances: self.instances.unwrap_or(1),
        })
    }
}

impl TrainArgs {
    pub fn settings(&self) -> anyhow::Result<crate::train::TrainSettings> {
        use crate::train::{Source, TrainSettings, workload};
        refuse(
            &self.old_device,
            "--device",
            "say where it trains with --backend candle or --backend candle:cuda@N, as every command names its backend",
        )?;
        let source = match (&self.workload, self.exec) {
            (Some(w), false) => {
                if !workload::WORKLOADS.contains(&w.as_str()) {
                    anyhow::bail!(
                        "--workload '{w}' is not a built-in workload; they are: {}",
                        workload::WORKLOADS.join(", ")
                    );
                }
                Source::Builtin(w.clone())
            }
            (None, true) => Source::Exec(self.command.clone()),
            _ => anyhow::bail!("give either --workload NAME or --exec -- CMD ARGS... (not both)"),
        };
        let exec = matches!(source, Source::Exec(_));
        if exec && (self.save_weights.is_some() || self.export_onnx.is_some()) {
            anyhow::bail!(
                "--save-weights/--export-onnx: with --exec the script saves its own model"
            );
        }
        if exec && self.repeat > 1 {
            anyhow::bail!("--repeat with --exec: run the command N times instead");
        }
        let output = self.output.outputs();
        // acceval's own events go beside the report unless --mllog says where.
        let mllog = self.mllog.clone().or_else(|| {
            if exec {
                return None;
            }
            output
                .export_json
                .as_ref()
                .map(|p| p.with_extension("mllog"))
                .or_else(|| output.out.as_ref().map(|d| d.join("train.mllog")))
        });
        let (engine, device) = train_engine(&self.backend)?;
        Ok(TrainSettings {
            source,
            epochs: self.epochs,
            batch: self.batch,
            lr: self.lr,
            seed: self.seed,
            precision: self.precision.clone(),
            target: self.target.clone(),
            repeat: self.repeat,
            engine,
            device,
            warmup_steps: self.warmup_steps,
            eval_every: self.eval_every,
            workload: workload::WorkloadOptions {
                samples: self.samples,
                eval_samples: self.eval_samples,
                image_size: self.image_size,
                seed: self.seed,
            },
            telemetry: self.telemetry.settings(),
            save_weights: self.save_weights.clone(),
            export_onnx: self.export_onnx.clone(),
            mllog,
            submission: crate::train::Submission {
                org: self.submission_org.clone(),
                platform: self.submission_platform.clone(),
                division: self.submission_division,
            },
            peak_power: self.peak_power,
            command_line: std::env::args().collect(),
            data_parallel: None,
        })
    }
}

/// A flag spelling that meant another unit or another thing in this command before: given,
/// it is an error that names the flag to use (one name, one meaning, everywhere).
pub fn refuse(given: &Option<String>, flag: &str, instead: &str) -> anyhow::Result<()> {
    match given {
        Some(_) => anyhow::bail!("{flag} is not a flag of this command: {instead}"),
        None => Ok(()),
    }
}

/// `train --backend`: `candle` (or `candle:cpu`) trains on the CPU, `candle:cuda@N` on GPU N;
/// `tch`, `tch:cpu` and `tch:cuda@N` the same on libtorch: the engine and its device.
pub fn train_engine(
    backend: &str,
) -> anyhow::Result<(crate::train::engine::Engine, crate::train::TrainDevice)> {
    use crate::train::TrainDevice;
    use crate::train::engine::Engine;
    let spec: crate::backend::BackendSpec = backend
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--backend {backend}: {e}"))?;
    match (spec.backend.as_str(), spec.provider.as_deref()) {
        ("candle", None | Some("cpu")) if spec.device.is_none() => {
            Ok((Engine::Candle, TrainDevice::Cpu))
        }
        ("candle", Some("cuda")) => Ok((
            Engine::Candle,
            TrainDevice::Cuda(spec.device.unwrap_or(0) as usize),
        )),
        ("tch", None | Some("cpu")) if spec.device.is_none() => Ok((Engine::Tch, TrainDevice::Cpu)),
        ("tch", Some("cuda")) => Ok((
            Engine::Tch,
            TrainDevice::Cuda(spec.device.unwrap_or(0) as usize),
        )),
        _ => anyhow::bail!(
            "--backend {backend}: training runs on candle or libtorch: --backend candle (the CPU), candle:cuda@N (an NVIDIA GPU, with the candle-cuda feature), tch or tch:cuda@N (libtorch, with the tch feature)"
        ),
    }
}
