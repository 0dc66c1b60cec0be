//! Control flow: `If` (the taken branch when the condition is a known constant, else the
//! larger branch, noted), `Loop` (body × trip count when static, else once per
//! iteration, noted) and `Scan` (body × scan length). Subgraphs see the outer values
//! through a child scope. Multipliers are checked: a trip count that would overflow the
//! totals is an error naming the node.

use super::AnalyseError;
use super::inputs::declared_fact;
use super::walk::{Scope, Totals, Walker};
use crate::model::onnx::{DataType, GraphProto, NodeProto};
use crate::model::shape::{Dim, Fact};
use crate::report::schema::inspect::{NodeCost, UnresolvedNode};

type Outcome = Result<(Vec<Fact>, Totals), AnalyseError>;

/// Where a subgraph of `label` sits, for names in `per_op`.
fn sub_path(path: &str, label: &str, attr: &str) -> String {
    if path == "main" {
        format!("{label}/{attr}")
    } else {
        format!("{path}/{label}/{attr}")
    }
}

/// A subgraph output's fact (its value dropped: it changes per iteration or branch).
fn output_fact(child: &Scope<'_>, o: &crate::model::onnx::ValueInfoProto) -> Fact {
    let mut f = child
        .get(&o.name)
        .cloned()
        .unwrap_or_else(|| declared_fact(o));
    f.value = None;
    f
}

/// What one `If` branch gave.
struct Branch<'a> {
    attr: &'a str,
    totals: Totals,
    outs: Vec<Fact>,
    nodes: Vec<NodeCost>,
    unresolved: Vec<UnresolvedNode>,
    /// The branch contradicts the input shapes: it is not the one that runs for them.
    infeasible: bool,
}

impl<'m> Walker<'m> {
    /// Dispatches `If`, `Loop` and `Scan`.
    pub(super) fn control_flow(
        &mut self,
        node: &'m NodeProto,
        label: &str,
        ins: &[Option<&Fact>],
        scope: &Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Outcome {
        let n_out = node.output.len();
        let Some(body) = node.attr("body").and_then(|a| a.g.as_ref()) else {
            if node.op_type == "If" {
                return self.if_node(node, label, ins, scope, path, multiplier);
            }
            return Ok((vec![Fact::unknown(); n_out], Totals::default()));
        };
        match node.op_type.as_str() {
            "Loop" => self.loop_node(node, body, label, ins, scope, path, multiplier),
            "Scan" => self.scan_node(node, body, label, ins, scope, path, multiplier),
            _ => self.if_node(node, label, ins, scope, path, multiplier),
        }
    }

    fn branch<'a>(
        &mut self,
        g: &'m GraphProto,
        attr: &'a str,
        scope: &Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Result<Branch<'a>, AnalyseError> {
        let mark = self.per_node.len();
        let unresolved_mark = self.unresolved.len();
        let seen = self.contradictions;
        let mut child = Scope::child(scope);
        let totals = self.walk(g, &mut child, path, multiplier)?;
        let nodes = self.per_node.split_off(mark);
        let unresolved = self.unresolved.split_off(unresolved_mark);
        let outs = g.output.iter().map(|o| output_fact(&child, o)).collect();
        Ok(Branch {
            attr,
            totals,
            outs,
            nodes,
            unresolved,
            infeasible: self.contradictions > seen,
        })
    }

