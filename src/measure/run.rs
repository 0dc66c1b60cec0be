//! One model on one backend (`acceval run`): the §5.3 split (IR conversion, graph
//! initialisation, the first inference, steady runs), the outputs, and where each node ran
//! (§6.2 f); or the task pipeline on image files or a load series. Returns reports; prints
//! nothing.

use std::path::{Path, PathBuf};

use super::{Error, Setting};
use crate::backend::{self, BackendSettings, BackendSpec, Placement};
use crate::data::inputs::{describe_output, gather_inputs, input_specs};
use crate::measure::stats::Summary;
use crate::model::InputShape;
use crate::model::tensor::HostTensor;
pub use crate::report::schema::run::{PlacementRecord, RunReport, RunTimings, TaskReport};
use crate::task::detect::DetectParams;
use crate::task::{Task, TaskSpec};
use crate::util::setting::SettingError;

/// What `run_model` needs.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub backend: BackendSettings,
    /// The ONNX model (or a zoo name).
    pub model: PathBuf,
    /// `NAME=FILE` pairs and bare `.npz` archives (see `data::inputs::gather_inputs`).
    pub inputs: Vec<String>,
    pub shapes: Vec<InputShape>,
    pub seed: u64,
    /// Steady runs after the first (cold) inference.
    pub runs: usize,
    /// Record where each node ran (engine profiling; adds overhead).
    pub placement: bool,
}

/// The default number of steady runs.
pub const DEFAULT_RUNS: usize = 10;

/// Placement with the nodes that fell back to the CPU although an accelerator was asked for.
pub fn placement_record(p: Placement, spec: &BackendSpec) -> PlacementRecord {
    let accelerated = crate::backend::describe_spec(spec).reports_cpu_fallback;
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

/// Loads, runs once cold and `runs` times steady; returns the report and the first outputs.
pub fn run_model(s: &RunSettings) -> Result<(RunReport, Vec<HostTensor>), Error> {
    let model = crate::zoo::resolve(&s.model)?;
    let (specs, loaded) = model_inputs(&model, &s.backend, s.placement, &s.shapes)?;
    let (inputs, records) = gather_inputs(&specs, &s.inputs, &s.shapes, s.seed)?;
    let shapes = inputs
        .iter()
        .map(|t| (t.name.clone(), t.data.shape().to_vec()))
        .collect();
    let onnx = loaded.is_none();
    let mut session = match loaded {
        Some(session) => session,
        None => backend::load(
            &model,
            &s.backend.spec,
            &s.backend.load_options(shapes, s.placement),
        )?,
    };
    let cold = session.timed_run(&inputs)?;
    let (outputs, first_ms) = (cold.outputs, cold.forward_ms);
    let mut steady = Vec::with_capacity(s.runs);
    for _ in 0..s.runs {
        steady.push(session.timed_run(&inputs)?.forward_ms);
    }
    let (placement, placement_summary) = if s.placement && !onnx {
        // No ONNX graph to count nodes and MACs against: the engine's record alone.
        (
            Some(placement_record(session.placement()?, &s.backend.spec)),
            None,
        )
    } else if s.placement {
        let p = session.placement()?;
        let a = crate::model::analyse(&model, &s.shapes)?;
        let summary = crate::measure::placement::summarise(&s.backend, &a, Ok(p.clone()));
        (Some(placement_record(p, &s.backend.spec)), Some(summary))
    } else {
        (None, None)
    };
    let report = RunReport {
        schema: "acceval.run/1".into(),
        model: model.display().to_string(),
        session: session.info().clone(),
        timings: RunTimings {
            load: session.timings().clone(),
            first_inference_ms: first_ms,
            steady_ms: Summary::of(&steady),
        },
        inputs: records,
        outputs: outputs.iter().map(describe_output).collect(),
        output_file: None,
        placement,
        placement_summary,
    };
    Ok((report, outputs))
}

/// A model's inputs, and the session when loading was the way to learn them.
type ModelInputs = (
    Vec<crate::data::inputs::InputSpec>,
    Option<Box<dyn backend::Session>>,
);

/// The model's inputs: read from the ONNX file, or, for a model file acceval does not read
/// itself (an Ascend `.om`, a TorchScript `.pt`), declared by the backend that loaded it (the
/// session is then returned, loaded once).
pub(super) fn model_inputs(
    model: &Path,
    backend_settings: &BackendSettings,
    placement: bool,
    shapes: &[InputShape],
) -> Result<ModelInputs, Error> {
    let onnx = model
        .extension()
        .is_none_or(|e| e.eq_ignore_ascii_case("onnx"));
    if onnx {
        let specs = input_specs(model)?;
        let planned = crate::data::inputs::planned_bytes(&specs, shapes);
        backend::budget::check_before_generating(model, planned, shapes).map_err(|reason| {
            backend::BackendError::Load {
                backend: backend_settings.spec.to_string(),
                model: model.display().to_string(),
                reason,
            }
        })?;
        return Ok((specs, None));
    }
    let session = backend::load(
        model,
        &backend_settings.spec,
        &backend_settings.load_options(Vec::new(), placement),
    )?;
    match session.declared_inputs() {
        Some(d) => Ok((
            d.into_iter()
                .map(|i| crate::data::inputs::InputSpec {
                    name: i.name,
                    dtype: i.dtype,
                    loose: i.dims.is_none(),
                    dims: i
                        .dims
                        .unwrap_or_default()
                        .iter()
                        .map(|&n| crate::model::shape::Dim::Known(n as i64))
                        .collect(),
                })
                .collect(),
            Some(session),
        )),
        // The backend read it but cannot say its inputs: the file must be ONNX after all.
        None => Ok((input_specs(model)?, None)),
    }
}

/// What `run_task` needs.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    pub backend: BackendSettings,
    pub model: PathBuf,
    /// The task of a model outside the zoo.
    pub task: Option<Task>,
    /// Image files, or one load-series CSV.
    pub files: Vec<PathBuf>,
    /// Whether `files` is a load series.
    pub series: bool,
    pub top_k: usize,
    pub detect: DetectParams,
}

