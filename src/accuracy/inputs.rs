//! The inputs of a reference for a model outside the zoo: given inputs (images or series run
//! through the task's pre-processing, ONNX `test_data_set_N` folders, an `.npz`), or seeded
//! tensors when none are given (said to be unrepresentative in the manifest).

use std::path::{Path, PathBuf};

use super::{Error, Setting};
use crate::accuracy::reference::RefInput;
use crate::data::inputs::InputSpec;
use crate::data::io;
use crate::model::tensor::{HostTensor, TensorData};
use crate::task::Task;
use crate::util::setting::SettingError;

/// Where a reference's inputs come from, how they were pre-processed, and the inputs.
pub struct Gathered {
    pub source: String,
    pub preprocessing: String,
    pub inputs: Vec<RefInput>,
}

fn static_shape(spec: &InputSpec) -> Result<Vec<usize>, Error> {
    spec.dims
        .iter()
        .map(|d| d.known().map(|v| v as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::DynamicInput {
            input: spec.name.clone(),
        })
}

/// `count` seeded input sets (set k, input j: seed + 1000·k + j).
pub fn seeded(specs: &[InputSpec], count: usize, seed: u64) -> Result<Gathered, Error> {
    let mut sets = Vec::with_capacity(count);
    for k in 0..count {
        let mut tensors = Vec::new();
        for (j, s) in specs.iter().enumerate() {
            let sd = seed + 1000 * k as u64 + j as u64;
            let data = TensorData::seeded(s.dtype, &static_shape(s)?, sd).ok_or_else(|| {
                Error::CannotGenerate {
                    input: s.name.clone(),
                    dtype: s.dtype.name().to_string(),
                }
            })?;
            tensors.push(HostTensor {
                name: s.name.clone(),
                data,
            });
        }
        sets.push(RefInput {
            source: format!("generated: seeds {}..", seed + 1000 * k as u64),
            source_sha256: None,
            tensors,
        });
    }
    Ok(Gathered {
        source: format!(
            "{count} seeded inputs (floats uniform in [0, 1), integers in [0, 10)): not representative data; give input files for real inputs"
        ),
        preprocessing: "none (generated at the model's input shape)".into(),
        inputs: sets,
    })
}

/// Images or series files through the task's pre-processing (one-input models).
fn from_files(
    specs: &[InputSpec],
    files: Vec<(String, Vec<u8>)>,
    task: Task,
    source: String,
) -> Result<Gathered, Error> {
    let [spec] = specs else {
        return Err(Error::NotOneInput {
            inputs: specs.len(),
        });
    };
    let shape = static_shape(spec)?;
    let inputs = crate::task::prepare_inputs(task, &shape, &files)?
        .into_iter()
        .map(|p| RefInput {
            source: p.label,
            source_sha256: Some(p.file_sha256),
            tensors: vec![HostTensor {
                name: spec.name.clone(),
                data: TensorData::F32(p.tensor),
            }],
        })
        .collect();
    Ok(Gathered {
        source,
        preprocessing: crate::task::preprocessing_text(task).into(),
        inputs,
    })
}

fn read(p: &Path) -> Result<(String, Vec<u8>), Error> {
    let bytes = crate::util::read(p)?;
    Ok((
        p.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
        bytes,
    ))
}

fn ext(p: &Path) -> String {
    p.extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default()
}

/// One `.npz` archive whose arrays are named like the inputs.
fn npz(specs: &[InputSpec], path: &Path) -> Result<Gathered, Error> {
    let mut tensors = Vec::new();
    for s in specs {
        tensors.push(HostTensor {
            name: s.name.clone(),
            data: io::read_npz(path, &s.name)?,
        });
    }
    Ok(Gathered {
        source: format!("archive {}", path.display()),
        preprocessing: "none (arrays as given)".into(),
        inputs: vec![RefInput {
            source: path.display().to_string(),
            source_sha256: Some(crate::util::fs::sha256_hex(&crate::util::read(path)?)),
            tensors,
        }],
    })
}

/// The `test_data_set_N` folders of `path` (or `path` itself when it holds input_0.pb).
fn test_data_sets(path: &Path, entries: &[PathBuf]) -> Vec<PathBuf> {
    if path.join("input_0.pb").is_file() {
        return vec![path.to_path_buf()];
    }
    let mut v: Vec<(usize, PathBuf)> = entries
        .iter()
        .filter_map(|p| {
            let k = p
                .file_name()?
                .to_str()?
                .strip_prefix("test_data_set_")?
                .parse()
                .ok()?;
            p.is_dir().then(|| (k, p.clone()))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}

fn from_test_data(specs: &[InputSpec], path: &Path, dirs: Vec<PathBuf>) -> Result<Gathered, Error> {
    let mut sets = Vec::new();
    for d in dirs {
        let mut tensors = Vec::new();
        for (j, s) in specs.iter().enumerate() {
            let (_, data) = io::read_pb(&d.join(format!("input_{j}.pb")))?;
            tensors.push(HostTensor {
                name: s.name.clone(),
                data,
            });
        }
        sets.push(RefInput {
            source: d.display().to_string(),
            source_sha256: None,
            tensors,
        });
    }
    Ok(Gathered {
        source: format!("test data {}", path.display()),
        preprocessing: "none (tensors as given)".into(),
        inputs: sets,
    })
}

/// The inputs in `path`; `task` says how to pre-process images.
pub fn from_path(specs: &[InputSpec], path: &Path, task: Option<Task>) -> Result<Gathered, Error> {
    let bad = |why: &str| Error::from(SettingError::bad(Setting::Inputs, path.display(), why));
    if path.is_file() {
        return match ext(path).as_str() {
            "csv" => from_files(
                specs,
                vec![read(path)?],
                Task::Forecasting,
                format!("series {}", path.display()),
            ),
            "npz" => npz(specs, path),
            _ => Err(bad(
                "give a folder (images, test_data_set_N), a .csv series or an .npz",
            )),
        };
    }
    if !path.is_dir() {
        return Err(bad("does not exist"));
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(crate::util::Error::read(path))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let sets = test_data_sets(path, &entries);
    if !sets.is_empty() {
        return from_test_data(specs, path, sets);
    }
    let pick = |f: fn(&str) -> bool| -> Result<Vec<(String, Vec<u8>)>, Error> {
        entries
            .iter()
            .filter(|p| f(&ext(p)))
            .map(|p| read(p))
            .collect()
    };
    let images = pick(|e| matches!(e, "jpg" | "jpeg" | "png"))?;
    if !images.is_empty() {
        let task = task.ok_or_else(|| {
            SettingError::says(
                Setting::Task,
                format!(
                    "is needed: '{}' holds images; say how to pre-process them (classification, detection or forecasting)",
                    path.display()
                ),
            )
        })?;
        return from_files(specs, images, task, format!("images in {}", path.display()));
    }
    let csvs = pick(|e| e == "csv")?;
    if !csvs.is_empty() {
        return from_files(
            specs,
            csvs,
            Task::Forecasting,
            format!("series in {}", path.display()),
        );
    }
    Err(bad(
        "holds no images, no .csv series and no test_data_set_N folder",
    ))
}
