//! Error metrics of accelerated outputs against reference outputs (§6.2 i, Table 3).
//!
//! Every sum is accumulated in f64, element by element in order: on 10^8 elements a naive
//! f32 running sum loses the small terms entirely (f32 has 24 mantissa bits), while f64's
//! 53 bits keep the relative error of the sum near 10^-16 · n.
//!
//! Definitions (x = actual, y = reference, n elements):
//! - MSE = Σ (x − y)² / n — the figure Table 3 grades;
//! - max absolute error = max |x − y|;
//! - relative L2 error = √Σ(x − y)² / √Σy² (∞ when the reference is all zeros and x is not);
//! - cosine similarity = Σxy / (√Σx² · √Σy²) (1 when both are all zeros).

pub use crate::report::schema::accuracy::ErrorMetrics;

use crate::model::tensor::TensorData;

/// Why two tensors cannot be compared.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum MetricError {
    #[error("shape {actual:?} differs from the reference's {reference:?}")]
    Shape {
        actual: Vec<usize>,
        reference: Vec<usize>,
    },
    #[error("element type {actual} differs from the reference's {reference}")]
    Type {
        actual: &'static str,
        reference: &'static str,
    },
}

/// Running sums of the metrics, so outputs can be pooled over several inputs (the sums
/// add; the ratios are formed at the end).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Accumulator {
    n: u64,
    sq: f64,
    max: f64,
    xx: f64,
    yy: f64,
    xy: f64,
    nan: u64,
    inf: u64,
    first_nonfinite: Option<u64>,
}

impl Accumulator {
    #[inline]
    pub fn push(&mut self, x: f64, y: f64) {
        let i = self.n;
        self.n += 1;
        if !x.is_finite() {
            if x.is_nan() {
                self.nan += 1;
            } else {
                self.inf += 1;
            }
            self.first_nonfinite.get_or_insert(i);
            return;
        }
        let d = x - y;
        self.sq += d * d;
        self.max = self.max.max(d.abs());
        self.xx += x * x;
        self.yy += y * y;
        self.xy += x * y;
    }

    /// Adds another accumulator's sums (its element indices follow this one's).
    pub fn merge(&mut self, o: &Accumulator) {
        if self.first_nonfinite.is_none() {
            self.first_nonfinite = o.first_nonfinite.map(|i| i + self.n);
        }
        self.n += o.n;
        self.sq += o.sq;
        self.max = self.max.max(o.max);
        self.xx += o.xx;
        self.yy += o.yy;
        self.xy += o.xy;
        self.nan += o.nan;
        self.inf += o.inf;
    }

    /// The sums as a rank file holds them (`accuracy --cluster`).
    pub fn sums(&self, name: &str) -> crate::report::schema::cluster::OutputSums {
        crate::report::schema::cluster::OutputSums {
            name: name.to_string(),
            n: self.n,
            sq: self.sq,
            max_abs: self.max,
            xx: self.xx,
            yy: self.yy,
            xy: self.xy,
            nan: self.nan,
            inf: self.inf,
            first_nonfinite: self.first_nonfinite,
        }
    }

    /// The accumulator a rank file's sums describe.
    pub fn from_sums(s: &crate::report::schema::cluster::OutputSums) -> Self {
        Accumulator {
            n: s.n,
            sq: s.sq,
            max: s.max_abs,
            xx: s.xx,
            yy: s.yy,
            xy: s.xy,
            nan: s.nan,
            inf: s.inf,
            first_nonfinite: s.first_nonfinite,
        }
    }

    pub fn finish(&self) -> ErrorMetrics {
        let (n, sq, yy, xx, xy) = (self.n, self.sq, self.yy, self.xx, self.xy);
        let rel = if yy > 0.0 {
            (sq / yy).sqrt()
        } else if sq > 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
        let cosine = if xx > 0.0 && yy > 0.0 {
            xy / (xx.sqrt() * yy.sqrt())
        } else if xx == 0.0 && yy == 0.0 {
            1.0
        } else {
            0.0
        };
        let bad = self.nan + self.inf > 0;
        ErrorMetrics {
            elements: n,
            mse: if bad {
                f64::NAN
            } else if n > 0 {
                sq / n as f64
            } else {
                0.0
            },
            max_abs_error: if bad { f64::NAN } else { self.max },
            rel_l2_error: if bad { f64::NAN } else { rel },
            cosine: if bad { f64::NAN } else { cosine },
            nan_count: self.nan,
            inf_count: self.inf,
            first_nonfinite: self.first_nonfinite,
        }
    }
}

/// Metrics over two equally long sequences of values.
pub fn metrics_of(
    actual: impl Iterator<Item = f64>,
    reference: impl Iterator<Item = f64>,
) -> ErrorMetrics {
    let mut acc = Accumulator::default();
    for (x, y) in actual.zip(reference) {
        acc.push(x, y);
    }
    acc.finish()
}

