//! What a model is: ONNX I/O, shape resolution, and parameter and FLOP counting.
//!
//! `onnx` is the protobuf schema; `load` opens and decodes a file without copying
//! weights; `stored` checks stored tensors (dims against data, external files); `params`
//! classifies them (Table 1); `shape` holds what is known about a value; `ops` is the
//! operator table, each operator's shape rule beside its cost rule (Table 2); `analyse`
//! walks the graph into the `Analysis` that `acceval inspect` prints (its types live in
//! `report::schema::inspect`). `build` writes models in code (tests, the zoo); `tensor`
//! holds host tensors. This module uses only `util`, `standard` and `report::schema`.

pub mod analyse;
pub mod build;
pub mod load;
pub mod onnx;
pub mod ops;
pub mod params;
pub mod shape;
pub mod stored;
pub mod tensor;

pub use crate::report::schema::inspect::Analysis;
pub use analyse::{AnalyseError, InputShape, analyse, analyse_for_run};
pub use ops::{Cost, NoCost};
