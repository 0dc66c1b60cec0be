//! Comparing tensors: numpy's `allclose` rule and the error figures beside it.
//!
//! An element passes when `|actual − expected| <= atol + rtol·|expected|` (numpy's
//! `isclose`, asymmetric in `expected`). NaN matches NaN and an infinity matches the same
//! infinity (`equal_nan=True`, as the ONNX backend tests compare).

use serde::Serialize;

use crate::model::tensor::TensorData;

/// How one output compared.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Diff {
    pub elements: usize,
    /// Elements outside the tolerance.
    pub mismatched: usize,
    /// Largest |actual − expected| over finite pairs.
    pub max_abs_diff: f64,
    /// Largest |actual − expected| / |expected| over finite pairs with expected ≠ 0.
    pub max_rel_diff: f64,
}

impl Diff {
    pub fn passed(&self) -> bool {
        self.mismatched == 0
    }
}

/// Compares `actual` with `expected`. `Err` when shapes differ (that is never "close").
pub fn compare(
    actual: &TensorData,
    expected: &TensorData,
    rtol: f64,
    atol: f64,
) -> Result<Diff, super::Error> {
    if actual.shape() != expected.shape() {
        return Err(super::Error::ShapeDiffers {
            actual: actual.shape().to_vec(),
            expected: expected.shape().to_vec(),
        });
    }
    let a = actual.to_f64();
    let e = expected.to_f64();
    let mut d = Diff {
        elements: a.len(),
        mismatched: 0,
        max_abs_diff: 0.0,
        max_rel_diff: 0.0,
    };
    for (&x, &y) in a.iter().zip(&e) {
        let ok = if x.is_nan() || y.is_nan() {
            x.is_nan() && y.is_nan()
        } else if x.is_infinite() || y.is_infinite() {
            x == y
        } else {
            let diff = (x - y).abs();
            d.max_abs_diff = d.max_abs_diff.max(diff);
            if y != 0.0 {
                d.max_rel_diff = d.max_rel_diff.max(diff / y.abs());
            }
            diff <= atol + rtol * y.abs()
        };
        if !ok {
            d.mismatched += 1;
        }
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    fn f(v: &[f32]) -> TensorData {
        TensorData::F32(ArrayD::from_shape_vec(vec![v.len()], v.to_vec()).unwrap())
    }

    #[test]
    fn allclose_rule() {
        // |1.0005 − 1| = 5e-4 <= 1e-7 + 1e-3·1 → pass; |1.002 − 1| = 2e-3 → fail.
        let d = compare(&f(&[1.0005, 1.002, 0.0]), &f(&[1.0, 1.0, 0.0]), 1e-3, 1e-7).unwrap();
        assert_eq!(d.mismatched, 1);
        assert_eq!(d.elements, 3);
        assert!((d.max_abs_diff - 0.002).abs() < 1e-6);
        assert!((d.max_rel_diff - 0.002).abs() < 1e-6);
    }

    #[test]
    fn nan_and_inf() {
        let d = compare(
            &f(&[f32::NAN, f32::INFINITY, 1.0]),
            &f(&[f32::NAN, f32::INFINITY, f32::NAN]),
            1e-3,
            0.0,
        )
        .unwrap();
        assert_eq!(d.mismatched, 1);
        let d = compare(&f(&[f32::NEG_INFINITY]), &f(&[f32::INFINITY]), 1.0, 1.0).unwrap();
        assert_eq!(d.mismatched, 1);
    }

    #[test]
    fn shape_mismatch_is_an_error() {
        assert!(compare(&f(&[1.0, 2.0]), &f(&[1.0]), 1e-3, 0.0).is_err());
    }
}
