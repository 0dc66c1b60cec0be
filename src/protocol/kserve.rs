//! The KServe Open Inference Protocol v2 over HTTP, as Triton speaks it: JSON tensors
//! (nested or flat `data`) and Triton's binary tensor extension (a JSON header of
//! `Inference-Header-Content-Length` bytes followed by raw little-endian tensors, each input
//! or output carrying `parameters.binary_data_size`). Both `acceval serve` (decode requests,
//! encode responses and metadata) and `acceval qps` (encode requests, check responses) use
//! this module.
//!
//! Decoding is typed and bounded by the body: the JSON header is read into the structs below
//! with each tensor's `data` kept as a borrowed slice of the body, then parsed straight into
//! a Vec of the declared element type (no `serde_json::Value` tree, which took ~20× the body).
//! Every size taken from the request is checked arithmetic; a number outside its type's range
//! (FP32 `1e39`, INT8 `300`) and an input or output named twice are errors naming the tensor.

use std::collections::HashSet;
use std::fmt;

use ndarray::{ArrayD, IxDyn};
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::model::onnx::DataType;
use crate::model::tensor::{HostTensor, TensorData};

/// The request/response header that announces binary tensor data.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

/// The v2 datatype name of an ONNX element type, for the types acceval exchanges.
pub fn datatype_name(dt: DataType) -> &'static str {
    match dt {
        DataType::FLOAT => "FP32",
        DataType::DOUBLE => "FP64",
        DataType::INT64 => "INT64",
        DataType::INT32 => "INT32",
        DataType::INT8 => "INT8",
        DataType::UINT8 => "UINT8",
        DataType::BOOL => "BOOL",
        DataType::FLOAT16 => "FP16",
        DataType::BFLOAT16 => "BF16",
        DataType(8) => "BYTES",
        other => other.name(),
    }
}

/// The element type of a v2 datatype name.
pub fn parse_datatype(s: &str) -> Option<DataType> {
    Some(match s {
        "FP32" => DataType::FLOAT,
        "FP64" => DataType::DOUBLE,
        "INT64" => DataType::INT64,
        "INT32" => DataType::INT32,
        "INT8" => DataType::INT8,
        "UINT8" => DataType::UINT8,
        "BOOL" => DataType::BOOL,
        "FP16" => DataType::FLOAT16,
        "BF16" => DataType::BFLOAT16,
        _ => return None,
    })
}

fn element_bytes(dt: DataType) -> usize {
    match dt {
        DataType::FLOAT | DataType::INT32 => 4,
        DataType::DOUBLE | DataType::INT64 => 8,
        _ => 1,
    }
}

/// One input as a request carries it.
#[derive(Debug)]
pub struct RequestInput {
    pub name: String,
    pub datatype: String,
    pub shape: Vec<usize>,
    pub data: TensorData,
}

/// A decoded inference request.
#[derive(Debug)]
pub struct Request {
    /// The request's `id` (a string in v2), echoed in the response.
    pub id: Option<String>,
    pub inputs: Vec<RequestInput>,
    /// The outputs asked for, with whether each is wanted as binary (`None` = request default).
    pub outputs: Option<Vec<(String, Option<bool>)>>,
    /// `parameters.binary_data_output`.
    pub binary_output: bool,
}

impl Request {
    /// Bytes the decoded input tensors hold (what decoding allocated).
    pub fn tensor_bytes(&self) -> usize {
        self.inputs
            .iter()
            .map(|i| i.data.len() * element_bytes(i.data.dtype()))
            .sum()
    }
}

// ---- the wire, as decoded ----

#[derive(Deserialize)]
struct WireRequest<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(borrow)]
    inputs: Vec<WireTensor<'a>>,
    #[serde(default)]
    outputs: Option<Vec<WireOutput>>,
    #[serde(default)]
    parameters: Option<RequestParameters>,
}

#[derive(Deserialize)]
struct WireResponse<'a> {
    #[serde(borrow)]
    outputs: Vec<WireTensor<'a>>,
}

/// An input of a request or an output of a response; `data` stays unparsed text until the
/// datatype and shape are known, wherever they stand in the object.
#[derive(Deserialize)]
struct WireTensor<'a> {
    name: String,
    datatype: String,
    shape: Vec<u64>,
    #[serde(default)]
    parameters: Option<TensorParameters>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct TensorParameters {
    #[serde(default)]
    binary_data_size: Option<u64>,
}

