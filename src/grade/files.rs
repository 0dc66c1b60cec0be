//! The report folder: report.json (the [`GradeReport`]), its views (report.md,
//! report.html), the tables as CSV, charts, and `manifest.json` with the SHA-256 of every
//! file, the models, inputs and references the run depended on.

use std::path::Path;

use super::clauses::Evidence;
use super::profile::Profile;
use crate::report::export::Exporter;
use crate::report::export::{Document, Json, Table};
use crate::report::schema::grade::{
    Environment, FileEntry, GradeReport, MANIFEST_SCHEMA, Manifest, ProfileEntry, Seeds,
};
use crate::util::fs::{sha256_hex, write_file};

/// The files of a grade folder other than the manifest: (name, bytes).
pub fn report_files(
    r: &GradeReport,
    e: &Evidence,
) -> Result<Vec<(String, Vec<u8>)>, crate::report::Error> {
    let mut files = vec![
        ("report.json".to_string(), Json.export(r)?),
        (
            "report.md".to_string(),
            crate::report::compliance::markdown(r).into_bytes(),
        ),
        (
            "report.html".to_string(),
            crate::report::compliance::html(r).into_bytes(),
        ),
    ];
    let mut tables: Vec<Table> = Vec::new();
    if let Some(s) = &e.speed {
        tables.push(crate::report::bench::summary_table(s));
        tables.push(crate::report::bench::samples_table(s));
        if let Some(rec) = &s.recording {
            tables.push(crate::report::bench::telemetry_table(rec));
        }
    }
    for t in tables {
        files.push((t.file.clone(), t.to_csv()));
    }
    if let Some(q) = &e.qps {
        files.push((
            "qps_curve.csv".into(),
            crate::report::qps::curve_csv(q).into_bytes(),
        ));
        files.push(("qps.svg".into(), crate::report::qps::chart(q).into_bytes()));
    }
    if let Some(l) = &e.llm {
        files.push((
            "llm_result_common.csv".into(),
            crate::report::llm::common_csv(l).into_bytes(),
        ));
        if let Some(run) = l.runs.first() {
            files.push((
                "llm_result_perf.csv".into(),
                crate::report::llm::perf_csv(run).into_bytes(),
            ));
        }
    }
    files.extend(e.cluster_files.iter().cloned());
    for (name, bytes) in &e.carried_files {
        match files.iter_mut().find(|(n, _)| n == name) {
            Some(f) => f.1 = bytes.clone(),
            None => files.push((name.clone(), bytes.clone())),
        }
    }
    Ok(files)
}

/// The files a report folder must hold, from what its report.json says was measured.
pub fn expected_names(r: &GradeReport) -> Vec<&'static str> {
    let mut v = vec!["report.json", "report.md", "report.html"];
    if let Some(s) = &r.speed {
        v.extend(["metrics.csv", "samples.csv"]);
        if s.bench.telemetry.is_some() {
            v.push("telemetry.csv");
        }
    }
    if r.qps.is_some() {
        v.extend(["qps_curve.csv", "qps.svg"]);
    }
    if let Some(l) = &r.llm {
        v.push("llm_result_common.csv");
        if !l.runs.is_empty() {
            v.push("llm_result_perf.csv");
        }
    }
    if r.cluster.is_some() {
        v.push("cluster.json");
    }
    v
}

/// Writes every file of the report and the manifest over them.
pub fn write_all(
    dir: &Path,
    r: &GradeReport,
    e: &Evidence,
    p: &Profile,
    profile_file: &Path,
) -> Result<(), crate::report::Error> {
    let files = report_files(r, e)?;
    for (name, bytes) in &files {
        write_file(&dir.join(name), bytes)?;
    }
    let m = manifest(r, e, p, profile_file, &files);
    Ok(write_file(&dir.join("manifest.json"), &Json.export(&m)?)?)
}

/// The SHA-256 of a manifest's provenance: its JSON with `files` emptied and
/// `provenance_sha256` left out (the fields serialise in declaration order and the
/// environment's variables are a BTreeMap, so the bytes are the same on every read).
pub fn provenance_hash(m: &Manifest) -> String {
    let mut c = m.clone();
    c.files.clear();
    c.provenance_sha256 = None;
    sha256_hex(&serde_json::to_vec(&c).unwrap_or_default())
}

impl Document for Manifest {
    fn write_text(&self, o: &mut dyn std::io::Write) -> std::io::Result<()> {
        for f in &self.files {
            writeln!(o, "{}  {}", f.sha256, f.file)?;
        }
        Ok(())
    }
}

/// What another lab needs to re-run the report, and the hash of every file.
fn manifest(
    r: &GradeReport,
    e: &Evidence,
    p: &Profile,
    profile_file: &Path,
    files: &[(String, Vec<u8>)],
) -> Manifest {
    let entry = |file: String, sha256: String, note: &str| FileEntry {
        file,
        sha256,
        bytes: None,
        note: (!note.is_empty()).then(|| note.to_string()),
    };
    let mut inputs = Vec::new();
    if let Some((z, _)) = crate::zoo::parse_name(&p.model.name) {
        let m = crate::util::paths::inputs_dir()
            .join(z.input_set)
            .join("manifest.toml");
        if let Ok(b) = std::fs::read(&m) {
            inputs.push(entry(
                m.display().to_string(),
                sha256_hex(&b),
                "the input set's manifest: SHA-256 of every input file",
            ));
        }
    }
    let mut references: Vec<FileEntry> = Vec::new();
    for a in &e.accuracy {
        let m = Path::new(&a.reference.dir).join(crate::accuracy::reference::MANIFEST);
        if let Ok(b) = std::fs::read(&m) {
            let v = entry(
                m.display().to_string(),
                sha256_hex(&b),
                "the reference's manifest: SHA-256 of its model and every .pb",
            );
            if !references.contains(&v) {
                references.push(v);
            }
        }
    }
    let mut models: Vec<FileEntry> = Vec::new();
    let used = e
        .accuracy
        .iter()
        .map(|a| (a.model.clone(), a.model_sha256.clone()))
        .chain(
            e.speed
                .as_ref()
                .map(|s| (s.model.clone(), s.model_sha256.clone())),
        );
    for (file, sha) in used {
        let v = entry(file, sha, "");
        if !models.contains(&v) {
            models.push(v);
        }
    }
    let variables = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("ACCEVAL_")
                || k == "ORT_DYLIB_PATH"
                || k.starts_with("CUDA_")
                || k.starts_with("ASCEND_")
        })
        .collect();
    let mut m = Manifest {
        schema: MANIFEST_SCHEMA.into(),
        tool: r.tool.clone(),
        command_line: r.command_line.clone(),
        profile: ProfileEntry {
            file: profile_file.display().to_string(),
            sha256: r.profile_sha256.clone(),
        },
        models,
        inputs,
        references,
        seeds: Seeds {
            inputs: "zoo input sets and weights use fixed seeds (seed_of(name)); recorded in the manifests above".into(),
            bench: 0,
        },
        environment: Environment {
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            variables,
        },
        files: files
            .iter()
            .map(|(name, bytes)| FileEntry {
                file: name.clone(),
                sha256: sha256_hex(bytes),
                bytes: Some(bytes.len() as u64),
                note: None,
            })
            .collect(),
        provenance_sha256: None,
    };
    m.provenance_sha256 = Some(provenance_hash(&m));
    m
}
