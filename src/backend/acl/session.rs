//! A model loaded through ACL, and the handles it owns, each released by its own `Drop` in
//! the reverse order of creation, after an error as after success: data buffers and device
//! memory, datasets, the model description, the model, the stream, the context, the device.
//!
//! One inference: copy every input host → device (`aclrtMemcpy`, timed as h2d), execute
//! (`aclmdlExecute`, then `aclrtSynchronizeStream`, timed as the forward), copy every output
//! device → host and build the host tensors (timed as d2h). The host buffers for outputs are
//! allocated once at load.

use std::ffi::{CStr, CString, c_int};
use std::path::Path;
use std::time::{Duration, Instant};

use super::ffi::{self, Acl, AclError, IoDims, Ptr};
use crate::backend::{BackendError, CopyTimes, LoadTimings, Placement, Ran, Session, SessionInfo};
use crate::model::tensor::{HostTensor, TensorData};

fn null() -> Ptr {
    std::ptr::null_mut()
}

/// `aclrtSetDevice` held: released with `aclrtResetDevice`.
struct DeviceRef(&'static Acl, i32);
impl Drop for DeviceRef {
    fn drop(&mut self) {
        // SAFETY: paired with the successful aclrtSetDevice that made this guard.
        let _ = unsafe { (self.0.api.reset_device)(self.1) };
    }
}

struct Context(&'static Acl, Ptr);
impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: a context this guard created.
        let _ = unsafe { (self.0.api.destroy_context)(self.1) };
    }
}

struct Stream(&'static Acl, Ptr);
impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: a stream this guard created.
        let _ = unsafe { (self.0.api.destroy_stream)(self.1) };
    }
}

struct Model(&'static Acl, u32);
impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: a model this guard loaded.
        let _ = unsafe { (self.0.api.unload)(self.1) };
    }
}

struct Desc(&'static Acl, Ptr);
impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: a description this guard created.
        let _ = unsafe { (self.0.api.destroy_desc)(self.1) };
    }
}

