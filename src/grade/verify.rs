//! `acceval verify DIR` and `acceval report DIR`: check a report folder — every file against
//! `manifest.json` (exactly the folder's files, sizes and SHA-256), `report.json` against its
//! schema, the verdict recomputed from the clauses, the tool against the manifest, a cluster
//! run's figures merged again from its kept rank files, and the
//! lab's ed25519 signature over the manifest — and render the views again from
//! `report.json` alone.
//!
//! Report schema versions: `acceval.report/2` (this acceval) is read as the typed
//! [`GradeReport`]; `acceval.report/1` (before the typed report) is still verified — its
//! hashes and its committed schema `schemas/report.v1.schema.json` — but cannot be rendered.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::sign::{self, SIGNATURE_FILE, SignatureStatus};
use crate::report::export::{Exporter, Json};
use crate::report::schema::Verdict;
use crate::report::schema::grade::{GradeReport, MANIFEST_SCHEMA_V1, Manifest, SCHEMA};
use crate::util::fs::sha256_hex;

/// The JSON Schema of `acceval.report/1` reports (committed as it was).
pub const REPORT_V1_SCHEMA: &str = include_str!("../../schemas/report.v1.schema.json");
/// The committed JSON Schema of `acceval.report/2` (generated from [`GradeReport`]; a test
/// keeps it current).
pub const REPORT_SCHEMA: &str = include_str!("../../schemas/report.schema.json");
/// The schema id of the reports acceval wrote before the typed report.
pub const SCHEMA_V1: &str = "acceval.report/1";
/// The largest manifest `verify` reads, bytes.
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// What `verify` found.
#[derive(Debug, Clone)]
pub struct Verification {
    /// Files whose size and hash matched.
    pub matched: usize,
    /// The report's schema id.
    pub schema: String,
    pub signature: SignatureStatus,
    pub problems: Vec<String>,
    /// What the reader should know that is not a problem (a legacy format's limits).
    pub notes: Vec<String>,
}

fn validate(schema: &Value, doc: &Value, what: &str, problems: &mut Vec<String>) {
    match jsonschema::validator_for(schema) {
        Ok(v) => {
            for e in v.iter_errors(doc).take(10) {
                problems.push(format!(
                    "report.json does not match {what} at {}: {e}",
                    e.instance_path()
                ));
            }
        }
        Err(e) => problems.push(format!("{what} is not a valid JSON Schema: {e}")),
    }
}

/// A manifest entry must name a plain file of the folder itself.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && Path::new(name).components().count() == 1
}

/// Every manifest entry against the folder: names, duplicates, sizes, hashes, extras.
fn check_files(dir: &Path, m: &Manifest, problems: &mut Vec<String>) -> usize {
    if m.files.is_empty() {
        problems.push("manifest.json lists no file: nothing would be verified".into());
    }
    let mut seen = BTreeSet::new();
    let mut matched = 0;
    for f in &m.files {
        if !plain_name(&f.file) {
            problems.push(format!(
                "{:?}: not a file of the report folder (a path outside it, or a sub-folder)",
                f.file
            ));
            continue;
        }
        if !seen.insert(f.file.as_str()) {
            problems.push(format!("{}: listed twice in manifest.json", f.file));
            continue;
        }
        if f.file == "manifest.json" || f.file == SIGNATURE_FILE {
            problems.push(format!(
                "{}: the manifest cannot list itself or its signature",
                f.file
            ));
            continue;
        }
        let p = dir.join(&f.file);
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) => {
                problems.push(format!("{}: missing ({e})", f.file));
                continue;
            }
        };
        if !meta.is_file() {
            problems.push(format!(
                "{}: not a regular file (a link or a folder)",
                f.file
            ));
            continue;
        }
        let b = match std::fs::read(&p) {
            Ok(b) => b,
            Err(e) => {
                problems.push(format!("{}: unreadable ({e})", f.file));
                continue;
            }
        };
        let got = sha256_hex(&b);
        let size_ok = f.bytes == Some(b.len() as u64);
        if got != f.sha256 || !size_ok {
            problems.push(format!(
                "{}: changed (SHA-256 {got}, {} bytes; the manifest records {}, {} bytes)",
                f.file,
                b.len(),
                f.sha256,
                f.bytes
                    .map(|b| b.to_string())
                    .unwrap_or_else(|| "no size".into())
            ));
        } else {
            matched += 1;
        }
    }
    // Exactly the folder's files: nothing added beside the manifest.
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == "manifest.json" || name == SIGNATURE_FILE || seen.contains(name.as_str()) {
                continue;
            }
            problems.push(format!("{name}: in the folder but not in manifest.json"));
        }
    }
    matched
}

