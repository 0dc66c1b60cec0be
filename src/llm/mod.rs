//! `acceval llm`: the MindIE Benchmark client mode for LLM serving endpoints (OpenAI
//! completions and chat, TGI, Triton generate, vLLM), streaming or not, on the load
//! driver of `load::driver`. [`LlmSettings`] is what a caller fills (the CLI, `grade`),
//! [`LlmSettings::plan`] checks it and reads the data, [`measure`] runs the plan.

pub mod dataset;
pub mod generate;
pub mod run;
pub mod settings;
pub mod stats;

pub use run::measure;
pub use settings::{Dataset, LlmPlan, LlmSettings};
