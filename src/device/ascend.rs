//! Ascend NPUs: DCMI (`libdcmi.so`, loaded at run time) or, without it, `npu-smi info`.
//!
//! DCMI calls follow `dcmi_interface_api.h` (see `shared/notes/telemetry.md` §2.2): every
//! function returns 0 on success; `dcmi_init` comes first, on the handle that is used
//! ([`DcmiApi::open`] calls it, for identification and for the sampler alike). Power is an
//! integer in 0.1 W. Where the library is acceval's DCMI emulator it says so (the symbol
//! `acceval_emulator`), and the identification carries that label.

use std::ffi::{c_char, c_int, c_uint};

pub use crate::report::schema::devices::{Ascend, Npu};

/// Where DCMI is installed by the Ascend driver (the bare name goes through the loader's
/// search path, `LD_LIBRARY_PATH` as CANN's set_env.sh sets it).
pub const DCMI_PATHS: [&str; 4] = [
    "libdcmi.so",
    "/usr/local/dcmi/libdcmi.so",
    "/usr/local/Ascend/driver/lib64/driver/libdcmi.so",
    "/usr/local/Ascend/driver/lib64/libdcmi.so",
];

/// DCMI `input_type` of `dcmi_get_device_utilization_rate` for the AI Core.
pub const DCMI_UTIL_AICORE: i32 = 2;
/// ... for the on-chip memory (HBM).
pub const DCMI_UTIL_HBM: i32 = 6;

/// DCMI reports power as an integer in units of 0.1 W.
pub fn dcmi_power_w(raw: i32) -> f64 {
    raw as f64 / 10.0
}

/// What a DCMI return code means (hiascend DCMI API reference, return codes).
pub fn dcmi_code(code: c_int) -> String {
    let what = match code {
        -8001 => "invalid parameter",
        -8002 => "permission denied (run as root or in the HwHiAiUser group)",
        -8003 => "memory operation failed",
        -8005 => "inner error",
        -8006 => "timeout",
        -8007 => "invalid device id",
        -8008 => "device does not exist",
        -8009 => "ioctl failed",
        -8012 => "device not ready, retry",
        -8013 => "not supported in a container",
        -8020 => "device busy",
        -8255 => "not supported on this product",
        _ => "unknown DCMI code",
    };
    format!("{code} ({what})")
}

#[repr(C)]
struct ChipInfo {
    chip_type: [u8; 32],
    chip_name: [u8; 32],
    chip_ver: [u8; 32],
    aicore_cnt: c_uint,
}

/// `struct dcmi_hbm_info` (sizes in MB).
#[repr(C)]
struct HbmInfo {
    memory_size: u64,
    freq: c_uint,
    memory_usage: u64,
    temp: c_int,
    bandwith_util_rate: c_uint,
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).trim().to_string()
}

type Init = unsafe extern "C" fn() -> c_int;
type Text = unsafe extern "C" fn(*mut c_char, c_uint) -> c_int;
type CardList = unsafe extern "C" fn(*mut c_int, *mut c_int, c_int) -> c_int;
type DevNum = unsafe extern "C" fn(c_int, *mut c_int) -> c_int;
type LogicId = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int;
type Chip = unsafe extern "C" fn(c_int, c_int, *mut ChipInfo) -> c_int;
type Power = unsafe extern "C" fn(c_int, c_int, *mut c_int) -> c_int;
type Util = unsafe extern "C" fn(c_int, c_int, c_int, *mut c_uint) -> c_int;
type Temp = unsafe extern "C" fn(c_int, c_int, *mut c_int) -> c_int;
type Hbm = unsafe extern "C" fn(c_int, c_int, *mut HbmInfo) -> c_int;
type Marker = unsafe extern "C" fn() -> *const c_char;

/// DCMI, opened and initialised: the functions acceval reads.
pub struct DcmiApi {
    pub path: &'static str,
    /// The emulator's self-description, when this is acceval's DCMI emulator.
    pub emulated: Option<String>,
    card_list: CardList,
    dev_num: DevNum,
    logic_id: Option<LogicId>,
    chip: Option<Chip>,
    power: Power,
    util: Util,
    temp: Option<Temp>,
    hbm: Option<Hbm>,
    dcmi_version: Option<Text>,
    driver_version: Option<Text>,
    _lib: libloading::Library,
}

/// A text DCMI writes into a buffer.
fn text(f: Option<Text>) -> Option<String> {
    let f = f?;
    let mut buf = [0u8; 128];
    // SAFETY: a 128-byte buffer and its length, as the API takes.
    (unsafe { f(buf.as_mut_ptr().cast(), buf.len() as c_uint) } == 0).then(|| cstr(&buf))
}

