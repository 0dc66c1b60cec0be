//! CANN's ACL C API, loaded at run time: where `libascendcl.so` is looked for (never the
//! link-only stubs), every symbol acceval calls resolved at once (a missing one is named),
//! `aclInit` once per process with `aclFinalize` at exit, and ACL's error codes with their
//! names. Signatures follow acl_base.h / acl_rt.h / acl_mdl.h as digested in
//! `shared/notes/telemetry.md` §1.2–1.3; C enums pass as `c_int`, never as Rust enums.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub type AclRc = c_int;
pub type Ptr = *mut c_void;

/// `aclmdlIODims`: 128 + 8 + 1024 = 1160 bytes on LP64.
#[repr(C)]
pub struct IoDims {
    pub name: [c_char; 128],
    pub dim_count: usize,
    pub dims: [i64; 128],
}

const _: () = assert!(std::mem::size_of::<IoDims>() == 1160);

/// `aclrtMemcpyKind`.
pub const HOST_TO_DEVICE: c_int = 1;
pub const DEVICE_TO_HOST: c_int = 2;
/// `aclrtMemMallocPolicy` ACL_MEM_MALLOC_NORMAL_ONLY, as the samples allocate model I/O.
pub const MALLOC_NORMAL_ONLY: c_int = 2;

/// The name and the usual cause of an ACL return code (acl_base.h, rt_error_codes.h).
pub fn code_name(code: c_int) -> &'static str {
    match code {
        100000 => "ACL_ERROR_INVALID_PARAM",
        100001 => "ACL_ERROR_UNINITIALIZE",
        100002 => "ACL_ERROR_REPEAT_INITIALIZE",
        100003 => "ACL_ERROR_INVALID_FILE",
        100011 => "ACL_ERROR_INVALID_MODEL_ID",
        100012 => "ACL_ERROR_DESERIALIZE_MODEL",
        100013 => "ACL_ERROR_PARSE_MODEL",
        100017 => "ACL_ERROR_MODEL_INPUT_NOT_MATCH",
        100018 => "ACL_ERROR_MODEL_OUTPUT_NOT_MATCH",
        100037 => "ACL_ERROR_REPEAT_FINALIZE",
        107001 => "ACL_ERROR_RT_INVALID_DEVICEID",
        107002 => "ACL_ERROR_RT_CONTEXT_NULL",
        107003 => "ACL_ERROR_RT_STREAM_CONTEXT",
        200000 => "ACL_ERROR_BAD_ALLOC",
        200001 => "ACL_ERROR_API_NOT_SUPPORT",
        200002 => "ACL_ERROR_INVALID_DEVICE",
        207001 => "ACL_ERROR_RT_MEMORY_ALLOCATION",
        207004 => "ACL_ERROR_RT_NO_DEVICE",
        207006 => "ACL_ERROR_RT_NO_PERMISSION",
        207018 => "ACL_ERROR_RT_DEVICE_OOM",
        300000 => "ACL_ERROR_STORAGE_OVER_LIMIT",
        500000 => "ACL_ERROR_INTERNAL_ERROR",
        500002 => "ACL_ERROR_GE_FAILURE",
        500003 => "ACL_ERROR_RT_FAILURE",
        500004 => "ACL_ERROR_DRV_FAILURE",
        507008 => "ACL_ERROR_RT_SOC_VERSION",
        507011 => "ACL_ERROR_RT_MODEL_EXECUTE",
        507014 => "ACL_ERROR_RT_AICORE_TIMEOUT",
        507015 => "ACL_ERROR_RT_AICORE_EXCEPTION",
        _ => "unknown ACL code",
    }
}

/// What a code's range says to do (1xxxxx: the caller or the model; 2xxxxx: resources;
/// 5xxxxx: the runtime, driver or device).
fn hint(code: c_int) -> &'static str {
    match code {
        507008 => {
            "the .om was compiled for another SoC: convert the ONNX model again on this machine (acceval does so when given the .onnx)"
        }
        100012 | 100013 | 100003 => {
            "the .om file is not a model this CANN can load: convert it again with this CANN's atc"
        }
        100000..=199_999 => "a parameter or the model does not fit this call",
        200_000..=299_999 => {
            "a device resource is exhausted or absent (memory, device, permission: is the user in HwHiAiUser?)"
        }
        500_000..=599_999 => {
            "the runtime, driver or device failed: see the plog in ~/ascend/log (or $ASCEND_PROCESS_LOG_PATH) and npu-smi info"
        }
        _ => "see the CANN error code reference",
    }
}

