//! Quantisation: `QuantizeLinear`, `DequantizeLinear`, `DynamicQuantizeLinear` and the
//! element-wise `QLinear*` operators of onnxruntime's QOperator format. They count like
//! their float versions: one other op per output element (3 for `QLinearSoftmax`), no
//! MACs. (`QLinearConv`, `QLinearMatMul`, `QGemm`, `QLinearConcat` and the quantized pools
//! sit with their float families.)

use super::{Entry, NodeIn, any, per_output, same_shape};
use crate::model::onnx::DataType;
use crate::model::shape::{Fact, R, broadcast};

pub(super) const OPS: &[Entry] = &[
    any(
        &["QuantizeLinear", "DequantizeLinear"],
        quantize,
        per_output::<1>,
    ),
    any(
        &["DynamicQuantizeLinear"],
        dynamic_quantize,
        per_output::<1>,
    ),
    any(
        &["QLinearAdd", "QLinearMul"],
        qlinear_binary,
        per_output::<1>,
    ),
    any(
        &["QLinearSigmoid", "QLinearLeakyRelu"],
        same_shape,
        per_output::<1>,
    ),
    any(&["QLinearSoftmax"], same_shape, per_output::<3>),
];

fn quantize(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = if n.op() == "DequantizeLinear" {
        n.dtype(1).or(Some(DataType::FLOAT))
    } else {
        n.node
            .attr_i("output_dtype")
            .filter(|&t| t != 0)
            .and_then(|t| i32::try_from(t).ok())
            .map(DataType)
            .or(n.dtype(2))
            .or(Some(DataType::UINT8))
    };
    Ok(vec![Fact::of(dt, n.shape(0).cloned())])
}

fn dynamic_quantize(n: &NodeIn) -> R<Vec<Fact>> {
    Ok(vec![
        Fact::of(Some(DataType::UINT8), n.shape(0).cloned()),
        Fact::new(Some(DataType::FLOAT), vec![]),
        Fact::new(Some(DataType::UINT8), vec![]),
    ])
}

/// `QLinearAdd(a, a_scale, a_zero, b, ...)`: a and b broadcast.
fn qlinear_binary(n: &NodeIn) -> R<Vec<Fact>> {
    let shape = match (n.shape(0), n.shape(3)) {
        (Some(a), Some(b)) => Some(broadcast(&[a, b], n.label)?),
        _ => None,
    };
    Ok(vec![Fact::of(n.dtype(0), shape)])
}
