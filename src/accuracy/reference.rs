//! Reference outputs (§6.2 i): the FP32 model's outputs on the CPU, stored in the ONNX
//! test-data layout (`test_data_set_N/input_K.pb`, `output_K.pb`) with `manifest.toml`,
//! which records how they were made and the SHA-256 of the model, the source inputs and
//! every file, so a reviewer can check that a reference belongs to the model it grades.
//!
//! A reference is computed on one CPU engine and cross-checked on the other (tract vs
//! ONNX Runtime): every output must agree to [`CROSS_CHECK_REL_L2`] relative L2 error, or
//! the reference is refused, naming the output.

use std::path::{Path, PathBuf};

pub use crate::report::schema::accuracy::{
    CrossCheck, FileHash, IoDecl, OutputAgreement, RefManifest, SetRecord,
};
use crate::zoo::Entry;

use super::Error;
use crate::accuracy::metrics;
use crate::backend::{self, BackendSpec, LoadOptions, SessionInfo};
use crate::data::io;
use crate::model::tensor::{HostTensor, TensorData};

pub const MANIFEST: &str = "manifest.toml";
pub const SCHEMA: &str = "acceval.reference/1";
/// The largest relative L2 error (‖a − b‖ / ‖b‖) between the two CPU engines.
pub const CROSS_CHECK_REL_L2: f64 = 1e-4;

/// One input of a reference before it is run: its tensors and where they came from.
#[derive(Debug, Clone)]
pub struct RefInput {
    pub source: String,
    pub source_sha256: Option<String>,
    pub tensors: Vec<HostTensor>,
}

/// What a reference is made of and how.
pub struct Plan<'a> {
    pub model: &'a Path,
    pub name: String,
    pub primary: BackendSpec,
    pub threads: Option<usize>,
    /// Compare against the other CPU engine (refused when they disagree).
    pub cross_check: bool,
    /// Compare against candle instead (acceval's interpreter of the zoo's graphs on candle's
    /// kernels, the one that trains them): the second engine a build without ONNX Runtime
    /// has.
    pub cross_check_candle: bool,
    /// Why not, when `cross_check` is false (recorded in the manifest).
    pub no_cross_check_reason: String,
    pub input_source: String,
    pub preprocessing: String,
    pub inputs: Vec<RefInput>,
}

fn decl(t: &HostTensor) -> IoDecl {
    IoDecl {
        name: t.name.clone(),
        elem_type: t.data.dtype().name().to_string(),
        shape: t.data.shape().to_vec(),
    }
}

/// Runs every input on `spec`; returns the session's description and the outputs.
fn run_all(plan: &Plan, spec: &BackendSpec) -> Result<(SessionInfo, Vec<Vec<HostTensor>>), Error> {
    let first = plan.inputs.first().ok_or(Error::NoInputs)?;
    let opts = LoadOptions {
        input_shapes: first
            .tensors
            .iter()
            .map(|t| (t.name.clone(), t.data.shape().to_vec()))
            .collect(),
        threads: plan.threads,
        ..Default::default()
    };
    let mut session = backend::load(plan.model, spec, &opts)?;
    let mut outs = Vec::with_capacity(plan.inputs.len());
    for input in &plan.inputs {
        let o = session.run(&input.tensors)?;
        outs.push(o);
    }
    Ok((session.info().clone(), outs))
}

/// The other CPU engine, for the cross-check (the backend says which it is).
pub fn other_cpu_engine(spec: &BackendSpec) -> Result<BackendSpec, Error> {
    match crate::backend::describe_spec(spec).cross_check {
        Some(other) => Ok(other
            .parse()
            .expect("a backend's cross-check spec is valid")),
        None => Err(Error::NotCpu {
            spec: spec.to_string(),
        }),
    }
}

/// Whether the other CPU engine of `primary` can be loaded here (ONNX Runtime is optional).
pub fn other_engine_available(primary: &BackendSpec) -> bool {
    other_cpu_engine(primary)
        .ok()
        .and_then(|other| backend::find(&other.backend).ok())
        .is_some_and(|other| other.probe().is_available())
}

/// Every reference output must be finite.
fn check_finite(plan: &Plan, outputs: &[Vec<HostTensor>]) -> Result<(), Error> {
    for (k, outs) in outputs.iter().enumerate() {
        for o in outs {
            let v = o.data.to_f64();
            let nan = v.iter().filter(|x| x.is_nan()).count();
            let inf = v.iter().filter(|x| x.is_infinite()).count();
            if nan + inf > 0 {
                return Err(Error::NotFinite {
                    output: o.name.clone(),
                    input: k,
                    source_name: plan.inputs[k].source.clone(),
                    nan,
                    inf,
                });
            }
        }
    }
    Ok(())
}

