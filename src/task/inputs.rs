//! Input sets: deterministic synthetic scenes (JPEG and PNG) and a synthetic load series,
//! so every lab decodes, resizes and runs the same bytes.
//!
//! Scenes are drawn with integer/float arithmetic only (no `sin`/`exp`, whose last bits
//! differ between math libraries) from a seeded generator, then encoded with `image`'s
//! encoders (pinned by Cargo.lock); `inputs/<set>/manifest.toml` records every file's
//! SHA-256. The drawing primitives are written here: four shapes do not justify
//! `imageproc` and its dependencies.

use std::path::Path;

use image::{ImageFormat, Rgb, RgbImage};
use serde::{Deserialize, Serialize};

use crate::util::rng::{SplitMix64, seed_of};

/// An input set.
pub struct Set {
    pub name: &'static str,
    pub for_models: &'static [&'static str],
    pub description: &'static str,
}

pub const SETS: [Set; 7] = [
    Set {
        name: "line-inspection",
        for_models: &["yolov8n-line", "yolov8n-line-fp16", "yolov8n-line-int8"],
        description: "transmission lines seen from a drone: sky, towers, conductors, insulator strings, dampers, bird nests; 1920×1080, 6 JPEG + 2 PNG",
    },
    Set {
        name: "line-inspection-hires",
        for_models: &[
            "yolov8s-line-hires",
            "yolov8s-line-hires-fp16",
            "yolov8s-line-hires-int8",
        ],
        description: "the same scenes at 4000×3000 (offline high-resolution inspection), 3 JPEG",
    },
    Set {
        name: "substation",
        for_models: &[
            "resnet50-substation",
            "resnet50-substation-fp16",
            "resnet50-substation-int8",
            "mobilenetv2-meter",
            "mobilenetv2-meter-fp16",
            "mobilenetv2-meter-int8",
        ],
        description: "substation cabinets, dial meters and indicator lamps; 1920×1080, 6 JPEG + 2 PNG",
    },
    Set {
        name: "load-series",
        for_models: &[
            "lstm-load-forecast",
            "lstm-load-forecast-fp16",
            "lstm-load-forecast-int8",
        ],
        description: "28 days of 15-minute load (MW), temperature and humidity with daily and weekly cycles and noise (CSV)",
    },
    Set {
        name: "load-series-train",
        for_models: &["lstm-load-forecast"],
        description: "the load-series generator continued (same seed, same draws): a training range of days 0..105 (its first 28 days are load-series.csv) and a held-out week, days 105..112, with day 104 before it as the first window's history (CSV)",
    },
    Set {
        name: "line-inspection-train",
        for_models: &["yolov8n-line"],
        description: "labelled line-inspection scenes (the line-inspection generator with foreign objects on the conductors), 1920×1080 JPEG, each with its YOLO boxes (class cx cy w h, normalised; classes as yolov8n-line's labels): train-NNN for training, heldout-NNN for evaluation",
    },
    Set {
        name: "substation-train",
        for_models: &["mobilenetv2-meter"],
        description: "labelled substation close-ups: one cabinet whose featured device shows one of mobilenetv2-meter's 10 classes, 640×480 JPEG; labels.csv gives each file's class, lamp states and meter reading: train-NNN for training, heldout-NNN for evaluation",
    },
];

