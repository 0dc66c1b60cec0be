//! `acceval merge DIR` (issue 25, point 3): the cluster's figures from the ranks' files.
//! Every rank must have reported a complete run of the same model, inputs and tool, with
//! shards that cover the N samples exactly once; otherwise the run is invalid and no cluster
//! figure is given (never "the FPS of the survivors").
//!
//! This module holds what the three kinds of run share: reading the rank files, the checks
//! every merge makes ([`read_ranks`]), and the report's frame. `bench` merges a timed run,
//! `train` data-parallel training; an accuracy run is pooled by `accuracy::pooled`.

mod bench;
mod markdown;
mod train;

pub use bench::merge_bench_files;
pub use markdown::markdown;
pub use train::merge_training;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::report::schema::bench::Figure;
use crate::report::schema::cluster::{
    AccuracyRankReport, ClusterFigures, ClusterReport, RankCommon, RankReport, Shard,
    TrainRankReport,
};

/// Why there is nothing to merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("cannot read {}: {err}", dir.display())]
    Read { dir: PathBuf, err: std::io::Error },
    #[error(
        "{} holds no rank-<r>.json, train-rank-<r>.json or accuracy-rank-<r>.json: run `acceval bench --cluster {}` (or train, accuracy) under the launcher first",
        dir.display(),
        dir.display()
    )]
    Empty { dir: PathBuf },
}

/// A kind of rank file `merge` reads.
pub trait Mergeable: DeserializeOwned {
    /// The file name before `<r>.json`.
    const PREFIX: &'static str;
    /// The file in words, for "NAME is not a <WHAT>".
    const WHAT: &'static str;
    fn common(&self) -> &RankCommon;
    /// N and this rank's share of it, where the run splits N items over the ranks, with the
    /// items' name ("samples", "inputs").
    fn shard(&self) -> Option<(usize, Shard, &'static str)>;
    /// What every rank must have run the same: (what, value), "n/a" where not known (a rank
    /// that failed before measuring, whose failure is named apart).
    fn identity(&self) -> Vec<(&'static str, String)>;
}

/// The rank files of `dir` named `<prefix><r>.json`, by name, as read.
pub fn rank_files(dir: &Path, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, MergeError> {
    let read_err = |err| MergeError::Read {
        dir: dir.to_path_buf(),
        err,
    };
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".json"))
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

/// Which kind of run `dir` holds, by its rank files' names: the prefix, or None.
pub fn kind_of(dir: &Path) -> Option<&'static str> {
    let names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    [
        RankReport::PREFIX,
        TrainRankReport::PREFIX,
        AccuracyRankReport::PREFIX,
    ]
    .into_iter()
    .find(|p| names.iter().any(|n| n.starts_with(p)))
}

/// The rank files of one run, checked as every merge checks them.
pub struct Ranks<T> {
    pub by_rank: BTreeMap<usize, T>,
    /// The largest world size any rank reported.
    pub world: usize,
    pub missing: Vec<usize>,
    /// Every reason the run is invalid, in words; empty when it is valid so far.
    pub problems: Vec<String>,
}

impl<T: Mergeable> Ranks<T> {
    pub fn first(&self) -> Option<&T> {
        self.by_rank.values().next()
    }

    /// The frame of the merged report: who ran, which ranks are missing, and the problems
    /// found; the caller fills in the figures.
    pub fn report(
        &self,
        dir: &Path,
        kind: &str,
        (model, model_sha256, backend): (String, String, String),
        cluster: ClusterFigures,
    ) -> ClusterReport {
        ClusterReport {
            schema: "acceval.cluster/1".into(),
            dir: dir.display().to_string(),
            kind: kind.into(),
            valid: self.problems.is_empty(),
            problems: self.problems.clone(),
            notes: Vec::new(),
            world_size: self.world,
            ranks_found: self.by_rank.keys().copied().collect(),
            missing_ranks: self.missing.clone(),
            model,
            model_sha256,
            backend,
            launcher: self
                .first()
                .map_or("n/a".into(), |r| r.common().launcher.clone()),
            cluster,
            nodes: Vec::new(),
            training: None,
            accuracy: None,
        }
    }
}

/// Parses the rank files given as (name, bytes) and makes the checks every kind of run
/// shares: each file is the rank its name says; every rank of the world reported and
/// completed; all ran the same thing; the shards are each rank's share of N.
pub fn read_ranks<T: Mergeable>(files: &[(String, Vec<u8>)]) -> Ranks<T> {
    let mut by_rank = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, bytes) in files {
        match serde_json::from_slice::<T>(bytes) {
            Ok(r) if *name != format!("{}{}.json", T::PREFIX, r.common().rank) => {
                problems.push(format!("{name} says it is rank {}", r.common().rank))
            }
            Ok(r) => {
                by_rank.insert(r.common().rank, r);
            }
            Err(e) => problems.push(format!("{name} is not a {}: {e}", T::WHAT)),
        }
    }
    let world = by_rank
        .values()
        .map(|r| r.common().world_size)
        .max()
        .unwrap_or(0);
    let missing: Vec<usize> = (0..world).filter(|r| !by_rank.contains_key(r)).collect();
    for r in &missing {
        problems.push(format!(
            "rank {r} did not report (no {}{r}.json): it died, hung or never started; the run is invalid",
            T::PREFIX
        ));
    }
    same_run(&by_rank, &mut problems);
    for (r, rank) in &by_rank {
        let c = rank.common();
        if !c.complete {
            problems.push(format!(
                "rank {r} did not complete: {}",
                c.error.as_deref().unwrap_or("no reason recorded")
            ));
        }
        if let Some((n, shard, items)) = rank.shard() {
            let want = Shard::of(n, world.max(1), *r);
            if shard != want {
                problems.push(format!(
                    "rank {r} ran {items} {}..{}, its share of N = {n} over {world} ranks is {}..{}",
                    shard.start, shard.end, want.start, want.end
                ));
            }
        }
    }
    Ranks {
        by_rank,
        world,
        missing,
        problems,
    }
}

