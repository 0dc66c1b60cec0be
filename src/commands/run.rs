//! `acceval run`: one model on one backend. Inputs come from `.npy`/`.npz` files or are
//! generated from a seed; they are checked against the model before anything loads.
//! Reports the §5.3 split (IR conversion, graph initialisation, first inference, steady
//! runs), the outputs, and with `--placement` where each node ran (§6.2 f).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use serde::Serialize;

use crate::Outcome;
use crate::accuracy::io;
use crate::backend::{self, BackendSpec, LoadOptions, LoadTimings, Placement, SessionInfo};
use crate::cli::{BackendArgs, RunArgs};
use crate::measure::stats::Summary;
use crate::model::InputShape;
use crate::model::onnx::{DataType, OnnxFile};
use crate::model::shape::Dim;
use crate::model::tensor::{HostTensor, SUPPORTED_IO_TYPES, TensorData};

/// One model input as the model declares it.
#[derive(Debug, Clone)]
pub struct InputSpec {
    pub name: String,
    pub dtype: DataType,
    /// Declared dims (`Dim::Sym` for dynamic ones).
    pub dims: Vec<Dim>,
}

/// The real inputs of a model (graph inputs that are not initializers), in order.
pub fn input_specs(model: &Path) -> anyhow::Result<Vec<InputSpec>> {
    let f = OnnxFile::open(model)?;
    let g = f.graph();
    let init: std::collections::HashSet<&str> =
        g.initializer.iter().map(|t| t.name.as_str()).collect();
    Ok(g.input
        .iter()
        .filter(|i| !init.contains(i.name.as_str()))
        .map(value_spec)
        .collect())
}

/// The outputs of a model, in order.
pub fn output_specs(model: &Path) -> anyhow::Result<Vec<InputSpec>> {
    let f = OnnxFile::open(model)?;
    Ok(f.graph().output.iter().map(value_spec).collect())
}