/// Days of the load series' training range; the held-out week follows it.
pub const TRAIN_DAYS: i64 = 105;
/// Labelled line-inspection scenes: training and held-out.
pub const LINE_TRAIN: usize = 240;
pub const LINE_HELDOUT: usize = 40;
/// Labelled substation close-ups: training and held-out.
pub const PANEL_TRAIN: usize = 1000;
pub const PANEL_HELDOUT: usize = 200;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InputFile {
    pub file: String,
    pub sha256: String,
    pub bytes: u64,
    pub width: Option<u32>,
    pub height: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InputManifest {
    pub set: String,
    pub description: String,
    pub files: Vec<InputFile>,
}

pub(super) struct Canvas {
    pub(super) img: RgbImage,
    pub(super) rng: SplitMix64,
}

impl Canvas {
    pub(super) fn new(w: u32, h: u32, seed: u64) -> Canvas {
        Canvas {
            img: RgbImage::new(w, h),
            rng: SplitMix64(seed),
        }
    }
    pub(super) fn r(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.rng.unit()
    }
    pub(super) fn put(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as u32) < self.img.width() && (y as u32) < self.img.height() {
            self.img.put_pixel(x as u32, y as u32, Rgb(c));
        }
    }
    /// Vertical gradient from `top` to `bottom` over rows y0..y1.
    pub(super) fn gradient(&mut self, y0: u32, y1: u32, top: [u8; 3], bottom: [u8; 3]) {
        let w = self.img.width();
        for y in y0..y1.min(self.img.height()) {
            let t = (y - y0) as f64 / (y1 - y0).max(1) as f64;
            let c =
                [0, 1, 2].map(|k| (top[k] as f64 + t * (bottom[k] as f64 - top[k] as f64)) as u8);
            for x in 0..w {
                self.img.put_pixel(x, y, Rgb(c));
            }
        }
    }
    pub(super) fn rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: [u8; 3]) {
        for y in y0.max(0)..y1 {
            for x in x0.max(0)..x1 {
                self.put(x, y, c);
            }
        }
    }
    pub(super) fn disc(&mut self, cx: f64, cy: f64, rx: f64, ry: f64, c: [u8; 3]) {
        let (x0, x1) = ((cx - rx).floor() as i64, (cx + rx).ceil() as i64);
        let (y0, y1) = ((cy - ry).floor() as i64, (cy + ry).ceil() as i64);
        for y in y0..=y1 {
            for x in x0..=x1 {
                let dx = (x as f64 - cx) / rx.max(0.5);
                let dy = (y as f64 - cy) / ry.max(0.5);
                if dx * dx + dy * dy <= 1.0 {
                    self.put(x, y, c);
                }
            }
        }
    }
    /// A line of `width` pixels from (x0, y0) to (x1, y1).
    pub(super) fn line(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, width: f64, c: [u8; 3]) {
        let len = ((x1 - x0).powi(2) + (y1 - y0).powi(2)).sqrt().max(1.0);
        let steps = (len * 2.0) as i64;
        let r = width / 2.0;
        for i in 0..=steps {
            let t = i as f64 / steps as f64;
            let (x, y) = (x0 + t * (x1 - x0), y0 + t * (y1 - y0));
            if r <= 0.75 {
                self.put(x.round() as i64, y.round() as i64, c);
            } else {
                self.disc(x, y, r, r, c);
            }
        }
    }
    /// Sensor noise: ±`amp` per channel.
    pub(super) fn noise(&mut self, amp: i32) {
        let (w, h) = self.img.dimensions();
        for y in 0..h {
            for x in 0..w {
                let n = (self.rng.next_u64() % (2 * amp as u64 + 1)) as i32 - amp;
                let p = self.img.get_pixel_mut(x, y);
                for k in 0..3 {
                    p[k] = (p[k] as i32 + n).clamp(0, 255) as u8;
                }
            }
        }
    }
}

/// A transmission-line scene at `w`×`h`.
pub(super) fn line_scene(w: u32, h: u32, seed: u64) -> RgbImage {
    line_scene_labelled(w, h, seed, false).0
}

/// An object drawn in a scene: its class (an index into the model's labels) and its box
/// in pixels (x0, y0, x1, y1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelBox {
    pub class: usize,
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

