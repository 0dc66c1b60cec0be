//! The libtorch backend (`--backend tch`, `tch:cpu`, `tch:cuda[@N]`): a TorchScript model (a
//! `.pt` from `torch.jit.trace` or `torch.jit.script`) run by libtorch through the `tch`
//! crate, as PyTorch runs it, so a lab's model is measured without converting it first (and
//! the conversion itself can be checked: `acceval accuracy --model M.pt --against M.onnx`).
//!
//! Cargo feature `tch` (off by default: it links libtorch 2.13.0; `scripts/with-torch.sh`
//! provides it). Compiled out, the backend stays listed and says which feature it needs.
//! Inputs are named after `forward`'s arguments (read from the TorchScript archive's code),
//! else `input_0`, `input_1`, ...; outputs `output_0`, ... (a tuple or list is flattened).
//! TorchScript declares no shapes or types: a run needs `--shape NAME:DIMS` or input files.

use std::path::Path;

use super::describe::{AdaptationRoute, DeviceClass, PeakSource, Sensor, Traits};
use super::{
    Availability, Backend, BackendError, BackendSettings, BackendSpec, LoadOptions, Session,
};

pub struct TchBackend;

pub static TCH: TchBackend = TchBackend;

/// Whether `path` is a regular file holding a zip archive (TorchScript files are; ONNX files
/// are protobuf). A FIFO or device is not opened for reading (it could block forever).
pub fn is_torchscript(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    crate::model::load::open_regular(path)
        .is_ok_and(|(mut f, _)| f.read_exact(&mut magic).is_ok() && &magic == b"PK\x03\x04")
}

/// The argument names of `forward` (after `self`), from the TorchScript archive's code
/// (`<name>/code/__torch__/....py`, which holds `def forward(self, x: Tensor, ...)`); empty
/// when no code file declares it.
pub fn forward_arguments(path: &Path) -> Vec<String> {
    let Ok((file, _)) = crate::model::load::open_regular(path) else {
        return Vec::new();
    };
    let Ok(mut zip) = zip::ZipArchive::new(file) else {
        return Vec::new();
    };
    let mut codes: Vec<String> = zip
        .file_names()
        .filter(|n| n.contains("/code/") && n.ends_with(".py"))
        .map(str::to_string)
        .collect();
    // The top module's file first: the shortest path.
    codes.sort_by_key(|n| (n.len(), n.clone()));
    for name in codes {
        let mut text = String::new();
        let Ok(mut f) = zip.by_name(&name) else {
            continue;
        };
        if std::io::Read::read_to_string(&mut f, &mut text).is_err() {
            continue;
        }
        if let Some(args) = parse_forward(&text) {
            return args;
        }
    }
    Vec::new()
}

/// The arguments of the first `def forward(self, ...)` in TorchScript code.
fn parse_forward(code: &str) -> Option<Vec<String>> {
    let start = code.find("def forward(")? + "def forward(".len();
    let end = start + code[start..].find(')')?;
    let args: Vec<String> = code[start..end]
        .split(',')
        .map(|a| a.split(':').next().unwrap_or("").trim().to_string())
        .filter(|a| !a.is_empty() && a != "self")
        .collect();
    Some(args)
}

/// Why a file cannot run on tch, when it cannot.
fn check_format(model: &Path) -> Result<(), String> {
    if is_torchscript(model) {
        return Ok(());
    }
    Err(
        "tch runs TorchScript models (a .pt from torch.jit.trace or torch.jit.script, a zip archive); this file is not one: run an ONNX model on --backend cpu or ort:cpu"
            .into(),
    )
}

/// (kind, elements, bytes) of every named parameter, read by libtorch.
fn parameters(model: &Path) -> Result<Vec<(String, u64, u64)>, String> {
    #[cfg(feature = "tch")]
    {
        real::parameters(model)
    }
    #[cfg(not(feature = "tch"))]
    {
        let _ = model;
        Err(format!(
            "inspecting TorchScript needs libtorch: {}",
            not_compiled()
        ))
    }
}

