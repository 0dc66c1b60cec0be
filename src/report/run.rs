//! The text view of `acceval run`.

use std::io::Write;

use crate::commands::run::RunReport;

fn ms(v: f64) -> String {
    format!("{v:.3} ms")
}

pub fn write_text(out: &mut impl Write, r: &RunReport) -> std::io::Result<()> {
    let s = &r.session;
    writeln!(out, "Model:   {}", r.model)?;
    writeln!(out, "Backend: {} — {} on {}", s.backend, s.engine, s.device)?;
    if let Some(l) = &s.library {
        writeln!(out, "Library: {l}")?;
    }
    let opts: Vec<String> = s.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
    writeln!(out, "Options: {}", opts.join(", "))?;
    writeln!(out)?;
    let t = &r.timings;
    writeln!(out, "Timings (§5.3; host wall clock, device synchronised):")?;
    match (t.load.convert, &t.load.convert_note) {
        (Some(c), _) => writeln!(
            out,
            "  IR conversion (parse + optimise):   {}",
            ms(c.as_secs_f64() * 1e3)
        )?,
        (None, Some(n)) => writeln!(out, "  IR conversion:                      n/a: {n}")?,
        (None, None) => writeln!(out, "  IR conversion:                      n/a")?,
    }
    writeln!(
        out,
        "  graph initialisation (session):     {}",
        ms(t.load.init.as_secs_f64() * 1e3)
    )?;
    writeln!(
        out,
        "  first inference (cold):             {}",
        ms(t.first_inference_ms)
    )?;
    match &t.steady_ms {
        Some(st) => writeln!(
            out,
            "  steady inference, {} runs:          mean {} · min {} · p50 {} · p90 {} · max {}",
            st.n,
            ms(st.mean),
            ms(st.min),
            ms(st.p50),
            ms(st.p90),
            ms(st.max)
        )?,
        None => writeln!(out, "  steady inference:                   n/a: --runs 0")?,
    }
    writeln!(out)?;
    for i in &r.inputs {
        writeln!(
            out,
            "Input  {} {} [{}] — {}",
            i.name,
            i.elem_type,
            i.shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("x"),
            i.source
        )?;
    }
    for o in &r.outputs {
        let f = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_else(|| "n/a".into());
        writeln!(
            out,
            "Output {} {} [{}] — min {} · max {} · mean {} · NaN {} · Inf {}",
            o.name,
            o.elem_type,
            o.shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("x"),
            f(o.min),
            f(o.max),
            f(o.mean),
            o.nan_count,
            o.inf_count
        )?;
    }
    if let Some(p) = &r.output_file {
        writeln!(out, "Outputs written to {p}")?;
    }
    if let Some(p) = &r.placement {
        writeln!(out)?;
        writeln!(out, "Operator placement (§6.2 f) — {}:", p.source)?;
        for (d, n) in &p.nodes_by_device {
            writeln!(out, "  {d}: {n} nodes")?;
        }
        if !p.cpu_fallback.is_empty() {
            writeln!(out, "  fell back to the CPU: {}", p.cpu_fallback.join(", "))?;
        }
    }
    Ok(())
}