/// A line scene with the boxes of what it drew: insulator strings (0, or 1 with a broken
/// disc), bird nests (2), dampers (4), and with `foreign` objects hanging on the
/// conductors (3). Without `foreign` the pixels are the `line-inspection` set's.
pub(super) fn line_scene_labelled(
    w: u32,
    h: u32,
    seed: u64,
    foreign: bool,
) -> (RgbImage, Vec<LabelBox>) {
    let mut boxes = Vec::new();
    let mut c = Canvas::new(w, h, seed);
    let s = w as f64 / 1920.0;
    let horizon = (h as f64 * c.r(0.55, 0.7)) as u32;
    c.gradient(0, horizon, [118, 160, 214], [205, 220, 235]);
    c.gradient(horizon, h, [92, 118, 72], [60, 82, 48]);
    // Hills: a jagged ridge line.
    let mut y = horizon as f64;
    for x in 0..w as i64 {
        y = (y + c.r(-1.2, 1.2) * s).clamp(horizon as f64 - 120.0 * s, horizon as f64 + 10.0);
        c.rect(x, y as i64, x + 1, horizon as i64 + 1, [78, 98, 70]);
    }
    // Towers with cross-arms, insulator strings and conductors between them.
    let towers = 2 + (c.rng.next_u64() % 2) as usize;
    let mut arms: Vec<Vec<(f64, f64)>> = Vec::new();
    for t in 0..towers {
        let cx =
            w as f64 * (0.15 + 0.7 * t as f64 / (towers - 1).max(1) as f64) + c.r(-40.0, 40.0) * s;
        let base = h as f64 * c.r(0.8, 0.95);
        let top = h as f64 * c.r(0.08, 0.2);
        let half = c.r(60.0, 90.0) * s;
        let steel = [96, 100, 104];
        c.line(cx - half, base, cx - half * 0.25, top, 5.0 * s, steel);
        c.line(cx + half, base, cx + half * 0.25, top, 5.0 * s, steel);
        // Lattice bracing.
        let n = 8;
        for k in 0..n {
            let (ya, yb) = (
                base - (base - top) * k as f64 / n as f64,
                base - (base - top) * (k + 1) as f64 / n as f64,
            );
            let wa = half - (half * 0.75) * k as f64 / n as f64;
            let wb = half - (half * 0.75) * (k + 1) as f64 / n as f64;
            c.line(cx - wa, ya, cx + wb, yb, 2.0 * s, steel);
            c.line(cx + wa, ya, cx - wb, yb, 2.0 * s, steel);
        }
        let mut pts = Vec::new();
        for level in 0..3 {
            let ay = top + (base - top) * (0.05 + 0.12 * level as f64);
            let span = half * c.r(1.6, 2.2);
            c.line(cx - span, ay, cx + span, ay, 4.0 * s, steel);
            for side in [-1.0, 1.0] {
                let ax = cx + side * span * 0.9;
                // Insulator string: a chain of discs (glass green or porcelain brown).
                let color = if c.rng.next_u64().is_multiple_of(2) {
                    [90, 150, 120]
                } else {
                    [150, 96, 70]
                };
                let discs = 7 + (c.rng.next_u64() % 5) as i64;
                let mut defective = false;
                for d in 0..discs {
                    let dy = ay + (d as f64 + 1.0) * 7.0 * s;
                    let broken = c.rng.next_u64().is_multiple_of(23);
                    defective |= broken;
                    let col = if broken { [40, 40, 40] } else { color };
                    c.disc(ax, dy, 9.0 * s, 3.0 * s, col);
                }
                boxes.push(LabelBox {
                    class: if defective { 1 } else { 0 },
                    x0: ax - 9.0 * s,
                    y0: ay + 4.0 * s,
                    x1: ax + 9.0 * s,
                    y1: ay + discs as f64 * 7.0 * s + 3.0 * s,
                });
                pts.push((ax, ay + (discs as f64 + 1.0) * 7.0 * s));
            }
        }
        // Sometimes a bird nest on a cross-arm.
        if c.rng.next_u64().is_multiple_of(2) {
            let nx = cx + c.r(-half, half);
            let ny = top + (base - top) * 0.05;
            for _ in 0..60 {
                let (a, b) = (c.r(-22.0, 22.0) * s, c.r(-8.0, 4.0) * s);
                let (e, f) = (c.r(-22.0, 22.0) * s, c.r(-8.0, 4.0) * s);
                c.line(nx + a, ny + b, nx + e, ny + f, 1.5 * s, [110, 80, 45]);
            }
            boxes.push(LabelBox {
                class: 2,
                x0: nx - 23.0 * s,
                y0: ny - 9.0 * s,
                x1: nx + 23.0 * s,
                y1: ny + 5.0 * s,
            });
        }
        arms.push(pts);
    }
    // Conductors: parabolic sag between matching attachment points, with dampers.
    conductors(&mut c, &arms, s, foreign, &mut boxes);
    c.noise(3);
    let (fw, fh) = (w as f64, h as f64);
    let boxes = boxes
        .into_iter()
        .map(|b| LabelBox {
            x0: b.x0.clamp(0.0, fw),
            y0: b.y0.clamp(0.0, fh),
            x1: b.x1.clamp(0.0, fw),
            y1: b.y1.clamp(0.0, fh),
            ..b
        })
        .filter(|b| b.x1 - b.x0 >= 2.0 && b.y1 - b.y0 >= 2.0)
        .collect();
    (c.img, boxes)
}