#[derive(Deserialize)]
struct WireOutput {
    name: String,
    #[serde(default)]
    parameters: Option<OutputParameters>,
}

#[derive(Deserialize)]
struct OutputParameters {
    #[serde(default)]
    binary_data: Option<bool>,
}

#[derive(Deserialize)]
struct RequestParameters {
    #[serde(default)]
    binary_data_output: Option<bool>,
}

/// Splits a body into its JSON header and binary part by `Inference-Header-Content-Length`.
pub fn split_body<'a>(
    body: &'a [u8],
    header_len: Option<&str>,
) -> Result<(&'a [u8], &'a [u8]), String> {
    match header_len {
        None => Ok((body, &[])),
        Some(v) => {
            let n: usize = v.trim().parse().map_err(|_| {
                format!("Inference-Header-Content-Length '{v}' is not a byte count")
            })?;
            if n > body.len() {
                return Err(format!(
                    "Inference-Header-Content-Length is {n} but the body holds only {} bytes",
                    body.len()
                ));
            }
            Ok(body.split_at(n))
        }
    }
}

/// serde_json's message without its " at line L column C" (positions inside a tensor's
/// `data` would be relative to that slice, not to the body).
fn message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rsplit_once(" at line ") {
        Some((m, _)) => m.to_string(),
        None => s,
    }
}

fn parse_head<'a, T: Deserialize<'a>>(head: &'a [u8], what: &str) -> Result<T, String> {
    serde_json::from_slice(head).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => {
            format!("the {what} does not follow the v2 protocol: {e}")
        }
        _ => format!("the {what} is not valid JSON: {e}"),
    })
}

// ---- tensor data ----

/// An element type `data` can be decoded into, with its range checks.
trait Element: Sized {
    const NAME: &'static str;
    fn from_i64(v: i64) -> Option<Self>;
    fn from_u64(v: u64) -> Option<Self>;
    /// `Err` with a reason when the number is outside the type (e.g. FP32 overflow).
    fn from_f64(v: f64) -> Result<Self, &'static str>;
    fn from_bool(_: bool) -> Option<Self> {
        None
    }
}

impl Element for f32 {
    const NAME: &'static str = "FP32";
    fn from_i64(v: i64) -> Option<f32> {
        Some(v as f32)
    }
    fn from_u64(v: u64) -> Option<f32> {
        Some(v as f32)
    }
    fn from_f64(v: f64) -> Result<f32, &'static str> {
        let f = v as f32;
        if f.is_finite() {
            Ok(f)
        } else {
            Err("overflows FP32 (largest finite value 3.4028235e38)")
        }
    }
}

impl Element for f64 {
    const NAME: &'static str = "FP64";
    fn from_i64(v: i64) -> Option<f64> {
        Some(v as f64)
    }
    fn from_u64(v: u64) -> Option<f64> {
        Some(v as f64)
    }
    fn from_f64(v: f64) -> Result<f64, &'static str> {
        Ok(v)
    }
}

macro_rules! integer_element {
    ($t:ty, $name:literal) => {
        impl Element for $t {
            const NAME: &'static str = $name;
            fn from_i64(v: i64) -> Option<$t> {
                <$t>::try_from(v).ok()
            }
            fn from_u64(v: u64) -> Option<$t> {
                <$t>::try_from(v).ok()
            }
            fn from_f64(_: f64) -> Result<$t, &'static str> {
                Err(concat!("is not an integer, as ", $name, " needs"))
            }
        }
    };
}
integer_element!(i64, "INT64");
integer_element!(i32, "INT32");
integer_element!(i8, "INT8");
integer_element!(u8, "UINT8");

impl Element for bool {
    const NAME: &'static str = "BOOL";
    fn from_i64(_: i64) -> Option<bool> {
        None
    }
    fn from_u64(_: u64) -> Option<bool> {
        None
    }
    fn from_f64(_: f64) -> Result<bool, &'static str> {
        Err("is not a BOOL")
    }
    fn from_bool(v: bool) -> Option<bool> {
        Some(v)
    }
}

/// A number as a client would have written it: `1e39`, not forty digits.
struct Shown(f64);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let a = self.0.abs();
        if a != 0.0 && !(1e-5..1e16).contains(&a) {
            write!(f, "{:e}", self.0)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Flattens nested arrays (or one scalar) of `data` into `out`, at most `max` elements.
struct Flat<'o, T> {
    out: &'o mut Vec<T>,
    max: usize,
}

