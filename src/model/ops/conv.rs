//! Convolutions: `Conv`, `ConvInteger`, `QLinearConv`, `FusedConv`, `NhwcConv` and
//! `ConvTranspose`, and the sliding-window output size they share with pooling.
//!
//! MACs: Conv N·C_out·∏out_spatial · (C_in/group)·∏kernel (each output element reads
//! one weight slice); ConvTranspose N·C_in·∏in_spatial · (C_out/group)·∏kernel. Bias adds
//! are other ops (one per output element).

use super::{Cost, Entry, NoCost, NodeIn, any, cost, dims, numel, prod};
use crate::model::onnx::DataType;
use crate::model::shape::{Dim, Fact, R, Shape, check_eq, shape_str};

pub(super) const OPS: &[Entry] = &[
    any(
        &[
            "Conv",
            "ConvInteger",
            "QLinearConv",
            "FusedConv",
            "NhwcConv",
        ],
        conv,
        conv_cost,
    ),
    any(&["ConvTranspose"], conv_transpose, conv_transpose_cost),
];

/// Index of the weight input.
fn weight_at(n: &NodeIn) -> usize {
    if n.op() == "QLinearConv" { 3 } else { 1 }
}

fn conv(n: &NodeIn) -> R<Vec<Fact>> {
    let w = weight_at(n);
    let dtype = match n.op() {
        "ConvInteger" => Some(DataType::INT32),
        "QLinearConv" => n.dtype(7).or(n.dtype(0)),
        _ => n.dtype(0),
    };
    let shape = match (n.shape(0), n.shape(w)) {
        (Some(x), Some(wt)) => Some(conv_shape(n, x, wt)?),
        _ => None,
    };
    Ok(vec![Fact::of(dtype, shape)])
}

fn conv_cost(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let wd = dims(n.fact(weight_at(n)))?;
    let out = numel(outs.first())?;
    let per_out = wd
        .get(1..)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| NoCost::Unresolved("the weight is not a convolution kernel".into()))?;
    let bias = match n.op() {
        "QLinearConv" => n.has(8),
        "ConvInteger" => false,
        _ => n.has(2),
    };
    let macs = prod(&[&[out], per_out].concat())?;
    cost(macs, if bias { out } else { 0 })
}

/// Output of a convolution of `x` by weights `w`.
fn conv_shape(n: &NodeIn, x: &Shape, w: &Shape) -> R<Shape> {
    if w.len() < 3 {
        return n.contra(format_args!(
            "weight {} is not a convolution kernel",
            shape_str(w)
        ));
    }
    let group = n.attr_i("group", 1);
    if group < 1 {
        return n.contra(format_args!("group={group} must be at least 1"));
    }
    if let (Some(cin), Some(wc)) = (x.get(1).and_then(|d| d.known()), w[1].known())
        && Some(cin) != wc.checked_mul(group)
    {
        return n.contra(format_args!(
            "input {} has {cin} channels but the weights {} with group={group} expect {}",
            shape_str(x),
            shape_str(w),
            wc.saturating_mul(group)
        ));
    }
    let k: Vec<i64> = match n.node.attr_ints("kernel_shape") {
        Some(k) => k.to_vec(),
        None => w[2..].iter().map(|d| d.known().unwrap_or(1)).collect(),
    };
    window_shape(n, x, &k, Some(w[0].clone()))
}

/// Strides, dilations, pads and auto_pad of a window over `rank` spatial axes.
struct Window {
    rank: usize,
    strides: Vec<i64>,
    dilations: Vec<i64>,
    pads: Vec<i64>,
    auto_pad: String,
}

impl Window {
    /// The window attributes of `n` over `rank` spatial axes; a list of another length is
    /// malformed (tract indexed past a one-value `strides` of a 2-D Conv and panicked; ONNX
    /// Runtime: "Attribute strides has incorrect size").
    fn of(n: &NodeIn, rank: usize) -> R<Window> {
        let ints = |name: &str, default: i64, len: usize| match n.node.attr_ints(name) {
            Some(v) if v.len() != len => n.malformed(format_args!(
                "{name} has {} value{}; {len} are needed for {rank} spatial axes",
                v.len(),
                if v.len() == 1 { "" } else { "s" }
            )),
            Some(v) => Ok(v.to_vec()),
            None => Ok(vec![default; len]),
        };
        Ok(Window {
            rank,
            strides: ints("strides", 1, rank)?,
            dilations: ints("dilations", 1, rank)?,
            pads: ints("pads", 0, 2 * rank)?,
            auto_pad: n.node.attr_s("auto_pad").unwrap_or_else(|| "NOTSET".into()),
        })
    }
    /// The stride of spatial axis `i`; ONNX requires it positive (a stride of 0 would divide
    /// by zero in the engine, a negative one walks backwards out of the input).
    fn stride(&self, n: &NodeIn, i: usize) -> R<i64> {
        let st = self.strides.get(i).copied().unwrap_or(1);
        if st < 1 {
            return n.malformed(format_args!(
                "stride {st} on spatial axis {i} (strides must be positive)"
            ));
        }
        Ok(st)
    }
    /// Kernel extent after dilation.
    fn extent(&self, n: &NodeIn, k: i64, i: usize) -> R<i64> {
        let d = self.dilations.get(i).copied().unwrap_or(1);
        if k < 1 || d < 1 {
            return n.malformed(format_args!(
                "kernel size {k} with dilation {d} on spatial axis {i}"
            ));
        }
        n.add(n.mul(k - 1, d)?, 1)
    }
    fn pad(&self, i: usize) -> i64 {
        self.pads.get(i).copied().unwrap_or(0)
    }
}

