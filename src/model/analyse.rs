//! `inspect`'s analysis: walks the graph (and its subgraphs) once, resolving shapes for
//! concrete input shapes and summing the per-node costs of `cost`.
//!
//! Owns: the `Analysis` struct (the JSON of `acceval inspect --json`, field names stable
//! and documented in the README), input-shape overrides and their validation, subgraph
//! rules (`If`: the larger branch; `Loop`/`Scan`: body × static trip count), the
//! unsupported/unresolved bookkeeping that marks totals as lower bounds.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use super::cost::{self, Cost, NoCost};
use super::onnx::{DataType, GraphProto, LoadError, NodeProto, OnnxFile, ValueInfoProto};
use super::params::{self, ParamSummary, ShapeTensors};
use super::shape::{self, Contradiction, Dim, Fact, NodeIn, Shape};
use crate::standard::{Level, size_level};

/// A concrete shape given on the command line for one input (`--input name:1x3x224x224`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputShape {
    pub name: String,
    pub dims: Vec<i64>,
}

impl std::str::FromStr for InputShape {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, spec) = s.rsplit_once(':').ok_or_else(|| {
            format!("'{s}' is not NAME:SHAPE; write e.g. --input images:1x3x640x640")
        })?;
        if name.is_empty() {
            return Err(format!("'{s}' has no input name before ':'"));
        }
        let dims: Result<Vec<i64>, _> = if spec.is_empty() {
            Ok(vec![])
        } else {
            spec.split(['x', ','])
                .map(|d| d.trim().parse::<i64>())
                .collect()
        };
        let dims = dims.map_err(|_| {
            format!("shape '{spec}' of '{name}' must be positive integers joined by 'x', e.g. 1x3x640x640")
        })?;
        if dims.iter().any(|&d| d <= 0) {
            return Err(format!("shape of '{name}' has a dimension <= 0: {dims:?}"));
        }
        Ok(InputShape {
            name: name.to_string(),
            dims,
        })
    }
}

/// Why `inspect` could not analyse a model.
#[derive(Debug, thiserror::Error)]
pub enum AnalyseError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("--input '{name}': the model has no input of that name; its inputs are: {known}")]
    UnknownInput { name: String, known: String },
    #[error(
        "--input '{name}:{given}' contradicts the model, which declares {name} as {declared}; pass a shape that matches the declared dims"
    )]
    InputMismatch {
        name: String,
        given: String,
        declared: String,
    },
    #[error("the input shapes contradict the model: {0}; check the --input shapes")]
    Contradiction(String),
}

