//! The serving stages of a grade: QPS against `acceval serve` on loopback (§7.2.5), and
//! the MindIE client mode against an LLM service, built from the profile's sections as
//! library settings (the same the `qps` and `llm` commands build from their flags).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::backend::BackendSettings;
use crate::grade::profile::{LlmSection, QpsSection};
use crate::llm::{Dataset, LlmSettings};
use crate::load::QpsSettings;
use crate::report::schema::llm::LlmReport;
use crate::report::schema::qps::{Arrival, LoadMode, QpsReport};
use crate::server::ServeSettings;
use crate::util::progress::Progress;

/// Serves `model` on 127.0.0.1 (a free port) on the grade's backend and searches its max
/// QPS open loop, as `acceval serve` + `acceval qps` would.
pub fn qps(
    model: &str,
    q: &QpsSection,
    b: &BackendSettings,
    progress: &Progress,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<QpsReport> {
    let serve = ServeSettings {
        batch_timeout_us: 0,
        max_inflight: 4096,
        max_body_mb: 256.0,
        ..ServeSettings::new(PathBuf::from(model), b.clone())
    };
    let cfg = crate::server::config(&serve)?;
    let name = cfg.name.clone();
    let running = crate::server::start(cfg, "127.0.0.1", 0)?;
    let mut s = QpsSettings::new(&format!("http://{}", running.addr), &name);
    s.slo = q.slo.clone();
    s.error_budget = q.error_budget;
    s.mode = LoadMode::Open;
    s.distribution = Arrival::Poisson;
    s.max_rate = q.max_rate;
    s.precision = q.precision;
    s.step_duration_s = q.step_duration_s;
    s.warmup_s = q.warmup_s;
    s.inputs.binary = q.binary;
    let report = crate::load::qps::measure(&s.plan()?, progress, stop);
    running.stop()?;
    Ok(report?)
}

/// `acceval llm` against `url` with the profile's settings.
pub fn llm(
    l: &LlmSection,
    url: String,
    synthetic_config: PathBuf,
    progress: &Progress,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<LlmReport> {
    let mut s = LlmSettings::new(&url, &l.model);
    s.api = l.api;
    s.dataset = Dataset::Synthetic(Some(synthetic_config));
    s.concurrency = l.concurrency;
    s.warmup = l.warmup;
    Ok(crate::llm::measure(&s.plan()?, progress, stop)?)
}

/// The settings of a profile's `[train]` stage (telemetry at 1 s, events beside the report).
pub fn train_settings(
    t: &crate::report::schema::profile::TrainSection,
    dir: &std::path::Path,
    ptd: Option<String>,
) -> anyhow::Result<crate::train::TrainSettings> {
    use crate::train::{Source, TrainSettings, workload::WorkloadOptions};
    Ok(TrainSettings {
        source: Source::Builtin(t.workload.clone()),
        epochs: t.epochs,
        batch: t.batch,
        lr: None,
        seed: t.seed,
        precision: "fp32".into(),
        target: t.target.clone(),
        repeat: 1,
        device: crate::train::TrainDevice::Cpu,
        warmup_steps: 1,
        eval_every: 1,
        workload: WorkloadOptions {
            samples: t.samples,
            eval_samples: t.eval_samples,
            image_size: None,
            seed: t.seed,
        },
        telemetry: crate::measure::bench::TelemetrySettings {
            sample_ms: 1000,
            ptd,
        },
        save_weights: None,
        export_onnx: None,
        mllog: Some(dir.join("train.mllog")),
        peak_power: false,
        command_line: vec![format!("acceval grade ([train] {})", t.workload)],
    })
}
