//! Forecasting pre- and post-processing: a load series (CSV) → the last window of
//! features, z-score normalised → model → de-normalised load forecast.
//!
//! The series is a CSV with a header: `timestamp` (ISO 8601, `YYYY-MM-DDTHH:MM`), then
//! `load_mw`, `temperature_c`, `humidity_pct`. The model's 8 features per step are load,
//! temperature, humidity, hour of day (sin, cos), day of week (sin, cos) and a weekend
//! flag; each numeric column is normalised with the series' own mean and standard
//! deviation, which also de-normalise the forecast.

use std::path::Path;

use ndarray::{Array3, ArrayD};
use serde::Serialize;

pub const COLUMNS: [&str; 4] = ["timestamp", "load_mw", "temperature_c", "humidity_pct"];

#[derive(Debug, thiserror::Error)]
pub enum SeriesError {
    #[error("cannot read series '{path}': {reason}")]
    Read { path: String, reason: String },
    #[error("series '{path}': {reason}")]
    Invalid { path: String, reason: String },
    /// Fewer rows than the model's window.
    #[error("the series has {rows} rows; the model needs {steps}")]
    TooShort { rows: usize, steps: usize },
}

/// One row of the series.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Minutes since 1970-01-01 00:00 (the timestamp, in its own time zone).
    pub minute: i64,
    pub load: f64,
    pub temperature: f64,
    pub humidity: f64,
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn parse_timestamp(s: &str) -> Option<i64> {
    let (date, time) = s.trim().split_once(['T', ' '])?;
    let mut d = date.split('-').map(|v| v.parse::<i64>().ok());
    let (y, m, dd) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|v| v.parse::<i64>().ok());
    let (hh, mm) = (t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&dd) || hh > 23 || mm > 59 {
        return None;
    }
    Some(days_from_civil(y, m, dd) * 1440 + hh * 60 + mm)
}

/// Reads and validates a series: header, parseable timestamps, no missing values.
pub fn read_series(path: &Path) -> Result<Vec<Row>, SeriesError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| SeriesError::Read {
        path: p.clone(),
        reason: e.to_string(),
    })?;
    parse_series(&bytes, &p)
}

/// Parses and validates a series held in memory; `label` names it in errors.
pub fn parse_series(bytes: &[u8], label: &str) -> Result<Vec<Row>, SeriesError> {
    let p = label.to_string();
    let invalid = |reason: String| SeriesError::Invalid {
        path: p.clone(),
        reason,
    };
    let mut r = csv::Reader::from_reader(bytes);
    let header: Vec<String> = r
        .headers()
        .map_err(|e| invalid(e.to_string()))?
        .iter()
        .map(|s| s.trim().to_string())
        .collect();
    let col = |name: &str| {
        header.iter().position(|h| h == name).ok_or_else(|| {
            invalid(format!(
                "no column '{name}' (the header is {header:?}; expected {COLUMNS:?})"
            ))
        })
    };
    let (ct, cl, ctemp, ch) = (
        col("timestamp")?,
        col("load_mw")?,
        col("temperature_c")?,
        col("humidity_pct")?,
    );
    let mut rows = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let line = i + 2;
        let rec = rec.map_err(|e| invalid(format!("line {line}: {e}")))?;
        let num = |c: usize, name: &str| -> Result<f64, SeriesError> {
            let v = rec.get(c).unwrap_or("").trim();
            if v.is_empty() || v.eq_ignore_ascii_case("nan") {
                return Err(invalid(format!(
                    "line {line}: missing value in column '{name}'; fill or drop the row (the model needs every step)"
                )));
            }
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| {
                    invalid(format!(
                        "line {line}: '{v}' in column '{name}' is not a number"
                    ))
                })
        };
        let ts = rec.get(ct).unwrap_or("");
        let minute = parse_timestamp(ts).ok_or_else(|| {
            invalid(format!(
                "line {line}: timestamp '{ts}' is not YYYY-MM-DDTHH:MM"
            ))
        })?;
        rows.push(Row {
            minute,
            load: num(cl, "load_mw")?,
            temperature: num(ctemp, "temperature_c")?,
            humidity: num(ch, "humidity_pct")?,
        });
    }
    if rows.is_empty() {
        return Err(invalid("no rows".into()));
    }
    check_physical(&rows).map_err(invalid)?;
    check_steps(&rows).map_err(invalid)?;
    Ok(rows)
}

