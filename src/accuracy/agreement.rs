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
//! - Forecasting: a regression has no decision; the mean absolute error (MAE) and the mean
//!   absolute percentage error (MAPE, over reference values away from zero) stand for it.

pub use crate::report::schema::accuracy::Agreement;

use crate::task::detect::{self, DetectParams, Detection};
use crate::task::image::Letterbox;

/// Minimum IoU for a detected box to match a reference box.
pub const MATCH_IOU: f64 = 0.5;

impl Agreement {
    /// The agreement as a fraction, when one is defined: top-1 agreement, detection F1,
    /// or for forecasts 1 − MAPE (floored at 0).
    pub fn fraction(&self) -> Option<f64> {
        match self {
            Agreement::Top1 { inputs, agree, .. } => {
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
            Agreement::Forecast { .. } => self.mape_pct().map(|m| (1.0 - m / 100.0).max(0.0)),
            Agreement::NotApplicable { .. } => None,
        }
    }

    /// Classification: the share of inputs whose reference top-1 class is in the output's
    /// top 5.
    pub fn top5(&self) -> Option<f64> {
        match self {
            Agreement::Top1 {
                inputs, top5_agree, ..
            } => (*inputs > 0).then(|| *top5_agree as f64 / *inputs as f64),
            _ => None,
        }
    }

    /// Detection: matched same-class boxes / output boxes.
    pub fn precision(&self) -> Option<f64> {
        match self {
            Agreement::Detection {
                boxes, same_class, ..
            } => (*boxes > 0).then(|| *same_class as f64 / *boxes as f64),
            _ => None,
        }
    }

    /// Detection: matched same-class boxes / reference boxes.
    pub fn recall(&self) -> Option<f64> {
        match self {
            Agreement::Detection {
                reference_boxes,
                same_class,
                ..
            } => (*reference_boxes > 0).then(|| *same_class as f64 / *reference_boxes as f64),
            _ => None,
        }
    }

    /// Detection: the harmonic mean of precision and recall.
    pub fn f1(&self) -> Option<f64> {
        let (p, r) = (self.precision()?, self.recall()?);
        Some(if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        })
    }

    /// Forecasting: mean absolute error, in the output's units.
    pub fn mae(&self) -> Option<f64> {
        match self {
            Agreement::Forecast {
                elements,
                abs_error_sum,
                ..
            } => (*elements > 0).then(|| abs_error_sum / *elements as f64),
            _ => None,
        }
    }

    /// Forecasting: mean absolute percentage error over the elements whose reference is
    /// away from zero, %.
    pub fn mape_pct(&self) -> Option<f64> {
        match self {
            Agreement::Forecast {
                ape_sum,
                ape_elements,
                ..
            } => (*ape_elements > 0).then(|| 100.0 * ape_sum / *ape_elements as f64),
            _ => None,
        }
    }

    /// One line for tables: `top-1 8/8 (100.0%), top-5 8/8`.
    pub fn text(&self) -> String {
        match self {
            Agreement::Top1 {
                inputs,
                agree,
                top5_agree,
            } => format!(
                "top-1 {agree}/{inputs} ({:.1}%), top-5 {top5_agree}/{inputs}",
                self.fraction().unwrap_or(0.0) * 100.0
            ),
            Agreement::Detection {
                conf,
                reference_boxes,
                boxes,
                same_class,
                ..
            } => match (self.precision(), self.recall()) {
                (Some(p), Some(r)) => format!(
                    "boxes {same_class} matched (reference {reference_boxes}, output {boxes}): precision {:.1}%, recall {:.1}%, F1 {:.1}%",
                    p * 100.0,
                    r * 100.0,
                    self.f1().unwrap_or(0.0) * 100.0
                ),
                _ if *reference_boxes == 0 && *boxes == 0 => {
                    format!("n/a: no box above conf {conf} in the reference or the output")
                }
                _ => format!(
                    "boxes {same_class} matched (reference {reference_boxes}, output {boxes}): precision {}, recall {}",
                    self.precision()
                        .map(|p| format!("{:.1}%", p * 100.0))
                        .unwrap_or_else(|| "n/a".into()),
                    self.recall()
                        .map(|r| format!("{:.1}%", r * 100.0))
                        .unwrap_or_else(|| "n/a".into())
                ),
            },
            Agreement::Forecast { inputs, .. } => format!(
                "MAE {} and MAPE {} over {inputs} inputs",
                self.mae()
                    .map(|v| format!("{v:.4e}"))
                    .unwrap_or_else(|| "n/a".into()),
                self.mape_pct()
                    .map(|v| format!("{v:.2} %"))
                    .unwrap_or_else(|| "n/a (reference near zero)".into())
            ),
            Agreement::NotApplicable { reason } => format!("n/a: {reason}"),
        }
    }

