//! §7.2.2: the model runs on the backend and its FP32 results are correct.

use super::*;

/// §7.2.2: the basic model runs and its FP32 result is correct.
pub(super) fn model_support(backend: &str, e: &Evidence) -> Found {
    let mut f = Found::default();
    let fp32 = e
        .accuracy
        .iter()
        .find(|a| a.precision == Some(Precision::Fp32));
    let (verdict, reason) = match fp32 {
        None => (
            Verdict::NotApplicable,
            na("the profile does not grade FP32"),
        ),
        Some(a) => match accuracy_verdict(a) {
            (_, Verdict::Invalid, why) => (Verdict::Invalid, why),
            _ if a.level == Some(Level::C4) && a.nonfinite.is_empty() => (Verdict::Pass, None),
            _ => (
                Verdict::Fail,
                Some(format!(
                    "the FP32 model on {backend} is not within C4 of the CPU reference"
                )),
            ),
        },
    };
    f.add(
        "§7.2.2",
        "Model support",
        "the model runs and its results are correct",
        match fp32 {
            Some(a) => format!(
                "FP32 on {backend}: MSE {} against the CPU reference",
                sci(a.mse)
            ),
            None => "FP32 not graded".into(),
        },
        verdict,
        reason,
        Source::Standard,
    );
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    /// The backend as the clause text names it (the fixture ran on tract).
    const LABEL: &str = "tract on the CPU";

    #[test]
    fn fp32_within_c4_passes_else_fails_or_is_invalid() {
        let (_, _, mut e) = fixture();
        assert_eq!(
            verdict(&model_support(LABEL, &e), "Model support"),
            Verdict::Pass
        );
        let fp32 = |e: &mut Evidence| -> usize {
            e.accuracy
                .iter()
                .position(|a| a.precision == Some(Precision::Fp32))
                .unwrap()
        };
        let k = fp32(&mut e);
        e.accuracy[k].level = Some(Level::C3);
        assert_eq!(
            verdict(&model_support(LABEL, &e), "Model support"),
            Verdict::Fail
        );
        e.accuracy[k].level = Some(Level::C4);
        e.accuracy[k].verdict = Some(Verdict::Invalid);
        assert_eq!(
            verdict(&model_support(LABEL, &e), "Model support"),
            Verdict::Invalid
        );
        e.accuracy.remove(k);
        assert_eq!(
            verdict(&model_support(LABEL, &e), "Model support"),
            Verdict::NotApplicable
        );
    }
}
