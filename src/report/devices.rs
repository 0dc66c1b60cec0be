//! The text view of `acceval devices`.

use std::io::Write;

use crate::report::export::{Document, Table};
use crate::report::schema::devices::Devices;

/// The host: processor, cores, memory, OS, container.
fn host(out: &mut dyn Write, d: &Devices) -> std::io::Result<()> {
    let h = &d.host;
    writeln!(out, "Host")?;
    writeln!(
        out,
        "  processor:  {} · {} ({})",
        h.arch, h.cpu_model, h.cpu_vendor
    )?;
    writeln!(
        out,
        "  cores:      {} logical CPUs available, {} physical cores{}",
        h.logical_cpus,
        h.physical_cores
            .map(|c| c.to_string())
            .unwrap_or_else(|| "n/a".into()),
        h.cpu_frequency_mhz
            .map(|f| format!(", {f} MHz"))
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "  memory:     {:.2} GiB ({} bytes)",
        h.memory_bytes as f64 / (1u64 << 30) as f64,
        h.memory_bytes
    )?;
    writeln!(
        out,
        "  OS:         {} {} · kernel {} · host {}",
        h.os, h.os_version, h.kernel, h.hostname
    )?;
    let c = &h.container;
    if c.in_container {
        writeln!(
            out,
            "  container:  yes{} ({})",
            c.runtime
                .as_ref()
                .map(|r| format!(", {r}"))
                .unwrap_or_default(),
            c.evidence.join("; ")
        )?;
    } else {
        writeln!(
            out,
            "  container:  no (no /.dockerenv, /run/.containerenv, container cgroup or overlay root)"
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// NVIDIA GPUs.
fn nvidia(out: &mut dyn Write, d: &Devices) -> std::io::Result<()> {
    writeln!(out, "NVIDIA GPUs (NVML)")?;
    match &d.nvidia.not_available {
        Some(why) => writeln!(out, "  not available: {why}")?,
        None => {
            writeln!(
                out,
                "  driver {} · CUDA {} · {} GPU(s)",
                d.nvidia.driver_version.as_deref().unwrap_or("?"),
                d.nvidia.cuda_driver_version.as_deref().unwrap_or("?"),
                d.nvidia.gpus.len()
            )?;
            if let Some(e) = &d.nvidia.emulated {
                writeln!(out, "  EMULATED: {e}")?;
            }
            for g in &d.nvidia.gpus {
                writeln!(
                    out,
                    "  [{}] {} · {} · {:.1} GiB · power {} of limit {} · PCI {}",
                    g.index,
                    g.name,
                    g.uuid,
                    g.memory_bytes as f64 / (1u64 << 30) as f64,
                    g.power_w
                        .map(|w| format!("{w:.1} W"))
                        .unwrap_or_else(|| "n/a".into()),
                    g.power_limit_w
                        .map(|w| format!("{w:.0} W"))
                        .unwrap_or_else(|| "n/a".into()),
                    g.pci_bus_id
                )?;
            }
        }
    }
    writeln!(out)?;
    Ok(())
}

/// Ascend NPUs.
fn ascend(out: &mut dyn Write, d: &Devices) -> std::io::Result<()> {
    writeln!(out, "Ascend NPUs (DCMI / npu-smi)")?;
    let a = &d.ascend;
    if let Some(why) = &a.not_available {
        writeln!(out, "  not available: {why}")?;
    }
    if a.source.is_some() && a.not_available.is_none() {
        writeln!(
            out,
            "  {} · driver {} · CANN {} · DCMI {} · {} NPU(s)",
            a.source.as_deref().unwrap_or("?"),
            a.driver_version.as_deref().unwrap_or("?"),
            a.cann_version.as_deref().unwrap_or("?"),
            a.dcmi_version.as_deref().unwrap_or("?"),
            a.npus.len()
        )?;
    }
    if let Some(e) = &a.emulated {
        writeln!(out, "  EMULATED: {e}")?;
    }
    let or_na = |v: Option<String>| v.unwrap_or_else(|| "n/a".into());
    for n in &a.npus {
        writeln!(
            out,
            "  card {} device {} · {} {} · {} AI cores · power {} · AI Core {} · HBM {} of {} MB · {}",
            n.card_id,
            n.device_id,
            n.chip_type,
            n.chip_name,
            or_na(n.aicore_count.map(|c| c.to_string())),
            or_na(n.power_w.map(|w| format!("{w:.1} W"))),
            or_na(n.aicore_util_pct.map(|u| format!("{u:.0} %"))),
            or_na(n.hbm_used_mb.map(|u| u.to_string())),
            or_na(n.hbm_total_mb.map(|u| u.to_string())),
            or_na(n.temperature_c.map(|t| format!("{t:.0} °C"))),
        )?;
    }
    if let Some(s) = &a.npu_smi {
        writeln!(out, "  npu-smi info:")?;
        for l in s.lines() {
            writeln!(out, "    {l}")?;
        }
    }
    writeln!(out)?;
    Ok(())
}

/// The ONNX Runtime library.
fn onnxruntime(out: &mut dyn Write, d: &Devices) -> std::io::Result<()> {
    writeln!(out, "ONNX Runtime")?;
    match (&d.onnxruntime.library, &d.onnxruntime.not_found) {
        (Some(l), _) => {
            writeln!(
                out,
                "  onnxruntime {} at {} (found by {})",
                l.version,
                l.path.display(),
                l.found_by
            )?;
            writeln!(
                out,
                "  providers compiled in: {}",
                d.onnxruntime.providers.join(", ")
            )?;
        }
        (None, Some(why)) => writeln!(out, "  not available: {why}")?,
        (None, None) => writeln!(out, "  not available")?,
    }
    writeln!(out)?;
    Ok(())
}

/// Every backend and its providers.
fn backends(out: &mut dyn Write, d: &Devices) -> std::io::Result<()> {
    writeln!(out, "Backends (--backend)")?;
    for b in &d.backends {
        writeln!(out, "  {:<6} {} — {}", b.name, b.availability, b.summary)?;
        for p in &b.providers {
            writeln!(out, "    {:<13} {}", p.name, p.availability)?;
        }
    }
    Ok(())
}

/// The terminal view of `acceval devices`.
pub fn write_text(out: &mut dyn Write, d: &Devices) -> std::io::Result<()> {
    host(out, d)?;
    nvidia(out, d)?;
    ascend(out, d)?;
    onnxruntime(out, d)?;
    backends(out, d)
}

impl Document for Devices {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_text(o, self)
    }
    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new("backends.csv", &["backend", "provider", "availability"]);
        for b in &self.backends {
            t.push(vec![
                b.name.clone(),
                String::new(),
                b.availability.to_string(),
            ]);
            for p in &b.providers {
                t.push(vec![
                    b.name.clone(),
                    p.name.clone(),
                    p.availability.to_string(),
                ]);
            }
        }
        vec![t]
    }
    fn json_name(&self) -> &'static str {
        "devices.json"
    }
}