impl DcmiApi {
    /// Loads the first DCMI found, resolves its symbols and calls `dcmi_init` on it.
    pub fn open() -> Result<DcmiApi, String> {
        let mut tried = Vec::new();
        for p in DCMI_PATHS {
            // SAFETY: the vendor library; loading runs its initialisers, as for any DCMI user.
            let lib = match unsafe { libloading::Library::new(p) } {
                Ok(l) => l,
                Err(_) => {
                    tried.push(p);
                    continue;
                }
            };
            // SAFETY: symbols with the signatures of dcmi_interface_api.h.
            return unsafe { Self::resolve(lib, p) };
        }
        Err(format!(
            "no Ascend driver: libdcmi.so not found (tried {}; CANN's set_env.sh puts the driver's lib64 on LD_LIBRARY_PATH)",
            tried.join(", ")
        ))
    }

    /// # Safety
    /// `lib` must be DCMI (or a library with its signatures).
    unsafe fn resolve(lib: libloading::Library, path: &'static str) -> Result<DcmiApi, String> {
        // SAFETY: the caller's contract; each symbol is looked up with its C signature.
        unsafe {
            let need = |n: &[u8]| {
                lib.get::<*const ()>(n).map(|s| *s).map_err(|e| {
                    format!(
                        "{path} has no {} ({}): not a DCMI this acceval reads",
                        String::from_utf8_lossy(&n[..n.len() - 1]),
                        crate::util::fmt::error_chain(&e)
                    )
                })
            };
            let init: Init = std::mem::transmute::<*const (), Init>(need(b"dcmi_init\0")?);
            let card_list = match need(b"dcmi_get_card_list\0") {
                Ok(f) => f,
                Err(_) => need(b"dcmi_get_card_num_list\0")?,
            };
            let api = DcmiApi {
                path,
                emulated: lib
                    .get::<Marker>(b"acceval_emulator\0")
                    .ok()
                    .map(|f| f())
                    .filter(|p| !p.is_null())
                    .map(|p| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()),
                card_list: std::mem::transmute::<*const (), CardList>(card_list),
                dev_num: std::mem::transmute::<*const (), DevNum>(need(
                    b"dcmi_get_device_num_in_card\0",
                )?),
                logic_id: lib
                    .get::<LogicId>(b"dcmi_get_device_logic_id\0")
                    .ok()
                    .map(|s| *s),
                chip: lib
                    .get::<Chip>(b"dcmi_get_device_chip_info\0")
                    .ok()
                    .map(|s| *s),
                power: std::mem::transmute::<*const (), Power>(need(
                    b"dcmi_get_device_power_info\0",
                )?),
                util: std::mem::transmute::<*const (), Util>(need(
                    b"dcmi_get_device_utilization_rate\0",
                )?),
                temp: lib
                    .get::<Temp>(b"dcmi_get_device_temperature\0")
                    .ok()
                    .map(|s| *s),
                hbm: lib
                    .get::<Hbm>(b"dcmi_get_device_hbm_info\0")
                    .ok()
                    .map(|s| *s),
                dcmi_version: lib.get::<Text>(b"dcmi_get_dcmi_version\0").ok().map(|s| *s),
                driver_version: lib
                    .get::<Text>(b"dcmi_get_driver_version\0")
                    .ok()
                    .map(|s| *s),
                _lib: lib,
            };
            let rc = init();
            if rc != 0 {
                return Err(format!("dcmi_init ({path}) returned {}", dcmi_code(rc)));
            }
            Ok(api)
        }
    }

    /// Every (card, device) DCMI lists.
    pub fn npus(&self) -> Result<Vec<(i32, i32)>, String> {
        let mut n: c_int = 0;
        let mut cards = [0 as c_int; 64];
        // SAFETY: valid out-pointers; the list's length is passed.
        let rc = unsafe { (self.card_list)(&mut n, cards.as_mut_ptr(), cards.len() as c_int) };
        if rc != 0 {
            return Err(format!("dcmi_get_card_list returned {}", dcmi_code(rc)));
        }
        let mut out = Vec::new();
        for &card in cards.iter().take(n.clamp(0, 64) as usize) {
            let mut devs: c_int = 0;
            // SAFETY: a valid out-pointer.
            if unsafe { (self.dev_num)(card, &mut devs) } != 0 {
                continue;
            }
            out.extend((0..devs.clamp(0, 16)).map(|d| (card, d)));
        }
        Ok(out)
    }

    /// Chip power, W.
    pub fn power_w(&self, card: i32, dev: i32) -> Result<f64, String> {
        let mut p: c_int = 0;
        // SAFETY: a valid out-pointer.
        match unsafe { (self.power)(card, dev, &mut p) } {
            0 => Ok(dcmi_power_w(p)),
            rc => Err(format!(
                "dcmi_get_device_power_info returned {}",
                dcmi_code(rc)
            )),
        }
    }

