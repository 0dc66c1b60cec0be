//! Labelled data from the project's scene generators, for training the zoo (`acceval
//! train`): line-inspection scenes with the YOLO boxes of what was drawn, and substation
//! close-ups whose featured device shows one of the classifier's classes, with their lamp
//! states and meter readings. Deterministic from seeds like every input set; the
//! committed sets' bytes are not touched (a labelled scene is drawn with its own seeds).

use image::{ImageFormat, RgbImage};

use super::inputs::{Canvas, Generated, LabelBox, NEEDLE, encode, line_scene_labelled};
use crate::util::rng::seed_of;

/// One labelled line scene at 1920×1080: its JPEG and YOLO label lines.
pub fn line_sample(split: &str, k: usize) -> (Vec<u8>, Vec<LabelBox>) {
    let (img, boxes) = line_scene_labelled(
        1920,
        1080,
        seed_of(&format!("line-inspection-train/{split}/{k}")),
        true,
    );
    (encode(&img, ImageFormat::Jpeg), boxes)
}

/// YOLO label text: `class cx cy w h` per box, normalised by the image size.
pub fn yolo_text(boxes: &[LabelBox], w: f64, h: f64) -> String {
    boxes
        .iter()
        .map(|b| {
            format!(
                "{} {:.6} {:.6} {:.6} {:.6}\n",
                b.class,
                (b.x0 + b.x1) / 2.0 / w,
                (b.y0 + b.y1) / 2.0 / h,
                (b.x1 - b.x0) / w,
                (b.y1 - b.y0) / h
            )
        })
        .collect()
}

/// Parses YOLO label text back into boxes (pixels of a `w`×`h` image).
pub fn parse_yolo(text: &str, w: f64, h: f64) -> Vec<LabelBox> {
    text.lines()
        .filter_map(|l| {
            let v: Vec<f64> = l
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            (v.len() == 5).then(|| LabelBox {
                class: v[0] as usize,
                x0: (v[1] - v[3] / 2.0) * w,
                y0: (v[2] - v[4] / 2.0) * h,
                x1: (v[1] + v[3] / 2.0) * w,
                y1: (v[2] + v[4] / 2.0) * h,
            })
        })
        .collect()
}

/// The `line-inspection-train` set: `train-NNN.jpg` + `.txt`, then `heldout-NNN`.
pub fn line_set(train: usize, heldout: usize) -> Vec<Generated> {
    let mut out = Vec::new();
    for (split, n) in [("train", train), ("heldout", heldout)] {
        for k in 0..n {
            let (jpg, boxes) = line_sample(split, k);
            out.push((format!("{split}-{k:03}.jpg"), jpg, Some((1920, 1080))));
            out.push((
                format!("{split}-{k:03}.txt"),
                yolo_text(&boxes, 1920.0, 1080.0).into_bytes(),
                None,
            ));
        }
    }
    out
}

/// What a substation close-up shows.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelLabel {
    /// An index into `zoo::SUBSTATION_CLASSES`.
    pub class: usize,
    /// The small indicator lamps, left to right.
    pub lamps_on: Vec<bool>,
    /// The dial meter's needle, in % of full scale.
    pub meter_pct: f64,
}

