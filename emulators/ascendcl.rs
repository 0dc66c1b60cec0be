//! An emulator of CANN's `libascendcl.so`: the ACL symbols acceval uses, exported with their
//! C signatures, so acceval's FFI code, state handling and teardown run without an Ascend
//! NPU. It proves acceval's code, never the hardware: it says so in its SoC name and in the
//! marker symbol `acceval_emulator`, which acceval reads to label every output "emulated".
//!
//! What it emulates:
//! - ACL's state machine: `aclInit` once (again: 100002), calls before it 100001, after
//!   `aclFinalize` 100001, a thread without a current context 107002, an unknown device
//!   107001, unknown handles 100000.
//! - Device memory: host memory with a header ({magic, size, device}) and a registry of live
//!   allocations. `aclrtMemcpy` checks `count <= destMax`, that `destMax` fits the device
//!   allocation, and that the device side of the copy kind is device memory and the host
//!   side is not (a swapped kind is a classic bug): otherwise 100000 with a message.
//! - Models: `aclmdlLoadFromFile` reads the container the stand-in `atc` writes (see om.rs)
//!   and runs its ONNX model on the host CPU with acceval's tract engine, so outputs are
//!   real and checkable. A model compiled for another SoC is 507008.
//! - Faults: `ACL_FAKE_FAIL=SYMBOL:CODE[@N],...` fails the N-th call of SYMBOL (every call
//!   without @N) with CODE and sets `aclGetRecentErrMsg`.
//! - Latency: `ACL_FAKE_H2D_US`, `ACL_FAKE_D2H_US` and `ACL_FAKE_EXEC_US` add exact waits to
//!   each host-to-device copy, device-to-host copy and execution; `ACL_FAKE_LOAD_US` sleeps
//!   in each `aclmdlLoadFromFile` (a slow load).
//! - Stats: live allocations, buffers, datasets, descriptions, models, contexts and streams;
//!   written as JSON to `ACL_FAKE_STATS` (a file path) at `aclrtResetDevice` and
//!   `aclFinalize`, so a test can check that nothing leaked after teardown.
//! - `ACL_FAKE_SOC` (default Ascend910B3), `ACL_FAKE_DEVICES` (1), `ACL_FAKE_HBM_MB` (65536),
//!   `ACL_FAKE_RUN_MODE=device` (ACL_DEVICE instead of ACL_HOST), `ACL_FAKE_THREADS`.

#[path = "common.rs"]
mod common;
#[path = "om.rs"]
mod om;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::AssertUnwindSafe;
use std::sync::{LazyLock, Mutex, MutexGuard};

use acceval::backend::{BackendSpec, LoadOptions, Session};
use acceval::model::tensor::{HostTensor, TensorData};

use common::Faults;

// ACL's codes (acl_base.h, rt_error_codes.h).
const SUCCESS: i32 = 0;
const INVALID_PARAM: i32 = 100000;
const UNINITIALIZE: i32 = 100001;
const REPEAT_INITIALIZE: i32 = 100002;
const INVALID_FILE: i32 = 100003;
const INVALID_MODEL_ID: i32 = 100011;
const DESERIALIZE_MODEL: i32 = 100012;
const PARSE_MODEL: i32 = 100013;
const MODEL_INPUT_NOT_MATCH: i32 = 100017;
const MODEL_OUTPUT_NOT_MATCH: i32 = 100018;
const BAD_ALLOC: i32 = 200000;
const INVALID_DEVICEID: i32 = 107001;
const CONTEXT_NULL: i32 = 107002;
const SOC_VERSION: i32 = 507008;
const MODEL_EXECUTE: i32 = 507011;
const INTERNAL: i32 = 500000;

const MARKER: &CStr = c"acceval CANN emulator 0.1 (a libascendcl.so stand-in: models run on the host CPU; never certified)";
const DEVICE_MAGIC: u64 = 0xACCE_DE71_CE00_0001;
const HEADER: usize = 64;

static FAULTS: LazyLock<Faults> = LazyLock::new(|| Faults::from_env("ACL_FAKE_FAIL"));
static SOC: LazyLock<CString> = LazyLock::new(|| {
    CString::new(std::env::var("ACL_FAKE_SOC").unwrap_or_else(|_| "Ascend910B3".into()))
        .unwrap_or_else(|_| c"Ascend910B3".to_owned())
});
static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::default()));