/// A failed ACL call: the function, its code, the code's name and ACL's recent message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{function} returned {code} ({name}){}: {hint}", .message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())]
pub struct AclError {
    pub function: &'static str,
    pub code: c_int,
    pub name: &'static str,
    pub message: Option<String>,
    pub hint: &'static str,
}

macro_rules! symbols {
    ($( $field:ident : $sym:literal => fn($($arg:ty),*) -> $ret:ty ;)*) => {
        /// Every ACL function acceval calls, resolved from the loaded library.
        pub struct Api {
            $( pub $field: unsafe extern "C" fn($($arg),*) -> $ret, )*
            pub recent_err_msg: Option<unsafe extern "C" fn() -> *const c_char>,
            pub get_version: Option<unsafe extern "C" fn(*mut i32, *mut i32, *mut i32) -> AclRc>,
            pub emulator: Option<unsafe extern "C" fn() -> *const c_char>,
        }

        impl Api {
            /// Resolves every symbol of `lib`; the first one missing is named.
            ///
            /// # Safety
            /// `lib` must be CANN's ACL (or a library with its signatures).
            unsafe fn resolve(lib: &libloading::Library, path: &Path) -> Result<Api, String> {
                // SAFETY: the signatures are ACL's (see the module header).
                unsafe {
                    Ok(Api {
                        $( $field: *lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!($sym, "\0").as_bytes())
                            .map_err(|e| format!("{} has no symbol {} ({e}): it is not CANN's libascendcl.so, or a CANN too old for acceval", path.display(), $sym))?, )*
                        recent_err_msg: lib.get(b"aclGetRecentErrMsg\0").ok().map(|s| *s),
                        get_version: lib.get(b"aclrtGetVersion\0").ok().map(|s| *s),
                        emulator: lib.get(b"acceval_emulator\0").ok().map(|s| *s),
                    })
                }
            }
        }
    };
}

symbols! {
    init: "aclInit" => fn(*const c_char) -> AclRc;
    finalize: "aclFinalize" => fn() -> AclRc;
    set_device: "aclrtSetDevice" => fn(i32) -> AclRc;
    reset_device: "aclrtResetDevice" => fn(i32) -> AclRc;
    device_count: "aclrtGetDeviceCount" => fn(*mut u32) -> AclRc;
    run_mode: "aclrtGetRunMode" => fn(*mut c_int) -> AclRc;
    soc_name: "aclrtGetSocName" => fn() -> *const c_char;
    create_context: "aclrtCreateContext" => fn(*mut Ptr, i32) -> AclRc;
    destroy_context: "aclrtDestroyContext" => fn(Ptr) -> AclRc;
    set_current_context: "aclrtSetCurrentContext" => fn(Ptr) -> AclRc;
    create_stream: "aclrtCreateStream" => fn(*mut Ptr) -> AclRc;
    destroy_stream: "aclrtDestroyStream" => fn(Ptr) -> AclRc;
    synchronize_stream: "aclrtSynchronizeStream" => fn(Ptr) -> AclRc;
    malloc: "aclrtMalloc" => fn(*mut Ptr, usize, c_int) -> AclRc;
    free: "aclrtFree" => fn(Ptr) -> AclRc;
    memcpy: "aclrtMemcpy" => fn(Ptr, usize, *const c_void, usize, c_int) -> AclRc;
    load_from_file: "aclmdlLoadFromFile" => fn(*const c_char, *mut u32) -> AclRc;
    unload: "aclmdlUnload" => fn(u32) -> AclRc;
    create_desc: "aclmdlCreateDesc" => fn() -> Ptr;
    destroy_desc: "aclmdlDestroyDesc" => fn(Ptr) -> AclRc;
    get_desc: "aclmdlGetDesc" => fn(Ptr, u32) -> AclRc;
    num_inputs: "aclmdlGetNumInputs" => fn(Ptr) -> usize;
    num_outputs: "aclmdlGetNumOutputs" => fn(Ptr) -> usize;
    input_size: "aclmdlGetInputSizeByIndex" => fn(Ptr, usize) -> usize;
    output_size: "aclmdlGetOutputSizeByIndex" => fn(Ptr, usize) -> usize;
    input_dims: "aclmdlGetInputDims" => fn(Ptr, usize, *mut IoDims) -> AclRc;
    output_dims: "aclmdlGetOutputDims" => fn(Ptr, usize, *mut IoDims) -> AclRc;
    input_dtype: "aclmdlGetInputDataType" => fn(Ptr, usize) -> c_int;
    output_dtype: "aclmdlGetOutputDataType" => fn(Ptr, usize) -> c_int;
    input_name: "aclmdlGetInputNameByIndex" => fn(Ptr, usize) -> *const c_char;
    output_name: "aclmdlGetOutputNameByIndex" => fn(Ptr, usize) -> *const c_char;
    create_dataset: "aclmdlCreateDataset" => fn() -> Ptr;
    destroy_dataset: "aclmdlDestroyDataset" => fn(Ptr) -> AclRc;
    add_dataset_buffer: "aclmdlAddDatasetBuffer" => fn(Ptr, Ptr) -> AclRc;
    create_data_buffer: "aclCreateDataBuffer" => fn(Ptr, usize) -> Ptr;
    destroy_data_buffer: "aclDestroyDataBuffer" => fn(Ptr) -> AclRc;
    execute: "aclmdlExecute" => fn(u32, Ptr, Ptr) -> AclRc;
}

