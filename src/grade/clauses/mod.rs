//! The clause table and the verdict, from what the grade measured ([`Evidence`]). One
//! function per clause family; each returns its clauses and the reasons it fails, so a new
//! clause is one function and one line in [`judge`].

mod accuracy;
mod agreement;
mod attestations;
mod cluster;
mod devices;
mod framework;
mod llm;
mod model_support;
mod placement;
mod precision;
mod qps;
mod speed;
mod tables;
mod telemetry;
mod train;

use std::path::PathBuf;

use crate::backend::{self, BackendSettings, Sensor};
use crate::device::telemetry::Kind;
use crate::grade::profile::{self, Profile};
use crate::model::Analysis;
use crate::report::schema::Verdict;
use crate::report::schema::accuracy::AccuracyReport;
use crate::report::schema::bench::BenchReport;
use crate::report::schema::devices::Devices;
use crate::report::schema::grade::{AccuracyError, Clause, Source, Stage, StageStatus};
use crate::report::schema::session::{DeviceClass, PlacementSummary};
use crate::standard::{self, Level};
use crate::util::fmt::{sci, thousands};
use crate::zoo::Precision;

use accuracy::accuracy;
use accuracy::accuracy_verdict;
use agreement::agreement;
use attestations::attestations;
use cluster::cluster;
use devices::devices;
use framework::framework;
use llm::llm;
use model_support::model_support;
use placement::placement;
use precision::precision;
use qps::qps;
use speed::speed;
use tables::tables;
use telemetry::telemetry;
use train::train;

/// A clause verdict that keeps a report from being COMPLIANT.
pub fn bad(v: Verdict) -> bool {
    matches!(v, Verdict::Fail | Verdict::Invalid | Verdict::Incomplete)
}

/// The report's verdict from its stages and clauses: INCOMPLETE when a stage did not finish
/// (or is missing), NOT COMPLIANT when a clause is FAIL, INVALID or INCOMPLETE, else
/// COMPLIANT. `verify` recomputes it from report.json the same way.
pub fn overall(p: &Profile, stages: &[Stage], clauses: &[Clause]) -> Verdict {
    let expected = stage_count(p);
    if stages.len() != expected || stages.iter().any(|s| s.status != StageStatus::Done) {
        Verdict::Incomplete
    } else if clauses.iter().any(|c| bad(c.verdict)) {
        Verdict::NotCompliant
    } else {
        Verdict::Compliant
    }
}

/// The FPS Table 5 judges: the pipelined module's (N / T) when the profile sets
/// `[speed] pipeline_workers`, else N / ΣTi one at a time. A pipelined run with other
/// workers or model instances than the profile's is not the figure it asks for: none.
pub fn judged_fps(p: &Profile, s: &BenchReport) -> Option<f64> {
    match p.speed.pipeline_workers {
        Some(_) => s
            .pipelined
            .as_ref()
            .filter(|x| pipeline_is_the_profiles(p, x))
            .and_then(|x| x.fps.value),
        None => s.fps.value,
    }
}

/// Whether a pipelined run had the decode/pre-process threads and model instances `p` asks
/// for: a run with others is not judged.
pub fn pipeline_is_the_profiles(p: &Profile, x: &crate::report::schema::bench::Pipelined) -> bool {
    Some(x.workers) == p.speed.pipeline_workers
        && x.instances == p.speed.pipeline_instances.unwrap_or(1)
}

/// The stages a grade of `p` runs: devices, model, accuracy, speed, and one per optional
/// section.
pub fn stage_count(p: &Profile) -> usize {
    4 + p.qps.is_some() as usize
        + p.llm.is_some() as usize
        + p.train.is_some() as usize
        + p.cluster.is_some() as usize
}

/// Everything a grade measured so far.
#[derive(Default)]
pub struct Evidence {
    pub stages: Vec<Stage>,
    pub devices: Option<Devices>,
    pub analysis: Option<Analysis>,
    pub model_path: Option<PathBuf>,
    pub accuracy: Vec<AccuracyReport>,
    pub accuracy_errors: Vec<AccuracyError>,
    pub speed: Option<BenchReport>,
    pub speed_model: Option<PathBuf>,
    pub placement: Option<PlacementSummary>,
    pub qps: Option<crate::report::schema::qps::QpsReport>,
    pub llm: Option<crate::report::schema::llm::LlmReport>,
    pub train: Option<crate::report::schema::train::TrainReport>,
    pub cluster: Option<crate::report::schema::cluster::ClusterReport>,
    /// The cluster run's files as read (`cluster.json`, `cluster-rank-<r>.json`).
    pub cluster_files: Vec<(String, Vec<u8>)>,
    /// A speed stage carried over by `grade --resume`: its result as the report held it (the
    /// samples' stage times and the telemetry are not in report.json)...
    pub speed_carried: Option<crate::report::schema::grade::SpeedResult>,
    /// ...and the files only it could write (metrics.csv, samples.csv, telemetry.csv), as
    /// verified.
    pub carried_files: Vec<(String, Vec<u8>)>,
}

/// The clause table and the verdict.
pub struct Judgement {
    pub clauses: Vec<Clause>,
    /// COMPLIANT, NOT COMPLIANT or INCOMPLETE.
    pub verdict: Verdict,
    pub reasons: Vec<String>,
}

/// The clauses one family adds, and why they fail the grade.
#[derive(Default)]
struct Found {
    clauses: Vec<Clause>,
    reasons: Vec<String>,
}