/// Table 1 of a TorchScript model: its named parameters, counted by libtorch.
pub fn inspect(
    model: &Path,
) -> Result<crate::report::schema::inspect::TorchScriptInspection, BackendError> {
    use crate::report::schema::inspect::{TorchScriptDtype, TorchScriptInspection};
    let err = |reason: String| BackendError::Load {
        backend: "tch".into(),
        model: model.display().to_string(),
        reason,
    };
    check_format(model).map_err(err)?;
    let params = parameters(model).map_err(err)?;
    let mut by: std::collections::BTreeMap<String, TorchScriptDtype> = Default::default();
    for (kind, numel, bytes) in &params {
        let d = by.entry(kind.clone()).or_insert(TorchScriptDtype {
            kind: kind.clone(),
            tensors: 0,
            params: 0,
            bytes: 0,
        });
        d.tensors += 1;
        d.params += numel;
        d.bytes += bytes;
    }
    let parameter_bytes: u64 = by.values().map(|d| d.bytes).sum();
    let mb = parameter_bytes as f64 / 1e6;
    Ok(TorchScriptInspection {
        schema: "acceval.inspect-torchscript/1".into(),
        model: model.display().to_string(),
        model_sha256: crate::util::fs::sha256_hex(
            &std::fs::read(model).map_err(|e| err(e.to_string()))?,
        ),
        inputs: forward_arguments(model),
        parameters: by.values().map(|d| d.params).sum(),
        parameter_bytes,
        parameter_mb: mb,
        size_level: crate::standard::size_level(mb),
        by_dtype: by.into_values().collect(),
        flops: "n/a: TorchScript graphs are not analysed; export the model to ONNX for Table 2 (acceval inspect M.onnx)".into(),
    })
}

#[cfg(not(feature = "tch"))]
fn not_compiled() -> String {
    "not compiled (cargo feature tch): build with `scripts/with-torch.sh cargo build --release --features tch`".into()
}

impl Backend for TchBackend {
    fn name(&self) -> &'static str {
        "tch"
    }
    fn summary(&self) -> &'static str {
        "libtorch (tch) on the CPU or an NVIDIA GPU: TorchScript models as PyTorch runs them"
    }
    fn probe(&self) -> Availability {
        #[cfg(feature = "tch")]
        {
            real::probe()
        }
        #[cfg(not(feature = "tch"))]
        {
            Availability::NotAvailable {
                reason: not_compiled(),
            }
        }
    }
    fn providers(&self) -> Vec<(String, Availability)> {
        #[cfg(feature = "tch")]
        {
            real::providers()
        }
        #[cfg(not(feature = "tch"))]
        {
            Vec::new()
        }
    }
    fn describe(&self, b: &BackendSettings) -> Option<Traits> {
        match b.spec.provider.as_deref() {
            None | Some("cpu") => Some(Traits {
                // libtorch's own CPU kernels; its FP32 results are not a second engine for
                // ONNX references (it runs another file: the TorchScript model).
                cross_check: None,
                ..Traits::host_cpu(
                    "libtorch runs the TorchScript graph on its CPU kernels",
                    None,
                )
            }),
            Some("cuda") => Some(Traits::accelerator(
                DeviceClass::Gpu,
                AdaptationRoute::OperatorMapping,
                "libtorch maps each TorchScript operator to its CUDA kernels (cuBLAS, cuDNN)",
                Some(Sensor::Nvml),
                PeakSource::NvidiaGpu,
            )),
            Some(_) => None,
        }
    }
    fn load(
        &self,
        model: &Path,
        spec: &BackendSpec,
        opts: &LoadOptions,
    ) -> Result<Box<dyn Session>, BackendError> {
        if let Some(p) = spec
            .provider
            .as_deref()
            .filter(|p| *p != "cpu" && *p != "cuda")
        {
            return Err(BackendError::NotAvailable {
                backend: spec.to_string(),
                reason: format!("tch has no provider '{p}': use tch, tch:cpu or tch:cuda@N"),
            });
        }
        check_format(model).map_err(|reason| BackendError::Load {
            backend: spec.to_string(),
            model: model.display().to_string(),
            reason,
        })?;
        #[cfg(feature = "tch")]
        {
            real::load(model, spec, opts)
        }
        #[cfg(not(feature = "tch"))]
        {
            let _ = opts;
            Err(BackendError::NotAvailable {
                backend: spec.to_string(),
                reason: not_compiled(),
            })
        }
    }
}

