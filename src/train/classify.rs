//! `mobilenetv2-meter`: the zoo's MobileNetV2 trained on the labelled substation
//! close-ups (`substation-train`), pre-processed as the classification pipeline does
//! (short side to size·256/224, centre crop, ImageNet mean/std), cross-entropy over the 10
//! classes. Held out: accuracy on the held-out close-ups against the majority class.

use candle_core::{DType, Device, Result, Tensor};

use super::graph::Graph;
use super::workload::{Batch, Evaluation, Workload, WorkloadOptions, gather, subset};
use crate::model::onnx::ModelProto;
use crate::report::schema::Task;
use crate::report::schema::train::{DataRef, HeldOut};
use crate::task::inputs::{PANEL_HELDOUT, PANEL_TRAIN};
use crate::task::labelled::panel_sample;

/// The zoo's input side; training at another side keeps the same weights.
const ZOO_SIZE: usize = 224;

/// Images pre-processed at `size` with their classes.
pub struct Images {
    pub x: Vec<f32>,
    pub y: Vec<u32>,
    pub n: usize,
    pub sha: String,
}

/// Generates, encodes (JPEG, as the set's files), decodes and pre-processes close-ups.
fn images(split: &str, idx: &[usize], size: usize) -> std::result::Result<Images, super::Error> {
    let mut hasher = super::workload::SplitHash::default();
    let (x, y) = images_hashed(split, idx, size, &mut hasher)?;
    Ok(Images {
        n: idx.len(),
        x,
        y,
        sha: hasher.finish(),
    })
}

/// The held-out figure of a close-up classifier: top-1 accuracy `acc` against the share of
/// the majority class among the held-out labels `y` (of `classes` classes).
pub(super) fn against_majority(acc: f64, y: &[u32], classes: usize) -> Evaluation {
    let mut counts = vec![0usize; classes];
    for &c in y {
        counts[c as usize % classes] += 1;
    }
    let majority = *counts.iter().max().unwrap_or(&0) as f64 / y.len().max(1) as f64;
    Evaluation {
        held_out: HeldOut {
            metric: "accuracy".into(),
            value: acc,
            baseline: "the majority class".into(),
            baseline_value: majority,
            beats_baseline: acc > majority,
            samples: y.len(),
        },
        lower_is_better: false,
    }
}

/// The training record's data: the substation close-ups' two splits, counted and hashed.
pub(super) fn closeup_data(train: &Images, heldout: &Images) -> Vec<DataRef> {
    [("train", "train", train), ("held-out", "heldout", heldout)]
        .into_iter()
        .map(|(split, prefix, d)| DataRef {
            split: split.into(),
            name: format!("substation-train/{prefix}-*.jpg"),
            samples: d.n as u64,
            sha256: d.sha.clone(),
        })
        .collect()
}

/// [`images`]' tensors and classes, the files' bytes added to `hasher` (a split hashed over
/// several calls).
pub(super) fn images_hashed(
    split: &str,
    idx: &[usize],
    size: usize,
    hasher: &mut super::workload::SplitHash,
) -> std::result::Result<(Vec<f32>, Vec<u32>), super::Error> {
    let mut x = Vec::with_capacity(idx.len() * 3 * size * size);
    let mut y = Vec::with_capacity(idx.len());
    for &k in idx {
        let (img, label) = panel_sample(split, k);
        let bytes = crate::task::inputs::encode_jpeg(&img);
        hasher.update(&bytes);
        let t = crate::task::prepare_inputs(
            Task::Classification,
            &[1, 3, size, size],
            &[(format!("{split}-{k:03}.jpg"), bytes)],
        )?;
        x.extend(t[0].tensor.iter().copied());
        y.push(label.class as u32);
    }
    Ok((x, y))
}

pub struct Substation {
    size: usize,
    train: Images,
    heldout: Images,
}

impl Substation {
    pub fn new(o: &WorkloadOptions) -> std::result::Result<Substation, super::Error> {
        let size = o.image_size.unwrap_or(ZOO_SIZE);
        let train = images(
            "train",
            &subset(PANEL_TRAIN, o.samples, o.seed ^ 0xc1a55),
            size,
        )?;
        let heldout = images("heldout", &subset(PANEL_HELDOUT, o.eval_samples, 1), size)?;
        Ok(Substation {
            size,
            train,
            heldout,
        })
    }
}

/// Top-1 accuracy of the graph on `d` (batches of 32).
pub fn accuracy(g: &Graph, d: &Images, size: usize) -> Result<f64> {
    let mut right = 0usize;
    let row = 3 * size * size;
    for chunk in (0..d.n).collect::<Vec<_>>().chunks(32) {
        let x = gather(&d.x, row, chunk, &[3, size, size], &g.device, g.dtype)?;
        let y = g.forward(&[("input", x)], &["logits"])?;
        let pred: Vec<u32> = y[0].argmax(1)?.to_vec1()?;
        right += chunk
            .iter()
            .zip(pred)
            .filter(|(i, p)| d.y[**i] == *p)
            .count();
    }
    Ok(right as f64 / d.n.max(1) as f64)
}

/// The zoo's MobileNetV2 (seeded weights) for a `size` input: the same weights at every
/// size (convolutions and a global pool).
pub fn graph_at(size: usize) -> ModelProto {
    crate::zoo::arch::mobilenet_v2_at(
        "mobilenetv2-meter",
        crate::model::onnx::DataType::FLOAT,
        None,
        10,
        size as i64,
    )
}

impl Workload for Substation {
    fn model(&self) -> ModelProto {
        graph_at(self.size)
    }
    fn zoo_name(&self) -> &'static str {
        "mobilenetv2-meter"
    }
    fn input_name(&self) -> &'static str {
        "input"
    }
    fn train_len(&self) -> usize {
        self.train.n
    }
    fn batch(&self, idx: &[usize], dev: &Device, dt: DType) -> Result<Batch> {
        let s = self.size;
        let y: Vec<u32> = idx.iter().map(|&i| self.train.y[i]).collect();
        Ok(Batch {
            x: gather(&self.train.x, 3 * s * s, idx, &[3, s, s], dev, dt)?,
            y: Tensor::from_vec(y, idx.len(), dev)?,
        })
    }
    fn loss(&self, g: &Graph, b: &Batch) -> Result<Tensor> {
        let y = g.forward(&[("input", b.x.clone())], &["logits"])?;
        candle_nn::loss::cross_entropy(&y[0].to_dtype(DType::F32)?, &b.y)
    }
    fn objective(&self) -> Option<super::engine::Objective> {
        Some(super::engine::Objective {
            outputs: vec!["logits".into()],
            loss: super::engine::Loss::CrossEntropy,
        })
    }
    fn evaluate(&self, g: &Graph) -> Result<Evaluation> {
        let acc = accuracy(g, &self.heldout, self.size)?;
        Ok(against_majority(acc, &self.heldout.y, 10))
    }
    fn bytes_per_sample(&self) -> u64 {
        (3 * self.size * self.size * 4) as u64
    }
    fn data(&self) -> Vec<DataRef> {
        closeup_data(&self.train, &self.heldout)
    }
    fn default_batch(&self) -> usize {
        32
    }
    fn default_lr(&self) -> f64 {
        1e-3
    }
    fn recipe(&self) -> String {
        format!(
            "{}×{} crops of the close-ups (the classification pre-processing), cross-entropy; held out: top-1 accuracy vs the majority class",
            self.size, self.size
        )
    }
}
