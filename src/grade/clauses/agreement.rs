//! §6.2 i: task agreement with the reference's decisions, on the profile's thresholds.

use super::*;

/// The profile's task-agreement checks of one precision: (what, threshold, measured, met).
pub(super) fn agreement_checks(
    p: &Profile,
    a: &AccuracyReport,
) -> Vec<(String, Option<f64>, bool)> {
    let s = &p.accuracy;
    let g = &a.agreement;
    let pct = |v: f64| format!("{:.1} %", v * 100.0);
    let mut out = Vec::new();
    let mut at_least = |name: &str, min: Option<f64>, v: Option<f64>| {
        if let Some(min) = min {
            out.push((
                format!(
                    "{name} ≥ {} (measured {})",
                    pct(min),
                    v.map(pct).unwrap_or_else(|| "n/a".into())
                ),
                v,
                v.is_some_and(|v| v >= min),
            ));
        }
    };
    at_least(
        "top-1 agreement",
        s.min_top1,
        g.fraction().filter(|_| g.top5().is_some()),
    );
    at_least("top-5 agreement", s.min_top5, g.top5());
    at_least("detection F1", s.min_f1, g.f1());
    for (name, max, v) in [
        ("MAE", s.max_mae, g.mae()),
        ("MAPE %", s.max_mape_pct, g.mape_pct()),
    ] {
        if let Some(max) = max {
            out.push((
                format!(
                    "{name} ≤ {max} (measured {})",
                    v.map(|v| format!("{v:.4}")).unwrap_or_else(|| "n/a".into())
                ),
                v,
                v.is_some_and(|v| v <= max),
            ));
        }
    }
    out
}

/// Task agreement with the reference, per graded precision: the profile's thresholds.
pub(super) fn agreement(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    for a in &e.accuracy {
        let prec = a.precision.map(|x| x.to_string()).unwrap_or_default();
        let checks = agreement_checks(p, a);
        if checks.is_empty() {
            f.add(
                "§6.2 i",
                "Task agreement",
                format!("{prec}: agreement with the reference's decisions (no profile threshold)"),
                a.agreement_text.clone(),
                Verdict::NotApplicable,
                na("the profile sets no agreement threshold"),
                Source::ReportOnly,
            );
            continue;
        }
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| !c.2)
            .map(|c| c.0.as_str())
            .collect();
        if !failed.is_empty() {
            f.reasons
                .push(format!("task agreement {prec}: {}", failed.join("; ")));
        }
        f.add(
            "§6.2 i",
            "Task agreement",
            format!(
                "{prec}: {}",
                checks
                    .iter()
                    .map(|c| c.0.split(" (measured").next().unwrap_or(""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            a.agreement_text.clone(),
            if failed.is_empty() {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            (!failed.is_empty()).then(|| failed.join("; ")),
            Source::Profile,
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn thresholds_met_pass_missed_fail_absent_not_applicable() {
        let (mut p, _, e) = fixture();
        assert_eq!(
            verdicts(&agreement(&p, &e), "Task agreement"),
            vec![Verdict::Pass; 3]
        );
        // A MAPE bound below what every precision measured.
        p.accuracy.max_mape_pct = Some(0.0);
        let f = agreement(&p, &e);
        assert!(
            verdicts(&f, "Task agreement").contains(&Verdict::Fail),
            "{:?}",
            f.reasons
        );
        assert!(!f.reasons.is_empty());
        p.accuracy.max_mape_pct = None;
        p.accuracy.max_mae = None;
        assert_eq!(
            verdicts(&agreement(&p, &e), "Task agreement"),
            vec![Verdict::NotApplicable; 3]
        );
    }
}
