//! Element-wise operators: activations and other unary maps, broadcasting binary and n-ary
//! arithmetic, comparisons and logic, `Where`, `Clip`, `Cast`, `Identity`, `Dropout`.
//! Cost: one other op per output element ((n−1) per element for n-ary Sum/Max/Min/Mean),
//! no MACs. Small constant values are folded (integers exactly, in checked `i64`), which is
//! how exporters compute shapes (`Shape -> Mul -> Div -> Concat -> Reshape`).

use super::fold::{broadcast_index, small_dims};
use super::{Cost, Entry, NoCost, NodeIn, any, cost, free, numel, per_output, prod, same_shape};
use crate::model::onnx::DataType;
use crate::model::shape::{Const, Fact, R, Shape, broadcast};

pub(super) const OPS: &[Entry] = &[
    any(UNARY_FOLDED, unary, per_output::<1>),
    any(UNARY, same_shape, per_output::<1>),
    any(&["IsNaN", "IsInf"], is_nan_inf, per_output::<1>),
    any(&["Clip"], clip, per_output::<1>),
    any(BINARY, binary, per_output::<1>),
    any(&["Sum", "Max", "Min", "Mean"], binary, n_ary),
    any(&["Identity"], identity, free),
    any(&["Dropout"], dropout, free),
    any(&["Cast", "CastLike"], cast, free),
];

/// Unary maps whose small constant inputs are folded.
const UNARY_FOLDED: &[&str] = &[
    "Neg",
    "Abs",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Not",
    "Relu",
    "Sqrt",
    "Reciprocal",
];

const UNARY: &[&str] = &[
    "Sigmoid",
    "Tanh",
    "Exp",
    "Log",
    "Erf",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "HardSigmoid",
    "HardSwish",
    "LeakyRelu",
    "Elu",
    "Selu",
    "Celu",
    "Softplus",
    "Softsign",
    "Gelu",
    "Mish",
    "ThresholdedRelu",
    "Shrink",
    "Hardmax",
    "QuickGelu",
    "FastGelu",
    "BiasGelu",
    "BiasAdd",
    "Bernoulli",
    "ReverseSequence",
    "Trilu",
];

const BINARY: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "And",
    "Or",
    "Xor",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "Mod",
    "BitShift",
    "PRelu",
    "Where",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
];

fn is_predicate(op: &str) -> bool {
    matches!(
        op,
        "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or" | "Xor"
    )
}

fn unary(n: &NodeIn) -> R<Vec<Fact>> {
    let mut outs = same_shape(n)?;
    if let (Some(v), Some(f)) = (n.value(0), n.fact(0)) {
        let value = fold_unary(n.op(), v);
        outs[0] = n.folded(f.dtype, f.shape.clone().unwrap_or_default(), value);
    }
    Ok(outs)
}

fn fold_unary(op: &str, v: &Const) -> Option<Const> {
    Some(match v {
        Const::Int(v) => Const::Int(
            v.iter()
                .map(|&x| match op {
                    "Neg" => x.checked_neg(),
                    "Abs" => x.checked_abs(),
                    "Floor" | "Ceil" | "Round" => Some(x),
                    "Sign" => Some(x.signum()),
                    "Not" => Some((x == 0) as i64),
                    "Relu" => Some(x.max(0)),
                    _ => None,
                })
                .collect::<Option<_>>()?,
        ),
        Const::Float(v) => Const::Float(
            v.iter()
                .map(|&x| match op {
                    "Neg" => Some(-x),
                    "Abs" => Some(x.abs()),
                    "Floor" => Some(x.floor()),
                    "Ceil" => Some(x.ceil()),
                    "Round" => Some(x.round_ties_even()),
                    "Sign" => Some(if x == 0.0 { 0.0 } else { x.signum() }),
                    "Not" => Some((x == 0.0) as i64 as f64),
                    "Relu" => Some(x.max(0.0)),
                    "Sqrt" => Some(x.sqrt()),
                    "Reciprocal" => Some(1.0 / x),
                    _ => None,
                })
                .collect::<Option<_>>()?,
        ),
    })
}

fn is_nan_inf(n: &NodeIn) -> R<Vec<Fact>> {
    let mut outs = same_shape(n)?;
    outs[0].dtype = Some(DataType::BOOL);
    Ok(outs)
}

fn clip(n: &NodeIn) -> R<Vec<Fact>> {
    let mut outs = same_shape(n)?;
    let bound = |i: usize, attr: &str| -> Option<Option<f64>> {
        if n.has(i) {
            n.value(i).and_then(|c| c.first_float()).map(Some)
        } else {
            Some(n.node.attr_f(attr).map(|v| v as f64))
        }
    };
    if let (Some(v), Some(f), Some(lo), Some(hi)) =
        (n.value(0), n.fact(0), bound(1, "min"), bound(2, "max"))
    {
        let value = match v {
            Const::Int(v) => Const::Int(
                v.iter()
                    .map(|&x| {
                        let x = lo.map_or(x, |l| x.max(l as i64));
                        hi.map_or(x, |h| x.min(h as i64))
                    })
                    .collect(),
            ),
            Const::Float(v) => Const::Float(
                v.iter()
                    .map(|&x| hi.map_or(x, |h| x.min(h)).max(lo.unwrap_or(f64::MIN)))
                    .collect(),
            ),
        };
        outs[0] = n.folded(f.dtype, f.shape.clone().unwrap_or_default(), Some(value));
    }
    Ok(outs)
}

