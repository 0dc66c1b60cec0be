//! Attention: ONNX `Attention` (opset 23) and `com.microsoft` `MultiHeadAttention`
//! (B·heads·S_q·S_kv·(D_qk + D_v) MACs: scores and the weighted sum; 4 other ops per
//! score: scale and softmax), and `com.microsoft` `Attention`, which adds the fused QKV
//! projection (B·S·In·3H MACs) and its bias.

use super::{Cost, Domain, Entry, NoCost, NodeIn, Op, any, cost, dims, prod};
use crate::model::shape::{Dim, Fact, R, Shape};

pub(super) const OPS: &[Entry] = &[
    Entry {
        names: &["Attention"],
        domain: Domain::Onnx,
        op: Op {
            shape: onnx_attention,
            cost: onnx_attention_cost,
        },
    },
    any(&["MultiHeadAttention"], mha, mha_cost),
    Entry {
        names: &["Attention"],
        domain: Domain::Other,
        op: Op {
            shape: ms_attention,
            cost: ms_attention_cost,
        },
    },
];

fn heads(n: &NodeIn, name: &str) -> u64 {
    n.attr_i(name, 1).max(1) as u64
}

fn onnx_attention(n: &NodeIn) -> R<Vec<Fact>> {
    Ok(vec![Fact::of(n.dtype(0), attention_output(n))])
}

/// ONNX Attention (opset 23): output shape of `Y` from Q (and V's head size).
fn attention_output(n: &NodeIn) -> Option<Shape> {
    let q = n.shape(0)?;
    let v = n.shape(2)?;
    match (q.as_slice(), v.as_slice()) {
        ([q0, q1, q2, _], [_, _, _, v3]) => {
            Some(vec![q0.clone(), q1.clone(), q2.clone(), v3.clone()])
        }
        ([q0, q1, _], [_, _, v2]) => {
            let qh = n.node.attr_i("q_num_heads")?;
            let kvh = n.node.attr_i("kv_num_heads")?;
            let vh = v2.known()?.checked_div(kvh)?;
            Some(vec![
                q0.clone(),
                q1.clone(),
                Dim::Known(qh.checked_mul(vh)?),
            ])
        }
        _ => None,
    }
}

fn unexpected(what: &str) -> NoCost {
    NoCost::Unresolved(format!("unexpected {what} layout"))
}

fn onnx_attention_cost(n: &NodeIn, _: &[Fact]) -> Result<Cost, NoCost> {
    let (q, k, v) = (dims(n.fact(0))?, dims(n.fact(1))?, dims(n.fact(2))?);
    let (b, h, sq, skv, dqk, dv) = match (q.as_slice(), k.as_slice(), v.as_slice()) {
        (&[b, h, sq, dqk], &[_, _, skv, _], &[_, _, _, dv]) => (b, h, sq, skv, dqk, dv),
        (&[b, sq, qd], &[_, skv, _], &[_, _, vd]) => {
            let (qh, kvh) = (heads(n, "q_num_heads"), heads(n, "kv_num_heads"));
            (b, qh, sq, skv, qd / qh, vd / kvh)
        }
        _ => return Err(unexpected("Q/K/V")),
    };
    let scores = prod(&[b, h, sq, skv])?;
    cost(
        prod(&[scores, dqk.saturating_add(dv)])?,
        prod(&[4, scores])?,
    )
}

fn mha(n: &NodeIn) -> R<Vec<Fact>> {
    let shape = match (n.shape(0), n.shape(2)) {
        (Some(q), Some(v)) if q.len() == 3 && v.len() == 3 => {
            Some(vec![q[0].clone(), q[1].clone(), v[2].clone()])
        }
        (Some(q), _) if q.len() == 3 => Some(q.clone()),
        _ => None,
    };
    Ok(vec![Fact::of(n.dtype(0), shape)])
}

fn mha_cost(n: &NodeIn, _: &[Fact]) -> Result<Cost, NoCost> {
    let (q, k, v) = (dims(n.fact(0))?, dims(n.fact(1))?, dims(n.fact(2))?);
    let heads = heads(n, "num_heads");
    let (&[b, sq, qd], &[_, skv, _], &[_, _, vd]) = (q.as_slice(), k.as_slice(), v.as_slice())
    else {
        return Err(NoCost::Unresolved("packed QKV layout".into()));
    };
    let scores = prod(&[b, heads, sq, skv])?;
    let per = (qd / heads).saturating_add(vd / heads);
    cost(prod(&[scores, per])?, prod(&[4, scores])?)
}

/// com.microsoft Attention: input [B,S,In], weights [In, 3H] (or qkv_hidden_sizes).
fn ms_attention(n: &NodeIn) -> R<Vec<Fact>> {
    let shape = match (n.shape(0), n.shape(1)) {
        (Some(x), Some(w)) if x.len() == 3 && w.len() == 2 => {
            let v_hidden = match n.node.attr_ints("qkv_hidden_sizes") {
                Some(&[_, _, v]) => Dim::Known(v),
                _ => match w[1].known() {
                    Some(h3) => Dim::Known(h3 / 3),
                    None => n.sym(2),
                },
            };
            Some(vec![x[0].clone(), x[1].clone(), v_hidden])
        }
        _ => None,
    };
    Ok(vec![Fact::of(n.dtype(0), shape)])
}

fn ms_attention_cost(n: &NodeIn, _: &[Fact]) -> Result<Cost, NoCost> {
    let (x, w) = (dims(n.fact(0))?, dims(n.fact(1))?);
    let (&[b, s, inp], &[_, h3]) = (x.as_slice(), w.as_slice()) else {
        return Err(unexpected("Attention"));
    };
    let heads = heads(n, "num_heads");
    let proj = prod(&[b, s, inp, h3])?;
    let scores = prod(&[b, heads, s, s])?;
    let h = h3 / 3;
    let attend = prod(&[scores, 2 * h / heads])?;
    let bias = if n.has(2) { prod(&[b, s, h3])? } else { 0 };
    let other = prod(&[4, scores])?.checked_add(bias);
    let macs = proj.checked_add(attend);
    match (macs, other) {
        (Some(m), Some(o)) => cost(m, o),
        _ => Err(NoCost::TooLarge("more than 1.8e19".into())),
    }
}