#[cfg(feature = "tch")]
mod real {
    //! The libtorch calls: load, device, threads, tensors in and out, timing.

    use std::collections::BTreeMap;
    use std::path::Path;
    use std::time::Instant;

    use tch::{CModule, Device, IValue, Kind, Tensor};

    use super::super::{
        Availability, BackendError, BackendSpec, CopyTimes, DeclaredInput, LoadOptions,
        LoadTimings, Placement, Ran, Session, SessionInfo,
    };
    use crate::model::onnx::DataType;
    use crate::model::tensor::{HostTensor, TensorData};

    /// The libtorch version this build of tch was checked against at build time.
    pub const LIBTORCH_VERSION: &str = "2.13.0";

    /// (kind, elements, bytes) of every named parameter.
    pub fn parameters(model: &Path) -> Result<Vec<(String, u64, u64)>, String> {
        let m = CModule::load_on_device(model, Device::Cpu).map_err(|e| e.to_string())?;
        let named = m.named_parameters().map_err(|e| e.to_string())?;
        Ok(named
            .iter()
            .map(|(_, t)| {
                let n = t.numel() as u64;
                (
                    format!("{:?}", t.kind()),
                    n,
                    n * t.kind().elt_size_in_bytes() as u64,
                )
            })
            .collect())
    }

    pub fn probe() -> Availability {
        Availability::Available {
            detail: format!(
                "libtorch {LIBTORCH_VERSION} through tch 0.26, {} CPU threads; CUDA: {}",
                tch::get_num_threads(),
                if tch::Cuda::is_available() {
                    format!("{} device(s)", tch::Cuda::device_count())
                } else {
                    "not available".into()
                }
            ),
        }
    }

    pub fn providers() -> Vec<(String, Availability)> {
        vec![
            (
                "tch:cpu".into(),
                Availability::Available {
                    detail: "libtorch's CPU kernels".into(),
                },
            ),
            (
                "tch:cuda".into(),
                if tch::Cuda::is_available() {
                    Availability::Available {
                        detail: format!("{} CUDA device(s)", tch::Cuda::device_count()),
                    }
                } else {
                    Availability::NotAvailable {
                        reason: "tch::Cuda::is_available() is false: no NVIDIA driver, or a libtorch without CUDA (scripts/with-torch.sh installs the CPU one; TORCH_CUDA=1 the CUDA one)".into(),
                    }
                },
            ),
        ]
    }

    struct TchSession {
        module: CModule,
        device: Device,
        names: Vec<String>,
        info: SessionInfo,
        timings: LoadTimings,
    }

