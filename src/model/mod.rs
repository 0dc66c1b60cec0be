//! What a model is: ONNX I/O, shape resolution, and parameter and FLOP counting.
//!
//! `onnx` reads the file without copying weights; `params` classifies stored tensors;
//! `shape` resolves value shapes; `cost` holds the per-operator MAC/other-op rules;
//! `analyse` ties them together into the `Analysis` that `acceval inspect` prints.

pub mod analyse;
pub mod build;
pub mod cost;
pub mod onnx;
pub mod params;
pub mod shape;
pub mod tensor;

pub use analyse::{AnalyseError, Analysis, InputShape, analyse};
