//! An emulator of NVIDIA's `libnvidia-ml.so.1`: the NVML symbols nvml-wrapper resolves for
//! what acceval reads (init, device count and handles, name, UUID, PCI bus id, memory,
//! utilization, power, total energy, clocks, temperature, power limit, throttle reasons,
//! driver and CUDA versions), with NVML's units and return codes. acceval loads it by path
//! exactly as it loads the real library; CUDA compute is not emulated. It marks itself with
//! the symbol `acceval_emulator` and a GPU name that says "emulated": never certified.
//!
//! - `NVML_FAKE_GPUS` GPUs (default 1), named `NVML_FAKE_NAME` (NVIDIA H200).
//! - Power (reported in mW) ramps from `NVML_FAKE_POWER_BASE` W (100) by
//!   `NVML_FAKE_POWER_SLOPE` W/s (3) up to `NVML_FAKE_POWER_MAX` (700); the total-energy
//!   counter (mJ) is its exact integral since the origin plus an offset (energy since
//!   "driver load"), so the counter and the integral of power can be compared. Utilization
//!   ramps from `NVML_FAKE_UTIL_BASE` % (30) by `NVML_FAKE_UTIL_SLOPE` %/s (4). The origin is
//!   UNIX time `NVML_FAKE_T0` (default: the first `nvmlInit`).
//! - `NVML_FAKE_FAIL=SYMBOL:CODE[@N],...` fails the N-th call of SYMBOL with CODE (e.g.
//!   999 UNKNOWN); `NVML_FAKE_LOST_AFTER_S=T` makes every device query return 15
//!   (GPU_IS_LOST) T s after the origin: a GPU that falls off the bus mid-run.

#[path = "common.rs"]
mod common;

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicI64, Ordering};

use common::{Faults, Ramp};

const SUCCESS: c_int = 0;
const UNINITIALIZED: c_int = 1;
const INVALID_ARGUMENT: c_int = 2;
const NOT_SUPPORTED: c_int = 3;
const INSUFFICIENT_SIZE: c_int = 7;
const GPU_IS_LOST: c_int = 15;
const UNKNOWN: c_int = 999;

/// Energy the counter held at the origin, mJ ("since the driver was loaded").
const ENERGY_AT_T0_MJ: f64 = 123_456_789.0;
const HANDLE_BASE: usize = 0x6E76_0000;

static FAULTS: LazyLock<Faults> = LazyLock::new(|| Faults::from_env("NVML_FAKE_FAIL"));
static REFS: AtomicI64 = AtomicI64::new(0);
static POWER: LazyLock<Ramp> =
    LazyLock::new(|| Ramp::from_env("NVML_FAKE_POWER", "NVML_FAKE_T0", 100.0, 3.0, 700.0));
static UTIL: LazyLock<Ramp> =
    LazyLock::new(|| Ramp::from_env("NVML_FAKE_UTIL", "NVML_FAKE_T0", 30.0, 4.0, 100.0));

const MARKER: &std::ffi::CStr =
    c"acceval NVML emulator 0.1 (a libnvidia-ml.so.1 stand-in: ramps, no GPU, no CUDA; never certified)";

#[unsafe(no_mangle)]
pub extern "C" fn acceval_emulator() -> *const c_char {
    MARKER.as_ptr()
}

fn gpus() -> u32 {
    common::env_u64("NVML_FAKE_GPUS", 1) as u32
}

