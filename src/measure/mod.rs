//! Measurement: statistics over raw samples, the harness and its policies, `run` and
//! `bench`. [`Error`] says why a run could not be made; a bad setting is named by [`Setting`].

pub mod bench;
pub mod harness;
pub mod pipelined;
pub mod placement;
pub mod run;
pub mod stats;

use std::fmt;
use std::path::PathBuf;

use crate::backend::BackendError;
use crate::util::setting::SettingError;

/// The settings of this layer a caller can get wrong (the CLI shows them as its flags,
/// `grade` as its profile's keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The judged percentile.
    Percentile,
    /// The batch sizes of the throughput sweep.
    Batch,
    /// The input files.
    Inputs,
    /// The task of a model outside the zoo.
    Task,
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Setting::Percentile => "percentile",
            Setting::Batch => "batch",
            Setting::Inputs => "inputs",
            Setting::Task => "task",
        })
    }
}

/// Why a run or a benchmark could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Setting(#[from] SettingError<Setting>),
    #[error("model '{}' does not exist", path.display())]
    NoModel { path: PathBuf },
    #[error("'{}' holds no {exts} file", path.display())]
    NoFiles { path: PathBuf, exts: String },
    #[error("folder '{}' holds no .jpg/.jpeg/.png image", path.display())]
    NoImages { path: PathBuf },
    #[error("task pipelines take models with one input; this one has {inputs}")]
    NotOneInput { inputs: usize },
    #[error("input '{input}' has dynamic dims; task pipelines need a static input shape")]
    DynamicInput { input: String },
    #[error("the model declares no input")]
    NoInput,
    /// Images given to a forecasting model.
    #[error("a forecasting model takes a load series (a .csv file), not images")]
    WantsSeries,
    /// A load series given to an image model.
    #[error("a {task} model takes images, not a load series")]
    WantsImages { task: String },
    #[error("the first inference of {} on {backend}: {err}", model.display())]
    FirstInference {
        model: PathBuf,
        backend: String,
        err: Box<Error>,
    },
    #[error(
        "input '{input}' has a static batch dimension {dims}; batch sweeps need a model with a dynamic first dimension"
    )]
    StaticBatch { input: String, dims: String },
    /// Batch sweeps run on tensors, not on the task pipeline's files.
    #[error("batch sweeps run the model only, not the task pipeline")]
    BatchOfFiles,
    /// A pipelined run overlaps the task pipeline's stages: it needs one.
    #[error(
        "--pipelined overlaps decode and pre-processing with the model: it needs the task pipeline (a zoo model or --task, not --model-only)"
    )]
    PipelinedModelOnly,
    #[error("batch {batch}: {error}")]
    Batch { batch: usize, error: String },
    /// A cluster run's start barrier failed (issue 25): the rank runs no timed sample.
    #[error("the cluster's start barrier: {0}")]
    Cluster(String),
    #[error("cannot repeat the inputs to a batch: {0}")]
    Repeat(ndarray::ShapeError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Data(#[from] crate::data::Error),
    #[error(transparent)]
    Model(#[from] crate::model::AnalyseError),
    #[error(transparent)]
    Task(#[from] crate::task::Error),
    #[error(transparent)]
    Zoo(#[from] crate::zoo::Error),
    #[error(transparent)]
    Files(#[from] crate::util::Error),
}
