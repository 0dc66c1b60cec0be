//! The clocks of a training (§7.1.3): the process's age (Te − Ts seen from outside the
//! loop), per-epoch windows on the sampler's time base, the telemetry inside each window
//! (§7.1.4 utilization, §7.1.7 energy), and MLPerf's olympic mean. Pure functions over
//! recorded data, except [`process_age_s`].

use crate::device::telemetry::{self, Kind, Recording, SensorStatus};
use crate::report::schema::train::{EpochUtilization, Measured};

/// Seconds since this process started, from `/proc/self/stat` (field 22, clock ticks after
/// boot) and `/proc/uptime`: the total training time of a built-in workload includes
/// everything from the launch, not only the loop. `None` off Linux.
pub fn process_age_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    age_from(&stat, &uptime)
}

/// USER_HZ: /proc reports times in 1/100 s on every architecture Linux supports.
const USER_HZ: f64 = 100.0;

fn age_from(stat: &str, uptime: &str) -> Option<f64> {
    // The command name may contain spaces and parentheses: fields count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let start_ticks: f64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let up: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    Some((up - start_ticks / USER_HZ).max(0.0))
}

/// An epoch's window on the sampler's clock, ms from the sampler's first tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start_ms: f64,
    pub end_ms: f64,
}

/// The ticks of `r` inside `w` (a tick's utilization covers the interval before it, so a
/// tick belongs to the epoch when it falls in (start, end]), re-based to the window start,
/// with a first tick at the start so counters and trapezoids have a baseline.
pub fn slice(r: &Recording, w: Window) -> Recording {
    let mut ticks: Vec<telemetry::Tick> = Vec::new();
    if let Some(before) = r.ticks.iter().rev().find(|t| t.t_ms <= w.start_ms) {
        let mut b = before.clone();
        // The baseline's own utilization covers time before the epoch.
        for (v, c) in b.values.iter_mut().zip(&r.channels) {
            if c.kind == Kind::Utilization {
                *v = f64::NAN;
            }
        }
        b.t_ms = 0.0;
        ticks.push(b);
    }
    for t in r
        .ticks
        .iter()
        .filter(|t| t.t_ms > w.start_ms && t.t_ms <= w.end_ms)
    {
        let mut t = t.clone();
        t.t_ms -= w.start_ms;
        ticks.push(t);
    }
    Recording {
        interval_ms: r.interval_ms,
        channels: r.channels.clone(),
        ticks,
        gaps: Vec::new(),
        // Failures that overlap the window, re-based to its start.
        failures: r
            .failures
            .iter()
            .filter(|f| f.last_at_ms > w.start_ms && f.first_at_ms <= w.end_ms)
            .map(|f| telemetry::ReadFailure {
                first_at_ms: (f.first_at_ms - w.start_ms).max(0.0),
                last_at_ms: (f.last_at_ms.min(w.end_ms) - w.start_ms).max(0.0),
                ..f.clone()
            })
            .collect(),
    }
}

/// The utilization channel an epoch is summarised on: the accelerator's busy % when there
/// is one (GPU, NPU), else the whole CPU's.
pub fn utilization_channel(r: &Recording, prefer_cpu: bool) -> Option<String> {
    let util = |pred: &dyn Fn(&str) -> bool| {
        r.channels
            .iter()
            .find(|c| c.kind == Kind::Utilization && pred(&c.name))
            .map(|c| c.name.clone())
    };
    if !prefer_cpu && let Some(c) = util(&|n| n.starts_with("gpu") || n.starts_with("npu")) {
        return Some(c);
    }
    util(&|n| n == "cpu.util_pct")
}

/// Utilization and energy inside one epoch.
pub struct EpochTelemetry {
    pub utilization: EpochUtilization,
    pub energy_j: Measured,
    pub peak_power_w: Option<f64>,
}

