//! Normalisation and softmax: `BatchNormalization` (2 other ops per element: the folded
//! scale and shift), layer/instance/group/Lp/mean-variance normalisation and the fused
//! `com.microsoft` layer norms (5 per element), `Softmax`/`LogSoftmax` (3: exp, sum,
//! divide) and `LRN` (`size` per element). No MACs.

use super::{Cost, Entry, NoCost, NodeIn, any, cost, numel, per_output, prod, same_shape};
use crate::model::onnx::DataType;
use crate::model::shape::{Dim, Fact, R, norm_axis};

pub(super) const OPS: &[Entry] = &[
    any(&["BatchNormalization"], same_shape, per_output::<2>),
    any(&["LayerNormalization"], layer_norm, per_output::<5>),
    any(
        &[
            "InstanceNormalization",
            "GroupNormalization",
            "LpNormalization",
            "MeanVarianceNormalization",
            "SkipLayerNormalization",
            "SkipSimplifiedLayerNormalization",
            "SimplifiedLayerNormalization",
        ],
        same_shape,
        per_output::<5>,
    ),
    any(&["Softmax", "LogSoftmax"], same_shape, per_output::<3>),
    any(&["LRN"], lrn, lrn_cost),
];

/// Y like X; Mean and InvStdDev keep the dims before `axis` and are 1 from it on.
fn layer_norm(n: &NodeIn) -> R<Vec<Fact>> {
    let mut outs = vec![Fact::like(n.fact(0))];
    let stat = n.shape(0).map(|s| {
        let axis = norm_axis(n.attr_i("axis", -1), s.len(), n.label).unwrap_or(0);
        let mut t = s.clone();
        for d in t.iter_mut().skip(axis) {
            *d = Dim::Known(1);
        }
        t
    });
    for _ in 1..n.node.output.len() {
        outs.push(Fact::of(Some(DataType::FLOAT), stat.clone()));
    }
    Ok(outs)
}

/// Y like X; `size` (required) must be positive: ONNX Runtime refuses 0 ("size_ > 0"),
/// tract answered it.
fn lrn(n: &NodeIn) -> R<Vec<Fact>> {
    let size = n
        .node
        .attribute
        .iter()
        .find(|a| a.name == "size")
        .map(|a| a.i);
    match size {
        None => n.malformed("the required attribute 'size' is missing"),
        Some(s) if s < 1 => n.malformed(format!("size = {s}: it must be at least 1")),
        Some(_) => same_shape(n),
    }
}

fn lrn_cost(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let size = n.attr_i("size", 1).max(1) as u64;
    cost(0, prod(&[size, numel(outs.first())?])?)
}
