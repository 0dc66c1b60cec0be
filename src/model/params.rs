//! Which stored tensors of a model are parameters, and how many bytes they occupy.
//!
//! Parameters are the initializers *and* the tensors of `Constant` nodes (many exporters
//! store all weights as Constant nodes), in the main graph and in every subgraph
//! (`If`/`Loop`/`Scan` bodies), each counted once by name even when shared. Bytes use the
//! stored element type (an INT8 tensor is a quarter of its FP32 parent; INT4 packs two per
//! byte). Integer tensors that only feed shape-like inputs (`Reshape`'s shape, `Slice`'s
//! starts/ends/axes/steps, `Pad`'s pads, `Resize`'s scales/sizes, ...), directly or through
//! shape arithmetic, are not parameters: they are listed separately as "shape tensors".
//!
//! Every stored tensor is checked first (`TensorProto::check`: dims against data, external
//! files), and every sum is checked: counts never wrap.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use super::onnx::{DataType, GraphProto, LoadError, NodeProto, TensorProto, stored_bytes};
use super::ops::is_onnx_domain;
pub use crate::report::schema::inspect::{
    ParamSummary, ShapeTensors, StoredTensor, TensorSource, TypeTotal,
};

/// How a node input is used, for the shape-tensor rule.
fn is_shape_slot(op: &str, idx: usize) -> bool {
    match op {
        "Reshape" | "Expand" | "Tile" | "Unsqueeze" | "Squeeze" | "TopK" | "OneHot" | "Split"
        | "CumSum" | "Trilu" | "Upsample" => idx == 1,
        "Slice" => (1..=4).contains(&idx),
        "Pad" => idx == 1 || idx == 3,
        "Resize" => (1..=3).contains(&idx),
        "ConstantOfShape" | "If" => idx == 0,
        "Loop" => idx <= 1,
        "Range" => idx <= 2,
        "NonMaxSuppression" => (2..=4).contains(&idx),
        op if op.starts_with("Reduce") => idx == 1,
        _ => false,
    }
}

/// Operators through which shape arithmetic flows (an input is shape-like when every
/// output of the node is).
fn is_shape_arith(op: &str) -> bool {
    matches!(
        op,
        "Concat"
            | "Gather"
            | "Unsqueeze"
            | "Squeeze"
            | "Cast"
            | "Add"
            | "Sub"
            | "Mul"
            | "Div"
            | "Equal"
            | "Where"
            | "Slice"
            | "Reshape"
            | "Identity"
            | "Max"
            | "Min"
            | "Mod"
            | "Neg"
            | "Abs"
            | "Floor"
            | "Ceil"
            | "ReduceProd"
            | "ReduceSum"
            | "Less"
            | "Greater"
            | "Not"
            | "And"
            | "Or"
    )
}

/// A float tensor counts as shape data only in scale/threshold slots.
fn is_float_shape_slot(op: &str, idx: usize) -> bool {
    matches!((op, idx), ("Resize", 1 | 2) | ("Upsample", 1))
        || (op == "NonMaxSuppression" && idx >= 3)
}

/// Visits every graph of the model (main graph first, subgraphs depth-first).
pub fn for_each_graph<'a>(g: &'a GraphProto, path: &str, f: &mut dyn FnMut(&'a GraphProto, &str)) {
    f(g, path);
    for (i, node) in g.node.iter().enumerate() {
        for a in &node.attribute {
            let sub = format!("{}/{}", node.label(i), a.name);
            if let Some(sg) = &a.g {
                for_each_graph(sg, &sub, f);
            }
            for (k, sg) in a.graphs.iter().enumerate() {
                for_each_graph(sg, &format!("{sub}[{k}]"), f);
            }
        }
    }
}

/// The tensors of initializers, sparse initializers and `Constant` nodes of one graph,
/// with their source.
pub fn stored_tensors(g: &GraphProto) -> Vec<(Cow<'_, TensorProto>, TensorSource)> {
    let mut v: Vec<(Cow<TensorProto>, TensorSource)> = g
        .initializer
        .iter()
        .map(|t| {
            let src = if t.is_external() {
                TensorSource::External
            } else {
                TensorSource::Initializer
            };
            (Cow::Borrowed(t), src)
        })
        .collect();
    for s in &g.sparse_initializer {
        if let Some(values) = &s.values {
            let mut t = values.clone();
            if let Some(n) = t.numel().and_then(|n| i64::try_from(n).ok()) {
                t.dims = vec![n];
            }
            v.push((Cow::Owned(t), TensorSource::SparseInitializer));
        }
    }
    for n in &g.node {
        if n.op_type == "Constant"
            && is_onnx_domain(&n.domain)
            && let Some(t) = n.constant_tensor()
        {
            v.push((Cow::Owned(t), TensorSource::ConstantNode));
        }
    }
    v
}

