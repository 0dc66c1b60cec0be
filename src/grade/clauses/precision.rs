//! §6 e: INT8 and FP16 inference.

use super::*;

/// §6 e: INT8 and FP16 inference.
pub(super) fn precision(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    let ran = |prec| graded(e, prec).is_some_and(|a| a.complete);
    let asked = |prec| p.model.precisions.contains(&prec);
    let ok = ran(Precision::Int8) && ran(Precision::Fp16);
    let both = asked(Precision::Int8) && asked(Precision::Fp16);
    let list: Vec<String> = e
        .accuracy
        .iter()
        .map(|a| {
            format!(
                "{} ({})",
                a.precision.map(|x| x.to_string()).unwrap_or_default(),
                a.level
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| "below C1".into())
            )
        })
        .collect();
    f.add(
        "§6 e",
        "Precision",
        "inference supports INT8 and FP16",
        format!("graded: {}", list.join(", ")),
        match (ok, both) {
            (true, _) => Verdict::Pass,
            (false, true) => Verdict::Fail,
            (false, false) => Verdict::NotApplicable,
        },
        match (ok, both) {
            (true, _) => None,
            (false, true) => na("a variant did not run to the end"),
            (false, false) => na("the profile does not grade both INT8 and FP16"),
        },
        Source::Standard,
    );
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn int8_and_fp16_both_graded_pass_one_missing_fails() {
        let (mut p, _, mut e) = fixture();
        assert_eq!(verdict(&precision(&p, &e), "Precision"), Verdict::Pass);
        // The profile asks for INT8 and FP16 but INT8 did not run: FAIL.
        e.accuracy.retain(|a| a.precision != Some(Precision::Int8));
        assert_eq!(verdict(&precision(&p, &e), "Precision"), Verdict::Fail);
        // A profile that grades FP32 alone does not claim §6 e.
        p.model.precisions = vec![Precision::Fp32];
        assert_eq!(
            verdict(&precision(&p, &e), "Precision"),
            Verdict::NotApplicable
        );
    }
}
