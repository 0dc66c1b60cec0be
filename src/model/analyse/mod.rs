//! `inspect`'s analysis: reads the model, counts its parameters, resolves its shapes for
//! concrete input shapes and sums the per-node costs of the operator table, into the
//! [`Analysis`] that `acceval inspect --json` prints.
//!
//! `inputs` owns input shapes and `--input` overrides; `walk` the graph walk and its
//! bookkeeping; `control` the subgraph rules (`If`, `Loop`, `Scan`). This file assembles
//! the result. Every count is checked; a model whose counts do not fit 64 bits is an error
//! naming the tensor, value or node, never a wrapped number.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

mod control;
mod inputs;
mod walk;

pub use inputs::InputShape;
pub use walk::FOLD_BUDGET;

use self::walk::{Scope, Totals, Walker};
use super::onnx::{GraphProto, LoadError, OnnxFile, ValueInfoProto};
use super::ops::is_onnx_domain;
use super::params;
use super::shape::Shape;
use crate::report::schema::inspect::{
    Analysis, INSPECT_SCHEMA, Levels, ModelInfo, Opset, UnsupportedOp, ValueDesc,
};
use crate::standard::size_level;

/// Why `inspect` could not analyse a model.
#[derive(Debug, thiserror::Error)]
pub enum AnalyseError {
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A given input shape names no input of the model.
    #[error("input shape '{name}': the model has no input of that name; its inputs are: {known}")]
    UnknownInput { name: String, known: String },
    /// A given input shape contradicts the declared dims.
    #[error(
        "input shape '{name}:{given}' contradicts the model, which declares {name} as {declared}; give a shape that matches the declared dims"
    )]
    InputMismatch {
        name: String,
        given: String,
        declared: String,
    },
    /// The given input shapes lead to a contradiction inside the graph.
    #[error(
        "the input shapes contradict the model: {0}; check the input shapes (--shape, --input), or the model if they are its declared ones"
    )]
    Contradiction(String),
    /// An input declared with more elements than a 64-bit count holds.
    #[error(
        "input '{input}' declares {count} elements ({dims}), more than a 64-bit count holds; give its real shape"
    )]
    InputTooLarge {
        input: String,
        count: String,
        dims: String,
    },
    #[error("{0}")]
    TooLarge(String),
    /// A structural defect no engine can run (found when a run's shapes are given): a node
    /// input nothing produces, a required input left empty, a graph output nothing produces.
    #[error(
        "the model is malformed: {0}; fix the model (`onnx.checker.check_model` names the same defect)"
    )]
    Malformed(String),
}

/// The main graph's inputs, resolved.
struct Inputs<'m> {
    list: Vec<&'m ValueInfoProto>,
    resolved: Vec<Option<Shape>>,
    /// Inputs that still have dynamic dims, with what to pass.
    needs_shape: Vec<String>,
}

fn resolve_inputs<'m>(
    g: &'m GraphProto,
    overrides: &[InputShape],
    scope: &mut Scope<'_>,
) -> Result<Inputs<'m>, AnalyseError> {
    let list = inputs::real_inputs(g);
    inputs::check_overrides(&list, overrides)?;
    let mut resolved = Vec::with_capacity(list.len());
    let mut needs_shape = Vec::new();
    for i in &list {
        let r = inputs::resolve(i, overrides)?;
        needs_shape.extend(r.needs);
        resolved.push(r.fact.shape.clone());
        scope.vars.insert(i.name.clone(), r.fact);
    }
    Ok(Inputs {
        list,
        resolved,
        needs_shape,
    })
}

/// Declared value shapes of every graph (value_info and outputs), by name.
fn declared_values(g: &GraphProto) -> HashMap<&str, &ValueInfoProto> {
    let mut declared = HashMap::new();
    params::for_each_graph(g, "main", &mut |sg, _| {
        for v in sg.value_info.iter().chain(sg.output.iter()) {
            declared.insert(v.name.as_str(), v);
        }
    });
    declared
}

/// Nodes per operator type and the node count, subgraphs included.
fn histogram(g: &GraphProto) -> (BTreeMap<String, u64>, u64) {
    let mut hist: BTreeMap<String, u64> = BTreeMap::new();
    let mut count = 0u64;
    params::for_each_graph(g, "main", &mut |sg, _| {
        for n in &sg.node {
            count += 1;
            let key = if is_onnx_domain(&n.domain) {
                n.op_type.clone()
            } else {
                format!("{}::{}", n.domain, n.op_type)
            };
            *hist.entry(key).or_insert(0) += 1;
        }
    });
    (hist, count)
}

fn model_info(file: &OnnxFile, path: &Path, node_count: u64) -> ModelInfo {
    let g = file.graph();
    ModelInfo {
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
    }
}

/// The compute figures: MACs, FLOPs, GFLOPs and other ops, or why they are not available.
struct Compute {
    macs: Option<u64>,
    flops: Option<u64>,
    other: Option<u64>,
    unavailable: Option<String>,
}

fn compute(totals: Totals, needs_shape: &[String]) -> Result<Compute, AnalyseError> {
    if !needs_shape.is_empty() {
        return Ok(Compute {
            macs: None,
            flops: None,
            other: None,
            unavailable: Some(needs_shape.join("; ")),
        });
    }
    let flops = totals.macs.checked_mul(2).ok_or_else(|| {
        AnalyseError::TooLarge(format!(
            "the model needs {} MACs, and 2 × that (its FLOPs) is more than a 64-bit count holds",
            totals.macs
        ))
    })?;
    Ok(Compute {
        macs: Some(totals.macs),
        flops: Some(flops),
        other: Some(totals.other),
        unavailable: None,
    })
}

