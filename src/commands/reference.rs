//! `acceval reference`: the FP32 model's outputs on the CPU, stored as ONNX test data with
//! a manifest, after a cross-check on the second CPU engine.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::Outcome;
use crate::accuracy::io;
use crate::accuracy::reference::{self, Plan, RefInput, RefManifest};
use crate::backend::BackendSpec;
use crate::cli::ReferenceArgs;
use crate::commands::run::{InputSpec, check_input, input_specs};
use crate::model::tensor::{HostTensor, TensorData};
use crate::zoo::{self, Entry, Precision, Task};

/// The zoo entry and variant of a model file, when its name and SHA-256 are the zoo's.
pub fn zoo_identity(model: &Path) -> Option<(Entry, Precision)> {
    let stem = model.file_stem()?.to_str()?;
    let (entry, precision) = zoo::parse_name(stem)?;
    let manifest = zoo::Manifest::read(&crate::util::paths::models_dir().join("zoo.toml")).ok()?;
    let m = manifest.find(stem)?;
    zoo::file_matches(model, &m.sha256).then_some((entry, precision))
}

/// The plan for a zoo model's reference: its FP32 file on its whole input set.
pub fn zoo_plan<'a>(
    entry: &Entry,
    fp32_model: &'a Path,
    primary: BackendSpec,
    threads: Option<usize>,
    cross_check: bool,
) -> anyhow::Result<Plan<'a>> {
    let inputs = zoo::input_set_tensors(entry)?
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
        no_cross_check_reason: "--no-cross-check".into(),
        input_source: format!(
            "input set '{}' (inputs/{}/manifest.toml; `acceval inputs build {}` writes the files)",
            entry.input_set, entry.input_set, entry.input_set
        ),
        preprocessing: crate::task::preprocessing_text(entry.task).to_string(),
        inputs,
    })
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

