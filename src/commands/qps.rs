//! `acceval qps`: flags → [`QpsSettings`] → `load::qps::measure` → the report's outputs.

use crate::Outcome;
use crate::cli::QpsArgs;
use crate::load::infer::Inputs;
use crate::load::qps::{self, QpsReport, QpsSettings};
use crate::util::progress::Progress;

/// The library settings of `qps`'s flags (checked by [`QpsSettings::plan`]).
pub fn settings(a: &QpsArgs) -> QpsSettings {
    QpsSettings {
        url: a.url.first().cloned().unwrap_or_default(),
        replicas: a.url.iter().skip(1).cloned().collect(),
        model: a.model.clone(),
        slo: a.slo.clone(),
        error_budget: a.error_budget,
        mode: a.mode,
        distribution: a.distribution,
        seed: a.seed,
        start_rate: a.start_rate,
        max_rate: a.max_rate,
        precision: a.precision,
        concurrency: a.concurrency.clone(),
        step_duration_s: a.step_duration,
        warmup_s: a.warmup,
        timeout_s: a.timeout,
        inputs: Inputs {
            input_file: a.input_file.clone(),
            shapes: a.shapes.clone(),
            binary: a.binary,
            seed: a.seed,
        },
        max_connections: a.max_connections,
        max_response_bytes: a.max_response_bytes,
        max_error_bytes: a.max_error_bytes,
        tls: a.tls.tls(),
    }
}

/// `acceval qps`: exit 0 when a max QPS was found and the search ran to its end.
pub fn run(args: QpsArgs) -> anyhow::Result<Outcome> {
    use crate::cli::settings::refuse;
    refuse(
        &args.old_warmup,
        "--warmup",
        "each step's warm-up is --warmup-s S (seconds; `bench --warmup-runs` counts runs, `llm --warmup-requests` requests)",
    )?;
    refuse(
        &args.old_precision,
        "--precision",
        "the bisection's stopping share is --search-precision SHARE (`train --precision` is the number format)",
    )?;
    let stop = crate::util::signal::stop_flag();
    let plan = settings(&args).plan().map_err(crate::cli::flags::flagged)?;
    let progress = Progress::new(0, "{spinner} {elapsed_precise} QPS: {msg}");
    let report = qps::measure(&plan, &progress, &stop).map_err(crate::cli::flags::load)?;
    progress.finish();
    emit(&args, &report)?;
    Ok(if report.max_qps.is_some() && report.complete {
        Outcome::Ok
    } else {
        Outcome::NotCompliant
    })
}

fn emit(args: &QpsArgs, report: &QpsReport) -> anyhow::Result<()> {
    let written = args.output.outputs().emit(report)?;
    if !written.is_empty() {
        eprintln!("Written: {}", list(&written));
    }
    Ok(())
}

/// Paths, comma-separated.
pub fn list(paths: &[std::path::PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
