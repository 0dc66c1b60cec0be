//! The tract backends: `cpu` (tract's own kernels, pure Rust: the embedded default) and
//! `cuda` (tract's CUDA runtime, `tract-cuda`, which loads the CUDA driver, NVRTC, cuBLAS
//! and cuDNN at run time through cudarc, so it builds without CUDA).
//!
//! IR conversion (§5.3 a) is parsing the ONNX model and optimising it into tract's typed
//! graph at the concrete input shapes; graph initialisation (§5.3 b) is building the
//! execution plan (and, for CUDA, moving the weights to the device).
//!
//! What a lab's own export needs: the inputs are pinned to concrete shapes (the caller's,
//! else the declared dims) and the exporter's `value_info` is left out, so its symbols
//! never meet the concrete dims; FP16 models run as FP16 storage with FP32 compute where
//! tract has no FP16 arithmetic for the CPU; tract-linalg's kernels run on a rayon pool of
//! `--threads` (default: every core). Every choice is recorded in the session options.

mod limits;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use tract_onnx::prelude::multithread::Executor;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::ElementWiseMiniOp;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::transform::ModelTransform;

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
    fn describe(&self, _b: &super::BackendSettings) -> Option<super::Traits> {
        use super::describe::{AdaptationRoute, DeviceClass, PeakSource, Sensor, Traits};
        Some(match self.kind {
            Kind::Cpu => Traits::host_cpu(
                "tract runs every ONNX operator on its own CPU kernels",
                Some("ort:cpu"),
            ),
            Kind::Cuda => Traits::accelerator(
                DeviceClass::Gpu,
                AdaptationRoute::OperatorMapping,
                "tract maps operators to CUDA kernels (cuBLAS, cuDNN, NVRTC); the others stay on the CPU",
                Some(Sensor::Nvml),
                PeakSource::NvidiaGpu,
            ),
        })
    }
    fn probe(&self) -> Availability {
        match self.kind {
            Kind::Cpu => Availability::Available {
                detail: format!(
                    "tract {TRACT_VERSION}, {} on this CPU, up to {} threads",
                    std::env::consts::ARCH,
                    all_cores()
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
        self.check_spec(spec)?;
        let load_err = |reason: String| BackendError::Load {
            backend: spec.to_string(),
            model: model.display().to_string(),
            reason,
        };
        if let Some(why) = super::wrong_format(model) {
            return Err(load_err(why));
        }
        let io = ModelIo::read(model).map_err(load_err)?;
        let threads = match self.kind {
            Kind::Cpu => opts.threads.unwrap_or_else(all_cores),
            Kind::Cuda => 1,
        };

        // §5.3 a: IR conversion = parse + type + optimise at the concrete shapes.
        let t0 = Instant::now();
        let pinned = io.pinned_shapes(opts).map_err(load_err)?;
        // tract cannot be interrupted: the conversion runs on a thread acceval stops waiting
        // for at the load budget (a 100,000-node chain took minutes).
        let limit = opts.load_timeout_s.map_or_else(
            || super::default_load_timeout(model),
            std::time::Duration::from_secs_f64,
        );
        let (kind, path) = (self.kind, model.to_path_buf());
        let (io, pinned, conv) = super::bounded(
            &format!("tract {TRACT_VERSION}"),
            "tract's IR conversion (parse, type and optimise the graph)",
            limit,
            move || {
                let conv = convert(&path, kind, &io, &pinned)?;
                Ok((io, pinned, conv))
            },
        )
        .map_err(load_err)?;
        let convert_time = t0.elapsed();

        // §5.3 b: graph initialisation = the execution plan on the device.
        let t1 = Instant::now();
        let runnable = prepare(self.kind, conv.typed, threads).map_err(load_err)?;
        let state = runnable.spawn().map_err(|e| load_err(format!("{e:#}")))?;
        let init = t1.elapsed();

        let input_types = runnable
            .typed_model()
            .map(|m| {
                m.input_outlets()
                    .iter()
                    .flat_map(|o| o.iter())
                    .filter_map(|o| m.outlet_fact(*o).ok().map(|f| f.datum_type))
                    .collect()
            })
            .unwrap_or_default();
        let placement = placement(self.kind, &io, runnable.as_ref());
        let options = session_options(self.kind, opts, threads, &io, &pinned, &conv.notes);
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
                emulated: None,
                copies: None,
            },
            timings: LoadTimings {
                convert_ms: Some(convert_time.as_secs_f64() * 1e3),
                convert_note: None,
                init_ms: init.as_secs_f64() * 1e3,
            },
            state,
            _runnable: runnable,
            input_types,
            output_names: io.outputs,
            placement,
        }))
    }
}

