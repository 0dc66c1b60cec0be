//! What tract 0.23.9 would answer wrongly or panic on: valid ONNX that ONNX Runtime runs,
//! refused before tract loads it, naming the node and the limit.

use std::collections::{HashMap, HashSet};

use crate::model::onnx::{DataType, GraphProto, NodeProto, TensorProto};

/// The constants and the producing nodes in scope (of a graph and the graphs enclosing it),
/// by output name.
#[derive(Clone, Default)]
pub(super) struct Scope<'a> {
    consts: HashMap<&'a str, &'a TensorProto>,
    producers: HashMap<&'a str, &'a NodeProto>,
}

impl Scope<'_> {
    /// Whether `name` is integer arithmetic on a tensor's shape: a Shape or Size node
    /// upstream, through the nodes that carry such values (tract computes these on its own
    /// shape integers). A data input, or data shaped by a shape (a Reshape's data), is not.
    fn is_shape_arithmetic(&self, name: &str) -> bool {
        let mut todo = vec![name];
        let mut seen = HashSet::new();
        while let Some(x) = todo.pop() {
            if !seen.insert(x) {
                continue;
            }
            let Some(p) = self.producers.get(x) else {
                continue;
            };
            let carried = match p.op_type.as_str() {
                "Shape" | "Size" => return true,
                "Add" | "Sub" | "Mul" | "Div" | "Mod" | "Max" | "Min" | "Concat" | "Sum" => {
                    &p.input[..]
                }
                "Gather" | "Slice" | "Squeeze" | "Unsqueeze" | "Cast" | "Identity" | "Neg"
                | "Abs" | "ReduceProd" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "Reshape"
                | "Expand" | "Flatten" => p.input.get(..1).unwrap_or_default(),
                _ => &[],
            };
            todo.extend(carried.iter().map(String::as_str).filter(|s| !s.is_empty()));
        }
        false
    }
}

/// Refuses what tract 0.23.9 would answer wrongly or panic on, in `g` and the graphs its
/// nodes hold (`scope`: what the enclosing graphs define): valid ONNX that ONNX Runtime
/// runs, found by the campaign and by probes comparing tract's outputs with ONNX Runtime's
/// (docs/limits.md). Written by hand: these are tract's own limits, which no crate states.
/// - A Slice step past ±(2^31 - 1): tract keeps steps as 32-bit integers (`tract-core`'s
///   StridedSlice casts them with `as`), so 2^62 became 0 and tract divided by it (a caught
///   panic), and 2^32 + 2 would become 2, a wrong slice.
/// - An integer Mul, Div or Mod of a shape (a Shape or Size node upstream) by a constant
///   past 32 bits: tract's shape arithmetic casts it to 32 bits (`Mod(Shape(x), 2^32 + 3)`
///   gave a [1, 1] shape where ONNX gives [4, 6]).
/// - A floating-point Range whose delta is below 1 in magnitude: tract divided by the
///   delta cast to an integer (a caught panic).
/// - Squeeze axes out of ascending order ([-1, 0], [2, 0]): tract removes them in reverse of
///   the order given (a caught panic).
/// - Negative (cropping) pads: tract's run stopped on a caught panic.
/// - Negative GatherND indices: a caught panic at run time, or a load error.
/// - An LSTM, GRU or RNN of `direction = reverse`: tract ran it forward (outputs off by up to
///   0.19 from ONNX Runtime's, exit 0).
pub(super) fn tract_limits<'a>(g: &'a GraphProto, mut scope: Scope<'a>) -> Result<(), String> {
    let consts = g.initializer.iter().map(|t| (t.name.as_str(), t));
    scope.consts.extend(consts);
    for n in &g.node {
        if let (Some(o), Some(t)) = (n.output.first(), n.attr("value").and_then(|a| a.t.as_ref()))
            && n.op_type == "Constant"
        {
            scope.consts.insert(o.as_str(), t);
        }
        let outputs = n.output.iter().filter(|o| !o.is_empty());
        scope.producers.extend(outputs.map(|o| (o.as_str(), n)));
    }
    for (i, n) in g.node.iter().enumerate() {
        node_limits(n, i, &scope)?;
        for a in &n.attribute {
            for sub in a.g.iter().chain(&a.graphs) {
                tract_limits(sub, scope.clone())?;
            }
        }
    }
    Ok(())
}