thread_local! {
    static CURRENT: Cell<usize> = const { Cell::new(0) };
    static RECENT: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// A loaded model. The acceval session is used under the state lock only.
struct Model {
    header: om::Header,
    session: Box<dyn Session>,
    /// Round FP32 inputs and outputs to FP16 (ATC's fp16 precision modes).
    fp16_io: bool,
}

// SAFETY: a `Model` is only reached through `STATE`'s mutex, one thread at a time.
unsafe impl Send for Model {}

struct Desc {
    model: Option<u32>,
    header: Option<om::Header>,
    names: Vec<CString>,
}

#[derive(Default)]
struct State {
    initialized: bool,
    finalized: bool,
    device_refs: HashMap<i32, u32>,
    /// Context handle -> device.
    contexts: HashMap<usize, i32>,
    /// Each device's default context, created by `aclrtSetDevice`.
    default_ctx: HashMap<i32, usize>,
    streams: HashMap<usize, usize>,
    /// Device pointer -> (size, device).
    allocs: BTreeMap<usize, (usize, i32)>,
    peak_bytes: usize,
    host_allocs: HashMap<usize, usize>,
    models: HashMap<u32, Model>,
    next_model: u32,
    descs: HashMap<usize, ()>,
    datasets: HashMap<usize, Vec<usize>>,
    buffers: HashMap<usize, (usize, usize)>,
    next_handle: usize,
    executions: u64,
    faults_injected: u64,
}

impl State {
    fn handle(&mut self) -> usize {
        // Handles are opaque to the caller; odd numbers far from any heap address.
        self.next_handle += 1;
        0x7ACE_0000_0001 + 2 * self.next_handle
    }

    fn live_bytes(&self) -> usize {
        self.allocs.values().map(|a| a.0).sum()
    }

    /// Where `[p, p + len)` lies: Some(true) inside one device allocation, Some(false)
    /// outside all, None straddling one.
    fn device_range(&self, p: usize, len: usize) -> Option<bool> {
        match self.allocs.range(..=p).next_back() {
            Some((&base, &(size, _))) if p < base + size => {
                (p + len <= base + size).then_some(true)
            }
            _ => {
                // A host range must not run into an allocation either.
                let end = p.saturating_add(len);
                match self.allocs.range(p..end.max(p + 1)).next() {
                    Some(_) if len > 0 => None,
                    _ => Some(false),
                }
            }
        }
    }

    /// Bytes left in the device allocation holding `p`.
    fn room(&self, p: usize) -> usize {
        match self.allocs.range(..=p).next_back() {
            Some((&base, &(size, _))) if p < base + size => base + size - p,
            _ => 0,
        }
    }

    fn stats(&self) -> String {
        let calls = FAULTS.calls();
        serde_json::json!({
            "emulator": MARKER.to_str().unwrap_or_default(),
            "initialized": self.initialized,
            "finalized": self.finalized,
            "device_refs": self.device_refs.values().sum::<u32>(),
            "contexts": self.contexts.len(),
            "streams": self.streams.len(),
            "live_device_allocations": self.allocs.len(),
            "live_device_bytes": self.live_bytes(),
            "peak_device_bytes": self.peak_bytes,
            "live_host_allocations": self.host_allocs.len(),
            "loaded_models": self.models.len(),
            "live_descs": self.descs.len(),
            "live_datasets": self.datasets.len(),
            "live_buffers": self.buffers.len(),
            "executions": self.executions,
            "faults_injected": self.faults_injected,
            "calls": calls,
        })
        .to_string()
    }

    fn write_stats(&self) {
        if let Ok(p) = std::env::var("ACL_FAKE_STATS") {
            common::write_file(&p, &self.stats());
        }
    }
}

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

fn set_err(msg: String) {
    RECENT.with(|r| *r.borrow_mut() = CString::new(msg.replace('\0', " ")).ok());
}

/// Fails with `code` and `msg` as the recent error message.
fn fail(code: i32, msg: impl Into<String>) -> i32 {
    set_err(format!("EE{code}: {} [acceval CANN emulator]", msg.into()));
    code
}

/// The state, initialised and with a current context on this thread, or the code to fail
/// with.
fn ready(need_ctx: bool) -> Result<MutexGuard<'static, State>, i32> {
    let s = state();
    if !s.initialized || s.finalized {
        return Err(fail(
            UNINITIALIZE,
            "aclInit has not been called (or aclFinalize has)",
        ));
    }
    if need_ctx {
        let c = CURRENT.with(Cell::get);
        if c == 0 || !s.contexts.contains_key(&c) {
            return Err(fail(
                CONTEXT_NULL,
                "no current context on this thread: call aclrtSetDevice or aclrtSetCurrentContext first",
            ));
        }
    }
    Ok(s)
}

/// Runs an exported function: counts the call, injects a configured fault, and turns a
/// panic into `INTERNAL` (a panic must not unwind into C).
fn call<T>(symbol: &'static str, failed: impl Fn(i32) -> T, body: impl FnOnce() -> T) -> T {
    if let Some((code, n)) = FAULTS.check(symbol) {
        state().faults_injected += 1;
        let code = code as i32;
        set_err(format!(
            "EE{code}: {symbol} failed: injected by ACL_FAKE_FAIL (call {n}) [acceval CANN emulator]"
        ));
        return failed(code);
    }
    match std::panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            fail(
                INTERNAL,
                format!("{symbol} panicked in the emulator: {what}"),
            );
            failed(INTERNAL)
        }
    }
}

fn code(c: i32) -> i32 {
    c
}

/// The marker acceval looks for: this library is an emulator.
#[unsafe(no_mangle)]
pub extern "C" fn acceval_emulator() -> *const c_char {
    MARKER.as_ptr()
}

/// The emulator's counters as JSON (tests; not an ACL symbol).
///
/// # Safety
/// `buf` must be valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acl_fake_stats(buf: *mut c_char, len: usize) -> usize {
    let s = state().stats();
    // SAFETY: the caller's buffer of `len` bytes.
    unsafe { common::copy_cstr(&s, buf, len) };
    s.len()
}

