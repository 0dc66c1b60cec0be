//! An emulator of Ascend's `libdcmi.so` (the driver's device-management interface): the
//! DCMI symbols acceval reads, with the signatures of `dcmi_interface_api.h`, so acceval's
//! identification and 1 s sampling run without an NPU. It marks itself with the symbol
//! `acceval_emulator` and a chip name that says "emulated": never certified.
//!
//! - Every query before `dcmi_init` returns -8005 (the emulator's reading of "dcmi_init
//!   first"; the real library's code for it is not documented).
//! - `DCMI_FAKE_CARDS` cards (default 1) of one chip each, `DCMI_FAKE_CHIP` (910B3).
//! - Power (0.1 W units, as DCMI reports it) ramps from `DCMI_FAKE_POWER_BASE` W (80) by
//!   `DCMI_FAKE_POWER_SLOPE` W/s (2) up to `DCMI_FAKE_POWER_MAX` (310); AI Core utilization
//!   from `DCMI_FAKE_UTIL_BASE` % (20) by `DCMI_FAKE_UTIL_SLOPE` %/s (5) up to 100. Both are
//!   anchored at UNIX time `DCMI_FAKE_T0` (default: when the library is first used), so a
//!   test can integrate the power it should have measured.
//! - `DCMI_FAKE_FAIL=SYMBOL:CODE[@N],...` fails the N-th call; `DCMI_FAKE_LOST_AFTER_S=T`
//!   makes every device query return -8008 (device absent) T s after the origin.

#[path = "common.rs"]
mod common;

use std::ffi::{c_char, c_int, c_uint};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{Faults, Ramp};

const OK: c_int = 0;
const BAD_PARAM: c_int = -8001;
const INNER: c_int = -8005;
const DEVICE_ABSENT: c_int = -8008;
const NOT_SUPPORTED: c_int = -8255;

static FAULTS: LazyLock<Faults> = LazyLock::new(|| Faults::from_env("DCMI_FAKE_FAIL"));
static INIT: AtomicBool = AtomicBool::new(false);
static POWER: LazyLock<Ramp> =
    LazyLock::new(|| Ramp::from_env("DCMI_FAKE_POWER", "DCMI_FAKE_T0", 80.0, 2.0, 310.0));
static UTIL: LazyLock<Ramp> =
    LazyLock::new(|| Ramp::from_env("DCMI_FAKE_UTIL", "DCMI_FAKE_T0", 20.0, 5.0, 100.0));

const MARKER: &std::ffi::CStr =
    c"acceval DCMI emulator 0.1 (a libdcmi.so stand-in: ramps, not a device; never certified)";

#[unsafe(no_mangle)]
pub extern "C" fn acceval_emulator() -> *const c_char {
    MARKER.as_ptr()
}

fn cards() -> c_int {
    common::env_u64("DCMI_FAKE_CARDS", 1) as c_int
}

/// Counts the call, injects a fault, checks init and the device, and turns a panic into an
/// inner error.
fn call(
    symbol: &'static str,
    device: Option<(c_int, c_int)>,
    body: impl FnOnce() -> c_int,
) -> c_int {
    if let Some((code, _)) = FAULTS.check(symbol) {
        return code as c_int;
    }
    if symbol != "dcmi_init" && !INIT.load(Ordering::SeqCst) {
        return INNER;
    }
    if let Some((card, dev)) = device {
        if card < 0 || card >= cards() || dev != 0 {
            return BAD_PARAM;
        }
        let lost = std::env::var("DCMI_FAKE_LOST_AFTER_S")
            .ok()
            .and_then(|v| v.parse::<f64>().ok());
        if lost.is_some_and(|t| common::unix_s() - POWER.t0_s >= t) {
            return DEVICE_ABSENT;
        }
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(INNER)
}

#[unsafe(no_mangle)]
pub extern "C" fn dcmi_init() -> c_int {
    call("dcmi_init", None, || {
        // Fix the ramps' origin now, if the environment did not.
        LazyLock::force(&POWER);
        LazyLock::force(&UTIL);
        INIT.store(true, Ordering::SeqCst);
        OK
    })
}

/// # Safety
/// `buf` must be valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_dcmi_version(buf: *mut c_char, len: c_uint) -> c_int {
    call("dcmi_get_dcmi_version", None, || {
        // SAFETY: the caller's buffer.
        unsafe { common::copy_cstr("24.1.0 (acceval emulator)", buf, len as usize) };
        OK
    })
}

/// # Safety
/// `buf` must be valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_driver_version(buf: *mut c_char, len: c_uint) -> c_int {
    call("dcmi_get_driver_version", None, || {
        // SAFETY: the caller's buffer.
        unsafe { common::copy_cstr("24.1.rc2 (acceval emulator)", buf, len as usize) };
        OK
    })
}

