//! Matrix products: `Gemm`, `QGemm` (M·N·K MACs, bias M·N other ops), the `MatMul`
//! family (∏batch·M·N·K MACs under broadcast batch dims) and `Einsum` (the product of all
//! label sizes for a two-operand contraction; a label-free rearrangement costs its output
//! elements as other ops; a chain of 3+ operands depends on the contraction order and is
//! unsupported).

use super::einsum::Einsum;
use super::{Cost, Entry, NoCost, NodeIn, any, cost, dims, numel, prod};
use crate::model::onnx::DataType;
use crate::model::shape::{Dim, Fact, R, Shape, broadcast, check_eq, contra, shape_str};

pub(super) const OPS: &[Entry] = &[
    any(&["Gemm", "QGemm"], gemm, gemm_cost),
    any(
        &[
            "MatMul",
            "MatMulInteger",
            "QLinearMatMul",
            "FusedMatMul",
            "MatMulIntegerToFloat",
        ],
        matmul,
        matmul_cost,
    ),
    any(&["MatMulNBits"], matmul_nbits, matmul_nbits_cost),
    any(&["Einsum"], einsum, einsum_cost),
];

fn trans(n: &NodeIn, name: &str) -> bool {
    n.attr_i(name, 0) != 0
}

fn gemm(n: &NodeIn) -> R<Vec<Fact>> {
    let b = if n.op() == "QGemm" { 3 } else { 1 };
    let shape = match (n.shape(0), n.shape(b)) {
        (Some(a), Some(b)) => {
            let ([a0, a1], [b0, b1]) = (a.as_slice(), b.as_slice()) else {
                return n.contra(format_args!(
                    "needs 2-D inputs, got {} and {}",
                    shape_str(a),
                    shape_str(b)
                ));
            };
            let (m, ka) = if trans(n, "transA") {
                (a1, a0)
            } else {
                (a0, a1)
            };
            let (kb, nn) = if trans(n, "transB") {
                (b1, b0)
            } else {
                (b0, b1)
            };
            check_eq(ka, kb, n.label, "Gemm inner dimension (K)")?;
            Some(vec![m.clone(), nn.clone()])
        }
        _ => None,
    };
    Ok(vec![Fact::of(n.dtype(0), shape)])
}

fn gemm_cost(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let a = dims(n.fact(0))?;
    let out = numel(outs.first())?;
    let k = if trans(n, "transA") {
        a.first()
    } else {
        a.get(1)
    };
    let k = *k.ok_or_else(|| NoCost::Unresolved("A is not 2-D".into()))?;
    let bias_at = if n.op() == "QGemm" { 6 } else { 2 };
    cost(prod(&[out, k])?, if n.has(bias_at) { out } else { 0 })
}

fn matmul(n: &NodeIn) -> R<Vec<Fact>> {
    let op = n.op();
    let b = if op == "QLinearMatMul" { 3 } else { 1 };
    let dtype = match op {
        "MatMulInteger" => Some(DataType::INT32),
        "QLinearMatMul" => n.dtype(7).or(n.dtype(0)),
        "MatMulIntegerToFloat" => Some(DataType::FLOAT),
        _ => n.dtype(0),
    };
    let shape = match (n.shape(0), n.shape(b)) {
        (Some(a), Some(bs)) => {
            let (mut a, mut bs) = (a.clone(), bs.clone());
            if op == "FusedMatMul" {
                if trans(n, "transA") && a.len() >= 2 {
                    let r = a.len();
                    a.swap(r - 1, r - 2);
                }
                if trans(n, "transB") && bs.len() >= 2 {
                    let r = bs.len();
                    bs.swap(r - 1, r - 2);
                }
            }
            Some(matmul_shape(&a, &bs, n.label)?.0)
        }
        _ => None,
    };
    Ok(vec![Fact::of(dtype, shape)])
}

fn matmul_cost(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let a = dims(n.fact(0))?;
    let out = numel(outs.first())?;
    let k = if n.op() == "FusedMatMul" && trans(n, "transA") && a.len() >= 2 {
        a[a.len() - 2]
    } else {
        a.last().copied().unwrap_or(1)
    };
    cost(prod(&[out, k])?, 0)
}

/// `MatMulNBits`: B is packed; N and K are attributes.
fn matmul_nbits(n: &NodeIn) -> R<Vec<Fact>> {
    let shape = match (n.shape(0), n.shape(1)) {
        (Some(a), Some(_)) => {
            let mut s = a.clone();
            if let Some(last) = s.last_mut() {
                *last = Dim::Known(n.attr_i("N", 0));
            }
            Some(s)
        }
        _ => None,
    };
    Ok(vec![Fact::of(n.dtype(0), shape)])
}

fn matmul_nbits_cost(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let k = n.attr_i("K", 0).max(0) as u64;
    cost(prod(&[numel(outs.first())?, k])?, 0)
}

/// Output shape of a batched, broadcast MatMul and its inner dimension K.
pub fn matmul_shape(a: &Shape, b: &Shape, node: &str) -> R<(Shape, Dim)> {
    if a.is_empty() || b.is_empty() {
        return contra(format!("node '{node}' (MatMul): scalar operands"));
    }
    let (mut a2, mut b2) = (a.clone(), b.clone());
    let a1 = a.len() == 1;
    let b1 = b.len() == 1;
    if a1 {
        a2.insert(0, Dim::Known(1));
    }
    if b1 {
        b2.push(Dim::Known(1));
    }
    let (ra, rb) = (a2.len(), b2.len());
    let k = a2[ra - 1].clone();
    check_eq(&k, &b2[rb - 2], node, "MatMul inner dimension (K)")?;
    let mut out = broadcast(&[&a2[..ra - 2].to_vec(), &b2[..rb - 2].to_vec()], node)?;
    if !a1 {
        out.push(a2[ra - 2].clone());
    }
    if !b1 {
        out.push(b2[rb - 1].clone());
    }
    Ok((out, k))
}

fn einsum(n: &NodeIn) -> R<Vec<Fact>> {
    let eq = n.node.attr_s("equation").unwrap_or_default();
    let shapes: Option<Vec<&Shape>> = (0..n.node.input.len()).map(|i| n.shape(i)).collect();
    let shape = match shapes {
        Some(s) => Some(Einsum::parse(&eq, &s, n.label)?.output_shape()),
        None => None,
    };
    Ok(vec![Fact::of(n.dtype(0), shape)])
}

fn einsum_cost(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let eq = n.node.attr_s("equation").unwrap_or_default();
    let shapes: Option<Vec<&Shape>> = n
        .inputs
        .iter()
        .map(|f| f.and_then(|f| f.shape.as_ref()))
        .collect();
    let shapes = shapes.ok_or_else(|| NoCost::Unresolved("shape not resolved".into()))?;
    let e =
        Einsum::parse(&eq, &shapes, &n.node.name).map_err(|e| NoCost::Unresolved(e.to_string()))?;
    let all: Option<Vec<u64>> = e
        .sizes
        .values()
        .map(|d| d.known().map(|v| v.max(0) as u64))
        .collect();
    let all = all.ok_or_else(|| NoCost::Unresolved("symbolic Einsum label".into()))?;
    match (e.inputs.len(), e.contracted().is_empty()) {
        (2, false) => cost(prod(&all)?, 0),
        (_, true) => cost(0, numel(outs.first())?),
        // A chain of 3+ operands: the cost depends on the contraction order.
        _ => Err(NoCost::Unsupported),
    }
}