/// Runs the other CPU engine on the same inputs; an output that differs by more than
/// [`CROSS_CHECK_REL_L2`] (relative L2) is an error and nothing is written.
fn cross_check(
    plan: &Plan,
    other: &BackendSpec,
    info: &SessionInfo,
    outputs: &[Vec<HostTensor>],
) -> Result<CrossCheck, Error> {
    let (other_info, other_outs) = run_all(plan, other).map_err(|e| Error::CrossCheck {
        other: other.to_string(),
        err: Box::new(e),
    })?;
    compare(
        plan,
        info,
        &other_info.engine,
        other.to_string(),
        outputs,
        &other_outs,
    )
}

/// The engine candle's cross-check names.
pub const CANDLE_ENGINE: &str =
    "candle (acceval's interpreter of the zoo graph on candle's CPU kernels, FP32)";

/// Runs the FP32 graph on candle (the interpreter `train` uses) on the same inputs, for a
/// build without ONNX Runtime: tract and candle share no kernel, so a fault of one shows
/// against the other. Models whose operators the interpreter lacks are an error naming it.
fn cross_check_candle(
    plan: &Plan,
    info: &SessionInfo,
    outputs: &[Vec<HostTensor>],
) -> Result<CrossCheck, Error> {
    use candle_core::{DType, Device, Tensor};
    let wrap = |e: String| Error::CrossCheck {
        other: "candle".into(),
        err: Box::new(Error::Candle(e)),
    };
    let model =
        crate::model::onnx::OnnxFile::open(plan.model).map_err(|e| wrap(format!("{e:#}")))?;
    let mut proto = model.proto.clone();
    proto.graph = Some(model.graph().clone());
    let graph = crate::train::graph::Graph::new(&proto, &Device::Cpu, DType::F32, None)
        .map_err(|e| wrap(format!("loading the graph: {e}")))?;
    let names: Vec<String> = outputs
        .first()
        .map(|o| o.iter().map(|t| t.name.clone()).collect())
        .unwrap_or_default();
    let wanted: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut other_outs = Vec::with_capacity(plan.inputs.len());
    for input in &plan.inputs {
        let mut feed = Vec::new();
        for t in &input.tensors {
            let crate::model::tensor::TensorData::F32(a) = &t.data else {
                return Err(wrap(format!(
                    "input '{}' is {}, the interpreter takes FP32",
                    t.name,
                    t.data.dtype().name()
                )));
            };
            let x = Tensor::from_iter(a.iter().copied(), &Device::Cpu)
                .and_then(|x| x.reshape(a.shape()))
                .map_err(|e| wrap(e.to_string()))?;
            feed.push((t.name.as_str(), x));
        }
        let ys = graph
            .forward(&feed, &wanted)
            .map_err(|e| wrap(format!("running the graph: {e}")))?;
        let mut outs = Vec::with_capacity(ys.len());
        for (name, y) in names.iter().zip(ys) {
            let dims = y.dims().to_vec();
            let v: Vec<f32> = y
                .to_dtype(DType::F32)
                .and_then(|y| y.flatten_all())
                .and_then(|y| y.to_vec1())
                .map_err(|e| wrap(e.to_string()))?;
            let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&dims), v)
                .map_err(|e| wrap(e.to_string()))?;
            outs.push(HostTensor {
                name: name.clone(),
                data: crate::model::tensor::TensorData::F32(a),
            });
        }
        other_outs.push(outs);
    }
    compare(
        plan,
        info,
        CANDLE_ENGINE,
        "candle".into(),
        outputs,
        &other_outs,
    )
}

