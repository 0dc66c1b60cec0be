//! The `ort` backend: ONNX Runtime through the `ort` crate, loaded at run time
//! (`load-dynamic`), with its execution providers: `ort:cpu`, `ort:cuda`, `ort:tensorrt`,
//! `ort:cann`, `ort:openvino`, `ort:migraphx`, `ort:rocm`, `ort:xnnpack`, `ort:qnn`,
//! `ort:onednn`.
//!
//! The library is found through `ORT_DYLIB_PATH`, then the installed Python `onnxruntime`
//! (or `onnxruntime-gpu`) package's `onnxruntime/capi/libonnxruntime.so*`, then the system
//! library path. It is probed with `libloading` first, because ort's own load errors only
//! say "dlopen failed". A provider that was asked for and is not compiled into the loaded
//! library, or that fails to initialise, is an error: never a silent run on the CPU
//! (providers are registered with `error_on_failure`). Nodes a provider does not take still
//! fall back to the CPU inside ONNX Runtime; `--placement` reports them.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use ort::ep::{self, ArbitrarilyConfigurableExecutionProvider, ExecutionProviderDispatch};
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{RunOptions, Session as OrtSession, SessionInputValue, SessionInputs};
use ort::value::{DynValue, TensorElementType, ValueType};

use super::{
    Availability, Backend, BackendError, BackendSpec, GraphOpt, LoadOptions, LoadTimings,
    NodePlacement, Placement, Session, SessionInfo,
};
use crate::model::tensor::{HostTensor, TensorData};
pub use crate::report::schema::devices::OrtLibrary;

/// The oldest ONNX Runtime this build can load (ort's `api-24` feature): 1.24, the version of
/// the `onnxruntime-cann` wheel for Ascend.
pub const MIN_ORT_MINOR: u32 = 24;

/// The execution providers acceval can ask for: (`--backend ort:NAME`, ONNX Runtime's name).
pub const PROVIDERS: [(&str, &str); 10] = [
    ("cpu", "CPUExecutionProvider"),
    ("cuda", "CUDAExecutionProvider"),
    ("tensorrt", "TensorrtExecutionProvider"),
    ("cann", "CANNExecutionProvider"),
    ("openvino", "OpenVINOExecutionProvider"),
    ("migraphx", "MIGraphXExecutionProvider"),
    ("rocm", "ROCMExecutionProvider"),
    ("xnnpack", "XnnpackExecutionProvider"),
    ("qnn", "QNNExecutionProvider"),
    ("onednn", "DnnlExecutionProvider"),
];

const INSTALL_HINT: &str = "install it with `pip install onnxruntime` (CPU) or `pip install onnxruntime-gpu` (CUDA, TensorRT), or set ORT_DYLIB_PATH=/path/to/libonnxruntime.so";

/// Reads the version of the ONNX Runtime library at `path` (or the loader's `name`).
fn probe_version(path: &Path) -> Result<String, String> {
    // SAFETY: loading libonnxruntime runs its initialisers, which is what ort does too.
    let lib =
        unsafe { libloading::Library::new(path) }.map_err(|e| crate::util::fmt::error_chain(&e))?;
    // SAFETY: `OrtGetApiBase` has this signature in every ONNX Runtime release.
    let get_base: libloading::Symbol<unsafe extern "C" fn() -> *const ort::sys::OrtApiBase> =
        unsafe { lib.get(b"OrtGetApiBase\0") }.map_err(|_| {
            "it has no OrtGetApiBase symbol: not an ONNX Runtime library".to_string()
        })?;
    // SAFETY: the base struct and the version string are static in the library.
    let version = unsafe {
        let base = get_base();
        if base.is_null() {
            return Err("OrtGetApiBase returned null".into());
        }
        let v = ((*base).GetVersionString)();
        CStr::from_ptr(v).to_string_lossy().into_owned()
    };
    // Keep the library loaded: ort will load the same file again, and unloading ORT
    // while its threads may still run is unsafe.
    std::mem::forget(lib);
    Ok(version)
}