/// # Safety
/// `num` and `list` must be valid (`list` for `len` ints).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_card_list(
    num: *mut c_int,
    list: *mut c_int,
    len: c_int,
) -> c_int {
    call("dcmi_get_card_list", None, || {
        if num.is_null() || list.is_null() || len < cards() {
            return BAD_PARAM;
        }
        // SAFETY: checked; `len` >= the cards written.
        unsafe {
            *num = cards();
            for i in 0..cards() {
                *list.add(i as usize) = i;
            }
        }
        OK
    })
}

/// # Safety
/// As `dcmi_get_card_list` (its older name).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_card_num_list(
    num: *mut c_int,
    list: *mut c_int,
    len: c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { dcmi_get_card_list(num, list, len) }
}

/// # Safety
/// `num` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_device_num_in_card(card: c_int, num: *mut c_int) -> c_int {
    call("dcmi_get_device_num_in_card", Some((card, 0)), || {
        if num.is_null() {
            return BAD_PARAM;
        }
        // SAFETY: checked.
        unsafe { *num = 1 };
        OK
    })
}

/// # Safety
/// `logic` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_device_logic_id(
    logic: *mut c_int,
    card: c_int,
    dev: c_int,
) -> c_int {
    call("dcmi_get_device_logic_id", Some((card, dev)), || {
        if logic.is_null() {
            return BAD_PARAM;
        }
        // SAFETY: checked.
        unsafe { *logic = card };
        OK
    })
}

#[repr(C)]
pub struct ChipInfo {
    chip_type: [u8; 32],
    chip_name: [u8; 32],
    chip_ver: [u8; 32],
    aicore_cnt: c_uint,
}

/// # Safety
/// `info` must point to a `dcmi_chip_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_device_chip_info(
    card: c_int,
    dev: c_int,
    info: *mut ChipInfo,
) -> c_int {
    call("dcmi_get_device_chip_info", Some((card, dev)), || {
        if info.is_null() {
            return BAD_PARAM;
        }
        let chip = std::env::var("DCMI_FAKE_CHIP").unwrap_or_else(|_| "910B3".into());
        // SAFETY: checked; 32-byte fields.
        unsafe {
            let i = &mut *info;
            common::copy_cstr("Ascend", i.chip_type.as_mut_ptr().cast(), 32);
            common::copy_cstr(
                &format!("{chip} (emulated)"),
                i.chip_name.as_mut_ptr().cast(),
                32,
            );
            common::copy_cstr("V1", i.chip_ver.as_mut_ptr().cast(), 32);
            i.aicore_cnt = 24;
        }
        OK
    })
}

/// # Safety
/// `power` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_device_power_info(
    card: c_int,
    dev: c_int,
    power: *mut c_int,
) -> c_int {
    call("dcmi_get_device_power_info", Some((card, dev)), || {
        if power.is_null() {
            return BAD_PARAM;
        }
        // SAFETY: checked. DCMI's unit: 0.1 W.
        unsafe { *power = (POWER.now() * 10.0).round() as c_int };
        OK
    })
}

/// # Safety
/// `rate` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_device_utilization_rate(
    card: c_int,
    dev: c_int,
    input_type: c_int,
    rate: *mut c_uint,
) -> c_int {
    call(
        "dcmi_get_device_utilization_rate",
        Some((card, dev)),
        || {
            if rate.is_null() {
                return BAD_PARAM;
            }
            let v = match input_type {
                // AI Core.
                2 => UTIL.now(),
                // Memory and HBM: a steady share of the emulated 64 GB.
                1 | 6 => 5.0,
                _ => return NOT_SUPPORTED,
            };
            // SAFETY: checked.
            unsafe { *rate = v.round() as c_uint };
            OK
        },
    )
}

/// # Safety
/// `t` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_device_temperature(
    card: c_int,
    dev: c_int,
    t: *mut c_int,
) -> c_int {
    call("dcmi_get_device_temperature", Some((card, dev)), || {
        if t.is_null() {
            return BAD_PARAM;
        }
        // SAFETY: checked.
        unsafe { *t = (40.0 + UTIL.now() / 5.0).round() as c_int };
        OK
    })
}

#[repr(C)]
pub struct HbmInfo {
    memory_size: u64,
    freq: c_uint,
    memory_usage: u64,
    temp: c_int,
    bandwith_util_rate: c_uint,
}

/// # Safety
/// `info` must point to a `dcmi_hbm_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcmi_get_device_hbm_info(
    card: c_int,
    dev: c_int,
    info: *mut HbmInfo,
) -> c_int {
    call("dcmi_get_device_hbm_info", Some((card, dev)), || {
        if info.is_null() {
            return BAD_PARAM;
        }
        // SAFETY: checked.
        unsafe {
            *info = HbmInfo {
                memory_size: 65536,
                freq: 1600,
                memory_usage: common::env_u64("DCMI_FAKE_HBM_USED_MB", 3277),
                temp: 42,
                bandwith_util_rate: 0,
            }
        };
        OK
    })
}
