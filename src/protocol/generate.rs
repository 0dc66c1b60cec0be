//! The LLM serving APIs `acceval llm` speaks: request bodies, and what one streamed event or
//! one whole response says (text, usage, error, end).

use serde_json::{Map, Value, json};

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
    /// API takes its sampling parameters.
    pub fn body(
        self,
        model: &str,
        prompt: &str,
        max_tokens: u64,
        stream: bool,
        sampling: &Map<String, Value>,
    ) -> Value {
        let mut v = match self {
            Api::Openai | Api::Vllm => {
                json!({"model": model, "prompt": prompt, "max_tokens": max_tokens, "stream": stream})
            }
            Api::OpenaiChat => json!({
                "model": model,
                "messages": [{"role": "user", "content": prompt}],
                "max_tokens": max_tokens,
                "stream": stream,
            }),
            Api::Tgi => json!({
                "inputs": prompt,
                "parameters": {"max_new_tokens": max_tokens, "details": true},
            }),
            Api::Triton => {
                json!({"text_input": prompt, "max_tokens": max_tokens, "stream": stream})
            }
        };
        if stream && matches!(self, Api::Openai | Api::OpenaiChat | Api::Vllm) {
            v["stream_options"] = json!({"include_usage": true});
        }
        if self == Api::Vllm {
            v["ignore_eos"] = json!(true);
        }
        let target = if self == Api::Tgi {
            v["parameters"].as_object_mut()
        } else {
            v.as_object_mut()
        };
        if let Some(t) = target {
            for (k, x) in sampling {
                t.insert(k.clone(), x.clone());
            }
        }
        v
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
        p
    }
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let b = Api::Tgi.body("m", "p", 8, true, &s);
        assert_eq!(b["parameters"]["temperature"], 0.0);
        assert_eq!(b["parameters"]["max_new_tokens"], 8);
        let b = Api::Vllm.body("m", "p", 8, true, &s);
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["temperature"], 0.0);
        assert_eq!(Api::Triton.path("m", true), "/v2/models/m/generate_stream");
    }
}
