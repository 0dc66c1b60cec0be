//! The serving stages of a grade: QPS against `acceval serve` on loopback (§7.2.5), and
//! the MindIE client mode against an LLM service, built from the profile's sections as
//! library settings (the same the `qps` and `llm` commands build from their flags). A
//! setting the library refuses is named here by the profile key that gave it
//! (`[qps] max_rate`), never by a flag the user did not type.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::Error;
use crate::backend::BackendSettings;
use crate::grade::profile::{LlmSection, QpsSection};
use crate::llm::{Dataset, LlmSettings};
use crate::load::{QpsSettings, Setting, SettingsError};
use crate::report::schema::llm::LlmReport;
use crate::report::schema::qps::{Arrival, LoadMode, QpsReport};
use crate::server::ServeSettings;
use crate::util::progress::Progress;

/// The profile key of a QPS setting; grade sets the others itself.
pub fn qps_key(s: Setting) -> String {
    match s {
        Setting::Slo
        | Setting::ErrorBudget
        | Setting::MaxRate
        | Setting::Precision
        | Setting::StepDuration
        | Setting::WarmupS => format!("[qps] {}", s.field()),
        other => format!("grade's own QPS setting {other}"),
    }
}

/// The profile key of an LLM setting (`llm_url` when grade was given a URL that overrides
/// `[llm] url`); grade sets the others itself.
pub fn llm_key(s: Setting, url_overridden: bool) -> String {
    match s {
        Setting::Url if url_overridden => "grade's llm_url (it overrides [llm] url)".into(),
        Setting::Url | Setting::Concurrency | Setting::SyntheticConfig => {
            format!("[llm] {}", s.field())
        }
        Setting::WarmupRequests => "[llm] warmup".into(),
        other => format!("grade's own LLM setting {other}"),
    }
}

/// A refused setting, named by `key`.
fn keyed(e: SettingsError, key: impl Fn(Setting) -> String) -> Error {
    Error::Setting {
        key: key(e.setting),
        problem: e.problem,
    }
}

/// A training error, its setting (if any) named by the `[train]` key.
pub fn train_error(e: crate::train::Error) -> Error {
    match e {
        crate::train::Error::Setting(s) => Error::Setting {
            key: match s.setting {
                crate::train::Setting::Workload => "[train] workload".into(),
                other => format!("grade's own training setting {other}"),
            },
            problem: s.problem,
        },
        e => e.into(),
    }
}

/// Serves `model` on 127.0.0.1 (a free port) on the grade's backend and searches its max
/// QPS open loop, as `acceval serve` + `acceval qps` would. The profile's settings are
/// checked before the model is loaded.
pub fn qps(
    model: &str,
    q: &QpsSection,
    b: &BackendSettings,
    progress: &Progress,
    stop: &Arc<AtomicBool>,
) -> Result<QpsReport, Error> {
    let settings = |url: &str, name: &str| {
        let mut s = QpsSettings::new(url, name);
        s.slo = q.slo.clone();
        s.error_budget = q.error_budget;
        s.mode = LoadMode::Open;
        s.distribution = Arrival::Poisson;
        s.max_rate = q.max_rate;
        s.precision = q.precision;
        s.step_duration_s = q.step_duration_s;
        s.warmup_s = q.warmup_s;
        s.inputs.binary = q.binary;
        s.plan().map_err(|e| keyed(e, qps_key))
    };
    settings("http://127.0.0.1:1", "model")?;
    let serve = ServeSettings {
        batch_timeout_us: 0,
        max_inflight: 4096,
        max_body_mb: 256.0,
        ..ServeSettings::new(PathBuf::from(model), b.clone())
    };
    let cfg = crate::server::config(&serve)?;
    let name = cfg.name.clone();
    let running = crate::server::start(cfg, "127.0.0.1", 0)?;
    let plan = settings(&format!("http://{}", running.addr), &name)?;
    let report = crate::load::qps::measure(&plan, progress, stop);
    running.stop()?;
    Ok(report?)
}

/// `acceval llm` against `url` with the profile's settings; `url_overridden` when `url` is
/// grade's own rather than the profile's.
pub fn llm(
    l: &LlmSection,
    url: String,
    url_overridden: bool,
    synthetic_config: PathBuf,
    progress: &Progress,
    stop: &Arc<AtomicBool>,
) -> Result<LlmReport, Error> {
    let mut s = LlmSettings::new(&url, &l.model);
    s.api = l.api;
    s.dataset = Dataset::Synthetic(Some(synthetic_config));
    s.concurrency = l.concurrency;
    s.warmup = l.warmup;
    let plan = s.plan().map_err(|e| match e {
        crate::llm::Error::Setting(e) => keyed(e, |k| llm_key(k, url_overridden)),
        e => e.into(),
    })?;
    Ok(crate::llm::measure(&plan, progress, stop)?)
}

/// The settings of a profile's `[train]` stage (telemetry at 1 s, events beside the report).
pub fn train_settings(
    t: &crate::report::schema::profile::TrainSection,
    dir: &std::path::Path,
    ptd: Option<String>,
) -> crate::train::TrainSettings {
    use crate::train::{Source, TrainSettings, workload::WorkloadOptions};
    TrainSettings {
        source: Source::Builtin(t.workload.clone()),
        epochs: t.epochs,
        batch: t.batch,
        lr: None,
        seed: t.seed,
        precision: "fp32".into(),
        target: t.target.clone(),
        repeat: 1,
        engine: crate::train::engine::Engine::Candle,
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
        submission: crate::train::Submission {
            org: t.submission_org.clone(),
            platform: t.submission_platform.clone(),
            division: t.submission_division,
        },
        peak_power: false,
        command_line: vec![format!("acceval grade ([train] {})", t.workload)],
        data_parallel: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_settings_are_named_by_their_profile_key() {
        let mut s = QpsSettings::new("http://127.0.0.1:1", "m");
        s.max_rate = 5e7;
        let e = keyed(s.plan().unwrap_err(), qps_key);
        assert_eq!(
            e.to_string(),
            "[qps] max_rate 50000000: req/s in (0, 10000000]"
        );
        s.max_rate = 100.0;
        s.warmup_s = 1e6;
        assert!(
            keyed(s.plan().unwrap_err(), qps_key)
                .to_string()
                .starts_with("[qps] warmup_s 1000000: seconds")
        );
        assert_eq!(llm_key(Setting::WarmupRequests, false), "[llm] warmup");
        assert_eq!(llm_key(Setting::Url, false), "[llm] url");
        assert!(llm_key(Setting::Url, true).contains("llm_url"));
        assert!(qps_key(Setting::Timeout).starts_with("grade's own"));
    }
}
