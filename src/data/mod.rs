//! Tensor data outside the model: NumPy (`.npy`, `.npz`) and ONNX `TensorProto` (`.pb`)
//! files, and the inputs of a run gathered from them (or generated from a seed).

pub mod inputs;
pub mod io;
