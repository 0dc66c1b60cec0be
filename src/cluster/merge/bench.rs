//! A timed run (`bench --cluster`, §7.2.4 b): FPS = N / T, T = max Tio − min Tis, each
//! rank's times moved onto rank 0's clock by its measured offset (interpolated between the
//! probes before and after the run); the offsets' error bounds give the FPS's error bar.
//! Rank 0's barrier-to-barrier time (one clock, no offsets) is given beside it.

use std::collections::BTreeMap;
use std::path::Path;

use super::{MergeError, Ranks, read_ranks};
use crate::report::schema::bench::Figure;
use crate::report::schema::cluster::{
    ClockOffset, ClusterFigures, ClusterReport, NodeFigures, RankReport,
};

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

/// A rank's timed window on rank 0's clock.
struct Window {
    start: f64,
    end: f64,
    /// The offset applied (the mean of the start's and the end's) and its bound.
    off: f64,
    err: f64,
}

/// Every rank's window on rank 0's clock; a complete rank without one is a problem.
fn windows(ranks: &mut Ranks<RankReport>) -> BTreeMap<usize, Window> {
    let windows: BTreeMap<usize, Window> = ranks
        .by_rank
        .iter()
        .filter_map(|(r, x)| {
            let (tis, tio) = (x.start_unix_s?, x.end_unix_s?);
            let (o1, e1) = offset_at(x.clock_offset_before, x.clock_offset_after, tis)?;
            let (o2, e2) = offset_at(x.clock_offset_before, x.clock_offset_after, tio)?;
            Some((
                *r,
                Window {
                    start: tis - o1,
                    end: tio - o2,
                    off: (o1 + o2) / 2.0,
                    err: e1.max(e2),
                },
            ))
        })
        .collect();
    for (r, x) in &ranks.by_rank {
        if !windows.contains_key(r) && x.common.complete {
            ranks.problems.push(format!(
                "rank {r} has no timed window or clock offset on record"
            ));
        }
    }
    windows
}

/// The merged figures of a `bench --cluster` run from its rank files as read (name, bytes);
/// `dir` is the folder the report names. `acceval merge`, `grade` (on the bytes it keeps)
/// and `verify` (on the kept copies) all merge through this.
pub fn merge_bench_files(
    dir: &Path,
    files: &[(String, Vec<u8>)],
) -> Result<ClusterReport, MergeError> {
    if files.is_empty() {
        return Err(MergeError::Empty {
            dir: dir.to_path_buf(),
        });
    }
    let mut ranks = read_ranks::<RankReport>(files);
    let n = ranks
        .by_rank
        .values()
        .map(|r| r.total_samples)
        .max()
        .unwrap_or(0);
    let samples: usize = ranks.by_rank.values().map(|r| r.samples).sum();
    if samples != n {
        ranks
            .problems
            .push(format!("the ranks ran {samples} samples in all, N is {n}"));
    }
    let windows = windows(&mut ranks);
    let valid = ranks.problems.is_empty();
    let invalid = format!(
        "n/a: the run is invalid ({})",
        ranks.problems.first().cloned().unwrap_or_default()
    );
    let (mut cluster, notes) = timing(&ranks, &windows, n, valid.then_some(()).ok_or(&invalid));
    cluster.samples = samples;
    let nodes = nodes(&ranks, &windows);
    let (energy_j, energy_na) = if valid {
        energy(&ranks, &nodes)
    } else {
        (None, Some(invalid.clone()))
    };
    cluster.inferences_per_joule = Figure {
        value: energy_j.filter(|e| *e > 0.0).map(|e| n as f64 / e),
        unit: "inferences/J".into(),
        definition: match &energy_na {
            None => "§7.1.7 b: N / the nodes' energy over their windows, summed".into(),
            Some(na) => na.clone(),
        },
    };
    cluster.energy_j = energy_j;
    cluster.energy_na = energy_na;
    let any = ranks.by_rank.values().find_map(|r| r.report.as_ref());
    let what = (
        any.map_or("n/a".into(), |r| r.model.clone()),
        any.map_or("n/a".into(), |r| r.model_sha256.clone()),
        any.map_or("n/a".into(), |r| r.session.backend.clone()),
    );
    let kind = ranks.first().map_or("bench".into(), |r| r.kind.clone());
    let mut report = ranks.report(dir, &kind, what, cluster);
    report.notes = notes;
    report.nodes = nodes;
    Ok(report)
}

