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
        shard: None,
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
    if let Some(dir) = &args.cluster.cluster {
        return cluster_rank(&args, opts, &model, &backend, reference, relation, dir);
    }
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

/// `accuracy --cluster DIR`: this rank grades its shard of the N inputs and writes
/// DIR/accuracy-rank-<r>.json (the report over its shard and each output's running sums).
fn cluster_rank(
    args: &AccuracyArgs,
    mut opts: EvalOptions,
    model: &Path,
    backend: &crate::backend::BackendSettings,
    reference: crate::accuracy::reference::Reference,
    relation: String,
    dir: &Path,
) -> anyhow::Result<Outcome> {
    use crate::report::schema::cluster::{AccuracyRankReport, Shard};

    if args.all_precisions || args.against.is_some() {
        bail!("--cluster grades one model; run --all-precisions and --against on one node");
    }
    let c = &args.cluster;
    let found = c.by_hand.find()?;
    let available = reference.sets.len();
    let n = opts.limit.unwrap_or(available).min(available);
    if n < found.world_size {
        bail!(
            "the reference {} has {n} input(s) to grade: fewer than the {} ranks",
            reference.dir.display(),
            found.world_size
        );
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("--cluster {}: {e}", dir.display()))?;
    let shard = Shard::of(n, found.world_size, found.rank);
    opts.shard = Some(shard.start..shard.end);
    let record = AccuracyRankReport {
        schema: "acceval.cluster-accuracy-rank/1".into(),
        common: crate::cluster::run::common(&found),
        total_inputs: n,
        shard,
        sums: Vec::new(),
        report: None,
    };
    let path = dir.join(format!("accuracy-rank-{}.json", found.rank));
    let stop = crate::util::signal::stop_flag();
    let rf = crate::cluster::file::RankFile::new(path.clone(), record, &stop);
    rf.stage("grading its shard of the inputs");
    let (r, sums) = match evaluate::evaluate_with_sums(model, backend, &reference, relation, &opts)
    {
        Ok(x) => x,
        Err(e) => return Err(rf.fail(format!("{}", flags::accuracy(e)))),
    };
    let (graded, mse, level, error) = (r.inputs_used, r.mse, r.level, r.error.clone());
    rf.with(|f| {
        f.sums = sums;
        f.common.complete = r.complete && r.inputs_used == shard.len();
        f.report = Some(r);
    });
    if let Some(e) = error {
        return Err(rf.fail(e));
    }
    rf.write()?;
    println!(
        "rank {} of {}: graded inputs {}..{} ({graded}) of N = {n}: worst-output MSE {} ({}) over its shard; wrote {}",
        found.rank,
        found.world_size,
        shard.start,
        shard.end,
        crate::util::fmt::sci(mse),
        level.map_or("no level".into(), |l| l.to_string()),
        path.display()
    );
    println!(
        "when every rank has finished: acceval merge {}",
        dir.display()
    );
    Ok(Outcome::Ok)
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
