//! `acceval cluster`: what a launcher told this process.

use crate::Outcome;
use crate::cli::ClusterCommand;
use crate::cluster::{Given, rank};
use crate::report::schema::cluster::{AccuracyFigures, ClusterReport, TrainingFigures};

pub fn run(command: ClusterCommand) -> anyhow::Result<Outcome> {
    match command {
        ClusterCommand::Rank {
            rank: r,
            world_size,
            json,
        } => {
            let given = Given {
                rank: r,
                world_size,
            };
            let found = rank::from_env(given).map_err(|e| match e {
                rank::RankError::KubernetesNeedsSize { .. } => {
                    anyhow::anyhow!("{e} (--world-size M, M the Job's completions)")
                }
                rank::RankError::HalfManual => anyhow::anyhow!("{e}: --rank R --world-size N"),
                e => anyhow::anyhow!(
                    "{e}; for a launcher acceval does not read, give --rank and --world-size"
                ),
            })?;
            let host = Some(sysinfo::System::host_name().unwrap_or_default())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "n/a: no host name".into());
            if json {
                let mut v = serde_json::to_value(&found)?;
                v["host"] = host.into();
                println!("{v}");
            } else {
                println!(
                    "rank {} of {} on {host} (launcher: {}; local rank {}, node {})",
                    found.rank,
                    found.world_size,
                    found.launcher,
                    found
                        .local_rank
                        .map_or("n/a: not set by the launcher".into(), |v| v.to_string()),
                    found
                        .node
                        .map_or("n/a: not set by the launcher".into(), |v| v.to_string()),
                );
                if !found.source.is_empty() {
                    println!("from: {}", found.source.join(" "));
                }
                for n in &found.notes {
                    println!("note: {n}");
                }
            }
            Ok(Outcome::Ok)
        }
    }
}

/// `acceval merge DIR`: the kind of run the folder holds, merged; cluster.json and
/// cluster.md written; exit 1 when the run is invalid.
pub fn merge(
    dir: &std::path::Path,
    baseline: Option<&std::path::Path>,
    json: bool,
) -> anyhow::Result<Outcome> {
    use crate::cluster::merge::{self, Mergeable};
    use crate::report::schema::cluster::{AccuracyRankReport, TrainRankReport};
    let c = match merge::kind_of(dir) {
        Some(TrainRankReport::PREFIX) => merge::merge_training(dir, baseline)?,
        Some(AccuracyRankReport::PREFIX) => crate::accuracy::pooled::merge(dir)?,
        _ => merge::merge_bench_files(dir, &merge::rank_files(dir, "rank-")?)?,
    };
    let mut text = serde_json::to_string_pretty(&c)?;
    text.push('\n');
    crate::util::fs::write_file(&dir.join("cluster.json"), text.as_bytes())?;
    crate::util::fs::write_file(&dir.join("cluster.md"), merge::markdown(&c).as_bytes())?;
    if json {
        print!("{text}");
    } else {
        print_summary(dir, &c);
    }
    Ok(if c.valid {
        Outcome::Ok
    } else {
        Outcome::NotCompliant
    })
}

fn f(v: Option<f64>, d: usize) -> String {
    v.map_or("n/a".to_string(), |v| format!("{v:.d$}"))
}

/// The merged run in a few lines on stdout.
fn print_summary(dir: &std::path::Path, c: &ClusterReport) {
    let k = &c.cluster;
    println!(
        "cluster run {}: {} ({} of {} rank(s) reported{})",
        dir.display(),
        if c.valid { "VALID" } else { "INVALID" },
        c.ranks_found.len(),
        c.world_size,
        if c.training.is_some() {
            String::new()
        } else if c.accuracy.is_some() {
            format!(
                "; {} of N = {} inputs graded",
                k.samples, k.expected_samples
            )
        } else {
            format!("; {} of N = {} samples", k.samples, k.expected_samples)
        }
    );
    for p in &c.problems {
        println!("  problem: {p}");
    }
    for n in &c.notes {
        println!("  note: {n}");
    }
    if let Some(a) = &c.accuracy {
        print_accuracy(&c.model, a);
    } else if let Some(t) = &c.training {
        print_training(t);
    } else {
        print_timed(c);
    }
    println!("wrote {0}/cluster.json and {0}/cluster.md", dir.display());
}