/// A stored tensor as counted, with its type for the per-type totals.
struct Counted {
    tensor: StoredTensor,
    dtype: DataType,
}

/// The checked count and bytes of one stored tensor.
fn count(t: &TensorProto, model: &Path) -> Result<(u64, u64), LoadError> {
    t.check(model)?;
    // `check` has verified both fit.
    let n = t.numel().unwrap_or(0);
    Ok((n, stored_bytes(t.dtype(), n).unwrap_or(0)))
}

/// Every stored tensor of the model once by name (each checked, duplicates included), and
/// every node of every graph.
fn collect<'a>(
    main: &'a GraphProto,
    model: &Path,
) -> Result<(Vec<Counted>, Vec<&'a NodeProto>), LoadError> {
    let mut tensors = Vec::new();
    let mut nodes = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut error: Option<LoadError> = None;
    for_each_graph(main, "main", &mut |g, path| {
        for s in &g.sparse_initializer {
            if crate::model::shape::numel(&s.dims).is_none() && error.is_none() {
                error = Some(LoadError::Tensor {
                    model: model.to_path_buf(),
                    tensor: s
                        .values
                        .as_ref()
                        .map(|v| v.name.clone())
                        .unwrap_or_default(),
                    problem: format!(
                        "is a sparse tensor of dims {:?}, which do not give a 64-bit element count",
                        s.dims
                    ),
                });
            }
        }
        for (t, source) in stored_tensors(g) {
            let (n, bytes) = match count(&t, model) {
                Ok(c) => c,
                Err(e) => {
                    error.get_or_insert(e);
                    continue;
                }
            };
            if !seen.insert(t.name.clone()) && !t.name.is_empty() {
                continue;
            }
            tensors.push(Counted {
                tensor: StoredTensor {
                    name: t.name.clone(),
                    elem_type: t.dtype().name().to_string(),
                    dims: t.dims.clone(),
                    count: n,
                    bytes,
                    source,
                    graph: path.to_string(),
                },
                dtype: t.dtype(),
            });
        }
        nodes.extend(g.node.iter());
    });
    match error {
        Some(e) => Err(e),
        None => Ok((tensors, nodes)),
    }
}

/// Sums of counts and bytes, checked.
fn sum<'a>(
    list: impl Iterator<Item = &'a StoredTensor>,
    model: &Path,
) -> Result<(u64, u64), LoadError> {
    let (mut n, mut b) = (0u64, 0u64);
    for t in list {
        match (n.checked_add(t.count), b.checked_add(t.bytes)) {
            (Some(a), Some(c)) => (n, b) = (a, c),
            _ => {
                return Err(LoadError::Tensor {
                    model: model.to_path_buf(),
                    tensor: t.name.clone(),
                    problem: "brings the parameter count past what a 64-bit count holds".into(),
                });
            }
        }
    }
    Ok((n, b))
}

/// Collects and classifies every stored tensor of the model.
pub fn summarise(
    main: &GraphProto,
    model_path: &Path,
) -> Result<(ParamSummary, ShapeTensors), LoadError> {
    let (tensors, nodes) = collect(main, model_path)?;
    let shape_like: HashSet<String> = shape_like_values(&nodes, &tensors)
        .into_iter()
        .map(str::to_string)
        .collect();
    let (shapes, params): (Vec<Counted>, Vec<Counted>) = tensors
        .into_iter()
        .partition(|t| shape_like.contains(&t.tensor.name));
    let mut by: BTreeMap<DataType, Vec<&StoredTensor>> = BTreeMap::new();
    for t in &params {
        by.entry(t.dtype).or_default().push(&t.tensor);
    }
    let mut by_type = Vec::with_capacity(by.len());
    for (dt, list) in by {
        let (count, bytes) = sum(list.iter().copied(), model_path)?;
        by_type.push(TypeTotal {
            elem_type: dt.name().to_string(),
            tensors: list.len() as u64,
            count,
            bytes,
        });
    }
    let params: Vec<StoredTensor> = params.into_iter().map(|t| t.tensor).collect();
    let shapes: Vec<StoredTensor> = shapes.into_iter().map(|t| t.tensor).collect();
    let (count, bytes) = sum(params.iter(), model_path)?;
    let (s_count, s_bytes) = sum(shapes.iter(), model_path)?;
    let summary = ParamSummary {
        count,
        bytes,
        mb: bytes as f64 / 1e6,
        tensors: params.len() as u64,
        by_type,
        external_tensors: params
            .iter()
            .filter(|t| t.source == TensorSource::External)
            .count() as u64,
        list: params,
    };
    let st = ShapeTensors {
        tensors: shapes.len() as u64,
        count: s_count,
        bytes: s_bytes,
        list: shapes,
    };
    Ok((summary, st))
}

