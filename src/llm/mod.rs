//! `acceval llm`: the MindIE Benchmark client mode for LLM serving endpoints (OpenAI
//! completions and chat, TGI, Triton generate, vLLM), streaming or not, on the load
//! driver of `load::driver`. [`LlmSettings`] is what a caller fills (the CLI, `grade`),
//! [`LlmSettings::plan`] checks it and reads the data, [`measure`] runs the plan.

pub mod accuracy;
pub mod dataset;
pub mod engine;
pub mod generate;
pub mod run;
pub mod settings;
pub mod stats;

pub use run::measure;
pub use settings::{Dataset, Engine, LlmPlan, LlmSettings};

use std::path::PathBuf;

use crate::load::SettingsError;

/// Why an LLM benchmark could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting out of range, or a file setting that cannot be read.
    #[error(transparent)]
    Setting(#[from] SettingsError),
    /// A synthetic_config.json whose content breaks MindIE's rules: `why` names the key and
    /// the allowed range (free-form: one message per rule of the format).
    #[error("{}: {why}", path.display())]
    SyntheticConfig { path: PathBuf, why: String },
    /// A line of a JSONL prompt file that is not a prompt.
    #[error("{}:{line}: {why}", path.display())]
    Jsonl {
        path: PathBuf,
        line: usize,
        why: String,
    },
    #[error("cannot encode a request body: {0}")]
    Body(serde_json::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Load(#[from] crate::load::Error),
    /// Engine mode: the model cannot be loaded or run.
    #[error("{0}")]
    Engine(String),
}