/// The loaded library: its path, the API, what it says of itself.
pub struct Acl {
    pub path: PathBuf,
    pub api: Api,
    /// The emulator's self-description, when the library is acceval's CANN emulator.
    pub emulated: Option<String>,
    /// `aclrtGetVersion`, "major.minor.patch".
    pub version: Option<String>,
    /// The CANN package version read beside the library (`version.cfg` or
    /// `ascend_toolkit_install.info`), when found.
    pub cann_version: Option<String>,
    _lib: libloading::Library,
}

// SAFETY: the function pointers are plain C functions of `_lib`, which lives as long as the
// struct (in a process-wide static); ACL's own calls are thread-safe per its documentation
// (contexts are per thread, set by each call site).
unsafe impl Send for Acl {}
unsafe impl Sync for Acl {}

impl Acl {
    /// `rc` as a result; on failure, with ACL's recent error message.
    pub fn check(&self, function: &'static str, rc: AclRc) -> Result<(), AclError> {
        if rc == 0 {
            return Ok(());
        }
        let message = self.api.recent_err_msg.and_then(|f| {
            // SAFETY: ACL returns NULL or a C string it owns, valid until the next call.
            let p = unsafe { f() };
            (!p.is_null()).then(|| {
                // SAFETY: checked non-null.
                unsafe { CStr::from_ptr(p) }
                    .to_string_lossy()
                    .trim()
                    .to_string()
            })
        });
        Err(AclError {
            function,
            code: rc,
            name: code_name(rc),
            message: message.filter(|m| !m.is_empty()),
            hint: hint(rc),
        })
    }