/// The optimised tract graph the `cpu` backend would run for `model` at `input_shapes`,
/// for tools that look inside it (examples/tract_profile.rs times it node by node).
pub fn cpu_graph(
    model: &Path,
    input_shapes: &[(String, Vec<usize>)],
) -> Result<TypedModel, String> {
    let io = ModelIo::read(model)?;
    let opts = LoadOptions {
        input_shapes: input_shapes.to_vec(),
        ..Default::default()
    };
    let pinned = io.pinned_shapes(&opts)?;
    Ok(convert(model, Kind::Cpu, &io, &pinned)?.typed)
}

impl TractBackend {
    /// Refuses what this backend cannot be asked for: providers, a second CPU, a CUDA
    /// runtime that cannot start.
    fn check_spec(&self, spec: &BackendSpec) -> Result<(), BackendError> {
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
        // tract-cuda always opens device 0 of what CUDA sees; `@N` (N > 0) means GPU N only
        // when main pinned CUDA_VISIBLE_DEVICES to it (util::cuda_pin). A backend built by a
        // library caller without the pin would silently run on GPU 0.
        let n = spec.device.unwrap_or(0);
        if self.kind == Kind::Cuda
            && n != 0
            && crate::util::cuda_pin::pinned().map(|p| p.device) != Some(n as usize)
        {
            return Err(BackendError::NotAvailable {
                backend,
                reason: format!(
                    "cuda@{n}: tract-cuda opens CUDA device 0 of the process, so GPU {n} is used only when CUDA_VISIBLE_DEVICES is pinned to it before CUDA starts (the acceval binary does this for --backend cuda@{n}; a library caller sets CUDA_VISIBLE_DEVICES itself and uses cuda@0)"
                ),
            });
        }
        if self.kind == Kind::Cpu && spec.device.unwrap_or(0) != 0 {
            return Err(BackendError::NotAvailable {
                backend,
                reason: "the cpu backend has one device, @0".into(),
            });
        }
        Ok(())
    }
}

/// Every core this process may run on (the default of `--threads`).
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// One model input as the ONNX file declares it.
struct DeclaredInput {
    name: String,
    elem_type: Option<DataType>,
    /// The declared dims; `None` for a dim that is symbolic, unknown or ≤ 0 (dynamic).
    dims: Option<Vec<Option<usize>>>,
}

/// What acceval reads from the ONNX file before tract parses it.
struct ModelIo {
    inputs: Vec<DeclaredInput>,
    outputs: Vec<String>,
    /// `(label, op_type)` of every node of the main graph.
    nodes: Vec<(String, String)>,
    /// `value_info` entries of the main graph.
    value_info: usize,
}

impl ModelIo {
    fn read(model: &Path) -> Result<ModelIo, String> {
        let onnx = OnnxFile::open(model).map_err(|e| e.to_string())?;
        let g = onnx.graph();
        limits::tract_limits(g, limits::Scope::default())?;
        let init_names: std::collections::HashSet<&str> =
            g.initializer.iter().map(|t| t.name.as_str()).collect();
        let inputs = g
            .input
            .iter()
            .filter(|i| !init_names.contains(i.name.as_str()))
            .map(|i| {
                let t = i.tensor_type();
                DeclaredInput {
                    name: i.name.clone(),
                    elem_type: t.map(|t| DataType(t.elem_type)),
                    dims: t.and_then(|t| t.shape.as_ref()).map(|s| {
                        s.dim
                            .iter()
                            .map(|d| d.dim_value.filter(|v| *v > 0).map(|v| v as usize))
                            .collect()
                    }),
                }
            })
            .collect();
        Ok(ModelIo {
            inputs,
            outputs: g.output.iter().map(|o| o.name.clone()).collect(),
            nodes: g
                .node
                .iter()
                .enumerate()
                .map(|(i, n)| (n.label(i), n.op_type.clone()))
                .collect(),
            value_info: g.value_info.len(),
        })
    }

