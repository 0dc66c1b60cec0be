//! Shapes of the values of an ONNX graph, resolved for concrete input shapes.
//!
//! Owns: the `Dim`/`Fact` types, broadcasting, a small constant evaluator for the integer
//! "shape arithmetic" exporters emit (`Shape -> Gather -> Concat -> Reshape` and kin), and
//! the output-shape rule of every operator acceval supports. A node whose outputs cannot be
//! resolved gets symbolic dims; the caller (`analyse`) turns that into "unresolved" and a
//! lower-bound total. A shape that contradicts the model (channel count, broadcast, element
//! count) is an error naming the node.
//! Leaves to others: what a node costs (`cost`), graph walking and subgraphs (`analyse`).

use std::fmt;

use serde::Serialize;

use super::onnx::{DataType, NodeProto, TensorProto};

/// Largest tensor whose values are tracked for constant folding (shape math is tiny).
pub const MAX_CONST_ELEMS: u64 = 1 << 16;

/// One dimension: a number, or a name for a size known only at run time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dim {
    Known(i64),
    Sym(String),
}

impl Dim {
    pub fn known(&self) -> Option<i64> {
        match self {
            Dim::Known(v) => Some(*v),
            Dim::Sym(_) => None,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Known(v) => write!(f, "{v}"),
            Dim::Sym(s) => write!(f, "{s}"),
        }
    }
}

impl Serialize for Dim {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Dim::Known(v) => s.serialize_i64(*v),
            Dim::Sym(n) => s.serialize_str(n),
        }
    }
}

pub type Shape = Vec<Dim>;

