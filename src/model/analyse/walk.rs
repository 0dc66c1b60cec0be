//! The graph walk: one pass over the nodes in order, resolving each node's outputs with its
//! operator's rule and summing its cost. Each node reads its inputs by reference from the
//! scope (no copies), so the walk is linear in the node count; constant values are shared
//! (`Rc`) and folding has one budget for the whole model.
//!
//! Owns: scopes (a subgraph sees its parents' values), the unsupported/unresolved
//! bookkeeping, the fallback on declared `value_info` shapes, the checks every stored fact
//! passes (no negative dim, an element count that fits 64 bits), and checked totals.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};

use super::AnalyseError;
use super::inputs::{approx_count, declared_fact};
use crate::model::onnx::{GraphProto, NodeProto, ValueInfoProto};
use crate::model::ops::{self, Cost, NoCost, NodeIn};
use crate::model::shape::{Fact, ShapeError, known_shape, numel, shape_str};
use crate::report::schema::inspect::{NodeCost, UnresolvedNode};

/// Elements constant folding may create in one analysis (shape arithmetic needs a few
/// hundred; a hostile chain of large constants stops here instead of running for minutes).
pub const FOLD_BUDGET: u64 = 1 << 20;

/// Variables visible in a graph: its own, then its parents' (subgraphs see outer values).
pub(super) struct Scope<'p> {
    pub vars: HashMap<String, Fact>,
    pub parent: Option<&'p Scope<'p>>,
}

impl<'p> Scope<'p> {
    pub fn root() -> Scope<'static> {
        Scope {
            vars: HashMap::new(),
            parent: None,
        }
    }
    pub fn child(parent: &'p Scope<'p>) -> Scope<'p> {
        Scope {
            vars: HashMap::new(),
            parent: Some(parent),
        }
    }
    pub fn get(&self, name: &str) -> Option<&Fact> {
        self.vars
            .get(name)
            .or_else(|| self.parent.and_then(|p| p.get(name)))
    }
}

/// Summed cost of a graph walk.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Totals {
    pub macs: u64,
    pub other: u64,
}

impl Totals {
    pub fn add(&mut self, t: Totals, what: &str) -> Result<(), AnalyseError> {
        match (
            self.macs.checked_add(t.macs),
            self.other.checked_add(t.other),
        ) {
            (Some(m), Some(o)) => {
                *self = Totals { macs: m, other: o };
                Ok(())
            }
            _ => Err(AnalyseError::TooLarge(format!(
                "the MACs of {what} add up to more than a 64-bit count holds (1.8e19); the model's dims are implausible"
            ))),
        }
    }
}

pub(super) struct Walker<'m> {
    pub opset: i64,
    /// Declared shapes (value_info and outputs), the fallback for unsupported ops.
    pub declared: HashMap<&'m str, &'m ValueInfoProto>,
    pub per_node: Vec<NodeCost>,
    pub unsupported: BTreeMap<(String, String), u64>,
    pub unresolved: Vec<UnresolvedNode>,
    pub notes: Vec<String>,
    /// Model-local functions (domain, name): nodes calling them are not expanded.
    pub functions: HashSet<(String, String)>,
    /// Whether a contradiction is the user's (an --input was given) or acceval's to note.
    pub strict: bool,
    /// Contradictions noted so far (an `If` branch with one is not the branch that runs).
    pub contradictions: usize,
    /// The constant-folding budget ([`FOLD_BUDGET`] at the start).
    pub budget: &'m Cell<u64>,
}

pub(super) fn shapes_of<'a>(facts: impl Iterator<Item = Option<&'a Fact>>) -> Vec<String> {
    facts
        .map(|f| match f.and_then(|f| f.shape.as_ref()) {
            Some(s) => shape_str(s),
            None => "?".into(),
        })
        .collect()
}

