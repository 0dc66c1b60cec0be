//! Data movement that changes a tensor's shape but not its values: `Reshape`, `Flatten`,
//! `Transpose`, `Squeeze`, `Unsqueeze`, `Expand`, `Tile`, `Pad`, `DepthToSpace`,
//! `SpaceToDepth`. No arithmetic (cost 0). Their shape inputs (Reshape's target, Pad's
//! pads, ...) are read from propagated constant values; small values pass through
//! (Reshape, Squeeze, Unsqueeze, Flatten) or are rearranged (Transpose, Expand).

use super::fold::{self, small_dims};
use super::{Entry, NodeIn, any, free};
use crate::model::shape::{Dim, Fact, R, Shape, broadcast, known_shape, norm_axis, shape_str};

pub(super) const OPS: &[Entry] = &[
    any(&["Reshape"], reshape, free),
    any(&["Flatten"], flatten, free),
    any(&["Transpose"], transpose, free),
    any(&["Squeeze"], squeeze, free),
    any(&["Unsqueeze"], unsqueeze, free),
    any(&["Expand"], expand, free),
    any(&["Tile"], tile, free),
    any(&["Pad"], pad, free),
    any(&["DepthToSpace", "SpaceToDepth"], depth_space, free),
];

fn reshape(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = n.dtype(0);
    let target = n.value(1).map(|c| c.ints());
    let shape = match (n.shape(0), target) {
        (Some(x), Some(t)) => reshape_shape(n, x, &t)?,
        (_, Some(t)) if !t.contains(&-1) && !t.contains(&0) => known_shape(&t),
        (_, Some(t)) => n.unknown_rank(t.len()),
        _ => match n.dims_of(1).as_deref() {
            Some(&[r]) => n.unknown_rank(usize::try_from(r).unwrap_or(0)),
            _ => return Ok(vec![Fact::of(dt, None)]),
        },
    };
    Ok(vec![n.passed(0, dt, shape)])
}

/// Product of known dims (`None` when one is symbolic), exact in `i128`.
fn known_product(dims: impl Iterator<Item = Option<i64>>) -> Option<Option<i128>> {
    let mut p: i128 = 1;
    for d in dims {
        match d {
            Some(v) => p = p.checked_mul(v as i128)?,
            None => return Some(None),
        }
    }
    Some(Some(p))
}

fn reshape_shape(n: &NodeIn, x: &Shape, t: &[i64]) -> R<Shape> {
    let allow_zero = n.attr_i("allowzero", 0) != 0;
    let mut out: Vec<Dim> = Vec::with_capacity(t.len());
    let mut infer_at = None;
    for (i, &v) in t.iter().enumerate() {
        match v {
            0 if !allow_zero => match x.get(i) {
                Some(d) => out.push(d.clone()),
                None => {
                    return n.contra(format_args!(
                        "target {t:?} copies dim {i} of input {} which has no such dim",
                        shape_str(x)
                    ));
                }
            },
            -1 if infer_at.is_some() => {
                return n.contra(format_args!("target {t:?} has more than one -1"));
            }
            -1 => {
                infer_at = Some(i);
                out.push(Dim::Known(-1));
            }
            v if v < 0 => return n.contra(format_args!("target {t:?} has a dim {v}")),
            v => out.push(Dim::Known(v)),
        }
    }
    let total = n.fits(
        known_product(x.iter().map(|d| d.known())),
        "the element count",
    )?;
    let known_part = n.fits(
        known_product(
            out.iter()
                .enumerate()
                .filter(|(i, _)| Some(*i) != infer_at)
                .map(|(_, d)| d.known()),
        ),
        "the target's element count",
    )?;
    match (total, known_part, infer_at) {
        (Some(tot), Some(kp), Some(i)) => {
            if kp == 0 || tot % kp != 0 {
                return n.contra(format_args!(
                    "cannot reshape {} ({tot} elements) into {t:?}",
                    shape_str(x)
                ));
            }
            out[i] = Dim::Known(n.fits(i64::try_from(tot / kp).ok(), "an output dim")?);
        }
        (Some(tot), Some(kp), None) if tot != kp => {
            return n.contra(format_args!(
                "cannot reshape {} ({tot} elements) into {t:?} ({kp} elements)",
                shape_str(x)
            ));
        }
        (_, _, Some(i)) if out[i] == Dim::Known(-1) => out[i] = n.sym(i),
        _ => {}
    }
    Ok(out)
}

