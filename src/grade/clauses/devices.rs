//! §6 a, b, §6.2 a, §6 c / §6.2 b, §6.2 c: the processor, the OS, the compute units and the device under test, as identified.

use super::*;

/// The device the backend under test runs on, as identified: (what, identified?).
pub(super) fn device_under_test(b: &BackendSettings, d: &Devices, engine: &str) -> (String, bool) {
    match backend::describe(b).class {
        DeviceClass::Cpu => (
            format!(
                "CPU {} ({} logical CPUs), {} {} kernel {}; runtime {engine}",
                d.host.cpu_model, d.host.logical_cpus, d.host.os, d.host.os_version, d.host.kernel
            ),
            !d.host.cpu_model.trim().is_empty() && !d.host.kernel.trim().is_empty(),
        ),
        DeviceClass::Gpu => {
            let i = match crate::util::cuda_pin::nvml_index(b.spec.device.unwrap_or(0)) {
                Ok(i) => i,
                Err(why) => return (why.to_string(), false),
            };
            match d.nvidia.gpus.iter().find(|g| g.index == i) {
                Some(g) => (
                    format!(
                        "GPU {i} {} (UUID {}), driver {}, CUDA {}; runtime {engine}",
                        g.name,
                        g.uuid,
                        d.nvidia.driver_version.as_deref().unwrap_or("?"),
                        d.nvidia.cuda_driver_version.as_deref().unwrap_or("?")
                    ),
                    d.nvidia.driver_version.is_some(),
                ),
                None => (
                    format!(
                        "no NVIDIA GPU {i} found ({})",
                        d.nvidia
                            .not_available
                            .clone()
                            .unwrap_or_else(|| format!("{} GPU(s) listed", d.nvidia.gpus.len()))
                    ),
                    false,
                ),
            }
        }
        DeviceClass::Npu | DeviceClass::Asic | DeviceClass::Fpga | DeviceClass::Tpu => {
            match d.ascend.npus.first() {
                Some(n) => (
                    format!(
                        "NPU {}:{} {} {}, driver {}, CANN {}, DCMI {}; runtime {engine}",
                        n.card_id,
                        n.device_id,
                        n.chip_type,
                        n.chip_name,
                        d.ascend.driver_version.as_deref().unwrap_or("?"),
                        d.ascend.cann_version.as_deref().unwrap_or("?"),
                        d.ascend.dcmi_version.as_deref().unwrap_or("?")
                    ),
                    !n.chip_name.trim().is_empty(),
                ),
                None => (
                    format!(
                        "no NPU found ({})",
                        d.ascend
                            .not_available
                            .clone()
                            .unwrap_or_else(|| "DCMI lists none".into())
                    ),
                    false,
                ),
            }
        }
        DeviceClass::Emulated => (
            "the mock backend: an emulated device, never certified".into(),
            false,
        ),
    }
}

/// What makes the device under test an emulator, when it is one: the mock backend, a
/// session whose library is acceval's emulator, or an identification that says so.
pub(super) fn emulated(b: &BackendSettings, e: &Evidence) -> Option<String> {
    let class = backend::describe(b).class;
    if class == DeviceClass::Emulated {
        return Some("the mock backend".into());
    }
    let sessions = e
        .speed
        .iter()
        .map(|s| &s.session)
        .chain(e.accuracy.iter().map(|a| &a.session));
    if let Some(x) = sessions.filter_map(|s| s.emulated.clone()).next() {
        return Some(x);
    }
    let d = e.devices.as_ref()?;
    match class {
        DeviceClass::Gpu => d.nvidia.emulated.clone(),
        DeviceClass::Npu | DeviceClass::Asic | DeviceClass::Fpga | DeviceClass::Tpu => {
            d.ascend.emulated.clone()
        }
        _ => None,
    }
}

