//! The command line turned into the library's settings, once: each conversion validates
//! what clap could not (pairs, paths, combinations) and names the flag in its errors. The
//! library never sees a clap type; `grade` builds the same settings from a profile.

use crate::backend::BackendSettings;
use crate::measure::bench::{BenchSettings, TelemetrySettings};
use crate::measure::harness::Policy;
use crate::report::export::Outputs;

use super::{BackendArgs, BenchArgs, OutputArgs, TelemetryArgs};

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
            ep_options: BackendSettings::parse_ep_options(&self.ep_option)?,
        })
    }
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
        })
    }
}
