//! Charts, as self-contained SVG: the latency histogram and CDF, the telemetry timeline,
//! the MSE bars against Table 3's bounds, and latency against throughput for QPS.
//!
//! Decision: hand-written SVG rather than `plotters`. These five charts are lines, bars and
//! text on fixed axes; plotters' SVG backend still needs font metrics for its text layout
//! (the `ttf` feature and a system font, or no labels), and its output changes with its
//! version. Hand-written SVG has no dependency, is byte-for-byte deterministic (snapshot
//! tests can pin it), and keeps report.html one file with no network access.

pub mod svg;

use std::fmt::Write as _;

use svg::{B, H, L, W, escape, frame, sx, sy, ticks};

pub fn histogram(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max)
        .max(lo + 1e-9);
    let bins = 30usize;
    let mut counts = vec![0usize; bins];
    for &x in xs {
        let i = (((x - lo) / (hi - lo)) * bins as f64) as usize;
        counts[i.min(bins - 1)] += 1;
    }
    let top = *counts.iter().max().unwrap_or(&1) as f64;
    let mut o = frame("End-to-end latency histogram", "latency (ms)", "samples");
    ticks(&mut o, lo, hi, true);
    ticks(&mut o, 0.0, top, false);
    let bw = (W - 10.0 - L) / bins as f64;
    for (i, &c) in counts.iter().enumerate() {
        let x = L + i as f64 * bw;
        let y = sy(c as f64, 0.0, top);
        let _ = write!(
            o,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#3b6fb6\"/>",
            (bw - 1.0).max(0.5),
            (H - B - y).max(0.0)
        );
    }
    o.push_str("</svg>");
    o
}

pub fn cdf(xs: &[f64]) -> String {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let lo = v[0];
    let hi = v[v.len() - 1].max(lo + 1e-9);
    let mut o = frame("Latency CDF", "latency (ms)", "fraction of samples ≤ x");
    ticks(&mut o, lo, hi, true);
    ticks(&mut o, 0.0, 1.0, false);
    let n = v.len() as f64;
    let step = (v.len() / 400).max(1);
    let pts: Vec<String> = v
        .iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0 || *i == v.len() - 1)
        .map(|(i, &x)| {
            format!(
                "{:.1},{:.1}",
                sx(x, lo, hi),
                sy((i + 1) as f64 / n, 0.0, 1.0)
            )
        })
        .collect();
    let _ = write!(
        o,
        "<polyline fill=\"none\" stroke=\"#3b6fb6\" stroke-width=\"1.5\" points=\"{}\"/></svg>",
        pts.join(" ")
    );
    o
}

/// Utilization and power channels over the window: `ticks` rows are `[t_ms, v1, v2, ...]`
/// in the order of `names` (NaN where a read failed).
pub fn timeline(names: &[String], ticks_v: &[Vec<f64>]) -> String {
    let t_hi = ticks_v
        .iter()
        .filter_map(|t| t.first())
        .copied()
        .fold(0.0, f64::max)
        / 1e3;
    let mut hi: f64 = 100.0;
    for t in ticks_v {
        for v in t.iter().skip(1) {
            if v.is_finite() {
                hi = hi.max(*v);
            }
        }
    }
    let mut o = frame(
        "Utilization (%) and power (W) over the measured window",
        "time (s)",
        "% or W",
    );
    ticks(&mut o, 0.0, t_hi.max(1e-3), true);
    ticks(&mut o, 0.0, hi, false);
    let colors = [
        "#3b6fb6", "#d0743c", "#1b7f3b", "#8e44ad", "#b3261e", "#555",
    ];
    for (k, name) in names.iter().enumerate() {
        let pts: Vec<String> = ticks_v
            .iter()
            .filter_map(|t| {
                let v = *t.get(k + 1)?;
                v.is_finite().then(|| {
                    format!(
                        "{:.1},{:.1}",
                        sx(t[0] / 1e3, 0.0, t_hi.max(1e-3)),
                        sy(v, 0.0, hi)
                    )
                })
            })
            .collect();
        let c = colors[k % colors.len()];
        let _ = write!(
            o,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"1.5\" points=\"{}\"/><text x=\"{}\" y=\"{}\" fill=\"{c}\">{}</text>",
            pts.join(" "),
            L + 8.0,
            36.0 + 13.0 * k as f64,
            escape(name)
        );
    }
    o.push_str("</svg>");
    o
}

pub fn mse_bars(bars: &[(String, f64)]) -> String {
    // log10 scale from 1e-16 to 1e2, with the Table 3 bounds drawn.
    let (lo, hi) = (-16.0, 2.0);
    let h = 70.0 + 22.0 * bars.len() as f64;
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" viewBox=\"0 0 {W} {h}\" font-family=\"sans-serif\" font-size=\"11\"><text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-weight=\"600\">MSE per output against the FP32 reference (log scale)</text>",
        W / 2.0
    );
    let x = |v: f64| 150.0 + (v - lo) / (hi - lo) * (W - 170.0);
    for (k, (bound, l)) in [(0.01f64, "C4"), (0.1, "C3"), (1.0, "C2"), (10.0, "C1")]
        .into_iter()
        .enumerate()
    {
        let xx = x(bound.log10());
        let _ = write!(
            o,
            "<line x1=\"{xx:.1}\" y1=\"30\" x2=\"{xx:.1}\" y2=\"{}\" stroke=\"#b3261e\" stroke-dasharray=\"3,3\"/><text x=\"{xx:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#b3261e\">{l}</text>",
            h - 24.0,
            if k % 2 == 0 { h - 12.0 } else { h - 2.0 }
        );
    }
    let _ = write!(
        o,
        "<text x=\"150\" y=\"{}\" fill=\"#555\">1e-16</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">Table 3 bounds: C4 &lt; 0.01, C3 &lt; 0.1, C2 &lt; 1, C1 &lt; 10</text>",
        h - 12.0,
        W - 20.0,
        28.0
    );
    for (i, (name, v)) in bars.iter().enumerate() {
        let y = 36.0 + 22.0 * i as f64;
        let lv = if *v > 0.0 {
            v.log10().clamp(lo, hi)
        } else {
            lo
        };
        let _ = write!(
            o,
            "<text x=\"145\" y=\"{:.1}\" text-anchor=\"end\">{}</text><rect x=\"150\" y=\"{y:.1}\" width=\"{:.1}\" height=\"14\" fill=\"#3b6fb6\"/><text x=\"{:.1}\" y=\"{:.1}\">{v:.3e}</text>",
            y + 11.0,
            escape(name),
            (x(lv) - 150.0).max(1.0),
            x(lv) + 4.0,
            y + 11.0
        );
    }
    o.push_str("</svg>");
    o
}

/// The chart from (achieved req/s, p50 ms, p99 ms, passed) points and the tightest bound, ms.
pub fn latency_vs_throughput(
    model: &str,
    bound: f64,
    mut pts: Vec<(f64, f64, f64, bool)>,
) -> String {
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