impl<T: Element> Flat<'_, T> {
    fn push<E: de::Error>(self, v: Option<T>, shown: &dyn fmt::Display) -> Result<(), E> {
        let i = self.out.len();
        let v =
            v.ok_or_else(|| E::custom(format!("element {i} ({shown}) is not a {}", T::NAME)))?;
        self.put(v)
    }

    fn put<E: de::Error>(self, v: T) -> Result<(), E> {
        if self.out.len() >= self.max {
            return Err(E::custom(format!(
                "'data' has more than the {} elements its shape holds",
                self.max
            )));
        }
        self.out.push(v);
        Ok(())
    }
}

impl<'de, T: Element> DeserializeSeed<'de> for Flat<'_, T> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Element> Visitor<'de> for Flat<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} numbers, in nested or flat arrays", T::NAME)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let max = self.max;
        while seq
            .next_element_seed(Flat {
                out: &mut *self.out,
                max,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.push(T::from_i64(v), &v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.push(T::from_u64(v), &v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        match T::from_f64(v) {
            Ok(x) => self.put(x),
            Err(why) => Err(E::custom(format!(
                "element {} ({}) {why}",
                self.out.len(),
                Shown(v)
            ))),
        }
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.push(T::from_bool(v), &v)
    }
}

fn parse_flat<T: Element>(text: &str, shape: &[usize], n: usize) -> Result<ArrayD<T>, String> {
    // Never trust the shape for the allocation: a JSON element takes at least 2 bytes.
    let mut out: Vec<T> = Vec::with_capacity(n.min(text.len() / 2 + 1));
    let mut de = serde_json::Deserializer::from_str(text);
    Flat {
        out: &mut out,
        max: n,
    }
    .deserialize(&mut de)
    .map_err(|e| message(&e))?;
    if out.len() != n {
        return Err(format!(
            "shape {shape:?} holds {n} elements but 'data' has {}",
            out.len()
        ));
    }
    ArrayD::from_shape_vec(IxDyn(shape), out).map_err(|e| e.to_string())
}

fn tensor_from_json(
    dt: DataType,
    shape: &[usize],
    n: usize,
    data: &RawValue,
) -> Result<TensorData, String> {
    let t = data.get();
    Ok(match dt {
        DataType::FLOAT => TensorData::F32(parse_flat(t, shape, n)?),
        DataType::DOUBLE => TensorData::F64(parse_flat(t, shape, n)?),
        DataType::INT64 => TensorData::I64(parse_flat(t, shape, n)?),
        DataType::INT32 => TensorData::I32(parse_flat(t, shape, n)?),
        DataType::INT8 => TensorData::I8(parse_flat(t, shape, n)?),
        DataType::UINT8 => TensorData::U8(parse_flat(t, shape, n)?),
        DataType::BOOL => TensorData::Bool(parse_flat(t, shape, n)?),
        other => {
            return Err(format!(
                "datatype {} is not supported; acceval serves FP32, FP64, INT64, INT32, INT8, UINT8, BOOL",
                datatype_name(other)
            ));
        }
    })
}

fn tensor_from_bytes(
    dt: DataType,
    shape: &[usize],
    n: usize,
    b: &[u8],
) -> Result<TensorData, String> {
    let need = n.checked_mul(element_bytes(dt));
    if need != Some(b.len()) {
        return Err(format!(
            "binary_data_size is {} bytes but shape {shape:?} of {} needs {}",
            b.len(),
            datatype_name(dt),
            need.map_or("more than 2^64".to_string(), |n| n.to_string())
        ));
    }
    let dim = IxDyn(shape);
    macro_rules! le {
        ($t:ty, $w:expr) => {
            ArrayD::from_shape_vec(
                dim,
                b.chunks_exact($w)
                    .map(|c| {
                        let mut a = [0u8; $w];
                        a.copy_from_slice(c);
                        <$t>::from_le_bytes(a)
                    })
                    .collect(),
            )
            .map_err(|e| e.to_string())?
        };
    }
    Ok(match dt {
        DataType::FLOAT => TensorData::F32(le!(f32, 4)),
        DataType::DOUBLE => TensorData::F64(le!(f64, 8)),
        DataType::INT64 => TensorData::I64(le!(i64, 8)),
        DataType::INT32 => TensorData::I32(le!(i32, 4)),
        DataType::INT8 => TensorData::I8(le!(i8, 1)),
        DataType::UINT8 => TensorData::U8(le!(u8, 1)),
        DataType::BOOL => TensorData::Bool(
            ArrayD::from_shape_vec(dim, b.iter().map(|&x| x != 0).collect())
                .map_err(|e| e.to_string())?,
        ),
        other => {
            return Err(format!(
                "datatype {} is not supported in binary form",
                datatype_name(other)
            ));
        }
    })
}

/// Decodes the tensors of a request (`kind` "input") or a response ("output"), taking
/// binary data from `bin` in order.
fn decode_tensors(
    wire: Vec<WireTensor>,
    mut bin: &[u8],
    kind: &str,
) -> Result<Vec<RequestInput>, String> {
    let mut seen = HashSet::new();
    for t in &wire {
        if !seen.insert(t.name.as_str()) {
            return Err(format!(
                "{kind} '{}' is given twice; each {kind} may appear once",
                t.name
            ));
        }
    }
    let mut out = Vec::with_capacity(wire.len());
    for t in wire {
        let what = format!("{kind} '{}'", t.name);
        let dt = parse_datatype(&t.datatype)
            .ok_or_else(|| format!("{what}: unknown datatype '{}'", t.datatype))?;
        let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
        let n = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| format!("{what}: shape {shape:?} has more than 2^64 elements"))?;
        let size = t.parameters.and_then(|p| p.binary_data_size);
        let data = match (size, t.data) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{what} has both 'data' and binary_data_size; give one"
                ));
            }
            (Some(size), None) => {
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                if size > bin.len() {
                    return Err(format!(
                        "{what}: binary_data_size {size} exceeds the {} binary bytes left in the body",
                        bin.len()
                    ));
                }
                let (b, rest) = bin.split_at(size);
                bin = rest;
                tensor_from_bytes(dt, &shape, n, b)
            }
            (None, Some(d)) => tensor_from_json(dt, &shape, n, d),
            (None, None) => Err("gives neither 'data' nor parameters.binary_data_size".to_string()),
        }
        .map_err(|e| format!("{what}: {e}"))?;
        out.push(RequestInput {
            name: t.name,
            datatype: t.datatype,
            shape,
            data,
        });
    }
    if !bin.is_empty() {
        return Err(format!(
            "{} bytes of binary data follow the {kind}s unclaimed",
            bin.len()
        ));
    }
    Ok(out)
}

