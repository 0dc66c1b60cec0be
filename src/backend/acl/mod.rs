//! The Ascend ACL backend (`--backend acl[@N]`): CANN's `libascendcl.so` loaded at run time,
//! ONNX models converted to `.om` by CANN's `atc` (§5.3 a's IR conversion, timed and cached),
//! and the whole inference sequence of the ACL samples with host-to-device copy, execution
//! and device-to-host copy timed apart (§7.2.3).
//!
//! The folder holds everything Ascend-specific on the inference side: `ffi` (the library,
//! its symbols, its error codes), `atc` (the conversion), `session` (the handles and the
//! run). Devices and telemetry are `device::ascend` and `device::telemetry::dcmi`. Where the
//! library is acceval's CANN emulator (`scripts/fake-devices.sh`), every output says so and
//! `grade` does not certify it.

pub mod atc;
pub mod ffi;
pub mod session;

use std::collections::BTreeMap;
use std::path::Path;

use super::describe::{AdaptationRoute, DeviceClass, PeakSource, Sensor, Traits};
use super::{
    Availability, Backend, BackendError, BackendSettings, BackendSpec, LoadOptions, LoadTimings,
    Session, SessionInfo,
};

pub struct AclBackend;

pub static ACL: AclBackend = AclBackend;

/// What ACL says about the machine: the SoC and the number of devices.
fn devices(acl: &'static ffi::Acl) -> Result<(String, u32), String> {
    let mut n = 0u32;
    // SAFETY: a valid out-pointer; ACL is initialised.
    acl.check("aclrtGetDeviceCount", unsafe {
        (acl.api.device_count)(&mut n)
    })
    .map_err(|e| e.to_string())?;
    let soc = acl
        .soc_name()
        .unwrap_or_else(|| "an unknown SoC (aclrtGetSocName returned NULL)".into());
    Ok((soc, n))
}

fn engine(acl: &ffi::Acl) -> String {
    format!(
        "CANN ACL {}{}",
        acl.version.as_deref().unwrap_or("(version not reported)"),
        acl.cann_version
            .as_deref()
            .map(|v| format!(", CANN {v}"))
            .unwrap_or_default()
    )
}

/// The emulator label every output carries.
fn emulated_label(acl: &ffi::Acl) -> String {
    acl.emulated
        .as_deref()
        .map(|e| format!(" [EMULATED: {e}]"))
        .unwrap_or_default()
}

impl Backend for AclBackend {
    fn name(&self) -> &'static str {
        "acl"
    }
    fn summary(&self) -> &'static str {
        "Ascend NPU through CANN's ACL (libascendcl.so), ONNX converted to .om by atc"
    }
    fn probe(&self) -> Availability {
        let acl = match ffi::initialised() {
            Ok(a) => a,
            Err(e) => {
                return Availability::NotAvailable {
                    reason: match e {
                        BackendError::NotAvailable { reason, .. } => reason,
                        other => other.to_string(),
                    },
                };
            }
        };
        match devices(acl) {
            Ok((_, 0)) => Availability::NotAvailable {
                reason: format!("{} loaded, but ACL lists no device", acl.path.display()),
            },
            Ok((soc, n)) => Availability::Available {
                detail: format!(
                    "{} ({}), {soc}, {n} device(s); atc: {}{}",
                    acl.path.display(),
                    engine(acl),
                    atc::find_atc()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|e| format!("not found ({e})")),
                    emulated_label(acl)
                ),
            },
            Err(e) => Availability::NotAvailable {
                reason: format!("{} loaded, but {e}", acl.path.display()),
            },
        }
    }
    fn describe(&self, _b: &BackendSettings) -> Option<Traits> {
        Some(Traits::accelerator(
            DeviceClass::Npu,
            AdaptationRoute::CompilerBackend,
            "ATC compiles the whole graph into an Ascend .om model; operators without an AI Core kernel run on the NPU's AI CPU",
            Some(Sensor::Dcmi),
            PeakSource::Stated,
        ))
    }
    fn load(
        &self,
        model: &Path,
        spec: &BackendSpec,
        opts: &LoadOptions,
    ) -> Result<Box<dyn Session>, BackendError> {
        let err = |reason: String| BackendError::Load {
            backend: spec.to_string(),
            model: model.display().to_string(),
            reason,
        };
        if let Some(p) = &spec.provider {
            return Err(BackendError::NotAvailable {
                backend: spec.to_string(),
                reason: format!(
                    "acl has no provider '{p}': use acl or acl@N (the device); ONNX Runtime's CANN provider is ort:cann"
                ),
            });
        }
        let mut precision = atc::DEFAULT_PRECISION.to_string();
        for (k, v) in &opts.ep_options {
            match k.as_str() {
                "precision_mode" => precision = v.clone(),
                other => {
                    return Err(err(format!(
                        "unknown option '{other}'; the acl backend takes precision_mode=MODE (ATC's precision mode, default origin)"
                    )));
                }
            }
        }
        let acl = ffi::initialised()?;
        let (soc, count) = devices(acl).map_err(&err)?;
        let device = spec.device.unwrap_or(0);
        if device >= count {
            return Err(BackendError::NotAvailable {
                backend: spec.to_string(),
                reason: format!(
                    "device {device} does not exist: ACL lists {count} device(s) (0..{count})"
                ),
            });
        }
        let mut options = BTreeMap::new();
        options.insert("soc".into(), soc.clone());
        let (timings, conversion) = prepare(model, &soc, opts, &precision, &mut options)?;
        if let Some(e) = &acl.emulated {
            options.insert("emulator".into(), e.clone());
        }
        let info = SessionInfo {
            backend: spec.to_string(),
            engine: engine(acl),
            device: format!("{soc} device {device}{}", emulated_label(acl)),
            library: Some(acl.path.display().to_string()),
            options,
            emulated: acl.emulated.clone(),
            copies: Some(
                "h2d: aclrtMemcpy HOST_TO_DEVICE of every input; forward: aclmdlExecute + aclrtSynchronizeStream; d2h: aclrtMemcpy DEVICE_TO_HOST of every output into host tensors (synchronous copies, host monotonic clock)".into(),
            ),
        };
        let src = session::Source {
            om: conversion.as_ref().map_or(model, |c| c.om.as_path()),
            onnx: conversion.as_ref().map(|_| model),
            aicpu_ops: conversion
                .as_ref()
                .map(|c| c.aicpu_ops.clone())
                .unwrap_or_default(),
        };
        let load_limit = opts.load_timeout_s.map_or_else(
            || super::default_load_timeout(src.om),
            std::time::Duration::from_secs_f64,
        );
        Ok(Box::new(session::AclSession::open(
            acl,
            device as i32,
            src,
            info,
            timings,
            load_limit,
        )?))
    }
}