/// The GPU index behind a handle, or the code to fail with.
fn index(dev: *mut c_void) -> Result<u32, c_int> {
    let i = (dev as usize).wrapping_sub(HANDLE_BASE);
    if i >= gpus() as usize {
        return Err(INVALID_ARGUMENT);
    }
    let lost = std::env::var("NVML_FAKE_LOST_AFTER_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok());
    if lost.is_some_and(|t| common::unix_s() - POWER.t0_s >= t) {
        return Err(GPU_IS_LOST);
    }
    Ok(i as u32)
}

/// Counts the call, injects a fault, checks init and turns a panic into UNKNOWN.
fn call(symbol: &'static str, body: impl FnOnce() -> c_int) -> c_int {
    if let Some((code, _)) = FAULTS.check(symbol) {
        return code as c_int;
    }
    if !symbol.starts_with("nvmlInit")
        && symbol != "nvmlErrorString"
        && REFS.load(Ordering::SeqCst) <= 0
    {
        return UNINITIALIZED;
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(UNKNOWN)
}

/// Runs `body` on a device's index, after the checks of [`call`] and [`index`].
fn on_device(symbol: &'static str, dev: *mut c_void, body: impl FnOnce(u32) -> c_int) -> c_int {
    call(symbol, || match index(dev) {
        Ok(i) => body(i),
        Err(c) => c,
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> c_int {
    call("nvmlInit_v2", || {
        LazyLock::force(&POWER);
        LazyLock::force(&UTIL);
        REFS.fetch_add(1, Ordering::SeqCst);
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> c_int {
    nvmlInit_v2()
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> c_int {
    call("nvmlShutdown", || {
        REFS.fetch_sub(1, Ordering::SeqCst);
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(code: c_int) -> *const c_char {
    match code {
        SUCCESS => c"Success",
        UNINITIALIZED => c"Uninitialized",
        INVALID_ARGUMENT => c"Invalid Argument",
        NOT_SUPPORTED => c"Not Supported",
        INSUFFICIENT_SIZE => c"Insufficient Size",
        GPU_IS_LOST => c"GPU is lost",
        _ => c"Unknown Error",
    }
    .as_ptr()
}

/// # Safety
/// `buf` must be valid for `len` bytes.
unsafe fn put_str(s: &str, buf: *mut c_char, len: c_uint) -> c_int {
    if buf.is_null() {
        return INVALID_ARGUMENT;
    }
    if s.len() + 1 > len as usize {
        return INSUFFICIENT_SIZE;
    }
    // SAFETY: the caller's buffer, large enough (checked).
    unsafe { common::copy_cstr(s, buf, len as usize) };
    SUCCESS
}

/// # Safety
/// `buf` must be valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(buf: *mut c_char, len: c_uint) -> c_int {
    // SAFETY: forwarded.
    call("nvmlSystemGetDriverVersion", || unsafe {
        put_str("580.95.05", buf, len)
    })
}

/// # Safety
/// `v` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(v: *mut c_int) -> c_int {
    call("nvmlSystemGetCudaDriverVersion_v2", || {
        if v.is_null() {
            return INVALID_ARGUMENT;
        }
        // SAFETY: checked. CUDA 13.0 as NVML encodes it.
        unsafe { *v = 13000 };
        SUCCESS
    })
}

/// # Safety
/// `v` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion(v: *mut c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe { nvmlSystemGetCudaDriverVersion_v2(v) }
}

/// # Safety
/// `n` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(n: *mut c_uint) -> c_int {
    call("nvmlDeviceGetCount_v2", || {
        if n.is_null() {
            return INVALID_ARGUMENT;
        }
        // SAFETY: checked.
        unsafe { *n = gpus() };
        SUCCESS
    })
}

/// # Safety
/// `dev` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(i: c_uint, dev: *mut *mut c_void) -> c_int {
    call("nvmlDeviceGetHandleByIndex_v2", || {
        if dev.is_null() || i >= gpus() {
            return INVALID_ARGUMENT;
        }
        // SAFETY: checked.
        unsafe { *dev = (HANDLE_BASE + i as usize) as *mut c_void };
        SUCCESS
    })
}

/// # Safety
/// `buf` must be valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    dev: *mut c_void,
    buf: *mut c_char,
    len: c_uint,
) -> c_int {
    on_device("nvmlDeviceGetName", dev, |_| {
        let name = std::env::var("NVML_FAKE_NAME").unwrap_or_else(|_| "NVIDIA H200".into());
        // SAFETY: forwarded.
        unsafe { put_str(&format!("{name} (emulated)"), buf, len) }
    })
}

/// # Safety
/// `buf` must be valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    dev: *mut c_void,
    buf: *mut c_char,
    len: c_uint,
) -> c_int {
    on_device("nvmlDeviceGetUUID", dev, |i| {
        // SAFETY: forwarded.
        unsafe {
            put_str(
                &format!("GPU-acce7a10-0000-4000-8000-00000000000{i}"),
                buf,
                len,
            )
        }
    })
}

#[repr(C)]
pub struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

/// # Safety
/// `p` must point to an `nvmlPciInfo_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(dev: *mut c_void, p: *mut PciInfo) -> c_int {
    on_device("nvmlDeviceGetPciInfo_v3", dev, |i| {
        if p.is_null() {
            return INVALID_ARGUMENT;
        }
        let bus = 0x18 + i;
        // SAFETY: checked; fixed-size buffers.
        unsafe {
            let o = &mut *p;
            common::copy_cstr(
                &format!("0000:{bus:02X}:00.0"),
                o.bus_id_legacy.as_mut_ptr(),
                16,
            );
            common::copy_cstr(
                &format!("00000000:{bus:02X}:00.0"),
                o.bus_id.as_mut_ptr(),
                32,
            );
            (o.domain, o.bus, o.device) = (0, bus, 0);
            (o.pci_device_id, o.pci_sub_system_id) = (0x2335_10DE, 0x18BE_10DE);
        }
        SUCCESS
    })
}

const MEM_TOTAL: u64 = 150_754_820_096;
const MEM_USED: u64 = 4_529_848_320;

#[repr(C)]
pub struct MemoryV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// # Safety
/// `m` must point to an `nvmlMemory_v2_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(dev: *mut c_void, m: *mut MemoryV2) -> c_int {
    on_device("nvmlDeviceGetMemoryInfo_v2", dev, |_| {
        if m.is_null() {
            return INVALID_ARGUMENT;
        }
        // SAFETY: checked.
        unsafe {
            let o = &mut *m;
            if o.version >> 24 != 2 {
                return INVALID_ARGUMENT;
            }
            (o.total, o.reserved, o.used) = (MEM_TOTAL, 0, MEM_USED);
            o.free = MEM_TOTAL - MEM_USED;
        }
        SUCCESS
    })
}

#[repr(C)]
pub struct MemoryV1 {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// # Safety
/// `m` must point to an `nvmlMemory_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(dev: *mut c_void, m: *mut MemoryV1) -> c_int {
    on_device("nvmlDeviceGetMemoryInfo", dev, |_| {
        if m.is_null() {
            return INVALID_ARGUMENT;
        }
        // SAFETY: checked.
        unsafe {
            *m = MemoryV1 {
                total: MEM_TOTAL,
                free: MEM_TOTAL - MEM_USED,
                used: MEM_USED,
            }
        };
        SUCCESS
    })
}

/// # Safety
/// `u` must point to an `nvmlUtilization_t` ({gpu, memory}).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    dev: *mut c_void,
    u: *mut [c_uint; 2],
) -> c_int {
    on_device("nvmlDeviceGetUtilizationRates", dev, |_| {
        if u.is_null() {
            return INVALID_ARGUMENT;
        }
        let g = UTIL.now().round() as c_uint;
        // SAFETY: checked.
        unsafe { *u = [g, g / 2] };
        SUCCESS
    })
}

/// # Safety
/// `mw` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(dev: *mut c_void, mw: *mut c_uint) -> c_int {
    on_device("nvmlDeviceGetPowerUsage", dev, |_| {
        if mw.is_null() {
            return INVALID_ARGUMENT;
        }
        // SAFETY: checked. NVML's unit: mW.
        unsafe { *mw = (POWER.now() * 1e3).round() as c_uint };
        SUCCESS
    })
}

/// # Safety
/// `mj` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEnergyConsumption(
    dev: *mut c_void,
    mj: *mut c_ulonglong,
) -> c_int {
    on_device("nvmlDeviceGetTotalEnergyConsumption", dev, |_| {
        if mj.is_null() {
            return INVALID_ARGUMENT;
        }
        let now = common::unix_s();
        let e = ENERGY_AT_T0_MJ + POWER.integral(POWER.t0_s, now) * 1e3;
        // SAFETY: checked. NVML's unit: mJ since the driver was loaded.
        unsafe { *mj = e as c_ulonglong };
        SUCCESS
    })
}

