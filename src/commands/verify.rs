//! `acceval verify DIR`: every file against manifest.json, report.json against its schema.

use std::path::Path;

use crate::Outcome;
use crate::grade::verify;

pub fn run(dir: &Path) -> anyhow::Result<Outcome> {
    let v = verify::verify(dir)?;
    if v.problems.is_empty() {
        println!(
            "{}: OK — {} files match manifest.json; report.json matches the schema ({})",
            dir.display(),
            v.matched,
            v.schema
        );
        Ok(Outcome::Ok)
    } else {
        println!("{}: FAILED", dir.display());
        for p in &v.problems {
            println!("  {p}");
        }
        Ok(Outcome::NotCompliant)
    }
}