/// Decodes a request body (JSON, or JSON header + binary tensors).
pub fn decode_request(body: &[u8], header_len: Option<&str>) -> Result<Request, super::Error> {
    wire_request(body, header_len).map_err(super::Error::InvalidRequest)
}

fn wire_request(body: &[u8], header_len: Option<&str>) -> Result<Request, String> {
    let (head, bin) = split_body(body, header_len)?;
    let w: WireRequest = parse_head(head, "request")?;
    let outputs = match w.outputs {
        None => None,
        Some(list) => {
            let mut seen = HashSet::new();
            for o in &list {
                if !seen.insert(o.name.as_str()) {
                    return Err(format!(
                        "output '{}' is asked for twice; each output may appear once",
                        o.name
                    ));
                }
            }
            Some(
                list.into_iter()
                    .map(|o| (o.name, o.parameters.and_then(|p| p.binary_data)))
                    .collect(),
            )
        }
    };
    Ok(Request {
        id: w.id,
        inputs: decode_tensors(w.inputs, bin, "input")?,
        outputs,
        binary_output: w
            .parameters
            .and_then(|p| p.binary_data_output)
            .unwrap_or(false),
    })
}

/// Decodes a response body into its output tensors (`qps` checks the first response).
pub fn decode_response(
    body: &[u8],
    header_len: Option<&str>,
) -> Result<Vec<HostTensor>, super::Error> {
    let decoded = split_body(body, header_len).and_then(|(head, bin)| {
        let w: WireResponse = parse_head(head, "response")?;
        decode_tensors(w.outputs, bin, "output")
    });
    Ok(decoded
        .map_err(super::Error::InvalidResponse)?
        .into_iter()
        .map(|i| HostTensor {
            name: i.name,
            data: i.data,
        })
        .collect())
}

// ---- the wire, as encoded (fields in alphabetical order, as the bodies always had) ----