/// The `.om` to load: a given one as is, or the ONNX model converted by ATC (timed, cached);
/// `options` record which, and how.
fn prepare(
    model: &Path,
    soc: &str,
    opts: &LoadOptions,
    precision: &str,
    options: &mut BTreeMap<String, String>,
) -> Result<(LoadTimings, Option<atc::Conversion>), BackendError> {
    let err = |reason: String| BackendError::Load {
        backend: "acl".into(),
        model: model.display().to_string(),
        reason,
    };
    let ext = model
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    Ok(match ext.as_str() {
        "om" => {
            options.insert(
                "om".into(),
                format!("{} (given, loaded as is)", model.display()),
            );
            options.insert(
                "precision_mode".into(),
                "as compiled (a given .om: acceval cannot tell its ATC precision mode)".into(),
            );
            (
                LoadTimings {
                    convert_ms: None,
                    convert_note: Some(
                        "a given .om was converted elsewhere: its IR-conversion time is not measured here".into(),
                    ),
                    init_ms: 0.0,
                },
                None,
            )
        }
        "onnx" => {
            // ATC compiles for minutes on a large model: by default it gets at least 600 s,
            // as an ONNX Runtime device provider's session does.
            let limit = opts.load_timeout_s.map_or_else(
                || super::default_load_timeout(model).max(std::time::Duration::from_secs(600)),
                std::time::Duration::from_secs_f64,
            );
            let c = atc::convert(model, soc, &opts.input_shapes, precision, limit).map_err(&err)?;
            options.insert("precision_mode".into(), precision.to_string());
            options.insert("atc".into(), format!("{} {}", c.atc, c.args.join(" ")));
            options.insert("om".into(), c.om.display().to_string());
            if !c.aicpu_ops.is_empty() {
                options.insert("atc_aicpu_ops".into(), c.aicpu_ops.join(", "));
            }
            let note = if c.cached {
                format!(
                    "ATC (ONNX → .om) wall time, measured when this .om was built and cached (at UNIX {:.0}, {}); keyed by the model's SHA-256, SoC, shapes, precision mode and atc",
                    c.built_unix_s,
                    c.om.display()
                )
            } else {
                "ATC (ONNX → .om) wall time of this run's conversion".into()
            };
            (
                LoadTimings {
                    convert_ms: Some(c.convert_ms),
                    convert_note: Some(note),
                    init_ms: 0.0,
                },
                Some(c),
            )
        }
        other => {
            return Err(err(format!(
                "acl takes an ONNX model (.onnx, converted with atc) or an Ascend .om; '.{other}' is neither (a TorchScript .pt runs on --backend tch)"
            )));
        }
    })
}
