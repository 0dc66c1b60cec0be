//! §6.2 f and §6 g: where the operators ran, what fell back to the CPU, and the adaptation route.

use super::*;

/// §6.2 f: operator placement and fallback; §6 g: the operator-adaptation route.
pub(super) fn placement(b: &BackendSettings, e: &Evidence) -> Found {
    let mut f = Found::default();
    let traits = backend::describe(b);
    let class = traits.class;
    let Some(s) = &e.placement else {
        f.add(
            "§6.2 f",
            "Operator placement and fallback",
            "report which operators ran on the accelerator and which fell back to the CPU",
            "not recorded",
            if class == DeviceClass::Cpu {
                Verdict::NotApplicable
            } else {
                Verdict::Incomplete
            },
            na("the speed stage did not run"),
            Source::Standard,
        );
        let (route, detail) = (traits.route, traits.route_detail);
        f.add(
            "§6 g",
            "Operator adaptation",
            "operator mapping, subgraph or whole-graph hand-off, or a compiler back end",
            format!("{route}: {detail}"),
            if class == DeviceClass::Cpu {
                Verdict::NotApplicable
            } else {
                Verdict::Incomplete
            },
            na("no placement was recorded, so no operator was seen running on the device under test"),
            Source::Standard,
        );
        return f;
    };
    let line = crate::report::run::placement_line(s);
    let (verdict, reason) = match (&s.unavailable, class) {
        (_, DeviceClass::Cpu) if s.fused_subgraphs.is_empty() && s.cpu_fallback.is_empty() => (
            Verdict::NotApplicable,
            Some(format!(
                "the backend under test ({}) is the CPU: every operator runs on it",
                b.spec
            )),
        ),
        (Some(why), DeviceClass::Emulated) => (Verdict::Fail, Some(why.clone())),
        (Some(why), _) => (
            Verdict::Incomplete,
            Some(format!("the backend could not report placement: {why}")),
        ),
        (None, _) => (Verdict::Pass, None),
    };
    if verdict == Verdict::Incomplete {
        f.reasons.push(format!("placement (§6.2 f): {line}"));
    }
    f.add(
        "§6.2 f",
        "Operator placement and fallback",
        "report which operators ran on the accelerator and which fell back to the CPU",
        line,
        verdict,
        reason,
        Source::Standard,
    );
    // §6 g: evidence for the route is operators that ran on the device under test.
    let evidence = s.nodes_on_device.unwrap_or(0) > 0 && s.unavailable.is_none();
    let (verdict, reason) = match class {
        DeviceClass::Emulated => (
            Verdict::Fail,
            na("an emulated device has no adaptation layer"),
        ),
        DeviceClass::Cpu if s.fused_subgraphs.is_empty() => (
            Verdict::NotApplicable,
            Some(format!(
                "the backend under test ({}) is a CPU engine",
                b.spec
            )),
        ),
        _ if evidence => (Verdict::Pass, None),
        _ => (
            Verdict::Incomplete,
            na("no operator was seen running on the device under test"),
        ),
    };
    f.add(
        "§6 g",
        "Operator adaptation",
        "operator mapping, subgraph or whole-graph hand-off, or a compiler back end",
        format!("{}: {}", s.route, s.route_detail),
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

    #[test]
    fn cpu_is_not_applicable_an_accelerator_without_placement_is_incomplete() {
        let (_, b, mut e) = fixture();
        let f = placement(&b, &e);
        assert_eq!(
            verdict(&f, "Operator placement and fallback"),
            Verdict::NotApplicable
        );
        assert_eq!(verdict(&f, "Operator adaptation"), Verdict::NotApplicable);
        e.placement = None;
        let f = placement(&backend_of("ort:cuda"), &e);
        assert_eq!(
            verdict(&f, "Operator placement and fallback"),
            Verdict::Incomplete
        );
        assert_eq!(verdict(&f, "Operator adaptation"), Verdict::Incomplete);
        let f = placement(&b, &e);
        assert_eq!(
            verdict(&f, "Operator placement and fallback"),
            Verdict::NotApplicable
        );
    }
}
