//! Recurrent layers: `LSTM` (4 gates), `GRU` (3), `RNN` (1). Per step and direction each
//! gate multiplies the input (I) and the hidden state (H): MACs dirs·seq·batch ·
//! gates·H·(I+H). Other ops per step and hidden unit: LSTM 9 (+8 with bias), GRU 8 (+6),
//! RNN 1 (+2): the gate activations and element-wise updates.

use super::{Cost, Entry, NoCost, NodeIn, any, cost, dims_n, prod};
use crate::model::shape::{Dim, Fact, R, shape_str};

pub(super) const OPS: &[Entry] = &[any(&["LSTM", "GRU", "RNN"], rnn, rnn_cost)];

/// Gates, element-wise ops per hidden unit, and the extra ops a bias adds.
fn gates(op: &str) -> (u64, u64, u64) {
    match op {
        "LSTM" => (4, 9, 8),
        "GRU" => (3, 8, 6),
        _ => (1, 1, 2),
    }
}

fn rnn_cost(n: &NodeIn, _: &[Fact]) -> Result<Cost, NoCost> {
    let [x0, x1, _] = dims_n::<3>(n.fact(0), "X")?;
    let [dirs, gh, i] = dims_n::<3>(n.fact(1), "W")?; // [dirs, gates*H, I]
    let (seq, batch) = if n.attr_i("layout", 0) == 0 {
        (x0, x1)
    } else {
        (x1, x0)
    };
    let (g, elt, bias) = gates(n.op());
    let h = gh / g;
    let b = if n.has(3) { bias } else { 0 };
    let macs = prod(&[dirs, seq, batch, g, h, i.saturating_add(h)])?;
    let other = prod(&[dirs, seq, batch, h, elt + b])?;
    cost(macs, other)
}

fn rnn(n: &NodeIn) -> R<Vec<Fact>> {
    let dt = n.dtype(0);
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::unknown(); n.node.output.len()]);
    };
    let [x0, x1, _] = x.as_slice() else {
        return n.contra(format_args!("input {} must be 3-D", shape_str(x)));
    };
    let layout = n.attr_i("layout", 0);
    let (seq, batch) = if layout == 0 { (x0, x1) } else { (x1, x0) };
    let h = match n.node.attr_i("hidden_size") {
        Some(h) => Dim::Known(h),
        None => n
            .shape(2)
            .and_then(|r| r.get(2).cloned())
            .unwrap_or_else(|| n.sym(3)),
    };
    let bidirectional = n.node.attr_s("direction").as_deref() == Some("bidirectional");
    let dirs = Dim::Known(if bidirectional { 2 } else { 1 });
    let (seq, batch) = (seq.clone(), batch.clone());
    check_weights(n, &dirs, &batch, &h, layout)?;
    let (y, yh) = if layout == 0 {
        (
            vec![seq, dirs.clone(), batch.clone(), h.clone()],
            vec![dirs, batch, h],
        )
    } else {
        (
            vec![batch.clone(), seq, dirs.clone(), h.clone()],
            vec![batch, dirs, h],
        )
    };
    let mut outs = vec![Fact::new(dt, y)];
    for _ in 1..n.node.output.len() {
        outs.push(Fact::new(dt, yh.clone()));
    }
    Ok(outs)
}

/// The weights, bias, sequence lengths and initial states against the layer's directions,
/// batch and hidden size, as ONNX defines them (W [dirs, g·H, I], R [dirs, g·H, H],
/// B [dirs, 2·g·H], sequence_lens [batch], initial_h and initial_c [dirs, batch, H] (layout
/// 1: [batch, dirs, H]), P [dirs, 3H]). Engines index these by the layer's sizes: a state of
/// another shape was an assertion failure inside tract.
fn check_weights(n: &NodeIn, dirs: &Dim, batch: &Dim, h: &Dim, layout: i64) -> R<()> {
    let (g, _, _) = gates(n.op());
    let times = |k: i64| match h {
        Dim::Known(h) => Dim::Known(h.saturating_mul(k)),
        _ => n.sym(0),
    };
    let state = if layout == 0 {
        vec![dirs.clone(), batch.clone(), h.clone()]
    } else {
        vec![batch.clone(), dirs.clone(), h.clone()]
    };
    let gh = times(g as i64);
    let expected: [(usize, &str, Vec<Dim>); 7] = [
        (1, "W", vec![dirs.clone(), gh.clone(), n.sym(0)]),
        (2, "R", vec![dirs.clone(), gh, h.clone()]),
        (3, "B", vec![dirs.clone(), times(2 * g as i64)]),
        (4, "sequence_lens", vec![batch.clone()]),
        (5, "initial_h", state.clone()),
        (6, "initial_c", state),
        (7, "P", vec![dirs.clone(), times(3)]),
    ];
    for (k, name, want) in expected {
        if k >= 6 && n.op() != "LSTM" {
            continue;
        }
        let Some(got) = n.shape(k).filter(|_| n.has(k)) else {
            continue;
        };
        let agrees = got.len() == want.len()
            && got
                .iter()
                .zip(&want)
                .all(|(a, b)| match (a.known(), b.known()) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                });
        if !agrees {
            return n.contra(format_args!(
                "input {k} ({name}) is {} where the layer needs {}",
                shape_str(got),
                shape_str(&want)
            ));
        }
    }
    Ok(())
}
