//! The text view of `acceval run`.

use std::io::Write;

use crate::report::export::{Document, Table};
use crate::report::schema::run::TaskOutput;
use crate::report::schema::run::{RunReport, TaskReport};
use crate::report::schema::session::PlacementSummary;

fn ms(v: f64) -> String {
    format!("{v:.3} ms")
}

pub fn write_text(out: &mut dyn Write, r: &RunReport) -> std::io::Result<()> {
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
    match (t.load.convert_ms, &t.load.convert_note) {
        (Some(c), None) => writeln!(out, "  IR conversion (parse + optimise):   {}", ms(c))?,
        (Some(c), Some(n)) => {
            writeln!(out, "  IR conversion:                      {} ({n})", ms(c))?
        }
        (None, Some(n)) => writeln!(out, "  IR conversion:                      n/a: {n}")?,
        (None, None) => writeln!(out, "  IR conversion:                      n/a")?,
    }
    writeln!(
        out,
        "  graph initialisation (session):     {}",
        ms(t.load.init_ms)
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
        None => writeln!(
            out,
            "  steady inference:                   n/a: no steady runs"
        )?,
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
    if let Some(s) = &r.placement_summary {
        writeln!(out, "  {}", placement_line(s))?;
        writeln!(
            out,
            "  operator adaptation (§6 g): {} — {}",
            s.route, s.route_detail
        )?;
    }
    Ok(())
}

pub fn write_task(out: &mut dyn Write, r: &TaskReport) -> std::io::Result<()> {
    writeln!(out, "Model:   {} ({:?})", r.model, r.task)?;
    writeln!(
        out,
        "Backend: {} — {} on {}",
        r.session.backend, r.session.engine, r.session.device
    )?;
    let convert = match (r.load.convert_ms, &r.load.convert_note) {
        (Some(c), _) => ms(c),
        (None, _) => "n/a (inside session creation)".into(),
    };
    writeln!(
        out,
        "Load:    IR conversion {convert} · graph initialisation {}",
        ms(r.load.init_ms)
    )?;
    for run in &r.runs {
        writeln!(out)?;
        writeln!(out, "{}", run.input)?;
        let s = &run.stages;
        writeln!(
            out,
            "  stages: decode {} · pre-process {} · forward (copy in/out included) {} · post-process {} · total {}",
            ms(s.decode_ms),
            ms(s.preprocess_ms),
            ms(s.forward_ms),
            ms(s.postprocess_ms),
            ms(s.total_ms)
        )?;
        match &run.output {
            TaskOutput::Classes(c) => {
                for k in c {
                    writeln!(
                        out,
                        "  {:>6.2} %  {} (class {})",
                        100.0 * k.probability,
                        k.label,
                        k.class
                    )?;
                }
            }
            TaskOutput::Detections(d) => {
                writeln!(out, "  {} detection(s)", d.len())?;
                for k in d.iter().take(20) {
                    writeln!(
                        out,
                        "  {:.3} {} [{:.1}, {:.1}, {:.1}, {:.1}]",
                        k.score, k.label, k.x1, k.y1, k.x2, k.y2
                    )?;
                }
            }
            TaskOutput::ForecastMw(f) => {
                let v: Vec<String> = f.iter().map(|x| format!("{x:.1}")).collect();
                writeln!(
                    out,
                    "  forecast (MW, next {} steps): {}",
                    f.len(),
                    v.join(" ")
                )?;
            }
        }
    }
    Ok(())
}

impl Document for RunReport {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_text(o, self)
    }
    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "outputs.csv",
            &[
                "output",
                "elem_type",
                "shape",
                "min",
                "max",
                "mean",
                "nan_count",
                "inf_count",
            ],
        );
        for o in &self.outputs {
            let f = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
            t.push(vec![
                o.name.clone(),
                o.elem_type.clone(),
                o.shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("x"),
                f(o.min),
                f(o.max),
                f(o.mean),
                o.nan_count.to_string(),
                o.inf_count.to_string(),
            ]);
        }
        vec![t]
    }
    fn json_name(&self) -> &'static str {
        "run.json"
    }
}

impl Document for TaskReport {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_task(o, self)
    }
    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "task_runs.csv",
            &[
                "input",
                "decode_ms",
                "preprocess_ms",
                "forward_ms",
                "postprocess_ms",
                "total_ms",
            ],
        );
        for r in &self.runs {
            let s = &r.stages;
            t.push(vec![
                r.input.clone(),
                s.decode_ms.to_string(),
                s.preprocess_ms.to_string(),
                s.forward_ms.to_string(),
                s.postprocess_ms.to_string(),
                s.total_ms.to_string(),
            ]);
        }
        vec![t]
    }
    fn json_name(&self) -> &'static str {
        "task.json"
    }
}

/// One line: `OpenVINOExecutionProvider took the whole graph: 83 of 83 nodes, 100.0 % of MACs`.
pub fn placement_line(s: &PlacementSummary) -> String {
    if let Some(why) = &s.unavailable {
        return format!("n/a: {why}");
    }
    let (Some(on), Some(m), Some(total)) = (s.nodes_on_device, s.macs_on_device, s.macs) else {
        return "n/a: no placement".into();
    };
    let share = if total > 0 {
        format!("{:.1} %", 100.0 * m as f64 / total as f64)
    } else {
        "n/a".into()
    };
    let whole = on == s.nodes && s.nodes > 0;
    let who = match s.fused_subgraphs.first() {
        Some(f) if whole && s.fused_subgraphs.len() == 1 => {
            format!("whole graph handed to {}", f.provider)
        }
        Some(f) => format!(
            "{} fused subgraph(s) on {}",
            s.fused_subgraphs.len(),
            f.provider
        ),
        None => format!("on the {}", s.device_class),
    };
    let mut line = format!("{who}: {on} of {} nodes, {share} of MACs", s.nodes);
    if !s.cpu_fallback.is_empty() {
        let shown: Vec<&str> = s.cpu_fallback.iter().take(8).map(String::as_str).collect();
        line.push_str(&format!(
            "; CPU fallback: {}{}",
            shown.join(", "),
            if s.cpu_fallback.len() > 8 {
                ", ..."
            } else {
                ""
            }
        ));
    }
    line
}
