//! The measurement loop: a run policy (warm-up, minimum runs and duration, idle gaps), one
//! timed sample at a time, and the validity rules that say whether the result can be
//! trusted.
//!
//! Each sample is timed by the harness on the host's monotonic clock around the caller's
//! closure, which synchronises the device before it returns (so the time includes the
//! copies and the compute, §7.2.3). The closure also fills its per-stage times. The hot loop
//! allocates nothing of its own: samples go into a vector reserved up front.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::stats::{Summary, min_samples};
use crate::report::schema::Verdict;
pub use crate::report::schema::bench::{MAX_STAGES, Policy, Rule, Sample, Validity};

/// What the loop measured.
#[derive(Debug, Clone)]
pub struct Measured {
    pub warmup_samples: usize,
    pub warmup_ms: f64,
    pub samples: Vec<Sample>,
    /// Wall time from the first steady sample's start to the last one's end, s.
    pub wall_s: f64,
    /// The UNIX time of the steady window's start, ms: the origin of every sample's
    /// `start_ms` (an offset on the monotonic clock), so runs and ranks can be aligned.
    pub origin_unix_ms: f64,
    /// Ctrl-C (or another stop request) ended the run early.
    pub interrupted: bool,
    /// The sample that failed, when one did.
    pub error: Option<String>,
}

/// Runs the policy: warm-up, then timed samples until both minimums are met, `stop` is set
/// or a sample fails. `one(i, stages)` runs sample `i` and writes its stage times.
pub fn run<F, E>(
    policy: &Policy,
    one: F,
    stop: &AtomicBool,
    progress: impl FnMut(usize, f64),
) -> Measured
where
    F: FnMut(usize, &mut [f64; MAX_STAGES]) -> Result<(), E>,
    E: std::fmt::Display,
{
    run_windowed(policy, one, stop, progress, || {})
}

/// As [`run`], calling `on_start` right before the first timed sample (after the warm-up):
/// telemetry starts there, so it covers the measured window only.
pub fn run_windowed<F, E>(
    policy: &Policy,
    mut one: F,
    stop: &AtomicBool,
    mut progress: impl FnMut(usize, f64),
    on_start: impl FnOnce(),
) -> Measured
where
    F: FnMut(usize, &mut [f64; MAX_STAGES]) -> Result<(), E>,
    E: std::fmt::Display,
{
    let mut stages = [0.0; MAX_STAGES];
    let interval = Duration::from_secs_f64(policy.interval_ms.max(0.0) / 1e3);
    let mut m = Measured {
        warmup_samples: 0,
        warmup_ms: 0.0,
        samples: Vec::new(),
        wall_s: 0.0,
        origin_unix_ms: 0.0,
        interrupted: false,
        error: None,
    };
    let w0 = Instant::now();
    let mut i = 0usize;
    while (m.warmup_samples < policy.warmup || w0.elapsed().as_secs_f64() < policy.warmup_time_s)
        && !stop.load(Ordering::Relaxed)
    {
        if let Err(e) = one(i, &mut stages) {
            m.error = Some(format!("warm-up sample {i}: {e:#}"));
            return m;
        }
        m.warmup_samples += 1;
        i += 1;
        if !interval.is_zero() {
            std::thread::sleep(interval);
        }
    }
    m.warmup_ms = w0.elapsed().as_secs_f64() * 1e3;
    // Reserve for the whole run so the loop never reallocates: the runs asked for, or the
    // duration at the warm-up's pace (with margin).
    let per = if m.warmup_samples > 0 {
        m.warmup_ms / m.warmup_samples as f64 + policy.interval_ms
    } else {
        1.0
    };
    let by_time = (policy.duration_s * 1e3 / per.max(1e-3) * 1.5) as usize;
    m.samples
        .reserve(policy.runs.max(by_time).clamp(16, 50_000_000));
    on_start();
    let t0 = Instant::now();
    m.origin_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3);
    let mut last_progress = t0;
    let mut sum_ms = 0.0;
    loop {
        let n = m.samples.len();
        if n >= policy.runs && t0.elapsed().as_secs_f64() >= policy.duration_s {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            m.interrupted = true;
            break;
        }
        stages.fill(0.0);
        let s = Instant::now();
        let r = one(i, &mut stages);
        let e = Instant::now();
        if let Err(err) = r {
            m.error = Some(format!("sample {n}: {err:#}"));
            break;
        }
        let total = e.duration_since(s).as_secs_f64() * 1e3;
        m.samples.push(Sample {
            start_ms: s.duration_since(t0).as_secs_f64() * 1e3,
            total_ms: total,
            stages,
        });
        m.wall_s = e.duration_since(t0).as_secs_f64();
        sum_ms += total;
        i += 1;
        if e.duration_since(last_progress) > Duration::from_millis(100) {
            progress(m.samples.len(), sum_ms / m.samples.len() as f64);
            last_progress = e;
        }
        if !interval.is_zero() {
            std::thread::sleep(interval);
        }
    }
    m
}

