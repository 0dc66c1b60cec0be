//! `acceval llm`: the MindIE Benchmark client mode for LLM serving endpoints (OpenAI
//! completions and chat, TGI, Triton generate, vLLM), streaming or not.

pub mod dataset;
pub mod run;
pub mod stats;
