//! Ascend NPUs: DCMI (`libdcmi.so`, loaded at run time) or, without it, `npu-smi info`.
//!
//! DCMI calls follow `dcmi_interface_api.h` (see `shared/notes/telemetry.md` §2.2): every
//! function returns 0 on success; `dcmi_init` comes first.

use std::ffi::{c_int, c_uint};

pub use crate::report::schema::devices::{Ascend, Npu};

/// Where DCMI is installed by the Ascend driver.
pub const DCMI_PATHS: [&str; 4] = [
    "libdcmi.so",
    "/usr/local/dcmi/libdcmi.so",
    "/usr/local/Ascend/driver/lib64/driver/libdcmi.so",
    "/usr/local/Ascend/driver/lib64/libdcmi.so",
];

#[repr(C)]
struct ChipInfo {
    chip_type: [u8; 32],
    chip_name: [u8; 32],
    chip_ver: [u8; 32],
    aicore_cnt: c_uint,
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).trim().to_string()
}

fn by_dcmi(lib: &libloading::Library) -> Result<(Option<String>, Vec<Npu>), String> {
    type Init = unsafe extern "C" fn() -> c_int;
    type CardList = unsafe extern "C" fn(*mut c_int, *mut c_int, c_int) -> c_int;
    type DevNum = unsafe extern "C" fn(c_int, *mut c_int) -> c_int;
    type Chip = unsafe extern "C" fn(c_int, c_int, *mut ChipInfo) -> c_int;
    type Version = unsafe extern "C" fn(*mut u8, c_int) -> c_int;
    // SAFETY: signatures from dcmi_interface_api.h; buffers are sized as the API requires.
    unsafe {
        let init: libloading::Symbol<Init> = lib.get(b"dcmi_init\0").map_err(|e| e.to_string())?;
        let rc = init();
        if rc != 0 {
            return Err(format!("dcmi_init returned {rc}"));
        }
        let version = lib
            .get::<Version>(b"dcmi_get_dcmi_version\0")
            .ok()
            .and_then(|f| {
                let mut buf = [0u8; 64];
                (f(buf.as_mut_ptr(), buf.len() as c_int) == 0).then(|| cstr(&buf))
            });
        let list: libloading::Symbol<CardList> = lib
            .get(b"dcmi_get_card_list\0")
            .or_else(|_| lib.get(b"dcmi_get_card_num_list\0"))
            .map_err(|e| e.to_string())?;
        let mut n: c_int = 0;
        let mut cards = [0 as c_int; 64];
        let rc = list(&mut n, cards.as_mut_ptr(), cards.len() as c_int);
        if rc != 0 {
            return Err(format!("dcmi_get_card_list returned {rc}"));
        }
        let dev_num: libloading::Symbol<DevNum> = lib
            .get(b"dcmi_get_device_num_in_card\0")
            .map_err(|e| e.to_string())?;
        let chip: Option<libloading::Symbol<Chip>> = lib.get(b"dcmi_get_device_chip_info\0").ok();
        let mut npus = Vec::new();
        for &card in cards.iter().take(n.clamp(0, 64) as usize) {
            let mut devs: c_int = 0;
            if dev_num(card, &mut devs) != 0 {
                continue;
            }
            for dev in 0..devs {
                let mut info = ChipInfo {
                    chip_type: [0; 32],
                    chip_name: [0; 32],
                    chip_ver: [0; 32],
                    aicore_cnt: 0,
                };
                let ok = chip.as_ref().is_some_and(|f| f(card, dev, &mut info) == 0);
                npus.push(Npu {
                    card_id: card,
                    device_id: dev,
                    chip_name: if ok {
                        cstr(&info.chip_name)
                    } else {
                        String::new()
                    },
                    chip_type: if ok {
                        cstr(&info.chip_type)
                    } else {
                        String::new()
                    },
                    aicore_count: ok.then_some(info.aicore_cnt),
                });
            }
        }
        Ok((version, npus))
    }
}

/// Queries DCMI, then `npu-smi`.
pub fn identify() -> Ascend {
    let mut tried = Vec::new();
    for p in DCMI_PATHS {
        // SAFETY: loading the vendor library runs its initialisers, as any DCMI user does.
        match unsafe { libloading::Library::new(p) } {
            Ok(lib) => {
                return match by_dcmi(&lib) {
                    Ok((dcmi_version, npus)) => Ascend {
                        source: Some(format!("dcmi ({p})")),
                        not_available: npus
                            .is_empty()
                            .then(|| "DCMI answered but lists no NPU".into()),
                        dcmi_version,
                        npus,
                        npu_smi: None,
                    },
                    Err(e) => Ascend {
                        source: Some(format!("dcmi ({p})")),
                        not_available: Some(format!("DCMI at {p} failed: {e}")),
                        dcmi_version: None,
                        npus: Vec::new(),
                        npu_smi: None,
                    },
                };
            }
            Err(_) => tried.push(p),
        }
    }
    match std::process::Command::new("npu-smi").arg("info").output() {
        Ok(out) if out.status.success() => Ascend {
            source: Some("npu-smi info".into()),
            not_available: None,
            dcmi_version: None,
            npus: Vec::new(),
            npu_smi: Some(String::from_utf8_lossy(&out.stdout).into_owned()),
        },
        Ok(out) => Ascend {
            source: Some("npu-smi info".into()),
            not_available: Some(format!(
                "npu-smi info exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            dcmi_version: None,
            npus: Vec::new(),
            npu_smi: None,
        },
        Err(_) => Ascend {
            source: None,
            not_available: Some(format!(
                "no Ascend driver: libdcmi.so not found (tried {}) and no npu-smi on PATH",
                tried.join(", ")
            )),
            dcmi_version: None,
            npus: Vec::new(),
            npu_smi: None,
        },
    }
}