/// The conductors between the towers' attachment points (parabolic sag), their dampers,
/// and with `foreign` sometimes an object caught on one; their boxes go into `boxes`.
fn conductors(
    c: &mut Canvas,
    arms: &[Vec<(f64, f64)>],
    s: f64,
    foreign: bool,
    boxes: &mut Vec<LabelBox>,
) {
    for t in 1..arms.len() {
        for (p, q) in arms[t - 1].clone().into_iter().zip(arms[t].clone()) {
            let sag = c.r(30.0, 90.0) * s;
            let steps = ((q.0 - p.0).abs() / 2.0) as i64;
            let mut prev = p;
            for i in 1..=steps {
                let u = i as f64 / steps as f64;
                let pt = (
                    p.0 + u * (q.0 - p.0),
                    p.1 + u * (q.1 - p.1) + 4.0 * sag * u * (1.0 - u),
                );
                c.line(prev.0, prev.1, pt.0, pt.1, 2.0 * s, [50, 52, 56]);
                prev = pt;
            }
            for u in [0.08, 0.92] {
                let x = p.0 + u * (q.0 - p.0);
                let y = p.1 + u * (q.1 - p.1) + 4.0 * sag * u * (1.0 - u);
                c.rect(
                    (x - 8.0 * s) as i64,
                    (y - 3.0 * s) as i64,
                    (x + 8.0 * s) as i64,
                    (y + 3.0 * s) as i64,
                    [35, 35, 38],
                );
                boxes.push(LabelBox {
                    class: 4,
                    x0: x - 8.0 * s,
                    y0: y - 3.0 * s,
                    x1: x + 8.0 * s,
                    y1: y + 3.0 * s,
                });
            }
            if foreign && c.rng.next_u64().is_multiple_of(3) {
                // A plastic sheet or kite caught on the conductor.
                let u = c.r(0.25, 0.75);
                let x = p.0 + u * (q.0 - p.0);
                let y = p.1 + u * (q.1 - p.1) + 4.0 * sag * u * (1.0 - u);
                let (rw, rh) = (c.r(10.0, 22.0) * s, c.r(12.0, 26.0) * s);
                let col = [[230, 60, 160], [240, 240, 250], [250, 170, 30]]
                    [(c.rng.next_u64() % 3) as usize];
                c.disc(x, y + rh * 0.6, rw, rh, col);
                let tail = x + c.r(-8.0, 8.0) * s;
                c.line(x, y, tail, y + rh * 2.2, 2.0 * s, col);
                boxes.push(LabelBox {
                    class: 3,
                    x0: x - rw - 8.0 * s,
                    y0: y - 1.0,
                    x1: x + rw + 8.0 * s,
                    y1: y + rh * 2.2 + 1.0,
                });
            }
        }
    }
}