#[unsafe(no_mangle)]
pub extern "C" fn aclInit(_config: *const c_char) -> i32 {
    call("aclInit", code, || {
        let mut s = state();
        if s.initialized || s.finalized {
            return fail(
                REPEAT_INITIALIZE,
                "aclInit was already called in this process",
            );
        }
        s.initialized = true;
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclFinalize() -> i32 {
    call("aclFinalize", code, || {
        let mut s = state();
        if s.finalized {
            return fail(100037, "aclFinalize was already called");
        }
        if !s.initialized {
            return fail(UNINITIALIZE, "aclFinalize before aclInit");
        }
        s.finalized = true;
        s.write_stats();
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclGetRecentErrMsg() -> *const c_char {
    RECENT.with(|r| r.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}

fn devices() -> i32 {
    common::env_u64("ACL_FAKE_DEVICES", 1) as i32
}

/// # Safety
/// `count` must be a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetDeviceCount(count: *mut u32) -> i32 {
    call("aclrtGetDeviceCount", code, || {
        if let Err(c) = ready(false) {
            return c;
        }
        if count.is_null() {
            return fail(INVALID_PARAM, "count is NULL");
        }
        // SAFETY: checked non-null; the caller's out-pointer.
        unsafe { *count = devices() as u32 };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetDevice(device: i32) -> i32 {
    call("aclrtSetDevice", code, || {
        let mut s = match ready(false) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if device < 0 || device >= devices() {
            return fail(
                INVALID_DEVICEID,
                format!("device {device} does not exist ({} device(s))", devices()),
            );
        }
        *s.device_refs.entry(device).or_insert(0) += 1;
        let ctx = match s.default_ctx.get(&device) {
            Some(&c) => c,
            None => {
                let c = s.handle();
                s.contexts.insert(c, device);
                s.default_ctx.insert(device, c);
                c
            }
        };
        CURRENT.with(|c| c.set(ctx));
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtResetDevice(device: i32) -> i32 {
    call("aclrtResetDevice", code, || {
        let mut s = match ready(false) {
            Ok(s) => s,
            Err(c) => return c,
        };
        let Some(refs) = s.device_refs.get_mut(&device) else {
            return fail(INVALID_DEVICEID, format!("device {device} was not set"));
        };
        *refs -= 1;
        if *refs == 0 {
            s.device_refs.remove(&device);
            if let Some(c) = s.default_ctx.remove(&device) {
                s.contexts.remove(&c);
                if CURRENT.with(Cell::get) == c {
                    CURRENT.with(|x| x.set(0));
                }
            }
        }
        s.write_stats();
        SUCCESS
    })
}

/// # Safety
/// `mode` must be a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetRunMode(mode: *mut i32) -> i32 {
    call("aclrtGetRunMode", code, || {
        if let Err(c) = ready(false) {
            return c;
        }
        if mode.is_null() {
            return fail(INVALID_PARAM, "runMode is NULL");
        }
        let device = std::env::var("ACL_FAKE_RUN_MODE").is_ok_and(|m| m == "device");
        // SAFETY: checked non-null.
        unsafe { *mode = if device { 0 } else { 1 } };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetSocName() -> *const c_char {
    call(
        "aclrtGetSocName",
        |_| std::ptr::null(),
        || {
            if ready(false).is_err() {
                return std::ptr::null();
            }
            SOC.as_ptr()
        },
    )
}

/// # Safety
/// The three pointers must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetVersion(major: *mut i32, minor: *mut i32, patch: *mut i32) -> i32 {
    call("aclrtGetVersion", code, || {
        if major.is_null() || minor.is_null() || patch.is_null() {
            return fail(INVALID_PARAM, "a version pointer is NULL");
        }
        // SAFETY: checked non-null.
        unsafe {
            (*major, *minor, *patch) = (1, 0, 0);
        }
        SUCCESS
    })
}

/// # Safety
/// `ctx` must be a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtCreateContext(ctx: *mut *mut c_void, device: i32) -> i32 {
    call("aclrtCreateContext", code, || {
        let mut s = match ready(false) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if ctx.is_null() {
            return fail(INVALID_PARAM, "context is NULL");
        }
        if device < 0 || device >= devices() {
            return fail(INVALID_DEVICEID, format!("device {device} does not exist"));
        }
        let c = s.handle();
        s.contexts.insert(c, device);
        CURRENT.with(|x| x.set(c));
        // SAFETY: checked non-null.
        unsafe { *ctx = c as *mut c_void };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyContext(ctx: *mut c_void) -> i32 {
    call("aclrtDestroyContext", code, || {
        let mut s = match ready(false) {
            Ok(s) => s,
            Err(c) => return c,
        };
        let c = ctx as usize;
        if s.default_ctx.values().any(|&d| d == c) {
            return fail(
                INVALID_PARAM,
                "the default context is destroyed by aclrtResetDevice",
            );
        }
        if s.contexts.remove(&c).is_none() {
            return fail(INVALID_PARAM, format!("context {c:#x} does not exist"));
        }
        if s.streams.values().any(|&owner| owner == c) {
            s.streams.retain(|_, owner| *owner != c);
        }
        if CURRENT.with(Cell::get) == c {
            CURRENT.with(|x| x.set(0));
        }
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetCurrentContext(ctx: *mut c_void) -> i32 {
    call("aclrtSetCurrentContext", code, || {
        let s = match ready(false) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if !s.contexts.contains_key(&(ctx as usize)) {
            return fail(
                INVALID_PARAM,
                format!("context {:#x} does not exist", ctx as usize),
            );
        }
        CURRENT.with(|x| x.set(ctx as usize));
        SUCCESS
    })
}

/// # Safety
/// `stream` must be a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtCreateStream(stream: *mut *mut c_void) -> i32 {
    call("aclrtCreateStream", code, || {
        let mut s = match ready(true) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if stream.is_null() {
            return fail(INVALID_PARAM, "stream is NULL");
        }
        let h = s.handle();
        s.streams.insert(h, CURRENT.with(Cell::get));
        // SAFETY: checked non-null.
        unsafe { *stream = h as *mut c_void };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyStream(stream: *mut c_void) -> i32 {
    call("aclrtDestroyStream", code, || {
        let mut s = match ready(false) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if s.streams.remove(&(stream as usize)).is_none() {
            return fail(INVALID_PARAM, "the stream does not exist");
        }
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeStream(stream: *mut c_void) -> i32 {
    call("aclrtSynchronizeStream", code, || {
        let s = match ready(true) {
            Ok(s) => s,
            Err(c) => return c,
        };
        // Work runs synchronously here: a known stream has nothing pending.
        if !stream.is_null() && !s.streams.contains_key(&(stream as usize)) {
            return fail(INVALID_PARAM, "the stream does not exist");
        }
        SUCCESS
    })
}

fn layout(size: usize) -> Option<std::alloc::Layout> {
    std::alloc::Layout::from_size_align(size.checked_add(HEADER)?, HEADER).ok()
}

/// # Safety
/// `ptr` must be a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtMalloc(ptr: *mut *mut c_void, size: usize, _policy: i32) -> i32 {
    call("aclrtMalloc", code, || {
        let mut s = match ready(true) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if ptr.is_null() || size == 0 {
            return fail(INVALID_PARAM, format!("devPtr NULL or size {size} is 0"));
        }
        let hbm = common::env_u64("ACL_FAKE_HBM_MB", 65536) as usize * 1_000_000;
        if s.live_bytes() + size > hbm {
            return fail(
                207018,
                format!(
                    "device out of memory: {size} bytes asked, {} free",
                    hbm - s.live_bytes()
                ),
            );
        }
        let Some(l) = layout(size) else {
            return fail(BAD_ALLOC, format!("{size} bytes cannot be allocated"));
        };
        let device = s
            .contexts
            .get(&CURRENT.with(Cell::get))
            .copied()
            .unwrap_or(0);
        // SAFETY: a non-zero layout; the header is written inside the allocation.
        let base = unsafe { std::alloc::alloc_zeroed(l) };
        if base.is_null() {
            return fail(
                BAD_ALLOC,
                format!("{size} bytes: the host is out of memory"),
            );
        }
        // SAFETY: the header's 64 bytes are inside the allocation, aligned to 64.
        unsafe {
            (base as *mut u64).write(DEVICE_MAGIC);
            (base as *mut u64).add(1).write(size as u64);
            (base as *mut i32).add(4).write(device);
        }
        let user = base as usize + HEADER;
        s.allocs.insert(user, (size, device));
        s.peak_bytes = s.peak_bytes.max(s.live_bytes());
        // SAFETY: checked non-null.
        unsafe { *ptr = user as *mut c_void };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtFree(ptr: *mut c_void) -> i32 {
    call("aclrtFree", code, || {
        let mut s = match ready(false) {
            Ok(s) => s,
            Err(c) => return c,
        };
        let Some((size, _)) = s.allocs.remove(&(ptr as usize)) else {
            return fail(
                INVALID_PARAM,
                format!("{:#x} is not device memory from aclrtMalloc", ptr as usize),
            );
        };
        let base = (ptr as usize - HEADER) as *mut u8;
        // SAFETY: allocated by aclrtMalloc with this layout; the magic is checked first.
        unsafe {
            if (base as *const u64).read() != DEVICE_MAGIC {
                return fail(
                    INTERNAL,
                    "device memory header overwritten (a write before the buffer)",
                );
            }
            if let Some(l) = layout(size) {
                std::alloc::dealloc(base, l);
            }
        }
        SUCCESS
    })
}

/// # Safety
/// `ptr` must be a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtMallocHost(ptr: *mut *mut c_void, size: usize) -> i32 {
    call("aclrtMallocHost", code, || {
        let mut s = match ready(true) {
            Ok(s) => s,
            Err(c) => return c,
        };
        let Some(l) = std::alloc::Layout::from_size_align(size.max(1), 64).ok() else {
            return fail(BAD_ALLOC, "bad size");
        };
        if ptr.is_null() {
            return fail(INVALID_PARAM, "hostPtr is NULL");
        }
        // SAFETY: a non-zero layout.
        let p = unsafe { std::alloc::alloc_zeroed(l) };
        if p.is_null() {
            return fail(BAD_ALLOC, "host out of memory");
        }
        s.host_allocs.insert(p as usize, size.max(1));
        // SAFETY: checked non-null.
        unsafe { *ptr = p as *mut c_void };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclrtFreeHost(ptr: *mut c_void) -> i32 {
    call("aclrtFreeHost", code, || {
        let mut s = match ready(false) {
            Ok(s) => s,
            Err(c) => return c,
        };
        let Some(size) = s.host_allocs.remove(&(ptr as usize)) else {
            return fail(INVALID_PARAM, "not memory from aclrtMallocHost");
        };
        if let Ok(l) = std::alloc::Layout::from_size_align(size, 64) {
            // SAFETY: allocated by aclrtMallocHost with this layout.
            unsafe { std::alloc::dealloc(ptr as *mut u8, l) };
        }
        SUCCESS
    })
}

/// # Safety
/// `dst` and `src` must be valid for the sizes given, as for the real ACL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtMemcpy(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
) -> i32 {
    call("aclrtMemcpy", code, || {
        let s = match ready(true) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if dst.is_null() || src.is_null() {
            return fail(INVALID_PARAM, "dst or src is NULL");
        }
        if count > dest_max {
            return fail(
                INVALID_PARAM,
                format!("count {count} is larger than destMax {dest_max}"),
            );
        }
        let (want_dst, want_src, name) = match kind {
            0 => (false, false, "ACL_MEMCPY_HOST_TO_HOST"),
            1 => (true, false, "ACL_MEMCPY_HOST_TO_DEVICE"),
            2 => (false, true, "ACL_MEMCPY_DEVICE_TO_HOST"),
            3 => (true, true, "ACL_MEMCPY_DEVICE_TO_DEVICE"),
            k => return fail(INVALID_PARAM, format!("memcpy kind {k} is not 0..3")),
        };
        let d = s.device_range(dst as usize, count);
        let r = s.device_range(src as usize, count);
        let side = |x: Option<bool>| match x {
            Some(true) => "device memory",
            Some(false) => "host memory",
            None => "a range that runs past a device allocation",
        };
        if d != Some(want_dst) || r != Some(want_src) {
            return fail(
                INVALID_PARAM,
                format!(
                    "{name}: dst is {}, src is {} (is the copy kind swapped?)",
                    side(d),
                    side(r)
                ),
            );
        }
        if want_dst && dest_max > s.room(dst as usize) {
            return fail(
                INVALID_PARAM,
                format!(
                    "destMax {dest_max} is larger than the device allocation at dst ({} bytes)",
                    s.room(dst as usize)
                ),
            );
        }
        drop(s);
        // SAFETY: ranges checked against the registry (device side) and the caller's
        // contract (host side); the two do not overlap (one is device, one host, or both
        // distinct allocations the caller named).
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, count) };
        match kind {
            1 => common::spin_us(common::env_u64("ACL_FAKE_H2D_US", 0)),
            2 => common::spin_us(common::env_u64("ACL_FAKE_D2H_US", 0)),
            _ => {}
        }
        SUCCESS
    })
}

/// # Safety
/// `free` and `total` must be valid pointers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetMemInfo(_attr: i32, free: *mut usize, total: *mut usize) -> i32 {
    call("aclrtGetMemInfo", code, || {
        let s = match ready(true) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if free.is_null() || total.is_null() {
            return fail(INVALID_PARAM, "free or total is NULL");
        }
        let hbm = common::env_u64("ACL_FAKE_HBM_MB", 65536) as usize * 1_000_000;
        // SAFETY: checked non-null.
        unsafe {
            *total = hbm;
            *free = hbm.saturating_sub(s.live_bytes());
        }
        SUCCESS
    })
}

// ---------------------------------------------------------------------------------------
// Models.

fn load_model(path: &str) -> Result<Model, i32> {
    let bytes = std::fs::read(path)
        .map_err(|e| fail(INVALID_FILE, format!("cannot read '{path}': {e}")))?;
    let (header, onnx) = match om::read(&bytes) {
        Ok(x) => x,
        Err(om::ReadError::NotOm) => {
            return Err(fail(
                DESERIALIZE_MODEL,
                format!(
                    "'{path}' is not an .om model this emulator can load (convert it with the stand-in atc)"
                ),
            ));
        }
        Err(om::ReadError::Corrupt(why)) => {
            return Err(fail(DESERIALIZE_MODEL, format!("'{path}': {why}")));
        }
    };
    let soc = SOC.to_str().unwrap_or_default();
    if header.soc_version != soc {
        return Err(fail(
            SOC_VERSION,
            format!(
                "the model was compiled for {} and this device is {soc}",
                header.soc_version
            ),
        ));
    }
    let tmp = std::env::temp_dir().join(format!(
        "acceval-emulated-om-{}-{}.onnx",
        std::process::id(),
        header.source_sha256.get(..16).unwrap_or("model")
    ));
    std::fs::write(&tmp, onnx)
        .map_err(|e| fail(INTERNAL, format!("cannot stage the model: {e}")))?;
    let spec: BackendSpec = "cpu".parse().map_err(|e: String| fail(INTERNAL, e))?;
    let opts = LoadOptions {
        input_shapes: header
            .inputs
            .iter()
            .map(|i| {
                (
                    i.name.clone(),
                    i.dims.iter().map(|&d| d.max(0) as usize).collect(),
                )
            })
            .collect(),
        threads: std::env::var("ACL_FAKE_THREADS")
            .ok()
            .and_then(|t| t.parse().ok()),
        ..Default::default()
    };
    let loaded = acceval::backend::load(&tmp, &spec, &opts);
    let _ = std::fs::remove_file(&tmp);
    let session = loaded.map_err(|e| {
        fail(
            PARSE_MODEL,
            format!("the emulated device cannot run '{path}': {e}"),
        )
    })?;
    let fp16_io = header.fp16_io;
    Ok(Model {
        header,
        session,
        fp16_io,
    })
}

/// # Safety
/// `path` must be a C string, `id` a valid pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclmdlLoadFromFile(path: *const c_char, id: *mut u32) -> i32 {
    call("aclmdlLoadFromFile", code, || {
        if let Err(c) = ready(true) {
            return c;
        }
        if path.is_null() || id.is_null() {
            return fail(INVALID_PARAM, "modelPath or modelId is NULL");
        }
        // SAFETY: the caller's C string.
        let p = unsafe { CStr::from_ptr(path) }
            .to_string_lossy()
            .into_owned();
        // A slow load (a large model's weights going to HBM), for the load budget's tests:
        // a sleep, not a spin, since acceval abandons a thread stuck here.
        std::thread::sleep(std::time::Duration::from_micros(common::env_u64(
            "ACL_FAKE_LOAD_US",
            0,
        )));
        // Loading runs outside the lock (it compiles a model); registering under it.
        let model = match load_model(&p) {
            Ok(m) => m,
            Err(c) => return c,
        };
        let mut s = state();
        s.next_model += 1;
        let m = s.next_model;
        s.models.insert(m, model);
        // SAFETY: checked non-null.
        unsafe { *id = m };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlUnload(id: u32) -> i32 {
    call("aclmdlUnload", code, || {
        let mut s = match ready(true) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if s.models.remove(&id).is_none() {
            return fail(INVALID_MODEL_ID, format!("model {id} is not loaded"));
        }
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlCreateDesc() -> *mut c_void {
    call(
        "aclmdlCreateDesc",
        |_| std::ptr::null_mut(),
        || {
            let Ok(mut s) = ready(false) else {
                return std::ptr::null_mut();
            };
            let d = Box::into_raw(Box::new(Desc {
                model: None,
                header: None,
                names: Vec::new(),
            }));
            s.descs.insert(d as usize, ());
            d as *mut c_void
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlDestroyDesc(desc: *mut c_void) -> i32 {
    call("aclmdlDestroyDesc", code, || {
        let mut s = state();
        if s.descs.remove(&(desc as usize)).is_none() {
            return fail(
                INVALID_PARAM,
                "not a model description from aclmdlCreateDesc",
            );
        }
        // SAFETY: created by aclmdlCreateDesc and removed from the registry once.
        drop(unsafe { Box::from_raw(desc as *mut Desc) });
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDesc(desc: *mut c_void, id: u32) -> i32 {
    call("aclmdlGetDesc", code, || {
        let s = match ready(true) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if !s.descs.contains_key(&(desc as usize)) {
            return fail(
                INVALID_PARAM,
                "not a model description from aclmdlCreateDesc",
            );
        }
        let Some(m) = s.models.get(&id) else {
            return fail(INVALID_MODEL_ID, format!("model {id} is not loaded"));
        };
        // SAFETY: a live description (checked in the registry).
        let d = unsafe { &mut *(desc as *mut Desc) };
        d.model = Some(id);
        d.names = m
            .header
            .inputs
            .iter()
            .chain(&m.header.outputs)
            .map(|io| CString::new(io.name.clone()).unwrap_or_default())
            .collect();
        d.header = Some(m.header.clone());
        SUCCESS
    })
}

/// The description behind `desc`, if it is live and filled.
fn desc_io<T>(desc: *const c_void, f: impl FnOnce(&Desc, &om::Header) -> T) -> Option<T> {
    let s = state();
    if !s.descs.contains_key(&(desc as usize)) {
        return None;
    }
    // SAFETY: a live description (checked in the registry, under the lock).
    let d = unsafe { &*(desc as *const Desc) };
    d.header.as_ref().map(|h| f(d, h))
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetNumInputs(desc: *mut c_void) -> usize {
    call(
        "aclmdlGetNumInputs",
        |_| 0,
        || desc_io(desc, |_, h| h.inputs.len()).unwrap_or(0),
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetNumOutputs(desc: *mut c_void) -> usize {
    call(
        "aclmdlGetNumOutputs",
        |_| 0,
        || desc_io(desc, |_, h| h.outputs.len()).unwrap_or(0),
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputSizeByIndex(desc: *mut c_void, i: usize) -> usize {
    call(
        "aclmdlGetInputSizeByIndex",
        |_| 0,
        || desc_io(desc, |_, h| h.inputs.get(i).map_or(0, |x| x.bytes as usize)).unwrap_or(0),
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputSizeByIndex(desc: *mut c_void, i: usize) -> usize {
    call(
        "aclmdlGetOutputSizeByIndex",
        |_| 0,
        || {
            desc_io(desc, |_, h| {
                h.outputs.get(i).map_or(0, |x| x.bytes as usize)
            })
            .unwrap_or(0)
        },
    )
}

/// `aclmdlIODims`: 128 + 8 + 1024 = 1160 bytes on LP64.
#[repr(C)]
pub struct IoDims {
    name: [c_char; 128],
    dim_count: usize,
    dims: [i64; 128],
}

unsafe fn fill_dims(io: Option<&om::Io>, out: *mut IoDims) -> i32 {
    let Some(io) = io else {
        return fail(INVALID_PARAM, "index out of range");
    };
    if out.is_null() || io.dims.len() > 128 {
        return fail(INVALID_PARAM, "dims is NULL or has over 128 dimensions");
    }
    // SAFETY: checked non-null; the caller's aclmdlIODims.
    let o = unsafe { &mut *out };
    // SAFETY: the name buffer is 128 bytes.
    unsafe { common::copy_cstr(&io.name, o.name.as_mut_ptr(), 128) };
    o.dim_count = io.dims.len();
    o.dims[..io.dims.len()].copy_from_slice(&io.dims);
    SUCCESS
}

/// # Safety
/// `dims` must point to an `aclmdlIODims`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclmdlGetInputDims(
    desc: *const c_void,
    i: usize,
    dims: *mut IoDims,
) -> i32 {
    call("aclmdlGetInputDims", code, || {
        // SAFETY: forwarded caller contract.
        desc_io(desc, |_, h| unsafe { fill_dims(h.inputs.get(i), dims) })
            .unwrap_or_else(|| fail(INVALID_PARAM, "not a filled model description"))
    })
}

/// # Safety
/// `dims` must point to an `aclmdlIODims`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclmdlGetOutputDims(
    desc: *const c_void,
    i: usize,
    dims: *mut IoDims,
) -> i32 {
    call("aclmdlGetOutputDims", code, || {
        // SAFETY: forwarded caller contract.
        desc_io(desc, |_, h| unsafe { fill_dims(h.outputs.get(i), dims) })
            .unwrap_or_else(|| fail(INVALID_PARAM, "not a filled model description"))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputDataType(desc: *const c_void, i: usize) -> i32 {
    call(
        "aclmdlGetInputDataType",
        |_| -1,
        || desc_io(desc, |_, h| h.inputs.get(i).map_or(-1, |x| x.acl_dtype)).unwrap_or(-1),
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputDataType(desc: *const c_void, i: usize) -> i32 {
    call(
        "aclmdlGetOutputDataType",
        |_| -1,
        || desc_io(desc, |_, h| h.outputs.get(i).map_or(-1, |x| x.acl_dtype)).unwrap_or(-1),
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetInputNameByIndex(desc: *const c_void, i: usize) -> *const c_char {
    call(
        "aclmdlGetInputNameByIndex",
        |_| std::ptr::null(),
        || {
            desc_io(desc, |d, h| {
                if i < h.inputs.len() {
                    d.names[i].as_ptr()
                } else {
                    std::ptr::null()
                }
            })
            .unwrap_or(std::ptr::null())
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetOutputNameByIndex(desc: *const c_void, i: usize) -> *const c_char {
    call(
        "aclmdlGetOutputNameByIndex",
        |_| std::ptr::null(),
        || {
            desc_io(desc, |d, h| {
                if i < h.outputs.len() {
                    d.names[h.inputs.len() + i].as_ptr()
                } else {
                    std::ptr::null()
                }
            })
            .unwrap_or(std::ptr::null())
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlCreateDataset() -> *mut c_void {
    call(
        "aclmdlCreateDataset",
        |_| std::ptr::null_mut(),
        || {
            let Ok(mut s) = ready(false) else {
                return std::ptr::null_mut();
            };
            let h = s.handle();
            s.datasets.insert(h, Vec::new());
            h as *mut c_void
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlDestroyDataset(ds: *const c_void) -> i32 {
    call("aclmdlDestroyDataset", code, || {
        // Destroying a dataset does not destroy its buffers (as in ACL).
        if state().datasets.remove(&(ds as usize)).is_none() {
            return fail(INVALID_PARAM, "not a dataset from aclmdlCreateDataset");
        }
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlAddDatasetBuffer(ds: *mut c_void, buf: *mut c_void) -> i32 {
    call("aclmdlAddDatasetBuffer", code, || {
        let mut s = state();
        if !s.buffers.contains_key(&(buf as usize)) {
            return fail(INVALID_PARAM, "not a data buffer from aclCreateDataBuffer");
        }
        match s.datasets.get_mut(&(ds as usize)) {
            Some(list) => {
                list.push(buf as usize);
                SUCCESS
            }
            None => fail(INVALID_PARAM, "not a dataset from aclmdlCreateDataset"),
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDatasetNumBuffers(ds: *const c_void) -> usize {
    call(
        "aclmdlGetDatasetNumBuffers",
        |_| 0,
        || state().datasets.get(&(ds as usize)).map_or(0, Vec::len),
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlGetDatasetBuffer(ds: *const c_void, i: usize) -> *mut c_void {
    call(
        "aclmdlGetDatasetBuffer",
        |_| std::ptr::null_mut(),
        || {
            state()
                .datasets
                .get(&(ds as usize))
                .and_then(|l| l.get(i))
                .map_or(std::ptr::null_mut(), |&b| b as *mut c_void)
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclCreateDataBuffer(data: *mut c_void, size: usize) -> *mut c_void {
    call(
        "aclCreateDataBuffer",
        |_| std::ptr::null_mut(),
        || {
            let mut s = state();
            let h = s.handle();
            s.buffers.insert(h, (data as usize, size));
            h as *mut c_void
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclDestroyDataBuffer(buf: *const c_void) -> i32 {
    call("aclDestroyDataBuffer", code, || {
        if state().buffers.remove(&(buf as usize)).is_none() {
            return fail(INVALID_PARAM, "not a data buffer from aclCreateDataBuffer");
        }
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclGetDataBufferAddr(buf: *const c_void) -> *mut c_void {
    call(
        "aclGetDataBufferAddr",
        |_| std::ptr::null_mut(),
        || {
            state()
                .buffers
                .get(&(buf as usize))
                .map_or(std::ptr::null_mut(), |b| b.0 as *mut c_void)
        },
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn aclGetDataBufferSizeV2(buf: *const c_void) -> usize {
    call(
        "aclGetDataBufferSizeV2",
        |_| 0,
        || state().buffers.get(&(buf as usize)).map_or(0, |b| b.1),
    )
}

/// The device ranges of a dataset's buffers, checked.
fn dataset_ranges(
    s: &State,
    ds: usize,
    what: &str,
    mismatch: i32,
) -> Result<Vec<(usize, usize)>, i32> {
    let list = s
        .datasets
        .get(&ds)
        .ok_or_else(|| fail(INVALID_PARAM, format!("the {what} dataset does not exist")))?;
    list.iter()
        .enumerate()
        .map(|(i, b)| {
            let &(p, n) = s
                .buffers
                .get(b)
                .ok_or_else(|| fail(INVALID_PARAM, format!("{what} buffer {i} was destroyed")))?;
            if s.device_range(p, n) != Some(true) {
                return Err(fail(
                    mismatch,
                    format!("{what} buffer {i} ({n} bytes at {p:#x}) is not device memory from aclrtMalloc"),
                ));
            }
            Ok((p, n))
        })
        .collect()
}

fn to_tensor(io: &om::Io, bytes: &[u8], fp16: bool) -> Result<TensorData, String> {
    let dims: Vec<usize> = io.dims.iter().map(|&d| d.max(0) as usize).collect();
    let shape = ndarray::IxDyn(&dims);
    macro_rules! arr {
        ($t:ty, $v:ident, $f:expr) => {{
            let w = std::mem::size_of::<$t>();
            let vals: Vec<$t> = bytes.chunks_exact(w).map($f).collect();
            TensorData::$v(ndarray::ArrayD::from_shape_vec(shape, vals).map_err(|e| e.to_string())?)
        }};
    }
    Ok(match io.acl_dtype {
        0 => arr!(f32, F32, |c| {
            let v = f32::from_le_bytes(c.try_into().unwrap_or_default());
            if fp16 {
                half::f16::from_f32(v).to_f32()
            } else {
                v
            }
        }),
        11 => arr!(f64, F64, |c| f64::from_le_bytes(
            c.try_into().unwrap_or_default()
        )),
        9 => arr!(i64, I64, |c| i64::from_le_bytes(
            c.try_into().unwrap_or_default()
        )),
        3 => arr!(i32, I32, |c| i32::from_le_bytes(
            c.try_into().unwrap_or_default()
        )),
        2 => arr!(i8, I8, |c| c[0] as i8),
        4 => arr!(u8, U8, |c| c[0]),
        12 => arr!(bool, Bool, |c| c[0] != 0),
        t => return Err(format!("aclDataType {t} is not exchanged by the emulator")),
    })
}

fn to_bytes(t: &TensorData, fp16: bool, out: &mut [u8]) -> usize {
    let mut n = 0;
    let mut put = |b: &[u8]| {
        if n + b.len() <= out.len() {
            out[n..n + b.len()].copy_from_slice(b);
        }
        n += b.len();
    };
    match t {
        TensorData::F32(a) => a.iter().for_each(|&v| {
            let v = if fp16 {
                half::f16::from_f32(v).to_f32()
            } else {
                v
            };
            put(&v.to_le_bytes())
        }),
        TensorData::F64(a) => a.iter().for_each(|v| put(&v.to_le_bytes())),
        TensorData::I64(a) => a.iter().for_each(|v| put(&v.to_le_bytes())),
        TensorData::I32(a) => a.iter().for_each(|v| put(&v.to_le_bytes())),
        TensorData::I8(a) => a.iter().for_each(|v| put(&v.to_le_bytes())),
        TensorData::U8(a) => a.iter().for_each(|v| put(&[*v])),
        TensorData::Bool(a) => a.iter().for_each(|v| put(&[*v as u8])),
    }
    n
}

fn execute(id: u32, input: usize, output: usize) -> i32 {
    let mut s = match ready(true) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let ins = match dataset_ranges(&s, input, "input", MODEL_INPUT_NOT_MATCH) {
        Ok(r) => r,
        Err(c) => return c,
    };
    let outs = match dataset_ranges(&s, output, "output", MODEL_OUTPUT_NOT_MATCH) {
        Ok(r) => r,
        Err(c) => return c,
    };
    let Some(model) = s.models.get_mut(&id) else {
        return fail(INVALID_MODEL_ID, format!("model {id} is not loaded"));
    };
    let h = &model.header;
    if ins.len() != h.inputs.len() {
        return fail(
            MODEL_INPUT_NOT_MATCH,
            format!(
                "{} input buffers for a model with {} inputs",
                ins.len(),
                h.inputs.len()
            ),
        );
    }
    if outs.len() != h.outputs.len() {
        return fail(
            MODEL_OUTPUT_NOT_MATCH,
            format!(
                "{} output buffers for a model with {} outputs",
                outs.len(),
                h.outputs.len()
            ),
        );
    }
    let mut tensors = Vec::with_capacity(ins.len());
    for (io, &(p, n)) in h.inputs.iter().zip(&ins) {
        if (n as u64) < io.bytes {
            return fail(
                MODEL_INPUT_NOT_MATCH,
                format!(
                    "input '{}' buffer holds {n} bytes, the model takes {}",
                    io.name, io.bytes
                ),
            );
        }
        // SAFETY: a live device allocation of at least `io.bytes` (checked above).
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, io.bytes as usize) };
        match to_tensor(io, bytes, model.fp16_io) {
            Ok(data) => tensors.push(HostTensor {
                name: io.name.clone(),
                data,
            }),
            Err(e) => return fail(MODEL_INPUT_NOT_MATCH, format!("input '{}': {e}", io.name)),
        }
    }
    let results = match model.session.run(&tensors) {
        Ok(r) => r,
        Err(e) => {
            return fail(
                MODEL_EXECUTE,
                format!("the model failed on the emulated device: {e}"),
            );
        }
    };
    let fp16 = model.fp16_io;
    for ((io, &(p, n)), t) in model.header.outputs.iter().zip(&outs).zip(&results) {
        // SAFETY: a live device allocation of `n` bytes (checked above).
        let out = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) };
        let wrote = to_bytes(&t.data, fp16, out);
        if wrote > n {
            return fail(
                MODEL_OUTPUT_NOT_MATCH,
                format!(
                    "output '{}' needs {wrote} bytes, its buffer holds {n}",
                    io.name
                ),
            );
        }
    }
    s.executions += 1;
    drop(s);
    common::spin_us(common::env_u64("ACL_FAKE_EXEC_US", 0));
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlExecute(id: u32, input: *const c_void, output: *mut c_void) -> i32 {
    call("aclmdlExecute", code, || {
        execute(id, input as usize, output as usize)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn aclmdlExecuteAsync(
    id: u32,
    input: *const c_void,
    output: *mut c_void,
    stream: *mut c_void,
) -> i32 {
    call("aclmdlExecuteAsync", code, || {
        if !state().streams.contains_key(&(stream as usize)) {
            return fail(INVALID_PARAM, "the stream does not exist");
        }
        execute(id, input as usize, output as usize)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_machine_and_memory_checks() {
        assert_eq!(aclrtSetDevice(0), UNINITIALIZE);
        assert_eq!(aclInit(std::ptr::null()), SUCCESS);
        assert_eq!(aclInit(std::ptr::null()), REPEAT_INITIALIZE);
        let mut p = std::ptr::null_mut();
        // No context on this thread yet.
        assert_eq!(unsafe { aclrtMalloc(&mut p, 16, 2) }, CONTEXT_NULL);
        assert_eq!(aclrtSetDevice(1), INVALID_DEVICEID);
        assert_eq!(aclrtSetDevice(0), SUCCESS);
        assert_eq!(unsafe { aclrtMalloc(&mut p, 16, 2) }, SUCCESS);
        let host = [1u8; 16];
        let mut back = [0u8; 16];
        // A swapped kind, a count over destMax, a destMax over the allocation.
        assert_eq!(
            unsafe { aclrtMemcpy(p, 16, host.as_ptr().cast(), 16, 2) },
            INVALID_PARAM
        );
        assert_eq!(
            unsafe { aclrtMemcpy(p, 8, host.as_ptr().cast(), 16, 1) },
            INVALID_PARAM
        );
        assert_eq!(
            unsafe { aclrtMemcpy(p, 32, host.as_ptr().cast(), 16, 1) },
            INVALID_PARAM
        );
        assert_eq!(
            unsafe { aclrtMemcpy(p, 16, host.as_ptr().cast(), 16, 1) },
            SUCCESS
        );
        assert_eq!(
            unsafe { aclrtMemcpy(back.as_mut_ptr().cast(), 16, p, 16, 2) },
            SUCCESS
        );
        assert_eq!(back, host);
        assert!(!aclGetRecentErrMsg().is_null());
        assert_eq!(aclrtFree(p), SUCCESS);
        assert_eq!(aclrtFree(p), INVALID_PARAM);
        assert_eq!(state().allocs.len(), 0);
        assert_eq!(aclrtResetDevice(0), SUCCESS);
        assert_eq!(aclFinalize(), SUCCESS);
        assert_eq!(aclFinalize(), 100037);
    }
}
