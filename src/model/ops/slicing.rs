//! Joining, splitting and indexing: `Concat`, `QLinearConcat`, `Split`, `Slice`,
//! `Gather`, `GatherElements`, `GatherND`, `Scatter*`, `Compress`, `Unique`, `NonZero`,
//! `OneHot`. No arithmetic (cost 0). Small constant values are concatenated, split,
//! sliced and gathered along any axis: exporters build shapes this way
//! (`Shape -> Slice -> Concat`, `Reshape(pads, [-1, 2]) -> Slice(step -1)`).

use super::fold::{self, Pick, small_dims};
use super::{Entry, NodeIn, any, free, same_shape};
use crate::model::onnx::DataType;
use crate::model::shape::{Const, Dim, Fact, R, Shape, check_eq, norm_axis, shape_str};

pub(super) const OPS: &[Entry] = &[
    any(&["Concat", "QLinearConcat"], concat, free),
    any(&["Split"], split, free),
    any(&["Slice"], slice, free),
    any(&["Gather"], gather, free),
    any(&["GatherElements"], gather_elements, free),
    any(&["GatherND"], gather_nd, free),
    any(&["Scatter", "ScatterElements"], scatter_elements, free),
    any(&["ScatterND"], same_shape, free),
    any(&["Compress", "Unique"], unknown_outputs, free),
    any(&["NonZero"], non_zero, free),
    any(&["OneHot"], one_hot, free),
];

/// ScatterElements: constant indices must lie in [-d, d) on the axis (tract indexed with
/// them unchecked, a caught panic; ONNX Runtime refuses them).
fn scatter_elements(n: &NodeIn) -> R<Vec<Fact>> {
    if let (Some(x), Some(idx)) = (n.shape(0), n.value(1)) {
        let axis = norm_axis(n.attr_i("axis", 0), x.len(), n.label)?;
        if let Some(&Dim::Known(d)) = x.get(axis)
            && let Some(i) = idx.ints().into_iter().find(|&i| i < -d || i >= d)
        {
            return n.contra(format_args!(
                "index {i} is outside the {d} elements of axis {axis}"
            ));
        }
    }
    same_shape(n)
}

fn unknown_outputs(n: &NodeIn) -> R<Vec<Fact>> {
    Ok(vec![Fact::unknown(); n.node.output.len()])
}

/// Small known dims of input `i` (for folding).
fn small(n: &NodeIn, i: usize) -> Option<Vec<usize>> {
    small_dims(&n.dims_of(i)?)
}

fn concat(n: &NodeIn) -> R<Vec<Fact>> {
    let (first, step) = if n.op() == "QLinearConcat" {
        (2, 3)
    } else {
        (0, 1)
    };
    let idx: Vec<usize> = (first..n.node.input.len()).step_by(step).collect();
    let dt = n.dtype(first);
    let shapes: Option<Vec<&Shape>> = idx.iter().map(|&i| n.shape(i)).collect();
    let Some(s) = shapes.filter(|s| !s.is_empty()) else {
        return Ok(vec![Fact::of(dt, None)]);
    };
    let r = s[0].len();
    let axis = norm_axis(n.attr_i("axis", 0), r, n.label)?;
    let mut out = s[0].clone();
    let mut total = Some(0i64);
    for sh in &s {
        if sh.len() != r {
            return n.contra(format_args!(
                "inputs of rank {r} and {} cannot be concatenated",
                sh.len()
            ));
        }
        for (i, d) in sh.iter().enumerate() {
            if i != axis {
                check_eq(&out[i], d, n.label, "Concat non-axis dimension")?;
                if let Dim::Sym(_) = out[i] {
                    out[i] = d.clone();
                }
            }
        }
        total = match (total, sh.get(axis).and_then(|d| d.known())) {
            (Some(t), Some(v)) => Some(n.add(t, v)?),
            _ => None,
        };
    }
    if let Some(d) = out.get_mut(axis) {
        *d = total.map(Dim::Known).unwrap_or_else(|| n.sym(axis));
    }
    let value = if n.op() == "Concat" {
        let parts: Option<Vec<(&Const, Vec<usize>)>> = idx
            .iter()
            .map(|&i| Some((n.value(i)?, small(n, i)?)))
            .collect();
        parts.and_then(|p| fold::concat(&p, axis))
    } else {
        None
    };
    Ok(vec![n.folded(dt, out, value)])
}