fn identity(n: &NodeIn) -> R<Vec<Fact>> {
    Ok(vec![n.fact(0).cloned().unwrap_or_default()])
}

fn dropout(n: &NodeIn) -> R<Vec<Fact>> {
    let mut mask = Fact::like(n.fact(0));
    mask.dtype = Some(DataType::BOOL);
    Ok(vec![n.fact(0).cloned().unwrap_or_default(), mask])
}

fn cast(n: &NodeIn) -> R<Vec<Fact>> {
    let to = if n.op() == "Cast" {
        n.node
            .attr_i("to")
            .and_then(|t| i32::try_from(t).ok())
            .map(DataType)
    } else {
        n.dtype(1)
    };
    let Some(shape) = n.shape(0) else {
        return Ok(vec![Fact::of(to, None)]);
    };
    let value = n.value(0).map(|v| match to {
        Some(t) => v.cast(t),
        None => v.clone(),
    });
    Ok(vec![n.folded(to, shape.clone(), value)])
}

/// Broadcasting element-wise operators (binary and n-ary).
fn binary(n: &NodeIn) -> R<Vec<Fact>> {
    let op = n.op();
    // An integer divisor of 0 is undefined in ONNX; tract stopped on it (a caught panic).
    // Only a divisor known here (a constant) can be checked before the run.
    if matches!(op, "Div" | "Mod")
        && n.dtype(0).is_some_and(DataType::is_integer)
        && matches!(n.value(1), Some(Const::Int(b)) if b.contains(&0))
    {
        return n.malformed("the integer divisor holds 0 (division by zero is undefined)");
    }
    if op == "Mod" && n.dtype(0).is_some_and(DataType::is_float) && n.attr_i("fmod", 0) != 1 {
        return n.malformed(
            "fmod = 0 on floating-point inputs: ONNX requires fmod = 1 for them (C fmod)",
        );
    }
    let shapes: Option<Vec<&Shape>> = (0..n.node.input.len()).map(|i| n.shape(i)).collect();
    let shape = match shapes {
        Some(s) => Some(broadcast(&s, n.label)?),
        None => None,
    };
    let dtype = match op {
        _ if is_predicate(op) => Some(DataType::BOOL),
        "Where" => n.dtype(1),
        _ => n.dtype(0),
    };
    let Some(shape) = shape else {
        return Ok(vec![Fact::of(dtype, None)]);
    };
    let value = fold_binary(n, &shape);
    Ok(vec![n.folded(dtype, shape, value)])
}

/// The operands of a foldable element-wise node, broadcast to the output shape.
fn operands(n: &NodeIn, shape: &Shape) -> Option<Vec<(Vec<usize>, Const)>> {
    let out = small_dims(
        &shape
            .iter()
            .map(|d| d.known())
            .collect::<Option<Vec<_>>>()?,
    )?;
    (0..n.node.input.len())
        .map(|i| {
            let v = n.value(i)?;
            let d = small_dims(&n.dims_of(i)?)?;
            Some((broadcast_index(&out, &d)?, v.clone()))
        })
        .collect()
}

fn fold_binary(n: &NodeIn, shape: &Shape) -> Option<Const> {
    let op = n.op();
    let ops = operands(n, shape)?;
    let len = ops.first()?.0.len();
    let all_int = ops.iter().all(|(_, c)| c.is_int());
    let fmod = n.attr_i("fmod", 0) != 0;
    if op == "Where" {
        let [(ci, c), (xi, x), (yi, y)] = ops.as_slice() else {
            return None;
        };
        let c = c.floats();
        let pick: Vec<bool> = ci
            .iter()
            .map(|&i| c.get(i).is_some_and(|&v| v != 0.0))
            .collect();
        return Some(match (x, y) {
            (Const::Int(x), Const::Int(y)) => Const::Int(
                (0..len)
                    .map(|k| if pick[k] { x.get(xi[k]) } else { y.get(yi[k]) }.copied())
                    .collect::<Option<_>>()?,
            ),
            _ => {
                let (x, y) = (x.floats(), y.floats());
                Const::Float(
                    (0..len)
                        .map(|k| if pick[k] { x.get(xi[k]) } else { y.get(yi[k]) }.copied())
                        .collect::<Option<_>>()?,
                )
            }
        });
    }
    if all_int && op != "Mean" {
        let cols: Vec<Vec<i64>> = ops
            .iter()
            .map(|(idx, c)| {
                let v = c.ints();
                idx.iter()
                    .map(|&i| v.get(i).copied())
                    .collect::<Option<_>>()
            })
            .collect::<Option<_>>()?;
        let out: Vec<i64> = (0..len)
            .map(|k| {
                let row: Vec<i64> = cols.iter().map(|c| c[k]).collect();
                int_op(op, &row, fmod)
            })
            .collect::<Option<_>>()?;
        return Some(Const::Int(out));
    }
    let cols: Vec<Vec<f64>> = ops
        .iter()
        .map(|(idx, c)| {
            let v = c.floats();
            idx.iter()
                .map(|&i| v.get(i).copied())
                .collect::<Option<_>>()
        })
        .collect::<Option<_>>()?;
    let out: Vec<f64> = (0..len)
        .map(|k| {
            let row: Vec<f64> = cols.iter().map(|c| c[k]).collect();
            float_op(op, &row, fmod)
        })
        .collect::<Option<_>>()?;
    Some(if is_predicate(op) {
        Const::Int(out.iter().map(|&v| v as i64).collect())
    } else {
        Const::Float(out)
    })
}

