//! The text view of `acceval conformance`.

use std::io::Write;

use crate::conformance::{Report, Status};

pub fn write_text(out: &mut impl Write, r: &Report, failures: bool) -> std::io::Result<()> {
    writeln!(
        out,
        "Suite:   {} ({} cases found; {} skipped by --types {:?})",
        r.suite, r.cases_found, r.cases_skipped, r.types
    )?;
    writeln!(
        out,
        "Backend: {}{}",
        r.backend,
        r.engine
            .as_ref()
            .map(|e| format!(" — {e}"))
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "Match:   |actual − expected| <= {} + {}·|expected| (NaN = NaN)\n",
        r.atol, r.rtol
    )?;
    let mut t = super::table(&["operator", "cases", "loaded", "ran", "passed"]);
    for (op, c) in &r.by_op {
        t.add_row(vec![
            op.clone(),
            c.cases.to_string(),
            c.loaded.to_string(),
            c.ran.to_string(),
            c.passed.to_string(),
        ]);
    }
    let c = &r.totals;
    t.add_row(vec![
        "total".to_string(),
        c.cases.to_string(),
        c.loaded.to_string(),
        c.ran.to_string(),
        c.passed.to_string(),
    ]);
    super::right(&mut t, &[1, 2, 3, 4]);
    writeln!(out, "{t}\n")?;
    writeln!(
        out,
        "Passed {} of {} cases ({}) in {:.1} s.",
        c.passed,
        c.cases,
        r.pass_rate
            .map(|p| format!("{:.1} %", 100.0 * p))
            .unwrap_or_else(|| "n/a".into()),
        r.seconds
    )?;
    let failed: Vec<_> = r
        .cases
        .iter()
        .filter(|c| c.status != Status::Passed)
        .collect();
    if failures {
        for f in &failed {
            writeln!(
                out,
                "  {} [{}] {:?}: {}",
                f.name,
                f.op,
                f.status,
                f.reason.as_deref().unwrap_or("")
            )?;
        }
    } else if !failed.is_empty() {
        writeln!(
            out,
            "{} cases did not pass: --failures lists them, --json gives every reason.",
            failed.len()
        )?;
    }
    Ok(())
}
