//! Which stored tensors of a model are parameters, and how many bytes they occupy.
//!
//! Parameters are the initializers *and* the tensors of `Constant` nodes (many exporters
//! store all weights as Constant nodes), in the main graph and in every subgraph
//! (`If`/`Loop`/`Scan` bodies), each counted once by name even when shared. Bytes use the
//! stored element type (an INT8 tensor is a quarter of its FP32 parent; INT4 packs two per
//! byte). Integer tensors that only feed shape-like inputs (`Reshape`'s shape, `Slice`'s
//! starts/ends/axes/steps, `Pad`'s pads, `Resize`'s scales/sizes, ...), directly or through
//! shape arithmetic, are not parameters: they are listed separately as "shape tensors".

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::Serialize;

use super::onnx::{DataType, GraphProto, LoadError, NodeProto, TensorProto, stored_bytes};

/// One stored tensor.
#[derive(Debug, Clone, Serialize)]
pub struct StoredTensor {
    pub name: String,
    pub elem_type: &'static str,
    pub dims: Vec<i64>,
    pub count: u64,
    pub bytes: u64,
    /// `initializer`, `sparse_initializer`, `constant_node`, or `external` (initializer
    /// whose data is in an external file).
    pub source: &'static str,
    /// Where it is declared: `main` or the path of the subgraph (`node/then_branch`).
    pub graph: String,
    #[serde(skip)]
    dtype: DataType,
}

/// Parameter totals for one element type.
#[derive(Debug, Clone, Serialize)]
pub struct TypeTotal {
    pub elem_type: &'static str,
    pub tensors: u64,
    pub count: u64,
    pub bytes: u64,
}

/// Parameters and shape tensors of a model.
#[derive(Debug, Clone, Serialize)]
pub struct ParamSummary {
    /// Number of parameter elements.
    pub count: u64,
    /// Bytes the parameters occupy in their stored types.
    pub bytes: u64,
    /// `bytes` / 10^6 (the MB of Table 1).
    pub mb: f64,
    pub tensors: u64,
    pub by_type: Vec<TypeTotal>,
    /// How many of the parameter tensors keep their data in external files.
    pub external_tensors: u64,
    /// Every parameter tensor, in declaration order.
    pub list: Vec<StoredTensor>,
}

/// The shape-like integer tensors excluded from the parameters.
#[derive(Debug, Clone, Serialize)]
pub struct ShapeTensors {
    pub tensors: u64,
    pub count: u64,
    pub bytes: u64,
    pub list: Vec<StoredTensor>,
}

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

struct Use<'a> {
    node: &'a NodeProto,
    idx: usize,
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

fn tensor_of_constant(node: &NodeProto) -> Option<(TensorProto, &'static str)> {
    let name = node.output.first()?.clone();
    for a in &node.attribute {
        let t = match a.name.as_str() {
            "value" => a.t.clone(),
            "sparse_value" => a.sparse_tensor.as_ref().and_then(|s| {
                let mut v = s.values.clone()?;
                v.dims = vec![v.numel() as i64];
                Some(v)
            }),
            "value_float" => Some(TensorProto {
                data_type: 1,
                ..Default::default()
            }),
            "value_floats" => Some(TensorProto {
                data_type: 1,
                dims: vec![a.floats.len() as i64],
                ..Default::default()
            }),
            "value_int" => Some(TensorProto {
                data_type: 7,
                int64_data: vec![a.i],
                ..Default::default()
            }),
            "value_ints" => Some(TensorProto {
                data_type: 7,
                dims: vec![a.ints.len() as i64],
                int64_data: a.ints.clone(),
                ..Default::default()
            }),
            _ => None,
        };
        if let Some(mut t) = t {
            t.name = name;
            return Some((t, "constant_node"));
        }
    }
    None
}

