//! What a built-in workload gives the trainer: the zoo graph to train, batches of its
//! labelled data, its loss, and the held-out evaluation beside a baseline. The trainer
//! (`builtin`) owns the loop, the clocks and the telemetry.

use candle_core::{DType, Device, Result, Tensor};

use super::graph::Graph;
use crate::model::onnx::ModelProto;
use crate::report::schema::train::{DataRef, HeldOut};

/// One batch on the device.
pub struct Batch {
    pub x: Tensor,
    /// The targets (regression values, class indices, or padded boxes).
    pub y: Tensor,
}

/// A held-out evaluation: the metric, the baseline, and whether lower is better.
pub struct Evaluation {
    pub held_out: HeldOut,
    pub lower_is_better: bool,
}

pub trait Workload {
    /// The zoo model trained (its FP32 graph; the weights are the starting point).
    fn model(&self) -> ModelProto;
    /// The zoo model name the trained weights belong to.
    fn zoo_name(&self) -> &'static str;
    fn input_name(&self) -> &'static str;
    /// Training samples per epoch.
    fn train_len(&self) -> usize;
    /// The samples `idx` as a batch.
    fn batch(&self, idx: &[usize], dev: &Device, dt: DType) -> Result<Batch>;
    /// The loss of the graph on a batch (a scalar).
    fn loss(&self, g: &Graph, b: &Batch) -> Result<Tensor>;
    /// The same loss as an output and a loss a framework names, for the engines other than
    /// candle; `None`: the loss is acceval's own code on candle (it trains on candle only).
    fn objective(&self) -> Option<super::engine::Objective> {
        None
    }
    /// A detection workload's loss targets (`engine::Loss::Detection`) from the detached
    /// predictions and the batch's box rows; `None` for the others.
    fn detection_targets(
        &self,
        _dist: &[f32],
        _scores: &[f32],
        _rows: &[f32],
        _bsz: usize,
    ) -> Option<super::detect::Targets> {
        None
    }
    /// The held-out metric beside its baseline.
    fn evaluate(&self, g: &Graph) -> Result<Evaluation>;
    /// Bytes of model input per sample (for MB/s and MB/J).
    fn bytes_per_sample(&self) -> u64;
    /// The data sets, with their hashes.
    fn data(&self) -> Vec<DataRef>;
    fn default_batch(&self) -> usize;
    fn default_lr(&self) -> f64;
    /// Gradients are clipped to this total L2 norm before each step (none: not clipped).
    fn max_grad_norm(&self) -> Option<f64> {
        None
    }
    /// How the data and loss are set up, in words (recorded in models/zoo.toml).
    fn recipe(&self) -> String;
    /// The initializers that train; `None`: every weight (`graph::is_trainable`). The others
    /// stay constants, and only the trained ones are saved.
    fn trainable(&self) -> Option<std::collections::HashSet<String>> {
        None
    }
    /// The weights to save and export from the trained graph's: the same, unless the
    /// workload trains on transformed inputs, whose transform it folds back in (`probe`).
    fn saved_weights(
        &self,
        w: std::collections::HashMap<String, Tensor>,
    ) -> Result<std::collections::HashMap<String, Tensor>> {
        Ok(w)
    }
}

/// The built-in workloads.
pub const WORKLOADS: [&str; 5] = [
    "lstm-load-forecast",
    "mobilenetv2-meter",
    "resnet50-substation",
    "yolov8n-line",
    "yolov8s-line-hires",
];

/// The workloads that train part of their graph ([`Workload::trainable`]): on candle only.
pub const HEAD_ONLY: [&str; 1] = ["yolov8s-line-hires"];

/// Options every workload takes.
#[derive(Debug, Clone)]
pub struct WorkloadOptions {
    /// At most this many training samples (a fixed, seeded subset); `None`: all.
    pub samples: Option<usize>,
    /// At most this many held-out samples; `None`: all.
    pub eval_samples: Option<usize>,
    /// The image side the image workloads train at.
    pub image_size: Option<usize>,
    pub seed: u64,
}

/// The workload `name`.
pub fn workload(
    name: &str,
    o: &WorkloadOptions,
) -> std::result::Result<Box<dyn Workload>, super::Error> {
    match name {
        "lstm-load-forecast" => Ok(Box::new(super::forecast::LoadForecast::new(o)?)),
        "mobilenetv2-meter" => Ok(Box::new(super::classify::Substation::new(o)?)),
        "resnet50-substation" => Ok(Box::new(super::probe::Probe::new(o)?)),
        "yolov8n-line" => Ok(Box::new(super::detect::LineDetect::new(
            o,
            super::detect::YOLOV8N_LINE,
        )?)),
        "yolov8s-line-hires" => Ok(Box::new(super::detect::LineDetect::new(
            o,
            super::detect::YOLOV8S_LINE_HIRES,
        )?)),
        _ => Err(crate::util::setting::SettingError::says(
            super::Setting::Workload,
            format!(
                "'{name}' is not a built-in workload; they are: {}",
                WORKLOADS.join(", ")
            ),
        )
        .into()),
    }
}

/// A fixed seeded subset of `0..n` of at most `k` indices, in order.
pub fn subset(n: usize, k: Option<usize>, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    if let Some(k) = k.filter(|&k| k < n) {
        shuffle(&mut idx, seed);
        idx.truncate(k);
        idx.sort_unstable();
    }
    idx
}

/// Fisher–Yates with the project's seeded generator.
pub fn shuffle(v: &mut [usize], seed: u64) {
    let mut rng = crate::util::rng::SplitMix64(seed);
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// The SHA-256 of a split: of its files' bytes concatenated in order (each file's own
/// hash is in the set's manifest, `acceval inputs build SET`).
#[derive(Default)]
pub struct SplitHash(sha2::Sha256);

impl SplitHash {
    pub fn update(&mut self, bytes: &[u8]) {
        use sha2::Digest;
        self.0.update(bytes);
    }
    pub fn finish(self) -> String {
        use sha2::Digest;
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Rows `idx` of a host array of `row` floats each, as a tensor of `shape` on `dev`.
pub fn gather(
    data: &[f32],
    row: usize,
    idx: &[usize],
    shape: &[usize],
    dev: &Device,
    dt: DType,
) -> Result<Tensor> {
    let mut v = Vec::with_capacity(idx.len() * row);
    for &i in idx {
        v.extend_from_slice(&data[i * row..(i + 1) * row]);
    }
    let mut dims = vec![idx.len()];
    dims.extend_from_slice(shape);
    Tensor::from_vec(v, dims, dev)?.to_dtype(dt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_are_seeded_and_sorted() {
        assert_eq!(subset(5, None, 1), vec![0, 1, 2, 3, 4]);
        let a = subset(100, Some(10), 7);
        assert_eq!(a, subset(100, Some(10), 7));
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        let mut v: Vec<usize> = (0..10).collect();
        shuffle(&mut v, 3);
        let mut s = v.clone();
        s.sort_unstable();
        assert_eq!(s, (0..10).collect::<Vec<_>>());
    }
}