/// [`tract_limits`] for node `i` of a graph, `n`, given what is in scope.
fn node_limits(n: &NodeProto, i: usize, scope: &Scope) -> Result<(), String> {
    let constant = |name: Option<&String>| name.and_then(|s| scope.consts.get(s.as_str())).copied();
    let ints = |name: Option<&String>| constant(name).and_then(|t| t.int_values(1 << 16));
    let onnx = n.domain.is_empty() || n.domain == "ai.onnx";
    let refuse = |what: String, fix: &str| {
        Err(format!(
            "node '{}' ({}): {what}; {fix}, or use --backend ort:cpu, which runs it",
            n.label(i),
            n.op_type
        ))
    };
    match n.op_type.as_str() {
        _ if !onnx => {}
        "Slice" => {
            let steps = ints(n.input.get(4)).unwrap_or_default();
            if let Some(step) = steps.into_iter().find(|s| i32::try_from(*s).is_err()) {
                return refuse(
                    format!(
                        "step {step} is past what tract takes: tract keeps a Slice's steps as 32-bit integers (at most 2147483647 in magnitude) and would wrap this one (to a step of {})",
                        step as i32
                    ),
                    "a step at least the axis's length picks the same one element, so write the axis's length instead",
                );
            }
        }
        // Only arithmetic on shapes: tract computes int64 data in 64 bits (an int64 input
        // times 2^32 + 1 matched ONNX Runtime's answer).
        "Mul" | "Div" | "Mod" if n.input.iter().any(|x| scope.is_shape_arithmetic(x)) => {
            let wide = n
                .input
                .iter()
                .filter_map(|x| ints(Some(x)))
                .flatten()
                .find(|v| i32::try_from(*v).is_err());
            if let Some(v) = wide {
                return refuse(
                    format!(
                        "the constant {v} is past 32 bits, and tract's shape arithmetic casts it to 32 bits (to {})",
                        v as i32
                    ),
                    "keep the constant within ±2147483647",
                );
            }
        }
        "Range" => {
            let delta = constant(n.input.get(2))
                .filter(|t| DataType(t.data_type).is_float())
                .and_then(|t| t.float_values(1))
                .and_then(|v| v.first().copied());
            if let Some(d) = delta.filter(|d| d.abs() < 1.0) {
                return refuse(
                    format!(
                        "a floating-point delta of {d}: tract sizes a Range by its delta cast to an integer (0 here) and divides by it"
                    ),
                    "write an integer Range scaled by the delta (Mul after a Cast)",
                );
            }
        }
        "Squeeze" => {
            let axes = match n.attr_ints("axes") {
                Some(a) => Some(a.to_vec()),
                None => ints(n.input.get(1)),
            };
            // Normalised by the rank, which is not known here: a negative axis after a
            // non-negative one, or a pair of one sign descending, is out of order at
            // every rank.
            let out_of_order = axes.as_ref().is_some_and(|a| {
                a.windows(2)
                    .any(|w| (w[0] < 0 && w[1] >= 0) || ((w[0] < 0) == (w[1] < 0) && w[0] > w[1]))
            });
            if out_of_order {
                return refuse(
                    format!(
                        "axes {:?} out of ascending order: tract removes the axes in reverse of the order given and stops",
                        axes.unwrap_or_default()
                    ),
                    "list the axes in ascending order (non-negative ones first)",
                );
            }
        }
        "Pad" => {
            let pads = match n.attr_ints("pads") {
                Some(p) => Some(p.to_vec()),
                None => ints(n.input.get(1)),
            };
            if let Some(p) = pads.and_then(|p| p.into_iter().find(|&v| v < 0)) {
                return refuse(
                    format!(
                        "a negative pad ({p}): tract pads but does not crop, and its run stops"
                    ),
                    "crop with a Slice instead",
                );
            }
        }
        "GatherND" => {
            if let Some(v) = ints(n.input.get(1)).and_then(|v| v.into_iter().find(|&v| v < 0)) {
                return refuse(
                    format!(
                        "a negative index ({v}): ONNX counts it from the end of its axis, and tract stops on it"
                    ),
                    "write the index from the start of the axis",
                );
            }
        }
        "LSTM" | "GRU" | "RNN" if n.attr_s("direction").as_deref() == Some("reverse") => {
            return refuse(
                    "direction = reverse: tract 0.23.9 runs it forward (its outputs differed from ONNX Runtime's by up to 0.19)".into(),
                    "reverse the sequence (ReverseSequence) around a forward layer",
                );
        }
        _ => {}
    }
    Ok(())
}