fn print_accuracy(model: &str, a: &AccuracyFigures) {
    println!(
        "  accuracy of {model} against {}: worst output {} MSE {} ({}; Table 3 over all {} inputs); {}",
        a.reference,
        a.worst_output,
        a.mse
            .map_or("n/a: NaN/Inf output".into(), crate::util::fmt::sci),
        a.level.map_or("no level".into(), |l| l.to_string()),
        a.inputs,
        a.agreement_text
    );
    for o in &a.outputs {
        println!(
            "  output {}: MSE {}, max abs error {}, relative L2 {}, cosine {} over {} elements",
            o.name,
            crate::util::fmt::sci(o.metrics.mse),
            crate::util::fmt::sci(o.metrics.max_abs_error),
            crate::util::fmt::sci(o.metrics.rel_l2_error),
            f(Some(o.metrics.cosine), 6),
            o.metrics.elements
        );
    }
    for n in &a.nodes {
        println!(
            "  rank {} on {}: inputs {}..{} ({}), worst-output MSE {}{}",
            n.rank,
            n.host,
            n.shard.start,
            n.shard.end,
            n.inputs,
            n.mse.map_or("n/a".into(), crate::util::fmt::sci),
            if n.complete { "" } else { ", incomplete" }
        );
    }
}

fn print_training(t: &TrainingFigures) {
    println!(
        "  training {} with {}, global batch {}; held-out at the end {}",
        t.workload,
        t.all_reduce,
        t.global_batch,
        f(t.final_eval, 4)
    );
    for (name, x) in [
        (
            "throughput, mean of the nodes (§7.1.5 b)",
            &t.throughput_mean,
        ),
        ("throughput, sum of the nodes", &t.throughput_sum),
        ("scaling efficiency", &t.scaling_efficiency),
    ] {
        match x.value {
            Some(v) => println!("  {name}: {v:.2} {}", x.unit),
            None => println!("  {name}: {}", x.definition),
        }
    }
    for n in &t.nodes {
        println!(
            "  rank {} on {}: {} samples, {} samples/s, all-reduce {:.3} s ({} of its step time), {} bytes sent, {} rounds per call",
            n.rank,
            n.host,
            n.local_samples,
            f(n.samples_per_s, 1),
            n.all_reduce_s,
            n.all_reduce_share
                .map_or("n/a".into(), |s| format!("{:.1} %", s * 100.0)),
            n.bytes_sent,
            n.rounds
        );
    }
}

fn print_timed(c: &ClusterReport) {
    let k = &c.cluster;
    match k.fps.value {
        Some(v) => println!(
            "  FPS (§7.2.4 b, N / (max Tio - min Tis)): {v:.2} inferences/s, error bar {} .. {} (T = {} s +- {} s)",
            f(k.fps_low, 2),
            f(k.fps_high, 2),
            f(k.t_s, 6),
            f(k.t_error_s, 6),
        ),
        None => println!("  FPS (§7.2.4 b): {}", k.fps.definition),
    }
    if let Some(v) = k.fps_barrier.value {
        println!(
            "  FPS barrier to barrier (rank 0's clock): {v:.2} inferences/s; imbalance {}",
            f(k.imbalance, 3)
        );
    }
    println!(
        "  energy: {}",
        k.energy_j.map_or_else(
            || k.energy_na.clone().unwrap_or_default(),
            |e| format!(
                "{e:.3} J, {} inferences/J",
                f(k.inferences_per_joule.value, 3)
            )
        )
    );
    for n in &c.nodes {
        println!(
            "  rank {} on {}: samples {}..{} ({}), {} inferences/s, offset {} s +- {} s, node {}",
            n.rank,
            n.host,
            n.shard.start,
            n.shard.end,
            n.samples,
            f(n.fps, 2),
            n.offset_s.map_or("n/a".into(), |v| format!("{v:.2e}")),
            n.offset_error_s
                .map_or("n/a".into(), |v| format!("{v:.2e}")),
            n.node_validity
        );
    }
}
