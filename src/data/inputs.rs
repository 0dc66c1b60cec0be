//! The inputs of a model run: the inputs a model declares, given tensor files matched to them
//! (`NAME=FILE.npy|.npz|.pb`, an `.npz` archive, an ONNX `test_data_set` folder, a folder of
//! `NAME.npy`), and seeded inputs where none is given. Every given tensor is checked against
//! the model's declaration before anything loads.

use std::path::{Path, PathBuf};

use super::{Error, Setting, io};
use crate::model::InputShape;
use crate::model::onnx::{DataType, OnnxFile};
use crate::model::shape::Dim;
use crate::model::tensor::{HostTensor, TensorData};
pub use crate::report::schema::run::{InputRecord, OutputRecord};
use crate::util::setting::SettingError;

/// One model input as the model declares it.
#[derive(Debug, Clone)]
pub struct InputSpec {
    pub name: String,
    pub dtype: DataType,
    /// Declared dims (`Dim::Sym` for dynamic ones).
    pub dims: Vec<Dim>,
    /// The model declares neither type nor shape (TorchScript): any given tensor is taken,
    /// and a generated one is `dtype` at the shape given with `--shape`.
    pub loose: bool,
}

/// The bytes of the inputs acceval would generate for `specs` at `shapes` (else the declared
/// dims; an input of unknown dims counts 0), saturating: in all, and of the largest.
pub fn planned_bytes(specs: &[InputSpec], shapes: &[InputShape]) -> (u64, u64) {
    specs
        .iter()
        .map(|spec| {
            let dims: Option<Vec<u64>> = match shapes.iter().find(|s| s.name == spec.name) {
                Some(s) => s.dims.iter().map(|&d| u64::try_from(d).ok()).collect(),
                None => spec
                    .dims
                    .iter()
                    .map(|d| d.known().and_then(|v| u64::try_from(v).ok()))
                    .collect(),
            };
            let bytes = spec.dtype.bits().unwrap_or(32).div_ceil(8);
            dims.map_or(0, |d| d.iter().fold(bytes, |a, &x| a.saturating_mul(x)))
        })
        .fold((0u64, 0u64), |(t, l), b| (t.saturating_add(b), l.max(b)))
}

