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
