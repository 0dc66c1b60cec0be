//! The text view of `acceval zoo list`.

use std::io::Write;
use std::path::Path;

use crate::report::schema::accuracy::{NullBaseline, NullKind};
use crate::report::schema::zoo::{Manifest, NullCheck};
use crate::util::fmt::thousands;
use crate::util::fs::file_matches;

pub fn write_list(out: &mut impl Write, m: &Manifest, dir: &Path) -> std::io::Result<()> {
    let mut t = super::table(&[
        "model", "scenario", "task", "input", "params", "MACs", "MB", "file",
    ]);
    for x in &m.models {
        let path = dir.join(&x.file);
        let state = if file_matches(&path, &x.sha256) {
            "built"
        } else if path.exists() {
            "STALE (hash differs)"
        } else if x.committed {
            "missing (committed; git checkout)"
        } else {
            "built on first use"
        };
        t.add_row(vec![
            x.name.clone(),
            x.scenario.clone(),
            format!("{:?}", x.task).to_lowercase(),
            format!(
                "{} {}",
                x.input,
                x.input_shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            ),
            thousands(x.params),
            thousands(x.macs),
            format!("{:.1}", x.bytes as f64 / 1e6),
            state.to_string(),
        ]);
    }
    super::right(&mut t, &[4, 5, 6]);
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "zoo version {}; models in {} (`acceval zoo build NAME` builds one; `--model NAME` builds it when first needed)",
        m.zoo_version,
        dir.display()
    )
}

/// One null output's cell: its MSE and level.
fn null_cell(n: Option<&NullBaseline>) -> String {
    match n {
        Some(NullBaseline {
            mse: Some(m),
            level,
            ..
        }) => format!(
            "{m:.2e} {}",
            level.map_or("below C1".to_string(), |l| l.to_string())
        ),
        Some(n) => format!("n/a: {}", n.unavailable.as_deref().unwrap_or("not formed")),
        None => "n/a".into(),
    }
}

/// The verdict cell of a null check.
fn null_verdict(c: &NullCheck) -> String {
    let Some(d) = &c.discrimination else {
        return format!(
            "n/a: {}",
            c.unavailable.as_deref().unwrap_or("no reference")
        );
    };
    let stale = if c.reference_current == Some(false) {
        " (reference of another file: recompute it)"
    } else {
        ""
    };
    let best = d
        .nulls
        .iter()
        .filter_map(|n| Some((n.kind, n.level?)))
        .max_by_key(|(_, l)| *l);
    let verdict = match (c.required, d.discriminating, best) {
        (Some(r), Some(false), Some((k, l))) => {
            format!("NULL PASSES {r}: {k} scores {l}, grades INVALID")
        }
        (Some(r), Some(true), _) => format!("discriminates at {r}"),
        (None, _, Some((k, l))) => format!("no shipped profile; best null: {k} {l}"),
        (None, _, None) => "no shipped profile; every null below C1".into(),
        (Some(r), _, _) => format!("undecided at {r}: {}", d.reason.as_deref().unwrap_or("")),
    };
    format!("{verdict}{stale}")
}

/// The null check of every zoo model: a broken device's grade against its reference.
pub fn write_null_checks(out: &mut impl Write, checks: &[NullCheck]) -> std::io::Result<()> {
    let mut t = super::table(&[
        "model",
        "weights",
        "profile level",
        "zeros",
        "mean",
        "permuted",
        "input dependence",
        "null check",
    ]);
    for c in checks {
        let null = |k: NullKind| {
            null_cell(
                c.discrimination
                    .as_ref()
                    .and_then(|d| d.nulls.iter().find(|n| n.kind == k)),
            )
        };
        t.add_row(vec![
            c.model.clone(),
            if c.trained { "trained" } else { "seeded" }.into(),
            match c.required {
                Some(r) => format!("{r} ({})", c.profiles.join(", ")),
                None => "none".into(),
            },
            null(NullKind::Zeros),
            null(NullKind::Mean),
            null(NullKind::Permuted),
            c.discrimination
                .as_ref()
                .and_then(|d| d.input_dependence)
                .map_or("n/a".into(), |v| format!("{v:.3}")),
            null_verdict(c),
        ]);
    }
    super::right(&mut t, &[3, 4, 5, 6]);
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "Null check: zeros, the mean of the reference outputs and the outputs of another input, graded (Table 3 MSE) against each model's reference like a device; a null that meets the profile's level means that level cannot tell a broken device from a working one, so its accuracy grades are INVALID. One reference (the FP32 model's) serves every precision."
    )
}
