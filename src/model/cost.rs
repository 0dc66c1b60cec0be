//! What one ONNX node costs: multiply-accumulates (MACs) and "other ops".
//!
//! This is the one place where acceval's per-operator conventions live (the README copies
//! this table). FLOPs = 2 × MACs. MACs follow the convention behind torchvision's published
//! numbers (and fvcore/thop): only the multiply-accumulates of the linear-algebra operators
//! count; bias, normalisation, activations, pooling, element-wise and resize work is kept
//! apart as "other ops", so MACs can be compared with tools that print MACs as "FLOPs".
//!
//! | operator | MACs | other ops |
//! |---|---|---|
//! | Conv, ConvInteger, QLinearConv, FusedConv | N·C_out·∏out_spatial · (C_in/group)·∏kernel | bias: N·C_out·∏out_spatial |
//! | ConvTranspose | N·C_in·∏in_spatial · (C_out/group)·∏kernel | bias: output elements |
//! | Gemm, QGemm | M·N·K | C given: M·N |
//! | MatMul, MatMulInteger, QLinearMatMul, FusedMatMul, MatMulNBits | ∏batch·M·N·K (broadcast batch) | 0 |
//! | Einsum with 2 operands and a summed label | ∏ sizes of all distinct labels | 0 |
//! | Einsum without a summed label | 0 | output elements |
//! | LSTM | dirs·seq·batch · 4H·(I+H) | dirs·seq·batch·H·(9, +8 with B) |
//! | GRU | dirs·seq·batch · 3H·(I+H) | dirs·seq·batch·H·(8, +6 with B) |
//! | RNN | dirs·seq·batch · H·(I+H) | dirs·seq·batch·H·(1, +2 with B) |
//! | Attention (ONNX), MultiHeadAttention | B·heads·S_q·S_kv·(D_qk + D_v) | 4·B·heads·S_q·S_kv (scale, softmax) |
//! | Attention (com.microsoft) | B·S·In·(3H) projections + as above | as above + 3H·B·S bias |
//! | element-wise unary/binary, activations, Clip, Where, (De)QuantizeLinear, Q-ops | 0 | output elements (n-ary Sum/Max/Min/Mean: (n−1)·output) |
//! | BatchNormalization | 0 | 2 · elements (folded scale and shift) |
//! | LayerNormalization, Instance/Group/Lp/MeanVariance normalisation, SkipLayerNorm | 0 | 5 · elements |
//! | Softmax, LogSoftmax | 0 | 3 · elements (exp, sum, divide) |
//! | LRN | 0 | size · elements |
//! | MaxPool, AveragePool, LpPool | 0 | output elements · ∏kernel |
//! | GlobalAveragePool/MaxPool/LpPool, Reduce*, ArgMax/ArgMin, TopK, CumSum | 0 | input elements |
//! | Resize/Upsample | 0 | nearest: 0 (a gather); linear: output·2^k, cubic: output·4^k (k resized axes) |
//! | GridSample | 0 | output elements · 4 |
//! | NonMaxSuppression | 0 | batch·classes·boxes² (IoU pairs, upper bound) |
//! | data movement: Reshape, Flatten, Transpose, (Un)Squeeze, Concat, Split, Slice, Gather*, Scatter*, Expand, Tile, Pad, Identity, Dropout, Cast, Shape, Size, Constant*, Range, DepthToSpace, SpaceToDepth, NonZero, OneHot, Compress, Unique, Random* | 0 | 0 |
//! | If | the larger branch (noted) | the larger branch |
//! | Loop, Scan | body × trip count when static, else body once (noted) | same |
//!
//! Any other operator is "unsupported": it is listed, and the totals are a lower bound.

use super::onnx::NodeProto;
use super::shape::{Einsum, Fact};

/// The cost of one node (one execution).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub macs: u64,
    pub other_ops: u64,
}

/// Why a node has no cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCost {
    /// No rule for this operator.
    Unsupported,
    /// A rule exists, but a shape it needs is not known.
    Unresolved(String),
}