    /// Utilization of `input_type`, %.
    pub fn util_pct(&self, card: i32, dev: i32, input_type: i32) -> Result<f64, String> {
        let mut u: c_uint = 0;
        // SAFETY: a valid out-pointer.
        match unsafe { (self.util)(card, dev, input_type, &mut u) } {
            0 => Ok(u as f64),
            rc => Err(format!(
                "dcmi_get_device_utilization_rate(type {input_type}) returned {}",
                dcmi_code(rc)
            )),
        }
    }

    pub fn temperature_c(&self, card: i32, dev: i32) -> Result<f64, String> {
        let f = self
            .temp
            .ok_or("dcmi_get_device_temperature is not in this DCMI")?;
        let mut t: c_int = 0;
        // SAFETY: a valid out-pointer.
        match unsafe { f(card, dev, &mut t) } {
            0 => Ok(t as f64),
            rc => Err(format!(
                "dcmi_get_device_temperature returned {}",
                dcmi_code(rc)
            )),
        }
    }

    /// HBM (used, total), MB.
    pub fn hbm_mb(&self, card: i32, dev: i32) -> Result<(u64, u64), String> {
        let f = self
            .hbm
            .ok_or("dcmi_get_device_hbm_info is not in this DCMI")?;
        let mut h = HbmInfo {
            memory_size: 0,
            freq: 0,
            memory_usage: 0,
            temp: 0,
            bandwith_util_rate: 0,
        };
        // SAFETY: a valid struct of the header's layout.
        match unsafe { f(card, dev, &mut h) } {
            0 => Ok((h.memory_usage, h.memory_size)),
            rc => Err(format!(
                "dcmi_get_device_hbm_info returned {}",
                dcmi_code(rc)
            )),
        }
    }

    fn npu(&self, card: i32, dev: i32) -> Npu {
        let mut info = ChipInfo {
            chip_type: [0; 32],
            chip_name: [0; 32],
            chip_ver: [0; 32],
            aicore_cnt: 0,
        };
        // SAFETY: a valid struct of the header's layout.
        let ok = self
            .chip
            .is_some_and(|f| unsafe { f(card, dev, &mut info) } == 0);
        let logic_id = self.logic_id.and_then(|f| {
            let mut l: c_int = -1;
            // SAFETY: a valid out-pointer.
            (unsafe { f(&mut l, card, dev) } == 0).then_some(l)
        });
        let hbm = self.hbm_mb(card, dev).ok();
        Npu {
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
            logic_id,
            bus_id: None,
            power_w: self.power_w(card, dev).ok(),
            temperature_c: self.temperature_c(card, dev).ok(),
            aicore_util_pct: self.util_pct(card, dev, DCMI_UTIL_AICORE).ok(),
            hbm_used_mb: hbm.map(|h| h.0),
            hbm_total_mb: hbm.map(|h| h.1),
        }
    }
}

/// One chip of `npu-smi info`'s table: the first line (NPU id, name, health, power, temp)
/// and the second (chip, bus id, AI Core %, memory and HBM use).
pub fn parse_npu_smi(text: &str) -> Vec<Npu> {
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let num = |s: &str| s.trim().parse::<f64>().ok();
    let mut out = Vec::new();
    let mut pending: Option<Npu> = None;
    for line in text.lines() {
        let l = line.trim();
        if !l.starts_with('|') || l.contains("NPU ") && l.contains("Name") || l.contains("Bus-Id") {
            if l.contains("Process id") {
                break;
            }
            continue;
        }
        let c = cells(l);
        if c.len() < 3 {
            continue;
        }
        let first: Vec<&str> = c[0].split_whitespace().collect();
        let is_second = c[1].contains(':') && first.len() == 1;
        if let (Some(mut n), true) = (pending.take(), is_second) {
            n.device_id = first[0].parse().unwrap_or(0);
            n.bus_id = Some(c[1].clone());
            let spaced = c[2].replace('/', " / ");
            let t: Vec<&str> = spaced.split_whitespace().collect();
            n.aicore_util_pct = t.first().and_then(|x| num(x));
            let pairs: Vec<(u64, u64)> = t
                .iter()
                .enumerate()
                .filter(|(_, x)| **x == "/")
                .filter_map(|(i, _)| {
                    Some((
                        t.get(i.checked_sub(1)?)?.parse().ok()?,
                        t.get(i + 1)?.parse().ok()?,
                    ))
                })
                .collect();
            // The last pair is HBM where the product has it (910B); 310P has memory only.
            if pairs.len() >= 2 {
                let (u, tot) = pairs[pairs.len() - 1];
                (n.hbm_used_mb, n.hbm_total_mb) = (Some(u), Some(tot));
            }
            out.push(n);
        } else if first.len() >= 2 && first[0].parse::<i32>().is_ok() {
            let t: Vec<&str> = c[2].split_whitespace().collect();
            pending = Some(Npu {
                card_id: first[0].parse().unwrap_or(0),
                device_id: 0,
                chip_name: first[1..].join(" "),
                chip_type: "Ascend".into(),
                aicore_count: None,
                logic_id: None,
                bus_id: None,
                power_w: t.first().and_then(|x| num(x)),
                temperature_c: t.get(1).and_then(|x| num(x)),
                aicore_util_pct: None,
                hbm_used_mb: None,
                hbm_total_mb: None,
            });
        }
    }
    out
}

