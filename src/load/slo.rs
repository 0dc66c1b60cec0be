//! Latency bounds (`--slo p99<=50ms,avg<=20ms`) and their evaluation on samples.

use crate::measure::stats::quantile_sorted;
pub use crate::report::schema::qps::{Bound, Stat};

impl Bound {
    /// The statistic of `sorted_ms` (ascending), numpy-linear percentiles.
    pub fn value(&self, sorted_ms: &[f64]) -> Option<f64> {
        if sorted_ms.is_empty() {
            return None;
        }
        match self.stat {
            Stat::Avg => Some(sorted_ms.iter().sum::<f64>() / sorted_ms.len() as f64),
            Stat::Max => sorted_ms.last().copied(),
            Stat::Quantile(q) => quantile_sorted(sorted_ms, q),
        }
    }
}

/// Parses `p99<=50ms,avg<=20ms`.
pub fn parse(s: &str) -> Result<Vec<Bound>, String> {
    let help = "write STAT<=TIME, e.g. p99<=50ms or avg<=100ms,p90<=20ms (STAT: avg, max, p50, p75, p90, p95, p99, p99.9; TIME in us, ms or s)";
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (stat, limit) = part
            .split_once("<=")
            .ok_or_else(|| format!("--slo '{part}': {help}"))?;
        let stat_name = stat.trim().to_ascii_lowercase();
        let st = match stat_name.as_str() {
            "avg" | "mean" => Stat::Avg,
            "max" => Stat::Max,
            p if p.starts_with('p') => {
                let v: f64 = p[1..]
                    .parse()
                    .map_err(|_| format!("--slo '{part}': '{stat}' is not a percentile; {help}"))?;
                if !(0.0 < v && v < 100.0) {
                    return Err(format!("--slo '{part}': a percentile lies in (0, 100)"));
                }
                Stat::Quantile(v / 100.0)
            }
            _ => {
                return Err(format!(
                    "--slo '{part}': unknown statistic '{stat}'; {help}"
                ));
            }
        };
        let limit = limit.trim();
        let (num, scale) = if let Some(n) = limit.strip_suffix("ms") {
            (n, 1.0)
        } else if let Some(n) = limit.strip_suffix("us") {
            (n, 1e-3)
        } else if let Some(n) = limit.strip_suffix('s') {
            (n, 1e3)
        } else {
            return Err(format!("--slo '{part}': the time needs a unit; {help}"));
        };
        let v: f64 = num
            .trim()
            .parse()
            .map_err(|_| format!("--slo '{part}': '{limit}' is not a time; {help}"))?;
        if !(v > 0.0 && v.is_finite()) {
            return Err(format!("--slo '{part}': the bound must be positive"));
        }
        out.push(Bound {
            stat_name,
            stat: st,
            limit_ms: v * scale,
        });
    }
    if out.is_empty() {
        return Err(format!("--slo is empty; {help}"));
    }
    Ok(out)
}

/// The samples a step needs so that its highest bounded percentile is supported (MLPerf's
/// rule at 99 % confidence; 64 for averages and maxima, as for P90).
pub fn samples_needed(bounds: &[Bound]) -> usize {
    bounds
        .iter()
        .map(|b| match b.stat {
            Stat::Quantile(q) if q > 0.9 => crate::measure::stats::min_samples(q, 0.99),
            _ => crate::measure::stats::min_samples(0.9, 0.99),
        })
        .max()
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bounds() {
        let b = parse("p99<=50ms, avg<=2s,p99.9<=500us").unwrap();
        assert_eq!(b[0].stat, Stat::Quantile(0.99));
        assert_eq!(b[0].limit_ms, 50.0);
        assert_eq!(b[1].stat, Stat::Avg);
        assert_eq!(b[1].limit_ms, 2000.0);
        assert!((b[2].limit_ms - 0.5).abs() < 1e-12);
        assert!(parse("p99<50ms").unwrap_err().contains("STAT<=TIME"));
        assert!(parse("p99<=50").unwrap_err().contains("unit"));
        assert!(parse("p100<=5ms").is_err());
        assert!(parse("").is_err());
        assert_eq!(samples_needed(&parse("p99<=1ms").unwrap()), 662);
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(parse("avg<=1ms").unwrap()[0].value(&v), Some(2.5));
        assert_eq!(parse("p50<=1ms").unwrap()[0].value(&v), Some(2.5));
    }
}
