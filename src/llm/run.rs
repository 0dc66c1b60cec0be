//! `acceval llm`'s runs: MindIE Benchmark's client mode on the load driver. Sends the
//! prompts to an LLM serving endpoint (closed loop at `--concurrency`, or open loop at each
//! `--request-rate` with at most `--concurrency` in flight), times every token-bearing event,
//! and turns the outcomes into MindIE's figures.
//!
//! Per request (MindIE's names, SPEC.md §7):
//! - FirstTokenTime: from the scheduled send (open loop; the actual send in a closed loop) to
//!   the first event that carries generated text;
//! - DecodeTime: each gap between successive token-bearing events;
//! - LastDecodeTime, MaxDecodeTime: the last and the largest of those gaps;
//! - GenerateTime: from the scheduled send to the end of the response;
//! - TPOT = (GenerateTime − FirstTokenTime) / (GeneratedTokens − 1);
//! - GeneratedTokens: the server's `usage` (or TGI's `details`) when given, else the client
//!   tokenizer's count, else the number of token-bearing events, and the report says which.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::generate::{Generate, Generation, StreamCaps};
use super::settings::LlmPlan;
use super::stats::mindie;
use crate::load::client::Client;
use crate::load::driver::{self, Driver, Outcome, Run, Until};
use crate::load::schedule::schedule;
use crate::report::schema::llm::{self as schema, MindieStat, Record, TokenSource};
pub use crate::report::schema::llm::{LlmReport, LlmRun};
use crate::report::schema::qps::FailureKind;
use crate::util::progress::Progress;