/// Unit vectors for dial needles (30° steps), written out so no `sin`/`cos` is needed.
pub(super) const NEEDLE: [(f64, f64); 12] = [
    (1.0, 0.0),
    (0.866_025, 0.5),
    (0.5, 0.866_025),
    (0.0, 1.0),
    (-0.5, 0.866_025),
    (-0.866_025, 0.5),
    (-1.0, 0.0),
    (-0.866_025, -0.5),
    (-0.5, -0.866_025),
    (0.0, -1.0),
    (0.5, -0.866_025),
    (0.866_025, -0.5),
];

/// A substation panel scene at `w`×`h`.
fn substation_scene(w: u32, h: u32, seed: u64) -> RgbImage {
    let mut c = Canvas::new(w, h, seed);
    let s = w as f64 / 1920.0;
    c.gradient(0, h * 3 / 4, [196, 198, 190], [170, 172, 166]);
    c.gradient(h * 3 / 4, h, [120, 118, 112], [96, 94, 90]);
    let cabinets = 3 + (c.rng.next_u64() % 2) as i64;
    let cw = w as i64 / cabinets;
    for k in 0..cabinets {
        let (x0, x1) = (k * cw + (20.0 * s) as i64, (k + 1) * cw - (20.0 * s) as i64);
        let (y0, y1) = ((60.0 * s) as i64, h as i64 * 9 / 10);
        let body =
            [[206, 208, 200], [180, 186, 176], [150, 160, 170]][(c.rng.next_u64() % 3) as usize];
        c.rect(x0 - 4, y0 - 4, x1 + 4, y1 + 4, [70, 72, 70]);
        c.rect(x0, y0, x1, y1, body);
        // Dial meters: white face, tick marks, a needle, a bezel.
        let meters = 1 + (c.rng.next_u64() % 3) as i64;
        for m in 0..meters {
            let cx = (x0 + (x1 - x0) * (m + 1) / (meters + 1)) as f64;
            let cy = y0 as f64 + 180.0 * s;
            let r = c.r(55.0, 75.0) * s;
            c.disc(cx, cy, r + 6.0 * s, r + 6.0 * s, [40, 40, 42]);
            c.disc(cx, cy, r, r, [245, 245, 240]);
            for (dx, dy) in NEEDLE {
                c.line(
                    cx + dx * r * 0.8,
                    cy + dy * r * 0.8,
                    cx + dx * r * 0.95,
                    cy + dy * r * 0.95,
                    2.0 * s,
                    [20, 20, 20],
                );
            }
            let (dx, dy) = NEEDLE[(c.rng.next_u64() % 12) as usize];
            c.line(
                cx,
                cy,
                cx + dx * r * 0.75,
                cy + dy * r * 0.75,
                3.0 * s,
                [200, 30, 30],
            );
        }
        // Indicator lamps: on (bright, with a halo) or off (dark).
        for l in 0..4 {
            let lx = x0 as f64 + (x1 - x0) as f64 * (l as f64 + 1.0) / 5.0;
            let ly = y0 as f64 + 360.0 * s;
            let on = c.rng.next_u64().is_multiple_of(2);
            let base = if l % 2 == 0 {
                [220, 40, 40]
            } else {
                [40, 200, 70]
            };
            if on {
                c.disc(
                    lx,
                    ly,
                    26.0 * s,
                    26.0 * s,
                    [base[0] / 2 + 120, base[1] / 2 + 120, base[2] / 2 + 120],
                );
                c.disc(lx, ly, 18.0 * s, 18.0 * s, base);
            } else {
                c.disc(
                    lx,
                    ly,
                    18.0 * s,
                    18.0 * s,
                    [base[0] / 4, base[1] / 4, base[2] / 4],
                );
            }
        }
        // Switch handles and a name plate.
        for l in 0..3 {
            let hx = x0 as f64 + (x1 - x0) as f64 * (l as f64 + 1.0) / 4.0;
            let hy = y0 as f64 + 500.0 * s;
            c.disc(hx, hy, 22.0 * s, 22.0 * s, [30, 30, 30]);
            let (dx, dy) = NEEDLE[[0, 3, 9][(c.rng.next_u64() % 3) as usize]];
            c.line(
                hx - dx * 30.0 * s,
                hy - dy * 30.0 * s,
                hx + dx * 30.0 * s,
                hy + dy * 30.0 * s,
                8.0 * s,
                [230, 230, 220],
            );
        }
        c.rect(
            x0 + (30.0 * s) as i64,
            y0 + (20.0 * s) as i64,
            x1 - (30.0 * s) as i64,
            y0 + (60.0 * s) as i64,
            [240, 240, 235],
        );
    }
    c.noise(4);
    c.img
}

