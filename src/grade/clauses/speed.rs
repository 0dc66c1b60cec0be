//! §7.2.3, §7.2.4 and Table 5: latency, FPS and the speed level.

use super::*;

/// §7.2.3–7.2.4 and Table 5.
pub(super) fn speed(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(s) = &e.speed else {
        f.add(
            "Table 5",
            "Speed level",
            format!("{} or more demanding ({})", p.speed.required, p.scenario),
            "not measured",
            Verdict::Fail,
            na("the speed stage did not produce a result"),
            Source::Profile,
        );
        f.reasons.push("speed: not measured".into());
        return f;
    };
    let q = p.speed.percentile;
    let lat = percentile_of(s, q);
    let fps = s.fps.value;
    let level = lat.zip(fps).and_then(|(l, x)| p.speed_level(l, x));
    let valid = s.validity.result == Verdict::Valid;
    let speed_ok = valid && profile::speed_meets(level, p.speed.required) && s.complete;
    let t = p.speed.levels.get(&p.speed.required);
    let pass = |ok: bool| if ok { Verdict::Pass } else { Verdict::Fail };
    f.add(
        "§7.2.3",
        "Time (latency)",
        format!(
            "P{q} end-to-end batch-1 latency ≤ {} ms ({} of Table 5)",
            t.map(|t| t.max_latency_ms).unwrap_or(f64::NAN),
            p.speed.required
        ),
        match (&s.latency_ms, lat) {
            (Some(l), Some(x)) => format!(
                "P{q} {x:.3} ms; mean {:.3} ms, P99 {:.3} ms, N = {}",
                l.mean, l.p99, l.n
            ),
            _ => "n/a: no samples".into(),
        },
        pass(lat.zip(t).is_some_and(|(x, t)| x <= t.max_latency_ms) && valid),
        None,
        Source::Profile,
    );
    f.add(
        "§7.2.4",
        "FPS",
        format!(
            "FPS = N/ΣTi ≥ {} ({} of Table 5)",
            t.map(|t| t.min_fps).unwrap_or(f64::NAN),
            p.speed.required
        ),
        format!(
            "{} 1/s; wall-clock throughput {} 1/s",
            opt(fps, ""),
            opt(s.throughput.value, "")
        ),
        pass(fps.zip(t).is_some_and(|(x, t)| x >= t.min_fps) && valid),
        None,
        Source::Profile,
    );
    let achieved = level
        .map(|l| l.to_string())
        .unwrap_or_else(|| "below C4".into());
    f.add(
        "Table 5",
        "Speed level",
        format!("{} or more demanding ({})", p.speed.required, p.scenario),
        format!("{achieved} (run {})", s.validity.result),
        pass(speed_ok),
        (!valid).then(|| {
            format!(
                "the run is INVALID: {}",
                s.validity
                    .rules
                    .iter()
                    .filter(|r| !r.passed)
                    .map(|r| format!("{} ({})", r.rule, r.detail))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }),
        Source::Profile,
    );
    if !speed_ok {
        f.reasons.push(format!(
            "speed: {achieved} achieved, {} required{}",
            p.speed.required,
            if valid { "" } else { " (run INVALID)" }
        ));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn speed_fails_passes_on_looser_levels_and_fails_unmeasured() {
        let (mut p, _, mut e) = fixture();
        // The fixture's run is INVALID and misses its levels.
        let f = speed(&p, &e);
        assert_eq!(verdict(&f, "Speed level"), Verdict::Fail);
        assert!(
            f.clauses
                .iter()
                .find(|c| c.title == "Speed level")
                .unwrap()
                .reason
                .as_deref()
                .unwrap()
                .contains("INVALID")
        );
        // A VALID run under thresholds it meets passes all three.
        e.speed.as_mut().unwrap().validity.result = Verdict::Valid;
        for l in p.speed.levels.values_mut() {
            l.max_latency_ms = 1e6;
            l.min_fps = 0.0;
        }
        let f = speed(&p, &e);
        assert_eq!(verdict(&f, "Time (latency)"), Verdict::Pass);
        assert_eq!(verdict(&f, "FPS"), Verdict::Pass);
        assert_eq!(verdict(&f, "Speed level"), Verdict::Pass);
        assert!(f.reasons.is_empty());
        // Without samples nothing can pass.
        e.speed.as_mut().unwrap().raw.clear();
        assert_eq!(verdict(&speed(&p, &e), "Time (latency)"), Verdict::Fail);
        e.speed = None;
        assert_eq!(verdict(&speed(&p, &e), "Speed level"), Verdict::Fail);
    }
}