    /// The concrete shape each input is pinned to before tract analyses the graph: the
    /// caller's (`--shape`, the input files), else the declared dims when all are known.
    /// `None` leaves an input's dynamic dims to tract as symbols.
    fn pinned_shapes(&self, opts: &LoadOptions) -> Result<Vec<Option<Vec<usize>>>, String> {
        self.inputs
            .iter()
            .map(|i| {
                let given = opts.input_shapes.iter().find(|(n, _)| *n == i.name);
                let shape = match (given, &i.dims) {
                    (Some((_, s)), _) => Some(s.clone()),
                    (None, Some(d)) => d.iter().copied().collect::<Option<Vec<usize>>>(),
                    (None, None) => None,
                };
                if shape.is_some() && i.elem_type.and_then(datum).is_none() {
                    return Err(format!(
                        "input '{}' has an element type tract cannot take ({})",
                        i.name,
                        i.elem_type.map_or("none".into(), |t| t.name().to_string())
                    ));
                }
                Ok(shape)
            })
            .collect()
    }
}

/// The typed graph and what was done to get it.
struct Converted {
    typed: TypedModel,
    /// `(option, value)` lines for the session options.
    notes: Vec<(String, String)>,
}

/// Parses `model` with its inputs pinned to `pinned`, types and optimises it.
///
/// The concrete input shapes are the facts. `value_info` (and the outputs' declared shapes)
/// are an exporter's notes, often in symbols of its own (`batch`, `height`) that tract
/// would have to unify with the concrete dims ("Impossible to unify Sym(batch) with
/// Val(1)"), so they are left out and tract infers every shape from the inputs. Only when
/// that analysis fails is the model parsed again with them, as a hint.
fn convert(
    model: &Path,
    kind: Kind,
    io: &ModelIo,
    pinned: &[Option<Vec<usize>>],
) -> Result<Converted, String> {
    let mut notes = Vec::new();
    let first = parse_and_type(model, io, pinned, true);
    let typed = match first {
        Ok(t) => {
            if io.value_info > 0 {
                notes.push((
                    "value_info".to_string(),
                    format!(
                        "{} entries ignored: tract infers every shape from the input shapes",
                        io.value_info
                    ),
                ));
            }
            t
        }
        Err(e) if io.value_info > 0 => match parse_and_type(model, io, pinned, false) {
            Ok(t) => {
                notes.push((
                    "value_info".to_string(),
                    format!(
                        "{} entries used as hints (without them tract's analysis failed: {e})",
                        io.value_info
                    ),
                ));
                t
            }
            Err(_) => return Err(explain(e)),
        },
        Err(e) => return Err(explain(e)),
    };
    let mut typed = typed;
    let recurrent = stateless(&mut typed);
    if recurrent > 0 {
        notes.push((
            "recurrent_state".to_string(),
            format!(
                "{recurrent} recurrent node(s) (LSTM/GRU/RNN/Scan) start every run from the state the graph gives (ONNX semantics); tract would otherwise carry their hidden state over from the previous run"
            ),
        ));
    }
    if kind == Kind::Cpu {
        let exact = exact_output_sigmoids(&mut typed);
        if exact > 0 {
            notes.push((
                "sigmoid".to_string(),
                format!(
                    "{exact} Sigmoid node(s) whose values are model outputs computed as 1/(1+exp(−x)) in FP32; tract's fast Sigmoid (kept everywhere else) bottoms out at 4.5e-7 below x = −14.6, which a probability output shows"
                ),
            ));
        }
    }
    let typed = match kind {
        Kind::Cpu => {
            let (typed, fp16) = widen_fp16(typed).map_err(|e| format!("{e:#}"))?;
            if let Some(note) = fp16 {
                notes.push(("fp16".into(), note));
            }
            typed.into_optimized().and_then(|mut t| {
                let n = softmax_on_last_axis(&mut t)?;
                if n > 0 {
                    notes.push((
                        "softmax".into(),
                        format!(
                            "{n} Softmax node(s) over an inner axis run on a transposed copy with the axis last: tract's strided Softmax costs ~1 µs per element (64 % of yolov8n-line's forward time)"
                        ),
                    ));
                }
                Ok(t)
            })
        }
        Kind::Cuda => Ok(typed),
    }
    .map_err(|e| format!("{e:#}"))?;
    Ok(Converted { typed, notes })
}

/// What tract cannot do, said beside its message: an `If` whose condition is only known at
/// run time has both branches analysed and typed at load.
fn explain(e: String) -> String {
    if e.contains("\" If") || e.contains("IfThenElse") {
        format!(
            "{e} — tract limitation (operator If): the condition depends on a run-time value, so tract analyses and types both branches at load and needs both to be valid at these input shapes with outputs of one shape; ONNX Runtime runs only the branch taken (use --backend ort:cpu, or a model with the branch for your input)"
        )
    } else {
        e
    }
}