    /// The SoC ACL reports (`aclrtGetSocName`), e.g. "Ascend910B3".
    pub fn soc_name(&self) -> Option<String> {
        // SAFETY: ACL returns NULL or a static C string.
        let p = unsafe { (self.api.soc_name)() };
        // SAFETY: checked non-null.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// The roots a CANN install is found under, in order: `ASCEND_HOME_PATH`,
/// `ASCEND_TOOLKIT_HOME` (both set by set_env.sh), then the usual install paths.
pub fn cann_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"]
        .iter()
        .filter_map(|v| {
            std::env::var_os(v)
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        })
        .collect();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for r in [
        "/usr/local/Ascend/ascend-toolkit/latest",
        "/usr/local/Ascend/nnrt/latest",
        "/usr/local/Ascend/nnae/latest",
        "/usr/local/Ascend/cann",
        "/usr/local/Ascend",
    ] {
        roots.push(PathBuf::from(r));
    }
    if let Some(h) = home {
        roots.push(h.join("Ascend/ascend-toolkit/latest"));
    }
    roots
}

/// Where `libascendcl.so` may be, in order (the link-only `stub/` folders are never tried).
pub fn candidates() -> Vec<PathBuf> {
    let arch = format!("{}-linux", std::env::consts::ARCH);
    let mut c = Vec::new();
    for root in cann_roots() {
        for sub in [
            "lib64",
            "runtime/lib64",
            &format!("{arch}/lib64"),
            "acllib/lib64",
        ] {
            c.push(root.join(sub).join("libascendcl.so"));
        }
    }
    c
}

fn version_beside(lib: &Path) -> Option<String> {
    // lib64/libascendcl.so -> the toolkit root holds version.cfg or the install info.
    for dir in lib.ancestors().skip(1).take(4) {
        for (file, key) in [
            ("ascend_toolkit_install.info", "version="),
            ("ascend_nnrt_install.info", "version="),
            ("version.cfg", "version="),
        ] {
            if let Ok(text) = std::fs::read_to_string(dir.join(file))
                && let Some(v) = text
                    .lines()
                    .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
            {
                return Some(v);
            }
        }
    }
    None
}

/// Opens the first library found and resolves the API.
fn open() -> Result<Acl, String> {
    let mut tried = Vec::new();
    for path in candidates() {
        if !path.is_file() || path.components().any(|c| c.as_os_str() == "stub") {
            continue;
        }
        // SAFETY: loading CANN's runtime runs its initialisers, as every ACL user does.
        let lib = match unsafe { libloading::Library::new(&path) } {
            Ok(l) => l,
            Err(e) => {
                tried.push(format!(
                    "{}: {}",
                    path.display(),
                    crate::util::fmt::error_chain(&e)
                ));
                continue;
            }
        };
        // SAFETY: the library is ACL (or says it is by its symbols).
        let api = unsafe { Api::resolve(&lib, &path) }?;
        let text = |f: Option<unsafe extern "C" fn() -> *const c_char>| {
            f.and_then(|f| {
                // SAFETY: returns a static C string.
                let p = unsafe { f() };
                // SAFETY: checked non-null.
                (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            })
        };
        let emulated = text(api.emulator);
        let version = api.get_version.and_then(|f| {
            let (mut a, mut b, mut c) = (0, 0, 0);
            // SAFETY: three valid out-pointers.
            (unsafe { f(&mut a, &mut b, &mut c) } == 0).then(|| format!("{a}.{b}.{c}"))
        });
        return Ok(Acl {
            cann_version: version_beside(&path),
            path,
            api,
            emulated,
            version,
            _lib: lib,
        });
    }
    let looked = cann_roots()
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Err(if tried.is_empty() {
        format!(
            "no CANN toolkit: libascendcl.so not found under {looked} (install CANN and `source /usr/local/Ascend/ascend-toolkit/set_env.sh`, which sets ASCEND_HOME_PATH; or scripts/fake-devices.sh for the emulator)"
        )
    } else {
        format!(
            "libascendcl.so could not be loaded ({}): source CANN's set_env.sh before starting acceval so the loader finds its driver libraries",
            tried.join("; ")
        )
    })
}

static ACL: OnceLock<Result<Acl, String>> = OnceLock::new();

/// The process-wide library (opened on first use).
pub fn library() -> Result<&'static Acl, String> {
    ACL.get_or_init(open).as_ref().map_err(Clone::clone)
}

static INIT: OnceLock<Result<(), AclError>> = OnceLock::new();

extern "C" fn finalize_at_exit() {
    if let Ok(acl) = library() {
        // SAFETY: called once, at exit, after aclInit succeeded; the library stays loaded.
        let _ = unsafe { (acl.api.finalize)() };
    }
}

/// The library, with `aclInit` called once per process (ACL refuses a second call, and a
/// call after `aclFinalize`); `aclFinalize` runs at process exit.
pub fn initialised() -> Result<&'static Acl, crate::backend::BackendError> {
    let acl = library().map_err(|reason| crate::backend::BackendError::NotAvailable {
        backend: "acl".into(),
        reason,
    })?;
    INIT.get_or_init(|| {
        // SAFETY: NULL config path is allowed.
        acl.check("aclInit", unsafe { (acl.api.init)(std::ptr::null()) })?;
        // SAFETY: registering a plain C function.
        unsafe { libc::atexit(finalize_at_exit) };
        Ok(())
    })
    .clone()
    .map_err(|e| crate::backend::BackendError::NotAvailable {
        backend: "acl".into(),
        reason: e.to_string(),
    })?;
    Ok(acl)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_named_and_stubs_never_tried() {
        assert_eq!(code_name(507011), "ACL_ERROR_RT_MODEL_EXECUTE");
        assert_eq!(code_name(42), "unknown ACL code");
        assert!(
            candidates()
                .iter()
                .all(|p| !p.to_string_lossy().contains("/stub/"))
        );
        let e = AclError {
            function: "aclmdlExecute",
            code: 507011,
            name: code_name(507011),
            message: Some("EE9999: boom".into()),
            hint: hint(507011),
        };
        let s = e.to_string();
        assert!(
            s.starts_with(
                "aclmdlExecute returned 507011 (ACL_ERROR_RT_MODEL_EXECUTE): EE9999: boom: "
            ),
            "{s}"
        );
    }
}
