//! §7.2.4 b: the cluster FPS of a cluster run the lab launched, on the profile's bounds.

use super::*;

/// §7.2.4 b (and §7.1.7 b beside it): the merged cluster run. It must be VALID (every rank
/// reported a complete run, the shards cover N once, same model, inputs and tool), of the
/// model the speed stage measured, with at least `min_ranks` ranks; its FPS is judged on the
/// low end of its clock-offset error bar, so the bound holds whatever the offsets were.
pub(super) fn cluster(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(cs) = &p.cluster else { return f };
    let requirement = format!(
        "a VALID cluster run of the speed model over ≥ {} ranks; FPS = N / (max Tio − min Tis), low end of its error bar, ≥ {} inferences/s{}",
        cs.min_ranks,
        cs.min_fps,
        cs.max_imbalance
            .map(|m| format!("; imbalance ≤ {m}"))
            .unwrap_or_default()
    );
    let Some(c) = &e.cluster else {
        f.add(
            "§7.2.4 b",
            "Cluster FPS",
            requirement,
            "not measured",
            Verdict::Incomplete,
            na("the cluster stage did not merge a cluster run (see its stage error)"),
            Source::Profile,
        );
        return f;
    };
    let fig = &c.cluster;
    let measured = format!(
        "{} inferences/s (error bar {}..{}; T = {} s ± {} s; N = {}) over {} rank(s), launcher: {}; barrier-to-barrier {} inferences/s; imbalance {}; energy {}",
        opt(fig.fps.value, ""),
        opt(fig.fps_low, ""),
        opt(fig.fps_high, ""),
        opt(fig.t_s, ""),
        fig.t_error_s
            .map(|x| format!("{x:.2e}"))
            .unwrap_or_else(|| "n/a".into()),
        fig.samples,
        c.world_size,
        c.launcher,
        opt(fig.fps_barrier.value, ""),
        opt(fig.imbalance, ""),
        fig.energy_j
            .map(|j| format!("{j:.1} J"))
            .unwrap_or_else(|| fig.energy_na.clone().unwrap_or_else(|| "n/a".into())),
    );
    let mut why = Vec::new();
    if c.kind != "bench" {
        why.push(format!(
            "the run is a {} run; [cluster] judges `bench --cluster`",
            c.kind
        ));
    }
    if !c.valid {
        why.push(format!(
            "the cluster run is INVALID: {}",
            c.problems
                .first()
                .map_or("no reason recorded", |s| s.as_str())
        ));
    }
    if c.world_size < cs.min_ranks {
        why.push(format!(
            "{} rank(s), the profile asks for at least {}",
            c.world_size, cs.min_ranks
        ));
    }
    match e.speed.as_ref().map(|s| s.model_sha256.as_str()) {
        Some(m) if m == c.model_sha256 => {}
        Some(m) => why.push(format!(
            "the cluster run measured another model (SHA-256 {}) than the speed stage ({m})",
            c.model_sha256
        )),
        None => why.push(
            "the speed stage measured no model, so the cluster run cannot be matched to it".into(),
        ),
    }
    match fig.fps_low.or(fig.fps.value) {
        Some(v) if v >= cs.min_fps => {}
        Some(v) => why.push(format!(
            "FPS {v:.3} (low end of the error bar) < {} inferences/s",
            cs.min_fps
        )),
        None => why.push(format!("no cluster FPS: {}", fig.fps.definition.as_str())),
    }
    if let Some(m) = cs.max_imbalance {
        match fig.imbalance {
            Some(i) if i <= m => {}
            Some(i) => why.push(format!("imbalance {i:.3} > {m}")),
            None => why.push("imbalance not measured".into()),
        }
    }
    let ok = why.is_empty();
    let reason = (!ok).then(|| why.join("; "));
    if let Some(r) = &reason {
        f.reasons.push(format!("Cluster FPS: {r}"));
    }
    f.add(
        "§7.2.4 b",
        "Cluster FPS",
        requirement,
        measured,
        if ok { Verdict::Pass } else { Verdict::Fail },
        reason,
        Source::Profile,
    );
    f
}