/// §7.2.4 b: T, FPS with its error bar, the barrier-to-barrier FPS and the imbalance
/// (`valid`: Err(why not) when the run is invalid); with the notes on the clocks. The
/// energy figures are left for the caller.
fn timing(
    ranks: &Ranks<RankReport>,
    windows: &BTreeMap<usize, Window>,
    n: usize,
    valid: Result<(), &String>,
) -> (ClusterFigures, Vec<String>) {
    let mut notes = Vec::new();
    let first = windows.values().min_by(|a, b| a.start.total_cmp(&b.start));
    let last = windows.values().max_by(|a, b| a.end.total_cmp(&b.end));
    let (t_s, t_error_s) = match (first, last, valid) {
        (Some(a), Some(b), Ok(())) => (Some(b.end - a.start), Some(a.err + b.err)),
        _ => (None, None),
    };
    let definition = |d: &str| valid.map_or_else(|why| why.clone(), |()| d.to_string());
    let fps = Figure {
        value: t_s.filter(|t| *t > 0.0).map(|t| n as f64 / t),
        unit: "inferences/s".into(),
        definition: definition(
            "§7.2.4 b: N / (max Tio − min Tis), each rank's Tis and Tio on rank 0's clock (NTP-style offsets)",
        ),
    };
    let (fps_low, fps_high) = match (t_s, t_error_s) {
        (Some(t), Some(e)) => (
            Some(n as f64 / (t + e)),
            (t - e > 0.0).then(|| n as f64 / (t - e)),
        ),
        _ => (None, None),
    };
    let barrier_t_s = ranks
        .by_rank
        .get(&0)
        .and_then(|r| Some(r.end_barrier_unix_s? - r.start_barrier_unix_s?))
        .filter(|_| valid.is_ok());
    let fps_barrier = Figure {
        value: barrier_t_s.filter(|t| *t > 0.0).map(|t| n as f64 / t),
        unit: "inferences/s".into(),
        definition: definition(
            "N / (rank 0's end barrier − its start barrier): one clock, no offsets; includes a barrier's latency and the last rank's tail",
        ),
    };
    if let (Some(t), Some(e), Some(b)) = (t_s, t_error_s, barrier_t_s)
        && t > b + e + 1e-3
    {
        notes.push(format!(
            "T = {t:.6} s exceeds the barrier-to-barrier time {b:.6} s by more than the offsets' bound ({e:.6} s): a clock moved during the run"
        ));
    }
    let times: Vec<f64> = windows.values().map(|w| w.end - w.start).collect();
    let imbalance = (!times.is_empty() && valid.is_ok()).then(|| {
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        times.iter().copied().fold(0.0, f64::max) / mean
    });
    let figures = ClusterFigures {
        expected_samples: n,
        samples: 0,
        t_s,
        t_error_s,
        fps,
        fps_low,
        fps_high,
        barrier_t_s,
        fps_barrier,
        imbalance,
        energy_j: None,
        energy_na: None,
        inferences_per_joule: Figure {
            value: None,
            unit: "inferences/J".into(),
            definition: String::new(),
        },
    };
    (figures, notes)
}

/// Each rank's figures: its window, FPS, offset, own verdict and energy.
fn nodes(ranks: &Ranks<RankReport>, windows: &BTreeMap<usize, Window>) -> Vec<NodeFigures> {
    let t0 = windows
        .values()
        .map(|w| w.start)
        .min_by(f64::total_cmp)
        .unwrap_or(0.0);
    ranks
        .by_rank
        .iter()
        .map(|(r, x)| {
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
            NodeFigures {
                rank: *r,
                host: x.common.host.clone(),
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
            }
        })
        .collect()
}

/// §7.1.7 b: the nodes' energy summed, or why not (ranks sharing a host read the same
/// sensors; a node without energy).
fn energy(ranks: &Ranks<RankReport>, nodes: &[NodeFigures]) -> (Option<f64>, Option<String>) {
    let mut hosts: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (r, x) in &ranks.by_rank {
        hosts.entry(x.common.host.as_str()).or_default().push(*r);
    }
    let shared: Vec<String> = hosts
        .iter()
        .filter(|(_, rs)| rs.len() > 1)
        .map(|(h, rs)| format!("ranks {rs:?} share host {h}"))
        .collect();
    if !shared.is_empty() {
        return (
            None,
            Some(format!(
                "n/a: {}: each rank's sensors read the whole machine, so a sum would count it more than once",
                shared.join("; ")
            )),
        );
    }
    if let Some((r, na)) = nodes
        .iter()
        .find_map(|n| n.energy_na.clone().map(|e| (n.rank, e)))
    {
        return (None, Some(format!("n/a: rank {r}: {na}")));
    }
    (Some(nodes.iter().filter_map(|n| n.energy_j).sum()), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::schema::cluster::Shard;

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
