//! Views of `acceval bench`: the terminal summary (one row per metric, MindIE's columns)
//! and the CSV exports.

use std::io::Write;

use crate::report::export::{Document, Table};
use crate::report::schema::bench::{BenchReport, ComputeRate};
use crate::report::schema::stats::Summary;
use crate::report::schema::telemetry::Recording;

fn f3(v: f64) -> String {
    format!("{v:.3}")
}

fn row(name: &str, s: &Summary) -> Vec<String> {
    vec![
        name.to_string(),
        f3(s.mean),
        f3(s.min),
        f3(s.max),
        f3(s.stddev),
        f3(s.p50),
        f3(s.p75),
        f3(s.p90),
        f3(s.p99),
        s.p999.map(f3).unwrap_or_else(|| "n/a: N < 1000".into()),
        s.n.to_string(),
    ]
}

fn opt(v: Option<f64>, unit: &str) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.3} {unit}"),
        _ => "n/a".into(),
    }
}

/// Model, backend, inputs, policy, cold start.
fn header(o: &mut dyn Write, r: &BenchReport) -> std::io::Result<()> {
    let s = &r.session;
    writeln!(o, "Model:    {} ({})", r.model, r.mode)?;
    writeln!(o, "Backend:  {} — {} on {}", s.backend, s.engine, s.device)?;
    writeln!(
        o,
        "Inputs:   {} ({} distinct, {} model-input bytes per sample)",
        r.inputs.source, r.inputs.count, r.inputs.model_input_bytes
    )?;
    let p = &r.policy;
    writeln!(
        o,
        "Policy:   warm-up {} samples / {} s; at least {} runs and {} s; interval {} ms; judged on P{}",
        p.warmup,
        p.warmup_time_s,
        p.runs,
        p.duration_s,
        p.interval_ms,
        p.percentile * 100.0
    )?;
    writeln!(
        o,
        "Cold:     IR conversion {} · graph initialisation {:.3} ms · first inference {:.3} ms (not in the statistics)",
        r.cold_start
            .convert_ms
            .map(|v| format!("{v:.3} ms"))
            .unwrap_or_else(|| "n/a (inside initialisation)".into()),
        r.cold_start.init_ms,
        r.cold_start.first_inference_ms
    )?;
    writeln!(
        o,
        "Warm-up:  {} samples in {:.1} ms; harness overhead {:.3} µs per sample",
        r.warmup_samples, r.warmup_ms, r.harness_overhead_us
    )?;
    Ok(())
}

