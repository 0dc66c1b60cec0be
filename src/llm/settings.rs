//! What an LLM serving benchmark is asked to do ([`LlmSettings`], filled by the CLI from its
//! flags or by `grade` from a profile, every default defined here once), and the checked,
//! resolved form it runs from ([`LlmPlan`]: ranges checked, dataset read, tokenizer loaded,
//! request bodies built).

use std::path::PathBuf;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{Map, Value};

use super::Error;
use super::accuracy;
use super::dataset::{self, Prompt, SyntheticConfig};
use crate::load::client::Tls;
use crate::load::settings::{self, Low, MAX_CONNECTIONS, MAX_SECONDS, Setting, SettingsError};
use crate::report::schema::llm::{Api, GoodputMetric, TokenSource};
use crate::report::schema::qps::Arrival;

/// `max_output_len` (for JSONL prompts without max_tokens).
pub const DEFAULT_MAX_OUTPUT_LEN: u64 = 256;
/// `concurrency`.
pub const DEFAULT_CONCURRENCY: usize = 1;
/// `seed`.
pub const DEFAULT_SEED: u64 = 1;
/// `warmup`, requests (MindIE's WarmupSize default).
pub const DEFAULT_WARMUP: usize = 10;
/// `timeout_s`, s.
pub const DEFAULT_TIMEOUT_S: f64 = 600.0;
/// `max_connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1000;
/// `max_event_bytes`: one SSE line or event, or one whole non-streamed response (1 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;
/// `max_error_bytes`: an error body kept for its message (64 KiB).
pub const DEFAULT_MAX_ERROR_BYTES: usize = 64 << 10;
/// MindIE's largest `--Concurrency` and `--WarmupSize`.
pub const MAX_CONCURRENCY: usize = 1000;
/// MindIE's largest `--RequestRate`, req/s.
pub const MAX_REQUEST_RATE: f64 = 10_000.0;

/// Where the prompts come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Dataset {
    /// MindIE's synthetic data from a synthetic_config.json, or (`None`) from MindIE's sample.
    Synthetic(Option<PathBuf>),
    /// A JSONL file of `{"prompt", "max_tokens"}`.
    Jsonl(PathBuf),
    /// GSM8K: a JSONL file of `{"question", "answer"}` (see `llm::accuracy`).
    Gsm8k(PathBuf),
    /// MMLU: a directory of `test/*_test.csv` and `dev/*_dev.csv` (5-shot).
    Mmlu(PathBuf),
}

impl Dataset {
    /// The dataset's kind, as `--dataset-type` names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Dataset::Synthetic(_) => "synthetic",
            Dataset::Jsonl(_) => "jsonl",
            Dataset::Gsm8k(_) => "gsm8k",
            Dataset::Mmlu(_) => "mmlu",
        }
    }
}

/// An in-process LLM engine (MindIE's engine mode): candle's quantized llama family, from a
/// GGUF file, on the CPU or (`cuda`: its ordinal) an NVIDIA GPU. Spelled as training's
/// `--backend`: `candle` (or `candle:cpu`), `candle:cuda`, `candle:cuda@N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Engine {
    pub cuda: Option<usize>,
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cuda {
            None => f.write_str("candle:cpu"),
            Some(n) => write!(f, "candle:cuda@{n}"),
        }
    }
}

impl std::str::FromStr for Engine {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let cuda = match s {
            "candle" | "candle:cpu" => None,
            "candle:cuda" => Some(0),
            _ => match s.strip_prefix("candle:cuda@").map(str::parse::<usize>) {
                Some(Ok(n)) => Some(n),
                _ => {
                    return Err(format!(
                        "'{s}': engine mode runs on candle: candle (the CPU), candle:cuda or candle:cuda@N (an NVIDIA GPU, with the candle-cuda feature)"
                    ));
                }
            },
        };
        Ok(Engine { cuda })
    }
}

/// An LLM serving benchmark as a caller gives it (unchecked).
#[derive(Debug, Clone, PartialEq)]
pub struct LlmSettings {
    /// The server (client mode; unused in engine mode).
    pub url: String,
    /// The model name the server knows (client mode), or the GGUF file (engine mode).
    pub model: String,
    /// Engine mode: run the model in-process on this engine instead of calling a server.
    pub engine: Option<Engine>,
    pub api: Api,
    pub stream: bool,
    pub dataset: Dataset,
    /// Requests per run [default: the dataset's size].
    pub request_count: Option<usize>,
    /// A Hugging Face tokenizer.json for token counts without the server's usage.
    pub tokenizer: Option<PathBuf>,
    pub max_output_len: u64,
    /// Accuracy mode: score each answer (GSM8K and MMLU datasets only).
    pub test_accuracy: bool,
    pub concurrency: usize,
    /// Engine mode: requests per static batch at most (1: no batching).
    pub max_batch_size: usize,
    /// Open-loop rates, one run each; empty = one closed-loop run at `concurrency`.
    pub request_rate: Vec<f64>,
    pub distribution: Arrival,
    pub seed: u64,
    pub warmup: usize,
    /// Sampling parameters passed through, a JSON object.
    pub sampling_params: Option<String>,
    /// Goodput bounds, e.g. `ttft<=500ms,tpot<=50ms`.
    pub slo: Option<String>,
    pub timeout_s: f64,
    pub max_connections: usize,
    pub max_event_bytes: usize,
    pub max_error_bytes: usize,
    pub tls: Tls,
}

