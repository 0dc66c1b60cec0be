//! Operators that make tensors rather than transform them: `Constant`, `Shape`, `Size`,
//! `ConstantOfShape`, `Range`, `RandomNormal`/`RandomUniform` (and their `*Like`),
//! `EyeLike`. No arithmetic (cost 0; a `Constant` is data and is not listed among the
//! costs). `Shape`, `Size`, `ConstantOfShape` and `Range` produce the constant values that
//! shape arithmetic starts from.

use super::{Cost, Entry, NoCost, NodeIn, Op, any, free, same_shape};
use crate::model::onnx::DataType;
use crate::model::shape::{Const, Dim, Fact, MAX_CONST_ELEMS, R, known_shape, numel};

pub(super) const OPS: &[Entry] = &[
    Entry {
        names: &["Constant"],
        domain: super::Domain::Onnx,
        op: Op {
            shape: constant,
            cost: not_counted,
        },
    },
    any(&["Shape"], shape, free),
    any(&["Size"], size, free),
    any(&["ConstantOfShape"], constant_of_shape, free),
    any(&["Range"], range, free),
    any(&["RandomNormal", "RandomUniform"], random, free),
    any(
        &["RandomNormalLike", "RandomUniformLike", "EyeLike"],
        same_shape,
        free,
    ),
];

fn constant(n: &NodeIn) -> R<Vec<Fact>> {
    Ok(vec![
        n.node
            .constant_tensor()
            .map(|t| Fact::of_tensor(&t))
            .unwrap_or_default(),
    ])
}

fn not_counted(_: &NodeIn, _: &[Fact]) -> Result<Cost, NoCost> {
    Err(NoCost::NotCounted)
}

fn shape(n: &NodeIn) -> R<Vec<Fact>> {
    let int64 = Some(DataType::INT64);
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::new(int64, vec![n.sym(0)])]);
    };
    let r = x.len() as i64;
    let clampi = |v: i64| -> usize {
        let v = if v < 0 { v.saturating_add(r) } else { v };
        v.clamp(0, r) as usize
    };
    let start = clampi(n.attr_i("start", 0));
    let end = clampi(n.attr_i("end", r)).max(start);
    let dims = &x[start..end];
    let value = dims
        .iter()
        .map(|d| d.known())
        .collect::<Option<Vec<_>>>()
        .map(Const::Int);
    Ok(vec![n.folded(
        int64,
        vec![Dim::Known(dims.len() as i64)],
        value,
    )])
}

fn size(n: &NodeIn) -> R<Vec<Fact>> {
    let value = n
        .fact(0)
        .and_then(|f| f.numel())
        .and_then(|v| i64::try_from(v).ok())
        .map(|v| Const::Int(vec![v]));
    Ok(vec![n.folded(Some(DataType::INT64), vec![], value)])
}

fn constant_of_shape(n: &NodeIn) -> R<Vec<Fact>> {
    let (dtype, fill) = match n.node.attr("value").and_then(|a| a.t.as_ref()) {
        Some(t) => (
            Some(t.dtype()),
            t.int_values(1)
                .map(Const::Int)
                .or_else(|| t.float_values(1).map(Const::Float)),
        ),
        None => (Some(DataType::FLOAT), Some(Const::Float(vec![0.0]))),
    };
    let Some(s) = n.value(0) else {
        let rank = n.dims_of(0).and_then(|d| d.first().copied());
        let shape = rank
            .and_then(|r| usize::try_from(r).ok())
            .map(|r| n.unknown_rank(r));
        return Ok(vec![Fact::of(dtype, shape)]);
    };
    let dims = s.ints();
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return n.contra(format_args!("shape {dims:?} has a negative dim {d}"));
    }
    let count = n.fits(numel(&dims), "the element count")?;
    let value = match fill {
        Some(Const::Int(v)) if count <= MAX_CONST_ELEMS => {
            v.first().map(|&x| Const::Int(vec![x; count as usize]))
        }
        Some(Const::Float(v)) if count <= MAX_CONST_ELEMS => {
            v.first().map(|&x| Const::Float(vec![x; count as usize]))
        }
        _ => None,
    };
    Ok(vec![n.folded(dtype, known_shape(&dims), value)])
}

fn range(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = n.dtype(0);
    let (Some(s), Some(l), Some(d)) = (n.value(0), n.value(1), n.value(2)) else {
        return Ok(vec![Fact::new(dt, vec![n.sym(0)])]);
    };
    let (count, value) = match (s, l, d) {
        (Const::Int(s), Const::Int(l), Const::Int(d)) => {
            let (Some(&s), Some(&l), Some(&d)) = (s.first(), l.first(), d.first()) else {
                return n.contra("empty start, limit or delta");
            };
            if d == 0 {
                return n.malformed("delta is 0: the count (limit - start) / delta is undefined");
            }
            let count = {
                let (s, l, d) = (s as i128, l as i128, d as i128);
                let span = l - s;
                // ceil(span / d), exact
                let q = span / d + i128::from(span % d != 0 && (span < 0) == (d < 0));
                q.max(0)
            };
            let count = n.fits(i64::try_from(count).ok(), "the element count")?;
            let value = (count as u64 <= MAX_CONST_ELEMS).then(|| {
                Const::Int(
                    (0..count)
                        .map(|i| s.wrapping_add(i.wrapping_mul(d)))
                        .collect(),
                )
            });
            (count, value)
        }
        _ => {
            let (Some(s), Some(l), Some(d)) = (s.first_float(), l.first_float(), d.first_float())
            else {
                return n.contra("empty start, limit or delta");
            };
            if d == 0.0 {
                return n.malformed(format_args!(
                    "delta is 0 (start {s}, limit {l}): the count (limit - start) / delta is undefined"
                ));
            }
            if !(l - s).is_finite() || !d.is_finite() || !((l - s) / d).is_finite() {
                return n.malformed(format_args!(
                    "start {s}, limit {l}, delta {d}: the count (limit - start) / delta is not a finite number"
                ));
            }
            let count = ((l - s) / d).ceil().max(0.0) as i64;
            let value = (count as u64 <= MAX_CONST_ELEMS)
                .then(|| Const::Float((0..count).map(|i| s + i as f64 * d).collect()));
            (count, value)
        }
    };
    Ok(vec![n.folded(dt, vec![Dim::Known(count)], value)])
}

fn random(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = i32::try_from(n.attr_i("dtype", 1)).unwrap_or(1);
    Ok(vec![Fact::new(
        Some(DataType(dt)),
        known_shape(n.node.attr_ints("shape").unwrap_or(&[])),
    )])
}
