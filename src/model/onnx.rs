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
//! This module owns: the schema, opening a file (mmap), decoding, and checking external
//! data files. It leaves counting and shape inference to `params`, `shape` and `cost`.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use prost::Message;

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

/// Bytes that `n` elements of type `t` occupy when stored (sub-byte types are packed).
pub fn stored_bytes(t: DataType, n: u64) -> Option<u64> {
    t.bits().map(|b| (n * b).div_ceil(8))
}

/// Why a model could not be read. Each message names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot open model '{path}': {source}; check the path")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("'{path}' is empty (0 bytes); pass an ONNX model file")]
    Empty { path: PathBuf },
    #[error(
        "'{path}' is not a valid ONNX model ({reason}); the file may be truncated or of another format: re-export or re-download it"
    )]
    Decode { path: PathBuf, reason: String },
    #[error(
        "'{path}' has no graph: it decodes as protobuf but is not an ONNX ModelProto; pass an .onnx model"
    )]
    NoGraph { path: PathBuf },
    #[error(
        "tensor '{tensor}' of '{model}' stores its data in external file '{file}', which {problem}; keep the external data file beside the model (as written by onnx.save_model(..., save_as_external_data=True))"
    )]
    ExternalData {
        model: PathBuf,
        tensor: String,
        file: PathBuf,
        problem: String,
    },
}

/// A decoded model together with the memory map its tensors borrow from.
pub struct OnnxFile {
    pub path: PathBuf,
    pub file_bytes: u64,
    pub proto: ModelProto,
}

