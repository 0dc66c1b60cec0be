//! Views of an `llm` result: MindIE's two tables in the terminal, the line noted after each
//! run, result_perf.csv, result_common.csv and the per-request CSV (as `Table`s); and
//! [`Document`] for [`LlmReport`], so `llm` emits through `report::export::Outputs`.

use std::io::Write;

use super::export::{Document, Table};
use super::schema::llm::{LlmReport, LlmRun};
use super::{right, table};

/// The metrics in MindIE's order, with their units.
pub const ORDER: &[(&str, &str)] = super::schema::llm::METRICS;

fn f(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else {
        format!("{v:.4}")
    }
}

fn opt(v: Option<f64>, why: &str) -> String {
    v.map(f).unwrap_or_else(|| format!("n/a: {why}"))
}

pub fn write_text(o: &mut dyn Write, r: &LlmReport) -> std::io::Result<()> {
    if let Some(e) = &r.engine {
        writeln!(
            o,
            "LLM engine benchmark (MindIE's engine mode) of {}, data: {}, warm-up {}\nengine: {e}",
            r.model, r.data_source, r.warmup
        )?;
    } else {
        writeln!(
            o,
            "LLM serving benchmark of {} ({}, model {}, {}), data: {}, warm-up {}",
            r.url,
            r.api,
            r.model,
            if r.stream {
                "streaming"
            } else {
                "not streaming"
            },
            r.data_source,
            r.warmup
        )?;
    }
    for run in &r.runs {
        writeln!(
            o,
            "\n{}",
            match run.request_rate {
                Some(rate) => format!(
                    "Request rate {rate} req/s ({} arrivals), at most {} in flight",
                    run.distribution
                        .map(|d| d.to_string())
                        .unwrap_or_else(|| "poisson".into()),
                    run.concurrency
                ),
                None => format!("Concurrency {}", run.concurrency),
            }
        )?;
        let mut t = table(&[
            "Metric", "average", "max", "min", "P75", "P90", "SLO_P90", "P99", "N", "unit",
        ]);
        for (name, unit) in ORDER {
            match run.metrics.get(*name).and_then(|m| m.as_ref()) {
                Some(m) => t.add_row(vec![
                    name.to_string(),
                    f(m.average),
                    f(m.max),
                    f(m.min),
                    f(m.P75),
                    f(m.P90),
                    f(m.SLO_P90),
                    f(m.P99),
                    m.N.to_string(),
                    unit.to_string(),
                ]),
                None => t.add_row(vec![
                    name.to_string(),
                    format!(
                        "n/a: {}",
                        super::schema::llm::why_missing(name, r.engine.is_some())
                    ),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "0".into(),
                    unit.to_string(),
                ]),
            };
        }
        right(&mut t, &[1, 2, 3, 4, 5, 6, 7, 8]);
        writeln!(o, "{t}")?;
        let mut c = table(&["figure", "value"]);
        for (k, v) in common_fields(r, run) {
            c.add_row(vec![k.to_string(), v]);
        }
        writeln!(o, "{c}")?;
        let examples: Vec<String> = run
            .records
            .iter()
            .filter_map(|x| x.error.clone())
            .take(3)
            .collect();
        for e in examples {
            writeln!(o, "  failed: {e}")?;
        }
    }
    Ok(())
}

