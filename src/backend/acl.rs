//! The Ascend ACL backend (CANN's `libascendcl.so`, loaded at run time): listed so that
//! `devices` and `--backend acl` say where it stands. Running models through ACL directly
//! is a later issue; until then Ascend NPUs are reached through `ort:cann`.

use std::path::Path;

use super::describe::{AdaptationRoute, DeviceClass, PeakSource, Sensor, Traits};
use super::{
    Availability, Backend, BackendError, BackendSettings, BackendSpec, LoadOptions, Session,
};

pub struct AclBackend;

pub static ACL: AclBackend = AclBackend;

/// Whether CANN's runtime library can be opened here.
fn ascendcl() -> Result<(), String> {
    // SAFETY: probing only; the library is dropped at once.
    unsafe { libloading::Library::new("libascendcl.so") }
        .map(drop)
        .map_err(|e| format!("{:#}", anyhow::Error::from(e)))
}

fn reason() -> String {
    let lib = match ascendcl() {
        Ok(()) => "libascendcl.so is present".to_string(),
        Err(e) => format!("no CANN toolkit ({e})"),
    };
    format!("the ACL backend is not implemented yet (use ort:cann for Ascend NPUs); {lib}")
}

impl Backend for AclBackend {
    fn name(&self) -> &'static str {
        "acl"
    }
    fn summary(&self) -> &'static str {
        "Ascend NPU through CANN's ACL (libascendcl.so): not yet implemented"
    }
    fn probe(&self) -> Availability {
        Availability::NotAvailable { reason: reason() }
    }
    fn describe(&self, _b: &BackendSettings) -> Option<Traits> {
        Some(Traits::accelerator(
            DeviceClass::Npu,
            AdaptationRoute::CompilerBackend,
            "ATC compiles the whole graph into an Ascend .om model",
            Some(Sensor::Dcmi),
            PeakSource::Stated,
        ))
    }
    fn load(
        &self,
        _model: &Path,
        spec: &BackendSpec,
        _opts: &LoadOptions,
    ) -> Result<Box<dyn Session>, BackendError> {
        Err(BackendError::NotAvailable {
            backend: spec.to_string(),
            reason: reason(),
        })
    }
}
