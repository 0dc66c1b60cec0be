//! LLM serving (MindIE Benchmark's client mode) on the profile's thresholds.

use super::*;

/// LLM serving (MindIE Benchmark, SPEC §7): only when the profile has an [llm] stage.
pub(super) fn llm(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(l) = &p.llm else { return f };
    let mut req = Vec::new();
    let mut bad = Vec::new();
    let measured = match e.llm.as_ref().and_then(|x| x.runs.first()) {
        None => {
            bad.push("not measured".to_string());
            "not measured".to_string()
        }
        Some(run) => {
            let slo90 = |m: &str| {
                run.metrics
                    .get(m)
                    .and_then(|s| s.as_ref())
                    .map(|s| s.SLO_P90)
            };
            // (figure, the profile's bound, the measured value, bound is an upper one, unit)
            type Check<'a> = (&'a str, Option<f64>, Option<f64>, bool, &'a str);
            let checks: [Check; 4] = [
                (
                    "FirstTokenTime SLO_P90",
                    l.max_first_token_ms,
                    slo90("FirstTokenTime"),
                    true,
                    "ms",
                ),
                ("TPOT SLO_P90", l.max_tpot_ms, slo90("TPOT"), true, "ms"),
                (
                    "Throughput",
                    l.min_throughput,
                    Some(run.throughput),
                    false,
                    "req/s",
                ),
                (
                    "GenerateSpeed",
                    l.min_generate_speed,
                    run.generate_speed,
                    false,
                    "token/s",
                ),
            ];
            for (name, limit, value, upper, unit) in checks {
                let Some(limit) = limit else { continue };
                req.push(format!(
                    "{name} {} {limit} {unit}",
                    if upper { "≤" } else { "≥" }
                ));
                match value {
                    Some(v) if (upper && v <= limit) || (!upper && v >= limit) => {}
                    Some(v) => bad.push(format!("{name} {v:.3} {unit}")),
                    None => bad.push(format!("{name} n/a")),
                }
            }
            if run.failed > 0 {
                bad.push(format!("{} of {} requests failed", run.failed, run.total));
            }
            format!(
                "Throughput {:.3} req/s, GenerateSpeed {}, FirstTokenTime SLO_P90 {}, TPOT SLO_P90 {}; {} failed of {}",
                run.throughput,
                run.generate_speed
                    .map(|v| format!("{v:.1} token/s"))
                    .unwrap_or_else(|| "n/a".into()),
                opt(slo90("FirstTokenTime"), " ms"),
                opt(slo90("TPOT"), " ms"),
                run.failed,
                run.total
            )
        }
    };
    req.push("no failed request".into());
    let ok = bad.is_empty();
    f.add(
        "SPEC §7",
        "LLM serving (MindIE Benchmark)",
        format!(
            "{} at concurrency {} ({})",
            req.join(", "),
            l.concurrency,
            l.model
        ),
        measured,
        if ok { Verdict::Pass } else { Verdict::Fail },
        (!ok).then(|| bad.join("; ")),
        Source::Profile,
    );
    if !ok {
        f.reasons.push(format!("LLM serving: {}", bad.join("; ")));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn an_llm_stage_not_measured_fails_and_no_stage_says_nothing() {
        let (mut p, _, e) = fixture();
        assert!(llm(&p, &e).clauses.is_empty());
        p.llm = Some(
            toml::from_str(
                "url = \"http://127.0.0.1:1\"\nmodel = \"m\"\nsynthetic_config = \"s.json\"\nmax_tpot_ms = 10.0\n",
            )
            .unwrap(),
        );
        let f = llm(&p, &e);
        assert_eq!(verdict(&f, "LLM serving (MindIE Benchmark)"), Verdict::Fail);
        assert!(!f.reasons.is_empty());
    }
}