fn product_dim(n: &NodeIn, dims: &[Dim], k: usize) -> R<Dim> {
    Ok(
        match n.fits(known_product(dims.iter().map(|d| d.known())), "a dim")? {
            Some(p) => Dim::Known(n.fits(i64::try_from(p).ok(), "an output dim")?),
            None => n.sym(k),
        },
    )
}

fn flatten(n: &NodeIn) -> R<Vec<Fact>> {
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::of(n.dtype(0), None)]);
    };
    let r = x.len() as i64;
    let given = n.attr_i("axis", 1);
    // ONNX allows [-r, r]; tract sliced the dims with whatever it got.
    if !(-r..=r).contains(&given) {
        return n.malformed(format_args!(
            "axis {given} is outside [-{r}, {r}] for an input of rank {r}"
        ));
    }
    let axis = if given < 0 { given + r } else { given } as usize;
    let shape = vec![
        product_dim(n, &x[..axis], 0)?,
        product_dim(n, &x[axis..], 1)?,
    ];
    Ok(vec![n.passed(0, n.dtype(0), shape)])
}

fn transpose(n: &NodeIn) -> R<Vec<Fact>> {
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::of(n.dtype(0), None)]);
    };
    let perm: Vec<i64> = n
        .node
        .attr_ints("perm")
        .map(|p| p.to_vec())
        .unwrap_or_else(|| (0..x.len() as i64).rev().collect());
    if perm.len() != x.len() {
        return n.contra(format_args!(
            "perm has {} entries for a rank-{} input",
            perm.len(),
            x.len()
        ));
    }
    let perm: Vec<usize> = perm
        .iter()
        .map(|&p| norm_axis(p, x.len(), n.label))
        .collect::<R<_>>()?;
    // Each axis once: tract's IR conversion spun for seconds on perm [0, 0].
    let mut seen = vec![false; x.len()];
    for &p in &perm {
        if std::mem::replace(&mut seen[p], true) {
            return n.malformed(format_args!(
                "perm names axis {p} twice (it must be a permutation of 0..{})",
                x.len()
            ));
        }
    }
    let shape: Shape = perm.iter().map(|&p| x[p].clone()).collect();
    let value = match (n.value(0), n.dims_of(0).and_then(|d| small_dims(&d))) {
        (Some(v), Some(d)) => fold::transpose(v, &d, &perm),
        _ => None,
    };
    Ok(vec![n.folded(n.dtype(0), shape, value)])
}

fn squeeze(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = n.dtype(0);
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::of(dt, None)]);
    };
    let shape: Shape = match n.ints_in_or_attr(1, "axes") {
        Some(a) => {
            let a: Vec<usize> = a
                .iter()
                .map(|&v| norm_axis(v, x.len(), n.label))
                .collect::<R<_>>()?;
            if let Some(&i) = a.iter().find(|&&i| matches!(x[i], Dim::Known(d) if d != 1)) {
                return n.contra(format_args!("axis {i} of input {} is not 1", shape_str(x)));
            }
            x.iter()
                .enumerate()
                .filter(|(i, _)| !a.contains(i))
                .map(|(_, d)| d.clone())
                .collect()
        }
        None if n.has(1) => return Ok(vec![Fact::of(dt, None)]),
        None => x.iter().filter(|d| **d != Dim::Known(1)).cloned().collect(),
    };
    Ok(vec![n.passed(0, dt, shape)])
}

fn unsqueeze(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = n.dtype(0);
    let (Some(x), Some(a)) = (n.shape(0), n.ints_in_or_attr(1, "axes")) else {
        return Ok(vec![Fact::of(dt, None)]);
    };
    let r = x.len() + a.len();
    let mut axes: Vec<usize> = a
        .iter()
        .map(|&v| norm_axis(v, r, n.label))
        .collect::<R<_>>()?;
    axes.sort_unstable();
    if axes.windows(2).any(|w| w[0] == w[1]) {
        return n.contra(format_args!("axes {a:?} repeat an axis"));
    }
    let mut it = x.iter();
    let shape: Shape = (0..r)
        .map(|i| {
            if axes.binary_search(&i).is_ok() {
                Dim::Known(1)
            } else {
                it.next().cloned().unwrap_or(Dim::Known(1))
            }
        })
        .collect();
    Ok(vec![n.passed(0, dt, shape)])
}