/// A tensor's `data`, flat in row-major order. FP32 values are written as the f64 they widen
/// to (as acceval always wrote them); a non-finite value becomes `null`.
struct JsonData<'a>(&'a TensorData);

impl Serialize for JsonData<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            TensorData::F32(a) => s.collect_seq(a.iter().map(|&x| x as f64)),
            TensorData::F64(a) => s.collect_seq(a.iter()),
            TensorData::I64(a) => s.collect_seq(a.iter()),
            TensorData::I32(a) => s.collect_seq(a.iter()),
            TensorData::I8(a) => s.collect_seq(a.iter()),
            TensorData::U8(a) => s.collect_seq(a.iter()),
            TensorData::Bool(a) => s.collect_seq(a.iter()),
        }
    }
}

#[derive(Serialize)]
struct TensorOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<JsonData<'a>>,
    datatype: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<BinaryDataSize>,
    shape: &'a [usize],
}

#[derive(Serialize)]
struct BinaryDataSize {
    binary_data_size: usize,
}

#[derive(Serialize)]
struct RequestOut<'a> {
    inputs: Vec<TensorOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<BinaryDataOutput>,
}

#[derive(Serialize)]
struct BinaryDataOutput {
    binary_data_output: bool,
}

#[derive(Serialize)]
struct ResponseOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    model_name: &'a str,
    model_version: &'a str,
    outputs: Vec<TensorOut<'a>>,
}

/// `GET /v2`: the server metadata.
#[derive(Debug, Serialize)]
pub struct ServerMetadata<'a> {
    pub engine: &'a str,
    pub extensions: &'a [&'a str],
    pub name: &'a str,
    pub version: &'a str,
}

/// `GET /v2/models/NAME`: the model metadata.
#[derive(Debug, Serialize)]
pub struct ModelMetadata<'a> {
    pub inputs: Vec<TensorMetadata<'a>>,
    pub name: &'a str,
    pub outputs: Vec<TensorMetadata<'a>>,
    pub platform: &'a str,
    pub versions: &'a [&'a str],
}

/// One input or output in the model metadata (`-1` = a dynamic dimension).
#[derive(Debug, Serialize)]
pub struct TensorMetadata<'a> {
    pub datatype: &'static str,
    pub name: &'a str,
    pub shape: Vec<i64>,
}

/// The body of every error response: `{"error": "..."}`.
#[derive(Debug, Serialize)]
pub struct ErrorBody<'a> {
    pub error: &'a str,
}

/// A body: JSON header plus optional binary part, and the header length to announce when
/// the binary part is not empty.
pub struct Body {
    pub bytes: Vec<u8>,
    pub header_len: Option<usize>,
}

fn le_bytes(d: &TensorData, out: &mut Vec<u8>) {
    match d {
        TensorData::F32(a) => a
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        TensorData::F64(a) => a
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        TensorData::I64(a) => a
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        TensorData::I32(a) => a
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        TensorData::I8(a) => a
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        TensorData::U8(a) => out.extend(a.iter().copied()),
        TensorData::Bool(a) => out.extend(a.iter().map(|&b| b as u8)),
    }
}

/// The tensors of a body, each as JSON `data` or appended to `bin` when it goes as binary.
fn tensors_out<'a>(tensors: &[(&'a HostTensor, bool)], bin: &mut Vec<u8>) -> Vec<TensorOut<'a>> {
    tensors
        .iter()
        .map(|&(t, binary)| {
            let before = bin.len();
            if binary {
                le_bytes(&t.data, bin);
            }
            TensorOut {
                data: (!binary).then_some(JsonData(&t.data)),
                datatype: datatype_name(t.data.dtype()),
                name: &t.name,
                parameters: binary.then(|| BinaryDataSize {
                    binary_data_size: bin.len() - before,
                }),
                shape: t.data.shape(),
            }
        })
        .collect()
}

fn body_of(head: &impl Serialize, bin: Vec<u8>) -> Body {
    // Structs of strings, numbers and sequences always serialise.
    let mut bytes = serde_json::to_vec(head).expect("v2 bodies serialise");
    let header_len = (!bin.is_empty()).then_some(bytes.len());
    bytes.extend_from_slice(&bin);
    Body { bytes, header_len }
}

