//! The text view of `acceval conformance`.

use std::io::Write;

use crate::report::export::{Document, Table};
use crate::report::schema::conformance::{ConformanceReport as Report, Status};

pub fn write_text(out: &mut dyn Write, r: &Report, failures: bool) -> std::io::Result<()> {
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

impl Document for Report {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_text(o, self, self.show_failures)
    }
    fn tables(&self) -> Vec<Table> {
        let mut by_op = Table::new(
            "conformance_by_op.csv",
            &["op", "cases", "loaded", "ran", "passed"],
        );
        for (op, c) in &self.by_op {
            by_op.push(vec![
                op.clone(),
                c.cases.to_string(),
                c.loaded.to_string(),
                c.ran.to_string(),
                c.passed.to_string(),
            ]);
        }
        let mut cases = Table::new(
            "conformance_cases.csv",
            &["case", "op", "status", "reason", "max_abs_diff", "seconds"],
        );
        for c in &self.cases {
            cases.push(vec![
                c.name.clone(),
                c.op.clone(),
                format!("{:?}", c.status).to_lowercase(),
                c.reason.clone().unwrap_or_default(),
                c.max_abs_diff.map(|v| v.to_string()).unwrap_or_default(),
                c.seconds.to_string(),
            ]);
        }
        vec![by_op, cases]
    }
    fn json_name(&self) -> &'static str {
        "conformance.json"
    }
}
