//! `acceval report DIR --format md|html|csv`: the views again, from report.json alone.

use std::io::Write;
use std::path::Path;

use anyhow::bail;

use crate::Outcome;
use crate::grade::verify::read_report;
use crate::report::compliance;

pub fn run(dir: &Path, format: &str) -> anyhow::Result<Outcome> {
    let r = read_report(dir)?;
    let out = match format {
        "md" => compliance::markdown(&r).into_bytes(),
        "html" => compliance::html(&r).into_bytes(),
        "csv" => compliance::clauses_table(&r).to_csv(),
        other => bail!("--format {other}: use md, html or csv"),
    };
    std::io::stdout().lock().write_all(&out)?;
    Ok(Outcome::Ok)
}
