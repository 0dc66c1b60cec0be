//! The LLM serving APIs `acceval llm` speaks: request bodies, and what one streamed event or
//! one whole response says (text, usage, error, end).

use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::report::schema::llm::Api;

impl Api {
    pub fn path(self, model: &str, stream: bool) -> String {
        match self {
            Api::Openai | Api::Vllm => "/v1/completions".into(),
            Api::OpenaiChat => "/v1/chat/completions".into(),
            Api::Tgi => if stream {
                "/generate_stream"
            } else {
                "/generate"
            }
            .into(),
            Api::Triton => format!(
                "/v2/models/{model}/{}",
                if stream {
                    "generate_stream"
                } else {
                    "generate"
                }
            ),
        }
    }

    /// Whether a stream of this API ends with `data: [DONE]`.
    pub fn has_done_marker(self) -> bool {
        matches!(self, Api::Openai | Api::OpenaiChat | Api::Vllm)
    }

    /// The request body. `sampling` (from `--sampling-params`) is merged in last, where each
    /// API takes its sampling parameters; a key it names replaces acceval's own.
    pub fn body<'a>(
        self,
        model: &'a str,
        prompt: &'a str,
        max_tokens: u64,
        stream: bool,
        sampling: &'a Map<String, Value>,
    ) -> GenerateBody<'a> {
        let own = |key: &str| !sampling.contains_key(key);
        fn keep<T>(sampling: &Map<String, Value>, key: &str, v: T) -> Option<T> {
            (!sampling.contains_key(key)).then_some(v)
        }
        let stream_options =
            (stream && self != Api::Tgi && self != Api::Triton).then_some(StreamOptions {
                include_usage: true,
            });
        match self {
            Api::Openai | Api::Vllm => GenerateBody::Completions(Completions {
                model: keep(sampling, "model", model),
                prompt: keep(sampling, "prompt", prompt),
                max_tokens: keep(sampling, "max_tokens", max_tokens),
                stream: keep(sampling, "stream", stream),
                stream_options: stream_options.filter(|_| own("stream_options")),
                ignore_eos: (self == Api::Vllm && own("ignore_eos")).then_some(true),
                sampling,
            }),
            Api::OpenaiChat => GenerateBody::Chat(Chat {
                model: keep(sampling, "model", model),
                messages: keep(
                    sampling,
                    "messages",
                    [Message {
                        role: "user",
                        content: prompt,
                    }],
                ),
                max_tokens: keep(sampling, "max_tokens", max_tokens),
                stream: keep(sampling, "stream", stream),
                stream_options: stream_options.filter(|_| own("stream_options")),
                sampling,
            }),
            Api::Tgi => GenerateBody::Tgi(Tgi {
                inputs: prompt,
                parameters: TgiParameters {
                    max_new_tokens: keep(sampling, "max_new_tokens", max_tokens),
                    details: keep(sampling, "details", true),
                    sampling,
                },
            }),
            Api::Triton => GenerateBody::Triton(TritonGenerate {
                text_input: keep(sampling, "text_input", prompt),
                max_tokens: keep(sampling, "max_tokens", max_tokens),
                stream: keep(sampling, "stream", stream),
                sampling,
            }),
        }
    }

    /// What one event (streaming) or one response (not streaming) carries.
    pub fn read(self, v: &Value) -> Piece {
        let mut p = Piece::default();
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            p.error = Some(match e {
                Value::String(s) => s.clone(),
                other => other
                    .get("message")
                    .and_then(|m| m.as_str())
                    .map(str::to_string)
                    .unwrap_or_else(|| other.to_string()),
            });
            return p;
        }
        if v.get("object").and_then(|o| o.as_str()) == Some("error") {
            p.error = Some(
                v.get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("error")
                    .to_string(),
            );
            return p;
        }
        match self {
            Api::Openai | Api::Vllm | Api::OpenaiChat => {
                if let Some(c) = v.get("choices").and_then(|c| c.get(0)) {
                    let text = c
                        .get("text")
                        .or_else(|| c.get("delta").and_then(|d| d.get("content")))
                        .or_else(|| c.get("message").and_then(|d| d.get("content")))
                        .and_then(|t| t.as_str());
                    p.text = text.unwrap_or_default().to_string();
                    p.finished = c.get("finish_reason").is_some_and(|f| !f.is_null());
                }
                if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
                    p.prompt_tokens = u.get("prompt_tokens").and_then(|x| x.as_u64());
                    p.completion_tokens = u.get("completion_tokens").and_then(|x| x.as_u64());
                    // MindIE Server's OpenAI endpoints (with MINDIE_LLM_BENCHMARK_ENABLE set)
                    // put one value per iteration of the request in the final usage.
                    let per_iteration = |k: &str| -> Vec<f64> {
                        u.get(k)
                            .and_then(|a| a.as_array())
                            .map(|a| {
                                a.iter()
                                    .filter_map(|x| x.as_f64())
                                    .filter(|x| x.is_finite() && *x >= 0.0)
                                    .collect()
                            })
                            .unwrap_or_default()
                    };
                    p.iteration_batch_sizes = per_iteration("batch_size");
                    p.iteration_queue_wait_us = per_iteration("queue_wait_time");
                }
            }
            Api::Tgi => {
                // Stream events: {"token": {"text", "special"}, "generated_text", "details"};
                // /generate: {"generated_text", "details"}.
                if let Some(t) = v.get("token") {
                    if !t.get("special").and_then(|s| s.as_bool()).unwrap_or(false) {
                        p.text = t
                            .get("text")
                            .and_then(|s| s.as_str())
                            .unwrap_or_default()
                            .to_string();
                    }
                    p.token_event = true;
                } else if let Some(g) = v.get("generated_text").and_then(|g| g.as_str()) {
                    p.text = g.to_string();
                }
                if v.get("generated_text").is_some_and(|g| !g.is_null()) {
                    p.finished = true;
                }
                if let Some(d) = v.get("details").filter(|d| !d.is_null()) {
                    p.completion_tokens = d.get("generated_tokens").and_then(|x| x.as_u64());
                    p.from_details = p.completion_tokens.is_some();
                    p.prompt_tokens = d
                        .get("prefill")
                        .and_then(|x| x.as_array())
                        .filter(|a| !a.is_empty())
                        .map(|a| a.len() as u64);
                }
            }
            Api::Triton => {
                p.text = v
                    .get("text_output")
                    .and_then(|s| s.as_str())
                    .unwrap_or_default()
                    .to_string();
            }
        }
        p.server = ServerStats::read(v);
        p
    }
}

