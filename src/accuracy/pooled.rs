//! An accuracy run over a cluster (`accuracy --cluster`, `acceval merge`): every rank graded
//! its shard of the same N inputs of the same reference with the same model, backend and
//! build; each output's running sums pooled in shard order give the metrics over all N
//! (Table 3 on the worst output's MSE), as one node grading every input would.

use std::path::Path;

use super::metrics::Accumulator;
use crate::cluster::merge::{MergeError, Mergeable, Ranks, rank_files, read_ranks, untimed};
use crate::report::schema::accuracy::{Agreement, DEFINITION, ErrorMetrics, OutputResult};
use crate::report::schema::cluster::{
    AccuracyFigures, AccuracyNode, AccuracyRankReport, ClusterReport, RankCommon, Shard,
};

impl Mergeable for AccuracyRankReport {
    const PREFIX: &'static str = "accuracy-rank-";
    const WHAT: &'static str = "accuracy rank file";
    fn common(&self) -> &RankCommon {
        &self.common
    }
    fn shard(&self) -> Option<(usize, Shard, &'static str)> {
        Some((self.total_inputs, self.shard, "inputs"))
    }
    fn identity(&self) -> Vec<(&'static str, String)> {
        let rep = self.report.as_ref();
        let na = || "n/a".to_string();
        vec![
            ("world size", self.common.world_size.to_string()),
            ("N (inputs)", self.total_inputs.to_string()),
            ("tool", self.common.tool.clone()),
            (
                "model (SHA-256)",
                rep.map_or_else(na, |x| x.model_sha256.clone()),
            ),
            (
                "reference",
                rep.map_or_else(na, |x| {
                    format!(
                        "{} ({})",
                        x.reference.dir,
                        x.reference.model_sha256.clone().unwrap_or_default()
                    )
                }),
            ),
            (
                "backend",
                rep.map_or_else(na, |x| x.session.backend.clone()),
            ),
        ]
    }
}

/// The accuracy run in `dir` (`accuracy-rank-<r>.json`), pooled.
pub fn merge(dir: &Path) -> Result<ClusterReport, MergeError> {
    let files = rank_files(dir, AccuracyRankReport::PREFIX)?;
    let mut ranks = read_ranks::<AccuracyRankReport>(&files);
    let n = ranks
        .by_rank
        .values()
        .map(|r| r.total_inputs)
        .max()
        .unwrap_or(0);
    let graded: usize = ranks
        .by_rank
        .values()
        .map(|r| r.report.as_ref().map_or(0, |x| x.inputs_used))
        .sum();
    if graded != n {
        ranks
            .problems
            .push(format!("the ranks graded {graded} inputs in all, N is {n}"));
    }
    let (outputs, agreement) = pool(&mut ranks);
    let worst = outputs.iter().max_by(|a, b| {
        let k = |m: &ErrorMetrics| if m.mse.is_nan() { f64::INFINITY } else { m.mse };
        k(&a.metrics).total_cmp(&k(&b.metrics))
    });
    let mse = worst.map(|w| w.metrics.mse).filter(|m| !m.is_nan());
    let rep0 = ranks.first().and_then(|r| r.report.as_ref());
    let figures = AccuracyFigures {
        definition: format!(
            "{DEFINITION} Pooled over the ranks: each output's sums (Σ(x−y)², Σx², Σy², Σxy, max, NaN/Inf counts) added in shard order, then the ratios formed, as one node grading all N would."
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
            .by_rank
            .values()
            .map(|r| AccuracyNode {
                rank: r.common.rank,
                host: r.common.host.clone(),
                shard: r.shard,
                inputs: r.report.as_ref().map_or(0, |x| x.inputs_used),
                mse: r.report.as_ref().map(|x| x.mse).filter(|m| !m.is_nan()),
                level: r.report.as_ref().and_then(|x| x.level),
                complete: r.common.complete,
            })
            .collect(),
    };
    let what = (
        rep0.map_or("n/a".into(), |x| x.model.clone()),
        rep0.map_or("n/a".into(), |x| x.model_sha256.clone()),
        rep0.map_or("n/a".into(), |x| x.session.backend.clone()),
    );
    let mut cluster = untimed(
        "an accuracy run (see accuracy)",
        "n/a: an accuracy run is not timed across the ranks",
    );
    cluster.expected_samples = n;
    cluster.samples = graded;
    let mut report = ranks.report(dir, "accuracy", what, cluster);
    report.accuracy = Some(figures);
    Ok(report)
}

/// Each output's sums added in shard (= rank) order, and the task agreement merged; a rank
/// whose outputs differ from the first rank's is a problem and is left out.
fn pool(ranks: &mut Ranks<AccuracyRankReport>) -> (Vec<OutputResult>, Agreement) {
    let out_names: Vec<String> = ranks
        .first()
        .map(|r| r.sums.iter().map(|s| s.name.clone()).collect())
        .unwrap_or_default();
    let mut acc = vec![Accumulator::default(); out_names.len()];
    let mut agreement: Option<Agreement> = None;
    for (r, rank) in &ranks.by_rank {
        let names: Vec<&str> = rank.sums.iter().map(|s| s.name.as_str()).collect();
        if names != out_names.iter().map(String::as_str).collect::<Vec<_>>() {
            ranks.problems.push(format!(
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
            .by_rank
            .values()
            .find_map(|r| r.report.as_ref().and_then(|x| x.outputs.get(i)))
            .map(|o| (o.elem_type.clone(), o.shape.clone()))
            .unwrap_or_default()
    };
    let outputs = out_names
        .iter()
        .zip(&acc)
        .enumerate()
        .map(|(i, (name, a))| {
            let metrics = a.finish();
            let (elem_type, shape) = decl(i);
            OutputResult {
                name: name.clone(),
                elem_type,
                shape,
                level: crate::standard::accuracy_level(metrics.mse),
                metrics,
            }
        })
        .collect();
    let agreement = agreement.unwrap_or(Agreement::NotApplicable {
        reason: "no rank graded an input".into(),
    });
    (outputs, agreement)
}