fn split(n: &NodeIn) -> R<Vec<Fact>> {
    let k = n.node.output.len();
    let dt = n.dtype(0);
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::unknown(); k]);
    };
    let axis = norm_axis(n.attr_i("axis", 0), x.len(), n.label)?;
    let total = x.get(axis).and_then(|d| d.known());
    let sizes: Vec<Dim> = match (n.ints_in_or_attr(1, "split"), total) {
        (Some(s), _) if !s.is_empty() => s.iter().map(|&v| Dim::Known(v)).collect(),
        (None, _) if n.has(1) => (0..k).map(|i| n.sym(i)).collect(),
        (_, Some(total)) => {
            let parts = k.max(1) as i64;
            let chunk = total / parts + i64::from(total % parts != 0);
            (0..parts)
                .map(|i| {
                    Dim::Known(
                        total
                            .saturating_sub(i.saturating_mul(chunk))
                            .clamp(0, chunk),
                    )
                })
                .collect()
        }
        _ => (0..k).map(|i| n.sym(i)).collect(),
    };
    let mut outs = Vec::with_capacity(k);
    let mut start = 0i64;
    for sz in sizes.into_iter().take(k) {
        let mut s = x.clone();
        let len = sz.known();
        s[axis] = sz;
        let value = match (n.value(0), small(n, 0), len) {
            (Some(v), Some(d), Some(len)) => split_value(v, &d, axis, start, len),
            _ => None,
        };
        start = start.saturating_add(len.unwrap_or(0));
        outs.push(n.folded(dt, s, value));
    }
    Ok(outs)
}

/// `len` entries from `start` along `axis` of a small value.
fn split_value(v: &Const, dims: &[usize], axis: usize, start: i64, len: i64) -> Option<Const> {
    let picks: Vec<Pick> = dims
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            if i == axis {
                Some(Pick {
                    start,
                    len: usize::try_from(len).ok()?,
                    step: 1,
                })
            } else {
                Some(Pick {
                    start: 0,
                    len: d,
                    step: 1,
                })
            }
        })
        .collect::<Option<_>>()?;
    fold::slice(v, dims, &picks)
}

/// Starts, ends, axes and steps of a Slice (inputs from opset 10, attributes before);
/// `None` when an input's value is not known.
type SliceArgs = (Vec<i64>, Vec<i64>, Option<Vec<i64>>, Option<Vec<i64>>);

fn slice_args(n: &NodeIn) -> Option<SliceArgs> {
    if n.has(1) {
        let optional = |i: usize| -> Option<Option<Vec<i64>>> {
            if n.has(i) {
                n.value(i).map(|c| Some(c.ints()))
            } else {
                Some(None)
            }
        };
        Some((
            n.value(1)?.ints(),
            n.value(2)?.ints(),
            optional(3)?,
            optional(4)?,
        ))
    } else {
        Some((
            n.node.attr_ints("starts")?.to_vec(),
            n.node.attr_ints("ends")?.to_vec(),
            n.node.attr_ints("axes").map(|v| v.to_vec()),
            None,
        ))
    }
}

fn slice(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = n.dtype(0);
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::unknown()]);
    };
    let Some((starts, ends, axes, steps)) = slice_args(n) else {
        return Ok(vec![Fact::new(dt, n.unknown_rank(x.len()))]);
    };
    let r = x.len();
    let axes: Vec<usize> = match axes {
        Some(a) => a
            .iter()
            .map(|&v| norm_axis(v, r, n.label))
            .collect::<R<_>>()?,
        None => (0..starts.len()).collect(),
    };
    if axes.len() != starts.len() || axes.len() != ends.len() || axes.iter().any(|&a| a >= r) {
        return n.contra(format_args!(
            "{} starts, {} ends and {} axes for input {}",
            starts.len(),
            ends.len(),
            axes.len(),
            shape_str(x)
        ));
    }
    let mut out = x.clone();
    let mut picks: Vec<Option<Pick>> = vec![None; r];
    for (j, &a) in axes.iter().enumerate() {
        let step = steps.as_ref().and_then(|s| s.get(j).copied()).unwrap_or(1);
        if step == 0 {
            return n.contra("step 0");
        }
        if step == i64::MIN {
            // Its magnitude does not fit 64 bits; tract divided by zero on it.
            return n.malformed("step -2^63 (its magnitude does not fit a 64-bit integer)");
        }
        match x[a].known() {
            None => out[a] = n.sym(a),
            Some(dim) => {
                let (s, e) = slice_bounds(starts[j], ends[j], step, dim);
                let (s128, e128, st) = (s as i128, e as i128, step as i128);
                let len = if step > 0 {
                    (e128 - s128 + st - 1) / st
                } else {
                    (s128 - e128 - st - 1) / -st
                }
                .max(0) as i64;
                out[a] = Dim::Known(len);
                picks[a] = Some(Pick {
                    start: s,
                    len: len as usize,
                    step,
                });
            }
        }
    }
    let value = match (n.value(0), small(n, 0)) {
        (Some(v), Some(d)) => {
            let full: Option<Vec<Pick>> = picks
                .iter()
                .zip(&d)
                .map(|(p, &len)| {
                    Some(p.unwrap_or(Pick {
                        start: 0,
                        len,
                        step: 1,
                    }))
                })
                .collect();
            full.and_then(|p| fold::slice(v, &d, &p))
        }
        _ => None,
    };
    Ok(vec![n.folded(dt, out, value)])
}