/// The latency table, FPS and throughput.
fn latency(o: &mut dyn Write, r: &BenchReport) -> std::io::Result<()> {
    writeln!(o)?;
    writeln!(
        o,
        "Latency, ms ({} samples in {:.3} s):",
        r.samples, r.wall_s
    )?;
    let mut t = super::table(&[
        "metric", "average", "min", "max", "stddev", "P50", "P75", "P90", "P99", "P99.9", "N",
    ]);
    if let Some(l) = &r.latency_ms {
        t.add_row(row("end to end", l));
    }
    for name in &r.stage_names {
        if let Some(st) = r.stages.get(name).and_then(|s| s.latency_ms.as_ref()) {
            t.add_row(row(&format!("  {name}"), st));
        }
    }
    super::right(&mut t, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    writeln!(o, "{t}")?;
    writeln!(o, "Copies:   {}", r.copies)?;
    let unsupported: Vec<String> = r
        .percentile_support
        .iter()
        .filter(|s| !s.supported)
        .map(|s| format!("{} (needs {})", s.percentile, s.min_samples))
        .collect();
    if !unsupported.is_empty() {
        writeln!(
            o,
            "Flagged:  too few samples for {} at 99 % confidence",
            unsupported.join(", ")
        )?;
    }
    writeln!(
        o,
        "FPS:      {} — {}",
        opt(r.fps.value, "1/s"),
        r.fps.definition
    )?;
    writeln!(
        o,
        "Through.: {} — {}",
        opt(r.throughput.value, "1/s"),
        r.throughput.definition
    )?;
    if let Some(c) = &r.compute {
        writeln!(o, "Compute:  {}", compute_line(c))?;
        match (&c.peak.gflop_per_s, &c.peak.unavailable) {
            (Some(_), _) => writeln!(o, "Peak:     {}: {}", c.peak.device, c.peak.method)?,
            (None, Some(why)) => writeln!(o, "Peak:     n/a: {why}")?,
            _ => {}
        }
    }
    Ok(())
}

/// One line of physical context for a speed figure: the forward pass's achieved GFLOP/s
/// and its share of the device's peak (bench's view and the grade report's speed section).
pub fn compute_line(c: &ComputeRate) -> String {
    let lb = if c.flops_lower_bound { "≥ " } else { "" };
    let achieved = match (c.model_flops, c.forward_p50_ms, c.achieved_gflop_per_s) {
        (Some(f), Some(ms), Some(g)) => format!(
            "{lb}{g:.1} GFLOP/s achieved ({lb}{:.3} GFLOPs per forward pass / {ms:.3} ms P50 forward)",
            f as f64 / 1e9
        ),
        _ => format!(
            "n/a: {}",
            c.note
                .as_deref()
                .unwrap_or("the forward time or the FLOPs are missing")
        ),
    };
    let share = match (c.share_of_peak_pct, c.peak.gflop_per_s) {
        (Some(pct), Some(p)) => format!(
            " = {lb}{pct:.1} % of the {p:.1} GFLOP/s peak of {}",
            c.peak.device
        ),
        (None, Some(p)) => format!(" (peak of {}: {p:.1} GFLOP/s)", c.peak.device),
        _ => format!(
            "; % of peak n/a: {}",
            c.peak.unavailable.as_deref().unwrap_or("no peak")
        ),
    };
    format!("{achieved}{share}")
}

/// The offline batch sweep, when one ran.
fn batch_sweep(o: &mut dyn Write, r: &BenchReport) -> std::io::Result<()> {
    if !r.batch_sweep.is_empty() {
        writeln!(o)?;
        writeln!(o, "Batch sweep (model only):")?;
        let mut t = super::table(&[
            "batch",
            "latency P50 ms",
            "samples/s (N·b/ΣT)",
            "samples/s (wall)",
            "input MB/s",
            "validity",
        ]);
        for b in &r.batch_sweep {
            t.add_row(vec![
                b.batch.to_string(),
                b.latency_ms.as_ref().map(|l| f3(l.p50)).unwrap_or_default(),
                format!("{:.2}", b.samples_per_s),
                format!("{:.2}", b.samples_per_s_wall),
                format!("{:.2}", b.input_mb_per_s),
                b.validity.result.to_string(),
            ]);
        }
        super::right(&mut t, &[0, 1, 2, 3, 4]);
        writeln!(o, "{t}")?;
    }
    Ok(())
}

/// The pipelined run, when one ran.
fn pipelined(o: &mut dyn Write, r: &BenchReport) -> std::io::Result<()> {
    let Some(p) = &r.pipelined else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(o, "Pipelined — {}:", p.fps.definition)?;
    match p.fps.value {
        Some(v) => writeln!(
            o,
            "  FPS {v:.2} 1/s (N = {}, T = {:.3} s; outputs per model instance {:?}); one at a time {}; speedup {}; a prepared input waited {} ms for the model on average",
            p.samples,
            p.t_s,
            p.outputs_per_instance,
            p.one_at_a_time_fps
                .map_or("n/a".into(), |x| format!("{x:.2} 1/s")),
            p.speedup.map_or("n/a".into(), |x| format!("{x:.2}×")),
            p.mean_wait_ms.map_or("n/a".into(), f3),
        )?,
        None => writeln!(
            o,
            "  FPS n/a: {} ({} of the inputs done)",
            p.error.as_deref().unwrap_or("incomplete"),
            p.samples
        )?,
    }
    Ok(())
}

/// The peak-power sweep, when one ran.
fn peak(o: &mut dyn Write, r: &BenchReport) -> std::io::Result<()> {
    if let Some(pp) = &r.peak_power {
        writeln!(o)?;
        writeln!(o, "Peak power — {}:", pp.definition)?;
        for st in &pp.steps {
            writeln!(
                o,
                "  batch {:>4}: {:.2} samples/s; max power {}",
                st.batch,
                st.samples_per_s,
                if st.max_power_w.is_empty() {
                    "n/a".to_string()
                } else {
                    st.max_power_w
                        .iter()
                        .map(|(d, w)| format!("{d} {w:.1} W"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )?;
        }
        for (d, w, b) in &pp.peak {
            writeln!(o, "  peak {d}: {w:.1} W at batch {b}")?;
        }
        if let Some(u) = &pp.unavailable {
            writeln!(o, "  peak power: {}", u.split(" (").next().unwrap_or(u))?;
        }
    }
    Ok(())
}

/// Sensors, channels and energy.
fn telemetry(o: &mut dyn Write, r: &BenchReport) -> std::io::Result<()> {
    if let Some(tm) = &r.telemetry {
        writeln!(o)?;
        writeln!(
            o,
            "Telemetry ({} ticks every {} ms over {:.3} s, {} gaps):",
            tm.ticks,
            tm.interval_ms,
            tm.window_s,
            tm.gaps.len()
        )?;
        for s in &tm.sensors {
            writeln!(o, "  {:<9} {}", s.sensor, s.status)?;
        }
        let mut t = super::table(&["channel", "mean", "max", "unit", "samples"]);
        for c in tm
            .channels
            .iter()
            .filter(|c| !c.name.starts_with("cpu") || c.name == "cpu.util_pct")
        {
            t.add_row(vec![
                c.name.clone(),
                c.mean.map(f3).unwrap_or_else(|| "n/a".into()),
                c.max.map(f3).unwrap_or_else(|| "n/a".into()),
                c.unit.to_string(),
                c.samples.to_string(),
            ]);
        }
        super::right(&mut t, &[1, 2, 4]);
        writeln!(o, "{t}")?;
        for c in tm.channels.iter().filter(|c| c.failure.is_some()) {
            writeln!(
                o,
                "  {}: {}",
                c.name,
                c.failure.as_deref().unwrap_or_default()
            )?;
        }
        for n in &tm.energy_na {
            writeln!(o, "Energy {}: {}", n.device, n.reason)?;
        }
        if tm.energy_unavailable.is_some() {
            writeln!(
                o,
                "Power and energy: n/a: no power or energy sensor answered (nvml, dcmi, rapl, ipmi, ptdaemon: reasons above)"
            )?;
        }
        for e in &tm.energy {
            writeln!(
                o,
                "Energy {}: {:.3} J ({}{}), average {:.3} W, peak {}, {} inferences/J",
                e.device,
                e.joules,
                e.method,
                e.power_integral_j
                    .map(|j| format!("; integral of power samples {j:.3} J"))
                    .unwrap_or_default(),
                e.average_power_w,
                e.peak_power_w
                    .map(|p| format!("{p:.3} W"))
                    .unwrap_or_else(|| "n/a".into()),
                e.inferences_per_joule
                    .map(|v| format!("{v:.3}"))
                    .unwrap_or_else(|| "n/a".into())
            )?;
        }
    }
    Ok(())
}

/// The validity rules and whether the run completed.
fn validity(o: &mut dyn Write, r: &BenchReport) -> std::io::Result<()> {
    writeln!(o)?;
    writeln!(o, "Validity: {}", r.validity.result)?;
    for rule in &r.validity.rules {
        writeln!(
            o,
            "  [{}] {}: {}",
            if rule.passed { "ok" } else { "FAILED" },
            rule.rule,
            rule.detail
        )?;
    }
    if !r.complete {
        writeln!(
            o,
            "INCOMPLETE: {}",
            r.error.as_deref().unwrap_or("stopped early")
        )?;
    }
    Ok(())
}

/// The terminal view: one section after another.
pub fn write_text(o: &mut dyn Write, r: &BenchReport) -> std::io::Result<()> {
    header(o, r)?;
    latency(o, r)?;
    batch_sweep(o, r)?;
    pipelined(o, r)?;
    peak(o, r)?;
    telemetry(o, r)?;
    validity(o, r)
}

/// The summary, one row per metric with MindIE's columns (`metrics.csv`).
pub fn summary_table(r: &BenchReport) -> Table {
    let mut t = Table::new(
        "metrics.csv",
        &[
            "metric", "unit", "average", "min", "max", "stddev", "p50", "p75", "p90", "p99",
            "p99.9", "n",
        ],
    );
    let mut add = |name: &str, x: &Summary| {
        t.push(vec![
            name.to_string(),
            "ms".into(),
            x.mean.to_string(),
            x.min.to_string(),
            x.max.to_string(),
            x.stddev.to_string(),
            x.p50.to_string(),
            x.p75.to_string(),
            x.p90.to_string(),
            x.p99.to_string(),
            x.p999.map(|v| v.to_string()).unwrap_or_default(),
            x.n.to_string(),
        ]);
    };
    if let Some(l) = &r.latency_ms {
        add("latency", l);
    }
    for name in &r.stage_names {
        if let Some(st) = r.stages.get(name).and_then(|s| s.latency_ms.as_ref()) {
            add(name, st);
        }
    }
    for (name, f) in [("fps", &r.fps), ("throughput", &r.throughput)] {
        let mut row = vec![
            name.to_string(),
            f.unit.clone(),
            f.value.map(|v| v.to_string()).unwrap_or_default(),
        ];
        row.extend(std::iter::repeat_n(String::new(), 8));
        row.push(r.samples.to_string());
        t.push(row);
    }
    t
}

/// Every sample: index, start, end to end and each stage, ms (`samples.csv`).
pub fn samples_table(r: &BenchReport) -> Table {
    let mut header = vec!["index".to_string(), "start_ms".into(), "latency_ms".into()];
    header.extend(r.stage_names.iter().map(|n| format!("{n}_ms")));
    let mut t = Table {
        file: "samples.csv".into(),
        header,
        rows: Vec::with_capacity(r.raw.len()),
    };
    for (i, x) in r.raw.iter().enumerate() {
        let mut row = vec![
            i.to_string(),
            x.start_ms.to_string(),
            x.total_ms.to_string(),
        ];
        row.extend(
            x.stages[..r.stage_names.len()]
                .iter()
                .map(|v| v.to_string()),
        );
        t.push(row);
    }
    t
}

/// The telemetry timeline: one row per tick, one column per channel (empty when a read
/// failed or the channel has no value at the first tick) (`telemetry.csv`).
pub fn telemetry_table(rec: &Recording) -> Table {
    let mut header = vec!["t_ms".to_string()];
    header.extend(rec.channels.iter().map(|c| c.name.clone()));
    let mut t = Table {
        file: "telemetry.csv".into(),
        header,
        rows: Vec::with_capacity(rec.ticks.len()),
    };
    for tick in &rec.ticks {
        let mut row = vec![tick.t_ms.to_string()];
        row.extend(tick.values.iter().map(|v| {
            if v.is_finite() {
                v.to_string()
            } else {
                String::new()
            }
        }));
        t.push(row);
    }
    t
}

impl Document for BenchReport {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_text(o, self)
    }
    fn tables(&self) -> Vec<Table> {
        let mut v = vec![summary_table(self), samples_table(self)];
        if let Some(rec) = &self.recording {
            v.push(telemetry_table(rec));
        }
        v
    }
    fn json_name(&self) -> &'static str {
        "bench.json"
    }
}
