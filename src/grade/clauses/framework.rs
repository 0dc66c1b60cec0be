//! §6 d: the framework (runtime) the model ran on.

use super::*;

/// §6 d: the framework (the model's format and the engine running it).
pub(super) fn framework(backend: &str, e: &Evidence) -> Found {
    let mut f = Found::default();
    let engine = e
        .speed
        .as_ref()
        .map(|s| s.session.engine.clone())
        .or_else(|| e.accuracy.first().map(|a| a.session.engine.clone()))
        .unwrap_or_else(|| backend.to_string());
    let inspected = e.analysis.is_some();
    f.add(
        "§6 d",
        "Framework",
        "at least one of TensorFlow, PyTorch, Caffe, MXNet, ONNX, MindSpore, Paddle",
        format!("ONNX model on {engine}"),
        if inspected {
            Verdict::Pass
        } else {
            Verdict::NotApplicable
        },
        if inspected {
            None
        } else {
            na("the model was not inspected")
        },
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
    fn an_inspected_onnx_model_passes_else_not_applicable() {
        let (_, _, mut e) = fixture();
        let f = framework(LABEL, &e);
        assert_eq!(verdict(&f, "Framework"), Verdict::Pass);
        e.analysis = None;
        assert_eq!(
            verdict(&framework(LABEL, &e), "Framework"),
            Verdict::NotApplicable
        );
    }
}
