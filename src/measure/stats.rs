//! Statistics over raw samples: pure functions, each definition written once.
//!
//! Percentiles use linear interpolation between order statistics, numpy's default
//! (`method="linear"`): for q in [0, 1], position h = (n − 1)·q, and the value is
//! x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]) over the sorted samples. Results can be
//! checked with `numpy.percentile`.

use serde::Serialize;

/// The q-quantile (q in [0, 1]) of already sorted samples; `None` when empty.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// Summary of a set of samples (units are the caller's; field names carry none).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    /// Sample standard deviation (n − 1 in the denominator); 0 for one sample.
    pub std: f64,
}

impl Summary {
    /// `None` for no samples. NaN samples are rejected (`None`): a timing is never NaN.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|v| v.is_nan()) {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len();
        let mean = s.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let q = |p| quantile_sorted(&s, p).unwrap_or(f64::NAN);
        Some(Summary {
            n,
            mean,
            min: s[0],
            max: s[n - 1],
            p50: q(0.50),
            p75: q(0.75),
            p90: q(0.90),
            p99: q(0.99),
            std: var.sqrt(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4], [50, 75, 90]) = [2.5, 3.25, 3.7]
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&s, 0.5), Some(2.5));
        assert_eq!(quantile_sorted(&s, 0.75), Some(3.25));
        assert!((quantile_sorted(&s, 0.9).unwrap() - 3.7).abs() < 1e-12);
        assert_eq!(quantile_sorted(&s, 0.0), Some(1.0));
        assert_eq!(quantile_sorted(&s, 1.0), Some(4.0));
        assert_eq!(quantile_sorted(&[], 0.5), None);
        assert_eq!(quantile_sorted(&s, 1.5), None);
    }

    #[test]
    fn summary_hand_values_one_sample_and_ties() {
        // mean 2.5; sample std = sqrt(((1.5² + 0.5²)·2)/3) = sqrt(5/3)
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.n, s.min, s.max, s.mean, s.p50), (4, 1.0, 4.0, 2.5, 2.5));
        assert!((s.std - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!((one.p50, one.p99, one.std), (7.0, 7.0, 0.0));
        let ties = Summary::of(&[5.0; 10]).unwrap();
        assert_eq!((ties.p90, ties.std), (5.0, 0.0));
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
    }
}