fn empty(source: Option<String>, why: String) -> Ascend {
    Ascend {
        source,
        not_available: Some(why),
        dcmi_version: None,
        npus: Vec::new(),
        npu_smi: None,
        driver_version: None,
        cann_version: None,
        emulated: None,
    }
}

/// The CANN toolkit's version, from the ACL library acceval would load.
fn cann_version() -> Option<String> {
    crate::backend::acl::ffi::library()
        .ok()
        .and_then(|a| a.cann_version.clone())
}

/// Queries DCMI, then `npu-smi`.
pub fn identify() -> Ascend {
    let dcmi_err = match DcmiApi::open() {
        Ok(api) => {
            let source = Some(format!("dcmi ({})", api.path));
            return match api.npus() {
                Ok(list) => {
                    let npus: Vec<Npu> = list.iter().map(|&(c, d)| api.npu(c, d)).collect();
                    Ascend {
                        source,
                        not_available: npus
                            .is_empty()
                            .then(|| "DCMI answered but lists no NPU".into()),
                        dcmi_version: text(api.dcmi_version),
                        npus,
                        npu_smi: None,
                        driver_version: text(api.driver_version),
                        cann_version: cann_version(),
                        emulated: api.emulated.clone(),
                    }
                }
                Err(e) => empty(source, format!("DCMI at {} failed: {e}", api.path)),
            };
        }
        Err(e) => e,
    };
    match std::process::Command::new("npu-smi").arg("info").output() {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let npus = parse_npu_smi(&text);
            let version = text
                .lines()
                .find_map(|l| l.split("Version:").nth(1))
                .map(|v| v.trim().trim_end_matches('|').trim().to_string());
            Ascend {
                source: Some("npu-smi info".into()),
                not_available: npus
                    .is_empty()
                    .then(|| format!("npu-smi info lists no NPU acceval could read ({dcmi_err})")),
                dcmi_version: None,
                npus,
                driver_version: version,
                cann_version: cann_version(),
                emulated: text
                    .contains("acceval emulator")
                    .then(|| "acceval npu-smi emulator (its version line says so)".into()),
                npu_smi: Some(text),
            }
        }
        Ok(out) => empty(
            Some("npu-smi info".into()),
            format!(
                "{dcmi_err}; npu-smi info exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ),
        Err(_) => empty(None, format!("{dcmi_err}, and no npu-smi on PATH")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format of npu-smi 24.1.rc2 on a 910B (telemetry.md §2.3), borders as printed.
    #[test]
    fn npu_smi_table() {
        let t = "+---+\n| npu-smi 24.1.rc2                 Version: 24.1.rc2                 |\n\
| NPU  Name  | Health       | Power(W)  Temp(C)          Hugepages-Usage(page) |\n\
| Chip       | Bus-Id       | AICore(%) Memory-Usage(MB) HBM-Usage(MB)         |\n\
+===+\n\
| 0    910B3 | OK           | 99.1      37               0    / 0              |\n\
| 0          | 0000:C1:00.0 | 12        0    / 0         59784/ 65536          |\n\
+===+\n\
| 1    910B3 | OK           | 88.0      35               0    / 0              |\n\
| 0          | 0000:C2:00.0 | 0         0    / 0         3276 / 65536          |\n";
        let n = parse_npu_smi(t);
        assert_eq!(n.len(), 2);
        assert_eq!((n[0].card_id, n[0].chip_name.as_str()), (0, "910B3"));
        assert_eq!((n[0].power_w, n[0].temperature_c), (Some(99.1), Some(37.0)));
        assert_eq!(n[0].aicore_util_pct, Some(12.0));
        assert_eq!(
            (n[0].hbm_used_mb, n[0].hbm_total_mb),
            (Some(59784), Some(65536))
        );
        assert_eq!(n[1].bus_id.as_deref(), Some("0000:C2:00.0"));
        assert_eq!(n[1].hbm_used_mb, Some(3276));
        assert_eq!(dcmi_code(-8008), "-8008 (device does not exist)");
    }
}