/// A 640×480 close-up of one cabinet whose featured device shows `class`.
pub fn panel_sample(split: &str, k: usize) -> (RgbImage, PanelLabel) {
    let seed = seed_of(&format!("substation-train/{split}/{k}"));
    let class = k % 10;
    let (w, h) = (640u32, 480u32);
    let mut c = Canvas::new(w, h, seed);
    let body = [
        [206, 208, 200],
        [180, 186, 176],
        [150, 160, 170],
        [196, 190, 170],
    ][(c.rng.next_u64() % 4) as usize];
    c.gradient(0, h, [120, 118, 112], [96, 94, 90]);
    let m = c.r(10.0, 40.0) as i64;
    c.rect(
        m - 4,
        m - 4,
        w as i64 - m + 4,
        h as i64 - m + 4,
        [70, 72, 70],
    );
    c.rect(m, m, w as i64 - m, h as i64 - m, body);
    // A dial meter at the top left, its needle at one of 9 positions of a 270° scale.
    let (mx, my, r) = (c.r(90.0, 130.0), c.r(90.0, 120.0), c.r(38.0, 50.0));
    c.disc(mx, my, r + 5.0, r + 5.0, [40, 40, 42]);
    c.disc(mx, my, r, r, [245, 245, 240]);
    for (dx, dy) in NEEDLE {
        c.line(
            mx + dx * r * 0.8,
            my + dy * r * 0.8,
            mx + dx * r * 0.95,
            my + dy * r * 0.95,
            2.0,
            [20, 20, 20],
        );
    }
    let pos = (c.rng.next_u64() % 12) as usize;
    let (dx, dy) = NEEDLE[pos];
    c.line(
        mx,
        my,
        mx + dx * r * 0.75,
        my + dy * r * 0.75,
        3.0,
        [200, 30, 30],
    );
    // Small status lamps along the bottom (not the featured lamp).
    let mut lamps_on = Vec::new();
    for l in 0..4 {
        let lx = 120.0 + 110.0 * l as f64 + c.r(-6.0, 6.0);
        let ly = h as f64 - m as f64 - 40.0;
        let on = c.rng.next_u64().is_multiple_of(2);
        lamps_on.push(on);
        let base = if l % 2 == 0 {
            [220, 40, 40]
        } else {
            [40, 200, 70]
        };
        let col = if on {
            base
        } else {
            [base[0] / 4, base[1] / 4, base[2] / 4]
        };
        c.disc(lx, ly, 9.0, 9.0, col);
    }
    featured(&mut c, class, w as f64, h as f64);
    c.noise(4);
    (
        c.img,
        PanelLabel {
            class,
            lamps_on,
            meter_pct: pos as f64 / 11.0 * 100.0,
        },
    )
}

/// Draws the featured device of `class` near the centre (what the centre crop keeps).
fn featured(c: &mut Canvas, class: usize, w: f64, h: f64) {
    let (cx, cy) = (w / 2.0 + c.r(-40.0, 40.0), h / 2.0 + c.r(-30.0, 30.0));
    let z = c.r(0.8, 1.2);
    let dark = [30, 30, 30];
    match class {
        // Breaker position window: green "open" plate with a horizontal bar, red "closed"
        // plate with a vertical bar.
        0 | 1 => {
            let (hw, hh) = (60.0 * z, 45.0 * z);
            c.rect(
                (cx - hw - 6.0) as i64,
                (cy - hh - 6.0) as i64,
                (cx + hw + 6.0) as i64,
                (cy + hh + 6.0) as i64,
                dark,
            );
            let plate = if class == 0 {
                [40, 170, 70]
            } else {
                [200, 40, 40]
            };
            c.rect(
                (cx - hw) as i64,
                (cy - hh) as i64,
                (cx + hw) as i64,
                (cy + hh) as i64,
                plate,
            );
            let bar = [240, 240, 235];
            if class == 0 {
                c.line(cx - hw * 0.7, cy, cx + hw * 0.7, cy, 12.0 * z, bar);
            } else {
                c.line(cx, cy - hh * 0.7, cx, cy + hh * 0.7, 12.0 * z, bar);
            }
        }
        // Disconnector handle: a round boss with a lever, horizontal (open) or vertical.
        2 | 3 => {
            let r = 40.0 * z;
            c.disc(cx, cy, r, r, dark);
            let (dx, dy) = if class == 2 { (1.0, 0.0) } else { (0.0, 1.0) };
            c.line(
                cx - dx * r * 1.8,
                cy - dy * r * 1.8,
                cx + dx * r * 1.8,
                cy + dy * r * 1.8,
                16.0 * z,
                [230, 230, 220],
            );
        }
        // A large indicator lamp, lit with a halo or dark.
        4 | 5 => {
            let r = 34.0 * z;
            let base = if c.rng.next_u64().is_multiple_of(2) {
                [220, 40, 40]
            } else {
                [40, 200, 70]
            };
            c.disc(cx, cy, r + 8.0, r + 8.0, [60, 60, 60]);
            if class == 4 {
                c.disc(
                    cx,
                    cy,
                    r + 6.0,
                    r + 6.0,
                    [base[0] / 2 + 120, base[1] / 2 + 120, base[2] / 2 + 120],
                );
                c.disc(cx, cy, r, r, base);
            } else {
                c.disc(cx, cy, r, r, [base[0] / 5, base[1] / 5, base[2] / 5]);
            }
        }
        // Pressure plate: a copper strip across two terminals (on) or swung off one.
        6 | 7 => {
            let (ty0, ty1) = (cy - 45.0 * z, cy + 45.0 * z);
            c.disc(cx, ty0, 10.0 * z, 10.0 * z, [200, 190, 60]);
            c.disc(cx, ty1, 10.0 * z, 10.0 * z, [200, 190, 60]);
            let strip = [190, 110, 50];
            if class == 6 {
                c.line(cx, ty0, cx, ty1, 14.0 * z, strip);
            } else {
                c.line(cx, ty0, cx + 60.0 * z, ty0 + 40.0 * z, 14.0 * z, strip);
            }
        }
        // Oil leak: a dark streak and puddle under a transformer box.
        8 => {
            c.rect(
                (cx - 50.0 * z) as i64,
                (cy - 60.0 * z) as i64,
                (cx + 50.0 * z) as i64,
                (cy - 10.0 * z) as i64,
                [120, 120, 118],
            );
            let (a, b) = (c.r(-20.0, 20.0), c.r(-25.0, 25.0));
            c.line(
                cx + a,
                cy - 10.0 * z,
                cx + b,
                cy + 40.0 * z,
                8.0 * z,
                [55, 38, 20],
            );
            c.disc(cx, cy + 50.0 * z, 55.0 * z, 14.0 * z, [50, 35, 18]);
        }
        // Normal: the transformer box, clean.
        _ => {
            c.rect(
                (cx - 50.0 * z) as i64,
                (cy - 60.0 * z) as i64,
                (cx + 50.0 * z) as i64,
                (cy - 10.0 * z) as i64,
                [120, 120, 118],
            );
        }
    }
}