/// The walker's unsupported op types, with a note for each model-local function.
fn unsupported_ops(walker: &mut Walker) -> Vec<UnsupportedOp> {
    let unsupported = std::mem::take(&mut walker.unsupported);
    unsupported
        .into_iter()
        .map(|((domain, op_type), nodes)| {
            if walker
                .functions
                .contains(&(domain.clone(), op_type.clone()))
            {
                walker.notes.push(format!(
                    "'{op_type}' is a model-local function; acceval does not expand functions"
                ));
            }
            UnsupportedOp {
                op_type,
                domain,
                nodes,
            }
        })
        .collect()
}

fn new_walker<'m>(file: &'m OnnxFile, strict: bool, budget: &'m Cell<u64>) -> Walker<'m> {
    Walker {
        opset: file.default_opset(),
        declared: declared_values(file.graph()),
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
        strict,
        contradictions: 0,
        budget,
    }
}

/// Graph outputs as reported (a note for any that no node or input produces).
/// With `strict` (a run's shapes given) such an output is an error: there is nothing to run.
fn outputs(
    g: &GraphProto,
    scope: &Scope<'_>,
    notes: &mut Vec<String>,
    strict: bool,
) -> Result<Vec<ValueDesc>, AnalyseError> {
    g.output
        .iter()
        .map(|o| {
            let f = scope.get(&o.name);
            if f.is_none() {
                let what = format!(
                    "output '{}' is produced by no node, input or initializer of the graph",
                    o.name
                );
                if strict {
                    return Err(AnalyseError::Malformed(what));
                }
                notes.push(format!("{what}; its declared shape is reported"));
            }
            // A declared element type the graph does not produce: ONNX Runtime refuses the
            // model ("Type Error"), tract ignored the declaration and answered.
            let declared = inputs::declared_fact(o).dtype;
            if strict
                && let (Some(want), Some(got)) = (declared, f.and_then(|f| f.dtype))
                && want.0 != 0
                && want != got
            {
                return Err(AnalyseError::Malformed(format!(
                    "output '{}' is declared {} but the graph produces {} there",
                    o.name,
                    want.name(),
                    got.name()
                )));
            }
            Ok(inputs::describe(o, f.and_then(|f| f.shape.clone())))
        })
        .collect()
}

/// Analyses the model at `path` with the given input shapes. A contradiction inside the
/// graph is an error when shapes are given, else a note.
pub fn analyse(path: &Path, overrides: &[InputShape]) -> Result<Analysis, AnalyseError> {
    analyse_as(path, overrides, !overrides.is_empty())
}

/// Analyses the model at `path` as a run will use it: every contradiction and structural
/// defect is an error, also for a model without inputs (the admission check).
pub fn analyse_for_run(path: &Path, shapes: &[InputShape]) -> Result<Analysis, AnalyseError> {
    analyse_as(path, shapes, true)
}

fn analyse_as(
    path: &Path,
    overrides: &[InputShape],
    strict: bool,
) -> Result<Analysis, AnalyseError> {
    let file = OnnxFile::open(path)?;
    let g = file.graph();
    let (params, shape_tensors) = params::summarise(g, path)?;
    let mut scope = Scope::root();
    let inputs = resolve_inputs(g, overrides, &mut scope)?;
    let budget = Cell::new(FOLD_BUDGET);
    let mut walker = new_walker(&file, strict, &budget);
    let totals = walker.walk(g, &mut scope, "main", 1)?;
    if budget.get() == 0 {
        walker.notes.push(format!(
            "constant folding stopped after {FOLD_BUDGET} elements; shapes computed from larger constants are unresolved"
        ));
    }
    let (hist, node_count) = histogram(g);
    let unsupported = unsupported_ops(&mut walker);
    let compute = compute(totals, &inputs.needs_shape)?;
    // With dynamic inputs every downstream node is unresolved; say it once instead.
    let unresolved = if compute.unavailable.is_some() {
        Vec::new()
    } else {
        std::mem::take(&mut walker.unresolved)
    };
    let mut notes = std::mem::take(&mut walker.notes);
    let lower_bound = compute.macs.is_some() && (!unsupported.is_empty() || !unresolved.is_empty());
    if lower_bound {
        notes.push(format!(
            "MACs, FLOPs and other ops are lower bounds: {} unsupported op type(s), {} unresolved node(s)",
            unsupported.len(),
            unresolved.len()
        ));
    }
    let mut per_op = std::mem::take(&mut walker.per_node);
    per_op.sort_by(|a, b| b.macs.cmp(&a.macs).then(b.other_ops.cmp(&a.other_ops)));
    let outputs = outputs(g, &scope, &mut notes, walker.strict)?;
    let inputs_desc = (inputs.list.iter().zip(inputs.resolved))
        .map(|(i, r)| inputs::describe(i, r))
        .collect();
    let gflops = compute.flops.map(|f| f as f64 / 1e9);
    Ok(Analysis {
        schema: INSPECT_SCHEMA.to_string(),
        model: model_info(&file, path, node_count),
        inputs: inputs_desc,
        outputs,
        op_histogram: hist,
        levels: Levels {
            params: size_level(params.mb),
            flops: gflops.and_then(size_level),
        },
        params,
        shape_tensors,
        macs: compute.macs,
        flops: compute.flops,
        gflops,
        other_ops: compute.other,
        lower_bound,
        macs_unavailable: compute.unavailable,
        unsupported_ops: unsupported,
        unresolved_nodes: unresolved,
        notes,
        per_op,
    })
}