/// One graph input or output.
#[derive(Debug, Clone, Serialize)]
pub struct ValueDesc {
    pub name: String,
    /// `tensor`, `sequence`, `map`, `optional`, `sparse_tensor` or `unknown`.
    pub kind: &'static str,
    pub elem_type: &'static str,
    /// Declared shape: numbers, or strings for symbolic dims (`?` for unnamed ones).
    pub shape: Option<Shape>,
    /// Shape used for the analysis (after `--input`, and inferred for outputs).
    pub resolved_shape: Option<Shape>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Opset {
    pub domain: String,
    pub version: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub path: String,
    pub file_bytes: u64,
    pub ir_version: i64,
    pub opsets: Vec<Opset>,
    pub producer_name: String,
    pub producer_version: String,
    pub graph_name: String,
    /// Nodes in all graphs, subgraphs included.
    pub node_count: u64,
    /// Nodes in the main graph only.
    pub main_graph_node_count: u64,
}

/// The cost of one node, as counted (× `multiplier` for loop bodies).
#[derive(Debug, Clone, Serialize)]
pub struct NodeCost {
    pub node: String,
    pub op_type: String,
    /// `main`, or the subgraph path (`loop_node/body`).
    pub graph: String,
    pub macs: u64,
    pub flops: u64,
    pub other_ops: u64,
    /// Times the node runs per inference (loop trip count; 1 outside loops).
    pub multiplier: u64,
    pub input_shapes: Vec<String>,
    pub output_shapes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UnsupportedOp {
    pub op_type: String,
    pub domain: String,
    pub nodes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct UnresolvedNode {
    pub node: String,
    pub op_type: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Levels {
    /// Table 1 level from `params.mb`; null when the model has no parameters.
    pub params: Option<Level>,
    /// Table 2 level from `gflops`; null when FLOPs are not available.
    pub flops: Option<Level>,
}

/// Everything `acceval inspect` reports (`--json` prints this struct).
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// Schema identifier of this JSON; bumped on any incompatible change.
    pub schema: &'static str,
    pub model: ModelInfo,
    pub inputs: Vec<ValueDesc>,
    pub outputs: Vec<ValueDesc>,
    /// Nodes per operator (all graphs); non-default domains as `domain::Op`.
    pub op_histogram: BTreeMap<String, u64>,
    pub params: ParamSummary,
    pub shape_tensors: ShapeTensors,
    /// Multiply-accumulates of one inference at the resolved input shapes; null when
    /// inputs have dynamic dims that were not given (`macs_unavailable` says which).
    pub macs: Option<u64>,
    /// 2 × `macs`.
    pub flops: Option<u64>,
    /// `flops` / 10^9 (the G of Table 2).
    pub gflops: Option<f64>,
    /// Arithmetic outside MACs (bias, normalisation, activations, pooling, ...), by the
    /// per-operator rules in the README.
    pub other_ops: Option<u64>,
    /// True when some nodes could not be counted (see `unsupported_ops`,
    /// `unresolved_nodes`): the totals are then lower bounds.
    pub lower_bound: bool,
    pub macs_unavailable: Option<String>,
    pub unsupported_ops: Vec<UnsupportedOp>,
    pub unresolved_nodes: Vec<UnresolvedNode>,
    pub notes: Vec<String>,
    pub levels: Levels,
    /// Every counted node, largest MACs first (the table shows the top N with --per-op).
    pub per_op: Vec<NodeCost>,
}

/// Variables visible in a graph: its own, then its parents' (subgraphs see outer values).
struct Scope<'p> {
    vars: HashMap<String, Fact>,
    parent: Option<&'p Scope<'p>>,
}

impl Scope<'_> {
    fn get(&self, name: &str) -> Option<&Fact> {
        self.vars
            .get(name)
            .or_else(|| self.parent.and_then(|p| p.get(name)))
    }
}

/// Summed cost of a graph walk.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    macs: u64,
    other: u64,
}

struct Walker<'m> {
    opset: i64,
    /// Declared shapes (value_info and outputs), the fallback for unsupported ops.
    declared: HashMap<&'m str, &'m ValueInfoProto>,
    per_node: Vec<NodeCost>,
    unsupported: BTreeMap<(String, String), u64>,
    unresolved: Vec<UnresolvedNode>,
    notes: Vec<String>,
    /// Model-local function names (nodes calling them are not expanded).
    functions: Vec<(String, String)>,
    /// Whether a contradiction is the user's (an --input was given) or acceval's to note.
    strict: bool,
}

fn declared_fact(v: &ValueInfoProto) -> Fact {
    match v.tensor_type() {
        Some(t) => Fact {
            dtype: Some(DataType(t.elem_type)),
            shape: t.shape.as_ref().map(|s| {
                s.dim
                    .iter()
                    .enumerate()
                    .map(|(i, d)| match (&d.dim_value, &d.dim_param) {
                        (Some(v), _) => Dim::Known(*v),
                        (None, Some(p)) if !p.is_empty() => Dim::Sym(p.clone()),
                        _ => Dim::Sym(format!("{}:{i}", v.name)),
                    })
                    .collect()
            }),
            value: None,
        },
        None => Fact::unknown(),
    }
}

fn shapes_of<'a>(facts: impl Iterator<Item = Option<&'a Fact>>) -> Vec<String> {
    facts
        .map(|f| match f.and_then(|f| f.shape.as_ref()) {
            Some(s) => shape::shape_str(s),
            None => "?".into(),
        })
        .collect()
}

