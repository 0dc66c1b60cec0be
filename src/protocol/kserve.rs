//! The KServe Open Inference Protocol v2 over HTTP, as Triton speaks it: JSON tensors
//! (nested or flat `data`) and Triton's binary tensor extension (a JSON header of
//! `Inference-Header-Content-Length` bytes followed by raw little-endian tensors, each input
//! or output carrying `parameters.binary_data_size`). Both `acceval serve` (decode requests,
//! encode responses) and `acceval qps` (encode requests, check responses) use this module.

use ndarray::{ArrayD, IxDyn};
use serde_json::{Map, Value, json};

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
    pub id: Option<Value>,
    pub inputs: Vec<RequestInput>,
    /// The outputs asked for, with whether each is wanted as binary (`None` = request default).
    pub outputs: Option<Vec<(String, Option<bool>)>>,
    /// `parameters.binary_data_output`.
    pub binary_output: bool,
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

fn flatten<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}

fn tensor_from_json(
    dt: DataType,
    shape: &[usize],
    data: &Value,
    name: &str,
) -> Result<TensorData, String> {
    let mut flat = Vec::new();
    flatten(data, &mut flat);
    let n: usize = shape.iter().product();
    if flat.len() != n {
        return Err(format!(
            "input '{name}': shape {shape:?} holds {n} elements but 'data' has {}",
            flat.len()
        ));
    }
    let bad = |i: usize| {
        format!(
            "input '{name}': element {i} ({}) is not a {}",
            flat[i],
            datatype_name(dt)
        )
    };
    let dim = IxDyn(shape);
    macro_rules! nums {
        ($t:ty, $get:expr) => {{
            let mut v: Vec<$t> = Vec::with_capacity(n);
            for (i, x) in flat.iter().enumerate() {
                v.push($get(x).ok_or_else(|| bad(i))?);
            }
            ArrayD::from_shape_vec(dim, v).map_err(|e| e.to_string())?
        }};
    }
    let int = |x: &Value| x.as_i64();
    Ok(match dt {
        DataType::FLOAT => TensorData::F32(nums!(f32, |x: &Value| x.as_f64().map(|f| f as f32))),
        DataType::DOUBLE => TensorData::F64(nums!(f64, |x: &Value| x.as_f64())),
        DataType::INT64 => TensorData::I64(nums!(i64, int)),
        DataType::INT32 => {
            TensorData::I32(nums!(i32, |x: &Value| int(x).and_then(|v| i32::try_from(v).ok())))
        }
        DataType::INT8 => {
            TensorData::I8(nums!(i8, |x: &Value| int(x).and_then(|v| i8::try_from(v).ok())))
        }
        DataType::UINT8 => {
            TensorData::U8(nums!(u8, |x: &Value| int(x).and_then(|v| u8::try_from(v).ok())))
        }
        DataType::BOOL => TensorData::Bool(nums!(bool, |x: &Value| x.as_bool())),
        other => {
            return Err(format!(
                "input '{name}': datatype {} is not supported; acceval serves FP32, FP64, INT64, INT32, INT8, UINT8, BOOL",
                datatype_name(other)
            ));
        }
    })
}

fn tensor_from_bytes(
    dt: DataType,
    shape: &[usize],
    b: &[u8],
    name: &str,
) -> Result<TensorData, String> {
    let n: usize = shape.iter().product();
    let need = n * element_bytes(dt);
    if b.len() != need {
        return Err(format!(
            "input '{name}': binary_data_size is {} bytes but shape {shape:?} of {} needs {need}",
            b.len(),
            datatype_name(dt)
        ));
    }
    let dim = IxDyn(shape);
    macro_rules! le {
        ($t:ty, $w:expr) => {
            ArrayD::from_shape_vec(
                dim,
                b.chunks_exact($w)
                    .map(|c| <$t>::from_le_bytes(c.try_into().unwrap()))
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
                "input '{name}': datatype {} is not supported in binary form",
                datatype_name(other)
            ));
        }
    })
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

