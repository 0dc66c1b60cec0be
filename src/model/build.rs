//! Building ONNX models in code: a small builder over the `onnx` messages.
//!
//! Used by the tests (every operator rule is checked on a model built here) and by tools
//! that generate models deterministically. It writes plain ONNX that `onnx.checker` and
//! ONNX Runtime accept; it does not validate what it is given.

use bytes::Bytes;
use prost::Message;

use super::onnx::{
    AttributeProto, DataType, DimensionProto, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, StringStringEntryProto, TensorProto, TensorShapeProto, TypeProto,
    TypeProtoTensor, ValueInfoProto, attr_type,
};

/// One attribute value.
#[derive(Debug, Clone)]
pub enum Attr {
    Int(i64),
    Float(f32),
    Str(&'static str),
    Ints(Vec<i64>),
    Floats(Vec<f32>),
    Tensor(TensorProto),
    Graph(GraphProto),
}

/// A node attribute, `("strides", Attr::Ints(vec![2, 2]))`.
pub fn attr(name: &str, value: Attr) -> AttributeProto {
    let mut a = AttributeProto {
        name: name.to_string(),
        ..Default::default()
    };
    match value {
        Attr::Int(v) => {
            a.r#type = attr_type::INT;
            a.i = v;
        }
        Attr::Float(v) => {
            a.r#type = attr_type::FLOAT;
            a.f = v;
        }
        Attr::Str(v) => {
            a.r#type = attr_type::STRING;
            a.s = Bytes::from(v.as_bytes().to_vec());
        }
        Attr::Ints(v) => {
            a.r#type = attr_type::INTS;
            a.ints = v;
        }
        Attr::Floats(v) => {
            a.r#type = attr_type::FLOATS;
            a.floats = v;
        }
        Attr::Tensor(t) => {
            a.r#type = attr_type::TENSOR;
            a.t = Some(t);
        }
        Attr::Graph(g) => {
            a.r#type = attr_type::GRAPH;
            a.g = Some(g);
        }
    }
    a
}

/// A tensor of `dims` and type `dt` whose raw data is `bytes` (little-endian).
pub fn tensor_raw(name: &str, dt: DataType, dims: &[i64], bytes: Vec<u8>) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        data_type: dt.0,
        dims: dims.to_vec(),
        raw_data: Bytes::from(bytes),
        ..Default::default()
    }
}

/// An FP32 tensor filled deterministically from `seed` (values in [-0.5, 0.5)).
pub fn tensor_f32(name: &str, dims: &[i64], seed: u64) -> TensorProto {
    let n: i64 = dims.iter().product();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut raw = Vec::with_capacity(4 * n as usize);
    for _ in 0..n {
        // xorshift64*: a deterministic, dependency-free filler for test weights.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let v = (r >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
        raw.extend_from_slice(&v.to_le_bytes());
    }
    tensor_raw(name, DataType::FLOAT, dims, raw)
}

/// An INT64 tensor with the given values.
pub fn tensor_i64(name: &str, dims: &[i64], values: &[i64]) -> TensorProto {
    let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    tensor_raw(name, DataType::INT64, dims, raw)
}

/// A tensor of `dt` with `numel` zero-filled elements of the stored size.
pub fn tensor_zeros(name: &str, dt: DataType, dims: &[i64]) -> TensorProto {
    let n: u64 = dims.iter().map(|&d| d as u64).product();
    let bytes = super::onnx::stored_bytes(dt, n).unwrap_or(0) as usize;
    tensor_raw(name, dt, dims, vec![0; bytes])
}

/// A tensor whose data lives in an external file `location` (relative to the model).
pub fn tensor_external(
    name: &str,
    dt: DataType,
    dims: &[i64],
    location: &str,
    offset: u64,
    length: u64,
) -> TensorProto {
    let kv = |k: &str, v: String| StringStringEntryProto {
        key: k.into(),
        value: v,
    };
    TensorProto {
        name: name.to_string(),
        data_type: dt.0,
        dims: dims.to_vec(),
        data_location: 1,
        external_data: vec![
            kv("location", location.to_string()),
            kv("offset", offset.to_string()),
            kv("length", length.to_string()),
        ],
        ..Default::default()
    }
}

