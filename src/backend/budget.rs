//! The admission check every load passes before an engine sees an ONNX model (issue 27):
//! what `inspect` proves, at the concrete input shapes the run will use. The model must
//! analyse without error (shapes resolve without contradiction, e.g. no negative or empty
//! output dim; no count beyond 64 bits; external data regular files inside the model's
//! folder), declare an `ai.onnx` opset some ONNX release defines, and no tensor of the graph
//! may exceed the budget of `util::limits` (a ConstantOfShape or Expand to 10^12 elements
//! would otherwise abort the process inside the engine, since Rust aborts on allocation
//! failure). Engines were left to find these themselves before, and some did not: tract
//! looped on a Conv padded by 2^40, blocked on a FIFO named as external data, returned an
//! empty tensor for a Conv whose dilation leaves no output, and ran opset 999 with today's
//! semantics. TorchScript archives and Ascend `.om` files are the engines' own formats and
//! are not analysed here.

use std::path::Path;

use crate::model::InputShape;

/// Elements of an `AxBxC` shape string (`?` dims unknown: `None`).
fn elements(shape: &str) -> Option<u128> {
    shape
        .split('x')
        .map(|d| d.trim().parse::<u128>().ok())
        .try_fold(1u128, |n, d| n.checked_mul(d?))
}

/// The newest `ai.onnx` operator set an ONNX release defines (ONNX 1.23: 28). A model
/// declaring a newer one asks for semantics no engine can be checked against; raise this
/// with the ONNX release that defines it.
pub const NEWEST_ONNX_OPSET: i64 = 28;

/// [`check`] before acceval generates a model's inputs, when they are large: `planned` is
/// the bytes to generate, in all and of the largest (`data::inputs::planned_bytes`).
/// Generating 8 GiB takes 27 s on the 2-core CI machine, so over 1 GiB in all a malformed
/// model is refused at once rather than after the generation (campaign round 7: a Slice of
/// step -2^63 on a [1, 2^31] input was refused after 27.7 s). An input past the tensor
/// budget is left to the generation, which refuses it naming the input.
pub fn check_before_generating(
    model: &Path,
    (total, largest): (u64, u64),
    shapes: &[InputShape],
) -> Result<(), String> {
    if total <= 1 << 30 || largest > crate::util::limits::max_tensor_bytes() {
        return Ok(());
    }
    let given: Vec<(String, Vec<usize>)> = shapes
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.dims.iter().map(|&d| d.max(0) as usize).collect(),
            )
        })
        .collect();
    check(model, &given).map(|_| ())
}

/// Refuses `model` when it does not analyse at `shapes`, declares an opset no ONNX release
/// defines, or one of its tensors would not fit the budget. Otherwise returns the operations
/// of one pass through the graph (FLOPs and other arithmetic as `inspect` counts them, each
/// Loop's or Scan's body once: a trip count is a bound, often 2^63 - 1 with a condition
/// that ends the loop far sooner), which size the run budget; `None` where they cannot be
/// counted, and for the engines' own formats.
pub fn check(model: &Path, shapes: &[(String, Vec<usize>)]) -> Result<Option<u64>, String> {
    let om = model
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("om"));
    if om || super::tch::is_torchscript(model) {
        return Ok(None);
    }
    let shapes: Vec<InputShape> = shapes
        .iter()
        .map(|(n, d)| InputShape {
            name: n.clone(),
            dims: d.iter().map(|&x| x as i64).collect(),
        })
        .collect();
    let a = crate::model::analyse_for_run(model, &shapes).map_err(|e| {
        format!("refused before loading (the same check as `acceval inspect`): {e}")
    })?;
    for o in &a.model.opsets {
        if (o.domain.is_empty() || o.domain == "ai.onnx") && o.version > NEWEST_ONNX_OPSET {
            return Err(format!(
                "the model declares ai.onnx opset {}, which no ONNX release defines (the newest, ONNX 1.23, defines {NEWEST_ONNX_OPSET}): its operators' semantics are unknown; export it at opset {NEWEST_ONNX_OPSET} or lower",
                o.version
            ));
        }
    }
    let limit = crate::util::limits::max_tensor_bytes() as u128;
    for n in &a.per_op {
        for s in &n.output_shapes {
            // Four bytes per element: the type of most activations (a floor, not a bound).
            if let Some(e) = elements(s).filter(|e| e.saturating_mul(4) > limit) {
                return Err(format!(
                    "node '{}' ({}) would produce a {s} tensor ({e} elements) at these input shapes, more than the {limit} bytes a tensor may take here (half the available memory; ACCEVAL_MAX_TENSOR_BYTES sets it): the model is malformed or needs smaller inputs",
                    n.node, n.op_type
                ));
            }
        }
    }
    let one_pass = a
        .per_op
        .iter()
        .map(|n| n.flops.saturating_add(n.other_ops) / n.multiplier.max(1))
        .fold(0u64, u64::saturating_add);
    Ok(a.flops.is_some().then_some(one_pass))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_strings() {
        assert_eq!(elements("1x3x224x224"), Some(150_528));
        assert_eq!(elements("1x?x4"), None);
        assert_eq!(elements("1000000x1000000"), Some(1_000_000_000_000));
    }
}
