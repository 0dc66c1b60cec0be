//! Views of `acceval accuracy`: one model, and the precision table.

use std::io::Write;

use crate::report::export::{Document, Table};
use crate::report::schema::accuracy::{
    AccuracyReport, ConversionReport, DEFINITION, PrecisionTable,
};
use crate::standard::Level;

pub use crate::util::fmt::sci as e;

fn level(l: Option<Level>) -> String {
    l.map(|l| l.to_string())
        .unwrap_or_else(|| "none (< C1)".into())
}

/// The model, the backend and the reference.
fn header(o: &mut dyn Write, r: &AccuracyReport) -> std::io::Result<()> {
    let s = &r.session;
    writeln!(o, "Model:     {}", r.model)?;
    writeln!(o, "Backend:   {} — {} on {}", s.backend, s.engine, s.device)?;
    writeln!(o, "Reference: {}", r.reference.dir)?;
    if let (Some(m), Some(e)) = (&r.reference.model, &r.reference.engine) {
        writeln!(
            o,
            "           FP32 {m} on {e}, {}; cross-check: {}",
            r.reference.created_utc.as_deref().unwrap_or("?"),
            r.reference.cross_check.as_deref().unwrap_or("?")
        )?;
    }
    writeln!(o, "           {}", r.reference.relation)?;
    writeln!(
        o,
        "Inputs:    {} of {}{}",
        r.inputs_used,
        r.inputs_available,
        if r.inputs_used < r.inputs_available {
            " (limited)"
        } else {
            ""
        }
    )?;
    writeln!(o)?;
    Ok(())
}

/// One row per output, pooled over the inputs.
fn per_output(o: &mut dyn Write, r: &AccuracyReport) -> std::io::Result<()> {
    writeln!(o, "Per output, pooled over the inputs:")?;
    let mut t = super::table(&[
        "output",
        "shape",
        "elements",
        "MSE",
        "max abs error",
        "rel L2 error",
        "cosine",
        "NaN/Inf",
        "level",
    ]);
    for x in &r.outputs {
        let m = &x.metrics;
        t.add_row(vec![
            x.name.clone(),
            format!("{} {:?}", x.elem_type, x.shape),
            crate::util::fmt::thousands(m.elements),
            e(m.mse),
            e(m.max_abs_error),
            e(m.rel_l2_error),
            if m.cosine.is_nan() {
                "n/a".into()
            } else {
                format!("{:.8}", m.cosine)
            },
            format!("{}/{}", m.nan_count, m.inf_count),
            level(x.level),
        ]);
    }
    super::right(&mut t, &[2, 3, 4, 5, 6, 7]);
    writeln!(o, "{t}")?;
    writeln!(o)?;
    Ok(())
}

/// One row per input (its worst output).
fn per_input(o: &mut dyn Write, r: &AccuracyReport) -> std::io::Result<()> {
    writeln!(o, "Per input (worst output):")?;
    let mut t = super::table(&[
        "set",
        "source",
        "MSE",
        "max abs error",
        "level",
        "decision",
        "latency ms",
    ]);
    for i in &r.inputs {
        let max_abs = i
            .outputs
            .iter()
            .map(|o| o.metrics.max_abs_error)
            .fold(0.0f64, f64::max);
        t.add_row(vec![
            i.set.clone(),
            i.source.clone(),
            e(i.mse),
            e(max_abs),
            level(i.level),
            i.agreement.text(),
            format!("{:.3}", i.latency_ms),
        ]);
    }
    super::right(&mut t, &[2, 3, 6]);
    writeln!(o, "{t}")?;
    writeln!(o)?;
    Ok(())
}

/// The grade, the nulls, the independence and the verdict.
fn summary(o: &mut dyn Write, r: &AccuracyReport) -> std::io::Result<()> {
    for n in &r.nonfinite {
        writeln!(
            o,
            "NOT FINITE: output '{}' in {}: {} NaN, {} Inf; first at index {:?}",
            n.output, n.set, n.nan_count, n.inf_count, n.first_index
        )?;
    }
    writeln!(
        o,
        "MSE (Table 3):  {} (output '{}')",
        e(r.mse),
        r.worst_output
    )?;
    writeln!(o, "Level:          {} — {}", level(r.level), r.threshold)?;
    writeln!(o, "Decision:       {}", r.agreement_text)?;
    nulls(o, r)?;
    writeln!(
        o,
        "Independence:   {}: {}",
        if r.independence.independent {
            "independent"
        } else {
            "NOT independent"
        },
        r.independence.reason
    )?;
    if let Some(l) = &r.latency_ms {
        writeln!(
            o,
            "Latency:        median {:.3} ms of {} warm runs (backend run: copy in, forward, copy out)",
            l.p50, l.n
        )?;
    }
    match (r.verdict, &r.verdict_reason) {
        (Some(v), Some(why)) => writeln!(o, "Verdict:        {v}: {why}")?,
        _ => writeln!(o, "Verdict:        none (no level required)")?,
    }
    writeln!(o)?;
    Ok(())
}