/// The agreement of two engines' outputs, output by output, within [`CROSS_CHECK_REL_L2`].
fn compare(
    plan: &Plan,
    info: &SessionInfo,
    other_engine: &str,
    other_backend: String,
    outputs: &[Vec<HostTensor>],
    other_outs: &[Vec<HostTensor>],
) -> Result<CrossCheck, Error> {
    let mut agreement: Vec<OutputAgreement> = outputs[0]
        .iter()
        .map(|o| OutputAgreement {
            name: o.name.clone(),
            max_rel_l2_error: 0.0,
            max_abs_error: 0.0,
        })
        .collect();
    for (k, (a, b)) in outputs.iter().zip(other_outs).enumerate() {
        for (j, (x, y)) in a.iter().zip(b).enumerate() {
            let m = metrics::metrics(&y.data, &x.data).map_err(|err| Error::CrossMetric {
                output: x.name.clone(),
                engine: other_engine.to_string(),
                err,
            })?;
            if m.rel_l2_error.is_nan() || m.rel_l2_error > CROSS_CHECK_REL_L2 {
                return Err(Error::Disagree {
                    output: x.name.clone(),
                    input: k,
                    source_name: plan.inputs[k].source.clone(),
                    rel_l2: m.rel_l2_error,
                    engines: format!("{} and {}", info.engine, other_engine),
                    max_abs: m.max_abs_error,
                });
            }
            let g = &mut agreement[j];
            g.max_rel_l2_error = g.max_rel_l2_error.max(m.rel_l2_error);
            g.max_abs_error = g.max_abs_error.max(m.max_abs_error);
        }
    }
    Ok(CrossCheck {
        status: "agreed".into(),
        backend: other_backend,
        engine: other_engine.to_string(),
        tolerance_rel_l2: CROSS_CHECK_REL_L2,
        outputs: agreement,
    })
}

/// Writes the test_data_set_N folders into `tmp`; returns their records.
fn write_sets(
    plan: &Plan,
    outputs: &[Vec<HostTensor>],
    tmp: &Path,
) -> Result<Vec<SetRecord>, Error> {
    let mut sets = Vec::with_capacity(plan.inputs.len());
    for (k, (input, outs)) in plan.inputs.iter().zip(outputs).enumerate() {
        let dir = format!("test_data_set_{k}");
        let d = tmp.join(&dir);
        crate::util::create_dir_all(&d)?;
        let mut files = Vec::new();
        for (prefix, tensors) in [("input", &input.tensors), ("output", outs)] {
            for (j, t) in tensors.iter().enumerate() {
                let file = format!("{prefix}_{j}.pb");
                let bytes = io::write_pb(&d.join(&file), &t.name, &t.data)?;
                files.push(FileHash {
                    file: format!("{dir}/{file}"),
                    sha256: crate::util::fs::sha256_hex(&bytes),
                    bytes: bytes.len() as u64,
                });
            }
        }
        sets.push(SetRecord {
            dir,
            source: input.source.clone(),
            source_sha256: input.source_sha256.clone(),
            files,
        });
    }
    Ok(sets)
}