    /// Adds another input's counts (same kind).
    pub fn merge(&mut self, o: &Agreement) {
        match (self, o) {
            (
                Agreement::Top1 {
                    inputs,
                    agree,
                    top5_agree,
                },
                Agreement::Top1 {
                    inputs: i2,
                    agree: a2,
                    top5_agree: t2,
                },
            ) => {
                *inputs += i2;
                *agree += a2;
                *top5_agree += t2;
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
            (
                Agreement::Forecast {
                    inputs,
                    elements,
                    abs_error_sum,
                    ape_sum,
                    ape_elements,
                },
                Agreement::Forecast {
                    inputs: i2,
                    elements: e2,
                    abs_error_sum: a2,
                    ape_sum: p2,
                    ape_elements: n2,
                },
            ) => {
                *inputs += i2;
                *elements += e2;
                *abs_error_sum += a2;
                *ape_sum += p2;
                *ape_elements += n2;
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

/// The indices of the `k` largest values (NaN never among them), largest first.
fn top_k(v: &[f32], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).filter(|&i| !v[i].is_nan()).collect();
    idx.sort_by(|&a, &b| v[b].total_cmp(&v[a]).then(a.cmp(&b)));
    idx.truncate(k);
    idx
}

/// Top-1 and top-5 agreement of one input's logits.
pub fn top1(actual: &[f32], reference: &[f32]) -> Agreement {
    let r = argmax(reference);
    let same = argmax(actual).is_some() && argmax(actual) == r;
    let in5 = r.is_some_and(|r| top_k(actual, 5).contains(&r));
    Agreement::Top1 {
        inputs: 1,
        agree: same as u64,
        top5_agree: in5 as u64,
    }
}

/// The absolute and percentage errors of one input's forecast against the reference's.
pub fn forecast(actual: &[f32], reference: &[f32]) -> Agreement {
    let mut abs_error_sum = 0.0;
    let mut ape_sum = 0.0;
    let mut ape_elements = 0u64;
    for (&a, &r) in actual.iter().zip(reference) {
        let (a, r) = (a as f64, r as f64);
        let e = (a - r).abs();
        abs_error_sum += if e.is_finite() { e } else { f64::INFINITY };
        if r.abs() > 1e-6 {
            ape_sum += e / r.abs();
            ape_elements += 1;
        }
    }
    Agreement::Forecast {
        inputs: 1,
        elements: actual.len().min(reference.len()) as u64,
        abs_error_sum,
        ape_sum,
        ape_elements,
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
    fn forecast_mae_and_mape() {
        // |1.1 − 1| = 0.1 (10 %), |0 − 0| (reference 0: no percentage), |2.5 − 2| = 0.5 (25 %).
        let mut f = forecast(&[1.1, 0.0, 2.5], &[1.0, 0.0, 2.0]);
        assert!((f.mae().unwrap() - 0.2).abs() < 1e-6);
        assert!((f.mape_pct().unwrap() - 17.5).abs() < 1e-4);
        f.merge(&forecast(&[1.0], &[1.0]));
        assert!((f.mae().unwrap() - 0.15).abs() < 1e-6);
    }

    #[test]
    fn top1_counts() {
        let mut a = top1(&[0.1, 0.9, 0.0], &[0.2, 0.7, 0.1]);
        a.merge(&top1(&[0.9, 0.1, 0.0], &[0.2, 0.7, 0.1]));
        assert_eq!(
            a,
            Agreement::Top1 {
                inputs: 2,
                agree: 1,
                top5_agree: 2
            }
        );
        assert_eq!(a.text(), "top-1 1/2 (50.0%), top-5 2/2");
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
        // precision 1/3, recall 1/2, F1 = 2·(1/6)/(5/6) = 0.4.
        assert!((a.f1().unwrap() - 0.4).abs() < 1e-12);
        let none = detection(&[0.0; 18], &[0.0; 18], 2, (640, 640), &p);
        assert_eq!(none.fraction(), None);
        assert!(none.text().starts_with("n/a"));
    }
}
