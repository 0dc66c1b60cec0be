//! Views of a `qps` result: the terminal table, the curve as CSV, and an SVG chart.

use std::fmt::Write as _;
use std::io::Write;

use super::compliance::{B, H, L, W, frame, sx, sy, ticks};
use super::{right, table};
use crate::cli::LoadMode;
use crate::load::qps::QpsReport;

fn ms(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "n/a".into())
}

pub fn write_text(o: &mut impl Write, r: &QpsReport) -> std::io::Result<()> {
    let open = r.mode == LoadMode::Open;
    writeln!(
        o,
        "QPS (§7.2.5) of {}/v2/models/{}: {} loop{}, bounds {}, error budget {}",
        r.url,
        r.model,
        if open { "open" } else { "closed" },
        r.distribution
            .map(|d| format!(" ({d:?} arrivals, seed {})", r.seed).to_lowercase())
            .unwrap_or_default(),
        r.slo
            .iter()
            .map(|b| format!("{}<={}ms", b.stat_name, b.limit_ms))
            .collect::<Vec<_>>()
            .join(","),
        r.error_budget
    )?;
    writeln!(o, "Inputs: {}", r.inputs)?;
    let mut t = table(&[
        if open { "offered req/s" } else { "concurrency" },
        "achieved req/s",
        "sent",
        "failed",
        "avg ms",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "send lag p99 ms",
        "verdict",
    ]);
    for s in &r.steps {
        let l = s.latency_ms.as_ref();
        t.add_row(vec![
            if open {
                format!("{:.1}", s.offered_rps.unwrap_or(s.target))
            } else {
                format!("{}", s.target)
            },
            format!("{:.1}", s.achieved_rps),
            s.sent.to_string(),
            if s.failures.is_empty() {
                "0".into()
            } else {
                format!(
                    "{} ({})",
                    s.failed,
                    s.failures
                        .iter()
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            ms(l.map(|l| l.mean)),
            ms(l.map(|l| l.p50)),
            ms(l.map(|l| l.p90)),
            ms(l.map(|l| l.p99)),
            ms(l.map(|l| l.max)),
            ms(s.send_lag_ms.as_ref().map(|l| l.p99)),
            if s.passed {
                "pass".into()
            } else {
                format!("fail: {}", s.why)
            },
        ]);
    }
    right(&mut t, &[0, 1, 2, 4, 5, 6, 7, 8, 9]);
    writeln!(o, "{t}")?;
    match (r.max_qps, r.best_step) {
        (Some(q), Some(k)) => {
            let s = &r.steps[k];
            let l = s.latency_ms.as_ref();
            writeln!(
                o,
                "Max QPS: {q:.1} req/s (achieved at {}; latency avg {} / p75 {} / p90 {} / p99 {} / max {} ms over N = {})",
                if open {
                    format!(
                        "target rate {:.1} req/s, offered {:.1}",
                        s.target,
                        s.offered_rps.unwrap_or(s.target)
                    )
                } else {
                    format!("concurrency {}", s.target)
                },
                ms(l.map(|l| l.mean)),
                ms(l.map(|l| l.p75)),
                ms(l.map(|l| l.p90)),
                ms(l.map(|l| l.p99)),
                ms(l.map(|l| l.max)),
                s.ok
            )?;
        }
        _ => writeln!(o, "Max QPS: {}", r.max_qps_na.as_deref().unwrap_or("n/a"))?,
    }
    writeln!(
        o,
        "Requests sent in all: {} (warm-ups and probes included; compare with the server's counter)",
        r.requests_issued
    )?;
    if !r.complete {
        writeln!(
            o,
            "INCOMPLETE: interrupted; the steps above are what was measured"
        )?;
    }
    for s in &r.steps {
        for (k, m) in &s.failure_examples {
            writeln!(o, "  {k} at {:.1}: {m}", s.target)?;
        }
    }
    Ok(())
}

/// One row per step.
pub fn curve_csv(r: &QpsReport) -> String {
    let mut o = String::from(
        "target,offered_rps,achieved_rps,duration_s,sent,ok,failed,error_rate,failures,latency_avg_ms,latency_min_ms,latency_p50_ms,latency_p75_ms,latency_p90_ms,latency_p99_ms,latency_max_ms,send_lag_p50_ms,send_lag_p99_ms,passed,why\n",
    );
    let f = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    for s in &r.steps {
        let l = s.latency_ms.as_ref();
        let lag = s.send_lag_ms.as_ref();
        let _ = writeln!(
            o,
            "{},{},{:.3},{:.3},{},{},{},{:.6},\"{}\",{},{},{},{},{},{},{},{},{},{},\"{}\"",
            s.target,
            f(s.offered_rps),
            s.achieved_rps,
            s.duration_s,
            s.sent,
            s.ok,
            s.failed,
            s.error_rate,
            s.failures
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(";"),
            f(l.map(|l| l.mean)),
            f(l.map(|l| l.min)),
            f(l.map(|l| l.p50)),
            f(l.map(|l| l.p75)),
            f(l.map(|l| l.p90)),
            f(l.map(|l| l.p99)),
            f(l.map(|l| l.max)),
            f(lag.map(|l| l.p50)),
            f(lag.map(|l| l.p99)),
            s.passed,
            s.why.replace('"', "'")
        );
    }
    o
}

/// Latency (p50, p99) against achieved throughput, with the tightest bound as a line.
pub fn chart(r: &QpsReport) -> String {
    let pts: Vec<(f64, f64, f64, bool)> = r
        .steps
        .iter()
        .filter_map(|s| {
            s.latency_ms
                .as_ref()
                .map(|l| (s.achieved_rps, l.p50, l.p99, s.passed))
        })
        .collect();
    let bound = r
        .slo
        .iter()
        .map(|b| b.limit_ms)
        .fold(f64::INFINITY, f64::min);
    chart_of(&r.model, bound, pts)
}

/// The chart from (achieved req/s, p50 ms, p99 ms, passed) points and the tightest bound, ms.
pub fn chart_of(model: &str, bound: f64, mut pts: Vec<(f64, f64, f64, bool)>) -> String {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut o = frame(
        &format!("Latency against throughput: {model}"),
        "achieved throughput (req/s)",
        "latency (ms)",
    );
    if pts.is_empty() {
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no successful response</text></svg>",
            W / 2.0,
            H / 2.0
        );
        return o;
    }
    let x_hi = pts.iter().map(|p| p.0).fold(0.0, f64::max) * 1.05 + 1e-9;
    let y_hi = pts
        .iter()
        .map(|p| p.2)
        .fold(if bound.is_finite() { bound } else { 0.0 }, f64::max)
        * 1.1
        + 1e-9;
    ticks(&mut o, 0.0, x_hi, true);
    ticks(&mut o, 0.0, y_hi, false);
    if bound.is_finite() {
        let y = sy(bound, 0.0, y_hi);
        let _ = write!(
            o,
            "<line x1=\"{L}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#b3261e\" stroke-dasharray=\"4 3\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#b3261e\">bound {bound} ms</text>",
            W - 10.0,
            W - 12.0,
            y - 4.0
        );
    }
    for (k, color, label) in [(1usize, "#3b6fb6", "p50"), (2, "#e08a1e", "p99")] {
        let line: Vec<String> = pts
            .iter()
            .map(|p| {
                let v = if k == 1 { p.1 } else { p.2 };
                format!("{:.1},{:.1}", sx(p.0, 0.0, x_hi), sy(v, 0.0, y_hi))
            })
            .collect();
        let _ = write!(
            o,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>",
            line.join(" ")
        );
        for p in &pts {
            let v = if k == 1 { p.1 } else { p.2 };
            let _ = write!(
                o,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\" stroke=\"{color}\"/>",
                sx(p.0, 0.0, x_hi),
                sy(v, 0.0, y_hi),
                if p.3 { color } else { "#fff" }
            );
        }
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{label}</text>",
            L + 8.0 + (k as f64 - 1.0) * 40.0,
            38.0
        );
    }
    let _ = write!(
        o,
        "<text x=\"{}\" y=\"{}\" fill=\"#666\">filled = step passed</text>",
        L + 90.0,
        38.0
    );
    let _ = B;
    o.push_str("</svg>");
    o
}
