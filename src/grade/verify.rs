//! `acceval verify DIR` and `acceval report DIR`: re-hash every file of a report folder
//! against `manifest.json`, check `report.json` against its schema, and render the views
//! again from `report.json` alone.
//!
//! Report schema versions: `acceval.report/2` (this acceval) is read as the typed
//! [`GradeReport`]; `acceval.report/1` (before the typed report) is still verified — its
//! hashes and its committed schema `schemas/report.v1.schema.json` — but cannot be rendered.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::report::schema::grade::{GradeReport, Manifest, SCHEMA};
use crate::util::fs::sha256_hex;

/// The JSON Schema of `acceval.report/1` reports (committed as it was).
pub const REPORT_V1_SCHEMA: &str = include_str!("../../schemas/report.v1.schema.json");
/// The schema id of the reports acceval wrote before the typed report.
pub const SCHEMA_V1: &str = "acceval.report/1";

/// What `verify` found.
#[derive(Debug, Clone)]
pub struct Verification {
    /// Files whose hash matched.
    pub matched: usize,
    /// The report's schema id.
    pub schema: String,
    pub problems: Vec<String>,
}

/// The committed JSON Schema of `acceval.report/2` (generated from [`GradeReport`]; a test
/// keeps it current).
pub const REPORT_SCHEMA: &str = include_str!("../../schemas/report.schema.json");

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

/// Checks a report folder.
pub fn verify(dir: &Path) -> anyhow::Result<Verification> {
    let mpath = dir.join("manifest.json");
    let bytes = std::fs::read(&mpath).with_context(|| format!("reading '{}'", mpath.display()))?;
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .with_context(|| format!("'{}' is not an acceval manifest", mpath.display()))?;
    let mut problems = Vec::new();
    let mut matched = 0;
    for f in &manifest.files {
        match std::fs::read(dir.join(&f.file)) {
            Ok(b) => {
                let got = sha256_hex(&b);
                if got == f.sha256 {
                    matched += 1;
                } else {
                    problems.push(format!(
                        "{}: changed (SHA-256 {got}, {} bytes; the manifest records {}, {} bytes)",
                        f.file,
                        b.len(),
                        f.sha256,
                        f.bytes.map(|b| b.to_string()).unwrap_or_else(|| "?".into())
                    ));
                }
            }
            Err(e) => problems.push(format!("{}: missing ({e})", f.file)),
        }
    }
    let report: Option<Value> = std::fs::read(dir.join("report.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let schema = match &report {
        Some(r) => {
            let id = r["schema"].as_str().unwrap_or("").to_string();
            if id == SCHEMA_V1 {
                let s: Value = serde_json::from_str(REPORT_V1_SCHEMA)?;
                validate(&s, r, "schemas/report.v1.schema.json", &mut problems);
            } else if id == SCHEMA {
                let s: Value = serde_json::from_str(REPORT_SCHEMA)?;
                validate(&s, r, "schemas/report.schema.json", &mut problems);
                if let Err(e) = serde_json::from_value::<GradeReport>(r.clone()) {
                    problems.push(format!("report.json is not a {SCHEMA} report: {e}"));
                }
            } else {
                problems.push(format!(
                    "report.json has schema '{id}'; this acceval reads {SCHEMA} and {SCHEMA_V1}"
                ));
            }
            id
        }
        None => {
            problems.push("report.json: missing or not JSON".into());
            String::new()
        }
    };
    Ok(Verification {
        matched,
        schema,
        problems,
    })
}

/// Reads a folder's `report.json` as the typed report.
pub fn read_report(dir: &Path) -> anyhow::Result<GradeReport> {
    let p = dir.join("report.json");
    let bytes = std::fs::read(&p).with_context(|| format!("reading '{}'", p.display()))?;
    let v: Value =
        serde_json::from_slice(&bytes).with_context(|| format!("'{}' is not JSON", p.display()))?;
    match v["schema"].as_str() {
        Some(SCHEMA) => serde_json::from_value(v)
            .with_context(|| format!("'{}' is not a valid {SCHEMA} report", p.display())),
        Some(SCHEMA_V1) => bail!(
            "'{}' is an {SCHEMA_V1} report, written by acceval before the typed report; this acceval renders {SCHEMA} reports only: `acceval verify` still checks its files, and running the grade again gives a report it can render",
            p.display()
        ),
        other => bail!(
            "'{}' has schema {:?}; this acceval renders {SCHEMA} reports",
            p.display(),
            other.unwrap_or("(none)")
        ),
    }
}