/// Device memory from `aclrtMalloc`.
struct DeviceMem(&'static Acl, Ptr, usize);
impl Drop for DeviceMem {
    fn drop(&mut self) {
        // SAFETY: memory this guard allocated.
        let _ = unsafe { (self.0.api.free)(self.1) };
    }
}

/// An `aclDataBuffer` wrapping device memory (it does not own the memory).
struct DataBuffer(&'static Acl, Ptr);
impl Drop for DataBuffer {
    fn drop(&mut self) {
        // SAFETY: a buffer this guard created.
        let _ = unsafe { (self.0.api.destroy_data_buffer)(self.1) };
    }
}

/// A dataset and what it holds, released dataset first, then its buffers, then the memory
/// (`aclmdlDestroyDataset` frees neither).
struct Dataset {
    acl: &'static Acl,
    handle: Ptr,
    buffers: Vec<DataBuffer>,
    mem: Vec<DeviceMem>,
}
impl Drop for Dataset {
    fn drop(&mut self) {
        // SAFETY: a dataset this guard created; its buffers and memory drop after it.
        let _ = unsafe { (self.acl.api.destroy_dataset)(self.handle) };
    }
}

/// One input or output as the model describes it.
#[derive(Debug, Clone)]
struct IoSpec {
    name: String,
    dtype: c_int,
    dims: Vec<usize>,
    bytes: usize,
}

/// ACL's `aclDataType` name, for messages.
fn dtype_name(t: c_int) -> &'static str {
    match t {
        0 => "ACL_FLOAT",
        1 => "ACL_FLOAT16",
        2 => "ACL_INT8",
        3 => "ACL_INT32",
        4 => "ACL_UINT8",
        6 => "ACL_INT16",
        7 => "ACL_UINT16",
        8 => "ACL_UINT32",
        9 => "ACL_INT64",
        10 => "ACL_UINT64",
        11 => "ACL_DOUBLE",
        12 => "ACL_BOOL",
        _ => "an unknown aclDataType",
    }
}

/// Bytes per element of the types acceval exchanges (`None`: not exchanged).
fn width(t: c_int) -> Option<usize> {
    match t {
        0 | 3 => Some(4),
        9 | 11 => Some(8),
        2 | 4 | 12 => Some(1),
        _ => None,
    }
}

/// The model's inputs and outputs, from its description.
fn describe_io(acl: &'static Acl, desc: Ptr, output: bool) -> Result<Vec<IoSpec>, String> {
    let api = &acl.api;
    // SAFETY: `desc` is a filled model description; each getter takes an index below the
    // count it reported.
    unsafe {
        let n = if output {
            (api.num_outputs)(desc)
        } else {
            (api.num_inputs)(desc)
        };
        (0..n)
            .map(|i| {
                let mut dims: IoDims = std::mem::zeroed();
                let (rc, name, dtype, bytes, what) = if output {
                    (
                        (api.output_dims)(desc, i, &mut dims),
                        (api.output_name)(desc, i),
                        (api.output_dtype)(desc, i),
                        (api.output_size)(desc, i),
                        "aclmdlGetOutputDims",
                    )
                } else {
                    (
                        (api.input_dims)(desc, i, &mut dims),
                        (api.input_name)(desc, i),
                        (api.input_dtype)(desc, i),
                        (api.input_size)(desc, i),
                        "aclmdlGetInputDims",
                    )
                };
                acl.check(what, rc).map_err(|e| e.to_string())?;
                let name = if name.is_null() {
                    format!("{}_{i}", if output { "output" } else { "input" })
                } else {
                    CStr::from_ptr(name).to_string_lossy().into_owned()
                };
                let count = dims.dim_count.min(128);
                let raw = &dims.dims[..count];
                if raw.iter().any(|&d| d < 0) {
                    return Err(format!(
                        "{} '{name}' has dynamic dims {raw:?}: acceval runs .om models of static shape (convert with --input_shape)",
                        if output { "output" } else { "input" }
                    ));
                }
                let w = width(dtype).ok_or_else(|| {
                    format!(
                        "{} '{name}' is {}, which acceval does not exchange ({})",
                        if output { "output" } else { "input" },
                        dtype_name(dtype),
                        crate::model::tensor::SUPPORTED_IO_TYPES
                    )
                })?;
                let dims: Vec<usize> = raw.iter().map(|&d| d as usize).collect();
                let expect = w * dims.iter().product::<usize>();
                if expect != bytes {
                    return Err(format!(
                        "'{name}': the model says {bytes} bytes for {} of {dims:?} ({expect} bytes)",
                        dtype_name(dtype)
                    ));
                }
                Ok(IoSpec {
                    name,
                    dtype,
                    dims,
                    bytes,
                })
            })
            .collect()
    }
}

/// A dataset of freshly allocated device buffers of `sizes` bytes.
fn dataset(acl: &'static Acl, sizes: &[usize]) -> Result<Dataset, AclError> {
    let api = &acl.api;
    // SAFETY: ACL calls with valid out-pointers; every handle goes into a guard at once.
    unsafe {
        let handle = (api.create_dataset)();
        if handle.is_null() {
            return Err(acl
                .check("aclmdlCreateDataset", -1)
                .err()
                .unwrap_or_else(|| unreachable_error("aclmdlCreateDataset")));
        }
        let mut ds = Dataset {
            acl,
            handle,
            buffers: Vec::new(),
            mem: Vec::new(),
        };
        for &n in sizes {
            let mut p = null();
            acl.check(
                "aclrtMalloc",
                (api.malloc)(&mut p, n.max(1), ffi::MALLOC_NORMAL_ONLY),
            )?;
            ds.mem.push(DeviceMem(acl, p, n));
            let b = (api.create_data_buffer)(p, n);
            if b.is_null() {
                return Err(acl
                    .check("aclCreateDataBuffer", -1)
                    .err()
                    .unwrap_or_else(|| unreachable_error("aclCreateDataBuffer")));
            }
            ds.buffers.push(DataBuffer(acl, b));
            acl.check(
                "aclmdlAddDatasetBuffer",
                (api.add_dataset_buffer)(handle, b),
            )?;
        }
        Ok(ds)
    }
}

fn unreachable_error(function: &'static str) -> AclError {
    AclError {
        function,
        code: -1,
        name: "NULL handle",
        message: None,
        hint: "ACL returned NULL without an error code",
    }
}

/// The `.om` to load and how it came to be.
pub struct Source<'a> {
    pub om: &'a Path,
    /// The ONNX graph it was converted from, when acceval converted it (for placement).
    pub onnx: Option<&'a Path>,
    pub aicpu_ops: Vec<String>,
}

