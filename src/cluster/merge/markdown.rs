//! `DIR/cluster.md`: the merged figures as Markdown, one table set per kind of run.

use crate::report::schema::bench::Figure;
use crate::report::schema::cluster::{AccuracyFigures, ClusterReport, TrainingFigures};

fn f(v: Option<f64>, d: usize) -> String {
    v.map_or("n/a".to_string(), |v| format!("{v:.d$}"))
}

/// The merged figures as Markdown (DIR/cluster.md).
pub fn markdown(c: &ClusterReport) -> String {
    let mut s = format!(
        "# Cluster run: {}\n\n- Verdict: **{}**\n- Model: {} (SHA-256 {})\n- Backend: {}\n- Launcher: {}; {} rank(s), found {:?}\n",
        c.dir,
        if c.valid { "VALID" } else { "INVALID" },
        c.model,
        c.model_sha256,
        c.backend,
        c.launcher,
        c.world_size,
        c.ranks_found
    );
    for p in &c.problems {
        s += &format!("- Problem: {p}\n");
    }
    for n in &c.notes {
        s += &format!("- Note: {n}\n");
    }
    if let Some(a) = &c.accuracy {
        s += &accuracy(a);
    } else if let Some(t) = &c.training {
        s += &training(t);
    } else {
        s += &timed(c);
    }
    s
}

/// An accuracy run's pooled metrics, per output and per rank.
fn accuracy(a: &AccuracyFigures) -> String {
    let mut s = String::new();
    s += &format!(
        "\nAccuracy against {} over {} of N = {} inputs: worst output {} MSE {} ({}); {}\n\n{}\n\n| Output | Elements | MSE | Max abs error | Relative L2 | Cosine | NaN | Inf | Level |\n|---|---|---|---|---|---|---|---|---|\n",
        a.reference,
        a.inputs,
        a.expected_inputs,
        a.worst_output,
        a.mse
            .map_or("n/a: NaN/Inf output".into(), crate::util::fmt::sci),
        a.level.map_or("no level".into(), |l| l.to_string()),
        a.agreement_text,
        a.definition
    );
    for o in &a.outputs {
        let m = &o.metrics;
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            o.name,
            m.elements,
            crate::util::fmt::sci(m.mse),
            crate::util::fmt::sci(m.max_abs_error),
            crate::util::fmt::sci(m.rel_l2_error),
            f(Some(m.cosine), 6),
            m.nan_count,
            m.inf_count,
            o.level.map_or("-".into(), |l| l.to_string())
        );
    }
    s += "\n| Rank | Host | Inputs | Worst-output MSE | Level | Complete |\n|---|---|---|---|---|---|\n";
    for n in &a.nodes {
        s += &format!(
            "| {} | {} | {}..{} ({}) | {} | {} | {} |\n",
            n.rank,
            n.host,
            n.shard.start,
            n.shard.end,
            n.inputs,
            n.mse.map_or("n/a".into(), crate::util::fmt::sci),
            n.level.map_or("-".into(), |l| l.to_string()),
            n.complete
        );
    }
    s
}

/// A training run's throughputs, per rank.
fn training(t: &TrainingFigures) -> String {
    let mut s = String::new();
    let g = |x: &Figure| {
        x.value
            .map_or(x.definition.clone(), |v| format!("{v:.3} {}", x.unit))
    };
    s += &format!(
        "\nData-parallel training of {} ({}), global batch {}; held-out at the end: {}\n\n| Figure | Value |\n|---|---|\n| Throughput, mean of the nodes (§7.1.5 b) | {} |\n| Throughput, sum of the nodes | {} |\n| Scaling efficiency | {} |\n\n| Rank | Host | Samples | Samples/s | Compute s | All-reduce s | All-reduce share | Bytes sent | Rounds |\n|---|---|---|---|---|---|---|---|---|\n",
        t.workload,
        t.all_reduce,
        t.global_batch,
        f(t.final_eval, 4),
        g(&t.throughput_mean),
        g(&t.throughput_sum),
        g(&t.scaling_efficiency),
    );
    for n in &t.nodes {
        s += &format!(
            "| {} | {} | {} | {} | {} | {:.3} | {} | {} | {} |\n",
            n.rank,
            n.host,
            n.local_samples,
            f(n.samples_per_s, 1),
            f(n.compute_s, 3),
            n.all_reduce_s,
            f(n.all_reduce_share, 3),
            n.bytes_sent,
            n.rounds
        );
    }
    s
}

/// A timed run's §7.2.4 b figures, per rank.
fn timed(c: &ClusterReport) -> String {
    let mut s = String::new();
    let k = &c.cluster;
    s += &format!(
        "\n| Figure | Value | Definition |\n|---|---|---|\n| Samples | {} of N = {} | Σ of the ranks' samples |\n| T | {} s ± {} s | max Tio − min Tis on rank 0's clock |\n| FPS | {} ({} – {}) {} | {} |\n| FPS, barrier to barrier | {} {} | {} |\n| Imbalance | {} | max node time / mean node time |\n| Energy | {} J | {} |\n| Inferences per joule | {} | {} |\n",
        k.samples,
        k.expected_samples,
        f(k.t_s, 6),
        f(k.t_error_s, 6),
        f(k.fps.value, 2),
        f(k.fps_low, 2),
        f(k.fps_high, 2),
        k.fps.unit,
        k.fps.definition,
        f(k.fps_barrier.value, 2),
        k.fps_barrier.unit,
        k.fps_barrier.definition,
        f(k.imbalance, 3),
        f(k.energy_j, 3),
        k.energy_na
            .as_deref()
            .unwrap_or("the nodes' energy, summed"),
        f(k.inferences_per_joule.value, 3),
        k.inferences_per_joule.definition,
    );
    s += "\n| Rank | Host | Shard | Samples | Start s | End s | FPS | Offset s | ± s | Node verdict | Energy J |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
    for n in &c.nodes {
        s += &format!(
            "| {} | {} | {}..{} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            n.rank,
            n.host,
            n.shard.start,
            n.shard.end,
            n.samples,
            f(n.start_s, 6),
            f(n.end_s, 6),
            f(n.fps, 2),
            n.offset_s.map_or("n/a".into(), |v| format!("{v:.3e}")),
            n.offset_error_s
                .map_or("n/a".into(), |v| format!("{v:.3e}")),
            n.node_validity,
            n.energy_j.map_or_else(
                || n.energy_na.clone().unwrap_or("n/a".into()),
                |e| format!("{e:.3}")
            ),
        );
    }
    s
}