/// tract's parse, input facts and typing (decluttered).
fn parse_and_type(
    model: &Path,
    io: &ModelIo,
    pinned: &[Option<Vec<usize>>],
    ignore_value_info: bool,
) -> Result<TypedModel, String> {
    use tract_onnx::prelude::Framework;
    let onnx = tract_onnx::onnx()
        .with_ignore_value_info(ignore_value_info)
        .with_ignore_output_shapes(true);
    // As tract's `model_for_path`, with trailing omitted inputs dropped first.
    let mut proto = onnx
        .proto_model_for_path(model)
        .map_err(|e| format!("{e:#}"))?;
    if let Some(g) = proto.graph.as_mut() {
        drop_trailing_empty_inputs(g);
    }
    let dir = model.parent().and_then(|d| d.to_str());
    let parsed = onnx.parse(&proto, dir).map_err(|e| format!("{e:#}"))?;
    if !parsed.unresolved_inputs.is_empty() {
        return Err(format!(
            "Could not resolve inputs at top-level: {:?}",
            parsed.unresolved_inputs
        ));
    }
    let mut m = parsed.model;
    for (ix, (input, shape)) in io.inputs.iter().zip(pinned).enumerate() {
        let (Some(shape), Some(dt)) = (shape, input.elem_type.and_then(datum)) else {
            continue;
        };
        m.set_input_fact(ix, InferenceFact::dt_shape(dt, shape.as_slice()))
            .map_err(|e| format!("{e:#}"))?;
    }
    m.into_typed()
        .and_then(|t| t.into_decluttered())
        .map_err(|e| format!("{e:#}"))
}

/// Drops the empty names at the end of each node's inputs, in `g` and the graphs its nodes
/// hold. ONNX gives an optional input as an empty name or not at all, the same input either
/// way; tract indexes the list by its length, so a Conv written `[X, W, ""]` (an omitted
/// bias, as exporters write it) panicked inside tract with an index out of range.
fn drop_trailing_empty_inputs(g: &mut tract_onnx::pb::GraphProto) {
    for node in &mut g.node {
        while node.input.last().is_some_and(|i| i.is_empty()) {
            node.input.pop();
        }
        for a in &mut node.attribute {
            if let Some(sub) = a.g.as_mut() {
                drop_trailing_empty_inputs(sub);
            }
            for sub in &mut a.graphs {
                drop_trailing_empty_inputs(sub);
            }
        }
    }
}

/// Makes every recurrent node of `model` (and of the bodies it holds) start each run from
/// its initial-state input, as ONNX defines a run. tract builds ONNX's LSTM/GRU/RNN/Scan
/// as streaming nodes whose hidden state persists from one run to the next, so a second
/// inference with the same inputs would give other outputs. Returns how many it changed.
fn stateless(model: &mut TypedModel) -> usize {
    use tract_onnx::tract_core::ops::{gru_seq::GruSeq, scan::Scan};
    let mut n = 0;
    for node in model.nodes_mut() {
        if let Some(scan) = node.op_as_mut::<Scan>() {
            scan.reset_every_turn = true;
            n += 1 + stateless(&mut scan.body);
        } else if let Some(gru) = node.op_as_mut::<GruSeq>() {
            gru.reset_every_turn = true;
            n += 1;
        }
    }
    n
}

/// Moves the axis of every Softmax that is not over the innermost axis last (a transpose
/// before and after), so tract takes its contiguous-row kernel instead of its strided path,
/// which walks the tensor one row at a time through ndarray views: YOLOv8's DFL head, a
/// Softmax over 16 bins on axis 1 of [4, 16, 8400], took 590 ms of a 930 ms forward pass.
/// Runs on the optimised graph, where no later pass folds the transposes back. Returns how
/// many nodes it changed.
fn softmax_on_last_axis(model: &mut TypedModel) -> TractResult<usize> {
    use tract_onnx::tract_core::internal::TypedModelPatch;
    use tract_onnx::tract_core::ops::change_axes::AxisOp;
    use tract_onnx::tract_core::ops::nn::Softmax;
    let mut n = 0;
    for id in model.eval_order()? {
        let node = model.node(id);
        let Some(sm) = node.op_as::<Softmax>() else {
            continue;
        };
        let fact = model.outlet_fact(node.inputs[0])?;
        let rank = fact.rank();
        let float = fact.datum_type == f32::datum_type() || fact.datum_type == f16::datum_type();
        if sm.axes.len() != 1 || sm.axes[0] + 1 == rank || !float {
            continue;
        }
        let axis = sm.axes[0];
        let last = Softmax {
            axes: tvec![rank - 1],
            ..sm.clone()
        };
        let mut patch = TypedModelPatch::default();
        let x = patch.tap_model(model, node.inputs[0])?;
        let x = patch.wire_node(
            format!("{}.axis-last", node.name),
            AxisOp::Move(axis, rank - 1),
            &[x],
        )?;
        let y = patch.wire_node(format!("{}.last", node.name), last, &x)?;
        let y = patch.wire_node(
            format!("{}.axis-back", node.name),
            AxisOp::Move(rank - 1, axis),
            &y,
        )?;
        patch.shunt_outside(model, OutletId::new(id, 0), y[0])?;
        patch.apply(model)?;
        n += 1;
    }
    Ok(n)
}