/// The physical range of each column. A value outside it is a unit or parsing mistake
/// (kW for MW, Kelvin for °C, a fraction for a percentage), not a load to forecast, and
/// values near f64's range would overflow the normalisation's sum of squares to infinity.
pub const RANGES: [(&str, f64, f64); 3] = [
    // The largest synchronous grids carry about 1.5 TW; net load may be negative.
    ("load_mw", -1.0e7, 1.0e7),
    ("temperature_c", -100.0, 100.0),
    ("humidity_pct", 0.0, 100.0),
];

fn check_physical(rows: &[Row]) -> Result<(), String> {
    for (i, r) in rows.iter().enumerate() {
        for ((name, lo, hi), v) in RANGES.iter().zip([r.load, r.temperature, r.humidity]) {
            if !(*lo..=*hi).contains(&v) {
                return Err(format!(
                    "line {}: {v} in column '{name}' is outside its physical range [{lo}, {hi}]: check the unit",
                    i + 2
                ));
            }
        }
    }
    Ok(())
}

/// Timestamps must increase by one constant step: the model's window is a run of
/// consecutive steps, and a gap, a duplicate or a reordering would feed it a different
/// history than the timestamps claim.
fn check_steps(rows: &[Row]) -> Result<(), String> {
    let Some(step) = rows.get(1).map(|r| r.minute - rows[0].minute) else {
        return Ok(());
    };
    if step <= 0 {
        return Err(format!(
            "line 3: the timestamp does not come after line 2's ({} minutes): sort the series by time and drop duplicates",
            step
        ));
    }
    for (i, w) in rows.windows(2).enumerate().skip(1) {
        let d = w[1].minute - w[0].minute;
        if d != step {
            let line = i + 3;
            return Err(if d <= 0 {
                format!(
                    "line {line}: the timestamp does not come after line {}'s: sort the series by time and drop duplicates",
                    line - 1
                )
            } else {
                format!(
                    "line {line}: {d} minutes after the previous row, but the series steps by {step} minutes: fill the gap (or resample) so every step is present"
                )
            });
        }
    }
    Ok(())
}

/// Mean and standard deviation of the load, temperature and humidity columns.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Norm {
    pub mean: [f64; 3],
    pub std: [f64; 3],
}

pub fn norm(rows: &[Row]) -> Norm {
    let mut mean = [0.0; 3];
    let mut std = [0.0; 3];
    let cols = |r: &Row| [r.load, r.temperature, r.humidity];
    for r in rows {
        for (m, v) in mean.iter_mut().zip(cols(r)) {
            *m += v;
        }
    }
    for m in &mut mean {
        *m /= rows.len() as f64;
    }
    for r in rows {
        for ((s, m), v) in std.iter_mut().zip(mean).zip(cols(r)) {
            *s += (v - m).powi(2);
        }
    }
    for s in &mut std {
        *s = (*s / rows.len() as f64).sqrt().max(1e-9);
    }
    Norm { mean, std }
}

