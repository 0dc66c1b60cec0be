//! `acceval merge DIR` (issue 25, point 3): the cluster's figures from the ranks' files.
//! Every rank must have reported a complete run of the same model, inputs and tool, with
//! shards that cover the N samples exactly once; otherwise the run is invalid and no cluster
//! FPS is given (never "the FPS of the survivors").
//!
//! §7.2.4 b: FPS = N / T, T = max Tio − min Tis, each rank's times moved onto rank 0's clock
//! by its measured offset (interpolated between the probes before and after the run); the
//! offsets' error bounds give the FPS's error bar. Rank 0's barrier-to-barrier time (one
//! clock, no offsets) is given beside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::report::schema::bench::Figure;
use crate::report::schema::cluster::{
    ClockOffset, ClusterFigures, ClusterReport, NodeFigures, RankReport, Shard, TrainRankReport,
    TrainingFigures, TrainingNode,
};

/// Why there is nothing to merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("cannot read {}: {err}", dir.display())]
    Read { dir: PathBuf, err: std::io::Error },
    #[error(
        "{} holds no rank-<r>.json: run `acceval bench --cluster {}` under the launcher first",
        dir.display(),
        dir.display()
    )]
    Empty { dir: PathBuf },
}

/// The rank files of `dir` (`rank-<r>.json`), by name, as read.
pub fn rank_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, MergeError> {
    let read_err = |err| MergeError::Read {
        dir: dir.to_path_buf(),
        err,
    };
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rank-") && n.ends_with(".json"))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(MergeError::Empty {
            dir: dir.to_path_buf(),
        });
    }
    let mut files = Vec::new();
    for n in names {
        let b = std::fs::read(dir.join(&n)).map_err(read_err)?;
        files.push((n, b));
    }
    Ok(files)
}

/// The rank files given as (name, bytes), by rank, and the problems met parsing them.
fn parse_ranks(files: &[(String, Vec<u8>)]) -> (BTreeMap<usize, RankReport>, Vec<String>) {
    let mut ranks = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, bytes) in files {
        match serde_json::from_slice::<RankReport>(bytes) {
            Ok(r) if *name != format!("rank-{}.json", r.rank) => {
                problems.push(format!("{name} says it is rank {}", r.rank))
            }
            Ok(r) => {
                ranks.insert(r.rank, r);
            }
            Err(e) => problems.push(format!("{name} is not a rank file: {e}")),
        }
    }
    (ranks, problems)
}

/// A rank's offset at time `t` (its clock): linear between the probes before and after
/// the run; with its error bound.
fn offset_at(
    before: Option<ClockOffset>,
    after: Option<ClockOffset>,
    t: f64,
) -> Option<(f64, f64)> {
    match (before, after) {
        (Some(b), Some(a)) if a.at_unix_s > b.at_unix_s => {
            let w = ((t - b.at_unix_s) / (a.at_unix_s - b.at_unix_s)).clamp(0.0, 1.0);
            Some((
                b.offset_s + w * (a.offset_s - b.offset_s),
                b.error_s.max(a.error_s),
            ))
        }
        (Some(o), _) | (None, Some(o)) => Some((o.offset_s, o.error_s)),
        (None, None) => None,
    }
}

/// Checks that every rank ran what rank 0 (or the lowest rank present) ran.
fn same_run(ranks: &BTreeMap<usize, RankReport>, problems: &mut Vec<String>) {
    let Some((&r0, first)) = ranks.iter().next() else {
        return;
    };
    let key = |r: &RankReport| {
        let rep = r.report.as_ref();
        [
            ("world size", r.world_size.to_string()),
            ("N (--runs)", r.total_samples.to_string()),
            ("tool", r.tool.clone()),
            ("kind", r.kind.clone()),
            (
                "model (SHA-256)",
                rep.map_or("n/a".into(), |x| x.model_sha256.clone()),
            ),
            (
                "inputs",
                rep.map_or("n/a".into(), |x| {
                    format!("{} ({} distinct)", x.inputs.source, x.inputs.count)
                }),
            ),
            (
                "backend",
                rep.map_or("n/a".into(), |x| x.session.backend.clone()),
            ),
            (
                "mode",
                rep.map_or("n/a".into(), |x| format!("{:?}", x.mode)),
            ),
        ]
    };
    let want = key(first);
    for (r, rank) in ranks.iter().skip(1) {
        for ((what, theirs), (_, ours)) in key(rank).iter().zip(&want) {
            // A rank without a report failed before measuring; its failure is named apart.
            if theirs != ours && theirs != "n/a" && ours != "n/a" {
                problems.push(format!(
                    "rank {r} ran a different {what} than rank {r0}: {theirs} vs {ours}"
                ));
            }
        }
    }
}