/// Computes a reference and writes it to `out` (replacing what was there only once the
/// whole reference has been computed, cross-checked and written).
pub fn produce(plan: &Plan, out: &Path) -> Result<RefManifest, Error> {
    let other = other_cpu_engine(&plan.primary)?;
    let (info, outputs) = run_all(plan, &plan.primary)?;
    check_finite(plan, &outputs)?;
    let cross_check = if plan.cross_check {
        cross_check(plan, &other, &info, &outputs)?
    } else if plan.cross_check_candle {
        match cross_check_candle(plan, &info, &outputs) {
            Ok(c) => c,
            // candle could not run the graph: said, not a fault of the reference. A
            // disagreement stays an error.
            Err(Error::CrossCheck { err, .. }) if matches!(*err, Error::Candle(_)) => CrossCheck {
                status: format!(
                    "not done: ONNX Runtime is not installed and candle could not run the graph: {err}"
                ),
                backend: "candle".into(),
                engine: String::new(),
                tolerance_rel_l2: CROSS_CHECK_REL_L2,
                outputs: Vec::new(),
            },
            Err(e) => return Err(e),
        }
    } else {
        CrossCheck {
            status: format!("not done: {}", plan.no_cross_check_reason),
            backend: other.to_string(),
            engine: String::new(),
            tolerance_rel_l2: CROSS_CHECK_REL_L2,
            outputs: Vec::new(),
        }
    };
    // Written beside `out`, then swapped in.
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::util::create_dir_all(parent)?;
    let leaf = out
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "reference".into());
    let tmp = parent.join(format!(".{leaf}.tmp.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    // Staged in `tmp`; a failure part-way (a full disk) removes it, leaving `out` as it was.
    let staged = (|| -> Result<RefManifest, Error> {
        let sets = write_sets(plan, &outputs, &tmp)?;
        let model_bytes = crate::util::read(plan.model)?;
        let manifest = RefManifest {
            schema: SCHEMA.into(),
            model: plan.name.clone(),
            model_file: plan
                .model
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            model_sha256: crate::util::fs::sha256_hex(&model_bytes),
            backend: info.backend.clone(),
            engine: info.engine.clone(),
            options: info.options.clone(),
            created_utc: humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string(),
            acceval_version: env!("CARGO_PKG_VERSION").into(),
            input_source: plan.input_source.clone(),
            preprocessing: plan.preprocessing.clone(),
            inputs: plan.inputs[0].tensors.iter().map(decl).collect(),
            outputs: outputs[0].iter().map(decl).collect(),
            cross_check,
            sets,
        };
        let text = format!(
            "# Reference outputs written by `acceval reference`; checked by `acceval accuracy`.\n# Do not edit: every file's SHA-256 is verified.\n\n{}",
            toml::to_string(&manifest).map_err(Error::ManifestText)?
        );
        crate::util::fs::write_file(&tmp.join(MANIFEST), text.as_bytes())?;
        Ok(manifest)
    })();
    let manifest = match staged {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    let old = parent.join(format!(".{leaf}.old.{}", std::process::id()));
    if out.exists() {
        std::fs::rename(out, &old).map_err(|err| Error::Replace {
            path: out.to_path_buf(),
            err,
        })?;
    }
    if let Err(e) = std::fs::rename(&tmp, out) {
        // Put the previous reference back rather than leave none.
        let _ = std::fs::rename(&old, out);
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(crate::util::Error::write(out)(e).into());
    }
    let _ = std::fs::remove_dir_all(&old);
    Ok(manifest)
}

/// Why a reference cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RefError {
    #[error(
        "'{0}' is not a reference: it has no manifest.toml and no test_data_set_N folder (make one with `acceval reference --model FP32_MODEL`)"
    )]
    NotAReference(PathBuf),
    #[error("'{path}' is not a valid reference manifest: {reason}")]
    Manifest { path: PathBuf, reason: String },
    #[error(
        "'{path}' is truncated or altered: SHA-256 {actual} ({bytes} bytes), but the manifest records {expected} ({expected_bytes} bytes); recompute the reference with `acceval reference`"
    )]
    Hash {
        path: PathBuf,
        actual: String,
        bytes: u64,
        expected: String,
        expected_bytes: u64,
    },
    #[error("'{path}' is missing: {what}")]
    Missing { path: PathBuf, what: String },
    #[error(transparent)]
    Io(#[from] io::IoError),
}

/// The provenance file of a reference folder computed outside acceval.
pub const PROVENANCE: &str = "provenance.toml";

/// A reference on disk.
#[derive(Debug, Clone)]
pub struct Reference {
    pub dir: PathBuf,
    pub manifest: Option<RefManifest>,
    /// `provenance.toml` of a folder without a manifest (computed outside acceval).
    pub provenance: Option<crate::report::schema::accuracy::Provenance>,
    /// The `test_data_set_N` folders, in order.
    pub sets: Vec<PathBuf>,
}

/// The tensors of one `test_data_set_N`.
#[derive(Debug, Clone)]
pub struct RefSet {
    pub inputs: Vec<HostTensor>,
    pub outputs: Vec<HostTensor>,
}

