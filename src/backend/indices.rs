//! Indices a run feeds straight into `Gather`, `GatherElements` or `ScatterElements` are
//! checked against the axis they index before the engine sees them (issue 27). They are
//! data, so no admission check can see them; tract indexed past the table and panicked
//! ("range start index 16 out of range for slice of length 8": caught, but the run said
//! "the engine panicked"), where ONNX Runtime says "indices element out of data bounds".
//! Only graph inputs used directly as indices are checked, each run, outside the timed span:
//! a scan of the index tensor (token ids, a few hundred integers), not of activations.

use std::path::Path;

use crate::model::load::OnnxFile;
use crate::model::tensor::{HostTensor, TensorData};

/// Where the indexed tensor comes from.
#[derive(Debug, Clone, PartialEq)]
enum Table {
    /// An initializer of this many elements along the axis.
    Fixed(i64),
    /// A graph input (its size along the axis is read each run).
    Input(String),
}

/// One graph input used as the indices of one node.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexGuard {
    input: String,
    node: String,
    op: String,
    table: Table,
    axis: i64,
}

const OPS: &[&str] = &["Gather", "GatherElements", "ScatterElements", "Scatter"];

/// The guards of `model`'s main graph (none for a file acceval does not read, or cannot).
pub fn guards(model: &Path) -> Vec<IndexGuard> {
    let Ok(file) = OnnxFile::open(model) else {
        return Vec::new();
    };
    let g = file.graph();
    let inits: std::collections::HashMap<&str, &[i64]> = g
        .initializer
        .iter()
        .map(|t| (t.name.as_str(), t.dims.as_slice()))
        .collect();
    let is_input = |name: &str| !inits.contains_key(name) && g.input.iter().any(|i| i.name == name);
    let mut out = Vec::new();
    for (i, n) in g.node.iter().enumerate() {
        let onnx = n.domain.is_empty() || n.domain == "ai.onnx";
        if !onnx || !OPS.contains(&n.op_type.as_str()) || n.input.len() < 2 {
            continue;
        }
        let (data, idx) = (n.input[0].as_str(), n.input[1].as_str());
        if !is_input(idx) {
            continue;
        }
        let axis = n
            .attribute
            .iter()
            .find(|a| a.name == "axis")
            .map_or(0, |a| a.i);
        let table = match inits.get(data) {
            Some(dims) => {
                // Admission has checked the axis against the rank.
                let r = dims.len() as i64;
                let a = if axis < 0 { axis + r } else { axis };
                match usize::try_from(a).ok().and_then(|a| dims.get(a)) {
                    Some(&d) => Table::Fixed(d),
                    None => continue,
                }
            }
            None if is_input(data) => Table::Input(data.to_string()),
            None => continue,
        };
        out.push(IndexGuard {
            input: idx.to_string(),
            node: n.label(i),
            op: n.op_type.clone(),
            table,
            axis,
        });
    }
    out
}

/// The first index of `t` outside `-d..d`, with its flat position.
fn first_outside(t: &TensorData, d: i64) -> Option<(usize, i64)> {
    let bad = |v: i64| v < -d || v >= d;
    match t {
        TensorData::I64(a) => a
            .iter()
            .enumerate()
            .find(|&(_, &v)| bad(v))
            .map(|(k, &v)| (k, v)),
        TensorData::I32(a) => a
            .iter()
            .enumerate()
            .find(|&(_, &v)| bad(i64::from(v)))
            .map(|(k, &v)| (k, i64::from(v))),
        _ => None,
    }
}

/// Checks `inputs` against `guards`: the message names the input, the index, the node and
/// the valid range.
pub fn check(guards: &[IndexGuard], inputs: &[HostTensor]) -> Result<(), String> {
    for g in guards {
        let Some(idx) = inputs.iter().find(|t| t.name == g.input) else {
            continue;
        };
        let d = match &g.table {
            Table::Fixed(d) => *d,
            Table::Input(name) => {
                let Some(t) = inputs.iter().find(|t| &t.name == name) else {
                    continue;
                };
                let shape = t.data.shape();
                let r = shape.len() as i64;
                let a = if g.axis < 0 { g.axis + r } else { g.axis };
                match usize::try_from(a).ok().and_then(|a| shape.get(a)) {
                    Some(&d) => d as i64,
                    None => continue,
                }
            }
        };
        if let Some((k, v)) = first_outside(&idx.data, d) {
            return Err(format!(
                "input '{}' holds the index {v} (element {k}), outside the {d} entries node '{}' ({}) indexes along axis {} (valid: {}..={}): the input does not fit the model (generated integers are in [0, 10); give the input with --input {}=FILE.npy)",
                g.input,
                g.node,
                g.op,
                g.axis,
                -d,
                d - 1,
                g.input
            ));
        }
    }
    Ok(())
}
