//! `acceval llm`: flags → [`LlmSettings`] → `llm::measure` → the report's outputs.

use std::path::PathBuf;

use anyhow::bail;

use crate::Outcome;
use crate::cli::LlmArgs;
use crate::llm::{self, Dataset, LlmSettings};
use crate::util::progress::Progress;

/// The library settings of `llm`'s flags (checked by [`LlmSettings::plan`]).
pub fn settings(a: &LlmArgs) -> anyhow::Result<LlmSettings> {
    crate::cli::settings::refuse(
        &a.old_warmup,
        "--warmup",
        "warm-up requests are --warmup-requests N (`bench --warmup-runs` counts runs, `qps --warmup-s` seconds)",
    )?;
    let kind = a
        .dataset_type
        .as_deref()
        .unwrap_or(match a.dataset.as_str() {
            "synthetic" => "synthetic",
            _ => "jsonl",
        });
    let path = PathBuf::from(&a.dataset);
    let dataset = match (kind, &a.synthetic_config) {
        ("synthetic", c) if a.dataset == "synthetic" => Dataset::Synthetic(c.clone()),
        ("synthetic", _) => bail!(
            "--dataset-type synthetic takes --dataset synthetic (the lengths come from --synthetic-config), not '{}'",
            a.dataset
        ),
        (_, Some(_)) => bail!(
            "--synthetic-config applies to --dataset synthetic, not to the {kind} dataset '{}'",
            a.dataset
        ),
        (_, None) if a.dataset == "synthetic" => {
            bail!("--dataset-type {kind} needs --dataset PATH (the lab's {kind} file or directory)")
        }
        ("gsm8k", None) => Dataset::Gsm8k(path),
        ("mmlu", None) => Dataset::Mmlu(path),
        (_, None) => Dataset::Jsonl(path),
    };
    Ok(LlmSettings {
        url: a.url.clone().unwrap_or_default(),
        model: a.model.clone(),
        engine: a.engine,
        api: a.api,
        stream: !a.no_stream,
        dataset,
        request_count: a.request_count,
        tokenizer: a.tokenizer.clone(),
        max_output_len: a.max_output_len,
        test_accuracy: a.test_accuracy,
        concurrency: a.concurrency,
        max_batch_size: a.max_batch_size,
        request_rate: a.request_rate.clone(),
        distribution: a.distribution,
        seed: a.seed,
        warmup: a.warmup,
        sampling_params: a.sampling_params.clone(),
        slo: a.slo.clone(),
        timeout_s: a.timeout,
        max_connections: a.max_connections,
        max_event_bytes: a.max_event_bytes,
        max_error_bytes: a.max_error_bytes,
        tls: a.tls.tls(),
    })
}

/// `acceval llm`: exit 0 when every run completed without a failed request.
pub fn run(args: LlmArgs) -> anyhow::Result<Outcome> {
    let stop = crate::util::signal::stop_flag();
    let plan = settings(&args)?.plan().map_err(crate::cli::flags::llm)?;
    let progress = Progress::new(0, "{bar:30} {pos}/{len} requests, {msg}");
    let report = llm::measure(&plan, &progress, &stop).map_err(crate::cli::flags::llm)?;
    progress.finish();
    let written = args.output.outputs().emit(&report)?;
    if !written.is_empty() {
        eprintln!("Written: {}", super::qps::list(&written));
    }
    let bad = report.runs.is_empty() || report.runs.iter().any(|r| r.failed > 0 || !r.complete);
    Ok(if bad {
        Outcome::NotCompliant
    } else {
        Outcome::Ok
    })
}