impl<'m> Walker<'m> {
    fn walk(
        &mut self,
        g: &'m GraphProto,
        scope: &mut Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Result<Totals, Contradiction> {
        for t in &g.initializer {
            scope.vars.insert(t.name.clone(), Fact::of_tensor(t));
        }
        for s in &g.sparse_initializer {
            if let Some(v) = &s.values {
                let f = Fact::new(Some(v.dtype()), shape::known_shape(&s.dims));
                scope.vars.insert(v.name.clone(), f);
            }
        }
        let mut totals = Totals::default();
        for (i, node) in g.node.iter().enumerate() {
            let label = node.label(i);
            let (outs, cost) = self.node(node, &label, scope, path, multiplier)?;
            totals.macs += cost.macs;
            totals.other += cost.other;
            for (name, f) in node.output.iter().zip(outs) {
                if !name.is_empty() {
                    scope.vars.insert(name.clone(), f);
                }
            }
        }
        Ok(totals)
    }

    /// Resolves one node's outputs and cost (including any subgraph it holds).
    fn node(
        &mut self,
        node: &'m NodeProto,
        label: &str,
        scope: &mut Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Result<(Vec<Fact>, Totals), Contradiction> {
        let ins: Vec<Option<Fact>> = node
            .input
            .iter()
            .map(|n| {
                if n.is_empty() {
                    None
                } else {
                    scope.get(n).cloned()
                }
            })
            .collect();
        let in_refs: Vec<Option<&Fact>> = ins.iter().map(|f| f.as_ref()).collect();
        match node.op_type.as_str() {
            "If" | "Loop" | "Scan" if node.domain.is_empty() || node.domain == "ai.onnx" => {
                return self.control_flow(node, label, &ins, scope, path, multiplier);
            }
            "Constant" if node.domain.is_empty() || node.domain == "ai.onnx" => {
                let f = params::stored_tensors(&GraphProto {
                    node: vec![node.clone()],
                    ..Default::default()
                })
                .first()
                .map(|(t, _)| Fact::of_tensor(t))
                .unwrap_or_default();
                return Ok((vec![f], Totals::default()));
            }
            _ => {}
        }
        let is_function = self
            .functions
            .iter()
            .any(|(d, n)| *d == node.domain && *n == node.op_type);
        let nin = NodeIn {
            node,
            label,
            inputs: in_refs.clone(),
            opset: self.opset,
        };
        let inferred = if is_function {
            None
        } else {
            match shape::infer(&nin) {
                Ok(v) => v,
                Err(e) if self.strict => return Err(e),
                Err(e) => {
                    self.notes.push(format!(
                        "shape inference stopped at node '{label}' ({}): {e}; nodes depending on it are unresolved",
                        node.op_type
                    ));
                    Some(vec![Fact::unknown(); node.output.len()])
                }
            }
        };
        let has_shape_rule = inferred.is_some();
        let mut outs = match inferred {
            Some(o) => o,
            None => {
                let key = (node.domain.clone(), node.op_type.clone());
                *self.unsupported.entry(key).or_insert(0) += 1;
                vec![Fact::unknown(); node.output.len()]
            }
        };
        outs.resize(node.output.len(), Fact::unknown());
        // Fall back on the model's declared value_info for what we could not infer.
        for (o, name) in outs.iter_mut().zip(&node.output) {
            if o.shape.is_none()
                && let Some(v) = self.declared.get(name.as_str())
            {
                let d = declared_fact(v);
                o.shape = d.shape;
                o.dtype = o.dtype.or(d.dtype);
            }
        }
        if is_function {
            return Ok((outs, Totals::default()));
        }
        let mut totals = Totals::default();
        match cost::cost(node, &in_refs, &outs) {
            Ok(Cost { macs, other_ops }) => {
                totals = Totals {
                    macs: macs * multiplier,
                    other: other_ops * multiplier,
                };
                self.per_node.push(NodeCost {
                    node: label.to_string(),
                    op_type: node.op_type.clone(),
                    graph: path.to_string(),
                    macs: totals.macs,
                    flops: 2 * totals.macs,
                    other_ops: totals.other,
                    multiplier,
                    input_shapes: shapes_of(in_refs.iter().copied()),
                    output_shapes: shapes_of(outs.iter().map(Some)),
                });
            }
            Err(NoCost::Unsupported) => {
                if has_shape_rule {
                    // A shape rule but no cost rule (e.g. an Einsum chain of 3+ operands).
                    let key = (node.domain.clone(), node.op_type.clone());
                    *self.unsupported.entry(key).or_insert(0) += 1;
                }
            }
            Err(NoCost::Unresolved(reason)) => self.unresolved.push(UnresolvedNode {
                node: label.to_string(),
                op_type: node.op_type.clone(),
                reason: format!(
                    "{reason}: inputs {}",
                    shapes_of(in_refs.iter().copied()).join(", ")
                ),
            }),
        }
        Ok((outs, totals))
    }

    fn control_flow(
        &mut self,
        node: &'m NodeProto,
        label: &str,
        ins: &[Option<Fact>],
        scope: &mut Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Result<(Vec<Fact>, Totals), Contradiction> {
        let op = node.op_type.as_str();
        let sub_path = |attr: &str| {
            if path == "main" {
                format!("{label}/{attr}")
            } else {
                format!("{path}/{label}/{attr}")
            }
        };
        let graph_of = |attr: &str| node.attr(attr).and_then(|a| a.g.as_ref());
        let n_out = node.output.len();
        match op {
            "If" => {
                let mut best: Option<(Totals, Vec<Fact>, Vec<NodeCost>, &str)> = None;
                let mut branch_out: Vec<Vec<Fact>> = Vec::new();
                let mut sums = Vec::new();
                for attr in ["then_branch", "else_branch"] {
                    let Some(g) = graph_of(attr) else { continue };
                    let mark = self.per_node.len();
                    let mut child = Scope {
                        vars: HashMap::new(),
                        parent: Some(&*scope),
                    };
                    let t = self.walk(g, &mut child, &sub_path(attr), multiplier)?;
                    let nodes = self.per_node.split_off(mark);
                    let outs: Vec<Fact> = g
                        .output
                        .iter()
                        .map(|o| {
                            child
                                .get(&o.name)
                                .cloned()
                                .unwrap_or_else(|| declared_fact(o))
                        })
                        .collect();
                    branch_out.push(outs.clone());
                    sums.push((attr, t.macs));
                    if best.as_ref().is_none_or(|b| {
                        t.macs > b.0.macs || (t.macs == b.0.macs && t.other > b.0.other)
                    }) {
                        best = Some((t, outs, nodes, attr));
                    }
                }
                let Some((t, outs, nodes, which)) = best else {
                    return Ok((vec![Fact::unknown(); n_out], Totals::default()));
                };
                self.per_node.extend(nodes);
                self.notes.push(format!(
                    "If node '{label}': counted the larger branch, {which} ({})",
                    sums.iter()
                        .map(|(a, m)| format!("{a}: {m} MACs"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                // Where the branches disagree on a dim, the output dim is symbolic.
                let mut merged = outs;
                for other in &branch_out {
                    for (k, (m, o)) in merged.iter_mut().zip(other).enumerate() {
                        if let (Some(ms), Some(os)) = (&mut m.shape, &o.shape) {
                            if ms.len() != os.len() {
                                m.shape = None;
                                continue;
                            }
                            for (j, (a, b)) in ms.iter_mut().zip(os).enumerate() {
                                if a != b {
                                    *a = Dim::Sym(format!("{label}:{k}:{j}"));
                                }
                            }
                        }
                        m.value = None;
                    }
                }
                merged.resize(n_out, Fact::unknown());
                Ok((merged, t))
            }
            "Loop" => {
                let Some(body) = graph_of("body") else {
                    return Ok((vec![Fact::unknown(); n_out], Totals::default()));
                };
                let trip = ins
                    .first()
                    .and_then(|f| f.as_ref())
                    .and_then(|f| f.value.as_ref())
                    .map(|v| v.ints())
                    .and_then(|v| v.first().copied())
                    .filter(|&v| v >= 0);
                let mut child = Scope {
                    vars: HashMap::new(),
                    parent: Some(&*scope),
                };
                // Body inputs: iteration number, condition, loop-carried values.
                for (k, bi) in body.input.iter().enumerate() {
                    let f = match k {
                        0 => Fact::new(Some(DataType::INT64), vec![]),
                        1 => Fact::new(Some(DataType::BOOL), vec![]),
                        _ => ins
                            .get(k)
                            .cloned()
                            .flatten()
                            .map(|mut f| {
                                f.value = None;
                                f
                            })
                            .unwrap_or_else(|| declared_fact(bi)),
                    };
                    child.vars.insert(bi.name.clone(), f);
                }
                let mult = trip.map(|t| t as u64).unwrap_or(1);
                let t = self.walk(body, &mut child, &sub_path("body"), multiplier * mult)?;
                match trip {
                    Some(n) => self.notes.push(format!(
                        "Loop node '{label}': body counted {n} times (static trip count)"
                    )),
                    None => self.notes.push(format!(
                        "Loop node '{label}': trip count is not static; its body is counted once (per iteration)"
                    )),
                }
                let n_carried = body.input.len().saturating_sub(2);
                let mut outs = Vec::with_capacity(n_out);
                for (k, bo) in body.output.iter().enumerate().skip(1) {
                    let mut f = child
                        .get(&bo.name)
                        .cloned()
                        .unwrap_or_else(|| declared_fact(bo));
                    f.value = None;
                    if k > n_carried {
                        // Scan output: stacked over iterations.
                        if let Some(s) = &mut f.shape {
                            s.insert(
                                0,
                                trip.map(Dim::Known)
                                    .unwrap_or_else(|| Dim::Sym(format!("{label}:trip"))),
                            );
                        }
                    }
                    outs.push(f);
                }
                outs.resize(n_out, Fact::unknown());
                Ok((outs, t))
            }
            _ => {
                // Scan (opset >= 9): N state variables then M scan inputs.
                let Some(body) = graph_of("body") else {
                    return Ok((vec![Fact::unknown(); n_out], Totals::default()));
                };
                let m = node.attr_i("num_scan_inputs").unwrap_or(0).max(0) as usize;
                let n_state = body.input.len().saturating_sub(m);
                let axes = node.attr_ints("scan_input_axes").map(|a| a.to_vec());
                let mut trip: Option<i64> = None;
                let mut child = Scope {
                    vars: HashMap::new(),
                    parent: Some(&*scope),
                };
                for (k, bi) in body.input.iter().enumerate() {
                    let mut f = ins
                        .get(k)
                        .cloned()
                        .flatten()
                        .unwrap_or_else(|| declared_fact(bi));
                    f.value = None;
                    if k >= n_state
                        && let Some(s) = &mut f.shape
                    {
                        let ax = axes
                            .as_ref()
                            .and_then(|a| a.get(k - n_state).copied())
                            .unwrap_or(0);
                        let ax = if ax < 0 { ax + s.len() as i64 } else { ax } as usize;
                        if ax < s.len() {
                            if let Dim::Known(v) = s[ax] {
                                trip = Some(v);
                            }
                            s.remove(ax);
                        }
                    }
                    child.vars.insert(bi.name.clone(), f);
                }
                let mult = trip.map(|t| t as u64).unwrap_or(1);
                let t = self.walk(body, &mut child, &sub_path("body"), multiplier * mult)?;
                match trip {
                    Some(n) => self.notes.push(format!(
                        "Scan node '{label}': body counted {n} times (scan length)"
                    )),
                    None => self.notes.push(format!(
                        "Scan node '{label}': scan length is not static; its body is counted once"
                    )),
                }
                let mut outs = Vec::with_capacity(n_out);
                for (k, bo) in body.output.iter().enumerate() {
                    let mut f = child
                        .get(&bo.name)
                        .cloned()
                        .unwrap_or_else(|| declared_fact(bo));
                    f.value = None;
                    if k >= n_state
                        && let Some(s) = &mut f.shape
                    {
                        s.insert(
                            0,
                            trip.map(Dim::Known)
                                .unwrap_or_else(|| Dim::Sym(format!("{label}:scan"))),
                        );
                    }
                    outs.push(f);
                }
                outs.resize(n_out, Fact::unknown());
                Ok((outs, t))
            }
        }
    }
}

fn describe(v: &ValueInfoProto, resolved: Option<Shape>) -> ValueDesc {
    let f = declared_fact(v);
    ValueDesc {
        name: v.name.clone(),
        kind: v.kind(),
        elem_type: f.dtype.map(|t| t.name()).unwrap_or("UNDEFINED"),
        shape: f.shape,
        resolved_shape: resolved,
    }
}

/// Analyses the model at `path` with the given input shapes.
pub fn analyse(path: &Path, overrides: &[InputShape]) -> Result<Analysis, AnalyseError> {
    let file = OnnxFile::open(path)?;
    let g = file.graph();
    let (params, shape_tensors) = params::summarise(g, path)?;

    // Real inputs: graph inputs that are not initializers (IR < 4 lists both).
    let init_names: std::collections::HashSet<&str> =
        g.initializer.iter().map(|t| t.name.as_str()).collect();
    let real_inputs: Vec<&ValueInfoProto> = g
        .input
        .iter()
        .filter(|i| !init_names.contains(i.name.as_str()))
        .collect();
    for o in overrides {
        if !real_inputs.iter().any(|i| i.name == o.name) {
            return Err(AnalyseError::UnknownInput {
                name: o.name.clone(),
                known: real_inputs
                    .iter()
                    .map(|i| {
                        let f = declared_fact(i);
                        format!(
                            "{} ({})",
                            i.name,
                            f.shape.map(|s| shape::shape_str(&s)).unwrap_or("?".into())
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }

    let mut scope = Scope {
        vars: HashMap::new(),
        parent: None,
    };
    let mut needs_shape: Vec<String> = Vec::new();
    let mut resolved_inputs = Vec::new();
    for i in &real_inputs {
        let mut f = declared_fact(i);
        if let Some(o) = overrides.iter().find(|o| o.name == i.name) {
            let given = o
                .dims
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("x");
            if let Some(decl) = &f.shape {
                let ok = decl.len() == o.dims.len()
                    && decl
                        .iter()
                        .zip(&o.dims)
                        .all(|(d, &v)| d.known().is_none_or(|k| k == v));
                if !ok {
                    return Err(AnalyseError::InputMismatch {
                        name: o.name.clone(),
                        given,
                        declared: shape::shape_str(decl),
                    });
                }
            }
            f.shape = Some(shape::known_shape(&o.dims));
        } else if f.tensor_shape_unknown() {
            // Known dims are kept; each unknown one becomes a <placeholder> to fill in.
            let hint = match &f.shape {
                Some(s) => s
                    .iter()
                    .map(|d| match d {
                        Dim::Known(v) => v.to_string(),
                        Dim::Sym(name) => format!("<{name}>"),
                    })
                    .collect::<Vec<_>>()
                    .join("x"),
                None => "<dims, e.g. 1x3x224x224>".into(),
            };
            let what = match &f.shape {
                Some(s) => format!("dynamic dims {}", shape::shape_str(s)),
                None => "no declared shape".into(),
            };
            needs_shape.push(format!(
                "input '{}' has {what}: pass --input {}:{hint} with numbers",
                i.name, i.name
            ));
        }
        resolved_inputs.push(f.shape.clone());
        scope.vars.insert(i.name.clone(), f);
    }

    let mut declared: HashMap<&str, &ValueInfoProto> = HashMap::new();
    params::for_each_graph(g, "main", &mut |sg, _| {
        for v in sg.value_info.iter().chain(sg.output.iter()) {
            declared.insert(v.name.as_str(), v);
        }
    });
    let mut walker = Walker {
        opset: file.default_opset(),
        declared,
        per_node: Vec::new(),
        unsupported: BTreeMap::new(),
        unresolved: Vec::new(),
        notes: Vec::new(),
        functions: file
            .proto
            .functions
            .iter()
            .map(|f| (f.domain.clone(), f.name.clone()))
            .collect(),
        strict: !overrides.is_empty(),
    };
    let totals = walker
        .walk(g, &mut scope, "main", 1)
        .map_err(|e| AnalyseError::Contradiction(e.0))?;

    let mut hist: BTreeMap<String, u64> = BTreeMap::new();
    let mut node_count = 0u64;
    params::for_each_graph(g, "main", &mut |sg, _| {
        for n in &sg.node {
            node_count += 1;
            let key = if n.domain.is_empty() || n.domain == "ai.onnx" {
                n.op_type.clone()
            } else {
                format!("{}::{}", n.domain, n.op_type)
            };
            *hist.entry(key).or_insert(0) += 1;
        }
    });

    let mut notes = walker.notes;
    let unsupported: Vec<UnsupportedOp> = walker
        .unsupported
        .into_iter()
        .map(|((domain, op_type), nodes)| {
            let local = walker_fn_note(&file, &domain, &op_type);
            if let Some(n) = local {
                notes.push(n);
            }
            UnsupportedOp {
                op_type,
                domain,
                nodes,
            }
        })
        .collect();
    let (macs, flops, other, unavailable) = if needs_shape.is_empty() {
        (
            Some(totals.macs),
            Some(2 * totals.macs),
            Some(totals.other),
            None,
        )
    } else {
        (None, None, None, Some(needs_shape.join("; ")))
    };
    // With dynamic inputs every downstream node is unresolved; say it once instead.
    let unresolved = if unavailable.is_some() {
        Vec::new()
    } else {
        walker.unresolved
    };
    let lower_bound = macs.is_some() && (!unsupported.is_empty() || !unresolved.is_empty());
    if lower_bound {
        notes.push(format!(
            "MACs, FLOPs and other ops are lower bounds: {} unsupported op type(s), {} unresolved node(s)",
            unsupported.len(),
            unresolved.len()
        ));
    }
    let mut per_op = walker.per_node;
    per_op.sort_by(|a, b| b.macs.cmp(&a.macs).then(b.other_ops.cmp(&a.other_ops)));

    let outputs = g
        .output
        .iter()
        .map(|o| {
            let r = scope.get(&o.name).and_then(|f| f.shape.clone());
            describe(o, r)
        })
        .collect();
    let inputs = real_inputs
        .iter()
        .zip(resolved_inputs)
        .map(|(i, r)| describe(i, r))
        .collect();
    let gflops = flops.map(|f| f as f64 / 1e9);
    Ok(Analysis {
        schema: "acceval.inspect/1",
        model: ModelInfo {
            path: path.display().to_string(),
            file_bytes: file.file_bytes,
            ir_version: file.proto.ir_version,
            opsets: file
                .proto
                .opset_import
                .iter()
                .map(|o| Opset {
                    domain: if o.domain.is_empty() {
                        "ai.onnx".into()
                    } else {
                        o.domain.clone()
                    },
                    version: o.version,
                })
                .collect(),
            producer_name: file.proto.producer_name.clone(),
            producer_version: file.proto.producer_version.clone(),
            graph_name: g.name.clone(),
            node_count,
            main_graph_node_count: g.node.len() as u64,
        },
        inputs,
        outputs,
        op_histogram: hist,
        levels: Levels {
            params: size_level(params.mb),
            flops: gflops.and_then(size_level),
        },
        params,
        shape_tensors,
        macs,
        flops,
        gflops,
        other_ops: other,
        lower_bound,
        macs_unavailable: unavailable,
        unsupported_ops: unsupported,
        unresolved_nodes: unresolved,
        notes,
        per_op,
    })
}

fn walker_fn_note(file: &OnnxFile, domain: &str, op: &str) -> Option<String> {
    file.proto
        .functions
        .iter()
        .any(|f| f.domain == domain && f.name == op)
        .then(|| format!("'{op}' is a model-local function; acceval does not expand functions"))
}

impl Fact {
    /// True when a graph input's shape is unknown or has a symbolic dim.
    fn tensor_shape_unknown(&self) -> bool {
        match &self.shape {
            None => true,
            Some(s) => s.iter().any(|d| d.known().is_none()),
        }
    }
}
