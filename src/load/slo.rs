//! Latency bounds (`p99<=50ms,avg<=20ms`) and their evaluation on samples.

use super::settings::{Setting, SettingsError};
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

const HELP: &str = "write STAT<=TIME, e.g. p99<=50ms or avg<=100ms,p90<=20ms (STAT: avg, max, p50, p75, p90, p95, p99, p99.9; TIME in us, ms or s)";

/// Parses `p99<=50ms,avg<=20ms`; an error names the part that is wrong.
pub fn parse(s: &str) -> Result<Vec<Bound>, SettingsError> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = |why: String| SettingsError::bad(Setting::Slo, part, why);
        let (stat, limit) = part.split_once("<=").ok_or_else(|| bad(HELP.into()))?;
        let stat_name = stat.trim().to_ascii_lowercase();
        let st = match stat_name.as_str() {
            "avg" | "mean" => Stat::Avg,
            "max" => Stat::Max,
            p if p.starts_with('p') => {
                let v: f64 = p[1..]
                    .parse()
                    .map_err(|_| bad(format!("'{stat}' is not a percentile; {HELP}")))?;
                if !(0.0 < v && v < 100.0) {
                    return Err(bad("a percentile lies in (0, 100)".into()));
                }
                Stat::Quantile(v / 100.0)
            }
            _ => return Err(bad(format!("unknown statistic '{stat}'; {HELP}"))),
        };
        out.push(Bound {
            stat_name,
            stat: st,
            limit_ms: time_ms(part, limit)?,
        });
    }
    if out.is_empty() {
        return Err(SettingsError::says(
            Setting::Slo,
            format!("is empty; {HELP}"),
        ));
    }
    Ok(out)
}

/// The time `limit` (`50ms`, `500us`, `2s`) of bound `part`, in ms: positive and finite.
pub fn time_ms(part: &str, limit: &str) -> Result<f64, SettingsError> {
    let bad = |why: String| SettingsError::bad(Setting::Slo, part, why);
    let limit = limit.trim();
    let (num, scale) = if let Some(n) = limit.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = limit.strip_suffix("us") {
        (n, 1e-3)
    } else if let Some(n) = limit.strip_suffix('s') {
        (n, 1e3)
    } else {
        return Err(bad(format!("the time needs a unit; {HELP}")));
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| bad(format!("'{limit}' is not a time; {HELP}")))?;
    if !(v > 0.0 && v.is_finite()) {
        return Err(bad("the bound must be positive".into()));
    }
    Ok(v * scale)
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
        let e = parse("p99<50ms").unwrap_err();
        assert_eq!(e.setting, Setting::Slo);
        assert!(
            e.to_string()
                .starts_with("slo 'p99<50ms': write STAT<=TIME"),
            "{e}"
        );
        assert!(parse("p99<=50").unwrap_err().to_string().contains("unit"));
        assert!(parse("p100<=5ms").is_err());
        assert!(parse("").is_err());
        assert_eq!(samples_needed(&parse("p99<=1ms").unwrap()), 662);
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(parse("avg<=1ms").unwrap()[0].value(&v), Some(2.5));
        assert_eq!(parse("p50<=1ms").unwrap()[0].value(&v), Some(2.5));
    }
}
