//! `acceval schemas --write DIR | --check DIR`: the JSON Schemas generated from the typed
//! results (report::schema::catalogue).

use std::path::PathBuf;

use anyhow::bail;

use crate::Outcome;
use crate::report::schema::catalogue;

pub fn run(write: Option<PathBuf>, check: Option<PathBuf>) -> anyhow::Result<Outcome> {
    let mut stale = Vec::new();
    for (file, schema) in catalogue() {
        let mut text = serde_json::to_string_pretty(&schema)?;
        text.push('\n');
        if let Some(dir) = &write {
            std::fs::create_dir_all(dir)?;
            crate::util::fs::write_file(&dir.join(file), text.as_bytes())?;
            println!("wrote {}", dir.join(file).display());
        }
        if let Some(dir) = &check {
            let have = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
            if have != text {
                stale.push(file);
            }
        }
    }
    if write.is_none() && check.is_none() {
        bail!("give --write DIR or --check DIR");
    }
    if !stale.is_empty() {
        println!(
            "out of date: {} (run `acceval schemas --write schemas`)",
            stale.join(", ")
        );
        return Ok(Outcome::NotCompliant);
    }
    Ok(Outcome::Ok)
}