/// The scheduler figures a server may put in each streamed event (MindIE Benchmark reports
/// them as PrefillBatchsize, DecoderBatchsize and QueueWaitTime). Read at the event's top
/// level or under `details`: `batch_size` (the batch the event's token was computed in: the
/// prefill batch on a request's first token, a decode batch after) and `queue_wait_time`
/// (μs), which MindIE Server's Triton-style `generate_stream` sends under `details` when the
/// request asks for details (MindIE's documentation and its benchmark's reader, docs/llm.md);
/// also `prefill_batch_size` and `decode_batch_size` (or `decoder_batch_size`) where a server
/// names the two apart. Its OpenAI endpoints' per-iteration arrays are read with the usage
/// ([`Piece::iteration_batch_sizes`]). Other servers send none, and the rows are then "n/a:
/// the server does not report it".
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ServerStats {
    pub prefill_batch_size: Option<f64>,
    pub decode_batch_size: Option<f64>,
    pub batch_size: Option<f64>,
    /// μs.
    pub queue_wait_us: Option<f64>,
}

impl ServerStats {
    fn read(v: &Value) -> ServerStats {
        let num = |keys: &[&str]| {
            [Some(v), v.get("details")]
                .into_iter()
                .flatten()
                .flat_map(|o| keys.iter().filter_map(move |k| o.get(*k)))
                .find_map(|x| x.as_f64())
                .filter(|x| x.is_finite() && *x >= 0.0)
        };
        ServerStats {
            prefill_batch_size: num(&["prefill_batch_size"]),
            decode_batch_size: num(&["decode_batch_size", "decoder_batch_size"]),
            batch_size: num(&["batch_size"]),
            queue_wait_us: num(&["queue_wait_time"]),
        }
    }
}