impl OnnxFile {
    /// Opens and decodes `path` without copying tensor data.
    pub fn open(path: &Path) -> Result<OnnxFile, LoadError> {
        let file = std::fs::File::open(path).map_err(|source| LoadError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let len = file
            .metadata()
            .map_err(|source| LoadError::Open {
                path: path.to_path_buf(),
                source,
            })?
            .len();
        if len == 0 {
            return Err(LoadError::Empty {
                path: path.to_path_buf(),
            });
        }
        // SAFETY: the map is read-only. Another process truncating the file while we read
        // it would fault (SIGBUS), the usual caveat of every mmap-based model loader.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| LoadError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        // Only the protobuf framing is read, a few bytes per tensor: tell the kernel not
        // to read around each touched page (with an 8 MB read-ahead that alone maps half
        // of a large model).
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        let proto = decode(Bytes::from_owner(map), path)?;
        Ok(OnnxFile {
            path: path.to_path_buf(),
            file_bytes: len,
            proto,
        })
    }

    /// The main graph (checked to exist by `open`).
    pub fn graph(&self) -> &GraphProto {
        self.proto
            .graph
            .as_ref()
            .expect("OnnxFile::open rejects models without a graph")
    }

    /// Version of the default ("" / "ai.onnx") operator set.
    pub fn default_opset(&self) -> i64 {
        self.proto
            .opset_import
            .iter()
            .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
            .map(|o| o.version)
            .unwrap_or(1)
    }
}

/// Decodes a model from bytes (zero-copy for `raw_data` when `bytes` is backed by a map).
pub fn decode(bytes: Bytes, path: &Path) -> Result<ModelProto, LoadError> {
    // `Message::decode` hands prost a `&mut Bytes`, and `impl Buf for &mut T` does not
    // forward `copy_to_bytes`, so every `raw_data` would be copied. `merge` with the
    // `Bytes` itself keeps each `raw_data` a slice of the map.
    let mut proto = ModelProto::default();
    proto.merge(bytes).map_err(|e| LoadError::Decode {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    // Anything that is not an ONNX model but happens to parse as protobuf (or is empty of
    // the fields we know) has no graph or no IR version.
    if proto.graph.is_none() || proto.ir_version <= 0 {
        return Err(LoadError::NoGraph {
            path: path.to_path_buf(),
        });
    }
    Ok(proto)
}

/// Where a tensor's data lives and how many bytes it occupies there.
#[derive(Debug, Clone)]
pub enum Storage {
    /// Inside the model file (`raw_data` or a typed field).
    Inline,
    /// In an external file, at `offset`, `length` bytes.
    External { file: PathBuf },
}

impl TensorProto {
    /// Number of elements (product of dims; 1 for a scalar).
    pub fn numel(&self) -> u64 {
        self.dims.iter().map(|&d| d.max(0) as u64).product()
    }

    pub fn dtype(&self) -> DataType {
        DataType(self.data_type)
    }

    pub fn is_external(&self) -> bool {
        self.data_location == 1
    }

    fn external_entry(&self, key: &str) -> Option<&str> {
        self.external_data
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.as_str())
    }

    /// Checks that the data of an external tensor exists and is long enough.
    pub fn check_external(&self, model_path: &Path) -> Result<Storage, LoadError> {
        if !self.is_external() {
            return Ok(Storage::Inline);
        }
        let dir = model_path.parent().unwrap_or_else(|| Path::new("."));
        let err = |file: PathBuf, problem: String| LoadError::ExternalData {
            model: model_path.to_path_buf(),
            tensor: self.name.clone(),
            file,
            problem,
        };
        let Some(location) = self.external_entry("location") else {
            return Err(err(
                PathBuf::from("?"),
                "is not named (no 'location' entry)".into(),
            ));
        };
        let file = dir.join(location);
        let meta = std::fs::metadata(&file)
            .map_err(|e| err(file.clone(), format!("cannot be read ({e})")))?;
        let offset: u64 = self
            .external_entry("offset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let need = match self.external_entry("length").and_then(|v| v.parse().ok()) {
            Some(l) => l,
            None => stored_bytes(self.dtype(), self.numel()).unwrap_or(0),
        };
        if offset + need > meta.len() {
            return Err(err(
                file,
                format!(
                    "is too short ({} bytes; the tensor needs bytes {}..{})",
                    meta.len(),
                    offset,
                    offset + need
                ),
            ));
        }
        Ok(Storage::External { file })
    }

    /// Values as i64 when the tensor is integer-typed, inline and small (for shape math).
    pub fn int_values(&self, max_elems: u64) -> Option<Vec<i64>> {
        let n = self.numel();
        if n > max_elems || self.is_external() {
            return None;
        }
        let t = self.dtype();
        if !self.raw_data.is_empty() {
            let r = &self.raw_data[..];
            let v: Vec<i64> = match t.0 {
                7 => r
                    .chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect(),
                6 => r
                    .chunks_exact(4)
                    .map(|c| i32::from_le_bytes(c.try_into().unwrap_or([0; 4])) as i64)
                    .collect(),
                3 => r.iter().map(|&b| b as i8 as i64).collect(),
                2 | 9 => r.iter().map(|&b| b as i64).collect(),
                _ => return None,
            };
            return (v.len() as u64 == n).then_some(v);
        }
        let v: Vec<i64> = match t.0 {
            7 => self.int64_data.clone(),
            2..=6 | 9 => self.int32_data.iter().map(|&x| x as i64).collect(),
            13 => self.uint64_data.iter().map(|&x| x as i64).collect(),
            _ => return None,
        };
        (v.len() as u64 == n).then_some(v)
    }

    /// Values as f64 when the tensor is float-typed (FP32/FP64), inline and small.
    pub fn float_values(&self, max_elems: u64) -> Option<Vec<f64>> {
        let n = self.numel();
        if n > max_elems || self.is_external() {
            return None;
        }
        let v: Vec<f64> = match (self.dtype().0, self.raw_data.is_empty()) {
            (1, false) => self
                .raw_data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4])) as f64)
                .collect(),
            (11, false) => self
                .raw_data
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect(),
            (1, true) => self.float_data.iter().map(|&x| x as f64).collect(),
            (11, true) => self.double_data.clone(),
            _ => return None,
        };
        (v.len() as u64 == n).then_some(v)
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
    /// Human-readable type for values that are not tensors.
    pub fn kind(&self) -> &'static str {
        match &self.r#type {
            Some(t) if t.tensor_type.is_some() => "tensor",
            Some(t) if t.sequence_type.is_some() => "sequence",
            Some(t) if t.map_type.is_some() => "map",
            Some(t) if t.optional_type.is_some() => "optional",
            Some(t) if t.sparse_tensor_type.is_some() => "sparse_tensor",
            _ => "unknown",
        }
    }
}
