//! The result of `acceval inspect` (`--json` prints [`Analysis`]): what a model is, its
//! parameters (Table 1) and its compute (Table 2).
//!
//! `model::analyse` constructs these types; the terminal view (`report::inspect`) and
//! `grade` read them. Field names are stable and documented in the README; units are in
//! the names (`file_bytes`, `macs`, `flops`, `gflops`, `mb`). Everything here deserializes,
//! so a saved `inspect --json` can be read back and checked against the JSON schema
//! generated from these types.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::standard::Level;

/// The `schema` of the JSON below; bumped on any incompatible change.
pub const INSPECT_SCHEMA: &str = "acceval.inspect/1";

/// One dimension: a number, or a name for a size known only at run time. In JSON a
/// number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Dim {
    Known(i64),
    Sym(String),
}

impl Dim {
    pub fn known(&self) -> Option<i64> {
        match self {
            Dim::Known(v) => Some(*v),
            Dim::Sym(_) => None,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Known(v) => write!(f, "{v}"),
            Dim::Sym(s) => write!(f, "{s}"),
        }
    }
}

/// A shape, outermost dimension first (`[]` for a scalar).
pub type Shape = Vec<Dim>;

/// `1x3x224x224` style (symbolic dims by name, `[] (scalar)` for a scalar).
pub fn shape_str(s: &[Dim]) -> String {
    if s.is_empty() {
        return "[] (scalar)".into();
    }
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// A shape of numbers.
pub fn known_shape(dims: &[i64]) -> Shape {
    dims.iter().map(|&d| Dim::Known(d)).collect()
}

/// What kind of value a graph input or output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValueKind {
    Tensor,
    Sequence,
    Map,
    Optional,
    SparseTensor,
    Unknown,
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ValueKind::Tensor => "tensor",
            ValueKind::Sequence => "sequence",
            ValueKind::Map => "map",
            ValueKind::Optional => "optional",
            ValueKind::SparseTensor => "sparse_tensor",
            ValueKind::Unknown => "unknown",
        })
    }
}

/// One graph input or output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ValueDesc {
    pub name: String,
    pub kind: ValueKind,
    /// Element type as acceval names it (`FP32`, `INT8`, ...; `UNDEFINED` when not given).
    pub elem_type: String,
    /// Declared shape: numbers, or strings for symbolic dims (a dim the file leaves
    /// unnamed, or declares as 0 or negative, is named `value:axis`).
    pub shape: Option<Shape>,
    /// Shape used for the analysis (after `--input`, and inferred for outputs).
    pub resolved_shape: Option<Shape>,
}

/// One imported operator set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Opset {
    pub domain: String,
    pub version: i64,
}

/// The file and its header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelInfo {
    pub path: String,
    pub file_bytes: u64,
    pub ir_version: i64,
    pub opsets: Vec<Opset>,
    pub producer_name: String,
    pub producer_version: String,
    pub graph_name: String,
    /// Nodes in all graphs, subgraphs included.
    pub node_count: u64,
    /// Nodes in the main graph only.
    pub main_graph_node_count: u64,
}

/// The cost of one node, as counted (× `multiplier` for loop bodies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NodeCost {
    pub node: String,
    pub op_type: String,
    /// `main`, or the subgraph path (`loop_node/body`).
    pub graph: String,
    pub macs: u64,
    pub flops: u64,
    pub other_ops: u64,
    /// Times the node runs per inference (loop trip count; 1 outside loops).
    pub multiplier: u64,
    pub input_shapes: Vec<String>,
    pub output_shapes: Vec<String>,
}

/// An operator type acceval has no rule for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnsupportedOp {
    pub op_type: String,
    pub domain: String,
    pub nodes: u64,
}

/// A node with a rule whose inputs' shapes could not be resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnresolvedNode {
    pub node: String,
    pub op_type: String,
    pub reason: String,
}

/// The levels of Tables 1 and 2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Levels {
    /// Table 1 level from `params.mb`; null when the model has no parameters.
    pub params: Option<Level>,
    /// Table 2 level from `gflops`; null when FLOPs are not available.
    pub flops: Option<Level>,
}

/// Where a stored tensor comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TensorSource {
    Initializer,
    SparseInitializer,
    ConstantNode,
    /// An initializer whose data is in an external file.
    External,
}

impl fmt::Display for TensorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TensorSource::Initializer => "initializer",
            TensorSource::SparseInitializer => "sparse_initializer",
            TensorSource::ConstantNode => "constant_node",
            TensorSource::External => "external",
        })
    }
}

