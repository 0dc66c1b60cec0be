//! `yolov8n-line`: the zoo's YOLOv8n trained on the labelled line scenes
//! (`line-inspection-train`). Scenes are letterboxed to 640 as the detection pipeline does,
//! and the network trains on seeded square crops of them (`--image-size`, default 160), so
//! objects keep the pixel scale they have at inference; the graph is fully convolutional
//! and the same weights run at 640. Loss: ultralytics' recipe in small — task-aligned
//! assignment (top 10 anchors inside each box by score^0.5 · IoU^6), BCE on the classes
//! against the aligned scores, 1 − IoU and DFL on the assigned anchors (gains 7.5, 0.5,
//! 1.5). Held out: mAP@0.5 of the 640 model on the held-out scenes (conf 0.001, NMS 0.6),
//! against the seeded weights' mAP.
//!
//! `yolov8s-line-hires` trains the same way at its own scale (scenes letterboxed to 1280,
//! evaluated at 1280), but its head alone: its FP32 weights (45 MB) are over the commit
//! limit, so the backbone and neck keep their seeded weights (rebuilt from the seed by
//! `zoo build`) and only the Detect head's two branches per level are trained and saved
//! (`zoo::yolo::head_params`), as `probe` does for ResNet-50.

use std::cell::{Cell, OnceCell};

use candle_core::{D, DType, Device, Result, Tensor};

use super::graph::Graph;
use super::workload::{Batch, Evaluation, SplitHash, Workload, WorkloadOptions, subset};
use crate::model::onnx::ModelProto;
use crate::report::schema::train::{DataRef, HeldOut};
use crate::task::inputs::{LINE_HELDOUT, LINE_TRAIN, LabelBox};
use crate::task::labelled::line_sample;

const CLASSES: usize = 5;
const REG_MAX: usize = 16;

/// A zoo detector the workload trains: its name, scale, input side, and whether only its
/// Detect head trains.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub zoo: &'static str,
    /// As the zoo entry builds it (the weights that do not train keep their seeded values).
    pub line: crate::zoo::yolo::Line,
    pub head_only: bool,
}

pub const YOLOV8N_LINE: Spec = Spec {
    zoo: "yolov8n-line",
    line: crate::zoo::yolo::LINE_N,
    head_only: false,
};

pub const YOLOV8S_LINE_HIRES: Spec = Spec {
    zoo: "yolov8s-line-hires",
    line: crate::zoo::yolo::LINE_S_HIRES,
    head_only: true,
};
const STRIDES: [usize; 3] = [8, 16, 32];

/// A letterboxed scene: the zoo side's square of RGB bytes and its boxes in those pixels.
struct Scene {
    rgb: Vec<u8>,
    boxes: Vec<LabelBox>,
    /// The letterbox content's rows (the crop stays near them).
    content_y: (f64, f64),
}

fn scenes(
    split: &str,
    idx: &[usize],
    side: usize,
    hash: &mut SplitHash,
) -> std::result::Result<Vec<Scene>, super::Error> {
    let mut out = Vec::new();
    for &k in idx {
        let (jpg, boxes) = line_sample(split, k);
        hash.update(&jpg);
        let img = crate::task::image::decode_bytes(&jpg, &format!("{split}-{k:03}.jpg"))?;
        let (lb_img, lb) = crate::task::image::letterbox(img, side as u32);
        let map = |b: &LabelBox| LabelBox {
            x0: b.x0 * lb.scale + lb.pad_x,
            y0: b.y0 * lb.scale + lb.pad_y,
            x1: b.x1 * lb.scale + lb.pad_x,
            y1: b.y1 * lb.scale + lb.pad_y,
            ..*b
        };
        out.push(Scene {
            rgb: lb_img.into_raw(),
            boxes: boxes.iter().map(map).collect(),
            content_y: (lb.pad_y, lb.pad_y + lb.orig_h as f64 * lb.scale),
        });
    }
    Ok(out)
}

pub struct LineDetect {
    spec: Spec,
    size: usize,
    train: Vec<Scene>,
    heldout: Vec<Scene>,
    /// The level outputs (box and class logits before the decoder), P3, P4, P5.
    levels: Vec<String>,
    seed: u64,
    calls: Cell<u64>,
    baseline: OnceCell<f64>,
    data: Vec<DataRef>,
}