/// The terminal view of one accuracy result.
pub fn write_text(o: &mut dyn Write, r: &AccuracyReport) -> std::io::Result<()> {
    header(o, r)?;
    per_output(o, r)?;
    per_input(o, r)?;
    summary(o, r)?;
    writeln!(o, "Definitions: {}", r.definition)
}

/// What zeros, a constant and input-independent outputs score against the same reference.
fn nulls(o: &mut dyn Write, r: &AccuracyReport) -> std::io::Result<()> {
    let d = &r.discrimination;
    let each: Vec<String> = d
        .nulls
        .iter()
        .map(|n| match (&n.unavailable, n.mse) {
            (Some(why), _) => format!("{}: n/a ({why})", n.kind),
            (None, Some(m)) => format!("{}: MSE {} → {}", n.kind, e(m), level(n.level)),
            (None, None) => format!("{}: n/a", n.kind),
        })
        .collect();
    writeln!(o, "Null outputs:   {}", each.join("; "))?;
    writeln!(
        o,
        "                input dependence {}; {}",
        d.input_dependence
            .map(|v| format!("{v:.4}"))
            .unwrap_or_else(|| "n/a".into()),
        match (d.discriminating, &d.reason) {
            (Some(true), _) =>
                "no null output meets the required level: the grade counts".to_string(),
            (Some(false), Some(why)) => format!("INVALID: {why}"),
            _ => "no level required".to_string(),
        }
    )
}

pub fn write_precisions(o: &mut dyn Write, t: &PrecisionTable) -> std::io::Result<()> {
    writeln!(
        o,
        "{} on {}: every variant against the FP32 CPU reference ({})",
        t.model,
        t.backend,
        t.rows
            .first()
            .map(|r| r.reference.dir.as_str())
            .unwrap_or("?")
    )?;
    let mut tb = super::table(&[
        "precision",
        "MSE",
        "level",
        "max abs error",
        "rel L2 error",
        "decision agreement",
        "latency ms (median)",
        "verdict",
    ]);
    for r in &t.rows {
        let worst = r.outputs.iter().find(|x| x.name == r.worst_output);
        tb.add_row(vec![
            r.precision
                .map(|p| format!("{p:?}").to_uppercase())
                .unwrap_or_else(|| "?".into()),
            e(r.mse),
            level(r.level),
            worst
                .map(|w| e(w.metrics.max_abs_error))
                .unwrap_or_default(),
            worst.map(|w| e(w.metrics.rel_l2_error)).unwrap_or_default(),
            r.agreement_text.clone(),
            r.latency_ms
                .as_ref()
                .map(|l| format!("{:.3}", l.p50))
                .unwrap_or_else(|| "n/a".into()),
            r.verdict
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    super::right(&mut tb, &[1, 3, 4, 6]);
    writeln!(o, "{tb}")?;
    writeln!(
        o,
        "{} inputs each; latency: median of one warm backend run per input. Definitions: {}",
        t.rows.first().map(|r| r.inputs_used).unwrap_or(0),
        DEFINITION
    )
}

/// One row per output: the pooled error figures and the output's Table 3 level.
fn outputs_table(r: &AccuracyReport) -> Table {
    let mut t = Table::new(
        "accuracy_outputs.csv",
        &[
            "output",
            "elem_type",
            "shape",
            "elements",
            "mse",
            "max_abs_error",
            "rel_l2_error",
            "cosine",
            "nan_count",
            "inf_count",
            "level",
        ],
    );
    for o in &r.outputs {
        let m = &o.metrics;
        t.push(vec![
            o.name.clone(),
            o.elem_type.clone(),
            o.shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("x"),
            m.elements.to_string(),
            m.mse.to_string(),
            m.max_abs_error.to_string(),
            m.rel_l2_error.to_string(),
            m.cosine.to_string(),
            m.nan_count.to_string(),
            m.inf_count.to_string(),
            o.level.map(|l| l.to_string()).unwrap_or_default(),
        ]);
    }
    t
}

/// One row per input: the worst output's MSE on it and the backend's time.
fn inputs_table(r: &AccuracyReport) -> Table {
    let mut t = Table::new(
        "accuracy_inputs.csv",
        &["set", "source", "mse", "level", "agreement", "latency_ms"],
    );
    for i in &r.inputs {
        t.push(vec![
            i.set.clone(),
            i.source.clone(),
            i.mse.to_string(),
            i.level.map(|l| l.to_string()).unwrap_or_default(),
            i.agreement.text(),
            i.latency_ms.to_string(),
        ]);
    }
    t
}

impl Document for AccuracyReport {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_text(o, self)
    }
    fn tables(&self) -> Vec<Table> {
        vec![outputs_table(self), inputs_table(self)]
    }
    fn json_name(&self) -> &'static str {
        "accuracy.json"
    }
}

impl Document for PrecisionTable {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_precisions(o, self)
    }
    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "accuracy_precisions.csv",
            &[
                "model",
                "precision",
                "mse",
                "worst_output",
                "level",
                "agreement",
                "verdict",
            ],
        );
        for r in &self.rows {
            t.push(vec![
                r.model.clone(),
                r.precision.map(|p| p.to_string()).unwrap_or_default(),
                r.mse.to_string(),
                r.worst_output.clone(),
                r.level.map(|l| l.to_string()).unwrap_or_default(),
                r.agreement_text.clone(),
                r.verdict.map(|v| v.to_string()).unwrap_or_default(),
            ]);
        }
        vec![t]
    }
    fn json_name(&self) -> &'static str {
        "accuracy_precisions.json"
    }
}

