//! §7.2.3, §7.2.4 and Table 5: latency, FPS and the speed level.

use super::*;
use crate::report::schema::profile::SpeedLevel;

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
    let fps = judged_fps(p, s);
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
        fps_requirement(p, t),
        fps_measured(p, s, fps),
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

/// §7.2.4's requirement: N / ΣTi one at a time, or N / T of the module pipelined when the
/// profile sets `pipeline_workers`.
fn fps_requirement(p: &Profile, t: Option<&SpeedLevel>) -> String {
    match p.speed.pipeline_workers {
        None => format!(
            "FPS = N/ΣTi ≥ {} ({} of Table 5)",
            t.map(|t| t.min_fps).unwrap_or(f64::NAN),
            p.speed.required
        ),
        Some(k) => format!(
            "FPS = N/T of the module pipelined ({k} decode/pre-process thread(s), {} model instance(s)) ≥ {} ({} of Table 5)",
            p.speed.pipeline_instances.unwrap_or(1),
            t.map(|t| t.min_fps).unwrap_or(f64::NAN),
            p.speed.required
        ),
    }
}

/// §7.2.4's measured text for the FPS `fps` that [`judged_fps`] chose.
fn fps_measured(p: &Profile, s: &BenchReport, fps: Option<f64>) -> String {
    match (p.speed.pipeline_workers, &s.pipelined) {
        (None, _) => format!(
            "{} 1/s; wall-clock throughput {} 1/s",
            opt(fps, ""),
            opt(s.throughput.value, "")
        ),
        (Some(_), Some(x)) if !super::pipeline_is_the_profiles(p, x) => {
            format!(
                "n/a: the pipelined run had {} decode/pre-process thread(s) and {} model instance(s), not the profile's; one at a time {} 1/s",
                x.workers,
                x.instances,
                opt(s.fps.value, "")
            )
        }
        (Some(_), Some(x)) => format!(
            "{} 1/s pipelined (N = {}, T = {:.3} s, {} model instance(s)); one at a time {} 1/s{}",
            opt(fps, ""),
            x.samples,
            x.t_s,
            x.instances,
            opt(s.fps.value, ""),
            x.error
                .as_ref()
                .map(|e| format!("; pipelined run incomplete: {e}"))
                .unwrap_or_default()
        ),
        (Some(_), None) => format!(
            "n/a: the pipelined run did not happen; one at a time {} 1/s",
            opt(s.fps.value, "")
        ),
    }
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
        // A profile that judges the pipelined module: no pipelined run, no FPS; a pipelined
        // figure under the threshold fails though the one-at-a-time one passes.
        p.speed.pipeline_workers = Some(1);
        let f = speed(&p, &e);
        assert_eq!(verdict(&f, "FPS"), Verdict::Fail);
        let c = f.clauses.iter().find(|c| c.title == "FPS").unwrap();
        assert!(c.measured.contains("pipelined run did not happen"), "{c:?}");
        let fig = |v: f64| crate::report::schema::bench::Figure {
            value: Some(v),
            unit: "1/s".into(),
            definition: "N / T".into(),
        };
        e.speed.as_mut().unwrap().pipelined = Some(crate::report::schema::bench::Pipelined {
            workers: 1,
            instances: 1,
            queue_depth: 2,
            samples: 10,
            outputs_per_instance: vec![10],
            t_s: 10.0,
            fps: fig(1.0),
            one_at_a_time_fps: e.speed.as_ref().unwrap().fps.value,
            speedup: None,
            mean_wait_ms: Some(0.0),
            complete: true,
            error: None,
        });
        for l in p.speed.levels.values_mut() {
            l.min_fps = 2.0;
        }
        assert!(e.speed.as_ref().unwrap().fps.value.unwrap() >= 2.0);
        let f = speed(&p, &e);
        assert_eq!(verdict(&f, "FPS"), Verdict::Fail);
        assert!(
            f.clauses
                .iter()
                .find(|c| c.title == "FPS")
                .unwrap()
                .requirement
                .contains("pipelined")
        );
        for l in p.speed.levels.values_mut() {
            l.min_fps = 0.5;
        }
        assert_eq!(verdict(&speed(&p, &e), "FPS"), Verdict::Pass);
        // A run with other model instances than the profile's is not its figure.
        p.speed.pipeline_instances = Some(2);
        let f = speed(&p, &e);
        assert_eq!(verdict(&f, "FPS"), Verdict::Fail);
        let c = f.clauses.iter().find(|c| c.title == "FPS").unwrap();
        assert!(c.measured.contains("not the profile's"), "{c:?}");
        e.speed
            .as_mut()
            .unwrap()
            .pipelined
            .as_mut()
            .unwrap()
            .instances = 2;
        assert_eq!(verdict(&speed(&p, &e), "FPS"), Verdict::Pass);
        p.speed.pipeline_instances = None;
        p.speed.pipeline_workers = None;
        // Without samples nothing can pass.
        e.speed.as_mut().unwrap().raw.clear();
        assert_eq!(verdict(&speed(&p, &e), "Time (latency)"), Verdict::Fail);
        e.speed = None;
        assert_eq!(verdict(&speed(&p, &e), "Speed level"), Verdict::Fail);
    }
}
