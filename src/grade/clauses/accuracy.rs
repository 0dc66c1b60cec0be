//! §6.2 i: accuracy per graded precision (Table 3 against Table 4), against a reference null outputs fail.

use super::*;

/// The clause of one graded precision: PASS only when the grade passed, its reference can
/// tell a broken device from a working one, and the reference is independent of the engine.
pub(super) fn accuracy_verdict(a: &AccuracyReport) -> (String, Verdict, Option<String>) {
    let level = a
        .level
        .map(|l| l.to_string())
        .unwrap_or_else(|| "below C1".into());
    let measured = format!(
        "MSE {} (output '{}') → {level}; decision: {}",
        sci(a.mse),
        a.worst_output,
        a.agreement_text
    );
    match a.verdict {
        Some(Verdict::Pass) if a.independence.independent => (measured, Verdict::Pass, None),
        Some(Verdict::Pass) => (
            measured,
            Verdict::Invalid,
            Some(format!(
                "reference not independent: {}",
                a.independence.reason
            )),
        ),
        Some(Verdict::Invalid) => (measured, Verdict::Invalid, a.verdict_reason.clone()),
        _ => (
            format!("MSE {} → {level}", sci(a.mse)),
            Verdict::Fail,
            a.verdict_reason.clone().or(a.error.clone()),
        ),
    }
}

/// §6.2 i: Table 3 against Table 4, per graded precision.
pub(super) fn accuracy(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    for &prec in &p.model.precisions {
        let a = graded(e, prec);
        let err = e.accuracy_errors.iter().find(|x| x.precision == prec);
        let (measured, verdict, reason) = match (a, err) {
            (Some(a), _) => accuracy_verdict(a),
            (None, Some(x)) => ("not measured".into(), Verdict::Fail, Some(x.error.clone())),
            (None, None) => (
                "not measured".into(),
                Verdict::Fail,
                na("the accuracy stage did not run"),
            ),
        };
        if verdict != Verdict::Pass {
            f.reasons.push(format!(
                "accuracy {}: {}",
                prec,
                reason
                    .clone()
                    .unwrap_or_else(|| "below the required level".into())
            ));
        }
        f.add(
            "§6.2 i",
            "Accuracy (Table 3)",
            format!(
                "{}: Table 3 level {} or stricter (Table 4, {}), against an independent reference that null outputs fail",
                prec,
                p.accuracy.required,
                p.scenario
            ),
            measured,
            verdict,
            reason,
            Source::Standard,
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn pass_fail_and_invalid_per_precision() {
        let (p, _, mut e) = fixture();
        let f = accuracy(&p, &e);
        assert_eq!(verdicts(&f, "Accuracy (Table 3)"), vec![Verdict::Pass; 3]);
        assert!(f.reasons.is_empty());
        // FP16 below the required level: FAIL; INT8 graded against a reference that is not
        // independent of the engine under test: INVALID; FP32 not measured: FAIL.
        for a in &mut e.accuracy {
            match a.precision {
                Some(Precision::Fp16) => a.verdict = Some(Verdict::Fail),
                Some(Precision::Int8) => a.independence.independent = false,
                _ => {}
            }
        }
        e.accuracy.retain(|a| a.precision != Some(Precision::Fp32));
        let f = accuracy(&p, &e);
        let by: Vec<Verdict> = verdicts(&f, "Accuracy (Table 3)");
        // In the profile's order: fp32, fp16, int8.
        assert_eq!(by, vec![Verdict::Fail, Verdict::Fail, Verdict::Invalid]);
        assert_eq!(f.reasons.len(), 3, "{:?}", f.reasons);
        assert!(
            f.clauses[2]
                .reason
                .as_deref()
                .unwrap()
                .contains("reference not independent")
        );
        // A grade whose null outputs would pass is INVALID as the accuracy report says.
        let (p, _, mut e) = fixture();
        e.accuracy[0].verdict = Some(Verdict::Invalid);
        e.accuracy[0].verdict_reason = Some("this reference cannot tell".into());
        assert_eq!(
            verdicts(&accuracy(&p, &e), "Accuracy (Table 3)")[0],
            Verdict::Invalid
        );
    }
}