impl Found {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        clause: &str,
        title: &str,
        requirement: impl Into<String>,
        measured: impl Into<String>,
        verdict: Verdict,
        reason: Option<String>,
        source: Source,
    ) {
        self.clauses.push(Clause {
            clause: clause.into(),
            title: title.into(),
            requirement: requirement.into(),
            measured: measured.into(),
            verdict,
            reason,
            source,
        });
    }
}

fn na(why: &str) -> Option<String> {
    Some(why.to_string())
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn opt(v: Option<f64>, unit: &str) -> String {
    v.map(|v| format!("{v:.3}{unit}"))
        .unwrap_or_else(|| "n/a".into())
}

/// The q-th percentile (0–100) of the end-to-end latencies, by the same rule as every other
/// percentile (linear interpolation): a profile may judge on any percentile, not only the
/// ones the summary holds.
pub fn percentile_of(b: &BenchReport, q: f64) -> Option<f64> {
    let mut v: Vec<f64> = b.raw.iter().map(|x| x.total_ms).collect();
    v.sort_by(f64::total_cmp);
    crate::measure::stats::quantile_sorted(&v, q / 100.0)
}

/// The clause table and the verdict from what was measured.
pub fn judge(p: &Profile, b: &BackendSettings, e: &Evidence) -> Judgement {
    let backend = b.spec.to_string();
    let backend = backend.as_str();
    let families = [
        devices(b, e),
        framework(backend, e),
        precision(p, e),
        placement(b, e),
        tables(e),
        accuracy(p, e),
        agreement(p, e),
        attestations(p),
        model_support(backend, e),
        speed(p, e),
        qps(p, e),
        llm(p, e),
        telemetry(p, b, e),
        train(p, e),
        cluster(p, e),
    ];
    let mut clauses = Vec::new();
    let mut reasons = Vec::new();
    for f in families {
        // A family that fails a clause says why; one that gives no reason gets its clauses'.
        if f.reasons.is_empty() {
            for c in f.clauses.iter().filter(|c| bad(c.verdict)) {
                reasons.push(format!(
                    "{} {}: {}",
                    c.clause,
                    c.title,
                    c.reason.clone().unwrap_or_else(|| c.verdict.to_string())
                ));
            }
        }
        clauses.extend(f.clauses);
        reasons.extend(f.reasons);
    }
    let verdict = overall(p, &e.stages, &clauses);
    if verdict == Verdict::Incomplete {
        for s in e.stages.iter().filter(|s| s.status != StageStatus::Done) {
            reasons.insert(
                0,
                format!(
                    "stage {} {}{}",
                    s.name,
                    s.status,
                    s.error
                        .as_ref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ),
            );
        }
    }
    Judgement {
        clauses,
        verdict,
        reasons,
    }
}

/// The accuracy result of a precision (`fp32`, `fp16`, `int8`).
fn graded(e: &Evidence, precision: Precision) -> Option<&AccuracyReport> {
    e.accuracy.iter().find(|a| a.precision == Some(precision))
}

/// Hand-made evidence for the families' unit tests: the fixture report (a real
/// bigdata-forecast grade on `cpu`, tests/fixtures/report-v2) read back into [`Evidence`], with
/// its raw samples from samples.csv and the model analysed again, for each test to edit.
#[cfg(test)]
mod testkit {
    use std::path::Path;

    use super::*;
    use crate::report::schema::bench::Sample;

    fn fixture_dir() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v2")
    }

    /// The fixture's profile, backend and evidence.
    pub fn fixture() -> (Profile, BackendSettings, Evidence) {
        let r = crate::grade::verify::read_report(&fixture_dir()).unwrap();
        let mut speed = r.speed.map(|s| s.bench);
        if let Some(b) = &mut speed {
            let mut rd = csv::Reader::from_path(fixture_dir().join("samples.csv")).unwrap();
            for rec in rd.records() {
                let rec = rec.unwrap();
                let v: Vec<f64> = rec.iter().map(|x| x.parse().unwrap()).collect();
                let mut stages = [0.0; crate::report::schema::bench::MAX_STAGES];
                for (k, s) in v[3..].iter().enumerate() {
                    stages[k] = *s;
                }
                b.raw.push(Sample {
                    start_ms: v[1],
                    total_ms: v[2],
                    stages,
                });
            }
        }
        let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/lstm-load-forecast.onnx");
        let e = Evidence {
            stages: r.stages,
            devices: r.devices,
            analysis: Some(crate::model::analyse(&model, &[]).unwrap()),
            model_path: Some(model),
            accuracy: r.accuracy,
            accuracy_errors: r.accuracy_errors,
            speed,
            speed_model: None,
            placement: r.placement,
            qps: r.qps,
            llm: r.llm,
            train: r.train,
            cluster: r.cluster,
            cluster_files: Vec::new(),
            speed_carried: None,
            carried_files: Vec::new(),
        };
        (r.profile, backend_of("cpu"), e)
    }

    pub fn backend_of(spec: &str) -> BackendSettings {
        BackendSettings::new(spec.parse().unwrap())
    }

    /// The verdict of the clause titled `title` (the first with that title).
    pub fn verdict(f: &Found, title: &str) -> Verdict {
        f.clauses
            .iter()
            .find(|c| c.title == title)
            .unwrap_or_else(|| {
                panic!(
                    "no clause '{title}' in {:?}",
                    f.clauses.iter().map(|c| &c.title).collect::<Vec<_>>()
                )
            })
            .verdict
    }

    /// Every clause titled `title`'s verdict.
    pub fn verdicts(f: &Found, title: &str) -> Vec<Verdict> {
        f.clauses
            .iter()
            .filter(|c| c.title == title)
            .map(|c| c.verdict)
            .collect()
    }
}