/// Inputs of a model that is not in the zoo, from `--inputs` or seeded.
fn user_inputs(
    args: &ReferenceArgs,
    specs: &[InputSpec],
) -> anyhow::Result<(String, String, Vec<RefInput>)> {
    let Some(path) = &args.inputs else {
        let mut sets = Vec::with_capacity(args.count);
        for k in 0..args.count {
            let mut tensors = Vec::new();
            for (j, s) in specs.iter().enumerate() {
                let seed = args.seed + 1000 * k as u64 + j as u64;
                let data =
                    TensorData::seeded(s.dtype, &static_shape(s)?, seed).ok_or_else(|| {
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
                source: format!("generated: seeds {}..", args.seed + 1000 * k as u64),
                source_sha256: None,
                tensors,
            });
        }
        return Ok((
            format!(
                "{} seeded inputs (floats uniform in [0, 1), integers in [0, 10)): not representative data; pass --inputs for real inputs",
                args.count
            ),
            "none (generated at the model's input shape)".into(),
            sets,
        ));
    };
    let from_files = |files: Vec<(String, Vec<u8>)>, task: Task| -> anyhow::Result<Vec<RefInput>> {
        let [spec] = specs else {
            bail!(
                "images and series feed models with one input; this one has {}",
                specs.len()
            );
        };
        let shape = static_shape(spec)?;
        Ok(crate::task::prepare_inputs(task, &shape, &files)?
            .into_iter()
            .map(|p| RefInput {
                source: p.label,
                source_sha256: Some(p.file_sha256),
                tensors: vec![HostTensor {
                    name: spec.name.clone(),
                    data: TensorData::F32(p.tensor),
                }],
            })
            .collect())
    };
    let read = |p: &Path| -> anyhow::Result<(String, Vec<u8>)> {
        let bytes =
            std::fs::read(p).map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", p.display()))?;
        Ok((
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            bytes,
        ))
    };
    let task_of = |need: &str| {
        args.task.ok_or_else(|| {
            anyhow::anyhow!("{need}: pass --task classification|detection|forecasting to say how to pre-process them")
        })
    };
    let ext = |p: &Path| {
        p.extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
            .unwrap_or_default()
    };
    if path.is_file() {
        return match ext(path).as_str() {
            "csv" => Ok((
                format!("series {}", path.display()),
                crate::task::preprocessing_text(Task::Forecasting).into(),
                from_files(vec![read(path)?], Task::Forecasting)?,
            )),
            "npz" => {
                let mut tensors = Vec::new();
                for s in specs {
                    tensors.push(HostTensor {
                        name: s.name.clone(),
                        data: io::read_npz(path, &s.name)?,
                    });
                }
                Ok((
                    format!("archive {}", path.display()),
                    "none (arrays as given)".into(),
                    vec![RefInput {
                        source: path.display().to_string(),
                        source_sha256: Some(crate::util::fs::sha256_hex(&std::fs::read(path)?)),
                        tensors,
                    }],
                ))
            }
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
    let set_dirs: Vec<PathBuf> = if path.join("input_0.pb").is_file() {
        vec![path.clone()]
    } else {
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
    };
    if !set_dirs.is_empty() {
        let mut sets = Vec::new();
        for d in set_dirs {
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
        return Ok((
            format!("test data {}", path.display()),
            "none (tensors as given)".into(),
            sets,
        ));
    }
    let images: Vec<&PathBuf> = entries
        .iter()
        .filter(|p| matches!(ext(p).as_str(), "jpg" | "jpeg" | "png"))
        .collect();
    let csvs: Vec<&PathBuf> = entries.iter().filter(|p| ext(p) == "csv").collect();
    if !images.is_empty() {
        let task = task_of(&format!("'{}' holds images", path.display()))?;
        let files = images
            .iter()
            .map(|p| read(p))
            .collect::<anyhow::Result<_>>()?;
        return Ok((
            format!("images in {}", path.display()),
            crate::task::preprocessing_text(task).into(),
            from_files(files, task)?,
        ));
    }
    if !csvs.is_empty() {
        let files = csvs
            .iter()
            .map(|p| read(p))
            .collect::<anyhow::Result<_>>()?;
        return Ok((
            format!("series in {}", path.display()),
            crate::task::preprocessing_text(Task::Forecasting).into(),
            from_files(files, Task::Forecasting)?,
        ));
    }
    bail!(
        "--inputs '{}' holds no images, no .csv series and no test_data_set_N folder",
        path.display()
    )
}

pub fn run(args: ReferenceArgs) -> anyhow::Result<Outcome> {
    let arg_name = args.model.to_string_lossy().into_owned();
    let zoo_name = (!args.model.exists())
        .then(|| zoo::parse_name(&arg_name))
        .flatten();
    let (model, name, plan_inputs) = if let Some((entry, precision)) = zoo_name {
        if precision != Precision::Fp32 {
            eprintln!(
                "acceval: note: references are the FP32 model's outputs; computing them for {} (the FP32 variant of {arg_name})",
                entry.name
            );
        }
        let model = zoo::resolve(Path::new(entry.name))?;
        (model, entry.name.to_string(), None)
    } else {
        let model = zoo::resolve(&args.model)?;
        if !model.is_file() {
            bail!("model '{}' does not exist", model.display());
        }
        let name = model
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        (model, name, Some(()))
    };
    // Weights stored as FP16 or integers mean this is not the FP32 original.
    let a = crate::model::analyse(&model, &[])?;
    let low: Vec<&str> = a
        .params
        .by_type
        .iter()
        .filter(|t| {
            t.count > 0
                && !matches!(
                    t.elem_type.as_str(),
                    "FP32" | "FP64" | "INT64" | "INT32" | "BOOL"
                )
        })
        .map(|t| t.elem_type.as_str())
        .collect();
    if !low.is_empty() {
        bail!(
            "'{}' stores {} weights: references come from the FP32 model (give the original FP32 ONNX file)",
            model.display(),
            low.join(", ")
        );
    }
    let plan = match plan_inputs {
        None => {
            let (entry, _) = zoo::parse_name(&name).expect("a zoo name");
            if args.inputs.is_some() {
                bail!(
                    "'{name}' is a zoo model: its references use its input set '{}'; --inputs is for other models",
                    entry.input_set
                );
            }
            zoo_plan(
                &entry,
                &model,
                args.backend.clone(),
                args.threads,
                !args.no_cross_check,
            )?
        }
        Some(()) => {
            let specs = input_specs(&model)?;
            let (input_source, preprocessing, inputs) = user_inputs(&args, &specs)?;
            for i in &inputs {
                for (s, t) in specs.iter().zip(&i.tensors) {
                    check_input(s, &t.data, &i.source)?;
                }
            }
            Plan {
                model: &model,
                name: name.clone(),
                primary: args.backend.clone(),
                threads: args.threads,
                cross_check: !args.no_cross_check,
                no_cross_check_reason: "--no-cross-check".into(),
                input_source,
                preprocessing,
                inputs,
            }
        }
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| crate::util::paths::references_dir().join(&name));
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(format!(
        "computing {} reference outputs of {name} on {}{}",
        plan.inputs.len(),
        plan.primary,
        if plan.cross_check {
            format!(
                ", cross-checking on {}",
                reference::other_cpu_engine(&plan.primary)?
            )
        } else {
            String::new()
        }
    ));
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let m = reference::produce(&plan, &out);
    bar.finish_and_clear();
    let m = m?;
    let mut o = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut o, &m)?;
        writeln!(o)?;
    } else {
        write_text(&mut o, &m, &out)?;
    }
    Ok(Outcome::Ok)
}

fn write_text(o: &mut impl Write, m: &RefManifest, out: &Path) -> std::io::Result<()> {
    writeln!(o, "Reference: {}", out.display())?;
    writeln!(
        o,
        "Model:     {} ({}, SHA-256 {})",
        m.model, m.model_file, m.model_sha256
    )?;
    writeln!(
        o,
        "Computed:  {} — {} ({})",
        m.backend, m.engine, m.created_utc
    )?;
    writeln!(o, "Inputs:    {} sets; {}", m.sets.len(), m.input_source)?;
    let mut t = crate::report::table(&["output", "shape", "cross-check", "max rel L2", "max abs"]);
    for d in &m.outputs {
        let g = m.cross_check.outputs.iter().find(|g| g.name == d.name);
        t.add_row(vec![
            d.name.clone(),
            format!("{} {:?}", d.elem_type, d.shape),
            if g.is_some() {
                format!("{} vs {}", m.cross_check.engine, m.engine)
            } else {
                m.cross_check.status.clone()
            },
            g.map(|g| format!("{:.2e}", g.max_rel_l2_error))
                .unwrap_or_else(|| "n/a".into()),
            g.map(|g| format!("{:.2e}", g.max_abs_error))
                .unwrap_or_else(|| "n/a".into()),
        ]);
    }
    crate::report::right(&mut t, &[3, 4]);
    writeln!(o, "{t}")?;
    writeln!(
        o,
        "Cross-check: {} (tolerance: relative L2 error ≤ {:e} per output and input)",
        m.cross_check.status, m.cross_check.tolerance_rel_l2
    )
}
