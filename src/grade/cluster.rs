//! The `[cluster]` stage's files: the cluster run a lab launched (`acceval bench --cluster
//! DIR` under mpirun, srun or Kubernetes), merged as `acceval merge DIR` merges it, with its
//! rank files kept in the report folder (as `cluster-rank-<r>.json`, the manifest hashing
//! them) so that `verify` can merge them again and compare.

use std::path::Path;

use super::Error;
use crate::report::schema::cluster::ClusterReport;

/// The name a rank file takes in the report folder (manifest entries are plain names).
fn kept_name(rank_file: &str) -> String {
    format!("cluster-{rank_file}")
}

/// Files a report folder keeps: (name, bytes).
pub type Kept = Vec<(String, Vec<u8>)>;

/// Merges the cluster run in `dir`; returns the merged report and the files the report
/// folder keeps: `cluster.json` and each rank file as read.
pub fn collect(dir: &Path) -> Result<(ClusterReport, Kept), Error> {
    // Read first, merge the bytes read: a rank file changed in between cannot slip in.
    let files = crate::cluster::merge::rank_files(dir, "rank-")?;
    let report = crate::cluster::merge::merge_bench_files(dir, &files)?;
    let mut json = serde_json::to_vec_pretty(&report).map_err(|e| Error::Encode {
        what: "cluster report",
        why: e.to_string(),
    })?;
    json.push(b'\n');
    let mut kept = vec![("cluster.json".to_string(), json)];
    kept.extend(files.into_iter().map(|(n, b)| (kept_name(&n), b)));
    Ok((report, kept))
}

/// `verify`: merges the rank files a report folder kept and compares the figures with
/// report.json's; one line per difference.
pub fn recheck(folder: &Path, reported: &ClusterReport) -> Vec<String> {
    let mut problems = Vec::new();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return vec![format!("cannot read {}", folder.display())];
    };
    let mut files = Vec::new();
    for e in entries.filter_map(|e| e.ok()) {
        let n = e.file_name().to_string_lossy().into_owned();
        if let Some(orig) = n.strip_prefix("cluster-")
            && orig.starts_with("rank-")
            && orig.ends_with(".json")
        {
            match std::fs::read(e.path()) {
                Ok(b) => files.push((orig.to_string(), b)),
                Err(err) => problems.push(format!("{n}: {err}")),
            }
        }
    }
    if files.is_empty() {
        problems.push(
            "report.json has a cluster result but the folder keeps no cluster-rank-<r>.json to merge again"
                .into(),
        );
        return problems;
    }
    files.sort();
    let again = match crate::cluster::merge::merge_bench_files(Path::new(&reported.dir), &files) {
        Ok(r) => r,
        Err(e) => return vec![format!("merging the kept rank files again: {e}")],
    };
    let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        (None, None) => true,
        _ => false,
    };
    let checks = [
        ("valid", reported.valid == again.valid),
        ("world_size", reported.world_size == again.world_size),
        ("model_sha256", reported.model_sha256 == again.model_sha256),
        (
            "cluster.samples",
            reported.cluster.samples == again.cluster.samples,
        ),
        ("cluster.t_s", same(reported.cluster.t_s, again.cluster.t_s)),
        (
            "cluster.fps",
            same(reported.cluster.fps.value, again.cluster.fps.value),
        ),
        (
            "cluster.fps_low",
            same(reported.cluster.fps_low, again.cluster.fps_low),
        ),
        (
            "cluster.imbalance",
            same(reported.cluster.imbalance, again.cluster.imbalance),
        ),
    ];
    for (k, ok) in checks {
        if !ok {
            problems.push(format!(
                "cluster: report.json's {k} differs from the merge of the kept rank files"
            ));
        }
    }
    problems
}