/// Image arguments with folders expanded to their JPEG/PNG files (sorted).
pub fn image_files(args: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for a in args {
        if a.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(a)
                .map_err(crate::util::Error::read(a))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                        matches!(e.to_ascii_lowercase().as_str(), "jpg" | "jpeg" | "png")
                    })
                })
                .collect();
            if v.is_empty() {
                return Err(Error::NoImages { path: a.clone() });
            }
            v.sort();
            out.extend(v);
        } else {
            out.push(a.clone());
        }
    }
    Ok(out)
}

/// The task and labels of `model`: the zoo's, or `task` for other models.
fn task_of(model: &Path, task: Option<Task>) -> Result<(Task, Vec<String>), Error> {
    let stem = model.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let manifest =
        crate::zoo::Manifest::read(&crate::util::paths::models_dir().join("zoo.toml")).ok();
    let entry = manifest.as_ref().and_then(|m| m.find(stem)).filter(|e| {
        std::fs::read(model).is_ok_and(|b| crate::util::fs::sha256_hex(&b) == e.sha256)
    });
    match (task, entry) {
        (Some(t), e) => Ok((t, e.map(|e| e.labels.clone()).unwrap_or_default())),
        (None, Some(e)) => Ok((e.task, e.labels.clone())),
        (None, None) => Err(SettingError::says(
            Setting::Task,
            format!(
                "is needed: '{}' is not a zoo model; say its task (classification, detection or forecasting)",
                model.display()
            ),
        )
        .into()),
    }
}

/// Runs the task pipeline on every file. A file that fails ends the batch: the report
/// then holds the runs before it (`complete: false`) and the error comes beside it.
pub fn run_task(s: &TaskSettings) -> Result<(TaskReport, Option<crate::task::Error>), Error> {
    let model = crate::zoo::resolve(&s.model)?;
    let specs = input_specs(&model)?;
    let [input] = specs.as_slice() else {
        return Err(Error::NotOneInput {
            inputs: specs.len(),
        });
    };
    let (task, labels) = task_of(&model, s.task)?;
    match (task, s.series) {
        (Task::Forecasting, false) => return Err(Error::WantsSeries),
        (Task::Classification | Task::Detection, true) => {
            return Err(Error::WantsImages {
                task: format!("{task:?}"),
            });
        }
        _ => {}
    }
    let shape: Vec<usize> = input
        .dims
        .iter()
        .map(|d| d.known().map(|v| v as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::DynamicInput {
            input: input.name.clone(),
        })?;
    let spec = TaskSpec {
        task,
        input_name: input.name.clone(),
        input_shape: shape.clone(),
        labels,
        top_k: s.top_k,
        detect: s.detect,
    };
    let mut session = backend::load(
        &model,
        &s.backend.spec,
        &s.backend
            .load_options(vec![(input.name.clone(), shape)], false),
    )?;
    let mut runs = Vec::with_capacity(s.files.len());
    let mut error = None;
    for f in &s.files {
        match crate::task::run(session.as_mut(), &spec, f) {
            Ok(r) => runs.push(r),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let report = TaskReport {
        schema: "acceval.task/1".into(),
        model: model.display().to_string(),
        task,
        session: session.info().clone(),
        load: session.timings().clone(),
        complete: error.is_none(),
        error: error.as_ref().map(|e| format!("{e:#}")),
        runs,
    };
    Ok((report, error))
}