fn common_fields(r: &LlmReport, run: &LlmRun) -> Vec<(&'static str, String)> {
    vec![
        ("CurrentTime", run.current_time.clone()),
        ("TimeElapsed (s)", format!("{:.4}", run.time_elapsed_s)),
        ("DataSource", r.data_source.clone()),
        (
            "Failed",
            format!(
                "{}{}",
                run.failed,
                if run.failures.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({})",
                        run.failures
                            .iter()
                            .map(|(k, v)| format!("{k} {v}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ),
        ),
        ("Returned", run.returned.to_string()),
        ("Total", run.total.to_string()),
        ("Concurrency", run.concurrency.to_string()),
        ("ModelName", r.model.clone()),
        (
            "lpct (ms)",
            opt(
                run.lpct,
                "no counted input tokens (neither server usage nor a tokenizer; the requested synthetic lengths are not counts)",
            ),
        ),
        ("Throughput (req/s)", format!("{:.4}", run.throughput)),
        (
            "GenerateSpeed (token/s)",
            opt(
                run.generate_speed,
                "a successful request has no token count",
            ),
        ),
        (
            "GenerateSpeedPerClient (token/s)",
            opt(run.generate_speed_per_client, "no GenerateSpeed"),
        ),
        ("Goodput (req/s)", opt(run.goodput, "no SLO given")),
        (
            "CharactersPerToken",
            opt(run.characters_per_token, "no token"),
        ),
        ("generated token counts from", sources(&run.token_sources)),
        ("input token counts from", sources(&run.input_token_sources)),
        (
            "accuracy",
            match &run.accuracy {
                Some(a) => format!(
                    "{:.4} ({} of {} right, {}; {})",
                    a.accuracy, a.correct, a.n, a.dataset, a.rule
                ),
                None => "n/a: not measured (performance run; --test-accuracy scores gsm8k and mmlu datasets)".into(),
            },
        ),
    ]
}

/// `usage: 3 requests, tokenizer: 1 requests`.
fn sources(m: &std::collections::BTreeMap<super::schema::llm::TokenSource, u64>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}: {v} requests"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The line noted after each run.
pub fn run_line(run: &LlmRun) -> String {
    format!(
        "acceval llm: {}: {} of {} returned, {} failed, {:.2} req/s",
        run.request_rate
            .map(|r| format!("rate {r} req/s"))
            .unwrap_or_else(|| format!("concurrency {}", run.concurrency)),
        run.returned,
        run.total,
        run.failed,
        run.throughput
    )
}

/// MindIE's result_perf.csv (one row per metric) with a unit column after N, named `file`.
pub fn perf(run: &LlmRun, file: &str) -> Table {
    let mut t = Table::new(
        file,
        &[
            "Metric", "average", "max", "min", "P75", "P90", "SLO_P90", "P99", "N", "unit",
        ],
    );
    for (name, unit) in ORDER {
        let row = match run.metrics.get(*name).and_then(|m| m.as_ref()) {
            Some(m) => [m.average, m.max, m.min, m.P75, m.P90, m.SLO_P90, m.P99]
                .iter()
                .map(|v| v.to_string())
                .chain([m.N.to_string()])
                .collect(),
            None => {
                let mut v = vec![String::new(); 7];
                v.push("0".into());
                v
            }
        };
        let mut cells = vec![name.to_string()];
        cells.extend(row);
        cells.push(unit.to_string());
        t.push(cells);
    }
    t
}

/// result_perf.csv as text.
pub fn perf_csv(run: &LlmRun) -> String {
    String::from_utf8_lossy(&perf(run, "result_perf.csv").to_csv()).into_owned()
}

/// MindIE's result_common.csv: one row per run.
pub fn common(r: &LlmReport) -> Table {
    let mut t = Table::new(
        "result_common.csv",
        &[
            "CurrentTime",
            "TimeElapsed",
            "DataSource",
            "Failed",
            "Returned",
            "Total",
            "Concurrency",
            "RequestRate",
            "ModelName",
            "lpct",
            "Throughput",
            "GenerateSpeed",
            "GenerateSpeedPerClient",
            "Goodput",
            "CharactersPerToken",
            "accuracy",
        ],
    );
    let n = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for run in &r.runs {
        t.push(vec![
            run.current_time.clone(),
            run.time_elapsed_s.to_string(),
            r.data_source.clone(),
            run.failed.to_string(),
            run.returned.to_string(),
            run.total.to_string(),
            run.concurrency.to_string(),
            n(run.request_rate),
            r.model.clone(),
            n(run.lpct),
            run.throughput.to_string(),
            n(run.generate_speed),
            n(run.generate_speed_per_client),
            n(run.goodput),
            n(run.characters_per_token),
            n(run.accuracy.as_ref().map(|a| a.accuracy)),
        ]);
    }
    t
}

/// result_common.csv as text.
pub fn common_csv(r: &LlmReport) -> String {
    String::from_utf8_lossy(&common(r).to_csv()).into_owned()
}

/// One row per request, named `file`.
pub fn requests(run: &LlmRun, file: &str) -> Table {
    let mut t = Table::new(
        file,
        &[
            "index",
            "ok",
            "sent_s",
            "first_token_ms",
            "decode_count",
            "decode_mean_ms",
            "last_decode_ms",
            "max_decode_ms",
            "generate_ms",
            "tpot_ms",
            "input_tokens",
            "input_token_source",
            "generated_tokens",
            "token_source",
            "generated_characters",
            "tokenizer_ms",
            "detokenizer_ms",
            "prefill_batch_size",
            "decode_batch_size_mean",
            "queue_wait_us_mean",
            "answer",
            "correct",
            "error",
        ],
    );
    let n = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_default();
    let u = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in &run.records {
        let mean = mean_of(&r.decode_ms);
        t.push(vec![
            r.index.to_string(),
            r.ok.to_string(),
            format!("{:.6}", r.sent_s),
            n(r.first_token_ms),
            r.decode_ms.len().to_string(),
            n(mean),
            n(r.decode_ms.last().copied()),
            n(r.decode_ms.iter().copied().reduce(f64::max)),
            format!("{:.6}", r.generate_ms),
            n(r.tpot_ms()),
            u(r.input_tokens),
            r.input_token_source.to_string(),
            u(r.generated_tokens),
            r.token_source.to_string(),
            r.generated_characters.to_string(),
            n(r.tokenizer_ms),
            n(r.detokenizer_ms),
            n(r.prefill_batch_size),
            n(mean_of(&r.decode_batch_sizes)),
            n(mean_of(&r.queue_wait_us)),
            r.answer.clone().unwrap_or_default(),
            r.correct.map(|c| c.to_string()).unwrap_or_default(),
            r.error.clone().unwrap_or_default(),
        ]);
    }
    t
}

fn mean_of(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The file-name suffix of run `k` when a report has several (`_rate-2`, `_run-1`).
fn run_suffix(r: &LlmReport, k: usize) -> String {
    if r.runs.len() == 1 {
        return String::new();
    }
    match r.runs[k].request_rate {
        Some(rate) => format!("_rate-{rate}"),
        None => format!("_run-{k}"),
    }
}

impl Document for LlmReport {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_text(o, self)
    }
    /// result_common.csv (all runs; what `--export-csv` writes), then per run
    /// result_perf.csv and requests.csv (`result_perf_rate-2.csv`, ... with several).
    fn tables(&self) -> Vec<Table> {
        let mut v = vec![common(self)];
        for (k, run) in self.runs.iter().enumerate() {
            let sfx = run_suffix(self, k);
            v.push(perf(run, &format!("result_perf{sfx}.csv")));
            v.push(requests(run, &format!("requests{sfx}.csv")));
        }
        v
    }
}
