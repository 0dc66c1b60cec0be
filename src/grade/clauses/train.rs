//! §7.1: training time, throughput and energy on the profile's bounds.

use super::*;

/// (clause, title, measured, the profile's bound: (limit, value, an upper bound))
type TrainRow = (
    &'static str,
    &'static str,
    String,
    Option<(f64, Option<f64>, bool)>,
);

/// The training clauses' rows: what was measured and the profile's bound on it.
pub(super) fn train_rows(
    t: &crate::report::schema::profile::TrainSection,
    r: &crate::report::schema::train::TrainReport,
) -> [TrainRow; 5] {
    use crate::report::schema::train::Measured;
    let m = |v: &Measured, unit: &str| match v {
        Measured::Value(x) => format!("{x:.3} {unit}"),
        Measured::Missing(_) => v.to_string(),
    };
    let step = r.step_ms.as_ref();
    let util: Vec<String> = r
        .epochs
        .iter()
        .map(|e| format!("{} (n {})", m(&e.utilization.mean, "%"), e.utilization.n))
        .collect();
    [
        (
            "§7.1.3",
            "Training time (optional)",
            format!(
                "single step avg {} / P90 {} ms (n {}); total Te − Ts {:.3} s; time to target {} in {} epochs",
                step.map(|s| format!("{:.3}", s.average))
                    .unwrap_or_else(|| "n/a".into()),
                step.map(|s| format!("{:.3}", s.p90))
                    .unwrap_or_else(|| "n/a".into()),
                r.steps,
                r.total_s,
                m(&r.time_to_target_s, "s"),
                r.epochs_to_target
            ),
            t.max_step_p90_ms
                .map(|lim| (lim, step.map(|s| s.p90), true)),
        ),
        (
            "§7.1.3",
            "Time to target (optional)",
            m(&r.time_to_target_s, "s"),
            t.max_time_to_target_s
                .map(|lim| (lim, r.time_to_target_s.value(), true)),
        ),
        (
            "§7.1.4",
            "Training utilization (optional)",
            format!(
                "per epoch S/N: {} on {}",
                util.join(", "),
                r.utilization_channel
            ),
            None,
        ),
        (
            "§7.1.5",
            "Training throughput (optional)",
            format!(
                "{}; {}",
                m(&r.throughput_samples_per_s, "samples/s"),
                m(&r.throughput_mb_per_s, "MB/s")
            ),
            t.min_throughput_samples_per_s
                .map(|lim| (lim, r.throughput_samples_per_s.value(), false)),
        ),
        (
            "§7.1.6–7.1.7",
            "Training power and energy efficiency (optional)",
            format!(
                "power avg {}, peak {}; energy {}; N/E {}",
                m(&r.power_w.average, "W"),
                m(&r.power_w.peak, "W"),
                m(&r.energy_j, "J"),
                m(&r.efficiency_samples_per_j, "samples/J")
            ),
            None,
        ),
    ]
}

/// §7.1.3–7.1.7 (optional in the draft): the training figures, reported; the profile's
/// bounds (time to target, step P90, throughput) pass or fail, marked as the profile's.
pub(super) fn train(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(t) = &p.train else { return f };
    let Some(r) = &e.train else {
        f.add(
            "§7.1",
            "Training (optional)",
            format!("train {}", t.workload),
            "not measured",
            Verdict::Incomplete,
            na("the training stage did not finish"),
            Source::ReportOnly,
        );
        return f;
    };
    for (clause, title, measured, bound) in train_rows(t, r) {
        let (verdict, reason, source, req) = match bound {
            None => (
                Verdict::NotApplicable,
                na("optional in the draft, no level: reported"),
                Source::ReportOnly,
                "report (optional, 非必须)".to_string(),
            ),
            Some((lim, v, upper)) => {
                let req = format!(
                    "{} {lim} (the profile's bound)",
                    if upper { "≤" } else { "≥" }
                );
                match v {
                    Some(v) if (upper && v <= lim) || (!upper && v >= lim) => {
                        (Verdict::Pass, None, Source::Profile, req)
                    }
                    Some(v) => (
                        Verdict::Fail,
                        Some(format!("{v:.3} against the bound {lim}")),
                        Source::Profile,
                        req,
                    ),
                    None => (Verdict::Fail, na("not measured"), Source::Profile, req),
                }
            }
        };
        if verdict == Verdict::Fail {
            f.reasons
                .push(format!("{title}: {}", reason.clone().unwrap_or_default()));
        }
        f.add(clause, title, req, measured, verdict, reason, source);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn a_training_stage_that_did_not_finish_is_incomplete() {
        let (mut p, _, e) = fixture();
        assert!(train(&p, &e).clauses.is_empty());
        p.train = Some(toml::from_str("workload = \"lstm-load-forecast\"\n").unwrap());
        let f = train(&p, &e);
        assert!(!f.clauses.is_empty());
        assert!(
            f.clauses.iter().all(|c| c.verdict == Verdict::Incomplete),
            "{:?}",
            f.clauses
        );
    }
}
