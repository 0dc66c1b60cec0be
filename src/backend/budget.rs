//! The memory a model would take, checked before an engine loads it: at the concrete input
//! shapes, no tensor of the graph may exceed the budget of `util::limits` (a ConstantOfShape
//! or Expand to 10^12 elements would otherwise abort the process inside the engine, since
//! Rust aborts on allocation failure). The shapes come from `model::analyse`; a model it
//! cannot analyse is left to the engine (its own errors are clean).

use std::path::Path;

use crate::model::InputShape;

/// Elements of an `AxBxC` shape string (`?` dims unknown: `None`).
fn elements(shape: &str) -> Option<u128> {
    shape
        .split('x')
        .map(|d| d.trim().parse::<u128>().ok())
        .try_fold(1u128, |n, d| n.checked_mul(d?))
}

/// Refuses `model` when one of its tensors, at `shapes`, would not fit the budget.
pub fn check(model: &Path, shapes: &[(String, Vec<usize>)]) -> Result<(), String> {
    let shapes: Vec<InputShape> = shapes
        .iter()
        .map(|(n, d)| InputShape {
            name: n.clone(),
            dims: d.iter().map(|&x| x as i64).collect(),
        })
        .collect();
    let Ok(a) = crate::model::analyse(model, &shapes) else {
        return Ok(());
    };
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
    Ok(())
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