pub struct AclSession {
    // Field order is teardown order (fields drop in declaration order, after `drop`).
    outputs: Dataset,
    inputs: Dataset,
    _desc: Desc,
    model: Model,
    stream: Stream,
    context: Context,
    _device: DeviceRef,
    acl: &'static Acl,
    in_specs: Vec<IoSpec>,
    out_specs: Vec<IoSpec>,
    host_out: Vec<Vec<u8>>,
    info: SessionInfo,
    timings: LoadTimings,
    placement: Placement,
}

impl Drop for AclSession {
    fn drop(&mut self) {
        // The handles belong to this context: make it current on the dropping thread.
        // SAFETY: the context is live until the `context` field drops, after this.
        let _ = unsafe { (self.acl.api.set_current_context)(self.context.1) };
    }
}

impl AclSession {
    /// Sets the device, creates a context and a stream, loads `src.om`, describes it and
    /// allocates its I/O; `info` and `timings` are completed here.
    pub fn open(
        acl: &'static Acl,
        device: i32,
        src: Source<'_>,
        mut info: SessionInfo,
        mut timings: LoadTimings,
        load_limit: Duration,
    ) -> Result<AclSession, BackendError> {
        let t = Instant::now();
        let err = |e: String| BackendError::Load {
            backend: info.backend.clone(),
            model: src.om.display().to_string(),
            reason: e,
        };
        let api = &acl.api;
        let path =
            CString::new(src.om.to_string_lossy().as_bytes()).map_err(|e| err(e.to_string()))?;
        // SAFETY: ACL calls in the documented order with valid out-pointers; each handle is
        // wrapped in its guard before the next call, so an early return tears down in
        // reverse.
        let (dev, context, stream, model, desc) = unsafe {
            acl.check("aclrtSetDevice", (api.set_device)(device))
                .map_err(|e| err(e.to_string()))?;
            let dev = DeviceRef(acl, device);
            let mut ctx = null();
            acl.check("aclrtCreateContext", (api.create_context)(&mut ctx, device))
                .map_err(|e| err(e.to_string()))?;
            let context = Context(acl, ctx);
            let mut st = null();
            acl.check("aclrtCreateStream", (api.create_stream)(&mut st))
                .map_err(|e| err(e.to_string()))?;
            let stream = Stream(acl, st);
            let mut mode: c_int = -1;
            acl.check("aclrtGetRunMode", (api.run_mode)(&mut mode))
                .map_err(|e| err(e.to_string()))?;
            info.options.insert(
                "run_mode".into(),
                match mode {
                    0 => "ACL_DEVICE (the host is the device's own CPU)".into(),
                    1 => "ACL_HOST (a PCIe card: inputs and outputs are copied)".into(),
                    m => format!("{m}"),
                },
            );
            let id = match load_bounded(acl, &info.engine, context.1, path, load_limit) {
                Ok(id) => id,
                Err(e) if crate::backend::abandoned_load() => {
                    // The loading thread may still be inside ACL with this context current:
                    // its handles must outlive it, so they are left to the process's end
                    // (which follows at once, by _exit: see backend::bounded).
                    std::mem::forget((stream, context, dev));
                    return Err(err(e));
                }
                Err(e) => return Err(err(e)),
            };
            let model = Model(acl, id);
            let d = (api.create_desc)();
            if d.is_null() {
                return Err(err(acl
                    .check("aclmdlCreateDesc", -1)
                    .err()
                    .unwrap_or_else(|| unreachable_error("aclmdlCreateDesc"))
                    .to_string()));
            }
            let desc = Desc(acl, d);
            acl.check("aclmdlGetDesc", (api.get_desc)(d, id))
                .map_err(|e| err(e.to_string()))?;
            (dev, context, stream, model, desc)
        };
        let in_specs = describe_io(acl, desc.1, false).map_err(&err)?;
        let out_specs = describe_io(acl, desc.1, true).map_err(&err)?;
        let inputs = dataset(acl, &in_specs.iter().map(|s| s.bytes).collect::<Vec<_>>())
            .map_err(|e| err(e.to_string()))?;
        let outputs = dataset(acl, &out_specs.iter().map(|s| s.bytes).collect::<Vec<_>>())
            .map_err(|e| err(e.to_string()))?;
        let host_out = out_specs.iter().map(|s| vec![0u8; s.bytes]).collect();
        timings.init_ms = t.elapsed().as_secs_f64() * 1e3;
        info.options.insert(
            "io".into(),
            in_specs
                .iter()
                .map(|s| format!("in {} {} {:?}", s.name, dtype_name(s.dtype), s.dims))
                .chain(
                    out_specs
                        .iter()
                        .map(|s| format!("out {} {} {:?}", s.name, dtype_name(s.dtype), s.dims)),
                )
                .collect::<Vec<_>>()
                .join("; "),
        );
        let placement = placement(&src);
        Ok(AclSession {
            outputs,
            inputs,
            _desc: desc,
            model,
            stream,
            context,
            _device: dev,
            acl,
            in_specs,
            out_specs,
            host_out,
            info,
            timings,
            placement,
        })
    }