fn python_package_library() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(p) = std::env::var("ACCEVAL_PYTHON") {
        candidates.push(p);
    }
    if let Ok(v) = std::env::var("VIRTUAL_ENV") {
        candidates.push(format!("{v}/bin/python"));
    }
    candidates.push("python3".into());
    for py in candidates {
        let Ok(out) = std::process::Command::new(&py)
            .args([
                "-c",
                "import os, onnxruntime; print(os.path.dirname(onnxruntime.__file__))",
            ])
            .stderr(std::process::Stdio::null())
            .output()
        else {
            continue;
        };
        if !out.status.success() {
            continue;
        }
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("capi");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut libs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libonnxruntime.so"))
            })
            .collect();
        libs.sort();
        if let Some(l) = libs.pop() {
            return Some(l);
        }
    }
    None
}

/// Finds the ONNX Runtime library (see the module docs for the order).
pub fn find_library() -> Result<OrtLibrary, String> {
    if let Ok(p) = std::env::var("ORT_DYLIB_PATH") {
        let path = PathBuf::from(&p);
        let version = probe_version(&path)
            .map_err(|e| format!("ORT_DYLIB_PATH={p} cannot be loaded: {e}; {INSTALL_HINT}"))?;
        return Ok(OrtLibrary {
            path,
            found_by: "ORT_DYLIB_PATH".into(),
            version,
        });
    }
    if let Some(path) = python_package_library() {
        let version = probe_version(&path).map_err(|e| {
            format!(
                "the Python onnxruntime package's {} cannot be loaded: {e}",
                path.display()
            )
        })?;
        return Ok(OrtLibrary {
            path,
            found_by: "python onnxruntime package".into(),
            version,
        });
    }
    let path = PathBuf::from("libonnxruntime.so");
    match probe_version(&path) {
        Ok(version) => Ok(OrtLibrary {
            path,
            found_by: "system library path".into(),
            version,
        }),
        Err(e) => Err(format!(
            "ONNX Runtime library not found: ORT_DYLIB_PATH is not set, no Python package 'onnxruntime' (tried $ACCEVAL_PYTHON, $VIRTUAL_ENV, python3), and the system library path has no libonnxruntime.so ({e}); {INSTALL_HINT}"
        )),
    }
}

fn minor(version: &str) -> Option<u32> {
    version.split('.').nth(1).and_then(|m| m.parse().ok())
}

/// The process-wide ONNX Runtime environment (ONNX Runtime allows one per process).
fn environment() -> Result<&'static (OrtLibrary, ort::environment::Environment), String> {
    static ENV: OnceLock<Result<(OrtLibrary, ort::environment::Environment), String>> =
        OnceLock::new();
    ENV.get_or_init(|| {
        let lib = find_library()?;
        if minor(&lib.version).is_none_or(|m| m < MIN_ORT_MINOR) {
            return Err(format!(
                "ONNX Runtime {} at {} is older than 1.{MIN_ORT_MINOR}, the oldest this build supports; {INSTALL_HINT}",
                lib.version,
                lib.path.display()
            ));
        }
        let env = ort::init_from(&lib.path)
            .map_err(|e| format!("loading {}: {e}", lib.path.display()))?
            .with_name("acceval")
            .build()
            .map_err(|e| format!("creating the ONNX Runtime environment: {e}"))?;
        Ok((lib, env))
    })
    .as_ref()
    .map_err(|e| e.clone())
}

/// Execution providers compiled into the loaded library (ONNX Runtime's names).
pub fn compiled_providers() -> Result<Vec<String>, String> {
    environment()?;
    let api = ort::api();
    let mut list: *mut *mut c_char = std::ptr::null_mut();
    let mut n: std::ffi::c_int = 0;
    // SAFETY: GetAvailableProviders allocates `n` C strings, released below.
    unsafe {
        let status = (api.GetAvailableProviders)(&mut list, &mut n);
        if !status.0.is_null() {
            (api.ReleaseStatus)(status.0);
            return Err("GetAvailableProviders failed".into());
        }
        let names = (0..n as usize)
            .map(|i| CStr::from_ptr(*list.add(i)).to_string_lossy().into_owned())
            .collect();
        let _ = (api.ReleaseAvailableProviders)(list, n);
        Ok(names)
    }
}

/// The library that would be (or was) loaded, for `acceval devices`.
pub fn library() -> Result<OrtLibrary, String> {
    environment().map(|(l, _)| l.clone())
}

pub struct OrtBackend;

pub static ORT: OrtBackend = OrtBackend;