/// The merged figures of the rank files in `dir`: a `bench --cluster` run (rank-<r>.json)
/// or data-parallel training (train-rank-<r>.json; `baseline`: one rank's train report, for
/// the scaling efficiency).
pub fn merge(dir: &Path, baseline: Option<&Path>) -> Result<ClusterReport, MergeError> {
    let has = |prefix: &str| {
        std::fs::read_dir(dir).is_ok_and(|d| {
            d.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
        })
    };
    if has("train-rank-") && !has("rank-") {
        return merge_training(dir, baseline);
    }
    if has("accuracy-rank-") && !has("rank-") {
        return merge_accuracy(dir);
    }
    merge_bench_files(dir, &rank_files(dir)?)
}

/// The merged figures of a `bench --cluster` run from its rank files as read (name, bytes);
/// `dir` is the folder the report names. `grade` merges the bytes it keeps, and `verify`
/// the kept copies, through this.
pub fn merge_bench_files(
    dir: &Path,
    files: &[(String, Vec<u8>)],
) -> Result<ClusterReport, MergeError> {
    if files.is_empty() {
        return Err(MergeError::Empty {
            dir: dir.to_path_buf(),
        });
    }
    let (ranks, mut problems) = parse_ranks(files);
    let mut notes = Vec::new();
    let world = ranks.values().map(|r| r.world_size).max().unwrap_or(0);
    let missing: Vec<usize> = (0..world).filter(|r| !ranks.contains_key(r)).collect();
    for r in &missing {
        problems.push(format!(
            "rank {r} did not report (no rank-{r}.json): it died, hung or never started; the run is invalid"
        ));
    }
    same_run(&ranks, &mut problems);
    for (r, rank) in &ranks {
        if !rank.complete {
            problems.push(format!(
                "rank {r} did not complete: {}",
                rank.error.as_deref().unwrap_or("no reason recorded")
            ));
        }
        let want = Shard::of(rank.total_samples, world.max(1), *r);
        if rank.shard != want {
            problems.push(format!(
                "rank {r} ran samples {}..{}, its share of N = {} over {world} ranks is {}..{}",
                rank.shard.start, rank.shard.end, rank.total_samples, want.start, want.end
            ));
        }
    }
    let n = ranks.values().map(|r| r.total_samples).max().unwrap_or(0);
    let samples: usize = ranks.values().map(|r| r.samples).sum();
    if samples != n {
        problems.push(format!("the ranks ran {samples} samples in all, N is {n}"));
    }

    // Every rank's window on rank 0's clock.
    struct W {
        start: f64,
        end: f64,
        off: f64,
        err: f64,
    }
    let windows: BTreeMap<usize, W> = ranks
        .iter()
        .filter_map(|(r, x)| {
            let (tis, tio) = (x.start_unix_s?, x.end_unix_s?);
            let (o1, e1) = offset_at(x.clock_offset_before, x.clock_offset_after, tis)?;
            let (o2, e2) = offset_at(x.clock_offset_before, x.clock_offset_after, tio)?;
            Some((
                *r,
                W {
                    start: tis - o1,
                    end: tio - o2,
                    off: (o1 + o2) / 2.0,
                    err: e1.max(e2),
                },
            ))
        })
        .collect();
    for r in ranks.keys().filter(|r| !windows.contains_key(r)) {
        if ranks[r].complete {
            problems.push(format!(
                "rank {r} has no timed window or clock offset on record"
            ));
        }
    }
    let valid = problems.is_empty();
    let t0 = windows
        .values()
        .map(|w| w.start)
        .min_by(f64::total_cmp)
        .unwrap_or(0.0);
    let first = windows
        .iter()
        .min_by(|a, b| a.1.start.total_cmp(&b.1.start));
    let last = windows.iter().max_by(|a, b| a.1.end.total_cmp(&b.1.end));
    let (t_s, t_error_s) = match (first, last, valid) {
        (Some(a), Some(b), true) => (Some(b.1.end - a.1.start), Some(a.1.err + b.1.err)),
        _ => (None, None),
    };
    let invalid = || {
        format!(
            "n/a: the run is invalid ({})",
            problems.first().cloned().unwrap_or_default()
        )
    };
    let fps = Figure {
        value: t_s.filter(|t| *t > 0.0).map(|t| n as f64 / t),
        unit: "inferences/s".into(),
        definition: if valid {
            "§7.2.4 b: N / (max Tio − min Tis), each rank's Tis and Tio on rank 0's clock (NTP-style offsets)".into()
        } else {
            invalid()
        },
    };
    let (fps_low, fps_high) = match (t_s, t_error_s) {
        (Some(t), Some(e)) => (
            Some(n as f64 / (t + e)),
            (t - e > 0.0).then(|| n as f64 / (t - e)),
        ),
        _ => (None, None),
    };
    let r0 = ranks.get(&0);
    let barrier_t_s = r0
        .and_then(|r| Some(r.end_barrier_unix_s? - r.start_barrier_unix_s?))
        .filter(|_| valid);
    let fps_barrier = Figure {
        value: barrier_t_s.filter(|t| *t > 0.0).map(|t| n as f64 / t),
        unit: "inferences/s".into(),
        definition: if valid {
            "N / (rank 0's end barrier − its start barrier): one clock, no offsets; includes a barrier's latency and the last rank's tail".into()
        } else {
            invalid()
        },
    };
    if let (Some(t), Some(e), Some(b)) = (t_s, t_error_s, barrier_t_s)
        && t > b + e + 1e-3
    {
        notes.push(format!(
            "T = {t:.6} s exceeds the barrier-to-barrier time {b:.6} s by more than the offsets' bound ({e:.6} s): a clock moved during the run"
        ));
    }

    // Per node, and the energy.
    let mut hosts: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (r, x) in &ranks {
        hosts.entry(x.host.as_str()).or_default().push(*r);
    }
    let shared: Vec<String> = hosts
        .iter()
        .filter(|(_, rs)| rs.len() > 1)
        .map(|(h, rs)| format!("ranks {rs:?} share host {h}"))
        .collect();
    let mut nodes = Vec::new();
    for (r, x) in &ranks {
        let w = windows.get(r);
        let node_t = w.map(|w| w.end - w.start);
        let rep = x.report.as_ref();
        let (energy_j, energy_na) = match rep.and_then(|r| r.telemetry.as_ref()) {
            None => (
                None,
                Some("n/a: no telemetry (--sample-ms 0 or the run failed)".into()),
            ),
            Some(t) if t.energy.is_empty() => (
                None,
                Some(format!(
                    "n/a: {}",
                    t.energy_unavailable
                        .as_deref()
                        .unwrap_or("no energy sensor")
                )),
            ),
            Some(t) => (Some(t.energy.iter().map(|e| e.joules).sum()), None),
        };
        nodes.push(NodeFigures {
            rank: *r,
            host: x.host.clone(),
            shard: x.shard,
            samples: x.samples,
            start_s: w.map(|w| w.start - t0),
            end_s: w.map(|w| w.end - t0),
            fps: node_t.filter(|t| *t > 0.0).map(|t| x.samples as f64 / t),
            offset_s: w.map(|w| w.off),
            offset_error_s: w.map(|w| w.err),
            node_validity: rep.map_or("n/a: not measured".into(), |r| {
                let failed: Vec<_> = r
                    .validity
                    .rules
                    .iter()
                    .filter(|x| !x.passed)
                    .map(|x| x.rule.clone())
                    .collect();
                if failed.is_empty() {
                    format!("{:?}", r.validity.result)
                } else {
                    format!("{:?} ({})", r.validity.result, failed.join(", "))
                }
            }),
            energy_j,
            energy_na,
        });
    }
    let times: Vec<f64> = windows.values().map(|w| w.end - w.start).collect();
    let imbalance = (!times.is_empty() && valid).then(|| {
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        times.iter().copied().fold(0.0, f64::max) / mean
    });
    let (energy_j, energy_na) = if !valid {
        (None, Some(invalid()))
    } else if !shared.is_empty() {
        (
            None,
            Some(format!(
                "n/a: {}: each rank's sensors read the whole machine, so a sum would count it more than once",
                shared.join("; ")
            )),
        )
    } else if let Some(na) = nodes
        .iter()
        .find_map(|n| n.energy_na.clone().map(|e| (n.rank, e)))
    {
        (None, Some(format!("n/a: rank {}: {}", na.0, na.1)))
    } else {
        (Some(nodes.iter().filter_map(|n| n.energy_j).sum()), None)
    };
    let inferences_per_joule = Figure {
        value: energy_j.filter(|e| *e > 0.0).map(|e| n as f64 / e),
        unit: "inferences/J".into(),
        definition: match &energy_na {
            None => "§7.1.7 b: N / the nodes' energy over their windows, summed".into(),
            Some(na) => na.clone(),
        },
    };
    let any = ranks.values().find_map(|r| r.report.as_ref());
    Ok(ClusterReport {
        schema: "acceval.cluster/1".into(),
        dir: dir.display().to_string(),
        kind: ranks
            .values()
            .next()
            .map_or("bench".into(), |r| r.kind.clone()),
        valid,
        problems,
        notes,
        world_size: world,
        ranks_found: ranks.keys().copied().collect(),
        missing_ranks: missing,
        model: any.map_or("n/a".into(), |r| r.model.clone()),
        model_sha256: any.map_or("n/a".into(), |r| r.model_sha256.clone()),
        backend: any.map_or("n/a".into(), |r| r.session.backend.clone()),
        launcher: ranks
            .values()
            .next()
            .map_or("n/a".into(), |r| r.launcher.clone()),
        cluster: ClusterFigures {
            expected_samples: n,
            samples,
            t_s,
            t_error_s,
            fps,
            fps_low,
            fps_high,
            barrier_t_s,
            fps_barrier,
            imbalance,
            energy_j,
            energy_na,
            inferences_per_joule,
        },
        nodes,
        training: None,
        accuracy: None,
    })
}