/// Runs the benchmark: the warm-up (not measured), then one run per request rate (or one
/// closed-loop run). Ctrl-C (`stop`) abandons the requests in flight as interrupted and
/// ends with the runs marked incomplete. Notes and a bar (one tick per request) go to
/// `progress`.
pub fn measure(
    plan: &LlmPlan,
    progress: &Progress,
    stop: &Arc<AtomicBool>,
) -> Result<LlmReport, super::Error> {
    let s = &plan.settings;
    if let Some(c) = plan.synthetic.as_ref().filter(|_| plan.default_synthetic) {
        progress.note(format!(
            "acceval llm: no synthetic configuration given: synthetic data from MindIE's sample synthetic_config.json {}",
            serde_json::to_string(c).map_err(super::Error::Body)?
        ));
    }
    if s.engine.is_some() {
        return super::engine::measure(plan, progress, stop);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(super::Error::Runtime)?;
    let runs = rt.block_on(async {
        let client = Client::new(&s.tls, s.max_connections, plan.checked.timeout)?;
        let caps = StreamCaps {
            max_event_bytes: plan.checked.max_event_bytes,
            max_error_bytes: plan.checked.max_error_bytes,
        };
        let endpoint = Generate::new(
            plan.checked.uri.clone(),
            s.api,
            s.stream,
            plan.bodies.clone(),
            caps,
            plan.tokenizer.is_some() || !plan.answers.is_empty(),
        );
        let d = Driver::new(
            client,
            endpoint,
            plan.checked.timeout,
            Arc::clone(stop),
            Some(progress.clone()),
        );
        warm_up(&d, plan, progress).await;
        let mut runs = Vec::new();
        let rates: Vec<Option<f64>> = if s.request_rate.is_empty() {
            vec![None]
        } else {
            s.request_rate.iter().map(|&r| Some(r)).collect()
        };
        for rate in rates {
            if d.stopped() {
                break;
            }
            let run = one_run(&d, plan, rate, progress).await;
            progress.note(crate::report::llm::run_line(&run));
            runs.push(run);
        }
        Ok::<_, super::Error>(runs)
    })?;
    Ok(report(plan, runs, None))
}

/// The report of `runs` (`engine`: how engine mode ran, None in client mode).
pub(super) fn report(plan: &LlmPlan, runs: Vec<LlmRun>, engine: Option<String>) -> LlmReport {
    let s = &plan.settings;
    LlmReport {
        schema: schema::SCHEMA.into(),
        url: plan.checked.base.clone(),
        model: s.model.clone(),
        api: s.api,
        stream: s.stream,
        engine,
        data_source: plan.data_source.clone(),
        synthetic_config: plan.synthetic.clone(),
        warmup: s.warmup,
        slo: plan.checked.slo.clone(),
        runs,
        definitions: schema::definitions(),
    }
}

/// `--warmup` requests at `--concurrency`, not measured; a note when some fail.
async fn warm_up(d: &Driver<Generate>, plan: &LlmPlan, progress: &Progress) {
    let n = plan.settings.warmup;
    if n == 0 {
        return;
    }
    progress.note(format!("acceval llm: {n} warm-up requests (not measured)"));
    progress.set_length(n as u64);
    progress.set_position(0);
    let w = d.closed(plan.settings.concurrency, Until::Count(n)).await;
    let failed: Vec<&driver::Failure> =
        w.outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    if let Some(f) = failed.first() {
        progress.note(format!(
            "acceval llm: warning: {} of {} warm-up requests failed: {}: {}",
            failed.len(),
            w.outcomes.len(),
            f.kind,
            f.message
        ));
    }
}

/// One measured run: closed loop at `--concurrency`, or open loop at `rate`.
async fn one_run(
    d: &Driver<Generate>,
    plan: &LlmPlan,
    rate: Option<f64>,
    progress: &Progress,
) -> LlmRun {
    let s = &plan.settings;
    progress.set_length(plan.total as u64);
    progress.set_position(0);
    progress.set_message(match rate {
        Some(r) => format!("rate {r} req/s"),
        None => format!("concurrency {}", s.concurrency),
    });
    let run = match rate {
        None => d.closed(s.concurrency, Until::Count(plan.total)).await,
        Some(r) => {
            let offsets = schedule(s.distribution, r, plan.total, s.seed);
            d.open(offsets.into(), s.concurrency).await
        }
    };
    summarise(plan, run, rate)
}

/// A run's outcomes as records, with MindIE's figures.
fn summarise(plan: &LlmPlan, run: Run<Generation>, rate: Option<f64>) -> LlmRun {
    let records: Vec<Record> = run.outcomes.into_iter().map(|o| record(plan, o)).collect();
    summarise_records(plan, records, run.elapsed, run.interrupted, rate)
}

/// MindIE's figures of a run's records (client or engine mode).
pub(super) fn summarise_records(
    plan: &LlmPlan,
    records: Vec<Record>,
    elapsed: Duration,
    interrupted: bool,
    rate: Option<f64>,
) -> LlmRun {
    let s = &plan.settings;
    let ok: Vec<&Record> = records.iter().filter(|r| r.ok).collect();
    let mut failures = BTreeMap::new();
    for k in records.iter().filter_map(|r| r.failure) {
        *failures.entry(k).or_insert(0) += 1;
    }
    // MindIE's Returned: requests that got a response, empty or not.
    let returned = records
        .iter()
        .filter(|r| r.ok || r.failure.is_some_and(FailureKind::returned))
        .count();
    let metrics = metrics(&ok);
    let elapsed = elapsed.as_secs_f64().max(1e-9);
    let gen_tok: Vec<u64> = ok.iter().filter_map(|r| r.generated_tokens).collect();
    let total_tokens = gen_tok.iter().sum::<u64>() as f64;
    let total_chars = ok.iter().map(|r| r.generated_characters).sum::<u64>() as f64;
    let mut token_sources = BTreeMap::new();
    for r in &ok {
        *token_sources.entry(r.token_source).or_insert(0) += 1;
    }
    let generate_speed =
        (gen_tok.len() == ok.len() && !ok.is_empty()).then(|| total_tokens / elapsed);
    let mut input_token_sources = BTreeMap::new();
    for r in &ok {
        *input_token_sources.entry(r.input_token_source).or_insert(0) += 1;
    }
    // lpct only from counted input tokens: a requested synthetic length is not a count.
    let (ftt, inp): (f64, f64) = ok
        .iter()
        .filter(|r| {
            !matches!(
                r.input_token_source,
                TokenSource::Requested | TokenSource::None
            )
        })
        .filter_map(|r| Some((r.first_token_ms?, r.input_tokens? as f64)))
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    let slo = &plan.checked.slo;
    let goodput = (!slo.is_empty()).then(|| {
        let good = ok
            .iter()
            .filter(|r| {
                slo.iter()
                    .all(|&(m, lim)| r.goodput_value(m).is_some_and(|v| v <= lim))
            })
            .count();
        good as f64 / elapsed
    });
    LlmRun {
        current_time: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        concurrency: s.concurrency,
        request_rate: rate,
        distribution: rate.map(|_| s.distribution),
        time_elapsed_s: elapsed,
        total: plan.total,
        returned,
        // Requests never sent (Ctrl-C) failed too.
        failed: records.len() - ok.len() + plan.total.saturating_sub(records.len()),
        failures,
        throughput: ok.len() as f64 / elapsed,
        generate_speed,
        generate_speed_per_client: generate_speed.map(|g| g / s.concurrency as f64),
        lpct: (inp > 0.0).then(|| ftt / inp),
        goodput,
        token_sources,
        input_token_sources,
        metrics,
        characters_per_token: (total_tokens > 0.0).then(|| total_chars / total_tokens),
        accuracy: accuracy(plan, &records),
        complete: !interrupted,
        records,
    }
}

/// Accuracy mode's score over every request of the run (a failed one is wrong).
fn accuracy(plan: &LlmPlan, records: &[Record]) -> Option<schema::AccuracyResult> {
    if plan.answers.is_empty() {
        return None;
    }
    let correct = records.iter().filter(|r| r.correct == Some(true)).count();
    let n = records.len();
    let rule = match plan.settings.dataset {
        super::Dataset::Mmlu(_) => {
            "MMLU 5-shot: the letter the output chooses equals the answer letter"
        }
        _ => "GSM8K: the output's final number equals the number after '####' in the answer",
    };
    Some(schema::AccuracyResult {
        dataset: plan.settings.dataset.kind().to_string(),
        correct,
        n,
        accuracy: super::accuracy::summary(correct, n)?,
        rule: rule.to_string(),
    })
}

/// MindIE's statistics of each metric over the successful requests.
fn metrics(ok: &[&Record]) -> BTreeMap<String, Option<MindieStat>> {
    let per = |f: &dyn Fn(&Record) -> Option<f64>| -> Vec<f64> {
        ok.iter().filter_map(|r| f(r)).collect()
    };
    let same = |v: Vec<f64>| mindie(&v, &v);
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: Option<MindieStat>| {
        m.insert(k.to_string(), v);
    };
    put("FirstTokenTime", same(per(&|r| r.first_token_ms)));
    put("DecodeTime", pooled_with_means(ok, |r| &r.decode_ms));
    put(
        "LastDecodeTime",
        same(per(&|r| r.decode_ms.last().copied())),
    );
    put(
        "MaxDecodeTime",
        same(per(&|r| r.decode_ms.iter().copied().reduce(f64::max))),
    );
    put("GenerateTime", same(per(&|r| Some(r.generate_ms))));
    put("TPOT", same(per(&|r| r.tpot_ms())));
    put(
        "InputTokens",
        same(per(&|r| r.input_tokens.map(|x| x as f64))),
    );
    put(
        "GeneratedTokens",
        same(per(&|r| r.generated_tokens.map(|x| x as f64))),
    );
    put("GeneratedTokenSpeed", same(per(&|r| r.speed())));
    put(
        "GeneratedCharacters",
        same(per(&|r| Some(r.generated_characters as f64))),
    );
    put("Tokenizer", same(per(&|r| r.tokenizer_ms)));
    put("Detokenizer", same(per(&|r| r.detokenizer_ms)));
    put("ForwardTime", pooled_with_means(ok, |r| &r.forward_ms));
    put(
        "PostProcessingTime",
        pooled_with_means(ok, |r| &r.post_processing_ms),
    );
    put("PrefillBatchsize", same(per(&|r| r.prefill_batch_size)));
    put(
        "DecoderBatchsize",
        pooled_with_means(ok, |r| &r.decode_batch_sizes),
    );
    put("QueueWaitTime", pooled_with_means(ok, |r| &r.queue_wait_us));
    m
}

/// MindIE's statistics of a per-token figure: pooled over all requests, SLO_P90 over each
/// request's mean.
fn pooled_with_means(ok: &[&Record], f: impl Fn(&Record) -> &Vec<f64>) -> Option<MindieStat> {
    let pooled: Vec<f64> = ok.iter().flat_map(|r| f(r).iter().copied()).collect();
    let means: Vec<f64> = ok
        .iter()
        .map(|r| f(r))
        .filter(|v| !v.is_empty())
        .map(|v| v.iter().sum::<f64>() / v.len() as f64)
        .collect();
    mindie(&pooled, &means)
}

/// One outcome as a record; token counts from the server, else the tokenizer, else events.
fn record(plan: &LlmPlan, o: Outcome<Generation>) -> Record {
    let t = *driver::timing(&o);
    let ms = |d: Duration| driver::ms(d);
    let mut r = Record {
        generate_ms: ms(t.latency()),
        ..Record::new(
            t.index,
            t.sent.unwrap_or(t.scheduled).as_secs_f64(),
            ms(t.send_lag()),
        )
    };
    let g = match o {
        Err(f) => return failed(r, f.kind, &f.message),
        Ok(s) => s.output,
    };
    r.first_token_ms = g
        .token_at
        .first()
        .map(|&a| ms(a.saturating_sub(t.scheduled)));
    r.decode_ms = g
        .token_at
        .windows(2)
        .map(|w| ms(w[1].saturating_sub(w[0])))
        .collect();
    r.token_events = g.token_at.len() as u64;
    r.generated_characters = g.generated_characters;
    r.prefill_batch_size = g.prefill_batch_size;
    r.decode_batch_sizes = g.decode_batch_sizes;
    r.queue_wait_us = g.queue_wait_us;
    let server_input = if plan.settings.api == crate::protocol::generate::Api::Tgi {
        TokenSource::Details
    } else {
        TokenSource::Usage
    };
    let prompt = t.index % plan.prompts.len().max(1);
    (r.input_tokens, r.input_token_source) = match g.input_tokens {
        Some(n) => (Some(n), server_input),
        None => match plan.input_tokens.get(prompt).copied().flatten() {
            Some((n, s)) => (Some(n), s),
            None => (None, TokenSource::None),
        },
    };
    // The client-side tokenizer timings (MindIE's Tokenizer and Detokenizer rows), taken
    // here, after the run, so they never delay a request.
    let mut output_ids = None;
    if let Some(tok) = &plan.tokenizer {
        if let Some(p) = plan.prompts.get(prompt) {
            let t0 = Instant::now();
            let e = tok.encode(p.as_str(), true);
            r.tokenizer_ms = e.is_ok().then(|| ms(t0.elapsed()));
        }
        if !g.text.is_empty() {
            match tok.encode(g.text.as_str(), false) {
                Ok(e) => {
                    let t0 = Instant::now();
                    let d = tok.decode(e.get_ids(), true);
                    r.detokenizer_ms = d.is_ok().then(|| ms(t0.elapsed()));
                    output_ids = Some(e.len() as u64);
                }
                Err(e) => {
                    return failed(
                        r,
                        FailureKind::Tokenizer,
                        &format!("cannot encode the output: {e}"),
                    );
                }
            }
        }
    }
    match (g.generated_tokens, output_ids) {
        (Some((n, source)), _) => (r.generated_tokens, r.token_source) = (Some(n), source),
        (None, Some(n)) => (r.generated_tokens, r.token_source) = (Some(n), TokenSource::Tokenizer),
        _ => (r.generated_tokens, r.token_source) = (Some(r.token_events), TokenSource::Events),
    }
    if let Some(right) = plan.answers.get(prompt) {
        let (answer, ok) = right.score(&g.text);
        (r.answer, r.correct) = (answer, Some(ok));
    }
    r.ok = true;
    r
}

fn failed(mut r: Record, kind: FailureKind, message: &str) -> Record {
    r.ok = false;
    r.failure = Some(kind);
    r.error = Some(format!("{kind}: {message}"));
    r
}
