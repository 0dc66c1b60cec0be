//! Statistics over raw samples: pure functions, each definition written once.
//!
//! Percentiles use linear interpolation between order statistics, numpy's default
//! (`method="linear"`): for q in [0, 1], position h = (n − 1)·q, and the value is
//! x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]) over the sorted samples. Results can be
//! checked with `numpy.percentile`.

pub use crate::report::schema::stats::{PercentileSupport, Summary};

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
            p999: (n >= 1000).then(|| q(0.999)),
            stddev: var.sqrt(),
        })
    }

    /// Coefficient of variation, stddev / mean (0 when the mean is 0).
    pub fn cv(&self) -> f64 {
        if self.mean > 0.0 {
            self.stddev / self.mean
        } else {
            0.0
        }
    }
}

/// The fewest samples for which the q-quantile has an early-stopping estimate at
/// `confidence`, after MLPerf LoadGen: the smallest N with
/// P(Binomial(N, 1 − q) ≤ 1) ≤ 1 − confidence, i.e. even with one sample over the bound the
/// bound holds for q of the population with that confidence. 64 for P90 and 662 for P99 at
/// 99 % (mlcommons/inference#1629).
pub fn min_samples(q: f64, confidence: f64) -> usize {
    let p = 1.0 - q;
    let mut n = 1usize;
    loop {
        // P(X = 0) + P(X = 1) for X ~ Binomial(n, p), in logs for large n.
        let nf = n as f64;
        let p0 = (nf * (1.0 - p).ln()).exp();
        let p1 = (nf.ln() + p.ln() + (nf - 1.0) * (1.0 - p).ln()).exp();
        if p0 + p1 <= 1.0 - confidence {
            return n;
        }
        n += 1;
    }
}

/// Support of P90, P99 and P99.9 for `n` samples.
pub fn percentile_support(n: usize) -> Vec<PercentileSupport> {
    [("p90", 0.90), ("p99", 0.99), ("p99.9", 0.999)]
        .into_iter()
        .map(|(name, q)| {
            let m = min_samples(q, 0.99);
            PercentileSupport {
                percentile: name.to_string(),
                min_samples: m,
                supported: n >= m,
            }
        })
        .collect()
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
        assert!((s.stddev - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!(
            (one.p50, one.p99, one.stddev, one.p999),
            (7.0, 7.0, 0.0, None)
        );
        let ties = Summary::of(&[5.0; 10]).unwrap();
        assert_eq!((ties.p90, ties.stddev), (5.0, 0.0));
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        let big: Vec<f64> = (0..1000).map(|i| i as f64).collect();
        // numpy.percentile(range(1000), 99.9) = 998.001
        assert!((Summary::of(&big).unwrap().p999.unwrap() - 998.001).abs() < 1e-9);
    }

    #[test]
    fn mlperf_minimum_samples() {
        assert_eq!(min_samples(0.90, 0.99), 64);
        assert_eq!(min_samples(0.99, 0.99), 662);
        let s = percentile_support(100);
        assert!(s[0].supported && !s[1].supported && !s[2].supported);
        assert!(s[2].min_samples > 6000);
    }
}