/// The epoch's utilization samples on `channel` and its energy (counter or trapezoid of
/// the devices' power; summed over devices when several report).
pub fn epoch_telemetry(
    r: Option<&Recording>,
    w: Window,
    channel: Option<&str>,
    sensors: &[SensorStatus],
    samples: u64,
) -> EpochTelemetry {
    let Some(r) = r else {
        return EpochTelemetry {
            utilization: EpochUtilization {
                mean: Measured::na("telemetry is off (sample_ms 0)"),
                max: Measured::na("telemetry is off (sample_ms 0)"),
                n: 0,
            },
            energy_j: Measured::na("telemetry is off (sample_ms 0)"),
            peak_power_w: None,
        };
    };
    let sub = slice(r, w);
    let s = telemetry::summarise(&sub, sensors.to_vec(), samples, 0.0);
    let ch = channel.and_then(|c| s.channels.iter().find(|x| x.name == c));
    let why = "no utilization sample inside the epoch (shorter than the interval?)";
    let utilization = match ch {
        Some(c) => EpochUtilization {
            mean: Measured::of(c.mean, why),
            max: Measured::of(c.max, why),
            n: c.samples,
        },
        None => EpochUtilization {
            mean: Measured::na("no utilization sensor"),
            max: Measured::na("no utilization sensor"),
            n: 0,
        },
    };
    let energy_j = if s.energy.is_empty() {
        Measured::na(
            s.energy_unavailable
                .clone()
                .unwrap_or_else(|| "n/a: no energy inside the epoch".into())
                .trim_start_matches("n/a: ")
                .to_string(),
        )
    } else {
        Measured::Value(s.energy.iter().map(|e| e.joules).sum())
    };
    let peak_power_w = s
        .energy
        .iter()
        .filter_map(|e| e.peak_power_w)
        .reduce(f64::max);
    EpochTelemetry {
        utilization,
        energy_j,
        peak_power_w,
    }
}

/// MLPerf's olympic mean: drop the fastest and the slowest, average the rest (≥ 3 runs).
pub fn olympic_mean(xs: &[f64]) -> Option<f64> {
    if xs.len() < 3 || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = &v[1..v.len() - 1];
    Some(mid.iter().sum::<f64>() / mid.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::telemetry::{Channel, Tick};

    #[test]
    fn process_age_from_proc_files() {
        // Field 22 (starttime) = 1000 ticks = 10 s after boot; uptime 12.5 s.
        let stat = "42 (a b) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 1000 20";
        assert_eq!(age_from(stat, "12.50 3.0"), Some(2.5));
        assert!(process_age_s().is_some_and(|a| (0.0..3600.0).contains(&a)));
    }

    #[test]
    fn olympic_mean_drops_the_extremes() {
        assert_eq!(olympic_mean(&[1.0, 10.0, 4.0, 6.0]), Some(5.0));
        assert_eq!(olympic_mean(&[1.0, 2.0]), None);
        assert_eq!(olympic_mean(&[1.0, 2.0, f64::INFINITY]), None);
    }

    #[test]
    fn epoch_slices_count_one_sample_per_second() {
        let r = Recording {
            interval_ms: 1000.0,
            channels: vec![Channel {
                name: "cpu.util_pct".into(),
                kind: Kind::Utilization,
                device: "cpu".into(),
                definition: String::new(),
            }],
            ticks: (0..=10)
                .map(|k| Tick {
                    t_ms: k as f64 * 1000.0,
                    values: vec![if k == 0 { f64::NAN } else { 10.0 * k as f64 }],
                })
                .collect(),
            gaps: vec![],
            failures: vec![],
        };
        // Epoch from 2.5 s to 6.2 s: ticks 3, 4, 5, 6 (utilizations 30..60).
        let t = epoch_telemetry(
            Some(&r),
            Window {
                start_ms: 2500.0,
                end_ms: 6200.0,
            },
            Some("cpu.util_pct"),
            &[],
            100,
        );
        assert_eq!(t.utilization.n, 4);
        assert_eq!(t.utilization.mean, Measured::Value(45.0));
        assert_eq!(t.utilization.max, Measured::Value(60.0));
        assert!(matches!(t.energy_j, Measured::Missing(_)));
        assert_eq!(
            utilization_channel(&r, false).as_deref(),
            Some("cpu.util_pct")
        );
    }
}
