//! Decision agreement: whether an output's error changes what the application decides.
//! The standard grades the MSE of raw outputs (Table 3); a reviewer also asks whether the
//! accelerated model still picks the same class or finds the same objects.
//!
//! - Classification: the top-1 class of each input, actual vs reference.
//! - Detection: both outputs post-processed alike (score threshold, class-wise NMS), then
//!   each reference box matched greedily (by decreasing score) to the unmatched actual box
//!   of highest IoU, when that IoU is at least [`MATCH_IOU`]; a match agrees when the
//!   classes are equal. Agreement = agreeing matches / max(reference boxes, actual boxes),
//!   so both missed and extra boxes count against it.
//! - Forecasting: a regression has no decision; the max absolute error stands for it.

pub use crate::report::schema::accuracy::Agreement;

use crate::task::detect::{self, DetectParams, Detection};
use crate::task::image::Letterbox;

/// Minimum IoU for a detected box to match a reference box.
pub const MATCH_IOU: f64 = 0.5;

impl Agreement {
    /// The agreement as a fraction, when one is defined.
    pub fn fraction(&self) -> Option<f64> {
        match self {
            Agreement::Top1 { inputs, agree } => {
                (*inputs > 0).then(|| *agree as f64 / *inputs as f64)
            }
            Agreement::Detection {
                reference_boxes,
                boxes,
                same_class,
                ..
            } => {
                let d = (*reference_boxes).max(*boxes);
                (d > 0).then(|| *same_class as f64 / d as f64)
            }
            Agreement::NotApplicable { .. } => None,
        }
    }

    /// One line for tables: `top-1 8/8 (100.0%)`.
    pub fn text(&self) -> String {
        match self {
            Agreement::Top1 { inputs, agree } => format!(
                "top-1 {agree}/{inputs} ({:.1}%)",
                self.fraction().unwrap_or(0.0) * 100.0
            ),
            Agreement::Detection {
                conf,
                reference_boxes,
                boxes,
                same_class,
                ..
            } => match self.fraction() {
                Some(f) => format!(
                    "boxes {same_class}/{} ({:.1}%; reference {reference_boxes}, output {boxes})",
                    (*reference_boxes).max(*boxes),
                    f * 100.0
                ),
                None => format!("n/a: no box above conf {conf} in the reference or the output"),
            },
            Agreement::NotApplicable { reason } => format!("n/a: {reason}"),
        }
    }

    /// Adds another input's counts (same kind).
    pub fn merge(&mut self, o: &Agreement) {
        match (self, o) {
            (
                Agreement::Top1 { inputs, agree },
                Agreement::Top1 {
                    inputs: i2,
                    agree: a2,
                },
            ) => {
                *inputs += i2;
                *agree += a2;
            }
            (
                Agreement::Detection {
                    reference_boxes,
                    boxes,
                    matched,
                    same_class,
                    ..
                },
                Agreement::Detection {
                    reference_boxes: r2,
                    boxes: b2,
                    matched: m2,
                    same_class: s2,
                    ..
                },
            ) => {
                *reference_boxes += r2;
                *boxes += b2;
                *matched += m2;
                *same_class += s2;
            }
            _ => {}
        }
    }
}

fn argmax(v: &[f32]) -> Option<usize> {
    v.iter()
        .enumerate()
        .filter(|(_, x)| !x.is_nan())
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
        .map(|(i, _)| i)
}

/// Top-1 agreement of one input's logits.
pub fn top1(actual: &[f32], reference: &[f32]) -> Agreement {
    let same = argmax(actual).is_some() && argmax(actual) == argmax(reference);
    Agreement::Top1 {
        inputs: 1,
        agree: same as u64,
    }
}

fn boxes(output: &[f32], classes: usize, size: (u32, u32), p: &DetectParams) -> Vec<Detection> {
    // Boxes stay in model-input pixels: an identity letterbox.
    let lb = Letterbox {
        scale: 1.0,
        pad_x: 0.0,
        pad_y: 0.0,
        orig_w: size.0,
        orig_h: size.1,
    };
    detect::decode(output, classes, &lb, &[], p)
}

/// Detection agreement of one input's raw `[1, 4 + classes, anchors]` outputs; `size` is
/// the model input's (width, height).
pub fn detection(
    actual: &[f32],
    reference: &[f32],
    classes: usize,
    size: (u32, u32),
    p: &DetectParams,
) -> Agreement {
    let r = boxes(reference, classes, size, p);
    let a = boxes(actual, classes, size, p);
    let mut used = vec![false; a.len()];
    let (mut matched, mut same) = (0u64, 0u64);
    // `decode` returns boxes by decreasing score.
    for rb in &r {
        let rr = [rb.x1, rb.y1, rb.x2, rb.y2];
        let best = a
            .iter()
            .enumerate()
            .filter(|(i, _)| !used[*i])
            .map(|(i, ab)| (i, detect::iou(rr, [ab.x1, ab.y1, ab.x2, ab.y2])))
            .filter(|(_, iou)| *iou >= MATCH_IOU)
            .max_by(|x, y| x.1.total_cmp(&y.1));
        if let Some((i, _)) = best {
            used[i] = true;
            matched += 1;
            same += (a[i].class == rb.class) as u64;
        }
    }
    Agreement::Detection {
        conf: p.conf,
        nms_iou: p.iou,
        match_iou: MATCH_IOU,
        reference_boxes: r.len() as u64,
        boxes: a.len() as u64,
        matched,
        same_class: same,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top1_counts() {
        let mut a = top1(&[0.1, 0.9, 0.0], &[0.2, 0.7, 0.1]);
        a.merge(&top1(&[0.9, 0.1, 0.0], &[0.2, 0.7, 0.1]));
        assert_eq!(
            a,
            Agreement::Top1 {
                inputs: 2,
                agree: 1
            }
        );
        assert_eq!(a.text(), "top-1 1/2 (50.0%)");
        assert_eq!(top1(&[f32::NAN; 3], &[0.0, 1.0, 0.0]).fraction(), Some(0.0));
    }

    #[test]
    fn detection_matches_by_iou_and_class() {
        // 2 classes, 3 anchors: reference boxes at anchors 0 and 2 (class 0 and 1).
        #[rustfmt::skip]
        let reference = [
            100.0, 300.0, 500.0,  // cx
            100.0, 300.0, 500.0,  // cy
            40.0, 40.0, 40.0,     // w
            40.0, 40.0, 40.0,     // h
            0.9, 0.0, 0.1,        // class 0
            0.0, 0.0, 0.8,        // class 1
        ];
        // Actual: anchor 0 shifted by 4 px (IoU 36·40/(2·1600 − 1440) = 0.818), anchor 2
        // now class 0, and an extra box at anchor 1.
        let mut actual = reference;
        actual[0] = 104.0;
        actual[13] = 0.7;
        actual[14] = 0.85;
        actual[17] = 0.1;
        let p = DetectParams::default();
        let a = detection(&actual, &reference, 2, (640, 640), &p);
        assert_eq!(
            a,
            Agreement::Detection {
                conf: 0.25,
                nms_iou: 0.45,
                match_iou: 0.5,
                reference_boxes: 2,
                boxes: 3,
                matched: 2,
                same_class: 1
            }
        );
        assert!((a.fraction().unwrap() - 1.0 / 3.0).abs() < 1e-12);
        let none = detection(&[0.0; 18], &[0.0; 18], 2, (640, 640), &p);
        assert_eq!(none.fraction(), None);
        assert!(none.text().starts_with("n/a"));
    }
}