/// One stored tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StoredTensor {
    pub name: String,
    pub elem_type: String,
    pub dims: Vec<i64>,
    pub count: u64,
    pub bytes: u64,
    pub source: TensorSource,
    /// Where it is declared: `main` or the path of the subgraph (`node/then_branch`).
    pub graph: String,
}

/// Parameter totals for one element type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TypeTotal {
    pub elem_type: String,
    pub tensors: u64,
    pub count: u64,
    pub bytes: u64,
}

/// Parameters of a model (Table 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ParamSummary {
    /// Number of parameter elements.
    pub count: u64,
    /// Bytes the parameters occupy in their stored types.
    pub bytes: u64,
    /// `bytes` / 10^6 (the MB of Table 1).
    pub mb: f64,
    pub tensors: u64,
    pub by_type: Vec<TypeTotal>,
    /// How many of the parameter tensors keep their data in external files.
    pub external_tensors: u64,
    /// Every parameter tensor, in declaration order.
    pub list: Vec<StoredTensor>,
}

/// The shape-like integer tensors excluded from the parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShapeTensors {
    pub tensors: u64,
    pub count: u64,
    pub bytes: u64,
    pub list: Vec<StoredTensor>,
}

/// Everything `acceval inspect` reports (`--json` prints this struct).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Analysis {
    /// Schema identifier of this JSON ([`INSPECT_SCHEMA`]).
    pub schema: String,
    pub model: ModelInfo,
    pub inputs: Vec<ValueDesc>,
    pub outputs: Vec<ValueDesc>,
    /// Nodes per operator (all graphs); non-default domains as `domain::Op`.
    pub op_histogram: BTreeMap<String, u64>,
    pub params: ParamSummary,
    pub shape_tensors: ShapeTensors,
    /// Multiply-accumulates of one inference at the resolved input shapes; null when
    /// inputs have dynamic dims that were not given (`macs_unavailable` says which).
    pub macs: Option<u64>,
    /// 2 × `macs`.
    pub flops: Option<u64>,
    /// `flops` / 10^9 (the G of Table 2).
    pub gflops: Option<f64>,
    /// Arithmetic outside MACs (bias, normalisation, activations, pooling, ...), by the
    /// per-operator rules in the README.
    pub other_ops: Option<u64>,
    /// True when some nodes could not be counted (see `unsupported_ops`,
    /// `unresolved_nodes`): the totals are then lower bounds.
    pub lower_bound: bool,
    pub macs_unavailable: Option<String>,
    pub unsupported_ops: Vec<UnsupportedOp>,
    pub unresolved_nodes: Vec<UnresolvedNode>,
    pub notes: Vec<String>,
    pub levels: Levels,
    /// Every counted node, largest MACs first (the table shows the top N with --per-op).
    pub per_op: Vec<NodeCost>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_serialize_as_numbers_or_names_and_read_back() {
        let s: Shape = vec![Dim::Known(1), Dim::Sym("batch".into())];
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(j, r#"[1,"batch"]"#);
        assert_eq!(serde_json::from_str::<Shape>(&j).unwrap(), s);
        assert_eq!(shape_str(&s), "1xbatch");
        assert_eq!(shape_str(&[]), "[] (scalar)");
    }

    #[test]
    fn enums_keep_the_json_words() {
        assert_eq!(
            serde_json::to_string(&TensorSource::ConstantNode).unwrap(),
            r#""constant_node""#
        );
        assert_eq!(
            serde_json::to_string(&ValueKind::SparseTensor).unwrap(),
            r#""sparse_tensor""#
        );
        assert_eq!(TensorSource::External.to_string(), "external");
    }
}

/// Parameters of one element type in a TorchScript model.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TorchScriptDtype {
    /// libtorch's kind (`Float`, `Half`, `Int8`, ...).
    pub kind: String,
    pub tensors: usize,
    pub params: u64,
    pub bytes: u64,
}

/// `acceval inspect M.pt` (TorchScript, with the `tch` feature): Table 1 from the module's
/// parameters; no FLOPs (TorchScript graphs are not analysed).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TorchScriptInspection {
    pub schema: String,
    pub model: String,
    pub model_sha256: String,
    /// `forward`'s arguments, from the archive's code.
    pub inputs: Vec<String>,
    /// The module's named parameters (buffers such as BatchNorm statistics are not counted,
    /// as PyTorch's `parameters()` does not count them).
    pub parameters: u64,
    pub parameter_bytes: u64,
    /// MB = 10^6 bytes, and Table 1's level of it.
    pub parameter_mb: f64,
    pub size_level: Option<crate::standard::Level>,
    pub by_dtype: Vec<TorchScriptDtype>,
    /// Always "n/a: ...": TorchScript graphs are not analysed.
    pub flops: String,
}