/// A request body of one of the APIs (serialise it with serde_json). Each of acceval's own
/// fields is left out when `--sampling-params` gives the same key, so the user's value wins.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum GenerateBody<'a> {
    Completions(Completions<'a>),
    Chat(Chat<'a>),
    Tgi(Tgi<'a>),
    Triton(TritonGenerate<'a>),
}

/// OpenAI `/v1/completions` (and vLLM's, with `ignore_eos`).
#[derive(Debug, Serialize)]
pub struct Completions<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_eos: Option<bool>,
    #[serde(flatten)]
    pub sampling: &'a Map<String, Value>,
}

/// OpenAI `/v1/chat/completions`: the prompt as one user message.
#[derive(Debug, Serialize)]
pub struct Chat<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<[Message<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(flatten)]
    pub sampling: &'a Map<String, Value>,
}

#[derive(Debug, Serialize)]
pub struct Message<'a> {
    pub role: &'a str,
    pub content: &'a str,
}

/// `stream_options.include_usage`: ask for the usage chunk at the end of a stream.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StreamOptions {
    pub include_usage: bool,
}

/// TGI `/generate` and `/generate_stream`: sampling parameters go under `parameters`.
#[derive(Debug, Serialize)]
pub struct Tgi<'a> {
    pub inputs: &'a str,
    pub parameters: TgiParameters<'a>,
}

#[derive(Debug, Serialize)]
pub struct TgiParameters<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_new_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<bool>,
    #[serde(flatten)]
    pub sampling: &'a Map<String, Value>,
}

/// Triton's `/v2/models/NAME/generate` and `generate_stream`.
#[derive(Debug, Serialize)]
pub struct TritonGenerate<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_input: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(flatten)]
    pub sampling: &'a Map<String, Value>,
}