/// # Safety
/// `mw` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(
    dev: *mut c_void,
    mw: *mut c_uint,
) -> c_int {
    on_device("nvmlDeviceGetEnforcedPowerLimit", dev, |_| {
        if mw.is_null() {
            return INVALID_ARGUMENT;
        }
        // SAFETY: checked.
        unsafe { *mw = (POWER.max * 1e3) as c_uint };
        SUCCESS
    })
}

/// # Safety
/// `mhz` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    dev: *mut c_void,
    clock: c_int,
    mhz: *mut c_uint,
) -> c_int {
    on_device("nvmlDeviceGetClockInfo", dev, |_| {
        if mhz.is_null() {
            return INVALID_ARGUMENT;
        }
        // Graphics 0, SM 1, memory 2, video 3.
        let v = match clock {
            0 | 1 => 1980,
            2 => 3201,
            3 => 1755,
            _ => return INVALID_ARGUMENT,
        };
        // SAFETY: checked.
        unsafe { *mhz = v };
        SUCCESS
    })
}

/// # Safety
/// `t` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    dev: *mut c_void,
    sensor: c_int,
    t: *mut c_uint,
) -> c_int {
    on_device("nvmlDeviceGetTemperature", dev, |_| {
        if t.is_null() || sensor != 0 {
            return INVALID_ARGUMENT;
        }
        // SAFETY: checked.
        unsafe { *t = (35.0 + UTIL.now() / 4.0).round() as c_uint };
        SUCCESS
    })
}

/// # Safety
/// `r` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    dev: *mut c_void,
    r: *mut c_ulonglong,
) -> c_int {
    on_device("nvmlDeviceGetCurrentClocksThrottleReasons", dev, |_| {
        if r.is_null() {
            return INVALID_ARGUMENT;
        }
        // SAFETY: checked. 0: not throttled.
        unsafe { *r = 0 };
        SUCCESS
    })
}