fn dispatch(
    provider: &str,
    device: Option<u32>,
    options: &[(String, String)],
) -> Result<Option<ExecutionProviderDispatch>, String> {
    fn with<E: ArbitrarilyConfigurableExecutionProvider>(
        mut e: E,
        device: Option<u32>,
        options: &[(String, String)],
    ) -> E {
        if let Some(d) = device {
            e = e.with_arbitrary_config("device_id", d);
        }
        for (k, v) in options {
            e = e.with_arbitrary_config(k, v);
        }
        e
    }
    let d = match provider {
        "cpu" => {
            if !options.is_empty() {
                return Err("the CPU provider takes no --ep-option".into());
            }
            return Ok(None);
        }
        "cuda" => with(ep::CUDA::default(), device, options).build(),
        "tensorrt" => with(ep::TensorRT::default(), device, options).build(),
        "cann" => with(ep::CANN::default(), device, options).build(),
        "openvino" => with(ep::OpenVINO::default(), None, options).build(),
        "migraphx" => {
            if !options.is_empty() {
                return Err("the MIGraphX provider takes no --ep-option in this build".into());
            }
            let mut e = ep::MIGraphX::default();
            if let Some(d) = device {
                e = e.with_device_id(d as i32);
            }
            e.build()
        }
        "rocm" => with(ep::ROCm::default(), device, options).build(),
        "xnnpack" => with(ep::XNNPACK::default(), None, options).build(),
        "qnn" => with(ep::QNN::default(), None, options).build(),
        "onednn" => with(ep::OneDNN::default(), None, options).build(),
        other => {
            return Err(format!(
                "unknown provider '{other}'; the providers are: {}",
                PROVIDERS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
            ));
        }
    };
    Ok(Some(d.error_on_failure()))
}

/// What each execution provider runs on and how it takes the graph (`ort` alone is `ort:cpu`).
/// OpenVINO takes its device from `device_type` (`--ep-option device_type=NPU|GPU|CPU`).
fn describe_provider(b: &super::BackendSettings) -> Option<super::Traits> {
    use super::describe::{
        AdaptationRoute as Route, DeviceClass as Class, PeakSource, Sensor, Traits,
    };
    let nvidia = |route, detail| {
        Traits::accelerator(
            Class::Gpu,
            route,
            detail,
            Some(Sensor::Nvml),
            PeakSource::NvidiaGpu,
        )
    };
    let unknown_peak = PeakSource::Unknown("no peak is known for this execution provider's device");
    // An EP on the CPU: the plain CPU, but nodes left to the default CPU kernels are fallbacks.
    let cpu_ep = |detail| Traits {
        reports_cpu_fallback: true,
        ..Traits::host_cpu(detail, None)
    };
    Some(match b.spec.provider.as_deref().unwrap_or("cpu") {
        "cpu" => Traits::host_cpu("ONNX Runtime's CPU execution provider kernels", Some("cpu")),
        "cuda" => nvidia(
            Route::OperatorMapping,
            "the CUDA execution provider takes the nodes it has kernels for; the rest fall back to the CPU provider",
        ),
        "tensorrt" => nvidia(
            Route::GraphHandoff,
            "the TensorRT execution provider builds engines for the subgraphs it takes",
        ),
        "openvino" => {
            let dt = b
                .ep_options
                .iter()
                .find(|(k, _)| k == "device_type")
                .map(|(_, v)| v.to_ascii_uppercase());
            let class = match dt.as_deref() {
                Some(d) if d.starts_with("NPU") => Class::Npu,
                Some(d) if d.starts_with("GPU") => Class::Gpu,
                _ => Class::Cpu,
            };
            Traits::accelerator(
                class,
                Route::GraphHandoff,
                "the OpenVINO execution provider compiles the subgraphs it takes (the whole graph when it can)",
                None,
                unknown_peak,
            )
        }
        "cann" => Traits::accelerator(
            Class::Npu,
            Route::GraphHandoff,
            "the CANN execution provider hands subgraphs to the Ascend graph engine",
            Some(Sensor::Dcmi),
            PeakSource::Stated,
        ),
        "qnn" => Traits::accelerator(
            Class::Npu,
            Route::GraphHandoff,
            "the QNN execution provider hands subgraphs to the Qualcomm HTP",
            None,
            unknown_peak,
        ),
        "migraphx" => Traits::accelerator(
            Class::Gpu,
            Route::CompilerBackend,
            "MIGraphX compiles the subgraphs it takes for AMD GPUs",
            None,
            unknown_peak,
        ),
        "rocm" => Traits::accelerator(
            Class::Gpu,
            Route::OperatorMapping,
            "the ROCm execution provider's kernels",
            None,
            unknown_peak,
        ),
        "xnnpack" => cpu_ep("XNNPACK's CPU kernels"),
        "onednn" => cpu_ep("oneDNN's CPU kernels"),
        _ => return None,
    })
}

