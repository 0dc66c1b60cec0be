//! Resampling: `Resize`/`Upsample` (other ops: nearest 0, a gather; linear output·2^k,
//! cubic output·4^k for k resized axes) and `GridSample` (4 per output element). No MACs.
//! The output size comes from `sizes`, or from `scales` (floor(in · scale)), read from
//! propagated constant values.

use super::{Cost, Entry, NoCost, NodeIn, any, cost, dims, numel, per_output, prod};
use crate::model::shape::{Dim, Fact, R, norm_axis};

pub(super) const OPS: &[Entry] = &[
    any(&["Resize", "Upsample"], resize, resize_cost),
    any(&["GridSample"], grid_sample, per_output::<4>),
];

/// Scales and sizes of a Resize (inputs 2 and 3 from opset 11; input 1 or the `scales`
/// attribute for Resize-10 and Upsample).
fn scales_sizes(n: &NodeIn) -> (Option<Vec<f64>>, Option<Vec<i64>>) {
    if n.op() == "Upsample" || n.opset < 11 {
        let s = if n.has(1) {
            n.value(1).map(|c| c.floats())
        } else {
            n.node
                .attr_floats("scales")
                .map(|v| v.iter().map(|&f| f as f64).collect())
        };
        (s, None)
    } else {
        (
            n.value(2).map(|c| c.floats()).filter(|v| !v.is_empty()),
            n.value(3).map(|c| c.ints()).filter(|v| !v.is_empty()),
        )
    }
}

fn resize(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = n.dtype(0);
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::unknown()]);
    };
    let r = x.len();
    let (scales, sizes) = scales_sizes(n);
    let axes: Vec<usize> = match n.node.attr_ints("axes") {
        Some(a) => a
            .iter()
            .map(|&v| norm_axis(v, r, n.label))
            .collect::<R<_>>()?,
        None => (0..r).collect(),
    };
    let mut out = x.clone();
    if let Some(sz) = sizes {
        for (j, &a) in axes.iter().enumerate() {
            out[a] = Dim::Known(sz.get(j).copied().unwrap_or(1));
        }
    } else if let Some(sc) = scales {
        if sc.len() != axes.len() {
            return n.contra(format_args!("{} scales for a rank-{r} input", sc.len()));
        }
        for (&a, &s) in axes.iter().zip(&sc) {
            out[a] = match x[a].known() {
                Some(v) => {
                    let d = (v as f64 * s).floor();
                    Dim::Known(n.fits(
                        (d.is_finite() && d.abs() < 9.0e18).then_some(d as i64),
                        "an output dim",
                    )?)
                }
                None if s == 1.0 => x[a].clone(),
                None => n.sym(a),
            };
        }
    } else {
        for (i, d) in out.iter_mut().enumerate().skip(2) {
            *d = n.sym(i);
        }
    }
    Ok(vec![Fact::new(dt, out)])
}

fn resize_cost(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let mode = n.node.attr_s("mode").unwrap_or_else(|| "nearest".into());
    let x = dims(n.fact(0))?;
    let y = dims(outs.first())?;
    let k = x.iter().zip(&y).filter(|(a, b)| a != b).count() as u32;
    let base: u64 = match mode.as_str() {
        "linear" | "bilinear" | "trilinear" => 2,
        "cubic" => 4,
        _ => 0,
    };
    let per = base
        .checked_pow(k)
        .ok_or_else(|| NoCost::TooLarge(format!("{base}^{k} per element")))?;
    cost(0, prod(&[per, numel(outs.first())?])?)
}

fn grid_sample(n: &NodeIn) -> R<Vec<Fact>> {
    let shape = match (n.shape(0), n.shape(1)) {
        (Some(x), Some(g)) if x.len() >= 3 && g.len() == x.len() => {
            let mut s = vec![x[0].clone(), x[1].clone()];
            s.extend(g[1..g.len() - 1].iter().cloned());
            Some(s)
        }
        _ => None,
    };
    Ok(vec![Fact::of(n.dtype(0), shape)])
}
