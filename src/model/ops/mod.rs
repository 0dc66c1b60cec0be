//! The operator table: for every ONNX (and common `com.microsoft`) operator acceval knows,
//! its output rule (types, shapes and, for shape arithmetic, small constant values) beside
//! its cost rule (MACs and other ops), so adding an operator touches one entry. The
//! pattern is tract's (`output_facts` beside `cost` in `core/src/ops`).
//!
//! One file per family: `elementwise`, `quant`, `conv`, `pool`, `matmul` (+ `einsum`),
//! `norm`, `reduce`, `movement`, `slicing`, `generators`, `resize`, `recurrent`,
//! `attention`. `fold` holds the constant-value helpers they share. Control flow (`If`,
//! `Loop`, `Scan`) needs the graph walker and lives in `analyse::control`.
//!
//! The cost conventions (the README copies this table). FLOPs = 2 × MACs. MACs follow the
//! convention behind torchvision's published numbers (and fvcore/thop): only the
//! multiply-accumulates of the linear-algebra operators count; bias, normalisation,
//! activations, pooling, element-wise and resize work is kept apart as "other ops", so MACs
//! can be compared with tools that print MACs as "FLOPs".
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
//! | If | the larger branch (noted); the taken branch when the condition is constant | same |
//! | Loop, Scan | body × trip count when static, else body once (noted) | same |
//!
//! Any other operator is "unsupported": it is listed, and the totals are a lower bound.
//! Every count is checked: a product that does not fit 64 bits is reported as too large,
//! never wrapped.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::OnceLock;

use super::onnx::{DataType, NodeProto};
use super::shape::{Const, Dim, Fact, R, Shape, ShapeError};

mod attention;
mod conv;
mod einsum;
mod elementwise;
pub mod fold;
mod generators;
mod matmul;
mod movement;
mod norm;
mod pool;
mod quant;
mod recurrent;
mod reduce;
mod required;
pub use required::required_inputs;
mod attributes;
pub use attributes::attribute_schemas;
mod resize;
mod slicing;

pub use einsum::Einsum;

/// The cost of one node (one execution).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub macs: u64,
    pub other_ops: u64,
}

/// Why a node has no cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCost {
    /// No rule for this operator (or for this use of it, e.g. an Einsum of 3+ operands).
    Unsupported,
    /// A rule exists, but a shape it needs is not known.
    Unresolved(String),
    /// The count does not fit 64 bits (the message gives its magnitude).
    TooLarge(String),
    /// The node is data, not computation (`Constant`): not listed among the costs.
    NotCounted,
}

/// Output rule: the facts of the node's outputs.
pub type ShapeRule = fn(&NodeIn) -> R<Vec<Fact>>;
/// Cost rule: MACs and other ops of one execution, from the inputs and the outputs.
pub type CostRule = fn(&NodeIn, &[Fact]) -> Result<Cost, NoCost>;

/// What acceval knows about one operator.
#[derive(Clone, Copy)]
pub struct Op {
    pub shape: ShapeRule,
    pub cost: CostRule,
}

/// Which domains an entry answers for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// Any domain (an operator of the same name elsewhere is assumed to be the same).
    Any,
    /// Only the default domain (`""` / `ai.onnx`).
    Onnx,
    /// Only outside the default domain (`com.microsoft`'s same-named variants).
    Other,
}

/// One row of the table: operator names sharing one rule pair.
pub struct Entry {
    pub names: &'static [&'static str],
    pub domain: Domain,
    pub op: Op,
}

/// A row for `names` in any domain.
pub const fn any(names: &'static [&'static str], shape: ShapeRule, cost: CostRule) -> Entry {
    Entry {
        names,
        domain: Domain::Any,
        op: Op { shape, cost },
    }
}

const FAMILIES: &[&[Entry]] = &[
    elementwise::OPS,
    quant::OPS,
    conv::OPS,
    pool::OPS,
    matmul::OPS,
    norm::OPS,
    reduce::OPS,
    movement::OPS,
    slicing::OPS,
    generators::OPS,
    resize::OPS,
    recurrent::OPS,
    attention::OPS,
];