/// Names of stored tensors that only feed shape-like inputs (directly or through shape
/// arithmetic): a value is shape-like when it has at least one use and every use is a
/// shape slot, or an arithmetic node whose outputs are all shape-like. The least fixpoint
/// is found with a worklist, backwards from the shape slots: each value and node is
/// visited a bounded number of times, so this is linear in the graph's size.
fn shape_like_values<'a>(nodes: &[&'a NodeProto], tensors: &'a [Counted]) -> HashSet<&'a str> {
    let mut uses: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    let mut producers: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut candidates: Vec<&str> = tensors
        .iter()
        .filter(|t| t.dtype.is_integer() || t.dtype == DataType::BOOL || t.dtype.is_float())
        .map(|t| t.tensor.name.as_str())
        .collect();
    // Outputs still to become shape-like, per arithmetic node.
    let mut waiting: Vec<usize> = vec![0; nodes.len()];
    for (ni, node) in nodes.iter().enumerate() {
        let mut used = false;
        for (i, inp) in node.input.iter().enumerate() {
            if !inp.is_empty() {
                uses.entry(inp.as_str()).or_default().push((ni, i));
                used = true;
            }
        }
        if used && is_shape_arith(&node.op_type) {
            for o in node.output.iter().filter(|o| !o.is_empty()) {
                candidates.push(o.as_str());
                producers.entry(o.as_str()).or_default().push(ni);
                waiting[ni] += 1;
            }
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    let float_tensor: HashSet<&str> = tensors
        .iter()
        .filter(|t| t.dtype.is_float())
        .map(|t| t.tensor.name.as_str())
        .collect();
    // Per candidate, the arithmetic uses it still waits on.
    let mut pending: HashMap<&str, usize> = HashMap::new();
    let mut queue: Vec<&str> = Vec::new();
    for &v in &candidates {
        let Some(us) = uses.get(v) else { continue };
        let is_float = float_tensor.contains(v);
        let mut wait = 0usize;
        let ok = us.iter().all(|&(ni, idx)| {
            let op = nodes[ni].op_type.as_str();
            if is_float {
                return is_float_shape_slot(op, idx);
            }
            if is_shape_slot(op, idx) {
                return true;
            }
            wait += 1;
            is_shape_arith(op)
        });
        if !ok {
            continue;
        }
        if wait == 0 {
            queue.push(v);
        } else {
            pending.insert(v, wait);
        }
    }
    let mut shape_like: HashSet<&str> = HashSet::new();
    while let Some(v) = queue.pop() {
        if !shape_like.insert(v) {
            continue;
        }
        for &ni in producers.get(v).map(|p| p.as_slice()).unwrap_or(&[]) {
            waiting[ni] = waiting[ni].saturating_sub(1);
            if waiting[ni] != 0 {
                continue;
            }
            // Every output of node `ni` is shape-like: its inputs' arithmetic uses there
            // are met (its shape slots were met from the start).
            let op = nodes[ni].op_type.as_str();
            for (idx, inp) in nodes[ni].input.iter().enumerate() {
                if inp.is_empty() || is_shape_slot(op, idx) {
                    continue;
                }
                if let Some(p) = pending.get_mut(inp.as_str())
                    && *p > 0
                {
                    *p -= 1;
                    if *p == 0 {
                        queue.push(inp.as_str());
                    }
                }
            }
        }
    }
    shape_like
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::{GraphBuilder, node, tensor_f32, tensor_i64};

    #[test]
    fn shape_tensors_through_arithmetic_and_repeated_uses() {
        // `s` feeds Reshape both as data and as the target; `k` reaches a Reshape target
        // only through Add and Concat; `w` is a weight.
        let g = GraphBuilder::new("g")
            .input("x", DataType::FLOAT, &[2, 2])
            .init(tensor_i64("s", &[2], &[2, 2]))
            .init(tensor_i64("k", &[1], &[1]))
            .init(tensor_i64("m1", &[1], &[-1]))
            .init(tensor_f32("w", &[4, 4], 1))
            .node(node("Reshape", &["s", "s"], &["r"], vec![]))
            .node(node("Add", &["k", "k"], &["k2"], vec![]))
            .node(node("Concat", &["k2", "m1"], &["t"], vec![]))
            .node(node("Reshape", &["x", "t"], &["y"], vec![]))
            .node(node("MatMul", &["y", "w"], &["z"], vec![]))
            .graph;
        let (p, s) = summarise(&g, Path::new("m.onnx")).unwrap();
        let names: Vec<&str> = s.list.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["k", "m1"]);
        assert_eq!(p.list.len(), 2); // s (also data) and w
    }
}
