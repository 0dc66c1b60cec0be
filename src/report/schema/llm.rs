//! The result of `acceval llm`, MindIE Benchmark's client mode (SPEC.md §7): per run (one
//! concurrency or one request rate) MindIE's figures (Throughput, GenerateSpeed, lpct, ...)
//! and its statistics of every metric, with the per-request records they come from; and the
//! synthetic-data configuration in MindIE's `synthetic_config.json` format.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::qps::{Arrival, FailureKind};

/// The schema tag of [`LlmReport`].
pub const SCHEMA: &str = "acceval.llm/1";

/// The serving API (`--api`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// OpenAI-compatible `/v1/completions`.
    Openai,
    /// OpenAI-compatible `/v1/chat/completions`.
    OpenaiChat,
    /// Hugging Face TGI `/generate_stream` (`/generate` with --no-stream).
    Tgi,
    /// Triton's generate extension `/v2/models/{m}/generate_stream` (`generate`).
    Triton,
    /// vLLM's OpenAI server `/v1/completions`, with `ignore_eos` so outputs reach their length.
    Vllm,
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Api::Openai => "openai",
            Api::OpenaiChat => "openai-chat",
            Api::Tgi => "tgi",
            Api::Triton => "triton",
            Api::Vllm => "vllm",
        })
    }
}

/// MindIE's statistics of one metric.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[allow(non_snake_case)]
pub struct MindieStat {
    pub average: f64,
    pub max: f64,
    pub min: f64,
    pub P75: f64,
    pub P90: f64,
    /// P90 of the per-request means (NaN, written null, without any).
    #[serde(with = "nan_as_null")]
    #[schemars(with = "Option<f64>")]
    pub SLO_P90: f64,
    pub P99: f64,
    pub N: usize,
}

/// serde_json writes NaN as null; this reads it back.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*v)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// Where a request's input or generated token count comes from.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TokenSource {
    /// The server's OpenAI `usage`.
    Usage,
    /// TGI's `details`.
    Details,
    /// The client's tokenizer (`--tokenizer`) over the generated text.
    Tokenizer,
    /// The count of token-bearing events.
    Events,
    /// The in-process engine's own count (engine mode).
    Engine,
    /// The length the synthetic data asked for (input tokens only): not a measurement.
    Requested,
    /// No count.
    #[default]
    None,
}

impl fmt::Display for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenSource::Usage => "usage",
            TokenSource::Details => "details",
            TokenSource::Tokenizer => "tokenizer",
            TokenSource::Events => "events",
            TokenSource::Engine => "engine",
            TokenSource::Requested => "requested",
            TokenSource::None => "none",
        })
    }
}

/// The per-request figure a goodput bound applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GoodputMetric {
    /// FirstTokenTime.
    Ttft,
    /// (GenerateTime − FirstTokenTime) / (GeneratedTokens − 1).
    Tpot,
    /// GenerateTime.
    E2el,
}

impl fmt::Display for GoodputMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GoodputMetric::Ttft => "ttft",
            GoodputMetric::Tpot => "tpot",
            GoodputMetric::E2el => "e2el",
        })
    }
}

/// A length distribution of MindIE's synthetic data: `{"Method": ..., "Params": {...}}`,
/// every draw clipped to [MinValue, MaxValue].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "Method", content = "Params", rename_all = "lowercase")]
pub enum LengthDist {
    Uniform {
        #[serde(rename = "MinValue")]
        min: u64,
        #[serde(rename = "MaxValue")]
        max: u64,
    },
    Gaussian {
        #[serde(rename = "Mean")]
        mean: f64,
        #[serde(rename = "Var")]
        var: f64,
        #[serde(rename = "MinValue")]
        min: u64,
        #[serde(rename = "MaxValue")]
        max: u64,
    },
    Zipf {
        #[serde(rename = "Alpha")]
        alpha: f64,
        #[serde(rename = "MinValue")]
        min: u64,
        #[serde(rename = "MaxValue")]
        max: u64,
    },
}

/// MindIE's `synthetic_config.json`: input and output token lengths, and how many requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SyntheticConfig {
    #[serde(rename = "Input")]
    pub input: LengthDist,
    #[serde(rename = "Output")]
    pub output: LengthDist,
    #[serde(rename = "RequestCount")]
    pub request_count: u64,
}