/// A figure that does not apply to a training run.
fn not_bench(unit: &str) -> Figure {
    Figure {
        value: None,
        unit: unit.into(),
        definition: "n/a: a training run (see training)".into(),
    }
}

/// An accuracy run (`accuracy --cluster`): every rank graded its shard of the same N inputs
/// of the same reference with the same model, backend and build; each output's running sums
/// pooled in shard order give the metrics over all N (Table 3 on the worst output's MSE).
fn merge_accuracy(dir: &Path) -> Result<ClusterReport, MergeError> {
    use crate::accuracy::metrics::Accumulator;
    use crate::report::schema::accuracy::{Agreement, OutputResult};
    use crate::report::schema::cluster::{AccuracyFigures, AccuracyNode, AccuracyRankReport};

    let mut problems = Vec::new();
    let mut ranks: BTreeMap<usize, AccuracyRankReport> = BTreeMap::new();
    let names = std::fs::read_dir(dir).map_err(|err| MergeError::Read {
        dir: dir.to_path_buf(),
        err,
    })?;
    for e in names.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("accuracy-rank-") && name.ends_with(".json")) {
            continue;
        }
        match std::fs::read(e.path())
            .map_err(|e| e.to_string())
            .and_then(|t| {
                serde_json::from_slice::<AccuracyRankReport>(&t).map_err(|e| e.to_string())
            }) {
            Ok(r) if name != format!("accuracy-rank-{}.json", r.rank) => {
                problems.push(format!("{name} says it is rank {}", r.rank))
            }
            Ok(r) => {
                ranks.insert(r.rank, r);
            }
            Err(e) => problems.push(format!("{name} is not an accuracy rank file: {e}")),
        }
    }
    let world = ranks.values().map(|r| r.world_size).max().unwrap_or(0);
    let missing: Vec<usize> = (0..world).filter(|r| !ranks.contains_key(r)).collect();
    for r in &missing {
        problems.push(format!(
            "rank {r} did not report (no accuracy-rank-{r}.json): it died, hung or never started; the run is invalid"
        ));
    }
    let key = |r: &AccuracyRankReport| {
        let rep = r.report.as_ref();
        [
            ("world size", r.world_size.to_string()),
            ("N (inputs)", r.total_inputs.to_string()),
            ("tool", r.tool.clone()),
            (
                "model (SHA-256)",
                rep.map_or("n/a".into(), |x| x.model_sha256.clone()),
            ),
            (
                "reference",
                rep.map_or("n/a".into(), |x| {
                    format!(
                        "{} ({})",
                        x.reference.dir,
                        x.reference.model_sha256.clone().unwrap_or_default()
                    )
                }),
            ),
            (
                "backend",
                rep.map_or("n/a".into(), |x| x.session.backend.clone()),
            ),
        ]
    };
    if let Some((&r0, first)) = ranks.iter().next() {
        let want = key(first);
        for (r, rank) in ranks.iter().skip(1) {
            for ((what, theirs), (_, ours)) in key(rank).iter().zip(&want) {
                if theirs != ours && theirs != "n/a" && ours != "n/a" {
                    problems.push(format!(
                        "rank {r} ran a different {what} than rank {r0}: {theirs} vs {ours}"
                    ));
                }
            }
        }
    }
    let n = ranks.values().map(|r| r.total_inputs).max().unwrap_or(0);
    for (r, rank) in &ranks {
        if !rank.complete {
            problems.push(format!(
                "rank {r} did not complete: {}",
                rank.error.as_deref().unwrap_or("no reason recorded")
            ));
        }
        let want = Shard::of(rank.total_inputs, world.max(1), *r);
        if rank.shard != want {
            problems.push(format!(
                "rank {r} graded inputs {}..{}, its share of N = {} over {world} ranks is {}..{}",
                rank.shard.start, rank.shard.end, rank.total_inputs, want.start, want.end
            ));
        }
    }
    let graded: usize = ranks
        .values()
        .map(|r| r.report.as_ref().map_or(0, |x| x.inputs_used))
        .sum();
    if graded != n {
        problems.push(format!("the ranks graded {graded} inputs in all, N is {n}"));
    }
    // Pool each output's sums in shard (= rank) order.
    let out_names: Vec<String> = ranks
        .values()
        .next()
        .map(|r| r.sums.iter().map(|s| s.name.clone()).collect())
        .unwrap_or_default();
    let mut acc = vec![Accumulator::default(); out_names.len()];
    let mut agreement: Option<Agreement> = None;
    for (r, rank) in &ranks {
        let names: Vec<&str> = rank.sums.iter().map(|s| s.name.as_str()).collect();
        if names != out_names.iter().map(String::as_str).collect::<Vec<_>>() {
            problems.push(format!(
                "rank {r}'s outputs {names:?} differ from the first rank's {out_names:?}"
            ));
            continue;
        }
        for (a, s) in acc.iter_mut().zip(&rank.sums) {
            a.merge(&Accumulator::from_sums(s));
        }
        if let Some(rep) = &rank.report {
            match &mut agreement {
                Some(a) => a.merge(&rep.agreement),
                None => agreement = Some(rep.agreement.clone()),
            }
        }
    }
    let decl = |i: usize| {
        ranks
            .values()
            .find_map(|r| r.report.as_ref().and_then(|x| x.outputs.get(i)))
            .map(|o| (o.elem_type.clone(), o.shape.clone()))
            .unwrap_or_default()
    };
    let outputs: Vec<OutputResult> = out_names
        .iter()
        .zip(&acc)
        .enumerate()
        .map(|(i, (name, a))| {
            let m = a.finish();
            let (elem_type, shape) = decl(i);
            OutputResult {
                name: name.clone(),
                elem_type,
                shape,
                level: crate::standard::accuracy_level(m.mse),
                metrics: m,
            }
        })
        .collect();
    let worst = outputs.iter().max_by(|a, b| {
        let k = |m: &crate::report::schema::accuracy::ErrorMetrics| {
            if m.mse.is_nan() { f64::INFINITY } else { m.mse }
        };
        k(&a.metrics).total_cmp(&k(&b.metrics))
    });
    let mse = worst.map(|w| w.metrics.mse).filter(|m| !m.is_nan());
    let agreement = agreement.unwrap_or(Agreement::NotApplicable {
        reason: "no rank graded an input".into(),
    });
    let first = ranks.values().next();
    let rep0 = first.and_then(|r| r.report.as_ref());
    let valid = problems.is_empty();
    let figures = AccuracyFigures {
        definition: format!(
            "{} Pooled over the ranks: each output's sums (Σ(x−y)², Σx², Σy², Σxy, max, NaN/Inf counts) added in shard order, then the ratios formed, as one node grading all N would.",
            crate::report::schema::accuracy::DEFINITION
        ),
        reference: rep0.map_or("n/a".into(), |x| x.reference.dir.clone()),
        expected_inputs: n,
        inputs: graded,
        mse,
        worst_output: worst.map_or("n/a".into(), |w| w.name.clone()),
        level: mse.and_then(crate::standard::accuracy_level),
        agreement_text: agreement.text(),
        agreement,
        outputs,
        nodes: ranks
            .values()
            .map(|r| AccuracyNode {
                rank: r.rank,
                host: r.host.clone(),
                shard: r.shard,
                inputs: r.report.as_ref().map_or(0, |x| x.inputs_used),
                mse: r.report.as_ref().map(|x| x.mse).filter(|m| !m.is_nan()),
                level: r.report.as_ref().and_then(|x| x.level),
                complete: r.complete,
            })
            .collect(),
    };
    let not_timed = |unit: &str| Figure {
        value: None,
        unit: unit.into(),
        definition: "n/a: an accuracy run (see accuracy)".into(),
    };
    Ok(ClusterReport {
        schema: "acceval.cluster/1".into(),
        dir: dir.display().to_string(),
        kind: "accuracy".into(),
        valid,
        problems,
        notes: Vec::new(),
        world_size: world,
        ranks_found: ranks.keys().copied().collect(),
        missing_ranks: missing,
        model: rep0.map_or("n/a".into(), |x| x.model.clone()),
        model_sha256: rep0.map_or("n/a".into(), |x| x.model_sha256.clone()),
        backend: rep0.map_or("n/a".into(), |x| x.session.backend.clone()),
        launcher: first.map_or("n/a".into(), |x| x.launcher.clone()),
        cluster: ClusterFigures {
            expected_samples: n,
            samples: graded,
            t_s: None,
            t_error_s: None,
            fps: not_timed("inferences/s"),
            fps_low: None,
            fps_high: None,
            barrier_t_s: None,
            fps_barrier: not_timed("inferences/s"),
            imbalance: None,
            energy_j: None,
            energy_na: Some("n/a: an accuracy run is not timed across the ranks".into()),
            inferences_per_joule: not_timed("inferences/J"),
        },
        nodes: Vec::new(),
        training: None,
        accuracy: Some(figures),
    })
}

