//! What the device emulators share: fault injection by symbol name and call count, ramps
//! that make power and utilization checkable, and the spin-wait that makes an emulated
//! latency exact to microseconds.
//!
//! Every emulator reads its own variables (`ACL_FAKE_*`, `DCMI_FAKE_*`, `NVML_FAKE_*`); this
//! file only parses them. Nothing here is acceval's code: the emulators stand in for vendor
//! libraries, and acceval loads them as it loads those.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One rule of `<PREFIX>_FAIL=SYMBOL:CODE[@N][,...]`: the N-th call of SYMBOL (counted from
/// 1 in this process) returns CODE; without `@N`, every call from the first does.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub symbol: String,
    pub code: i64,
    pub nth: Option<u64>,
}

/// Parses a fault list; a malformed entry is reported on stderr and ignored (a stand-in
/// must not abort its host process over its own configuration).
pub fn parse_rules(spec: &str) -> Vec<Rule> {
    let mut rules = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let parsed = (|| {
            let (symbol, rest) = part.split_once(':')?;
            let (code, nth) = match rest.split_once('@') {
                Some((c, n)) => (c, Some(n.trim().parse::<u64>().ok()?)),
                None => (rest, None),
            };
            Some(Rule {
                symbol: symbol.trim().to_string(),
                code: code.trim().parse::<i64>().ok()?,
                nth,
            })
        })();
        match parsed {
            Some(r) => rules.push(r),
            None => eprintln!("emulator: ignoring fault rule '{part}' (SYMBOL:CODE[@N])"),
        }
    }
    rules
}

/// The faults of one emulator and the call count of every symbol.
pub struct Faults {
    rules: Vec<Rule>,
    calls: Mutex<HashMap<&'static str, u64>>,
}

impl Faults {
    /// The rules in variable `var`.
    pub fn from_env(var: &str) -> Faults {
        Faults {
            rules: std::env::var(var)
                .map(|s| parse_rules(&s))
                .unwrap_or_default(),
            calls: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a call of `symbol`; the code to fail it with, and which call it was.
    pub fn check(&self, symbol: &'static str) -> Option<(i64, u64)> {
        let n = {
            let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
            let c = calls.entry(symbol).or_insert(0);
            *c += 1;
            *c
        };
        self.rules
            .iter()
            .find(|r| r.symbol == symbol && r.nth.is_none_or(|k| k == n))
            .map(|r| (r.code, n))
    }

    /// How many times each symbol was called so far.
    pub fn calls(&self) -> std::collections::BTreeMap<String, u64> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }
}

/// A value that rises linearly from `base` by `slope` per second of UNIX time since `t0_s`,
/// held within [`min`, `max`]: the emulators' power and utilization. Anchored to UNIX time so
/// that a test can integrate it over a window it reads from acceval's report.
#[derive(Debug, Clone, Copy)]
pub struct Ramp {
    pub base: f64,
    pub slope: f64,
    pub t0_s: f64,
    pub min: f64,
    pub max: f64,
}

/// Now, in seconds since the UNIX epoch.
pub fn unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Ramp {
    /// `<prefix>_BASE`, `_SLOPE`, `_MAX` with defaults; the origin is `<T0_VAR>` (UNIX s) or
    /// the moment this is called.
    pub fn from_env(prefix: &str, t0_var: &str, base: f64, slope: f64, max: f64) -> Ramp {
        let f = |k: &str, d: f64| {
            std::env::var(format!("{prefix}_{k}"))
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(d)
        };
        Ramp {
            base: f("BASE", base),
            slope: f("SLOPE", slope),
            t0_s: std::env::var(t0_var)
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or_else(unix_s),
            min: 0.0,
            max: f("MAX", max),
        }
    }

    /// The value at UNIX time `t_s`.
    pub fn at(&self, t_s: f64) -> f64 {
        (self.base + self.slope * (t_s - self.t0_s)).clamp(self.min, self.max)
    }

    /// The value now.
    pub fn now(&self) -> f64 {
        self.at(unix_s())
    }

    /// The exact integral from `a` to `b` (UNIX s), for the counters (the clamp at `max` and
    /// `min` included).
    pub fn integral(&self, a: f64, b: f64) -> f64 {
        if b <= a {
            return 0.0;
        }
        if self.slope == 0.0 {
            return self.at(a) * (b - a);
        }
        // Where the line crosses the bounds, then piecewise.
        let cross = |v: f64| self.t0_s + (v - self.base) / self.slope;
        let (lo, hi) = if self.slope > 0.0 {
            (cross(self.min), cross(self.max))
        } else {
            (cross(self.max), cross(self.min))
        };
        let mut pts = vec![a, b];
        for t in [lo, hi] {
            if t > a && t < b {
                pts.push(t);
            }
        }
        pts.sort_by(f64::total_cmp);
        pts.windows(2)
            .map(|w| (w[1] - w[0]) * (self.at(w[0]) + self.at(w[1])) / 2.0)
            .sum()
    }
}

/// Waits `us` microseconds on the monotonic clock (spinning, so the delay is exact; a sleep
/// would add the scheduler's slack).
pub fn spin_us(us: u64) {
    if us == 0 {
        return;
    }
    let end = Instant::now() + Duration::from_micros(us);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// A `u64` environment variable, or `default`.
pub fn env_u64(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Writes `text` to `path` atomically (temp file + rename), ignoring failures: stats are for
/// tests, and an emulator must not fail its host over them.
pub fn write_file(path: &str, text: &str) {
    let tmp = format!("{path}.tmp.{}", std::process::id());
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// Copies `s` into a C buffer of `len` bytes, NUL-terminated and truncated to fit.
///
/// # Safety
/// `buf` must be valid for `len` bytes.
pub unsafe fn copy_cstr(s: &str, buf: *mut std::ffi::c_char, len: usize) {
    if buf.is_null() || len == 0 {
        return;
    }
    let n = s.len().min(len - 1);
    // SAFETY: the caller guarantees `len` bytes at `buf`; n + 1 <= len.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_and_ramps() {
        let r = parse_rules("aclmdlExecute:507011@3, aclrtMalloc:207001,bad");
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].nth, Some(3));
        assert_eq!(r[1].nth, None);
        let ramp = Ramp {
            base: 10.0,
            slope: 2.0,
            t0_s: 100.0,
            min: 0.0,
            max: 20.0,
        };
        assert_eq!(ramp.at(103.0), 16.0);
        // 100..105 linear (10 -> 20), then flat at 20 until 107.
        assert!((ramp.integral(100.0, 107.0) - (75.0 + 40.0)).abs() < 1e-9);
    }
}
