//! `grade --resume DIR`: an INCOMPLETE run continued where it stopped. The folder must pass
//! `verify`; the binary, the profile file, the model and the devices must be the ones it
//! was measured with (each is checked, and a difference refuses the resume naming it). The
//! stages that finished are carried over as measured, an accuracy stage cut part-way keeps
//! the precisions it finished, and everything else runs again. The report keeps its
//! command line and creation time, and records the resume in `resumed`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Error;
use super::clauses::Evidence;
use crate::report::schema::Verdict;
use crate::report::schema::bench::{MAX_STAGES, Sample};
use crate::report::schema::devices::Devices;
use crate::report::schema::grade::{GradeReport, Stage, StageStatus};

/// The run being resumed: its report and folder.
#[derive(Debug, Clone)]
pub struct Previous {
    pub dir: PathBuf,
    pub report: GradeReport,
}

/// What a resumed run starts from.
pub struct Carried {
    pub evidence: Evidence,
    /// The stages carried over, by name, as the interrupted run recorded them.
    pub stages: BTreeMap<String, Stage>,
}

fn refuse(dir: &Path, why: impl Into<String>) -> Error {
    Error::CannotResume {
        dir: dir.to_path_buf(),
        why: why.into(),
    }
}

/// Reads the run in `dir`: it must pass `verify` and be INCOMPLETE.
pub fn load(dir: &Path) -> Result<Previous, Error> {
    if !dir.join("report.json").is_file() {
        return Err(refuse(
            dir,
            "no report.json: not a grade report folder (give the --out folder of the interrupted grade)",
        ));
    }
    let v = super::verify::verify(dir, None)?;
    if let Some(p) = v.problems.first() {
        return Err(refuse(
            dir,
            format!(
                "the folder fails `acceval verify` ({p}); a folder changed after its run cannot be resumed: grade again"
            ),
        ));
    }
    let report = super::verify::read_report(dir)?;
    if report.verdict != Verdict::Incomplete {
        return Err(refuse(
            dir,
            format!(
                "the run is complete ({}): there is nothing to resume",
                report.verdict
            ),
        ));
    }
    Ok(Previous {
        dir: dir.to_path_buf(),
        report,
    })
}