/// One element of an integer operation (exact; `None` on overflow or division by zero).
fn int_op(op: &str, x: &[i64], fmod: bool) -> Option<i64> {
    let a = *x.first()?;
    let b = x.get(1).copied().unwrap_or(0);
    Some(match op {
        "Add" => a.checked_add(b)?,
        "Sub" => a.checked_sub(b)?,
        "Mul" => a.checked_mul(b)?,
        "Div" => a.checked_div(b)?,
        "Mod" if fmod => a.checked_rem(b)?,
        "Mod" => {
            let r = a.checked_rem(b)?;
            if r != 0 && ((r < 0) != (b < 0)) {
                r + b
            } else {
                r
            }
        }
        "Pow" => a.checked_pow(u32::try_from(b).ok()?)?,
        "Max" => *x.iter().max()?,
        "Min" => *x.iter().min()?,
        "Sum" => x.iter().try_fold(0i64, |s, &v| s.checked_add(v))?,
        "Equal" => (a == b) as i64,
        "Less" => (a < b) as i64,
        "Greater" => (a > b) as i64,
        "LessOrEqual" => (a <= b) as i64,
        "GreaterOrEqual" => (a >= b) as i64,
        "And" => (a != 0 && b != 0) as i64,
        "Or" => (a != 0 || b != 0) as i64,
        "Xor" => ((a != 0) != (b != 0)) as i64,
        "BitwiseAnd" => a & b,
        "BitwiseOr" => a | b,
        "BitwiseXor" => a ^ b,
        _ => return None,
    })
}

/// One element of a floating-point operation.
fn float_op(op: &str, x: &[f64], fmod: bool) -> Option<f64> {
    let a = *x.first()?;
    let b = x.get(1).copied().unwrap_or(0.0);
    let t = |c: bool| c as i64 as f64;
    Some(match op {
        "Add" => a + b,
        "Sub" => a - b,
        "Mul" => a * b,
        "Div" => a / b,
        "Mod" if b == 0.0 => return None,
        "Mod" if fmod => a % b,
        "Mod" => a - b * (a / b).floor(),
        "Pow" => a.powf(b),
        "Max" => x.iter().copied().fold(f64::MIN, f64::max),
        "Min" => x.iter().copied().fold(f64::MAX, f64::min),
        "Sum" => x.iter().sum(),
        "Mean" => x.iter().sum::<f64>() / x.len() as f64,
        "Equal" => t(a == b),
        "Less" => t(a < b),
        "Greater" => t(a > b),
        "LessOrEqual" => t(a <= b),
        "GreaterOrEqual" => t(a >= b),
        "And" => t(a != 0.0 && b != 0.0),
        "Or" => t(a != 0.0 || b != 0.0),
        "Xor" => t((a != 0.0) != (b != 0.0)),
        _ => return None,
    })
}

/// n-ary Sum/Max/Min/Mean: (n−1) operations per output element (at least one).
fn n_ary(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let k = n.node.input.len().saturating_sub(1).max(1) as u64;
    cost(0, prod(&[k, numel(outs.first())?])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_folding_is_exact_and_checked() {
        assert_eq!(int_op("Mod", &[-7, 3], false), Some(2)); // sign of the divisor
        assert_eq!(int_op("Mod", &[-7, 3], true), Some(-1)); // fmod: sign of the dividend
        assert_eq!(int_op("Div", &[-7, 2], false), Some(-3)); // truncates
        assert_eq!(int_op("Div", &[1, 0], false), None);
        assert_eq!(int_op("Mul", &[i64::MAX, 2], false), None);
        assert_eq!(int_op("Max", &[3, 9, 4], false), Some(9));
        assert_eq!(float_op("Mod", &[-7.0, 3.0], false), Some(2.0));
        assert_eq!(
            fold_unary("Not", &Const::Int(vec![0, 1])),
            Some(Const::Int(vec![1, 0]))
        );
        assert_eq!(fold_unary("Neg", &Const::Int(vec![i64::MIN])), None);
    }
}
