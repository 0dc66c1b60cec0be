//! Data-parallel training (`train --cluster`, §5.2, §7.1.5 b): every rank reported a
//! complete run of the same workload, batch and build, and reached the same held-out metric
//! (the same weights); the cluster's throughput is the mean of the nodes' (the draft's
//! definition) with their sum beside it, and the scaling efficiency against one rank's run.

use std::path::Path;

use super::{MergeError, Ranks, rank_files, read_ranks, untimed};
use crate::report::schema::bench::Figure;
use crate::report::schema::cluster::{
    ClusterReport, TrainRankReport, TrainingFigures, TrainingNode,
};

/// The held-out metric a rank's training ended at.
fn final_eval(r: &TrainRankReport) -> Option<f64> {
    r.report
        .as_ref()
        .and_then(|x| x.epochs.iter().rev().find_map(|e| e.eval.as_ref()))
        .map(|e| e.value)
}

/// The training run in `dir` (`train-rank-<r>.json`); `baseline`: one rank's train report,
/// for the scaling efficiency.
pub fn merge_training(dir: &Path, baseline: Option<&Path>) -> Result<ClusterReport, MergeError> {
    let files = rank_files(dir, "train-rank-")?;
    let mut ranks = read_ranks::<TrainRankReport>(&files);
    diverged(&mut ranks);
    let training = figures(&ranks, baseline);
    let f = ranks.first();
    let what = (
        training.workload.clone(),
        "n/a: a built-in workload".into(),
        f.and_then(|x| x.report.as_ref())
            .map_or("n/a".into(), |x| x.framework.clone()),
    );
    let cluster = untimed(
        "a training run (see training)",
        "n/a: a training run (each rank's report has its own energy)",
    );
    let mut report = ranks.report(dir, "train", what, cluster);
    report.training = Some(training);
    Ok(report)
}

/// Every rank must end at the lowest rank's held-out metric: the same weights.
fn diverged(ranks: &mut Ranks<TrainRankReport>) {
    let Some(first) = ranks.first() else {
        return;
    };
    let (r0, a) = (first.common.rank, final_eval(first));
    let mut problems = Vec::new();
    for (r, x) in &ranks.by_rank {
        if let (Some(a), Some(b)) = (a, final_eval(x))
            && a != b
        {
            problems.push(format!(
                "rank {r} ends at held-out {b}, rank {r0} at {a}: the ranks' weights diverged"
            ));
        }
    }
    ranks.problems.extend(problems);
}

/// §7.1.5 b: the nodes' throughputs, their mean and sum, and the scaling efficiency.
fn figures(ranks: &Ranks<TrainRankReport>, baseline: Option<&Path>) -> TrainingFigures {
    let nodes: Vec<TrainingNode> = ranks
        .by_rank
        .values()
        .map(|x| TrainingNode {
            rank: x.common.rank,
            host: x.common.host.clone(),
            local_samples: x.local_samples,
            samples_per_s: x.local_samples_per_s,
            compute_s: x.compute_s,
            all_reduce_s: x.comm.seconds,
            all_reduce_share: x
                .compute_s
                .map(|c| x.comm.seconds / (c + x.comm.seconds))
                .filter(|v| v.is_finite()),
            bytes_sent: x.comm.bytes_sent,
            rounds: x.comm.rounds,
        })
        .collect();
    let rates: Vec<f64> = nodes.iter().filter_map(|n| n.samples_per_s).collect();
    let all = ranks.problems.is_empty() && rates.len() == nodes.len() && !rates.is_empty();
    let why = format!(
        "n/a: the run is invalid ({})",
        ranks
            .problems
            .first()
            .cloned()
            .unwrap_or("a node has no throughput".into())
    );
    let sum = all.then(|| rates.iter().sum::<f64>());
    let fig = |v: Option<f64>, d: &str| Figure {
        value: v,
        unit: "samples/s".into(),
        definition: if v.is_some() {
            d.to_string()
        } else {
            why.clone()
        },
    };
    let f = ranks.first();
    TrainingFigures {
        workload: f
            .and_then(|x| x.report.as_ref())
            .map_or("n/a".into(), |x| x.workload.clone()),
        all_reduce: f.map_or("n/a".into(), |x| x.all_reduce.clone()),
        global_batch: f.map_or(0, |x| x.global_batch),
        throughput_mean: fig(
            sum.map(|s| s / rates.len() as f64),
            "§7.1.5 b: the mean of the nodes' throughputs (each node's samples / its run time)",
        ),
        throughput_sum: fig(
            sum,
            "the nodes' throughputs summed: the cluster's samples/s",
        ),
        nodes,
        scaling_efficiency: scaling(sum, ranks.world, baseline),
        final_eval: f.and_then(final_eval),
    }
}

/// The cluster's samples/s over `world` times one rank's (`baseline`, a train report).
fn scaling(sum: Option<f64>, world: usize, baseline: Option<&Path>) -> Figure {
    let base = baseline.map(|p| {
        std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| {
                serde_json::from_str::<crate::report::schema::train::TrainReport>(&t)
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| format!("n/a: --baseline {}: {e}", p.display()))
            .and_then(|r| {
                r.throughput_samples_per_s
                    .value()
                    .ok_or_else(|| "n/a: the baseline has no throughput".to_string())
            })
    });
    let (value, definition) = match (sum, base) {
        (Some(s), Some(Ok(b))) if b > 0.0 => (
            Some(s / (world as f64 * b)),
            format!("the cluster's samples/s / ({world} × the one-rank run's {b:.1} samples/s)"),
        ),
        (_, Some(Err(e))) => (None, e),
        (None, Some(Ok(_))) => (None, "n/a: the cluster has no throughput".into()),
        _ => (
            None,
            "n/a: give merge --baseline REPORT (one rank's train --export-json on the same workload)"
                .into(),
        ),
    };
    Figure {
        value,
        unit: "ratio".into(),
        definition,
    }
}
