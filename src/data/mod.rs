//! Tensor data outside the model: NumPy (`.npy`, `.npz`) and ONNX `TensorProto` (`.pb`)
//! files, and the inputs of a run gathered from them (or generated from a seed). [`Error`]
//! says why inputs could not be resolved; a bad setting is named by [`Setting`].

pub mod inputs;
pub mod io;

use std::fmt;
use std::path::PathBuf;

use crate::model::tensor::SUPPORTED_IO_TYPES;
use crate::util::setting::SettingError;

/// The settings of this layer a caller can get wrong (how the caller names them is its
/// business: the CLI shows `--input`, `--shape`, `--inputs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// `NAME=FILE` tensor files and bare `.npz` archives.
    InputFiles,
    /// Shapes for generated inputs (`NAME:DIMS`).
    Shapes,
    /// A folder or archive of inputs.
    InputsPath,
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Setting::InputFiles => "input file",
            Setting::Shapes => "input shape",
            Setting::InputsPath => "inputs",
        })
    }
}

/// Why the inputs of a run could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Io(#[from] io::IoError),
    #[error(transparent)]
    Model(#[from] crate::model::onnx::LoadError),
    #[error(transparent)]
    Setting(#[from] SettingError<Setting>),
    /// A given tensor of another element type than the model declares.
    #[error(
        "input '{input}': the model expects {expected}, {given_by} holds {got}; convert the array (numpy: arr.astype(...))"
    )]
    WrongType {
        input: String,
        expected: String,
        given_by: String,
        got: String,
    },
    /// A given tensor of another shape than the model declares.
    #[error("input '{input}': the model expects shape {expected}, {given_by} has {got}")]
    WrongShape {
        input: String,
        expected: String,
        given_by: String,
        got: String,
    },
    /// An `.npz` archive none of whose arrays is named like an input.
    #[error(
        "'{}' holds arrays [{names}], none named like the model's inputs [{inputs}]: name them after the inputs, or pass NAME=FILE.npz",
        path.display()
    )]
    ArchiveUnmatched {
        path: PathBuf,
        names: String,
        inputs: String,
    },
    /// Some inputs were given as files, but not this one.
    #[error(
        "input '{input}' is in none of the given files ({files}): give it too, or give no input file to run on seeded inputs"
    )]
    NotGiven { input: String, files: String },
    /// An input to generate whose shape is not known.
    #[error("input '{input}' has dynamic dims {dims}: give its shape, or a file for it")]
    DynamicDims { input: String, dims: String },
    /// An input of a type acceval cannot generate.
    #[error(
        "input '{input}' is {dtype}; acceval can generate {SUPPORTED_IO_TYPES}: give it as a file"
    )]
    CannotGenerate { input: String, dtype: String },
    /// An input too large to generate.
    #[error(transparent)]
    Budget(#[from] crate::util::Error),
}
