//! The graph's inputs: declared shapes (a dim declared as 0 or negative is dynamic, as
//! Paddle and TensorFlow exporters write `-1`), given `NAME:SHAPE` overrides and their
//! validation, and the hint for inputs that still need a shape.

use std::collections::HashSet;

use super::AnalyseError;
use crate::model::onnx::{DataType, GraphProto, ValueInfoProto};
use crate::model::shape::{Dim, Fact, Shape, known_shape, numel, shape_str};
use crate::report::schema::inspect::{ValueDesc, ValueKind};

/// A concrete shape given on the command line for one input (`--input name:1x3x224x224`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputShape {
    pub name: String,
    pub dims: Vec<i64>,
}

impl std::str::FromStr for InputShape {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, spec) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("'{s}' is not NAME:SHAPE; write e.g. images:1x3x640x640"))?;
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
            format!(
                "shape '{spec}' of '{name}' must be integers >= 0 joined by 'x', e.g. 1x3x640x640"
            )
        })?;
        if dims.iter().any(|&d| d < 0) {
            return Err(format!(
                "shape of '{name}' has a negative dimension: {dims:?}"
            ));
        }
        Ok(InputShape {
            name: name.to_string(),
            dims,
        })
    }
}

/// The declared type and shape of a value. A dim without a value or name, or declared as
/// 0 or negative, is symbolic, named `value:axis`.
pub(super) fn declared_fact(v: &ValueInfoProto) -> Fact {
    let Some(t) = v.tensor_type() else {
        return Fact::unknown();
    };
    let shape = t.shape.as_ref().map(|s| {
        s.dim
            .iter()
            .enumerate()
            .map(|(i, d)| match (&d.dim_value, &d.dim_param) {
                (Some(v), _) if *v > 0 => Dim::Known(*v),
                (_, Some(p)) if !p.is_empty() => Dim::Sym(p.clone()),
                _ => Dim::Sym(format!("{}:{i}", v.name)),
            })
            .collect()
    });
    Fact::of(Some(DataType(t.elem_type)), shape)
}

pub(super) fn value_kind(v: &ValueInfoProto) -> ValueKind {
    match &v.r#type {
        Some(t) if t.tensor_type.is_some() => ValueKind::Tensor,
        Some(t) if t.sequence_type.is_some() => ValueKind::Sequence,
        Some(t) if t.map_type.is_some() => ValueKind::Map,
        Some(t) if t.optional_type.is_some() => ValueKind::Optional,
        Some(t) if t.sparse_tensor_type.is_some() => ValueKind::SparseTensor,
        _ => ValueKind::Unknown,
    }
}

/// An input or output as reported.
pub(super) fn describe(v: &ValueInfoProto, resolved: Option<Shape>) -> ValueDesc {
    let f = declared_fact(v);
    ValueDesc {
        name: v.name.clone(),
        kind: value_kind(v),
        elem_type: f.dtype.map(|t| t.name()).unwrap_or("UNDEFINED").to_string(),
        shape: f.shape,
        resolved_shape: resolved,
    }
}

/// Graph inputs that are not initializers (IR < 4 lists both).
pub(super) fn real_inputs(g: &GraphProto) -> Vec<&ValueInfoProto> {
    let init: HashSet<&str> = g.initializer.iter().map(|t| t.name.as_str()).collect();
    g.input
        .iter()
        .filter(|i| !init.contains(i.name.as_str()))
        .collect()
}

/// Every `--input` must name a real input.
pub(super) fn check_overrides(
    inputs: &[&ValueInfoProto],
    overrides: &[InputShape],
) -> Result<(), AnalyseError> {
    for o in overrides {
        if !inputs.iter().any(|i| i.name == o.name) {
            let known = inputs
                .iter()
                .map(|i| {
                    let s = declared_fact(i).shape;
                    let s = s.map(|s| shape_str(&s)).unwrap_or_else(|| "?".into());
                    format!("{} ({s})", i.name)
                })
                .collect::<Vec<_>>()
                .join(", ");
            return Err(AnalyseError::UnknownInput {
                name: o.name.clone(),
                known,
            });
        }
    }
    Ok(())
}

/// One input resolved: its fact, and (when it still has dynamic dims) what to pass.
pub(super) struct Resolved {
    pub fact: Fact,
    pub needs: Option<String>,
}

/// The fact of input `i` after its `--input` override, if any.
pub(super) fn resolve(
    i: &ValueInfoProto,
    overrides: &[InputShape],
) -> Result<Resolved, AnalyseError> {
    let mut f = declared_fact(i);
    if let Some(o) = overrides.iter().find(|o| o.name == i.name) {
        if let Some(decl) = &f.shape {
            let ok = decl.len() == o.dims.len()
                && decl
                    .iter()
                    .zip(&o.dims)
                    .all(|(d, &v)| d.known().is_none_or(|k| k == v));
            if !ok {
                return Err(AnalyseError::InputMismatch {
                    name: o.name.clone(),
                    given: dims_str(&o.dims),
                    declared: shape_str(decl),
                });
            }
        }
        f.shape = Some(known_shape(&o.dims));
    }
    if let Some(d) = f.dims()
        && numel(&d).is_none()
    {
        return Err(AnalyseError::InputTooLarge {
            input: i.name.clone(),
            count: approx_count(&d),
            dims: dims_str(&d),
        });
    }
    let needs = needs_shape(i, &f);
    Ok(Resolved { fact: f, needs })
}

fn dims_str(d: &[i64]) -> String {
    d.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// The element count of `d` in floating point, for messages about counts that overflow.
pub(super) fn approx_count(d: &[i64]) -> String {
    format!("{:.3e}", d.iter().map(|&v| v as f64).product::<f64>())
}

/// What to pass for an input whose shape is not fully known (`None` when it is).
fn needs_shape(i: &ValueInfoProto, f: &Fact) -> Option<String> {
    if f.shape
        .as_ref()
        .is_some_and(|s| s.iter().all(|d| d.known().is_some()))
    {
        return None;
    }
    // Known dims are kept; each unknown one becomes a <placeholder> to fill in.
    let (hint, what) = match &f.shape {
        Some(s) => (
            s.iter()
                .map(|d| match d {
                    Dim::Known(v) => v.to_string(),
                    Dim::Sym(name) => format!("<{name}>"),
                })
                .collect::<Vec<_>>()
                .join("x"),
            format!("dynamic dims {}", shape_str(s)),
        ),
        None => (
            "<dims, e.g. 1x3x224x224>".into(),
            "no declared shape".into(),
        ),
    };
    Some(format!(
        "input '{}' has {what}: give its shape as {}:{hint} with numbers",
        i.name, i.name
    ))
}