/// Sums of `actual` against `reference`: same shape and element type, or an error.
pub fn accumulate(actual: &TensorData, reference: &TensorData) -> Result<Accumulator, MetricError> {
    if actual.shape() != reference.shape() {
        return Err(MetricError::Shape {
            actual: actual.shape().to_vec(),
            reference: reference.shape().to_vec(),
        });
    }
    if actual.dtype() != reference.dtype() {
        return Err(MetricError::Type {
            actual: actual.dtype().name(),
            reference: reference.dtype().name(),
        });
    }
    let mut acc = Accumulator::default();
    match (actual, reference) {
        (TensorData::F32(a), TensorData::F32(b)) => {
            for (&x, &y) in a.iter().zip(b.iter()) {
                acc.push(x as f64, y as f64);
            }
        }
        _ => {
            for (x, y) in actual.to_f64().into_iter().zip(reference.to_f64()) {
                acc.push(x, y);
            }
        }
    }
    Ok(acc)
}

/// Metrics of `actual` against `reference`: same shape and element type, or an error.
pub fn metrics(actual: &TensorData, reference: &TensorData) -> Result<ErrorMetrics, MetricError> {
    Ok(accumulate(actual, reference)?.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    fn f(v: &[f32]) -> TensorData {
        TensorData::F32(ArrayD::from_shape_vec(vec![v.len()], v.to_vec()).unwrap())
    }

    #[test]
    fn hand_computed_values() {
        // x = [1, 2, 3], y = [1, 2, 5]: d = [0, 0, −2]; MSE = 4/3; max 2;
        // rel L2 = 2/√30; cosine = (1 + 4 + 15)/(√14·√30) = 20/(√14·√30).
        let m = metrics(&f(&[1.0, 2.0, 3.0]), &f(&[1.0, 2.0, 5.0])).unwrap();
        assert_eq!(m.elements, 3);
        assert!((m.mse - 4.0 / 3.0).abs() < 1e-15);
        assert_eq!(m.max_abs_error, 2.0);
        assert!((m.rel_l2_error - 2.0 / 30f64.sqrt()).abs() < 1e-15);
        assert!((m.cosine - 20.0 / (14f64.sqrt() * 30f64.sqrt())).abs() < 1e-15);
    }

    #[test]
    fn zeros_one_element_and_identity() {
        let m = metrics(&f(&[0.0, 0.0]), &f(&[0.0, 0.0])).unwrap();
        assert_eq!((m.mse, m.rel_l2_error, m.cosine), (0.0, 0.0, 1.0));
        let m = metrics(&f(&[1.0]), &f(&[0.0])).unwrap();
        assert_eq!((m.mse, m.rel_l2_error, m.cosine), (1.0, f64::INFINITY, 0.0));
        let m = metrics(&f(&[7.5]), &f(&[7.5])).unwrap();
        assert_eq!((m.mse, m.max_abs_error, m.cosine), (0.0, 0.0, 1.0));
        let m = metrics(&f(&[]), &f(&[])).unwrap();
        assert_eq!((m.elements, m.mse), (0, 0.0));
    }

    #[test]
    fn nan_and_inf_are_counted_and_poison_the_figures() {
        let m = metrics(&f(&[f32::NAN, f32::INFINITY, 1.0]), &f(&[0.0, 0.0, 1.0])).unwrap();
        assert_eq!((m.nan_count, m.inf_count), (1, 1));
        assert!(m.mse.is_nan());
        assert_eq!(m.first_nonfinite, Some(0));
    }

    #[test]
    fn pooled_sums_equal_one_pass() {
        let (a, b) = (f(&[1.0, 2.0, 3.0, 4.0]), f(&[1.5, 2.0, 2.0, 4.5]));
        let whole = metrics(&a, &b).unwrap();
        let mut acc = accumulate(&f(&[1.0, 2.0]), &f(&[1.5, 2.0])).unwrap();
        acc.merge(&accumulate(&f(&[3.0, 4.0]), &f(&[2.0, 4.5])).unwrap());
        assert_eq!(acc.finish(), whole);
        let mut acc = accumulate(&f(&[1.0]), &f(&[1.0])).unwrap();
        acc.merge(&accumulate(&f(&[2.0, f32::NAN]), &f(&[2.0, 0.0])).unwrap());
        assert_eq!(acc.finish().first_nonfinite, Some(2));
    }

    #[test]
    fn shapes_and_types_must_match() {
        assert!(matches!(
            metrics(&f(&[1.0, 2.0]), &f(&[1.0])),
            Err(MetricError::Shape { .. })
        ));
        let i = TensorData::I64(ArrayD::from_shape_vec(vec![1], vec![1]).unwrap());
        assert!(matches!(
            metrics(&f(&[1.0]), &i),
            Err(MetricError::Type { .. })
        ));
    }

    #[test]
    fn f64_accumulation_keeps_small_terms() {
        // 2^24 + 1 terms of 1.0 after a 2^24: an f32 running sum stalls at 2^24, f64 does not.
        let n = (1u64 << 24) + 1;
        let m = metrics_of((0..n).map(|_| 1.0), (0..n).map(|_| 0.0));
        assert_eq!(m.mse, 1.0);
        let mut f32_sum = 0f32;
        for _ in 0..n {
            f32_sum += 1.0;
        }
        assert_eq!(f32_sum, 16_777_216.0); // stalled: one term lost
    }
}
