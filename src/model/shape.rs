//! What is known about one value of a graph: its element type, its shape, and (when small)
//! its contents, plus the shape arithmetic every operator rule shares.
//!
//! Owns: [`Fact`] and [`Const`] (the constant values propagated through exporters' shape
//! arithmetic, `Shape -> Gather -> Concat -> Reshape` and kin, capped at
//! [`MAX_CONST_ELEMS`] elements per value), numpy broadcasting, axis normalisation, and the
//! errors a shape rule can raise ([`ShapeError`]). Every dimension and element count is
//! computed with checked arithmetic: a product that does not fit 64 bits is an error that
//! names the value or node, never a wrapped number.
//! Leaves to others: the per-operator rules (`ops`), graph walking (`analyse`). The
//! serialized `Dim`/`Shape` types live in `report::schema::inspect` and are re-exported here.

use std::rc::Rc;

pub use crate::report::schema::inspect::{Dim, Shape, known_shape, shape_str};

use super::onnx::{DataType, TensorProto};

/// Largest tensor whose values are tracked for constant folding. Shape arithmetic is tiny
/// (a handful of integers); the cap keeps analysis linear in the node count.
pub const MAX_CONST_ELEMS: u64 = 4096;

/// The small contents of a constant tensor, row-major (as many elements as its shape).
#[derive(Debug, Clone, PartialEq)]
pub enum Const {
    Int(Vec<i64>),
    Float(Vec<f64>),
}

