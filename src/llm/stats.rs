//! MindIE Benchmark's statistics: every metric as average, max, min, P75, P90, SLO_P90, P99
//! and N. P-values pool all samples (for per-token metrics, all tokens of all requests);
//! SLO_P90 is the P90 of the per-request means. Percentiles interpolate linearly (numpy's
//! default), as everywhere in acceval.

use crate::measure::stats::quantile_sorted;
pub use crate::report::schema::llm::MindieStat;

/// The statistics of pooled `samples`, with SLO_P90 over `per_request_means` (the same as
/// the samples for per-request metrics). `None` without samples.
pub fn mindie(samples: &[f64], per_request_means: &[f64]) -> Option<MindieStat> {
    if samples.is_empty() {
        return None;
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let mut m = per_request_means.to_vec();
    m.sort_by(f64::total_cmp);
    let q = |v: &[f64], p: f64| quantile_sorted(v, p).unwrap_or(f64::NAN);
    Some(MindieStat {
        average: s.iter().sum::<f64>() / s.len() as f64,
        max: s[s.len() - 1],
        min: s[0],
        P75: q(&s, 0.75),
        P90: q(&s, 0.90),
        SLO_P90: if m.is_empty() { f64::NAN } else { q(&m, 0.90) },
        P99: q(&s, 0.99),
        N: s.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_p90_averages_each_request_first() {
        // Request A: decode gaps 1, 1, 1, 1 (mean 1); request B: 10 (mean 10).
        let pooled = [1.0, 1.0, 1.0, 1.0, 10.0];
        let means = [1.0, 10.0];
        let s = mindie(&pooled, &means).unwrap();
        assert_eq!(s.N, 5);
        assert_eq!(s.average, 14.0 / 5.0);
        assert!((s.P90 - 6.4).abs() < 1e-12); // numpy.percentile(pooled, 90)
        assert!((s.SLO_P90 - 9.1).abs() < 1e-12); // numpy.percentile([1, 10], 90)
        assert!(mindie(&[], &[]).is_none());
    }
}
