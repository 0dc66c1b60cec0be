//! `acceval report DIR --format md|html|csv|samples`: the views again, from report.json
//! alone; or (`samples`) every latency statistic recomputed from the raw samples the folder
//! holds (`samples.csv`) beside the summary's.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, bail};

use crate::Outcome;
use crate::grade::verify::read_report;
use crate::measure::stats::Summary;
use crate::report::compliance;
use crate::report::schema::bench::BenchReport;

pub fn run(dir: &Path, format: &str) -> anyhow::Result<Outcome> {
    if format == "samples" {
        return samples(dir);
    }
    let r = read_report(dir)?;
    let out = match format {
        "md" => compliance::markdown(&r).into_bytes(),
        "html" => compliance::html(&r).into_bytes(),
        "csv" => compliance::clauses_table(&r).to_csv(),
        other => bail!("--format {other}: use md, html, csv or samples"),
    };
    std::io::stdout().lock().write_all(&out)?;
    Ok(Outcome::Ok)
}

/// The bench of a folder: a grade's speed stage (report.json), or `bench --out`'s bench.json.
fn bench_of(dir: &Path) -> anyhow::Result<BenchReport> {
    if dir.join("report.json").is_file() {
        return read_report(dir)?
            .speed
            .map(|s| s.bench)
            .with_context(|| format!("'{}' holds a report without a speed stage", dir.display()));
    }
    let p = dir.join("bench.json");
    let bytes = std::fs::read(&p).with_context(|| {
        format!(
            "'{}' has neither report.json (acceval grade) nor bench.json (acceval bench --out)",
            dir.display()
        )
    })?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("'{}' is not a bench report", p.display()))
}

/// Each column of `samples.csv` (after index and start_ms): its name and values.
fn columns(path: &Path) -> anyhow::Result<Vec<(String, Vec<f64>)>> {
    let mut r = csv::Reader::from_path(path)
        .with_context(|| format!("reading '{}' (the raw samples)", path.display()))?;
    let names: Vec<String> = r.headers()?.iter().map(str::to_string).collect();
    let mut cols: Vec<(String, Vec<f64>)> = names
        .iter()
        .skip(2)
        .map(|n| (n.clone(), Vec::new()))
        .collect();
    for (row, rec) in r.records().enumerate() {
        let rec = rec.with_context(|| format!("'{}' row {}", path.display(), row + 1))?;
        for (k, (name, v)) in cols.iter_mut().enumerate() {
            let cell = rec.get(k + 2).unwrap_or("");
            v.push(cell.parse().with_context(|| {
                format!(
                    "'{}' row {}: {name} '{cell}' is not a number",
                    path.display(),
                    row + 1
                )
            })?);
        }
    }
    Ok(cols)
}

/// A statistic of a summary: its name and how to read it.
type Stat = (&'static str, fn(&Summary) -> f64);

/// The statistics compared, in the order printed.
const STATS: [Stat; 7] = [
    ("n", |s| s.n as f64),
    ("mean", |s| s.mean),
    ("min", |s| s.min),
    ("p50", |s| s.p50),
    ("p90", |s| s.p90),
    ("p99", |s| s.p99),
    ("max", |s| s.max),
];

/// Recomputes every summary of the bench from `samples.csv`; exit 1 when one differs.
fn samples(dir: &Path) -> anyhow::Result<Outcome> {
    let b = bench_of(dir)?;
    let cols = columns(&dir.join("samples.csv"))?;
    let mut t = crate::report::table(&["series", "statistic", "summary", "samples.csv", "equal"]);
    let mut differ = 0;
    for (name, values) in &cols {
        let summary = if name == "latency_ms" {
            b.latency_ms.as_ref()
        } else {
            name.strip_suffix("_ms")
                .and_then(|s| b.stages.get(s))
                .and_then(|s| s.latency_ms.as_ref())
        };
        let again = Summary::of(values);
        let stat = |s: Option<&Summary>, f: fn(&Summary) -> f64| s.map(f);
        for (label, f) in STATS {
            let (a, x) = (stat(summary, f), stat(again.as_ref(), f));
            let equal = a.is_some() && a == x;
            differ += usize::from(!equal);
            let show = |v: Option<f64>| v.map_or("n/a".to_string(), |v| v.to_string());
            t.add_row(vec![
                name.clone(),
                label.to_string(),
                show(a),
                show(x),
                if equal { "yes" } else { "NO" }.to_string(),
            ]);
        }
    }
    let mut o = std::io::stdout().lock();
    writeln!(o, "{t}")?;
    match b.origin_unix_ms {
        Some(ms) => writeln!(
            o,
            "Samples start at UNIX time {:.3} s; start_ms is each sample's offset on the monotonic clock.",
            ms / 1e3
        )?,
        None => writeln!(
            o,
            "No wall-clock anchor: this report predates origin_unix_ms."
        )?,
    }
    if differ > 0 {
        writeln!(
            o,
            "{differ} statistic(s) differ from what samples.csv gives"
        )?;
        return Ok(Outcome::NotCompliant);
    }
    writeln!(
        o,
        "Every statistic equals its recomputation from samples.csv."
    )?;
    Ok(Outcome::Ok)
}