impl<'m> Walker<'m> {
    /// Walks `g` in `scope`, each node counted `multiplier` times.
    pub fn walk(
        &mut self,
        g: &'m GraphProto,
        scope: &mut Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Result<Totals, AnalyseError> {
        for t in &g.initializer {
            scope.vars.insert(t.name.clone(), Fact::of_tensor(t));
        }
        for s in &g.sparse_initializer {
            if let Some(v) = &s.values {
                let f = Fact::new(Some(v.dtype()), known_shape(&s.dims));
                scope.vars.insert(v.name.clone(), f);
            }
        }
        let mut totals = Totals::default();
        // Every name a node of `g` produces, for telling a dangling input from one produced
        // further on (the engines sort a graph that is not in topological order).
        let produced: HashSet<&str> = if self.strict {
            g.node
                .iter()
                .flat_map(|n| n.output.iter().map(String::as_str))
                .collect()
        } else {
            HashSet::new()
        };
        for (i, node) in g.node.iter().enumerate() {
            let label = node.label(i);
            if self.strict {
                self.check_wiring(node, &label, scope, &produced)?;
            }
            let (outs, cost) = self.node(node, &label, scope, path, multiplier)?;
            totals.add(cost, &format!("graph '{path}'"))?;
            for (name, f) in node.output.iter().zip(outs) {
                if !name.is_empty() {
                    scope.vars.insert(name.clone(), f);
                }
            }
        }
        Ok(totals)
    }

    fn count_unsupported(&mut self, node: &NodeProto) {
        let key = (node.domain.clone(), node.op_type.clone());
        *self.unsupported.entry(key).or_insert(0) += 1;
    }

    /// Outputs nobody could infer take the model's declared value_info.
    fn fall_back_on_declared(&self, node: &NodeProto, outs: &mut [Fact]) {
        for (o, name) in outs.iter_mut().zip(&node.output) {
            if o.shape.is_none()
                && let Some(v) = self.declared.get(name.as_str())
            {
                let d = declared_fact(v);
                o.shape = d.shape;
                o.dtype = o.dtype.or(d.dtype);
            }
        }
    }

    /// A contradiction: the user's error with --input, else a note (dependants unresolved).
    fn contradiction(
        &mut self,
        node: &NodeProto,
        label: &str,
        msg: String,
    ) -> Result<(), AnalyseError> {
        if self.strict {
            return Err(AnalyseError::Contradiction(msg));
        }
        self.contradictions += 1;
        self.notes.push(format!(
            "shape inference stopped at node '{label}' ({}): {msg}; nodes depending on it are unresolved",
            node.op_type
        ));
        Ok(())
    }

    /// A node's inputs and outputs as ONNX requires them: each named input produced by
    /// something (a graph input, an initializer, a node of this graph or an enclosing one), no
    /// position its operator requires left empty, and no output name defined before. Engines
    /// meet these as a panic, an index out of range, or (tract, a name written twice) a run
    /// whose result depends on which writer it kept.
    fn check_wiring(
        &self,
        node: &NodeProto,
        label: &str,
        scope: &Scope<'_>,
        produced: &HashSet<&str>,
    ) -> Result<(), AnalyseError> {
        let op = &node.op_type;
        if let Some(name) = node
            .input
            .iter()
            .find(|n| !n.is_empty() && scope.get(n).is_none() && !produced.contains(n.as_str()))
        {
            return Err(AnalyseError::Malformed(format!(
                "node '{label}' ({op}) reads '{name}', which no node, graph input or initializer produces"
            )));
        }
        // ONNX graphs are in single static assignment form: a name is assigned once.
        for (j, out) in node.output.iter().enumerate() {
            if !out.is_empty() && (scope.vars.contains_key(out) || node.output[..j].contains(out)) {
                return Err(AnalyseError::Malformed(format!(
                    "node '{label}' ({op}) writes '{out}', which a graph input, an initializer or another node already defines (each name is assigned once)"
                )));
            }
        }
        if ops::is_onnx_domain(&node.domain)
            && let Some(k) = ops::required_inputs(op)
                .iter()
                .find(|&&k| node.input.get(k).is_some_and(|n| n.is_empty()))
        {
            return Err(AnalyseError::Malformed(format!(
                "node '{label}' ({op}) leaves its input {k} empty, which {op} requires"
            )));
        }
        // ONNX's checker refuses an attribute the operator's schema at the model's opset does
        // not define, and so does ONNX Runtime ("Unrecognized attribute"). tract ignored it:
        // a misspelt `strides` ran with the default strides, and an opset-13 Squeeze with the
        // opset-11 attribute `axes` squeezed every unit dimension.
        if ops::is_onnx_domain(&node.domain) {
            for a in &node.attribute {
                let name = a.name.as_str();
                let (why, hint) = match ops::attribute_at(op, self.opset, name) {
                    ops::AttributeAt::Defined => continue,
                    ops::AttributeAt::OtherOpsets(ranges) => {
                        let opsets: Vec<String> = ranges
                            .iter()
                            .map(|&(first, last)| match last {
                                Some(l) if l == first => format!("opset {first}"),
                                Some(l) => format!("opsets {first} to {l}"),
                                None => format!("opsets from {first} on"),
                            })
                            .collect();
                        (
                            format!(
                                "which {op} defines in {} but not at the model's opset {}",
                                opsets.join(" and "),
                                self.opset
                            ),
                            format!(
                                "declare an opset that defines it, or write the node as {op}'s schema at opset {} does (see the operator's changelog)",
                                self.opset
                            ),
                        )
                    }
                    ops::AttributeAt::Unknown(known) => {
                        let near = known
                            .iter()
                            .map(|k| (strsim::damerau_levenshtein(k, name), k))
                            .filter(|&(d, _)| d <= 2)
                            .min()
                            .map(|(_, k)| k);
                        let hint = match near {
                            Some(k) => format!("did you mean '{k}'? rename or remove it"),
                            None if known.is_empty() => {
                                format!(
                                    "{op} takes no attributes at opset {}; remove it",
                                    self.opset
                                )
                            }
                            None => format!(
                                "{op} takes {} at opset {}; rename or remove it",
                                known.join(", "),
                                self.opset
                            ),
                        };
                        (format!("which no opset of {op} defines"), hint)
                    }
                };
                return Err(AnalyseError::Malformed(format!(
                    "node '{label}' ({op}) has the attribute '{name}', {why}: ONNX's checker and ONNX Runtime refuse it, and tract would ignore it; {}",
                    hint
                )));
            }
        }
        Ok(())
    }

    /// Every stored fact has non-negative dims whose product fits 64 bits.
    fn check_outputs(
        &mut self,
        node: &NodeProto,
        label: &str,
        outs: &mut [Fact],
    ) -> Result<(), AnalyseError> {
        for (f, name) in outs.iter_mut().zip(&node.output) {
            let Some(d) = f.dims() else { continue };
            if let Some(v) = d.iter().find(|&&v| v < 0) {
                let msg = format!(
                    "node '{label}' ({}): output '{name}' would have a negative dim {v} ({})",
                    node.op_type,
                    shape_str(f.shape.as_deref().unwrap_or(&[]))
                );
                *f = Fact::unknown();
                self.contradiction(node, label, msg)?;
            } else if numel(&d).is_none() {
                return Err(AnalyseError::TooLarge(format!(
                    "node '{label}' ({}): output '{name}' would hold {} elements ({}), more than a 64-bit count holds; the model's dims or shape inputs are implausible",
                    node.op_type,
                    approx_count(&d),
                    shape_str(f.shape.as_deref().unwrap_or(&[]))
                )));
            }
        }
        Ok(())
    }

    /// Resolves one node's outputs and cost (including any subgraph it holds).
    fn node(
        &mut self,
        node: &'m NodeProto,
        label: &str,
        scope: &Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Result<(Vec<Fact>, Totals), AnalyseError> {
        let ins: Vec<Option<&Fact>> = node
            .input
            .iter()
            .map(|n| if n.is_empty() { None } else { scope.get(n) })
            .collect();
        let n_out = node.output.len();
        if ops::is_onnx_domain(&node.domain)
            && matches!(node.op_type.as_str(), "If" | "Loop" | "Scan")
        {
            return self.control_flow(node, label, &ins, scope, path, multiplier);
        }
        let rule = ops::lookup(&node.domain, &node.op_type);
        let is_function = self
            .functions
            .contains(&(node.domain.clone(), node.op_type.clone()));
        let Some(rule) = rule.filter(|_| !is_function) else {
            self.count_unsupported(node);
            let mut outs = vec![Fact::unknown(); n_out];
            self.fall_back_on_declared(node, &mut outs);
            self.check_outputs(node, label, &mut outs)?;
            return Ok((outs, Totals::default()));
        };
        let nin = NodeIn {
            node,
            label,
            inputs: ins,
            opset: self.opset,
            budget: self.budget,
        };
        let mut outs = match (rule.shape)(&nin) {
            Ok(o) => o,
            Err(ShapeError::TooLarge(m)) => return Err(AnalyseError::TooLarge(m)),
            Err(ShapeError::Malformed(m)) if self.strict => {
                return Err(AnalyseError::Malformed(m));
            }
            Err(ShapeError::Contradiction(m) | ShapeError::Malformed(m)) => {
                self.contradiction(node, label, m)?;
                vec![Fact::unknown(); n_out]
            }
        };
        outs.resize(n_out, Fact::unknown());
        self.fall_back_on_declared(node, &mut outs);
        self.check_outputs(node, label, &mut outs)?;
        let result = (rule.cost)(&nin, &outs);
        let totals = self.account(&nin, path, multiplier, &outs, result)?;
        Ok((outs, totals))
    }

    /// Records the cost (or why there is none) of one node.
    fn account(
        &mut self,
        n: &NodeIn,
        path: &str,
        multiplier: u64,
        outs: &[Fact],
        result: Result<Cost, NoCost>,
    ) -> Result<Totals, AnalyseError> {
        let node = n.node;
        let too_large = |what: String| {
            AnalyseError::TooLarge(format!(
                "node '{}' ({}) needs about {what} MACs or other ops, more than a 64-bit count holds (1.8e19); its shapes are {} -> {}: check the model's dims, pads and attributes",
                n.label,
                node.op_type,
                shapes_of(n.inputs.iter().copied()).join(", "),
                shapes_of(outs.iter().map(Some)).join(", ")
            ))
        };
        match result {
            Ok(Cost { macs, other_ops }) => {
                let (Some(macs), Some(other), Some(flops)) = (
                    macs.checked_mul(multiplier),
                    other_ops.checked_mul(multiplier),
                    macs.checked_mul(multiplier).and_then(|m| m.checked_mul(2)),
                ) else {
                    return Err(too_large(format!(
                        "{:.3e} (× {multiplier} loop iterations)",
                        macs as f64 * multiplier as f64
                    )));
                };
                self.per_node.push(NodeCost {
                    node: n.label.to_string(),
                    op_type: node.op_type.clone(),
                    graph: path.to_string(),
                    macs,
                    flops,
                    other_ops: other,
                    multiplier,
                    input_shapes: shapes_of(n.inputs.iter().copied()),
                    output_shapes: shapes_of(outs.iter().map(Some)),
                });
                return Ok(Totals { macs, other });
            }
            // A shape rule but no cost rule for this use (e.g. an Einsum chain of 3+).
            Err(NoCost::Unsupported) => self.count_unsupported(node),
            Err(NoCost::Unresolved(reason)) => self.unresolved.push(UnresolvedNode {
                node: n.label.to_string(),
                op_type: node.op_type.clone(),
                reason: format!(
                    "{reason}: inputs {}",
                    shapes_of(n.inputs.iter().copied()).join(", ")
                ),
            }),
            Err(NoCost::TooLarge(what)) => return Err(too_large(what)),
            Err(NoCost::NotCounted) => {}
        }
        Ok(Totals::default())
    }
}