impl Reference {
    /// Opens `dir`: with a manifest (acceval's references) or without one (an ONNX
    /// test-data folder, e.g. from the ONNX model zoo).
    pub fn open(dir: &Path) -> Result<Reference, RefError> {
        let mpath = dir.join(MANIFEST);
        if mpath.is_file() {
            let text = std::fs::read_to_string(&mpath).map_err(|e| RefError::Manifest {
                path: mpath.clone(),
                reason: e.to_string(),
            })?;
            let m: RefManifest = toml::from_str(&text).map_err(|e| RefError::Manifest {
                path: mpath.clone(),
                reason: e.to_string(),
            })?;
            if m.schema != SCHEMA {
                return Err(RefError::Manifest {
                    path: mpath,
                    reason: format!("schema '{}', expected '{SCHEMA}'", m.schema),
                });
            }
            let sets = m.sets.iter().map(|s| dir.join(&s.dir)).collect();
            return Ok(Reference {
                dir: dir.to_path_buf(),
                manifest: Some(m),
                provenance: None,
                sets,
            });
        }
        let mut sets: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
            .map_err(|_| RefError::NotAReference(dir.to_path_buf()))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let k = n.strip_prefix("test_data_set_")?.parse().ok()?;
                e.path().is_dir().then(|| (k, e.path()))
            })
            .collect();
        if sets.is_empty() {
            return Err(RefError::NotAReference(dir.to_path_buf()));
        }
        sets.sort();
        let ppath = dir.join(PROVENANCE);
        let provenance = if ppath.is_file() {
            let text = std::fs::read_to_string(&ppath).map_err(|e| RefError::Manifest {
                path: ppath.clone(),
                reason: e.to_string(),
            })?;
            let p: crate::report::schema::accuracy::Provenance = toml::from_str(&text)
                .map_err(|e| RefError::Manifest {
                    path: ppath.clone(),
                    reason: format!(
                        "{e}(provenance.toml takes engine = \"NAME VERSION\" and, optionally, device, produced_by, created_utc, model_sha256)"
                    ),
                })?;
            if p.engine.trim().is_empty() {
                return Err(RefError::Manifest {
                    path: ppath,
                    reason: "engine is empty: name the engine and its version that computed the outputs, e.g. engine = \"onnxruntime 1.32.0\"".into(),
                });
            }
            Some(p)
        } else {
            None
        };
        Ok(Reference {
            dir: dir.to_path_buf(),
            manifest: None,
            provenance,
            sets: sets.into_iter().map(|(_, p)| p).collect(),
        })
    }

    /// Reads a file, checking its hash against the manifest when there is one.
    fn read_checked(&self, path: &Path) -> Result<(String, TensorData), RefError> {
        if let Some(m) = &self.manifest {
            let rel = path
                .strip_prefix(&self.dir)
                .unwrap_or(path)
                .to_string_lossy()
                .replace('\\', "/");
            if let Some(h) = m.sets.iter().flat_map(|s| &s.files).find(|f| f.file == rel) {
                let bytes = std::fs::read(path).map_err(|_| RefError::Missing {
                    path: path.to_path_buf(),
                    what: "the manifest lists it".into(),
                })?;
                let actual = crate::util::fs::sha256_hex(&bytes);
                if actual != h.sha256 {
                    return Err(RefError::Hash {
                        path: path.to_path_buf(),
                        actual,
                        bytes: bytes.len() as u64,
                        expected: h.sha256.clone(),
                        expected_bytes: h.bytes,
                    });
                }
            }
        }
        Ok(io::read_pb(path)?)
    }

    /// Reads set `k`: `n_inputs` inputs and `n_outputs` outputs (every file must exist).
    pub fn load_set(
        &self,
        k: usize,
        n_inputs: usize,
        n_outputs: usize,
    ) -> Result<RefSet, RefError> {
        let dir = &self.sets[k];
        let read = |prefix: &str, n: usize| -> Result<Vec<HostTensor>, RefError> {
            (0..n)
                .map(|j| {
                    let p = dir.join(format!("{prefix}_{j}.pb"));
                    if !p.is_file() {
                        return Err(RefError::Missing {
                            path: p,
                            what: format!(
                                "the model has {n} {prefix}s, so the reference needs {prefix}_0.pb..{prefix}_{}.pb",
                                n - 1
                            ),
                        });
                    }
                    let (name, data) = self.read_checked(&p)?;
                    Ok(HostTensor { name, data })
                })
                .collect()
        };
        Ok(RefSet {
            inputs: read("input", n_inputs)?,
            outputs: read("output", n_outputs)?,
        })
    }
}

/// The plan for a zoo model's reference: its FP32 file on its whole input set.
pub fn zoo_plan<'a>(
    entry: &Entry,
    fp32_model: &'a Path,
    primary: BackendSpec,
    threads: Option<usize>,
    cross_check: bool,
) -> Result<Plan<'a>, Error> {
    let inputs = crate::zoo::input_set_tensors(entry)?
        .into_iter()
        .map(|p| RefInput {
            source: p.label,
            source_sha256: Some(p.file_sha256),
            tensors: vec![HostTensor {
                name: entry.input.to_string(),
                data: TensorData::F32(p.tensor),
            }],
        })
        .collect();
    Ok(Plan {
        model: fp32_model,
        name: entry.name.to_string(),
        primary,
        threads,
        cross_check,
        cross_check_candle: false,
        no_cross_check_reason: "not asked for".into(),
        input_source: format!(
            "input set '{}' (inputs/{}/manifest.toml; `acceval inputs build {}` writes the files)",
            entry.input_set, entry.input_set, entry.input_set
        ),
        preprocessing: crate::task::preprocessing_text(entry.task).to_string(),
        inputs,
    })
}