/// Where an attribute stands against the schema of its operator in force at an opset.
#[derive(Debug, PartialEq, Eq)]
pub enum AttributeAt {
    /// The schema in force defines it, or ONNX defines no such operator (other checks speak
    /// to that).
    Defined,
    /// Other opsets' schemas define it: the ranges of opsets where one does (first, last;
    /// `None` for up to the newest).
    OtherOpsets(Vec<(i64, Option<i64>)>),
    /// No schema of the operator defines it; the names the schema in force defines.
    Unknown(&'static [&'static str]),
}

/// Whether `op` (default domain) at `opset` defines the attribute `name`. The schema in force
/// is the newest one taking effect at or before `opset`; before the operator's first schema,
/// the first.
pub fn attribute_at(op: &str, opset: i64, name: &str) -> AttributeAt {
    let Some(schemas) = attribute_schemas(op) else {
        return AttributeAt::Defined;
    };
    let k = schemas
        .iter()
        .rposition(|&(since, _)| since <= opset)
        .unwrap_or(0);
    let in_force = schemas[k].1;
    if in_force.contains(&name) {
        return AttributeAt::Defined;
    }
    let mut ranges: Vec<(i64, Option<i64>)> = Vec::new();
    for (j, &(since, names)) in schemas.iter().enumerate() {
        if !names.contains(&name) {
            continue;
        }
        let last = schemas.get(j + 1).map(|&(next, _)| next - 1);
        match ranges.last_mut() {
            Some((_, end)) if *end == Some(since - 1) => *end = last,
            _ => ranges.push((since, last)),
        }
    }
    if ranges.is_empty() {
        AttributeAt::Unknown(in_force)
    } else {
        AttributeAt::OtherOpsets(ranges)
    }
}

/// True for the default operator domain.
pub fn is_onnx_domain(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

type Table = HashMap<(bool, &'static str), &'static Op>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table::new();
        for e in FAMILIES.iter().flat_map(|f| f.iter()) {
            for &name in e.names {
                if e.domain != Domain::Other {
                    t.insert((true, name), &e.op);
                }
                if e.domain != Domain::Onnx {
                    t.insert((false, name), &e.op);
                }
            }
        }
        t
    })
}

/// The rules of operator `op_type` in `domain`, when acceval has them.
pub fn lookup(domain: &str, op_type: &str) -> Option<&'static Op> {
    table().get(&(is_onnx_domain(domain), op_type)).copied()
}

/// Everything a rule may read about one node.
pub struct NodeIn<'a> {
    pub node: &'a NodeProto,
    pub label: &'a str,
    pub inputs: Vec<Option<&'a Fact>>,
    pub opset: i64,
    /// Elements constant folding may still create (shared by the whole analysis, so a
    /// hostile chain of large constants stays linear).
    pub budget: &'a Cell<u64>,
}