/// Checks that every rank ran what the lowest rank present ran.
fn same_run<T: Mergeable>(ranks: &BTreeMap<usize, T>, problems: &mut Vec<String>) {
    let Some((&r0, first)) = ranks.iter().next() else {
        return;
    };
    let want = first.identity();
    for (r, rank) in ranks.iter().skip(1) {
        for ((what, theirs), (_, ours)) in rank.identity().iter().zip(&want) {
            if theirs != ours && theirs != "n/a" && ours != "n/a" {
                problems.push(format!(
                    "rank {r} ran a different {what} than rank {r0}: {theirs} vs {ours}"
                ));
            }
        }
    }
}

/// The cross-rank timing figures of a run that is not timed across the ranks (training,
/// accuracy): each says so.
pub fn untimed(kind_in_words: &str, energy_na: &str) -> ClusterFigures {
    let not = |unit: &str| Figure {
        value: None,
        unit: unit.into(),
        definition: format!("n/a: {kind_in_words}"),
    };
    ClusterFigures {
        expected_samples: 0,
        samples: 0,
        t_s: None,
        t_error_s: None,
        fps: not("inferences/s"),
        fps_low: None,
        fps_high: None,
        barrier_t_s: None,
        fps_barrier: not("inferences/s"),
        imbalance: None,
        energy_j: None,
        energy_na: Some(energy_na.into()),
        inferences_per_joule: not("inferences/J"),
    }
}

impl Mergeable for RankReport {
    const PREFIX: &'static str = "rank-";
    const WHAT: &'static str = "rank file";
    fn common(&self) -> &RankCommon {
        &self.common
    }
    fn shard(&self) -> Option<(usize, Shard, &'static str)> {
        Some((self.total_samples, self.shard, "samples"))
    }
    fn identity(&self) -> Vec<(&'static str, String)> {
        let rep = self.report.as_ref();
        let na = || "n/a".to_string();
        vec![
            ("world size", self.common.world_size.to_string()),
            ("N (--runs)", self.total_samples.to_string()),
            ("tool", self.common.tool.clone()),
            ("kind", self.kind.clone()),
            (
                "model (SHA-256)",
                rep.map_or_else(na, |x| x.model_sha256.clone()),
            ),
            (
                "inputs",
                rep.map_or_else(na, |x| {
                    format!("{} ({} distinct)", x.inputs.source, x.inputs.count)
                }),
            ),
            (
                "backend",
                rep.map_or_else(na, |x| x.session.backend.clone()),
            ),
            ("mode", rep.map_or_else(na, |x| format!("{:?}", x.mode))),
        ]
    }
}

impl Mergeable for TrainRankReport {
    const PREFIX: &'static str = "train-rank-";
    const WHAT: &'static str = "training rank file";
    fn common(&self) -> &RankCommon {
        &self.common
    }
    fn shard(&self) -> Option<(usize, Shard, &'static str)> {
        None
    }
    fn identity(&self) -> Vec<(&'static str, String)> {
        let rep = self.report.as_ref();
        let na = || "n/a".to_string();
        vec![
            ("world size", self.common.world_size.to_string()),
            ("tool", self.common.tool.clone()),
            ("workload", rep.map_or_else(na, |x| x.workload.clone())),
            ("global batch", self.global_batch.to_string()),
            ("all-reduce", self.all_reduce.clone()),
            (
                "number of epochs",
                rep.map_or_else(na, |x| x.epochs.len().to_string()),
            ),
        ]
    }
}
