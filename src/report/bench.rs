//! Views of `acceval bench`: the terminal summary (one row per metric, MindIE's columns)
//! and the CSV exports.

use std::fmt::Write as _;
use std::io::Write;

use crate::commands::bench::BenchReport;
use crate::device::telemetry::Recording;
use crate::measure::stats::Summary;

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

pub fn write_text(o: &mut impl Write, r: &BenchReport) -> std::io::Result<()> {
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
        if let Some(st) = r.stages.get(*name).and_then(|s| s.latency_ms.as_ref()) {
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
        if tm.energy_unavailable.is_some() {
            writeln!(
                o,
                "Power and energy: n/a: no power or energy sensor answered (nvml, dcmi, rapl, ipmi, ptdaemon: reasons above)"
            )?;
        }
        for e in &tm.energy {
            writeln!(
                o,
                "Energy {}: {:.3} J ({}), average {:.3} W, peak {}, {} inferences/J",
                e.device,
                e.joules,
                e.method,
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

/// The summary, one row per metric with MindIE's columns.
pub fn summary_csv(r: &BenchReport) -> String {
    let mut s = String::from("metric,unit,average,min,max,stddev,p50,p75,p90,p99,p99.9,n\n");
    let mut add = |name: &str, x: &Summary| {
        let _ = writeln!(
            s,
            "{name},ms,{},{},{},{},{},{},{},{},{},{}",
            x.mean,
            x.min,
            x.max,
            x.stddev,
            x.p50,
            x.p75,
            x.p90,
            x.p99,
            x.p999.map(|v| v.to_string()).unwrap_or_default(),
            x.n
        );
    };
    if let Some(l) = &r.latency_ms {
        add("latency", l);
    }
    for name in &r.stage_names {
        if let Some(st) = r.stages.get(*name).and_then(|s| s.latency_ms.as_ref()) {
            add(name, st);
        }
    }
    for (name, f) in [("fps", &r.fps), ("throughput", &r.throughput)] {
        let _ = writeln!(
            s,
            "{name},{},{},,,,,,,,,{}",
            f.unit,
            f.value.map(|v| v.to_string()).unwrap_or_default(),
            r.samples
        );
    }
    s
}

/// Every sample: index, start, end to end and each stage, ms.
pub fn samples_csv(r: &BenchReport) -> String {
    let mut s = String::from("index,start_ms,latency_ms");
    for n in &r.stage_names {
        let _ = write!(s, ",{n}_ms");
    }
    s.push('\n');
    for (i, x) in r.raw.iter().enumerate() {
        let _ = write!(s, "{i},{},{}", x.start_ms, x.total_ms);
        for k in 0..r.stage_names.len() {
            let _ = write!(s, ",{}", x.stages[k]);
        }
        s.push('\n');
    }
    s
}

/// The telemetry timeline: one row per tick, one column per channel (empty when a read
/// failed or the channel has no value at the first tick).
pub fn telemetry_csv(rec: &Recording) -> String {
    let mut s = String::from("t_ms");
    for c in &rec.channels {
        let _ = write!(s, ",{}", c.name);
    }
    s.push('\n');
    for t in &rec.ticks {
        let _ = write!(s, "{}", t.t_ms);
        for v in &t.values {
            if v.is_finite() {
                let _ = write!(s, ",{v}");
            } else {
                s.push(',');
            }
        }
        s.push('\n');
    }
    s
}