/// §6 a, b (architecture), §6.2 a (OS), §6 c / §6.2 b (compute units), §6.2 c
/// (identification of the device under test).
pub(super) fn devices(b: &BackendSettings, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(d) = &e.devices else { return f };
    f.add(
        "§6 a, b",
        "Processor architecture",
        "report the processor architecture",
        format!(
            "{} ({}, {} logical CPUs)",
            d.host.arch, d.host.cpu_model, d.host.logical_cpus
        ),
        if d.host.arch.is_empty() {
            Verdict::Fail
        } else {
            Verdict::Pass
        },
        None,
        Source::Standard,
    );
    let os_known = !d.host.os.trim().is_empty() && !d.host.kernel.trim().is_empty();
    f.add(
        "§6.2 a",
        "Operating system",
        "should support Linux, Windows and embedded operating systems: report the one used",
        format!(
            "{} {} (kernel {})",
            d.host.os, d.host.os_version, d.host.kernel
        ),
        if os_known {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        (!os_known).then(|| "the operating system could not be identified".to_string()),
        Source::Standard,
    );
    let class = backend::describe(b).class;
    let dedicated = class.is_dedicated_ai_chip();
    let emulator = emulated(b, e);
    let emulated_na = emulator.as_ref().map(|x| {
        format!("emulated device ({x}): an emulator proves acceval's code, never the hardware")
    });
    f.add(
        "§6 c, §6.2 b",
        "Compute units",
        "inference supports at least one dedicated AI inference chip besides CPU/GPU",
        format!("the device under test: {class} ({})", b.spec),
        match class {
            _ if emulator.is_some() => Verdict::NotApplicable,
            _ if dedicated => Verdict::Pass,
            _ => Verdict::NotApplicable,
        },
        match class {
            _ if emulator.is_some() => emulated_na.clone(),
            _ if dedicated => None,
            c => Some(format!(
                "the device under test is a {c}; §6.2 b concerns a dedicated AI inference chip (NPU, ASIC, FPGA, TPU), which this run does not certify"
            )),
        },
        Source::Standard,
    );
    if let Some(x) = &emulator {
        f.add(
            "§6.2 b, c",
            "Device is hardware",
            "the device under test is a real device, not an emulator",
            format!("emulated: {x}"),
            Verdict::Fail,
            Some("an emulated device is never certified".into()),
            Source::Standard,
        );
        f.reasons.push(format!(
            "the device under test is emulated ({x}): an emulated device is never certified"
        ));
    }
    let engine = e
        .speed
        .as_ref()
        .map(|s| s.session.engine.clone())
        .or_else(|| e.accuracy.first().map(|a| a.session.engine.clone()))
        .unwrap_or_else(|| "not loaded".into());
    let (what, identified) = device_under_test(b, d, &engine);
    let container = if d.host.container.in_container {
        d.host
            .container
            .runtime
            .clone()
            .unwrap_or_else(|| "yes".into())
    } else {
        "no".into()
    };
    f.add(
        "§6.2 c",
        "Device identification",
        "the device under test is identified (name, driver and runtime versions); container mapping supported",
        format!("{what}; container: {container}"),
        match (&emulated_na, identified) {
            (Some(_), _) => Verdict::NotApplicable,
            (None, true) => Verdict::Pass,
            (None, false) => Verdict::Fail,
        },
        match (&emulated_na, identified) {
            (Some(why), _) => Some(why.clone()),
            (None, true) => None,
            (None, false) => Some(format!("the device the backend runs on was not identified: {what}")),
        },
        Source::Standard,
    );
    if !identified && emulated_na.is_none() {
        f.reasons
            .push(format!("device identification (§6.2 c): {what}"));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn identified_host_passes_and_compute_units_depend_on_the_device() {
        let (_, b, e) = fixture();
        let f = devices(&b, &e);
        assert_eq!(verdict(&f, "Processor architecture"), Verdict::Pass);
        assert_eq!(verdict(&f, "Operating system"), Verdict::Pass);
        assert_eq!(verdict(&f, "Device identification"), Verdict::Pass);
        // The CPU is no dedicated AI chip: not claimed.
        assert_eq!(verdict(&f, "Compute units"), Verdict::NotApplicable);
        // An emulated device is never certified: §6.2 b and c are N/A, and the device is not
        // hardware.
        let f = devices(&backend_of("mock"), &e);
        assert_eq!(verdict(&f, "Compute units"), Verdict::NotApplicable);
        assert_eq!(verdict(&f, "Device identification"), Verdict::NotApplicable);
        assert_eq!(verdict(&f, "Device is hardware"), Verdict::Fail);
        assert!(!f.reasons.is_empty());
        // An NPU whose session ran on acceval's CANN emulator: the same.
        let (_, _, mut em) = fixture();
        if let Some(s) = em.speed.as_mut() {
            s.session.emulated = Some("acceval CANN emulator".into());
        }
        let f = devices(&backend_of("acl"), &em);
        assert_eq!(verdict(&f, "Compute units"), Verdict::NotApplicable);
        assert_eq!(verdict(&f, "Device is hardware"), Verdict::Fail);
        // The real NPU (no emulator label): the compute-unit clause passes.
        let f = devices(&backend_of("acl"), &e);
        assert_eq!(verdict(&f, "Compute units"), Verdict::Pass);
        assert!(f.clauses.iter().all(|c| c.title != "Device is hardware"));
        // A host whose architecture and OS were not identified fails.
        let (_, b, mut e) = fixture();
        let d = e.devices.as_mut().unwrap();
        d.host.arch.clear();
        d.host.os.clear();
        let f = devices(&b, &e);
        assert_eq!(verdict(&f, "Processor architecture"), Verdict::Fail);
        assert_eq!(verdict(&f, "Operating system"), Verdict::Fail);
        // No identification at all: the family says nothing (the stage did not run).
        e.devices = None;
        assert!(devices(&b, &e).clauses.is_empty());
    }
}
