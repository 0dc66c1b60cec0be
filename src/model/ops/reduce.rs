//! Reductions and selections: `Reduce*`, `ArgMax`/`ArgMin`, `TopK`, `CumSum` (other ops:
//! input elements) and `NonMaxSuppression` (batch·classes·boxes², the IoU pairs, an upper
//! bound). No MACs. Small integer reductions are folded (`ReduceProd` of a shape is how
//! exporters compute element counts).

use super::fold::{small_dims, strides};
use super::{Cost, Entry, NoCost, NodeIn, any, cost, dims, per_input, prod, same_shape};
use crate::model::onnx::DataType;
use crate::model::shape::{Const, Dim, Fact, R, Shape, norm_axis};

pub(super) const OPS: &[Entry] = &[
    any(
        &[
            "ReduceSum",
            "ReduceMean",
            "ReduceMax",
            "ReduceMin",
            "ReduceProd",
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceSumSquare",
            "ArgMax",
            "ArgMin",
        ],
        reduce,
        per_input::<1>,
    ),
    any(&["TopK"], top_k, per_input::<1>),
    any(&["CumSum"], same_shape, per_input::<1>),
    any(&["NonMaxSuppression"], nms, nms_cost),
];

fn reduce_shape(x: &Shape, axes: &[usize], keep: bool) -> Shape {
    x.iter()
        .enumerate()
        .filter_map(|(i, d)| {
            if axes.contains(&i) {
                keep.then_some(Dim::Known(1))
            } else {
                Some(d.clone())
            }
        })
        .collect()
}

/// The reduced axes: `None` when they come from an input whose value is not known.
fn reduce_axes(n: &NodeIn, x: &Shape) -> R<Option<Vec<usize>>> {
    let arg = n.op().starts_with("Arg");
    let axes = if arg {
        Some(vec![n.attr_i("axis", 0)])
    } else {
        n.ints_in_or_attr(1, "axes")
    };
    let all = || (0..x.len()).collect::<Vec<_>>();
    let noop = n.attr_i("noop_with_empty_axes", 0) != 0;
    Ok(match axes {
        Some(a) if !a.is_empty() => Some(
            a.iter()
                .map(|&v| norm_axis(v, x.len(), n.label))
                .collect::<R<_>>()?,
        ),
        None if n.has(1) && !arg => None,
        _ if noop => Some(vec![]),
        _ => Some(all()),
    })
}

fn reduce(n: &NodeIn) -> R<Vec<Fact>> {
    let keep = n.attr_i("keepdims", 1) != 0;
    let dtype = if n.op().starts_with("Arg") {
        Some(DataType::INT64)
    } else {
        n.dtype(0)
    };
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::of(dtype, None)]);
    };
    let Some(axes) = reduce_axes(n, x)? else {
        return Ok(vec![Fact::of(dtype, None)]);
    };
    let shape = reduce_shape(x, &axes, keep);
    let value = n
        .value(0)
        .and_then(|v| fold_reduce(n.op(), v, &n.dims_of(0)?, &axes));
    Ok(vec![n.folded(dtype, shape, value)])
}

/// A small Sum/Prod/Max/Min/Mean reduction over `axes` of `v` (of shape `dims`).
fn fold_reduce(op: &str, v: &Const, dims: &[i64], axes: &[usize]) -> Option<Const> {
    let d = small_dims(dims)?;
    let st = strides(&d);
    let kept: Vec<usize> = (0..d.len()).filter(|i| !axes.contains(i)).collect();
    let out_dims: Vec<usize> = kept.iter().map(|&i| d[i]).collect();
    let out_st = strides(&out_dims);
    let n_out: usize = out_dims.iter().product();
    let target = |flat: usize| -> usize {
        kept.iter()
            .zip(&out_st)
            .map(|(&ax, &s)| (flat / st[ax]) % d[ax].max(1) * s)
            .sum()
    };
    match v {
        Const::Int(x) if op != "ReduceMean" => {
            let init = match op {
                "ReduceSum" => 0,
                "ReduceProd" => 1,
                "ReduceMax" => i64::MIN,
                "ReduceMin" => i64::MAX,
                _ => return None,
            };
            let mut out = vec![init; n_out];
            for (flat, &e) in x.iter().enumerate() {
                let o = out.get_mut(target(flat))?;
                *o = match op {
                    "ReduceSum" => o.checked_add(e)?,
                    "ReduceProd" => o.checked_mul(e)?,
                    "ReduceMax" => (*o).max(e),
                    _ => (*o).min(e),
                };
            }
            Some(Const::Int(out))
        }
        _ => {
            let x = v.floats();
            let (init, count) = match op {
                "ReduceSum" | "ReduceMean" => (0.0, x.len() / n_out.max(1)),
                "ReduceProd" => (1.0, 1),
                "ReduceMax" => (f64::MIN, 1),
                "ReduceMin" => (f64::MAX, 1),
                _ => return None,
            };
            let mut out = vec![init; n_out];
            for (flat, &e) in x.iter().enumerate() {
                let o = out.get_mut(target(flat))?;
                *o = match op {
                    "ReduceSum" | "ReduceMean" => *o + e,
                    "ReduceProd" => *o * e,
                    "ReduceMax" => o.max(e),
                    _ => o.min(e),
                };
            }
            if op == "ReduceMean" {
                out.iter_mut().for_each(|o| *o /= count.max(1) as f64);
            }
            Some(Const::Float(out))
        }
    }
}

fn top_k(n: &NodeIn) -> R<Vec<Fact>> {
    let k = n
        .value(1)
        .and_then(|v| v.first_int())
        .or(n.node.attr_i("k"));
    let shape = match n.shape(0) {
        Some(x) => {
            let axis = norm_axis(n.attr_i("axis", -1), x.len(), n.label)?;
            let mut s = x.clone();
            // ONNX Runtime refuses it; tract returned a tensor of k rows.
            if let (Some(k), Some(Dim::Known(d))) = (k, s.get(axis))
                && k > *d
            {
                return n.contra(format_args!(
                    "k = {k} is more than the {d} elements of axis {axis}"
                ));
            }
            if let Some(d) = s.get_mut(axis) {
                *d = k.map(Dim::Known).unwrap_or_else(|| n.sym(axis));
            }
            Some(s)
        }
        None => None,
    };
    Ok(vec![
        Fact::of(n.dtype(0), shape.clone()),
        Fact::of(Some(DataType::INT64), shape),
    ])
}

fn nms(n: &NodeIn) -> R<Vec<Fact>> {
    Ok(vec![Fact::new(
        Some(DataType::INT64),
        vec![n.sym(0), Dim::Known(3)],
    )])
}

fn nms_cost(n: &NodeIn, _: &[Fact]) -> Result<Cost, NoCost> {
    let s = dims(n.fact(1))?; // scores [batch, classes, boxes]
    let mut f = s.clone();
    f.push(s.last().copied().unwrap_or(0));
    cost(0, prod(&f)?)
}