/// One event's (or one response's) content.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Piece {
    /// Generated text in this piece (may be empty: a role-only or a final chunk).
    pub text: String,
    pub error: Option<String>,
    /// `finish_reason` set (OpenAI) or the final event (TGI).
    pub finished: bool,
    /// A TGI token event (one token, even if its text is empty).
    pub token_event: bool,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// The token counts come from TGI's `details` (else from OpenAI's `usage`).
    pub from_details: bool,
    /// Batch sizes and queue wait the server reported with this piece.
    pub server: ServerStats,
    /// The batch size of each of the request's iterations (the first: its prefill), from an
    /// OpenAI response's `usage.batch_size` array (MindIE Server's final chunk).
    pub iteration_batch_sizes: Vec<f64>,
    /// Each iteration's queue wait, μs (`usage.queue_wait_time`, likewise).
    pub iteration_queue_wait_us: Vec<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_servers_batch_and_queue_figures_where_it_puts_them() {
        let p = Api::Triton.read(&json!({"text_output":"a","batch_size":4,"queue_wait_time":1500}));
        assert_eq!(
            (p.server.batch_size, p.server.queue_wait_us),
            (Some(4.0), Some(1500.0))
        );
        let p = Api::Tgi.read(&json!({"token":{"text":"a"},"details":{"prefill_batch_size":2,"decoder_batch_size":8}}));
        assert_eq!(
            (p.server.prefill_batch_size, p.server.decode_batch_size),
            (Some(2.0), Some(8.0))
        );
        let none = Api::Openai
            .read(&json!({"choices":[{"text":"a"}],"batch_size":"x","queue_wait_time":-1}));
        assert_eq!(none.server, ServerStats::default());
        // MindIE's documented Triton-style event, and its OpenAI final chunk.
        let p = Api::Triton.read(&json!({"text_output":"a","details":{"finish_reason":null,"generated_tokens":1,"batch_size":1,"queue_wait_time":5082},"prefill_time":28,"decode_time":null}));
        assert_eq!(
            (p.server.batch_size, p.server.queue_wait_us),
            (Some(1.0), Some(5082.0))
        );
        let u = Api::OpenaiChat.read(&json!({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"batch_size":[2,3,3,3,1],"queue_wait_time":[5318,117,82,72,196]}}));
        assert_eq!(u.iteration_batch_sizes, vec![2.0, 3.0, 3.0, 3.0, 1.0]);
        assert_eq!(
            u.iteration_queue_wait_us,
            vec![5318.0, 117.0, 82.0, 72.0, 196.0]
        );
    }

    #[test]
    fn reads_each_api() {
        let c = Api::Openai
            .read(&json!({"choices":[{"index":0,"text":" hi","finish_reason":null}],"usage":null}));
        assert_eq!((c.text.as_str(), c.finished), (" hi", false));
        let u = Api::Openai
            .read(&json!({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}));
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(5), Some(7)));
        let ch = Api::OpenaiChat.read(&json!({"choices":[{"delta":{"role":"assistant"}}]}));
        assert_eq!(ch.text, "");
        let ch = Api::OpenaiChat
            .read(&json!({"choices":[{"delta":{"content":"x"},"finish_reason":"length"}]}));
        assert_eq!((ch.text.as_str(), ch.finished), ("x", true));
        let t = Api::Tgi.read(&json!({"token":{"id":1,"text":" a","special":false},"generated_text":null,"details":null}));
        assert!(t.token_event && !t.finished && t.text == " a");
        let f = Api::Tgi.read(&json!({"token":{"id":2,"text":"</s>","special":true},"generated_text":"a","details":{"generated_tokens":2}}));
        assert!(f.finished && f.text.is_empty() && f.completion_tokens == Some(2));
        assert_eq!(Api::Triton.read(&json!({"text_output":"z"})).text, "z");
        assert_eq!(
            Api::Openai
                .read(&json!({"error":{"message":"boom"}}))
                .error
                .as_deref(),
            Some("boom")
        );
        assert_eq!(
            Api::Triton.read(&json!({"error":"bad"})).error.as_deref(),
            Some("bad")
        );
    }

    #[test]
    fn bodies_carry_sampling_params() {
        let mut s = Map::new();
        s.insert("temperature".into(), json!(0.0));
        let v = |b: GenerateBody| serde_json::to_value(b).unwrap();
        let b = v(Api::Tgi.body("m", "p", 8, true, &s));
        assert_eq!(b["parameters"]["temperature"], 0.0);
        assert_eq!(b["parameters"]["max_new_tokens"], 8);
        let b = v(Api::Vllm.body("m", "p", 8, true, &s));
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["temperature"], 0.0);
        assert_eq!(Api::Triton.path("m", true), "/v2/models/m/generate_stream");
    }

    /// The typed bodies are the JSON objects acceval sent when it built them with `json!`
    /// (the same keys and values; only the key order may differ).
    #[test]
    fn bodies_equal_the_json_objects_sent_before() {
        let mut s = Map::new();
        s.insert("temperature".into(), json!(0.5));
        s.insert("top_p".into(), json!(0.9));
        let empty = Map::new();
        for sampling in [&empty, &s] {
            for stream in [false, true] {
                let with = |mut v: Value, inner: bool| {
                    let t = if inner { &mut v["parameters"] } else { &mut v };
                    for (k, x) in sampling {
                        t[k] = x.clone();
                    }
                    v
                };
                let usage = |mut v: Value| {
                    if stream {
                        v["stream_options"] = json!({"include_usage": true});
                    }
                    v
                };
                let cases = [
                    (
                        Api::Openai,
                        with(
                            usage(
                                json!({"model": "m", "prompt": "p", "max_tokens": 8, "stream": stream}),
                            ),
                            false,
                        ),
                    ),
                    (
                        Api::Vllm,
                        with(
                            usage(
                                json!({"model": "m", "prompt": "p", "max_tokens": 8, "stream": stream, "ignore_eos": true}),
                            ),
                            false,
                        ),
                    ),
                    (
                        Api::OpenaiChat,
                        with(
                            usage(
                                json!({"model": "m", "messages": [{"role": "user", "content": "p"}], "max_tokens": 8, "stream": stream}),
                            ),
                            false,
                        ),
                    ),
                    (
                        Api::Tgi,
                        with(
                            json!({"inputs": "p", "parameters": {"max_new_tokens": 8, "details": true}}),
                            true,
                        ),
                    ),
                    (
                        Api::Triton,
                        with(
                            json!({"text_input": "p", "max_tokens": 8, "stream": stream}),
                            false,
                        ),
                    ),
                ];
                for (api, want) in cases {
                    let got =
                        serde_json::to_value(api.body("m", "p", 8, stream, sampling)).unwrap();
                    assert_eq!(got, want, "{api:?} stream={stream}");
                }
            }
        }
        // A sampling key that names one of acceval's own fields replaces it (once).
        let mut o = Map::new();
        o.insert("max_tokens".into(), json!(3));
        let bytes = serde_json::to_string(&Api::Openai.body("m", "p", 8, false, &o)).unwrap();
        assert_eq!(bytes.matches("max_tokens").count(), 1, "{bytes}");
        assert_eq!(
            serde_json::from_str::<Value>(&bytes).unwrap()["max_tokens"],
            3
        );
    }
}