/// The validity rules over a measurement.
pub fn validity(policy: &Policy, m: &Measured, totals: Option<&Summary>) -> Validity {
    let n = m.samples.len();
    let mut rules = Vec::new();
    let q = policy.percentile;
    let need = min_samples(q, 0.99);
    rules.push(Rule {
        rule: format!("samples for P{}", q * 100.0),
        passed: n >= need,
        detail: format!(
            "{n} samples; P{} needs at least {need} at 99 % confidence (MLPerf early stopping)",
            q * 100.0
        ),
    });
    rules.push(Rule {
        rule: "minimum runs".into(),
        passed: n >= policy.runs,
        detail: format!("{n} of {} runs", policy.runs),
    });
    rules.push(Rule {
        rule: "minimum duration".into(),
        passed: m.wall_s >= policy.duration_s,
        detail: format!("{:.3} s of {} s", m.wall_s, policy.duration_s),
    });
    rules.push(Rule {
        rule: "completed".into(),
        passed: !m.interrupted && m.error.is_none(),
        detail: match (&m.error, m.interrupted) {
            (Some(e), _) => format!("failed: {e}"),
            (None, true) => "interrupted (Ctrl-C)".into(),
            _ => "ran to the end of the policy".into(),
        },
    });
    let cv = totals.map(|s| s.cv()).unwrap_or(f64::NAN);
    rules.push(Rule {
        rule: "coefficient of variation".into(),
        passed: cv <= policy.max_cv,
        detail: format!(
            "stddev/mean of the end-to-end latency {cv:.4} (at most {})",
            policy.max_cv
        ),
    });
    // Stability: five windows of equal count; the medians of the last three agree.
    let (passed, detail) = if n >= 15 {
        let w = n / 5;
        let medians: Vec<f64> = (2..5)
            .map(|k| {
                let mut v: Vec<f64> = m.samples[k * w..(k + 1) * w]
                    .iter()
                    .map(|s| s.total_ms)
                    .collect();
                v.sort_by(f64::total_cmp);
                super::stats::quantile_sorted(&v, 0.5).unwrap_or(f64::NAN)
            })
            .collect();
        let hi = medians.iter().copied().fold(f64::MIN, f64::max);
        let lo = medians.iter().copied().fold(f64::MAX, f64::min);
        let spread = hi / lo - 1.0;
        (
            spread <= policy.stability,
            format!(
                "medians of the last 3 of 5 windows ({w} samples each): {} ms; spread {:.1} % (at most {:.0} %)",
                medians
                    .iter()
                    .map(|v| format!("{v:.3}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                spread * 100.0,
                policy.stability * 100.0
            ),
        )
    } else {
        (
            false,
            format!("{n} samples: at least 15 are needed to compare windows"),
        )
    };
    rules.push(Rule {
        rule: "stable".into(),
        passed,
        detail,
    });
    Validity {
        result: if rules.iter().all(|r| r.passed) {
            Verdict::Valid
        } else {
            Verdict::Invalid
        },
        rules,
    }
}

/// The harness's own cost per sample: the loop around an empty closure, µs (median of
/// `n` samples).
pub fn overhead_us(n: usize) -> f64 {
    let policy = Policy {
        warmup: 100,
        warmup_time_s: 0.0,
        runs: n,
        duration_s: 0.0,
        interval_ms: 0.0,
        percentile: 0.5,
        max_cv: f64::INFINITY,
        stability: f64::INFINITY,
    };
    let stop = AtomicBool::new(false);
    let m = run(
        &policy,
        |_, _| Ok::<(), std::convert::Infallible>(()),
        &stop,
        |_, _| {},
    );
    let mut v: Vec<f64> = m.samples.iter().map(|s| s.total_ms * 1e3).collect();
    v.sort_by(f64::total_cmp);
    super::stats::quantile_sorted(&v, 0.5).unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(runs: usize) -> Policy {
        Policy {
            warmup: 2,
            warmup_time_s: 0.0,
            runs,
            duration_s: 0.0,
            interval_ms: 0.0,
            percentile: 0.9,
            max_cv: 0.5,
            stability: 0.1,
        }
    }

    fn spin(ms: f64) {
        let t = Instant::now();
        while t.elapsed().as_secs_f64() * 1e3 < ms {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn counts_warmup_apart_and_times_samples() {
        let stop = AtomicBool::new(false);
        let mut calls = 0;
        let m = run(
            &policy(20),
            |_, st| {
                calls += 1;
                spin(1.0);
                st[0] = 1.0;
                Ok::<(), &str>(())
            },
            &stop,
            |_, _| {},
        );
        assert_eq!((m.warmup_samples, m.samples.len(), calls), (2, 20, 22));
        assert!(
            m.samples
                .iter()
                .all(|s| s.total_ms >= 1.0 && s.stages[0] == 1.0)
        );
        assert!(
            m.samples
                .windows(2)
                .all(|w| w[1].start_ms >= w[0].start_ms + 1.0)
        );
        assert!(m.wall_s * 1e3 >= 20.0);
    }

    #[test]
    fn duration_and_runs_are_both_minimums() {
        let stop = AtomicBool::new(false);
        let mut p = policy(5);
        p.duration_s = 0.05;
        let m = run(
            &p,
            |_, _| {
                spin(1.0);
                Ok::<(), &str>(())
            },
            &stop,
            |_, _| {},
        );
        // The duration, not the 5 runs, ended it.
        assert!(m.samples.len() > 5, "{}", m.samples.len());
        assert!(m.wall_s >= 0.05);
        let last = m.samples.last().unwrap();
        assert!(last.start_ms < 50.0, "one sample past the duration at most");
    }

    #[test]
    fn validity_rules() {
        let stop = AtomicBool::new(false);
        let m = run(
            &policy(64),
            |_, _| {
                spin(0.2);
                Ok::<(), &str>(())
            },
            &stop,
            |_, _| {},
        );
        let totals: Vec<f64> = m.samples.iter().map(|s| s.total_ms).collect();
        let v = validity(&policy(64), &m, Summary::of(&totals).as_ref());
        let rule = |r: &str| v.rules.iter().find(|x| x.rule == r).unwrap().passed;
        assert!(rule("samples for P90") && rule("minimum runs") && rule("completed"));
        // 63 samples are too few for P90.
        let mut few = m.clone();
        few.samples.truncate(63);
        let v = validity(&policy(63), &few, Summary::of(&totals[..63]).as_ref());
        assert_eq!(v.result, Verdict::Invalid);
        assert!(!v.rules[0].passed);
        // An error stops the run and fails "completed".
        let m = run(
            &policy(10),
            |i, _| {
                if i == 5 { Err("boom") } else { Ok(()) }
            },
            &stop,
            |_, _| {},
        );
        assert_eq!(m.samples.len(), 3);
        assert!(m.error.as_deref().unwrap().contains("boom"));
        // A stop request ends the run, marked interrupted.
        let stop = AtomicBool::new(true);
        let m = run(&policy(10), |_, _| Ok::<(), &str>(()), &stop, |_, _| {});
        assert!(m.interrupted && m.samples.is_empty());
    }

    #[test]
    fn unstable_windows_are_caught() {
        let stop = AtomicBool::new(false);
        // The last fifth is twice as slow.
        let m = run(
            &policy(50),
            |i, _| {
                spin(if i >= 42 { 2.0 } else { 1.0 });
                Ok::<(), &str>(())
            },
            &stop,
            |_, _| {},
        );
        let v = validity(&policy(50), &m, None);
        let st = v.rules.iter().find(|r| r.rule == "stable").unwrap();
        assert!(!st.passed, "{}", st.detail);
    }

    #[test]
    fn overhead_is_small() {
        let us = overhead_us(10_000);
        assert!(us < 50.0, "{us} µs");
    }
}
