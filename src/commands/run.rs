//! `acceval run`: settings → `measure::run` → emit. Inputs come from `.npy`/`.npz`/`.pb`
//! files or are generated from a seed; outputs with NaN or Inf make the run fail (exit 1),
//! after everything is written.

use anyhow::Context;

use crate::Outcome;
use crate::cli::RunArgs;
use crate::cli::flags;
use crate::data::inputs::{InputsPath, input_specs, inputs_path};
use crate::data::io;
use crate::measure::run::{self, RunSettings, TaskSettings};

pub fn run(mut args: RunArgs) -> anyhow::Result<Outcome> {
    let model = crate::zoo::resolve(&args.model)?;
    if let Some(p) = args.inputs_path.clone() {
        let specs = input_specs(&model).map_err(flags::data)?;
        match inputs_path(&p, &specs).map_err(flags::data)? {
            InputsPath::Images => args.images.push(p),
            InputsPath::Files(f) => args.inputs.extend(f),
        }
    }
    if !args.images.is_empty() || args.series.is_some() {
        return run_task(&args);
    }
    let s = RunSettings {
        backend: args.backend.settings()?,
        model,
        inputs: args.inputs.clone(),
        shapes: args.shapes.clone(),
        seed: args.seed,
        runs: args.runs,
        placement: args.placement,
    };
    let (mut report, outputs) = run::run_model(&s).map_err(flags::measure)?;
    if let Some(path) = &args.output {
        io::write_npz(path, &outputs).with_context(|| "writing the outputs (--output)")?;
        report.output_file = Some(path.display().to_string());
    }
    let out = args.output_args.outputs();
    out.emit(&report)?;
    let bad: Vec<String> = report
        .outputs
        .iter()
        .filter(|o| o.nan_count > 0 || o.inf_count > 0)
        .map(|o| format!("'{}' ({} NaN, {} Inf)", o.name, o.nan_count, o.inf_count))
        .collect();
    if !bad.is_empty() {
        eprintln!(
            "acceval: the outputs are not finite: {}; the model or the backend computes garbage on these inputs",
            bad.join(", ")
        );
        return Ok(Outcome::NotCompliant);
    }
    Ok(Outcome::Ok)
}

fn run_task(args: &RunArgs) -> anyhow::Result<Outcome> {
    let files = match &args.series {
        Some(s) => vec![s.clone()],
        None => run::image_files(&args.images).map_err(flags::measure)?,
    };
    let s = TaskSettings {
        backend: args.backend.settings()?,
        model: args.model.clone(),
        task: args.task,
        files,
        series: args.series.is_some(),
        top_k: args.top_k,
        detect: args.detect.params(),
    };
    let n = s.files.len();
    let (report, error) = run::run_task(&s).map_err(flags::measure)?;
    // What was measured is kept, marked incomplete, before the error is reported.
    if let Some(path) = &args.output {
        crate::util::fs::write_file(path, &serde_json::to_vec_pretty(&report)?)?;
    }
    let out = args.output_args.outputs();
    out.write_files(&report)?;
    if let Some(e) = error {
        return Err(anyhow::Error::new(e).context(format!(
            "{} of {n} files done{}",
            report.runs.len(),
            args.output
                .as_ref()
                .map(|p| format!(
                    "; the partial report (complete: false) is in {}",
                    p.display()
                ))
                .unwrap_or_default()
        )));
    }
    out.print(&report)?;
    Ok(Outcome::Ok)
}
