//! Detection post-processing for YOLOv8-style outputs `[1, 4 + classes, anchors]` (boxes as
//! centre x, centre y, width, height in model-input pixels, then class scores): threshold,
//! class-wise non-maximum suppression, boxes back in the original image's pixels.

pub use crate::report::schema::run::{DetectParams, Detection};

use super::image::Letterbox;

impl Default for DetectParams {
    fn default() -> Self {
        DetectParams {
            conf: 0.25,
            iou: 0.45,
            max_det: 300,
        }
    }
}

/// Intersection over union of two (x1, y1, x2, y2) boxes; 0 for empty boxes.
pub fn iou(a: [f64; 4], b: [f64; 4]) -> f64 {
    let iw = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let ih = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = iw * ih;
    let area = |r: [f64; 4]| (r[2] - r[0]).max(0.0) * (r[3] - r[1]).max(0.0);
    let union = area(a) + area(b) - inter;
    if union <= 0.0 { 0.0 } else { inter / union }
}

/// Greedy non-maximum suppression within each class: indices of the kept boxes, by
/// decreasing score. Ties in score keep the earlier box.
pub fn nms(
    boxes: &[[f64; 4]],
    scores: &[f32],
    classes: &[usize],
    iou_thr: f64,
    max_det: usize,
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut keep: Vec<usize> = Vec::new();
    for i in order {
        if keep.len() >= max_det {
            break;
        }
        if keep
            .iter()
            .all(|&k| classes[k] != classes[i] || iou(boxes[k], boxes[i]) <= iou_thr)
        {
            keep.push(i);
        }
    }
    keep
}

/// Decodes `output` (`[1, 4 + classes, anchors]`, row-major) into detections in the
/// original image.
pub fn decode(
    output: &[f32],
    classes: usize,
    lb: &Letterbox,
    labels: &[String],
    p: &DetectParams,
) -> Vec<Detection> {
    let rows = 4 + classes;
    let anchors = output.len() / rows;
    let mut boxes = Vec::new();
    let mut scores = Vec::new();
    let mut cls = Vec::new();
    for a in 0..anchors {
        let (mut best, mut best_c) = (f32::MIN, 0);
        for c in 0..classes {
            let s = output[(4 + c) * anchors + a];
            if s > best {
                best = s;
                best_c = c;
            }
        }
        if best < p.conf || best.is_nan() {
            continue;
        }
        let (cx, cy) = (output[a] as f64, output[anchors + a] as f64);
        let (w, h) = (
            output[2 * anchors + a] as f64,
            output[3 * anchors + a] as f64,
        );
        boxes.push([cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0]);
        scores.push(best);
        cls.push(best_c);
    }
    nms(&boxes, &scores, &cls, p.iou, p.max_det)
        .into_iter()
        .filter_map(|i| {
            let b = boxes[i];
            let (x1, y1) = lb.to_original(b[0], b[1]);
            let (x2, y2) = lb.to_original(b[2], b[3]);
            let (w, h) = (lb.orig_w as f64, lb.orig_h as f64);
            let d = Detection {
                class: cls[i],
                label: labels
                    .get(cls[i])
                    .cloned()
                    .unwrap_or_else(|| format!("class {}", cls[i])),
                score: scores[i],
                x1: x1.clamp(0.0, w),
                y1: y1.clamp(0.0, h),
                x2: x2.clamp(0.0, w),
                y2: y2.clamp(0.0, h),
            };
            // A box that lies wholly in the letterbox padding has no area in the image.
            (d.x2 > d.x1 && d.y2 > d.y1).then_some(d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iou_hand_values() {
        // Two 10×10 squares overlapping in a 5×10 strip: 50 / (100 + 100 − 50) = 1/3.
        assert!((iou([0.0, 0.0, 10.0, 10.0], [5.0, 0.0, 15.0, 10.0]) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(iou([0.0, 0.0, 1.0, 1.0], [2.0, 2.0, 3.0, 3.0]), 0.0);
        assert_eq!(iou([0.0, 0.0, 4.0, 4.0], [0.0, 0.0, 4.0, 4.0]), 1.0);
        assert_eq!(iou([1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]), 0.0);
    }

    #[test]
    fn nms_suppresses_overlaps_within_a_class_only() {
        let boxes = [
            [0.0, 0.0, 10.0, 10.0],   // 0: class 0, 0.9
            [1.0, 1.0, 11.0, 11.0],   // 1: class 0, 0.8, IoU with 0 = 81/119 = 0.68 → dropped
            [5.0, 0.0, 15.0, 10.0],   // 2: class 0, 0.7, IoU with 0 = 1/3 → kept
            [0.0, 0.0, 10.0, 10.0],   // 3: class 1, 0.6, same box as 0 but another class → kept
            [50.0, 50.0, 60.0, 60.0], // 4: class 0, 0.95, far away → kept, first
        ];
        let scores = [0.9, 0.8, 0.7, 0.6, 0.95];
        let classes = [0, 0, 0, 1, 0];
        assert_eq!(nms(&boxes, &scores, &classes, 0.45, 300), vec![4, 0, 2, 3]);
        // At IoU threshold 0.3, box 2 (IoU 1/3 with box 0) goes too.
        assert_eq!(nms(&boxes, &scores, &classes, 0.3, 300), vec![4, 0, 3]);
        assert_eq!(nms(&boxes, &scores, &classes, 0.45, 2), vec![4, 0]);
    }

    #[test]
    fn decode_maps_boxes_to_the_original_image() {
        // 2 classes, 3 anchors; letterbox of a 1280×720 image into 640: scale 0.5, pad y 140.
        let lb = Letterbox {
            scale: 0.5,
            pad_x: 0.0,
            pad_y: 140.0,
            orig_w: 1280,
            orig_h: 720,
        };
        #[rustfmt::skip]
        let out = [
            100.0, 300.0, 500.0,  // cx
            240.0, 320.0, 400.0,  // cy
            40.0, 20.0, 10.0,     // w
            20.0, 20.0, 10.0,     // h
            0.9, 0.1, 0.3,        // class 0
            0.2, 0.05, 0.8,       // class 1
        ];
        let labels = vec!["insulator".to_string(), "bird nest".to_string()];
        let d = decode(&out, 2, &lb, &labels, &DetectParams::default());
        // A confident box wholly in the top padding (input y < 140) is dropped.
        let mut pad = out;
        pad[4] = 60.0; // anchor 1: cy 60, h 20 → input y 50..70
        pad[13] = 0.95; // anchor 1, class 0
        assert_eq!(
            decode(&pad, 2, &lb, &labels, &DetectParams::default()).len(),
            2
        );
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].class, d[0].label.as_str()), (0, "insulator"));
        // (80, 230)-(120, 250) in the input → ((80−0)/0.5, (230−140)/0.5) = (160, 180)…(240, 220).
        assert_eq!(
            (d[0].x1, d[0].y1, d[0].x2, d[0].y2),
            (160.0, 180.0, 240.0, 220.0)
        );
        assert_eq!(d[1].class, 1);
        assert_eq!((d[1].x1, d[1].y1), (990.0, 510.0));
    }
}