    fn run_err(&self, reason: String) -> BackendError {
        BackendError::Run {
            backend: self.info.backend.clone(),
            reason,
        }
    }

    /// Copies `inputs` to the device (in the model's order, matched by name, else by
    /// position).
    fn copy_in(&self, inputs: &[HostTensor]) -> Result<(), BackendError> {
        if inputs.len() != self.in_specs.len() {
            return Err(self.run_err(format!(
                "{} inputs given, the model takes {} ({})",
                inputs.len(),
                self.in_specs.len(),
                self.in_specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for (i, spec) in self.in_specs.iter().enumerate() {
            let t = inputs
                .iter()
                .find(|t| t.name == spec.name)
                .unwrap_or(&inputs[i]);
            let (ok_type, bytes) = host_bytes(&t.data, spec.dtype);
            if !ok_type || t.data.shape() != spec.dims.as_slice() {
                return Err(self.run_err(format!(
                    "input '{}' is {} {:?}; the .om takes {} {:?}",
                    spec.name,
                    t.data.dtype().name(),
                    t.data.shape(),
                    dtype_name(spec.dtype),
                    spec.dims
                )));
            }
            let mem = &self.inputs.mem[i];
            // SAFETY: `bytes` is the tensor's contiguous memory of `spec.bytes` bytes; the
            // destination is this input's device buffer, `mem.2` bytes (its capacity is
            // passed as destMax, never the count).
            let rc = unsafe {
                (self.acl.api.memcpy)(
                    mem.1,
                    mem.2,
                    bytes.as_ptr().cast(),
                    spec.bytes,
                    ffi::HOST_TO_DEVICE,
                )
            };
            self.acl
                .check("aclrtMemcpy", rc)
                .map_err(|e| self.run_err(format!("input '{}' host to device: {e}", spec.name)))?;
        }
        Ok(())
    }

    fn execute(&self) -> Result<(), BackendError> {
        // SAFETY: the model and its datasets are live; the stream belongs to this context.
        unsafe {
            self.acl
                .check(
                    "aclmdlExecute",
                    (self.acl.api.execute)(self.model.1, self.inputs.handle, self.outputs.handle),
                )
                .map_err(|e| self.run_err(e.to_string()))?;
            self.acl
                .check(
                    "aclrtSynchronizeStream",
                    (self.acl.api.synchronize_stream)(self.stream.1),
                )
                .map_err(|e| self.run_err(e.to_string()))
        }
    }

    fn copy_out(&mut self) -> Result<Vec<HostTensor>, BackendError> {
        let mut out = Vec::with_capacity(self.out_specs.len());
        for (j, spec) in self.out_specs.iter().enumerate() {
            let mem = &self.outputs.mem[j];
            let host = &mut self.host_out[j];
            // SAFETY: `host` holds `spec.bytes` bytes (its capacity is destMax); the source is
            // this output's device buffer.
            let rc = unsafe {
                (self.acl.api.memcpy)(
                    host.as_mut_ptr().cast(),
                    host.len(),
                    mem.1,
                    spec.bytes,
                    ffi::DEVICE_TO_HOST,
                )
            };
            if let Err(e) = self.acl.check("aclrtMemcpy", rc) {
                return Err(BackendError::Run {
                    backend: self.info.backend.clone(),
                    reason: format!("output '{}' device to host: {e}", spec.name),
                });
            }
            out.push(HostTensor {
                name: spec.name.clone(),
                data: from_bytes(host, spec),
            });
        }
        Ok(out)
    }

    fn make_current(&self) -> Result<(), BackendError> {
        // SAFETY: a live context of this session.
        let rc = unsafe { (self.acl.api.set_current_context)(self.context.1) };
        self.acl
            .check("aclrtSetCurrentContext", rc)
            .map_err(|e| self.run_err(e.to_string()))
    }
}

/// `aclmdlLoadFromFile` of `path` under `limit`. ACL cannot interrupt a load, so it runs on
/// a thread acceval stops waiting for (backend::bounded), with the session's context made
/// current there first: ACL contexts are per thread, and a context made on one thread may be
/// set current on another (aclrtSetCurrentContext). The model id belongs to the context, not
/// to the loading thread, so the session uses it from the caller's thread.
fn load_bounded(
    acl: &'static Acl,
    engine: &str,
    context: Ptr,
    path: CString,
    limit: Duration,
) -> Result<u32, String> {
    // A raw pointer is not Send; the context handle crosses as the address it is.
    let ctx = context as usize;
    crate::backend::bounded(
        engine,
        "ACL's model load (aclmdlLoadFromFile)",
        limit,
        move || {
            // SAFETY: a live context of the session being opened (its guard is kept alive,
            // or leaked if this thread is abandoned); the path is a C string; `id` is ours.
            unsafe {
                acl.check(
                    "aclrtSetCurrentContext",
                    (acl.api.set_current_context)(ctx as Ptr),
                )
                .map_err(|e| e.to_string())?;
                let mut id = 0u32;
                acl.check(
                    "aclmdlLoadFromFile",
                    (acl.api.load_from_file)(path.as_ptr(), &mut id),
                )
                .map_err(|e| e.to_string())?;
                Ok(id)
            }
        },
    )
}

/// The bytes of `t` if its element type is `dtype`: (type matches, bytes). The tensor is
/// made contiguous first when it is not.
fn host_bytes(t: &TensorData, dtype: c_int) -> (bool, std::borrow::Cow<'_, [u8]>) {
    macro_rules! raw {
        ($a:expr, $ok:expr) => {{
            let bytes: std::borrow::Cow<'_, [u8]> = match $a.as_slice_memory_order() {
                Some(s) if $a.is_standard_layout() => {
                    // SAFETY: a plain-old-data slice viewed as bytes, same length in bytes.
                    std::borrow::Cow::Borrowed(unsafe {
                        std::slice::from_raw_parts(
                            s.as_ptr().cast::<u8>(),
                            std::mem::size_of_val(s),
                        )
                    })
                }
                _ => {
                    let c = $a.as_standard_layout();
                    let s = c.as_slice().unwrap_or(&[]);
                    // SAFETY: as above, on the contiguous copy.
                    std::borrow::Cow::Owned(
                        unsafe {
                            std::slice::from_raw_parts(
                                s.as_ptr().cast::<u8>(),
                                std::mem::size_of_val(s),
                            )
                        }
                        .to_vec(),
                    )
                }
            };
            ($ok, bytes)
        }};
    }
    match t {
        TensorData::F32(a) => raw!(a, dtype == 0),
        TensorData::F64(a) => raw!(a, dtype == 11),
        TensorData::I64(a) => raw!(a, dtype == 9),
        TensorData::I32(a) => raw!(a, dtype == 3),
        TensorData::I8(a) => raw!(a, dtype == 2),
        TensorData::U8(a) => raw!(a, dtype == 4),
        TensorData::Bool(a) => raw!(a, dtype == 12),
    }
}

/// A host tensor from an output's bytes (native little-endian, as ACL copies them).
fn from_bytes(b: &[u8], spec: &IoSpec) -> TensorData {
    let shape = ndarray::IxDyn(&spec.dims);
    macro_rules! arr {
        ($t:ty, $v:ident) => {{
            let n = b.len() / std::mem::size_of::<$t>();
            let mut v: Vec<$t> = Vec::with_capacity(n);
            // SAFETY: `v` has room for `n` elements; the bytes are copied whole.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    b.as_ptr(),
                    v.as_mut_ptr().cast::<u8>(),
                    n * std::mem::size_of::<$t>(),
                );
                v.set_len(n);
            }
            TensorData::$v(
                ndarray::ArrayD::from_shape_vec(shape, v).unwrap_or_else(|_| {
                    ndarray::ArrayD::from_elem(ndarray::IxDyn(&[0]), Default::default())
                }),
            )
        }};
    }
    match spec.dtype {
        11 => arr!(f64, F64),
        9 => arr!(i64, I64),
        3 => arr!(i32, I32),
        2 => arr!(i8, I8),
        4 => arr!(u8, U8),
        12 => TensorData::Bool(
            ndarray::ArrayD::from_shape_vec(shape, b.iter().map(|&x| x != 0).collect())
                .unwrap_or_else(|_| ndarray::ArrayD::from_elem(ndarray::IxDyn(&[0]), false)),
        ),
        _ => arr!(f32, F32),
    }
}

/// Where the nodes run: all on the NPU's AI Core, but those ATC's log puts on the AI CPU.
fn placement(src: &Source<'_>) -> Placement {
    let Some(onnx) = src.onnx else {
        return Placement {
            source: "ATC compiled the whole .om for the NPU; a given .om has no per-node record (give the .onnx to list nodes)".into(),
            nodes: Vec::new(),
        };
    };
    let aicpu: Vec<&str> = src
        .aicpu_ops
        .iter()
        .filter_map(|s| s.split(" (").next())
        .collect();
    let nodes = crate::model::onnx::OnnxFile::open(onnx)
        .map(|f| {
            f.graph()
                .node
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let name = n.label(i).replace('#', "_");
                    let device =
                        if aicpu.contains(&name.as_str()) || aicpu.contains(&n.name.as_str()) {
                            "NPU AI CPU (ATC fallback)"
                        } else {
                            "NPU AI Core"
                        };
                    crate::backend::NodePlacement {
                        node: name,
                        op_type: n.op_type.clone(),
                        device: device.into(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Placement {
        source: format!(
            "ATC compiles the whole graph into one .om for the NPU; {} operator(s) its log places on the AI CPU",
            src.aicpu_ops.len()
        ),
        nodes,
    }
}

impl Session for AclSession {
    fn info(&self) -> &SessionInfo {
        &self.info
    }
    fn timings(&self) -> &LoadTimings {
        &self.timings
    }
    fn run(&mut self, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, BackendError> {
        Ok(self.timed_run(inputs)?.outputs)
    }
    fn synchronize(&mut self) -> Result<(), BackendError> {
        self.make_current()?;
        // SAFETY: the session's stream.
        let rc = unsafe { (self.acl.api.synchronize_stream)(self.stream.1) };
        self.acl
            .check("aclrtSynchronizeStream", rc)
            .map_err(|e| self.run_err(e.to_string()))
    }
    fn timed_run(&mut self, inputs: &[HostTensor]) -> Result<Ran, BackendError> {
        self.make_current()?;
        let t0 = Instant::now();
        self.copy_in(inputs)?;
        let t1 = Instant::now();
        self.execute()?;
        let t2 = Instant::now();
        let outputs = self.copy_out()?;
        let t3 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        Ok(Ran {
            outputs,
            forward_ms: ms(t0, t3),
            copies: Some(CopyTimes {
                h2d_ms: ms(t0, t1),
                execute_ms: ms(t1, t2),
                d2h_ms: ms(t2, t3),
            }),
        })
    }
    fn placement(&mut self) -> Result<Placement, BackendError> {
        Ok(self.placement.clone())
    }
    fn declared_inputs(&self) -> Option<Vec<crate::backend::DeclaredInput>> {
        use crate::model::onnx::DataType;
        self.in_specs
            .iter()
            .map(|s| {
                let dtype = match s.dtype {
                    0 => DataType::FLOAT,
                    11 => DataType::DOUBLE,
                    9 => DataType::INT64,
                    3 => DataType::INT32,
                    2 => DataType::INT8,
                    4 => DataType::UINT8,
                    12 => DataType::BOOL,
                    _ => return None,
                };
                Some(crate::backend::DeclaredInput {
                    name: s.name.clone(),
                    dtype,
                    dims: Some(s.dims.clone()),
                })
            })
            .collect()
    }
}