fn numel(f: Option<&Fact>) -> Result<u64, NoCost> {
    f.and_then(|f| f.numel())
        .ok_or_else(|| NoCost::Unresolved("shape not resolved".into()))
}

fn dims(f: Option<&Fact>) -> Result<Vec<u64>, NoCost> {
    f.and_then(|f| f.dims())
        .map(|d| d.iter().map(|&x| x.max(0) as u64).collect())
        .ok_or_else(|| NoCost::Unresolved("shape not resolved".into()))
}

fn has(node: &NodeProto, i: usize) -> bool {
    node.input_name(i).is_some()
}

/// Cost of `node` given its input and output facts.
pub fn cost(node: &NodeProto, ins: &[Option<&Fact>], outs: &[Fact]) -> Result<Cost, NoCost> {
    let op = node.op_type.as_str();
    let input = |i: usize| ins.get(i).copied().flatten();
    let out0 = outs.first();
    let c = |macs: u64, other_ops: u64| Ok(Cost { macs, other_ops });
    match op {
        "Conv" | "ConvInteger" | "QLinearConv" | "FusedConv" | "NhwcConv" => {
            let w = if op == "QLinearConv" { 3 } else { 1 };
            let wd = dims(input(w))?;
            let out = numel(out0)?;
            let per_out: u64 = wd[1..].iter().product();
            let bias_at = match op {
                "QLinearConv" => 8,
                "ConvInteger" => usize::MAX,
                _ => 2,
            };
            let bias = if has(node, bias_at) { out } else { 0 };
            c(out * per_out, bias)
        }
        "ConvTranspose" => {
            let x = numel(input(0))?;
            let wd = dims(input(1))?;
            let per_in: u64 = wd[1..].iter().product();
            let bias = if has(node, 2) { numel(out0)? } else { 0 };
            c(x * per_in, bias)
        }
        "Gemm" | "QGemm" => {
            let a = dims(input(0))?;
            let out = numel(out0)?;
            let k = if node.attr_i("transA").unwrap_or(0) != 0 {
                a[0]
            } else {
                a[1]
            };
            let bias_at = if op == "QGemm" { 6 } else { 2 };
            c(out * k, if has(node, bias_at) { out } else { 0 })
        }
        "MatMul" | "MatMulInteger" | "QLinearMatMul" | "FusedMatMul" | "MatMulIntegerToFloat" => {
            let a = dims(input(0))?;
            let out = numel(out0)?;
            let k =
                if op == "FusedMatMul" && node.attr_i("transA").unwrap_or(0) != 0 && a.len() >= 2 {
                    a[a.len() - 2]
                } else {
                    *a.last().unwrap_or(&1)
                };
            c(out * k, 0)
        }
        "MatMulNBits" => {
            let out = numel(out0)?;
            c(out * node.attr_i("K").unwrap_or(0).max(0) as u64, 0)
        }
        "Einsum" => {
            let eq = node.attr_s("equation").unwrap_or_default();
            let shapes: Option<Vec<_>> = ins
                .iter()
                .map(|f| f.and_then(|f| f.shape.as_ref()))
                .collect();
            let shapes = shapes.ok_or_else(|| NoCost::Unresolved("shape not resolved".into()))?;
            let e = Einsum::parse(&eq, &shapes, &node.name)
                .map_err(|e| NoCost::Unresolved(e.to_string()))?;
            let all: Option<u64> = e
                .sizes
                .values()
                .map(|d| d.known().map(|v| v.max(0) as u64))
                .product();
            let all = all.ok_or_else(|| NoCost::Unresolved("symbolic Einsum label".into()))?;
            match (e.inputs.len(), e.contracted().is_empty()) {
                (2, false) => c(all, 0),
                (_, true) => c(0, numel(out0)?),
                // A chain of 3+ operands: the cost depends on the contraction order.
                _ => Err(NoCost::Unsupported),
            }
        }
        "LSTM" | "GRU" | "RNN" => {
            let x = dims(input(0))?;
            let w = dims(input(1))?; // [dirs, gates*H, I]
            let layout = node.attr_i("layout").unwrap_or(0);
            let (seq, batch) = if layout == 0 {
                (x[0], x[1])
            } else {
                (x[1], x[0])
            };
            let (dirs, gh, i) = (w[0], w[1], w[2]);
            let gates = match op {
                "LSTM" => 4,
                "GRU" => 3,
                _ => 1,
            };
            let h = gh / gates;
            let steps = dirs * seq * batch;
            let (elt, bias) = match op {
                "LSTM" => (9, 8),
                "GRU" => (8, 6),
                _ => (1, 2),
            };
            let b = if has(node, 3) { bias } else { 0 };
            c(steps * gates * h * (i + h), steps * h * (elt + b))
        }
        "Attention" if node.domain.is_empty() || node.domain == "ai.onnx" => {
            let q = dims(input(0))?;
            let k = dims(input(1))?;
            let v = dims(input(2))?;
            let (b, heads, sq, skv, dqk, dv) = if q.len() == 4 {
                (q[0], q[1], q[2], k[2], q[3], v[3])
            } else {
                let qh = node.attr_i("q_num_heads").unwrap_or(1).max(1) as u64;
                let kvh = node.attr_i("kv_num_heads").unwrap_or(1).max(1) as u64;
                (q[0], qh, q[1], k[1], q[2] / qh, v[2] / kvh)
            };
            let scores = b * heads * sq * skv;
            c(scores * (dqk + dv), 4 * scores)
        }
        "MultiHeadAttention" => {
            let q = dims(input(0))?;
            let k = dims(input(1))?;
            let v = dims(input(2))?;
            let heads = node.attr_i("num_heads").unwrap_or(1).max(1) as u64;
            if q.len() != 3 || k.len() != 3 || v.len() != 3 {
                return Err(NoCost::Unresolved("packed QKV layout".into()));
            }
            let scores = q[0] * heads * q[1] * k[1];
            c(scores * (q[2] / heads + v[2] / heads), 4 * scores)
        }
        "Attention" => {
            // com.microsoft Attention: fused QKV projection then scaled dot-product.
            let x = dims(input(0))?;
            let w = dims(input(1))?;
            let heads = node.attr_i("num_heads").unwrap_or(1).max(1) as u64;
            if x.len() != 3 || w.len() != 2 {
                return Err(NoCost::Unresolved("unexpected Attention layout".into()));
            }
            let (b, s, inp, h3) = (x[0], x[1], x[2], w[1]);
            let proj = b * s * inp * h3;
            let h = h3 / 3;
            let scores = b * heads * s * s;
            c(
                proj + scores * (2 * h / heads),
                4 * scores + if has(node, 2) { b * s * h3 } else { 0 },
            )
        }
        "Relu"
        | "Sigmoid"
        | "Tanh"
        | "Exp"
        | "Log"
        | "Abs"
        | "Neg"
        | "Sqrt"
        | "Reciprocal"
        | "Floor"
        | "Ceil"
        | "Round"
        | "Erf"
        | "Sin"
        | "Cos"
        | "Tan"
        | "Asin"
        | "Acos"
        | "Atan"
        | "Sinh"
        | "Cosh"
        | "Asinh"
        | "Acosh"
        | "Atanh"
        | "HardSigmoid"
        | "HardSwish"
        | "LeakyRelu"
        | "Elu"
        | "Selu"
        | "Celu"
        | "Softplus"
        | "Softsign"
        | "Gelu"
        | "Mish"
        | "ThresholdedRelu"
        | "Shrink"
        | "Clip"
        | "Not"
        | "Sign"
        | "IsNaN"
        | "IsInf"
        | "Hardmax"
        | "QuickGelu"
        | "FastGelu"
        | "BiasGelu"
        | "Add"
        | "Sub"
        | "Mul"
        | "Div"
        | "Pow"
        | "And"
        | "Or"
        | "Xor"
        | "Equal"
        | "Less"
        | "Greater"
        | "LessOrEqual"
        | "GreaterOrEqual"
        | "Mod"
        | "BitShift"
        | "PRelu"
        | "Where"
        | "BitwiseAnd"
        | "BitwiseOr"
        | "BitwiseXor"
        | "QuantizeLinear"
        | "DequantizeLinear"
        | "DynamicQuantizeLinear"
        | "QLinearAdd"
        | "QLinearMul"
        | "QLinearSigmoid"
        | "QLinearLeakyRelu"
        | "BiasAdd"
        | "Bernoulli"
        | "ReverseSequence"
        | "Trilu" => c(0, numel(out0)?),
        "Sum" | "Max" | "Min" | "Mean" => {
            let n = node.input.len().saturating_sub(1).max(1) as u64;
            c(0, n * numel(out0)?)
        }
        "BatchNormalization" => c(0, 2 * numel(out0)?),
        "LayerNormalization"
        | "InstanceNormalization"
        | "GroupNormalization"
        | "LpNormalization"
        | "MeanVarianceNormalization"
        | "SkipLayerNormalization"
        | "SkipSimplifiedLayerNormalization"
        | "SimplifiedLayerNormalization" => c(0, 5 * numel(out0)?),
        "Softmax" | "LogSoftmax" | "QLinearSoftmax" => c(0, 3 * numel(out0)?),
        "LRN" => c(
            0,
            node.attr_i("size").unwrap_or(1).max(1) as u64 * numel(out0)?,
        ),
        "MaxPool" | "AveragePool" | "LpPool" | "QLinearAveragePool" => {
            let k: u64 = node
                .attr_ints("kernel_shape")
                .unwrap_or(&[])
                .iter()
                .map(|&v| v.max(0) as u64)
                .product();
            c(0, k * numel(out0)?)
        }
        "GlobalAveragePool"
        | "GlobalMaxPool"
        | "GlobalLpPool"
        | "QLinearGlobalAveragePool"
        | "ReduceSum"
        | "ReduceMean"
        | "ReduceMax"
        | "ReduceMin"
        | "ReduceProd"
        | "ReduceL1"
        | "ReduceL2"
        | "ReduceLogSum"
        | "ReduceLogSumExp"
        | "ReduceSumSquare"
        | "ArgMax"
        | "ArgMin"
        | "TopK"
        | "CumSum" => c(0, numel(input(0))?),
        "Resize" | "Upsample" => {
            let mode = node.attr_s("mode").unwrap_or_else(|| "nearest".into());
            let x = dims(input(0))?;
            let y = dims(out0)?;
            let k = x.iter().zip(&y).filter(|(a, b)| a != b).count() as u32;
            let per = match mode.as_str() {
                "linear" | "bilinear" | "trilinear" => 2u64.pow(k),
                "cubic" => 4u64.pow(k),
                _ => 0,
            };
            c(0, per * numel(out0)?)
        }
        "GridSample" => c(0, 4 * numel(out0)?),
        "NonMaxSuppression" => {
            let s = dims(input(1))?; // scores [batch, classes, boxes]
            c(
                0,
                s.iter().product::<u64>() * s.last().copied().unwrap_or(0),
            )
        }
        "Reshape" | "Flatten" | "Transpose" | "Squeeze" | "Unsqueeze" | "Concat"
        | "QLinearConcat" | "Split" | "Slice" | "Gather" | "GatherElements" | "GatherND"
        | "Scatter" | "ScatterElements" | "ScatterND" | "Expand" | "Tile" | "Pad" | "Identity"
        | "Dropout" | "Cast" | "CastLike" | "Shape" | "Size" | "Constant" | "ConstantOfShape"
        | "Range" | "DepthToSpace" | "SpaceToDepth" | "NonZero" | "OneHot" | "Compress"
        | "Unique" | "RandomNormal" | "RandomUniform" | "RandomNormalLike"
        | "RandomUniformLike" | "EyeLike" => c(0, 0),
        _ => Err(NoCost::Unsupported),
    }
}
