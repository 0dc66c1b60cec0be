//! Value parsers for flags: every duration, rate, share and count is checked when the
//! command line is read, so NaN, infinities, negative and absurd values never reach the
//! library (`--duration=NaN` used to run forever). Each error names the value and the range.

/// The longest duration any flag accepts, s (one week).
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// The largest count (runs, warm-ups, requests) any flag accepts.
pub const MAX_COUNT: usize = 1_000_000_000;

fn number(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() {
        return Err(format!("'{s}' is not a finite number"));
    }
    Ok(v)
}

/// A duration in seconds, 0 to one week.
pub fn seconds(s: &str) -> Result<f64, String> {
    let v = number(s)?;
    if !(0.0..=MAX_SECONDS).contains(&v) {
        return Err(format!("{v} s is outside 0 to {MAX_SECONDS} s (one week)"));
    }
    Ok(v)
}

/// A duration in seconds, above 0 and at most one week.
pub fn positive_seconds(s: &str) -> Result<f64, String> {
    let v = seconds(s)?;
    if v <= 0.0 {
        return Err(format!("{v} s must be above 0"));
    }
    Ok(v)
}

/// A duration in milliseconds, 0 to one week.
pub fn millis(s: &str) -> Result<f64, String> {
    let v = number(s)?;
    if !(0.0..=MAX_SECONDS * 1e3).contains(&v) {
        return Err(format!("{v} ms is outside 0 to one week"));
    }
    Ok(v)
}

/// A share in [0, 1] (0.05 = 5 %).
pub fn fraction(s: &str) -> Result<f64, String> {
    let v = number(s)?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{v} is outside 0 to 1 (0.05 = 5 %)"));
    }
    Ok(v)
}

/// A non-negative ratio (a coefficient of variation, a spread), at most 100.
pub fn ratio(s: &str) -> Result<f64, String> {
    let v = number(s)?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("{v} is outside 0 to 100"));
    }
    Ok(v)
}

/// A percentile in (0, 100).
pub fn percentile(s: &str) -> Result<f64, String> {
    let v = number(s)?;
    if !(v > 0.0 && v < 100.0) {
        return Err(format!("{v} is not a percentile in (0, 100)"));
    }
    Ok(v)
}

/// A positive rate (req/s), at most 10^9.
pub fn rate(s: &str) -> Result<f64, String> {
    let v = number(s)?;
    if !(v > 0.0 && v <= 1e9) {
        return Err(format!("{v} is not a rate in (0, 1e9] per second"));
    }
    Ok(v)
}

/// A count from 0 to [`MAX_COUNT`].
pub fn count(s: &str) -> Result<usize, String> {
    let v: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number >= 0"))?;
    if v > MAX_COUNT {
        return Err(format!("{v} is above the limit {MAX_COUNT}"));
    }
    Ok(v)
}

/// A count from 1 to [`MAX_COUNT`].
pub fn positive_count(s: &str) -> Result<usize, String> {
    let v = count(s)?;
    if v == 0 {
        return Err("0: at least 1 is needed".into());
    }
    Ok(v)
}

/// `--pipelined K`: 1 to [`crate::measure::pipelined::MAX_WORKERS`].
pub fn pipeline_workers(s: &str) -> Result<usize, String> {
    bounded_count(
        s,
        crate::measure::pipelined::MAX_WORKERS,
        "decode/pre-process threads",
    )
}

/// `--instances M`: 1 to [`crate::measure::pipelined::MAX_INSTANCES`].
pub fn instances(s: &str) -> Result<usize, String> {
    bounded_count(
        s,
        crate::measure::pipelined::MAX_INSTANCES,
        "model instances (each holds the whole model)",
    )
}

fn bounded_count(s: &str, max: usize, what: &str) -> Result<usize, String> {
    let v = positive_count(s)?;
    if v > max {
        return Err(format!("{v} {what}: at most {max}"));
    }
    Ok(v)
}

/// Megabytes (10^6 bytes), above 0 and at most 1 TB.
pub fn megabytes(s: &str) -> Result<f64, String> {
    let v = number(s)?;
    if !(v > 0.0 && v <= 1e6) {
        return Err(format!("{v} MB is outside (0, 1e6] MB"));
    }
    Ok(v)
}

/// A learning rate in (0, 10].
pub fn learning_rate(s: &str) -> Result<f64, String> {
    let v = number(s)?;
    if !(v > 0.0 && v <= 10.0) {
        return Err(format!("{v} is not a learning rate in (0, 10]"));
    }
    Ok(v)
}

/// A training target, `METRIC<=X` or `METRIC>=X` (`mae_mw<=30`, `eval_accuracy>=0.9`).
pub fn target(s: &str) -> Result<crate::report::schema::train::Target, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_finite_negative_and_absurd() {
        for bad in ["NaN", "nan", "inf", "-inf", "-1", "1e300", "x", ""] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(seconds("0"), Ok(0.0));
        assert_eq!(seconds("2.5"), Ok(2.5));
        assert!(positive_seconds("0").is_err());
        assert!(fraction("1.5").is_err() && fraction("-0.1").is_err());
        assert!(percentile("100").is_err() && percentile("0").is_err());
        assert_eq!(percentile("99.9"), Ok(99.9));
        assert!(count("1000000000000000000").is_err() && count("-3").is_err());
        assert!(positive_count("0").is_err());
        assert!(rate("0").is_err() && rate("NaN").is_err());
        assert!(megabytes("NaN").is_err() && megabytes("0").is_err());
    }

    #[test]
    fn targets_and_learning_rates() {
        let t = target("mae_mw<=30.5").unwrap();
        assert_eq!(
            (t.metric.as_str(), t.op.as_str(), t.value),
            ("mae_mw", "<=", 30.5)
        );
        assert_eq!(target("eval_accuracy>=0.9").unwrap().op, ">=");
        for bad in ["mae_mw<30", "<=3", "a b<=1", "x>=NaN"] {
            assert!(target(bad).is_err(), "{bad}");
        }
        assert!(learning_rate("0").is_err() && learning_rate("1e-3").is_ok());
    }
}
