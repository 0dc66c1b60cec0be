//! §7.2.6: utilization, power and energy, and the accelerator's own sensors.

use super::*;

/// The sensor and device name (`gpu1`, `npu0`) whose utilization and power an accelerator
/// run must record; `Err` when acceval has no sensor for that device.
pub(super) fn accelerator_channels(
    b: &BackendSettings,
) -> Option<Result<(&'static str, String), String>> {
    let traits = backend::describe(b);
    match (traits.class, traits.sensor) {
        (DeviceClass::Cpu | DeviceClass::Emulated, _) => None,
        (_, Some(Sensor::Nvml)) => Some(
            crate::util::cuda_pin::nvml_index(b.spec.device.unwrap_or(0))
                .map(|i| ("nvml", format!("gpu{i}")))
                .map_err(|e| e.to_string()),
        ),
        (_, Some(Sensor::Dcmi)) => Some(Ok(("dcmi", format!("npu{}", b.spec.device.unwrap_or(0))))),
        (c, None) => Some(Err(format!(
            "acceval has no utilization or power sensor for the {c} of {}",
            b.spec
        ))),
    }
}

/// Why the accelerator's utilization and power were not recorded, when they were not.
pub(super) fn accelerator_missing(
    b: &BackendSettings,
    t: &crate::report::schema::telemetry::TelemetrySummary,
) -> Option<String> {
    let (sensor, dev) = match accelerator_channels(b)? {
        Ok(x) => x,
        Err(why) => return Some(why),
    };
    let has = |k: Kind| {
        t.channels
            .iter()
            .any(|c| c.kind == k && c.name.starts_with(&format!("{dev}.")) && c.samples > 0)
    };
    let status = t
        .sensors
        .iter()
        .find(|s| s.sensor == sensor)
        .map(|s| s.status.to_string())
        .unwrap_or_else(|| "not probed".into());
    match (has(Kind::Utilization), has(Kind::Power)) {
        (true, true) => None,
        (u, p) => Some(format!(
            "the accelerator's {} not recorded ({dev} through {sensor}: {status})",
            match (u, p) {
                (false, false) => "utilization and power were",
                (false, true) => "utilization was",
                _ => "power was",
            }
        )),
    }
}

/// §7.2.6: utilization, with power and energy.
pub(super) fn telemetry(p: &Profile, b: &BackendSettings, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(t) = e.speed.as_ref().and_then(|s| s.telemetry.as_ref()) else {
        let accel = accelerator_channels(b).is_some();
        let verdict = match (accel, p.telemetry.require.is_empty()) {
            (true, _) => Verdict::Incomplete,
            (false, true) => Verdict::NotApplicable,
            (false, false) => Verdict::Fail,
        };
        if verdict != Verdict::NotApplicable {
            f.reasons.push("telemetry: none was recorded".into());
        }
        f.add(
            "§7.2.6",
            "Utilization, power, energy",
            "sample every second",
            "not measured",
            verdict,
            na("no telemetry was recorded"),
            Source::Profile,
        );
        return f;
    };
    let util: Vec<String> = t
        .channels
        .iter()
        .filter(|c| {
            c.kind == Kind::Utilization && !c.name.starts_with("cpu") || c.name == "cpu.util_pct"
        })
        .map(|c| {
            format!(
                "{} mean {} max {}",
                c.name,
                c.mean
                    .map(|v| format!("{v:.1} %"))
                    .unwrap_or_else(|| "n/a".into()),
                c.max
                    .map(|v| format!("{v:.1} %"))
                    .unwrap_or_else(|| "n/a".into())
            )
        })
        .collect();
    let missing: Vec<&str> = p
        .telemetry
        .require
        .iter()
        .filter(|s| {
            !t.sensors
                .iter()
                .any(|x| x.sensor == s.as_str() && x.status.is_available())
        })
        .map(|s| s.as_str())
        .collect();
    let accel = accelerator_missing(b, t);
    let ok = missing.is_empty() && accel.is_none();
    let power = if t.energy.is_empty() {
        "power and energy: n/a (no sensor)".to_string()
    } else {
        t.energy
            .iter()
            .map(|e| {
                format!(
                    "{}: {:.3} W average, {:.3} J, {} inferences/J",
                    e.device,
                    e.average_power_w,
                    e.joules,
                    opt(e.inferences_per_joule, "")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    f.add(
        "§7.2.6",
        "Utilization, power, energy",
        format!(
            "sample every {} ms; mean and max; required sensors: {}",
            t.interval_ms,
            if p.telemetry.require.is_empty() {
                "none".to_string()
            } else {
                p.telemetry
                    .require
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        format!("{}; {power}", util.join("; ")),
        if ok { Verdict::Pass } else { Verdict::Fail },
        (!ok).then(|| format!("required sensor(s) not available: {}", missing.join(", "))),
        Source::Profile,
    );
    if !ok {
        f.reasons
            .push("telemetry: a required sensor is not available".into());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn recorded_sensors_pass_a_required_missing_one_fails() {
        let (mut p, b, mut e) = fixture();
        let t = "Utilization, power, energy";
        assert_eq!(verdict(&telemetry(&p, &b, &e), t), Verdict::Pass);
        p.telemetry
            .require
            .push(crate::report::schema::profile::SensorName::Nvml);
        assert_eq!(verdict(&telemetry(&p, &b, &e), t), Verdict::Fail);
        // No telemetry at all: FAIL when the profile requires a sensor, N/A on the CPU
        // without a requirement, INCOMPLETE on an accelerator.
        e.speed.as_mut().unwrap().telemetry = None;
        assert_eq!(verdict(&telemetry(&p, &b, &e), t), Verdict::Fail);
        p.telemetry.require.clear();
        assert_eq!(verdict(&telemetry(&p, &b, &e), t), Verdict::NotApplicable);
        let gpu = backend_of("cuda");
        assert_eq!(verdict(&telemetry(&p, &gpu, &e), t), Verdict::Incomplete);
    }
}
