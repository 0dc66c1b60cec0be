//! The serving stages of a grade: QPS against `acceval serve` on loopback (§7.2.5), and
//! the MindIE client mode against an LLM service.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::backend::BackendSettings;
use crate::grade::profile::{LlmSection, QpsSection};
use crate::server::ServeSettings;

/// Serves `model` on 127.0.0.1 (a free port) on the grade's backend and searches its max
/// QPS open loop, as `acceval serve` + `acceval qps` would.
pub fn qps(
    model: &str,
    q: &QpsSection,
    b: &BackendSettings,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<crate::load::qps::QpsReport> {
    let serve = ServeSettings {
        batch_timeout_us: 0,
        max_inflight: 4096,
        max_body_mb: 256.0,
        ..ServeSettings::new(PathBuf::from(model), b.clone())
    };
    let cfg = crate::server::config(&serve)?;
    let name = cfg.name.clone();
    let running = crate::server::start(cfg, "127.0.0.1", 0)?;
    let args = crate::cli::QpsArgs {
        url: format!("http://{}", running.addr),
        model: name,
        slo: q.slo.clone(),
        error_budget: q.error_budget,
        mode: crate::cli::LoadMode::Open,
        distribution: crate::cli::Arrival::Poisson,
        seed: 1,
        start_rate: None,
        max_rate: q.max_rate,
        precision: q.precision,
        concurrency: vec![1],
        step_duration: q.step_duration_s,
        warmup: q.warmup_s,
        timeout: 10.0,
        binary: q.binary,
        input_file: None,
        shapes: Vec::new(),
        max_connections: 1000,
        cacert: None,
        cert: None,
        key: None,
        crl: Vec::new(),
        out: None,
        json: false,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (plan, client) = crate::load::qps::plan(&args, &rt)?;
    let report = rt.block_on(crate::load::qps::measure(&plan, &client, stop));
    drop(client);
    drop(rt);
    running.stop()?;
    Ok(report)
}

/// `acceval llm` against `url` with the profile's settings.
pub fn llm(
    l: &LlmSection,
    url: String,
    synthetic_config: PathBuf,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<crate::llm::run::LlmReport> {
    use clap::ValueEnum;
    let api = crate::protocol::generate::Api::from_str(&l.api, false)
        .map_err(|e| anyhow::anyhow!("[llm] api: {e}"))?;
    let a = crate::cli::LlmArgs {
        url,
        model: l.model.clone(),
        api,
        no_stream: false,
        dataset: "synthetic".into(),
        synthetic_config: Some(synthetic_config),
        request_count: None,
        tokenizer: None,
        max_output_len: 256,
        concurrency: l.concurrency,
        request_rate: Vec::new(),
        distribution: crate::cli::Arrival::Poisson,
        seed: 1,
        warmup: l.warmup,
        sampling_params: None,
        slo: None,
        timeout: 600.0,
        max_connections: 1000,
        cacert: None,
        cert: None,
        key: None,
        crl: Vec::new(),
        out: None,
        json: false,
    };
    crate::llm::run::measure(&a, stop)
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
        target: t
            .target
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e: String| anyhow::anyhow!("[train] target: {e}"))?,
        repeat: 1,
        device: "cpu".into(),
        warmup_steps: 1,
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
    })
}