/// The real inputs of a model (graph inputs that are not initializers), in order.
pub fn input_specs(model: &Path) -> Result<Vec<InputSpec>, Error> {
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
pub fn output_specs(model: &Path) -> Result<Vec<InputSpec>, Error> {
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
                        // A declared dim <= 0 (Paddle's -1) is dynamic, as ONNX Runtime reads it.
                        (Some(v), _) if *v > 0 => Dim::Known(*v),
                        (Some(v), _) => Dim::Sym(v.to_string()),
                        (None, Some(p)) => Dim::Sym(p.clone()),
                        _ => Dim::Sym("?".into()),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        loose: false,
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
pub fn check_input(spec: &InputSpec, data: &TensorData, source: &str) -> Result<(), Error> {
    if spec.loose {
        return Ok(());
    }
    if data.dtype() != spec.dtype {
        return Err(Error::WrongType {
            input: spec.name.clone(),
            expected: format!("{} {}", spec.dtype.name(), dims_text(&spec.dims)),
            given_by: source.to_string(),
            got: format!("{} {}", data.dtype().name(), shape_text(data.shape())),
        });
    }
    let shape = data.shape();
    let ok = shape.len() == spec.dims.len()
        && shape
            .iter()
            .zip(&spec.dims)
            .all(|(&g, d)| d.known().is_none_or(|k| k as usize == g));
    if !ok {
        return Err(Error::WrongShape {
            input: spec.name.clone(),
            expected: dims_text(&spec.dims),
            given_by: source.to_string(),
            got: shape_text(shape),
        });
    }
    Ok(())
}

/// Resolves every model input: from the given files, or generated from `seed` at the
/// declared (or given) shape.
pub fn gather_inputs(
    specs: &[InputSpec],
    files: &[String],
    shapes: &[InputShape],
    seed: u64,
) -> Result<(Vec<HostTensor>, Vec<InputRecord>), Error> {
    let names = || {
        specs
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // `name=path` pairs, and bare `.npz` archives read by input name.
    let mut named: Vec<(String, PathBuf)> = Vec::new();
    let mut archives: Vec<PathBuf> = Vec::new();
    for f in files {
        match f.split_once('=') {
            Some((n, p)) => named.push((n.to_string(), PathBuf::from(p))),
            None if f.ends_with(".npz") => archives.push(PathBuf::from(f)),
            None => {
                return Err(SettingError::bad(
                    Setting::InputFiles,
                    f,
                    "write NAME=FILE.npy (or NAME=FILE.npz), or give an .npz whose arrays are named like the inputs",
                )
                .into());
            }
        }
    }
    for (n, _) in &named {
        if !specs.iter().any(|s| &s.name == n) {
            return Err(SettingError::bad(
                Setting::InputFiles,
                format!("{n}=..."),
                format!("the model has no input '{n}'; its inputs are {}", names()),
            )
            .into());
        }
    }
    for s in shapes {
        if !specs.iter().any(|sp| sp.name == s.name) {
            return Err(SettingError::bad(
                Setting::Shapes,
                &s.name,
                format!(
                    "the model has no input of that name; its inputs are {}",
                    names()
                ),
            )
            .into());
        }
    }
    // Every archive is read now: one that cannot be read, or that holds no array named like
    // an input, is an error (never ignored in favour of generated data).
    let mut archive_names = Vec::with_capacity(archives.len());
    for p in &archives {
        let in_archive = io::npz_names(p)?;
        if !specs.iter().any(|s| in_archive.contains(&s.name)) {
            return Err(Error::ArchiveUnmatched {
                path: p.clone(),
                names: in_archive.join(", "),
                inputs: names(),
            });
        }
        archive_names.push(in_archive);
    }
    // Generated inputs only when no input is given at all.
    let given = !files.is_empty();
    let mut tensors = Vec::with_capacity(specs.len());
    let mut records = Vec::with_capacity(specs.len());
    for (k, spec) in specs.iter().enumerate() {
        let archive = archives
            .iter()
            .zip(&archive_names)
            .find(|(_, n)| n.contains(&spec.name))
            .map(|(p, _)| p);
        let (data, source) = if let Some((_, p)) = named.iter().find(|(n, _)| n == &spec.name) {
            let data = match p.extension().and_then(|e| e.to_str()) {
                Some("npz") => io::read_npz(p, &spec.name)?,
                Some("pb") => io::read_pb(p)?.1,
                _ => io::read_npy(p)?,
            };
            (data, format!("file {}", p.display()))
        } else if let Some(p) = archive {
            (
                io::read_npz(p, &spec.name)?,
                format!("file {} [{}]", p.display(), spec.name),
            )
        } else if given {
            return Err(Error::NotGiven {
                input: spec.name.clone(),
                files: files.join(", "),
            });
        } else {
            generated(spec, shapes, seed.wrapping_add(k as u64))?
        };
        check_input(spec, &data, &source)?;
        records.push(InputRecord {
            name: spec.name.clone(),
            elem_type: data.dtype().name().to_string(),
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

/// A seeded input at the declared (or given) shape, within the memory budget.
fn generated(
    spec: &InputSpec,
    shapes: &[InputShape],
    s: u64,
) -> Result<(TensorData, String), Error> {
    let dims: Vec<usize> = match shapes.iter().find(|x| x.name == spec.name) {
        Some(x) => x.dims.iter().map(|&d| d as usize).collect(),
        None if spec.loose => {
            return Err(Error::DynamicDims {
                input: spec.name.clone(),
                dims: "not declared (the model format declares no shapes)".into(),
            });
        }
        None => match spec
            .dims
            .iter()
            .map(|d| d.known())
            .collect::<Option<Vec<_>>>()
        {
            Some(d) if d.iter().all(|&v| v >= 0) => d.iter().map(|&v| v as usize).collect(),
            _ => {
                return Err(Error::DynamicDims {
                    input: spec.name.clone(),
                    dims: dims_text(&spec.dims),
                });
            }
        },
    };
    crate::util::limits::tensor_bytes(
        &format!("input '{}'", spec.name),
        &dims,
        spec.dtype
            .bits()
            .map(|b| b.div_ceil(8) as usize)
            .unwrap_or(8),
    )?;
    let data = TensorData::seeded(spec.dtype, &dims, s).ok_or_else(|| Error::CannotGenerate {
        input: spec.name.clone(),
        dtype: spec.dtype.name().to_string(),
    })?;
    let range = if spec.dtype.is_float() {
        "uniform [0, 1)"
    } else if spec.dtype == DataType::BOOL {
        "fair booleans"
    } else {
        "integers in [0, 10)"
    };
    Ok((data, format!("generated: seed {s}, {range}")))
}

/// The summary of one output tensor: type, shape, range, non-finite counts.
pub fn describe_output(t: &HostTensor) -> OutputRecord {
    let v = t.data.to_f64();
    let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    OutputRecord {
        name: t.name.clone(),
        elem_type: t.data.dtype().name().to_string(),
        shape: t.data.shape().to_vec(),
        min: finite.iter().copied().reduce(f64::min),
        max: finite.iter().copied().reduce(f64::max),
        mean: (!finite.is_empty()).then(|| finite.iter().sum::<f64>() / finite.len() as f64),
        nan_count: v.iter().filter(|x| x.is_nan()).count(),
        inf_count: v.iter().filter(|x| x.is_infinite()).count(),
    }
}

/// What an inputs folder or archive holds.
pub enum InputsPath {
    /// Images: run the task pipeline on them.
    Images,
    /// `NAME=FILE` pairs for `gather_inputs`.
    Files(Vec<String>),
}

/// Interprets an inputs path: an `.npz` archive; a folder of images; an ONNX
/// `test_data_set` folder (or a test folder holding `test_data_set_0`); a folder of
/// `NAME.npy` files named like the model's inputs.
pub fn inputs_path(path: &Path, specs: &[InputSpec]) -> Result<InputsPath, Error> {
    let bad = |why: String| SettingError::bad(Setting::InputsPath, path.display(), why);
    if path.is_file() {
        return if path.extension().is_some_and(|e| e == "npz") {
            Ok(InputsPath::Files(vec![path.display().to_string()]))
        } else {
            Err(bad("give a folder or an .npz archive".into()).into())
        };
    }
    if !path.is_dir() {
        return Err(bad("does not exist".into()).into());
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
        return Err(bad(format!(
            "holds no images, no test_data_set and no .npy file named after an input ({})",
            specs
                .iter()
                .map(|s| format!("{}.npy", s.name))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    Ok(InputsPath::Files(npy))
}
