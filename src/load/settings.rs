//! Checks of the numbers a load run is given: every duration, rate, count and size is
//! checked against its allowed range before anything runs, and a bad one is rejected with
//! one message naming the flag, the value and the range (`--timeout -1: seconds in (0, 86400]`),
//! instead of a panic deeper in (`Duration::from_secs_f64(-1.0)`). `qps` and `llm` share them.

use std::time::Duration;

/// A setting that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    /// A number outside its allowed range (or NaN, or infinite).
    #[error("{flag} {value}: {what} in {range}")]
    OutOfRange {
        /// The flag (or profile key) as the user wrote it, e.g. `--timeout`.
        flag: String,
        value: String,
        /// What the value is, e.g. "seconds".
        what: &'static str,
        /// The allowed range, e.g. `(0, 86400]`.
        range: String,
    },
    /// Anything else wrong with a setting; the message names the flag.
    #[error("{0}")]
    Invalid(String),
}

impl SettingsError {
    pub fn range(flag: &str, value: impl ToString, what: &'static str, range: String) -> Self {
        SettingsError::OutOfRange {
            flag: flag.to_string(),
            value: value.to_string(),
            what,
            range,
        }
    }
}

/// Whether the lower end of a range is included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Low {
    /// `[lo, ...`
    Closed,
    /// `(lo, ...` (for a duration: must be positive)
    Open,
}

/// A real number in `lo..=hi` (or `(lo, hi]`), finite.
pub fn real(
    flag: &str,
    v: f64,
    low: Low,
    lo: f64,
    hi: f64,
    what: &'static str,
) -> Result<f64, SettingsError> {
    let above = match low {
        Low::Closed => v >= lo,
        Low::Open => v > lo,
    };
    if v.is_finite() && above && v <= hi {
        return Ok(v);
    }
    let open = if low == Low::Open { '(' } else { '[' };
    Err(SettingsError::range(
        flag,
        number(v),
        what,
        format!("{open}{lo}, {hi}]"),
    ))
}

/// A number as a message shows it: `1e300` rather than 301 digits.
fn number(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(1e-6..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// A duration given in seconds.
pub fn seconds(flag: &str, v: f64, low: Low, hi: f64) -> Result<Duration, SettingsError> {
    real(flag, v, low, 0.0, hi, "seconds").map(Duration::from_secs_f64)
}

/// A count in `lo..=hi`.
pub fn count(
    flag: &str,
    v: usize,
    lo: usize,
    hi: usize,
    what: &'static str,
) -> Result<usize, SettingsError> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(SettingsError::range(flag, v, what, format!("[{lo}, {hi}]")))
    }
}

/// The longest any single duration setting may be: one day.
pub const MAX_SECONDS: f64 = 86_400.0;
/// The most connections (or requests in flight) a client opens.
pub const MAX_CONNECTIONS: usize = 100_000;
/// The largest response or line cap, bytes (4 GiB).
pub const MAX_CAP_BYTES: usize = 1 << 32;

/// A byte cap in [1 KiB, 4 GiB] (a smaller one would cut ordinary responses).
pub fn cap_bytes(flag: &str, v: usize) -> Result<usize, SettingsError> {
    count(flag, v, 1024, MAX_CAP_BYTES, "bytes")
}

/// `url` without its trailing `/`, and `url + path` as a URI; http(s) only.
pub fn address(url: &str, path: &str) -> Result<(String, hyper::Uri), SettingsError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(SettingsError::Invalid(format!(
            "--url '{url}' must start with http:// or https://"
        )));
    }
    let base = url.trim_end_matches('/').to_string();
    let text = format!("{base}{path}");
    let uri: hyper::Uri = text.parse().map_err(|_| {
        SettingsError::Invalid(format!(
            "--url '{url}' does not make a valid address ({text})"
        ))
    })?;
    Ok((base, uri))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_numbers_name_the_flag_value_and_range() {
        for v in [-1.0, 0.0, f64::NAN, f64::INFINITY, 1e300] {
            let e = seconds("--timeout", v, Low::Open, MAX_SECONDS).unwrap_err();
            assert!(matches!(&e, SettingsError::OutOfRange { flag, .. } if flag == "--timeout"));
            assert!(e.to_string().starts_with("--timeout "), "{e}");
            assert!(e.to_string().ends_with("seconds in (0, 86400]"), "{e}");
        }
        assert_eq!(
            seconds("--warmup", f64::NAN, Low::Closed, 10.0)
                .unwrap_err()
                .to_string(),
            "--warmup NaN: seconds in [0, 10]"
        );
        assert_eq!(
            seconds("--warmup", 0.0, Low::Closed, 10.0).unwrap(),
            Duration::ZERO
        );
        assert_eq!(
            seconds("--timeout", 1.5, Low::Open, 10.0).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            count("--concurrency", 0, 1, 1000, "requests in flight")
                .unwrap_err()
                .to_string(),
            "--concurrency 0: requests in flight in [1, 1000]"
        );
        assert!(cap_bytes("--max-event-bytes", 10).is_err());
    }
}
