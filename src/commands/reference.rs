//! `acceval reference`: the FP32 model's outputs on the CPU, stored as ONNX test data with
//! a manifest, after a cross-check on the second CPU engine.

use std::io::Write;
use std::path::Path;

use anyhow::bail;

use crate::Outcome;
use crate::accuracy::reference::{self, Plan, RefManifest, zoo_plan};

use crate::cli::ReferenceArgs;
use crate::cli::flags;
use crate::data::inputs::{check_input, input_specs};

use crate::zoo::{self, Precision};

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
            "'{}' stores {} parameters (a quantised or half-precision model): references come from the FP32 model (give the original FP32 ONNX file)",
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
            // Without the other CPU engine (ONNX Runtime is optional), a zoo graph is
            // cross-checked on candle, the engine that trains it.
            let other = args.cross_check_engine == crate::cli::CrossCheckEngine::Auto
                && reference::other_engine_available(&args.backend);
            let mut plan = zoo_plan(
                &entry,
                &model,
                args.backend.clone(),
                args.threads,
                !args.no_cross_check && other,
            )
            .map_err(flags::accuracy)?;
            plan.cross_check_candle = !args.no_cross_check && !other;
            plan.no_cross_check_reason = "--no-cross-check".into();
            plan
        }
        Some(()) => {
            let mut plan = other_model_plan(&args, &model, &name)?;
            if args.cross_check_engine == crate::cli::CrossCheckEngine::Candle {
                plan.cross_check = false;
                plan.cross_check_candle = true;
            }
            plan
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
                reference::other_cpu_engine(&plan.primary).map_err(flags::accuracy)?
            )
        } else if plan.cross_check_candle {
            ", cross-checking on candle (ONNX Runtime is not installed)".to_string()
        } else {
            String::new()
        }
    ));
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let m = reference::produce(&plan, &out);
    bar.finish_and_clear();
    let m = m.map_err(flags::accuracy)?;
    let mut o = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut o, &m)?;
        writeln!(o)?;
    } else {
        write_text(&mut o, &m, &out)?;
    }
    Ok(Outcome::Ok)
}

/// The plan for a model outside the zoo: the given inputs (or seeded ones), each checked
/// against the model's declaration.
fn other_model_plan<'a>(
    args: &ReferenceArgs,
    model: &'a Path,
    name: &str,
) -> anyhow::Result<Plan<'a>> {
    let specs = input_specs(model).map_err(flags::data)?;
    let g = match &args.inputs {
        Some(p) => crate::accuracy::inputs::from_path(&specs, p, args.task),
        None => crate::accuracy::inputs::seeded(&specs, args.count, args.seed),
    }
    .map_err(flags::accuracy)?;
    for i in &g.inputs {
        for (s, t) in specs.iter().zip(&i.tensors) {
            check_input(s, &t.data, &i.source).map_err(flags::data)?;
        }
    }
    Ok(Plan {
        model,
        name: name.to_string(),
        primary: args.backend.clone(),
        threads: args.threads,
        cross_check: !args.no_cross_check,
        cross_check_candle: false,
        no_cross_check_reason: "--no-cross-check".into(),
        input_source: g.source,
        preprocessing: g.preprocessing,
        inputs: g.inputs,
    })
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