impl NodeIn<'_> {
    pub fn fact(&self, i: usize) -> Option<&Fact> {
        self.inputs.get(i).copied().flatten()
    }
    pub fn shape(&self, i: usize) -> Option<&Shape> {
        self.fact(i).and_then(|f| f.shape.as_ref())
    }
    pub fn dtype(&self, i: usize) -> Option<DataType> {
        self.fact(i).and_then(|f| f.dtype)
    }
    pub fn value(&self, i: usize) -> Option<&Const> {
        self.fact(i).and_then(|f| f.const_value())
    }
    pub fn rank(&self, i: usize) -> Option<usize> {
        self.fact(i).and_then(|f| f.rank())
    }
    pub fn dims_of(&self, i: usize) -> Option<Vec<i64>> {
        self.fact(i).and_then(|f| f.dims())
    }
    pub fn op(&self) -> &str {
        &self.node.op_type
    }
    pub fn has(&self, i: usize) -> bool {
        self.node.input_name(i).is_some()
    }
    /// An integer list from input `i` (newer opsets) or attribute `attr` (older).
    pub fn ints_in_or_attr(&self, i: usize, attr: &str) -> Option<Vec<i64>> {
        if self.has(i) {
            return self.value(i).map(|c| c.ints());
        }
        self.node.attr_ints(attr).map(|v| v.to_vec())
    }
    pub fn attr_i(&self, name: &str, default: i64) -> i64 {
        self.node.attr_i(name).unwrap_or(default)
    }
    /// A symbolic dim named after this node.
    pub fn sym(&self, k: usize) -> Dim {
        Dim::Sym(format!("{}:{k}", self.label))
    }
    pub fn unknown_rank(&self, rank: usize) -> Shape {
        (0..rank).map(|k| self.sym(k)).collect()
    }
    /// A contradiction naming this node.
    pub fn contra<T>(&self, what: impl std::fmt::Display) -> R<T> {
        Err(ShapeError::Contradiction(format!(
            "node '{}' ({}): {what}",
            self.label,
            self.op()
        )))
    }
    /// A defect of this node itself (an attribute out of the operator's range), naming it.
    pub fn malformed<T>(&self, what: impl std::fmt::Display) -> R<T> {
        Err(ShapeError::Malformed(format!(
            "node '{}' ({}): {what}",
            self.label,
            self.op()
        )))
    }
    /// `v`, or the error that `what` does not fit 64 bits.
    pub fn fits<T>(&self, v: Option<T>, what: &str) -> R<T> {
        v.ok_or_else(|| {
            ShapeError::TooLarge(format!(
                "node '{}' ({}): {what} does not fit a 64-bit count; the model's dims or attributes are implausible",
                self.label,
                self.op()
            ))
        })
    }
    /// `a · b` for dims.
    pub fn mul(&self, a: i64, b: i64) -> R<i64> {
        self.fits(a.checked_mul(b), "an output dim")
    }
    /// `a + b` for dims.
    pub fn add(&self, a: i64, b: i64) -> R<i64> {
        self.fits(a.checked_add(b), "an output dim")
    }
    /// A fact with `value` attached when the folding budget allows it.
    pub fn folded(&self, dtype: Option<DataType>, shape: Shape, value: Option<Const>) -> Fact {
        let value = value.filter(|v| self.spend(v.len()));
        Fact::new(dtype, shape).with_value(value)
    }
    /// A fact that keeps input `i`'s value (same elements, same order: Reshape, Squeeze,
    /// Flatten, ...), when it is consistent with `shape`.
    pub fn passed(&self, i: usize, dtype: Option<DataType>, shape: Shape) -> Fact {
        let mut f = Fact::new(dtype, shape);
        if let Some(v) = self.fact(i).and_then(|x| x.value.clone())
            && f.numel() == Some(v.len() as u64)
        {
            f.value = Some(v);
        }
        f
    }
    /// Takes `n` elements from the folding budget; once a request does not fit, the budget
    /// is spent and no later node folds (so the result does not depend on value sizes).
    pub fn spend(&self, n: usize) -> bool {
        match self.budget.get().checked_sub(n as u64) {
            Some(rest) => {
                self.budget.set(rest);
                true
            }
            None => {
                self.budget.set(0);
                false
            }
        }
    }
}

// ---- shared output rules ----------------------------------------------------------------

/// The first input's type and shape; further outputs unknown.
pub fn same_shape(n: &NodeIn) -> R<Vec<Fact>> {
    let mut outs = vec![Fact::like(n.fact(0))];
    outs.resize(n.node.output.len().max(1), Fact::unknown());
    Ok(outs)
}

// ---- shared cost rules -----------------------------------------------------------------

fn unresolved() -> NoCost {
    NoCost::Unresolved("shape not resolved".into())
}

/// Elements of `f` (unresolved when its shape is not known).
pub fn numel(f: Option<&Fact>) -> Result<u64, NoCost> {
    f.and_then(|f| f.numel()).ok_or_else(unresolved)
}

/// The dims of `f` as counts.
pub fn dims(f: Option<&Fact>) -> Result<Vec<u64>, NoCost> {
    let d = f.and_then(|f| f.dims()).ok_or_else(unresolved)?;
    d.iter()
        .map(|&x| u64::try_from(x).map_err(|_| NoCost::Unresolved(format!("negative dim {x}"))))
        .collect()
}

/// The dims of `f`, which must have exactly `N` of them.
pub fn dims_n<const N: usize>(f: Option<&Fact>, what: &str) -> Result<[u64; N], NoCost> {
    let d = dims(f)?;
    <[u64; N]>::try_from(d.as_slice())
        .map_err(|_| NoCost::Unresolved(format!("{what} must have rank {N}, not {}", d.len())))
}

/// The checked product of `factors`; when it does not fit, its magnitude.
pub fn prod(factors: &[u64]) -> Result<u64, NoCost> {
    factors
        .iter()
        .try_fold(1u64, |acc, &f| acc.checked_mul(f))
        .ok_or_else(|| {
            let approx: f64 = factors.iter().map(|&f| f as f64).product();
            NoCost::TooLarge(format!("{approx:.3e}"))
        })
}