/// The names of the head's per-level outputs: the inputs of its `head_shape` reshapes.
fn level_names(m: &ModelProto) -> Vec<String> {
    m.graph
        .as_ref()
        .map(|g| {
            g.node
                .iter()
                .filter(|n| {
                    n.op_type == "Reshape"
                        && n.input.get(1).is_some_and(|s| s.starts_with("head_shape"))
                })
                .map(|n| n.input[0].clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The zoo's YOLOv8n graph for a `size` input (same initializer names at every size).
pub fn graph_at(size: usize) -> ModelProto {
    spec_graph_at(&YOLOV8N_LINE, size)
}

/// The zoo graph of `spec` (seeded weights) for a `size` input.
pub fn spec_graph_at(spec: &Spec, size: usize) -> ModelProto {
    spec.line.graph(
        spec.zoo,
        crate::model::onnx::DataType::FLOAT,
        None,
        size as i64,
    )
}

impl LineDetect {
    pub fn new(o: &WorkloadOptions, spec: Spec) -> std::result::Result<LineDetect, super::Error> {
        let size = o.image_size.unwrap_or(160);
        let side = spec.line.side as usize;
        if !size.is_multiple_of(32) || size > side {
            return Err(crate::util::setting::SettingError::says(
                super::Setting::ImageSize,
                format!("{size}: YOLOv8 crops must be a multiple of 32, at most {side}"),
            )
            .into());
        }
        let (mut ht, mut hh) = (SplitHash::default(), SplitHash::default());
        let train = scenes(
            "train",
            &subset(LINE_TRAIN, o.samples, o.seed ^ 0xd37),
            side,
            &mut ht,
        )?;
        let heldout = scenes(
            "heldout",
            &subset(LINE_HELDOUT, o.eval_samples, 1),
            side,
            &mut hh,
        )?;
        let data = vec![
            DataRef {
                split: "train".into(),
                name: "line-inspection-train/train-*.jpg".into(),
                samples: train.len() as u64,
                sha256: ht.finish(),
            },
            DataRef {
                split: "held-out".into(),
                name: "line-inspection-train/heldout-*.jpg".into(),
                samples: heldout.len() as u64,
                sha256: hh.finish(),
            },
        ];
        Ok(LineDetect {
            spec,
            size,
            levels: level_names(&spec_graph_at(&spec, size)),
            train,
            heldout,
            seed: o.seed,
            calls: Cell::new(0),
            baseline: OnceCell::new(),
            data,
        })
    }

    /// A seeded crop of scene `i`: its pixels (CHW, /255) and boxes (cls, x1, y1, x2, y2).
    fn crop(&self, i: usize, salt: u64) -> (Vec<f32>, Vec<[f32; 5]>) {
        let s = &self.train[i];
        let c = self.size;
        let mut rng =
            crate::util::rng::SplitMix64(self.seed ^ salt.wrapping_mul(0x9e37_79b9) ^ i as u64);
        let side = self.spec.line.side as usize;
        let max = (side - c) as f64;
        // Three crops in four are centred near one of the scene's objects (jittered by up
        // to a quarter crop): the objects are small (an insulator string is ~6 × 25 px at
        // 640), so a uniform crop is mostly sky and the positives too few to learn from.
        let near = (!s.boxes.is_empty() && rng.unit() < 0.75)
            .then(|| &s.boxes[(rng.next_u64() % s.boxes.len() as u64) as usize]);
        let (x0, y0) = match near {
            Some(b) => {
                let j = c as f64 * 0.25;
                let cx = (b.x0 + b.x1) / 2.0 + (rng.unit() * 2.0 - 1.0) * j;
                let cy = (b.y0 + b.y1) / 2.0 + (rng.unit() * 2.0 - 1.0) * j;
                (
                    (cx - c as f64 / 2.0).clamp(0.0, max).floor(),
                    (cy - c as f64 / 2.0).clamp(0.0, max).floor(),
                )
            }
            None => {
                let x0 = (rng.unit() * max).floor();
                let (lo, hi) = (
                    s.content_y.0 - c as f64 * 0.25,
                    s.content_y.1 - c as f64 * 0.75,
                );
                let y0 = (lo + rng.unit() * (hi - lo).max(0.0))
                    .clamp(0.0, max)
                    .floor();
                (x0, y0)
            }
        };
        let (xo, yo) = (x0 as usize, y0 as usize);
        // Half the crops are mirrored left-right (the scenes have no handedness).
        let flip = rng.next_u64().is_multiple_of(2);
        let mut px = vec![0f32; 3 * c * c];
        for y in 0..c {
            for x in 0..c {
                let at = ((yo + y) * side + xo + x) * 3;
                let to = if flip { c - 1 - x } else { x };
                for k in 0..3 {
                    px[k * c * c + y * c + to] = s.rgb[at + k] as f32 / 255.0;
                }
            }
        }
        let mut boxes = Vec::new();
        for b in &s.boxes {
            let (bx0, by0) = ((b.x0 - x0).max(0.0), (b.y0 - y0).max(0.0));
            let (bx1, by1) = ((b.x1 - x0).min(c as f64), (b.y1 - y0).min(c as f64));
            let area = (b.x1 - b.x0) * (b.y1 - b.y0);
            if bx1 - bx0 < 2.0 || by1 - by0 < 2.0 || (bx1 - bx0) * (by1 - by0) < 0.4 * area {
                continue;
            }
            let (bx0, bx1) = if flip {
                (c as f64 - bx1, c as f64 - bx0)
            } else {
                (bx0, bx1)
            };
            boxes.push([
                b.class as f32,
                bx0 as f32,
                by0 as f32,
                bx1 as f32,
                by1 as f32,
            ]);
        }
        (px, boxes)
    }
}

/// Anchor centres (grid units) and strides of a `size` input, P3 first.
fn anchors(size: usize) -> Vec<(f32, f32, f32)> {
    let mut a = Vec::new();
    for s in STRIDES {
        let g = size / s;
        for row in 0..g {
            for col in 0..g {
                a.push((col as f32 + 0.5, row as f32 + 0.5, s as f32));
            }
        }
    }
    a
}

fn iou(a: [f32; 4], b: [f32; 4]) -> f32 {
    crate::task::detect::iou(a.map(f64::from), b.map(f64::from)) as f32
}

/// One positive anchor of the assignment.
struct Positive {
    /// Index into the flattened [B·A].
    flat: usize,
    class: usize,
    target: [f32; 4],
    weight: f32,
}

/// Task-aligned assignment of one image: for each box, the 10 anchors inside it with the
/// best score^0.5 · IoU^6; an anchor claimed twice goes to the box it overlaps most. The
/// weight is the alignment normalised per box to that box's best IoU.
fn assign(
    pred: &[[f32; 4]],
    scores: &[f32],
    boxes: &[[f32; 5]],
    anc: &[(f32, f32, f32)],
    base: usize,
) -> Vec<Positive> {
    let a_n = anc.len();
    // (anchor → (box, iou, align)) of the best box claiming it.
    let mut best: Vec<Option<(usize, f32, f32)>> = vec![None; a_n];
    for (bi, b) in boxes.iter().enumerate() {
        let cls = b[0] as usize;
        let gt = [b[1], b[2], b[3], b[4]];
        let mut cand: Vec<(usize, f32, f32)> = (0..a_n)
            .filter(|&a| {
                let (x, y) = (anc[a].0 * anc[a].2, anc[a].1 * anc[a].2);
                x > gt[0] && x < gt[2] && y > gt[1] && y < gt[3]
            })
            .map(|a| {
                let o = iou(pred[a], gt);
                let s = scores[a * CLASSES + cls];
                (a, o, s.powf(0.5) * o.powi(6))
            })
            .collect();
        cand.sort_by(|x, y| y.2.total_cmp(&x.2));
        cand.truncate(10);
        for (a, o, al) in cand {
            if best[a].is_none_or(|(_, bo, _)| o > bo) {
                best[a] = Some((bi, o, al));
            }
        }
    }
    let mut max_al = vec![0f32; boxes.len()];
    let mut max_iou = vec![0f32; boxes.len()];
    for (bi, o, al) in best.iter().flatten() {
        max_al[*bi] = max_al[*bi].max(*al);
        max_iou[*bi] = max_iou[*bi].max(*o);
    }
    best.iter()
        .enumerate()
        .filter_map(|(a, x)| {
            let (bi, _, al) = (*x)?;
            let b = boxes[bi];
            Some(Positive {
                flat: base + a,
                class: b[0] as usize,
                target: [b[1], b[2], b[3], b[4]],
                weight: if max_al[bi] > 0.0 {
                    al / max_al[bi] * max_iou[bi]
                } else {
                    0.0
                },
            })
        })
        .filter(|p| p.weight > 0.0)
        .collect()
}

impl LineDetect {
    /// The head's logits of a batch as [B, A, 4·16 + classes].
    fn head(&self, g: &Graph, x: &Tensor) -> Result<Tensor> {
        let names: Vec<&str> = self.levels.iter().map(|s| s.as_str()).collect();
        let outs = g.forward(&[("images", x.clone())], &names)?;
        let flat: Vec<Tensor> = outs
            .iter()
            .map(|o| o.flatten_from(2))
            .collect::<Result<_>>()?;
        Tensor::cat(&flat, 2)?.transpose(1, 2)?.contiguous()
    }
}

/// The DFL expectation of box logits [N, 4, 16] → distances [N, 4] (grid units).
fn expectation(logits: &Tensor) -> Result<Tensor> {
    let prob = candle_nn::ops::softmax(logits, D::Minus1)?;
    let bins = Tensor::arange(0f32, REG_MAX as f32, logits.device())?.to_dtype(logits.dtype())?;
    prob.broadcast_mul(&bins)?.sum(D::Minus1)
}

/// What the loss needs besides the logits, computed without gradients from the batch's
/// boxes and the detached predictions (the task-aligned assignment): framework-free, so
/// candle's loss and libtorch's read the same numbers.
pub struct Targets {
    /// The classes' BCE targets [B, A, classes]: the aligned score of each positive.
    pub cls: Vec<f32>,
    /// The BCE, IoU and DFL sums are divided by this (the targets' sum, at least 1).
    pub norm: f64,
    /// Positives.
    pub n: usize,
    /// Each positive's row of the flattened [B·A] logits.
    pub idx: Vec<i64>,
    /// Per positive and side (l, t, r, b): −1 or 1, the anchor centre in pixels, the
    /// stride; the corners are centre + sign · distance · stride.
    pub sign: Vec<f32>,
    pub centre: Vec<f32>,
    pub stride: Vec<f32>,
    /// The target box (x0, y0, x1, y1) in pixels, per positive.
    pub target: Vec<f32>,
    /// DFL's two-bin target over the 16 bins per side [n, 4, 16].
    pub dfl: Vec<f32>,
    /// The positive's weight [n].
    pub weight: Vec<f32>,
}

/// The loss's gains: BCE, 1 − IoU, DFL (ultralytics' defaults).
pub const GAINS: (f64, f64, f64) = (0.5, 7.5, 1.5);
/// Classes and DFL bins of the head: its logits are [B, A, 4·REG_MAX + CLASSES].
pub const HEAD: (usize, usize) = (CLASSES, REG_MAX);

impl LineDetect {
    /// The targets of a batch of `bsz` images from the detached box distances `dist`
    /// [B·A, 4] (grid units), class scores `scores` [B·A, classes] (after the sigmoid) and
    /// the batch's box rows (image, class, x0, y0, x1, y1).
    pub fn targets(&self, dist: &[f32], scores: &[f32], rows: &[f32], bsz: usize) -> Targets {
        let anc = anchors(self.size);
        let a_n = anc.len();
        let mut pos = Vec::new();
        for img in 0..bsz {
            let boxes: Vec<[f32; 5]> = rows
                .chunks(6)
                .filter(|r| r[0] as usize == img)
                .map(|r| [r[1], r[2], r[3], r[4], r[5]])
                .collect();
            let pred: Vec<[f32; 4]> = (0..a_n)
                .map(|a| {
                    let d = &dist[(img * a_n + a) * 4..(img * a_n + a) * 4 + 4];
                    let (ax, ay, s) = anc[a];
                    [
                        (ax - d[0]) * s,
                        (ay - d[1]) * s,
                        (ax + d[2]) * s,
                        (ay + d[3]) * s,
                    ]
                })
                .collect();
            let sc = &scores[img * a_n * CLASSES..(img + 1) * a_n * CLASSES];
            pos.extend(assign(&pred, sc, &boxes, &anc, img * a_n));
        }
        let mut cls = vec![0f32; bsz * a_n * CLASSES];
        for p in &pos {
            cls[p.flat * CLASSES + p.class] = p.weight;
        }
        let norm = cls.iter().sum::<f32>().max(1.0) as f64;
        let n = pos.len();
        let mut t = Targets {
            cls,
            norm,
            n,
            idx: Vec::with_capacity(n),
            sign: Vec::with_capacity(4 * n),
            centre: Vec::with_capacity(4 * n),
            stride: Vec::with_capacity(4 * n),
            target: Vec::with_capacity(4 * n),
            dfl: vec![0f32; n * 4 * REG_MAX],
            weight: Vec::with_capacity(n),
        };
        for (k, p) in pos.iter().enumerate() {
            let (ax, ay, s) = anc[p.flat % a_n];
            t.idx.push(p.flat as i64);
            t.sign.extend([-1f32, -1.0, 1.0, 1.0]);
            t.centre.extend([ax * s, ay * s, ax * s, ay * s]);
            t.stride.extend([s; 4]);
            t.target.extend(p.target);
            let ltrb = [
                ax - p.target[0] / s,
                ay - p.target[1] / s,
                p.target[2] / s - ax,
                p.target[3] / s - ay,
            ];
            for (side, d) in ltrb.iter().enumerate() {
                let d = d.clamp(0.0, REG_MAX as f32 - 1.01);
                let lo = d.floor() as usize;
                let base = (k * 4 + side) * REG_MAX;
                t.dfl[base + lo] = lo as f32 + 1.0 - d;
                t.dfl[base + lo + 1] = d - lo as f32;
            }
            t.weight.push(p.weight);
        }
        t
    }
}

/// The losses of the positives: (1 − IoU) and DFL, weighted, summed.
fn box_losses(logits: &Tensor, tg: &Targets) -> Result<(Tensor, Tensor)> {
    let dev = logits.device();
    let dt = logits.dtype();
    let n = tg.n;
    let idx: Vec<u32> = tg.idx.iter().map(|&i| i as u32).collect();
    let sel = logits
        .flatten_to(1)?
        .index_select(&Tensor::from_vec(idx, n, dev)?, 0)?
        .narrow(1, 0, 4 * REG_MAX)?
        .reshape((n, 4, REG_MAX))?;
    let dist = expectation(&sel)?;
    let t = |v: &[f32], shape: &[usize]| Tensor::from_slice(v, shape, dev)?.to_dtype(dt);
    // Box corners: centre + sign · distance · stride.
    let pb = (t(&tg.centre, &[n, 4])?
        + (dist * t(&tg.stride, &[n, 4])?)?.mul(&t(&tg.sign, &[n, 4])?)?)?;
    let tb = t(&tg.target, &[n, 4])?;
    let w = t(&tg.weight, &[n])?;
    let col = |x: &Tensor, i: usize| x.narrow(1, i, 1);
    let iw = col(&pb, 2)?
        .minimum(&col(&tb, 2)?)?
        .sub(&col(&pb, 0)?.maximum(&col(&tb, 0)?)?)?
        .relu()?;
    let ih = col(&pb, 3)?
        .minimum(&col(&tb, 3)?)?
        .sub(&col(&pb, 1)?.maximum(&col(&tb, 1)?)?)?
        .relu()?;
    let inter = (iw * ih)?;
    let area = |b: &Tensor| -> Result<Tensor> {
        (col(b, 2)? - col(b, 0)?)?
            .relu()?
            .mul(&(col(b, 3)? - col(b, 1)?)?.relu()?)
    };
    let union = ((area(&pb)? + area(&tb)?)? - &inter)?.affine(1.0, 1e-7)?;
    let iou = (inter / union)?.squeeze(1)?;
    let iou_loss = (iou.affine(-1.0, 1.0)? * &w)?.sum_all()?;
    let logp = candle_nn::ops::log_softmax(&sel, D::Minus1)?;
    let dfl = (logp * t(&tg.dfl, &[n, 4, REG_MAX])?)?
        .sum(D::Minus1)?
        .mean(1)?
        .neg()?;
    let dfl_loss = (dfl * w)?.sum_all()?;
    Ok((iou_loss, dfl_loss))
}

/// Average precision at IoU 0.5 of one class (all-point interpolation, VOC 2010+):
/// detections (image, score, box) against the boxes of every image.
fn average_precision(dets: &mut [(usize, f32, [f32; 4])], gts: &[Vec<[f32; 4]>]) -> Option<f64> {
    let total: usize = gts.iter().map(|g| g.len()).sum();
    if total == 0 {
        return None;
    }
    dets.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut used: Vec<Vec<bool>> = gts.iter().map(|g| vec![false; g.len()]).collect();
    let (mut tp, mut fp) = (0usize, 0usize);
    let mut curve = Vec::with_capacity(dets.len());
    for (img, _, b) in dets.iter() {
        let best = gts[*img]
            .iter()
            .enumerate()
            .map(|(k, g)| (k, iou(*b, *g)))
            .max_by(|x, y| x.1.total_cmp(&y.1));
        match best {
            Some((k, o)) if o >= 0.5 && !used[*img][k] => {
                used[*img][k] = true;
                tp += 1;
            }
            _ => fp += 1,
        }
        curve.push((tp as f64 / total as f64, tp as f64 / (tp + fp) as f64));
    }
    // Precision made monotone from the right, integrated over recall.
    let mut ap = 0.0;
    let mut prev_r = 0.0;
    for i in 0..curve.len() {
        let p = curve[i..].iter().map(|c| c.1).fold(0.0, f64::max);
        ap += (curve[i].0 - prev_r) * p;
        prev_r = curve[i].0;
    }
    Some(ap)
}

/// mAP@0.5 of `weights` at 640 on the held-out scenes (classes that have boxes).
fn map50(scenes: &[Scene], side: usize, g_zoo: &Graph) -> Result<f64> {
    let lb = crate::task::image::Letterbox {
        scale: 1.0,
        pad_x: 0.0,
        pad_y: 0.0,
        orig_w: side as u32,
        orig_h: side as u32,
    };
    let params = crate::task::detect::DetectParams {
        conf: 0.001,
        iou: 0.6,
        max_det: 300,
    };
    let mut dets: Vec<Vec<(usize, f32, [f32; 4])>> = vec![Vec::new(); CLASSES];
    let mut gts: Vec<Vec<Vec<[f32; 4]>>> = vec![vec![Vec::new(); scenes.len()]; CLASSES];
    let plane = side * side;
    for (i, s) in scenes.iter().enumerate() {
        let mut px = vec![0f32; 3 * plane];
        for (p, c) in s.rgb.chunks(3).enumerate() {
            for k in 0..3 {
                px[k * plane + p] = c[k] as f32 / 255.0;
            }
        }
        let x = Tensor::from_vec(px, (1, 3, side, side), &g_zoo.device)?;
        let y = g_zoo.forward(&[("images", x)], &["output0"])?;
        let y: Vec<f32> = y[0].to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
        for d in crate::task::detect::decode(&y, CLASSES, &lb, &[], &params) {
            let b = [d.x1, d.y1, d.x2, d.y2].map(|v| v as f32);
            dets[d.class].push((i, d.score, b));
        }
        for b in &s.boxes {
            gts[b.class][i].push([b.x0, b.y0, b.x1, b.y1].map(|v| v as f32));
        }
    }
    let aps: Vec<f64> = (0..CLASSES)
        .filter_map(|c| average_precision(&mut dets[c], &gts[c]))
        .collect();
    Ok(if aps.is_empty() {
        0.0
    } else {
        aps.iter().sum::<f64>() / aps.len() as f64
    })
}

impl Workload for LineDetect {
    fn model(&self) -> ModelProto {
        spec_graph_at(&self.spec, self.size)
    }
    fn zoo_name(&self) -> &'static str {
        self.spec.zoo
    }
    fn trainable(&self) -> Option<std::collections::HashSet<String>> {
        self.spec
            .head_only
            .then(|| crate::zoo::yolo::head_params(&spec_graph_at(&self.spec, self.size)))
    }
    fn input_name(&self) -> &'static str {
        "images"
    }
    fn train_len(&self) -> usize {
        self.train.len()
    }
    fn batch(&self, idx: &[usize], dev: &Device, dt: DType) -> Result<Batch> {
        let salt = self.calls.get();
        self.calls.set(salt + 1);
        let c = self.size;
        let mut px = Vec::with_capacity(idx.len() * 3 * c * c);
        let mut rows = Vec::new();
        for (b, &i) in idx.iter().enumerate() {
            let (p, boxes) = self.crop(i, salt);
            px.extend(p);
            for bx in boxes {
                rows.extend([b as f32, bx[0], bx[1], bx[2], bx[3], bx[4]]);
            }
        }
        let n = rows.len() / 6;
        Ok(Batch {
            x: Tensor::from_vec(px, (idx.len(), 3, c, c), dev)?.to_dtype(dt)?,
            y: Tensor::from_vec(rows, (n, 6), dev)?,
        })
    }
    fn loss(&self, g: &Graph, b: &Batch) -> Result<Tensor> {
        let logits = self.head(g, &b.x)?;
        let (bsz, a_n, _) = logits.dims3()?;
        // The assignment reads the predictions without gradients.
        let box_logits = logits
            .narrow(2, 0, 4 * REG_MAX)?
            .reshape((bsz * a_n, 4, REG_MAX))?;
        let dist: Vec<f32> = expectation(&box_logits.detach())?
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1()?;
        let cls = logits.narrow(2, 4 * REG_MAX, CLASSES)?;
        let scores: Vec<f32> = candle_nn::ops::sigmoid(&cls.detach())?
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1()?;
        let rows: Vec<f32> = b.y.flatten_all()?.to_vec1()?;
        let tg = self.targets(&dist, &scores, &rows, bsz);
        let norm = tg.norm;
        let t = Tensor::from_slice(&tg.cls, (bsz, a_n, CLASSES), cls.device())?
            .to_dtype(cls.dtype())?;
        // BCE with logits: max(x, 0) − x·t + log(1 + e^−|x|).
        let bce =
            ((cls.relu()? - (&cls * &t)?)? + cls.abs()?.neg()?.exp()?.affine(1.0, 1.0)?.log()?)?;
        let cls_loss = (bce.sum_all()? / norm)?;
        let (g_cls, g_iou, g_dfl) = GAINS;
        if tg.n == 0 {
            return cls_loss.affine(g_cls, 0.0);
        }
        let (iou_loss, dfl_loss) = box_losses(&logits, &tg)?;
        let total = ((iou_loss / norm)?.affine(g_iou, 0.0)? + cls_loss.affine(g_cls, 0.0)?)?;
        total + (dfl_loss / norm)?.affine(g_dfl, 0.0)?
    }
    fn objective(&self) -> Option<super::engine::Objective> {
        Some(super::engine::Objective {
            outputs: self.levels.clone(),
            loss: super::engine::Loss::Detection,
        })
    }
    fn detection_targets(
        &self,
        dist: &[f32],
        scores: &[f32],
        rows: &[f32],
        bsz: usize,
    ) -> Option<Targets> {
        Some(self.targets(dist, scores, rows, bsz))
    }
    fn evaluate(&self, g: &Graph) -> Result<Evaluation> {
        let side = self.spec.line.side as usize;
        let m_zoo = spec_graph_at(&self.spec, side);
        let trained = Graph::new(&m_zoo, &g.device, g.dtype, Some(&g.weights()?))?;
        let value = map50(&self.heldout, side, &trained)?;
        let baseline = match self.baseline.get() {
            Some(b) => *b,
            None => {
                let seeded = Graph::new(&m_zoo, &g.device, g.dtype, None)?;
                let b = map50(&self.heldout, side, &seeded)?;
                *self.baseline.get_or_init(|| b)
            }
        };
        Ok(Evaluation {
            held_out: HeldOut {
                metric: "map50".into(),
                value,
                baseline: "the zoo's seeded (untrained) weights".into(),
                baseline_value: baseline,
                beats_baseline: value > baseline,
                samples: self.heldout.len(),
            },
            lower_is_better: false,
        })
    }
    fn bytes_per_sample(&self) -> u64 {
        (3 * self.size * self.size * 4) as u64
    }
    fn data(&self) -> Vec<DataRef> {
        self.data.clone()
    }
    fn default_batch(&self) -> usize {
        8
    }
    fn default_lr(&self) -> f64 {
        1e-3
    }
    /// ultralytics clips at 10 too; without BatchNorm (folded in the zoo's graph) an
    /// unclipped step once threw a 70-epoch run from mAP 0.53 back to 0.18.
    fn max_grad_norm(&self) -> Option<f64> {
        Some(10.0)
    }
    fn recipe(&self) -> String {
        let head = if self.spec.head_only {
            let s = self.spec.line.seeding;
            format!(
                "the Detect head alone (its two branches per level), the backbone and neck kept at their seeded weights ({} × He-normal, biases N(0, {}²); `zoo build` rebuilds them from the seed); ",
                s.gain, s.bias_std
            )
        } else {
            String::new()
        };
        format!(
            "{head}seeded {0}×{0} crops of the scenes letterboxed to {1} (the detection pre-processing), 3 in 4 centred near an object, half mirrored; task-aligned assignment, BCE + 1−IoU + DFL (gains 0.5, 7.5, 1.5), gradients clipped to norm 10; held out: mAP@0.5 at {1} (conf 0.001, NMS IoU 0.6)",
            self.size, self.spec.line.side as usize
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The graph a workload trains on is the zoo entry's graph of the same name: the same
    /// initializers, bit for bit (the head keeps the backbone's seeded weights only if both
    /// build it alike).
    #[test]
    fn each_spec_builds_its_zoo_entrys_graph() {
        let entries = crate::zoo::entries();
        for spec in [YOLOV8N_LINE, YOLOV8S_LINE_HIRES] {
            let e = entries.iter().find(|e| e.name == spec.zoo).expect(spec.zoo);
            assert_eq!(e.input_shape[2], spec.line.side, "{}", spec.zoo);
            let zoo = crate::zoo::build_graph(e, crate::model::onnx::DataType::FLOAT);
            let ours = spec_graph_at(&spec, spec.line.side as usize);
            let inits = |m: &ModelProto| m.graph.as_ref().unwrap().initializer.clone();
            assert!(inits(&zoo) == inits(&ours), "{}", spec.zoo);
        }
    }

    #[test]
    fn average_precision_hand_values() {
        let gts = vec![vec![[0.0, 0.0, 10.0, 10.0]], vec![[0.0, 0.0, 10.0, 10.0]]];
        // One hit at the top score, a miss, then the second hit: P = 1, 1/2, 2/3.
        let mut d = vec![
            (0, 0.9, [0.0, 0.0, 10.0, 10.0]),
            (0, 0.8, [50.0, 50.0, 60.0, 60.0]),
            (1, 0.7, [0.0, 0.0, 10.0, 9.0]),
        ];
        let ap = average_precision(&mut d, &gts).unwrap();
        assert!((ap - (0.5 * 1.0 + 0.5 * 2.0 / 3.0)).abs() < 1e-9, "{ap}");
        assert_eq!(average_precision(&mut [], &[vec![]]), None);
    }

    #[test]
    fn the_training_graph_has_the_zoo_graphs_weights_at_any_size() {
        let names = |m: &ModelProto| -> Vec<(String, Vec<i64>)> {
            m.graph
                .as_ref()
                .unwrap()
                .initializer
                .iter()
                .filter(|t| super::super::graph::is_trainable(&t.name))
                .map(|t| (t.name.clone(), t.dims.clone()))
                .collect()
        };
        let a = graph_at(64);
        assert_eq!(names(&a), names(&graph_at(640)));
        assert_eq!(level_names(&a).len(), 3);
    }

    /// The head `zoo::yolo::head_params` finds is ultralytics' Detect for 5 classes, counted
    /// from its definition: per level of `ch` channels, cv2 = Conv(ch→c2, 3) + Conv(c2→c2,
    /// 3) + Conv2d(c2→64, 1) and cv3 = Conv(ch→c3, 3) + Conv(c3→c3, 3) + Conv2d(c3→5, 1),
    /// with biases (BatchNorm folded), c2 = max(16, ch₀/4, 64), c3 = max(ch₀, 5).
    #[test]
    fn the_head_is_ultralytics_detect_and_freezing_keeps_only_it_training() {
        let count = |m: &ModelProto, keep: &std::collections::HashSet<String>| -> usize {
            m.graph
                .as_ref()
                .unwrap()
                .initializer
                .iter()
                .filter(|t| keep.contains(&t.name))
                .map(|t| t.dims.iter().product::<i64>() as usize)
                .sum()
        };
        let detect = |chs: [usize; 3]| -> usize {
            let (c2, c3) = (64.max(chs[0] / 4).max(16), chs[0].max(CLASSES));
            chs.iter()
                .map(|&ch| {
                    9 * ch * c2
                        + c2
                        + 9 * c2 * c2
                        + c2
                        + c2 * 64
                        + 64
                        + 9 * ch * c3
                        + c3
                        + 9 * c3 * c3
                        + c3
                        + c3 * CLASSES
                        + CLASSES
                })
                .sum()
        };
        let s = spec_graph_at(&YOLOV8S_LINE_HIRES, 64);
        let head = crate::zoo::yolo::head_params(&s);
        assert_eq!(head.len(), 36, "{head:?}");
        assert_eq!(count(&s, &head), detect([128, 256, 512]));
        assert_eq!(count(&s, &head), 2_116_815);
        let n = graph_at(64);
        assert_eq!(
            count(&n, &crate::zoo::yolo::head_params(&n)),
            detect([64, 128, 256])
        );
        let mut g = Graph::new(&s, &Device::Cpu, DType::F32, None).unwrap();
        let all = g.param_count();
        g.freeze_except(&head);
        assert_eq!(g.param_count(), 2_116_815);
        assert!(all > 11_000_000, "{all}");
        let saved = g.weights().unwrap();
        assert_eq!(saved.len(), 36);
        assert!(saved.keys().all(|k| head.contains(k)));
    }

    #[test]
    fn assignment_picks_anchors_inside_the_box() {
        let anc = anchors(64);
        let pred = vec![[0.0f32, 0.0, 16.0, 16.0]; anc.len()];
        let scores = vec![0.5f32; anc.len() * CLASSES];
        let boxes = [[2.0f32, 0.0, 0.0, 16.0, 16.0]];
        let pos = assign(&pred, &scores, &boxes, &anc, 0);
        assert!(!pos.is_empty() && pos.len() <= 10);
        assert!(pos.iter().all(|p| p.class == 2 && p.weight > 0.0));
        let best = pos.iter().map(|p| p.weight).fold(0.0, f32::max);
        assert!((best - 1.0).abs() < 1e-6, "{best}");
    }
}
