//! The ONNX protobuf schema (the subset acceval reads) and zero-copy model loading.
//!
//! Why these message types are declared here instead of taken from a crate: the ONNX
//! bindings on crates.io (`tract_onnx::pb`, `onnx-protobuf`, candle-onnx's) decode
//! `TensorProto.raw_data` into an owned `Vec<u8>`, which copies every weight. `inspect`
//! must not copy weights (a 100 MB model must load in well under a second and under 2×
//! its size in memory), so the messages below are prost messages whose `raw_data` is a
//! `bytes::Bytes` slice of the memory-mapped file. Field numbers follow `onnx.proto3`
//! (onnx 1.17); fields acceval does not need are skipped by prost while decoding.
//!
//! This module owns: the schema, element types, and node/value accessors. Opening and
//! decoding a file is `load`'s; checking stored tensors (dims against data, external data)
//! is `stored`'s; counting and shape inference are `params`, `shape`, `ops` and `analyse`.

use bytes::Bytes;
use prost::Message;

pub use super::load::{LoadError, OnnxFile, decode};
pub use super::stored::{Storage, stored_bytes};

/// `onnx.ModelProto`.
#[derive(Clone, PartialEq, Message)]
pub struct ModelProto {
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    #[prost(string, tag = "2")]
    pub producer_name: String,
    #[prost(string, tag = "3")]
    pub producer_version: String,
    #[prost(string, tag = "4")]
    pub domain: String,
    #[prost(int64, tag = "5")]
    pub model_version: i64,
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    #[prost(message, repeated, tag = "25")]
    pub functions: Vec<FunctionProto>,
}

/// `onnx.OperatorSetIdProto`.
#[derive(Clone, PartialEq, Message)]
pub struct OperatorSetIdProto {
    #[prost(string, tag = "1")]
    pub domain: String,
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// `onnx.FunctionProto` (model-local functions); only the name is used.
#[derive(Clone, PartialEq, Message)]
pub struct FunctionProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "10")]
    pub domain: String,
}

/// `onnx.GraphProto`.
#[derive(Clone, PartialEq, Message)]
pub struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    #[prost(message, repeated, tag = "15")]
    pub sparse_initializer: Vec<SparseTensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

/// `onnx.NodeProto`.
#[derive(Clone, PartialEq, Message)]
pub struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub op_type: String,
    #[prost(string, tag = "7")]
    pub domain: String,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
}

/// `onnx.AttributeProto`.
#[derive(Clone, PartialEq, Message)]
pub struct AttributeProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    #[prost(float, tag = "2")]
    pub f: f32,
    #[prost(int64, tag = "3")]
    pub i: i64,
    #[prost(bytes = "bytes", tag = "4")]
    pub s: Bytes,
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    #[prost(message, optional, tag = "6")]
    pub g: Option<GraphProto>,
    #[prost(message, optional, tag = "22")]
    pub sparse_tensor: Option<SparseTensorProto>,
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
    #[prost(bytes = "bytes", repeated, tag = "9")]
    pub strings: Vec<Bytes>,
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
}

/// `onnx.ValueInfoProto`.
#[derive(Clone, PartialEq, Message)]
pub struct ValueInfoProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

/// `onnx.TypeProto`; only tensor types are described (sequences and maps are reported as such).
#[derive(Clone, PartialEq, Message)]
pub struct TypeProto {
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TypeProtoTensor>,
    #[prost(message, optional, tag = "4")]
    pub sequence_type: Option<TypeProtoOpaque>,
    #[prost(message, optional, tag = "5")]
    pub map_type: Option<TypeProtoOpaque>,
    #[prost(message, optional, tag = "8")]
    pub sparse_tensor_type: Option<TypeProtoTensor>,
    #[prost(message, optional, tag = "9")]
    pub optional_type: Option<TypeProtoOpaque>,
}

/// Placeholder for a non-tensor type whose content acceval does not read.
#[derive(Clone, PartialEq, Message)]
pub struct TypeProtoOpaque {}

/// `onnx.TypeProto.Tensor`.
#[derive(Clone, PartialEq, Message)]
pub struct TypeProtoTensor {
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// `onnx.TensorShapeProto`.
#[derive(Clone, PartialEq, Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<DimensionProto>,
}

/// `onnx.TensorShapeProto.Dimension`: `dim_value` or `dim_param` (or neither: unknown).
#[derive(Clone, PartialEq, Message)]
pub struct DimensionProto {
    #[prost(int64, optional, tag = "1")]
    pub dim_value: Option<i64>,
    #[prost(string, optional, tag = "2")]
    pub dim_param: Option<String>,
}

/// `onnx.TensorProto`. `raw_data` borrows the mapped file; typed fields are decoded.
#[derive(Clone, PartialEq, Message)]
pub struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    #[prost(bytes = "bytes", repeated, tag = "6")]
    pub string_data: Vec<Bytes>,
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    #[prost(string, tag = "8")]
    pub name: String,
    #[prost(bytes = "bytes", tag = "9")]
    pub raw_data: Bytes,
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    #[prost(int32, tag = "14")]
    pub data_location: i32,
}