/// report.json against its schema, its verdict against its clauses, its tool against the
/// manifest.
fn check_report(dir: &Path, m: &Manifest, problems: &mut Vec<String>) -> String {
    let report: Option<Value> = std::fs::read(dir.join("report.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let Some(r) = report else {
        problems.push("report.json: missing or not JSON".into());
        return String::new();
    };
    let id = r["schema"].as_str().unwrap_or("").to_string();
    if id == SCHEMA_V1 {
        match serde_json::from_str::<Value>(REPORT_V1_SCHEMA) {
            Ok(s) => validate(&s, &r, "schemas/report.v1.schema.json", problems),
            Err(e) => problems.push(format!("the v1 schema is not JSON: {e}")),
        }
        check_v1_verdict(&r, problems);
        return id;
    }
    if id != SCHEMA {
        problems.push(format!(
            "report.json has schema '{id}'; this acceval reads {SCHEMA} and {SCHEMA_V1}"
        ));
        return id;
    }
    match serde_json::from_str::<Value>(REPORT_SCHEMA) {
        Ok(s) => validate(&s, &r, "schemas/report.schema.json", problems),
        Err(e) => problems.push(format!("the report schema is not JSON: {e}")),
    }
    match serde_json::from_value::<GradeReport>(r) {
        Ok(g) => {
            let want = super::clauses::overall(&g.profile, &g.stages, &g.clauses);
            if g.verdict != want {
                problems.push(format!(
                    "report.json says {} but its clauses and stages give {want}",
                    g.verdict
                ));
            }
            if g.complete != (g.verdict != Verdict::Incomplete) {
                problems.push("report.json: `complete` contradicts the verdict".into());
            }
            if g.tool != m.tool {
                problems.push(format!(
                    "report.json names acceval {} ({}), the manifest {} ({})",
                    g.tool.version, g.tool.git_commit, m.tool.version, m.tool.git_commit
                ));
            }
            if g.command_line != m.command_line {
                problems
                    .push("report.json and manifest.json record different command lines".into());
            }
            for f in super::files::expected_names(&g) {
                if !m.files.iter().any(|x| x.file == f) {
                    problems.push(format!(
                        "{f}: what report.json says was measured needs it, and manifest.json does not list it"
                    ));
                }
            }
            // The cluster figures must be what the kept rank files merge to.
            if let Some(c) = &g.cluster {
                problems.extend(super::cluster::recheck(dir, c));
            }
            // The views must be what report.json renders to.
            for (f, view) in [
                ("report.md", crate::report::compliance::markdown(&g)),
                ("report.html", crate::report::compliance::html(&g)),
            ] {
                if std::fs::read(dir.join(f)).is_ok_and(|b| b != view.as_bytes()) {
                    problems.push(format!("{f}: differs from what report.json renders to"));
                }
            }
        }
        Err(e) => problems.push(format!("report.json is not a {SCHEMA} report: {e}")),
    }
    id
}

/// A first-version report's verdict, recomputed from its stages and clauses by the rule of
/// the time (the same as today's, over the stages a v1 profile ran: devices, model, accuracy,
/// speed, and qps and llm when the profile had them): an edited verdict fails even when the
/// manifest was re-hashed to match, since a v1 manifest cannot protect itself.
fn check_v1_verdict(r: &Value, problems: &mut Vec<String>) {
    use crate::report::schema::grade::{Clause, Stage, StageStatus};
    let parsed = (
        serde_json::from_value::<Vec<Stage>>(r["stages"].clone()),
        serde_json::from_value::<Vec<Clause>>(r["clauses"].clone()),
        serde_json::from_value::<Verdict>(r["verdict"].clone()),
    );
    let (stages, clauses, said) = match parsed {
        (Ok(s), Ok(c), Ok(v)) => (s, c, v),
        (s, c, v) => {
            let why = [s.err(), c.err(), v.err()]
                .into_iter()
                .flatten()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("; ");
            problems.push(format!(
                "report.json (v1): its stages, clauses or verdict cannot be read: {why}"
            ));
            return;
        }
    };
    let profile = &r["profile"];
    let expected =
        4 + usize::from(!profile["qps"].is_null()) + usize::from(!profile["llm"].is_null());
    let want = if stages.len() != expected || stages.iter().any(|s| s.status != StageStatus::Done) {
        Verdict::Incomplete
    } else if clauses.iter().any(|c| super::clauses::bad(c.verdict)) {
        Verdict::NotCompliant
    } else {
        Verdict::Compliant
    };
    if said != want {
        problems.push(format!(
            "report.json (v1) says {said} but its clauses and stages give {want}"
        ));
    }
    if r["complete"].as_bool() != Some(want != Verdict::Incomplete) {
        problems.push("report.json (v1): `complete` contradicts the stages".into());
    }
}

/// The manifest's own integrity: its provenance against `provenance_sha256`, and its bytes
/// against what acceval writes for that content (so an edit that still parses, or one
/// inside `files`, is found too). Manifests of the first version have no hash.
fn check_provenance(
    bytes: &[u8],
    m: &Manifest,
    problems: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    match &m.provenance_sha256 {
        Some(h) => {
            if *h != super::files::provenance_hash(m) {
                problems.push("manifest.json: its provenance (tool, command line, profile, models, inputs, references, seeds, environment) does not match its provenance_sha256: edited after it was written".into());
            }
            if Json.export(m).ok().as_deref() != Some(bytes) {
                problems.push("manifest.json: not byte for byte what acceval writes for its content: edited after it was written".into());
            }
        }
        None if m.schema != MANIFEST_SCHEMA_V1 => problems.push(format!(
            "manifest.json ({}) has no provenance_sha256: its provenance cannot be checked",
            m.schema
        )),
        None => notes.push(format!(
            "manifest.json is {MANIFEST_SCHEMA_V1}, a legacy integrity-only format: the files' hashes are checked, but the manifest has no hash of its own, so an edit re-hashed into it cannot be told apart; the verdict was recomputed from the report's clauses and stages. Re-grade with this acceval for a manifest that protects itself"
        )),
    }
}

/// Checks a report folder; `pubkey` checks the lab's signature too.
pub fn verify(dir: &Path, pubkey: Option<&Path>) -> Result<Verification, super::Error> {
    let mpath = dir.join("manifest.json");
    let meta = std::fs::symlink_metadata(&mpath).map_err(crate::util::Error::read(&mpath))?;
    if !meta.is_file() || meta.len() > MAX_MANIFEST_BYTES {
        return Err(super::Error::TooLarge {
            path: mpath,
            max: MAX_MANIFEST_BYTES,
        });
    }
    let bytes = crate::util::read(&mpath)?;
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| super::Error::NotA {
        path: mpath.clone(),
        what: "an acceval manifest",
        why: e.to_string(),
    })?;
    let (mut problems, mut notes) = (Vec::new(), Vec::new());
    check_provenance(&bytes, &manifest, &mut problems, &mut notes);
    let matched = check_files(dir, &manifest, &mut problems);
    let schema = check_report(dir, &manifest, &mut problems);
    let signature = sign::check(dir, pubkey)?;
    if let SignatureStatus::Invalid(why) = &signature {
        problems.push(format!("signature: {why}"));
    }
    Ok(Verification {
        matched,
        schema,
        signature,
        problems,
        notes,
    })
}

/// Reads a folder's `report.json` as the typed report.
pub fn read_report(dir: &Path) -> Result<GradeReport, super::Error> {
    let p = dir.join("report.json");
    let bytes = crate::util::read(&p)?;
    let not = |what: &'static str, e: serde_json::Error| super::Error::NotA {
        path: p.clone(),
        what,
        why: e.to_string(),
    };
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| not("JSON", e))?;
    match v["schema"].as_str() {
        Some(SCHEMA) => serde_json::from_value(v).map_err(|e| super::Error::InvalidReport {
            path: p.clone(),
            schema: SCHEMA,
            why: e.to_string(),
        }),
        Some(SCHEMA_V1) => Err(super::Error::OldReport {
            path: p.clone(),
            old: SCHEMA_V1,
            current: SCHEMA,
        }),
        other => Err(super::Error::OtherSchema {
            path: p.clone(),
            schema: other.unwrap_or("(none)").to_string(),
            current: SCHEMA,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_names_stay_inside_the_folder() {
        for bad in ["", ".", "..", "../x", "/etc/hostname", "a/b", "x\0y"] {
            assert!(!plain_name(bad), "{bad:?}");
        }
        assert!(plain_name("report.json") && plain_name(".hidden"));
    }
}
