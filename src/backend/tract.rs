//! The tract backends: `cpu` (tract's own kernels, pure Rust: the embedded default) and
//! `cuda` (tract's CUDA runtime, `tract-cuda`, which loads the CUDA driver, NVRTC, cuBLAS
//! and cuDNN at run time through cudarc, so it builds without CUDA).
//!
//! IR conversion (§5.3 a) is parsing the ONNX model and optimising it into tract's typed
//! graph at the concrete input shapes; graph initialisation (§5.3 b) is building the
//! execution plan (and, for CUDA, moving the weights to the device).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use tract_onnx::prelude::*;

use super::{
    Availability, Backend, BackendError, BackendSpec, LoadOptions, LoadTimings, NodePlacement,
    Placement, Session, SessionInfo,
};
use crate::model::onnx::{DataType, OnnxFile};
use crate::model::tensor::{HostTensor, TensorData};

/// tract's version, as built.
pub const TRACT_VERSION: &str = "0.23.9";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Cpu,
    Cuda,
}

/// A tract runtime as an acceval backend.
pub struct TractBackend {
    kind: Kind,
}

pub static CPU: TractBackend = TractBackend { kind: Kind::Cpu };
pub static CUDA: TractBackend = TractBackend { kind: Kind::Cuda };

/// Why the CUDA runtime cannot be used here, or `None` when it can.
fn cuda_unavailable() -> Option<String> {
    #[cfg(feature = "cuda")]
    {
        match tract_cuda::utils::ensure_cuda_runtime_dependencies("tract-cuda") {
            Ok(()) => None,
            Err(e) => Some(format!(
                "{:#} (needs an NVIDIA GPU with its driver's libcuda.so.1, and CUDA 13 libcudart, libnvrtc, libcublas, libcudnn on the library path)",
                e
            )),
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        Some(
            "acceval was built without the `cuda` cargo feature (cargo build --features cuda)"
                .into(),
        )
    }
}

fn datum(dt: DataType) -> Option<DatumType> {
    Some(match dt {
        DataType::FLOAT => f32::datum_type(),
        DataType::DOUBLE => f64::datum_type(),
        DataType::INT64 => i64::datum_type(),
        DataType::INT32 => i32::datum_type(),
        DataType::INT8 => i8::datum_type(),
        DataType::UINT8 => u8::datum_type(),
        DataType::BOOL => bool::datum_type(),
        DataType::FLOAT16 => f16::datum_type(),
        _ => return None,
    })
}

fn to_tract(t: &TensorData) -> Tensor {
    crate::with_array!(t, a => a.clone().into())
}

fn from_tract(v: &Tensor) -> Result<TensorData, String> {
    let dt = v.datum_type();
    macro_rules! arr {
        ($t:ty, $var:ident) => {
            TensorData::$var(
                v.to_plain_array_view::<$t>()
                    .map_err(|e| format!("{e:#}"))?
                    .to_owned(),
            )
        };
    }
    Ok(if dt == f32::datum_type() {
        arr!(f32, F32)
    } else if dt == f64::datum_type() {
        arr!(f64, F64)
    } else if dt == i64::datum_type() {
        arr!(i64, I64)
    } else if dt == i32::datum_type() {
        arr!(i32, I32)
    } else if dt == i8::datum_type() {
        arr!(i8, I8)
    } else if dt == u8::datum_type() {
        arr!(u8, U8)
    } else if dt == bool::datum_type() {
        arr!(bool, Bool)
    } else if dt == f16::datum_type() {
        let a = v
            .to_plain_array_view::<f16>()
            .map_err(|e| format!("{e:#}"))?;
        TensorData::F32(a.mapv(|x| x.to_f32()))
    } else {
        return Err(format!("output of type {dt:?} is not supported"));
    })
}

impl Backend for TractBackend {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Cpu => "cpu",
            Kind::Cuda => "cuda",
        }
    }
    fn summary(&self) -> &'static str {
        match self.kind {
            Kind::Cpu => "tract (pure Rust) on the CPU: the embedded default, no setup",
            Kind::Cuda => "tract's CUDA runtime on an NVIDIA GPU (libraries loaded at run time)",
        }
    }
    fn probe(&self) -> Availability {
        match self.kind {
            Kind::Cpu => Availability::Available {
                detail: format!(
                    "tract {TRACT_VERSION}, {} on this CPU",
                    std::env::consts::ARCH
                ),
            },
            Kind::Cuda => match cuda_unavailable() {
                None => Availability::Available {
                    detail: format!("tract-cuda {TRACT_VERSION}"),
                },
                Some(reason) => Availability::NotAvailable { reason },
            },
        }
    }
    fn load(
        &self,
        model: &Path,
        spec: &BackendSpec,
        opts: &LoadOptions,
    ) -> Result<Box<dyn Session>, BackendError> {
        let backend = spec.to_string();
        if let Some(p) = &spec.provider {
            return Err(BackendError::NotAvailable {
                backend,
                reason: format!(
                    "tract has no providers ('{p}' given); use --backend ort:{p} for ONNX Runtime's"
                ),
            });
        }
        if self.kind == Kind::Cuda
            && let Some(reason) = cuda_unavailable()
        {
            return Err(BackendError::NotAvailable { backend, reason });
        }
        if self.kind == Kind::Cpu && spec.device.unwrap_or(0) != 0 {
            return Err(BackendError::NotAvailable {
                backend,
                reason: "the cpu backend has one device, @0".into(),
            });
        }
        let load_err = |reason: String| BackendError::Load {
            backend: spec.to_string(),
            model: model.display().to_string(),
            reason,
        };
        let onnx = OnnxFile::open(model).map_err(|e| load_err(e.to_string()))?;
        let g = onnx.graph();
        let init_names: std::collections::HashSet<&str> =
            g.initializer.iter().map(|t| t.name.as_str()).collect();
        let inputs: Vec<(String, Option<DataType>)> = g
            .input
            .iter()
            .filter(|i| !init_names.contains(i.name.as_str()))
            .map(|i| {
                (
                    i.name.clone(),
                    i.tensor_type().map(|t| DataType(t.elem_type)),
                )
            })
            .collect();
        let output_names: Vec<String> = g.output.iter().map(|o| o.name.clone()).collect();
        let node_list: Vec<(String, String)> = g
            .node
            .iter()
            .enumerate()
            .map(|(i, n)| (n.label(i), n.op_type.clone()))
            .collect();
        drop(onnx);

        // §5.3 a: IR conversion = parse + type + optimise at the concrete shapes.
        let t0 = Instant::now();
        let mut m = tract_onnx::onnx()
            .model_for_path(model)
            .map_err(|e| load_err(format!("{e:#}")))?;
        for (ix, (name, dt)) in inputs.iter().enumerate() {
            let Some((_, shape)) = opts.input_shapes.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let Some(dt) = dt.and_then(datum) else {
                return Err(load_err(format!(
                    "input '{name}' has an element type tract cannot take"
                )));
            };
            m.set_input_fact(ix, InferenceFact::dt_shape(dt, shape.as_slice()))
                .map_err(|e| load_err(format!("{e:#}")))?;
        }
        let typed = match self.kind {
            Kind::Cpu => m.into_optimized(),
            Kind::Cuda => m.into_typed().and_then(|t| t.into_decluttered()),
        }
        .map_err(|e| load_err(format!("{e:#}")))?;
        let convert = t0.elapsed();

        // §5.3 b: graph initialisation = the execution plan on the device.
        let t1 = Instant::now();
        let runnable: Box<dyn Runnable> = match self.kind {
            Kind::Cpu => Box::new(
                typed
                    .into_runnable()
                    .map_err(|e| load_err(format!("{e:#}")))?,
            ),
            Kind::Cuda => {
                let rt = tract_onnx::tract_core::runtime::runtime_for_name("cuda")
                    .map_err(|e| load_err(format!("{e:#}")))?
                    .ok_or_else(|| load_err("tract's cuda runtime is not linked in".into()))?;
                rt.prepare(typed).map_err(|e| load_err(format!("{e:#}")))?
            }
        };
        let state = runnable.spawn().map_err(|e| load_err(format!("{e:#}")))?;
        let init = t1.elapsed();

        let placement = match self.kind {
            Kind::Cpu => node_list
                .into_iter()
                .map(|(node, op_type)| NodePlacement {
                    node,
                    op_type,
                    device: "CPU".into(),
                })
                .collect(),
            Kind::Cuda => runnable
                .typed_model()
                .map(|tm| {
                    tm.nodes()
                        .iter()
                        .filter(|n| {
                            !n.op().name().starts_with("Source") && n.op().name() != "Const"
                        })
                        .map(|n| {
                            let op = n.op().name().to_string();
                            let on_gpu = op.starts_with("Cuda") || op.starts_with("Gpu");
                            NodePlacement {
                                node: n.name.clone(),
                                op_type: op,
                                device: if on_gpu { "CUDA".into() } else { "CPU".into() },
                            }
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        let mut options = BTreeMap::new();
        options.insert("threads".into(), "1 (tract runs on one thread)".into());
        if opts.threads.is_some_and(|t| t != 1) {
            options.insert(
                "threads_requested".into(),
                format!(
                    "{} (ignored by tract; applies to ort)",
                    opts.threads.unwrap_or(1)
                ),
            );
        }
        options.insert("optimisation".into(), "tract into_optimized (full)".into());
        for (n, s) in &opts.input_shapes {
            options.insert(format!("input_shape.{n}"), format!("{s:?}"));
        }
        Ok(Box::new(TractSession {
            info: SessionInfo {
                backend: spec.to_string(),
                engine: format!(
                    "tract {TRACT_VERSION}{}",
                    if self.kind == Kind::Cuda {
                        " (cuda)"
                    } else {
                        ""
                    }
                ),
                device: match self.kind {
                    Kind::Cpu => "CPU".into(),
                    Kind::Cuda => format!("CUDA device {}", spec.device.unwrap_or(0)),
                },
                library: None,
                options,
            },
            timings: LoadTimings {
                convert_ms: Some(convert.as_secs_f64() * 1e3),
                convert_note: None,
                init_ms: init.as_secs_f64() * 1e3,
            },
            state,
            _runnable: runnable,
            output_names,
            placement: Placement {
                source: match self.kind {
                    Kind::Cpu => "tract runs every node on the CPU".into(),
                    Kind::Cuda => {
                        "tract's graph after the CUDA transform: Cuda*/Gpu* ops run on the GPU"
                            .into()
                    }
                },
                nodes: placement,
            },
        }))
    }
}

struct TractSession {
    info: SessionInfo,
    timings: LoadTimings,
    state: Box<dyn State>,
    _runnable: Box<dyn Runnable>,
    output_names: Vec<String>,
    placement: Placement,
}

impl Session for TractSession {
    fn info(&self) -> &SessionInfo {
        &self.info
    }
    fn timings(&self) -> &LoadTimings {
        &self.timings
    }
    fn run(&mut self, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, BackendError> {
        let run_err = |reason: String| BackendError::Run {
            backend: self.info.backend.clone(),
            reason,
        };
        let values: TVec<TValue> = inputs.iter().map(|t| to_tract(&t.data).into()).collect();
        let outs = self
            .state
            .run(values)
            .map_err(|e| run_err(format!("{e:#}")))?;
        outs.iter()
            .enumerate()
            .map(|(i, v)| {
                Ok(HostTensor {
                    name: self
                        .output_names
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| format!("output_{i}")),
                    data: from_tract(v).map_err(&run_err)?,
                })
            })
            .collect()
    }
    fn synchronize(&mut self) -> Result<(), BackendError> {
        // tract returns host tensors: its run is already synchronous (the CUDA runtime
        // copies outputs back to the host before returning).
        Ok(())
    }
    fn placement(&mut self) -> Result<Placement, BackendError> {
        Ok(self.placement.clone())
    }
}
