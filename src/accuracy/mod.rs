//! Accuracy: tensor files (NumPy and ONNX test-data formats) and comparisons of outputs
//! against references. Table 3 grading builds on `compare`.

pub mod agreement;
pub mod compare;
pub mod evaluate;
pub mod inputs;
pub mod metrics;
pub mod nulls;
pub mod reference;
