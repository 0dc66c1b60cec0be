//! The inputs of a reference for a model outside the zoo: `--inputs` (images or series run
//! through the task's pre-processing, ONNX `test_data_set_N` folders, an `.npz`), or seeded
//! tensors when none are given (said to be unrepresentative in the manifest).

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::accuracy::reference::RefInput;
use crate::data::inputs::InputSpec;
use crate::data::io;
use crate::model::tensor::{HostTensor, TensorData};
use crate::task::Task;

/// Where a reference's inputs come from, how they were pre-processed, and the inputs.
pub struct Gathered {
    pub source: String,
    pub preprocessing: String,
    pub inputs: Vec<RefInput>,
}

fn static_shape(spec: &InputSpec) -> anyhow::Result<Vec<usize>> {
    spec.dims
        .iter()
        .map(|d| d.known().map(|v| v as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            anyhow::anyhow!(
                "input '{}' has dynamic dims: give the inputs as files (--inputs DIR with test_data_set_N, or an .npz)",
                spec.name
            )
        })
}

/// `count` seeded input sets (set k, input j: seed + 1000·k + j).
pub fn seeded(specs: &[InputSpec], count: usize, seed: u64) -> anyhow::Result<Gathered> {
    let mut sets = Vec::with_capacity(count);
    for k in 0..count {
        let mut tensors = Vec::new();
        for (j, s) in specs.iter().enumerate() {
            let sd = seed + 1000 * k as u64 + j as u64;
            let data = TensorData::seeded(s.dtype, &static_shape(s)?, sd).ok_or_else(|| {
                anyhow::anyhow!(
                    "input '{}' is {}: give it as a file (--inputs)",
                    s.name,
                    s.dtype.name()
                )
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
            "{count} seeded inputs (floats uniform in [0, 1), integers in [0, 10)): not representative data; pass --inputs for real inputs"
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
) -> anyhow::Result<Gathered> {
    let [spec] = specs else {
        bail!(
            "images and series feed models with one input; this one has {}",
            specs.len()
        );
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

fn read(p: &Path) -> anyhow::Result<(String, Vec<u8>)> {
    let bytes =
        std::fs::read(p).map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", p.display()))?;
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
fn npz(specs: &[InputSpec], path: &Path) -> anyhow::Result<Gathered> {
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
            source_sha256: Some(crate::util::fs::sha256_hex(&std::fs::read(path)?)),
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

fn from_test_data(
    specs: &[InputSpec],
    path: &Path,
    dirs: Vec<PathBuf>,
) -> anyhow::Result<Gathered> {
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

/// The inputs in `path` (`--inputs`); `task` says how to pre-process images.
pub fn from_path(specs: &[InputSpec], path: &Path, task: Option<Task>) -> anyhow::Result<Gathered> {
    if path.is_file() {
        return match ext(path).as_str() {
            "csv" => from_files(
                specs,
                vec![read(path)?],
                Task::Forecasting,
                format!("series {}", path.display()),
            ),
            "npz" => npz(specs, path),
            _ => bail!(
                "--inputs '{}': give a folder (images, test_data_set_N), a .csv series or an .npz",
                path.display()
            ),
        };
    }
    if !path.is_dir() {
        bail!("--inputs '{}' does not exist", path.display());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let sets = test_data_sets(path, &entries);
    if !sets.is_empty() {
        return from_test_data(specs, path, sets);
    }
    let pick = |f: fn(&str) -> bool| -> anyhow::Result<Vec<(String, Vec<u8>)>> {
        entries
            .iter()
            .filter(|p| f(&ext(p)))
            .map(|p| read(p))
            .collect()
    };
    let images = pick(|e| matches!(e, "jpg" | "jpeg" | "png"))?;
    if !images.is_empty() {
        let task = task.ok_or_else(|| {
            anyhow::anyhow!(
                "'{}' holds images: pass --task classification|detection|forecasting to say how to pre-process them",
                path.display()
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
    bail!(
        "--inputs '{}' holds no images, no .csv series and no test_data_set_N folder",
        path.display()
    )
}
