//! Telemetry (§7.1.4, §7.1.6, §7.1.7, §7.2.6): one file per sensor, a sampler thread that
//! reads them at a fixed interval strictly inside the measured window, and the summary of a
//! recording (means, maxima, energy per device).
//!
//! Each sensor says whether it is available, or "n/a: <reason>"; a figure that could not
//! be measured is never reported as 0. Sensors give named channels of one kind each:
//! utilization (%), power (W), energy (a cumulative counter, J), memory (MB), clock (MHz),
//! temperature (°C). Energy over the window comes from a counter when the device has one
//! (NVML, RAPL), else from the trapezoid rule over its power samples.
//!
//! To add a sensor: a file here implementing [`Sensor`], and one line in [`probe`].

pub mod dcmi;
pub mod ipmi;
pub mod nvml;
pub mod procfs;
pub mod ptdaemon;
pub mod rapl;
pub mod sampler;

use std::path::{Path, PathBuf};

pub use crate::device::ascend::{DCMI_UTIL_AICORE, DCMI_UTIL_HBM, dcmi_power_w};
pub use crate::report::schema::telemetry::{
    Channel, ChannelSummary, DeviceNa, EnergyFigure, EnergyMethod, Gap, Kind, ReadFailure,
    Recording, SensorStatus, State, TelemetrySummary, Tick,
};
pub use dcmi::Dcmi;
pub use ipmi::{Ipmi, parse_ipmi_power};
pub use nvml::Nvml;
pub use procfs::{
    CpuStat, ProcessStat, parse_proc_stat, parse_self_stat, parse_vm_rss_mb, util_pct,
};
pub use ptdaemon::{Ptd, parse_ptd_watts};
pub use rapl::{Rapl, RaplCounter};
pub use sampler::{Sampler, start};

/// A source of channels.
pub trait Sensor: Send {
    fn name(&self) -> String;
    fn channels(&self) -> Vec<Channel>;
    /// Writes the current value of each channel (NaN when a read failed).
    fn read(&mut self, out: &mut [f64]);
    /// Why the last read of channel `i` (this sensor's numbering) failed, when it did; the
    /// sampler records it beside the NaN.
    fn failure(&self, _i: usize) -> Option<String> {
        None
    }
}

/// What to probe.
#[derive(Debug, Clone, Default)]
pub struct ProbeOptions {
    pub ptd: Option<String>,
    /// Where RAPL lives (tests point it at recorded files).
    pub powercap: Option<PathBuf>,
}

