//! Views of an `llm` result: MindIE's two tables in the terminal, result_perf.csv,
//! result_common.csv and the per-request CSV.

use std::fmt::Write as _;
use std::io::Write;

use super::{right, table};
use crate::llm::run::{LlmReport, LlmRun};

/// The metrics in MindIE's order, with their units.
pub const ORDER: &[(&str, &str)] = &[
    ("FirstTokenTime", "ms"),
    ("DecodeTime", "ms"),
    ("LastDecodeTime", "ms"),
    ("MaxDecodeTime", "ms"),
    ("GenerateTime", "ms"),
    ("TPOT", "ms"),
    ("InputTokens", "token"),
    ("GeneratedTokens", "token"),
    ("GeneratedTokenSpeed", "token/s"),
    ("GeneratedCharacters", "char"),
];

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

pub fn write_text(o: &mut impl Write, r: &LlmReport) -> std::io::Result<()> {
    writeln!(
        o,
        "LLM serving benchmark of {} ({}, model {}, {}), data: {}, warm-up {}",
        r.url,
        serde_json::to_value(r.api)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        r.model,
        if r.stream {
            "streaming"
        } else {
            "not streaming"
        },
        r.data_source,
        r.warmup
    )?;
    for run in &r.runs {
        writeln!(
            o,
            "\n{}",
            match run.request_rate {
                Some(rate) => format!(
                    "Request rate {rate} req/s ({:?} arrivals), at most {} in flight",
                    run.distribution.unwrap_or(crate::cli::Arrival::Poisson),
                    run.concurrency
                )
                .to_lowercase(),
                None => format!("Concurrency {}", run.concurrency),
            }
        )?;
        let mut t = table(&[
            "Metric", "average", "max", "min", "P75", "P90", "SLO_P90", "P99", "N", "unit",
        ]);
        for (name, unit) in ORDER {
            match run.metrics.get(name).and_then(|m| m.as_ref()) {
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
                    "n/a: no sample".into(),
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
        ("lpct (ms)", opt(run.lpct, "no input token count")),
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
        ("Goodput (req/s)", opt(run.goodput, "no --slo given")),
        (
            "CharactersPerToken",
            opt(run.characters_per_token, "no token"),
        ),
        (
            "token counts from",
            run.token_sources
                .iter()
                .map(|(k, v)| format!("{k}: {v} requests"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("accuracy", "n/a: not measured (performance run)".into()),
    ]
}

/// MindIE's result_perf.csv (one row per metric) with a unit column after N.
pub fn perf_csv(run: &LlmRun) -> String {
    let mut o = String::from("Metric,average,max,min,P75,P90,SLO_P90,P99,N,unit\n");
    for (name, unit) in ORDER {
        match run.metrics.get(name).and_then(|m| m.as_ref()) {
            Some(m) => {
                let _ = writeln!(
                    o,
                    "{name},{},{},{},{},{},{},{},{},{unit}",
                    m.average, m.max, m.min, m.P75, m.P90, m.SLO_P90, m.P99, m.N
                );
            }
            None => {
                let _ = writeln!(o, "{name},,,,,,,,0,{unit}");
            }
        }
    }
    o
}

/// MindIE's result_common.csv: one row per run.
pub fn common_csv(r: &LlmReport) -> String {
    let mut o = String::from(
        "CurrentTime,TimeElapsed,DataSource,Failed,Returned,Total,Concurrency,RequestRate,ModelName,lpct,Throughput,GenerateSpeed,GenerateSpeedPerClient,Goodput,CharactersPerToken,accuracy\n",
    );
    let n = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for run in &r.runs {
        let _ = writeln!(
            o,
            "{},{},\"{}\",{},{},{},{},{},{},{},{},{},{},{},{},",
            run.current_time,
            run.time_elapsed_s,
            r.data_source.replace('"', "'"),
            run.failed,
            run.returned,
            run.total,
            run.concurrency,
            n(run.request_rate),
            r.model,
            n(run.lpct),
            run.throughput,
            n(run.generate_speed),
            n(run.generate_speed_per_client),
            n(run.goodput),
            n(run.characters_per_token)
        );
    }
    o
}

/// One row per request.
pub fn requests_csv(run: &LlmRun) -> String {
    let mut o = String::from(
        "index,ok,sent_s,first_token_ms,decode_count,decode_mean_ms,last_decode_ms,max_decode_ms,generate_ms,tpot_ms,input_tokens,generated_tokens,token_source,generated_characters,error\n",
    );
    let n = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_default();
    for r in &run.records {
        let mean = (!r.decode_ms.is_empty())
            .then(|| r.decode_ms.iter().sum::<f64>() / r.decode_ms.len() as f64);
        let _ = writeln!(
            o,
            "{},{},{:.6},{},{},{},{},{},{:.6},{},{},{},{},{},\"{}\"",
            r.index,
            r.ok,
            r.sent_s,
            n(r.first_token_ms),
            r.decode_ms.len(),
            n(mean),
            n(r.decode_ms.last().copied()),
            n(r.decode_ms.iter().copied().reduce(f64::max)),
            r.generate_ms,
            n(r.tpot_ms()),
            r.input_tokens.map(|x| x.to_string()).unwrap_or_default(),
            r.generated_tokens
                .map(|x| x.to_string())
                .unwrap_or_default(),
            r.token_source,
            r.generated_characters,
            r.error.as_deref().unwrap_or("").replace('"', "'")
        );
    }
    o
}