impl Backend for OrtBackend {
    fn name(&self) -> &'static str {
        "ort"
    }
    fn summary(&self) -> &'static str {
        "ONNX Runtime (libonnxruntime loaded at run time) and its execution providers"
    }
    fn probe(&self) -> Availability {
        match environment() {
            Ok((lib, _)) => Availability::Available {
                detail: format!(
                    "onnxruntime {} at {} (found by {})",
                    lib.version,
                    lib.path.display(),
                    lib.found_by
                ),
            },
            Err(reason) => Availability::NotAvailable { reason },
        }
    }
    fn describe(&self, b: &super::BackendSettings) -> Option<super::Traits> {
        describe_provider(b)
    }
    fn providers(&self) -> Vec<(String, Availability)> {
        // Without a library there is nothing to say per provider beyond `probe`'s reason.
        if environment().is_err() {
            return Vec::new();
        }
        let compiled = compiled_providers();
        PROVIDERS
            .iter()
            .map(|(short, long)| {
                let a = match &compiled {
                    Ok(list) if list.iter().any(|p| p == long) => Availability::Available {
                        detail: format!("{long} compiled into the loaded library"),
                    },
                    Ok(_) => Availability::NotAvailable {
                        reason: format!("{long} is not compiled into the loaded ONNX Runtime"),
                    },
                    Err(e) => Availability::NotAvailable { reason: e.clone() },
                };
                (format!("ort:{short}"), a)
            })
            .collect()
    }
    fn load(
        &self,
        model: &Path,
        spec: &BackendSpec,
        opts: &LoadOptions,
    ) -> Result<Box<dyn Session>, BackendError> {
        let (lib, env) = environment().map_err(|reason| BackendError::NotAvailable {
            backend: spec.to_string(),
            reason,
        })?;
        let (provider, long) = provider_of(spec, lib)?;
        let load_err = |reason: String| BackendError::Load {
            backend: spec.to_string(),
            model: model.display().to_string(),
            reason,
        };
        if let Some(why) = super::wrong_format(model) {
            return Err(load_err(why));
        }
        let t0 = Instant::now();
        // Session creation cannot be interrupted: it runs on a thread acceval stops waiting
        // for at the load budget. A device provider builds kernels or engines (TensorRT for
        // minutes), so its default is at least 10 minutes.
        let limit = opts.load_timeout_s.map_or_else(
            || {
                let d = super::default_load_timeout(model);
                if provider == "cpu" {
                    d
                } else {
                    d.max(std::time::Duration::from_secs(600))
                }
            },
            std::time::Duration::from_secs_f64,
        );
        let (path, spec2, opts2, provider2) = (
            model.to_path_buf(),
            spec.clone(),
            opts.clone(),
            provider.clone(),
        );
        let (session, options, profile_dir) = super::bounded(
            &format!("onnxruntime {}", lib.version),
            "ONNX Runtime's session creation (graph optimisation, kernel selection)",
            limit,
            move || {
                let mut options = BTreeMap::new();
                let (mut b, profile_dir) =
                    configure(env, &provider2, long, &spec2, &opts2, &mut options)?;
                let session = b.commit_from_file(&path).map_err(|e| e.to_string())?;
                Ok((session, options, profile_dir))
            },
        )
        .map_err(&load_err)?;
        let init = t0.elapsed();
        let output_names = session
            .outputs()
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        let input_names = session
            .inputs()
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        Ok(Box::new(OrtRun {
            info: SessionInfo {
                backend: format!("ort:{provider}{}", spec.device.map(|d| format!("@{d}")).unwrap_or_default()),
                engine: format!("onnxruntime {}", lib.version),
                device: match spec.device {
                    Some(d) => format!("{long} device {d}"),
                    None => long.to_string(),
                },
                library: Some(lib.path.display().to_string()),
                options,
                emulated: None,
                copies: None,
            },
            timings: LoadTimings {
                convert_ms: None,
                convert_note: Some(
                    "ONNX Runtime converts and optimises the graph inside session creation; that time is part of init_ms".into(),
                ),
                init_ms: init.as_secs_f64() * 1e3,
            },
            session,
            input_names,
            output_names,
            profile_dir,
            placement: None,
            run_options: Arc::new(RunOptions::new().map_err(|e| load_err(e.to_string()))?),
        }))
    }
}