fn expand(n: &NodeIn) -> R<Vec<Fact>> {
    let (Some(x), Some(t)) = (n.shape(0), n.value(1)) else {
        return Ok(vec![Fact::of(n.dtype(0), None)]);
    };
    let shape = broadcast(&[x, &known_shape(&t.ints())], n.label)?;
    let value = match (
        n.value(0),
        n.dims_of(0).and_then(|d| small_dims(&d)),
        shape
            .iter()
            .map(|d| d.known())
            .collect::<Option<Vec<_>>>()
            .and_then(|d| small_dims(&d)),
    ) {
        (Some(v), Some(d), Some(out)) => fold::expand(v, &d, &out),
        _ => None,
    };
    Ok(vec![n.folded(n.dtype(0), shape, value)])
}

fn tile(n: &NodeIn) -> R<Vec<Fact>> {
    let (Some(x), Some(r)) = (n.shape(0), n.value(1)) else {
        return Ok(vec![Fact::of(n.dtype(0), None)]);
    };
    let reps = r.ints();
    if reps.len() != x.len() || reps.iter().any(|&k| k < 0) {
        return n.contra(format_args!(
            "repeats {reps:?} do not fit input {}",
            shape_str(x)
        ));
    }
    let mut shape = Vec::with_capacity(x.len());
    for (i, (d, &k)) in x.iter().zip(&reps).enumerate() {
        shape.push(match d {
            Dim::Known(v) => Dim::Known(n.mul(*v, k)?),
            Dim::Sym(_) if k == 1 => d.clone(),
            Dim::Sym(_) => n.sym(i),
        });
    }
    Ok(vec![Fact::new(n.dtype(0), shape)])
}

fn pad(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = n.dtype(0);
    let (Some(x), Some(p)) = (n.shape(0), n.ints_in_or_attr(1, "pads")) else {
        return Ok(vec![Fact::of(dt, None)]);
    };
    let r = x.len();
    let axes: Vec<usize> = match (n.has(3), n.value(3)) {
        (true, None) => return Ok(vec![Fact::new(dt, n.unknown_rank(r))]),
        (_, Some(a)) => a
            .ints()
            .iter()
            .map(|&v| norm_axis(v, r, n.label))
            .collect::<R<_>>()?,
        (false, None) => (0..r).collect(),
    };
    if p.len() != 2 * axes.len() {
        return n.contra(format_args!("{} pads for {} axes", p.len(), axes.len()));
    }
    let reflect = n.node.attr_s("mode").as_deref() == Some("reflect");
    let mut s = x.clone();
    for (j, &a) in axes.iter().enumerate() {
        let (begin, end) = (p[j], p[j + axes.len()]);
        s[a] = match &s[a] {
            // A reflection repeats at most the axis less its edge: ONNX Runtime refuses a
            // longer one, and tract answered one with values other than ONNX's reference.
            Dim::Known(v) if reflect && begin.max(end) > v - 1 => {
                return n.contra(format_args!(
                    "reflect pads {begin} and {end} on axis {a} of input {}, more than its {v} elements less one",
                    shape_str(x)
                ));
            }
            Dim::Known(v) => {
                let d = n.add(n.add(*v, begin)?, end)?;
                if d < 0 {
                    return n.contra(format_args!(
                        "pads {p:?} make axis {a} of input {} negative",
                        shape_str(x)
                    ));
                }
                Dim::Known(d)
            }
            d if begin == 0 && end == 0 => d.clone(),
            _ => n.sym(a),
        };
    }
    Ok(vec![Fact::new(dt, s)])
}

fn depth_space(n: &NodeIn) -> R<Vec<Fact>> {
    let Some(x) = n.dims_of(0) else {
        return Ok(vec![Fact::of(n.dtype(0), None)]);
    };
    let b = n.attr_i("blocksize", 1);
    let [x0, x1, x2, x3] = x.as_slice() else {
        return Ok(vec![Fact::new(n.dtype(0), n.unknown_rank(x.len()))]);
    };
    if b < 1 {
        return n.contra(format_args!("blocksize {b} must be at least 1"));
    }
    let bb = n.mul(b, b)?;
    let shape = if n.op() == "DepthToSpace" {
        [*x0, x1 / bb, n.mul(*x2, b)?, n.mul(*x3, b)?]
    } else {
        [*x0, n.mul(*x1, bb)?, x2 / b, x3 / b]
    };
    Ok(vec![Fact::new(n.dtype(0), known_shape(&shape))])
}