/// `1x3x224x224` style (symbolic dims by name, `[]` for a scalar).
pub fn shape_str(s: &[Dim]) -> String {
    if s.is_empty() {
        return "[] (scalar)".into();
    }
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

pub fn known_shape(dims: &[i64]) -> Shape {
    dims.iter().map(|&d| Dim::Known(d)).collect()
}

/// The small contents of a constant tensor (for shape arithmetic).
#[derive(Debug, Clone, PartialEq)]
pub enum Const {
    Int(Vec<i64>),
    Float(Vec<f64>),
}

impl Const {
    pub fn ints(&self) -> Vec<i64> {
        match self {
            Const::Int(v) => v.clone(),
            Const::Float(v) => v.iter().map(|&x| x as i64).collect(),
        }
    }
    pub fn floats(&self) -> Vec<f64> {
        match self {
            Const::Int(v) => v.iter().map(|&x| x as f64).collect(),
            Const::Float(v) => v.clone(),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Const::Int(v) => v.len(),
            Const::Float(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn select(&self, idx: &[usize]) -> Const {
        match self {
            Const::Int(v) => Const::Int(idx.iter().map(|&i| v[i]).collect()),
            Const::Float(v) => Const::Float(idx.iter().map(|&i| v[i]).collect()),
        }
    }
}

/// What is known about one value: element type, shape, and (when small) contents.
#[derive(Debug, Clone, Default)]
pub struct Fact {
    pub dtype: Option<DataType>,
    pub shape: Option<Shape>,
    pub value: Option<Const>,
}

impl Fact {
    pub fn new(dtype: Option<DataType>, shape: Shape) -> Fact {
        Fact {
            dtype,
            shape: Some(shape),
            value: None,
        }
    }
    pub fn unknown() -> Fact {
        Fact::default()
    }
    pub fn rank(&self) -> Option<usize> {
        self.shape.as_ref().map(|s| s.len())
    }
    /// All dims, when every one is a number.
    pub fn dims(&self) -> Option<Vec<i64>> {
        self.shape.as_ref()?.iter().map(|d| d.known()).collect()
    }
    pub fn numel(&self) -> Option<u64> {
        self.dims()
            .map(|d| d.iter().map(|&x| x.max(0) as u64).product())
    }
    pub fn with_value(mut self, v: Option<Const>) -> Fact {
        self.value = v;
        self
    }
    /// The fact of a stored tensor (initializer or Constant).
    pub fn of_tensor(t: &TensorProto) -> Fact {
        let value = t
            .int_values(MAX_CONST_ELEMS)
            .map(Const::Int)
            .or_else(|| t.float_values(MAX_CONST_ELEMS).map(Const::Float));
        Fact {
            dtype: Some(t.dtype()),
            shape: Some(known_shape(&t.dims)),
            value,
        }
    }
}

/// A shape that cannot be right for this model.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Contradiction(pub String);

type R<T> = Result<T, Contradiction>;

fn contra<T>(msg: String) -> R<T> {
    Err(Contradiction(msg))
}

/// Numpy-style multidirectional broadcasting.
pub fn broadcast(shapes: &[&Shape], node: &str) -> R<Shape> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let mut d: Option<Dim> = None;
        for s in shapes {
            let Some(k) = (i + s.len()).checked_sub(rank) else {
                continue;
            };
            let x = &s[k];
            d = Some(match (d, x) {
                (None, x) => x.clone(),
                (Some(Dim::Known(1)), x) => x.clone(),
                (Some(a), Dim::Known(1)) => a,
                (Some(Dim::Known(a)), Dim::Known(b)) if a == *b => Dim::Known(a),
                (Some(Dim::Known(a)), Dim::Known(b)) => {
                    return contra(format!(
                        "node '{node}': shapes {} cannot be broadcast together (dim {a} vs {b})",
                        shapes
                            .iter()
                            .map(|s| shape_str(s))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                (Some(Dim::Known(a)), Dim::Sym(_)) => Dim::Known(a),
                (Some(Dim::Sym(_)), Dim::Known(b)) => Dim::Known(*b),
                (Some(Dim::Sym(a)), Dim::Sym(_)) => Dim::Sym(a),
            });
        }
        out.push(d.unwrap_or(Dim::Known(1)));
    }
    Ok(out)
}

fn norm_axis(axis: i64, rank: usize, node: &str) -> R<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || (a >= r && !(r == 0 && a == 0)) {
        return contra(format!(
            "node '{node}': axis {axis} is out of range for rank {rank}"
        ));
    }
    Ok(a as usize)
}

/// Everything an output-shape rule may read about one node.
pub struct NodeIn<'a> {
    pub node: &'a NodeProto,
    pub label: &'a str,
    pub inputs: Vec<Option<&'a Fact>>,
    pub opset: i64,
}

impl NodeIn<'_> {
    fn fact(&self, i: usize) -> Option<&Fact> {
        self.inputs.get(i).copied().flatten()
    }
    fn shape(&self, i: usize) -> Option<&Shape> {
        self.fact(i).and_then(|f| f.shape.as_ref())
    }
    fn dtype(&self, i: usize) -> Option<DataType> {
        self.fact(i).and_then(|f| f.dtype)
    }
    fn value(&self, i: usize) -> Option<&Const> {
        self.fact(i).and_then(|f| f.value.as_ref())
    }
    /// An integer list from input `i` (opset >= N style) or attribute `attr` (older).
    fn ints_in_or_attr(&self, i: usize, attr: &str) -> Option<Vec<i64>> {
        if self.node.input_name(i).is_some() {
            return self.value(i).map(|c| c.ints());
        }
        self.node.attr_ints(attr).map(|v| v.to_vec())
    }
    fn sym(&self, k: usize) -> Dim {
        Dim::Sym(format!("{}:{k}", self.label))
    }
    fn unknown_rank(&self, rank: usize) -> Shape {
        (0..rank).map(|k| self.sym(k)).collect()
    }
}

/// The output facts of one node. `Ok(None)`: the operator has no shape rule here.
pub fn infer(n: &NodeIn) -> R<Option<Vec<Fact>>> {
    let node = n.node;
    let op = node.op_type.as_str();
    let label = n.label;
    let dt0 = n.dtype(0);
    let same = |f: Option<&Fact>| -> Fact {
        match f {
            Some(f) => Fact {
                dtype: f.dtype,
                shape: f.shape.clone(),
                value: None,
            },
            None => Fact::unknown(),
        }
    };
    let out = match op {
        // Same shape as the first input.
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
        | "Softmax"
        | "LogSoftmax"
        | "Hardmax"
        | "LRN"
        | "BatchNormalization"
        | "InstanceNormalization"
        | "GroupNormalization"
        | "LpNormalization"
        | "MeanVarianceNormalization"
        | "CumSum"
        | "Trilu"
        | "QuickGelu"
        | "FastGelu"
        | "BiasGelu"
        | "RandomNormalLike"
        | "RandomUniformLike"
        | "EyeLike"
        | "Bernoulli"
        | "ReverseSequence"
        | "Scatter"
        | "ScatterElements"
        | "ScatterND"
        | "QLinearSigmoid"
        | "QLinearLeakyRelu"
        | "QLinearSoftmax"
        | "BiasAdd"
        | "SkipLayerNormalization"
        | "SkipSimplifiedLayerNormalization"
        | "SimplifiedLayerNormalization" => {
            let mut f = same(n.fact(0));
            if matches!(op, "IsNaN" | "IsInf") {
                f.dtype = Some(DataType::BOOL);
            }
            let mut outs = vec![f];
            for _ in 1..node.output.len() {
                outs.push(Fact::unknown());
            }
            outs
        }
        "Identity" => vec![n.fact(0).cloned().unwrap_or_default()],
        "Dropout" => {
            let mut mask = same(n.fact(0));
            mask.dtype = Some(DataType::BOOL);
            vec![n.fact(0).cloned().unwrap_or_default(), mask]
        }
        "LayerNormalization" => {
            let y = same(n.fact(0));
            let mut outs = vec![y];
            if node.output.len() > 1 {
                let stat = n.shape(0).map(|s| {
                    let axis =
                        norm_axis(node.attr_i("axis").unwrap_or(-1), s.len(), label).unwrap_or(0);
                    let mut t = s.clone();
                    for d in t.iter_mut().skip(axis) {
                        *d = Dim::Known(1);
                    }
                    t
                });
                for _ in 1..node.output.len() {
                    outs.push(Fact {
                        dtype: Some(DataType::FLOAT),
                        shape: stat.clone(),
                        value: None,
                    });
                }
            }
            outs
        }
        "Cast" | "CastLike" => {
            let to = if op == "Cast" {
                node.attr_i("to").map(|t| DataType(t as i32))
            } else {
                n.dtype(1)
            };
            let value = n.value(0).map(|v| match to {
                Some(t) if t.is_integer() || t == DataType::BOOL => Const::Int(v.ints()),
                Some(t) if t.is_float() => Const::Float(v.floats()),
                _ => v.clone(),
            });
            vec![Fact {
                dtype: to,
                shape: n.shape(0).cloned(),
                value,
            }]
        }
        "QuantizeLinear" | "DequantizeLinear" => {
            let dt = if op == "DequantizeLinear" {
                n.dtype(1).or(Some(DataType::FLOAT))
            } else {
                node.attr_i("output_dtype")
                    .filter(|&t| t != 0)
                    .map(|t| DataType(t as i32))
                    .or(n.dtype(2))
                    .or(Some(DataType::UINT8))
            };
            vec![Fact {
                dtype: dt,
                shape: n.shape(0).cloned(),
                value: None,
            }]
        }
        "DynamicQuantizeLinear" => vec![
            Fact {
                dtype: Some(DataType::UINT8),
                shape: n.shape(0).cloned(),
                value: None,
            },
            Fact::new(Some(DataType::FLOAT), vec![]),
            Fact::new(Some(DataType::UINT8), vec![]),
        ],
        // Broadcasting element-wise operators.
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Sum" | "Mean" | "And" | "Or"
        | "Xor" | "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "Mod"
        | "BitShift" | "PRelu" | "Where" | "BitwiseAnd" | "BitwiseOr" | "BitwiseXor" => {
            let shapes: Option<Vec<&Shape>> = (0..node.input.len()).map(|i| n.shape(i)).collect();
            let shape = match shapes {
                Some(s) => Some(broadcast(&s, label)?),
                None => None,
            };
            let dtype = match op {
                "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or"
                | "Xor" => Some(DataType::BOOL),
                "Where" => n.dtype(1),
                _ => dt0,
            };
            let value = fold_elementwise(op, n, shape.as_ref());
            vec![Fact {
                dtype,
                shape,
                value,
            }]
        }
        "QLinearAdd" | "QLinearMul" => {
            let shape = match (n.shape(0), n.shape(3)) {
                (Some(a), Some(b)) => Some(broadcast(&[a, b], label)?),
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Conv" | "ConvInteger" | "QLinearConv" | "FusedConv" | "NhwcConv" => {
            let w = if op == "QLinearConv" { 3 } else { 1 };
            let dtype = match op {
                "ConvInteger" => Some(DataType::INT32),
                "QLinearConv" => n.dtype(7).or(dt0),
                _ => dt0,
            };
            let shape = match (n.shape(0), n.shape(w)) {
                (Some(x), Some(wt)) => Some(conv_shape(n, x, wt)?),
                _ => None,
            };
            vec![Fact {
                dtype,
                shape,
                value: None,
            }]
        }
        "ConvTranspose" => {
            let shape = match (n.shape(0), n.shape(1)) {
                (Some(x), Some(w)) => Some(conv_transpose_shape(n, x, w)?),
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "MaxPool" | "AveragePool" | "LpPool" | "QLinearAveragePool" => {
            let shape = match n.shape(0) {
                Some(x) => {
                    let k = node.attr_ints("kernel_shape").unwrap_or(&[]).to_vec();
                    if k.is_empty() {
                        return contra(format!("node '{label}' ({op}) has no kernel_shape"));
                    }
                    Some(window_shape(n, x, &k, None, x.get(1).cloned())?)
                }
                None => None,
            };
            let mut outs = vec![Fact {
                dtype: dt0,
                shape: shape.clone(),
                value: None,
            }];
            if node.output.len() > 1 {
                outs.push(Fact {
                    dtype: Some(DataType::INT64),
                    shape,
                    value: None,
                });
            }
            outs
        }
        "GlobalAveragePool" | "GlobalMaxPool" | "GlobalLpPool" | "QLinearGlobalAveragePool" => {
            let channels_last = node.attr_i("channels_last").unwrap_or(0) == 1;
            let shape = n.shape(0).map(|x| {
                x.iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let keep = if channels_last {
                            i == 0 || i == x.len() - 1
                        } else {
                            i < 2
                        };
                        if keep { d.clone() } else { Dim::Known(1) }
                    })
                    .collect()
            });
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Gemm" | "QGemm" => {
            let b = if op == "QGemm" { 3 } else { 1 };
            let shape = match (n.shape(0), n.shape(b)) {
                (Some(a), Some(b)) => {
                    if a.len() != 2 || b.len() != 2 {
                        return contra(format!(
                            "node '{label}' ({op}) needs 2-D inputs, got {} and {}",
                            shape_str(a),
                            shape_str(b)
                        ));
                    }
                    let ta = node.attr_i("transA").unwrap_or(0) != 0;
                    let tb = node.attr_i("transB").unwrap_or(0) != 0;
                    let (m, ka) = if ta { (&a[1], &a[0]) } else { (&a[0], &a[1]) };
                    let (kb, nn) = if tb { (&b[1], &b[0]) } else { (&b[0], &b[1]) };
                    check_eq(ka, kb, label, "Gemm inner dimension (K)")?;
                    Some(vec![m.clone(), nn.clone()])
                }
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "MatMul"
        | "MatMulInteger"
        | "QLinearMatMul"
        | "FusedMatMul"
        | "MatMulNBits"
        | "MatMulIntegerToFloat" => {
            let b = if op == "QLinearMatMul" { 3 } else { 1 };
            let dtype = match op {
                "MatMulInteger" => Some(DataType::INT32),
                "QLinearMatMul" => n.dtype(7).or(dt0),
                "MatMulIntegerToFloat" => Some(DataType::FLOAT),
                _ => dt0,
            };
            let shape = match (n.shape(0), n.shape(b)) {
                (Some(a), Some(bs)) if op == "MatMulNBits" => {
                    // B is packed; N and K are attributes.
                    let _ = bs;
                    let nn = node.attr_i("N").unwrap_or(0);
                    let mut s = a.clone();
                    if let Some(last) = s.last_mut() {
                        *last = Dim::Known(nn);
                    }
                    Some(s)
                }
                (Some(a), Some(bs)) => {
                    let (mut a, mut bs) = (a.clone(), bs.clone());
                    if op == "FusedMatMul" {
                        if node.attr_i("transA").unwrap_or(0) != 0 && a.len() >= 2 {
                            let r = a.len();
                            a.swap(r - 1, r - 2);
                        }
                        if node.attr_i("transB").unwrap_or(0) != 0 && bs.len() >= 2 {
                            let r = bs.len();
                            bs.swap(r - 1, r - 2);
                        }
                    }
                    Some(matmul_shape(&a, &bs, label)?.0)
                }
                _ => None,
            };
            vec![Fact {
                dtype,
                shape,
                value: None,
            }]
        }
        "Einsum" => {
            let eq = node.attr_s("equation").unwrap_or_default();
            let shapes: Option<Vec<&Shape>> = (0..node.input.len()).map(|i| n.shape(i)).collect();
            let shape = match shapes {
                Some(s) => Some(Einsum::parse(&eq, &s, label)?.output_shape()),
                None => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Flatten" => {
            let shape = n.shape(0).map(|x| {
                let r = x.len() as i64;
                let mut axis = node.attr_i("axis").unwrap_or(1);
                if axis < 0 {
                    axis += r;
                }
                let axis = axis.clamp(0, r) as usize;
                vec![dim_product(&x[..axis], n, 0), dim_product(&x[axis..], n, 1)]
            });
            vec![Fact {
                dtype: dt0,
                shape,
                value: n.value(0).cloned(),
            }]
        }
        "Reshape" => {
            let target = n.value(1).map(|c| c.ints());
            let shape = match (n.shape(0), target) {
                (Some(x), Some(t)) => Some(reshape_shape(n, x, &t)?),
                (_, Some(t)) if !t.contains(&-1) && !t.contains(&0) => Some(known_shape(&t)),
                (_, Some(t)) => Some(n.unknown_rank(t.len())),
                _ => n
                    .shape(1)
                    .and_then(|s| s.first())
                    .and_then(|d| d.known())
                    .map(|r| n.unknown_rank(r as usize)),
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: n.value(0).cloned(),
            }]
        }
        "Transpose" => {
            let shape = match n.shape(0) {
                Some(x) => {
                    let perm: Vec<i64> = node
                        .attr_ints("perm")
                        .map(|p| p.to_vec())
                        .unwrap_or_else(|| (0..x.len() as i64).rev().collect());
                    if perm.len() != x.len() {
                        return contra(format!(
                            "node '{label}' (Transpose): perm has {} entries for a rank-{} input",
                            perm.len(),
                            x.len()
                        ));
                    }
                    let mut s = Vec::with_capacity(x.len());
                    for &p in &perm {
                        s.push(x[norm_axis(p, x.len(), label)?].clone());
                    }
                    Some(s)
                }
                None => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Squeeze" => {
            let axes = n.ints_in_or_attr(1, "axes");
            let shape = match n.shape(0) {
                Some(x) => {
                    let keep: Vec<Dim> = match &axes {
                        Some(a) => {
                            let a: Vec<usize> = a
                                .iter()
                                .map(|&v| norm_axis(v, x.len(), label))
                                .collect::<R<_>>()?;
                            x.iter()
                                .enumerate()
                                .filter(|(i, _)| !a.contains(i))
                                .map(|(_, d)| d.clone())
                                .collect()
                        }
                        None if node.input_name(1).is_some() => {
                            return Ok(Some(vec![Fact {
                                dtype: dt0,
                                shape: None,
                                value: None,
                            }]));
                        }
                        None => x.iter().filter(|d| **d != Dim::Known(1)).cloned().collect(),
                    };
                    Some(keep)
                }
                None => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: n.value(0).cloned(),
            }]
        }
        "Unsqueeze" => {
            let axes = n.ints_in_or_attr(1, "axes");
            let shape = match (n.shape(0), axes) {
                (Some(x), Some(a)) => {
                    let r = x.len() + a.len();
                    let a: Vec<usize> = a
                        .iter()
                        .map(|&v| norm_axis(v, r, label))
                        .collect::<R<_>>()?;
                    let mut it = x.iter();
                    let mut s = Vec::with_capacity(r);
                    for i in 0..r {
                        if a.contains(&i) {
                            s.push(Dim::Known(1));
                        } else {
                            s.push(it.next().cloned().unwrap_or(Dim::Known(1)));
                        }
                    }
                    Some(s)
                }
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: n.value(0).cloned(),
            }]
        }
        "Concat" | "QLinearConcat" => {
            let (first, step) = if op == "QLinearConcat" {
                (2, 3)
            } else {
                (0, 1)
            };
            let idx: Vec<usize> = (first..node.input.len()).step_by(step).collect();
            let shapes: Option<Vec<&Shape>> = idx.iter().map(|&i| n.shape(i)).collect();
            let shape = match shapes {
                Some(s) if !s.is_empty() => {
                    let r = s[0].len();
                    let axis = norm_axis(node.attr_i("axis").unwrap_or(0), r, label)?;
                    let mut out = s[0].clone();
                    let mut total = Some(0i64);
                    for sh in &s {
                        if sh.len() != r {
                            return contra(format!(
                                "node '{label}' (Concat): inputs of rank {} and {} cannot be concatenated",
                                r,
                                sh.len()
                            ));
                        }
                        for (i, d) in sh.iter().enumerate() {
                            if i != axis {
                                check_eq(&out[i], d, label, "Concat non-axis dimension")?;
                                if let Dim::Sym(_) = out[i] {
                                    out[i] = d.clone();
                                }
                            }
                        }
                        total = match (total, sh[axis].known()) {
                            (Some(t), Some(v)) => Some(t + v),
                            _ => None,
                        };
                    }
                    out[axis] = total.map(Dim::Known).unwrap_or_else(|| n.sym(axis));
                    Some(out)
                }
                _ => None,
            };
            let value = if op == "Concat" {
                let vals: Option<Vec<&Const>> = idx.iter().map(|&i| n.value(i)).collect();
                vals.and_then(|v| concat_values(&v))
            } else {
                None
            };
            vec![Fact {
                dtype: n.dtype(first),
                shape,
                value,
            }]
        }
        "Split" => {
            let k = node.output.len();
            let split = n.ints_in_or_attr(1, "split");
            let mut outs = Vec::with_capacity(k);
            match n.shape(0) {
                Some(x) => {
                    let axis = norm_axis(node.attr_i("axis").unwrap_or(0), x.len(), label)?;
                    let sizes: Vec<Dim> = match (split, x[axis].known()) {
                        (Some(s), _) if !s.is_empty() => s.iter().map(|&v| Dim::Known(v)).collect(),
                        (_, Some(total)) => {
                            let parts = k.max(1) as i64;
                            let chunk = (total + parts - 1) / parts;
                            (0..parts)
                                .map(|i| Dim::Known((total - i * chunk).clamp(0, chunk)))
                                .collect()
                        }
                        _ => (0..k).map(|i| n.sym(i)).collect(),
                    };
                    for sz in sizes.into_iter().take(k) {
                        let mut s = x.clone();
                        s[axis] = sz;
                        outs.push(Fact::new(dt0, s));
                    }
                }
                None => outs = vec![Fact::unknown(); k],
            }
            outs
        }
        "Slice" => vec![slice(n)?],
        "Gather" => {
            let shape = match (n.shape(0), n.shape(1)) {
                (Some(d), Some(i)) => {
                    let axis = norm_axis(node.attr_i("axis").unwrap_or(0), d.len(), label)?;
                    let mut s = d[..axis].to_vec();
                    s.extend(i.iter().cloned());
                    s.extend(d[axis + 1..].iter().cloned());
                    Some(s)
                }
                _ => None,
            };
            let value = match (n.shape(0), n.value(0), n.value(1)) {
                (Some(d), Some(v), Some(idx)) if d.len() == 1 => {
                    let len = v.len() as i64;
                    let ids: Option<Vec<usize>> = idx
                        .ints()
                        .iter()
                        .map(|&i| {
                            let i = if i < 0 { i + len } else { i };
                            (0..len).contains(&i).then_some(i as usize)
                        })
                        .collect();
                    ids.map(|ids| v.select(&ids))
                }
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value,
            }]
        }
        "GatherElements" => vec![Fact {
            dtype: dt0,
            shape: n.shape(1).cloned(),
            value: None,
        }],
        "GatherND" => {
            let shape = match (n.shape(0), n.shape(1)) {
                (Some(d), Some(i)) if !i.is_empty() => {
                    let b = node.attr_i("batch_dims").unwrap_or(0) as usize;
                    match i.last().and_then(|x| x.known()) {
                        Some(last) => {
                            let mut s = i[..i.len() - 1].to_vec();
                            s.extend(d.iter().skip(b + last as usize).cloned());
                            Some(s)
                        }
                        None => None,
                    }
                }
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Expand" => {
            let shape = match (n.shape(0), n.value(1)) {
                (Some(x), Some(t)) => Some(broadcast(&[x, &known_shape(&t.ints())], label)?),
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Tile" => {
            let shape = match (n.shape(0), n.value(1)) {
                (Some(x), Some(r)) => Some(
                    x.iter()
                        .zip(r.ints())
                        .enumerate()
                        .map(|(i, (d, k))| match d {
                            Dim::Known(v) => Dim::Known(v * k),
                            Dim::Sym(_) if k == 1 => d.clone(),
                            Dim::Sym(_) => n.sym(i),
                        })
                        .collect(),
                ),
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Pad" => {
            let pads = n.ints_in_or_attr(1, "pads");
            let shape = match (n.shape(0), pads) {
                (Some(x), Some(p)) => {
                    let r = x.len();
                    let axes: Vec<usize> = match n.value(3) {
                        Some(a) => a
                            .ints()
                            .iter()
                            .map(|&v| norm_axis(v, r, label))
                            .collect::<R<_>>()?,
                        None => (0..r).collect(),
                    };
                    if p.len() != 2 * axes.len() {
                        return contra(format!(
                            "node '{label}' (Pad): {} pads for {} axes",
                            p.len(),
                            axes.len()
                        ));
                    }
                    let mut s = x.clone();
                    for (j, &a) in axes.iter().enumerate() {
                        s[a] = match &s[a] {
                            Dim::Known(v) => Dim::Known(v + p[j] + p[j + axes.len()]),
                            d if p[j] == 0 && p[j + axes.len()] == 0 => d.clone(),
                            _ => n.sym(a),
                        };
                    }
                    Some(s)
                }
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Shape" => {
            let r = n.rank(0);
            match (n.shape(0), r) {
                (Some(x), Some(r)) => {
                    let clampi = |v: i64| -> usize {
                        let v = if v < 0 { v + r as i64 } else { v };
                        v.clamp(0, r as i64) as usize
                    };
                    let start = clampi(node.attr_i("start").unwrap_or(0));
                    let end = clampi(node.attr_i("end").unwrap_or(r as i64));
                    let dims = &x[start..end.max(start)];
                    let value = dims
                        .iter()
                        .map(|d| d.known())
                        .collect::<Option<Vec<_>>>()
                        .map(Const::Int);
                    vec![Fact {
                        dtype: Some(DataType::INT64),
                        shape: Some(vec![Dim::Known(dims.len() as i64)]),
                        value,
                    }]
                }
                _ => vec![Fact {
                    dtype: Some(DataType::INT64),
                    shape: Some(vec![n.sym(0)]),
                    value: None,
                }],
            }
        }
        "Size" => vec![Fact {
            dtype: Some(DataType::INT64),
            shape: Some(vec![]),
            value: n
                .fact(0)
                .and_then(|f| f.numel())
                .map(|v| Const::Int(vec![v as i64])),
        }],
        "ConstantOfShape" => {
            let (dtype, fill) = match node.attr("value").and_then(|a| a.t.as_ref()) {
                Some(t) => (
                    Some(t.dtype()),
                    t.int_values(1)
                        .map(Const::Int)
                        .or_else(|| t.float_values(1).map(Const::Float)),
                ),
                None => (Some(DataType::FLOAT), Some(Const::Float(vec![0.0]))),
            };
            match n.value(0) {
                Some(s) => {
                    let dims = s.ints();
                    let numel: i64 = dims.iter().product();
                    let value = match fill {
                        Some(Const::Int(v)) if (numel as u64) <= MAX_CONST_ELEMS => {
                            Some(Const::Int(vec![v[0]; numel.max(0) as usize]))
                        }
                        Some(Const::Float(v)) if (numel as u64) <= MAX_CONST_ELEMS => {
                            Some(Const::Float(vec![v[0]; numel.max(0) as usize]))
                        }
                        _ => None,
                    };
                    vec![Fact {
                        dtype,
                        shape: Some(known_shape(&dims)),
                        value,
                    }]
                }
                None => {
                    let rank = n.shape(0).and_then(|s| s.first()).and_then(|d| d.known());
                    vec![Fact {
                        dtype,
                        shape: rank.map(|r| n.unknown_rank(r as usize)),
                        value: None,
                    }]
                }
            }
        }
        "Range" => {
            let (s, l, d) = (n.value(0), n.value(1), n.value(2));
            match (s, l, d) {
                (Some(s), Some(l), Some(d)) => {
                    let (s, l, d) = (s.floats()[0], l.floats()[0], d.floats()[0]);
                    let count = if d == 0.0 {
                        0
                    } else {
                        ((l - s) / d).ceil().max(0.0) as i64
                    };
                    let value = if (count as u64) <= MAX_CONST_ELEMS {
                        match n.value(0) {
                            Some(Const::Int(_)) => Some(Const::Int(
                                (0..count).map(|i| s as i64 + i * d as i64).collect(),
                            )),
                            _ => Some(Const::Float((0..count).map(|i| s + i as f64 * d).collect())),
                        }
                    } else {
                        None
                    };
                    vec![Fact {
                        dtype: dt0,
                        shape: Some(vec![Dim::Known(count)]),
                        value,
                    }]
                }
                _ => vec![Fact::new(dt0, vec![n.sym(0)])],
            }
        }
        "ReduceSum" | "ReduceMean" | "ReduceMax" | "ReduceMin" | "ReduceProd" | "ReduceL1"
        | "ReduceL2" | "ReduceLogSum" | "ReduceLogSumExp" | "ReduceSumSquare" | "ArgMax"
        | "ArgMin" => {
            let keep = node.attr_i("keepdims").unwrap_or(1) != 0;
            let axes: Option<Vec<i64>> = if op.starts_with("Arg") {
                Some(vec![node.attr_i("axis").unwrap_or(0)])
            } else {
                n.ints_in_or_attr(1, "axes")
            };
            let noop = node.attr_i("noop_with_empty_axes").unwrap_or(0) != 0;
            let shape = match (n.shape(0), axes) {
                (Some(x), Some(a)) if !a.is_empty() => {
                    let a: Vec<usize> = a
                        .iter()
                        .map(|&v| norm_axis(v, x.len(), label))
                        .collect::<R<_>>()?;
                    Some(reduce_shape(x, &a, keep))
                }
                (Some(x), None) if node.input_name(1).is_none() => {
                    if noop {
                        Some(x.clone())
                    } else {
                        let all: Vec<usize> = (0..x.len()).collect();
                        Some(reduce_shape(x, &all, keep))
                    }
                }
                (Some(x), Some(_)) => {
                    if noop {
                        Some(x.clone())
                    } else {
                        let all: Vec<usize> = (0..x.len()).collect();
                        Some(reduce_shape(x, &all, keep))
                    }
                }
                _ => None,
            };
            let dtype = if op.starts_with("Arg") {
                Some(DataType::INT64)
            } else {
                dt0
            };
            let value = match (op, n.value(0), &shape) {
                ("ReduceProd", Some(Const::Int(v)), Some(s)) if s.len() <= 1 => {
                    Some(Const::Int(vec![v.iter().product()]))
                }
                ("ReduceSum", Some(Const::Int(v)), Some(s)) if s.len() <= 1 => {
                    Some(Const::Int(vec![v.iter().sum()]))
                }
                _ => None,
            };
            vec![Fact {
                dtype,
                shape,
                value,
            }]
        }
        "TopK" => {
            let k = n
                .value(1)
                .map(|v| v.ints())
                .and_then(|v| v.first().copied());
            let k = k.or(node.attr_i("k"));
            let shape = match n.shape(0) {
                Some(x) => {
                    let axis = norm_axis(node.attr_i("axis").unwrap_or(-1), x.len(), label)?;
                    let mut s = x.clone();
                    s[axis] = k.map(Dim::Known).unwrap_or_else(|| n.sym(axis));
                    Some(s)
                }
                None => None,
            };
            vec![
                Fact {
                    dtype: dt0,
                    shape: shape.clone(),
                    value: None,
                },
                Fact {
                    dtype: Some(DataType::INT64),
                    shape,
                    value: None,
                },
            ]
        }
        "NonZero" => vec![Fact::new(
            Some(DataType::INT64),
            vec![
                n.rank(0)
                    .map(|r| Dim::Known(r as i64))
                    .unwrap_or_else(|| n.sym(0)),
                n.sym(1),
            ],
        )],
        "NonMaxSuppression" => vec![Fact::new(
            Some(DataType::INT64),
            vec![n.sym(0), Dim::Known(3)],
        )],
        "Compress" | "Unique" => vec![Fact::unknown(); node.output.len()],
        "OneHot" => {
            let depth = n.value(1).map(|v| v.ints()[0]);
            let shape = match n.shape(0) {
                Some(x) => {
                    let r = x.len() + 1;
                    let axis = norm_axis(node.attr_i("axis").unwrap_or(-1), r, label)?;
                    let mut s = x.clone();
                    s.insert(axis, depth.map(Dim::Known).unwrap_or_else(|| n.sym(axis)));
                    Some(s)
                }
                None => None,
            };
            vec![Fact {
                dtype: n.dtype(2),
                shape,
                value: None,
            }]
        }
        "DepthToSpace" | "SpaceToDepth" => {
            let b = node.attr_i("blocksize").unwrap_or(1);
            let shape = n.dims_of(0).map(|x| {
                if x.len() != 4 {
                    return n.unknown_rank(x.len());
                }
                if op == "DepthToSpace" {
                    known_shape(&[x[0], x[1] / (b * b), x[2] * b, x[3] * b])
                } else {
                    known_shape(&[x[0], x[1] * b * b, x[2] / b, x[3] / b])
                }
            });
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Resize" | "Upsample" => vec![resize(n)?],
        "GridSample" => {
            let shape = match (n.shape(0), n.shape(1)) {
                (Some(x), Some(g)) if x.len() >= 3 && g.len() == x.len() => {
                    let mut s = vec![x[0].clone(), x[1].clone()];
                    s.extend(g[1..g.len() - 1].iter().cloned());
                    Some(s)
                }
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "LSTM" | "GRU" | "RNN" => rnn_shapes(n)?,
        "Attention" if node.domain.is_empty() || node.domain == "ai.onnx" => {
            vec![Fact {
                dtype: dt0,
                shape: attention_output(n),
                value: None,
            }]
        }
        "MultiHeadAttention" => {
            let shape = match (n.shape(0), n.shape(2)) {
                (Some(q), Some(v)) if q.len() == 3 && v.len() == 3 => {
                    Some(vec![q[0].clone(), q[1].clone(), v[2].clone()])
                }
                (Some(q), _) if q.len() == 3 => Some(q.clone()),
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "Attention" => {
            // com.microsoft Attention: input [B,S,In], weights [In, 3H] (or qkv_hidden_sizes).
            let shape = match (n.shape(0), n.shape(1)) {
                (Some(x), Some(w)) if x.len() == 3 && w.len() == 2 => {
                    let v_hidden = match node.attr_ints("qkv_hidden_sizes") {
                        Some(s) if s.len() == 3 => Dim::Known(s[2]),
                        _ => match w[1].known() {
                            Some(h3) => Dim::Known(h3 / 3),
                            None => n.sym(2),
                        },
                    };
                    Some(vec![x[0].clone(), x[1].clone(), v_hidden])
                }
                _ => None,
            };
            vec![Fact {
                dtype: dt0,
                shape,
                value: None,
            }]
        }
        "RandomNormal" | "RandomUniform" => vec![Fact::new(
            Some(DataType(node.attr_i("dtype").unwrap_or(1) as i32)),
            known_shape(node.attr_ints("shape").unwrap_or(&[])),
        )],
        _ => return Ok(None),
    };
    Ok(Some(out))
}

impl NodeIn<'_> {
    fn rank(&self, i: usize) -> Option<usize> {
        self.fact(i).and_then(|f| f.rank())
    }
    fn dims_of(&self, i: usize) -> Option<Vec<i64>> {
        self.fact(i).and_then(|f| f.dims())
    }
}

fn check_eq(a: &Dim, b: &Dim, node: &str, what: &str) -> R<()> {
    if let (Dim::Known(x), Dim::Known(y)) = (a, b)
        && x != y
    {
        return contra(format!("node '{node}': {what} mismatch: {x} vs {y}"));
    }
    Ok(())
}

fn dim_product(dims: &[Dim], n: &NodeIn, k: usize) -> Dim {
    dims.iter()
        .map(|d| d.known())
        .collect::<Option<Vec<_>>>()
        .map(|v| Dim::Known(v.iter().product()))
        .unwrap_or_else(|| n.sym(k))
}

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

/// Output shape of a batched, broadcast MatMul and its broadcast batch dims.
pub fn matmul_shape(a: &Shape, b: &Shape, node: &str) -> R<(Shape, Dim)> {
    if a.is_empty() || b.is_empty() {
        return contra(format!("node '{node}' (MatMul): scalar operands"));
    }
    let (mut a2, mut b2) = (a.clone(), b.clone());
    let a1 = a.len() == 1;
    let b1 = b.len() == 1;
    if a1 {
        a2.insert(0, Dim::Known(1));
    }
    if b1 {
        b2.push(Dim::Known(1));
    }
    let (ra, rb) = (a2.len(), b2.len());
    let k = a2[ra - 1].clone();
    check_eq(&k, &b2[rb - 2], node, "MatMul inner dimension (K)")?;
    let batch = broadcast(&[&a2[..ra - 2].to_vec(), &b2[..rb - 2].to_vec()], node)?;
    let mut out = batch;
    if !a1 {
        out.push(a2[ra - 2].clone());
    }
    if !b1 {
        out.push(b2[rb - 1].clone());
    }
    Ok((out, k))
}

fn spatial_params(n: &NodeIn, rank: usize) -> (Vec<i64>, Vec<i64>, Vec<i64>, String) {
    let node = n.node;
    let strides = node
        .attr_ints("strides")
        .map(|v| v.to_vec())
        .unwrap_or_else(|| vec![1; rank]);
    let dil = node
        .attr_ints("dilations")
        .map(|v| v.to_vec())
        .unwrap_or_else(|| vec![1; rank]);
    let pads = node
        .attr_ints("pads")
        .map(|v| v.to_vec())
        .unwrap_or_else(|| vec![0; 2 * rank]);
    let auto = node.attr_s("auto_pad").unwrap_or_else(|| "NOTSET".into());
    (strides, dil, pads, auto)
}

/// Output shape of a sliding window (Conv, pooling): ONNX's formulas for explicit pads,
/// SAME_UPPER/SAME_LOWER and VALID, and `ceil_mode` with PyTorch's rule that the last
/// window must start inside the input or its left padding.
fn window_shape(n: &NodeIn, x: &Shape, k: &[i64], cout: Option<Dim>, c: Option<Dim>) -> R<Shape> {
    let sr = k.len();
    if x.len() != sr + 2 {
        return contra(format!(
            "node '{}' ({}): input {} has rank {} but the kernel is {}-D (expected rank {})",
            n.label,
            n.node.op_type,
            shape_str(x),
            x.len(),
            sr,
            sr + 2
        ));
    }
    let (s, d, p, auto) = spatial_params(n, sr);
    let ceil = n.node.attr_i("ceil_mode").unwrap_or(0) != 0;
    let mut out = vec![x[0].clone(), cout.or(c).unwrap_or_else(|| x[1].clone())];
    for i in 0..sr {
        let ek = (k[i] - 1) * d.get(i).copied().unwrap_or(1) + 1;
        let st = s.get(i).copied().unwrap_or(1).max(1);
        let dim = match x[i + 2].known() {
            None => n.sym(i + 2),
            Some(inp) => {
                let o = match auto.as_str() {
                    "SAME_UPPER" | "SAME_LOWER" => (inp + st - 1) / st,
                    "VALID" => (inp - ek) / st + 1,
                    _ => {
                        let (pb, pe) = (
                            p.get(i).copied().unwrap_or(0),
                            p.get(i + sr).copied().unwrap_or(0),
                        );
                        let span = inp + pb + pe - ek;
                        if span < 0 {
                            return contra(format!(
                                "node '{}' ({}): input {} is smaller than the kernel ({} after dilation) on spatial axis {i}",
                                n.label,
                                n.node.op_type,
                                shape_str(x),
                                ek
                            ));
                        }
                        if ceil {
                            let mut o = (span + st - 1) / st + 1;
                            if (o - 1) * st >= inp + pb {
                                o -= 1;
                            }
                            o
                        } else {
                            span / st + 1
                        }
                    }
                };
                if o <= 0 {
                    return contra(format!(
                        "node '{}' ({}): input {} gives an empty output on spatial axis {i}",
                        n.label,
                        n.node.op_type,
                        shape_str(x)
                    ));
                }
                Dim::Known(o)
            }
        };
        out.push(dim);
    }
    Ok(out)
}

fn conv_shape(n: &NodeIn, x: &Shape, w: &Shape) -> R<Shape> {
    if w.len() < 3 {
        return contra(format!(
            "node '{}' ({}): weight {} is not a convolution kernel",
            n.label,
            n.node.op_type,
            shape_str(w)
        ));
    }
    let group = n.node.attr_i("group").unwrap_or(1);
    if let (Some(cin), Some(wc)) = (x.get(1).and_then(|d| d.known()), w[1].known())
        && cin != wc * group
    {
        return contra(format!(
            "node '{}' ({}): input {} has {cin} channels but the weights {} with group={group} expect {}",
            n.label,
            n.node.op_type,
            shape_str(x),
            shape_str(w),
            wc * group
        ));
    }
    let k: Vec<i64> = match n.node.attr_ints("kernel_shape") {
        Some(k) => k.to_vec(),
        None => w[2..].iter().map(|d| d.known().unwrap_or(1)).collect(),
    };
    window_shape(n, x, &k, Some(w[0].clone()), None)
}

fn conv_transpose_shape(n: &NodeIn, x: &Shape, w: &Shape) -> R<Shape> {
    let node = n.node;
    if w.len() < 3 || x.len() != w.len() {
        return contra(format!(
            "node '{}' (ConvTranspose): input {} and weight {} ranks differ",
            n.label,
            shape_str(x),
            shape_str(w)
        ));
    }
    let sr = w.len() - 2;
    let group = node.attr_i("group").unwrap_or(1);
    check_eq(&x[1], &w[0], n.label, "ConvTranspose input channels")?;
    let cout = match w[1].known() {
        Some(c) => Dim::Known(c * group),
        None => n.sym(1),
    };
    let k: Vec<i64> = node
        .attr_ints("kernel_shape")
        .map(|k| k.to_vec())
        .unwrap_or_else(|| w[2..].iter().map(|d| d.known().unwrap_or(1)).collect());
    let (s, d, p, auto) = spatial_params(n, sr);
    let op = node
        .attr_ints("output_padding")
        .map(|v| v.to_vec())
        .unwrap_or_else(|| vec![0; sr]);
    let explicit = node.attr_ints("output_shape").map(|v| v.to_vec());
    let mut out = vec![x[0].clone(), cout];
    for i in 0..sr {
        if let Some(os) = &explicit {
            let j = os.len().saturating_sub(sr) + i;
            out.push(Dim::Known(os.get(j).copied().unwrap_or(0)));
            continue;
        }
        let dim = match x[i + 2].known() {
            None => n.sym(i + 2),
            Some(inp) => {
                let st = s.get(i).copied().unwrap_or(1);
                match auto.as_str() {
                    "SAME_UPPER" | "SAME_LOWER" => Dim::Known(inp * st),
                    _ => {
                        let ek = (k[i] - 1) * d.get(i).copied().unwrap_or(1) + 1;
                        Dim::Known(
                            st * (inp - 1) + op.get(i).copied().unwrap_or(0) + ek
                                - p.get(i).copied().unwrap_or(0)
                                - p.get(i + sr).copied().unwrap_or(0),
                        )
                    }
                }
            }
        };
        out.push(dim);
    }
    Ok(out)
}

fn reshape_shape(n: &NodeIn, x: &Shape, t: &[i64]) -> R<Shape> {
    let allow_zero = n.node.attr_i("allowzero").unwrap_or(0) != 0;
    let mut out: Vec<Dim> = Vec::with_capacity(t.len());
    let mut infer_at = None;
    for (i, &v) in t.iter().enumerate() {
        match v {
            0 if !allow_zero => out.push(x.get(i).cloned().ok_or_else(|| {
                Contradiction(format!(
                    "node '{}' (Reshape): target {:?} copies dim {i} of input {} which has no such dim",
                    n.label,
                    t,
                    shape_str(x)
                ))
            })?),
            -1 => {
                if infer_at.is_some() {
                    return contra(format!(
                        "node '{}' (Reshape): target {t:?} has more than one -1",
                        n.label
                    ));
                }
                infer_at = Some(i);
                out.push(Dim::Known(-1));
            }
            v => out.push(Dim::Known(v)),
        }
    }
    let total: Option<i64> = x.iter().map(|d| d.known()).product();
    let known_part: Option<i64> = out
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != infer_at)
        .map(|(_, d)| d.known())
        .product();
    match (total, known_part, infer_at) {
        (Some(tot), Some(kp), Some(i)) => {
            if kp == 0 || tot % kp != 0 {
                return contra(format!(
                    "node '{}' (Reshape): cannot reshape {} ({tot} elements) into {t:?}",
                    n.label,
                    shape_str(x)
                ));
            }
            out[i] = Dim::Known(tot / kp);
        }
        (Some(tot), Some(kp), None) if tot != kp => {
            return contra(format!(
                "node '{}' (Reshape): cannot reshape {} ({tot} elements) into {t:?} ({kp} elements)",
                n.label,
                shape_str(x)
            ));
        }
        (_, _, Some(i)) if out[i] == Dim::Known(-1) => out[i] = n.sym(i),
        _ => {}
    }
    Ok(out)
}

fn slice(n: &NodeIn) -> R<Fact> {
    let node = n.node;
    let dt = n.dtype(0);
    let (starts, ends, axes, steps) = if node.input_name(1).is_some() {
        (
            n.value(1).map(|c| c.ints()),
            n.value(2).map(|c| c.ints()),
            if node.input_name(3).is_some() {
                n.value(3).map(|c| Some(c.ints()))
            } else {
                Some(None)
            },
            if node.input_name(4).is_some() {
                n.value(4).map(|c| Some(c.ints()))
            } else {
                Some(None)
            },
        )
    } else {
        (
            node.attr_ints("starts").map(|v| v.to_vec()),
            node.attr_ints("ends").map(|v| v.to_vec()),
            Some(node.attr_ints("axes").map(|v| v.to_vec())),
            Some(None),
        )
    };
    let Some(x) = n.shape(0) else {
        return Ok(Fact::unknown());
    };
    let (Some(starts), Some(ends), Some(axes), Some(steps)) = (starts, ends, axes, steps) else {
        let mut s = x.clone();
        for (i, d) in s.iter_mut().enumerate() {
            *d = n.sym(i);
        }
        return Ok(Fact::new(dt, s));
    };
    let r = x.len();
    let axes: Vec<usize> = match axes {
        Some(a) => a
            .iter()
            .map(|&v| norm_axis(v, r, n.label))
            .collect::<R<_>>()?,
        None => (0..starts.len()).collect(),
    };
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    let mut out = x.clone();
    let mut picks: Vec<Option<(i64, i64, i64)>> = vec![None; r];
    for (j, &a) in axes.iter().enumerate() {
        let step = steps.get(j).copied().unwrap_or(1);
        if step == 0 {
            return contra(format!("node '{}' (Slice): step 0", n.label));
        }
        match x[a].known() {
            None => out[a] = n.sym(a),
            Some(dim) => {
                let (s, e) = slice_bounds(
                    starts[j],
                    ends.get(j).copied().unwrap_or(i64::MAX),
                    step,
                    dim,
                );
                let len = if step > 0 {
                    ((e - s) + step - 1) / step
                } else {
                    ((s - e) + (-step) - 1) / (-step)
                }
                .max(0);
                out[a] = Dim::Known(len);
                picks[a] = Some((s, len, step));
            }
        }
    }
    let value = match (n.value(0), r) {
        (Some(v), 1) => {
            let (s, len, step) = picks[0].unwrap_or((0, v.len() as i64, 1));
            let idx: Vec<usize> = (0..len).map(|i| (s + i * step) as usize).collect();
            idx.iter().all(|&i| i < v.len()).then(|| v.select(&idx))
        }
        _ => None,
    };
    Ok(Fact {
        dtype: dt,
        shape: Some(out),
        value,
    })
}

/// ONNX Slice clamping of `start`/`end` for a dimension of size `dim`.
fn slice_bounds(start: i64, end: i64, step: i64, dim: i64) -> (i64, i64) {
    let adj = |v: i64| if v < 0 { v.saturating_add(dim) } else { v };
    let (s, e) = (adj(start), adj(end));
    if step > 0 {
        (s.clamp(0, dim), e.clamp(0, dim))
    } else {
        (s.clamp(0, dim - 1), e.clamp(-1, dim - 1))
    }
}

fn resize(n: &NodeIn) -> R<Fact> {
    let node = n.node;
    let dt = n.dtype(0);
    let Some(x) = n.shape(0) else {
        return Ok(Fact::unknown());
    };
    let r = x.len();
    // Resize-10 and Upsample-9: scales is input 1; Resize-11+: roi 1, scales 2, sizes 3.
    let (scales, sizes) = if node.op_type == "Upsample" || n.opset < 11 {
        let s = if node.input_name(1).is_some() {
            n.value(1).map(|c| c.floats())
        } else {
            node.attr_floats("scales")
                .map(|v| v.iter().map(|&f| f as f64).collect())
        };
        (s, None)
    } else {
        (
            n.value(2).map(|c| c.floats()).filter(|v| !v.is_empty()),
            n.value(3).map(|c| c.ints()).filter(|v| !v.is_empty()),
        )
    };
    let axes: Vec<usize> = match node.attr_ints("axes") {
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
            return contra(format!(
                "node '{}' ({}): {} scales for a rank-{r} input",
                n.label,
                node.op_type,
                sc.len()
            ));
        }
        for (j, &a) in axes.iter().enumerate() {
            out[a] = match x[a].known() {
                Some(v) => Dim::Known((v as f64 * sc[j]).floor() as i64),
                None if sc[j] == 1.0 => x[a].clone(),
                None => n.sym(a),
            };
        }
    } else {
        for (i, d) in out.iter_mut().enumerate().skip(2) {
            *d = n.sym(i);
        }
    }
    Ok(Fact::new(dt, out))
}

fn rnn_shapes(n: &NodeIn) -> R<Vec<Fact>> {
    let node = n.node;
    let dt = n.dtype(0);
    let h = node.attr_i("hidden_size");
    let dirs = if node.attr_s("direction").as_deref() == Some("bidirectional") {
        2
    } else {
        1
    };
    let layout = node.attr_i("layout").unwrap_or(0);
    let Some(x) = n.shape(0) else {
        return Ok(vec![Fact::unknown(); node.output.len()]);
    };
    if x.len() != 3 {
        return contra(format!(
            "node '{}' ({}): input {} must be 3-D",
            n.label,
            node.op_type,
            shape_str(x)
        ));
    }
    let (seq, batch) = if layout == 0 {
        (x[0].clone(), x[1].clone())
    } else {
        (x[1].clone(), x[0].clone())
    };
    let h = match h {
        Some(h) => Dim::Known(h),
        None => match n.shape(2).and_then(|r| r.get(2).cloned()) {
            Some(d) => d,
            None => n.sym(3),
        },
    };
    let dirs = Dim::Known(dirs);
    let y = if layout == 0 {
        vec![seq, dirs.clone(), batch.clone(), h.clone()]
    } else {
        vec![batch.clone(), seq, dirs.clone(), h.clone()]
    };
    let yh = if layout == 0 {
        vec![dirs, batch, h]
    } else {
        vec![batch, dirs, h]
    };
    let mut outs = vec![Fact::new(dt, y)];
    for _ in 1..node.output.len() {
        outs.push(Fact::new(dt, yh.clone()));
    }
    Ok(outs)
}

/// ONNX Attention (opset 23): output shape of `Y` from Q (and V's head size).
fn attention_output(n: &NodeIn) -> Option<Shape> {
    let q = n.shape(0)?;
    let v = n.shape(2)?;
    match (q.len(), v.len()) {
        (4, 4) => Some(vec![q[0].clone(), q[1].clone(), q[2].clone(), v[3].clone()]),
        (3, 3) => {
            let qh = n.node.attr_i("q_num_heads")?;
            let kvh = n.node.attr_i("kv_num_heads")?;
            let vh = v[2].known()? / kvh;
            Some(vec![q[0].clone(), q[1].clone(), Dim::Known(qh * vh)])
        }
        _ => None,
    }
}

fn concat_values(v: &[&Const]) -> Option<Const> {
    if v.iter().all(|c| matches!(c, Const::Int(_))) {
        Some(Const::Int(v.iter().flat_map(|c| c.ints()).collect()))
    } else {
        Some(Const::Float(v.iter().flat_map(|c| c.floats()).collect()))
    }
}

/// Constant folding of element-wise arithmetic on small tensors (shape math).
fn fold_elementwise(op: &str, n: &NodeIn, shape: Option<&Shape>) -> Option<Const> {
    let shape = shape?;
    let dims: Vec<i64> = shape.iter().map(|d| d.known()).collect::<Option<_>>()?;
    let numel: i64 = dims.iter().product();
    if numel as u64 > MAX_CONST_ELEMS {
        return None;
    }
    let k = n.node.input.len();
    let vals: Vec<&Const> = (0..k).map(|i| n.value(i)).collect::<Option<_>>()?;
    let shapes: Vec<Vec<i64>> = (0..k)
        .map(|i| n.fact(i).and_then(|f| f.dims()))
        .collect::<Option<_>>()?;
    // Index each input under numpy broadcasting.
    let gather = |c: &Const, s: &[i64]| -> Vec<f64> {
        let f = c.floats();
        (0..numel)
            .map(|flat| {
                let mut rem = flat;
                let mut idx = 0i64;
                let mut stride = 1i64;
                for (ax, &d) in dims.iter().enumerate().rev() {
                    let coord = rem % d.max(1);
                    rem /= d.max(1);
                    let off = dims.len() - s.len();
                    if ax >= off {
                        let sd = s[ax - off];
                        let c = if sd == 1 { 0 } else { coord };
                        idx += c * stride;
                        stride *= sd;
                    }
                }
                f.get(idx as usize).copied().unwrap_or(0.0)
            })
            .collect()
    };
    let cols: Vec<Vec<f64>> = vals
        .iter()
        .zip(&shapes)
        .map(|(c, s)| gather(c, s))
        .collect();
    let all_int = vals.iter().all(|c| matches!(c, Const::Int(_)));
    let int_result = all_int
        || matches!(
            op,
            "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or"
        );
    let mut out = Vec::with_capacity(numel as usize);
    for i in 0..numel as usize {
        let a = cols[0][i];
        let b = cols.get(1).map(|c| c[i]).unwrap_or(0.0);
        let v = match op {
            "Add" => a + b,
            "Sub" => a - b,
            "Mul" => a * b,
            "Div" if all_int => {
                if b == 0.0 {
                    return None;
                }
                (a as i64 / b as i64) as f64
            }
            "Div" => a / b,
            "Max" => cols.iter().map(|c| c[i]).fold(f64::MIN, f64::max),
            "Min" => cols.iter().map(|c| c[i]).fold(f64::MAX, f64::min),
            "Sum" => cols.iter().map(|c| c[i]).sum(),
            "Mod" if b != 0.0 => a % b,
            "Pow" => a.powf(b),
            "Equal" => (a == b) as i64 as f64,
            "Less" => (a < b) as i64 as f64,
            "Greater" => (a > b) as i64 as f64,
            "LessOrEqual" => (a <= b) as i64 as f64,
            "GreaterOrEqual" => (a >= b) as i64 as f64,
            "And" => ((a != 0.0) && (b != 0.0)) as i64 as f64,
            "Or" => ((a != 0.0) || (b != 0.0)) as i64 as f64,
            "Where" => {
                if a != 0.0 {
                    b
                } else {
                    cols[2][i]
                }
            }
            _ => return None,
        };
        out.push(v);
    }
    let where_int = op == "Where" && matches!((vals[1], vals[2]), (Const::Int(_), Const::Int(_)));
    if int_result || where_int {
        // Integer folding goes through f64: exact below 2^53, the range of real shapes.
        Some(Const::Int(out.iter().map(|&v| v as i64).collect()))
    } else {
        Some(Const::Float(out))
    }
}

/// A parsed Einsum equation with the size of every label.
pub struct Einsum {
    pub inputs: Vec<Vec<char>>,
    pub output: Vec<char>,
    pub sizes: std::collections::BTreeMap<char, Dim>,
}

impl Einsum {
    /// Parses `eq` against the operand shapes. An ellipsis is expanded to labels 'A', 'B'...
    pub fn parse(eq: &str, shapes: &[&Shape], node: &str) -> R<Einsum> {
        let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match eq.split_once("->") {
            Some((l, r)) => (l.to_string(), Some(r.to_string())),
            None => (eq.clone(), None),
        };
        let terms: Vec<&str> = lhs.split(',').collect();
        if terms.len() != shapes.len() {
            return contra(format!(
                "node '{node}' (Einsum): equation '{eq}' has {} operands, the node {}",
                terms.len(),
                shapes.len()
            ));
        }
        let ell_rank = terms
            .iter()
            .zip(shapes)
            .map(|(t, s)| {
                if t.contains("...") {
                    s.len() + 3 - t.chars().count()
                } else {
                    0
                }
            })
            .max()
            .unwrap_or(0);
        let ell: Vec<char> = (0..ell_rank).map(|i| (b'A' + i as u8) as char).collect();
        let expand = |t: &str, rank: usize| -> Vec<char> {
            if let Some((a, b)) = t.split_once("...") {
                let k = rank + 3 - t.chars().count();
                let mut v: Vec<char> = a.chars().collect();
                v.extend(&ell[ell_rank - k..]);
                v.extend(b.chars());
                v
            } else {
                t.chars().collect()
            }
        };
        let mut inputs = Vec::new();
        let mut sizes = std::collections::BTreeMap::new();
        for (t, s) in terms.iter().zip(shapes) {
            let labels = expand(t, s.len());
            if labels.len() != s.len() {
                return contra(format!(
                    "node '{node}' (Einsum): term '{t}' does not match operand shape {}",
                    shape_str(s)
                ));
            }
            for (c, d) in labels.iter().zip(s.iter()) {
                match sizes.get(c) {
                    Some(Dim::Known(1)) | None => {
                        sizes.insert(*c, d.clone());
                    }
                    Some(prev) => {
                        if *d != Dim::Known(1) {
                            check_eq(prev, d, node, "Einsum label size")?;
                        }
                    }
                }
            }
            inputs.push(labels);
        }
        let output = match rhs {
            Some(r) => {
                if let Some((a, b)) = r.split_once("...") {
                    let mut v: Vec<char> = a.chars().collect();
                    v.extend(&ell);
                    v.extend(b.chars());
                    v
                } else {
                    r.chars().collect()
                }
            }
            None => {
                let mut once: Vec<char> = sizes
                    .keys()
                    .filter(|c| {
                        c.is_lowercase() && inputs.iter().flatten().filter(|x| x == c).count() == 1
                    })
                    .copied()
                    .collect();
                once.sort();
                let mut v = ell.clone();
                v.extend(once);
                v
            }
        };
        Ok(Einsum {
            inputs,
            output,
            sizes,
        })
    }

    pub fn output_shape(&self) -> Shape {
        self.output
            .iter()
            .map(|c| self.sizes.get(c).cloned().unwrap_or(Dim::Known(1)))
            .collect()
    }

    /// Labels summed over (in an input, not in the output).
    pub fn contracted(&self) -> Vec<char> {
        self.sizes
            .keys()
            .filter(|c| !self.output.contains(c))
            .copied()
            .collect()
    }
}