/// Refuses a resume by another build of acceval.
pub fn check_tool(prev: &Previous) -> Result<(), Error> {
    let (was, now) = (&prev.report.tool, super::run::tool());
    if (&was.name, &was.version, &was.git_commit, &was.features)
        != (&now.name, &now.version, &now.git_commit, &now.features)
    {
        return Err(refuse(
            &prev.dir,
            format!(
                "it was measured by {} {} (commit {}, features [{}]); this is {} {} (commit {}, features [{}]): resume with the binary that started it",
                was.name,
                was.version,
                was.git_commit,
                was.features.join(", "),
                now.name,
                now.version,
                now.git_commit,
                now.features.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Refuses a resume whose profile file changed.
pub fn check_profile(prev: &Previous, profile_file: &Path) -> Result<(), Error> {
    let now = crate::util::fs::sha256_hex(&crate::util::read(profile_file)?);
    if now != prev.report.profile_sha256 {
        return Err(refuse(
            &prev.dir,
            format!(
                "the profile {} has SHA-256 {now}; the run was measured with {}: the profile changed since",
                profile_file.display(),
                prev.report.profile_sha256
            ),
        ));
    }
    Ok(())
}

/// What identifies the machine: its CPU, memory, and every accelerator by its name and id.
fn fingerprint(d: &Devices) -> Vec<String> {
    let mut v = vec![
        format!("cpu {} ({} logical)", d.host.cpu_model, d.host.logical_cpus),
        format!("memory {} bytes", d.host.memory_bytes),
    ];
    v.extend(
        d.nvidia
            .gpus
            .iter()
            .map(|g| format!("gpu {} {} {}", g.index, g.name, g.uuid)),
    );
    v.extend(d.ascend.npus.iter().map(|n| {
        format!(
            "npu {}/{} {} {}",
            n.card_id, n.device_id, n.chip_name, n.chip_type
        )
    }));
    v
}

/// Refuses a resume on other devices or another model file (both identified again first).
pub fn check_measured(prev: &Previous, e: &Evidence, model_sha: Option<&str>) -> Result<(), Error> {
    if let (Some(was), Some(now)) = (&prev.report.devices, &e.devices) {
        let (a, b) = (fingerprint(was), fingerprint(now));
        if a != b {
            let diff: Vec<String> = a
                .iter()
                .filter(|x| !b.contains(x))
                .map(|x| format!("was {x}"))
                .chain(
                    b.iter()
                        .filter(|x| !a.contains(x))
                        .map(|x| format!("now {x}")),
                )
                .collect();
            return Err(refuse(
                &prev.dir,
                format!("the devices differ: {}", diff.join("; ")),
            ));
        }
    }
    if let (Some(was), Some(now)) = (&prev.report.model, model_sha)
        && was.sha256 != now
    {
        return Err(refuse(
            &prev.dir,
            format!(
                "the model {} has SHA-256 {now}; the run was measured with {}",
                was.file, was.sha256
            ),
        ));
    }
    Ok(())
}

/// The finished stages of the previous run, as evidence for the resumed one. Devices and
/// model are always identified again; an interrupted accuracy stage keeps the precisions
/// it finished (those that failed run again).
pub fn carry(prev: &Previous) -> Result<Carried, Error> {
    let r = &prev.report;
    let done = |name: &str| {
        r.stages
            .iter()
            .find(|s| s.name == name && s.status == StageStatus::Done)
            .cloned()
    };
    let mut e = Evidence {
        accuracy: r.accuracy.clone(),
        ..Evidence::default()
    };
    let mut stages = BTreeMap::new();
    if let Some(s) = done("accuracy") {
        e.accuracy_errors = r.accuracy_errors.clone();
        stages.insert(s.name.clone(), s);
    }
    if let (Some(s), Some(sp)) = (done("speed"), &r.speed) {
        // report.json keeps each sample's end-to-end time (what the percentile is judged
        // on); the per-stage times and the telemetry are only in their CSV files.
        let mut bench = sp.bench.clone();
        bench.raw = sp
            .latencies_ms
            .iter()
            .map(|&total_ms| Sample {
                start_ms: f64::NAN,
                total_ms,
                stages: [f64::NAN; MAX_STAGES],
            })
            .collect();
        e.speed = Some(bench);
        e.speed_model = sp.model.as_ref().map(PathBuf::from);
        e.speed_carried = Some(sp.clone());
        e.placement = r.placement.clone();
        for f in ["metrics.csv", "samples.csv", "telemetry.csv"] {
            let p = prev.dir.join(f);
            if p.is_file() {
                e.carried_files
                    .push((f.to_string(), crate::util::read(&p)?));
            }
        }
        stages.insert(s.name.clone(), s);
    }
    if let (Some(s), Some(q)) = (done("qps"), &r.qps) {
        e.qps = Some(q.clone());
        stages.insert(s.name.clone(), s);
    }
    if let (Some(s), Some(l)) = (done("llm"), &r.llm) {
        e.llm = Some(l.clone());
        stages.insert(s.name.clone(), s);
    }
    if let (Some(s), Some(t)) = (done("train"), &r.train) {
        e.train = Some(t.clone());
        stages.insert(s.name.clone(), s);
    }
    if let (Some(s), Some(c)) = (done("cluster"), &r.cluster) {
        e.cluster = Some(c.clone());
        // The rank files the folder keeps (verify has checked their hashes).
        for f in super::files::expected_names(r)
            .into_iter()
            .filter(|n| n.starts_with("cluster"))
        {
            e.cluster_files
                .push((f.to_string(), crate::util::read(&prev.dir.join(f))?));
        }
        for entry in std::fs::read_dir(&prev.dir).map_err(crate::util::Error::read(&prev.dir))? {
            let name = entry
                .map_err(crate::util::Error::read(&prev.dir))?
                .file_name()
                .to_string_lossy()
                .into_owned();
            if name.starts_with("cluster-rank-") && name.ends_with(".json") {
                let bytes = crate::util::read(&prev.dir.join(&name))?;
                e.cluster_files.push((name, bytes));
            }
        }
        stages.insert(s.name.clone(), s);
    }
    Ok(Carried {
        evidence: e,
        stages,
    })
}
