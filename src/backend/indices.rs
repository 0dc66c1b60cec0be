//! Indices a run feeds straight into `Gather`, `GatherElements`, `ScatterElements`,
//! `GatherND` or `TopK`'s k are checked against the axis they index before the engine sees
//! them (issue 27). They are data, so no admission check can see them; tract indexed past
//! the table and panicked ("range start index 16 out of range for slice of length 8":
//! caught, but the run said "the engine panicked"), where ONNX Runtime says "indices
//! element out of data bounds". tract also returned five values from TopK of a 4-wide axis
//! (k = 5 from the input, exit 0) and panicked on GatherND indices past their axis and on
//! OneHot indices past the depth (valid ONNX: an all-off row, which ONNX Runtime computes;
//! so that check is tract's only). Only graph inputs used directly as indices are checked,
//! each run, outside the timed span: a scan of the index tensor (token ids, a few hundred
//! integers), not of activations, that allocates nothing unless it finds a value outside.

use std::path::Path;

use crate::model::load::OnnxFile;
use crate::model::tensor::{HostTensor, TensorData};

/// The shape of the tensor indexed: an initializer's dims, or a graph input's (read each run).
#[derive(Debug, Clone, PartialEq)]
enum Table {
    Fixed(Vec<usize>),
    Input(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Rule {
    /// Every value in `-d..d`, `d` the table's size along `axis`.
    Axis(i64),
    /// One value in `0..=d` (TopK's k along `axis`).
    Count(i64),
    /// The last axis of the indices holds tuples over the table's axes from `batch_dims` on;
    /// negative entries only where the engine takes them (not tract: it stopped on them).
    Tuples(usize, bool),
    /// Every value in `-depth..depth` (OneHot, on tract only: ONNX gives an all-off row).
    Depth(i64),
}

/// One graph input used as the indices of one node.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexGuard {
    input: String,
    node: String,
    op: String,
    table: Table,
    rule: Rule,
}

/// The guards of `model`'s main graph for `backend` (none for a file acceval does not read,
/// or cannot).
pub fn guards(model: &Path, backend: &str) -> Vec<IndexGuard> {
    let Ok(file) = OnnxFile::open(model) else {
        return Vec::new();
    };
    let tract = matches!(backend, "cpu" | "cuda");
    let g = file.graph();
    let inits: std::collections::HashMap<&str, &crate::model::onnx::TensorProto> =
        g.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
    let is_input = |name: &str| !inits.contains_key(name) && g.input.iter().any(|i| i.name == name);
    let table = |name: &str| match inits.get(name) {
        Some(t) => t
            .dims
            .iter()
            .map(|&d| usize::try_from(d).ok())
            .collect::<Option<Vec<_>>>()
            .map(Table::Fixed),
        None if is_input(name) => Some(Table::Input(name.to_string())),
        None => None,
    };
    let mut out = Vec::new();
    for (i, n) in g.node.iter().enumerate() {
        let onnx = n.domain.is_empty() || n.domain == "ai.onnx";
        if !onnx || n.input.len() < 2 {
            continue;
        }
        let attr = |name: &str, default: i64| {
            n.attribute
                .iter()
                .find(|a| a.name == name)
                .map_or(default, |a| a.i)
        };
        let rule = match n.op_type.as_str() {
            "Gather" | "GatherElements" | "ScatterElements" | "Scatter" => {
                Rule::Axis(attr("axis", 0))
            }
            "TopK" => Rule::Count(attr("axis", -1)),
            "GatherND" => Rule::Tuples(usize::try_from(attr("batch_dims", 0)).unwrap_or(0), !tract),
            "OneHot" if tract => {
                let depth = n.input.get(1).and_then(|d| inits.get(d.as_str()));
                let value = depth.and_then(|t| {
                    t.int_values(1)
                        .and_then(|v| v.first().copied())
                        .or_else(|| t.float_values(1).and_then(|v| v.first().map(|&f| f as i64)))
                });
                match value {
                    Some(d) => Rule::Depth(d),
                    None => continue,
                }
            }
            _ => continue,
        };
        // OneHot's indices are its input 0; the others index their input 0 with input 1.
        let (idx, data) = match rule {
            Rule::Depth(_) => (n.input[0].as_str(), None),
            _ => (n.input[1].as_str(), table(&n.input[0])),
        };
        if !is_input(idx) {
            continue;
        }
        let table = match (&rule, data) {
            (Rule::Depth(_), _) => Table::Fixed(Vec::new()),
            (_, Some(t)) => t,
            (_, None) => continue,
        };
        out.push(IndexGuard {
            input: idx.to_string(),
            node: n.label(i),
            op: n.op_type.clone(),
            table,
            rule,
        });
    }
    out
}

/// `shape[axis]`, `axis` negative from the end.
fn dim(shape: &[usize], axis: i64) -> Option<i64> {
    let a = if axis < 0 {
        axis + shape.len() as i64
    } else {
        axis
    };
    usize::try_from(a)
        .ok()
        .and_then(|a| shape.get(a))
        .map(|&d| d as i64)
}

impl IndexGuard {
    /// What is wrong with `idx` (an integer tensor; others are not indices), given the
    /// table's `shape`. Allocates nothing unless it finds a value outside.
    fn violation(&self, idx: &TensorData, shape: &[usize]) -> Option<String> {
        match idx {
            TensorData::I64(a) => self.first_outside(a.iter().copied(), idx.shape(), shape),
            TensorData::I32(a) => {
                self.first_outside(a.iter().map(|&v| i64::from(v)), idx.shape(), shape)
            }
            _ => None,
        }
    }