    pub fn load(
        model: &Path,
        spec: &BackendSpec,
        opts: &LoadOptions,
    ) -> Result<Box<dyn Session>, BackendError> {
        let err = |reason: String| BackendError::Load {
            backend: spec.to_string(),
            model: model.display().to_string(),
            reason,
        };
        let device = match spec.provider.as_deref() {
            Some("cuda") => {
                let n = spec.device.unwrap_or(0) as usize;
                if !tch::Cuda::is_available() {
                    return Err(BackendError::NotAvailable {
                        backend: spec.to_string(),
                        reason: "no CUDA device for libtorch (tch::Cuda::is_available() is false)"
                            .into(),
                    });
                }
                if n as i64 >= tch::Cuda::device_count() {
                    return Err(BackendError::NotAvailable {
                        backend: spec.to_string(),
                        reason: format!(
                            "CUDA device {n} does not exist ({} device(s))",
                            tch::Cuda::device_count()
                        ),
                    });
                }
                Device::Cuda(n)
            }
            _ => Device::Cpu,
        };
        if let Some(t) = opts.threads {
            tch::set_num_threads(t as i32);
        }
        if let Some((k, _)) = opts.ep_options.first() {
            return Err(err(format!(
                "unknown option '{k}': the tch backend takes none"
            )));
        }
        let t = Instant::now();
        // libtorch's load (deserialise, move to the device) cannot be interrupted: it runs on
        // a thread acceval stops waiting for at the load budget, as tract's conversion and
        // ONNX Runtime's session creation do.
        let limit = opts.load_timeout_s.map_or_else(
            || super::super::default_load_timeout(model),
            std::time::Duration::from_secs_f64,
        );
        let path = model.to_path_buf();
        let module = super::super::bounded(
            &format!("libtorch {LIBTORCH_VERSION}"),
            "libtorch's TorchScript load (torch::jit::load onto the device)",
            limit,
            move || {
                let mut m = CModule::load_on_device(&path, device).map_err(|e| e.to_string())?;
                m.set_eval();
                Ok(m)
            },
        )
        .map_err(err)?;
        let init_ms = t.elapsed().as_secs_f64() * 1e3;
        let names = super::forward_arguments(model);
        let mut options = BTreeMap::new();
        options.insert("threads".into(), tch::get_num_threads().to_string());
        options.insert(
            "inputs".into(),
            if names.is_empty() {
                "forward's arguments not found in the archive: input_0, input_1, ... by position"
                    .into()
            } else {
                names.join(", ")
            },
        );
        options.insert("mode".into(), "eval, no_grad".into());
        let cuda = matches!(device, Device::Cuda(_));
        Ok(Box::new(TchSession {
            module,
            device,
            names,
            info: SessionInfo {
                backend: spec.to_string(),
                engine: format!("libtorch {LIBTORCH_VERSION} (tch 0.26)"),
                device: match device {
                    Device::Cuda(n) => format!("CUDA device {n}"),
                    _ => "CPU".into(),
                },
                library: None,
                options,
                emulated: None,
                copies: cuda.then(|| "h2d: Tensor::to_device(CUDA) of every input; forward: the module's forward, CUDA synchronised; d2h: every output to the CPU and into host tensors".into()),
            },
            timings: LoadTimings {
                convert_ms: None,
                convert_note: Some(
                    "TorchScript is libtorch's own IR: no conversion (loading and optimising is in init_ms)".into(),
                ),
                init_ms,
            },
        }))
    }

    fn to_tensor(t: &TensorData) -> Tensor {
        macro_rules! from {
            ($a:expr) => {{
                let shape: Vec<i64> = $a.shape().iter().map(|&d| d as i64).collect();
                let c = $a.as_standard_layout();
                Tensor::from_slice(c.as_slice().unwrap_or(&[])).reshape(&shape)
            }};
        }
        match t {
            TensorData::F32(a) => from!(a),
            TensorData::F64(a) => from!(a),
            TensorData::I64(a) => from!(a),
            TensorData::I32(a) => from!(a),
            TensorData::I8(a) => from!(a),
            TensorData::U8(a) => from!(a),
            TensorData::Bool(a) => from!(a),
        }
    }

