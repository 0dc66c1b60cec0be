//! §7.2.5: the highest QPS within the latency bound.

use super::*;

/// §7.2.5: the highest QPS within the bound.
pub(super) fn qps(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    match (&p.qps, &e.qps) {
        (None, _) => f.add(
            "§7.2.5",
            "QPS",
            "maximum queries per second within a response-time bound",
            "not measured",
            Verdict::NotApplicable,
            na("the profile sets no QPS requirement (no [qps] section)"),
            Source::Standard,
        ),
        (Some(q), None) => {
            f.add(
                "§7.2.5",
                "QPS",
                format!("max QPS within {} ≥ {} req/s", q.slo, q.min_qps),
                "not measured",
                Verdict::Fail,
                Some("the QPS stage did not produce a result".into()),
                Source::Profile,
            );
            f.reasons.push("QPS: not measured".into());
        }
        (Some(q), Some(m)) => {
            let ok = m.max_qps.is_some_and(|v| v >= q.min_qps);
            let measured = match (m.max_qps, m.best_step) {
                (Some(v), Some(k)) => {
                    let s = &m.steps[k];
                    format!(
                        "{v:.1} req/s (open loop, Poisson; offered {:.1} req/s; {}; {} failed of {})",
                        s.target,
                        s.slo_values
                            .iter()
                            .map(|(n, x)| format!(
                                "{n} {}",
                                x.map(|x| format!("{x:.2} ms"))
                                    .unwrap_or_else(|| "n/a".into())
                            ))
                            .collect::<Vec<_>>()
                            .join(", "),
                        s.failed,
                        s.sent
                    )
                }
                _ => m.max_qps_na.clone().unwrap_or_else(|| "n/a".into()),
            };
            let max = m
                .max_qps
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "n/a".into());
            f.add(
                "§7.2.5",
                "QPS",
                format!(
                    "max QPS within {} (error budget {}) ≥ {} req/s",
                    q.slo, q.error_budget, q.min_qps
                ),
                measured,
                if ok { Verdict::Pass } else { Verdict::Fail },
                (!ok).then(|| format!("max QPS {max} < {} req/s", q.min_qps)),
                Source::Profile,
            );
            if !ok {
                f.reasons.push(format!(
                    "QPS: {} achieved, {} req/s required",
                    m.max_qps
                        .map(|v| format!("{v:.1} req/s"))
                        .unwrap_or_else(|| "none".into()),
                    q.min_qps
                ));
            }
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn qps_over_the_bound_passes_under_fails_absent_is_not_applicable() {
        let (mut p, _, mut e) = fixture();
        assert_eq!(verdict(&qps(&p, &e), "QPS"), Verdict::Pass);
        p.qps.as_mut().unwrap().min_qps = 1e9;
        let f = qps(&p, &e);
        assert_eq!(verdict(&f, "QPS"), Verdict::Fail);
        assert!(!f.reasons.is_empty());
        e.qps = None;
        assert_eq!(verdict(&qps(&p, &e), "QPS"), Verdict::Fail);
        p.qps = None;
        assert_eq!(verdict(&qps(&p, &e), "QPS"), Verdict::NotApplicable);
    }
}