/// One request's measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Record {
    pub index: usize,
    pub ok: bool,
    /// `kind: message` of a failed request.
    pub error: Option<String>,
    /// The kind of the failure.
    #[serde(default)]
    pub failure: Option<FailureKind>,
    /// When it was sent, s after the run started.
    pub sent_s: f64,
    /// Its actual send time minus its scheduled one (open loop), ms.
    #[serde(default)]
    pub send_lag_ms: f64,
    pub first_token_ms: Option<f64>,
    pub decode_ms: Vec<f64>,
    pub generate_ms: f64,
    pub input_tokens: Option<u64>,
    /// Where `input_tokens` comes from.
    #[serde(default)]
    pub input_token_source: TokenSource,
    pub generated_tokens: Option<u64>,
    pub token_source: TokenSource,
    pub generated_characters: u64,
    /// Token-bearing events received.
    pub token_events: u64,
    /// The client tokenizer's encoding of the prompt, ms (with a tokenizer).
    #[serde(default)]
    pub tokenizer_ms: Option<f64>,
    /// The client tokenizer's decoding of the generated token ids to text, ms.
    #[serde(default)]
    pub detokenizer_ms: Option<f64>,
    /// The server's prefill batch size for this request, when it reports one.
    #[serde(default)]
    pub prefill_batch_size: Option<f64>,
    /// The server's decode batch size at each later token, when it reports them.
    #[serde(default)]
    pub decode_batch_sizes: Vec<f64>,
    /// The server's queue wait times reported with this request's events, μs.
    #[serde(default)]
    pub queue_wait_us: Vec<f64>,
    /// Engine mode: each token's model forward (input tensor built, forward run), ms.
    #[serde(default)]
    pub forward_ms: Vec<f64>,
    /// Engine mode: each token's post-processing (sampling from the logits and decoding the
    /// token to text), ms.
    #[serde(default)]
    pub post_processing_ms: Vec<f64>,
    /// Accuracy mode: the answer read from the output (normalised; None when none is found).
    #[serde(default)]
    pub answer: Option<String>,
    /// Accuracy mode: whether `answer` is right (None for a failed request, which counts as
    /// wrong).
    #[serde(default)]
    pub correct: Option<bool>,
}

/// Accuracy mode's result (MindIE's `accuracy` of result_common.csv).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AccuracyResult {
    /// `gsm8k` or `mmlu`.
    pub dataset: String,
    /// Requests answered right.
    pub correct: usize,
    /// Requests scored; a failed request counts as wrong.
    pub n: usize,
    /// correct / n.
    pub accuracy: f64,
    /// How an answer is read and compared.
    pub rule: String,
}

impl Record {
    /// A request sent at `sent_s` (s after the run started), `send_lag_ms` after its schedule,
    /// with nothing yet measured of it: not ok, no tokens, no times.
    pub fn new(index: usize, sent_s: f64, send_lag_ms: f64) -> Self {
        Self {
            index,
            ok: false,
            error: None,
            failure: None,
            sent_s,
            send_lag_ms,
            first_token_ms: None,
            decode_ms: Vec::new(),
            generate_ms: 0.0,
            input_tokens: None,
            input_token_source: TokenSource::None,
            generated_tokens: None,
            token_source: TokenSource::None,
            generated_characters: 0,
            token_events: 0,
            tokenizer_ms: None,
            detokenizer_ms: None,
            prefill_batch_size: None,
            decode_batch_sizes: Vec::new(),
            queue_wait_us: Vec::new(),
            forward_ms: Vec::new(),
            post_processing_ms: Vec::new(),
            answer: None,
            correct: None,
        }
    }

    /// TPOT = (GenerateTime − FirstTokenTime) / (GeneratedTokens − 1), for more than one token.
    pub fn tpot_ms(&self) -> Option<f64> {
        let (f, n) = (self.first_token_ms?, self.generated_tokens?);
        (n > 1).then(|| (self.generate_ms - f) / (n - 1) as f64)
    }
    /// GeneratedTokenSpeed = GeneratedTokens / GenerateTime, token/s.
    pub fn speed(&self) -> Option<f64> {
        Some(self.generated_tokens? as f64 / (self.generate_ms / 1e3))
    }
    /// The figure a goodput bound applies to.
    pub fn goodput_value(&self, m: GoodputMetric) -> Option<f64> {
        match m {
            GoodputMetric::Ttft => self.first_token_ms,
            GoodputMetric::Tpot => self.tpot_ms(),
            GoodputMetric::E2el => Some(self.generate_ms),
        }
    }
}

