//! SVG primitives: one fixed-size frame with axes and labels, the data-to-pixel scales and
//! the tick labels every chart uses.

use std::fmt::Write as _;

/// Escapes text for SVG/HTML.
pub fn escape(x: &str) -> String {
    x.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub const W: f64 = 520.0;
pub const H: f64 = 260.0;
pub const L: f64 = 56.0;
pub const B: f64 = 36.0;

pub fn frame(title: &str, x_label: &str, y_label: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"11\"><text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-weight=\"600\">{}</text><line x1=\"{L}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/><line x1=\"{L}\" y1=\"24\" x2=\"{L}\" y2=\"{}\" stroke=\"#333\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text><text x=\"14\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}</text>",
        W / 2.0,
        escape(title),
        H - B,
        W - 10.0,
        H - B,
        H - B,
        (L + W - 10.0) / 2.0,
        H - 6.0,
        escape(x_label),
        (H - B) / 2.0 + 12.0,
        (H - B) / 2.0 + 12.0,
        escape(y_label)
    )
}

pub fn sx(x: f64, lo: f64, hi: f64) -> f64 {
    L + (x - lo) / (hi - lo).max(1e-12) * (W - 10.0 - L)
}
pub fn sy(y: f64, lo: f64, hi: f64) -> f64 {
    (H - B) - (y - lo) / (hi - lo).max(1e-12) * (H - B - 24.0)
}

pub fn ticks(o: &mut String, lo: f64, hi: f64, x_axis: bool) {
    for k in 0..=4 {
        let v = lo + (hi - lo) * k as f64 / 4.0;
        if x_axis {
            let x = sx(v, lo, hi);
            let _ = write!(
                o,
                "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                H - B + 14.0,
                fmt_tick(v, lo, hi)
            );
        } else {
            let y = sy(v, lo, hi);
            let _ = write!(
                o,
                "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text><line x1=\"{L}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#eee\"/>",
                L - 4.0,
                y + 4.0,
                fmt_tick(v, lo, hi),
                W - 10.0
            );
        }
    }
}

/// A tick label with enough decimals to tell the 5 ticks of [lo, hi] apart.
pub fn fmt_tick(v: f64, lo: f64, hi: f64) -> String {
    let step = ((hi - lo) / 4.0).abs().max(1e-12);
    let decimals = (-(step.log10().floor()) as i32).clamp(0, 6) as usize;
    format!("{v:.decimals$}")
}