/// Piecewise-linear daily load shape, MW, at each hour (a two-peak urban profile).
const DAILY: [f64; 25] = [
    620.0, 590.0, 570.0, 560.0, 565.0, 600.0, 680.0, 780.0, 860.0, 900.0, 915.0, 920.0, 905.0,
    890.0, 885.0, 880.0, 895.0, 940.0, 990.0, 1000.0, 960.0, 870.0, 760.0, 680.0, 620.0,
];

/// The synthetic load series as CSV text: 28 days of 15-minute rows from 2026-01-05 00:00.
pub fn load_series_csv(seed: u64) -> String {
    load_series_days(seed, 0, 28)
}

/// The CSV header of a load series.
const SERIES_HEADER: &str = "timestamp,load_mw,temperature_c,humidity_pct\n";

/// Days `from..to` of the series the generator continues past 28 days (same seed, same
/// draws: days 0..28 are [`load_series_csv`]'s rows).
pub fn load_series_days(seed: u64, from: i64, to: i64) -> String {
    let mut rng = SplitMix64(seed);
    let mut out = String::from(SERIES_HEADER);
    let start_day = super::forecast::days_from_civil(2026, 1, 5); // a Monday
    let mut temp_drift = 0.0;
    for step in 0..to * 96 {
        let day = step / 96;
        let minute = (step % 96) * 15;
        let hour = minute as f64 / 60.0;
        let (h0, frac) = (hour.floor() as usize, hour - hour.floor());
        let base = DAILY[h0] + frac * (DAILY[h0 + 1] - DAILY[h0]);
        let weekend = day % 7 >= 5;
        temp_drift = (temp_drift + rng.normal() * 0.05).clamp(-4.0, 4.0);
        // Temperature: coldest at 05:00, warmest at 15:00 (triangle), plus drift and noise.
        let tri = if hour < 5.0 {
            (5.0 - hour) / 10.0
        } else if hour < 15.0 {
            (hour - 5.0) / 10.0
        } else {
            (29.0 - hour) / 14.0
        };
        let temperature = -2.0 + 8.0 * tri + temp_drift + rng.normal() * 0.3;
        let humidity = (75.0 - 2.5 * (temperature + 2.0) + rng.normal() * 2.0).clamp(20.0, 100.0);
        // Heating load rises as it gets colder; weekends are 15 % lower.
        let load = base * if weekend { 0.85 } else { 1.0 }
            + 12.0 * (5.0 - temperature)
            + rng.normal() * 15.0;
        if day < from {
            continue;
        }
        let d = start_day + day;
        let (y, m, dd) = civil_from_days(d);
        out.push_str(&format!(
            "{y:04}-{m:02}-{dd:02}T{:02}:{:02},{load:.2},{temperature:.2},{humidity:.1}\n",
            minute / 60,
            minute % 60
        ));
    }
    out
}

/// The civil date of a day number (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// JPEG at quality 90, as the input sets are written.
pub fn encode_jpeg(img: &RgbImage) -> Vec<u8> {
    encode(img, ImageFormat::Jpeg)
}

pub(super) fn encode(img: &RgbImage, format: ImageFormat) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    match format {
        ImageFormat::Jpeg => {
            let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut buf, 90);
            enc.encode_image(img)
                .expect("JPEG encoding of an RGB8 image in memory");
        }
        _ => img
            .write_to(&mut buf, format)
            .expect("PNG encoding of an RGB8 image in memory"),
    }
    buf.into_inner()
}