/// The tensors of `Constant` nodes and initializers of one graph, with their source.
pub fn stored_tensors(g: &GraphProto) -> Vec<(TensorProto, &'static str)> {
    let mut v: Vec<(TensorProto, &'static str)> = g
        .initializer
        .iter()
        .map(|t| {
            let src = if t.is_external() {
                "external"
            } else {
                "initializer"
            };
            (t.clone(), src)
        })
        .collect();
    for s in &g.sparse_initializer {
        if let Some(values) = &s.values {
            let mut t = values.clone();
            t.dims = vec![t.numel() as i64];
            v.push((t, "sparse_initializer"));
        }
    }
    for n in &g.node {
        if n.op_type == "Constant"
            && (n.domain.is_empty() || n.domain == "ai.onnx")
            && let Some(t) = tensor_of_constant(n)
        {
            v.push(t);
        }
    }
    v
}

/// Collects and classifies every stored tensor of the model.
pub fn summarise(
    main: &GraphProto,
    model_path: &Path,
) -> Result<(ParamSummary, ShapeTensors), LoadError> {
    let mut tensors: Vec<StoredTensor> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut uses: HashMap<String, Vec<Use>> = HashMap::new();
    let mut error: Option<LoadError> = None;
    for_each_graph(main, "main", &mut |g, path| {
        for (t, source) in stored_tensors(g) {
            if !seen.insert(t.name.clone()) && !t.name.is_empty() {
                continue;
            }
            if let Err(e) = t.check_external(model_path) {
                error.get_or_insert(e);
            }
            let count = t.numel();
            tensors.push(StoredTensor {
                name: t.name.clone(),
                elem_type: t.dtype().name(),
                dims: t.dims.clone(),
                count,
                bytes: stored_bytes(t.dtype(), count).unwrap_or(0),
                source,
                graph: path.to_string(),
                dtype: t.dtype(),
            });
        }
        for node in &g.node {
            for (i, inp) in node.input.iter().enumerate() {
                if !inp.is_empty() {
                    uses.entry(inp.clone())
                        .or_default()
                        .push(Use { node, idx: i });
                }
            }
        }
    });
    if let Some(e) = error {
        return Err(e);
    }
    let shape_like = shape_like_values(&uses, &tensors);
    let mut params = Vec::new();
    let mut shapes = Vec::new();
    for t in tensors {
        if shape_like.contains(&t.name) {
            shapes.push(t);
        } else {
            params.push(t);
        }
    }
    let mut by: BTreeMap<DataType, TypeTotal> = BTreeMap::new();
    for t in &params {
        let e = by.entry(t.dtype).or_insert(TypeTotal {
            elem_type: t.elem_type,
            tensors: 0,
            count: 0,
            bytes: 0,
        });
        e.tensors += 1;
        e.count += t.count;
        e.bytes += t.bytes;
    }
    let count = params.iter().map(|t| t.count).sum();
    let bytes: u64 = params.iter().map(|t| t.bytes).sum();
    let summary = ParamSummary {
        count,
        bytes,
        mb: bytes as f64 / 1e6,
        tensors: params.len() as u64,
        by_type: by.into_values().collect(),
        external_tensors: params.iter().filter(|t| t.source == "external").count() as u64,
        list: params,
    };
    let st = ShapeTensors {
        tensors: shapes.len() as u64,
        count: shapes.iter().map(|t| t.count).sum(),
        bytes: shapes.iter().map(|t| t.bytes).sum(),
        list: shapes,
    };
    Ok((summary, st))
}

/// Names of stored tensors that only feed shape-like inputs (directly or through shape
/// arithmetic). Computed as a fixpoint over values: a value is shape-like when it has at
/// least one use and every use is a shape slot, or an arithmetic node whose outputs are
/// all shape-like.
fn shape_like_values(
    uses: &HashMap<String, Vec<Use>>,
    tensors: &[StoredTensor],
) -> HashSet<String> {
    let mut shape_like: HashSet<String> = HashSet::new();
    // Values produced by shape arithmetic are candidates too (they carry the property
    // back to the stored tensors feeding them).
    let mut candidates: Vec<String> = tensors
        .iter()
        .filter(|t| t.dtype.is_integer() || t.dtype == DataType::BOOL || t.dtype.is_float())
        .map(|t| t.name.clone())
        .collect();
    for us in uses.values() {
        for u in us {
            if is_shape_arith(&u.node.op_type) {
                candidates.extend(u.node.output.iter().cloned());
            }
        }
    }
    candidates.sort();
    candidates.dedup();
    let float_tensor: HashSet<&str> = tensors
        .iter()
        .filter(|t| t.dtype.is_float())
        .map(|t| t.name.as_str())
        .collect();
    loop {
        let mut changed = false;
        for v in &candidates {
            if shape_like.contains(v) {
                continue;
            }
            let Some(us) = uses.get(v) else { continue };
            let is_float = float_tensor.contains(v.as_str());
            let ok = us.iter().all(|u| {
                let op = u.node.op_type.as_str();
                if is_float {
                    // Float tensors only count as shape data in scale/threshold slots.
                    return matches!((op, u.idx), ("Resize", 1 | 2) | ("Upsample", 1))
                        || (op == "NonMaxSuppression" && u.idx >= 3);
                }
                is_shape_slot(op, u.idx)
                    || (is_shape_arith(op)
                        && u.node
                            .output
                            .iter()
                            .all(|o| o.is_empty() || shape_like.contains(o)))
            });
            if ok {
                shape_like.insert(v.clone());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    shape_like
}