    fn if_node(
        &mut self,
        node: &'m NodeProto,
        label: &str,
        ins: &[Option<&Fact>],
        scope: &Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Outcome {
        let n_out = node.output.len();
        let cond = ins
            .first()
            .copied()
            .flatten()
            .and_then(|f| f.const_value())
            .and_then(|v| v.first_float());
        let attrs: &[&str] = match cond {
            Some(c) if c != 0.0 => &["then_branch"],
            Some(_) => &["else_branch"],
            None => &["then_branch", "else_branch"],
        };
        // When the condition is not known, a branch that contradicts the input shapes is
        // noted, not an error: for these inputs the other branch runs.
        let strict = self.strict;
        self.strict = strict && cond.is_some();
        let mut branches = Vec::new();
        for &attr in attrs {
            if let Some(g) = node.attr(attr).and_then(|a| a.g.as_ref()) {
                let b = self.branch(g, attr, scope, &sub_path(path, label, attr), multiplier);
                match b {
                    Ok(b) => branches.push(b),
                    Err(e) => {
                        self.strict = strict;
                        return Err(e);
                    }
                }
            }
        }
        self.strict = strict;
        let any_feasible = branches.iter().any(|b| !b.infeasible);
        let counted = |b: &Branch| !(any_feasible && b.infeasible);
        let all_outs: Vec<Vec<Fact>> = branches
            .iter()
            .filter(|b| counted(b))
            .map(|b| b.outs.clone())
            .collect();
        let sums: Vec<String> = branches
            .iter()
            .map(|b| {
                let skip = if b.infeasible {
                    ", contradicts the input shapes"
                } else {
                    ""
                };
                format!("{}: {} MACs{skip}", b.attr, b.totals.macs)
            })
            .collect();
        // Unresolved nodes of a branch that cannot run are not a gap in the count.
        for b in branches.iter_mut().filter(|b| counted(b)) {
            self.unresolved.append(&mut b.unresolved);
        }
        let best = branches
            .into_iter()
            .filter(|b| counted(b))
            .reduce(|best, b| {
                let (t, bt) = (b.totals, best.totals);
                if t.macs > bt.macs || (t.macs == bt.macs && t.other > bt.other) {
                    b
                } else {
                    best
                }
            });
        let Some(best) = best else {
            return Ok((vec![Fact::unknown(); n_out], Totals::default()));
        };
        self.per_node.extend(best.nodes);
        self.notes.push(match cond {
            Some(_) => format!(
                "If node '{label}': the condition is constant; counted the taken branch, {} ({})",
                best.attr,
                sums.join(", ")
            ),
            None => format!(
                "If node '{label}': counted the larger branch, {} ({})",
                best.attr,
                sums.join(", ")
            ),
        });
        let mut merged = merge_branches(best.outs, &all_outs, label);
        merged.resize(n_out, Fact::unknown());
        Ok((merged, best.totals))
    }

    /// `multiplier × times`, or the error naming the loop.
    fn times(
        &self,
        node: &NodeProto,
        label: &str,
        multiplier: u64,
        times: u64,
    ) -> Result<u64, AnalyseError> {
        multiplier.checked_mul(times).ok_or_else(|| {
            AnalyseError::TooLarge(format!(
                "{} node '{label}' runs its body {times} times inside loops run {multiplier} times: more iterations than a 64-bit count holds; the trip count is implausible",
                node.op_type
            ))
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn loop_node(
        &mut self,
        node: &'m NodeProto,
        body: &'m GraphProto,
        label: &str,
        ins: &[Option<&Fact>],
        scope: &Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Outcome {
        let trip = ins
            .first()
            .copied()
            .flatten()
            .and_then(|f| f.const_value())
            .and_then(|v| v.first_int())
            .filter(|&v| v >= 0);
        let mut child = Scope::child(scope);
        // Body inputs: iteration number, condition, loop-carried values.
        for (k, bi) in body.input.iter().enumerate() {
            let f = match k {
                0 => Fact::new(Some(DataType::INT64), vec![]),
                1 => Fact::new(Some(DataType::BOOL), vec![]),
                _ => match ins.get(k).copied().flatten() {
                    Some(f) => Fact::like(Some(f)),
                    None => declared_fact(bi),
                },
            };
            child.vars.insert(bi.name.clone(), f);
        }
        let mult = self.times(node, label, multiplier, trip.map_or(1, |t| t as u64))?;
        let t = self.walk(body, &mut child, &sub_path(path, label, "body"), mult)?;
        self.notes.push(match trip {
            Some(n) => format!("Loop node '{label}': body counted {n} times (static trip count)"),
            None => format!(
                "Loop node '{label}': trip count is not static; its body is counted once (per iteration)"
            ),
        });
        // Body outputs: the condition, the loop-carried values, then the scan outputs.
        let n_carried = body.input.len().saturating_sub(2);
        let body_outs = body.output.iter().skip(1).map(|bo| output_fact(&child, bo));
        let symbol = format!("{label}:trip");
        let outs = stacked(body_outs, n_carried, trip, &symbol, node.output.len());
        Ok((outs, t))
    }

    /// Scan (opset >= 9): N state variables then M scan inputs.
    #[allow(clippy::too_many_arguments)]
    fn scan_node(
        &mut self,
        node: &'m NodeProto,
        body: &'m GraphProto,
        label: &str,
        ins: &[Option<&Fact>],
        scope: &Scope<'_>,
        path: &str,
        multiplier: u64,
    ) -> Outcome {
        let m = usize::try_from(node.attr_i("num_scan_inputs").unwrap_or(0)).unwrap_or(0);
        let n_state = body.input.len().saturating_sub(m);
        let axes = node.attr_ints("scan_input_axes");
        let mut trip: Option<i64> = None;
        let mut child = Scope::child(scope);
        for (k, bi) in body.input.iter().enumerate() {
            let mut f = match ins.get(k).copied().flatten() {
                Some(f) => Fact::like(Some(f)),
                None => declared_fact(bi),
            };
            if k >= n_state
                && let Some(s) = &mut f.shape
            {
                let ax = axes.and_then(|a| a.get(k - n_state).copied()).unwrap_or(0);
                let ax = if ax < 0 {
                    ax.saturating_add(s.len() as i64)
                } else {
                    ax
                };
                if let Ok(ax) = usize::try_from(ax)
                    && ax < s.len()
                {
                    if let Dim::Known(v) = s[ax] {
                        trip = Some(v);
                    }
                    s.remove(ax);
                }
            }
            child.vars.insert(bi.name.clone(), f);
        }
        let mult = self.times(node, label, multiplier, trip.map_or(1, |t| t.max(0) as u64))?;
        let t = self.walk(body, &mut child, &sub_path(path, label, "body"), mult)?;
        self.notes.push(match trip {
            Some(n) => format!("Scan node '{label}': body counted {n} times (scan length)"),
            None => {
                format!("Scan node '{label}': scan length is not static; its body is counted once")
            }
        });
        // Body outputs: the state variables, then the scan outputs.
        let body_outs = body.output.iter().map(|bo| output_fact(&child, bo));
        let symbol = format!("{label}:scan");
        let outs = stacked(body_outs, n_state, trip, &symbol, node.output.len());
        Ok((outs, t))
    }
}

/// A Loop's or a Scan's outputs from its body's (after Loop's condition): the first `n_state`
/// are the state carried from iteration to iteration, as the body gives them; each one after
/// is stacked over the iterations, with a leading dim of `trip`, or the symbol `symbol` when
/// the count is not static. Padded with unknown facts to the node's `n_outputs`.
fn stacked(
    body_outs: impl Iterator<Item = Fact>,
    n_state: usize,
    trip: Option<i64>,
    symbol: &str,
    n_outputs: usize,
) -> Vec<Fact> {
    let mut outs: Vec<Fact> = body_outs
        .enumerate()
        .map(|(k, mut f)| {
            if k >= n_state
                && let Some(s) = &mut f.shape
            {
                let d = trip
                    .map(Dim::Known)
                    .unwrap_or_else(|| Dim::Sym(symbol.to_string()));
                s.insert(0, d);
            }
            f
        })
        .collect();
    outs.resize(n_outputs, Fact::unknown());
    outs
}

/// The chosen branch's outputs, with a symbolic dim wherever the branches disagree.
fn merge_branches(mut merged: Vec<Fact>, all: &[Vec<Fact>], label: &str) -> Vec<Fact> {
    for other in all {
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
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::shape::Shape;

    fn f(dims: &[i64]) -> Fact {
        Fact::new(
            Some(DataType::FLOAT),
            dims.iter().map(|&d| Dim::Known(d)).collect(),
        )
    }

    /// One rule for both: state outputs pass through, every output after them gains the
    /// iteration count (or its symbol) as a leading dim, and missing outputs are unknown.
    /// Loop's body outputs after its condition: 1 carried value, 2 scan outputs.
    #[test]
    fn loop_and_scan_outputs_stack_after_the_state() {
        let body = || vec![f(&[4]), f(&[2, 3]), f(&[])].into_iter();
        let shapes = |outs: &[Fact]| -> Vec<Option<Shape>> {
            outs.iter().map(|o| o.shape.clone()).collect()
        };
        // Loop with a static trip count of 5, one carried value.
        let outs = stacked(body(), 1, Some(5), "l:trip", 3);
        assert_eq!(
            shapes(&outs),
            vec![
                Some(vec![Dim::Known(4)]),
                Some(vec![Dim::Known(5), Dim::Known(2), Dim::Known(3)]),
                Some(vec![Dim::Known(5)]),
            ]
        );
        // Scan with two state variables and a length that is not static; the node declares
        // one output more than the body gives.
        let outs = stacked(body(), 2, None, "s:scan", 4);
        assert_eq!(outs[0].shape, Some(vec![Dim::Known(4)]));
        assert_eq!(outs[1].shape, Some(vec![Dim::Known(2), Dim::Known(3)]));
        assert_eq!(outs[2].shape, Some(vec![Dim::Sym("s:scan".into())]));
        assert_eq!(outs[3].shape, None);
        // No state: everything is stacked.
        let outs = stacked(body(), 0, Some(1), "x", 3);
        assert!(
            outs.iter()
                .all(|o| o.shape.as_ref().unwrap()[0] == Dim::Known(1))
        );
    }
}