/// The `substation-train` set: `train-NNN.jpg`, `heldout-NNN.jpg` and `labels.csv`.
pub fn substation_set(train: usize, heldout: usize) -> Vec<Generated> {
    let mut out = Vec::new();
    let mut csv = String::from("file,class,lamps_on,meter_pct\n");
    for (split, n) in [("train", train), ("heldout", heldout)] {
        for k in 0..n {
            let (img, l) = panel_sample(split, k);
            let file = format!("{split}-{k:03}.jpg");
            let lamps: String = l
                .lamps_on
                .iter()
                .map(|&on| if on { '1' } else { '0' })
                .collect();
            csv.push_str(&format!("{file},{},{lamps},{:.1}\n", l.class, l.meter_pct));
            out.push((file, encode(&img, ImageFormat::Jpeg), Some((640, 480))));
        }
    }
    out.push(("labels.csv".into(), csv.into_bytes(), None));
    out
}

/// The first `k` training files of a labelled set (INT8 calibration of a trained model).
pub fn calibration_files(set: &str, k: usize) -> Vec<(String, Vec<u8>)> {
    match set {
        "line-inspection-train" => (0..k)
            .map(|i| (format!("train-{i:03}.jpg"), line_sample("train", i).0))
            .collect(),
        "substation-train" => (0..k)
            .map(|i| {
                let img = panel_sample("train", i).0;
                (format!("train-{i:03}.jpg"), encode(&img, ImageFormat::Jpeg))
            })
            .collect(),
        _ => super::inputs::generate(set)
            .unwrap_or_default()
            .into_iter()
            .filter(|(name, _, _)| name.contains("train"))
            .map(|(name, bytes, _)| (name, bytes))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_scenes_keep_the_committed_pixels_and_label_what_they_draw() {
        let seed = seed_of("line-inspection/0");
        let (img, boxes) = line_scene_labelled(640, 360, seed, false);
        assert_eq!(img, super::super::inputs::line_scene(640, 360, seed));
        assert!(boxes.iter().any(|b| b.class == 0 || b.class == 1));
        assert!(boxes.iter().any(|b| b.class == 4));
        let text = yolo_text(&boxes, 640.0, 360.0);
        let back = parse_yolo(&text, 640.0, 360.0);
        assert_eq!(back.len(), boxes.len());
        assert!((back[0].x0 - boxes[0].x0).abs() < 0.01);
    }

    #[test]
    fn panels_cycle_through_the_classes() {
        let (a, la) = panel_sample("train", 3);
        let (b, lb) = panel_sample("train", 3);
        assert_eq!(a, b);
        assert_eq!(la, lb);
        assert_eq!(la.class, 3);
        assert_eq!(panel_sample("train", 13).1.class, 3);
        assert_eq!(la.lamps_on.len(), 4);
    }
}