fn shape_of(v: Option<&Value>, what: &str) -> Result<Vec<usize>, String> {
    let a = v
        .and_then(|s| s.as_array())
        .ok_or_else(|| format!("{what}: 'shape' must be an array of non-negative integers"))?;
    a.iter()
        .map(|d| {
            d.as_u64()
                .map(|d| d as usize)
                .ok_or_else(|| format!("{what}: shape element {d} is not a non-negative integer"))
        })
        .collect()
}

/// Decodes a request body (JSON, or JSON header + binary tensors).
pub fn decode_request(body: &[u8], header_len: Option<&str>) -> Result<Request, String> {
    let (head, mut bin) = split_body(body, header_len)?;
    let v: Value =
        serde_json::from_slice(head).map_err(|e| format!("the request is not valid JSON: {e}"))?;
    let obj = v.as_object().ok_or("the request must be a JSON object")?;
    let inputs = obj
        .get("inputs")
        .and_then(|i| i.as_array())
        .ok_or("the request has no 'inputs' array")?;
    let mut out = Vec::with_capacity(inputs.len());
    for (k, i) in inputs.iter().enumerate() {
        let name = i
            .get("name")
            .and_then(|n| n.as_str())
            .ok_or_else(|| format!("inputs[{k}] has no 'name'"))?
            .to_string();
        let what = format!("input '{name}'");
        let datatype = i
            .get("datatype")
            .and_then(|d| d.as_str())
            .ok_or_else(|| format!("{what} has no 'datatype'"))?
            .to_string();
        let dt = parse_datatype(&datatype)
            .ok_or_else(|| format!("{what}: unknown datatype '{datatype}'"))?;
        let shape = shape_of(i.get("shape"), &what)?;
        let binary_size = i
            .get("parameters")
            .and_then(|p| p.get("binary_data_size"))
            .map(|s| {
                s.as_u64()
                    .ok_or_else(|| format!("{what}: binary_data_size must be an integer"))
            })
            .transpose()?;
        let data = match binary_size {
            Some(size) => {
                let size = size as usize;
                if size > bin.len() {
                    return Err(format!(
                        "{what}: binary_data_size {size} exceeds the {} binary bytes left in the body",
                        bin.len()
                    ));
                }
                let (b, rest) = bin.split_at(size);
                bin = rest;
                tensor_from_bytes(dt, &shape, b, &name)?
            }
            None => {
                let d = i
                    .get("data")
                    .ok_or_else(|| format!("{what} has neither 'data' nor binary_data_size"))?;
                tensor_from_json(dt, &shape, d, &name)?
            }
        };
        out.push(RequestInput {
            name,
            datatype,
            shape,
            data,
        });
    }
    if !bin.is_empty() {
        return Err(format!(
            "{} bytes of binary data follow the inputs unclaimed",
            bin.len()
        ));
    }
    let binary_output = obj
        .get("parameters")
        .and_then(|p| p.get("binary_data_output"))
        .and_then(|b| b.as_bool())
        .unwrap_or(false);
    let outputs = obj
        .get("outputs")
        .and_then(|o| o.as_array())
        .map(|a| {
            a.iter()
                .enumerate()
                .map(|(k, o)| {
                    let name = o
                        .get("name")
                        .and_then(|n| n.as_str())
                        .ok_or_else(|| format!("outputs[{k}] has no 'name'"))?;
                    let bin = o
                        .get("parameters")
                        .and_then(|p| p.get("binary_data"))
                        .and_then(|b| b.as_bool());
                    Ok((name.to_string(), bin))
                })
                .collect::<Result<Vec<_>, String>>()
        })
        .transpose()?;
    Ok(Request {
        id: obj.get("id").cloned(),
        inputs: out,
        outputs,
        binary_output,
    })
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

fn json_data(d: &TensorData) -> Value {
    match d {
        TensorData::F32(a) => a.iter().map(|&x| json!(x)).collect(),
        TensorData::F64(a) => a.iter().map(|&x| json!(x)).collect(),
        TensorData::I64(a) => a.iter().map(|&x| json!(x)).collect(),
        TensorData::I32(a) => a.iter().map(|&x| json!(x)).collect(),
        TensorData::I8(a) => a.iter().map(|&x| json!(x)).collect(),
        TensorData::U8(a) => a.iter().map(|&x| json!(x)).collect(),
        TensorData::Bool(a) => a.iter().map(|&x| json!(x)).collect(),
    }
}

/// A body: JSON header plus optional binary part, and the header length to announce when
/// the binary part is not empty.
pub struct Body {
    pub bytes: Vec<u8>,
    pub header_len: Option<usize>,
}

/// Encodes tensors as a v2 request or response body: `tensors` with, for each, whether it
/// goes as binary; `top` holds the other top-level fields.
fn encode(mut top: Map<String, Value>, key: &str, tensors: &[(&HostTensor, bool)]) -> Body {
    let mut bin = Vec::new();
    let list: Vec<Value> = tensors
        .iter()
        .map(|(t, binary)| {
            let mut o = json!({
                "name": t.name,
                "datatype": datatype_name(t.data.dtype()),
                "shape": t.data.shape(),
            });
            if *binary {
                let before = bin.len();
                le_bytes(&t.data, &mut bin);
                o["parameters"] = json!({"binary_data_size": bin.len() - before});
            } else {
                o["data"] = json_data(&t.data);
            }
            o
        })
        .collect();
    top.insert(key.to_string(), Value::Array(list));
    let mut bytes = serde_json::to_vec(&Value::Object(top)).expect("JSON values serialise");
    let header_len = (!bin.is_empty()).then_some(bytes.len());
    bytes.extend_from_slice(&bin);
    Body { bytes, header_len }
}

/// An inference request for `inputs`, binary or JSON, asking for binary outputs when `binary`.
pub fn encode_request(inputs: &[HostTensor], binary: bool) -> Body {
    let mut top = Map::new();
    if binary {
        top.insert("parameters".into(), json!({"binary_data_output": true}));
    }
    let t: Vec<_> = inputs.iter().map(|t| (t, binary)).collect();
    encode(top, "inputs", &t)
}

/// An inference response.
pub fn encode_response(model: &str, id: Option<&Value>, outputs: &[(&HostTensor, bool)]) -> Body {
    let mut top = Map::new();
    top.insert("model_name".into(), json!(model));
    top.insert("model_version".into(), json!("1"));
    if let Some(id) = id {
        top.insert("id".into(), id.clone());
    }
    encode(top, "outputs", outputs)
}

/// Decodes a response body into its output tensors (`qps` checks the first response).
pub fn decode_response(body: &[u8], header_len: Option<&str>) -> Result<Vec<HostTensor>, String> {
    // A response has the same layout as a request, under "outputs".
    let (head, _) = split_body(body, header_len)?;
    let mut v: Value =
        serde_json::from_slice(head).map_err(|e| format!("the response is not valid JSON: {e}"))?;
    let outs = v
        .get_mut("outputs")
        .map(Value::take)
        .ok_or("the response has no 'outputs'")?;
    let mut as_req = Map::new();
    as_req.insert("inputs".into(), outs);
    let mut rebuilt = serde_json::to_vec(&Value::Object(as_req)).map_err(|e| e.to_string())?;
    let n = rebuilt.len();
    let (_, bin) = split_body(body, header_len)?;
    rebuilt.extend_from_slice(bin);
    let r = decode_request(
        &rebuilt,
        (!bin.is_empty()).then(|| n.to_string()).as_deref(),
    )?;
    Ok(r.inputs
        .into_iter()
        .map(|i| HostTensor {
            name: i.name,
            data: i.data,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
                .contains("holds 4 elements but 'data' has 3")
        );
        assert!(
            decode_request(b"{oops", None)
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert!(
            decode_request(body, Some("9999"))
                .unwrap_err()
                .contains("only")
        );
        let bad_type = br#"{"inputs":[{"name":"x","shape":[1],"datatype":"INT8","data":[300]}]}"#;
        assert!(
            decode_request(bad_type, None)
                .unwrap_err()
                .contains("not a INT8")
        );
    }
}