/// Every sensor of this machine, with the status of each one tried.
pub fn probe(o: &ProbeOptions) -> (Vec<Box<dyn Sensor>>, Vec<SensorStatus>) {
    let mut sensors: Vec<Box<dyn Sensor>> = Vec::new();
    let mut status = Vec::new();
    let mut add = |name: &str, r: Result<Box<dyn Sensor>, String>| match r {
        Ok(s) => {
            status.push(SensorStatus {
                sensor: name.into(),
                status: State::Available(s.name()),
            });
            sensors.push(s);
        }
        Err(e) => status.push(SensorStatus {
            sensor: name.into(),
            status: State::Unavailable(e),
        }),
    };
    add(
        "cpu",
        CpuStat::probe(Path::new("/proc/stat")).map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    add(
        "process",
        ProcessStat::probe().map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    add(
        "nvml",
        Nvml::probe().map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    add(
        "dcmi",
        Dcmi::probe().map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    let powercap = o
        .powercap
        .clone()
        .unwrap_or_else(|| PathBuf::from("/sys/class/powercap"));
    add(
        "rapl",
        Rapl::probe(&powercap).map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    add(
        "ipmi",
        Ipmi::probe().map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    match &o.ptd {
        Some(a) => add(
            "ptdaemon",
            Ptd::connect(a).map(|s| Box::new(s) as Box<dyn Sensor>),
        ),
        None => add("ptdaemon", Err("no --ptd HOST:PORT given".into())),
    }
    (sensors, status)
}

/// Trapezoid rule over (t_s, value) points, skipping NaN values.
pub fn trapezoid(points: &[(f64, f64)]) -> f64 {
    let p: Vec<&(f64, f64)> = points.iter().filter(|(_, v)| v.is_finite()).collect();
    p.windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum()
}

/// The failure record of channel `name`, and how many of its ticks failed.
fn failed_ticks(r: &Recording, i: usize) -> (Option<&ReadFailure>, usize, bool) {
    let Some(f) = r.failures.iter().find(|f| f.channel == r.channels[i].name) else {
        return (None, 0, false);
    };
    let inside =
        |t: &&Tick| t.values[i].is_nan() && t.t_ms >= f.first_at_ms && t.t_ms <= f.last_at_ms;
    let n = r.ticks.iter().filter(inside).count();
    let last = r.ticks.last().is_some_and(|t| inside(&t));
    (Some(f), n, last)
}

/// Mean and max of a channel over the window, and why they are partial or n/a.
fn channel_summary(r: &Recording, i: usize) -> ChannelSummary {
    let c = &r.channels[i];
    let v: Vec<f64> = r
        .ticks
        .iter()
        .map(|t| t.values[i])
        .filter(|v| v.is_finite())
        .collect();
    let (f, failed, last) = failed_ticks(r, i);
    // The reads do not stand for the window when its end was not read (a device lost) or
    // most reads failed.
    let unusable = f.is_some() && (last || failed * 2 > r.ticks.len());
    ChannelSummary {
        name: c.name.clone(),
        kind: c.kind,
        unit: c.kind.unit().to_string(),
        mean: (!v.is_empty() && !unusable).then(|| v.iter().sum::<f64>() / v.len() as f64),
        max: (!unusable)
            .then(|| v.iter().copied().reduce(f64::max))
            .flatten(),
        samples: v.len(),
        definition: c.definition.clone(),
        failure: f.map(|f| {
            format!(
                "{failed} of {} reads failed ({:.1}–{:.1} s into the window): {}{}",
                r.ticks.len(),
                f.first_at_ms / 1e3,
                f.last_at_ms / 1e3,
                f.error,
                if unusable {
                    "; mean and max n/a: the reads that succeeded do not cover the window"
                } else {
                    ""
                }
            )
        }),
    }
}

/// A device's energy over the window: from its counter when the first and last ticks read
/// it, else the trapezoid of its power when every tick read it; otherwise why not.
fn device_energy(
    r: &Recording,
    d: &str,
    inferences: u64,
    input_mb: f64,
) -> Option<Result<EnergyFigure, String>> {
    let idx = |k: Kind| r.channels.iter().position(|c| c.device == d && c.kind == k);
    let (p, e) = (idx(Kind::Power), idx(Kind::Energy));
    if p.is_none() && e.is_none() {
        return None;
    }
    let series = |i: usize| -> Vec<(f64, f64)> {
        r.ticks
            .iter()
            .map(|t| (t.t_ms / 1e3, t.values[i]))
            .collect()
    };
    let why = |i: usize| {
        let (f, n, _) = failed_ticks(r, i);
        match f {
            Some(f) => format!(
                "{}: {n} of {} reads failed: {}",
                r.channels[i].name,
                r.ticks.len(),
                f.error
            ),
            None => format!(
                "{}: fewer than two readings in the window",
                r.channels[i].name
            ),
        }
    };
    let power = p.map(series);
    let power_complete = power
        .as_ref()
        .filter(|s| s.len() >= 2 && s.iter().all(|x| x.1.is_finite()));
    let counter = e.map(series).and_then(|s| {
        let (a, b) = (s.first()?, s.last()?);
        (s.len() >= 2 && a.1.is_finite() && b.1.is_finite()).then_some((b.1 - a.1, b.0 - a.0))
    });
    let (joules, method, secs, integral) = match (counter, power_complete) {
        (Some((j, s)), pw) => (j, EnergyMethod::Counter, s, pw.map(|x| trapezoid(x))),
        (None, Some(pw)) => (
            trapezoid(pw),
            EnergyMethod::Trapezoid,
            pw[pw.len() - 1].0 - pw[0].0,
            None,
        ),
        (None, None) => {
            let mut reasons: Vec<String> = e.into_iter().chain(p).map(why).collect();
            reasons.dedup();
            return Some(Err(format!("n/a: {}", reasons.join("; "))));
        }
    };
    Some(Ok(EnergyFigure {
        device: d.to_string(),
        joules,
        method,
        average_power_w: if secs > 0.0 { joules / secs } else { f64::NAN },
        peak_power_w: power_complete.and_then(|s| s.iter().map(|x| x.1).reduce(f64::max)),
        power_integral_j: integral,
        inferences_per_joule: (joules > 0.0).then(|| inferences as f64 / joules),
        mb_per_joule: (joules > 0.0).then(|| input_mb / joules),
    }))
}

/// Summarises a recording; `inferences` and `input_mb` give the efficiency figures.
pub fn summarise(
    r: &Recording,
    sensors: Vec<SensorStatus>,
    inferences: u64,
    input_mb: f64,
) -> TelemetrySummary {
    let window_s = r.ticks.last().map(|t| t.t_ms / 1e3).unwrap_or(0.0);
    let channels = (0..r.channels.len())
        .filter(|&i| r.channels[i].kind != Kind::Energy)
        .map(|i| channel_summary(r, i))
        .collect();
    let mut devices: Vec<&str> = r.channels.iter().map(|c| c.device.as_str()).collect();
    devices.dedup();
    let (mut energy, mut energy_na) = (Vec::new(), Vec::new());
    for d in devices {
        match device_energy(r, d, inferences, input_mb) {
            Some(Ok(e)) => energy.push(e),
            Some(Err(reason)) => energy_na.push(DeviceNa {
                device: d.to_string(),
                reason,
            }),
            None => {}
        }
    }
    let energy_unavailable = energy.is_empty().then(|| {
        let why: Vec<String> = sensors
            .iter()
            .filter(|s| {
                matches!(
                    s.sensor.as_str(),
                    "nvml" | "dcmi" | "rapl" | "ipmi" | "ptdaemon"
                )
            })
            .map(|s| format!("{}: {}", s.sensor, s.status))
            .chain(
                energy_na
                    .iter()
                    .map(|n| format!("{}: {}", n.device, n.reason)),
            )
            .collect();
        format!("n/a: no power or energy sensor here ({})", why.join("; "))
    });
    TelemetrySummary {
        interval_ms: r.interval_ms,
        window_s,
        ticks: r.ticks.len(),
        gaps: r.gaps.clone(),
        sensors,
        channels,
        energy,
        energy_unavailable,
        energy_na,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_utilization() {
        let a = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\nintr 1\n";
        let b = "cpu  160 0 70 900 50 0 0 0 0 0\ncpu0 80 0 30 400 25 0 0 0 0 0\n";
        let (pa, pb) = (parse_proc_stat(a), parse_proc_stat(b));
        assert_eq!(pa.len(), 2);
        // Δbusy = 80, Δidle = 100: 80 / 180.
        assert!((util_pct((pa[0].1, pa[0].2), (pb[0].1, pb[0].2)) - 800.0 / 18.0).abs() < 1e-9);
        // cpu0: Δbusy 35, Δidle 0: 100 %.
        assert_eq!(util_pct((pa[1].1, pa[1].2), (pb[1].1, pb[1].2)), 100.0);
        assert!(util_pct((5, 5), (5, 5)).is_nan());
    }

    #[test]
    fn self_stat_and_rss() {
        // Fields 14/15 (utime 120, stime 30) after a command name with spaces.
        let s = "1234 (my prog (x)) R 1 2 3 4 5 6 7 8 9 10 120 30 0 0 20 0 1 0 100 200 300";
        assert_eq!(parse_self_stat(s), Some(150));
        assert_eq!(
            parse_vm_rss_mb("Name:\tx\nVmRSS:\t  2048 kB\n"),
            Some(2048.0 * 1024.0 / 1e6)
        );
    }

    #[test]
    fn rapl_counter_wraps() {
        // Recorded on an Intel package: max_energy_range_uj 262143328850.
        let max = 262_143_328_850u64;
        let mut c = RaplCounter::new(max - 1_000_000, max);
        c.update(max - 400_000); // +0.6 J
        c.update(500_000); // wrapped: +0.4 J + 0.5 J
        assert_eq!(c.total_uj, 1_500_000);
    }

    #[test]
    fn rapl_zones_from_recorded_files() {
        let d = tempfile::tempdir().unwrap();
        let z = d.path().join("intel-rapl:0");
        std::fs::create_dir_all(z.join("intel-rapl:0:0")).unwrap();
        std::fs::create_dir_all(d.path().join("intel-rapl:0:0")).unwrap();
        std::fs::write(z.join("name"), "package-0\n").unwrap();
        std::fs::write(z.join("energy_uj"), "1000000\n").unwrap();
        std::fs::write(z.join("max_energy_range_uj"), "262143328850\n").unwrap();
        let mut r = Rapl::probe(d.path()).unwrap();
        let ch = r.channels();
        assert_eq!(ch.len(), 1);
        assert_eq!(ch[0].name, "rapl.package-0.energy_j");
        std::fs::write(z.join("energy_uj"), "3500000\n").unwrap();
        let mut v = [0.0];
        r.read(&mut v);
        assert_eq!(v[0], 2.5);
        assert!(Rapl::probe(&d.path().join("none")).is_err());
    }

    #[test]
    fn dcmi_units_and_ipmi_ptd_parsing() {
        // Recorded DCMI values: 91 → 9.1 W ("NPU Real-time Power(W) : 9.1" in npu-smi).
        assert_eq!(dcmi_power_w(91), 9.1);
        assert_eq!(dcmi_power_w(3105), 310.5);
        let ipmi = "\n    Instantaneous power reading:                   220 Watts\n    Minimum during sampling period:                 88 Watts\n    Power reading state is:                   activated\n";
        assert_eq!(parse_ipmi_power(ipmi), Some(220.0));
        assert_eq!(
            parse_ipmi_power(
                "Instantaneous power reading: 0 Watts\nPower reading state is: deactivated"
            ),
            None
        );
        assert_eq!(parse_ptd_watts("Watts,22.950000"), Some(22.95));
        assert_eq!(parse_ptd_watts("Error: no data"), None);
    }

    #[test]
    fn energy_from_counter_or_trapezoid() {
        let ch = |name: &str, kind, device: &str| Channel {
            name: name.into(),
            kind,
            device: device.into(),
            definition: String::new(),
        };
        let r = Recording {
            interval_ms: 1000.0,
            channels: vec![
                ch("node.power_w", Kind::Power, "node"),
                ch("gpu0.power_w", Kind::Power, "gpu0"),
                ch("gpu0.energy_j", Kind::Energy, "gpu0"),
            ],
            ticks: vec![
                Tick {
                    t_ms: 0.0,
                    values: vec![100.0, 50.0, 0.0],
                },
                Tick {
                    t_ms: 1000.0,
                    values: vec![200.0, 70.0, 60.0],
                },
                Tick {
                    t_ms: 1500.0,
                    values: vec![200.0, f64::NAN, 95.0],
                },
            ],
            gaps: vec![],
            failures: vec![],
        };
        let s = summarise(&r, vec![], 300, 3.0);
        // node: trapezoid (100+200)/2·1 + 200·0.5 = 250 J over 1.5 s.
        let node = s.energy.iter().find(|e| e.device == "node").unwrap();
        assert_eq!((node.joules, node.method), (250.0, EnergyMethod::Trapezoid));
        assert!((node.average_power_w - 250.0 / 1.5).abs() < 1e-12);
        assert_eq!(node.peak_power_w, Some(200.0));
        assert_eq!(node.inferences_per_joule, Some(300.0 / 250.0));
        // gpu0: the counter wins over its power samples.
        let g = s.energy.iter().find(|e| e.device == "gpu0").unwrap();
        assert_eq!((g.joules, g.method), (95.0, EnergyMethod::Counter));
        assert!(s.energy_unavailable.is_none());
        let empty = summarise(
            &Recording {
                interval_ms: 1000.0,
                channels: vec![],
                ticks: vec![],
                gaps: vec![],
                failures: vec![],
            },
            vec![SensorStatus {
                sensor: "rapl".into(),
                status: State::Unavailable("no RAPL".into()),
            }],
            0,
            0.0,
        );
        assert!(
            empty
                .energy_unavailable
                .unwrap()
                .contains("rapl: n/a: no RAPL")
        );
    }
}
