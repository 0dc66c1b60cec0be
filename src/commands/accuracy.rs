//! `acceval accuracy`: settings → `accuracy::evaluate` → emit. PASS/FAIL exits 0/1 when a
//! level is required; a run that stops part-way writes what it graded, then fails.

use std::path::Path;

use anyhow::bail;

use crate::Outcome;
use crate::accuracy::evaluate::{self, EvalOptions, PrecisionTable};
use crate::cli::AccuracyArgs;
use crate::cli::flags;
use crate::report::schema::Verdict;
use crate::util::progress::Progress;
use crate::zoo::{self, Precision};

pub fn run(args: AccuracyArgs) -> anyhow::Result<Outcome> {
    let opts = EvalOptions {
        limit: args.limit,
        task: args.task,
        det: args.detect.params(),
        required: args.require,
    };
    let backend = args.backend.settings()?;
    let progress = Progress::hidden();
    let out = args.output.outputs();
    if let Some(converted) = &args.against {
        return conversion(&args, backend, converted);
    }
    if args.all_precisions {
        let name = zoo::canonical_name(&args.model.to_string_lossy());
        let Some((entry, _)) = zoo::parse_name(&name) else {
            bail!(
                "--all-precisions takes a zoo model (its FP32, FP16 and INT8 variants are graded); '{}' is not one",
                args.model.display()
            );
        };
        let mut t = PrecisionTable {
            schema: "acceval.accuracy-precisions/1".into(),
            model: entry.name.to_string(),
            backend: backend.spec.to_string(),
            rows: Vec::new(),
        };
        for p in [Precision::Fp32, Precision::Fp16, Precision::Int8] {
            let model = zoo::resolve(Path::new(&format!("{}{}", entry.name, p.suffix())))?;
            let (reference, relation) =
                evaluate::find_reference(&model, args.reference.as_deref(), &backend, &progress)
                    .map_err(flags::accuracy)?;
            progress.note(format!(
                "acceval: grading {} on {}",
                model.display(),
                backend.spec
            ));
            let r = evaluate::evaluate(&model, &backend, &reference, relation, &opts)
                .map_err(flags::accuracy)?;
            let failed = r.error.clone();
            t.rows.push(r);
            if let Some(e) = failed {
                // What was measured is written even when a variant failed part-way.
                out.write_files(&t)?;
                bail!("{e}");
            }
        }
        out.emit(&t)?;
        return Ok(verdict(t.rows.iter().any(|r| {
            matches!(r.verdict, Some(Verdict::Fail | Verdict::Invalid))
        })));
    }
    let model = zoo::resolve(&args.model)?;
    if !model.is_file() {
        bail!("model '{}' does not exist", model.display());
    }
    let (reference, relation) =
        evaluate::find_reference(&model, args.reference.as_deref(), &backend, &progress)
            .map_err(flags::accuracy)?;
    let r = evaluate::evaluate(&model, &backend, &reference, relation, &opts)
        .map_err(flags::accuracy)?;
    out.write_files(&r)?;
    if let Some(e) = &r.error {
        bail!(
            "{e} ({} of {} inputs graded{})",
            r.inputs_used,
            r.inputs_available,
            out.export_json
                .as_ref()
                .map(|p| format!(
                    "; the partial report (complete: false) is in {}",
                    p.display()
                ))
                .unwrap_or_default()
        );
    }
    out.print(&r)?;
    Ok(verdict(matches!(
        r.verdict,
        Some(Verdict::Fail | Verdict::Invalid)
    )))
}

fn verdict(failed: bool) -> Outcome {
    if failed {
        Outcome::NotCompliant
    } else {
        Outcome::Ok
    }
}

/// `--against CONVERTED`: the conversion check.
fn conversion(
    args: &AccuracyArgs,
    source_backend: crate::backend::BackendSettings,
    converted: &Path,
) -> anyhow::Result<Outcome> {
    use crate::accuracy::conversion::{self, ConversionSettings};
    use crate::backend::{BackendSettings, BackendSpec};
    let engines: Vec<BackendSettings> = if args.against_backends.is_empty() {
        let mut e = vec![BackendSettings::new(
            "cpu".parse::<BackendSpec>().map_err(anyhow::Error::msg)?,
        )];
        if crate::backend::ort::library().is_ok() {
            e.push(BackendSettings::new(
                "ort:cpu"
                    .parse::<BackendSpec>()
                    .map_err(anyhow::Error::msg)?,
            ));
        }
        e
    } else {
        args.against_backends
            .iter()
            .map(|s| BackendSettings::new(s.clone()))
            .collect()
    };
    let s = ConversionSettings {
        source: zoo::resolve(&args.model)?,
        source_backend,
        converted: zoo::resolve(converted)?,
        engines,
        sets: args.sets,
        seed: 0,
        shapes: args.shapes.clone(),
        top1: args.task == Some(crate::task::Task::Classification),
        required: args.require,
    };
    let r = conversion::check(&s).map_err(flags::accuracy)?;
    args.output.outputs().emit(&r)?;
    Ok(verdict(r.engines.iter().any(|e| {
        e.error.is_some() || matches!(e.verdict, Some(Verdict::Fail))
    })))
}