/// `onnx.StringStringEntryProto`.
#[derive(Clone, PartialEq, Message)]
pub struct StringStringEntryProto {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `onnx.SparseTensorProto`.
#[derive(Clone, PartialEq, Message)]
pub struct SparseTensorProto {
    #[prost(message, optional, tag = "1")]
    pub values: Option<TensorProto>,
    #[prost(message, optional, tag = "2")]
    pub indices: Option<TensorProto>,
    #[prost(int64, repeated, tag = "3")]
    pub dims: Vec<i64>,
}

/// `AttributeProto.AttributeType` values used by acceval.
pub mod attr_type {
    pub const FLOAT: i32 = 1;
    pub const INT: i32 = 2;
    pub const STRING: i32 = 3;
    pub const TENSOR: i32 = 4;
    pub const GRAPH: i32 = 5;
    pub const FLOATS: i32 = 6;
    pub const INTS: i32 = 7;
    pub const GRAPHS: i32 = 10;
}

/// `TensorProto.DataType`: the stored element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataType(pub i32);

impl DataType {
    pub const FLOAT: DataType = DataType(1);
    pub const UINT8: DataType = DataType(2);
    pub const INT8: DataType = DataType(3);
    pub const INT32: DataType = DataType(6);
    pub const INT64: DataType = DataType(7);
    pub const STRING: DataType = DataType(8);
    pub const BOOL: DataType = DataType(9);
    pub const FLOAT16: DataType = DataType(10);
    pub const DOUBLE: DataType = DataType(11);
    pub const BFLOAT16: DataType = DataType(16);

    /// The name acceval prints (the precision names of SPEC §6 e where they exist).
    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "FP32",
            2 => "UINT8",
            3 => "INT8",
            4 => "UINT16",
            5 => "INT16",
            6 => "INT32",
            7 => "INT64",
            8 => "STRING",
            9 => "BOOL",
            10 => "FP16",
            11 => "FP64",
            12 => "UINT32",
            13 => "UINT64",
            14 => "COMPLEX64",
            15 => "COMPLEX128",
            16 => "BF16",
            17 => "FP8E4M3FN",
            18 => "FP8E4M3FNUZ",
            19 => "FP8E5M2",
            20 => "FP8E5M2FNUZ",
            21 => "UINT4",
            22 => "INT4",
            23 => "FP4E2M1",
            24 => "FP8E8M0",
            25 => "UINT2",
            26 => "INT2",
            _ => "UNDEFINED",
        }
    }

    /// Bits one element occupies when stored (`None` for strings and unknown types).
    pub fn bits(self) -> Option<u64> {
        Some(match self.0 {
            1 | 6 | 12 => 32,
            2 | 3 | 9 | 17..=20 | 24 => 8,
            4 | 5 | 10 | 16 => 16,
            7 | 11 | 13 | 14 => 64,
            15 => 128,
            21..=23 => 4,
            25 | 26 => 2,
            _ => return None,
        })
    }

    /// Integer types (candidates for "shape-like" tensors).
    pub fn is_integer(self) -> bool {
        matches!(self.0, 2..=7 | 12 | 13 | 21 | 22 | 25 | 26)
    }

    /// Floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self.0, 1 | 10 | 11 | 16..=20 | 23 | 24)
    }
}

impl NodeProto {
    pub fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.attribute.iter().find(|a| a.name == name)
    }
    pub fn attr_i(&self, name: &str) -> Option<i64> {
        self.attr(name).map(|a| a.i)
    }
    pub fn attr_f(&self, name: &str) -> Option<f32> {
        self.attr(name).map(|a| a.f)
    }
    pub fn attr_ints(&self, name: &str) -> Option<&[i64]> {
        self.attr(name).map(|a| a.ints.as_slice())
    }
    pub fn attr_floats(&self, name: &str) -> Option<&[f32]> {
        self.attr(name).map(|a| a.floats.as_slice())
    }
    pub fn attr_s(&self, name: &str) -> Option<String> {
        self.attr(name)
            .map(|a| String::from_utf8_lossy(&a.s).into_owned())
    }
    /// Input `i` when present and not the empty name (ONNX's "optional input omitted").
    pub fn input_name(&self, i: usize) -> Option<&str> {
        self.input
            .get(i)
            .map(|s| s.as_str())
            .filter(|s| !s.is_empty())
    }
    /// A name for messages: the node name, or `op_type#index` when unnamed.
    pub fn label(&self, index: usize) -> String {
        if self.name.is_empty() {
            format!("{}#{index}", self.op_type)
        } else {
            self.name.clone()
        }
    }
}

impl ValueInfoProto {
    pub fn tensor_type(&self) -> Option<&TypeProtoTensor> {
        self.r#type.as_ref().and_then(|t| t.tensor_type.as_ref())
    }
}