    /// The first of `values` (in logical order, of an index tensor of `idx_shape`) outside
    /// what the node takes from a table of `shape`.
    fn first_outside(
        &self,
        values: impl Iterator<Item = i64>,
        idx_shape: &[usize],
        shape: &[usize],
    ) -> Option<String> {
        let outside = |k: usize, v: i64, lo: i64, hi: i64, of: String| {
            format!(
                "input '{}' holds {v} (element {k}), outside {lo}..={hi}: node '{}' ({}) takes {of}",
                self.input, self.node, self.op
            )
        };
        match self.rule {
            Rule::Axis(axis) => {
                let d = dim(shape, axis)?;
                let (k, v) = values.enumerate().find(|&(_, v)| v < -d || v >= d)?;
                Some(outside(
                    k,
                    v,
                    -d,
                    d - 1,
                    format!("one of the {d} entries along axis {axis}"),
                ))
            }
            Rule::Count(axis) => {
                let d = dim(shape, axis)?;
                let (k, v) = values.enumerate().find(|&(_, v)| v < 0 || v > d)?;
                Some(outside(
                    k,
                    v,
                    0,
                    d,
                    format!("a k of at most the {d} elements along axis {axis}"),
                ))
            }
            Rule::Depth(depth) => {
                let (k, v) = values
                    .enumerate()
                    .find(|&(_, v)| v < -depth || v >= depth)?;
                Some(format!(
                    "{} on tract, which stops on others (ONNX gives an all-off row for them; --backend ort:cpu computes it)",
                    outside(
                        k,
                        v,
                        -depth,
                        depth - 1,
                        format!("an index within its depth of {depth}")
                    )
                ))
            }
            Rule::Tuples(batch, negative) => {
                let m = *idx_shape.last()?;
                let axes = shape.get(batch..)?;
                let low = |d: i64| if negative { -d } else { 0 };
                let (k, v) = values.enumerate().find(|&(k, v)| {
                    axes.get(k % m.max(1))
                        .is_some_and(|&d| v < low(d as i64) || v >= d as i64)
                })?;
                let d = axes[k % m] as i64;
                let why = outside(
                    k,
                    v,
                    low(d),
                    d - 1,
                    format!(
                        "at position {} of each index tuple one of the {d} entries of axis {}",
                        k % m,
                        batch + k % m
                    ),
                );
                Some(if negative || v >= d {
                    why
                } else {
                    format!(
                        "{why} on tract, which stops on negative ones (ONNX counts them from the end; --backend ort:cpu computes it)"
                    )
                })
            }
        }
    }
}

/// Checks `inputs` against `guards`: the message names the input, the value, the node and
/// the valid range.
pub fn check(guards: &[IndexGuard], inputs: &[HostTensor]) -> Result<(), String> {
    for g in guards {
        let Some(idx) = inputs.iter().find(|t| t.name == g.input) else {
            continue;
        };
        let shape: &[usize] = match &g.table {
            Table::Fixed(dims) => dims,
            Table::Input(name) => match inputs.iter().find(|t| &t.name == name) {
                Some(t) => t.data.shape(),
                None => continue,
            },
        };
        if let Some(why) = g.violation(&idx.data, shape) {
            return Err(format!(
                "{why}: the input does not fit the model (generated integers are in [0, 10); give the input with --input {}=FILE.npy)",
                g.input
            ));
        }
    }
    Ok(())
}