/// The provider `spec` names (`cpu` by default) and ONNX Runtime's name for it; an error
/// when it is unknown or not compiled into the loaded library (never a silent CPU run).
fn provider_of(
    spec: &BackendSpec,
    lib: &OrtLibrary,
) -> Result<(String, &'static str), BackendError> {
    let backend = spec.to_string();
    let provider = spec.provider.clone().unwrap_or_else(|| "cpu".into());
    let long = PROVIDERS
        .iter()
        .find(|p| p.0 == provider)
        .map(|p| p.1)
        .ok_or_else(|| BackendError::NotAvailable {
            backend: backend.clone(),
            reason: format!(
                "unknown provider '{provider}'; the providers are: {}",
                PROVIDERS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
            ),
        })?;
    let compiled = compiled_providers().map_err(|reason| BackendError::NotAvailable {
        backend: backend.clone(),
        reason,
    })?;
    if !compiled.iter().any(|p| p == long) {
        let hint = match provider.as_str() {
            "cuda" | "tensorrt" => {
                " For CUDA/TensorRT install onnxruntime-gpu (and the CUDA 13 libraries) and point ORT_DYLIB_PATH at its libonnxruntime.so."
            }
            "cann" => " For Ascend install onnxruntime-cann and the CANN toolkit.",
            "openvino" => " For OpenVINO install onnxruntime-openvino.",
            _ => "",
        };
        return Err(BackendError::NotAvailable {
            backend,
            reason: format!(
                "provider {long} is not compiled into ONNX Runtime {} at {}; it has: {}.{hint}",
                lib.version,
                lib.path.display(),
                compiled.join(", ")
            ),
        });
    }
    Ok((provider, long))
}