/// The conversion check's terminal view.
fn write_conversion(o: &mut dyn Write, r: &ConversionReport) -> std::io::Result<()> {
    writeln!(
        o,
        "Conversion check: {} (reference: {} on {}) against {}",
        r.source, r.reference.engine, r.reference.backend, r.converted
    )?;
    writeln!(o, "Inputs: {}", r.inputs)?;
    let mut tb = super::table(&[
        "engine",
        "MSE (worst output)",
        "level",
        "max abs error",
        "rel L2 error",
        "cosine",
        "top-1 agreement",
        "verdict",
    ]);
    for x in &r.engines {
        let worst = x.outputs.iter().find(|w| w.converted == x.worst_output);
        let m = |f: fn(&crate::report::schema::accuracy::ErrorMetrics) -> f64| {
            worst
                .map(|w| e(f(&w.metrics)))
                .unwrap_or_else(|| "n/a".into())
        };
        tb.add_row(vec![
            format!("{} ({})", x.session.backend, x.session.engine),
            match &x.error {
                Some(err) => format!("n/a: {err}"),
                None => e(x.mse),
            },
            level(x.level),
            m(|w| w.max_abs_error),
            m(|w| w.rel_l2_error),
            m(|w| w.cosine),
            x.top1_agreement
                .map(|a| format!("{:.1} %", 100.0 * a))
                .unwrap_or_else(|| "n/a".into()),
            x.verdict.map(|v| v.to_string()).unwrap_or_default(),
        ]);
    }
    writeln!(o, "{tb}")?;
    writeln!(o, "Definition: {}", r.definition)
}

impl Document for ConversionReport {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_conversion(o, self)
    }
    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "conversion.csv",
            &[
                "engine",
                "source_output",
                "converted_output",
                "elements",
                "mse",
                "max_abs_error",
                "rel_l2_error",
                "cosine",
                "level",
            ],
        );
        for x in &self.engines {
            for w in &x.outputs {
                t.push(vec![
                    x.session.backend.clone(),
                    w.source.clone(),
                    w.converted.clone(),
                    w.metrics.elements.to_string(),
                    w.metrics.mse.to_string(),
                    w.metrics.max_abs_error.to_string(),
                    w.metrics.rel_l2_error.to_string(),
                    w.metrics.cosine.to_string(),
                    w.level.map(|l| l.to_string()).unwrap_or_default(),
                ]);
            }
        }
        vec![t]
    }
    fn json_name(&self) -> &'static str {
        "conversion.json"
    }
}
