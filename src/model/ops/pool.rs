//! Pooling: `MaxPool`, `AveragePool`, `LpPool`, `QLinearAveragePool` (other ops: output
//! elements × ∏kernel) and the global pools (other ops: input elements). No MACs.

use super::conv::window_shape;
use super::{Cost, Entry, NoCost, NodeIn, any, cost, numel, per_input, prod};
use crate::model::onnx::DataType;
use crate::model::shape::{Dim, Fact, R};

pub(super) const OPS: &[Entry] = &[
    any(
        &["MaxPool", "AveragePool", "LpPool", "QLinearAveragePool"],
        pool,
        pool_cost,
    ),
    any(
        &[
            "GlobalAveragePool",
            "GlobalMaxPool",
            "GlobalLpPool",
            "QLinearGlobalAveragePool",
        ],
        global_pool,
        per_input::<1>,
    ),
];

fn kernel<'a>(n: &'a NodeIn) -> &'a [i64] {
    n.node.attr_ints("kernel_shape").unwrap_or(&[])
}

fn pool(n: &NodeIn) -> R<Vec<Fact>> {
    let shape = match n.shape(0) {
        Some(x) => {
            let k = kernel(n);
            if k.is_empty() {
                return n.contra("no kernel_shape");
            }
            // A pad as large as the kernel leaves a window wholly in the padding, where max
            // and average are undefined (tract answered MaxPool with exit 0 and AveragePool
            // with NaN; ONNX's reference evaluator fails on the empty window).
            if let Some(pads) = n.node.attr_ints("pads") {
                for (j, &p) in pads.iter().enumerate() {
                    if let Some(&kk) = k.get(j % k.len().max(1)).filter(|&&kk| p >= kk) {
                        return n.malformed(format!(
                            "pads[{j}] = {p} is not smaller than the kernel ({kk}): a window would lie wholly in the padding, where there is nothing to pool"
                        ));
                    }
                }
            }
            Some(window_shape(n, x, k, None)?)
        }
        None => None,
    };
    let mut outs = vec![Fact::of(n.dtype(0), shape.clone())];
    if n.node.output.len() > 1 {
        // MaxPool's Indices.
        outs.push(Fact::of(Some(DataType::INT64), shape));
    }
    Ok(outs)
}

fn pool_cost(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let mut f: Vec<u64> = kernel(n).iter().map(|&v| v.max(0) as u64).collect();
    f.push(numel(outs.first())?);
    cost(0, prod(&f)?)
}

fn global_pool(n: &NodeIn) -> R<Vec<Fact>> {
    let channels_last = n.attr_i("channels_last", 0) == 1;
    let shape = n.shape(0).map(|x| {
        let last = x.len().saturating_sub(1);
        x.iter()
            .enumerate()
            .map(|(i, d)| {
                let keep = if channels_last {
                    i == 0 || i == last
                } else {
                    i < 2
                };
                if keep { d.clone() } else { Dim::Known(1) }
            })
            .collect()
    });
    Ok(vec![Fact::of(n.dtype(0), shape)])
}