/// ONNX Slice clamping of `start`/`end` for a dimension of size `dim`.
fn slice_bounds(start: i64, end: i64, step: i64, dim: i64) -> (i64, i64) {
    let adj = |v: i64| if v < 0 { v.saturating_add(dim) } else { v };
    let (s, e) = (adj(start), adj(end));
    if step > 0 {
        (s.clamp(0, dim), e.clamp(0, dim))
    } else {
        (s.clamp(0, (dim - 1).max(0)), e.clamp(-1, dim - 1))
    }
}

fn gather(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = n.dtype(0);
    let (Some(d), Some(i)) = (n.shape(0), n.shape(1)) else {
        return Ok(vec![Fact::of(dt, None)]);
    };
    let axis = norm_axis(n.attr_i("axis", 0), d.len(), n.label)?;
    if axis >= d.len() {
        return n.contra(format_args!("cannot gather from a scalar"));
    }
    let mut s = d[..axis].to_vec();
    s.extend(i.iter().cloned());
    s.extend(d[axis + 1..].iter().cloned());
    let value = match (n.value(0), small(n, 0), n.value(1)) {
        (Some(v), Some(dims), Some(idx)) => {
            let len = dims[axis] as i64;
            let ids: Option<Vec<usize>> = idx
                .ints()
                .iter()
                .map(|&k| {
                    let k = if k < 0 { k + len } else { k };
                    usize::try_from(k).ok().filter(|&k| k < dims[axis])
                })
                .collect();
            ids.and_then(|ids| fold::gather(v, &dims, axis, &ids))
        }
        _ => None,
    };
    Ok(vec![n.folded(dt, s, value)])
}

fn gather_elements(n: &NodeIn) -> R<Vec<Fact>> {
    Ok(vec![Fact::of(n.dtype(0), n.shape(1).cloned())])
}

fn gather_nd(n: &NodeIn) -> R<Vec<Fact>> {
    let shape = match (n.shape(0), n.shape(1)) {
        (Some(d), Some(i)) if !i.is_empty() => {
            let b = usize::try_from(n.attr_i("batch_dims", 0)).unwrap_or(0);
            i.last()
                .and_then(|x| x.known())
                .and_then(|last| usize::try_from(last).ok())
                .and_then(|last| b.checked_add(last))
                .map(|skip| {
                    let mut s = i[..i.len() - 1].to_vec();
                    s.extend(d.iter().skip(skip).cloned());
                    s
                })
        }
        _ => None,
    };
    Ok(vec![Fact::of(n.dtype(0), shape)])
}

fn non_zero(n: &NodeIn) -> R<Vec<Fact>> {
    let rank = n
        .rank(0)
        .map(|r| Dim::Known(r as i64))
        .unwrap_or_else(|| n.sym(0));
    Ok(vec![Fact::new(Some(DataType::INT64), vec![rank, n.sym(1)])])
}

fn one_hot(n: &NodeIn) -> R<Vec<Fact>> {
    let depth = n.value(1).and_then(|v| v.first_int());
    let shape = match n.shape(0) {
        Some(x) => {
            let axis = norm_axis(n.attr_i("axis", -1), x.len() + 1, n.label)?;
            let mut s = x.clone();
            s.insert(
                axis.min(s.len()),
                depth.map(Dim::Known).unwrap_or_else(|| n.sym(axis)),
            );
            Some(s)
        }
        None => None,
    };
    Ok(vec![Fact::of(n.dtype(2), shape)])
}