/// The model input `[1, steps, 8]` from the last `steps` rows.
pub fn window(rows: &[Row], steps: usize, n: &Norm) -> Result<ArrayD<f32>, SeriesError> {
    if rows.len() < steps {
        return Err(SeriesError::TooShort {
            rows: rows.len(),
            steps,
        });
    }
    let w = &rows[rows.len() - steps..];
    let tau = std::f64::consts::TAU;
    let mut a = Array3::<f32>::zeros((1, steps, 8));
    for (i, r) in w.iter().enumerate() {
        let minute_of_day = r.minute.rem_euclid(1440) as f64;
        // 1970-01-01 was a Thursday: day 0 → weekday 3 (Monday = 0).
        let weekday = ((r.minute.div_euclid(1440) + 3).rem_euclid(7)) as f64;
        let f = [
            (r.load - n.mean[0]) / n.std[0],
            (r.temperature - n.mean[1]) / n.std[1],
            (r.humidity - n.mean[2]) / n.std[2],
            (tau * minute_of_day / 1440.0).sin(),
            (tau * minute_of_day / 1440.0).cos(),
            (tau * weekday / 7.0).sin(),
            (tau * weekday / 7.0).cos(),
            if weekday >= 5.0 { 1.0 } else { 0.0 },
        ];
        for (k, v) in f.iter().enumerate() {
            a[[0, i, k]] = *v as f32;
        }
    }
    Ok(a.into_dyn())
}

/// The forecast in MW: the model's normalised values × std + mean of the load.
pub fn denormalise(y: &[f32], n: &Norm) -> Vec<f64> {
    y.iter().map(|&v| v as f64 * n.std[0] + n.mean[0]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days_and_timestamps() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2026, 11, 30), 20_787);
        assert_eq!(parse_timestamp("1970-01-02T01:30"), Some(1440 + 90));
        assert_eq!(parse_timestamp("2026-13-01T00:00"), None);
        assert_eq!(parse_timestamp("garbage"), None);
    }

    #[test]
    fn series_out_of_range_gapped_or_unordered_are_refused() {
        let csv = |rows: &[&str]| {
            let mut s = String::from("timestamp,load_mw,temperature_c,humidity_pct\n");
            for r in rows {
                s.push_str(r);
                s.push('\n');
            }
            parse_series(s.as_bytes(), "s.csv").map_err(|e| e.to_string())
        };
        let ok = ["2026-01-05T00:00,500,3,70", "2026-01-05T00:15,510,3,70"];
        assert_eq!(csv(&ok).unwrap().len(), 2);
        let cases: [(&[&str], &str); 6] = [
            (&["2026-01-05T00:00,1e300,3,70"], "physical range"),
            (&["2026-01-05T00:00,500,300,70"], "'temperature_c'"),
            (&["2026-01-05T00:00,500,3,0.7e3"], "'humidity_pct'"),
            (&[ok[1], ok[0]], "sort the series"),
            (&[ok[0], ok[0]], "drop duplicates"),
            (
                &[ok[0], ok[1], "2026-01-05T01:00,510,3,70"],
                "45 minutes after the previous row, but the series steps by 15",
            ),
        ];
        for (rows, want) in cases {
            let e = csv(rows).unwrap_err();
            assert!(e.contains(want), "{rows:?}: {e}");
        }
    }

    #[test]
    fn window_normalisation_and_denormalisation() {
        // Load 10, 20, 30: mean 20, population std sqrt(200/3).
        let rows: Vec<Row> = (0..3)
            .map(|i| Row {
                minute: i * 15,
                load: 10.0 * (i + 1) as f64,
                temperature: 5.0,
                humidity: 50.0,
            })
            .collect();
        let n = norm(&rows);
        assert_eq!(n.mean[0], 20.0);
        assert!((n.std[0] - (200.0f64 / 3.0).sqrt()).abs() < 1e-12);
        let w = window(&rows, 2, &n).unwrap();
        assert_eq!(w.shape(), &[1, 2, 8]);
        assert!((w[[0, 1, 0]] as f64 - 10.0 / n.std[0]).abs() < 1e-6);
        // Constant columns normalise to 0, not NaN.
        assert_eq!(w[[0, 0, 1]], 0.0);
        // 1970-01-01 was a Thursday: not a weekend.
        assert_eq!(w[[0, 0, 7]], 0.0);
        assert!(window(&rows, 4, &n).is_err());
        let f = denormalise(&[0.0, 1.0], &n);
        assert!((f[0] - 20.0).abs() < 1e-12 && (f[1] - 20.0 - n.std[0]).abs() < 1e-6);
    }
}