/// Sigmoid computed as 1/(1+exp(−x)) (FP32 `exp`), accurate down to the smallest
/// probabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ExactSigmoid;

impl ElementWiseMiniOp for ExactSigmoid {
    fn name(&self) -> String {
        "ExactSigmoid".into()
    }
    fn eval_in_place(&self, t: &mut Tensor, _out_dt: Option<DatumType>) -> TractResult<()> {
        let sig = |x: f32| 1.0 / (1.0 + (-x).exp());
        let dt = t.datum_type();
        let mut plain = t.try_as_plain_ram_mut()?;
        if dt == f32::datum_type() {
            plain
                .as_slice_mut::<f32>()?
                .iter_mut()
                .for_each(|x| *x = sig(*x));
        } else if dt == f16::datum_type() {
            plain
                .as_slice_mut::<f16>()?
                .iter_mut()
                .for_each(|x| *x = f16::from_f32(sig(x.to_f32())));
        } else {
            return Err(anyhow::anyhow!(
                "ExactSigmoid takes FP32 or FP16, not {dt:?}"
            ));
        }
        Ok(())
    }
}

/// Replaces tract's fast Sigmoid by [`ExactSigmoid`] where its values reach a model output
/// through data movement only (reshapes, transposes, slices, concatenations): there a
/// probability map's tiny values are read as they are, and tract's approximation floors them
/// at 4.5e-7 (a text detector's background, e−20 ≈ 2e-9, reads 200× too high). Elsewhere
/// the next operator absorbs that error. Returns how many nodes it replaced.
fn exact_output_sigmoids(model: &mut TypedModel) -> usize {
    use tract_onnx::tract_core::ops::array::{Slice, TypedConcat};
    use tract_onnx::tract_core::ops::change_axes::AxisOp;
    use tract_onnx::tract_core::ops::identity::Identity;
    use tract_onnx::tract_core::ops::nn::Sigmoid;
    let Ok(outputs) = model.output_outlets().map(|o| o.to_vec()) else {
        return 0;
    };
    let mut stack: Vec<usize> = outputs.iter().map(|o| o.node).collect();
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let node = model.node(id);
        let is_sigmoid = node
            .op_as::<ElementWiseOp>()
            .is_some_and(|e| e.0.downcast_ref::<Sigmoid>().is_some());
        if is_sigmoid {
            found.push(id);
        } else if node.op_is::<AxisOp>()
            || node.op_is::<TypedConcat>()
            || node.op_is::<Slice>()
            || node.op_is::<Identity>()
        {
            stack.extend(node.inputs.iter().map(|i| i.node));
        }
    }
    for &id in &found {
        let node = model.node_mut(id);
        let dt = node.op_as::<ElementWiseOp>().and_then(|e| e.1);
        node.op = Box::new(ElementWiseOp(Box::new(ExactSigmoid), dt));
    }
    found.len()
}

/// FP16 storage, FP32 compute where tract has no native FP16 arithmetic for this CPU:
/// the FP16 weights and operators are widened to FP32 at load, as a deployment on this
/// CPU runs an FP16 model (the weights keep their FP16 rounding). Returns the note for
/// the session options when it did.
fn widen_fp16(typed: TypedModel) -> TractResult<(TypedModel, Option<String>)> {
    let f16_dt = f16::datum_type();
    let has_f16 = typed
        .nodes()
        .iter()
        .any(|n| n.outputs.iter().any(|o| o.fact.datum_type == f16_dt));
    if !has_f16 {
        return Ok((typed, None));
    }
    if tract_onnx::prelude::tract_linalg::has_fp16() {
        return Ok((
            typed,
            Some("FP16 compute: tract's native FP16 kernels (this CPU has FP16 arithmetic)".into()),
        ));
    }
    let widened =
        tract_onnx::tract_core::floats::FloatPrecisionTranslator::new(f16_dt, f32::datum_type())
            .transform_into(typed)?;
    Ok((
        widened,
        Some(format!(
            "FP16 storage, FP32 compute: tract {TRACT_VERSION} has no native FP16 arithmetic on {} (it would emulate it in software), so the FP16 weights and operators are widened to FP32 at load, as a deployment on this CPU runs them",
            std::env::consts::ARCH
        )),
    ))
}