/// A value description: `dims` entries are numbers, or `-1` for a symbolic dim named
/// after the value (`x_d0`).
pub fn value_info(name: &str, dt: DataType, dims: &[i64]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            if d >= 0 {
                DimensionProto {
                    dim_value: Some(d),
                    dim_param: None,
                }
            } else {
                DimensionProto {
                    dim_value: None,
                    dim_param: Some(format!("{name}_d{i}")),
                }
            }
        })
        .collect();
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: dt.0,
                shape: Some(TensorShapeProto { dim }),
            }),
            ..Default::default()
        }),
    }
}

/// A value description whose dims are written as `dim_value` verbatim, negative and zero
/// ones included (Paddle's and some TensorFlow exporters' way of marking a dynamic dim);
/// `None` for the shape writes no shape at all.
pub fn value_info_verbatim(name: &str, dt: DataType, dims: Option<&[i64]>) -> ValueInfoProto {
    let shape = dims.map(|dims| TensorShapeProto {
        dim: dims
            .iter()
            .map(|&d| DimensionProto {
                dim_value: Some(d),
                dim_param: None,
            })
            .collect(),
    });
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: dt.0,
                shape,
            }),
            ..Default::default()
        }),
    }
}

/// A node of domain `domain` (e.g. `com.microsoft`).
pub fn node_in(
    domain: &str,
    op: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        domain: domain.to_string(),
        ..node(op, inputs, outputs, attrs)
    }
}

/// A node of the default domain.
pub fn node(op: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        name: format!("{op}_{}", outputs.first().copied().unwrap_or("")),
        op_type: op.to_string(),
        domain: String::new(),
        attribute: attrs,
    }
}

/// Builds a graph and wraps it into a model.
#[derive(Debug, Clone, Default)]
pub struct GraphBuilder {
    pub graph: GraphProto,
}

impl GraphBuilder {
    pub fn new(name: &str) -> GraphBuilder {
        GraphBuilder {
            graph: GraphProto {
                name: name.to_string(),
                ..Default::default()
            },
        }
    }
    pub fn input(mut self, name: &str, dt: DataType, dims: &[i64]) -> Self {
        self.graph.input.push(value_info(name, dt, dims));
        self
    }
    pub fn output(mut self, name: &str, dt: DataType, dims: &[i64]) -> Self {
        self.graph.output.push(value_info(name, dt, dims));
        self
    }
    /// An output of unknown shape (for models other tools must accept as they are).
    pub fn output_unshaped(mut self, name: &str, dt: DataType) -> Self {
        self.graph.output.push(value_info_verbatim(name, dt, None));
        self
    }
    pub fn init(mut self, t: TensorProto) -> Self {
        self.graph.initializer.push(t);
        self
    }
    pub fn node(mut self, n: NodeProto) -> Self {
        self.graph.node.push(n);
        self
    }
    /// The model, importing the default opset `opset`.
    pub fn model(self, opset: i64) -> ModelProto {
        self.model_with(opset, &[])
    }
    /// The model, importing the default opset `opset` and the `extra` (domain, version) sets.
    pub fn model_with(self, opset: i64, extra: &[(&str, i64)]) -> ModelProto {
        let mut opset_import = vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }];
        opset_import.extend(extra.iter().map(|(d, v)| OperatorSetIdProto {
            domain: d.to_string(),
            version: *v,
        }));
        ModelProto {
            ir_version: if opset >= 21 { 10 } else { 8 },
            opset_import,
            producer_name: "acceval-build".into(),
            producer_version: env!("CARGO_PKG_VERSION").into(),
            graph: Some(self.graph),
            ..Default::default()
        }
    }
    pub fn encode(self, opset: i64) -> Vec<u8> {
        self.model(opset).encode_to_vec()
    }
    pub fn encode_with(self, opset: i64, extra: &[(&str, i64)]) -> Vec<u8> {
        self.model_with(opset, extra).encode_to_vec()
    }
}

/// A chain of `layers` Gemm nodes with zero-filled `width`×`width` FP32 weights: a model of
/// `layers`·`width`²·4 bytes of parameters, for timing and memory checks.
pub fn gemm_chain(layers: u64, width: i64) -> GraphBuilder {
    let mut g = GraphBuilder::new("gemm_chain").input("x0", DataType::FLOAT, &[1, width]);
    for i in 0..layers {
        let w = format!("w{i}");
        g = g
            .init(tensor_zeros(&w, DataType::FLOAT, &[width, width]))
            .node(node(
                "Gemm",
                &[&format!("x{i}"), &w],
                &[&format!("x{}", i + 1)],
                vec![],
            ));
    }
    g.output(&format!("x{layers}"), DataType::FLOAT, &[1, width])
}