/// The files of a set: (file name, bytes, width, height).
/// A generated file: name, bytes, and (width, height) for images.
pub type Generated = (String, Vec<u8>, Option<(u32, u32)>);

pub fn generate(set: &str) -> Option<Vec<Generated>> {
    let seed = |k: usize| seed_of(&format!("{set}/{k}"));
    let scenes = |n_jpg: usize, n_png: usize, w: u32, h: u32, f: fn(u32, u32, u64) -> RgbImage| {
        (0..n_jpg + n_png)
            .map(|k| {
                let img = f(w, h, seed(k));
                let (fmt, ext) = if k < n_jpg {
                    (ImageFormat::Jpeg, "jpg")
                } else {
                    (ImageFormat::Png, "png")
                };
                (
                    format!("{set}-{k:02}.{ext}"),
                    encode(&img, fmt),
                    Some((w, h)),
                )
            })
            .collect::<Vec<_>>()
    };
    Some(match set {
        "line-inspection" => scenes(6, 2, 1920, 1080, line_scene),
        "line-inspection-hires" => scenes(3, 0, 4000, 3000, line_scene),
        "substation" => scenes(6, 2, 1920, 1080, substation_scene),
        "load-series" => vec![(
            "load-series.csv".into(),
            load_series_csv(seed(0)).into_bytes(),
            None,
        )],
        "load-series-train" => {
            // The committed series' seed: the same generator, more days.
            let s0 = seed_of("load-series/0");
            vec![
                (
                    "load-series-train.csv".into(),
                    load_series_days(s0, 0, TRAIN_DAYS).into_bytes(),
                    None,
                ),
                (
                    "load-series-heldout.csv".into(),
                    load_series_days(s0, TRAIN_DAYS - 1, TRAIN_DAYS + 7).into_bytes(),
                    None,
                ),
            ]
        }
        "line-inspection-train" => super::labelled::line_set(LINE_TRAIN, LINE_HELDOUT),
        "substation-train" => super::labelled::substation_set(PANEL_TRAIN, PANEL_HELDOUT),
        _ => return None,
    })
}

/// Writes set `name` into `dir/name/` with its manifest.
pub fn write_set(name: &str, dir: &Path) -> Result<InputManifest, super::Error> {
    let set = SETS
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| super::Error::UnknownSet {
            name: name.to_string(),
            sets: SETS.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
        })?;
    let files = generate(name).unwrap_or_default();
    let out = dir.join(name);
    crate::util::create_dir_all(&out)?;
    let mut manifest = InputManifest {
        set: name.to_string(),
        description: set.description.to_string(),
        files: Vec::new(),
    };
    for (file, bytes, dims) in files {
        crate::util::fs::write_file(&out.join(&file), &bytes)?;
        manifest.files.push(InputFile {
            sha256: crate::util::fs::sha256_hex(&bytes),
            bytes: bytes.len() as u64,
            width: dims.map(|d| d.0),
            height: dims.map(|d| d.1),
            file,
        });
    }
    let text = toml::to_string_pretty(&manifest).map_err(|err| super::Error::Manifest {
        set: name.to_string(),
        err,
    })?;
    crate::util::fs::write_file(&out.join("manifest.toml"), text.as_bytes())?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for d in [-1000, 0, 11_017, 20_787, 20_458] {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(super::super::forecast::days_from_civil(y, m, dd), d);
        }
        assert_eq!(civil_from_days(20_458), (2026, 1, 5));
    }

    #[test]
    fn series_is_deterministic_and_well_formed() {
        let a = load_series_csv(1);
        assert_eq!(a, load_series_csv(1));
        let lines: Vec<&str> = a.lines().collect();
        assert_eq!(lines.len(), 1 + 28 * 96);
        assert!(lines[1].starts_with("2026-01-05T00:00,"));
        assert!(lines[96 * 28].starts_with("2026-02-01T23:45,"));
    }
}