fn value_spec(i: &crate::model::onnx::ValueInfoProto) -> InputSpec {
    let t = i.tensor_type();
    InputSpec {
        name: i.name.clone(),
        dtype: DataType(t.map(|t| t.elem_type).unwrap_or(0)),
        dims: t
            .and_then(|t| t.shape.as_ref())
            .map(|s| {
                s.dim
                    .iter()
                    .map(|d| match (&d.dim_value, &d.dim_param) {
                        (Some(v), _) => Dim::Known(*v),
                        (None, Some(p)) => Dim::Sym(p.clone()),
                        _ => Dim::Sym("?".into()),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn shape_text(s: &[usize]) -> String {
    if s.is_empty() {
        "scalar".into()
    } else {
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("x")
    }
}

fn dims_text(d: &[Dim]) -> String {
    crate::model::shape::shape_str(d)
}

/// Checks a given tensor against the model's declaration of input `spec`.
pub fn check_input(spec: &InputSpec, data: &TensorData, source: &str) -> anyhow::Result<()> {
    if data.dtype() != spec.dtype {
        bail!(
            "input '{}': the model expects {} {}, {} holds {} {}; convert the array (numpy: arr.astype(...))",
            spec.name,
            spec.dtype.name(),
            dims_text(&spec.dims),
            source,
            data.dtype().name(),
            shape_text(data.shape())
        );
    }
    let shape = data.shape();
    let ok = shape.len() == spec.dims.len()
        && shape
            .iter()
            .zip(&spec.dims)
            .all(|(&g, d)| d.known().is_none_or(|k| k as usize == g));
    if !ok {
        bail!(
            "input '{}': the model expects shape {}, {} has {}",
            spec.name,
            dims_text(&spec.dims),
            source,
            shape_text(shape)
        );
    }
    Ok(())
}

/// Where an input came from.
#[derive(Debug, Clone, Serialize)]
pub struct InputRecord {
    pub name: String,
    pub elem_type: &'static str,
    pub shape: Vec<usize>,
    pub source: String,
}

/// Resolves every model input: from `--input` files, or generated from `seed` at the
/// declared (or `--shape`) shape.
pub fn gather_inputs(
    specs: &[InputSpec],
    files: &[String],
    shapes: &[InputShape],
    seed: u64,
) -> anyhow::Result<(Vec<HostTensor>, Vec<InputRecord>)> {
    // `name=path` pairs, and bare `.npz` archives read by input name.
    let mut named: Vec<(String, PathBuf)> = Vec::new();
    let mut archives: Vec<PathBuf> = Vec::new();
    for f in files {
        match f.split_once('=') {
            Some((n, p)) => named.push((n.to_string(), PathBuf::from(p))),
            None if f.ends_with(".npz") => archives.push(PathBuf::from(f)),
            None => bail!(
                "--input '{f}': write NAME=FILE.npy (or NAME=FILE.npz), or give an .npz whose arrays are named like the inputs"
            ),
        }
    }
    for (n, _) in &named {
        if !specs.iter().any(|s| &s.name == n) {
            bail!(
                "--input '{n}=...': the model has no input '{n}'; its inputs are {}",
                specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    for s in shapes {
        if !specs.iter().any(|sp| sp.name == s.name) {
            bail!(
                "--shape '{}': the model has no input of that name; its inputs are {}",
                s.name,
                specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let mut tensors = Vec::with_capacity(specs.len());
    let mut records = Vec::with_capacity(specs.len());
    for (k, spec) in specs.iter().enumerate() {
        let (data, source) = if let Some((_, p)) = named.iter().find(|(n, _)| n == &spec.name) {
            let data = match p.extension().and_then(|e| e.to_str()) {
                Some("npz") => io::read_npz(p, &spec.name)?,
                Some("pb") => io::read_pb(p)?.1,
                _ => io::read_npy(p)?,
            };
            (data, format!("file {}", p.display()))
        } else if let Some(p) = archives
            .iter()
            .find(|p| io::npz_names(p).is_ok_and(|n| n.contains(&spec.name)))
        {
            (
                io::read_npz(p, &spec.name)?,
                format!("file {} [{}]", p.display(), spec.name),
            )
        } else {
            let dims: Vec<usize> = match shapes.iter().find(|s| s.name == spec.name) {
                Some(s) => s.dims.iter().map(|&d| d as usize).collect(),
                None => match spec
                    .dims
                    .iter()
                    .map(|d| d.known())
                    .collect::<Option<Vec<_>>>()
                {
                    Some(d) => d.iter().map(|&v| v as usize).collect(),
                    None => bail!(
                        "input '{}' has dynamic dims {}: pass --shape {}:<dims> (e.g. 1x3x640x640) or --input {}=FILE.npy",
                        spec.name,
                        dims_text(&spec.dims),
                        spec.name,
                        spec.name
                    ),
                },
            };
            let s = seed.wrapping_add(k as u64);
            let data = TensorData::seeded(spec.dtype, &dims, s).ok_or_else(|| {
                anyhow::anyhow!(
                    "input '{}' is {}; acceval can generate {SUPPORTED_IO_TYPES}: pass --input {}=FILE.npy",
                    spec.name,
                    spec.dtype.name(),
                    spec.name
                )
            })?;
            let range = if spec.dtype.is_float() {
                "uniform [0, 1)"
            } else if spec.dtype == DataType::BOOL {
                "fair booleans"
            } else {
                "integers in [0, 10)"
            };
            (data, format!("generated: seed {s}, {range}"))
        };
        check_input(spec, &data, &source)?;
        records.push(InputRecord {
            name: spec.name.clone(),
            elem_type: data.dtype().name(),
            shape: data.shape().to_vec(),
            source,
        });
        tensors.push(HostTensor {
            name: spec.name.clone(),
            data,
        });
    }
    Ok((tensors, records))
}

/// One output, summarised.
#[derive(Debug, Clone, Serialize)]
pub struct OutputRecord {
    pub name: String,
    pub elem_type: &'static str,
    pub shape: Vec<usize>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    pub nan_count: usize,
    pub inf_count: usize,
}

pub fn describe_output(t: &HostTensor) -> OutputRecord {
    let v = t.data.to_f64();
    let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    OutputRecord {
        name: t.name.clone(),
        elem_type: t.data.dtype().name(),
        shape: t.data.shape().to_vec(),
        min: finite.iter().copied().reduce(f64::min),
        max: finite.iter().copied().reduce(f64::max),
        mean: (!finite.is_empty()).then(|| finite.iter().sum::<f64>() / finite.len() as f64),
        nan_count: v.iter().filter(|x| x.is_nan()).count(),
        inf_count: v.iter().filter(|x| x.is_infinite()).count(),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunTimings {
    #[serde(flatten)]
    pub load: LoadTimings,
    /// The first inference after initialisation (cold), ms.
    pub first_inference_ms: f64,
    /// The steady runs after it, ms per inference (host wall clock, synchronised).
    pub steady_ms: Option<Summary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlacementRecord {
    pub source: String,
    pub nodes_by_device: std::collections::BTreeMap<String, usize>,
    /// Nodes that ran on the CPU although an accelerator was asked for.
    pub cpu_fallback: Vec<String>,
    pub nodes: Vec<backend::NodePlacement>,
}

/// What `acceval run` reports (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub schema: &'static str,
    pub model: String,
    pub session: SessionInfo,
    pub timings: RunTimings,
    pub inputs: Vec<InputRecord>,
    pub outputs: Vec<OutputRecord>,
    pub output_file: Option<String>,
    pub placement: Option<PlacementRecord>,
}

pub fn load_options(
    b: &BackendArgs,
    input_shapes: Vec<(String, Vec<usize>)>,
    placement: bool,
) -> anyhow::Result<LoadOptions> {
    let mut ep_options = Vec::new();
    for o in &b.ep_option {
        let Some((k, v)) = o.split_once('=') else {
            bail!(
                "--ep-option '{o}' must be KEY=VALUE, e.g. --ep-option cudnn_conv_algo_search=DEFAULT"
            );
        };
        ep_options.push((k.to_string(), v.to_string()));
    }
    Ok(LoadOptions {
        input_shapes,
        threads: b.threads,
        graph_opt: b.graph_opt,
        ep_options,
        placement,
    })
}

pub fn placement_record(p: Placement, spec: &BackendSpec) -> PlacementRecord {
    let accelerated = match spec.backend.as_str() {
        "cpu" => false,
        "ort" => spec.provider.as_deref().is_some_and(|p| p != "cpu"),
        _ => true,
    };
    PlacementRecord {
        source: p.source.clone(),
        nodes_by_device: p.by_device(),
        cpu_fallback: if accelerated {
            p.nodes
                .iter()
                .filter(|n| n.device == "CPU")
                .map(|n| format!("{} ({})", n.node, n.op_type))
                .collect()
        } else {
            Vec::new()
        },
        nodes: p.nodes,
    }
}

/// What `--inputs PATH` holds.
pub enum InputsPath {
    /// Images: run the task pipeline on them.
    Images,
    /// `NAME=FILE` pairs for `gather_inputs`.
    Files(Vec<String>),
}

/// Interprets `--inputs PATH`: an `.npz` archive; a folder of images; an ONNX
/// `test_data_set` folder (or a test folder holding `test_data_set_0`); a folder of
/// `NAME.npy` files named like the model's inputs.
pub fn inputs_path(path: &Path, specs: &[InputSpec]) -> anyhow::Result<InputsPath> {
    if path.is_file() {
        return if path.extension().is_some_and(|e| e == "npz") {
            Ok(InputsPath::Files(vec![path.display().to_string()]))
        } else {
            bail!(
                "--inputs '{}': give a folder or an .npz archive",
                path.display()
            )
        };
    }
    if !path.is_dir() {
        bail!("--inputs '{}' does not exist", path.display());
    }
    let has = |ext: &[&str]| {
        std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .any(|e| {
                e.path()
                    .extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| ext.contains(&x.to_ascii_lowercase().as_str()))
            })
    };
    let set = if path.join("test_data_set_0").is_dir() {
        Some(path.join("test_data_set_0"))
    } else if path.join("input_0.pb").is_file() {
        Some(path.to_path_buf())
    } else {
        None
    };
    if let Some(set) = set {
        // ONNX's convention: input_K.pb is the model's K-th input.
        return Ok(InputsPath::Files(
            specs
                .iter()
                .enumerate()
                .map(|(k, s)| format!("{}={}", s.name, set.join(format!("input_{k}.pb")).display()))
                .collect(),
        ));
    }
    if has(&["jpg", "jpeg", "png"]) {
        return Ok(InputsPath::Images);
    }
    let npy: Vec<String> = specs
        .iter()
        .filter_map(|s| {
            let f = path.join(format!("{}.npy", s.name));
            f.is_file().then(|| format!("{}={}", s.name, f.display()))
        })
        .collect();
    if npy.is_empty() {
        bail!(
            "--inputs '{}' holds no images, no test_data_set and no .npy file named after an input ({})",
            path.display(),
            specs
                .iter()
                .map(|s| format!("{}.npy", s.name))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(InputsPath::Files(npy))
}

pub fn run(mut args: RunArgs) -> anyhow::Result<Outcome> {
    let model = crate::zoo::resolve(&args.model)?;
    let specs = input_specs(&model)?;
    if let Some(p) = args.inputs_path.clone() {
        match inputs_path(&p, &specs)? {
            InputsPath::Images => args.images.push(p),
            InputsPath::Files(f) => args.inputs.extend(f),
        }
    }
    if !args.images.is_empty() || args.series.is_some() {
        return run_task(&args, &model);
    }
    let spec = &args.backend.backend;
    let (inputs, records) = gather_inputs(&specs, &args.inputs, &args.shapes, args.seed)?;
    let shapes = inputs
        .iter()
        .map(|t| (t.name.clone(), t.data.shape().to_vec()))
        .collect();
    let opts = load_options(&args.backend, shapes, args.placement)?;
    let mut session = backend::load(&model, spec, &opts)?;

    let t = Instant::now();
    let outputs = session.run(&inputs)?;
    session.synchronize()?;
    let first = t.elapsed();
    let mut steady = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        let t = Instant::now();
        let out = session.run(&inputs)?;
        session.synchronize()?;
        steady.push(t.elapsed().as_secs_f64() * 1e3);
        drop(out);
    }
    let placement = if args.placement {
        Some(placement_record(session.placement()?, spec))
    } else {
        None
    };
    if let Some(path) = &args.output {
        io::write_npz(path, &outputs).with_context(|| "writing the outputs (--output)")?;
    }
    let report = RunReport {
        schema: "acceval.run/1",
        model: model.display().to_string(),
        session: session.info().clone(),
        timings: RunTimings {
            load: session.timings().clone(),
            first_inference_ms: first.as_secs_f64() * 1e3,
            steady_ms: Summary::of(&steady),
        },
        inputs: records,
        outputs: outputs.iter().map(describe_output).collect(),
        output_file: args.output.as_ref().map(|p| p.display().to_string()),
        placement,
    };
    for o in &report.outputs {
        if o.nan_count > 0 || o.inf_count > 0 {
            eprintln!(
                "acceval: warning: output '{}' has {} NaN and {} infinite values",
                o.name, o.nan_count, o.inf_count
            );
        }
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        use std::io::Write;
        writeln!(out)?;
    } else {
        crate::report::run::write_text(&mut out, &report)?;
    }
    Ok(Outcome::Ok)
}

/// What `acceval run --image/--series` reports.
#[derive(Debug, Clone, Serialize)]
pub struct TaskReport {
    pub schema: &'static str,
    pub model: String,
    pub task: crate::zoo::Task,
    pub session: SessionInfo,
    pub load: LoadTimings,
    /// False when a file of the batch failed: `runs` then holds the ones before it.
    pub complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub runs: Vec<crate::task::TaskRun>,
}

/// `--image` arguments with folders expanded to their JPEG/PNG files (sorted).
fn image_files(args: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for a in args {
        if a.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(a)
                .map_err(|e| anyhow::anyhow!("cannot read folder '{}': {e}", a.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                        matches!(e.to_ascii_lowercase().as_str(), "jpg" | "jpeg" | "png")
                    })
                })
                .collect();
            if v.is_empty() {
                bail!("folder '{}' holds no .jpg/.jpeg/.png image", a.display());
            }
            v.sort();
            out.extend(v);
        } else {
            out.push(a.clone());
        }
    }
    Ok(out)
}

fn run_task(args: &RunArgs, model: &Path) -> anyhow::Result<Outcome> {
    use crate::zoo::{self, Task};
    let specs = input_specs(model)?;
    let [input] = specs.as_slice() else {
        bail!(
            "task pipelines take models with one input; this one has {}",
            specs.len()
        );
    };
    // The zoo knows its models' task and labels; other models name their task.
    let stem = model.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let manifest = zoo::Manifest::read(&crate::util::paths::models_dir().join("zoo.toml")).ok();
    let entry = manifest.as_ref().and_then(|m| m.find(stem)).filter(|e| {
        std::fs::read(model).is_ok_and(|b| crate::util::fs::sha256_hex(&b) == e.sha256)
    });
    let task = match (args.task, entry) {
        (Some(t), _) => t,
        (None, Some(e)) => e.task,
        (None, None) => bail!(
            "'{}' is not a zoo model: pass --task classification|detection|forecasting",
            model.display()
        ),
    };
    match (task, args.series.is_some()) {
        (Task::Forecasting, false) => {
            bail!("a forecasting model takes --series FILE.csv, not --image")
        }
        (Task::Classification | Task::Detection, true) => {
            bail!("a {task:?} model takes --image FILE, not --series")
        }
        _ => {}
    }
    let shape: Vec<usize> = input
        .dims
        .iter()
        .map(|d| d.known().map(|v| v as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            anyhow::anyhow!(
                "input '{}' has dynamic dims; task pipelines need a static input shape",
                input.name
            )
        })?;
    let spec = crate::task::TaskSpec {
        task,
        input_name: input.name.clone(),
        input_shape: shape.clone(),
        labels: entry.map(|e| e.labels.clone()).unwrap_or_default(),
        top_k: args.top_k,
        detect: args.detect.params(),
    };
    let opts = load_options(&args.backend, vec![(input.name.clone(), shape)], false)?;
    let mut session = backend::load(model, &args.backend.backend, &opts)?;
    let files: Vec<PathBuf> = match &args.series {
        Some(s) => vec![s.clone()],
        None => image_files(&args.images)?,
    };
    let mut runs = Vec::with_capacity(files.len());
    let mut error = None;
    for f in &files {
        match crate::task::run(session.as_mut(), &spec, f) {
            Ok(r) => runs.push(r),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let report = TaskReport {
        schema: "acceval.task/1",
        model: model.display().to_string(),
        task,
        session: session.info().clone(),
        load: session.timings().clone(),
        complete: error.is_none(),
        error: error.as_ref().map(|e| format!("{e:#}")),
        runs,
    };
    // What was measured is kept, marked incomplete, before the error is reported.
    if let Some(path) = &args.output {
        let bytes = serde_json::to_vec_pretty(&report)?;
        crate::util::fs::write_atomic(path, &bytes)
            .map_err(|e| anyhow::anyhow!("cannot write '{}': {e}", path.display()))?;
    }
    if let Some(e) = error {
        return Err(e.context(format!(
            "{} of {} files done{}",
            report.runs.len(),
            files.len(),
            args.output
                .as_ref()
                .map(|p| format!(
                    "; the partial report (complete: false) is in {}",
                    p.display()
                ))
                .unwrap_or_default()
        )));
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        use std::io::Write;
        writeln!(out)?;
    } else {
        crate::report::run::write_task(&mut out, &report)?;
    }
    Ok(Outcome::Ok)
}
