//! Checks of the numbers a load run is given: every duration, rate, count and size is
//! checked against its allowed range before anything runs, and a bad one is rejected with
//! one message naming the setting, the value and the range (`timeout_s -1: seconds in
//! (0, 86400]`; the CLI shows `--timeout`, `grade` the profile key), instead of a panic deeper
//! in (`Duration::from_secs_f64(-1.0)`). `qps` and `llm` share them.

use std::fmt;
use std::time::Duration;

pub use crate::util::setting::Problem;

/// A setting of a load run (`qps`, `llm`), by the field of `QpsSettings` / `LlmSettings` /
/// `Tls` / `Inputs` that holds it. The library's messages show the field; the CLI shows the
/// flag, `grade` the profile key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Setting {
    Url,
    Slo,
    ErrorBudget,
    MaxRate,
    StartRate,
    /// The open-loop search's stopping share (`QpsSettings::precision`).
    Precision,
    Concurrency,
    StepDuration,
    /// Each QPS step's warm-up, seconds.
    WarmupS,
    Timeout,
    MaxConnections,
    MaxResponseBytes,
    MaxErrorBytes,
    /// LLM warm-up requests (`LlmSettings::warmup`).
    WarmupRequests,
    RequestCount,
    MaxOutputLen,
    /// Engine mode's static batch cap (`LlmSettings::max_batch_size`).
    MaxBatchSize,
    RequestRate,
    MaxEventBytes,
    SamplingParams,
    Tokenizer,
    /// A JSONL prompt file, a GSM8K file or an MMLU directory.
    Dataset,
    /// Accuracy mode (`LlmSettings::test_accuracy`).
    TestAccuracy,
    /// A MindIE synthetic_config.json.
    SyntheticConfig,
    /// A request body file (`Inputs::input_file`).
    InputFile,
    CaCert,
    Cert,
    Key,
    Crl,
}

impl Setting {
    /// The settings struct's field that holds it.
    pub fn field(self) -> &'static str {
        match self {
            Setting::Url => "url",
            Setting::Slo => "slo",
            Setting::ErrorBudget => "error_budget",
            Setting::MaxRate => "max_rate",
            Setting::StartRate => "start_rate",
            Setting::Precision => "precision",
            Setting::Concurrency => "concurrency",
            Setting::StepDuration => "step_duration_s",
            Setting::WarmupS => "warmup_s",
            Setting::Timeout => "timeout_s",
            Setting::MaxConnections => "max_connections",
            Setting::MaxResponseBytes => "max_response_bytes",
            Setting::MaxErrorBytes => "max_error_bytes",
            Setting::WarmupRequests => "warmup",
            Setting::RequestCount => "request_count",
            Setting::MaxOutputLen => "max_output_len",
            Setting::MaxBatchSize => "max_batch_size",
            Setting::RequestRate => "request_rate",
            Setting::MaxEventBytes => "max_event_bytes",
            Setting::SamplingParams => "sampling_params",
            Setting::Tokenizer => "tokenizer",
            Setting::Dataset => "dataset",
            Setting::TestAccuracy => "test_accuracy",
            Setting::SyntheticConfig => "synthetic_config",
            Setting::InputFile => "input_file",
            Setting::CaCert => "cacert",
            Setting::Cert => "cert",
            Setting::Key => "key",
            Setting::Crl => "crl",
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.field())
    }
}

/// A setting that cannot be used: which one, and what is wrong with its value.
pub type SettingsError = crate::util::setting::SettingError<Setting>;

/// Whether the lower end of a range is included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Low {
    /// `[lo, ...`
    Closed,
    /// `(lo, ...` (for a duration: must be positive)
    Open,
}

/// A real number in `lo..=hi` (or `(lo, hi]`), finite.
pub fn real(
    setting: Setting,
    v: f64,
    low: Low,
    lo: f64,
    hi: f64,
    what: &'static str,
) -> Result<f64, SettingsError> {
    let above = match low {
        Low::Closed => v >= lo,
        Low::Open => v > lo,
    };
    if v.is_finite() && above && v <= hi {
        return Ok(v);
    }
    let open = if low == Low::Open { '(' } else { '[' };
    Err(SettingsError::range(
        setting,
        number(v),
        what,
        format!("{open}{lo}, {hi}]"),
    ))
}

/// A number as a message shows it: `1e300` rather than 301 digits.
fn number(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(1e-6..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// A duration given in seconds.
pub fn seconds(setting: Setting, v: f64, low: Low, hi: f64) -> Result<Duration, SettingsError> {
    real(setting, v, low, 0.0, hi, "seconds").map(Duration::from_secs_f64)
}

/// A count in `lo..=hi`.
pub fn count(
    setting: Setting,
    v: usize,
    lo: usize,
    hi: usize,
    what: &'static str,
) -> Result<usize, SettingsError> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(SettingsError::range(
            setting,
            v,
            what,
            format!("[{lo}, {hi}]"),
        ))
    }
}

/// The longest any single duration setting may be: one day.
pub const MAX_SECONDS: f64 = 86_400.0;
/// The most connections (or requests in flight) a client opens.
pub const MAX_CONNECTIONS: usize = 100_000;
/// The largest response or line cap, bytes (4 GiB).
pub const MAX_CAP_BYTES: usize = 1 << 32;

/// A byte cap in [1 KiB, 4 GiB] (a smaller one would cut ordinary responses).
pub fn cap_bytes(setting: Setting, v: usize) -> Result<usize, SettingsError> {
    count(setting, v, 1024, MAX_CAP_BYTES, "bytes")
}

/// `url` without its trailing `/`, and `url + path` as a URI; http(s) only.
pub fn address(url: &str, path: &str) -> Result<(String, hyper::Uri), SettingsError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(SettingsError::bad(
            Setting::Url,
            url,
            "must start with http:// or https://",
        ));
    }
    let base = url.trim_end_matches('/').to_string();
    let text = format!("{base}{path}");
    let uri: hyper::Uri = text.parse().map_err(|_| {
        SettingsError::bad(
            Setting::Url,
            url,
            format!("does not make a valid address ({text})"),
        )
    })?;
    Ok((base, uri))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_numbers_name_the_setting_value_and_range() {
        for v in [-1.0, 0.0, f64::NAN, f64::INFINITY, 1e300] {
            let e = seconds(Setting::Timeout, v, Low::Open, MAX_SECONDS).unwrap_err();
            assert_eq!(e.setting, Setting::Timeout);
            assert!(matches!(e.problem, Problem::OutOfRange { .. }), "{e}");
            assert!(e.to_string().starts_with("timeout_s "), "{e}");
            assert!(e.to_string().ends_with("seconds in (0, 86400]"), "{e}");
        }
        assert_eq!(
            seconds(Setting::WarmupS, f64::NAN, Low::Closed, 10.0)
                .unwrap_err()
                .to_string(),
            "warmup_s NaN: seconds in [0, 10]"
        );
        assert_eq!(
            seconds(Setting::WarmupS, 0.0, Low::Closed, 10.0).unwrap(),
            Duration::ZERO
        );
        assert_eq!(
            seconds(Setting::Timeout, 1.5, Low::Open, 10.0).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            count(Setting::Concurrency, 0, 1, 1000, "requests in flight")
                .unwrap_err()
                .named("--concurrency"),
            "--concurrency 0: requests in flight in [1, 1000]"
        );
        assert!(cap_bytes(Setting::MaxEventBytes, 10).is_err());
    }
}