    fn from_tensor(t: &Tensor) -> Result<TensorData, String> {
        let t = t.to_device(Device::Cpu).contiguous();
        let shape: Vec<usize> = t.size().iter().map(|&d| d as usize).collect();
        let n = t.numel();
        macro_rules! to {
            ($ty:ty, $v:ident, $t:expr) => {{
                let mut v = vec![<$ty>::default(); n];
                $t.copy_data(&mut v, n);
                TensorData::$v(
                    ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), v)
                        .map_err(|e| e.to_string())?,
                )
            }};
        }
        Ok(match t.kind() {
            Kind::Float => to!(f32, F32, t),
            // Half and BFloat16 outputs are widened to FP32 (acceval's host tensors have no
            // 16-bit float type): the values are exact.
            Kind::Half | Kind::BFloat16 => to!(f32, F32, t.to_kind(Kind::Float)),
            Kind::Double => to!(f64, F64, t),
            Kind::Int64 => to!(i64, I64, t),
            Kind::Int => to!(i32, I32, t),
            Kind::Int8 => to!(i8, I8, t),
            Kind::Uint8 => to!(u8, U8, t),
            Kind::Bool => to!(bool, Bool, t),
            k => {
                return Err(format!(
                    "an output of kind {k:?} is not exchanged by acceval"
                ));
            }
        })
    }

    /// Every tensor of an output value, in order (tuples and lists flattened).
    fn tensors(v: IValue, out: &mut Vec<Tensor>) -> Result<(), String> {
        match v {
            IValue::Tensor(t) => out.push(t),
            IValue::Tuple(vs) | IValue::GenericList(vs) => {
                for v in vs {
                    tensors(v, out)?;
                }
            }
            IValue::TensorList(ts) => out.extend(ts),
            other => return Err(format!("the model returned {other:?}, not tensors")),
        }
        Ok(())
    }

    impl TchSession {
        fn run_err(&self, reason: String) -> BackendError {
            BackendError::Run {
                backend: self.info.backend.clone(),
                reason,
            }
        }

        /// The inputs in forward's order (by name where the model names them).
        fn ordered<'a>(&self, inputs: &'a [HostTensor]) -> Vec<&'a HostTensor> {
            if self.names.len() != inputs.len() {
                return inputs.iter().collect();
            }
            self.names
                .iter()
                .enumerate()
                .map(|(i, n)| inputs.iter().find(|t| &t.name == n).unwrap_or(&inputs[i]))
                .collect()
        }
    }

    impl Session for TchSession {
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
            if let Device::Cuda(n) = self.device {
                tch::Cuda::synchronize(n as i64);
            }
            Ok(())
        }
        fn timed_run(&mut self, inputs: &[HostTensor]) -> Result<Ran, BackendError> {
            let _no_grad = tch::no_grad_guard();
            let t0 = Instant::now();
            let args: Vec<IValue> = self
                .ordered(inputs)
                .into_iter()
                .map(|t| IValue::Tensor(to_tensor(&t.data).to_device(self.device)))
                .collect();
            self.synchronize()?;
            let t1 = Instant::now();
            let out = self
                .module
                .forward_is(&args)
                .map_err(|e| self.run_err(e.to_string()))?;
            self.synchronize()?;
            let t2 = Instant::now();
            let mut ts = Vec::new();
            tensors(out, &mut ts).map_err(|e| self.run_err(e))?;
            let outputs = ts
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    Ok(HostTensor {
                        name: format!("output_{i}"),
                        data: from_tensor(t).map_err(|e| self.run_err(e))?,
                    })
                })
                .collect::<Result<Vec<_>, BackendError>>()?;
            let t3 = Instant::now();
            let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
            Ok(Ran {
                outputs,
                forward_ms: ms(t0, t3),
                copies: matches!(self.device, Device::Cuda(_)).then(|| CopyTimes {
                    h2d_ms: ms(t0, t1),
                    execute_ms: ms(t1, t2),
                    d2h_ms: ms(t2, t3),
                }),
            })
        }
        fn placement(&mut self) -> Result<Placement, BackendError> {
            Ok(Placement {
                source: "libtorch runs the whole TorchScript graph on the chosen device (no per-node record)".into(),
                nodes: Vec::new(),
            })
        }
        fn declared_inputs(&self) -> Option<Vec<DeclaredInput>> {
            // Without forward's names, one input by position (the common case).
            let names = if self.names.is_empty() {
                vec!["input_0".to_string()]
            } else {
                self.names.clone()
            };
            Some(
                names
                    .iter()
                    .map(|n| DeclaredInput {
                        name: n.clone(),
                        dtype: DataType::FLOAT,
                        dims: None,
                    })
                    .collect(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_arguments_from_torchscript_code() {
        let code = "class Net(Module):\n  __parameters__ = []\n  def forward(self: __torch__.Net,\n    x: Tensor,\n    h0: Tensor) -> Tensor:\n    return x\n";
        assert_eq!(parse_forward(code).unwrap(), vec!["x", "h0"]);
        assert_eq!(
            parse_forward("def forward(self) -> None:").unwrap(),
            Vec::<String>::new()
        );
        assert!(parse_forward("no code").is_none());
        // A zip archive with that code: the names come out; an ONNX-like file is refused.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.pt");
        let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
        z.start_file(
            "m/code/__torch__.py",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        std::io::Write::write_all(&mut z, code.as_bytes()).unwrap();
        z.finish().unwrap();
        assert!(is_torchscript(&p));
        assert_eq!(forward_arguments(&p), vec!["x", "h0"]);
        let onnx = dir.path().join("m.onnx");
        std::fs::write(&onnx, b"\x08\x07\x12\x04test").unwrap();
        assert!(check_format(&onnx).unwrap_err().contains("cpu or ort:cpu"));
    }
}