/// An inference request for `inputs`, binary or JSON, asking for binary outputs when `binary`.
pub fn encode_request(inputs: &[HostTensor], binary: bool) -> Body {
    let mut bin = Vec::new();
    let t: Vec<_> = inputs.iter().map(|t| (t, binary)).collect();
    let head = RequestOut {
        inputs: tensors_out(&t, &mut bin),
        parameters: binary.then_some(BinaryDataOutput {
            binary_data_output: true,
        }),
    };
    body_of(&head, bin)
}

/// An inference response.
pub fn encode_response(model: &str, id: Option<&str>, outputs: &[(&HostTensor, bool)]) -> Body {
    let mut bin = Vec::new();
    let head = ResponseOut {
        id,
        model_name: model,
        model_version: "1",
        outputs: tensors_out(outputs, &mut bin),
    };
    body_of(&head, bin)
}

/// An error response's body.
pub fn error_body(message: &str) -> Vec<u8> {
    body_of(&ErrorBody { error: message }, Vec::new()).bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    /// The encoder as it was, on `serde_json::Value` (sorted keys): the typed one must write
    /// the same bytes.
    fn encode_with_values(
        mut top: Map<String, Value>,
        key: &str,
        tensors: &[(&HostTensor, bool)],
    ) -> Body {
        let mut bin = Vec::new();
        let list: Vec<Value> = tensors
            .iter()
            .map(|(t, binary)| {
                let mut o = json!({"name": t.name, "datatype": datatype_name(t.data.dtype()), "shape": t.data.shape()});
                if *binary {
                    let before = bin.len();
                    le_bytes(&t.data, &mut bin);
                    o["parameters"] = json!({"binary_data_size": bin.len() - before});
                } else {
                    o["data"] = match &t.data {
                        TensorData::F32(a) => a.iter().map(|&x| json!(x)).collect(),
                        TensorData::F64(a) => a.iter().map(|&x| json!(x)).collect(),
                        TensorData::I64(a) => a.iter().map(|&x| json!(x)).collect(),
                        TensorData::I32(a) => a.iter().map(|&x| json!(x)).collect(),
                        TensorData::I8(a) => a.iter().map(|&x| json!(x)).collect(),
                        TensorData::U8(a) => a.iter().map(|&x| json!(x)).collect(),
                        TensorData::Bool(a) => a.iter().map(|&x| json!(x)).collect(),
                    };
                }
                o
            })
            .collect();
        top.insert(key.to_string(), Value::Array(list));
        let mut bytes = serde_json::to_vec(&Value::Object(top)).unwrap();
        let header_len = (!bin.is_empty()).then_some(bytes.len());
        bytes.extend_from_slice(&bin);
        Body { bytes, header_len }
    }

    #[test]
    fn typed_encoding_writes_the_bytes_the_value_tree_wrote() {
        let f = t(
            "f",
            TensorData::F32(
                ArrayD::from_shape_vec(
                    IxDyn(&[2, 3]),
                    vec![0.1, -2.5, 3.4e38, f32::MIN_POSITIVE, f32::NAN, 1e-7],
                )
                .unwrap(),
            ),
        );
        let d = t(
            "d",
            TensorData::F64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![0.1, -1e300]).unwrap()),
        );
        let i = t(
            "i",
            TensorData::I64(
                ArrayD::from_shape_vec(IxDyn(&[3]), vec![i64::MIN, 0, i64::MAX]).unwrap(),
            ),
        );
        let b = t(
            "b",
            TensorData::Bool(ArrayD::from_shape_vec(IxDyn(&[2]), vec![true, false]).unwrap()),
        );
        let u = t(
            "u\"q",
            TensorData::U8(ArrayD::from_shape_vec(IxDyn(&[]), vec![255]).unwrap()),
        );
        let all = [&f, &d, &i, &b, &u];
        for binary in [false, true] {
            let owned: Vec<HostTensor> = all.iter().map(|x| (*x).clone()).collect();
            let mut top = Map::new();
            if binary {
                top.insert("parameters".into(), json!({"binary_data_output": true}));
            }
            let pairs: Vec<_> = all.iter().map(|x| (*x, binary)).collect();
            let old = encode_with_values(top, "inputs", &pairs);
            let new = encode_request(&owned, binary);
            assert_eq!(
                String::from_utf8_lossy(&new.bytes),
                String::from_utf8_lossy(&old.bytes)
            );
            assert_eq!(new.header_len, old.header_len);
            let mixed: Vec<_> = all
                .iter()
                .enumerate()
                .map(|(k, x)| (*x, binary ^ (k % 2 == 0)))
                .collect();
            for id in [None, Some("r-1")] {
                let mut top = Map::new();
                top.insert("model_name".into(), json!("m"));
                top.insert("model_version".into(), json!("1"));
                if let Some(id) = id {
                    top.insert("id".into(), json!(id));
                }
                let old = encode_with_values(top, "outputs", &mixed);
                let new = encode_response("m", id, &mixed);
                assert_eq!(new.bytes, old.bytes);
                assert_eq!(new.header_len, old.header_len);
            }
        }
        assert_eq!(
            error_body("a \"b\""),
            json!({"error": "a \"b\""}).to_string().into_bytes()
        );
    }

    #[test]
    fn out_of_range_numbers_and_repeated_names_name_the_tensor() {
        let req = |dt: &str, data: &str| {
            format!(r#"{{"inputs":[{{"name":"x","shape":[2],"datatype":"{dt}","data":{data}}}]}}"#)
        };
        for (dt, data, want) in [
            (
                "FP32",
                "[1e39, 0]",
                "input 'x': element 0 (1e39) overflows FP32",
            ),
            (
                "FP32",
                "[0, -3.5e38]",
                "input 'x': element 1 (-3.5e38) overflows FP32",
            ),
            ("FP64", "[1e400, 0]", "number out of range"),
            (
                "INT8",
                "[1, 128]",
                "input 'x': element 1 (128) is not a INT8",
            ),
            (
                "UINT8",
                "[-1, 1]",
                "input 'x': element 0 (-1) is not a UINT8",
            ),
            ("INT64", "[9223372036854775808, 1]", "is not a INT64"),
            (
                "INT32",
                "[1.5, 1]",
                "element 0 (1.5) is not an integer, as INT32 needs",
            ),
            ("BOOL", "[1, true]", "element 0 (1) is not a BOOL"),
            ("FP32", "[\"1\", 2]", "invalid type: string"),
            ("FP32", "[1, 2, 3]", "more than the 2 elements"),
            ("FP32", "[[1], {}]", "invalid type: map"),
        ] {
            let e = decode_request(req(dt, data).as_bytes(), None)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{dt} {data}: {e}");
            assert!(
                !e.contains(" at line 1"),
                "{e}: a position inside 'data' means nothing"
            );
        }
        // The largest finite FP32 and the values that round to it still pass.
        let r = decode_request(
            req("FP32", "[3.4028235e38, -3.4028235e38]").as_bytes(),
            None,
        )
        .unwrap();
        assert_eq!(
            r.inputs[0].data.to_f64(),
            vec![f32::MAX as f64, f32::MIN as f64]
        );
        let twice = br#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]},{"name":"x","shape":[1],"datatype":"FP32","data":[2]}]}"#;
        assert!(
            decode_request(twice, None)
                .unwrap_err()
                .to_string()
                .contains("input 'x' is given twice")
        );
        let outs = br#"{"inputs":[],"outputs":[{"name":"y"},{"name":"y"}]}"#;
        assert!(
            decode_request(outs, None)
                .unwrap_err()
                .to_string()
                .contains("output 'y' is asked for twice")
        );
        let both = br#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1],"parameters":{"binary_data_size":4}}]}"#;
        assert!(
            decode_request(both, None)
                .unwrap_err()
                .to_string()
                .contains("both 'data' and binary_data_size")
        );
        let dup_key =
            br#"{"inputs":[{"name":"x","name":"y","shape":[1],"datatype":"FP32","data":[1]}]}"#;
        assert!(
            decode_request(dup_key, None)
                .unwrap_err()
                .to_string()
                .contains("duplicate field `name`")
        );
    }

    #[test]
    fn sizes_from_the_request_never_overflow_or_allocate() {
        // 2^32 x 2^32 elements: checked, not wrapped to 0.
        let huge = br#"{"inputs":[{"name":"x","shape":[4294967296,4294967296],"datatype":"FP32","data":[]}]}"#;
        assert!(
            decode_request(huge, None)
                .unwrap_err()
                .to_string()
                .contains("more than 2^64 elements")
        );
        // A shape of 10^12 elements with two numbers of data: no 4 TB allocation up front.
        let big =
            br#"{"inputs":[{"name":"x","shape":[1000000000000],"datatype":"FP32","data":[1,2]}]}"#;
        assert!(
            decode_request(big, None)
                .unwrap_err()
                .to_string()
                .contains("holds 1000000000000 elements but 'data' has 2")
        );
        let bin = br#"{"inputs":[{"name":"x","shape":[4611686018427387904],"datatype":"FP32","parameters":{"binary_data_size":0}}]}"#;
        let n = bin.len().to_string();
        assert!(
            decode_request(bin, Some(&n))
                .unwrap_err()
                .to_string()
                .contains("needs more than 2^64")
        );
        let deep = format!(
            r#"{{"inputs":[{{"name":"x","shape":[1],"datatype":"FP32","data":{}1{}}}]}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(
            decode_request(deep.as_bytes(), None)
                .unwrap_err()
                .to_string()
                .contains("recursion limit")
        );
    }

    #[test]
    fn fields_in_any_order_and_unknown_ones_ignored() {
        let body = br#"{"parameters":{"binary_data_output":false,"x":[1,{"a":2}]},"inputs":[{"data":[[1,2],[3,4]],"parameters":{"content_type":"np"},"shape":[2,2],"datatype":"INT32","name":"x"}],"id":"q","extra":{}}"#;
        let r = decode_request(body, None).unwrap();
        assert_eq!(r.id.as_deref(), Some("q"));
        assert_eq!(r.inputs[0].data.to_f64(), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.tensor_bytes(), 16);
        let scalar = br#"{"inputs":[{"name":"s","shape":[],"datatype":"FP64","data":2.5}]}"#;
        assert_eq!(
            decode_request(scalar, None).unwrap().inputs[0]
                .data
                .to_f64(),
            vec![2.5]
        );
        assert!(
            decode_request(
                br#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32"}]}"#,
                None
            )
            .unwrap_err()
            .to_string()
            .contains("neither 'data' nor")
        );
        assert!(
            decode_request(br#"{"inputs":[]}"#, None)
                .unwrap()
                .inputs
                .is_empty()
        );
        assert!(
            decode_request(br#"{"id":5,"inputs":[]}"#, None)
                .unwrap_err()
                .to_string()
                .contains("does not follow the v2 protocol")
        );
    }

    fn t(name: &str, d: TensorData) -> HostTensor {
        HostTensor {
            name: name.into(),
            data: d,
        }
    }

    #[test]
    fn json_and_binary_round_trip() {
        let a = t(
            "x",
            TensorData::F32(
                ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1.0, -2.5, 3.0, 4.0]).unwrap(),
            ),
        );
        let b = t(
            "m",
            TensorData::I64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![1, -7, 9]).unwrap()),
        );
        for binary in [false, true] {
            let body = encode_request(&[a.clone(), b.clone()], binary);
            assert_eq!(body.header_len.is_some(), binary);
            let hl = body.header_len.map(|n| n.to_string());
            let r = decode_request(&body.bytes, hl.as_deref()).unwrap();
            assert_eq!(r.inputs.len(), 2);
            assert_eq!(r.inputs[0].data, a.data);
            assert_eq!(r.inputs[1].data, b.data);
            assert_eq!(r.binary_output, binary);
            let resp = encode_response("m", None, &[(&a, binary), (&b, false)]);
            let hl = resp.header_len.map(|n| n.to_string());
            let outs = decode_response(&resp.bytes, hl.as_deref()).unwrap();
            assert_eq!(outs[0], a);
            assert_eq!(outs[1], b);
        }
    }

    #[test]
    fn nested_data_and_errors() {
        let body =
            br#"{"inputs":[{"name":"x","shape":[2,2],"datatype":"INT32","data":[[1,2],[3,4]]}]}"#;
        let r = decode_request(body, None).unwrap();
        assert_eq!(r.inputs[0].data.to_f64(), vec![1.0, 2.0, 3.0, 4.0]);
        let short = br#"{"inputs":[{"name":"x","shape":[2,2],"datatype":"INT32","data":[1,2,3]}]}"#;
        assert!(
            decode_request(short, None)
                .unwrap_err()
                .to_string()
                .contains("holds 4 elements but 'data' has 3")
        );
        assert!(
            decode_request(b"{oops", None)
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
        assert!(
            decode_request(body, Some("9999"))
                .unwrap_err()
                .to_string()
                .contains("only")
        );
        let bad_type = br#"{"inputs":[{"name":"x","shape":[1],"datatype":"INT8","data":[300]}]}"#;
        assert!(
            decode_request(bad_type, None)
                .unwrap_err()
                .to_string()
                .contains("not a INT8")
        );
    }
}