/// A cost from its parts.
pub fn cost(macs: u64, other_ops: u64) -> Result<Cost, NoCost> {
    Ok(Cost { macs, other_ops })
}

/// No arithmetic (data movement).
pub fn free(_: &NodeIn, _: &[Fact]) -> Result<Cost, NoCost> {
    cost(0, 0)
}

/// `K` other ops per output element.
pub fn per_output<const K: u64>(_: &NodeIn, outs: &[Fact]) -> Result<Cost, NoCost> {
    cost(0, prod(&[K, numel(outs.first())?])?)
}

/// `K` other ops per element of the first input.
pub fn per_input<const K: u64>(n: &NodeIn, _: &[Fact]) -> Result<Cost, NoCost> {
    cost(0, prod(&[K, numel(n.fact(0))?])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated table answers by binary search, so it must be sorted; a few operators
    /// whose required inputs are known by heart.
    #[test]
    fn required_inputs_are_looked_up_in_the_generated_table() {
        assert_eq!(required_inputs("Conv"), &[0, 1]);
        assert_eq!(required_inputs("Abs"), &[0]);
        assert_eq!(required_inputs("Xor"), &[0, 1]);
        assert_eq!(required_inputs("QLinearConv"), &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(required_inputs("Resize"), &[0]);
        // Loop's M and cond are optional; Concat's inputs are variadic; unknown ops.
        assert!(required_inputs("Loop").is_empty());
        assert!(required_inputs("Concat").is_empty());
        assert!(required_inputs("NoSuchOp").is_empty());
    }

    /// The schema in force at an opset decides, and the answer names where else an attribute
    /// is defined (from onnx 1.23.2's schemas).
    #[test]
    fn attributes_are_judged_by_the_schema_in_force() {
        use AttributeAt::*;
        assert_eq!(attribute_at("Squeeze", 11, "axes"), Defined);
        assert_eq!(attribute_at("Squeeze", 12, "axes"), Defined);
        assert_eq!(
            attribute_at("Squeeze", 13, "axes"),
            OtherOpsets(vec![(1, Some(12))])
        );
        assert_eq!(
            attribute_at("Upsample", 9, "scales"),
            OtherOpsets(vec![(7, Some(8))])
        );
        assert_eq!(
            attribute_at("Dropout", 7, "seed"),
            OtherOpsets(vec![(12, None)])
        );
        assert_eq!(attribute_at("Dropout", 22, "seed"), Defined);
        assert_eq!(attribute_at("Relu", 1, "consumed_inputs"), Defined);
        assert_eq!(
            attribute_at("Relu", 6, "consumed_inputs"),
            OtherOpsets(vec![(1, Some(5))])
        );
        match attribute_at("Conv", 17, "stride") {
            Unknown(names) => assert!(names.contains(&"strides"), "{names:?}"),
            other => panic!("{other:?}"),
        }
        // Before the operator's first schema, the first; an unknown operator is left alone.
        assert_eq!(attribute_at("Gelu", 7, "approximate"), Defined);
        assert_eq!(attribute_at("NoSuchOp", 17, "anything"), Defined);
        // Found by binary search, so the table is sorted: the first, a middle and the last.
        for op in ["Abs", "Conv", "Upsample", "Xor"] {
            assert!(attribute_schemas(op).is_some(), "{op}");
        }
    }

    #[test]
    fn every_name_has_one_entry_per_domain() {
        let mut seen = std::collections::HashSet::new();
        for e in FAMILIES.iter().flat_map(|f| f.iter()) {
            for &name in e.names {
                if e.domain != Domain::Other {
                    assert!(seen.insert((true, name)), "{name} listed twice");
                }
                if e.domain != Domain::Onnx {
                    assert!(seen.insert((false, name)), "{name} listed twice");
                }
            }
        }
        assert!(lookup("", "Conv").is_some());
        assert!(lookup("com.microsoft", "Attention").is_some());
        assert!(lookup("", "NoSuchOp").is_none());
    }

    #[test]
    fn products_do_not_wrap() {
        assert_eq!(prod(&[2, 3, 4]), Ok(24));
        match prod(&[1 << 40, 1 << 40]) {
            Err(NoCost::TooLarge(m)) => assert!(m.contains("e24"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