impl Const {
    pub fn ints(&self) -> Vec<i64> {
        match self {
            Const::Int(v) => v.clone(),
            // `as` saturates (NaN -> 0): a float used as a shape is the model's problem,
            // never a panic.
            Const::Float(v) => v.iter().map(|&x| x as i64).collect(),
        }
    }
    pub fn floats(&self) -> Vec<f64> {
        match self {
            Const::Int(v) => v.iter().map(|&x| x as f64).collect(),
            Const::Float(v) => v.clone(),
        }
    }
    /// The first element as an integer (a scalar input such as TopK's `k`).
    pub fn first_int(&self) -> Option<i64> {
        match self {
            Const::Int(v) => v.first().copied(),
            Const::Float(v) => v.first().map(|&x| x as i64),
        }
    }
    pub fn first_float(&self) -> Option<f64> {
        match self {
            Const::Int(v) => v.first().map(|&x| x as f64),
            Const::Float(v) => v.first().copied(),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Const::Int(v) => v.len(),
            Const::Float(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn is_int(&self) -> bool {
        matches!(self, Const::Int(_))
    }
    /// The elements at `idx` (each checked; `None` when one is out of range).
    pub fn select(&self, idx: &[usize]) -> Option<Const> {
        Some(match self {
            Const::Int(v) => Const::Int(
                idx.iter()
                    .map(|&i| v.get(i).copied())
                    .collect::<Option<_>>()?,
            ),
            Const::Float(v) => Const::Float(
                idx.iter()
                    .map(|&i| v.get(i).copied())
                    .collect::<Option<_>>()?,
            ),
        })
    }
    /// The values cast to `to` (integers truncate floats, as ONNX Cast does).
    pub fn cast(&self, to: DataType) -> Const {
        if to.is_integer() || to == DataType::BOOL {
            let v = self.ints();
            if to == DataType::BOOL {
                return Const::Int(v.iter().map(|&x| (x != 0) as i64).collect());
            }
            Const::Int(v)
        } else if to.is_float() {
            Const::Float(self.floats())
        } else {
            self.clone()
        }
    }
}

/// What is known about one value: element type, shape, and (when small) contents. When
/// `value` is set, `shape` is fully known and holds exactly `value.len()` elements.
#[derive(Debug, Clone, Default)]
pub struct Fact {
    pub dtype: Option<DataType>,
    pub shape: Option<Shape>,
    pub value: Option<Rc<Const>>,
}

impl Fact {
    pub fn new(dtype: Option<DataType>, shape: Shape) -> Fact {
        Fact {
            dtype,
            shape: Some(shape),
            value: None,
        }
    }
    /// A fact of `dtype` and `shape`, or of no shape.
    pub fn of(dtype: Option<DataType>, shape: Option<Shape>) -> Fact {
        Fact {
            dtype,
            shape,
            value: None,
        }
    }
    pub fn unknown() -> Fact {
        Fact::default()
    }
    pub fn rank(&self) -> Option<usize> {
        self.shape.as_ref().map(|s| s.len())
    }
    /// All dims, when every one is a number.
    pub fn dims(&self) -> Option<Vec<i64>> {
        self.shape.as_ref()?.iter().map(|d| d.known()).collect()
    }
    /// Number of elements, when every dim is a number (checked; `None` on overflow, which
    /// the walker has already reported for every value it stores).
    pub fn numel(&self) -> Option<u64> {
        numel(&self.dims()?)
    }
    pub fn const_value(&self) -> Option<&Const> {
        self.value.as_deref()
    }
    /// This fact with `value` attached when it is consistent with the shape.
    pub fn with_value(mut self, value: Option<Const>) -> Fact {
        self.value = value
            .filter(|v| self.numel() == Some(v.len() as u64))
            .map(Rc::new);
        self
    }
    /// The same type and shape, without the value.
    pub fn like(f: Option<&Fact>) -> Fact {
        match f {
            Some(f) => Fact::of(f.dtype, f.shape.clone()),
            None => Fact::unknown(),
        }
    }
    /// The fact of a stored tensor (initializer or Constant). The caller has checked the
    /// tensor (`TensorProto::check`), so its dims are non-negative and their product fits.
    pub fn of_tensor(t: &TensorProto) -> Fact {
        let value = t
            .int_values(MAX_CONST_ELEMS)
            .map(Const::Int)
            .or_else(|| t.float_values(MAX_CONST_ELEMS).map(Const::Float));
        Fact::new(Some(t.dtype()), known_shape(&t.dims)).with_value(value)
    }
}

/// Product of dims as an element count: `None` when a dim is negative or the product does
/// not fit 64 bits.
pub fn numel(dims: &[i64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |acc, &d| {
        let d = u64::try_from(d).ok()?;
        acc.checked_mul(d)
    })
}

/// Why a shape rule failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// The shapes cannot be right for this model (channel count, broadcast, element count).
    #[error("{0}")]
    Contradiction(String),
    /// A dimension or element count does not fit 64 bits.
    #[error("{0}")]
    TooLarge(String),
    /// An attribute outside what the operator defines (a stride of 0), whatever the shapes.
    #[error("{0}")]
    Malformed(String),
}

pub type R<T> = Result<T, ShapeError>;

pub fn contra<T>(msg: String) -> R<T> {
    Err(ShapeError::Contradiction(msg))
}

/// Numpy-style multidirectional broadcasting.
pub fn broadcast(shapes: &[&Shape], node: &str) -> R<Shape> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let mut d: Option<Dim> = None;
        for s in shapes {
            let Some(x) = (i + s.len()).checked_sub(rank).and_then(|k| s.get(k)) else {
                continue;
            };
            d = Some(match (d, x) {
                (None, x) => x.clone(),
                (Some(Dim::Known(1)), x) => x.clone(),
                (Some(a), Dim::Known(1)) => a,
                (Some(Dim::Known(a)), Dim::Known(b)) if a == *b => Dim::Known(a),
                (Some(Dim::Known(a)), Dim::Known(b)) => {
                    return contra(format!(
                        "node '{node}': shapes {} cannot be broadcast together (dim {a} vs {b})",
                        shapes
                            .iter()
                            .map(|s| shape_str(s))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                (Some(Dim::Known(a)), Dim::Sym(_)) => Dim::Known(a),
                (Some(Dim::Sym(_)), Dim::Known(b)) => Dim::Known(*b),
                (Some(Dim::Sym(a)), Dim::Sym(_)) => Dim::Sym(a),
            });
        }
        out.push(d.unwrap_or(Dim::Known(1)));
    }
    Ok(out)
}

/// `axis` (negative counts from the end) as an index into a rank-`rank` shape.
pub fn norm_axis(axis: i64, rank: usize, node: &str) -> R<usize> {
    let r = rank as i64;
    let a = if axis < 0 {
        axis.checked_add(r)
    } else {
        Some(axis)
    };
    match a {
        Some(a) if (0..r).contains(&a) => Ok(a as usize),
        _ => contra(format!(
            "node '{node}': axis {axis} is out of range for rank {rank}"
        )),
    }
}

/// A known dim must equal another known dim.
pub fn check_eq(a: &Dim, b: &Dim, node: &str, what: &str) -> R<()> {
    if let (Dim::Known(x), Dim::Known(y)) = (a, b)
        && x != y
    {
        return contra(format!("node '{node}': {what} mismatch: {x} vs {y}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numel_is_checked() {
        assert_eq!(numel(&[]), Some(1));
        assert_eq!(numel(&[2, 3]), Some(6));
        assert_eq!(numel(&[2, -3]), None);
        assert_eq!(numel(&[1 << 32, 1 << 32, 16]), None);
    }

    #[test]
    fn broadcast_and_axes() {
        let a = known_shape(&[2, 1, 5]);
        let b = known_shape(&[3, 1]);
        assert_eq!(broadcast(&[&a, &b], "n").unwrap(), known_shape(&[2, 3, 5]));
        assert!(broadcast(&[&a, &known_shape(&[4])], "n").is_err());
        assert_eq!(norm_axis(-1, 3, "n").unwrap(), 2);
        assert!(norm_axis(i64::MIN, 3, "n").is_err());
        assert!(norm_axis(3, 3, "n").is_err());
    }

    #[test]
    fn a_value_must_match_its_shape() {
        let f = Fact::new(None, known_shape(&[2])).with_value(Some(Const::Int(vec![1, 2])));
        assert!(f.value.is_some());
        let f = Fact::new(None, known_shape(&[3])).with_value(Some(Const::Int(vec![1, 2])));
        assert!(f.value.is_none());
    }
}