/// The execution plan: a `threads`-wide rayon pool for tract-linalg's kernels on the CPU,
/// tract's CUDA runtime on the GPU.
fn prepare(kind: Kind, typed: TypedModel, threads: usize) -> Result<Box<dyn Runnable>, String> {
    match kind {
        Kind::Cpu => {
            let executor = if threads > 1 {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("acceval-tract-{i}"))
                    .build()
                    .map_err(|e| format!("could not start {threads} threads: {e}"))?;
                Some(Executor::MultiThread(Arc::new(pool)))
            } else {
                None
            };
            let options = RunOptions {
                executor,
                ..Default::default()
            };
            Ok(Box::new(
                typed
                    .into_runnable_with_options(&options)
                    .map_err(|e| format!("{e:#}"))?,
            ))
        }
        Kind::Cuda => {
            let rt = tract_onnx::tract_core::runtime::runtime_for_name("cuda")
                .map_err(|e| format!("{e:#}"))?
                .ok_or_else(|| "tract's cuda runtime is not linked in".to_string())?;
            rt.prepare(typed).map_err(|e| format!("{e:#}"))
        }
    }
}

/// Where each node runs: every ONNX node on the CPU, or tract's graph after the CUDA
/// transform.
fn placement(kind: Kind, io: &ModelIo, runnable: &dyn Runnable) -> Placement {
    match kind {
        Kind::Cpu => Placement {
            source: "tract runs every node on the CPU".into(),
            nodes: io
                .nodes
                .iter()
                .map(|(node, op_type)| NodePlacement {
                    node: node.clone(),
                    op_type: op_type.clone(),
                    device: "CPU".into(),
                })
                .collect(),
        },
        Kind::Cuda => Placement {
            source: "tract's graph after the CUDA transform: Cuda*/Gpu* ops run on the GPU".into(),
            nodes: runnable
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
        },
    }
}

/// The session options as recorded in every report.
fn session_options(
    kind: Kind,
    opts: &LoadOptions,
    threads: usize,
    io: &ModelIo,
    pinned: &[Option<Vec<usize>>],
    notes: &[(String, String)],
) -> BTreeMap<String, String> {
    let mut options = BTreeMap::new();
    match kind {
        Kind::Cpu => {
            let how = match opts.threads {
                Some(_) => "--threads".to_string(),
                None => format!("default: all {} cores", all_cores()),
            };
            options.insert(
                "threads".into(),
                format!("{threads} ({how}; tract-linalg multithread-mm, one rayon pool)"),
            );
            options.insert("optimisation".into(), "tract into_optimized (full)".into());
        }
        Kind::Cuda => {
            options.insert(
                "optimisation".into(),
                "tract declutter + cuda transform".into(),
            );
        }
    }
    for (input, shape) in io.inputs.iter().zip(pinned) {
        let v = match shape {
            Some(s) => format!("{s:?}"),
            None => "dynamic (tract symbols)".into(),
        };
        options.insert(format!("input_shape.{}", input.name), v);
    }
    for (k, v) in notes {
        options.insert(k.clone(), v.clone());
    }
    options
}

struct TractSession {
    info: SessionInfo,
    timings: LoadTimings,
    state: Box<dyn State>,
    _runnable: Box<dyn Runnable>,
    /// The element type of each input of the plan (FP16 inputs are FP32 once widened).
    input_types: Vec<DatumType>,
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
        let values = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let v = to_tract(&t.data);
                match self.input_types.get(i) {
                    Some(dt)
                        if *dt != v.datum_type() && dt.is_float() && v.datum_type().is_float() =>
                    {
                        v.cast_to_dt(*dt)
                            .map(|c| c.into_owned().into())
                            .map_err(|e| run_err(format!("input '{}': {e:#}", t.name)))
                    }
                    _ => Ok(v.into()),
                }
            })
            .collect::<Result<TVec<TValue>, _>>()?;
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