/// Data-parallel training: every rank reported a complete run of the same workload, batch
/// and build, and reached the same held-out metric (the same weights).
fn merge_training(dir: &Path, baseline: Option<&Path>) -> Result<ClusterReport, MergeError> {
    let mut problems = Vec::new();
    let mut ranks: BTreeMap<usize, TrainRankReport> = BTreeMap::new();
    let names = std::fs::read_dir(dir).map_err(|err| MergeError::Read {
        dir: dir.to_path_buf(),
        err,
    })?;
    for e in names.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("train-rank-") && name.ends_with(".json")) {
            continue;
        }
        match std::fs::read_to_string(e.path())
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<TrainRankReport>(&t).map_err(|e| e.to_string()))
        {
            Ok(r) => {
                ranks.insert(r.rank, r);
            }
            Err(e) => problems.push(format!("{name} is not a training rank file: {e}")),
        }
    }
    let world = ranks.values().map(|r| r.world_size).max().unwrap_or(0);
    let missing: Vec<usize> = (0..world).filter(|r| !ranks.contains_key(r)).collect();
    for r in &missing {
        problems.push(format!(
            "rank {r} did not report (no train-rank-{r}.json): it died, hung or never started; the run is invalid"
        ));
    }
    let key = |r: &TrainRankReport| {
        let rep = r.report.as_ref();
        format!(
            "{} | {} | batch {} | {} | {}",
            r.tool,
            rep.map_or("n/a".into(), |x| x.workload.clone()),
            r.global_batch,
            r.all_reduce,
            rep.map_or(0, |x| x.epochs.len())
        )
    };
    let eval = |r: &TrainRankReport| {
        r.report
            .as_ref()
            .and_then(|x| x.epochs.iter().rev().find_map(|e| e.eval.as_ref()))
            .map(|e| e.value)
    };
    let first = ranks.values().next();
    for (r, x) in &ranks {
        if !x.complete {
            problems.push(format!(
                "rank {r} did not complete: {}",
                x.error.as_deref().unwrap_or("no reason recorded")
            ));
        }
        if let Some(f) = first
            && key(x) != key(f)
        {
            problems.push(format!(
                "rank {r} ran {} but rank {} ran {}",
                key(x),
                f.rank,
                key(f)
            ));
        }
        if let (Some(a), Some(b)) = (first.and_then(eval), eval(x))
            && a != b
        {
            problems.push(format!(
                "rank {r} ends at held-out {b}, rank {} at {a}: the ranks' weights diverged",
                first.map_or(0, |f| f.rank)
            ));
        }
    }
    let valid = problems.is_empty();
    let nodes: Vec<TrainingNode> = ranks
        .values()
        .map(|x| TrainingNode {
            rank: x.rank,
            host: x.host.clone(),
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
    let all = valid && rates.len() == nodes.len() && !rates.is_empty();
    let why = || {
        format!(
            "n/a: the run is invalid ({})",
            problems
                .first()
                .cloned()
                .unwrap_or("a node has no throughput".into())
        )
    };
    let sum = all.then(|| rates.iter().sum::<f64>());
    let fig = |v: Option<f64>, d: &str| Figure {
        value: v,
        unit: "samples/s".into(),
        definition: if v.is_some() { d.to_string() } else { why() },
    };
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
    let scaling_efficiency = match (sum, base) {
        (Some(s), Some(Ok(b))) if b > 0.0 => Figure {
            value: Some(s / (world as f64 * b)),
            unit: "ratio".into(),
            definition: format!(
                "the cluster's samples/s / ({world} × the one-rank run's {b:.1} samples/s)"
            ),
        },
        (_, Some(Err(e))) => Figure {
            value: None,
            unit: "ratio".into(),
            definition: e,
        },
        _ => Figure {
            value: None,
            unit: "ratio".into(),
            definition: "n/a: give merge --baseline REPORT (one rank's train --export-json on the same workload)".into(),
        },
    };
    let f = first;
    let training = TrainingFigures {
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
        scaling_efficiency,
        final_eval: f.and_then(eval),
    };
    Ok(ClusterReport {
        schema: "acceval.cluster/1".into(),
        dir: dir.display().to_string(),
        kind: "train".into(),
        valid,
        problems,
        notes: Vec::new(),
        world_size: world,
        ranks_found: ranks.keys().copied().collect(),
        missing_ranks: missing,
        model: training.workload.clone(),
        model_sha256: "n/a: a built-in workload".into(),
        backend: f
            .and_then(|x| x.report.as_ref())
            .map_or("n/a".into(), |x| x.framework.clone()),
        launcher: f.map_or("n/a".into(), |x| x.launcher.clone()),
        cluster: ClusterFigures {
            expected_samples: 0,
            samples: 0,
            t_s: None,
            t_error_s: None,
            fps: not_bench("inferences/s"),
            fps_low: None,
            fps_high: None,
            barrier_t_s: None,
            fps_barrier: not_bench("inferences/s"),
            imbalance: None,
            energy_j: None,
            energy_na: Some("n/a: a training run (each rank's report has its own energy)".into()),
            inferences_per_joule: not_bench("inferences/J"),
        },
        nodes: Vec::new(),
        training: Some(training),
        accuracy: None,
    })
}

/// The merged figures as Markdown (DIR/cluster.md).
pub fn markdown(c: &ClusterReport) -> String {
    let f = |v: Option<f64>, d: usize| v.map_or("n/a".to_string(), |v| format!("{v:.d$}"));
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
        return s;
    }
    if let Some(t) = &c.training {
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
        return s;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_evenly_with_the_remainder_to_the_first_ranks() {
        let s: Vec<_> = (0..3).map(|r| Shard::of(10, 3, r)).collect();
        assert_eq!(
            s.iter().map(|s| (s.start, s.end)).collect::<Vec<_>>(),
            [(0, 4), (4, 7), (7, 10)]
        );
        assert_eq!(Shard::of(2, 3, 2).len(), 0);
    }

    #[test]
    fn offsets_are_interpolated_between_the_probes() {
        let b = ClockOffset {
            offset_s: 0.010,
            error_s: 0.001,
            probes: 16,
            at_unix_s: 100.0,
        };
        let a = ClockOffset {
            offset_s: 0.020,
            error_s: 0.002,
            at_unix_s: 110.0,
            ..b
        };
        let (o, e) = offset_at(Some(b), Some(a), 105.0).unwrap();
        assert!((o - 0.015).abs() < 1e-12 && e == 0.002);
        assert_eq!(offset_at(Some(b), None, 1e9), Some((0.010, 0.001)));
        assert_eq!(offset_at(None, None, 0.0), None);
    }
}