impl LlmSettings {
    /// The defaults, for `model` at `url` (OpenAI completions, streaming, MindIE's sample
    /// synthetic data).
    pub fn new(url: &str, model: &str) -> LlmSettings {
        LlmSettings {
            url: url.to_string(),
            model: model.to_string(),
            engine: None,
            api: Api::Openai,
            stream: true,
            dataset: Dataset::Synthetic(None),
            request_count: None,
            tokenizer: None,
            max_output_len: DEFAULT_MAX_OUTPUT_LEN,
            test_accuracy: false,
            concurrency: DEFAULT_CONCURRENCY,
            max_batch_size: 1,
            request_rate: Vec::new(),
            distribution: Arrival::Poisson,
            seed: DEFAULT_SEED,
            warmup: DEFAULT_WARMUP,
            sampling_params: None,
            slo: None,
            timeout_s: DEFAULT_TIMEOUT_S,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_error_bytes: DEFAULT_MAX_ERROR_BYTES,
            tls: Tls::default(),
        }
    }

    /// Checks the numbers, the bounds and the address (no file is read).
    pub fn check(&self) -> Result<Checked, SettingsError> {
        let count = settings::count;
        count(
            Setting::Concurrency,
            self.concurrency,
            1,
            MAX_CONCURRENCY,
            "requests in flight",
        )?;
        count(
            Setting::MaxBatchSize,
            self.max_batch_size,
            1,
            MAX_CONCURRENCY,
            "requests per batch",
        )?;
        if self.engine.is_none() && self.max_batch_size != 1 {
            return Err(SettingsError::says(
                Setting::MaxBatchSize,
                "is engine mode's (--engine): a server forms its own batches".to_string(),
            ));
        }
        count(
            Setting::WarmupRequests,
            self.warmup,
            0,
            MAX_CONCURRENCY,
            "requests",
        )?;
        if let Some(n) = self.request_count {
            count(
                Setting::RequestCount,
                n,
                1,
                dataset::MAX_LEN as usize,
                "requests",
            )?;
        }
        count(
            Setting::MaxOutputLen,
            self.max_output_len as usize,
            1,
            dataset::MAX_LEN as usize,
            "tokens",
        )?;
        for &r in &self.request_rate {
            settings::real(
                Setting::RequestRate,
                r,
                Low::Open,
                0.0,
                MAX_REQUEST_RATE,
                "req/s",
            )?;
        }
        count(
            Setting::MaxConnections,
            self.max_connections,
            1,
            MAX_CONNECTIONS,
            "connections",
        )?;
        if self.test_accuracy && !matches!(self.dataset, Dataset::Gsm8k(_) | Dataset::Mmlu(_)) {
            return Err(SettingsError::says(
                Setting::TestAccuracy,
                format!(
                    "scores GSM8K and MMLU datasets only, not {} prompts (their answers are unknown)",
                    self.dataset.kind()
                ),
            ));
        }
        let (base, uri) = match self.engine {
            None => settings::address(&self.url, &self.api.path(&self.model, self.stream))?,
            Some(_) => {
                if self.tokenizer.is_none() {
                    return Err(SettingsError::says(
                        Setting::Tokenizer,
                        "is needed in engine mode: the model's tokenizer.json encodes the prompts and decodes the tokens",
                    ));
                }
                (format!("engine: {}", self.model), hyper::Uri::default())
            }
        };
        Ok(Checked {
            base,
            uri,
            timeout: settings::seconds(Setting::Timeout, self.timeout_s, Low::Open, MAX_SECONDS)?,
            max_event_bytes: settings::cap_bytes(Setting::MaxEventBytes, self.max_event_bytes)?,
            max_error_bytes: settings::cap_bytes(Setting::MaxErrorBytes, self.max_error_bytes)?,
            sampling: sampling(self.sampling_params.as_deref())?,
            slo: self
                .slo
                .as_deref()
                .map(parse_slo)
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// Checks everything, reads the dataset and the tokenizer, and builds the requests.
    pub fn plan(&self) -> Result<LlmPlan, Error> {
        let checked = self.check()?;
        let mut answers = Vec::new();
        let (prompts, data_source, synthetic) = match &self.dataset {
            Dataset::Synthetic(Some(p)) => {
                let c = dataset::read_synthetic(p)?;
                let prompts = dataset::synthetic_prompts(&c, self.seed);
                (
                    prompts,
                    format!("synthetic: {}", p.display()),
                    Some((c, false)),
                )
            }
            Dataset::Synthetic(None) => {
                let c = dataset::default_synthetic();
                let prompts = dataset::synthetic_prompts(&c, self.seed);
                let source =
                    "synthetic: the default configuration (MindIE's sample synthetic_config.json)";
                (prompts, source.to_string(), Some((c, true)))
            }
            Dataset::Jsonl(p) => (
                dataset::jsonl(p, self.max_output_len)?,
                p.display().to_string(),
                None,
            ),
            Dataset::Gsm8k(p) | Dataset::Mmlu(p) => {
                let items = if let Dataset::Gsm8k(_) = self.dataset {
                    accuracy::gsm8k(p, self.max_output_len)?
                } else {
                    accuracy::mmlu(p, self.max_output_len)?
                };
                let (prompts, right): (Vec<Prompt>, Vec<accuracy::Answer>) =
                    items.into_iter().map(|i| (i.prompt, i.answer)).unzip();
                answers = right;
                (
                    prompts,
                    format!("{}: {}", self.dataset.kind(), p.display()),
                    None,
                )
            }
        };
        let answers = if self.test_accuracy {
            answers
        } else {
            Vec::new()
        };
        let tokenizer = self.tokenizer.as_ref().map(load_tokenizer).transpose()?;
        let input_tokens = prompts
            .iter()
            .map(|p| {
                let counted = tokenizer
                    .as_ref()
                    .and_then(|t| t.encode(p.text.as_str(), true).ok())
                    .map(|e| (e.len() as u64, TokenSource::Tokenizer));
                counted.or(p
                    .requested_input_tokens
                    .map(|n| (n, TokenSource::Requested)))
            })
            .collect();
        let bodies = prompts
            .iter()
            .map(|p| self.body(p, &checked.sampling))
            .collect::<Result<Vec<Bytes>, Error>>()?;
        let total = self.request_count.unwrap_or(prompts.len());
        Ok(LlmPlan {
            settings: self.clone(),
            checked,
            bodies,
            input_tokens,
            max_tokens: prompts.iter().map(|p| p.max_tokens).collect(),
            prompts: prompts.into_iter().map(|p| p.text).collect(),
            answers,
            total,
            data_source,
            synthetic: synthetic.as_ref().map(|(c, _)| c.clone()),
            default_synthetic: synthetic.is_some_and(|(_, d)| d),
            tokenizer,
        })
    }

    fn body(&self, p: &Prompt, sampling: &Map<String, Value>) -> Result<Bytes, Error> {
        let v = self
            .api
            .body(&self.model, &p.text, p.max_tokens, self.stream, sampling);
        Ok(Bytes::from(serde_json::to_vec(&v).map_err(Error::Body)?))
    }
}

fn load_tokenizer(p: &PathBuf) -> Result<tokenizers::Tokenizer, Error> {
    tokenizers::Tokenizer::from_file(p).map_err(|e| {
        SettingsError::bad(
            Setting::Tokenizer,
            p.display(),
            format!("not a Hugging Face tokenizer.json: {e}"),
        )
        .into()
    })
}

/// The sampling parameters: a JSON object.
fn sampling(s: Option<&str>) -> Result<Map<String, Value>, SettingsError> {
    match s {
        None => Ok(Map::new()),
        Some(s) => serde_json::from_str::<Value>(s)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .ok_or_else(|| {
                SettingsError::says(
                    Setting::SamplingParams,
                    "must be a JSON object, e.g. '{\"temperature\": 0.0}'",
                )
            }),
    }
}

/// Parses goodput bounds `ttft<=500ms,tpot<=50ms,e2el<=10s`.
pub fn parse_slo(s: &str) -> Result<Vec<(GoodputMetric, f64)>, SettingsError> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = |m: String| SettingsError::bad(Setting::Slo, part, m);
        let (k, v) = part.split_once("<=").ok_or_else(|| {
            bad("write METRIC<=TIME with METRIC ttft, tpot or e2el, e.g. ttft<=500ms".into())
        })?;
        let metric = match k.trim().to_ascii_lowercase().as_str() {
            "ttft" => GoodputMetric::Ttft,
            "tpot" => GoodputMetric::Tpot,
            "e2el" => GoodputMetric::E2el,
            other => {
                return Err(bad(format!(
                    "unknown metric '{other}'; use ttft, tpot or e2el"
                )));
            }
        };
        out.push((metric, crate::load::slo::time_ms(part, v)?));
    }
    Ok(out)
}

/// The settings that are checked without reading a file.
#[derive(Debug, Clone)]
pub struct Checked {
    pub base: String,
    pub uri: hyper::Uri,
    pub timeout: Duration,
    pub max_event_bytes: usize,
    pub max_error_bytes: usize,
    pub sampling: Map<String, Value>,
    pub slo: Vec<(GoodputMetric, f64)>,
}

/// A checked benchmark, ready to run.
pub struct LlmPlan {
    pub settings: LlmSettings,
    pub checked: Checked,
    /// One request body per prompt.
    pub bodies: Vec<Bytes>,
    /// Each prompt's input tokens: the tokenizer's count, else the synthetic length asked
    /// for, with which of the two it is.
    pub input_tokens: Vec<Option<(u64, TokenSource)>>,
    /// Each prompt's text (for the Tokenizer timing and engine mode).
    pub prompts: Vec<String>,
    /// Each prompt's max_tokens (engine mode).
    pub max_tokens: Vec<u64>,
    /// Each prompt's right answer (accuracy mode; empty otherwise).
    pub answers: Vec<accuracy::Answer>,
    /// Requests per run (prompts are reused in turn).
    pub total: usize,
    pub data_source: String,
    pub synthetic: Option<SyntheticConfig>,
    /// The synthetic data is MindIE's sample configuration (no dataset was given).
    pub default_synthetic: bool,
    pub tokenizer: Option<tokenizers::Tokenizer>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_reject_bad_numbers_naming_the_setting() {
        let ok = LlmSettings::new("http://127.0.0.1:1", "m");
        assert!(ok.check().is_ok());
        type Case = (fn(&mut LlmSettings), Setting, &'static str);
        let cases: &[Case] = &[
            (
                |s| s.timeout_s = -1.0,
                Setting::Timeout,
                "timeout_s -1: seconds in (0, 86400]",
            ),
            (
                |s| s.timeout_s = f64::INFINITY,
                Setting::Timeout,
                "timeout_s inf: seconds in (0, 86400]",
            ),
            (
                |s| s.timeout_s = f64::NAN,
                Setting::Timeout,
                "timeout_s NaN: seconds in (0, 86400]",
            ),
            (
                |s| s.timeout_s = 1e300,
                Setting::Timeout,
                "timeout_s 1e300: seconds in (0, 86400]",
            ),
            (
                |s| s.concurrency = 0,
                Setting::Concurrency,
                "concurrency 0: requests in flight in [1, 1000]",
            ),
            (
                |s| s.concurrency = 1001,
                Setting::Concurrency,
                "concurrency 1001",
            ),
            (
                |s| s.warmup = 5000,
                Setting::WarmupRequests,
                "warmup 5000: requests in [0, 1000]",
            ),
            (
                |s| s.request_count = Some(0),
                Setting::RequestCount,
                "request_count 0: requests in [1, 1048576]",
            ),
            (
                |s| s.max_output_len = 0,
                Setting::MaxOutputLen,
                "max_output_len 0",
            ),
            (
                |s| s.request_rate = vec![2.0, f64::NAN],
                Setting::RequestRate,
                "request_rate NaN: req/s in (0, 10000]",
            ),
            (
                |s| s.request_rate = vec![-1.0],
                Setting::RequestRate,
                "request_rate -1",
            ),
            (
                |s| s.max_event_bytes = 0,
                Setting::MaxEventBytes,
                "max_event_bytes 0: bytes in [1024, 4294967296]",
            ),
            (
                |s| s.max_error_bytes = usize::MAX,
                Setting::MaxErrorBytes,
                "max_error_bytes",
            ),
            (
                |s| s.max_connections = 0,
                Setting::MaxConnections,
                "max_connections 0",
            ),
            (
                |s| s.sampling_params = Some("[1]".into()),
                Setting::SamplingParams,
                "sampling_params must be a JSON object",
            ),
            (
                |s| s.slo = Some("ttfb<=1s".into()),
                Setting::Slo,
                "slo 'ttfb<=1s': unknown metric 'ttfb'",
            ),
            (
                |s| s.url = "localhost:8000".into(),
                Setting::Url,
                "url 'localhost:8000': must start with http:// or https://",
            ),
        ];
        for (change, setting, want) in cases {
            let mut s = ok.clone();
            change(&mut s);
            let e = s.check().unwrap_err();
            assert_eq!(e.setting, *setting, "{e}");
            let text = e.to_string();
            assert!(text.starts_with(want), "{text} does not start with {want}");
            assert!(
                !text.contains("--"),
                "a library message names a flag: {text}"
            );
        }
        assert_eq!(
            parse_slo("ttft<=500ms, tpot<=50ms,e2el<=10s").unwrap(),
            vec![
                (GoodputMetric::Ttft, 500.0),
                (GoodputMetric::Tpot, 50.0),
                (GoodputMetric::E2el, 10_000.0)
            ]
        );
    }
}