/// One run (one concurrency, or one request rate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LlmRun {
    pub current_time: String,
    pub concurrency: usize,
    pub request_rate: Option<f64>,
    pub distribution: Option<Arrival>,
    pub time_elapsed_s: f64,
    pub total: usize,
    /// Requests that came back with a response (complete or not).
    pub returned: usize,
    pub failed: usize,
    pub failures: BTreeMap<FailureKind, u64>,
    /// Successful requests / TimeElapsed, req/s.
    pub throughput: f64,
    /// Generated tokens of successful requests / TimeElapsed, token/s.
    pub generate_speed: Option<f64>,
    pub generate_speed_per_client: Option<f64>,
    /// Σ FirstTokenTime / Σ InputTokens over the requests whose input tokens were counted
    /// (server usage or tokenizer; never the requested synthetic length), ms per token.
    pub lpct: Option<f64>,
    /// Requests meeting every --slo bound / TimeElapsed, req/s.
    pub goodput: Option<f64>,
    /// Where the generated-token counts of successful requests come from (requests each).
    pub token_sources: BTreeMap<TokenSource, u64>,
    /// Where the input-token counts of successful requests come from (requests each).
    #[serde(default)]
    pub input_token_sources: BTreeMap<TokenSource, u64>,
    /// MindIE's metrics by name (FirstTokenTime, DecodeTime, ...; see [`DEFINITIONS`]).
    pub metrics: BTreeMap<String, Option<MindieStat>>,
    pub characters_per_token: Option<f64>,
    /// Accuracy mode's score (None in a performance run).
    #[serde(default)]
    pub accuracy: Option<AccuracyResult>,
    pub complete: bool,
    pub records: Vec<Record>,
}

/// The result of `acceval llm`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LlmReport {
    /// `acceval.llm/1`.
    pub schema: String,
    pub url: String,
    pub model: String,
    pub api: Api,
    pub stream: bool,
    /// Engine mode: the in-process engine and how it runs (None in client mode).
    #[serde(default)]
    pub engine: Option<String>,
    pub data_source: String,
    /// The synthetic configuration the prompts were drawn from (synthetic data only).
    #[serde(default)]
    pub synthetic_config: Option<SyntheticConfig>,
    pub warmup: usize,
    /// Goodput bounds, ms.
    pub slo: Vec<(GoodputMetric, f64)>,
    pub runs: Vec<LlmRun>,
    pub definitions: BTreeMap<String, String>,
}

/// The metrics of a run, in MindIE's order, with their units.
pub const METRICS: &[(&str, &str)] = &[
    ("FirstTokenTime", "ms"),
    ("DecodeTime", "ms"),
    ("LastDecodeTime", "ms"),
    ("MaxDecodeTime", "ms"),
    ("GenerateTime", "ms"),
    ("TPOT", "ms"),
    ("InputTokens", "token"),
    ("GeneratedTokens", "token"),
    ("GeneratedTokenSpeed", "token/s"),
    ("GeneratedCharacters", "char"),
    ("Tokenizer", "ms"),
    ("Detokenizer", "ms"),
    ("PostProcessingTime", "ms"),
    ("ForwardTime", "ms"),
    ("PrefillBatchsize", "request"),
    ("DecoderBatchsize", "request"),
    ("QueueWaitTime", "us"),
];

/// Why a metric of [`METRICS`] has no sample, when nothing was measured for it, in client
/// or (`engine`) engine mode.
pub fn why_missing(metric: &str, engine: bool) -> &'static str {
    match (metric, engine) {
        ("Tokenizer" | "Detokenizer", _) => "no tokenizer given (client-side timing needs one)",
        ("PostProcessingTime" | "ForwardTime", false) => {
            "engine mode only (the model's forward and sampling are inside the server in client mode)"
        }
        ("PrefillBatchsize" | "DecoderBatchsize" | "QueueWaitTime", false) => {
            "the server does not report it"
        }
        ("QueueWaitTime", true) => {
            "no queue in engine mode's unbatched closed loop (a worker takes the next request when it is free; request rates or --max-batch-size measure it)"
        }
        _ => "no sample",
    }
}

