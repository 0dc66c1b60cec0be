//! Cluster runs (§7.2.4 b, §7.1.7 b; issue 25): what each rank writes (`rank-<r>.json`) and
//! what `acceval merge` computes from them (`cluster.json`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bench::{BenchReport, Figure};
use super::train::TrainReport;

/// The samples a rank ran: sample k of the cluster's N uses input k mod (distinct inputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Shard {
    /// The first sample index (inclusive).
    pub start: usize,
    /// One past the last sample index.
    pub end: usize,
}

impl Shard {
    /// Rank `rank`'s share of `n` samples over `world` ranks: an even split, the remainder
    /// one each to the first ranks.
    pub fn of(n: usize, world: usize, rank: usize) -> Shard {
        let (base, extra) = (n / world, n % world);
        let start = rank * base + rank.min(extra);
        Shard {
            start,
            end: start + base + usize::from(rank < extra),
        }
    }
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A rank's clock against rank 0's, by NTP-style probes (rank 0's own is exactly 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClockOffset {
    /// This rank's clock minus rank 0's, s: a time t here is t − offset on rank 0's clock.
    pub offset_s: f64,
    /// Half the round trip of the probe used: |error of the offset| ≤ this, s.
    pub error_s: f64,
    pub probes: usize,
    /// When it was measured, on this rank's clock (UNIX s).
    pub at_unix_s: f64,
}

/// What every rank file records about the rank: who it is, where, found how, with which
/// build, and whether it finished.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RankCommon {
    pub rank: usize,
    pub world_size: usize,
    #[serde(default)]
    pub local_rank: Option<usize>,
    #[serde(default)]
    pub node: Option<usize>,
    pub host: String,
    /// The launcher the rank was found by, and the variables read.
    pub launcher: String,
    pub launcher_source: Vec<String>,
    /// acceval's version and commit (every rank must run the same).
    pub tool: String,
    /// False when this rank or the meeting failed; `error` says what.
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `DIR/rank-<r>.json`: one rank's part of a cluster run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RankReport {
    /// `acceval.cluster-rank/1`.
    pub schema: String,
    /// `bench` (the only kind so far).
    pub kind: String,
    #[serde(flatten)]
    pub common: RankCommon,
    /// How the ranks met (TCP at an address; where the address came from).
    pub rendezvous: String,
    /// N: the cluster's samples in all.
    pub total_samples: usize,
    pub shard: Shard,
    /// Samples this rank finished in its timed window.
    pub samples: usize,
    /// Tis: the first sample's start, UNIX s on this rank's clock.
    pub start_unix_s: Option<f64>,
    /// Tio: the last sample's end, UNIX s on this rank's clock.
    pub end_unix_s: Option<f64>,
    /// When this rank left the start and end barriers, UNIX s on its clock (rank 0's
    /// are the times it released the others).
    pub start_barrier_unix_s: Option<f64>,
    pub end_barrier_unix_s: Option<f64>,
    /// Before the run and after it.
    pub clock_offset_before: Option<ClockOffset>,
    pub clock_offset_after: Option<ClockOffset>,
    /// The rank's own measurement (latency, stages, telemetry) over its shard; absent when it
    /// failed before measuring.
    pub report: Option<BenchReport>,
}

/// One rank in the merged figures; times on rank 0's clock, s after the cluster's start.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NodeFigures {
    pub rank: usize,
    pub host: String,
    pub shard: Shard,
    pub samples: usize,
    /// Tis − min Tis, s (offset-corrected).
    pub start_s: Option<f64>,
    /// Tio − min Tis, s (offset-corrected).
    pub end_s: Option<f64>,
    /// samples / (Tio − Tis), inferences/s.
    pub fps: Option<f64>,
    /// The offset applied (interpolated between the before and after probes), s, and its
    /// bound.
    pub offset_s: Option<f64>,
    pub offset_error_s: Option<f64>,
    /// The node's own bench verdict over its shard (VALID / INVALID and why).
    pub node_validity: String,
    /// Energy over the node's window, J (summed over its devices), or why not.
    pub energy_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_na: Option<String>,
}

/// The cluster's figures.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ClusterFigures {
    /// N as the ranks were told it.
    pub expected_samples: usize,
    /// Σ of the ranks' samples (must equal N).
    pub samples: usize,
    /// T = max Tio − min Tis on rank 0's clock, s.
    pub t_s: Option<f64>,
    /// The bound on T's error from the clock offsets, s.
    pub t_error_s: Option<f64>,
    /// §7.2.4 b: N / T.
    pub fps: Figure,
    /// N / (T + error) and N / (T − error): the FPS the offsets allow.
    pub fps_low: Option<f64>,
    pub fps_high: Option<f64>,
    /// Rank 0's end barrier minus its start barrier, s (one clock; includes a barrier's
    /// latency and the stragglers' tail: an upper bound on T).
    pub barrier_t_s: Option<f64>,
    /// N / barrier_t_s.
    pub fps_barrier: Figure,
    /// max node time / mean node time (1 = perfectly even).
    pub imbalance: Option<f64>,
    /// §7.1.7 b: the nodes' energy summed, J, or why not.
    pub energy_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_na: Option<String>,
    /// N / energy.
    pub inferences_per_joule: Figure,
}

