//! Accuracy: tensor files (NumPy and ONNX test-data formats) and comparisons of outputs
//! against references. Table 3 grading builds on `compare`. [`Error`] says why a reference
//! could not be made or used; a bad setting is named by [`Setting`].

pub mod agreement;
pub mod compare;
pub mod conversion;
pub mod evaluate;
pub mod inputs;
pub mod metrics;
pub mod nulls;
pub mod pooled;
pub mod reference;

use std::fmt;
use std::path::PathBuf;

use crate::backend::BackendError;
use crate::util::setting::SettingError;

/// The settings of this layer a caller can get wrong (the CLI shows them as `--inputs`,
/// `--task`, `--reference`; `grade` as its profile's `[accuracy]` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The inputs of a reference: a folder, a `.csv` series or an `.npz`.
    Inputs,
    /// The task, which says how to pre-process images.
    Task,
    /// The FP32 model's reference folder.
    Reference,
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Setting::Inputs => "inputs",
            Setting::Task => "task",
            Setting::Reference => "reference",
        })
    }
}

/// Why a reference could not be made or a model could not be graded against one.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Setting(#[from] SettingError<Setting>),
    #[error(
        "input '{input}' has dynamic dims: give the inputs as files (test_data_set_N folders, or an .npz)"
    )]
    DynamicInput { input: String },
    #[error("input '{input}' is {dtype}: give it as a file")]
    CannotGenerate { input: String, dtype: String },
    #[error("images and series feed models with one input; this one has {inputs}")]
    NotOneInput { inputs: usize },
    #[error("no inputs to compute references for")]
    NoInputs,
    #[error(
        "references are the FP32 model's outputs on the CPU: use the backend cpu (tract) or ort:cpu, not '{spec}'"
    )]
    NotCpu { spec: String },
    #[error(
        "the reference output '{output}' of input {input} ({source_name}) holds {nan} NaN and {inf} infinite values: a reference must be finite; check the model and its inputs"
    )]
    NotFinite {
        output: String,
        input: usize,
        source_name: String,
        nan: usize,
        inf: usize,
    },
    /// The other CPU engine failed; `err` says how.
    #[error("cross-checking on {other}: {err}")]
    CrossCheck { other: String, err: Box<Error> },
    /// candle could not run the graph (an operator acceval's interpreter lacks, a
    /// non-FP32 tensor).
    #[error("{0}")]
    Candle(String),
    #[error("output '{output}': {engine} gives {err}")]
    CrossMetric {
        output: String,
        engine: String,
        err: metrics::MetricError,
    },
    #[error(
        "the engines disagree on output '{output}' of input {input} ({source_name}): relative L2 error {rel_l2:.3e} between {engines} exceeds {:e} (max abs error {max_abs:.3e}); the reference is not written",
        reference::CROSS_CHECK_REL_L2
    )]
    Disagree {
        output: String,
        input: usize,
        source_name: String,
        rel_l2: f64,
        /// "ENGINE and OTHER".
        engines: String,
        max_abs: f64,
    },
    #[error("cannot write the reference manifest: {0}")]
    ManifestText(toml::ser::Error),
    #[error("cannot replace '{}': {err}", path.display())]
    Replace { path: PathBuf, err: std::io::Error },
    /// Computing a zoo model's reference on first use failed.
    #[error(
        "computing the reference of {model} (or make it with `acceval reference --model {model}`): {err}"
    )]
    Producing { model: String, err: Box<Error> },
    #[error(
        "'{}' is the reference of {of} (model SHA-256 {of_sha}), not of {model} (SHA-256 {want_sha} in models/zoo.toml): use {model}'s reference, or recompute it with `acceval reference --model {model}`",
        manifest.display(),
        of = of_model.0,
        of_sha = of_model.1
    )]
    OtherZooModel {
        manifest: PathBuf,
        /// The model the reference is of, and its SHA-256.
        of_model: Box<(String, String)>,
        model: String,
        want_sha: String,
    },
    #[error(
        "'{}' is the reference of a model with {reference_io}; this model has {model_io}: it is a reference for another model",
        manifest.display()
    )]
    OtherModel {
        manifest: PathBuf,
        /// "inputs [..] and outputs [..]" of each.
        reference_io: String,
        model_io: String,
    },
    #[error("the reference '{}' holds no input", dir.display())]
    EmptyReference { dir: PathBuf },
    #[error("the model gave {got} outputs, the reference {} has {want}", set.display())]
    OutputCount {
        got: usize,
        set: PathBuf,
        want: usize,
    },
    #[error(
        "output {index} is '{model_name}' in the model but '{ref_name}' in {}/output_{index}.pb: the reference is for another model",
        set.display()
    )]
    OutputName {
        index: usize,
        model_name: String,
        ref_name: String,
        set: PathBuf,
    },
    #[error(
        "output '{output}': {err} ({}/output_{index}.pb); nothing is broadcast or converted",
        set.display()
    )]
    Compare {
        output: String,
        err: metrics::MetricError,
        set: PathBuf,
        index: usize,
    },
    #[error("shape {actual:?} differs from the expected {expected:?}")]
    ShapeDiffers {
        actual: Vec<usize>,
        expected: Vec<usize>,
    },
    #[error("'{}' declares no output", model.display())]
    NoOutput { model: PathBuf },
    #[error("running {} on {spec}: {err}", model.display())]
    Run {
        model: PathBuf,
        spec: String,
        err: Box<BackendError>,
    },
    #[error(
        "the source model gave {source_outputs} outputs and the converted one {converted}: they are not the same model"
    )]
    ConversionOutputs {
        source_outputs: usize,
        converted: usize,
    },
    #[error("output {index} ('{source_name}' against '{converted}'): {err}")]
    ConversionMetric {
        index: usize,
        source_name: String,
        converted: String,
        err: metrics::MetricError,
    },
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Reference(#[from] reference::RefError),
    #[error(transparent)]
    TensorFile(#[from] crate::data::io::IoError),
    #[error(transparent)]
    Data(Box<crate::data::Error>),
    #[error(transparent)]
    Model(#[from] crate::model::onnx::LoadError),
    #[error(transparent)]
    Task(#[from] crate::task::Error),
    #[error(transparent)]
    Zoo(#[from] crate::zoo::Error),
    #[error(transparent)]
    Files(#[from] crate::util::Error),
}

crate::util::boxed_from!(Error, Data, crate::data::Error);