/// Output shape of a sliding window (Conv, pooling): ONNX's formulas for explicit pads,
/// SAME_UPPER/SAME_LOWER and VALID, and `ceil_mode` with PyTorch's rule that the last
/// window must start inside the input or its left padding. `channels` is C_out (Conv);
/// pooling keeps the input's channels.
pub(super) fn window_shape(n: &NodeIn, x: &Shape, k: &[i64], channels: Option<Dim>) -> R<Shape> {
    let sr = k.len();
    if x.len() != sr + 2 {
        return n.contra(format_args!(
            "input {} has rank {} but the kernel is {sr}-D (expected rank {})",
            shape_str(x),
            x.len(),
            sr + 2
        ));
    }
    let win = Window::of(n, sr)?;
    let mut out = vec![x[0].clone(), channels.unwrap_or_else(|| x[1].clone())];
    for (i, &ki) in k.iter().enumerate() {
        let dim = match x[i + 2].known() {
            None => n.sym(i + 2),
            Some(inp) => Dim::Known(window_dim(n, &win, inp, ki, i, x)?),
        };
        out.push(dim);
    }
    Ok(out)
}

/// Output size of one spatial axis of a window of `k` over `inp`.
/// (`pads` hold the begin values of every axis, then the end values.)
fn window_dim(n: &NodeIn, win: &Window, inp: i64, k: i64, i: usize, x: &Shape) -> R<i64> {
    let ek = win.extent(n, k, i)?;
    let st = win.stride(n, i)?;
    let o = match win.auto_pad.as_str() {
        "SAME_UPPER" | "SAME_LOWER" => n.add(inp, st - 1)? / st,
        "VALID" if inp < ek => {
            return n.contra(format_args!(
                "input {} is smaller than the kernel ({ek} after dilation) on spatial axis {i}",
                shape_str(x)
            ));
        }
        "VALID" => (inp - ek) / st + 1,
        _ => {
            let (pb, pe) = (win.pad(i), win.pad(i + win.rank));
            let span = n.add(n.add(inp, pb)?, pe)?;
            let span = n.fits(span.checked_sub(ek), "an output dim")?;
            if span < 0 {
                return n.contra(format_args!(
                    "input {} is smaller than the kernel ({ek} after dilation) on spatial axis {i}",
                    shape_str(x)
                ));
            }
            if n.attr_i("ceil_mode", 0) != 0 {
                let mut o = n.add(span, st - 1)? / st + 1;
                if (o - 1).saturating_mul(st) >= inp.saturating_add(pb) {
                    o -= 1;
                }
                o
            } else {
                span / st + 1
            }
        }
    };
    if o <= 0 {
        return n.contra(format_args!(
            "input {} gives an empty output on spatial axis {i}",
            shape_str(x)
        ));
    }
    Ok(o)
}

fn conv_transpose(n: &NodeIn) -> R<Vec<Fact>> {
    let shape = match (n.shape(0), n.shape(1)) {
        (Some(x), Some(w)) => Some(conv_transpose_shape(n, x, w)?),
        _ => None,
    };
    Ok(vec![Fact::of(n.dtype(0), shape)])
}

fn conv_transpose_cost(n: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    let x = numel(n.fact(0))?;
    let wd = dims(n.fact(1))?;
    let per_in = wd
        .get(1..)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| NoCost::Unresolved("the weight is not a convolution kernel".into()))?;
    let bias = if n.has(2) { numel(outs.first())? } else { 0 };
    cost(prod(&[&[x], per_in].concat())?, bias)
}

fn conv_transpose_shape(n: &NodeIn, x: &Shape, w: &Shape) -> R<Shape> {
    if w.len() < 3 || x.len() != w.len() {
        return n.contra(format_args!(
            "input {} and weight {} ranks differ",
            shape_str(x),
            shape_str(w)
        ));
    }
    let sr = w.len() - 2;
    let group = n.attr_i("group", 1);
    check_eq(&x[1], &w[0], n.label, "ConvTranspose input channels")?;
    let cout = match w[1].known() {
        Some(c) => Dim::Known(n.mul(c, group)?),
        None => n.sym(1),
    };
    let k: Vec<i64> = n
        .node
        .attr_ints("kernel_shape")
        .map(|k| k.to_vec())
        .unwrap_or_else(|| w[2..].iter().map(|d| d.known().unwrap_or(1)).collect());
    let win = Window::of(n, sr)?;
    let out_pad = n.node.attr_ints("output_padding").unwrap_or(&[]);
    let explicit = n.node.attr_ints("output_shape");
    let mut out = vec![x[0].clone(), cout];
    for i in 0..sr {
        if let Some(os) = explicit {
            let j = os.len().saturating_sub(sr) + i;
            out.push(Dim::Known(os.get(j).copied().unwrap_or(0)));
            continue;
        }
        let Some(inp) = x[i + 2].known() else {
            out.push(n.sym(i + 2));
            continue;
        };
        let st = win.stride(n, i)?;
        let d = match win.auto_pad.as_str() {
            "SAME_UPPER" | "SAME_LOWER" => n.mul(inp, st)?,
            _ => {
                let ek = win.extent(n, k.get(i).copied().unwrap_or(1), i)?;
                let base = n.add(n.mul(st, inp - 1)?, out_pad.get(i).copied().unwrap_or(0))?;
                let pads = n.add(win.pad(i), win.pad(i + sr))?;
                n.fits(n.add(base, ek)?.checked_sub(pads), "an output dim")?
            }
        };
        if d < 0 {
            return n.contra(format_args!(
                "input {} gives a negative output size {d} on spatial axis {i}",
                shape_str(x)
            ));
        }
        out.push(Dim::Known(d));
    }
    Ok(out)
}