/// `DIR/cluster.json`: `acceval merge DIR`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ClusterReport {
    /// `acceval.cluster/1`.
    pub schema: String,
    pub dir: String,
    pub kind: String,
    /// VALID only when every rank reported a complete run of the same model, inputs and
    /// tool, and the shards cover the N samples exactly once.
    pub valid: bool,
    /// Why not, one line each, naming the rank.
    pub problems: Vec<String>,
    /// What a reviewer should know that does not invalidate the run.
    pub notes: Vec<String>,
    pub world_size: usize,
    pub ranks_found: Vec<usize>,
    pub missing_ranks: Vec<usize>,
    pub model: String,
    pub model_sha256: String,
    pub backend: String,
    pub launcher: String,
    pub cluster: ClusterFigures,
    pub nodes: Vec<NodeFigures>,
    /// Data-parallel training (`train --cluster`): §7.1.5 b throughput of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingFigures>,
    /// Accuracy over the ranks' shards (`accuracy --cluster`): the metrics pooled over N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<AccuracyFigures>,
}

/// The training cluster's figures (§7.1.5 b, §5.2).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TrainingFigures {
    pub workload: String,
    pub all_reduce: String,
    pub global_batch: usize,
    /// §7.1.5 b as the draft says: the mean of the nodes' throughputs (each node's samples /
    /// its run time).
    pub throughput_mean: Figure,
    /// The nodes' throughputs summed: the cluster's samples per second.
    pub throughput_sum: Figure,
    /// Per rank: node throughput, samples/s; all-reduce share of its step time.
    pub nodes: Vec<TrainingNode>,
    /// The cluster's summed throughput / (ranks × a one-rank run's throughput), from
    /// `merge --baseline REPORT` (a `train` report of one rank on the same workload).
    pub scaling_efficiency: Figure,
    /// The held-out metric every rank reached (all must agree: the same weights).
    pub final_eval: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TrainingNode {
    pub rank: usize,
    pub host: String,
    pub local_samples: u64,
    pub samples_per_s: Option<f64>,
    pub compute_s: Option<f64>,
    pub all_reduce_s: f64,
    /// all_reduce_s / (compute_s + all_reduce_s).
    pub all_reduce_share: Option<f64>,
    pub bytes_sent: u64,
    pub rounds: u64,
}

/// What the all-reduces of a run cost this rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommStats {
    pub calls: u64,
    /// Wall time inside the all-reduce, s.
    pub seconds: f64,
    /// Bytes this rank sent and received.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Rounds of the last call (ring: 2(M − 1); parameter server: 1 gather + 1 broadcast).
    pub rounds: u64,
    /// What the figures mean where they are not counted on the wire (MPI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `DIR/train-rank-<r>.json`: one rank of data-parallel training (§5.2, §7.1.5 b).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TrainRankReport {
    /// `acceval.cluster-train-rank/1`.
    pub schema: String,
    #[serde(flatten)]
    pub common: RankCommon,
    pub rendezvous: String,
    /// The all-reduce, in words.
    pub all_reduce: String,
    /// The global batch; this rank trains its share of each (an even split, the remainder
    /// to the first ranks) and its gradients are weighted by that share before the sum.
    pub global_batch: usize,
    /// Samples this rank trained (its shares), over the whole run.
    pub local_samples: u64,
    /// local_samples / the run's total time, samples/s: this node's throughput (§7.1.5 b).
    pub local_samples_per_s: Option<f64>,
    /// The all-reduces: calls, time, bytes, rounds.
    pub comm: CommStats,
    /// Σ step time − time in the all-reduce, s: this rank's compute (the batch, forward,
    /// backward, the update).
    pub compute_s: Option<f64>,
    /// The rank's own training report (its step times include the all-reduce).
    pub report: Option<TrainReport>,
}

/// One output's running sums over a rank's inputs (f64, element by element in input
/// order): pooled over the ranks in shard order they give exactly the figures one node
/// grading every input computes (up to the order of the f64 additions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutputSums {
    pub name: String,
    /// Elements compared.
    pub n: u64,
    /// Σ (x − y)².
    pub sq: f64,
    /// max |x − y| over the finite ones.
    pub max_abs: f64,
    /// Σ x², Σ y², Σ x·y (x = actual, y = reference).
    pub xx: f64,
    pub yy: f64,
    pub xy: f64,
    pub nan: u64,
    pub inf: u64,
    /// Index of the first NaN/Inf among this rank's elements of the output.
    pub first_nonfinite: Option<u64>,
}

/// `DIR/accuracy-rank-<r>.json`: one rank's share of an accuracy run (§6.2 i, Table 3).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AccuracyRankReport {
    /// `acceval.cluster-accuracy-rank/1`.
    pub schema: String,
    #[serde(flatten)]
    pub common: RankCommon,
    /// N: the inputs graded over the cluster (the reference's sets, or --limit).
    pub total_inputs: usize,
    /// This rank's inputs: reference sets start..end.
    pub shard: Shard,
    /// Per output, the running sums over this rank's inputs.
    pub sums: Vec<OutputSums>,
    /// The rank's own accuracy report over its shard.
    pub report: Option<super::accuracy::AccuracyReport>,
}

/// The merged accuracy of a cluster run: every output's metrics over all N inputs.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AccuracyFigures {
    pub definition: String,
    pub reference: String,
    pub expected_inputs: usize,
    /// Σ of the ranks' graded inputs (must equal N).
    pub inputs: usize,
    /// Per output over every input of every rank.
    pub outputs: Vec<super::accuracy::OutputResult>,
    /// The worst output's MSE (null when an output holds NaN/Inf), its output and Table 3
    /// level.
    pub mse: Option<f64>,
    pub worst_output: String,
    pub level: Option<crate::standard::Level>,
    /// The task agreement, the ranks' counts summed.
    pub agreement: super::accuracy::Agreement,
    pub agreement_text: String,
    pub nodes: Vec<AccuracyNode>,
}

/// One rank in the merged accuracy.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AccuracyNode {
    pub rank: usize,
    pub host: String,
    pub shard: Shard,
    pub inputs: usize,
    /// The worst output's MSE over this rank's inputs.
    pub mse: Option<f64>,
    pub level: Option<crate::standard::Level>,
    pub complete: bool,
}