pub const DEFINITIONS: &[(&str, &str)] = &[
    (
        "FirstTokenTime",
        "the request's scheduled send time (open loop; its actual send in a closed loop) to the first event carrying generated text, ms",
    ),
    (
        "DecodeTime",
        "gap between successive token-bearing events, ms; pooled over all requests (SLO_P90: P90 of each request's mean)",
    ),
    ("LastDecodeTime", "the last decode gap of a request, ms"),
    ("MaxDecodeTime", "the largest decode gap of a request, ms"),
    (
        "GenerateTime",
        "the request's scheduled send time (open loop; its actual send in a closed loop) to the end of its response, ms",
    ),
    (
        "TPOT",
        "(GenerateTime - FirstTokenTime) / (GeneratedTokens - 1), ms per output token",
    ),
    (
        "InputTokens",
        "prompt tokens: the server's usage when given, else the tokenizer's count, else the synthetic length asked for (source 'requested', not a measurement); each run lists the sources in input_token_sources",
    ),
    (
        "GeneratedTokens",
        "the server's usage (or TGI details) when given, else the tokenizer's count, else token-bearing events",
    ),
    (
        "GeneratedTokenSpeed",
        "GeneratedTokens / GenerateTime, token/s",
    ),
    (
        "GeneratedCharacters",
        "characters of generated text (Unicode scalar values)",
    ),
    ("Throughput", "successful requests / TimeElapsed, req/s"),
    (
        "GenerateSpeed",
        "generated tokens of successful requests / TimeElapsed, token/s",
    ),
    (
        "GenerateSpeedPerClient",
        "GenerateSpeed / Concurrency, token/s",
    ),
    (
        "Tokenizer",
        "the client tokenizer's encoding of a request's prompt, timed after the run, ms",
    ),
    (
        "Detokenizer",
        "the client tokenizer's decoding of a response's token ids (its encoding of the generated text) back to text, timed after the run, ms",
    ),
    (
        "ForwardTime",
        "engine mode: one model forward (building the input tensor and running the model; the prefill for the first token), ms; pooled over tokens (SLO_P90: P90 of each request's mean)",
    ),
    (
        "PostProcessingTime",
        "engine mode: sampling one token from the logits (greedy) and decoding it to text, ms; pooled over tokens",
    ),
    (
        "PrefillBatchsize",
        "the batch the server computed a request's first token in, as the server reports it (batch_size on the first token event, or prefill_batch_size)",
    ),
    (
        "DecoderBatchsize",
        "the batch the server computed each later token in, as the server reports it (batch_size after the first token event, or decode_batch_size); pooled over tokens",
    ),
    (
        "QueueWaitTime",
        "client mode: the server's queue_wait_time in its events, us, pooled over the events that carry it; engine mode with request rates: a request's wait from its scheduled start until a worker took it, us",
    ),
    (
        "lpct",
        "sum of FirstTokenTime / sum of InputTokens over requests whose input tokens were counted (server usage or tokenizer), ms; n/a when only the requested synthetic lengths are known",
    ),
    (
        "goodput",
        "requests meeting every SLO bound / TimeElapsed, req/s",
    ),
    (
        "send_lag_ms",
        "actual send time minus scheduled send time (open loop): the client's own delay plus any wait for one of the concurrency slots, ms",
    ),
    (
        "percentiles",
        "linear interpolation between order statistics (numpy's default)",
    ),
];

/// [`DEFINITIONS`] as the report carries them.
pub fn definitions() -> BTreeMap<String, String> {
    DEFINITIONS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_config_reads_and_writes_mindie_format() {
        let text = r#"{"Input":{"Method":"uniform","Params":{"MinValue":1,"MaxValue":200}},"Output":{"Method":"gaussian","Params":{"Mean":100.0,"Var":200.0,"MinValue":1,"MaxValue":100}},"RequestCount":100}"#;
        let c: SyntheticConfig = serde_json::from_str(text).unwrap();
        assert_eq!(c.input, LengthDist::Uniform { min: 1, max: 200 });
        assert_eq!(serde_json::to_string(&c).unwrap(), text);
    }

    #[test]
    fn a_report_reads_back() {
        let s = MindieStat {
            average: 1.0,
            max: 1.0,
            min: 1.0,
            P75: 1.0,
            P90: 1.0,
            SLO_P90: f64::NAN,
            P99: 1.0,
            N: 1,
        };
        let j = serde_json::to_string(&s).unwrap();
        assert!(j.contains("\"SLO_P90\":null"), "{j}");
        let back: MindieStat = serde_json::from_str(&j).unwrap();
        assert!(back.SLO_P90.is_nan());
        let slo = vec![(GoodputMetric::Ttft, 500.0)];
        assert_eq!(serde_json::to_string(&slo).unwrap(), r#"[["ttft",500.0]]"#);
    }
}