/// A session builder with the options and the provider set, recorded in `options`; the
/// profiling folder when placement is asked for.
fn configure(
    env: &'static ort::environment::Environment,
    provider: &str,
    long: &str,
    spec: &BackendSpec,
    opts: &LoadOptions,
    options: &mut BTreeMap<String, String>,
) -> Result<(ort::session::builder::SessionBuilder, Option<PathBuf>), String> {
    let ep = dispatch(provider, spec.device, &opts.ep_options)?;
    options.insert("provider".to_string(), long.to_string());
    let mut b = OrtSession::builder(env).map_err(|e| e.to_string())?;
    if let Some(t) = opts.threads {
        b = b.with_intra_threads(t).map_err(|e| e.to_string())?;
        options.insert("intra_op_threads".into(), t.to_string());
    } else {
        options.insert(
            "intra_op_threads".into(),
            "ONNX Runtime default (physical cores)".into(),
        );
    }
    let level = opts.graph_opt.unwrap_or(GraphOpt::All);
    b = b
        .with_optimization_level(match level {
            GraphOpt::Disable => GraphOptimizationLevel::Disable,
            GraphOpt::Basic => GraphOptimizationLevel::Level1,
            GraphOpt::Extended => GraphOptimizationLevel::Level2,
            GraphOpt::All => GraphOptimizationLevel::All,
        })
        .map_err(|e| e.to_string())?;
    options.insert(
        "graph_optimization_level".into(),
        format!("{level:?}").to_lowercase(),
    );
    if let Some(d) = spec.device {
        options.insert("device_id".into(), d.to_string());
    }
    for (k, v) in &opts.ep_options {
        options.insert(format!("ep.{k}"), v.clone());
    }
    let profile_dir = if opts.placement {
        let dir = std::env::temp_dir().join(format!("acceval-ort-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        b = b
            .with_profiling(dir.join("profile"))
            .map_err(|e| e.to_string())?;
        options.insert(
            "profiling".into(),
            "on (for --placement; adds overhead)".into(),
        );
        Some(dir)
    } else {
        None
    };
    if let Some(ep) = ep {
        b = b
            .with_execution_providers([ep])
            .map_err(|e| e.to_string())?;
    }
    Ok((b, profile_dir))
}

struct OrtRun {
    info: SessionInfo,
    timings: LoadTimings,
    session: OrtSession,
    input_names: Vec<String>,
    output_names: Vec<String>,
    profile_dir: Option<PathBuf>,
    placement: Option<Placement>,
    /// Every run's options: the run budget's watcher stops a run through them.
    run_options: Arc<RunOptions>,
}

/// ONNX Runtime's terminate flag: the executor checks it before each node, a Loop's body
/// included, and the run returns "Exiting due to terminate flag being set to true".
struct Terminate(Arc<RunOptions>);

impl super::watchdog::Interrupt for Terminate {
    fn stop(&self) {
        let _ = self.0.terminate();
    }
    fn resume(&self) {
        let _ = self.0.unterminate();
    }
}

/// An input as ONNX Runtime takes it: a view of the caller's array when it is contiguous
/// (no copy per run, as the Python binding passes a numpy array), else a contiguous copy.
fn to_value(t: &TensorData) -> ort::Result<SessionInputValue<'_>> {
    use ort::value::{Tensor, TensorRef};
    macro_rules! view {
        ($a:expr) => {
            if $a.is_standard_layout() {
                TensorRef::from_array_view($a)?.into_dyn().into()
            } else {
                Tensor::from_array($a.as_standard_layout().into_owned())?
                    .into_dyn()
                    .into()
            }
        };
    }
    Ok(match t {
        TensorData::F32(a) => view!(a),
        TensorData::F64(a) => view!(a),
        TensorData::I64(a) => view!(a),
        TensorData::I32(a) => view!(a),
        TensorData::I8(a) => view!(a),
        TensorData::U8(a) => view!(a),
        TensorData::Bool(a) => view!(a),
    })
}

fn from_value(v: &DynValue) -> Result<TensorData, String> {
    let ty = match v.dtype() {
        ValueType::Tensor { ty, .. } => *ty,
        other => return Err(format!("output of type {other:?} is not a tensor")),
    };
    let e = |e: ort::Error| e.to_string();
    Ok(match ty {
        TensorElementType::Float32 => {
            TensorData::F32(v.try_extract_array::<f32>().map_err(e)?.to_owned())
        }
        TensorElementType::Float64 => {
            TensorData::F64(v.try_extract_array::<f64>().map_err(e)?.to_owned())
        }
        TensorElementType::Int64 => {
            TensorData::I64(v.try_extract_array::<i64>().map_err(e)?.to_owned())
        }
        TensorElementType::Int32 => {
            TensorData::I32(v.try_extract_array::<i32>().map_err(e)?.to_owned())
        }
        TensorElementType::Int8 => {
            TensorData::I8(v.try_extract_array::<i8>().map_err(e)?.to_owned())
        }
        TensorElementType::Uint8 => {
            TensorData::U8(v.try_extract_array::<u8>().map_err(e)?.to_owned())
        }
        TensorElementType::Bool => {
            TensorData::Bool(v.try_extract_array::<bool>().map_err(e)?.to_owned())
        }
        other => return Err(format!("output element type {other:?} is not supported")),
    })
}

impl Session for OrtRun {
    fn info(&self) -> &SessionInfo {
        &self.info
    }
    fn timings(&self) -> &LoadTimings {
        &self.timings
    }
    fn run(&mut self, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, BackendError> {
        let backend = self.info.backend.clone();
        let run_err = |reason: String| BackendError::Run {
            backend: backend.clone(),
            reason,
        };
        let mut values: Vec<(Cow<'_, str>, SessionInputValue<'_>)> =
            Vec::with_capacity(inputs.len());
        for (i, t) in inputs.iter().enumerate() {
            let name = self.input_names.get(i).unwrap_or(&t.name);
            values.push((
                Cow::Borrowed(name.as_str()),
                to_value(&t.data).map_err(|e| run_err(e.to_string()))?,
            ));
        }
        let outs = self
            .session
            .run_with_options(SessionInputs::<0>::ValueMap(values), &self.run_options)
            .map_err(|e| run_err(e.to_string()))?;
        let mut result = Vec::with_capacity(self.output_names.len());
        for name in &self.output_names {
            let v = outs
                .get(name.as_str())
                .ok_or_else(|| run_err(format!("output '{name}' missing")))?;
            result.push(HostTensor {
                name: name.clone(),
                data: from_value(v).map_err(&run_err)?,
            });
        }
        Ok(result)
    }
    fn interrupter(&self) -> Option<Arc<dyn super::watchdog::Interrupt>> {
        Some(Arc::new(Terminate(Arc::clone(&self.run_options))))
    }
    fn synchronize(&mut self) -> Result<(), BackendError> {
        // `run` returns host-resident outputs: ONNX Runtime has copied them back and
        // synchronised the device stream before returning.
        Ok(())
    }
    fn placement(&mut self) -> Result<Placement, BackendError> {
        if let Some(p) = &self.placement {
            return Ok(p.clone());
        }
        let err = |reason: String| BackendError::Run {
            backend: self.info.backend.clone(),
            reason,
        };
        if self.profile_dir.is_none() {
            return Err(err(
                "placement needs the session loaded with profiling (--placement)".into(),
            ));
        }
        let file = self
            .session
            .end_profiling()
            .map_err(|e| err(e.to_string()))?;
        let text = std::fs::read_to_string(&file).map_err(|e| err(format!("{file}: {e}")))?;
        let p = parse_profile(&text).map_err(|e| err(format!("{file}: {e}")))?;
        if let Some(d) = &self.profile_dir {
            let _ = std::fs::remove_dir_all(d);
        }
        self.placement = Some(p.clone());
        Ok(p)
    }
}

/// Node placement from an ONNX Runtime profile (Chrome trace JSON): every `cat: "Node"`
/// event names its node (`<name>_kernel_time`), operator and execution provider.
pub fn parse_profile(text: &str) -> Result<Placement, String> {
    let events: Vec<serde_json::Value> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = std::collections::HashSet::new();
    let mut nodes = Vec::new();
    for ev in &events {
        if ev["cat"] != "Node" {
            continue;
        }
        let Some(name) = ev["name"].as_str() else {
            continue;
        };
        let Some(node) = name.strip_suffix("_kernel_time") else {
            continue;
        };
        let provider = ev["args"]["provider"].as_str().unwrap_or("unknown");
        if !seen.insert(node.to_string()) {
            continue;
        }
        nodes.push(NodePlacement {
            node: node.to_string(),
            op_type: ev["args"]["op_name"].as_str().unwrap_or("?").to_string(),
            device: if provider == "CPUExecutionProvider" {
                "CPU".into()
            } else {
                provider.to_string()
            },
        });
    }
    if nodes.is_empty() {
        return Err("the profile holds no node events (was the model run?)".into());
    }
    Ok(Placement {
        source: "ONNX Runtime profiling: the execution provider of every node event".into(),
        nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_events_give_placement() {
        let text = r#"[
          {"cat":"Session","name":"model_loading_uri","dur":100,"args":{}},
          {"cat":"Node","name":"conv1_kernel_time","dur":5,"args":{"op_name":"Conv","provider":"CUDAExecutionProvider"}},
          {"cat":"Node","name":"conv1_kernel_time","dur":5,"args":{"op_name":"Conv","provider":"CUDAExecutionProvider"}},
          {"cat":"Node","name":"shape_kernel_time","dur":1,"args":{"op_name":"Shape","provider":"CPUExecutionProvider"}},
          {"cat":"Node","name":"conv1_fence_before","dur":0,"args":{"op_name":"Conv"}}
        ]"#;
        let p = parse_profile(text).unwrap();
        assert_eq!(p.nodes.len(), 2);
        let by = p.by_device();
        assert_eq!(by.get("CUDAExecutionProvider"), Some(&1));
        assert_eq!(by.get("CPU"), Some(&1));
        assert!(parse_profile("[]").is_err());
        assert!(parse_profile("not json").is_err());
    }

    #[test]
    fn minor_version() {
        assert_eq!(minor("1.32.0"), Some(32));
        assert_eq!(minor("garbage"), None);
    }
}
